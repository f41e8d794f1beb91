//! The channel itself: one lock-protected meeting place shared by every
//! flavour (rendezvous, bounded, unbounded), and the commit algorithms.
//!
//! # Invariants (all under `state`'s lock)
//!
//! * `sendq` holds blocked senders, `recvq` blocked receivers; each record
//!   points at its perform's opstate and at the branch's value slot.
//! * A live record in `recvq` implies `buf` is empty, and a live record in
//!   `sendq` implies `buf.len() >= cap` (stale records may linger; they are
//!   dropped by whoever meets them).
//! * `buf.len() <= cap`, except after a rescue or an asynchronous send
//!   queued beyond capacity. A received value whose perform was dropped
//!   after the commit goes back to the *front* of `buf`. An asynchronous
//!   send that finds no receiver, no room and no blocked sender goes to the
//!   *back* of `buf`, beyond capacity (`queue_beyond_locked`): it is older
//!   than every record that `sendq` will get until it is taken, so FIFO
//!   order holds, and `refill_locked` (which needs `buf.len() < cap`) moves
//!   no blocked sender ahead of it.
//! * `buf[i]` has the index `front + i`: a pop advances `front`, a rescue
//!   moves it back. An asynchronous send's receipt knows its value by this
//!   index (`Receipt::Queued`). The consumption mark (`State::mark`) only
//!   grows: every index below it was popped or within capacity. The values
//!   at indexes from the mark to `beyond_end` are asynchronous sends still
//!   waiting, the last values of `buf` (none once the receivers went:
//!   `beyond_end` is then 0). A rescued value takes the index before
//!   `front`, which may have been a consumed value's: the mark stays where
//!   it was for the values there are, and a value sent later is consumed
//!   only once it is within capacity.
//! * `TX_GONE` / `RX_GONE` (in `gone`) are set once, when the last sender / receiver
//!   handle goes, and every record of the other side is then committed with
//!   the "disconnected" outcome (its slot left as it was).
//! * No waker is woken and no user value is dropped while the lock is held.
//! * The shortcuts (`send_buffered_locked`, `recv_buffered_locked`) commit
//!   only an unpublished perform, and only when the other side's queue is
//!   empty: then the general path would find no partner and make no refill,
//!   so both keep the invariants above in the same way.
//!
//! # Payload slots
//!
//! A value slot (`Option<T>` in a cell) belongs to one leaf op in a pinned
//! perform. A sender's slot holds the value to send; a receiver's slot
//! receives one. A slot is touched only by its owner while the owner's opstate
//! is unpublished or claimed (`C`), or by the remote party that won the
//! owner's record (moved its opstate to `BUSY`, or, for a plain wait's
//! record, took it out of the queue under the lock: `send_recv_futures.rs`) — never by
//! two at once.

use super::receipts::Receipts;
use crate::loom::{AtomicUsize, Lock, LockGuard, Ordering, UnsafeCell};
use crate::op::slot::{Slot, put, take};
use crate::op::state::OpState;
use crate::op::waiter::{Found, Seeker, WaitQueue};
use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::task::Waker;

pub(crate) struct State<T> {
    buf: VecDeque<T>,
    pub(crate) sendq: WaitQueue<Slot<T>>,
    pub(crate) recvq: WaitQueue<Slot<T>>,
    /// `readiness::TX_GONE` / `readiness::RX_GONE`, set once each: kept in the
    /// readiness word's own bits so the unlock copies them in one go.
    gone: usize,
    /// Set by a buffered shortcut that left every bit of the readiness word
    /// as it was, for the unlock that follows: it skips the word's
    /// recompute and store (the word already holds that value: every change
    /// of `State` happens under the lock, and every other unlock stores).
    /// Kept here, not in `Guard`, so that a guard stays two words (passed
    /// in registers).
    keep_word: bool,
    /// The index of `buf[0]` (module docs). Starts at `FRONT_START`, so
    /// that the rescues' decrements never take it below zero; never wraps
    /// (one increment per value received).
    front: u64,
    /// The consumption mark kept by the rescues for the values there were
    /// (`mark`; set in `rescue`): at most the index after the last of them.
    high: u64,
    /// One past the index of the last value an asynchronous send queued
    /// beyond capacity (0 if none ever was).
    beyond_end: u64,
    /// Receipts of values queued beyond capacity that wait for them, and
    /// the values given back after the receiving side went (boxed on first
    /// use).
    receipts: Option<Box<Receipts<T>>>,
    /// Some receipt waits in `receipts` (a pop must tell it).
    watched: bool,
    /// `receipts` has wakers for the unlock to wake (set with `keep_word`
    /// false).
    wake_pending: bool,
}

