//! AND/OR waiting (`fibra::WaitUntil`) and `fibra::choose_all`: which
//! clauses are acquired, their handlers, resources left untouched,
//! cancellation, and a stress test that counts every value.

mod common;

use common::{DropCount, Rng, test_seed, with_watchdog};
use fibra::select::Clause;
use fibra::{
    BoxOp, IVar, Op, Receiver, RecvError, Semaphore, Sender, WaitUntil, always, bounded, channel,
    choose_all, unbounded,
};
use std::future::{Future, IntoFuture, poll_fn};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

/// Runs `fut` until it finishes or `d` passes; in the second case the
/// future is dropped where it stands (cancellation) and `None` returned.
async fn with_deadline<F: Future>(fut: F, d: Duration) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut timer = pin!(fibra::time::sleep(d));
    poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

// ----- a mirror of predicates, to compute what must happen ------------------

/// A predicate over clause indices, evaluated by the test itself.
#[derive(Clone, Debug)]
enum Tree {
    Leaf(usize),
    And(Box<Tree>, Box<Tree>),
    Or(Box<Tree>, Box<Tree>),
}

impl Tree {
    fn and(a: Tree, b: Tree) -> Tree {
        Tree::And(Box::new(a), Box::new(b))
    }

    fn or(a: Tree, b: Tree) -> Tree {
        Tree::Or(Box::new(a), Box::new(b))
    }

    fn holds(&self, done: &[bool]) -> bool {
        match self {
            Tree::Leaf(i) => done[*i],
            Tree::And(a, b) => a.holds(done) && b.holds(done),
            Tree::Or(a, b) => a.holds(done) || b.holds(done),
        }
    }

    fn pred<T>(&self, clauses: &[Clause<T>]) -> fibra::select::Pred {
        match self {
            Tree::Leaf(i) => clauses[*i].done(),
            Tree::And(a, b) => a.pred(clauses) & b.pred(clauses),
            Tree::Or(a, b) => a.pred(clauses) | b.pred(clauses),
        }
    }

    /// A random tree using each of `leaves` exactly once.
    fn random(rng: &mut Rng, leaves: &[usize]) -> Tree {
        if leaves.len() == 1 {
            return Tree::Leaf(leaves[0]);
        }
        let split = 1 + rng.below(leaves.len() - 1);
        let (l, r) = (
            Tree::random(rng, &leaves[..split]),
            Tree::random(rng, &leaves[split..]),
        );
        if rng.chance(50) {
            Tree::and(l, r)
        } else {
            Tree::or(l, r)
        }
    }
}

/// The four shapes over clauses 0 (A), 1 (B) and 2 (C).
fn shapes() -> Vec<(&'static str, Tree)> {
    let (a, b, c) = (Tree::Leaf(0), Tree::Leaf(1), Tree::Leaf(2));
    vec![
        (
            "A or B or C",
            Tree::or(Tree::or(a.clone(), b.clone()), c.clone()),
        ),
        (
            "A and B and C",
            Tree::and(Tree::and(a.clone(), b.clone()), c.clone()),
        ),
        (
            "(A and B) or C",
            Tree::or(Tree::and(a.clone(), b.clone()), c.clone()),
        ),
        ("(A or B) and C", Tree::and(Tree::or(a, b), c)),
    ]
}

const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];

/// The clauses acquired when the variables are filled in `order`, each
/// after the previous one was acquired: the shortest prefix of `order` on
/// which the predicate holds.
fn expected_prefix(tree: &Tree, order: [usize; 3]) -> Vec<usize> {
    let mut done = [false; 3];
    let mut prefix = Vec::new();
    for i in order {
        if tree.holds(&done) {
            break;
        }
        done[i] = true;
        prefix.push(i);
    }
    assert!(tree.holds(&done));
    prefix
}

/// Adds a `get_op` clause per variable whose handler logs its index, sends
/// it on `ack` (a handshake for the filler) and doubles the value.
fn ivar_clauses<'a>(
    w: &mut WaitUntil<'a>,
    vars: &'a [IVar<u32>],
    log: &Arc<Mutex<Vec<usize>>>,
    ack: &Sender<usize>,
) -> Vec<Clause<u32>> {
    vars.iter()
        .enumerate()
        .map(|(i, var)| {
            let (log, ack) = (log.clone(), ack.clone());
            w.add(var.get_op().wrap(move |v| {
                log.lock().unwrap().push(i);
                ack.try_send(i).unwrap();
                v * 2
            }))
        })
        .collect()
}

fn check_outcome(what: &str, clauses: &[Clause<u32>], log: &Mutex<Vec<usize>>, expected: &[usize]) {
    assert_eq!(*log.lock().unwrap(), expected, "{what}: handlers, in order");
    for (i, c) in clauses.iter().enumerate() {
        let want = expected.contains(&i).then(|| (10 + i as u32) * 2);
        assert_eq!(c.is_done(), want.is_some(), "{what}: clause {i}");
        assert_eq!(c.take(), want, "{what}: clause {i}'s result");
        assert_eq!(c.take(), None, "{what}: taken once");
    }
}

