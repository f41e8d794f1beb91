//! A `select-channels` parameter set ([`Shape`]) and its variant.

use std::thread;

/// The two variants of `select-channels`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// A blocking select.
    Blocking,
    /// A non-blocking select (`else` / `default`) retried after a yield.
    Else,
}

impl Variant {
    /// The `variant` parameter.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Blocking => "blocking",
            Self::Else => "else",
        }
    }

    /// Channel capacity: rendezvous for the blocking select; the
    /// non-blocking one needs a buffer (two non-blocking parties never meet
    /// on a rendezvous channel).
    pub const fn capacity(self) -> usize {
        match self {
            Self::Blocking => 0,
            Self::Else => 1,
        }
    }
}

/// One `select-channels` parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Channels, one per clause.
    pub clauses: usize,
    /// Blocking or `else`.
    pub variant: Variant,
    /// Producer tasks / threads.
    pub producers: u64,
    /// Consumer tasks / threads.
    pub consumers: u64,
    /// Messages per run, all producers together.
    pub messages: u64,
}

impl Shape {
    /// Values each producer sends.
    pub const fn per_producer(self) -> u64 {
        self.messages / self.producers
    }

    /// Values each consumer takes.
    pub const fn per_consumer(self) -> u64 {
        self.messages / self.consumers
    }

    /// The result of a correct run: every producer's `0..per_producer`.
    pub const fn expected(self) -> u64 {
        let n = self.per_producer();
        self.producers * (n * n.saturating_sub(1) / 2)
    }
}

/// Producers (and consumers): half the cores each, at least one.
pub fn split() -> u64 {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    (cpus / 2).max(1)
}

/// Panics on a clause count other than 2, 4, 8 or 16.
pub fn bad_clauses(clauses: usize) -> ! {
    panic!("select-channels: {clauses} clauses (2, 4, 8 or 16)")
}
