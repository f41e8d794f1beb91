//! The fibra runtime: a multicore work-stealing scheduler for async tasks,
//! with hand-off between communicating tasks.
//!
//! ```
//! let rt = fibra::Runtime::builder().workers(2).build().unwrap();
//! let sum = rt.block_on(async {
//!     let (tx, rx) = fibra::channel::<u64>();
//!     let producer = fibra::spawn(async move {
//!         for i in 1..=100 {
//!             tx.send(i).await.unwrap();
//!         }
//!     });
//!     let mut sum = 0;
//!     while let Ok(v) = rx.recv().await {
//!         sum += v;
//!     }
//!     producer.await.unwrap();
//!     sum
//! });
//! assert_eq!(sum, 5050);
//! ```
//!
//! Layout: `task/` (a task's allocation, state machine and join state),
//! `task/future_cell.rs` (where a task's future lives, pinned, until it is
//! dropped in place), `task_alloc.rs` (the workers' slabs that tasks are
//! allocated from), `worker.rs` (the run loop, local queue and `next`
//! slot), `retained.rs` (tasks that went idle on a worker and stay
//! `RUNNING` there for a while, so a wake from the same worker is cheap),
//! `rescue.rs` (idle workers taking the private runnable tasks of a worker
//! stuck in a long poll), `idle.rs` (searching and
//! sleeping workers), `park.rs` (a worker's parker), `registry.rs` (every
//! live task, for shutdown), `blocking.rs` (the pool for blocking calls),
//! `join.rs` (`JoinHandle` and its op), `join_set.rs` (`JoinSet`),
//! `local.rs` (`LocalSet` and `spawn_local`), `queue.rs` (the run queues'
//! types: crossbeam's, or loom-visible stand-ins under `--cfg loom`).

mod blocking;
mod builder;
mod gather;
mod idle;
mod inbox;
pub(crate) mod io;
mod join;
mod join_set;
mod local;
mod metrics;
mod park;
mod queue;
mod registry;
mod rescue;
mod retained;
mod schedule;
mod task;
mod task_alloc;
mod worker;

pub use blocking::spawn_blocking;
pub use builder::Builder;
pub use join::JoinError;
pub use join::{JoinHandle, JoinOp};
pub use join_set::{JoinNextOp, JoinSet};
pub use local::{LocalJoinHandle, LocalJoinOp, LocalSet, RunUntil, spawn_local};
pub use metrics::RuntimeMetrics;

use crate::loom::{AtomicBool, AtomicPtr, Mutex, Ordering, fence, lock};
use idle::Idle;
use park::Parker;
use queue::{Injector, Stealer};
use registry::Registry;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use task::{Task, TaskRef};
use worker::{WorkerCtx, with_current};

/// See [`Shared::io_running`].
struct IoRunning<'a>(&'a Shared);

impl Drop for IoRunning<'_> {
    fn drop(&mut self) {
        if let Some(d) = self.0.io.get() {
            d.pause(true);
        }
    }
}

/// State shared by a runtime's workers, handles and tasks.
pub(crate) struct Shared {
    injector: Injector<TaskRef>,
    /// Each worker's stealable queue (LIFO for its owner: `worker.rs`).
    stealers: Vec<Stealer<TaskRef>>,
    /// Each worker's queue of yielded tasks (FIFO), stealable too.
    yield_stealers: Vec<Stealer<TaskRef>>,
    parkers: Vec<Parker>,
    idle: Idle,
    tasks: Registry,
    shutdown: AtomicBool,
    /// Set by `Runtime::drop` once every worker thread has stopped: from
    /// then on nothing runs a task, and shutdown may cancel them.
    workers_stopped: AtomicBool,
    /// Serialises `drain_tasks`: the runtime's drop and a push racing it
    /// (a spawn, a wake from another thread: `inject`) may both drain, and
    /// a task must be cancelled by one of them only.
    drain_lock: Mutex<()>,
    /// Task memory, one heap per worker (`task_alloc.rs`).
    heaps: Box<[task_alloc::Heap]>,
    /// Whether workers may rescue each other's private tasks (`rescue.rs`):
    /// a multi-thread runtime with more than one worker.
    rescuable: bool,
    /// Each worker's side of the freeze (`rescue.rs`).
    watches: Box<[crossbeam_utils::CachePadded<rescue::Watch>]>,
    /// Each multi-thread worker's context while its loop runs, for a
    /// rescuer holding it frozen (`rescue.rs`).
    workers_ctx: Box<[AtomicPtr<WorkerCtx>]>,
    /// Idle workers sleeping for a tick (watching the others) rather than
    /// until woken.
    ticking: crate::loom::AtomicUsize,
    /// Worker threads whose loop has not ended yet.
    workers_running: crate::loom::AtomicUsize,
    /// The runtime was dropped on one of its own workers: the last worker
    /// to stop drains the tasks (`worker_stopped`).
    drain_on_stop: AtomicBool,
    /// Per worker: a wake from elsewhere marked a task it retains
    /// (`retained.rs`); it looks at its ring at its next turn.
    retained_woken: Box<[retained::WokenHint]>,
    /// Per worker: tasks other workers handed over to it (`inbox.rs`).
    inboxes: Box<[crossbeam_utils::CachePadded<inbox::Inbox>]>,
    /// Whether long-running parasites inflate (`Builder::parasite_inflation`).
    parasite_inflation: bool,
    /// This runtime's part of its workers' lock tags (`gather.rs`).
    lock_tags: gather::TagBase,
    /// The I/O driver, made at the first socket registered (`io/`).
    io: std::sync::OnceLock<Arc<io::Driver>>,
    /// Each worker's counters, and those of other threads (`metrics.rs`).
    #[cfg(feature = "metrics")]
    counters: Box<[crossbeam_utils::CachePadded<metrics::Counters>]>,
    #[cfg(feature = "metrics")]
    outside: metrics::Counters,
}

