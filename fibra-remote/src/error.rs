//! Errors, and [`Down`]: why a remote actor's monitor fired.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a monitored remote actor is gone: what
/// [`RemoteAddr::exited_op`](crate::RemoteAddr::exited_op) yields (Erlang's
/// `'DOWN'` reason).
///
/// ```no_run
/// use fibra_remote::Down;
///
/// # fibra::block_on(async {
/// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
/// let addr = node.lookup::<u32>("worker").await.unwrap();
/// match addr.exited().await {
///     Down::Normal => println!("worker finished"),
///     Down::NodeUnreachable => println!("lost contact with the worker's node"),
///     other => println!("worker gone: {other}"),
/// }
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Down {
    /// The actor's task returned.
    Normal,
    /// The actor's task panicked, with the panic's message.
    Panicked(String),
    /// The actor's task was dropped unfinished (its runtime shut down).
    Cancelled,
    /// The actor's mailbox (not tied to a task) was closed or dropped.
    Closed,
    /// A liveness check found the actor gone (Erlang's `noproc`): at
    /// lookup, or after a gap in its node's heartbeats during which its
    /// exit notice may have been lost (so how it ended is unknown).
    NoActor,
    /// Its node shut down cleanly ([`Node::close`](crate::Node::close)).
    NodeStopped,
    /// No heartbeat from its node for the node-down timeout: the node's
    /// process died, or the network (or this node's own link to NATS) is
    /// broken. The actor may still be alive.
    NodeUnreachable,
}

impl From<fibra::Exit> for Down {
    fn from(e: fibra::Exit) -> Down {
        match e {
            fibra::Exit::Normal => Down::Normal,
            fibra::Exit::Panicked(m) => Down::Panicked(m),
            fibra::Exit::Cancelled => Down::Cancelled,
            _ => Down::Closed,
        }
    }
}

impl fmt::Display for Down {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Down::Normal => f.write_str("the remote actor ended"),
            Down::Panicked(m) => write!(f, "the remote actor panicked: {m}"),
            Down::Cancelled => f.write_str("the remote actor was cancelled"),
            Down::Closed => f.write_str("the remote mailbox was closed"),
            Down::NoActor => f.write_str("the remote actor was not alive"),
            Down::NodeStopped => f.write_str("the remote node stopped"),
            Down::NodeUnreachable => f.write_str("the remote node is unreachable"),
        }
    }
}

/// Why [`RemoteAddr::send`](crate::RemoteAddr::send) refused a message; every
/// variant hands the message back ([`into_inner`](Self::into_inner)).
///
/// These are the errors a sender can know locally. A message that was sent
/// may still be lost (at most once delivery): see the crate docs.
///
/// ```
/// use fibra_remote::{Down, SendError};
///
/// let err = SendError::Down(7u32, Down::NodeStopped);
/// assert!(!err.to_string().is_empty());
/// assert_eq!(err.into_inner(), 7); // every variant hands the message back
/// ```
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError<M> {
    /// The actor's monitor fired: it ended, or its node is unreachable.
    Down(M, Down),
    /// This node was closed.
    NodeClosed(M),
    /// This node's outgoing queue is full (see
    /// [`NodeOptions::outgoing_capacity`](crate::NodeOptions::outgoing_capacity)):
    /// the node sends faster than its connection drains, or NATS is
    /// unreachable. Nothing was queued; try again later, or drop it.
    Full(M),
    /// The encoded message is larger than the NATS server accepts.
    TooLarge {
        /// The message.
        msg: M,
        /// Its encoded size in bytes, header included.
        size: usize,
        /// The server's `max_payload`.
        max: usize,
    },
    /// The message could not be serialized.
    Encode(M, String),
}

impl<M> SendError<M> {
    /// The message that was not sent.
    ///
    /// ```
    /// use fibra_remote::SendError;
    ///
    /// let err = SendError::NodeClosed("hello");
    /// assert_eq!(err.into_inner(), "hello");
    /// ```
    pub fn into_inner(self) -> M {
        match self {
            SendError::Down(m, _)
            | SendError::NodeClosed(m)
            | SendError::Full(m)
            | SendError::TooLarge { msg: m, .. }
            | SendError::Encode(m, _) => m,
        }
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Down(_, why) => write!(f, "not sent: {why}"),
            SendError::NodeClosed(_) => f.write_str("not sent: the node is closed"),
            SendError::Full(_) => f.write_str("not sent: the node's outgoing queue is full"),
            SendError::TooLarge { size, max, .. } => write!(
                f,
                "not sent: the message is {size} bytes, the NATS server takes at most {max}"
            ),
            SendError::Encode(_, e) => write!(f, "not sent: cannot serialize the message: {e}"),
        }
    }
}

impl<M: fmt::Debug> std::error::Error for SendError<M> {}

