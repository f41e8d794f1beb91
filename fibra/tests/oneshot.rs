//! `oneshot`: the value reaches the receiver from OS threads, fibra tasks,
//! tokio and `futures`' executor; every error path says what became of the
//! value (handed back by `send`, kept for the next receive, dropped with a
//! receiver that never took it); the receive and `closed_op` in choices;
//! and a stress test that accounts for every value.

mod common;

use common::{DropCount, Ledger, Msg, poll_noop, test_seed, tokio_mt, with_watchdog};
use fibra::time::after;
use fibra::{Op, RecvError, TryRecvError, always, choose, choose_biased, oneshot, select};
use std::future::IntoFuture;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_and_ops_are_send_and_sync() {
    assert_send_sync::<oneshot::Sender<String>>();
    assert_send_sync::<oneshot::Receiver<String>>();
    assert_send_sync::<oneshot::RecvOp<'_, String>>();
    assert_send_sync::<oneshot::ClosedOp<'_, String>>();
}

#[test]
fn send_then_receive_and_receive_then_send_across_threads() {
    let (tx, mut rx) = oneshot::channel();
    tx.send(1).unwrap();
    assert_eq!(rx.recv_blocking(), Ok(1));

    let (tx, mut rx) = oneshot::channel();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        tx.send(2)
    });
    assert_eq!(rx.recv_blocking(), Ok(2));
    t.join().unwrap().unwrap();
}

#[test]
fn works_on_fibra_tokio_and_futures_executors() {
    let got = fibra::run(async {
        let (tx, rx) = oneshot::channel();
        fibra::spawn(async move { tx.send("fibra").unwrap() });
        rx.await
    });
    assert_eq!(got, Ok("fibra"));

    let got = tokio_mt().block_on(async {
        let (tx, mut rx) = oneshot::channel();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            tx.send("tokio").unwrap()
        });
        // In tokio's own select!, by `&mut`, next to a tokio timer.
        tokio::select! {
            v = &mut rx => v,
            () = tokio::time::sleep(Duration::from_secs(10)) => Err(RecvError),
        }
    });
    assert_eq!(got, Ok("tokio"));

    let (tx, mut rx) = oneshot::channel();
    let t = std::thread::spawn(move || tx.send("futures"));
    assert_eq!(futures::executor::block_on(rx.recv()), Ok("futures"));
    t.join().unwrap().unwrap();
}

#[test]
fn a_dropped_sender_fails_the_receive_and_wakes_it() {
    let (tx, mut rx) = oneshot::channel::<u8>();
    drop(tx);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    assert_eq!(rx.recv_blocking(), Err(RecvError));

    let (tx, mut rx) = oneshot::channel::<u8>();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        drop(tx);
    });
    assert_eq!(rx.recv_blocking(), Err(RecvError));
    t.join().unwrap();
}

#[test]
fn send_to_a_dropped_or_closed_receiver_hands_the_value_back() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = oneshot::channel();
    drop(rx);
    assert!(tx.is_closed());
    let back = tx.send(DropCount::new(7, &drops)).unwrap_err();
    assert_eq!(back.value, 7);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "dropped instead of returned"
    );

    let (tx, mut rx) = oneshot::channel();
    rx.close();
    assert_eq!(tx.send(8), Err(8));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn a_value_sent_before_close_can_still_be_taken() {
    let (tx, mut rx) = oneshot::channel();
    tx.send("kept").unwrap();
    rx.close();
    assert_eq!(rx.try_recv(), Ok("kept"));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn a_receiver_dropped_with_a_value_drops_it_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = oneshot::channel();
    tx.send(DropCount::new(1, &drops)).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(rx);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn the_value_is_received_once_then_the_receive_fails() {
    let (tx, mut rx) = oneshot::channel();
    tx.send(5).unwrap();
    assert_eq!(rx.recv_blocking(), Ok(5));
    assert_eq!(rx.recv_blocking(), Err(RecvError));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn a_receive_that_loses_a_choice_takes_nothing() {
    let (tx, mut rx) = oneshot::channel();
    tx.send(3).unwrap();
    // Both ready; the biased choice takes the first branch.
    let got = choose_biased((always(0), rx.recv_op().wrap(|r| r.unwrap()))).perform();
    assert_eq!(got, 0);
    assert_eq!(rx.try_recv(), Ok(3));
}

#[test]
fn a_receive_dropped_after_the_value_came_leaves_it_for_the_next() {
    let (tx, mut rx) = oneshot::channel();
    {
        let mut recv = pin!(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending()); // published
        tx.send(9).unwrap(); // commits the published receive
        // Dropped without being polled again: the commit is abandoned.
    }
    assert_eq!(rx.try_recv(), Ok(9));
}

#[test]
fn a_receive_in_select_with_a_timeout() {
    fibra::run(async {
        let (tx, mut rx) = oneshot::channel::<u32>();
        let mut tx = Some(tx);
        let mut timeouts = 0;
        let v = loop {
            select! {
                r = rx.recv_op() => break r,
                () = after(Duration::from_millis(1)) => {
                    timeouts += 1;
                    if timeouts == 3 {
                        // Only now does the reply come.
                        tx.take().unwrap().send(4).unwrap();
                    }
                },
            }
        };
        assert_eq!(v, Ok(4));
        assert_eq!(timeouts, 3);
        assert_eq!(rx.await, Err(RecvError)); // received already
    });
}

#[test]
fn closed_op_is_ready_when_the_receiver_goes() {
    let (tx, rx) = oneshot::channel::<u8>();
    let gone = || choose_biased((tx.closed_op().wrap(|()| true), always(false))).perform();
    assert!(!gone());
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        drop(rx);
    });
    tx.closed_op().perform();
    t.join().unwrap();
    assert!(gone());

    // A server that stops working once the requester gave up.
    let (tx, mut rx) = oneshot::channel::<u64>();
    let server = std::thread::spawn(move || {
        let mut steps = 0u64;
        loop {
            match choose((
                tx.closed_op().wrap(|()| None),
                after(Duration::from_millis(1)).wrap(|()| Some(())),
            ))
            .perform()
            {
                Some(()) => steps += 1,
                None => return (tx, steps),
            }
        }
    });
    std::thread::sleep(Duration::from_millis(5));
    rx.close();
    let (tx, _steps) = server.join().unwrap();
    assert_eq!(tx.send(1), Err(1));
}

