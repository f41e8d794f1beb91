//! Behaviour of fibra's runtime: spawn, join, abort, panics, flavours,
//! blocking misuse, shutdown.

mod common;

use common::OtherTask;
use fibra::{JoinError, Op, Runtime, choose};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Counts its drops: a task's future holding one is dropped exactly when
/// the count moves.
struct CountDrop(Arc<AtomicUsize>);

impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn flavours() -> Vec<(&'static str, Runtime)> {
    vec![
        (
            "multi-thread",
            Runtime::builder().workers(2).build().unwrap(),
        ),
        (
            "multi-thread-1",
            Runtime::builder().workers(1).build().unwrap(),
        ),
        (
            "current-thread",
            Runtime::builder().current_thread().build().unwrap(),
        ),
    ]
}

#[test]
fn spawn_and_join_return_outputs_on_every_flavour() {
    for (name, rt) in flavours() {
        let sum = rt.block_on(async {
            let hs: Vec<_> = (0..1000u64)
                .map(|i| fibra::spawn(async move { i * 2 }))
                .collect();
            let mut sum = 0;
            for h in hs {
                sum += h.await.unwrap();
            }
            sum
        });
        assert_eq!(sum, 999 * 1000, "{name}");
    }
}

#[test]
fn spawn_from_outside_the_runtime_runs_on_it() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let h = rt.spawn(async { fibra::Handle::try_current().is_some() });
    assert!(fibra::block_on(h).unwrap());
    let handle = rt.handle();
    let from_thread = std::thread::spawn(move || fibra::block_on(handle.spawn(async { 9 })));
    assert_eq!(from_thread.join().unwrap().unwrap(), 9);
}

#[test]
fn a_panicking_task_yields_join_error_and_the_runtime_survives() {
    for (name, rt) in flavours() {
        rt.block_on(async move {
            let h = fibra::spawn(async { panic!("task failed on purpose") });
            let err = h.await.unwrap_err();
            assert!(err.is_panic(), "{name}");
            assert!(
                err.to_string().contains("task failed on purpose"),
                "{name}: {err}"
            );
            assert_eq!(fibra::spawn(async { 5 }).await.unwrap(), 5, "{name}");
        });
    }
}

