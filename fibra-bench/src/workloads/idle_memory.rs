//! `general/idle-memory`: memory per idle task. A root task spawns `tasks`
//! tasks, each of which waits to receive one value on a channel of its own
//! (fibra: a rendezvous channel; tokio: a oneshot channel, its lightest
//! one-message primitive; Go: an unbuffered channel). Once all of them are
//! parked, the resident set size is read again: `bytes_per_task` is its
//! growth since just before the spawning, divided by `tasks`. Then the root
//! sends task `i` the value `i`, joins every task and sums what they
//! return. Result: the sum (every task released and finished). Ops: tasks;
//! the time is that of spawning, parking, releasing and joining them all.
//!
//! Every run happens in a fresh process ([`Runner::Child`]; the Go program
//! re-executes itself): memory freed by a previous run stays mapped in a
//! process, and would make the next run's growth look like zero. The
//! driver's own arrays (senders, join handles) are allocated and touched
//! before the first reading, so they are not counted. Resident memory comes
//! from `/proc/self/statm` (Linux); elsewhere the rows are skipped.
//! docs/benchmarks.md says 1M tasks; a full run uses 200,000 (see [`NOTE`]).

use std::future::{Future, poll_fn};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Instant;

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{FIBRA_RUNTIME_SYSTEMS, TOKIO_MT_WORKERS};
use crate::peers::child;
use crate::system::System;
use crate::workloads::Config;

/// The workload's name, and the first argument of its child processes.
pub const WORKLOAD: &str = "idle-memory";

/// Where resident memory is read.
const STATM: &str = "/proc/self/statm";

/// What every run reports besides its time.
const MEASURED: &[&str] = &["bytes_per_task"];

/// How the rows measure.
const NOTE: &str = "idle-memory: every run in a fresh process; bytes_per_task = growth of \
     resident memory (/proc/self/statm) with all tasks parked, per task, channel included \
     (fibra: rendezvous channel, tokio: oneshot, go: unbuffered chan); scaled down from 1M tasks \
     (docs/benchmarks.md) to 200k, so that a run stays under ~1 s on this 2-core machine";

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let tasks = config.size(200_000, 10_000);
    let spec = Spec {
        group: "general",
        workload: WORKLOAD,
        params: Params::new().with("tasks", tasks),
        ops: tasks,
        expected: tasks * tasks.saturating_sub(1) / 2,
    };
    let has_statm = Path::new(STATM).exists();
    let child = |system: System| {
        if !has_statm {
            return Runner::Unavailable("idle-memory rows: no /proc/self/statm (not Linux)");
        }
        let workers = config
            .workers
            .map_or("default".to_string(), |n| n.to_string());
        Runner::Child {
            args: vec![
                WORKLOAD.to_string(),
                system.name().to_string(),
                tasks.to_string(),
                workers,
            ],
        }
    };
    let fibra_runner = |system| {
        #[cfg(feature = "fibra-rt")]
        let runner = child(system);
        #[cfg(not(feature = "fibra-rt"))]
        let runner = {
            let _ = system;
            Runner::Unavailable(crate::exec::NO_FIBRA_RT)
        };
        runner
    };
    let go = if has_statm {
        Runner::go(WORKLOAD)
    } else {
        child(System::Go)
    };
    FIBRA_RUNTIME_SYSTEMS
        .iter()
        .map(|&system| spec.on(system, fibra_runner(system)))
        .chain([
            spec.on(System::TokioCt, child(System::TokioCt)),
            spec.on(System::TokioMt, child(System::TokioMt)),
            spec.on(System::Go, go),
        ])
        .map(|case| case.with_note(NOTE).with_measured(MEASURED))
        .collect()
}

