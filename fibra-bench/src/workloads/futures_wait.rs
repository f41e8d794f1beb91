//! The `cforall` group's future benchmarks (Cforall's `waituntil` paper,
//! the Cforall `waituntil` paper, "Future Benchmark"): `futures-or`,
//! `futures-and`, `futures-and-or`, `futures-or-and`.
//!
//! A server fulfils three futures A, B and C, in that order, and a client
//! waits for them with a predicate: `A or B or C`, `A and B and C`,
//! `(A and B) or C`, `(A or B) and C`. Futures are one-shot, so each round
//! has fresh ones: the client makes round `r`'s three futures and hands
//! them to the server over a rendezvous channel — the "low cost
//! synchronize" that keeps the server from racing ahead — then waits with
//! the predicate, reading the value of every future that satisfied it. The
//! server fulfils each with `r`; the client checks every value it read and
//! adds `r` to its result. Result: the sum of the rounds, `0..iterations`.
//! Ops: rounds (statement completions).
//!
//! * fibra (`fibra`, `fibra-ct`, and `fibra-threads` on OS threads, the
//!   baseline of the crossbeam rows): a future is a `fibra::IVar` (`put`,
//!   `get_op`); OR is `fibra::choose` over the three `get_op`s (Cforall too
//!   special-cases OR-only statements); AND and the mixed predicates are a
//!   `fibra::WaitUntil` statement over the three `get_op`s with the
//!   predicate written with `&` / `|` (`run`, `run_blocking`).
//! * Go (`go/futures.go`): a future is a channel of capacity 1 written
//!   once; OR is a `select`, AND receives all three, `(A and B) or C` a
//!   `select` loop that disables each channel it has read (nil), `(A or B)
//!   and C` a `select` over A and B, then C.
//! * tokio: a future is a `oneshot` channel (the server gets the senders);
//!   OR is `tokio::select!`, AND `tokio::join!`, the mixed predicates nest
//!   the two. The request channel is `mpsc::channel(1)` (no rendezvous).
//! * crossbeam (OS threads): a future is a `bounded(1)` channel written once;
//!   like Go, with `crossbeam_channel::select!`.

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{fibra_rows, on_threads, on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::Config;

/// Rounds per run (full run, `--quick`). The OS-thread rows (crossbeam,
/// fibra-threads) are the slowest by far: every round wakes parked
/// threads, and waking an idle CPU is slow (on a VM, a halted vCPU). The
/// count keeps their runs near a second while the fibra rows' runs still
/// last milliseconds.
const ROUNDS: (u64, u64) = (20_000, 1_000);

/// How the tokio rows work.
const TOKIO_NOTE: &str = "tokio: futures are oneshot channels; or = tokio::select!, and = \
     tokio::join!, nested for the mixed predicates; requests over mpsc::channel(1) (no \
     rendezvous channel)";
/// How the Go rows work.
const GO_NOTE: &str = "go: a future is a chan of capacity 1 written once; or = select, and = \
     receive all three, (A and B) or C = a select loop disabling each channel read, \
     (A or B) and C = select over A and B, then C";
/// How the crossbeam rows work.
const CROSSBEAM_NOTE: &str = "crossbeam: OS threads; a future is a bounded(1) channel written \
     once; predicates as in Go, with crossbeam_channel::select!";

/// The four predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pred {
    /// `A or B or C`.
    Or,
    /// `A and B and C`.
    And,
    /// `(A and B) or C`.
    AndOr,
    /// `(A or B) and C`.
    OrAnd,
}

/// Every predicate, in table order.
pub const PREDS: [Pred; 4] = [Pred::Or, Pred::And, Pred::AndOr, Pred::OrAnd];

impl Pred {
    /// The workload's name, also the Go subcommand.
    pub const fn workload(self) -> &'static str {
        match self {
            Self::Or => "futures-or",
            Self::And => "futures-and",
            Self::AndOr => "futures-and-or",
            Self::OrAnd => "futures-or-and",
        }
    }

    /// Whether the futures read (A, B, C) satisfy the predicate.
    pub const fn holds(self, [a, b, c]: [bool; 3]) -> bool {
        match self {
            Self::Or => a || b || c,
            Self::And => a && b && c,
            Self::AndOr => (a && b) || c,
            Self::OrAnd => (a || b) && c,
        }
    }

    /// Checks one round's reads: the predicate holds and every value read
    /// is the round's. Returns the round, for the result.
    fn check(self, round: u64, got: [Option<u64>; 3]) -> u64 {
        assert!(
            self.holds(got.map(|v| v.is_some())),
            "{}: woke with {got:?}",
            self.workload()
        );
        for v in got.into_iter().flatten() {
            assert_eq!(v, round, "{}: a future of another round", self.workload());
        }
        round
    }
}

