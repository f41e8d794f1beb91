//! The `racket` group: the micro-benchmarks of Racket's thread mailboxes
//! (`mbox-test.ss`, 2008; `racket-thread-mailboxes.txt`), each run for
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

use std::future::Future;
use std::sync::Arc;

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{fibra_rows, on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::Config;

/// Iterations per run (full run, `--quick`).
const ITERATIONS: (u64, u64) = (1_000_000, 10_000);

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

/// What a producer hands to a consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Primitive {
    /// A semaphore: post / wait.
    Sema,
    /// A mailbox: a send never blocks.
    Mailbox,
    /// A rendezvous channel.
    Channel,
    /// A buffered (unbounded) channel.
    Buffered,
}

/// One workload of the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    SemaBaseline,
    SwitchBaseline,
    Asymmetric(Primitive),
    Symmetric(Primitive),
}

use Primitive::{Buffered, Channel, Mailbox, Sema};
use Workload::{Asymmetric, SemaBaseline, SwitchBaseline, Symmetric};

/// The workloads, in table order.
const WORKLOADS: [Workload; 10] = [
    SemaBaseline,
    SwitchBaseline,
    Asymmetric(Sema),
    Asymmetric(Mailbox),
    Asymmetric(Channel),
    Asymmetric(Buffered),
    Symmetric(Sema),
    Symmetric(Mailbox),
    Symmetric(Channel),
    Symmetric(Buffered),
];

impl Workload {
    /// The workload's name, also the peers' subcommand.
    const fn name(self) -> &'static str {
        match self {
            SemaBaseline => "sema-baseline",
            SwitchBaseline => "switch-baseline",
            Asymmetric(Sema) => "asymmetric-sema",
            Asymmetric(Mailbox) => "asymmetric-mailbox",
            Asymmetric(Channel) => "asymmetric-channel",
            Asymmetric(Buffered) => "asymmetric-buffered",
            Symmetric(Sema) => "symmetric-sema",
            Symmetric(Mailbox) => "symmetric-mailbox",
            Symmetric(Channel) => "symmetric-channel",
            Symmetric(Buffered) => "symmetric-buffered",
        }
    }

    /// The result of a correct run of `n` iterations.
    const fn expected(self, n: u64) -> u64 {
        match self {
            SemaBaseline | Asymmetric(Sema) | Symmetric(Sema) => n,
            SwitchBaseline => 2 * n,
            // The sum of 0..n.
            Asymmetric(_) => n * n.saturating_sub(1) / 2,
            // The sum of the replies 1..=n.
            Symmetric(_) => n * (n + 1) / 2,
        }
    }

    /// Whether the Erlang program runs it (Erlang has mailboxes, but no
    /// semaphores or channels).
    const fn erlang(self) -> bool {
        matches!(
            self,
            SwitchBaseline | Asymmetric(Mailbox) | Symmetric(Mailbox)
        )
    }
}

/// The rows of every workload.
pub fn cases(config: &Config) -> Vec<Case> {
    let n = config.size(ITERATIONS.0, ITERATIONS.1);
    WORKLOADS
        .into_iter()
        .flat_map(|workload| rows(config, workload, n))
        .collect()
}

