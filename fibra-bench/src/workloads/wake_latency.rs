//! `general/wake-latency`: how long a parked task takes to run once woken.
//! A waiter task waits `iterations` times; each time it is woken it reads
//! the clock, and the latency is that reading minus a stamp taken just
//! before the wake. Figures: `p50_us` and `p99_us` of the latencies, in
//! microseconds. Result: the wakes the waiter observed in order (for
//! `thread`: the stamp carries the right sequence number; for `timer`: it
//! did not wake before its deadline). Ops: iterations; the time is that of
//! all iterations, so ns/op is one wake's whole round.
//!
//! `waker`:
//! * `thread`: an OS thread (a goroutine for Go) pauses [`THREAD_GAP`] (so
//!   the waiter is parked and its worker has gone idle), stamps the time
//!   and sends `(sequence, stamp)` on a channel of capacity 1 (fibra:
//!   `fibra::bounded(1)`, `send_blocking`; tokio: `tokio::sync::mpsc`,
//!   `blocking_send`; Go: a buffered chan), which the waiter receives on;
//!   the waiter acknowledges on a `std::sync::mpsc` channel (Go: a chan)
//!   before the thread's next pause.
//! * `timer`: the waiter sleeps until a deadline [`TIMER_SLEEP`] ahead
//!   (fibra: `fibra::time::at`; tokio: `tokio::time::sleep_until`; Go:
//!   `time.Sleep`); the stamp is the deadline, so the latency is the
//!   lateness.
//!
//! `variant`:
//! * `idle`: nothing else runs.
//! * `busy`: a second task on the same runtime computes without yielding
//!   for [`BUSY_CHUNK`] at a time, then yields, until the waiter is done.
//!   It stops anyway after [`BUSY_CAP_PER_WAKE`] per iteration in all
//!   (five chunks: a wake that waits out a chunk or two stays under it),
//!   so a run ends however long wakes wait; wakes after that find no busy
//!   task. The waiter starts once the busy task runs. On a one-worker
//!   runtime the waiter runs only between chunks; with two workers the idle
//!   one should take it.
//!
//! The Rust rows run in child processes ([`super::timed_child`]); each
//! first does an untimed warm-up pass of a tenth of the iterations.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::FIBRA_RUNTIME_SYSTEMS;
use crate::peers::child;
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::percentiles::{Latencies, MEASURED};
use crate::workloads::timed_child::{self, ChildRuntime};

/// The workload's name, and the first argument of its child processes.
pub const WORKLOAD: &str = "wake-latency";

/// The `thread` waker's pause before each wake.
const THREAD_GAP: Duration = Duration::from_micros(200);
/// The `timer` waker's sleep.
const TIMER_SLEEP: Duration = Duration::from_millis(1);
/// How long the `busy` task computes between yields.
const BUSY_CHUNK: Duration = Duration::from_millis(2);
/// The `busy` task stops after this much time per iteration in all.
const BUSY_CAP_PER_WAKE: Duration = Duration::from_millis(10);

/// How the rows measure.
const NOTE: &str = "wake-latency: p50_us/p99_us = latency from a stamp taken just before the \
     wake to the woken task running (thread: an OS thread sends the stamp on a channel after a \
     200 us pause; timer: a 1 ms sleep, latency = lateness); busy: another task on the runtime \
     computes 2 ms between yields (stopping after 10 ms per iteration in all); time/op = one wake's round; fibra and tokio rows: every run \
     in a fresh process after an untimed warm-up pass";

/// `variant`: whether another task keeps a worker busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Idle,
    Busy,
}

/// `waker`: who wakes the waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waker {
    Thread,
    Timer,
}

impl Variant {
    const ALL: [Self; 2] = [Self::Idle, Self::Busy];

    const fn name(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Busy => "busy",
        }
    }
}

impl Waker {
    const ALL: [Self; 2] = [Self::Thread, Self::Timer];

    const fn name(self) -> &'static str {
        match self {
            Self::Thread => "thread",
            Self::Timer => "timer",
        }
    }
}

/// One row's work.
#[derive(Clone, Copy, Debug)]
struct Shape {
    variant: Variant,
    waker: Waker,
    iterations: u64,
}

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let mut rows = Vec::new();
    for variant in Variant::ALL {
        for waker in Waker::ALL {
            // An idle thread wake takes a 0.2 ms pause; a timer wake, a
            // 1 ms sleep plus the timer's resolution; a busy wake may wait
            // for busy chunks (2 ms each) too.
            let iterations = match (variant, waker) {
                (Variant::Idle, Waker::Thread) => config.size(1_000, 50),
                (Variant::Idle, Waker::Timer) => config.size(500, 50),
                (Variant::Busy, _) => config.size(300, 50),
            };
            let spec = Spec {
                group: "general",
                workload: WORKLOAD,
                params: Params::new()
                    .with("variant", variant.name())
                    .with("waker", waker.name())
                    .with("iterations", iterations),
                ops: iterations,
                expected: iterations,
            };
            let params = [variant.name(), waker.name()]
                .map(String::from)
                .into_iter()
                .chain([iterations.to_string()])
                .collect::<Vec<_>>();
            let child = |system| timed_child::runner(WORKLOAD, system, config, &params);
            rows.extend(
                FIBRA_RUNTIME_SYSTEMS
                    .into_iter()
                    .chain([System::TokioCt, System::TokioMt])
                    .map(|system| spec.on(system, child(system)))
                    .chain([spec.on(System::Go, Runner::go(WORKLOAD))])
                    .map(|case| case.with_note(NOTE).with_measured(MEASURED)),
            );
        }
    }
    rows
}