/// `State::front`'s first value.
const FRONT_START: u64 = 1 << 62;

impl<T> State<T> {
    fn tx_gone(&self) -> bool {
        self.gone & readiness::TX_GONE != 0
    }

    pub(crate) fn rx_gone(&self) -> bool {
        self.gone & readiness::RX_GONE != 0
    }

    /// Takes the front value out of `buf`, keeping the indexes (module
    /// docs); a receipt waiting for an index now consumed is told.
    #[inline(always)]
    fn pop_front(&mut self, cap: usize) -> Option<T> {
        let v = self.buf.pop_front()?;
        self.front += 1;
        if self.watched {
            self.receipts_progress(cap);
        }
        Some(v)
    }

    /// The consumption mark: every index below it was consumed (popped, or
    /// within capacity at some point). `front + cap`, which only a rescue
    /// lowers: `high` keeps the mark from going back then.
    fn mark(&self, cap: usize) -> u64 {
        self.high.max(self.front.saturating_add(cap as u64))
    }

    /// Runs `f` on the receipts' side of the channel (made on first use).
    pub(crate) fn with_receipts<R>(&mut self, f: impl FnOnce(&mut Receipts<T>) -> R) -> R {
        let r = self.receipts.get_or_insert_default();
        let out = f(r);
        self.watched = r.watching();
        out
    }

    /// Runs `f` on the receipts' side of the channel, if it was made.
    pub(crate) fn with_receipts_if_any<R>(
        &mut self,
        f: impl FnOnce(&mut Receipts<T>) -> R,
    ) -> Option<R> {
        self.receipts.is_some().then(|| self.with_receipts(f))
    }

    /// The receipt of index `seq` was dropped before its outcome was
    /// taken: takes its waker out, and marks its value to drop if the
    /// receiving side goes before anyone takes it. A value already given
    /// back and the waker are returned, for the caller to drop outside the
    /// lock.
    pub(crate) fn forget_receipt(&mut self, cap: usize, seq: u64) -> (Option<T>, Option<Waker>) {
        let mark = self.mark(cap);
        if seq < mark {
            // Consumed: nothing of it is kept but maybe a waker.
            let waker = self.with_receipts_if_any(|r| r.remove_waker(seq));
            return (None, waker.flatten());
        }
        let gone = self.rx_gone();
        self.with_receipts(|r| {
            let waker = r.remove_waker(seq);
            if gone {
                (r.take_returned(seq), waker)
            } else {
                r.forget(seq, mark);
                (None, waker)
            }
        })
    }

    /// Whether the value of index `seq` (queued beyond capacity by an
    /// asynchronous send) was consumed.
    pub(crate) fn consumed(&self, cap: usize, seq: u64) -> bool {
        seq < self.mark(cap)
    }

    /// How many values of `buf` are asynchronous sends still waiting
    /// beyond capacity: the indexes from the mark to `beyond_end`, the
    /// last values of `buf`.
    fn waiting_beyond(&self, cap: usize) -> usize {
        // At most `buf.len()`: the cast cannot truncate.
        self.beyond_end.saturating_sub(self.mark(cap)) as usize
    }

    /// Cold: a pop with receipts registered; tells those now consumed.
    #[cold]
    #[inline(never)]
    fn receipts_progress(&mut self, cap: usize) {
        let mark = self.mark(cap);
        if self.with_receipts(|r| r.progress(|seq| seq < mark)) {
            // The unlock must run its slow path, which wakes them.
            self.keep_word = false;
            self.wake_pending = true;
        }
    }
}

/// Outcome of a send attempt under the lock.
pub(crate) enum Sent {
    /// The value went to a receiver (wake it) or into the buffer.
    Done(Option<Waker>),
    /// Every receiver is gone; the value is still in the sender's slot.
    Disconnected,
    /// Nobody to take it and no room: wait.
    NotReady,
    /// Another branch of the seeker's perform committed.
    SelfSynced,
}

