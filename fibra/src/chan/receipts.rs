//! The channel's side of the receipts of asynchronous sends queued beyond
//! capacity (`async_send.rs`, `Receipt::Queued`): who waits for which
//! index, and the values given back once the receiving side went.
//!
//! # Invariants (all under the channel's lock: `Receipts` lives in the
//! channel's `State`)
//!
//! * A receipt is known here only by its value's index (`seq`, see
//!   `meeting.rs`); one receipt per index.
//! * `wakers` and `ops` hold only indexes not yet consumed when they were
//!   registered. A pop that consumes one moves its waker (or commits its
//!   ops' records) to `woken`, which the unlock wakes outside the lock.
//! * No waker is cloned, dropped or woken here: they are moved in and out,
//!   and the callers drop or wake them once the lock is released.
//! * `forgotten` has a bit set for each index whose receipt was dropped
//!   while its value waited (bit `i` of the set is index
//!   `forgotten_base + i`); words wholly below the consumption mark are
//!   trimmed as new bits come.
//! * `returned` is filled once, when the receiving side goes: the values
//!   still waiting beyond capacity whose receipts are alive, by index from
//!   `returned_base` (the others are dropped then, outside the lock). Each
//!   is taken out once, by its receipt (which then says "returned") or when
//!   that receipt drops.

use crate::op::BlockCx;
use crate::op::waiter::{Registration, WaitQueue};
use std::collections::VecDeque;
use std::task::Waker;

pub(crate) struct Receipts<T> {
    /// Receipts awaited directly: their value's index and the waker.
    wakers: Vec<(u64, Waker)>,
    /// `consumed_op` performs: the index and its records.
    ops: Vec<(u64, WaitQueue<()>)>,
    /// Wakers to wake at the unlock.
    woken: Vec<Waker>,
    /// After the receiving side went: the values not consumed.
    returned: VecDeque<Option<T>>,
    /// The index of `returned[0]`.
    returned_base: u64,
    /// `Some` entries of `returned`.
    returned_left: usize,
    /// Indexes whose receipts were dropped while their values waited.
    forgotten: VecDeque<u64>,
    /// The index of bit 0 of `forgotten[0]` (a multiple of 64).
    forgotten_base: u64,
}

impl<T> Default for Receipts<T> {
    fn default() -> Self {
        Self {
            wakers: Vec::new(),
            ops: Vec::new(),
            woken: Vec::new(),
            returned: VecDeque::new(),
            returned_base: 0,
            returned_left: 0,
            forgotten: VecDeque::new(),
            forgotten_base: 0,
        }
    }
}

impl<T> Receipts<T> {
    /// Whether any receipt waits (else a pop has nothing to tell).
    #[inline(always)]
    pub(crate) fn watching(&self) -> bool {
        !self.wakers.is_empty() || !self.ops.is_empty()
    }

    /// The receipt of index `seq` (not consumed: `seq >= mark`, the
    /// consumption mark) was dropped: its value drops if the receiving
    /// side goes before anyone takes it.
    pub(crate) fn forget(&mut self, seq: u64, mark: u64) {
        while !self.forgotten.is_empty() && self.forgotten_base + 64 <= mark {
            self.forgotten.pop_front();
            self.forgotten_base += 64;
        }
        if self.forgotten.is_empty() {
            self.forgotten_base = mark & !63;
        }
        // At most the values in flight apart: fits.
        let bit = (seq - self.forgotten_base) as usize;
        let word = bit / 64;
        if self.forgotten.len() <= word {
            self.forgotten.resize(word + 1, 0);
        }
        self.forgotten[word] |= 1 << (bit % 64);
    }

    fn is_forgotten(&self, seq: u64) -> bool {
        let Some(bit) = seq.checked_sub(self.forgotten_base) else {
            return false;
        };
        let bit = usize::try_from(bit).unwrap_or(usize::MAX);
        self.forgotten
            .get(bit / 64)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }

