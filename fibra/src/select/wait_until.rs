//! AND/OR waiting (Cforall's `waituntil`).
//!
//! A statement over clauses joined by `and`/`or` runs as rounds: each round
//! is one choice over the clauses not yet acquired (with the whole op
//! protocol: no lock held across clauses, nothing lost), so one of them
//! commits first; its handler (a `wrap` on its op) runs at once; the
//! statement ends as soon as the predicate holds. A round whose first
//! commit comes in its try phase goes on trying, once each, the clauses
//! not tried yet that every completion of the predicate needs (`c` in
//! `(a or b) and c`, every clause of an `and`): they would be acquired by
//! some later round anyway, and this saves those rounds. Clauses still
//! waiting when the statement ends were never committed: they are
//! withdrawn by the round that lost them and simply dropped.
//!
//! The statement runs the op protocol of each round itself (as `Perform`
//! does for one op), over the clause records it keeps: every round
//! re-performs the same ops in place (an op that lost a choice is withdrawn
//! and left as it was before the perform, so it can be performed again),
//! with one opstate, reset between rounds. A statement takes one block for
//! its clauses' records (`clause_cell.rs`: each op, its result slot and the
//! statement's bookkeeping of the clause; more blocks only if they outgrow
//! it; the last block freed on a thread is kept for the next statement
//! there) and nothing else for up to four clauses, of which it keeps a
//! pointer each; its predicate is a mask, or a few sets of clauses, built
//! as it is written (`pred.rs`).
//!
//! # Every clause at once
//!
//! A statement whose every completion needs every clause (`and` only: `a &
//! b & c`) has nothing to choose: each clause will be acquired whatever
//! commits first. It runs no rounds: each clause is performed on its own,
//! all of them at once, as `choose_all`'s parts are — prepared and tried
//! (a clause that commits is acquired at once), then published with an
//! opstate of its own (in its record), so that partners commit the
//! clauses independently and none is withdrawn and published again when
//! another commits. A later poll acquires every clause whose opstate is
//! `SYNCED` (its handler runs then), and the statement ends when the last
//! is acquired. Dropped before that, it ends every clause still published
//! as a dropped perform ends its op: withdrawn if waiting, abandoned
//! (handing back what it took) if committed.
//!
//! # Invariants
//!
//! * `Phase::Blocked` exactly while records of the round may be published
//!   (pointing at `state`, or at the clauses' own opstates in a statement
//!   of every clause at once, and into the clauses' ops, all pinned:
//!   `state` in the pinned `Rounds`, the rest in their records). In rounds,
//!   leaving it always goes through `finish` of the winner and `withdraw`
//!   of every other clause still waiting (or `cancel`, then
//!   `withdraw`/`abandon`, on drop); every clause at once, through
//!   `finish` of each clause (or, on drop, `cancel`, then
//!   `withdraw`/`abandon`, of each clause not acquired).
//! * Every clause at once: while `Phase::Blocked`, every clause not done
//!   is published on its own opstate, and none is published by a round.
//! * `state` is reset to `W` only between rounds, when no record points at
//!   it.
//! * A clause is `done` once its op committed and its result was put: it
//!   takes part in no later round.

use super::clause_cell::{Blocks, CellRef, record};
use super::pred::StmtId;
use crate::op::state::{OpState, Seen};
use crate::op::{BlockCx, Op};
use smallvec::SmallVec;
use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use super::clause_cell::Clause;
pub use super::pred::Pred;

/// Clause records kept inline in the statement.
const INLINE_CLAUSES: usize = 4;

/// One clause, as the statement sees it: its record (the op, and the
/// statement's bookkeeping of the clause: done, its leaves in a round).
type Entry<'a> = CellRef<'a>;

