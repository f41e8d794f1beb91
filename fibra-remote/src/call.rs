//! Request and reply: [`RemoteAddr::call_op`] and [`ReplyTo`].
//!
//! A call is Erlang's `gen_server:call`: send a message that carries a
//! reply address, then wait for the reply, the timeout or the actor's
//! monitor, whichever comes first. The reply address names this node, a
//! reply box (a fibra mailbox owned by the calling `RemoteAddr` handle) and
//! a call number; the node's service task routes replies into the box, and
//! the call's op takes the one with its number (a selective receive).
//! Replies to calls that timed out are discarded by the next call.

use crate::error::{CallError, ReplyError};
use crate::node::{Node, NodeInner, Outgoing};
use crate::out_queue::PushError;
use crate::remote_addr::RemoteAddr;
use crate::wire::{self, Kind};
use async_nats::Subject;
use bytes::Bytes;
use fibra::{BoxOp, Op, always, choose_biased, guard};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A calling handle's reply mailbox.
pub(crate) struct ReplyBox {
    id: u64,
    node: Weak<NodeInner>,
    mailbox: fibra::Mailbox<(u64, Bytes)>,
    last_call: u64,
}

impl ReplyBox {
    fn new(node: &Node) -> Self {
        let inner = node.inner();
        let id = inner.next_id();
        let (addr, mailbox) = fibra::mailbox();
        inner.reply_boxes.lock().unwrap().insert(id, addr);
        Self {
            id,
            node: Arc::downgrade(inner),
            mailbox,
            last_call: 0,
        }
    }
}

impl Drop for ReplyBox {
    fn drop(&mut self) {
        if let Some(inner) = self.node.upgrade() {
            inner.reply_boxes.lock().unwrap().remove(&self.id);
        }
    }
}

impl<M: Serialize + Send> RemoteAddr<M> {
    /// The op of a call: builds the request with `make` (given the
    /// [`ReplyTo`] the actor answers through) and sends it when the op is
    /// performed, then yields the reply, or [`CallError::Timeout`] after
    /// `timeout`, or [`CallError::Down`] if the actor's monitor fires
    /// first. Takes `&mut self`: one call at a time per handle (clone the
    /// address for concurrent calls).
    ///
    /// ```no_run
    /// use fibra_remote::ReplyTo;
    /// use serde::{Deserialize, Serialize};
    /// use std::time::Duration;
    ///
    /// #[derive(Serialize, Deserialize)]
    /// enum Msg {
    ///     Get(String, ReplyTo<Option<String>>),
    /// }
    ///
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let mut kv = node.lookup::<Msg>("kv").await.unwrap();
    /// let got = kv
    ///     .call_op(|reply| Msg::Get("k".into(), reply), Duration::from_secs(1))
    ///     .await;
    /// println!("{got:?}");
    /// # });
    /// ```
    pub fn call_op<'a, R, F>(
        &'a mut self,
        make: F,
        timeout: Duration,
    ) -> BoxOp<'a, Result<R, CallError>>
    where
        R: DeserializeOwned + Send + 'static,
        F: FnOnce(ReplyTo<R>) -> M + Send + 'a,
    {
        let RemoteAddr { route, replies, .. } = self;
        let route = &*route;
        // `guard` takes an `FnMut`; the op is performed once (a perform
        // consumes it), so these are taken once.
        let mut once = Some((replies, make));
        guard(move || -> BoxOp<'a, Result<R, CallError>> {
            let Some((replies, make)) = once.take() else {
                return always(Err(CallError::Send("a call op performed twice".into()))).boxed();
            };
            let rbox = replies.get_or_insert_with(|| ReplyBox::new(&route.node));
            rbox.last_call += 1;
            let call = rbox.last_call;
            // Late replies to earlier calls.
            while rbox.mailbox.try_recv_matching(|(c, _)| *c < call).is_some() {}
            let reply_to = ReplyTo {
                node: route.node.id(),
                rbox: rbox.id,
                call,
                via: None,
                _r: PhantomData,
            };
            if let Err(e) = route.send(make(reply_to)) {
                return always(Err(CallError::Send(e.to_string()))).boxed();
            }
            choose_biased((
                rbox.mailbox
                    .recv_matching_op(move |(c, _)| *c == call)
                    .wrap(|got| match got {
                        Some((_, body)) => postcard::from_bytes::<R>(&body)
                            .map_err(|e| CallError::Decode(e.to_string())),
                        None => Err(CallError::Send("the node is closed".into())),
                    }),
                route.down.get_op().wrap(|why| Err(CallError::Down(why))),
                fibra::time::after(timeout).wrap(|_| Err(CallError::Timeout)),
            ))
            .boxed()
        })
        .boxed()
    }

    /// Calls and waits: [`call_op`](Self::call_op), performed.
    ///
    /// ```no_run
    /// use fibra_remote::{CallError, ReplyTo};
    /// use serde::{Deserialize, Serialize};
    /// use std::time::Duration;
    ///
    /// #[derive(Serialize, Deserialize)]
    /// enum Msg {
    ///     Get(String, ReplyTo<Option<String>>),
    /// }
    ///
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let mut kv = node.lookup::<Msg>("kv").await.unwrap();
    /// let got: Result<Option<String>, CallError> =
    ///     kv.call(|reply| Msg::Get("k".into(), reply), Duration::from_secs(1)).await;
    /// println!("{got:?}");
    /// # });
    /// ```
    pub async fn call<R, F>(&mut self, make: F, timeout: Duration) -> Result<R, CallError>
    where
        R: DeserializeOwned + Send + 'static,
        F: FnOnce(ReplyTo<R>) -> M + Send,
    {
        self.call_op(make, timeout).await
    }
}

