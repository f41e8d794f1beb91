//! The opstate: one atomic word per perform, shared by every branch of it.
//!
//! # Ways into a commit
//!
//! Every commit moves an opstate out of `W` along one of these paths, and
//! every remote one ends in [`Won::complete`](super::waiter::Won) (payload,
//! then `SYNCED`): no resource sequences it by hand.
//!
//! | path | who | moves | entry | relaxes |
//! |---|---|---|---|---|
//! | remote commit | partner, under the queue's lock | `W -> BUSY -> SYNCED` | `WaitQueue::find_partner`, `Waiter::win`, then `Won::complete` | nothing: the paper's path, plus `BUSY` |
//! | plain record | partner, under the queue's lock | `W -> SYNCED` | the same calls; the record's `leaf` is `PLAIN` | the CAS: a plain record's owner never claims, and withdraws only under that lock (`waiter.rs`, "Plain records") |
//! | owner's retry | owner, in its block phase | `W -> C -> SYNCED` | `Seeker::retrying` / `BlockCx::claim`, then `commit_own` | nothing: the paper's path |
//! | exclusive self-commit | owner of an op that [never commits remotely](super::Op::commits_remotely) (a mailbox receive) | `W -> C -> SYNCED` | `BlockCx::claim` with `exclusive` | the CAS: no record of the opstate is published, so a load and a store suffice |
//! | cancel | owner, dropping its perform | `W -> X` | `OpState::cancel` | nothing |
//!
//! The channel's send and receive (the hot path) call `Won::complete` in its
//! two halves, `Won::slot` then `Won::finish`, because the closure form
//! costs instructions there; the order is the same.
//!
//! # Protocol (Fibers / Parallel CML, with two additions)
//!
//! ```text
//!            owner retry            owner retry
//!      W ────────────────▶ C ───────────────────▶ SYNCED(leaf)
//!      ▲ ◀──────────────── │                          ▲
//!      │   owner un-claim                             │ remote, after the payload
//!      │                                              │ is written (Release)
//!      ├──── remote commit (the only remote move) ─▶ BUSY(leaf)
//!      │
//!      └──── owner cancels (perform dropped) ──────▶ X
//! ```
//!
//! * `W` (waiting): published, nobody has committed. Anyone may try to commit.
//! * `C` (claimed): the owner, during the retry of its block phase, is about to
//!   commit one of its own branches with a partner. Transient: the owner holds
//!   it for one compare-and-swap on the partner and never waits while holding
//!   it, so a remote party that meets `C` spins briefly and looks again.
//! * `BUSY(leaf)`: a remote party won the commit of branch `leaf` and is
//!   writing the payload (the value received, or taking the value sent). Added
//!   to the paper so the owner never reads a half-written slot: it reads slots
//!   only after `SYNCED`, and a dropped perform waits for `SYNCED` before it
//!   frees its slots.
//! * `SYNCED(leaf)`: final; branch `leaf` committed and its payload is in
//!   place. The owner is resumed by whoever stored it.
//! * `X` (cancelled): final; the perform was dropped before any commit. Added
//!   to the paper so a dropped waiter can never be committed to.
//!
//! A remote party only ever moves `W -> BUSY -> SYNCED`. Every other move is
//! the owner's. Whoever commits resumes every other party: the remote stores
//! `SYNCED` and then wakes the owner with the waker it took out while `BUSY`.
//!
//! # Where the memory lives
//!
//! The opstate lives inside the pinned `Perform` future, and waiter records in
//! channel queues point at it. Every dereference of such a pointer by a remote
//! party happens while holding the lock of the queue that holds the record,
//! and the owner removes each of its records (taking that same lock) before
//! the opstate is freed; a remote that moved it to `BUSY` finishes with
//! `SYNCED` before the owner may free it (the owner waits for `SYNCED`).
//!
//! # Unlinked records
//!
//! A record whose opstate left `W` is stale; whoever meets it under its
//! queue's lock takes it out (`WaitQueue::find_partner`). That party then
//! marks the leaf unlinked (Release) as its last access to the opstate.
//! The owner, withdrawing its records after the perform ended (`SYNCED` or
//! `X`), skips the lock of every queue whose record it sees unlinked
//! (Acquire): the record is gone and nobody touches the opstate through it any
//! more. A mark it does not see only costs the lock, as without the mark.
//! Marks are set only on records already out of their queue, so a mark never
//! hides a record still queued.
//!
//! The first [`FLAGGED`] leaves have a flag each (`unlinked`), set with a
//! plain store of `true`: removers of different leaves' records (other
//! queues, perhaps other threads) write different flags, so no mark can
//! overwrite another. A blocking choice over C channels that lost C - 1
//! records to a partner's publication costs that partner C - 1 plain
//! stores instead of C - 1 read-modify-writes on one shared word. The next 64 leaves share a bit
//! word (`unlinked_bits`, `fetch_or`: several removers may set bits at
//! once); leaves beyond have no mark (their withdrawal always locks). In a choice between two parties that alternate
//! (each blocks on every clause while the other commits one), the partner's
//! next try meets and drops the other clauses' stale records before their
//! owner runs again, so the owner's withdrawal takes no lock at all.
//!
//! # The waker
//!
//! `waker` is written by the owner before its first record is published, and
//! afterwards only while the owner holds `C`; it is taken by a remote only
//! while it holds `BUSY`. `C` and `BUSY` exclude each other, so access is
//! exclusive. The owner never touches it again once it sees `SYNCED`.