#[test]
fn and_or_predicates_acquire_exactly_the_clauses_they_need_in_a_task() {
    fibra::run(async {
        for (name, tree) in shapes() {
            for order in ORDERS {
                let what = format!("{name}, filled in order {order:?}");
                let expected = expected_prefix(&tree, order);
                let vars: Arc<[IVar<u32>; 3]> = Arc::new([IVar::new(), IVar::new(), IVar::new()]);
                let log = Arc::new(Mutex::new(Vec::new()));
                let (ack_tx, ack_rx) = unbounded::<usize>();
                // Fills one variable at a time, waiting until the waiter's
                // handler acknowledged it, so acquisition order is fill order.
                let filler = {
                    let (vars, expected) = (vars.clone(), expected.clone());
                    fibra::spawn(async move {
                        for i in expected {
                            vars[i].put(10 + i as u32).unwrap();
                            assert_eq!(ack_rx.recv().await, Ok(i));
                        }
                    })
                };
                let mut w = WaitUntil::new();
                let clauses = ivar_clauses(&mut w, &vars[..], &log, &ack_tx);
                assert!(w.run(tree.pred(&clauses)).await, "{what}");
                filler.await.unwrap();
                // The variables filled afterwards change nothing.
                for &i in &order[expected.len()..] {
                    vars[i].put(10 + i as u32).unwrap();
                }
                fibra::yield_now().await;
                check_outcome(&what, &clauses, &log, &expected);
            }
        }
    });
}

#[test]
fn and_or_predicates_acquire_exactly_the_clauses_they_need_on_an_os_thread() {
    for (name, tree) in shapes() {
        for order in ORDERS {
            let what = format!("{name}, filled in order {order:?} (run_blocking)");
            let expected = expected_prefix(&tree, order);
            let vars: Arc<[IVar<u32>; 3]> = Arc::new([IVar::new(), IVar::new(), IVar::new()]);
            let log = Arc::new(Mutex::new(Vec::new()));
            let (ack_tx, ack_rx) = unbounded::<usize>();
            let filler = {
                let (vars, expected) = (vars.clone(), expected.clone());
                std::thread::spawn(move || {
                    for i in expected {
                        vars[i].put(10 + i as u32).unwrap();
                        assert_eq!(ack_rx.recv_blocking(), Ok(i));
                    }
                })
            };
            let mut w = WaitUntil::new();
            let clauses = ivar_clauses(&mut w, &vars[..], &log, &ack_tx);
            assert!(w.run_blocking(tree.pred(&clauses)), "{what}");
            filler.join().unwrap();
            for &i in &order[expected.len()..] {
                vars[i].put(10 + i as u32).unwrap();
            }
            check_outcome(&what, &clauses, &log, &expected);
        }
    }
}

#[test]
fn and_or_predicates_over_a_mailbox_a_channel_and_a_semaphore() {
    // The same matrix over three kinds of resource: A is a mailbox (its
    // receive is woken to look again, not committed by the sender), B a
    // rendezvous channel, C a semaphore. The filler thread makes one ready
    // at a time and waits for its handler's acknowledgement.
    for (name, tree) in shapes() {
        for order in ORDERS {
            let what =
                format!("{name}, made ready in order {order:?} (mailbox, channel, semaphore)");
            let expected = expected_prefix(&tree, order);
            let (addr, mut mb) = fibra::mailbox::<u32>();
            let (tx, rx) = channel::<u32>();
            let sem = Arc::new(Semaphore::new(0));
            let log = Arc::new(Mutex::new(Vec::new()));
            let (ack_tx, ack_rx) = unbounded::<usize>();
            let handler = |i: usize| {
                let (log, ack) = (log.clone(), ack_tx.clone());
                move || {
                    log.lock().unwrap().push(i);
                    ack.try_send(i).unwrap();
                }
            };
            let filler = {
                let (expected, sem, tx) = (expected.clone(), sem.clone(), tx.clone());
                std::thread::spawn(move || {
                    for i in expected {
                        match i {
                            0 => addr.send(10).unwrap(),
                            1 => tx.send_blocking(11).unwrap(),
                            _ => sem.release(1),
                        }
                        assert_eq!(ack_rx.recv_blocking(), Ok(i));
                    }
                    addr
                })
            };
            let mut w = WaitUntil::new();
            let (h0, h1, h2) = (handler(0), handler(1), handler(2));
            let a = w.add(mb.recv_op().wrap(move |m| {
                h0();
                m.unwrap()
            }));
            let b = w.add(rx.recv_op().wrap(move |v| {
                h1();
                v.unwrap()
            }));
            let c = w.add(sem.acquire_op().wrap(move |p| {
                h2();
                p.unwrap().forget();
                12
            }));
            let clauses = [a, b, c];
            assert!(w.run_blocking(tree.pred(&clauses)), "{what}");
            let addr = filler.join().unwrap();
            assert_eq!(*log.lock().unwrap(), expected, "{what}: handlers, in order");
            for (i, cl) in clauses.iter().enumerate() {
                let want = expected.contains(&i).then_some(10 + i as u32);
                assert_eq!(cl.take(), want, "{what}: clause {i}");
            }
            // What the statement did not acquire is untouched: make the rest
            // ready now and find it all still there.
            for &i in &order[expected.len()..] {
                match i {
                    0 => addr.send(10).unwrap(),
                    1 => assert!(tx.try_send(11).is_err(), "{what}: a receive is left behind"),
                    _ => sem.release(1),
                }
            }
            let mail_left = usize::from(!expected.contains(&0));
            let permits_left = usize::from(!expected.contains(&2));
            assert_eq!(mb.len(), mail_left, "{what}: mailbox");
            assert_eq!(sem.available_permits(), permits_left, "{what}: semaphore");
        }
    }
}

