//! [`Send`] and [`Recv`]: the futures of [`Sender::send`](super::Sender::send)
//! and [`Receiver::recv`](super::Receiver::recv), a send or receive that is
//! not part of a choice.
//!
//! They follow the same protocol as a perform of `send_op`/`recv_op` (an
//! opstate that a partner commits, a record in the channel's wait queue, a
//! payload slot), but a plain wait has a single branch, which makes three
//! things simpler:
//!
//! * The first poll takes the channel's lock once: it tries to commit with
//!   a partner, and if none is there it publishes its record under the same
//!   lock, with nothing to retry (nobody could have come in between), and
//!   without ever claiming its own opstate (an unpublished opstate is
//!   nobody else's).
//! * No branch index, no `prepare`/`repoll`, no choice bookkeeping.
//! * Done or not started: dropping it is a check of one field.
//!
//! # Invariants
//!
//! * `published` is `Some` exactly while a record of ours may be in the
//!   channel's queue; the record points at `state` and `slot`, which are
//!   pinned (`PhantomPinned`) and outlive it: `Drop` cancels the opstate and
//!   removes the record under the channel's lock (or, if a partner committed
//!   first, waits for `SYNCED`) before the memory can go.
//! * `slot` is touched by us only while unpublished or after `SYNCED`, and
//!   by a partner only while it holds our opstate `BUSY` (`core.rs`).
//! * Cancel-safety is that of a perform: a send dropped before it commits
//!   was not sent (its value drops with it); a receive dropped after a
//!   sender committed to it gives the value back to the channel.

use super::core::{Chan, Received, Sent, Slot, take};
use super::{RecvError, SendError};
use crate::loom::UnsafeCell;
use crate::op::state::{OpState, Seen};
use crate::op::waiter::{Registration, Seeker};
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

fn wake(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}

/// Where a plain send or receive is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Fresh,
    /// Our record is (or was, until a partner took it) in the queue.
    Waiting(Registration),
    Done,
}

/// The parts of a pinned plain future.
struct Parts<'p, 'a, T> {
    chan: &'a Chan<T>,
    state: &'p OpState,
    slot: &'p Slot<T>,
    phase: &'p mut Phase,
}

/// Which queue of the channel a plain wait's record is in.
#[derive(Clone, Copy)]
enum Side {
    Send,
    Recv,
}

/// Polls a published plain wait: `true` once a partner committed it (its
/// payload is in place), `false` (waker refreshed) while it waits.
#[inline]
fn poll_waiting<T>(
    chan: &Chan<T>,
    side: Side,
    reg: Registration,
    state: &OpState,
    waker: &Waker,
) -> bool {
    match state.load() {
        Seen::Synced(_) => true,
        Seen::Waiting => still_waiting(chan, side, reg, state, waker),
        seen => unreachable!("a plain wait saw its own opstate {seen:?}"),
    }
}

/// `poll_waiting` when no commit was seen: looks again under the lock.
#[inline(never)]
fn still_waiting<T>(
    chan: &Chan<T>,
    side: Side,
    reg: Registration,
    state: &OpState,
    waker: &Waker,
) -> bool {
    // Our record is the only way to reach us, and only the holder of the
    // lock takes it out (then commits it before unlocking).
    let st = chan.lock();
    let queue = match side {
        Side::Send => &st.sendq,
        Side::Recv => &st.recvq,
    };
    if queue.contains(reg) {
        // SAFETY: we hold the queue's lock and our record is in it.
        unsafe { state.replace_waker_plain(waker) };
        return false;
    }
    // Committed since we looked; `SYNCED` was stored before the lock we
    // just took was released.
    debug_assert!(matches!(state.load(), Seen::Synced(_)));
    true
}

/// Withdraws a plain wait being dropped: `true` if its record was still
/// queued (nothing happened), `false` if a partner committed it first.
fn withdraw<T>(chan: &Chan<T>, side: Side, reg: Registration) -> bool {
    let mut st = chan.lock();
    let queue = match side {
        Side::Send => &mut st.sendq,
        Side::Recv => &mut st.recvq,
    };
    queue.remove(reg).is_some()
}

/// The future of [`Receiver::recv`](super::Receiver::recv): the next value,
/// or `Err(RecvError)` once every sender is gone and the channel is empty.
///
/// Cancel-safe: a value is taken only by the poll that returns it; if the
/// future is dropped right after a sender committed to it (a foreign
/// `select!` can do that), the value goes back to the front of the channel.
/// In a choice, use [`Receiver::recv_op`](super::Receiver::recv_op).
#[must_use = "futures do nothing unless polled: .await it"]
pub struct Recv<'a, T> {
    chan: &'a Chan<T>,
    state: OpState,
    slot: Slot<T>,
    phase: Phase,
    _pinned: PhantomPinned,
}

// SAFETY: the slot is only accessed under the op protocol (by the owner
// through `Pin<&mut Self>`, or by a partner that won the opstate), so a
// shared `&Recv` exposes nothing; values of `T` cross threads, hence
// `T: Send`.
unsafe impl<T: std::marker::Send> Sync for Recv<'_, T> {}
// SAFETY: as above; nothing in it is tied to a thread.
unsafe impl<T: std::marker::Send> std::marker::Send for Recv<'_, T> {}

impl<'a, T> Recv<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>) -> Self {
        Self {
            chan,
            state: OpState::new(),
            slot: UnsafeCell::new(None),
            phase: Phase::Fresh,
            _pinned: PhantomPinned,
        }
    }

    fn parts(self: Pin<&mut Self>) -> Parts<'_, 'a, T> {
        // SAFETY: `state` and `slot` stay where they are (only shared
        // references to them go out); `phase` is not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        Parts {
            chan: this.chan,
            state: &this.state,
            slot: &this.slot,
            phase: &mut this.phase,
        }
    }
}