use crate::loom::{AtomicBool, AtomicUsize, Ordering, UnsafeCell, spin_wait};
use std::task::{RawWaker, RawWakerVTable, Waker};

const TAG_BITS: u32 = 3;
const TAG_MASK: usize = (1 << TAG_BITS) - 1;
const W: usize = 0;
const C: usize = 1;
const X: usize = 2;
const TAG_BUSY: usize = 3;
const TAG_SYNCED: usize = 4;

/// What a load of the opstate saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    Waiting,
    Claimed,
    Cancelled,
    Busy(usize),
    Synced(usize),
}

fn decode(v: usize) -> Seen {
    match v & TAG_MASK {
        W => Seen::Waiting,
        C => Seen::Claimed,
        X => Seen::Cancelled,
        TAG_BUSY => Seen::Busy(v >> TAG_BITS),
        _ => Seen::Synced(v >> TAG_BITS),
    }
}

fn busy(leaf: usize) -> usize {
    (leaf << TAG_BITS) | TAG_BUSY
}

fn synced(leaf: usize) -> usize {
    (leaf << TAG_BITS) | TAG_SYNCED
}

/// Leaves with an unlinked flag of their own (module docs, "Unlinked
/// records"). Under loom, one: the models' two-leaf choices then take both
/// the flag and the bit word.
#[cfg(not(loom))]
pub(crate) const FLAGGED: usize = 16;
#[cfg(loom)]
pub(crate) const FLAGGED: usize = 1;

/// Where the unlinked mark of a leaf lives.
enum Mark {
    /// `unlinked[leaf]`.
    Flag(usize),
    /// This bit of `unlinked_bits`.
    Bit(usize),
    /// Nowhere: the owner's withdrawal locks.
    None,
}

fn mark_of(leaf: usize) -> Mark {
    if leaf < FLAGGED {
        return Mark::Flag(leaf);
    }
    match u32::try_from(leaf - FLAGGED)
        .ok()
        .and_then(|bit| 1usize.checked_shl(bit))
    {
        Some(bit) => Mark::Bit(bit),
        None => Mark::None,
    }
}

/// The result of a remote party's attempt to commit someone else's opstate.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Commit {
    /// Won: the opstate is now `BUSY(leaf)`; the caller (`waiter.rs`) hands
    /// the record out as a `Won`, whose `complete` writes the payload and
    /// then calls [`OpState::finish_remote`].
    Won,
    /// The owner holds `C`; look again in a moment.
    Claimed,
    /// Already committed or cancelled: the record is stale.
    Stale,
}

/// One perform's shared state. See the module docs.
#[derive(Debug)]
pub(crate) struct OpState {
    state: AtomicUsize,
    waker: UnsafeCell<WakerSlot>,
    /// Flag `leaf` (for leaves below [`FLAGGED`]): a party other than the
    /// owner took that leaf's stale record out of its queue, so the owner's
    /// withdrawal needs no lock (see "Unlinked records" in the module docs).
    unlinked: [AtomicBool; FLAGGED],
    /// The same for the next `usize::BITS` leaves, bit `leaf - FLAGGED`.
    unlinked_bits: AtomicUsize,
}

