//! `select-channels` and `select-overlap` on crossbeam-channel's `Select`,
//! on OS threads.

use std::thread;

use crossbeam_channel::{Receiver, Select, SelectedOperation, Sender, bounded};

use super::shape::{Shape, Variant};

/// `sel.select()`, or `sel.try_select()` retried after a yield.
fn ready<'a>(sel: &mut Select<'a>, variant: Variant) -> SelectedOperation<'a> {
    match variant {
        Variant::Blocking => sel.select(),
        Variant::Else => loop {
            if let Ok(oper) = sel.try_select() {
                break oper;
            }
            thread::yield_now();
        },
    }
}

/// One `select-channels` run.
pub fn select(shape: Shape) -> u64 {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..shape.clauses)
        .map(|_| bounded::<u64>(shape.variant.capacity()))
        .unzip();
    let variant = shape.variant;
    thread::scope(|s| {
        let consumers: Vec<_> = (0..shape.consumers)
            .map(|_| s.spawn(|| consumer(&rxs, shape.per_consumer(), variant)))
            .collect();
        for _ in 0..shape.producers {
            s.spawn(|| producer(&txs, shape.per_producer(), variant));
        }
        consumers
            .into_iter()
            .map(|c| c.join().expect("consumer thread panicked"))
            .sum()
    })
}

fn producer(txs: &[Sender<u64>], n: u64, variant: Variant) {
    let mut sel = Select::new();
    for tx in txs {
        sel.send(tx);
    }
    for v in 0..n {
        let oper = ready(&mut sel, variant);
        let i = oper.index();
        assert!(oper.send(&txs[i], v).is_ok(), "crossbeam: consumers gone");
    }
}

fn consumer(rxs: &[Receiver<u64>], n: u64, variant: Variant) -> u64 {
    let mut sel = Select::new();
    for rx in rxs {
        sel.recv(rx);
    }
    let mut sum = 0;
    for _ in 0..n {
        let oper = ready(&mut sel, variant);
        let i = oper.index();
        sum += oper.recv(&rxs[i]).expect("crossbeam: producers gone");
    }
    sum
}

/// One `select-overlap` run.
pub fn overlap(messages: u64) -> u64 {
    let half = messages / 2;
    let (a_tx, a_rx) = bounded::<u64>(0);
    let (b_tx, b_rx) = bounded::<u64>(0);
    let b_tx2 = b_tx.clone();
    let b_rx2 = b_rx.clone();
    thread::scope(|s| {
        let c1 = s.spawn(move || {
            let rxs = [a_rx, b_rx];
            let mut sel = Select::new_biased();
            for rx in &rxs {
                sel.recv(rx);
            }
            let mut open = 2;
            let mut sum = 0;
            while open > 0 {
                let oper = sel.select();
                let i = oper.index();
                match oper.recv(&rxs[i]) {
                    Ok(v) => sum += v,
                    Err(_) => {
                        sel.remove(i);
                        open -= 1;
                    }
                }
            }
            sum
        });
        let c2 = s.spawn(move || b_rx2.iter().sum::<u64>());
        s.spawn(move || {
            let txs = [a_tx, b_tx];
            let mut sel = Select::new_biased();
            for tx in &txs {
                sel.send(tx);
            }
            for v in 0..half {
                let oper = sel.select();
                let i = oper.index();
                assert!(oper.send(&txs[i], v).is_ok(), "crossbeam: consumers gone");
            }
        });
        s.spawn(move || {
            for v in half..messages {
                assert!(b_tx2.send(v).is_ok(), "crossbeam: consumers gone");
            }
        });
        c1.join().expect("C1 panicked") + c2.join().expect("C2 panicked")
    })
}
