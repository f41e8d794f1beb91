//! A [`WaitUntil`](super::WaitUntil) clause's record: its op and the slot
//! its result goes to, in one allocation shared by the statement (which
//! performs the op) and the [`Clause`] handle (which takes the result).
//!
//! # Invariants
//!
//! * The op is touched only by the statement that owns the record, one
//!   thread at a time (the statement is `&mut` or pinned in its `run`
//!   future); the handle never touches it. The op lives at one address
//!   (inside the allocation) from `add` until the statement drops it, so a
//!   record it published may point into it.
//! * The statement drops the op itself ([`ClauseCell::drop_op`]): freeing
//!   the allocation never does, so a handle that outlives the statement
//!   (and the lifetime the op borrows for) frees only bytes, and a
//!   statement that is leaked leaks its ops.
//! * The slot's `state` goes `EMPTY -> FULL -> TAKEN` (the statement puts
//!   the result once, a handle takes it once), or to `GONE` from any state
//!   when the handle is dropped. Whoever moves the state away from a slot
//!   holding a value owns that value: `take` (`FULL -> TAKEN`) returns it,
//!   the handle's drop (`FULL -> GONE`) drops it, and a `put` that finds
//!   `GONE` drops the value it brought. So a result is dropped exactly once,
//!   while the handle that could have taken it, or the statement, is
//!   alive: never by whoever frees the allocation last.

use crate::loom::{AtomicUsize, Ordering, UnsafeCell};
use crate::op::{BlockCx, Op};
use std::fmt;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::pin::Pin;
use std::sync::Arc;

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
        // Acquire: pairs with `put`'s Release, so a value found is visible.
        if self.state.swap(GONE, Ordering::Acquire) == FULL {
            // SAFETY: we moved `FULL -> GONE`: the value is ours.
            self.value.with_mut(|v| unsafe { (*v).assume_init_drop() });
        }
    }
}

/// A clause's record: the result slot and the op (see the module docs).
struct Record<O: Op> {
    slot: Slot<O::Output>,
    op: UnsafeCell<ManuallyDrop<O>>,
}

// SAFETY: the op is touched by one thread at a time (the statement's owner;
// `O: Send` lets it move between threads with the statement); the slot's
// value moves from the statement's thread to a handle's (`Output: Send`),
// its accesses ordered by `state` (module docs).
unsafe impl<O: Op + Send> Sync for Record<O> where O::Output: Send {}
// SAFETY: as above.
unsafe impl<O: Op + Send> Send for Record<O> where O::Output: Send {}

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

impl<O: Op + Send> Record<O>
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
impl<O: Op + Send> ClauseCell for Record<O>
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

/// The handle's view of a record: the slot.
trait SlotOf<T>: Send + Sync {
    fn slot(&self) -> &Slot<T>;
}

impl<O: Op + Send> SlotOf<O::Output> for Record<O>
where
    O::Output: Send,
{
    fn slot(&self) -> &Slot<O::Output> {
        &self.slot
    }
}

/// A new record for `op`: the statement's view, and the handle.
pub(super) fn record<'a, O>(
    op: O,
    index: usize,
    stmt: StmtId,
) -> (Arc<dyn ClauseCell + 'a>, Clause<O::Output>)
where
    O: Op + Send + 'a,
    O::Output: Send + 'a,
{
    let record = Arc::new(Record {
        slot: Slot::new(),
        op: UnsafeCell::new(ManuallyDrop::new(op)),
    });
    let slot: Arc<dyn SlotOf<O::Output> + 'a> = record.clone();
    // SAFETY: only the bound on the trait object's lifetime changes. What
    // the handle reaches through it never borrows for `'a`: the slot holds
    // an `O::Output`, which the handle's type names itself, and freeing the
    // allocation (the last `Arc` may be the handle's, after `'a`) drops
    // neither the op (`ManuallyDrop`, dropped by the statement) nor a
    // result (`Slot` has no drop glue for its value; module docs).
    let slot: Arc<dyn SlotOf<O::Output>> = unsafe {
        std::mem::transmute::<Arc<dyn SlotOf<O::Output> + 'a>, Arc<dyn SlotOf<O::Output>>>(slot)
    };
    (record, Clause { index, stmt, slot })
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
    slot: Arc<dyn SlotOf<T>>,
}

impl<T> Clause<T> {
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
        self.slot.slot().take()
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
        self.slot.slot().is_full()
    }
}

impl<T> Drop for Clause<T> {
    fn drop(&mut self) {
        self.slot.slot().release();
    }
}

impl<T> fmt::Debug for Clause<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Clause(#{})", self.index)
    }
}
