//! Task memory: a per-worker slab allocator for task allocations (and
//! for the mailboxes of actors spawned on a worker: `schedule::mailbox_block`).
//!
//! Spawning is where fibra allocates once per task, and the common burst
//! (a fork-join: spawn them all, then join them all) allocates every task
//! before freeing any, so the system allocator's thread cache never serves
//! it: glibc spent about 330 of the 810 instructions of a spawned and
//! joined task in `malloc` and `free` (callgrind). Here a worker takes a
//! task's block from pages it owns in a few instructions, and frees the
//! blocks of its own pages without an atomic operation. Other threads
//! (a spawn from outside the runtime, a blocking-pool thread, another
//! runtime's worker) use the system allocator; a task freed on a thread
//! other than its page's owner goes back through a lock-free stack.
//!
//! # Structure
//!
//! * A *page* is `PAGE` bytes aligned to `PAGE`: a [`Page`] header, then
//!   blocks of one size class (a multiple of `GRAIN`, at most
//!   [`MAX_BLOCK`]). A block's page is its address rounded down to `PAGE`.
//! * A [`Heap`] belongs to one worker of one runtime (it lives in the
//!   runtime's `Shared`): per size class, the *current* page it allocates
//!   from and a list of its other pages with blocks in use; and up to
//!   `SPARE_MAX` empty pages kept for reuse.
//! * A block of a parasite that finished in its inline poll (`spawn_eager`)
//!   is kept aside, one at a time, for the next parasite of its size class
//!   ([`Heap::alloc_eager`]): a spawn and a free that cancel out cost a
//!   few instructions, not a list push and pop, and the block comes back
//!   as it was left (`EagerBlock::recycled`), so that the next parasite
//!   writes only the part of its header that differs. It counts as in use in
//!   its page until it goes back to the page's list (the next eager free
//!   of another class, or `trim`).
//! * A block freed by its heap's worker goes on its page's local free list;
//!   freed by any other thread, on the page's *remote* list ([`RemoteFree`]),
//!   which the owner takes whole when it needs room.
//!
//! # Invariants
//!
//! * A heap's page lists, and its pages' local lists, bump offsets and
//!   `used` counts, are touched only by the thread acting as the heap's
//!   worker: its worker thread, or for a current-thread runtime the thread
//!   inside `block_on` (which the runtime allows one at a time).
//! * `used` counts a page's blocks that are not on its local list or
//!   unused: blocks in use *and* blocks on its remote list.
//! * Only the owner releases a page (to the spares, or to the system), and
//!   only when `used` is 0: no block of it is in use and none can be pushed
//!   onto its remote list any more.
//! * Pages go with their heap, which goes with the runtime's `Shared`; a
//!   task holds its reference to `Shared` until its block is back (see
//!   `Task::dealloc_slab`), and so does a mailbox (`schedule::
//!   mailbox_block`), so a page outlives every block in it, including a
//!   remote push of one.

use crate::loom::{AtomicBool, AtomicPtr, Ordering, UnsafeCell};
use std::alloc::Layout;
use std::cell::Cell;
use std::ptr::{self, NonNull};

/// Bytes per page, and their alignment.
const PAGE: usize = 64 * 1024;
/// Size classes are multiples of this (and blocks are aligned to it).
const GRAIN: usize = 16;
/// 48 classes: an actor's mailbox (`spawn_actor`'s, about 700 bytes for
/// small messages) fits too.
const CLASSES: usize = 48;
/// The largest block; larger tasks (and mailboxes) come from the system
/// allocator.
const MAX_BLOCK: usize = GRAIN * CLASSES;
/// The alignment every block has.
const BLOCK_ALIGN: usize = GRAIN;
/// Empty pages a heap keeps for reuse rather than give back at once (256
/// KiB): a burst that ends and starts again needs no new page.
const SPARE_MAX: usize = 4;
/// How many of its listed pages the owner looks at for room (collecting
/// their remote frees) before it takes a new page. Pages it looked at go to
/// the back of the list, so every page is looked at in turn.
const SCAN_MAX: usize = 8;
/// Where the blocks of a page start: after the header, on a grain.
const FIRST_BLOCK: usize = std::mem::size_of::<Page>().next_multiple_of(GRAIN);

