//! `oneshot`: a channel that carries one value, from one sender to one
//! receiver (a reply slot).
//!
//! # Invariants
//!
//! * `state` holds three flags, each set once and never cleared:
//!   `SENT` (the value is in `value`), `TX_GONE` (the sender is used up:
//!   it sent, or was dropped) and `RX_CLOSED` (the receiver closed or was
//!   dropped).
//! * `value` belongs to the sender until `SENT` is set, and to the receiver
//!   side (its ops, `close` and drop, then `Inner`'s drop) afterwards. The
//!   sender writes it, then sets `SENT | TX_GONE` with one compare-and-swap
//!   that fails if `RX_CLOSED` is set; on failure it takes its value back
//!   out, untouched by anyone. So a value is either received, handed back
//!   by `send`, or (sent, then the receiver dropped without taking it)
//!   dropped with the receiver.
//! * `queues.rx` holds the record of a blocked receive (at most one: every
//!   receive op borrows the receiver mutably), `queues.tx` those of blocked
//!   [`ClosedOp`]s. Whoever sets a flag does so *before* taking the lock to
//!   commit the other side's records; a waiter publishes its record and
//!   looks at `state` under that lock: either it sees the flag or its
//!   record is committed (the pattern of `sync/ivar.rs`).
//! * A receive takes the value only after it committed: in its try phase,
//!   or in `finish`. A receive whose perform is dropped after the commit
//!   (`abandon`) has taken nothing, so the value stays for the next one.
//! * No waker is woken and no value is dropped while the lock is held.

use super::{RecvError, TryRecvError};
use crate::loom::{Arc, AtomicUsize, Lock, Ordering, UnsafeCell};
use crate::op::waiter::{Registration, WaitQueue};
use crate::op::{BlockCx, Op, Perform, sealed::Sealed};
use std::fmt;
use std::future::IntoFuture;
use std::marker::{PhantomData, PhantomPinned};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::Waker;

const SENT: usize = 1;
const TX_GONE: usize = 2;
const RX_CLOSED: usize = 4;

struct Queues {
    /// The record of a blocked receive.
    rx: WaitQueue<()>,
    /// The records of blocked `closed_op`s.
    tx: WaitQueue<()>,
}

struct Inner<T> {
    /// `SENT | TX_GONE | RX_CLOSED` (module docs).
    state: AtomicUsize,
    value: UnsafeCell<Option<T>>,
    queues: Lock<Queues>,
}

// SAFETY: the value moves from the sender's thread to the receiver's (hence
// `T: Send`) and is never shared: `value` has one owner at a time, handed
// over by the Release/Acquire pair on `SENT` (module docs).
unsafe impl<T: Send> Sync for Inner<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Inner<T> {}

impl<T> Inner<T> {
    /// Acquire: after `SENT`, pairs with the sender's Release so the value
    /// is visible; after `TX_GONE`/`RX_CLOSED`, orders what the other side
    /// did before.
    fn load(&self) -> usize {
        self.state.load(Ordering::Acquire)
    }

    /// Sets `flag`, then commits every record of `which` queue; returns
    /// the state before.
    fn set_and_wake(&self, flag: usize, which: fn(&mut Queues) -> &mut WaitQueue<()>) -> usize {
        // AcqRel: the Release half orders this side's earlier work before
        // the flag (for whoever acts on the flag with an Acquire load); the
        // Acquire half lets a receiver's drop that finds `SENT` read the
        // value the sender published with Release.
        let before = self.state.fetch_or(flag, Ordering::AcqRel);
        if before & flag == 0 {
            self.wake(which);
        }
        before
    }

    fn wake(&self, which: fn(&mut Queues) -> &mut WaitQueue<()>) {
        let mut wakers = Vec::new();
        which(&mut self.queues.lock()).commit_all(&mut wakers);
        wakers.into_iter().for_each(Waker::wake);
    }

    /// The outcome of a receive now, if it has one: the value (taken), or
    /// `Err` once nothing can come (the sender is gone without sending,
    /// the receiver closed, or the value was already received).
    ///
    /// # Safety
    ///
    /// Called by the receiver side only (it owns `value` after `SENT`).
    unsafe fn try_take(&self) -> Option<Result<T, RecvError>> {
        let s = self.load();
        if s & SENT != 0 {
            // SAFETY: `SENT` seen with Acquire: the value is written and is
            // the receiver side's, which the caller is.
            return Some(
                self.value
                    .with_mut(|v| unsafe { (*v).take() })
                    .ok_or(RecvError),
            );
        }
        (s & (TX_GONE | RX_CLOSED) != 0).then_some(Err(RecvError))
    }
}

