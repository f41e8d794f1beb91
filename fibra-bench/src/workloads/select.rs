//! The `cforall` group's channel benchmarks (Cforall's `waituntil` paper,
//! `cforall-waituntil.txt`, "Channel Benchmark"):
//!
//! * `select-channels`: `producers` producers and `consumers` consumers,
//!   split evenly over the machine's cores (the paper: "with 8 cores there
//!   are 4 producer and 4 consumer threads"; here `cpus / 2` each, at least
//!   one), share `clauses` channels (C = 2, 4, 8). Each producer repeatedly
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
//!   over `mpsc` sends / receives, written out for C = 2, 4 and 8 (the macro
//!   takes no dynamic clause count). tokio's mpsc has no rendezvous
//!   (capacity 1 instead, noted) and one receiver per channel, so the rows
//!   need `consumers=1` (a 2-core machine); elsewhere they are skipped. `else`:
//!   `try_send` / `try_recv` over the channels from a rotating start (tokio
//!   has no non-blocking select). No `select-overlap` rows: channel B has two
//!   consumers.
//! * crossbeam (OS threads): `crossbeam_channel::Select` built once per
//!   thread (`select()`, `try_select()`), `bounded(0)` rendezvous channels;
//!   `select-overlap`: `Select::new_biased()`.
//! * Go (`go/select.go`): `select` written out for C = 2, 4 and 8,
//!   unbuffered channels; `else`: `default`. Go has no priority select:
//!   `select-overlap` uses a plain `select` (random), as in the paper.

use std::thread;

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{fibra_rows, on_threads, on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::Config;

/// Clause counts (the paper's C).
const CLAUSES: [u64; 3] = [2, 4, 8];
/// Messages per `select-channels` run, all producers together (full run,
/// `--quick`).
const MESSAGES: (u64, u64) = (100_000, 2_000);
/// Messages per `select-overlap` run, both producers together.
const OVERLAP_MESSAGES: (u64, u64) = (100_000, 2_000);

/// How the sizes differ from the paper's, on the fibra rows (printed once).
const FIBRA_NOTE: &str = "cforall: the paper counts channel operations over 10 s on many-core \
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

/// The two variants of `select-channels`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// A blocking select.
    Blocking,
    /// A non-blocking select (`else` / `default`) retried after a yield.
    Else,
}

impl Variant {
    /// The `variant` parameter.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Blocking => "blocking",
            Self::Else => "else",
        }
    }

    /// Channel capacity: rendezvous for the blocking select; the
    /// non-blocking one needs a buffer (two non-blocking parties never meet
    /// on a rendezvous channel).
    pub const fn capacity(self) -> usize {
        match self {
            Self::Blocking => 0,
            Self::Else => 1,
        }
    }
}

/// One `select-channels` parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Channels, one per clause.
    pub clauses: usize,
    /// Blocking or `else`.
    pub variant: Variant,
    /// Producer tasks / threads.
    pub producers: u64,
    /// Consumer tasks / threads.
    pub consumers: u64,
    /// Messages per run, all producers together.
    pub messages: u64,
}

impl Shape {
    /// Values each producer sends.
    const fn per_producer(self) -> u64 {
        self.messages / self.producers
    }

    /// Values each consumer takes.
    const fn per_consumer(self) -> u64 {
        self.messages / self.consumers
    }

    /// The result of a correct run: every producer's `0..per_producer`.
    const fn expected(self) -> u64 {
        let n = self.per_producer();
        self.producers * (n * n.saturating_sub(1) / 2)
    }
}

/// Producers (and consumers): half the cores each, at least one.
fn split() -> u64 {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    (cpus / 2).max(1)
}

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

