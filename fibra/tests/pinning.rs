//! A task's future is dropped where it was pinned, however the task ends:
//! completion, a panicking poll, an abort, runtime shutdown. fibra's ops
//! rely on it: a partner that commits to a parked receive writes the value
//! into the receive's slot inside the task, so a future moved before its
//! drop would lose (or tear) values and corrupt the heap.

use fibra::Runtime;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

/// Records its address at every poll and at its drop.
struct Pinned {
    seen: Arc<Mutex<Vec<usize>>>,
    /// Polls before it finishes (`None`: never), and whether it then panics.
    finish_after: Option<u32>,
    panic: bool,
    polls: u32,
    _pin: PhantomPinned,
}

impl Pinned {
    fn new(seen: &Arc<Mutex<Vec<usize>>>, finish_after: Option<u32>, panic: bool) -> Self {
        Self {
            seen: seen.clone(),
            finish_after,
            panic,
            polls: 0,
            _pin: PhantomPinned,
        }
    }
}

impl Future for Pinned {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: nothing is moved out; only counters change.
        let this = unsafe { self.get_unchecked_mut() };
        let at = std::ptr::from_ref(this).addr();
        this.seen.lock().unwrap().push(at);
        this.polls += 1;
        match this.finish_after {
            Some(n) if this.polls > n => {
                assert!(!this.panic, "a poll that panics on purpose");
                Poll::Ready(())
            }
            Some(_) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let at = std::ptr::from_ref(self).addr();
        self.seen.lock().unwrap().push(at);
    }
}

fn flavours() -> Vec<(&'static str, Runtime)> {
    vec![
        (
            "multi-thread",
            Runtime::builder().workers(2).build().unwrap(),
        ),
        (
            "current-thread",
            Runtime::builder().current_thread().build().unwrap(),
        ),
    ]
}

/// Lets a never-finishing `Pinned` be polled (and park) first.
fn wait_until_polled(rt: &Runtime, seen: &Arc<Mutex<Vec<usize>>>) {
    let polled = seen.clone();
    rt.block_on(async move {
        while polled.lock().unwrap().is_empty() {
            fibra::yield_now().await;
        }
    });
}

/// Every address recorded (polls, then the drop) is the same one.
fn assert_one_address(what: &str, seen: &Mutex<Vec<usize>>) {
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "{what}: polled and dropped: {seen:?}");
    assert!(
        seen.iter().all(|&a| a == seen[0]),
        "{what}: the future moved between its polls and its drop: {seen:x?}"
    );
}

#[test]
fn a_completed_task_drops_its_future_in_place() {
    for (name, rt) in flavours() {
        let seen = Arc::default();
        let h = rt.spawn(Pinned::new(&seen, Some(3), false));
        rt.block_on(h).unwrap();
        assert_one_address(name, &seen);
    }
}

#[test]
fn a_task_whose_poll_panics_drops_its_future_in_place() {
    for (name, rt) in flavours() {
        let seen = Arc::default();
        let h = rt.spawn(Pinned::new(&seen, Some(2), true));
        assert!(rt.block_on(h).unwrap_err().is_panic(), "{name}");
        assert_one_address(name, &seen);
    }
}

#[test]
fn an_aborted_task_drops_its_future_in_place() {
    for (name, rt) in flavours() {
        let seen = Arc::default();
        let h = rt.spawn(Pinned::new(&seen, None, false));
        wait_until_polled(&rt, &seen);
        h.abort();
        assert!(rt.block_on(h).unwrap_err().is_cancelled(), "{name}");
        assert_one_address(name, &seen);
    }
}

#[test]
fn shutdown_drops_pending_futures_in_place() {
    for (name, rt) in flavours() {
        let seen = Arc::default();
        let h = rt.spawn(Pinned::new(&seen, None, false));
        wait_until_polled(&rt, &seen);
        drop(rt);
        assert!(fibra::block_on(h).unwrap_err().is_cancelled(), "{name}");
        assert_one_address(name, &seen);
    }
}

/// The user-visible consequence: an OS thread commits sends into receives
/// parked in tasks that are aborted at random moments. Every value that
/// `try_send` acknowledged is received, or still in the channel: none
/// vanishes with an aborted task's moved future.
#[test]
fn values_committed_into_aborted_receives_are_not_lost() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let (tx, rx) = fibra::channel::<u64>();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut sent = Vec::new();
            let mut next = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if tx.try_send(next).is_ok() {
                    sent.push(next);
                    next += 1;
                }
            }
            sent
        })
    };
    let mut received = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_millis(1500);
    let mut spin = 0u64;
    let mut round = 0u64;
    while std::time::Instant::now() < deadline {
        let rx = rx.clone();
        let h = rt.spawn(async move { rx.recv().await.ok() });
        round += 1;
        if round % 8 != 0 {
            // Spin 0-50 µs, then abort: sometimes before the task parks,
            // sometimes while a send commits into it, sometimes after.
            spin = (spin * 7 + 13) % 50;
            let until = std::time::Instant::now() + Duration::from_micros(spin);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
            h.abort();
        }
        // One receive in eight is not aborted: it takes a value (the sender
        // keeps trying until after the last round), so values go through
        // however slow the build.
        if let Ok(Some(v)) = fibra::block_on(h) {
            received.push(v);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = sender.join().unwrap();
    while let Ok(v) = rx.try_recv() {
        received.push(v);
    }
    received.sort_unstable();
    assert!(!sent.is_empty(), "the sender got no value through");
    assert_eq!(
        received, sent,
        "every acknowledged value is received exactly once"
    );
}

#[test]
fn an_actors_body_is_dropped_in_place_however_it_ends() {
    for (name, rt) in flavours() {
        // Returns, then panics.
        for panic in [false, true] {
            let seen = Arc::default();
            let body_seen = Arc::clone(&seen);
            let addr = rt
                .handle()
                .spawn_actor(move |_: fibra::Mailbox<()>| Pinned::new(&body_seen, Some(2), panic));
            let exit = rt.block_on(async move { addr.exited().await });
            let what = format!("{name}: {exit:?}");
            assert_eq!(matches!(exit, fibra::Exit::Panicked(_)), panic, "{what}");
            assert_one_address(&what, &seen);
        }
        // Dropped at shutdown.
        let seen = Arc::default();
        let body_seen = Arc::clone(&seen);
        let addr = rt
            .handle()
            .spawn_actor(move |_: fibra::Mailbox<()>| Pinned::new(&body_seen, None, false));
        wait_until_polled(&rt, &seen);
        drop(rt);
        assert_eq!(addr.try_exited(), Some(fibra::Exit::Cancelled), "{name}");
        assert_one_address(name, &seen);
    }
}
