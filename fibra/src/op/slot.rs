//! Payload slots: where a leaf op's value waits while its record is
//! published.
//!
//! A slot belongs to one leaf op inside a pinned perform; its record in a
//! resource's queue points at it. It is touched by its owner while the
//! owner's opstate is unpublished or claimed (`C`), after `SYNCED`, or (for
//! a plain record) under the queue's lock once the record is out of the
//! queue; and by the remote party that won the owner's record, while it
//! holds the commit (`BUSY`, or the queue's lock for a plain record) —
//! never by two at once. That right to touch a slot is the contract of
//! [`take`] and [`put`].

use crate::loom::UnsafeCell;

/// A leaf's payload slot.
pub(crate) type Slot<T> = UnsafeCell<Option<T>>;

/// Takes the value out of a slot.
///
/// # Safety
///
/// The caller has the slot's access right (module docs).
pub(crate) unsafe fn take<T>(slot: &Slot<T>) -> Option<T> {
    // SAFETY: exclusive access is the caller's contract.
    slot.with_mut(|p| unsafe { (*p).take() })
}

/// Puts a value into a slot.
///
/// # Safety
///
/// The caller has the slot's access right (module docs).
pub(crate) unsafe fn put<T>(slot: &Slot<T>, value: T) {
    // SAFETY: exclusive access is the caller's contract.
    slot.with_mut(|p| unsafe { *p = Some(value) });
}