/// A free block: its first bytes link to the next free one.
pub(crate) struct FreeBlock {
    next: UnsafeCell<*mut FreeBlock>,
}

/// Blocks freed by threads other than the owner of their page: a stack
/// that any thread pushes onto and the owner takes whole.
pub(crate) struct RemoteFree(AtomicPtr<FreeBlock>);

impl RemoteFree {
    pub(crate) fn new() -> Self {
        Self(AtomicPtr::new(ptr::null_mut()))
    }

    /// Pushes a block the caller no longer uses.
    ///
    /// # Safety
    ///
    /// `block` points at writable memory for a `FreeBlock` that nobody else
    /// uses until the owner takes it back.
    pub(crate) unsafe fn push(&self, block: *mut FreeBlock) {
        let mut head = self.0.load(Ordering::Relaxed);
        // SAFETY: the block is ours (caller's contract).
        unsafe {
            block.write(FreeBlock {
                next: UnsafeCell::new(head),
            })
        };
        loop {
            // Release: our writes to the block (the task's last contents,
            // the link) happen before the owner, who takes the stack with
            // Acquire, reuses it.
            match self
                .0
                .compare_exchange_weak(head, block, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => {
                    head = actual;
                    // SAFETY: not published yet: still ours.
                    unsafe { (*block).next.with_mut(|p| *p = head) };
                }
            }
        }
    }

    /// Takes every block pushed so far (a list linked through `next`, null
    /// if none). Whole-stack swaps only, never a single pop: no ABA.
    pub(crate) fn take_all(&self) -> *mut FreeBlock {
        // A plain load first: the common case is an empty stack, and an
        // atomic swap costs as much as a lock.
        if self.0.load(Ordering::Relaxed).is_null() {
            return ptr::null_mut();
        }
        // Acquire: pairs with the Release of each remote `push`, so the
        // links written by the freeing threads are visible to us.
        self.0.swap(ptr::null_mut(), Ordering::Acquire)
    }
}

/// The link of a free block.
///
/// # Safety
///
/// `b` is a free block the caller owns (taken from a list).
pub(crate) unsafe fn next_of(b: *mut FreeBlock) -> *mut FreeBlock {
    // SAFETY: the caller's contract.
    unsafe { (*b).next.with(|p| *p) }
}

/// A page's header, at its start.
struct Page {
    remote: RemoteFree,
    owner: *const Heap,
    class: usize,
    // Owner-only from here (module invariants).
    local: Cell<*mut FreeBlock>,
    /// Offset of the first block never handed out.
    bump: Cell<usize>,
    used: Cell<usize>,
    prev: Cell<*mut Page>,
    next: Cell<*mut Page>,
}

impl Page {
    /// The page a block lies in.
    fn of(block: *mut u8) -> *mut Page {
        block.map_addr(|a| a & !(PAGE - 1)).cast()
    }

    /// The size of this page's blocks.
    fn block(&self) -> usize {
        (self.class + 1) * GRAIN
    }

    fn has_room(&self) -> bool {
        !self.local.get().is_null() || self.bump.get() + self.block() <= PAGE
    }

    /// Moves the remote frees onto the local list (owner only).
    fn collect(&self) {
        let mut b = self.remote.take_all();
        while !b.is_null() {
            // SAFETY: taken from the stack: ours.
            let next = unsafe { next_of(b) };
            self.push_local(b);
            b = next;
        }
    }

    fn push_local(&self, b: *mut FreeBlock) {
        // SAFETY: a free block of this page, owned by the owner (us).
        unsafe {
            b.write(FreeBlock {
                next: UnsafeCell::new(self.local.get()),
            })
        };
        self.local.set(b);
        self.used.set(self.used.get() - 1);
    }

