//! A [`WaitUntil`](super::WaitUntil) clause's record: its op and the slot
//! its result goes to, shared by the statement (which performs the op) and
//! the [`Clause`] handle (which takes the result), after a head that is the
//! statement's alone (the op's methods and the clause's bookkeeping, so
//! the statement keeps one thin pointer per clause). A statement's records
//! share one allocation, a block (more only if they outgrow it), counted
//! by references: the statement's and one per handle. The last block of
//! the usual size freed on a thread is kept for the thread's next
//! statement (`spare`).
//!
//! # Invariants
//!
//! * The op and the head are touched only by the statement that owns the
//!   record, one thread at a time (the statement is `&mut` or pinned in its
//!   `run` future); the handle never touches them. The op and the head's
//!   opstate live at one address (inside the block) from `add` until the
//!   statement drops them, so a record it published may point into them
//!   (partners reach that opstate as they reach any perform's, through
//!   its atomics).
//! * The statement drops the op and the opstate itself
//!   ([`ClauseCell::drop_op`], [`CellRef::drop_state`]): freeing the block
//!   never does, so a handle that outlives the statement (and the lifetime
//!   the op borrows for) frees only bytes, and a statement that is leaked
//!   leaks its ops.
//! * The slot's `state` goes `EMPTY -> FULL -> TAKEN` (the statement puts
//!   the result once, a handle takes it once), or to `GONE` from `EMPTY` or
//!   `FULL` when the handle is dropped (`TAKEN` is final: nothing is left
//!   to drop and the statement put already). Whoever moves the state away from a slot
//!   holding a value owns that value: `take` (`FULL -> TAKEN`) returns it,
//!   the handle's drop (`FULL -> GONE`) drops it, and a `put` that finds
//!   `GONE` drops the value it brought. So a result is dropped exactly once,
//!   while the handle that could have taken it, or the statement, is
//!   alive: never by whoever frees the block last.
//! * A block's count is the number of its live references: one for the
//!   statement (from the block's creation until the statement's drop), one
//!   per handle of a record in it, and the statement's *credits* in its
//!   last block: references counted ahead, which it hands to the next
//!   handles it makes there without touching the count (the statement
//!   gives back the credits left when it moves on to a new block or is
//!   dropped). Whoever drops it to zero frees the block; nothing in a
//!   block has drop glue of its own left to run then.

use crate::loom::{AtomicUsize, Ordering, UnsafeCell, fence};
use crate::op::state::OpState;
use crate::op::{BlockCx, Op};
use smallvec::SmallVec;
use std::alloc::{Layout, handle_alloc_error};
use std::cell::Cell;
use std::fmt;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::pin::Pin;
use std::ptr::NonNull;

// Under loom, blocks are allocated through loom, which reports one never
// freed at the end of a model's execution.
#[cfg(loom)]
use loom::alloc::{alloc, dealloc};
#[cfg(not(loom))]
use std::alloc::{alloc, dealloc};

use super::pred::{Pred, StmtId};

/// No result yet.
const EMPTY: usize = 0;
/// The result is in the slot.
const FULL: usize = 1;
/// The result was taken.
const TAKEN: usize = 2;
/// The handle is gone: nobody will take a result.
const GONE: usize = 3;

