//! The worker loop: where tasks run.
//!
//! Each worker owns two stealable run queues, a "next" slot and a FIFO
//! "hot" queue of tasks displaced from `next` (neither stealable). A task woken by the task running on this worker goes to `next`
//! and runs as soon as the waker blocks or yields: a communicating pair stays
//! on one core and hands off without touching any shared queue or the OS
//! (Go's `runnext`; the parasite paper's migration to the point of
//! synchronisation).
//!
//! The stealable queues: `local`, LIFO for the worker (work-first, as
//! Cilk's deques), takes spawned tasks and the joiners a finished task
//! wakes; other workers steal its oldest
//! entries. A fork-join program (a task that spawns its halves and joins
//! them) so runs depth-first on each worker, with a few tasks alive per
//! level of its tree, while thieves take the largest pieces left; in
//! FIFO order the whole tree would be spawned before any leaf ran.
//! `yielded`, FIFO, takes the tasks woken during their own poll (a
//! `yield_now`) and inflated parasites, so that a yield lets every other
//! runnable task of the worker go first; the tasks an I/O poll wakes, in
//! the order their sockets became ready (a server's connections served
//! first come, first served); and the woken tasks that `hot`
//! has no room for or that leave the retained ring: behind the others, a
//! woken task finds more messages waiting when it runs (an actor that a
//! thousand others message wakes once for many, not once for each).
//!
//! Fairness: at most `MAX_NEXT_STREAK` tasks in a row come from `next`, then
//! the `next` task goes to the back of the hot queue, so a ping-pong pair
//! cannot starve the others; every `STEALABLE_FIRST_INTERVAL` ticks the
//! stealable queues go before `hot`, each first in turn, so neither a
//! task the budget made yield nor a stream of spawns can starve a yielding
//! task; every `OLDEST_FIRST_INTERVAL` ticks the local queue's oldest entry
//! does, so a stream of spawns cannot starve a task spawned before it
//! either (rarely: each such turn starts another piece of a fork-join tree
//! from its top, and the pieces started live together); every
//! `INJECTOR_INTERVAL` ticks the global injector is checked first, so
//! spawns from outside cannot starve either.
//!
//! Retention: a task whose poll here ends idle stays `RUNNING`, held by the
//! worker's ring (`retained.rs`), for up to `retained::CAP` turns; a wake
//! on this worker's thread queues it without an atomic read-modify-write.
//! A wake from elsewhere raises the worker's hint, and the worker releases
//! the woken tasks at its next turn (or, for a wake that raced the end of
//! the task's poll and saw no token, when the slot comes round again); it
//! releases everything before it searches, sleeps or stops.
//!
//! Idle: a worker with nothing to run searches (steals) for a few rounds,
//! spinning between them, then registers as a sleeper, looks once more, and
//! parks (see `idle.rs` for the wake-up protocol). While another worker is
//! awake, one idle worker parks for a tick at most, and at each tick
//! rescues the private tasks of any worker stuck in a long poll
//! (`rescue.rs`): `next`, `hot` and the retained ring are touched only
//! inside sections, which the run loop leaves only to poll.
//!
//! # Invariants
//!
//! * A worker's context is touched by its own thread, and by a rescuer
//!   only while it holds the worker frozen (`rescue.rs`), through the
//!   pointer the worker publishes for its loop's duration and clears
//!   inside a section before its context goes.
//! * `next`, `hot` and the retained ring are touched by the worker only
//!   inside a section (`private`), and the loop is inside one except while
//!   it polls (`outside`).

use super::Shared;
use super::queue::{Steal, Worker as Deque};
use super::rescue::{QUIET_TICKS, TICK, Watch};
use super::retained::{Retained, WokenHint};
use super::task::{IdleRun, TaskRef};
use crate::loom::{Instant, Ordering};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::Arc;

/// Who makes the wakes on a worker's thread now, which decides where the
/// woken tasks go (`schedule_woken`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Waking {
    /// The running task (or nothing): into `next`, a hand-off.
    Task,
    /// A task that just finished, waking its joiners: the local queue.
    Joiners,
    /// An I/O poll, waking the tasks of ready sockets: the back of the
    /// `yielded` queue.
    Io,
}

/// Puts `waking` back to what it was when dropped, even if a (foreign)
/// waker panics meanwhile.
struct Restore<'a>(&'a Cell<Waking>, Waking);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        self.0.set(self.1);
    }
}

