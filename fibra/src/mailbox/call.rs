//! Request/reply (Erlang's `gen_server:call`): a message carrying a
//! one-shot reply slot, and waiting for the reply as an op.
//!
//! The slot is a [`oneshot`](crate::oneshot) channel: the [`Reply`] holds
//! its sender, the [`Call`] its receiver. The reply never waits; a `Reply`
//! dropped unsent (the actor ended, or forgot) makes the caller's receive
//! fail, reported as [`CallError::NoReply`] — the caller never waits for an
//! actor that died.

use super::Addr;
use crate::chan::oneshot::{self, Receiver, RecvOp, Sender};
use crate::chan::{RecvError, TryRecvError};
use crate::op::{Op, Wrap};
use std::fmt;
use std::time::Duration;

/// The reply slot a request carries: the actor answers with
/// [`send`](Reply::send), once. Dropping it unanswered tells the caller
/// ([`CallError::NoReply`]).
///
/// ```
/// use fibra::Reply;
///
/// enum Msg {
///     Get(Reply<u64>),
/// }
///
/// let (addr, mut mb) = fibra::mailbox::<Msg>();
/// let mut call = addr.request(Msg::Get).unwrap();
/// let Ok(Msg::Get(reply)) = mb.try_recv() else { unreachable!() };
/// reply.send(42).unwrap();
/// assert_eq!(call.try_reply(), Some(Ok(42)));
/// ```
pub struct Reply<T> {
    tx: Sender<T>,
}

impl<T> Reply<T> {
    /// Answers the request; never blocks. Hands the value back if the
    /// caller has stopped waiting (its [`Call`] was dropped, after a
    /// timeout for instance).
    ///
    /// ```
    /// # fibra::run(async {
    /// let (addr, mut mb) = fibra::mailbox::<fibra::Reply<u8>>();
    /// let call = addr.request(|reply| reply).unwrap();
    /// mb.recv().await.unwrap().send(1).unwrap();
    /// assert_eq!(call.reply().await, Ok(1));
    /// # });
    /// ```
    pub fn send(self, value: T) -> Result<(), T> {
        self.tx.send(value)
    }

    /// Whether the caller has stopped waiting (a reply would be handed back).
    ///
    /// ```
    /// let (addr, mut mb) = fibra::mailbox::<fibra::Reply<u8>>();
    /// let call = addr.request(|reply| reply).unwrap();
    /// let reply = mb.try_recv().unwrap();
    /// assert!(!reply.is_abandoned());
    /// drop(call);
    /// assert!(reply.is_abandoned());
    /// ```
    pub fn is_abandoned(&self) -> bool {
        self.tx.is_closed()
    }
}

impl<T> fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply").finish_non_exhaustive()
    }
}

/// A request sent and not yet answered: wait for its reply with
/// [`reply`](Call::reply), [`reply_timeout`](Call::reply_timeout), or in a
/// choice with [`reply_op`](Call::reply_op).
///
/// ```
/// # fibra::run(async {
/// let (addr, mut mb) = fibra::mailbox::<fibra::Reply<u8>>();
/// let call: fibra::Call<u8> = addr.request(|reply| reply).unwrap();
/// mb.recv().await.unwrap().send(9).unwrap();
/// assert_eq!(call.reply().await, Ok(9));
/// # });
/// ```
pub struct Call<T> {
    rx: Receiver<T>,
}

/// Why a call got no reply.
///
/// ```
/// use fibra::CallError;
///
/// let (addr, mb) = fibra::mailbox::<fibra::Reply<u8>>();
/// drop(mb); // closed
/// assert_eq!(addr.request(|reply| reply).unwrap_err(), CallError::NotDelivered);
/// assert_eq!(CallError::Timeout.to_string(), "no reply in time");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError {
    /// The request was not delivered: the mailbox is closed (the actor
    /// ended), or bounded and full.
    NotDelivered,
    /// The actor dropped the reply slot without answering: it ended (or
    /// died) before replying, or discarded the request.
    NoReply,
    /// No reply came in time.
    Timeout,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallError::NotDelivered => "the request was not delivered (mailbox closed or full)",
            CallError::NoReply => "the actor dropped the request without replying",
            CallError::Timeout => "no reply in time",
        })
    }
}

impl std::error::Error for CallError {}

/// The op of receiving a call's reply: [`Call::reply_op`].
///
/// ```
/// use fibra::{CallError, Op, always, choose_biased};
///
/// let (addr, _mb) = fibra::mailbox::<fibra::Reply<u8>>();
/// let mut call = addr.request(|reply| reply).unwrap();
/// let op: fibra::ReplyOp<'_, u8> = call.reply_op();
/// assert_eq!(choose_biased((op, always(Err(CallError::Timeout)))).perform(), Err(CallError::Timeout));
/// ```
pub type ReplyOp<'a, T> = Wrap<RecvOp<'a, T>, fn(Result<T, RecvError>) -> Result<T, CallError>>;

fn no_reply<T>(r: Result<T, RecvError>) -> Result<T, CallError> {
    r.map_err(|_| CallError::NoReply)
}

