//! Waiter records: what a blocked branch publishes in a resource's queue.
//!
//! A record names the perform's [`OpState`], the branch (`leaf`) it stands for
//! and the branch's payload slot. Records live in queues guarded by the
//! resource's lock; every dereference of their pointers happens under that
//! lock (see `state.rs` for why the pointees outlive it).
//!
//! Queues are FIFOs: records are pushed at the back, matched from the front
//! (FIFO fairness among waiters), and stale records (their opstate already
//! committed or cancelled) are dropped lazily by whoever meets them. The
//! front record is kept inline and the rest in a `VecDeque`: most queues
//! hold one waiter at a time (a rendezvous partner, a parked task), and
//! then no allocation is made (a `VecDeque`'s first push allocates room for
//! four records, 96 bytes) and no ring index is computed.
//!
//! # Plain records
//!
//! A record published by a *plain* wait (a future with a single branch that
//! is in no choice, such as `chan::Recv`; `leaf == PLAIN`) is never stale
//! and never claimed: its owner cannot commit itself elsewhere, and it
//! withdraws by taking the queue's lock and removing the record (if the
//! record is gone, a partner committed it). So whoever holds the lock and
//! finds a plain record may commit it outright: no compare-and-swap on its
//! opstate (one atomic read-modify-write less per message), no `BUSY` —
//! the partner writes the payload, then `SYNCED` (Release), all before it
//! releases the lock. The owner reads its slot and waker only after it saw
//! `SYNCED` (Acquire), or under the lock while its record is still queued.
//!
//! # Committing a record
//!
//! A party holding a queue's lock commits a record of it in one way, for
//! choices and plain records alike: it gets the record *won* — from
//! [`WaitQueue::find_partner`] (no spinning: the seeker may hold its own
//! claim) or from [`Waiter::win`] (for a record it popped itself; spins out
//! an owner's `C`) — and ends the commit with [`Won::complete`], which moves
//! the payload and then stores `SYNCED`. The paths into a commit, owner's
//! included, are tabled at the top of `state.rs`.

use super::state::{Commit, OpState, Seen};
use crate::loom::spin_wait;
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::task::Waker;

/// The `leaf` of a plain record (module docs).
const PLAIN: usize = usize::MAX;

/// A published branch of some perform, with a pointer to its payload slot `S`.
pub(crate) struct Waiter<S> {
    op: NonNull<OpState>,
    leaf: usize,
    slot: NonNull<S>,
}

// SAFETY: a record is only dereferenced under its queue's lock, and the
// pointees (an `OpState`, which is Sync, and a slot cell whose payload type is
// required to be Send by the resources that use it) stay alive until the owner
// removed the record under that lock. Records carry no thread affinity.
unsafe impl<S: Send> Send for Waiter<S> {}
// SAFETY: see above; a shared record only exposes its pointers.
unsafe impl<S: Send> Sync for Waiter<S> {}

impl<S> Waiter<S> {
    /// A record for branch `leaf` of the perform whose opstate is `op`.
    pub(crate) fn new(op: &OpState, leaf: usize, slot: &S) -> Self {
        Self {
            op: NonNull::from(op),
            leaf,
            slot: NonNull::from(slot),
        }
    }

    #[cfg(all(test, not(loom)))]
    fn leaf(&self) -> usize {
        self.leaf
    }

    /// Commits this record with the outcome its slot already holds (a
    /// closing resource, a fired timer); `None` if it was stale. Returns the
    /// owner's waker, to be woken after every lock is released.
    pub(crate) fn commit(self) -> Option<Waker> {
        self.win()?.complete(|_| {})
    }

    /// Wins a record its caller took out of its queue (under the queue's
    /// lock), waiting out an owner's claim: `None` if the record is stale.
    /// The seeker holds no claim of its own here (it may spin). A stale
    /// record is marked unlinked (its owner's withdrawal then skips the
    /// lock), so the caller must still hold the queue's lock.
    pub(crate) fn win(self) -> Option<Won<S>> {
        if self.is_plain() || self.op().commit_spinning(self.leaf) {
            Some(Won(self))
        } else {
            self.unlinked();
            None
        }
    }

    /// Tells the owner of this stale record, just taken out of its queue
    /// under the lock, that it need not look for it (`state.rs`, "Unlinked
    /// records"). The last access to the record's opstate.
    fn unlinked(self) {
        if !self.is_plain() {
            self.op().mark_unlinked(self.leaf);
        }
    }

