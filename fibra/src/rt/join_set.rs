//! `JoinSet`: a set of spawned tasks, joined in the order they finish.
//!
//! Each task of the set is spawned wrapped: the wrapper catches the task's
//! panic and sends `(id, outcome)` on the set's unbounded channel when the
//! task ends, and a guard it owns from the spawn on sends `(id,
//! Cancelled)` if the wrapper is dropped first (an abort, a runtime
//! shutdown, even before the first poll). So every task of the set reports
//! exactly once, and waiting for the next completion is the channel's
//! receive op: O(1) per join whatever the set's size, where a choice over
//! every task's `JoinOp` would publish one record per task on each wait.
//! The set keeps each task's `JoinHandle` only to abort it.

use super::{Handle, JoinError, JoinHandle};
use crate::chan::{Receiver, RecvError, RecvOp, Sender, unbounded};
use crate::op::{BlockCx, Op, sealed::Sealed};
use pin_project_lite::pin_project;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// What a task of the set reports when it ends.
type Report<T> = (u64, Result<T, JoinError>);

/// A set of tasks spawned on a fibra runtime, joined in the order they
/// finish (tokio's `JoinSet`). Waiting for the next one is an op
/// ([`join_next_op`](JoinSet::join_next_op)), so it composes with
/// channels, timeouts and every other op in a choice.
///
/// **Dropping the set aborts every task still in it** (each is dropped at
/// its next scheduling point); use [`JoinHandle`]s from [`spawn`](crate::spawn)
/// for tasks that should outlive their spawner.
///
/// # Examples
///
/// ```
/// use fibra::JoinSet;
///
/// fibra::run(async {
///     let mut set = JoinSet::new();
///     for i in 0..10u64 {
///         set.spawn(async move { i * i });
///     }
///     let mut sum = 0;
///     while let Some(res) = set.join_next().await {
///         sum += res.unwrap();
///     }
///     assert_eq!(sum, 285);
/// });
/// ```
pub struct JoinSet<T> {
    /// The tasks not joined yet, by id.
    tasks: HashMap<u64, JoinHandle<()>>,
    next_id: u64,
    tx: Sender<Report<T>>,
    rx: Receiver<Report<T>>,
}

impl<T> JoinSet<T> {
    /// An empty set.
    ///
    /// ```
    /// let set = fibra::JoinSet::<()>::new();
    /// assert!(set.is_empty());
    /// ```
    pub fn new() -> Self {
        let (tx, rx) = unbounded();
        Self {
            tasks: HashMap::new(),
            next_id: 0,
            tx,
            rx,
        }
    }

