//! `parasites/async-send` (the paper's Table 1: `sendEvt` 1, `aSendEvt` on
//! host threads 4.96, on parasites 1.05): one producer sends `0..messages`
//! to one consumer over a rendezvous channel; the consumer sums what it
//! receives. Result: the sum. Ops: messages.
//!
//! Two variants, each its own set of rows (`variant` parameter):
//! * `sync`: the producer sends and waits for the consumer to take each
//!   value (`tx.send(v).await`; Go `ch <- v` on an unbuffered channel;
//!   tokio `send().await` on `mpsc::channel(1)`, tokio having no
//!   rendezvous channel).
//! * `async`: the producer never waits: each send is carried by a new
//!   computation that waits for the consumer in its place. fibra's `fibra`,
//!   `fibra-1`, `fibra-ct` rows carry it on a task (`fibra::spawn(async
//!   move { tx.send(v).await })`), `fibra-parasite` on a parasite
//!   (`fibra::spawn_eager`), `fibra-send-async` uses the channel's own
//!   asynchronous send (`drop(tx.send_async(v))`: the value waits in the
//!   channel's buffer beyond its capacity, no task); Go `go func() { ch <- v }()`;
//!   tokio `tokio::spawn(async move { tx.send(v).await })`. Values carried
//!   by tasks or goroutines may arrive out of order (the sum does not care).
//!
//! The paper's figure is an async row's time over the `sync` row's of the
//! same system.

use super::GROUP;
#[cfg(feature = "fibra-rt")]
use super::start::{AsParasite, AsTask, Start};
use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_row, fibra_rows, tokio_join_sum};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::spsc::TOKIO_NOTE;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// The two variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Sync,
    Async,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Async => "async",
        }
    }
}

/// The rows: every system for both variants.
pub fn cases(config: &Config) -> Vec<Case> {
    let messages = config.size(200_000, 2_000);
    [Variant::Sync, Variant::Async]
        .into_iter()
        .flat_map(|variant| {
            let spec = Spec {
                group: GROUP,
                workload: "async-send",
                params: Params::new()
                    .with("messages", messages)
                    .with("variant", variant.name()),
                ops: messages,
                expected: messages * messages.saturating_sub(1) / 2,
            };
            let fibra = match variant {
                Variant::Sync => fibra_rows!(&spec, config, move || fibra_sync(messages)),
                Variant::Async => {
                    let mut rows =
                        fibra_rows!(&spec, config, move || fibra_async(AsTask, messages));
                    rows.push(fibra_row!(
                        &spec,
                        config,
                        System::FibraParasite,
                        move || { fibra_async(AsParasite, messages) }
                    ));
                    rows.push(fibra_row!(
                        &spec,
                        config,
                        System::FibraSendAsync,
                        move || { fibra_send_async(messages) }
                    ));
                    rows
                }
            };
            task_rows(
                &spec,
                fibra,
                move || tokio_send(variant, messages),
                PeerNotes {
                    tokio_capacity_one: Some(TOKIO_NOTE),
                    erlang: None,
                },
            )
        })
        .collect()
}

/// The consumer's loop: receives `messages` values and sums them.
#[cfg(feature = "fibra-rt")]
async fn fibra_consume(rx: fibra::Receiver<u64>, messages: u64) -> u64 {
    let mut sum = 0;
    for _ in 0..messages {
        sum += rx.recv().await.expect("fibra: producer gone");
    }
    sum
}

/// fibra, `sync`: the producer waits for every send.
#[cfg(feature = "fibra-rt")]
async fn fibra_sync(messages: u64) -> u64 {
    let (tx, rx) = fibra::channel::<u64>();
    let consumer = fibra::spawn(fibra_consume(rx, messages));
    let producer = fibra::spawn(async move {
        for i in 0..messages {
            tx.send(i).await.expect("fibra: consumer gone");
        }
        0
    });
    crate::exec::fibra_join_sum([consumer, producer]).await
}

/// fibra, `async`: every send carried by a computation started as `start`
/// says, never joined (the consumer's sum is the check).
#[cfg(feature = "fibra-rt")]
async fn fibra_async(start: impl Start, messages: u64) -> u64 {
    let (tx, rx) = fibra::channel::<u64>();
    let consumer = fibra::spawn(fibra_consume(rx, messages));
    let producer = fibra::spawn(async move {
        for i in 0..messages {
            let tx = tx.clone();
            drop(start.start(async move {
                tx.send(i).await.expect("fibra: consumer gone");
            }));
        }
        0
    });
    crate::exec::fibra_join_sum([consumer, producer]).await
}

/// fibra, `async` with the channel's own asynchronous send, its receipts
/// dropped (the consumer's sum is the check).
#[cfg(feature = "fibra-rt")]
async fn fibra_send_async(messages: u64) -> u64 {
    let (tx, rx) = fibra::channel::<u64>();
    let consumer = fibra::spawn(fibra_consume(rx, messages));
    let producer = fibra::spawn(async move {
        for i in 0..messages {
            drop(tx.send_async(i));
        }
        0
    });
    crate::exec::fibra_join_sum([consumer, producer]).await
}

/// tokio: `mpsc::channel(1)`; `async` carries every send on a task.
async fn tokio_send(variant: Variant, messages: u64) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(1);
    let consumer = tokio::spawn(async move {
        let mut sum = 0;
        for _ in 0..messages {
            sum += rx.recv().await.expect("tokio: producer gone");
        }
        sum
    });
    let producer = tokio::spawn(async move {
        for i in 0..messages {
            match variant {
                Variant::Sync => tx.send(i).await.expect("tokio: consumer gone"),
                Variant::Async => {
                    let tx = tx.clone();
                    drop(tokio::spawn(async move {
                        tx.send(i).await.expect("tokio: consumer gone");
                    }));
                }
            }
        }
        0
    });
    tokio_join_sum([consumer, producer]).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::parasites::start::for_each_start;

    const SUM: u64 = 1000 * 999 / 2;

    #[test]
    fn tokio_sums_both_variants() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for variant in [Variant::Sync, Variant::Async] {
            assert_eq!(rt.block_on(tokio_send(variant, 1000)), SUM);
        }
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sums_both_variants() {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        assert_eq!(rt.block_on(fibra_sync(1000)), SUM);
        for_each_start!(start => {
            assert_eq!(rt.block_on(fibra_async(start, 1000)), SUM);
        });
        assert_eq!(rt.block_on(fibra_send_async(1000)), SUM);
    }

    #[test]
    fn each_variant_has_its_rows() {
        let cases = cases(&Config::default());
        for variant in ["sync", "async"] {
            let systems: Vec<System> = cases
                .iter()
                .filter(|c| c.spec.params.iter().any(|(_, v)| v.to_string() == variant))
                .map(|c| c.system)
                .collect();
            assert!(systems.contains(&System::Fibra), "{variant}");
            assert!(systems.contains(&System::Go), "{variant}");
        }
    }
}
