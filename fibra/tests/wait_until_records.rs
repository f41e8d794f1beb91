//! `WaitUntil`'s clause records, which share one block per statement: many
//! clauses over several blocks, ops and results bigger than a block or
//! aligned beyond it, handles that outlive their statement, a statement
//! dropped before it runs, and a clause whose handler panics.

mod common;

use common::DropCount;
use fibra::select::Clause;
use fibra::{IVar, Op, WaitUntil, always, bounded};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A result aligned beyond what a block is allocated with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(align(128))]
struct Aligned(u64);

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_and_statements_are_send_and_sync() {
    assert_send_sync::<Clause<u64>>();
    assert_send_sync::<Clause<DropCount>>();
    assert_send_sync::<WaitUntil<'static>>();
}

#[test]
fn seventy_clauses_over_several_blocks_each_keep_their_result() {
    // More records than one block holds, and clauses beyond the 64th (the
    // predicate becomes a program): every result reaches its own handle.
    let vars: Vec<IVar<u64>> = (0..70).map(|_| IVar::new()).collect();
    for (i, v) in vars.iter().enumerate() {
        v.put(i as u64 * 3).unwrap();
    }
    let mut w = WaitUntil::new();
    let clauses: Vec<_> = vars.iter().map(|v| w.add(v.get_op())).collect();
    let pred = clauses
        .iter()
        .map(Clause::done)
        .reduce(|a, b| a & b)
        .unwrap();
    assert!(w.run_blocking(pred));
    for (i, c) in clauses.iter().enumerate() {
        assert_eq!(c.take(), Some(i as u64 * 3), "clause {i}");
    }
}

#[test]
fn big_and_overaligned_ops_and_results_get_blocks_that_fit_them() {
    let big = [7u8; 3000];
    let mut w = WaitUntil::new();
    let small = w.add(always(1u8));
    let large = w.add(always(big));
    let aligned = w.add(always(Aligned(5)));
    let after = w.add(always(2u16));
    let pred = small.done() & large.done() & aligned.done() & after.done();
    assert!(w.run_blocking(pred));
    assert_eq!(small.take(), Some(1));
    assert_eq!(
        large
            .take()
            .map(|b| b.iter().map(|&x| x as usize).sum::<usize>()),
        Some(21_000)
    );
    let got = aligned.take().unwrap();
    assert_eq!(got, Aligned(5));
    assert_eq!(after.take(), Some(2));
}

#[test]
fn handles_outlive_the_statement_and_every_result_is_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = bounded::<DropCount>(8);
    for i in 0..6 {
        tx.try_send(DropCount::new(i, &drops)).unwrap();
    }
    let handles: Vec<Clause<_>> = {
        let mut w = WaitUntil::new();
        let hs: Vec<_> = (0..6).map(|_| w.add(rx.recv_op())).collect();
        let pred = hs.iter().map(Clause::done).reduce(|a, b| a & b).unwrap();
        assert!(w.run_blocking(pred));
        hs
    };
    // The statement is gone; the handles still hold the results, and
    // whoever drops a handle last frees the block.
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    let mut handles = handles;
    let taken = handles.remove(3).take().expect("acquired").unwrap();
    assert!(taken.value < 6);
    drop(taken);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // Dropped from the back and the front, results not taken: each is
    // dropped with its handle.
    while let Some(h) = handles.pop() {
        drop(h);
        if let Some(h) = (!handles.is_empty()).then(|| handles.remove(0)) {
            drop(h);
        }
    }
    assert_eq!(drops.load(Ordering::SeqCst), 6);
    assert!(rx.is_empty());
}

#[test]
fn a_statement_dropped_before_it_runs_drops_its_ops_and_leaves_the_values() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = bounded::<DropCount>(2);
    tx.try_send(DropCount::new(1, &drops)).unwrap();
    let mut w = WaitUntil::new();
    let a = w.add(rx.recv_op());
    // An op that owns a value: dropped with the statement, once.
    let b = w.add(tx.send_op(DropCount::new(2, &drops)));
    drop(w);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the unsent value");
    assert_eq!((a.is_done(), b.is_done()), (false, false));
    assert!(a.take().is_none());
    assert_eq!(rx.try_recv().map(|v| v.value), Ok(1));
}

#[test]
fn a_panicking_handler_leaves_the_other_clauses_value_in_one_place() {
    // `a and b`, both ready; a's handler panics. Whichever clause the round
    // tries first, b's value ends up exactly once: in b's handle (acquired
    // before the panic) or still in its channel (withdrawn by the unwind).
    let mut seen = [0usize; 2];
    for round in 0..100u64 {
        let (tx_a, rx_a) = bounded::<u64>(1);
        let (tx_b, rx_b) = bounded::<u64>(1);
        tx_a.try_send(round).unwrap();
        tx_b.try_send(round + 1000).unwrap();
        let mut w = WaitUntil::new();
        let a = w.add(rx_a.recv_op().wrap(|_| -> u64 { panic!("handler") }));
        let b = w.add(rx_b.recv_op());
        let pred = a.done() & b.done();
        let result = catch_unwind(AssertUnwindSafe(|| w.run_blocking(pred)));
        assert!(result.is_err(), "round {round}: the handler's panic");
        assert!(a.take().is_none());
        assert!(rx_a.is_empty(), "a's value went to the handler");
        match (b.take(), rx_b.try_recv()) {
            (Some(Ok(v)), Err(_)) => {
                assert_eq!(v, round + 1000);
                seen[0] += 1;
            }
            (None, Ok(v)) => {
                assert_eq!(v, round + 1000);
                seen[1] += 1;
            }
            other => panic!("round {round}: b's value lost or doubled: {other:?}"),
        }
    }
    // The fair start tries each first now and then.
    assert!(seen[0] > 0 && seen[1] > 0, "{seen:?}");
}
