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
//!   will_wake`), or the gate's (below): a part started then took that
//!   waker (before it published; a part whose op installs its waker
//!   itself, `Op::installs_waker`, takes none if it commits at once), and
//!   a waiting part took it (`update_waker`), or held one that wakes the
//!   same. `installed`
//!   is the identity (data and vtable pointers) of that look's waker; the
//!   next look with a waker of the same identity has no waker to hand its
//!   waiting parts. The identity cannot name another waker meanwhile: a
//!   waiting part holds its waker, so its data stays allocated.
//! * Parts before `first_open` have committed; a look starts at it. If the
//!   last full look found that no part from there on looks again when
//!   woken (`quiet`: every leaf is committed by partners, `Op::
//!   looks_again`), a look with a waker of the same identity stops at the
//!   first part still waiting: the parts after it have nothing to do (no
//!   waker to take, no resource to check), the whole cannot commit yet,
//!   and that part's partner will wake the same waker when it commits it.
//!   So a `choose_all` woken once per part that commits looks at each part
//!   about once in all, not once per wake.
//!
//! # Gated parts
//!
//! With at least [`GATE_MIN`] parts, a part that only partners commit
//! (`Op::commits_remotely` and not `Op::looks_again`: channel ops, joins,
//! semaphores) gets the waker of the `choose_all`'s [`Gate`] instead of
//! the task's, so the task is not woken (and polled) for every commit but
//! once, for the last. The gate is made when the first such part starts,
//! holding the task's waker and a count of the parts from that one on.
//! Every one of them is counted exactly once:
//!
//! * a gated part a partner commits: by that partner, when it wakes the
//!   waker it took out of the part's opstate (`finish_remote`, the only
//!   wake an opstate's waker gets);
//! * a gated part the owner commits itself in its block phase: by the
//!   owner, which finds the gate's waker still in the `SYNCED` opstate (a
//!   partner would have taken it: `OpState::take_waker_synced`);
//! * any other part: by the owner, when it starts it (its own waker wakes
//!   the task).
//!
//! A partner whose count is the last wakes the task's waker as the gate
//! holds it; a look whose waker changed stores the new one in the gate
//! before it looks at any part, so a last count that read the old one
//! happened before the look, which then sees every gated part `SYNCED`
//! (each partner stores `SYNCED` before its count, and the counts are
//! `AcqRel`). If the owner's own count is the last, no partner wakes the
//! task: the look goes round again, and finds every gated part `SYNCED`.
//! A gated part's waker is never replaced (`update_waker`): the gate's
//! does not change. Its count goes to zero at most once; a `choose_all`
//! that loses or is dropped leaves it above zero, and the wakers its
//! parts' opstates still hold are dropped with them.

use crate::loom::{AtomicUsize, Lock, Ordering};
use crate::op::state::{OpState, Seen};
use crate::op::{BlockCx, Op, sealed::Sealed};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Wake, Waker};

/// Parts at least this many: the parts that only partners commit wake the
/// task through a [`Gate`] (module docs, "Gated parts").
const GATE_MIN: usize = 3;

/// The waker a `choose_all`'s gated parts hold (module docs, "Gated
/// parts"): counts commits down and wakes the task at the last.
struct Gate {
    /// Parts not counted yet: every part from the one whose start made
    /// the gate on is counted once, a gated part when it commits (by its
    /// partner's wake of this gate, or by the owner if it committed the
    /// part itself), any other part by the owner when it starts it.
    left: AtomicUsize,
    /// The task's waker as of the owner's last look.
    task: Lock<Waker>,
}

