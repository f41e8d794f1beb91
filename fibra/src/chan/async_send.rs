//! Asynchronous sends (ACML's `aSendEvt`):
//! [`Sender::send_async`](super::Sender::send_async) and
//! [`Sender::send_async_op`](super::Sender::send_async_op) commit at once,
//! without waiting for a receiver, even on a rendezvous channel; the
//! [`AsyncSend`] receipt tells when the value was consumed, or gives it
//! back.
//!
//! A value that finds a waiting receiver (or room in the buffer) goes there
//! under the channel's lock, as a `try_send` would. One that finds neither
//! waits in the channel, in one of two places, both in FIFO order with the
//! channel's other sends:
//!
//! * **Beyond capacity, in the buffer** (`Receipt::Queued`), when no
//!   blocked sender waits: the value joins the back of the buffer, past its
//!   capacity, and costs what a buffered value costs (no allocation of its
//!   own, amortised). The receipt holds the channel and the value's index
//!   (`meeting.rs`); it learns the value's fate from the channel
//!   (`receipts.rs`) when asked.
//! * **In a parcel** (`Receipt::InFlight`), when blocked senders wait:
//!   the value must go behind them, in the send queue, so it is carried by
//!   a small shared record holding the value and an opstate, published
//!   there as a plain record (`op/waiter.rs`), exactly where a blocked
//!   sender's record would be.
//!
//! A task carrying the value (ACML's parasite) would cost a task's
//! allocation and scheduling; both places are the "equivalent lighter
//! record", and the channel (which sits below the runtime) needs nothing of
//! `rt`.
//!
//! # The parcel's protocol
//!
//! * The parcel is shared by the receipt and by the channel's queue. The
//!   queue's reference is owned by the waker installed in the parcel's
//!   opstate before the record is published (a waker made from the parcel
//!   itself, `PARCEL_WAKER`).
//! * Whoever commits the record (a receiver that takes the value, a
//!   receiver refilling the buffer with it, or the close of the receiving
//!   side, which leaves the value in the slot) takes the record out of the
//!   queue under the channel's lock, stores `SYNCED` and takes that waker,
//!   then wakes it once the lock is released: the wake settles the parcel
//!   (`Fate`: consumed if the slot is empty, returned with the value if
//!   not), commits the receipt's waiting `consumed_op` performs, and drops
//!   the queue's reference.
//! * Nobody withdraws a parcel's record: it leaves the queue only by a
//!   commit. The channel's receiving side closes (committing every record
//!   of its send queue) before the channel can go, so no record is left
//!   behind.
//!
//! # Invariants
//!
//! * A `Queued` receipt's value is, at any time, in the channel's buffer,
//!   taken by a receiver, or (the receiving side gone before anyone took it)
//!   in the channel's `Receipts::returned`, from which the receipt takes it
//!   out once; all of it under the channel's lock.
//! * The slot is touched by the sender only before the record is published
//!   (under the channel's lock), by the committer while it holds the lock
//!   with the record out of the queue, and by the settling wake after
//!   `SYNCED` (Acquire): never by two at once.
//! * `fate` moves `InFlight -> Consumed | Returned(value)` once, in the
//!   settling wake; the receipt takes a returned value out once (`Taken`).

use super::SendError;
use super::meeting::{Chan, Sent, readiness};
use super::ops::wake;
use super::receipts::Receipts;
use crate::loom::{Arc, AtomicUsize, Lock, Ordering, UnsafeCell, fence};
use crate::op::slot::{Slot, put, take};
use crate::op::state::{OpState, Seen};
use crate::op::waiter::{Registration, Seeker, WaitQueue};
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// What became of an asynchronously sent value.
enum Fate<T> {
    /// In the channel's send queue.
    InFlight,
    /// A receiver took it (or the buffer accepted it).
    Consumed,
    /// Every receiver went before anyone took it: here it is.
    Returned(T),
    /// Returned, and given back through the receipt.
    Taken,
}

/// The parcel's settled state and who waits for it.
struct Settle<T> {
    fate: Fate<T>,
    /// The receipt's direct `.await`.
    waker: Option<Waker>,
    /// `consumed_op` performs waiting (boxed on first use).
    waiters: Option<Box<WaitQueue<()>>>,
}

