//! `RwLock`: a fair reader-writer lock whose read and write locks are ops.
//!
//! # Invariants
//!
//! * `state` (under its lock) holds the holders (`readers`, `writer`) and
//!   the FIFO of blocked lockers. Every change of the holders, lock-free
//!   paths included, happens under that lock: there is no lock-free step of
//!   its own (an uncontended read or write lock is one lock/unlock pair).
//! * A record's slot is its kind (`true` for a writer), written before the
//!   record is published and never afterwards, so the holder of the lock
//!   reads the front record's kind without owning its slot
//!   (`WaitQueue::front_kind`).
//! * **FIFO, phase-fair.** A locker takes the lock at once only if the
//!   queue is empty and the lock is compatible (no writer for a reader;
//!   nobody for a writer). Otherwise it queues, and `serve` admits from the
//!   front: a writer when nobody holds the lock, readers while no writer
//!   holds it, stopping at the first record it cannot admit. So a waiting
//!   writer holds back the readers that come after it (no writer
//!   starvation), and a writer that comes after waiting readers waits for
//!   them (no reader starvation).
//! * `serve` runs after every release and every withdrawal (a writer
//!   leaving the front may unblock the readers behind it), and in a blocked
//!   locker's retry, where its own record is committed by its owner
//!   (`W -> C -> SYNCED`), the others' by the remote path (`Won::complete`).
//!   A record committed by `serve` holds the lock; a perform dropped after
//!   that commit releases it (`abandon`). A stale record is dropped.
//! * The data is handed on by the lock: every grant and release happens
//!   under it, and a queued locker reads the data only after its opstate's
//!   `SYNCED` (Release, stored after the grant).
//! * No waker is woken while the lock is held, and the lock never covers
//!   user code (the data is accessed through guards, outside it).

use crate::loom::{Lock, UnsafeCell};
use crate::op::waiter::{Registration, WaitQueue, Woken};
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::fmt;
use std::marker::{PhantomData, PhantomPinned};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;

/// Who holds the lock, and who waits for it.
struct State {
    readers: usize,
    writer: bool,
    /// Blocked lockers; each record's slot is its kind (`true`: a writer).
    waiters: WaitQueue<bool>,
}

impl State {
    fn admits(&self, write: bool) -> bool {
        if write {
            !self.writer && self.readers == 0
        } else {
            !self.writer
        }
    }

    fn grant(&mut self, write: bool) {
        if write {
            self.writer = true;
        } else {
            self.readers = self
                .readers
                .checked_add(1)
                .expect("too many readers of one RwLock");
        }
    }

