//! The rows every task workload has, in table order (`fibers/chain`,
//! `ping-pong`, `fan-out`, `diagonal`, `sieve`, `general/spawn-join`):
//!
//! * fibra on its own runtime (`fibra`, `fibra-1`, `fibra-ct`; see
//!   [`crate::exec::fibra_rows!`]);
//! * the same tokio code on a current-thread and on a multi-thread runtime
//!   (`tokio-ct`, `tokio-mt`), with the system's allocator and with
//!   mimalloc (`tokio-ct-mimalloc`, `tokio-mt-mimalloc`: these workloads
//!   spawn or allocate per message, and fibra's tasks come from its own
//!   slabs);
//! * the Go program's subcommand named like the workload (`go`);
//! * for the workloads Erlang and Racket run too, their programs'
//!   (`erlang`, `racket`; see [`super::langs`]).
//!
//! A workload states what differs: its [`Spec`], its fibra and tokio code,
//! and its [`PeerNotes`].

use std::future::Future;

use crate::case::{Case, Runner, Spec};
use crate::exec::{on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::langs;

/// What the peers' rows say about how they differ from fibra's.
#[derive(Clone, Copy, Debug, Default)]
pub struct PeerNotes {
    /// `Some(note)`: the tokio code uses a channel of capacity 1 where
    /// fibra's is a rendezvous channel (tokio has none); the tokio rows get
    /// `note` and the extra field `peer_capacity=1`. `None`: the tokio rows
    /// get neither.
    pub tokio_capacity_one: Option<&'static str>,
    /// `Some(note)`: Erlang and Racket run the workload too; `note` says how
    /// the Erlang program does it. `None`: no rows for them.
    pub erlang: Option<&'static str>,
}

/// The rows of `spec`: `fibra` (the rows on fibra's own runtime, from
/// [`crate::exec::fibra_rows!`]), then tokio's running `tokio`, Go's, and
/// Erlang's and Racket's if `notes` has an Erlang note.
pub fn task_rows<F, Fut>(spec: &Spec, fibra: Vec<Case>, tokio: F, notes: PeerNotes) -> Vec<Case>
where
    F: Fn() -> Fut + Clone + 'static,
    Fut: Future<Output = u64>,
{
    let tokio_row = |system, runner| {
        let case = spec.on(system, runner);
        match notes.tokio_capacity_one {
            Some(note) => case.with_note(note).with_extra("peer_capacity", 1),
            None => case,
        }
    };
    let mut rows = fibra;
    rows.extend([
        tokio_row(System::TokioCt, on_tokio_ct(tokio.clone())),
        tokio_row(System::TokioMt, on_tokio_mt(tokio.clone())),
        tokio_row(
            System::TokioCtMimalloc,
            mimalloc(on_tokio_ct(tokio.clone())),
        ),
        tokio_row(System::TokioMtMimalloc, mimalloc(on_tokio_mt(tokio))),
        spec.on(System::Go, Runner::go(spec.workload)),
    ]);
    if let Some(erlang_note) = notes.erlang {
        rows.extend(langs::rows(spec, erlang_note));
    }
    rows
}

/// The runner of a `*-mimalloc` row: the same code, run by the
/// `fibra-bench-mimalloc` executable (see [`crate::harness`]); skipped with a
/// note in a build without the `mimalloc` feature.
fn mimalloc(runner: Runner) -> Runner {
    if cfg!(feature = "mimalloc") {
        runner
    } else {
        Runner::Unavailable(crate::mimalloc_bin::NO_FEATURE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Params;

    fn spec() -> Spec {
        Spec {
            group: "fibers",
            workload: "chain",
            params: Params::new().with("messages", 10),
            ops: 10,
            expected: 45,
        }
    }

    fn systems(rows: &[Case]) -> Vec<System> {
        rows.iter().map(|case| case.system).collect()
    }

    #[test]
    fn rows_in_table_order_with_their_notes() {
        let spec = spec();
        let fibra = vec![spec.on(System::Fibra, Runner::Unavailable("test"))];
        let notes = PeerNotes {
            tokio_capacity_one: Some("capacity 1"),
            erlang: Some("acks"),
        };
        let rows = task_rows(&spec, fibra, || async { 45 }, notes);
        assert_eq!(
            systems(&rows),
            [
                System::Fibra,
                System::TokioCt,
                System::TokioMt,
                System::TokioCtMimalloc,
                System::TokioMtMimalloc,
                System::Go,
                System::Erlang,
                System::Racket
            ]
        );
        for tokio in &rows[1..5] {
            assert_eq!(tokio.note, Some("capacity 1"));
            assert_eq!(tokio.extra, Params::new().with("peer_capacity", 1));
        }
        assert_eq!(rows[6].note, Some("acks"));
        for peer in &rows[5..] {
            let Runner::External { program, .. } = peer.runner else {
                panic!("{}: not an external program", peer.label());
            };
            assert_eq!(program, "chain");
        }
    }

    #[test]
    fn without_notes_no_capacity_field_and_no_erlang_or_racket() {
        let spec = spec();
        let rows = task_rows(&spec, Vec::new(), || async { 45 }, PeerNotes::default());
        assert_eq!(
            systems(&rows),
            [
                System::TokioCt,
                System::TokioMt,
                System::TokioCtMimalloc,
                System::TokioMtMimalloc,
                System::Go
            ]
        );
        assert!(
            rows.iter()
                .all(|c| c.note.is_none() && c.extra == Params::new())
        );
    }
}