/// A value sent asynchronously that waits in the channel's send queue
/// (module docs). Reached through [`ParcelRef`]s: the receipt's and the
/// queue's (owned by the parcel's waker).
struct Parcel<T> {
    /// References: `Arc`'s protocol, without a weak count, and starting at
    /// the right number without an atomic read-modify-write.
    refs: AtomicUsize,
    state: OpState,
    slot: Slot<T>,
    settle: Lock<Settle<T>>,
}

// SAFETY: the slot is touched under the protocol in the module docs (one
// party at a time, ordered by the channel's lock or the opstate's
// Release/Acquire); the value crosses threads, hence `T: Send`.
unsafe impl<T: Send> Sync for Parcel<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Parcel<T> {}

/// An owned, counted reference to a parcel.
struct ParcelRef<T>(NonNull<Parcel<T>>);

// SAFETY: a shared parcel (see `Parcel`'s impls).
unsafe impl<T: Send> Send for ParcelRef<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for ParcelRef<T> {}

impl<T> std::ops::Deref for ParcelRef<T> {
    type Target = Parcel<T>;

    fn deref(&self) -> &Parcel<T> {
        // SAFETY: we own a reference: the parcel is alive.
        unsafe { self.0.as_ref() }
    }
}

impl<T> Drop for ParcelRef<T> {
    fn drop(&mut self) {
        // Release: our uses come before the free; the last owner's Acquire
        // fence pairs with every other owner's Release (as `Arc`).
        if self.refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: that was the last reference; made by `Box::leak`.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

impl<T: Send> Parcel<T> {
    /// A parcel with an empty slot (the value goes in under the channel's
    /// lock), not published: the one reference is the receipt's.
    fn allocate() -> ParcelRef<T> {
        let p = Box::new(Parcel {
            refs: AtomicUsize::new(1),
            state: OpState::new(),
            slot: UnsafeCell::new(None),
            settle: Lock::new(Settle {
                fate: Fate::InFlight,
                waker: None,
                waiters: None,
            }),
        });
        ParcelRef(NonNull::from(Box::leak(p)))
    }

    /// Publishes the parcel's record in `queue` (the channel's send queue,
    /// whose lock the caller holds), its value in its slot already: first
    /// the waker that owns the queue's reference (module docs).
    fn publish(this: &ParcelRef<T>, queue: &mut WaitQueue<Slot<T>>) {
        // The queue's reference, counted by a plain store: nobody else can
        // reach an unpublished parcel. Relaxed: the queue's lock publishes
        // the parcel, this included.
        this.refs.store(2, Ordering::Relaxed);
        let raw = RawWaker::new(this.0.as_ptr().cast_const().cast(), &Self::WAKER);
        // SAFETY: the vtable's functions treat the pointer as a
        // `ParcelRef`'s, and the waker owns the reference counted above.
        let waker = unsafe { Waker::from_raw(raw) };
        this.state.set_waker_unpublished(waker);
        queue.push_plain(&this.state, &this.slot);
    }

    /// The parcel's own waker (module docs): its data pointer is a
    /// `ParcelRef`'s, and it owns that reference.
    const WAKER: RawWakerVTable = RawWakerVTable::new(
        Self::clone_waker,
        Self::wake,
        Self::wake_by_ref,
        Self::drop_waker,
    );

    /// # Safety
    ///
    /// `p` is a parcel whose reference the caller owns.
    unsafe fn from_raw(p: *const ()) -> ParcelRef<T> {
        // SAFETY: non-null (a parcel), and ours per the caller.
        ParcelRef(unsafe { NonNull::new_unchecked(p.cast_mut().cast()) })
    }

    unsafe fn clone_waker(p: *const ()) -> RawWaker {
        // SAFETY: the waker we clone owns a reference to the parcel.
        let this = std::mem::ManuallyDrop::new(unsafe { Self::from_raw(p) });
        // Relaxed: a new reference from one we hold, as `Arc::clone`.
        this.refs.fetch_add(1, Ordering::Relaxed);
        RawWaker::new(p, &Self::WAKER)
    }

    unsafe fn wake(p: *const ()) {
        // SAFETY: the waker owns this reference, which goes here.
        Self::settle(unsafe { Self::from_raw(p) });
    }

    unsafe fn wake_by_ref(p: *const ()) {
        // SAFETY: the waker keeps the parcel alive during the call.
        let this = std::mem::ManuallyDrop::new(unsafe { Self::from_raw(p) });
        // Relaxed: as `clone_waker`.
        this.refs.fetch_add(1, Ordering::Relaxed);
        Self::settle(std::mem::ManuallyDrop::into_inner(this));
    }

    unsafe fn drop_waker(p: *const ()) {
        // SAFETY: the waker owns this reference, which goes here.
        drop(unsafe { Self::from_raw(p) });
    }

    /// The record was committed (the queue's reference comes along):
    /// settles the fate and wakes who waits.
    fn settle(this: ParcelRef<T>) {
        // Acquire (the load): pairs with the committer's Release store of
        // `SYNCED`, after it took the value (or left it there).
        if this.state.load() != Seen::Synced(0) {
            return;
        }
        // Acquire: pairs with the Release decrement of a receipt dropped
        // on another thread.
        if this.refs.load(Ordering::Acquire) == 1 {
            // The receipt is gone and nobody can make a new reference:
            // nobody to tell. A value left in the slot (every receiver
            // went) drops with the parcel, taken apart with no atomic.
            let p = std::mem::ManuallyDrop::new(this);
            // SAFETY: the last reference; made by `Box::leak`.
            drop(unsafe { Box::from_raw(p.0.as_ptr()) });
            return;
        }
        let (waker, wakers) = {
            let mut s = this.settle.lock();
            if !matches!(s.fate, Fate::InFlight) {
                return;
            }
            // SAFETY: `SYNCED`, and the record is out of the queue: the
            // slot is ours (module docs); the settle lock makes this the
            // one settling wake.
            s.fate = match unsafe { take(&this.slot) } {
                None => Fate::Consumed,
                Some(v) => Fate::Returned(v),
            };
            let mut wakers = Vec::new();
            if let Some(q) = &mut s.waiters {
                q.commit_all(&mut wakers);
            }
            (s.waker.take(), wakers)
        };
        drop(this);
        // The receipt's wakers may be foreign: woken outside the lock.
        crate::wake::wake_all(waker.into_iter().chain(wakers));
    }
}

/// [`Sender::send_async`](super::Sender::send_async): delivers `value` now
/// if a receiver waits or the buffer has room, else queues it beyond
/// capacity, or (blocked senders waiting) publishes a parcel carrying it.
pub(crate) fn send_detached<T: Send>(chan: &Arc<Chan<T>>, value: T) -> AsyncSend<T> {
    // Blocked senders waiting, as far as the lock-free hint tells: the
    // value will need a parcel, allocated here rather than under the lock.
    let spare = chan.may(readiness::SENDERS_WAITING).then(Parcel::allocate);
    let slot = UnsafeCell::new(Some(value));
    let mut st = chan.lock();
    // SAFETY: a local nobody else sees: ours.
    match unsafe { chan.send_locked(&mut st, &slot, Seeker::FREE) } {
        Sent::Done(waker) => {
            drop(st);
            wake(waker);
            AsyncSend::settled(Ok(()))
        }
        Sent::Disconnected => {
            drop(st);
            // SAFETY: as above.
            let v = unsafe { take(&slot) }.expect("the value");
            AsyncSend::settled(Err(SendError(v)))
        }
        Sent::NotReady => {
            // SAFETY: as above.
            let v = unsafe { take(&slot) }.expect("the value");
            match chan.queue_beyond_locked(&mut st, v) {
                Ok(seq) => {
                    drop(st);
                    AsyncSend {
                        receipt: Receipt::Queued(Queued {
                            chan: Arc::clone(chan),
                            seq,
                            settled: false,
                        }),
                    }
                }
                Err(v) => {
                    // Behind blocked senders: a parcel (allocated under the
                    // lock only if the hint was stale).
                    let p = spare.unwrap_or_else(Parcel::allocate);
                    // SAFETY: unpublished: the parcel's slot is ours.
                    unsafe { put(&p.slot, v) };
                    Parcel::publish(&p, &mut st.sendq);
                    drop(st);
                    AsyncSend {
                        receipt: Receipt::InFlight(p),
                    }
                }
            }
        }
        Sent::SelfSynced => unreachable!("an unpublished send saw itself synced"),
    }
}

/// The receipt of an asynchronous send
/// ([`Sender::send_async`](super::Sender::send_async)): the send
/// has committed (the value is in the channel, or already taken); the
/// receipt tells when a receiver took it, and gives the value back if every
/// receiver went before anyone took it.
///
/// `.await` it, or perform its [`consumed_op`](AsyncSend::consumed_op) in a
/// choice: `Ok(())` once the value was consumed (a receiver took it, or the
/// channel's buffer accepted it), `Err(SendError(value))` if every receiver
/// went first. Dropping the receipt changes nothing: the value stays in
/// flight (and drops with the channel's receiving side if nobody takes it).
///
/// ```
/// # futures::executor::block_on(async {
/// let (tx, rx) = fibra::channel::<u32>();
/// // A rendezvous channel, nobody receiving: the send commits anyway.
/// let receipt = tx.send_async(1);
/// assert!(!receipt.is_settled());
/// assert_eq!(rx.recv().await, Ok(1));
/// assert_eq!(receipt.await, Ok(()));
///
/// // Every receiver goes before anyone takes the value: it comes back.
/// let receipt = tx.send_async(2);
/// drop(rx);
/// assert_eq!(receipt.await.unwrap_err().into_inner(), 2);
/// # });
/// ```
#[must_use = "the receipt tells whether the value was consumed; drop it to ignore"]
pub struct AsyncSend<T> {
    receipt: Receipt<T>,
}

enum Receipt<T> {
    /// Settled (when the send committed, or since).
    Now(Option<Result<(), SendError<T>>>),
    /// Waiting in the channel's buffer, beyond capacity.
    Queued(Queued<T>),
    /// Carried by a parcel.
    InFlight(ParcelRef<T>),
}

/// What a look at an unsettled receipt leaves in the channel, under the
/// same lock (a waker): given the channel's receipts and the index.
type Register<'a, T> = &'a mut dyn FnMut(&mut Receipts<T>, u64);

/// The receipt of a value queued beyond capacity: the channel, and the
/// value's index there (module docs).
struct Queued<T> {
    chan: Arc<Chan<T>>,
    seq: u64,
    /// The outcome was taken: nothing of ours is left in the channel.
    settled: bool,
}

impl<T> Queued<T> {
    /// The outcome, if settled, taken under the channel's lock (a returned
    /// value comes out of the channel); `None` if still waiting, after
    /// `register` ran (if given) under the same lock.
    fn outcome(&mut self, register: Option<Register<'_, T>>) -> Option<Result<(), SendError<T>>> {
        let mut st = self.chan.lock();
        let out = if st.consumed(self.chan.cap(), self.seq) {
            Ok(())
        } else if st.rx_gone() {
            let v = st
                .with_receipts_if_any(|r| r.take_returned(self.seq))
                .flatten()
                .expect("a value left waiting when the receivers went is kept for its receipt");
            Err(SendError(v))
        } else {
            if let Some(register) = register {
                st.with_receipts(|r| register(r, self.seq));
            }
            return None;
        };
        let waker = st.with_receipts_if_any(|r| r.remove_waker(self.seq));
        drop(st);
        // Outside the lock: a waker's drop is foreign code.
        drop(waker);
        self.settled = true;
        Some(out)
    }

    /// Whether the outcome is known (not taken).
    fn is_settled(&self) -> bool {
        let st = self.chan.lock();
        st.consumed(self.chan.cap(), self.seq) || st.rx_gone()
    }
}

impl<T> Drop for Queued<T> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        // The value drops at the close if nobody took it by then (or now,
        // if it was given back already); it and our waker are dropped
        // outside the lock.
        let (value, waker) = self.chan.lock().forget_receipt(self.chan.cap(), self.seq);
        drop(waker);
        drop(value);
    }
}