    /// A block of this page, if it has room (owner only).
    fn take(this: *mut Page) -> Option<NonNull<u8>> {
        // SAFETY: a live page of the calling owner.
        let page = unsafe { &*this };
        let b = page.local.get();
        let block = if !b.is_null() {
            // SAFETY: on our local list: ours.
            page.local.set(unsafe { next_of(b) });
            b.cast::<u8>()
        } else if page.bump.get() + page.block() <= PAGE {
            let offset = page.bump.get();
            page.bump.set(offset + page.block());
            // SAFETY: within the page's allocation.
            unsafe { this.cast::<u8>().add(offset) }
        } else {
            return None;
        };
        page.used.set(page.used.get() + 1);
        NonNull::new(block)
    }
}

/// One size class of a heap: the page it allocates from, and a doubly
/// linked list of its other pages that have blocks in use.
struct Class {
    current: *mut Page,
    head: *mut Page,
    tail: *mut Page,
}

struct HeapInner {
    classes: [Class; CLASSES],
    spare: Vec<*mut Page>,
    /// A block kept aside for the next parasite (module docs), and its
    /// size class.
    eager: *mut u8,
    /// The size class of the block last kept aside (written only when it
    /// changes: a parasite's spawn and free cost one store each here).
    eager_class: usize,
}

/// A block from [`Heap::alloc_eager`].
pub(crate) struct EagerBlock {
    pub(crate) ptr: NonNull<u8>,
    /// The block kept aside by [`Heap::free_eager`], its bytes as the
    /// caller of that free left them (nothing here writes a block kept
    /// aside); `false`: a block from `alloc`, its bytes unknown.
    pub(crate) recycled: bool,
}

/// A worker's task memory (module docs).
pub(crate) struct Heap {
    inner: std::cell::UnsafeCell<HeapInner>,
    /// Set by other threads' frees: pages may have emptied without the
    /// owner knowing ([`Heap::trim`]). A hint, read and cleared by the
    /// owner only when it is about to sleep.
    remote_freed: AtomicBool,
}

// SAFETY: the owner-only parts are touched only by the heap's worker (module
// invariants); what other threads touch is a page's `RemoteFree` (atomic)
// and its immutable `owner`, `block` and `class`.
unsafe impl Sync for Heap {}
// SAFETY: as above; the pages are plain memory.
unsafe impl Send for Heap {}

fn page_layout() -> Layout {
    // Infallible: a power of two, far below `isize::MAX`.
    Layout::from_size_align(PAGE, PAGE).expect("page layout")
}

/// The size class of a block of `size` bytes, if the slab serves it.
pub(crate) fn class_of(layout: Layout) -> Option<usize> {
    (layout.size() <= MAX_BLOCK && layout.align() <= BLOCK_ALIGN && layout.size() > 0)
        .then(|| layout.size().div_ceil(GRAIN) - 1)
}

impl Heap {
    pub(crate) fn new() -> Self {
        Self {
            inner: std::cell::UnsafeCell::new(HeapInner {
                classes: std::array::from_fn(|_| Class {
                    current: ptr::null_mut(),
                    head: ptr::null_mut(),
                    tail: ptr::null_mut(),
                }),
                spare: Vec::new(),
                eager: ptr::null_mut(),
                eager_class: 0,
            }),
            remote_freed: AtomicBool::new(false),
        }
    }

    /// # Safety
    ///
    /// The caller is this heap's worker, and holds no other borrow of it.
    #[allow(clippy::mut_from_ref)]
    unsafe fn inner(&self) -> &mut HeapInner {
        // SAFETY: the caller's contract: one thread, no other borrow.
        unsafe { &mut *self.inner.get() }
    }

    /// A block for size class `class` (from [`class_of`]); `None` if a page
    /// could not be allocated.
    ///
    /// # Safety
    ///
    /// The caller is this heap's worker.
    pub(crate) unsafe fn alloc(&self, class: usize) -> Option<NonNull<u8>> {
        // SAFETY: the caller's contract.
        let inner = unsafe { self.inner() };
        let current = inner.classes[class].current;
        if !current.is_null() {
            if let Some(b) = Page::take(current) {
                return Some(b);
            }
        }
        self.refill(inner, class)?;
        Page::take(inner.classes[class].current)
    }