/// Cforall's `waituntil` statement: wait until a predicate over several
/// clauses — ops joined by `and` (`&`) and `or` (`|`), with brackets —
/// holds.
///
/// Add each clause with [`add`](WaitUntil::add) (put its handler on the op
/// with [`Op::wrap`]: it runs in the waiting task as soon as that clause is
/// acquired), then [`run`](WaitUntil::run) the predicate. Clauses are
/// acquired one at a time, through a fair choice over the clauses still
/// waiting (after which the clauses every completion needs are tried
/// too), so no resource's lock is held while waiting for another (where
/// Go's `select` locks every channel). The statement ends as soon as
/// the predicate holds; clauses not acquired by then are withdrawn and
/// dropped, having taken nothing: a send clause made with
/// [`send_op_from`](crate::Sender::send_op_from) leaves its value in the
/// caller's slot (one made with `send_op` drops it, never sent).
///
/// Each round is a separate perform of the clauses still waiting, so a
/// [`with_nack`](crate::with_nack) clause is built again every round and its
/// nack fires in every round that does not acquire it, even if it is
/// acquired later.
///
/// A predicate of `and` only (`a & b & c`: every clause is needed) has
/// nothing to choose, and runs no rounds: every clause is performed once,
/// all of them at once, each committing on its own (as the parts of
/// [`choose_all`](crate::choose_all)), and acquired — its handler run — when
/// the waiting task next looks; clauses committed while it was away are
/// acquired in the order they were added. A `with_nack` clause there is
/// built once, and its nack fires only if the statement is dropped before
/// acquiring it.
///
/// # Examples
///
/// `A or (B and C)`: done when A arrives, or when both B and C have.
///
/// ```
/// use fibra::{IVar, Op, WaitUntil};
///
/// # fibra::run(async {
/// let (a, b, c) = (IVar::<&str>::new(), IVar::new(), IVar::new());
/// b.put("b").unwrap();
/// c.put("c").unwrap();
/// let mut w = WaitUntil::new();
/// let ca = w.add(a.get_op());
/// let cb = w.add(b.get_op().wrap(|v| v.to_uppercase())); // a handler
/// let cc = w.add(c.get_op());
/// w.run(ca.done() | (cb.done() & cc.done())).await;
/// assert_eq!(ca.take(), None);
/// assert_eq!(cb.take().as_deref(), Some("B"));
/// assert_eq!(cc.take(), Some("c"));
/// # });
/// ```
pub struct WaitUntil<'a> {
    clauses: SmallVec<[Entry<'a>; INLINE_CLAUSES]>,
    /// Identity shared with the statement's clauses and predicates, so a
    /// predicate naming another statement's clause is recognised.
    stmt: StmtId,
    /// Bit `i` set when clause `i` (of the first 64) is done.
    done: u64,
    /// Where the clauses' records live; dropped after them (field order).
    blocks: Blocks,
}

impl Default for WaitUntil<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for WaitUntil<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitUntil")
            .field("clauses", &self.clauses.len())
            .finish()
    }
}

impl Drop for WaitUntil<'_> {
    fn drop(&mut self) {
        for c in &self.clauses {
            // SAFETY: we own the records; nothing is published (a blocked
            // `Rounds` ended its round in its own drop, before this one).
            unsafe {
                c.drop_op();
                c.drop_state();
            }
        }
    }
}

impl<'a> WaitUntil<'a> {
    /// A statement with no clauses yet.
    ///
    /// ```
    /// let w = fibra::WaitUntil::new();
    /// drop(w); // clauses are added with `add`, then `run` or `run_blocking`
    /// ```
    pub fn new() -> Self {
        Self {
            clauses: SmallVec::new(),
            stmt: StmtId::new(),
            done: 0,
            blocks: Blocks::new(),
        }
    }

    /// Adds a clause; its result is kept in the returned [`Clause`].
    ///
    /// ```
    /// use fibra::{WaitUntil, always};
    ///
    /// let mut w = WaitUntil::new();
    /// let c = w.add(always("ready"));
    /// assert!(w.run_blocking(c.done()));
    /// assert_eq!(c.take(), Some("ready"));
    /// ```
    #[inline]
    pub fn add<O>(&mut self, op: O) -> Clause<O::Output>
    where
        O: Op + Send + 'a,
        O::Output: Send + 'a,
    {
        let (cell, clause) = record(&mut self.blocks, op, self.clauses.len(), self.stmt);
        self.clauses.push(cell);
        clause
    }

