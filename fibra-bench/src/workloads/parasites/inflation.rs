//! `parasites/inflation` (the paper's section 5.3, Figure 9: long-running
//! parasites, without inflation, "offer no parallelism and hence do not
//! scale"; with inflation they "perform identically to host threads"): a
//! root task starts `tasks` long tight loops (loop `i` steps a linear
//! congruential generator `iterations` times from `i`), then joins them
//! and sums the top halves of their last values. Result: the sum. Ops: loop
//! iterations, all loops together.
//!
//! A Rust future cannot be preempted: the fibra and tokio loops yield every
//! `yield_every` iterations (`fibra::yield_now`, `tokio::task::yield_now`),
//! which is what lets a runtime move them and a parasite be inflated. Go's
//! loops do not yield (Go preempts goroutines). The speedup on all workers
//! is `fibra-1`'s time (tasks on one worker) over a row's time on the same
//! machine.

#[cfg(feature = "fibra-rt")]
use super::start::{AsParasite, AsTask, Start};
use super::{GROUP, lcg_jump, lcg_steps};
use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_row, fibra_rows, tokio_join_sum};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// Iterations between two yields.
const YIELD_EVERY: u64 = 10_000;

/// How the Go row runs its loops.
const GO_NOTE: &str = "inflation: go's loops do not yield (Go preempts goroutines)";

/// What loop `i` contributes to the result.
fn value(last: u64) -> u64 {
    last >> 32
}

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let tasks = config.size(32, 8);
    let iterations = config.size(4_000_000, 100_000);
    let spec = Spec {
        group: GROUP,
        workload: "inflation",
        params: Params::new()
            .with("tasks", tasks)
            .with("iterations", iterations)
            .with("yield_every", YIELD_EVERY),
        ops: tasks * iterations,
        expected: (0..tasks).map(|i| value(lcg_jump(i, iterations))).sum(),
    };
    let mut fibra = fibra_rows!(&spec, config, move || {
        fibra_loops(AsTask, tasks, iterations)
    });
    fibra.push(fibra_row!(
        &spec,
        config,
        System::FibraParasite,
        move || { fibra_loops(AsParasite, tasks, iterations) }
    ));
    fibra.push(fibra_row!(
        &spec,
        config,
        System::FibraParasiteNoInflation,
        MultiNoInflation,
        move || fibra_loops(AsParasite, tasks, iterations)
    ));
    task_rows(
        &spec,
        fibra,
        move || tokio_loops(tasks, iterations),
        PeerNotes::default(),
    )
    .into_iter()
    .map(|case| match case.system {
        System::Go => case.with_note(GO_NOTE),
        _ => case,
    })
    .collect()
}

/// fibra: loop `i`, yielding every [`YIELD_EVERY`] iterations.
#[cfg(feature = "fibra-rt")]
async fn fibra_loop(i: u64, iterations: u64) -> u64 {
    let (mut x, mut left) = (i, iterations);
    while left > 0 {
        let n = left.min(YIELD_EVERY);
        x = lcg_steps(x, n);
        left -= n;
        fibra::yield_now().await;
    }
    value(x)
}

/// fibra: the loops started from a root task as `start` says.
#[cfg(feature = "fibra-rt")]
async fn fibra_loops(start: impl Start, tasks: u64, iterations: u64) -> u64 {
    let root = fibra::spawn(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|i| start.start(fibra_loop(i, iterations)))
            .collect();
        crate::exec::fibra_join_sum(handles).await
    });
    root.await.expect("fibra root task failed")
}

/// tokio: the loops as tasks spawned from a root task.
async fn tokio_loops(tasks: u64, iterations: u64) -> u64 {
    let root = tokio::spawn(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                tokio::spawn(async move {
                    let (mut x, mut left) = (i, iterations);
                    while left > 0 {
                        let n = left.min(YIELD_EVERY);
                        x = lcg_steps(x, n);
                        left -= n;
                        tokio::task::yield_now().await;
                    }
                    value(x)
                })
            })
            .collect();
        tokio_join_sum(handles).await
    });
    root.await.expect("tokio root task failed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::parasites::start::for_each_start;

    fn expected(tasks: u64, iterations: u64) -> u64 {
        (0..tasks).map(|i| value(lcg_jump(i, iterations))).sum()
    }

    #[test]
    fn tokio_sums_the_loops() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_loops(4, 25_000)), expected(4, 25_000));
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sums_the_loops() {
        let inflating = fibra::Runtime::builder().workers(2).build().unwrap();
        let not_inflating = crate::exec::FibraFlavour::MultiNoInflation(Some(2)).build();
        for rt in [&inflating, &not_inflating] {
            for_each_start!(start => {
                assert_eq!(
                    rt.block_on(fibra_loops(start, 4, 25_000)),
                    expected(4, 25_000)
                );
            });
        }
    }
}
