//! `fibers/fan-out` (Fibers): one producer task sends the integers
//! `0..messages` on one rendezvous channel that `consumers` tasks
//! (D = 10, 100) compete to receive from; each consumer sums what it gets
//! until the channel closes and returns its sum. Result: the total. Ops:
//! messages.
//!
//! The Fibers post gives no message count; this suite sends 250,000.
//! tokio's mpsc has a single receiver: its rows share it behind a
//! `tokio::sync::Mutex` (the usual tokio idiom for a work queue), and use
//! capacity 1 (no rendezvous).

use std::sync::Arc;

use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_rows, tokio_join_sum};
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// Consumer counts.
const CONSUMERS: [u64; 2] = [10, 100];

/// What tokio rows do differently.
const TOKIO_NOTE: &str = "tokio mpsc has one receiver and no rendezvous: tokio rows share \
     an mpsc::channel(1) receiver behind a tokio::sync::Mutex";

/// How the Erlang rows work.
const ERLANG_NOTE: &str = "erlang: no channel with competing receivers; each consumer asks \
     the producer for every value ({ready, Pid}) and the producer hands the next one to \
     whoever asked, a rendezvous emulated with 2 messages per value";

/// The rows: every system for every consumer count.
pub fn cases(config: &Config) -> Vec<Case> {
    let messages = config.size(250_000, 1_000);
    CONSUMERS
        .into_iter()
        .flat_map(|consumers| {
            let spec = Spec {
                group: "fibers",
                workload: "fan-out",
                params: Params::new()
                    .with("consumers", consumers)
                    .with("messages", messages),
                ops: messages,
                expected: messages * messages.saturating_sub(1) / 2,
            };
            task_rows(
                &spec,
                fibra_rows!(&spec, config, move || fibra_fan_out(consumers, messages)),
                move || tokio_fan_out(consumers, messages),
                PeerNotes {
                    tokio_capacity_one: Some(TOKIO_NOTE),
                    erlang: Some(ERLANG_NOTE),
                },
            )
        })
        .collect()
}

/// tokio: consumers take turns on the one receiver, behind a mutex.
async fn tokio_fan_out(consumers: u64, messages: u64) -> u64 {
    use tokio::sync::{Mutex, mpsc};
    let (tx, rx) = mpsc::channel::<u64>(1);
    let rx = Arc::new(Mutex::new(rx));
    let mut handles = Vec::new();
    for _ in 0..consumers {
        let rx = rx.clone();
        handles.push(tokio::spawn(async move {
            let mut sum = 0;
            loop {
                let next = rx.lock().await.recv().await;
                match next {
                    Some(v) => sum += v,
                    None => return sum,
                }
            }
        }));
    }
    drop(rx);
    handles.push(tokio::spawn(async move {
        for i in 0..messages {
            assert!(tx.send(i).await.is_ok(), "tokio: consumers gone");
        }
        0
    }));
    tokio_join_sum(handles).await
}

/// fibra: every consumer holds a clone of the receiver.
#[cfg(feature = "fibra-rt")]
async fn fibra_fan_out(consumers: u64, messages: u64) -> u64 {
    let (tx, rx) = fibra::channel::<u64>();
    let mut handles = Vec::new();
    for _ in 0..consumers {
        let rx = rx.clone();
        handles.push(fibra::spawn(async move {
            let mut sum = 0;
            while let Ok(v) = rx.recv().await {
                sum += v;
            }
            sum
        }));
    }
    drop(rx);
    handles.push(fibra::spawn(async move {
        for i in 0..messages {
            assert!(tx.send(i).await.is_ok(), "fibra: consumers gone");
        }
        0
    }));
    crate::exec::fibra_join_sum(handles).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokio_fan_out_sums_correctly() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_fan_out(10, 1000)), 499_500);
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_fan_out_sums_correctly() {
        let rt = fibra::Runtime::builder().current_thread().build().unwrap();
        assert_eq!(rt.block_on(fibra_fan_out(10, 1000)), 499_500);
    }
}
