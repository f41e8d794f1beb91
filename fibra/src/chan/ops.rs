//! The channel ops: `RecvOp` and `SendOp`, the leaves every channel method is
//! built from.
//!
//! Each op owns its payload slot and remembers the record it published (to
//! withdraw it). Both are pinned inside the perform while published.

use super::meeting::{Chan, Guard, Received, Sent, readiness};
use super::{RecvError, SendError};
use crate::loom::{Arc, UnsafeCell};
use crate::op::slot::{Slot, take};
use crate::op::waiter::{Registration, Seeker};
use crate::op::{BlockCx, Op, Tried, sealed::Sealed};
use std::marker::{PhantomData, PhantomPinned};
use std::ops::Deref;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::Waker;

/// A channel reference: a pointer to the channel, valid for `'a`.
///
/// Borrowed from a handle (`Sender::send_op`, `Receiver::recv_op`), or, for
/// the `Stream`/`Sink` impls, which keep a pending perform inside the
/// handle, pointing into that handle's own `Arc` ([`ChanRef::in_handle`]).
/// Either way it counts no reference and has no drop glue: a choice over C
/// channel ops builds, moves and drops C of them per call, so each op is as
/// small and as cheap to drop as it can be.
///
/// A pointer with the borrow's lifetime rather than a `&'a Chan<T>`, so
/// that `ChanRef<'static, T>` does not require `T: 'static`.
pub(crate) struct ChanRef<'a, T> {
    chan: NonNull<Chan<T>>,
    _borrow: PhantomData<&'a ()>,
}

impl<'a, T> ChanRef<'a, T> {
    pub(crate) fn borrowed(chan: &'a Chan<T>) -> Self {
        Self {
            chan: NonNull::from(chan),
            _borrow: PhantomData,
        }
    }
}

impl<T> ChanRef<'static, T> {
    /// A reference to the channel of the handle holding `chan`, for an op
    /// the handle keeps in flight (its `sink` / `stream` field).
    ///
    /// # Safety
    ///
    /// The op must be dropped before `chan`'s `Arc`: the handle keeps the op
    /// in a field of its own, never replaces its `chan`, and its `Drop`
    /// drops the op first.
    pub(crate) unsafe fn in_handle(chan: &Arc<Chan<T>>) -> Self {
        Self {
            chan: NonNull::from(&**chan),
            _borrow: PhantomData,
        }
    }
}

impl<T> Deref for ChanRef<'_, T> {
    type Target = Chan<T>;

    #[inline(always)]
    fn deref(&self) -> &Chan<T> {
        // SAFETY: made by `borrowed` from a `&'a Chan<T>` (and `self` cannot
        // outlive `'a`), or by `in_handle`, whose caller keeps the channel
        // alive while the op is.
        unsafe { self.chan.as_ref() }
    }
}

/// Wakes the owner a commit returned, if any (after every lock is released).
pub(super) fn wake(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}

/// The op of receiving one value from a channel: made by
/// [`Receiver::recv_op`](crate::Receiver::recv_op).
///
/// Commits when a value is available; yields `Err(RecvError)` once every
/// sender is gone and the channel is empty.
///
/// ```
/// use fibra::{Op, RecvOp};
///
/// let (tx, rx) = fibra::bounded(1);
/// tx.try_send(4).unwrap();
/// let op: RecvOp<'_, i32> = rx.recv_op();
/// assert_eq!(op.perform(), Ok(4));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct RecvOp<'a, T> {
    chan: ChanRef<'a, T>,
    slot: Slot<T>,
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

// SAFETY: the slot is only accessed under the op protocol (the owner through
// `Pin<&mut Self>`, or a remote that won the opstate), so sharing `&RecvOp`
// exposes nothing; values of `T` cross threads, hence `T: Send`.
unsafe impl<T: Send> Sync for RecvOp<'_, T> {}
// SAFETY: as above; the op carries no thread affinity.
unsafe impl<T: Send> Send for RecvOp<'_, T> {}

