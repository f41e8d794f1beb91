//! User code that panics where fibra calls it on its own threads — a task
//! future's drop at shutdown, a foreign waker woken by the timer thread, a
//! worker or the blocking pool — and a runtime dropped inside its own task:
//! fibra contains each and goes on, dropping every task exactly once.

use fibra::{JoinError, Runtime};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// Runs `f` on another thread and fails the test if it does not finish in
/// `limit` (a hang is the failure these tests look for).
fn within<R: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what}: not done after {limit:?}"))
}

/// A waker from "another executor" whose `wake` panics.
struct PanickingWaker;

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("a foreign waker that panics on purpose");
    }
}

fn panicking_waker() -> Waker {
    Waker::from(Arc::new(PanickingWaker))
}

/// Counts its drops, and panics in its drop if asked to.
struct Guard {
    drops: Arc<AtomicUsize>,
    panic: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.panic {
            panic!("a task future whose drop panics on purpose");
        }
    }
}

#[test]
fn shutdown_contains_panicking_drops_and_drops_every_task_once() {
    for (name, rt) in [
        (
            "multi-thread",
            Runtime::builder().workers(2).build().unwrap(),
        ),
        (
            "current-thread",
            Runtime::builder().current_thread().build().unwrap(),
        ),
    ] {
        const TASKS: usize = 200;
        let drops = Arc::new(AtomicUsize::new(0));
        let parked = Arc::new(AtomicUsize::new(0));
        let (keep_open, rx) = fibra::channel::<()>();
        let handles: Vec<_> = (0..TASKS)
            .map(|i| {
                let guard = Guard {
                    drops: drops.clone(),
                    panic: i % 3 == 0,
                };
                let (rx, parked) = (rx.clone(), parked.clone());
                rt.spawn(async move {
                    let _guard = guard;
                    parked.fetch_add(1, Ordering::SeqCst);
                    let _ = rx.recv().await;
                })
            })
            .collect();
        let p = parked.clone();
        rt.block_on(async move {
            while p.load(Ordering::SeqCst) < TASKS {
                fibra::yield_now().await;
            }
        });
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(rt)));
        assert!(
            dropped.is_ok(),
            "{name}: a task's drop panic escaped the runtime's drop"
        );
        assert_eq!(
            drops.load(Ordering::SeqCst),
            TASKS,
            "{name}: every task dropped once"
        );
        for (i, h) in handles.into_iter().enumerate() {
            let out = within(Duration::from_secs(10), name, move || fibra::block_on(h));
            match out {
                Err(JoinError::Panicked(_)) => assert_eq!(i % 3, 0, "{name}: task {i}"),
                Err(JoinError::Cancelled) => assert_ne!(i % 3, 0, "{name}: task {i}"),
                Ok(()) => panic!("{name}: task {i} finished"),
            }
        }
        drop(keep_open);
    }
}

#[test]
fn a_runtime_dropped_inside_its_own_task_shuts_down_and_drops_every_task() {
    const TASKS: usize = 50;
    let rt = Runtime::builder().workers(2).build().unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let (keep_open, rx) = fibra::channel::<()>();
    let parked: Vec<_> = (0..TASKS)
        .map(|_| {
            let guard = Guard {
                drops: drops.clone(),
                panic: false,
            };
            let rx = rx.clone();
            rt.spawn(async move {
                let _guard = guard;
                let _ = rx.recv().await;
            })
        })
        .collect();
    let handle = rt.handle();
    let (done_tx, done_rx) = mpsc::channel();
    let dropper = handle.spawn(async move {
        drop(rt);
        done_tx.send(()).unwrap();
    });
    done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the task that dropped its runtime goes on");
    let d = drops.clone();
    within(Duration::from_secs(10), "every task dropped", move || {
        while d.load(Ordering::SeqCst) < TASKS {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    assert_eq!(drops.load(Ordering::SeqCst), TASKS);
    for h in parked {
        let out = within(Duration::from_secs(10), "parked task", move || {
            fibra::block_on(h)
        });
        assert!(out.unwrap_err().is_cancelled());
    }
    let out = within(Duration::from_secs(10), "dropper", move || {
        fibra::block_on(dropper)
    });
    assert!(matches!(out, Ok(()) | Err(JoinError::Cancelled)), "{out:?}");
    drop(keep_open);
}

#[test]
fn a_panicking_waker_does_not_stop_the_timer_thread() {
    // A time op polled by "another executor" whose waker panics when the
    // timer thread wakes it.
    let mut sleep = Box::pin(fibra::time::sleep(Duration::from_millis(1)));
    let waker = panicking_waker();
    assert!(
        sleep
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    std::thread::sleep(Duration::from_millis(50));
    // Every later time op still fires.
    within(Duration::from_secs(10), "a later sleep", || {
        for _ in 0..3 {
            fibra::block_on(fibra::time::sleep(Duration::from_millis(2)));
        }
    });
    drop(sleep);
}

#[test]
fn a_panicking_joiner_waker_does_not_stop_a_worker() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let (go, gate) = fibra::channel::<()>();
    let h = rt.spawn(async move {
        let _ = gate.recv().await;
        7
    });
    let mut h = pin!(h);
    let waker = panicking_waker();
    assert!(
        h.as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    // The task finishes on the worker, which wakes our waker.
    go.send_blocking(()).unwrap();
    let rt = Arc::new(rt);
    let rt2 = rt.clone();
    let out = within(Duration::from_secs(10), "the worker goes on", move || {
        rt2.block_on(async { fibra::spawn(async { 5 }).await.unwrap() })
    });
    assert_eq!(out, 5);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(h.as_mut().poll(&mut cx), Poll::Ready(Ok(7))));
}

thread_local! {
    /// Set by a job on a blocking pool thread: dropped when that thread ends.
    static POOL_THREAD_ALIVE: std::cell::RefCell<Option<Arc<()>>> = const { std::cell::RefCell::new(None) };
}

#[test]
// The handle comes out of the runtime on purpose: it is polled from here
// with a foreign waker.
#[allow(clippy::async_yields_async)]
fn a_panicking_joiner_waker_does_not_stop_a_blocking_pool_thread() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let alive = Arc::new(());
    let (tx, rx) = mpsc::channel::<()>();
    let in_job = alive.clone();
    let first = rt.block_on(async move {
        fibra::spawn_blocking(move || {
            POOL_THREAD_ALIVE.with(|a| *a.borrow_mut() = Some(in_job));
            rx.recv().unwrap();
        })
    });
    let mut first = Box::pin(first);
    let waker = panicking_waker();
    assert!(
        first
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    tx.send(()).unwrap();
    // The pool thread finishes the job and wakes the panicking waker. Had
    // the panic escaped, the thread would end (after the panic hook's
    // report) and drop what the job left in its thread-local.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        assert_eq!(Arc::strong_count(&alive), 2, "the pool thread died");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(first.is_finished());
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(first.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
}
