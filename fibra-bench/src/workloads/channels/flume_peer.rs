//! The shapes on flume between OS threads (`flume-threads`); `select-rx`
//! builds a `flume::Selector` per message (`wait` consumes it). flume runs every shape but `select-both` ([`expresses`]): with several
//! threads selecting sends and several selecting receives over the same
//! channels, flume's `Selector` loses a wake-up now and then and the run
//! hangs (seen at capacities 0, 1 and N; at 0 a selecting send and a
//! selecting receive never meet at all).

use flume::{Receiver, Selector, Sender, bounded};

use super::shape::{Kind, Shape};
use super::threads::sides;

/// Whether flume can run `shape`: all but `select-both`.
pub const fn expresses(shape: Shape) -> bool {
    !matches!(shape.kind, Kind::SelectBoth)
}

/// One run of `shape` (one [`expresses`]); returns the sum of every value
/// received.
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
        Kind::SelectBoth => panic!("flume: no select-both rows (see `expresses`)"),
    }
}

fn send_all(tx: &Sender<u64>, n: u64) {
    for v in 0..n {
        assert!(tx.send(v).is_ok(), "flume: receivers gone");
    }
}

fn recv_n(rx: &Receiver<u64>, n: u64) -> u64 {
    (0..n)
        .map(|_| rx.recv().expect("flume: senders gone"))
        .sum()
}

fn recv_any(rxs: &[Receiver<u64>], n: u64) -> u64 {
    let mut sum = 0;
    for _ in 0..n {
        let got = rxs
            .iter()
            .fold(Selector::new(), |sel, rx| sel.recv(rx, |r| r.ok()))
            .wait();
        sum += got.expect("flume: senders gone");
    }
    sum
}
