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
/// workers), and the caller's is restored by [`leave_nested`]. Written
/// only if it changes: a caller that spawns parasites in a loop has
/// usually used none of its own, and most parasites use none of theirs.
#[inline]
pub(crate) fn enter_nested() -> u32 {
    LEFT.with(|l| {
        let saved = l.get();
        if saved != UNLIMITED && saved != BUDGET {
            l.set(BUDGET);
        }
        saved
    })
}

/// The end of a nested poll: the caller's budget, as it was (written only
/// if the nested poll changed it).
#[inline]
pub(crate) fn leave_nested(saved: u32) {
    LEFT.with(|l| {
        if l.get() != saved {
            l.set(saved);
        }
    });
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn left() -> u32 {
        LEFT.with(Cell::get)
    }

    fn set_left(n: u32) {
        LEFT.with(|l| l.set(n));
    }

    /// A nested poll runs on a fresh budget, whatever the caller had left,
    /// and the caller finds its own as it was, whatever the nested poll
    /// used; outside a worker's turn both stay unlimited.
    #[test]
    fn a_nested_poll_gets_a_fresh_budget_and_gives_the_callers_back() {
        for (caller, used) in [
            (5, 0),
            (5, 3),
            (BUDGET, 0),
            (BUDGET, 7),
            (0, 0),
            (0, BUDGET),
        ] {
            set_left(caller);
            let saved = enter_nested();
            assert_eq!(left(), BUDGET, "caller {caller}");
            for _ in 0..used {
                assert!(consume());
            }
            assert_eq!(left(), BUDGET - used);
            leave_nested(saved);
            assert_eq!(left(), caller, "caller {caller}, nested used {used}");
        }
        unlimited();
        let saved = enter_nested();
        assert_eq!(left(), UNLIMITED);
        assert!(consume());
        leave_nested(saved);
        assert_eq!(left(), UNLIMITED);
    }
}
