//! The readiness slot of one registered I/O source: what the poller last
//! reported for it, and the tasks waiting for a direction to become ready.
//!
//! The poller (`driver.rs`) ORs the bits of each event into the word and
//! bumps its tick, then wakes the waiters of each direction that became
//! ready. A task that wants to do I/O waits until its direction's bit is
//! set ([`Readiness::poll_ready`]), tries the system call, and if the call
//! would block clears the bit ([`Readiness::clear`]), but only if no event
//! came since it looked (the tick is unchanged): an event that arrived
//! between its look and its clear is never erased. mio's registrations are
//! edge-triggered, so a bit cleared after `WouldBlock` is set again by the
//! next edge.
//!
//! # Invariants
//!
//! * A waiter is registered, and the poller takes the waiters to wake,
//!   under `waiters`' lock; a waiter re-reads the word under that lock
//!   before it registers. So either the waiter sees the poller's bits, or
//!   the poller, whose bits were stored before it took the lock, finds the
//!   waiter: a readiness edge never goes unnoticed.
//! * `PAUSED` is set (an event: waiters are woken) when a current-thread
//!   runtime leaves its `block_on`, and cleared when it enters it again.
//! * `SHUTDOWN` is set once, when the runtime owning the source shuts
//!   down (or its driver goes); it is never cleared, and it makes every
//!   wait ready at once (the I/O object then reports an error).
//! * No waker is woken while `waiters`' lock is held.

use crate::loom::{AtomicUsize, Mutex, Ordering, lock};
use std::task::{Context, Poll, Waker};

/// Ready to read (data, a connection to accept, or EOF).
pub(crate) const READABLE: usize = 1 << 0;
/// Ready to write (or a connect completed).
pub(crate) const WRITABLE: usize = 1 << 1;
/// The read side is closed: reads return EOF (never cleared).
pub(crate) const READ_CLOSED: usize = 1 << 2;
/// The write side is closed (never cleared).
pub(crate) const WRITE_CLOSED: usize = 1 << 3;
/// An error is pending on the socket (never cleared; the call reports it).
pub(crate) const ERROR: usize = 1 << 4;
/// The owning runtime shut down: every wait is over.
pub(crate) const SHUTDOWN: usize = 1 << 5;
/// The owning runtime is a current-thread one outside its `block_on`:
/// nothing polls the source, so a wait ends at once (with an error) instead
/// of hanging. Cleared when its `block_on` runs again.
pub(crate) const PAUSED: usize = 1 << 6;
const BITS: usize = 16;
const MASK: usize = (1 << BITS) - 1;

/// A direction a task waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl Direction {
    /// The bits that end a wait in this direction.
    fn ready_mask(self) -> usize {
        match self {
            Direction::Read => READABLE | READ_CLOSED | ERROR | SHUTDOWN | PAUSED,
            Direction::Write => WRITABLE | WRITE_CLOSED | ERROR | SHUTDOWN | PAUSED,
        }
    }

    /// The bit a `WouldBlock` clears.
    fn clear_mask(self) -> usize {
        match self {
            Direction::Read => READABLE,
            Direction::Write => WRITABLE,
        }
    }
}

/// What a wait saw: the word when it ended, to clear from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen(usize);

impl Seen {
    /// The runtime owning the source shut down.
    pub(crate) fn is_shutdown(self) -> bool {
        self.0 & SHUTDOWN != 0
    }

    /// The owning current-thread runtime is not running (`PAUSED`).
    pub(crate) fn is_paused(self) -> bool {
        self.0 & PAUSED != 0
    }
}

/// A waiter's place in the slot, kept by the future or op that waits so
/// that a later poll replaces its waker and its drop removes it.
#[derive(Debug, Default)]
pub(crate) struct WaitKey(Option<u64>);

/// The key of the `poll_read`/`poll_write`-style calls (the I/O traits),
/// which have nowhere to keep one: one waiter per direction, the latest
/// caller's waker (as tokio's `poll_*` methods). Futures and ops get keys
/// of their own.
const POLL_KEY: u64 = 0;

impl WaitKey {
    /// The shared key of the `poll_*` calls (see `POLL_KEY`); never
    /// forgotten: the poller removes it when it wakes it.
    pub(crate) fn for_poll() -> WaitKey {
        WaitKey(Some(POLL_KEY))
    }
}

