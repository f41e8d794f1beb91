//! [`Send`] and [`Recv`]: the futures of [`Sender::send`](super::Sender::send)
//! and [`Receiver::recv`](super::Receiver::recv), a send or receive that is
//! not part of a choice.
//!
//! They follow the protocol of a perform of `send_op`/`recv_op` (an opstate
//! that a partner commits, a record in the channel's wait queue, a payload
//! slot), but a plain wait has a single branch, which makes it simpler:
//!
//! * The first poll takes the channel's lock once: it tries to commit with
//!   a partner, and if none is there it publishes its record under the same
//!   lock, with nothing to retry (nobody could have come in between), and
//!   without ever claiming its own opstate (an unpublished opstate is
//!   nobody else's).
//! * Its record is *plain* (`op/waiter.rs`): a partner holding the lock
//!   commits it without a compare-and-swap.
//! * No branch index, no `prepare`/`repoll`, no choice bookkeeping.
//! * A buffered send or receive that meets no waiter commits through the
//!   channel's shortcut (`Chan::send_buffered_locked`/`recv_buffered_locked`),
//!   inlined into `poll`; the general path is out of line.
//! * The opstate is built in place (the future is pinned by then) only when
//!   the first poll publishes a record. A future that completes on its
//!   first poll never writes it: building the future is then three stores
//!   (channel, slot, phase) before the awaiting task moves it into its own
//!   state.
//!
//! Both futures are a [`Wait`] plus what they do under the lock and what
//! they make of the slot at the end.
//!
//! # Invariants
//!
//! * `state` is initialised exactly while `phase` is `Waiting`: written
//!   under the lock just before the record is pushed, dropped when the
//!   wait leaves `Waiting` (committed and polled, or withdrawn), once
//!   nobody else can reach it.
//! * `phase` is `Waiting` exactly while a record of ours may be in the
//!   channel's queue; the record points at `state` and `slot`, which are
//!   pinned (`PhantomPinned`). Dropping a waiting future takes the lock and
//!   removes the record; if it is gone, a partner committed it and stored
//!   `SYNCED` before releasing that lock. Either way the memory is ours
//!   again before it can go.
//! * `slot` is touched by us only while unpublished, after `SYNCED`, or
//!   under the lock once the record is out of the queue; by a partner only
//!   under the lock, while it takes the record out.
//! * Cancel-safety is that of a perform: a send dropped before it commits
//!   was not sent (its value drops with it); a receive dropped after a
//!   sender committed to it gives the value back to the channel.

use super::meeting::{Chan, Guard, Received, Sent, State};
use super::ops::wake;
use super::{RecvError, SendError};
use crate::loom::UnsafeCell;
use crate::op::slot::{Slot, take};
use crate::op::state::{OpState, Seen};
use crate::op::waiter::{Registration, Seeker, WaitQueue};
use std::future::Future;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Where a plain send or receive is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not polled yet; `state` is uninitialised.
    Fresh,
    /// Our record is (or was, until a partner took it) in the queue;
    /// `state` is initialised.
    Waiting(Registration),
    /// Finished; `state` is uninitialised again (dropped on leaving
    /// `Waiting`).
    Done,
}

/// Which queue of the channel a plain wait's record goes in.
#[derive(Clone, Copy)]
enum Side {
    Send,
    Recv,
}

impl Side {
    fn queue<T>(self, st: &mut State<T>) -> &mut WaitQueue<Slot<T>> {
        match self {
            Side::Send => &mut st.sendq,
            Side::Recv => &mut st.recvq,
        }
    }
}

/// What a plain send and a plain receive share.
struct Wait<'a, T> {
    chan: &'a Chan<T>,
    /// Built in place only when the wait publishes a record (`Phase`): a
    /// send or receive that completes on its first poll never writes it,
    /// which keeps the future cheap to build and move.
    state: MaybeUninit<OpState>,
    slot: Slot<T>,
    phase: Phase,
    _pinned: PhantomPinned,
}

// SAFETY: the slot is only accessed under the protocol above (by the owner
// through `Pin<&mut Self>`, or by a partner holding the channel's lock), so
// a shared `&Wait` exposes nothing; values of `T` cross threads, hence
// `T: Send`.
unsafe impl<T: std::marker::Send> Sync for Wait<'_, T> {}
// SAFETY: as above; nothing in it is tied to a thread.
unsafe impl<T: std::marker::Send> std::marker::Send for Wait<'_, T> {}

impl<'a, T> Wait<'a, T> {
    fn new(chan: &'a Chan<T>, value: Option<T>) -> Self {
        Self {
            chan,
            state: MaybeUninit::uninit(),
            slot: UnsafeCell::new(value),
            phase: Phase::Fresh,
            _pinned: PhantomPinned,
        }
    }

