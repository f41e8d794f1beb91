//! Choice: commit exactly one of several ops.
//!
//! Invariants: all branches share the perform's single opstate, so at most
//! one leaf commits; leaves are numbered consecutively across branches in
//! index order (branch `i` owns `offset(i)..offset(i) + leaves(i)`), and the
//! numbering is stable from the end of the try phase (every guard and
//! `with_nack` built) until the perform ends.
//!
//! A choice reaches its branches through [`Branches::look`] and
//! [`Branches::call`] with one step type per protocol method (`TryNow`,
//! `Block`, ...), so over an array, a `Vec` or a tuple each branch method is
//! a static call the compiler can inline, not a call through `dyn Op`.
//!
//! Fair choice (`choose`) starts the try scan and the block-phase publication
//! at a random branch; biased choice (`choose_biased`) always starts at the
//! first. Either way the try phase commits the first ready branch it meets.

use super::rng;
use super::{BlockCx, Op, Tried, sealed::Sealed};
use std::marker::PhantomPinned;
use std::pin::Pin;

/// A set of branches for [`choose`]: a tuple of ops with the same output
/// (up to 12), an array or a `Vec` of ops of one type, or a `Vec` of
/// [`BoxOp`]s for ops of different types.
///
/// ```
/// use fibra::{Branches, always};
///
/// assert_eq!((always(1), always(2)).count(), 2);
/// assert_eq!([always(1), always(2), always(3)].count(), 3);
/// assert_eq!(vec![always(1)].count(), 1);
/// ```
pub trait Branches: Sealed {
    /// What every branch yields.
    type Output;

    /// Number of branches.
    ///
    /// ```
    /// use fibra::op::Branches;
    /// use fibra::always;
    ///
    /// assert_eq!((always(1), always(2)).count(), 2);
    /// ```
    fn count(&self) -> usize;

    /// Calls `f` on branch `i` (statically dispatched where the branch
    /// types are known: no virtual call for arrays, `Vec`s and tuples).
    #[doc(hidden)]
    fn look<F: BranchLook<Self::Output>>(&self, i: usize, f: F) -> F::Out;

    /// Calls `f` on branch `i`, pinned.
    #[doc(hidden)]
    fn call<F: BranchCall<Self::Output>>(self: Pin<&mut Self>, i: usize, f: F) -> F::Out;
}

/// A question asked of one branch of a choice ([`Branches::look`]): a
/// generic function over the branch's op type, so that the choice's loops
/// call each branch's methods directly rather than through a `dyn Op`.
#[doc(hidden)]
pub trait BranchLook<T> {
    /// The answer.
    type Out;
    /// Asks `op`.
    fn look<O: Op<Output = T> + ?Sized>(self, op: &O) -> Self::Out;
}

/// A protocol step run on one branch of a choice ([`Branches::call`]), as
/// [`BranchLook`] for the steps that take the branch pinned.
#[doc(hidden)]
pub trait BranchCall<T> {
    /// What the step returns.
    type Out;
    /// Runs the step on `op`.
    fn call<O: Op<Output = T> + ?Sized>(self, op: Pin<&mut O>) -> Self::Out;
}

/// Defines a unit-like step type for [`BranchLook`] / [`BranchCall`].
macro_rules! branch_step {
    (look $name:ident -> $out:ty, |$op:ident| $body:expr) => {
        struct $name;
        impl<T> BranchLook<T> for $name {
            type Out = $out;
            #[inline(always)]
            fn look<O: Op<Output = T> + ?Sized>(self, $op: &O) -> $out {
                $body
            }
        }
    };
    (call $name:ident $(<$lt:lifetime>)? ($($field:ty)?) -> $out:ty, |$self_:ident, $op:ident| $body:expr) => {
        struct $name $(<$lt>)? ($($field)?);
        impl<$($lt,)? T> BranchCall<T> for $name $(<$lt>)? {
            type Out = $out;
            #[inline(always)]
            fn call<O: Op<Output = T> + ?Sized>($self_, $op: Pin<&mut O>) -> $out {
                $body
            }
        }
    };
}

