//! `choose_all` (the parasitic threads paper's `chooseAll`): an op that
//! performs every one of its parts and commits once all of them have.
//!
//! Each part is performed in place as a perform of its own: it has its own
//! opstate, publishes its own records, and partners commit it on their own
//! while the others wait (the parts wait concurrently, as the paper's
//! parasites do, without a task each). The `ChooseAll` itself is one leaf
//! of the perform it is in, committed by nobody but itself: once every part
//! has committed, it claims that perform's opstate and commits it (`W -> C
//! -> SYNCED`), like an op its resource wakes to look again (`Op::repoll`).
//! So it composes like any op: `wrap` maps the results, `guard` builds it
//! at perform time, and in a choice it is one branch.
//!
//! # A part that committed is never lost
//!
//! A part's result is produced (its `finish`) only when the whole
//! `ChooseAll` commits. If the `ChooseAll` loses (another branch of a
//! choice commits first) or its perform is dropped, every part is ended as
//! a dropped perform ends its op: a part still waiting is withdrawn; a part
//! that committed is *abandoned*, which hands what it took back to its
//! resource (a received value goes back to the front of its channel, for
//! the next receiver; a join's output stays with its handle) — what it gave
//! (a value sent) stays given.
//!
//! # Invariants
//!
//! * The parts live in a boxed slice made when the op is made, never
//!   resized: each part (its op and opstate) stays at one address while its
//!   records are published.
//! * A part is `Blocked` exactly while records of it may be published; it
//!   leaves that state only through its op's `finish`, `abandon` or
//!   `withdraw` (after cancelling its opstate), as a `Perform` does.
//! * The `ChooseAll` commits its own leaf only after every part's opstate
//!   is `SYNCED`; its `finish` then finishes every part.
//! * After a look at every part (`all_committed`), every part still
//!   waiting holds a waker that wakes the same as that look's (`Waker::
//!   will_wake`): a part started then took that waker, and a waiting part
//!   took it (`update_waker`), or held one that wakes the same. `installed`
//!   is the identity (data and vtable pointers) of that look's waker; the
//!   next look with a waker of the same identity has no waker to hand its
//!   waiting parts. The identity cannot name another waker meanwhile: a
//!   waiting part holds its waker, so its data stays allocated.

use crate::op::state::{OpState, Seen};
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::pin::Pin;
use std::task::Waker;

/// Where a part is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not performed yet: nothing published.
    Fresh,
    /// Published (some records may be in queues).
    Blocked,
    /// Finished, abandoned or withdrawn.
    Done,
}

/// One part: an op performed in place (`Perform`'s fields, by hand).
struct Part<O> {
    op: O,
    state: OpState,
    phase: Phase,
    /// Whether the part's opstate holds a waker (`Op::commits_remotely`).
    remote: bool,
}

/// Performs every op and yields every result, in the order of the ops (the
/// parasitic threads paper's `chooseAll`; Cforall's `waituntil` with
/// `and`): an op, so it composes with [`wrap`](Op::wrap), [`guard`] and
/// choices. The ops wait concurrently and each commits on its own (this is
/// not one atomic commit of all of them); the `choose_all` commits once the
/// last one has.
///
/// If it loses a choice, or its perform is dropped, before every part
/// committed, nothing is lost: parts still waiting are withdrawn, and parts
/// that committed hand back what they took, as a dropped perform does (a
/// received value goes back to the front of its channel). A value a part
/// *sent* stays sent.
///
/// [`guard`]: crate::guard
///
/// ```
/// use fibra::{Op, bounded, choose_all};
///
/// # fibra::run(async {
/// let (tx_a, rx_a) = bounded(1);
/// let (tx_b, rx_b) = bounded(1);
/// let producer = fibra::spawn(async move {
///     tx_b.send(2).await.unwrap();
///     tx_a.send(1).await.unwrap();
/// });
/// let sum = choose_all(vec![rx_a.recv_op(), rx_b.recv_op()])
///     .wrap(|got| got.into_iter().map(Result::unwrap).sum::<i32>())
///     .await;
/// assert_eq!(sum, 3);
/// producer.await.unwrap();
/// # });
/// ```
///
/// As a branch of a choice that loses, a part that received gives its
/// value back:
///
/// ```
/// use fibra::{Op, always, bounded, choose_biased, choose_all};
///
/// let (tx_a, rx_a) = bounded::<u32>(1);
/// let (_tx_b, rx_b) = bounded::<u32>(1);
/// tx_a.try_send(1).unwrap();
/// // `rx_a`'s part commits, `rx_b`'s cannot: the fallback wins.
/// let r = choose_biased((
///     choose_all([rx_a.recv_op(), rx_b.recv_op()]).wrap(|_| "all"),
///     always("fallback"),
/// ))
/// .perform();
/// assert_eq!(r, "fallback");
/// assert_eq!(rx_a.try_recv(), Ok(1)); // given back
/// ```
pub fn choose_all<O: Op>(ops: impl IntoIterator<Item = O>) -> ChooseAll<O> {
    ChooseAll {
        installed: None,
        parts: ops
            .into_iter()
            .map(|op| Part {
                op,
                state: OpState::new(),
                phase: Phase::Fresh,
                remote: true,
            })
            .collect(),
    }
}

