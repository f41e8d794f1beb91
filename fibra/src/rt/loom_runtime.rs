//! loom models of the whole runtime: a two-worker `Runtime` whose worker
//! threads, run queues (`queue.rs`), parkers, idle accounting, rescue
//! barriers, task state words and thread-locals are all loom's, so each
//! model explores the interleavings of the real scheduler (see
//! `chan/loom_models.rs` to run).
//!
//! Each model counts what must happen exactly once (a task's future
//! dropped, a message delivered) and ends by checking that the runtime's
//! `Shared` is gone: a task, queue entry or worker that kept it would be a
//! leak (loom also reports a leaked run queue, its `Arc` being loom's).

use super::{Runtime, Shared};
use crate::loom::{Arc, AtomicUsize, Ordering, thread};
use std::future::Future;
use std::pin::Pin;
use std::sync::Weak;
use std::task::{Context, Poll, Waker};

/// Runs `f` under loom with preemption bound 2 (or `LOOM_MAX_PREEMPTIONS`):
/// a whole runtime makes a hundred or so loom operations per model, and
/// each bound more multiplies the interleavings by about twenty (bound 3:
/// minutes per model on a 2-core machine; tokio's runtime models run with
/// bound 2 in CI too).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.check(f);
}

/// A two-worker runtime, and a weak reference to its shared state.
fn runtime() -> (Runtime, Weak<Shared>) {
    with_rescue(false)
}

/// As [`runtime`], with idle workers ticking and rescuing (`rescue.rs`):
/// off in the other models (`Builder::rescue`).
fn with_rescue(on: bool) -> (Runtime, Weak<Shared>) {
    let rt = Runtime::builder().workers(2).rescue(on).build().unwrap();
    let weak = std::sync::Arc::downgrade(&rt.shared);
    (rt, weak)
}

/// Counts its drop: held by a task's future, it drops with the future.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The outcome of a finished task, without blocking.
fn outcome<T>(mut h: crate::JoinHandle<T>) -> Result<T, crate::JoinError> {
    assert!(
        h.is_finished(),
        "a task left unfinished after the runtime's drop"
    );
    match Pin::new(&mut h).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("finished"),
    }
}

