//! `Perform`: the future that runs the op protocol for one op.
//!
//! Invariants:
//! * `state` (the opstate) and `op` (which holds the leaves' payload slots)
//!   are pinned: waiter records point into them from the moment the block
//!   phase publishes the first record.
//! * In `Phase::Blocked`, some records may be published. Leaving that phase
//!   always goes through `finish`/`abandon`/`withdraw`, which remove every
//!   record before the memory can go away.
//! * Before `Blocked` nothing is published, except by the try itself
//!   (`Op::try_or_publish`: a leaf that locked its resource and found
//!   nothing publishes there, and the phase becomes `Blocked` as soon as the
//!   try returns). If the prepare or try phase unwinds (a builder, a
//!   predicate or a `wrap` panics), the opstate is cancelled and the op is
//!   withdrawn on the way out (or, if a published branch was committed
//!   meanwhile, its result abandoned), so its nacks fire; the perform is
//!   then `Done`.
//! * Dropping while `Blocked` cancels (`W -> X`) so nothing can commit any
//!   more, then withdraws; if a commit already happened (`SYNCED`, possible
//!   when a foreign `select!` drops us after a partner committed), the op
//!   abandons the result, handing any received value back to its channel.

use super::state::{OpState, Seen};
use super::{BlockCx, Op, Tried};
use pin_project_lite::pin_project;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Fresh,
    /// Not polled yet, and its op was just tried without a perform and
    /// found not ready (`Perform::new_tried`): the first poll goes straight
    /// to the block phase.
    Tried,
    Blocked,
    Done,
}

pin_project! {
    /// The future of performing an op: `.await` it, or get it from
    /// `IntoFuture` by awaiting the op itself.
    ///
    /// Cancel-safe: dropping it before the op commits withdraws the op; if a
    /// partner already committed (only possible when something else, such as
    /// tokio's `select!`, drops it between the commit and the next poll), a
    /// received value goes back to its channel for the next receiver.
    ///
    /// # Examples
    ///
    /// ```
    /// use fibra::{Op, Perform, always};
    ///
    /// let fut: Perform<_> = Perform::new(always(1));
    /// assert_eq!(futures::executor::block_on(fut), 1);
    /// // Ops implement `IntoFuture`, so this is the same:
    /// assert_eq!(futures::executor::block_on(async { always(1).await }), 1);
    /// ```
    #[must_use = "an op does nothing unless performed: .await it"]
    pub struct Perform<O: Op> {
        #[pin]
        op: O,
        state: OpState,
        phase: Phase,
        // Whether the opstate holds a waker (see `Op::commits_remotely`).
        remote: bool,
        #[pin]
        _pinned: PhantomPinned,
    }

    impl<O: Op> PinnedDrop for Perform<O> {
        #[inline]
        fn drop(this: Pin<&mut Self>) {
            // The common drop is of a finished perform: only the phase test
            // is inline.
            if this.phase == Phase::Blocked {
                this.drop_blocked();
            }
        }
    }
}

impl<O: Op> Perform<O> {
    /// A drop while `Blocked`: cancels, then withdraws (or abandons the
    /// result of a commit that came first).
    #[cold]
    #[inline(never)]
    fn drop_blocked(self: Pin<&mut Self>) {
        let this = self.project();
        *this.phase = Phase::Done;
        match this.state.cancel() {
            Ok(()) => this.op.withdraw(),
            Err(leaf) => this.op.abandon(leaf),
        }
    }
}

impl<O: Op> Perform<O> {
    /// Wraps `op` in a future that performs it.
    ///
    /// ```
    /// use fibra::{Perform, always};
    ///
    /// let perform = Perform::new(always(5)); // what `.await` on an op builds
    /// assert_eq!(futures::executor::block_on(perform), 5);
    /// ```
    pub fn new(op: O) -> Self {
        Self {
            op,
            state: OpState::new(),
            phase: Phase::Fresh,
            remote: true,
            _pinned: PhantomPinned,
        }
    }
}

impl<O: Op> Perform<O> {
    /// A perform of `op`, which was just tried (`try_in_place`) and found
    /// not ready, with the budget taken for that try: the first poll skips
    /// both and blocks at once (the block phase looks at every branch again
    /// before it publishes, as after any try).
    pub(crate) fn new_tried(op: O) -> Self {
        Self {
            op,
            state: OpState::new(),
            phase: Phase::Tried,
            remote: true,
            _pinned: PhantomPinned,
        }
    }

