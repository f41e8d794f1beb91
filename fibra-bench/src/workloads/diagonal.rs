//! `fibers/diagonal` (Fibers): the length of the diagonal of a
//! `dimensions`-dimensional box (D = 10, 100), `repeats` times. For every
//! repeat a collector task spawns one task per dimension, which squares its
//! side and sends the square on a shared rendezvous channel; the collector
//! receives the D squares, sums them and takes the square root. Sides are
//! small integers that vary with the repeat and the dimension (see
//! [`side`]), so every sum is exact; the result is the sum over the
//! repeats of the roots, truncated to integers (IEEE square roots agree in
//! Rust and Go). Ops: tasks spawned (`dimensions * repeats`).
//!
//! The dimension tasks are detached (never joined), like goroutines; the
//! collector knows they are done when it has their squares. The Fibers post
//! gives no repeat count; this suite spawns 250,000 tasks per run.

use crate::case::{Case, Params, Spec};
use crate::exec::fibra_rows;
use crate::workloads::Config;
use crate::workloads::spsc::TOKIO_NOTE;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// `(dimensions, repeats in a full run, repeats with --quick)`.
const SIZES: [(u64, u64, u64); 2] = [(10, 25_000, 100), (100, 2_500, 10)];

/// The side of dimension `dim` in repeat `repeat`: 1 to 100. The Go peer
/// (`go/diagonal.go`) uses the same formula.
pub fn side(repeat: u64, dim: u64) -> u64 {
    1 + (repeat * 31 + dim * 7) % 100
}

/// The square root of `sum_of_squares`, truncated (as the collectors do it).
fn root(sum_of_squares: u64) -> u64 {
    (sum_of_squares as f64).sqrt() as u64
}

/// What a correct run returns, computed without tasks.
pub fn expected(dimensions: u64, repeats: u64) -> u64 {
    (0..repeats)
        .map(|r| root((0..dimensions).map(|d| side(r, d).pow(2)).sum()))
        .sum()
}

/// The rows: every system for every dimension count.
pub fn cases(config: &Config) -> Vec<Case> {
    SIZES
        .into_iter()
        .flat_map(|(dimensions, full, quick)| {
            let repeats = config.size(full, quick);
            let spec = Spec {
                group: "fibers",
                workload: "diagonal",
                params: Params::new()
                    .with("dimensions", dimensions)
                    .with("repeats", repeats),
                ops: dimensions * repeats,
                expected: expected(dimensions, repeats),
            };
            task_rows(
                &spec,
                fibra_rows!(&spec, config, move || fibra_diagonal(dimensions, repeats)),
                move || tokio_diagonal(dimensions, repeats),
                PeerNotes {
                    tokio_capacity_one: Some(TOKIO_NOTE),
                    erlang: None,
                },
            )
        })
        .collect()
}

/// tokio: the collector is a task; squares travel over `mpsc::channel(1)`.
async fn tokio_diagonal(dimensions: u64, repeats: u64) -> u64 {
    use tokio::sync::mpsc;
    let collector = tokio::spawn(async move {
        let (tx, mut rx) = mpsc::channel::<u64>(1);
        let mut total = 0;
        for r in 0..repeats {
            for d in 0..dimensions {
                let tx = tx.clone();
                let side = side(r, d);
                // Detached: the collector's receive is the join.
                drop(tokio::spawn(async move {
                    assert!(tx.send(side * side).await.is_ok(), "tokio: collector gone");
                }));
            }
            let mut sum = 0;
            for _ in 0..dimensions {
                sum += rx.recv().await.expect("tokio: senders gone");
            }
            total += root(sum);
        }
        total
    });
    collector.await.expect("tokio collector failed")
}

/// fibra: the collector is a task; squares travel over a rendezvous channel.
#[cfg(feature = "fibra-rt")]
async fn fibra_diagonal(dimensions: u64, repeats: u64) -> u64 {
    let collector = fibra::spawn(async move {
        let (tx, rx) = fibra::channel::<u64>();
        let mut total = 0;
        for r in 0..repeats {
            for d in 0..dimensions {
                let tx = tx.clone();
                let side = side(r, d);
                // Detached: the collector's receive is the join.
                drop(fibra::spawn(async move {
                    assert!(tx.send(side * side).await.is_ok(), "fibra: collector gone");
                }));
            }
            let mut sum = 0;
            for _ in 0..dimensions {
                sum += rx.recv().await.expect("fibra: senders gone");
            }
            total += root(sum);
        }
        total
    });
    collector.await.expect("fibra collector failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_by_hand() {
        // Repeat 0 of 2 dimensions: sides 1 and 8, sqrt(65) = 8.06.
        assert_eq!((side(0, 0), side(0, 1)), (1, 8));
        assert_eq!(expected(2, 1), 8);
        // Repeat 1: sides 32 and 39, sqrt(2545) = 50.4.
        assert_eq!(expected(2, 2), 8 + 50);
    }

    #[test]
    fn tokio_diagonal_is_right() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_diagonal(10, 50)), expected(10, 50));
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_diagonal_is_right() {
        let rt = fibra::Runtime::builder().current_thread().build().unwrap();
        assert_eq!(rt.block_on(fibra_diagonal(10, 50)), expected(10, 50));
    }
}
