//! `JoinSet`, `LocalSet`/`spawn_local` and `Runtime::block_on_local`: every
//! task reports once (output, panic or cancellation), local tasks stay on
//! their thread, and misuse panics with a message that says what to do.

use fibra::time::after;
use fibra::{JoinSet, LocalSet, Op, Runtime, choose, spawn_local};
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const SHORT: Duration = Duration::from_millis(10);

/// Counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

// ---------------------------------------------------------------- JoinSet

#[test]
fn join_set_joins_every_task_once_outputs_panics_and_aborts() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let (sum, panics, cancelled) = rt.block_on(async {
        let mut set = JoinSet::new();
        for i in 0..200u64 {
            set.spawn(async move {
                if i % 50 == 7 {
                    panic!("task {i} fails");
                }
                if i % 2 == 0 {
                    fibra::yield_now().await;
                }
                i
            });
        }
        // Some that never finish, aborted below.
        for _ in 0..5 {
            set.spawn(std::future::pending::<u64>());
        }
        assert_eq!(set.len(), 205);
        let (mut sum, mut panics, mut cancelled) = (0, 0, 0);
        let mut joined = 0;
        while let Some(res) = set.join_next().await {
            joined += 1;
            match res {
                Ok(v) => sum += v,
                Err(e) if e.is_panic() => {
                    assert!(panic_message(&*e.into_panic()).contains("fails"));
                    panics += 1;
                }
                Err(e) => {
                    assert!(e.is_cancelled());
                    cancelled += 1;
                }
            }
            if joined == 200 {
                set.abort_all();
            }
        }
        assert!(set.is_empty());
        (sum, panics, cancelled)
    });
    let failing: u64 = (0..200).filter(|i| i % 50 == 7).sum();
    assert_eq!(sum, (0..200).sum::<u64>() - failing);
    assert_eq!(panics, 4);
    assert_eq!(cancelled, 5);
}

#[test]
fn join_next_op_that_loses_a_choice_leaves_the_outcome_in_the_set() {
    let outcomes = fibra::run(async {
        let mut set = JoinSet::new();
        for i in 0..50u32 {
            set.spawn(async move {
                after(Duration::from_millis(u64::from(i % 5))).await;
                i
            });
        }
        let (tx, rx) = fibra::unbounded::<()>();
        let mut got = Vec::new();
        let mut lost = 0;
        while !set.is_empty() {
            // The channel branch is ready half the time: then the join
            // loses (or wins) the choice, and nothing is lost either way.
            if got.len() % 2 == 0 {
                tx.try_send(()).unwrap();
            }
            let r = choose((
                set.join_next_op().wrap(|r| r.map(|r| r.unwrap())),
                rx.recv_op().wrap(|_| None),
            ))
            .await;
            match r {
                Some(v) => got.push(v),
                None => lost += 1,
            }
        }
        assert!(
            lost > 0,
            "the join never lost a choice: the test tests nothing"
        );
        got
    });
    let mut sorted = outcomes;
    sorted.sort_unstable();
    assert_eq!(sorted, (0..50).collect::<Vec<_>>());
}

#[test]
fn dropping_a_join_set_aborts_its_tasks() {
    let dropped = Arc::new(AtomicUsize::new(0));
    fibra::run({
        let dropped = dropped.clone();
        async move {
            let mut set = JoinSet::new();
            for _ in 0..10 {
                let guard = DropCount(dropped.clone());
                set.spawn(async move {
                    let _guard = guard;
                    std::future::pending::<()>().await;
                });
            }
            fibra::yield_now().await;
            drop(set);
            while dropped.load(Ordering::SeqCst) < 10 {
                after(Duration::from_millis(1)).await;
            }
        }
    });
    assert_eq!(dropped.load(Ordering::SeqCst), 10);
}