impl Shared {
    fn is_shutdown(&self) -> bool {
        // Acquire: pairs with `Runtime::drop`'s Release store, so a worker
        // that sees the shutdown sees `drain_on_stop` too.
        self.shutdown.load(Ordering::Acquire)
    }

    /// Worker `j`'s two stealable queues, its local one first (a thief
    /// takes the largest pieces of work from there).
    fn stealable_of(&self, j: usize) -> [&Stealer<TaskRef>; 2] {
        [&self.stealers[j], &self.yield_stealers[j]]
    }

    /// Every worker's stealable queues.
    fn all_stealable(&self) -> impl Iterator<Item = &Stealer<TaskRef>> {
        self.stealers.iter().chain(&self.yield_stealers)
    }

    /// A sleeper's final look: work in the injector, in worker `me`'s
    /// inbox (read under its lock: `inbox.rs`), or, if it `steals`, in any
    /// worker's stealable queues (one that just gave a task away for
    /// hand-offs does not: `gather.rs`).
    fn has_work_for(&self, me: usize, steals: bool) -> bool {
        !self.injector.is_empty()
            || (steals && self.all_stealable().any(|s| !s.is_empty()))
            || !self.inboxes[me].is_empty_now()
    }

    /// Hands `task` (a queue entry: it holds `RUNNING`) to worker `to`,
    /// whose task woke it (`inbox.rs`); gives back an entry to queue here
    /// instead if `to` sleeps.
    fn hand_over(&self, to: usize, task: TaskRef) -> Option<TaskRef> {
        let back = self.inboxes[to].hand_over(task, &self.idle, to);
        if back.is_none() {
            self.retained_woken[to].raise(retained::WokenHint::INBOX);
        }
        back
    }

    /// A wake found a task `RUNNING` and marked it `NOTIFIED`, and the task's
    /// `retained` token names worker `token`'s ring: asks that worker to
    /// release the tasks it retains that were woken (`retained.rs`).
    fn hint_retainer(&self, token: usize, from: Option<usize>) {
        if let Some(hint) = self.retained_woken.get(retained::worker_of(token)) {
            hint.raise(retained::WokenHint::bit(from));
        }
    }

    /// Worker `me` was woken for work: if no idle worker ticks
    /// (`rescue.rs`), wakes a sleeper to watch while we run. That is when
    /// every other sleeper sleeps until woken (after a quiet spell, or the
    /// one that ticked was `me`): one OS wake-up, off the hand-off path.
    fn ensure_watchdog(&self, me: usize) {
        // SeqCst, as every access to `ticking`: in one total order with
        // the idle counts, either we see no ticker and wake one, or the
        // ticker, deciding again after its decrement, sees us awake (no
        // longer a sleeper) and ticks on.
        if self.ticking.load(Ordering::SeqCst) == 0 {
            if let Some(j) = self.idle.some_sleeper(me) {
                self.unpark(j);
            }
        }
    }

    /// Wakes a sleeping worker if work was pushed and nobody searches.
    fn notify_idle(&self) {
        if let Some(i) = self.idle.worker_to_wake() {
            self.unpark(i);
        }
    }

    /// Queues `task` with `here` on the current thread's worker if it is
    /// one of the task's runtime, else on the injector. The entry comes
    /// back if the runtime shuts down (`inject`).
    #[inline]
    fn queue(task: TaskRef, here: impl FnOnce(&WorkerCtx, TaskRef)) -> Result<(), TaskRef> {
        with_current(|ctx| Shared::queue_on(ctx, task, here))
    }

    /// [`Shared::queue`] with the current thread's worker context at hand.
    #[inline]
    fn queue_on(
        ctx: Option<&WorkerCtx>,
        task: TaskRef,
        here: impl FnOnce(&WorkerCtx, TaskRef),
    ) -> Result<(), TaskRef> {
        match ctx {
            Some(ctx) if Arc::ptr_eq(&ctx.shared, task.shared()) => {
                here(ctx, task);
                Ok(())
            }
            _ => task.shared().clone().inject(task),
        }
    }

