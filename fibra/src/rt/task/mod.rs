//! Tasks: a spawned future, its scheduling state, and its join state.
//!
//! Files: `state.rs` (the state word), `raw.rs` (`TaskRef`, the counted
//! reference), `waker.rs` (the waker vtable and the run's reference
//! donation), `harness.rs` (`Task<F>`: allocation, run, completion,
//! shutdown, free), `future_cell.rs` (where the future lives, pinned),
//! `join_state.rs` (where the output waits for the handle). A task reaches
//! the scheduler only through `rt/schedule.rs`: to be queued when woken or
//! requeued, to wait, to finish, and for memory.
//!
//! # Layout
//!
//! A task is one allocation, a [`Task<F>`]: a type-erased [`Header`] first
//! (state word, reference count, vtable, registry slot, runtime), then the
//! future and the join state. What the scheduler holds is a [`TaskRef`], a
//! thin pointer to the header owning one reference; a waker's data pointer
//! is the same header pointer; a `JoinHandle` holds the same header pointer
//! too (and reaches the join state as a `dyn Joinable` through the vtable's
//! `joinable`), and owns one reference.
//!
//! The reference count is `Arc`'s protocol (Relaxed increments from a held
//! reference, Release decrements, an Acquire fence before the last one
//! frees), without `Arc`'s weak count: that saves the weak count's
//! decrement at the end of every task, and a new task starts with its two
//! references (the spawner's queue entry, the handle) already counted, no
//! increment.
//!
//! # State word (`Task::state`)
//!
//! | bit | set by | meaning |
//! |---|---|---|
//! | `NOTIFIED` | `wake` (any thread) | woken while `RUNNING`: the holder of `RUNNING` must poll it again |
//! | `RUNNING` | `spawn`, a wake of an idle task | exactly one party owns the future: a run queue entry, then the worker that took it from the queue and polls it, then (if the poll ended idle) that worker's ring of retained tasks |
//! | `COMPLETE` | the runner (or shutdown) | the future is gone and the output is in `join` |
//! | `ABORT` | `JoinHandle::abort` | cancel at the next scheduling point |
//!
//! A wake of an idle task (neither `RUNNING` nor `COMPLETE`) takes `RUNNING`
//! for the queue entry it pushes: it is the one (and only) party that puts
//! the task in a run queue (a worker retaining the task, below, holds
//! `RUNNING` and queues it itself), and the worker that pops the entry inherits
//! `RUNNING` without an atomic read-modify-write. A wake of a queued or
//! running task only sets `NOTIFIED`, and the runner requeues it after its
//! poll (at the back of its worker's yielded queue: a task that wakes
//! itself yields).
//! Wakes after `COMPLETE` do nothing.
//!
//! A poll that ends `Pending` with no wake during it does not release
//! `RUNNING` at once: the worker retains the task (`retained.rs`), so that a
//! wake on the same worker, the common case for communicating tasks, queues
//! it again without touching the state word; the release comes later, and
//! queues the task if a wake from elsewhere set `NOTIFIED` meanwhile.
//!
//! The future cell is touched only by the holder of `RUNNING`, or by runtime
//! shutdown after every worker has stopped.
//!
//! # The run's reference, donated to the first waker clone
//!
//! A run owns one reference to its task (the run queue's). The common wait
//! is a poll that clones its waker once (into an op's record) and returns
//! `Pending`: naively a reference count increment at the clone and a
//! decrement when the run drops its reference, two atomic read-modify-writes
//! that cancel out. Instead the run *donates* its reference to that first
//! clone ([`DONATE`]): the clone takes no new reference, and the run then
//! forgets its own. This is sound only while something else keeps the task
//! alive until the run is over, since the clone may be dropped (on any
//! thread) while the run still uses the task: the registry does, for a task
//! that registered in an earlier run (it holds a reference until
//! `complete`, which only the holder of `RUNNING` calls). So only
//! registered tasks donate. If the run must keep going with its reference
//! after a donation (the task finished, or must be queued again), it takes
//! a new one first, still covered by the registry's.
//!
//! # Join state (`Task::join`, under its lock)
//!
//! The output (or `JoinError`) lands there once; the handle's direct `.await`
//! keeps a waker there, and `join_op` performs publish waiter records there
//! (the task's completion is a resource like a channel: completion commits
//! them all).