#[test]
fn abort_cancels_a_waiting_task_and_drops_its_future() {
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::builder().workers(2).build().unwrap();
    let d = drops.clone();
    rt.block_on(async move {
        let (_tx, rx) = fibra::channel::<u32>();
        let guard = CountDrop(d.clone());
        let h = fibra::spawn(async move {
            let _g = guard;
            rx.recv().await
        });
        fibra::yield_now().await;
        h.abort();
        assert!(matches!(h.await, Err(JoinError::Cancelled)));
        assert_eq!(d.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn abort_after_completion_keeps_the_output() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    rt.block_on(async {
        let h = fibra::spawn(async { 7 });
        while !h.is_finished() {
            fibra::yield_now().await;
        }
        h.abort();
        assert_eq!(h.await.unwrap(), 7);
    });
}

#[test]
fn abort_racing_completion_gives_output_or_cancelled_never_both() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let (mut done, mut cancelled) = (0, 0);
    for _ in 0..2000 {
        let h = rt.spawn(async {
            fibra::yield_now().await;
            1u8
        });
        h.abort();
        match fibra::block_on(h) {
            Ok(1) => done += 1,
            Err(JoinError::Cancelled) => cancelled += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(done + cancelled, 2000);
}

#[test]
fn join_op_works_in_a_choice_with_a_channel() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    rt.block_on(async {
        let (tx, rx) = fibra::channel::<&str>();
        let slow = fibra::spawn(async move {
            fibra::time::sleep(Duration::from_millis(20)).await;
            "joined"
        });
        let _sender = fibra::spawn(async move { tx.send("message").await });
        let first = choose((
            slow.join_op().wrap(|r| r.unwrap()),
            rx.recv_op().wrap(|r| r.unwrap()),
        ))
        .await;
        assert_eq!(first, "message");
        assert_eq!(slow.await.unwrap(), "joined");
    });
}

#[test]
fn blocking_perform_on_a_worker_panics_with_advice() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let h = rt.spawn(async {
        let (tx, _rx) = fibra::bounded::<u8>(1);
        tx.send_blocking(1)
    });
    let err = fibra::block_on(h).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("use `.await`"), "{msg}");
}

#[test]
fn block_on_on_a_current_thread_runtime_inside_a_worker_panics() {
    let outer = Runtime::builder().workers(1).build().unwrap();
    let h = outer.spawn(async {
        let inner = Runtime::builder().current_thread().build().unwrap();
        inner.block_on(async { 1 })
    });
    assert!(fibra::block_on(h).unwrap_err().is_panic());
}

#[test]
fn spawn_outside_a_runtime_panics_with_advice() {
    let err = std::panic::catch_unwind(|| fibra::spawn(async {})).unwrap_err();
    let msg = err.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(msg.contains("Runtime::spawn"), "{msg}");
}

/// Drops `rt` and checks that every task of `handles` (each holding a
/// `CountDrop` on `drops`) was dropped exactly once and reports cancelled.
fn drops_every_task_once_at_shutdown(
    name: &str,
    rt: Runtime,
    drops: &AtomicUsize,
    handles: Vec<fibra::JoinHandle<()>>,
) {
    drop(rt);
    assert_eq!(drops.load(Ordering::SeqCst), handles.len(), "{name}");
    for h in handles {
        assert!(fibra::block_on(h).unwrap_err().is_cancelled(), "{name}");
    }
}

#[test]
fn shutdown_drops_every_pending_task_exactly_once() {
    for (name, rt) in flavours() {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = fibra::channel::<u32>();
        let mut handles = Vec::new();
        for _ in 0..500 {
            let guard = CountDrop(drops.clone());
            let rx = rx.clone();
            handles.push(rt.spawn(async move {
                let _g = guard;
                let _ = rx.recv().await; // never gets anything
            }));
        }
        // Let the multi-thread runtimes start them (they park on `rx`).
        std::thread::sleep(Duration::from_millis(20));
        drops_every_task_once_at_shutdown(name, rt, &drops, handles);
        drop(tx);
    }
}

/// Spawns through a `Handle` on another thread while the runtime drops:
/// every spawned future is dropped exactly once (by shutdown, whichever side
/// of the race it landed on), and every handle resolves.
#[test]
fn spawns_racing_the_runtime_drop_are_each_dropped_once() {
    for round in 0..200 {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        let handle = rt.handle();
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        let spawner = std::thread::spawn(move || {
            (0..300)
                .map(|_| {
                    let guard = CountDrop(d.clone());
                    handle.spawn(async move {
                        let _g = guard;
                        fibra::yield_now().await;
                        std::future::pending::<()>().await;
                    })
                })
                .collect::<Vec<_>>()
        });
        // Vary where in the spawns the drop lands.
        std::thread::sleep(Duration::from_micros(50 * (round % 8)));
        drop(rt);
        let handles = spawner.join().unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 300, "round {round}");
        for h in handles {
            assert!(fibra::block_on(h).unwrap_err().is_cancelled());
        }
    }
}

/// Tasks that never ran when the runtime drops (queued in the injector, in
/// a worker's deque or its `next` slot) are not in the registry (a task
/// registers at its first `Pending`): shutdown finds them in the queues.
#[test]
fn shutdown_drops_tasks_that_never_ran_exactly_once() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let s = started.clone();
    // Keeps the only worker busy while the others are spawned, so none runs.
    let busy = rt.spawn(async move {
        let inner: Vec<_> = (0..100)
            .map(|_| {
                let g = CountDrop(d.clone());
                fibra::spawn(async move {
                    let _g = g;
                })
            })
            .collect();
        s.store(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
        inner
    });
    while started.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let outer: Vec<_> = (0..100)
        .map(|_| {
            let g = CountDrop(drops.clone());
            rt.spawn(async move {
                let _g = g;
            })
        })
        .collect();
    drop(rt); // while `busy` still sleeps in its poll
    let inner = fibra::block_on(busy).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 200);
    for h in inner.into_iter().chain(outer) {
        assert!(fibra::block_on(h).unwrap_err().is_cancelled());
    }
}

