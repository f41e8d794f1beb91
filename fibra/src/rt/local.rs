//! `LocalSet` and `spawn_local`: tasks whose futures are not `Send`, run on
//! one thread only.
//!
//! fibra's workers hand tasks to each other (stealing, the rescue of a
//! stuck worker's tasks, a wake moving a task to the waker's worker), so a
//! `!Send` future cannot be an ordinary task. Instead a [`LocalSet`] is a
//! small executor of its own, driven by whoever polls its
//! [`run_until`](LocalSet::run_until) future on the thread that owns it:
//! [`Runtime::block_on_local`](super::Runtime::block_on_local) on a
//! current-thread runtime (where the calling thread is also the runtime's
//! worker, so local tasks run beside ordinary ones), [`fibra::block_on`](crate::block_on)
//! on an OS thread, or another executor's `block_on`. Its tasks never
//! leave that thread.
//!
//! # Invariants
//!
//! * A local task's future is touched (polled, dropped) only on the
//!   thread that owns its set: by the set's `run_until` poll, or by the
//!   set's drop. `LocalSet` is `!Send`, so both happen on the thread that
//!   made it; the set holds a reference to each live task, so the last
//!   reference to a task whose future is still there is never a waker on
//!   another thread.
//! * Wakers may be woken anywhere: a wake sets the task's `queued` flag
//!   (an RMW: whoever turns it on pushes the task, once) and pushes it on
//!   the set's run queue, under the queue's lock, then wakes the driver
//!   (the waker of the last `run_until` poll). The set clears `queued`
//!   with an RMW before it polls the task, so a wake during the poll queues
//!   it again, and the poll sees what the waker did before the wake.
//! * No waker is woken while a lock is held.

use super::JoinError;
use super::join_set::CatchUnwind;
use crate::loom::{AtomicBool, Lock, Ordering};
use crate::op::{BlockCx, Op, sealed::Sealed};
use crate::sync::{GetRefOp, IVar};
use pin_project_lite::pin_project;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};

/// Local tasks polled per `run_until` poll, before it yields to its
/// executor (so a set whose tasks keep waking each other cannot starve
/// the executor's other work, or the main future).
const BUDGET: usize = 128;

crate::loom::thread_local! {
    /// The set whose `run_until` is being polled on this thread, for
    /// `spawn_local`.
    static CURRENT: Cell<*const Inner> = const { Cell::new(std::ptr::null()) };
}

/// A set of tasks that run on one thread, for futures that are not `Send`
/// (tokio's `LocalSet`). Spawn into it with [`spawn_local`] (inside
/// [`run_until`](LocalSet::run_until)) or [`LocalSet::spawn_local`]; its
/// tasks run while its [`run_until`](LocalSet::run_until) future is
/// polled, on the thread that owns the set, and never move.
///
/// Dropping the set drops every task still in it (on its thread); their
/// [`LocalJoinHandle`]s then yield [`JoinError::Cancelled`].
///
/// # Examples
///
/// ```
/// use fibra::{LocalSet, spawn_local};
/// use std::rc::Rc;
///
/// let local = LocalSet::new();
/// let shared = Rc::new(5); // not `Send`
/// let got = fibra::block_on(local.run_until(async {
///     let shared2 = shared.clone();
///     spawn_local(async move { *shared2 * 2 }).await.unwrap()
/// }));
/// assert_eq!(got, 10);
/// ```
pub struct LocalSet {
    inner: Rc<Inner>,
}

struct Inner {
    queue: Arc<Queue>,
    /// Every live task, by id: the set's references (module invariants).
    tasks: RefCell<HashMap<u64, Arc<LocalTask>>>,
    next_id: Cell<u64>,
    /// Set while `run_ready` polls: a nested `run_until` of the same set
    /// (a task blocking on it) polls no task, so no future is polled while
    /// its own poll runs.
    running: Cell<bool>,
}

/// The part of a set that wakers reach, from any thread.
struct Queue {
    runnable: Lock<VecDeque<Arc<LocalTask>>>,
    /// The waker of the last `run_until` poll.
    driver: Lock<Option<Waker>>,
}

struct LocalTask {
    id: u64,
    /// On the run queue (or about to be): set by the wake that pushes it.
    queued: AtomicBool,
    /// Set by `LocalJoinHandle::abort`: the set drops the future instead of
    /// polling it.
    aborted: AtomicBool,
    queue: Weak<Queue>,
    /// `None` once finished or dropped. Touched only on the set's thread
    /// (module invariants).
    future: UnsafeCell<Option<Pin<Box<dyn Future<Output = ()>>>>>,
}

// SAFETY: the future, the only part that is not `Send`/`Sync`, is touched
// only on the thread of the task's set, and never dropped elsewhere
// (module invariants); the rest is atomics and a `Weak` to a `Sync` queue.
unsafe impl Send for LocalTask {}
// SAFETY: as above.
unsafe impl Sync for LocalTask {}

