//! Synchronisation resources whose waiting side is an op: [`Semaphore`]
//! (`acquire_op`) and [`IVar`] (write-once variable, `get_op`).
//!
//! Each works from async code on any executor and from OS threads, and its
//! op composes with every other op in a choice.

mod ivar;
mod semaphore;

pub use ivar::{GetOp, IVar};
pub use semaphore::{AcquireError, AcquireOp, MAX_PERMITS, Permit, Semaphore, TryAcquireError};
