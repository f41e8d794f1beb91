//! `TaskRef`, an owned, counted reference to a task, and what holds one.

use super::state::AfterPoll;
use super::waker::borrowed;
use super::{Header, Shared};
use crate::loom::{Ordering, fence};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

/// A task whose run ended `Pending` without a wake but kept `RUNNING`, for
/// its worker to retain (`retained.rs`) and release later
/// ([`TaskRef::release_retained`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct IdleRun {
    pub(in crate::rt) task: NonNull<Header>,
    /// Whether the run's reference came along. If not, the run donated it
    /// to a waker clone, and the registry's reference keeps the task alive
    /// (it cannot complete while retained: that takes `RUNNING`).
    pub(in crate::rt) owns_ref: bool,
}

impl IdleRun {
    /// Whether a wake or an abort marked the task since its run ended.
    pub(crate) fn is_marked(self) -> bool {
        // SAFETY: a retained task is alive (the run's reference, or the
        // registry's), and the caller retains it.
        unsafe { self.task.as_ref() }.state.is_marked()
    }
}

/// An owned reference to a task: what run queues, the registry and wakers
/// hold. One pointer wide.
pub(crate) struct TaskRef(pub(super) NonNull<Header>);

// SAFETY: a task is `Send + Sync` (see `Task`'s impls): every task a
// `TaskRef` can point at was built from a `Send` future with a `Send`
// output; the reference count is atomic.
unsafe impl Send for TaskRef {}
// SAFETY: as above; `&TaskRef` only exposes the header's shared parts.
unsafe impl Sync for TaskRef {}

impl TaskRef {
    /// Takes over a reference counted in `refs`.
    ///
    /// # Safety
    ///
    /// `p` points at a live task's header, and the caller owns one of its
    /// references.
    pub(super) unsafe fn from_raw(p: NonNull<Header>) -> Self {
        Self(p)
    }

    pub(in crate::rt) fn header(&self) -> &Header {
        // SAFETY: we own a reference, so the task is alive.
        unsafe { self.0.as_ref() }
    }

    /// The runtime this task belongs to.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.header().shared
    }

    pub(in crate::rt) fn as_ptr(&self) -> NonNull<Header> {
        self.0
    }

    /// Polls the task once (it was taken from a run queue). `Some` if the
    /// run ended idle but kept `RUNNING`: the worker must retain the task
    /// (`retained.rs`), and release it later with [`release_retained`].
    ///
    /// [`release_retained`]: TaskRef::release_retained
    #[must_use = "a task returned by a run holds `RUNNING` until released"]
    pub(crate) fn run(self) -> Option<IdleRun> {
        let run = self.header().vtable.run;
        // SAFETY: `run` belongs to this task's type.
        unsafe { run(self) }
    }

    /// The end of a retained task's run, deferred (`retained.rs`): releases
    /// `RUNNING`, or keeps it and returns a queue entry if the task was woken
    /// (or aborted) meanwhile.
    ///
    /// # Safety
    ///
    /// `run` came from [`TaskRef::run`] and the caller retained it since,
    /// taking the retaining token out of its header first.
    pub(crate) unsafe fn release_retained(run: IdleRun) -> Option<TaskRef> {
        // SAFETY: the run's reference, if it came along (else the
        // registry's keeps the task alive until it completes: only the
        // holder of `RUNNING`, us, completes it while workers run, and the
        // shutdown drain waits for every worker to stop).
        let own = run.owns_ref.then(|| unsafe { TaskRef::from_raw(run.task) });
        // SAFETY: as above, the task is alive.
        let h = unsafe { run.task.as_ref() };
        if h.state.end_run_pending() == AfterPoll::Requeue {
            // We still hold `RUNNING`; the queue entry needs a reference.
            // SAFETY: as above, the task is alive.
            return Some(own.unwrap_or_else(|| unsafe { TaskRef::adopt_new(run.task) }));
        }
        // Released: from here on the task may run (and go) elsewhere.
        drop(own);
        None
    }

    /// A new reference to a task known to be alive.
    ///
    /// # Safety
    ///
    /// The task is alive for the duration of the call (someone holds a
    /// reference).
    pub(super) unsafe fn adopt_new(task: NonNull<Header>) -> TaskRef {
        // SAFETY: alive, per the caller.
        let borrowed = ManuallyDrop::new(unsafe { TaskRef::from_raw(task) });
        TaskRef::clone(&borrowed)
    }

    /// Drops the future and completes the task as cancelled (shutdown,
    /// once no worker runs).
    pub(crate) fn shutdown(&self) {
        let shutdown = self.header().vtable.shutdown;
        // SAFETY: `shutdown` belongs to this task's type; the caller is
        // shutdown, after every worker stopped.
        unsafe { shutdown(self.0) }
    }

    /// The task's identity in the registry.
    pub(crate) fn id(&self) -> u64 {
        self.header().id()
    }

    /// Gives up ownership without releasing the reference (it was donated,
    /// module docs, or goes to the worker's ring of retained tasks).
    pub(super) fn forget(self) {
        std::mem::forget(self);
    }
}

impl Clone for TaskRef {
    fn clone(&self) -> Self {
        // Relaxed: a new reference is made from one we hold, as `Arc` does;
        // nothing is published through the count itself.
        let old = self.header().refs.fetch_add(1, Ordering::Relaxed);
        // As `Arc`: a count this high means references are being leaked
        // (forgotten wakers); abort before it can wrap to a free.
        if old > isize::MAX as usize {
            std::process::abort();
        }
        Self(self.0)
    }
}

impl Drop for TaskRef {
    fn drop(&mut self) {
        // Release: our uses of the task happen before the deallocation; the
        // last owner's Acquire fence pairs with every other owner's Release.
        if self.header().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        let dealloc = self.header().vtable.dealloc;
        // SAFETY: that was the last reference.
        unsafe { dealloc(self.0) }
    }
}

impl TaskRef {
    /// After a donation (module docs): a new reference for the run, which
    /// still holds `self` (the donated one, about to be forgotten or
    /// dropped as its own).
    pub(super) fn take_back_reference(&self) {
        // The task is alive (the registry holds a reference through this
        // run); the increment pairs with the drop of `self` later.
        std::mem::forget(self.clone());
    }
}

/// Releases a reference to a task (the handle's, when it goes).
///
/// # Safety
///
/// `p` is the header of a task whose reference the caller owns, with the
/// provenance of the whole allocation.
pub(crate) unsafe fn release(p: NonNull<Header>) {
    // SAFETY: the caller's contract.
    drop(unsafe { TaskRef::from_raw(p) });
}

/// Asks a task to stop ([`JoinHandle::abort`]).
///
/// # Safety
///
/// `p` is the header of a task the caller holds a reference to, with the
/// provenance of the whole allocation.
pub(crate) unsafe fn abort(p: NonNull<Header>) {
    // SAFETY: the caller's reference keeps the task alive during the call.
    let task = unsafe { borrowed(p.as_ptr().cast_const().cast()) };
    task.header().state.set_abort();
    TaskRef::clone(&task).wake();
}
