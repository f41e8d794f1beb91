//! The timer wheel and the thread that drives it.
//!
//! A hashed timing wheel (Varghese & Lauck, scheme 6): `SLOTS` slots of one
//! millisecond; an entry goes in slot `tick % SLOTS`, where `tick` is the
//! millisecond its deadline falls in (rounded up), and is fired by the pass
//! over that slot that finds its deadline reached (entries further than one
//! revolution away wait for later passes). Entries live in a slab and are
//! doubly linked within their slot, so insert and cancel are O(1).
//!
//! Slots sort entries by the millisecond; each entry keeps its exact
//! deadline (nanoseconds since the driver started), and the driver sleeps
//! until the earliest one, not the end of its millisecond: a timer fires at
//! its deadline plus the driver's wake-up (tens of microseconds), never
//! early. (Firing at the next whole millisecond, as tokio's wheel does,
//! makes a task that sleeps 1 ms in a loop wake about 1 ms late every
//! time: each sleep starts just after a millisecond boundary.) Finding the
//! earliest deadline scans one slot, the first occupied one, under the
//! lock every insert takes; a slot of more than `DENSE_SLOT` entries is
//! not scanned but fired whole at the end of its millisecond, in one pass
//! (timers that dense fire up to a millisecond late, many tasks per
//! wake-up of the driver).
//!
//! Each entry is a waiter record of a time op's perform (see
//! `op/waiter.rs`): firing commits it like a channel commits a partner. As
//! for channels, records are dereferenced only under the wheel's lock, and the
//! owner removes its entry under that lock before its memory goes away.
//!
//! One driver thread ("fibra-timer") per process sleeps until the earliest
//! deadline, so no worker ever pays a system call for timers.

use crate::loom::{Condvar, Mutex, lock};
use crate::op::BlockCx;
use crate::op::waiter::Waiter;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SLOTS: usize = 1024;
const NIL: usize = usize::MAX;
/// A slot's width: one millisecond, in nanoseconds.
const TICK_NS: u64 = 1_000_000;
/// A slot with more entries than this is fired whole at the end of its
/// millisecond, not at each deadline: finding the earliest would scan
/// them all at every pass, under the lock every insert takes.
const DENSE_SLOT: u32 = 32;
/// No wake-up planned.
const NEVER: u64 = u64::MAX;

/// Identifies an entry for cancellation: slab index and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    index: usize,
    generation: u64,
}

struct Entry<T> {
    /// The millisecond the entry is fired in (its slot's, this revolution
    /// or a later one).
    tick: u64,
    /// Its exact deadline, in nanoseconds since the driver started; within
    /// `tick`, or before it for a deadline already passed when inserted.
    deadline: u64,
    generation: u64,
    /// What firing hands over (a time op's waiter record); `None` once
    /// fired or cancelled.
    item: Option<T>,
    prev: usize,
    next: usize,
}

/// The wheel's bookkeeping, over any item (the driver's are waiter
/// records; the tests' are numbers).
struct Wheel<T> {
    entries: Vec<Entry<T>>,
    free: Vec<usize>,
    heads: Vec<usize>,
    /// Entries per slot, every revolution counted.
    slot_len: Vec<u32>,
    len: usize,
    /// Every slot up to this tick has been processed: every entry of a
    /// tick up to it has fired.
    now_tick: u64,
    generation: u64,
    /// The deadline the driver plans to wake at (`NEVER`: not planned).
    wake_at: u64,
}

pub(crate) struct Driver {
    wheel: Mutex<Wheel<Waiter<()>>>,
    cv: Condvar,
    start: Instant,
}

/// The process-wide timer driver, started on first use.
pub(crate) fn driver() -> &'static Driver {
    static DRIVER: OnceLock<&'static Driver> = OnceLock::new();
    DRIVER.get_or_init(|| {
        let d: &'static Driver = Box::leak(Box::new(Driver {
            wheel: Mutex::new(Wheel::new()),
            cv: Condvar::new(),
            start: Instant::now(),
        }));
        std::thread::Builder::new()
            .name("fibra-timer".into())
            .spawn(move || {
                precise_sleeps();
                d.run()
            })
            .expect("fibra: could not start the timer thread");
        d
    })
}

