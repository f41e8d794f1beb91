//! Idle workers: how many search for work, who sleeps, and whom to wake.
//!
//! # Invariants
//!
//! * A worker that found no work registers in `sleepers` (and counts itself
//!   in `sleeping`) *before* a final look at every queue, with a SeqCst fence
//!   between; a pusher pushes *before* reading `searching`/`sleeping`, with a
//!   SeqCst fence between. So either the pusher sees the sleeper and wakes it,
//!   or the sleeper's final look sees the work (Dekker's pattern).
//! * At most half the workers (at least one) search at once, so idle workers
//!   do not all hammer the queues.
//! * Every access to `searching` and `sleeping` is SeqCst: they are the
//!   two sides of that Dekker check (with the fences), and the counts of
//!   who searches and who sleeps must be seen in one total order by
//!   pushers, sleepers and the idle workers deciding to tick
//!   (`rescue.rs`).
//! * A woken worker starts as a searcher; the pusher skips waking anyone while
//!   a searcher exists (it will find the work), which keeps OS wake-ups off
//!   the hand-off path.

use crate::loom::{AtomicUsize, Mutex, Ordering, fence, lock};

pub(crate) struct Idle {
    searching: AtomicUsize,
    sleeping: AtomicUsize,
    /// Indices of sleeping workers. Protects the decision of whom to wake.
    sleepers: Mutex<Vec<usize>>,
    workers: usize,
}

impl Idle {
    pub(crate) fn new(workers: usize) -> Self {
        Self {
            searching: AtomicUsize::new(0),
            sleeping: AtomicUsize::new(0),
            sleepers: Mutex::new(Vec::with_capacity(workers)),
            workers,
        }
    }

    /// Tries to become a searcher; false if enough workers already search.
    pub(crate) fn start_searching(&self) -> bool {
        let limit = self.workers.div_ceil(2).max(1);
        let mut n = self.searching.load(Ordering::Relaxed);
        loop {
            if n >= limit {
                return false;
            }
            match self.searching.compare_exchange_weak(
                n,
                n + 1,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(a) => n = a,
            }
        }
    }

    /// Stops searching; returns whether this was the last searcher.
    pub(crate) fn stop_searching(&self) -> bool {
        self.searching.fetch_sub(1, Ordering::SeqCst) == 1
    }

    /// After pushing work: wakes a sleeping worker if nobody searches.
    /// Returns the index to unpark, if any (unpark after this returns).
    pub(crate) fn worker_to_wake(&self) -> Option<usize> {
        // Pairs with the fence in `register_sleeper`.
        fence(Ordering::SeqCst);
        if self.searching.load(Ordering::SeqCst) != 0 || self.sleeping.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut sleepers = lock(&self.sleepers);
        let index = sleepers.pop()?;
        self.sleeping.fetch_sub(1, Ordering::SeqCst);
        // The woken worker searches first.
        self.searching.fetch_add(1, Ordering::SeqCst);
        Some(index)
    }

    /// How many workers sleep (registered sleepers).
    pub(crate) fn sleeping(&self) -> usize {
        self.sleeping.load(Ordering::SeqCst)
    }

    /// A sleeping worker other than `except`, left registered (to be woken
    /// as a watchdog, `rescue.rs`).
    pub(crate) fn some_sleeper(&self, except: usize) -> Option<usize> {
        lock(&self.sleepers).iter().copied().find(|&i| i != except)
    }

    /// Every sleeper, for shutdown.
    pub(crate) fn wake_all(&self) -> Vec<usize> {
        let mut sleepers = lock(&self.sleepers);
        self.sleeping.fetch_sub(sleepers.len(), Ordering::SeqCst);
        std::mem::take(&mut *sleepers)
    }

    /// Registers `index` as sleeping, at the front of the sleepers (woken
    /// last) if `front`; the caller then looks at every queue once more
    /// before parking.
    pub(crate) fn register_sleeper(&self, index: usize, front: bool) {
        let mut sleepers = lock(&self.sleepers);
        if front {
            sleepers.insert(0, index);
        } else {
            sleepers.push(index);
        }
        drop(sleepers);
        self.sleeping.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `worker_to_wake`.
        fence(Ordering::SeqCst);
    }

    /// Whether `index` is still a registered sleeper (no waker took it).
    pub(crate) fn is_sleeper(&self, index: usize) -> bool {
        lock(&self.sleepers).contains(&index)
    }

    /// Takes `index` back out of the sleepers (it found work in its final
    /// look). Returns false if a waker already removed it: then it was
    /// counted as a searcher and a wake-up is on its way.
    pub(crate) fn unregister_sleeper(&self, index: usize) -> bool {
        let mut sleepers = lock(&self.sleepers);
        match sleepers.iter().position(|&i| i == index) {
            Some(pos) => {
                sleepers.swap_remove(pos);
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }
}
