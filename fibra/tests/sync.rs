//! `Semaphore` and `IVar`: permit accounting, FIFO service, acquires and
//! gets as ops in choices (a losing op takes nothing), closing, and many
//! waiters across OS threads, fibra tasks and tokio tasks.

mod common;

use common::{
    OtherTask, Rng, WakeCounter, drive_after_first_poll, poll_noop, poll_with, scaled, test_seed,
    tokio_mt, with_watchdog,
};
use fibra::sync::MAX_PERMITS;
use fibra::time::after;
use fibra::{
    AcquireError, IVar, Op, Permit, Runtime, Semaphore, TryAcquireError, always, channel, choose,
    choose_biased,
};
use std::future::IntoFuture;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(30);

// ----- Semaphore --------------------------------------------------------------------

#[test]
fn permits_are_counted_by_acquire_drop_forget_and_release() {
    let sem = Semaphore::new(3);
    assert_eq!(sem.available_permits(), 3);
    let a = sem.try_acquire().unwrap();
    let b = fibra::block_on(sem.acquire()).unwrap();
    let c = sem.acquire_blocking().unwrap();
    assert_eq!(sem.available_permits(), 0);
    assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
    drop(a);
    assert_eq!(sem.available_permits(), 1, "a dropped permit goes back");
    b.forget();
    assert_eq!(sem.available_permits(), 1, "a forgotten permit stays taken");
    drop(c);
    assert_eq!(sem.available_permits(), 2);
    sem.release(3);
    assert_eq!(sem.available_permits(), 5);
    sem.release(0);
    assert_eq!(sem.available_permits(), 5);
    let d = sem.acquire_op().perform().unwrap();
    assert_eq!(sem.available_permits(), 4);
    drop(d);
    assert_eq!(Semaphore::default().available_permits(), 0);
    assert!(format!("{sem:?}").contains('5'), "{sem:?}");
    // The semaphore-as-counter style: one side posts, the other waits.
    let sem = Arc::new(Semaphore::new(0));
    let poster = {
        let sem = sem.clone();
        std::thread::spawn(move || (0..100).for_each(|_| sem.release(1)))
    };
    for _ in 0..100 {
        sem.acquire_blocking().unwrap().forget();
    }
    poster.join().unwrap();
    assert_eq!(sem.available_permits(), 0);
}

#[test]
fn try_acquire_tells_no_permits_from_closed() {
    let sem = Semaphore::new(1);
    let p = sem.try_acquire().unwrap();
    assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
    drop(p);
    sem.close();
    assert!(sem.is_closed());
    assert_eq!(
        sem.try_acquire().unwrap_err(),
        TryAcquireError::Closed,
        "a closed semaphore hands out no permit, even one it holds"
    );
    assert_eq!(sem.available_permits(), 1);
    assert!(!TryAcquireError::NoPermits.to_string().is_empty());
    assert!(!AcquireError.to_string().is_empty());
}

#[test]
fn semaphore_limits_panic_and_keep_the_count() {
    let r = catch_unwind(|| Semaphore::new(MAX_PERMITS + 1));
    assert!(r.is_err(), "more than MAX_PERMITS accepted");
    let sem = Semaphore::new(MAX_PERMITS);
    let r = catch_unwind(AssertUnwindSafe(|| sem.release(1)));
    assert!(r.is_err(), "released past MAX_PERMITS");
    assert_eq!(
        sem.available_permits(),
        MAX_PERMITS,
        "a failed release counted"
    );
    let p = sem.try_acquire().unwrap();
    drop(p);
    assert_eq!(sem.available_permits(), MAX_PERMITS);
}

/// Spawns `n` OS threads that each queue one acquire on `sem`, in order
/// (thread `i` is queued before thread `i + 1` starts), and report their
/// index on `got` when served; each keeps its permit (forgets it).
fn queue_acquirers(
    sem: &Arc<Semaphore>,
    n: usize,
) -> (
    Vec<std::thread::JoinHandle<()>>,
    std::sync::mpsc::Receiver<usize>,
) {
    let (got_tx, got) = std::sync::mpsc::channel();
    let threads = (0..n)
        .map(|i| {
            let (sem, got_tx) = (sem.clone(), got_tx.clone());
            let (queued_tx, queued) = std::sync::mpsc::channel();
            let t = std::thread::spawn(move || {
                let permit = drive_after_first_poll(sem.acquire(), |pending| {
                    queued_tx.send(pending).unwrap();
                });
                permit.unwrap().forget();
                got_tx.send(i).unwrap();
            });
            assert!(queued.recv().unwrap(), "thread {i} got a permit at once");
            t
        })
        .collect();
    (threads, got)
}