/// A child's run: `args` are the system, the task count and the workers
/// of the `fibra` row (`default` or a number). Returns the line to print.
pub fn child(args: &[String]) -> Result<String, String> {
    let [system, tasks, workers] = args else {
        return Err(format!("expected <system> <tasks> <workers>, got {args:?}"));
    };
    let tasks: u64 = tasks
        .parse()
        .map_err(|_| format!("bad task count {tasks}"))?;
    let workers: Option<usize> = match workers.as_str() {
        "default" => None,
        n => Some(n.parse().map_err(|_| format!("bad worker count {n}"))?),
    };
    let run = match system.as_str() {
        "tokio-ct" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move { tokio::spawn(tokio_idle(tasks)).await })
                .map_err(|e| e.to_string())?
        }
        "tokio-mt" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(TOKIO_MT_WORKERS)
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move { tokio::spawn(tokio_idle(tasks)).await })
                .map_err(|e| e.to_string())?
        }
        #[cfg(feature = "fibra-rt")]
        name @ ("fibra" | "fibra-1" | "fibra-ct") => {
            let system = FIBRA_RUNTIME_SYSTEMS
                .into_iter()
                .find(|s| s.name() == name)
                .expect("a fibra runtime system");
            let flavour =
                crate::exec::FibraFlavour::of(system, workers).expect("a fibra runtime flavour");
            let rt = flavour.build();
            rt.block_on(async move { fibra::spawn(fibra_idle(tasks)).await })
                .map_err(|e| format!("{e:?}"))?
        }
        other => {
            let _ = workers;
            return Err(format!("no idle-memory child for system `{other}`"));
        }
    };
    Ok(child::line(
        run.seconds,
        run.result,
        &[("bytes_per_task", run.grown as f64 / tasks.max(1) as f64)],
    ))
}

/// What one run measured.
#[derive(Debug)]
struct IdleRun {
    /// Spawning, parking, releasing and joining all tasks.
    seconds: f64,
    /// Sum of what the tasks returned.
    result: u64,
    /// Growth of resident memory (bytes) from before the spawning to when
    /// all tasks were parked.
    grown: i64,
}

/// tokio: one oneshot channel per task. Run it as a task.
async fn tokio_idle(tasks: u64) -> IdleRun {
    use tokio::sync::oneshot;
    let n = tasks as usize;
    let mut senders: Vec<Option<oneshot::Sender<u64>>> = (0..n).map(|_| None).collect();
    let mut handles: Vec<Option<tokio::task::JoinHandle<u64>>> = (0..n).map(|_| None).collect();
    let parked = Arc::new(Latch::new(n));
    let before = resident_bytes();
    let start = Instant::now();
    for (sender, handle) in senders.iter_mut().zip(&mut handles) {
        let (tx, rx) = oneshot::channel();
        let parked = parked.clone();
        *handle = Some(tokio::spawn(async move {
            parked.arrive();
            rx.await.expect("tokio: dropped without a value")
        }));
        *sender = Some(tx);
    }
    parked.wait().await;
    let grown = resident_bytes() as i64 - before as i64;
    for (i, sender) in senders.iter_mut().enumerate() {
        let sender = sender.take().expect("a sender");
        assert!(sender.send(i as u64).is_ok(), "tokio: idle task gone");
    }
    let mut result = 0;
    for handle in &mut handles {
        result += handle
            .take()
            .expect("a handle")
            .await
            .expect("tokio task failed");
    }
    IdleRun {
        seconds: start.elapsed().as_secs_f64(),
        result,
        grown,
    }
}