/// What one run measured.
#[derive(Debug)]
struct WakeRun {
    seconds: f64,
    /// Wakes observed in order.
    wakes: u64,
    latencies: Latencies,
}

/// A `thread` waker's message: which wake, and when it was sent.
#[derive(Clone, Copy, Debug)]
struct Stamp {
    seq: u64,
    at: Instant,
}

/// Starts the `thread` waker: `iterations` times, it pauses
/// [`THREAD_GAP`], then `send`s a fresh stamp and waits for the waiter's
/// acknowledgement on the returned sender's channel. It ends after the
/// last one, or when the waiter is gone.
fn start_waker_thread(
    iterations: u64,
    mut send: impl FnMut(Stamp) -> bool + Send + 'static,
) -> mpsc::Sender<()> {
    let (ack_tx, ack_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for seq in 0..iterations {
            std::thread::sleep(THREAD_GAP);
            if !send(Stamp {
                seq,
                at: Instant::now(),
            }) || ack_rx.recv().is_err()
            {
                return;
            }
        }
    });
    ack_tx
}

/// The `busy` task's state, shared with the waiter.
#[derive(Debug, Default)]
struct Busy {
    started: AtomicBool,
    stop: AtomicBool,
}

impl Busy {
    /// Computes for one [`BUSY_CHUNK`] unless told to stop or `cap` from
    /// `begun` has passed; whether it did.
    fn chunk(&self, begun: Instant, cap: Duration) -> bool {
        self.started.store(true, Ordering::Release);
        if self.stop.load(Ordering::Acquire) || begun.elapsed() >= cap {
            return false;
        }
        let start = Instant::now();
        while start.elapsed() < BUSY_CHUNK {
            std::hint::spin_loop();
        }
        true
    }

