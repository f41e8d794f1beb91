//! `JoinHandle`: await a task's output, use its completion in a choice,
//! abort it, or detach it by dropping the handle.

use super::task::{self, Joinable};
use crate::loom::{AtomicUsize, Ordering};
use crate::op::waiter::Registration;
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::ptr::NonNull;
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
    inner: Inner<T>,
}

/// A word-sized tag and word-sized fields: a handle moves as whole words
/// (with a byte tag and byte flags, the compiler copied a returned handle
/// piece by piece, about 40 instructions per parasite's spawn).
#[repr(usize)]
enum Inner<T> {
    /// Owns one of the task's references (released on drop). `done`
    /// (0 or 1): the join completed.
    Task {
        task: NonNull<dyn Joinable<T>>,
        done: usize,
    },
    /// A parasite ([`spawn_eager`](super::spawn_eager)) that finished in
    /// its inline first poll: the output, no task.
    Ready(ReadyOutput<T>),
}

// SAFETY: the handle owns a reference to a task, which is `Send + Sync`
// (`Joinable: Send + Sync`), or a finished output; the output it takes out
// is a `T: Send`.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reaches `&dyn Joinable<T>`, which is `Sync`;
// the output moves out through it only under the task's join lock, or
// (a ready output) through `ReadyOutput`'s claim.
unsafe impl<T: Send> Sync for JoinHandle<T> {}
// The output is never pinned: it moves out to the join.
impl<T> Unpin for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// # Safety
    ///
    /// `task` is a live task whose reference the caller hands over.
    pub(crate) unsafe fn from_raw(task: NonNull<dyn Joinable<T>>) -> Self {
        Self {
            inner: Inner::Task { task, done: 0 },
        }
    }

    /// The handle of a parasite that finished inline with `output`.
    pub(crate) fn ready(output: Result<T, JoinError>) -> Self
    where
        T: Send,
    {
        Self {
            inner: Inner::Ready(ReadyOutput::new(output)),
        }
    }

    fn task(&self) -> &dyn Joinable<T> {
        match &self.inner {
            // SAFETY: we own a reference: the task is alive.
            Inner::Task { task, .. } => unsafe { task.as_ref() },
            Inner::Ready(out) => out,
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
        if let Inner::Task { task, .. } = &self.inner {
            // SAFETY: the handle holds a reference; `task` points at the
            // task's allocation, header first (`repr(C)`), with its
            // provenance.
            unsafe { task::abort(task.cast()) };
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
        self.task().is_finished()
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
            task: self.task(),
            published: None,
            _pinned: PhantomPinned,
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().inner {
            Inner::Task { task, done } => {
                assert!(*done == 0, "`JoinHandle` polled after it completed");
                // SAFETY: we own a reference: the task is alive.
                let out = std::task::ready!(unsafe { task.as_ref() }.poll_join(cx));
                *done = 1;
                Poll::Ready(out)
            }
            Inner::Ready(out) => Poll::Ready(out.take_mut().expect(
                "`JoinHandle` polled after it completed (or after a `join_op` took the output)",
            )),
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    #[inline]
    fn drop(&mut self) {
        if let Inner::Task { task, done } = &self.inner {
            // SAFETY: the handle's reference, given up here, once.
            unsafe { release_task(*task, *done != 0) };
        }
        // A ready output drops with the handle.
    }
}

/// The drop of a handle that holds a task's reference `task` (`done`: its
/// join completed). Out of line: a parasite's ready handle, the common
/// drop after an inline finish, needs none of it.
///
/// # Safety
///
/// The caller owns the handle's reference to the live task `task`, and
/// gives it up.
#[inline(never)]
unsafe fn release_task<T>(task: NonNull<dyn Joinable<T>>, done: bool) {
    {
        /// Releases the handle's reference, even if dropping the output
        /// (user code) panics.
        struct Release(NonNull<task::Header>);
        impl Drop for Release {
            fn drop(&mut self) {
                // SAFETY: the handle's reference, released once; the
                // pointer has the allocation's provenance (see `abort`).
                unsafe { task::release(self.0) };
            }
        }
        let _release = Release(task.cast());
        // After a completed join the output is gone and the task knows the
        // handle took it: nothing to detach.
        if !done {
            // SAFETY: we own a reference: the task is alive.
            unsafe { task.as_ref() }.detach();
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let finished = match &self.inner {
            // SAFETY: we own a reference: the task is alive.
            Inner::Task { task, .. } => unsafe { task.as_ref() }.is_finished(),
            Inner::Ready(_) => true,
        };
        f.debug_struct("JoinHandle")
            .field("finished", &finished)
            .finish()
    }
}

/// The output of a parasite that finished in its inline first poll, in its
/// handle. A direct `.await` takes it through `&mut`, with no atomic; a
/// `join_op` (through `&JoinHandle`, which may be shared between threads)
/// claims it first with `taken`, so that one join takes it.
struct ReadyOutput<T> {
    output: std::cell::UnsafeCell<Option<Result<T, JoinError>>>,
    /// 0 or 1: a word, as `Inner`'s fields.
    taken: AtomicUsize,
}

// SAFETY: built only for `T: Send` (`JoinHandle::ready`); the output moves
// to the one join that claims it (`claim`), or out through `&mut`.
unsafe impl<T> Sync for ReadyOutput<T> {}
// SAFETY: as above.
unsafe impl<T> Send for ReadyOutput<T> {}

impl<T> ReadyOutput<T> {
    fn new(output: Result<T, JoinError>) -> Self {
        Self {
            output: std::cell::UnsafeCell::new(Some(output)),
            taken: AtomicUsize::new(0),
        }
    }

    /// Takes the output through the handle's `&mut` (a direct `.await`).
    /// The claim flag is left alone: a later `join_op` wins it and finds
    /// the cell empty, as it would after another claim.
    #[inline]
    fn take_mut(&mut self) -> Option<Result<T, JoinError>> {
        self.output.get_mut().take()
    }

    /// Takes the output through `&self` (a `join_op`): the one join whose
    /// claim succeeds.
    fn claim(&self) -> Option<Result<T, JoinError>> {
        // Relaxed load first: a join that lost needs no RMW. Acquire on
        // the swap: a claim on another thread than the one that made the
        // handle sees the output (the handle's move there ordered it too).
        if self.taken.load(Ordering::Relaxed) != 0 || self.taken.swap(1, Ordering::Acquire) != 0 {
            return None;
        }
        // SAFETY: the claim above is won once: we are the only one to
        // touch the cell through `&self`, and `&mut self` users cannot
        // coexist with this borrow.
        unsafe { (*self.output.get()).take() }
    }
}

impl<T> Joinable<T> for ReadyOutput<T> {
    fn poll_join(&self, _cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        Poll::Ready(
            self.claim()
                .expect("`JoinHandle` joined after another join took the output (join once)"),
        )
    }

    fn try_join(&self) -> Option<Result<T, JoinError>> {
        self.claim()
    }

    fn publish_join(&self, cx: BlockCx<'_>) -> Option<Registration> {
        // Joinable at once: commit our own perform (its `finish` claims).
        if cx.state.claim().is_ok() {
            cx.state.commit_own(cx.leaf);
        }
        None
    }

    fn withdraw_join(&self, _reg: Registration) {}

    fn is_finished(&self) -> bool {
        true
    }

    fn detach(&self) {}
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
    task: &'a dyn Joinable<T>,
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

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        self.task.try_join()
    }

    fn block(mut self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let reg = self.task.publish_join(cx);
        *self.as_mut().published() = reg;
    }

    fn finish(mut self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        *self.as_mut().published() = None;
        self.task.try_join().expect(
            "the task's output went to another join of this `JoinHandle` (join a task once)",
        )
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        *self.published() = None;
    }

    fn withdraw(mut self: Pin<&mut Self>) {
        if let Some(reg) = self.as_mut().published().take() {
            self.task.withdraw_join(reg);
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