// Under loom the limits shrink so that a model with a few tasks reaches
// the paths behind them (as tokio shrinks its queues under loom); the
// logic is the same.
#[cfg(not(loom))]
const MAX_NEXT_STREAK: u32 = 16;
#[cfg(loom)]
const MAX_NEXT_STREAK: u32 = 2;
/// Tasks displaced from `next` wait in the worker's private `hot` queue, up
/// to this many; beyond, they go to the yielded queue (stealable).
#[cfg(not(loom))]
const HOT_MAX: usize = 256;
#[cfg(loom)]
const HOT_MAX: usize = 1;
/// Every this many ticks the stealable queues go before `hot`, each first
/// in turn (module docs). A power of two: the common turn tests one mask.
const STEALABLE_FIRST_INTERVAL: u32 = 32;
/// Every this many ticks the local queue's oldest task goes first (module
/// docs); a multiple of `STEALABLE_FIRST_INTERVAL`, tested inside its turn.
const OLDEST_FIRST_INTERVAL: u32 = 1024;
const _: () = assert!(
    STEALABLE_FIRST_INTERVAL.is_power_of_two()
        && OLDEST_FIRST_INTERVAL % STEALABLE_FIRST_INTERVAL == 0
);
const INJECTOR_INTERVAL: u32 = 61;
/// Rounds of stealing before a worker parks; between rounds it spins, then
/// yields: some microseconds in all, less than the OS wake-up a parked
/// worker needs when work appears again, and few enough that an idle
/// worker does not burn a core (the benchmark log has the measurements).
#[cfg(not(loom))]
const SEARCH_ROUNDS: u32 = 16;
/// Under loom each round is a yield to the model checker: one round, then
/// the worker sleeps (the sleep protocol is what the models check).
#[cfg(loom)]
const SEARCH_ROUNDS: u32 = 1;
/// A worker offers work to a sleeping one only when its stealable queue
/// holds more than this many tasks: a sleeper costs an OS wake-up (tens of
/// µs), which a handful of short tasks never repays.
#[cfg(not(loom))]
const OFFER_MIN: usize = 16;
/// Under loom a backlog of two offers (time counts as elapsed there:
/// `crate::loom::Instant`), so models reach the offer.
#[cfg(loom)]
const OFFER_MIN: usize = 1;
/// ... and only once that backlog has lasted this long: a burst of short
/// tasks (a collector spawning 100 senders that all talk back to it) is
/// over before a woken worker could help, and stealing half of it only
/// makes every message cross cores. A backlog that lasts is worth the
/// wake-up. Checked at pushes and between
/// tasks (`CHECK_EVERY`), so a task that spawns work and then computes for
/// a long time without yielding delays the offer until it yields.
const OFFER_DELAY: std::time::Duration = std::time::Duration::from_micros(100);
/// Reading the clock costs tens of nanoseconds: while a backlog waits for
/// its offer, look every this many scheduling points ...
const CHECK_EVERY: u32 = 4;
/// ... and every this many pushes (a spawning loop).
const PUSH_CHECK_EVERY: usize = 64;

pub(crate) struct WorkerCtx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) index: usize,
    /// LIFO for this worker (module docs).
    local: Deque<TaskRef>,
    /// FIFO: tasks that yielded, and woken tasks behind the others
    /// (module docs).
    yielded: Deque<TaskRef>,
    next: Cell<Option<TaskRef>>,
    /// Tasks woken by the tasks running here and displaced from `next` (a
    /// producer waking consumers). Not stealable: they talk to the tasks on
    /// this worker through the same channels, and moving them to another
    /// core would make every message cross cores.
    hot: RefCell<VecDeque<TaskRef>>,
    streak: Cell<u32>,
    tick: Cell<u32>,
    /// When the stealable queue last grew past `OFFER_MIN` without an offer
    /// made since (see `OFFER_DELAY`).
    backlog_since: Cell<Option<Instant>>,
    /// Who makes the wakes now: `Joiners` while a task that just finished
    /// wakes its joiners (`finishing`), `Io` while an I/O poll wakes the
    /// tasks of ready sockets (`delivering_io`); those wakes go to a
    /// stealable queue, not `next` (see `schedule_woken`).
    waking: Cell<Waking>,
    /// Tasks that went idle here recently, still `RUNNING` (retained.rs).
    retained: Retained,
    /// Our side of the freeze, if other workers may rescue tasks from us
    /// (`rescue.rs`: a multi-thread runtime with more than one worker; if
    /// not, sections cost nothing). Points into `shared`, which we hold.
    watch: Option<NonNull<Watch>>,
    /// Our `seq` in our `Watch` (`rescue.rs`): odd inside a section.
    seq: Cell<usize>,
    /// As a rescuer: each worker's `seq` at our previous tick, and for how
    /// many ticks in a row it has not moved.
    seen_seq: Box<[Cell<usize>]>,
    stuck_ticks: Box<[Cell<u32>]>,
    /// As a rescuer: ticks in a row with no poll anywhere and every other
    /// worker asleep.
    quiet_ticks: Cell<u32>,
    seen_total: Cell<usize>,
    /// This worker's heap (`shared.heaps[index]`), at hand: every spawn
    /// and free on the worker looks it up.
    heap: NonNull<super::task_alloc::Heap>,
    /// `spawn_eager` calls left that spawn ordinary tasks, after a parasite
    /// inflated here (`schedule::inflate`).
    eager_penalty: Cell<u32>,
    /// A task of ours was just moved to a lower worker for hand-offs
    /// (`gather.rs`): the next time we run out of work we sleep rather
    /// than steal it, or its partner, back.
    gathered_away: Cell<bool>,
}

/// After a parasite inflated on a worker, its next this many `spawn_eager`
/// calls spawn ordinary tasks (the parasite paper's per-spawner penalty).
pub(crate) const EAGER_PENALTY: u32 = 10;

crate::loom::thread_local! {
    static CURRENT: Cell<*const WorkerCtx> = const { Cell::new(std::ptr::null()) };
}

/// The current thread's worker context, null off the workers (as
/// [`with_current`], for paths whose results should not pass through a
/// closure: a parasite's handle, returned by value). A non-null pointer
/// stays valid while the caller's frame is inside `WorkerCtx::enter`,
/// which encloses every poll on this thread: the caller derefs it only
/// for the duration of its own call.
#[inline(always)]
pub(crate) fn current_ptr() -> *const WorkerCtx {
    CURRENT.with(Cell::get)
}

