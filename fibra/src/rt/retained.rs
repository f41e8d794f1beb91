//! Retained tasks: a worker keeps `RUNNING` for the tasks that recently
//! went idle on it, so that a wake on the worker's thread queues them again
//! without an atomic read-modify-write.
//!
//! A task's poll that returns `Pending` normally ends with a compare-and-swap
//! that releases `RUNNING`, and the wake that later queues it takes `RUNNING`
//! back with another. When both happen on one worker (a ping-pong pair, a
//! pipeline whose stages all live here), those two are half of the four
//! read-modify-writes a rendezvous message costs (the other two are the
//! channel's lock, taken by each side). Instead, the worker *retains* the
//! task after such a poll: the state word keeps `RUNNING`, and the task's
//! header carries a token naming this worker and the ring slot that holds
//! it. A wake on this worker's thread that finds the task in its own ring
//! takes it out and queues it, owning `RUNNING` already.
//!
//! A retained task is idle in every respect but the state word: a wake from
//! another thread sees `RUNNING`, sets `NOTIFIED` and leaves the queueing to
//! the holder of `RUNNING`, this worker. So the worker *releases* retained
//! tasks with the compare-and-swap the poll skipped
//! (`TaskRef::release_retained`), queueing those that were woken:
//!
//! * at its next turn, if such a wake raised its [`WokenHint`]: the waker
//!   reads the task's token and raises the flag of the worker it names; the
//!   worker takes the flag down between two turns and releases the tasks
//!   marked `NOTIFIED` or `ABORT` (loom model
//!   `loom_a_retained_task_woken_elsewhere_is_released_once_and_promptly`);
//! * `CAP` turns later at most: turn `k` retains into slot `k % CAP`,
//!   whose previous task (from turn `k - CAP`) it releases. This covers a
//!   waker that read the token before it was stored, just as the poll ended;
//! * before the worker looks for work elsewhere or sleeps, and when its loop
//!   ends (shutdown, the end of a current-thread `block_on`, a panic).
//!
//! The price: a retained task woken from elsewhere waits for the end of its
//! worker's current turn, and then runs there. Before, the waker took it
//! (into its own worker's `next` slot, or the injector for any worker). A
//! turn that lasts (a poll that computes, or blocks the thread) holds up
//! the tasks it retains as it holds up those in its `next` slot and `hot`
//! queue, which no other worker may steal either, until an idle worker
//! rescues the woken ones (`rescue.rs`: it releases them from the ring
//! while it holds this worker frozen).
//!
//! The ring is touched by its worker inside a section (`rescue.rs`) and,
//! while the worker is frozen in a poll, by a rescuer on another thread.
//!
//! The retained run's reference comes along in the slot, unless the run
//! donated it to a waker clone (`task/mod.rs`, "The run's reference"): then the
//! registry's reference keeps the task alive, since it cannot complete while
//! retained (completing takes `RUNNING`; the shutdown drain runs only once
//! every worker has stopped). A wake by value that takes the task out
//! queues it with the waker's reference (dropping the slot's, if any); a
//! wake by reference queues it with the slot's, or a new one.
//!
//! `CAP` covers a pipeline of a hundred stages on one worker, which wakes
//! each stage about a hundred turns after it went idle; a longer cycle of
//! tasks gains nothing and pays the bookkeeping (a slot write per turn).
//!
//! # Invariants
//!
//! * The ring is the worker's alone (`Cell`s, `!Sync`): only its thread
//!   reads or writes the slots, `turn` and `held`, but for a rescuer that
//!   holds the worker frozen (`rescue.rs`), which only the freeze's
//!   barriers order against the worker's own accesses.
//! * A slot holds a task exactly while this worker retains it: the task's
//!   state word has `RUNNING` on behalf of the slot, and its header's
//!   `retained` token names the slot. Taking or releasing clears the slot
//!   and the token, the token before the release gives `RUNNING` up.
//! * A wake takes a task out of a ring only after finding it in the slot the
//!   token names, in its own thread's ring: a token read on another thread
//!   may be stale, but a ring's slots are written only by its worker, so a
//!   match means that worker retains the task. A stale token elsewhere only
//!   raises a needless hint.

use super::task::{IdleRun, TaskRef};
use crate::loom::{AtomicUsize, Ordering};
use std::cell::Cell;