impl Wake for LocalTask {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // AcqRel: Release so the set's clearing swap, which reads this
        // value, sees what the waker did before the wake; Acquire is
        // harmless. Only the wake that turns the flag on pushes.
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(queue) = self.queue.upgrade() else {
            return; // the set is gone
        };
        queue.runnable.lock().push_back(self.clone());
        let driver = queue.driver.lock().clone();
        if let Some(driver) = driver {
            driver.wake();
        }
    }
}

impl LocalSet {
    /// An empty set, owned by the current thread.
    ///
    /// ```
    /// let local = fibra::LocalSet::new();
    /// assert_eq!(fibra::block_on(local.run_until(async { 1 })), 1);
    /// ```
    pub fn new() -> Self {
        Self {
            inner: Rc::new(Inner {
                queue: Arc::new(Queue {
                    runnable: Lock::new(VecDeque::new()),
                    driver: Lock::new(None),
                }),
                tasks: RefCell::new(HashMap::new()),
                next_id: Cell::new(0),
                running: Cell::new(false),
            }),
        }
    }

    /// Spawns a `!Send` task into this set; it runs while
    /// [`run_until`](LocalSet::run_until) is polled.
    ///
    /// ```
    /// let local = fibra::LocalSet::new();
    /// let h = local.spawn_local(async { std::rc::Rc::new("local") });
    /// let got = fibra::block_on(local.run_until(h)).unwrap();
    /// assert_eq!(*got, "local");
    /// ```
    pub fn spawn_local<F>(&self, future: F) -> LocalJoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        self.inner.spawn(future)
    }

    /// A future that runs `future` and, alongside it, this set's tasks,
    /// until `future` finishes (the set's other tasks stay in the set).
    /// Inside, [`spawn_local`] spawns into this set. The future is `!Send`:
    /// poll it on the set's thread (an OS thread's
    /// [`fibra::block_on`](crate::block_on),
    /// [`Runtime::block_on_local`](super::Runtime::block_on_local), another
    /// executor's `block_on`).
    ///
    /// ```
    /// let local = fibra::LocalSet::new();
    /// let out = fibra::block_on(local.run_until(async {
    ///     let (tx, rx) = fibra::channel();
    ///     fibra::spawn_local(async move { tx.send(std::rc::Rc::new(3)).await.unwrap() });
    ///     rx.recv().await.unwrap()
    /// }));
    /// assert_eq!(*out, 3);
    /// ```
    pub fn run_until<F: Future>(&self, future: F) -> RunUntil<'_, F> {
        RunUntil { set: self, future }
    }
}

impl Default for LocalSet {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for LocalSet {
    fn drop(&mut self) {
        // Dropping a future may spawn into this set, or wake its tasks:
        // repeat until nothing is left.
        let _current = Enter::new(&self.inner);
        loop {
            let tasks: Vec<_> = self.inner.tasks.borrow_mut().drain().collect();
            if tasks.is_empty() {
                break;
            }
            for (_, task) in tasks {
                // SAFETY: we are the set's thread (module invariants).
                drop(unsafe { (*task.future.get()).take() });
            }
        }
        // Break the task <-> queue cycle of queued tasks.
        let queued = std::mem::take(&mut *self.inner.queue.runnable.lock());
        drop(queued);
    }
}

impl fmt::Debug for LocalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSet")
            .field("tasks", &self.inner.tasks.borrow().len())
            .finish()
    }
}

impl Inner {
    fn spawn<F>(&self, future: F) -> LocalJoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let slot = Rc::new(JoinSlot {
            outcome: IVar::new(),
            waker: RefCell::new(None),
        });
        // Built outside the task's future: it reports even if the task is
        // dropped before its first poll.
        let reporter = Reporter(Some(slot.clone()));
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let task = Arc::new(LocalTask {
            id,
            queued: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            queue: Arc::downgrade(&self.queue),
            future: UnsafeCell::new(Some(Box::pin(async move {
                let mut reporter = reporter;
                let outcome = CatchUnwind { future }.await;
                reporter.report(outcome.map_err(JoinError::Panicked));
            }))),
        });
        self.tasks.borrow_mut().insert(id, task.clone());
        task.wake_by_ref();
        LocalJoinHandle { slot, task }
    }

    /// Polls up to `BUDGET` runnable tasks; returns whether more are
    /// runnable.
    fn run_ready(&self) -> bool {
        if self.running.replace(true) {
            return false;
        }
        /// Clears `running`, also if a poll unwinds.
        struct Running<'a>(&'a Cell<bool>);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let _running = Running(&self.running);
        for _ in 0..BUDGET {
            let Some(task) = self.queue.runnable.lock().pop_front() else {
                return false;
            };
            // AcqRel: pairs with the wake's swap (module invariants).
            task.queued.swap(false, Ordering::AcqRel);
            // Relaxed: `abort` wakes the task after setting it, and the
            // wake's swap orders it before our clearing swap.
            let aborted = task.aborted.load(Ordering::Relaxed);
            // SAFETY: we are the set's thread (module invariants).
            let cell = unsafe { &mut *task.future.get() };
            let done = match cell.as_mut() {
                None => continue, // finished; a stale wake
                Some(_) if aborted => true,
                Some(fut) => {
                    let waker = Waker::from(task.clone());
                    fut.as_mut()
                        .poll(&mut Context::from_waker(&waker))
                        .is_ready()
                }
            };
            if done {
                // Dropped here, on the set's thread, before the set lets
                // go of the task.
                drop(cell.take());
                self.tasks.borrow_mut().remove(&task.id);
            }
        }
        !self.queue.runnable.lock().is_empty()
    }
}