    /// Queues a woken task: into the current worker's `next` slot if it runs
    /// on one of ours (hand-off), else into the injector. `ctx` is the
    /// current thread's worker context.
    #[inline]
    fn schedule_on(ctx: Option<&WorkerCtx>, task: TaskRef) {
        // Refused at shutdown: the entry drops; a registered task is
        // cancelled through the registry.
        let _ = Shared::queue_on(ctx, task, WorkerCtx::schedule_woken);
    }

    /// Queues a task that yielded (or a parasite that inflated): behind
    /// the others. The entry comes back if the runtime shuts down.
    fn schedule_yield(task: TaskRef) -> Result<(), TaskRef> {
        Shared::queue(task, WorkerCtx::schedule_yielded)
    }

    /// Queues a task that the cooperative budget made yield: behind the
    /// others, but on this worker (`WorkerCtx::schedule_hot`).
    fn schedule_budget_yield(task: TaskRef) {
        let _ = Shared::queue(task, WorkerCtx::schedule_hot);
    }

    /// Queues a task on the injector; refused (the entry handed back) once
    /// the runtime shuts down: a registered task is then cancelled through
    /// the registry.
    fn inject(&self, task: TaskRef) -> Result<(), TaskRef> {
        if self.is_shutdown() {
            return Err(task);
        }
        self.injector.push(task);
        if self.is_shutdown() {
            // A push racing the runtime's drop (a wake from another
            // thread, a spawn through a `Handle`): the drop's drain may be
            // over already, and an entry left in the injector would keep
            // its task, and through it this `Shared`, alive for good (loom
            // model `loom_rt_shutdown_racing_a_wake_drops_the_parked_task_once`).
            // As in `spawn`: SeqCst fence against `stop_and_drain`'s
            // (Dekker): either its drain sees our push, or we see
            // `workers_stopped` and drain ourselves.
            fence(Ordering::SeqCst);
            if self.workers_stopped.load(Ordering::SeqCst) {
                self.drain_tasks();
            }
            return Ok(());
        }
        self.notify_idle();
        Ok(())
    }

    /// Counts `c` (a spawn, a task finished) for the current thread: on
    /// its worker's counters if it is a worker of this runtime, else on
    /// `outside` (`metrics.rs`). Nothing without the feature `metrics`.
    #[inline(always)]
    fn count_here(&self, c: metrics::Count) {
        #[cfg(feature = "metrics")]
        with_current(|ctx| match ctx {
            Some(ctx) if std::ptr::eq(&*ctx.shared, self) => self.counters[ctx.index].bump(c),
            _ => self.outside.bump_shared(c),
        });
        #[cfg(not(feature = "metrics"))]
        let _ = c;
    }

    fn spawn<F>(self: &Arc<Self>, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.count_here(metrics::Count::Spawned);
        let (task, handle) = Task::allocate(future, self.clone());
        self.schedule_spawned(task);
        handle
    }

