//! Ops from any future: [`from_future`] (owns the future) and
//! [`FutureCell`] (a future and its output kept by the caller across
//! choices).
//!
//! A future is a leaf that commits itself, like a mailbox receive: nobody
//! else can commit it (the future's own waker brings the task back), so it
//! publishes no record and [never commits remotely](Op::commits_remotely).
//!
//! * **try**: an output kept from an earlier perform is yielded at once;
//!   else the future is polled once (with a no-op waker: the try phase has
//!   none, and a future re-registers the real one at its next poll).
//! * **block** and every **repoll**: the future is polled with the task's
//!   waker. If it is ready, the leaf claims the opstate (`W -> C ->
//!   SYNCED`, the owner's retry path of `state.rs`); if another branch
//!   committed first, the claim fails and the output is *kept* (in the op,
//!   or in the caller's [`FutureCell`]) for whoever performs it next.
//!
//! Invariants: a future is never polled after it returned `Ready` (the
//! source drops it then); an output leaves the source only through a
//! commit of this leaf (`try_now`'s `Some`, or a won claim then `finish`),
//! or `take_output`; `abandon` puts a committed output back.
//!
//! Unlike fibra's own ops, a future cannot commit atomically with the
//! choice: polling it to completion *is* its effect (bytes read, a query
//! answered), and that happens before the claim that decides whether this
//! branch wins. Hence the kept output, instead of an effect undone.

use super::{BlockCx, Op, sealed::Sealed};
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Where a future op's future and its leftover output live.
trait Source {
    type Out;
    /// The output of an earlier completion that no branch took.
    fn take_kept(self: Pin<&mut Self>) -> Option<Self::Out>;
    /// Keeps an output that this leaf could not commit.
    fn keep(self: Pin<&mut Self>, out: Self::Out);
    /// Polls the future; `Pending` for good once it is spent.
    fn poll_future(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Out>;
}

/// `try_now` of a future leaf.
fn try_now<S: Source>(mut src: Pin<&mut S>) -> Option<S::Out> {
    if let Some(out) = src.as_mut().take_kept() {
        return Some(out);
    }
    match src.poll_future(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// `block` and `repoll` of a future leaf: poll with the task's waker, and
/// commit on completion, or keep the output if another branch won.
fn poll_and_commit<S: Source>(mut src: Pin<&mut S>, won: &mut Option<S::Out>, cx: BlockCx<'_>) {
    if let Poll::Ready(out) = src.as_mut().poll_future(&mut Context::from_waker(cx.waker)) {
        if cx.claim().is_ok() {
            *won = Some(out);
            cx.state.commit_own(cx.leaf);
        } else {
            src.keep(out);
        }
    }
}

/// An op that commits when `future` completes, yielding its output: lets a
/// choice or [`select!`](crate::select!) mix fibra's ops with futures of
/// any library (a tokio timer, another library's socket read, a database
/// query).
///
/// The op owns the future and polls it in the performing task (with that
/// task's waker), so it works on any executor the future itself works on.
/// When the op loses a choice, the future is dropped with the op
/// (cancelled), as tokio's `select!` drops the futures of the branches that
/// lose.
///
/// # How it differs from fibra's own ops
///
/// A fibra op commits atomically with the choice: a receive that loses
/// took nothing. A future cannot: its completion is its effect, and it
/// completes in its poll, before the claim that decides the choice. So if
/// the future completes in the same instant another branch commits (only
/// possible while the perform waits: a partner commits that other branch
/// from another thread, or from inside this future's own poll), this
/// branch loses *with* an output. That output is never dropped silently by
/// the protocol: it stays in the op, and performing the op again (as
/// [`WaitUntil`](crate::WaitUntil) and [`choose_all`](crate::choose_all)
/// do, round after round) yields it at once; [`FromFuture::into_output`]
/// takes it from an op that came back from
/// [`try_perform`](Op::try_perform). A `select!` drops its ops when it
/// ends, and such an output with them: when that must not happen (the
/// output holds data read from a socket), poll through a [`FutureCell`],
/// which the caller owns and which keeps the output across choices.
///
/// The first poll happens in the choice's try phase with a waker that does
/// nothing; if the future is not ready, it is polled again with the task's
/// waker before the task waits. The future must be `Send` for the op to be
/// [boxed](Op::boxed); [`select!`](crate::select!) and
/// [`choose`](crate::choose) do not need it.
///
/// # Examples
///
/// A fibra channel and a foreign future (here a `futures` oneshot) in one
/// `select!`:
///
/// ```
/// use fibra::{bounded, op::from_future, select};
///
/// # fibra::run(async {
/// let (_tx, rx) = bounded::<u32>(1);
/// let (reply_tx, reply) = futures::channel::oneshot::channel::<&str>();
/// std::thread::spawn(move || reply_tx.send("pong").unwrap());
/// let got = select! {
///     v = rx.recv_op() => format!("channel: {v:?}"),
///     r = from_future(reply) => format!("oneshot: {}", r.unwrap()),
/// };
/// assert_eq!(got, "oneshot: pong");
/// # });
/// ```
///
/// A tokio timer as a timeout, in a tokio program:
///
/// ```
/// use fibra::{channel, op::from_future, select};
/// use std::time::Duration;
///
/// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
/// # rt.block_on(async {
/// let (_tx, rx) = channel::<u32>();
/// let got = select! {
///     v = rx.recv_op() => v.ok(),
///     () = from_future(tokio::time::sleep(Duration::from_millis(5))) => None,
/// };
/// assert_eq!(got, None);
/// # });
/// ```
pub fn from_future<F: Future>(future: F) -> FromFuture<F> {
    FromFuture {
        source: Owned {
            future: Some(future),
            kept: None,
        },
        won: None,
    }
}

pin_project! {
    /// The future and kept output of a [`FromFuture`].
    struct Owned<F: Future> {
        #[pin]
        future: Option<F>,
        kept: Option<F::Output>,
    }
}

impl<F: Future> Source for Owned<F> {
    type Out = F::Output;

    fn take_kept(self: Pin<&mut Self>) -> Option<F::Output> {
        self.project().kept.take()
    }

    fn keep(self: Pin<&mut Self>, out: F::Output) {
        *self.project().kept = Some(out);
    }

    fn poll_future(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        let Some(future) = this.future.as_mut().as_pin_mut() else {
            return Poll::Pending;
        };
        let out = std::task::ready!(future.poll(cx));
        // Never polled again: dropped in place.
        this.future.set(None);
        Poll::Ready(out)
    }
}

pin_project! {
    /// The op returned by [`from_future`].
    ///
    /// ```
    /// use fibra::Op;
    /// use fibra::op::{FromFuture, from_future};
    ///
    /// let op: FromFuture<_> = from_future(async { 6 * 7 });
    /// assert_eq!(op.perform(), 42);
    /// ```
    #[must_use = "an op does nothing unless performed"]
    pub struct FromFuture<F: Future> {
        #[pin]
        source: Owned<F>,
        // The output this leaf committed, until `finish` takes it.
        won: Option<F::Output>,
    }
}

impl<F: Future> FromFuture<F> {
    /// The output of a future that completed while another branch won,
    /// from an op that was given back by
    /// [`try_perform`](Op::try_perform).
    ///
    /// ```
    /// use fibra::Op;
    /// use fibra::op::from_future;
    ///
    /// // Never ready: the attempt gives the op back, with no output.
    /// let op = from_future(std::future::pending::<u8>()).try_perform().unwrap_err();
    /// assert_eq!(op.into_output(), None);
    /// ```
    pub fn into_output(self) -> Option<F::Output> {
        self.source.kept
    }
}

impl<F: Future> fmt::Debug for FromFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FromFuture")
            .field("completed", &self.source.future.is_none())
            .finish_non_exhaustive()
    }
}

impl<F: Future> Sealed for FromFuture<F> {}

impl<F: Future> Op for FromFuture<F> {
    type Output = F::Output;

