//! `parasites/choose-all` (the paper's section 5.4, Figure 10: `chooseAll`
//! with its implicit threads as parasites ran 2x faster than with host
//! threads on 2 cores): `producers` producers each send `0..messages` on a
//! private rendezvous channel; the consumer, round after round, waits for
//! one value from every producer and adds them up. Result: the sum. Ops:
//! messages, all producers together.
//!
//! fibra's rows wait for all as the paper's `chooseAll` does, with one
//! computation per channel per round, each receiving once and joined: as
//! tasks (`fibra`, `fibra-1`, `fibra-ct`) or as parasites (`fibra-parasite`;
//! a producer is usually already waiting, so the parasite's receive
//! completes inline). `fibra-choose-all` is the library's
//! `fibra::choose_all` op over the round's receive ops (its parts wait in
//! place, each a perform of its own, with no task or parasite each). Go and tokio wait for
//! all by receiving from each channel in turn (what a Go or tokio user
//! writes: a wait for all needs no concurrency of its own).

use super::GROUP;
#[cfg(feature = "fibra-rt")]
use super::start::{AsParasite, AsTask, Start};
use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_row, fibra_rows, tokio_join_sum};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// Producer counts.
const PRODUCERS: [u64; 2] = [2, 8];

/// How the peers wait for all.
const PEER_NOTE: &str = "choose-all: go and tokio receive from each producer's channel in turn \
     (tokio: mpsc::channel(1), having no rendezvous channel)";

/// The rows: every system for every producer count.
pub fn cases(config: &Config) -> Vec<Case> {
    let messages = config.size(100_000, 1_000);
    PRODUCERS
        .into_iter()
        .flat_map(|producers| {
            let spec = Spec {
                group: GROUP,
                workload: "choose-all",
                params: Params::new()
                    .with("producers", producers)
                    .with("messages", messages),
                ops: producers * messages,
                expected: producers * (messages * messages.saturating_sub(1) / 2),
            };
            let mut fibra = fibra_rows!(&spec, config, move || {
                fibra_rounds(AsTask, producers, messages)
            });
            fibra.push(fibra_row!(
                &spec,
                config,
                System::FibraParasite,
                move || { fibra_rounds(AsParasite, producers, messages) }
            ));
            fibra.push(fibra_row!(
                &spec,
                config,
                System::FibraChooseAll,
                move || { fibra_choose_all(producers, messages) }
            ));
            task_rows(
                &spec,
                fibra,
                move || tokio_in_turn(producers, messages),
                PeerNotes::default(),
            )
            .into_iter()
            .map(|case| match case.system {
                System::Go | System::TokioCt | System::TokioMt => case.with_note(PEER_NOTE),
                _ => case,
            })
            .collect::<Vec<_>>()
        })
        .collect()
}

/// fibra: the producers, each on a channel of its own; returns the
/// consumer's ends and the producers' handles.
#[cfg(feature = "fibra-rt")]
fn fibra_producers(
    producers: u64,
    messages: u64,
) -> (Vec<fibra::Receiver<u64>>, Vec<fibra::JoinHandle<u64>>) {
    (0..producers)
        .map(|_| {
            let (tx, rx) = fibra::channel::<u64>();
            let producer = fibra::spawn(async move {
                for i in 0..messages {
                    tx.send(i).await.expect("fibra: consumer gone");
                }
                0
            });
            (rx, producer)
        })
        .unzip()
}

/// fibra: every round starts one receive per channel as `start` says and
/// joins them.
#[cfg(feature = "fibra-rt")]
async fn fibra_rounds(start: impl Start, producers: u64, messages: u64) -> u64 {
    let consumer = fibra::spawn(async move {
        let (receivers, handles) = fibra_producers(producers, messages);
        let mut sum = 0;
        for _ in 0..messages {
            let parts: Vec<_> = receivers
                .iter()
                .map(|rx| {
                    let rx = rx.clone();
                    start.start(async move { rx.recv().await.expect("fibra: producer gone") })
                })
                .collect();
            sum += crate::exec::fibra_join_sum(parts).await;
        }
        sum + crate::exec::fibra_join_sum(handles).await
    });
    consumer.await.expect("fibra consumer failed")
}

/// fibra: every round is one `fibra::choose_all` over the receive ops.
#[cfg(feature = "fibra-rt")]
async fn fibra_choose_all(producers: u64, messages: u64) -> u64 {
    let consumer = fibra::spawn(async move {
        let (receivers, handles) = fibra_producers(producers, messages);
        let mut sum = 0;
        for _ in 0..messages {
            for value in fibra::choose_all(receivers.iter().map(|rx| rx.recv_op())).await {
                sum += value.expect("fibra: producer gone");
            }
        }
        sum + crate::exec::fibra_join_sum(handles).await
    });
    consumer.await.expect("fibra consumer failed")
}

/// tokio: the consumer receives from each channel in turn.
async fn tokio_in_turn(producers: u64, messages: u64) -> u64 {
    let consumer = tokio::spawn(async move {
        let (mut receivers, handles): (Vec<_>, Vec<_>) = (0..producers)
            .map(|_| {
                let (tx, rx) = tokio::sync::mpsc::channel::<u64>(1);
                let producer = tokio::spawn(async move {
                    for i in 0..messages {
                        tx.send(i).await.expect("tokio: consumer gone");
                    }
                    0
                });
                (rx, producer)
            })
            .unzip();
        let mut sum = 0;
        for _ in 0..messages {
            for rx in &mut receivers {
                sum += rx.recv().await.expect("tokio: producer gone");
            }
        }
        sum + tokio_join_sum(handles).await
    });
    consumer.await.expect("tokio consumer failed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::parasites::start::for_each_start;

    const SUM_3_OF_100: u64 = 3 * 100 * 99 / 2;

    #[test]
    fn tokio_sums_every_producer() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_in_turn(3, 100)), SUM_3_OF_100);
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sums_every_producer() {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        for_each_start!(start => {
            assert_eq!(rt.block_on(fibra_rounds(start, 3, 100)), SUM_3_OF_100);
        });
        assert_eq!(rt.block_on(fibra_choose_all(3, 100)), SUM_3_OF_100);
    }
}