    /// A block for a parasite's inline poll: the one kept aside
    /// ([`free_eager`](Self::free_eager)) if of `class`, else as `alloc`.
    ///
    /// # Safety
    ///
    /// The caller is this heap's worker.
    #[inline(always)]
    pub(crate) unsafe fn alloc_eager(&self, class: usize) -> Option<EagerBlock> {
        // SAFETY: the caller's contract.
        let inner = unsafe { self.inner() };
        match NonNull::new(inner.eager) {
            Some(b) if inner.eager_class == class => {
                inner.eager = ptr::null_mut();
                Some(EagerBlock {
                    ptr: b,
                    recycled: true,
                })
            }
            // SAFETY: the caller's contract (`inner` is not used again).
            _ => unsafe { self.alloc(class) }.map(|ptr| EagerBlock {
                ptr,
                recycled: false,
            }),
        }
    }

    /// Gives back a block of `class` from [`alloc_eager`](Self::alloc_eager)
    /// whose parasite finished inline: kept aside for the next one, the one
    /// kept before going back to its page.
    ///
    /// # Safety
    ///
    /// The caller is this heap's worker, and the block is no longer used.
    #[inline(always)]
    pub(crate) unsafe fn free_eager(&self, block: NonNull<u8>, class: usize) {
        // SAFETY: the caller's contract.
        let inner = unsafe { self.inner() };
        if inner.eager_class != class {
            inner.eager_class = class;
        }
        let old = std::mem::replace(&mut inner.eager, block.as_ptr());
        if let Some(old) = NonNull::new(old) {
            // SAFETY: ours, no longer used; `inner` is not used again.
            unsafe { self.free_local(Page::of(old.as_ptr()), old.as_ptr()) };
        }
    }

    /// The current page of `class` is full (or missing): makes one with
    /// room current. Cold: once per page's worth of blocks.
    #[inline(never)]
    fn refill(&self, inner: &mut HeapInner, class: usize) -> Option<()> {
        let old = inner.classes[class].current;
        if !old.is_null() {
            // SAFETY: our page.
            let page = unsafe { &*old };
            page.collect();
            if page.has_room() {
                return Some(());
            }
        }
        let c = &mut inner.classes[class];
        let mut p = c.head;
        // The first page sent to the back: meeting it again means every
        // listed page was looked at.
        let mut first_rotated = ptr::null_mut();
        for _ in 0..SCAN_MAX {
            if p.is_null() || p == first_rotated {
                break;
            }
            // SAFETY: a listed page of ours.
            let page = unsafe { &*p };
            let next = page.next.get();
            page.collect();
            if page.has_room() {
                c.unlink(p);
                if !old.is_null() {
                    c.push_back(old);
                }
                c.current = p;
                return Some(());
            }
            // Full: look at the others first next time.
            c.unlink(p);
            c.push_back(p);
            if first_rotated.is_null() {
                first_rotated = p;
            }
            p = next;
        }
        let fresh = match inner.spare.pop() {
            Some(p) => p,
            None => self.new_page()?,
        };
        // SAFETY: ours, and empty.
        unsafe { Self::format(fresh, class) };
        let c = &mut inner.classes[class];
        if !old.is_null() {
            c.push_back(old);
        }
        c.current = fresh;
        Some(())
    }

