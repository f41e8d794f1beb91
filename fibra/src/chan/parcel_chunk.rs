//! Memory for asynchronous sends' parcels (`async_send.rs`): carved from
//! chunks of several parcels, one system allocation per chunk.
//!
//! A producer that sends asynchronously faster than its receivers take
//! makes one parcel per value, and every one of them is live at once: the
//! system allocator serves such a burst from its slow paths (about half of
//! an asynchronous send's instructions went to `malloc` and `free`). Here a
//! channel carves its parcels, under its lock, from a chunk it holds; a
//! parcel's memory goes back to its chunk when the parcel goes, on any
//! thread, with one atomic decrement; the chunk goes when its last block
//! does.
//!
//! # Invariants
//!
//! * A chunk's `live` counts its blocks carved and not freed yet, plus
//!   every block not carved yet while a [`Carver`] holds the chunk (a new
//!   chunk starts at its capacity plus one: the carver's hold; the carver
//!   gives back the hold and the blocks it never carved in one
//!   subtraction). Carving a block changes no count.
//! * The chunk is deallocated by whoever brings `live` to 0, after an
//!   Acquire fence that pairs with every other release's Release
//!   decrement (`Arc`'s protocol): every use of its blocks comes before.
//! * A `Carver` is used under its channel's lock (it lives in the locked
//!   state): one carver per chunk, one thread at a time.

use crate::loom::{AtomicUsize, Ordering, fence};
use std::alloc::Layout;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// Blocks per chunk (fewer for large parcels, at least one).
#[cfg(not(loom))]
const BLOCKS: usize = 32;
/// Small under loom, so that models cross chunk boundaries.
#[cfg(loom)]
const BLOCKS: usize = 2;
/// Above this many bytes of blocks, a chunk has fewer blocks.
const CHUNK_BYTES: usize = 4096;

/// The head of a chunk; its blocks follow it.
struct Head {
    live: AtomicUsize,
    /// How many blocks follow.
    blocks: usize,
    /// Under loom, the chunk's memory as loom sees it: every release reads
    /// it before its decrement, the deallocation writes it, so that a
    /// deallocation not ordered after every use is a race loom reports.
    #[cfg(loom)]
    memory: crate::loom::UnsafeCell<bool>,
}

/// A chunk's address and the type of its blocks.
pub(crate) struct ChunkPtr<P> {
    head: NonNull<Head>,
    _blocks: PhantomData<*mut P>,
}

impl<P> Clone for ChunkPtr<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for ChunkPtr<P> {}

// SAFETY: a chunk's counter is atomic, and its blocks belong to whoever
// carved them (a parcel, `Send` and `Sync` on its own terms).
unsafe impl<P> Send for ChunkPtr<P> {}
// SAFETY: as above.
unsafe impl<P> Sync for ChunkPtr<P> {}

impl<P> ChunkPtr<P> {
    /// How many blocks a chunk of `P` holds. One in the AddressSanitizer
    /// build, so that it checks every parcel's lifetime.
    fn capacity() -> usize {
        if cfg!(fibra_system_alloc) {
            return 1;
        }
        (CHUNK_BYTES / std::mem::size_of::<P>().max(1)).clamp(1, BLOCKS)
    }

    /// The chunk's layout for `blocks` blocks, and where the blocks start.
    fn layout(blocks: usize) -> (Layout, usize) {
        let array = Layout::array::<P>(blocks).expect("a chunk of parcels fits in memory");
        Layout::new::<Head>()
            .extend(array)
            .expect("a chunk of parcels fits in memory")
    }

    /// A new chunk, held by its carver (module invariants).
    fn allocate() -> Self {
        let blocks = Self::capacity();
        let (layout, _) = Self::layout(blocks);
        // SAFETY: the layout has a non-zero size (it holds the head).
        let p = unsafe { std::alloc::alloc(layout) };
        let Some(head) = NonNull::new(p.cast::<Head>()) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: fresh memory for the head, aligned for it.
        unsafe {
            head.write(Head {
                live: AtomicUsize::new(blocks + 1),
                blocks,
                #[cfg(loom)]
                memory: crate::loom::UnsafeCell::new(false),
            })
        };
        Self {
            head,
            _blocks: PhantomData,
        }
    }

    /// Block `i` of the chunk.
    fn block(self, i: usize) -> NonNull<MaybeUninit<P>> {
        // SAFETY: the head is alive while anyone holds the chunk.
        let blocks = unsafe { self.head.as_ref() }.blocks;
        debug_assert!(i < blocks);
        let (_, offset) = Self::layout(blocks);
        // SAFETY: within the chunk's allocation (`i < blocks`).
        unsafe { self.head.cast::<u8>().add(offset).cast::<MaybeUninit<P>>().add(i) }
    }

