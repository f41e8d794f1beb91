//! `watch`: receivers read the latest value and wait for changes, from OS
//! threads, fibra tasks and tokio; a change is seen once per receiver, is
//! not lost when a wait loses a choice or is dropped, and survives the last
//! sender; sends with no receiver hand the value back; and a stress test
//! checks that receivers only ever see newer values and always the last.

mod common;

use common::{poll_noop, test_seed, tokio_mt, with_watchdog};
use fibra::time::after;
use fibra::{Op, RecvError, always, choose, choose_biased, watch};
use std::pin::pin;
use std::time::Duration;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_and_ops_are_send_and_sync() {
    assert_send_sync::<watch::Sender<String>>();
    assert_send_sync::<watch::Receiver<String>>();
    assert_send_sync::<watch::ChangedOp<'_, String>>();
}

#[test]
fn borrow_sees_the_latest_and_changed_waits_for_the_next() {
    let (tx, mut rx) = watch::channel(0);
    assert_eq!(*rx.borrow(), 0);
    assert_eq!(rx.has_changed(), Ok(false));
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    assert_eq!(rx.has_changed(), Ok(true));
    rx.changed_blocking().unwrap(); // two sends, one change to see
    assert_eq!(*rx.borrow(), 2);
    assert_eq!(rx.has_changed(), Ok(false));

    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        tx.send_modify(|v| *v += 1);
        tx
    });
    rx.changed_blocking().unwrap();
    assert_eq!(*rx.borrow_and_update(), 3);
    drop(t.join().unwrap());
    assert_eq!(rx.changed_blocking(), Err(RecvError));
    assert_eq!(rx.has_changed(), Err(RecvError));
    assert_eq!(*rx.borrow(), 3, "the last value stays readable");
}

#[test]
fn the_last_change_survives_the_last_sender() {
    let (tx, mut rx) = watch::channel("a");
    tx.send("b").unwrap();
    drop(tx);
    assert_eq!(rx.has_changed(), Ok(true));
    assert_eq!(rx.changed_blocking(), Ok(()));
    assert_eq!(*rx.borrow(), "b");
    assert_eq!(rx.changed_blocking(), Err(RecvError));
}

#[test]
fn send_without_receivers_hands_the_value_back_send_replace_stores_it() {
    let (tx, rx) = watch::channel(1);
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send(2).unwrap_err().into_inner(), 2);
    assert_eq!(*tx.borrow(), 1, "a failed send changes nothing");
    assert_eq!(tx.send_replace(3), 1);
    let rx = tx.subscribe();
    assert_eq!(*rx.borrow(), 3);
    assert_eq!(
        rx.has_changed(),
        Ok(false),
        "a subscriber has seen the value"
    );
}

#[test]
fn send_if_modified_tells_receivers_only_of_changes() {
    let (tx, rx) = watch::channel(5);
    assert!(!tx.send_if_modified(|_| false));
    assert_eq!(rx.has_changed(), Ok(false));
    assert!(tx.send_if_modified(|v| {
        *v = 6;
        true
    }));
    assert_eq!(rx.has_changed(), Ok(true));
}

#[test]
fn a_panicking_modify_is_still_announced() {
    let (tx, mut rx) = watch::channel(vec![1]);
    let waiter = std::thread::spawn(move || {
        rx.changed_blocking().unwrap();
        rx.borrow().clone()
    });
    std::thread::sleep(Duration::from_millis(5));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tx.send_modify(|v| {
            v.push(2);
            panic!("half-way (on purpose)");
        })
    }));
    assert!(r.is_err());
    assert_eq!(waiter.join().unwrap(), [1, 2]);
    // The lock is usable after the panic.
    assert_eq!(*tx.borrow(), [1, 2]);
    assert_eq!(tx.send_replace(vec![3]), [1, 2]);
}

