//! The predicate of a [`WaitUntil`](super::WaitUntil): clauses joined by
//! `and` and `or`.
//!
//! A predicate is kept in the form it is evaluated in, built as `&` and `|`
//! combine clauses, so a statement never compiles it and nothing big is
//! moved with it:
//!
//! * `and` only (a single clause too): one mask, every clause of which must
//!   be done;
//! * `or` only: one mask, some clause of which must be done;
//! * both: sets of clauses (a disjunctive normal form, a mask per set, up to
//!   four inline), all the clauses of one set must be done.
//!
//! These forms name clauses of one statement with a bit each (the first
//! 64). A predicate naming clauses of several statements, a clause beyond
//! the 64th, or with more than [`MAX_TERMS`] sets is kept as a postfix
//! program on the heap instead: a clause pushes whether it is done;
//! `And`/`Or` combine the two operands before it. Each operator records the
//! length of its right operand, so the program is evaluated from its last
//! instruction down, with short-circuiting, and without a stack: the right
//! operand's root is the instruction just before the operator, the left
//! operand's root is just before the right operand.

use smallvec::SmallVec;
use std::fmt;
use std::ops::{BitAnd, BitOr};

/// A statement's identity: unique in the process (a counter, not an
/// allocation: a statement is made per wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StmtId(u64);

/// Identities a thread takes from the process's counter at a time: it
/// hands them out without touching the shared counter again (no atomic
/// read-modify-write per statement, and no cache line shared by threads
/// making statements).
const IDS_PER_THREAD_RANGE: u64 = 1 << 20;

impl StmtId {
    pub(super) fn new() -> Self {
        use std::cell::Cell;
        use std::sync::atomic::{AtomicU64, Ordering};
        /// The next range's start (ranges never overlap: 64 bits never
        /// wrap in practice).
        static NEXT_RANGE: AtomicU64 = AtomicU64::new(0);
        thread_local! {
            /// This thread's next identity and the end of its range.
            static RANGE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        // Relaxed: only uniqueness matters.
        let take_range = || NEXT_RANGE.fetch_add(IDS_PER_THREAD_RANGE, Ordering::Relaxed);
        RANGE
            .try_with(|range| {
                let (mut next, mut end) = range.get();
                if next == end {
                    next = take_range();
                    end = next + IDS_PER_THREAD_RANGE;
                }
                range.set((next + 1, end));
                StmtId(next)
            })
            // The thread's locals are gone (a statement made while the
            // thread exits): a range of its own.
            .unwrap_or_else(|_| StmtId(take_range()))
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

/// The most sets of clauses a predicate keeps (`a & b` over `m` and `n`
/// sets makes `m * n`): beyond, it becomes a program.
const MAX_TERMS: usize = 16;

/// A predicate's form (module docs).
#[derive(Clone)]
enum Repr {
    /// Clauses of `stmt`: holds when every clause of the mask is done.
    All { stmt: StmtId, mask: u64 },
    /// Clauses of `stmt`: holds when some clause of the mask is done.
    Any { stmt: StmtId, mask: u64 },
    /// Clauses of `stmt`: holds when every clause of one of the sets is
    /// done. At least two sets, at most [`MAX_TERMS`].
    Sets { stmt: StmtId, sets: Terms },
    /// The program: never empty, a clause or two operands and their
    /// operator.
    Prog(Vec<Instr>),
}

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
    repr: Repr,
}

/// The bit of clause `index`, if it has one.
fn bit(index: usize) -> Option<u64> {
    1u64.checked_shl(u32::try_from(index).ok()?)
}

/// The clauses of `mask`, in order.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            i
        })
    })
}

impl Pred {
    /// The predicate "clause `index` of statement `stmt` is done".
    pub(super) fn clause(index: usize, stmt: StmtId) -> Self {
        let repr = match bit(index) {
            Some(mask) => Repr::All { stmt, mask },
            None => Repr::Prog(vec![Instr::Clause { index, stmt }]),
        };
        Pred { repr }
    }

    /// Whether the predicate holds for statement `stmt`, `done` being the
    /// mask of its first 64 clauses done and `done_at(i)` whether its
    /// clause `i` is; a clause of another statement never is.
    #[inline]
    pub(super) fn holds(&self, stmt: StmtId, done: u64, done_at: &impl Fn(usize) -> bool) -> bool {
        match &self.repr {
            Repr::All { stmt: s, mask } => *s == stmt && mask & !done == 0,
            Repr::Any { stmt: s, mask } => *s == stmt && mask & done != 0,
            Repr::Sets { stmt: s, sets } => *s == stmt && sets.iter().any(|&t| t & !done == 0),
            Repr::Prog(prog) => holds_at(prog, prog.len() - 1, stmt, done_at),
        }
    }