/// A finished task wakes its joiner behind the tasks already queued (not
/// into the hand-off slot): a root joining many short tasks is polled a few
/// times, not once per task.
#[test]
fn a_joiner_woken_by_a_finishing_task_runs_after_the_queued_tasks() {
    struct CountPolls<F>(F, Arc<AtomicUsize>);
    impl<F: std::future::Future + Unpin> std::future::Future for CountPolls<F> {
        type Output = F::Output;
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<F::Output> {
            self.1.fetch_add(1, Ordering::Relaxed);
            std::pin::Pin::new(&mut self.0).poll(cx)
        }
    }
    let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    let polls = Arc::new(AtomicUsize::new(0));
    let p = polls.clone();
    let sum = rt.block_on(async move {
        let handles: Vec<_> = (0..1000u64)
            .map(|i| fibra::spawn(async move { i }))
            .collect();
        let join_all = Box::pin(async move {
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            sum
        });
        CountPolls(join_all, p).await
    });
    assert_eq!(sum, 499_500);
    let polls = polls.load(Ordering::Relaxed);
    assert!(
        polls <= 3,
        "the joiner was polled {polls} times for 1000 joins"
    );
}

/// A lasting backlog of CPU-bound tasks is offered to the idle worker (after
/// `OFFER_DELAY`, not at once): the tasks of one spawner run on both workers.
#[test]
fn a_lasting_backlog_spreads_to_an_idle_worker() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let threads = rt.block_on(async {
        // Let the other worker go to sleep first.
        std::thread::sleep(Duration::from_millis(20));
        let handles: Vec<_> = (0..64)
            .map(|_| {
                fibra::spawn(async {
                    let t = std::time::Instant::now();
                    while t.elapsed() < Duration::from_millis(1) {
                        std::hint::spin_loop();
                    }
                    std::thread::current().id()
                })
            })
            .collect();
        let mut ids = std::collections::HashSet::new();
        for h in handles {
            ids.insert(h.await.unwrap());
        }
        ids.len()
    });
    assert_eq!(threads, 2, "64 ms of queued work stayed on one worker");
}

#[test]
fn spawn_blocking_runs_off_the_workers() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    rt.block_on(async {
        let (tx, rx) = fibra::channel::<u32>();
        // The blocking call waits for a task on the only worker: it would
        // deadlock if it ran on the worker.
        let b = fibra::spawn_blocking(move || rx.recv_blocking().unwrap());
        tx.send(3).await.unwrap();
        assert_eq!(b.await.unwrap(), 3);
    });
}

#[test]
fn yield_now_lets_other_tasks_run_on_a_single_worker() {
    let rt = Runtime::builder().current_thread().build().unwrap();
    rt.block_on(async {
        let flag = Arc::new(AtomicUsize::new(0));
        let f = flag.clone();
        let _h = fibra::spawn(async move { f.store(1, Ordering::SeqCst) });
        while flag.load(Ordering::SeqCst) == 0 {
            fibra::yield_now().await;
        }
    });
}

/// A current-thread runtime and a multi-thread one of one worker: every
/// task on one thread, so what runs first is the scheduler's order.
fn one_thread_runtimes() -> [Runtime; 2] {
    [
        Runtime::builder().current_thread().build().unwrap(),
        Runtime::builder().workers(1).build().unwrap(),
    ]
}

/// A chain of tasks, each spawning the next before it ends, until `stop`
/// is set: the newest spawn is always the next to run on its worker (the
/// local queue is LIFO). Returns how many ran.
async fn spawn_chain(stop: Arc<AtomicUsize>) -> u64 {
    fn link(stop: Arc<AtomicUsize>, count: Arc<AtomicUsize>, done: fibra::Sender<()>) {
        if stop.load(Ordering::SeqCst) != 0 {
            let _ = done.try_send(());
            return;
        }
        let n = count.fetch_add(1, Ordering::SeqCst);
        assert!(
            n < 10_000_000,
            "the chain of spawns starved the other tasks"
        );
        drop(fibra::spawn(async move { link(stop, count, done) }));
    }
    let count = Arc::new(AtomicUsize::new(0));
    let (done, finished) = fibra::bounded(1);
    link(stop, count.clone(), done);
    finished.recv().await.unwrap();
    count.load(Ordering::SeqCst) as u64
}

