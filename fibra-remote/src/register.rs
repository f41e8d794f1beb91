//! Publishing an actor under a name, and the bridge task that feeds remote
//! messages into its ordinary mailbox.
//!
//! Invariants:
//! * A name is held by at most one actor of this node (the registry's
//!   `names`), and is refused if another node answers for it, before the
//!   subscription (a probe) or after it (`rival`: of two racing nodes at
//!   least one sees the other and gives way). Core NATS has no atomic
//!   claim: two holders remain possible only if a rival's answer takes
//!   longer than the claim window (the docs say so).
//! * The bridge task is the only reader of an actor's subscription, so it
//!   sees each sender's messages in NATS order; it delivers a message only
//!   if its sequence number is above the last one delivered from that
//!   sender: never twice, never out of order. A gap is counted as lost.
//! * When the actor ends the bridge unsubscribes (its name stops
//!   answering), removes it from the registry, and then publishes the exit
//!   notice, so a lookup that races the end either finds nothing or sees
//!   the notice (or the liveness query says "not alive").

use crate::error::{Down, RegisterError};
use crate::node::{Node, NodeInner};
use crate::service::bad_input;
use crate::stats::bump;
use crate::wire::{self, Kind};
use async_nats::Subscriber;
use fibra::{Addr, TrySendError};
use futures_util::{FutureExt, StreamExt};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::Arc;

impl Node {
    /// Publishes the actor at `addr` under `name` (Erlang's
    /// `global:register_name`): any node of the cluster can then
    /// [`lookup`](Node::lookup) it, and messages sent to it land in its
    /// ordinary [`Mailbox`](fibra::Mailbox), in order per sender. The name
    /// is released when the actor ends.
    ///
    /// Fails if the name is taken (on this node, or on another that answers
    /// within the request timeout), invalid, or the actor has ended. Of two
    /// nodes racing for one name at most one gets it (sometimes neither:
    /// retry), unless a rival's answer takes longer than the 100 ms claim
    /// window; a registration takes that window longer for it.
    ///
    /// ```no_run
    /// # fibra::run(async {
    /// let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let echo = fibra::spawn_actor(|mut mb| async move {
    ///     while let Some(text) = mb.recv().await {
    ///         let text: String = text;
    ///         println!("{text}");
    ///     }
    /// });
    /// node.register("echo", echo).await.unwrap();
    /// # });
    /// ```
    pub async fn register<M>(&self, name: &str, addr: Addr<M>) -> Result<(), RegisterError>
    where
        M: DeserializeOwned + Send + 'static,
    {
        if name.is_empty()
            || name.contains(|c: char| c.is_whitespace() || c == '.' || c == '*' || c == '>')
        {
            return Err(RegisterError::InvalidName(name.to_string()));
        }
        if addr.is_closed() {
            return Err(RegisterError::ActorEnded);
        }
        let inner = self.inner().clone();
        if inner.closed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(RegisterError::Nats("the node is closed".into()));
        }
        let actor = inner.next_id();
        {
            let mut reg = inner.registry.lock().unwrap();
            if reg.names.contains_key(name) {
                return Err(RegisterError::NameTaken {
                    name: name.to_string(),
                    node: inner.id,
                });
            }
            reg.names.insert(name.to_string(), actor);
        }
        let name = name.to_string();
        let task = inner.clone();
        let done = crate::node::run_on(&inner.handle, async move {
            claim(task, name.clone(), actor, addr).await
        })
        .await;
        let result = done.unwrap_or_else(|| Err(RegisterError::Nats("the node is closed".into())));
        if result.is_err() {
            let mut reg = inner.registry.lock().unwrap();
            reg.names.retain(|_, a| *a != actor);
        }
        result
    }
}

