//! The one place fibra's concurrent code gets its synchronisation types.
//!
//! Under `--cfg loom` every atomic, lock, cell and thread operation comes from
//! [`loom`](https://docs.rs/loom), so the models in `loom_*` tests explore the
//! interleavings of the real code; otherwise they are the standard library's.
//! Spin loops call [`spin_wait`], which under loom yields to the model checker
//! (a busy loop would never terminate there). Every loom model in the crate
//! runs through [`model`]. Thread-local storage goes
//! through [`thread_local!`] (loom runs its threads as coroutines on one OS
//! thread, so `std`'s thread-locals would be shared between model threads),
//! and the runtime reads the clock through [`Instant`] (under loom no clock
//! is read: see there).

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, fence},
    sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard},
    thread,
};

/// Runs `f` under loom: the runner of every `loom_models.rs` in the crate.
/// The preemption bound (default 3, or `LOOM_MAX_PREEMPTIONS`) keeps the
/// whole set of models short enough to run on every change; a bound of 5
/// also passes, but takes minutes per model.
#[cfg(all(test, loom))]
pub(crate) fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

#[cfg(not(loom))]
pub(crate) use std::{
    sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, fence},
    sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard},
    thread, thread_local,
    time::Instant,
};

/// loom's `thread_local!`, which takes the `const { .. }` initialisers of
/// fibra's thread-locals without the `const`.
#[cfg(loom)]
macro_rules! loom_thread_local {
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr };) => {
        loom::thread_local! { $(#[$attr])* $vis static $name: $t = $init; }
    };
}

#[cfg(loom)]
pub(crate) use loom_thread_local as thread_local;

/// `std::time::Instant` under loom: a model must replay the same way on
/// every execution, so no clock is read. Every instant is the same one, and
/// every delay counts as elapsed ([`Instant::elapsed`] is `Duration::MAX`):
/// a wait for time to pass (the runtime's backlog offer) is over at its
/// first check. Timed parks wait untimed (`rt/park.rs`).
#[cfg(loom)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Instant(());

#[cfg(loom)]
impl Instant {
    pub(crate) fn now() -> Self {
        Instant(())
    }

    pub(crate) fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::MAX
    }
}

/// What is left until a deadline: nothing (every delay elapsed).
#[cfg(loom)]
impl std::ops::Sub for Instant {
    type Output = std::time::Duration;

    fn sub(self, _: Instant) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

#[cfg(loom)]
impl std::ops::Add<std::time::Duration> for Instant {
    type Output = Instant;

    fn add(self, _: std::time::Duration) -> Instant {
        self
    }
}

/// `std`'s `UnsafeCell` with loom's closure-based access API, so the same code
/// compiles in both worlds and loom can check every access for races.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a shared pointer to the contents.
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with an exclusive pointer to the contents.
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// One step of a bounded busy wait on a state another thread is about to
/// change within a few instructions (a claimed opstate, a commit in flight).
///
/// `step` counts the iterations so far: the first few spin on the CPU, later
/// ones give the core away so a preempted partner can finish.
#[inline]
pub(crate) fn spin_wait(step: &mut u32) {
    #[cfg(loom)]
    {
        let _ = step;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    {
        if *step < 6 {
            for _ in 0..(1u32 << *step) {
                std::hint::spin_loop();
            }
        } else {
            std::thread::yield_now();
        }
        *step = step.saturating_add(1);
    }
}

/// Locks a mutex, treating poisoning as impossible: fibra never runs user
/// code while holding one of its own locks, so a panic cannot leave one
/// poisoned except through a bug in fibra itself; in that case the state is
/// still consistent at every unlock point and we carry on.
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(loom)]
    {
        m.lock().unwrap()
    }
    #[cfg(not(loom))]
    {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The lock fibra's resources (channels, join states, signals) use: held for
/// a handful of instructions and never across user code or a wake-up, so a
/// spin lock (one CAS to take, one store to release) beats a futex mutex
/// (two read-modify-writes). Under loom it is loom's `Mutex`, so models see
/// every acquisition.
#[cfg(not(loom))]
pub(crate) struct Lock<T> {
    /// `true` while held. Acquire on take pairs with the Release on release.
    locked: AtomicBool,
    value: std::cell::UnsafeCell<T>,
}

// SAFETY: the lock hands out `&mut T` to one holder at a time.
#[cfg(not(loom))]
unsafe impl<T: Send> Sync for Lock<T> {}
// SAFETY: owning the lock owns the `T`.
#[cfg(not(loom))]
unsafe impl<T: Send> Send for Lock<T> {}

#[cfg(not(loom))]
impl<T> Lock<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: std::cell::UnsafeCell::new(value),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) -> LockGuard<'_, T> {
        // Acquire: pairs with the Release store of the last holder's
        // release (`LockGuard::drop`), so its writes are visible.
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        LockGuard { lock: self }
    }

    #[cold]
    fn lock_contended(&self) {
        let mut step = 0;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                spin_wait(&mut step);
            }
            // Acquire: as in `lock`.
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// Holds a [`Lock`]; releases it when dropped.
#[cfg(not(loom))]
pub(crate) struct LockGuard<'a, T> {
    lock: &'a Lock<T>,
}

#[cfg(not(loom))]
impl<T> std::ops::Deref for LockGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: we hold the lock.
        unsafe { &*self.lock.value.get() }
    }
}

#[cfg(not(loom))]
impl<T> std::ops::DerefMut for LockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock, exclusively.
        unsafe { &mut *self.lock.value.get() }
    }
}

#[cfg(not(loom))]
impl<T> Drop for LockGuard<'_, T> {
    fn drop(&mut self) {
        // Release pairs with the Acquire of the next holder.
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(loom)]
pub(crate) struct Lock<T>(Mutex<T>);

#[cfg(loom)]
pub(crate) type LockGuard<'a, T> = MutexGuard<'a, T>;

#[cfg(loom)]
impl<T> Lock<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> LockGuard<'_, T> {
        self.0.lock().unwrap()
    }
}
