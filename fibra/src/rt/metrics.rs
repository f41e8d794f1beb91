//! Runtime metrics: [`Handle::metrics`](super::Handle::metrics) (tokio's
//! `RuntimeMetrics`).
//!
//! Invariants: each worker's counters sit on a cache line of their own and
//! are written only by that worker's thread, with a relaxed load and store
//! (no read-modify-write, no line shared with another writer); readers
//! (`RuntimeMetrics`) load them relaxed, so a snapshot is approximate while
//! the runtime runs. Counts made off the workers (a spawn from another
//! thread, a task finishing on the blocking pool) go to `outside`, with a
//! relaxed `fetch_add` (not a hot path).
//!
//! The counters are compiled in only with the feature `metrics`: the poll
//! count is on the hot path (one load and store per task turn), and the
//! spawn and finish counts cost a thread-local lookup each. Without it the
//! counting calls are empty and the counting methods of
//! [`RuntimeMetrics`] do not exist; the depths and worker count are always
//! there (read on demand, nothing counted).

use super::Shared;
use crate::loom::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One worker's counters (see the module docs).
#[derive(Default)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) struct Counters {
    polls: AtomicUsize,
    steals: AtomicUsize,
    parks: AtomicUsize,
    spawned: AtomicUsize,
    finished: AtomicUsize,
    handed_out: AtomicUsize,
    gathered: AtomicUsize,
}

/// Which counter to bump.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum Count {
    Polls,
    Steals,
    Parks,
    Spawned,
    Finished,
    /// A task woken by another worker's task was handed to that worker.
    HandedOut,
    /// A task that contended with another worker's task was handed to
    /// that worker (`gather.rs`).
    Gathered,
}

#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
impl Counters {
    fn get(&self, c: Count) -> &AtomicUsize {
        match c {
            Count::Polls => &self.polls,
            Count::Steals => &self.steals,
            Count::Parks => &self.parks,
            Count::Spawned => &self.spawned,
            Count::Finished => &self.finished,
            Count::HandedOut => &self.handed_out,
            Count::Gathered => &self.gathered,
        }
    }

    /// Adds one, on the owning worker's thread: a relaxed load and store
    /// (nobody else writes this counter).
    #[inline(always)]
    pub(crate) fn bump(&self, c: Count) {
        #[cfg(feature = "metrics")]
        {
            let a = self.get(c);
            a.store(a.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = c;
    }

    /// Adds one from any thread (the `outside` counters).
    #[inline]
    pub(crate) fn bump_shared(&self, c: Count) {
        #[cfg(feature = "metrics")]
        self.get(c).fetch_add(1, Ordering::Relaxed);
        #[cfg(not(feature = "metrics"))]
        let _ = c;
    }

    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    fn load(&self, c: Count) -> u64 {
        // Relaxed: a statistic; no other memory is read through it.
        self.get(c).load(Ordering::Relaxed) as u64
    }
}

/// A view of a runtime's state and counters, from
/// [`Handle::metrics`](super::Handle::metrics). Each method reads the
/// current value; values move while the runtime runs.
///
/// The counters (`worker_*_count`, `num_alive_tasks`)
/// exist with the feature `metrics` only (off by default: the poll count
/// sits on the hot path).
///
/// ```
/// let rt = fibra::Runtime::builder().workers(2).build().unwrap();
/// let m = rt.handle().metrics();
/// assert_eq!(m.num_workers(), 2);
/// rt.block_on(async {});
/// assert_eq!(m.global_queue_depth(), 0);
/// ```
#[derive(Clone)]
pub struct RuntimeMetrics {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RuntimeMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("RuntimeMetrics");
        d.field("num_workers", &self.num_workers())
            .field("global_queue_depth", &self.global_queue_depth());
        #[cfg(feature = "metrics")]
        d.field("num_alive_tasks", &self.num_alive_tasks());
        d.finish_non_exhaustive()
    }
}

impl RuntimeMetrics {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The number of workers (1 for the current-thread flavour).
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    /// assert_eq!(rt.handle().metrics().num_workers(), 1);
    /// ```
    pub fn num_workers(&self) -> usize {
        self.shared.parkers.len()
    }

    /// Tasks in the global queue (spawned or woken from outside the
    /// workers, not yet taken by one).
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    /// let h = rt.spawn(async {}); // nothing runs it until `block_on`
    /// assert_eq!(rt.handle().metrics().global_queue_depth(), 1);
    /// rt.block_on(h).unwrap();
    /// ```
    pub fn global_queue_depth(&self) -> usize {
        self.shared.injector.len()
    }

