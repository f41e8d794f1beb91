//! `select-channels` on tokio: `select!` over its mpsc channels.

use tokio::sync::mpsc::error::{SendError, TryRecvError, TrySendError};
use tokio::sync::mpsc::{Receiver, Sender, channel};

use super::shape::{Shape, Variant, bad_clauses};
use crate::exec::tokio_join_sum;

/// `tokio::select!` sending `$v` on whichever of `$txs[$i]` has room
/// first.
macro_rules! send_any {
    ($txs:expr, $v:expr; $($i:tt)+) => {
        tokio::select! { $( r = $txs[$i].send($v) => r, )+ }
    };
}

/// `tokio::select!` receiving from whichever of `$rx` has a value first.
macro_rules! recv_any {
    ($($rx:ident)+) => {
        tokio::select! { $( v = $rx.recv() => v, )+ }
    };
}

/// Sends `v` over one of `txs` (2, 4, 8 or 16 of them).
async fn send(txs: &[Sender<u64>], v: u64) -> Result<(), SendError<u64>> {
    match txs.len() {
        2 => send_any!(txs, v; 0 1),
        4 => send_any!(txs, v; 0 1 2 3),
        8 => send_any!(txs, v; 0 1 2 3 4 5 6 7),
        16 => send_any!(txs, v; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
        other => bad_clauses(other),
    }
}

/// Receives from one of `rxs` (2, 4, 8 or 16 of them).
async fn recv(rxs: &mut [Receiver<u64>]) -> Option<u64> {
    match rxs {
        [a, b] => recv_any!(a b),
        [a, b, c, d] => recv_any!(a b c d),
        [a, b, c, d, e, f, g, h] => recv_any!(a b c d e f g h),
        [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p] => {
            recv_any!(a b c d e f g h i j k l m n o p)
        }
        other => bad_clauses(other.len()),
    }
}

/// One `select-channels` run (one consumer: mpsc has one receiver).
pub async fn select(shape: Shape) -> u64 {
    assert_eq!(shape.consumers, 1, "tokio: one consumer only");
    let capacity = shape.variant.capacity().max(1);
    let (txs, mut rxs): (Vec<_>, Vec<_>) = (0..shape.clauses).map(|_| channel(capacity)).unzip();
    let variant = shape.variant;
    let n = shape.per_consumer();
    let mut handles = vec![tokio::spawn(async move {
        let mut sum = 0;
        let mut start = 0;
        for _ in 0..n {
            let got = match variant {
                Variant::Blocking => recv(&mut rxs).await,
                Variant::Else => loop {
                    if let Some(got) = try_recv(&mut rxs, &mut start) {
                        break got;
                    }
                    tokio::task::yield_now().await;
                },
            };
            sum += got.expect("tokio: producers gone");
        }
        sum
    })];
    for _ in 0..shape.producers {
        let txs = txs.clone();
        let n = shape.per_producer();
        handles.push(tokio::spawn(async move {
            let mut start = 0;
            for v in 0..n {
                match variant {
                    Variant::Blocking => {
                        assert!(send(&txs, v).await.is_ok(), "tokio: consumer gone");
                    }
                    Variant::Else => {
                        while !try_send(&txs, v, &mut start) {
                            tokio::task::yield_now().await;
                        }
                    }
                }
            }
            0
        }));
    }
    // The senders stay open until the consumer is done (see
    // `super::fibra_tasks`: a closed, empty channel is a ready clause).
    let sum = tokio_join_sum(handles).await;
    drop(txs);
    sum
}

/// A non-blocking send of `v` over one of `txs`, trying them in turn
/// from `*start` (which moves on by one per attempt, for fairness).
fn try_send(txs: &[Sender<u64>], v: u64, start: &mut usize) -> bool {
    let c = txs.len();
    *start = (*start + 1) % c;
    for k in 0..c {
        match txs[(*start + k) % c].try_send(v) {
            Ok(()) => return true,
            Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Closed(_)) => panic!("tokio: consumer gone"),
        }
    }
    false
}

/// A non-blocking receive from one of `rxs`, like [`try_send`]:
/// `Some(None)` when the channels are closed.
fn try_recv(rxs: &mut [Receiver<u64>], start: &mut usize) -> Option<Option<u64>> {
    let c = rxs.len();
    *start = (*start + 1) % c;
    for k in 0..c {
        match rxs[(*start + k) % c].try_recv() {
            Ok(v) => return Some(Some(v)),
            Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => return Some(None),
        }
    }
    None
}
