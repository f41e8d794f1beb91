//! Every task that has waited (returned `Pending`) and not finished, so
//! shutdown can drop each pending one exactly once. A task registers itself
//! after its first `Pending` poll, while it holds `RUNNING`; a task not
//! registered is either queued (shutdown finds it in the run queues) or
//! finished, so a task that finishes in its first poll (most spawned
//! tasks of a fork-join) never touches the registry.
//!
//! Sharded by task id so that spawns and completions on different workers
//! rarely meet on a lock; each shard is a slab (a vector of slots plus a free
//! list), and a task remembers its slot, so insert and remove are O(1)
//! without hashing.

use super::task::TaskRef;
use crate::loom::{AtomicUsize, Lock, Ordering};

#[cfg(not(loom))]
const SHARDS: usize = 16;
/// Under loom one: each shard's lock is a point where a model may switch
/// threads, and the drain takes them all.
#[cfg(loom)]
const SHARDS: usize = 1;

/// Where a task sits in the registry, or `UNREGISTERED`. Written by
/// `insert` and read by `remove`, both by the holder of the task's
/// `RUNNING` bit: Relaxed suffices, the `RUNNING` hand-over (AcqRel on the
/// task's state word) orders them.
pub(crate) struct Slot(AtomicUsize);

const UNREGISTERED: usize = usize::MAX;

impl Default for Slot {
    fn default() -> Self {
        Slot(AtomicUsize::new(UNREGISTERED))
    }
}

impl Slot {
    pub(crate) fn is_registered(&self) -> bool {
        self.0.load(Ordering::Relaxed) != UNREGISTERED
    }
}

#[derive(Default)]
struct Shard {
    slots: Vec<Option<TaskRef>>,
    free: Vec<usize>,
}

pub(crate) struct Registry {
    shards: Box<[Lock<Shard>]>,
}

impl Registry {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Lock::new(Shard::default())).collect(),
        }
    }

    // Under loom there is one shard (`SHARDS`).
    #[cfg_attr(loom, allow(clippy::modulo_one))]
    fn shard(&self, id: u64) -> &Lock<Shard> {
        // Task ids are addresses: skip the alignment bits and mix.
        let h = (id >> 4) ^ (id >> 12);
        &self.shards[(h as usize) % SHARDS]
    }

    pub(crate) fn insert(&self, task: TaskRef, slot: &Slot) {
        let mut shard = self.shard(task.id()).lock();
        let index = match shard.free.pop() {
            Some(i) => {
                shard.slots[i] = Some(task);
                i
            }
            None => {
                shard.slots.push(Some(task));
                shard.slots.len() - 1
            }
        };
        // Relaxed: see `Slot`.
        slot.0.store(index, Ordering::Relaxed);
    }

    pub(crate) fn remove(&self, id: u64, slot: &Slot) {
        let index = slot.0.load(Ordering::Relaxed);
        if index == UNREGISTERED {
            return;
        }
        let task = {
            let mut shard = self.shard(id).lock();
            match shard.slots.get_mut(index) {
                Some(entry) if entry.as_ref().is_some_and(|t| t.id() == id) => {
                    let task = entry.take();
                    shard.free.push(index);
                    task
                }
                _ => None, // drained by shutdown, or never registered
            }
        };
        // Dropped outside the lock: it may be the last reference.
        drop(task);
    }

    /// Takes every task out (shutdown).
    pub(crate) fn drain(&self) -> Vec<TaskRef> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            all.extend(shard.slots.drain(..).flatten());
            shard.free.clear();
        }
        all
    }
}