    /// Waits until `pred` holds, acquiring clauses one at a time. Returns
    /// `true` when it holds; `false` if it can no longer hold (it names a
    /// clause of another statement, or — never for ops that can commit —
    /// the clauses ran out).
    ///
    /// Cancel-safe: if the future is dropped, the clause being waited for is
    /// withdrawn; clauses acquired so far keep their results.
    ///
    /// ```
    /// use fibra::{WaitUntil, bounded};
    ///
    /// fibra::run(async {
    ///     let (tx, rx) = bounded::<u32>(1);
    ///     let (tx2, rx2) = bounded::<u32>(1);
    ///     fibra::spawn(async move {
    ///         tx.send(1).await.unwrap();
    ///         tx2.send(2).await.unwrap();
    ///     });
    ///     let mut w = WaitUntil::new();
    ///     let (a, b) = (w.add(rx.recv_op()), w.add(rx2.recv_op()));
    ///     assert!(w.run(a.done() & b.done()).await);
    ///     assert_eq!((a.take(), b.take()), (Some(Ok(1)), Some(Ok(2))));
    /// });
    /// ```
    #[inline]
    pub fn run(self, pred: Pred) -> impl Future<Output = bool> + 'a {
        let n = self.clauses.len();
        // Could it hold once every clause is done? If not, it never will
        // (a clause of another statement is never done here).
        let all = u32::try_from(n)
            .ok()
            .and_then(|n| 1u64.checked_shl(n))
            .map_or(u64::MAX, |bit| bit - 1);
        let can_hold = pred.holds(self.stmt, all, &|i| i < n);
        let must = pred.must(self.stmt);
        // Every completion needs every clause (module docs).
        let every = can_hold && n > 0 && n <= 64 && must == all;
        Rounds {
            w: self,
            pred,
            can_hold,
            must,
            every,
            state: OpState::new(),
            phase: Phase::Between,
            remote: true,
            _pinned: PhantomPinned,
        }
    }

    /// [`run`](WaitUntil::run), parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// use fibra::{IVar, WaitUntil};
    ///
    /// let v = IVar::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| v.put(9).unwrap());
    ///     let mut w = WaitUntil::new();
    ///     let c = w.add(v.get_op());
    ///     assert!(w.run_blocking(c.done()));
    ///     assert_eq!(c.take(), Some(9));
    /// });
    /// ```
    pub fn run_blocking(self, pred: Pred) -> bool {
        crate::block_on(self.run(pred))
    }

    /// Whether the predicate holds now.
    fn holds(&self, pred: &Pred) -> bool {
        holds_now(pred, self.stmt, self.done, &self.clauses)
    }

    /// Clause `i` was acquired.
    fn set_done(&mut self, i: usize) {
        self.clauses[i].set_done();
        self.done |= bit_of(i);
    }

    /// The clauses still waiting.
    fn waiting(&self) -> impl Iterator<Item = &Entry<'a>> {
        self.clauses.iter().filter(|c| !c.done())
    }

    /// Withdraws every clause still waiting but `keep`.
    fn withdraw_all_but(&self, keep: Option<usize>) {
        for (i, c) in self.clauses.iter().enumerate() {
            if !c.done() && Some(i) != keep {
                // SAFETY: we own the records (`ClauseCell`'s contract).
                unsafe { c.withdraw() };
            }
        }
    }

    /// The clause owning leaf `leaf` of a blocked round.
    fn owner_of(&self, leaf: usize) -> usize {
        self.clauses
            .iter()
            .position(|c| {
                !c.done() && (c.first_leaf()..c.first_leaf() + c.leaves_in_round()).contains(&leaf)
            })
            .unwrap_or_else(|| unreachable!("leaf {leaf} outside the round"))
    }
}

/// Where the statement's rounds are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Between rounds: nothing published.
    Between,
    /// A round is blocked: records may be published.
    Blocked,
}

/// How a round started.
enum Started {
    /// A clause committed in the try phase.
    Acquired,
    /// Published; waiting for a commit.
    Blocked,
    /// No clause is left.
    Exhausted,
}

/// Withdraws every clause still waiting if dropped while armed: armed
/// while a round prepares and tries, so that an unwind there fires the
/// nacks of the clauses built. The round's mutations of the statement go
/// through it.
struct WithdrawOnUnwind<'s, 'a> {
    clauses: &'s mut [Entry<'a>],
    armed: bool,
}

