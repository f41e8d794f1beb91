//! The rows of both workloads, one system each, and the notes saying how
//! each system selects.

#[cfg(feature = "fibra-rt")]
use super::fibra_tasks;
use super::shape::{Shape, Variant};
use super::{crossbeam_peer, fibra_threads, tokio_peer};
use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{fibra_rows, on_threads, on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::Config;

/// How the sizes differ from the paper's, on the fibra rows (printed once).
pub const FIBRA_NOTE: &str = "cforall: the paper counts channel operations over 10 s on many-core \
     machines; here a run moves a fixed number of messages (params), and select-channels splits \
     this machine's cores evenly into producers and consumers (at least one each); fibra-threads: \
     fibra's channels between OS threads, blocking performs";

/// How the tokio rows work.
const TOKIO_NOTE: &str = "tokio: tokio::select! over mpsc send/recv, written out per clause \
     count; mpsc has no rendezvous channel: capacity 1 (blocking variant); else variant: \
     try_send/try_recv from a rotating start, then task::yield_now";
/// Why the tokio rows are skipped with more than one consumer.
const TOKIO_ONE_CONSUMER: &str = "tokio rows of cforall/select-channels: tokio's mpsc has one \
     receiver per channel, and this machine splits its cores into more than one consumer";
/// How the Go rows work.
const GO_NOTE: &str = "go: select written out per clause count; else variant: select with \
     default, then runtime.Gosched(); GOMAXPROCS default";
/// How the Go `select-overlap` row works.
const GO_OVERLAP_NOTE: &str = "go: no priority select: P1 and C1 use a plain (random) select \
     over A and B, as in the paper";
/// How the crossbeam rows work.
const CROSSBEAM_NOTE: &str = "crossbeam: OS threads, crossbeam_channel::Select built once per \
     thread (select / try_select then thread::yield_now); select-overlap: Select::new_biased";

/// The rows of one `select-channels` parameter set.
pub fn select_channels_rows(config: &Config, shape: Shape) -> Vec<Case> {
    let spec = Spec {
        group: "cforall",
        workload: "select-channels",
        params: Params::new()
            .with("clauses", shape.clauses as u64)
            .with("variant", shape.variant.name())
            .with("producers", shape.producers)
            .with("consumers", shape.consumers)
            .with("messages", shape.messages)
            .with("capacity", shape.variant.capacity() as u64),
        ops: shape.messages,
        expected: shape.expected(),
    };
    let mut rows = fibra_rows!(&spec, config, move || fibra_tasks::select(shape));
    rows.retain(|case| case.system != System::Fibra1);
    rows.push(spec.on(
        System::FibraThreads,
        on_threads(move || fibra_threads::select(shape)),
    ));
    let mut rows: Vec<Case> = rows.into_iter().map(|c| c.with_note(FIBRA_NOTE)).collect();
    let tokio_row = |system, runner| {
        let runner = if shape.consumers == 1 {
            runner
        } else {
            Runner::Unavailable(TOKIO_ONE_CONSUMER)
        };
        let case = spec.on(system, runner).with_note(TOKIO_NOTE);
        if shape.variant == Variant::Blocking {
            case.with_extra("peer_capacity", 1)
        } else {
            case
        }
    };
    rows.extend([
        tokio_row(
            System::TokioCt,
            on_tokio_ct(move || tokio_peer::select(shape)),
        ),
        tokio_row(
            System::TokioMt,
            on_tokio_mt(move || tokio_peer::select(shape)),
        ),
        spec.on(
            System::Crossbeam,
            on_threads(move || crossbeam_peer::select(shape)),
        )
        .with_note(CROSSBEAM_NOTE),
        spec.on(System::Go, Runner::go("select-channels"))
            .with_note(GO_NOTE),
    ]);
    rows
}

/// The rows of `select-overlap` with `messages` in total.
pub fn overlap_rows(config: &Config, messages: u64) -> Vec<Case> {
    let messages = messages / 2 * 2;
    let spec = Spec {
        group: "cforall",
        workload: "select-overlap",
        params: Params::new().with("messages", messages).with("capacity", 0),
        ops: messages,
        expected: messages * messages.saturating_sub(1) / 2,
    };
    let mut rows = fibra_rows!(&spec, config, move || fibra_tasks::overlap(messages));
    rows.retain(|case| case.system != System::Fibra1);
    rows.push(spec.on(
        System::FibraThreads,
        on_threads(move || fibra_threads::overlap(messages)),
    ));
    let mut rows: Vec<Case> = rows.into_iter().map(|c| c.with_note(FIBRA_NOTE)).collect();
    rows.extend([
        spec.on(
            System::Crossbeam,
            on_threads(move || crossbeam_peer::overlap(messages)),
        )
        .with_note(CROSSBEAM_NOTE),
        spec.on(System::Go, Runner::go("select-overlap"))
            .with_note(GO_OVERLAP_NOTE),
    ]);
    rows
}
