//! The systems a workload runs on, and which fibra row each peer is compared with.

use std::fmt;

/// One way of running a workload: fibra in some execution context, or a peer.
///
/// Names follow BENCHMARKS.md: a system name plus a suffix for the variant
/// (`fibra-threads` is fibra's channels used from plain OS threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum System {
    /// fibra channels between OS threads, blocking calls.
    FibraThreads,
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
    /// flume's async API on a tokio current-thread runtime.
    FlumeTokioCt,
    /// tokio's own channels on a 2-worker multi-thread runtime.
    TokioMt,
    /// flume's async API on a 2-worker tokio multi-thread runtime.
    FlumeTokioMt,
    /// Goroutines and Go channels (a separate program, see `go/`).
    Go,
}

impl System {
    /// The name used in the table and in report.json.
    pub const fn name(self) -> &'static str {
        match self {
            Self::FibraThreads => "fibra-threads",
            Self::FibraTokioCt => "fibra-tokio-ct",
            Self::FibraTokioMt => "fibra-tokio-mt",
            Self::Crossbeam => "crossbeam",
            Self::FlumeThreads => "flume-threads",
            Self::TokioCt => "tokio-ct",
            Self::FlumeTokioCt => "flume-tokio-ct",
            Self::TokioMt => "tokio-mt",
            Self::FlumeTokioMt => "flume-tokio-mt",
            Self::Go => "go",
        }
    }

    /// Whether this is a fibra row (as opposed to a peer).
    pub const fn is_fibra(self) -> bool {
        matches!(
            self,
            Self::FibraThreads | Self::FibraTokioCt | Self::FibraTokioMt
        )
    }

    /// The fibra row a peer is compared with: fibra in the same execution
    /// context (OS threads, tokio current-thread, tokio multi-thread).
    /// Go has no such twin; it is compared with `fibra-threads` (both use
    /// blocking calls from plain code) and, see [`Self::vs_best_fibra`], with
    /// the fastest fibra row.
    pub const fn baseline(self) -> Option<System> {
        match self {
            Self::Crossbeam | Self::FlumeThreads | Self::Go => Some(Self::FibraThreads),
            Self::TokioCt | Self::FlumeTokioCt => Some(Self::FibraTokioCt),
            Self::TokioMt | Self::FlumeTokioMt => Some(Self::FibraTokioMt),
            Self::FibraThreads | Self::FibraTokioCt | Self::FibraTokioMt => None,
        }
    }

    /// Whether the peer is also compared with the fastest fibra row.
    pub const fn vs_best_fibra(self) -> bool {
        matches!(self, Self::Go)
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
