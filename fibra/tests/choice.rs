//! Choice and the simple combinators: `choose`, `choose_biased`, `never`,
//! `always`, `wrap`, `guard`, dynamic choice, `try_perform`, the seeded rng.

mod common;

use common::{poll_noop, poll_with};
use fibra::{
    BoxOp, Op, Receiver, RecvError, Sender, TryRecvError, TrySendError, always, bounded, channel,
    choose, choose_biased, guard, never, seed_choice_rng, unbounded,
};
use std::cell::Cell;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

fn rendezvous_set(n: usize) -> (Vec<Sender<u32>>, Vec<Receiver<u32>>) {
    (0..n).map(|_| channel::<u32>()).unzip()
}

/// Asserts that no receiver is still waiting on any of `txs` (a withdrawn
/// branch must leave nothing behind that could absorb a later send).
fn assert_no_waiting_receivers(txs: &[Sender<u32>], except: Option<usize>) {
    for (i, tx) in txs.iter().enumerate() {
        if Some(i) != except {
            assert_eq!(
                tx.try_send(7),
                Err(TrySendError::Full(7)),
                "channel {i} still has a receiver"
            );
        }
    }
}

// ----- fairness and priority ------------------------------------------------

#[test]
fn fair_choice_between_two_always_ready_branches_picks_each_about_half_the_time() {
    let n = 10_000;
    let mut counts = [0usize; 2];
    for _ in 0..n {
        counts[choose((always(0), always(1))).perform()] += 1;
    }
    // Expected 5000 each; the standard deviation is 50.
    for c in counts {
        assert!((4_500..=5_500).contains(&c), "unfair split {counts:?}");
    }
}

#[test]
fn fair_choice_over_many_ready_branches_spreads_evenly() {
    let n = 10_000;
    let mut counts = [0usize; 10];
    for _ in 0..n {
        let ops: Vec<_> = (0..10).map(always).collect();
        counts[choose(ops).perform()] += 1;
    }
    // Expected 1000 each; the standard deviation is 30.
    for c in counts {
        assert!((800..=1_200).contains(&c), "unfair split {counts:?}");
    }
}

#[test]
fn fair_choice_between_ready_channels_takes_from_both() {
    let (tx_a, rx_a) = unbounded::<u8>();
    let (tx_b, rx_b) = unbounded::<u8>();
    for _ in 0..5_000 {
        tx_a.try_send(b'a').unwrap();
        tx_b.try_send(b'b').unwrap();
    }
    let mut a = 0;
    for _ in 0..4_000 {
        if choose((rx_a.recv_op(), rx_b.recv_op())).perform().unwrap() == b'a' {
            a += 1;
        }
    }
    assert!((1_700..=2_300).contains(&a), "took {a} of 4000 from a");
    assert_eq!(
        rx_a.len() + rx_b.len(),
        6_000,
        "exactly one value per choice"
    );
}

#[test]
fn biased_choice_always_takes_the_first_ready_branch() {
    for _ in 0..1_000 {
        assert_eq!(
            choose_biased((never(), always(1), always(2), always(3))).perform(),
            1
        );
    }
    let (ctl_tx, ctl) = unbounded::<&str>();
    let (data_tx, data) = unbounded::<&str>();
    for _ in 0..50 {
        ctl_tx.try_send("ctl").unwrap();
        data_tx.try_send("data").unwrap();
    }
    for i in 0..100 {
        let got = choose_biased((ctl.recv_op(), data.recv_op()))
            .perform()
            .unwrap();
        assert_eq!(got, if i < 50 { "ctl" } else { "data" }, "at {i}");
    }
}

#[test]
fn biased_choice_falls_back_to_always_only_when_nothing_else_is_ready() {
    let (tx, rx) = bounded::<u32>(1);
    let poll = || choose_biased((rx.recv_op().wrap(|r| r.ok()), always(None))).perform();
    assert_eq!(poll(), None);
    tx.try_send(3).unwrap();
    assert_eq!(poll(), Some(3));
    assert_eq!(poll(), None);
}

// ----- never / always -------------------------------------------------------

