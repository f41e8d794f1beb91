//! `spawn_actor`: a task that owns a mailbox, and how its end is reported.

use super::{Addr, Block, Inner, InnerArc, Mailbox, make};
use crate::loom::lock;
use std::alloc::Layout;
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
    /// The actor was killed: by [`Addr::kill`], or by its supervisor (a
    /// shutdown that outlasted its timeout, a sibling's restart).
    Killed,
    /// The actor was killed because an actor linked to it
    /// ([`Addr::link`]) ended this way (never itself `Linked`: the exit
    /// that started the chain).
    Linked(Box<Exit>),
    /// The actor gave up: a [`Supervisor`](crate::actors::Supervisor)
    /// whose children restarted more often than its intensity allows (the
    /// text says which child and how it ended).
    Failed(String),
}

impl Exit {
    /// Whether this exit kills the actors linked to one that did not trap
    /// exits: all but [`Exit::Normal`] and [`Exit::Closed`].
    ///
    /// ```
    /// use fibra::Exit;
    ///
    /// assert!(!Exit::Normal.is_abnormal());
    /// assert!(Exit::Panicked("boom".into()).is_abnormal());
    /// ```
    pub fn is_abnormal(&self) -> bool {
        !matches!(self, Exit::Normal | Exit::Closed)
    }

    /// The exit that started a chain of linked deaths: `e` for
    /// `Linked(e)`, else `self`.
    pub(crate) fn root(&self) -> &Exit {
        match self {
            Exit::Linked(e) => e,
            other => other,
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Normal => f.write_str("ended normally"),
            Exit::Panicked(m) => write!(f, "panicked: {m}"),
            Exit::Cancelled => f.write_str("cancelled"),
            Exit::Closed => f.write_str("mailbox closed"),
            Exit::Killed => f.write_str("killed"),
            Exit::Linked(e) => write!(f, "killed by a linked actor that {e}"),
            Exit::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// Builds an actor's address and its task's future; its mailbox goes in
/// the memory `block` gives for a layout, if it does (the runtime's slab).
pub(crate) fn actor<M, B, F>(
    body: B,
    block: impl FnOnce(Layout) -> Option<Block>,
) -> (Addr<M>, Actor<F, M>)
where
    B: FnOnce(Mailbox<M>) -> F,
    F: Future,
{
    let (addr, mb) = make(None, true, block(InnerArc::<M>::layout()));
    let inner = addr.inner.clone();
    let fut = Actor {
        fut: Some(body(mb)),
        inner: Some(inner),
        on_end: None,
        waker_registered: false,
    };
    (addr, fut)
}

/// What a supervisor is told when a life of its child ends.
pub(crate) type OnEnd = Box<dyn FnOnce(Exit) + Send>;

/// Builds the task of one life of a supervised child whose address is
/// `addr`: its body gets a mailbox on the same queue, holding first what
/// the last life left unreceived. The life's end leaves the mailbox open
/// and is reported to `on_end` only (the address's own exit is the
/// supervisor's to report, once it stops the child for good).
pub(crate) fn supervised_life<M, B, F>(addr: &Addr<M>, body: B, on_end: OnEnd) -> Actor<F, M>
where
    B: FnOnce(Mailbox<M>) -> F,
    F: Future,
{
    let inner = addr.inner.clone();
    let stash = inner.revive();
    let mb = Mailbox {
        inner: inner.clone(),
        stash,
        owned_by_task: true,
        supervised: true,
    };
    Actor {
        fut: Some(body(mb)),
        inner: Some(inner),
        on_end: Some(on_end),
        waker_registered: false,
    }
}

/// The address of a supervised child before its first life: its mailbox
/// has no receiver until the supervisor starts one (`supervised_life`).
pub(crate) fn supervised_addr<M>() -> Addr<M> {
    Addr {
        inner: Inner::new_arc(None, true, true, None),
    }
}

impl<M> Addr<M> {
    /// Ends the current life of this actor with `exit` (its task drops its
    /// body at its next poll): how an actor fails on purpose.
    pub(crate) fn fail(&self, exit: Exit) {
        self.inner.kill(exit);
    }

    /// A supervisor stops its child for good: closes the mailbox (its
    /// remaining messages are dropped with it) and reports `exit`.
    pub(crate) fn end_supervised(&self, exit: Exit) {
        self.inner.close();
        // The life may have died before (it is then only the names left to
        // free); the mailbox ends here either way.
        self.inner.die(&exit, self.inner.actor_id(), true);
        self.inner.publish_exit(exit);
        // Messages the last life left unreceived go with the mailbox.
        let handover = lock(&self.inner.ctl)
            .rare
            .as_mut()
            .map(|r| std::mem::take(&mut r.handover));
        drop(handover);
    }

    /// The supervisor's graceful stop: closes the mailbox, so the life
    /// receives what is queued and then `None`.
    pub(crate) fn close_supervised(&self) {
        self.inner.close();
    }
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
    inner: Option<InnerArc<M>>,
    /// A supervised life: told of the end, which leaves the mailbox open.
    on_end: Option<OnEnd>,
    /// The task's waker is registered for kills (`link.rs`).
    waker_registered: bool,
}

impl<F, M> Actor<F, M> {
    /// Closes the mailbox, then reports `exit`, after the body (and the
    /// mailbox, if it still holds it) was dropped in place; then signals
    /// the links. A supervised life leaves the mailbox open and tells its
    /// supervisor.
    fn end(&mut self, exit: Exit) {
        // Assigning drops the old value where it is: the pinned body is
        // never moved.
        self.fut = None;
        let Some(inner) = self.inner.take() else {
            return;
        };
        match self.on_end.take() {
            None => {
                inner.close();
                // Only this end ends an actor's mailbox.
                inner.end_for_good(exit);
            }
            Some(on_end) => {
                inner.die(&exit, inner.actor_id(), false);
                // Our share of the mailbox goes before the supervisor hears
                // of the end: once it stops the child for good, nothing of
                // this life holds the mailbox (or the messages in it).
                drop(inner);
                on_end(exit);
            }
        }
    }
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<a panic payload that is not a string>".to_string()
    }
}

impl<F: Future, M> Future for Actor<F, M> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: nothing is moved out of `this`: `fut` is only polled
        // through the pin below and dropped in place (`end`, and the
        // assignment of `None` on a panic), and `Actor` has no `Unpin` impl
        // of its own (it is `Unpin` only when `F` is).
        let this = unsafe { self.get_unchecked_mut() };
        let (Some(fut), Some(inner)) = (this.fut.as_mut(), this.inner.as_ref()) else {
            return Poll::Ready(());
        };
        if let Some(exit) = inner.take_kill() {
            this.end(exit);
            return Poll::Ready(());
        }
        // SAFETY: `fut` lives in the pinned `Actor` and is never moved (see
        // above).
        let fut = unsafe { Pin::new_unchecked(fut) };
        match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => {
                // A fibra task's waker stays the same for its whole life:
                // registering it once lets a kill wake the task whatever
                // it waits for.
                if !this.waker_registered {
                    this.waker_registered = true;
                    let inner = this.inner.as_ref().expect("checked above");
                    if inner.register_task_waker(cx.waker()) {
                        let exit = inner.take_kill().unwrap_or(Exit::Killed);
                        this.end(exit);
                        return Poll::Ready(());
                    }
                }
                Poll::Pending
            }
            Ok(Poll::Ready(_)) => {
                this.end(Exit::Normal);
                Poll::Ready(())
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
