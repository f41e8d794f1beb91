//! loom models of the `IVar`, `MVar`, `Notify`, `Mutex`, `RwLock`, `Barrier` and
//! `CancellationToken`. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p fibra --release --lib loom_sync`.

use crate::loom::{Arc, AtomicUsize, Ordering, model, thread};
use crate::{
    Barrier, CancellationToken, IVar, MVar, Mutex, Notify, Op, RwLock, bounded, choose,
    choose_biased, never,
};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

#[test]
fn loom_sync_ivar_put_wakes_every_blocked_get() {
    // Two gets, one alone and one in a choice with a branch that never
    // commits, race the put: each sees the value once, whether it
    // blocked first or found the variable full.
    model(|| {
        let v = Arc::new(IVar::new());
        let t = {
            let v = v.clone();
            thread::spawn(move || v.get_blocking())
        };
        let u = {
            let v = v.clone();
            thread::spawn(move || choose_biased((v.get_op(), never())).perform())
        };
        v.put(5).unwrap();
        assert_eq!(t.join().unwrap(), 5);
        assert_eq!(u.join().unwrap(), 5);
        assert_eq!(v.put(6), Err(6));
    });
}

#[test]
fn loom_sync_ivar_put_unlinks_a_stale_record_while_its_owner_withdraws() {
    // A choice over two variables publishes on both (or finds one full);
    // the puts fill both. The second put may pop the choice's stale record
    // and mark it unlinked, racing the owner's withdrawal, which then skips
    // the lock. The choice yields one value, and no record is left queued
    // on either variable once it returns.
    model(|| {
        let a = Arc::new(IVar::new());
        let b = Arc::new(IVar::new());
        let t = {
            let (a, b) = (a.clone(), b.clone());
            thread::spawn(move || choose((a.get_op(), b.get_op())).perform())
        };
        a.put(1).unwrap();
        b.put(2).unwrap();
        let got = t.join().unwrap();
        assert!(got == 1 || got == 2, "got {got}");
        assert!(a.waiters.lock().is_empty(), "a record left on a");
        assert!(b.waiters.lock().is_empty(), "a record left on b");
    });
}

#[test]
fn loom_sync_mvar_put_racing_a_blocked_take() {
    // The take may block before the put arrives (then the put hands the
    // value straight to it), or find it in the box.
    model(|| {
        let mv = Arc::new(MVar::empty());
        let t = {
            let mv = mv.clone();
            thread::spawn(move || mv.put_blocking(7))
        };
        assert_eq!(mv.take_blocking(), 7);
        t.join().unwrap();
        assert_eq!(mv.try_take(), None, "the value was duplicated");
    });
}

#[test]
fn loom_sync_mvar_dropped_take_gives_the_value_back() {
    // A take is polled once (publishing its record) and dropped, racing a
    // put. The value ends up exactly once: taken by that poll, or in the
    // box (never put, or handed to the take and rescued by its drop).
    model(|| {
        let mv = Arc::new(MVar::empty());
        let t = {
            let mv = mv.clone();
            thread::spawn(move || mv.try_put(7))
        };
        let mut got = None;
        {
            let mut take = pin!(mv.take());
            if let Poll::Ready(v) = take.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                got = Some(v);
            }
        }
        let returned = t.join().unwrap().err();
        let left = mv.try_take();
        let all: Vec<u32> = [got, returned, left].into_iter().flatten().collect();
        assert_eq!(all, [7], "value lost or duplicated");
    });
}

#[test]
fn loom_sync_notify_one_racing_a_parking_waiter() {
    // The notification reaches the waiter whether it comes before the wait
    // (a stored permit), during its block phase, or after it parked; what
    // the notifier wrote before is visible to the waiter; and it is
    // consumed once: nothing is left stored.
    model(|| {
        let n = Arc::new(Notify::new());
        let data = Arc::new(AtomicUsize::new(0));
        let t = {
            let (n, data) = (n.clone(), data.clone());
            thread::spawn(move || {
                data.store(1, Ordering::Relaxed);
                n.notify_one();
            })
        };
        n.notified_blocking();
        assert_eq!(
            data.load(Ordering::Relaxed),
            1,
            "the notifier's write is not visible"
        );
        t.join().unwrap();
        assert!(
            n.notified_op().try_perform().is_err(),
            "one notification counted twice"
        );
    });
}

