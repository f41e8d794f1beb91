//! Channels: meeting places for tasks and threads.
//!
//! Three flavours share one implementation (`meeting.rs`, the meeting place): a **rendezvous**
//! channel ([`channel`], capacity 0: the sender waits for a receiver and hands
//! the value over directly), a **bounded** channel ([`bounded`]) and an
//! **unbounded** one ([`unbounded`]). All are multi-producer multi-consumer
//! with clonable [`Sender`] and [`Receiver`] handles.
//!
//! Every operation comes in four forms:
//!
//! | form | send | receive |
//! |---|---|---|
//! | async | [`Sender::send`]`(v).await` | [`Receiver::recv`]`().await` |
//! | op (for choices) | [`Sender::send_op`] | [`Receiver::recv_op`] |
//! | now or never | [`Sender::try_send`] | [`Receiver::try_recv`] |
//! | OS thread (parks) | [`Sender::send_blocking`] | [`Receiver::recv_blocking`] |
//!
//! and a send may also be *asynchronous* ([`Sender::send_async`],
//! [`Sender::send_async_op`]: ACML's `aSendEvt`): it commits at once, even
//! on a rendezvous channel, and its [`AsyncSend`] receipt says when a
//! receiver took the value, or gives it back if every receiver went first.
//!
//! A receive with a time limit is [`Receiver::recv_timeout`] (async) or
//! [`Receiver::recv_timeout_blocking`]; OS threads can iterate
//! ([`Receiver::iter`], [`Receiver::try_iter`], `for v in rx`).
//! [`Receiver`] is a `futures_core::Stream` (and `FusedStream`) and
//! [`Sender`] a `futures_sink::Sink`. A [`WeakSender`]
//! ([`Sender::downgrade`]) can send after an upgrade without keeping the
//! channel open.
//!
//! # Other kinds of channel
//!
//! | module | what | waiting op |
//! |---|---|---|
//! | [`oneshot`] | one value, one sender, one receiver (a reply slot) | [`oneshot::Receiver::recv_op`], [`oneshot::Sender::closed_op`] |
//! | [`broadcast`] | every receiver sees every value (bounded; laggers are told what they missed) | [`broadcast::Receiver::recv_op`] |
//! | [`watch`] | the latest value, and its changes | [`watch::Receiver::changed_op`] |
//!
//! Each is built on the same op protocol as the channels here, so its
//! waits compose in choices and work on any executor and from OS threads.
//!
//! # Closing and nothing lost
//!
//! Dropping every `Sender` closes the channel: receivers drain what is
//! buffered, then get [`RecvError`]. Dropping every `Receiver` makes every
//! send fail with the value handed back ([`SendError`]). A perform dropped
//! before it commits withdraws cleanly; a receive dropped *after* a sender
//! committed to it (possible when a foreign `select!` races it) gives the
//! value back to the channel, ahead of everything else.

mod async_send;
pub mod broadcast;
mod errors;
mod iter;
mod meeting;
pub mod oneshot;
mod ops;
mod receipts;
mod send_from;
mod send_recv_futures;
mod stream;
pub mod watch;
mod weak;

pub use async_send::{AsyncSend, ConsumedOp, SendAsyncOp};
pub use errors::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
pub use iter::{IntoIter, Iter, TryIter};
pub use ops::{RecvOp, SendOp};
pub use send_from::SendFromOp;
pub use send_recv_futures::{Recv, Send};
pub use weak::WeakSender;

use crate::loom::Arc;
use crate::op::{Op, Perform};
use meeting::{Chan, readiness};
use ops::ChanRef;
use std::fmt;

/// Creates a rendezvous channel: capacity zero, every send waits until a
/// receiver takes the value (the meeting place of CSP, Go's unbuffered
/// channel, CML's channel).
///
/// ```
/// let (tx, rx) = fibra::channel::<u32>();
/// let t = std::thread::spawn(move || tx.send_blocking(42));
/// assert_eq!(rx.recv_blocking(), Ok(42));
/// t.join().unwrap().unwrap();
/// ```
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    with_capacity(0)
}

