//! No runnable task waits while a core is idle: a task that becomes
//! runnable on a worker stuck in a long poll is reached by an idle worker
//! within about 1.5 ms (docs/runtime.md, "Idle workers rescue").
//! Bounds here are generous (a quarter of a second against the half second
//! or more a stuck task waited), so a loaded machine or a sanitizer build
//! does not make them flaky.

use fibra::Runtime;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Longer than a rescue ever takes (about 1.5 ms), shorter than the wait of
/// a task stuck behind a long poll (500 ms here, or the 1.5 s cap).
const BOUND: Duration = Duration::from_millis(250);

/// These tests measure how soon an idle core takes work: they need the
/// cores to themselves, so they run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spins for `d` without yielding: a poll that computes.
fn compute(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

#[test]
fn a_sleeper_beside_a_long_computation_wakes_on_time() {
    let _alone = alone();
    let rt = Runtime::builder().workers(2).build().unwrap();
    for trial in 0..5 {
        // Every worker idle for a while first.
        std::thread::sleep(Duration::from_millis(50));
        let slept = rt.block_on(async {
            // The sleeper starts on this worker and parks (retained here),
            // then this task computes for half a second.
            let sleeper = fibra::spawn(async {
                let start = Instant::now();
                fibra::time::sleep(Duration::from_millis(5)).await;
                start.elapsed()
            });
            fibra::yield_now().await;
            compute(Duration::from_millis(500));
            sleeper.await.unwrap()
        });
        assert!(
            slept < BOUND,
            "trial {trial}: a 5 ms sleep took {slept:?} beside a busy task"
        );
    }
}

#[test]
fn a_task_spawned_by_a_task_that_then_waits_busily_runs() {
    let _alone = alone();
    let rt = Runtime::builder().workers(2).build().unwrap();
    for trial in 0..10 {
        // Every worker idle for a while first.
        std::thread::sleep(Duration::from_millis(50));
        let waited = rt.block_on(async {
            // Long enough for the other worker to give up searching and
            // sleep.
            compute(Duration::from_millis(20));
            let ran = Arc::new(AtomicBool::new(false));
            let r = ran.clone();
            let start = Instant::now();
            let child = fibra::spawn(async move { r.store(true, Ordering::Release) });
            // Busy-wait (no yield) for the child, at most 1.5 s.
            while !ran.load(Ordering::Acquire) && start.elapsed() < Duration::from_millis(1500) {
                std::hint::spin_loop();
            }
            let waited = start.elapsed();
            child.await.unwrap();
            waited
        });
        assert!(
            waited < BOUND,
            "trial {trial}: the child waited {waited:?} while a worker was idle"
        );
    }
}

#[test]
fn tasks_woken_by_a_long_poll_run_elsewhere_while_it_lasts() {
    let _alone = alone();
    // A task wakes a consumer (into its worker's `next` slot and `hot`
    // queue) and then computes: the consumers run on the other worker.
    let rt = Runtime::builder().workers(2).build().unwrap();
    let (tx, rx) = fibra::bounded::<Instant>(16);
    std::thread::sleep(Duration::from_millis(50));
    let out = rt.block_on(async move {
        let consumers: Vec<_> = (0..4)
            .map(|_| {
                let rx = rx.clone();
                fibra::spawn(async move { rx.recv().await.unwrap().elapsed() })
            })
            .collect();
        fibra::yield_now().await;
        let producer = fibra::spawn(async move {
            for _ in 0..4 {
                tx.send(Instant::now()).await.unwrap();
            }
            compute(Duration::from_millis(500));
        });
        let mut lat = Vec::new();
        for c in consumers {
            lat.push(c.await.unwrap());
        }
        producer.await.unwrap();
        lat
    });
    for l in out {
        assert!(l < BOUND, "a woken consumer waited {l:?}");
    }
}

#[test]
fn too_many_workers_are_refused_at_once() {
    let _alone = alone();
    let start = Instant::now();
    let err = Runtime::builder().workers(10_000).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("workers"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(1));
    let max = Runtime::builder().workers(fibra::rt::MAX_WORKERS);
    let start = Instant::now();
    let rt = max.build().unwrap();
    assert_eq!(rt.block_on(async { 1 + 1 }), 2);
    drop(rt);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "starting and stopping {} workers took {:?}",
        fibra::rt::MAX_WORKERS,
        start.elapsed()
    );
}
