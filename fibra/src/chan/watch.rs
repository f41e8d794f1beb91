//! `watch`: a single value that senders replace and receivers watch for
//! changes (tokio's `watch`).
//!
//! # Invariants
//!
//! * `value` (a read-write lock) holds the current value. Every change
//!   happens under its write lock, and so does the version bump that
//!   announces it: a reader holding the read lock sees a value and a
//!   version that match.
//! * `state` is `version << 1 | CLOSED`. The version grows by one per
//!   change; `CLOSED` is set once, when the last sender goes. A receiver
//!   remembers the version it has seen (`seen`); it has a change to see
//!   while the versions differ.
//! * `waiters` holds the records of blocked `changed_op`s. A waiter reads
//!   `state` and publishes its record under that lock. A sender bumps the
//!   version *under* that lock and commits every record in the same
//!   critical section, so the records it commits are exactly those
//!   published before the bump, by waiters that had not seen it (a record
//!   published after a bump, by a waiter that saw the new version, is left
//!   for the next one). The last sender sets `CLOSED` and then commits
//!   every record; a waiter that looks after that sees `CLOSED` and does
//!   not publish. Readiness only grows (versions grow, `CLOSED` stays), so
//!   a committed wait always has its outcome in `finish`.
//! * No waker is woken while `waiters`' lock is held; user code (a
//!   `send_modify` closure, a `Ref` held by the caller) runs only under the
//!   value's read-write lock, never under `waiters`' spin lock.

use super::{RecvError, SendError};
use crate::loom::{Arc, AtomicUsize, Lock, Ordering, RwLock, RwLockReadGuard, RwLockWriteGuard};
use crate::op::waiter::{Registration, WaitQueue};
use crate::op::{BlockCx, Op, Perform, sealed::Sealed};
use std::fmt;
use std::marker::PhantomPinned;
use std::ops::Deref;
use std::pin::Pin;
use std::task::Waker;

const CLOSED: usize = 1;
const ONE_VERSION: usize = 2;

struct Inner<T> {
    value: RwLock<T>,
    /// `version << 1 | CLOSED` (module docs).
    state: AtomicUsize,
    waiters: Lock<WaitQueue<()>>,
    senders: AtomicUsize,
    receivers: AtomicUsize,
}

impl<T> Inner<T> {
    fn read(&self) -> RwLockReadGuard<'_, T> {
        // A panicking `send_modify` closure poisons the lock; its change is
        // announced anyway (`Bump`), and the value is still a `T`.
        self.value
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.value
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Acquire: pairs with the Release of a bump or close, so a waiter that
    /// sees the new version then reads (under the read lock, which orders
    /// it anyway) the value it announces.
    fn load(&self) -> usize {
        self.state.load(Ordering::Acquire)
    }

    /// Commits every blocked `changed_op`.
    fn wake_all(&self) {
        let mut wakers = Vec::new();
        self.waiters.lock().commit_all(&mut wakers);
        wakers.into_iter().for_each(Waker::wake);
    }

    /// What a wait that has seen version `seen` gets now: `Ok` with the
    /// version to remember, `Err` if nothing can change any more, `None`
    /// to wait.
    fn look(&self, seen: usize) -> Option<Result<usize, RecvError>> {
        let s = self.load();
        if s >> 1 != seen {
            Some(Ok(s >> 1))
        } else if s & CLOSED != 0 {
            Some(Err(RecvError))
        } else {
            None
        }
    }
}

/// Announces a change made under the write lock: bumps the version while
/// the lock is still held (it drops after this guard), even if the change
/// unwound half-way, and commits every blocked `changed_op`.
struct Bump<'a, T>(&'a Inner<T>);

impl<T> Drop for Bump<'_, T> {
    fn drop(&mut self) {
        let mut wakers = Vec::new();
        {
            // The bump and the commits in one critical section of
            // `waiters` (module docs): a wait that published after an
            // earlier bump without a commit between would be committed
            // with nothing new to see.
            let mut q = self.0.waiters.lock();
            // Release: pairs with `Inner::load`'s Acquire.
            self.0.state.fetch_add(ONE_VERSION, Ordering::Release);
            q.commit_all(&mut wakers);
        }
        // After `waiters`' lock (wakers only schedule their task; the
        // value's write lock is still held until the caller's guard drops).
        wakers.into_iter().for_each(Waker::wake);
    }
}

