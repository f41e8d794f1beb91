//! Running a future to completion on the current OS thread, by parking it.
//!
//! # Invariants
//!
//! * `ThreadWaker::state` is `EMPTY`, `NOTIFIED` or `PARKED`. A wake
//!   stores `NOTIFIED` (a Release swap) and unparks the thread only if the
//!   swap took `PARKED` away: a thread still polling or spinning is not
//!   unparked at all. Only the blocked thread moves the state out of
//!   `NOTIFIED` (an Acquire swap to `EMPTY`, before it polls again) or into
//!   `PARKED` (a compare-exchange from `EMPTY`), so a wake between a poll
//!   returning `Pending` and the thread parking is never lost: either the
//!   compare-exchange fails on `NOTIFIED` and the thread polls again, or it
//!   succeeds and the wake that follows sees `PARKED` and unparks.
//! * An unpark that comes after the thread already left its park (it saw
//!   `NOTIFIED` on a spurious return) leaves the thread's park token set: a
//!   later park returns early, finds the state still `PARKED`, and parks
//!   again.

#[cfg(not(loom))]
use crate::loom::thread;
use crate::loom::{AtomicUsize, Ordering};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

struct ThreadWaker {
    #[cfg(not(loom))]
    thread: thread::Thread,
    /// Under loom, a notification object of this perform's own, so a late
    /// wake (see `park`) can only ever release this `block_on`.
    #[cfg(loom)]
    notify: loom::sync::Notify,
    /// `EMPTY`, `NOTIFIED` or `PARKED`: see the module's invariants.
    state: AtomicUsize,
}

/// No wake pending; the thread is not parked.
const EMPTY: usize = 0;
/// A wake came since the thread last looked.
const NOTIFIED: usize = 1;
/// The thread is parked (or about to): a wake must unpark it.
const PARKED: usize = 2;

