//! Parasites (`spawn_eager`): the inline first poll, suspension, panics,
//! aborts, inflation and its penalty, use outside the runtime, and
//! conservation under stress (every output delivered once, every future
//! dropped once).

mod common;

use common::{DropCount, Rng, test_seed, with_watchdog};
use fibra::{JoinError, Op, Runtime};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Poll, Waker};
use std::time::Duration;

fn ct() -> Runtime {
    Runtime::builder().current_thread().build().unwrap()
}

fn mt2() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

/// A body that does not wait runs to its end inside `spawn_eager`, on the
/// caller's thread, before the call returns.
#[test]
fn a_body_that_does_not_wait_finishes_before_spawn_eager_returns() {
    ct().block_on(async {
        let me = std::thread::current().id();
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let h = fibra::spawn_eager(async move {
            r.store(true, Ordering::SeqCst);
            std::thread::current().id()
        });
        assert!(ran.load(Ordering::SeqCst), "the body ran inline");
        assert!(h.is_finished());
        assert_eq!(h.await.unwrap(), me);
    });
}

/// A body that waits in its first poll becomes an ordinary task: woken by
/// a partner, it finishes and its handle delivers the output.
#[test]
fn a_body_that_waits_becomes_a_task_and_is_joined_like_one() {
    for rt in [ct(), mt2()] {
        rt.block_on(async {
            let (tx, rx) = fibra::channel::<u64>();
            let h = fibra::spawn_eager(async move { rx.recv().await.unwrap() * 2 });
            assert!(!h.is_finished());
            tx.send(21).await.unwrap();
            assert_eq!(h.await.unwrap(), 42);
        });
    }
}

/// `join_op` works on a parasite that finished inline as on a task: in a
/// choice, once.
#[test]
fn join_op_of_a_parasite_that_finished_inline_commits_in_a_choice() {
    ct().block_on(async {
        let (_tx, rx) = fibra::channel::<u32>();
        let h = fibra::spawn_eager(async { 7u32 });
        let got = fibra::choose((
            h.join_op().wrap(|r| r.unwrap()),
            rx.recv_op().wrap(|r| r.unwrap()),
        ))
        .await;
        assert_eq!(got, 7);
    });
}

/// The handle of a parasite that finished inline holds its output: a word
/// of output makes a two-word handle, and the output drops exactly once,
/// whether the handle is dropped unjoined, awaited, or joined by a
/// `join_op`.
#[test]
fn a_ready_handle_is_two_words_and_drops_its_output_once() {
    assert_eq!(
        std::mem::size_of::<fibra::JoinHandle<u64>>(),
        2 * std::mem::size_of::<usize>()
    );
    assert_eq!(
        std::mem::size_of::<fibra::JoinHandle<()>>(),
        std::mem::size_of::<usize>()
    );
    ct().block_on(async {
        let drops = Arc::new(AtomicUsize::new(0));
        let new = || {
            let d = drops.clone();
            fibra::spawn_eager(async move { DropCount::new(1, &d) })
        };
        // Dropped unjoined.
        let h = new();
        assert!(h.is_finished());
        assert_eq!(format!("{h:?}"), "JoinHandle { finished: true }");
        drop(h);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        // Awaited: the output drops with its owner, the handle drops none.
        let out = new().await.unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(out);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        // Joined by a `join_op`, then dropped.
        let h = new();
        let out = h.join_op().await.unwrap();
        drop(h);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        drop(out);
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        // A `join_op` ready at once in a `select!` with `else`.
        let h = new();
        let out = fibra::select! {
            r = h.join_op() => r.unwrap(),
            else => panic!("a ready handle's join is ready at once"),
        };
        drop(out);
        drop(h);
        assert_eq!(drops.load(Ordering::SeqCst), 4);
    });
}

/// A ready handle's output goes to one join: awaiting it after a
/// `join_op` took it panics (in the joining task), as for a task's.
#[test]
fn awaiting_a_ready_handle_after_its_join_op_panics() {
    ct().block_on(async {
        let joiner = fibra::spawn(async {
            let h = fibra::spawn_eager(async { 5u64 });
            assert_eq!(h.join_op().await.unwrap(), 5);
            h.await
        });
        let err = joiner.await.unwrap_err();
        assert!(err.is_panic());
        assert!(
            err.to_string()
                .contains("after a `join_op` took the output")
        );
    });
}

/// Two threads racing `join_op`s of one shared ready handle: exactly one
/// takes the output, the other finds nothing ready.
#[test]
fn join_ops_racing_on_one_ready_handle_take_the_output_once() {
    let rt = mt2();
    for round in 0..200u64 {
        // Made on a worker (its inline poll finishes there), then shared:
        // the handle is the output, not a task.
        let h = rt.block_on(async move { Arc::new(fibra::spawn_eager(async move { round })) });
        assert!(h.is_finished());
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let (h, barrier) = (h.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    fibra::block_on(async {
                        fibra::select! {
                            r = h.join_op() => Some(r.unwrap()),
                            else => None,
                        }
                    })
                })
            })
            .collect();
        let got: Vec<Option<u64>> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(
            got.iter().flatten().collect::<Vec<_>>(),
            [&round],
            "{got:?}"
        );
    }
}

