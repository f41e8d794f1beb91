//! `Mutex`: a fair mutual-exclusion lock whose lock is an op.
//!
//! # Invariants
//!
//! * `state` holds two bits. `LOCKED`: some guard (or a perform about to
//!   return one) owns the data. `QUEUED`: `waiters` may hold records; it is
//!   set and cleared only under the queue lock, with read-modify-writes, so
//!   lock-free moves of `LOCKED` never overwrite it.
//! * `LOCKED` is set lock-free from clear (`try_lock`, the optimistic phase:
//!   one `fetch_or`) or under the queue lock (a blocked locker's retry). It
//!   is cleared only by the owner: lock-free when `state` is exactly
//!   `LOCKED` (nobody queued), else under the queue lock (`unlock_slow`).
//! * **Hand-off**: a live record is left in `waiters` only while `LOCKED` is
//!   set (a blocked locker publishes, sets `QUEUED` and takes the lock itself
//!   in its retry if it is free, all under the queue lock). An owner that
//!   finds `QUEUED` does not unlock: under the queue lock it commits the
//!   first live record and the lock passes to that perform without ever
//!   being free. Only when no live record is left does it clear `state`.
//!   So nobody can barge past a queued locker, and lockers are served FIFO.
//! * Both `fetch_or(QUEUED)` in a retry and the owner's `LOCKED -> 0`
//!   compare-and-swap are read-modify-writes of the one word: whichever
//!   comes first in its modification order, either the owner sees `QUEUED`
//!   and serves the queue, or the locker sees the lock free. No fence is
//!   needed.
//! * The data is handed on with release/acquire: to a lock-free taker
//!   through `state` (Release clear, Acquire set), to a queued locker
//!   through its opstate (`Won::complete` stores `SYNCED` with Release after
//!   the owner's last access; the perform loads it with Acquire before it
//!   makes the guard).
//! * A record committed by `unlock_slow` owns the lock; a perform dropped
//!   after that commit unlocks (hands on) in `abandon`. A record met stale
//!   (its perform committed elsewhere or was dropped) is skipped.
//! * No waker is woken while the lock is held, and the lock never covers
//!   user code (the data is accessed through guards, outside it).

use crate::loom::{AtomicUsize, Lock, Ordering, UnsafeCell};
use crate::op::waiter::{Registration, WaitQueue};
use crate::op::{BlockCx, Op, Quick, sealed::Sealed};
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::marker::{PhantomData, PhantomPinned};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

const LOCKED: usize = 1;
const QUEUED: usize = 2;

/// A fair mutual-exclusion lock protecting a `T`, whose lock is an op, so
/// waiting for it composes with channels, timeouts and every other op in a
/// choice. Works from async code on any executor
/// ([`lock`](Mutex::lock)`.await`) and from OS threads
/// ([`lock_blocking`](Mutex::lock_blocking)).
///
/// **Fair**: when a [`MutexGuard`] is dropped while lockers wait, the lock
/// passes directly to the one that has waited longest; it is never free in
/// between, so nobody barges in. Uncontended, locking and unlocking are one
/// atomic read-modify-write each.
///
/// As with tokio's mutex, a guard may be held across `.await` points and
/// is `Send` (when `T: Send`), so a task holding it can move between
/// threads.
///
/// # Examples
///
/// ```
/// use fibra::Mutex;
/// use std::sync::Arc;
///
/// let counter = Arc::new(Mutex::new(0));
/// let threads: Vec<_> = (0..4)
///     .map(|_| {
///         let counter = counter.clone();
///         std::thread::spawn(move || {
///             for _ in 0..100 {
///                 *counter.lock_blocking() += 1;
///             }
///         })
///     })
///     .collect();
/// threads.into_iter().for_each(|t| t.join().unwrap());
/// assert_eq!(*counter.lock_blocking(), 400);
/// ```
pub struct Mutex<T> {
    state: AtomicUsize,
    waiters: Lock<WaitQueue<()>>,
    data: UnsafeCell<T>,
}

// SAFETY: the mutex moves `T` between threads (whoever holds the lock gets
// `&mut T`), so `T: Send` is required, and enough: one holder at a time.
unsafe impl<T: Send> Send for Mutex<T> {}
// SAFETY: as above; `&Mutex<T>` only gives access to `T` through the lock.
unsafe impl<T: Send> Sync for Mutex<T> {}

impl<T> Mutex<T> {
    /// An unlocked mutex protecting `value`.
    ///
    /// ```
    /// let m = fibra::Mutex::new(vec![1]);
    /// m.try_lock().unwrap().push(2);
    /// assert_eq!(m.into_inner(), [1, 2]);
    /// ```
    pub fn new(value: T) -> Self {
        Self {
            state: AtomicUsize::new(0),
            waiters: Lock::new(WaitQueue::default()),
            data: UnsafeCell::new(value),
        }
    }