/// Creates a oneshot channel: a [`Sender`] that sends one value and a
/// [`Receiver`] that waits for it (tokio's `oneshot::channel`). The
/// receiving side is an op ([`Receiver::recv_op`]), so waiting for a reply
/// composes with timeouts and other channels in a choice, and works on any
/// executor and from OS threads.
///
/// # Nothing lost
///
/// * [`Sender::send`] hands the value back (`Err(value)`) if the receiver
///   is gone or closed.
/// * A receive that loses a choice, or whose perform is dropped (even after
///   the value arrived), takes nothing: the value stays for the next
///   receive.
/// * A value sent before the receiver was dropped is dropped with it; call
///   [`Receiver::close`] and then [`Receiver::try_recv`] to get such a value
///   back instead.
///
/// # Examples
///
/// A request carrying its reply slot:
///
/// ```
/// use fibra::oneshot;
///
/// let (jobs, inbox) = fibra::unbounded::<(u32, oneshot::Sender<u32>)>();
/// let server = std::thread::spawn(move || {
///     for (n, reply) in inbox.iter() {
///         let _ = reply.send(n * 2); // the requester may have given up
///     }
/// });
/// let (reply, mut answer) = oneshot::channel();
/// jobs.try_send((21, reply)).unwrap();
/// assert_eq!(answer.recv_blocking(), Ok(42));
/// drop(jobs);
/// server.join().unwrap();
/// ```
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner {
        state: AtomicUsize::new(0),
        value: UnsafeCell::new(None),
        queues: Lock::new(Queues {
            rx: WaitQueue::default(),
            tx: WaitQueue::default(),
        }),
    });
    (
        Sender {
            inner: inner.clone(),
        },
        Receiver { inner },
    )
}

/// The sending side of a [`oneshot`](self) channel: sends one value.
/// Dropping it without sending makes the receive fail with [`RecvError`].
///
/// ```
/// use fibra::{RecvError, oneshot};
///
/// let (tx, mut rx) = oneshot::channel::<u8>();
/// drop(tx); // never sent
/// assert_eq!(rx.recv_blocking(), Err(RecvError));
/// ```
pub struct Sender<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Sender<T> {
    /// Sends `value`, consuming the sender. Never waits. Fails, handing the
    /// value back, if the receiver is gone or closed.
    ///
    /// ```
    /// let (tx, mut rx) = fibra::oneshot::channel();
    /// tx.send("done").unwrap();
    /// assert_eq!(rx.try_recv(), Ok("done"));
    ///
    /// let (tx, rx) = fibra::oneshot::channel();
    /// drop(rx);
    /// assert_eq!(tx.send("lost?"), Err("lost?")); // no: it comes back
    /// ```
    pub fn send(self, value: T) -> Result<(), T> {
        let inner = &*self.inner;
        // SAFETY: `SENT` is not set (this sender is the only one, and it is
        // consumed here): the cell is ours.
        inner.value.with_mut(|v| unsafe { *v = Some(value) });
        let mut s = inner.state.load(Ordering::Relaxed);
        loop {
            if s & RX_CLOSED != 0 {
                // SAFETY: we did not set `SENT`: the cell is still ours.
                let value = inner.value.with_mut(|v| unsafe { (*v).take() });
                return Err(value.expect("the value just written"));
            }
            // Release: publishes the value to the receiver's Acquire load
            // of `SENT`. Relaxed on failure: we only learn the new flags.
            match inner.state.compare_exchange_weak(
                s,
                s | SENT | TX_GONE,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        inner.wake(|q| &mut q.rx);
        Ok(())
    }

    /// Whether the receiver is gone or closed: a send would fail.
    ///
    /// ```
    /// let (tx, rx) = fibra::oneshot::channel::<u8>();
    /// assert!(!tx.is_closed());
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.load() & RX_CLOSED != 0
    }

    /// The op that becomes ready when the receiver is dropped or closed
    /// (tokio's `Sender::closed`): a server can stop working on a request
    /// whose requester gave up.
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased, oneshot};
    ///
    /// let (tx, rx) = oneshot::channel::<u8>();
    /// let gone = || choose_biased((tx.closed_op().wrap(|()| true), always(false))).perform();
    /// assert!(!gone());
    /// drop(rx);
    /// assert!(gone());
    /// ```
    pub fn closed_op(&self) -> ClosedOp<'_, T> {
        ClosedOp {
            inner: &self.inner,
            slot: (),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Waits until the receiver is dropped or closed; see
    /// [`closed_op`](Self::closed_op).
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, mut rx) = fibra::oneshot::channel::<u8>();
    /// rx.close();
    /// tx.closed().await;
    /// # });
    /// ```
    pub fn closed(&self) -> Perform<ClosedOp<'_, T>> {
        Perform::new(self.closed_op())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // After `send` this finds `TX_GONE` already set and does nothing.
        self.inner.set_and_wake(TX_GONE, |q| &mut q.rx);
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Sender")
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The receiving side of a [`oneshot`](self) channel.
///
/// Receive with [`recv_op`](Self::recv_op) (in a choice), `.await` (on the
/// receiver, by value or by `&mut`), [`recv_blocking`](Self::recv_blocking)
/// (OS threads) or [`try_recv`](Self::try_recv). Once the value was
/// received, later receives fail with [`RecvError`].
///
/// ```
/// # fibra::run(async {
/// let (tx, rx) = fibra::oneshot::channel();
/// fibra::spawn(async move { tx.send(40 + 2).unwrap() });
/// assert_eq!(rx.await, Ok(42));
/// # });
/// ```
pub struct Receiver<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Receiver<T> {
    /// The op of receiving the value: yields `Ok(value)`, or
    /// `Err(RecvError)` if the sender was dropped without sending (or the
    /// receiver was closed before a value came, or the value was already
    /// received). A receive that loses a choice takes nothing.
    ///
    /// ```
    /// use fibra::{Op, choose, oneshot, time::after};
    /// use std::time::Duration;
    ///
    /// let (_tx, mut rx) = oneshot::channel::<u32>();
    /// let got = choose((
    ///     rx.recv_op().wrap(|r| r.ok()),
    ///     after(Duration::from_millis(5)).wrap(|()| None),
    /// ))
    /// .perform();
    /// assert_eq!(got, None); // timed out; the receiver is still usable
    /// ```
    pub fn recv_op(&mut self) -> RecvOp<'_, T> {
        RecvOp {
            rx: RxRef::Borrowed(NonNull::from(&*self.inner), PhantomData),
            slot: (),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Waits for the value; see [`recv_op`](Self::recv_op). (`rx.await`
    /// and `(&mut rx).await` do the same.)
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, mut rx) = fibra::oneshot::channel();
    /// tx.send(5).unwrap();
    /// assert_eq!(rx.recv().await, Ok(5));
    /// # });
    /// ```
    pub fn recv(&mut self) -> Perform<RecvOp<'_, T>> {
        Perform::new(self.recv_op())
    }

