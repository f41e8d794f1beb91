//! `JoinHandle`: await a task's output, use its completion in a choice,
//! abort it, or detach it by dropping the handle.

use super::task::{self, Header, Joinable, Task};
use crate::op::waiter::Registration;
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::any::Any;
use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::task::{Context, Poll};

/// An owned permission to join a task: `.await` it for the task's output,
/// or use [`JoinHandle::join_op`] in a choice. Dropping the handle detaches
/// the task (it keeps running; its output is dropped).
///
/// A task that panics yields [`JoinError::Panicked`]; an aborted one (or one
/// dropped by runtime shutdown) yields [`JoinError::Cancelled`].
///
/// ```
/// fibra::run(async {
///     let h = fibra::spawn(async { panic!("boom") });
///     let err = h.await.unwrap_err();
///     assert!(err.is_panic());
///     // The runtime keeps running.
///     assert_eq!(fibra::spawn(async { 1 }).await.unwrap(), 1);
/// });
/// ```
pub struct JoinHandle<T> {
    /// What the handle holds: a task's header, whose reference it owns
    /// (with [`JOINED`] set once a direct `.await` took the output), or
    /// [`READY`] or [`TAKEN`], small addresses no header has (headers are
    /// non-null and word-aligned), for a parasite's output in `output`.
    /// Changed through `&mut self` by plain writes, or from [`READY`] to
    /// [`TAKEN`] through `&self` by the one join that claims a ready output,
    /// atomically ([`JoinHandle::claim`]). Plain fields (not an atomic, not
    /// a union with the output) make a `JoinHandle<T>` of a word-sized `T`
    /// a pair of scalars, which the compiler keeps in registers: a handle
    /// returned by `spawn_eager` and awaited at once is not copied through
    /// memory in pieces wider than it was written (a stalled load each).
    state: UnsafeCell<*mut Header>,
    /// The parasite's output while the state is [`READY`]; else nothing.
    output: UnsafeCell<MaybeUninit<T>>,
}

/// Set in a task's header address: a direct `.await` took the output.
const JOINED: usize = 1;
/// No task: `output` holds the output of a parasite
/// ([`spawn_eager`](super::spawn_eager)) that finished in its inline first
/// poll.
const READY: usize = 2;
/// As [`READY`], and a join took the output: `output` holds nothing.
const TAKEN: usize = 4;
/// Below this, a state is [`READY`] or [`TAKEN`], not an address.
const NOT_A_TASK: usize = 8;