#[test]
fn blocked_acquirers_are_served_in_fifo_order() {
    let sem = Arc::new(Semaphore::new(0));
    let (threads, got) = queue_acquirers(&sem, 6);
    for i in 0..3 {
        sem.release(1);
        assert_eq!(got.recv().unwrap(), i, "served out of order");
    }
    // Several at once: the next ones in line, and no more.
    sem.release(2);
    let mut two = [got.recv().unwrap(), got.recv().unwrap()];
    two.sort_unstable();
    assert_eq!(two, [3, 4]);
    assert!(
        got.recv_timeout(Duration::from_millis(20)).is_err(),
        "more served than released"
    );
    sem.release(1);
    assert_eq!(got.recv().unwrap(), 5);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(sem.available_permits(), 0);

    // The same with futures on one thread.
    let sem = Semaphore::new(0);
    let wakers: Vec<_> = (0..4).map(|_| WakeCounter::new()).collect();
    let mut futs: Vec<_> = (0..4).map(|_| Box::pin(sem.acquire())).collect();
    for (f, (w, _)) in futs.iter_mut().zip(&wakers) {
        assert!(poll_with(f.as_mut(), w).is_pending());
    }
    sem.release(1);
    let woken: Vec<usize> = wakers.iter().map(|(_, c)| c.count()).collect();
    assert!(woken[0] >= 1 && woken[1..] == [0, 0, 0], "{woken:?}");
    // The permit is reserved for the first waiter: nobody barges in.
    assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
    match poll_with(futs[0].as_mut(), &wakers[0].0) {
        Poll::Ready(Ok(p)) => p.forget(),
        other => panic!("{other:?}"),
    }
    // A waiter that leaves the line is skipped.
    drop(futs.remove(1));
    sem.release(1);
    assert!(
        wakers[2].1.count() >= 1,
        "the next waiter in line was not served"
    );
    let p = match poll_with(futs[1].as_mut(), &wakers[2].0) {
        Poll::Ready(Ok(p)) => p,
        other => panic!("{other:?}"),
    };
    // Its permit, dropped, goes to the last waiter.
    assert_eq!(wakers[3].1.count(), 0);
    drop(p);
    assert!(
        wakers[3].1.count() >= 1,
        "a dropped permit was not passed on"
    );
    assert_eq!(sem.available_permits(), 0);
    assert!(matches!(
        poll_with(futs[2].as_mut(), &wakers[3].0),
        Poll::Ready(Ok(_))
    ));
    assert_eq!(sem.available_permits(), 1, "the last permit came back");
}

#[test]
fn acquire_takes_a_free_permit_at_once_and_fails_on_a_closed_semaphore() {
    // A permit there: the first poll takes it.
    let sem = Semaphore::new(2);
    let mut fut = pin!(sem.acquire());
    match poll_noop(fut.as_mut()) {
        Poll::Ready(Ok(p)) => p.forget(),
        other => panic!("{other:?}"),
    }
    assert_eq!(sem.available_permits(), 1);
    // Polled again after it completed: a clear panic, not a second permit.
    let again = catch_unwind(AssertUnwindSafe(|| poll_noop(fut.as_mut()).is_ready()));
    assert!(
        again.is_err(),
        "a completed acquire was polled without a panic"
    );
    assert_eq!(
        sem.available_permits(),
        1,
        "a completed acquire took another permit"
    );
    // Closed with permits left: the first poll fails, and takes none.
    sem.close();
    let mut fut = pin!(sem.acquire());
    assert!(matches!(
        poll_noop(fut.as_mut()),
        Poll::Ready(Err(AcquireError))
    ));
    assert_eq!(sem.available_permits(), 1);
    // Closed while blocked: the blocked acquire fails too.
    let sem = Semaphore::new(0);
    let (waker, woken) = WakeCounter::new();
    let mut fut = pin!(sem.acquire());
    assert!(poll_with(fut.as_mut(), &waker).is_pending());
    sem.close();
    assert!(woken.count() >= 1, "close did not wake the blocked acquire");
    assert!(matches!(
        poll_with(fut.as_mut(), &waker),
        Poll::Ready(Err(AcquireError))
    ));
}