    /// Waits for the value, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let (tx, mut rx) = fibra::oneshot::channel();
    /// std::thread::spawn(move || tx.send("hi"));
    /// assert_eq!(rx.recv_blocking(), Ok("hi"));
    /// ```
    pub fn recv_blocking(&mut self) -> Result<T, RecvError> {
        self.recv_op().perform()
    }

    /// Takes the value if it is there now.
    ///
    /// ```
    /// use fibra::TryRecvError;
    ///
    /// let (tx, mut rx) = fibra::oneshot::channel();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected)); // taken
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        // SAFETY: `&mut self`: the receiver side, with no op in flight.
        match unsafe { self.inner.try_take() } {
            Some(Ok(v)) => Ok(v),
            Some(Err(RecvError)) => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Closes the receiver without dropping it: the sender's
    /// [`send`](Sender::send) fails from now on (handing its value back),
    /// and its [`closed_op`](Sender::closed_op) becomes ready. A value sent
    /// before the close can still be taken with
    /// [`try_recv`](Self::try_recv).
    ///
    /// ```
    /// let (tx, mut rx) = fibra::oneshot::channel();
    /// rx.close();
    /// assert_eq!(tx.send(1), Err(1));
    /// assert!(rx.try_recv().is_err());
    /// ```
    pub fn close(&mut self) {
        self.inner.set_and_wake(RX_CLOSED, |q| &mut q.tx);
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let before = self.inner.set_and_wake(RX_CLOSED, |q| &mut q.tx);
        if before & SENT != 0 {
            // Sent and never received: it goes with the receiver (the
            // Acquire half of the swap made it visible).
            // SAFETY: after `SENT` the value is the receiver side's.
            drop(self.inner.value.with_mut(|v| unsafe { (*v).take() }));
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Receiver").finish_non_exhaustive()
    }
}

/// `rx.await` receives the value (consuming the receiver).
///
/// ```
/// # futures::executor::block_on(async {
/// let (tx, rx) = fibra::oneshot::channel();
/// tx.send(7).unwrap();
/// assert_eq!(rx.await, Ok(7));
/// # });
/// ```
impl<T> IntoFuture for Receiver<T> {
    type Output = Result<T, RecvError>;
    type IntoFuture = Perform<RecvOp<'static, T>>;

    fn into_future(self) -> Self::IntoFuture {
        Perform::new(RecvOp {
            rx: RxRef::Owned(self),
            slot: (),
            published: None,
            _pinned: PhantomPinned,
        })
    }
}

/// `(&mut rx).await` receives the value and leaves the receiver in place
/// (for a foreign `select!` in a loop).
///
/// ```
/// # futures::executor::block_on(async {
/// let (tx, mut rx) = fibra::oneshot::channel();
/// tx.send(7).unwrap();
/// assert_eq!((&mut rx).await, Ok(7));
/// # });
/// ```
impl<'a, T> IntoFuture for &'a mut Receiver<T> {
    type Output = Result<T, RecvError>;
    type IntoFuture = Perform<RecvOp<'a, T>>;

    fn into_future(self) -> Self::IntoFuture {
        self.recv()
    }
}

/// The receiver a receive op works on: borrowed (mutably: one receive at a
/// time), or owned (`rx.await`).
///
/// The borrowed form is a pointer with the borrow's lifetime rather than a
/// `&'a mut Receiver<T>`, so that `RecvOp<'static, T>` (the owned form) does
/// not require `T: 'static` (as `chan/ops.rs`'s `ChanRef`).
enum RxRef<'a, T> {
    Borrowed(NonNull<Inner<T>>, PhantomData<&'a mut ()>),
    Owned(Receiver<T>),
}

impl<T> RxRef<'_, T> {
    fn inner(&self) -> &Inner<T> {
        match self {
            // SAFETY: made by `recv_op` from a `&'a mut Receiver<T>` whose
            // `Arc` keeps the channel alive, and `self` cannot outlive `'a`.
            RxRef::Borrowed(inner, _) => unsafe { inner.as_ref() },
            RxRef::Owned(rx) => &rx.inner,
        }
    }
}

/// The op of receiving a oneshot value: made by [`Receiver::recv_op`].
///
/// ```
/// use fibra::{Op, oneshot};
///
/// let (tx, mut rx) = oneshot::channel();
/// tx.send(3).unwrap();
/// let op: oneshot::RecvOp<'_, i32> = rx.recv_op();
/// assert_eq!(op.perform(), Ok(3));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct RecvOp<'a, T> {
    rx: RxRef<'a, T>,
    /// What the record points at (the outcome is read from the channel).
    slot: (),
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

// SAFETY: the op holds (a borrow of) the receiver, which may move to another
// thread when `T: Send`; shared, it exposes nothing.
unsafe impl<T: Send> Send for RecvOp<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for RecvOp<'_, T> {}

impl<'a, T> RecvOp<'a, T> {
    fn project(self: Pin<&mut Self>) -> (&Inner<T>, &(), &mut Option<Registration>) {
        // SAFETY: nothing is moved out; `published` is not structurally
        // pinned and the slot is only pointed at.
        let this = unsafe { self.get_unchecked_mut() };
        (this.rx.inner(), &this.slot, &mut this.published)
    }
}

impl<T> Sealed for RecvOp<'_, T> {}

impl<T> Op for RecvOp<'_, T> {
    type Output = Result<T, RecvError>;

