//! `with_nack`: tell a branch that it lost (CML's `withNack`).
//!
//! Invariants: a `Signal` goes from unfired to fired once, under its lock;
//! waiter records are published under the same lock after checking `fired`,
//! so a nack op either sees the signal fired or is committed by `fire`.
//! The `with_nack` op fires its signal exactly when the perform it belongs to
//! ends without this branch committing: another branch won, the perform was
//! dropped (cancelled) before any commit, or it unwound (a builder, a
//! selective receive's predicate or the winner's `wrap` panicked).
//!
//! Unwinding: a perform whose prepare or try phase unwinds withdraws its whole
//! op ([`withdraw_unwound`]), which fires every nack still built. The branch
//! that committed in the try phase is not fired: a `with_nack` resets itself
//! without firing when its op's `try_now` commits, and when a `wrap`'s
//! function panics after the commit inside it, [`CommitIsUnwinding`] marks the
//! thread so that the `with_nack`s it unwinds through (the committed path)
//! reset without firing. Nothing of this runs unless something unwinds.

use super::waiter::{Registration, WaitQueue};
use super::{BlockCx, Op, sealed::Sealed};
use crate::loom::{Arc, AtomicBool, Lock, Ordering};
use std::cell::Cell;
use std::marker::PhantomPinned;
use std::pin::Pin;

crate::loom::thread_local! {
    /// Set while the try phase unwinds from a `wrap` function, i.e. after a
    /// commit, until the perform's [`withdraw_unwound`] clears it.
    static COMMIT_UNWINDING: Cell<bool> = const { Cell::new(false) };
}

/// Held (then forgotten) by `Wrap::try_now` while its function runs: the op
/// under the wrap committed, so if this is dropped, the try phase is
/// unwinding after a commit.
pub(crate) struct CommitIsUnwinding;

impl Drop for CommitIsUnwinding {
    fn drop(&mut self) {
        COMMIT_UNWINDING.with(|c| c.set(true));
    }
}

/// A perform's prepare or try phase unwound (and its opstate, if the try
/// published anything, was cancelled): withdrawing `op` removes what is
/// published, resets every guard and fires every nack still built (the
/// committed path's were reset without firing on the way out).
pub(crate) fn withdraw_unwound<O: Op + ?Sized>(op: Pin<&mut O>) {
    COMMIT_UNWINDING.with(|c| c.set(false));
    op.withdraw();
}

/// Fires `signal` if dropped: held (then forgotten) while a `with_nack`
/// builder runs, so a builder that keeps its nack and then panics leaves it
/// fired.
struct FireOnUnwind<'a>(&'a Signal);

impl Drop for FireOnUnwind<'_> {
    fn drop(&mut self) {
        self.0.fire();
    }
}

/// Held (then forgotten) while a `with_nack`'s op tries: if the try unwinds
/// after a commit inside it, the branch was chosen, so it withdraws its op
/// (firing the nacks of the branches inside that lost; those on the committed
/// path already reset) and resets without firing its own; otherwise it stays
/// built for [`withdraw_unwound`] to fire.
struct ResetIfCommitUnwinding<'a, F, O: Op>(Pin<&'a mut WithNack<F, O>>);

impl<F, O: Op> Drop for ResetIfCommitUnwinding<'_, F, O> {
    fn drop(&mut self) {
        if COMMIT_UNWINDING.with(Cell::get) {
            if let Some(op) = self.0.as_mut().op() {
                op.withdraw();
            }
            self.0.as_mut().reset(false);
        }
    }
}

/// A one-shot broadcast flag with waiters.
pub(crate) struct Signal {
    /// Set once, under `waiters`' lock; read lock-free by the fast path.
    fired: AtomicBool,
    waiters: Lock<WaitQueue<()>>,
}

impl Signal {
    pub(crate) fn new() -> Self {
        Self {
            fired: AtomicBool::new(false),
            waiters: Lock::new(WaitQueue::default()),
        }
    }