    /// Whether this record is stale for sure: its opstate left `W` and `C`
    /// for good (`BUSY`, `SYNCED` or `X`; a `BUSY` committer took a record
    /// from another queue, whose lock it holds, never this one). A plain
    /// record is never stale. `false` says nothing: the commit's
    /// compare-and-swap decides.
    fn is_stale(&self) -> bool {
        !self.is_plain() && self.op().has_left_waiting()
    }

    /// Whether this is a plain record (module docs).
    fn is_plain(&self) -> bool {
        self.leaf == PLAIN
    }

    /// The end of a won commit, once the payload is in place: `SYNCED`.
    #[inline]
    fn finish(&self) -> Option<Waker> {
        if self.is_plain() {
            self.op().finish_plain()
        } else {
            self.op().finish_remote(self.leaf)
        }
    }

    /// Moves the record's opstate to `BUSY` (a choice) or nothing at all (a
    /// plain record, which the queue's lock already gives us).
    fn try_commit(&self) -> Commit {
        if self.is_plain() {
            Commit::Won
        } else {
            self.op().try_commit(self.leaf)
        }
    }

    /// The identity of this record, for its owner to withdraw it later.
    pub(crate) fn registration(&self) -> Registration {
        Registration {
            op: self.op,
            leaf: self.leaf,
        }
    }

    /// The record's opstate.
    fn op(&self) -> &OpState {
        // SAFETY: records are read only under their queue's lock, and the
        // owner removes its records under that lock before freeing the
        // opstate (module docs of `state.rs`).
        unsafe { self.op.as_ref() }
    }

    /// The record's payload slot. Only the party that won the commit
    /// (opstate `BUSY(leaf)`, or a plain record taken out under the lock)
    /// may touch the payload inside: see [`Won::complete`].
    fn slot(&self) -> &S {
        // SAFETY: as for `op`: the slot lives in the same pinned perform.
        unsafe { self.slot.as_ref() }
    }

    fn is(&self, reg: Registration) -> bool {
        self.op == reg.op && self.leaf == reg.leaf
    }

    fn belongs_to(&self, op: Option<*const OpState>) -> bool {
        op.is_some_and(|op| std::ptr::eq(self.op.as_ptr(), op))
    }
}

/// The wakers of the waits a resource committed under its lock, woken
/// after it is released: the first kept in place (usually the only one: no
/// allocation, and no iterator over one element, which cost more than the
/// wake itself), any more in a `Vec`.
#[derive(Default)]
pub(crate) struct Woken {
    first: Option<Waker>,
    more: Vec<Waker>,
}

impl Woken {
    /// Adds the waker a commit returned, if any.
    #[inline]
    pub(crate) fn push(&mut self, waker: Option<Waker>) {
        if self.first.is_none() {
            self.first = waker;
        } else {
            self.more.extend(waker);
        }
    }

    /// Wakes them all, first to last (call with no lock held).
    #[inline]
    pub(crate) fn wake_all(self) {
        if let Some(waker) = self.first {
            waker.wake();
        }
        if !self.more.is_empty() {
            self.more.into_iter().for_each(Waker::wake);
        }
    }
}

/// A record whose commit its holder won (`BUSY(leaf)` on a choice's
/// opstate; for a plain record, taking it out of the queue under the lock),
/// removed from its queue: the payload is the holder's to move, and
/// [`complete`](Won::complete) is the one way to end the commit (dropping
/// it instead would leave its owner waiting for ever).
#[must_use = "a won record must be completed, or its owner waits for ever"]
pub(crate) struct Won<S>(Waiter<S>);

impl<S> Won<S> {
    /// The end of every remote commit, in this order: `deliver` moves the
    /// payload through the record's slot (it holds the slot's access right,
    /// `slot.rs`), then the opstate becomes `SYNCED` (Release, pairing with
    /// the owner's Acquire load, so the owner sees the payload). Returns the
    /// owner's waker, to be woken after every lock is released.
    #[inline]
    #[must_use = "the owner must be woken"]
    pub(crate) fn complete(self, deliver: impl FnOnce(&S)) -> Option<Waker> {
        deliver(self.slot());
        self.finish()
    }