#[test]
fn loom_sync_notify_one_twice_wakes_two_parked_waiters() {
    // Two waits block (or find the permit) while the main thread notifies
    // once, waits for one of them to return, and notifies again: each
    // notification reaches one wait (a queued record, or the permit the
    // other wait consumes), and none is left stored.
    model(|| {
        let n = Arc::new(Notify::new());
        let woken = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (n, woken) = (n.clone(), woken.clone());
                thread::spawn(move || {
                    n.notified_blocking();
                    woken.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        n.notify_one();
        while woken.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        n.notify_one();
        for w in waiters {
            w.join().unwrap();
        }
        assert!(
            n.notified_op().try_perform().is_err(),
            "a notification stored and consumed as well"
        );
    });
}

#[test]
fn loom_sync_notified_losing_a_choice_keeps_the_notification() {
    // A wait races a channel in a choice while one notification and one
    // value arrive. If the channel wins, the notification must not be
    // swallowed by the losing wait's stale record: it is stored instead.
    model(|| {
        let n = Arc::new(Notify::new());
        let (tx, rx) = bounded::<u32>(1);
        let t = {
            let n = n.clone();
            thread::spawn(move || {
                tx.try_send(1).unwrap();
                n.notify_one();
                tx
            })
        };
        let won = choose((
            n.notified_op().wrap(|()| 'N'),
            rx.recv_op().wrap(|v| {
                assert_eq!(v, Ok(1));
                'R'
            }),
        ))
        .perform();
        let _tx = t.join().unwrap();
        let stored = n.notified_op().try_perform().is_ok();
        match won {
            'N' => {
                assert!(!stored, "one notification counted twice");
                assert_eq!(rx.try_recv(), Ok(1), "the losing receive took the value");
            }
            _ => assert!(stored, "the losing wait swallowed the notification"),
        }
    });
}

#[test]
fn loom_sync_mutex_hand_off_keeps_mutual_exclusion() {
    // Two threads increment a counter under the lock; whoever comes second
    // may block and get the lock handed over. The main thread locks twice:
    // its second lock must not barge in while the lock is being handed to
    // the other thread. loom checks every access to the data for a race,
    // and no increment is lost.
    model(|| {
        let m = Arc::new(Mutex::new(0u32));
        let t = {
            let m = m.clone();
            thread::spawn(move || *m.lock_blocking() += 1)
        };
        *m.lock_blocking() += 1;
        *m.lock_blocking() += 1;
        t.join().unwrap();
        let g = m.try_lock().expect("the lock was left held");
        assert_eq!(*g, 3);
    });
}

#[test]
fn loom_sync_mutex_lock_future_takes_or_waits_for_the_lock() {
    // The future of `lock` tries the lock first and builds its perform
    // only when it is held, going straight to the block phase. Two threads
    // lock with it while the main thread holds the lock and lets go: every
    // interleaving of a try, a publication and the hand-off ends with both
    // increments done and the lock free.
    model(|| {
        let m = Arc::new(Mutex::new(0u32));
        let held = m.try_lock().expect("a fresh mutex is free");
        let t = {
            let m = m.clone();
            thread::spawn(move || *crate::block_on(m.lock()) += 1)
        };
        drop(held);
        *crate::block_on(m.lock()) += 1;
        t.join().unwrap();
        let g = m.try_lock().expect("the lock was left held");
        assert_eq!(*g, 2);
    });
}

#[test]
fn loom_sync_lock_op_losing_a_choice_does_not_hold_the_lock() {
    // A thread waits for the lock or a value, while the holder sends the
    // value and lets go of the lock (handing it to the waiting op if its
    // record is live). Whichever branch wins, the lock ends up free: a
    // losing lock op holds nothing.
    model(|| {
        let m = Arc::new(Mutex::new(0u32));
        let (tx, rx) = bounded::<u32>(1);
        let held = m.try_lock().unwrap();
        let t = {
            let m = m.clone();
            thread::spawn(move || {
                let won = choose((
                    m.lock_op().wrap(|mut g| {
                        *g += 1;
                        'L'
                    }),
                    rx.recv_op().wrap(|_| 'R'),
                ))
                .perform();
                (won, rx)
            })
        };
        tx.try_send(1).unwrap();
        drop(held);
        let (won, rx) = t.join().unwrap();
        let g = m.try_lock().expect("a lock op that lost holds the lock");
        match won {
            'L' => {
                assert_eq!(*g, 1);
                assert_eq!(rx.try_recv(), Ok(1));
            }
            _ => assert_eq!(*g, 0),
        }
    });
}

#[test]
fn loom_sync_rwlock_writer_and_readers_exclude_each_other() {
    // A writer blocks behind a reader, another reader races it (queued
    // behind the writer or in before it). loom checks every access to the
    // data for a race; the write is seen by the reader that comes after it,
    // and the lock ends free.
    model(|| {
        let lock = Arc::new(RwLock::new(0u32));
        let r0 = lock.try_read().unwrap();
        let w = {
            let lock = lock.clone();
            thread::spawn(move || *lock.write_blocking() += 1)
        };
        let r = {
            let lock = lock.clone();
            thread::spawn(move || *lock.read_blocking())
        };
        assert_eq!(*r0, 0);
        drop(r0);
        w.join().unwrap();
        let seen = r.join().unwrap();
        assert!(seen <= 1);
        let g = lock.try_write().expect("the lock was left held");
        assert_eq!(*g, 1);
    });
}

#[test]
fn loom_sync_rwlock_read_op_losing_a_choice_holds_nothing() {
    // A read waits for the lock or a value, while the writer sends the
    // value and unlocks (granting the read if its record is live).
    // Whichever branch wins, the lock ends free.
    model(|| {
        let lock = Arc::new(RwLock::new(0u32));
        let (tx, rx) = bounded::<u32>(1);
        let held = lock.try_write().unwrap();
        let t = {
            let lock = lock.clone();
            thread::spawn(move || {
                let won =
                    choose((lock.read_op().wrap(|_| 'L'), rx.recv_op().wrap(|_| 'R'))).perform();
                (won, rx)
            })
        };
        tx.try_send(1).unwrap();
        drop(held);
        let (won, rx) = t.join().unwrap();
        assert!(
            lock.try_write().is_some(),
            "a read op that lost holds the lock"
        );
        if won == 'L' {
            assert_eq!(rx.try_recv(), Ok(1));
        }
    });
}

#[test]
fn loom_sync_barrier_releases_both_parties_with_one_leader() {
    model(|| {
        let b = Arc::new(Barrier::new(2));
        let t = {
            let b = b.clone();
            thread::spawn(move || b.wait_blocking().is_leader())
        };
        let me = b.wait_blocking().is_leader();
        let other = t.join().unwrap();
        assert!(me != other, "one leader per round");
        // The next round starts empty.
        let mut next = std::pin::pin!(b.wait());
        assert!(
            next.as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
    });
}

#[test]
fn loom_sync_child_token_racing_cancel_is_cancelled() {
    // A child made while its parent is being cancelled is cancelled: by
    // the parent's walk, or by `child_token` itself.
    model(|| {
        let parent = CancellationToken::new();
        let t = {
            let parent = parent.clone();
            thread::spawn(move || parent.cancel())
        };
        let child = parent.child_token();
        t.join().unwrap();
        assert!(child.is_cancelled(), "a child of a cancelled token is live");
        child.cancelled_blocking();
    });
}