#[test]
fn never_does_not_commit_alone_or_in_a_choice_of_nevers() {
    assert!(never::<u8>().try_perform().is_err());
    assert!(choose((never::<u8>(), never())).try_perform().is_err());
    assert!(
        choose(Vec::<fibra::Never<u8>>::new())
            .try_perform()
            .is_err()
    );
    let rt = common::tokio_ct();
    rt.block_on(async {
        let r = tokio::time::timeout(Duration::from_millis(20), never::<u8>()).await;
        assert!(r.is_err(), "never completed");
        let r =
            tokio::time::timeout(Duration::from_millis(20), choose((never::<u8>(), never()))).await;
        assert!(r.is_err(), "a choice of nevers completed");
    });
}

#[test]
fn an_empty_dynamic_choice_never_commits() {
    let empty: Vec<BoxOp<'_, u8>> = Vec::new();
    let mut fut = pin!(choose(empty).into_future());
    for _ in 0..3 {
        assert!(poll_noop(fut.as_mut()).is_pending());
    }
}

#[test]
fn always_commits_at_once_with_its_value_and_wins_over_blocked_branches() {
    assert_eq!(always("x".to_string()).perform(), "x");
    assert_eq!(futures::executor::block_on(async { always(5).await }), 5);
    assert_eq!(always(6).try_perform().ok(), Some(6));
    let (_tx, rx) = channel::<u32>();
    let got = choose((rx.recv_op().wrap(|r| r.unwrap()), never(), always(9))).perform();
    assert_eq!(got, 9);
}

// ----- wrap -----------------------------------------------------------------

#[test]
fn wrap_maps_the_result_and_nested_wraps_apply_in_order() {
    let op = always(1)
        .wrap(|x| x + 1)
        .wrap(|x| x * 10)
        .wrap(|x| format!("{x}"));
    assert_eq!(op.perform(), "20");
}

#[test]
fn only_the_winning_branch_runs_its_wrap() {
    let runs = [
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ];
    let (tx, rx) = bounded::<u32>(1);
    let (_tx2, rx2) = bounded::<u32>(1);
    tx.try_send(4).unwrap();
    let got = choose((
        rx.recv_op().wrap(|r| {
            runs[0].fetch_add(1, Ordering::SeqCst);
            r.unwrap()
        }),
        rx2.recv_op().wrap(|r| {
            runs[1].fetch_add(1, Ordering::SeqCst);
            r.unwrap()
        }),
        never().wrap(|x: u32| {
            runs[2].fetch_add(1, Ordering::SeqCst);
            x
        }),
    ))
    .perform();
    assert_eq!(got, 4);
    let runs: Vec<_> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
    assert_eq!(runs, [1, 0, 0]);
}

#[test]
fn wrap_runs_on_the_performing_thread_after_a_remote_commit() {
    let (tx, rx) = channel::<u32>();
    let performer = std::thread::spawn(move || {
        let me = std::thread::current().id();
        rx.recv_op()
            .wrap(move |r| (r, std::thread::current().id() == me))
            .perform()
    });
    std::thread::sleep(Duration::from_millis(20));
    tx.send_blocking(1).unwrap();
    assert_eq!(performer.join().unwrap(), (Ok(1), true));
}

// ----- guard ----------------------------------------------------------------

#[test]
fn guard_builds_nothing_until_performed_then_once_per_perform() {
    let builds = Cell::new(0);
    let op = guard(|| {
        builds.set(builds.get() + 1);
        always(builds.get())
    });
    assert_eq!(builds.get(), 0, "guard ran before the perform");
    assert_eq!(op.perform(), 1);
    assert_eq!(builds.get(), 1);
}

#[test]
fn guard_runs_once_even_when_the_perform_blocks_and_is_polled_again() {
    let builds = AtomicUsize::new(0);
    let (tx, rx) = channel::<u32>();
    let op = guard(|| {
        builds.fetch_add(1, Ordering::SeqCst);
        rx.recv_op()
    });
    let mut fut = pin!(op.into_future());
    for _ in 0..5 {
        assert!(poll_noop(fut.as_mut()).is_pending());
    }
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    tx.try_send(3).unwrap();
    assert_eq!(poll_noop(fut.as_mut()), Poll::Ready(Ok(3)));
    assert_eq!(builds.load(Ordering::SeqCst), 1);
}

