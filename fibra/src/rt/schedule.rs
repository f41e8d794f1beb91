//! The interface between tasks and the scheduler: everything a task asks of
//! the runtime that runs it, in one place.
//!
//! The task side (`task/`) knows its own state word, references and future;
//! it calls only these functions to be queued, to wait, to finish and to
//! get memory. Only this side knows where a task goes: the current
//! worker's `next` slot or `hot` queue (hand-off), its ring of retained
//! tasks (`retained.rs`), the stealable queues, the injector, the registry
//! that shutdown drains, and the slabs (`task_alloc.rs`).

use super::Shared;
use super::task::TaskRef;
use super::task_alloc;
use super::worker::{WorkerCtx, with_current};
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

/// A wake of `task` (by value: the waker's reference comes along) on this
/// thread: queued at once if this thread's worker retains it (no state word
/// read-modify-write), else if the wake found it idle; a wake of a running
/// or queued task only marks it, and asks the worker retaining it, if any,
/// to release it.
#[inline]
pub(crate) fn wake(task: TaskRef) {
    with_current(|ctx| {
        let task = match ctx {
            Some(ctx) => match ctx.wake_retained(task, |t| t, TaskRef::into_retained_entry) {
                Ok(()) => return,
                Err(task) => task,
            },
            None => task,
        };
        if task.notify() {
            Shared::schedule_on(ctx, task);
        } else {
            hint_retainer(&task);
        }
    })
}

/// A wake by reference: as [`wake`], taking a reference for the queue entry
/// only if one is needed. (The two stay separate: one function taking the
/// waker's reference as an `Option` costs more instructions per round
/// trip.)
#[inline]
pub(crate) fn wake_by_ref(task: &TaskRef) {
    with_current(|ctx| {
        if let Some(ctx) = ctx {
            if ctx
                .wake_retained(task, |t| t, |t, owns| t.retained_entry(owns))
                .is_ok()
            {
                return;
            }
        }
        if task.notify() {
            // We hold `RUNNING` for an entry now; the task is alive (the
            // caller's waker holds a reference).
            Shared::schedule_on(ctx, task.clone());
        } else {
            hint_retainer(task);
        }
    })
}

/// After a wake that only marked the task: if a worker retains it, asks
/// that worker to release it at its next turn (`retained.rs`). A token read
/// as 0 while the task is in fact retained (its store not visible yet)
/// leaves the release to the slot's turn.
fn hint_retainer(task: &TaskRef) {
    let token = task.header().retained();
    if token != 0 {
        task.shared().hint_retainer(token);
    }
}

/// A task that was woken (or aborted) during its poll goes again: behind
/// the others; on this worker if the cooperative budget made it yield.
/// Refused at shutdown: the registry's reference lets the drain cancel it.
#[inline]
pub(crate) fn requeue(task: TaskRef) {
    if crate::coop::exhausted() {
        Shared::schedule_budget_yield(task);
    } else {
        let _ = Shared::schedule_yield(task);
    }
}

/// A task's first `Pending` poll: from now on shutdown must be able to find
/// it outside the run queues (`registry.rs`). The caller holds `RUNNING`,
/// so this comes before any `finished`.
#[inline(always)]
pub(crate) fn waits(task: &TaskRef) {
    if !is_registered(task) {
        register(task);
    }
}

/// A task's first wait: into the registry.
#[inline(never)]
fn register(task: &TaskRef) {
    task.shared()
        .tasks
        .insert(task.clone(), task.header().registry_slot());
}

/// Whether `task` waited before (it is registered): then the registry
/// keeps it alive until it finishes.
#[inline(always)]
pub(crate) fn is_registered(task: &TaskRef) -> bool {
    task.header().registry_slot().is_registered()
}

/// A task is finishing: counted (`metrics.rs`) before its completion is
/// published, so that whoever sees it complete sees it counted.
#[inline(always)]
pub(crate) fn finishing(task: &super::task::Header) {
    task.shared().count_here(super::metrics::Count::Finished);
    crate::trace::event!(task_id = task.id(), "complete");
}

/// A task finished (its output is published, its state `COMPLETE`): it
/// leaves the registry, then `wake_joiners` runs, its wakes queued behind
/// the tasks already queued when this runs on a worker (a finished task
/// waits for no reply: no hand-off to make).
#[inline]
pub(crate) fn finished(task: &super::task::Header, wake_joiners: Option<impl FnOnce()>) {
    task.shared().tasks.remove(task.id(), task.registry_slot());
    if let Some(wake_joiners) = wake_joiners {
        with_current(|ctx| match ctx {
            Some(ctx) => ctx.finishing(wake_joiners),
            None => wake_joiners(),
        });
    }
}

/// A block for a task of `layout` from the current worker's slab, if this
/// thread is a worker of `shared`'s runtime and the task fits; `None`: use
/// the system allocator.
pub(crate) fn alloc(shared: &Arc<Shared>, layout: Layout) -> Option<NonNull<u8>> {
    let class = task_alloc::class_of(layout)?;
    with_current(|ctx| match ctx {
        // SAFETY: we are this worker.
        Some(ctx) if Arc::ptr_eq(&ctx.shared, shared) => unsafe { ctx.heap().alloc(class) },
        _ => None,
    })
}

/// Gives back a block from [`alloc`].
///
/// # Safety
///
/// The block came from [`alloc`], is no longer used, and its runtime (which
/// owns its page) is alive.
pub(crate) unsafe fn free(block: NonNull<u8>) {
    with_current(|ctx| {
        let here = ctx.map(WorkerCtx::heap);
        // SAFETY: the caller's contract; `here` is this thread's worker's
        // heap.
        unsafe { task_alloc::free(block, here) }
    });
}
