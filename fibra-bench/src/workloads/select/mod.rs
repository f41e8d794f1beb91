//! The `cforall` group's channel benchmarks (Cforall's `waituntil` paper,
//! the Cforall `waituntil` paper, "Channel Benchmark"):
//!
//! * `select-channels`: `producers` producers and `consumers` consumers,
//!   split evenly over the machine's cores (the paper: "with 8 cores there
//!   are 4 producer and 4 consumer threads"; here `cpus / 2` each, at least
//!   one), share `clauses` channels (C = 2, 4, 8, 16). Each producer repeatedly
//!   selects over C send clauses (one per channel), each consumer over C
//!   receive clauses. Producer `p` sends `0..messages / producers`; each
//!   consumer takes exactly `messages / consumers` values (every consumer
//!   listens on every channel, so no value is stranded). Result: the sum of
//!   the values received. Ops: messages received (the paper's "channel
//!   operations"). The paper runs for 10 s and counts; the harness needs
//!   fixed work, so a run is a fixed number of messages instead.
//!   * `variant=blocking`: a blocking select over rendezvous channels
//!     (`capacity=0`, the Cforall example's "zero size channels").
//!   * `variant=else`: a non-blocking select (Cforall's `else`, Go's
//!     `default`) retried in a loop. Over rendezvous channels two
//!     non-blocking parties never meet (each commits only with a partner
//!     already waiting), so this variant uses channels of capacity 1 on
//!     every system. A failed attempt yields to the scheduler before
//!     retrying, on every system alike (`fibra::yield_now`,
//!     `tokio::task::yield_now`, `runtime.Gosched()`,
//!     `std::thread::yield_now`): on a current-thread runtime a retry loop
//!     that never yields would starve its partner forever.
//! * `select-overlap`: the paper's "pathological" case for Go: P1 and C1
//!   select over rendezvous channels A and B, priority to A; P2 and C2 use
//!   only B. P1 sends `0..messages / 2`, P2 the rest, then each drops its
//!   senders; consumers receive until their channels are closed. Result:
//!   the sum of everything received, `0..messages`. Ops: messages.
//!
//! Systems and how each selects:
//!
//! * fibra on its runtime (`fibra`, `fibra-ct`) and on OS threads
//!   (`fibra-threads`, the baseline of the crossbeam rows): `fibra::choose`
//!   over an array of `send_op`s / `recv_op`s (fair, like Go's and
//!   crossbeam's select; Cforall's `waituntil` is ordered), performed with
//!   `.await` / `.perform()`; `else`: `Op::try_perform` on the choice.
//!   `select-overlap`: `fibra::choose_biased`.
//! * tokio (`tokio-ct`, `tokio-mt`, `select-channels` only): `tokio::select!`
//!   over `mpsc` sends / receives, written out for C = 2, 4, 8 and 16 (the macro
//!   takes no dynamic clause count). tokio's mpsc has no rendezvous
//!   (capacity 1 instead, noted) and one receiver per channel, so the rows
//!   need `consumers=1` (a 2-core machine); elsewhere they are skipped. `else`:
//!   `try_send` / `try_recv` over the channels from a rotating start (tokio
//!   has no non-blocking select). No `select-overlap` rows: channel B has two
//!   consumers.
//! * crossbeam (OS threads): `crossbeam_channel::Select` built once per
//!   thread (`select()`, `try_select()`), `bounded(0)` rendezvous channels;
//!   `select-overlap`: `Select::new_biased()`.
//! * Go (`go/select.go`): `select` written out for C = 2, 4, 8 and 16,
//!   unbuffered channels; `else`: `default`. Go has no priority select:
//!   `select-overlap` uses a plain `select` (random), as in the paper.
//!
//! Here: the sizes and [`cases`]. A parameter set is a [`Shape`]
//! ([`shape`]); [`rows`] makes the rows of each system, with the notes
//! saying how each selects; one module per system does the work:
//! [`fibra_tasks`] (fibra's runtime), [`fibra_threads`] (fibra's channels on
//! OS threads; both take their channels from [`fibra_channels`]),
//! [`tokio_peer`], [`crossbeam_peer`].

mod crossbeam_peer;
mod fibra_channels;
#[cfg(feature = "fibra-rt")]
mod fibra_tasks;
mod fibra_threads;
mod rows;
mod shape;
#[cfg(test)]
mod tests;
mod tokio_peer;

use crate::case::Case;
use crate::workloads::Config;
use rows::{overlap_rows, select_channels_rows};
use shape::{Shape, Variant, split};

/// Clause counts (the paper's C).
const CLAUSES: [u64; 4] = [2, 4, 8, 16];
/// Messages per `select-channels` run, all producers together (full run,
/// `--quick`).
const MESSAGES: (u64, u64) = (100_000, 2_000);
/// Messages per `select-overlap` run, both producers together.
const OVERLAP_MESSAGES: (u64, u64) = (100_000, 2_000);

/// The rows of both workloads.
pub fn cases(config: &Config) -> Vec<Case> {
    let sides = split();
    // Every producer sends, and every consumer takes, the same count.
    let messages = config.size(MESSAGES.0, MESSAGES.1) / sides * sides;
    let mut rows = Vec::new();
    for variant in [Variant::Blocking, Variant::Else] {
        for clauses in CLAUSES {
            let shape = Shape {
                clauses: clauses as usize,
                variant,
                producers: sides,
                consumers: sides,
                messages,
            };
            rows.extend(select_channels_rows(config, shape));
        }
    }
    rows.extend(overlap_rows(
        config,
        config.size(OVERLAP_MESSAGES.0, OVERLAP_MESSAGES.1),
    ));
    rows
}