/// Asks the kernel to end this thread's timed sleeps on time: Linux lets a
/// timed wait overrun by the thread's timer slack, 50 µs by default, to
/// batch wake-ups. One system call, when the timer thread starts.
fn precise_sleeps() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes the slack in nanoseconds and touches
    // nothing but the calling thread's scheduling attributes. A failure
    // leaves the default slack: timers a little later, nothing else.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

impl Driver {
    /// `t` in nanoseconds since the driver started (0 before it).
    fn ns_of(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.start).as_nanos()).unwrap_or(NEVER - 1)
    }

    /// Publishes the record of a time op that commits at `deadline`.
    pub(crate) fn insert(&self, deadline: Instant, cx: BlockCx<'_>) -> TimerKey {
        let deadline = self.ns_of(deadline);
        let mut w = lock(&self.wheel);
        let key = w.insert(deadline, Waiter::new(cx.state, cx.leaf, &()));
        if w.wakes_earlier_for(deadline) {
            drop(w);
            self.cv.notify_one();
        }
        key
    }

    /// Removes an entry if it has not fired.
    pub(crate) fn cancel(&self, key: TimerKey) {
        lock(&self.wheel).cancel(key);
    }

    fn run(&'static self) {
        let mut wheel = lock(&self.wheel);
        loop {
            let now = self.ns_of(Instant::now());
            let mut wakers = Vec::new();
            wheel.advance(now, |w: Waiter<()>| wakers.extend(w.commit()));
            wheel.wake_at = wheel.next_due();
            if !wakers.is_empty() {
                drop(wheel);
                // A foreign waker that panics must not kill this thread:
                // every later time op in the process would hang.
                crate::wake::wake_all(wakers);
                wheel = lock(&self.wheel);
                continue;
            }
            wheel = if wheel.wake_at == NEVER {
                self.cv.wait(wheel).unwrap_or_else(|e| e.into_inner())
            } else {
                let wait = Duration::from_nanos(wheel.wake_at.saturating_sub(now));
                self.cv
                    .wait_timeout(wheel, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            };
        }
    }
}

