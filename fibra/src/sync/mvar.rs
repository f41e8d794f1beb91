//! `MVar`: a synchronised one-slot box whose take and put are ops.
//!
//! # Why a channel of capacity one
//!
//! An mvar *is* a channel of capacity one seen from both ends at once: a put
//! is a send that waits for room, a take a receive that waits for a value.
//! Every property the mvar needs, the channel core (`chan/meeting.rs`) already
//! has, and its loom models check it:
//!
//! * **hand-off**: a put that finds a blocked take gives it the value
//!   directly (`send_locked` looks for a receiver before the buffer); a take
//!   that empties the box refills it from the first blocked put
//!   (`refill_locked`), as that put's commit;
//! * **FIFO**: blocked takes, and blocked puts, are served in the order they
//!   blocked (the wait queues are FIFO);
//! * **nothing lost**: a take whose perform is dropped after it committed
//!   gives the value back (`RecvOp::abandon` -> `Chan::rescue`), to a blocked
//!   take if there is one, else to the front of the box;
//! * **choices**: both ops are ordinary leaves of the op protocol.
//!
//! A dedicated implementation would repeat the channel core line for line
//! (one lock, a value, two wait queues, the same commits and the same
//! rescue), with its own unsafe code to get right. This one has none: it is
//! the channel's public ops behind a type that cannot close (the `MVar` owns
//! both ends, and every op borrows the `MVar`), with results unwrapped.
//!
//! # Invariants
//!
//! * `tx` and `rx` are the only handles of their channel and live as long as
//!   the `MVar`; ops borrow the `MVar`, so no op outlives them. The channel
//!   therefore never disconnects: a take always yields a value and a put
//!   never fails.
//! * The box holds at most one value, except after a rescue: a value given
//!   back by a dropped take goes in front of the one a put may have stored
//!   meanwhile, so for a moment the box holds two. Takes drain both, in that
//!   order; puts wait until both are gone. Nothing is lost or duplicated.
//! * No unsafe code, atomics or locks of its own: the channel core's
//!   invariants (no waker woken and no value dropped under its lock) hold.

use crate::chan::{RecvError, RecvOp, SendError, SendOp, SendTimeoutError};
use crate::op::{BlockCx, Op, sealed::Sealed};
use crate::{Receiver, Sender, bounded};
use pin_project_lite::pin_project;
use std::fmt;
use std::pin::Pin;
use std::time::Duration;

/// A synchronised box holding at most one value (Haskell's and Concurrent
/// ML's `MVar`): [`take`](MVar::take) waits until it is full and empties
/// it, [`put`](MVar::put) waits until it is empty and fills it. Both exist
/// as ops ([`take_op`](MVar::take_op), [`put_op`](MVar::put_op)), so waiting
/// on an `MVar` composes with channels, timeouts and every other op in a
/// choice.
///
/// Waiting takes and waiting puts are each served in FIFO order, and a put
/// that finds a take waiting hands its value straight to it. A take whose
/// perform is dropped after it received a value (a foreign `select!`) gives
/// the value back, ahead of any other.
///
/// # Examples
///
/// ```
/// use fibra::MVar;
/// use std::sync::Arc;
///
/// // A one-slot mailbox between two threads.
/// let mv = Arc::new(MVar::empty());
/// let producer = {
///     let mv = mv.clone();
///     std::thread::spawn(move || (1..=3).for_each(|i| mv.put_blocking(i)))
/// };
/// let got: Vec<i32> = (0..3).map(|_| mv.take_blocking()).collect();
/// producer.join().unwrap();
/// assert_eq!(got, [1, 2, 3]);
/// assert_eq!(mv.try_take(), None);
/// ```
pub struct MVar<T> {
    tx: Sender<T>,
    rx: Receiver<T>,
}

impl<T> MVar<T> {
    /// A full `MVar` holding `value`.
    ///
    /// ```
    /// let mv = fibra::MVar::new("hello");
    /// assert_eq!(mv.try_take(), Some("hello"));
    /// ```
    pub fn new(value: T) -> Self {
        let mv = Self::empty();
        if mv.tx.try_send(value).is_err() {
            unreachable!("a fresh MVar is empty and open");
        }
        mv
    }

    /// An empty `MVar`.
    ///
    /// ```
    /// let mv = fibra::MVar::<u8>::empty();
    /// assert!(mv.is_empty());
    /// ```
    pub fn empty() -> Self {
        let (tx, rx) = bounded(1);
        Self { tx, rx }
    }