    /// Gives back `n` counts of the chunk: freed blocks, or a carver's
    /// hold and unused blocks. Deallocates the chunk with the last.
    ///
    /// # Safety
    ///
    /// The caller owns `n` counts (module invariants) and gives them up;
    /// a freed block's `P` was dropped (or never written) and is not used
    /// again.
    unsafe fn release(self, n: usize) {
        // SAFETY: the caller's counts keep the chunk alive until here.
        let head = unsafe { self.head.as_ref() };
        #[cfg(loom)]
        // SAFETY: a read, racing only the deallocation's write (checked).
        assert!(!head.memory.with(|m| unsafe { *m }), "a chunk used after its free");
        // Release: our uses of the chunk's blocks come before its
        // deallocation, which the last releaser's Acquire fence orders
        // after every other release (as `Arc`).
        if head.live.fetch_sub(n, Ordering::Release) != n {
            return;
        }
        fence(Ordering::Acquire);
        #[cfg(loom)]
        // SAFETY: the last count is gone: ours alone.
        head.memory.with_mut(|m| unsafe { *m = true });
        let (layout, _) = Self::layout(head.blocks);
        // SAFETY: no count is left: nobody uses the chunk any more; the
        // head was written by `allocate`, which allocated this layout.
        unsafe {
            std::ptr::drop_in_place(self.head.as_ptr());
            std::alloc::dealloc(self.head.as_ptr().cast(), layout);
        }
    }

    /// Frees a block carved from this chunk.
    ///
    /// # Safety
    ///
    /// `block` was carved from this chunk, its `P` was dropped, and it is
    /// not used again.
    pub(crate) unsafe fn free(self, block: NonNull<MaybeUninit<P>>) {
        let _ = block;
        // SAFETY: a carved block's count, given up (the caller's
        // contract).
        unsafe { self.release(1) };
    }
}

/// Where a channel carves its parcels (module docs): the chunk it holds,
/// and its next uncarved block.
pub(crate) struct Carver<P> {
    current: Option<(ChunkPtr<P>, usize)>,
}

impl<P> Default for Carver<P> {
    fn default() -> Self {
        Self { current: None }
    }
}

impl<P> Carver<P> {
    /// An uninitialized block for a `P`, and the chunk to free it to.
    pub(crate) fn carve(&mut self) -> (NonNull<MaybeUninit<P>>, ChunkPtr<P>) {
        let (chunk, next) = match self.current.take() {
            Some((chunk, next)) => (chunk, next),
            None => (ChunkPtr::allocate(), 0),
        };
        let block = chunk.block(next);
        // SAFETY: we hold the chunk (module invariants).
        if next + 1 < unsafe { chunk.head.as_ref() }.blocks {
            self.current = Some((chunk, next + 1));
        } else {
            // The last block carved: give back the carver's hold.
            // SAFETY: the hold is ours; the carved blocks keep their
            // counts.
            unsafe { chunk.release(1) };
        }
        (block, chunk)
    }
}

impl<P> Drop for Carver<P> {
    fn drop(&mut self) {
        if let Some((chunk, next)) = self.current.take() {
            // SAFETY: ours: the hold, and the blocks never carved.
            let unused = unsafe { chunk.head.as_ref() }.blocks - next;
            // SAFETY: as above.
            unsafe { chunk.release(1 + unused) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Carves `n` blocks of `String`, writes them, and frees them in the
    /// order `order` gives, with the carver dropped after `drop_at` frees:
    /// every chunk is freed once (the AddressSanitizer and Miri builds
    /// check the memory).
    fn carve_and_free(n: usize, order: impl Fn(usize) -> usize, drop_at: usize) {
        let mut carver = Carver::<String>::default();
        let mut blocks: Vec<_> = (0..n)
            .map(|i| {
                let (b, chunk) = carver.carve();
                // SAFETY: a fresh block for a `String`.
                unsafe { b.cast::<String>().write(i.to_string()) };
                Some((b, chunk))
            })
            .collect();
        let mut carver = Some(carver);
        for k in 0..n {
            if k == drop_at {
                carver = None;
            }
            let (b, chunk) = blocks[order(k) % n].take().expect("freed once");
            // SAFETY: carved and written above, freed once.
            unsafe {
                assert_eq!(*b.cast::<String>().as_ref(), (order(k) % n).to_string());
                std::ptr::drop_in_place(b.cast::<String>().as_ptr());
                chunk.free(b);
            }
        }
        drop(carver);
        assert!(blocks.iter().all(Option::is_none));
    }

    #[test]
    fn blocks_freed_in_any_order_free_their_chunks() {
        let n = 3 * BLOCKS + 5;
        carve_and_free(n, |k| k, n);
        carve_and_free(n, |k| n - 1 - k, 0);
        // A permutation (7 is prime to n when n is not a multiple of 7).
        let step = if n % 7 == 0 { 5 } else { 7 };
        carve_and_free(n, |k| k * step, n / 2);
    }

    #[test]
    fn a_chunk_holds_fewer_blocks_of_a_large_type() {
        assert_eq!(ChunkPtr::<[u8; 3000]>::capacity(), 1);
        assert!(ChunkPtr::<u64>::capacity() <= BLOCKS);
    }
}