impl<T> Future for Recv<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let p = self.parts();
        match *p.phase {
            Phase::Fresh => {
                if !crate::rt::budget::consume() {
                    // Out of budget on a fibra worker: let the others run.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let chan = p.chan;
                let mut st = chan.lock();
                // SAFETY: unpublished: the slot is ours.
                match unsafe { chan.recv_locked(&mut st, p.slot, Seeker::FREE) } {
                    Received::Done(waker) => {
                        drop(st);
                        wake(waker);
                    }
                    Received::Buffered => {
                        let refilled = chan.refill_locked(&mut st, None);
                        drop(st);
                        wake(refilled);
                    }
                    Received::Disconnected => {}
                    Received::NotReady => {
                        // Nobody can have come since we looked: we hold the
                        // lock. Publish; the next sender commits us.
                        p.state.set_waker_unpublished(cx.waker().clone());
                        *p.phase = Phase::Waiting(st.recvq.push_plain(p.state, p.slot));
                        return Poll::Pending;
                    }
                    Received::SelfSynced => unreachable!("an unpublished wait saw itself synced"),
                }
            }
            Phase::Waiting(reg) => {
                if !poll_waiting(p.chan, Side::Recv, reg, p.state, cx.waker()) {
                    return Poll::Pending;
                }
            }
            Phase::Done => panic!("`Recv` polled after it completed"),
        }
        *p.phase = Phase::Done;
        // SAFETY: committed (by us, unpublished, or by a partner that stored
        // `SYNCED`): the slot is ours. Empty means "disconnected".
        Poll::Ready(unsafe { take(p.slot) }.ok_or(RecvError))
    }
}

impl<T> Drop for Recv<'_, T> {
    fn drop(&mut self) {
        let Phase::Waiting(reg) = self.phase else {
            return;
        };
        self.phase = Phase::Done;
        if !withdraw(self.chan, Side::Recv, reg) {
            // SAFETY: committed (`SYNCED` was stored under the lock we
            // took): the partner is done with the slot.
            if let Some(value) = unsafe { take(&self.slot) } {
                self.chan.rescue(value);
            }
        }
    }
}

impl<T> std::fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recv")
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

/// The future of [`Sender::send`](super::Sender::send): `Ok(())` once a
/// receiver took the value (rendezvous) or it is buffered, or
/// `Err(SendError(value))`, handing the value back, once every receiver is
/// gone.
///
/// Cancel-safe: dropped before it commits, the value was not sent (it drops
/// with the future). In a choice, use
/// [`Sender::send_op`](super::Sender::send_op).
#[must_use = "futures do nothing unless polled: .await it"]
pub struct Send<'a, T> {
    chan: &'a Chan<T>,
    state: OpState,
    slot: Slot<T>,
    phase: Phase,
    _pinned: PhantomPinned,
}

// SAFETY: as for `Recv`.
unsafe impl<T: std::marker::Send> Sync for Send<'_, T> {}
// SAFETY: as for `Recv`.
unsafe impl<T: std::marker::Send> std::marker::Send for Send<'_, T> {}

impl<'a, T> Send<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>, value: T) -> Self {
        Self {
            chan,
            state: OpState::new(),
            slot: UnsafeCell::new(Some(value)),
            phase: Phase::Fresh,
            _pinned: PhantomPinned,
        }
    }

    fn parts(self: Pin<&mut Self>) -> Parts<'_, 'a, T> {
        // SAFETY: as for `Recv::parts`.
        let this = unsafe { self.get_unchecked_mut() };
        Parts {
            chan: this.chan,
            state: &this.state,
            slot: &this.slot,
            phase: &mut this.phase,
        }
    }
}

impl<T> Future for Send<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let p = self.parts();
        match *p.phase {
            Phase::Fresh => {
                if !crate::rt::budget::consume() {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let chan = p.chan;
                let mut st = chan.lock();
                // SAFETY: unpublished: the slot is ours.
                match unsafe { chan.send_locked(&mut st, p.slot, Seeker::FREE) } {
                    Sent::Done(waker) => {
                        drop(st);
                        wake(waker);
                    }
                    Sent::Disconnected => drop(st),
                    Sent::NotReady => {
                        // As for `Recv`: publish under the same lock.
                        p.state.set_waker_unpublished(cx.waker().clone());
                        *p.phase = Phase::Waiting(st.sendq.push_plain(p.state, p.slot));
                        return Poll::Pending;
                    }
                    Sent::SelfSynced => unreachable!("an unpublished wait saw itself synced"),
                }
            }
            Phase::Waiting(reg) => {
                if !poll_waiting(p.chan, Side::Send, reg, p.state, cx.waker()) {
                    return Poll::Pending;
                }
            }
            Phase::Done => panic!("`Send` polled after it completed"),
        }
        *p.phase = Phase::Done;
        // SAFETY: committed: the slot is ours again. A value still there
        // means the commit was "disconnected".
        Poll::Ready(match unsafe { take(p.slot) } {
            None => Ok(()),
            Some(v) => Err(SendError(v)),
        })
    }
}

impl<T> Drop for Send<'_, T> {
    fn drop(&mut self) {
        let Phase::Waiting(reg) = self.phase else {
            return;
        };
        self.phase = Phase::Done;
        withdraw(self.chan, Side::Send, reg);
        // If it was not queued any more, a receiver took the value, or every receiver went and the
        // value drops with the slot: nothing to give back.
    }
}

impl<T> std::fmt::Debug for Send<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Send")
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}