#[test]
fn acquires_that_always_find_a_permit_cannot_starve_their_worker() {
    // One worker; the main task acquires (and gives back) in a loop until
    // another task runs. Each acquire finds its permit at once, so only the
    // cooperative budget can make the loop yield.
    let rt = Runtime::builder().workers(1).build().unwrap();
    rt.block_on(async {
        let other = OtherTask::spawn();
        let sem = Semaphore::new(1);
        let mut spins = 0u64;
        while !other.has_run(&mut spins) {
            drop(sem.acquire().await.unwrap());
        }
        assert_eq!(sem.available_permits(), 1);
    });
}

#[derive(Debug, PartialEq)]
enum Won {
    Permit,
    Other(&'static str),
}

#[test]
fn an_acquire_op_that_loses_a_choice_takes_no_permit() {
    // The timer wins on an empty semaphore; a later release stays free.
    let sem = Semaphore::new(0);
    let t0 = Instant::now();
    let won = choose((
        sem.acquire_op().wrap(|p| {
            p.unwrap().forget();
            Won::Permit
        }),
        after(Duration::from_millis(5)).wrap(|()| Won::Other("timer")),
    ))
    .perform();
    assert_eq!(won, Won::Other("timer"));
    assert!(t0.elapsed() >= Duration::from_millis(5));
    sem.release(1);
    assert_eq!(sem.available_permits(), 1, "a withdrawn acquire took it");
    // Both ready, the other branch preferred.
    let won = choose_biased((
        always(Won::Other("always")),
        sem.acquire_op().wrap(|p| {
            p.unwrap().forget();
            Won::Permit
        }),
    ))
    .perform();
    assert_eq!(won, Won::Other("always"));
    assert_eq!(sem.available_permits(), 1);

    // Blocked; a channel sender commits the choice; then a permit is
    // released before the perform looks again: the stale record must not
    // take it.
    let sem = Semaphore::new(0);
    let (tx, rx) = channel::<&'static str>();
    let (waker, _) = WakeCounter::new();
    {
        let mut fut = pin!(
            choose((
                sem.acquire_op().wrap(|p| {
                    p.unwrap().forget();
                    Won::Permit
                }),
                rx.recv_op().wrap(|r| Won::Other(r.unwrap())),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        tx.try_send("chan").unwrap();
        sem.release(1);
        assert_eq!(
            sem.available_permits(),
            1,
            "a committed choice took a permit"
        );
        assert_eq!(
            poll_with(fut.as_mut(), &waker),
            Poll::Ready(Won::Other("chan"))
        );
    }
    assert_eq!(sem.available_permits(), 1);
    // The other way round: the permit commits the choice; the channel
    // branch is withdrawn.
    let sem = Semaphore::new(0);
    {
        let mut fut = pin!(
            choose((
                sem.acquire_op().wrap(|p| {
                    p.unwrap().forget();
                    Won::Permit
                }),
                rx.recv_op().wrap(|r| Won::Other(r.unwrap())),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        sem.release(1);
        assert_eq!(tx.try_send("late"), Err(fibra::TrySendError::Full("late")));
        assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready(Won::Permit));
    }
    assert_eq!(sem.available_permits(), 0);
    // Dropped while waiting, and dropped after it was handed a permit but
    // before it looked: either way the permit ends up in the semaphore.
    let sem = Semaphore::new(0);
    {
        let mut fut = pin!(sem.acquire());
        assert!(poll_noop(fut.as_mut()).is_pending());
    }
    sem.release(1);
    assert_eq!(sem.available_permits(), 1);
    let p = sem.try_acquire().unwrap();
    {
        let mut fut = pin!(sem.acquire());
        assert!(poll_noop(fut.as_mut()).is_pending());
        drop(p); // hands the permit to the waiting acquire
        assert_eq!(sem.available_permits(), 0);
    }
    assert_eq!(sem.available_permits(), 1, "an abandoned permit was lost");
}

#[test]
fn close_wakes_blocked_acquirers_with_acquire_error() {
    let sem = Arc::new(Semaphore::new(0));
    // OS threads, each queued before the close.
    let (queued_tx, queued) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let (sem, queued_tx) = (sem.clone(), queued_tx.clone());
            std::thread::spawn(move || {
                drive_after_first_poll(sem.acquire(), |pending| queued_tx.send(pending).unwrap())
                    .map(Permit::forget)
            })
        })
        .collect();
    // Fibra tasks, each queued (polled once) before the close.
    let rt = Runtime::builder().workers(2).build().unwrap();
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            let (sem, queued_tx) = (sem.clone(), queued_tx.clone());
            rt.spawn(async move {
                let mut fut = pin!(sem.acquire());
                queued_tx
                    .send(futures::poll!(fut.as_mut()).is_pending())
                    .unwrap();
                fut.await.map(Permit::forget)
            })
        })
        .collect();
    for _ in 0..6 {
        assert!(
            queued.recv().unwrap(),
            "got a permit from an empty semaphore"
        );
    }
    sem.close();
    for t in threads {
        assert_eq!(t.join().unwrap(), Err(AcquireError));
    }
    for t in tasks {
        assert_eq!(fibra::block_on(t).unwrap(), Err(AcquireError));
    }
    // Later acquires fail at once; releases count, but nobody takes them.
    assert_eq!(sem.acquire_blocking().unwrap_err(), AcquireError);
    assert_eq!(fibra::block_on(sem.acquire()).unwrap_err(), AcquireError);
    sem.release(2);
    assert_eq!(sem.available_permits(), 2);
    assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::Closed);
    assert!(matches!(
        sem.acquire_op().try_perform(),
        Ok(Err(AcquireError))
    ));
}

#[test]
fn at_most_k_holders_at_once_under_contention() {
    const K: usize = 3;
    let seed = test_seed("at_most_k_holders_at_once_under_contention");
    let iters = scaled(1_000);
    with_watchdog(
        "semaphore stress",
        seed,
        Duration::from_secs(60),
        move || {
            let sem = Arc::new(Semaphore::new(K));
            let holders = Arc::new(AtomicUsize::new(0));
            let most = Arc::new(AtomicUsize::new(0));
            let timeouts = Arc::new(AtomicUsize::new(0));
            // Counts a holder in for the duration of `f`.
            fn hold(holders: &AtomicUsize, most: &AtomicUsize, f: impl FnOnce()) {
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(now <= K, "{now} holders of {K} permits");
                most.fetch_max(now, Ordering::SeqCst);
                f();
                holders.fetch_sub(1, Ordering::SeqCst);
            }
            let rt = Runtime::builder().workers(2).build().unwrap();
            let tasks: Vec<_> = (0..8u64)
                .map(|t| {
                    let (sem, holders, most, timeouts) =
                        (sem.clone(), holders.clone(), most.clone(), timeouts.clone());
                    rt.spawn(async move {
                        let mut rng = Rng::new(seed ^ t);
                        let mut done = 0;
                        while done < iters {
                            let permit = match rng.below(4) {
                                0 => sem.acquire().await.unwrap(),
                                1 => match sem.try_acquire() {
                                    Ok(p) => p,
                                    Err(_) => {
                                        fibra::yield_now().await;
                                        continue;
                                    }
                                },
                                // A choice the timer often wins.
                                _ => {
                                    let d = Duration::from_micros(rng.below(1500) as u64);
                                    match choose((
                                        sem.acquire_op().wrap(|p| Some(p.unwrap())),
                                        after(d).wrap(|()| None),
                                    ))
                                    .await
                                    {
                                        Some(p) => p,
                                        None => {
                                            timeouts.fetch_add(1, Ordering::Relaxed);
                                            continue;
                                        }
                                    }
                                }
                            };
                            let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                            assert!(now <= K, "{now} holders of {K} permits");
                            most.fetch_max(now, Ordering::SeqCst);
                            for _ in 0..rng.below(4) {
                                fibra::yield_now().await; // hold across yields
                            }
                            holders.fetch_sub(1, Ordering::SeqCst);
                            drop(permit);
                            done += 1;
                        }
                    })
                })
                .collect();
            let threads: Vec<_> = (0..4u64)
                .map(|t| {
                    let (sem, holders, most, timeouts) =
                        (sem.clone(), holders.clone(), most.clone(), timeouts.clone());
                    std::thread::spawn(move || {
                        let mut rng = Rng::new(seed ^ (t + 100));
                        let mut done = 0;
                        while done < iters {
                            let permit = if rng.chance(50) {
                                sem.acquire_blocking().unwrap()
                            } else {
                                let d = Duration::from_micros(rng.below(1500) as u64);
                                match choose((
                                    sem.acquire_op().wrap(|p| Some(p.unwrap())),
                                    after(d).wrap(|()| None),
                                ))
                                .perform()
                                {
                                    Some(p) => p,
                                    None => {
                                        timeouts.fetch_add(1, Ordering::Relaxed);
                                        continue;
                                    }
                                }
                            };
                            hold(&holders, &most, || {
                                if rng.chance(20) {
                                    std::thread::sleep(Duration::from_micros(100));
                                } else {
                                    std::thread::yield_now();
                                }
                            });
                            drop(permit);
                            done += 1;
                        }
                    })
                })
                .collect();
            for t in tasks {
                fibra::block_on(t).unwrap();
            }
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(holders.load(Ordering::SeqCst), 0);
            assert_eq!(sem.available_permits(), K, "permits leaked or were made up");
            eprintln!(
                "most holders at once: {}, acquires given up to a timer: {}",
                most.load(Ordering::SeqCst),
                timeouts.load(Ordering::SeqCst)
            );
        },
    );
}

// ----- IVar ---------------------------------------------------------------------------

#[test]
fn an_ivar_is_written_once() {
    let v = IVar::new();
    assert!(!v.is_full());
    assert_eq!(v.try_get(), None);
    assert_eq!(v.get_ref(), None);
    assert_eq!(format!("{v:?}"), "IVar(<empty>)");
    assert_eq!(v.put("first".to_string()), Ok(()));
    assert_eq!(v.put("second".to_string()), Err("second".to_string()));
    assert!(v.is_full());
    assert_eq!(v.try_get().as_deref(), Some("first"));
    assert_eq!(v.get_ref().map(String::as_str), Some("first"));
    assert_eq!(v.get_blocking(), "first");
    assert_eq!(fibra::block_on(v.get()), "first");
    assert_eq!(v.get_op().perform(), "first", "reading does not consume");
    assert_eq!(format!("{v:?}"), r#"IVar("first")"#);
    // Dropping a full IVar drops its value once.
    let drops = Arc::new(AtomicUsize::new(0));
    let v = IVar::new();
    v.put(common::DropCount::new(1, &drops)).unwrap();
    let back = v.put(common::DropCount::new(2, &drops)).unwrap_err();
    assert_eq!(back.value, 2);
    drop(back);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(v);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn a_get_waiting_before_the_put_gets_the_value() {
    let v = IVar::new();
    let (waker, wakes) = WakeCounter::new();
    let mut get = pin!(v.get());
    assert!(poll_with(get.as_mut(), &waker).is_pending());
    assert_eq!(wakes.count(), 0);
    v.put(5).unwrap();
    assert!(wakes.count() >= 1, "put did not wake the waiting get");
    assert_eq!(poll_with(get.as_mut(), &waker), Poll::Ready(5));
    // Only one put wins a race.
    let v = Arc::new(IVar::new());
    let putters: Vec<_> = (0..8)
        .map(|i| {
            let v = v.clone();
            std::thread::spawn(move || v.put(i).is_ok())
        })
        .collect();
    let winners = putters.into_iter().map(|t| t.join().unwrap());
    assert_eq!(winners.filter(|&w| w).count(), 1);
    assert!(v.try_get().is_some());
}

#[test]
fn every_waiter_on_threads_and_tasks_gets_the_value() {
    let v = Arc::new(IVar::<String>::new());
    let waiting = Arc::new(AtomicUsize::new(0));
    let (queued_tx, queued) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (v, queued_tx) = (v.clone(), queued_tx.clone());
            std::thread::spawn(move || {
                drive_after_first_poll(v.get(), |pending| queued_tx.send(pending).unwrap())
            })
        })
        .collect();
    let rt = Runtime::builder().workers(2).build().unwrap();
    let fibra_tasks: Vec<_> = (0..6)
        .map(|_| {
            let (v, queued_tx) = (v.clone(), queued_tx.clone());
            rt.spawn(async move {
                let mut get = pin!(v.get());
                queued_tx
                    .send(futures::poll!(get.as_mut()).is_pending())
                    .unwrap();
                get.await
            })
        })
        .collect();
    let tokio = tokio_mt();
    let tokio_tasks: Vec<_> = (0..6)
        .map(|_| {
            let (v, waiting) = (v.clone(), waiting.clone());
            tokio.spawn(async move {
                waiting.fetch_add(1, Ordering::SeqCst);
                v.get().await
            })
        })
        .collect();
    for _ in 0..12 {
        assert!(queued.recv().unwrap(), "a get finished before the put");
    }
    common::wait_until("the tokio tasks started", LONG, || {
        waiting.load(Ordering::SeqCst) == 6
    });
    v.put("value".to_string()).unwrap();
    for t in threads {
        assert_eq!(t.join().unwrap(), "value");
    }
    for t in fibra_tasks {
        assert_eq!(fibra::block_on(t).unwrap(), "value");
    }
    for t in tokio_tasks {
        assert_eq!(tokio.block_on(t).unwrap(), "value");
    }
}

#[test]
fn get_op_in_a_choice_with_a_timeout() {
    let v = Arc::new(IVar::new());
    // Empty: the timer wins, not early.
    let t0 = Instant::now();
    let got = choose((
        v.get_op().wrap(Some),
        after(Duration::from_millis(5)).wrap(|()| None),
    ))
    .perform();
    assert_eq!(got, None);
    assert!(t0.elapsed() >= Duration::from_millis(5));
    // Filled while the choice waits: the get wins long before the timer.
    let t0 = Instant::now();
    let got = drive_after_first_poll(
        choose((v.get_op().wrap(Some), after(LONG).wrap(|()| None))).into_future(),
        |pending| {
            assert!(pending);
            let v = v.clone();
            std::thread::spawn(move || v.put(9).unwrap());
        },
    );
    assert_eq!(got, Some(9));
    assert!(t0.elapsed() < LONG / 2);
    // Full: ready at once, against a long timer.
    let got = choose((v.get_op().wrap(Some), after(LONG).wrap(|()| None))).perform();
    assert_eq!(got, Some(9));
    // Through time::timeout.
    let empty = IVar::<u8>::new();
    assert_eq!(
        fibra::time::timeout(empty.get_op(), Duration::from_millis(2)).perform(),
        Err(fibra::time::Elapsed)
    );
    assert_eq!(
        fibra::time::timeout(v.get_op(), Duration::from_millis(2)).perform(),
        Ok(9)
    );
    // A get that lost, then a put: the dead waiter is not in the way.
    let later = IVar::new();
    let got = choose_biased((always(0), later.get_op())).perform();
    assert_eq!(got, 0);
    later.put(3).unwrap();
    assert_eq!(later.get_op().perform(), 3);
}

#[test]
fn sync_ops_work_on_tokio_and_futures_executors() {
    let sem = Arc::new(Semaphore::new(1));
    let v = Arc::new(IVar::new());
    let rt = tokio_mt();
    let counter = Arc::new(Mutex::new(0u32));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (sem, v, counter) = (sem.clone(), v.clone(), counter.clone());
            rt.spawn(async move {
                for _ in 0..100 {
                    let _p = sem.acquire().await.unwrap();
                    // The semaphore is the only lock: try_lock must succeed.
                    *counter.try_lock().expect("two holders of one permit") += 1;
                    tokio::task::yield_now().await;
                }
                v.get().await
            })
        })
        .collect();
    futures::executor::block_on(async {
        for _ in 0..100 {
            let _p = sem.acquire().await.unwrap();
            *counter.try_lock().expect("two holders of one permit") += 1;
        }
    });
    v.put(1u8).unwrap();
    for t in tasks {
        assert_eq!(rt.block_on(t).unwrap(), 1);
    }
    assert_eq!(*counter.lock().unwrap(), 900);
    assert_eq!(sem.available_permits(), 1);
}
