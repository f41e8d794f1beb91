//! The cooperative budget: a task may start at most `BUDGET` performs per
//! turn on a fibra worker; the next one yields (wakes itself, returns
//! `Pending`), so a task whose ops are always ready cannot starve the other
//! tasks of its worker.
//!
//! Outside fibra's workers the budget is unlimited: other executors have
//! their own policies.

use std::cell::Cell;

/// Performs per task turn.
const BUDGET: u32 = 128;
const UNLIMITED: u32 = u32::MAX;

crate::loom::thread_local! {
    static LEFT: Cell<u32> = const { Cell::new(UNLIMITED) };
}

/// A worker is about to run a task: a fresh budget.
pub(crate) fn reset() {
    LEFT.with(|l| l.set(BUDGET));
}

/// The worker leaves: no budget outside task turns.
pub(crate) fn unlimited() {
    LEFT.with(|l| l.set(UNLIMITED));
}

/// Whether the running task used up its budget this turn: a yield it then
/// makes is the budget's, not its own choice (the runner keeps such a task
/// on this worker, `WorkerCtx::schedule_hot`).
pub(crate) fn exhausted() -> bool {
    LEFT.with(|l| l.get() == 0)
}

/// A parasite's inline first poll nests inside the current task's turn
/// (`spawn_eager`): it gets a fresh budget of its own (none outside fibra's
/// workers), and the caller's is restored by [`leave_nested`].
#[inline]
pub(crate) fn enter_nested() -> u32 {
    LEFT.with(|l| {
        let saved = l.get();
        if saved != UNLIMITED {
            l.set(BUDGET);
        }
        saved
    })
}

/// The end of a nested poll: the caller's budget, as it was.
#[inline]
pub(crate) fn leave_nested(saved: u32) {
    LEFT.with(|l| l.set(saved));
}

/// Takes one unit; `false` when the task must yield first.
#[inline]
pub(crate) fn consume() -> bool {
    LEFT.with(|l| match l.get() {
        UNLIMITED => true,
        0 => false,
        n => {
            l.set(n - 1);
            true
        }
    })
}
