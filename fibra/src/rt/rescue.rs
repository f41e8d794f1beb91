//! Rescue of runnable tasks that a worker stuck in a long poll holds where
//! no other worker can steal them.
//!
//! A worker keeps some runnable tasks to itself: its `next` slot, its `hot`
//! queue, and the retained tasks a wake from elsewhere marked (`retained.rs`).
//! They are its alone so that the hand-off path costs no atomic
//! read-modify-write. While the worker polls a task that computes for a
//! long time without yielding, those tasks would wait for the poll to end.
//! An idle worker rescues them instead: while another worker is awake, an
//! idle worker parks for at most [`TICK`] and stays a sleeper (a tick does
//! not search), and a worker that has been in the same poll for two ticks
//! in a row is *stuck*; the idle worker takes its stealable queues, freezes
//! it, takes its private runnable tasks into its own queue, and thaws it.
//!
//! # The freeze: an asymmetric lock
//!
//! The owner touches its private scheduling state constantly and the
//! rescuer almost never, so the owner's side of the lock costs two plain
//! stores and a load, and the rescuer pays for the ordering:
//!
//! * Owner, entering a section: stores an odd `seq`; a light barrier; loads
//!   `frozen`: if set, it leaves (an even `seq`) and waits for the thaw.
//!   Leaving: stores an even `seq` (Release).
//! * Rescuer: sets `frozen` (a CAS: one rescuer at a time); a heavy
//!   barrier; loads `seq` (Acquire): odd means the owner is inside a section
//!   (or parked inside its loop): thaw and give up. Even means the owner is
//!   in a poll and will wait at its next section: the rescuer may touch the
//!   private state until it thaws (Release).
//!
//! The barriers order each side's store before its load (Dekker's pattern):
//! the light one is a compiler fence and the heavy one `membarrier(2)`'s
//! private expedited command, which runs a full memory barrier on every
//! core running a thread of this process. Where the kernel lacks that
//! command, workers are never frozen: an idle worker still steals a stuck
//! worker's stealable queues, but its private tasks wait for its poll to
//! end. Under loom both barriers are `SeqCst` fences (loom model `loom_a_frozen_worker_and_its_rescuer_never_touch_its_queue_together`).
//!
//! # Invariants
//!
//! * `seq` is odd exactly while the owner is inside a section; the owner
//!   touches `next`, `hot` and its retained ring only inside one, and never
//!   while `frozen` is set by a rescuer whose load saw an even `seq`.
//! * A rescuer touches another worker's private state only between a
//!   successful freeze and its thaw.
//! * The owner's loop is inside a section except while it polls a task, so
//!   a parked or searching worker is never frozen.

use crate::loom::{AtomicBool, AtomicUsize, Ordering, fence};
use std::time::Duration;

/// The longest an idle worker sleeps while another worker is awake: a
/// runnable task held by a stuck worker is rescued within three ticks.
pub(crate) const TICK: Duration = Duration::from_micros(500);

/// Ticks without a single poll on any worker after which an idle worker,
/// with every other worker asleep, stops ticking and sleeps until woken.
pub(crate) const QUIET_TICKS: u32 = 20;

/// One worker's side of the freeze, read by rescuers.
#[derive(Default)]
pub(crate) struct Watch {
    /// Odd while the owner is inside a section (module docs). Between two
    /// turns it grows by two, and a section inside a poll puts it back to
    /// the poll's value when it leaves, so an even value names one poll:
    /// unchanged across a tick, that poll lasted the whole tick.
    seq: AtomicUsize,
    /// Set by a rescuer holding (or trying to take) the freeze.
    frozen: AtomicBool,
}

impl Watch {
    /// Owner: enters a section from the even value `even` (stores
    /// `even + 1`). Waits while a rescuer holds the freeze.
    #[inline(always)]
    pub(crate) fn enter(&self, even: usize) {
        self.seq.store(even.wrapping_add(1), Ordering::Relaxed);
        light_barrier();
        // Acquire: a rescuer's thaw (Release) hands its writes to the
        // private state over to us.
        if self.frozen.load(Ordering::Acquire) {
            self.enter_frozen(even);
        }
    }

    /// `enter` found the freeze held: leave, wait for the thaw, try again.
    #[cold]
    #[inline(never)]
    fn enter_frozen(&self, even: usize) {
        loop {
            // Release: what we did before is visible to the rescuer whose
            // freeze we now wait out.
            self.seq.store(even, Ordering::Release);
            let mut step = 0;
            while self.frozen.load(Ordering::Acquire) {
                crate::loom::spin_wait(&mut step);
            }
            self.seq.store(even.wrapping_add(1), Ordering::Relaxed);
            light_barrier();
            // Acquire: as in `enter`.
            if !self.frozen.load(Ordering::Acquire) {
                return;
            }
        }
    }