    /// The op inside, once the perform is over (or before it started): with
    /// no record published, it can give back what it still holds (the value
    /// of a send that did not happen).
    ///
    /// # Panics
    ///
    /// While the perform is waiting (polled, not finished).
    pub(crate) fn finished_op(self: Pin<&mut Self>) -> Pin<&mut O> {
        let this = self.project();
        assert!(
            *this.phase != Phase::Blocked,
            "the op of a perform in progress"
        );
        this.op
    }
}

/// Armed while a perform prepares and tries (then forgotten): if dropped, that
/// unwound, so the op is withdrawn (firing its nacks) and the perform is over.
/// The try may have published records (`Op::try_or_publish`), so the
/// opstate is cancelled first, as `Drop` does: if a partner already
/// committed a published branch, that branch's result is abandoned (a
/// received value goes back to its channel).
struct Unwinding<'a, O: Op> {
    op: Pin<&'a mut O>,
    phase: &'a mut Phase,
    state: &'a OpState,
}

impl<O: Op> Drop for Unwinding<'_, O> {
    fn drop(&mut self) {
        *self.phase = Phase::Done;
        match self.state.cancel() {
            Ok(()) => super::nack::withdraw_unwound(self.op.as_mut()),
            Err(leaf) => self.op.as_mut().abandon(leaf),
        }
    }
}

impl<O: Op> Future for Perform<O> {
    type Output = O::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O::Output> {
        let mut this = self.project();
        let mut waker_fresh = false;
        match *this.phase {
            phase @ (Phase::Fresh | Phase::Tried) => {
                let fresh = phase == Phase::Fresh;
                if fresh && !crate::coop::consume() {
                    // Out of budget on a fibra worker: let the others run.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                // Until the phase is `Blocked`, `Drop` does nothing: an
                // unwind (a builder, predicate or `wrap` panicking) must
                // cancel and withdraw the op here (the try may have
                // published), or its nacks would never fire.
                let state: &OpState = this.state;
                let mut unwinding = Unwinding {
                    op: this.op.as_mut(),
                    phase: &mut *this.phase,
                    state,
                };
                unwinding.op.as_mut().prepare();
                // The try runs with the opstate at hand, so a leaf that
                // locks its resource and finds nothing publishes under that
                // lock ("Publishing in the try"). Only a leaf some partner
                // commits publishes there, so the op is then not exclusive.
                let mut cx = BlockCx {
                    state,
                    leaf: 0,
                    waker: cx.waker(),
                    exclusive: false,
                    install: None,
                };
                let tried = if fresh {
                    unwinding.op.as_mut().try_or_publish(cx)
                } else {
                    Tried::NotReady
                };
                std::mem::forget(unwinding);
                match tried {
                    Tried::Committed(out) => {
                        *this.phase = Phase::Done;
                        crate::trace::event!(phase = "try", "commit");
                        return Poll::Ready(out);
                    }
                    // Only a leaf that partners commit publishes in the
                    // try, so `remote` keeps its initial `true`.
                    Tried::Published => *this.phase = Phase::Blocked,
                    Tried::NotReady => {
                        *this.remote = this.op.commits_remotely();
                        cx.exclusive = !*this.remote;
                        if *this.remote {
                            state.set_waker_unpublished(cx.waker.clone());
                        }
                        *this.phase = Phase::Blocked;
                        this.op.as_mut().block(cx);
                    }
                }
                waker_fresh = true;
            }
            Phase::Blocked => {
                if this.state.load() == Seen::Waiting {
                    let state: &OpState = this.state;
                    this.op.as_mut().repoll(BlockCx {
                        state,
                        leaf: 0,
                        waker: cx.waker(),
                        exclusive: !*this.remote,
                        install: None,
                    });
                }
            }
            Phase::Done => panic!("`Perform` polled after it completed"),
        }
        let mut step = 0;
        loop {
            match this.state.load() {
                Seen::Synced(leaf) => {
                    *this.phase = Phase::Done;
                    crate::trace::event!(leaf, "commit");
                    return Poll::Ready(this.op.as_mut().finish(leaf));
                }
                // A remote commit is in flight: it took the waker stored
                // before this poll, which may not be the current one, so
                // wait the few instructions until it stores `SYNCED`
                // rather than return `Pending` and risk a wake to a stale
                // waker.
                Seen::Busy(_) => crate::loom::spin_wait(&mut step),
                Seen::Waiting => {
                    // An op nobody commits remotely keeps its waker itself
                    // (re-registered by `repoll`).
                    if waker_fresh || !*this.remote || this.state.update_waker(cx.waker()) {
                        return Poll::Pending;
                    }
                    // The state moved while we looked: look again.
                }
                seen @ (Seen::Claimed | Seen::Cancelled) => {
                    unreachable!("perform saw its own opstate {seen:?} between polls")
                }
            }
        }
    }
}
