//! Tasks: a spawned future, its scheduling state, and its join state.
//!
//! # State word (`Task::state`)
//!
//! | bit | set by | meaning |
//! |---|---|---|
//! | `NOTIFIED` | `wake` (any thread), `spawn` | the task must be polled again: it is in a run queue, or it is running and will be requeued when its poll ends |
//! | `RUNNING` | the worker polling it | exactly one worker owns the future |
//! | `COMPLETE` | the runner (or shutdown) | the future is gone and the output is in `join` |
//! | `ABORT` | `JoinHandle::abort` | cancel at the next scheduling point |
//!
//! A wake that sets `NOTIFIED` on a task that was neither notified nor running
//! is the one (and only) party that puts it in a run queue; a wake during a
//! poll only sets the bit and the runner requeues it (at the back of the local
//! queue: a task that wakes itself yields). Wakes after `COMPLETE` do nothing.
//!
//! The future cell is touched only by the holder of `RUNNING`, or by runtime
//! shutdown after every worker has stopped.
//!
//! # Join state (`Task::join`, under its lock)
//!
//! The output (or `JoinError`) lands there once; the handle's direct `.await`
//! keeps a waker there, and `join_op` performs publish waiter records there
//! (the task's completion is a resource like a channel: completion commits
//! them all).

use super::Shared;
use super::registry::Slot;
use crate::loom::{AtomicUsize, Lock, Ordering, UnsafeCell};
use crate::op::BlockCx;
use crate::op::waiter::{Registration, WaitQueue};
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

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

/// What the scheduler sees of a task: something to poll, or to drop at
/// shutdown.
pub(crate) trait Runnable: Send + Sync + 'static {
    /// The runtime this task belongs to.
    fn shared(&self) -> &Arc<Shared>;
    /// Polls the task once (it was taken from a run queue).
    fn run(self: Arc<Self>);
    /// Drops the future and completes the task as cancelled (shutdown).
    fn shutdown(&self);
    fn id(&self) -> u64;
}

pub(crate) type TaskRef = Arc<dyn Runnable>;

struct JoinState<T> {
    output: Option<Result<T, JoinError>>,
    /// Set when the handle took the output (or was dropped): later
    /// completions drop it at once.
    handle_gone: bool,
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
    /// A new task, `NOTIFIED` (its spawner queues it).
    pub(crate) fn new() -> Self {
        Self(AtomicUsize::new(NOTIFIED))
    }

    /// Sets `NOTIFIED`; returns whether the caller must queue the task.
    ///
    /// Always a read-modify-write, never an early return on a plain load:
    /// the waker wrote the condition the task waits for (an opstate's
    /// `SYNCED`) just before, and a plain load could read a stale `NOTIFIED`
    /// while the runner, having just taken the task off its queue, misses
    /// that condition (store buffering) — a lost wake-up. With the RMW,
    /// either the runner's `start_run` comes later in the state word's
    /// order and acquires our Release (it sees the condition), or it came
    /// earlier and we see `RUNNING` without `NOTIFIED` and make it requeue.
    /// (loom model `loom_wake_racing_the_start_of_a_run_is_not_lost`.)
    pub(crate) fn notify(&self) -> bool {
        let prev = self.0.fetch_or(NOTIFIED, Ordering::AcqRel);
        prev & (NOTIFIED | RUNNING | COMPLETE) == 0
    }

    /// Requests an abort; the caller then `notify`s.
    pub(crate) fn set_abort(&self) {
        self.0.fetch_or(ABORT, Ordering::AcqRel);
    }

    /// Runner, taking the task from a queue: `NOTIFIED -> RUNNING`. Returns
    /// `None` if already complete, else whether an abort was requested.
    pub(crate) fn start_run(&self) -> Option<bool> {
        let s = self.0.fetch_xor(NOTIFIED | RUNNING, Ordering::AcqRel);
        debug_assert_eq!(
            s & (NOTIFIED | RUNNING),
            NOTIFIED,
            "run of a task not queued"
        );
        if s & COMPLETE != 0 {
            return None;
        }
        Some(s & ABORT != 0)
    }

