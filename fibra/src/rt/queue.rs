//! The run queues' types: crossbeam-deque's injector and work-stealing
//! deques, or, under `--cfg loom`, stand-ins with the same API built on
//! `crate::loom`'s mutex, so that a model of the whole runtime
//! (`loom_runtime.rs`) sees every push, pop and steal as a point where
//! another thread may run.
//!
//! The stand-ins are as strong as crossbeam's queues (each operation is
//! linearisable, a pop or steal takes each entry once), never stronger in a
//! way the runtime could lean on: a steal may find an entry in flight
//! between two queues missing from both, as crossbeam's may, and they never
//! return `Steal::Retry` (crossbeam's do, under contention).
//!
//! # Invariants (the loom stand-ins)
//!
//! * Each queue is one `VecDeque` behind one loom `Mutex`; every operation
//!   holds that lock and no other, so two workers stealing from each other
//!   cannot deadlock.
//! * A `Worker` and its `Stealer`s share one queue, FIFO (`new_fifo`): the
//!   owner pops from the front, where stealers steal too.
//! * `steal_batch_and_pop` takes its batch out of the source under the
//!   source's lock, then pushes it to the destination under the
//!   destination's: an entry is always owned by exactly one queue or by the
//!   stealer between the two.

#[cfg(not(loom))]
pub(crate) use crossbeam_deque::{Injector, Steal, Stealer, Worker};

#[cfg(loom)]
pub(crate) use self::model::{Injector, Stealer, Worker};
#[cfg(loom)]
pub(crate) use crossbeam_deque::Steal;

#[cfg(loom)]
mod model {
    use super::Steal;
    use crate::loom::{Arc, Mutex, lock};
    use std::collections::VecDeque;

    /// The most entries a batch steal moves, besides the one it returns
    /// (crossbeam moves up to 32; two keeps models small).
    const MAX_BATCH: usize = 2;

    /// One queue: the shared part of a `Worker` and its `Stealer`s, or an
    /// `Injector`.
    struct Queue<T>(Mutex<VecDeque<T>>);

    impl<T> Queue<T> {
        fn new() -> Self {
            Self(Mutex::new(VecDeque::new()))
        }

        fn push(&self, t: T) {
            lock(&self.0).push_back(t);
        }

        fn pop(&self) -> Option<T> {
            lock(&self.0).pop_front()
        }

        fn len(&self) -> usize {
            lock(&self.0).len()
        }

        fn steal(&self) -> Steal<T> {
            self.pop().map_or(Steal::Empty, Steal::Success)
        }

        /// Takes about half the entries (at most `MAX_BATCH` besides the
        /// first) into `dest`, and returns the first.
        fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Steal<T> {
            let (first, batch) = {
                let mut q = lock(&self.0);
                let Some(first) = q.pop_front() else {
                    return Steal::Empty;
                };
                let n = (q.len() / 2).min(MAX_BATCH);
                (first, q.drain(..n).collect::<Vec<_>>())
            };
            if !batch.is_empty() {
                let mut d = lock(&dest.0.0);
                d.extend(batch);
            }
            Steal::Success(first)
        }
    }

    /// A worker's own end of its queue.
    pub(crate) struct Worker<T>(Arc<Queue<T>>);

    impl<T> Worker<T> {
        pub(crate) fn new_fifo() -> Self {
            Self(Arc::new(Queue::new()))
        }

        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer(self.0.clone())
        }

        pub(crate) fn push(&self, t: T) {
            self.0.push(t);
        }

        pub(crate) fn pop(&self) -> Option<T> {
            self.0.pop()
        }

        pub(crate) fn len(&self) -> usize {
            self.0.len()
        }
    }

    /// Another thread's end of a worker's queue.
    pub(crate) struct Stealer<T>(Arc<Queue<T>>);

    impl<T> Stealer<T> {
        pub(crate) fn steal(&self) -> Steal<T> {
            self.0.steal()
        }

        pub(crate) fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Steal<T> {
            self.0.steal_batch_and_pop(dest)
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.0.len() == 0
        }
    }

    /// The runtime's global queue.
    pub(crate) struct Injector<T>(Queue<T>);

    impl<T> Injector<T> {
        pub(crate) fn new() -> Self {
            Self(Queue::new())
        }

        pub(crate) fn push(&self, t: T) {
            self.0.push(t);
        }

        pub(crate) fn steal(&self) -> Steal<T> {
            self.0.steal()
        }

        pub(crate) fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Steal<T> {
            self.0.steal_batch_and_pop(dest)
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.0.len() == 0
        }
    }
}