/// Where a clause's result waits for its handle.
struct Slot<T> {
    state: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

impl<T> Slot<T> {
    fn new() -> Self {
        Self {
            state: AtomicUsize::new(EMPTY),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The statement's one put of the result.
    fn put(&self, value: T) {
        // Relaxed: a `GONE` seen here only saves the write; the
        // compare-and-swap below decides.
        if self.state.load(Ordering::Relaxed) == GONE {
            drop(value);
            return;
        }
        // SAFETY: the state is `EMPTY` or `GONE` (a clause is put once), in
        // which nobody else reads or writes the value.
        self.value.with_mut(|v| unsafe { (*v).write(value) });
        // Release: pairs with the Acquire of `take` and of the handle's
        // drop, which then read the value written above.
        if self
            .state
            .compare_exchange(EMPTY, FULL, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // `GONE` meanwhile: the value is ours to drop.
            // SAFETY: written just above, and nobody reads a `GONE` slot.
            self.value.with_mut(|v| unsafe { (*v).assume_init_drop() });
        }
    }

    /// The handle's take.
    fn take(&self) -> Option<T> {
        // Acquire: pairs with `put`'s Release, so the value is visible.
        self.state
            .compare_exchange(FULL, TAKEN, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        // SAFETY: we moved `FULL -> TAKEN`, which only one party can do:
        // the value is initialised and ours.
        Some(self.value.with(|v| unsafe { (*v).assume_init_read() }))
    }

    fn is_full(&self) -> bool {
        // Relaxed: a flag; `take` synchronises for the value.
        self.state.load(Ordering::Relaxed) == FULL
    }

    /// The handle is dropped.
    fn release(&self) {
        // Relaxed: `TAKEN` is written only by a take through this handle,
        // which happened before its drop, and is final (the statement puts
        // once, from `EMPTY`): no value is left, and nobody else will look.
        if self.state.load(Ordering::Relaxed) == TAKEN {
            return;
        }
        // Acquire: pairs with `put`'s Release, so a value found is visible.
        if self.state.swap(GONE, Ordering::Acquire) == FULL {
            // SAFETY: we moved `FULL -> GONE`: the value is ours.
            self.value.with_mut(|v| unsafe { (*v).assume_init_drop() });
        }
    }
}

/// The start of every record, whatever its op: where the op's methods are
/// and the statement's bookkeeping of the clause, so a statement keeps one
/// thin pointer per clause ([`CellRef`]) and small enough to move cheaply.
/// Touched only by the statement.
#[repr(C)]
struct Head<'a> {
    /// The record itself, as the statement performs it.
    cell: NonNull<dyn ClauseCell + 'a>,
    /// Acquired: its op committed and its result was put.
    done: Cell<bool>,
    /// In a blocked round: its first leaf among the round's leaves...
    first_leaf: Cell<usize>,
    /// ...and how many it has.
    leaves: Cell<usize>,
    /// The clause's own opstate, when a statement that needs every clause
    /// performs each on its own (`wait_until.rs`, "Every clause at once");
    /// published records of the clause point at it. Dropped by the
    /// statement ([`CellRef::drop_state`]).
    state: ManuallyDrop<OpState>,
}

/// A clause's record: its head, the result slot and the op (see the module
/// docs).
#[repr(C)]
struct Record<'a, O: Op> {
    /// First (`repr(C)`): a [`CellRef`] points at it.
    head: Head<'a>,
    slot: Slot<O::Output>,
    op: UnsafeCell<ManuallyDrop<O>>,
}

// SAFETY: the op and the head are touched by one thread at a time (the
// statement's owner; `O: Send` lets it move between threads with the
// statement); the slot's value moves from the statement's thread to a
// handle's (`Output: Send`), its accesses ordered by `state` (module docs).
unsafe impl<O: Op + Send> Sync for Record<'_, O> where O::Output: Send {}
// SAFETY: as above.
unsafe impl<O: Op + Send> Send for Record<'_, O> where O::Output: Send {}

/// The statement's view of a record: the op, type-erased, whose result goes
/// to the slot.
///
/// # Safety (every method)
///
/// Called only by the statement owning the record, never concurrently, and
/// not after [`drop_op`](ClauseCell::drop_op).
pub(super) trait ClauseCell: Send + Sync {
    /// `Op::leaves`.
    unsafe fn leaves(&self) -> usize;
    /// `Op::commits_remotely`.
    unsafe fn commits_remotely(&self) -> bool;
    /// `Op::prepare`.
    unsafe fn prepare(&self);
    /// `Op::try_now`; on a commit, puts the result: returns whether it
    /// committed.
    unsafe fn try_now(&self) -> bool;
    /// `Op::block`.
    unsafe fn block(&self, cx: BlockCx<'_>);
    /// `Op::repoll`.
    unsafe fn repoll(&self, cx: BlockCx<'_>);
    /// `Op::finish`, putting the result.
    unsafe fn finish(&self, leaf: usize);
    /// `Op::abandon`.
    unsafe fn abandon(&self, leaf: usize);
    /// `Op::withdraw`.
    unsafe fn withdraw(&self);
    /// `Op::withdraw` of an op whose prepare or try phase unwound.
    unsafe fn withdraw_unwound(&self);
    /// Drops the op (once; nothing is published).
    unsafe fn drop_op(&self);
}

impl<O: Op + Send> Record<'_, O>
where
    O::Output: Send,
{
    /// The op, pinned.
    ///
    /// # Safety
    ///
    /// The caller is the statement (trait docs), so no other reference to
    /// the op exists while this one lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn op(&self) -> Pin<&mut O> {
        // SAFETY: exclusive (the caller's contract); pinned, because the
        // op lives inside the shared allocation until it is dropped in
        // place (`drop_op`), never moved.
        self.op
            .with_mut(|op| unsafe { Pin::new_unchecked(&mut **op) })
    }
}

// The methods' contract is the trait's; each forwards to the op.
impl<O: Op + Send> ClauseCell for Record<'_, O>
where
    O::Output: Send,
{
    unsafe fn leaves(&self) -> usize {
        // SAFETY: the trait's contract.
        unsafe { self.op().leaves() }
    }

    unsafe fn commits_remotely(&self) -> bool {
        // SAFETY: the trait's contract.
        unsafe { self.op().commits_remotely() }
    }

    unsafe fn prepare(&self) {
        // SAFETY: the trait's contract.
        unsafe { self.op().prepare() }
    }

    unsafe fn try_now(&self) -> bool {
        // SAFETY: the trait's contract.
        match unsafe { self.op().try_now() } {
            Some(out) => {
                self.slot.put(out);
                true
            }
            None => false,
        }
    }

    unsafe fn block(&self, cx: BlockCx<'_>) {
        // SAFETY: the trait's contract.
        unsafe { self.op().block(cx) }
    }

    unsafe fn repoll(&self, cx: BlockCx<'_>) {
        // SAFETY: the trait's contract.
        unsafe { self.op().repoll(cx) }
    }

    unsafe fn finish(&self, leaf: usize) {
        // SAFETY: the trait's contract.
        let out = unsafe { self.op().finish(leaf) };
        self.slot.put(out);
    }

    unsafe fn abandon(&self, leaf: usize) {
        // SAFETY: the trait's contract.
        unsafe { self.op().abandon(leaf) }
    }

    unsafe fn withdraw(&self) {
        // SAFETY: the trait's contract.
        unsafe { self.op().withdraw() }
    }

    unsafe fn withdraw_unwound(&self) {
        // SAFETY: the trait's contract.
        crate::op::withdraw_unwound(unsafe { self.op() });
    }

    unsafe fn drop_op(&self) {
        // SAFETY: the trait's contract: exclusive, once, and nothing points
        // into the op any more.
        self.op
            .with_mut(|op| unsafe { ManuallyDrop::drop(&mut *op) });
    }
}

/// A block's header, at its start; records follow.
struct Header {
    /// Live references (module invariants).
    refs: AtomicUsize,
    /// The block's layout, to free it.
    layout: Layout,
}

/// The size of a block, header included, unless a record needs more: room
/// for a few clauses of the usual ops.
const BLOCK_SIZE: usize = 512;

/// References a statement counts ahead in a new block, for the handles it
/// will make there (module invariants): a statement of up to this many
/// clauses per block touches each block's count only when it makes the
/// block and when it drops it.
const CREDITS: usize = 7;

/// Drops one reference to the block at `header`, freeing it if it was the
/// last.
///
/// # Safety
///
/// The caller owns one of the block's references and gives it up.
unsafe fn release(header: NonNull<Header>) {
    // SAFETY: the caller's contract.
    unsafe { release_n(header, 1) }
}

/// Drops `n` references to the block at `header`, freeing it if they were
/// the last.
///
/// # Safety
///
/// The caller owns `n` (at least one) of the block's references and gives
/// them up.
unsafe fn release_n(header: NonNull<Header>, n: usize) {
    // SAFETY: the block lives while we hold a reference.
    let h = unsafe { header.as_ref() };
    // Release: our accesses to the block happen before whoever frees it;
    // that one's Acquire fence below pairs with every other Release here.
    if h.refs.fetch_sub(n, Ordering::Release) != n {
        return;
    }
    fence(Ordering::Acquire);
    let layout = h.layout;
    // SAFETY: the last reference: nobody else reaches the block. The
    // header is dropped in place (its count has no glue outside loom),
    // the records have none left to run (module invariants), and the
    // block was allocated with `layout`.
    unsafe {
        header.as_ptr().drop_in_place();
        spare::free(header.cast(), layout);
    }
}

/// One block kept aside per thread: the last block freed there, for the
/// next statement made there (a statement per wait would otherwise
/// allocate and free one each time). Blocks of another size, and every
/// block under loom or `fibra_system_alloc` (where the sanitizer sees each
/// block's lifetime), go to the allocator.
mod spare {
    use super::{alloc, dealloc};
    use std::alloc::Layout;