#[test]
fn join_set_from_an_os_thread_and_tasks_dropped_by_shutdown_report_cancelled() {
    let rt = Runtime::builder().current_thread().build().unwrap();
    let mut set = JoinSet::new();
    set.spawn_on(async { 1 }, &rt.handle());
    set.spawn_on(async { 2 }, &rt.handle());
    // Nobody runs a current-thread runtime's tasks outside `block_on`:
    // dropping it drops them unpolled.
    drop(rt);
    let mut cancelled = 0;
    while let Some(res) = fibra::block_on(set.join_next()) {
        assert!(res.unwrap_err().is_cancelled());
        cancelled += 1;
    }
    assert_eq!(cancelled, 2);
    let mut empty = JoinSet::<()>::new();
    assert!(fibra::block_on(empty.join_next()).is_none());
    assert!(empty.try_join_next().is_none());
}

#[test]
fn join_set_spawn_outside_a_runtime_says_what_to_use() {
    let err = catch_unwind(AssertUnwindSafe(|| JoinSet::new().spawn(async {}))).unwrap_err();
    assert!(panic_message(&*err).contains("JoinSet::spawn_on"));
}

// -------------------------------------------------- LocalSet, spawn_local

#[test]
fn block_on_local_takes_a_borrowing_non_send_future_and_runs_local_tasks() {
    let rt = Runtime::builder().current_thread().build().unwrap();
    let words = vec!["a", "bb", "ccc"]; // borrowed, not moved
    let counter = Rc::new(Cell::new(0)); // not Send
    let me = std::thread::current().id();
    let total = rt.block_on_local(async {
        let mut handles = Vec::new();
        for w in &words {
            let (counter, len) = (counter.clone(), w.len());
            handles.push(spawn_local(async move {
                for _ in 0..len {
                    assert_eq!(std::thread::current().id(), me, "a local task moved");
                    counter.set(counter.get() + 1);
                    fibra::yield_now().await;
                }
                len
            }));
        }
        // Ordinary tasks run beside them.
        let plain = fibra::spawn(async { 10 });
        let mut total = plain.await.unwrap();
        for h in handles {
            total += h.await.unwrap();
        }
        total
    });
    assert_eq!(total, 16);
    assert_eq!(counter.get(), 6);
    // The runtime is still usable, by either kind of block_on.
    assert_eq!(rt.block_on(async { 1 }), 1);
    assert_eq!(rt.block_on_local(async { 2 }), 2);
}

