//! `When`: a clause disabled by a condition (Cforall's `when`, the `if`
//! guard of `select!`).

use crate::op::{BlockCx, Op, sealed::Sealed};
use std::pin::Pin;

pin_project_lite::pin_project! {
    /// An op that is `op` when enabled and [`never`](crate::never) when
    /// disabled: made by [`when`]. A disabled clause is not built at all by
    /// `select!` (its op expression is not evaluated).
    ///
    /// ```
    /// use fibra::{Op, always, choose, select::when};
    ///
    /// let ready = false;
    /// let got = choose((when(ready, always("guarded")), always("other"))).perform();
    /// assert_eq!(got, "other"); // a disabled clause never commits
    /// ```
    #[must_use = "an op does nothing unless performed"]
    pub struct When<O> {
        #[pin]
        op: Option<O>,
    }
}

/// Enables `op` only if `enabled` (Cforall's `when (cond) waituntil(...)`):
/// a disabled op never commits, so a choice behaves as if the branch were
/// absent.
///
/// ```
/// use fibra::{Op, always, choose};
/// use fibra::select::when;
///
/// let busy = true;
/// let got = choose((when(!busy, always("work")), when(busy, always("wait")))).perform();
/// assert_eq!(got, "wait");
/// ```
pub fn when<O: Op>(enabled: bool, op: O) -> When<O> {
    When {
        op: enabled.then_some(op),
    }
}

impl<O: Op> When<O> {
    /// A clause from an op built only if enabled (what `select!` uses).
    #[doc(hidden)]
    pub fn new(op: Option<O>) -> Self {
        When { op }
    }

    /// Whether the clause is enabled.
    ///
    /// ```
    /// use fibra::{always, select::when};
    ///
    /// assert!(when(true, always(1)).is_enabled());
    /// assert!(!when(false, always(1)).is_enabled());
    /// ```
    pub fn is_enabled(&self) -> bool {
        self.op.is_some()
    }
}

impl<O> Sealed for When<O> {}

impl<O: Op> Op for When<O> {
    type Output = O::Output;

    fn leaves(&self) -> usize {
        self.op.as_ref().map_or(1, Op::leaves)
    }

    fn commits_remotely(&self) -> bool {
        self.op.as_ref().is_none_or(Op::commits_remotely)
    }

    fn prepare(self: Pin<&mut Self>) {
        if let Some(op) = self.project().op.as_pin_mut() {
            op.prepare();
        }
    }

    fn try_now(self: Pin<&mut Self>) -> Option<O::Output> {
        self.project().op.as_pin_mut()?.try_now()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(op) = self.project().op.as_pin_mut() {
            op.block(cx);
        }
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(op) = self.project().op.as_pin_mut() {
            op.repoll(cx);
        }
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> O::Output {
        self.project()
            .op
            .as_pin_mut()
            .expect("a disabled clause never commits")
            .finish(leaf)
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        if let Some(op) = self.project().op.as_pin_mut() {
            op.abandon(leaf);
        }
    }

    fn withdraw(self: Pin<&mut Self>) {
        if let Some(op) = self.project().op.as_pin_mut() {
            op.withdraw();
        }
    }
}

crate::op::op_into_future! {
    impl[O] When<O>;
}
