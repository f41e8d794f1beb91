//! The one place fibra's concurrent code gets its synchronisation types.
//!
//! Under `--cfg loom` every atomic, lock, cell and thread operation comes from
//! [`loom`](https://docs.rs/loom), so the models in `loom_*` tests explore the
//! interleavings of the real code; otherwise they are the standard library's.
//! Spin loops call [`spin_wait`], which under loom yields to the model checker
//! (a busy loop would never terminate there).

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    sync::{Arc, Mutex, MutexGuard},
    thread,
};

#[cfg(not(loom))]
pub(crate) use std::{
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    sync::{Arc, Mutex, MutexGuard},
    thread,
};

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
