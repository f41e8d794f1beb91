//! Retained tasks: a worker keeps `RUNNING` for the tasks that recently
//! went idle on it, so that a wake from this worker queues them again
//! without an atomic read-modify-write.
//!
//! A task's poll that returns `Pending` normally ends with a compare-and-swap
//! that releases `RUNNING`, and the wake that later queues it takes `RUNNING`
//! back with another. When both happen on one worker (a ping-pong pair, a
//! pipeline whose stages all live here), those two are half of the four
//! read-modify-writes a rendezvous message costs (the other two are the
//! channel's lock, taken by each side). Instead, the worker *retains* the
//! task after such a poll: the state word keeps `RUNNING`, and the task's
//! header records which slot of this ring holds it. A wake on this worker
//! that finds the task in its own ring takes it out and queues it, owning
//! `RUNNING` already.
//!
//! A retained task is idle in every respect but the state word: a wake from
//! another thread sees `RUNNING`, sets `NOTIFIED` and leaves the queueing to
//! the holder of `RUNNING`, this worker. So the worker *releases* every
//! retained task soon, with the compare-and-swap the poll skipped
//! (`TaskRef::release_retained`), and queues it if it was woken meanwhile:
//!
//! * `CAP` task turns later at most: turn `k` retains into slot `k % CAP`,
//!   whose previous task (from turn `k - CAP`) it releases. A wake from
//!   elsewhere waits at most `CAP` turns of this worker (a spawn from
//!   outside waits up to `INJECTOR_INTERVAL` turns for the injector);
//! * before the worker looks for work elsewhere or sleeps, and when it
//!   stops (shutdown, the end of a current-thread `block_on`).
//!
//! The retained run's reference comes along in the slot, unless the run
//! donated it to a waker clone (task.rs, "The run's reference"): then the
//! registry's reference keeps the task alive, since it cannot complete while
//! retained (completing takes `RUNNING`). A wake by value that takes the
//! task out queues it with the waker's reference (dropping the slot's, if
//! any); a wake by reference queues it with the slot's.
//!
//! `CAP` covers a pipeline of a hundred stages on one worker, which wakes
//! each stage about a hundred turns after it went idle; a longer cycle of
//! tasks gains nothing and pays the bookkeeping (a slot write per turn).
//!
//! # Invariants
//!
//! * The ring is the worker's alone (`Cell`s, `!Sync`): only its thread
//!   reads or writes the slots, `turn` and `held`.
//! * A slot holds a task exactly while this worker retains it: the task's
//!   state word has `RUNNING` on behalf of the slot, and its header's
//!   `retained` token is the slot's address. Taking or releasing clears the
//!   slot and the token, the token before the release gives `RUNNING` up.
//! * A wake trusts a token only after finding the same task in the slot it
//!   names: a token read on another thread may be stale, but the slots are
//!   written only by this worker, so a match means it retains the task.

use super::task::{IdleRun, TaskRef};
use std::cell::Cell;

/// Slots in the ring: the most task turns a task stays retained.
pub(super) const CAP: usize = 128;

pub(crate) struct Retained {
    /// Slot `k % CAP` holds what turn `k` left to retain, until turn
    /// `k + CAP` releases it (or a wake takes it first).
    slots: [Cell<Option<IdleRun>>; CAP],
    /// Turns so far (wrapping; `CAP` divides 2^32).
    turn: Cell<u32>,
    /// Occupied slots.
    held: Cell<u32>,
}

impl Retained {
    pub(crate) fn new() -> Self {
        Self {
            slots: std::array::from_fn(|_| Cell::new(None)),
            turn: Cell::new(0),
            held: Cell::new(0),
        }
    }

    /// A task turn on this worker ended; `run` is the task it left idle but
    /// `RUNNING`, if any (`Task::run`), which we retain. The task retained
    /// `CAP` turns ago in the same slot, if no wake took it meanwhile, is
    /// released (through `release`).
    #[inline]
    pub(crate) fn turn(&self, run: Option<IdleRun>, release: impl FnOnce(IdleRun)) {
        let turn = self.turn.get();
        self.turn.set(turn.wrapping_add(1));
        let i = turn as usize % CAP;
        if let Some(run) = run {
            // SAFETY: the task is alive (`IdleRun`: its run's reference, or
            // the registry's), and cannot complete while we hold `RUNNING`.
            unsafe { run.task.as_ref() }.set_retained(self.token(i));
            self.held.set(self.held.get() + 1);
        }
        if let Some(old) = self.slots[i].replace(run) {
            self.release_from(old, release);
        }
    }

    /// A wake on this worker: if we retain `task`, takes it out of the ring
    /// (`Some`): the caller now holds `RUNNING` for a queue entry, and the
    /// retained run's reference if it had one (`Some(true)`).
    #[inline]
    pub(crate) fn take(&self, task: &TaskRef) -> Option<bool> {
        const SLOT: usize = size_of::<Cell<Option<IdleRun>>>();
        let header = task.header();
        let offset = header.retained().wrapping_sub(self.token(0));
        if offset >= CAP * SLOT {
            return None;
        }
        let i = offset / SLOT;
        match self.slots[i].get() {
            Some(run) if run.task == task.as_ptr() => {
                self.slots[i].set(None);
                self.held.set(self.held.get() - 1);
                header.set_retained(0);
                Some(run.owns_ref)
            }
            // A stale token: retained here once, released since.
            _ => None,
        }
    }

    /// Releases every retained task.
    pub(crate) fn release_all(&self, mut release: impl FnMut(IdleRun)) {
        if self.is_empty() {
            return;
        }
        for slot in &self.slots {
            if let Some(run) = slot.take() {
                self.release_from(run, &mut release);
            }
        }
        debug_assert!(self.is_empty());
    }

    /// Whether no task is retained.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.get() == 0
    }

    /// `run` just left its slot: clears its token and releases it.
    fn release_from(&self, run: IdleRun, release: impl FnOnce(IdleRun)) {
        self.held.set(self.held.get() - 1);
        // SAFETY: retained until now, hence alive (see `turn`).
        unsafe { run.task.as_ref() }.set_retained(0);
        release(run);
    }

    /// The token naming slot `i`: its address, unique to this worker's ring
    /// while the ring lives (and the ring is empty before it goes).
    fn token(&self, i: usize) -> usize {
        std::ptr::from_ref(&self.slots[i]).addr()
    }
}

impl Drop for Retained {
    fn drop(&mut self) {
        // The worker releases everything before it stops; a task left here
        // would keep `RUNNING` for good.
        debug_assert!(self.is_empty(), "a worker stopped with retained tasks");
    }
}