    /// Spawns `future` with no `JoinHandle` (an actor's task: its mailbox
    /// reports its end): as `spawn` with the handle dropped at once, minus
    /// the handle's reference and its detach.
    fn spawn_detached<F>(self: &Arc<Self>, future: F)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.count_here(metrics::Count::Spawned);
        let task = Task::allocate_detached(future, self.clone());
        self.schedule_spawned(task);
    }

    /// Queues a task just spawned (`RUNNING` for its queue entry), or
    /// cancels it if the runtime is shutting down.
    fn schedule_spawned(self: &Arc<Self>, task: TaskRef) {
        crate::trace::event!(task_id = task.id(), "spawn");
        if self.is_shutdown() {
            task.shutdown();
        } else {
            // Not registered yet (registry.rs): it is in a run queue until
            // its first `Pending` poll.
            if let Err(task) = Shared::queue(task, WorkerCtx::schedule_back) {
                // Shutdown began: the entry was refused, so nobody else
                // can reach this task to cancel it, nor run it.
                task.shutdown();
            } else if self.is_shutdown() {
                // A spawn racing the runtime's drop. Its drain, after its
                // workers stopped, finds our entry — unless it is already
                // over: then drain again ourselves, now that no worker
                // runs (never while one may: a cancel must not race a
                // run). SeqCst fence against the drop's (Dekker): either
                // its drain sees our push, or we see `workers_stopped`.
                fence(Ordering::SeqCst);
                if self.workers_stopped.load(Ordering::SeqCst) {
                    self.drain_tasks();
                }
            }
        }
    }

    /// Spawns a parasite: its first poll runs here, now
    /// (`Task::spawn_eager`), unless a parasite inflated on this worker
    /// lately (`schedule::inflate`): then an ordinary task.
    fn spawn_eager<F>(self: &Arc<Self>, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        schedule::spawn_eager(
            self,
            future,
            |future, site| Task::spawn_eager(future, self, site),
            |future| self.spawn(future),
        )
    }

    /// Every worker has stopped: cancels what is left (shutdown).
    fn stop_and_drain(&self) {
        // SeqCst store and fence: Dekker's pattern with a racing spawn
        // (`Shared::spawn`: its push, its fence, its load of this flag):
        // either our drain sees its push, or it sees the flag and drains.
        self.workers_stopped.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.drain_tasks();
        // The tasks (and the sockets they owned) are gone: sockets still
        // held elsewhere fail from now on instead of waiting for a poll
        // nobody turns.
        if let Some(driver) = self.io.get() {
            driver.shutdown();
        }
    }

    /// The runtime's I/O driver, made on first use.
    fn io_driver(&self) -> std::io::Result<Arc<io::Driver>> {
        if let Some(d) = self.io.get() {
            return Ok(d.clone());
        }
        let made = Arc::new(io::Driver::new()?);
        // Another thread may have made one meanwhile: theirs wins.
        Ok(self.io.get_or_init(|| made).clone())
    }

    /// A current-thread runtime's `block_on` is running its loop until the
    /// guard drops: its sockets' waits work meanwhile, and fail at once
    /// (instead of hanging) while it is not (`io/readiness.rs`, `PAUSED`).
    fn io_running(&self) -> IoRunning<'_> {
        if let Some(d) = self.io.get() {
            d.pause(false);
        }
        IoRunning(self)
    }

    /// Wakes worker `i`, in its poll if it sleeps there (`park.rs`).
    fn unpark(&self, i: usize) {
        if self.parkers[i].unpark() {
            if let Some(d) = self.io.get() {
                d.wake();
            }
        }
    }

    /// A worker thread's loop ended (shutdown). If the runtime was dropped
    /// on one of its own workers, which could not wait for the others, the
    /// last worker to stop drains the tasks.
    pub(super) fn worker_stopped(&self) {
        // AcqRel: the last worker's decrement comes after every other
        // worker's (their loops are over, their runs visible to the drain).
        if self.workers_running.fetch_sub(1, Ordering::AcqRel) == 1
            && self.drain_on_stop.load(Ordering::Relaxed)
        {
            self.stop_and_drain();
        }
    }

    /// Cancels every pending task (shutdown; no worker runs any more): the
    /// registered ones (they waited) and the queued ones (possibly never
    /// polled, so not registered). Dropping a future may wake others, so
    /// this repeats until both are empty; `shutdown` of a task already shut
    /// down does nothing.
    fn drain_tasks(&self) {
        let _one_at_a_time = lock(&self.drain_lock);
        loop {
            let mut tasks = self.tasks.drain();
            self.drain_queues(&mut tasks);
            if tasks.is_empty() {
                break;
            }
            for t in &tasks {
                t.shutdown();
            }
        }
    }

    /// Takes every entry out of the run queues. Besides finding the tasks
    /// that were never registered, this breaks a cycle: a worker's deque
    /// outlives its worker through the stealer kept here, and each entry
    /// holds its task, which holds this `Shared`.
    fn drain_queues(&self, into: &mut Vec<TaskRef>) {
        use queue::Steal;
        let mut take = |steal: &dyn Fn() -> Steal<TaskRef>| loop {
            match steal() {
                Steal::Success(t) => into.push(t),
                Steal::Empty => break,
                Steal::Retry => {}
            }
        };
        take(&|| self.injector.steal());
        for s in self.all_stealable() {
            take(&|| s.steal());
        }
        for inbox in &self.inboxes {
            inbox.take_all(|t| into.push(t));
        }
    }
}

/// The most worker threads a runtime may have
/// ([`Builder::workers`]). Each worker is an OS thread that searches for
/// work before it sleeps: far more workers than cores only add contention,
/// and thousands take seconds to start.
///
/// ```
/// use fibra::rt::MAX_WORKERS;
///
/// assert!(fibra::Runtime::builder().workers(MAX_WORKERS + 1).build().is_err());
/// ```
pub const MAX_WORKERS: usize = 256;

/// The flavour of a runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    MultiThread,
    CurrentThread,
}

/// A fibra runtime: worker threads (or the calling thread, for the
/// current-thread flavour) running async tasks.
///
/// Dropping the runtime stops its workers and drops every task that has not
/// finished (exactly once); their `JoinHandle`s then report
/// [`JoinError::Cancelled`].
///
/// ```
/// let rt = fibra::Runtime::new().unwrap();
/// let h = rt.spawn(async { 6 * 7 });
/// assert_eq!(rt.block_on(h).unwrap(), 42);
/// ```
pub struct Runtime {
    shared: Arc<Shared>,
    flavor: Flavor,
    threads: Vec<crate::loom::thread::JoinHandle<()>>,
    /// The current-thread flavour's local queue, used by `block_on`.
    ct_local: Option<Mutex<Option<worker::LocalQueues>>>,
}

