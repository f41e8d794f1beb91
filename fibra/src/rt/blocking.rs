//! `spawn_blocking`: a pool of OS threads for calls that block.
//!
//! Threads are started on demand (up to `MAX_THREADS`) and leave after
//! `KEEP_ALIVE` idle. The pool is process-wide: blocking work does not
//! belong to any one runtime's workers.

use super::JoinHandle;
use super::task::{Task, TaskRef};
use super::worker::with_current;
use crate::loom::{Condvar, Mutex, lock};
use std::collections::VecDeque;
use std::sync::OnceLock;
use std::time::Duration;

const MAX_THREADS: usize = 512;
const KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = TaskRef;

struct Pool {
    state: Mutex<PoolState>,
    cv: Condvar,
}

struct PoolState {
    jobs: VecDeque<Job>,
    idle: usize,
    threads: usize,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        state: Mutex::new(PoolState {
            jobs: VecDeque::new(),
            idle: 0,
            threads: 0,
        }),
        cv: Condvar::new(),
    })
}

impl Pool {
    fn submit(&'static self, job: Job) {
        let mut st = lock(&self.state);
        st.jobs.push_back(job);
        if st.idle > 0 {
            drop(st);
            self.cv.notify_one();
            return;
        }
        if st.threads < MAX_THREADS {
            st.threads += 1;
            drop(st);
            let spawned = std::thread::Builder::new()
                .name("fibra-blocking".into())
                .spawn(move || self.work());
            if spawned.is_err() {
                lock(&self.state).threads -= 1;
            }
        }
        // Otherwise an existing thread takes it when free.
    }

    fn work(&'static self) {
        let mut st = lock(&self.state);
        loop {
            if let Some(job) = st.jobs.pop_front() {
                drop(st);
                // A blocking job finishes in its one poll: nothing to retain.
                let retained = job.run();
                debug_assert!(retained.is_none());
                st = lock(&self.state);
                continue;
            }
            st.idle += 1;
            let (guard, timeout) = self
                .cv
                .wait_timeout(st, KEEP_ALIVE)
                .unwrap_or_else(|e| e.into_inner());
            st = guard;
            st.idle -= 1;
            if timeout.timed_out() && st.jobs.is_empty() {
                st.threads -= 1;
                return;
            }
        }
    }
}

/// Runs the blocking function `f` on a thread of the blocking pool, so it
/// does not stall the runtime's workers; await the handle for its result.
///
/// # Panics
///
/// Outside a fibra runtime's worker (the handle's task belongs to a runtime).
///
/// ```
/// fibra::run(async {
///     let h = fibra::spawn_blocking(|| {
///         std::thread::sleep(std::time::Duration::from_millis(5));
///         "slept"
///     });
///     assert_eq!(h.await.unwrap(), "slept");
/// });
/// ```
#[track_caller]
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let shared = with_current(|ctx| ctx.map(|c| c.shared.clone())).expect(
        "fibra::spawn_blocking called outside a fibra runtime; spawn a task or use std::thread",
    );
    shared.count_here(super::metrics::Count::Spawned);
    // A task whose future finishes on its first poll, run by a pool thread.
    // Not registered: shutdown leaves running blocking calls alone.
    let (task, handle) = Task::allocate(async move { f() }, shared);
    pool().submit(task);
    handle
}