    /// The op of taking the value: commits when the `MVar` is full, empties
    /// it and yields the value. If it loses a choice it takes nothing.
    ///
    /// ```
    /// use fibra::{MVar, Op, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let mv = MVar::<u32>::empty();
    /// // Wait for a value, but at most 10 ms.
    /// let got = choose((
    ///     mv.take_op().wrap(Some),
    ///     after(Duration::from_millis(10)).wrap(|()| None),
    /// ))
    /// .perform();
    /// assert_eq!(got, None);
    /// ```
    pub fn take_op(&self) -> TakeOp<'_, T> {
        TakeOp {
            inner: self.rx.recv_op(),
        }
    }

    /// The op of putting `value`: commits when the `MVar` is empty (or a
    /// take is waiting, which then gets the value directly) and yields `()`.
    ///
    /// If the op never commits (it is not performed, or
    /// [`try_perform`](Op::try_perform) fails), [`PutOp::into_value`] gives
    /// the value back. A put that loses a choice drops its value with the
    /// choice, like a channel's send op; use [`put_timeout`](MVar::put_timeout)
    /// or `try_perform` when it must come back.
    ///
    /// ```
    /// use fibra::{MVar, Op};
    ///
    /// let mv = MVar::new(1);
    /// // Full: the put cannot commit now, and its value comes back.
    /// let op = mv.put_op(2).try_perform().unwrap_err();
    /// assert_eq!(op.into_value(), 2);
    /// assert_eq!(mv.take_op().perform(), 1);
    /// mv.put_op(3).perform();
    /// assert_eq!(mv.try_take(), Some(3));
    /// ```
    pub fn put_op(&self, value: T) -> PutOp<'_, T> {
        PutOp {
            inner: self.tx.send_op(value),
        }
    }

    /// Waits until the `MVar` is full, empties it and returns the value.
    ///
    /// Cancel-safe: the value is taken only by the future that returns it;
    /// if the future is dropped right after a put handed it the value, the
    /// value goes back into the `MVar`.
    ///
    /// ```
    /// # fibra::run(async {
    /// let mv = fibra::MVar::new(5);
    /// assert_eq!(mv.take().await, 5);
    /// assert!(mv.is_empty());
    /// # });
    /// ```
    pub async fn take(&self) -> T {
        self.take_op().await
    }

    /// Waits until the `MVar` is empty and fills it with `value`.
    ///
    /// Cancel-safe: if the future is dropped before the put commits, the
    /// value was not put (it drops with the future).
    ///
    /// ```
    /// # fibra::run(async {
    /// let mv = fibra::MVar::empty();
    /// mv.put('x').await;
    /// assert_eq!(mv.take().await, 'x');
    /// # });
    /// ```
    pub async fn put(&self, value: T) {
        self.put_op(value).await;
    }

    /// Takes the value if the `MVar` is full now.
    ///
    /// ```
    /// let mv = fibra::MVar::new(7);
    /// assert_eq!(mv.try_take(), Some(7));
    /// assert_eq!(mv.try_take(), None);
    /// ```
    pub fn try_take(&self) -> Option<T> {
        self.take_op().try_perform().ok()
    }

    /// Fills the `MVar` if it is empty now (or a take is waiting, which gets
    /// the value); otherwise hands `value` back.
    ///
    /// ```
    /// let mv = fibra::MVar::empty();
    /// assert_eq!(mv.try_put(1), Ok(()));
    /// assert_eq!(mv.try_put(2), Err(2));
    /// ```
    pub fn try_put(&self, value: T) -> Result<(), T> {
        self.put_op(value).try_perform().map_err(PutOp::into_value)
    }

    /// [`take`](MVar::take) for OS threads: parks the thread until the
    /// `MVar` is full.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let mv = fibra::MVar::new(3);
    /// assert_eq!(mv.take_blocking(), 3);
    /// ```
    pub fn take_blocking(&self) -> T {
        self.take_op().perform()
    }

    /// [`put`](MVar::put) for OS threads: parks the thread until the `MVar`
    /// is empty.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let mv = fibra::MVar::empty();
    /// mv.put_blocking(3);
    /// assert_eq!(mv.try_take(), Some(3));
    /// ```
    pub fn put_blocking(&self, value: T) {
        self.put_op(value).perform();
    }

    /// Puts `value`, waiting at most `d`; on timeout the value comes back in
    /// `Err`, so nothing is lost.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # fibra::run(async {
    /// let mv = fibra::MVar::new(1);
    /// let late = mv.put_timeout(2, Duration::from_millis(5)).await;
    /// assert_eq!(late, Err(2)); // still full: the value came back
    /// assert_eq!(mv.take().await, 1);
    /// assert_eq!(mv.put_timeout(3, Duration::from_millis(5)).await, Ok(()));
    /// # });
    /// ```
    pub async fn put_timeout(&self, value: T, d: Duration) -> Result<(), T> {
        match self.tx.send_timeout(value, d).await {
            Ok(()) => Ok(()),
            Err(SendTimeoutError::Timeout(v)) => Err(v),
            Err(SendTimeoutError::Disconnected(_)) => unreachable!("an MVar never closes"),
        }
    }

    /// Whether the `MVar` is empty at this instant.
    ///
    /// ```
    /// let mv = fibra::MVar::new(());
    /// assert!(!mv.is_empty());
    /// mv.take_blocking();
    /// assert!(mv.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }
}