/// A panic in the inline poll lands in the handle; the spawner goes on.
#[test]
fn a_panic_in_the_inline_poll_lands_in_the_handle() {
    ct().block_on(async {
        let h = fibra::spawn_eager(async {
            panic!("inline boom");
        });
        let err: JoinError = h.await.unwrap_err();
        assert!(err.is_panic());
        assert_eq!(err.to_string(), "task panicked: inline boom");
    });
}

/// A panic after the parasite suspended lands in the handle too.
#[test]
fn a_panic_after_suspending_lands_in_the_handle() {
    mt2().block_on(async {
        let (tx, rx) = fibra::channel::<()>();
        let h = fibra::spawn_eager(async move {
            rx.recv().await.unwrap();
            panic!("later boom");
        });
        tx.send(()).await.unwrap();
        assert!(h.await.unwrap_err().is_panic());
    });
}

/// Aborting a suspended parasite cancels it and drops its future once;
/// aborting one that finished inline changes nothing.
#[test]
fn abort_cancels_a_suspended_parasite_and_not_a_finished_one() {
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    ct().block_on(async move {
        let (_tx, rx) = fibra::channel::<()>();
        let guard = DropCount::new(1, &d);
        let h = fibra::spawn_eager(async move {
            let _guard = guard;
            rx.recv().await
        });
        h.abort();
        assert!(h.await.unwrap_err().is_cancelled());
        assert_eq!(d.load(Ordering::SeqCst), 1);

        let done = fibra::spawn_eager(async { 3 });
        done.abort();
        assert_eq!(done.await.unwrap(), 3);
    });
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

/// A parasite whose inline poll kept a clone of its waker and then finished
/// (the clone outlives the poll, here dropped on another thread later): its
/// task outlives the spawn as an ordinary finished one.
#[test]
fn a_waker_clone_that_outlives_the_inline_poll_keeps_the_task_alive() {
    let kept: Arc<std::sync::Mutex<Option<Waker>>> = Arc::default();
    let k = kept.clone();
    let v = ct().block_on(async move {
        let h = fibra::spawn_eager(std::future::poll_fn(move |cx| {
            *k.lock().unwrap() = Some(cx.waker().clone());
            Poll::Ready(5)
        }));
        assert!(h.is_finished());
        h.await.unwrap()
    });
    assert_eq!(v, 5);
    let w = kept.lock().unwrap().take().unwrap();
    std::thread::spawn(move || {
        w.wake_by_ref();
        drop(w);
    })
    .join()
    .unwrap();
}

/// Every level of a recursion of parasites runs inline (fib as a tree of
/// parasites).
#[test]
fn nested_parasites_compute_a_recursion() {
    fn fib(n: u64) -> fibra::JoinHandle<u64> {
        fibra::spawn_eager(async move {
            if n < 2 {
                return n;
            }
            let a = fib(n - 1);
            let b = fib(n - 2);
            a.await.unwrap() + b.await.unwrap()
        })
    }
    assert_eq!(ct().block_on(async { fib(15).await.unwrap() }), 610);
    assert_eq!(mt2().block_on(async { fib(15).await.unwrap() }), 610);
}

/// Outside a runtime, `fibra::spawn_eager` refuses with a clear message.
#[test]
fn spawn_eager_outside_a_runtime_says_what_to_use() {
    let p = std::panic::catch_unwind(|| drop(fibra::spawn_eager(async {}))).unwrap_err();
    let msg = p.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(msg.contains("Handle::spawn_eager"), "{msg}");
}

/// `Handle::spawn_eager` from an OS thread: the first poll runs on that
/// thread; a body that waits there goes on as a task of the runtime.
#[test]
fn handle_spawn_eager_from_an_os_thread_polls_there_then_runs_on_the_runtime() {
    let rt = mt2();
    let handle = rt.handle();
    let (tx, rx) = fibra::channel::<u32>();
    let (first, h) = std::thread::spawn(move || {
        let me = std::thread::current().id();
        let first = Arc::new(std::sync::Mutex::new(None));
        let f = first.clone();
        let h = handle.spawn_eager(async move {
            *f.lock().unwrap() = Some(std::thread::current().id());
            let v = rx.recv().await.unwrap();
            (v, std::thread::current().id())
        });
        let first = first.lock().unwrap().take();
        assert_eq!(first, Some(me), "the first poll ran on the calling thread");
        (me, h)
    })
    .join()
    .unwrap();
    tx.send_blocking(9).unwrap();
    let (v, later) = fibra::block_on(h).unwrap();
    assert_eq!(v, 9);
    assert_ne!(later, first, "the rest ran on a worker");
}

/// `Handle::spawn_eager` from a tokio task: finishes inline, or goes on as
/// a fibra task; joined from tokio either way.
#[test]
fn handle_spawn_eager_from_a_tokio_task() {
    let rt = mt2();
    let handle = rt.handle();
    common::tokio_ct().block_on(async move {
        let h = handle.spawn_eager(async { 1 });
        assert!(h.is_finished());
        assert_eq!(h.await.unwrap(), 1);
        let (tx, rx) = fibra::channel::<u32>();
        let h = handle.spawn_eager(async move { rx.recv().await.unwrap() });
        tx.send(2).await.unwrap();
        assert_eq!(h.await.unwrap(), 2);
    });
}

/// A parasite that yields inflates, and its worker spawns its next 10
/// `spawn_eager` calls as ordinary tasks (not run inline), then parasites
/// again.
#[test]
fn an_inflated_parasite_makes_the_next_ten_spawn_eager_calls_tasks() {
    ct().block_on(async {
        let long = fibra::spawn_eager(async {
            for _ in 0..3 {
                fibra::yield_now().await;
            }
        });
        let inline: Vec<bool> = (0..11)
            .map(|_| fibra::spawn_eager(async {}).is_finished())
            .collect();
        assert_eq!(inline[..10], [false; 10], "penalty: ordinary tasks");
        assert!(inline[10], "then a parasite again");
        long.await.unwrap();
    });
}

/// With inflation off, a yielding parasite stays one: no penalty.
#[test]
fn without_inflation_a_yielding_parasite_costs_no_penalty() {
    let rt = Runtime::builder()
        .current_thread()
        .parasite_inflation(false)
        .build()
        .unwrap();
    rt.block_on(async {
        let long = fibra::spawn_eager(async {
            for _ in 0..3 {
                fibra::yield_now().await;
            }
        });
        assert!(fibra::spawn_eager(async {}).is_finished());
        long.await.unwrap();
    });
}

/// An inflated parasite is stealable: long yielding loops spawned as
/// parasites by one task (more than a worker keeps before it offers work
/// to an idle one) end up running on both workers.
#[test]
fn inflated_parasites_spread_to_an_idle_worker() {
    let rt = mt2();
    let threads = rt.block_on(async {
        let hs: Vec<_> = (0..32)
            .map(|_| {
                fibra::spawn_eager(async {
                    let mut seen = std::collections::HashSet::new();
                    let start = std::time::Instant::now();
                    // Compute in slices of ~0.5 ms, yielding between them,
                    // for up to 200 ms.
                    while start.elapsed() < Duration::from_millis(200) {
                        let t = std::time::Instant::now();
                        while t.elapsed() < Duration::from_micros(500) {
                            std::hint::spin_loop();
                        }
                        seen.insert(std::thread::current().id());
                        fibra::yield_now().await;
                    }
                    seen
                })
            })
            .collect();
        let mut all = std::collections::HashSet::new();
        for h in hs {
            all.extend(h.await.unwrap());
        }
        all
    });
    assert_eq!(threads.len(), 2, "both workers ran inflated parasites");
}

/// Runtime drop with suspended parasites: each is cancelled once, its
/// future dropped once.
#[test]
fn shutdown_cancels_suspended_parasites_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = mt2();
    let (tx, rx) = fibra::channel::<()>();
    let d = drops.clone();
    let handles = rt.block_on(async move {
        (0..20)
            .map(|i| {
                let rx = rx.clone();
                let guard = DropCount::new(i, &d);
                fibra::spawn_eager(async move {
                    let _guard = guard;
                    rx.recv().await
                })
            })
            .collect::<Vec<_>>()
    });
    drop(rt);
    for h in handles {
        assert!(fibra::block_on(h).unwrap_err().is_cancelled());
    }
    assert_eq!(drops.load(Ordering::SeqCst), 20);
    drop(tx);
}

