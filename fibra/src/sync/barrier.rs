//! `Barrier`: `n` parties wait for each other; the wait is an op.
//!
//! # Invariants
//!
//! * `state` (under its lock) holds the parties waiting now, as records in
//!   `waiters`, and their count `arrived` (live records only: a wait that
//!   withdraws while its record is queued counts itself out). There is no
//!   lock-free step.
//! * The party whose arrival makes `n` (in its try, or in the retry of its
//!   block phase, both under the lock) is the leader: under the same lock
//!   it commits every queued record (`Won::complete`), resets `arrived`
//!   and returns at once. Records committed so belong to the generation
//!   just released; a wait that arrives afterwards starts the next one.
//! * A barrier releases `n` parties at a time, and a wait that loses a
//!   choice does not count — except in one race, which a multi-party
//!   commit cannot exclude with two-party opstates: a queued wait whose
//!   perform committed another branch, met by the leader before it
//!   withdrew its record, is stale; the leader counts it arrived anyway and
//!   releases the others (it does not hold them back for a party that left
//!   in the same instant).
//! * No waker is woken while the lock is held.

use crate::loom::Lock;
use crate::op::waiter::{Registration, WaitQueue};
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::fmt;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::Waker;

struct State {
    arrived: usize,
    waiters: WaitQueue<()>,
}

/// A barrier for `n` parties (std's and tokio's `Barrier`): each
/// [`wait`](Barrier::wait) blocks until `n` waits have arrived, then all
/// `n` go on together and the barrier is ready for the next round. Waiting
/// is an op ([`wait_op`](Barrier::wait_op)), so it composes with timeouts
/// and every other op in a choice: a wait that loses a choice (or is
/// dropped before the barrier fills) leaves the round and does not count.
///
/// One party of each round, the last to arrive, is its *leader*
/// ([`BarrierWaitResult::is_leader`]).
///
/// # Examples
///
/// ```
/// use fibra::Barrier;
/// use std::sync::Arc;
///
/// let barrier = Arc::new(Barrier::new(3));
/// let threads: Vec<_> = (0..3)
///     .map(|_| {
///         let b = barrier.clone();
///         std::thread::spawn(move || b.wait_blocking().is_leader())
///     })
///     .collect();
/// let leaders = threads
///     .into_iter()
///     .map(|t| t.join().unwrap())
///     .filter(|&leader| leader)
///     .count();
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    n: usize,
    state: Lock<State>,
}

/// What a [`Barrier`] wait yields: whether this party led its round.
///
/// ```
/// use fibra::{Barrier, BarrierWaitResult, Op};
///
/// let b = Barrier::new(1);
/// let r: BarrierWaitResult = b.wait_op().perform();
/// assert!(r.is_leader(), "the only party leads its round");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierWaitResult(bool);

impl BarrierWaitResult {
    /// Whether this party was the leader of its round (the last to arrive):
    /// exactly one per round.
    ///
    /// ```
    /// let b = fibra::Barrier::new(1);
    /// assert!(b.wait_blocking().is_leader());
    /// ```
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

impl Barrier {
    /// A barrier for `n` parties (`0` counts as `1`: every wait goes through
    /// at once, as a leader).
    ///
    /// ```
    /// let b = fibra::Barrier::new(2);
    /// assert_eq!(format!("{b:?}"), "Barrier { n: 2, arrived: 0 }");
    /// ```
    pub fn new(n: usize) -> Self {
        Self {
            n: n.max(1),
            state: Lock::new(State {
                arrived: 0,
                waiters: WaitQueue::default(),
            }),
        }
    }

    /// The op of waiting at the barrier: commits when the round is full
    /// (this wait, or a later one, making `n`). A wait that loses a choice
    /// leaves the round, except when it loses at the very moment the round
    /// fills: then it counts, and the others go on without it (a release
    /// of `n` parties cannot be one atomic commit with a choice elsewhere).
    ///
    /// ```
    /// use fibra::{Barrier, Op, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let b = Barrier::new(2);
    /// // Nobody else comes: give up after 10 ms, leaving the round.
    /// let passed = choose((
    ///     b.wait_op().wrap(|_| true),
    ///     after(Duration::from_millis(10)).wrap(|()| false),
    /// ))
    /// .perform();
    /// assert!(!passed);
    /// assert_eq!(format!("{b:?}"), "Barrier { n: 2, arrived: 0 }");
    /// ```
    pub fn wait_op(&self) -> BarrierWaitOp<'_> {
        BarrierWaitOp {
            barrier: self,
            slot: (),
            published: None,
            _pinned: PhantomPinned,
        }
    }

