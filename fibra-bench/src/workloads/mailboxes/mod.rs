//! The `racket` group: the micro-benchmarks of Racket's thread mailboxes
//! (`mbox-test.ss`, from Racket's 2008 post on thread mailboxes), each run for
//! `iterations` iterations (1M, as in the post). Ops: iterations.
//!
//! * `sema-baseline`: wait then post (Racket's `call-with-semaphore`) on a
//!   1-permit semaphore, on one task. Result: the number of waits.
//! * `switch-baseline`: two tasks each yield `iterations` times (Racket:
//!   `(sleep)`). Result: the yields of both, 2 x iterations. On a
//!   multi-thread runtime the two tasks may run on different workers, so a
//!   yield need not switch to the other task.
//! * `asymmetric-*`: a producer task hands `iterations` values to a consumer
//!   task; `symmetric-*`: the initiator sends a value and waits for the
//!   reply, `iterations` round trips. Over a semaphore (the producer posts,
//!   the consumer waits; result: the consumer's waits / the initiator's),
//!   a mailbox (result: the sum of the values received, `0..iterations`
//!   asymmetric, the replies `i + 1` to pings `i` symmetric), a rendezvous
//!   channel, or a buffered (unbounded, Racket's async) channel.
//!
//! Every receiver takes exactly `iterations` values (Racket's mailboxes
//! cannot be closed). Tasks are spawned consumer first, as in mbox-test.ss.
//!
//! fibra: `Semaphore` (`acquire().await` then drop the permit for the
//! baseline; `acquire().await` + `forget()` / `release(1)` otherwise),
//! `mailbox()` (`Addr::send`, `Mailbox::recv`), `channel()`, `unbounded()`,
//! `yield_now()`.
//!
//! Peers: tokio (`Semaphore`; unbounded mpsc for both the mailbox and the
//! buffered rows, tokio's only unbounded queue; `mpsc::channel(1)` for the
//! rendezvous; `yield_now`), Go (see `go/mailboxes.go`), Erlang (the two
//! mailbox rows and `switch-baseline`: no semaphores or channels there) and
//! Racket (mbox-test.ss itself, with results).
//!
//! Here: the size and [`cases`]. [`workload`] names the ten workloads and
//! their results; [`rows`] makes the rows of each system, with the notes
//! saying how each does the work; [`fibra_tasks`] and [`tokio_peer`] do it
//! in this process (the other peers are programs of their own).

#[cfg(feature = "fibra-rt")]
mod fibra_tasks;
mod rows;
#[cfg(test)]
mod tests;
mod tokio_peer;
mod workload;

use crate::case::Case;
use crate::workloads::Config;
use workload::WORKLOADS;

/// Iterations per run (full run, `--quick`).
const ITERATIONS: (u64, u64) = (1_000_000, 10_000);

/// The rows of every workload.
pub fn cases(config: &Config) -> Vec<Case> {
    let n = config.size(ITERATIONS.0, ITERATIONS.1);
    WORKLOADS
        .into_iter()
        .flat_map(|workload| rows::for_workload(config, workload, n))
        .collect()
}