impl Drop for WithdrawOnUnwind<'_, '_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for c in self.clauses.iter().filter(|c| !c.done()) {
            // SAFETY: we own the records.
            unsafe { c.withdraw_unwound() };
        }
    }
}

/// `start..len`, then `0..start` (`start < len`, or `len` is 0): a plain
/// range mapped, which compiles to less than a chain of two.
fn rotated(start: usize, len: usize) -> impl Iterator<Item = usize> {
    (0..len).map(move |k| {
        let i = start + k;
        if i >= len { i - len } else { i }
    })
}

/// The bit of clause `i` in a statement's `done` mask (none beyond 64).
fn bit_of(i: usize) -> u64 {
    u32::try_from(i)
        .ok()
        .and_then(|i| 1u64.checked_shl(i))
        .unwrap_or(0)
}

/// Whether `pred` holds for statement `stmt` whose clauses are `clauses`
/// (`done`: the mask of the first 64 done).
fn holds_now(pred: &Pred, stmt: StmtId, done: u64, clauses: &[Entry<'_>]) -> bool {
    pred.holds(stmt, done, &|i| clauses.get(i).is_some_and(|c| c.done()))
}

/// The future of [`WaitUntil::run`]: rounds until the predicate holds.
struct Rounds<'a> {
    w: WaitUntil<'a>,
    pred: Pred,
    /// Whether the predicate holds once every clause is done: if not, the
    /// statement returns `false` at once.
    can_hold: bool,
    /// The clauses (of the first 64) every completion of the predicate
    /// needs.
    must: u64,
    /// Every completion needs every clause: each is performed on its own,
    /// all at once, with no rounds (module docs).
    every: bool,
    /// The opstate of the round in progress (module invariants).
    state: OpState,
    phase: Phase,
    /// Whether the round's opstate holds a waker (`Op::commits_remotely`).
    remote: bool,
    _pinned: PhantomPinned,
}