#[test]
fn a_stream_of_spawns_does_not_starve_a_task_spawned_before_it() {
    for rt in one_thread_runtimes() {
        rt.block_on(async {
            let stop = Arc::new(AtomicUsize::new(0));
            let s = stop.clone();
            // Spawned first: the oldest entry of the local queue.
            let first = fibra::spawn(async move { s.store(1, Ordering::SeqCst) });
            let chain = spawn_chain(stop).await;
            first.await.unwrap();
            assert!(chain > 0);
        });
    }
}

#[test]
fn a_stream_of_spawns_does_not_starve_a_yielding_task() {
    for rt in one_thread_runtimes() {
        rt.block_on(async {
            let stop = Arc::new(AtomicUsize::new(0));
            let s = stop.clone();
            let yielder = fibra::spawn(async move {
                for _ in 0..100 {
                    fibra::yield_now().await;
                }
                s.store(1, Ordering::SeqCst);
            });
            spawn_chain(stop).await;
            yielder.await.unwrap();
        });
    }
}

/// Live tasks of a fork-join tree: how many are spawned and not finished,
/// and the most at once.
#[derive(Default)]
struct Live {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// fib(n) with a task per call, each spawning its two halves and joining
/// them, counting live tasks in `live`.
fn fork_join_fib(n: u64, live: Arc<Live>) -> fibra::JoinHandle<u64> {
    let now = live.now.fetch_add(1, Ordering::SeqCst) + 1;
    live.most.fetch_max(now, Ordering::SeqCst);
    fibra::spawn(async move {
        let r = if n < 2 {
            n
        } else {
            let a = fork_join_fib(n - 1, live.clone());
            let b = fork_join_fib(n - 2, live.clone());
            a.await.unwrap() + b.await.unwrap()
        };
        live.now.fetch_sub(1, Ordering::SeqCst);
        r
    })
}

#[test]
fn a_fork_join_tree_runs_depth_first_with_few_tasks_alive() {
    // fib(20) spawns 21,891 tasks, 6,765 of them on its widest level: in
    // FIFO order most of the tree is alive at once. Run newest first
    // (work-first), a worker holds a few tasks per level of the tree.
    for rt in one_thread_runtimes() {
        let live = Arc::new(Live::default());
        let l = live.clone();
        let fib = rt.block_on(async move { fork_join_fib(20, l).await.unwrap() });
        assert_eq!(fib, 6765);
        assert_eq!(live.now.load(Ordering::SeqCst), 0);
        let most = live.most.load(Ordering::SeqCst);
        assert!(most <= 200, "{most} tasks alive at once");
    }
}

#[test]
fn a_ping_pong_pair_does_not_starve_other_tasks() {
    // One worker: a pair hands off forever through the next slot; a third
    // task must still get to run and stop them.
    let rt = Runtime::builder().workers(1).build().unwrap();
    rt.block_on(async {
        let stop = Arc::new(AtomicUsize::new(0));
        let (a_tx, a_rx) = fibra::channel::<u32>();
        let (b_tx, b_rx) = fibra::channel::<u32>();
        let s1 = stop.clone();
        let p1 = fibra::spawn(async move {
            while s1.load(Ordering::Relaxed) == 0 {
                a_tx.send(1).await.unwrap();
                b_rx.recv().await.unwrap();
            }
            drop(a_tx);
        });
        let p2 = fibra::spawn(async move {
            while let Ok(v) = a_rx.recv().await {
                if b_tx.send(v).await.is_err() {
                    break;
                }
            }
        });
        let s3 = stop.clone();
        let third = fibra::spawn(async move { s3.store(1, Ordering::Relaxed) });
        third.await.unwrap();
        p1.await.unwrap();
        p2.await.unwrap();
    });
}

#[test]
fn the_main_future_can_talk_to_an_os_thread() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let (tx, rx) = fibra::channel::<u64>();
    let t = std::thread::spawn(move || {
        for i in 0..1000 {
            tx.send_blocking(i).unwrap();
        }
    });
    let sum = rt.block_on(async move {
        let mut s = 0;
        while let Ok(v) = rx.recv().await {
            s += v;
        }
        s
    });
    t.join().unwrap();
    assert_eq!(sum, 999 * 500);
}

