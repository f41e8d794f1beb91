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
//!   but `is_empty` and `len` holds that lock and no other, so two workers
//!   stealing from each other cannot deadlock.
//! * `len` mirrors the queue's length: stored (Release) under the lock after
//!   every change, loaded (Acquire) without it, as crossbeam's `is_empty`
//!   and `len` load its indices without a lock. A look at a queue's length
//!   therefore synchronises only with the change it reads, never with the
//!   lock's later holders: the idle protocol's Dekker check (`idle.rs`)
//!   must hold by its own fences, as it must over crossbeam's queues.
//! * A `Worker` and its `Stealer`s share one queue, FIFO (`new_fifo`: the
//!   owner pops from the front, where stealers steal too) or LIFO
//!   (`new_lifo`: the owner pops from the back, stealers steal from the
//!   front), as crossbeam's two flavours.
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
    use crate::loom::{Arc, AtomicUsize, Mutex, MutexGuard, Ordering, lock};
    use std::collections::VecDeque;

    /// The most entries a batch steal moves, besides the one it returns
    /// (crossbeam moves up to 32; two keeps models small).
    const MAX_BATCH: usize = 2;

    /// One queue: the shared part of a `Worker` and its `Stealer`s, or an
    /// `Injector`.
    struct Queue<T> {
        q: Mutex<VecDeque<T>>,
        len: AtomicUsize,
    }

    impl<T> Queue<T> {
        fn new() -> Self {
            Self {
                q: Mutex::new(VecDeque::new()),
                len: AtomicUsize::new(0),
            }
        }

        /// Publishes the length after a change, under the lock.
        fn publish(&self, q: &MutexGuard<'_, VecDeque<T>>) {
            // Release: pairs with `len`'s Acquire (module invariants).
            self.len.store(q.len(), Ordering::Release);
        }

        fn push(&self, t: T) {
            let mut q = lock(&self.q);
            q.push_back(t);
            self.publish(&q);
        }

        fn pop(&self) -> Option<T> {
            let mut q = lock(&self.q);
            let t = q.pop_front();
            self.publish(&q);
            t
        }

        fn pop_back(&self) -> Option<T> {
            let mut q = lock(&self.q);
            let t = q.pop_back();
            self.publish(&q);
            t
        }

        fn len(&self) -> usize {
            // Acquire: pairs with `publish`'s Release.
            self.len.load(Ordering::Acquire)
        }

        fn steal(&self) -> Steal<T> {
            self.pop().map_or(Steal::Empty, Steal::Success)
        }

        /// Takes about half the entries (at most `MAX_BATCH` besides the
        /// first) into `dest`, and returns the first.
        fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Steal<T> {
            let (first, batch) = {
                let mut q = lock(&self.q);
                let Some(first) = q.pop_front() else {
                    return Steal::Empty;
                };
                let n = (q.len() / 2).min(MAX_BATCH);
                let batch = q.drain(..n).collect::<Vec<_>>();
                self.publish(&q);
                (first, batch)
            };
            if !batch.is_empty() {
                let mut d = lock(&dest.0.q);
                d.extend(batch);
                dest.0.publish(&d);
            }
            Steal::Success(first)
        }
    }

    /// A worker's own end of its queue; `true`: LIFO for the owner.
    pub(crate) struct Worker<T>(Arc<Queue<T>>, bool);

    impl<T> Worker<T> {
        pub(crate) fn new_fifo() -> Self {
            Self(Arc::new(Queue::new()), false)
        }

        pub(crate) fn new_lifo() -> Self {
            Self(Arc::new(Queue::new()), true)
        }

        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer(self.0.clone())
        }

        pub(crate) fn push(&self, t: T) {
            self.0.push(t);
        }

        pub(crate) fn pop(&self) -> Option<T> {
            if self.1 {
                self.0.pop_back()
            } else {
                self.0.pop()
            }
        }

        pub(crate) fn len(&self) -> usize {
            self.0.len()
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.len() == 0
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

        pub(crate) fn len(&self) -> usize {
            self.0.len()
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

        pub(crate) fn len(&self) -> usize {
            self.0.len()
        }
    }
}