/// The rows of the four workloads.
pub fn cases(config: &Config) -> Vec<Case> {
    let rounds = config.size(ROUNDS.0, ROUNDS.1);
    PREDS
        .into_iter()
        .flat_map(|pred| rows(config, pred, rounds))
        .collect()
}

/// The rows of one workload.
fn rows(config: &Config, pred: Pred, rounds: u64) -> Vec<Case> {
    let spec = Spec {
        group: "cforall",
        workload: pred.workload(),
        params: Params::new().with("iterations", rounds),
        ops: rounds,
        expected: rounds * rounds.saturating_sub(1) / 2,
    };
    let mut rows = fibra_rows!(&spec, config, move || fibra_tasks::run(pred, rounds));
    rows.retain(|case| case.system != System::Fibra1);
    let tokio_row = |system, runner| {
        spec.on(system, runner)
            .with_note(TOKIO_NOTE)
            .with_extra("peer_capacity", 1)
    };
    rows.extend([
        spec.on(
            System::FibraThreads,
            on_threads(move || fibra_threads::run(pred, rounds)),
        ),
        tokio_row(
            System::TokioCt,
            on_tokio_ct(move || tokio_peer::run(pred, rounds)),
        ),
        tokio_row(
            System::TokioMt,
            on_tokio_mt(move || tokio_peer::run(pred, rounds)),
        ),
        spec.on(
            System::Crossbeam,
            on_threads(move || crossbeam_peer::run(pred, rounds)),
        )
        .with_note(CROSSBEAM_NOTE),
        spec.on(System::Go, Runner::go(pred.workload()))
            .with_note(GO_NOTE),
    ]);
    rows
}

/// One round's futures on fibra: three `IVar`s, shared by client and server.
type Round = std::sync::Arc<[fibra::IVar<u64>; 3]>;

/// A new round.
fn new_round() -> Round {
    std::sync::Arc::new([fibra::IVar::new(), fibra::IVar::new(), fibra::IVar::new()])
}

/// The server's side of a round: fulfils A, B and C with `r`.
fn fulfil(r: u64, round: &Round) {
    for future in round.iter() {
        assert!(future.put(r).is_ok(), "fibra: a future fulfilled twice");
    }
}

/// The `WaitUntil` statement of `pred` (not `Or`, which is a plain choice)
/// over the three futures, built from their `get_op`s.
macro_rules! fibra_wait_until {
    ($pred:expr, $round:expr, $run:ident $(, $await:tt)?) => {{
        let [a, b, c] = &**$round;
        let mut w = fibra::WaitUntil::new();
        let (ca, cb, cc) = (w.add(a.get_op()), w.add(b.get_op()), w.add(c.get_op()));
        let p = match $pred {
            Pred::Or => ca.done() | cb.done() | cc.done(),
            Pred::And => ca.done() & cb.done() & cc.done(),
            Pred::AndOr => (ca.done() & cb.done()) | cc.done(),
            Pred::OrAnd => (ca.done() | cb.done()) & cc.done(),
        };
        assert!(w.$run(p)$(.$await)?, "fibra: WaitUntil cannot hold");
        [ca.take(), cb.take(), cc.take()]
    }};
}

/// The OR statement: a choice over the three futures.
fn fibra_or(
    round: &Round,
) -> fibra::Choose<(
    fibra::GetOp<'_, u64>,
    fibra::GetOp<'_, u64>,
    fibra::GetOp<'_, u64>,
)> {
    let [a, b, c] = &**round;
    fibra::choose((a.get_op(), b.get_op(), c.get_op()))
}

/// fibra tasks on fibra's runtime.
#[cfg(feature = "fibra-rt")]
mod fibra_tasks {
    use super::{Pred, fibra_or, fulfil, new_round};