impl Rounds<'_> {
    /// A new round: prepares every clause still waiting, tries them from a
    /// random one, and publishes them if none commits.
    fn start_round(&mut self, waker: &std::task::Waker) -> Started {
        let (stmt, pred, must) = (self.w.stmt, &self.pred, self.must);
        let WaitUntil { clauses, done, .. } = &mut self.w;
        let clauses: &mut [Entry<'_>] = clauses;
        let len = clauses.len();
        let waiting = clauses.iter().filter(|c| !c.done()).count();
        if waiting == 0 {
            return Started::Exhausted;
        }
        // A fair start: the `k`-th clause still waiting.
        let k = crate::op::rng::below(waiting);
        let start = (clauses.iter().enumerate())
            .filter(|(_, c)| !c.done())
            .nth(k)
            .map_or(0, |(i, _)| i);
        let mut round = WithdrawOnUnwind {
            clauses: &mut *clauses,
            armed: true,
        };
        for c in round.clauses.iter().filter(|c| !c.done()) {
            // SAFETY: we own the records.
            unsafe { c.prepare() };
        }
        // Once a clause commits, the round goes on trying only the clauses
        // every completion needs (`must`): each is tried once, as in a
        // choice, and acquiring it now or in a later round is the same. The
        // others wait for the next round's fair choice.
        let mut acquired = false;
        for i in (start..len).chain(0..start) {
            let c = &mut round.clauses[i];
            if c.done() || (acquired && must & bit_of(i) == 0) {
                continue;
            }
            // SAFETY: we own the records.
            if unsafe { c.try_now() } {
                c.set_done();
                *done |= bit_of(i);
                acquired = true;
                if holds_now(pred, stmt, *done, round.clauses) {
                    break;
                }
            }
        }
        round.armed = false;
        drop(round);
        if acquired {
            // The clauses not acquired may have built guards or nacks:
            // they lost this round.
            for c in clauses.iter().filter(|c| !c.done()) {
                // SAFETY: we own the records.
                unsafe { c.withdraw() };
            }
            return Started::Acquired;
        }
        // Block: number the leaves, then publish from the same start.
        let mut leaf = 0;
        let mut remote = false;
        for c in clauses.iter_mut().filter(|c| !c.done()) {
            // SAFETY: we own the records.
            let leaves = unsafe { c.leaves() };
            c.set_leaves(leaf, leaves);
            leaf += leaves;
            // SAFETY: as above.
            remote |= unsafe { c.commits_remotely() };
        }
        self.remote = remote;
        // No record points at the opstate between rounds (invariants).
        self.state = OpState::new();
        if remote {
            self.state.set_waker_unpublished(waker.clone());
        }
        self.phase = Phase::Blocked;
        for i in (start..len).chain(0..start) {
            let c = &clauses[i];
            if c.done() {
                continue;
            }
            if self.state.load() != Seen::Waiting {
                break; // some clause committed: publish no more
            }
            let cx = BlockCx {
                state: &self.state,
                leaf: c.first_leaf(),
                waker,
                exclusive: !remote,
                install: None,
            };
            // SAFETY: we own the records.
            unsafe { c.block(cx) };
        }
        Started::Blocked
    }

    /// A later poll of a blocked round: clauses that commit themselves look
    /// again.
    fn repoll(&self, waker: &std::task::Waker) {
        for c in self.w.waiting() {
            if self.state.load() != Seen::Waiting {
                return;
            }
            let cx = BlockCx {
                state: &self.state,
                leaf: c.first_leaf(),
                waker,
                exclusive: !self.remote,
                install: None,
            };
            // SAFETY: we own the records.
            unsafe { c.repoll(cx) };
        }
    }

    /// Every clause at once (module docs): prepares and tries every clause
    /// not acquired yet, from a random one as a round would, acquiring
    /// those that commit, then publishes each of the others on its own
    /// opstate.
    fn start_every(&mut self, waker: &std::task::Waker) {
        let WaitUntil { clauses, done, .. } = &mut self.w;
        let len = clauses.len();
        let start = crate::op::rng::below(len);
        let mut tried = WithdrawOnUnwind {
            clauses: &mut clauses[..],
            armed: true,
        };
        for c in tried.clauses.iter().filter(|c| !c.done()) {
            // SAFETY: we own the records.
            unsafe { c.prepare() };
        }
        for i in rotated(start, len) {
            let c = &mut tried.clauses[i];
            // SAFETY: we own the records.
            if !c.done() && unsafe { c.try_now() } {
                c.set_done();
                *done |= bit_of(i);
            }
        }
        tried.armed = false;
        drop(tried);
        self.phase = Phase::Blocked;
        for i in rotated(start, len) {
            let c = &mut clauses[i];
            if c.done() {
                continue;
            }
            // SAFETY: we own the records.
            let (leaves, remote) = unsafe { (c.leaves(), c.commits_remotely()) };
            c.set_leaves(0, leaves);
            let state = c.state();
            // Fresh: nothing of this statement published it before (a
            // clause is published once, and `add` made the opstate).
            if remote {
                state.set_waker_unpublished(waker.clone());
            }
            let cx = BlockCx {
                state,
                leaf: 0,
                waker,
                exclusive: !remote,
                install: None,
            };
            // SAFETY: we own the records.
            unsafe { c.block(cx) };
        }
    }

    /// Every clause at once: a look at each clause still published,
    /// acquiring those whose opstate is `SYNCED`; the others look again
    /// (ops that commit themselves) and take `waker` unless `fresh` (they
    /// were published with it in this poll). Whether every clause is
    /// acquired.
    fn look_every(&mut self, waker: &std::task::Waker, fresh: bool) -> bool {
        let WaitUntil { clauses, done, .. } = &mut self.w;
        let mut all = true;
        for (i, c) in clauses.iter_mut().enumerate() {
            if c.done() {
                continue;
            }
            // SAFETY: we own the records.
            let remote = unsafe { c.commits_remotely() };
            let repoll = || {
                // Just published with this waker: nothing to look at again.
                if fresh {
                    return;
                }
                let cx = BlockCx {
                    state: c.state(),
                    leaf: 0,
                    waker,
                    exclusive: !remote,
                    install: None,
                };
                // SAFETY: we own the records.
                unsafe { c.repoll(cx) };
            };
            match c.state().look(waker, fresh, remote, repoll) {
                Some(leaf) => {
                    c.set_done();
                    *done |= bit_of(i);
                    // SAFETY: we own the records; the clause's opstate
                    // committed `leaf`.
                    unsafe { c.finish(leaf) };
                }
                None => all = false,
            }
        }
        if all {
            self.phase = Phase::Between;
        }
        all
    }

    /// Leaf `leaf` committed: the others are withdrawn and the winner's
    /// result put (its handler runs).
    fn end_round(&mut self, leaf: usize) {
        self.phase = Phase::Between;
        let winner = self.w.owner_of(leaf);
        self.w.withdraw_all_but(Some(winner));
        self.w.set_done(winner);
        let c = &self.w.clauses[winner];
        // SAFETY: we own the records.
        unsafe { c.finish(leaf - c.first_leaf()) };
    }
}

