//! Counters of what a node sent, delivered and dropped: nothing is dropped
//! silently.

use std::sync::atomic::{AtomicU64, Ordering};

/// The live counters. Each is written by the node's tasks with `Relaxed`
/// increments and read by [`Counters::snapshot`]: they are statistics, no
/// other memory is published through them.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) sent: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) decode_errors: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) undeliverable: AtomicU64,
    pub(crate) slow_consumer: AtomicU64,
    pub(crate) disconnects: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    pub(crate) publish_errors: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn snapshot(&self) -> Stats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            sent: get(&self.sent),
            delivered: get(&self.delivered),
            decode_errors: get(&self.decode_errors),
            duplicates: get(&self.duplicates),
            lost: get(&self.lost),
            undeliverable: get(&self.undeliverable),
            slow_consumer: get(&self.slow_consumer),
            disconnects: get(&self.disconnects),
            reconnects: get(&self.reconnects),
            publish_errors: get(&self.publish_errors),
        }
    }
}

/// A snapshot of a node's counters: [`Node::stats`](crate::Node::stats).
///
/// Every message a node drops is counted in one of these, and logged (with
/// `tracing`, at `warn`) with its subject.
///
/// ```no_run
/// use fibra_remote::Stats;
///
/// # fibra::block_on(async {
/// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
/// let before: Stats = node.stats();
/// // ... traffic ...
/// let after = node.stats();
/// println!("{} messages lost since", after.lost - before.lost);
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Messages handed to NATS by this node's `send`s and replies.
    pub sent: u64,
    /// Remote messages put into a local actor's mailbox, and replies put
    /// into a caller's reply mailbox.
    pub delivered: u64,
    /// Received payloads that could not be read (wrong version, truncated,
    /// or not deserializable as the actor's message type); dropped.
    pub decode_errors: u64,
    /// Received messages whose sequence number was already seen; dropped.
    /// (Core NATS does not redeliver; this stays 0 unless something
    /// republishes.)
    pub duplicates: u64,
    /// Messages lost on the way, known from gaps in a sender's sequence
    /// numbers (a later message from the same sender arrived).
    pub lost: u64,
    /// Remote messages whose actor's mailbox was already closed; dropped.
    pub undeliverable: u64,
    /// Times the NATS client reported a slow consumer: a subscription's
    /// buffer was full, and a message was dropped.
    pub slow_consumer: u64,
    /// Times the connection to NATS was lost.
    pub disconnects: u64,
    /// Times it was established again.
    pub reconnects: u64,
    /// Publishes the NATS client refused.
    pub publish_errors: u64,
}
