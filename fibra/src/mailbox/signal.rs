//! How a mailbox's single receiver waits: it parks a waker here; a sender,
//! after pushing, wakes it. Senders never touch the receiver's opstate: the
//! woken receiver looks at the mailbox again and commits itself
//! (`Op::repoll`), so a selective receive can skip messages it does not
//! want without anyone committing it.
//!
//! # Protocol
//!
//! ```text
//!   IDLE ──receiver parks──▶ PARKED ──a sender: CAS──▶ WAKING ──wake, store──▶ IDLE
//!     ▲                        │
//!     └──receiver unparks (CAS)┘
//! ```
//!
//! * The waker cell is written only by the receiver, only in `IDLE`, and read
//!   only by the sender that won `PARKED -> WAKING`. So access is exclusive.
//! * No lost wake-up: the receiver stores `PARKED`, fences (SeqCst) and then
//!   looks at the queue; a sender pushes, fences (SeqCst) and then looks at
//!   the state. By the fences' total order, either the receiver sees the
//!   message or the sender sees `PARKED` and wakes it.
//! * The waker runs while the state is `WAKING`; a receiver that wants to
//!   park again or unpark meanwhile waits for `IDLE` (wakers are short).

use crate::loom::{AtomicUsize, Ordering, UnsafeCell, fence, spin_wait};
use std::task::Waker;

const IDLE: usize = 0;
const PARKED: usize = 1;
const WAKING: usize = 2;

pub(crate) struct Signal {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the waker cell is accessed exclusively as the protocol describes;
// `Waker` is Send + Sync.
unsafe impl Sync for Signal {}
// SAFETY: as above.
unsafe impl Send for Signal {}

impl Signal {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicUsize::new(IDLE),
            waker: UnsafeCell::new(None),
        }
    }

    /// Receiver: park with `waker` (replacing a parked one), then fence. The
    /// caller looks at the mailbox afterwards.
    pub(crate) fn park(&self, waker: &Waker) {
        self.unpark();
        // SAFETY: `IDLE` (after `unpark`), and only the receiver leaves it:
        // no sender reads the cell now.
        self.waker.with_mut(|w| unsafe {
            match &mut *w {
                Some(old) if old.will_wake(waker) => {}
                slot => *slot = Some(waker.clone()),
            }
        });
        // Release: the waker written above is visible to the sender whose
        // Acquire CAS takes `PARKED`.
        self.state.store(PARKED, Ordering::Release);
        fence(Ordering::SeqCst);
    }

    /// Receiver: stop waiting. Afterwards no sender will wake the waker
    /// (one may have just done so: a spurious wake is harmless).
    pub(crate) fn unpark(&self) {
        let mut step = 0;
        loop {
            // Acquire: an `IDLE` stored by a sender after it ran the waker
            // orders its read of the cell before our next write. Only the
            // receiver moves the state out of `IDLE`, so `IDLE` is stable.
            match self.state.load(Ordering::Acquire) {
                IDLE => return,
                PARKED => {
                    // Relaxed: no sender read the cell for this park.
                    if self
                        .state
                        .compare_exchange(PARKED, IDLE, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                    {
                        return;
                    }
                }
                // A sender is running the waker: it stores `IDLE` next.
                _ => spin_wait(&mut step),
            }
        }
    }

    /// Sender, after publishing what the receiver waits for: a SeqCst fence,
    /// then wake the receiver if it is parked.
    pub(crate) fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.state.load(Ordering::Relaxed) == PARKED
            && self
                .state
                .compare_exchange(PARKED, WAKING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            // SAFETY: we own `WAKING`: the receiver does not touch the cell.
            self.waker.with(|w| {
                if let Some(w) = unsafe { &*w } {
                    w.wake_by_ref();
                }
            });
            // Release: our read of the cell happens before the receiver's
            // next write of it.
            self.state.store(IDLE, Ordering::Release);
        }
    }
}
