//! `spawn_actor`: a task that owns a mailbox, and how its end is reported.

use super::{Addr, Inner, Mailbox, make};
use crate::loom::Arc;
use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// How a mailbox's task ended: what [`Addr::exited_op`] yields.
///
/// ```
/// use fibra::Exit;
///
/// fibra::run(async {
///     let done = fibra::spawn_actor(|mut mb| async move { mb.recv().await });
///     done.send(()).unwrap();
///     assert_eq!(done.exited().await, Exit::Normal);
///
///     let crashed = fibra::spawn_actor(|_mb: fibra::Mailbox<()>| async { panic!("boom") });
///     assert!(matches!(crashed.exited().await, Exit::Panicked(m) if m.contains("boom")));
///
///     let (addr, mb) = fibra::mailbox::<()>();
///     drop(mb); // not a task's mailbox: closing it is its end
///     assert_eq!(addr.exited().await, Exit::Closed);
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exit {
    /// The task returned.
    Normal,
    /// The task panicked; the panic's message (or a placeholder if the
    /// payload was not a string).
    Panicked(String),
    /// The task was dropped before it finished (its runtime shut down).
    Cancelled,
    /// A mailbox made by [`mailbox()`](crate::mailbox()) (not tied to a task)
    /// was closed or dropped.
    Closed,
}

/// Builds an actor's address and its task's future.
pub(crate) fn actor<M, B, F>(body: B) -> (Addr<M>, Actor<F, M>)
where
    B: FnOnce(Mailbox<M>) -> F,
    F: Future,
{
    let (addr, mut mb) = make(None);
    mb.owned_by_task = true;
    let inner = addr.inner.clone();
    let fut = Actor {
        fut: Some(body(mb)),
        inner: Some(inner),
    };
    (addr, fut)
}

/// An actor's task: runs the body and reports how it ended.
///
/// Structurally pinned: `fut` is pinned whenever the `Actor` is, never
/// moved out, and dropped in place (set to `None`) before the exit is
/// reported.
pub(crate) struct Actor<F, M> {
    /// The body; `None` once it ended.
    fut: Option<F>,
    /// `None` once the exit is reported.
    inner: Option<Arc<Inner<M>>>,
}

impl<F, M> Actor<F, M> {
    /// Closes the mailbox, then reports `exit`, after the body (and the
    /// mailbox, if it still holds it) was dropped in place.
    fn end(&mut self, exit: Exit) {
        // Assigning drops the old value where it is: the pinned body is
        // never moved.
        self.fut = None;
        if let Some(inner) = self.inner.take() {
            inner.close();
            let _ = inner.exit.put(exit);
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<a panic payload that is not a string>".to_string()
    }
}

impl<F: Future, M> Future for Actor<F, M> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: nothing is moved out of `this`: `fut` is only polled
        // through the pin below and dropped in place (`end`, and the
        // assignment of `None` on a panic), and `Actor` has no `Unpin` impl
        // of its own (it is `Unpin` only when `F` is).
        let this = unsafe { self.get_unchecked_mut() };
        let Some(fut) = this.fut.as_mut() else {
            return Poll::Ready(None);
        };
        // SAFETY: `fut` lives in the pinned `Actor` and is never moved (see
        // above).
        let fut = unsafe { Pin::new_unchecked(fut) };
        match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => {
                this.end(Exit::Normal);
                Poll::Ready(Some(out))
            }
            Err(payload) => {
                // Drop the body first (its mailbox closes), then report;
                // the runtime still sees the panic.
                let msg = panic_message(&*payload);
                let dropped = catch_unwind(AssertUnwindSafe(|| this.fut = None));
                this.end(Exit::Panicked(msg));
                drop(dropped);
                resume_unwind(payload)
            }
        }
    }
}

impl<F, M> Drop for Actor<F, M> {
    fn drop(&mut self) {
        if self.inner.is_some() {
            self.end(Exit::Cancelled);
        }
    }
}
