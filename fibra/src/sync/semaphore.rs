//! `Semaphore`: a counting semaphore whose acquire is an op.
//!
//! # Invariants
//!
//! * `permits` holds `count << 2 | WAITING | CLOSED`, and is only ever
//!   changed by atomic read-modify-writes. Permits are taken and given back
//!   that way, never under the lock, so an uncontended post or wait is one
//!   RMW.
//! * `waiters` (under the lock) holds the records of blocked acquires. A
//!   committer writes `Some(())` into a record's slot when it hands it a
//!   permit; a record committed by `close` keeps `None` (the acquire fails).
//! * `WAITING` is set whenever `waiters` holds a record: set under the lock
//!   by a blocked acquire right after it publishes and before its last look
//!   at the count, cleared under the lock when the queue is empty. A release
//!   learns whether it was set from its own add: both are RMWs of one word,
//!   so one of them comes first in its modification order. Either the
//!   release's add comes first, and the acquire's last look (after its own
//!   RMW) sees the new permits; or the acquire's comes first, and the
//!   release sees `WAITING` and serves the queue (under the lock, so after
//!   the publication).
//! * No waker is woken while the lock is held.

use crate::loom::{AtomicUsize, Lock, Ordering, UnsafeCell};
use crate::op::slot::{Slot, put, take};
use crate::op::waiter::{Registration, WaitQueue, Woken};
use crate::op::{BlockCx, Op, Quick, sealed::Sealed};
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// `permits`' flag: `close` was called.
const CLOSED: usize = 1;
/// `permits`' flag: blocked acquires may be queued (module invariants).
const WAITING: usize = 2;
/// One permit in `permits`.
const ONE: usize = 4;

/// The most permits a semaphore can hold.
///
/// ```
/// use fibra::sync::MAX_PERMITS;
///
/// let sem = fibra::Semaphore::new(MAX_PERMITS);
/// assert_eq!(sem.available_permits(), MAX_PERMITS);
/// ```
pub const MAX_PERMITS: usize = usize::MAX >> 3;

/// A counting semaphore (Racket's `make-semaphore`, tokio's `Semaphore`)
/// whose acquire is an op, so waiting for a permit composes with channels,
/// timeouts and every other op in a choice.
///
/// [`release`](Semaphore::release) never blocks. An acquire takes one
/// permit and returns it as a [`Permit`] guard, which gives the permit back
/// when dropped; [`Permit::forget`] keeps it taken (the semaphore-as-counter
/// style: one task posts, another waits). Blocked acquires are served in
/// FIFO order when permits are released; a permit released while nobody
/// waits goes to whoever asks first.
///
/// # Examples
///
/// ```
/// use fibra::Semaphore;
/// use std::sync::Arc;
///
/// let sem = Arc::new(Semaphore::new(0));
/// let poster = {
///     let sem = sem.clone();
///     std::thread::spawn(move || (0..3).for_each(|_| sem.release(1)))
/// };
/// for _ in 0..3 {
///     sem.acquire_blocking().unwrap().forget();
/// }
/// poster.join().unwrap();
/// assert_eq!(sem.available_permits(), 0);
/// ```
pub struct Semaphore {
    permits: AtomicUsize,
    waiters: Lock<WaitQueue<Slot<()>>>,
}

/// The error of an acquire on a closed semaphore.
///
/// ```
/// use fibra::{AcquireError, Semaphore};
///
/// let sem = Semaphore::new(0);
/// sem.close();
/// assert_eq!(sem.acquire_blocking().unwrap_err(), AcquireError);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquireError;

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the semaphore is closed")
    }
}

impl std::error::Error for AcquireError {}

/// Why [`Semaphore::try_acquire`] failed.
///
/// ```
/// use fibra::{Semaphore, TryAcquireError};
///
/// let sem = Semaphore::new(0);
/// assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
/// sem.close();
/// assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::Closed);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryAcquireError {
    /// No permit is available now.
    NoPermits,
    /// The semaphore is closed.
    Closed,
}

impl fmt::Display for TryAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryAcquireError::NoPermits => f.write_str("no permit is available"),
            TryAcquireError::Closed => f.write_str("the semaphore is closed"),
        }
    }
}

impl std::error::Error for TryAcquireError {}

