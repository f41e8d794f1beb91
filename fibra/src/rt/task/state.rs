//! A task's scheduling state word and its transitions (see the module docs
//! of `task` for what each bit means and who sets it).

use crate::loom::{AtomicUsize, Ordering};

const NOTIFIED: usize = 1;
const RUNNING: usize = 2;
const COMPLETE: usize = 4;
const ABORT: usize = 8;
/// A parasite (`spawn_eager`) not inflated yet: its yields stay on the
/// worker that runs it until it inflates (`rt/schedule.rs`). Set at
/// allocation; cleared once, by the holder of `RUNNING`.
const PARASITE: usize = 16;

/// The scheduling state word of a task (module docs), with its transitions.
pub(crate) struct TaskState(AtomicUsize);

/// What the runner must do after a poll returned `Pending`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AfterPoll {
    /// Nothing: the task waits for a wake.
    Idle,
    /// Woken (or aborted) during the poll: queue it again.
    Requeue,
}

impl TaskState {
    /// A new task: `RUNNING`, owned by the run queue entry its spawner
    /// pushes.
    pub(crate) fn new() -> Self {
        Self(AtomicUsize::new(RUNNING))
    }

    /// A new parasite (`spawn_eager`): `RUNNING`, owned by its inline
    /// first poll.
    pub(crate) fn new_parasite() -> Self {
        Self(AtomicUsize::new(RUNNING | PARASITE))
    }

    /// Holder of `RUNNING`: whether the task is a parasite not inflated yet.
    pub(crate) fn is_parasite(&self) -> bool {
        // Relaxed: only the holder of `RUNNING` changes the bit (`inflate`),
        // and it is reading its own write or one ordered before its hold.
        self.0.load(Ordering::Relaxed) & PARASITE != 0
    }

    /// Holder of `RUNNING`: the parasite becomes an ordinary task. A
    /// read-modify-write, as wakes (`notify`) may change the word at the
    /// same time (loom model `loom_inflation_racing_a_wake_loses_neither`).
    pub(crate) fn inflate(&self) {
        // Relaxed: the bit is read only by the holder of `RUNNING`, which
        // the queue hand-off or the state word's own AcqRel transitions
        // order after this.
        self.0.fetch_and(!PARASITE, Ordering::Relaxed);
    }

    /// A wake: takes `RUNNING` for a run queue entry if the task was idle
    /// (returns `true`: the caller must queue it), else sets `NOTIFIED`
    /// (whoever holds `RUNNING` runs it again).
    ///
    /// Always a read-modify-write, never an early return on a plain load:
    /// the waker wrote the condition the task waits for (an opstate's
    /// `SYNCED`) just before, and a plain load could read a stale `RUNNING`
    /// while the runner, finishing its poll, has already missed that
    /// condition (store buffering) — a lost wake-up. With the RMW, either
    /// the runner's `end_run_pending` comes later in the state word's order
    /// and sees our `NOTIFIED`, or it came earlier and we see the task idle
    /// and queue it. (loom models `loom_wake_during_poll_is_never_lost_nor_doubled`
    /// and `loom_wake_racing_the_start_of_a_run_is_not_lost`.)
    pub(crate) fn notify(&self) -> bool {
        let mut s = self.0.load(Ordering::Relaxed);
        loop {
            let (new, queue) = if s & (RUNNING | COMPLETE) == 0 {
                (s | RUNNING, true)
            } else {
                (s | NOTIFIED, false)
            };
            // AcqRel: Release publishes the condition we wake for to
            // whoever acquires the word next (the runner); Acquire on the
            // queueing path orders the previous run's release of the
            // future before our queue entry's run.
            match self
                .0
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return queue,
                Err(actual) => s = actual,
            }
        }
    }

    /// Requests an abort; the caller then `notify`s.
    pub(crate) fn set_abort(&self) {
        // AcqRel, as `notify`: the runner that sees `ABORT` (its Acquire in
        // `start_run` or `end_run_pending`) sees what the aborter did before.
        self.0.fetch_or(ABORT, Ordering::AcqRel);
    }

    /// Runner, taking the task from a queue (whose entry owns `RUNNING`).
    /// Returns `None` if already complete, else whether an abort was
    /// requested.
    ///
    /// Usually a plain load, no read-modify-write: the queue hand-off
    /// already ordered the waker's writes before this run. `NOTIFIED` set
    /// now means a wake came while the task sat in the queue; clearing it
    /// (an RMW, which acquires that waker's writes) saves a needless second
    /// run. A wake that lands after our load sets `NOTIFIED` again, which
    /// `end_run_pending` sees.
    pub(crate) fn start_run(&self) -> Option<bool> {
        // Acquire: pairs with the Release of the previous run's
        // `end_run_pending` or a waker's `notify` (the queue hand-off
        // orders them too; this covers a steal).
        let mut s = self.0.load(Ordering::Acquire);
        debug_assert!(s & RUNNING != 0, "run of a task not queued");
        if s & NOTIFIED != 0 {
            // AcqRel: acquires the writes of the wake that set `NOTIFIED`.
            s = self.0.fetch_and(!NOTIFIED, Ordering::AcqRel);
        }
        if s & COMPLETE != 0 {
            return None;
        }
        Some(s & ABORT != 0)
    }

    /// Runner, after a `Pending` poll, holding `RUNNING`: whether no wake
    /// or abort came during the poll as far as a plain load can tell (one
    /// that lands anyway is seen by `end_run_pending` later).
    pub(crate) fn is_quiet(&self) -> bool {
        self.0.load(Ordering::Relaxed) & (NOTIFIED | ABORT) == 0
    }

    /// Worker, about a task it retains: whether a wake or an abort marked
    /// it since (a plain load: the release that follows is the RMW).
    pub(crate) fn is_marked(&self) -> bool {
        !self.is_quiet()
    }

    /// Runner, after a `Pending` poll: releases `RUNNING`, or, if woken
    /// during the poll, keeps it for the queue entry the runner pushes
    /// again (clearing `NOTIFIED`).
    pub(crate) fn end_run_pending(&self) -> AfterPoll {
        let mut s = self.0.load(Ordering::Relaxed);
        loop {
            // Woken during the poll, or asked to abort: keep `RUNNING` for
            // the entry we push again (the next run sees `ABORT` and
            // cancels). Never release `RUNNING` only to take it back: once
            // released, the task may run, finish and be freed elsewhere
            // (a run that donated its reference holds none).
            let new = if s & (NOTIFIED | ABORT) != 0 {
                s & !NOTIFIED
            } else {
                s & !RUNNING
            };
            // AcqRel: Release hands the future (our poll's writes) to the
            // next runner; Acquire sees the writes of a wake that set
            // `NOTIFIED`.
            match self
                .0
                .compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => s = actual,
            }
        }
        if s & (NOTIFIED | ABORT) != 0 {
            // A wake during the poll saw RUNNING and left the queueing to
            // us; or an abort did.
            return AfterPoll::Requeue;
        }
        AfterPoll::Idle
    }

    /// Runner (or shutdown), once the output is published: `RUNNING ->
    /// COMPLETE` in one step. Release pairs with `is_complete`.
    pub(crate) fn complete(&self) {
        let mut s = self.0.load(Ordering::Relaxed);
        loop {
            match self.0.compare_exchange_weak(
                s,
                (s & !RUNNING) | COMPLETE,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(actual) => s = actual,
            }
        }
    }

    pub(crate) fn is_complete(&self) -> bool {
        // Acquire: pairs with `complete`'s Release, after the output was
        // published.
        self.0.load(Ordering::Acquire) & COMPLETE != 0
    }
}