branch_step!(look Leaves -> usize, |op| op.leaves());
branch_step!(look CommitsRemotely -> bool, |op| op.commits_remotely());
branch_step!(look LooksAgain -> bool, |op| op.looks_again());
branch_step!(look TryLeavesNothing -> bool, |op| op.try_leaves_nothing());
branch_step!(call Prepare() -> (), |self, op| op.prepare());
branch_step!(call TryNow() -> Option<T>, |self, op| op.try_now());
branch_step!(call TryOrPublish<'a>(BlockCx<'a>) -> Tried<T>, |self, op| op.try_or_publish(self.0));
branch_step!(call Block<'a>(BlockCx<'a>) -> (), |self, op| op.block(self.0));
branch_step!(call Repoll<'a>(BlockCx<'a>) -> (), |self, op| op.repoll(self.0));
branch_step!(call Finish(usize) -> T, |self, op| op.finish(self.0));
branch_step!(call Abandon(usize) -> (), |self, op| op.abandon(self.0));
branch_step!(call Withdraw() -> (), |self, op| op.withdraw());

/// Commits exactly one of `branches`, chosen fairly among those ready: the
/// scan starts at a random branch (per-thread generator, see
/// [`seed_choice_rng`](crate::seed_choice_rng)). CML's `choose`, Go's and
/// Racket's `select`/`sync` semantics.
///
/// `branches` is a tuple of ops with one output type (use [`Op::wrap`] to
/// unify them), an array or `Vec` of one op type, or a `Vec<BoxOp<T>>`.
/// A choice with no branch never commits.
///
/// ```
/// use fibra::{Op, bounded, choose};
///
/// let (tx1, rx1) = bounded::<u32>(1);
/// let (tx2, rx2) = bounded::<u32>(1);
/// tx1.try_send(1).unwrap();
/// tx2.try_send(2).unwrap();
/// let a = choose((rx1.recv_op(), rx2.recv_op())).perform().unwrap();
/// let b = choose((rx1.recv_op(), rx2.recv_op())).perform().unwrap();
/// assert_eq!(a + b, 3); // one from each, in either order
///
/// // A dynamic set: a Vec of ops of one type, no boxing needed.
/// let rxs = vec![rx1, rx2];
/// tx2.try_send(9).unwrap();
/// let ops: Vec<_> = rxs.iter().map(|rx| rx.recv_op()).collect();
/// assert_eq!(choose(ops).perform(), Ok(9));
/// ```
// Always inline, as `choose_biased`: the branches are moved into the op.
#[inline(always)]
pub fn choose<B: Branches>(branches: B) -> Choose<B> {
    Choose::new(branches, false)
}

/// Commits exactly one of `branches`, preferring earlier ones: the first
/// branch in order that is ready wins (Cforall's and Kotlin's priority
/// select). Use it to give a control channel priority over data.
///
/// ```
/// use fibra::{Op, bounded, choose_biased};
///
/// let (ctl_tx, ctl) = bounded::<&str>(1);
/// let (data_tx, data) = bounded::<&str>(1);
/// data_tx.try_send("data").unwrap();
/// ctl_tx.try_send("stop").unwrap();
/// let first = choose_biased((ctl.recv_op(), data.recv_op())).perform();
/// assert_eq!(first, Ok("stop"));
/// ```
#[inline(always)]
pub fn choose_biased<B: Branches>(branches: B) -> Choose<B> {
    Choose::new(branches, true)
}

/// The op returned by [`choose`] and [`choose_biased`].
///
/// ```
/// use fibra::{Choose, Op, always, choose};
///
/// let op: Choose<(_, _)> = choose((always(1), always(1)));
/// assert_eq!(op.perform(), 1);
/// ```
pub struct Choose<B> {
    branches: B,
    biased: bool,
    start: usize,
    _pinned: PhantomPinned,
}