impl OpState {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicUsize::new(W),
            waker: UnsafeCell::new(WakerSlot::NONE),
            unlinked: std::array::from_fn(|_| AtomicBool::new(false)),
            unlinked_bits: AtomicUsize::new(0),
        }
    }

    /// Records that the holder of a queue's lock took the stale record of
    /// `leaf` out of that queue. The last access to this opstate by that
    /// party: Release, pairing with the owner's Acquire in
    /// [`is_unlinked`](Self::is_unlinked), so once the owner sees the mark
    /// the remover is done with the opstate and the owner may skip the lock
    /// (and then free the perform).
    ///
    /// A flag is a plain store: it belongs to `leaf` alone, and every
    /// write stores `true`; the bit word is shared by leaves whose removers
    /// may race, hence `fetch_or`.
    pub(super) fn mark_unlinked(&self, leaf: usize) {
        match mark_of(leaf) {
            Mark::Flag(i) => self.unlinked[i].store(true, Ordering::Release),
            Mark::Bit(bit) => {
                self.unlinked_bits.fetch_or(bit, Ordering::Release);
            }
            Mark::None => {}
        }
    }

    /// Whether a remote party took the record of `leaf` out of its queue
    /// ([`mark_unlinked`](Self::mark_unlinked)). `false` says nothing: the
    /// owner then takes the lock and looks. Acquire: see `mark_unlinked`.
    pub(crate) fn is_unlinked(&self, leaf: usize) -> bool {
        match mark_of(leaf) {
            Mark::Flag(i) => self.unlinked[i].load(Ordering::Acquire),
            Mark::Bit(bit) => self.unlinked_bits.load(Ordering::Acquire) & bit != 0,
            Mark::None => false,
        }
    }

    /// Acquire: after `SYNCED`, the payload written before the remote's
    /// Release store is visible.
    pub(crate) fn load(&self) -> Seen {
        decode(self.state.load(Ordering::Acquire))
    }

    /// Installs the first waker. Only before any record is published.
    pub(crate) fn set_waker_unpublished(&self, waker: Waker) {
        // SAFETY: no record points at this opstate yet, so nobody else can
        // reach the cell; publication (under a queue lock) orders this write
        // before any remote read.
        self.waker.with_mut(|w| unsafe { (*w).set(waker) });
    }

    /// The owner's look at its published perform between polls (the parts
    /// of `choose_all`, the clauses of an `and`-only `WaitUntil`): the leaf
    /// that committed, once `SYNCED` (spinning the few instructions of a
    /// partner's commit in flight); else `None`, after `repoll` (called
    /// while it is waiting: ops that commit themselves look again) and,
    /// unless `holds_waker` or the perform is not `remote` (its partners
    /// wake nothing), handing it `waker`.
    pub(crate) fn look(
        &self,
        waker: &Waker,
        holds_waker: bool,
        remote: bool,
        mut repoll: impl FnMut(),
    ) -> Option<usize> {
        let mut step = 0;
        loop {
            match self.load() {
                Seen::Synced(leaf) => return Some(leaf),
                // A partner commits it now: it woke, or will wake, the
                // waker it took.
                Seen::Busy(_) => crate::loom::spin_wait(&mut step),
                Seen::Waiting => {
                    repoll();
                    if self.load() != Seen::Waiting {
                        continue;
                    }
                    if holds_waker || !remote || self.update_waker(waker) {
                        return None;
                    }
                    // It moved while we looked: look again.
                }
                seen @ (Seen::Claimed | Seen::Cancelled) => {
                    unreachable!("an owner saw its own opstate {seen:?} between polls")
                }
            }
        }
    }

    /// Replaces the waker of a published, still-waiting perform. Returns
    /// `false` if the opstate left `W` (a commit is in flight or done).
    pub(crate) fn update_waker(&self, waker: &Waker) -> bool {
        if self.claim().is_err() {
            return false;
        }
        // SAFETY: we hold `C`, which excludes `BUSY`, the only other state in
        // which the waker is touched.
        self.waker
            .with_mut(|w| unsafe { (*w).set_unless_same(waker) });
        self.unclaim();
        true
    }

    /// Whether the opstate left `W` and `C` for good (`BUSY`, `SYNCED`,
    /// `X`): then none of its records can commit any more. Relaxed: those
    /// states never go back to `W`, so any such value read is final; a
    /// record's reader holds its queue's lock, which keeps the opstate
    /// alive.
    pub(super) fn has_left_waiting(&self) -> bool {
        !matches!(self.state.load(Ordering::Relaxed), W | C)
    }

    /// Owner: `W -> C`. On failure returns what it saw (`BUSY`/`SYNCED`).
    /// AcqRel: on success our later writes (payload) happen after whatever
    /// the last `unclaim` published; Acquire on failure so a `SYNCED` payload
    /// is visible.
    pub(crate) fn claim(&self) -> Result<(), Seen> {
        self.state
            .compare_exchange(W, C, Ordering::AcqRel, Ordering::Acquire)
            .map(drop)
            .map_err(decode)
    }

    /// Owner: `W -> C` on an opstate no remote party can reach (no record
    /// of it is published anywhere): a load and a store suffice.
    pub(crate) fn claim_exclusive(&self) -> Result<(), Seen> {
        // Relaxed: only this thread reads or writes the word.
        match self.state.load(Ordering::Relaxed) {
            W => {
                self.state.store(C, Ordering::Relaxed);
                Ok(())
            }
            v => Err(decode(v)),
        }
    }

    /// Owner: `C -> W`. Release pairs with a remote's Acquire CAS so the
    /// waker written under `C` is visible to the remote that then wins.
    pub(crate) fn unclaim(&self) {
        self.state.store(W, Ordering::Release);
    }

    /// Owner: `C -> SYNCED(leaf)`, after it wrote its own payload. Release
    /// pairs with the Acquire `load` of the poll that finishes the perform,
    /// which may run on another thread (the task's hand-over between
    /// threads orders it too).
    pub(crate) fn commit_own(&self, leaf: usize) {
        debug_assert_eq!(self.load(), Seen::Claimed);
        self.state.store(synced(leaf), Ordering::Release);
    }

    /// Owner, after it saw `SYNCED`: takes the waker out if the opstate
    /// still holds it, which it does only if the owner committed it itself
    /// (a remote takes the waker while `BUSY`, before it stores `SYNCED`).
    pub(crate) fn take_waker_synced(&self) -> Option<Waker> {
        debug_assert!(matches!(self.load(), Seen::Synced(_)));
        // SAFETY: `SYNCED` is final and every remote finished with the
        // waker before storing it (`finish_remote`, `finish_plain`; our
        // Acquire `load` saw that store): nobody else touches the cell.
        self.waker.with_mut(|w| unsafe { (*w).take() })
    }

    /// Remote: try `W -> BUSY(leaf)`. AcqRel on success: Acquire to see the
    /// owner's waker and payload slot (published via `unclaim`/the queue lock),
    /// Release is harmless. Acquire on failure is not needed: we only decide.
    pub(super) fn try_commit(&self, leaf: usize) -> Commit {
        match self
            .state
            .compare_exchange(W, busy(leaf), Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => Commit::Won,
            Err(C) => Commit::Claimed,
            Err(_) => Commit::Stale,
        }
    }

    /// Remote: `BUSY(leaf) -> SYNCED(leaf)` after the payload is in place;
    /// returns the owner's waker, to be woken after every lock is released.
    /// Release pairs with the owner's Acquire `load`.
    ///
    /// After this returns, the remote must not touch the opstate again: the
    /// owner may free it at once.
    #[must_use = "the owner must be woken"]
    pub(super) fn finish_remote(&self, leaf: usize) -> Option<Waker> {
        debug_assert_eq!(self.load(), Seen::Busy(leaf));
        // SAFETY: we hold `BUSY`, which excludes the owner's `C`, the only
        // other state in which the waker is touched.
        let waker = self.waker.with_mut(|w| unsafe { (*w).take() });
        self.state.store(synced(leaf), Ordering::Release);
        waker
    }

    /// Remote, committing the record of a *plain* wait (a single-branch
    /// future such as `chan::Recv`, which nobody but the holder of its
    /// resource's lock can commit or withdraw): `W -> SYNCED(0)` with no
    /// compare-and-swap, after the payload is in place. Returns the owner's
    /// waker. The caller holds the lock of the queue the record was in, and
    /// took the record out of it: that lock is what excludes the owner (see
    /// `waiter.rs`, "Plain records"). Release pairs with the owner's
    /// Acquire `load`.
    #[must_use = "the owner must be woken"]
    pub(super) fn finish_plain(&self) -> Option<Waker> {
        debug_assert_eq!(self.load(), Seen::Waiting);
        // SAFETY: the owner touches the waker of a published plain wait
        // only under the queue's lock, which we hold.
        let waker = self.waker.with_mut(|w| unsafe { (*w).take() });
        self.state.store(synced(0), Ordering::Release);
        waker
    }

    /// Owner of a plain wait whose record is still queued: replaces the
    /// waker.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the queue that holds the record, and
    /// the record is still in it (so nobody committed it).
    pub(crate) unsafe fn replace_waker_plain(&self, waker: &Waker) {
        // SAFETY: the caller's contract: remote parties touch the waker of
        // a plain record only under that lock, after taking the record out.
        self.waker
            .with_mut(|w| unsafe { (*w).set_unless_same(waker) });
    }

    /// Owner, when its perform is dropped: `W -> X`, or waits out a commit in
    /// flight and reports the branch that committed. Acquire (both
    /// outcomes): on `SYNCED`, pairs with the remote's Release store, so
    /// `abandon` sees the payload. The Release half of the success orders
    /// nothing anyone reads: a remote that then fails its CAS only learns
    /// the record is stale.
    pub(crate) fn cancel(&self) -> Result<(), usize> {
        let mut step = 0;
        loop {
            match self
                .state
                .compare_exchange(W, X, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(()),
                Err(v) => match decode(v) {
                    Seen::Synced(leaf) => return Err(leaf),
                    Seen::Busy(_) => spin_wait(&mut step),
                    other => unreachable!("owner cancelling from {other:?}"),
                },
            }
        }
    }

    /// Remote, spinning while the owner holds `C`, then trying again.
    /// Returns `true` if it won (`BUSY(leaf)`), `false` if the record is stale.
    pub(super) fn commit_spinning(&self, leaf: usize) -> bool {
        let mut step = 0;
        loop {
            match self.try_commit(leaf) {
                Commit::Won => return true,
                Commit::Stale => return false,
                Commit::Claimed => spin_wait(&mut step),
            }
        }
    }
}

