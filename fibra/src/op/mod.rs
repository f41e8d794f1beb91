//! First-class synchronous operations ("ops", Concurrent ML's events).
//!
//! An op describes something that may happen in the future: a value arriving
//! on a channel, a send being accepted, a timeout. Building an op does
//! nothing; **performing** it waits until it *commits* and yields its result.
//! Ops compose before they are performed: [`choose`] commits exactly one of
//! several ops, [`Op::wrap`] maps the result, [`guard`] builds the op at
//! perform time and [`with_nack`] tells a branch that it lost.
//!
//! Perform an op with `.await` in any async context (fibra's runtime, tokio,
//! smol, `futures::executor::block_on`), with [`Op::perform`] on a plain OS
//! thread, or attempt it without waiting with [`Op::try_perform`].
//!
//! ```
//! use fibra::{Op, choose, bounded};
//!
//! let (tx_a, rx_a) = bounded::<i32>(1);
//! let (_tx_b, rx_b) = bounded::<&str>(1);
//! tx_a.try_send(7).unwrap();
//!
//! // Whichever channel has a value first; both branches yield a String.
//! let got = choose((
//!     rx_a.recv_op().wrap(|r| format!("a: {}", r.unwrap())),
//!     rx_b.recv_op().wrap(|r| format!("b: {}", r.unwrap())),
//! ))
//! .perform();
//! assert_eq!(got, "a: 7");
//! ```
//!
//! # The protocol
//!
//! Every perform runs the Concurrent ML protocol of Guile Fibers (see
//! `docs/op-protocol.md`): an optimistic **try** of every branch, then a
//! **block** phase in which each branch retries and, if nothing is ready,
//! publishes a waiter record, all sharing one fresh opstate so that at most
//! one branch commits. Races are settled on opstates; no perform ever holds
//! two resources' locks at once.

mod block_on;
mod choice;
mod combinators;
mod from_future;
mod nack;
mod perform;
mod quick;
pub(crate) mod rng;
pub(crate) mod slot;
pub(crate) mod state;
pub(crate) mod waiter;

pub use block_on::block_on;
pub(crate) use block_on::{check_blocking_allowed, forbid_blocking};
pub use choice::{BoxOp, Branches, Choose, choose, choose_biased};
pub use combinators::{Always, Guard, Never, Wrap, always, guard, never};
pub use from_future::{CellOp, FromFuture, FutureCell, from_future};
pub(crate) use nack::withdraw_unwound;
pub use nack::{Nack, WithNack, with_nack};
pub use perform::Perform;
pub(crate) use quick::Quick;
pub use rng::seed_choice_rng;

use state::OpState;
use std::pin::Pin;
use std::task::Waker;

/// Where a branch publishes itself during the block phase: the perform's
/// opstate and the branch's index among the perform's leaves.
///
/// This is part of fibra's internal op protocol; it cannot be built outside
/// fibra.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct BlockCx<'a> {
    pub(crate) state: &'a OpState,
    pub(crate) leaf: usize,
    /// The waker of the poll in progress, for leaves that are woken to look
    /// again rather than committed by a partner (see [`Op::repoll`]).
    pub(crate) waker: &'a Waker,
    /// No remote party can reach the opstate (the op does not
    /// [commit remotely](Op::commits_remotely)): only this thread moves it.
    pub(crate) exclusive: bool,
    /// The waker the op installs in the opstate (a clone) right before it
    /// publishes its record: `Some` only for an op that
    /// [installs its waker](Op::installs_waker), whose caller then left
    /// the opstate without one; `None` otherwise (the opstate has its
    /// waker, or needs none).
    pub(crate) install: Option<&'a Waker>,
}

impl<'a> BlockCx<'a> {
    /// The owner's `W -> C` (see [`OpState::claim`]); without a
    /// read-modify-write when nobody else can reach the opstate.
    pub(crate) fn claim(&self) -> Result<(), state::Seen> {
        if self.exclusive {
            self.state.claim_exclusive()
        } else {
            self.state.claim()
        }
    }

    /// The context of a branch `by` leaves on. Without `install`: a
    /// branch of several is never the opstate's only leaf
    /// (`Op::installs_waker`).
    fn offset(self, by: usize) -> Self {
        Self {
            leaf: self.leaf + by,
            install: None,
            ..self
        }
    }
}