/// `Handle::spawn_eager` from other threads racing the runtime's drop:
/// every future is dropped exactly once, and every handle resolves.
#[test]
fn handle_spawn_eager_racing_the_runtime_drop_drops_each_future_once() {
    for round in 0..20 {
        let drops = Arc::new(AtomicUsize::new(0));
        let rt = mt2();
        let handle = rt.handle();
        let (tx, rx) = fibra::channel::<()>();
        let spawners: Vec<_> = (0..2)
            .map(|t| {
                let handle = handle.clone();
                let rx = rx.clone();
                let d = drops.clone();
                std::thread::spawn(move || {
                    (0..50)
                        .map(|i| {
                            let rx = rx.clone();
                            let guard = DropCount::new(t * 100 + i, &d);
                            handle.spawn_eager(async move {
                                let _guard = guard;
                                if i % 2 == 0 {
                                    let _ = rx.recv().await;
                                }
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        if round % 2 == 0 {
            std::thread::yield_now();
        }
        drop(rt);
        for s in spawners {
            for h in s.join().unwrap() {
                let _ = fibra::block_on(h);
            }
        }
        drop(handle);
        assert_eq!(drops.load(Ordering::SeqCst), 100, "round {round}");
        drop(tx);
    }
}

/// Conservation: parasites and tasks mixed, nested, with random bodies
/// (finish at once, yield, wait on a channel, panic): every output is
/// delivered once, every future dropped once.
#[test]
fn mixed_parasites_and_tasks_deliver_every_output_once() {
    let seed = test_seed("mixed_parasites_and_tasks_deliver_every_output_once");
    with_watchdog(
        "parasites mixed",
        seed,
        Duration::from_secs(60),
        move || {
            let n = common::scaled(4000) as u64;
            let drops = Arc::new(AtomicUsize::new(0));
            let d = drops.clone();
            let got = mt2().block_on(async move {
                let mut rng = Rng::new(seed);
                let (tx, rx) = fibra::channel::<u64>();
                let mut handles = Vec::new();
                let mut sends = Vec::new();
                for i in 0..n {
                    let guard = DropCount::new(i, &d);
                    let kind = rng.below(5);
                    let rx = rx.clone();
                    let body = async move {
                        let _guard = guard;
                        match kind {
                            0 => i,
                            1 => {
                                fibra::yield_now().await;
                                i
                            }
                            2 => {
                                let v = rx.recv().await.unwrap();
                                assert_eq!(v, u64::MAX);
                                i
                            }
                            3 => {
                                // A nested parasite.
                                fibra::spawn_eager(async move { i }).await.unwrap()
                            }
                            _ => panic!("body {i} panics"),
                        }
                    };
                    if kind == 2 {
                        sends.push(());
                    }
                    let h = if rng.chance(70) {
                        fibra::spawn_eager(body)
                    } else {
                        fibra::spawn(body)
                    };
                    handles.push((i, kind, h));
                }
                for () in sends {
                    tx.send(u64::MAX).await.unwrap();
                }
                let mut got = Vec::new();
                for (i, kind, h) in handles {
                    match h.await {
                        Ok(v) => got.push(v),
                        Err(e) => {
                            assert!(kind == 4 && e.is_panic(), "body {i}: {e}");
                            got.push(i);
                        }
                    }
                }
                got
            });
            common::assert_exactly_once(got, n);
            assert_eq!(
                drops.load(Ordering::SeqCst),
                n as usize,
                "futures dropped once"
            );
        },
    );
}

// ---- Asynchronous sends -------------------------------------------------

/// An asynchronous send on a rendezvous channel commits with nobody
/// receiving; receivers get one sender's values in the order sent, and the
/// receipts settle as consumed.
#[test]
fn async_sends_commit_at_once_and_arrive_in_order() {
    ct().block_on(async {
        let (tx, rx) = fibra::channel::<u32>();
        let receipts: Vec<_> = (0..100).map(|i| tx.send_async(i)).collect();
        assert!(receipts.iter().all(|r| !r.is_settled()));
        for i in 0..100 {
            assert_eq!(rx.recv().await, Ok(i));
        }
        for r in receipts {
            assert_eq!(r.await, Ok(()));
        }
    });
}

/// Async sends, sync sends and receivers waiting already, mixed: FIFO per
/// sender, whichever kind of send it made.
#[test]
fn async_and_sync_sends_of_one_sender_keep_their_order() {
    mt2().block_on(async {
        let (tx, rx) = fibra::channel::<u32>();
        let producer = fibra::spawn(async move {
            for i in 0..2000 {
                if i % 3 == 0 {
                    tx.send(i).await.unwrap();
                } else {
                    drop(tx.send_async(i));
                }
            }
        });
        for i in 0..2000 {
            assert_eq!(rx.recv().await, Ok(i));
        }
        producer.await.unwrap();
    });
}

/// Values still in flight when the last receiver goes come back through
/// their receipts; later async sends settle as returned at once.
#[test]
fn async_sends_in_flight_come_back_when_the_receivers_go() {
    ct().block_on(async {
        let (tx, rx) = fibra::channel::<String>();
        let mut first = tx.send_async("a".to_string());
        let second = tx.send_async("b".to_string());
        assert!(
            first.consumed_op().try_perform().is_err(),
            "not consumed yet"
        );
        drop(rx);
        assert_eq!(first.await.unwrap_err().into_inner(), "a");
        assert_eq!(second.await.unwrap_err().into_inner(), "b");
        let late = tx.send_async("c".to_string());
        assert!(late.is_settled());
        assert_eq!(late.await.unwrap_err().into_inner(), "c");
    });
}

/// The senders go, the values they sent asynchronously stay: receivers
/// take them, then see the channel closed.
#[test]
fn async_sends_outlive_their_sender() {
    let (tx, rx) = fibra::channel::<u32>();
    drop(tx.send_async(1));
    drop(tx.send_async(2));
    drop(tx);
    assert!(!rx.is_disconnected());
    assert_eq!(rx.recv_blocking(), Ok(1));
    assert_eq!(rx.recv_blocking(), Ok(2));
    assert!(rx.recv_blocking().is_err());
}

/// A bounded channel with room takes the value at once (settled); once
/// full, the value waits beyond capacity and is consumed when a receiver
/// makes room.
#[test]
fn async_sends_on_a_bounded_channel() {
    let (tx, rx) = fibra::bounded::<u32>(1);
    let a = tx.send_async(1);
    assert!(a.is_settled());
    let b = tx.send_async(2);
    assert!(!b.is_settled());
    assert_eq!(rx.try_recv(), Ok(1));
    assert!(b.is_settled(), "moved into the buffer");
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(fibra::block_on(b), Ok(()));
}

/// An asynchronous send made while a sender is blocked waits behind it
/// (FIFO across kinds of send), and its receipt settles once taken.
#[test]
fn an_async_send_waits_behind_a_blocked_sender() {
    ct().block_on(async {
        let (tx, rx) = fibra::channel::<u32>();
        let tx2 = tx.clone();
        let blocked = fibra::spawn(async move { tx2.send(1).await });
        fibra::yield_now().await; // `blocked` runs and waits in the queue
        let receipt = tx.send_async(2);
        assert!(!receipt.is_settled());
        assert_eq!(rx.recv().await, Ok(1));
        assert_eq!(rx.recv().await, Ok(2));
        assert_eq!(receipt.await, Ok(()));
        assert_eq!(blocked.await.unwrap(), Ok(()));
    });
}

/// A value whose receipt was dropped drops when the receiving side goes
/// (not later, with the channel); one whose receipt is kept comes back
/// through it, and drops with the receipt if nobody takes it.
#[test]
fn a_dropped_receipts_value_drops_when_the_receivers_go() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = fibra::bounded::<DropCount>(1);
    drop(tx.send_async(DropCount::new(0, &drops))); // into the buffer
    drop(tx.send_async(DropCount::new(1, &drops))); // waits
    let kept = tx.send_async(DropCount::new(2, &drops)); // waits
    let forgotten_late = tx.send_async(DropCount::new(3, &drops)); // waits
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(rx);
    // The buffered value and the one whose receipt went, at the close.
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    drop(forgotten_late); // given back, dropped with its receipt
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    let back = fibra::block_on(kept).unwrap_err().into_inner();
    assert_eq!(back.value, 2);
    drop(back);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
    drop(tx);
}

/// `len` counts buffered values, not asynchronous sends waiting for room;
/// a value that moves within capacity settles its receipt.
#[test]
fn len_counts_no_async_send_waiting_for_room() {
    let (tx, rx) = fibra::bounded::<u32>(2);
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    let a = tx.send_async(3);
    let b = tx.send_async(4);
    assert_eq!((tx.len(), rx.len()), (2, 2));
    assert!(!a.is_settled() && !b.is_settled());
    assert_eq!(rx.try_recv(), Ok(1));
    assert!(a.is_settled() && !b.is_settled());
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Ok(3));
    assert_eq!(rx.len(), 1);
    assert_eq!(fibra::block_on(b), Ok(()));
    assert_eq!(rx.try_recv(), Ok(4));
    assert_eq!(fibra::block_on(a), Ok(()));
}

/// A receive dropped after a value was committed to it gives the value
/// back to the front of the channel (a rescue): receipts of values queued
/// around it still tell the truth, and a returned value is the receipt's
/// own.
#[test]
fn receipts_stay_true_around_a_rescued_value() {
    let mut cx = std::task::Context::from_waker(Waker::noop());
    let (tx, rx) = fibra::channel::<u32>();
    // A value queued and taken; then a rescue takes the index before the
    // channel's front, which was that value's.
    let a = tx.send_async(1);
    assert_eq!(rx.try_recv(), Ok(1));
    {
        let mut recv = Box::pin(rx.recv());
        assert!(recv.as_mut().poll(&mut cx).is_pending());
        tx.try_send(2).unwrap(); // into the waiting receive
    } // dropped after the commit: 2 goes back to the front
    assert!(a.is_settled(), "consumed before the rescue");
    assert_eq!(fibra::block_on(a), Ok(()));
    // Queued behind the rescued value: waits until taken.
    let b = tx.send_async(3);
    assert!(!b.is_settled());
    assert_eq!(rx.try_recv(), Ok(2));
    assert!(!b.is_settled());
    let c = tx.send_async(4);
    drop(rx);
    assert_eq!(fibra::block_on(b).unwrap_err().into_inner(), 3);
    assert_eq!(fibra::block_on(c).unwrap_err().into_inner(), 4);
}

/// Once the receivers went, nothing waits in the channel: `len` is 0 and
/// the value comes back through its receipt.
#[test]
fn len_is_zero_once_the_receivers_went_with_values_waiting() {
    let (tx, rx) = fibra::channel::<u32>();
    let r = tx.send_async(1);
    assert_eq!(tx.len(), 0);
    drop(rx);
    assert_eq!(tx.len(), 0);
    assert!(tx.is_empty());
    assert_eq!(fibra::block_on(r).unwrap_err().into_inner(), 1);
}

/// A rescue puts a value back beyond capacity; an asynchronous send after
/// it waits (as a blocking send would) until it is within capacity, and
/// comes back if the receivers go first.
#[test]
fn an_async_send_after_a_rescue_waits_for_room() {
    let mut cx = std::task::Context::from_waker(Waker::noop());
    let (tx, rx) = fibra::bounded::<u32>(1);
    {
        let mut recv = Box::pin(rx.recv());
        assert!(recv.as_mut().poll(&mut cx).is_pending());
        tx.try_send(1).unwrap(); // into the waiting receive
    } // rescued: 1 is buffered again
    assert!(tx.try_send(9).is_err(), "full");
    let b = tx.send_async(2);
    assert!(!b.is_settled(), "beyond capacity: not consumed");
    assert_eq!(rx.len(), 1);
    let c = tx.send_async(3);
    assert_eq!(rx.try_recv(), Ok(1));
    assert!(b.is_settled(), "within capacity now");
    assert!(!c.is_settled());
    drop(rx);
    assert_eq!(fibra::block_on(b), Ok(()));
    assert_eq!(fibra::block_on(c).unwrap_err().into_inner(), 3);
}

/// A receipt's waker whose drop drops another receipt of the same channel
/// (so takes the channel's lock): replaced, removed or woken, it is never
/// dropped under that lock (this would deadlock).
#[test]
fn a_receipts_waker_may_drop_another_receipt_of_the_channel() {
    struct Holds {
        _receipt: std::sync::Mutex<fibra::AsyncSend<u32>>,
    }
    impl std::task::Wake for Holds {
        fn wake(self: Arc<Self>) {}
    }
    /// A waker that owns `receipt`, so its last drop drops that receipt.
    fn owning(receipt: fibra::AsyncSend<u32>) -> Waker {
        Waker::from(Arc::new(Holds {
            _receipt: std::sync::Mutex::new(receipt),
        }))
    }
    fn poll_with(r: &mut fibra::AsyncSend<u32>, w: &Waker) -> bool {
        Pin::new(r)
            .poll(&mut std::task::Context::from_waker(w))
            .is_pending()
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (tx, rx) = fibra::channel::<u32>();
        let mut r1 = tx.send_async(1);
        // Replaced: the first waker is the last owner of `r2`.
        let w = owning(tx.send_async(2));
        assert!(poll_with(&mut r1, &w));
        drop(w);
        assert!(poll_with(&mut r1, Waker::noop()));
        // Removed when the receipt drops, and woken by a pop: the same.
        let mut r3 = tx.send_async(3);
        let w = owning(tx.send_async(4));
        assert!(poll_with(&mut r3, &w));
        drop(w);
        assert_eq!(rx.try_recv(), Ok(1));
        drop(r1);
        assert_eq!(rx.try_recv(), Ok(2)); // its receipt went, not the value
        assert_eq!(rx.try_recv(), Ok(3));
        assert_eq!(fibra::block_on(r3), Ok(()));
        assert_eq!(rx.try_recv(), Ok(4));
        assert!(rx.try_recv().is_err());
        done_tx.send(()).unwrap();
    });
    done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a waker dropped under the channel's lock deadlocked");
}

/// Many receipts awaited at once, each in its own task, while a consumer
/// drains slowly: every one settles as consumed.
#[test]
fn many_receipts_awaited_at_once_all_settle() {
    mt2().block_on(async {
        let (tx, rx) = fibra::channel::<u32>();
        let waiting: Vec<_> = (0..64)
            .map(|i| {
                let receipt = tx.send_async(i);
                fibra::spawn(receipt)
            })
            .collect();
        for i in 0..64 {
            if i % 8 == 0 {
                fibra::time::sleep(Duration::from_millis(1)).await;
            }
            assert_eq!(rx.recv().await, Ok(i));
        }
        for w in waiting {
            assert_eq!(w.await.unwrap(), Ok(()));
        }
    });
}

/// The op form: in a choice that another branch wins, nothing is sent;
/// when it wins, the value is sent and the receipt comes out.
#[test]
fn send_async_op_sends_only_when_chosen() {
    let (tx, rx) = fibra::channel::<u32>();
    let lost =
        fibra::choose_biased((fibra::always(0u32), tx.send_async_op(1).wrap(|_| 1))).perform();
    assert_eq!(lost, 0);
    assert_eq!(rx.try_recv(), Err(fibra::TryRecvError::Empty));
    let receipt = fibra::choose((fibra::never(), tx.send_async_op(2))).perform();
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(fibra::block_on(receipt), Ok(()));
}

/// A receipt's `consumed_op` waits in a choice and commits when a receiver
/// takes the value (another task); dropped while waiting, it leaves the
/// receipt usable.
#[test]
fn consumed_op_commits_when_a_receiver_takes_the_value() {
    mt2().block_on(async {
        let (tx, rx) = fibra::channel::<u32>();
        let (stop_tx, stop_rx) = fibra::channel::<()>();
        let mut receipt = tx.send_async(5);
        let consumer = fibra::spawn(async move {
            stop_rx.recv().await.unwrap();
            rx.recv().await
        });
        // Not consumed yet: a ready branch wins, and the op is withdrawn.
        let r = fibra::choose((
            receipt.consumed_op().wrap(|_| "consumed"),
            fibra::always("other"),
        ))
        .await;
        assert_eq!(r, "other");
        stop_tx.send(()).await.unwrap();
        assert_eq!(receipt.consumed_op().await, Ok(()));
        assert_eq!(consumer.await.unwrap(), Ok(5));
    });
}

/// Conservation: async senders (receipts kept or dropped at random),
/// receivers cancelled at random (some after a sender committed to them),
/// and the receiving side closed part-way: every value is received once,
/// comes back through its receipt once, or (buffered at the close, which
/// drops what a channel buffers) is dropped once.
#[test]
fn async_sends_with_cancelled_receivers_and_close_lose_nothing() {
    use common::{Ledger, Msg, allow_all_drops};
    let seed = test_seed("async_sends_with_cancelled_receivers_and_close_lose_nothing");
    with_watchdog("async sends", seed, Duration::from_secs(60), move || {
        let rounds = common::scaled(20);
        for round in 0..rounds {
            let seed = seed.wrapping_add(round as u64);
            let senders = 3u32;
            let per = 200u32;
            let ledger = Ledger::new((senders * per) as usize);
            let l = ledger.clone();
            mt2().block_on(async move {
                let mut rng = Rng::new(seed);
                let cap = [0, 0, 1, 4][rng.below(4)];
                let (tx, rx) = fibra::bounded::<Msg>(cap);
                let close_after = rng.below((senders * per) as usize);
                let mut sending = Vec::new();
                for s in 0..senders {
                    let tx = tx.clone();
                    let l = l.clone();
                    let keep = rng.chance(50);
                    sending.push(fibra::spawn(async move {
                        let mut receipts = Vec::new();
                        for i in 0..per {
                            let r = tx.send_async(Msg::new(s * per + i, &l));
                            if keep {
                                receipts.push(r);
                            } else {
                                // Dropped: a value that already came back
                                // drops with it (the sender gave up on it);
                                // one returned later drops at the close.
                                allow_all_drops(|| drop(r));
                            }
                            if i % 16 == 0 {
                                fibra::yield_now().await;
                            }
                        }
                        // What came back is accounted here.
                        for r in receipts {
                            if let Err(e) = r.await {
                                e.into_inner().returned();
                            }
                        }
                    }));
                }
                drop(tx);
                let receivers: Vec<_> = (0..2)
                    .map(|k| {
                        let rx = rx.clone();
                        let mut rng = Rng::new(seed ^ (k + 1));
                        fibra::spawn(async move {
                            let mut got = 0usize;
                            loop {
                                if got >= close_after / 2 {
                                    break;
                                }
                                if rng.chance(20) {
                                    // Cancelled receive: maybe after a
                                    // sender committed to it (the value
                                    // goes back to the channel).
                                    let t = Duration::from_micros(rng.below(50) as u64);
                                    match fibra::time::timeout(rx.recv_op(), t).await {
                                        Ok(Ok(m)) => {
                                            m.received();
                                            got += 1;
                                        }
                                        Ok(Err(_)) => break,
                                        Err(_) => {}
                                    }
                                    continue;
                                }
                                match rx.recv().await {
                                    Ok(m) => {
                                        m.received();
                                        got += 1;
                                    }
                                    Err(_) => break,
                                }
                            }
                            allow_all_drops(|| drop(rx));
                        })
                    })
                    .collect();
                for r in receivers {
                    r.await.unwrap();
                }
                // The last receiver: what the channel buffers drops here,
                // and what waits in its send queue comes back.
                allow_all_drops(|| drop(rx));
                for s in sending {
                    s.await.unwrap();
                }
            });
            allow_all_drops(|| drop(ledger.clone()));
            ledger
                .verify(0..senders * per)
                .unwrap_or_else(|e| panic!("round {round} (seed {seed}): {e}"));
        }
    });
}

// ---- choose_all as an op ------------------------------------------------

/// `choose_all` composes: built by a guard at perform time, mapped by a
/// wrap, awaited directly.
#[test]
fn choose_all_composes_with_guard_and_wrap() {
    mt2().block_on(async {
        let (tx, rx) = fibra::bounded::<u32>(4);
        let producer = fibra::spawn(async move {
            for i in 1..=4 {
                tx.send(i).await.unwrap();
            }
        });
        let built = Arc::new(AtomicUsize::new(0));
        let b = built.clone();
        let rx = &rx;
        let sum = fibra::guard(move || {
            b.fetch_add(1, Ordering::SeqCst);
            fibra::choose_all((0..4).map(|_| rx.recv_op()))
                .wrap(|got| got.into_iter().map(Result::unwrap).sum::<u32>())
        })
        .await;
        assert_eq!(sum, 10);
        assert_eq!(built.load(Ordering::SeqCst), 1);
        producer.await.unwrap();
    });
}

/// The parts wait concurrently: values arrive in the reverse order of the
/// parts, and each lands in its own part's place.
#[test]
fn choose_all_parts_wait_concurrently() {
    mt2().block_on(async {
        let chans: Vec<_> = (0..8).map(|_| fibra::channel::<usize>()).collect();
        let txs: Vec<_> = chans.iter().map(|(tx, _)| tx.clone()).collect();
        let producer = fibra::spawn(async move {
            for (i, tx) in txs.iter().enumerate().rev() {
                tx.send(i).await.unwrap();
            }
        });
        let got = fibra::choose_all(chans.iter().map(|(_, rx)| rx.recv_op())).await;
        let got: Vec<usize> = got.into_iter().map(Result::unwrap).collect();
        assert_eq!(got, (0..8).collect::<Vec<_>>());
        producer.await.unwrap();
    });
}

/// A `choose_all` that loses a choice to a timeout: parts that received
/// give their values back to their channels; a part that joined leaves
/// the output with its handle; waiting parts take nothing later.
#[test]
fn a_choose_all_that_loses_gives_back_what_its_parts_took() {
    ct().block_on(async {
        let (tx_a, rx_a) = fibra::bounded::<u32>(1);
        let (tx_b, rx_b) = fibra::bounded::<u32>(1);
        tx_a.send(1).await.unwrap();
        let h = fibra::spawn_eager(async { 7u32 });
        let r = fibra::choose((
            fibra::choose_all([
                rx_a.recv_op().wrap(|r| r.unwrap()).boxed(),
                h.join_op().wrap(|r| r.unwrap()).boxed(),
                rx_b.recv_op().wrap(|r| r.unwrap()).boxed(),
            ])
            .wrap(Some),
            fibra::time::after(Duration::from_millis(5)).wrap(|_| None),
        ))
        .await;
        assert_eq!(r, None);
        assert_eq!(rx_a.try_recv(), Ok(1), "the received value came back");
        assert_eq!(h.await.unwrap(), 7, "the join's output stayed");
        tx_b.send(2).await.unwrap();
        assert_eq!(rx_b.try_recv(), Ok(2), "the waiting part took nothing");
    });
}

/// Conservation under cancellation: consumers run `choose_all`s over
/// random channels, each racing a random timeout; producers send a known
/// set. Every value is received exactly once (by a `choose_all` that
/// completed, or by the final drain), none lost or duplicated.
#[test]
fn choose_all_racing_timeouts_loses_no_value() {
    let seed = test_seed("choose_all_racing_timeouts_loses_no_value");
    with_watchdog("choose_all", seed, Duration::from_secs(60), move || {
        let n = common::scaled(3000) as u64;
        let got = mt2().block_on(async move {
            let chans: Arc<Vec<_>> = Arc::new((0..4).map(|_| fibra::bounded::<u64>(2)).collect());
            let producers: Vec<_> = (0..4)
                .map(|p| {
                    let chans = chans.clone();
                    fibra::spawn(async move {
                        for v in (p..n).step_by(4) {
                            chans[(v as usize / 4) % 4].0.send(v).await.unwrap();
                        }
                    })
                })
                .collect();
            let done = Arc::new(AtomicBool::new(false));
            let consumers: Vec<_> = (0..3)
                .map(|c| {
                    let chans = chans.clone();
                    let done = done.clone();
                    fibra::spawn(async move {
                        let mut rng = Rng::new(seed ^ (c + 7));
                        let mut got = Vec::new();
                        while !done.load(Ordering::SeqCst) {
                            let k = 1 + rng.below(3);
                            let parts = (0..k)
                                .map(|_| chans[rng.below(4)].1.recv_op())
                                .collect::<Vec<_>>();
                            let t = Duration::from_micros(rng.below(300) as u64);
                            if let Ok(vs) = fibra::time::timeout(fibra::choose_all(parts), t).await
                            {
                                got.extend(vs.into_iter().map(Result::unwrap));
                            }
                        }
                        got
                    })
                })
                .collect();
            for p in producers {
                p.await.unwrap();
            }
            done.store(true, Ordering::SeqCst);
            let mut got = Vec::new();
            for c in consumers {
                got.extend(c.await.unwrap());
            }
            for (_, rx) in chans.iter() {
                while let Ok(v) = rx.try_recv() {
                    got.push(v);
                }
            }
            got
        });
        common::assert_exactly_once(got, n);
    });
}
