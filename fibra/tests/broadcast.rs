//! `broadcast`: every receiver sees every value sent after it subscribed,
//! in order; a lagging receiver is told exactly how many values it missed;
//! sends with no receiver hand the value back; receives in choices take
//! nothing when they lose; and stress tests count what every receiver saw.

mod common;

use common::{poll_noop, test_seed, tokio_mt, with_watchdog};
use fibra::broadcast::{self, RecvError, TryRecvError};
use fibra::time::after;
use fibra::{Op, always, choose, choose_biased};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_and_ops_are_send_and_sync() {
    assert_send_sync::<broadcast::Sender<String>>();
    assert_send_sync::<broadcast::Receiver<String>>();
    assert_send_sync::<broadcast::RecvOp<'_, String>>();
}

#[test]
fn every_receiver_sees_every_value_after_it_subscribed() {
    let (tx, mut a) = broadcast::channel(8);
    tx.send(1).unwrap();
    let mut b = tx.subscribe();
    let mut c = a.clone(); // where `a` is: it will see 1 too
    tx.send(2).unwrap();
    drop(tx);
    let drain = |rx: &mut broadcast::Receiver<i32>| {
        let mut got = Vec::new();
        loop {
            match rx.recv_blocking() {
                Ok(v) => got.push(v),
                Err(RecvError::Closed) => return got,
                Err(e) => panic!("{e}"),
            }
        }
    };
    assert_eq!(drain(&mut a), [1, 2]);
    assert_eq!(drain(&mut b), [2]);
    assert_eq!(drain(&mut c), [1, 2]);
    assert_eq!(a.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn a_lagging_receiver_is_told_how_many_it_missed_then_resumes() {
    let (tx, mut rx) = broadcast::channel(2);
    for i in 0..5 {
        assert_eq!(tx.send(i), Ok(1));
    }
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Lagged(3)));
    assert_eq!(rx.try_recv(), Ok(3));
    assert_eq!(rx.recv_blocking(), Ok(4));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    // Lagged and closed: the lag first, then what is left, then closed.
    for i in 5..9 {
        tx.send(i).unwrap();
    }
    drop(tx);
    assert_eq!(rx.recv_blocking(), Err(RecvError::Lagged(2)));
    assert_eq!(rx.recv_blocking(), Ok(7));
    assert_eq!(rx.recv_blocking(), Ok(8));
    assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
}

#[test]
fn a_send_with_no_receiver_hands_the_value_back() {
    let (tx, rx) = broadcast::channel(4);
    drop(rx);
    assert_eq!(tx.receiver_count(), 0);
    assert_eq!(tx.send("x").unwrap_err().into_inner(), "x");
    // A later subscriber gets later values.
    let mut rx = tx.subscribe();
    tx.send("y").unwrap();
    assert_eq!(rx.try_recv(), Ok("y"));
}

#[test]
fn values_are_dropped_once_when_pushed_out_or_when_the_last_receiver_goes() {
    /// Clones share a counter of live copies.
    struct Live(Arc<AtomicUsize>);
    impl Clone for Live {
        fn clone(&self) -> Self {
            self.0.fetch_add(1, Ordering::SeqCst);
            Live(self.0.clone())
        }
    }
    impl Drop for Live {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let live = Arc::new(AtomicUsize::new(0));
    let make = || {
        live.fetch_add(1, Ordering::SeqCst);
        Live(live.clone())
    };
    let (tx, rx) = broadcast::channel(2);
    for _ in 0..5 {
        tx.send(make()).unwrap();
    }
    assert_eq!(live.load(Ordering::SeqCst), 2, "the ring keeps the last 2");
    drop(rx);
    assert_eq!(live.load(Ordering::SeqCst), 0, "no receiver: nothing kept");
}

#[test]
fn a_panicking_clone_skips_nothing() {
    #[derive(Debug, PartialEq)]
    struct Fragile(u32);
    impl Clone for Fragile {
        fn clone(&self) -> Self {
            assert!(self.0 != 1, "cannot clone 1 (on purpose)");
            Fragile(self.0)
        }
    }
    let (tx, mut rx) = broadcast::channel(4);
    tx.send(Fragile(1)).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rx.try_recv()));
    assert!(r.is_err());
    // Still there for the next try (which panics again: nothing skipped).
    assert_eq!(rx.len(), 1);
}

#[test]
fn a_receive_that_loses_a_choice_or_is_dropped_takes_nothing() {
    let (tx, mut rx) = broadcast::channel(4);
    tx.send(1).unwrap();
    let got = choose_biased((always(0), rx.recv_op().wrap(|r| r.unwrap()))).perform();
    assert_eq!(got, 0);
    assert_eq!(rx.len(), 1);

    // Published, committed by a send, then dropped before its next poll.
    assert_eq!(rx.try_recv(), Ok(1));
    {
        let mut recv = pin!(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        tx.send(2).unwrap();
    }
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn a_receive_in_a_choice_with_a_timeout_and_another_channel() {
    let (tx, mut rx) = broadcast::channel::<u32>(4);
    let (other_tx, other_rx) = fibra::bounded::<u32>(1);
    // The second value is sent only once the first was received, so the
    // order does not hang on the thread's sleeps (a loaded machine can
    // make both ready for one choice, which may take either).
    let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        tx.send(1).unwrap();
        ack_rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(5));
        other_tx.send_blocking(2).unwrap();
        tx
    });
    let mut got = Vec::new();
    while got.len() < 2 {
        let v = choose((
            rx.recv_op().wrap(|r| r.ok()),
            other_rx.recv_op().wrap(|r| r.ok()),
            after(Duration::from_millis(1)).wrap(|()| None),
        ))
        .perform();
        if let Some(v) = v {
            got.push(v);
            if got.len() == 1 {
                ack_tx.send(()).unwrap();
            }
        }
    }
    assert_eq!(got, [1, 2]);
    drop(t.join().unwrap());
}