    /// Polls the wait. On the first poll, under the lock and with our
    /// unpublished slot, `fast` tries the shortcut (a buffered send or
    /// receive that meets no waiter: `true` if it committed), then
    /// `attempt` the general path: `Some(waker)` if it committed (the waker
    /// of the partner, woken once the lock is released), `None` if nobody
    /// is there (we publish). Ready with the slot's content once committed.
    ///
    /// Only the shortcut is inlined into the caller; the rest is out of
    /// line (`first_poll_slow`, `poll_again`).
    #[inline(always)]
    fn poll_wait(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        side: Side,
        fast: impl FnOnce(&Chan<T>, &mut Guard<'_, T>, &Slot<T>) -> bool,
        attempt: impl FnOnce(&Chan<T>, &mut State<T>, &Slot<T>) -> Option<Option<Waker>>,
    ) -> Poll<Option<T>> {
        // SAFETY: `state` and `slot` stay where they are (only shared
        // references to them go out); `phase` is not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        if this.phase != Phase::Fresh {
            return this.poll_again(cx, side);
        }
        if !crate::coop::consume() {
            // Out of budget on a fibra worker: let the others run.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let mut st = this.chan.lock();
        if fast(this.chan, &mut st, &this.slot) {
            drop(st);
            this.phase = Phase::Done;
            // SAFETY: committed by us, unpublished: the slot is ours.
            return Poll::Ready(unsafe { take(&this.slot) });
        }
        this.first_poll_slow(cx, side, st, attempt)
    }

    /// The first poll's general path, under the lock `st` (`poll_wait`).
    #[inline(never)]
    fn first_poll_slow(
        &mut self,
        cx: &Context<'_>,
        side: Side,
        mut st: Guard<'_, T>,
        attempt: impl FnOnce(&Chan<T>, &mut State<T>, &Slot<T>) -> Option<Option<Waker>>,
    ) -> Poll<Option<T>> {
        match attempt(self.chan, &mut st, &self.slot) {
            Some(waker) => {
                drop(st);
                wake(waker);
            }
            None => {
                // Nobody can have come since we looked: we hold the lock.
                // Publish; the next partner commits us. The opstate is
                // built in place (the future is pinned) before anything
                // can point at it.
                let state = self.state.write(OpState::new());
                state.set_waker_unpublished(cx.waker().clone());
                let reg = side.queue(&mut st).push_plain(state, &self.slot);
                self.phase = Phase::Waiting(reg);
                return Poll::Pending;
            }
        }
        self.phase = Phase::Done;
        // SAFETY: committed by us, unpublished: the slot is ours.
        Poll::Ready(unsafe { take(&self.slot) })
    }

    /// A poll after the first one.
    #[inline(never)]
    fn poll_again(&mut self, cx: &Context<'_>, side: Side) -> Poll<Option<T>> {
        match self.phase {
            Phase::Waiting(reg) => {
                if self.state().load() != Seen::Synced(0) && self.still_waiting(side, reg, cx) {
                    return Poll::Pending;
                }
                // SAFETY: `Waiting`: initialised; committed, so nobody
                // reaches it any more.
                unsafe { self.state.assume_init_drop() };
            }
            Phase::Done => panic!("a channel send or receive polled after it completed"),
            Phase::Fresh => unreachable!("the first poll goes through `poll_wait`"),
        }
        self.phase = Phase::Done;
        // SAFETY: committed by a partner that stored `SYNCED`: the slot is
        // ours.
        Poll::Ready(unsafe { take(&self.slot) })
    }

    /// A published wait that saw no commit: looks again under the lock.
    /// `true` (waker refreshed) while it waits.
    #[inline(never)]
    fn still_waiting(&self, side: Side, reg: Registration, cx: &Context<'_>) -> bool {
        // Our record is the only way to reach us, and only the holder of the
        // lock takes it out (then commits it before unlocking).
        let mut st = self.chan.lock();
        if side.queue(&mut st).contains(reg) {
            // SAFETY: we hold the queue's lock and our record is in it.
            unsafe { self.state().replace_waker_plain(cx.waker()) };
            return true;
        }
        // Committed since we looked; `SYNCED` was stored before the lock we
        // just took was released.
        debug_assert_eq!(self.state().load(), Seen::Synced(0));
        false
    }

    /// The opstate of a published wait.
    fn state(&self) -> &OpState {
        debug_assert!(matches!(self.phase, Phase::Waiting(_)));
        // SAFETY: only called in `Waiting`, where `state` is initialised.
        unsafe { self.state.assume_init_ref() }
    }

    /// For a drop: withdraws a waiting record, or finds it committed; either
    /// way the slot is ours again, and its content is returned (outside the
    /// lock).
    #[inline(always)]
    fn withdraw(&mut self, side: Side) -> Option<T> {
        let Phase::Waiting(reg) = self.phase else {
            return None;
        };
        self.withdraw_published(side, reg)
    }

    #[inline(never)]
    fn withdraw_published(&mut self, side: Side, reg: Registration) -> Option<T> {
        self.phase = Phase::Done;
        side.queue(&mut self.chan.lock()).remove(reg);
        // SAFETY: it was `Waiting` (initialised), and is out of the queue
        // (withdrawn, or committed with `SYNCED` stored under the lock we
        // took): nobody else touches the opstate or the slot.
        unsafe {
            self.state.assume_init_drop();
            take(&self.slot)
        }
    }
}

/// The future of [`Receiver::recv`](super::Receiver::recv): the next value,
/// or `Err(RecvError)` once every sender is gone and the channel is empty.
///
/// Cancel-safe: a value is taken only by the poll that returns it; if the
/// future is dropped right after a sender committed to it (a foreign
/// `select!` can do that), the value goes back to the front of the channel.
/// In a choice, use [`Receiver::recv_op`](super::Receiver::recv_op).
///
/// ```
/// let (tx, rx) = fibra::bounded::<&str>(1);
/// tx.try_send("hi").unwrap();
/// drop(tx);
/// futures::executor::block_on(async {
///     let recv: fibra::chan::Recv<'_, &str> = rx.recv();
///     assert_eq!(recv.await, Ok("hi"));
///     assert_eq!(rx.recv().await, Err(fibra::RecvError)); // closed and drained
/// });
/// ```
#[must_use = "futures do nothing unless polled: .await it"]
pub struct Recv<'a, T>(Wait<'a, T>);