/// Runs `f` with the current thread's worker context, if it is a worker.
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&WorkerCtx>) -> R) -> R {
    CURRENT.with(|c| {
        let p = c.get();
        // SAFETY: `CURRENT` points at a `WorkerCtx` on this thread's stack
        // for exactly the duration of `WorkerCtx::enter`, and is reset
        // before it goes away.
        f(unsafe { p.as_ref() })
    })
}

/// A worker's two stealable queues (module docs), kept by a current-thread
/// runtime between `block_on` calls.
pub(crate) struct LocalQueues {
    /// LIFO for the owner: spawned tasks and joiners.
    pub(crate) spawned: Deque<TaskRef>,
    /// FIFO: tasks that yielded, and woken tasks behind the others.
    pub(crate) yielded: Deque<TaskRef>,
}

impl WorkerCtx {
    pub(crate) fn new(shared: Arc<Shared>, index: usize, queues: LocalQueues) -> Self {
        let workers = shared.parkers.len();
        Self {
            watch: (shared.rescuable && super::rescue::freezable())
                .then(|| NonNull::from(&*shared.watches[index])),
            seq: Cell::new(0),
            seen_seq: (0..workers).map(|_| Cell::new(usize::MAX)).collect(),
            stuck_ticks: (0..workers).map(|_| Cell::new(0)).collect(),
            quiet_ticks: Cell::new(0),
            seen_total: Cell::new(0),
            eager_penalty: Cell::new(0),
            gathered_away: Cell::new(false),
            heap: NonNull::from(&shared.heaps[index]),
            shared,
            index,
            local: queues.spawned,
            yielded: queues.yielded,
            next: Cell::new(None),
            hot: RefCell::new(VecDeque::new()),
            streak: Cell::new(0),
            tick: Cell::new(0),
            waking: Cell::new(Waking::Task),
            backlog_since: Cell::new(None),
            retained: Retained::new(index),
        }
    }

    /// A wake on this thread: takes `task` out of our retained tasks if it
    /// is there (`Some`: the caller owns `RUNNING` for a queue entry, and the
    /// retained run's reference if `Some(true)`).
    /// A wake on this thread: if we retain `task` (`retained.rs`), takes
    /// it out of the ring and schedules it as woken here, with the entry
    /// `entry` makes from the task and whether the retained run's
    /// reference came along; else gives the task back. One section.
    #[inline(always)]
    pub(crate) fn wake_retained<T>(
        &self,
        task: T,
        as_ref: impl FnOnce(&T) -> &TaskRef,
        entry: impl FnOnce(T, bool) -> TaskRef,
    ) -> Result<(), T> {
        self.private(|| match self.retained.take(as_ref(&task)) {
            Some(owns_ref) => {
                self.schedule_woken_here(entry(task, owns_ref));
                Ok(())
            }
            None => Err(task),
        })
    }

    /// Runs `f`, which touches the state a rescuer may take over while we
    /// are stuck in a poll (`next`, `hot`, the retained ring), inside a
    /// section (`rescue.rs`).
    #[inline(always)]
    fn private<R>(&self, f: impl FnOnce() -> R) -> R {
        let Some(watch) = self.watch() else {
            return f();
        };
        let seq = self.seq.get();
        if seq % 2 == 1 {
            // Inside a section already (the loop's).
            return f();
        }
        // In a poll: the section puts `seq` back to the poll's value.
        watch.enter(seq);
        let r = f();
        watch.leave(seq);
        r
    }

    /// Runs `f` (a task's poll) outside the run loop's section, so that a
    /// rescuer may freeze us while it lasts.
    #[inline(always)]
    fn outside<R>(&self, f: impl FnOnce() -> R) -> R {
        let Some(watch) = self.watch() else {
            return f();
        };
        debug_assert_eq!(self.seq.get() % 2, 1, "the loop is inside its section");
        // A new even value for this poll (`rescue.rs`).
        let poll = self.seq.get().wrapping_add(1);
        self.seq.set(poll);
        watch.leave(poll);
        let r = f();
        watch.enter(poll);
        self.seq.set(poll.wrapping_add(1));
        r
    }

    #[inline(always)]
    fn watch(&self) -> Option<&Watch> {
        // SAFETY: it points into `self.shared`, which outlives `self`.
        self.watch.map(|w| unsafe { w.as_ref() })
    }