    /// The op of locking: commits when this perform gets the lock (FIFO
    /// among blocked lockers) and yields its guard. An op that loses a
    /// choice does not hold the lock; one whose perform is dropped after it
    /// got the lock passes it on.
    ///
    /// ```
    /// use fibra::{Mutex, Op, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let m = Mutex::new(0);
    /// let held = m.try_lock().unwrap();
    /// // Wait for the lock, but at most 10 ms.
    /// let got = choose((
    ///     m.lock_op().wrap(|mut g| {
    ///         *g += 1;
    ///         true
    ///     }),
    ///     after(Duration::from_millis(10)).wrap(|()| false),
    /// ))
    /// .perform();
    /// assert!(!got);
    /// drop(held);
    /// assert_eq!(*m.lock_op().perform(), 0);
    /// ```
    pub fn lock_op(&self) -> LockOp<'_, T> {
        LockOp {
            mutex: self,
            slot: (),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Waits for the lock.
    ///
    /// Cancel-safe: if the future is dropped before it gets the lock it
    /// leaves the line; if it is dropped right after the lock was handed to
    /// it, it hands the lock on.
    ///
    /// ```
    /// # fibra::run(async {
    /// let m = fibra::Mutex::new(1);
    /// *m.lock().await += 1;
    /// assert_eq!(*m.lock().await, 2);
    /// # });
    /// ```
    pub fn lock(&self) -> MutexLock<'_, T> {
        MutexLock {
            wait: Quick::new(self.lock_op()),
        }
    }

    /// Waits for the lock, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let m = fibra::Mutex::new(String::new());
    /// m.lock_blocking().push_str("hi");
    /// assert_eq!(*m.lock_blocking(), "hi");
    /// ```
    pub fn lock_blocking(&self) -> MutexGuard<'_, T> {
        self.lock_op().perform()
    }

    /// Takes the lock if it is free now. Never jumps the queue: while
    /// lockers wait, the lock is held (it passes from one to the next).
    ///
    /// ```
    /// let m = fibra::Mutex::new(());
    /// let g = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert!(m.try_lock().is_some());
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.try_take().then(|| MutexGuard::new(self))
    }

    /// The data, through exclusive access to the mutex (no locking needed).
    ///
    /// ```
    /// let mut m = fibra::Mutex::new(1);
    /// *m.get_mut() = 5;
    /// assert_eq!(*m.try_lock().unwrap(), 5);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self`: no guard exists (guards borrow the mutex), so
        // nobody else can reach the data for the borrow's lifetime.
        self.data.with_mut(|p| unsafe { &mut *p })
    }

    /// The data, consuming the mutex.
    ///
    /// ```
    /// let m = fibra::Mutex::new([1, 2]);
    /// assert_eq!(m.into_inner(), [1, 2]);
    /// ```
    pub fn into_inner(self) -> T {
        let Mutex { data, .. } = self;
        // The cell is read out once and never dropped, so the value is
        // moved, not duplicated.
        let data = ManuallyDrop::new(data);
        // SAFETY: we own the mutex by value, so no guard or op refers to it;
        // the value is initialised and, the cell being forgotten, read once.
        data.with_mut(|p| unsafe { p.read() })
    }

    /// `LOCKED` from clear, lock-free; `false` if the lock is held.
    fn try_take(&self) -> bool {
        // Acquire pairs with the Release that cleared `LOCKED` (or the
        // release sequence it heads), so the last owner's writes are
        // visible. An RMW that finds `LOCKED` set changes nothing. Setting
        // it while `QUEUED` is set is not barging: a free lock has no live
        // record queued (module invariants).
        self.state.fetch_or(LOCKED, Ordering::Acquire) & LOCKED == 0
    }

    /// The owner lets go: unlocks, or hands the lock to the first live
    /// queued locker.
    fn unlock(&self) {
        // Release: our accesses to the data happen before the next owner's.
        if self
            .state
            .compare_exchange(LOCKED, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.unlock_slow();
        }
    }

    #[cold]
    fn unlock_slow(&self) {
        let waker = {
            let mut q = self.waiters.lock();
            let mut waker = None;
            let mut handed = false;
            while let Some(w) = q.pop_front() {
                if let Some(won) = w.win() {
                    // The lock is now that perform's; `LOCKED` stays set.
                    // Release (the `SYNCED` store in `complete`) orders our
                    // accesses to the data before the new owner's.
                    waker = won.complete(|()| {});
                    handed = true;
                    break;
                }
                // Stale: its perform committed elsewhere or was dropped.
            }
            if handed {
                if q.is_empty() {
                    // Relaxed: we own the lock; nothing is published by it.
                    self.state.fetch_and(!QUEUED, Ordering::Relaxed);
                }
            } else {
                // Queue empty, lock ours: clear both bits. Release: our
                // accesses to the data happen before the next owner's.
                self.state.fetch_and(!(LOCKED | QUEUED), Ordering::Release);
            }
            waker
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// Exclusive access to a [`Mutex`]'s data; unlocks (or hands the lock to
/// the next queued locker) when dropped.
///
/// `Send` when `T: Send` (like tokio's guard: it may be held across
/// `.await` in a task that moves between threads), `Sync` when `T` is also
/// `Sync`.
///
/// ```
/// use fibra::{Mutex, MutexGuard};
///
/// let m = Mutex::new(1);
/// let mut g: MutexGuard<'_, i32> = m.lock_blocking();
/// *g += 1;
/// drop(g);
/// assert_eq!(*m.lock_blocking(), 2);
/// ```
#[must_use = "dropping a guard unlocks the mutex at once"]
pub struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
    /// Sync only if `T: Sync` (the guard hands out `&T`); Send only if
    /// `T: Send` (already implied by `&Mutex<T>`).
    _data: PhantomData<&'a mut T>,
}

impl<'a, T> MutexGuard<'a, T> {
    /// A guard for a lock the caller has just taken.
    fn new(mutex: &'a Mutex<T>) -> Self {
        Self {
            mutex,
            _data: PhantomData,
        }
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: we hold the lock, so nobody writes the data while this
        // shared borrow of the guard lives.
        self.mutex.data.with(|p| unsafe { &*p })
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock, and `&mut self` makes this the only
        // borrow through the guard.
        self.mutex.data.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.unlock();
    }
}

impl<T: fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

pin_project! {
    /// The future of [`Mutex::lock`]: takes a free lock at once (one
    /// atomic read-modify-write, no op state built), and otherwise performs
    /// its [`LockOp`], waiting in FIFO order.
    ///
    /// Cancel-safe as a perform: dropped before it got the lock, it holds
    /// nothing; dropped right after the lock was handed to it, it hands the
    /// lock on.
    ///
    /// ```
    /// # fibra::run(async {
    /// let m = fibra::Mutex::new(1);
    /// let lock: fibra::sync::MutexLock<'_, i32> = m.lock();
    /// *lock.await += 1;
    /// assert_eq!(*m.lock().await, 2);
    /// # });
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    pub struct MutexLock<'a, T> {
        #[pin]
        wait: Quick<LockOp<'a, T>>,
    }
}

