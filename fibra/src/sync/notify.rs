//! `Notify`: a condition whose wait is an op.
//!
//! # Invariants
//!
//! * `permit` is the one stored notification. It goes `false -> true` only
//!   under the lock (in `notify_one`, when no live record is queued), and
//!   `true -> false` by a compare-and-swap anywhere (a waiter consuming it),
//!   so at most one is ever stored.
//! * `waiters` (under the lock) holds the records of blocked waits. A
//!   `notify_one` that commits a record writes `Some(())` into its slot; a
//!   record committed by `notify_all` keeps `None`. The slot tells a perform
//!   dropped after its commit whether it swallowed a `notify_one`, which it
//!   then passes on (`abandon`), or a `notify_all`, which it does not.
//! * A blocked wait publishes its record and looks at `permit` under the
//!   same lock, and `notify_one` pops records and (finding no live one)
//!   stores the permit under that lock: either the wait sees the permit or
//!   `notify_one` finds its record. So `permit` is `true` only while no live
//!   record is queued, and no notification is lost.
//! * A record met stale by `notify_one` (its perform committed elsewhere or
//!   was dropped) is skipped: the notification goes to the next record, or
//!   becomes the permit. A losing wait never consumes a notification.
//! * No waker is woken while the lock is held.

use crate::loom::{AtomicBool, Lock, Ordering, UnsafeCell};
use crate::op::slot::{Slot, put, take};
use crate::op::waiter::{Registration, WaitQueue};
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::fmt;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::Waker;

/// Wakes waiting tasks and threads (tokio's `Notify`, a condition variable
/// without the mutex): [`notify_one`](Notify::notify_one) wakes the first
/// waiter, or, if nobody waits, stores one permit so that the next wait
/// completes at once; [`notify_all`](Notify::notify_all) wakes every current
/// waiter and stores nothing. Waiting is an op
/// ([`notified_op`](Notify::notified_op)), so it composes with channels,
/// timeouts and every other op in a choice; a wait that loses a choice
/// consumes no notification.
///
/// At most one permit is stored: two `notify_one` calls with nobody waiting
/// let one later wait through, not two. Waiters are woken in FIFO order. A
/// [`notified`](Notify::notified) future counts as waiting from its first
/// poll (tokio's counts from its creation for `notify_waiters`).
///
/// # Examples
///
/// ```
/// use fibra::Notify;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// let ready = Arc::new(AtomicBool::new(false));
/// let notify = Arc::new(Notify::new());
/// let waiter = {
///     let (ready, notify) = (ready.clone(), notify.clone());
///     std::thread::spawn(move || {
///         while !ready.load(Ordering::Acquire) {
///             notify.notified_blocking();
///         }
///     })
/// };
/// ready.store(true, Ordering::Release);
/// notify.notify_one();
/// waiter.join().unwrap();
/// ```
pub struct Notify {
    permit: AtomicBool,
    waiters: Lock<WaitQueue<Slot<()>>>,
}

impl Notify {
    /// A `Notify` with no stored permit.
    ///
    /// ```
    /// use fibra::{Notify, Op};
    ///
    /// let n = Notify::new();
    /// assert!(n.notified_op().try_perform().is_err()); // nothing stored
    /// ```
    pub fn new() -> Self {
        Self {
            permit: AtomicBool::new(false),
            waiters: Lock::new(WaitQueue::default()),
        }
    }