impl Semaphore {
    /// A semaphore holding `permits` permits.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`MAX_PERMITS`].
    ///
    /// ```
    /// let sem = fibra::Semaphore::new(2);
    /// let (a, b) = (sem.try_acquire().unwrap(), sem.try_acquire().unwrap());
    /// assert!(sem.try_acquire().is_err());
    /// drop((a, b));
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn new(permits: usize) -> Self {
        assert!(
            permits <= MAX_PERMITS,
            "a semaphore holds at most {MAX_PERMITS} permits"
        );
        Self {
            permits: AtomicUsize::new(permits * ONE),
            waiters: Lock::new(WaitQueue::default()),
        }
    }

    /// The permits available now.
    ///
    /// ```
    /// let sem = fibra::Semaphore::new(3);
    /// let p = sem.try_acquire().unwrap();
    /// assert_eq!(sem.available_permits(), 2);
    /// drop(p);
    /// assert_eq!(sem.available_permits(), 3);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.permits.load(Ordering::Relaxed) / ONE
    }

    /// Whether [`close`](Semaphore::close) was called.
    ///
    /// ```
    /// let sem = fibra::Semaphore::new(1);
    /// assert!(!sem.is_closed());
    /// sem.close();
    /// assert!(sem.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        // Acquire: pairs with `close`'s Release half.
        self.permits.load(Ordering::Acquire) & CLOSED != 0
    }

    /// Adds `n` permits (Racket's `semaphore-post`), handing them to blocked
    /// acquires first, in the order they blocked. Never blocks.
    ///
    /// # Panics
    ///
    /// If the count would exceed [`MAX_PERMITS`].
    ///
    /// ```
    /// let sem = fibra::Semaphore::new(0);
    /// sem.release(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    #[inline]
    pub fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        if n > MAX_PERMITS {
            too_many_permits();
        }
        // Release: what the releaser did before comes before the use of
        // the permit by whoever takes it (an Acquire RMW reading this add or
        // a later one in its release sequence). Whether acquires wait is in
        // the value the add read (module invariants): no fence, no load.
        let before = self.permits.fetch_add(n * ONE, Ordering::Release);
        if before / ONE + n > MAX_PERMITS {
            self.permits.fetch_sub(n * ONE, Ordering::Relaxed);
            too_many_permits();
        }
        if before & WAITING != 0 {
            self.serve();
        }
    }

    /// Takes a permit now, if one is available.
    ///
    /// ```
    /// use fibra::{Semaphore, TryAcquireError};
    ///
    /// let sem = Semaphore::new(1);
    /// let p = sem.try_acquire().unwrap();
    /// assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
    /// drop(p); // gives the permit back
    /// assert!(sem.try_acquire().is_ok());
    /// ```
    pub fn try_acquire(&self) -> Result<Permit<'_>, TryAcquireError> {
        match self.take_permit() {
            Taken::Yes => Ok(Permit { sem: self }),
            Taken::No => Err(TryAcquireError::NoPermits),
            Taken::Closed => Err(TryAcquireError::Closed),
        }
    }

    /// The op of acquiring one permit: commits when it gets one, yields
    /// `Err(AcquireError)` if the semaphore is closed first.
    ///
    /// ```
    /// use fibra::{Op, Semaphore, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let sem = Semaphore::new(0);
    /// // Wait for a permit, but at most 10 ms.
    /// let got = choose((
    ///     sem.acquire_op().wrap(|p| p.is_ok()),
    ///     after(Duration::from_millis(10)).wrap(|_| false),
    /// ))
    /// .perform();
    /// assert!(!got);
    /// ```
    pub fn acquire_op(&self) -> AcquireOp<'_> {
        AcquireOp {
            sem: self,
            slot: UnsafeCell::new(None),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Waits for a permit (Racket's `semaphore-wait`, keeping the permit
    /// with [`Permit::forget`]).
    ///
    /// ```
    /// # fibra::run(async {
    /// let sem = fibra::Semaphore::new(1);
    /// let permit = sem.acquire().await.unwrap();
    /// assert_eq!(sem.available_permits(), 0);
    /// drop(permit);
    /// assert_eq!(sem.available_permits(), 1);
    /// # });
    /// ```
    pub fn acquire(&self) -> Acquire<'_> {
        Acquire {
            wait: Quick::new(self.acquire_op()),
        }
    }

    /// Waits for a permit, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let sem = Arc::new(fibra::Semaphore::new(0));
    /// let releaser = sem.clone();
    /// std::thread::spawn(move || releaser.release(1));
    /// let permit = sem.acquire_blocking().unwrap(); // waits for the release
    /// drop(permit);
    /// ```
    pub fn acquire_blocking(&self) -> Result<Permit<'_>, AcquireError> {
        self.acquire_op().perform()
    }

    /// Closes the semaphore: blocked and later acquires fail with
    /// [`AcquireError`]; releases still count but nobody can take them.
    ///
    /// ```
    /// let sem = fibra::Semaphore::new(0);
    /// sem.close();
    /// assert!(sem.acquire_blocking().is_err());
    /// ```
    pub fn close(&self) {
        // AcqRel: Release orders what the closer did before closing before
        // an Acquire reader of `CLOSED` (`is_closed`, `take_permit`); Acquire
        // keeps the release sequence of earlier permits intact for them.
        self.permits.fetch_or(CLOSED, Ordering::AcqRel);
        let mut wakers = Vec::new();
        {
            let mut q = self.waiters.lock();
            q.commit_all(&mut wakers);
            self.clear_waiting();
        }
        wakers.into_iter().for_each(Waker::wake);
    }

    fn take_permit(&self) -> Taken {
        // Acquire: a permit's release happened before we use what it guards.
        let mut cur = self.permits.load(Ordering::Acquire);
        loop {
            if cur & CLOSED != 0 {
                return Taken::Closed;
            }
            if cur < ONE {
                return Taken::No;
            }
            // Acquire (both outcomes): as for the load above. The Release
            // half orders nothing the protocol relies on; an RMW continues
            // the release sequence of `release`'s add whatever its ordering.
            match self.permits.compare_exchange_weak(
                cur,
                cur - ONE,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Taken::Yes,
                Err(now) => cur = now,
            }
        }
    }

    /// Removes a blocked acquire's record (under the lock), clearing
    /// `WAITING` if it was the last.
    fn dequeue(&self, q: &mut WaitQueue<Slot<()>>, reg: Registration) {
        q.remove(reg);
        if q.is_empty() {
            self.clear_waiting();
        }
    }

    /// The queue is empty (the caller holds the lock): releases need not
    /// serve it.
    fn clear_waiting(&self) {
        // Relaxed: the flag only tells releases whether to take the lock;
        // one that read it set before this finds the queue empty there.
        self.permits.fetch_and(!WAITING, Ordering::Relaxed);
    }

    /// A record was just published (the caller holds the lock): releases
    /// from now on serve the queue, and the caller's next look at the count
    /// comes after this RMW (module invariants).
    fn set_waiting(&self) {
        // Relaxed: the caller's next load of `permits` (Acquire, in
        // `take_permit`) is ordered after this RMW by coherence; a release
        // that reads the flag serves under the lock, after our publication.
        self.permits.fetch_or(WAITING, Ordering::Relaxed);
    }

    /// Hands available permits to blocked acquires, front first. Out of
    /// line: a release that finds nobody waiting stays a few instructions.
    #[inline(never)]
    fn serve(&self) {
        let mut woken = Woken::default();
        {
            let mut q = self.waiters.lock();
            while let Some(w) = q.pop_front() {
                match self.take_permit() {
                    Taken::Yes => {}
                    Taken::No | Taken::Closed => {
                        q.push_front(w);
                        break;
                    }
                }
                if let Some(won) = w.win() {
                    // SAFETY: `complete` gives us the acquirer's slot.
                    woken.push(won.complete(|slot| unsafe { put(slot, ()) }));
                } else {
                    // A stale record (its perform committed elsewhere or was
                    // dropped): the permit goes back to the pool. Release,
                    // like `release`'s add: pairs with the Acquire of the
                    // next `take_permit`.
                    self.permits.fetch_add(ONE, Ordering::Release);
                }
            }
            if q.is_empty() {
                self.clear_waiting();
            }
        }
        woken.wake_all();
    }
}