/// Slots in the ring: the most task turns a task stays retained.
#[cfg(not(loom))]
pub(super) const CAP: usize = 128;
/// Under loom two, so that a model's few turns reach the slot's release.
#[cfg(loom)]
pub(super) const CAP: usize = 2;

pub(crate) struct Retained {
    /// The token of slot 0: tokens name the worker (`token`).
    base: usize,
    /// Slot `k % CAP` holds what turn `k` left to retain, until turn
    /// `k + CAP` releases it (or a wake takes it first).
    slots: [Cell<Option<IdleRun>>; CAP],
    /// Turns so far (wrapping; `CAP` divides 2^32).
    turn: Cell<u32>,
    /// Occupied slots.
    held: Cell<u32>,
}

impl Retained {
    pub(crate) fn new(worker: usize) -> Self {
        Self {
            base: (worker + 1) * CAP,
            slots: std::array::from_fn(|_| Cell::new(None)),
            turn: Cell::new(0),
            held: Cell::new(0),
        }
    }

    /// A task turn on this worker ended; `run` is the task it left idle but
    /// `RUNNING`, if any (`Task::run`), which we retain. The task retained
    /// `CAP` turns ago in the same slot, if no wake took it meanwhile, is
    /// released (through `release`). Turns that neither retain nor find
    /// anything retained may skip this: they age nothing.
    #[inline]
    pub(crate) fn turn(&self, run: Option<IdleRun>, release: impl FnOnce(IdleRun)) {
        let turn = self.turn.get();
        self.turn.set(turn.wrapping_add(1));
        let i = turn as usize % CAP;
        if let Some(run) = run {
            // SAFETY: the task is alive (`IdleRun`: its run's reference, or
            // the registry's), and cannot complete while we hold `RUNNING`.
            unsafe { run.task.as_ref() }.set_retained(self.token(i));
            self.held.set(self.held.get() + 1);
        }
        if let Some(old) = self.slots[i].replace(run) {
            self.release_from(old, release);
        }
    }

    /// A wake on this worker: if we retain `task`, takes it out of the ring
    /// (`Some`): the caller now holds `RUNNING` for a queue entry, and the
    /// retained run's reference if it had one (`Some(true)`).
    #[inline]
    pub(crate) fn take(&self, task: &TaskRef) -> Option<bool> {
        let header = task.header();
        let i = header.retained().wrapping_sub(self.base);
        if i >= CAP {
            return None;
        }
        match self.slots[i].get() {
            Some(run) if run.task == task.as_ptr() => {
                self.slots[i].set(None);
                self.held.set(self.held.get() - 1);
                header.set_retained(0);
                Some(run.owns_ref)
            }
            // A stale token: retained here once, released since.
            _ => None,
        }
    }

    /// Releases every retained task.
    pub(crate) fn release_all(&self, mut release: impl FnMut(IdleRun)) {
        if self.is_empty() {
            return;
        }
        for slot in &self.slots {
            if let Some(run) = slot.take() {
                self.release_from(run, &mut release);
            }
        }
        debug_assert!(self.is_empty());
    }

    /// Releases the retained tasks that a wake from elsewhere (or an abort)
    /// marked since they were retained.
    pub(crate) fn release_woken(&self, mut release: impl FnMut(IdleRun)) {
        if self.is_empty() {
            return;
        }
        for slot in &self.slots {
            match slot.get() {
                Some(run) if run.is_marked() => {
                    slot.set(None);
                    self.release_from(run, &mut release);
                }
                _ => {}
            }
        }
    }

    /// How many tasks are retained.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> u32 {
        self.held.get()
    }

    /// Whether no task is retained.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.get() == 0
    }

    /// `run` just left its slot: clears its token and releases it.
    fn release_from(&self, run: IdleRun, release: impl FnOnce(IdleRun)) {
        self.held.set(self.held.get() - 1);
        // SAFETY: retained until now, hence alive (see `turn`).
        unsafe { run.task.as_ref() }.set_retained(0);
        release(run);
    }

    /// The token naming slot `i` of this worker's ring (never 0).
    fn token(&self, i: usize) -> usize {
        self.base + i
    }
}

