//! loom models of the runtime's lock-free parts: a task's state word and the
//! idle workers' sleep/wake protocol (see `chan/loom_models.rs` to run).

use super::idle::Idle;
use super::inbox::Inbox;
use super::park::Parker;
use super::retained::WokenHint;
use super::task::{AfterPoll, FutureCell, TaskState};
use super::task_alloc::{FreeBlock, RemoteFree, next_of};
use crate::loom::model;
use crate::loom::{Arc, AtomicBool, AtomicUsize, Ordering, thread};
use std::future::Future;

#[test]
fn loom_wake_during_poll_is_never_lost_nor_doubled() {
    // A runner polls the task (it returns Pending) while another thread
    // wakes it. Exactly one party queues it again: the waker if the poll was
    // over, the runner if it was not.
    model(|| {
        let st = Arc::new(TaskState::new());
        let queued = Arc::new(AtomicUsize::new(0));
        assert_eq!(st.start_run(), Some(false));
        let (s2, q2) = (st.clone(), queued.clone());
        let waker = thread::spawn(move || {
            if s2.notify() {
                q2.fetch_add(1, Ordering::SeqCst);
            }
        });
        if st.end_run_pending() == AfterPoll::Requeue {
            queued.fetch_add(1, Ordering::SeqCst);
        }
        waker.join().unwrap();
        assert_eq!(queued.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn loom_wake_racing_the_start_of_a_run_is_not_lost() {
    // The task is queued (its queue entry owns RUNNING) by an earlier wake. A waker sets the
    // condition the task waits for, then wakes it, while a runner takes the
    // task off the queue and polls (reads the condition). Either the poll
    // sees the condition, or the task is queued again.
    model(|| {
        let st = Arc::new(TaskState::new());
        let ready = Arc::new(AtomicBool::new(false));
        let (s2, r2) = (st.clone(), ready.clone());
        let waker = thread::spawn(move || {
            r2.store(true, Ordering::Release);
            s2.notify()
        });
        assert_eq!(st.start_run(), Some(false));
        let saw = ready.load(Ordering::Acquire);
        let requeue = st.end_run_pending() == AfterPoll::Requeue;
        let queued_by_waker = waker.join().unwrap();
        assert!(saw || requeue || queued_by_waker, "wake-up lost");
    });
}

#[test]
fn loom_abort_during_poll_requeues_once() {
    model(|| {
        let st = Arc::new(TaskState::new());
        let queued = Arc::new(AtomicUsize::new(0));
        assert_eq!(st.start_run(), Some(false));
        let (s2, q2) = (st.clone(), queued.clone());
        let aborter = thread::spawn(move || {
            s2.set_abort();
            if s2.notify() {
                q2.fetch_add(1, Ordering::SeqCst);
            }
        });
        if st.end_run_pending() == AfterPoll::Requeue {
            queued.fetch_add(1, Ordering::SeqCst);
        }
        aborter.join().unwrap();
        assert_eq!(queued.load(Ordering::SeqCst), 1);
        assert_eq!(st.start_run(), Some(true), "the next run sees the abort");
    });
}

#[test]
fn loom_a_retained_task_woken_elsewhere_is_released_once_and_promptly() {
    // The worker's poll of the task ended idle and it retains the task
    // (retained.rs): `RUNNING` kept, no RMW. A wake on another thread marks
    // it (`NOTIFIED`) and raises the worker's hint. Between two turns the
    // worker takes the hint down and releases what was marked; whatever is
    // left it releases later (the slot's turn). Exactly one party queues
    // the task, and a worker that saw the hint sees the mark, so the task
    // goes back at that turn, not 128 turns later. (Fails with a Relaxed
    // `raise` or `take_down`.)
    model(|| {
        let st = Arc::new(TaskState::new());
        let hint = Arc::new(WokenHint::default());
        let queued = Arc::new(AtomicUsize::new(0));
        assert_eq!(st.start_run(), Some(false));
        assert!(st.is_quiet(), "retained");
        let (s2, h2, q2) = (st.clone(), hint.clone(), queued.clone());
        let waker = thread::spawn(move || {
            if s2.notify() {
                q2.fetch_add(1, Ordering::SeqCst);
            } else {
                h2.raise(WokenHint::OUTSIDE);
            }
        });
        let mut retained = true;
        if hint.take_down() != 0 {
            assert!(st.is_marked(), "the hint came without its mark");
            assert_eq!(st.end_run_pending(), AfterPoll::Requeue);
            queued.fetch_add(1, Ordering::SeqCst);
            retained = false;
        }
        if retained && st.end_run_pending() == AfterPoll::Requeue {
            queued.fetch_add(1, Ordering::SeqCst);
        }
        waker.join().unwrap();
        assert_eq!(queued.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn loom_two_wakes_from_elsewhere_are_both_seen_through_one_hint() {
    // Two retained tasks, each woken by its own thread, which raises the
    // worker's hint. The worker takes the hint down once and releases what
    // it finds marked. Whatever it did not release must still be signalled:
    // once both wakers are done, a task left retained and marked means the
    // hint is up again. (Fails if `raise` is a plain store: the worker's
    // Acquire then synchronises with the second waker only.)
    model(|| {
        let t1 = Arc::new(TaskState::new());
        let t2 = Arc::new(TaskState::new());
        let hint = Arc::new(WokenHint::default());
        assert_eq!(t1.start_run(), Some(false));
        assert_eq!(t2.start_run(), Some(false));
        let wakers: Vec<_> = [t1.clone(), t2.clone()]
            .into_iter()
            .map(|t| {
                let hint = hint.clone();
                thread::spawn(move || {
                    assert!(!t.notify(), "retained: RUNNING");
                    hint.raise(WokenHint::OUTSIDE);
                })
            })
            .collect();
        let mut released = [false, false];
        if hint.take_down() != 0 {
            for (i, t) in [&t1, &t2].into_iter().enumerate() {
                if t.is_marked() {
                    assert_eq!(t.end_run_pending(), AfterPoll::Requeue);
                    released[i] = true;
                }
            }
        }
        for w in wakers {
            w.join().unwrap();
        }
        let left_marked = [&t1, &t2]
            .into_iter()
            .zip(released)
            .any(|(t, r)| !r && t.is_marked());
        if left_marked {
            assert!(hint.take_down() != 0, "a marked task left without a hint");
        }
    });
}

#[test]
fn loom_wakes_after_completion_do_nothing() {
    model(|| {
        let st = Arc::new(TaskState::new());
        assert_eq!(st.start_run(), Some(false));
        let s2 = st.clone();
        let waker = thread::spawn(move || s2.notify());
        st.complete();
        let queued_by_waker = waker.join().unwrap();
        // The runner holds RUNNING until COMPLETE: a racing wake never
        // queues the task.
        assert!(!queued_by_waker);
        assert!(!st.notify());
    });
}

#[test]
fn loom_idle_worker_never_sleeps_through_new_work() {
    // A worker found nothing and goes to sleep while a pusher publishes work
    // and looks for a sleeper to wake. Either the worker's final look sees
    // the work, or the pusher wakes it: it never sleeps forever (loom would
    // report the deadlock).
    model(|| {
        let idle = Arc::new(Idle::new(2));
        let parker = Arc::new(Parker::default());
        let work = Arc::new(AtomicBool::new(false));
        let (i2, p2, w2) = (idle.clone(), parker.clone(), work.clone());
        let pusher = thread::spawn(move || {
            w2.store(true, Ordering::SeqCst);
            if let Some(index) = i2.worker_to_wake() {
                assert_eq!(index, 0);
                p2.unpark();
            }
        });
        idle.register_sleeper(0, false);
        if work.load(Ordering::SeqCst) && idle.unregister_sleeper(0) {
            // Saw the work in the final look.
        } else {
            parker.park(None);
            assert!(work.load(Ordering::SeqCst));
        }
        pusher.join().unwrap();
    });
}

/// A block for the remote-free model: memory a `FreeBlock` is written
/// into by `push` (first, so a block pointer is a `FreeBlock` pointer),
/// and the freed task's last contents.
#[repr(C)]
struct Block {
    link: std::mem::MaybeUninit<FreeBlock>,
    payload: crate::loom::UnsafeCell<usize>,
}

/// A block pointer that may cross to a model thread.
#[derive(Clone, Copy)]
struct Sent(*mut FreeBlock);
// SAFETY: the block's ownership moves with it (the model's protocol).
unsafe impl Send for Sent {}

fn payload<'a>(b: *mut FreeBlock) -> &'a crate::loom::UnsafeCell<usize> {
    // SAFETY: every block of the model is a live `Block` until freed at the
    // end; `link` is at offset 0.
    unsafe { &(*b.cast::<Block>()).payload }
}

/// Takes the owner's view of a taken list: each block's index and
/// contents, read at once (a data race if its push did not happen before
/// the take).
fn drain(mut b: *mut FreeBlock, blocks: &[Sent], got: &mut Vec<(usize, usize)>) {
    while !b.is_null() {
        // SAFETY: taken from the stack: ours.
        let next = unsafe { next_of(b) };
        let index = blocks
            .iter()
            .position(|s| s.0 == b)
            .expect("a block that was never pushed");
        // SAFETY: ours now (taken).
        got.push((index, payload(b).with(|p| unsafe { *p })));
        b = next;
    }
}

#[test]
fn loom_remote_frees_come_back_to_the_owner_exactly_once() {
    // Two threads free a block each onto a page's remote stack (writing the
    // block's contents first) while the owner takes the stack; whatever the
    // interleaving, the owner gets each block once, and sees its contents
    // (fails as a data race on the contents with a Relaxed push: checked).
    model(|| {
        let remote = Arc::new(RemoteFree::new());
        let blocks: Vec<Sent> = (0..2)
            .map(|_| {
                let b = Box::into_raw(Box::new(Block {
                    link: std::mem::MaybeUninit::uninit(),
                    payload: crate::loom::UnsafeCell::new(0),
                }));
                Sent(b.cast())
            })
            .collect();
        let pushers: Vec<_> = blocks
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let remote = remote.clone();
                thread::spawn(move || {
                    let b = b;
                    // The freeing thread's last write to the block.
                    // SAFETY: the block is this thread's until it pushes it.
                    payload(b.0).with_mut(|p| unsafe { *p = 10 + i });
                    // SAFETY: as above.
                    unsafe { remote.push(b.0) };
                })
            })
            .collect();
        // The owner takes (and reads) blocks while the pushers may still run;
        // it stops when it has them all (a lost block never comes: the
        // model would not end).
        let mut got = Vec::new();
        while got.len() < 2 {
            drain(remote.take_all(), &blocks, &mut got);
            thread::yield_now();
        }
        for p in pushers {
            p.join().unwrap();
        }
        assert!(remote.take_all().is_null(), "a block pushed twice");
        got.sort_unstable();
        assert_eq!(
            got,
            vec![(0, 10), (1, 11)],
            "a block lost, taken twice, or seen stale"
        );
        for b in blocks {
            // SAFETY: allocated above as a `Block`, freed once.
            drop(unsafe { Box::from_raw(b.0.cast::<Block>()) });
        }
    });
}

#[test]
fn loom_abort_racing_a_commit_into_a_parked_receive_loses_nothing() {
    // A task's receive is parked (its record, inside the future, published
    // to the channel) when the task is aborted: the runner drops the future
    // in its cell while a sender on another thread commits into the
    // receive's slot. The value ends up exactly once: handed back to the
    // sender, or given back to the channel by the receive's drop. (A future
    // moved out of its cell before its drop loses it: the sender writes
    // into the old place.)
    model(|| {
        let (tx, rx) = crate::channel::<u32>();
        let _keep_open = tx.clone();
        let sender = thread::spawn(move || match tx.try_send(7) {
            Ok(()) => None,
            Err(crate::TrySendError::Full(v)) => Some(v),
            Err(crate::TrySendError::Disconnected(_)) => unreachable!("receiver alive"),
        });
        let rx2 = rx.clone();
        let cell = FutureCell::new(async move { rx2.recv().await });
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        // SAFETY: this thread is the cell's only user.
        let got = match unsafe { cell.pinned() }.unwrap().poll(&mut cx) {
            std::task::Poll::Ready(v) => Some(v.unwrap()),
            std::task::Poll::Pending => None,
        };
        // The abort: the future is dropped where it was polled.
        // SAFETY: as above.
        assert!(unsafe { cell.drop_future() }.is_ok());
        let returned = sender.join().unwrap();
        let rescued = rx.try_recv().ok();
        let all: Vec<u32> = [got, returned, rescued].into_iter().flatten().collect();
        assert_eq!(all, [7], "value lost or duplicated");
    });
}

#[test]
fn loom_a_frozen_worker_and_its_rescuer_never_touch_its_queue_together() {
    // A worker pushes a task into its private queue inside a section, twice
    // (a wake during a poll), while a rescuer tries to freeze it and take
    // what the queue holds (rescue.rs). loom flags any access to the queue
    // the two make concurrently; every task is taken exactly once. (Fails
    // without the owner's barrier.)
    use super::rescue::Watch;
    use crate::loom::UnsafeCell;
    model(|| {
        struct Private {
            watch: Watch,
            queue: UnsafeCell<Vec<u32>>,
        }
        // SAFETY: `queue` is touched by the owner inside a section or by a
        // rescuer holding the freeze: never both (what the model checks).
        unsafe impl Sync for Private {}
        unsafe impl Send for Private {}
        let p = Arc::new(Private {
            watch: Watch::default(),
            queue: UnsafeCell::new(Vec::new()),
        });
        let p2 = p.clone();
        let rescuer = thread::spawn(move || {
            let mut taken = Vec::new();
            if p2.watch.seq() % 2 == 0 {
                if let Some(_frozen) = p2.watch.try_freeze() {
                    // SAFETY: frozen (see `Private`).
                    p2.queue.with_mut(|q| taken.append(unsafe { &mut *q }));
                }
            }
            taken
        });
        // Two sections inside one poll (the `seq` value comes back), as
        // the wakes a task makes.
        for task in [1, 2] {
            p.watch.enter(0);
            // SAFETY: inside a section (see `Private`).
            p.queue.with_mut(|q| unsafe { (*q).push(task) });
            p.watch.leave(0);
        }
        let mut taken = rescuer.join().unwrap();
        p.watch.enter(0);
        // SAFETY: as above.
        p.queue.with_mut(|q| taken.append(unsafe { &mut *q }));
        p.watch.leave(2);
        taken.sort_unstable();
        assert_eq!(taken, [1, 2], "a task lost or taken twice");
    });
}

#[test]
fn loom_a_parasite_suspending_after_its_inline_poll_races_a_wake_once() {
    // A parasite's inline first poll published its waker and returns
    // `Pending`; a wake from another worker races the end of that poll.
    // Exactly one party queues it: the waker if the poll was over, the
    // spawner (requeue) if not.
    model(|| {
        let st = Arc::new(TaskState::new_parasite());
        let queued = Arc::new(AtomicUsize::new(0));
        let (s2, q2) = (st.clone(), queued.clone());
        let waker = thread::spawn(move || {
            if s2.notify() {
                q2.fetch_add(1, Ordering::SeqCst);
            }
        });
        if st.end_run_pending() == AfterPoll::Requeue {
            queued.fetch_add(1, Ordering::SeqCst);
        }
        waker.join().unwrap();
        assert_eq!(queued.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn loom_a_parasite_finished_inline_is_freed_only_after_its_last_waker() {
    // A parasite's inline poll cloned its waker (a reference more) and
    // handed the clone to another thread, which wakes and drops it, then
    // the poll finished. The spawner frees the task at once, with no
    // atomic, only if it reads the count back at two (the run's and the
    // handle's): then the other thread's use of the task came before (loom
    // checks the cell's accesses); else the task lives on as an ordinary
    // one, and the last reference frees it.
    model(|| {
        let refs = Arc::new(AtomicUsize::new(3));
        let st = Arc::new(TaskState::new_parasite());
        let memory = Arc::new(crate::loom::UnsafeCell::new(0u32));
        let (r2, s2, m2) = (refs.clone(), st.clone(), memory.clone());
        let waker = thread::spawn(move || {
            // The wake reads the task (its state word, its header).
            assert!(!s2.notify(), "the inline poll holds RUNNING");
            m2.with(|p| unsafe { std::ptr::read(p) });
            if r2.fetch_sub(1, Ordering::Release) == 1 {
                crate::loom::fence(Ordering::Acquire);
                m2.with_mut(|p| unsafe { *p = 1 }); // the free
            }
        });
        // The poll ended `Ready`.
        if refs.load(Ordering::Acquire) == 2 {
            // The fast path: ours alone.
            memory.with_mut(|p| unsafe { *p = 1 });
        } else {
            // The handle's reference is dropped later; ours now.
            if refs.fetch_sub(1, Ordering::Release) == 1 {
                crate::loom::fence(Ordering::Acquire);
                memory.with_mut(|p| unsafe { *p = 1 });
            }
            if refs.fetch_sub(1, Ordering::Release) == 1 {
                crate::loom::fence(Ordering::Acquire);
                memory.with_mut(|p| unsafe { *p = 1 });
            }
        }
        waker.join().unwrap();
        assert_eq!(memory.with(|p| unsafe { *p }), 1, "freed once");
    });
}

#[test]
fn loom_inflation_racing_a_wake_loses_neither() {
    // A parasite that woke itself during its poll (a yield) inflates while
    // a wake from another worker marks it: the inflation's RMW and the
    // wake's must both land. The runner holds `RUNNING` throughout (it
    // requeues the task), so the wake never queues it; the next run sees
    // an ordinary task.
    model(|| {
        let st = Arc::new(TaskState::new_parasite());
        let (s2,) = (st.clone(),);
        let waker = thread::spawn(move || s2.notify());
        // The poll's own wake, then its end: woken, so requeued.
        assert!(!st.notify());
        assert_eq!(st.end_run_pending(), AfterPoll::Requeue);
        assert!(st.is_parasite());
        st.inflate();
        let queued_by_waker = waker.join().unwrap();
        assert!(!queued_by_waker, "the runner held RUNNING");
        assert!(!st.is_parasite(), "inflation lost");
        // The requeued run: ordinary from now on.
        assert_eq!(st.start_run(), Some(false));
        assert!(!st.is_parasite());
    });
}

#[test]
fn loom_a_task_handed_to_a_worker_going_to_sleep_is_never_stranded() {
    // Worker 0 hands a task to worker 1 (`inbox.rs`) while worker 1 runs
    // out of work: it registers as a sleeper, looks once more (its inbox
    // included) and parks if it saw nothing. Exactly one of them ends up
    // with the task: worker 1's look, or worker 0 taking it back because
    // worker 1 sleeps. (Fails if the giver looks for the sleeper before its
    // push, or if the final look skips the inbox.)
    model(|| {
        let idle = Arc::new(Idle::new(2));
        let inbox = Arc::new(Inbox::<u32>::default());
        let (i2, b2) = (idle.clone(), inbox.clone());
        let giver = thread::spawn(move || b2.hand_over(7, &i2, 1));
        idle.register_sleeper(1, false);
        let mut taken = 0;
        if !inbox.is_empty_now() && idle.unregister_sleeper(1) {
            inbox.take_all(|t| {
                assert_eq!(t, 7);
                taken += 1;
            });
        }
        let back = giver.join().unwrap();
        assert_eq!(
            taken + usize::from(back.is_some()),
            1,
            "stranded or doubled"
        );
        assert!(inbox.is_empty_now());
    });
}