/// What [`Op::try_or_publish`] did: the try phase of a perform that blocks
/// if nothing commits (`docs/op-protocol.md`, "Publishing in the try").
#[doc(hidden)]
pub enum Tried<T> {
    /// Committed now, with nothing of the perform published.
    Committed(T),
    /// Nothing ready; a record of the perform is published (the opstate
    /// holds the waker) and every leaf of the op took part in the block
    /// phase, which may already have committed the opstate.
    Published,
    /// Nothing ready and nothing published: `block` comes next.
    NotReady,
}

/// Implements `IntoFuture` (performing the op) for op types, so any op can
/// be `.await`ed directly.
macro_rules! op_into_future {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<$($g)*> std::future::IntoFuture for $t
        where
            $t: $crate::op::Op,
        {
            type Output = <$t as $crate::op::Op>::Output;
            type IntoFuture = $crate::op::Perform<$t>;

            fn into_future(self) -> Self::IntoFuture {
                $crate::op::Perform::new(self)
            }
        }
    )*};
}
pub(crate) use op_into_future;

op_into_future! {
    impl[T] Always<T>;
    impl[T] Never<T>;
    impl[O, F] Wrap<O, F>;
    impl[F, O] Guard<F, O>;
    impl[B] Choose<B>;
    impl['a, T] BoxOp<'a, T>;
    impl[] Nack;
    impl[F, O] WithNack<F, O>;
    impl[F: std::future::Future] FromFuture<F>;
    impl['c, F: std::future::Future + Unpin] CellOp<'c, F>;
}

pub(crate) mod sealed {
    /// Ops are built from fibra's primitives and combinators; the protocol
    /// methods are not a stable interface for other crates to implement.
    pub trait Sealed {}
}

/// A first-class synchronous operation yielding `Output` when it commits.
///
/// Create ops from fibra's resources ([`Receiver::recv_op`],
/// [`Sender::send_op`], …) and combinators ([`choose`], [`Op::wrap`],
/// [`guard`], [`with_nack`], [`always`], [`never()`]); perform them with
/// `.await`, [`Op::perform`] or [`Op::try_perform`]. An op is consumed by
/// performing it; build a new one (cheap: no allocation) for the next time.
///
/// The methods without documentation are fibra's internal protocol, hidden
/// from the docs; the trait is sealed.
///
/// [`Receiver::recv_op`]: crate::Receiver::recv_op
/// [`Sender::send_op`]: crate::Sender::send_op
///
/// # Examples
///
/// ```
/// use fibra::{Op, always};
///
/// let op = always(20).wrap(|x| x + 1).wrap(|x| x * 2);
/// assert_eq!(op.perform(), 42);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an op",
    label = "expected an op here",
    note = "choices and `select!` clauses take ops: use the `_op` methods (`recv_op()`, `send_op(v)`, `acquire_op()`, `join_op()`, ...), not the async methods",
    note = "`fibra::time::sleep(d)` is a future: its op is `fibra::time::after(d)`",
    note = "for a future of another library, `fibra::op::from_future(fut)` makes an op (or `fibra::op::FutureCell`, which keeps its output across choices)"
)]
pub trait Op: sealed::Sealed {
    /// What performing the op yields.
    type Output;

    /// Number of leaf branches (base ops) in this op.
    #[doc(hidden)]
    fn leaves(&self) -> usize {
        1
    }

    /// Whether a remote party may commit this op (and so needs the waker in
    /// the opstate). `false` only for ops whose every leaf commits itself
    /// when woken (`repoll`): then a blocking perform skips storing a waker
    /// clone. Asked after `prepare`.
    #[doc(hidden)]
    fn commits_remotely(&self) -> bool {
        true
    }

    /// Start of a perform: run guard and `with_nack` builders, in every
    /// branch, before anything is tried (CML evaluates all guards first).
    #[doc(hidden)]
    fn prepare(self: Pin<&mut Self>) {}