// SAFETY: the handle owns a reference to a task, which is `Send + Sync`
// (`Joinable: Send + Sync`), or a finished output, a `T: Send` (a handle
// holding an output is made only for one, `JoinHandle::ready`); the output
// it takes out is a `T: Send`.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reaches `&dyn Joinable<T>`, which is `Sync`;
// the output moves out through it only under the task's join lock, or (a
// ready output) to the one join that claims it (`claim`).
unsafe impl<T: Send> Sync for JoinHandle<T> {}
// The output is never pinned: it moves out to the join.
impl<T> Unpin for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// # Safety
    ///
    /// `task` is a live task whose reference the caller hands over.
    pub(crate) unsafe fn from_task<F>(task: NonNull<Task<F>>) -> Self
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        Self {
            state: UnsafeCell::new(task.as_ptr().cast()),
            output: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The handle of a parasite that finished inline with `output`.
    #[inline]
    pub(crate) fn ready(output: T) -> Self
    where
        T: Send,
    {
        Self {
            state: UnsafeCell::new(std::ptr::without_provenance_mut(READY)),
            output: UnsafeCell::new(MaybeUninit::new(output)),
        }
    }

    /// The state as an atomic, for reads and the claim through `&self`.
    #[inline]
    fn state(&self) -> &AtomicPtr<Header> {
        // SAFETY: a `*mut Header` in an `UnsafeCell`, of an `AtomicPtr`'s
        // size and alignment, and while `&self` lives it is accessed only
        // atomically (plain accesses need `&mut self`). (Not loom's atomic:
        // loom models do not race two joins of one handle, which only
        // `join_op`s through a shared handle could.)
        unsafe { AtomicPtr::from_ptr(self.state.get()) }
    }

    /// The task's header, if the handle holds a task.
    #[inline]
    fn header(&self) -> Option<NonNull<Header>> {
        // Relaxed: a task's state is set when the handle is made and
        // changes only through `&mut self`.
        task_of(self.state().load(Ordering::Relaxed))
    }

    /// The task as a `dyn Joinable`, if the handle holds one.
    fn task(&self) -> Option<&dyn Joinable<T>> {
        // SAFETY: a task's header, whose output type is `T` (`from_task`);
        // we own a reference: the task is alive while `self` is borrowed.
        self.header()
            .map(|p| unsafe { task::joinable::<T>(p).as_ref() })
    }

    /// Takes a ready output through `&self` (a `join_op`): the one join
    /// whose claim succeeds. `None` if the handle holds a task, or another
    /// join took the output.
    fn claim(&self) -> Option<T> {
        let state = self.state();
        let ready = std::ptr::without_provenance_mut(READY);
        // Relaxed load first: a join that lost needs no RMW. Acquire on
        // the swap: a claim on another thread than the one that made the
        // handle sees the output (the handle's move there ordered it too).
        if state.load(Ordering::Relaxed) != ready
            || state
                .compare_exchange(
                    ready,
                    std::ptr::without_provenance_mut(TAKEN),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return None;
        }
        // SAFETY: the claim above is won once: we are the only one to
        // read the output, which the state said was there, and no `&mut
        // self` user coexists with this borrow.
        Some(unsafe { (*self.output.get()).assume_init_read() })
    }

    /// The output if the join can complete now (a task's, taken; a ready
    /// output, claimed).
    fn try_join(&self) -> Option<Result<T, JoinError>> {
        match self.task() {
            Some(task) => task.try_join(),
            None => self.claim().map(Ok),
        }
    }

    /// Asks the task to stop: it is dropped at its next scheduling point
    /// (it is not interrupted mid-poll) and joins as
    /// [`JoinError::Cancelled`], unless it finished first.
    ///
    /// ```
    /// fibra::run(async {
    ///     let (_tx, rx) = fibra::channel::<()>();
    ///     let h = fibra::spawn(async move { rx.recv().await });
    ///     h.abort();
    ///     assert!(h.await.unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn abort(&self) {
        if let Some(p) = self.header() {
            // SAFETY: the handle holds a reference; the header pointer has
            // the allocation's provenance (`from_task`).
            unsafe { task::abort(p) };
        }
    }

    /// Whether the task has finished (output ready, panicked or cancelled).
    ///
    /// ```
    /// fibra::run(async {
    ///     let h = fibra::spawn(async {});
    ///     while !h.is_finished() {
    ///         fibra::yield_now().await;
    ///     }
    /// });
    /// ```
    pub fn is_finished(&self) -> bool {
        self.task().is_none_or(|task| task.is_finished())
    }

    /// The op of joining the task, for choices.
    ///
    /// A task has one output: the first join to commit (this op, or
    /// awaiting the handle) takes it, and joining the same handle again
    /// after that panics.
    ///
    /// ```
    /// use fibra::{Op, choose};
    ///
    /// fibra::run(async {
    ///     let (tx, rx) = fibra::channel::<u32>();
    ///     let worker = fibra::spawn(async { 10 });
    ///     let first = choose((
    ///         worker.join_op().wrap(|r| r.unwrap()),
    ///         rx.recv_op().wrap(|r| r.unwrap()),
    ///     ))
    ///     .await;
    ///     assert_eq!(first, 10);
    ///     drop(tx);
    /// });
    /// ```
    pub fn join_op(&self) -> JoinOp<'_, T> {
        JoinOp {
            handle: self,
            published: None,
            _pinned: PhantomPinned,
        }
    }
}