impl<B> Sealed for Choose<B> {}

impl<B: Branches> Choose<B> {
    fn new(branches: B, biased: bool) -> Self {
        Self {
            branches,
            biased,
            start: 0,
            _pinned: PhantomPinned,
        }
    }

    fn project(self: Pin<&mut Self>) -> (Pin<&mut B>, &mut usize, bool) {
        // SAFETY: `branches` is structurally pinned and never moved; `start`
        // and `biased` are plain data.
        unsafe {
            let this = self.get_unchecked_mut();
            (
                Pin::new_unchecked(&mut this.branches),
                &mut this.start,
                this.biased,
            )
        }
    }

    /// The branches, pinned.
    pub(crate) fn branches(self: Pin<&mut Self>) -> Pin<&mut B> {
        self.project().0
    }

    /// The branch owning `leaf`, and that branch's first leaf.
    fn owner_of(&self, leaf: usize) -> (usize, usize) {
        let mut offset = 0;
        for i in 0..self.branches.count() {
            let n = self.branches.look(i, Leaves);
            if leaf < offset + n {
                return (i, offset);
            }
            offset += n;
        }
        unreachable!("leaf {leaf} outside the choice")
    }

    fn withdraw_all_but(self: Pin<&mut Self>, keep: Option<usize>) {
        let (mut branches, _, _) = self.project();
        for i in 0..branches.count() {
            if Some(i) != keep {
                branches.as_mut().call(i, Withdraw());
            }
        }
    }
}

impl<B: Branches> Op for Choose<B> {
    type Output = B::Output;

    fn leaves(&self) -> usize {
        (0..self.branches.count())
            .map(|i| self.branches.look(i, Leaves))
            .sum()
    }

    fn commits_remotely(&self) -> bool {
        (0..self.branches.count()).any(|i| self.branches.look(i, CommitsRemotely))
    }

    fn looks_again(&self) -> bool {
        (0..self.branches.count()).any(|i| self.branches.look(i, LooksAgain))
    }

    // Known at compile time for arrays and tuples of leaf ops (each
    // branch's answer is a constant), so the test below folds away.
    fn try_leaves_nothing(&self) -> bool {
        (0..self.branches.count()).all(|i| self.branches.look(i, TryLeavesNothing))
    }

    fn prepare(self: Pin<&mut Self>) {
        let (mut branches, _, _) = self.project();
        for i in 0..branches.count() {
            branches.as_mut().call(i, Prepare());
        }
    }

    fn try_now(mut self: Pin<&mut Self>) -> Option<B::Output> {
        let clean = self.try_leaves_nothing();
        let (mut branches, start, biased) = self.as_mut().project();
        let n = branches.count();
        if n == 0 {
            return None;
        }
        *start = if biased { 0 } else { rng::below(n) };
        let start = *start;
        for k in 0..n {
            let i = (start + k) % n;
            if let Some(out) = branches.as_mut().call(i, TryNow()) {
                // Branches tried before this one may have built guards or
                // nacks: they lost (unless no branch can have).
                if !clean {
                    self.withdraw_all_but(Some(i));
                }
                return Some(out);
            }
        }
        None
    }