    /// `complete` in two halves, for the channel's send and receive (the hot
    /// path, where the closure form costs instructions): the slot, which
    /// the holder may touch until it calls [`finish`](Won::finish)...
    #[inline]
    pub(crate) fn slot(&self) -> &S {
        self.0.slot()
    }

    /// ...and the end of the commit: `SYNCED`, returning the owner's waker.
    #[inline]
    #[must_use = "the owner must be woken"]
    pub(crate) fn finish(self) -> Option<Waker> {
        self.0.finish()
    }
}

/// What a leaf remembers of the record it published, to withdraw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Registration {
    op: NonNull<OpState>,
    leaf: usize,
}

impl Registration {
    /// Whether a party other than the owner already took this record out
    /// of its queue (`state.rs`, "Unlinked records"): then withdrawing it
    /// needs no lock. `false` says nothing.
    ///
    /// # Safety
    ///
    /// Only the owner of the record may call it (its own opstate, alive
    /// while it holds its perform).
    pub(crate) unsafe fn is_unlinked(&self) -> bool {
        // SAFETY: the caller owns the opstate (above).
        unsafe { self.op.as_ref() }.is_unlinked(self.leaf)
    }
}

// SAFETY: a registration is an identity only; it is compared, and read
// through only by its owner (`is_unlinked`).
unsafe impl Send for Registration {}
// SAFETY: as above.
unsafe impl Sync for Registration {}

/// A FIFO of waiter records.
pub(crate) struct WaitQueue<S> {
    records: Records<S>,
}

impl<S> Default for WaitQueue<S> {
    fn default() -> Self {
        Self {
            records: Records::new(),
        }
    }
}

/// The records of a queue, in order: `front`, then `rest`. `rest` is empty
/// while `front` is `None`.
struct Records<S> {
    front: Option<Waiter<S>>,
    rest: VecDeque<Waiter<S>>,
}

impl<S> Records<S> {
    fn new() -> Self {
        Self {
            front: None,
            rest: VecDeque::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.front.is_none()
    }

    fn front(&self) -> Option<&Waiter<S>> {
        self.front.as_ref()
    }

    fn get(&self, i: usize) -> Option<&Waiter<S>> {
        match i {
            0 => self.front.as_ref(),
            _ => self.rest.get(i - 1),
        }
    }

    fn pop_front(&mut self) -> Option<Waiter<S>> {
        let w = self.front.take()?;
        self.front = self.rest.pop_front();
        Some(w)
    }

    fn push_front(&mut self, w: Waiter<S>) {
        if let Some(old) = self.front.replace(w) {
            self.rest.push_front(old);
        }
    }

    fn push_back(&mut self, w: Waiter<S>) {
        if self.front.is_none() {
            self.front = Some(w);
        } else {
            self.rest.push_back(w);
        }
    }

    /// Removes record `i`.
    fn remove(&mut self, i: usize) -> Option<Waiter<S>> {
        match i {
            0 => self.pop_front(),
            _ => self.rest.remove(i - 1),
        }
    }

    /// The position of the last record matching `f`.
    fn rposition(&self, mut f: impl FnMut(&Waiter<S>) -> bool) -> Option<usize> {
        match self.rest.iter().rposition(&mut f) {
            Some(i) => Some(i + 1),
            None => self.front.as_ref().filter(|w| f(w)).map(|_| 0),
        }
    }

    /// Takes every record, in order.
    fn drain(&mut self) -> impl Iterator<Item = Waiter<S>> + '_ {
        self.front.take().into_iter().chain(self.rest.drain(..))
    }
}

/// Who is looking for a partner, and how.
#[derive(Clone, Copy)]
pub(crate) struct Seeker<'a> {
    /// The seeker's own opstate, during the retry of its block phase (other
    /// leaves of its perform may be published); `None` in the optimistic
    /// phase (nothing published yet) or for a party that is not itself
    /// performing (a closing channel). Records of this opstate are never
    /// matched: a choice must not meet itself.
    pub(crate) me: Option<&'a OpState>,
    /// Whether to claim `me` (`W -> C`) around each commit attempt. False for
    /// a commit made on behalf of the channel while `me` already holds `C`
    /// (a receiver refilling the buffer from a blocked sender).
    pub(crate) claim: bool,
}

