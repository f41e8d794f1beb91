//! What a `select!` clause accepts, checked where the clause is written so
//! that a mistake is reported at that clause, once, with advice.

use crate::op::Op;

/// Turns a clause's expression into its op: implemented for every op. A
/// future that is not an op fails `Op`'s own check, whose message suggests
/// the `_op` form, `after(d)` for `sleep(d)`, or
/// [`from_future`](crate::op::from_future).
///
/// Not public API: the `select` macros call it through [`clause_op`].
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "this `select!` clause's `{Self}` is not an op",
    label = "expected an op here",
    note = "clauses take ops: use the `_op` methods (`recv_op()`, `send_op(v)`, `acquire_op()`, `join_op()`, ...), not the async methods",
    note = "`fibra::time::sleep(d)` is a future: its op is `fibra::time::after(d)`",
    note = "for a future of another library, `fibra::op::from_future(fut)` makes an op (or `fibra::op::FutureCell`, which keeps its output across choices)"
)]
pub trait ClauseOp {
    /// The op.
    type Op: Op;
    /// The op.
    fn into_clause_op(self) -> Self::Op;
}

impl<O: Op> ClauseOp for O {
    type Op = O;

    #[inline(always)]
    fn into_clause_op(self) -> O {
        self
    }
}

/// A clause's op, checked (see [`ClauseOp`]). Not public API.
#[doc(hidden)]
#[inline(always)]
pub fn clause_op<C: ClauseOp>(clause: C) -> C::Op {
    clause.into_clause_op()
}

/// Never implemented: it only carries the message for a `select!` clause
/// whose pattern is refutable whatever the op (`Ok(v)`, `Some(v)`, `None`, a
/// literal).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a `select!` clause's pattern must match every result of its op",
    label = "this pattern can fail to match",
    note = "once a clause's op commits, its result is taken (a message received, a permit acquired, a value sent): a pattern that refused it would discard it, so fibra's clauses take irrefutable patterns only (tokio's `select!` disables the branch instead, losing the value)",
    note = "bind the whole result and match in the body: `r = rx.recv_op() => match r {{ Ok(v) => ..., Err(_) => ... }}`"
)]
pub trait IrrefutablePattern {}

/// Reports a refutable clause pattern (see [`IrrefutablePattern`]). Not
/// public API.
#[doc(hidden)]
pub fn refutable_pattern<T: IrrefutablePattern>(_: T) {}