    #[cfg(not(any(loom, fibra_system_alloc)))]
    mod kept {
        use super::super::{BLOCK_SIZE, Header, dealloc};
        use std::alloc::Layout;
        use std::cell::Cell;
        use std::ptr::NonNull;

        /// The layout of the blocks kept aside: a block of the usual size.
        pub(super) const KEPT: Layout =
            match Layout::from_size_align(BLOCK_SIZE, align_of::<Header>()) {
                Ok(l) => l,
                Err(_) => panic!("BLOCK_SIZE is not a valid block size"),
            };

        /// A thread's block kept aside, freed when the thread ends.
        pub(super) struct Spare(pub(super) Cell<Option<NonNull<u8>>>);

        impl Drop for Spare {
            fn drop(&mut self) {
                if let Some(block) = self.0.take() {
                    // SAFETY: allocated with `KEPT`, and no longer anyone's.
                    unsafe { dealloc(block.as_ptr(), KEPT) };
                }
            }
        }

        thread_local! {
            pub(super) static SPARE: Spare = const { Spare(Cell::new(None)) };
        }
    }

    /// A block of `layout`: the one kept aside if it fits, or a new one.
    ///
    /// # Safety
    ///
    /// `layout` is not zero-sized.
    #[inline]
    pub(super) unsafe fn alloc_block(layout: Layout) -> *mut u8 {
        #[cfg(not(any(loom, fibra_system_alloc)))]
        if layout == kept::KEPT
            && let Ok(Some(block)) = kept::SPARE.try_with(|s| s.0.take())
        {
            return block.as_ptr();
        }
        // SAFETY: the caller's contract.
        unsafe { alloc(layout) }
    }