impl<'a> Seeker<'a> {
    /// A seeker with nothing published (the optimistic phase).
    pub(crate) const FREE: Seeker<'static> = Seeker {
        me: None,
        claim: false,
    };

    /// The retry of a block phase: skip and claim `me`.
    pub(crate) fn retrying(me: &'a OpState) -> Self {
        Self {
            me: Some(me),
            claim: true,
        }
    }

    /// Claims the seeker's own opstate (`W -> C`) before it commits with a
    /// partner. `Err` means some other branch of the seeker already
    /// committed: it must stop.
    pub(crate) fn claim(&self) -> Result<(), Seen> {
        match self.me {
            Some(me) if self.claim => me.claim(),
            _ => Ok(()),
        }
    }

    fn unclaim(&self) {
        if let (Some(me), true) = (self.me, self.claim) {
            me.unclaim();
        }
    }

    fn ptr(&self) -> Option<*const OpState> {
        self.me.map(|m| m as *const OpState)
    }
}

/// What a search for a partner found.
pub(crate) enum Found<S> {
    /// A partner, removed from the queue, whose commit we won (its opstate
    /// is `BUSY(leaf)`, or it is a plain record). If the seeker has `me`, it
    /// now holds `C` on it.
    Partner(Won<S>),
    /// No partner that can commit now.
    Nobody,
    /// The seeker's own opstate left `W`: another of its branches committed.
    SelfSynced,
}

impl<S> WaitQueue<S> {
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Takes the first record, stale or not.
    pub(crate) fn pop_front(&mut self) -> Option<Waiter<S>> {
        self.records.pop_front()
    }

    /// The payload slot of the first record, stale or not, for a resource
    /// whose records carry a kind fixed before publication and never
    /// written afterwards (an `RwLock`'s reader or writer flag): such a
    /// slot may be read by the holder of the queue's lock at any time,
    /// since its owner removes the record under that lock before the slot
    /// goes. Slots that carry a payload must not be read this way.
    pub(crate) fn front_kind(&self) -> Option<&S>
    where
        S: Copy,
    {
        self.records.front().map(Waiter::slot)
    }

    /// Puts a record back at the front (it was taken by `pop_front` and not
    /// committed).
    pub(crate) fn push_front(&mut self, w: Waiter<S>) {
        self.records.push_front(w);
    }

    /// Publishes a record and returns its registration.
    pub(crate) fn publish(&mut self, cx: super::BlockCx<'_>, slot: &S) -> Registration {
        self.push(Waiter::new(cx.state, cx.leaf, slot))
    }

    /// Publishes a plain record (module docs) and returns its
    /// registration.
    pub(crate) fn push_plain(&mut self, op: &OpState, slot: &S) -> Registration {
        self.push(Waiter::new(op, PLAIN, slot))
    }

    fn push(&mut self, w: Waiter<S>) -> Registration {
        let reg = w.registration();
        self.records.push_back(w);
        reg
    }

    /// Whether the record `reg` is still queued.
    pub(crate) fn contains(&self, reg: Registration) -> bool {
        self.records.rposition(|w| w.is(reg)).is_some()
    }

    /// Removes the record `reg`, if still queued (a committer may have
    /// removed it already).
    pub(crate) fn remove(&mut self, reg: Registration) -> Option<Waiter<S>> {
        // Search from the back: a record withdrawn soon after publication,
        // the common case, is near the back of a long queue.
        let pos = self.records.rposition(|w| w.is(reg))?;
        self.records.remove(pos)
    }

    /// Finds the first record that can commit with `seeker`, commits its
    /// opstate (`W -> BUSY`) and removes it. Skips the seeker's own records
    /// (a choice never meets itself) and drops stale ones on the way.
    ///
    /// With `seeker.me`, the seeker's own opstate is claimed (`W -> C`)
    /// before the partner's CAS and stays claimed on `Partner`: the caller
    /// moves the payload, then commits itself.
    #[inline(always)]
    pub(crate) fn find_partner(&mut self, seeker: Seeker<'_>) -> Found<S> {
        // The common cases inline: nobody waits, the first records are
        // stale (a chooser's lost clauses: dropped, see `is_stale`), or the
        // first record is a live partner (a rendezvous with one party
        // waiting).
        if self.records.front().is_some_and(Waiter::is_stale) {
            self.drop_stale_front();
        }
        match self.records.front() {
            None => return Found::Nobody,
            Some(w) if !w.belongs_to(seeker.ptr()) => {
                if seeker.claim().is_err() {
                    return Found::SelfSynced;
                }
                if w.try_commit() == Commit::Won {
                    let w = self.records.pop_front().expect("the front record");
                    return Found::Partner(Won(w));
                }
                // Stale or claimed: the full search deals with it.
                seeker.unclaim();
            }
            Some(_) => {}
        }
        self.find_partner_slow(seeker)
    }

