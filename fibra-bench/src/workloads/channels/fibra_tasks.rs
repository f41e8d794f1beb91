//! The shapes on fibra tasks, on fibra's runtime (`fibra`, `fibra-1`,
//! `fibra-ct`): every producer and consumer is a task spawned by the root
//! future, which joins them (the root is not a task of the runtime's
//! workers); `.await` on `send` / `recv`, and on `fibra::choose` over an
//! array of `send_op`s / `recv_op`s for the select shapes.

use std::array;

use fibra::{Receiver, Sender, choose};

use super::fibra_channels::{channel, channels};
use super::shape::{Kind, Shape, bad_clauses};
use crate::exec::fibra_join_sum;

/// One run of `shape`; returns the sum of every value received.
pub async fn run(shape: Shape) -> u64 {
    match (shape.kind, shape.channels()) {
        (Kind::Seq, _) => seq(shape).await,
        (Kind::Spsc | Kind::Mpsc | Kind::Mpmc, _) => one_channel(shape).await,
        (Kind::SelectRx, 2) => select_rx::<2>(shape).await,
        (Kind::SelectRx, 4) => select_rx::<4>(shape).await,
        (Kind::SelectBoth, 2) => select_both::<2>(shape).await,
        (Kind::SelectBoth, 4) => select_both::<4>(shape).await,
        (_, other) => bad_clauses(other),
    }
}

/// One task sends every value, then receives them all.
async fn seq(shape: Shape) -> u64 {
    let task = fibra::spawn(async move {
        let (tx, rx) = channel(shape);
        for v in 0..shape.messages {
            assert!(tx.send(v).await.is_ok(), "fibra: receiver gone");
        }
        let mut sum = 0;
        for _ in 0..shape.messages {
            sum += rx.recv().await.expect("fibra: sender gone");
        }
        sum
    });
    task.await.expect("fibra task failed")
}

/// `spsc`, `mpsc`, `mpmc`: producers and consumers on one channel.
async fn one_channel(shape: Shape) -> u64 {
    let (tx, rx) = channel(shape);
    let mut handles = Vec::new();
    for _ in 0..shape.consumers() {
        let rx = rx.clone();
        let n = shape.per_consumer();
        handles.push(fibra::spawn(async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += rx.recv().await.expect("fibra: producers gone");
            }
            sum
        }));
    }
    for _ in 0..shape.producers() {
        let tx = tx.clone();
        let n = shape.per_producer();
        handles.push(fibra::spawn(async move {
            for v in 0..n {
                assert!(tx.send(v).await.is_ok(), "fibra: consumers gone");
            }
            0
        }));
    }
    drop((tx, rx));
    fibra_join_sum(handles).await
}

/// Producer `i` sends on channel `i`; one consumer selects a receive over
/// all `C`.
async fn select_rx<const C: usize>(shape: Shape) -> u64 {
    let (txs, rxs) = channels::<C>(shape);
    let n = shape.messages;
    let mut handles = vec![fibra::spawn(async move { recv_any(rxs, n).await })];
    for tx in &txs {
        let tx = tx.clone();
        let n = shape.per_producer();
        handles.push(fibra::spawn(async move {
            for v in 0..n {
                assert!(tx.send(v).await.is_ok(), "fibra: consumer gone");
            }
            0
        }));
    }
    // The senders stay open until the consumer is done: a closed, empty
    // channel would be a ready clause (`Err`) of its choice.
    let sum = fibra_join_sum(handles).await;
    drop(txs);
    sum
}

/// `C` producers select a send over the `C` channels, `C` consumers a
/// receive.
async fn select_both<const C: usize>(shape: Shape) -> u64 {
    let (txs, rxs) = channels::<C>(shape);
    let mut handles = Vec::new();
    for _ in 0..shape.consumers() {
        let rxs = rxs.clone();
        handles.push(fibra::spawn(recv_any(rxs, shape.per_consumer())));
    }
    for _ in 0..shape.producers() {
        let txs = txs.clone();
        let n = shape.per_producer();
        handles.push(fibra::spawn(async move {
            send_any(txs, n).await;
            0
        }));
    }
    drop(rxs);
    // As in `select_rx`: no channel closes before the consumers are done.
    let sum = fibra_join_sum(handles).await;
    drop(txs);
    sum
}

/// Sends `0..n`, each over whichever channel takes it first.
async fn send_any<const C: usize>(txs: [Sender<u64>; C], n: u64) {
    for v in 0..n {
        let sent = choose(array::from_fn::<_, C, _>(|i| txs[i].send_op(v))).await;
        assert!(sent.is_ok(), "fibra: consumers gone");
    }
}

/// Takes `n` values from whichever channels have one first; their sum.
async fn recv_any<const C: usize>(rxs: [Receiver<u64>; C], n: u64) -> u64 {
    let mut sum = 0;
    for _ in 0..n {
        let got = choose(array::from_fn::<_, C, _>(|i| rxs[i].recv_op())).await;
        sum += got.expect("fibra: producers gone");
    }
    sum
}