    /// Tasks in worker `worker`'s stealable run queue. A worker also keeps
    /// a few tasks of its own (the next to run, those it hands off to):
    /// they are not counted.
    ///
    /// # Panics
    ///
    /// If `worker >= num_workers()`.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    /// rt.block_on(async {});
    /// assert_eq!(rt.handle().metrics().worker_local_queue_depth(0), 0);
    /// ```
    pub fn worker_local_queue_depth(&self, worker: usize) -> usize {
        self.shared
            .stealable_of(worker)
            .iter()
            .map(|s| s.len())
            .sum()
    }

    /// Tasks spawned and not finished yet (completed, panicked, aborted or
    /// cancelled at shutdown), `spawn_blocking` calls included.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    /// let m = rt.handle().metrics();
    /// rt.block_on(async {
    ///     let (tx, rx) = fibra::channel::<()>();
    ///     let waiting = fibra::spawn(async move { rx.recv().await });
    ///     fibra::yield_now().await;
    ///     assert!(fibra::Handle::try_current().unwrap().metrics().num_alive_tasks() >= 2);
    ///     tx.send(()).await.unwrap();
    ///     waiting.await.unwrap().unwrap();
    /// });
    /// ```
    #[cfg(feature = "metrics")]
    pub fn num_alive_tasks(&self) -> usize {
        let spawned = self.sum(Count::Spawned);
        let finished = self.sum(Count::Finished);
        spawned.saturating_sub(finished) as usize
    }

    /// Task turns (polls) run by worker `worker` so far.
    ///
    /// # Panics
    ///
    /// If `worker >= num_workers()`.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    /// rt.block_on(async {});
    /// assert!(rt.handle().metrics().worker_poll_count(0) >= 1);
    /// ```
    #[cfg(feature = "metrics")]
    pub fn worker_poll_count(&self, worker: usize) -> u64 {
        self.shared.counters[worker].load(Count::Polls)
    }

    /// Tasks worker `worker` took from other workers' queues or the global
    /// queue while searching for work (one per successful search, and one
    /// per task rescued from a stuck worker).
    ///
    /// # Panics
    ///
    /// If `worker >= num_workers()`.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    /// let m = rt.handle().metrics();
    /// let _ = m.worker_steal_count(0) + m.worker_steal_count(1);
    /// ```
    #[cfg(feature = "metrics")]
    pub fn worker_steal_count(&self, worker: usize) -> u64 {
        self.shared.counters[worker].load(Count::Steals)
    }

    /// Times worker `worker` went to sleep for lack of work.
    ///
    /// # Panics
    ///
    /// If `worker >= num_workers()`.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    /// rt.block_on(async {});
    /// std::thread::sleep(std::time::Duration::from_millis(20));
    /// assert!(rt.handle().metrics().worker_park_count(0) >= 1);
    /// ```
    #[cfg(feature = "metrics")]
    pub fn worker_park_count(&self, worker: usize) -> u64 {
        self.shared.counters[worker].load(Count::Parks)
    }

    /// Tasks worker `worker` handed over to another worker because a task
    /// running there woke them (they talk to tasks there; the runtime's
    /// docs, "Scheduling").
    ///
    /// # Panics
    ///
    /// If `worker >= num_workers()`.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    /// let m = rt.handle().metrics();
    /// let _ = m.worker_handed_over_count(0) + m.worker_handed_over_count(1);
    /// ```
    #[cfg(feature = "metrics")]
    pub fn worker_handed_over_count(&self, worker: usize) -> u64 {
        self.shared.counters[worker].load(Count::HandedOut)
    }

    /// Tasks worker `worker` handed over to another worker because, in a
    /// turn that ended with them runnable, they kept finding a lock held
    /// by that worker's tasks (the runtime's docs, "Scheduling").
    ///
    /// # Panics
    ///
    /// If `worker >= num_workers()`.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    /// let m = rt.handle().metrics();
    /// let _ = m.worker_gathered_count(0) + m.worker_gathered_count(1);
    /// ```
    #[cfg(feature = "metrics")]
    pub fn worker_gathered_count(&self, worker: usize) -> u64 {
        self.shared.counters[worker].load(Count::Gathered)
    }

    #[cfg(feature = "metrics")]
    fn sum(&self, c: Count) -> u64 {
        let workers: u64 = self.shared.counters.iter().map(|w| w.load(c)).sum();
        workers.wrapping_add(self.shared.outside.load(c))
    }
}