    /// Drops the stale records at the front (out of line: `find_partner`
    /// stays small enough to inline).
    #[inline(never)]
    fn drop_stale_front(&mut self) {
        while self.records.front().is_some_and(Waiter::is_stale) {
            self.records
                .pop_front()
                .expect("the front record")
                .unlinked();
        }
    }

    /// `find_partner`, record by record.
    #[inline(never)]
    fn find_partner_slow(&mut self, seeker: Seeker<'_>) -> Found<S> {
        let mut i = 0;
        let mut step = 0;
        while let Some(w) = self.records.get(i) {
            if w.belongs_to(seeker.ptr()) {
                i += 1;
                continue;
            }
            if w.is_stale() {
                // Dropped without claiming ourselves: a stale record stays
                // stale, so no compare-and-swap can make it a partner.
                self.take(i).unlinked();
                continue;
            }
            if let Err(_seen) = seeker.claim() {
                return Found::SelfSynced;
            }
            match w.try_commit() {
                Commit::Won => return Found::Partner(Won(self.take(i))),
                Commit::Stale => {
                    seeker.unclaim();
                    self.take(i).unlinked();
                }
                Commit::Claimed => {
                    // The partner's owner is committing elsewhere for a few
                    // instructions. Never wait while holding our own claim:
                    // the partner may be trying to commit *us*.
                    seeker.unclaim();
                    spin_wait(&mut step);
                }
            }
        }
        Found::Nobody
    }

    /// Removes record `i`; the front (the common case) without shifting.
    fn take(&mut self, i: usize) -> Waiter<S> {
        self.records.remove(i).expect("record at i")
    }

    /// Commits every committable record with the given outcome left in their
    /// slots (a closing resource), returning the wakers to wake after unlock.
    pub(crate) fn commit_all(&mut self, wakers: &mut Vec<Waker>) {
        // Most queues are empty when their resource closes (a channel
        // whose last handle goes): no drain to set up.
        if self.records.is_empty() {
            return;
        }
        wakers.extend(self.records.drain().filter_map(Waiter::commit));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The inline front plus ring keeps FIFO order through every operation
    /// the queues use, checked against a plain `VecDeque` over a
    /// pseudo-random sequence of them.
    #[test]
    fn records_keep_fifo_order_like_a_vecdeque() {
        let op = OpState::new();
        let slot = ();
        let mut records = Records::<()>::new();
        let mut model: VecDeque<usize> = VecDeque::new();
        let mut next_leaf = 0;
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            match seed % 6 {
                0 | 1 => {
                    records.push_back(Waiter::new(&op, next_leaf, &slot));
                    model.push_back(next_leaf);
                    next_leaf += 1;
                }
                2 => assert_eq!(records.pop_front().map(|w| w.leaf()), model.pop_front()),
                3 => {
                    records.push_front(Waiter::new(&op, next_leaf, &slot));
                    model.push_front(next_leaf);
                    next_leaf += 1;
                }
                4 if !model.is_empty() => {
                    // Remove by identity, as a withdrawal does.
                    let leaf = model[(seed >> 8) as usize % model.len()];
                    let reg = Waiter::new(&op, leaf, &slot).registration();
                    let pos = records.rposition(|w| w.is(reg)).expect("queued");
                    assert_eq!(records.remove(pos).map(|w| w.leaf()), Some(leaf));
                    model.retain(|&l| l != leaf);
                }
                _ => {
                    let i = (seed >> 8) as usize % (model.len() + 1);
                    assert_eq!(records.get(i).map(Waiter::leaf), model.get(i).copied());
                }
            }
            assert_eq!(records.is_empty(), model.is_empty());
            assert_eq!(records.front().map(Waiter::leaf), model.front().copied());
        }
        let rest: Vec<usize> = records.drain().map(|w| w.leaf()).collect();
        assert_eq!(rest, Vec::from(model));
        assert!(records.is_empty());
    }
}