/// Where an actor sends the reply to a [`call`](RemoteAddr::call_op): put
/// one in the request message, and the actor answers with
/// [`send`](Self::send) (Erlang's `From` and `gen_server:reply`).
///
/// Serializes as three integers; a `ReplyTo` received through a node
/// replies through that node.
///
/// ```no_run
/// use fibra_remote::ReplyTo;
/// use serde::{Deserialize, Serialize};
/// use std::time::Duration;
///
/// #[derive(Serialize, Deserialize)]
/// struct Ask(u64, ReplyTo<u64>);
///
/// # fibra::block_on(async {
/// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
/// // The actor side: answer each request through the `ReplyTo` it carries.
/// let actor = fibra::spawn_actor(|mut mb: fibra::Mailbox<Ask>| async move {
///     while let Some(Ask(n, reply)) = mb.recv().await {
///         let _ = reply.send(n * 2);
///     }
/// });
/// node.register("doubler", actor).await.unwrap();
/// // The caller side: `call` makes the `ReplyTo` and waits for the reply.
/// let mut doubler = node.lookup::<Ask>("doubler").await.unwrap();
/// assert_eq!(doubler.call(|r| Ask(21, r), Duration::from_secs(1)).await, Ok(42));
/// # });
/// ```
pub struct ReplyTo<R> {
    node: u64,
    rbox: u64,
    call: u64,
    /// The node that received it (set while the bridge deserializes).
    via: Option<Weak<NodeInner>>,
    _r: PhantomData<fn(R)>,
}

impl<R: Serialize> ReplyTo<R> {
    /// Sends the reply (never blocks). Fails if there is no node to send
    /// through, its outgoing queue is full, or the reply cannot be encoded
    /// or is too large; a reply to
    /// a caller that has gone is dropped at the caller's node (counted
    /// there as undeliverable).
    ///
    /// ```no_run
    /// use fibra_remote::ReplyTo;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Ping(ReplyTo<String>);
    ///
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let actor = fibra::spawn_actor(|mut mb: fibra::Mailbox<Ping>| async move {
    ///     while let Some(Ping(reply)) = mb.recv().await {
    ///         if let Err(e) = reply.send("pong".to_string()) {
    ///             eprintln!("reply not sent: {e}");
    ///         }
    ///     }
    /// });
    /// node.register("pinger", actor).await.unwrap();
    /// # });
    /// ```
    pub fn send(self, value: R) -> Result<(), ReplyError> {
        let inner = self
            .via
            .as_ref()
            .and_then(Weak::upgrade)
            .ok_or(ReplyError::NoNode)?;
        let buf = wire::encode(Kind::Reply, self.rbox, self.call, &value)
            .map_err(|e| ReplyError::Encode(e.to_string()))?;
        if buf.len() > inner.max_payload {
            return Err(ReplyError::Encode(format!(
                "{} bytes, the server takes at most {}",
                buf.len(),
                inner.max_payload
            )));
        }
        let subject = Subject::from(inner.node_subject(self.node, "r"));
        match inner.push(Outgoing::Raw { subject, buf }) {
            Ok(()) => Ok(()),
            Err(PushError::Full) => Err(ReplyError::Full),
            Err(PushError::Closed) => Err(ReplyError::NoNode),
        }
    }
}

impl<R> fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReplyTo({:016x}/{}/{})", self.node, self.rbox, self.call)
    }
}

impl<R> Serialize for ReplyTo<R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.node, self.rbox, self.call).serialize(s)
    }
}

impl<'de, R> Deserialize<'de> for ReplyTo<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (node, rbox, call) = <(u64, u64, u64)>::deserialize(d)?;
        Ok(ReplyTo {
            node,
            rbox,
            call,
            via: DECODING.with(|n| n.borrow().clone()),
            _r: PhantomData,
        })
    }
}

thread_local! {
    /// The node whose bridge is deserializing a message on this thread.
    static DECODING: RefCell<Option<Weak<NodeInner>>> = const { RefCell::new(None) };
}

/// Runs `f` (a deserialization) with `inner` as the node that `ReplyTo`s
/// reply through.
pub(crate) fn decoding<T>(inner: &Arc<NodeInner>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Weak<NodeInner>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            DECODING.with(|n| *n.borrow_mut() = prev);
        }
    }
    let prev = DECODING.with(|n| n.borrow_mut().replace(Arc::downgrade(inner)));
    let _restore = Restore(prev);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_to_is_three_integers_and_needs_a_node() {
        let r: ReplyTo<u8> = ReplyTo {
            node: 1,
            rbox: 2,
            call: 300,
            via: None,
            _r: PhantomData,
        };
        let bytes = postcard::to_stdvec(&r).unwrap();
        assert_eq!(bytes, [1, 2, 0xac, 0x02]); // varints
        // Decoded outside a node's bridge: nothing to reply through.
        let back: ReplyTo<u8> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(format!("{back:?}"), "ReplyTo(0000000000000001/2/300)");
        assert_eq!(back.send(5), Err(ReplyError::NoNode));
    }
}
