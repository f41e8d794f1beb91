//! The systems a workload runs on, and which fibra row each peer is compared with.

use std::fmt;

/// One way of running a workload: fibra in some execution context, or a peer.
///
/// Names follow docs/benchmarks.md: a system name plus a suffix for the variant
/// (`fibra-threads` is fibra's channels used from plain OS threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum System {
    /// fibra tasks on fibra's multi-thread runtime, default workers (one per
    /// core, or `--workers`).
    Fibra,
    /// fibra tasks on fibra's multi-thread runtime with 1 worker.
    Fibra1,
    /// fibra tasks on fibra's current-thread runtime.
    FibraCt,
    /// fibra channels between OS threads, blocking calls.
    FibraThreads,
    /// The `parasites` group: the work's short computations started with
    /// `fibra::spawn_eager` (parasites: first poll inline, a task only if
    /// they block) instead of `fibra::spawn`, on fibra's multi-thread
    /// runtime with default workers (like [`Self::Fibra`]).
    FibraParasite,
    /// `parasites/async-send`: the channel's own asynchronous send
    /// (`Sender::send_async`), on fibra's multi-thread runtime with default
    /// workers.
    FibraSendAsync,
    /// `parasites/inflation`: [`Self::FibraParasite`] on a runtime whose
    /// parasites are never inflated (`Builder::parasite_inflation(false)`).
    FibraParasiteNoInflation,
    /// `parasites/choose-all`: the library's `fibra::choose_all`, on fibra's
    /// multi-thread runtime with default workers.
    FibraChooseAll,
    /// fibra channels between tasks of a tokio current-thread runtime.
    FibraTokioCt,
    /// fibra channels between tasks of a 2-worker tokio multi-thread runtime.
    FibraTokioMt,
    /// crossbeam-channel between OS threads.
    Crossbeam,
    /// flume between OS threads.
    FlumeThreads,
    /// tokio's own channels on a current-thread runtime.
    TokioCt,
    /// tokio on a current-thread runtime, replies through a oneshot channel
    /// sent with each request (tokio's best flavour of a round trip).
    TokioCtOneshot,
    /// flume's async API on a tokio current-thread runtime.
    FlumeTokioCt,
    /// tokio's own channels on a 2-worker multi-thread runtime.
    TokioMt,
    /// flume's async API on a 2-worker tokio multi-thread runtime.
    FlumeTokioMt,
    /// [`Self::TokioCt`] with mimalloc as the global allocator (in the
    /// `fibra-bench-mimalloc` executable), as production tokio users often
    /// run it: fibra's tasks come from its own per-worker slabs, tokio's from
    /// the global allocator, so glibc's malloc alone would tilt a ratio.
    TokioCtMimalloc,
    /// [`Self::TokioMt`] with mimalloc as the global allocator.
    TokioMtMimalloc,
    /// Goroutines and Go channels (a separate program, see `go/`).
    Go,
    /// Erlang/OTP processes and message passing (a separate program, see
    /// `erlang/`), on the default SMP VM (one scheduler per core).
    Erlang,
    /// The same Erlang program on a VM with one scheduler (`erl +S 1`).
    Erlang1,
    /// Racket threads and rendezvous channels (`make-channel`; a separate
    /// program, see `racket/`). Racket threads are green threads on one OS
    /// thread.
    Racket,
    /// A reference, not a peer: the least a single-threaded executor can do
    /// for the pattern (a hand-rolled executor polling two futures that hand
    /// a value through a shared slot).
    Floor,
}