impl Gate {
    /// Counts one part; whether it was the last.
    fn count(&self) -> bool {
        // AcqRel: each gated part's `SYNCED` store comes before its count,
        // and the last count acquires them all before it wakes the task.
        self.left.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// A partner committed a gated part: counts it, and at the last wakes
    /// the task with the waker of the owner's last look.
    fn count_remote(&self) {
        if self.count() {
            // Woken after the lock is released.
            let task = self.task.lock().clone();
            task.wake();
        }
    }
}

impl Wake for Gate {
    fn wake(self: Arc<Self>) {
        self.count_remote();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.count_remote();
    }
}

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
    /// Whether partners may commit the part (`Op::commits_remotely`): its
    /// opstate holds a waker while it waits (installed before `block`, or
    /// by the op as it publishes, `Op::installs_waker`).
    remote: bool,
    /// Whether that waker is the `choose_all`'s gate (module docs).
    gated: bool,
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
        first_open: 0,
        quiet: false,
        gate: None,
        parts: ops
            .into_iter()
            .map(|op| Part {
                op,
                state: OpState::new(),
                phase: Phase::Fresh,
                remote: true,
                gated: false,
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
    /// Every part before this index has committed (its opstate is
    /// `SYNCED`, which it stays until the whole finishes).
    first_open: usize,
    /// After a look at every part from `first_open` on: none of them looks
    /// again when woken (`Op::looks_again`).
    quiet: bool,
    /// The gate, once a part is gated (module docs).
    gate: Option<Arc<Gate>>,
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
    /// With `GATING` (the `choose_all` has at least [`GATE_MIN`] parts), a
    /// part that only partners commit holds the gate's waker instead of
    /// the task's, the gate made now if it is the first such part, counting
    /// the parts from this one on (`uncounted`). Returns whether the
    /// owner's count of this part was the gate's last.
    fn start<const GATING: bool>(
        &mut self,
        cx: &BlockCx<'_>,
        gate: &mut Option<Arc<Gate>>,
        uncounted: usize,
    ) -> bool {
        let (mut op, state, phase, remote) = self.project();
        op.as_mut().prepare();
        *remote = op.commits_remotely();
        let gated = GATING && *remote && !op.looks_again();
        // An ungated part whose op installs its waker itself gets none
        // unless it publishes: one that commits at once clones none. A
        // gated part's is installed here: the owner tells a part it
        // committed itself by the gate's waker still in its opstate.
        let mut install = None;
        if gated {
            let gate = gate.get_or_insert_with(|| {
                Arc::new(Gate {
                    left: AtomicUsize::new(uncounted),
                    task: Lock::new(cx.waker.clone()),
                })
            });
            state.set_waker_unpublished(Waker::from(Arc::clone(gate)));
        } else if *remote {
            if op.installs_waker() {
                install = Some(cx.waker);
            } else {
                state.set_waker_unpublished(cx.waker.clone());
            }
        }
        *phase = Phase::Blocked;
        op.block(BlockCx {
            state,
            leaf: 0,
            waker: cx.waker,
            exclusive: !*remote,
            install,
        });
        self.gated = gated;
        let Some(gate) = gate.as_ref().filter(|_| GATING) else {
            return false;
        };
        if !gated {
            return gate.count();
        }
        // Committed by ourselves in `block` (the opstate kept the gate's
        // waker, which a partner would have taken): ours to count.
        matches!(self.state.load(), Seen::Synced(_))
            && self.state.take_waker_synced().is_some()
            && gate.count()
    }

    /// A later look at a blocked part: whether it committed. If not, it
    /// looks again (ops that commit themselves) and takes the new waker,
    /// unless `same_waker`: the part holds one that wakes the same.
    fn committed(&mut self, cx: &BlockCx<'_>, same_waker: bool) -> bool {
        let (mut op, state, _, remote) = self.project();
        let remote = *remote;
        let repoll = || {
            op.as_mut().repoll(BlockCx {
                state,
                leaf: 0,
                waker: cx.waker,
                exclusive: !remote,
                install: None,
            });
        };
        state.look(cx.waker, same_waker, remote, repoll).is_some()
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
        // Two copies: the one without a gate keeps none of its code.
        if self.parts.len() >= GATE_MIN {
            self.look::<true>(cx)
        } else {
            self.look::<false>(cx)
        }
    }

    /// `all_committed`, with a gate if `GATING`.
    fn look<const GATING: bool>(&mut self, cx: &BlockCx<'_>) -> bool {
        let id = waker_id(cx.waker);
        let same_waker = self.installed == Some(id);
        if GATING
            && !same_waker
            && let Some(gate) = &self.gate
        {
            // Before the look: a last count that woke the old waker came
            // before this store, and the look sees its part `SYNCED`. The
            // new waker is cloned before the lock is taken and the old one
            // dropped after it is released.
            let new = cx.waker.clone();
            let old = std::mem::replace(&mut *gate.task.lock(), new);
            drop(old);
        }
        // Only whether each part committed matters: the first one still
        // waiting answers for the whole (module invariants).
        let quick = same_waker && self.quiet;
        loop {
            let mut all = true;
            let mut quiet = true;
            let mut counted_last = false;
            for i in self.first_open..self.parts.len() {
                let uncounted = self.parts.len() - i;
                let part = &mut self.parts[i];
                let started = part.phase == Phase::Fresh;
                if started {
                    counted_last |= part.start::<GATING>(cx, &mut self.gate, uncounted);
                }
                // Every part looks (and takes the new waker, unless it
                // holds the gate's or was started with this one), even
                // after one that has not committed.
                let holds_its_waker = same_waker || started || (GATING && part.gated);
                if part.committed(cx, holds_its_waker) {
                    if all {
                        self.first_open = i + 1;
                    }
                } else {
                    all = false;
                    if quick {
                        return false;
                    }
                }
                quiet &= !part.op.looks_again();
            }
            self.installed = Some(id);
            self.quiet = quiet;
            if all || !(GATING && counted_last) {
                return all;
            }
            // Our own count was the gate's last: every gated part has
            // committed, some after this look passed them, and no partner
            // wakes the task for them. Look again.
        }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::op::BoxOp;
    use std::future::{Future, IntoFuture};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Wake};

    /// Counts its wakes.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting_waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    /// Below `GATE_MIN` parts, every commit wakes the task; the whole
    /// commits with the last part, every value in its part's place.
    #[test]
    fn ungated_parts_wake_the_task_at_each_commit() {
        let chans: Vec<_> = (0..2).map(|_| crate::channel::<usize>()).collect();
        let (count, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let mut all =
            std::pin::pin!(choose_all(chans.iter().map(|(_, rx)| rx.recv_op())).into_future());
        assert!(all.as_mut().poll(&mut cx).is_pending());
        chans[1].0.try_send(1).unwrap();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(all.as_mut().poll(&mut cx).is_pending());
        chans[0].0.try_send(0).unwrap();
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        let Poll::Ready(got) = all.as_mut().poll(&mut cx) else {
            panic!("every part committed, the whole did not");
        };
        assert_eq!(got, [Ok(0), Ok(1)]);
    }

    /// Gated parts (at least `GATE_MIN`, committed by partners only): the
    /// task is woken once, by the last commit, with the waker of its last
    /// look; a part the owner committed itself (a value already waiting)
    /// counts too.
    #[test]
    fn gated_parts_wake_the_task_once_with_its_latest_waker() {
        let chans: Vec<_> = (0..4).map(|_| crate::bounded::<usize>(1)).collect();
        chans[2].0.try_send(2).unwrap();
        let (first_count, first) = counting_waker();
        let (second_count, second) = counting_waker();
        let mut all =
            std::pin::pin!(choose_all(chans.iter().map(|(_, rx)| rx.recv_op())).into_future());
        assert!(
            all.as_mut()
                .poll(&mut Context::from_waker(&first))
                .is_pending()
        );
        chans[0].0.try_send(0).unwrap();
        assert!(
            all.as_mut()
                .poll(&mut Context::from_waker(&second))
                .is_pending()
        );
        chans[3].0.try_send(3).unwrap();
        assert_eq!(
            second_count.0.load(Ordering::SeqCst),
            0,
            "woken before the last commit"
        );
        chans[1].0.try_send(1).unwrap();
        assert_eq!(first_count.0.load(Ordering::SeqCst), 0);
        assert_eq!(second_count.0.load(Ordering::SeqCst), 1);
        let Poll::Ready(got) = all.as_mut().poll(&mut Context::from_waker(&second)) else {
            panic!("every part committed, the whole did not");
        };
        assert_eq!(got, [Ok(0), Ok(1), Ok(2), Ok(3)]);
    }

    /// Counts the clones of a waker (and its wakes): a raw waker over a
    /// `(clones, wakes)` pair that outlives every clone.
    fn clone_counting_waker(counts: &'static (AtomicUsize, AtomicUsize)) -> Waker {
        use std::task::{RawWaker, RawWakerVTable};
        fn pair(data: *const ()) -> &'static (AtomicUsize, AtomicUsize) {
            // SAFETY: `data` is the `'static` pair the waker was made from.
            unsafe { &*data.cast() }
        }
        const VTABLE: RawWakerVTable = RawWakerVTable::new(
            |data| {
                pair(data).0.fetch_add(1, Ordering::SeqCst);
                RawWaker::new(data, &VTABLE)
            },
            |data| {
                pair(data).1.fetch_add(1, Ordering::SeqCst);
            },
            |data| {
                pair(data).1.fetch_add(1, Ordering::SeqCst);
            },
            |_| {},
        );
        let data = std::ptr::from_ref(counts).cast();
        // SAFETY: the vtable's functions keep the contract (every clone
        // points at the same `'static` pair; dropping owns nothing).
        unsafe { Waker::from_raw(RawWaker::new(data, &VTABLE)) }
    }

    /// Ungated channel parts get the task's waker only if they publish: a
    /// `choose_all` whose receive and send find their partners waiting
    /// clones no waker; one whose send must wait clones one, and that
    /// part's partner wakes the task with it.
    #[test]
    fn a_part_that_commits_at_once_takes_no_waker() {
        static READY: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let waker = clone_counting_waker(&READY);
        let (tx_a, rx_a) = crate::bounded::<usize>(1);
        let (tx_b, rx_b) = crate::bounded::<usize>(1);
        tx_a.try_send(1).unwrap();
        let both = choose_all([
            rx_a.recv_op().wrap(Result::unwrap).boxed(),
            tx_b.send_op(2).wrap(|sent| sent.map_or(0, |()| 2)).boxed(),
        ]);
        let mut both = std::pin::pin!(both.into_future());
        let Poll::Ready(got) = both.as_mut().poll(&mut Context::from_waker(&waker)) else {
            panic!("both parts could commit at once");
        };
        assert_eq!(got, [1, 2]);
        assert_eq!(rx_b.try_recv(), Ok(2));
        assert_eq!(READY.0.load(Ordering::SeqCst), 0, "a waker was cloned");

        static WAITS: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let waker = clone_counting_waker(&WAITS);
        tx_a.try_send(3).unwrap();
        tx_b.try_send(0).unwrap(); // full: the send part must wait
        let both = choose_all([
            rx_a.recv_op().wrap(Result::unwrap).boxed(),
            tx_b.send_op(4).wrap(|sent| sent.map_or(0, |()| 4)).boxed(),
        ]);
        let mut both = std::pin::pin!(both.into_future());
        assert!(
            both.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert_eq!(WAITS.0.load(Ordering::SeqCst), 1, "one part published");
        assert_eq!(WAITS.1.load(Ordering::SeqCst), 0);
        // Room for the waiting send: its partner commits it and wakes us.
        assert_eq!(rx_b.try_recv(), Ok(0));
        assert_eq!(
            WAITS.1.load(Ordering::SeqCst),
            1,
            "the send's commit woke nobody"
        );
        let Poll::Ready(got) = both.as_mut().poll(&mut Context::from_waker(&waker)) else {
            panic!("every part committed, the whole did not");
        };
        assert_eq!(got, [3, 4]);
        assert_eq!(rx_b.try_recv(), Ok(4));
    }

    /// A part that looks again when woken (here a future, polled by its
    /// op) is looked at when its wake comes, even behind a part still
    /// waiting: it commits on its own, as the parts' docs say.
    #[test]
    fn a_part_that_looks_again_is_looked_at_behind_a_waiting_part() {
        let (tx, rx) = crate::channel::<usize>();
        let polls = AtomicUsize::new(0);
        let ready = std::sync::atomic::AtomicBool::new(false);
        let looker = std::future::poll_fn(|_| {
            polls.fetch_add(1, Ordering::SeqCst);
            if ready.load(Ordering::SeqCst) {
                Poll::Ready(1)
            } else {
                Poll::Pending
            }
        });
        let parts: Vec<BoxOp<'_, usize>> = vec![
            rx.recv_op().wrap(Result::unwrap).boxed(),
            crate::op::from_future(looker).boxed(),
        ];
        let (_, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let mut all = std::pin::pin!(choose_all(parts).into_future());
        assert!(all.as_mut().poll(&mut cx).is_pending());
        let first = polls.load(Ordering::SeqCst);
        assert!(first >= 1);
        // Woken for the looker (its future's waker is ours): the channel
        // part still waits, the looker is polled and commits.
        ready.store(true, Ordering::SeqCst);
        assert!(all.as_mut().poll(&mut cx).is_pending());
        let second = polls.load(Ordering::SeqCst);
        assert!(second > first, "the looker was not looked at");
        tx.try_send(0).unwrap();
        let Poll::Ready(got) = all.as_mut().poll(&mut cx) else {
            panic!("every part committed, the whole did not");
        };
        assert_eq!(got, [0, 1]);
        assert_eq!(
            polls.load(Ordering::SeqCst),
            second,
            "a committed part looked again"
        );
    }
}