    /// Owner: leaves a section, storing the even value `even`.
    #[inline(always)]
    pub(crate) fn leave(&self, even: usize) {
        // Release: pairs with a rescuer's Acquire load of `seq`, so our
        // accesses in the section happen before its own.
        self.seq.store(even, Ordering::Release);
    }

    /// Rescuer: the owner's `seq`, as a hint: even, and the same at two
    /// ticks, means one poll has lasted a tick (a stale read only delays
    /// a rescue by a tick, or makes a freeze fail).
    pub(crate) fn seq(&self) -> usize {
        self.seq.load(Ordering::Relaxed)
    }

    /// Rescuer: freezes the owner if it is in a poll, outside every
    /// section; `None` if it is not (or another rescuer is at it).
    pub(crate) fn try_freeze(&self) -> Option<Frozen<'_>> {
        // Relaxed: the heavy barrier below orders it before our `seq` load.
        if self
            .frozen
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // Acquire: pairs with the owner's `leave`.
        if !heavy_barrier() || self.seq.load(Ordering::Acquire) % 2 == 1 {
            self.thaw();
            return None;
        }
        Some(Frozen(self))
    }

    fn thaw(&self) {
        // Release: our accesses to the owner's state happen before its next
        // section (its Acquire load of `frozen`).
        self.frozen.store(false, Ordering::Release);
    }
}

/// A freeze held by a rescuer; thaws on drop.
pub(crate) struct Frozen<'a>(&'a Watch);

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        self.0.thaw();
    }
}

#[cfg(all(target_os = "linux", not(loom)))]
mod barrier {
    //! `membarrier(2)`: `MEMBARRIER_CMD_PRIVATE_EXPEDITED` after the process
    //! registered for it.

    use std::sync::atomic::{AtomicU8, Ordering};

    const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// 0: not tried; 1: available; 2: unavailable.
    static STATE: AtomicU8 = AtomicU8::new(0);

    /// Registers the process (once); whether the heavy barrier is
    /// `membarrier`. Called before any worker of a multi-worker runtime
    /// starts, so they read a settled `STATE`; it only ever goes from 0 to
    /// 1 or 2.
    pub(super) fn register() -> bool {
        match STATE.load(Ordering::Acquire) {
            1 => return true,
            2 => return false,
            _ => {}
        }
        // SAFETY: the registration command takes no pointers.
        let ok =
            unsafe { libc::syscall(libc::SYS_membarrier, CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) }
                == 0;
        // Release/Acquire: a worker that reads 1 also sees the registration.
        STATE.store(if ok { 1 } else { 2 }, Ordering::Release);
        ok
    }

    #[inline]
    pub(super) fn available() -> bool {
        STATE.load(Ordering::Relaxed) == 1
    }

    /// A full barrier on every core running one of our threads.
    pub(super) fn expedited() -> bool {
        // SAFETY: as above.
        unsafe { libc::syscall(libc::SYS_membarrier, CMD_PRIVATE_EXPEDITED, 0, 0) == 0 }
    }
}

#[cfg(any(not(target_os = "linux"), loom))]
mod barrier {
    pub(super) fn register() -> bool {
        false
    }
    pub(super) fn available() -> bool {
        false
    }
    pub(super) fn expedited() -> bool {
        false
    }
}

/// Makes the heavy barrier `membarrier` where the kernel offers it (before
/// a multi-worker runtime's workers start).
pub(crate) fn prepare() {
    barrier::register();
}

/// Whether workers can be frozen here: the rescuer's barrier needs
/// `membarrier(2)` (under loom, both barriers are `SeqCst` fences). Called
/// after [`prepare`].
pub(crate) fn freezable() -> bool {
    cfg!(loom) || barrier::available()
}

/// The owner's barrier (module docs): a compiler fence, the rescuer's
/// `membarrier` doing the ordering for both; a `SeqCst` fence under loom.
#[inline(always)]
fn light_barrier() {
    if cfg!(loom) {
        // SeqCst: pairs with the rescuer's fence (Dekker's pattern).
        fence(Ordering::SeqCst);
    } else {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    }
}

/// The rescuer's barrier (module docs); false if it could not be made
/// (then the freeze must not go ahead).
fn heavy_barrier() -> bool {
    if cfg!(loom) {
        // SeqCst: pairs with the owner's fence (Dekker's pattern).
        fence(Ordering::SeqCst);
        return true;
    }
    barrier::expedited()
}
