//! A `channels` parameter set ([`Shape`]): which of crossbeam-channel's
//! benchmark shapes, on channels of which capacity, with how many threads
//! or tasks a side.

use crate::case::Params;

/// crossbeam-channel's benchmark shapes (its `benchmarks/` folder, also
/// kanal's): who sends, who receives, over how many channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One thread sends every message, then receives every message, on
    /// one channel with room for all of them.
    Seq,
    /// One producer, one consumer, one channel.
    Spsc,
    /// `threads` producers, one consumer, one channel.
    Mpsc,
    /// `threads` producers, `threads` consumers, one channel.
    Mpmc,
    /// `threads` producers, each on a channel of its own; one consumer
    /// selecting a receive over all of them.
    SelectRx,
    /// `threads` producers selecting a send over `threads` channels,
    /// `threads` consumers selecting a receive over the same channels.
    SelectBoth,
}

impl Kind {
    /// Every shape, in table order.
    pub const ALL: [Self; 6] = [
        Self::Seq,
        Self::Spsc,
        Self::Mpsc,
        Self::Mpmc,
        Self::SelectRx,
        Self::SelectBoth,
    ];

    /// The workload name (crossbeam's, with dashes).
    pub const fn workload(self) -> &'static str {
        match self {
            Self::Seq => "seq",
            Self::Spsc => "spsc",
            Self::Mpsc => "mpsc",
            Self::Mpmc => "mpmc",
            Self::SelectRx => "select-rx",
            Self::SelectBoth => "select-both",
        }
    }

    /// The subcommand of the Go program (`go/channels.go`).
    pub const fn go_program(self) -> &'static str {
        match self {
            Self::Seq => "channels-seq",
            Self::Spsc => "channels-spsc",
            Self::Mpsc => "channels-mpsc",
            Self::Mpmc => "channels-mpmc",
            Self::SelectRx => "channels-select-rx",
            Self::SelectBoth => "channels-select-both",
        }
    }

    /// Whether the shape has a thread count (`seq` and `spsc` have one
    /// thread a side, or one in all).
    pub const fn has_threads(self) -> bool {
        !matches!(self, Self::Seq | Self::Spsc)
    }

    /// Whether the shape selects over several channels.
    pub const fn selects(self) -> bool {
        matches!(self, Self::SelectRx | Self::SelectBoth)
    }
}

/// Channel capacity: crossbeam's three (`bounded0`, `bounded1`, `bounded`
/// with room for every message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// A rendezvous channel.
    Zero,
    /// One slot.
    One,
    /// Room for every message of the run: a send never waits.
    All,
}

impl Capacity {
    /// Every capacity, in table order.
    pub const ALL: [Self; 3] = [Self::Zero, Self::One, Self::All];
}

/// One parameter set of the `channels` group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Who sends and who receives.
    pub kind: Kind,
    /// The capacity of every channel.
    pub capacity: Capacity,
    /// Producers (and, for `mpmc` and `select-both`, consumers; for the
    /// select shapes, channels); 1 for `seq` and `spsc`.
    pub threads: u64,
    /// Messages per run, all producers together (a multiple of `threads`).
    pub messages: u64,
}

impl Shape {
    /// The channels' capacity as a number: `capacity=N` is `messages`.
    pub const fn capacity(self) -> usize {
        match self.capacity {
            Capacity::Zero => 0,
            Capacity::One => 1,
            Capacity::All => self.messages as usize,
        }
    }

    /// Producer threads or tasks.
    pub const fn producers(self) -> u64 {
        self.threads
    }

    /// Consumer threads or tasks.
    pub const fn consumers(self) -> u64 {
        match self.kind {
            Kind::Mpmc | Kind::SelectBoth => self.threads,
            Kind::Seq | Kind::Spsc | Kind::Mpsc | Kind::SelectRx => 1,
        }
    }

    /// Channels: one per producer for the select shapes, else one.
    pub const fn channels(self) -> usize {
        if self.kind.selects() {
            self.threads as usize
        } else {
            1
        }
    }

    /// Values each producer sends: `0..per_producer()`.
    pub const fn per_producer(self) -> u64 {
        self.messages / self.producers()
    }

    /// Values each consumer takes.
    pub const fn per_consumer(self) -> u64 {
        self.messages / self.consumers()
    }

    /// The result of a correct run: the sum of every value sent, each
    /// producer's `0..per_producer()`.
    pub const fn expected(self) -> u64 {
        let n = self.per_producer();
        self.producers() * (n * n.saturating_sub(1) / 2)
    }

    /// The report's parameters: `capacity`, then `producers` and
    /// `consumers`, `clauses` for the select shapes, and `messages`.
    pub fn params(self) -> Params {
        let params = Params::new()
            .with("capacity", self.capacity() as u64)
            .with("producers", self.producers())
            .with("consumers", self.consumers());
        let params = if self.kind.selects() {
            params.with("clauses", self.channels() as u64)
        } else {
            params
        };
        params.with("messages", self.messages)
    }
}

/// Panics on a channel count the select rows are not written for.
pub fn bad_clauses(clauses: usize) -> ! {
    panic!("channels: select over {clauses} channels (2 or 4)")
}