impl Runtime {
    /// A multi-thread runtime with one worker per core.
    ///
    /// # Errors
    ///
    /// If a worker thread cannot be spawned.
    ///
    /// ```
    /// let rt = fibra::Runtime::new()?;
    /// let h = rt.spawn(async { 2 + 2 });
    /// assert_eq!(rt.block_on(h).unwrap(), 4);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> std::io::Result<Runtime> {
        Builder::new().build()
    }

    /// A builder to configure workers, flavour, thread names and pinning.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(1).thread_name("io").build().unwrap();
    /// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Spawns a task; it starts running on a worker at once (for the
    /// current-thread flavour: when some thread is in `block_on`).
    ///
    /// ```
    /// let rt = fibra::Runtime::new().unwrap();
    /// let h = rt.spawn(async { "done" });
    /// assert_eq!(fibra::block_on(h).unwrap(), "done");
    /// ```
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.spawn(future)
    }

    /// Spawns a parasite onto the runtime: its first poll runs at once on
    /// the calling thread; see [`spawn_eager`].
    ///
    /// ```
    /// let rt = fibra::Runtime::new().unwrap();
    /// let h = rt.spawn_eager(async { 6 * 7 });
    /// assert!(h.is_finished()); // it finished inline
    /// assert_eq!(rt.block_on(h).unwrap(), 42);
    /// ```
    pub fn spawn_eager<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.spawn_eager(future)
    }

    /// A clonable handle for spawning from elsewhere.
    ///
    /// ```
    /// let rt = fibra::Runtime::new().unwrap();
    /// let handle = rt.handle();
    /// let t = std::thread::spawn(move || fibra::block_on(handle.spawn(async { 5 })));
    /// assert_eq!(t.join().unwrap().unwrap(), 5);
    /// ```
    pub fn handle(&self) -> Handle {
        Handle {
            shared: self.shared.clone(),
        }
    }

    /// Runs `future` to completion on the runtime and returns its output.
    /// The future runs as a task, so it hands off with the tasks it talks
    /// to like any other; hence `Send + 'static`. On a current-thread
    /// runtime, [`block_on_local`](Runtime::block_on_local) takes any
    /// future (borrowing, `!Send`) and runs [`spawn_local`] tasks.
    ///
    /// # Panics
    ///
    /// If `future` panics (the panic is resumed here), or if called on a
    /// fibra worker thread.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    /// assert_eq!(rt.block_on(async { fibra::spawn(async { 3 }).await.unwrap() }), 3);
    /// ```
    pub fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = self.shared.spawn(future);
        let out = match self.flavor {
            Flavor::MultiThread => crate::op::block_on(handle),
            Flavor::CurrentThread => self.run_current_thread(handle),
        };
        match out {
            Ok(v) => v,
            Err(JoinError::Panicked(p)) => std::panic::resume_unwind(p),
            Err(JoinError::Cancelled) => panic!("the runtime shut down during `block_on`"),
        }
    }

    /// Runs `future` to completion on the calling thread and returns its
    /// output, without asking it to be `Send` or `'static` (it may borrow
    /// the caller's locals, hold an `Rc`, and use [`spawn_local`]).
    ///
    /// For the current-thread flavour, where the calling thread is the
    /// runtime's worker: the future is polled there, in place, between the
    /// runtime's tasks (which [`spawn`] reaches as usual), inside a
    /// [`LocalSet`] of its own whose tasks run beside it; local tasks still
    /// running when `future` finishes are dropped before this returns.
    /// [`block_on`](Runtime::block_on) instead runs its future as a task,
    /// which on the multi-thread flavour lets it hand off with the tasks it
    /// talks to, and so needs `Send + 'static`.
    ///
    /// # Panics
    ///
    /// On a multi-thread runtime (its tasks move between workers, so the
    /// calling thread is not one of them: use a
    /// [`Builder::current_thread`] runtime, or
    /// `fibra::block_on(local_set.run_until(future))` on an OS thread), on
    /// a fibra worker thread, while another `block_on` runs on this
    /// runtime, or if `future` panics.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    /// let name = String::from("borrowed"); // not 'static
    /// let len = rt.block_on_local(async {
    ///     let shared = Rc::new(name.len()); // not Send
    ///     let task = fibra::spawn(async { 1 }); // an ordinary task
    ///     let local = fibra::spawn_local({
    ///         let shared = shared.clone();
    ///         async move { *shared }
    ///     });
    ///     local.await.unwrap() + task.await.unwrap()
    /// });
    /// assert_eq!(len, 9);
    /// ```
    pub fn block_on_local<F: Future>(&self, future: F) -> F::Output {
        if self.flavor != Flavor::CurrentThread {
            panic!(
                "Runtime::block_on_local needs a current-thread runtime \
                 (`Builder::current_thread`): a multi-thread runtime's tasks move between \
                 workers, and the calling thread is none of them. Use `Runtime::block_on` \
                 for a Send future, or `fibra::block_on(local_set.run_until(future))` on a \
                 thread of your own"
            );
        }
        crate::op::check_blocking_allowed();
        let slot = self.ct_local.as_ref().expect("current-thread runtime");
        let local = lock(slot)
            .take()
            .expect("one `block_on` at a time on a current-thread runtime");
        /// Gives the worker's queues back to the runtime for the next
        /// `block_on`, also if the future panics.
        struct GiveBack<'a> {
            slot: &'a Mutex<Option<worker::LocalQueues>>,
            ctx: Option<WorkerCtx>,
        }
        impl Drop for GiveBack<'_> {
            fn drop(&mut self) {
                if let Some(ctx) = self.ctx.take() {
                    *lock(self.slot) = Some(ctx.into_local());
                }
            }
        }
        let worker = GiveBack {
            slot,
            ctx: Some(WorkerCtx::new(self.shared.clone(), 0, local)),
        };
        let ctx = worker.ctx.as_ref().expect("the worker's context");
        let set = LocalSet::new();
        let root_waker = Arc::new(RootWaker {
            woken: AtomicBool::new(true),
            shared: self.shared.clone(),
        });
        let waker = std::task::Waker::from(root_waker.clone());
        let _io = self.shared.io_running();
        let out = {
            let mut root = std::pin::pin!(set.run_until(future));
            ctx.enter(|| {
                loop {
                    // SeqCst: see `RootWaker::wake_by_ref`.
                    if root_waker.woken.swap(false, Ordering::SeqCst) {
                        crate::coop::reset();
                        let mut cx = Context::from_waker(&waker);
                        if let Poll::Ready(out) = root.as_mut().poll(&mut cx) {
                            break Some(out);
                        }
                    }
                    if self.shared.is_shutdown() {
                        break None;
                    }
                    // Woken again during its own poll (a local task that
                    // keeps yielding, an exhausted budget): the runtime's
                    // tasks get a turn first, or a local task spinning
                    // until one of them acts would starve it. The loop's
                    // first look at `done` says no.
                    let turn_first = std::cell::Cell::new(root_waker.woken.load(Ordering::SeqCst));
                    ctx.run(|| {
                        !turn_first.replace(false) && root_waker.woken.load(Ordering::SeqCst)
                    });
                }
            })
        };
        // The local tasks left go now, still on this thread, as the
        // runtime's worker.
        ctx.enter(|| drop(set));
        drop(worker);
        out.expect("the runtime shut down during `block_on_local`")
    }

    fn run_current_thread<T>(&self, mut handle: JoinHandle<T>) -> Result<T, JoinError> {
        crate::op::check_blocking_allowed();
        let slot = self.ct_local.as_ref().expect("current-thread runtime");
        let local = lock(slot)
            .take()
            .expect("one `block_on` at a time on a current-thread runtime");
        let ctx = WorkerCtx::new(self.shared.clone(), 0, local);
        let _io = self.shared.io_running();
        ctx.enter(|| ctx.run(|| handle.is_finished()));
        *lock(slot) = Some(ctx.into_local());
        let waker = std::task::Waker::noop();
        match Pin::new(&mut handle).poll(&mut Context::from_waker(waker)) {
            Poll::Ready(out) => out,
            Poll::Pending => unreachable!("main task finished"),
        }
    }
}