/// The rows of one workload.
fn rows(config: &Config, workload: Workload, n: u64) -> Vec<Case> {
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
    let mut rows = fibra_rows!(&spec, config, move || fibra_run(workload, n));
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
        tokio_row(System::TokioCt, on_tokio_ct(move || tokio_run(workload, n))),
        tokio_row(System::TokioMt, on_tokio_mt(move || tokio_run(workload, n))),
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

// ---- tokio --------------------------------------------------------------

/// One run of `workload` on tokio.
async fn tokio_run(workload: Workload, n: u64) -> u64 {
    match workload {
        SemaBaseline => tokio_sema_baseline(n).await,
        SwitchBaseline => tokio_switch(n).await,
        Asymmetric(Sema) => tokio_asymmetric_sema(n).await,
        Asymmetric(Mailbox | Buffered) => tokio_asymmetric_unbounded(n).await,
        Asymmetric(Channel) => tokio_asymmetric_channel(n).await,
        Symmetric(Sema) => tokio_symmetric_sema(n).await,
        Symmetric(Mailbox | Buffered) => tokio_symmetric_unbounded(n).await,
        Symmetric(Channel) => tokio_symmetric_channel(n).await,
    }
}

/// Spawns `main` then `other` as tokio tasks; returns `main`'s result once
/// both are done.
async fn tokio_two(
    main: impl Future<Output = u64> + Send + 'static,
    other: impl Future<Output = ()> + Send + 'static,
) -> u64 {
    let main = tokio::spawn(main);
    let other = tokio::spawn(other);
    other.await.expect("tokio task failed");
    main.await.expect("tokio task failed")
}

async fn tokio_sema_baseline(n: u64) -> u64 {
    let task = tokio::spawn(async move {
        let sema = tokio::sync::Semaphore::new(1);
        let mut count = 0;
        for _ in 0..n {
            let permit = sema.acquire().await.expect("tokio: semaphore closed");
            drop(permit);
            count += 1;
        }
        assert_eq!(sema.available_permits(), 1, "tokio: permit lost");
        count
    });
    task.await.expect("tokio task failed")
}

async fn tokio_switch(n: u64) -> u64 {
    async fn yielder(n: u64) -> u64 {
        let mut count = 0;
        for _ in 0..n {
            tokio::task::yield_now().await;
            count += 1;
        }
        count
    }
    let handles = [tokio::spawn(yielder(n)), tokio::spawn(yielder(n))];
    crate::exec::tokio_join_sum(handles).await
}

async fn tokio_asymmetric_sema(n: u64) -> u64 {
    let sema = Arc::new(tokio::sync::Semaphore::new(0));
    let posts = sema.clone();
    tokio_two(
        async move {
            let mut count = 0;
            for _ in 0..n {
                sema.acquire()
                    .await
                    .expect("tokio: semaphore closed")
                    .forget();
                count += 1;
            }
            count
        },
        async move {
            for _ in 0..n {
                posts.add_permits(1);
            }
        },
    )
    .await
}

async fn tokio_symmetric_sema(n: u64) -> u64 {
    use tokio::sync::Semaphore;
    let ping = Arc::new(Semaphore::new(0));
    let pong = Arc::new(Semaphore::new(0));
    let (ping2, pong2) = (ping.clone(), pong.clone());
    tokio_two(
        async move {
            let mut count = 0;
            for _ in 0..n {
                ping.add_permits(1);
                pong.acquire()
                    .await
                    .expect("tokio: semaphore closed")
                    .forget();
                count += 1;
            }
            count
        },
        async move {
            for _ in 0..n {
                ping2
                    .acquire()
                    .await
                    .expect("tokio: semaphore closed")
                    .forget();
                pong2.add_permits(1);
            }
        },
    )
    .await
}

async fn tokio_asymmetric_unbounded(n: u64) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio_two(
        async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += rx.recv().await.expect("tokio: producer gone");
            }
            sum
        },
        async move {
            for i in 0..n {
                assert!(tx.send(i).is_ok(), "tokio: consumer gone");
            }
        },
    )
    .await
}

async fn tokio_asymmetric_channel(n: u64) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    tokio_two(
        async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += rx.recv().await.expect("tokio: producer gone");
            }
            sum
        },
        async move {
            for i in 0..n {
                assert!(tx.send(i).await.is_ok(), "tokio: consumer gone");
            }
        },
    )
    .await
}

async fn tokio_symmetric_unbounded(n: u64) -> u64 {
    use tokio::sync::mpsc::unbounded_channel;
    let (ping_tx, mut ping_rx) = unbounded_channel::<u64>();
    let (pong_tx, mut pong_rx) = unbounded_channel::<u64>();
    tokio_two(
        async move {
            let mut sum = 0;
            for i in 0..n {
                assert!(ping_tx.send(i).is_ok(), "tokio: responder gone");
                sum += pong_rx.recv().await.expect("tokio: responder gone");
            }
            sum
        },
        async move {
            for _ in 0..n {
                let v = ping_rx.recv().await.expect("tokio: initiator gone");
                assert!(pong_tx.send(v + 1).is_ok(), "tokio: initiator gone");
            }
        },
    )
    .await
}

async fn tokio_symmetric_channel(n: u64) -> u64 {
    use tokio::sync::mpsc::channel;
    let (ping_tx, mut ping_rx) = channel::<u64>(1);
    let (pong_tx, mut pong_rx) = channel::<u64>(1);
    tokio_two(
        async move {
            let mut sum = 0;
            for i in 0..n {
                assert!(ping_tx.send(i).await.is_ok(), "tokio: responder gone");
                sum += pong_rx.recv().await.expect("tokio: responder gone");
            }
            sum
        },
        async move {
            for _ in 0..n {
                let v = ping_rx.recv().await.expect("tokio: initiator gone");
                assert!(pong_tx.send(v + 1).await.is_ok(), "tokio: initiator gone");
            }
        },
    )
    .await
}

