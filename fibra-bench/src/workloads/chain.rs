//! `fibers/chain` (Fibers): one sender task sends the integers
//! `0..messages` into a chain of `links` relay tasks (L = 0, 10, 100), each
//! forwarding every message to the next link over a rendezvous channel; one
//! receiver task sums them. When the sender is done it drops its channel
//! end, and the close ripples down the chain. Result: the sum. Ops:
//! messages (each crosses `links + 1` channels; the row's `sends` field
//! says how many sends that is in all).
//!
//! The Fibers post does not give its message count; this suite sizes each
//! row to the same number of sends (500,000).

use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_rows, tokio_join_sum};
use crate::workloads::Config;
use crate::workloads::spsc::TOKIO_NOTE;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// `(links, messages in a full run, messages with --quick)`.
const SIZES: [(u64, u64, u64); 3] = [(0, 500_000, 2_000), (10, 50_000, 500), (100, 5_000, 50)];

/// How the Erlang rows work.
const ERLANG_NOTE: &str = "erlang: mailboxes are asynchronous, so the rendezvous is \
     emulated: every process acks each message it takes and a sender waits for the ack (2 \
     messages per hop)";

/// The rows: every system for every chain length.
pub fn cases(config: &Config) -> Vec<Case> {
    SIZES
        .into_iter()
        .flat_map(|(links, full, quick)| {
            let messages = config.size(full, quick);
            let spec = Spec {
                group: "fibers",
                workload: "chain",
                params: Params::new()
                    .with("links", links)
                    .with("messages", messages),
                ops: messages,
                expected: messages * messages.saturating_sub(1) / 2,
            };
            let rows = task_rows(
                &spec,
                fibra_rows!(&spec, config, move || fibra_chain(links, messages)),
                move || tokio_chain(links, messages),
                PeerNotes {
                    tokio_capacity_one: Some(TOKIO_NOTE),
                    erlang: Some(ERLANG_NOTE),
                },
            );
            rows.into_iter()
                .map(move |case| case.with_extra("sends", messages * (links + 1)))
        })
        .collect()
}

/// tokio tasks over `mpsc::channel(1)` (tokio has no rendezvous channel).
async fn tokio_chain(links: u64, messages: u64) -> u64 {
    use tokio::sync::mpsc;
    let (first, mut last) = mpsc::channel::<u64>(1);
    let mut handles = Vec::new();
    for _ in 0..links {
        let (tx, next) = mpsc::channel(1);
        let mut rx = std::mem::replace(&mut last, next);
        handles.push(tokio::spawn(async move {
            while let Some(v) = rx.recv().await {
                assert!(tx.send(v).await.is_ok(), "tokio: next link gone");
            }
            0
        }));
    }
    handles.push(tokio::spawn(async move {
        for i in 0..messages {
            assert!(first.send(i).await.is_ok(), "tokio: chain gone");
        }
        0
    }));
    handles.push(tokio::spawn(async move {
        let mut sum = 0;
        while let Some(v) = last.recv().await {
            sum += v;
        }
        sum
    }));
    tokio_join_sum(handles).await
}

/// fibra tasks over rendezvous channels.
#[cfg(feature = "fibra-rt")]
async fn fibra_chain(links: u64, messages: u64) -> u64 {
    let (first, mut last) = fibra::channel::<u64>();
    let mut handles = Vec::new();
    for _ in 0..links {
        let (tx, next) = fibra::channel();
        let rx = std::mem::replace(&mut last, next);
        handles.push(fibra::spawn(async move {
            while let Ok(v) = rx.recv().await {
                assert!(tx.send(v).await.is_ok(), "fibra: next link gone");
            }
            0
        }));
    }
    handles.push(fibra::spawn(async move {
        for i in 0..messages {
            assert!(first.send(i).await.is_ok(), "fibra: chain gone");
        }
        0
    }));
    handles.push(fibra::spawn(async move {
        let mut sum = 0;
        while let Ok(v) = last.recv().await {
            sum += v;
        }
        sum
    }));
    crate::exec::fibra_join_sum(handles).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokio_chains_sum_correctly() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for links in [0, 1, 10] {
            assert_eq!(rt.block_on(tokio_chain(links, 100)), 4950);
        }
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_chains_sum_correctly() {
        let rt = fibra::Runtime::builder().current_thread().build().unwrap();
        for links in [0, 1, 10] {
            assert_eq!(rt.block_on(fibra_chain(links, 100)), 4950);
        }
    }
}
