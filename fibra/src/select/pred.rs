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

/// Sets of clauses, as bit masks (clause `i` is bit `i`).
type Terms = SmallVec<[u64; 4]>;

/// The most sets of clauses a compiled predicate keeps (`a & b` over `m`
/// and `n` sets makes `m * n`): beyond, it stays a program.
const MAX_TERMS: usize = 16;

/// A predicate compiled for one statement by [`Pred::compile`].
pub(super) enum Compiled {
    /// `and` only: holds when every clause of the mask is done.
    All(u64),
    /// `or` only: holds when some clause of the mask is done.
    Any(u64),
    /// Holds when every clause of one of the sets is done (a disjunctive
    /// normal form): a few instructions per set.
    Terms(Terms),
    /// The program, for predicates with more sets or clauses beyond 64.
    Prog(Pred),
}

impl Compiled {
    /// Whether the predicate holds, `done` being the mask of the first 64
    /// clauses done and `done_at(i)` whether clause `i` is.
    pub(super) fn holds(&self, stmt: StmtId, done: u64, done_at: &impl Fn(usize) -> bool) -> bool {
        match self {
            Compiled::All(mask) => mask & !done == 0,
            Compiled::Any(mask) => mask & done != 0,
            Compiled::Terms(terms) => terms.iter().any(|&t| t & !done == 0),
            Compiled::Prog(pred) => pred.holds(stmt, done_at),
        }
    }
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

    /// The predicate compiled for statement `stmt` with `clauses` clauses.
    pub(super) fn compile(self, stmt: StmtId, clauses: usize) -> Compiled {
        // `and` only or `or` only, over clauses with a bit: one mask.
        let (mut mask, mut ands, mut ors, mut absent) = (0u64, false, false, false);
        for instr in &self.prog {
            match *instr {
                Instr::Clause { index, stmt: s } if s == stmt && index < clauses => {
                    match u32::try_from(index).ok().and_then(|i| 1u64.checked_shl(i)) {
                        Some(bit) => mask |= bit,
                        None => return self.compile_terms(stmt, clauses),
                    }
                }
                Instr::Clause { .. } => absent = true,
                Instr::And { .. } => ands = true,
                Instr::Or { .. } => ors = true,
            }
        }
        match (ands, ors) {
            // A clause that is never done makes an `and` never hold...
            (_, false) if absent => Compiled::Any(0),
            (_, false) => Compiled::All(mask),
            // ...and drops out of an `or`.
            (false, true) => Compiled::Any(mask),
            (true, true) => self.compile_terms(stmt, clauses),
        }
    }

    /// `compile` for a predicate with both `and` and `or`.
    fn compile_terms(self, stmt: StmtId, clauses: usize) -> Compiled {
        match self.terms(self.prog.len() - 1, stmt, clauses) {
            Some(terms) => Compiled::Terms(terms),
            None => Compiled::Prog(self),
        }
    }

    /// The sets of clauses (bit masks) any of which makes the predicate
    /// rooted at `at` hold, if each clause it names has a bit and there are
    /// at most [`MAX_TERMS`] sets. Sets naming another statement's clause,
    /// or a clause beyond this statement's, never hold: they are left out.
    fn terms(&self, at: usize, stmt: StmtId, clauses: usize) -> Option<Terms> {
        match self.prog[at] {
            Instr::Clause { index, stmt: s } => {
                let mut terms = Terms::new();
                if s == stmt && index < clauses {
                    terms.push(1u64.checked_shl(u32::try_from(index).ok()?)?);
                }
                Some(terms)
            }
            Instr::Or { right } => {
                let mut terms = self.terms(at - 1 - right, stmt, clauses)?;
                terms.extend(self.terms(at - 1, stmt, clauses)?);
                (terms.len() <= MAX_TERMS).then_some(terms)
            }
            Instr::And { right } => {
                let lhs = self.terms(at - 1 - right, stmt, clauses)?;
                let rhs = self.terms(at - 1, stmt, clauses)?;
                if lhs.len() * rhs.len() > MAX_TERMS {
                    return None;
                }
                Some(
                    lhs.iter()
                        .flat_map(|l| rhs.iter().map(move |r| l | r))
                        .collect(),
                )
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
            (
                c(0) | c(1) | c(2),
                |d| d[0] || d[1] || d[2],
                "((#0 or #1) or #2)",
            ),
            (
                c(0) & c(1) & c(2),
                |d| d[0] && d[1] && d[2],
                "((#0 and #1) and #2)",
            ),
            (
                (c(0) & c(1)) | c(2),
                |d| (d[0] && d[1]) || d[2],
                "((#0 and #1) or #2)",
            ),
            (
                (c(0) | c(1)) & c(2),
                |d| (d[0] || d[1]) && d[2],
                "((#0 or #1) and #2)",
            ),
            (
                c(0) & (c(1) | c(2)),
                |d| d[0] && (d[1] || d[2]),
                "(#0 and (#1 or #2))",
            ),
            (
                c(0) | (c(1) & c(2)),
                |d| d[0] || (d[1] && d[2]),
                "(#0 or (#1 and #2))",
            ),
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

    /// The compiled form agrees with the program, for every predicate of
    /// the first test's kind and for foreign and out-of-range clauses.
    #[test]
    fn compiled_predicates_agree_with_their_programs() {
        let (s, t) = (StmtId::new(), StmtId::new());
        let c = |i| Pred::clause(i, s);
        let preds = [
            c(0) | c(1) | c(2),
            c(0) & c(1) & c(2),
            (c(0) & c(1)) | c(2),
            (c(0) | c(1)) & c(2),
            (c(0) | c(1)) & (c(2) | c(3)),
            (c(0) & c(1)) | (c(2) & c(3)),
            c(0) | Pred::clause(1, t),
            c(0) & Pred::clause(1, t),
            c(3) | c(1),
        ];
        for pred in preds {
            let compiled = pred.clone().compile(s, 3);
            assert!(!matches!(compiled, Compiled::Prog(_)), "{pred:?}");
            for done in 0..8u64 {
                let at = |i: usize| i < 3 && done & (1 << i) != 0;
                assert_eq!(
                    compiled.holds(s, done, &at),
                    pred.holds(s, &at),
                    "{pred:?} at {done:03b}"
                );
            }
        }
        // Too many sets, or a clause beyond 64: the program.
        let wide = (0..5)
            .map(|i| c(2 * i) | c(2 * i + 1))
            .reduce(|a, b| a & b)
            .unwrap();
        assert!(matches!(wide.compile(s, 10), Compiled::Prog(_)));
        assert!(matches!((c(70) & c(1)).compile(s, 80), Compiled::Prog(_)));
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