    /// Fires the signal and commits every waiter; wakes them after unlock.
    pub(crate) fn fire(&self) {
        let mut wakers = Vec::new();
        {
            let mut q = self.waiters.lock();
            // Release pairs with the Acquire fast-path load in `is_fired`.
            self.fired.store(true, Ordering::Release);
            q.commit_all(&mut wakers);
        }
        wakers.into_iter().for_each(std::task::Waker::wake);
    }
}

/// The op a [`with_nack`] builder receives: it becomes ready when the branch
/// the builder made is **not** the one chosen, including when its perform is
/// dropped or unwinds (panics) before that branch commits.
///
/// Clone it freely; every clone sees the same signal.
///
/// ```
/// use fibra::{Op, always, choose_biased, never, with_nack};
/// use std::sync::Mutex;
///
/// let nack = Mutex::new(None);
/// let got = choose_biased((
///     always("first"),
///     with_nack(|n| {
///         *nack.lock().unwrap() = Some(n);
///         never()
///     }),
/// ))
/// .perform();
/// assert_eq!(got, "first");
/// let n = nack.lock().unwrap().take();
/// // The builder ran (every builder runs when the perform starts) and its
/// // branch lost:
/// assert!(n.unwrap().is_fired());
/// ```
pub struct Nack {
    signal: Arc<Signal>,
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl Clone for Nack {
    fn clone(&self) -> Self {
        Self::new(self.signal.clone())
    }
}

impl Nack {
    fn new(signal: Arc<Signal>) -> Self {
        Self {
            signal,
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Whether the branch already lost.
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased, never, with_nack};
    ///
    /// let mut nack = None;
    /// choose_biased((
    ///     always(()),
    ///     with_nack(|n| {
    ///         nack = Some(n);
    ///         never()
    ///     }),
    /// ))
    /// .perform();
    /// assert!(nack.unwrap().is_fired());
    /// ```
    pub fn is_fired(&self) -> bool {
        // Acquire: pairs with the Release store in `fire`.
        self.signal.fired.load(Ordering::Acquire)
    }

    fn published(self: Pin<&mut Self>) -> &mut Option<Registration> {
        // SAFETY: `published` is not structurally pinned; nothing moves.
        unsafe { &mut self.get_unchecked_mut().published }
    }
}

impl std::fmt::Debug for Nack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nack")
            .field("fired", &self.is_fired())
            .finish()
    }
}

impl Sealed for Nack {}

impl Op for Nack {
    type Output = ();

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<()> {
        self.is_fired().then_some(())
    }

    fn block(mut self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let signal = self.signal.clone();
        let mut q = signal.waiters.lock();
        // Relaxed: `fired` only changes under the lock we hold.
        if signal.fired.load(Ordering::Relaxed) {
            if cx.state.claim().is_ok() {
                cx.state.commit_own(cx.leaf);
            }
            return;
        }
        // The only partner is `fire`, which takes this lock: no retry needed.
        *self.as_mut().published() = Some(q.publish(cx, &()));
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) {
        // `fire` removed our record when it committed it.
        *self.published() = None;
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        self.finish(leaf);
    }

    fn withdraw(mut self: Pin<&mut Self>) {
        if let Some(reg) = self.as_mut().published().take() {
            self.signal.waiters.lock().remove(reg);
        }
    }
}

/// Builds a branch that learns whether it lost (CML's `withNack`).
///
/// At perform time, `build` receives a [`Nack`] op and returns the branch's
/// op. The nack becomes ready whenever this branch is not the one chosen: the
/// perform commits some *other* branch, fails (`try_perform` finds nothing
/// ready), is dropped before anything commits, or unwinds before this branch
/// commits (a `guard` or `with_nack` builder panics, `build` itself included,
/// or the winning branch's [`wrap`](Op::wrap) function panics). A server that
/// started work for this branch can perform the nack (in a choice with its
/// reply) to learn that nobody will take the answer. If this branch commits,
/// its nack never fires, even if a `wrap` function panics afterwards.
///
/// `build` runs once per perform (after a failed `try_perform`, the next
/// perform builds again); the nack of a build fires at most once.
///
/// ```
/// use fibra::{Op, always, choose_biased, never, with_nack};
///
/// let (tx, rx) = std::sync::mpsc::channel();
/// choose_biased((
///     always(()),
///     with_nack(move |nack| {
///         tx.send(nack).unwrap();
///         never()
///     }),
/// ))
/// .perform();
/// // The branch lost, so its nack is ready:
/// rx.recv().unwrap().perform();
/// ```
pub fn with_nack<F, O>(build: F) -> WithNack<F, O>
where
    F: FnMut(Nack) -> O,
    O: Op,
{
    WithNack {
        build,
        built: None,
        _pinned: PhantomPinned,
    }
}

