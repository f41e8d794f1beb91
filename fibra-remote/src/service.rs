//! The node's own service task: heartbeats out, liveness queries and call
//! replies in.

use crate::node::NodeInner;
use crate::stats::bump;
use crate::wire::{self, Kind};
use async_nats::Subscriber;
use futures_util::StreamExt;
use std::sync::Arc;

/// Subscribes (before returning, so a peer can query this node as soon as
/// `connect` returns), then runs the service loop on the node's runtime.
pub(crate) async fn start(inner: Arc<NodeInner>) -> Result<(), String> {
    let sub = |what: &str| inner.client.subscribe(inner.node_subject(inner.id, what));
    let alive = sub("alive").await.map_err(|e| e.to_string())?;
    let replies = sub("r").await.map_err(|e| e.to_string())?;
    tokio::spawn(run(inner.clone(), alive, replies));
    sync_with_server(&inner).await
}

/// Returns once the server has processed everything this node sent before
/// (subscriptions included): a request to the node's own liveness subject,
/// answered by its service task. The server handles one connection's
/// commands in order, so the answer comes after them. (`Client::flush`
/// only writes the socket.)
pub(crate) async fn sync_with_server(inner: &NodeInner) -> Result<(), String> {
    let request = async_nats::Request::new()
        .payload(wire::header(Kind::Alive, 0, 0).into())
        .timeout(Some(inner.request_timeout));
    inner
        .client
        .send_request(inner.node_subject(inner.id, "alive"), request)
        .await
        .map(drop)
        .map_err(|e| format!("no round trip through the server: {e}"))
}

async fn run(inner: Arc<NodeInner>, mut alive: Subscriber, mut replies: Subscriber) {
    let hb_subject = inner.node_subject(inner.id, "hb");
    let mut tick = tokio::time::interval(inner.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if inner.closed.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                // Straight to the client, not through the publisher's
                // queue: a long backlog must not delay the heartbeat.
                let hb = wire::header(Kind::Heartbeat, inner.id, 0);
                let _ = inner.client.publish(hb_subject.clone(), hb.into()).await;
            }
            Some(m) = alive.next() => answer_alive(&inner, m).await,
            Some(m) = replies.next() => route_reply(&inner, m),
            else => return,
        }
    }
}

/// "Is actor `a` alive on this node?"
async fn answer_alive(inner: &NodeInner, m: async_nats::Message) {
    let Some(reply) = m.reply else { return };
    let actor = match wire::decode_kind(&m.payload, Kind::Alive) {
        Ok((h, _)) => h.a,
        Err(e) => return bad_input(inner, &m.subject, &e.to_string()),
    };
    let alive = inner.registry.lock().unwrap().alive.contains(&actor);
    let answer = wire::header(Kind::Alive, actor, alive as u64);
    let _ = inner.client.publish(reply, answer.into()).await;
}

/// A reply to one of this node's calls: to its reply box's mailbox.
fn route_reply(inner: &NodeInner, m: async_nats::Message) {
    let (rbox, call) = match wire::decode_kind(&m.payload, Kind::Reply) {
        Ok((h, _)) => (h.a, h.b),
        Err(e) => return bad_input(inner, &m.subject, &e.to_string()),
    };
    let body = m.payload.slice(wire::HEADER_LEN..);
    let delivered = match inner.reply_boxes.lock().unwrap().get(&rbox) {
        Some(addr) => addr.send((call, body)).is_ok(),
        None => false,
    };
    if delivered {
        bump(&inner.counters.delivered, 1);
    } else {
        // The caller's address is gone: like a reply to an Erlang process
        // that has ended.
        bump(&inner.counters.undeliverable, 1);
    }
}

/// Counts and logs a payload that could not be read.
pub(crate) fn bad_input(inner: &NodeInner, subject: &str, why: &str) {
    bump(&inner.counters.decode_errors, 1);
    tracing::warn!(
        subject,
        error = why,
        "fibra-remote: dropped an unreadable message"
    );
}