/// The owner's waker, kept as its raw parts: "none" is two null words, so
/// a fresh opstate is constants only. An `Option<Waker>`'s `None` leaves
/// the data word undefined, and LLVM builds such an opstate in a stack
/// temporary and copies it into the perform with an overlapping 16-byte
/// load that the store before it cannot forward: a stall at every perform
/// (`docs/bench/LOG.md`, 2026-11-24, `select-both`).
struct WakerSlot {
    data: *const (),
    /// Null: no waker.
    vtable: *const RawWakerVTable,
}

impl WakerSlot {
    const NONE: Self = Self {
        data: std::ptr::null(),
        vtable: std::ptr::null(),
    };

    /// Stores `waker`, dropping the one held before.
    fn set(&mut self, waker: Waker) {
        drop(self.take());
        let waker = std::mem::ManuallyDrop::new(waker);
        self.data = waker.data();
        self.vtable = waker.vtable();
    }

    /// Stores a clone of `waker` unless the one held would wake the same
    /// task (`Waker::will_wake`: same data and vtable).
    fn set_unless_same(&mut self, waker: &Waker) {
        if !(std::ptr::eq(self.data, waker.data()) && std::ptr::eq(self.vtable, waker.vtable())) {
            self.set(waker.clone());
        }
    }

    /// Takes the waker out, leaving none.
    fn take(&mut self) -> Option<Waker> {
        if self.vtable.is_null() {
            return None;
        }
        // Not dropped: its parts become the returned `Waker`.
        let parts = std::mem::ManuallyDrop::new(std::mem::replace(self, Self::NONE));
        // SAFETY: the parts came from a `Waker` that `set` took ownership
        // of (and did not drop), and they are taken out once; the vtable
        // pointer came from a `&'static RawWakerVTable`.
        Some(unsafe { Waker::from_raw(RawWaker::new(parts.data, &*parts.vtable)) })
    }
}

impl std::fmt::Debug for WakerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WakerSlot")
            .field("set", &!self.vtable.is_null())
            .finish()
    }
}

impl Drop for WakerSlot {
    fn drop(&mut self) {
        drop(self.take());
    }
}

// SAFETY: the atomic is Sync; the waker cell is accessed only under the
// exclusive states described in the module docs, and `Waker` is Send + Sync.
unsafe impl Sync for OpState {}
// SAFETY: as above; nothing in it is tied to a thread.
unsafe impl Send for OpState {}