    fn commits_remotely(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<F::Output> {
        try_now(self.project().source)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let this = self.project();
        poll_and_commit(this.source, this.won, cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let this = self.project();
        poll_and_commit(this.source, this.won, cx);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> F::Output {
        self.project()
            .won
            .take()
            .expect("a committed future op has its output")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        let this = self.project();
        if let Some(out) = this.won.take() {
            this.source.keep(out);
        }
    }

    // Nothing published: the future keeps the task's waker, and dropping
    // the op drops it.
    fn withdraw(self: Pin<&mut Self>) {}
}

/// A future, and once it completed its output, kept by the caller across
/// choices: [`op`](FutureCell::op) is an op that commits with the output.
/// If the future completes while another branch of the choice wins, the
/// output stays in the cell, and the next `op()` commits with it at once
/// (or take it with [`take_output`](FutureCell::take_output)). Nothing the
/// future produced is lost, and the future keeps running from one choice
/// to the next (tokio's `select!` on `&mut fut`).
///
/// `op` needs `F: Unpin`; pin a future that is not first
/// (`std::pin::pin!(fut)` or `Box::pin(fut)`). Once the output is taken,
/// the cell is spent: its op never commits again
/// ([`is_terminated`](FutureCell::is_terminated)).
///
/// # Examples
///
/// A long computation raced, again and again, with messages:
///
/// ```
/// use fibra::op::FutureCell;
/// use fibra::{bounded, select};
///
/// # fibra::run(async {
/// let (tx, rx) = bounded::<u32>(4);
/// let (done_tx, done) = futures::channel::oneshot::channel::<u64>();
/// let mut result = FutureCell::new(done);
/// let worker = std::thread::spawn(move || {
///     for i in 0..3 {
///         fibra::block_on(tx.send(i)).unwrap();
///     }
///     done_tx.send(99).unwrap();
/// });
/// let mut messages = 0;
/// let total = loop {
///     select! {
///         m = rx.recv_op() => if m.is_ok() { messages += 1 },
///         r = result.op() => break r.unwrap(),
///     }
/// };
/// worker.join().unwrap();
/// // The messages not received before the result are still in the channel.
/// let left = std::iter::from_fn(|| rx.try_recv().ok()).count();
/// assert_eq!(messages + left, 3);
/// assert_eq!(total, 99);
/// assert!(result.is_terminated());
/// # });
/// ```
pub struct FutureCell<F: Future> {
    future: Option<F>,
    output: Option<F::Output>,
}

impl<F: Future> FutureCell<F> {
    /// A cell holding `future`, not polled yet.
    ///
    /// ```
    /// let cell = fibra::op::FutureCell::new(async { 1 });
    /// assert!(!cell.is_terminated());
    /// ```
    pub fn new(future: F) -> Self {
        Self {
            future: Some(future),
            output: None,
        }
    }

    /// The op of this cell: commits with the output when the future
    /// completes (or at once if an earlier choice left it here).
    ///
    /// ```
    /// use fibra::Op;
    /// use fibra::op::FutureCell;
    ///
    /// let mut cell = FutureCell::new(std::future::ready(5));
    /// assert_eq!(cell.op().perform(), 5);
    /// assert!(cell.op().try_perform().is_err()); // spent: never again
    /// ```
    pub fn op(&mut self) -> CellOp<'_, F>
    where
        F: Unpin,
    {
        CellOp {
            cell: self,
            won: None,
        }
    }

    /// Takes the output, if the future completed and no op took it.
    ///
    /// ```
    /// use fibra::op::FutureCell;
    ///
    /// let mut cell = FutureCell::new(std::future::ready(()));
    /// assert_eq!(cell.take_output(), None); // not polled yet
    /// ```
    pub fn take_output(&mut self) -> Option<F::Output> {
        self.output.take()
    }

    /// Whether an output is waiting in the cell.
    ///
    /// ```
    /// let cell = fibra::op::FutureCell::new(async { 1 });
    /// assert!(!cell.is_ready());
    /// ```
    pub fn is_ready(&self) -> bool {
        self.output.is_some()
    }

    /// Whether the cell is spent: the future completed and its output was
    /// taken. Its op then never commits.
    ///
    /// ```
    /// use fibra::Op;
    ///
    /// let mut cell = fibra::op::FutureCell::new(std::future::ready(1));
    /// cell.op().perform();
    /// assert!(cell.is_terminated());
    /// ```
    pub fn is_terminated(&self) -> bool {
        self.future.is_none() && self.output.is_none()
    }
}

impl<F: Future> fmt::Debug for FutureCell<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FutureCell")
            .field("ready", &self.is_ready())
            .field("terminated", &self.is_terminated())
            .finish_non_exhaustive()
    }
}

impl<F: Future + Unpin> Source for &mut FutureCell<F> {
    type Out = F::Output;