/// Makes a set the current one for `spawn_local` while it lives.
struct Enter(*const Inner);

impl Enter {
    fn new(inner: &Inner) -> Self {
        Enter(CURRENT.with(|c| c.replace(inner)))
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

pin_project! {
    /// The future of [`LocalSet::run_until`]: runs a future and the set's
    /// tasks until the future finishes.
    ///
    /// ```
    /// let local = fibra::LocalSet::new();
    /// let fut: fibra::RunUntil<'_, _> = local.run_until(async { 2 });
    /// assert_eq!(fibra::block_on(fut), 2);
    /// ```
    #[must_use = "futures do nothing unless polled"]
    pub struct RunUntil<'a, F> {
        set: &'a LocalSet,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for RunUntil<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let inner = &*this.set.inner;
        {
            let mut driver = inner.queue.driver.lock();
            match &*driver {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *driver = Some(cx.waker().clone()),
            }
        }
        let _current = Enter::new(inner);
        if let Poll::Ready(out) = this.future.poll(cx) {
            return Poll::Ready(out);
        }
        if inner.run_ready() {
            // Out of budget with tasks still runnable: come back soon.
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

/// Spawns a `!Send` task into the [`LocalSet`] being run on this thread
/// (inside [`LocalSet::run_until`], or
/// [`Runtime::block_on_local`](super::Runtime::block_on_local), which runs
/// its future in a set of its own). The task runs on this thread only.
///
/// # Panics
///
/// Outside a `LocalSet` (in an ordinary task, or on a thread that runs
/// none): fibra's workers move tasks between threads, so a `!Send` task
/// needs a set to stay on one.
///
/// ```
/// let rt = fibra::Runtime::builder().current_thread().build().unwrap();
/// let counter = std::rc::Rc::new(std::cell::Cell::new(0));
/// rt.block_on_local(async {
///     let c = counter.clone();
///     fibra::spawn_local(async move { c.set(c.get() + 1) }).await.unwrap();
/// });
/// assert_eq!(counter.get(), 1);
/// ```
pub fn spawn_local<F>(future: F) -> LocalJoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    CURRENT.with(|c| {
        // SAFETY: `CURRENT` points at the set whose `run_until` (or drop)
        // is running on this thread, for exactly that long (`Enter`).
        match unsafe { c.get().as_ref() } {
            Some(inner) => inner.spawn(future),
            None => panic!(
                "fibra::spawn_local called outside a LocalSet: a !Send task must stay on one \
                 thread, and fibra's workers move tasks between threads. Run it inside \
                 `LocalSet::run_until` (on an OS thread: `fibra::block_on(local.run_until(..))`) \
                 or `Runtime::block_on_local` on a current-thread runtime, or spawn a `Send` \
                 future with `fibra::spawn`"
            ),
        }
    })
}

/// What a local task's outcome waits in: an [`IVar`] (written once by the
/// task; its op is the handle's `join_op`), holding a cell the first join
/// takes the outcome out of.
type Outcome<T> = IVar<OutcomeCell<T>>;

/// The cell inside [`Outcome`]: the first join takes the outcome out.
type OutcomeCell<T> = Cell<Option<Result<T, JoinError>>>;

/// Where a local task's outcome waits for its handle.
struct JoinSlot<T> {
    outcome: Outcome<T>,
    /// The waker of a direct `.await` of the handle.
    waker: RefCell<Option<Waker>>,
}

/// Fills the slot once: with the outcome, or `Cancelled` if dropped first.
struct Reporter<T>(Option<Rc<JoinSlot<T>>>);

impl<T> Reporter<T> {
    fn report(&mut self, outcome: Result<T, JoinError>) {
        if let Some(slot) = self.0.take() {
            // Written once: this reporter is the only writer.
            let _ = slot.outcome.put(Cell::new(Some(outcome)));
            let waker = slot.waker.borrow_mut().take();
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

impl<T> Drop for Reporter<T> {
    fn drop(&mut self) {
        self.report(Err(JoinError::Cancelled));
    }
}

/// Takes the outcome out of a filled slot; a task is joined once.
fn take_outcome<T>(cell: &OutcomeCell<T>) -> Result<T, JoinError> {
    cell.take()
        .expect("the local task's output went to another join of its handle (join a task once)")
}

/// An owned permission to join a local task: `.await` it for the task's
/// output, or use [`join_op`](LocalJoinHandle::join_op) in a choice.
/// Dropping it detaches the task (it keeps running in its set). `!Send`,
/// like the task: join it on the set's thread.
///
/// ```
/// let local = fibra::LocalSet::new();
/// fibra::block_on(local.run_until(async {
///     let h = fibra::spawn_local(std::future::pending::<()>());
///     h.abort();
///     assert!(h.await.unwrap_err().is_cancelled());
/// }));
/// ```
pub struct LocalJoinHandle<T> {
    slot: Rc<JoinSlot<T>>,
    task: Arc<LocalTask>,
}

impl<T> LocalJoinHandle<T> {
    /// Asks the task to stop: its set drops it at its next turn (it is not
    /// interrupted mid-poll), and it joins as [`JoinError::Cancelled`],
    /// unless it finished first.
    ///
    /// ```
    /// let local = fibra::LocalSet::new();
    /// let h = local.spawn_local(std::future::pending::<()>());
    /// h.abort();
    /// let out = fibra::block_on(local.run_until(h));
    /// assert!(out.unwrap_err().is_cancelled());
    /// ```
    pub fn abort(&self) {
        // Relaxed: the wake below orders it (`run_ready`).
        self.task.aborted.store(true, Ordering::Relaxed);
        self.task.wake_by_ref();
    }

    /// Whether the task has finished (output ready, panicked or
    /// cancelled).
    ///
    /// ```
    /// let local = fibra::LocalSet::new();
    /// let h = local.spawn_local(async {});
    /// assert!(!h.is_finished());
    /// fibra::block_on(local.run_until(fibra::yield_now()));
    /// assert!(h.is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        self.slot.outcome.is_full()
    }

    /// The op of joining the task, for choices: commits with its outcome
    /// once it has finished. A task has one outcome: the first join to
    /// commit takes it, and joining again panics.
    ///
    /// ```
    /// use fibra::{Op, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let local = fibra::LocalSet::new();
    /// fibra::block_on(local.run_until(async {
    ///     let slow = fibra::spawn_local(std::future::pending::<u8>());
    ///     let first = choose((
    ///         slow.join_op().wrap(|r| r.ok()),
    ///         after(Duration::from_millis(10)).wrap(|()| None),
    ///     ))
    ///     .await;
    ///     assert_eq!(first, None);
    /// }));
    /// ```
    pub fn join_op(&self) -> LocalJoinOp<'_, T> {
        LocalJoinOp(self.slot.outcome.get_ref_op())
    }
}

impl<T> Future for LocalJoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(cell) = self.slot.outcome.get_ref() {
            return Poll::Ready(take_outcome(cell));
        }
        {
            let mut waker = self.slot.waker.borrow_mut();
            match &*waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *waker = Some(cx.waker().clone()),
            }
        }
        Poll::Pending
    }
}

/// The op of joining a local task: made by [`LocalJoinHandle::join_op`].
/// If its perform is dropped after the task finished, the outcome stays
/// for the next join.
///
/// ```
/// use fibra::{LocalJoinOp, Op};
///
/// let local = fibra::LocalSet::new();
/// let h = local.spawn_local(async { 4 });
/// fibra::block_on(local.run_until(async {
///     let op: LocalJoinOp<'_, i32> = h.join_op();
///     assert_eq!(op.await.unwrap(), 4);
/// }));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct LocalJoinOp<'a, T>(GetRefOp<'a, OutcomeCell<T>>);

impl<'a, T> LocalJoinOp<'a, T> {
    fn inner(self: Pin<&mut Self>) -> Pin<&mut GetRefOp<'a, OutcomeCell<T>>> {
        // SAFETY: structural pinning of the only field.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }
    }
}

impl<T> Sealed for LocalJoinOp<'_, T> {}

impl<T> Op for LocalJoinOp<'_, T> {
    type Output = Result<T, JoinError>;

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.inner().repoll(cx);
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        self.inner().try_now().map(take_outcome)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.inner().block(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> Self::Output {
        take_outcome(self.inner().finish(leaf))
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        // Nothing was taken: the outcome stays in the cell.
        self.inner().abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.inner().withdraw();
    }
}

crate::op::op_into_future! {
    impl['a, T] LocalJoinOp<'a, T>;
}

impl<T> fmt::Debug for LocalJoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalJoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}
