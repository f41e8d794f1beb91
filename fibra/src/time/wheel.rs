//! The timer wheel and the thread that drives it.
//!
//! A hashed timing wheel (Varghese & Lauck, scheme 6): `SLOTS` slots of one
//! millisecond; an entry goes in slot `deadline_tick % SLOTS` and is fired by
//! the pass over that slot that finds its deadline reached (entries further
//! than one revolution away wait for later passes). Entries live in a slab and
//! are doubly linked within their slot, so insert and cancel are O(1).
//!
//! Each entry is a waiter record of a time op's perform (see
//! `op/waiter.rs`): firing commits it like a channel commits a partner. As
//! for channels, records are dereferenced only under the wheel's lock, and the
//! owner removes its entry under that lock before its memory goes away.
//!
//! One driver thread ("fibra-timer") per process sleeps until the earliest
//! occupied slot is due, so no worker ever pays a system call for timers.
//! Deadlines are rounded up to the next tick: a timer never fires early.

use crate::loom::{Condvar, Mutex, lock};
use crate::op::BlockCx;
use crate::op::waiter::Waiter;
use std::sync::OnceLock;
use std::task::Waker;
use std::time::{Duration, Instant};

const SLOTS: usize = 1024;
const NIL: usize = usize::MAX;

/// Identifies an entry for cancellation: slab index and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    index: usize,
    generation: u64,
}

struct Entry {
    tick: u64,
    generation: u64,
    /// The time op's waiter record; `None` once fired or cancelled.
    waiter: Option<Waiter<()>>,
    prev: usize,
    next: usize,
}

struct Wheel {
    entries: Vec<Entry>,
    free: Vec<usize>,
    heads: Vec<usize>,
    len: usize,
    /// Every slot up to this tick has been processed.
    now_tick: u64,
    generation: u64,
    /// When the driver plans to wake next (`u64::MAX`: not planned).
    wake_tick: u64,
}

pub(crate) struct Driver {
    wheel: Mutex<Wheel>,
    cv: Condvar,
    start: Instant,
}

/// The process-wide timer driver, started on first use.
pub(crate) fn driver() -> &'static Driver {
    static DRIVER: OnceLock<&'static Driver> = OnceLock::new();
    DRIVER.get_or_init(|| {
        let d: &'static Driver = Box::leak(Box::new(Driver {
            wheel: Mutex::new(Wheel {
                entries: Vec::new(),
                free: Vec::new(),
                heads: vec![NIL; SLOTS],
                len: 0,
                now_tick: 0,
                generation: 0,
                wake_tick: u64::MAX,
            }),
            cv: Condvar::new(),
            start: Instant::now(),
        }));
        std::thread::Builder::new()
            .name("fibra-timer".into())
            .spawn(move || d.run())
            .expect("fibra: could not start the timer thread");
        d
    })
}

impl Driver {
    /// The tick at or after `t` (rounded up: never early).
    fn tick_of(&self, t: Instant) -> u64 {
        let d = t.saturating_duration_since(self.start);
        let ms = d.as_millis() as u64;
        if d > Duration::from_millis(ms) {
            ms + 1
        } else {
            ms
        }
    }

    fn instant_of(&self, tick: u64) -> Instant {
        self.start + Duration::from_millis(tick)
    }

    /// Publishes the record of a time op that commits at `deadline`.
    pub(crate) fn insert(&self, deadline: Instant, cx: BlockCx<'_>) -> TimerKey {
        let tick = self.tick_of(deadline);
        let mut w = lock(&self.wheel);
        let key = w.insert(tick, Waiter::new(cx.state, cx.leaf, &()));
        if tick < w.wake_tick {
            w.wake_tick = tick;
            drop(w);
            self.cv.notify_one();
        }
        key
    }

    /// Removes an entry if it has not fired.
    pub(crate) fn cancel(&self, key: TimerKey) {
        let mut w = lock(&self.wheel);
        let live = w
            .entries
            .get(key.index)
            .is_some_and(|e| e.generation == key.generation && e.waiter.is_some());
        if live {
            w.remove(key.index);
        }
    }

    fn run(&'static self) {
        let mut wheel = lock(&self.wheel);
        loop {
            // Every tick up to the last whole millisecond elapsed is due.
            let elapsed = Instant::now().saturating_duration_since(self.start);
            let now = (elapsed.as_millis() as u64).max(wheel.now_tick);
            let mut wakers = Vec::new();
            wheel.advance(now, &mut wakers);
            wheel.wake_tick = wheel.next_due();
            if !wakers.is_empty() {
                drop(wheel);
                // A foreign waker that panics must not kill this thread:
                // every later time op in the process would hang.
                crate::wake::wake_all(wakers);
                wheel = lock(&self.wheel);
                continue;
            }
            wheel = if wheel.wake_tick == u64::MAX {
                self.cv.wait(wheel).unwrap_or_else(|e| e.into_inner())
            } else {
                let due = self.instant_of(wheel.wake_tick);
                let wait = due.saturating_duration_since(Instant::now());
                self.cv
                    .wait_timeout(wheel, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            };
        }
    }
}

impl Wheel {
    fn insert(&mut self, tick: u64, waiter: Waiter<()>) -> TimerKey {
        // A deadline already passed fires on the next pass.
        let tick = tick.max(self.now_tick + 1);
        self.generation += 1;
        let slot = (tick % SLOTS as u64) as usize;
        let entry = Entry {
            tick,
            generation: self.generation,
            waiter: Some(waiter),
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
        self.len += 1;
        TimerKey {
            index,
            generation: self.generation,
        }
    }

    fn remove(&mut self, index: usize) -> Option<Waiter<()>> {
        let (prev, next, tick) = {
            let e = &self.entries[index];
            (e.prev, e.next, e.tick)
        };
        if prev == NIL {
            self.heads[(tick % SLOTS as u64) as usize] = next;
        } else {
            self.entries[prev].next = next;
        }
        if next != NIL {
            self.entries[next].prev = prev;
        }
        self.free.push(index);
        self.len -= 1;
        self.entries[index].waiter.take()
    }

    /// Fires every entry due by `now`.
    fn advance(&mut self, now: u64, wakers: &mut Vec<Waker>) {
        if now <= self.now_tick {
            return;
        }
        // Passes needed: one per tick, but never more than one revolution.
        let first = self.now_tick + 1;
        let last = now.min(self.now_tick + SLOTS as u64);
        for t in first..=last {
            let slot = (t % SLOTS as u64) as usize;
            let mut i = self.heads[slot];
            while i != NIL {
                let next = self.entries[i].next;
                if self.entries[i].tick <= now {
                    wakers.extend(self.remove(i).and_then(Waiter::commit));
                }
                i = next;
            }
        }
        self.now_tick = now;
    }

    /// The earliest tick worth waking for: the first occupied slot ahead.
    fn next_due(&self) -> u64 {
        if self.len == 0 {
            return u64::MAX;
        }
        for d in 1..=SLOTS as u64 {
            let t = self.now_tick + d;
            if self.heads[(t % SLOTS as u64) as usize] != NIL {
                return t;
            }
        }
        self.now_tick + SLOTS as u64
    }
}