#[test]
fn with_everything_ready_the_statement_stops_as_soon_as_the_predicate_holds() {
    // All three variables full before the statement runs: each round picks
    // one of the clauses left at random (then tries those every completion
    // needs), and the statement stops at the first acquisition that makes
    // the predicate hold.
    let vars = [IVar::new(), IVar::new(), IVar::new()];
    for (i, v) in vars.iter().enumerate() {
        v.put(10 + i as u32).unwrap();
    }
    for (name, tree) in shapes() {
        let mut sizes = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let log = Arc::new(Mutex::new(Vec::new()));
            let (ack_tx, _ack_rx) = unbounded::<usize>();
            let mut w = WaitUntil::new();
            let clauses = ivar_clauses(&mut w, &vars, &log, &ack_tx);
            assert!(w.run_blocking(tree.pred(&clauses)));
            let order = log.lock().unwrap().clone();
            let mut done = [false; 3];
            for (k, &i) in order.iter().enumerate() {
                assert!(!done[i], "{name}: clause {i} acquired twice");
                assert!(
                    !tree.holds(&done),
                    "{name}: went on after it held ({order:?}, {k})"
                );
                done[i] = true;
            }
            assert!(
                tree.holds(&done),
                "{name}: stopped before it held ({order:?})"
            );
            for (i, c) in clauses.iter().enumerate() {
                assert_eq!(c.take(), done[i].then(|| (10 + i as u32) * 2), "{name}");
            }
            sizes.insert(order.len());
        }
        let want: &[usize] = match name {
            "A or B or C" => &[1],
            "A and B and C" => &[3],
            // C alone, or two clauses (A and B, or one of them then C).
            "(A and B) or C" => &[1, 2],
            // One of A/B, and C: every completion needs C, so a round that
            // acquires A or B goes on to C (never A, B, then C).
            _ => &[2],
        };
        assert_eq!(
            sizes.into_iter().collect::<Vec<_>>(),
            want,
            "{name}: sizes of the acquired sets"
        );
    }
}

// ----- clauses not acquired are untouched ------------------------------------

#[test]
fn a_clause_not_acquired_leaves_its_channel_value_and_its_semaphore_permit() {
    let (tx, rx) = bounded::<u32>(1);
    let sem = Semaphore::new(0);
    let mut outcomes = [0usize; 2];
    for round in 0..300 {
        tx.try_send(round).unwrap();
        sem.release(1);
        // Both ready; "chan or permit" takes exactly one of them.
        let mut w = WaitUntil::new();
        let from_chan = w.add(rx.recv_op());
        let permit = w.add(sem.acquire_op());
        assert!(w.run_blocking(from_chan.done() | permit.done()));
        match (from_chan.take(), permit.take()) {
            (Some(v), None) => {
                assert_eq!(v, Ok(round));
                assert_eq!(sem.available_permits(), 1, "the permit stayed");
                sem.try_acquire().unwrap().forget();
                outcomes[0] += 1;
            }
            (None, Some(p)) => {
                let p = p.unwrap();
                assert_eq!(sem.available_permits(), 0, "the permit is held");
                assert_eq!(rx.try_recv(), Ok(round), "the value stayed");
                p.forget();
                outcomes[1] += 1;
            }
            other => panic!("acquired {other:?}"),
        }
        assert!(rx.is_empty());
        assert_eq!(sem.available_permits(), 0);
    }
    assert!(
        outcomes.iter().all(|&n| n > 50),
        "both clauses win sometimes: {outcomes:?}"
    );
}

#[test]
fn a_send_clause_not_acquired_sends_nothing_and_drops_its_value_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = bounded::<DropCount>(1);
    let ready = IVar::new();
    ready.put(()).unwrap();
    let (mut sent, mut not_sent) = (0, 0);
    for round in 0..300u64 {
        let mut w = WaitUntil::new();
        let send = w.add(tx.send_op(DropCount::new(round, &drops)));
        let other = w.add(ready.get_op());
        // Both ready: exactly one is acquired.
        assert!(w.run_blocking(send.done() | other.done()));
        let made = round as usize + 1;
        if send.is_done() {
            assert!(!other.is_done());
            send.take().unwrap().unwrap();
            // Sent: the value lives in the channel.
            assert_eq!(drops.load(Ordering::SeqCst), made - 1);
            assert_eq!(rx.try_recv().unwrap().value, round);
            sent += 1;
        } else {
            assert!(other.is_done());
            assert!(rx.is_empty(), "a send clause not acquired sent its value");
            // Not sent: dropped with the statement, once.
            assert_eq!(drops.load(Ordering::SeqCst), made);
            not_sent += 1;
        }
        assert_eq!(drops.load(Ordering::SeqCst), made);
    }
    assert!(
        sent > 50 && not_sent > 50,
        "sent {sent}, not sent {not_sent}"
    );
}

// ----- cancellation ----------------------------------------------------------

