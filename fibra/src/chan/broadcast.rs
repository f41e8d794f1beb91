//! `broadcast`: every receiver sees every value sent after it subscribed;
//! a bounded ring, so a receiver that falls behind is told how many values
//! it missed (tokio's `broadcast`).
//!
//! # Invariants (all under `shared`'s lock)
//!
//! * `ring` holds the last values sent, at most `cap`, oldest first;
//!   `ring[0]` is position `head`, so the next send takes position
//!   `head + ring.len()` (the tail). Positions only grow.
//! * Each receiver owns its position `next` (the first position it has not
//!   seen). `next < head` means it lagged: `head - next` values were pushed
//!   out of the ring before it saw them. `next <= tail` always.
//! * Values are kept as `Arc<T>` so that a receiver clones the `Arc` under
//!   the lock and the value (user code: `T::clone`) after releasing it, and
//!   a value pushed out of the ring is dropped after the unlock.
//! * `waiters` holds the records of blocked receives. Every send commits
//!   them all (each looks at its own position afterwards); a receive
//!   publishes its record and looks at the ring under the same lock, so
//!   either it sees the new value or the send finds its record.
//! * A receive is ready once its position is behind the tail, it lagged, or
//!   every sender is gone; each only becomes more true (positions grow, the
//!   ring is emptied only when the last receiver is gone, and no sender can
//!   be made once none is left), so a committed receive always has an
//!   outcome in `finish`.
//! * No waker is woken and no user value is dropped or cloned while the
//!   lock is held.

use super::SendError;
use crate::loom::{Arc, Lock, LockGuard};
use crate::op::waiter::{Registration, WaitQueue};
use crate::op::{BlockCx, Op, Perform, sealed::Sealed};
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::Waker;

struct Shared<T> {
    ring: VecDeque<std::sync::Arc<T>>,
    /// The position of `ring[0]`.
    head: u64,
    cap: usize,
    senders: usize,
    receivers: usize,
    waiters: WaitQueue<()>,
}

impl<T> Shared<T> {
    fn tail(&self) -> u64 {
        self.head + self.ring.len() as u64
    }

    /// What a receive at position `next` would get now.
    fn look(&self, next: u64) -> Look<T> {
        if next < self.head {
            return Look::Lagged(self.head - next);
        }
        match self.ring.get((next - self.head) as usize) {
            Some(v) => Look::Value(v.clone()),
            None if self.senders == 0 => Look::Closed,
            None => Look::Nothing,
        }
    }

    fn is_ready(&self, next: u64) -> bool {
        next < self.tail() || self.senders == 0
    }
}

enum Look<T> {
    Value(std::sync::Arc<T>),
    Lagged(u64),
    Closed,
    Nothing,
}

struct Inner<T> {
    shared: Lock<Shared<T>>,
}

impl<T> Inner<T> {
    fn lock(&self) -> LockGuard<'_, Shared<T>> {
        self.shared.lock()
    }
}

/// Why a broadcast receive returned no value.
///
/// ```
/// use fibra::broadcast::{self, RecvError};
///
/// let (tx, mut rx) = broadcast::channel::<u32>(1);
/// tx.send(1).unwrap();
/// tx.send(2).unwrap(); // pushes 1 out of the ring
/// assert_eq!(rx.recv_blocking(), Err(RecvError::Lagged(1)));
/// assert_eq!(rx.recv_blocking(), Ok(2));
/// drop(tx);
/// assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvError {
    /// Every sender is gone and this receiver has seen every value.
    Closed,
    /// The receiver fell behind: this many values were pushed out of the
    /// ring before it saw them. The next receive yields the oldest value
    /// still there.
    Lagged(u64),
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Closed => f.write_str("every sender is gone and every value was seen"),
            RecvError::Lagged(n) => write!(f, "the receiver lagged and missed {n} values"),
        }
    }
}

impl std::error::Error for RecvError {}

/// Why [`Receiver::try_recv`] returned no value.
///
/// ```
/// use fibra::broadcast::{self, TryRecvError};
///
/// let (tx, mut rx) = broadcast::channel::<u32>(4);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing new now.
    Empty,
    /// Every sender is gone and this receiver has seen every value.
    Closed,
    /// The receiver fell behind and missed this many values.
    Lagged(u64),
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("no new value now"),
            TryRecvError::Closed => RecvError::Closed.fmt(f),
            TryRecvError::Lagged(n) => RecvError::Lagged(*n).fmt(f),
        }
    }
}

impl std::error::Error for TryRecvError {}