impl<T> Wheel<T> {
    fn new() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
            heads: vec![NIL; SLOTS],
            slot_len: vec![0; SLOTS],
            len: 0,
            now_tick: 0,
            generation: 0,
            wake_at: NEVER,
        }
    }

    /// Adds `item`, due at `deadline` (ns since the driver started).
    fn insert(&mut self, deadline: u64, item: T) -> TimerKey {
        // Its millisecond, rounded up; a deadline whose millisecond was
        // processed already (passed) fires on the next pass, from the
        // first tick not processed yet.
        let tick = deadline.div_ceil(TICK_NS).max(self.now_tick + 1);
        self.generation += 1;
        let slot = slot_of(tick);
        let entry = Entry {
            tick,
            deadline,
            generation: self.generation,
            item: Some(item),
            prev: NIL,
            next: self.heads[slot],
        };
        let index = match self.free.pop() {
            Some(i) => {
                self.entries[i] = entry;
                i
            }
            None => {
                self.entries.push(entry);
                self.entries.len() - 1
            }
        };
        let next = self.entries[index].next;
        if let Some(head) = self.entries.get_mut(next) {
            head.prev = index;
        }
        self.heads[slot] = index;
        self.slot_len[slot] += 1;
        self.len += 1;
        TimerKey {
            index,
            generation: self.generation,
        }
    }

    /// After an insert of `deadline`: whether the driver must wake earlier
    /// than it planned (then the plan is moved, and the caller notifies).
    fn wakes_earlier_for(&mut self, deadline: u64) -> bool {
        if deadline < self.wake_at {
            self.wake_at = deadline;
            true
        } else {
            false
        }
    }

    /// Removes the entry of `key` if it has not fired.
    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let live = self
            .entries
            .get(key.index)
            .is_some_and(|e| e.generation == key.generation && e.item.is_some());
        if live { self.remove(key.index) } else { None }
    }

    fn remove(&mut self, index: usize) -> Option<T> {
        let (prev, next, tick) = {
            let e = &self.entries[index];
            (e.prev, e.next, e.tick)
        };
        self.slot_len[slot_of(tick)] -= 1;
        if prev == NIL {
            self.heads[slot_of(tick)] = next;
        } else {
            self.entries[prev].next = next;
        }
        if next != NIL {
            self.entries[next].prev = prev;
        }
        self.free.push(index);
        self.len -= 1;
        self.entries[index].item.take()
    }

    /// Fires (hands to `fire`) every entry whose deadline is at or before
    /// `now` (ns since the driver started).
    fn advance(&mut self, now: u64, mut fire: impl FnMut(T)) {
        // The milliseconds wholly elapsed: everything in them is due. One
        // pass per tick, but never more than one revolution.
        let whole = now / TICK_NS;
        if whole > self.now_tick {
            let first = self.now_tick + 1;
            let last = whole.min(self.now_tick + SLOTS as u64);
            for t in first..=last {
                self.fire_slot(t, |e| e.tick <= whole, &mut fire);
            }
            self.now_tick = whole;
        }
        // The millisecond under way: the entries of its tick whose deadline
        // is reached (the rest, and the slot, wait); a dense slot is fired
        // whole at its end instead.
        let current = whole + 1;
        if self.is_dense(current) {
            return;
        }
        self.fire_slot(
            current,
            |e| e.tick == current && e.deadline <= now,
            &mut fire,
        );
    }

    /// Whether tick `t`'s slot is fired whole at its end (`DENSE_SLOT`).
    fn is_dense(&self, t: u64) -> bool {
        self.slot_len[slot_of(t)] > DENSE_SLOT
    }

    /// Fires the entries of tick `t`'s slot that `due` accepts.
    fn fire_slot(&mut self, t: u64, due: impl Fn(&Entry<T>) -> bool, fire: &mut impl FnMut(T)) {
        let mut i = self.heads[slot_of(t)];
        while i != NIL {
            let next = self.entries[i].next;
            if due(&self.entries[i]) {
                if let Some(item) = self.remove(i) {
                    fire(item);
                }
            }
            i = next;
        }
    }

    /// The earliest deadline worth waking for (`NEVER` if none): the
    /// earliest of the first occupied slot ahead, or the end of the
    /// slot's millisecond if it holds only entries of later revolutions
    /// or is dense.
    fn next_due(&self) -> u64 {
        if self.len == 0 {
            return NEVER;
        }
        for d in 1..=SLOTS as u64 {
            let t = self.now_tick + d;
            let mut i = self.heads[slot_of(t)];
            if i == NIL {
                continue;
            }
            if self.is_dense(t) {
                return t.saturating_mul(TICK_NS);
            }
            let mut earliest = NEVER;
            while i != NIL {
                let e = &self.entries[i];
                if e.tick == t {
                    earliest = earliest.min(e.deadline);
                }
                i = e.next;
            }
            // Entries of tick `t` are due within its millisecond (or
            // passed); others come round in a later revolution, and the
            // pass at `t`'s end moves nothing but the wheel.
            return earliest.min(t.saturating_mul(TICK_NS));
        }
        (self.now_tick + SLOTS as u64).saturating_mul(TICK_NS)
    }
}