    /// Frees `block` of `layout`, or keeps it aside.
    ///
    /// # Safety
    ///
    /// `block` came from [`alloc_block`] with `layout` and is no longer
    /// anyone's.
    #[inline]
    pub(super) unsafe fn free(block: std::ptr::NonNull<u8>, layout: Layout) {
        #[cfg(not(any(loom, fibra_system_alloc)))]
        if layout == kept::KEPT
            && kept::SPARE
                .try_with(|s| {
                    let empty = s.0.get().is_none();
                    if empty {
                        s.0.set(Some(block));
                    }
                    empty
                })
                .unwrap_or(false)
        {
            return;
        }
        // SAFETY: the caller's contract.
        unsafe { dealloc(block.as_ptr(), layout) }
    }
}

/// The statement's records, in one block (more only if they outgrow it).
pub(super) struct Blocks {
    /// Each holds the statement's reference; the last one is being filled.
    blocks: SmallVec<[NonNull<Header>; 1]>,
    /// Bytes used in the last block, its header included.
    used: usize,
    /// References to the last block counted ahead and not handed out yet
    /// (module invariants).
    credits: usize,
}

// SAFETY: the blocks are only reached through the records, whose own
// `Send`/`Sync` the statement's entries carry; the references counted are
// atomic.
unsafe impl Send for Blocks {}
// SAFETY: as above (`&Blocks` gives no access at all).
unsafe impl Sync for Blocks {}

impl Blocks {
    pub(super) fn new() -> Self {
        Blocks {
            blocks: SmallVec::new(),
            used: 0,
            credits: 0,
        }
    }