/// The op returned by [`choose_all`].
///
/// ```
/// use fibra::{ChooseAll, Op, RecvOp, bounded, choose_all};
///
/// let (tx, rx) = bounded::<u8>(2);
/// tx.try_send(1).unwrap();
/// tx.try_send(2).unwrap();
/// let op: ChooseAll<RecvOp<'_, u8>> = choose_all([rx.recv_op(), rx.recv_op()]);
/// assert_eq!(op.perform(), [Ok(1), Ok(2)]);
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct ChooseAll<O: Op> {
    parts: Box<[Part<O>]>,
    /// The identity of the waker every waiting part holds (module
    /// invariants); `None` before the first look.
    installed: Option<WakerId>,
}

/// A waker's identity: its data and vtable pointers, what `Waker::
/// will_wake` compares (as integers: only compared, never followed).
type WakerId = (usize, usize);

/// The identity of `waker`.
fn waker_id(waker: &Waker) -> WakerId {
    (
        waker.data() as usize,
        std::ptr::from_ref(waker.vtable()) as usize,
    )
}

// The parts are behind the box: moving a `ChooseAll` moves none of them.
impl<O: Op> Unpin for ChooseAll<O> {}
impl<O: Op> Sealed for ChooseAll<O> {}

impl<O: Op> Part<O> {
    /// The op and opstate, pinned: they live in the `ChooseAll`'s boxed
    /// slice, which never moves its elements (module invariants).
    fn project(&mut self) -> (Pin<&mut O>, &OpState, &mut Phase, &mut bool) {
        // SAFETY: the part stays at its address in the boxed slice until
        // the slice goes, which `ChooseAll`'s drop defers until no record
        // of it is published.
        let op = unsafe { Pin::new_unchecked(&mut self.op) };
        (op, &self.state, &mut self.phase, &mut self.remote)
    }

    /// Performs the part up to its block phase (`Perform::poll`'s first
    /// poll, less the try phase: a part's result must wait for the whole).
    fn start(&mut self, cx: &BlockCx<'_>) {
        let (mut op, state, phase, remote) = self.project();
        op.as_mut().prepare();
        *remote = op.commits_remotely();
        if *remote {
            state.set_waker_unpublished(cx.waker.clone());
        }
        *phase = Phase::Blocked;
        op.block(BlockCx {
            state,
            leaf: 0,
            waker: cx.waker,
            exclusive: !*remote,
        });
    }