    /// Whether [`withdraw`](Self::withdraw) has nothing to undo after
    /// `prepare` and a try that published nothing (`try_now`, or
    /// `try_or_publish` returning `Committed` or `NotReady`): no guard
    /// built, no nack, no record. Then a choice skips withdrawing its
    /// losing branches after such a try, and `try_perform` skips the
    /// withdrawal of an op that found nothing. `false`, the default, is
    /// always correct.
    #[doc(hidden)]
    fn try_leaves_nothing(&self) -> bool {
        false
    }

    /// Whether [`repoll`](Self::repoll) may do anything: some leaf looks
    /// again when woken (commits itself, or re-registers its waker with
    /// its resource). `false` only for ops every leaf of which is committed
    /// by partners and does nothing in `repoll`: then a blocked op still
    /// waiting under a waker that wakes the same needs no look at all
    /// (`choose_all` skips its parts' looks). Asked after `prepare`.
    /// `true`, the default, is always correct.
    #[doc(hidden)]
    fn looks_again(&self) -> bool {
        true
    }

    /// Whether [`block`](Self::block) honours [`BlockCx::install`]: the op
    /// is a single leaf whose block publishes at most one record and
    /// installs that waker in the opstate just before. A caller whose op
    /// is the opstate's only leaf, blocked once, may then leave the
    /// opstate without a waker, and a block that commits at once clones
    /// none (`choose_all`'s parts). Combinators of several leaves answer
    /// `false` (and [`BlockCx::offset`] drops `install`): a second leaf
    /// would install after the first published. `false`, the default, is
    /// always correct.
    #[doc(hidden)]
    fn installs_waker(&self) -> bool {
        false
    }

    /// Optimistic phase: commit now if a partner is ready. Publishes nothing.
    #[doc(hidden)]
    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output>;

    /// Try phase of a perform that blocks if nothing commits: as
    /// [`try_now`](Self::try_now), except that a leaf which locked its
    /// resource and found nothing ready may publish its record under that
    /// lock, and the rest of the op then takes the block phase
    /// ([`Tried::Published`]; "Publishing in the try" in
    /// `docs/op-protocol.md`). By default, `try_now`.
    #[doc(hidden)]
    fn try_or_publish(self: Pin<&mut Self>, cx: BlockCx<'_>) -> Tried<Self::Output> {
        let _ = cx;
        match self.try_now() {
            Some(out) => Tried::Committed(out),
            None => Tried::NotReady,
        }
    }