impl<T> AsyncSend<T> {
    fn settled(outcome: Result<(), SendError<T>>) -> Self {
        Self {
            receipt: Receipt::Now(Some(outcome)),
        }
    }

    /// Whether the value's fate is known: consumed, or returned.
    ///
    /// ```
    /// let (tx, rx) = fibra::bounded::<u8>(1);
    /// // Room in the buffer: accepted at once.
    /// assert!(tx.send_async(1).is_settled());
    /// drop(rx);
    /// ```
    pub fn is_settled(&self) -> bool {
        match &self.receipt {
            Receipt::Now(_) => true,
            Receipt::Queued(q) => q.is_settled(),
            Receipt::InFlight(p) => !matches!(p.settle.lock().fate, Fate::InFlight),
        }
    }

    /// The op that becomes ready once the value was consumed (`Ok(())`) or
    /// returned (`Err(SendError(value))`), for choices: ACML's
    /// post-consumption point.
    ///
    /// The outcome is taken once: performing another `consumed_op` (or
    /// awaiting the receipt) after one took a returned value panics.
    ///
    /// ```
    /// use fibra::Op;
    /// use std::time::Duration;
    ///
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = fibra::channel::<&str>();
    /// let mut receipt = tx.send_async("hi");
    /// // Nobody took it yet: the timeout wins.
    /// let taken = fibra::choose((
    ///     receipt.consumed_op().wrap(|_| true),
    ///     fibra::time::after(Duration::from_millis(5)).wrap(|_| false),
    /// ))
    /// .await;
    /// assert!(!taken);
    /// assert_eq!(rx.recv().await, Ok("hi"));
    /// assert_eq!(receipt.consumed_op().await, Ok(()));
    /// # });
    /// ```
    pub fn consumed_op(&mut self) -> ConsumedOp<'_, T> {
        ConsumedOp {
            receipt: &mut self.receipt,
            published: None,
        }
    }
}