impl<'a, T> Future for MutexLock<'a, T> {
    type Output = MutexGuard<'a, T>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().wait.poll(cx)
    }
}

impl<T> fmt::Debug for MutexLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexLock")
            .field("waits", &self.wait.waits())
            .finish_non_exhaustive()
    }
}

/// The op of locking a [`Mutex`]: made by [`Mutex::lock_op`].
///
/// ```
/// use fibra::{LockOp, Mutex, Op};
///
/// let m = Mutex::new(3);
/// let op: LockOp<'_, i32> = m.lock_op();
/// assert_eq!(*op.perform(), 3);
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct LockOp<'a, T> {
    mutex: &'a Mutex<T>,
    /// Nothing to carry: committing the record *is* getting the lock.
    slot: (),
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl<'a, T> LockOp<'a, T> {
    fn project(self: Pin<&mut Self>) -> (&'a Mutex<T>, &(), &mut Option<Registration>) {
        // SAFETY: nothing is moved out; `published` is not structurally
        // pinned and the slot is only pointed at.
        let this = unsafe { self.get_unchecked_mut() };
        (this.mutex, &this.slot, &mut this.published)
    }
}

impl<T> Sealed for LockOp<'_, T> {}

impl<'a, T> Op for LockOp<'a, T> {
    type Output = MutexGuard<'a, T>;

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        let mutex = self.mutex;
        mutex.try_take().then(|| MutexGuard::new(mutex))
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (mutex, slot, published) = self.project();
        let mut q = mutex.waiters.lock();
        let reg = q.publish(cx, slot);
        // An RMW, so it reads the latest value of the word: it cannot miss
        // an unlock that came before it, and an unlock after it sees
        // `QUEUED` (module invariants). Relaxed: it only decides whether to
        // try; the data is acquired by `try_take` below or, if the lock is
        // handed to us, through our opstate.
        let seen = mutex.state.fetch_or(QUEUED, Ordering::Relaxed);
        *published = Some(reg);
        if seen & LOCKED != 0 {
            return; // the owner will find our record when it lets go
        }
        if cx.state.claim().is_err() {
            return; // another branch committed meanwhile
        }
        if !mutex.try_take() {
            // A lock-free `try_lock` took it between our two RMWs; its owner
            // will see `QUEUED` and serve us.
            cx.state.unclaim();
            return;
        }
        *published = None;
        q.remove(reg);
        if q.is_empty() {
            // Relaxed: we own the lock; `QUEUED` publishes nothing.
            mutex.state.fetch_and(!QUEUED, Ordering::Relaxed);
        }
        cx.state.commit_own(cx.leaf);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        let (mutex, _, published) = self.project();
        // Whoever committed us removed our record (the owner that handed
        // the lock over, or our own retry).
        *published = None;
        MutexGuard::new(mutex)
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        let (mutex, _, published) = self.project();
        *published = None;
        // The lock was handed to us and nobody will use it: hand it on.
        mutex.unlock();
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (mutex, _, published) = self.project();
        if let Some(reg) = published.take() {
            let mut q = mutex.waiters.lock();
            q.remove(reg);
            if q.is_empty() {
                // Relaxed: `QUEUED` publishes nothing; clearing it only
                // lets the owner take the fast unlock.
                mutex.state.fetch_and(!QUEUED, Ordering::Relaxed);
            }
        }
    }
}

crate::op::op_into_future! {
    impl['a, T] LockOp<'a, T>;
}
