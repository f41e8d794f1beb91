//! `select-channels` and `select-overlap` on fibra's channels between OS
//! threads (blocking performs).

use std::{array, thread};

use fibra::{Op, Receiver, Sender, choose, choose_biased};

use super::fibra_channels::fibra_channels;
use super::shape::{Shape, Variant, bad_clauses};

/// One `select-channels` run.
pub fn select(shape: Shape) -> u64 {
    match shape.clauses {
        2 => select_c::<2>(shape),
        4 => select_c::<4>(shape),
        8 => select_c::<8>(shape),
        16 => select_c::<16>(shape),
        other => bad_clauses(other),
    }
}

fn select_c<const C: usize>(shape: Shape) -> u64 {
    let (txs, rxs) = fibra_channels::<C>(shape.variant.capacity());
    thread::scope(|s| {
        let consumers: Vec<_> = (0..shape.consumers)
            .map(|_| s.spawn(|| consumer(&rxs, shape.per_consumer(), shape.variant)))
            .collect();
        for _ in 0..shape.producers {
            s.spawn(|| producer(&txs, shape.per_producer(), shape.variant));
        }
        consumers
            .into_iter()
            .map(|c| c.join().expect("consumer thread panicked"))
            .sum()
    })
}

fn producer<const C: usize>(txs: &[Sender<u64>; C], n: u64, variant: Variant) {
    for v in 0..n {
        let ops = || choose(array::from_fn::<_, C, _>(|i| txs[i].send_op(v)));
        let sent = match variant {
            Variant::Blocking => ops().perform(),
            Variant::Else => loop {
                if let Ok(sent) = ops().try_perform() {
                    break sent;
                }
                thread::yield_now();
            },
        };
        assert!(sent.is_ok(), "fibra: consumers gone");
    }
}

fn consumer<const C: usize>(rxs: &[Receiver<u64>; C], n: u64, variant: Variant) -> u64 {
    let mut sum = 0;
    for _ in 0..n {
        let ops = || choose(array::from_fn::<_, C, _>(|i| rxs[i].recv_op()));
        let got = match variant {
            Variant::Blocking => ops().perform(),
            Variant::Else => loop {
                if let Ok(got) = ops().try_perform() {
                    break got;
                }
                thread::yield_now();
            },
        };
        sum += got.expect("fibra: producers gone");
    }
    sum
}

/// One `select-overlap` run.
pub fn overlap(messages: u64) -> u64 {
    let half = messages / 2;
    let (a_tx, a_rx) = fibra::channel::<u64>();
    let (b_tx, b_rx) = fibra::channel::<u64>();
    let b_tx2 = b_tx.clone();
    let b_rx2 = b_rx.clone();
    thread::scope(|s| {
        let c1 = s.spawn(move || {
            let (mut a_open, mut b_open) = (true, true);
            let mut sum = 0;
            while a_open || b_open {
                let got = if a_open && b_open {
                    choose_biased((
                        a_rx.recv_op().wrap(|r| (0, r)),
                        b_rx.recv_op().wrap(|r| (1, r)),
                    ))
                    .perform()
                } else if a_open {
                    (0, a_rx.recv_blocking())
                } else {
                    (1, b_rx.recv_blocking())
                };
                match got {
                    (_, Ok(v)) => sum += v,
                    (0, Err(_)) => a_open = false,
                    (_, Err(_)) => b_open = false,
                }
            }
            sum
        });
        let c2 = s.spawn(move || {
            let mut sum = 0;
            while let Ok(v) = b_rx2.recv_blocking() {
                sum += v;
            }
            sum
        });
        s.spawn(move || {
            for v in 0..half {
                let sent = choose_biased((a_tx.send_op(v), b_tx.send_op(v))).perform();
                assert!(sent.is_ok(), "fibra: consumers gone");
            }
        });
        s.spawn(move || {
            for v in half..messages {
                assert!(b_tx2.send_blocking(v).is_ok(), "fibra: consumers gone");
            }
        });
        c1.join().expect("C1 panicked") + c2.join().expect("C2 panicked")
    })
}
