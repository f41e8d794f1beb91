//! `IVar`: a write-once variable whose read is an op.
//!
//! # Invariants
//!
//! * `state` goes `EMPTY -> WRITING -> FULL` once. The one `put` that wins
//!   `EMPTY -> WRITING` writes `value` and then stores `FULL` (Release); the
//!   value is read only after an Acquire load saw `FULL`, and never written
//!   again, so shared reads need no lock.
//! * `waiters` (under the lock) holds the records of blocked gets. `put`
//!   stores `FULL` *before* taking the lock and committing every record; a
//!   get publishes its record and looks at `state` under the same lock, so
//!   either it sees `FULL` or `put` finds its record.
//! * No waker is woken while the lock is held.

use crate::loom::{AtomicUsize, Lock, Ordering, UnsafeCell};
use crate::op::waiter::{Registration, WaitQueue, Woken};
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::fmt;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;

const EMPTY: usize = 0;
const WRITING: usize = 1;
const FULL: usize = 2;

/// A write-once variable (Concurrent ML's `ivar`, a one-shot future): one
/// [`put`](IVar::put) fills it, and every [`get_op`](IVar::get_op) — before
/// or after — yields a clone of the value. Reading is an op, so waiting for
/// the value composes with channels, timeouts and everything else.
///
/// # Examples
///
/// ```
/// use fibra::IVar;
/// use std::sync::Arc;
///
/// let answer = Arc::new(IVar::new());
/// let reader = {
///     let answer = answer.clone();
///     std::thread::spawn(move || answer.get_blocking())
/// };
/// answer.put(42).unwrap();
/// assert_eq!(answer.put(43), Err(43)); // written once only
/// assert_eq!(reader.join().unwrap(), 42);
/// ```
pub struct IVar<T> {
    state: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
    /// Visible to the loom models, which check that no record is left.
    pub(super) waiters: Lock<WaitQueue<()>>,
}

// SAFETY: the value is written once, before `FULL` is published, and only
// read (shared) afterwards; `T: Send + Sync` covers moving it in from one
// thread and reading it from many.
unsafe impl<T: Send + Sync> Sync for IVar<T> {}
// SAFETY: owning the IVar owns the value.
unsafe impl<T: Send> Send for IVar<T> {}

impl<T> IVar<T> {
    /// An empty variable.
    ///
    /// ```
    /// let v = fibra::IVar::<u32>::new();
    /// assert!(!v.is_full());
    /// ```
    pub fn new() -> Self {
        Self {
            state: AtomicUsize::new(EMPTY),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            waiters: Lock::new(WaitQueue::default()),
        }
    }

