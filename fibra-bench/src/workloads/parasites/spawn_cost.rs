//! `parasites/spawn-cost` (the paper's lazy thread creation, section 5.2:
//! "in the time that takes to create 1 host thread, we can create 46
//! parasites"): a root task starts `tasks` short computations that never
//! block (computation `i` returns `mix(i) >> 32`), then joins them all in
//! start order and sums what they return. Result: the sum. Ops: tasks.
//!
//! fibra's rows start them with `fibra::spawn` (`fibra`, `fibra-1`,
//! `fibra-ct`) or `fibra::spawn_eager` (`fibra-parasite`, which should run
//! each to completion inline and never touch a queue); tokio spawns tasks;
//! Go starts goroutines that store their value in a slice, joined by a
//! `sync.WaitGroup` (Go has no join handles).

use super::GROUP;
use super::mix;
#[cfg(feature = "fibra-rt")]
use super::start::Start;
use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_row, fibra_rows, tokio_join_sum};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// How the Go row joins.
const GO_NOTE: &str = "go: goroutines store their value in a slice; a sync.WaitGroup joins them";

/// What computation `i` returns.
fn value(i: u64) -> u64 {
    mix(i) >> 32
}

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let tasks = config.size(200_000, 10_000);
    let spec = Spec {
        group: GROUP,
        workload: "spawn-cost",
        params: Params::new().with("tasks", tasks),
        ops: tasks,
        expected: (0..tasks).map(value).sum(),
    };
    let mut fibra = fibra_rows!(&spec, config, move || fibra_spawn_cost(Start::Task, tasks));
    fibra.push(fibra_row!(
        &spec,
        config,
        System::FibraParasite,
        move || { fibra_spawn_cost(Start::Parasite, tasks) }
    ));
    let rows = task_rows(
        &spec,
        fibra,
        move || tokio_spawn_cost(tasks),
        PeerNotes::default(),
    );
    rows.into_iter()
        .map(|case| match case.system {
            System::Go => case.with_note(GO_NOTE),
            _ => case,
        })
        .collect()
}

/// tokio: spawned from a root task and joined in order.
async fn tokio_spawn_cost(tasks: u64) -> u64 {
    let root = tokio::spawn(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|i| tokio::spawn(async move { value(i) }))
            .collect();
        tokio_join_sum(handles).await
    });
    root.await.expect("tokio root task failed")
}

/// fibra: started from a root task as `start` says, joined in order.
#[cfg(feature = "fibra-rt")]
async fn fibra_spawn_cost(start: Start, tasks: u64) -> u64 {
    let root = fibra::spawn(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|i| start.start(async move { value(i) }))
            .collect();
        crate::exec::fibra_join_sum(handles).await
    });
    root.await.expect("fibra root task failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(tasks: u64) -> u64 {
        (0..tasks).map(value).sum()
    }

    #[test]
    fn tokio_sums_what_the_computations_return() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_spawn_cost(1000)), expected(1000));
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sums_what_the_computations_return() {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        for start in [Start::Task, Start::Parasite] {
            assert_eq!(rt.block_on(fibra_spawn_cost(start, 1000)), expected(1000));
        }
    }
}
