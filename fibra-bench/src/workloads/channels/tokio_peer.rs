//! The shapes tokio's `mpsc` can express, on tokio tasks (`tokio-ct`,
//! `tokio-mt`): `.await` on `send` / `recv`, `tokio::select!` over the
//! receivers for `select-rx` (written out for 2 and 4 channels: the macro
//! takes no dynamic branch count). tokio's `mpsc` has no rendezvous
//! channel (its capacity must be at least 1) and one receiver per channel,
//! so there are no rows at capacity 0, nor for `mpmc` and `select-both`
//! (several consumers on each channel); see [`expresses`].

use tokio::sync::mpsc::{Receiver, Sender, channel};

use super::shape::{Capacity, Kind, Shape, bad_clauses};
use crate::exec::tokio_join_sum;

/// Whether tokio's `mpsc` can run `shape` as it is defined.
pub const fn expresses(shape: Shape) -> bool {
    !matches!(shape.capacity, Capacity::Zero)
        && !matches!(shape.kind, Kind::Mpmc | Kind::SelectBoth)
}

/// One run of `shape` (one [`expresses`]); returns the sum of every value
/// received.
pub async fn run(shape: Shape) -> u64 {
    assert!(expresses(shape), "tokio cannot run {shape:?}");
    let (txs, mut rxs): (Vec<_>, Vec<_>) = (0..shape.channels())
        .map(|_| channel(shape.capacity()))
        .unzip();
    if shape.kind == Kind::Seq {
        let task = tokio::spawn(async move {
            let (tx, rx) = (&txs[0], &mut rxs[0]);
            for v in 0..shape.messages {
                assert!(tx.send(v).await.is_ok(), "tokio: receiver gone");
            }
            let mut sum = 0;
            for _ in 0..shape.messages {
                sum += rx.recv().await.expect("tokio: sender gone");
            }
            sum
        });
        return task.await.expect("tokio task failed");
    }
    let n = shape.messages;
    let consumer = if shape.kind == Kind::SelectRx {
        tokio::spawn(async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += recv_any(&mut rxs).await.expect("tokio: producers gone");
            }
            sum
        })
    } else {
        let mut rx = rxs.pop().expect("one channel");
        tokio::spawn(async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += rx.recv().await.expect("tokio: producers gone");
            }
            sum
        })
    };
    let mut handles = vec![consumer];
    for i in 0..shape.producers() as usize {
        let tx = txs[i % txs.len()].clone();
        handles.push(tokio::spawn(send_all(tx, shape.per_producer())));
    }
    // The senders stay open until the consumer is done: a closed, empty
    // channel would be a ready branch (`None`) of its `select!`.
    let sum = tokio_join_sum(handles).await;
    drop(txs);
    sum
}

async fn send_all(tx: Sender<u64>, n: u64) -> u64 {
    for v in 0..n {
        assert!(tx.send(v).await.is_ok(), "tokio: receiver gone");
    }
    0
}

/// `tokio::select!` receiving from whichever of `$rx` has a value first.
macro_rules! recv_any {
    ($($rx:ident)+) => {
        tokio::select! { $( v = $rx.recv() => v, )+ }
    };
}

/// Receives from one of `rxs` (2 or 4 of them).
async fn recv_any(rxs: &mut [Receiver<u64>]) -> Option<u64> {
    match rxs {
        [a, b] => recv_any!(a b),
        [a, b, c, d] => recv_any!(a b c d),
        other => bad_clauses(other.len()),
    }
}