    fn new_page(&self) -> Option<*mut Page> {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc(page_layout()) };
        if p.is_null() {
            return None;
        }
        let page = p.cast::<Page>();
        // SAFETY: fresh memory, large and aligned enough for the header.
        unsafe {
            page.write(Page {
                remote: RemoteFree::new(),
                owner: self,
                class: 0,
                local: Cell::new(ptr::null_mut()),
                bump: Cell::new(FIRST_BLOCK),
                used: Cell::new(0),
                prev: Cell::new(ptr::null_mut()),
                next: Cell::new(ptr::null_mut()),
            })
        };
        Some(page)
    }

    /// Sets up an empty page (new or spare) for `class`.
    ///
    /// # Safety
    ///
    /// `p` is an empty page of this heap, in no list.
    unsafe fn format(p: *mut Page, class: usize) {
        // SAFETY: the caller's contract; nobody else can reach an empty
        // page (nothing of it is in use, so nothing can be pushed).
        let page = unsafe { &mut *p };
        debug_assert_eq!(page.used.get(), 0);
        debug_assert!(page.remote.take_all().is_null());
        page.class = class;
        page.local.set(ptr::null_mut());
        page.bump.set(FIRST_BLOCK);
        page.prev.set(ptr::null_mut());
        page.next.set(ptr::null_mut());
    }

    /// Frees a block of one of this heap's pages, on the heap's worker.
    ///
    /// # Safety
    ///
    /// The caller is this heap's worker; `block` came from this heap's
    /// `alloc` and is no longer used.
    unsafe fn free_local(&self, page: *mut Page, block: *mut u8) {
        // SAFETY: the caller's contract.
        let inner = unsafe { self.inner() };
        // SAFETY: the block's page is ours and alive (it has a block in use).
        let p = unsafe { &*page };
        let was_full = !p.has_room();
        p.push_local(block.cast());
        let c = &mut inner.classes[p.class];
        if page == c.current {
            return;
        }
        if p.used.get() == 0 {
            // Empty: nothing of it is in use nor on its remote list.
            c.unlink(page);
            Self::release(&mut inner.spare, page);
        } else if was_full {
            // Room again: to the front, where `refill` looks first.
            c.unlink(page);
            c.push_front(page);
        }
    }
}

impl Heap {
    /// An empty page of ours, in no list: kept as a spare, or given back.
    fn release(spare: &mut Vec<*mut Page>, page: *mut Page) {
        if spare.len() < SPARE_MAX {
            spare.push(page);
        } else {
            // SAFETY: allocated with this layout; empty, and nobody refers
            // to it any more.
            unsafe { std::alloc::dealloc(page.cast(), page_layout()) };
        }
    }

    /// Gives back the pages that other threads' frees emptied (the owner
    /// only learns of those frees when it looks at a page): called by the
    /// worker when it runs out of work, before it sleeps. Nothing to do,
    /// and no atomic read-modify-write, unless a remote free happened
    /// since the last time. Best effort: a free racing this sweep may be
    /// left for the next one.
    ///
    /// # Safety
    ///
    /// The caller is this heap's worker.
    pub(crate) unsafe fn trim(&self) {
        // SAFETY: the caller's contract; the borrow ends here.
        let kept = std::mem::replace(unsafe { &mut self.inner().eager }, ptr::null_mut());
        if let Some(b) = NonNull::new(kept) {
            // SAFETY: the block kept aside is ours and unused.
            unsafe { self.free_local(Page::of(b.as_ptr()), b.as_ptr()) };
        }
        // Acquire: pairs with the Release store of a remote free that set
        // the flag after pushing onto a page's list.
        if !self.remote_freed.load(Ordering::Relaxed)
            || !self.remote_freed.swap(false, Ordering::Acquire)
        {
            return;
        }
        // SAFETY: the caller's contract.
        let HeapInner { classes, spare, .. } = unsafe { self.inner() };
        for c in classes.iter_mut() {
            let mut p = c.head;
            while !p.is_null() {
                // SAFETY: a listed page of ours.
                let page = unsafe { &*p };
                let next = page.next.get();
                let was_full = !page.has_room();
                page.collect();
                if page.used.get() == 0 {
                    c.unlink(p);
                    Self::release(spare, p);
                } else if was_full && page.has_room() {
                    c.unlink(p);
                    c.push_front(p);
                }
                p = next;
            }
        }
    }

    /// Pages in the lists (not current, not spare): for tests.
    #[cfg(all(test, not(loom)))]
    fn listed_pages(&self) -> usize {
        // SAFETY: tests call this on the heap's worker thread.
        let inner = unsafe { self.inner() };
        let mut n = 0;
        for c in &inner.classes {
            let mut p = c.head;
            while !p.is_null() {
                n += 1;
                // SAFETY: a listed page of ours.
                p = unsafe { (*p).next.get() };
            }
        }
        n
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        // Every task and mailbox (every block) is gone: they held the
        // runtime that holds this heap.
        let inner = self.inner.get_mut();
        let mut pages = std::mem::take(&mut inner.spare);
        for c in &mut inner.classes {
            pages.extend([c.current].into_iter().filter(|p| !p.is_null()));
            let mut p = c.head;
            while !p.is_null() {
                pages.push(p);
                // SAFETY: a listed page of ours.
                p = unsafe { (*p).next.get() };
            }
        }
        for p in pages {
            // SAFETY: allocated with this layout; nothing uses it.
            unsafe { std::alloc::dealloc(p.cast(), page_layout()) };
        }
    }
}