    fn try_or_publish(mut self: Pin<&mut Self>, cx: BlockCx<'_>) -> Tried<B::Output> {
        let clean = self.try_leaves_nothing();
        let (mut branches, start, biased) = self.as_mut().project();
        let n = branches.count();
        if n == 0 {
            return Tried::NotReady;
        }
        *start = if biased { 0 } else { rng::below(n) };
        let start = *start;
        // Leaf offset of branch `start`, then walk start..n, 0..start, as
        // `block` does.
        let mut offset: usize = (0..start)
            .map(|i| branches.as_ref().get_ref().look(i, Leaves))
            .sum();
        for k in 0..n {
            let i = (start + k) % n;
            if i == 0 {
                offset = 0;
            }
            let leaves = branches.as_ref().get_ref().look(i, Leaves);
            match branches.as_mut().call(i, TryOrPublish(cx.offset(offset))) {
                Tried::Committed(out) => {
                    // Nothing is published: as in `try_now`.
                    if !clean {
                        self.withdraw_all_but(Some(i));
                    }
                    return Tried::Committed(out);
                }
                Tried::NotReady => offset += leaves,
                Tried::Published => {
                    // Branch `i` is published: the others take the block
                    // phase, in the same order, from the next one round to
                    // the ones tried before it (which published nothing).
                    offset += leaves;
                    for k in k + 1..k + n {
                        let j = (start + k) % n;
                        if j == 0 {
                            offset = 0;
                        }
                        if cx.state.load() != super::state::Seen::Waiting {
                            break; // some branch committed: publish no more
                        }
                        let leaves = branches.as_ref().get_ref().look(j, Leaves);
                        branches.as_mut().call(j, Block(cx.offset(offset)));
                        offset += leaves;
                    }
                    return Tried::Published;
                }
            }
        }
        Tried::NotReady
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (mut branches, start, _) = self.project();
        let n = branches.count();
        let start = *start;
        // Leaf offset of branch `start`, then walk start..n, 0..start.
        let mut offset: usize = (0..start)
            .map(|i| branches.as_ref().get_ref().look(i, Leaves))
            .sum();
        for k in 0..n {
            let i = (start + k) % n;
            if i == 0 {
                offset = 0;
            }
            if cx.state.load() != super::state::Seen::Waiting {
                return; // some branch committed: publish no more
            }
            let leaves = branches.as_ref().get_ref().look(i, Leaves);
            branches.as_mut().call(i, Block(cx.offset(offset)));
            offset += leaves;
        }
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (mut branches, _, _) = self.project();
        let mut offset = 0;
        for i in 0..branches.count() {
            if cx.state.load() != super::state::Seen::Waiting {
                return;
            }
            let leaves = branches.as_ref().get_ref().look(i, Leaves);
            branches.as_mut().call(i, Repoll(cx.offset(offset)));
            offset += leaves;
        }
    }

    fn finish(mut self: Pin<&mut Self>, leaf: usize) -> B::Output {
        let (winner, offset) = self.owner_of(leaf);
        self.as_mut().withdraw_all_but(Some(winner));
        let (branches, _, _) = self.project();
        branches.call(winner, Finish(leaf - offset))
    }

    fn abandon(mut self: Pin<&mut Self>, leaf: usize) {
        let (winner, offset) = self.owner_of(leaf);
        self.as_mut().withdraw_all_but(Some(winner));
        let (branches, _, _) = self.project();
        branches.call(winner, Abandon(leaf - offset));
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.withdraw_all_but(None);
    }
}

/// A boxed op of any type with output `T`, for dynamic choices over ops of
/// different types. Make one with [`Op::boxed`].
///
/// ```
/// use fibra::{Op, BoxOp, always, choose, never};
///
/// let mut ops: Vec<BoxOp<'_, &str>> = Vec::new();
/// ops.push(never().boxed());
/// ops.push(always("ready").boxed());
/// assert_eq!(choose(ops).perform(), "ready");
/// ```
pub struct BoxOp<'a, T>(Pin<Box<dyn Op<Output = T> + Send + 'a>>);

impl<'a, T> BoxOp<'a, T> {
    pub(crate) fn new<O: Op<Output = T> + Send + 'a>(op: O) -> Self {
        Self(Box::pin(op))
    }
}

impl<T> Sealed for BoxOp<'_, T> {}