    /// Block phase: for each leaf (numbered from `cx.leaf`), retry and
    /// publish a waiter if nothing is ready (under one lock, in either
    /// order); stop publishing once the opstate left `W`.
    #[doc(hidden)]
    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>);

    /// A later poll of a blocked perform whose opstate is still `W`: a leaf
    /// whose resource wakes it to look again (a mailbox: senders never touch
    /// the receiver's opstate) checks now and may commit itself (`W -> C ->
    /// SYNCED`), and re-registers `cx.waker` otherwise. Stop once the
    /// opstate left `W`. Most leaves are committed by their partners and do
    /// nothing here.
    ///
    /// No default: every op must say what it does here, so a wrapper cannot
    /// forget to forward it (leaves that are committed by partners do
    /// nothing).
    #[doc(hidden)]
    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>);

    /// The opstate is `SYNCED(leaf)` with `leaf` in this op: withdraw every
    /// other published leaf and produce the result.
    #[doc(hidden)]
    fn finish(self: Pin<&mut Self>, leaf: usize) -> Self::Output;

    /// Like `finish`, but the perform was dropped: nobody will take the
    /// result, so give any received value back to its resource.
    #[doc(hidden)]
    fn abandon(self: Pin<&mut Self>, leaf: usize);

    /// This op lost (another branch committed, the perform was cancelled
    /// before any commit, a `try_perform` found nothing, or the prepare or
    /// try phase unwound): remove every published record, reset built
    /// guards and fire nacks. Safe on a partly prepared op.
    #[doc(hidden)]
    fn withdraw(self: Pin<&mut Self>);

    /// Maps the result of this op with `f` when it commits (CML's `wrap`).
    ///
    /// `f` runs in the performing task after the commit, never under a lock.
    ///
    /// ```
    /// use fibra::{Op, always};
    /// assert_eq!(always(2).wrap(|x| x * 10).perform(), 20);
    /// ```
    fn wrap<F, U>(self, f: F) -> Wrap<Self, F>
    where
        Self: Sized,
        F: FnOnce(Self::Output) -> U,
    {
        Wrap::new(self, f)
    }

    /// Performs the op on the current OS thread, parking it until the op
    /// commits.
    ///
    /// # Panics
    ///
    /// Panics when called on a thread that runs async tasks for fibra's
    /// runtime: blocking there would stall every task on that worker; use
    /// `.await` instead. With the feature `tokio`, the same holds on a
    /// tokio current-thread runtime's thread, and on a tokio multi-thread
    /// worker the wait goes through `tokio::task::block_in_place`.
    ///
    /// ```
    /// use fibra::{Op, always};
    /// assert_eq!(always("done").perform(), "done");
    /// ```
    fn perform(self) -> Self::Output
    where
        Self: Sized,
    {
        block_on(Perform::new(self))
    }

    /// Commits the op now if it can, without waiting (Go's `default`,
    /// Cforall's `else`); otherwise gives the op back, unchanged, so nothing
    /// it carries (a value to send) is lost.
    ///
    /// ```
    /// use fibra::{Op, bounded};
    ///
    /// let (tx, rx) = bounded::<u8>(1);
    /// assert!(rx.recv_op().try_perform().is_err()); // empty: nothing now
    /// tx.send_op(5).try_perform().ok().unwrap().unwrap();
    /// // full: the op, with its value, comes back
    /// let op = tx.send_op(6).try_perform().unwrap_err();
    /// drop(op);
    /// assert_eq!(rx.try_recv(), Ok(5));
    /// ```
    // Always inline: an op passed and handed back by value is copied in
    // and out of a call (640 bytes for a choice over 16 channel ops), and
    // a caller that retries builds a new op and drops the old one.
    #[inline(always)]
    fn try_perform(mut self) -> Result<Self::Output, Self>
    where
        Self: Sized,
    {
        match try_in_place(&mut self) {
            Some(out) => Ok(out),
            None => Err(self),
        }
    }

    /// Boxes the op for a dynamic choice over ops of different types.
    ///
    /// ```
    /// use fibra::{Op, BoxOp, always, choose, never};
    ///
    /// let ops: Vec<BoxOp<'_, i32>> = vec![never().boxed(), always(3).boxed()];
    /// assert_eq!(choose(ops).perform(), 3);
    /// ```
    fn boxed<'a>(self) -> BoxOp<'a, Self::Output>
    where
        Self: Sized + Send + 'a,
    {
        BoxOp::new(self)
    }
}

/// Tries `op` without waiting, as [`Op::try_perform`] does, leaving it as
/// it was before if nothing commits: prepares, tries, and withdraws what
/// the try built (guards, nacks) when it may have built anything. The op
/// may be moved afterwards: `try_now` publishes nothing and keeps no
/// pointer into the op after it returns (true of every op: the trait is
/// sealed).
#[inline(always)]
pub(crate) fn try_in_place<O: Op>(op: &mut O) -> Option<O::Output> {
    // SAFETY: see above; the pin only lives for this call.
    let pinned = unsafe { Pin::new_unchecked(&mut *op) };
    // If a builder, predicate or `wrap` panics, withdraw on the way out
    // (firing the nacks of the branches not chosen).
    let mut unwinding = WithdrawOnUnwind(pinned);
    unwinding.0.as_mut().prepare();
    let tried = unwinding.0.as_mut().try_now();
    std::mem::forget(unwinding);
    if tried.is_none() && !op.try_leaves_nothing() {
        // SAFETY: as above; `withdraw` after a failed try only resets
        // per-perform state (built guards, nacks) and publishes nothing.
        unsafe { Pin::new_unchecked(op) }.withdraw();
    }
    tried
}

/// Armed while `try_perform` prepares and tries (then forgotten): if dropped,
/// that unwound, so the op is withdrawn, firing its nacks.
struct WithdrawOnUnwind<'a, O: Op + ?Sized>(Pin<&'a mut O>);

impl<O: Op + ?Sized> Drop for WithdrawOnUnwind<'_, O> {
    fn drop(&mut self) {
        nack::withdraw_unwound(self.0.as_mut());
    }
}

#[cfg(all(test, loom))]
mod loom_models;