#[test]
fn guard_sees_the_world_as_it_is_at_perform_time() {
    let value = Cell::new(1);
    let op = guard(|| always(value.get()));
    value.set(2);
    assert_eq!(op.perform(), 2);
}

#[test]
fn every_guard_in_a_choice_runs_once_whichever_branch_wins() {
    let builds = [Cell::new(0), Cell::new(0), Cell::new(0)];
    let got = choose_biased((
        guard(|| {
            builds[0].set(builds[0].get() + 1);
            never()
        }),
        guard(|| {
            builds[1].set(builds[1].get() + 1);
            always("second")
        }),
        guard(|| {
            builds[2].set(builds[2].get() + 1);
            always("third")
        }),
    ))
    .perform();
    assert_eq!(got, "second");
    assert_eq!(builds.iter().map(Cell::get).collect::<Vec<_>>(), [1, 1, 1]);
}

#[test]
fn a_failed_try_perform_and_a_later_perform_each_build_the_guard_once() {
    let builds = Cell::new(0);
    let (tx, rx) = bounded::<u32>(1);
    let op = guard(|| {
        builds.set(builds.get() + 1);
        rx.recv_op()
    });
    let op = op.try_perform().unwrap_err();
    assert_eq!(builds.get(), 1);
    tx.try_send(5).unwrap();
    assert_eq!(op.perform(), Ok(5));
    assert_eq!(builds.get(), 2);
}

// ----- dynamic choice -------------------------------------------------------

#[test]
fn dynamic_choice_over_a_vec_of_a_thousand_receive_ops() {
    let (txs, rxs) = rendezvous_set(1_000);
    for k in [0, 1, 499, 998, 999] {
        let got = std::thread::scope(|s| {
            let chooser = s.spawn(|| {
                let ops: Vec<_> = rxs
                    .iter()
                    .enumerate()
                    .map(|(i, rx)| rx.recv_op().wrap(move |r| (i, r)))
                    .collect();
                choose(ops).perform()
            });
            // Rendezvous: this waits until the chooser has published.
            txs[k].send_blocking(k as u32 * 3).unwrap();
            chooser.join().unwrap()
        });
        assert_eq!(got, (k, Ok(k as u32 * 3)));
        assert_no_waiting_receivers(&txs, None);
    }
}

#[derive(Debug, PartialEq)]
enum Event {
    Got(usize, u32),
    Sent(usize),
    Closed(usize),
}

#[test]
fn dynamic_choice_over_boxed_ops_of_different_types() {
    let (in_txs, in_rxs) = rendezvous_set(500);
    let (out_txs, out_rxs) = rendezvous_set(500);
    for k in [3, 250, 499] {
        let got = std::thread::scope(|s| {
            let chooser = s.spawn(|| {
                let mut ops: Vec<BoxOp<'_, Event>> = Vec::new();
                for (i, rx) in in_rxs.iter().enumerate() {
                    ops.push(
                        rx.recv_op()
                            .wrap(move |r| r.map_or(Event::Closed(i), |v| Event::Got(i, v)))
                            .boxed(),
                    );
                }
                ops.push(never().boxed());
                for (i, tx) in out_txs.iter().enumerate() {
                    ops.push(
                        tx.send_op(1_000 + i as u32)
                            .wrap(move |_| Event::Sent(i))
                            .boxed(),
                    );
                }
                choose(ops).perform()
            });
            // Take from one send branch: it commits, everything else withdraws.
            let v = out_rxs[k].recv_blocking().unwrap();
            (v, chooser.join().unwrap())
        });
        assert_eq!(got, (1_000 + k as u32, Event::Sent(k)));
        // The losing send branches delivered nothing, the receives absorb nothing.
        for (i, rx) in out_rxs.iter().enumerate() {
            assert_eq!(
                rx.try_recv(),
                Err(TryRecvError::Empty),
                "send branch {i} leaked"
            );
        }
        assert_no_waiting_receivers(&in_txs, None);
    }
    // And a receive branch winning:
    let got = std::thread::scope(|s| {
        let chooser = s.spawn(|| {
            let mut ops: Vec<BoxOp<'_, Event>> = Vec::new();
            for (i, rx) in in_rxs.iter().enumerate() {
                ops.push(
                    rx.recv_op()
                        .wrap(move |r| r.map_or(Event::Closed(i), |v| Event::Got(i, v)))
                        .boxed(),
                );
            }
            for (i, tx) in out_txs.iter().enumerate() {
                ops.push(tx.send_op(i as u32).wrap(move |_| Event::Sent(i)).boxed());
            }
            choose(ops).perform()
        });
        in_txs[42].send_blocking(77).unwrap();
        chooser.join().unwrap()
    });
    assert_eq!(got, Event::Got(42, 77));
    for rx in &out_rxs {
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }
}