    /// Admits blocked lockers from the front while it can (module
    /// invariants). `me`: the record of a locker in its retry, which this
    /// commits as its owner; returns whether that one got the lock
    /// (`Some(true)`), lost to another branch of its perform
    /// (`Some(false)`), or still waits (`None`).
    fn serve(
        &mut self,
        me: Option<(Registration, BlockCx<'_>)>,
        wakers: &mut Woken,
    ) -> Option<bool> {
        let mut mine = None;
        while let Some(&write) = self.waiters.front_kind() {
            if !self.admits(write) {
                break;
            }
            let w = self.waiters.pop_front().expect("the front record");
            if let Some((_, cx)) = me.filter(|(reg, _)| w.registration() == *reg) {
                // Our own record: claim our opstate, as in any retry.
                if cx.state.claim().is_ok() {
                    self.grant(write);
                    cx.state.commit_own(cx.leaf);
                    mine = Some(true);
                } else {
                    mine = Some(false);
                }
                continue;
            }
            if let Some(won) = w.win() {
                self.grant(write);
                // The kind is the whole payload: committing is granting.
                wakers.push(won.complete(|_| {}));
            }
            // Else stale (committed elsewhere or dropped): on to the next.
        }
        mine
    }
}

/// A fair reader-writer lock protecting a `T`: many readers or one writer
/// at a time. Its read and write locks are ops
/// ([`read_op`](RwLock::read_op), [`write_op`](RwLock::write_op)), so
/// waiting for them composes with channels, timeouts and every other op in
/// a choice. Works from async code on any executor
/// ([`read`](RwLock::read)`.await`) and from OS threads
/// ([`read_blocking`](RwLock::read_blocking)).
///
/// **Fair (FIFO, phase-fair)**, like tokio's `RwLock`: lockers are served in
/// the order they queued. A reader does not pass a waiting writer, so a
/// stream of readers cannot starve writers; and a writer does not pass
/// waiting readers, so writers cannot starve readers either. When a writer
/// unlocks, every reader queued before the next writer gets the lock at
/// once. (A writer-preferring lock would starve readers under a steady
/// stream of writes; a reader-preferring one, writers under steady reads.)
///
/// Guards may be held across `.await`; they are `Send` when `T` allows.
///
/// # Examples
///
/// ```
/// use fibra::RwLock;
///
/// fibra::run(async {
///     let lock = RwLock::new(vec![1, 2]);
///     {
///         let a = lock.read().await;
///         let b = lock.read().await; // many readers at once
///         assert_eq!(a.len() + b.len(), 4);
///     }
///     lock.write().await.push(3); // one writer
///     assert_eq!(*lock.read().await, [1, 2, 3]);
/// });
/// ```
pub struct RwLock<T> {
    state: Lock<State>,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands `&mut T` to one writer at a time (any thread),
// hence `T: Send`.
unsafe impl<T: Send> Send for RwLock<T> {}
// SAFETY: readers on several threads share `&T` (`T: Sync`); a writer on
// any thread gets `&mut T` (`T: Send`).
unsafe impl<T: Send + Sync> Sync for RwLock<T> {}

impl<T> RwLock<T> {
    /// An unlocked lock protecting `value`.
    ///
    /// ```
    /// let lock = fibra::RwLock::new(5);
    /// assert_eq!(*lock.try_read().unwrap(), 5);
    /// ```
    pub fn new(value: T) -> Self {
        Self {
            state: Lock::new(State {
                readers: 0,
                writer: false,
                waiters: WaitQueue::default(),
            }),
            data: UnsafeCell::new(value),
        }
    }

    /// The data, consuming the lock.
    ///
    /// ```
    /// let lock = fibra::RwLock::new(String::from("x"));
    /// assert_eq!(lock.into_inner(), "x");
    /// ```
    pub fn into_inner(self) -> T {
        let RwLock { data, .. } = self;
        // The cell is read out once and never dropped, so the value is
        // moved, not duplicated.
        let data = ManuallyDrop::new(data);
        // SAFETY: we own the lock by value, so no guard or op refers to it;
        // the value is initialised and, the cell being forgotten, read once.
        data.with_mut(|p| unsafe { p.read() })
    }
}

impl<T> RwLock<T> {
    /// The op of locking for reading: commits when this perform may read
    /// (FIFO among blocked lockers) and yields a read guard. An op that
    /// loses a choice holds nothing; one whose perform is dropped after it
    /// got the lock releases it.
    ///
    /// ```
    /// use fibra::{Op, RwLock, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let lock = RwLock::new(0);
    /// let w = lock.try_write().unwrap();
    /// // Wait to read, but at most 10 ms.
    /// let read = choose((
    ///     lock.read_op().wrap(|g| Some(*g)),
    ///     after(Duration::from_millis(10)).wrap(|()| None),
    /// ))
    /// .perform();
    /// assert_eq!(read, None);
    /// drop(w);
    /// assert_eq!(*lock.read_op().perform(), 0);
    /// ```
    pub fn read_op(&self) -> ReadOp<'_, T> {
        ReadOp(Locking::new(self, false))
    }

