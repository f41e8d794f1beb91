//! The shapes on fibra's channels between OS threads (`fibra-threads`):
//! `send_blocking` / `recv_blocking`, and `fibra::choose` over an array of
//! ops, `.perform()`ed, for the select shapes.

use std::array;

use fibra::{Op, Receiver, Sender, choose};

use super::fibra_channels::{channel, channels};
use super::shape::{Kind, Shape, bad_clauses};
use super::threads::sides;

/// One run of `shape`; returns the sum of every value received.
pub fn run(shape: Shape) -> u64 {
    match (shape.kind, shape.channels()) {
        (Kind::Seq, _) => {
            let (tx, rx) = channel(shape);
            send_all(&tx, shape.messages);
            recv_n(&rx, shape.messages)
        }
        (Kind::Spsc | Kind::Mpsc | Kind::Mpmc, _) => {
            let (tx, rx) = channel(shape);
            sides(shape, |_, n| send_all(&tx, n), |n| recv_n(&rx, n))
        }
        (Kind::SelectRx, 2) => select_rx::<2>(shape),
        (Kind::SelectRx, 4) => select_rx::<4>(shape),
        (Kind::SelectBoth, 2) => select_both::<2>(shape),
        (Kind::SelectBoth, 4) => select_both::<4>(shape),
        (_, other) => bad_clauses(other),
    }
}

/// Every sender lives until the run ends, after the consumer: no channel
/// closes while a consumer selects over it.
fn select_rx<const C: usize>(shape: Shape) -> u64 {
    let (txs, rxs) = channels::<C>(shape);
    sides(shape, |i, n| send_all(&txs[i], n), |n| recv_any(&rxs, n))
}

fn select_both<const C: usize>(shape: Shape) -> u64 {
    let (txs, rxs) = channels::<C>(shape);
    sides(shape, |_, n| send_any(&txs, n), |n| recv_any(&rxs, n))
}

fn send_all(tx: &Sender<u64>, n: u64) {
    for v in 0..n {
        assert!(tx.send_blocking(v).is_ok(), "fibra: receivers gone");
    }
}

fn recv_n(rx: &Receiver<u64>, n: u64) -> u64 {
    (0..n)
        .map(|_| rx.recv_blocking().expect("fibra: senders gone"))
        .sum()
}

fn send_any<const C: usize>(txs: &[Sender<u64>; C], n: u64) {
    for v in 0..n {
        let sent = choose(array::from_fn::<_, C, _>(|i| txs[i].send_op(v))).perform();
        assert!(sent.is_ok(), "fibra: receivers gone");
    }
}

fn recv_any<const C: usize>(rxs: &[Receiver<u64>; C], n: u64) -> u64 {
    let mut sum = 0;
    for _ in 0..n {
        let got = choose(array::from_fn::<_, C, _>(|i| rxs[i].recv_op())).perform();
        sum += got.expect("fibra: senders gone");
    }
    sum
}