#[test]
fn local_tasks_are_woken_from_other_threads_and_by_timers() {
    let rt = Runtime::builder().current_thread().build().unwrap();
    let (tx, rx) = fibra::unbounded::<u32>();
    let sender = std::thread::spawn(move || {
        for i in 0..100 {
            tx.send_blocking(i).unwrap();
            if i % 10 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let sum = rt.block_on_local(async move {
        let local = Rc::new(Cell::new(0u32));
        let h = spawn_local({
            let local = local.clone();
            async move {
                while let Ok(v) = rx.recv().await {
                    local.set(local.get() + v);
                }
            }
        });
        let timer = spawn_local(async { after(SHORT).await });
        h.await.unwrap();
        timer.await.unwrap();
        local.get()
    });
    sender.join().unwrap();
    assert_eq!(sum, 4950);
}

#[test]
fn local_set_on_an_os_thread_and_on_tokio_and_abort_and_drop() {
    let local = LocalSet::new();
    let dropped = Arc::new(AtomicUsize::new(0));
    let v = fibra::block_on(local.run_until(async {
        let h = spawn_local(async { Rc::new(7) });
        let stuck = spawn_local({
            let guard = DropCount(dropped.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await
            }
        });
        stuck.abort();
        assert!(stuck.await.unwrap_err().is_cancelled());
        *h.await.unwrap()
    }));
    assert_eq!(v, 7);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    // A task still running when the set is dropped is dropped with it.
    let left = local.spawn_local({
        let guard = DropCount(dropped.clone());
        async move {
            let _guard = guard;
            std::future::pending::<()>().await
        }
    });
    fibra::block_on(local.run_until(fibra::yield_now()));
    drop(local);
    assert_eq!(dropped.load(Ordering::SeqCst), 2);
    assert!(left.is_finished());
    assert!(fibra::block_on(left).unwrap_err().is_cancelled());

    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let local = LocalSet::new();
    let out = tokio_rt.block_on(local.run_until(async {
        let h = spawn_local(async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Rc::new("tokio")
        });
        h.await.unwrap()
    }));
    assert_eq!(*out, "tokio");
}

#[test]
fn a_panicking_local_task_reports_it() {
    let local = LocalSet::new();
    let err = fibra::block_on(local.run_until(async {
        spawn_local(async { panic!("local boom") })
            .await
            .unwrap_err()
    }));
    assert!(panic_message(&*err.into_panic()).contains("local boom"));
}

#[test]
fn spawn_local_where_it_cannot_work_panics_with_a_clear_message() {
    // An ordinary task: no LocalSet.
    let err = fibra::run(async { fibra::spawn(async { drop(spawn_local(async {})) }).await })
        .unwrap_err();
    assert!(panic_message(&*err.into_panic()).contains("outside a LocalSet"));
    // block_on_local on a multi-thread runtime.
    let rt = Runtime::builder().workers(1).build().unwrap();
    let err = catch_unwind(AssertUnwindSafe(|| rt.block_on_local(async {}))).unwrap_err();
    assert!(panic_message(&*err).contains("current-thread runtime"));
}

#[test]
fn block_on_local_resumes_a_panic_and_the_runtime_stays_usable() {
    let rt = Runtime::builder().current_thread().build().unwrap();
    let err = catch_unwind(AssertUnwindSafe(|| {
        rt.block_on_local(async {
            let h = fibra::spawn(async { 5 });
            spawn_local(std::future::pending::<()>()); // dropped with the set
            assert_eq!(h.await.unwrap(), 5);
            panic!("root fails");
        })
    }))
    .unwrap_err();
    assert!(panic_message(&*err).contains("root fails"));
    assert_eq!(
        rt.block_on_local(async { fibra::spawn(async { 6 }).await.unwrap() }),
        6
    );
    assert_eq!(rt.block_on(async { 7 }), 7);
}

#[test]
fn local_join_op_composes_and_keeps_the_outcome_when_it_loses() {
    let local = LocalSet::new();
    fibra::block_on(local.run_until(async {
        let (tx, rx) = fibra::channel::<()>();
        let h = spawn_local(async move {
            rx.recv().await.unwrap();
            Rc::new(8)
        });
        let first = choose((
            h.join_op().wrap(|r| r.ok().map(|v| *v)),
            after(SHORT).wrap(|()| None),
        ))
        .await;
        assert_eq!(first, None);
        tx.send(()).await.unwrap();
        while !h.is_finished() {
            fibra::yield_now().await;
        }
        // Finished: a join that loses to a ready branch takes nothing.
        let lost = fibra::choose_biased((fibra::always(0), h.join_op().wrap(|_| 1))).await;
        assert_eq!(lost, 0);
        assert_eq!(*h.join_op().await.unwrap(), 8);
    }));
}

#[test]
fn a_spinning_local_task_does_not_starve_the_runtimes_tasks() {
    // A local task yields in a loop until an ordinary task has run: the
    // root keeps being woken, and the ordinary task must still get turns.
    let rt = Runtime::builder().current_thread().build().unwrap();
    let done = rt.block_on_local(async {
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, rx) = fibra::unbounded::<()>();
        let plain = fibra::spawn({
            let ran = ran.clone();
            async move {
                rx.recv().await.unwrap();
                ran.store(true, Ordering::SeqCst);
            }
        });
        spawn_local(async move {
            tx.send(()).await.unwrap();
            while !ran.load(Ordering::SeqCst) {
                fibra::yield_now().await;
            }
        })
        .await
        .unwrap();
        plain.await.is_ok()
    });
    assert!(done);
}