impl Wake for ThreadWaker {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &StdArc<Self>) {
        // Release: what the waker did before (the commit) is visible to
        // the thread's Acquire swap that consumes `NOTIFIED`. Seeing
        // `PARKED` needs no ordering: the unpark has its own.
        if self.state.swap(NOTIFIED, Ordering::Release) == PARKED {
            #[cfg(not(loom))]
            self.thread.unpark();
            #[cfg(loom)]
            self.notify.notify();
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    /// One waker per thread, reused by every blocking perform on it.
    static PARKER: StdArc<ThreadWaker> = StdArc::new(ThreadWaker {
        thread: thread::current(),
        state: AtomicUsize::new(EMPTY),
    });
}

crate::loom::thread_local! {
    /// Set on threads that run fibra's async tasks, where parking would
    /// stall every task of the worker.
    static FORBIDDEN: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// Marks the current thread as one that must never block in
/// [`block_on`]/[`Op::perform`](crate::Op::perform); `why` is the message.
pub(crate) fn forbid_blocking(why: Option<&'static str>) {
    FORBIDDEN.with(|f| f.set(why));
}

/// Panics with the thread's message if blocking is forbidden here.
pub(crate) fn check_blocking_allowed() {
    if let Some(why) = FORBIDDEN.with(std::cell::Cell::get) {
        panic!("{why}");
    }
}

/// Parks the thread until woken (possibly spuriously).
///
/// Under loom the thread waits on the waker's own `Notify` instead of
/// `thread::park`: a wake can arrive after the perform it was for already
/// completed (the remote stores `SYNCED`, then wakes), and loom would let
/// such a late `unpark` release the thread from whatever it blocks on next (a
/// lock, a join), which real threads never do.
fn park(parker: &ThreadWaker) {
    #[cfg(loom)]
    parker.notify.wait();
    #[cfg(not(loom))]
    {
        let _ = parker;
        thread::park();
    }
}

/// Consumes a pending wake, if there is one.
fn take_wake(state: &AtomicUsize) -> bool {
    // Relaxed peek; only this thread moves the state out of `NOTIFIED`, so
    // the swap that follows a peek of `NOTIFIED` takes it. Acquire pairs
    // with the Release half of the swap in `wake_by_ref`.
    state.load(Ordering::Relaxed) == NOTIFIED && state.swap(EMPTY, Ordering::Acquire) == NOTIFIED
}

/// Spins (then yields) briefly waiting for a wake; returns whether one
/// came (and consumes it).
fn spin_for_wake(state: &AtomicUsize) -> bool {
    #[cfg(loom)]
    {
        let _ = state;
        false
    }
    #[cfg(not(loom))]
    {
        let mut step = 0;
        while step < 10 {
            if take_wake(state) {
                return true;
            }
            crate::loom::spin_wait(&mut step);
        }
        false
    }
}

/// Parks until a wake comes, and consumes it.
fn park_for_wake(parker: &ThreadWaker) {
    // Relaxed both ways: success publishes nothing (a wake that then sees
    // `PARKED` only unparks), and on failure the state is `NOTIFIED`
    // (only a wake moves it away from `EMPTY`), which `take_wake` consumes
    // with Acquire.
    if parker
        .state
        .compare_exchange(EMPTY, PARKED, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        let taken = take_wake(&parker.state);
        debug_assert!(taken, "a wake that is not there");
        return;
    }
    loop {
        park(parker);
        // A spurious return (or a stale unpark token) finds `PARKED` still.
        if take_wake(&parker.state) {
            return;
        }
    }
}

/// Runs `f`, which parks the thread, so that it stalls no other
/// executor's tasks: inside a tokio runtime (feature `tokio`) through
/// `tokio::task::block_in_place`, which on a multi-thread runtime's worker
/// hands the worker's other tasks to another thread first, and on a
/// current-thread runtime's thread refuses (tokio panics, reporting its own
/// message, and we panic with ours) instead of deadlocking it.
/// Elsewhere (a plain thread, a blocking-pool thread) it just runs `f`.
#[inline]
fn outside_executors(f: impl FnOnce()) {
    #[cfg(all(feature = "tokio", not(loom)))]
    if tokio::runtime::Handle::try_current().is_ok() {
        let mut f = Some(f);
        let run = std::panic::AssertUnwindSafe(|| {
            tokio::task::block_in_place(|| f.take().expect("run once")());
        });
        if let Err(panic) = std::panic::catch_unwind(run) {
            if f.is_some() {
                // tokio refused before running `f`: a current-thread
                // runtime's thread.
                panic!(
                    "fibra: a blocking call (`.perform()`, `*_blocking`, `fibra::block_on`) on \
                     the thread of a tokio current-thread runtime would stall every task on \
                     it; use `.await` instead (or move the blocking work to \
                     `tokio::task::spawn_blocking`)"
                );
            }
            std::panic::resume_unwind(panic);
        }
        return;
    }
    f()
}

/// Runs `future` to completion on the current thread, parking it while the
/// future waits. This is how [`Op::perform`](crate::Op::perform) works; use
/// it to run any future from synchronous code.
///
/// # Panics
///
/// Panics if called on a thread that runs fibra's async tasks (a runtime
/// worker): use `.await` there. Other executors cannot be seen without
/// depending on them: with the feature `tokio`, on a tokio multi-thread
/// worker the wait goes through `tokio::task::block_in_place` (so the
/// worker's other tasks move on), and on a tokio current-thread runtime's
/// thread it panics rather than stall every task there.
///
/// # Examples
///
/// ```
/// let (tx, rx) = fibra::channel::<i32>();
/// let t = std::thread::spawn(move || fibra::block_on(tx.send(7)));
/// assert_eq!(fibra::block_on(rx.recv()), Ok(7));
/// t.join().unwrap().unwrap();
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    check_blocking_allowed();
    #[cfg(not(loom))]
    let parker = PARKER.with(StdArc::clone);
    #[cfg(loom)]
    let parker = StdArc::new(ThreadWaker {
        notify: loom::sync::Notify::new(),
        state: AtomicUsize::new(EMPTY),
    });
    let waker = Waker::from(parker.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        // A partner running on another core often answers sooner than a
        // park/unpark pair would take: spin briefly first.
        if !spin_for_wake(&parker.state) {
            outside_executors(|| park_for_wake(&parker));
        }
    }
}
