//! Waking wakers that fibra did not make, on threads whose work must go
//! on whatever a waker does.
//!
//! A `Waker` is another executor's code (tokio's, a user's): its `wake`
//! may panic. On fibra's own threads — the timer thread, a worker finishing
//! a task, the blocking pool, the shutdown drain — such a panic must not
//! unwind through fibra: it would kill the timer thread (every later
//! sleep in the process would hang), a worker, or the drain. These helpers
//! contain it: the panic hook has already reported it, the payload is
//! dropped, and the other wakers are still woken. (A waker woken inside a
//! task's poll, by an op that commits, is called by that task's code: its
//! panic is the task's, caught as the task's `JoinError`.)

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Waker;

/// Wakes `waker`, containing a panic from it.
pub(crate) fn wake(waker: Waker) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| waker.wake())) {
        discard(payload);
    }
}

/// Wakes every waker, containing a panic from any of them.
pub(crate) fn wake_all(wakers: impl IntoIterator<Item = Waker>) {
    wakers.into_iter().for_each(wake);
}

/// Runs `f` (a drop of user data, say), containing a panic from it.
pub(crate) fn contain(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        discard(payload);
    }
}

/// Drops a panic payload; one whose own drop panics is leaked instead.
fn discard(payload: Box<dyn std::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}
