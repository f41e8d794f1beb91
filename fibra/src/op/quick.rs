//! `Quick`: the future of a plain wait for one op (a semaphore's acquire, a
//! mutex's lock) that is often ready at once.
//!
//! Its first poll tries the op where it stands, as [`Op::try_perform`]
//! does, without building a [`Perform`] (no opstate made or dropped): a
//! ready op costs its try. Only if the try commits nothing is the op moved
//! into a perform, which goes straight to its block phase (that looks at
//! the op again before it publishes, as after any try).
//!
//! # Invariants
//!
//! * `op` holds the op until the first try; it is taken when that try
//!   commits, or moved into `perform` when it does not. Moving it then is
//!   sound for the reason `try_perform`'s is (`super::try_in_place`): a
//!   failed try publishes nothing and keeps no pointer into the op.
//! * `perform` is built at most once and never moved (it is pinned in the
//!   future); from then on every poll is the perform's, and the future's
//!   cancel-safety is the perform's.

use super::{Op, Perform, try_in_place};
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project! {
    /// See the module docs.
    pub(crate) struct Quick<O: Op> {
        op: Option<O>,
        #[pin]
        perform: Option<Perform<O>>,
    }
}

impl<O: Op> Quick<O> {
    /// The plain wait for `op`.
    #[inline]
    pub(crate) fn new(op: O) -> Self {
        Self {
            op: Some(op),
            perform: None,
        }
    }

    /// Whether the first try found the op not ready (it now waits as a
    /// perform).
    pub(crate) fn waits(&self) -> bool {
        self.perform.is_some()
    }
}

impl<O: Op> Future for Quick<O> {
    type Output = O::Output;

    // The first try is inline, in the caller's poll; the perform is out of
    // line, so that a caller whose op is ready pays no call.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O::Output> {
        let this = self.project();
        if this.perform.is_none() {
            let Some(op) = this.op.as_mut() else {
                panic!("a fibra wait polled after it completed");
            };
            if !crate::coop::consume() {
                // Out of budget on a fibra worker: let the others run.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if let Some(out) = try_in_place(op) {
                *this.op = None;
                return Poll::Ready(out);
            }
        }
        Self::wait(this.op, this.perform, cx)
    }
}

impl<O: Op> Quick<O> {
    /// Polls the perform, built from the op first if the try just failed
    /// (with the budget that try took).
    #[inline(never)]
    fn wait(
        op: &mut Option<O>,
        mut perform: Pin<&mut Option<Perform<O>>>,
        cx: &mut Context<'_>,
    ) -> Poll<O::Output> {
        if let Some(op) = op.take() {
            perform.set(Some(Perform::new_tried(op)));
        }
        match perform.as_pin_mut() {
            Some(perform) => perform.poll(cx),
            None => unreachable!("a waiting op without its perform"),
        }
    }
}
