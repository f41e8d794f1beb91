//! `InnerArc`: the counted pointer to a mailbox's `Inner`, whose memory may
//! come from its spawner (a runtime worker's task slab) rather than the
//! system allocator.
//!
//! An actor's mailbox is allocated with every spawn, and in a fork-join
//! burst (spawn them all, then let them all end) the system allocator's
//! thread cache does not serve it: glibc's `malloc` and `free` cost about
//! 300 instructions per actor (issue 18's entry in `docs/bench/LOG.md`).
//! The runtime hands `spawn_actor`'s mailbox a block of the worker's slab
//! instead (a [`Block`]), with the function that gives it back.
//!
//! Invariants:
//! * `refs` counts the `InnerArc`s of one allocation, as `Arc`'s strong
//!   count does (there is no weak count): Relaxed increments from a held
//!   reference, Release decrements, an Acquire fence before the last one
//!   drops the `Inner` and frees the memory (loom model
//!   `loom_mailbox_last_reference_drops_it_once_on_either_thread`).
//! * `give_back` is written once, before the pointer is shared, and read
//!   only by the last reference's drop: a block's owner (what `free` needs
//!   to stay valid) is kept alive by the `Block` until `free` runs.

use super::Inner;
use crate::loom::{AtomicUsize, Ordering, fence};
use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Gives a [`Block`]'s memory back, then releases its owner.
pub(crate) type FreeBlock = unsafe fn(NonNull<u8>, *const ());

/// A block of memory for a mailbox, from whoever spawns its actor, and how
/// to give it back.
pub(crate) struct Block {
    /// At least the size and alignment asked for (`InnerArc::layout`).
    pub(crate) ptr: NonNull<u8>,
    /// Gives `ptr` back, then releases `owner`. Called once, by the drop
    /// of the mailbox's last reference, on any thread: whoever makes a
    /// `Block` promises that this is sound (the runtime's slab takes
    /// blocks back from any thread, and its owner is an `Arc`).
    pub(crate) free: FreeBlock,
    /// What `free` needs (a counted reference that keeps the memory's
    /// allocator alive), released by `free`.
    pub(crate) owner: *const (),
}

/// The allocation: the count, where the memory goes back, then the mailbox.
#[repr(C)]
struct Counted<M> {
    refs: AtomicUsize,
    /// `None`: from the system allocator.
    give_back: Option<(FreeBlock, *const ())>,
    inner: Inner<M>,
}

/// A counted reference to a mailbox's `Inner` (`Arc<Inner<M>>` without the
/// weak count, and with its memory possibly from a [`Block`]).
pub(crate) struct InnerArc<M> {
    ptr: NonNull<Counted<M>>,
    _owns: PhantomData<Counted<M>>,
}

// SAFETY: as `Arc<Inner<M>>`: the `Inner` is shared between threads, and
// dropped by whichever holds the last reference.
unsafe impl<M> Send for InnerArc<M> where Inner<M>: Send + Sync {}
// SAFETY: as above.
unsafe impl<M> Sync for InnerArc<M> where Inner<M>: Send + Sync {}

impl<M> InnerArc<M> {
    /// The memory a mailbox of `M` needs: what a [`Block`] must hold.
    pub(crate) fn layout() -> Layout {
        Layout::new::<Counted<M>>()
    }

    /// A new mailbox in `block` (or in the system allocator's memory),
    /// initialised in place by `init`, with one reference.
    ///
    /// # Safety
    ///
    /// `init` writes every field of the `Inner` it is given, and `block`
    /// (if any) holds [`layout`](Self::layout).
    pub(crate) unsafe fn new_with(block: Option<Block>, init: impl FnOnce(*mut Inner<M>)) -> Self {
        let layout = Self::layout();
        let (p, give_back) = match block {
            Some(b) => (b.ptr.cast::<Counted<M>>(), Some((b.free, b.owner))),
            None => {
                // SAFETY: `Counted` is never zero-sized (it has a count).
                let p = unsafe { std::alloc::alloc(layout) }.cast::<Counted<M>>();
                match NonNull::new(p) {
                    Some(p) => (p, None),
                    None => std::alloc::handle_alloc_error(layout),
                }
            }
        };
        let c = p.as_ptr();
        // SAFETY: fresh memory for a `Counted<M>`, not shared yet; `init`
        // writes the `Inner` (the caller's contract).
        unsafe {
            (&raw mut (*c).refs).write(AtomicUsize::new(1));
            (&raw mut (*c).give_back).write(give_back);
            init(&raw mut (*c).inner);
        }
        Self {
            ptr: p,
            _owns: PhantomData,
        }
    }

    /// The `Inner`'s address: the mailbox's identity.
    pub(crate) fn as_ptr(this: &Self) -> *const Inner<M> {
        // SAFETY: our reference keeps the allocation alive.
        unsafe { &raw const (*this.ptr.as_ptr()).inner }
    }

    fn counted(&self) -> &Counted<M> {
        // SAFETY: our reference keeps the allocation alive.
        unsafe { self.ptr.as_ref() }
    }
}

impl<M> std::ops::Deref for InnerArc<M> {
    type Target = Inner<M>;

    fn deref(&self) -> &Inner<M> {
        &self.counted().inner
    }
}

impl<M> Clone for InnerArc<M> {
    fn clone(&self) -> Self {
        // Relaxed, as `Arc::clone`: a new reference made from one held
        // orders nothing.
        let old = self.counted().refs.fetch_add(1, Ordering::Relaxed);
        // As `Arc`: a count near overflow means leaked references; stop.
        if old > isize::MAX as usize {
            std::process::abort();
        }
        Self {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<M> Drop for InnerArc<M> {
    fn drop(&mut self) {
        // Release: our uses of the mailbox happen before the last drop's
        // Acquire fence, hence before it frees the mailbox.
        if self.counted().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Acquire: pairs with every other reference's Release decrement.
        fence(Ordering::Acquire);
        /// Gives the memory back after the `Inner` was dropped, also if
        /// its drop (a message's) panicked.
        struct GiveBack<M>(NonNull<Counted<M>>);
        impl<M> Drop for GiveBack<M> {
            fn drop(&mut self) {
                let p = self.0.as_ptr();
                // SAFETY: the last reference's memory, its `Inner` dropped:
                // it goes back where it came from (the `Block`'s `free`,
                // or the system allocator, with the layout it came with).
                unsafe {
                    match (*p).give_back {
                        Some((free, owner)) => free(self.0.cast(), owner),
                        None => std::alloc::dealloc(p.cast(), InnerArc::<M>::layout()),
                    }
                }
            }
        }
        let give_back = GiveBack(self.ptr);
        // SAFETY: the last reference: nobody else uses the allocation. The
        // `Inner` is dropped in place, once.
        unsafe { std::ptr::drop_in_place(&raw mut (*self.ptr.as_ptr()).inner) };
        drop(give_back);
    }
}