#[test]
fn a_task_whose_ops_are_always_ready_cannot_starve_its_worker() {
    // One worker; the main task performs always-ready ops in a loop until
    // another task runs. Without the cooperative budget it would never yield.
    let rt = Runtime::builder().workers(1).build().unwrap();
    rt.block_on(async {
        let other = OtherTask::spawn();
        let mut spins = 0u64;
        while !other.has_run(&mut spins) {
            fibra::always(()).await;
        }
    });
}

#[test]
fn a_task_whose_mailbox_is_never_empty_cannot_starve_its_worker() {
    // The same with a plain `Mailbox::recv` (not an op) that always finds a
    // message: it takes the budget like a perform.
    let rt = Runtime::builder().workers(1).build().unwrap();
    rt.block_on(async {
        let other = OtherTask::spawn();
        let (me, mut mb) = fibra::mailbox::<u64>();
        me.send(0).unwrap();
        let mut spins = 0u64;
        while !other.has_run(&mut spins) {
            let n = mb.recv().await.unwrap();
            me.send(n + 1).unwrap();
        }
    });
}

/// A producer that never blocks (an unbounded channel) is made to yield by
/// the budget over and over. Those yields keep it on its worker: on the
/// stealable queue the idle worker would take it, and every message would
/// cross cores (asymmetric-buffered on 2 workers was 3.4x slower than on
/// one). Its turns after the first few must stay on one thread, even with
/// a ticking timer task that keeps waking the other worker (which then
/// looks for work to steal).
#[test]
fn budget_yields_keep_a_producer_on_its_worker() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let threads = rt.block_on(async {
        let done = Arc::new(AtomicUsize::new(0));
        let ticking = done.clone();
        let ticker = fibra::spawn(async move {
            while ticking.load(Ordering::SeqCst) == 0 {
                fibra::time::sleep(std::time::Duration::from_micros(100)).await;
            }
        });
        let (tx, rx) = fibra::unbounded::<u64>();
        let consumer = fibra::spawn(async move {
            let mut sum = 0;
            while let Ok(v) = rx.recv().await {
                sum += v;
            }
            sum
        });
        let producer = fibra::spawn(async move {
            let mut threads = Vec::new();
            for i in 0..1_000_000u64 {
                tx.send(i).await.unwrap();
                if i % 1000 == 0 {
                    threads.push(std::thread::current().id());
                }
            }
            threads
        });
        let threads = producer.await.unwrap();
        assert_eq!(consumer.await.unwrap(), 999_999 * 1_000_000 / 2);
        done.store(1, Ordering::SeqCst);
        ticker.await.unwrap();
        threads
    });
    // A worker whose thread the OS preempts for a tick looks stuck, and an
    // idle worker may then rescue its tasks (docs/runtime.md); a producer
    // rescued away from its consumer then finds the channel's lock held by
    // the consumer's worker and gathers back to it (rt/gather.rs): on a
    // loaded machine (CI runs tests in parallel) each preemption can cost
    // two moves: beside two busy loops on this 2-core machine, 12 to 18
    // moves (0 to 13 with gathering switched off). Budget yields on the
    // stealable queue moved it back and forth hundreds of times.
    let settled = &threads[10..];
    let moves = settled.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(
        moves <= 50,
        "the producer moved between workers {moves} times in {} samples",
        settled.len()
    );
}

/// A task woken just before a current-thread runtime is dropped sits in the
/// worker's deque; the deque outlived the worker through the runtime's
/// stealer, and the task held the runtime: a cycle that leaked it. The
/// AddressSanitizer run in CI (LeakSanitizer) fails on that leak.
#[test]
fn a_task_woken_just_before_the_runtime_drops_is_freed_with_it() {
    for rt in [
        fibra::Runtime::builder().current_thread().build().unwrap(),
        fibra::Runtime::builder().workers(2).build().unwrap(),
    ] {
        let (tx, rx) = fibra::bounded::<u32>(1);
        let h = rt.spawn(async move { rx.recv().await });
        rt.block_on(async move {
            fibra::yield_now().await; // the receiver blocks
            tx.send(1).await.unwrap(); // wakes it; we return before it runs
        });
        drop(rt);
        drop(h);
    }
}

