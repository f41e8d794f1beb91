//! loom models of AND/OR waiting racing the resources it waits on. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p fibra --release --lib loom_`.

use crate::loom::{Arc, model, thread};
use crate::{IVar, Op, WaitUntil, bounded};

#[test]
fn loom_wait_until_and_acquires_both_clauses() {
    // `a and b`, with a and b filled by two other threads at any moment.
    model(|| {
        let a = Arc::new(IVar::new());
        let b = Arc::new(IVar::new());
        let (a2, b2) = (a.clone(), b.clone());
        let ta = thread::spawn(move || a2.put(1).unwrap());
        let tb = thread::spawn(move || b2.put(2).unwrap());
        let mut w = WaitUntil::new();
        let ca = w.add(a.get_op());
        let cb = w.add(b.get_op());
        assert!(w.run_blocking(ca.done() & cb.done()));
        assert_eq!((ca.take(), cb.take()), (Some(1), Some(2)));
        ta.join().unwrap();
        tb.join().unwrap();
    });
}

#[test]
fn loom_wait_until_or_takes_one_value_and_leaves_the_other() {
    // `a or b` over two channels, both written concurrently: exactly one
    // value is taken; the other stays in its channel.
    model(|| {
        let (tx_a, rx_a) = bounded::<u32>(1);
        let (tx_b, rx_b) = bounded::<u32>(1);
        let ta = thread::spawn(move || {
            tx_a.try_send(1).unwrap();
            tx_a
        });
        let tb = thread::spawn(move || {
            tx_b.try_send(2).unwrap();
            tx_b
        });
        let mut w = WaitUntil::new();
        let ca = w.add(rx_a.recv_op().wrap(|v| v.unwrap()));
        let cb = w.add(rx_b.recv_op().wrap(|v| v.unwrap()));
        assert!(w.run_blocking(ca.done() | cb.done()));
        let _keep = (ta.join().unwrap(), tb.join().unwrap());
        match (ca.take(), cb.take()) {
            (Some(1), None) => assert_eq!(rx_b.try_recv(), Ok(2)),
            (None, Some(2)) => assert_eq!(rx_a.try_recv(), Ok(1)),
            other => panic!("took {other:?}"),
        }
    });
}