    /// Wakes the first waiter; if nobody waits, stores a permit for the next
    /// wait (at most one: a permit already stored stays the only one).
    ///
    /// Everything this thread did before `notify_one` happens before the
    /// wait it completes returns.
    ///
    /// ```
    /// use fibra::{Notify, Op};
    ///
    /// let n = Notify::new();
    /// n.notify_one();
    /// n.notify_one(); // still one permit
    /// assert!(n.notified_op().try_perform().is_ok());
    /// assert!(n.notified_op().try_perform().is_err());
    /// ```
    pub fn notify_one(&self) {
        let waker = {
            let mut q = self.waiters.lock();
            let mut waker = None;
            let mut served = false;
            while let Some(w) = q.pop_front() {
                if let Some(won) = w.win() {
                    // SAFETY: `complete` gives us the waiter's slot.
                    waker = won.complete(|slot| unsafe { put(slot, ()) });
                    served = true;
                    break;
                }
                // Stale (committed elsewhere or dropped): on to the next.
            }
            if !served {
                // Release: pairs with the Acquire of the wait that consumes
                // the permit, ordering our caller's writes before its return.
                self.permit.store(true, Ordering::Release);
            }
            waker
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Wakes every waiter waiting now; stores no permit (and leaves a stored
    /// one as it is). A wait that starts later waits for the next
    /// notification.
    ///
    /// ```
    /// use fibra::{Notify, Op};
    /// use std::sync::Arc;
    ///
    /// let n = Arc::new(Notify::new());
    /// n.notify_all(); // nobody waits: nothing happens
    /// assert!(n.notified_op().try_perform().is_err());
    /// ```
    pub fn notify_all(&self) {
        let mut wakers = Vec::new();
        self.waiters.lock().commit_all(&mut wakers);
        wakers.into_iter().for_each(Waker::wake);
    }

    /// The op of waiting for a notification: commits when a
    /// [`notify_one`](Notify::notify_one) or
    /// [`notify_all`](Notify::notify_all) reaches it, or at once by
    /// consuming a stored permit. If it loses a choice it consumes nothing.
    ///
    /// ```
    /// use fibra::{Notify, Op, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let n = Notify::new();
    /// let woken = choose((
    ///     n.notified_op().wrap(|()| true),
    ///     after(Duration::from_millis(10)).wrap(|()| false),
    /// ))
    /// .perform();
    /// assert!(!woken);
    /// n.notify_one(); // nobody waits now: stored for the next wait
    /// assert!(n.notified_op().try_perform().is_ok());
    /// ```
    pub fn notified_op(&self) -> NotifiedOp<'_> {
        NotifiedOp {
            notify: self,
            slot: UnsafeCell::new(None),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Waits for a notification.
    ///
    /// Cancel-safe: if the future is dropped after a `notify_one` reached
    /// it, the notification is passed on to the next waiter (or stored).
    ///
    /// ```
    /// # fibra::run(async {
    /// let n = fibra::Notify::new();
    /// n.notify_one();
    /// n.notified().await; // the stored permit
    /// # });
    /// ```
    pub async fn notified(&self) {
        self.notified_op().await;
    }

    /// Waits for a notification, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let n = fibra::Notify::new();
    /// n.notify_one();
    /// n.notified_blocking();
    /// ```
    pub fn notified_blocking(&self) {
        self.notified_op().perform();
    }

    /// Consumes the stored permit, if there is one.
    fn take_permit(&self) -> bool {
        // Relaxed peek first, so waits on a busy `Notify` do not all write
        // the word. Acquire on success pairs with `notify_one`'s Release.
        self.permit.load(Ordering::Relaxed)
            && self
                .permit
                .compare_exchange(true, false, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }
}

impl Default for Notify {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notify")
            .field("permit", &self.permit.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The op of waiting for a notification: made by [`Notify::notified_op`].
///
/// ```
/// use fibra::{NotifiedOp, Notify, Op};
///
/// let n = Notify::new();
/// n.notify_one();
/// let op: NotifiedOp<'_> = n.notified_op();
/// op.perform();
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct NotifiedOp<'a> {
    notify: &'a Notify,
    /// `Some(())` once a `notify_one` (or the permit) committed us.
    slot: Slot<()>,
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

// SAFETY: the slot holds `()` and is touched only under the op protocol
// (by the owner while unpublished or claimed, or by the remote that won
// `BUSY`), so sharing or sending the op exposes nothing.
unsafe impl Send for NotifiedOp<'_> {}
// SAFETY: as above.
unsafe impl Sync for NotifiedOp<'_> {}

impl<'a> NotifiedOp<'a> {
    fn project(self: Pin<&mut Self>) -> (&'a Notify, &Slot<()>, &mut Option<Registration>) {
        // SAFETY: the slot stays pinned (shared reference only); `published`
        // is not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        (this.notify, &this.slot, &mut this.published)
    }
}

impl Sealed for NotifiedOp<'_> {}

impl Op for NotifiedOp<'_> {
    type Output = ();

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<()> {
        self.notify.take_permit().then_some(())
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (notify, slot, published) = self.project();
        let mut q = notify.waiters.lock();
        let reg = q.publish(cx, slot);
        // Relaxed: the permit is set only under the lock we hold, so this
        // sees any permit stored before; the consuming CAS below acquires.
        if notify.permit.load(Ordering::Relaxed) {
            if cx.state.claim().is_err() {
                // Another branch committed meanwhile: leave the permit.
                *published = Some(reg);
                return;
            }
            if notify.take_permit() {
                // SAFETY: we hold our own claim: the slot is ours.
                unsafe { put(slot, ()) };
                q.remove(reg);
                cx.state.commit_own(cx.leaf);
                return;
            }
            // A lock-free `try_now` elsewhere consumed it first.
            cx.state.unclaim();
        }
        *published = Some(reg);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) {
        let (_, slot, published) = self.project();
        *published = None;
        // SAFETY: `SYNCED`: the slot is ours again. Cleared so a stale value
        // cannot outlive the perform.
        unsafe { take(slot) };
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        let (notify, slot, published) = self.project();
        *published = None;
        // SAFETY: `SYNCED`: the slot is ours again.
        if unsafe { take(slot) }.is_some() {
            // We swallowed a `notify_one` nobody will see: pass it on.
            notify.notify_one();
        }
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (notify, _, published) = self.project();
        if let Some(reg) = published.take() {
            // SAFETY: our own record. Unlinked: whoever popped it found it
            // stale and is done with it (`op/state.rs`, "Unlinked records").
            if !unsafe { reg.is_unlinked() } {
                notify.waiters.lock().remove(reg);
            }
        }
    }
}

crate::op::op_into_future! {
    impl['a] NotifiedOp<'a>;
}