/// The op returned by [`with_nack`].
///
/// ```
/// use fibra::{Op, always, with_nack};
///
/// // Alone, the branch always wins: its nack never fires.
/// assert_eq!(with_nack(|_nack| always(1)).perform(), 1);
/// ```
pub struct WithNack<F, O> {
    build: F,
    built: Option<(O, Arc<Signal>)>,
    _pinned: PhantomPinned,
}

impl<F, O> Sealed for WithNack<F, O> {}

impl<F, O> WithNack<F, O> {
    fn op(self: Pin<&mut Self>) -> Option<Pin<&mut O>> {
        // SAFETY: the built op is structurally pinned: never moved out of
        // the `Option`, only dropped in place by `lose`/`won`.
        unsafe {
            self.get_unchecked_mut()
                .built
                .as_mut()
                .map(|(o, _)| Pin::new_unchecked(o))
        }
    }

    /// Drops the built op in place; fires the nack if the branch lost.
    fn reset(self: Pin<&mut Self>, lost: bool) {
        // SAFETY: dropping the pinned op in place is allowed.
        let built = unsafe { &mut self.get_unchecked_mut().built };
        if let Some((_, signal)) = built.as_ref() {
            let signal = signal.clone();
            *built = None;
            if lost {
                signal.fire();
            }
        }
    }
}

impl<F: FnMut(Nack) -> O, O: Op> Op for WithNack<F, O> {
    type Output = O::Output;

    fn leaves(&self) -> usize {
        self.built.as_ref().map_or(1, |(o, _)| o.leaves())
    }

    fn commits_remotely(&self) -> bool {
        self.built
            .as_ref()
            .is_none_or(|(o, _)| o.commits_remotely())
    }

    fn prepare(mut self: Pin<&mut Self>) {
        // SAFETY: `build` is not structurally pinned, and storing into an
        // empty `Option` moves nothing pinned.
        let this = unsafe { self.as_mut().get_unchecked_mut() };
        if this.built.is_none() {
            let signal = Arc::new(Signal::new());
            let fire = FireOnUnwind(&signal);
            let op = (this.build)(Nack::new(signal.clone()));
            std::mem::forget(fire);
            this.built = Some((op, signal));
        }
        if let Some(op) = self.op() {
            op.prepare();
        }
    }

    fn try_now(mut self: Pin<&mut Self>) -> Option<O::Output> {
        let mut guard = ResetIfCommitUnwinding(self.as_mut());
        let out = guard.0.as_mut().op().and_then(Op::try_now);
        std::mem::forget(guard);
        if out.is_some() {
            // The branch committed: it did not lose.
            self.reset(false);
        }
        out
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(op) = self.op() {
            op.block(cx);
        }
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(op) = self.op() {
            op.repoll(cx);
        }
    }

    fn finish(mut self: Pin<&mut Self>, leaf: usize) -> O::Output {
        let out = self.as_mut().op().expect("with_nack built").finish(leaf);
        self.reset(false);
        out
    }

    fn abandon(mut self: Pin<&mut Self>, leaf: usize) {
        if let Some(op) = self.as_mut().op() {
            op.abandon(leaf);
        }
        self.reset(false);
    }

    fn withdraw(mut self: Pin<&mut Self>) {
        if let Some(op) = self.as_mut().op() {
            op.withdraw();
        }
        self.reset(true);
    }
}
