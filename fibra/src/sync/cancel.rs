//! `CancellationToken`: a tree of cancellation flags whose cancellation is
//! an op.
//!
//! # Invariants
//!
//! * Each node's flag is an [`IVar<()>`]: cancelling writes it once, and
//!   waiting is its op, so this file adds no protocol of its own.
//! * A node's `children` (under its lock) holds weak references to the
//!   child nodes made while it was not cancelled. `cancel` writes the flag
//!   *before* it takes the lock and empties the list; `child_token` looks
//!   at the flag *under* the lock before it adds a child. So either the
//!   child is added before `cancel` empties the list (and is cancelled by
//!   it), or `child_token` sees the flag (and cancels the child itself): a
//!   child of a cancelled token is always cancelled.
//! * Cancellation goes down the tree iteratively (no recursion, whatever
//!   the depth), and no user code or wake runs under a lock.

use super::ivar::{GetRefOp, IVar};
use crate::loom::Lock;
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Weak};

struct Node {
    cancelled: IVar<()>,
    children: Lock<Vec<Weak<Node>>>,
}

impl Node {
    fn new() -> Self {
        Self {
            cancelled: IVar::new(),
            children: Lock::new(Vec::new()),
        }
    }
}

/// A token for cooperative cancellation (tokio-util's
/// `CancellationToken`): [`cancel`](CancellationToken::cancel) it once, and
/// every task waiting in [`cancelled_op`](CancellationToken::cancelled_op)
/// (an op: put it in a choice beside the work it cancels) wakes up.
/// Clones share one flag; [`child_token`](CancellationToken::child_token)
/// makes a token that is cancelled with its parent but can also be
/// cancelled alone.
///
/// # Examples
///
/// ```
/// use fibra::{CancellationToken, Op, choose};
///
/// fibra::run(async {
///     let token = CancellationToken::new();
///     let (tx, rx) = fibra::channel::<u32>();
///     let worker = fibra::spawn({
///         let token = token.clone();
///         async move {
///             let mut sum = 0;
///             loop {
///                 // Each step waits for a message or for cancellation.
///                 let next = choose((
///                     rx.recv_op().wrap(|r| r.ok()),
///                     token.cancelled_op().wrap(|()| None),
///                 ))
///                 .await;
///                 match next {
///                     Some(v) => sum += v,
///                     None => return sum,
///                 }
///             }
///         }
///     });
///     tx.send(2).await.unwrap();
///     tx.send(3).await.unwrap();
///     token.cancel();
///     assert_eq!(worker.await.unwrap(), 5);
/// });
/// ```
#[derive(Clone)]
pub struct CancellationToken {
    node: Arc<Node>,
}

impl CancellationToken {
    /// A token not cancelled yet.
    ///
    /// ```
    /// assert!(!fibra::CancellationToken::new().is_cancelled());
    /// ```
    pub fn new() -> Self {
        Self {
            node: Arc::new(Node::new()),
        }
    }

    /// A child token: cancelled when this one is (at once, if this one is
    /// cancelled already), while cancelling the child leaves this one
    /// alone.
    ///
    /// ```
    /// let parent = fibra::CancellationToken::new();
    /// let child = parent.child_token();
    /// child.cancel();
    /// assert!(!parent.is_cancelled());
    /// let other = parent.child_token();
    /// parent.cancel();
    /// assert!(other.is_cancelled());
    /// ```
    pub fn child_token(&self) -> CancellationToken {
        let child = Arc::new(Node::new());
        {
            let mut children = self.node.children.lock();
            if !self.node.cancelled.is_full() {
                // Dropped children leave dead entries: sweep them whenever
                // the list doubles (amortised O(1) per child).
                if children.len() >= 8 && children.len().is_power_of_two() {
                    children.retain(|c| c.strong_count() > 0);
                }
                children.push(Arc::downgrade(&child));
                return CancellationToken { node: child };
            }
        }
        // The parent is cancelled (module invariants).
        let _ = child.cancelled.put(());
        CancellationToken { node: child }
    }

    /// Cancels this token and every token below it; wakes every waiter.
    /// Cancelling again does nothing.
    ///
    /// ```
    /// let token = fibra::CancellationToken::new();
    /// token.cancel();
    /// token.cancel();
    /// assert!(token.is_cancelled());
    /// ```
    pub fn cancel(&self) {
        let mut pending = vec![self.node.clone()];
        while let Some(node) = pending.pop() {
            if node.cancelled.put(()).is_err() {
                // Cancelled before: so were its children.
                continue;
            }
            let children = std::mem::take(&mut *node.children.lock());
            pending.extend(children.iter().filter_map(Weak::upgrade));
        }
    }

