//! `RwLock`, `Barrier`, `OnceCell` and `CancellationToken`: from OS threads,
//! from fibra's runtime, from another executor, and in choices (losing takes
//! nothing, a dropped perform gives back what it got).

mod common;

use common::{WakeCounter, poll_noop, poll_with};
use fibra::time::after;
use fibra::{Barrier, CancellationToken, OnceCell, Op, RwLock, choose};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

const SHORT: Duration = Duration::from_millis(10);

// ---------------------------------------------------------------- RwLock

#[test]
fn rwlock_readers_share_and_writers_exclude_across_threads() {
    let lock = Arc::new(RwLock::new(0u64));
    // Inside the lock: +1 per reader, -1000 for a writer.
    let inside = Arc::new(AtomicIsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (lock, inside) = (lock.clone(), inside.clone());
            std::thread::spawn(move || {
                for i in 0..500 {
                    if (i + t) % 4 == 0 {
                        let mut g = lock.write_blocking();
                        assert_eq!(inside.fetch_sub(1000, Ordering::SeqCst), 0);
                        *g += 1;
                        inside.fetch_add(1000, Ordering::SeqCst);
                    } else {
                        let g = lock.read_blocking();
                        assert!(inside.fetch_add(1, Ordering::SeqCst) >= 0);
                        let _ = *g;
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*lock.read_blocking(), 500, "every write counted once");
}

#[test]
fn rwlock_a_waiting_writer_holds_back_later_readers() {
    let lock = Arc::new(RwLock::new(0));
    let r1 = lock.try_read().unwrap();
    let writer = {
        let lock = lock.clone();
        std::thread::spawn(move || *lock.write_blocking() += 1)
    };
    // Once the writer is queued, a new reader does not pass it.
    while lock.try_read().is_some() {
        std::thread::yield_now();
    }
    let mut late_reader = pin!(lock.read());
    assert!(poll_noop(late_reader.as_mut()).is_pending());
    drop(r1);
    writer.join().unwrap();
    // The writer went first: the late reader sees its write.
    let (waker, _) = WakeCounter::new();
    match poll_with(late_reader.as_mut(), &waker) {
        Poll::Ready(g) => assert_eq!(*g, 1),
        Poll::Pending => panic!("the reader was not admitted after the writer"),
    }
}

#[test]
fn rwlock_readers_queued_behind_a_writer_come_in_together() {
    let lock = RwLock::new(());
    let w = lock.try_write().unwrap();
    let (waker, wakes) = WakeCounter::new();
    let mut r1 = pin!(lock.read());
    let mut r2 = pin!(lock.read());
    assert!(poll_with(r1.as_mut(), &waker).is_pending());
    assert!(poll_with(r2.as_mut(), &waker).is_pending());
    drop(w);
    assert_eq!(wakes.count(), 2, "both readers woken by one unlock");
    let (Poll::Ready(a), Poll::Ready(b)) = (poll_noop(r1.as_mut()), poll_noop(r2.as_mut())) else {
        panic!("readers not admitted");
    };
    assert!(lock.try_write().is_none());
    drop((a, b));
    assert!(lock.try_write().is_some());
}

#[test]
fn rwlock_a_withdrawn_writer_lets_the_readers_behind_it_in() {
    let lock = RwLock::new(());
    let r0 = lock.try_read().unwrap();
    let (waker, wakes) = WakeCounter::new();
    let mut reader = pin!(lock.read());
    {
        let mut writer = pin!(lock.write());
        assert!(poll_noop(writer.as_mut()).is_pending());
        // Behind the writer, although a reader holds the lock.
        assert!(poll_with(reader.as_mut(), &waker).is_pending());
    } // the writer leaves the line
    assert_eq!(wakes.count(), 1);
    assert!(matches!(poll_noop(reader.as_mut()), Poll::Ready(_)));
    drop(r0);
}

#[test]
fn rwlock_ops_that_lose_a_choice_hold_nothing() {
    let lock = RwLock::new(5);
    let r = lock.try_read().unwrap();
    let wrote = choose((
        lock.write_op().wrap(|_| true),
        after(SHORT).wrap(|()| false),
    ))
    .perform();
    assert!(!wrote);
    drop(r);
    let w = lock
        .try_write()
        .expect("the losing write left nothing behind");
    let read = choose((lock.read_op().wrap(|g| *g), after(SHORT).wrap(|()| 0))).perform();
    assert_eq!(read, 0);
    drop(w);
    assert!(lock.try_write().is_some());
}

#[test]
fn rwlock_a_perform_dropped_after_the_grant_releases_it() {
    let lock = RwLock::new(0);
    let r = lock.try_read().unwrap();
    {
        let mut w = pin!(lock.write());
        assert!(poll_noop(w.as_mut()).is_pending());
        drop(r); // hands the write lock to the queued perform ...
    } // ... which is dropped without looking
    assert!(
        lock.try_write().is_some(),
        "the handed-over lock was released"
    );
}

#[test]
fn rwlock_downgrade_admits_queued_readers() {
    let lock = RwLock::new(1);
    let w = lock.try_write().unwrap();
    let mut r = pin!(lock.read());
    assert!(poll_noop(r.as_mut()).is_pending());
    let mine = fibra::RwLockWriteGuard::downgrade(w);
    assert!(matches!(poll_noop(r.as_mut()), Poll::Ready(_)));
    assert_eq!(*mine, 1);
}

#[test]
fn rwlock_on_the_runtime_and_on_tokio() {
    let lock = Arc::new(RwLock::new(Vec::new()));
    let total = fibra::run({
        let lock = lock.clone();
        async move {
            let tasks: Vec<_> = (0..20)
                .map(|i| {
                    let lock = lock.clone();
                    fibra::spawn(async move {
                        lock.write().await.push(i);
                        fibra::yield_now().await;
                        lock.read().await.len()
                    })
                })
                .collect();
            for t in tasks {
                assert!(t.await.unwrap() >= 1);
            }
            lock.read().await.len()
        }
    });
    assert_eq!(total, 20);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let hs: Vec<_> = (0..10)
            .map(|i| {
                let lock = lock.clone();
                tokio::spawn(async move { lock.write().await.push(100 + i) })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
    });
    assert_eq!(lock.read_blocking().len(), 30);
}

#[test]
fn rwlock_under_contention_with_timeouts_leaks_no_grant() {
    // Tasks on two workers lock for reading or writing, half of them in a
    // choice with a short timeout, so records are withdrawn, stale, and
    // granted to performs racing their own timeouts. Every write that
    // committed is counted once, and the lock ends free.
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let lock = Arc::new(RwLock::new(0u64));
    let committed = Arc::new(AtomicUsize::new(0));
    rt.block_on({
        let (lock, committed) = (lock.clone(), committed.clone());
        async move {
            let tasks: Vec<_> = (0..16u64)
                .map(|t| {
                    let (lock, committed) = (lock.clone(), committed.clone());
                    fibra::spawn(async move {
                        for i in 0..200u64 {
                            let write = (t + i) % 3 == 0;
                            let timed = (t * 7 + i) % 2 == 0;
                            let deadline = after(Duration::from_micros(50 + (i % 5) * 50));
                            if write {
                                let got = if timed {
                                    choose((lock.write_op().wrap(Some), deadline.wrap(|()| None)))
                                        .await
                                } else {
                                    Some(lock.write().await)
                                };
                                if let Some(mut g) = got {
                                    *g += 1;
                                    committed.fetch_add(1, Ordering::SeqCst);
                                    if i % 4 == 0 {
                                        fibra::yield_now().await;
                                    }
                                }
                            } else {
                                let got = if timed {
                                    choose((lock.read_op().wrap(Some), deadline.wrap(|()| None)))
                                        .await
                                } else {
                                    Some(lock.read().await)
                                };
                                if let Some(g) = got {
                                    let _ = *g;
                                    if i % 4 == 0 {
                                        fibra::yield_now().await;
                                    }
                                }
                            }
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        }
    });
    let g = lock.try_write().expect("a grant leaked: the lock is held");
    assert_eq!(*g as usize, committed.load(Ordering::SeqCst));
}

// ---------------------------------------------------------------- Barrier

#[test]
fn barrier_releases_n_at_a_time_with_one_leader_per_round() {
    const N: usize = 4;
    const ROUNDS: usize = 50;
    let barrier = Arc::new(Barrier::new(N));
    let leaders = Arc::new(AtomicUsize::new(0));
    let passed = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..N)
        .map(|_| {
            let (b, leaders, passed) = (barrier.clone(), leaders.clone(), passed.clone());
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    passed.fetch_add(1, Ordering::SeqCst);
                    if b.wait_blocking().is_leader() {
                        leaders.fetch_add(1, Ordering::SeqCst);
                    }
                    // Nobody is past the barrier before all of its round
                    // arrived.
                    assert!(passed.load(Ordering::SeqCst) >= (round + 1) * N);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(leaders.load(Ordering::SeqCst), ROUNDS);
}

#[test]
fn barrier_waits_that_lose_or_are_dropped_do_not_count() {
    let b = Barrier::new(2);
    let lost = choose((b.wait_op().wrap(|_| true), after(SHORT).wrap(|()| false))).perform();
    assert!(!lost);
    {
        let mut w = pin!(b.wait());
        assert!(poll_noop(w.as_mut()).is_pending());
    }
    // Had either counted, this wait would pass alone.
    let mut first = pin!(b.wait());
    assert!(poll_noop(first.as_mut()).is_pending());
    let second = b.wait_op().perform();
    assert!(second.is_leader());
    match poll_noop(first.as_mut()) {
        Poll::Ready(r) => assert!(!r.is_leader()),
        Poll::Pending => panic!("the first wait was not released"),
    }
}

#[test]
fn barrier_on_the_runtime() {
    let leaders = fibra::run(async {
        let b = Arc::new(Barrier::new(8));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let b = b.clone();
                fibra::spawn(async move {
                    let mut led = 0;
                    for _ in 0..20 {
                        led += usize::from(b.wait().await.is_leader());
                    }
                    led
                })
            })
            .collect();
        let mut leaders = 0;
        for t in tasks {
            leaders += t.await.unwrap();
        }
        leaders
    });
    assert_eq!(leaders, 20);
}

// ---------------------------------------------------------------- OnceCell

#[test]
fn once_cell_runs_one_initializer_for_many_callers() {
    let runs = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(OnceCell::new());
    fibra::run({
        let (runs, cell) = (runs.clone(), cell.clone());
        async move {
            let tasks: Vec<_> = (0..32)
                .map(|_| {
                    let (runs, cell) = (runs.clone(), cell.clone());
                    fibra::spawn(async move {
                        *cell
                            .get_or_init(|| async {
                                runs.fetch_add(1, Ordering::SeqCst);
                                fibra::yield_now().await;
                                after(Duration::from_millis(2)).await;
                                42
                            })
                            .await
                    })
                })
                .collect();
            for t in tasks {
                assert_eq!(t.await.unwrap(), 42);
            }
        }
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn once_cell_a_cancelled_or_failed_initializer_lets_the_next_one_run() {
    let cell = OnceCell::new();
    {
        let mut first = pin!(cell.get_or_init(std::future::pending::<u32>));
        assert!(poll_noop(first.as_mut()).is_pending());
        let mut second = pin!(cell.get_or_init(|| async { 2 }));
        assert!(
            poll_noop(second.as_mut()).is_pending(),
            "waits for the first"
        );
    }
    let failed = futures::executor::block_on(cell.get_or_try_init(|| async { Err("no") }));
    assert_eq!(failed, Err("no"));
    assert!(cell.get().is_none());
    let v = futures::executor::block_on(cell.get_or_init(|| async { 3 }));
    assert_eq!(*v, 3);
}

#[test]
fn once_cell_waiters_get_a_value_set_elsewhere_and_set_beats_an_initializer() {
    let cell = Arc::new(OnceCell::new());
    let waiter = {
        let cell = cell.clone();
        std::thread::spawn(move || *cell.wait_blocking())
    };
    let mut init = pin!(cell.get_or_init(|| async {
        after(SHORT).await;
        1
    }));
    assert!(poll_noop(init.as_mut()).is_pending());
    assert_eq!(cell.set(7), Ok(()));
    assert_eq!(waiter.join().unwrap(), 7);
    // The initializer finishes and gets the value that was set.
    assert_eq!(*futures::executor::block_on(init), 7);
}

// -------------------------------------------------------- CancellationToken

#[test]
fn cancellation_wakes_every_waiter_down_the_tree() {
    let root = CancellationToken::new();
    let child = root.child_token();
    let grandchild = child.child_token();
    let sibling = root.child_token();
    sibling.cancel();
    assert!(!root.is_cancelled() && !child.is_cancelled());
    let waiters: Vec<_> = [root.clone(), child.clone(), grandchild.clone()]
        .into_iter()
        .map(|t| std::thread::spawn(move || t.cancelled_blocking()))
        .collect();
    let tokio_waiter = {
        let t = grandchild.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(async move { t.cancelled().await })
        })
    };
    std::thread::sleep(SHORT);
    root.cancel();
    waiters.into_iter().for_each(|t| t.join().unwrap());
    tokio_waiter.join().unwrap();
    assert!(grandchild.is_cancelled());
    assert!(
        root.child_token().is_cancelled(),
        "a child of a cancelled token"
    );
}

#[test]
fn cancellation_of_a_deep_tree_does_not_recurse() {
    let root = CancellationToken::new();
    let mut leaf = root.clone();
    let mut all = Vec::new();
    for _ in 0..100_000 {
        leaf = leaf.child_token();
        all.push(leaf.clone());
    }
    root.cancel();
    assert!(all.iter().all(CancellationToken::is_cancelled));
}

#[test]
fn cancelled_op_in_a_select_stops_a_worker_without_losing_messages() {
    let token = CancellationToken::new();
    let (tx, rx) = fibra::unbounded::<u32>();
    let (sum, left) = fibra::run({
        let token = token.clone();
        async move {
            let worker = fibra::spawn({
                let token = token.clone();
                async move {
                    let mut sum = 0;
                    loop {
                        let next = choose((
                            rx.recv_op().wrap(|r| r.ok()),
                            token.cancelled_op().wrap(|()| None),
                        ))
                        .await;
                        match next {
                            Some(v) => sum += v,
                            None => return (sum, rx),
                        }
                    }
                }
            });
            for i in 1..=100 {
                tx.send(i).await.unwrap();
            }
            token.cancel();
            let (sum, rx) = worker.await.unwrap();
            let mut left = 0;
            while let Ok(v) = rx.try_recv() {
                left += v;
            }
            (sum, left)
        }
    });
    assert_eq!(sum + left, 5050, "every message received once");
}

#[test]
fn a_drop_guard_cancels_unless_disarmed() {
    let token = CancellationToken::new();
    drop(token.clone().drop_guard().disarm());
    assert!(!token.is_cancelled());
    drop(token.clone().drop_guard());
    assert!(token.is_cancelled());
}