// ---- fibra --------------------------------------------------------------

/// One run of `workload` on fibra's runtime.
#[cfg(feature = "fibra-rt")]
async fn fibra_run(workload: Workload, n: u64) -> u64 {
    match workload {
        SemaBaseline => fibra_sema_baseline(n).await,
        SwitchBaseline => fibra_switch(n).await,
        Asymmetric(Sema) => fibra_asymmetric_sema(n).await,
        Asymmetric(Mailbox) => fibra_asymmetric_mailbox(n).await,
        Asymmetric(Channel) => fibra_asymmetric(fibra::channel(), n).await,
        Asymmetric(Buffered) => fibra_asymmetric(fibra::unbounded(), n).await,
        Symmetric(Sema) => fibra_symmetric_sema(n).await,
        Symmetric(Mailbox) => fibra_symmetric_mailbox(n).await,
        Symmetric(Channel) => fibra_symmetric(fibra::channel(), fibra::channel(), n).await,
        Symmetric(Buffered) => fibra_symmetric(fibra::unbounded(), fibra::unbounded(), n).await,
    }
}

/// Spawns `main` then `other` as fibra tasks; returns `main`'s result once
/// both are done.
#[cfg(feature = "fibra-rt")]
async fn fibra_two(
    main: impl Future<Output = u64> + Send + 'static,
    other: impl Future<Output = ()> + Send + 'static,
) -> u64 {
    let main = fibra::spawn(main);
    let other = fibra::spawn(other);
    other.await.expect("fibra task failed");
    main.await.expect("fibra task failed")
}

#[cfg(feature = "fibra-rt")]
async fn fibra_sema_baseline(n: u64) -> u64 {
    let task = fibra::spawn(async move {
        let sema = fibra::Semaphore::new(1);
        let mut count = 0;
        for _ in 0..n {
            let permit = sema.acquire().await.expect("fibra: semaphore closed");
            drop(permit);
            count += 1;
        }
        assert_eq!(sema.available_permits(), 1, "fibra: permit lost");
        count
    });
    task.await.expect("fibra task failed")
}

#[cfg(feature = "fibra-rt")]
async fn fibra_asymmetric_sema(n: u64) -> u64 {
    let sema = Arc::new(fibra::Semaphore::new(0));
    let posts = sema.clone();
    fibra_two(
        async move {
            let mut count = 0;
            for _ in 0..n {
                sema.acquire()
                    .await
                    .expect("fibra: semaphore closed")
                    .forget();
                count += 1;
            }
            count
        },
        async move {
            for _ in 0..n {
                posts.release(1);
            }
        },
    )
    .await
}

#[cfg(feature = "fibra-rt")]
async fn fibra_symmetric_sema(n: u64) -> u64 {
    use fibra::Semaphore;
    let ping = Arc::new(Semaphore::new(0));
    let pong = Arc::new(Semaphore::new(0));
    let (ping2, pong2) = (ping.clone(), pong.clone());
    fibra_two(
        async move {
            let mut count = 0;
            for _ in 0..n {
                ping.release(1);
                pong.acquire()
                    .await
                    .expect("fibra: semaphore closed")
                    .forget();
                count += 1;
            }
            count
        },
        async move {
            for _ in 0..n {
                ping2
                    .acquire()
                    .await
                    .expect("fibra: semaphore closed")
                    .forget();
                pong2.release(1);
            }
        },
    )
    .await
}

/// `asymmetric-mailbox`: the producer sends to the consumer's address
/// (a send never blocks).
#[cfg(feature = "fibra-rt")]
async fn fibra_asymmetric_mailbox(n: u64) -> u64 {
    let (addr, mut inbox) = fibra::mailbox::<u64>();
    fibra_two(
        async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += inbox.recv().await.expect("fibra: producer gone");
            }
            sum
        },
        async move {
            for i in 0..n {
                assert!(addr.send(i).is_ok(), "fibra: consumer gone");
            }
        },
    )
    .await
}

