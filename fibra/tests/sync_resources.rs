//! `MVar`, `Notify` and `Mutex`: every method, the ops in choices with
//! channels and timeouts (a losing op takes nothing), nothing lost when a
//! pending future is dropped, FIFO service (the mutex's hand-off with OS
//! threads), and a stress test per resource across OS threads and fibra
//! tasks with a ledger of what went through.

mod common;

use common::{
    DropCount, OtherTask, Rng, WakeCounter, poll_noop, poll_with, scaled, test_seed, tokio_mt,
    with_watchdog,
};
use fibra::time::after;
use fibra::{MVar, Mutex, MutexGuard, Notify, Op, Runtime, always, bounded, choose, choose_biased};
use std::collections::VecDeque;
use std::future::{Future, IntoFuture};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

const STRESS_LIMIT: Duration = Duration::from_secs(60);

struct UnparkThread(std::thread::Thread);

impl Wake for UnparkThread {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Drives `fut` on this OS thread, parking between polls, and calls
/// `first(pending)` right after its first poll: once it runs, the future
/// has queued itself (and keeps its place while this thread parks).
fn drive_after_first_poll<F: Future>(fut: F, first: impl FnOnce(bool)) -> F::Output {
    let waker = Waker::from(Arc::new(UnparkThread(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    let mut first = Some(first);
    loop {
        let out = fut.as_mut().poll(&mut cx);
        if let Some(f) = first.take() {
            f(out.is_pending());
        }
        match out {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn the_resources_are_send_and_sync_and_their_futures_send() {
    assert_send_sync::<MVar<String>>();
    assert_send_sync::<Notify>();
    assert_send_sync::<Mutex<String>>();
    // Like std's and tokio's: the mutex needs only `T: Send` to be shared.
    assert_send_sync::<Mutex<std::cell::Cell<u32>>>();
    // The guard may be held across `.await` in a task that moves.
    assert_send::<MutexGuard<'static, std::cell::Cell<u32>>>();
    assert_send_sync::<MutexGuard<'static, String>>();
    fn future_is_send<F: Future + Send>(_: &F) {}
    let (mv, n, m) = (MVar::new(1), Notify::new(), Mutex::new(1));
    future_is_send(&mv.take());
    future_is_send(&mv.put(1));
    future_is_send(&mv.put_timeout(1, Duration::ZERO));
    future_is_send(&n.notified());
    future_is_send(&m.lock());
    let sem = fibra::Semaphore::new(1);
    future_is_send(&sem.acquire());
}

// ----- MVar ---------------------------------------------------------------------------

#[test]
fn mvar_methods_fill_and_empty_the_box() {
    let mv = MVar::new(1);
    assert!(!mv.is_empty());
    assert_eq!(format!("{mv:?}"), "MVar { full: true }");
    assert_eq!(mv.try_put(2), Err(2), "put into a full box");
    assert_eq!(mv.try_take(), Some(1));
    assert_eq!(mv.try_take(), None);
    assert!(mv.is_empty());
    assert_eq!(format!("{mv:?}"), "MVar { full: false }");
    assert_eq!(mv.try_put(3), Ok(()));
    assert_eq!(mv.take_blocking(), 3);
    mv.put_blocking(4);
    assert_eq!(fibra::block_on(mv.take()), 4);
    fibra::block_on(mv.put(5));
    assert_eq!(mv.take_op().perform(), 5);
    mv.put_op(6).perform();
    assert_eq!(mv.take_op().try_perform().ok(), Some(6));
    assert!(mv.take_op().try_perform().is_err());
    assert!(mv.put_op(7).try_perform().is_ok());
    // A put op that cannot commit keeps its value.
    let op = mv.put_op(8).try_perform().unwrap_err();
    assert_eq!(op.into_value(), 8);
    assert_eq!(mv.put_op(9).into_value(), 9, "unperformed");
    assert_eq!(mv.try_take(), Some(7));
    // Timeouts: the value comes back.
    fibra::block_on(async {
        assert_eq!(mv.put_timeout(10, Duration::from_millis(1)).await, Ok(()));
        let t0 = Instant::now();
        assert_eq!(mv.put_timeout(11, Duration::from_millis(5)).await, Err(11));
        assert!(t0.elapsed() >= Duration::from_millis(5));
    });
    assert_eq!(mv.try_take(), Some(10));
    assert!(MVar::<u8>::default().is_empty());
    assert!(MVar::<u8>::empty().is_empty());
    // Dropping a full MVar drops its value once; an empty one drops nothing.
    let drops = Arc::new(AtomicUsize::new(0));
    drop(MVar::new(DropCount::new(1, &drops)));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn mvar_put_hands_its_value_to_a_blocked_take() {
    let mv = MVar::empty();
    let (waker, woken) = WakeCounter::new();
    let mut take = pin!(mv.take());
    assert!(poll_with(take.as_mut(), &waker).is_pending());
    assert_eq!(mv.try_put("direct"), Ok(()));
    assert!(woken.count() >= 1, "the blocked take was not woken");
    assert!(mv.is_empty(), "the value went to the box, not the take");
    assert_eq!(mv.try_put("next"), Ok(()), "the box was left full");
    assert_eq!(poll_with(take.as_mut(), &waker), Poll::Ready("direct"));
    assert_eq!(mv.try_take(), Some("next"));
}

#[test]
fn mvar_take_refills_the_box_from_a_blocked_put() {
    let mv = MVar::new(1);
    let (waker, woken) = WakeCounter::new();
    let mut put = pin!(mv.put(2));
    assert!(poll_with(put.as_mut(), &waker).is_pending());
    assert_eq!(mv.try_take(), Some(1));
    assert!(woken.count() >= 1, "the blocked put was not woken");
    assert!(!mv.is_empty(), "the blocked put's value did not move in");
    assert_eq!(poll_with(put.as_mut(), &waker), Poll::Ready(()));
    assert_eq!(mv.try_take(), Some(2));
}

#[test]
fn mvar_serves_blocked_takes_and_puts_in_fifo_order() {
    // Takes, each queued before the next starts.
    let mv = Arc::new(MVar::empty());
    let (got_tx, got) = mpsc::channel();
    let takers: Vec<_> = (0..4)
        .map(|i| {
            let (mv, got_tx) = (mv.clone(), got_tx.clone());
            let (queued_tx, queued) = mpsc::channel();
            let t = std::thread::spawn(move || {
                let v = drive_after_first_poll(mv.take(), |p| queued_tx.send(p).unwrap());
                got_tx.send((i, v)).unwrap();
            });
            assert!(queued.recv().unwrap(), "an empty box gave a value");
            t
        })
        .collect();
    for v in 0..4 {
        mv.put_blocking(v * 10);
        assert_eq!(
            got.recv().unwrap(),
            (v, v * 10),
            "takes served out of order"
        );
    }
    takers.into_iter().for_each(|t| t.join().unwrap());
    // Puts, each queued before the next starts, behind a full box.
    mv.put_blocking(100);
    let putters: Vec<_> = (0..4)
        .map(|i| {
            let mv = mv.clone();
            let (queued_tx, queued) = mpsc::channel();
            let t = std::thread::spawn(move || {
                drive_after_first_poll(mv.put(i), |p| queued_tx.send(p).unwrap());
            });
            assert!(queued.recv().unwrap(), "a full box took a value");
            t
        })
        .collect();
    let got: Vec<_> = (0..5).map(|_| mv.take_blocking()).collect();
    assert_eq!(got, [100, 0, 1, 2, 3], "puts served out of order");
    putters.into_iter().for_each(|t| t.join().unwrap());
}

#[test]
fn mvar_ops_in_choices_take_or_put_only_when_they_win() {
    let mv = MVar::<u32>::empty();
    let (tx, rx) = bounded::<u32>(1);
    // A take loses to a timer; a later put stays in the box.
    let got = choose((
        mv.take_op().wrap(Some),
        after(Duration::from_millis(5)).wrap(|()| None),
    ))
    .perform();
    assert_eq!(got, None);
    mv.try_put(1).unwrap();
    assert_eq!(mv.try_take(), Some(1), "a withdrawn take kept a record");
    // Both ready: the biased choice takes the channel and leaves the box.
    mv.try_put(2).unwrap();
    tx.try_send(20).unwrap();
    let got = choose_biased((rx.recv_op().wrap(|v| v.unwrap()), mv.take_op())).perform();
    assert_eq!(got, 20);
    assert_eq!(mv.try_take(), Some(2));
    // Blocked on both; the channel commits; then a put arrives before the
    // perform looks again: the stale take record must not swallow it.
    let (waker, _) = WakeCounter::new();
    {
        let mut fut = pin!(
            choose((
                mv.take_op().wrap(|v| ('M', v)),
                rx.recv_op().wrap(|v| ('C', v.unwrap())),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        tx.try_send(3).unwrap();
        assert_eq!(mv.try_put(30), Ok(()));
        assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready(('C', 3)));
    }
    assert_eq!(mv.try_take(), Some(30), "the losing take took the value");
    // The other way: the box commits the choice; the channel keeps its value.
    {
        let mut fut = pin!(
            choose((
                mv.take_op().wrap(|v| ('M', v)),
                rx.recv_op().wrap(|v| ('C', v.unwrap())),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        mv.try_put(4).unwrap();
        tx.try_send(40).unwrap();
        assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready(('M', 4)));
    }
    assert_eq!(rx.try_recv(), Ok(40));
    // Puts in choices: a put losing to a timer puts nothing.
    mv.try_put(5).unwrap();
    let put = choose((
        mv.put_op(6).wrap(|()| true),
        after(Duration::from_millis(5)).wrap(|()| false),
    ))
    .perform();
    assert!(!put);
    assert_eq!(mv.try_take(), Some(5));
    assert_eq!(mv.try_take(), None, "a losing put put its value");
    // A put racing a send: exactly one commits.
    let (tx0, rx0) = bounded::<u32>(0);
    let t = std::thread::spawn(move || rx0.recv_blocking());
    let which = choose((mv.put_op(7).wrap(|()| 'M'), tx0.send_op(70).wrap(|_| 'C'))).perform();
    match which {
        'M' => {
            assert_eq!(mv.try_take(), Some(7));
            tx0.send_blocking(71).unwrap();
            assert_eq!(t.join().unwrap(), Ok(71));
        }
        _ => {
            assert_eq!(t.join().unwrap(), Ok(70));
            assert_eq!(mv.try_take(), None);
        }
    }
}

#[test]
fn mvar_dropped_take_gives_its_value_back() {
    // Dropped while waiting: it leaves the line and takes nothing.
    let mv = MVar::empty();
    {
        let mut take = pin!(mv.take());
        assert!(poll_noop(take.as_mut()).is_pending());
    }
    mv.try_put(1).unwrap();
    assert_eq!(mv.try_take(), Some(1));
    // Dropped after a put handed it the value: back into the box.
    {
        let mut take = pin!(mv.take());
        assert!(poll_noop(take.as_mut()).is_pending());
        mv.try_put(2).unwrap();
        assert!(mv.is_empty(), "handed over directly");
    }
    assert_eq!(mv.try_take(), Some(2), "a dropped take lost its value");
    // Dropped after the hand-off, with another take waiting: it gets it.
    let (waker, woken) = WakeCounter::new();
    let mut second = Box::pin(mv.take());
    {
        let mut first = pin!(mv.take());
        assert!(poll_noop(first.as_mut()).is_pending());
        assert!(poll_with(second.as_mut(), &waker).is_pending());
        mv.try_put(3).unwrap();
        assert_eq!(woken.count(), 0, "the second in line was served first");
    }
    assert!(
        woken.count() >= 1,
        "the rescued value did not go to the next take"
    );
    assert_eq!(poll_noop(second.as_mut()), Poll::Ready(3));
    // Dropped after the hand-off, while a put refilled the box meanwhile:
    // the rescued value goes in front; both come out, in that order, and
    // puts wait until both are gone.
    {
        let mut take = pin!(mv.take());
        assert!(poll_noop(take.as_mut()).is_pending());
        mv.try_put(4).unwrap();
        mv.try_put(5).unwrap();
    }
    assert_eq!(mv.try_put(6), Err(6));
    assert_eq!(mv.try_take(), Some(4));
    assert_eq!(mv.try_put(6), Err(6));
    assert_eq!(mv.try_take(), Some(5));
    assert_eq!(mv.try_take(), None);
    // A dropped pending put drops its value (once) and puts nothing.
    let drops = Arc::new(AtomicUsize::new(0));
    let mv = MVar::new(DropCount::new(0, &drops));
    {
        let mut put = pin!(mv.put(DropCount::new(1, &drops)));
        assert!(poll_noop(put.as_mut()).is_pending());
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(mv.try_take().map(|d| d.value), Some(0));
    assert!(mv.is_empty());
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn mvar_works_across_threads_fibra_and_tokio_tasks() {
    let mv = Arc::new(MVar::empty());
    let rt = Runtime::builder().workers(2).build().unwrap();
    let tokio = tokio_mt();
    // thread -> fibra task -> tokio task -> thread, around a ring of boxes.
    let (a, b, c) = (mv.clone(), Arc::new(MVar::empty()), Arc::new(MVar::empty()));
    let fibra_task = {
        let (a, b) = (a.clone(), b.clone());
        rt.spawn(async move {
            for _ in 0..100 {
                let v = a.take().await;
                b.put(v + 1).await;
            }
        })
    };
    let tokio_task = {
        let (b, c) = (b.clone(), c.clone());
        tokio.spawn(async move {
            for _ in 0..100 {
                let v = b.take().await;
                c.put(v + 1).await;
            }
        })
    };
    for i in 0..100 {
        a.put_blocking(i * 10);
        assert_eq!(c.take_blocking(), i * 10 + 2);
    }
    fibra::block_on(fibra_task).unwrap();
    tokio.block_on(tokio_task).unwrap();
}

#[test]
fn mvar_stress_each_value_taken_exactly_once() {
    let seed = test_seed("mvar_stress_each_value_taken_exactly_once");
    let per = scaled(3_000) as u64;
    with_watchdog("mvar stress", seed, STRESS_LIMIT, move || {
        const PUTTERS: u64 = 8; // 4 threads, 4 tasks
        const TAKERS: usize = 8; // 4 threads, 4 tasks
        let n = PUTTERS * per;
        let t0 = Instant::now();
        let mv = Arc::new(MVar::<Option<u64>>::empty());
        let rt = Runtime::builder().workers(2).build().unwrap();
        // Producers: value `p * per + i`, by every form of put.
        let put_threads: Vec<_> = (0..4)
            .map(|p| {
                let mv = mv.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng::new(seed ^ p);
                    for i in 0..per {
                        let mut v = Some(p * per + i);
                        loop {
                            v = match rng.below(3) {
                                0 => {
                                    mv.put_blocking(v);
                                    break;
                                }
                                1 => match mv.try_put(v) {
                                    Ok(()) => break,
                                    Err(back) => {
                                        std::thread::yield_now();
                                        back
                                    }
                                },
                                _ => {
                                    let d = Duration::from_micros(rng.below(300) as u64);
                                    match fibra::block_on(mv.put_timeout(v, d)) {
                                        Ok(()) => break,
                                        Err(back) => back,
                                    }
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        let put_tasks: Vec<_> = (4..8)
            .map(|p| {
                let mv = mv.clone();
                rt.spawn(async move {
                    let mut rng = Rng::new(seed ^ p);
                    for i in 0..per {
                        let v = Some(p * per + i);
                        if rng.chance(50) {
                            mv.put(v).await;
                        } else {
                            let d = Duration::from_micros(rng.below(300) as u64);
                            let mut v = v;
                            while let Err(back) = mv.put_timeout(v, d).await {
                                v = back;
                            }
                        }
                    }
                })
            })
            .collect();
        // Consumers: until a `None`, by every form of take, including
        // choices the timer wins and futures dropped after one poll.
        let take_threads: Vec<_> = (0..4u64)
            .map(|c| {
                let mv = mv.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng::new(seed ^ (c + 100));
                    let mut got = Vec::new();
                    loop {
                        let v = match rng.below(4) {
                            0 => Some(mv.take_blocking()),
                            1 => mv.try_take(),
                            2 => {
                                let d = Duration::from_micros(rng.below(300) as u64);
                                choose((mv.take_op().wrap(Some), after(d).wrap(|()| None)))
                                    .perform()
                            }
                            _ => {
                                // Polled once and dropped: a value handed
                                // to it in between goes back to the box.
                                let mut take = pin!(mv.take());
                                match poll_noop(take.as_mut()) {
                                    Poll::Ready(v) => Some(v),
                                    Poll::Pending => None,
                                }
                            }
                        };
                        match v {
                            Some(Some(v)) => got.push(v),
                            Some(None) => return got,
                            None => std::thread::yield_now(),
                        }
                    }
                })
            })
            .collect();
        let take_tasks: Vec<_> = (0..4u64)
            .map(|c| {
                let mv = mv.clone();
                rt.spawn(async move {
                    let mut rng = Rng::new(seed ^ (c + 200));
                    let mut got = Vec::new();
                    loop {
                        let v = if rng.chance(50) {
                            Some(mv.take().await)
                        } else {
                            let d = Duration::from_micros(rng.below(300) as u64);
                            choose((mv.take_op().wrap(Some), after(d).wrap(|()| None))).await
                        };
                        match v {
                            Some(Some(v)) => got.push(v),
                            Some(None) => return got,
                            None => {}
                        }
                    }
                })
            })
            .collect();
        put_threads.into_iter().for_each(|t| t.join().unwrap());
        for t in put_tasks {
            fibra::block_on(t).unwrap();
        }
        for _ in 0..TAKERS {
            mv.put_blocking(None);
        }
        let mut all = Vec::new();
        for t in take_threads {
            all.extend(t.join().unwrap());
        }
        for t in take_tasks {
            all.extend(fibra::block_on(t).unwrap());
        }
        assert!(mv.is_empty(), "a value was left behind");
        common::assert_exactly_once(all, n);
        eprintln!("mvar stress: {n} values in {:?}", t0.elapsed());
    });
}

// ----- Notify -------------------------------------------------------------------------

#[test]
fn notify_one_stores_at_most_one_permit() {
    let n = Notify::new();
    assert!(n.notified_op().try_perform().is_err());
    n.notify_one();
    n.notify_one();
    n.notify_one();
    n.notified_blocking();
    assert!(
        n.notified_op().try_perform().is_err(),
        "more than one permit stored"
    );
    n.notify_one();
    fibra::block_on(n.notified());
    n.notify_one();
    n.notified_op().perform();
    n.notify_one();
    assert!(format!("{n:?}").contains("permit: true"), "{n:?}");
    assert!(n.notified_op().try_perform().is_ok());
    assert!(format!("{n:?}").contains("permit: false"), "{n:?}");
    assert!(Notify::default().notified_op().try_perform().is_err());
}

#[test]
fn notify_one_wakes_the_first_waiter_and_notify_all_every_waiter() {
    let n = Notify::new();
    let wakers: Vec<_> = (0..3).map(|_| WakeCounter::new()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| Box::pin(n.notified())).collect();
    for (f, (w, _)) in futs.iter_mut().zip(&wakers) {
        assert!(poll_with(f.as_mut(), w).is_pending());
    }
    let woken = || wakers.iter().map(|(_, c)| c.count()).collect::<Vec<_>>();
    n.notify_one();
    assert_eq!(woken(), [1, 0, 0], "not the first waiter");
    n.notify_one();
    assert_eq!(woken(), [1, 1, 0]);
    assert!(
        n.notified_op().try_perform().is_err(),
        "a permit was stored"
    );
    for (i, (f, (w, _))) in futs.iter_mut().zip(&wakers).enumerate().take(2) {
        assert_eq!(poll_with(f.as_mut(), w), Poll::Ready(()), "waiter {i}");
    }
    // A waiter that leaves the line is skipped. (The third of the first
    // batch is still first in line.)
    let mut more: Vec<_> = (0..2).map(|_| Box::pin(n.notified())).collect();
    let (w3, c3) = WakeCounter::new();
    assert!(poll_noop(more[0].as_mut()).is_pending());
    assert!(poll_with(more[1].as_mut(), &w3).is_pending());
    drop(more.remove(0));
    n.notify_one();
    assert_eq!((woken()[2], c3.count()), (1, 0), "not the first in line");
    n.notify_one();
    assert_eq!(c3.count(), 1, "the next waiter in line was not woken");
    assert_eq!(poll_noop(futs[2].as_mut()), Poll::Ready(()));
    assert_eq!(poll_noop(more[0].as_mut()), Poll::Ready(()));
    // notify_all: every current waiter, no permit stored.
    let all_wakers: Vec<_> = (0..3).map(|_| WakeCounter::new()).collect();
    let mut all: Vec<_> = (0..3).map(|_| Box::pin(n.notified())).collect();
    for (f, (w, _)) in all.iter_mut().zip(&all_wakers) {
        assert!(poll_with(f.as_mut(), w).is_pending());
    }
    n.notify_all();
    assert!(all_wakers.iter().all(|(_, c)| c.count() == 1));
    assert!(
        n.notified_op().try_perform().is_err(),
        "notify_all stored a permit"
    );
    for f in &mut all {
        assert_eq!(poll_noop(f.as_mut()), Poll::Ready(()));
    }
    // notify_all with nobody waiting does nothing; a stored permit stays.
    n.notify_all();
    assert!(n.notified_op().try_perform().is_err());
    n.notify_one();
    n.notify_all();
    assert!(
        n.notified_op().try_perform().is_ok(),
        "notify_all took the permit"
    );
}

#[test]
fn notified_ops_in_choices_consume_only_when_they_win() {
    let n = Notify::new();
    let (tx, rx) = bounded::<u32>(1);
    // Loses to a timer: nothing consumed, nothing left behind.
    let t0 = Instant::now();
    let woken = choose((
        n.notified_op().wrap(|()| true),
        after(Duration::from_millis(5)).wrap(|()| false),
    ))
    .perform();
    assert!(!woken);
    assert!(t0.elapsed() >= Duration::from_millis(5));
    n.notify_one();
    assert!(
        n.notified_op().try_perform().is_ok(),
        "a withdrawn wait took the notification"
    );
    // A stored permit, but the biased choice prefers the other branch: the
    // permit stays.
    n.notify_one();
    let got = choose_biased((always('A'), n.notified_op().wrap(|()| 'N'))).perform();
    assert_eq!(got, 'A');
    assert!(n.notified_op().try_perform().is_ok());
    // Blocked on both; the channel commits, then a notify_one meets the
    // stale record: it passes the notification on (here: stores it).
    let (waker, _) = WakeCounter::new();
    {
        let mut fut = pin!(
            choose((n.notified_op().wrap(|()| 'N'), rx.recv_op().wrap(|_| 'C'),)).into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        tx.try_send(1).unwrap();
        n.notify_one();
        assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready('C'));
    }
    assert!(
        n.notified_op().try_perform().is_ok(),
        "a stale record swallowed the notification"
    );
    // The same, with a real waiter behind the stale record: it gets it.
    let (w2, c2) = WakeCounter::new();
    let mut behind = Box::pin(n.notified());
    {
        let mut fut = pin!(
            choose((n.notified_op().wrap(|()| 'N'), rx.recv_op().wrap(|_| 'C'),)).into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        assert!(poll_with(behind.as_mut(), &w2).is_pending());
        tx.try_send(2).unwrap();
        n.notify_one();
        assert_eq!(c2.count(), 1, "not passed to the next waiter");
        assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready('C'));
    }
    assert_eq!(poll_noop(behind.as_mut()), Poll::Ready(()));
    assert!(n.notified_op().try_perform().is_err());
    // The notification commits the choice; the channel keeps its value.
    {
        let mut fut = pin!(
            choose((n.notified_op().wrap(|()| 'N'), rx.recv_op().wrap(|_| 'C'),)).into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        n.notify_one();
        tx.try_send(3).unwrap();
        assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready('N'));
    }
    assert_eq!(rx.try_recv(), Ok(3));
    // Timeouts via `fibra::time::timeout`.
    assert!(
        fibra::time::timeout(n.notified_op(), Duration::from_millis(2))
            .perform()
            .is_err()
    );
}

#[test]
fn a_dropped_wait_passes_on_a_notify_one_but_not_a_notify_all() {
    let n = Notify::new();
    // Dropped while waiting: leaves nothing behind.
    {
        let mut f = pin!(n.notified());
        assert!(poll_noop(f.as_mut()).is_pending());
    }
    n.notify_one();
    assert!(n.notified_op().try_perform().is_ok());
    // Dropped after notify_one reached it: stored for the next wait.
    {
        let mut f = pin!(n.notified());
        assert!(poll_noop(f.as_mut()).is_pending());
        n.notify_one();
    }
    assert!(
        n.notified_op().try_perform().is_ok(),
        "a dropped wait swallowed a notify_one"
    );
    assert!(n.notified_op().try_perform().is_err());
    // ... or handed to the next waiter.
    let (w, c) = WakeCounter::new();
    let mut next = Box::pin(n.notified());
    {
        let mut f = pin!(n.notified());
        assert!(poll_noop(f.as_mut()).is_pending());
        assert!(poll_with(next.as_mut(), &w).is_pending());
        n.notify_one();
        assert_eq!(c.count(), 0);
    }
    assert_eq!(c.count(), 1, "not passed to the next waiter");
    assert_eq!(poll_noop(next.as_mut()), Poll::Ready(()));
    assert!(n.notified_op().try_perform().is_err());
    // Dropped after notify_all reached it: nothing to pass on.
    {
        let mut f = pin!(n.notified());
        assert!(poll_noop(f.as_mut()).is_pending());
        n.notify_all();
    }
    assert!(
        n.notified_op().try_perform().is_err(),
        "notify_all became a permit"
    );
}

#[test]
fn notify_works_across_threads_fibra_and_tokio_tasks() {
    let n = Arc::new(Notify::new());
    let rt = Runtime::builder().workers(2).build().unwrap();
    let tokio = tokio_mt();
    let (queued_tx, queued) = mpsc::channel::<()>();
    let fibra_task = {
        let (n, queued_tx) = (n.clone(), queued_tx.clone());
        rt.spawn(async move {
            let mut f = pin!(n.notified());
            assert!(futures::poll!(f.as_mut()).is_pending());
            queued_tx.send(()).unwrap();
            f.await;
        })
    };
    let tokio_task = {
        let (n, queued_tx) = (n.clone(), queued_tx.clone());
        tokio.spawn(async move {
            let mut f = pin!(n.notified());
            assert!(futures::poll!(f.as_mut()).is_pending());
            queued_tx.send(()).unwrap();
            f.await;
        })
    };
    let thread = {
        let n = n.clone();
        std::thread::spawn(move || {
            drive_after_first_poll(n.notified(), |p| {
                assert!(p);
                queued_tx.send(()).unwrap();
            });
        })
    };
    for _ in 0..3 {
        queued.recv().unwrap();
    }
    n.notify_all();
    fibra::block_on(fibra_task).unwrap();
    tokio.block_on(tokio_task).unwrap();
    thread.join().unwrap();
    assert!(n.notified_op().try_perform().is_err());
}

#[test]
fn notify_ping_pong_never_loses_a_wake_up() {
    // Each round races a notify_one against the other side parking: a lost
    // wake-up hangs (the watchdog fails the test).
    let rounds = scaled(20_000) as u64;
    with_watchdog("notify ping-pong", 0, STRESS_LIMIT, move || {
        let t0 = Instant::now();
        let (ping, pong) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let turn = Arc::new(AtomicU64::new(0));
        let other = {
            let (ping, pong, turn) = (ping.clone(), pong.clone(), turn.clone());
            std::thread::spawn(move || {
                for r in 0..rounds {
                    while turn.load(Ordering::Acquire) != 2 * r + 1 {
                        ping.notified_blocking();
                    }
                    turn.store(2 * r + 2, Ordering::Release);
                    pong.notify_one();
                }
            })
        };
        let rt = Runtime::builder().workers(1).build().unwrap();
        rt.block_on(async move {
            for r in 0..rounds {
                turn.store(2 * r + 1, Ordering::Release);
                ping.notify_one();
                while turn.load(Ordering::Acquire) != 2 * r + 2 {
                    pong.notified().await;
                }
            }
        });
        other.join().unwrap();
        eprintln!("notify ping-pong: {rounds} rounds in {:?}", t0.elapsed());
    });
}

#[test]
fn notify_stress_a_condition_queue_delivers_every_item_once() {
    // The classic condition pattern: producers push to a queue, then
    // notify_one; consumers pop, or wait. Every item is consumed once.
    let seed = test_seed("notify_stress_a_condition_queue_delivers_every_item_once");
    let per = scaled(10_000) as u64;
    with_watchdog("notify stress", seed, STRESS_LIMIT, move || {
        const PRODUCERS: u64 = 4;
        let n_items = PRODUCERS * per;
        let t0 = Instant::now();
        let queue = Arc::new(std::sync::Mutex::new(VecDeque::new()));
        let notify = Arc::new(Notify::new());
        let done = Arc::new(AtomicBool::new(false));
        let consumed = Arc::new(AtomicU64::new(0));
        let rt = Runtime::builder().workers(2).build().unwrap();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (queue, notify) = (queue.clone(), notify.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng::new(seed ^ p);
                    for i in 0..per {
                        queue.lock().unwrap().push_back(p * per + i);
                        if rng.chance(10) {
                            notify.notify_all();
                        } else {
                            notify.notify_one();
                        }
                        if rng.chance(5) {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let pop = |q: &std::sync::Mutex<VecDeque<u64>>| q.lock().unwrap().pop_front();
        let threads: Vec<_> = (0..4u64)
            .map(|c| {
                let (queue, notify, done, consumed) = (
                    queue.clone(),
                    notify.clone(),
                    done.clone(),
                    consumed.clone(),
                );
                std::thread::spawn(move || {
                    let mut rng = Rng::new(seed ^ (c + 100));
                    let mut got = Vec::new();
                    loop {
                        if let Some(v) = pop(&queue) {
                            got.push(v);
                            consumed.fetch_add(1, Ordering::SeqCst);
                            continue;
                        }
                        if done.load(Ordering::SeqCst) {
                            return got;
                        }
                        match rng.below(3) {
                            0 => notify.notified_blocking(),
                            1 => {
                                let d = Duration::from_micros(rng.below(500) as u64);
                                let _ = fibra::time::timeout(notify.notified_op(), d).perform();
                            }
                            _ => {
                                // Polled once and dropped: a notify_one that
                                // reached it is passed on.
                                let mut f = pin!(notify.notified());
                                if poll_noop(f.as_mut()).is_pending() {
                                    std::thread::yield_now();
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        let tasks: Vec<_> = (0..4u64)
            .map(|c| {
                let (queue, notify, done, consumed) = (
                    queue.clone(),
                    notify.clone(),
                    done.clone(),
                    consumed.clone(),
                );
                rt.spawn(async move {
                    let mut rng = Rng::new(seed ^ (c + 200));
                    let mut got = Vec::new();
                    loop {
                        if let Some(v) = pop(&queue) {
                            got.push(v);
                            consumed.fetch_add(1, Ordering::SeqCst);
                            continue;
                        }
                        if done.load(Ordering::SeqCst) {
                            return got;
                        }
                        if rng.chance(70) {
                            notify.notified().await;
                        } else {
                            let d = Duration::from_micros(rng.below(500) as u64);
                            choose((notify.notified_op(), after(d))).await;
                        }
                    }
                })
            })
            .collect();
        producers.into_iter().for_each(|t| t.join().unwrap());
        // Every item is consumed without help: each push was followed by a
        // notification that reached a consumer (or a permit).
        while consumed.load(Ordering::SeqCst) < n_items {
            std::thread::sleep(Duration::from_millis(1));
        }
        done.store(true, Ordering::SeqCst);
        let mut all = Vec::new();
        let stop = std::thread::spawn({
            let notify = notify.clone();
            let done = done.clone();
            move || {
                while Arc::strong_count(&done) > 1 {
                    notify.notify_all();
                    notify.notify_one();
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
        for t in threads {
            all.extend(t.join().unwrap());
        }
        for t in tasks {
            all.extend(fibra::block_on(t).unwrap());
        }
        drop(done);
        stop.join().unwrap();
        common::assert_exactly_once(all, n_items);
        eprintln!("notify stress: {n_items} items in {:?}", t0.elapsed());
    });
}

// ----- Mutex --------------------------------------------------------------------------

#[test]
fn mutex_methods_lock_and_unlock() {
    let mut m = Mutex::new(vec![1]);
    m.get_mut().push(2);
    {
        let mut g = m.try_lock().unwrap();
        g.push(3);
        assert!(m.try_lock().is_none(), "locked twice");
        assert!(m.lock_op().try_perform().is_err());
        assert_eq!(format!("{m:?}"), "Mutex { data: <locked> }");
        assert_eq!(format!("{g:?}"), "[1, 2, 3]");
    }
    assert_eq!(format!("{m:?}"), "Mutex { data: [1, 2, 3] }");
    m.lock_blocking().push(4);
    fibra::block_on(async { m.lock().await.push(5) });
    m.lock_op().perform().push(6);
    m.lock_op().try_perform().ok().unwrap().push(7);
    assert_eq!(m.into_inner(), [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(*Mutex::<u8>::default().lock_blocking(), 0);
    assert_eq!(Mutex::from("x").lock_blocking().to_string(), "x");
    // into_inner moves the value out: dropped once, by its new owner.
    let drops = Arc::new(AtomicUsize::new(0));
    let v = Mutex::new(DropCount::new(9, &drops)).into_inner();
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert_eq!(v.value, 9);
    drop(v);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(Mutex::new(DropCount::new(1, &drops)));
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn a_lock_future_takes_a_free_lock_on_its_first_poll() {
    let m = Mutex::new(1);
    let mut f = pin!(m.lock());
    let g = match poll_noop(f.as_mut()) {
        Poll::Ready(g) => g,
        Poll::Pending => panic!("a free lock was not taken at once"),
    };
    assert!(m.try_lock().is_none(), "the guard does not hold the lock");
    assert!(format!("{f:?}").starts_with("MutexLock"));
    drop(g);
    // Polled again after it completed: a clear panic, not a second guard.
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        poll_noop(f.as_mut()).is_ready()
    }));
    assert!(
        again.is_err(),
        "a completed lock future was polled without a panic"
    );
    assert!(
        m.try_lock().is_some(),
        "a completed lock future took the lock again"
    );
}

#[test]
fn locks_that_are_always_free_cannot_starve_their_worker() {
    // One worker; the main task locks and unlocks in a loop until another
    // task runs. Every lock is free at once, so only the cooperative
    // budget can make the loop yield.
    let rt = Runtime::builder().workers(1).build().unwrap();
    rt.block_on(async {
        let other = OtherTask::spawn();
        let m = Mutex::new(0u64);
        let mut spins = 0u64;
        while !other.has_run(&mut spins) {
            *m.lock().await += 1;
        }
        assert_eq!(*m.lock().await, spins);
    });
}

#[test]
fn mutex_hands_the_lock_to_the_first_waiter_without_unlocking() {
    let m = Mutex::new(0);
    let g = m.try_lock().unwrap();
    let wakers: Vec<_> = (0..3).map(|_| WakeCounter::new()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| Box::pin(m.lock())).collect();
    for (f, (w, _)) in futs.iter_mut().zip(&wakers) {
        assert!(poll_with(f.as_mut(), w).is_pending());
    }
    let woken = || wakers.iter().map(|(_, c)| c.count()).collect::<Vec<_>>();
    drop(g);
    assert_eq!(woken(), [1, 0, 0], "not handed to the first waiter");
    assert!(
        m.try_lock().is_none(),
        "the lock was free during the hand-off"
    );
    let mut g = match poll_noop(futs[0].as_mut()) {
        Poll::Ready(g) => g,
        Poll::Pending => panic!("the first waiter did not get the lock"),
    };
    *g += 1;
    // A waiter that leaves the line is skipped.
    drop(futs.remove(1));
    drop(g);
    assert_eq!(woken(), [1, 0, 1], "not handed to the next waiter in line");
    assert!(m.try_lock().is_none());
    let g = match poll_noop(futs[1].as_mut()) {
        Poll::Ready(g) => g,
        Poll::Pending => panic!("the last waiter did not get the lock"),
    };
    assert_eq!(*g, 1);
    drop(g);
    // Nobody waits any more: unlocked.
    assert_eq!(*m.try_lock().unwrap(), 1);
}

#[test]
fn mutex_serves_os_threads_in_fifo_order() {
    const N: usize = 8;
    let m = Arc::new(Mutex::new(Vec::new()));
    let held = m.try_lock().unwrap();
    let threads: Vec<_> = (0..N)
        .map(|i| {
            let m = m.clone();
            let (queued_tx, queued) = mpsc::channel();
            let t = std::thread::spawn(move || {
                let mut g = drive_after_first_poll(m.lock(), |p| queued_tx.send(p).unwrap());
                g.push(i);
                // Hold it a little: the next in line must still wait.
                std::thread::sleep(Duration::from_millis(1));
            });
            assert!(queued.recv().unwrap(), "a held lock was taken");
            t
        })
        .collect();
    // Barging attempts while the line forms and is served get nothing.
    drop(held);
    let mut barged = 0;
    while threads.iter().any(|t| !t.is_finished()) {
        if let Some(mut g) = m.try_lock() {
            barged += 1;
            g.push(usize::MAX);
        }
        std::thread::yield_now();
    }
    threads.into_iter().for_each(|t| t.join().unwrap());
    let order = m.lock_blocking().clone();
    let served: Vec<usize> = order.iter().copied().filter(|&i| i != usize::MAX).collect();
    assert_eq!(served, (0..N).collect::<Vec<_>>(), "served out of order");
    assert!(
        order.iter().take(N).all(|&i| i != usize::MAX),
        "try_lock barged in ahead of queued lockers: {order:?} ({barged} barges)"
    );
}

#[test]
fn lock_ops_in_choices_hold_the_lock_only_when_they_win() {
    let m = Mutex::new(0);
    let (tx, rx) = bounded::<u32>(1);
    // Free lock, but the biased choice prefers the other branch.
    let got = choose_biased((always('A'), m.lock_op().wrap(|_| 'L'))).perform();
    assert_eq!(got, 'A');
    assert!(m.try_lock().is_some(), "a losing lock op holds the lock");
    // Held lock: a timer wins; the lock is later free for others.
    let g = m.try_lock().unwrap();
    let got = choose((
        m.lock_op().wrap(|_| 'L'),
        after(Duration::from_millis(5)).wrap(|()| 'T'),
    ))
    .perform();
    assert_eq!(got, 'T');
    drop(g);
    assert!(m.try_lock().is_some(), "a withdrawn lock op got the lock");
    // Blocked on both; the channel commits; then the guard drops before the
    // perform looks again: the lock must not go to the stale record.
    let (waker, _) = WakeCounter::new();
    let g = m.try_lock().unwrap();
    {
        let mut fut = pin!(
            choose((
                m.lock_op().wrap(|mut g| {
                    *g += 1;
                    'L'
                }),
                rx.recv_op().wrap(|_| 'C'),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        tx.try_send(1).unwrap();
        drop(g);
        assert!(m.try_lock().is_some(), "the lock went to a stale record");
        assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready('C'));
    }
    // The lock commits the choice; the channel keeps its value.
    let g = m.try_lock().unwrap();
    {
        let mut fut = pin!(
            choose((
                m.lock_op().wrap(|mut g| {
                    *g += 1;
                    'L'
                }),
                rx.recv_op().wrap(|_| 'C'),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        drop(g);
        tx.try_send(2).unwrap();
        assert_eq!(poll_with(fut.as_mut(), &waker), Poll::Ready('L'));
    }
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(*m.try_lock().unwrap(), 1);
    // Two lock ops on one mutex in one choice: one wins, and the lock is
    // held once.
    let g = choose((m.lock_op(), m.lock_op())).perform();
    assert!(m.try_lock().is_none());
    drop(g);
    assert!(m.try_lock().is_some());
    // fibra::time::timeout.
    let g = m.try_lock().unwrap();
    assert!(
        fibra::time::timeout(m.lock_op(), Duration::from_millis(2))
            .perform()
            .is_err()
    );
    drop(g);
}

#[test]
fn a_dropped_lock_future_hands_the_lock_on() {
    let m = Mutex::new(0);
    // Dropped while waiting: leaves the line.
    let g = m.try_lock().unwrap();
    {
        let mut f = pin!(m.lock());
        assert!(poll_noop(f.as_mut()).is_pending());
    }
    drop(g);
    assert!(m.try_lock().is_some(), "a dropped waiter got the lock");
    // Dropped after the lock was handed to it: unlocked again.
    let g = m.try_lock().unwrap();
    {
        let mut f = pin!(m.lock());
        assert!(poll_noop(f.as_mut()).is_pending());
        drop(g);
        assert!(m.try_lock().is_none(), "handed over");
    }
    assert!(m.try_lock().is_some(), "an abandoned lock stayed locked");
    // ... or handed to the next in line.
    let g = m.try_lock().unwrap();
    let (w, c) = WakeCounter::new();
    let mut next = Box::pin(m.lock());
    {
        let mut f = pin!(m.lock());
        assert!(poll_noop(f.as_mut()).is_pending());
        assert!(poll_with(next.as_mut(), &w).is_pending());
        drop(g);
        assert_eq!(c.count(), 0, "the second in line was served first");
    }
    assert_eq!(c.count(), 1, "the abandoned lock was not handed on");
    assert!(m.try_lock().is_none());
    assert!(matches!(poll_noop(next.as_mut()), Poll::Ready(_)));
    assert!(m.try_lock().is_some());
}

#[test]
fn mutex_guards_are_held_across_awaits_on_fibra_and_tokio() {
    let m = Arc::new(Mutex::new(Vec::new()));
    let rt = Runtime::builder().workers(2).build().unwrap();
    let tokio = tokio_mt();
    let fibra_tasks: Vec<_> = (0..4)
        .map(|i| {
            let m = m.clone();
            rt.spawn(async move {
                let mut g = m.lock().await;
                g.push(i);
                fibra::yield_now().await;
                fibra::time::sleep(Duration::from_micros(100)).await;
                g.push(i);
            })
        })
        .collect();
    let tokio_tasks: Vec<_> = (10..14)
        .map(|i| {
            let m = m.clone();
            tokio.spawn(async move {
                let mut g = m.lock().await;
                g.push(i);
                tokio::task::yield_now().await;
                g.push(i);
            })
        })
        .collect();
    let threads: Vec<_> = (20..24)
        .map(|i| {
            let m = m.clone();
            std::thread::spawn(move || {
                let mut g = m.lock_blocking();
                g.push(i);
                std::thread::yield_now();
                g.push(i);
            })
        })
        .collect();
    for t in fibra_tasks {
        fibra::block_on(t).unwrap();
    }
    for t in tokio_tasks {
        tokio.block_on(t).unwrap();
    }
    threads.into_iter().for_each(|t| t.join().unwrap());
    let v = m.lock_blocking().clone();
    assert_eq!(v.len(), 24);
    for pair in v.chunks(2) {
        assert_eq!(pair[0], pair[1], "two holders interleaved: {v:?}");
    }
}

#[test]
fn mutex_stress_a_protected_counter_counts_every_increment() {
    let seed = test_seed("mutex_stress_a_protected_counter_counts_every_increment");
    let per = scaled(5_000) as u64;
    with_watchdog("mutex stress", seed, STRESS_LIMIT, move || {
        let t0 = Instant::now();
        // A non-atomic read-modify-write under the lock: any overlap of two
        // holders loses an increment or trips the `holder` check.
        let m = Arc::new(Mutex::new((0u64, None::<u64>)));
        let increments = Arc::new(AtomicU64::new(0));
        let timeouts = Arc::new(AtomicU64::new(0));
        fn critical(g: &mut (u64, Option<u64>), me: u64, spin: bool) {
            assert_eq!(g.1, None, "two holders at once");
            g.1 = Some(me);
            let v = g.0;
            if spin {
                std::hint::spin_loop();
            }
            g.0 = v + 1;
            assert_eq!(g.1.take(), Some(me), "two holders at once");
        }
        let rt = Runtime::builder().workers(2).build().unwrap();
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let (m, increments, timeouts) = (m.clone(), increments.clone(), timeouts.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng::new(seed ^ t);
                    let mut done = 0;
                    while done < per {
                        let mut g = match rng.below(4) {
                            0 | 1 => m.lock_blocking(),
                            2 => match m.try_lock() {
                                Some(g) => g,
                                None => {
                                    std::thread::yield_now();
                                    continue;
                                }
                            },
                            _ => {
                                let d = Duration::from_micros(rng.below(200) as u64);
                                match choose((m.lock_op().wrap(Some), after(d).wrap(|()| None)))
                                    .perform()
                                {
                                    Some(g) => g,
                                    None => {
                                        timeouts.fetch_add(1, Ordering::Relaxed);
                                        continue;
                                    }
                                }
                            }
                        };
                        critical(&mut g, t, rng.chance(50));
                        drop(g);
                        increments.fetch_add(1, Ordering::Relaxed);
                        done += 1;
                    }
                })
            })
            .collect();
        let tasks: Vec<_> = (100..108u64)
            .map(|t| {
                let (m, increments, timeouts) = (m.clone(), increments.clone(), timeouts.clone());
                rt.spawn(async move {
                    let mut rng = Rng::new(seed ^ t);
                    let mut done = 0;
                    while done < per {
                        let mut g = match rng.below(4) {
                            0 | 1 => m.lock().await,
                            2 => {
                                // Polled once and dropped: a lock handed
                                // to it in between is handed on.
                                let mut f = pin!(m.lock());
                                match futures::poll!(f.as_mut()) {
                                    Poll::Ready(g) => g,
                                    Poll::Pending => {
                                        fibra::yield_now().await;
                                        continue;
                                    }
                                }
                            }
                            _ => {
                                let d = Duration::from_micros(rng.below(200) as u64);
                                match choose((m.lock_op().wrap(Some), after(d).wrap(|()| None)))
                                    .await
                                {
                                    Some(g) => g,
                                    None => {
                                        timeouts.fetch_add(1, Ordering::Relaxed);
                                        continue;
                                    }
                                }
                            }
                        };
                        critical(&mut g, t, false);
                        if rng.chance(10) {
                            fibra::yield_now().await; // held across an await
                        }
                        drop(g);
                        increments.fetch_add(1, Ordering::Relaxed);
                        done += 1;
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        for t in tasks {
            fibra::block_on(t).unwrap();
        }
        let g = m.try_lock().expect("the lock was left held");
        assert_eq!(g.0, 16 * per);
        assert_eq!(g.0, increments.load(Ordering::SeqCst));
        eprintln!(
            "mutex stress: {} increments in {:?}, {} lock ops lost to a timer",
            g.0,
            t0.elapsed(),
            timeouts.load(Ordering::Relaxed)
        );
    });
}
