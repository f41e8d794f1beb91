//! Finding a remote actor by name, and monitoring it: heartbeats of its
//! node, exit notices of its actors.
//!
//! Invariants:
//! * A node watched by this node has exactly one watcher task (the
//!   `watches` entry is made, under the async lock, by the lookup that
//!   subscribes to its heartbeats and exit notices).
//! * A monitor (`IVar<Down>`) is filled at most once, by the first of: the
//!   actor's exit notice, a liveness answer "not alive", its
//!   node's `Stopping` heartbeat, or no heartbeat for `down_after` (checked
//!   every heartbeat interval). When the node is declared down its entry
//!   goes, so a later lookup starts afresh.
//! * The lookup subscribes before it asks whether the actor is alive: an
//!   exit after the answer is seen as a notice, one before as "not alive".
//! * A notice can be lost while either node is cut off from NATS: when a
//!   node's heartbeats resume after a gap of more than two intervals (but
//!   less than the timeout), the watcher asks again about each actor
//!   monitored there.

use crate::error::{Down, LookupError};
use crate::node::{Node, NodeInner, run_on};
use crate::remote_addr::RemoteAddr;
use crate::service::bad_input;
use crate::wire::{self, Kind};
use async_nats::{RequestErrorKind, Subscriber};
use fibra::IVar;
use futures_util::StreamExt;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

impl Node {
    /// Finds the actor registered as `name` on any node (Erlang's
    /// `global:whereis_name`) and monitors it: the returned address's
    /// [`exited_op`](RemoteAddr::exited_op) fires when the actor ends or its
    /// node becomes unreachable.
    ///
    /// `M` must be the actor's message type (checked only when a message
    /// arrives: one that does not deserialize is counted and dropped by the
    /// receiving node).
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let echo = node.lookup::<String>("echo").await.unwrap();
    /// echo.send("hello".to_string()).unwrap();
    /// # });
    /// ```
    pub async fn lookup<M: Serialize>(&self, name: &str) -> Result<RemoteAddr<M>, LookupError> {
        let inner = self.inner().clone();
        let name = name.to_string();
        let (node, actor, down) = run_on(&inner.handle, find(inner.clone(), name))
            .await
            .unwrap_or_else(|| Err(LookupError::Nats("the node is closed".into())))?;
        Ok(RemoteAddr::new(self.clone(), node, actor, down))
    }
}

async fn find(
    inner: Arc<NodeInner>,
    name: String,
) -> Result<(u64, u64, Arc<IVar<Down>>), LookupError> {
    let request = async_nats::Request::new()
        .payload(wire::header(Kind::Lookup, 0, 0).into())
        .timeout(Some(inner.request_timeout));
    let reply = match inner
        .client
        .send_request(inner.name_subject(&name), request)
        .await
    {
        Ok(reply) => reply,
        Err(e) if e.kind() == RequestErrorKind::NoResponders => {
            return Err(LookupError::NotFound(name));
        }
        Err(e) => return Err(LookupError::Nats(e.to_string())),
    };
    let (h, _) = wire::decode_kind(&reply.payload, Kind::Lookup)
        .map_err(|e| LookupError::BadReply(e.to_string()))?;
    let (node, actor) = (h.a, h.b);
    let down = watch(&inner, node, actor).await?;
    Ok((node, actor, down))
}

/// The monitor of `actor` on `node`, set up as the invariants say.
async fn watch(
    inner: &Arc<NodeInner>,
    node: u64,
    actor: u64,
) -> Result<Arc<IVar<Down>>, LookupError> {
    let nats = |e: &dyn std::fmt::Display| LookupError::Nats(e.to_string());
    let down = {
        let mut watches = inner.watches.lock().await;
        #[allow(clippy::map_entry)] // the insert follows awaits
        if !watches.contains_key(&node) {
            let hb = inner
                .client
                .subscribe(inner.node_subject(node, "hb"))
                .await
                .map_err(|e| nats(&e))?;
            let x = inner
                .client
                .subscribe(inner.node_subject(node, "x"))
                .await
                .map_err(|e| nats(&e))?;
            watches.insert(node, Default::default());
            tokio::spawn(watcher(inner.clone(), node, hb, x));
        }
        let actors = watches.get_mut(&node).expect("inserted above");
        actors.entry(actor).or_default().clone()
    };
    // Subscribed: now ask (one connection, so the server has our
    // subscriptions before it routes the question).
    check_alive(inner, node, actor)
        .await
        .map_err(LookupError::BadReply)?;
    Ok(down)
}