/// Creates a channel that buffers up to `cap` values; sends wait while it is
/// full. `bounded(0)` is a rendezvous channel, like [`channel`].
///
/// ```
/// let (tx, rx) = fibra::bounded::<u32>(2);
/// tx.try_send(1).unwrap();
/// tx.try_send(2).unwrap();
/// assert!(tx.try_send(3).is_err()); // full
/// assert_eq!(rx.try_recv(), Ok(1));
/// ```
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    with_capacity(cap.min(usize::MAX - 1))
}

/// Creates a channel with an unbounded buffer: sends never wait.
///
/// ```
/// let (tx, rx) = fibra::unbounded::<u32>();
/// for i in 0..1000 {
///     tx.try_send(i).unwrap();
/// }
/// assert_eq!(rx.len(), 1000);
/// ```
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    with_capacity(usize::MAX)
}

fn with_capacity<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Chan::new(cap));
    (
        Sender {
            chan: chan.clone(),
            sink: None,
        },
        Receiver { chan, stream: None },
    )
}

/// The sending side of a channel. Clone it to send from several places; the
/// channel closes for receivers when the last clone is dropped.
///
/// ```
/// let (tx, rx) = fibra::unbounded::<u32>();
/// let tx2 = tx.clone();
/// std::thread::spawn(move || tx2.send_blocking(1).unwrap()).join().unwrap();
/// tx.send_blocking(2).unwrap();
/// drop(tx); // the last sender: receivers drain, then see the close
/// let mut got: Vec<u32> = std::iter::from_fn(|| rx.recv_blocking().ok()).collect();
/// got.sort();
/// assert_eq!(got, [1, 2]);
/// ```
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
    /// The send in flight for the `Sink` impl. Its op points into `chan`
    /// (`ChanRef::in_handle`): `Drop` clears it first, and `chan` is never
    /// replaced.
    sink: Option<std::pin::Pin<Box<Perform<SendOp<'static, T>>>>>,
}

/// The receiving side of a channel. Clone it to receive from several places
/// (each value goes to exactly one receiver); sends fail once the last clone
/// is dropped.
///
/// ```
/// let (tx, rx) = fibra::bounded::<u32>(4);
/// let rx2 = rx.clone(); // each value goes to one receiver
/// tx.try_send(1).unwrap();
/// tx.try_send(2).unwrap();
/// assert_eq!(rx.try_recv(), Ok(1));
/// assert_eq!(rx2.try_recv(), Ok(2));
/// drop((rx, rx2)); // the last receiver: sends fail and hand the value back
/// assert_eq!(tx.try_send(3).unwrap_err().into_inner(), 3);
/// ```
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
    /// The receive in flight for the `Stream` impl; as `Sender::sink`.
    stream: Option<std::pin::Pin<Box<Perform<RecvOp<'static, T>>>>>,
}