    /// Waits for the round to fill.
    ///
    /// Cancel-safe: a wait dropped before its round filled leaves it.
    ///
    /// ```
    /// # fibra::run(async {
    /// let b = std::sync::Arc::new(fibra::Barrier::new(2));
    /// let other = fibra::spawn({
    ///     let b = b.clone();
    ///     async move { b.wait().await.is_leader() }
    /// });
    /// let me = b.wait().await.is_leader();
    /// assert!(me != other.await.unwrap()); // one leader
    /// # });
    /// ```
    pub async fn wait(&self) -> BarrierWaitResult {
        self.wait_op().await
    }

    /// Waits for the round to fill, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let b = fibra::Barrier::new(1);
    /// assert!(b.wait_blocking().is_leader());
    /// ```
    pub fn wait_blocking(&self) -> BarrierWaitResult {
        self.wait_op().perform()
    }

    /// Under the lock: if one more arrival fills the round, releases every
    /// queued party, returning the wakers (the caller leads).
    fn fill(&self, st: &mut State) -> Option<Vec<Waker>> {
        if st.arrived + 1 < self.n {
            return None;
        }
        let mut wakers = Vec::new();
        while let Some(w) = st.waiters.pop_front() {
            if let Some(won) = w.win() {
                wakers.extend(won.complete(|()| {}));
            }
            // Else stale: counted anyway (module invariants).
        }
        st.arrived = 0;
        Some(wakers)
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .field("arrived", &self.state.lock().arrived)
            .finish()
    }
}

/// The op of waiting at a [`Barrier`]: made by [`Barrier::wait_op`].
///
/// ```
/// use fibra::{Barrier, BarrierWaitOp, Op};
///
/// let b = Barrier::new(1);
/// let op: BarrierWaitOp<'_> = b.wait_op();
/// assert!(op.perform().is_leader());
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct BarrierWaitOp<'a> {
    barrier: &'a Barrier,
    /// Nothing to carry: being committed is being released.
    slot: (),
    published: Option<Registration>,
    _pinned: PhantomPinned,
}

impl<'a> BarrierWaitOp<'a> {
    fn project(self: Pin<&mut Self>) -> (&'a Barrier, &(), &mut Option<Registration>) {
        // SAFETY: nothing is moved out; `published` is not structurally
        // pinned and the slot is only pointed at.
        let this = unsafe { self.get_unchecked_mut() };
        (this.barrier, &this.slot, &mut this.published)
    }
}

impl Sealed for BarrierWaitOp<'_> {}

impl Op for BarrierWaitOp<'_> {
    type Output = BarrierWaitResult;

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<BarrierWaitResult> {
        let b = self.barrier;
        let wakers = b.fill(&mut b.state.lock())?;
        wakers.into_iter().for_each(Waker::wake);
        Some(BarrierWaitResult(true))
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (b, slot, published) = self.project();
        let wakers = {
            let mut st = b.state.lock();
            if st.arrived + 1 >= b.n {
                // The round filled since our try: we lead, if no other
                // branch of ours committed meanwhile.
                if cx.state.claim().is_err() {
                    return;
                }
                let wakers = b.fill(&mut st).expect("the round is full");
                cx.state.commit_own(cx.leaf);
                wakers
            } else {
                *published = Some(st.waiters.publish(cx, slot));
                st.arrived += 1;
                return;
            }
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> BarrierWaitResult {
        let published = self.project().2;
        // Committed by a leader (who removed our record: we follow), or by
        // ourselves in the retry (we lead, nothing published).
        BarrierWaitResult(published.take().is_none())
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        // Released with the round; nothing to give back.
        *self.project().2 = None;
    }

    fn withdraw(self: Pin<&mut Self>) {
        let (b, _, published) = self.project();
        if let Some(reg) = published.take() {
            let mut st = b.state.lock();
            if st.waiters.remove(reg).is_some() {
                // Still queued: we leave the round.
                st.arrived -= 1;
            }
        }
    }
}

crate::op::op_into_future! {
    impl['a] BarrierWaitOp<'a>;
}