/// Creates a broadcast channel keeping the last `capacity` values: every
/// [`Receiver`] sees every value sent after it subscribed, in order
/// (tokio's `broadcast::channel`). Sending never waits: when the ring is
/// full the oldest value is pushed out, and a receiver that had not seen it
/// learns how many it missed ([`RecvError::Lagged`]) and goes on from the
/// oldest value still there. Receiving is an op ([`Receiver::recv_op`]).
///
/// Values must be `Clone`: each receiver gets its own clone.
///
/// # What happens to a value
///
/// * [`Sender::send`] fails and hands the value back if no receiver
///   exists.
/// * Otherwise every receiver subscribed at that moment sees it, unless it
///   lags more than `capacity` values behind: then it is told how many it
///   missed, never silently.
/// * A receive that loses a choice, or whose perform is dropped, takes
///   nothing: the receiver's position does not move.
/// * The ring keeps the last `capacity` values until they are pushed out
///   or the last receiver is dropped.
///
/// # Panics
///
/// If `capacity` is 0.
///
/// # Examples
///
/// ```
/// use fibra::broadcast;
///
/// let (tx, mut a) = broadcast::channel(16);
/// let mut b = tx.subscribe();
/// tx.send("hello").unwrap();
/// tx.send("world").unwrap();
/// drop(tx);
/// for rx in [&mut a, &mut b] {
///     assert_eq!(rx.recv_blocking(), Ok("hello"));
///     assert_eq!(rx.recv_blocking(), Ok("world"));
///     assert_eq!(rx.recv_blocking(), Err(broadcast::RecvError::Closed));
/// }
/// ```
pub fn channel<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    assert!(
        capacity > 0,
        "a broadcast channel needs a capacity of at least 1"
    );
    let inner = Arc::new(Inner {
        shared: Lock::new(Shared {
            ring: VecDeque::new(),
            head: 0,
            cap: capacity,
            senders: 1,
            receivers: 1,
            waiters: WaitQueue::default(),
        }),
    });
    (
        Sender {
            inner: inner.clone(),
        },
        Receiver { inner, next: 0 },
    )
}

/// The sending side of a [`broadcast`](self) channel. Clone it to send from
/// several places; receivers see [`RecvError::Closed`] once every clone is
/// gone and they have seen every value.
///
/// ```
/// use fibra::broadcast::{self, RecvError};
///
/// let (tx, mut rx) = broadcast::channel(4);
/// let tx2 = tx.clone();
/// tx.send(1).unwrap();
/// tx2.send(2).unwrap();
/// drop((tx, tx2));
/// assert_eq!(rx.recv_blocking(), Ok(1));
/// assert_eq!(rx.recv_blocking(), Ok(2));
/// assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
/// ```
pub struct Sender<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Sender<T> {
    /// Sends `value` to every current receiver, never waiting; returns how
    /// many receivers there are. Fails, handing the value back, if there is
    /// none. When the ring is full, the oldest value is pushed out (see
    /// [`channel`]).
    ///
    /// ```
    /// let (tx, rx) = fibra::broadcast::channel(4);
    /// let _rx2 = tx.subscribe();
    /// assert_eq!(tx.send(1), Ok(2));
    /// drop(rx);
    /// drop(_rx2);
    /// assert_eq!(tx.send(2).unwrap_err().into_inner(), 2);
    /// ```
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        // Allocated outside the lock.
        let value = std::sync::Arc::new(value);
        let mut wakers = Vec::new();
        let (pushed_out, receivers) = {
            let mut st = self.inner.lock();
            if st.receivers == 0 {
                drop(st);
                let value = std::sync::Arc::into_inner(value).expect("the only reference");
                return Err(SendError(value));
            }
            st.ring.push_back(value);
            let pushed_out = if st.ring.len() > st.cap {
                st.head += 1;
                st.ring.pop_front()
            } else {
                None
            };
            st.waiters.commit_all(&mut wakers);
            (pushed_out, st.receivers)
        };
        drop(pushed_out);
        wakers.into_iter().for_each(Waker::wake);
        Ok(receivers)
    }

    /// A new receiver that sees every value sent from now on.
    ///
    /// ```
    /// let (tx, _rx) = fibra::broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// let mut late = tx.subscribe();
    /// tx.send(2).unwrap();
    /// assert_eq!(late.try_recv(), Ok(2)); // not 1: sent before it subscribed
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        let next = {
            let mut st = self.inner.lock();
            st.receivers += 1;
            st.tail()
        };
        Receiver {
            inner: self.inner.clone(),
            next,
        }
    }

    /// How many receivers exist now.
    ///
    /// ```
    /// let (tx, rx) = fibra::broadcast::channel::<u8>(1);
    /// assert_eq!(tx.receiver_count(), 1);
    /// drop(rx);
    /// assert_eq!(tx.receiver_count(), 0);
    /// ```
    pub fn receiver_count(&self) -> usize {
        self.inner.lock().receivers
    }

    /// Whether `self` and `other` send on the same channel.
    ///
    /// ```
    /// let (tx, _rx) = fibra::broadcast::channel::<u8>(1);
    /// assert!(tx.same_channel(&tx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.inner.lock().senders += 1;
        Sender {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut wakers = Vec::new();
        {
            let mut st = self.inner.lock();
            st.senders -= 1;
            if st.senders == 0 {
                st.waiters.commit_all(&mut wakers);
            }
        }
        wakers.into_iter().for_each(Waker::wake);
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("broadcast::Sender").finish_non_exhaustive()
    }
}