/// A handler that records `name` and passes the result on.
fn noting<T>(handled: &Arc<Mutex<Vec<&'static str>>>, name: &'static str) -> impl FnOnce(T) -> T {
    let handled = handled.clone();
    move |v| {
        handled.lock().unwrap().push(name);
        v
    }
}

#[test]
fn dropping_run_mid_wait_keeps_the_acquired_results_and_leaves_the_rest() {
    let out = fibra::run(async {
        let (tx_a, rx_a) = bounded::<u32>(1);
        let (tx_c, rx_c) = bounded::<u32>(1);
        let sem = Semaphore::new(1);
        let ivar = IVar::<u32>::new();
        tx_a.send(1).await.unwrap();
        let handled = Arc::new(Mutex::new(Vec::new()));
        let mut w = WaitUntil::new();
        let a = w.add(rx_a.recv_op().wrap(noting(&handled, "a")));
        let b = w.add(sem.acquire_op().wrap(noting(&handled, "b")));
        let c = w.add(rx_c.recv_op().wrap(noting(&handled, "c")));
        let d = w.add(ivar.get_op().wrap(noting(&handled, "d")));
        let pred = a.done() & b.done() & c.done() & d.done();
        let t = Instant::now();
        let r = with_deadline(w.run(pred), Duration::from_millis(20)).await;
        assert!(r.is_none(), "the statement cannot hold: it timed out");
        assert!(t.elapsed() >= Duration::from_millis(20));
        // A and B were acquired and keep their results...
        let mut got = handled.lock().unwrap().clone();
        got.sort_unstable();
        assert_eq!(got, ["a", "b"]);
        assert_eq!(a.take(), Some(Ok(1)));
        let permit = b.take().expect("b acquired").unwrap();
        assert_eq!(sem.available_permits(), 0);
        drop(permit);
        assert_eq!(sem.available_permits(), 1);
        // ...C and D were withdrawn: what arrives now stays where it is.
        assert!(!c.is_done() && !d.is_done());
        tx_c.send(3).await.unwrap();
        ivar.put(4).unwrap();
        fibra::yield_now().await;
        assert_eq!(rx_c.try_recv(), Ok(3), "a withdrawn clause took nothing");
        assert_eq!(c.take(), None);
        assert_eq!(d.take(), None);
        handled.lock().unwrap().clone()
    });
    assert_eq!(out.len(), 2);
}

#[test]
fn a_value_racing_the_cancellation_is_either_acquired_or_left_in_the_channel() {
    let seed = test_seed("a_value_racing_the_cancellation");
    let mut rng = Rng::new(seed);
    let plans: Vec<(u32, u64)> = (0..200)
        .map(|_| (rng.below(40) as u32, rng.below(3) as u64))
        .collect();
    let (acquired, left) = fibra::run(async move {
        let (tx, rx) = channel::<u32>();
        let (mut acquired, mut left) = (0, 0);
        for (round, (spins, ms)) in plans.into_iter().enumerate() {
            let round = round as u32;
            let tx = tx.clone();
            // A rendezvous send from another task, after some yields: it
            // commits to the waiting clause, or finds nobody and waits.
            let sender = fibra::spawn(async move {
                for _ in 0..spins {
                    fibra::yield_now().await;
                }
                let _ = tx.send(round).await;
            });
            let never: IVar<()> = IVar::new();
            let mut w = WaitUntil::new();
            let c = w.add(rx.recv_op());
            let n = w.add(never.get_op());
            let r = with_deadline(w.run(c.done() & n.done()), Duration::from_millis(ms)).await;
            assert!(r.is_none());
            match c.take() {
                Some(v) => {
                    assert_eq!(v, Ok(round));
                    acquired += 1;
                }
                None => {
                    // Not acquired: the sender is still there with its value.
                    assert_eq!(rx.recv().await, Ok(round), "seed {seed}");
                    left += 1;
                }
            }
            sender.await.unwrap();
        }
        (acquired, left)
    });
    assert_eq!(acquired + left, 200);
}

// ----- what a predicate may name ---------------------------------------------

#[test]
fn a_predicate_naming_a_clause_beyond_this_statement_returns_false_at_once() {
    let (tx, rx) = bounded::<u32>(1);
    tx.try_send(7).unwrap();
    let mut other = WaitUntil::new();
    let _x = other.add(always(0));
    let y = other.add(always(1));
    let mut w = WaitUntil::new();
    let a = w.add(rx.recv_op());
    // `y` is the second clause of another statement; `w` has one clause.
    assert!(!w.run_blocking(y.done()));
    assert!(!a.is_done());
    assert_eq!(rx.try_recv(), Ok(7), "nothing was acquired");
    drop(other);
}

#[test]
fn a_predicate_naming_another_statements_clause_does_not_wait_for_this_ones() {
    let (tx, rx) = bounded::<u32>(1);
    tx.try_send(7).unwrap();
    let mut other = WaitUntil::new();
    let x = other.add(always(0));
    let mut w = WaitUntil::new();
    let a = w.add(rx.recv_op());
    // `x` is not a clause of `w`: the predicate can never hold for `w`
    // (the docs: `run` returns `false` if it names a clause of another
    // statement), and `w`'s own clause must be left alone.
    let held = w.run_blocking(x.done());
    assert!(
        !held,
        "run reported that another statement's clause was acquired"
    );
    assert!(!a.is_done(), "w's clause #0 was acquired in place of x");
    assert_eq!(rx.try_recv(), Ok(7));
}