    /// How many tasks are in the set (spawned and not joined yet).
    ///
    /// ```
    /// fibra::run(async {
    ///     let mut set = fibra::JoinSet::new();
    ///     set.spawn(async {});
    ///     assert_eq!(set.len(), 1);
    ///     set.join_next().await;
    ///     assert_eq!(set.len(), 0);
    /// });
    /// ```
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the set holds no task.
    ///
    /// ```
    /// assert!(fibra::JoinSet::<u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Asks every task in the set to stop (each is dropped at its next
    /// scheduling point). They stay in the set: each is still joined,
    /// with [`JoinError::Cancelled`] unless it finished first.
    ///
    /// ```
    /// fibra::run(async {
    ///     let mut set = fibra::JoinSet::new();
    ///     set.spawn(std::future::pending::<()>());
    ///     set.abort_all();
    ///     assert!(set.join_next().await.unwrap().unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn abort_all(&mut self) {
        self.tasks.values().for_each(JoinHandle::abort);
    }

    /// The op of joining the next task to finish: commits with
    /// `Some(outcome)` when one has finished (a panic is
    /// [`JoinError::Panicked`], an abort [`JoinError::Cancelled`]), or at
    /// once with `None` if the set is empty. An op that loses a choice
    /// takes nothing: the outcome stays for the next join.
    ///
    /// ```
    /// use fibra::{JoinSet, Op, choose, time::after};
    /// use std::time::Duration;
    ///
    /// fibra::run(async {
    ///     let mut set = JoinSet::new();
    ///     set.spawn(async {
    ///         fibra::time::sleep(Duration::from_secs(60)).await;
    ///     });
    ///     let first = choose((
    ///         set.join_next_op().wrap(|_| "a task"),
    ///         after(Duration::from_millis(10)).wrap(|()| "the timeout"),
    ///     ))
    ///     .await;
    ///     assert_eq!(first, "the timeout");
    ///     assert_eq!(set.len(), 1);
    /// }); // the set is dropped: the sleeping task is aborted
    /// ```
    pub fn join_next_op(&mut self) -> JoinNextOp<'_, T> {
        let recv = (!self.tasks.is_empty()).then(|| self.rx.recv_op());
        JoinNextOp {
            tasks: &mut self.tasks,
            recv,
        }
    }

    /// Waits for the next task to finish; `None` if the set is empty. See
    /// [`join_next_op`](JoinSet::join_next_op).
    ///
    /// ```
    /// fibra::run(async {
    ///     let mut set = fibra::JoinSet::new();
    ///     set.spawn(async { 1 });
    ///     assert_eq!(set.join_next().await.unwrap().unwrap(), 1);
    ///     assert!(set.join_next().await.is_none());
    /// });
    /// ```
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.join_next_op().await
    }

    /// The outcome of a task that has finished, if any, without waiting.
    ///
    /// ```
    /// let mut set = fibra::JoinSet::<u8>::new();
    /// assert!(set.try_join_next().is_none());
    /// ```
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.join_next_op().try_perform().ok().flatten()
    }

    /// Aborts every task and waits until each has stopped (their outcomes
    /// are dropped); the set is empty afterwards.
    ///
    /// ```
    /// fibra::run(async {
    ///     let mut set = fibra::JoinSet::new();
    ///     set.spawn(std::future::pending::<()>());
    ///     set.shutdown().await;
    ///     assert!(set.is_empty());
    /// });
    /// ```
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }
}

impl<T: Send + 'static> JoinSet<T> {
    /// Spawns `future` on the current fibra runtime as a task of this set.
    ///
    /// # Panics
    ///
    /// Outside a fibra runtime's worker: use
    /// [`spawn_on`](JoinSet::spawn_on) there.
    ///
    /// ```
    /// fibra::run(async {
    ///     let mut set = fibra::JoinSet::new();
    ///     set.spawn(async { "hi" });
    ///     assert_eq!(set.join_next().await.unwrap().unwrap(), "hi");
    /// });
    /// ```
    pub fn spawn<F>(&mut self, future: F)
    where
        F: Future<Output = T> + Send + 'static,
    {
        let handle = Handle::try_current().unwrap_or_else(|| {
            panic!(
                "fibra::JoinSet::spawn called outside a fibra runtime; use JoinSet::spawn_on \
                 with a runtime's Handle"
            )
        });
        self.spawn_on(future, &handle);
    }

    /// Spawns `future` on the runtime of `handle` as a task of this set.
    ///
    /// ```
    /// let rt = fibra::Runtime::new().unwrap();
    /// let mut set = fibra::JoinSet::new();
    /// set.spawn_on(async { 3 }, &rt.handle());
    /// let got = fibra::block_on(set.join_next()).unwrap().unwrap();
    /// assert_eq!(got, 3);
    /// ```
    pub fn spawn_on<F>(&mut self, future: F, handle: &Handle)
    where
        F: Future<Output = T> + Send + 'static,
    {
        let id = self.next_id;
        self.next_id += 1;
        // Built here, outside the task's future: it reports even if the
        // task is dropped before its first poll.
        let reporter = Reporter {
            id,
            tx: Some(self.tx.clone()),
        };
        let task = handle.spawn(async move {
            let mut reporter = reporter;
            let outcome = CatchUnwind { future }.await;
            reporter.report(outcome.map_err(JoinError::Panicked));
        });
        self.tasks.insert(id, task);
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len()).finish()
    }
}