impl<T> Receipt<T> {
    /// The outcome, if settled (a returned value taken out, once).
    fn try_take(&mut self) -> Option<Result<(), SendError<T>>> {
        self.take_or_register(None)
    }

    /// The outcome, if settled; else, for a queued value, `register` runs
    /// under the channel's lock (so no consumption can come in between).
    fn take_or_register(
        &mut self,
        register: Option<Register<'_, T>>,
    ) -> Option<Result<(), SendError<T>>> {
        match self {
            Receipt::Now(out) => Some(take_outcome(out)),
            Receipt::Queued(q) => {
                let out = q.outcome(register)?;
                // Settled: the receipt keeps the outcome (as `Now`) and
                // lets the channel go.
                *self = Receipt::Now(Some(out));
                let Receipt::Now(out) = self else {
                    unreachable!()
                };
                Some(take_outcome(out))
            }
            Receipt::InFlight(p) => {
                let mut s = p.settle.lock();
                match std::mem::replace(&mut s.fate, Fate::Taken) {
                    Fate::InFlight => {
                        s.fate = Fate::InFlight;
                        None
                    }
                    Fate::Consumed => {
                        s.fate = Fate::Consumed;
                        Some(Ok(()))
                    }
                    Fate::Returned(v) => Some(Err(SendError(v))),
                    Fate::Taken => panic!("{TAKEN}"),
                }
            }
        }
    }
}