    // Committed by the sender, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        // SAFETY: the op holds the receiver (by `&mut` or by value).
        unsafe { self.project().0.try_take() }
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (inner, slot, published) = self.project();
        let mut q = inner.queues.lock();
        // Under the lock that the flags' setters take after setting them:
        // either we see a flag now or they find our record.
        if inner.load() & (SENT | TX_GONE | RX_CLOSED) != 0 {
            if cx.state.claim().is_ok() {
                cx.state.commit_own(cx.leaf);
            }
            return;
        }
        *published = Some(q.rx.publish(cx, slot));
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        let (inner, _, published) = self.project();
        *published = None;
        // SAFETY: the op holds the receiver. A commit means a flag was set,
        // and flags are never cleared, so there is an outcome.
        unsafe { inner.try_take() }.expect("a committed receive has an outcome")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        // Nothing was taken: the value (if any) stays for the next receive.
        *self.project().2 = None;
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (inner, _, published) = self.project();
        if let Some(reg) = published.take() {
            inner.queues.lock().rx.remove(reg);
        }
    }
}

/// The op of waiting until a oneshot receiver is dropped or closed: made by
/// [`Sender::closed_op`].
///
/// ```
/// use fibra::{Op, oneshot};
///
/// let (tx, rx) = oneshot::channel::<()>();
/// drop(rx);
/// let op: oneshot::ClosedOp<'_, ()> = tx.closed_op();
/// op.perform();
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct ClosedOp<'a, T> {
    inner: &'a Inner<T>,
    slot: (),
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl<'a, T> ClosedOp<'a, T> {
    fn project(self: Pin<&mut Self>) -> (&'a Inner<T>, &(), &mut Option<Registration>) {
        // SAFETY: as for `RecvOp::project`.
        let this = unsafe { self.get_unchecked_mut() };
        (this.inner, &this.slot, &mut this.published)
    }
}