/// A worker's mailbox flags for wakes from elsewhere: a wake that found a
/// task `RUNNING` and marked it `NOTIFIED` raises, in the flags of the
/// worker whose token the task carries, the bit of the waker's worker (or
/// [`OUTSIDE`](Self::OUTSIDE) for a thread that is no worker of this
/// runtime); that worker, between two turns, takes the flags down and
/// releases the marked tasks it retains, handing them to the waker's worker
/// when one worker woke them all (`inbox.rs`). A worker that pushed tasks
/// into this worker's inbox raises [`INBOX`](Self::INBOX).
#[derive(Default)]
pub(crate) struct WokenHint(crossbeam_utils::CachePadded<AtomicUsize>);

impl WokenHint {
    /// Tasks wait in the worker's inbox (`inbox.rs`).
    pub(crate) const INBOX: usize = 1 << (usize::BITS - 1);
    /// A thread that is no worker of the runtime (or a worker whose index
    /// has no bit of its own) woke a retained task.
    pub(crate) const OUTSIDE: usize = 1 << (usize::BITS - 2);
    /// Workers with a bit of their own.
    const WORKER_BITS: usize = usize::BITS as usize - 2;

    /// The bit that stands for worker `from` (`None`: not a worker of this
    /// runtime).
    pub(crate) fn bit(from: Option<usize>) -> usize {
        match from {
            Some(j) if j < Self::WORKER_BITS => 1 << j,
            _ => Self::OUTSIDE,
        }
    }

    /// By the waker, after it marked the task (or pushed into the inbox):
    /// raises `bit`.
    pub(crate) fn raise(&self, bit: usize) {
        // Release, after the waker's `NOTIFIED` (its RMW on the state word):
        // the worker's Acquire in `take_down` then sees the mark. An RMW,
        // not a store: two wakers may raise before the worker looks, and a
        // plain store by the second would end the first's release sequence,
        // so the worker could miss the first mark (loom model
        // `loom_two_wakes_from_elsewhere_are_both_seen_through_one_hint`).
        self.0.fetch_or(bit, Ordering::Release);
    }

    /// By the worker: the flags that were up (0 if none; now all down).
    #[inline]
    pub(crate) fn take_down(&self) -> usize {
        // Relaxed first: a plain load per turn, the RMW only when raised.
        // Acquire: pairs with `raise`'s Release RMW.
        if self.0.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.0.swap(0, Ordering::Acquire)
    }

    /// The one worker, other than `me`, whose tasks' wakes raised `flags`,
    /// if exactly one did: where tasks woken by it should go.
    pub(crate) fn sole_waker(flags: usize, me: usize) -> Option<usize> {
        let wakers = flags & !Self::INBOX;
        if wakers.count_ones() != 1 || wakers == Self::OUTSIDE {
            return None;
        }
        let j = wakers.trailing_zeros() as usize;
        (j != me).then_some(j)
    }
}

/// The worker whose ring a (nonzero) token names.
pub(super) fn worker_of(token: usize) -> usize {
    token / CAP - 1
}

impl Drop for Retained {
    fn drop(&mut self) {
        // The worker releases everything before it stops, even when a panic
        // unwinds its loop; a task left here would keep `RUNNING` for good.
        debug_assert!(
            self.is_empty() || std::thread::panicking(),
            "a worker stopped with retained tasks"
        );
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::rt::worker::with_current;

    fn retained_here() -> u32 {
        with_current(|ctx| ctx.expect("on a worker").retained_count())
    }

    /// The mechanism is on: a task that blocked again after a round trip
    /// sits in its worker's ring, and the wake of its partner's op takes it
    /// out on the spot.
    #[test]
    fn an_echo_that_blocked_again_is_retained_until_a_local_wake_takes_it() {
        let rt = crate::Runtime::builder().current_thread().build().unwrap();
        rt.block_on(async {
            let (in_tx, in_rx) = crate::channel::<u64>();
            let (out_tx, out_rx) = crate::channel::<u64>();
            let echo = crate::spawn(async move {
                while let Ok(v) = in_rx.recv().await {
                    out_tx.send(v).await.unwrap();
                }
            });
            for i in 0..3 {
                in_tx.send(i).await.unwrap();
                // The echo took `i` and waits in its send: we have not
                // come to our receive yet.
                assert_eq!(retained_here(), 1, "round {i}: the echo, blocked");
                assert_eq!(out_rx.recv().await, Ok(i));
                assert_eq!(retained_here(), 0, "round {i}: our receive took it");
            }
            drop(in_tx);
            echo.await.unwrap();
        });
    }
}
