//! The `channels` group: crossbeam-channel's own benchmark shapes (its
//! repository's `crossbeam-channel/benchmarks/`, which kanal's benchmarks
//! also use), with Go beside them.
//!
//! Shapes ([`Kind`]), each producer sending `0..messages / producers`:
//!
//! * `seq`: one thread (task) sends every message on one channel, then
//!   receives them all. Only at capacity N: at 0 or 1 it would deadlock.
//! * `spsc`: one producer, one consumer.
//! * `mpsc`: T producers, one consumer, one channel.
//! * `mpmc`: T producers, T consumers (each takes `messages / T`), one
//!   channel.
//! * `select-rx`: T producers, each on a channel of its own; one consumer
//!   selecting a receive over the T channels.
//! * `select-both`: T producers selecting a send over T channels, T
//!   consumers selecting a receive over them.
//!
//! Capacities ([`Capacity`]): 0 (rendezvous), 1, and N (room for every
//! message of the run: crossbeam's `bounded(MESSAGES)`); T = 2 (this
//! machine's cores) and 4 (crossbeam's and kanal's `THREADS`). Result: the
//! sum of every value received. Ops: messages.
//!
//! Systems: fibra tasks on fibra's runtime (`fibra`, `fibra-1`, `fibra-ct`;
//! [`fibra_tasks`]); tokio's `mpsc` on tasks (`tokio-ct`, `tokio-mt`,
//! where it can express the shape; [`tokio_peer`]); Go (`go/channels.go`);
//! and between OS threads, fibra's channels with blocking calls
//! (`fibra-threads`, [`fibra_threads`]), crossbeam-channel
//! ([`crossbeam_peer`]) and flume ([`flume_peer`]), the threads placed
//! as in crossbeam's benchmark ([`threads`]).
//!
//! In a full run, every Rust row runs each of its runs in a fresh process
//! ([`child`]), so its min, median and max span processes.

mod child;
mod crossbeam_peer;
mod fibra_channels;
#[cfg(feature = "fibra-rt")]
mod fibra_tasks;
mod fibra_threads;
mod flume_peer;
mod rows;
mod shape;
#[cfg(test)]
mod tests;
mod threads;
mod tokio_peer;

use crate::case::Case;
use crate::workloads::Config;
pub use child::WORKLOAD;
use shape::{Capacity, Kind, Shape};

/// Messages per run, all producers together (full run, `--quick`); a
/// multiple of every thread count.
const MESSAGES: (u64, u64) = (100_000, 2_000);
/// Producers (and consumers, channels) of the shapes that have a thread
/// count.
const THREADS: [u64; 2] = [2, 4];

/// Every parameter set, in table order: by capacity, then shape, then
/// threads.
fn shapes(config: &Config) -> Vec<Shape> {
    let messages = config.size(MESSAGES.0, MESSAGES.1);
    let mut shapes = Vec::new();
    for capacity in Capacity::ALL {
        for kind in Kind::ALL {
            if kind == Kind::Seq && capacity != Capacity::All {
                continue;
            }
            let threads: &[u64] = if kind.has_threads() { &THREADS } else { &[1] };
            for &threads in threads {
                shapes.push(Shape {
                    kind,
                    capacity,
                    threads,
                    messages,
                });
            }
        }
    }
    shapes
}

/// Every row, each run in this process.
fn in_process_rows(config: &Config) -> Vec<Case> {
    shapes(config)
        .into_iter()
        .flat_map(|shape| rows::rows(config, shape))
        .collect()
}

/// The group's rows: in a full run, the Rust ones run each run in a fresh
/// process; with `--quick` (CI, which checks that every row runs and is
/// right) a row's runs share one process, as in the other groups, which
/// keeps the group to a few seconds.
pub fn cases(config: &Config) -> Vec<Case> {
    let rows = in_process_rows(config);
    if config.quick {
        return rows;
    }
    rows.into_iter()
        .map(|case| child::per_run_process(case, config))
        .collect()
}

/// A child process's run (`args` after the workload name): see [`child`].
pub fn child(args: &[String]) -> Result<String, String> {
    child::run_child(args, in_process_rows)
}
