//! Every live task, so shutdown can drop each pending one exactly once.
//!
//! Sharded by task id so that spawns and completions on different workers
//! rarely meet on a lock.

use super::task::TaskRef;
use crate::loom::Lock;
use std::collections::HashMap;

const SHARDS: usize = 16;

pub(crate) struct Registry {
    shards: Box<[Lock<HashMap<u64, TaskRef>>]>,
}

impl Registry {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Lock::new(HashMap::new())).collect(),
        }
    }

    fn shard(&self, id: u64) -> &Lock<HashMap<u64, TaskRef>> {
        &self.shards[(id as usize) % SHARDS]
    }

    pub(crate) fn insert(&self, task: TaskRef) {
        let id = task.id();
        self.shard(id).lock().insert(id, task);
    }

    pub(crate) fn remove(&self, id: u64) {
        let task = self.shard(id).lock().remove(&id);
        // Dropped outside the lock: it may be the last reference.
        drop(task);
    }

    /// Takes every task out (shutdown).
    pub(crate) fn drain(&self) -> Vec<TaskRef> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            all.extend(shard.lock().drain().map(|(_, t)| t));
        }
        all
    }
}