/// The waker of `block_on_local`'s future: marks it woken and, from
/// another thread, wakes the worker (the calling thread) if it sleeps.
struct RootWaker {
    woken: AtomicBool,
    shared: Arc<Shared>,
}

impl std::task::Wake for RootWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // SeqCst store, then `notify_idle`'s SeqCst fence and loads: the
        // idle protocol's Dekker pattern (`idle.rs`), with this flag as the
        // pushed work: either a sleeping worker is found and woken, or the
        // worker's final look after registering as a sleeper sees the flag
        // (its `done`).
        self.woken.store(true, Ordering::SeqCst);
        let here = with_current(|c| c.is_some_and(|c| Arc::ptr_eq(&c.shared, &self.shared)));
        if !here {
            self.shared.notify_idle();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Dropped inside one of its own tasks: this worker cannot wait for
        // itself to stop. The last worker to stop drains instead
        // (`Shared::worker_stopped`); set before `shutdown`, whose Release
        // the workers' Acquire pairs with.
        let on_own_worker =
            with_current(|ctx| ctx.is_some_and(|c| Arc::ptr_eq(&c.shared, &self.shared)));
        if on_own_worker {
            self.shared.drain_on_stop.store(true, Ordering::Relaxed);
        }
        self.shared.shutdown.store(true, Ordering::Release);
        for i in self.shared.idle.wake_all() {
            self.shared.unpark(i);
        }
        for i in 0..self.shared.parkers.len() {
            self.shared.unpark(i);
        }
        if on_own_worker {
            // Detached: each worker stops at its next scheduling point
            // (this one once the task that dropped us yields or ends).
            self.threads.clear();
            return;
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.ct_local = None;
        self.shared.stop_and_drain();
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("flavor", &self.flavor)
            .field("workers", &self.shared.parkers.len())
            .finish_non_exhaustive()
    }
}