/// Asks `node` whether `actor` is alive and fires its monitor if not.
async fn check_alive(inner: &NodeInner, node: u64, actor: u64) -> Result<(), String> {
    let request = async_nats::Request::new()
        .payload(wire::header(Kind::Alive, actor, 0).into())
        .timeout(Some(inner.request_timeout));
    let verdict = match inner
        .client
        .send_request(inner.node_subject(node, "alive"), request)
        .await
    {
        Ok(reply) => match wire::decode_kind(&reply.payload, Kind::Alive) {
            Ok((h, _)) if h.b == 0 => Some(Down::NoActor),
            Ok(_) => None,
            Err(e) => return Err(e.to_string()),
        },
        Err(e) if e.kind() == RequestErrorKind::NoResponders => Some(Down::NodeUnreachable),
        // No answer in time: the heartbeats will tell.
        Err(_) => None,
    };
    if let Some(why) = verdict {
        fire(inner, node, actor, why).await;
    }
    Ok(())
}

/// After a gap in `node`'s heartbeats (shorter than the node-down
/// timeout), asks again about every actor monitored there: an exit notice
/// sent during the gap may have been lost.
async fn recheck(inner: Arc<NodeInner>, node: u64) {
    let actors: Vec<u64> = match inner.watches.lock().await.get(&node) {
        Some(actors) => actors.keys().copied().collect(),
        None => return,
    };
    for actor in actors {
        if let Err(e) = check_alive(&inner, node, actor).await {
            tracing::warn!(error = %e, "fibra-remote: unreadable liveness answer");
        }
    }
}

/// Fills one actor's monitor and forgets it.
async fn fire(inner: &NodeInner, node: u64, actor: u64, why: Down) {
    let ivar = inner
        .watches
        .lock()
        .await
        .get_mut(&node)
        .and_then(|actors| actors.remove(&actor));
    if let Some(ivar) = ivar {
        let _ = ivar.put(why);
    }
}

/// Watches one remote node until it is down.
async fn watcher(inner: Arc<NodeInner>, node: u64, mut hb: Subscriber, mut x: Subscriber) {
    let mut last = Instant::now();
    let mut tick = tokio::time::interval(inner.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let why = loop {
        tokio::select! {
            Some(m) = hb.next() => match wire::decode(&m.payload) {
                Ok((h, _)) if h.kind == Kind::Heartbeat => {
                    // Two intervals without one: this node or that one was
                    // cut off for a while.
                    if last.elapsed() > 2 * inner.heartbeat {
                        tokio::spawn(recheck(inner.clone(), node));
                    }
                    last = Instant::now();
                }
                Ok((h, _)) if h.kind == Kind::Stopping => break Down::NodeStopped,
                Ok((h, _)) => bad_input(&inner, &m.subject, &format!("unexpected {:?}", h.kind)),
                Err(e) => bad_input(&inner, &m.subject, &e.to_string()),
            },
            Some(m) = x.next() => match wire::decode_kind(&m.payload, Kind::Exit) {
                Ok((h, body)) => match postcard::from_bytes::<Down>(body) {
                    Ok(why) => fire(&inner, node, h.a, why).await,
                    Err(e) => bad_input(&inner, &m.subject, &e.to_string()),
                },
                Err(e) => bad_input(&inner, &m.subject, &e.to_string()),
            },
            _ = tick.tick() => {
                if last.elapsed() > inner.down_after {
                    break Down::NodeUnreachable;
                }
            }
            else => break Down::NodeUnreachable,
        }
    };
    tracing::warn!(node = format_args!("{node:016x}"), %why, "fibra-remote: remote node down");
    let actors = inner.watches.lock().await.remove(&node);
    for ivar in actors.into_iter().flat_map(|a| a.into_values()) {
        let _ = ivar.put(why.clone());
    }
}