    /// Whether the token is cancelled.
    ///
    /// ```
    /// let token = fibra::CancellationToken::new();
    /// assert!(!token.is_cancelled());
    /// token.cancel();
    /// assert!(token.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.node.cancelled.is_full()
    }

    /// The op of waiting for cancellation: commits once the token is
    /// cancelled (at once if it is already).
    ///
    /// ```
    /// use fibra::{CancellationToken, Op, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let token = CancellationToken::new();
    /// let cancelled = choose((
    ///     token.cancelled_op().wrap(|()| true),
    ///     after(Duration::from_millis(10)).wrap(|()| false),
    /// ))
    /// .perform();
    /// assert!(!cancelled);
    /// token.cancel();
    /// token.cancelled_op().perform();
    /// ```
    pub fn cancelled_op(&self) -> CancelledOp<'_> {
        CancelledOp(self.node.cancelled.get_ref_op())
    }

    /// Waits until the token is cancelled.
    ///
    /// ```
    /// # fibra::run(async {
    /// let token = fibra::CancellationToken::new();
    /// let waiter = fibra::spawn({
    ///     let token = token.clone();
    ///     async move { token.cancelled().await }
    /// });
    /// token.cancel();
    /// waiter.await.unwrap();
    /// # });
    /// ```
    pub async fn cancelled(&self) {
        self.cancelled_op().await
    }

    /// Waits until the token is cancelled, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let token = fibra::CancellationToken::new();
    /// let t = std::thread::spawn({
    ///     let token = token.clone();
    ///     move || token.cancelled_blocking()
    /// });
    /// token.cancel();
    /// t.join().unwrap();
    /// ```
    pub fn cancelled_blocking(&self) {
        self.cancelled_op().perform()
    }

    /// A guard that cancels this token when dropped (unless
    /// [disarmed](DropGuard::disarm)).
    ///
    /// ```
    /// let token = fibra::CancellationToken::new();
    /// {
    ///     let _guard = token.clone().drop_guard();
    /// }
    /// assert!(token.is_cancelled());
    /// ```
    pub fn drop_guard(self) -> DropGuard {
        DropGuard { token: Some(self) }
    }
}

impl Default for CancellationToken {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationToken")
            .field("is_cancelled", &self.is_cancelled())
            .finish()
    }
}

/// Cancels its token when dropped: made by
/// [`CancellationToken::drop_guard`].
///
/// ```
/// let token = fibra::CancellationToken::new();
/// let guard = token.clone().drop_guard();
/// let token_again = guard.disarm(); // not cancelled after all
/// assert!(!token_again.is_cancelled());
/// ```
#[must_use = "dropping the guard cancels the token at once"]
#[derive(Debug)]
pub struct DropGuard {
    token: Option<CancellationToken>,
}

impl DropGuard {
    /// Gives the token back without cancelling it.
    ///
    /// ```
    /// let guard = fibra::CancellationToken::new().drop_guard();
    /// let token = guard.disarm();
    /// assert!(!token.is_cancelled());
    /// ```
    pub fn disarm(mut self) -> CancellationToken {
        self.token
            .take()
            .expect("a guard holds its token until dropped")
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if let Some(token) = &self.token {
            token.cancel();
        }
    }
}

/// The op of waiting for a [`CancellationToken`]'s cancellation: made by
/// [`CancellationToken::cancelled_op`].
///
/// ```
/// use fibra::{CancellationToken, CancelledOp, Op};
///
/// let token = CancellationToken::new();
/// token.cancel();
/// let op: CancelledOp<'_> = token.cancelled_op();
/// op.perform();
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct CancelledOp<'a>(GetRefOp<'a, ()>);

impl<'a> CancelledOp<'a> {
    fn inner(self: Pin<&mut Self>) -> Pin<&mut GetRefOp<'a, ()>> {
        // SAFETY: structural pinning of the only field.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }
    }
}

impl Sealed for CancelledOp<'_> {}

impl Op for CancelledOp<'_> {
    type Output = ();

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.inner().repoll(cx);
    }

    fn try_now(self: Pin<&mut Self>) -> Option<()> {
        self.inner().try_now().map(drop)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.inner().block(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) {
        self.inner().finish(leaf);
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        self.inner().abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.inner().withdraw();
    }
}

crate::op::op_into_future! {
    impl['a] CancelledOp<'a>;
}
