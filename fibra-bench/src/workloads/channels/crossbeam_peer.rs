//! The shapes on crossbeam-channel between OS threads (`crossbeam`). The
//! select shapes build one `crossbeam_channel::Select` per thread and reuse
//! it for every message (crossbeam's own benchmark builds one per message,
//! which is slower).

use crossbeam_channel::{Receiver, Select, Sender, bounded};

use super::shape::{Kind, Shape};
use super::threads::sides;

/// One run of `shape`; returns the sum of every value received.
pub fn run(shape: Shape) -> u64 {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..shape.channels())
        .map(|_| bounded(shape.capacity()))
        .unzip();
    match shape.kind {
        Kind::Seq => {
            send_all(&txs[0], shape.messages);
            recv_n(&rxs[0], shape.messages)
        }
        Kind::Spsc | Kind::Mpsc | Kind::Mpmc => {
            sides(shape, |_, n| send_all(&txs[0], n), |n| recv_n(&rxs[0], n))
        }
        // Every sender lives until the run ends: no channel closes while a
        // consumer selects over it.
        Kind::SelectRx => sides(shape, |i, n| send_all(&txs[i], n), |n| recv_any(&rxs, n)),
        Kind::SelectBoth => sides(shape, |_, n| send_any(&txs, n), |n| recv_any(&rxs, n)),
    }
}

fn send_all(tx: &Sender<u64>, n: u64) {
    for v in 0..n {
        assert!(tx.send(v).is_ok(), "crossbeam: receivers gone");
    }
}

fn recv_n(rx: &Receiver<u64>, n: u64) -> u64 {
    (0..n)
        .map(|_| rx.recv().expect("crossbeam: senders gone"))
        .sum()
}

fn send_any(txs: &[Sender<u64>], n: u64) {
    let mut sel = Select::new();
    for tx in txs {
        sel.send(tx);
    }
    for v in 0..n {
        let oper = sel.select();
        let i = oper.index();
        assert!(oper.send(&txs[i], v).is_ok(), "crossbeam: receivers gone");
    }
}

fn recv_any(rxs: &[Receiver<u64>], n: u64) -> u64 {
    let mut sel = Select::new();
    for rx in rxs {
        sel.recv(rx);
    }
    let mut sum = 0;
    for _ in 0..n {
        let oper = sel.select();
        let i = oper.index();
        sum += oper.recv(&rxs[i]).expect("crossbeam: senders gone");
    }
    sum
}