    /// Runner, after a `Pending` poll: releases `RUNNING`.
    pub(crate) fn end_run_pending(&self) -> AfterPoll {
        let s = self.0.fetch_and(!RUNNING, Ordering::AcqRel);
        if s & NOTIFIED != 0 {
            // A wake during the poll saw RUNNING and left the queueing to us.
            return AfterPoll::Requeue;
        }
        if s & ABORT != 0 && self.notify() {
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

pub(crate) struct Task<F: Future> {
    state: TaskState,
    registry_slot: Slot,
    shared: Arc<Shared>,
    future: UnsafeCell<Option<F>>,
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
    /// A new task, already `NOTIFIED` (the spawner queues it).
    pub(crate) fn new(future: F, shared: Arc<Shared>) -> Arc<Self> {
        Arc::new(Task {
            state: TaskState::new(),
            registry_slot: Slot::default(),
            shared,
            future: UnsafeCell::new(Some(future)),
            join: Lock::new(JoinState {
                output: None,
                handle_gone: false,
                waker: None,
                waiters: None,
            }),
        })
    }

    fn wake_arc(self: Arc<Self>) {
        if self.state.notify() {
            Shared::schedule(self);
        }
    }

    pub(crate) fn abort(self: &Arc<Self>) {
        self.state.set_abort();
        self.clone().wake_arc();
    }

    fn complete(&self, output: Result<F::Output, JoinError>) {
        // Release: the output is written (under the lock) before COMPLETE.
        let (waker, wakers, dropped) = {
            let mut j = self.join.lock();
            let dropped = if j.handle_gone {
                Some(output)
            } else {
                j.output = Some(output);
                None
            };
            let mut wakers = Vec::new();
            if let Some(waiters) = &mut j.waiters {
                waiters.commit_all(&mut wakers);
            }
            (j.waker.take(), wakers, dropped)
        };
        self.state.complete();
        self.shared
            .tasks
            .remove(Runnable::id(self), &self.registry_slot);
        drop(dropped);
        if waker.is_none() && wakers.is_empty() {
            return; // nobody waits (a join that comes later finds the output)
        }
        let wake_all = || waker.into_iter().chain(wakers).for_each(Waker::wake);
        super::worker::with_current(|ctx| match ctx {
            Some(ctx) => ctx.finishing(wake_all),
            None => wake_all(),
        });
    }

    /// The future cell, for its owner (holder of `RUNNING`).
    #[allow(clippy::mut_from_ref)]
    unsafe fn future_mut(&self) -> &mut Option<F> {
        // SAFETY: the caller holds `RUNNING` or runs shutdown: exclusive.
        self.future.with_mut(|p| unsafe { &mut *p })
    }

    fn poll_once(self: &Arc<Self>) -> Option<Result<F::Output, JoinError>> {
        // A waker borrowing our reference: no refcount traffic per poll.
        let raw = RawWaker::new(Arc::as_ptr(self).cast(), waker_vtable::<F>());
        // SAFETY: the vtable's functions treat the data pointer as an
        // `Arc<Task<F>>` pointer, which it is; `ManuallyDrop` keeps this
        // borrowed waker from releasing a reference it does not own.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw) });
        let mut cx = Context::from_waker(&waker);
        // SAFETY: we hold `RUNNING`.
        let slot = unsafe { self.future_mut() };
        let fut = slot.as_mut()?;
        // SAFETY: the future lives in the task allocation and is never moved
        // out of its slot; it is dropped in place.
        let fut = unsafe { Pin::new_unchecked(fut) };
        match catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx))) {
            Ok(Poll::Pending) => None,
            Ok(Poll::Ready(v)) => Some(Ok(v)),
            Err(payload) => Some(Err(JoinError::Panicked(payload))),
        }
    }
}