/// A task has one output: joining its handle again after a `join_op` took
/// it panics with a message (it used to wait forever).
#[test]
fn joining_a_handle_after_join_op_took_the_output_panics() {
    use fibra::Op;
    let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    for again_with_op in [false, true] {
        let err = rt
            .block_on(async move {
                let h = fibra::spawn(async { 5 });
                assert_eq!(h.join_op().await.unwrap(), 5);
                fibra::spawn(async move {
                    if again_with_op {
                        let _ = h.join_op().wrap(|r| r.ok()).await;
                    } else {
                        let _ = h.await;
                    }
                })
                .await
            })
            .unwrap_err();
        // `JoinError`'s message carries the panic's.
        let msg = err.to_string();
        assert!(msg.contains("join a task once"), "{msg}");
    }
}

/// Aborts the process with a message if not disarmed within 60 s: a lost
/// wake fails the test instead of hanging it.
struct Deadline(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>);

impl Deadline {
    fn new(what: String) -> Self {
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if done_rx.recv_timeout(Duration::from_secs(60)).is_err() {
                eprintln!("{what}");
                std::process::abort();
            }
        });
        Self(done_tx, watchdog)
    }

    fn disarm(self) {
        self.0.send(()).unwrap();
        self.1.join().unwrap();
    }
}

/// An echo task: sends back what it receives until its input closes.
async fn echo(rx: fibra::Receiver<u64>, tx: fibra::Sender<u64>) {
    while let Ok(v) = rx.recv().await {
        if tx.send(v).await.is_err() {
            return;
        }
    }
}

/// A task that went idle on a worker is retained there, still `RUNNING`
/// (rt/retained.rs), so a wake from another thread only marks it. The
/// worker must queue it soon even if it never runs out of work: here a task
/// that yields in a loop keeps it busy, and the echo must come back within a
/// few of that task's turns (the waker's hint), not after the 128 turns a
/// retained task may otherwise wait, nor when the worker goes idle.
///
/// One worker only (the multi-thread loop with one worker, and the
/// current-thread flavour): with two, the idle worker may steal the busy
/// task, and the echo's worker then sleeps until the wake-up reaches it, an
/// OS wake-up that the busy task's turns on the other core measure (about
/// 50 turns in a fifth of the runs), not the retention this test is about.
#[test]
fn a_task_woken_from_another_thread_runs_while_its_worker_stays_busy() {
    const GIVE_UP: u64 = 1_000_000;
    const PROMPT: u64 = 16;
    let one_worker = flavours()
        .into_iter()
        .filter(|(name, _)| *name != "multi-thread");
    for (name, rt) in one_worker {
        let (in_tx, in_rx) = fibra::channel::<u64>();
        let (out_tx, out_rx) = fibra::channel::<u64>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let sent = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sender = {
            let (in_tx, sent) = (in_tx.clone(), sent.clone());
            std::thread::spawn(move || {
                go_rx.recv().unwrap();
                in_tx.send_blocking(42).unwrap();
                sent.store(true, Ordering::SeqCst);
            })
        };
        let turns_at_reply = rt.block_on(async move {
            let e = fibra::spawn(echo(in_rx, out_tx));
            // A few round trips: the echo is registered and, once blocked
            // again, retained by its worker.
            for i in 0..5 {
                in_tx.send(i).await.unwrap();
                assert_eq!(out_rx.recv().await, Ok(i));
            }
            let turns = Arc::new(AtomicUsize::new(0));
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let busy = {
                let (turns, stop) = (turns.clone(), stop.clone());
                fibra::spawn(async move {
                    // Within one poll: the other thread's send commits to the
                    // blocked echo and wakes it.
                    go_tx.send(()).unwrap();
                    while !sent.load(Ordering::SeqCst) {
                        std::hint::spin_loop();
                    }
                    while !stop.load(Ordering::SeqCst)
                        && (turns.load(Ordering::SeqCst) as u64) < GIVE_UP
                    {
                        turns.fetch_add(1, Ordering::SeqCst);
                        fibra::yield_now().await;
                    }
                })
            };
            assert_eq!(out_rx.recv().await, Ok(42));
            let at_reply = turns.load(Ordering::SeqCst) as u64;
            stop.store(true, Ordering::SeqCst);
            busy.await.unwrap();
            drop(in_tx);
            e.await.unwrap();
            at_reply
        });
        sender.join().unwrap();
        assert!(
            turns_at_reply < PROMPT,
            "{name}: the echo came back after {turns_at_reply} turns of the busy task"
        );
    }
}