#[test]
fn stress_every_value_is_received_returned_or_dropped_with_its_receiver() {
    // Pairs of threads: the sender sends at a random moment; the receiver
    // waits (blocking, by op in a choice with a timeout, or by polling),
    // closes, or drops at a random moment. Each value ends exactly once:
    // received, handed back to its sender, or dropped by a receiver that
    // was dropped after the send (the only drop allowed: the drop marks it
    // so).
    let seed = test_seed("oneshot stress");
    with_watchdog("oneshot stress", seed, Duration::from_secs(60), move || {
        let rounds = common::scaled(10) as u32;
        const PAIRS: u32 = 40;
        let ledger = Ledger::new((rounds * PAIRS) as usize);
        let mut rng = common::Rng::new(seed);
        for round in 0..rounds {
            let mut threads = Vec::new();
            for id in round * PAIRS..(round + 1) * PAIRS {
                let (tx, mut rx) = oneshot::channel::<Msg>();
                let msg = Msg::new(id, &ledger);
                let (send_delay, mode) = (rng.below(3), rng.below(4));
                threads.push(std::thread::spawn(move || {
                    if send_delay > 0 {
                        std::thread::sleep(Duration::from_micros(send_delay as u64 * 50));
                    }
                    if let Err(m) = tx.send(msg) {
                        m.returned();
                    }
                }));
                threads.push(std::thread::spawn(move || match mode {
                    0 => {
                        if let Ok(m) = rx.recv_blocking() {
                            m.received();
                        }
                    }
                    1 => loop {
                        // A receive racing a short timeout, again and again.
                        match fibra::time::timeout(rx.recv_op(), Duration::from_micros(100))
                            .perform()
                        {
                            Ok(Ok(m)) => {
                                m.received();
                                return;
                            }
                            Ok(Err(RecvError)) => return,
                            Err(_) => continue,
                        }
                    },
                    2 => {
                        // Close, then take what was sent before the close.
                        std::thread::sleep(Duration::from_micros(50));
                        rx.close();
                        if let Ok(m) = rx.try_recv() {
                            m.received();
                        }
                    }
                    _ => {
                        // Drop: a value sent before is dropped with it.
                        std::thread::sleep(Duration::from_micros(50));
                        common::allow_all_drops(|| drop(rx));
                    }
                }));
            }
            for t in threads {
                t.join().unwrap();
            }
        }
        let s = ledger.verify(0..rounds * PAIRS).unwrap();
        eprintln!("oneshot stress: {s:?}");
    });
}

#[test]
fn a_receive_future_that_owns_its_receiver_drops_the_value_once() {
    // `rx.await` moves the receiver into the future: dropping the future
    // after the value came drops the receiver, and the value with it, once.
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = oneshot::channel();
    let mut fut = Box::pin(rx.into_future());
    assert!(matches!(poll_noop(fut.as_mut()), Poll::Pending));
    tx.send(DropCount::new(1, &drops)).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(fut);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}
