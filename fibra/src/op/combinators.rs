//! The simple combinators: `always`, `never`, `wrap`, `guard`.

use super::nack::CommitIsUnwinding;
use super::{BlockCx, Op, Tried, sealed::Sealed};
use std::marker::PhantomData;
use std::pin::Pin;

/// An op that is always ready with `value` (CML's `alwaysEvt`).
///
/// ```
/// use fibra::{Op, always};
/// assert_eq!(always(5).perform(), 5);
/// ```
pub fn always<T>(value: T) -> Always<T> {
    Always { value: Some(value) }
}

/// The op returned by [`always`].
///
/// ```
/// use fibra::{Always, Op, always};
///
/// let op: Always<&str> = always("now");
/// assert_eq!(op.try_perform().ok(), Some("now"));
/// ```
#[derive(Debug, Clone)]
pub struct Always<T> {
    value: Option<T>,
}

impl<T> Sealed for Always<T> {}
impl<T> Unpin for Always<T> {}

impl<T> Op for Always<T> {
    type Output = T;

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<T> {
        self.get_mut().value.take()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        // Reached only if `try_now` was skipped; commit ourselves.
        if cx.state.claim().is_ok() {
            cx.state.commit_own(cx.leaf);
        }
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> T {
        self.get_mut()
            .value
            .take()
            .expect("`always` performed twice")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {}

    fn withdraw(self: Pin<&mut Self>) {}

    fn try_leaves_nothing(&self) -> bool {
        true
    }
}

/// An op that never commits (CML's `never`): a choice with it behaves as if
/// the branch were absent, and performing it alone waits forever.
///
/// ```
/// use fibra::{Op, always, choose, never};
/// assert_eq!(choose((never(), always(1))).perform(), 1);
/// assert!(never::<u8>().try_perform().is_err());
/// ```
pub const fn never<T>() -> Never<T> {
    Never(PhantomData)
}

/// The op returned by [`never()`].
///
/// ```
/// use fibra::{Never, Op, never};
///
/// let op: Never<u8> = never();
/// assert!(op.try_perform().is_err());
/// ```
#[derive(Debug)]
pub struct Never<T>(PhantomData<fn() -> T>);

impl<T> Clone for Never<T> {
    fn clone(&self) -> Self {
        Never(PhantomData)
    }
}

impl<T> Sealed for Never<T> {}

impl<T> Op for Never<T> {
    type Output = T;

    // Nothing commits it, remotely or at all: a choice whose other branches
    // all commit themselves stays exclusive (no waker clone, no CAS).
    fn commits_remotely(&self) -> bool {
        false
    }

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<T> {
        None
    }

    fn block(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> T {
        unreachable!("`never` committed")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {}

    fn withdraw(self: Pin<&mut Self>) {}

    fn try_leaves_nothing(&self) -> bool {
        true
    }
}

pin_project_lite::pin_project! {
    /// The op returned by [`Op::wrap`].
    ///
    /// ```
    /// use fibra::{Op, always};
    ///
    /// let op = always(3).wrap(|x| x * 2);
    /// assert_eq!(op.perform(), 6);
    /// ```
    pub struct Wrap<O, F> {
        #[pin]
        op: O,
        f: Option<F>,
    }
}

impl<O, F> Wrap<O, F> {
    pub(crate) fn new(op: O, f: F) -> Self {
        Self { op, f: Some(f) }
    }

    /// The wrapped op, pinned.
    pub(crate) fn inner(self: Pin<&mut Self>) -> Pin<&mut O> {
        self.project().op
    }
}

impl<O, F> Sealed for Wrap<O, F> {}

impl<O: Op, F: FnOnce(O::Output) -> U, U> Op for Wrap<O, F> {
    type Output = U;

    fn leaves(&self) -> usize {
        self.op.leaves()
    }

    fn commits_remotely(&self) -> bool {
        self.op.commits_remotely()
    }

    fn looks_again(&self) -> bool {
        self.op.looks_again()
    }

    // `block` passes its context on unchanged.
    fn installs_waker(&self) -> bool {
        self.op.installs_waker()
    }

    fn try_leaves_nothing(&self) -> bool {
        self.op.try_leaves_nothing()
    }

    fn prepare(self: Pin<&mut Self>) {
        self.project().op.prepare();
    }

    fn try_now(self: Pin<&mut Self>) -> Option<U> {
        let this = self.project();
        let out = this.op.try_now()?;
        let f = this.f.take().expect("wrap performed twice");
        // `op` committed: if `f` panics, the nacks on this path must not fire.
        let committed = CommitIsUnwinding;
        let out = f(out);
        std::mem::forget(committed);
        Some(out)
    }

    fn try_or_publish(self: Pin<&mut Self>, cx: BlockCx<'_>) -> Tried<U> {
        let this = self.project();
        match this.op.try_or_publish(cx) {
            Tried::Committed(out) => {
                let f = this.f.take().expect("wrap performed twice");
                // As in `try_now`.
                let committed = CommitIsUnwinding;
                let out = f(out);
                std::mem::forget(committed);
                Tried::Committed(out)
            }
            Tried::Published => Tried::Published,
            Tried::NotReady => Tried::NotReady,
        }
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.project().op.block(cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.project().op.repoll(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> U {
        let this = self.project();
        let out = this.op.finish(leaf);
        (this.f.take().expect("wrap performed twice"))(out)
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        self.project().op.abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.project().op.withdraw();
    }
}

/// Builds the op when it is performed (CML's `guard`): `build` runs once per
/// perform, at its start, in the performing task.
///
/// ```
/// use fibra::{Op, always, guard};
/// use std::cell::Cell;
///
/// let performs = Cell::new(0);
/// let op = guard(|| {
///     performs.set(performs.get() + 1);
///     always(performs.get())
/// });
/// assert_eq!(performs.get(), 0); // nothing happened yet
/// assert_eq!(op.perform(), 1);
/// ```
pub fn guard<F, O>(build: F) -> Guard<F, O>
where
    F: FnMut() -> O,
    O: Op,
{
    Guard { build, op: None }
}

/// The op returned by [`guard`].
///
/// ```
/// use fibra::{Guard, Op, always, guard};
///
/// let op = guard(|| always(5));
/// assert_eq!(op.perform(), 5);
/// ```
pub struct Guard<F, O> {
    build: F,
    op: Option<O>,
}

impl<F, O> Sealed for Guard<F, O> {}

impl<F, O> Guard<F, O> {
    /// The built op, pinned.
    fn built(self: Pin<&mut Self>) -> Option<Pin<&mut O>> {
        // SAFETY: `op` is structurally pinned: it is never moved out of the
        // `Option`, only dropped in place (by `reset` or our own drop).
        unsafe {
            self.get_unchecked_mut()
                .op
                .as_mut()
                .map(|o| Pin::new_unchecked(o))
        }
    }

    fn reset(self: Pin<&mut Self>) {
        // SAFETY: dropping the pinned op in place is allowed; nothing else
        // is moved.
        unsafe { self.get_unchecked_mut().op = None };
    }
}

impl<F: FnMut() -> O, O: Op> Op for Guard<F, O> {
    type Output = O::Output;

    fn leaves(&self) -> usize {
        self.op.as_ref().map_or(1, Op::leaves)
    }

    fn commits_remotely(&self) -> bool {
        self.op.as_ref().is_none_or(Op::commits_remotely)
    }

    fn looks_again(&self) -> bool {
        self.op.as_ref().is_none_or(Op::looks_again)
    }

    fn prepare(mut self: Pin<&mut Self>) {
        // SAFETY: `build` is not structurally pinned, and storing a new op
        // into an empty (or dropped-in-place) `Option` moves nothing pinned.
        let this = unsafe { self.as_mut().get_unchecked_mut() };
        if this.op.is_none() {
            this.op = Some((this.build)());
        }
        if let Some(op) = self.built() {
            op.prepare();
        }
    }

    fn try_now(self: Pin<&mut Self>) -> Option<O::Output> {
        self.built()?.try_now()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(op) = self.built() {
            op.block(cx);
        }
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(op) = self.built() {
            op.repoll(cx);
        }
    }

    fn finish(mut self: Pin<&mut Self>, leaf: usize) -> O::Output {
        let out = self.as_mut().built().expect("guard built").finish(leaf);
        self.reset();
        out
    }

    fn abandon(mut self: Pin<&mut Self>, leaf: usize) {
        if let Some(op) = self.as_mut().built() {
            op.abandon(leaf);
        }
        self.reset();
    }

    fn withdraw(mut self: Pin<&mut Self>) {
        if let Some(op) = self.as_mut().built() {
            op.withdraw();
        }
        self.reset();
    }
}