/// Creates a watch channel holding `init`: senders replace the value,
/// receivers read the latest one and wait for it to change (tokio's
/// `watch::channel`). Waiting is an op ([`Receiver::changed_op`]), so it
/// composes with other channels and timeouts.
///
/// A receiver sees the *latest* value, not every one: values replaced
/// before it looked are gone (that is what a watch is for; use
/// [`broadcast`](super::broadcast) to see every value).
///
/// # What happens to a value
///
/// * [`Sender::send`] fails and hands the value back when no receiver is
///   left; [`Sender::send_replace`] stores it anyway and returns the one it
///   replaced.
/// * A change is seen by every receiver until it is replaced: a
///   `changed_op` that loses a choice, or whose perform is dropped, leaves
///   the change unseen for the next one. After the last sender goes,
///   receivers still see the last change, then [`RecvError`].
///
/// # Examples
///
/// ```
/// use fibra::watch;
///
/// let (tx, mut rx) = watch::channel("starting");
/// let t = std::thread::spawn(move || {
///     rx.changed_blocking().unwrap();
///     *rx.borrow_and_update()
/// });
/// tx.send("ready").unwrap();
/// assert_eq!(t.join().unwrap(), "ready");
/// ```
pub fn channel<T>(init: T) -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner {
        value: RwLock::new(init),
        state: AtomicUsize::new(0),
        waiters: Lock::new(WaitQueue::default()),
        senders: AtomicUsize::new(1),
        receivers: AtomicUsize::new(1),
    });
    (
        Sender {
            inner: inner.clone(),
        },
        Receiver { inner, seen: 0 },
    )
}

