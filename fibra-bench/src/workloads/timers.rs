//! `general/timers`: `tasks` concurrent sleeps. A root task spawns `tasks`
//! tasks; task `i` takes its deadline as now plus [`sleep_ms`]`(i)` (1 to
//! 50 ms, the same seeded spread on every system), sleeps until it and
//! returns how late it woke (actual wake minus deadline). The root joins
//! them all. Result: the number of tasks that woke, none before its
//! deadline (a task woken early counts as not woken). Ops: tasks.
//!
//! Cost: the time, from the first spawn to the last join (at least the
//! longest sleep, 50 ms). Accuracy: `p50_us` and `p99_us`, percentiles of
//! the lateness over all tasks of the run, in microseconds.
//!
//! fibra: `fibra::time::at(deadline)` (its process-wide timer wheel);
//! tokio: `tokio::time::sleep_until` (the runtime's timer driver); Go:
//! `time.Sleep` in goroutines, a `sync.WaitGroup` as the join. The Rust rows
//! run in child processes ([`super::timed_child`]).

use std::time::{Duration, Instant};

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::FIBRA_RUNTIME_SYSTEMS;
use crate::peers::child;
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::percentiles::{Latencies, MEASURED};
use crate::workloads::timed_child::{self, ChildRuntime};

/// The workload's name, and the first argument of its child processes.
pub const WORKLOAD: &str = "timers";

/// The longest sleep, in milliseconds.
const MAX_SLEEP_MS: u64 = 50;

/// How the rows measure.
const NOTE: &str = "timers: each task sleeps 1-50 ms (seeded, the same on every system); \
     time = first spawn to last join; p50_us/p99_us = lateness (actual wake - deadline) \
     over all tasks; fibra and tokio rows: every run in a fresh process after an untimed \
     warm-up pass";

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let tasks = config.size(100_000, 1_000);
    let spec = Spec {
        group: "general",
        workload: WORKLOAD,
        params: Params::new().with("tasks", tasks),
        ops: tasks,
        expected: tasks,
    };
    let child = |system| timed_child::runner(WORKLOAD, system, config, &[tasks.to_string()]);
    FIBRA_RUNTIME_SYSTEMS
        .into_iter()
        .chain([System::TokioCt, System::TokioMt])
        .map(|system| spec.on(system, child(system)))
        .chain([spec.on(System::Go, Runner::go(WORKLOAD))])
        .map(|case| case.with_note(NOTE).with_measured(MEASURED))
        .collect()
}

/// Task `i`'s sleep: 1 to [`MAX_SLEEP_MS`] milliseconds, from a SplitMix64
/// hash of `i` (the Go program computes the same).
pub fn sleep_ms(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    1 + z % MAX_SLEEP_MS
}

/// What one run measured.
#[derive(Debug)]
struct TimersRun {
    seconds: f64,
    /// Tasks that woke, none early.
    woken: u64,
    lateness: Latencies,
}

/// How late a sleeper woke, `None` if early.
fn lateness(deadline: Instant) -> Option<Duration> {
    Instant::now().checked_duration_since(deadline)
}

/// The joined sleepers' lateness, gathered into a run.
fn gather(start: Instant, woke: impl IntoIterator<Item = Option<Duration>>) -> TimersRun {
    let mut lateness = Latencies::default();
    let mut woken = 0;
    for late in woke.into_iter().flatten() {
        woken += 1;
        lateness.push(late);
    }
    TimersRun {
        seconds: start.elapsed().as_secs_f64(),
        woken,
        lateness,
    }
}

/// tokio: run it as a task.
async fn tokio_timers(tasks: u64) -> TimersRun {
    let start = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_millis(sleep_ms(i));
                tokio::time::sleep_until(deadline.into()).await;
                lateness(deadline)
            })
        })
        .collect();
    let mut woke = Vec::with_capacity(handles.len());
    for handle in handles {
        woke.push(handle.await.expect("tokio sleeper failed"));
    }
    gather(start, woke)
}

/// fibra: run it as a task.
#[cfg(feature = "fibra-rt")]
async fn fibra_timers(tasks: u64) -> TimersRun {
    let start = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            fibra::spawn(async move {
                let deadline = Instant::now() + Duration::from_millis(sleep_ms(i));
                fibra::time::at(deadline).await;
                lateness(deadline)
            })
        })
        .collect();
    let mut woke = Vec::with_capacity(handles.len());
    for handle in handles {
        woke.push(handle.await.expect("fibra sleeper failed"));
    }
    gather(start, woke)
}

/// A child's run: `args` are the system, the workers and the task count.
/// Does an untimed warm-up pass, then the run it prints.
pub fn child(args: &[String]) -> Result<String, String> {
    let [system, workers, tasks] = args else {
        return Err(format!("expected <system> <workers> <tasks>, got {args:?}"));
    };
    let tasks = timed_child::parse_count("task count", tasks)?;
    let run = match ChildRuntime::build(system, workers)? {
        ChildRuntime::Tokio(rt) => rt.block_on(async move {
            tokio::spawn(tokio_timers(tasks))
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(tokio_timers(tasks))
                .await
                .map_err(|e| e.to_string())
        })?,
        #[cfg(feature = "fibra-rt")]
        ChildRuntime::Fibra(rt) => rt.block_on(async move {
            fibra::spawn(fibra_timers(tasks))
                .await
                .map_err(|e| format!("{e:?}"))?;
            fibra::spawn(fibra_timers(tasks))
                .await
                .map_err(|e| format!("{e:?}"))
        })?,
    };
    Ok(child::line(run.seconds, run.woken, &run.lateness.figures()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_are_spread_over_1_to_50_ms() {
        let sleeps: Vec<u64> = (0..10_000).map(sleep_ms).collect();
        assert!(sleeps.iter().all(|&ms| (1..=MAX_SLEEP_MS).contains(&ms)));
        assert!(sleeps.contains(&1) && sleeps.contains(&MAX_SLEEP_MS));
        // Pinned, so that the Go program's copy can be checked against it.
        assert_eq!(sleeps[..4], [36, 16, 11, 4]);
    }

    #[test]
    fn tokio_sleepers_all_wake_late_not_early() {
        let args = ["tokio-mt", "default", "200"].map(String::from);
        let run = crate::peers::run_line::parse_run(&child(&args).unwrap()).unwrap();
        assert_eq!(run.result, 200);
        assert!(run.seconds >= 0.05, "{run:?}");
        assert!(run.figure("p99_us").unwrap() >= run.figure("p50_us").unwrap());
        assert!(child(&["tokio-ct".to_string()]).is_err());
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sleepers_all_wake() {
        let args = ["fibra-ct", "default", "200"].map(String::from);
        let run = crate::peers::run_line::parse_run(&child(&args).unwrap()).unwrap();
        assert_eq!(run.result, 200);
    }

    #[test]
    fn rows_measure_lateness() {
        let cases = cases(&Config::default());
        assert_eq!(cases.len(), 6);
        assert!(cases.iter().all(|c| c.measured == MEASURED));
    }
}