    /// Fills the variable and wakes every waiting get. A variable is written
    /// once: a second `put` returns its value in `Err`.
    ///
    /// ```
    /// let v = fibra::IVar::new();
    /// assert_eq!(v.put(1), Ok(()));
    /// assert_eq!(v.put(2), Err(2)); // written once
    /// assert_eq!(v.try_get(), Some(1));
    /// ```
    pub fn put(&self, value: T) -> Result<(), T> {
        // Acquire on success keeps the value's write after the claim (the
        // Release store of `FULL` below is what publishes it). Acquire on
        // failure is not needed: we only learn we lost.
        if self
            .state
            .compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(value);
        }
        // SAFETY: we won `EMPTY -> WRITING`: nobody else writes, and nobody
        // reads before `FULL`.
        self.value.with_mut(|v| unsafe { (*v).write(value) });
        // Release: publishes the value to every Acquire load that sees FULL.
        self.state.store(FULL, Ordering::Release);
        // Every record is committed under the lock; the wakers are woken
        // after it is released.
        let mut waiters = self.waiters.lock();
        // Usually nobody waits (an actor's exit that no one watches).
        if waiters.is_empty() {
            return Ok(());
        }
        let mut woken = Woken::default();
        while let Some(record) = waiters.pop_front() {
            woken.push(record.commit());
        }
        drop(waiters);
        woken.wake_all();
        Ok(())
    }

    /// The value, if the variable is full.
    ///
    /// ```
    /// let v = fibra::IVar::new();
    /// assert_eq!(v.get_ref(), None);
    /// v.put(String::from("set")).unwrap();
    /// assert_eq!(v.get_ref().map(String::as_str), Some("set")); // no clone
    /// ```
    pub fn get_ref(&self) -> Option<&T> {
        // Acquire: pairs with `put`'s Release store of `FULL`.
        if self.state.load(Ordering::Acquire) == FULL {
            // SAFETY: FULL (seen with Acquire): written and never written
            // again, so a shared reference lives as long as `self`.
            Some(self.value.with(|v| unsafe { (*v).assume_init_ref() }))
        } else {
            None
        }
    }

    /// Whether the variable is full.
    ///
    /// ```
    /// let v = fibra::IVar::new();
    /// assert!(!v.is_full());
    /// v.put(()).unwrap();
    /// assert!(v.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        // Acquire: as in `get_ref`, so a caller that then reads sees the
        // value.
        self.state.load(Ordering::Acquire) == FULL
    }

    /// The op of reading the variable by reference: commits once it is
    /// full, yielding `&T` (for values that are not `Clone`, or too big to
    /// clone).
    ///
    /// ```
    /// use fibra::{IVar, Op};
    ///
    /// let v = IVar::new();
    /// v.put(vec![1, 2, 3]).unwrap();
    /// assert_eq!(v.get_ref_op().perform().len(), 3);
    /// ```
    pub fn get_ref_op(&self) -> GetRefOp<'_, T> {
        GetRefOp {
            ivar: self,
            slot: (),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// The value, if the variable is full, consuming it.
    ///
    /// ```
    /// let v = fibra::IVar::new();
    /// v.put(3).unwrap();
    /// assert_eq!(v.into_inner(), Some(3));
    /// ```
    pub fn into_inner(self) -> Option<T> {
        // Acquire: as in `get_ref` (with ownership, the value's write is
        // ordered before us already).
        if self.state.load(Ordering::Acquire) != FULL {
            return None;
        }
        // SAFETY: FULL: initialised. We own the variable; marking it empty
        // below keeps its `Drop` from dropping the value we moved out.
        let value = self.value.with(|v| unsafe { (*v).assume_init_read() });
        // Relaxed: nobody else can see the variable any more.
        self.state.store(EMPTY, Ordering::Relaxed);
        Some(value)
    }
}

impl<T: Clone> IVar<T> {
    /// A clone of the value, if the variable is full.
    ///
    /// ```
    /// let v = fibra::IVar::new();
    /// assert_eq!(v.try_get(), None);
    /// v.put(3).unwrap();
    /// assert_eq!(v.try_get(), Some(3));
    /// ```
    pub fn try_get(&self) -> Option<T> {
        self.get_ref().cloned()
    }

    /// The op of reading the variable: commits once it is full, yielding a
    /// clone of the value.
    ///
    /// ```
    /// use fibra::{IVar, Op, always, choose_biased};
    ///
    /// let v = IVar::new();
    /// let op = || choose_biased((v.get_op(), always(0)));
    /// assert_eq!(op().perform(), 0); // empty: the second branch
    /// v.put(7).unwrap();
    /// assert_eq!(op().perform(), 7);
    /// ```
    pub fn get_op(&self) -> GetOp<'_, T> {
        GetOp(self.get_ref_op())
    }

    /// Waits until the variable is full and returns a clone of the value.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// fibra::run(async {
    ///     let v = Arc::new(fibra::IVar::new());
    ///     let writer = v.clone();
    ///     fibra::spawn(async move { writer.put(8).unwrap() });
    ///     assert_eq!(v.get().await, 8);
    /// });
    /// ```
    pub async fn get(&self) -> T {
        self.get_op().await
    }

    /// Waits until the variable is full, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let v = fibra::IVar::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| v.put("done").unwrap());
    ///     assert_eq!(v.get_blocking(), "done");
    /// });
    /// ```
    pub fn get_blocking(&self) -> T {
        self.get_op().perform()
    }
}

