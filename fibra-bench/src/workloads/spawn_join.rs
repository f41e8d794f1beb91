//! `general/spawn-join`: a root task spawns `tasks` trivial tasks (task `i`
//! returns `i`), then joins them all in spawn order and sums what they
//! return. Result: the sum. Ops: tasks.
//!
//! Go has no join handles: its goroutines store their value in a slice and
//! a `sync.WaitGroup` is the join. Nor has Erlang (each process sends its
//! value to the root, which receives them in any order) or Racket (each
//! thread stores its value in a vector; `thread-wait` in spawn order).
//!
//! docs/benchmarks.md says 1M tasks; a full run uses 200,000 (see [`NOTE`]).

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{fibra_rows, tokio_join_sum};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// Why the task count is not docs/benchmarks.md's (a macro, so that the peers'
/// notes can repeat it).
macro_rules! scaled_note {
    () => {
        "spawn-join: scaled down from 1M tasks (docs/benchmarks.md) to 200k, \
         so that a run stays under ~1 s on this 2-core machine"
    };
}
const NOTE: &str = scaled_note!();
/// The Erlang row's note.
const ERLANG_NOTE: &str = concat!(
    scaled_note!(),
    "; erlang: spawn (no link), each process sends its value to the root, which receives \
     them in any order (no join handles)"
);
/// The Racket row's note.
const RACKET_NOTE: &str = concat!(
    scaled_note!(),
    "; racket: green threads on one OS thread; each stores its value in a vector, then \
     thread-wait on each in spawn order (threads return no value)"
);

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let tasks = config.size(200_000, 10_000);
    let spec = Spec {
        group: "general",
        workload: "spawn-join",
        params: Params::new().with("tasks", tasks),
        ops: tasks,
        expected: tasks * tasks.saturating_sub(1) / 2,
    };
    // No channels, so no capacity note; Erlang and Racket have notes of
    // their own (below).
    let rows = task_rows(
        &spec,
        fibra_rows!(&spec, config, move || fibra_spawn_join(tasks)),
        move || tokio_spawn_join(tasks),
        PeerNotes::default(),
    );
    let mut rows: Vec<Case> = rows.into_iter().map(|case| case.with_note(NOTE)).collect();
    rows.extend([
        spec.on(System::Erlang, Runner::erlang("spawn-join"))
            .with_note(ERLANG_NOTE),
        spec.on(System::Racket, Runner::racket("spawn-join"))
            .with_note(RACKET_NOTE),
    ]);
    rows
}

/// tokio: spawned from a root task (on a worker, like Go's main goroutine).
async fn tokio_spawn_join(tasks: u64) -> u64 {
    let root = tokio::spawn(async move {
        let handles: Vec<_> = (0..tasks).map(|i| tokio::spawn(async move { i })).collect();
        tokio_join_sum(handles).await
    });
    root.await.expect("tokio root task failed")
}

/// fibra: spawned from a root task.
#[cfg(feature = "fibra-rt")]
async fn fibra_spawn_join(tasks: u64) -> u64 {
    let root = fibra::spawn(async move {
        let handles: Vec<_> = (0..tasks).map(|i| fibra::spawn(async move { i })).collect();
        crate::exec::fibra_join_sum(handles).await
    });
    root.await.expect("fibra root task failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokio_sums_what_the_tasks_return() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_spawn_join(1000)), 499_500);
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sums_what_the_tasks_return() {
        let rt = fibra::Runtime::builder().current_thread().build().unwrap();
        assert_eq!(rt.block_on(fibra_spawn_join(1000)), 499_500);
    }
}