    /// Room for a record of layout `record` in the last block, or in a new
    /// one: its address, and the block (with a reference taken for the
    /// caller).
    #[inline]
    fn place(&mut self, record: Layout) -> (NonNull<u8>, NonNull<Header>) {
        if let Some(&header) = self.blocks.last() {
            // SAFETY: the statement's reference keeps the block alive.
            let h = unsafe { header.as_ref() };
            let at = self.used.next_multiple_of(record.align());
            if record.align() <= h.layout.align() && at + record.size() <= h.layout.size() {
                self.used = at + record.size();
                if self.credits > 0 {
                    // A reference counted ahead (module invariants).
                    self.credits -= 1;
                } else {
                    // Relaxed: a new reference made from one we hold (as
                    // `Arc::clone`).
                    h.refs.fetch_add(1, Ordering::Relaxed);
                }
                // SAFETY: `at` is inside the block, aligned for the record.
                return (unsafe { header.cast::<u8>().add(at) }, header);
            }
        }
        self.place_in_new_block(record)
    }

    /// [`place`](Self::place) when the last block has no room
    /// (or there is none yet): a new block.
    #[inline(never)]
    fn place_in_new_block(&mut self, record: Layout) -> (NonNull<u8>, NonNull<Header>) {
        if let Some(&header) = self.blocks.last()
            && self.credits > 0
        {
            // Moving on: the credits left in the last block go back. Never
            // its last references (we keep our own).
            // SAFETY: references we hold, given up once.
            unsafe { release_n(header, self.credits) };
            self.credits = 0;
        }
        let (layout, at) = Layout::new::<Header>()
            .extend(record)
            .expect("a clause record's size overflows");
        let layout = Layout::from_size_align(layout.size().max(BLOCK_SIZE), layout.align())
            .expect("a clause record's size overflows")
            .pad_to_align();
        // SAFETY: the layout is not zero-sized (it holds a header).
        let Some(block) = NonNull::new(unsafe { spare::alloc_block(layout) }) else {
            handle_alloc_error(layout)
        };
        let header = block.cast::<Header>();
        // SAFETY: freshly allocated for a header and more. References: the
        // statement's, the caller's and the statement's credits.
        unsafe {
            header.write(Header {
                refs: AtomicUsize::new(2 + CREDITS),
                layout,
            });
        }
        self.blocks.push(header);
        self.used = at + record.size();
        self.credits = CREDITS;
        // SAFETY: `at` is inside the block, aligned for the record.
        (unsafe { block.add(at) }, header)
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        let last = self.blocks.len().saturating_sub(1);
        for (i, &header) in self.blocks.iter().enumerate() {
            // The statement's reference, and in the last block its credits
            // left.
            let n = if i == last { 1 + self.credits } else { 1 };
            // SAFETY: references we hold, given up once.
            unsafe { release_n(header, n) };
        }
    }
}

/// A record, as the statement sees it: a thin pointer to its [`Head`],
/// in a block the statement holds a reference to; derefs to the op,
/// type-erased.
pub(super) struct CellRef<'a>(NonNull<Head<'a>>);

// SAFETY: a `ClauseCell` is `Send + Sync`, and the statement's reference
// keeps it alive wherever the statement goes; the head is the statement's
// alone.
unsafe impl Send for CellRef<'_> {}
// SAFETY: as above (`&CellRef` gives only reads of the head, and the
// statement that shares it does not write meanwhile).
unsafe impl Sync for CellRef<'_> {}

impl<'a> CellRef<'a> {
    fn head(&self) -> &Head<'a> {
        // SAFETY: the record lives in a block the statement (our owner,
        // with its `Blocks`) holds a reference to.
        unsafe { self.0.as_ref() }
    }