impl<T> Sender<T> {
    /// Sends `value`, waiting for a receiver (rendezvous) or for room
    /// (bounded). Fails, handing the value back, if every receiver is gone.
    ///
    /// Cancel-safe: if the returned future is dropped before the send
    /// commits, the value was not sent (it drops with the future).
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = fibra::bounded(1);
    /// tx.send("hi").await.unwrap();
    /// assert_eq!(rx.recv().await, Ok("hi"));
    /// drop(rx);
    /// assert_eq!(tx.send("bye").await.unwrap_err().into_inner(), "bye");
    /// # });
    /// ```
    pub fn send(&self, value: T) -> Send<'_, T> {
        Send::new(&self.chan, value)
    }

    /// The op of sending `value`, for choices: see [`Sender::send`].
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased};
    ///
    /// let (tx, _rx) = fibra::channel::<u8>();
    /// // Nobody receives, so the fallback wins.
    /// let sent = choose_biased((tx.send_op(1).wrap(|_| true), always(false))).perform();
    /// assert!(!sent);
    /// ```
    pub fn send_op(&self, value: T) -> SendOp<'_, T> {
        SendOp::new(ChanRef::borrowed(&self.chan), value)
    }

    /// Sends `value` asynchronously (ACML's `aSendEvt`): the send commits
    /// at once, without waiting for a receiver, even on a rendezvous
    /// channel. The value goes to a waiting receiver or into the buffer's
    /// room now, or else waits in the channel, where receivers take it in
    /// FIFO order with the other sends: the asynchronous sends of one
    /// sender arrive in the order they were made. A waiting value costs
    /// about what a buffered one does: it joins the buffer beyond its
    /// capacity (or, if blocked senders wait, a small record behind
    /// theirs). Nothing bounds how many wait: a producer that outruns its
    /// receivers grows the channel.
    ///
    /// The [`AsyncSend`] receipt tells when the value was consumed, or gives
    /// it back if every receiver goes before anyone takes it (then, as for
    /// any send, `Err(SendError(value))`); drop it to fire and forget. A
    /// value the receiving side never takes drops with it, like a buffered
    /// one.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = fibra::channel::<u32>();
    /// for i in 0..3 {
    ///     drop(tx.send_async(i)); // never waits
    /// }
    /// for i in 0..3 {
    ///     assert_eq!(rx.recv().await, Ok(i));
    /// }
    /// # });
    /// ```
    pub fn send_async(&self, value: T) -> AsyncSend<T>
    where
        T: std::marker::Send,
    {
        async_send::send_detached(&self.chan, value)
    }

    /// The op of an asynchronous send, for choices: always ready, and
    /// committing it sends `value` as [`Sender::send_async`] does, yielding
    /// the receipt. In a choice that another branch wins, nothing is sent.
    ///
    /// ```
    /// use fibra::{Op, choose_biased};
    ///
    /// let (tx, rx) = fibra::channel::<u8>();
    /// let (_tx2, rx2) = fibra::channel::<u8>();
    /// // Nothing to receive on `rx2`: the asynchronous send commits.
    /// let sent = choose_biased((rx2.recv_op().wrap(|_| None), tx.send_async_op(9).wrap(Some)))
    ///     .perform();
    /// assert!(sent.is_some());
    /// assert_eq!(rx.try_recv(), Ok(9));
    /// ```
    pub fn send_async_op(&self, value: T) -> SendAsyncOp<'_, T> {
        SendAsyncOp::new(&self.chan, value)
    }

    /// The op of sending the value in `slot`, which the caller keeps: if
    /// the send commits, `slot` is left `None`; if it loses a choice (or
    /// is cancelled, or never performed), the value is back in `slot` once
    /// the op is dropped, at the end of the `select!`, the perform or the
    /// [`WaitUntil`](crate::WaitUntil). A `None` slot makes an op that
    /// never commits. This is how a send in a choice loses nothing:
    /// [`send_op`](Sender::send_op) owns its value, which drops with the
    /// op when another branch wins.
    ///
    /// ```
    /// use fibra::{bounded, select, time::after};
    /// use std::time::Duration;
    ///
    /// # fibra::run(async {
    /// let (tx, rx) = bounded::<Vec<u8>>(1);
    /// tx.send(vec![0]).await.unwrap(); // full
    /// let mut pending = Some(vec![1, 2, 3]);
    /// select! {
    ///     r = tx.send_op_from(&mut pending) => r.unwrap(),
    ///     () = after(Duration::from_millis(1)) => {
    ///         // The send lost: the value is still ours, to retry later.
    ///         assert_eq!(pending.as_deref(), Some(&[1, 2, 3][..]));
    ///     }
    /// }
    /// assert_eq!(rx.recv().await, Ok(vec![0]));
    /// select! {
    ///     r = tx.send_op_from(&mut pending) => r.unwrap(),
    ///     () = after(Duration::from_secs(5)) => unreachable!("there is room"),
    /// }
    /// assert_eq!(pending, None); // sent
    /// assert_eq!(rx.recv().await, Ok(vec![1, 2, 3]));
    /// # });
    /// ```
    pub fn send_op_from<'a>(&'a self, slot: &'a mut Option<T>) -> SendFromOp<'a, T> {
        SendFromOp::new(ChanRef::borrowed(&self.chan), slot)
    }

    /// Sends `value` only if that can happen now: a receiver is waiting
    /// (rendezvous) or the buffer has room.
    ///
    /// ```
    /// use fibra::TrySendError;
    ///
    /// let (tx, rx) = fibra::bounded(1);
    /// assert_eq!(tx.try_send(1), Ok(()));
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// drop(rx);
    /// assert_eq!(tx.try_send(3), Err(TrySendError::Disconnected(3)));
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        let value = match self.chan.try_send_buffered(value) {
            Ok(()) => return Ok(()),
            Err(value) => value,
        };
        match self.send_op(value).try_perform() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(SendError(v))) => Err(TrySendError::Disconnected(v)),
            Err(op) => Err(TrySendError::Full(op.into_value())),
        }
    }

    /// Sends `value` from an OS thread, parking it until the send commits.
    /// On a full buffered channel it first spins briefly (then yields) for
    /// room, as crossbeam-channel does: a receiver on another core usually
    /// makes some within microseconds, and the send then takes no lock of a
    /// waiter and wakes nobody.
    ///
    /// # Panics
    ///
    /// On a fibra runtime worker thread; use [`Sender::send`] there.
    ///
    /// ```
    /// let (tx, rx) = fibra::channel();
    /// let t = std::thread::spawn(move || rx.recv_blocking());
    /// tx.send_blocking(5).unwrap();
    /// assert_eq!(t.join().unwrap(), Ok(5));
    /// ```
    pub fn send_blocking(&self, value: T) -> Result<(), SendError<T>> {
        // Refused on a worker even when it would not block.
        crate::op::check_blocking_allowed();
        // A buffered send that meets no waiter needs no perform.
        let value = match self.chan.try_send_buffered(value) {
            Ok(()) => return Ok(()),
            Err(value) => value,
        };
        // Full: a receiver on another core usually makes room soon; wait
        // for it without publishing a record (see `Chan::spin_until_may`).
        let value = if self.chan.spin_until_may(readiness::SEND_MAY) {
            match self.chan.try_send_buffered(value) {
                Ok(()) => return Ok(()),
                Err(value) => value,
            }
        } else {
            value
        };
        self.send_op(value).perform()
    }

    /// Sends `value`, waiting at most `d`; on timeout the value comes back
    /// (`SendTimeoutError::Timeout(value)`), so nothing is lost.
    ///
    /// (A [`send_op`](Sender::send_op) that loses a choice keeps its value
    /// inside the op, which the perform then drops; in a choice, use
    /// [`send_op_from`](Sender::send_op_from), which leaves the value with
    /// the caller.)
    ///
    /// ```
    /// use fibra::SendTimeoutError;
    /// use std::time::Duration;
    ///
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = fibra::bounded(1);
    /// tx.send_timeout(1, Duration::from_millis(5)).await.unwrap();
    /// // Full: the second send times out and the value comes back.
    /// let err = tx.send_timeout(2, Duration::from_millis(5)).await.unwrap_err();
    /// assert!(matches!(err, SendTimeoutError::Timeout(2)));
    /// assert_eq!(rx.recv().await, Ok(1));
    /// # });
    /// ```
    pub async fn send_timeout(
        &self,
        value: T,
        d: std::time::Duration,
    ) -> Result<(), SendTimeoutError<T>> {
        let mut perform =
            std::pin::pin!(Perform::new(crate::time::timeout(self.send_op(value), d)));
        match perform.as_mut().await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(SendError(v))) => Err(SendTimeoutError::Disconnected(v)),
            Err(crate::time::Elapsed) => {
                let v = perform.finished_op().op().take_unsent();
                Err(SendTimeoutError::Timeout(
                    v.expect("a timed-out send still holds its value"),
                ))
            }
        }
    }

    /// [`Sender::send_timeout`] for OS threads (parks).
    ///
    /// # Panics
    ///
    /// On a fibra runtime worker thread.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (tx, rx) = fibra::channel::<u8>();
    /// let t = std::thread::spawn(move || rx.recv_blocking());
    /// tx.send_timeout_blocking(3, Duration::from_secs(5)).unwrap();
    /// assert_eq!(t.join().unwrap(), Ok(3));
    /// ```
    pub fn send_timeout_blocking(
        &self,
        value: T,
        d: std::time::Duration,
    ) -> Result<(), SendTimeoutError<T>> {
        crate::block_on(self.send_timeout(value, d))
    }

    /// Whether every receiver is gone (sends will fail).
    ///
    /// ```
    /// let (tx, rx) = fibra::channel::<()>();
    /// assert!(!tx.is_disconnected());
    /// drop(rx);
    /// assert!(tx.is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        self.chan.is_disconnected_for_senders()
    }

    /// The buffer's capacity: `Some(0)` for rendezvous, `None` if unbounded.
    ///
    /// ```
    /// assert_eq!(fibra::bounded::<u8>(3).0.capacity(), Some(3));
    /// assert_eq!(fibra::unbounded::<u8>().0.capacity(), None);
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.chan.capacity()
    }

    /// Number of values buffered now.
    ///
    /// ```
    /// let (tx, _rx) = fibra::unbounded();
    /// tx.try_send(1).unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan.len()
    }

    /// Whether nothing is buffered now.
    ///
    /// ```
    /// let (tx, _rx) = fibra::unbounded::<u8>();
    /// assert!(tx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `self` and `other` send on the same channel.
    ///
    /// ```
    /// let (tx, _rx) = fibra::channel::<u8>();
    /// assert!(tx.same_channel(&tx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        Arc::ptr_eq(&self.chan, &other.chan)
    }
}

