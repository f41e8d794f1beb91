//! `parasites/spawn-cost` (the paper's lazy thread creation, section 5.2:
//! "in the time that takes to create 1 host thread, we can create 46
//! parasites"): a root task starts `tasks` short computations that never
//! block (computation `i` returns `mix(i) >> 32`) and sums what they
//! return. `join=all`: it starts them all, then joins them in start order
//! (every handle is live at once); `join=each`: it joins each right after
//! starting it (the cost of one start and join, nothing else live). Result:
//! the sum. Ops: tasks.
//!
//! fibra's rows start them with `fibra::spawn` (`fibra`, `fibra-1`,
//! `fibra-ct`) or `fibra::spawn_eager` (`fibra-parasite`, which should run
//! each to completion inline and never touch a queue); tokio spawns tasks;
//! Go starts goroutines that store their value in a slice, joined by a
//! `sync.WaitGroup` (`all`), or that send it on an unbuffered channel the
//! root receives from at once (`each`); Go has no join handles.

use super::GROUP;
use super::mix;
#[cfg(feature = "fibra-rt")]
use super::start::{AsParasite, AsTask, Start};
use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_row, fibra_rows, tokio_join_sum};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// How the Go row joins.
const GO_NOTE: &str = "go: goroutines store their value in a slice; a sync.WaitGroup joins them";
/// How the Go row joins each goroutine at once.
const GO_EACH_NOTE: &str = "go: each goroutine sends its value on an unbuffered channel the root \
     receives from at once";

/// What computation `i` returns.
fn value(i: u64) -> u64 {
    mix(i) >> 32
}

/// When the root joins: after starting them all (`all`), or each right
/// after starting it (`each`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Join {
    All,
    Each,
}

impl Join {
    fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Each => "each",
        }
    }
}

/// The rows: every system, joining all at the end, then each at once.
pub fn cases(config: &Config) -> Vec<Case> {
    let tasks = config.size(200_000, 10_000);
    [Join::All, Join::Each]
        .into_iter()
        .flat_map(|join| {
            let spec = Spec {
                group: GROUP,
                workload: "spawn-cost",
                params: Params::new().with("tasks", tasks).with("join", join.name()),
                ops: tasks,
                expected: (0..tasks).map(value).sum(),
            };
            let mut fibra = fibra_rows!(&spec, config, move || {
                fibra_spawn_cost(AsTask, join, tasks)
            });
            fibra.push(fibra_row!(
                &spec,
                config,
                System::FibraParasite,
                move || { fibra_spawn_cost(AsParasite, join, tasks) }
            ));
            let rows = task_rows(
                &spec,
                fibra,
                move || tokio_spawn_cost(join, tasks),
                PeerNotes::default(),
            );
            rows.into_iter()
                .map(|case| match (case.system, join) {
                    (System::Go, Join::All) => case.with_note(GO_NOTE),
                    (System::Go, Join::Each) => case.with_note(GO_EACH_NOTE),
                    _ => case,
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// tokio: spawned from a root task, joined as `join` says.
async fn tokio_spawn_cost(join: Join, tasks: u64) -> u64 {
    let root = tokio::spawn(async move {
        match join {
            Join::All => {
                let handles: Vec<_> = (0..tasks)
                    .map(|i| tokio::spawn(async move { value(i) }))
                    .collect();
                tokio_join_sum(handles).await
            }
            Join::Each => {
                let mut sum = 0;
                for i in 0..tasks {
                    sum += tokio_join_sum([tokio::spawn(async move { value(i) })]).await;
                }
                sum
            }
        }
    });
    root.await.expect("tokio root task failed")
}

/// fibra: started from a root task as `start` says, joined as `join` says.
#[cfg(feature = "fibra-rt")]
async fn fibra_spawn_cost(start: impl Start, join: Join, tasks: u64) -> u64 {
    let root = fibra::spawn(async move {
        match join {
            Join::All => {
                let handles: Vec<_> = (0..tasks)
                    .map(|i| start.start(async move { value(i) }))
                    .collect();
                crate::exec::fibra_join_sum(handles).await
            }
            Join::Each => {
                let mut sum = 0;
                for i in 0..tasks {
                    sum += start
                        .start(async move { value(i) })
                        .await
                        .expect("fibra task failed");
                }
                sum
            }
        }
    });
    root.await.expect("fibra root task failed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::parasites::start::for_each_start;

    fn expected(tasks: u64) -> u64 {
        (0..tasks).map(value).sum()
    }

    #[test]
    fn tokio_sums_what_the_computations_return() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for join in [Join::All, Join::Each] {
            assert_eq!(rt.block_on(tokio_spawn_cost(join, 1000)), expected(1000));
        }
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sums_what_the_computations_return() {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        for_each_start!(start => {
            for join in [Join::All, Join::Each] {
                assert_eq!(
                    rt.block_on(fibra_spawn_cost(start, join, 1000)),
                    expected(1000)
                );
            }
        });
    }
}