    /// The op of locking for writing: commits when this perform holds the
    /// lock alone (FIFO among blocked lockers) and yields a write guard.
    /// An op that loses a choice holds nothing; one whose perform is
    /// dropped after it got the lock releases it.
    ///
    /// ```
    /// use fibra::{Op, RwLock, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let lock = RwLock::new(0);
    /// let r = lock.try_read().unwrap();
    /// let wrote = choose((
    ///     lock.write_op().wrap(|mut g| {
    ///         *g += 1;
    ///         true
    ///     }),
    ///     after(Duration::from_millis(10)).wrap(|()| false),
    /// ))
    /// .perform();
    /// assert!(!wrote); // a reader holds it
    /// drop(r);
    /// *lock.write_op().perform() += 1;
    /// assert_eq!(*lock.try_read().unwrap(), 1);
    /// ```
    pub fn write_op(&self) -> WriteOp<'_, T> {
        WriteOp(Locking::new(self, true))
    }

    /// Waits to read.
    ///
    /// Cancel-safe: dropped before it gets the lock, it leaves the line;
    /// dropped right after the lock was handed to it, it releases it.
    ///
    /// ```
    /// # fibra::run(async {
    /// let lock = fibra::RwLock::new(1);
    /// assert_eq!(*lock.read().await, 1);
    /// # });
    /// ```
    pub async fn read(&self) -> RwLockReadGuard<'_, T> {
        self.read_op().await
    }

    /// Waits to write. Cancel-safe, as [`read`](RwLock::read).
    ///
    /// ```
    /// # fibra::run(async {
    /// let lock = fibra::RwLock::new(1);
    /// *lock.write().await += 1;
    /// assert_eq!(*lock.read().await, 2);
    /// # });
    /// ```
    pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.write_op().await
    }

    /// Waits to read, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let lock = fibra::RwLock::new("hi");
    /// assert_eq!(*lock.read_blocking(), "hi");
    /// ```
    pub fn read_blocking(&self) -> RwLockReadGuard<'_, T> {
        self.read_op().perform()
    }

    /// Waits to write, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let lock = fibra::RwLock::new(0);
    /// *lock.write_blocking() = 3;
    /// assert_eq!(*lock.read_blocking(), 3);
    /// ```
    pub fn write_blocking(&self) -> RwLockWriteGuard<'_, T> {
        self.write_op().perform()
    }

    /// Locks for reading if that is possible now without passing a queued
    /// locker.
    ///
    /// ```
    /// let lock = fibra::RwLock::new(());
    /// let r = lock.try_read().unwrap();
    /// assert!(lock.try_read().is_some()); // readers share
    /// assert!(lock.try_write().is_none());
    /// drop(r);
    /// ```
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        self.try_take(false).then(|| RwLockReadGuard::new(self))
    }

    /// Locks for writing if nobody holds the lock or waits for it now.
    ///
    /// ```
    /// let lock = fibra::RwLock::new(());
    /// let w = lock.try_write().unwrap();
    /// assert!(lock.try_read().is_none());
    /// drop(w);
    /// assert!(lock.try_write().is_some());
    /// ```
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        self.try_take(true).then(|| RwLockWriteGuard::new(self))
    }

    /// The data, through exclusive access to the lock (no locking needed).
    ///
    /// ```
    /// let mut lock = fibra::RwLock::new(1);
    /// *lock.get_mut() = 2;
    /// assert_eq!(*lock.try_read().unwrap(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self`: no guard exists (guards borrow the lock).
        self.data.with_mut(|p| unsafe { &mut *p })
    }

    fn try_take(&self, write: bool) -> bool {
        let mut st = self.state.lock();
        if st.waiters.is_empty() && st.admits(write) {
            st.grant(write);
            true
        } else {
            false
        }
    }

    /// A holder lets go; the lockers it unblocks are woken.
    fn release(&self, write: bool) {
        let mut wakers = Woken::default();
        {
            let mut st = self.state.lock();
            if write {
                st.writer = false;
            } else {
                st.readers -= 1;
            }
            st.serve(None, &mut wakers);
        }
        wakers.wake_all();
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// Shared access to an [`RwLock`]'s data; releases it when dropped.
///
/// ```
/// use fibra::{RwLock, RwLockReadGuard};
///
/// let lock = RwLock::new(1);
/// let g: RwLockReadGuard<'_, i32> = lock.read_blocking();
/// assert_eq!(*g, 1);
/// ```
#[must_use = "dropping a guard releases the lock at once"]
pub struct RwLockReadGuard<'a, T> {
    lock: &'a RwLock<T>,
    /// Send and Sync only if `T: Sync` (the guard hands out `&T`).
    _data: PhantomData<&'a T>,
}