/// A current-thread `block_on` that returns while tasks sit retained hands
/// them back idle: a wake from another thread between two `block_on`s
/// reaches them, and the next `block_on` runs them.
#[test]
fn tasks_idle_at_the_end_of_a_block_on_are_woken_before_the_next() {
    // A task left retained would never run again: fail, don't hang.
    let deadline = Deadline::new("a task idle at the end of a block_on never ran again".into());
    let rt = Runtime::builder().current_thread().build().unwrap();
    let (in_tx, in_rx) = fibra::channel::<u64>();
    let (out_tx, out_rx) = fibra::channel::<u64>();
    let e = rt.spawn(echo(in_rx, out_tx));
    let (tx, rx) = (in_tx.clone(), out_rx.clone());
    rt.block_on(async move {
        for i in 0..5 {
            tx.send(i).await.unwrap();
            assert_eq!(rx.recv().await, Ok(i));
        }
    });
    // The echo is blocked in its receive: this send commits to it from an
    // OS thread while no `block_on` runs.
    let t = {
        let in_tx = in_tx.clone();
        std::thread::spawn(move || in_tx.send_blocking(7))
    };
    t.join().unwrap().unwrap();
    assert_eq!(rt.block_on(async move { out_rx.recv().await }), Ok(7));
    drop(in_tx);
    rt.block_on(e).unwrap();
    deadline.disarm();
}

/// Tasks that blocked again after several turns (so their runs donated
/// their references, and their workers retained them for a while) are
/// dropped exactly once at shutdown, and their handles resolve.
#[test]
fn shutdown_drops_retained_tasks_exactly_once() {
    for (name, rt) in flavours() {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = fibra::channel::<u64>();
        let (ack_tx, ack_rx) = fibra::channel::<u64>();
        let mut handles = Vec::new();
        for _ in 0..200 {
            let guard = CountDrop(drops.clone());
            let (rx, ack_tx) = (rx.clone(), ack_tx.clone());
            handles.push(rt.spawn(async move {
                let _g = guard;
                while let Ok(v) = rx.recv().await {
                    ack_tx.send(v).await.unwrap();
                }
            }));
        }
        // Every task takes a few values (so it has blocked, been woken and
        // blocked again); then they all wait in `recv`.
        let feed = tx.clone();
        rt.block_on(async move {
            for i in 0..1000 {
                feed.send(i).await.unwrap();
                ack_rx.recv().await.unwrap();
            }
        });
        drops_every_task_once_at_shutdown(name, rt, &drops, handles);
        drop(tx);
    }
}

/// Ping-pong between tasks and OS threads on every flavour: each wake of a
/// task crosses threads, while its worker may still retain it. Every
/// message comes back, in order; a lost wake fails the deadline.
#[test]
fn ping_pong_with_os_threads_loses_no_message() {
    const ROUNDS: u64 = 5_000;
    for (name, rt) in flavours() {
        let deadline = Deadline::new(format!(
            "{name}: ping-pong with OS threads hung (a lost wake)"
        ));
        let mut threads = Vec::new();
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let (in_tx, in_rx) = fibra::channel::<u64>();
            let (out_tx, out_rx) = fibra::channel::<u64>();
            tasks.push(rt.spawn(echo(in_rx, out_tx)));
            threads.push(std::thread::spawn(move || {
                for i in 0..ROUNDS {
                    in_tx.send_blocking(i).unwrap();
                    assert_eq!(out_rx.recv_blocking(), Ok(i));
                }
            }));
        }
        // A current-thread runtime runs its tasks only inside `block_on`.
        rt.block_on(async move {
            for t in tasks {
                t.await.unwrap();
            }
        });
        for t in threads {
            t.join().unwrap();
        }
        deadline.disarm();
    }
}