#[test]
fn works_on_fibra_and_tokio() {
    let got = fibra::run(async {
        let (tx, mut rx) = broadcast::channel(4);
        let mut rx2 = tx.subscribe();
        let t = fibra::spawn(async move { rx2.recv().await });
        tx.send(5).unwrap();
        (rx.recv().await, t.await.unwrap())
    });
    assert_eq!(got, (Ok(5), Ok(5)));

    let got = tokio_mt().block_on(async {
        let (tx, mut rx) = broadcast::channel(4);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            tx.send(6).unwrap();
        });
        (rx.recv().await, rx.recv().await)
    });
    assert_eq!(got, (Ok(6), Err(RecvError::Closed)));
}

#[test]
fn stress_every_receiver_sees_every_value_in_each_senders_order() {
    // Three senders on OS threads; receivers on OS threads (blocking) and
    // on a fibra runtime (async, with a timeout branch racing each
    // receive). The ring is large enough that nobody lags: every receiver
    // gets every value, each sender's in order.
    let seed = test_seed("broadcast stress");
    with_watchdog(
        "broadcast stress",
        seed,
        Duration::from_secs(60),
        move || {
            const SENDERS: u64 = 3;
            let per = common::scaled(2_000) as u64;
            let (tx, rx) = broadcast::channel::<u64>((SENDERS * per) as usize);
            let receivers: Vec<_> = (0..4).map(|_| tx.subscribe()).collect();
            drop(rx);
            let check = |got: Vec<u64>| {
                assert_eq!(got.len() as u64, SENDERS * per, "values lost");
                let mut last = [None::<u64>; SENDERS as usize];
                for v in got {
                    let s = (v / per) as usize;
                    assert!(last[s].is_none_or(|l| l < v), "out of order");
                    last[s] = Some(v);
                }
            };
            let rt = fibra::Runtime::new().unwrap();
            let mut threads = Vec::new();
            let mut tasks = Vec::new();
            for (i, mut rx) in receivers.into_iter().enumerate() {
                if i % 2 == 0 {
                    threads.push(std::thread::spawn(move || {
                        let mut got = Vec::new();
                        while let Ok(v) = rx.recv_blocking() {
                            got.push(v);
                        }
                        got
                    }));
                } else {
                    tasks.push(rt.spawn(async move {
                        let mut got = Vec::new();
                        loop {
                            match fibra::time::timeout(rx.recv_op(), Duration::from_micros(50))
                                .await
                            {
                                Ok(Ok(v)) => got.push(v),
                                Ok(Err(RecvError::Closed)) => return got,
                                Ok(Err(RecvError::Lagged(n))) => panic!("lagged {n}"),
                                Err(_) => {}
                            }
                        }
                    }));
                }
            }
            let senders: Vec<_> = (0..SENDERS)
                .map(|s| {
                    let tx = tx.clone();
                    std::thread::spawn(move || {
                        for i in 0..per {
                            tx.send(s * per + i).unwrap();
                        }
                    })
                })
                .collect();
            drop(tx);
            for s in senders {
                s.join().unwrap();
            }
            for t in threads {
                check(t.join().unwrap());
            }
            for t in tasks {
                check(rt.block_on(t).unwrap());
            }
        },
    );
}

#[test]
fn stress_a_lagging_receiver_accounts_for_every_value() {
    // A small ring and a slow receiver: what it receives plus what it is
    // told it missed is every value, and what it receives is in order.
    let seed = test_seed("broadcast lag stress");
    with_watchdog(
        "broadcast lag stress",
        seed,
        Duration::from_secs(60),
        move || {
            let n = common::scaled(20_000) as u64;
            let (tx, mut rx) = broadcast::channel::<u64>(4);
            let sender = std::thread::spawn(move || {
                for i in 0..n {
                    tx.send(i).unwrap();
                    if i % 8 == 0 {
                        std::thread::yield_now();
                    }
                }
            });
            let (mut received, mut missed, mut last) = (0u64, 0u64, None::<u64>);
            loop {
                match rx.recv_blocking() {
                    Ok(v) => {
                        assert!(last.is_none_or(|l| l < v), "out of order");
                        // Every value between the last one and this was
                        // reported missed.
                        last = Some(v);
                        received += 1;
                    }
                    Err(RecvError::Lagged(n)) => missed += n,
                    Err(RecvError::Closed) => break,
                }
            }
            sender.join().unwrap();
            assert_eq!(received + missed, n);
            assert_eq!(last, Some(n - 1));
            eprintln!("broadcast lag stress: received {received}, missed {missed}");
        },
    );
}