impl<'a, T> RwLockReadGuard<'a, T> {
    fn new(lock: &'a RwLock<T>) -> Self {
        Self {
            lock,
            _data: PhantomData,
        }
    }
}

impl<T> Deref for RwLockReadGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: we hold a read lock: nobody writes while it lives.
        self.lock.data.with(|p| unsafe { &*p })
    }
}

impl<T> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.release(false);
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Exclusive access to an [`RwLock`]'s data; releases it (admitting the
/// next queued lockers) when dropped.
///
/// ```
/// use fibra::{RwLock, RwLockWriteGuard};
///
/// let lock = RwLock::new(1);
/// let mut g: RwLockWriteGuard<'_, i32> = lock.write_blocking();
/// *g += 1;
/// drop(g);
/// assert_eq!(*lock.read_blocking(), 2);
/// ```
#[must_use = "dropping a guard releases the lock at once"]
pub struct RwLockWriteGuard<'a, T> {
    lock: &'a RwLock<T>,
    /// Sync only if `T: Sync`; Send only if `T: Send`.
    _data: PhantomData<&'a mut T>,
}

impl<'a, T> RwLockWriteGuard<'a, T> {
    fn new(lock: &'a RwLock<T>) -> Self {
        Self {
            lock,
            _data: PhantomData,
        }
    }

    /// Turns the write lock into a read lock without letting go: no writer
    /// can come in between, and the readers queued at the front come in at
    /// once.
    ///
    /// ```
    /// let lock = fibra::RwLock::new(1);
    /// let mut w = lock.write_blocking();
    /// *w = 2;
    /// let r = fibra::RwLockWriteGuard::downgrade(w);
    /// assert_eq!(*r, 2);
    /// assert!(lock.try_read().is_some());
    /// ```
    pub fn downgrade(this: Self) -> RwLockReadGuard<'a, T> {
        let lock = this.lock;
        std::mem::forget(this);
        let mut wakers = Woken::default();
        {
            let mut st = lock.state.lock();
            st.writer = false;
            st.grant(false);
            st.serve(None, &mut wakers);
        }
        wakers.wake_all();
        RwLockReadGuard::new(lock)
    }
}

impl<T> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: we hold the write lock.
        self.lock.data.with(|p| unsafe { &*p })
    }
}

