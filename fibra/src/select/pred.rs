//! The predicate of a [`WaitUntil`](super::WaitUntil): clauses joined by
//! `and` and `or`, kept as a postfix program inline in the `Pred` (no
//! allocation for up to five clauses; a longer one moves to the heap).
//!
//! A program is a sequence of instructions: a clause pushes whether it is
//! done; `And`/`Or` combine the two operands before it. Each operator
//! records the length of its right operand, so the program is evaluated
//! from its last instruction down, with short-circuiting, and without a
//! stack: the right operand's root is the instruction just before the
//! operator, the left operand's root is just before the right operand.

use smallvec::SmallVec;
use std::fmt;
use std::ops::{BitAnd, BitOr};

/// A statement's identity: unique in the process (a counter, not an
/// allocation: a statement is made per wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StmtId(u64);

impl StmtId {
    pub(super) fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        // Relaxed: only uniqueness matters (64 bits never wrap in practice).
        StmtId(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// One instruction of a predicate's program.
#[derive(Clone, Copy, Debug)]
enum Instr {
    /// Clause `index` of statement `stmt` is done.
    Clause { index: usize, stmt: StmtId },
    /// Both operands hold; the right operand is `right` instructions long.
    And { right: usize },
    /// Either operand holds; the right operand is `right` instructions long.
    Or { right: usize },
}

/// Instructions kept inline: `2n - 1` for `n` clauses, so five clauses.
const INLINE: usize = 9;

/// A predicate over the clauses of a [`WaitUntil`](super::WaitUntil):
/// combine [`Clause::done`](super::Clause::done)s with `|` (or) and `&`
/// (and).
///
/// ```
/// use fibra::{IVar, WaitUntil};
///
/// let (a, b) = (IVar::<u8>::new(), IVar::new());
/// b.put(2).unwrap();
/// let mut w = WaitUntil::new();
/// let (ca, cb) = (w.add(a.get_op()), w.add(b.get_op()));
/// let either: fibra::select::Pred = ca.done() | cb.done();
/// assert!(w.run_blocking(either));
/// assert_eq!((ca.take(), cb.take()), (None, Some(2)));
/// ```
#[derive(Clone)]
pub struct Pred {
    /// Never empty: a clause, or two operands and their operator.
    prog: SmallVec<[Instr; INLINE]>,
}

impl Pred {
    /// The predicate "clause `index` of statement `stmt` is done".
    pub(super) fn clause(index: usize, stmt: StmtId) -> Self {
        let mut prog = SmallVec::new();
        prog.push(Instr::Clause { index, stmt });
        Pred { prog }
    }

    /// Whether the predicate holds for statement `stmt`, its clause `i`
    /// being done when `done(i)`; a clause of another statement never is.
    pub(super) fn holds(&self, stmt: StmtId, done: &impl Fn(usize) -> bool) -> bool {
        self.holds_at(self.prog.len() - 1, stmt, done)
    }

    /// The predicate whose root is instruction `at`.
    fn holds_at(&self, at: usize, stmt: StmtId, done: &impl Fn(usize) -> bool) -> bool {
        match self.prog[at] {
            Instr::Clause { index, stmt: s } => s == stmt && done(index),
            Instr::And { right } => {
                self.holds_at(at - 1, stmt, done) && self.holds_at(at - 1 - right, stmt, done)
            }
            Instr::Or { right } => {
                self.holds_at(at - 1, stmt, done) || self.holds_at(at - 1 - right, stmt, done)
            }
        }
    }

    /// `self op rhs`.
    fn join(mut self, rhs: Pred, op: Instr) -> Pred {
        self.prog.extend_from_slice(&rhs.prog);
        self.prog.push(op);
        self
    }

    /// Writes the predicate whose root is instruction `at`.
    fn fmt_at(&self, at: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (right, op) = match self.prog[at] {
            Instr::Clause { index, .. } => return write!(f, "#{index}"),
            Instr::And { right } => (right, " and "),
            Instr::Or { right } => (right, " or "),
        };
        f.write_str("(")?;
        self.fmt_at(at - 1 - right, f)?;
        f.write_str(op)?;
        self.fmt_at(at - 1, f)?;
        f.write_str(")")
    }
}

impl fmt::Debug for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_at(self.prog.len() - 1, f)
    }
}

impl BitOr for Pred {
    type Output = Pred;

    fn bitor(self, rhs: Pred) -> Pred {
        let right = rhs.prog.len();
        self.join(rhs, Instr::Or { right })
    }
}

impl BitAnd for Pred {
    type Output = Pred;

    fn bitand(self, rhs: Pred) -> Pred {
        let right = rhs.prog.len();
        self.join(rhs, Instr::And { right })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every predicate over three clauses built with `&` and `|`, against
    /// the same expression on booleans, for every combination of done
    /// clauses.
    #[test]
    fn programs_evaluate_like_the_expressions_they_come_from() {
        let s = StmtId::new();
        let c = |i| Pred::clause(i, s);
        type Case = (Pred, fn([bool; 3]) -> bool, &'static str);
        let cases: Vec<Case> = vec![
            (c(0) | c(1) | c(2), |d| d[0] || d[1] || d[2], "((#0 or #1) or #2)"),
            (c(0) & c(1) & c(2), |d| d[0] && d[1] && d[2], "((#0 and #1) and #2)"),
            ((c(0) & c(1)) | c(2), |d| (d[0] && d[1]) || d[2], "((#0 and #1) or #2)"),
            ((c(0) | c(1)) & c(2), |d| (d[0] || d[1]) && d[2], "((#0 or #1) and #2)"),
            (c(0) & (c(1) | c(2)), |d| d[0] && (d[1] || d[2]), "(#0 and (#1 or #2))"),
            (c(0) | (c(1) & c(2)), |d| d[0] || (d[1] && d[2]), "(#0 or (#1 and #2))"),
            (c(2), |d| d[2], "#2"),
        ];
        for (pred, expr, shown) in cases {
            assert_eq!(format!("{pred:?}"), shown);
            for bits in 0..8u8 {
                let d = [bits & 1 != 0, bits & 2 != 0, bits & 4 != 0];
                assert_eq!(pred.holds(s, &|i| d[i]), expr(d), "{shown} at {d:?}");
            }
        }
    }

    #[test]
    fn a_long_program_moves_to_the_heap_and_still_evaluates() {
        let s = StmtId::new();
        let pred = (0..12)
            .map(|i| Pred::clause(i, s))
            .reduce(|a, b| a & b)
            .unwrap();
        assert!(pred.prog.spilled());
        assert!(pred.holds(s, &|_| true));
        assert!(!pred.holds(s, &|i| i != 7));
        let right_nested = (0..12)
            .rev()
            .map(|i| Pred::clause(i, s))
            .reduce(|a, b| b | a)
            .unwrap();
        assert!(right_nested.holds(s, &|i| i == 11));
        assert!(!right_nested.holds(s, &|_| false));
    }

    #[test]
    fn a_clause_of_another_statement_is_never_done() {
        let (s, t) = (StmtId::new(), StmtId::new());
        let pred = Pred::clause(0, s) | Pred::clause(0, t);
        assert!(pred.holds(s, &|_| true));
        assert!(pred.holds(t, &|_| true));
        assert!(!(Pred::clause(0, s) & Pred::clause(0, t)).holds(s, &|_| true));
    }
}