#[test]
fn run_blocking_on_a_fibra_worker_panics() {
    let panicked = fibra::run(async {
        let h = fibra::spawn(async {
            let ivar = IVar::<u8>::new();
            let mut w = WaitUntil::new();
            let c = w.add(ivar.get_op());
            w.run_blocking(c.done())
        });
        h.await.unwrap_err().is_panic()
    });
    assert!(panicked);
}

// ----- choose_all ------------------------------------------------------------

#[test]
fn choose_all_returns_every_result_in_the_order_of_the_ops() {
    let seed = test_seed("choose_all_returns_every_result_in_the_order_of_the_ops");
    let mut rng = Rng::new(seed);
    for _ in 0..20 {
        let mut order: Vec<usize> = (0..6).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let got = fibra::run(async move {
            // Rendezvous channels: each value is handed over while the
            // choice waits, in the sender's (shuffled) order.
            let (txs, rxs): (Vec<_>, Vec<_>) = (0..6).map(|_| channel::<usize>()).unzip();
            let sender = fibra::spawn(async move {
                for i in order {
                    txs[i].send(100 + i).await.unwrap();
                }
            });
            let got = choose_all(rxs.iter().map(Receiver::recv_op)).await;
            sender.await.unwrap();
            got
        });
        assert_eq!(got, (100..106).map(Ok).collect::<Vec<_>>(), "seed {seed}");
    }
}

#[test]
fn choose_all_over_ops_of_different_types_and_an_empty_set() {
    #[derive(Debug, PartialEq)]
    enum Got {
        Chan(u32),
        Permit,
        IVar(&'static str),
        Mail(char),
    }
    let (tx, rx) = bounded::<u32>(1);
    let sem = Arc::new(Semaphore::new(0));
    let ivar = Arc::new(IVar::new());
    let (addr, mut mb) = fibra::mailbox::<char>();
    let feeder = {
        let (sem, ivar) = (sem.clone(), ivar.clone());
        std::thread::spawn(move || {
            addr.send('m').unwrap();
            ivar.put("iv").unwrap();
            sem.release(1);
            tx.send_blocking(5).unwrap();
        })
    };
    let ops: Vec<BoxOp<'_, Got>> = vec![
        rx.recv_op().wrap(|v| Got::Chan(v.unwrap())).boxed(),
        sem.acquire_op()
            .wrap(|p| {
                p.unwrap().forget();
                Got::Permit
            })
            .boxed(),
        ivar.get_op().wrap(Got::IVar).boxed(),
        mb.recv_op().wrap(|m| Got::Mail(m.unwrap())).boxed(),
    ];
    let got = choose_all(ops).perform();
    feeder.join().unwrap();
    assert_eq!(
        got,
        [Got::Chan(5), Got::Permit, Got::IVar("iv"), Got::Mail('m')]
    );
    let none: Vec<fibra::Always<u8>> = Vec::new();
    assert!(choose_all(none).perform().is_empty());
}

#[test]
fn dropping_choose_all_withdraws_waiting_parts_and_gives_committed_ones_back() {
    let (tx_a, rx_a) = bounded::<u32>(1);
    let (tx_b, rx_b) = bounded::<u32>(1);
    tx_a.try_send(1).unwrap();
    fibra::block_on(async {
        let r = with_deadline(
            choose_all([rx_a.recv_op(), rx_b.recv_op()]).into_future(),
            Duration::from_millis(10),
        )
        .await;
        assert!(r.is_none());
    });
    // A committed: its value went back to its channel with the dropped
    // perform; B was withdrawn and takes nothing sent later.
    assert_eq!(rx_a.try_recv(), Ok(1));
    tx_b.try_send(2).unwrap();
    assert_eq!(rx_b.try_recv(), Ok(2));
    drop(tx_a);
}

/// A `choose_all` of two parts polled again with the same waker keeps the
/// one its parts hold; polled with another, its waiting part takes the new
/// one: a partner's commit wakes the waker of the latest poll only.
#[test]
fn choose_all_wakes_the_waker_of_its_latest_poll() {
    let (tx_a, rx_a) = bounded::<u32>(0);
    let (tx_b, rx_b) = bounded::<u32>(0);
    let (first, first_count) = common::WakeCounter::new();
    let (second, second_count) = common::WakeCounter::new();
    let mut all = pin!(choose_all([rx_a.recv_op(), rx_b.recv_op()]).into_future());
    assert!(common::poll_with(all.as_mut(), &first).is_pending());
    // The same waker again (a clone: same identity): nothing to hand over.
    assert!(common::poll_with(all.as_mut(), &first.clone()).is_pending());
    assert_eq!(tx_a.try_send(1), Ok(()));
    assert_eq!((first_count.count(), second_count.count()), (1, 0));
    // Another waker: the part still waiting takes it.
    assert!(common::poll_with(all.as_mut(), &second).is_pending());
    assert_eq!(tx_b.try_send(2), Ok(()));
    assert_eq!((first_count.count(), second_count.count()), (1, 1));
    assert_eq!(
        common::poll_with(all.as_mut(), &second),
        Poll::Ready(vec![Ok(1), Ok(2)])
    );
}

