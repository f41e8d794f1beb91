//! The rows of one workload, one system each, and the notes saying how
//! each system does the work.

#[cfg(feature = "fibra-rt")]
use super::fibra_tasks;
use super::tokio_peer;
use super::workload::{Asymmetric, Channel, Symmetric, Workload};
use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{fibra_rows, on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::Config;

/// How the tokio rows work.
const TOKIO_NOTE: &str = "tokio: Semaphore (acquire().await + forget() / add_permits(1)); \
     mailbox and buffered rows both use the unbounded mpsc (tokio's only unbounded queue: \
     the same code); channel rows use mpsc::channel(1), as tokio has no rendezvous channel; \
     switch: task::yield_now";

/// How the Go rows work.
const GO_NOTE: &str = "go: semaphore = chan struct{} (post = send, wait = receive); mailbox and \
     buffered rows both use a buffered chan that never fills (Go has no unbounded channel: \
     the same program); channel rows an unbuffered chan; switch: runtime.Gosched(); \
     GOMAXPROCS default";

/// How the Erlang rows work.
const ERLANG_NOTE: &str = "erlang: processes, ! and receive (messages carry no sender: each \
     peer knows whom to answer); switch-baseline: erlang:yield(), and the two processes may \
     run on different schedulers";

/// How the Racket rows work.
const RACKET_NOTE: &str = "racket: mbox-test.ss's threads (green, on one OS thread) and \
     primitives: make-semaphore + call-with-semaphore / semaphore-post / semaphore-wait, \
     thread-send / thread-receive, make-channel, make-async-channel (unbounded), (sleep)";

/// The rows of one workload.
pub fn for_workload(config: &Config, workload: Workload, n: u64) -> Vec<Case> {
    let name = workload.name();
    let spec = Spec {
        group: "racket",
        workload: name,
        params: Params::new().with("iterations", n),
        ops: n,
        expected: workload.expected(n),
    };
    // fibra on its multi-thread runtime (default workers) and on its
    // current-thread runtime; the group has no `fibra-1` rows.
    let mut rows = fibra_rows!(&spec, config, move || fibra_tasks::run(workload, n));
    rows.retain(|case| case.system != System::Fibra1);
    let tokio_row = |system, runner| {
        let case = spec.on(system, runner).with_note(TOKIO_NOTE);
        if matches!(workload, Asymmetric(Channel) | Symmetric(Channel)) {
            case.with_extra("peer_capacity", 1)
        } else {
            case
        }
    };
    rows.extend([
        tokio_row(
            System::TokioCt,
            on_tokio_ct(move || tokio_peer::run(workload, n)),
        ),
        tokio_row(
            System::TokioMt,
            on_tokio_mt(move || tokio_peer::run(workload, n)),
        ),
        spec.on(System::Go, Runner::go(name)).with_note(GO_NOTE),
    ]);
    if workload.erlang() {
        rows.push(
            spec.on(System::Erlang, Runner::erlang(name))
                .with_note(ERLANG_NOTE),
        );
    }
    rows.push(
        spec.on(System::Racket, Runner::racket(name))
            .with_note(RACKET_NOTE),
    );
    rows
}
