//! [`RemoteAddr`]: an [`Addr`](fibra::Addr) whose mailbox is on another
//! node.

use crate::call::ReplyBox;
use crate::error::{Down, SendError};
use crate::node::{Node, Outgoing, Target};
use crate::out_queue::PushError;
use crate::wire::{self, Kind};
use fibra::{BoxOp, IVar, Op, always};
use serde::Serialize;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

/// The address of an actor on another node (or on this one, through
/// NATS), made by [`Node::lookup`]. Behaves like [`fibra::Addr`]: `send`
/// never blocks and hands the message back on every error it can know
/// locally; [`exited_op`](Self::exited_op) is a monitor.
///
/// Clonable and `Send`. Two addresses are equal when they name the same
/// remote actor. It keeps its [`Node`] open.
///
/// ```no_run
/// use fibra_remote::RemoteAddr;
///
/// # fibra::block_on(async {
/// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
/// let counter: RemoteAddr<u64> = node.lookup("counter").await.unwrap();
/// counter.send(1).unwrap(); // never blocks
/// let clone = counter.clone();
/// clone.send(2).unwrap();
/// # });
/// ```
pub struct RemoteAddr<M> {
    pub(crate) route: Route,
    /// This handle's reply mailbox, made by its first call.
    pub(crate) replies: Option<ReplyBox>,
    _msg: PhantomData<fn(M)>,
}

/// Where a remote actor's messages go, and whether it is known to be down.
pub(crate) struct Route {
    pub(crate) node: Node,
    pub(crate) remote_node: u64,
    pub(crate) actor: u64,
    target: Arc<Target>,
    pub(crate) down: Arc<IVar<Down>>,
}

impl Route {
    /// Encodes and queues `msg` (see [`RemoteAddr::send`]).
    pub(crate) fn send<M: Serialize>(&self, msg: M) -> Result<(), SendError<M>> {
        if let Some(why) = self.down.try_get() {
            return Err(SendError::Down(msg, why));
        }
        let inner = self.node.inner();
        // The sequence number (field b) is stamped by the publisher.
        let buf = match wire::encode(Kind::Cast, inner.id, 0, &msg) {
            Ok(buf) => buf,
            Err(e) => return Err(SendError::Encode(msg, e.to_string())),
        };
        if buf.len() > inner.max_payload {
            return Err(SendError::TooLarge {
                msg,
                size: buf.len(),
                max: inner.max_payload,
            });
        }
        let target = self.target.clone();
        match inner.push(Outgoing::Cast { target, buf }) {
            Ok(()) => Ok(()),
            Err(PushError::Full) => Err(SendError::Full(msg)),
            Err(PushError::Closed) => Err(SendError::NodeClosed(msg)),
        }
    }
}

impl<M> RemoteAddr<M> {
    pub(crate) fn new(node: Node, remote_node: u64, actor: u64, down: Arc<IVar<Down>>) -> Self {
        let target = node.inner().target(remote_node, actor);
        Self {
            route: Route {
                node,
                remote_node,
                actor,
                target,
                down,
            },
            replies: None,
            _msg: PhantomData,
        }
    }

    /// Sends `msg` without blocking: it is encoded here (postcard) and
    /// queued for the node's publisher.
    ///
    /// Fails, handing the message back, when the actor's monitor has fired
    /// ([`SendError::Down`]), the node's outgoing queue is full
    /// ([`SendError::Full`], see
    /// [`NodeOptions::outgoing_capacity`](crate::NodeOptions::outgoing_capacity)),
    /// the node is closed, the encoded message is
    /// larger than the server's `max_payload` ([`SendError::TooLarge`]) or
    /// it cannot be serialized. `Ok` means queued: delivery is at most once
    /// (a message in flight when the actor's process dies, or while the
    /// connection is broken, may be lost — counted by the receiver as a
    /// gap if a later message from this node arrives).
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let counter = node.lookup::<u64>("counter").await.unwrap();
    /// if let Err(e) = counter.send(5) {
    ///     eprintln!("{e}");
    ///     let _five = e.into_inner(); // the message, back
    /// }
    /// # });
    /// ```
    pub fn send(&self, msg: M) -> Result<(), SendError<M>>
    where
        M: Serialize,
    {
        self.route.send(msg)
    }