/// The rows of one `select-channels` parameter set.
fn select_channels_rows(config: &Config, shape: Shape) -> Vec<Case> {
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
fn overlap_rows(config: &Config, messages: u64) -> Vec<Case> {
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

/// A fibra channel of `capacity` (0: rendezvous).
fn fibra_channel(capacity: usize) -> (fibra::Sender<u64>, fibra::Receiver<u64>) {
    if capacity == 0 {
        fibra::channel()
    } else {
        fibra::bounded(capacity)
    }
}

/// `clauses` fibra channels of `capacity`, as arrays.
fn fibra_channels<const C: usize>(
    capacity: usize,
) -> ([fibra::Sender<u64>; C], [fibra::Receiver<u64>; C]) {
    let mut txs = Vec::with_capacity(C);
    let mut rxs = Vec::with_capacity(C);
    for _ in 0..C {
        let (tx, rx) = fibra_channel(capacity);
        txs.push(tx);
        rxs.push(rx);
    }
    let txs = txs.try_into().unwrap_or_else(|_| unreachable!("C senders"));
    let rxs = rxs
        .try_into()
        .unwrap_or_else(|_| unreachable!("C receivers"));
    (txs, rxs)
}

/// Panics on a clause count other than 2, 4 or 8.
fn bad_clauses(clauses: usize) -> ! {
    panic!("select-channels: {clauses} clauses (2, 4 or 8)")
}

/// fibra tasks on fibra's runtime.
#[cfg(feature = "fibra-rt")]
mod fibra_tasks {
    use std::array;

    use fibra::{Op, Receiver, Sender, choose, choose_biased};

    use super::{Shape, Variant, bad_clauses, fibra_channels};
    use crate::exec::fibra_join_sum;

    /// One `select-channels` run.
    pub async fn select(shape: Shape) -> u64 {
        match shape.clauses {
            2 => select_c::<2>(shape).await,
            4 => select_c::<4>(shape).await,
            8 => select_c::<8>(shape).await,
            other => bad_clauses(other),
        }
    }

    async fn select_c<const C: usize>(shape: Shape) -> u64 {
        let (txs, rxs) = fibra_channels::<C>(shape.variant.capacity());
        let mut handles = Vec::new();
        for _ in 0..shape.consumers {
            let rxs = rxs.clone();
            let n = shape.per_consumer();
            handles.push(fibra::spawn(consumer(rxs, n, shape.variant)));
        }
        for _ in 0..shape.producers {
            let txs = txs.clone();
            let n = shape.per_producer();
            handles.push(fibra::spawn(async move {
                producer(txs, n, shape.variant).await;
                0
            }));
        }
        drop(rxs);
        // The senders stay open until every consumer is done: a closed,
        // empty channel would be a ready clause (`Err`) in the consumers'
        // choice while values still wait in the other channels' buffers.
        let sum = fibra_join_sum(handles).await;
        drop(txs);
        sum
    }

    /// Sends `0..n`, each over whichever of the channels is ready first.
    async fn producer<const C: usize>(txs: [Sender<u64>; C], n: u64, variant: Variant) {
        for v in 0..n {
            let ops = || choose(array::from_fn::<_, C, _>(|i| txs[i].send_op(v)));
            let sent = match variant {
                Variant::Blocking => ops().await,
                Variant::Else => loop {
                    if let Ok(sent) = ops().try_perform() {
                        break sent;
                    }
                    fibra::yield_now().await;
                },
            };
            assert!(sent.is_ok(), "fibra: consumers gone");
        }
    }

    /// Takes `n` values from whichever channels are ready; returns their sum.
    async fn consumer<const C: usize>(rxs: [Receiver<u64>; C], n: u64, variant: Variant) -> u64 {
        let mut sum = 0;
        for _ in 0..n {
            let ops = || choose(array::from_fn::<_, C, _>(|i| rxs[i].recv_op()));
            let got = match variant {
                Variant::Blocking => ops().await,
                Variant::Else => loop {
                    if let Ok(got) = ops().try_perform() {
                        break got;
                    }
                    fibra::yield_now().await;
                },
            };
            sum += got.expect("fibra: producers gone");
        }
        sum
    }

    /// One `select-overlap` run.
    pub async fn overlap(messages: u64) -> u64 {
        let half = messages / 2;
        let (a_tx, a_rx) = fibra::channel::<u64>();
        let (b_tx, b_rx) = fibra::channel::<u64>();
        let b_tx2 = b_tx.clone();
        let b_rx2 = b_rx.clone();
        let c1 = fibra::spawn(async move {
            let (mut a_open, mut b_open) = (true, true);
            let mut sum = 0;
            while a_open || b_open {
                let got = if a_open && b_open {
                    choose_biased((
                        a_rx.recv_op().wrap(|r| (0, r)),
                        b_rx.recv_op().wrap(|r| (1, r)),
                    ))
                    .await
                } else if a_open {
                    (0, a_rx.recv().await)
                } else {
                    (1, b_rx.recv().await)
                };
                match got {
                    (_, Ok(v)) => sum += v,
                    (0, Err(_)) => a_open = false,
                    (_, Err(_)) => b_open = false,
                }
            }
            sum
        });
        let c2 = fibra::spawn(async move {
            let mut sum = 0;
            while let Ok(v) = b_rx2.recv().await {
                sum += v;
            }
            sum
        });
        let p1 = fibra::spawn(async move {
            for v in 0..half {
                let sent = choose_biased((a_tx.send_op(v), b_tx.send_op(v))).await;
                assert!(sent.is_ok(), "fibra: consumers gone");
            }
            0
        });
        let p2 = fibra::spawn(async move {
            for v in half..messages {
                assert!(b_tx2.send(v).await.is_ok(), "fibra: consumers gone");
            }
            0
        });
        fibra_join_sum([p1, p2, c1, c2]).await
    }
}

/// fibra's channels between OS threads (blocking performs).
mod fibra_threads {
    use std::{array, thread};

    use fibra::{Op, Receiver, Sender, choose, choose_biased};

    use super::{Shape, Variant, bad_clauses, fibra_channels};

    /// One `select-channels` run.
    pub fn select(shape: Shape) -> u64 {
        match shape.clauses {
            2 => select_c::<2>(shape),
            4 => select_c::<4>(shape),
            8 => select_c::<8>(shape),
            other => bad_clauses(other),
        }
    }

    fn select_c<const C: usize>(shape: Shape) -> u64 {
        let (txs, rxs) = fibra_channels::<C>(shape.variant.capacity());
        thread::scope(|s| {
            let consumers: Vec<_> = (0..shape.consumers)
                .map(|_| s.spawn(|| consumer(&rxs, shape.per_consumer(), shape.variant)))
                .collect();
            for _ in 0..shape.producers {
                s.spawn(|| producer(&txs, shape.per_producer(), shape.variant));
            }
            consumers
                .into_iter()
                .map(|c| c.join().expect("consumer thread panicked"))
                .sum()
        })
    }

    fn producer<const C: usize>(txs: &[Sender<u64>; C], n: u64, variant: Variant) {
        for v in 0..n {
            let ops = || choose(array::from_fn::<_, C, _>(|i| txs[i].send_op(v)));
            let sent = match variant {
                Variant::Blocking => ops().perform(),
                Variant::Else => loop {
                    if let Ok(sent) = ops().try_perform() {
                        break sent;
                    }
                    thread::yield_now();
                },
            };
            assert!(sent.is_ok(), "fibra: consumers gone");
        }
    }

    fn consumer<const C: usize>(rxs: &[Receiver<u64>; C], n: u64, variant: Variant) -> u64 {
        let mut sum = 0;
        for _ in 0..n {
            let ops = || choose(array::from_fn::<_, C, _>(|i| rxs[i].recv_op()));
            let got = match variant {
                Variant::Blocking => ops().perform(),
                Variant::Else => loop {
                    if let Ok(got) = ops().try_perform() {
                        break got;
                    }
                    thread::yield_now();
                },
            };
            sum += got.expect("fibra: producers gone");
        }
        sum
    }

    /// One `select-overlap` run.
    pub fn overlap(messages: u64) -> u64 {
        let half = messages / 2;
        let (a_tx, a_rx) = fibra::channel::<u64>();
        let (b_tx, b_rx) = fibra::channel::<u64>();
        let b_tx2 = b_tx.clone();
        let b_rx2 = b_rx.clone();
        thread::scope(|s| {
            let c1 = s.spawn(move || {
                let (mut a_open, mut b_open) = (true, true);
                let mut sum = 0;
                while a_open || b_open {
                    let got = if a_open && b_open {
                        choose_biased((
                            a_rx.recv_op().wrap(|r| (0, r)),
                            b_rx.recv_op().wrap(|r| (1, r)),
                        ))
                        .perform()
                    } else if a_open {
                        (0, a_rx.recv_blocking())
                    } else {
                        (1, b_rx.recv_blocking())
                    };
                    match got {
                        (_, Ok(v)) => sum += v,
                        (0, Err(_)) => a_open = false,
                        (_, Err(_)) => b_open = false,
                    }
                }
                sum
            });
            let c2 = s.spawn(move || {
                let mut sum = 0;
                while let Ok(v) = b_rx2.recv_blocking() {
                    sum += v;
                }
                sum
            });
            s.spawn(move || {
                for v in 0..half {
                    let sent = choose_biased((a_tx.send_op(v), b_tx.send_op(v))).perform();
                    assert!(sent.is_ok(), "fibra: consumers gone");
                }
            });
            s.spawn(move || {
                for v in half..messages {
                    assert!(b_tx2.send_blocking(v).is_ok(), "fibra: consumers gone");
                }
            });
            c1.join().expect("C1 panicked") + c2.join().expect("C2 panicked")
        })
    }
}

/// tokio's `select!` over its mpsc channels.
mod tokio_peer {
    use tokio::sync::mpsc::error::{SendError, TryRecvError, TrySendError};
    use tokio::sync::mpsc::{Receiver, Sender, channel};

    use super::{Shape, Variant, bad_clauses};
    use crate::exec::tokio_join_sum;

    /// `tokio::select!` sending `$v` on whichever of `$txs[$i]` has room
    /// first.
    macro_rules! send_any {
        ($txs:expr, $v:expr; $($i:tt)+) => {
            tokio::select! { $( r = $txs[$i].send($v) => r, )+ }
        };
    }

    /// `tokio::select!` receiving from whichever of `$rx` has a value first.
    macro_rules! recv_any {
        ($($rx:ident)+) => {
            tokio::select! { $( v = $rx.recv() => v, )+ }
        };
    }

    /// Sends `v` over one of `txs` (2, 4 or 8 of them).
    async fn send(txs: &[Sender<u64>], v: u64) -> Result<(), SendError<u64>> {
        match txs.len() {
            2 => send_any!(txs, v; 0 1),
            4 => send_any!(txs, v; 0 1 2 3),
            8 => send_any!(txs, v; 0 1 2 3 4 5 6 7),
            other => bad_clauses(other),
        }
    }

    /// Receives from one of `rxs` (2, 4 or 8 of them).
    async fn recv(rxs: &mut [Receiver<u64>]) -> Option<u64> {
        match rxs {
            [a, b] => recv_any!(a b),
            [a, b, c, d] => recv_any!(a b c d),
            [a, b, c, d, e, f, g, h] => recv_any!(a b c d e f g h),
            other => bad_clauses(other.len()),
        }
    }

    /// One `select-channels` run (one consumer: mpsc has one receiver).
    pub async fn select(shape: Shape) -> u64 {
        assert_eq!(shape.consumers, 1, "tokio: one consumer only");
        let capacity = shape.variant.capacity().max(1);
        let (txs, mut rxs): (Vec<_>, Vec<_>) =
            (0..shape.clauses).map(|_| channel(capacity)).unzip();
        let variant = shape.variant;
        let n = shape.per_consumer();
        let mut handles = vec![tokio::spawn(async move {
            let mut sum = 0;
            let mut start = 0;
            for _ in 0..n {
                let got = match variant {
                    Variant::Blocking => recv(&mut rxs).await,
                    Variant::Else => loop {
                        if let Some(got) = try_recv(&mut rxs, &mut start) {
                            break got;
                        }
                        tokio::task::yield_now().await;
                    },
                };
                sum += got.expect("tokio: producers gone");
            }
            sum
        })];
        for _ in 0..shape.producers {
            let txs = txs.clone();
            let n = shape.per_producer();
            handles.push(tokio::spawn(async move {
                let mut start = 0;
                for v in 0..n {
                    match variant {
                        Variant::Blocking => {
                            assert!(send(&txs, v).await.is_ok(), "tokio: consumer gone");
                        }
                        Variant::Else => {
                            while !try_send(&txs, v, &mut start) {
                                tokio::task::yield_now().await;
                            }
                        }
                    }
                }
                0
            }));
        }
        // The senders stay open until the consumer is done (see fibra's).
        let sum = tokio_join_sum(handles).await;
        drop(txs);
        sum
    }

    /// A non-blocking send of `v` over one of `txs`, trying them in turn
    /// from `*start` (which moves on by one per attempt, for fairness).
    fn try_send(txs: &[Sender<u64>], v: u64, start: &mut usize) -> bool {
        let c = txs.len();
        *start = (*start + 1) % c;
        for k in 0..c {
            match txs[(*start + k) % c].try_send(v) {
                Ok(()) => return true,
                Err(TrySendError::Full(_)) => {}
                Err(TrySendError::Closed(_)) => panic!("tokio: consumer gone"),
            }
        }
        false
    }

    /// A non-blocking receive from one of `rxs`, like [`try_send`]:
    /// `Some(None)` when the channels are closed.
    fn try_recv(rxs: &mut [Receiver<u64>], start: &mut usize) -> Option<Option<u64>> {
        let c = rxs.len();
        *start = (*start + 1) % c;
        for k in 0..c {
            match rxs[(*start + k) % c].try_recv() {
                Ok(v) => return Some(Some(v)),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => return Some(None),
            }
        }
        None
    }
}

/// crossbeam-channel's `Select` on OS threads.
mod crossbeam_peer {
    use std::thread;

    use crossbeam_channel::{Receiver, Select, SelectedOperation, Sender, bounded};

    use super::{Shape, Variant};

    /// `sel.select()`, or `sel.try_select()` retried after a yield.
    fn ready<'a>(sel: &mut Select<'a>, variant: Variant) -> SelectedOperation<'a> {
        match variant {
            Variant::Blocking => sel.select(),
            Variant::Else => loop {
                if let Ok(oper) = sel.try_select() {
                    break oper;
                }
                thread::yield_now();
            },
        }
    }

    /// One `select-channels` run.
    pub fn select(shape: Shape) -> u64 {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..shape.clauses)
            .map(|_| bounded::<u64>(shape.variant.capacity()))
            .unzip();
        let variant = shape.variant;
        thread::scope(|s| {
            let consumers: Vec<_> = (0..shape.consumers)
                .map(|_| s.spawn(|| consumer(&rxs, shape.per_consumer(), variant)))
                .collect();
            for _ in 0..shape.producers {
                s.spawn(|| producer(&txs, shape.per_producer(), variant));
            }
            consumers
                .into_iter()
                .map(|c| c.join().expect("consumer thread panicked"))
                .sum()
        })
    }

    fn producer(txs: &[Sender<u64>], n: u64, variant: Variant) {
        let mut sel = Select::new();
        for tx in txs {
            sel.send(tx);
        }
        for v in 0..n {
            let oper = ready(&mut sel, variant);
            let i = oper.index();
            assert!(oper.send(&txs[i], v).is_ok(), "crossbeam: consumers gone");
        }
    }

    fn consumer(rxs: &[Receiver<u64>], n: u64, variant: Variant) -> u64 {
        let mut sel = Select::new();
        for rx in rxs {
            sel.recv(rx);
        }
        let mut sum = 0;
        for _ in 0..n {
            let oper = ready(&mut sel, variant);
            let i = oper.index();
            sum += oper.recv(&rxs[i]).expect("crossbeam: producers gone");
        }
        sum
    }

    /// One `select-overlap` run.
    pub fn overlap(messages: u64) -> u64 {
        let half = messages / 2;
        let (a_tx, a_rx) = bounded::<u64>(0);
        let (b_tx, b_rx) = bounded::<u64>(0);
        let b_tx2 = b_tx.clone();
        let b_rx2 = b_rx.clone();
        thread::scope(|s| {
            let c1 = s.spawn(move || {
                let rxs = [a_rx, b_rx];
                let mut sel = Select::new_biased();
                for rx in &rxs {
                    sel.recv(rx);
                }
                let mut open = 2;
                let mut sum = 0;
                while open > 0 {
                    let oper = sel.select();
                    let i = oper.index();
                    match oper.recv(&rxs[i]) {
                        Ok(v) => sum += v,
                        Err(_) => {
                            sel.remove(i);
                            open -= 1;
                        }
                    }
                }
                sum
            });
            let c2 = s.spawn(move || b_rx2.iter().sum::<u64>());
            s.spawn(move || {
                let txs = [a_tx, b_tx];
                let mut sel = Select::new_biased();
                for tx in &txs {
                    sel.send(tx);
                }
                for v in 0..half {
                    let oper = sel.select();
                    let i = oper.index();
                    assert!(oper.send(&txs[i], v).is_ok(), "crossbeam: consumers gone");
                }
            });
            s.spawn(move || {
                for v in half..messages {
                    assert!(b_tx2.send(v).is_ok(), "crossbeam: consumers gone");
                }
            });
            c1.join().expect("C1 panicked") + c2.join().expect("C2 panicked")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(messages: u64, consumers: u64) -> impl Iterator<Item = Shape> {
        [Variant::Blocking, Variant::Else]
            .into_iter()
            .flat_map(move |variant| {
                [2, 4, 8].into_iter().map(move |clauses| Shape {
                    clauses,
                    variant,
                    producers: consumers,
                    consumers,
                    messages,
                })
            })
    }

    #[test]
    fn thread_rows_return_the_expected_results() {
        for sides in [1, 2] {
            for shape in shapes(600, sides) {
                assert_eq!(fibra_threads::select(shape), shape.expected(), "{shape:?}");
                assert_eq!(crossbeam_peer::select(shape), shape.expected(), "{shape:?}");
            }
        }
        assert_eq!(fibra_threads::overlap(600), 600 * 599 / 2);
        assert_eq!(crossbeam_peer::overlap(600), 600 * 599 / 2);
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
        for shape in shapes(600, 1) {
            for rt in [&ct, &mt] {
                assert_eq!(
                    rt.block_on(tokio_peer::select(shape)),
                    shape.expected(),
                    "{shape:?}"
                );
            }
        }
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_rows_return_the_expected_results() {
        use crate::exec::FibraFlavour;
        for flavour in [FibraFlavour::CurrentThread, FibraFlavour::Multi(Some(2))] {
            let rt = flavour.build();
            for sides in [1, 2] {
                for shape in shapes(600, sides) {
                    assert_eq!(
                        rt.block_on(fibra_tasks::select(shape)),
                        shape.expected(),
                        "{shape:?} on {flavour:?}"
                    );
                }
            }
            assert_eq!(rt.block_on(fibra_tasks::overlap(600)), 600 * 599 / 2);
        }
    }

    #[test]
    fn rows_and_params() {
        let cases = cases(&Config::default());
        let select: Vec<&Case> = cases
            .iter()
            .filter(|c| c.spec.workload == "select-channels")
            .collect();
        // 6 parameter sets x fibra, fibra-ct, fibra-threads, tokio-ct,
        // tokio-mt, crossbeam, go.
        assert_eq!(select.len(), 6 * 7);
        for case in &select {
            assert_eq!(case.spec.group, "cforall");
            let names: Vec<&str> = case.spec.params.iter().map(|(n, _)| *n).collect();
            assert_eq!(
                names,
                [
                    "clauses",
                    "variant",
                    "producers",
                    "consumers",
                    "messages",
                    "capacity"
                ]
            );
            assert_eq!(
                case.system.is_fibra(),
                case.note == Some(FIBRA_NOTE),
                "{}",
                case.label()
            );
        }
        let overlap: Vec<System> = cases
            .iter()
            .filter(|c| c.spec.workload == "select-overlap")
            .map(|c| c.system)
            .collect();
        assert_eq!(
            overlap,
            [
                System::Fibra,
                System::FibraCt,
                System::FibraThreads,
                System::Crossbeam,
                System::Go
            ]
        );
    }
}