#[test]
fn an_and_statement_wakes_the_waker_of_its_latest_poll() {
    let (tx_a, rx_a) = bounded::<u32>(0);
    let (tx_b, rx_b) = bounded::<u32>(0);
    let (tx_c, rx_c) = bounded::<u32>(0);
    let (first, first_count) = common::WakeCounter::new();
    let (second, second_count) = common::WakeCounter::new();
    let mut w = WaitUntil::new();
    let a = w.add(rx_a.recv_op().wrap(Result::unwrap));
    let b = w.add(rx_b.recv_op().wrap(Result::unwrap));
    let c = w.add(rx_c.recv_op().wrap(Result::unwrap));
    let mut run = pin!(w.run(a.done() & b.done() & c.done()));
    assert!(common::poll_with(run.as_mut(), &first).is_pending());
    assert_eq!(tx_a.try_send(1), Ok(()));
    assert_eq!((first_count.count(), second_count.count()), (1, 0));
    // A look with another waker acquires a; b and c take the new waker.
    assert!(common::poll_with(run.as_mut(), &second).is_pending());
    assert_eq!(a.take(), Some(1));
    assert_eq!(tx_c.try_send(3), Ok(()));
    assert_eq!((first_count.count(), second_count.count()), (1, 1));
    assert!(common::poll_with(run.as_mut(), &second).is_pending());
    assert_eq!(tx_b.try_send(2), Ok(()));
    assert_eq!((first_count.count(), second_count.count()), (1, 2));
    assert_eq!(common::poll_with(run.as_mut(), &second), Poll::Ready(true));
    assert_eq!((b.take(), c.take()), (Some(2), Some(3)));
}

/// With three parts or more committed by partners only, the task is woken
/// once, by the last commit, with the waker of its latest poll.
#[test]
fn choose_all_of_many_parts_wakes_once_with_its_latest_waker() {
    let (tx_a, rx_a) = bounded::<u32>(0);
    let (tx_b, rx_b) = bounded::<u32>(0);
    let (tx_c, rx_c) = bounded::<u32>(0);
    let (first, first_count) = common::WakeCounter::new();
    let (second, second_count) = common::WakeCounter::new();
    let mut all = pin!(choose_all([rx_a.recv_op(), rx_b.recv_op(), rx_c.recv_op()]).into_future());
    assert!(common::poll_with(all.as_mut(), &first).is_pending());
    assert_eq!(tx_a.try_send(1), Ok(()));
    assert!(common::poll_with(all.as_mut(), &second).is_pending());
    assert_eq!(tx_b.try_send(2), Ok(()));
    assert_eq!((first_count.count(), second_count.count()), (0, 0));
    // Back to the first, then the second again: the last commit wakes it.
    assert!(common::poll_with(all.as_mut(), &first).is_pending());
    assert!(common::poll_with(all.as_mut(), &second).is_pending());
    assert_eq!(tx_c.try_send(3), Ok(()));
    assert_eq!((first_count.count(), second_count.count()), (0, 1));
    assert_eq!(
        common::poll_with(all.as_mut(), &second),
        Poll::Ready(vec![Ok(1), Ok(2), Ok(3)])
    );
}

// ----- stress ----------------------------------------------------------------

/// What one consumer saw.
#[derive(Default)]
struct Tally {
    values: Vec<u32>,
    rounds: usize,
    cancelled: usize,
}

/// One consumer's rounds: random AND/OR statements over receive clauses on
/// random channels, each with a random deadline (a round that does not hold
/// in time is cancelled: its acquired clauses keep their values). Once
/// `stop` is set, stops after a round that found only closed channels, or
/// at random (leaving values behind).
async fn consume(
    rxs: Arc<Vec<Receiver<u32>>>,
    stop: Arc<AtomicBool>,
    mut rng: Rng,
    progress: Arc<AtomicUsize>,
) -> Tally {
    let mut tally = Tally::default();
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let n = 1 + rng.below(4);
        let chans: Vec<usize> = (0..n).map(|_| rng.below(rxs.len())).collect();
        let tree = Tree::random(&mut rng, &(0..n).collect::<Vec<_>>());
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut w = WaitUntil::new();
        let clauses: Vec<Clause<Result<u32, RecvError>>> = chans
            .iter()
            .enumerate()
            .map(|(i, &ch)| {
                let log = log.clone();
                w.add(rxs[ch].recv_op().wrap(move |r| {
                    log.lock().unwrap().push(i);
                    r
                }))
            })
            .collect();
        let deadline = Duration::from_millis(1 + rng.below(4) as u64);
        let held = with_deadline(w.run(tree.pred(&clauses)), deadline).await;
        let order = log.lock().unwrap().clone();
        let mut done = vec![false; n];
        for &i in &order {
            assert!(!done[i], "clause {i} acquired twice");
            assert!(
                !tree.holds(&done),
                "a round went on after its predicate held"
            );
            done[i] = true;
        }
        match held {
            Some(h) => {
                assert!(h);
                assert!(tree.holds(&done), "run returned before the predicate held");
            }
            None => {
                assert!(!tree.holds(&done), "cancelled after the predicate held");
                tally.cancelled += 1;
            }
        }
        let mut all_closed = true;
        for (i, c) in clauses.iter().enumerate() {
            match c.take() {
                Some(Ok(v)) => {
                    assert!(done[i], "a result without a handler");
                    tally.values.push(v);
                    all_closed = false;
                }
                Some(Err(RecvError)) => assert!(done[i]),
                None => {
                    assert!(!done[i], "a handler without a result");
                    all_closed = false;
                }
            }
        }
        tally.rounds += 1;
        progress.fetch_add(1, Ordering::SeqCst);
        if stopping && all_closed {
            return tally;
        }
        if stopping && rng.chance(20) {
            // Leave early sometimes: values may stay in the channels.
            return tally;
        }
    }
}