const TAKEN: &str = "the value of this asynchronous send already came back through its receipt";

fn take_outcome<T>(out: &mut Option<Result<(), SendError<T>>>) -> Result<(), SendError<T>> {
    match out {
        Some(Ok(())) => Ok(()),
        _ => out.take().expect(TAKEN),
    }
}

impl<T> Future for AsyncSend<T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        // The waker is cloned before the lock, and the one it replaces
        // dropped after it: neither runs foreign code under the lock.
        let mut new = matches!(this.receipt, Receipt::Queued(_)).then(|| cx.waker().clone());
        let mut old = None;
        let out = this.receipt.take_or_register(Some(&mut |r, seq| {
            if let Some(w) = new.take() {
                old = r.set_waker(seq, w);
            }
        }));
        drop((new, old));
        if let Some(out) = out {
            return Poll::Ready(out);
        }
        let p = match &mut this.receipt {
            Receipt::Queued(_) => return Poll::Pending,
            Receipt::InFlight(p) => p,
            Receipt::Now(_) => unreachable!("a settled receipt has an outcome"),
        };
        let mut s = p.settle.lock();
        if matches!(s.fate, Fate::InFlight) {
            match &mut s.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                slot => *slot = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        drop(s);
        Poll::Ready(this.receipt.try_take().expect("settled"))
    }
}

impl<T> Unpin for AsyncSend<T> {}

impl<T> std::fmt::Debug for AsyncSend<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncSend")
            .field("settled", &self.is_settled())
            .finish()
    }
}

/// The op of an asynchronous send's consumption: made by
/// [`AsyncSend::consumed_op`]. Ready once the value was consumed
/// (`Ok(())`) or returned (`Err(SendError(value))`).
///
/// If its perform is dropped after it committed, the outcome stays with the
/// receipt for the next look.
///
/// ```
/// use fibra::Op;
///
/// let (tx, rx) = fibra::channel::<u8>();
/// let mut receipt = tx.send_async(7);
/// assert!(receipt.consumed_op().try_perform().is_err()); // not yet
/// assert_eq!(rx.try_recv(), Ok(7));
/// assert_eq!(receipt.consumed_op().try_perform().ok(), Some(Ok(())));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct ConsumedOp<'a, T> {
    receipt: &'a mut Receipt<T>,
    published: Option<Registration>,
}