    /// One run: `rounds` rounds of `pred`.
    pub async fn run(pred: Pred, rounds: u64) -> u64 {
        let (tx, rx) = fibra::channel();
        let server = fibra::spawn(async move {
            while let Ok((r, round)) = rx.recv().await {
                fulfil(r, &round);
            }
        });
        let client = fibra::spawn(async move {
            let mut sum = 0;
            for r in 0..rounds {
                let round = new_round();
                assert!(
                    tx.send((r, round.clone())).await.is_ok(),
                    "fibra: server gone"
                );
                let got = match pred {
                    Pred::Or => {
                        let v = fibra_or(&round).await;
                        [Some(v), None, None]
                    }
                    _ => fibra_wait_until!(pred, &round, run, await),
                };
                sum += pred.check(r, got);
            }
            sum
        });
        let sum = client.await.expect("fibra client failed");
        server.await.expect("fibra server failed");
        sum
    }
}

/// fibra on OS threads: blocking performs.
mod fibra_threads {
    use std::thread;

    use fibra::Op;

    use super::{Pred, fibra_or, fulfil, new_round};

    /// One run: `rounds` rounds of `pred`.
    pub fn run(pred: Pred, rounds: u64) -> u64 {
        let (tx, rx) = fibra::channel();
        thread::scope(|s| {
            s.spawn(move || {
                while let Ok((r, round)) = rx.recv_blocking() {
                    fulfil(r, &round);
                }
            });
            let mut sum = 0;
            for r in 0..rounds {
                let round = new_round();
                assert!(
                    tx.send_blocking((r, round.clone())).is_ok(),
                    "fibra: server gone"
                );
                let got = match pred {
                    Pred::Or => [Some(fibra_or(&round).perform()), None, None],
                    _ => fibra_wait_until!(pred, &round, run_blocking),
                };
                sum += pred.check(r, got);
            }
            drop(tx);
            sum
        })
    }
}

/// tokio: oneshot futures, `select!` and `join!`.
mod tokio_peer {
    use tokio::sync::{mpsc, oneshot};

    use super::Pred;

    /// The server's ends of one round's futures.
    type Senders = [oneshot::Sender<u64>; 3];

    /// A oneshot future's value (the server never drops a sender unsent).
    fn value(v: Result<u64, oneshot::error::RecvError>) -> Option<u64> {
        Some(v.expect("tokio: server gone"))
    }

    /// One run: `rounds` rounds of `pred`.
    pub async fn run(pred: Pred, rounds: u64) -> u64 {
        let (tx, mut rx) = mpsc::channel::<(u64, Senders)>(1);
        let server = tokio::spawn(async move {
            while let Some((r, futures)) = rx.recv().await {
                for future in futures {
                    // The client no longer waits for futures its
                    // predicate did not need: ignore those.
                    let _ = future.send(r);
                }
            }
        });
        let client = tokio::spawn(async move {
            let mut sum = 0;
            for r in 0..rounds {
                let (sa, mut a) = oneshot::channel();
                let (sb, mut b) = oneshot::channel();
                let (sc, mut c) = oneshot::channel();
                assert!(
                    tx.send((r, [sa, sb, sc])).await.is_ok(),
                    "tokio: server gone"
                );
                let got = match pred {
                    Pred::Or => tokio::select! {
                        v = &mut a => [value(v), None, None],
                        v = &mut b => [None, value(v), None],
                        v = &mut c => [None, None, value(v)],
                    },
                    Pred::And => {
                        let (x, y, z) = tokio::join!(a, b, c);
                        [value(x), value(y), value(z)]
                    }
                    Pred::AndOr => tokio::select! {
                        (x, y) = async { tokio::join!(&mut a, &mut b) } => [value(x), value(y), None],
                        z = &mut c => [None, None, value(z)],
                    },
                    Pred::OrAnd => {
                        let (xy, z) = tokio::join!(
                            async {
                                tokio::select! {
                                    x = &mut a => [value(x), None],
                                    y = &mut b => [None, value(y)],
                                }
                            },
                            c
                        );
                        [xy[0], xy[1], value(z)]
                    }
                };
                sum += pred.check(r, got);
            }
            sum
        });
        let sum = client.await.expect("tokio client failed");
        server.await.expect("tokio server failed");
        sum
    }
}

/// crossbeam: `bounded(1)` futures, `select!`, on OS threads.
mod crossbeam_peer {
    use std::thread;

    use crossbeam_channel::{Receiver, Sender, bounded, never, select};

    use super::Pred;

    /// A future's value (the server never drops a sender unsent).
    fn value(v: Result<u64, crossbeam_channel::RecvError>) -> Option<u64> {
        Some(v.expect("crossbeam: server gone"))
    }

