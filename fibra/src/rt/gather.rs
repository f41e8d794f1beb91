//! Gathering: tasks that contend for the same locks from two workers move
//! to one of them.
//!
//! Two tasks that never wait for each other (two producers filling one
//! buffered channel, a task retrying a `select` with `else` against its
//! partner) are never woken by each other either, so the hand-offs that
//! gather partners (`next`, `inbox.rs`) never bring them together: once
//! an idle worker steals one of them, they run on two cores, and every
//! operation on what they share moves its cache lines across cores (about a
//! microsecond each on this project's machines) and often finds its lock
//! held. On one worker they would take turns at a fraction of the cost.
//!
//! Every [`Lock`](crate::loom::Lock) word holds its holder's tag, which
//! names the worker (of which runtime) whose thread holds it, and the lock
//! keeps the tag of the thread that took it last. Two signals come of it:
//!
//! * *Contention*: an acquisition that finds the lock held counts, per
//!   task turn, and remembers the holder (`crate::loom::take_contention`).
//!   A task whose turn ends with it runnable (it yielded, or the
//!   cooperative budget made it yield) after at least [`GATHER_MIN`] such
//!   acquisitions, the last against a worker of the same runtime with a
//!   lower index, moves to that worker.
//! * *Hand-offs*: an acquisition of a lock another thread took last counts
//!   too (`crate::loom::take_handoffs`): the lock's
//!   line, and usually what it guards, just crossed from that thread's
//!   core. Tasks that take turns at a buffered channel or retry a `select`
//!   with `else` against each other rarely find a lock held (a critical
//!   section is a few instructions) but find one handed over at nearly
//!   every operation. A worker counts them over windows of 61 turns (it
//!   starts again whenever it looks at the injector, `worker.rs`); a task
//!   that yields of its own accord after [`HANDOFF_MIN`] of them in the
//!   window, the last from a lower worker of the same runtime, moves to
//!   that worker. A task the cooperative
//!   budget stopped does not move for hand-offs: it was busy, and tasks
//!   that message each other with work to do on both cores (`erlang/
//!   hackbench`) hand locks over as often as tasks that spin.
//!
//! A task moves through `Shared::hand_over` (that worker's inbox, then its
//! `next` slot, where thieves do not take it) instead of being queued here.
//! Tasks move only downwards, so two tasks never swap places: they end on
//! the lower worker of the two. The worker a task left for hand-offs then
//! sleeps without stealing (stealing would take the task, or its partner,
//! back: tasks that yield sit in stealable queues), unless the injector or
//! its inbox has work; the lower worker's backlog, if it grows, is offered
//! to it as any backlog is (`worker.rs`, `offer_work`).
//!
//! Tasks with parallel work are left alone: a task that computes between
//! its operations rarely finds a lock held and makes few operations a turn
//! (far fewer than [`HANDOFF_MIN`] in a window), and one
//! that blocks is placed by its wakes (moving only at a yield, the signals
//! never move a task that waits).
//!
//! A tag is `base | (index + 1)`, `base` a per-runtime multiple of 2^16
//! from a global counter; threads that are no worker write
//! [`OTHER_THREAD`](crate::loom::OTHER_THREAD) (base 0). The counter wraps
//! after 65,535 runtimes: two live runtimes may then share a base, and a
//! task may be handed to a worker of its own runtime whose namesake in the
//! other runtime held the lock. That misplaces a task, nothing more.

use std::sync::atomic::{AtomicU32, Ordering};

/// Contended acquisitions in one turn that move a task (one could be a
/// coincidence; a producer on a shared channel contends many times in its
/// 128 operations).
pub(crate) const GATHER_MIN: u32 = 4;
/// Hand-offs (acquisitions of locks another thread held last) in one
/// window of a worker's turns (module docs) that move a task that yields.
pub(crate) const HANDOFF_MIN: u32 = 8;

/// Workers' tag bits per runtime.
const INDEX_BITS: u32 = 16;

/// The next runtime's base (shifted by `INDEX_BITS`); starts at 1, as base
/// 0 is the other threads'.
static NEXT_BASE: AtomicU32 = AtomicU32::new(1);

/// A runtime's part of its workers' lock tags.
pub(crate) struct TagBase(u32);

impl TagBase {
    pub(crate) fn new() -> Self {
        // Relaxed: only distinct values matter. Wraps (module docs); a
        // base of 0 is skipped.
        let n = NEXT_BASE.fetch_add(1, Ordering::Relaxed) & 0xffff;
        Self(n.max(1) << INDEX_BITS)
    }