    /// Whether the clause was acquired.
    #[inline]
    pub(super) fn done(&self) -> bool {
        self.head().done.get()
    }

    /// The clause was acquired.
    #[inline]
    pub(super) fn set_done(&mut self) {
        self.head().done.set(true);
    }

    /// Its first leaf in the blocked round.
    #[inline]
    pub(super) fn first_leaf(&self) -> usize {
        self.head().first_leaf.get()
    }

    /// How many leaves it has in the blocked round.
    #[inline]
    pub(super) fn leaves_in_round(&self) -> usize {
        self.head().leaves.get()
    }

    /// Numbers its leaves in a round about to block: `first` and `leaves`.
    #[inline]
    pub(super) fn set_leaves(&mut self, first: usize, leaves: usize) {
        let h = self.head();
        h.first_leaf.set(first);
        h.leaves.set(leaves);
    }

    /// The clause's own opstate (for a statement that performs each
    /// clause on its own); at the record's address, which never moves.
    #[inline]
    pub(super) fn state(&self) -> &OpState {
        &self.head().state
    }

    /// Drops the clause's opstate (the waker it may hold).
    ///
    /// # Safety
    ///
    /// Once, by the statement, when no record of the clause is published
    /// and the statement uses the opstate no more.
    pub(super) unsafe fn drop_state(&self) {
        // SAFETY: the head is the statement's alone (module invariants);
        // the caller's contract: once, and nothing points at it any more.
        unsafe { ManuallyDrop::drop(&mut (*self.0.as_ptr()).state) };
    }
}

impl<'a> std::ops::Deref for CellRef<'a> {
    type Target = dyn ClauseCell + 'a;