    /// A later look at a blocked part: whether it committed. If not, it
    /// looks again (ops that commit themselves) and takes the new waker,
    /// unless `same_waker`: the part holds one that wakes the same.
    fn committed(&mut self, cx: &BlockCx<'_>, same_waker: bool) -> bool {
        let (mut op, state, _, remote) = self.project();
        let mut step = 0;
        loop {
            match state.load() {
                Seen::Synced(_) => return true,
                // A partner commits it now: the few instructions until
                // `SYNCED` (it woke, or will wake, the waker it took).
                Seen::Busy(_) => crate::loom::spin_wait(&mut step),
                Seen::Waiting => {
                    op.as_mut().repoll(BlockCx {
                        state,
                        leaf: 0,
                        waker: cx.waker,
                        exclusive: !*remote,
                    });
                    if state.load() != Seen::Waiting {
                        continue;
                    }
                    if same_waker || !*remote || state.update_waker(cx.waker) {
                        return false;
                    }
                    // It moved while we looked: look again.
                }
                seen @ (Seen::Claimed | Seen::Cancelled) => {
                    unreachable!("a part's opstate {seen:?} between looks")
                }
            }
        }
    }

    /// Ends a part whose whole lost or was dropped (module docs): a waiting
    /// part is withdrawn, a committed one abandoned.
    fn end_unfinished(&mut self) {
        let (op, state, phase, _) = self.project();
        match *phase {
            Phase::Fresh => op.withdraw(),
            Phase::Blocked => match state.cancel() {
                Ok(()) => op.withdraw(),
                Err(leaf) => op.abandon(leaf),
            },
            Phase::Done => {}
        }
        *phase = Phase::Done;
    }
}

impl<O: Op> ChooseAll<O> {
    /// Whether every part committed; starts the parts not started yet.
    fn all_committed(&mut self, cx: &BlockCx<'_>) -> bool {
        let id = waker_id(cx.waker);
        let same_waker = self.installed == Some(id);
        let mut all = true;
        for part in self.parts.iter_mut() {
            if part.phase == Phase::Fresh {
                part.start(cx);
            }
            // Every part looks (and takes the new waker), even after one
            // that has not committed.
            all &= part.committed(cx, same_waker);
        }
        self.installed = Some(id);
        all
    }

    /// Every part committed: commit our own leaf, unless another branch of
    /// the perform committed first (then `withdraw` follows).
    fn commit(cx: &BlockCx<'_>) {
        if cx.claim().is_ok() {
            cx.state.commit_own(cx.leaf);
        }
    }
}

impl<O: Op> Op for ChooseAll<O> {
    type Output = Vec<O::Output>;

    // Commits itself (its parts hold the wakers partners wake).
    fn commits_remotely(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        // A part committed in a try phase would have produced its result
        // already, which a `choose_all` that then loses could not hand
        // back: parts commit in the block phase only. No part: done.
        self.parts.is_empty().then(Vec::new)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if self.get_mut().all_committed(&cx) {
            Self::commit(&cx);
        }
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if self.get_mut().all_committed(&cx) {
            Self::commit(&cx);
        }
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Self::Output {
        self.get_mut()
            .parts
            .iter_mut()
            .map(|part| {
                let (op, state, phase, _) = part.project();
                let Seen::Synced(leaf) = state.load() else {
                    unreachable!("a `choose_all` committed before one of its parts")
                };
                *phase = Phase::Done;
                op.finish(leaf)
            })
            .collect()
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        // Committed, but nobody takes the results: every part hands back
        // what it took.
        for part in self.get_mut().parts.iter_mut() {
            part.end_unfinished();
        }
    }

    fn withdraw(self: Pin<&mut Self>) {
        for part in self.get_mut().parts.iter_mut() {
            part.end_unfinished();
        }
    }
}

impl<O: Op> Drop for ChooseAll<O> {
    fn drop(&mut self) {
        // Performs end their ops (`finish`, `abandon`, `withdraw`) before
        // dropping them, so this finds nothing to do; but a part still
        // published would leave records pointing into freed memory, so it
        // is ended here whatever the path (an unwind, say).
        for part in self.parts.iter_mut() {
            if part.phase == Phase::Blocked {
                part.end_unfinished();
            }
        }
    }
}

impl<O: Op> std::fmt::Debug for ChooseAll<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChooseAll")
            .field("parts", &self.parts.len())
            .finish_non_exhaustive()
    }
}

crate::op::op_into_future! {
    impl[O: Op] ChooseAll<O>;
}