    /// The clauses of statement `stmt` (of the first 64) that every way
    /// for the predicate to hold needs.
    pub(super) fn must(&self, stmt: StmtId) -> u64 {
        match &self.repr {
            Repr::All { stmt: s, mask } if *s == stmt => *mask,
            Repr::Any { stmt: s, mask } if *s == stmt && mask.count_ones() == 1 => *mask,
            Repr::Sets { stmt: s, sets } if *s == stmt => sets.iter().fold(u64::MAX, |m, t| m & t),
            _ => 0,
        }
    }

    /// The statement and sets of clauses of a predicate in a mask form.
    fn sets(&self) -> Option<(StmtId, Terms)> {
        match &self.repr {
            Repr::All { stmt, mask } => Some((*stmt, SmallVec::from_elem(*mask, 1))),
            Repr::Any { stmt, mask } => Some((*stmt, bits(*mask).map(|i| 1u64 << i).collect())),
            Repr::Sets { stmt, sets } => Some((*stmt, sets.clone())),
            Repr::Prog(_) => None,
        }
    }

    /// `self | rhs` in a mask form, if there is one.
    fn or_masks(&self, rhs: &Pred) -> Option<Repr> {
        use Repr::{All, Any};
        let single = |m: u64| m.count_ones() == 1;
        match (&self.repr, &rhs.repr) {
            (
                All { stmt: s, mask: l } | Any { stmt: s, mask: l },
                All { stmt: t, mask: r } | Any { stmt: t, mask: r },
            ) if s == t
                && (single(*l) || matches!(self.repr, Any { .. }))
                && (single(*r) || matches!(rhs.repr, Any { .. })) =>
            {
                Some(Any {
                    stmt: *s,
                    mask: l | r,
                })
            }
            _ => {
                let ((s, mut sets), (t, more)) = (self.sets()?, rhs.sets()?);
                if s != t || sets.len() + more.len() > MAX_TERMS {
                    return None;
                }
                sets.extend(more);
                Some(Repr::Sets { stmt: s, sets })
            }
        }
    }

    /// `self & rhs` in a mask form, if there is one.
    fn and_masks(&self, rhs: &Pred) -> Option<Repr> {
        use Repr::{All, Any};
        let single = |m: u64| m.count_ones() == 1;
        match (&self.repr, &rhs.repr) {
            (
                All { stmt: s, mask: l } | Any { stmt: s, mask: l },
                All { stmt: t, mask: r } | Any { stmt: t, mask: r },
            ) if s == t
                && (single(*l) || matches!(self.repr, All { .. }))
                && (single(*r) || matches!(rhs.repr, All { .. })) =>
            {
                Some(All {
                    stmt: *s,
                    mask: l | r,
                })
            }
            _ => {
                let ((s, lhs), (t, rhs)) = (self.sets()?, rhs.sets()?);
                if s != t || lhs.len() * rhs.len() > MAX_TERMS {
                    return None;
                }
                let sets: Terms = lhs
                    .iter()
                    .flat_map(|l| rhs.iter().map(move |r| l | r))
                    .collect();
                Some(match sets.len() {
                    1 => All {
                        stmt: s,
                        mask: sets[0],
                    },
                    _ => Repr::Sets { stmt: s, sets },
                })
            }
        }
    }

    /// The predicate as a program.
    fn into_prog(self) -> Vec<Instr> {
        // Each set's clauses joined by `and`, the sets joined by `op`, all
        // nested to the left.
        let join = |stmt: StmtId, sets: &mut dyn Iterator<Item = u64>, op: fn(usize) -> Instr| {
            let mut prog = Vec::new();
            for (n, mask) in sets.enumerate() {
                let before = prog.len();
                for (k, index) in bits(mask).enumerate() {
                    prog.push(Instr::Clause { index, stmt });
                    if k > 0 {
                        prog.push(Instr::And { right: 1 });
                    }
                }
                if n > 0 {
                    prog.push(op(prog.len() - before));
                }
            }
            prog
        };
        match self.repr {
            Repr::All { stmt, mask } => join(stmt, &mut std::iter::once(mask), |right| {
                Instr::And { right }
            }),
            Repr::Any { stmt, mask } => join(stmt, &mut bits(mask).map(|i| 1u64 << i), |right| {
                Instr::Or { right }
            }),
            Repr::Sets { stmt, sets } => {
                join(stmt, &mut sets.into_iter(), |right| Instr::Or { right })
            }
            Repr::Prog(prog) => prog,
        }
    }