/// A clonable handle to a runtime, for spawning onto it from anywhere.
///
/// ```
/// let rt = fibra::Runtime::new().unwrap();
/// let handle: fibra::Handle = rt.handle();
/// // Spawn onto the runtime from another thread.
/// let h = std::thread::spawn(move || handle.spawn(async { 5 })).join().unwrap();
/// assert_eq!(rt.block_on(h).unwrap(), 5);
/// ```
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl Handle {
    /// Spawns a task onto the runtime; see [`Runtime::spawn`].
    ///
    /// ```
    /// let rt = fibra::Runtime::new().unwrap();
    /// let h = rt.handle().spawn(async { 1 });
    /// assert_eq!(rt.block_on(h).unwrap(), 1);
    /// ```
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.spawn(future)
    }

    /// Spawns a parasite onto the runtime: its first poll runs at once, on
    /// the calling thread (any thread: a fibra worker, an OS thread, another
    /// executor's task); if it does not finish there, it becomes a task of
    /// this runtime. See [`spawn_eager`].
    ///
    /// ```
    /// let rt = fibra::Runtime::new().unwrap();
    /// let handle = rt.handle();
    /// let (tx, rx) = fibra::channel::<u32>();
    /// // On a plain thread: the first poll blocks in `recv`, so the rest
    /// // runs on the runtime once `tx` sends.
    /// let h = std::thread::spawn(move || handle.spawn_eager(async move { rx.recv().await }))
    ///     .join()
    ///     .unwrap();
    /// tx.send_blocking(5).unwrap();
    /// assert_eq!(fibra::block_on(h).unwrap(), Ok(5));
    /// ```
    pub fn spawn_eager<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.spawn_eager(future)
    }

    /// Spawns a task that owns a new mailbox onto the runtime and returns
    /// the mailbox's address; see [`spawn_actor`].
    ///
    /// ```
    /// let rt = fibra::Runtime::new().unwrap();
    /// let addr = rt.handle().spawn_actor(|mut mb| async move {
    ///     let n: u32 = mb.recv().await.unwrap();
    ///     assert_eq!(n, 7);
    /// });
    /// addr.send(7).unwrap();
    /// let exit = rt.block_on(async move { addr.exited().await });
    /// assert_eq!(exit, fibra::Exit::Normal);
    /// ```
    pub fn spawn_actor<M, B, F>(&self, body: B) -> crate::Addr<M>
    where
        M: Send + 'static,
        B: FnOnce(crate::Mailbox<M>) -> F,
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (addr, fut) =
            crate::mailbox::actor(body, |layout| schedule::mailbox_block(&self.shared, layout));
        self.shared.spawn_detached(fut);
        addr
    }

    /// The runtime's metrics: workers, queue depths and (with the feature
    /// `metrics`) counters, as tokio's `RuntimeMetrics`.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    /// assert_eq!(rt.handle().metrics().num_workers(), 2);
    /// ```
    pub fn metrics(&self) -> RuntimeMetrics {
        RuntimeMetrics::new(self.shared.clone())
    }

    /// The handle of the runtime whose worker runs the current task, if any.
    ///
    /// ```
    /// assert!(fibra::Handle::try_current().is_none());
    /// fibra::run(async { assert!(fibra::Handle::try_current().is_some()) });
    /// ```
    pub fn try_current() -> Option<Handle> {
        with_current(|ctx| {
            ctx.map(|c| Handle {
                shared: c.shared.clone(),
            })
        })
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle").finish_non_exhaustive()
    }
}

/// Whether this thread is a worker of a fibra runtime (inside its run).
pub(crate) fn on_worker() -> bool {
    with_current(|ctx| ctx.is_some())
}

/// The I/O driver of the runtime whose worker this thread is (`what`
/// names the call, for the error outside a runtime).
pub(crate) fn current_io_driver(what: &str) -> std::io::Result<Arc<io::Driver>> {
    match with_current(|ctx| ctx.map(|c| c.shared.clone())) {
        Some(shared) => shared.io_driver(),
        None => Err(std::io::Error::other(format!(
            "{what} called outside a fibra runtime: a socket belongs to the runtime it is \
             made in (make it inside a task of `Runtime::block_on`, `fibra::run` or \
             `Handle::spawn`); once made it can be used from any thread or executor"
        ))),
    }
}

/// Spawns a task on the runtime running the current task.
///
/// # Panics
///
/// Outside a fibra runtime's worker: use [`Runtime::spawn`] or
/// [`Handle::spawn`] there.
///
/// ```
/// fibra::run(async {
///     let h = fibra::spawn(async { 2 + 2 });
///     assert_eq!(h.await.unwrap(), 4);
/// });
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // The panic is outside the closure, so that it names the caller's line.
    match with_current(|ctx| ctx.map(|ctx| ctx.shared.spawn(future))) {
        Some(handle) => handle,
        None => panic!(
            "fibra::spawn called outside a fibra runtime; use Runtime::spawn or Handle::spawn"
        ),
    }
}

