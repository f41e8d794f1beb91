//! AND/OR waiting (Cforall's `waituntil`) and `choose_all`.
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

use crate::op::{BlockCx, BoxOp, Op, choose, sealed::Sealed};
use std::fmt;
use std::ops::{BitAnd, BitOr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

/// Performs an op held elsewhere, by reference, so it survives a perform it
/// loses and can be performed again.
struct ByRef<'r, 'a, T> {
    op: Pin<&'r mut (dyn Op<Output = T> + Send + 'a)>,
}

impl<T> Sealed for ByRef<'_, '_, T> {}

impl<T> Op for ByRef<'_, '_, T> {
    type Output = T;

    fn leaves(&self) -> usize {
        self.op.leaves()
    }

    fn commits_remotely(&self) -> bool {
        self.op.commits_remotely()
    }

    fn prepare(self: Pin<&mut Self>) {
        self.get_mut().op.as_mut().prepare();
    }

    fn try_now(self: Pin<&mut Self>) -> Option<T> {
        self.get_mut().op.as_mut().try_now()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.get_mut().op.as_mut().block(cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.get_mut().op.as_mut().repoll(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> T {
        self.get_mut().op.as_mut().finish(leaf)
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        self.get_mut().op.as_mut().abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.get_mut().op.as_mut().withdraw();
    }
}

/// Performs every op and returns every result, in order (the parasitic
/// threads paper's `chooseAll`; Cforall's `waituntil` with `and`). The ops
/// wait concurrently; each commits on its own (this is not one atomic
/// commit of all of them). If the future is dropped, the ops that had not
/// committed are withdrawn, and the results already received are dropped
/// with it: use [`WaitUntil`] (whose clauses keep their results) when a
/// wait may be cancelled and results must not be lost.
///
/// ```
/// use fibra::{bounded, choose_all};
///
/// # fibra::run(async {
/// let (tx_a, rx_a) = bounded(1);
/// let (tx_b, rx_b) = bounded(1);
/// let producer = fibra::spawn(async move {
///     tx_b.send(2).await.unwrap();
///     tx_a.send(1).await.unwrap();
/// });
/// let got = choose_all(vec![rx_a.recv_op(), rx_b.recv_op()]).await;
/// assert_eq!(got, [Ok(1), Ok(2)]);
/// producer.await.unwrap();
/// # });
/// ```
pub async fn choose_all<O>(ops: impl IntoIterator<Item = O>) -> Vec<O::Output>
where
    O: Op + Send,
{
    let mut pending: Vec<Option<BoxOp<'_, O::Output>>> =
        ops.into_iter().map(|op| Some(op.boxed())).collect();
    let mut results: Vec<Option<O::Output>> = pending.iter().map(|_| None).collect();
    let mut left = pending.len();
    while left > 0 {
        let (i, out) = next_commit(&mut pending).await;
        results[i] = Some(out);
        left -= 1;
    }
    results
        .into_iter()
        .map(|r| r.expect("every op committed"))
        .collect()
}

/// One round: a fair choice over the ops still pending; the winner is
/// removed and its index and result returned.
async fn next_commit<T>(pending: &mut [Option<BoxOp<'_, T>>]) -> (usize, T) {
    let round: Vec<_> = pending
        .iter_mut()
        .enumerate()
        .filter_map(|(i, op)| {
            op.as_mut().map(|op| {
                ByRef {
                    op: op.as_pin_mut(),
                }
                .wrap(move |out| (i, out))
            })
        })
        .collect();
    let (i, out) = choose(round).await;
    // The op committed and produced its result: it is spent.
    pending[i] = None;
    (i, out)
}

/// A predicate over the clauses of a [`WaitUntil`]: combine
/// [`Clause::done`]s with `|` (or) and `&` (and).
#[derive(Clone)]
pub struct Pred(Node);

#[derive(Clone)]
enum Node {
    /// Clause `index` of the statement whose token is `stmt`.
    Clause(usize, Arc<()>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
}

impl Node {
    fn holds(&self, stmt: &Arc<()>, done: &[bool]) -> bool {
        match self {
            Node::Clause(i, s) => Arc::ptr_eq(s, stmt) && done.get(*i).copied().unwrap_or(false),
            Node::And(a, b) => a.holds(stmt, done) && b.holds(stmt, done),
            Node::Or(a, b) => a.holds(stmt, done) || b.holds(stmt, done),
        }
    }

    /// Whether the predicate could still hold if every clause not done yet
    /// were done: if not, waiting is pointless. (A clause of another
    /// statement never holds here.)
    fn satisfiable(&self, stmt: &Arc<()>, done: &[bool], live: &[bool]) -> bool {
        match self {
            Node::Clause(i, s) => {
                Arc::ptr_eq(s, stmt)
                    && (done.get(*i).copied().unwrap_or(false)
                        || live.get(*i).copied().unwrap_or(false))
            }
            Node::And(a, b) => a.satisfiable(stmt, done, live) && b.satisfiable(stmt, done, live),
            Node::Or(a, b) => a.satisfiable(stmt, done, live) || b.satisfiable(stmt, done, live),
        }
    }

    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Clause(i, _) => write!(f, "#{i}"),
            Node::And(a, b) => {
                f.write_str("(")?;
                a.fmt(f)?;
                f.write_str(" and ")?;
                b.fmt(f)?;
                f.write_str(")")
            }
            Node::Or(a, b) => {
                f.write_str("(")?;
                a.fmt(f)?;
                f.write_str(" or ")?;
                b.fmt(f)?;
                f.write_str(")")
            }
        }
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
        Pred(Node::Or(Box::new(self.0), Box::new(rhs.0)))
    }
}

impl BitAnd for Pred {
    type Output = Pred;

    fn bitand(self, rhs: Pred) -> Pred {
        Pred(Node::And(Box::new(self.0), Box::new(rhs.0)))
    }
}

/// A clause of a [`WaitUntil`]: names it in predicates and holds its result
/// once it is acquired.
pub struct Clause<T> {
    index: usize,
    /// The statement's identity.
    stmt: Arc<()>,
    result: Arc<Mutex<Option<T>>>,
}

impl<T> Clause<T> {
    /// The predicate "this clause was acquired".
    pub fn done(&self) -> Pred {
        Pred(Node::Clause(self.index, self.stmt.clone()))
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
    ops: Vec<Option<BoxOp<'a, ()>>>,
    /// Identity shared with the statement's clauses and predicates, so a
    /// predicate naming another statement's clause is recognised.
    stmt: Arc<()>,
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
            stmt: Arc::new(()),
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
        let op = op.wrap(move |out| {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(out);
        });
        self.ops.push(Some(op.boxed()));
        Clause {
            index: self.ops.len() - 1,
            stmt: self.stmt.clone(),
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
        let mut done = vec![false; self.ops.len()];
        loop {
            if pred.0.holds(&self.stmt, &done) {
                return true;
            }
            let live: Vec<bool> = self.ops.iter().map(Option::is_some).collect();
            if !pred.0.satisfiable(&self.stmt, &done, &live) {
                return false;
            }
            let (i, ()) = next_commit(&mut self.ops).await;
            done[i] = true;
        }
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
