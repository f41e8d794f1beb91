//! Choices over many clauses (16 channels, the `select-channels` benchmark's
//! widest shape): producers choose among 16 sends, consumers among 16
//! receives, some of which poll their choice once and drop it (a perform
//! cancelled with records published in its try). Every message is unique
//! and counted: each is received exactly once.

use fibra::{Op, Perform, Receiver, Sender, bounded, choose};
use futures::FutureExt;
use std::array;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::thread;

const C: usize = 16;
const SIDES: u32 = 2;
const PER_SIDE: u32 = 3_000;

/// Who got which message: a count per id.
struct Seen(Vec<AtomicU8>);

impl Seen {
    fn new() -> Arc<Self> {
        Arc::new(Self(
            (0..SIDES * PER_SIDE).map(|_| AtomicU8::new(0)).collect(),
        ))
    }

    fn got(&self, id: u32) {
        self.0[id as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn assert_each_once(&self) {
        for (id, n) in self.0.iter().enumerate() {
            assert_eq!(n.load(Ordering::Relaxed), 1, "message {id}");
        }
    }
}

fn channels(cap: usize) -> ([Sender<u32>; C], [Receiver<u32>; C]) {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..C).map(|_| bounded(cap)).unzip();
    (
        txs.try_into().unwrap_or_else(|_| unreachable!()),
        rxs.try_into().unwrap_or_else(|_| unreachable!()),
    )
}

/// Receives `n` values; every `cancel_every`-th attempt first polls a choice
/// once and drops it (counting what it got, if it committed).
fn consume(rxs: &[Receiver<u32>; C], n: u32, cancel_every: u32, seen: &Seen) {
    let mut got = 0;
    let mut attempt = 0;
    while got < n {
        attempt += 1;
        let ops = || choose(array::from_fn::<_, C, _>(|i| rxs[i].recv_op()));
        let v = if attempt % cancel_every == 0 {
            match Perform::new(ops()).now_or_never() {
                Some(v) => v,
                None => continue,
            }
        } else {
            ops().perform()
        };
        seen.got(v.expect("producers gone"));
        got += 1;
    }
}

fn produce(txs: &[Sender<u32>; C], side: u32) {
    for v in side * PER_SIDE..(side + 1) * PER_SIDE {
        let ops = choose(array::from_fn::<_, C, _>(|i| txs[i].send_op(v)));
        ops.perform().expect("consumers gone");
    }
}

#[test]
fn sixteen_clauses_on_threads_deliver_each_message_once() {
    for cap in [0, 1] {
        let (txs, rxs) = channels(cap);
        let seen = Seen::new();
        thread::scope(|s| {
            for side in 0..SIDES {
                let (rxs, seen) = (&rxs, &seen);
                s.spawn(move || consume(rxs, PER_SIDE, 3 + side, seen));
                let txs = &txs;
                s.spawn(move || produce(txs, side));
            }
        });
        seen.assert_each_once();
    }
}

#[test]
fn sixteen_clauses_on_the_runtime_deliver_each_message_once() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    for cap in [0, 1] {
        let seen = Seen::new();
        let total = rt.block_on({
            let seen = seen.clone();
            async move {
                let (txs, rxs) = channels(cap);
                let (txs, rxs) = (Arc::new(txs), Arc::new(rxs));
                let mut handles = Vec::new();
                for side in 0..SIDES {
                    let (rxs, seen) = (rxs.clone(), seen.clone());
                    handles.push(fibra::spawn(async move {
                        for _ in 0..PER_SIDE {
                            let ops = choose(array::from_fn::<_, C, _>(|i| rxs[i].recv_op()));
                            seen.got(ops.await.expect("producers gone"));
                        }
                        PER_SIDE
                    }));
                    let txs = txs.clone();
                    handles.push(fibra::spawn(async move {
                        for v in side * PER_SIDE..(side + 1) * PER_SIDE {
                            let ops = choose(array::from_fn::<_, C, _>(|i| txs[i].send_op(v)));
                            ops.await.expect("consumers gone");
                        }
                        0
                    }));
                }
                let mut total = 0;
                for h in handles {
                    total += h.await.expect("task");
                }
                total
            }
        });
        assert_eq!(total, SIDES * PER_SIDE);
        seen.assert_each_once();
    }
}