#[test]
fn an_array_of_ops_is_a_choice() {
    let (tx1, rx1) = bounded::<u32>(1);
    let (_tx2, rx2) = bounded::<u32>(1);
    tx1.try_send(1).unwrap();
    assert_eq!(choose([rx1.recv_op(), rx2.recv_op()]).perform(), Ok(1));
    assert!(
        choose([rx1.recv_op(), rx2.recv_op()])
            .try_perform()
            .is_err()
    );
}

// ----- nested choices -------------------------------------------------------

/// A nested choice over six channels: `((0 | 1) | guard(2 | 3 | 4) | 5)`,
/// with wraps at every level, yielding the index of the channel received on.
fn nested(rxs: &[Receiver<u32>]) -> impl Op<Output = (usize, u32)> + '_ {
    let leaf = |i: usize| rxs[i].recv_op().wrap(move |r| (i, r.unwrap()));
    choose((
        choose((leaf(0), leaf(1))).wrap(|x| x),
        guard(move || choose((leaf(2), leaf(3), leaf(4)))).wrap(|(i, v)| (i, v)),
        leaf(5),
    ))
}

#[test]
fn nested_choice_commits_exactly_the_leaf_that_became_ready_while_blocked() {
    for k in 0..6 {
        let (txs, rxs) = rendezvous_set(6);
        let mut fut = pin!(fibra::Perform::new(nested(&rxs)));
        assert!(poll_noop(fut.as_mut()).is_pending());
        txs[k].try_send(100 + k as u32).unwrap();
        assert_eq!(
            poll_noop(fut.as_mut()),
            Poll::Ready((k, 100 + k as u32)),
            "leaf {k}"
        );
        assert_no_waiting_receivers(&txs, None);
    }
}

#[test]
fn nested_choice_commits_the_leaf_ready_at_perform_time() {
    for k in 0..6 {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..6).map(|_| bounded::<u32>(1)).unzip();
        txs[k].try_send(k as u32).unwrap();
        assert_eq!(nested(&rxs).perform(), (k, k as u32));
        for (i, rx) in rxs.iter().enumerate() {
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "channel {i}");
        }
    }
}

// ----- a choice never meets itself --------------------------------------------

#[test]
fn a_send_and_a_receive_on_one_rendezvous_channel_never_commit_with_each_other() {
    let (tx, rx) = channel::<u32>();
    let op = choose((
        tx.send_op(1).wrap(|_| "sent"),
        rx.recv_op().wrap(|_| "received"),
    ));
    assert!(op.try_perform().is_err(), "a choice committed with itself");

    // Blocking, with a timeout-like fallback branch that fires later: only
    // the fallback may win.
    let (timeout_tx, timeout_rx) = channel::<()>();
    let timer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        timeout_tx.send_blocking(()).unwrap();
    });
    let got = choose((
        tx.send_op(1).wrap(|_| "sent"),
        rx.recv_op().wrap(|_| "received"),
        choose((tx.send_op(2).wrap(|_| "sent (nested)"),)),
        timeout_rx.recv_op().wrap(|_| "timeout"),
    ))
    .perform();
    timer.join().unwrap();
    assert_eq!(got, "timeout");
    // Nothing was left behind in the channel.
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
}