/// Spawns a *parasite*: a task whose first poll runs at once, inline, on
/// the calling worker, before anything is queued.
///
/// Most spawned computations are short and never wait; as a parasite such
/// a computation costs about a function call: if its first poll finishes,
/// nothing was scheduled, no other thread was touched, and the handle holds
/// the output already. If the first poll returns `Pending`, the parasite
/// becomes an ordinary suspended task, with [`spawn`]'s semantics for its
/// [`JoinHandle`] (`.await`, [`join_op`](JoinHandle::join_op),
/// [`abort`](JoinHandle::abort), panics): it runs again where it is woken
/// (the waking worker's hand-off slot, as any task). A panic in the inline
/// poll does not unwind through the caller: it lands in the handle as
/// [`JoinError::Panicked`].
///
/// A parasite that turns out long-running (it yields, or uses up its
/// cooperative budget) is *inflated* into an ordinary task that idle
/// workers may steal, and this worker's next 10 `spawn_eager` calls spawn
/// ordinary tasks ([`Builder::parasite_inflation`]; `docs/runtime.md`,
/// "Parasites").
///
/// The caller's poll waits for the parasite's first poll: a body that
/// computes for long before its first `.await` holds up its spawner; use
/// [`spawn`] for such work.
///
/// # Panics
///
/// Outside a fibra runtime's worker: use [`Runtime::spawn_eager`] or
/// [`Handle::spawn_eager`] there (they run the first poll on the calling
/// thread, and the rest on their runtime).
///
/// ```
/// fibra::run(async {
///     // Finishes inline: no task was queued.
///     let h = fibra::spawn_eager(async { 2 + 2 });
///     assert!(h.is_finished());
///     assert_eq!(h.await.unwrap(), 4);
///
///     // Waits in its first poll: from then on an ordinary task.
///     let (tx, rx) = fibra::channel::<u32>();
///     let h = fibra::spawn_eager(async move { rx.recv().await.unwrap() + 1 });
///     tx.send(41).await.unwrap();
///     assert_eq!(h.await.unwrap(), 42);
/// });
/// ```
pub fn spawn_eager<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // SAFETY: used for this call only, which the worker's `enter` encloses
    // when the pointer is not null (`worker::current_ptr`).
    match unsafe { worker::current_ptr().as_ref() } {
        Some(ctx) => ctx.shared.spawn_eager(future),
        None => panic!(
            "fibra::spawn_eager called outside a fibra runtime; use Runtime::spawn_eager or \
             Handle::spawn_eager"
        ),
    }
}

/// Spawns a task on the current fibra runtime that owns a new mailbox, and
/// returns the mailbox's address. `body` receives the [`Mailbox`](crate::Mailbox) and
/// returns the task's future; the task's output is discarded.
///
/// When the task ends — by returning, by panicking, or by being dropped —
/// its mailbox closes (sends fail and hand their message back) and then
/// [`Addr::exited_op`](crate::Addr::exited_op) becomes ready with the [`Exit`](crate::Exit). A panic is reported
/// there and does not bring the runtime down. Tasks spawned with
/// [`spawn`] have no mailbox and pay nothing for this.
///
/// # Panics
///
/// Outside a fibra runtime; use [`Handle::spawn_actor`](crate::Handle::spawn_actor)
/// there.
///
/// ```
/// fibra::run(async {
///     let echo = fibra::spawn_actor(|mut mb| async move {
///         while let Some((text, reply)) = mb.recv().await {
///             let reply: fibra::Addr<String> = reply;
///             let _ = reply.send(text);
///         }
///     });
///     let (me, mut inbox) = fibra::mailbox();
///     echo.send(("hi".to_string(), me)).unwrap();
///     assert_eq!(inbox.recv().await.as_deref(), Some("hi"));
/// });
/// ```
#[track_caller]
pub fn spawn_actor<M, B, F>(body: B) -> crate::Addr<M>
where
    M: Send + 'static,
    B: FnOnce(crate::Mailbox<M>) -> F,
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // Checked before `body` runs: outside a runtime nothing is built.
    if !with_current(|ctx| ctx.is_some()) {
        panic!(
            "fibra::spawn_actor called outside a fibra runtime; use Handle::spawn_actor \
             (Runtime::handle().spawn_actor(..))"
        )
    }
    // The mailbox in this worker's slab; `body` runs outside `with_current`.
    let (addr, fut) = crate::mailbox::actor(body, |layout| {
        with_current(|ctx| ctx.and_then(|c| schedule::mailbox_block(&c.shared, layout)))
    });
    with_current(|ctx| {
        if let Some(ctx) = ctx {
            ctx.shared.spawn_detached(fut);
        }
    });
    addr
}

/// Runs `future` on a new multi-thread runtime with default settings and
/// returns its output: the entry point for programs that need no
/// configuration. The future runs as a task (`Send + 'static`); for one
/// that is not `Send`, use a current-thread runtime's
/// [`block_on_local`](Runtime::block_on_local).
///
/// # Panics
///
/// If the runtime cannot start its threads, or if `future` panics.
///
/// ```
/// let v = fibra::run(async { fibra::spawn(async { 7 }).await.unwrap() });
/// assert_eq!(v, 7);
/// ```
pub fn run<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    Runtime::new()
        .expect("fibra::run: could not start the runtime's worker threads")
        .block_on(future)
}

/// Yields to the other tasks of this worker: the task goes to the back of
/// its worker's queue of yielded tasks, behind every task runnable there
/// (other workers may take it from there too). Outside fibra's runtime it yields to the executor the same
/// way (wake, then `Pending` once).
///
/// ```
/// fibra::run(async {
///     for _ in 0..3 {
///         fibra::yield_now().await;
///     }
/// });
/// ```
pub async fn yield_now() {
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false).await;
}

#[cfg(all(test, loom))]
mod loom_local;
#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, loom))]
mod loom_runtime;