/// The receiving side of a [`broadcast`](self) channel: sees every value
/// sent after it subscribed. A clone starts where the original is (it sees
/// the same values from there on); [`resubscribe`](Self::resubscribe)
/// starts at the newest.
///
/// ```
/// # fibra::run(async {
/// let (tx, mut rx) = fibra::broadcast::channel(8);
/// let mut other = rx.clone();
/// let t = fibra::spawn(async move { other.recv().await });
/// tx.send("news").unwrap();
/// assert_eq!(rx.recv().await, Ok("news"));
/// assert_eq!(t.await.unwrap(), Ok("news"));
/// # });
/// ```
pub struct Receiver<T> {
    inner: Arc<Inner<T>>,
    /// The first position this receiver has not seen.
    next: u64,
}

impl<T> Receiver<T> {
    /// A new receiver that sees every value sent from now on (not the ones
    /// this receiver has yet to see).
    ///
    /// ```
    /// let (tx, mut rx) = fibra::broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// let mut fresh = rx.resubscribe();
    /// assert_eq!(fresh.try_recv(), Err(fibra::broadcast::TryRecvError::Empty));
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn resubscribe(&self) -> Receiver<T> {
        let next = {
            let mut st = self.inner.lock();
            st.receivers += 1;
            st.tail()
        };
        Receiver {
            inner: self.inner.clone(),
            next,
        }
    }

