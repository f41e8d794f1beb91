//! Where a task's output waits for its `JoinHandle`, and what the handle
//! needs of the task (`Joinable`).

use super::harness::Task;
use crate::op::BlockCx;
use crate::op::waiter::{Registration, WaitQueue};
use crate::rt::JoinError;
use std::future::Future;
use std::task::{Context, Poll, Waker};

/// Where the output waits for the handle.
pub(super) enum Output<T> {
    /// Not finished yet, and the handle is still there.
    Pending,
    /// Finished; the handle has not taken it yet.
    Ready(Result<T, JoinError>),
    /// The handle took the output, or was dropped: a later completion
    /// drops its output at once. (One enum rather than an `Option` and a
    /// flag: the flag's padding made every task 8 bytes larger.)
    HandleGone,
}

impl<T> Output<T> {
    /// Takes a ready output; the handle is gone afterwards.
    fn take(&mut self) -> Option<Result<T, JoinError>> {
        match std::mem::replace(self, Output::HandleGone) {
            Output::Ready(out) => Some(out),
            other => {
                *self = other;
                None
            }
        }
    }
}

pub(super) struct JoinState<T> {
    pub(super) output: Output<T>,
    pub(super) waker: Option<Waker>,
    /// `join_op` performs waiting; boxed on first use (rare next to a
    /// direct `.await`), which keeps every task 24 bytes smaller.
    pub(super) waiters: Option<Box<WaitQueue<()>>>,
}

/// What a `JoinHandle` needs of its task, with the future's type erased.
pub(crate) trait Joinable<T>: Send + Sync {
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>>;
    /// The output if complete (taken).
    fn try_join(&self) -> Option<Result<T, JoinError>>;
    /// Publishes a join waiter; `None` if already complete (then the perform
    /// committed itself).
    fn publish_join(&self, cx: BlockCx<'_>) -> Option<Registration>;
    fn withdraw_join(&self, reg: Registration);
    fn is_finished(&self) -> bool;
    fn detach(&self);
}

impl<F> Joinable<F::Output> for Task<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<F::Output, JoinError>> {
        let mut j = self.join.lock();
        if let Some(out) = j.output.take() {
            return Poll::Ready(out);
        }
        // Taken by a `join_op` of this handle: it would never come.
        assert!(
            !matches!(j.output, Output::HandleGone),
            "`JoinHandle` awaited after a `join_op` took the task's output (join a task once)"
        );
        match &mut j.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn try_join(&self) -> Option<Result<F::Output, JoinError>> {
        self.join.lock().output.take()
    }

    fn publish_join(&self, cx: BlockCx<'_>) -> Option<Registration> {
        let mut j = self.join.lock();
        // Taken by another join of this handle: it would never come.
        assert!(
            !matches!(j.output, Output::HandleGone),
            "`join_op` performed after another join took the task's output (join a task once)"
        );
        if matches!(j.output, Output::Ready(_)) {
            if cx.state.claim().is_ok() {
                cx.state.commit_own(cx.leaf);
            }
            return None;
        }
        Some(j.waiters.get_or_insert_default().publish(cx, &()))
    }

    fn withdraw_join(&self, reg: Registration) {
        if let Some(waiters) = &mut self.join.lock().waiters {
            waiters.remove(reg);
        }
    }

    fn is_finished(&self) -> bool {
        self.header.state.is_complete()
    }

    fn detach(&self) {
        let out = {
            let mut j = self.join.lock();
            j.waker = None;
            std::mem::replace(&mut j.output, Output::HandleGone)
        };
        drop(out);
    }
}