impl<T> Default for IVar<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for IVar<T> {
    fn drop(&mut self) {
        // Acquire: as in `get_ref` (with `&mut self` the borrow already
        // orders the write before us; the Acquire costs nothing on x86).
        if self.state.load(Ordering::Acquire) == FULL {
            // SAFETY: FULL: initialised, and we are the last owner.
            self.value.with_mut(|v| unsafe { (*v).assume_init_drop() });
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for IVar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.get_ref() {
            Some(v) => f.debug_tuple("IVar").field(v).finish(),
            None => f.write_str("IVar(<empty>)"),
        }
    }
}

/// The op of reading an [`IVar`] by reference: made by
/// [`IVar::get_ref_op`] (and [`OnceCell::get_op`](crate::OnceCell::get_op)).
/// Commits once the variable is full, yielding `&T` (no `Clone` needed).
///
/// ```
/// use fibra::{GetRefOp, IVar, Op};
///
/// let v = IVar::new();
/// v.put(String::from("set")).unwrap();
/// let op: GetRefOp<'_, String> = v.get_ref_op();
/// assert_eq!(op.perform(), "set");
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct GetRefOp<'a, T> {
    ivar: &'a IVar<T>,
    slot: (),
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl<T> Sealed for GetRefOp<'_, T> {}

impl<'a, T> GetRefOp<'a, T> {
    fn project(self: Pin<&mut Self>) -> (&'a IVar<T>, &(), &mut Option<Registration>) {
        // SAFETY: nothing is moved out; `published` is not structurally
        // pinned and the slot is only pointed at.
        let this = unsafe { self.get_unchecked_mut() };
        (this.ivar, &this.slot, &mut this.published)
    }
}

impl<'a, T> Op for GetRefOp<'a, T> {
    type Output = &'a T;

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    // A try only loads the state.
    fn try_leaves_nothing(&self) -> bool {
        true
    }

    fn try_now(self: Pin<&mut Self>) -> Option<&'a T> {
        self.ivar.get_ref()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (ivar, slot, published) = self.project();
        let mut q = ivar.waiters.lock();
        if ivar.is_full() {
            if cx.state.claim().is_ok() {
                cx.state.commit_own(cx.leaf);
            }
            return;
        }
        *published = Some(q.publish(cx, slot));
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> &'a T {
        let (ivar, _, published) = self.project();
        *published = None;
        ivar.get_ref().expect("a committed get sees the value")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        *self.project().2 = None;
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (ivar, _, published) = self.project();
        if let Some(reg) = published.take() {
            // SAFETY: our own record. Unlinked: whoever popped it found it
            // stale and is done with it (`op/state.rs`, "Unlinked records").
            if !unsafe { reg.is_unlinked() } {
                ivar.waiters.lock().remove(reg);
            }
        }
    }
}

/// The op of reading an [`IVar`]: made by [`IVar::get_op`]; a
/// [`GetRefOp`] that clones the value.
///
/// ```
/// use fibra::{GetOp, IVar, Op};
///
/// let v = IVar::new();
/// v.put(1).unwrap();
/// let op: GetOp<'_, i32> = v.get_op();
/// assert_eq!(op.perform(), 1);
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct GetOp<'a, T>(GetRefOp<'a, T>);

impl<T> Sealed for GetOp<'_, T> {}

impl<'a, T> GetOp<'a, T> {
    fn inner(self: Pin<&mut Self>) -> Pin<&mut GetRefOp<'a, T>> {
        // SAFETY: structural pinning of the only field.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }
    }
}

impl<T: Clone> Op for GetOp<'_, T> {
    type Output = T;

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.inner().repoll(cx);
    }

    fn try_leaves_nothing(&self) -> bool {
        self.0.try_leaves_nothing()
    }

    fn try_now(self: Pin<&mut Self>) -> Option<T> {
        self.inner().try_now().cloned()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.inner().block(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> T {
        self.inner().finish(leaf).clone()
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        self.inner().abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.inner().withdraw();
    }
}

crate::op::op_into_future! {
    impl['a, T: Clone] GetOp<'a, T>;
    impl['a, T] GetRefOp<'a, T>;
}