    /// The lock tag of worker `index`.
    pub(crate) fn of(&self, index: usize) -> u32 {
        // At most 2^16 - 1 workers take distinct tags; others share the
        // last (a misplaced task at worst: module docs).
        let slot = (index + 1).min((1 << INDEX_BITS) - 1) as u32;
        self.0 | slot
    }

    /// Where worker `me` of this runtime, of `workers`, hands a task whose
    /// turn found a lock held last by `holder`: a worker of this runtime
    /// with a lower index.
    pub(crate) fn target(&self, holder: u32, me: usize, workers: usize) -> Option<usize> {
        if holder >> INDEX_BITS != self.0 >> INDEX_BITS {
            return None;
        }
        let j = (holder & ((1 << INDEX_BITS) - 1)).checked_sub(1)? as usize;
        (j < me && j < workers).then_some(j)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::TagBase;
    use crate::loom::{Lock, OTHER_THREAD};
    use crate::rt::worker::with_current;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// Spins until `done()`, failing the test after five seconds.
    fn spin_until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::hint::spin_loop();
        }
    }

    /// The worker running the current task.
    fn here() -> usize {
        with_current(|ctx| ctx.expect("on a worker").index)
    }

    /// The two tasks' reports: the lower one's, and the upper one's after
    /// its yield moved it, both from worker 0.
    fn both_end_on_worker_0(reports: &std::sync::mpsc::Receiver<(&'static str, usize)>) {
        let mut got: Vec<_> = (0..2)
            .map(|_| reports.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort();
        assert_eq!(got, [("lower", 0), ("upper, after its yield", 0)]);
    }

    #[test]
    fn a_task_that_keeps_finding_a_lower_workers_lock_held_moves_there() {
        // Rounds go on until the upper task found the lock held often
        // enough (a round it was descheduled through finds it free).
        const MAX_ROUNDS: u32 = 1000;
        let rt = crate::Runtime::builder().workers(2).build().unwrap();
        let lock = Arc::new(Lock::new(()));
        let arrived = Arc::new(AtomicUsize::new(0));
        // Round `r` of the lower task holds the lock (`held == r`); the
        // upper one has taken it after (`taken == r`).
        let held = Arc::new(AtomicU32::new(0));
        let taken = Arc::new(AtomicU32::new(0));
        let enough = Arc::new(AtomicBool::new(false));
        let (report, reports) = std::sync::mpsc::channel();
        for _ in 0..2 {
            let (lock, arrived, held, taken, enough, report) = (
                lock.clone(),
                arrived.clone(),
                held.clone(),
                taken.clone(),
                enough.clone(),
                report.clone(),
            );
            rt.spawn(async move {
                // Both spin here until both run: on the two workers, at once.
                arrived.fetch_add(1, Ordering::SeqCst);
                spin_until("both tasks", || arrived.load(Ordering::SeqCst) == 2);
                let me = here();
                if me == 0 {
                    // The lower worker's task holds the lock, round by round.
                    for r in 1..=MAX_ROUNDS {
                        let guard = lock.lock();
                        held.store(r, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(2));
                        drop(guard);
                        spin_until("the upper task's round", || {
                            taken.load(Ordering::SeqCst) == r
                        });
                        if enough.load(Ordering::SeqCst) {
                            break;
                        }
                    }
                    // Ends its turn once the other was handed here.
                    spin_until("the hand-over", || {
                        with_current(|ctx| !ctx.expect("on a worker").shared.inboxes[0].is_empty())
                    });
                    report.send(("lower", me)).unwrap();
                } else {
                    // The upper one finds it held, round after round...
                    for r in 1..=MAX_ROUNDS {
                        spin_until("the lower task's round", || {
                            held.load(Ordering::SeqCst) == r
                        });
                        drop(lock.lock());
                        if crate::loom::contention_count() >= super::GATHER_MIN {
                            enough.store(true, Ordering::SeqCst);
                        }
                        taken.store(r, Ordering::SeqCst);
                        if enough.load(Ordering::SeqCst) {
                            break;
                        }
                    }
                    assert!(enough.load(Ordering::SeqCst), "never found the lock held");
                    // ...so its yield hands it to the lower worker.
                    crate::yield_now().await;
                    report.send(("upper, after its yield", here())).unwrap();
                }
            });
        }
        both_end_on_worker_0(&reports);
    }

    #[test]
    fn a_lock_counts_a_hand_off_when_another_thread_released_it_last() {
        let lock = Arc::new(Lock::new(0u32));
        let tags = TagBase::new();
        let take = |lock: Arc<Lock<u32>>, tag: u32, times: u32| {
            std::thread::spawn(move || {
                crate::loom::set_lock_tag(tag);
                let _ = crate::loom::take_handoffs();
                for _ in 0..times {
                    *lock.lock() += 1;
                }
                crate::loom::take_handoffs()
            })
            .join()
            .unwrap()
        };
        // A fresh lock, then our own releases: no hand-off.
        assert_eq!(take(lock.clone(), tags.of(0), 3), (0, 0));
        // Worker 0 released it last: one hand-off, from worker 0's tag;
        // then worker 1's own releases again.
        assert_eq!(take(lock.clone(), tags.of(1), 3), (1, tags.of(0)));
        assert_eq!(take(lock.clone(), tags.of(0), 1), (1, tags.of(1)));
        assert_eq!(*lock.lock(), 7);
    }

    #[test]
    fn a_lock_excludes_whatever_tags_its_takers_leave() {
        // Four threads, two tags each way (workers of one runtime, another
        // runtime's, no worker), hammer one lock: every increment lands,
        // and nobody finds another inside.
        const EACH: u64 = 100_000;
        let lock = Arc::new(Lock::new((0u64, false)));
        let (a, b) = (TagBase::new(), TagBase::new());
        let tags = [a.of(0), a.of(1), b.of(0), OTHER_THREAD];
        let threads: Vec<_> = tags
            .into_iter()
            .map(|tag| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    crate::loom::set_lock_tag(tag);
                    for _ in 0..EACH {
                        let mut g = lock.lock();
                        assert!(!g.1, "two holders at once");
                        g.1 = true;
                        g.0 += 1;
                        g.1 = false;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(lock.lock().0, 4 * EACH);
    }

    #[test]
    fn a_task_that_keeps_taking_locks_a_lower_worker_released_moves_there() {
        // The two tasks take turns at a lock, never at once: no contention,
        // a hand-off at every acquisition of the upper one.
        let rt = crate::Runtime::builder().workers(2).build().unwrap();
        let lock = Arc::new(Lock::new(0u32));
        let turn = Arc::new(AtomicU32::new(0));
        let arrived = Arc::new(AtomicUsize::new(0));
        let (report, reports) = std::sync::mpsc::channel();
        let rounds = 2 * super::HANDOFF_MIN;
        for _ in 0..2 {
            let (lock, turn, arrived, report) =
                (lock.clone(), turn.clone(), arrived.clone(), report.clone());
            rt.spawn(async move {
                arrived.fetch_add(1, Ordering::SeqCst);
                spin_until("both tasks", || arrived.load(Ordering::SeqCst) == 2);
                let me = here();
                // Worker 0's task takes the lock at even turns, the other
                // at odd ones, all in one task turn each; they wait for
                // their turn outside the lock.
                for r in 0..rounds {
                    let mine = 2 * r + u32::from(me != 0);
                    spin_until("our turn", || turn.load(Ordering::SeqCst) == mine);
                    *lock.lock() += 1;
                    turn.store(mine + 1, Ordering::SeqCst);
                }
                if me == 0 {
                    // Ends its turn once the other was handed here.
                    spin_until("the hand-over", || {
                        with_current(|ctx| !ctx.expect("on a worker").shared.inboxes[0].is_empty())
                    });
                    report.send(("lower", me)).unwrap();
                } else {
                    let (handoffs, _) = crate::loom::handoffs();
                    assert!(handoffs >= super::HANDOFF_MIN, "{handoffs} hand-offs");
                    assert_eq!(crate::loom::contention_count(), 0, "never found it held");
                    // The yield hands it to the lower worker.
                    crate::yield_now().await;
                    report.send(("upper, after its yield", here())).unwrap();
                }
            });
        }
        both_end_on_worker_0(&reports);
    }

    #[test]
    fn a_task_moves_only_down_to_a_worker_of_its_own_runtime() {
        let (a, b) = (TagBase::new(), TagBase::new());
        assert_ne!(a.of(0), b.of(0));
        assert_ne!(a.of(0), 0);
        assert_eq!(a.target(a.of(0), 1, 2), Some(0));
        assert_eq!(a.target(a.of(1), 0, 2), None, "never upwards");
        assert_eq!(a.target(a.of(1), 1, 2), None, "not to itself");
        assert_eq!(a.target(a.of(2), 3, 4), Some(2));
        assert_eq!(a.target(b.of(0), 1, 2), None, "another runtime's");
        assert_eq!(a.target(OTHER_THREAD, 1, 2), None, "no worker's");
        assert_eq!(a.target(0, 1, 2), None);
        assert_eq!(a.target(a.of(5), 7, 4), None, "no such worker");
    }
}