/// Outcome of a receive attempt under the lock.
pub(crate) enum Received {
    /// A value is in the receiver's slot; wake the sender it came from, if any.
    Done(Option<Waker>),
    /// A value is in the receiver's slot, taken from the buffer: once the
    /// receiver committed itself, refill the room (`refill_locked`).
    Buffered,
    /// Every sender is gone and nothing is buffered.
    Disconnected,
    NotReady,
    SelfSynced,
}

/// Bits of `Chan::readiness`: a summary of `State`, stored (Relaxed) at
/// every unlock that may have changed it (a buffered shortcut that changed
/// none of its bits skips the store: `State::keep_word`), read lock-free by the optimistic phase to skip the lock
/// when no partner can be there. A stale "nobody" is harmless: the block phase
/// retries under the lock.
pub(crate) mod readiness {
    pub(crate) const SENDERS_WAITING: usize = 1;
    pub(crate) const RECEIVERS_WAITING: usize = 2;
    pub(crate) const BUFFERED: usize = 4;
    pub(crate) const ROOM: usize = 8;
    pub(crate) const TX_GONE: usize = 16;
    pub(crate) const RX_GONE: usize = 32;
    /// A receive may commit now.
    pub(crate) const RECV_MAY: usize = SENDERS_WAITING | BUFFERED | TX_GONE;
    /// A send may commit now.
    pub(crate) const SEND_MAY: usize = RECEIVERS_WAITING | ROOM | RX_GONE;
}

/// The channel's lock guard: refreshes the readiness word before unlocking.
pub(crate) struct Guard<'a, T> {
    st: ManuallyDrop<LockGuard<'a, State<T>>>,
    chan: &'a Chan<T>,
}

impl<T> std::ops::Deref for Guard<'_, T> {
    type Target = State<T>;

    fn deref(&self) -> &State<T> {
        &self.st
    }
}

impl<T> std::ops::DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut State<T> {
        &mut self.st
    }
}

impl<T> Drop for Guard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.st.keep_word {
            self.st.keep_word = false;
        } else {
            let h = self.chan.summary(&self.st);
            // Relaxed: a summary read only as a hint; the lock orders
            // everything that matters.
            self.chan.readiness.store(h, Ordering::Relaxed);
            if self.st.wake_pending {
                self.unlock_and_wake();
                return;
            }
        }
        // SAFETY: dropped once, here; `self.st` is not used after.
        unsafe { ManuallyDrop::drop(&mut self.st) };
    }
}

impl<T> Guard<'_, T> {
    /// An unlock with receipts to wake: those told of their consumption
    /// under the lock are woken after it.
    #[cold]
    #[inline(never)]
    fn unlock_and_wake(&mut self) {
        self.st.wake_pending = false;
        let wake = self
            .st
            .with_receipts_if_any(Receipts::take_wakers)
            .unwrap_or_default();
        // SAFETY: dropped once, here (`drop` returns after this call);
        // `self.st` is not used after.
        unsafe { ManuallyDrop::drop(&mut self.st) };
        crate::wake::wake_all(wake);
    }
}

/// Steps of [`crate::loom::spin_wait`] in [`Chan::spin_until_may`]: six
/// doubling spins, then yields.
const SPIN_STEPS: u32 = 10;

pub(crate) struct Chan<T> {
    state: Lock<State<T>>,
    /// See [`readiness`].
    readiness: AtomicUsize,
    /// 0: rendezvous; `usize::MAX`: unbounded.
    cap: usize,
    /// Live `Sender` handles. The last one to go closes the channel.
    pub(crate) senders: AtomicUsize,
    /// Live `Receiver` handles.
    pub(crate) receivers: AtomicUsize,
}