impl System {
    /// The name used in the table and in report.json.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Fibra => "fibra",
            Self::Fibra1 => "fibra-1",
            Self::FibraCt => "fibra-ct",
            Self::FibraThreads => "fibra-threads",
            Self::FibraParasite => "fibra-parasite",
            Self::FibraSendAsync => "fibra-send-async",
            Self::FibraParasiteNoInflation => "fibra-parasite-no-inflation",
            Self::FibraChooseAll => "fibra-choose-all",
            Self::FibraTokioCt => "fibra-tokio-ct",
            Self::FibraTokioMt => "fibra-tokio-mt",
            Self::Crossbeam => "crossbeam",
            Self::FlumeThreads => "flume-threads",
            Self::TokioCt => "tokio-ct",
            Self::TokioCtOneshot => "tokio-ct-oneshot",
            Self::FlumeTokioCt => "flume-tokio-ct",
            Self::TokioMt => "tokio-mt",
            Self::FlumeTokioMt => "flume-tokio-mt",
            Self::TokioCtMimalloc => "tokio-ct-mimalloc",
            Self::TokioMtMimalloc => "tokio-mt-mimalloc",
            Self::Go => "go",
            Self::Erlang => "erlang",
            Self::Erlang1 => "erlang-1",
            Self::Racket => "racket",
            Self::Floor => "floor",
        }
    }

    /// Whether this is a fibra row (as opposed to a peer).
    pub const fn is_fibra(self) -> bool {
        matches!(
            self,
            Self::Fibra
                | Self::Fibra1
                | Self::FibraCt
                | Self::FibraThreads
                | Self::FibraParasite
                | Self::FibraSendAsync
                | Self::FibraParasiteNoInflation
                | Self::FibraChooseAll
                | Self::FibraTokioCt
                | Self::FibraTokioMt
        )
    }

    /// The fibra rows a peer is compared with, in order of preference: the
    /// first one that was run for the same work is used.
    ///
    /// The first choice is fibra in the same execution context: OS-thread
    /// peers against `fibra-threads`, tokio peers against fibra's channels on
    /// the same tokio runtime (`fibra-tokio-ct` / `fibra-tokio-mt`). Where
    /// those rows do not exist (the task workloads, which run fibra on its
    /// own runtime), tokio-ct, tokio-ct-oneshot and the floor are compared
    /// with `fibra-ct`, tokio-mt with `fibra`. Go (an M:N runtime on every
    /// core) is compared with `fibra` first and `fibra-threads` second;
    /// Erlang and Racket with `fibra` (the runtime a user gets by default).
    /// See also [`Self::vs_best_fibra`].
    pub const fn baseline(self) -> &'static [System] {
        match self {
            Self::Crossbeam | Self::FlumeThreads => &[Self::FibraThreads],
            Self::Go => &[Self::Fibra, Self::FibraThreads],
            Self::Erlang | Self::Racket => &[Self::Fibra],
            // One scheduler against one worker.
            Self::Erlang1 => &[Self::Fibra1],
            Self::TokioCt | Self::FlumeTokioCt | Self::TokioCtMimalloc => {
                &[Self::FibraTokioCt, Self::FibraCt]
            }
            Self::TokioCtOneshot | Self::Floor => &[Self::FibraCt],
            Self::TokioMt | Self::FlumeTokioMt | Self::TokioMtMimalloc => {
                &[Self::FibraTokioMt, Self::Fibra]
            }
            Self::Fibra
            | Self::Fibra1
            | Self::FibraCt
            | Self::FibraThreads
            | Self::FibraParasite
            | Self::FibraSendAsync
            | Self::FibraParasiteNoInflation
            | Self::FibraChooseAll
            | Self::FibraTokioCt
            | Self::FibraTokioMt => &[],
        }
    }

    /// Whether the peer is also compared with the fastest fibra row: the
    /// language runtimes (Go, Erlang, Racket), whose execution model matches
    /// none of fibra's rows exactly (Racket's threads, for one, share one OS
    /// thread, like `fibra-ct`). `erlang-1` is compared with `fibra-1`
    /// first (one scheduler against one worker).
    pub const fn vs_best_fibra(self) -> bool {
        matches!(self, Self::Go | Self::Erlang | Self::Erlang1 | Self::Racket)
    }

    /// The global allocator the row runs with (in-process rows; an external
    /// program has its own).
    pub const fn allocator(self) -> Allocator {
        match self {
            Self::TokioCtMimalloc | Self::TokioMtMimalloc => Allocator::Mimalloc,
            _ => Allocator::System,
        }
    }
}

/// A global allocator, fixed per executable: `fibra-bench` has the
/// system's, `fibra-bench-mimalloc` mimalloc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocator {
    /// The system's allocator (glibc's malloc on Linux).
    System,
    /// mimalloc.
    Mimalloc,
}

impl Allocator {
    /// `system` or `mimalloc`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Mimalloc => "mimalloc",
        }
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
