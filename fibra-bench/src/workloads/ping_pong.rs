//! `fibers/ping-pong` (Fibers): `pairs` pairs of tasks (P = 1, 10, 100);
//! in each pair a pinger sends `i` for `i` in `0..round_trips` and waits for
//! the ponger's reply `i + 1`, over two rendezvous channels. Result: the sum
//! of all replies. Ops: round trips, all pairs together.
//!
//! Every row does the same total of round trips (250,000), split evenly
//! over the pairs; the Fibers post gives no count. Rows: fibra on its own
//! runtime, tokio (`mpsc::channel(1)` both ways; and `tokio-ct-oneshot`,
//! where each ping carries a oneshot sender for its reply, tokio's best
//! flavour of a round trip), Go, Erlang, Racket, and for one pair the
//! `floor` (see [`super::floor`]).

use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_rows, on_threads, on_tokio_ct, tokio_join_sum};
use crate::system::System;
use crate::workloads::spsc::TOKIO_NOTE;
use crate::workloads::task_rows::{PeerNotes, task_rows};
use crate::workloads::{Config, floor};

/// Pair counts.
const PAIRS: [u64; 3] = [1, 10, 100];
/// Round trips per run, all pairs together (full run, `--quick`).
const TOTAL: (u64, u64) = (250_000, 1_000);

/// How the oneshot row does its round trips.
const ONESHOT_NOTE: &str = "tokio-ct-oneshot: pings over mpsc::channel(1), each carrying a \
     oneshot sender for its reply";

/// How the Erlang rows work.
const ERLANG_NOTE: &str = "erlang: processes and asynchronous mailboxes; each ping waits for \
     its pong, so no rendezvous emulation is needed";

/// The rows: every system for every pair count.
pub fn cases(config: &Config) -> Vec<Case> {
    PAIRS
        .into_iter()
        .flat_map(|pairs| {
            let round_trips = config.size(TOTAL.0, TOTAL.1) / pairs;
            let spec = Spec {
                group: "fibers",
                workload: "ping-pong",
                params: Params::new()
                    .with("pairs", pairs)
                    .with("round_trips", round_trips),
                ops: pairs * round_trips,
                expected: pairs * round_trips * (round_trips + 1) / 2,
            };
            let mut rows = task_rows(
                &spec,
                fibra_rows!(&spec, config, move || fibra_pairs(pairs, round_trips)),
                move || tokio_pairs(pairs, round_trips),
                PeerNotes {
                    tokio_capacity_one: Some(TOKIO_NOTE),
                    erlang: Some(ERLANG_NOTE),
                },
            );
            // tokio's other flavour of a round trip, next to tokio-ct.
            let tokio_ct = rows
                .iter()
                .position(|case| case.system == System::TokioCt)
                .expect("a tokio-ct row");
            rows.insert(
                tokio_ct + 1,
                spec.on(
                    System::TokioCtOneshot,
                    on_tokio_ct(move || tokio_oneshot_pairs(pairs, round_trips)),
                )
                .with_note(ONESHOT_NOTE),
            );
            if pairs == 1 {
                rows.push(spec.on(
                    System::Floor,
                    on_threads(move || floor::ping_pong(round_trips)),
                ));
            }
            rows
        })
        .collect()
}

/// tokio: `mpsc::channel(1)` both ways.
async fn tokio_pairs(pairs: u64, round_trips: u64) -> u64 {
    use tokio::sync::mpsc;
    let mut handles = Vec::new();
    for _ in 0..pairs {
        let (ping_tx, mut ping_rx) = mpsc::channel::<u64>(1);
        let (pong_tx, mut pong_rx) = mpsc::channel::<u64>(1);
        handles.push(tokio::spawn(async move {
            while let Some(v) = ping_rx.recv().await {
                assert!(pong_tx.send(v + 1).await.is_ok(), "tokio: pinger gone");
            }
            0
        }));
        handles.push(tokio::spawn(async move {
            let mut sum = 0;
            for i in 0..round_trips {
                assert!(ping_tx.send(i).await.is_ok(), "tokio: ponger gone");
                sum += pong_rx.recv().await.expect("tokio: ponger gone");
            }
            sum
        }));
    }
    tokio_join_sum(handles).await
}

/// tokio: each ping carries the oneshot sender of its reply.
async fn tokio_oneshot_pairs(pairs: u64, round_trips: u64) -> u64 {
    use tokio::sync::{mpsc, oneshot};
    let mut handles = Vec::new();
    for _ in 0..pairs {
        let (ping_tx, mut ping_rx) = mpsc::channel::<(u64, oneshot::Sender<u64>)>(1);
        handles.push(tokio::spawn(async move {
            while let Some((v, reply)) = ping_rx.recv().await {
                assert!(reply.send(v + 1).is_ok(), "tokio: pinger gone");
            }
            0
        }));
        handles.push(tokio::spawn(async move {
            let mut sum = 0;
            for i in 0..round_trips {
                let (reply_tx, reply_rx) = oneshot::channel();
                assert!(
                    ping_tx.send((i, reply_tx)).await.is_ok(),
                    "tokio: ponger gone"
                );
                sum += reply_rx.await.expect("tokio: ponger gone");
            }
            sum
        }));
    }
    tokio_join_sum(handles).await
}

/// fibra: rendezvous channels both ways.
#[cfg(feature = "fibra-rt")]
async fn fibra_pairs(pairs: u64, round_trips: u64) -> u64 {
    let mut handles = Vec::new();
    for _ in 0..pairs {
        let (ping_tx, ping_rx) = fibra::channel::<u64>();
        let (pong_tx, pong_rx) = fibra::channel::<u64>();
        handles.push(fibra::spawn(async move {
            while let Ok(v) = ping_rx.recv().await {
                assert!(pong_tx.send(v + 1).await.is_ok(), "fibra: pinger gone");
            }
            0
        }));
        handles.push(fibra::spawn(async move {
            let mut sum = 0;
            for i in 0..round_trips {
                assert!(ping_tx.send(i).await.is_ok(), "fibra: ponger gone");
                sum += pong_rx.recv().await.expect("fibra: ponger gone");
            }
            sum
        }));
    }
    crate::exec::fibra_join_sum(handles).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUM_3_PAIRS_OF_100: u64 = 3 * 100 * 101 / 2;

    #[test]
    fn tokio_pairs_sum_correctly() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_pairs(3, 100)), SUM_3_PAIRS_OF_100);
        assert_eq!(rt.block_on(tokio_oneshot_pairs(3, 100)), SUM_3_PAIRS_OF_100);
    }

    #[test]
    fn floor_only_for_one_pair() {
        let cases = cases(&Config::default());
        let floors: Vec<&Case> = cases.iter().filter(|c| c.system == System::Floor).collect();
        assert_eq!(floors.len(), 1);
        assert_eq!(
            floors[0].spec.params,
            Params::new().with("pairs", 1).with("round_trips", 250_000)
        );
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_pairs_sum_correctly() {
        let rt = fibra::Runtime::builder().current_thread().build().unwrap();
        assert_eq!(rt.block_on(fibra_pairs(3, 100)), SUM_3_PAIRS_OF_100);
    }
}