/// The sending side of a [`watch`](self) channel. Clone it to send from
/// several places; the channel closes when the last clone is dropped.
///
/// ```
/// let (tx, mut rx) = fibra::watch::channel(0);
/// tx.clone().send(1).unwrap();
/// drop(tx);
/// assert_eq!(rx.changed_blocking(), Ok(())); // the last change
/// assert!(rx.changed_blocking().is_err()); // then closed
/// ```
pub struct Sender<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Sender<T> {
    /// Replaces the value and tells every receiver, unless no receiver is
    /// left: then the value comes back and nothing changes.
    ///
    /// ```
    /// let (tx, rx) = fibra::watch::channel(0);
    /// tx.send(1).unwrap();
    /// assert_eq!(*rx.borrow(), 1);
    /// drop(rx);
    /// assert_eq!(tx.send(2).unwrap_err().into_inner(), 2);
    /// ```
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if self.receiver_count() == 0 {
            return Err(SendError(value));
        }
        drop(self.send_replace(value));
        Ok(())
    }

    /// Replaces the value whether or not anyone watches, and returns the
    /// old one.
    ///
    /// ```
    /// let (tx, _) = fibra::watch::channel(1);
    /// assert_eq!(tx.send_replace(2), 1);
    /// assert_eq!(*tx.borrow(), 2);
    /// ```
    pub fn send_replace(&self, value: T) -> T {
        let mut old = None;
        self.send_modify(|v| old = Some(std::mem::replace(v, value)));
        old.expect("send_modify ran the closure")
    }

    /// Modifies the value in place and tells every receiver, whether or
    /// not anyone watches. `modify` runs under the value's write lock:
    /// keep it short, and do not touch the channel inside it. If it
    /// panics, what it changed so far stays, and receivers are told.
    ///
    /// ```
    /// let (tx, rx) = fibra::watch::channel(vec![1]);
    /// tx.send_modify(|v| v.push(2));
    /// assert_eq!(*rx.borrow(), [1, 2]);
    /// ```
    pub fn send_modify(&self, modify: impl FnOnce(&mut T)) -> bool {
        self.send_if_modified(|v| {
            modify(v);
            true
        })
    }

    /// Like [`send_modify`](Self::send_modify), but receivers are told only
    /// if `modify` returns `true` (it says it changed something). Returns
    /// what `modify` returned.
    ///
    /// ```
    /// let (tx, rx) = fibra::watch::channel(5);
    /// assert!(!tx.send_if_modified(|v| { let changed = *v != 5; *v = 5; changed }));
    /// assert!(!rx.has_changed().unwrap());
    /// ```
    pub fn send_if_modified(&self, modify: impl FnOnce(&mut T) -> bool) -> bool {
        // Dropped in reverse order, on return or unwind: the bump and its
        // commits (under the write lock), then the write lock.
        let mut v = self.inner.write();
        let bump = Bump(&self.inner);
        let modified = modify(&mut v);
        if !modified {
            std::mem::forget(bump);
        }
        modified
    }

    /// Reads the current value. The value stays read-locked while the
    /// [`Ref`] lives: senders wait for it.
    ///
    /// ```
    /// let (tx, _rx) = fibra::watch::channel("a");
    /// assert_eq!(*tx.borrow(), "a");
    /// ```
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref(self.inner.read())
    }

    /// A new receiver, which has seen the current value (it waits for the
    /// next change).
    ///
    /// ```
    /// let (tx, _rx) = fibra::watch::channel(0);
    /// tx.send(1).unwrap();
    /// let rx = tx.subscribe();
    /// assert!(!rx.has_changed().unwrap());
    /// assert_eq!(*rx.borrow(), 1);
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        // Relaxed, like `Arc::clone`: a handle is made from a live one.
        self.inner.receivers.fetch_add(1, Ordering::Relaxed);
        // Read under the read lock: the version of the value it sees now.
        let seen = {
            let _v = self.inner.read();
            self.inner.load() >> 1
        };
        Receiver {
            inner: self.inner.clone(),
            seen,
        }
    }

    /// How many receivers exist now.
    ///
    /// ```
    /// let (tx, rx) = fibra::watch::channel(());
    /// assert_eq!(tx.receiver_count(), 1);
    /// drop(rx);
    /// assert_eq!(tx.receiver_count(), 0);
    /// ```
    pub fn receiver_count(&self) -> usize {
        // Acquire: pairs with a receiver's AcqRel drop, so a sender that
        // reads 0 has seen everything those receivers did.
        self.inner.receivers.load(Ordering::Acquire)
    }

    /// Whether every receiver is gone ([`send`](Self::send) would fail).
    ///
    /// ```
    /// let (tx, rx) = fibra::watch::channel(());
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.receiver_count() == 0
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        // Relaxed: as in `subscribe`.
        self.inner.senders.fetch_add(1, Ordering::Relaxed);
        Sender {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // AcqRel (as `Arc`'s drop): the last sender sees every other's
        // changes before it closes.
        if self.inner.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Release: pairs with `Inner::load`'s Acquire.
            self.inner.state.fetch_or(CLOSED, Ordering::Release);
            self.inner.wake_all();
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("watch::Sender")
            .field("value", &*self.borrow())
            .finish()
    }
}

/// The receiving side of a [`watch`](self) channel: reads the latest
/// value and waits for changes. A clone has seen what the original has.
///
/// ```
/// # fibra::run(async {
/// let (tx, mut rx) = fibra::watch::channel("off");
/// let t = fibra::spawn(async move {
///     while *rx.borrow_and_update() != "on" {
///         rx.changed().await.unwrap();
///     }
/// });
/// tx.send("on").unwrap();
/// t.await.unwrap();
/// # });
/// ```
pub struct Receiver<T> {
    inner: Arc<Inner<T>>,
    /// The version this receiver has seen.
    seen: usize,
}