impl<F> Runnable for Task<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn run(self: Arc<Self>) {
        // Take ownership of the future: NOTIFIED -> RUNNING.
        let Some(aborted) = self.state.start_run() else {
            return;
        };
        let result = if aborted {
            Some(Err(JoinError::Cancelled))
        } else {
            self.poll_once()
        };
        match result {
            Some(output) => {
                // Drop the future before publishing completion (its drop may
                // touch resources the joiner then sees released). A panic
                // in its drop is contained like one in its poll.
                // SAFETY: we hold `RUNNING`.
                let fut = unsafe { self.future_mut() }.take();
                let output = match catch_unwind(AssertUnwindSafe(move || drop(fut))) {
                    Ok(()) => output,
                    Err(p) => Err(JoinError::Panicked(p)),
                };
                self.complete(output);
            }
            None => {
                // The task waits: from now on shutdown must be able to find
                // it outside the run queues (registry.rs). We still hold
                // `RUNNING`, so this comes before any `remove`.
                if !self.registry_slot.is_registered() {
                    let me: TaskRef = self.clone();
                    self.shared.tasks.insert(me, &self.registry_slot);
                }
                // Release the future; if woken during the poll (or asked to
                // abort), go again, at the back of the queue.
                if self.state.end_run_pending() == AfterPoll::Requeue {
                    Shared::schedule_yield(self);
                }
            }
        }
    }

    fn shutdown(&self) {
        // SAFETY: called only after every worker stopped: nobody runs us.
        let fut = unsafe { self.future_mut() }.take();
        if fut.is_none() {
            return;
        }
        drop(fut);
        self.complete(Err(JoinError::Cancelled));
    }

    /// The task's address: unique among live tasks, and a task leaves the
    /// registry before its memory can be reused.
    fn id(&self) -> u64 {
        std::ptr::from_ref(self).addr() as u64
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

fn waker_vtable<F>() -> &'static RawWakerVTable
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    &RawWakerVTable::new(
        clone_waker::<F>,
        wake::<F>,
        wake_by_ref::<F>,
        drop_waker::<F>,
    )
}

unsafe fn clone_waker<F>(p: *const ()) -> RawWaker
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: `p` is an `Arc<Task<F>>` data pointer with a live reference.
    unsafe { Arc::increment_strong_count(p.cast::<Task<F>>()) };
    RawWaker::new(p, waker_vtable::<F>())
}

unsafe fn wake<F>(p: *const ())
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: an owned waker holds one reference, which we take over.
    let task = unsafe { Arc::from_raw(p.cast::<Task<F>>()) };
    task.wake_arc();
}

unsafe fn wake_by_ref<F>(p: *const ())
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: the waker holds a reference for the duration of this call;
    // we take a new one for the run queue.
    let task = unsafe {
        Arc::increment_strong_count(p.cast::<Task<F>>());
        Arc::from_raw(p.cast::<Task<F>>())
    };
    task.wake_arc();
}

unsafe fn drop_waker<F>(p: *const ())
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: an owned waker holds one reference, released here.
    unsafe { drop(Arc::from_raw(p.cast::<Task<F>>())) };
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
    fn abort(self: Arc<Self>);
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
            j.handle_gone = true;
            return Poll::Ready(out);
        }
        match &mut j.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn try_join(&self) -> Option<Result<F::Output, JoinError>> {
        let mut j = self.join.lock();
        let out = j.output.take()?;
        j.handle_gone = true;
        Some(out)
    }

    fn publish_join(&self, cx: BlockCx<'_>) -> Option<Registration> {
        let mut j = self.join.lock();
        if j.output.is_some() {
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

    fn abort(self: Arc<Self>) {
        Task::abort(&self);
    }

    fn is_finished(&self) -> bool {
        self.state.is_complete()
    }

    fn detach(&self) {
        let out = {
            let mut j = self.join.lock();
            j.handle_gone = true;
            j.waker = None;
            j.output.take()
        };
        drop(out);
    }
}