impl<T> Chan<T> {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            state: Lock::new(State {
                buf: VecDeque::new(),
                sendq: WaitQueue::default(),
                recvq: WaitQueue::default(),
                gone: 0,
                keep_word: false,
                front: FRONT_START,
                high: 0,
                beyond_end: 0,
                receipts: None,
                watched: false,
                wake_pending: false,
            }),
            cap,
            readiness: AtomicUsize::new(if cap > 0 { readiness::ROOM } else { 0 }),
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
        }
    }

    /// The readiness word that `st` calls for.
    #[inline(always)]
    fn summary(&self, st: &State<T>) -> usize {
        // Branch-free: this runs at almost every unlock.
        st.gone
            | (usize::from(!st.sendq.is_empty()) * readiness::SENDERS_WAITING)
            | (usize::from(!st.recvq.is_empty()) * readiness::RECEIVERS_WAITING)
            | (usize::from(!st.buf.is_empty()) * readiness::BUFFERED)
            | (usize::from(st.buf.len() < self.cap) * readiness::ROOM)
    }

    pub(crate) fn lock(&self) -> Guard<'_, T> {
        Guard {
            st: ManuallyDrop::new(self.state.lock()),
            chan: self,
        }
    }

    /// Whether an operation whose partners are summarised by `mask` (see
    /// [`readiness`]) may commit now. `false` is a hint, `true` a maybe.
    pub(crate) fn may(&self, mask: usize) -> bool {
        self.readiness.load(Ordering::Relaxed) & mask != 0
    }

    /// Before a blocking call on an OS thread publishes a record: spins
    /// (then yields) briefly, without taking the lock, until the readiness
    /// word shows a bit of `mask`; returns whether it came to show one. A
    /// word that shows one already gives `false` at once: the caller's try
    /// failed for another reason, and its perform is the way on. On a buffered
    /// channel whose partner runs on another core the room or the value
    /// usually comes within the spin, and the call then commits through the
    /// buffered shortcut: no record, and nobody to wake.
    ///
    /// A rendezvous channel never spins here (`false` at once): there each
    /// side waits for the other's record, so two callers spinning at once
    /// would only meet after both spins ran out. Under loom it returns
    /// `false` at once too: the spin reads a hint only, and the path after
    /// it is the one taken without it.
    pub(crate) fn spin_until_may(&self, mask: usize) -> bool {
        if cfg!(loom) || self.cap == 0 || self.may(mask) {
            return false;
        }
        let mut step = 0;
        while step < SPIN_STEPS {
            if self.may(mask) {
                return true;
            }
            crate::loom::spin_wait(&mut step);
        }
        self.may(mask)
    }

    pub(crate) fn capacity(&self) -> Option<usize> {
        (self.cap != usize::MAX).then_some(self.cap)
    }

    /// Values buffered (asynchronous sends waiting beyond capacity are not
    /// counted: they wait, as a blocked sender's value would).
    pub(crate) fn len(&self) -> usize {
        let st = self.lock();
        // Saturating: once the receivers went, `buf` is empty.
        st.buf.len().saturating_sub(st.waiting_beyond(self.cap))
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// An asynchronous send that found no receiver and no room: queues
    /// `value` at the back of the buffer, beyond capacity, and returns its
    /// index, if no blocked sender waits (module docs). `Err(value)` if one
    /// does: the value must wait behind it, in `sendq`.
    pub(crate) fn queue_beyond_locked(&self, st: &mut State<T>, value: T) -> Result<u64, T> {
        if !st.sendq.is_empty() {
            return Err(value);
        }
        let seq = st.front + st.buf.len() as u64;
        st.buf.push_back(value);
        st.beyond_end = seq + 1;
        Ok(seq)
    }

    /// The fast path of a send that meets no waiter: if no receiver waits
    /// (so there is nobody to hand the value to), every receiver is still
    /// there and the buffer has room, moves the value in `mine` to the back
    /// of the buffer and returns `true`. Otherwise touches nothing and
    /// returns `false`: the caller takes the general path
    /// ([`send_locked`](Self::send_locked)). This is what `send_locked`
    /// does in that case, without its seeker and its outcome enum.
    ///
    /// # Safety
    ///
    /// The caller owns `mine` (its perform is unpublished).
    #[inline(always)]
    pub(crate) unsafe fn send_buffered_locked(
        &self,
        st: &mut Guard<'_, T>,
        mine: &Slot<T>,
    ) -> bool {
        if st.gone != 0 || !st.recvq.is_empty() || st.buf.len() >= self.cap {
            return false;
        }
        // SAFETY: ours (above).
        self.push_shortcut(st, unsafe { take(mine) }.expect("sender's value"));
        true
    }

    /// The send shortcut's push, once its conditions hold (no receiver
    /// waits, nobody is gone, room): the readiness word is left as it was
    /// unless the buffer was empty (`BUFFERED` sets) or is now full (`ROOM`
    /// clears).
    #[inline(always)]
    fn push_shortcut(&self, st: &mut Guard<'_, T>, value: T) {
        let len = st.buf.len();
        st.buf.push_back(value);
        // `len < cap` (the caller checked), so `len + 1` cannot overflow.
        st.keep_word = len != 0 && len + 1 < self.cap;
    }

    /// The fast path of a receive: if a value is buffered and no sender
    /// waits for room (so the receive need not refill the buffer from one),
    /// moves the front value into `mine` and returns `true`. Otherwise
    /// touches nothing and returns `false`: the caller takes the general
    /// path ([`recv_locked`](Self::recv_locked), then
    /// [`refill_locked`](Self::refill_locked)).
    ///
    /// # Safety
    ///
    /// The caller owns `mine` (its perform is unpublished).
    #[inline(always)]
    pub(crate) unsafe fn recv_buffered_locked(
        &self,
        st: &mut Guard<'_, T>,
        mine: &Slot<T>,
    ) -> bool {
        match self.pop_shortcut(st) {
            Some(v) => {
                // SAFETY: ours (above).
                unsafe { put(mine, v) };
                true
            }
            None => false,
        }
    }

    /// The receive shortcut: the front value if one is buffered and no
    /// sender waits. The readiness word is left as it was unless the
    /// buffer is now empty (`BUFFERED` clears) or was full (`ROOM` may set).
    #[inline(always)]
    fn pop_shortcut(&self, st: &mut Guard<'_, T>) -> Option<T> {
        if !st.sendq.is_empty() {
            return None;
        }
        let len = st.buf.len();
        // Set first: `pop_front` clears it again if receipts are to be woken.
        st.keep_word = len >= 2 && len < self.cap;
        st.pop_front(self.cap)
    }

    /// [`send_buffered_locked`](Self::send_buffered_locked) with the lock
    /// taken here, for a value the caller holds: `Err(value)` when the
    /// general path must run (also when the readiness word says there is no
    /// room: a stale hint only sends the caller the general way).
    #[inline]
    pub(crate) fn try_send_buffered(&self, value: T) -> Result<(), T> {
        if !self.may(readiness::ROOM) {
            return Err(value);
        }
        let mut st = self.lock();
        if st.gone != 0 || !st.recvq.is_empty() || st.buf.len() >= self.cap {
            return Err(value);
        }
        self.push_shortcut(&mut st, value);
        Ok(())
    }

    /// [`recv_buffered_locked`](Self::recv_buffered_locked) with the lock
    /// taken here: `None` when the general path must run (also when the
    /// readiness word says nothing is buffered).
    #[inline]
    pub(crate) fn try_recv_buffered(&self) -> Option<T> {
        if !self.may(readiness::BUFFERED) {
            return None;
        }
        self.pop_shortcut(&mut self.lock())
    }

    /// Tries to deliver the value in `mine` (the sender's slot).
    ///
    /// # Safety
    ///
    /// The caller owns `mine` and may touch it once `seeker` is claimed (or
    /// it is unpublished).
    #[inline]
    pub(crate) unsafe fn send_locked(
        &self,
        st: &mut State<T>,
        mine: &Slot<T>,
        seeker: Seeker<'_>,
    ) -> Sent {
        if st.rx_gone() {
            return match seeker.claim() {
                Ok(()) => Sent::Disconnected,
                Err(_) => Sent::SelfSynced,
            };
        }
        match st.recvq.find_partner(seeker) {
            Found::Partner(w) => {
                // SAFETY: we claimed (or are unpublished), so `mine` is ours;
                // we won the receiver's record, so its slot is ours until
                // `finish`.
                unsafe { put(w.slot(), take(mine).expect("sender's value")) };
                return Sent::Done(w.finish());
            }
            Found::SelfSynced => return Sent::SelfSynced,
            Found::Nobody => {}
        }
        if st.buf.len() < self.cap {
            if seeker.claim().is_err() {
                return Sent::SelfSynced;
            }
            // SAFETY: claimed or unpublished.
            st.buf
                .push_back(unsafe { take(mine) }.expect("sender's value"));
            return Sent::Done(None);
        }
        Sent::NotReady
    }

    /// Tries to receive a value into `mine` (the receiver's slot).
    ///
    /// # Safety
    ///
    /// As for [`send_locked`](Self::send_locked).
    #[inline]
    pub(crate) unsafe fn recv_locked(
        &self,
        st: &mut State<T>,
        mine: &Slot<T>,
        seeker: Seeker<'_>,
    ) -> Received {
        if !st.buf.is_empty() {
            if seeker.claim().is_err() {
                return Received::SelfSynced;
            }
            let v = st.pop_front(self.cap).expect("non-empty");
            // SAFETY: claimed or unpublished.
            unsafe { put(mine, v) };
            // The caller commits itself, then refills the buffer from a
            // blocked sender (`refill_locked`): never while holding `C`.
            return Received::Buffered;
        }
        match st.sendq.find_partner(seeker) {
            Found::Partner(w) => {
                // SAFETY: claimed or unpublished (`mine`); we won the
                // sender's record, so its slot is ours until `finish`.
                unsafe { put(mine, take(w.slot()).expect("sender's value")) };
                return Received::Done(w.finish());
            }
            Found::SelfSynced => return Received::SelfSynced,
            Found::Nobody => {}
        }
        if st.tx_gone() {
            return match seeker.claim() {
                Ok(()) => Received::Disconnected,
                Err(_) => Received::SelfSynced,
            };
        }
        Received::NotReady
    }

    /// After a receive took a value out of the buffer (and its performer
    /// committed itself, so it holds no claim): moves the first blocked
    /// sender's value into the freed room. This is that sender's commit,
    /// made on its behalf; records of `skip` (the receiver's own perform)
    /// are not matched. Returns the sender's waker.
    pub(crate) fn refill_locked(&self, st: &mut State<T>, skip: Option<&OpState>) -> Option<Waker> {
        if st.buf.len() >= self.cap {
            return None;
        }
        let seeker = Seeker {
            me: skip,
            claim: false,
        };
        match st.sendq.find_partner(seeker) {
            // SAFETY: `complete` gives us the sender's slot.
            Found::Partner(w) => w.complete(|theirs| {
                st.buf
                    .push_back(unsafe { take(theirs) }.expect("sender's value"));
            }),
            Found::Nobody | Found::SelfSynced => None,
        }
    }

    /// Gives back a value whose receiving perform was dropped after the
    /// commit: to a blocked receiver if there is one, else to the front of
    /// the buffer, so the next receiver gets it first.
    pub(crate) fn rescue(&self, value: T) {
        let slot = UnsafeCell::new(Some(value));
        let waker = {
            let mut st = self.lock();
            if st.rx_gone() {
                None // undeliverable: dropped below, outside the lock
            } else if let Found::Partner(w) = st.recvq.find_partner(Seeker::FREE) {
                // SAFETY: `slot` is ours; `complete` gives us the receiver's.
                w.complete(|theirs| unsafe {
                    put(theirs, take(&slot).expect("rescued value"));
                })
            } else {
                // SAFETY: `slot` is a local nobody else sees.
                st.buf
                    .push_front(unsafe { take(&slot) }.expect("rescued value"));
                // The value takes the index before `front`. The mark stays
                // for the values there are (every index consumed stays so),
                // not for those sent later: they are judged by where they
                // are.
                let end = st.front + st.buf.len() as u64 - 1;
                st.high = st.high.max(st.mark(self.cap).min(end));
                st.front -= 1;
                None
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
        drop(slot);
    }

    /// The last sender went: commit every blocked receiver as disconnected.
    pub(crate) fn close_senders(&self) {
        let mut wakers = Vec::new();
        {
            let mut st = self.lock();
            st.gone |= readiness::TX_GONE;
            st.recvq.commit_all(&mut wakers);
        }
        wakers.into_iter().for_each(Waker::wake);
    }

    /// The last receiver went: commit every blocked sender as disconnected
    /// (their values stay in their slots and go back to them), keep the
    /// asynchronous sends waiting beyond capacity for their receipts, tell
    /// the receipts, and drop what is buffered, outside the lock.
    pub(crate) fn close_receivers(&self) {
        let mut wakers = Vec::new();
        let buffered = {
            let mut st = self.lock();
            st.gone |= readiness::RX_GONE;
            st.sendq.commit_all(&mut wakers);
            let waiting = st.waiting_beyond(self.cap);
            let mut buffered = std::mem::take(&mut st.buf);
            let mut unwanted = Vec::new();
            if waiting > 0 {
                let first = st.mark(self.cap);
                let back = buffered.split_off(buffered.len() - waiting);
                unwanted = st.with_receipts(|r| r.keep_returned(first, back));
            }
            // Nothing waits in `buf` any more (it is empty for good).
            st.beyond_end = 0;
            st.with_receipts_if_any(|r| r.commit_all(&mut wakers));
            (buffered, unwanted)
        };
        wakers.into_iter().for_each(Waker::wake);
        drop(buffered);
    }

    pub(crate) fn is_disconnected_for_receivers(&self) -> bool {
        let st = self.lock();
        // Asynchronous sends may wait in `buf` or `sendq` after the senders
        // went.
        st.tx_gone() && st.buf.is_empty() && st.sendq.is_empty()
    }

    pub(crate) fn is_disconnected_for_senders(&self) -> bool {
        self.lock().rx_gone()
    }

    /// Handle counting: Relaxed, like `Arc::clone`: a new handle is made from
    /// an existing one, which keeps the count above zero meanwhile.
    pub(crate) fn add_sender(&self) {
        self.senders.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_receiver(&self) {
        self.receivers.fetch_add(1, Ordering::Relaxed);
    }

    /// AcqRel (as `Arc`'s drop): Release orders this handle's uses before
    /// its decrement; Acquire lets the last decrement, which closes the
    /// channel, see every other handle's.
    pub(crate) fn remove_sender(&self) {
        if self.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.close_senders();
        }
    }

    /// AcqRel: as in `remove_sender`.
    pub(crate) fn remove_receiver(&self) {
        if self.receivers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.close_receivers();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The word after an unlock is the summary of the state, whether the
    /// unlock stored it or (after a shortcut) left it.
    fn assert_word_fresh<T>(chan: &Chan<T>) {
        let st = chan.lock();
        let fresh = chan.summary(&st);
        drop(st);
        assert_eq!(chan.readiness.load(Ordering::Relaxed), fresh);
    }

    #[test]
    fn shortcuts_keep_the_readiness_word_exact() {
        for cap in [1, 2, 3, 5, usize::MAX] {
            let chan = Chan::new(cap);
            let n = cap.min(6);
            // Fill, drain, then interleave, checking after every step.
            for v in 0..n {
                assert_eq!(chan.try_send_buffered(v), Ok(()), "cap {cap}");
                assert_word_fresh(&chan);
            }
            assert_eq!(chan.may(readiness::ROOM), n < cap, "cap {cap}");
            for v in 0..n {
                assert_eq!(chan.try_recv_buffered(), Some(v), "cap {cap}");
                assert_word_fresh(&chan);
            }
            assert!(!chan.may(readiness::BUFFERED), "cap {cap}");
            // Receives one behind the sends where there is room for two.
            let lag = usize::from(cap >= 2);
            for v in 0..2 * n {
                assert_eq!(chan.try_send_buffered(v), Ok(()), "cap {cap}");
                assert_word_fresh(&chan);
                if v >= lag {
                    assert_eq!(chan.try_recv_buffered(), Some(v - lag), "cap {cap}");
                    assert_word_fresh(&chan);
                }
            }
        }
    }

    #[test]
    fn a_rescued_value_beyond_capacity_keeps_the_word_exact() {
        let chan = Chan::new(1);
        assert_eq!(chan.try_send_buffered(1), Ok(()));
        chan.rescue(0); // to the front, beyond capacity
        assert_word_fresh(&chan);
        assert_eq!(chan.try_recv_buffered(), Some(0));
        assert_word_fresh(&chan);
        assert_eq!(chan.try_recv_buffered(), Some(1));
        assert_word_fresh(&chan);
        assert_eq!(chan.try_recv_buffered(), None);
    }
}