    /// The op of sending `msg`: commits at once (a remote send never waits
    /// for room), and only then sends — a send op that loses a choice sends
    /// nothing. Yields what [`send`](Self::send) returns.
    ///
    /// ```no_run
    /// use fibra::{Op, choose};
    ///
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let a = node.lookup::<u32>("a").await.unwrap();
    /// let b = node.lookup::<u32>("b").await.unwrap();
    /// // Send to whichever branch the choice picks; exactly one gets it.
    /// choose((a.send_op(1), b.send_op(1))).await.unwrap();
    /// # });
    /// ```
    pub fn send_op(&self, msg: M) -> BoxOp<'_, Result<(), SendError<M>>>
    where
        M: Serialize + Send,
    {
        let route = &self.route;
        always(msg).wrap(move |msg| route.send(msg)).boxed()
    }

    /// The op that becomes ready when the actor ends or its node is
    /// declared down (Erlang's monitor), yielding why. Detection: an
    /// actor's end is seen as soon as its node's exit notice arrives; a
    /// node's death within the heartbeat timeout plus one heartbeat
    /// interval (1.25 s by default, see [`NodeOptions::heartbeat`](crate::NodeOptions::heartbeat)).
    ///
    /// ```no_run
    /// use fibra::select;
    ///
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let worker = node.lookup::<u32>("worker").await.unwrap();
    /// let (_tx, rx) = fibra::channel::<u32>();
    /// select! {
    ///     down = worker.exited_op() => println!("worker gone: {down}"),
    ///     job = rx.recv_op() => println!("job {job:?}"),
    /// }
    /// # });
    /// ```
    pub fn exited_op(&self) -> fibra::GetOp<'_, Down> {
        self.route.down.get_op()
    }

    /// Waits until the actor's monitor fires; see [`exited_op`](Self::exited_op).
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let worker = node.lookup::<u32>("worker").await.unwrap();
    /// let down = worker.exited().await;
    /// println!("worker gone: {down}");
    /// # });
    /// ```
    pub async fn exited(&self) -> Down {
        self.exited_op().await
    }

    /// Why the actor is gone, if its monitor fired.
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let worker = node.lookup::<u32>("worker").await.unwrap();
    /// if let Some(down) = worker.try_exited() {
    ///     println!("already gone: {down}");
    /// }
    /// # });
    /// ```
    pub fn try_exited(&self) -> Option<Down> {
        self.route.down.try_get()
    }

    /// The id of the node that hosts the actor.
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let worker = node.lookup::<u32>("worker").await.unwrap();
    /// println!("hosted by node {:016x}", worker.node_id());
    /// # });
    /// ```
    pub fn node_id(&self) -> u64 {
        self.route.remote_node
    }

    /// The NATS subject the actor's messages are published to.
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let worker = node.lookup::<u32>("worker").await.unwrap();
    /// println!("messages go to NATS subject {}", worker.subject());
    /// # });
    /// ```
    pub fn subject(&self) -> &str {
        self.route.target.subject.as_str()
    }
}

impl<M> Clone for RemoteAddr<M> {
    /// A new handle to the same actor; it shares the monitor and the
    /// sequence numbering, and gets its own reply mailbox on its first call.
    fn clone(&self) -> Self {
        Self {
            route: Route {
                node: self.route.node.clone(),
                remote_node: self.route.remote_node,
                actor: self.route.actor,
                target: self.route.target.clone(),
                down: self.route.down.clone(),
            },
            replies: None,
            _msg: PhantomData,
        }
    }
}

impl<M> PartialEq for RemoteAddr<M> {
    fn eq(&self, other: &Self) -> bool {
        (self.route.remote_node, self.route.actor) == (other.route.remote_node, other.route.actor)
    }
}

impl<M> Eq for RemoteAddr<M> {}

impl<M> Hash for RemoteAddr<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.route.remote_node, self.route.actor).hash(state);
    }
}

impl<M> fmt::Debug for RemoteAddr<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RemoteAddr({:016x}/{})",
            self.route.remote_node, self.route.actor
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_and_sync<T: Send + Sync>() {}

    #[test]
    fn handles_cross_threads() {
        send_and_sync::<RemoteAddr<String>>();
        send_and_sync::<Node>();
        send_and_sync::<crate::ReplyTo<String>>();
    }
}
