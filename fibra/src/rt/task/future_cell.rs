//! The cell a task's future lives in, from its spawn to its drop.
//!
//! # Invariants
//!
//! * The future is pinned for its whole life: it is polled and dropped in
//!   this cell, never moved out (`Pin`'s drop guarantee). fibra's ops rely
//!   on it: an op parked in a task hands its address to partners, which may
//!   commit into it (write a value into its slot) until its drop withdraws
//!   it, so a future moved before its drop would lose the values committed
//!   into the old place.
//! * One party at a time touches the cell: the holder of the task's
//!   `RUNNING` bit, or shutdown once no worker runs (the callers' contract).
//! * Once emptied the cell stays empty, even when the future's drop panics.

use crate::loom::UnsafeCell;
use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;

pub(crate) struct FutureCell<F>(UnsafeCell<Option<F>>);

impl<F: Future> FutureCell<F> {
    pub(crate) fn new(future: F) -> Self {
        Self(UnsafeCell::new(Some(future)))
    }

    /// The pinned future, or `None` once dropped.
    ///
    /// # Safety
    ///
    /// The caller has exclusive access to the cell (module invariants) for
    /// as long as it uses the result.
    #[allow(clippy::mut_from_ref)] // exclusive by contract: the cell is an `UnsafeCell`
    pub(crate) unsafe fn pinned(&self) -> Option<Pin<&mut F>> {
        // SAFETY: exclusive, per the caller.
        let slot = self.0.with_mut(|p| unsafe { &mut *p });
        // SAFETY: the future is never moved out of the cell; it is dropped
        // in place (`drop_future`).
        slot.as_mut().map(|f| unsafe { Pin::new_unchecked(f) })
    }

    /// Whether the future was dropped.
    ///
    /// # Safety
    ///
    /// As for [`pinned`](Self::pinned).
    pub(crate) unsafe fn is_empty(&self) -> bool {
        self.0.with(|p| unsafe { (*p).is_none() })
    }

    /// Drops the future where it is and leaves the cell empty, even if the
    /// drop panics (the payload comes back). Nothing if already empty.
    ///
    /// # Safety
    ///
    /// As for [`pinned`](Self::pinned).
    pub(crate) unsafe fn drop_future(&self) -> Result<(), Box<dyn Any + Send + 'static>> {
        /// Marks the cell empty once the future's drop is over, or unwound:
        /// it must never be dropped again.
        struct Emptied<F>(*mut Option<F>);
        impl<F> Drop for Emptied<F> {
            fn drop(&mut self) {
                // SAFETY: the cell, whose future was just dropped in place:
                // a write (not an assignment) drops nothing a second time.
                unsafe { std::ptr::write(self.0, None) };
            }
        }
        self.0.with_mut(|slot| {
            catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: exclusive, per the caller.
                if let Some(fut) = unsafe { (*slot).as_mut() } {
                    let fut: *mut F = fut;
                    let _emptied = Emptied(slot);
                    // SAFETY: dropped once, in place; `Emptied` then marks
                    // the cell empty.
                    unsafe { std::ptr::drop_in_place(fut) };
                }
            }))
        })
    }
}