impl Default for Semaphore {
    /// A semaphore with no permits.
    fn default() -> Self {
        Self::new(0)
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("permits", &self.available_permits())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The panic of a release beyond [`MAX_PERMITS`].
#[cold]
#[inline(never)]
fn too_many_permits() -> ! {
    panic!("a semaphore holds at most {MAX_PERMITS} permits");
}

enum Taken {
    Yes,
    No,
    Closed,
}

/// One permit of a [`Semaphore`]; dropping it gives the permit back.
///
/// ```
/// let sem = fibra::Semaphore::new(1);
/// {
///     let _permit: fibra::Permit<'_> = sem.try_acquire().unwrap();
///     assert_eq!(sem.available_permits(), 0);
/// } // dropped: given back
/// assert_eq!(sem.available_permits(), 1);
/// ```
#[must_use = "dropping a permit releases it at once"]
pub struct Permit<'a> {
    sem: &'a Semaphore,
}

impl Permit<'_> {
    /// Keeps the permit taken: it is not given back on drop.
    ///
    /// ```
    /// let sem = fibra::Semaphore::new(1);
    /// sem.try_acquire().unwrap().forget();
    /// assert_eq!(sem.available_permits(), 0); // not given back
    /// ```
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.sem.release(1);
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Permit")
    }
}