impl<'a, T> RecvOp<'a, T> {
    pub(crate) fn new(chan: ChanRef<'a, T>) -> Self {
        Self {
            chan,
            slot: UnsafeCell::new(None),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    fn project(self: Pin<&mut Self>) -> (&ChanRef<'a, T>, &Slot<T>, &mut Option<Registration>) {
        // SAFETY: we hand out shared references to the pinned slot and the
        // channel, and a mutable one to `published`, which is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        (&this.chan, &this.slot, &mut this.published)
    }

    fn take_result(self: Pin<&mut Self>) -> Result<T, RecvError> {
        let (_, slot, published) = self.project();
        *published = None;
        // SAFETY: the opstate is `SYNCED` (or we committed in the try
        // phase): the remote finished with the slot, it is ours again.
        unsafe { take(slot) }.ok_or(RecvError)
    }
}

impl<T> Sealed for RecvOp<'_, T> {}

impl<T> Op for RecvOp<'_, T> {
    type Output = Result<T, RecvError>;

    // No prepare; a try publishes only when it says so (`Published`).
    fn try_leaves_nothing(&self) -> bool {
        true
    }

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    // `block` publishes at most one record, after `install_waker`.
    fn installs_waker(&self) -> bool {
        true
    }

    // Always inline, as `try_or_publish`; the rest is `recv_now_slow`.
    #[inline(always)]
    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        let (chan, slot, _) = self.project();
        if !chan.may(readiness::RECV_MAY) {
            return None;
        }
        let mut st = chan.lock();
        // SAFETY: unpublished: the slot is ours.
        if unsafe { chan.recv_buffered_locked(&mut st, slot) } {
            drop(st);
            // SAFETY: committed by us, unpublished: the slot is ours.
            return Some(unsafe { take(slot) }.ok_or(RecvError));
        }
        recv_now_slow(chan, st, slot)
    }

    // Always inline: the readiness test and the buffered shortcut, so that
    // a choice's loop pays no call for a branch that cannot commit or that
    // takes a buffered value (LLVM leaves a plain `#[inline]` out of line);
    // the rest is `recv_try_slow`.
    #[inline(always)]
    fn try_or_publish(self: Pin<&mut Self>, cx: BlockCx<'_>) -> Tried<Self::Output> {
        let (chan, slot, published) = self.project();
        if !chan.may(readiness::RECV_MAY) {
            return Tried::NotReady;
        }
        let mut st = chan.lock();
        // SAFETY: unpublished (the caller's contract): the slot is ours.
        if unsafe { chan.recv_buffered_locked(&mut st, slot) } {
            drop(st);
            // SAFETY: committed by us, unpublished: the slot is ours.
            return Tried::Committed(unsafe { take(slot) }.ok_or(RecvError));
        }
        recv_try_slow(chan, st, slot, published, cx)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (chan, slot, published) = self.project();
        let mut st = chan.lock();
        // Retry, then publish under the same lock: a sender that arrived
        // since our try is found now, and any later one finds our record.
        // SAFETY: `retrying` claims our opstate before touching our slot.
        match unsafe { chan.recv_locked(&mut st, slot, Seeker::retrying(cx.state)) } {
            Received::Done(waker) => {
                cx.state.commit_own(cx.leaf);
                drop(st);
                wake(waker);
            }
            Received::Buffered => {
                cx.state.commit_own(cx.leaf);
                let refilled = chan.refill_locked(&mut st, Some(cx.state));
                drop(st);
                wake(refilled);
            }
            Received::Disconnected => cx.state.commit_own(cx.leaf),
            Received::NotReady => {
                install_waker(cx);
                *published = Some(st.recvq.publish(cx, slot));
            }
            // Another leaf of our perform committed it: nothing to publish.
            Received::SelfSynced => {}
        }
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        // Whoever committed us removed our record.
        self.take_result()
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        let (chan, slot, published) = self.project();
        *published = None;
        // SAFETY: `SYNCED`: the slot is ours again.
        if let Some(value) = unsafe { take(slot) } {
            chan.rescue(value);
        }
    }

    // Inline: a branch that published nothing (a choice's losers after a
    // try) only tests `published`.
    #[inline]
    fn withdraw(self: Pin<&mut Self>) {
        let (chan, _, published) = self.project();
        if let Some(reg) = published.take() {
            withdraw_published(chan, reg, |st| &mut st.recvq);
        }
    }
}