    /// After a pop: moves the wakers of the indexes `consumed` says are
    /// consumed to `woken`, and commits their ops' records (their wakers
    /// too). Whether there is anything to wake.
    pub(crate) fn progress(&mut self, consumed: impl Fn(u64) -> bool) -> bool {
        let woken = &mut self.woken;
        // Moved, not cloned: no waker is dropped under the lock.
        let mut i = 0;
        while i < self.wakers.len() {
            if consumed(self.wakers[i].0) {
                woken.push(self.wakers.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
        self.ops.retain_mut(|(seq, q)| {
            if consumed(*seq) {
                q.commit_all(woken);
                false
            } else {
                true
            }
        });
        !self.woken.is_empty()
    }

    /// The wakers to wake now that the lock goes.
    pub(crate) fn take_wakers(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.woken)
    }

    /// The receiving side went: every waiting receipt is settled.
    pub(crate) fn commit_all(&mut self, wakers: &mut Vec<Waker>) {
        wakers.extend(self.wakers.drain(..).map(|(_, w)| w));
        for (_, q) in &mut self.ops {
            q.commit_all(wakers);
        }
        self.ops.clear();
    }

    /// The receiving side went with `values` waiting beyond capacity, the
    /// first of index `first`: those whose receipts are alive are kept for
    /// them; the others are returned, for the caller to drop outside the
    /// lock.
    pub(crate) fn keep_returned(&mut self, first: u64, values: VecDeque<T>) -> Vec<T> {
        let mut unwanted = Vec::new();
        self.returned = values
            .into_iter()
            .zip(first..)
            .map(|(v, seq)| {
                if self.is_forgotten(seq) {
                    unwanted.push(v);
                    None
                } else {
                    Some(v)
                }
            })
            .collect();
        self.returned_base = first;
        self.returned_left = self.returned.len() - unwanted.len();
        self.forgotten = VecDeque::new();
        if self.returned_left == 0 {
            self.returned = VecDeque::new();
        }
        unwanted
    }

    /// The value of index `seq` given back, if it is here (once).
    pub(crate) fn take_returned(&mut self, seq: u64) -> Option<T> {
        let i = usize::try_from(seq.wrapping_sub(self.returned_base)).ok()?;
        let v = self.returned.get_mut(i)?.take()?;
        self.returned_left -= 1;
        if self.returned_left == 0 {
            self.returned = VecDeque::new();
        }
        Some(v)
    }

    /// The receipt of index `seq` is awaited with `waker`: the waker it
    /// replaces, for the caller to drop outside the lock (a waker's drop is
    /// foreign code).
    pub(crate) fn set_waker(&mut self, seq: u64, waker: Waker) -> Option<Waker> {
        match self.wakers.iter_mut().find(|(s, _)| *s == seq) {
            Some((_, w)) => Some(std::mem::replace(w, waker)),
            None => {
                self.wakers.push((seq, waker));
                None
            }
        }
    }

    /// The receipt of index `seq` is no longer awaited: its waker, for the
    /// caller to drop outside the lock.
    pub(crate) fn remove_waker(&mut self, seq: u64) -> Option<Waker> {
        let i = self.wakers.iter().position(|(s, _)| *s == seq)?;
        Some(self.wakers.swap_remove(i).1)
    }

    /// Publishes a `consumed_op` perform's record for index `seq`.
    pub(crate) fn publish(&mut self, seq: u64, cx: BlockCx<'_>) -> Registration {
        let i = match self.ops.iter().position(|(s, _)| *s == seq) {
            Some(i) => i,
            None => {
                self.ops.push((seq, WaitQueue::default()));
                self.ops.len() - 1
            }
        };
        self.ops[i].1.publish(cx, &())
    }

    /// Withdraws a record published for index `seq` (if still there).
    pub(crate) fn remove(&mut self, seq: u64, reg: Registration) {
        if let Some(i) = self.ops.iter().position(|(s, _)| *s == seq) {
            self.ops[i].1.remove(reg);
            if self.ops[i].1.is_empty() {
                self.ops.swap_remove(i);
            }
        }
    }
}