mod future_cell;
mod harness;
mod join_state;
mod raw;
mod state;
#[cfg(all(test, not(loom)))]
mod tests;
mod waker;

#[cfg(all(loom, test))]
pub(crate) use future_cell::FutureCell;
pub(crate) use harness::Task;
pub(crate) use join_state::Joinable;
pub(crate) use raw::{IdleRun, TaskRef, abort, release};
pub(crate) use state::{AfterPoll, TaskState};

use super::Shared;
use super::registry::Slot;
use crate::loom::{AtomicUsize, Ordering};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

/// The type-erased head of every task allocation (module docs, "Layout").
#[repr(C)]
pub(crate) struct Header {
    state: TaskState,
    /// References: run queue entries, wakers, the registry's, the handle's.
    /// The allocation goes when the last one does.
    refs: AtomicUsize,
    vtable: &'static Vtable,
    registry_slot: Slot,
    /// While a worker retains the task (`retained.rs`): a token naming the
    /// worker and the ring slot holding it, else 0. Written only by that
    /// worker; read by wakes anywhere, which trust it only after checking
    /// the slot.
    retained: AtomicUsize,
    /// Dropped by hand, last: it keeps the task's memory (its page, for a
    /// slab task) alive until the block is given back.
    shared: ManuallyDrop<Arc<Shared>>,
}

impl Header {
    /// The task's address: unique among live tasks, and a task leaves the
    /// registry before its memory can be reused.
    pub(crate) fn id(&self) -> u64 {
        std::ptr::from_ref(self).addr() as u64
    }

    /// Where the task sits in the registry, once it has waited.
    pub(crate) fn registry_slot(&self) -> &Slot {
        &self.registry_slot
    }

    /// The runtime this task belongs to.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The retaining worker's token (`retained.rs`), or 0.
    pub(crate) fn retained(&self) -> usize {
        // Relaxed: a hint, checked against the slot it names.
        self.retained.load(Ordering::Relaxed)
    }

    /// Holder of `RUNNING`: whether the task is a parasite not inflated yet
    /// (`rt/schedule.rs`, `inflate`).
    pub(crate) fn is_parasite(&self) -> bool {
        self.state.is_parasite()
    }

    /// Holder of `RUNNING`: the parasite becomes an ordinary task.
    pub(crate) fn inflate(&self) {
        self.state.inflate();
    }

    /// Set by the retaining worker (0 once it no longer retains the task).
    pub(super) fn set_retained(&self, token: usize) {
        // Relaxed: only the retaining worker acts on a token, after
        // finding the task in its own slot.
        self.retained.store(token, Ordering::Relaxed);
    }
}

/// What differs between tasks of different future types.
struct Vtable {
    /// Polls the task once; consumes the queue entry's reference. Returns
    /// the task if the run ended still holding `RUNNING` for the worker to
    /// retain (`retained.rs`).
    run: unsafe fn(TaskRef) -> Option<IdleRun>,
    /// Drops the future and completes the task as cancelled.
    shutdown: unsafe fn(NonNull<Header>),
    /// Drops the task and frees its allocation (no reference is left).
    dealloc: unsafe fn(NonNull<Header>),
    /// The task as a `dyn Joinable` of its output type, type-erased: an
    /// `unsafe fn(NonNull<Header>) -> NonNull<dyn Joinable<F::Output>>`
    /// for a `Task<F>`, called back as that type by [`joinable`] (a handle
    /// holds the header pointer alone, one word).
    joinable: unsafe fn(),
}

/// The task `p` as a `dyn Joinable<T>`, through its vtable.
///
/// # Safety
///
/// `p` is a live task whose output type is `T`.
#[inline]
pub(crate) unsafe fn joinable<T>(p: NonNull<Header>) -> NonNull<dyn Joinable<T>> {
    // SAFETY: the caller's contract: the task is alive.
    let erased = unsafe { p.as_ref() }.vtable.joinable;
    // SAFETY: a task's vtable entry is `Task::<F>::joinable`, of this type
    // with `T = F::Output`, which the caller's contract names (`Task::
    // VTABLE_*`); a function pointer transmuted back to its own type.
    let f: unsafe fn(NonNull<Header>) -> NonNull<dyn Joinable<T>> =
        unsafe { std::mem::transmute::<unsafe fn(), _>(erased) };
    // SAFETY: as above, `p` is such a task.
    unsafe { f(p) }
}