    /// Ends the busy task.
    fn finish(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// The `busy` task's cap for `iterations` wakes.
fn busy_cap(iterations: u64) -> Duration {
    BUSY_CAP_PER_WAKE * u32::try_from(iterations).unwrap_or(u32::MAX)
}

/// Records one wake: `latency` if the wake was the expected one.
fn record(run: &mut WakeRun, in_order: bool, latency: Duration) {
    if in_order {
        run.wakes += 1;
        run.latencies.push(latency);
    }
}

/// tokio: run it as a task.
async fn tokio_wake_latency(shape: Shape) -> WakeRun {
    let n = shape.iterations;
    let busy = Arc::new(Busy::default());
    let busy_task = (shape.variant == Variant::Busy).then(|| {
        let (busy, begun) = (busy.clone(), Instant::now());
        tokio::spawn(async move {
            while busy.chunk(begun, busy_cap(n)) {
                tokio::task::yield_now().await;
            }
        })
    });
    if busy_task.is_some() {
        while !busy.started.load(Ordering::Acquire) {
            tokio::task::yield_now().await;
        }
    }
    let mut run = WakeRun {
        seconds: 0.0,
        wakes: 0,
        latencies: Latencies::with_capacity(n as usize),
    };
    let start = Instant::now();
    match shape.waker {
        Waker::Thread => {
            let (tx, mut rx) = tokio::sync::mpsc::channel(1);
            let ack = start_waker_thread(n, move |stamp| tx.blocking_send(stamp).is_ok());
            for i in 0..n {
                let stamp: Stamp = rx.recv().await.expect("tokio: waker thread gone");
                record(&mut run, stamp.seq == i, stamp.at.elapsed());
                ack.send(()).expect("tokio: waker thread gone");
            }
        }
        Waker::Timer => {
            for _ in 0..n {
                let deadline = Instant::now() + TIMER_SLEEP;
                tokio::time::sleep_until(deadline.into()).await;
                let late = Instant::now().checked_duration_since(deadline);
                record(&mut run, late.is_some(), late.unwrap_or_default());
            }
        }
    }
    run.seconds = start.elapsed().as_secs_f64();
    if let Some(task) = busy_task {
        busy.finish();
        task.await.expect("tokio busy task failed");
    }
    run
}

/// fibra: run it as a task.
#[cfg(feature = "fibra-rt")]
async fn fibra_wake_latency(shape: Shape) -> WakeRun {
    let n = shape.iterations;
    let busy = Arc::new(Busy::default());
    let busy_task = (shape.variant == Variant::Busy).then(|| {
        let (busy, begun) = (busy.clone(), Instant::now());
        fibra::spawn(async move {
            while busy.chunk(begun, busy_cap(n)) {
                fibra::yield_now().await;
            }
        })
    });
    if busy_task.is_some() {
        while !busy.started.load(Ordering::Acquire) {
            fibra::yield_now().await;
        }
    }
    let mut run = WakeRun {
        seconds: 0.0,
        wakes: 0,
        latencies: Latencies::with_capacity(n as usize),
    };
    let start = Instant::now();
    match shape.waker {
        Waker::Thread => {
            let (tx, rx) = fibra::bounded(1);
            let ack = start_waker_thread(n, move |stamp| tx.send_blocking(stamp).is_ok());
            for i in 0..n {
                let stamp: Stamp = rx.recv().await.expect("fibra: waker thread gone");
                record(&mut run, stamp.seq == i, stamp.at.elapsed());
                ack.send(()).expect("fibra: waker thread gone");
            }
        }
        Waker::Timer => {
            for _ in 0..n {
                let deadline = Instant::now() + TIMER_SLEEP;
                fibra::time::at(deadline).await;
                let late = Instant::now().checked_duration_since(deadline);
                record(&mut run, late.is_some(), late.unwrap_or_default());
            }
        }
    }
    run.seconds = start.elapsed().as_secs_f64();
    if let Some(task) = busy_task {
        busy.finish();
        task.await.expect("fibra busy task failed");
    }
    run
}

/// A child's run: `args` are the system, the workers, the variant, the
/// waker and the iterations. Does an untimed warm-up pass of a tenth of
/// the iterations, then the run it prints.
pub fn child(args: &[String]) -> Result<String, String> {
    let [system, workers, variant, waker, iterations] = args else {
        return Err(format!(
            "expected <system> <workers> <variant> <waker> <iterations>, got {args:?}"
        ));
    };
    let shape = Shape {
        variant: Variant::ALL
            .into_iter()
            .find(|v| v.name() == variant)
            .ok_or_else(|| format!("bad variant {variant:?}"))?,
        waker: Waker::ALL
            .into_iter()
            .find(|w| w.name() == waker)
            .ok_or_else(|| format!("bad waker {waker:?}"))?,
        iterations: timed_child::parse_count("iterations", iterations)?,
    };
    let warm_up = Shape {
        iterations: (shape.iterations / 10).max(1),
        ..shape
    };
    let run = match ChildRuntime::build(system, workers)? {
        ChildRuntime::Tokio(rt) => rt.block_on(async move {
            tokio::spawn(tokio_wake_latency(warm_up))
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(tokio_wake_latency(shape))
                .await
                .map_err(|e| e.to_string())
        })?,
        #[cfg(feature = "fibra-rt")]
        ChildRuntime::Fibra(rt) => rt.block_on(async move {
            fibra::spawn(fibra_wake_latency(warm_up))
                .await
                .map_err(|e| format!("{e:?}"))?;
            fibra::spawn(fibra_wake_latency(shape))
                .await
                .map_err(|e| format!("{e:?}"))
        })?,
    };
    Ok(child::line(
        run.seconds,
        run.wakes,
        &run.latencies.figures(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child_run(system: &str, variant: &str, waker: &str) -> crate::peers::run_line::PeerRun {
        let args = [system, "default", variant, waker, "20"].map(String::from);
        crate::peers::run_line::parse_run(&child(&args).unwrap()).unwrap()
    }

    #[test]
    fn tokio_observes_every_wake() {
        for system in ["tokio-ct", "tokio-mt"] {
            for variant in ["idle", "busy"] {
                for waker in ["thread", "timer"] {
                    let run = child_run(system, variant, waker);
                    assert_eq!(run.result, 20, "{system} {variant} {waker}");
                    let p50 = run.figure("p50_us").unwrap();
                    assert!(run.figure("p99_us").unwrap() >= p50);
                }
            }
        }
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_observes_every_wake() {
        for system in ["fibra-ct", "fibra"] {
            for variant in ["idle", "busy"] {
                for waker in ["thread", "timer"] {
                    let run = child_run(system, variant, waker);
                    assert_eq!(run.result, 20, "{system} {variant} {waker}");
                }
            }
        }
    }

    #[test]
    fn bad_child_arguments_are_errors() {
        let bad = |args: [&str; 5]| child(&args.map(String::from)).is_err();
        assert!(bad(["tokio-ct", "default", "lazy", "thread", "5"]));
        assert!(bad(["tokio-ct", "default", "idle", "bell", "5"]));
        assert!(bad(["tokio-ct", "default", "idle", "thread", "x"]));
        assert!(child(&[]).is_err());
    }

    #[test]
    fn rows_cover_both_variants_and_wakers() {
        let cases = cases(&Config::default());
        assert_eq!(cases.len(), 4 * 6);
        let params: Vec<String> = cases.iter().map(|c| c.spec.params.to_string()).collect();
        assert!(params.contains(&"variant=busy waker=timer iterations=300".to_string()));
        assert!(params.contains(&"variant=idle waker=thread iterations=1000".to_string()));
        assert!(cases.iter().all(|c| c.measured == MEASURED));
    }
}