impl<T> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the write lock, and `&mut self` makes this the
        // only borrow through the guard.
        self.lock.data.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.release(true);
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The leaf behind [`ReadOp`] and [`WriteOp`].
struct Locking<'a, T> {
    lock: &'a RwLock<T>,
    /// The record's slot: its kind (module invariants).
    write: bool,
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl<'a, T> Locking<'a, T> {
    fn new(lock: &'a RwLock<T>, write: bool) -> Self {
        Self {
            lock,
            write,
            published: None,
            _pinned: PhantomPinned,
        }
    }

    fn project(self: Pin<&mut Self>) -> (&'a RwLock<T>, &bool, &mut Option<Registration>) {
        // SAFETY: nothing is moved out; `published` is not structurally
        // pinned, and `write` is only pointed at (never written).
        let this = unsafe { self.get_unchecked_mut() };
        (this.lock, &this.write, &mut this.published)
    }

    fn try_now(&self) -> bool {
        self.lock.try_take(self.write)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (lock, write, published) = self.project();
        let mut wakers = Woken::default();
        {
            let mut st = lock.state.lock();
            let reg = st.waiters.publish(cx, write);
            // The retry: the lock may have been released since our try, or
            // a stale record may stand in front of us.
            *published = match st.serve(Some((reg, cx)), &mut wakers) {
                None => Some(reg),
                Some(_) => None,
            };
        }
        wakers.wake_all();
    }

    fn finish(self: Pin<&mut Self>) {
        // Whoever committed us removed our record.
        *self.project().2 = None;
    }

    fn abandon(self: Pin<&mut Self>) {
        let (lock, write, published) = self.project();
        *published = None;
        // The lock was handed to us and nobody will use it: release it.
        lock.release(*write);
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (lock, _, published) = self.project();
        if let Some(reg) = published.take() {
            let mut wakers = Woken::default();
            {
                let mut st = lock.state.lock();
                st.waiters.remove(reg);
                // A writer leaving the front may let the readers behind it
                // in.
                st.serve(None, &mut wakers);
            }
            wakers.wake_all();
        }
    }
}

macro_rules! lock_op {
    ($(#[$doc:meta])* $name:ident, $guard:ident) => {
        $(#[$doc])*
        #[must_use = "an op does nothing unless performed"]
        pub struct $name<'a, T>(Locking<'a, T>);

        // SAFETY: the op holds `&RwLock<T>`, a kind flag and a registration;
        // its record is touched only under the op protocol. It may be sent
        // or shared whenever the lock may.
        unsafe impl<T: Send + Sync> Send for $name<'_, T> {}
        // SAFETY: as above.
        unsafe impl<T: Send + Sync> Sync for $name<'_, T> {}

        impl<'a, T> $name<'a, T> {
            fn inner(self: Pin<&mut Self>) -> Pin<&mut Locking<'a, T>> {
                // SAFETY: structural pinning of the only field.
                unsafe { self.map_unchecked_mut(|s| &mut s.0) }
            }
        }

        impl<T> Sealed for $name<'_, T> {}

        impl<'a, T> Op for $name<'a, T> {
            type Output = $guard<'a, T>;

            // Committed by its partners, never woken to look again.
            fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

            fn looks_again(&self) -> bool {
                false
            }

            fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
                self.0.try_now().then(|| $guard::new(self.0.lock))
            }

            fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
                self.inner().block(cx);
            }

            fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
                let lock = self.0.lock;
                self.inner().finish();
                $guard::new(lock)
            }

            fn abandon(self: Pin<&mut Self>, _leaf: usize) {
                self.inner().abandon();
            }

            fn withdraw(self: Pin<&mut Self>) {
                self.inner().withdraw();
            }
        }

        crate::op::op_into_future! {
            impl['a, T] $name<'a, T>;
        }
    };
}

lock_op! {
    /// The op of locking an [`RwLock`] for reading: made by
    /// [`RwLock::read_op`].
    ///
    /// ```
    /// use fibra::{Op, ReadOp, RwLock};
    ///
    /// let lock = RwLock::new(3);
    /// let op: ReadOp<'_, i32> = lock.read_op();
    /// assert_eq!(*op.perform(), 3);
    /// ```
    ReadOp, RwLockReadGuard
}

lock_op! {
    /// The op of locking an [`RwLock`] for writing: made by
    /// [`RwLock::write_op`].
    ///
    /// ```
    /// use fibra::{Op, RwLock, WriteOp};
    ///
    /// let lock = RwLock::new(3);
    /// let op: WriteOp<'_, i32> = lock.write_op();
    /// *op.perform() += 1;
    /// assert_eq!(*lock.read_blocking(), 4);
    /// ```
    WriteOp, RwLockWriteGuard
}
