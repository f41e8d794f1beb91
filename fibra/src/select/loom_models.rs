//! loom models of AND/OR waiting racing the resources it waits on. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p fibra --release --lib loom_`.

use crate::loom::{Arc, AtomicUsize, Ordering, model, thread};
use crate::{IVar, Op, WaitUntil, bounded};

/// A result that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        // Relaxed: read after the joins.
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Two `bounded(1)` channels, each filled with its value (1 and 2) by a
/// thread of its own at any moment: the receivers and the threads (which
/// return their senders, so neither channel closes).
#[allow(clippy::type_complexity)]
fn filled_by_two_threads() -> (
    (crate::Receiver<u32>, crate::Receiver<u32>),
    (
        thread::JoinHandle<crate::Sender<u32>>,
        thread::JoinHandle<crate::Sender<u32>>,
    ),
) {
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
    ((rx_a, rx_b), (ta, tb))
}

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
fn loom_choose_all_commits_once_every_part_has() {
    // Two receive parts, committed by two senders at any moment; each part
    // installs the owner's waker only if it publishes (a sender already
    // there is met in its block phase without one), and the owner looks
    // between their commits with the same waker every time (a look that
    // stops at the first part still waiting). It returns once, with each
    // value in its part's place.
    model(|| {
        let (tx_a, rx_a) = crate::channel::<u32>();
        let (tx_b, rx_b) = crate::channel::<u32>();
        let ta = thread::spawn(move || tx_a.send_blocking(1).unwrap());
        let tb = thread::spawn(move || tx_b.send_blocking(2).unwrap());
        let got = crate::choose_all([rx_a.recv_op(), rx_b.recv_op()]).perform();
        assert_eq!(got, [Ok(1), Ok(2)]);
        ta.join().unwrap();
        tb.join().unwrap();
    });
}

#[test]
fn loom_choose_all_gate_wakes_the_owner_at_the_last_commit() {
    // Three parts, so they hold the gate's waker: one the owner commits
    // itself (its value waits already), two committed by two senders at
    // any moment, racing the owner's start of the parts and its own
    // count. Whoever counts last, the owner returns with every value.
    model(|| {
        let (tx_a, rx_a) = crate::channel::<u32>();
        let (tx_b, rx_b) = crate::channel::<u32>();
        let (tx_c, rx_c) = bounded::<u32>(1);
        tx_c.try_send(3).unwrap();
        let ta = thread::spawn(move || tx_a.send_blocking(1).unwrap());
        let tb = thread::spawn(move || tx_b.send_blocking(2).unwrap());
        let got = crate::choose_all([rx_a.recv_op(), rx_b.recv_op(), rx_c.recv_op()]).perform();
        assert_eq!(got, [Ok(1), Ok(2), Ok(3)]);
        ta.join().unwrap();
        tb.join().unwrap();
    });
}