/// Sends a task's report once: its outcome, or `Cancelled` if dropped
/// before.
struct Reporter<T> {
    id: u64,
    tx: Option<Sender<Report<T>>>,
}

impl<T> Reporter<T> {
    fn report(&mut self, outcome: Result<T, JoinError>) {
        if let Some(tx) = self.tx.take() {
            // Fails only if the set is gone: nobody wants the outcome.
            let _ = tx.try_send((self.id, outcome));
        }
    }
}

impl<T> Drop for Reporter<T> {
    fn drop(&mut self) {
        self.report(Err(JoinError::Cancelled));
    }
}

pin_project! {
    /// Polls a future, turning a panic into `Err(payload)`.
    pub(super) struct CatchUnwind<F> {
        #[pin]
        pub(super) future: F,
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.project().future;
        match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

pin_project! {
    /// The op of joining the next task of a [`JoinSet`] to finish: made by
    /// [`JoinSet::join_next_op`].
    ///
    /// ```
    /// use fibra::{JoinNextOp, JoinSet, Op};
    ///
    /// fibra::run(async {
    ///     let mut set = JoinSet::new();
    ///     set.spawn(async { 2 });
    ///     let op: JoinNextOp<'_, i32> = set.join_next_op();
    ///     assert_eq!(op.await.unwrap().unwrap(), 2);
    /// });
    /// ```
    #[must_use = "an op does nothing unless performed"]
    pub struct JoinNextOp<'a, T> {
        tasks: &'a mut HashMap<u64, JoinHandle<()>>,
        // `None`: the set was empty.
        #[pin]
        recv: Option<RecvOp<'a, Report<T>>>,
    }
}

impl<T> JoinNextOp<'_, T> {
    /// A report received: the task leaves the set.
    fn joined(
        tasks: &mut HashMap<u64, JoinHandle<()>>,
        got: Result<Report<T>, RecvError>,
    ) -> Option<Result<T, JoinError>> {
        let (id, outcome) = got.expect("the set holds a sender: its channel never closes");
        tasks.remove(&id);
        Some(outcome)
    }
}

impl<T> Sealed for JoinNextOp<'_, T> {}

impl<T> Op for JoinNextOp<'_, T> {
    type Output = Option<Result<T, JoinError>>;

    fn commits_remotely(&self) -> bool {
        self.recv.as_ref().is_none_or(Op::commits_remotely)
    }

    fn prepare(self: Pin<&mut Self>) {
        if let Some(recv) = self.project().recv.as_pin_mut() {
            recv.prepare();
        }
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        let this = self.project();
        match this.recv.as_pin_mut() {
            None => Some(None),
            Some(recv) => recv.try_now().map(|got| Self::joined(this.tasks, got)),
        }
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.project()
            .recv
            .as_pin_mut()
            .expect("an empty set's join commits in its try")
            .block(cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(recv) = self.project().recv.as_pin_mut() {
            recv.repoll(cx);
        }
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> Self::Output {
        let this = self.project();
        let recv = this.recv.as_pin_mut().expect("committed after blocking");
        Self::joined(this.tasks, recv.finish(leaf))
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        // The channel's rescue: the report goes back to the front of the
        // channel, for the next join.
        if let Some(recv) = self.project().recv.as_pin_mut() {
            recv.abandon(leaf);
        }
    }

    fn withdraw(self: Pin<&mut Self>) {
        if let Some(recv) = self.project().recv.as_pin_mut() {
            recv.withdraw();
        }
    }
}

crate::op::op_into_future! {
    impl['a, T] JoinNextOp<'a, T>;
}
