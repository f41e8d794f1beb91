//! `Task<F>`: a task's allocation, and how it is run, completed, shut down
//! and freed.

use super::future_cell::FutureCell;
use super::join_state::{JoinState, Joinable, Output};
use super::raw::{IdleRun, TaskRef};
use super::state::{AfterPoll, TaskState};
use super::waker::{DONATE, WAKER_VTABLE};
use super::{Header, Slot, Vtable};
use crate::loom::{AtomicUsize, Lock};
use crate::rt::schedule;
use crate::rt::{JoinError, JoinHandle, Shared};
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, Waker};

/// A task's allocation: the header first (`repr(C)`), so that a pointer
/// to it is a pointer to its header.
#[repr(C)]
pub(crate) struct Task<F: Future> {
    pub(super) header: Header,
    future: FutureCell<F>,
    pub(super) join: Lock<JoinState<F::Output>>,
}

// SAFETY: the future cell is accessed only by the holder of `RUNNING` (or at
// shutdown when no worker runs): one thread at a time, hence `F: Send`. The
// output crosses to the joining thread: `F::Output: Send`.
unsafe impl<F: Future + Send> Sync for Task<F> where F::Output: Send {}
// SAFETY: as above.
unsafe impl<F: Future + Send> Send for Task<F> where F::Output: Send {}