#[test]
fn stress_random_and_or_statements_receive_every_value_exactly_once() {
    const FEEDERS: u32 = 3;
    let per_feeder = common::scaled(1_500) as u32; // FIBRA_STRESS scales it
    let seed = test_seed("stress_random_and_or_statements");
    with_watchdog(
        "stress_random_and_or_statements",
        seed,
        Duration::from_secs(30),
        move || {
            let start = Instant::now();
            let mut rng = Rng::new(seed);
            let (txs, rxs): (Vec<Sender<u32>>, Vec<Receiver<u32>>) = [0, 1, 4, usize::MAX]
                .into_iter()
                .map(|cap| {
                    if cap == usize::MAX {
                        unbounded()
                    } else {
                        bounded(cap)
                    }
                })
                .unzip();
            let rxs = Arc::new(rxs);
            let feeders: Vec<_> = (0..FEEDERS)
                .map(|f| {
                    let txs = txs.clone();
                    let mut rng = Rng::new(rng.next_u64());
                    std::thread::spawn(move || {
                        for s in 0..per_feeder {
                            let ch = rng.below(txs.len());
                            txs[ch].send_blocking(f * per_feeder + s).unwrap();
                        }
                    })
                })
                .collect();
            drop(txs);
            let stop = Arc::new(AtomicBool::new(false));
            let progress = Arc::new(AtomicUsize::new(0));
            // One consumer on an OS thread, one as a fibra task.
            let thread_consumer = {
                let (rxs, stop, progress) = (rxs.clone(), stop.clone(), progress.clone());
                let rng = Rng::new(rng.next_u64());
                std::thread::spawn(move || fibra::block_on(consume(rxs, stop, rng, progress)))
            };
            let rt = fibra::Runtime::builder().workers(2).build().unwrap();
            let task_consumer = {
                let (rxs, stop, progress) = (rxs.clone(), stop.clone(), progress.clone());
                rt.spawn(consume(rxs, stop, Rng::new(rng.next_u64()), progress))
            };
            for f in feeders {
                f.join().unwrap();
            }
            stop.store(true, Ordering::SeqCst);
            let a = thread_consumer.join().unwrap();
            let b = rt.block_on(task_consumer).unwrap();
            let mut all = a.values;
            all.extend(b.values);
            let received = all.len();
            // What is left in the channels.
            for rx in rxs.iter() {
                while let Ok(v) = rx.try_recv() {
                    all.push(v);
                }
            }
            let left = all.len() - received;
            let n = u64::from(FEEDERS * per_feeder);
            common::assert_exactly_once(all.into_iter().map(u64::from).collect(), n);
            eprintln!(
                "stress: {} + {} rounds ({} + {} cancelled), {received} received, {left} left, {:?}",
                a.rounds,
                b.rounds,
                a.cancelled,
                b.cancelled,
                start.elapsed()
            );
        },
    );
}

// ----- handlers --------------------------------------------------------------

#[test]
fn handlers_run_in_the_waiting_task_right_after_each_acquisition() {
    // Each handler runs on the waiting thread, when the statement acquires
    // its clause: b's before a is even sent.
    let (tx_a, rx_a) = channel::<u32>();
    let (tx_b, rx_b) = channel::<u32>();
    let (handled_b, b_handled) = std::sync::mpsc::channel();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let waiter = std::thread::spawn({
        let seen = seen.clone();
        move || {
            let mut w = WaitUntil::new();
            let s1 = seen.clone();
            let a = w.add(rx_a.recv_op().wrap(move |v| {
                s1.lock().unwrap().push(("a", std::thread::current().id()));
                v.unwrap()
            }));
            let s2 = seen.clone();
            let b = w.add(rx_b.recv_op().wrap(move |v| {
                s2.lock().unwrap().push(("b", std::thread::current().id()));
                handled_b.send(()).unwrap();
                v.unwrap()
            }));
            assert!(w.run_blocking(a.done() & b.done()));
            (a.take(), b.take(), std::thread::current().id())
        }
    });
    // Rendezvous sends from this thread: each meets the waiting statement.
    tx_b.send_blocking(2).unwrap();
    b_handled.recv().unwrap();
    tx_a.send_blocking(1).unwrap();
    let (a, b, waiter_id) = waiter.join().unwrap();
    assert_eq!((a, b), (Some(1), Some(2)));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, [("b", waiter_id), ("a", waiter_id)]);
}