    /// `self op rhs` as a program.
    fn join(self, rhs: Pred, op: fn(usize) -> Instr) -> Pred {
        let mut prog = self.into_prog();
        let rhs = rhs.into_prog();
        let right = rhs.len();
        prog.extend(rhs);
        prog.push(op(right));
        Pred {
            repr: Repr::Prog(prog),
        }
    }
}

/// Whether the program `prog` rooted at instruction `at` holds.
fn holds_at(prog: &[Instr], at: usize, stmt: StmtId, done: &impl Fn(usize) -> bool) -> bool {
    match prog[at] {
        Instr::Clause { index, stmt: s } => s == stmt && done(index),
        Instr::And { right } => {
            holds_at(prog, at - 1, stmt, done) && holds_at(prog, at - 1 - right, stmt, done)
        }
        Instr::Or { right } => {
            holds_at(prog, at - 1, stmt, done) || holds_at(prog, at - 1 - right, stmt, done)
        }
    }
}

/// Writes the program rooted at instruction `at`.
fn fmt_at(prog: &[Instr], at: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (right, op) = match prog[at] {
        Instr::Clause { index, .. } => return write!(f, "#{index}"),
        Instr::And { right } => (right, " and "),
        Instr::Or { right } => (right, " or "),
    };
    f.write_str("(")?;
    fmt_at(prog, at - 1 - right, f)?;
    f.write_str(op)?;
    fmt_at(prog, at - 1, f)?;
    f.write_str(")")
}

impl fmt::Debug for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prog = self.clone().into_prog();
        fmt_at(&prog, prog.len() - 1, f)
    }
}

impl Pred {
    /// The fast path of `|` (`any`) and `&` (not `any`): both sides single
    /// clauses, or masks of the same kind, of one statement, merged into
    /// one mask of that kind.
    #[inline(always)]
    fn merged_masks(&self, rhs: &Pred, any: bool) -> Option<Pred> {
        let (
            Repr::All { stmt: s, mask: l } | Repr::Any { stmt: s, mask: l },
            Repr::All { stmt: t, mask: r } | Repr::Any { stmt: t, mask: r },
        ) = (&self.repr, &rhs.repr)
        else {
            return None;
        };
        let fits =
            |p: &Pred, m: u64| m.is_power_of_two() || matches!(p.repr, Repr::Any { .. }) == any;
        if s != t || !fits(self, *l) || !fits(rhs, *r) {
            return None;
        }
        let (stmt, mask) = (*s, l | r);
        Some(Pred {
            repr: if any {
                Repr::Any { stmt, mask }
            } else {
                Repr::All { stmt, mask }
            },
        })
    }
}

impl BitOr for Pred {
    type Output = Pred;

    #[inline]
    fn bitor(self, rhs: Pred) -> Pred {
        // Clauses, or `or`s of clauses, of one statement: one mask.
        match self.merged_masks(&rhs, true) {
            Some(p) => p,
            None => self.or_slow(rhs),
        }
    }
}

impl Pred {
    /// `self | rhs` beyond the fast path of `bitor`.
    #[inline(never)]
    fn or_slow(self, rhs: Pred) -> Pred {
        match self.or_masks(&rhs) {
            Some(repr) => Pred { repr },
            None => self.join(rhs, |right| Instr::Or { right }),
        }
    }
}

impl BitAnd for Pred {
    type Output = Pred;

    #[inline]
    fn bitand(self, rhs: Pred) -> Pred {
        // Clauses, or `and`s of clauses, of one statement: one mask.
        match self.merged_masks(&rhs, false) {
            Some(p) => p,
            None => self.and_slow(rhs),
        }
    }
}