#[test]
fn loom_wait_until_or_takes_one_value_and_leaves_the_other() {
    // `a or b` over two channels, both written concurrently: exactly one
    // value is taken; the other stays in its channel.
    model(|| {
        let ((rx_a, rx_b), (ta, tb)) = filled_by_two_threads();
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

#[test]
fn loom_wait_until_and_dropped_while_its_clauses_commit() {
    // `a and b` over two channels performs each clause on its own opstate;
    // two senders fill the channels at any moment while the statement is
    // polled once and dropped. Each value ends in exactly one place: its
    // clause (acquired in that poll) or its channel (never taken, or
    // committed to the clause and handed back by the drop).
    use std::future::Future;
    use std::task::{Context, Waker};
    model(|| {
        let ((rx_a, rx_b), (ta, tb)) = filled_by_two_threads();
        let mut w = WaitUntil::new();
        let ca = w.add(rx_a.recv_op().wrap(|v| v.unwrap()));
        let cb = w.add(rx_b.recv_op().wrap(|v| v.unwrap()));
        {
            let mut fut = std::pin::pin!(w.run(ca.done() & cb.done()));
            let mut cx = Context::from_waker(Waker::noop());
            let _ = fut.as_mut().poll(&mut cx);
        }
        let _keep = (ta.join().unwrap(), tb.join().unwrap());
        match ca.take() {
            Some(v) => assert_eq!((v, rx_a.try_recv().is_err()), (1, true)),
            None => assert_eq!(rx_a.try_recv(), Ok(1)),
        }
        match cb.take() {
            Some(v) => assert_eq!((v, rx_b.try_recv().is_err()), (2, true)),
            None => assert_eq!(rx_b.try_recv(), Ok(2)),
        }
    });
}

#[test]
fn loom_clause_result_dropped_once_when_the_handle_races_the_put() {
    // A clause's handle is dropped on one thread while the statement puts
    // the clause's result on another: the result is dropped exactly once,
    // by whichever of the two comes second.
    use crate::always;
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut w = WaitUntil::new();
        let c = w.add(always(()).wrap({
            let drops = drops.clone();
            move |()| Counted(drops)
        }));
        let pred = c.done();
        let t = thread::spawn(move || drop(c));
        assert!(w.run_blocking(pred));
        t.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 1);
    });
}

#[test]
fn loom_clause_result_taken_once_by_racing_takes() {
    // Two threads take the result while the statement puts it: at most one
    // gets it, and after the put and both takes, exactly one has.
    use crate::always;
    model(|| {
        let mut w = WaitUntil::new();
        let c = Arc::new(w.add(always(7u32)));
        let pred = c.done();
        let c2 = c.clone();
        let t = thread::spawn(move || c2.take());
        assert!(w.run_blocking(pred));
        let mine = c.take();
        let theirs = t.join().unwrap();
        assert_eq!(mine.or(theirs), Some(7));
        assert!(mine.is_none() || theirs.is_none());
    });
}

#[test]
fn loom_clause_records_block_freed_once_by_the_last_owner() {
    // A statement's two clauses share one block; the statement runs and is
    // dropped on one thread while the handles are dropped on two others
    // (one after trying to take its result): the results are dropped once
    // each, and the block is freed exactly once, by whoever goes last
    // (loom reports a block never freed).
    use crate::always;
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut w = WaitUntil::new();
        let counted = |w: &mut WaitUntil<'static>| {
            let drops = drops.clone();
            w.add(always(()).wrap(move |()| Counted(drops)))
        };
        let (a, b) = (counted(&mut w), counted(&mut w));
        let pred = a.done() & b.done();
        let t = thread::spawn(move || assert!(w.run_blocking(pred)));
        let tb = thread::spawn(move || drop(b));
        drop(a.take());
        drop(a);
        t.join().unwrap();
        tb.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn loom_clause_block_credits_given_back_while_a_handle_drops() {
    // The statement's first clause fills most of a block; its handle is
    // dropped on another thread while the statement adds a second clause,
    // which no longer fits: the statement moves on to a new block, giving
    // back the references it had counted ahead in the first while the
    // handle gives up its own there. Each block is freed exactly once, by
    // whoever goes last (loom reports a block never freed), and each result
    // is dropped once.
    use crate::always;
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut w = WaitUntil::new();
        let big = {
            let drops = drops.clone();
            w.add(always([0u8; 300]).wrap(move |_| Counted(drops)))
        };
        let t = thread::spawn(move || drop(big.take()));
        let second = {
            let drops = drops.clone();
            w.add(always([1u8; 300]).wrap(move |_| Counted(drops)))
        };
        assert!(w.run_blocking(second.done()));
        drop(second);
        t.join().unwrap();
        // `big` was taken (and dropped) if its handle came after the
        // statement's put; otherwise never put: nothing to drop but the
        // second result.
        let n = drops.load(Ordering::Relaxed);
        assert!(n == 1 || n == 2, "{n} drops");
    });
}