#[test]
fn an_and_statement_performs_each_clause_once_and_each_commits_on_its_own() {
    // `a and b`: every clause will be acquired, so each is performed once,
    // on its own: b's commit (by a sender on another thread) does not
    // withdraw a, whose nack never fires, and a's builder runs once. (In
    // rounds, a would lose the round b wins: its nack would fire and it
    // would be built again.)
    let (tx_a, rx_a) = channel::<u32>();
    let (tx_b, rx_b) = channel::<u32>();
    let nacks = Arc::new(Mutex::new(Vec::new()));
    let waiter = std::thread::spawn({
        let nacks = nacks.clone();
        move || {
            let rx_a = &rx_a;
            let mut w = WaitUntil::new();
            let a = w.add(fibra::with_nack(move |nack| {
                nacks.lock().unwrap().push(nack);
                rx_a.recv_op().wrap(Result::unwrap)
            }));
            let b = w.add(rx_b.recv_op().wrap(Result::unwrap));
            assert!(w.run_blocking(a.done() & b.done()));
            (a.take(), b.take())
        }
    });
    // The rendezvous sends meet the published clauses, b first.
    tx_b.send_blocking(2).unwrap();
    tx_a.send_blocking(1).unwrap();
    assert_eq!(waiter.join().unwrap(), (Some(1), Some(2)));
    let nacks = std::mem::take(&mut *nacks.lock().unwrap());
    assert_eq!(nacks.len(), 1, "a was built once");
    for nack in nacks {
        assert!(nack.try_perform().is_err(), "a never lost");
    }
}

#[test]
fn an_and_statement_dropped_after_a_remote_commit_hands_the_value_back() {
    // `a and b` over rendezvous channels: a's sender commits a while b
    // waits; the statement is dropped before it looks again. The value
    // committed to a goes back to its channel, for the next receiver.
    fibra::run(async {
        let (tx_a, rx_a) = channel::<u32>();
        let (_tx_b, rx_b) = channel::<u32>();
        let mut w = WaitUntil::new();
        let a = w.add(rx_a.recv_op());
        let b = w.add(rx_b.recv_op());
        let mut run = Box::pin(w.run(a.done() & b.done()));
        let first = poll_fn(|cx| Poll::Ready(run.as_mut().poll(cx))).await;
        assert!(first.is_pending(), "both clauses published");
        // The sender finds a's record and commits it.
        assert_eq!(tx_a.try_send(7), Ok(()));
        drop(run);
        assert_eq!(a.take(), None);
        assert_eq!(b.take(), None);
        assert_eq!(rx_a.try_recv(), Ok(7), "handed back to the channel");
    });
}

// ----- clause records --------------------------------------------------------

#[test]
fn a_clause_whose_handle_is_dropped_still_counts_and_its_result_is_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = bounded::<DropCount>(1);
    let ready = IVar::new();
    ready.put(()).unwrap();
    for round in 0..50u64 {
        tx.try_send(DropCount::new(round, &drops)).unwrap();
        let mut w = WaitUntil::new();
        let a = w.add(rx.recv_op());
        let b = w.add(ready.get_op());
        let pred = a.done() & b.done();
        // The handle goes before the statement runs: the clause is still
        // acquired (the predicate needs it), and its result, which nobody
        // can take, is dropped once.
        drop(a);
        assert!(w.run_blocking(pred));
        assert_eq!(b.take(), Some(()));
        assert!(rx.is_empty(), "round {round}: the value was received");
        assert_eq!(drops.load(Ordering::SeqCst), round as usize + 1);
    }
}

#[test]
fn values_arriving_while_a_statement_waits_are_acquired_or_left_never_lost() {
    // A filler thread sends into two `bounded(1)` channels while the
    // statement is blocked on them. `a and b` acquires both; `a or b`
    // acquires one, and the other value (which may have arrived while the
    // round that lost it was published) stays in its channel.
    let (tx_a, rx_a) = bounded::<u32>(1);
    let (tx_b, rx_b) = bounded::<u32>(1);
    let rounds = 300u32;
    let filler = std::thread::spawn(move || {
        for r in 0..rounds {
            if r % 2 == 0 {
                tx_a.send_blocking(r).unwrap();
                tx_b.send_blocking(r).unwrap();
            } else {
                tx_b.send_blocking(r).unwrap();
                tx_a.send_blocking(r).unwrap();
            }
        }
    });
    let (mut got, mut left) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let mut w = WaitUntil::new();
        let a = w.add(rx_a.recv_op().wrap(Result::unwrap));
        let b = w.add(rx_b.recv_op().wrap(Result::unwrap));
        if r % 3 == 0 {
            assert!(w.run_blocking(a.done() | b.done()));
            let (x, y) = (a.take(), b.take());
            assert!(x.is_some() != y.is_some(), "round {r}: one of a or b");
            got.extend(x.or(y));
            // The other value is still coming, or in its channel: take it.
            let other = if x.is_some() { &rx_b } else { &rx_a };
            left.push(other.recv_blocking().unwrap());
        } else {
            assert!(w.run_blocking(a.done() & b.done()));
            got.extend([a.take().unwrap(), b.take().unwrap()]);
        }
    }
    filler.join().unwrap();
    let mut all: Vec<u32> = got.into_iter().chain(left).collect();
    all.sort_unstable();
    let want: Vec<u32> = (0..rounds).flat_map(|r| [r, r]).collect();
    assert_eq!(all, want, "every value exactly once");
}