impl<T> Sealed for ClosedOp<'_, T> {}

impl<T> Op for ClosedOp<'_, T> {
    type Output = ();

    // Committed by the receiver's close, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn try_now(self: Pin<&mut Self>) -> Option<()> {
        (self.inner.load() & RX_CLOSED != 0).then_some(())
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (inner, slot, published) = self.project();
        let mut q = inner.queues.lock();
        if inner.load() & RX_CLOSED != 0 {
            if cx.state.claim().is_ok() {
                cx.state.commit_own(cx.leaf);
            }
            return;
        }
        *published = Some(q.tx.publish(cx, slot));
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) {
        *self.project().2 = None;
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        *self.project().2 = None;
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (inner, _, published) = self.project();
        if let Some(reg) = published.take() {
            inner.queues.lock().tx.remove(reg);
        }
    }
}

crate::op::op_into_future! {
    impl['a, T] RecvOp<'a, T>;
    impl['a, T] ClosedOp<'a, T>;
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::loom::{model, thread};
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll};

    /// The value in the models: counts its drops.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn loom_oneshot_send_racing_a_blocked_receive() {
        // The receive may block before the send, or find the value: it
        // gets it either way, once.
        model(|| {
            let (tx, mut rx) = channel::<u32>();
            let t = thread::spawn(move || tx.send(7));
            assert_eq!(rx.recv_blocking(), Ok(7));
            assert_eq!(t.join().unwrap(), Ok(()));
            assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        });
    }

    #[test]
    fn loom_oneshot_send_racing_close_then_try_recv() {
        // The send's compare-and-swap races the receiver's close: the value
        // is either handed back to the sender or taken by the receiver
        // after its close, never both, never neither.
        model(|| {
            let drops = Arc::new(AtomicUsize::new(0));
            let (tx, mut rx) = channel::<Counted>();
            let v = Counted(drops.clone());
            let t = thread::spawn(move || tx.send(v).err());
            rx.close();
            let received = rx.try_recv().ok();
            let returned = t.join().unwrap();
            assert!(
                received.is_some() != returned.is_some(),
                "the value went both ways or nowhere"
            );
            drop((received, returned));
            assert_eq!(drops.load(Ordering::Relaxed), 1);
        });
    }

    #[test]
    fn loom_oneshot_send_racing_receiver_drop() {
        // Either the send fails and returns the value, or it succeeds and
        // the receiver's drop drops it: exactly one drop, and no leak.
        model(|| {
            let drops = Arc::new(AtomicUsize::new(0));
            let (tx, rx) = channel::<Counted>();
            let v = Counted(drops.clone());
            let t = thread::spawn(move || tx.send(v).err());
            drop(rx);
            let returned = t.join().unwrap();
            let was_returned = returned.is_some();
            drop(returned);
            assert_eq!(drops.load(Ordering::Relaxed), 1, "returned: {was_returned}");
        });
    }

    #[test]
    fn loom_oneshot_dropped_receive_keeps_the_value() {
        // A receive polled once (publishing its record) and dropped, racing
        // the send: the value is received by that poll or stays in the
        // channel for the next receive.
        model(|| {
            let (tx, mut rx) = channel::<u32>();
            let t = thread::spawn(move || tx.send(7));
            let mut got = None;
            {
                let mut recv = pin!(rx.recv());
                if let Poll::Ready(r) = recv
                    .as_mut()
                    .poll(&mut Context::from_waker(std::task::Waker::noop()))
                {
                    got = Some(r.unwrap());
                }
            }
            t.join().unwrap().unwrap();
            let later = rx.try_recv().ok();
            assert_eq!([got, later].into_iter().flatten().collect::<Vec<_>>(), [7]);
        });
    }

    #[test]
    fn loom_oneshot_closed_op_racing_receiver_drop() {
        model(|| {
            let (tx, rx) = channel::<u32>();
            let t = thread::spawn(move || drop(rx));
            tx.closed_op().perform();
            assert!(tx.is_closed());
            t.join().unwrap();
        });
    }
}