/// The task a handle's state names, if it names one (the [`JOINED`] bit
/// cleared).
#[inline]
fn task_of(state: *mut Header) -> Option<NonNull<Header>> {
    if state.addr() < NOT_A_TASK {
        return None;
    }
    NonNull::new(state.map_addr(|a| a & !JOINED))
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let state = this.state.get_mut();
        match state.addr() {
            READY => {
                *state = std::ptr::without_provenance_mut(TAKEN);
                // SAFETY: the state said the output was there; it says now
                // that it is not, so it is read once.
                Poll::Ready(Ok(unsafe { this.output.get_mut().assume_init_read() }))
            }
            TAKEN => panic!(
                "`JoinHandle` polled after it completed (or after a `join_op` took the output)"
            ),
            a if a & JOINED != 0 => panic!("`JoinHandle` polled after it completed"),
            _ => {
                // SAFETY: the state is a task's header (an address, not
                // joined), of output type `T`; we own a reference: the task
                // is alive.
                let task = unsafe { task::joinable::<T>(NonNull::new_unchecked(*state)).as_ref() };
                let out = std::task::ready!(task.poll_join(cx));
                *state = state.map_addr(|a| a | JOINED);
                Poll::Ready(out)
            }
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    #[inline]
    fn drop(&mut self) {
        let state = *self.state.get_mut();
        match task_of(state) {
            // SAFETY: the state names a task, of output type `T`; the
            // handle's reference, given up here, once.
            Some(task) => unsafe { release_task::<T>(task, state.addr() & JOINED != 0) },
            // SAFETY: the state says the output is there, dropped once,
            // here.
            None if state.addr() == READY => unsafe { self.output.get_mut().assume_init_drop() },
            None => {}
        }
    }
}

/// The drop of a handle that holds a task's reference `task` (`done`: its
/// join completed). Out of line: a parasite's ready handle, the common
/// drop after an inline finish, needs none of it.
///
/// # Safety
///
/// The caller owns the handle's reference to the live task `task`, whose
/// output type is `T`, and gives it up.
#[inline(never)]
unsafe fn release_task<T>(task: NonNull<Header>, done: bool) {
    {
        /// Releases the handle's reference, even if dropping the output
        /// (user code) panics.
        struct Release(NonNull<Header>);
        impl Drop for Release {
            fn drop(&mut self) {
                // SAFETY: the handle's reference, released once; the
                // pointer has the allocation's provenance (`from_task`).
                unsafe { task::release(self.0) };
            }
        }
        let _release = Release(task);
        // After a completed join the output is gone and the task knows the
        // handle took it: nothing to detach.
        if !done {
            // SAFETY: the caller's contract: a live task of output `T`.
            unsafe { task::joinable::<T>(task).as_ref() }.detach();
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// The op of joining a task: made by [`JoinHandle::join_op`].
///
/// If its perform is dropped after the task finished, the output stays with
/// the handle for the next join.
///
/// ```
/// use fibra::{Op, select, time::after};
/// use std::time::Duration;
///
/// fibra::run(async {
///     let task = fibra::spawn(async { 42 });
///     let got = select! {
///         r = task.join_op() => r.unwrap(),
///         () = after(Duration::from_secs(5)) => panic!("timed out"),
///     };
///     assert_eq!(got, 42);
/// });
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct JoinOp<'a, T> {
    handle: &'a JoinHandle<T>,
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl<T> JoinOp<'_, T> {
    fn published(self: Pin<&mut Self>) -> &mut Option<Registration> {
        // SAFETY: `published` is not structurally pinned.
        unsafe { &mut self.get_unchecked_mut().published }
    }
}

impl<T> Sealed for JoinOp<'_, T> {}

impl<T> Op for JoinOp<'_, T> {
    type Output = Result<T, JoinError>;

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        self.handle.try_join()
    }

    fn block(mut self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let reg = match self.handle.task() {
            Some(task) => task.publish_join(cx),
            None => {
                // A ready output (or one another join took): joinable at
                // once, so commit our own perform; its `finish` claims.
                if cx.state.claim().is_ok() {
                    cx.state.commit_own(cx.leaf);
                }
                None
            }
        };
        *self.as_mut().published() = reg;
    }

    fn finish(mut self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        *self.as_mut().published() = None;
        self.handle.try_join().expect(
            "the task's output went to another join of this `JoinHandle` (join a task once)",
        )
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        *self.published() = None;
    }

    fn withdraw(mut self: Pin<&mut Self>) {
        if let Some(reg) = self.as_mut().published().take() {
            // A registration was published only with a task.
            if let Some(task) = self.handle.task() {
                task.withdraw_join(reg);
            }
        }
    }
}

crate::op::op_into_future! {
    impl['a, T] JoinOp<'a, T>;
}

/// Why a task did not produce its output.
///
/// ```
/// use fibra::JoinError;
///
/// fibra::run(async {
///     let crashed = fibra::spawn(async { panic!("boom") });
///     match crashed.await {
///         Err(JoinError::Panicked(payload)) => {
///             assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
///         }
///         other => panic!("{other:?}"),
///     }
///     let (_tx, rx) = fibra::channel::<()>();
///     let stuck = fibra::spawn(async move { rx.recv().await });
///     stuck.abort();
///     assert!(matches!(stuck.await, Err(JoinError::Cancelled)));
/// });
/// ```
pub enum JoinError {
    /// The task was aborted, or the runtime shut down before it finished.
    Cancelled,
    /// The task panicked; the payload is what it panicked with.
    Panicked(Box<dyn Any + Send + 'static>),
}

impl JoinError {
    /// Whether the task was cancelled (aborted or shut down).
    ///
    /// ```
    /// fibra::run(async {
    ///     let (_tx, rx) = fibra::channel::<()>();
    ///     let h = fibra::spawn(async move { rx.recv().await });
    ///     h.abort();
    ///     let err = h.await.unwrap_err();
    ///     assert!(err.is_cancelled() && !err.is_panic());
    /// });
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled)
    }

    /// Whether the task panicked.
    ///
    /// ```
    /// fibra::run(async {
    ///     let err = fibra::spawn(async { panic!("boom") }).await.unwrap_err();
    ///     assert!(err.is_panic() && !err.is_cancelled());
    /// });
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, JoinError::Panicked(_))
    }

    /// The panic payload, to resume the panic with
    /// `std::panic::resume_unwind` or inspect it.
    ///
    /// # Panics
    ///
    /// If the task was cancelled rather than panicking.
    ///
    /// ```
    /// fibra::run(async {
    ///     let err = fibra::spawn(async { panic!("boom") }).await.unwrap_err();
    ///     let payload = err.into_panic();
    ///     assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    ///     // or: std::panic::resume_unwind(payload) to carry the panic on
    /// });
    /// ```
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
