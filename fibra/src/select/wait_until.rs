//! AND/OR waiting (Cforall's `waituntil`).
//!
//! A statement over clauses joined by `and`/`or` runs as rounds: each round
//! performs one choice over the clauses not yet acquired, so exactly one of
//! them commits (with the whole op protocol: no lock held across clauses,
//! nothing lost); its handler (a `wrap` on its op) runs at once; the
//! statement ends as soon as the predicate holds. Clauses still waiting then
//! were never committed: they are withdrawn by the round that lost them and
//! simply dropped.
//!
//! Every round re-performs the same op values: an op that lost a choice is
//! withdrawn and left as it was before the perform (that is what lets
//! `try_perform` hand an op back), so it can be performed again.

use crate::op::{BoxOp, Branches, Never, Op, choose, never, sealed::Sealed};
use std::fmt;
use std::ops::{BitAnd, BitOr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

/// Ops performed round after round (the clauses of a `WaitUntil`) as the branches of one round's choice: each yields its own
/// index (with its result, if any), and the caller sets it to `None` once
/// it committed. A spent op stands in as [`never`](crate::never), a
/// zero-sized op that commits nothing: no per-round allocation, and the ops
/// are performed in place, so those that lose a round are there for the
/// next.
struct Clauses<'r, 'a, T>(&'r mut [Option<BoxOp<'a, T>>]);

impl<T> Sealed for Clauses<'_, '_, T> {}

impl<T> Branches for Clauses<'_, '_, T> {
    type Output = T;

    fn count(&self) -> usize {
        self.0.len()
    }

    fn branch(&self, i: usize) -> &dyn Op<Output = T> {
        match &self.0[i] {
            Some(op) => op,
            // Zero-sized: leaking it allocates nothing.
            None => Box::leak(Box::new(never::<T>())),
        }
    }

    fn branch_mut(self: Pin<&mut Self>, i: usize) -> Pin<&mut dyn Op<Output = T>> {
        match &mut self.get_mut().0[i] {
            Some(op) => op.as_pin_mut(),
            None => {
                let spent: Pin<&mut Never<T>> = Pin::new(Box::leak(Box::new(never::<T>())));
                spent
            }
        }
    }
}

/// A statement's identity: unique in the process (a counter, not an
/// allocation: a statement is made per wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StmtId(u64);