#[test]
fn clones_keep_what_they_have_seen() {
    let (tx, mut rx) = watch::channel(0);
    tx.send(1).unwrap();
    let mut rx2 = rx.clone();
    assert_eq!(rx2.has_changed(), Ok(true));
    rx.mark_unchanged();
    assert_eq!(rx.has_changed(), Ok(false));
    assert_eq!(rx2.changed_blocking(), Ok(()));
    // A second sender keeps the channel open.
    let tx2 = tx.clone();
    drop(tx);
    tx2.send(2).unwrap();
    assert_eq!(rx.changed_blocking(), Ok(()));
    assert_eq!(*rx.borrow(), 2);
}

#[test]
fn a_wait_that_loses_a_choice_or_is_dropped_leaves_the_change_unseen() {
    let (tx, mut rx) = watch::channel(0);
    tx.send(1).unwrap();
    let won = choose_biased((always(false), rx.changed_op().wrap(|_| true))).perform();
    assert!(!won);
    assert_eq!(rx.has_changed(), Ok(true));
    rx.mark_unchanged();

    {
        let mut wait = pin!(rx.changed());
        assert!(poll_noop(wait.as_mut()).is_pending()); // published
        tx.send(2).unwrap(); // commits it
    }
    assert_eq!(rx.has_changed(), Ok(true));
    assert_eq!(rx.changed_blocking(), Ok(()));
}

#[test]
fn a_wait_in_a_choice_with_a_timeout() {
    let (tx, mut rx) = watch::channel(0);
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        tx.send(1).unwrap();
        tx
    });
    let mut timeouts = 0;
    loop {
        let changed = choose((
            rx.changed_op().wrap(|r| r.is_ok()),
            after(Duration::from_millis(1)).wrap(|()| false),
        ))
        .perform();
        if changed {
            break;
        }
        timeouts += 1;
    }
    assert!(timeouts > 0);
    assert_eq!(*rx.borrow(), 1);
    drop(t.join().unwrap());
}

#[test]
fn works_on_fibra_and_tokio() {
    let got = fibra::run(async {
        let (tx, mut rx) = watch::channel(0);
        let t = fibra::spawn(async move {
            rx.changed().await.unwrap();
            *rx.borrow()
        });
        tx.send(7).unwrap();
        t.await.unwrap()
    });
    assert_eq!(got, 7);

    let got = tokio_mt().block_on(async {
        let (tx, mut rx) = watch::channel(0);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            tx.send(8).unwrap();
        });
        rx.changed().await.unwrap();
        let v = *rx.borrow();
        (v, rx.changed().await)
    });
    assert_eq!(got, (8, Err(RecvError)));
}

#[test]
fn stress_receivers_see_newer_values_only_and_the_last_one() {
    // Two senders bump a counter (`send_modify`) 5 000 times each; four
    // receivers (OS threads and fibra tasks) wait for changes: the values
    // they see only grow, and each sees the final value before the channel
    // closes.
    let seed = test_seed("watch stress");
    with_watchdog("watch stress", seed, Duration::from_secs(60), move || {
        let per = common::scaled(5_000) as u64;
        let (tx, rx) = watch::channel(0u64);
        let rt = fibra::Runtime::new().unwrap();
        let watch = |mut rx: watch::Receiver<u64>| {
            let mut last = 0;
            let mut changes = 0u64;
            while rx.changed_blocking().is_ok() {
                let v = *rx.borrow_and_update();
                assert!(v >= last, "went back from {last} to {v}");
                last = v;
                changes += 1;
            }
            (last, changes)
        };
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let rx = rx.clone();
                std::thread::spawn(move || watch(rx))
            })
            .collect();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let mut rx = rx.clone();
                rt.spawn(async move {
                    let mut last = 0;
                    while rx.changed().await.is_ok() {
                        let v = *rx.borrow_and_update();
                        assert!(v >= last, "went back from {last} to {v}");
                        last = v;
                    }
                    last
                })
            })
            .collect();
        drop(rx);
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for _ in 0..per {
                        tx.send_modify(|v| *v += 1);
                    }
                })
            })
            .collect();
        drop(tx);
        for s in senders {
            s.join().unwrap();
        }
        for t in threads {
            let (last, changes) = t.join().unwrap();
            assert_eq!(last, 2 * per);
            assert!(changes >= 1);
        }
        for t in tasks {
            assert_eq!(rt.block_on(t).unwrap(), 2 * per);
        }
    });
}