/// The op of sending one value on a channel: made by
/// [`Sender::send_op`](crate::Sender::send_op).
///
/// Commits when a receiver takes the value (rendezvous) or the buffer has
/// room; yields `Err(SendError(value))`, handing the value back, once every
/// receiver is gone. If the op is never performed or loses a choice, the
/// value stays in it: get it back with [`SendOp::into_value`].
///
/// ```
/// use fibra::{Op, SendOp};
///
/// let (tx, rx) = fibra::bounded(1);
/// let op: SendOp<'_, i32> = tx.send_op(4);
/// op.perform().unwrap();
/// assert_eq!(rx.try_recv(), Ok(4));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct SendOp<'a, T> {
    chan: ChanRef<'a, T>,
    slot: Slot<T>,
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

// SAFETY: as for `RecvOp`.
unsafe impl<T: Send> Sync for SendOp<'_, T> {}
// SAFETY: as for `RecvOp`.
unsafe impl<T: Send> Send for SendOp<'_, T> {}

impl<'a, T> SendOp<'a, T> {
    pub(crate) fn new(chan: ChanRef<'a, T>, value: T) -> Self {
        Self {
            chan,
            slot: UnsafeCell::new(Some(value)),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Takes back the value of an op that was not performed (or whose
    /// `try_perform` failed).
    ///
    /// ```
    /// use fibra::Op;
    ///
    /// let (tx, _rx) = fibra::channel::<String>();
    /// // Nobody is receiving: the attempt fails and the value comes back.
    /// let op = tx.send_op("hi".to_string()).try_perform().unwrap_err();
    /// assert_eq!(op.into_value(), "hi");
    /// ```
    pub fn into_value(self) -> T {
        debug_assert!(self.published.is_none());
        // SAFETY: by value, so not pinned and not published: the slot is ours.
        unsafe { take(&self.slot) }.expect("a send op holds its value until it commits")
    }

    /// The value, if it was not sent and the op is not published (after a
    /// perform that chose another branch or timed out).
    pub(crate) fn take_unsent(self: Pin<&mut Self>) -> Option<T> {
        let (_, slot, published) = self.project();
        if published.is_some() {
            return None;
        }
        // SAFETY: unpublished: the slot is ours.
        unsafe { take(slot) }
    }

    fn project(self: Pin<&mut Self>) -> (&ChanRef<'a, T>, &Slot<T>, &mut Option<Registration>) {
        // SAFETY: as for `RecvOp::project`.
        let this = unsafe { self.get_unchecked_mut() };
        (&this.chan, &this.slot, &mut this.published)
    }

    fn take_result(self: Pin<&mut Self>) -> Result<(), SendError<T>> {
        let (_, slot, published) = self.project();
        *published = None;
        // SAFETY: committed: the slot is ours again. A value still there
        // means the commit was "disconnected".
        match unsafe { take(slot) } {
            None => Ok(()),
            Some(v) => Err(SendError(v)),
        }
    }
}

impl<T> Sealed for SendOp<'_, T> {}

impl<T> Op for SendOp<'_, T> {
    type Output = Result<(), SendError<T>>;

    // No prepare; a try publishes only when it says so (`Published`).
    fn try_leaves_nothing(&self) -> bool {
        true
    }

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    // `block` publishes at most one record, after `install_waker`.
    fn installs_waker(&self) -> bool {
        true
    }

    // Always inline, as `try_or_publish`; the rest is `send_now_slow`.
    #[inline(always)]
    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        let (chan, slot, _) = self.project();
        if !chan.may(readiness::SEND_MAY) {
            return None;
        }
        let mut st = chan.lock();
        // SAFETY: unpublished: the slot is ours.
        if unsafe { chan.send_buffered_locked(&mut st, slot) } {
            return Some(Ok(()));
        }
        send_now_slow(chan, st, slot)
    }

    // Always inline, as `RecvOp::try_or_publish`; the rest is
    // `send_try_slow`.
    #[inline(always)]
    fn try_or_publish(self: Pin<&mut Self>, cx: BlockCx<'_>) -> Tried<Self::Output> {
        let (chan, slot, published) = self.project();
        if !chan.may(readiness::SEND_MAY) {
            return Tried::NotReady;
        }
        let mut st = chan.lock();
        // SAFETY: unpublished (the caller's contract): the slot is ours.
        if unsafe { chan.send_buffered_locked(&mut st, slot) } {
            return Tried::Committed(Ok(()));
        }
        send_try_slow(chan, st, slot, published, cx)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (chan, slot, published) = self.project();
        let mut st = chan.lock();
        // As `RecvOp::block`: retry, then publish under the same lock.
        // SAFETY: `retrying` claims our opstate before touching our slot.
        match unsafe { chan.send_locked(&mut st, slot, Seeker::retrying(cx.state)) } {
            Sent::Done(waker) => {
                cx.state.commit_own(cx.leaf);
                drop(st);
                wake(waker);
            }
            Sent::Disconnected => cx.state.commit_own(cx.leaf),
            Sent::NotReady => {
                install_waker(cx);
                *published = Some(st.sendq.publish(cx, slot));
            }
            // Another leaf of our perform committed it: nothing to publish.
            Sent::SelfSynced => {}
        }
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        self.take_result()
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        // The value was delivered (the send happened), or every receiver is
        // gone and it drops with the op: nothing to give back.
        *self.project().2 = None;
    }

    // Inline: a branch that published nothing (a choice's losers after a
    // try) only tests `published`.
    #[inline]
    fn withdraw(self: Pin<&mut Self>) {
        let (chan, _, published) = self.project();
        if let Some(reg) = published.take() {
            withdraw_published(chan, reg, |st| &mut st.sendq);
        }
    }
}

/// The general receive under the lock `st`, publishing nothing: its
/// outcome, or the lock back if no sender and no value was there.
#[inline(always)]
fn recv_general<'a, T>(
    chan: &Chan<T>,
    mut st: Guard<'a, T>,
    slot: &Slot<T>,
) -> Result<Result<T, RecvError>, Guard<'a, T>> {
    // SAFETY: unpublished (the caller's contract): the slot is ours.
    match unsafe { chan.recv_locked(&mut st, slot, Seeker::FREE) } {
        Received::Done(waker) => {
            drop(st);
            wake(waker);
            // SAFETY: committed by us, unpublished: the slot is ours.
            Ok(unsafe { take(slot) }.ok_or(RecvError))
        }
        Received::Buffered => {
            let refilled = chan.refill_locked(&mut st, None);
            drop(st);
            wake(refilled);
            // SAFETY: as above.
            Ok(unsafe { take(slot) }.ok_or(RecvError))
        }
        Received::Disconnected => Ok(Err(RecvError)),
        Received::NotReady => Err(st),
        Received::SelfSynced => unreachable!("unpublished op saw itself synced"),
    }
}