impl Class {
    fn unlink(&mut self, p: *mut Page) {
        // SAFETY: a listed page of ours (owner only).
        let page = unsafe { &*p };
        self.join(page.prev.get(), page.next.get());
        page.prev.set(ptr::null_mut());
        page.next.set(ptr::null_mut());
    }

    fn push_back(&mut self, p: *mut Page) {
        self.insert(p, self.tail, ptr::null_mut());
    }

    fn push_front(&mut self, p: *mut Page) {
        self.insert(p, ptr::null_mut(), self.head);
    }

    /// Links `p` (in no list) between `prev` and `next`, neighbours in this
    /// list (null: the list's end).
    fn insert(&mut self, p: *mut Page, prev: *mut Page, next: *mut Page) {
        self.join(prev, p);
        self.join(p, next);
    }

    /// Makes `a` and `b` neighbours in this list, `a` first (null: the
    /// list's end on that side).
    fn join(&mut self, a: *mut Page, b: *mut Page) {
        if a.is_null() {
            self.head = b;
        } else {
            // SAFETY: pages of ours (owner only).
            unsafe { (*a).next.set(b) };
        }
        if b.is_null() {
            self.tail = a;
        } else {
            // SAFETY: as above.
            unsafe { (*b).prev.set(a) };
        }
    }
}