impl<T> Call<T> {
    /// The op of receiving the reply: `Err(CallError::NoReply)` if the
    /// actor dropped the slot unanswered. Composes with anything in a
    /// choice — a death, a timeout, other calls; a reply op that loses a
    /// choice leaves the reply for the next one.
    ///
    /// ```
    /// use fibra::{CallError, Exit, select, time::after};
    /// use std::time::Duration;
    ///
    /// fibra::run(async {
    ///     let worker = fibra::spawn_actor(|mut mb| async move {
    ///         let _req: fibra::Reply<u32> = mb.recv().await.unwrap();
    ///         panic!("no answer for you");
    ///     });
    ///     let mut call = worker.request(|reply| reply).unwrap();
    ///     select! {
    ///         r = call.reply_op() => assert_eq!(r, Err(CallError::NoReply)),
    ///         () = after(Duration::from_secs(5)) => panic!("the death must end the wait"),
    ///     }
    ///     assert!(matches!(worker.exited().await, Exit::Panicked(_)));
    /// });
    /// ```
    pub fn reply_op(&mut self) -> ReplyOp<'_, T> {
        self.rx.recv_op().wrap(no_reply)
    }

    /// Waits for the reply.
    ///
    /// ```
    /// # fibra::run(async {
    /// let (addr, mut mb) = fibra::mailbox::<fibra::Reply<&str>>();
    /// let call = addr.request(|reply| reply).unwrap();
    /// mb.recv().await.unwrap().send("pong").unwrap();
    /// assert_eq!(call.reply().await, Ok("pong"));
    /// # });
    /// ```
    pub async fn reply(mut self) -> Result<T, CallError> {
        self.reply_op().await
    }

    /// Waits at most `timeout` for the reply.
    ///
    /// ```
    /// use fibra::CallError;
    /// use std::time::Duration;
    ///
    /// # fibra::run(async {
    /// let (addr, _mb) = fibra::mailbox::<fibra::Reply<()>>(); // nobody answers
    /// let call = addr.request(|reply| reply).unwrap();
    /// let t = Duration::from_millis(5);
    /// assert_eq!(call.reply_timeout(t).await, Err(CallError::Timeout));
    /// # });
    /// ```
    pub async fn reply_timeout(mut self, timeout: Duration) -> Result<T, CallError> {
        match crate::time::timeout(self.reply_op(), timeout).await {
            Ok(r) => r,
            Err(_) => Err(CallError::Timeout),
        }
    }

    /// The reply, if it came.
    ///
    /// ```
    /// use fibra::CallError;
    ///
    /// let (addr, mut mb) = fibra::mailbox::<fibra::Reply<u8>>();
    /// let mut call = addr.request(|reply| reply).unwrap();
    /// assert_eq!(call.try_reply(), None);
    /// drop(mb.try_recv().unwrap()); // dropped unanswered
    /// assert_eq!(call.try_reply(), Some(Err(CallError::NoReply)));
    /// ```
    pub fn try_reply(&mut self) -> Option<Result<T, CallError>> {
        match self.rx.try_recv() {
            Ok(v) => Some(Ok(v)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(CallError::NoReply)),
        }
    }
}

impl<T> fmt::Debug for Call<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call").finish_non_exhaustive()
    }
}

impl<M> Addr<M> {
    /// Sends a request: `make` builds the message around a fresh reply slot
    /// ([`Reply`]); the returned [`Call`] waits for the answer (also as an
    /// op, [`Call::reply_op`]).
    ///
    /// # Errors
    ///
    /// [`CallError::NotDelivered`] if the mailbox is closed or full; the
    /// message is dropped.
    ///
    /// ```
    /// use fibra::Reply;
    ///
    /// enum Msg {
    ///     Add(u64),
    ///     Get(Reply<u64>),
    /// }
    ///
    /// fibra::run(async {
    ///     let counter = fibra::spawn_actor(|mut mb| async move {
    ///         let mut total = 0;
    ///         while let Some(msg) = mb.recv().await {
    ///             match msg {
    ///                 Msg::Add(n) => total += n,
    ///                 Msg::Get(reply) => { let _ = reply.send(total); }
    ///             }
    ///         }
    ///     });
    ///     counter.send(Msg::Add(5)).unwrap();
    ///     let call = counter.request(Msg::Get).unwrap();
    ///     assert_eq!(call.reply().await, Ok(5));
    /// });
    /// ```
    pub fn request<T>(&self, make: impl FnOnce(Reply<T>) -> M) -> Result<Call<T>, CallError> {
        let (tx, rx) = oneshot::channel();
        match self.send(make(Reply { tx })) {
            Ok(()) => Ok(Call { rx }),
            Err(_) => Err(CallError::NotDelivered),
        }
    }

    /// Sends a request and waits at most `timeout` for its reply (Erlang's
    /// `gen_server:call`): [`request`](Self::request), then
    /// [`Call::reply_timeout`].
    ///
    /// ```
    /// use fibra::{CallError, Reply};
    /// use std::time::Duration;
    ///
    /// fibra::run(async {
    ///     let doubler = fibra::spawn_actor(|mut mb: fibra::Mailbox<(u32, Reply<u32>)>| async move {
    ///         while let Some((n, reply)) = mb.recv().await {
    ///             let _ = reply.send(2 * n);
    ///         }
    ///     });
    ///     let t = Duration::from_secs(5);
    ///     assert_eq!(doubler.call(|r| (21, r), t).await, Ok(42));
    ///     doubler.kill();
    ///     doubler.exited().await;
    ///     assert_eq!(doubler.call(|r| (1, r), t).await, Err(CallError::NotDelivered));
    /// });
    /// ```
    pub async fn call<T>(
        &self,
        make: impl FnOnce(Reply<T>) -> M,
        timeout: Duration,
    ) -> Result<T, CallError> {
        self.request(make)?.reply_timeout(timeout).await
    }
}
