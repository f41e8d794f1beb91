//! Synchronisation resources whose waiting side is an op:
//!
//! | resource | waits | op |
//! |---|---|---|
//! | [`Semaphore`] (counting) | for a permit | [`acquire_op`](Semaphore::acquire_op) |
//! | [`IVar`] (write-once variable) | until it is written | [`get_op`](IVar::get_op) |
//! | [`MVar`] (one-slot box) | until full / until empty | [`take_op`](MVar::take_op), [`put_op`](MVar::put_op) |
//! | [`Notify`] (condition) | for a notification | [`notified_op`](Notify::notified_op) |
//! | [`Mutex`] (fair lock) | for the lock | [`lock_op`](Mutex::lock_op) |
//! | [`RwLock`] (fair reader-writer lock) | to read / to write | [`read_op`](RwLock::read_op), [`write_op`](RwLock::write_op) |
//! | [`Barrier`] (`n` parties) | for the round to fill | [`wait_op`](Barrier::wait_op) |
//! | [`OnceCell`] (set once, async initializer) | for the value | [`get_op`](OnceCell::get_op) |
//! | [`CancellationToken`] (tree of flags) | for cancellation | [`cancelled_op`](CancellationToken::cancelled_op) |
//!
//! Each works from async code on any executor (`.await`) and from OS threads
//! (`_blocking` methods, or [`Op::perform`](crate::Op::perform) on the op),
//! and its op composes with every other op in a choice: one that loses takes
//! nothing (no permit, value, notification or lock), and one whose perform
//! is dropped after it committed gives back what it got. Waiters are served
//! in FIFO order.

mod barrier;
mod cancel;
mod ivar;
mod mutex;
mod mvar;
mod notify;
mod once_cell;
mod rwlock;
mod semaphore;

pub use barrier::{Barrier, BarrierWaitOp, BarrierWaitResult};
pub use cancel::{CancellationToken, CancelledOp, DropGuard};
pub use ivar::{GetOp, GetRefOp, IVar};
pub use mutex::{LockOp, Mutex, MutexGuard, MutexLock};
pub use mvar::{MVar, PutOp, TakeOp};
pub use notify::{NotifiedOp, Notify};
pub use once_cell::OnceCell;
pub use rwlock::{ReadOp, RwLock, RwLockReadGuard, RwLockWriteGuard, WriteOp};
pub use semaphore::{
    Acquire, AcquireError, AcquireOp, MAX_PERMITS, Permit, Semaphore, TryAcquireError,
};

#[cfg(all(test, loom))]
mod loom_models;
