//! The waker of every task, and the wake paths it takes.

use super::raw::TaskRef;
use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable};

#[cfg(not(loom))]
thread_local! {
    /// The task whose run on this thread may donate its reference to the
    /// first clone of its waker (module docs), or null.
    pub(super) static DONATE: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// Under loom `DONATE` is a loom thread-local (one per model thread), whose
/// key has only `with`: this stands in for `std`'s `Cell` accessors.
#[cfg(loom)]
pub(super) static DONATE: Donate = Donate;

#[cfg(loom)]
crate::loom::thread_local! {
    static DONATE_CELL: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

#[cfg(loom)]
pub(super) struct Donate;

#[cfg(loom)]
impl Donate {
    pub(super) fn get(&self) -> *const () {
        DONATE_CELL.with(Cell::get)
    }

    pub(super) fn set(&self, p: *const ()) {
        DONATE_CELL.with(|c| c.set(p));
    }

    pub(super) fn replace(&self, p: *const ()) -> *const () {
        DONATE_CELL.with(|c| c.replace(p))
    }
}

impl TaskRef {
    /// A wake by value (the scheduler decides where the task goes).
    pub(super) fn wake(self) {
        crate::rt::schedule::wake(self);
    }

    /// A wake by reference.
    fn wake_by_ref(&self) {
        crate::rt::schedule::wake_by_ref(self);
    }

    /// The wake found the task retained by this thread's worker, with the
    /// retained run's reference if `owns_ref`: the queue entry, by value
    /// (ours is the entry's; the retained run's goes, never the last: ours
    /// is one more).
    pub(crate) fn into_retained_entry(self, owns_ref: bool) -> TaskRef {
        if owns_ref {
            // SAFETY: the retained run's reference, handed to us.
            drop(unsafe { TaskRef::from_raw(self.0) });
        }
        self
    }

    /// As [`into_retained_entry`](Self::into_retained_entry), by reference:
    /// the retained run's reference, or a new one.
    pub(crate) fn retained_entry(&self, owns_ref: bool) -> TaskRef {
        if owns_ref {
            // SAFETY: the retained run's reference, handed to us.
            unsafe { TaskRef::from_raw(self.0) }
        } else {
            self.clone()
        }
    }

    /// The wake's transition of the state word: `true` if it took
    /// `RUNNING` for a queue entry (the caller must queue the task).
    pub(crate) fn notify(&self) -> bool {
        self.header().state.notify()
    }
}

/// The waker of every task: its data pointer is the task's header, and an
/// owned waker holds one reference.
pub(super) static WAKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(clone_waker, wake, wake_by_ref, drop_waker);

/// The reference a waker's data pointer stands for, without taking it over.
///
/// # Safety
///
/// `p` is a task header with a live reference held by the caller.
pub(super) unsafe fn borrowed(p: *const ()) -> ManuallyDrop<TaskRef> {
    // SAFETY: non-null (a header), and `ManuallyDrop` keeps the count as is.
    ManuallyDrop::new(unsafe { TaskRef::from_raw(NonNull::new_unchecked(p.cast_mut().cast())) })
}

unsafe fn clone_waker(p: *const ()) -> RawWaker {
    // The first clone during a donating run takes over the run's reference
    // (module docs): no new one.
    if DONATE.get() == p {
        DONATE.set(std::ptr::null());
    } else {
        // SAFETY: the waker we clone holds a reference.
        std::mem::forget(TaskRef::clone(&*unsafe { borrowed(p) }));
    }
    RawWaker::new(p, &WAKER_VTABLE)
}

unsafe fn wake(p: *const ()) {
    // SAFETY: an owned waker holds one reference, which we take over.
    ManuallyDrop::into_inner(unsafe { borrowed(p) }).wake();
}

unsafe fn wake_by_ref(p: *const ()) {
    // SAFETY: the waker holds a reference for the duration of this call.
    unsafe { borrowed(p) }.wake_by_ref();
}

unsafe fn drop_waker(p: *const ()) {
    // SAFETY: an owned waker holds one reference, released here.
    drop(ManuallyDrop::into_inner(unsafe { borrowed(p) }));
}