impl<T> Receiver<T> {
    /// Reads the current value, without marking it seen. The value stays
    /// read-locked while the [`Ref`] lives: senders wait for it.
    ///
    /// ```
    /// let (tx, rx) = fibra::watch::channel(1);
    /// tx.send(2).unwrap();
    /// assert_eq!(*rx.borrow(), 2);
    /// assert!(rx.has_changed().unwrap()); // still unseen
    /// ```
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref(self.inner.read())
    }

    /// Reads the current value and marks it seen: [`changed_op`] waits for
    /// the next change after it.
    ///
    /// [`changed_op`]: Self::changed_op
    ///
    /// ```
    /// let (tx, mut rx) = fibra::watch::channel(1);
    /// tx.send(2).unwrap();
    /// assert_eq!(*rx.borrow_and_update(), 2);
    /// assert!(!rx.has_changed().unwrap());
    /// ```
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        let v = self.inner.read();
        // Under the read lock: the version of the value we return.
        self.seen = self.inner.load() >> 1;
        Ref(v)
    }

    /// Whether there is a change this receiver has not seen; `Err` if there
    /// is none and every sender is gone (none can come).
    ///
    /// ```
    /// let (tx, rx) = fibra::watch::channel(1);
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// tx.send(2).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.has_changed(), Ok(true)); // the last change is still there
    /// ```
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        match self.inner.look(self.seen) {
            Some(Ok(_)) => Ok(true),
            Some(Err(e)) => Err(e),
            None => Ok(false),
        }
    }

    /// Marks the current value seen, without reading it.
    ///
    /// ```
    /// let (tx, mut rx) = fibra::watch::channel(1);
    /// tx.send(2).unwrap();
    /// rx.mark_unchanged();
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// ```
    pub fn mark_unchanged(&mut self) {
        self.seen = self.inner.load() >> 1;
    }

    /// The op of waiting for a change this receiver has not seen: `Ok(())`
    /// (the change is then marked seen: read it with
    /// [`borrow`](Self::borrow)), or `Err(RecvError)` once every sender is
    /// gone and the last change was seen. A wait that loses a choice leaves
    /// the change unseen.
    ///
    /// ```
    /// use fibra::{Op, choose_biased, watch, always};
    ///
    /// let (tx, mut rx) = watch::channel(0);
    /// let changed = |rx: &mut watch::Receiver<i32>| {
    ///     choose_biased((rx.changed_op().wrap(|r| r.is_ok()), always(false))).perform()
    /// };
    /// assert!(!changed(&mut rx));
    /// tx.send(1).unwrap();
    /// assert!(changed(&mut rx));
    /// assert_eq!(*rx.borrow(), 1);
    /// assert!(!changed(&mut rx)); // seen
    /// ```
    pub fn changed_op(&mut self) -> ChangedOp<'_, T> {
        ChangedOp {
            rx: self,
            slot: (),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Waits for a change; see [`changed_op`](Self::changed_op).
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, mut rx) = fibra::watch::channel(0);
    /// tx.send(1).unwrap();
    /// rx.changed().await.unwrap();
    /// assert_eq!(*rx.borrow(), 1);
    /// drop(tx);
    /// assert!(rx.changed().await.is_err());
    /// # });
    /// ```
    pub fn changed(&mut self) -> Perform<ChangedOp<'_, T>> {
        Perform::new(self.changed_op())
    }

    /// Waits for a change, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let (tx, mut rx) = fibra::watch::channel(0);
    /// std::thread::spawn(move || tx.send(1).unwrap());
    /// rx.changed_blocking().unwrap();
    /// assert_eq!(*rx.borrow(), 1);
    /// ```
    pub fn changed_blocking(&mut self) -> Result<(), RecvError> {
        self.changed_op().perform()
    }

    /// Whether `self` and `other` watch the same channel.
    ///
    /// ```
    /// let (_tx, rx) = fibra::watch::channel(());
    /// assert!(rx.same_channel(&rx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        // Relaxed: as in `Sender::subscribe`.
        self.inner.receivers.fetch_add(1, Ordering::Relaxed);
        Receiver {
            inner: self.inner.clone(),
            seen: self.seen,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // AcqRel: see `Sender::receiver_count`.
        self.inner.receivers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("watch::Receiver")
            .field("value", &*self.borrow())
            .finish()
    }
}

/// A read of a watch channel's value: made by [`Receiver::borrow`],
/// [`Receiver::borrow_and_update`] and [`Sender::borrow`]. Senders wait
/// while it lives; drop it soon (and never hold it across an `.await` or
/// a blocking call).
///
/// ```
/// let (_tx, rx) = fibra::watch::channel(String::from("hi"));
/// let r: fibra::watch::Ref<'_, String> = rx.borrow();
/// assert_eq!(r.len(), 2);
/// ```
pub struct Ref<'a, T>(RwLockReadGuard<'a, T>);

