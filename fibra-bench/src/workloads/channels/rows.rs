//! The rows of one parameter set, one per system, and the notes saying how
//! each system runs the shapes.

#[cfg(feature = "fibra-rt")]
use super::fibra_tasks;
use super::shape::Shape;
use super::{crossbeam_peer, fibra_threads, flume_peer, tokio_peer};
use crate::case::{Case, Runner, Spec};
use crate::exec::{fibra_rows, on_threads, on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::Config;

/// The group's name.
pub const GROUP: &str = "channels";

/// How the fibra rows run (printed once).
pub const FIBRA_NOTE: &str = "channels: crossbeam-channel's benchmark shapes (seq, spsc, mpsc, \
     mpmc, select_rx, select_both) at capacity 0, 1 and N (room for every message); in a full \
     run every Rust row runs each of its runs in a fresh process, after an untimed warm-up \
     pass, so min and max span processes; fibra, fibra-1, fibra-ct: tasks, await, fibra::choose over an array \
     of ops; fibra-threads: the same channels from OS threads, blocking calls";
/// How the tokio rows run.
const TOKIO_NOTE: &str = "tokio: mpsc between tasks, select! over the receivers (select-rx); \
     mpsc has no rendezvous and one receiver per channel: no tokio rows at capacity 0, nor for \
     mpmc and select-both";
/// How the crossbeam rows run.
const CROSSBEAM_NOTE: &str = "crossbeam: OS threads, bounded(capacity); one Select per thread, \
     reused for every message";
/// How the flume rows run.
const FLUME_NOTE: &str = "flume-threads: OS threads, bounded(capacity), a flume::Selector built \
     per message (select-rx); no select-both rows: with several threads selecting sends and \
     receives on the same channels, flume's Selector loses a wake-up now and then and hangs";
/// How the Go rows run.
const GO_NOTE: &str = "go: goroutines, make(chan uint64, capacity), select written out for 2 and \
     4 channels; GOMAXPROCS default; all runs in one process";

/// The rows of `shape`, each run in this process ([`Runner::InProcess`])
/// or by the Go program; [`super::cases`] moves the in-process ones into
/// a fresh process per run.
pub fn rows(config: &Config, shape: Shape) -> Vec<Case> {
    let spec = Spec {
        group: GROUP,
        workload: shape.kind.workload(),
        params: shape.params(),
        ops: shape.messages,
        expected: shape.expected(),
    };
    let mut rows: Vec<Case> = fibra_rows!(&spec, config, move || fibra_tasks::run(shape))
        .into_iter()
        .map(|case| case.with_note(FIBRA_NOTE))
        .collect();
    if tokio_peer::expresses(shape) {
        rows.extend([
            spec.on(System::TokioCt, on_tokio_ct(move || tokio_peer::run(shape)))
                .with_note(TOKIO_NOTE),
            spec.on(System::TokioMt, on_tokio_mt(move || tokio_peer::run(shape)))
                .with_note(TOKIO_NOTE),
        ]);
    }
    rows.extend([
        spec.on(System::Go, Runner::go(shape.kind.go_program()))
            .with_note(GO_NOTE),
        spec.on(
            System::FibraThreads,
            on_threads(move || fibra_threads::run(shape)),
        )
        .with_note(FIBRA_NOTE),
        spec.on(
            System::Crossbeam,
            on_threads(move || crossbeam_peer::run(shape)),
        )
        .with_note(CROSSBEAM_NOTE),
    ]);
    if flume_peer::expresses(shape) {
        rows.push(
            spec.on(
                System::FlumeThreads,
                on_threads(move || flume_peer::run(shape)),
            )
            .with_note(FLUME_NOTE),
        );
    }
    rows
}