#[test]
fn loom_rt_spawn_racing_the_runtimes_drop_runs_or_drops_the_task_once() {
    // A `Handle` spawns from another thread while the runtime drops: the
    // task is run once or cancelled (never both, never neither), its
    // future is dropped exactly once, and nothing keeps the runtime alive.
    model(|| {
        let (rt, weak) = runtime();
        let handle = rt.handle();
        let drops = Arc::new(AtomicUsize::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        let (d2, r2) = (drops.clone(), runs.clone());
        let spawner = thread::spawn(move || {
            let guard = Dropped(d2);
            handle.spawn(async move {
                let _guard = guard;
                r2.fetch_add(1, Ordering::SeqCst);
            })
        });
        drop(rt);
        let h = spawner.join().unwrap();
        let ran = match outcome(h) {
            Ok(()) => true,
            Err(e) => {
                assert!(e.is_cancelled());
                false
            }
        };
        assert_eq!(drops.load(Ordering::SeqCst), 1, "future dropped once");
        assert_eq!(runs.load(Ordering::SeqCst), usize::from(ran));
        assert!(weak.upgrade().is_none(), "the runtime's state leaked");
    });
}

#[test]
fn loom_rt_ping_pong_across_workers_delivers_each_message_once() {
    // A task spawns a partner (on its worker's stealable queue, where the
    // other worker may steal it) and they ping-pong over rendezvous
    // channels: each one's wake of the other may come from the other
    // worker while the sleeper's worker retains it, releases it, searches
    // or parks. Every message arrives once, both tasks finish, and the
    // runtime then shuts down clean.
    model(|| ping_pong(runtime()));
}

#[test]
fn loom_rt_ping_pong_with_rescue_on_delivers_each_message_once() {
    // The same with rescue on: every section of a worker's loop is a pair
    // of fences, idle workers count as ticking, and a worker woken for
    // work wakes a watchdog, which then tries to freeze the other.
    model(|| ping_pong(with_rescue(true)));
}

/// The ping-pong of the two models above, on `rt`.
fn ping_pong((rt, weak): (Runtime, Weak<Shared>)) {
    let sum = rt.block_on(async {
        let (ping_tx, ping_rx) = crate::channel::<u32>();
        let (pong_tx, pong_rx) = crate::channel::<u32>();
        let echo = crate::spawn(async move {
            let v = ping_rx.recv().await.unwrap();
            pong_tx.send(v + 1).await.unwrap();
        });
        ping_tx.send(1).await.unwrap();
        let back = pong_rx.recv().await.unwrap();
        echo.await.unwrap();
        back
    });
    assert_eq!(sum, 2);
    drop(rt);
    assert!(weak.upgrade().is_none(), "the runtime's state leaked");
}

#[test]
fn loom_rt_shutdown_racing_a_wake_drops_the_parked_task_once() {
    // A task waits on a channel; a thread outside the runtime sends to it
    // (committing into its parked receive and waking it, or leaving the
    // value in the buffer) while the runtime drops. The wake may find the
    // task idle, retained, queued or already cancelled: its future is
    // dropped exactly once either way, a value it received is the one
    // sent, and nothing keeps the runtime alive. The channel is buffered
    // so that the sender never blocks: a blocked sender's thread would add
    // its own park and wake to explore (the block_on handshake has models
    // of its own).
    model(|| {
        let (rt, weak) = runtime();
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = crate::bounded::<u32>(1);
        let guard = Dropped(drops.clone());
        let task = rt.spawn(async move {
            let _guard = guard;
            rx.recv().await
        });
        let sender = thread::spawn(move || tx.try_send(7).is_ok());
        drop(rt);
        let sent = sender.join().unwrap();
        match outcome(task) {
            Ok(got) => {
                assert_eq!(got, Ok(7));
                assert!(sent);
            }
            Err(e) => assert!(e.is_cancelled()),
        }
        assert_eq!(drops.load(Ordering::SeqCst), 1, "future dropped once");
        assert!(weak.upgrade().is_none(), "the runtime's state leaked");
    });
}

#[test]
fn loom_rt_parasite_ending_its_inline_poll_races_a_wake_from_another_worker() {
    // A task spawns a sender (onto its stealable queue, where the other
    // worker may steal it and block in its send, or commit), then a
    // parasite whose inline first poll receives: the receive may meet the
    // blocked sender in the inline poll, or the other worker's send may
    // wake the parasite while that poll ends (the inline-poll-to-suspended
    // transition), or after. The value arrives once, the parasite's output
    // is delivered once, its future dropped once.
    model(|| {
        let (rt, weak) = runtime();
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        let got = rt.block_on(async move {
            let (tx, rx) = crate::channel::<u32>();
            let sender = crate::spawn(async move { tx.send(7).await });
            let guard = Dropped(d);
            let h = crate::spawn_eager(async move {
                let _guard = guard;
                rx.recv().await
            });
            let got = h.await.unwrap();
            sender.await.unwrap().unwrap();
            got
        });
        assert_eq!(got, Ok(7));
        assert_eq!(drops.load(Ordering::SeqCst), 1, "future dropped once");
        drop(rt);
        assert!(weak.upgrade().is_none(), "the runtime's state leaked");
    });
}

#[test]
fn loom_rt_handle_spawn_eager_racing_the_runtimes_drop_runs_or_drops_once() {
    // A thread outside the runtime spawns a parasite that waits in its
    // inline poll (so that thread registers and releases it, under the
    // drain lock) while the runtime drops: the parasite is cancelled once,
    // by the drain or by the spawner if the drain was over, its future is
    // dropped once, and nothing keeps the runtime alive.
    model(|| {
        let (rt, weak) = runtime();
        let handle = rt.handle();
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = crate::channel::<u32>();
        let d2 = drops.clone();
        let spawner = thread::spawn(move || {
            let guard = Dropped(d2);
            handle.spawn_eager(async move {
                let _guard = guard;
                rx.recv().await
            })
        });
        drop(rt);
        let h = spawner.join().unwrap();
        assert!(outcome(h).unwrap_err().is_cancelled());
        drop(tx);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "future dropped once");
        assert!(weak.upgrade().is_none(), "the runtime's state leaked");
    });
}