impl<T> Deref for Ref<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The op of waiting for a watch channel's change: made by
/// [`Receiver::changed_op`].
///
/// ```
/// use fibra::{Op, watch};
///
/// let (tx, mut rx) = watch::channel(0);
/// tx.send(1).unwrap();
/// let op: watch::ChangedOp<'_, i32> = rx.changed_op();
/// assert_eq!(op.perform(), Ok(()));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct ChangedOp<'a, T> {
    rx: &'a mut Receiver<T>,
    slot: (),
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl<T> ChangedOp<'_, T> {
    fn project(self: Pin<&mut Self>) -> (&mut Receiver<T>, &(), &mut Option<Registration>) {
        // SAFETY: nothing is moved out; only `slot` is pointed at (by our
        // record), and it is handed out as a shared reference.
        let this = unsafe { self.get_unchecked_mut() };
        (this.rx, &this.slot, &mut this.published)
    }

    /// Marks what the look found as seen, and turns it into the outcome.
    fn take(rx: &mut Receiver<T>, look: Result<usize, RecvError>) -> Result<(), RecvError> {
        rx.seen = look?;
        Ok(())
    }
}

impl<T> Sealed for ChangedOp<'_, T> {}

impl<T> Op for ChangedOp<'_, T> {
    type Output = Result<(), RecvError>;

    // Committed by senders, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        let (rx, _, _) = self.project();
        let look = rx.inner.look(rx.seen)?;
        Some(Self::take(rx, look))
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (rx, slot, published) = self.project();
        let mut q = rx.inner.waiters.lock();
        // Under the lock that senders take after announcing a change:
        // either we see it now or they find our record.
        if rx.inner.look(rx.seen).is_some() {
            if cx.state.claim().is_ok() {
                cx.state.commit_own(cx.leaf);
            }
            return;
        }
        *published = Some(q.publish(cx, slot));
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        let (rx, _, published) = self.project();
        *published = None;
        let look = rx
            .inner
            .look(rx.seen)
            .expect("a committed wait has an outcome (readiness only grows)");
        Self::take(rx, look)
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        // Nothing was marked seen: the change waits for the next look.
        *self.project().2 = None;
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (rx, _, published) = self.project();
        if let Some(reg) = published.take() {
            rx.inner.waiters.lock().remove(reg);
        }
    }
}

crate::op::op_into_future! {
    impl['a, T] ChangedOp<'a, T>;
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::loom::{model, thread};

    #[test]
    fn loom_watch_send_racing_a_blocked_changed() {
        // The change is seen whether the wait blocks before or after the
        // version bump, and the value read then is the new one.
        model(|| {
            let (tx, mut rx) = channel(0u32);
            let t = thread::spawn(move || tx.send(1).unwrap());
            rx.changed_blocking().unwrap();
            assert_eq!(*rx.borrow_and_update(), 1);
            t.join().unwrap();
            // The sender is gone and the change was seen.
            assert_eq!(rx.changed_blocking(), Err(RecvError));
        });
    }

    #[test]
    fn loom_watch_last_sender_drop_racing_a_blocked_changed() {
        model(|| {
            let (tx, mut rx) = channel(0u32);
            let t = thread::spawn(move || drop(tx));
            assert_eq!(rx.changed_blocking(), Err(RecvError));
            t.join().unwrap();
        });
    }

    #[test]
    fn loom_watch_a_wait_that_saw_a_bump_is_not_committed_by_it() {
        // The receiver may read version 1 between the bump and the commits
        // of the send that made it, then block: that send must not commit
        // its wait (it would find nothing new in `finish`); the next one
        // does.
        model(|| {
            let (tx, mut rx) = channel(0u32);
            let t = thread::spawn(move || {
                tx.send(1).unwrap();
                tx.send(2).unwrap();
            });
            while *rx.borrow_and_update() != 2 {
                rx.changed_blocking().unwrap();
            }
            t.join().unwrap();
        });
    }
}