impl<T> Default for MVar<T> {
    /// An empty `MVar`.
    fn default() -> Self {
        Self::empty()
    }
}

impl<T> fmt::Debug for MVar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MVar")
            .field("full", &!self.is_empty())
            .finish()
    }
}

/// The channel under an `MVar` never closes (module invariants).
fn taken<T>(r: Result<T, RecvError>) -> T {
    match r {
        Ok(v) => v,
        Err(RecvError) => unreachable!("an MVar never closes"),
    }
}

/// The channel under an `MVar` never closes (module invariants).
fn put_done<T>(r: Result<(), SendError<T>>) {
    if r.is_err() {
        unreachable!("an MVar never closes");
    }
}

pin_project! {
    /// The op of taking an [`MVar`]'s value: made by [`MVar::take_op`].
    ///
    /// ```
    /// use fibra::{MVar, Op, TakeOp};
    ///
    /// let mv = MVar::new(2);
    /// let op: TakeOp<'_, i32> = mv.take_op();
    /// assert_eq!(op.perform(), 2);
    /// ```
    #[must_use = "an op does nothing unless performed"]
    pub struct TakeOp<'a, T> {
        #[pin]
        inner: RecvOp<'a, T>,
    }
}

impl<T> Sealed for TakeOp<'_, T> {}

impl<T> Op for TakeOp<'_, T> {
    type Output = T;

    fn commits_remotely(&self) -> bool {
        self.inner.commits_remotely()
    }

    fn prepare(self: Pin<&mut Self>) {
        self.project().inner.prepare();
    }

    fn try_now(self: Pin<&mut Self>) -> Option<T> {
        self.project().inner.try_now().map(taken)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.project().inner.block(cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.project().inner.repoll(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> T {
        taken(self.project().inner.finish(leaf))
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        // The channel's rescue: the value goes back to a blocked take, or to
        // the front of the box.
        self.project().inner.abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.project().inner.withdraw();
    }
}

pin_project! {
    /// The op of putting a value into an [`MVar`]: made by
    /// [`MVar::put_op`]. Until it commits it holds the value;
    /// [`into_value`](PutOp::into_value) takes it back.
    ///
    /// ```
    /// use fibra::{MVar, Op, PutOp};
    ///
    /// let mv = MVar::empty();
    /// let op: PutOp<'_, &str> = mv.put_op("in");
    /// op.perform();
    /// assert_eq!(mv.try_take(), Some("in"));
    /// ```
    #[must_use = "an op does nothing unless performed"]
    pub struct PutOp<'a, T> {
        #[pin]
        inner: SendOp<'a, T>,
    }
}

impl<T> PutOp<'_, T> {
    /// Takes back the value of an op that was not performed (or whose
    /// `try_perform` failed).
    ///
    /// ```
    /// use fibra::{MVar, Op};
    ///
    /// let mv = MVar::new(String::from("in"));
    /// let op = mv.put_op(String::from("kept")).try_perform().unwrap_err();
    /// assert_eq!(op.into_value(), "kept");
    /// ```
    pub fn into_value(self) -> T {
        self.inner.into_value()
    }
}

impl<T> Sealed for PutOp<'_, T> {}

impl<T> Op for PutOp<'_, T> {
    type Output = ();

    fn commits_remotely(&self) -> bool {
        self.inner.commits_remotely()
    }

    fn prepare(self: Pin<&mut Self>) {
        self.project().inner.prepare();
    }

    fn try_now(self: Pin<&mut Self>) -> Option<()> {
        self.project().inner.try_now().map(put_done)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.project().inner.block(cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.project().inner.repoll(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) {
        put_done(self.project().inner.finish(leaf));
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        // The value was put: nothing to give back.
        self.project().inner.abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.project().inner.withdraw();
    }
}

crate::op::op_into_future! {
    impl['a, T] TakeOp<'a, T>;
    impl['a, T] PutOp<'a, T>;
}
