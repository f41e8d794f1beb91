//! Tasks: a spawned future, its scheduling state, and its join state.
//!
//! # Layout
//!
//! A task is one allocation, a [`Task<F>`]: a type-erased [`Header`] first
//! (state word, reference count, vtable, registry slot, runtime), then the
//! future and the join state. What the scheduler holds is a [`TaskRef`], a
//! thin pointer to the header owning one reference; a waker's data pointer
//! is the same header pointer; a `JoinHandle` holds a `dyn Joinable`
//! pointer into the same allocation and owns one reference too.
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
//! poll (at the back of the local queue: a task that wakes itself yields).
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

use super::future_cell::FutureCell;
use super::registry::Slot;
use super::{JoinHandle, Shared};
use crate::loom::{AtomicUsize, Lock, Ordering, fence};
use crate::op::BlockCx;
use crate::op::waiter::{Registration, WaitQueue};
use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

thread_local! {
    /// The task whose run on this thread may donate its reference to the
    /// first clone of its waker (module docs), or null.
    static DONATE: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

const NOTIFIED: usize = 1;
const RUNNING: usize = 2;
const COMPLETE: usize = 4;
const ABORT: usize = 8;

/// Why a task did not produce its output.
pub enum JoinError {
    /// The task was aborted, or the runtime shut down before it finished.
    Cancelled,
    /// The task panicked; the payload is what it panicked with.
    Panicked(Box<dyn Any + Send + 'static>),
}

impl JoinError {
    /// Whether the task was cancelled (aborted or shut down).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled)
    }

    /// Whether the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, JoinError::Panicked(_))
    }

    /// The panic payload, to resume the panic with
    /// `std::panic::resume_unwind` or inspect it.
    ///
    /// # Panics
    ///
    /// If the task was cancelled rather than panicking.
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self {
            JoinError::Panicked(p) => p,
            JoinError::Cancelled => panic!("`JoinError::into_panic` on a cancelled task"),
        }
    }

    fn panic_message(&self) -> Option<&str> {
        match self {
            JoinError::Panicked(p) => p
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| p.downcast_ref::<String>().map(String::as_str)),
            JoinError::Cancelled => None,
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Cancelled => f.write_str("Cancelled"),
            JoinError::Panicked(_) => f
                .debug_tuple("Panicked")
                .field(&self.panic_message().unwrap_or("<non-string payload>"))
                .finish(),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self, self.panic_message()) {
            (JoinError::Cancelled, _) => f.write_str("task was cancelled"),
            (JoinError::Panicked(_), Some(m)) => write!(f, "task panicked: {m}"),
            (JoinError::Panicked(_), None) => f.write_str("task panicked"),
        }
    }
}

impl std::error::Error for JoinError {}

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
    fn id(&self) -> u64 {
        std::ptr::from_ref(self).addr() as u64
    }

    /// The retaining worker's token (`retained.rs`), or 0.
    pub(super) fn retained(&self) -> usize {
        // Relaxed: a hint, checked against the slot it names.
        self.retained.load(Ordering::Relaxed)
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
}