/// Asks the cluster whether `name` is held; subscribes; starts the bridge.
async fn claim<M>(
    inner: Arc<NodeInner>,
    name: String,
    actor: u64,
    addr: Addr<M>,
) -> Result<(), RegisterError>
where
    M: DeserializeOwned + Send + 'static,
{
    let name_subject = inner.name_subject(&name);
    let nats = |e: &dyn std::fmt::Display| RegisterError::Nats(e.to_string());
    let probe = wire::header(Kind::Lookup, 0, 0);
    let request = async_nats::Request::new()
        .payload(probe.into())
        .timeout(Some(inner.request_timeout));
    match inner
        .client
        .send_request(name_subject.clone(), request)
        .await
    {
        Ok(reply) => {
            let node = wire::decode_kind(&reply.payload, Kind::Lookup).map_or(0, |(h, _)| h.a);
            return Err(RegisterError::NameTaken { name, node });
        }
        Err(e) if e.kind() == async_nats::RequestErrorKind::NoResponders => {}
        // Someone listens on the name but did not answer in time: taken.
        Err(e) if e.kind() == async_nats::RequestErrorKind::TimedOut => {
            return Err(RegisterError::NameTaken { name, node: 0 });
        }
        Err(e) => return Err(nats(&e)),
    }
    let msgs = inner
        .client
        .subscribe(inner.actor_subject(inner.id, actor))
        .await
        .map_err(|e| nats(&e))?;
    let who = inner
        .client
        .subscribe(name_subject)
        .await
        .map_err(|e| nats(&e))?;
    inner.registry.lock().unwrap().alive.insert(actor);
    let (withdraw, withdrawn) = tokio::sync::oneshot::channel();
    tokio::spawn(bridge(
        inner.clone(),
        name.clone(),
        actor,
        addr,
        msgs,
        who,
        withdrawn,
    ));
    // The server has both subscriptions before this goes on: a lookup that
    // follows `register` finds the actor. If that fails (the connection
    // broke), the actor is registered all the same: the client subscribes
    // again when it reconnects.
    if let Err(e) = crate::service::sync_with_server(&inner).await {
        tracing::warn!(error = %e, "fibra-remote: registered without confirmation");
    }
    // Another node may have claimed the name between our probe and our
    // subscription: ask again, now that we answer too, and give way if
    // anyone else does.
    if let Some(node) = rival(&inner, &name, actor).await {
        let _ = withdraw.send(());
        return Err(RegisterError::NameTaken { name, node });
    }
    Ok(())
}

/// How long a registration listens for rival holders of its name.
const CLAIM_WINDOW: std::time::Duration = std::time::Duration::from_millis(100);

/// The id of another node that answers for `name` within `CLAIM_WINDOW`.
///
/// Of two nodes that subscribe to a name and then ask, at least one sees
/// the other (the server orders each one's subscription before its
/// question, and the two questions in some order), so at most one of
/// them keeps the name — unless a rival's answer takes longer than the
/// window — and, rarely, both give way.
async fn rival(inner: &NodeInner, name: &str, actor: u64) -> Option<u64> {
    let inbox = inner.client.new_inbox();
    let mut answers = inner.client.subscribe(inbox.clone()).await.ok()?;
    let question = wire::header(Kind::Lookup, 0, 0);
    inner
        .client
        .publish_with_reply(inner.name_subject(name), inbox, question.into())
        .await
        .ok()?;
    let deadline = tokio::time::Instant::now() + CLAIM_WINDOW;
    let found = loop {
        match tokio::time::timeout_at(deadline, answers.next()).await {
            Ok(Some(m)) => match wire::decode_kind(&m.payload, Kind::Lookup) {
                Ok((h, _)) if (h.a, h.b) != (inner.id, actor) => break Some(h.a),
                _ => {}
            },
            _ => break None,
        }
    };
    let _ = answers.unsubscribe().await;
    found
}

/// Messages a bridge delivers in a row before it looks at its actor's exit
/// and at lookups again.
const BATCH: usize = 64;