impl StmtId {
    fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        // Relaxed: only uniqueness matters (64 bits never wrap in practice).
        StmtId(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// A predicate over the clauses of a [`WaitUntil`]: combine
/// [`Clause::done`]s with `|` (or) and `&` (and).
#[derive(Clone)]
pub struct Pred(Node);

#[derive(Clone)]
enum Node {
    /// Clause `index` of the statement whose identity is the second field.
    Clause(usize, StmtId),
    /// Every operand holds (n-ary: `a & b & c` is one node, one allocation).
    And(Vec<Node>),
    /// Some operand holds.
    Or(Vec<Node>),
}

impl Node {
    /// Whether the predicate holds, clause `i` of statement `stmt` being
    /// done when `done(i)`; a clause of another statement (or out of range)
    /// never is.
    fn holds(&self, stmt: StmtId, clauses: usize, done: &impl Fn(usize) -> bool) -> bool {
        match self {
            Node::Clause(i, s) => *s == stmt && *i < clauses && done(*i),
            Node::And(all) => all.iter().all(|n| n.holds(stmt, clauses, done)),
            Node::Or(any) => any.iter().any(|n| n.holds(stmt, clauses, done)),
        }
    }

    /// `self op rhs`, flattening into `self` when it is already an `op` node.
    fn join(self, rhs: Node, and: bool) -> Node {
        match (self, and) {
            (Node::And(mut v), true) | (Node::Or(mut v), false) => {
                v.push(rhs);
                if and { Node::And(v) } else { Node::Or(v) }
            }
            (lhs, _) => {
                let v = vec![lhs, rhs];
                if and { Node::And(v) } else { Node::Or(v) }
            }
        }
    }

    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ns, op) = match self {
            Node::Clause(i, _) => return write!(f, "#{i}"),
            Node::And(ns) => (ns, " and "),
            Node::Or(ns) => (ns, " or "),
        };
        f.write_str("(")?;
        for (k, n) in ns.iter().enumerate() {
            if k > 0 {
                f.write_str(op)?;
            }
            n.fmt(f)?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl BitOr for Pred {
    type Output = Pred;

    fn bitor(self, rhs: Pred) -> Pred {
        Pred(self.0.join(rhs.0, false))
    }
}

impl BitAnd for Pred {
    type Output = Pred;

    fn bitand(self, rhs: Pred) -> Pred {
        Pred(self.0.join(rhs.0, true))
    }
}

/// A clause of a [`WaitUntil`]: names it in predicates and holds its result
/// once it is acquired.
pub struct Clause<T> {
    index: usize,
    /// The statement's identity.
    stmt: StmtId,
    result: Arc<Mutex<Option<T>>>,
}

impl<T> Clause<T> {
    /// The predicate "this clause was acquired".
    pub fn done(&self) -> Pred {
        Pred(Node::Clause(self.index, self.stmt))
    }

    /// Takes the clause's result, if it was acquired (and not taken yet).
    pub fn take(&self) -> Option<T> {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Whether the clause was acquired.
    pub fn is_done(&self) -> bool {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

impl<T> fmt::Debug for Clause<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Clause(#{})", self.index)
    }
}

/// Cforall's `waituntil` statement: wait until a predicate over several
/// clauses — ops joined by `and` (`&`) and `or` (`|`), with brackets —
/// holds.
///
/// Add each clause with [`add`](WaitUntil::add) (put its handler on the op
/// with [`Op::wrap`]: it runs in the waiting task as soon as that clause is
/// acquired), then [`run`](WaitUntil::run) the predicate. Clauses are
/// acquired one at a time, each through a fair choice over the clauses
/// still waiting, so no resource's lock is held while waiting for another
/// (where Go's `select` locks every channel). The statement ends as soon as
/// the predicate holds; clauses not acquired by then are withdrawn and
/// dropped, having taken nothing (a send clause's value is dropped with its
/// op, never sent).
///
/// Each round is a separate perform of the clauses still waiting, so a
/// [`with_nack`](crate::with_nack) clause is built again every round and its
/// nack fires in every round it loses, even if it is acquired later.
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
    /// Each clause's op, yielding its own index (its result goes to its
    /// `Clause`); `None` once it committed.
    ops: Vec<Option<BoxOp<'a, usize>>>,
    /// Identity shared with the statement's clauses and predicates, so a
    /// predicate naming another statement's clause is recognised.
    stmt: StmtId,
}

impl Default for WaitUntil<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for WaitUntil<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitUntil")
            .field("clauses", &self.ops.len())
            .finish()
    }
}

impl<'a> WaitUntil<'a> {
    /// A statement with no clauses yet.
    pub fn new() -> Self {
        Self {
            ops: Vec::new(),
            stmt: StmtId::new(),
        }
    }

    /// Adds a clause; its result is kept in the returned [`Clause`].
    pub fn add<O>(&mut self, op: O) -> Clause<O::Output>
    where
        O: Op + Send + 'a,
        O::Output: Send + 'a,
    {
        let result = Arc::new(Mutex::new(None));
        let slot = result.clone();
        let index = self.ops.len();
        let op = op.wrap(move |out| {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(out);
            index
        });
        self.ops.push(Some(op.boxed()));
        Clause {
            index,
            stmt: self.stmt,
            result,
        }
    }

    /// Waits until `pred` holds, acquiring clauses one at a time. Returns
    /// `true` when it holds; `false` if it can no longer hold (it names a
    /// clause of another statement, or — never for ops that can commit —
    /// the clauses ran out).
    ///
    /// Cancel-safe: if the future is dropped, the clause being waited for is
    /// withdrawn; clauses acquired so far keep their results.
    pub async fn run(mut self, pred: Pred) -> bool {
        let (stmt, n) = (self.stmt, self.ops.len());
        // Could it hold once every clause is done? If not, it never will
        // (a clause of another statement is never done here).
        if !pred.0.holds(stmt, n, &|_| true) {
            return false;
        }
        // A clause is done once its op committed (and was spent). The
        // predicate is monotone, so the loop ends at the latest when every
        // clause is done.
        while !pred.0.holds(stmt, n, &|i| self.ops[i].is_none()) {
            // One round: a fair choice over every clause, those spent
            // standing in as ops that never commit (no allocation).
            let i = choose(Clauses(&mut self.ops)).await;
            self.ops[i] = None;
        }
        true
    }

    /// [`run`](WaitUntil::run), parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    pub fn run_blocking(self, pred: Pred) -> bool {
        crate::block_on(self.run(pred))
    }
}
