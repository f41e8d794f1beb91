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
            hint_retainer(ctx, &task);
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
            hint_retainer(ctx, task);
        }
    })
}

/// After a wake that only marked the task: if a worker retains it, asks
/// that worker to release it at its next turn (`retained.rs`), naming the
/// waker's worker (`ctx`, if it is one of the task's runtime and the wake
/// comes from a running task) so that the task may move there
/// (`inbox.rs`). A wake made while a task finishes (its joiners) or while
/// the worker delivers I/O events names no worker: the woken task's
/// partner is not there. A token read as 0 while the task is in fact
/// retained (its store not visible yet) leaves the release to the slot's
/// turn.
fn hint_retainer(ctx: Option<&WorkerCtx>, task: &TaskRef) {
    let token = task.header().retained();
    if token != 0 {
        let shared = task.shared();
        let from = ctx
            .filter(|c| Arc::ptr_eq(&c.shared, shared) && !c.is_finishing())
            .map(|c| c.index);
        shared.hint_retainer(token, from);
    }
}

/// A task that was woken (or aborted) during its poll goes again: behind
/// the others; on this worker if the cooperative budget made it yield.
/// A parasite that does so inflates (`inflate`). Refused at shutdown: the
/// registry's reference lets the drain cancel it.
#[inline]
pub(crate) fn requeue(task: TaskRef) {
    if task.header().is_parasite() {
        inflate(task);
        return;
    }
    let task = match gather(task) {
        Ok(()) => return,
        Err(task) => task,
    };
    if crate::coop::exhausted() {
        Shared::schedule_budget_yield(task);
    } else {
        let _ = Shared::schedule_yield(task);
    }
}

/// A task whose turn ended with it runnable, after it kept finding locks
/// held by another worker's tasks, or (if it yielded of its own accord)
/// its worker kept taking locks another worker released, goes to that
/// worker (`gather.rs`); `Err` gives it back to queue here.
#[inline]
fn gather(task: TaskRef) -> Result<(), TaskRef> {
    let (contended, mut holder) = crate::loom::take_contention();
    let handed_off = contended < super::gather::GATHER_MIN;
    if handed_off {
        // Hand-offs move only a task that yielded of its own accord: one
        // the budget stopped was busy, and may have parallel work.
        if crate::coop::exhausted() {
            return Err(task);
        }
        let (handed, from) = crate::loom::handoffs();
        if handed < super::gather::HANDOFF_MIN {
            return Err(task);
        }
        let _ = crate::loom::take_handoffs();
        holder = from;
    }
    with_current(|ctx| match ctx {
        Some(ctx) if Arc::ptr_eq(&ctx.shared, task.shared()) => {
            ctx.gather(task, holder, handed_off)
        }
        _ => Err(task),
    })
}

/// A parasite (`spawn_eager`) turned out long-running: one of its polls
/// ended with it runnable again (it yielded, or the cooperative budget made
/// it yield). It becomes an ordinary task (its state word's `PARASITE` bit
/// goes) and goes to the back of its worker's yielded queue, where idle workers
/// may take it; the worker it ran on spawns its next `EAGER_PENALTY`
/// parasites as ordinary tasks. With inflation off (`Builder::
/// parasite_inflation`), it stays a parasite and goes to the back of this
/// worker's private `hot` queue: nobody else runs it unless this worker is
/// stuck (`rescue.rs`).
#[cold]
fn inflate(task: TaskRef) {
    let inflation = task.shared().parasite_inflation;
    with_current(|ctx| {
        if let Some(ctx) = ctx.filter(|c| Arc::ptr_eq(&c.shared, task.shared())) {
            if inflation {
                ctx.penalize_eager();
            }
        }
    });
    if inflation {
        task.header().inflate();
        let _ = Shared::schedule_yield(task);
    } else {
        Shared::schedule_budget_yield(task);
    }
}

/// Where a `spawn_eager` runs: the current thread, a worker of the task's
/// runtime or not. Looked up once per spawn (the inline poll's memory comes
/// from this worker's slab and goes back to it).
pub(crate) struct EagerSite<'a> {
    heap: Option<&'a task_alloc::Heap>,
}

impl EagerSite<'_> {
    /// A block for a parasite of `layout` from this worker's slab; `None`:
    /// use the system allocator (off the runtime's workers, a task too
    /// large, or the AddressSanitizer and loom builds, as for `alloc`).
    #[inline(always)]
    pub(crate) fn alloc(&self, layout: Layout) -> Option<task_alloc::EagerBlock> {
        if cfg!(any(loom, fibra_system_alloc)) {
            return None;
        }
        let class = task_alloc::class_of(layout)?;
        // SAFETY: `heap` is this thread's worker's.
        unsafe { self.heap?.alloc_eager(class) }
    }

    /// Gives back a block of `layout` from [`EagerSite::alloc`], on the
    /// same thread, whose parasite finished inline: kept aside for the
    /// next one (`task_alloc.rs`).
    ///
    /// # Safety
    ///
    /// `block` came from this site's `alloc` for `layout` and is no longer
    /// used.
    #[inline(always)]
    pub(crate) unsafe fn free(&self, block: NonNull<u8>, layout: Layout) {
        match (self.heap, task_alloc::class_of(layout)) {
            // SAFETY: the caller's contract; `heap` is this thread's
            // worker's, the block's page owner.
            (Some(heap), Some(class)) => unsafe { heap.free_eager(block, class) },
            _ => unreachable!("an eager block without a slab"),
        }
    }
}