/// The slot of tick `t`.
fn slot_of(t: u64) -> usize {
    (t % SLOTS as u64) as usize
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const MS: u64 = TICK_NS;

    fn fired(w: &mut Wheel<u32>, now: u64) -> Vec<u32> {
        let mut out = Vec::new();
        w.advance(now, |i| out.push(i));
        out.sort_unstable();
        out
    }

    #[test]
    fn an_entry_fires_at_its_deadline_not_at_the_end_of_its_millisecond() {
        let mut w = Wheel::new();
        w.insert(5 * MS + 300_000, 1);
        assert_eq!(w.next_due(), 5 * MS + 300_000);
        assert_eq!(fired(&mut w, 5 * MS + 299_999), Vec::<u32>::new());
        assert_eq!(fired(&mut w, 5 * MS + 300_000), vec![1]);
        assert_eq!(w.next_due(), NEVER);
    }

    #[test]
    fn the_earliest_deadline_of_a_slot_is_the_next_due_and_the_rest_wait() {
        let mut w = Wheel::new();
        w.insert(3 * MS + 900_000, 1);
        w.insert(3 * MS + 100_000, 2);
        w.insert(3 * MS + 500_000, 3);
        w.insert(7 * MS, 4);
        assert_eq!(w.next_due(), 3 * MS + 100_000);
        assert_eq!(fired(&mut w, 3 * MS + 500_000), vec![2, 3]);
        assert_eq!(w.next_due(), 3 * MS + 900_000);
        // Late: everything up to now, across whole milliseconds.
        assert_eq!(fired(&mut w, 7 * MS + 1), vec![1, 4]);
        assert_eq!(w.len, 0);
    }

    #[test]
    fn a_deadline_already_passed_fires_on_the_next_pass() {
        let mut w = Wheel::new();
        assert!(fired(&mut w, 10 * MS + 400_000).is_empty());
        w.insert(2 * MS, 1);
        w.insert(10 * MS + 100_000, 2);
        assert!(w.next_due() <= 10 * MS + 400_000);
        assert_eq!(fired(&mut w, 10 * MS + 400_000), vec![1, 2]);
    }

    #[test]
    fn an_entry_a_revolution_away_waits_for_its_own_pass() {
        let mut w = Wheel::new();
        let later = (SLOTS as u64 + 4) * MS + 10;
        w.insert(later, 1);
        w.insert(4 * MS + 10, 2);
        assert_eq!(w.next_due(), 4 * MS + 10);
        assert_eq!(fired(&mut w, 4 * MS + 20), vec![2]);
        // The same slot holds only the later revolution: wake at the
        // slot's millisecond, then nothing fires.
        assert_eq!(w.next_due(), 5 * MS);
        assert!(fired(&mut w, 6 * MS).is_empty());
        assert_eq!(fired(&mut w, later), vec![1]);
    }

    #[test]
    fn an_insert_wakes_the_driver_only_before_its_plan() {
        let mut w = Wheel::new();
        w.insert(9 * MS, 1);
        assert!(w.wakes_earlier_for(9 * MS));
        w.insert(12 * MS, 2);
        assert!(!w.wakes_earlier_for(12 * MS));
        w.insert(3 * MS, 3);
        assert!(w.wakes_earlier_for(3 * MS));
        assert_eq!(w.wake_at, 3 * MS);
    }

    #[test]
    fn a_dense_slot_fires_whole_at_the_end_of_its_millisecond() {
        let mut w = Wheel::new();
        for i in 0..=DENSE_SLOT as u64 {
            w.insert(4 * MS + 100 + i, i as u32);
        }
        assert_eq!(w.next_due(), 5 * MS);
        assert!(fired(&mut w, 4 * MS + 500_000).is_empty());
        assert_eq!(fired(&mut w, 5 * MS).len(), DENSE_SLOT as usize + 1);
        assert_eq!(w.slot_len.iter().sum::<u32>(), 0);
    }

    #[test]
    fn a_cancelled_entry_never_fires_and_its_key_goes_stale() {
        let mut w = Wheel::new();
        let k = w.insert(2 * MS, 1);
        let k2 = w.insert(2 * MS, 2);
        assert_eq!(w.cancel(k), Some(1));
        assert_eq!(w.cancel(k), None);
        // The slab entry is reused: the old key does not remove the new one.
        let k3 = w.insert(3 * MS, 3);
        assert_eq!(w.cancel(k), None);
        assert_eq!(fired(&mut w, 3 * MS), vec![2, 3]);
        assert_eq!((w.cancel(k2), w.cancel(k3)), (None, None));
    }
}