/// Feeds one registered actor: see the invariants.
async fn bridge<M>(
    inner: Arc<NodeInner>,
    name: String,
    actor: u64,
    addr: Addr<M>,
    mut msgs: Subscriber,
    mut who: Subscriber,
    withdrawn: tokio::sync::oneshot::Receiver<()>,
) where
    M: DeserializeOwned + Send + 'static,
{
    let monitor = addr.monitor();
    let exited = monitor.exited();
    tokio::pin!(exited);
    // Ready only if `claim` withdraws (its sender dropped means no).
    let withdrawn = async move {
        if withdrawn.await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::pin!(withdrawn);
    // The last sequence number delivered, per sender node.
    let mut last: HashMap<u64, u64> = HashMap::new();
    let exit = loop {
        tokio::select! {
            biased;
            exit = &mut exited => break Down::from(exit),
            // A rival holds the name: to whoever looked this registration
            // up, the actor is gone.
            () = &mut withdrawn => break Down::NoActor,
            Some(m) = msgs.next() => {
                deliver(&inner, &addr, &mut last, m).await;
                // Then whatever else is buffered, up to a batch, without
                // polling the other branches for each message.
                for _ in 0..BATCH {
                    match msgs.next().now_or_never() {
                        Some(Some(m)) => deliver(&inner, &addr, &mut last, m).await,
                        _ => break,
                    }
                }
            }
            Some(q) = who.next() => {
                if let Some(reply) = q.reply {
                    let answer = wire::header(Kind::Lookup, inner.id, actor);
                    let _ = inner.client.publish(reply, answer.into()).await;
                }
            }
            else => break Down::Closed,
        }
    };
    // In order on the connection, before the notice (dropping a
    // subscriber would unsubscribe from a spawned task, unordered).
    let _ = who.unsubscribe().await;
    let _ = msgs.unsubscribe().await;
    {
        let mut reg = inner.registry.lock().unwrap();
        reg.alive.remove(&actor);
        if reg.names.get(&name) == Some(&actor) {
            reg.names.remove(&name);
        }
    }
    match wire::encode(Kind::Exit, actor, 0, &exit) {
        Ok(notice) => {
            let subject = inner.node_subject(inner.id, "x");
            let _ = inner.client.publish(subject, notice.into()).await;
        }
        Err(e) => tracing::warn!(error = %e, "fibra-remote: cannot encode an exit notice"),
    }
}

/// One remote message: checked, deduplicated, decoded, delivered.
async fn deliver<M: DeserializeOwned>(
    inner: &Arc<NodeInner>,
    addr: &Addr<M>,
    last: &mut HashMap<u64, u64>,
    m: async_nats::Message,
) {
    let (h, body) = match wire::decode_kind(&m.payload, Kind::Cast) {
        Ok(x) => x,
        Err(e) => return bad_input(inner, &m.subject, &e.to_string()),
    };
    let (sender, seq) = (h.a, h.b);
    let seen = last.entry(sender).or_insert(0);
    if seq <= *seen {
        bump(&inner.counters.duplicates, 1);
        tracing::warn!(subject = %m.subject, sender, seq, "fibra-remote: dropped a duplicate");
        return;
    }
    if seq > *seen + 1 {
        let lost = seq - *seen - 1;
        bump(&inner.counters.lost, lost);
        tracing::warn!(subject = %m.subject, sender, lost, "fibra-remote: messages lost in transit");
    }
    *seen = seq;
    let msg: M = match crate::call::decoding(inner, || postcard::from_bytes(body)) {
        Ok(msg) => msg,
        Err(e) => return bad_input(inner, &m.subject, &e.to_string()),
    };
    let delivered = match addr.send(msg) {
        Ok(()) => true,
        // A bounded mailbox: wait for room. Meanwhile NATS buffers this
        // actor's messages (up to the subscription capacity, then it drops
        // them and reports a slow consumer).
        Err(TrySendError::Full(msg)) => addr.send_op(msg).await.is_ok(),
        Err(_) => false,
    };
    if delivered {
        bump(&inner.counters.delivered, 1);
    } else {
        bump(&inner.counters.undeliverable, 1);
    }
}