/// fibra: one rendezvous channel per task. Run it as a task.
#[cfg(feature = "fibra-rt")]
async fn fibra_idle(tasks: u64) -> IdleRun {
    let n = tasks as usize;
    let mut senders: Vec<Option<fibra::Sender<u64>>> = (0..n).map(|_| None).collect();
    let mut handles: Vec<Option<fibra::JoinHandle<u64>>> = (0..n).map(|_| None).collect();
    let parked = Arc::new(Latch::new(n));
    let before = resident_bytes();
    let start = Instant::now();
    for (sender, handle) in senders.iter_mut().zip(&mut handles) {
        let (tx, rx) = fibra::channel();
        let parked = parked.clone();
        *handle = Some(fibra::spawn(async move {
            parked.arrive();
            rx.recv().await.expect("fibra: dropped without a value")
        }));
        *sender = Some(tx);
    }
    parked.wait().await;
    let grown = resident_bytes() as i64 - before as i64;
    for (i, sender) in senders.iter_mut().enumerate() {
        let sender = sender.take().expect("a sender");
        assert!(sender.send(i as u64).await.is_ok(), "fibra: idle task gone");
    }
    let mut result = 0;
    for handle in &mut handles {
        result += handle
            .take()
            .expect("a handle")
            .await
            .expect("fibra task failed");
    }
    IdleRun {
        seconds: start.elapsed().as_secs_f64(),
        result,
        grown,
    }
}

/// Counts tasks down to zero; [`Self::wait`] finishes when all arrived.
/// Works on any executor (only a `Waker`).
struct Latch {
    remaining: AtomicUsize,
    waiter: Mutex<Option<Waker>>,
}

impl Latch {
    fn new(count: usize) -> Self {
        Self {
            remaining: AtomicUsize::new(count),
            waiter: Mutex::new(None),
        }
    }

    /// One task arrived; the last one wakes the waiter.
    fn arrive(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let waiter = self.waiter.lock().expect("latch lock").take();
            if let Some(waker) = waiter {
                waker.wake();
            }
        }
    }

    /// Finishes once every task has arrived.
    fn wait(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(|cx| {
            if self.remaining.load(Ordering::Acquire) == 0 {
                return Poll::Ready(());
            }
            *self.waiter.lock().expect("latch lock") = Some(cx.waker().clone());
            if self.remaining.load(Ordering::Acquire) == 0 {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

/// Resident memory of this process, in bytes (0 where `/proc` is missing).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string(STATM).unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * page_size()
}

/// The page size (`sysconf(_SC_PAGESIZE)`); 4096 if the call fails.
fn page_size() -> u64 {
    // SAFETY: `sysconf` only reads a configuration value; any name is
    // allowed (an unknown one returns -1).
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_and_rss_are_plausible() {
        let page = page_size();
        assert!(page.is_power_of_two() && page >= 4096, "{page}");
        if Path::new(STATM).exists() {
            let rss = resident_bytes();
            assert!(rss > 1 << 20, "{rss}");
            assert_eq!(rss % page, 0);
        }
    }

    #[test]
    fn tokio_idle_tasks_all_finish() {
        for rt in [
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap(),
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .unwrap(),
        ] {
            let run = rt
                .block_on(async { tokio::spawn(tokio_idle(1000)).await })
                .unwrap();
            assert_eq!(run.result, 499_500);
            assert!(run.seconds > 0.0);
        }
    }

    #[test]
    fn child_prints_a_run_line() {
        let args = ["tokio-ct", "1000", "default"].map(String::from);
        let run = crate::peers::run_line::parse_run(&child(&args).unwrap()).unwrap();
        assert_eq!(run.result, 499_500);
        assert!(run.figure("bytes_per_task").is_some());
        assert!(child(&["go", "1", "default"].map(String::from)).is_err());
        assert!(child(&["tokio-ct".to_string()]).is_err());
    }

    #[test]
    fn rows_measure_bytes_per_task_in_fresh_processes() {
        let cases = cases(&Config::default());
        assert_eq!(cases.len(), 6);
        for case in &cases {
            assert_eq!(case.measured, MEASURED);
            if case.system == System::TokioMt && Path::new(STATM).exists() {
                let Runner::Child { args } = &case.runner else {
                    panic!("not a child row");
                };
                assert_eq!(args, &["idle-memory", "tokio-mt", "200000", "default"]);
            }
        }
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_idle_tasks_all_finish() {
        let rt = fibra::Runtime::builder().current_thread().build().unwrap();
        let run = rt
            .block_on(async { fibra::spawn(fibra_idle(1000)).await })
            .unwrap();
        assert_eq!(run.result, 499_500);
    }
}