struct Waiters {
    /// The next key of a future or op (after `POLL_KEY`).
    next_id: u64,
    read: Vec<(u64, Waker)>,
    write: Vec<(u64, Waker)>,
}

impl Default for Waiters {
    fn default() -> Self {
        Waiters {
            next_id: POLL_KEY + 1,
            read: Vec::new(),
            write: Vec::new(),
        }
    }
}

impl Waiters {
    fn list(&mut self, dir: Direction) -> &mut Vec<(u64, Waker)> {
        match dir {
            Direction::Read => &mut self.read,
            Direction::Write => &mut self.write,
        }
    }
}

/// The readiness slot of one source (see the module docs).
#[derive(Default)]
pub(crate) struct Readiness {
    /// The low `BITS` bits: the flags above; the rest: the tick, bumped by
    /// every event.
    word: AtomicUsize,
    waiters: Mutex<Waiters>,
}

impl Readiness {
    /// Whether `dir` is ready now; if not, registers `cx`'s waker under
    /// `key` (replacing the one registered before).
    pub(crate) fn poll_ready(
        &self,
        dir: Direction,
        key: &mut WaitKey,
        cx: &mut Context<'_>,
    ) -> Poll<Seen> {
        // Acquire: pairs with the poller's AcqRel update, so the I/O a
        // task then does comes after the event it saw.
        let word = self.word.load(Ordering::Acquire);
        if word & dir.ready_mask() != 0 {
            return Poll::Ready(Seen(word));
        }
        let mut waiters = lock(&self.waiters);
        // Again under the lock (the invariant): the poller stores its bits
        // before it takes the lock to wake.
        let word = self.word.load(Ordering::Acquire);
        if word & dir.ready_mask() != 0 {
            return Poll::Ready(Seen(word));
        }
        let list = waiters.list(dir);
        let id = match key.0 {
            Some(id) => id,
            None => {
                let id = waiters.next_id;
                waiters.next_id += 1;
                key.0 = Some(id);
                waiters.list(dir).push((id, cx.waker().clone()));
                return Poll::Pending;
            }
        };
        match list.iter_mut().find(|(i, _)| *i == id) {
            Some((_, w)) => w.clone_from(cx.waker()),
            // Woken (taken by the poller) but the bit was cleared since:
            // wait again under the same key.
            None => list.push((id, cx.waker().clone())),
        }
        Poll::Pending
    }

    /// Removes the waiter registered under `key`, if any.
    pub(crate) fn forget(&self, dir: Direction, key: &mut WaitKey) {
        if let Some(id) = key.0.take() {
            let removed = {
                let mut waiters = lock(&self.waiters);
                let list = waiters.list(dir);
                list.iter()
                    .position(|(i, _)| *i == id)
                    .map(|at| list.swap_remove(at))
            };
            // Dropped outside the lock: a waker's drop is foreign code.
            drop(removed);
        }
    }

    /// A call in direction `dir` would block: clears the direction's bit
    /// unless an event came since `seen` was read.
    pub(crate) fn clear(&self, dir: Direction, seen: Seen) {
        let mut cur = seen.0;
        // The tick of `seen` must still be the word's: otherwise an event
        // arrived after the look, and its bit stays.
        while cur >> BITS == seen.0 >> BITS {
            let new = cur & !dir.clear_mask();
            if new == cur {
                return;
            }
            // Relaxed on both sides: clearing publishes nothing (the task
            // will look again under the lock before it sleeps).
            match self
                .word
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Records an event (the poller): ORs `bits` in, bumps the tick, and
    /// wakes the waiters of every direction now ready.
    pub(crate) fn set(&self, bits: usize) {
        // AcqRel: Release publishes the event to the tasks that will see
        // it (their Acquire loads); Acquire keeps the update in order with
        // other pollers' (the driver may be turned by any worker).
        let before = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                let tick = (w >> BITS).wrapping_add(1);
                Some((tick << BITS) | (w & MASK) | (bits & MASK))
            })
            .unwrap_or_else(|w| w);
        // The flags now set (the tick does not matter to the masks).
        let word = before | (bits & MASK);
        // Inline for the usual one reader and one writer: no allocation
        // per event delivered.
        let woken: smallvec::SmallVec<[Waker; 2]> = {
            let mut waiters = lock(&self.waiters);
            let mut woken = smallvec::SmallVec::new();
            for dir in [Direction::Read, Direction::Write] {
                if word & dir.ready_mask() != 0 {
                    woken.extend(waiters.list(dir).drain(..).map(|(_, w)| w));
                }
            }
            woken
        };
        crate::wake::wake_all(woken);
    }