impl<T> Receiver<T> {
    /// Receives a value, waiting until one is available. Fails once every
    /// sender is gone and the buffer is empty.
    ///
    /// Cancel-safe: a value is taken only by the perform that returns it; if
    /// the future is dropped right after a sender committed to it, the value
    /// goes back to the front of the channel.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = fibra::unbounded();
    /// tx.send(1).await.unwrap();
    /// drop(tx);
    /// assert_eq!(rx.recv().await, Ok(1));
    /// assert_eq!(rx.recv().await, Err(fibra::RecvError));
    /// # });
    /// ```
    pub fn recv(&self) -> Recv<'_, T> {
        Recv::new(&self.chan)
    }

    /// The op of receiving a value, for choices: see [`Receiver::recv`].
    ///
    /// ```
    /// use fibra::{Op, choose};
    ///
    /// let (tx, rx) = fibra::bounded(1);
    /// tx.try_send('x').unwrap();
    /// let (_tx2, rx2) = fibra::bounded::<char>(1);
    /// assert_eq!(choose((rx.recv_op(), rx2.recv_op())).perform(), Ok('x'));
    /// ```
    pub fn recv_op(&self) -> RecvOp<'_, T> {
        RecvOp::new(ChanRef::borrowed(&self.chan))
    }

    /// Receives a value only if one is available now.
    ///
    /// ```
    /// use fibra::TryRecvError;
    ///
    /// let (tx, rx) = fibra::bounded(1);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.try_send(1).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        if let Some(v) = self.chan.try_recv_buffered() {
            return Ok(v);
        }
        match self.recv_op().try_perform() {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(RecvError)) => Err(TryRecvError::Disconnected),
            Err(_) => Err(TryRecvError::Empty),
        }
    }

    /// Receives a value on an OS thread, parking it until one arrives. On an
    /// empty buffered channel it first spins briefly (then yields) for a
    /// value, as crossbeam-channel does, before it parks.
    ///
    /// # Panics
    ///
    /// On a fibra runtime worker thread; use [`Receiver::recv`] there.
    ///
    /// ```
    /// let (tx, rx) = fibra::channel();
    /// std::thread::spawn(move || tx.send_blocking("hello"));
    /// assert_eq!(rx.recv_blocking(), Ok("hello"));
    /// ```
    pub fn recv_blocking(&self) -> Result<T, RecvError> {
        // Refused on a worker even when it would not block.
        crate::op::check_blocking_allowed();
        // A buffered value with no sender waiting for room needs no perform.
        if let Some(v) = self.chan.try_recv_buffered() {
            return Ok(v);
        }
        // Empty: a sender on another core usually sends soon; wait for it
        // without publishing a record (see `Chan::spin_until_may`).
        if self.chan.spin_until_may(readiness::RECV_MAY) {
            if let Some(v) = self.chan.try_recv_buffered() {
                return Ok(v);
            }
        }
        self.recv_op().perform()
    }

    /// Receives a value, waiting at most `d`: `Err(Timeout)` if none came
    /// in time, `Err(Disconnected)` once every sender is gone and the
    /// channel is empty. Cancel-safe, like [`recv`](Self::recv); on an OS
    /// thread use [`recv_timeout_blocking`](Self::recv_timeout_blocking). In
    /// a choice, use `fibra::time::timeout(rx.recv_op(), d)` (or an `after`
    /// branch).
    ///
    /// ```
    /// use fibra::RecvTimeoutError;
    /// use std::time::Duration;
    ///
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = fibra::bounded(1);
    /// let d = Duration::from_millis(5);
    /// assert_eq!(rx.recv_timeout(d).await, Err(RecvTimeoutError::Timeout));
    /// tx.send(1).await.unwrap();
    /// assert_eq!(rx.recv_timeout(d).await, Ok(1));
    /// # });
    /// ```
    pub async fn recv_timeout(&self, d: std::time::Duration) -> Result<T, RecvTimeoutError> {
        match crate::time::timeout(self.recv_op(), d).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(RecvError)) => Err(RecvTimeoutError::Disconnected),
            Err(crate::time::Elapsed) => Err(RecvTimeoutError::Timeout),
        }
    }

    /// Receives a value on an OS thread, parking it at most `d`
    /// (crossbeam's `recv_timeout`); see [`recv_timeout`](Self::recv_timeout).
    ///
    /// # Panics
    ///
    /// On a fibra runtime worker thread; use [`recv_timeout`](Self::recv_timeout)
    /// there.
    ///
    /// ```
    /// use fibra::RecvTimeoutError;
    /// use std::time::Duration;
    ///
    /// let (tx, rx) = fibra::channel();
    /// let t = std::thread::spawn(move || tx.send_blocking("hi"));
    /// assert_eq!(rx.recv_timeout_blocking(Duration::from_secs(10)), Ok("hi"));
    /// t.join().unwrap().unwrap();
    /// assert_eq!(
    ///     rx.recv_timeout_blocking(Duration::from_millis(1)),
    ///     Err(RecvTimeoutError::Disconnected)
    /// );
    /// ```
    pub fn recv_timeout_blocking(&self, d: std::time::Duration) -> Result<T, RecvTimeoutError> {
        match crate::time::timeout(self.recv_op(), d).perform() {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(RecvError)) => Err(RecvTimeoutError::Disconnected),
            Err(crate::time::Elapsed) => Err(RecvTimeoutError::Timeout),
        }
    }

    /// Whether every sender is gone and nothing is left to receive.
    ///
    /// ```
    /// let (tx, rx) = fibra::unbounded();
    /// tx.try_send(1).unwrap();
    /// drop(tx);
    /// assert!(!rx.is_disconnected()); // one value left
    /// rx.try_recv().unwrap();
    /// assert!(rx.is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        self.chan.is_disconnected_for_receivers()
    }

    /// The buffer's capacity: `Some(0)` for rendezvous, `None` if unbounded.
    ///
    /// ```
    /// assert_eq!(fibra::channel::<u8>().1.capacity(), Some(0));
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.chan.capacity()
    }

    /// Number of values buffered now.
    ///
    /// ```
    /// let (tx, rx) = fibra::bounded(4);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan.len()
    }

    /// Whether nothing is buffered now.
    ///
    /// ```
    /// let (_tx, rx) = fibra::bounded::<u8>(4);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `self` and `other` receive from the same channel.
    ///
    /// ```
    /// let (_tx, rx) = fibra::channel::<u8>();
    /// assert!(rx.same_channel(&rx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        Arc::ptr_eq(&self.chan, &other.chan)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.chan.add_sender();
        Sender {
            chan: self.chan.clone(),
            sink: None,
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.chan.add_receiver();
        Receiver {
            chan: self.chan.clone(),
            stream: None,
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // A send in flight belongs to this handle: settle it first.
        self.sink = None;
        self.chan.remove_sender();
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // A receive in flight gives any value back before we leave.
        self.stream = None;
        self.chan.remove_receiver();
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

crate::op::op_into_future! {
    impl['a, T] RecvOp<'a, T>;
    impl['a, T] SendOp<'a, T>;
    impl['a, T] SendFromOp<'a, T>;
}

#[cfg(all(test, loom))]
pub(crate) mod loom_models;
