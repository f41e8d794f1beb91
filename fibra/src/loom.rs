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
///
/// The lock word holds the holder's tag (never 0: [`set_lock_tag`]), so an
/// acquisition that finds the lock held learns whose thread holds it; and
/// the lock keeps its last holder's tag beside it, so an acquisition also
/// learns whether another thread held it last (a *hand-off*: its cache
/// line, and usually what it guards, just came from that thread's core).
/// The runtime counts both ([`take_contention`] per task turn,
/// [`take_handoffs`]) and gathers tasks that share resources across
/// workers on one of them (`rt/gather.rs`).
#[cfg(not(loom))]
pub(crate) struct Lock<T> {
    /// 0 while free, else the holder's tag. Acquire on take pairs with the
    /// Release on release.
    state: std::sync::atomic::AtomicU32,
    /// The tag of the last thread that took the lock (0 before the first):
    /// read and written only by the holder, so guarded by the lock (atomic
    /// only to be shared; Relaxed).
    last: std::sync::atomic::AtomicU32,
    value: std::cell::UnsafeCell<T>,
}

// SAFETY: the lock hands out `&mut T` to one holder at a time.
#[cfg(not(loom))]
unsafe impl<T: Send> Sync for Lock<T> {}
// SAFETY: owning the lock owns the `T`.
#[cfg(not(loom))]
unsafe impl<T: Send> Send for Lock<T> {}

/// The lock tag of a thread that is no runtime's worker.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const OTHER_THREAD: u32 = 1;

#[cfg(not(loom))]
std::thread_local! {
    /// What this thread writes into a [`Lock`] it takes (never 0).
    static LOCK_TAG: std::cell::Cell<u32> = const { std::cell::Cell::new(OTHER_THREAD) };
    /// Acquisitions of a [`Lock`] that found it held since the last
    /// [`take_contention`], and the holder's tag last found.
    static CONTENTION: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
    /// Acquisitions of a [`Lock`] another thread took last, since the last
    /// [`take_handoffs`], and that thread's tag, last found.
    static HANDOFFS: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
}

/// How many [`Lock`] acquisitions of this thread found that another thread
/// took the lock last, since the last call, and that thread's tag, last
/// found; starts the count again. (Under loom, never any.)
#[inline]
pub(crate) fn take_handoffs() -> (u32, u32) {
    #[cfg(not(loom))]
    return HANDOFFS.with(|c| c.replace((0, 0)));
    #[cfg(loom)]
    return (0, 0);
}

/// As [`take_handoffs`], leaving the count as it is.
#[inline]
pub(crate) fn handoffs() -> (u32, u32) {
    #[cfg(not(loom))]
    return HANDOFFS.with(std::cell::Cell::get);
    #[cfg(loom)]
    return (0, 0);
}

/// Sets the tag this thread writes into the [`Lock`]s it takes (nonzero);
/// returns the previous one.
pub(crate) fn set_lock_tag(tag: u32) -> u32 {
    debug_assert_ne!(tag, 0);
    #[cfg(not(loom))]
    return LOCK_TAG.with(|t| t.replace(tag));
    #[cfg(loom)]
    return tag;
}

/// How many [`Lock`] acquisitions of this thread found the lock held since
/// the last [`take_contention`], leaving the count as it is (tests).
#[cfg(all(test, not(loom)))]
pub(crate) fn contention_count() -> u32 {
    CONTENTION.with(|c| c.get().0)
}

/// How many [`Lock`] acquisitions of this thread found the lock held since
/// the last call, and the holder's tag last found; starts the count again.
/// (Under loom, where a `Lock` is loom's `Mutex`, never any.)
#[inline]
pub(crate) fn take_contention() -> (u32, u32) {
    #[cfg(not(loom))]
    return CONTENTION.with(|c| c.replace((0, 0)));
    #[cfg(loom)]
    return (0, 0);
}

#[cfg(not(loom))]
impl<T> Lock<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self {
            state: std::sync::atomic::AtomicU32::new(0),
            last: std::sync::atomic::AtomicU32::new(0),
            value: std::cell::UnsafeCell::new(value),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) -> LockGuard<'_, T> {
        let tag = LOCK_TAG.with(std::cell::Cell::get);
        // Acquire: pairs with the Release store of the last holder's
        // release (`LockGuard::drop`), so its writes are visible.
        if let Err(holder) =
            self.state
                .compare_exchange_weak(0, tag, Ordering::Acquire, Ordering::Relaxed)
        {
            self.lock_contended(tag, holder);
        }
        // Relaxed: the lock orders it (module docs of the field). A lock
        // that stays on one thread costs a load of its own line here.
        let last = self.last.load(Ordering::Relaxed);
        if last != tag {
            self.handed_off(tag, last);
        }
        LockGuard { lock: self }
    }

    /// We took the lock after `last`'s thread (0: nobody): a hand-off,
    /// counted; we are its last taker now.
    #[cold]
    fn handed_off(&self, tag: u32, last: u32) {
        // Relaxed: as in `lock`.
        self.last.store(tag, Ordering::Relaxed);
        if last != 0 {
            HANDOFFS.with(|c| c.set((c.get().0.saturating_add(1), last)));
        }
    }

    #[cold]
    fn lock_contended(&self, tag: u32, holder: u32) {
        // (A weak exchange may also fail on a free lock: not contention.)
        if holder != 0 {
            CONTENTION.with(|c| c.set((c.get().0.saturating_add(1), holder)));
        }
        let mut step = 0;
        loop {
            while self.state.load(Ordering::Relaxed) != 0 {
                spin_wait(&mut step);
            }
            // Acquire: as in `lock`.
            if self
                .state
                .compare_exchange_weak(0, tag, Ordering::Acquire, Ordering::Relaxed)
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
        self.lock.state.store(0, Ordering::Release);
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