impl Pred {
    /// `self & rhs` beyond the fast path of `bitand`.
    #[inline(never)]
    fn and_slow(self, rhs: Pred) -> Pred {
        match self.and_masks(&rhs) {
            Some(repr) => Pred { repr },
            None => self.join(rhs, |right| Instr::And { right }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `holds` with the mask of the first 64 clauses and the closure agreeing.
    fn holds(pred: &Pred, s: StmtId, done: &dyn Fn(usize) -> bool) -> bool {
        let mask = (0..64).filter(|&i| done(i)).fold(0u64, |m, i| m | 1 << i);
        pred.holds(s, mask, &|i| done(i))
    }

    /// The program form of `pred`, evaluated.
    fn prog_holds(pred: &Pred, s: StmtId, done: &dyn Fn(usize) -> bool) -> bool {
        let prog = pred.clone().into_prog();
        holds_at(&prog, prog.len() - 1, s, &|i| done(i))
    }

    /// Every predicate over three clauses built with `&` and `|`, against
    /// the same expression on booleans, for every combination of done
    /// clauses; each shown in its normal form.
    #[test]
    // The boolean expressions mirror the predicates as written.
    #[allow(clippy::nonminimal_bool)]
    fn predicates_evaluate_like_the_expressions_they_come_from() {
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
                "((#0 and #2) or (#1 and #2))",
            ),
            (
                c(0) & (c(1) | c(2)),
                |d| d[0] && (d[1] || d[2]),
                "((#0 and #1) or (#0 and #2))",
            ),
            (
                c(0) | (c(1) & c(2)),
                |d| d[0] || (d[1] && d[2]),
                "(#0 or (#1 and #2))",
            ),
            (
                (c(0) | c(1)) & (c(1) | c(2)),
                |d| (d[0] || d[1]) && (d[1] || d[2]),
                "((((#0 and #1) or (#0 and #2)) or #1) or (#1 and #2))",
            ),
            (c(2), |d| d[2], "#2"),
            (c(2) | c(2), |d| d[2], "#2"),
        ];
        for (pred, expr, shown) in cases {
            assert!(!matches!(pred.repr, Repr::Prog(_)), "{shown}");
            assert_eq!(format!("{pred:?}"), shown);
            for bits in 0..8u8 {
                let d = [bits & 1 != 0, bits & 2 != 0, bits & 4 != 0];
                let at = |i: usize| i < 3 && d[i];
                assert_eq!(holds(&pred, s, &at), expr(d), "{shown} at {d:?}");
                assert_eq!(prog_holds(&pred, s, &at), expr(d), "{shown} at {d:?}");
            }
        }
    }

    /// The mask forms agree with their programs, and predicates that have
    /// no mask form (another statement's clause, a clause beyond 64, too
    /// many sets) are programs that evaluate right.
    #[test]
    fn mask_forms_agree_with_programs() {
        let (s, t) = (StmtId::new(), StmtId::new());
        let c = |i| Pred::clause(i, s);
        let preds = [
            (c(0) | c(1)) & (c(2) | c(3)),
            (c(0) & c(1)) | (c(2) & c(3)),
            c(0) | Pred::clause(1, t),
            c(0) & Pred::clause(1, t),
            Pred::clause(1, t) & c(0),
            c(3) | c(1),
            c(4) & c(1),
            (c(0) & c(1)) | (c(70) & c(2)),
        ];
        for pred in preds {
            for done in 0..32u64 {
                let at = |i: usize| i < 5 && done & (1 << i) != 0;
                for stmt in [s, t] {
                    assert_eq!(
                        holds(&pred, stmt, &at),
                        prog_holds(&pred, stmt, &at),
                        "{pred:?} at {done:05b}"
                    );
                }
            }
        }
        let wide = (0..5)
            .map(|i| c(2 * i) | c(2 * i + 1))
            .reduce(|a, b| a & b)
            .unwrap();
        assert!(matches!(wide.repr, Repr::Prog(_)));
        assert!(holds(&wide, s, &|i| i % 2 == 0));
        assert!(!holds(&wide, s, &|i| i != 4 && i != 5));
        assert!(matches!((c(70) & c(1)).repr, Repr::Prog(_)));
        assert!(matches!((c(0) | Pred::clause(1, t)).repr, Repr::Prog(_)));
    }

    #[test]
    fn a_long_program_evaluates() {
        let s = StmtId::new();
        let pred = (60..72)
            .map(|i| Pred::clause(i, s))
            .reduce(|a, b| a & b)
            .unwrap();
        assert!(matches!(pred.repr, Repr::Prog(_)));
        assert!(pred.holds(s, 0, &|_| true));
        assert!(!pred.holds(s, u64::MAX, &|i| i != 70));
        let right_nested = (60..72)
            .rev()
            .map(|i| Pred::clause(i, s))
            .reduce(|a, b| b | a)
            .unwrap();
        assert!(right_nested.holds(s, 0, &|i| i == 71));
        assert!(!right_nested.holds(s, 0, &|_| false));
    }

    #[test]
    fn a_clause_of_another_statement_is_never_done() {
        let (s, t) = (StmtId::new(), StmtId::new());
        let pred = Pred::clause(0, s) | Pred::clause(0, t);
        assert!(holds(&pred, s, &|_| true));
        assert!(holds(&pred, t, &|_| true));
        assert!(!holds(
            &(Pred::clause(0, s) & Pred::clause(0, t)),
            s,
            &|_| true
        ));
        assert!(!holds(&Pred::clause(0, s), t, &|_| true));
        assert!(!holds(
            &(Pred::clause(0, s) | Pred::clause(1, s)),
            t,
            &|_| true
        ));
    }
}
