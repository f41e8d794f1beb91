//! Each worker's inbox: tasks another worker hands over to it because a
//! task running here woke them (migration to the point of synchronisation).
//!
//! A task retained by worker A (`retained.rs`) and woken by a task running
//! on worker B cannot be queued by B: A holds its `RUNNING`. A releases it
//! at its next turn, and used to queue it on A, next to nothing it talks to:
//! its partner runs on B. Tasks that talk to each other across the two
//! cores then stay there, each message crossing cores (a cache line costs
//! about a microsecond to cross), which is the two-worker slow mode. So A
//! hands the released task to B instead: it pushes the queue entry into B's
//! inbox and raises B's hint (`retained::WokenHint::INBOX`); B takes it into
//! its `next` slot between two turns, as if its own task's wake had queued
//! it. A task that talks only to tasks on its own worker is never woken
//! from elsewhere and never moves; tasks that talk across workers gather on
//! one of them.
//!
//! # Invariants
//!
//! * An entry in an inbox owns its task's `RUNNING` (a queue entry, as in
//!   any run queue); whoever pops it runs it or, at shutdown, drops it
//!   (`Shared::drain_queues`).
//! * A worker never sleeps with entries in its inbox: the pusher pushes,
//!   then asks the idle registry (under its lock) whether the target is a
//!   registered sleeper, and if it is, takes an entry back (`hand_over`); a
//!   worker registers as a sleeper (under the same lock) before its final
//!   look, which includes its inbox (`Shared::has_work_for`). The lock
//!   orders the two: either the pusher sees the sleeper, or the sleeper's
//!   look sees the entry (loom model
//!   `loom_a_task_handed_to_a_worker_going_to_sleep_is_never_stranded`).
//! * `len` mirrors the vector's length, stored under the lock; read alone
//!   (Relaxed) it is only a hint that spares the lock when empty.

use super::idle::Idle;
use super::task::TaskRef;
use crate::loom::{AtomicUsize, Mutex, Ordering, lock};

/// Worker `to`'s inbox (`T`: a queue entry; plain values in the models).
pub(crate) struct Inbox<T = TaskRef> {
    tasks: Mutex<Vec<T>>,
    len: AtomicUsize,
}

impl<T> Default for Inbox<T> {
    fn default() -> Self {
        Self {
            tasks: Mutex::new(Vec::new()),
            len: AtomicUsize::new(0),
        }
    }
}

impl<T> Inbox<T> {
    /// Another worker hands `task` to this inbox's worker, `to`. Gives back
    /// an entry for the caller to queue instead if `to` sleeps, so nothing
    /// waits in the inbox of a worker that will not look (it may be `task`
    /// or another entry pushed meanwhile: any of them is runnable work).
    pub(crate) fn hand_over(&self, task: T, idle: &Idle, to: usize) -> Option<T> {
        self.push(task);
        // Under the idle registry's lock, after the push: `to` either
        // registered as a sleeper before (we take an entry back), or it
        // registers after, and then its final look sees the entry.
        if idle.is_sleeper(to) {
            self.pop()
        } else {
            None
        }
    }

    fn push(&self, task: T) {
        let mut tasks = lock(&self.tasks);
        tasks.push(task);
        // Relaxed: a hint; the lock orders the vector itself.
        self.len.store(tasks.len(), Ordering::Relaxed);
    }

    /// Takes every entry, oldest first.
    pub(crate) fn take_all(&self, mut each: impl FnMut(T)) {
        if self.is_empty() {
            return;
        }
        let taken = {
            let mut tasks = lock(&self.tasks);
            self.len.store(0, Ordering::Relaxed);
            std::mem::take(&mut *tasks)
        };
        for t in taken {
            each(t);
        }
    }

    /// Takes the newest entry, if any is left.
    fn pop(&self) -> Option<T> {
        let mut tasks = lock(&self.tasks);
        let t = tasks.pop();
        self.len.store(tasks.len(), Ordering::Relaxed);
        t
    }

    /// Whether the inbox looks empty (a hint: see the module docs).
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    /// Whether the inbox is empty, under its lock: for a final look that
    /// must see every entry pushed before (`Shared::has_work_for`).
    pub(crate) fn is_empty_now(&self) -> bool {
        lock(&self.tasks).is_empty()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::idle::Idle;
    use super::super::retained::WokenHint;
    use super::Inbox;

    #[test]
    fn a_hand_over_to_an_awake_worker_stays_and_one_to_a_sleeper_comes_back() {
        let idle = Idle::new(2);
        let inbox = Inbox::<u32>::default();
        assert_eq!(inbox.hand_over(1, &idle, 1), None, "worker 1 is awake");
        assert!(!inbox.is_empty());
        idle.register_sleeper(1, false);
        assert_eq!(inbox.hand_over(2, &idle, 1), Some(2), "worker 1 sleeps");
        assert!(idle.unregister_sleeper(1));
        let mut got = Vec::new();
        inbox.take_all(|t| got.push(t));
        assert_eq!(got, [1]);
        assert!(inbox.is_empty() && inbox.is_empty_now());
    }

    #[test]
    fn only_a_sole_waking_worker_is_a_hand_over_target() {
        let b = WokenHint::bit;
        assert_eq!(WokenHint::sole_waker(b(Some(1)), 0), Some(1));
        assert_eq!(
            WokenHint::sole_waker(b(Some(1)) | WokenHint::INBOX, 0),
            Some(1)
        );
        assert_eq!(WokenHint::sole_waker(b(Some(0)), 0), None, "ourselves");
        assert_eq!(WokenHint::sole_waker(b(Some(1)) | b(Some(2)), 0), None);
        assert_eq!(WokenHint::sole_waker(b(None), 0), None, "not a worker");
        assert_eq!(WokenHint::sole_waker(b(Some(1)) | b(None), 0), None);
        assert_eq!(
            WokenHint::sole_waker(b(Some(200)), 0),
            None,
            "no bit of its own"
        );
        assert_eq!(WokenHint::sole_waker(WokenHint::INBOX, 0), None);
        assert_eq!(WokenHint::sole_waker(b(Some(61)), 0), Some(61));
    }
}