    /// One run: `rounds` rounds of `pred`.
    pub fn run(pred: Pred, rounds: u64) -> u64 {
        let (tx, rx) = bounded::<(u64, [Sender<u64>; 3])>(0);
        thread::scope(|s| {
            s.spawn(move || {
                for (r, futures) in rx {
                    for future in futures {
                        // Futures the client's predicate did not need are
                        // gone by now: ignore those.
                        let _ = future.send(r);
                    }
                }
            });
            let mut sum = 0;
            for r in 0..rounds {
                let (sa, a) = bounded(1);
                let (sb, b) = bounded(1);
                let (sc, c) = bounded(1);
                assert!(tx.send((r, [sa, sb, sc])).is_ok(), "crossbeam: server gone");
                let got = wait(pred, [a, b, c]);
                sum += pred.check(r, got);
            }
            drop(tx);
            sum
        })
    }

    /// Waits for `pred` over the three futures; returns what it read.
    fn wait(pred: Pred, [a, b, c]: [Receiver<u64>; 3]) -> [Option<u64>; 3] {
        match pred {
            Pred::Or => select! {
                recv(a) -> v => [value(v), None, None],
                recv(b) -> v => [None, value(v), None],
                recv(c) -> v => [None, None, value(v)],
            },
            Pred::And => [value(a.recv()), value(b.recv()), value(c.recv())],
            Pred::AndOr => {
                // A select loop; a channel read is replaced by `never()`.
                let mut got = [None; 3];
                let off = never();
                while !pred.holds(got.map(|v| v.is_some())) {
                    let ra = if got[0].is_some() { &off } else { &a };
                    let rb = if got[1].is_some() { &off } else { &b };
                    select! {
                        recv(ra) -> v => got[0] = value(v),
                        recv(rb) -> v => got[1] = value(v),
                        recv(c) -> v => got[2] = value(v),
                    }
                }
                got
            }
            Pred::OrAnd => {
                let [x, y] = select! {
                    recv(a) -> v => [value(v), None],
                    recv(b) -> v => [None, value(v)],
                };
                [x, y, value(c.recv())]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u64 = 300;
    const SUM: u64 = N * (N - 1) / 2;

    #[test]
    fn predicates() {
        assert!(Pred::AndOr.holds([false, false, true]));
        assert!(!Pred::AndOr.holds([true, false, false]));
        assert!(Pred::OrAnd.holds([false, true, true]));
        assert!(!Pred::OrAnd.holds([true, true, false]));
        assert!(!Pred::And.holds([true, true, false]));
        assert!(Pred::Or.holds([false, true, false]));
        let names: Vec<&str> = PREDS.iter().map(|p| p.workload()).collect();
        let catalogue = super::super::CATALOGUE
            .iter()
            .find(|(group, _)| *group == "cforall")
            .unwrap()
            .1;
        assert_eq!(names, catalogue[2..]);
    }

    #[test]
    #[should_panic(expected = "woke with")]
    fn a_predicate_that_does_not_hold_is_an_error() {
        Pred::And.check(3, [Some(3), Some(3), None]);
    }

    #[test]
    fn thread_rows_return_the_expected_results() {
        for pred in PREDS {
            assert_eq!(fibra_threads::run(pred, N), SUM, "{pred:?}");
            assert_eq!(crossbeam_peer::run(pred, N), SUM, "{pred:?}");
        }
    }

    #[test]
    fn tokio_rows_return_the_expected_results() {
        let ct = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        for pred in PREDS {
            for rt in [&ct, &mt] {
                assert_eq!(rt.block_on(tokio_peer::run(pred, N)), SUM, "{pred:?}");
            }
        }
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_rows_return_the_expected_results() {
        use crate::exec::FibraFlavour;
        for flavour in [FibraFlavour::CurrentThread, FibraFlavour::Multi(Some(2))] {
            let rt = flavour.build();
            for pred in PREDS {
                assert_eq!(
                    rt.block_on(fibra_tasks::run(pred, N)),
                    SUM,
                    "{pred:?} on {flavour:?}"
                );
            }
        }
    }

    #[test]
    fn every_workload_has_its_systems() {
        let cases = cases(&Config::default());
        for pred in PREDS {
            let systems: Vec<System> = cases
                .iter()
                .filter(|c| c.spec.workload == pred.workload())
                .map(|c| c.system)
                .collect();
            assert_eq!(
                systems,
                [
                    System::Fibra,
                    System::FibraCt,
                    System::FibraThreads,
                    System::TokioCt,
                    System::TokioMt,
                    System::Crossbeam,
                    System::Go
                ],
                "{pred:?}"
            );
        }
    }
}