impl Future for Rounds<'_> {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        // SAFETY: nothing is moved out; `state` stays where it is (it is
        // only reset in place between rounds, when nothing points at it).
        let this = unsafe { self.get_unchecked_mut() };
        if this.every {
            return this.poll_every(cx.waker());
        }
        let mut waker_fresh = false;
        loop {
            match this.phase {
                Phase::Between => {
                    if !this.can_hold {
                        return Poll::Ready(false);
                    }
                    if this.w.holds(&this.pred) {
                        return Poll::Ready(true);
                    }
                    if !crate::coop::consume() {
                        // Out of budget on a fibra worker: let the others run.
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    match this.start_round(cx.waker()) {
                        Started::Acquired => continue,
                        Started::Blocked => waker_fresh = true,
                        Started::Exhausted => return Poll::Ready(false),
                    }
                }
                Phase::Blocked => {
                    if this.state.load() == Seen::Waiting {
                        this.repoll(cx.waker());
                    }
                }
            }
            let mut step = 0;
            loop {
                match this.state.load() {
                    Seen::Synced(leaf) => {
                        this.end_round(leaf);
                        break;
                    }
                    // A remote commit is in flight: it took the waker stored
                    // before this poll, so wait the few instructions until it
                    // stores `SYNCED` rather than risk a wake to a stale
                    // waker (as `Perform` does).
                    Seen::Busy(_) => crate::loom::spin_wait(&mut step),
                    Seen::Waiting => {
                        if waker_fresh || !this.remote || this.state.update_waker(cx.waker()) {
                            return Poll::Pending;
                        }
                    }
                    seen @ (Seen::Claimed | Seen::Cancelled) => {
                        unreachable!("a statement saw its own opstate {seen:?} between polls")
                    }
                }
            }
        }
    }
}

impl Rounds<'_> {
    /// A poll of a statement of every clause at once (module docs).
    fn poll_every(&mut self, waker: &std::task::Waker) -> Poll<bool> {
        let fresh = self.phase == Phase::Between;
        if fresh {
            if !crate::coop::consume() {
                // Out of budget on a fibra worker: let the others run.
                waker.wake_by_ref();
                return Poll::Pending;
            }
            self.start_every(waker);
        }
        if self.look_every(waker, fresh) {
            debug_assert!(self.w.holds(&self.pred), "every clause acquired");
            Poll::Ready(true)
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Rounds<'_> {
    fn drop(&mut self) {
        if self.phase != Phase::Blocked {
            return;
        }
        self.phase = Phase::Between;
        if self.every {
            // Each clause not acquired is published on its own opstate
            // (module invariants).
            for c in self.w.clauses.iter().filter(|c| !c.done()) {
                match c.state().cancel() {
                    // SAFETY: we own the records.
                    Ok(()) => unsafe { c.withdraw() },
                    // Committed, but nobody will take the result: hand
                    // back what it took, as a dropped perform does.
                    // SAFETY: as above; `leaf` is the clause's.
                    Err(leaf) => unsafe { c.abandon(leaf) },
                }
            }
            return;
        }
        match self.state.cancel() {
            Ok(()) => self.w.withdraw_all_but(None),
            Err(leaf) => {
                // Committed, but nobody will take the result: the winner
                // hands back what it took, as a dropped perform does.
                let winner = self.w.owner_of(leaf);
                self.w.withdraw_all_but(Some(winner));
                let c = &self.w.clauses[winner];
                // SAFETY: we own the records.
                unsafe { c.abandon(leaf - c.first_leaf()) };
            }
        }
    }
}