/// The op of acquiring a permit: made by [`Semaphore::acquire_op`].
///
/// ```
/// use fibra::{Op, always, choose_biased};
///
/// let sem = fibra::Semaphore::new(1);
/// let held = sem.acquire_op().perform().unwrap();
/// let now = || choose_biased((sem.acquire_op().wrap(|r| r.is_ok()), always(false))).perform();
/// assert!(!now()); // no permit: `always` wins
/// drop(held);
/// assert!(now());
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct AcquireOp<'a> {
    sem: &'a Semaphore,
    slot: Slot<()>,
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

// SAFETY: the slot holds `()` and is touched only under the op protocol.
unsafe impl Send for AcquireOp<'_> {}
// SAFETY: as above.
unsafe impl Sync for AcquireOp<'_> {}

impl<'a> AcquireOp<'a> {
    fn project(self: Pin<&mut Self>) -> (&'a Semaphore, &Slot<()>, &mut Option<Registration>) {
        // SAFETY: the slot stays pinned (shared reference only); `published`
        // is not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        (this.sem, &this.slot, &mut this.published)
    }
}

impl Sealed for AcquireOp<'_> {}

impl<'a> Op for AcquireOp<'a> {
    type Output = Result<Permit<'a>, AcquireError>;

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        let sem = self.sem;
        match sem.take_permit() {
            Taken::Yes => Some(Ok(Permit { sem })),
            Taken::Closed => Some(Err(AcquireError)),
            Taken::No => None,
        }
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (sem, slot, published) = self.project();
        let mut q = sem.waiters.lock();
        let reg = q.publish(cx, slot);
        sem.set_waiting();
        if cx.state.claim().is_err() {
            // Another branch committed meanwhile.
            *published = Some(reg);
            return;
        }
        match sem.take_permit() {
            // SAFETY: we hold our own claim: the slot is ours.
            Taken::Yes => unsafe { put(slot, ()) },
            Taken::Closed => {}
            Taken::No => {
                cx.state.unclaim();
                *published = Some(reg);
                return;
            }
        }
        sem.dequeue(&mut q, reg);
        cx.state.commit_own(cx.leaf);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        let (sem, slot, published) = self.project();
        *published = None;
        // SAFETY: `SYNCED`: the slot is ours again.
        match unsafe { take(slot) } {
            Some(()) => Ok(Permit { sem }),
            None => Err(AcquireError),
        }
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        let (sem, slot, published) = self.project();
        *published = None;
        // SAFETY: `SYNCED`: the slot is ours again.
        if unsafe { take(slot) }.is_some() {
            sem.release(1);
        }
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (sem, _, published) = self.project();
        if let Some(reg) = published.take() {
            sem.dequeue(&mut sem.waiters.lock(), reg);
        }
    }
}

crate::op::op_into_future! {
    impl['a] AcquireOp<'a>;
}

pin_project! {
    /// The future of [`Semaphore::acquire`]: takes a permit at once when
    /// one is there (the op's try, no op state built), and otherwise
    /// performs its [`AcquireOp`], waiting in FIFO order.
    ///
    /// Cancel-safe as a perform: dropped before it got a permit, it took
    /// none; a permit handed to it in the meantime goes back to the
    /// semaphore.
    ///
    /// ```
    /// # fibra::run(async {
    /// let sem = fibra::Semaphore::new(1);
    /// let acquire: fibra::sync::Acquire<'_> = sem.acquire();
    /// let permit = acquire.await.unwrap();
    /// assert_eq!(sem.available_permits(), 0);
    /// drop(permit);
    /// # });
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    pub struct Acquire<'a> {
        #[pin]
        wait: Quick<AcquireOp<'a>>,
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, AcquireError>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().wait.poll(cx)
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("waits", &self.wait.waits())
            .finish_non_exhaustive()
    }
}