impl<F> Task<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// Allocates a task, `RUNNING` for the queue entry the spawner pushes:
    /// that entry's reference and the handle's (two references from the
    /// start, no atomic increment).
    pub(crate) fn allocate(future: F, shared: Arc<Shared>) -> (TaskRef, JoinHandle<F::Output>) {
        let p = Self::allocate_with(future, shared, 2, Output::Pending);
        // SAFETY: two references were counted, one for each owner.
        let task = unsafe { TaskRef::from_raw(p.cast()) };
        // SAFETY: as above.
        let handle = unsafe { JoinHandle::from_task(p) };
        (task, handle)
    }

    /// Allocates a task nobody will join (an actor's: its end is reported
    /// through its mailbox), `RUNNING` for the queue entry the spawner
    /// pushes. As a task whose handle was dropped at once, without the
    /// handle: one reference (the entry's), and its output dropped when it
    /// completes.
    pub(crate) fn allocate_detached(future: F, shared: Arc<Shared>) -> TaskRef {
        let p = Self::allocate_with(future, shared, 1, Output::HandleGone);
        // SAFETY: one reference was counted, the queue entry's.
        unsafe { TaskRef::from_raw(p.cast()) }
    }

    /// A new task with `refs` references counted and its join state's
    /// output `output`.
    #[inline(always)]
    fn allocate_with(
        future: F,
        shared: Arc<Shared>,
        refs: usize,
        output: Output<F::Output>,
    ) -> NonNull<Self> {
        let block = Self::slab_block(&shared);
        let task = Task {
            header: Header {
                state: TaskState::new(),
                refs: AtomicUsize::new(refs),
                vtable: if block.is_some() {
                    Self::VTABLE_SLAB
                } else {
                    Self::VTABLE_BOX
                },
                registry_slot: Slot::default(),
                retained: AtomicUsize::new(0),
                shared: ManuallyDrop::new(shared),
            },
            future: FutureCell::new(future),
            join: Lock::new(JoinState {
                output,
                waker: None,
                waiters: None,
            }),
        };
        match block {
            Some(block) => {
                let p = block.cast::<Self>();
                // SAFETY: a fresh block of the slab, large and aligned
                // enough for `Self` (`slab_block`).
                unsafe { p.write(task) };
                p
            }
            None => NonNull::from(Box::leak(Box::new(task))),
        }
    }

    /// Spawns a parasite (`spawn_eager`): allocates the task, `RUNNING` for
    /// its first poll, and runs that poll here and now, on the caller's
    /// thread (module docs of `task`, "Parasites").
    ///
    /// During the inline poll the header's `shared` is a copy of `shared`
    /// that owns no count: the caller's `shared` outlives the call, and
    /// nothing drops the header's copy before the task outlives the call
    /// (it goes only with the last reference, and the run holds one until
    /// `own_runtime`, which counts it, or the fast path, which never drops
    /// it). Off a worker of `shared`'s runtime the caller is `Handle::
    /// spawn_eager`.
    pub(crate) fn spawn_eager(
        future: F,
        shared: &Arc<Shared>,
        site: schedule::EagerSite<'_>,
    ) -> JoinHandle<F::Output> {
        let block = site.alloc(std::alloc::Layout::new::<Self>());
        let (p, slab, recycled): (NonNull<Self>, _, _) = match block {
            Some(block) => (block.ptr.cast(), true, block.recycled),
            None => (
                NonNull::from(Box::leak(Box::<std::mem::MaybeUninit<Self>>::new_uninit())).cast(),
                false,
                false,
            ),
        };
        // SAFETY: a fresh block of the slab (large and aligned enough for
        // `Self`, `slab_block`) or of the system allocator, for `Self`.
        // Written in place (the future is not copied twice), and only what
        // the inline poll may reach: the header and the future. The join
        // state is touched only by the holder of `RUNNING` (us) and through
        // the handle (which does not exist yet) until the task outlives
        // the poll: it is written then (`outlive_inline_poll`), or never.
        // A block kept aside by `discard_unshared` on this worker holds
        // the header of the parasite that finished in it: all but the
        // state and the vtable are already what they must be (see there).
        unsafe {
            let t = p.as_ptr();
            (&raw mut (*t).header.state).write(TaskState::new_parasite());
            (&raw mut (*t).header.vtable).write(if slab {
                Self::VTABLE_SLAB
            } else {
                Self::VTABLE_BOX
            });
            if !recycled {
                // The run's and the handle's, as for `allocate`.
                (&raw mut (*t).header.refs).write(AtomicUsize::new(2));
                (&raw mut (*t).header.registry_slot).write(Slot::default());
                // Read by wakes from anywhere (`schedule::hint_retainer`).
                (&raw mut (*t).header.retained).write(AtomicUsize::new(0));
                // A copy that owns no count, see above.
                (&raw mut (*t).header.shared).write(ManuallyDrop::new(std::ptr::read(shared)));
            }
            (&raw mut (*t).future).write(FutureCell::new(future));
        }
        // SAFETY: just written; the run's reference keeps them alive. (No
        // `&Self` until the join state is written too.)
        let (header, cell) = unsafe { (&(*p.as_ptr()).header, &(*p.as_ptr()).future) };
        // Not registered: nothing keeps the task alive but our reference,
        // so the poll does not donate it.
        let (result, _) = schedule::inline_poll(|| Self::poll_cell(cell, p.cast(), false));
        match result {
            Some(output) => {
                // SAFETY: we hold `RUNNING`.
                let output = match unsafe { cell.drop_future() } {
                    Ok(()) => output,
                    Err(p) => Err(JoinError::Panicked(p)),
                };
                // Acquire: pairs with the Release decrement of a waker
                // clone dropped on another thread, whose uses of the task
                // then come before our reuse of its memory.
                if header.refs.load(crate::loom::Ordering::Acquire) == 2 {
                    match output {
                        Ok(output) => {
                            // Nobody else holds a reference (a waker cloned
                            // during the poll was dropped since), and nobody
                            // can make one: the task is ours alone. Taken
                            // apart with no atomic.
                            // SAFETY: ours alone; the block came from
                            // `block`.
                            unsafe { Self::discard_unshared(p, slab, &site) };
                            return JoinHandle::ready(output);
                        }
                        // A panic (rare) keeps the task, below: the ready
                        // handle holds an output, never an error, so that
                        // it stays small.
                        Err(e) => return Self::outlive_completed(p, Err(e)),
                    }
                }
                Self::outlive_completed(p, output)
            }
            None => {
                // SAFETY: we hold `RUNNING`; no handle exists yet.
                let this = unsafe { Self::outlive_inline_poll(p) };
                this.own_runtime();
                // SAFETY: the run's reference.
                let task = unsafe { TaskRef::from_raw(p.cast()) };
                // SAFETY: the handle's reference.
                let handle = unsafe { JoinHandle::from_task(p) };
                // The end of the run, registered first as in `run`.
                let end = |_: &TaskRef| this.header.state.end_run_pending();
                if let Err(task) = schedule::parasite_waits(task, end) {
                    // The runtime stopped: nobody will run it again.
                    // SAFETY: we hold `RUNNING`.
                    let output = match unsafe { this.future.drop_future() } {
                        Ok(()) => Err(JoinError::Cancelled),
                        Err(p) => Err(JoinError::Panicked(p)),
                    };
                    this.complete(output);
                    drop(task);
                }
                handle
            }
        }
    }

    /// A parasite that finished in its inline poll with `output` outlives
    /// it (a waker clone outlives the poll, or it panicked): it becomes an
    /// ordinary task that completed, and the handle joins it.
    #[cold]
    #[inline(never)]
    fn outlive_completed(
        p: NonNull<Self>,
        output: Result<F::Output, JoinError>,
    ) -> JoinHandle<F::Output> {
        // SAFETY: we hold `RUNNING`; no handle exists yet.
        let this = unsafe { Self::outlive_inline_poll(p) };
        this.own_runtime();
        this.complete(output);
        // SAFETY: the run's reference, ours.
        drop(unsafe { TaskRef::from_raw(p.cast()) });
        // SAFETY: the handle's reference.
        unsafe { JoinHandle::from_task(p) }
    }

    /// The parasite outlives its inline poll: writes the part of the task
    /// that `spawn_eager` left unwritten (the join state), before anything
    /// but the poll may reach it, and returns the whole task.
    ///
    /// # Safety
    ///
    /// `p` is a task from `spawn_eager` after its inline poll, whose run
    /// (the caller) still holds `RUNNING`, and no handle was made yet.
    unsafe fn outlive_inline_poll<'a>(p: NonNull<Self>) -> &'a Self {
        // SAFETY: the caller's contract: nobody else reads these fields
        // before the caller publishes the task (registry, queue, handle).
        unsafe {
            let t = p.as_ptr();
            (&raw mut (*t).join).write(Lock::new(JoinState {
                output: Output::Pending,
                waker: None,
                waiters: None,
            }));
            // Now whole; the run's reference keeps it alive.
            Self::from_header(p.cast())
        }
    }

    /// The task outlives `spawn_eager`'s call: its copy of the runtime's
    /// `Arc` takes a count of its own (see `spawn_eager`).
    fn own_runtime(&self) {
        std::mem::forget(Arc::clone(&self.header.shared));
        schedule::parasite_outlives_its_inline_poll(&self.header.shared);
    }

    /// Takes apart a parasite that finished inline with no other reference
    /// made: drops what is left of it but the runtime copy (which owns no
    /// count) and gives back its memory.
    ///
    /// A slab block is kept aside for this worker's next parasite
    /// (`Heap::free_eager`), which finds its header as we leave it, and
    /// writes only its state and vtable (`spawn_eager`): the rest is what
    /// that parasite would write. `refs` is 2 (our caller saw it, and
    /// nobody else can change it); the registry slot is empty and
    /// `retained` is 0 (a parasite is registered only once it outlives its
    /// inline poll, and retained only by a worker's run, which the inline
    /// poll is not); `shared` is the uncounted copy of this worker's
    /// runtime, the only runtime whose parasites use this worker's slab
    /// (`schedule::spawn_eager`).
    ///
    /// # Safety
    ///
    /// `p` is a `Task<F>` from `spawn_eager` that nobody else refers to,
    /// whose future was dropped; `slab` says where its memory came from.
    unsafe fn discard_unshared(p: NonNull<Self>, slab: bool, site: &schedule::EagerSite<'_>) {
        // Nothing to drop: the header holds nothing but plain words and
        // the uncounted runtime copy, the future cell is empty, and the
        // join state was never written.
        if slab {
            // SAFETY: from the site's slab, no longer used; the runtime
            // that owns its page is alive (our caller's `shared`).
            unsafe { site.free(p.cast(), std::alloc::Layout::new::<Self>()) };
        } else {
            // SAFETY: from `Box::new_uninit` in `spawn_eager`, for a
            // `Self`; ours alone. Freed as uninitialized memory: nothing in
            // it needs dropping (above).
            drop(unsafe { Box::from_raw(p.as_ptr().cast::<std::mem::MaybeUninit<Self>>()) });
        }
    }

    /// A block of the current worker's slab (`task_alloc.rs`) if this
    /// thread is a worker of `shared`'s runtime and the task fits; else the
    /// task goes to the system allocator. (Always the latter in builds for
    /// the AddressSanitizer, so that it checks every task's lifetime, and
    /// under loom.)
    fn slab_block(shared: &Arc<Shared>) -> Option<NonNull<u8>> {
        if cfg!(any(loom, fibra_system_alloc)) {
            return None;
        }
        schedule::alloc(shared, std::alloc::Layout::new::<Self>())
    }

    /// The vtable's `joinable`, type-erased (`task::joinable` calls it back
    /// as its own type).
    // SAFETY: a function pointer to a function pointer of another type,
    // called only as its own type (`task::joinable`).
    const JOINABLE: unsafe fn() = unsafe {
        std::mem::transmute::<
            unsafe fn(NonNull<Header>) -> NonNull<dyn Joinable<F::Output>>,
            unsafe fn(),
        >(Self::joinable)
    };

    /// The vtable's `joinable`: the task as a `dyn Joinable` of its output.
    ///
    /// # Safety
    ///
    /// `p` is a `Task<F>`'s header, with the whole allocation's provenance.
    unsafe fn joinable(p: NonNull<Header>) -> NonNull<dyn Joinable<F::Output>> {
        let task: NonNull<Self> = p.cast();
        task
    }

    const VTABLE_BOX: &'static Vtable = &Vtable {
        run: Self::run,
        shutdown: Self::shutdown,
        dealloc: Self::dealloc_box,
        joinable: Self::JOINABLE,
    };

    const VTABLE_SLAB: &'static Vtable = &Vtable {
        run: Self::run,
        shutdown: Self::shutdown,
        dealloc: Self::dealloc_slab,
        joinable: Self::JOINABLE,
    };

    /// The task behind a header pointer (one with the provenance of the
    /// whole allocation, as every `TaskRef`'s has: never one made from a
    /// `&Header`).
    ///
    /// # Safety
    ///
    /// `p` is the header of a live `Task<F>`.
    unsafe fn from_header<'a>(p: NonNull<Header>) -> &'a Self {
        // SAFETY: `repr(C)` with the header first: same address.
        unsafe { p.cast::<Self>().as_ref() }
    }

    /// The vtable's `dealloc` for a task from the system allocator.
    ///
    /// # Safety
    ///
    /// `p` is such a `Task<F>`, with no reference left.
    unsafe fn dealloc_box(p: NonNull<Header>) {
        // SAFETY: allocated by `allocate` as a `Box<Self>`; nobody refers
        // to it any more.
        let mut task = unsafe { Box::from_raw(p.cast::<Self>().as_ptr()) };
        // SAFETY: taken once, here; the field is not used again. Dropped
        // last (and even if the task's drop panics: the `Box` frees its
        // memory while unwinding, and `shared` goes with this frame).
        let _shared = unsafe { ManuallyDrop::take(&mut task.header.shared) };
        drop(task);
    }

    /// The vtable's `dealloc` for a task in a slab block.
    ///
    /// # Safety
    ///
    /// `p` is such a `Task<F>`, with no reference left.
    unsafe fn dealloc_slab(p: NonNull<Header>) {
        /// Gives the block back, then drops the runtime that owns its page:
        /// in this order, and also if the task's drop panics.
        struct GiveBack(NonNull<Header>, ManuallyDrop<Arc<Shared>>);
        impl Drop for GiveBack {
            fn drop(&mut self) {
                // SAFETY: the task was dropped (or its drop unwound): the
                // block is no longer used, and its runtime is alive
                // (`self.1`).
                unsafe { schedule::free(self.0.cast()) };
                // SAFETY: taken once, here.
                drop(unsafe { ManuallyDrop::take(&mut self.1) });
            }
        }
        let task = p.cast::<Self>().as_ptr();
        // SAFETY: nobody refers to the task any more: ours to drop. The
        // runtime is taken out first and dropped last: it owns the page.
        let shared = unsafe { ManuallyDrop::take(&mut (*task).header.shared) };
        let _give_back = GiveBack(p, ManuallyDrop::new(shared));
        // SAFETY: as above; dropped once, in place.
        unsafe { std::ptr::drop_in_place(task) };
    }

    fn complete(&self, output: Result<F::Output, JoinError>) {
        schedule::finishing(&self.header);
        // Release: the output is written (under the lock) before COMPLETE.
        let (waker, wakers, dropped) = {
            let mut j = self.join.lock();
            let dropped = match j.output {
                Output::HandleGone => Some(output),
                _ => {
                    j.output = Output::Ready(output);
                    None
                }
            };
            let mut wakers = Vec::new();
            if let Some(waiters) = &mut j.waiters {
                waiters.commit_all(&mut wakers);
            }
            (j.waker.take(), wakers, dropped)
        };
        self.header.state.complete();
        // Nobody will take it: dropped here, on a worker, the blocking pool
        // or the shutdown drain, none of which a panic of its drop may stop.
        if let Some(out) = dropped {
            crate::wake::contain(move || drop(out));
        }
        // Nobody waits if no waker is there (a join that comes later finds
        // the output). Joiners' wakers may be foreign (a tokio task
        // awaiting the handle): one that panics must not stop this thread.
        let waits = waker.is_some() || !wakers.is_empty();
        let wake_joiners =
            waits.then_some(|| crate::wake::wake_all(waker.into_iter().chain(wakers)));
        schedule::finished(&self.header, wake_joiners);
    }

    /// Polls the future once. With `donate`, the first clone of the waker
    /// made on this thread during the poll takes over the run's reference
    /// (module docs); the second result says whether that happened.
    fn poll_once(
        &self,
        me: NonNull<Header>,
        donate: bool,
    ) -> (Option<Result<F::Output, JoinError>>, bool) {
        Self::poll_cell(&self.future, me, donate)
    }

    /// [`poll_once`](Self::poll_once) of the task whose future cell is
    /// `cell` (a parasite's inline poll has no whole `&Self` yet).
    #[inline(always)]
    fn poll_cell(
        cell: &FutureCell<F>,
        me: NonNull<Header>,
        donate: bool,
    ) -> (Option<Result<F::Output, JoinError>>, bool) {
        // `me` (the run's `TaskRef`) rather than `self`: wakers made from it
        // may free the task, so it must carry the whole allocation's
        // provenance.
        let me: *const () = me.as_ptr().cast_const().cast();
        // A waker borrowing our reference: no refcount traffic per poll.
        let raw = RawWaker::new(me, &WAKER_VTABLE);
        // SAFETY: the vtable's functions treat the data pointer as a task
        // header, which it is; `ManuallyDrop` keeps this borrowed waker from
        // releasing a reference it does not own.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw) });
        let mut cx = Context::from_waker(&waker);
        // SAFETY: we hold `RUNNING`.
        let Some(fut) = (unsafe { cell.pinned() }) else {
            return (None, false);
        };
        if donate {
            DONATE.set(me);
        }
        let polled = catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx)));
        // Taken by a clone (null), or still ours: either way, no more.
        let donated = donate && DONATE.replace(std::ptr::null()).is_null();
        let result = match polled {
            Ok(Poll::Pending) => None,
            Ok(Poll::Ready(v)) => Some(Ok(v)),
            Err(payload) => Some(Err(JoinError::Panicked(payload))),
        };
        (result, donated)
    }

    /// The vtable's `run`: `task` is the popped queue entry's reference.
    ///
    /// # Safety
    ///
    /// `task` is a `Task<F>`.
    unsafe fn run(task: TaskRef) -> Option<IdleRun> {
        // SAFETY: the caller's contract.
        let this = unsafe { Self::from_header(task.0) };
        let h = &this.header;
        // The queue entry we popped owns `RUNNING`, hence the future.
        let aborted = h.state.start_run()?;
        // Registered: the registry keeps the task alive through this run,
        // so the run may donate its reference (module docs).
        let donate = schedule::is_registered(&task);
        let (result, donated) = if aborted {
            (Some(Err(JoinError::Cancelled)), false)
        } else {
            this.poll_once(task.0, donate)
        };
        if donated && result.is_some() {
            // Finishing needs a reference of our own again.
            task.take_back_reference();
        }
        match result {
            Some(output) => {
                // Drop the future before publishing completion (its drop may
                // touch resources the joiner then sees released). A panic
                // in its drop is contained like one in its poll.
                // SAFETY: we hold `RUNNING`.
                let output = match unsafe { this.future.drop_future() } {
                    Ok(()) => output,
                    Err(p) => Err(JoinError::Panicked(p)),
                };
                this.complete(output);
            }
            None => {
                // The task waits: from now on shutdown must be able to find
                // it outside the run queues. We still hold `RUNNING`, so
                // this comes before its `finished`.
                schedule::waits(&task);
                if h.state.is_quiet() {
                    // Not woken during the poll: the worker retains it,
                    // `RUNNING` and all (retained.rs), with our reference
                    // unless it was donated to a waker.
                    let run = IdleRun {
                        task: task.0,
                        owns_ref: !donated,
                    };
                    task.forget();
                    return Some(run);
                }
                // Release the future; if woken during the poll (or asked to
                // abort), go again, at the back of the queue.
                if h.state.end_run_pending() == AfterPoll::Requeue {
                    if donated {
                        // Woken during the poll, so we queue it: until then
                        // nobody else runs or completes it, and the
                        // registry's reference covers this one.
                        task.take_back_reference();
                    }
                    schedule::requeue(task);
                } else if donated {
                    // Our reference belongs to the waker clone now. `task`
                    // must not be touched any more: the task may already be
                    // running elsewhere.
                    task.forget();
                }
            }
        }
        None
    }

    /// The vtable's `shutdown`.
    ///
    /// # Safety
    ///
    /// `p` is a live `Task<F>`'s header, and no worker runs any more.
    unsafe fn shutdown(p: NonNull<Header>) {
        // SAFETY: the caller's contract.
        let this = unsafe { Self::from_header(p) };
        // SAFETY: called only after every worker stopped: nobody runs us.
        if unsafe { this.future.is_empty() } {
            return;
        }
        // A panic in the future's drop is contained as the task's outcome,
        // as on the abort path: the drain goes on with the other tasks.
        // SAFETY: as above.
        let output = match unsafe { this.future.drop_future() } {
            Ok(()) => Err(JoinError::Cancelled),
            Err(p) => Err(JoinError::Panicked(p)),
        };
        this.complete(output);
    }
}