/// A task whose run ended `Pending` without a wake but kept `RUNNING`, for
/// its worker to retain (`retained.rs`) and release later
/// ([`TaskRef::release_retained`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct IdleRun {
    pub(super) task: NonNull<Header>,
    /// Whether the run's reference came along. If not, the run donated it
    /// to a waker clone, and the registry's reference keeps the task alive
    /// (it cannot complete while retained: that takes `RUNNING`).
    pub(super) owns_ref: bool,
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
pub(crate) struct TaskRef(NonNull<Header>);

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
    unsafe fn from_raw(p: NonNull<Header>) -> Self {
        Self(p)
    }

    pub(super) fn header(&self) -> &Header {
        // SAFETY: we own a reference, so the task is alive.
        unsafe { self.0.as_ref() }
    }

    /// The runtime this task belongs to.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.header().shared
    }

    pub(super) fn as_ptr(&self) -> NonNull<Header> {
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
    unsafe fn adopt_new(task: NonNull<Header>) -> TaskRef {
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

    /// A wake (by value): queues the task if it was idle, or retained by
    /// this thread's worker (`retained.rs`: no state word read-modify-write).
    fn wake(self) {
        super::worker::with_current(|ctx| {
            let this = match ctx {
                Some(ctx) => {
                    let retained = ctx.wake_retained(
                        self,
                        |t| t,
                        |t, owns_ref| {
                            if owns_ref {
                                // Ours is the entry's; the retained run's
                                // goes (never the last: ours is one more).
                                // SAFETY: the retained run's reference,
                                // handed to us.
                                drop(unsafe { TaskRef::from_raw(t.0) });
                            }
                            t
                        },
                    );
                    match retained {
                        Ok(()) => return,
                        Err(t) => t,
                    }
                }
                None => self,
            };
            if this.header().state.notify() {
                Shared::schedule_on(ctx, this);
            } else {
                this.hint_retainer();
            }
        })
    }

    /// After a wake that only set `NOTIFIED`: if a worker retains the task,
    /// asks it to release the task at its next turn (retained.rs).
    fn hint_retainer(&self) {
        // A token read as 0 while the task is in fact retained (its store
        // not visible yet) leaves the release to the slot's turn.
        let token = self.header().retained();
        if token != 0 {
            self.shared().hint_retainer(token);
        }
    }

    /// A wake by reference: as [`wake`](Self::wake), taking a reference for
    /// the queue entry only if one is needed. (The two stay separate: one
    /// function taking the waker's reference as an `Option` measured 4 to 20
    /// more instructions per round trip on the ping-pong workloads.)
    fn wake_by_ref(&self) {
        super::worker::with_current(|ctx| {
            if let Some(ctx) = ctx {
                let retained = ctx.wake_retained(
                    self,
                    |t| t,
                    |t, owns_ref| {
                        if owns_ref {
                            // SAFETY: the retained run's reference, handed
                            // to us.
                            unsafe { TaskRef::from_raw(t.0) }
                        } else {
                            t.clone()
                        }
                    },
                );
                if retained.is_ok() {
                    return;
                }
            }
            if self.header().state.notify() {
                // We hold `RUNNING` for an entry now; the task is alive (our
                // caller's waker holds a reference).
                Shared::schedule_on(ctx, self.clone());
            } else {
                self.hint_retainer();
            }
        })
    }

    /// Gives up ownership without releasing the reference (it was donated,
    /// module docs, or goes to the worker's ring of retained tasks).
    fn forget(self) {
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

/// Where the output waits for the handle.
enum Output<T> {
    /// Not finished yet, and the handle is still there.
    Pending,
    /// Finished; the handle has not taken it yet.
    Ready(Result<T, JoinError>),
    /// The handle took the output, or was dropped: a later completion
    /// drops its output at once. (One enum rather than an `Option` and a
    /// flag: the flag's padding made every task 8 bytes larger.)
    HandleGone,
}

impl<T> Output<T> {
    /// Takes a ready output; the handle is gone afterwards.
    fn take(&mut self) -> Option<Result<T, JoinError>> {
        match std::mem::replace(self, Output::HandleGone) {
            Output::Ready(out) => Some(out),
            other => {
                *self = other;
                None
            }
        }
    }
}

struct JoinState<T> {
    output: Output<T>,
    waker: Option<Waker>,
    /// `join_op` performs waiting; boxed on first use (rare next to a
    /// direct `.await`), which keeps every task 24 bytes smaller.
    waiters: Option<Box<WaitQueue<()>>>,
}

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
        let mut s = self.0.load(Ordering::Acquire);
        debug_assert!(s & RUNNING != 0, "run of a task not queued");
        if s & NOTIFIED != 0 {
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
        self.0.load(Ordering::Acquire) & COMPLETE != 0
    }
}

/// A task's allocation: the header first (`repr(C)`), so that a pointer
/// to it is a pointer to its header.
#[repr(C)]
pub(crate) struct Task<F: Future> {
    header: Header,
    future: FutureCell<F>,
    join: Lock<JoinState<F::Output>>,
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
        let block = Self::slab_block(&shared);
        let task = Task {
            header: Header {
                state: TaskState::new(),
                refs: AtomicUsize::new(2),
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
                output: Output::Pending,
                waker: None,
                waiters: None,
            }),
        };
        let p = match block {
            Some(block) => {
                let p = block.cast::<Self>();
                // SAFETY: a fresh block of the slab, large and aligned
                // enough for `Self` (`slab_block`).
                unsafe { p.write(task) };
                p
            }
            None => NonNull::from(Box::leak(Box::new(task))),
        };
        let join: NonNull<dyn Joinable<F::Output>> = p;
        // SAFETY: two references were counted, one for each owner.
        let task = unsafe { TaskRef::from_raw(p.cast()) };
        // SAFETY: as above.
        let handle = unsafe { JoinHandle::from_raw(join) };
        (task, handle)
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
        let class = super::task_alloc::class_of(std::alloc::Layout::new::<Self>())?;
        super::worker::with_current(|ctx| match ctx {
            // SAFETY: we are this worker.
            Some(ctx) if Arc::ptr_eq(&ctx.shared, shared) => unsafe { ctx.heap().alloc(class) },
            _ => None,
        })
    }

    const VTABLE_BOX: &'static Vtable = &Vtable {
        run: Self::run,
        shutdown: Self::shutdown,
        dealloc: Self::dealloc_box,
    };

    const VTABLE_SLAB: &'static Vtable = &Vtable {
        run: Self::run,
        shutdown: Self::shutdown,
        dealloc: Self::dealloc_slab,
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
                let block = self.0.cast();
                super::worker::with_current(|ctx| {
                    let here = ctx.map(super::worker::WorkerCtx::heap);
                    // SAFETY: the task was dropped (or its drop unwound):
                    // the block is no longer used, and its heap is alive
                    // (`self.1` holds the runtime); `here` is this
                    // thread's worker's heap.
                    unsafe { super::task_alloc::free(block, here) }
                });
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
        let h = &self.header;
        h.state.complete();
        h.shared.tasks.remove(h.id(), &h.registry_slot);
        // Nobody will take it: dropped here, on a worker, the blocking pool
        // or the shutdown drain, none of which a panic of its drop may stop.
        if let Some(out) = dropped {
            crate::wake::contain(move || drop(out));
        }
        if waker.is_none() && wakers.is_empty() {
            return; // nobody waits (a join that comes later finds the output)
        }
        // Joiners' wakers may be foreign (a tokio task awaiting the handle);
        // one that panics must not stop this thread.
        let wake_all = || crate::wake::wake_all(waker.into_iter().chain(wakers));
        super::worker::with_current(|ctx| match ctx {
            Some(ctx) => ctx.finishing(wake_all),
            None => wake_all(),
        });
    }

    /// Polls the future once. With `donate`, the first clone of the waker
    /// made on this thread during the poll takes over the run's reference
    /// (module docs); the second result says whether that happened.
    fn poll_once(
        &self,
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
        let Some(fut) = (unsafe { self.future.pinned() }) else {
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
        let donate = h.registry_slot.is_registered();
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
                // it outside the run queues (registry.rs). We still hold
                // `RUNNING`, so this comes before any `remove`.
                if !h.registry_slot.is_registered() {
                    h.shared.tasks.insert(task.clone(), &h.registry_slot);
                }
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
                    if super::budget::exhausted() {
                        Shared::schedule_budget_yield(task);
                    } else {
                        // Refused at shutdown: the registry's reference
                        // lets the drain cancel it.
                        let _ = Shared::schedule_yield(task);
                    }
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

impl TaskRef {
    /// After a donation (module docs): a new reference for the run, which
    /// still holds `self` (the donated one, about to be forgotten or
    /// dropped as its own).
    fn take_back_reference(&self) {
        // The task is alive (the registry holds a reference through this
        // run); the increment pairs with the drop of `self` later.
        std::mem::forget(self.clone());
    }
}

/// The waker of every task: its data pointer is the task's header, and an
/// owned waker holds one reference.
static WAKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(clone_waker, wake, wake_by_ref, drop_waker);

/// The reference a waker's data pointer stands for, without taking it over.
///
/// # Safety
///
/// `p` is a task header with a live reference held by the caller.
unsafe fn borrowed(p: *const ()) -> ManuallyDrop<TaskRef> {
    // SAFETY: non-null (a header), and `ManuallyDrop` keeps the count as is.
    ManuallyDrop::new(unsafe { TaskRef::from_raw(NonNull::new_unchecked(p.cast_mut().cast())) })
}

unsafe fn clone_waker(p: *const ()) -> RawWaker {
    // The first clone during a donating run takes over the run's reference
    // (module docs): no new one.
    if DONATE.get() == p {
        DONATE.set(std::ptr::null());
    } else {
        // SAFETY: the waker we clone holds a reference.
        std::mem::forget(TaskRef::clone(&*unsafe { borrowed(p) }));
    }
    RawWaker::new(p, &WAKER_VTABLE)
}

unsafe fn wake(p: *const ()) {
    // SAFETY: an owned waker holds one reference, which we take over.
    ManuallyDrop::into_inner(unsafe { borrowed(p) }).wake();
}

unsafe fn wake_by_ref(p: *const ()) {
    // SAFETY: the waker holds a reference for the duration of this call.
    unsafe { borrowed(p) }.wake_by_ref();
}

unsafe fn drop_waker(p: *const ()) {
    // SAFETY: an owned waker holds one reference, released here.
    drop(ManuallyDrop::into_inner(unsafe { borrowed(p) }));
}

/// What a `JoinHandle` needs of its task, with the future's type erased.
pub(crate) trait Joinable<T>: Send + Sync {
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>>;
    /// The output if complete (taken).
    fn try_join(&self) -> Option<Result<T, JoinError>>;
    /// Publishes a join waiter; `None` if already complete (then the perform
    /// committed itself).
    fn publish_join(&self, cx: BlockCx<'_>) -> Option<Registration>;
    fn withdraw_join(&self, reg: Registration);
    fn is_finished(&self) -> bool;
    fn detach(&self);
}

impl<F> Joinable<F::Output> for Task<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<F::Output, JoinError>> {
        let mut j = self.join.lock();
        if let Some(out) = j.output.take() {
            return Poll::Ready(out);
        }
        // Taken by a `join_op` of this handle: it would never come.
        assert!(
            !matches!(j.output, Output::HandleGone),
            "`JoinHandle` awaited after a `join_op` took the task's output (join a task once)"
        );
        match &mut j.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn try_join(&self) -> Option<Result<F::Output, JoinError>> {
        self.join.lock().output.take()
    }

    fn publish_join(&self, cx: BlockCx<'_>) -> Option<Registration> {
        let mut j = self.join.lock();
        // Taken by another join of this handle: it would never come.
        assert!(
            !matches!(j.output, Output::HandleGone),
            "`join_op` performed after another join took the task's output (join a task once)"
        );
        if matches!(j.output, Output::Ready(_)) {
            if cx.state.claim().is_ok() {
                cx.state.commit_own(cx.leaf);
            }
            return None;
        }
        Some(j.waiters.get_or_insert_default().publish(cx, &()))
    }

    fn withdraw_join(&self, reg: Registration) {
        if let Some(waiters) = &mut self.join.lock().waiters {
            waiters.remove(reg);
        }
    }

    fn is_finished(&self) -> bool {
        self.header.state.is_complete()
    }

    fn detach(&self) {
        let out = {
            let mut j = self.join.lock();
            j.waker = None;
            std::mem::replace(&mut j.output, Output::HandleGone)
        };
        drop(out);
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

#[cfg(all(test, not(loom)))]
mod tests {
    //! The run's reference donation (module docs) must keep every count
    //! exact: a task's memory (which holds the runtime's `Shared`) is freed
    //! once all its references are gone, and never before (the latter is
    //! what the AddressSanitizer run of the whole suite checks).

    use crate::Runtime;
    use std::future::poll_fn;
    use std::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};

    /// Runs `f` on both flavours and checks that, once the runtime and
    /// everything `f` returns are dropped, nothing holds the runtime's
    /// shared state: no task reference leaked.
    fn no_reference_leaks(f: impl Fn(&Runtime) -> Vec<Waker>) {
        for rt in [
            Runtime::builder().current_thread().build().unwrap(),
            Runtime::builder().workers(2).build().unwrap(),
        ] {
            let shared = Arc::downgrade(&rt.shared);
            let stashed = f(&rt);
            drop(rt);
            drop(stashed);
            assert!(
                shared.upgrade().is_none(),
                "a task reference leaked (the runtime's shared state is still alive)"
            );
        }
    }

    /// Waits `n` times on a rendezvous channel, each wait cloning the
    /// waker into a record: from the second run on, every run donates.
    #[test]
    fn donated_references_of_waiting_tasks_are_all_returned() {
        no_reference_leaks(|rt| {
            let (tx, rx) = crate::channel::<u32>();
            let sum = rt.block_on(async move {
                let rx_task = crate::spawn(async move {
                    let mut sum = 0;
                    while let Ok(v) = rx.recv().await {
                        sum += v;
                    }
                    sum
                });
                for i in 0..1000 {
                    tx.send(i).await.unwrap();
                }
                drop(tx);
                rx_task.await.unwrap()
            });
            assert_eq!(sum, 999 * 1000 / 2);
            Vec::new()
        });
    }

    /// Runs that could donate but clone no waker (a task woken again and
    /// again through one clone kept elsewhere) keep their reference.
    #[test]
    fn runs_that_clone_no_waker_keep_their_reference() {
        no_reference_leaks(|rt| {
            let polls = rt.block_on(async {
                let kept: Arc<Mutex<Option<Waker>>> = Arc::default();
                let waker_slot = kept.clone();
                let target = crate::spawn(async move {
                    let mut polls = 0;
                    poll_fn(|cx| {
                        polls += 1;
                        if polls == 1 {
                            *waker_slot.lock().unwrap() = Some(cx.waker().clone());
                        }
                        if polls == 100 {
                            return Poll::Ready(polls);
                        }
                        Poll::Pending
                    })
                    .await
                });
                let waker = loop {
                    if let Some(w) = kept.lock().unwrap().take() {
                        break w;
                    }
                    crate::yield_now().await;
                };
                while !target.is_finished() {
                    waker.wake_by_ref();
                    crate::yield_now().await;
                }
                target.await.unwrap()
            });
            assert_eq!(polls, 100);
            Vec::new()
        });
    }

    /// A poll that clones its waker and wakes it (by value) before
    /// returning `Pending`: the donated clone is consumed during the run,
    /// which must then queue the task with a reference of its own.
    #[test]
    fn a_task_woken_by_its_donated_clone_during_the_poll_is_requeued() {
        no_reference_leaks(|rt| {
            let polls = rt.block_on(async {
                crate::spawn(async {
                    let mut polls = 0;
                    poll_fn(|cx| {
                        polls += 1;
                        if polls == 50 {
                            return Poll::Ready(polls);
                        }
                        // The clone is the point: it takes the donation.
                        #[allow(clippy::waker_clone_wake)]
                        cx.waker().clone().wake();
                        Poll::Pending
                    })
                    .await
                })
                .await
                .unwrap()
            });
            assert_eq!(polls, 50);
            Vec::new()
        });
    }

    /// A poll that keeps a clone of its waker and then finishes (or
    /// panics): the run takes a reference back to complete, and the clone
    /// still holds its own (dropped after the runtime here).
    #[test]
    fn a_task_that_finishes_after_a_donation_keeps_counts_exact() {
        no_reference_leaks(|rt| {
            let stash = Arc::new(Mutex::new(Vec::new()));
            for panics in [false, true] {
                let stash = stash.clone();
                let out = rt.block_on(async move {
                    crate::spawn(async move {
                        // Wait once so the task registers; from then on
                        // its runs donate.
                        crate::yield_now().await;
                        let (tx, rx) = crate::channel::<()>();
                        let waiter = crate::spawn(async move { rx.recv().await });
                        crate::yield_now().await;
                        poll_fn(|cx| {
                            stash.lock().unwrap().push(cx.waker().clone());
                            Poll::Ready(())
                        })
                        .await;
                        tx.send(()).await.unwrap();
                        waiter.await.unwrap().unwrap();
                        assert!(!panics, "a panic after a donation");
                    })
                    .await
                });
                assert_eq!(out.is_err(), panics);
            }
            std::mem::take(&mut *stash.lock().unwrap())
        });
    }
}