/// Frees a block from some heap's `alloc`: into its page's local list if
/// `here` (the current thread's heap, if it is a worker) owns the page,
/// else onto the page's remote list.
///
/// # Safety
///
/// `block` came from a heap's `alloc`, is no longer used, and its heap is
/// alive; `here` is the heap of the worker running this thread, if any.
pub(crate) unsafe fn free(block: NonNull<u8>, here: Option<&Heap>) {
    let page = Page::of(block.as_ptr());
    // SAFETY: the block's page is alive (caller's contract).
    let owner = unsafe { (*page).owner };
    match here {
        // SAFETY: we are the owner's worker.
        Some(heap) if ptr::eq(heap, owner) => unsafe { heap.free_local(page, block.as_ptr()) },
        _ => {
            // SAFETY: the block is ours to give back; the page is alive.
            unsafe { (*page).remote.push(block.as_ptr().cast()) };
            // SAFETY: the page is alive, so is its heap (module invariants).
            let owner = unsafe { &*owner };
            // Always a store, after the push (no "already set?" load: a
            // sweep could clear the flag between that load and its look at
            // our page, and miss the page for good). Release: a sweep whose
            // swap reads this store (Acquire) sees our push; if the sweep's
            // swap came first, the flag stays set for the next sweep.
            owner.remote_freed.store(true, Ordering::Release);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    /// A block address to free on another thread.
    struct Sent(NonNull<u8>);
    // SAFETY: a free block's ownership moves with it.
    unsafe impl Send for Sent {}

    /// Every size class: blocks are distinct, aligned, inside their page
    /// and writable; freed half by the owner and half by another thread,
    /// they come back to later rounds.
    #[test]
    fn blocks_are_distinct_aligned_and_come_back() {
        let heap = Heap::new();
        for size in [1, 8, 16, 24, 100, 112, 500, 512, 720, MAX_BLOCK] {
            let class = class_of(layout(size)).unwrap();
            assert!((class + 1) * GRAIN >= size);
            for _round in 0..3 {
                // SAFETY: this thread is the heap's worker.
                let blocks: Vec<NonNull<u8>> = (0..3000)
                    .map(|_| unsafe { heap.alloc(class) }.unwrap())
                    .collect();
                for (i, b) in blocks.iter().enumerate() {
                    let a = b.as_ptr().addr();
                    assert_eq!(a % BLOCK_ALIGN, 0);
                    let start = a & !(PAGE - 1);
                    assert!(a - start >= FIRST_BLOCK && a + size <= start + PAGE);
                    // SAFETY: ours, `size` bytes.
                    unsafe { b.as_ptr().write_bytes(i as u8, size) };
                }
                let distinct: HashSet<usize> = blocks.iter().map(|b| b.as_ptr().addr()).collect();
                assert_eq!(distinct.len(), blocks.len(), "a block handed out twice");
                let (local, remote) = blocks.split_at(blocks.len() / 2);
                let remote: Vec<Sent> = remote.iter().map(|&b| Sent(b)).collect();
                std::thread::scope(|s| {
                    s.spawn(move || {
                        for b in remote {
                            // SAFETY: allocated above, no longer used; this
                            // thread is no worker.
                            unsafe { free(b.0, None) };
                        }
                    });
                });
                for &b in local {
                    // SAFETY: as above; we are the owner.
                    unsafe { free(b, Some(&heap)) };
                }
            }
        }
    }

    /// Freed memory is reused: a second round of the same size takes no
    /// new page (an emptied page waits among the spares).
    #[test]
    fn freed_blocks_are_reused() {
        let heap = Heap::new();
        let class = class_of(layout(112)).unwrap();
        let mut rounds = Vec::new();
        for _ in 0..2 {
            // SAFETY: this thread is the heap's worker.
            let blocks: Vec<NonNull<u8>> = (0..1000)
                .map(|_| unsafe { heap.alloc(class) }.unwrap())
                .collect();
            let pages = blocks.iter().map(|b| b.as_ptr().addr() & !(PAGE - 1));
            rounds.push(pages.collect::<HashSet<_>>());
            for b in blocks {
                // SAFETY: allocated above, no longer used; we are the owner.
                unsafe { free(b, Some(&heap)) };
            }
        }
        assert_eq!(rounds[0], rounds[1]);
    }

    /// Pages that other threads' frees emptied go back at the owner's next
    /// `trim` (spares aside).
    #[test]
    fn trim_gives_back_pages_emptied_by_remote_frees() {
        let heap = Heap::new();
        let class = class_of(layout(512)).unwrap();
        // SAFETY: this thread is the heap's worker.
        let blocks: Vec<Sent> = (0..(SPARE_MAX + 6) * (PAGE / 512))
            .map(|_| Sent(unsafe { heap.alloc(class) }.unwrap()))
            .collect();
        assert!(heap.listed_pages() >= SPARE_MAX + 4);
        std::thread::scope(|s| {
            s.spawn(move || {
                for b in blocks {
                    // SAFETY: allocated above, no longer used; no worker.
                    unsafe { free(b.0, None) };
                }
            });
        });
        // SAFETY: as above.
        unsafe { heap.trim() };
        assert_eq!(heap.listed_pages(), 0, "emptied pages still listed");
        // SAFETY: as above.
        let spare = unsafe { heap.inner() }.spare.len();
        assert_eq!(spare, SPARE_MAX);
    }

    /// A block freed by another thread onto a full page that is no longer
    /// current is found again by the owner's scan.
    #[test]
    fn remote_frees_on_full_pages_are_found_again() {
        let heap = Heap::new();
        let class = class_of(layout(512)).unwrap();
        // SAFETY: this thread is the heap's worker.
        let mut blocks: Vec<NonNull<u8>> = (0..1000)
            .map(|_| unsafe { heap.alloc(class) }.unwrap())
            .collect();
        let first = blocks.remove(0);
        let sent = Sent(first);
        std::thread::scope(|s| {
            s.spawn(move || {
                let sent = sent;
                // SAFETY: allocated above, unused; not a worker thread.
                unsafe { free(sent.0, None) }
            });
        });
        // Fill the current page, and the next ones: the first page's block
        // must come back before the heap takes many more pages.
        let mut found = false;
        for _ in 0..(SCAN_MAX + 2) * (PAGE / 512) {
            // SAFETY: as above.
            let b = unsafe { heap.alloc(class) }.unwrap();
            blocks.push(b);
            if b == first {
                found = true;
                break;
            }
        }
        assert!(found, "a remotely freed block was never reused");
        for b in blocks {
            // SAFETY: allocated above, no longer used; we are the owner.
            unsafe { free(b, Some(&heap)) };
        }
    }
}