    /// Clears `PAUSED` (its runtime's `block_on` runs again); setting it is
    /// an event ([`set`](Self::set)), which wakes the waiters.
    pub(crate) fn unpause(&self) {
        // Release: pairs with the Acquire loads of the waits that follow.
        self.word.fetch_and(!PAUSED, Ordering::Release);
    }

    /// The word as it is now (for a non-waiting attempt: `try_read`).
    pub(crate) fn peek(&self, dir: Direction) -> Option<Seen> {
        // Acquire: as in `poll_ready`.
        let word = self.word.load(Ordering::Acquire);
        (word & dir.ready_mask() != 0).then_some(Seen(word))
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::loom::{Arc, AtomicBool, thread};
    use std::task::Wake;

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A task that looked, found nothing, and is about to clear after a
    /// `WouldBlock`, races the poller's event: the event is never lost —
    /// either the task sees the bit on its next look, or it is woken.
    #[test]
    fn loom_readiness_an_event_racing_a_clear_is_never_lost() {
        crate::loom::model(|| {
            let slot = Arc::new(Readiness::default());
            // The socket was readable once: the task read, then hit
            // `WouldBlock` with this view.
            slot.set(READABLE);
            let seen = slot.peek(Direction::Read).unwrap();
            let poller = {
                let slot = slot.clone();
                thread::spawn(move || slot.set(READABLE))
            };
            slot.clear(Direction::Read, seen);
            let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut key = WaitKey::default();
            let ready = slot
                .poll_ready(Direction::Read, &mut key, &mut Context::from_waker(&waker))
                .is_ready();
            poller.join().unwrap();
            assert!(
                ready || flag.0.load(Ordering::SeqCst),
                "the second event was lost"
            );
            slot.forget(Direction::Read, &mut key);
        });
    }

    /// A waiter registering races the poller and a shutdown: it is woken
    /// or sees the word ready, and a forgotten waiter is never woken.
    #[test]
    fn loom_readiness_register_races_event_and_forget() {
        crate::loom::model(|| {
            let slot = Arc::new(Readiness::default());
            let poller = {
                let slot = slot.clone();
                thread::spawn(move || slot.set(WRITABLE | SHUTDOWN))
            };
            let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut key = WaitKey::default();
            let ready = slot
                .poll_ready(Direction::Read, &mut key, &mut Context::from_waker(&waker))
                .is_ready();
            poller.join().unwrap();
            if !ready {
                assert!(flag.0.load(Ordering::SeqCst), "the shutdown was lost");
            }
            // Ready now either way.
            let again =
                slot.poll_ready(Direction::Read, &mut key, &mut Context::from_waker(&waker));
            assert!(matches!(again, Poll::Ready(s) if s.is_shutdown()));
            slot.forget(Direction::Read, &mut key);
            assert!(lock(&slot.waiters).read.is_empty());
        });
    }

    /// A waiting future dropped (its key forgotten) while the poller wakes
    /// the slot: the waker is woken at most once, or dropped, and the
    /// slot keeps no waiter of the dropped future.
    #[test]
    fn loom_readiness_a_drop_racing_the_poller_leaves_no_waiter() {
        crate::loom::model(|| {
            let slot = Arc::new(Readiness::default());
            let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut key = WaitKey::default();
            let pending = slot
                .poll_ready(Direction::Write, &mut key, &mut Context::from_waker(&waker))
                .is_pending();
            assert!(pending);
            let poller = {
                let slot = slot.clone();
                thread::spawn(move || slot.set(WRITABLE))
            };
            slot.forget(Direction::Write, &mut key);
            poller.join().unwrap();
            let waiters = lock(&slot.waiters);
            assert!(waiters.write.is_empty() && waiters.read.is_empty());
            // Woken once (before the forget) or not at all: the Arc counts
            // only our handle and the waker's, if it was never woken.
            assert!(std::sync::Arc::strong_count(&flag) <= 2);
        });
    }
}