impl<T> Op for BoxOp<'_, T> {
    type Output = T;

    fn leaves(&self) -> usize {
        self.0.leaves()
    }

    fn commits_remotely(&self) -> bool {
        self.0.commits_remotely()
    }

    fn looks_again(&self) -> bool {
        self.0.looks_again()
    }

    fn installs_waker(&self) -> bool {
        self.0.installs_waker()
    }

    fn try_leaves_nothing(&self) -> bool {
        self.0.try_leaves_nothing()
    }

    fn prepare(self: Pin<&mut Self>) {
        self.get_mut().0.as_mut().prepare();
    }

    fn try_now(self: Pin<&mut Self>) -> Option<T> {
        self.get_mut().0.as_mut().try_now()
    }

    fn try_or_publish(self: Pin<&mut Self>, cx: BlockCx<'_>) -> Tried<T> {
        self.get_mut().0.as_mut().try_or_publish(cx)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.get_mut().0.as_mut().block(cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.get_mut().0.as_mut().repoll(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> T {
        self.get_mut().0.as_mut().finish(leaf)
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        self.get_mut().0.as_mut().abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.get_mut().0.as_mut().withdraw();
    }
}

impl<O: Op> Sealed for Vec<O> {}

impl<O: Op> Branches for Vec<O> {
    type Output = O::Output;

    fn count(&self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn look<F: BranchLook<O::Output>>(&self, i: usize, f: F) -> F::Out {
        f.look(&self[i])
    }

    #[inline(always)]
    fn call<F: BranchCall<O::Output>>(self: Pin<&mut Self>, i: usize, f: F) -> F::Out {
        // SAFETY: the elements are structurally pinned: the `Choose` that owns
        // this Vec is !Unpin and never pushes, pops or reallocates it, so
        // elements stay in place until dropped with the Vec.
        f.call(unsafe { self.map_unchecked_mut(|v| &mut v[i]) })
    }
}

impl<O: Op, const N: usize> Sealed for [O; N] {}

impl<O: Op, const N: usize> Branches for [O; N] {
    type Output = O::Output;

    fn count(&self) -> usize {
        N
    }

    #[inline(always)]
    fn look<F: BranchLook<O::Output>>(&self, i: usize, f: F) -> F::Out {
        f.look(&self[i])
    }

    #[inline(always)]
    fn call<F: BranchCall<O::Output>>(self: Pin<&mut Self>, i: usize, f: F) -> F::Out {
        // SAFETY: array elements are structurally pinned; none is moved.
        f.call(unsafe { self.map_unchecked_mut(|v| &mut v[i]) })
    }
}

macro_rules! tuple_branches {
    ($n:literal; $($idx:tt $t:ident),+) => {
        impl<$($t),+> Sealed for ($($t,)+) {}

        impl<T, $($t: Op<Output = T>),+> Branches for ($($t,)+) {
            type Output = T;

            fn count(&self) -> usize {
                $n
            }

            #[inline]
            fn look<Step: BranchLook<T>>(&self, i: usize, f: Step) -> Step::Out {
                match i {
                    $($idx => f.look(&self.$idx),)+
                    _ => unreachable!("branch {i} of {}", $n),
                }
            }

            #[inline]
            fn call<Step: BranchCall<T>>(self: Pin<&mut Self>, i: usize, f: Step) -> Step::Out {
                // SAFETY: tuple fields are structurally pinned; none is moved.
                let this = unsafe { self.get_unchecked_mut() };
                match i {
                    // SAFETY: as above.
                    $($idx => f.call(unsafe { Pin::new_unchecked(&mut this.$idx) }),)+
                    _ => unreachable!("branch {i} of {}", $n),
                }
            }
        }
    };
}

tuple_branches!(1; 0 A);
tuple_branches!(2; 0 A, 1 B);
tuple_branches!(3; 0 A, 1 B, 2 C);
tuple_branches!(4; 0 A, 1 B, 2 C, 3 D);
tuple_branches!(5; 0 A, 1 B, 2 C, 3 D, 4 E);
tuple_branches!(6; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
tuple_branches!(7; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
tuple_branches!(8; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
tuple_branches!(9; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
tuple_branches!(10; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
tuple_branches!(11; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
tuple_branches!(12; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);