#[test]
fn a_self_choice_in_async_code_times_out_instead_of_meeting_itself() {
    let rt = common::tokio_ct();
    let (tx, rx) = channel::<u32>();
    rt.block_on(async {
        let op = choose((
            tx.send_op(1).wrap(|_| "sent"),
            rx.recv_op().wrap(|_| "received"),
        ));
        let r = tokio::time::timeout(Duration::from_millis(30), op).await;
        assert!(r.is_err(), "the choice committed with itself: {r:?}");
    });
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn a_self_choice_still_commits_with_another_party() {
    let (tx, rx) = channel::<u32>();
    let rx2 = rx.clone();
    let other = std::thread::spawn(move || rx2.recv_blocking());
    let got = choose((
        tx.send_op(5).wrap(|r| r.is_ok()),
        rx.recv_op().wrap(|_| false),
    ))
    .perform();
    assert!(got, "the send branch should have met the other thread");
    assert_eq!(other.join().unwrap(), Ok(5));
}

// ----- seeded rng -----------------------------------------------------------

fn picks(seed: u64) -> Vec<u32> {
    seed_choice_rng(seed);
    (0..200)
        .map(|_| choose((always(0), always(1), always(2), always(3))).perform())
        .collect()
}

#[test]
fn seeding_the_choice_rng_replays_the_same_picks() {
    let a = picks(7);
    let b = picks(7);
    assert_eq!(a, b);
    let c = picks(8);
    assert_ne!(a, c, "different seeds gave the same 200 picks");
    // And the seeded stream is still fair-ish.
    for branch in 0..4 {
        assert!(a.iter().filter(|&&p| p == branch).count() > 20, "{a:?}");
    }
}

#[test]
fn seeding_is_per_thread() {
    let here = picks(11);
    let there = std::thread::spawn(|| picks(11)).join().unwrap();
    assert_eq!(here, there);
}

// ----- try_perform ----------------------------------------------------------

#[test]
fn try_perform_commits_when_something_is_ready() {
    let (tx, rx) = bounded::<u32>(1);
    assert_eq!(tx.send_op(1).try_perform().ok(), Some(Ok(())));
    assert_eq!(rx.recv_op().try_perform().ok(), Some(Ok(1)));
    drop(tx);
    assert_eq!(rx.recv_op().try_perform().ok(), Some(Err(RecvError)));
}

#[test]
fn try_perform_gives_back_the_op_with_its_value() {
    let (tx, rx) = channel::<String>();
    let op = tx.send_op("kept".to_string()).try_perform().unwrap_err();
    assert_eq!(op.into_value(), "kept");

    // The op that comes back still works: perform it later.
    let op = tx.send_op("later".to_string()).try_perform().unwrap_err();
    let t = std::thread::spawn(move || rx.recv_blocking());
    op.perform().unwrap();
    assert_eq!(t.join().unwrap().unwrap(), "later");
}

#[test]
fn a_choice_that_failed_try_perform_can_be_performed_later() {
    let (tx_a, rx_a) = channel::<u32>();
    let (tx_b, rx_b) = channel::<u32>();
    let op = choose((
        rx_a.recv_op().wrap(|r| ('a', r)),
        rx_b.recv_op().wrap(|r| ('b', r)),
    ));
    let op = op.try_perform().unwrap_err();
    // The failed attempt left no receiver behind.
    assert_eq!(tx_a.try_send(1), Err(TrySendError::Full(1)));
    let t = std::thread::spawn(move || tx_b.send_blocking(2));
    assert_eq!(op.perform(), ('b', Ok(2)));
    t.join().unwrap().unwrap();
}

// ----- choices with both sends and receives ---------------------------------

#[test]
fn a_choice_of_a_send_and_a_receive_has_exactly_one_effect() {
    let mut outcomes = [0usize; 2];
    for i in 0..400 {
        let (out_tx, out_rx) = bounded::<u32>(1);
        let (in_tx, in_rx) = bounded::<u32>(1);
        in_tx.try_send(i).unwrap();
        let which = choose((
            out_tx.send_op(i).wrap(|r| {
                r.unwrap();
                0
            }),
            in_rx.recv_op().wrap(|r| {
                assert_eq!(r, Ok(i));
                1
            }),
        ))
        .perform();
        outcomes[which] += 1;
        // Exactly one effect: either the send happened or the receive did.
        let sent = out_rx.try_recv().is_ok();
        let still_there = in_rx.try_recv().is_ok();
        assert_eq!(sent, which == 0);
        assert_eq!(
            still_there,
            which == 0,
            "the losing receive consumed a value"
        );
    }
    assert!(outcomes.iter().all(|&c| c > 100), "{outcomes:?}");
}

#[test]
fn a_send_branch_that_loses_while_blocked_delivers_nothing() {
    let (tx, rx) = channel::<u32>();
    let (wake_tx, wake_rx) = channel::<()>();
    let chooser = std::thread::spawn(move || {
        choose((
            tx.send_op(1).wrap(|_| "sent"),
            wake_rx.recv_op().wrap(|_| "woken"),
        ))
        .perform()
    });
    std::thread::sleep(Duration::from_millis(20));
    wake_tx.send_blocking(()).unwrap();
    assert_eq!(chooser.join().unwrap(), "woken");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn a_choice_is_awaitable_in_tokio() {
    let rt = common::tokio_mt();
    let (tx_a, rx_a) = channel::<u32>();
    let (tx_b, rx_b) = channel::<u32>();
    let got = rt.block_on(async move {
        let chooser = tokio::spawn(async move {
            let mut got = Vec::new();
            for _ in 0..20 {
                got.push(
                    choose((
                        rx_a.recv_op().wrap(|r| r.unwrap()),
                        rx_b.recv_op().wrap(|r| r.unwrap()),
                    ))
                    .await,
                );
            }
            got
        });
        for i in 0..10 {
            tx_a.send(i).await.unwrap();
            tx_b.send(100 + i).await.unwrap();
        }
        chooser.await.unwrap()
    });
    let mut sorted = got.clone();
    sorted.sort_unstable();
    let want: Vec<u32> = (0..10).chain(100..110).collect();
    assert_eq!(sorted, want);
}

#[test]
fn a_blocked_choice_is_woken_by_whichever_branch_becomes_ready() {
    let (txs, rxs) = rendezvous_set(3);
    let (waker, wakes) = common::WakeCounter::new();
    let ops: Vec<_> = rxs.iter().map(|rx| rx.recv_op()).collect();
    let mut fut = pin!(choose(ops).into_future());
    assert!(poll_with(fut.as_mut(), &waker).is_pending());
    txs[1].try_send(11).unwrap();
    assert!(wakes.count() >= 1);
    assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready(Ok(11)));
    assert_no_waiting_receivers(&txs, None);
}

#[test]
fn ops_built_from_clones_of_one_receiver_in_a_choice_take_one_value() {
    let (tx, rx) = unbounded::<u32>();
    let rx2 = rx.clone();
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    let got = choose((rx.recv_op(), rx2.recv_op())).perform();
    assert_eq!(got, Ok(1));
    assert_eq!(rx.len(), 1);
    assert_eq!(rx2.try_recv(), Ok(2));
}

/// A choice of channel sends skips the withdrawal of its branches after a
/// `try_perform` (nothing is published there): each attempt still commits
/// exactly one send, a failed one sends nothing, and a choice mixing in a
/// guard (which does need withdrawing) runs its builder once per attempt.
#[test]
fn try_perform_of_sends_commits_one_and_a_failed_one_none() {
    let chans: Vec<_> = (0..4).map(|_| bounded::<u32>(1)).collect();
    let ops = |v: u32| {
        choose(
            chans
                .iter()
                .map(|(tx, _)| tx.send_op(v))
                .collect::<Vec<_>>(),
        )
    };
    for v in 0..4 {
        assert_eq!(ops(v).try_perform().ok(), Some(Ok(())), "send {v}");
    }
    assert!(ops(9).try_perform().is_err(), "every buffer was full");
    let mut got: Vec<u32> = chans.iter().map(|(_, rx)| rx.try_recv().unwrap()).collect();
    got.sort_unstable();
    assert_eq!(
        got,
        [0, 1, 2, 3],
        "one value per channel, none of the failed attempt"
    );
    for (_, rx) in &chans {
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }

    let built = Cell::new(0);
    let (tx, rx) = bounded::<u32>(1);
    let mixed = || {
        choose((
            tx.send_op(1),
            guard(|| {
                built.set(built.get() + 1);
                never()
            }),
        ))
    };
    assert!(mixed().try_perform().is_ok());
    assert!(mixed().try_perform().is_err());
    assert_eq!(built.get(), 2, "the guard is built once per attempt");
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}