/// The general send under the lock `st`, as [`recv_general`].
#[inline(always)]
fn send_general<'a, T>(
    chan: &Chan<T>,
    mut st: Guard<'a, T>,
    slot: &Slot<T>,
) -> Result<Result<(), SendError<T>>, Guard<'a, T>> {
    // SAFETY: unpublished (the caller's contract): the slot is ours.
    match unsafe { chan.send_locked(&mut st, slot, Seeker::FREE) } {
        Sent::Done(waker) => {
            drop(st);
            wake(waker);
            Ok(Ok(()))
        }
        Sent::Disconnected => {
            drop(st);
            // SAFETY: committed, unpublished: the slot is ours. The value
            // is still there (nobody took it).
            Ok(match unsafe { take(slot) } {
                None => Ok(()),
                Some(v) => Err(SendError(v)),
            })
        }
        Sent::NotReady => Err(st),
        Sent::SelfSynced => unreachable!("unpublished op saw itself synced"),
    }
}

/// `RecvOp::try_or_publish` past the shortcut, under the lock `st`: the
/// general receive, and if nobody is there, the record published under the
/// same lock.
#[inline(never)]
fn recv_try_slow<T>(
    chan: &Chan<T>,
    st: Guard<'_, T>,
    slot: &Slot<T>,
    published: &mut Option<Registration>,
    cx: BlockCx<'_>,
) -> Tried<Result<T, RecvError>> {
    match recv_general(chan, st, slot) {
        Ok(out) => Tried::Committed(out),
        Err(mut st) => {
            // The lock found only stale records (it dropped them):
            // publish under it rather than lock again in `block`.
            // Nothing of the perform is published yet, so the waker
            // goes in first.
            cx.state.set_waker_unpublished(cx.waker.clone());
            *published = Some(st.recvq.publish(cx, slot));
            Tried::Published
        }
    }
}