/// Why [`Node::register`](crate::Node::register) failed.
///
/// ```no_run
/// use fibra_remote::RegisterError;
///
/// # fibra::block_on(async {
/// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
/// let a = fibra::spawn_actor(|mut mb: fibra::Mailbox<u8>| async move { mb.recv().await; });
/// let b = fibra::spawn_actor(|mut mb: fibra::Mailbox<u8>| async move { mb.recv().await; });
/// node.register("unique", a).await.unwrap();
/// match node.register("unique", b).await {
///     Err(RegisterError::NameTaken { name, .. }) => assert_eq!(name, "unique"),
///     other => panic!("{other:?}"),
/// }
/// assert!(matches!(
///     node.register("no spaces", fibra::mailbox::<u8>().0).await,
///     Err(RegisterError::InvalidName(_))
/// ));
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// The name is already registered, on this node or another one (whose
    /// id is given when known).
    NameTaken {
        /// The name.
        name: String,
        /// The id of the node that holds it.
        node: u64,
    },
    /// Not a usable name: empty, or containing `.`, `*`, `>` or whitespace.
    InvalidName(String),
    /// The actor's mailbox is already closed.
    ActorEnded,
    /// NATS refused or failed (the message says what).
    Nats(String),
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::NameTaken { name, node } => {
                write!(
                    f,
                    "the name {name:?} is already registered (node {node:016x})"
                )
            }
            RegisterError::InvalidName(n) => write!(
                f,
                "{n:?} is not a valid name (empty, or contains '.', '*', '>' or whitespace)"
            ),
            RegisterError::ActorEnded => f.write_str("the actor has already ended"),
            RegisterError::Nats(e) => write!(f, "NATS: {e}"),
        }
    }
}

impl std::error::Error for RegisterError {}

/// Why [`Node::lookup`](crate::Node::lookup) failed.
///
/// ```no_run
/// use fibra_remote::LookupError;
///
/// # fibra::block_on(async {
/// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
/// match node.lookup::<u8>("nobody").await {
///     Err(LookupError::NotFound(name)) => assert_eq!(name, "nobody"),
///     other => panic!("{:?}", other.map(|_| ())),
/// }
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LookupError {
    /// No node answers for this name.
    NotFound(String),
    /// An answer came but could not be read.
    BadReply(String),
    /// NATS failed, or no answer came in time (the message says which).
    Nats(String),
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::NotFound(n) => write!(f, "no actor is registered as {n:?}"),
            LookupError::BadReply(e) => write!(f, "unreadable lookup reply: {e}"),
            LookupError::Nats(e) => write!(f, "NATS: {e}"),
        }
    }
}

impl std::error::Error for LookupError {}

/// Why a [`call`](crate::RemoteAddr::call_op) got no reply.
///
/// ```no_run
/// use fibra_remote::{CallError, ReplyTo};
/// use serde::{Deserialize, Serialize};
/// use std::time::Duration;
///
/// #[derive(Serialize, Deserialize)]
/// struct Msg(ReplyTo<()>);
///
/// # fibra::block_on(async {
/// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
/// let mut addr = node.lookup::<Msg>("slow").await.unwrap();
/// match addr.call(Msg, Duration::from_millis(10)).await {
///     Ok(()) => println!("answered"),
///     Err(CallError::Timeout) => println!("no answer in 10 ms"),
///     Err(e) => println!("failed: {e}"),
/// }
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError {
    /// No reply within the timeout.
    Timeout,
    /// The actor's monitor fired before the reply came.
    Down(Down),
    /// The request could not be sent (the message says why).
    Send(String),
    /// The reply came but could not be deserialized.
    Decode(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout => f.write_str("no reply in time"),
            CallError::Down(d) => write!(f, "no reply: {d}"),
            CallError::Send(e) => write!(f, "request {e}"),
            CallError::Decode(e) => write!(f, "unreadable reply: {e}"),
        }
    }
}

impl std::error::Error for CallError {}

/// Why a [`ReplyTo::send`](crate::ReplyTo::send) failed.
///
/// ```
/// use fibra_remote::ReplyError;
///
/// let err = ReplyError::NoNode; // the `ReplyTo` did not come through a node
/// assert!(!err.to_string().is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyError {
    /// This `ReplyTo` was not received through a node (or its node is
    /// closed): there is no connection to reply through.
    NoNode,
    /// The node's outgoing queue is full (see
    /// [`NodeOptions::outgoing_capacity`](crate::NodeOptions::outgoing_capacity)).
    Full,
    /// The reply could not be serialized, or is larger than the server
    /// takes.
    Encode(String),
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::NoNode => f.write_str("no open node to reply through"),
            ReplyError::Full => f.write_str("the node's outgoing queue is full"),
            ReplyError::Encode(e) => write!(f, "cannot send the reply: {e}"),
        }
    }
}

impl std::error::Error for ReplyError {}

/// Why [`Node::connect`](crate::Node::connect) failed.
///
/// ```
/// // No NATS server listens on port 1.
/// fibra::block_on(async {
///     let err = fibra_remote::Node::connect("nats://127.0.0.1:1").await.err().unwrap();
///     assert!(err.to_string().starts_with("cannot connect to NATS"));
/// });
/// ```
#[derive(Debug)]
pub struct ConnectError(pub(crate) String);

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot connect to NATS: {}", self.0)
    }
}

impl std::error::Error for ConnectError {}