impl<T> Unpin for ConsumedOp<'_, T> {}
impl<T> Sealed for ConsumedOp<'_, T> {}

impl<T> Op for ConsumedOp<'_, T> {
    type Output = Result<(), SendError<T>>;

    // Committed by the settling wake (a parcel) or by the pop or close that
    // settles a queued value, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        self.get_mut().receipt.try_take()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let this = self.get_mut();
        let p = match &mut *this.receipt {
            Receipt::Now(_) => None,
            Receipt::Queued(q) => {
                // Settled under the same lock, or published there.
                let mut st = q.chan.lock();
                if !st.consumed(q.chan.cap(), q.seq) && !st.rx_gone() {
                    let reg = st.with_receipts(|r| r.publish(q.seq, cx));
                    this.published = Some(reg);
                    return;
                }
                None
            }
            Receipt::InFlight(p) => Some(p),
        };
        if let Some(p) = p {
            let mut s = p.settle.lock();
            if matches!(s.fate, Fate::InFlight) {
                let reg = s.waiters.get_or_insert_default().publish(cx, &());
                this.published = Some(reg);
                return;
            }
        }
        // Settled: commit ourselves (`finish` takes the outcome).
        if cx.claim().is_ok() {
            cx.state.commit_own(cx.leaf);
        }
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        let this = self.get_mut();
        this.published = None;
        this.receipt
            .try_take()
            .expect("a committed consumption is settled")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        // Nothing was taken: the outcome stays with the receipt.
        self.get_mut().published = None;
    }

    fn withdraw(self: Pin<&mut Self>) {
        let this = self.get_mut();
        let Some(reg) = this.published.take() else {
            return;
        };
        match &*this.receipt {
            Receipt::InFlight(p) => {
                if let Some(q) = &mut p.settle.lock().waiters {
                    q.remove(reg);
                }
            }
            Receipt::Queued(q) => {
                q.chan.lock().with_receipts_if_any(|r| r.remove(q.seq, reg));
            }
            Receipt::Now(_) => {}
        }
    }
}

crate::op::op_into_future! {
    impl['a, T] ConsumedOp<'a, T>;
    impl['a, T] SendAsyncOp<'a, T>;
}

/// The op of an asynchronous send: made by
/// [`Sender::send_async_op`](super::Sender::send_async_op). Always ready:
/// committing it sends the value as
/// [`Sender::send_async`](super::Sender::send_async) does and yields
/// the [`AsyncSend`] receipt. In a choice that another branch wins, nothing
/// is sent (the value drops with the op).
///
/// ```
/// use fibra::Op;
///
/// let (tx, rx) = fibra::channel::<u8>();
/// let receipt = tx.send_async_op(3).perform();
/// assert_eq!(rx.try_recv(), Ok(3));
/// assert_eq!(futures::executor::block_on(receipt), Ok(()));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct SendAsyncOp<'a, T> {
    chan: &'a Arc<Chan<T>>,
    value: Option<T>,
}

impl<'a, T> SendAsyncOp<'a, T> {
    pub(crate) fn new(chan: &'a Arc<Chan<T>>, value: T) -> Self {
        Self {
            chan,
            value: Some(value),
        }
    }

    fn send(&mut self) -> AsyncSend<T>
    where
        T: Send,
    {
        let v = self
            .value
            .take()
            .expect("an asynchronous send performed twice");
        send_detached(self.chan, v)
    }
}

impl<T> Unpin for SendAsyncOp<'_, T> {}
impl<T> Sealed for SendAsyncOp<'_, T> {}

impl<T: Send> Op for SendAsyncOp<'_, T> {
    type Output = AsyncSend<T>;

    // Commits itself: always ready.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn try_now(self: Pin<&mut Self>) -> Option<AsyncSend<T>> {
        Some(self.get_mut().send())
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        // Reached only if `try_now` was skipped: commit ourselves, and send
        // in `finish`.
        if cx.claim().is_ok() {
            cx.state.commit_own(cx.leaf);
        }
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> AsyncSend<T> {
        self.get_mut().send()
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {}

    fn withdraw(self: Pin<&mut Self>) {}
}

impl<T> std::fmt::Debug for SendAsyncOp<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendAsyncOp").finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for ConsumedOp<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumedOp").finish_non_exhaustive()
    }
}