    /// How many values this receiver has yet to see that are still in the
    /// ring.
    ///
    /// ```
    /// let (tx, rx) = fibra::broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        let st = self.inner.lock();
        (st.tail() - self.next.max(st.head)) as usize
    }

    /// Whether this receiver has seen every value in the ring.
    ///
    /// ```
    /// let (_tx, rx) = fibra::broadcast::channel::<u8>(4);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `self` and `other` receive from the same channel.
    ///
    /// ```
    /// let (_tx, rx) = fibra::broadcast::channel::<u8>(1);
    /// assert!(rx.same_channel(&rx.resubscribe()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<T: Clone> Receiver<T> {
    /// The op of receiving the next value this receiver has not seen:
    /// `Ok(value)`, `Err(RecvError::Lagged(n))` if it fell `n` values
    /// behind (the next receive yields the oldest value still in the ring),
    /// or `Err(RecvError::Closed)` once every sender is gone and it has
    /// seen everything. A receive that loses a choice takes nothing.
    ///
    /// ```
    /// use fibra::{Op, broadcast, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let (tx, mut rx) = broadcast::channel::<u32>(4);
    /// let got = choose((
    ///     rx.recv_op().wrap(|r| r.ok()),
    ///     after(Duration::from_millis(5)).wrap(|()| None),
    /// ))
    /// .perform();
    /// assert_eq!(got, None);
    /// tx.send(9).unwrap();
    /// assert_eq!(rx.recv_op().perform(), Ok(9));
    /// ```
    pub fn recv_op(&mut self) -> RecvOp<'_, T> {
        RecvOp {
            rx: self,
            slot: (),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Waits for the next value; see [`recv_op`](Self::recv_op).
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, mut rx) = fibra::broadcast::channel(4);
    /// tx.send('x').unwrap();
    /// assert_eq!(rx.recv().await, Ok('x'));
    /// # });
    /// ```
    pub fn recv(&mut self) -> Perform<RecvOp<'_, T>> {
        Perform::new(self.recv_op())
    }

    /// Waits for the next value, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let (tx, mut rx) = fibra::broadcast::channel(4);
    /// std::thread::spawn(move || tx.send(1).unwrap());
    /// assert_eq!(rx.recv_blocking(), Ok(1));
    /// ```
    pub fn recv_blocking(&mut self) -> Result<T, RecvError> {
        self.recv_op().perform()
    }

    /// Takes the next value if there is one now.
    ///
    /// ```
    /// let (tx, mut rx) = fibra::broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(rx.try_recv(), Err(fibra::broadcast::TryRecvError::Empty));
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let look = self.inner.lock().look(self.next);
        match self.take(look) {
            Some(Ok(v)) => Ok(v),
            Some(Err(RecvError::Closed)) => Err(TryRecvError::Closed),
            Some(Err(RecvError::Lagged(n))) => Err(TryRecvError::Lagged(n)),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Turns what a look found into the outcome, moving this receiver's
    /// position. Runs after the lock is released: the clone is user code,
    /// and the `Arc` may be the last reference to a value pushed out since.
    fn take(&mut self, look: Look<T>) -> Option<Result<T, RecvError>> {
        match look {
            Look::Value(v) => {
                let v = T::clone(&v);
                // Only once the clone succeeded: a panicking clone skips
                // nothing.
                self.next += 1;
                Some(Ok(v))
            }
            Look::Lagged(n) => {
                self.next += n;
                Some(Err(RecvError::Lagged(n)))
            }
            Look::Closed => Some(Err(RecvError::Closed)),
            Look::Nothing => None,
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.inner.lock().receivers += 1;
        Receiver {
            inner: self.inner.clone(),
            next: self.next,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let ring = {
            let mut st = self.inner.lock();
            st.receivers -= 1;
            if st.receivers == 0 {
                // Nobody can see these any more.
                let len = st.ring.len() as u64;
                st.head += len;
                std::mem::take(&mut st.ring)
            } else {
                VecDeque::new()
            }
        };
        drop(ring);
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("broadcast::Receiver")
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

/// The op of receiving from a broadcast channel: made by
/// [`Receiver::recv_op`].
///
/// ```
/// use fibra::{Op, broadcast};
///
/// let (tx, mut rx) = broadcast::channel(2);
/// tx.send(3).unwrap();
/// let op: broadcast::RecvOp<'_, i32> = rx.recv_op();
/// assert_eq!(op.perform(), Ok(3));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct RecvOp<'a, T> {
    rx: &'a mut Receiver<T>,
    slot: (),
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl<T> RecvOp<'_, T> {
    fn project(self: Pin<&mut Self>) -> (&mut Receiver<T>, &(), &mut Option<Registration>) {
        // SAFETY: nothing is moved out; only `slot` is pointed at (by our
        // record), and it is handed out as a shared reference.
        let this = unsafe { self.get_unchecked_mut() };
        (this.rx, &this.slot, &mut this.published)
    }
}

impl<T> Sealed for RecvOp<'_, T> {}

impl<T: Clone> Op for RecvOp<'_, T> {
    type Output = Result<T, RecvError>;

    // Committed by senders, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        let (rx, _, _) = self.project();
        let look = rx.inner.lock().look(rx.next);
        rx.take(look)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (rx, slot, published) = self.project();
        let mut st = rx.inner.lock();
        if st.is_ready(rx.next) {
            if cx.state.claim().is_ok() {
                cx.state.commit_own(cx.leaf);
            }
            return;
        }
        *published = Some(st.waiters.publish(cx, slot));
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        let (rx, _, published) = self.project();
        *published = None;
        let look = rx.inner.lock().look(rx.next);
        rx.take(look)
            .expect("a committed receive has an outcome (readiness only grows)")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        // Nothing was taken: the position did not move.
        *self.project().2 = None;
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (rx, _, published) = self.project();
        if let Some(reg) = published.take() {
            rx.inner.lock().waiters.remove(reg);
        }
    }
}

crate::op::op_into_future! {
    impl['a, T: Clone] RecvOp<'a, T>;
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::loom::{model, thread};

    #[test]
    fn loom_broadcast_send_racing_two_blocked_receivers() {
        // One send commits every blocked receive: both receivers see the
        // value, whether each blocks before or after the send.
        model(|| {
            let (tx, mut a) = channel::<u32>(2);
            let mut b = tx.subscribe();
            let t = thread::spawn(move || tx.send(1).unwrap());
            let other = thread::spawn(move || b.recv_blocking());
            assert_eq!(a.recv_blocking(), Ok(1));
            assert_eq!(other.join().unwrap(), Ok(1));
            t.join().unwrap();
        });
    }

    #[test]
    fn loom_broadcast_sends_and_close_racing_a_blocked_receiver() {
        // Two sends then the sender's drop, racing a receiver that blocks
        // between them: it sees both values in order, then `Closed`.
        model(|| {
            let (tx, mut rx) = channel::<u32>(2);
            let t = thread::spawn(move || {
                tx.send(1).unwrap();
                tx.send(2).unwrap();
            });
            assert_eq!(rx.recv_blocking(), Ok(1));
            assert_eq!(rx.recv_blocking(), Ok(2));
            assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
            t.join().unwrap();
        });
    }
}