    /// How many tasks this worker retains.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn retained_count(&self) -> u32 {
        self.retained.len()
    }

    /// Releases a task that left our ring; queues it if it was woken: on
    /// worker `to`'s inbox if given (`inbox.rs`), else at the back of our
    /// yielded queue.
    fn release_retained(&self, task: IdleRun, to: Option<usize>) {
        // SAFETY: it came out of our ring, token cleared.
        if let Some(entry) = unsafe { TaskRef::release_retained(task) } {
            match to {
                Some(j) => {
                    self.count(super::metrics::Count::HandedOut);
                    if let Some(back) = self.shared.hand_over(j, entry) {
                        self.schedule_yielded(back);
                    }
                }
                None => self.schedule_yielded(entry),
            }
        }
    }

    /// Releases every retained task (before looking elsewhere, sleeping or
    /// stopping: retained tasks woken from other threads wait for this).
    /// Before looking elsewhere or sleeping (`hand_over`), the ones another
    /// worker's tasks woke go to that worker; when stopping, none moves.
    fn release_all_retained(&self, hand_over: bool) {
        let to = if hand_over {
            let flags = self.shared.retained_woken[self.index].take_down();
            self.take_inbox(flags);
            WokenHint::sole_waker(flags, self.index)
        } else {
            None
        };
        self.retained.release_all(|t| self.release_retained(t, to));
    }

    /// If `flags` (our hint, taken down) say tasks wait in our inbox, queues
    /// them as woken here: another worker handed them over because a task
    /// of ours woke them (`inbox.rs`).
    #[inline]
    fn take_inbox(&self, flags: usize) {
        if flags & WokenHint::INBOX != 0 {
            self.drain_inbox();
        }
    }

    #[cold]
    fn drain_inbox(&self) {
        self.shared.inboxes[self.index].take_all(|t| self.schedule_next_here(t));
    }

    /// A task whose turn here ended with it runnable, after its locks kept
    /// being held by `holder`, or (`handed_off`) we kept taking locks
    /// `holder` took last: handed to that worker if it is a lower one of
    /// this runtime (`gather.rs`); `Err` gives back an entry to queue here
    /// (the task, or another if that worker sleeps). After a move for
    /// hand-offs we sleep without stealing the next time we run out of
    /// work (`gather.rs`).
    #[cold]
    pub(crate) fn gather(
        &self,
        task: TaskRef,
        holder: u32,
        handed_off: bool,
    ) -> Result<(), TaskRef> {
        let workers = self.shared.parkers.len();
        let Some(j) = self.shared.lock_tags.target(holder, self.index, workers) else {
            return Err(task);
        };
        self.count(super::metrics::Count::Gathered);
        crate::trace::event!(worker = self.index, to = j, "gather");
        match self.shared.hand_over(j, task) {
            None => {
                self.gathered_away.set(handed_off);
                Ok(())
            }
            Some(back) => Err(back),
        }
    }

    /// A parasite inflated here: the next `EAGER_PENALTY` `spawn_eager`
    /// calls here spawn ordinary tasks.
    pub(crate) fn penalize_eager(&self) {
        self.eager_penalty.set(EAGER_PENALTY);
    }

    /// Whether a `spawn_eager` here may spawn a parasite; if not, one call
    /// of the penalty is used up.
    #[inline(always)]
    pub(crate) fn take_eager_turn(&self) -> bool {
        let left = self.eager_penalty.get();
        if left == 0 {
            return true;
        }
        self.eager_penalty.set(left - 1);
        false
    }

    /// This worker's task memory.
    #[inline(always)]
    pub(crate) fn heap(&self) -> &super::task_alloc::Heap {
        // SAFETY: it points into `self.shared`, which outlives `self`.
        unsafe { self.heap.as_ref() }
    }

    /// Gives back the stealable queues (current-thread flavour, between
    /// `block_on` calls), `next` and `hot` in them.
    pub(crate) fn into_local(self) -> LocalQueues {
        for t in self
            .next
            .into_inner()
            .into_iter()
            .chain(self.hot.into_inner())
        {
            self.local.push(t);
        }
        LocalQueues {
            spawned: self.local,
            yielded: self.yielded,
        }
    }

    /// Makes this the current thread's worker for the duration of `f`.
    pub(crate) fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Reset(*const WorkerCtx, u32);
        impl Drop for Reset {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(self.0));
                crate::loom::set_lock_tag(self.1);
                crate::op::forbid_blocking(None);
            }
        }
        let prev = CURRENT.with(|c| c.replace(self));
        let prev_tag = crate::loom::set_lock_tag(self.shared.lock_tags.of(self.index));
        crate::op::forbid_blocking(Some(
            "fibra: a blocking call (`.perform()`, `*_blocking`, `fibra::block_on`) on a fibra \
             runtime worker thread would stall every task on this worker; use `.await` instead \
             (or move the blocking work to `fibra::spawn_blocking`)",
        ));
        let _reset = Reset(prev, prev_tag);
        f()
    }

    /// Schedules a task woken by the task running here: into `next`, unless
    /// the waker is a task that just finished (its joiners) or an I/O poll
    /// (`schedule_joiner`): a finished task waits for no reply, so there is
    /// no hand-off to make; the joiner goes on the local queue, where it is
    /// the next task of this worker to run after `next` and `hot` (a
    /// fork-join parent goes on with its work while its children's results
    /// are fresh, as a Cilk continuation).
    #[inline]
    pub(crate) fn schedule_woken(&self, task: TaskRef) {
        self.private(|| self.schedule_woken_here(task));
    }

    /// [`schedule_woken`](Self::schedule_woken), inside a section.
    #[inline(always)]
    fn schedule_woken_here(&self, task: TaskRef) {
        if self.is_finishing() {
            self.schedule_joiner(task);
        } else {
            self.schedule_next_here(task);
        }
    }

    /// A wake while `finishing`: on the local queue; while delivering I/O
    /// events (`delivering_io`), on the `yielded` one. Out of line, so that
    /// the common wake (into `next`) stays small enough to be inlined into
    /// the waker.
    #[inline(never)]
    fn schedule_joiner(&self, task: TaskRef) {
        if self.waking.get() == Waking::Io {
            self.schedule_yielded(task);
        } else {
            self.schedule_back(task);
        }
    }

    /// Runs `f`, a finished task waking its joiners, with the wakes it
    /// makes queued on the local queue instead of in `next` (no hand-off
    /// to make).
    pub(crate) fn finishing<R>(&self, f: impl FnOnce() -> R) -> R {
        let _restore = Restore(&self.waking, self.waking.replace(Waking::Joiners));
        f()
    }

    /// Runs `f`, an I/O poll waking the tasks of every ready socket, with
    /// the wakes it makes queued at the back of the FIFO `yielded` queue:
    /// no hand-off to make, and served in the order their sockets became
    /// ready, after the tasks already runnable here. On the LIFO local
    /// queue, a busy server's later polls would run before the tasks an
    /// earlier poll woke, and those would wait for the queue to drain (a
    /// p99 latency many times the median).
    // Under loom there is no I/O driver (`park`, `poll_io_now`).
    #[cfg_attr(loom, allow(dead_code))]
    fn delivering_io<R>(&self, f: impl FnOnce() -> R) -> R {
        let _restore = Restore(&self.waking, self.waking.replace(Waking::Io));
        f()
    }

    /// Whether the wakes made now come from a task that finished or from
    /// an I/O poll (`finishing`, `delivering_io`), not from a running task.
    pub(crate) fn is_finishing(&self) -> bool {
        self.waking.get() != Waking::Task
    }

    /// Schedules a task woken by the task running here: into `next`
    /// (inside a section).
    #[inline(always)]
    fn schedule_next_here(&self, task: TaskRef) {
        let displaced = self.next.replace(Some(task));
        if let Some(old) = displaced {
            // A burst of wakes from the running task (a producer feeding
            // consumers): keep them here, next to the channel they share,
            // rather than let another core steal them and fight over it.
            self.schedule_hot(old);
        }
    }

    /// Schedules a task that the cooperative budget made yield: at the back
    /// of the `hot` queue, not the stealable one. Its ops were all ready, so
    /// it talks to tasks of this worker (a producer filling a buffer for a
    /// consumer here); on the stealable queue an idle worker would take it
    /// and make every message cross cores.
    pub(crate) fn schedule_hot(&self, task: TaskRef) {
        let overflow = self.private(|| {
            let mut hot = self.hot.borrow_mut();
            if hot.len() < HOT_MAX {
                hot.push_back(task);
                None
            } else {
                Some(task)
            }
        });
        if let Some(task) = overflow {
            self.schedule_yielded(task);
        }
    }

    /// Schedules a task on the local queue (a spawn, a joiner, a task an
    /// I/O poll woke): for this worker the next to run but `next` and
    /// `hot` (LIFO), for thieves the last.
    pub(crate) fn schedule_back(&self, task: TaskRef) {
        self.local.push(task);
        self.offer_work(self.local.len());
    }

    /// Schedules a task that yielded, or a parasite that inflated: at the
    /// back of the yielded queue, behind every other runnable task here.
    #[inline]
    pub(crate) fn schedule_yielded(&self, task: TaskRef) {
        self.yielded.push(task);
        self.offer_work(self.yielded.len());
    }

    /// Tasks in our stealable queues.
    #[inline]
    fn backlog(&self) -> usize {
        self.local.len() + self.yielded.len()
    }

    /// After a push to a stealable queue that now holds `len` tasks: a
    /// backlog of more than `OFFER_MIN` tasks starts the `OFFER_DELAY`
    /// clock, or is offered once it ran out (one queue's length is the
    /// trigger; `check_backlog` counts both).
    #[inline(always)]
    fn offer_work(&self, len: usize) {
        if len > OFFER_MIN && self.shared.stealers.len() > 1 {
            self.offer_backlog(len);
        }
    }

    /// `offer_work` with a backlog and other workers to offer it to.
    #[inline(never)]
    fn offer_backlog(&self, len: usize) {
        match self.backlog_since.get() {
            None => self.backlog_since.set(Some(Instant::now())),
            Some(_) if len % PUSH_CHECK_EVERY == 0 => self.check_backlog(),
            Some(_) => {}
        }
    }

    /// Offers the backlog to an idle worker if it lasted `OFFER_DELAY`;
    /// forgets it if it drained.
    fn check_backlog(&self) {
        let Some(since) = self.backlog_since.get() else {
            return;
        };
        if self.backlog() <= OFFER_MIN {
            self.backlog_since.set(None);
        } else if since.elapsed() >= OFFER_DELAY {
            self.shared.notify_idle();
            // Still there after another delay (the helper went back to
            // sleep, or there was none): offer again.
            self.backlog_since.set(Some(Instant::now()));
        }
    }

    fn next_task(&self) -> Option<TaskRef> {
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        if tick % INJECTOR_INTERVAL == 0 {
            // A new window of hand-offs (`gather.rs`).
            let _ = crate::loom::take_handoffs();
            let _ = self.poll_io_now();
            if let Some(t) = self.steal_injector() {
                return Some(t);
            }
        }
        let next = self.next.take();
        if let Some(t) = next {
            if self.streak.get() < MAX_NEXT_STREAK {
                self.streak.set(self.streak.get() + 1);
                return Some(t);
            }
            // Give the others a turn: behind the hot queue (it stays on
            // this worker: it is talking to tasks here).
            self.hot.borrow_mut().push_back(t);
        }
        self.streak.set(0);
        let hot = || self.hot.borrow_mut().pop_front();
        let yielded = || self.yielded.pop();
        // `pop` is not inlined; most turns find the local queue empty
        // (a task that yields or is woken does not go there).
        let local = || (!self.local.is_empty()).then(|| self.local.pop()).flatten();
        if tick % STEALABLE_FIRST_INTERVAL != 0 {
            hot().or_else(local).or_else(yielded)
        } else if tick % OLDEST_FIRST_INTERVAL == 0 {
            // Now and then the longest-waiting first (module docs).
            self.oldest_local().or_else(yielded).or_else(hot)
        } else if tick & STEALABLE_FIRST_INTERVAL == 0 {
            // The stealable queues before `hot` (where a task the budget
            // made yield waits), each first in turn.
            local().or_else(yielded).or_else(hot)
        } else {
            yielded().or_else(local).or_else(hot)
        }
        .or_else(|| self.steal_injector())
    }

    /// The oldest entry of our local queue: its thieves' end.
    fn oldest_local(&self) -> Option<TaskRef> {
        loop {
            match self.shared.stealers[self.index].steal() {
                Steal::Success(t) => return Some(t),
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
    }

    fn steal_injector(&self) -> Option<TaskRef> {
        loop {
            match self.shared.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(t) => return Some(t),
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
    }

    fn steal_others(&self) -> Option<TaskRef> {
        let n = self.shared.stealers.len();
        for k in 1..n {
            let j = (self.index + k) % n;
            // The victim's local queue first: its oldest entries are the
            // largest pieces of work it spawned.
            for victim in self.shared.stealable_of(j) {
                loop {
                    match victim.steal_batch_and_pop(&self.local) {
                        Steal::Success(t) => return Some(t),
                        Steal::Empty => break,
                        Steal::Retry => {}
                    }
                }
            }
        }
        None
    }

    /// Looks for work elsewhere as a searcher (`already` if the idle
    /// accounting already counts us as one).
    fn search(&self, already: bool) -> Option<TaskRef> {
        let idle = &self.shared.idle;
        if !already && !idle.start_searching() {
            return None;
        }
        let mut found = None;
        let mut step = 0;
        for _ in 0..SEARCH_ROUNDS {
            found = self.steal_injector().or_else(|| self.steal_others());
            if found.is_some()
                || self.shared.is_shutdown()
                || !self.shared.inboxes[self.index].is_empty()
            {
                // (A task handed to us: the loop takes it.)
                break;
            }
            crate::loom::spin_wait(&mut step);
        }
        self.stop_searching(found.is_some());
        if found.is_some() {
            self.count(super::metrics::Count::Steals);
            crate::trace::event!(worker = self.index, "steal");
        }
        found
    }

    /// Leaves the searchers. The last searcher to find work wakes another
    /// worker: there may be more work than one worker can take.
    fn stop_searching(&self, found: bool) {
        if self.shared.idle.stop_searching() && found {
            self.shared.notify_idle();
        }
    }

    /// Counts `c` on this worker's counters (`metrics.rs`); nothing
    /// without the feature `metrics`.
    #[inline(always)]
    fn count(&self, c: super::metrics::Count) {
        #[cfg(feature = "metrics")]
        self.shared.counters[self.index].bump(c);
        #[cfg(not(feature = "metrics"))]
        let _ = c;
    }

    /// Runs one task turn.
    #[inline(always)]
    fn run_task(&self, task: TaskRef) {
        self.count(super::metrics::Count::Polls);
        crate::coop::reset();
        // Counted per turn (`gather.rs`).
        crate::loom::take_contention();
        let idle = crate::trace::in_span!(
            "poll",
            { task_id = task.id(), worker = self.index },
            self.outside(|| task.run())
        );
        // Inside the loop's section again: our private state is ours.
        let hint = &self.shared.retained_woken[self.index];
        if idle.is_none() && self.retained.is_empty() {
            // Nothing to retain or release (a hint can only be stale, or
            // about our inbox): a task that finished, among others that do
            // (spawn-join).
            self.take_inbox(hint.take_down());
            return;
        }
        self.retained.turn(idle, |t| self.release_retained(t, None));
        let flags = hint.take_down();
        if flags == 0 {
            return;
        }
        // Handed to us: woken by our tasks before this turn ended.
        self.take_inbox(flags);
        // Woken from elsewhere during this turn: they go next, before a
        // task this turn's poll requeued (a yield comes after the wake it
        // delays); to the waker's worker if one worker's tasks woke them.
        let to = WokenHint::sole_waker(flags, self.index);
        self.retained.release_woken(|t| {
            // SAFETY: it came out of our ring, token cleared.
            let Some(entry) = (unsafe { TaskRef::release_retained(t) }) else {
                return;
            };
            let entry = match to {
                Some(j) => {
                    self.count(super::metrics::Count::HandedOut);
                    match self.shared.hand_over(j, entry) {
                        // Handed over.
                        None => return,
                        // Back: that worker sleeps.
                        Some(back) => back,
                    }
                }
                None => entry,
            };
            self.schedule_next_here(entry);
        });
    }

    /// Runs tasks until `done()` or shutdown.
    pub(crate) fn run(&self, done: impl Fn() -> bool) {
        // The loop runs inside a section (`rescue.rs`) but for the polls.
        // Whatever we retain goes back when we stop, even if a panic (a
        // foreign waker's, an output's drop) unwinds this loop; and
        // rescuers lose sight of us before we go.
        struct Stop<'a>(&'a WorkerCtx);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                let ctx = self.0;
                if let Some(watch) = ctx.watch().filter(|_| ctx.seq.get() % 2 == 0) {
                    // A panic unwound a poll (`outside`): back inside the
                    // loop's section before touching the ring.
                    watch.enter(ctx.seq.get());
                    ctx.seq.set(ctx.seq.get().wrapping_add(1));
                }
                ctx.release_all_retained(false);
                if let Some(watch) = ctx.watch() {
                    // Inside the loop's section: no rescuer holds us
                    // frozen while the pointer goes.
                    ctx.shared.workers_ctx[ctx.index]
                        .store(std::ptr::null_mut(), Ordering::Relaxed);
                    watch.leave(ctx.seq.get().wrapping_add(1));
                }
            }
        }
        if let Some(watch) = self.watch() {
            watch.enter(self.seq.get());
            self.seq.set(self.seq.get().wrapping_add(1));
            // Relaxed: rescuers read it only after a freeze, whose Acquire
            // load of our `seq` comes after this section's Release leave.
            self.shared.workers_ctx[self.index]
                .store(std::ptr::from_ref(self).cast_mut(), Ordering::Relaxed);
        }
        let _stop = Stop(self);
        let mut searching = false;
        loop {
            if done() || self.shared.is_shutdown() {
                if searching {
                    self.shared.idle.stop_searching();
                }
                crate::coop::unlimited();
                return;
            }
            if self.backlog_since.get().is_some() && self.tick.get() % CHECK_EVERY == 0 {
                self.check_backlog();
            }
            if let Some(task) = self.next_task() {
                if std::mem::take(&mut searching) {
                    // Woken as a searcher but found work at home: stop
                    // counting as one, or pushers would never wake anyone.
                    self.stop_searching(true);
                }
                self.run_task(task);
                continue;
            }
            if !self.retained.is_empty() {
                // Nothing queued here: what we retain is idle, and a wake
                // from elsewhere may be waiting on it. Then look again.
                self.release_all_retained(true);
                continue;
            }
            if !self.shared.inboxes[self.index].is_empty() {
                // Handed to us (`inbox.rs`); our hint's flags are stale.
                let _ = self.shared.retained_woken[self.index].take_down();
                self.drain_inbox();
                continue;
            }
            // Out of local work: I/O that is already in (a reply on a
            // loopback socket, say) before spinning to steal; one system
            // call, and only in a runtime that opened a socket.
            if self.poll_io_now() > 0 {
                continue;
            }
            // Our task just went to a lower worker (`gather.rs`): stealing
            // now would take it or its partner back. Sleep; the others'
            // backlog, if it grows, is offered as ever (`offer_work`).
            let gathered_away = self.gathered_away.replace(false);
            if gathered_away {
                if searching {
                    self.stop_searching(false);
                }
            } else if let Some(task) = self.search(searching) {
                searching = false;
                self.run_task(task);
                continue;
            }
            searching = false;
            if !self.shared.inboxes[self.index].is_empty() {
                continue;
            }
            // Out of work: give back task memory other threads freed.
            // SAFETY: we are this heap's worker.
            unsafe { self.heap().trim() };
            // Final look, then sleep.
            let idle = &self.shared.idle;
            let tick = self.park_timeout(false);
            // A ticking sleeper goes to the front of the sleepers: a pusher
            // wakes a sleeper from the back, so the watch goes on.
            idle.register_sleeper(self.index, tick.is_some());
            // If a waker picked us meanwhile (unregister fails), it counts us
            // as a searcher and its token is on the way: park takes it.
            if (self.shared.has_work_for(self.index, !gathered_away)
                || done()
                || self.shared.is_shutdown())
                && idle.unregister_sleeper(self.index)
            {
                continue;
            }
            let mut tick = tick;
            let rescued = loop {
                if tick.is_some() {
                    // SeqCst: see `Shared::ensure_watchdog`.
                    self.shared.ticking.fetch_add(1, Ordering::SeqCst);
                }
                self.count(super::metrics::Count::Parks);
                crate::trace::event!(worker = self.index, "park");
                let io_events = self.park(tick.map(|d| Instant::now() + d));
                if tick.is_some() {
                    self.shared.ticking.fetch_sub(1, Ordering::SeqCst);
                }
                if !idle.is_sleeper(self.index) {
                    // Popped by a pusher, which counted us as a searcher.
                    break false;
                }
                if io_events > 0 {
                    // The poll woke tasks (queued here): run them.
                    break true;
                }
                // A tick, or a call to watch: still a sleeper, so no final
                // look is owed; only a stuck worker's tasks bring us back.
                if self.rescue() {
                    break true;
                }
                tick = self.park_timeout(true);
            };
            if rescued && idle.unregister_sleeper(self.index) {
                searching = false;
            } else {
                // Woken for work, which we may then run for long: make
                // sure an idle worker watches (`rescue.rs`).
                if self.watch.is_some() {
                    self.shared.ensure_watchdog(self.index);
                }
                searching = !self.shared.is_shutdown();
            }
        }
    }

    /// Sleeps until unparked or `deadline`: in the runtime's I/O poll if
    /// it has a driver that no other worker is turning (`io/`), else on
    /// the parker's condvar. Returns how many I/O sources had events (their
    /// tasks were woken onto our queue).
    fn park(&self, deadline: Option<Instant>) -> usize {
        let parker = &self.shared.parkers[self.index];
        #[cfg(not(loom))]
        if let Some(driver) = self.shared.io.get() {
            if let Some(mut poller) = driver.try_poller() {
                return parker.park_polling(deadline, |timeout| {
                    self.delivering_io(|| driver.turn(&mut poller, timeout))
                });
            }
        }
        parker.park(deadline);
        0
    }

    /// Delivers the I/O events already in, without waiting, if the
    /// runtime has a driver and no other worker is turning it: a busy
    /// runtime's sockets are served between tasks, not only when a
    /// worker sleeps. One system call every `INJECTOR_INTERVAL` ticks,
    /// only in runtimes that opened a socket.
    /// Returns how many sources had events.
    fn poll_io_now(&self) -> usize {
        #[cfg(not(loom))]
        if let Some(driver) = self.shared.io.get() {
            if let Some(mut poller) = driver.try_poller() {
                // The woken tasks go to our `yielded` queue
                // (`delivering_io`): many may wake at once.
                return self
                    .delivering_io(|| driver.turn(&mut poller, Some(std::time::Duration::ZERO)));
            }
        }
        0
    }

    /// How long to sleep when out of work (`rescue.rs`): a tick while
    /// another worker is awake, or was busy in recent ticks; else until
    /// woken.
    /// `registered`: whether we count among the sleepers already.
    fn park_timeout(&self, registered: bool) -> Option<std::time::Duration> {
        // Only a worker that can rescue ticks (`rescue.rs`).
        self.watch?;
        // One watchdog is enough.
        // SeqCst: see `Shared::ensure_watchdog`.
        if self.shared.ticking.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let workers = self.shared.parkers.len();
        // Another worker is awake.
        let sleeping = self.shared.idle.sleeping() + usize::from(!registered);
        if sleeping < workers {
            self.quiet_ticks.set(0);
            return Some(TICK);
        }
        let total = self
            .shared
            .watches
            .iter()
            .fold(0usize, |a, w| a.wrapping_add(w.seq()));
        if total != self.seen_total.replace(total) {
            self.quiet_ticks.set(0);
            return Some(TICK);
        }
        let quiet = self.quiet_ticks.get() + 1;
        self.quiet_ticks.set(quiet);
        (quiet < QUIET_TICKS).then_some(TICK)
    }

    /// A tick: takes the private runnable tasks of every worker stuck in a
    /// poll since our previous tick into our own queue (`rescue.rs`).
    /// Only a stuck worker's tasks are taken: a worker that makes
    /// progress keeps its stealable queue too (an idle worker otherwise
    /// joins only through an offer, `OFFER_MIN`). Returns whether anything
    /// was taken.
    fn rescue(&self) -> bool {
        if self.watch.is_none() {
            return false;
        }
        let mut took = false;
        for (j, watch) in self.shared.watches.iter().enumerate() {
            // In the same poll (an even `seq`) as at our previous two
            // ticks: a poll that has lasted a whole tick twice (a shorter
            // spell, an OS hiccup, would move tasks that talk to the ones
            // there for nothing).
            let seq = watch.seq();
            let same = self.seen_seq[j].replace(seq) == seq && seq % 2 == 0;
            let ticks = if same {
                self.stuck_ticks[j].get() + 1
            } else {
                0
            };
            self.stuck_ticks[j].set(ticks);
            if j == self.index || ticks < 2 {
                continue;
            }
            // Its stealable queues: what it spawned or requeued before the
            // poll began.
            for victim in self.shared.stealable_of(j) {
                took |= loop {
                    match victim.steal_batch_and_pop(&self.local) {
                        Steal::Success(t) => {
                            self.local.push(t);
                            self.count(super::metrics::Count::Steals);
                            break true;
                        }
                        Steal::Empty => break false,
                        Steal::Retry => {}
                    }
                };
            }
            let Some(_frozen) = watch.try_freeze() else {
                continue;
            };
            // Relaxed: see `run`; the freeze ordered its store before us.
            let victim = self.shared.workers_ctx[j].load(Ordering::Relaxed);
            // SAFETY: a worker clears its pointer inside a section before
            // its context goes, and we hold it frozen outside every section.
            if let Some(victim) = unsafe { victim.as_ref() } {
                victim.surrender(|t| {
                    took = true;
                    self.count(super::metrics::Count::Steals);
                    self.local.push(t);
                });
            }
        }
        took
    }

    /// Gives up our private runnable tasks (we are frozen by a rescuer,
    /// which runs this on its thread, `rescue.rs`).
    fn surrender(&self, mut take: impl FnMut(TaskRef)) {
        if let Some(t) = self.next.take() {
            take(t);
        }
        for t in self.hot.borrow_mut().drain(..) {
            take(t);
        }
        let _ = self.shared.retained_woken[self.index].take_down();
        self.shared.inboxes[self.index].take_all(&mut take);
        self.retained.release_woken(|run| {
            // SAFETY: it came out of the ring, token cleared.
            if let Some(entry) = unsafe { TaskRef::release_retained(run) } {
                take(entry);
            }
        });
    }
}