    #[inline]
    fn deref(&self) -> &Self::Target {
        // SAFETY: the record (the head's own, which `cell` points at) lives
        // while the head does.
        unsafe { self.head().cell.as_ref() }
    }
}

/// A new record for `op` in `blocks`: the statement's view, and the handle.
#[inline]
pub(super) fn record<'a, O>(
    blocks: &mut Blocks,
    op: O,
    index: usize,
    stmt: StmtId,
) -> (CellRef<'a>, Clause<O::Output>)
where
    O: Op + Send + 'a,
    O::Output: Send + 'a,
{
    let (ptr, block) = blocks.place(Layout::new::<Record<'a, O>>());
    let ptr = ptr.cast::<Record<'a, O>>();
    let cell: NonNull<dyn ClauseCell + 'a> = ptr;
    // SAFETY: room for the record, ours alone.
    unsafe {
        ptr.write(Record {
            head: Head {
                cell,
                done: Cell::new(false),
                first_leaf: Cell::new(0),
                leaves: Cell::new(0),
                state: ManuallyDrop::new(OpState::new()),
            },
            slot: Slot::new(),
            op: UnsafeCell::new(ManuallyDrop::new(op)),
        });
    }
    // SAFETY: fields of the record just written; the head is its first
    // (`repr(C)`).
    let (head, slot) = unsafe {
        (
            ptr.cast::<Head<'a>>(),
            NonNull::new_unchecked(std::ptr::addr_of_mut!((*ptr.as_ptr()).slot)),
        )
    };
    (
        CellRef(head),
        Clause {
            index,
            stmt,
            slot,
            block,
        },
    )
}

/// A clause of a [`WaitUntil`](super::WaitUntil): names it in predicates
/// and holds its result once it is acquired.
///
/// ```
/// use fibra::{IVar, WaitUntil};
///
/// let v = IVar::new();
/// v.put("x").unwrap();
/// let mut w = WaitUntil::new();
/// let clause: fibra::select::Clause<&str> = w.add(v.get_op());
/// assert!(w.run_blocking(clause.done()));
/// assert_eq!(clause.take(), Some("x"));
/// ```
pub struct Clause<T> {
    index: usize,
    /// The statement's identity.
    stmt: StmtId,
    /// The record's slot, in `block`...
    slot: NonNull<Slot<T>>,
    /// ...which this handle holds a reference to.
    block: NonNull<Header>,
}

// SAFETY: the slot's value moves to whichever thread takes it (`T: Send`);
// every access to it is ordered by its atomic state, so handles may be
// shared; the block's count is atomic.
unsafe impl<T: Send> Send for Clause<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Clause<T> {}

impl<T> Clause<T> {
    fn slot(&self) -> &Slot<T> {
        // SAFETY: our reference keeps the block, and the slot in it, alive.
        unsafe { self.slot.as_ref() }
    }

    /// The predicate "this clause was acquired".
    ///
    /// ```
    /// use fibra::{IVar, WaitUntil};
    ///
    /// let (a, b) = (IVar::new(), IVar::new());
    /// a.put(1).unwrap();
    /// b.put(2).unwrap();
    /// let mut w = WaitUntil::new();
    /// let (ca, cb) = (w.add(a.get_op()), w.add(b.get_op()));
    /// assert!(w.run_blocking(ca.done() & cb.done())); // both
    /// assert_eq!((ca.take(), cb.take()), (Some(1), Some(2)));
    /// ```
    pub fn done(&self) -> Pred {
        Pred::clause(self.index, self.stmt)
    }

    /// Takes the clause's result, if it was acquired (and not taken yet).
    ///
    /// ```
    /// use fibra::{IVar, WaitUntil};
    ///
    /// let v = IVar::new();
    /// v.put(7).unwrap();
    /// let mut w = WaitUntil::new();
    /// let c = w.add(v.get_op());
    /// assert!(w.run_blocking(c.done()));
    /// assert_eq!(c.take(), Some(7));
    /// assert_eq!(c.take(), None); // taken already
    /// ```
    pub fn take(&self) -> Option<T> {
        self.slot().take()
    }

    /// Whether the clause was acquired (and its result not taken yet).
    ///
    /// ```
    /// use fibra::{IVar, WaitUntil};
    ///
    /// let (a, b) = (IVar::<u8>::new(), IVar::new());
    /// b.put(1).unwrap();
    /// let mut w = WaitUntil::new();
    /// let (ca, cb) = (w.add(a.get_op()), w.add(b.get_op()));
    /// assert!(w.run_blocking(ca.done() | cb.done()));
    /// assert!(!ca.is_done() && cb.is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        self.slot().is_full()
    }
}

impl<T> Drop for Clause<T> {
    fn drop(&mut self) {
        self.slot().release();
        // SAFETY: our reference, given up once, after the slot's last use.
        unsafe { release(self.block) };
    }
}

impl<T> fmt::Debug for Clause<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Clause(#{})", self.index)
    }
}

#[cfg(all(test, not(loom), not(fibra_system_alloc)))]
mod tests {
    use crate::{WaitUntil, always};

    #[test]
    fn a_freed_block_is_kept_for_the_next_statement_on_the_thread() {
        let first = {
            let mut w = WaitUntil::new();
            let c = w.add(always(1u8));
            let block = c.block;
            assert!(w.run_blocking(c.done()));
            assert_eq!(c.take(), Some(1));
            block
        };
        // The statement and its handle are gone: the block was kept, not
        // freed (the allocator would hand a block just freed to the next
        // allocation of its size, this one).
        let other = Vec::<u8>::with_capacity(super::BLOCK_SIZE);
        let mut w = WaitUntil::new();
        let c = w.add(always(2u8));
        assert_eq!(c.block, first);
        assert_ne!(other.as_ptr(), first.as_ptr().cast());
        assert!(w.run_blocking(c.done()));
        assert_eq!(c.take(), Some(2));
    }

    #[test]
    fn a_block_kept_by_a_thread_that_ends_is_freed() {
        // The handle is the block's last owner on another thread, which
        // keeps the block aside and ends (LeakSanitizer, in CI, would
        // report a block never freed).
        let mut w = WaitUntil::new();
        let c = w.add(always(String::from("kept")));
        assert!(w.run_blocking(c.done()));
        std::thread::spawn(move || assert_eq!(c.take().as_deref(), Some("kept")))
            .join()
            .unwrap();
    }
}