impl<'a, T> Recv<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>) -> Self {
        Self(Wait::new(chan, None))
    }
}

impl<T> Future for Recv<'_, T> {
    type Output = Result<T, RecvError>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of the only field.
        let wait = unsafe { self.map_unchecked_mut(|r| &mut r.0) };
        wait.poll_wait(
            cx,
            Side::Recv,
            // SAFETY (both closures): unpublished: the slot is ours.
            |chan, st, slot| unsafe { chan.recv_buffered_locked(st, slot) },
            |chan, st, slot| match unsafe { chan.recv_locked(st, slot, Seeker::FREE) } {
                Received::Done(waker) => Some(waker),
                Received::Buffered => Some(chan.refill_locked(st, None)),
                Received::Disconnected => Some(None),
                Received::NotReady => None,
                Received::SelfSynced => unreachable!("an unpublished wait saw itself synced"),
            },
        )
        // An empty slot means "disconnected".
        .map(|got| got.ok_or(RecvError))
    }
}

impl<T> Drop for Recv<'_, T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.withdraw(Side::Recv) {
            // A sender committed to us after our last poll: give it back.
            self.0.chan.rescue(value);
        }
    }
}

impl<T> std::fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recv")
            .field("phase", &self.0.phase)
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
///
/// ```
/// let (tx, rx) = fibra::bounded::<&str>(1);
/// futures::executor::block_on(async {
///     let send: fibra::chan::Send<'_, &str> = tx.send("hi");
///     send.await.unwrap(); // buffered
///     drop(rx);
///     assert_eq!(tx.send("bye").await.unwrap_err().into_inner(), "bye");
/// });
/// ```
#[must_use = "futures do nothing unless polled: .await it"]
pub struct Send<'a, T>(Wait<'a, T>);

impl<'a, T> Send<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>, value: T) -> Self {
        Self(Wait::new(chan, Some(value)))
    }
}

impl<T> Future for Send<'_, T> {
    type Output = Result<(), SendError<T>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of the only field.
        let wait = unsafe { self.map_unchecked_mut(|s| &mut s.0) };
        wait.poll_wait(
            cx,
            Side::Send,
            // SAFETY (both closures): unpublished: the slot is ours.
            |chan, st, slot| unsafe { chan.send_buffered_locked(st, slot) },
            |chan, st, slot| match unsafe { chan.send_locked(st, slot, Seeker::FREE) } {
                Sent::Done(waker) => Some(waker),
                Sent::Disconnected => Some(None),
                Sent::NotReady => None,
                Sent::SelfSynced => unreachable!("an unpublished wait saw itself synced"),
            },
        )
        // A value still in the slot means "disconnected".
        .map(|left| left.map_or(Ok(()), |v| Err(SendError(v))))
    }
}

impl<T> Drop for Send<'_, T> {
    fn drop(&mut self) {
        // Not sent, or sent while we were not looking, or every receiver
        // went: whatever is left in the slot drops here.
        drop(self.0.withdraw(Side::Send));
    }
}

impl<T> std::fmt::Debug for Send<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Send")
            .field("phase", &self.0.phase)
            .finish_non_exhaustive()
    }
}