#[cfg(feature = "fibra-rt")]
async fn fibra_symmetric_mailbox(n: u64) -> u64 {
    let (ping, mut ping_inbox) = fibra::mailbox::<u64>();
    let (pong, mut pong_inbox) = fibra::mailbox::<u64>();
    fibra_two(
        async move {
            let mut sum = 0;
            for i in 0..n {
                assert!(ping.send(i).is_ok(), "fibra: responder gone");
                sum += pong_inbox.recv().await.expect("fibra: responder gone");
            }
            sum
        },
        async move {
            for _ in 0..n {
                let v = ping_inbox.recv().await.expect("fibra: initiator gone");
                assert!(pong.send(v + 1).is_ok(), "fibra: initiator gone");
            }
        },
    )
    .await
}

#[cfg(feature = "fibra-rt")]
async fn fibra_switch(n: u64) -> u64 {
    async fn yielder(n: u64) -> u64 {
        let mut count = 0;
        for _ in 0..n {
            fibra::yield_now().await;
            count += 1;
        }
        count
    }
    let handles = [fibra::spawn(yielder(n)), fibra::spawn(yielder(n))];
    crate::exec::fibra_join_sum(handles).await
}

/// `asymmetric-channel` (rendezvous) and `asymmetric-buffered` (unbounded).
#[cfg(feature = "fibra-rt")]
async fn fibra_asymmetric((tx, rx): (fibra::Sender<u64>, fibra::Receiver<u64>), n: u64) -> u64 {
    fibra_two(
        async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += rx.recv().await.expect("fibra: producer gone");
            }
            sum
        },
        async move {
            for i in 0..n {
                assert!(tx.send(i).await.is_ok(), "fibra: consumer gone");
            }
        },
    )
    .await
}

/// `symmetric-channel` (rendezvous) and `symmetric-buffered` (unbounded).
#[cfg(feature = "fibra-rt")]
async fn fibra_symmetric(
    (ping_tx, ping_rx): (fibra::Sender<u64>, fibra::Receiver<u64>),
    (pong_tx, pong_rx): (fibra::Sender<u64>, fibra::Receiver<u64>),
    n: u64,
) -> u64 {
    fibra_two(
        async move {
            let mut sum = 0;
            for i in 0..n {
                assert!(ping_tx.send(i).await.is_ok(), "fibra: responder gone");
                sum += pong_rx.recv().await.expect("fibra: responder gone");
            }
            sum
        },
        async move {
            for _ in 0..n {
                let v = ping_rx.recv().await.expect("fibra: initiator gone");
                assert!(pong_tx.send(v + 1).await.is_ok(), "fibra: initiator gone");
            }
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u64 = 1000;

    #[test]
    fn names_and_results() {
        let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name()).collect();
        let catalogue = super::super::CATALOGUE
            .iter()
            .find(|(group, _)| *group == "racket")
            .unwrap()
            .1;
        assert_eq!(names, catalogue);
        assert_eq!(Asymmetric(Mailbox).expected(4), 6);
        assert_eq!(Symmetric(Channel).expected(4), 10);
        assert_eq!(SwitchBaseline.expected(4), 8);
    }

    #[test]
    fn tokio_runs_return_the_expected_results() {
        let ct = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        for workload in WORKLOADS {
            for rt in [&ct, &mt] {
                assert_eq!(
                    rt.block_on(tokio_run(workload, N)),
                    workload.expected(N),
                    "{workload:?}"
                );
            }
        }
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_runs_return_the_expected_results() {
        use crate::exec::FibraFlavour;
        for flavour in [FibraFlavour::CurrentThread, FibraFlavour::Multi(Some(2))] {
            let rt = flavour.build();
            for workload in WORKLOADS {
                assert_eq!(
                    rt.block_on(fibra_run(workload, N)),
                    workload.expected(N),
                    "{workload:?} on {flavour:?}"
                );
            }
        }
    }

    #[test]
    fn every_workload_has_its_systems() {
        let cases = cases(&Config::default());
        for workload in WORKLOADS {
            let systems: Vec<System> = cases
                .iter()
                .filter(|c| c.spec.workload == workload.name())
                .map(|c| c.system)
                .collect();
            let mut expected = vec![
                System::Fibra,
                System::FibraCt,
                System::TokioCt,
                System::TokioMt,
                System::Go,
            ];
            if workload.erlang() {
                expected.push(System::Erlang);
            }
            expected.push(System::Racket);
            assert_eq!(systems, expected, "{workload:?}");
            for case in cases.iter().filter(|c| c.spec.workload == workload.name()) {
                assert_eq!(case.spec.group, "racket");
                assert_eq!(case.spec.ops, ITERATIONS.0);
                assert_eq!(case.system.is_fibra(), case.note.is_none());
            }
        }
    }
}