    fn take_kept(self: Pin<&mut Self>) -> Option<F::Output> {
        self.get_mut().output.take()
    }

    fn keep(self: Pin<&mut Self>, out: F::Output) {
        self.get_mut().output = Some(out);
    }

    fn poll_future(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let cell = &mut **self.get_mut();
        let Some(future) = cell.future.as_mut() else {
            return Poll::Pending;
        };
        let out = std::task::ready!(Pin::new(future).poll(cx));
        // Never polled again.
        cell.future = None;
        Poll::Ready(out)
    }
}

/// The op of a [`FutureCell`], made by [`FutureCell::op`].
///
/// ```
/// use fibra::Op;
/// use fibra::op::{CellOp, FutureCell};
///
/// let mut cell = FutureCell::new(std::future::ready('x'));
/// let op: CellOp<'_, _> = cell.op();
/// assert_eq!(op.perform(), 'x');
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct CellOp<'c, F: Future> {
    cell: &'c mut FutureCell<F>,
    won: Option<F::Output>,
}

impl<F: Future> fmt::Debug for CellOp<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CellOp").field("cell", &self.cell).finish()
    }
}

impl<F: Future> Sealed for CellOp<'_, F> {}

// Nothing of the op is pinned: the future is `Unpin` and lives in the cell.
impl<F: Future> Unpin for CellOp<'_, F> {}

impl<F: Future + Unpin> Op for CellOp<'_, F> {
    type Output = F::Output;

    fn commits_remotely(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<F::Output> {
        try_now(Pin::new(&mut self.get_mut().cell))
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let this = self.get_mut();
        poll_and_commit(Pin::new(&mut this.cell), &mut this.won, cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let this = self.get_mut();
        poll_and_commit(Pin::new(&mut this.cell), &mut this.won, cx);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> F::Output {
        self.get_mut()
            .won
            .take()
            .expect("a committed future op has its output")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        let this = self.get_mut();
        if let Some(out) = this.won.take() {
            this.cell.output = Some(out);
        }
    }

    fn withdraw(self: Pin<&mut Self>) {}
}

impl<F: Future> Drop for CellOp<'_, F> {
    fn drop(&mut self) {
        // A committed output that no `finish` took (the perform unwound
        // between the commit and `finish`): back to the cell.
        if let Some(out) = self.won.take() {
            self.cell.output = Some(out);
        }
    }
}