/// `SendOp::try_or_publish` past the shortcut, as [`recv_try_slow`].
#[inline(never)]
fn send_try_slow<T>(
    chan: &Chan<T>,
    st: Guard<'_, T>,
    slot: &Slot<T>,
    published: &mut Option<Registration>,
    cx: BlockCx<'_>,
) -> Tried<Result<(), SendError<T>>> {
    match send_general(chan, st, slot) {
        Ok(out) => Tried::Committed(out),
        Err(mut st) => {
            // As in `recv_try_slow`.
            cx.state.set_waker_unpublished(cx.waker.clone());
            *published = Some(st.sendq.publish(cx, slot));
            Tried::Published
        }
    }
}

/// Before a leaf's one record is published: the waker its caller left to
/// it (`Op::installs_waker`), if any, goes into the opstate.
#[inline(always)]
fn install_waker(cx: BlockCx<'_>) {
    if let Some(waker) = cx.install {
        cx.state.set_waker_unpublished(waker.clone());
    }
}

/// A leaf's withdrawal of its published record `reg` from the queue `queue`
/// picks (out of line: the common withdrawal has nothing published).
#[inline(never)]
fn withdraw_published<T>(
    chan: &Chan<T>,
    reg: Registration,
    queue: impl FnOnce(&mut super::meeting::State<T>) -> &mut crate::op::waiter::WaitQueue<Slot<T>>,
) {
    // SAFETY: our own record. Unlinked: a partner took it out.
    if !unsafe { reg.is_unlinked() } {
        queue(&mut chan.lock()).remove(reg);
    }
}

/// `RecvOp::try_now` past the shortcut, under the lock `st`: the general
/// receive, publishing nothing.
#[inline(never)]
fn recv_now_slow<T>(
    chan: &Chan<T>,
    st: Guard<'_, T>,
    slot: &Slot<T>,
) -> Option<Result<T, RecvError>> {
    recv_general(chan, st, slot).ok()
}

/// `SendOp::try_now` past the shortcut, as [`recv_now_slow`].
#[inline(never)]
fn send_now_slow<T>(
    chan: &Chan<T>,
    st: Guard<'_, T>,
    slot: &Slot<T>,
) -> Option<Result<(), SendError<T>>> {
    send_general(chan, st, slot).ok()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn a_channel_reference_is_one_word() {
        assert_eq!(size_of::<ChanRef<'_, u64>>(), size_of::<usize>());
        // The reference, the slot (`Option<u64>`) and `published`.
        assert_eq!(size_of::<RecvOp<'_, u64>>(), 5 * size_of::<usize>());
        assert_eq!(size_of::<SendOp<'_, u64>>(), 5 * size_of::<usize>());
    }

    #[test]
    fn a_channel_reference_points_at_its_channel() {
        let chan = Arc::new(Chan::<u64>::new(3));
        // SAFETY: `op` is dropped before `chan`.
        let in_handle = unsafe { ChanRef::in_handle(&chan) };
        let op = RecvOp::new(in_handle);
        assert!(std::ptr::eq(&*op.chan, &*chan));
        assert_eq!(op.chan.capacity(), Some(3));
        drop(op);
        assert_eq!(Arc::strong_count(&chan), 1);
        let borrowed = ChanRef::borrowed(&chan);
        assert!(std::ptr::eq(&*borrowed, &*chan));
        assert!(!std::mem::needs_drop::<ChanRef<'_, String>>());
        // So a choice over C of them has no drop loop for a `Copy` payload.
        assert!(!std::mem::needs_drop::<RecvOp<'_, u64>>());
        assert!(!std::mem::needs_drop::<SendOp<'_, u64>>());
    }
}