/// A `spawn_eager` of `future` on this thread: `parasite` spawns it as a
/// parasite at the site, unless this is a worker of `shared`'s runtime that a parasite
/// inflated on recently (`inflate`), which uses up one call of its
/// penalty and spawns an `ordinary` task instead.
#[inline(always)]
pub(crate) fn spawn_eager<F, R>(
    shared: &Arc<Shared>,
    future: F,
    parasite: impl FnOnce(F, EagerSite<'_>) -> R,
    ordinary: impl FnOnce(F) -> R,
) -> R {
    // SAFETY: used for this call only, which the worker's `enter` encloses
    // when the pointer is not null (`current_ptr`). Not `with_current`: the
    // result would pass through its closure, a copy of the handle each.
    let ctx = unsafe { super::worker::current_ptr().as_ref() };
    let here = ctx.filter(|c| Arc::ptr_eq(&c.shared, shared));
    if here.is_some_and(|c| !c.take_eager_turn()) {
        return ordinary(future);
    }
    let site = EagerSite {
        heap: here.map(WorkerCtx::heap),
    };
    parasite(future, site)
}

/// A parasite outlives its inline first poll (it waits, or a waker clone
/// outlives the poll): from now on it counts as a spawned task, which its
/// `finished` will balance (`metrics.rs`). A parasite taken apart after
/// its inline poll counts as neither.
#[inline]
pub(crate) fn parasite_outlives_its_inline_poll(shared: &Arc<Shared>) {
    shared.count_here(super::metrics::Count::Spawned);
}

/// Runs a parasite's inline first poll (`poll`, which contains its own
/// panics) nested inside the caller's: with a cooperative budget of its
/// own, the caller's restored after. The rest of a worker's per-turn state
/// needs nothing: the reference donation (`DONATE`) names the caller's
/// task and is left alone (the parasite's run does not donate), the
/// retained ring and `next` slot are the worker's, shared by every poll of
/// its turn, and the rescue section is the caller's poll's.
#[inline(always)]
pub(crate) fn inline_poll<R>(poll: impl FnOnce() -> R) -> R {
    let saved = crate::coop::enter_nested();
    let r = poll();
    crate::coop::leave_nested(saved);
    r
}

/// A parasite's inline first poll ended `Pending` on this thread, which
/// holds `RUNNING` and the run's reference `task`: registers it (it waits,
/// as [`waits`]), then `end_run` releases `RUNNING` or says the task must
/// go again (woken during the poll), and it is requeued.
///
/// Off the task's runtime's workers (`Handle::spawn_eager` from another
/// thread), this thread is the one running the task, which the shutdown
/// drain must not race (it cancels only once every worker has stopped):
/// the registration and the release happen under the drain lock, and if
/// the workers stopped already, the task comes back (`Err`) for the caller
/// to cancel.
pub(crate) fn parasite_waits(
    task: TaskRef,
    end_run: impl FnOnce(&TaskRef) -> super::task::AfterPoll,
) -> Result<(), TaskRef> {
    use super::task::AfterPoll;
    let on_worker = with_current(|ctx| ctx.is_some_and(|c| Arc::ptr_eq(&c.shared, task.shared())));
    let again = if on_worker {
        // A worker of the task's runtime runs: the drain cannot come
        // before it stops.
        waits(&task);
        end_run(&task) == AfterPoll::Requeue
    } else {
        let shared = task.shared().clone();
        let _no_drain = crate::loom::lock(&shared.drain_lock);
        // SeqCst: as every access to the flag (`Shared::stop_and_drain`);
        // under the lock, a drain either is over (we see the flag) or
        // comes after our release.
        if shared.workers_stopped.load(crate::loom::Ordering::SeqCst) {
            return Err(task);
        }
        waits(&task);
        end_run(&task) == AfterPoll::Requeue
    };
    if again {
        // Outside the lock: a push racing the shutdown may drain itself.
        requeue(task);
    }
    Ok(())
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

/// A block of the current worker's slab for an actor's mailbox, if this
/// thread is a worker of `shared`'s runtime and `layout` fits: the
/// mailbox gives it back when its last reference goes, on any thread,
/// and holds a count of the runtime (which owns the block's page) until
/// then. (Never in builds for the AddressSanitizer, so that it checks
/// every mailbox's lifetime, nor under loom: as for tasks.)
pub(crate) fn mailbox_block(shared: &Arc<Shared>, layout: Layout) -> Option<crate::mailbox::Block> {
    if cfg!(any(loom, fibra_system_alloc)) {
        return None;
    }
    let ptr = alloc(shared, layout)?;
    Some(crate::mailbox::Block {
        ptr,
        free: free_mailbox_block,
        owner: Arc::into_raw(Arc::clone(shared)).cast(),
    })
}

/// A mailbox's `Block::free`: gives the block back, then the runtime's
/// count.
///
/// # Safety
///
/// `block` came from [`mailbox_block`], whose `owner` is `owner`, and is
/// no longer used; called once per block.
unsafe fn free_mailbox_block(block: NonNull<u8>, owner: *const ()) {
    // SAFETY: the block is no longer used, and its runtime is alive (the
    // count `owner` holds).
    unsafe { free(block) };
    // SAFETY: the count `mailbox_block` took, released once, here.
    drop(unsafe { Arc::from_raw(owner.cast::<Shared>()) });
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
