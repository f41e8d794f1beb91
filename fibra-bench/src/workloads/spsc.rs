//! `general/spsc-rendezvous` and `general/spsc-bounded`: one producer sends
//! the integers `0..messages` to one consumer over a rendezvous (capacity 0)
//! or bounded (capacity 1) channel, then drops its sender; the consumer sums
//! until the channel reports closed. Result: the sum. Ops: messages.
//!
//! Every run creates its channel and its two threads or tasks; runtimes are
//! built once per row, outside the timing.

use std::future::Future;
use std::thread;

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{on_threads, on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::Config;

/// Messages per run in a full run.
const MESSAGES: u64 = 100_000;
/// Messages per run with `--quick`.
const QUICK_MESSAGES: u64 = 10_000;

/// Why tokio rows of `spsc-rendezvous` use capacity 1.
pub(super) const TOKIO_NOTE: &str =
    "tokio mpsc has no rendezvous channel (capacity must be > 0): tokio rows use capacity 1";

/// The rows of both workloads.
pub fn cases(config: &Config) -> Vec<Case> {
    let messages = if config.quick {
        QUICK_MESSAGES
    } else {
        MESSAGES
    };
    [("spsc-rendezvous", 0), ("spsc-bounded", 1)]
        .into_iter()
        .flat_map(|(workload, capacity)| {
            let spec = Spec {
                group: "general",
                workload,
                params: Params::new()
                    .with("messages", messages)
                    .with("capacity", capacity as u64),
                ops: messages,
                expected: messages * messages.saturating_sub(1) / 2,
            };
            rows(&spec, messages, capacity)
        })
        .collect()
}

/// One row per system.
fn rows(spec: &Spec, messages: u64, capacity: usize) -> Vec<Case> {
    let tokio_row = |system, runner| {
        let case = spec.on(system, runner);
        if capacity == 0 {
            case.with_note(TOKIO_NOTE).with_extra("peer_capacity", 1)
        } else {
            case
        }
    };
    vec![
        spec.on(
            System::FibraThreads,
            on_threads(move || fibra_threads(messages, capacity)),
        ),
        spec.on(
            System::Crossbeam,
            on_threads(move || crossbeam_threads(messages, capacity)),
        ),
        spec.on(
            System::FlumeThreads,
            on_threads(move || flume_threads(messages, capacity)),
        ),
        spec.on(
            System::FibraTokioCt,
            on_tokio_ct(move || fibra_tasks(messages, capacity)),
        ),
        tokio_row(System::TokioCt, on_tokio_ct(move || tokio_tasks(messages))),
        spec.on(
            System::FlumeTokioCt,
            on_tokio_ct(move || flume_tasks(messages, capacity)),
        ),
        spec.on(
            System::FibraTokioMt,
            on_tokio_mt(move || fibra_tasks(messages, capacity)),
        ),
        tokio_row(System::TokioMt, on_tokio_mt(move || tokio_tasks(messages))),
        spec.on(
            System::FlumeTokioMt,
            on_tokio_mt(move || flume_tasks(messages, capacity)),
        ),
        spec.on(System::Go, Runner::go("spsc")),
    ]
}

/// Runs the producer on a new OS thread and the consumer on this one.
fn thread_pair(producer: impl FnOnce() + Send, consumer: impl FnOnce() -> u64) -> u64 {
    thread::scope(|scope| {
        scope.spawn(producer);
        consumer()
    })
}

/// Spawns producer and consumer as tokio tasks and waits for both.
async fn task_pair(
    producer: impl Future<Output = ()> + Send + 'static,
    consumer: impl Future<Output = u64> + Send + 'static,
) -> u64 {
    let producer = tokio::spawn(producer);
    let consumer = tokio::spawn(consumer);
    producer.await.expect("producer task failed");
    consumer.await.expect("consumer task failed")
}

fn fibra_channel(capacity: usize) -> (fibra::Sender<u64>, fibra::Receiver<u64>) {
    if capacity == 0 {
        fibra::channel()
    } else {
        fibra::bounded(capacity)
    }
}

fn fibra_threads(messages: u64, capacity: usize) -> u64 {
    let (tx, rx) = fibra_channel(capacity);
    thread_pair(
        move || {
            for i in 0..messages {
                assert!(tx.send_blocking(i).is_ok(), "fibra: receiver gone");
            }
        },
        move || {
            let mut sum = 0;
            while let Ok(v) = rx.recv_blocking() {
                sum += v;
            }
            sum
        },
    )
}

async fn fibra_tasks(messages: u64, capacity: usize) -> u64 {
    let (tx, rx) = fibra_channel(capacity);
    task_pair(
        async move {
            for i in 0..messages {
                assert!(tx.send(i).await.is_ok(), "fibra: receiver gone");
            }
        },
        async move {
            let mut sum = 0;
            while let Ok(v) = rx.recv().await {
                sum += v;
            }
            sum
        },
    )
    .await
}

fn crossbeam_threads(messages: u64, capacity: usize) -> u64 {
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    thread_pair(
        move || {
            for i in 0..messages {
                assert!(tx.send(i).is_ok(), "crossbeam: receiver gone");
            }
        },
        move || rx.iter().sum(),
    )
}

fn flume_threads(messages: u64, capacity: usize) -> u64 {
    let (tx, rx) = flume::bounded(capacity);
    thread_pair(
        move || {
            for i in 0..messages {
                assert!(tx.send(i).is_ok(), "flume: receiver gone");
            }
        },
        move || rx.iter().sum(),
    )
}

async fn flume_tasks(messages: u64, capacity: usize) -> u64 {
    let (tx, rx) = flume::bounded(capacity);
    task_pair(
        async move {
            for i in 0..messages {
                assert!(tx.send_async(i).await.is_ok(), "flume: receiver gone");
            }
        },
        async move {
            let mut sum = 0;
            while let Ok(v) = rx.recv_async().await {
                sum += v;
            }
            sum
        },
    )
    .await
}

/// tokio mpsc always has capacity 1 here (it has no rendezvous channel).
async fn tokio_tasks(messages: u64) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    task_pair(
        async move {
            for i in 0..messages {
                assert!(tx.send(i).await.is_ok(), "tokio: receiver gone");
            }
        },
        async move {
            let mut sum = 0;
            while let Some(v) = rx.recv().await {
                sum += v;
            }
            sum
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u64 = 1000;
    const SUM: u64 = N * (N - 1) / 2;

    #[test]
    fn thread_peers_sum_correctly() {
        for capacity in [0, 1] {
            assert_eq!(crossbeam_threads(N, capacity), SUM);
            assert_eq!(flume_threads(N, capacity), SUM);
            assert_eq!(fibra_threads(N, capacity), SUM);
        }
    }

    #[test]
    fn task_peers_sum_correctly() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for capacity in [0, 1] {
            assert_eq!(rt.block_on(flume_tasks(N, capacity)), SUM);
            assert_eq!(rt.block_on(fibra_tasks(N, capacity)), SUM);
        }
        assert_eq!(rt.block_on(tokio_tasks(N)), SUM);
    }

    #[test]
    fn tokio_rendezvous_rows_say_they_use_capacity_1() {
        let cases = cases(&Config {
            quick: true,
            workers: None,
        });
        let tokio_rendezvous: Vec<&Case> = cases
            .iter()
            .filter(|c| c.spec.workload == "spsc-rendezvous")
            .filter(|c| matches!(c.system, System::TokioCt | System::TokioMt))
            .collect();
        assert_eq!(tokio_rendezvous.len(), 2);
        for case in tokio_rendezvous {
            assert_eq!(case.note, Some(TOKIO_NOTE));
            assert_eq!(case.extra, Params::new().with("peer_capacity", 1));
        }
    }
}
