//! The mailbox queue: many producers, one consumer, and the consumer's
//! parking spot, all driven by one atomic word.
//!
//! Messages go into blocks of `CAP` slots linked in a list (the layout of
//! crossbeam's `SegQueue`, specialised to one consumer): a push costs one
//! compare-and-swap on `tail` plus the write of its slot, and one block
//! allocation per `CAP` messages. The consumer reads slots without any
//! read-modify-write.
//!
//! # The tail word
//!
//! `tail` holds `pos << 3 | CHANGED | EPOCH | PARKED`. `pos` counts
//! positions: each block spans `LAP = CAP + 1` of them, slots `0..CAP` and a
//! last one that only means "the next block is being installed" (producers
//! wait it out).
//!
//! * A producer claims slot `pos` by moving `tail` to `pos + 1` with a CAS.
//!   The same CAS clears `PARKED`: if it was set, this producer *took* the
//!   park and owns the wake-up.
//! * The consumer parks by setting `PARKED` (and flipping `EPOCH`) with a
//!   CAS that expects `pos` to equal its own read position. So it parks only
//!   if no push claimed a slot since it last looked, and every push after
//!   that sees `PARKED`: there is no window for a lost wake-up, and no fence
//!   on the send path.
//! * `poke` (the mailbox closed, its last address went) takes a park like a
//!   push, or else flips `CHANGED`, so that a park racing it fails its CAS
//!   and looks again: the consumer checks those conditions between its load
//!   of `tail` and its parking CAS.
//!
//! # The waker cell
//!
//! Written by the consumer only while it is not parked and no taker of an
//! earlier park may still be reading; read by the producer that took the
//! park (and by the consumer). A taker, once done with the cell, stores the
//! park's `EPOCH` bit in `done` (a plain Release store: one taker per
//! park). A consumer whose last park was taken waits until `done` shows
//! that park's epoch before it parks again (by then the taker has normally
//! long finished), so at most one taker is ever outstanding; each park's
//! epoch is the opposite of `done`'s value at the time, so the taker's store
//! is always a change the consumer can see.

//! # Memory
//!
//! * The producer that claims a block's last slot allocates the next block,
//!   publishes it in `tail_block`, moves `tail` past the install position
//!   and links `block.next` — all before it marks its own slot ready, so a
//!   consumer that read every slot of a block finds `next` set.
//! * A producer reads `tail_block` *before* its claiming CAS and
//!   dereferences it only after the CAS succeeded: the word had not moved,
//!   so the block is the one that holds the claimed slot (it changes only
//!   while the word sits on the install position), and the slot is still
//!   unwritten, so the consumer cannot have freed the block.
//! * The first block is embedded in the queue (`first`), so a new queue
//!   (one per mailbox, so one per actor) allocates nothing of its own. The
//!   queue points at it (`tail.block`, `Head::block`) once it lies where it
//!   stays: its owner calls `settle` before sharing it, and never moves it
//!   afterwards. Later blocks are allocated; once the consumer read all
//!   `CAP` slots of one (every producer that wrote one is done with it), it
//!   resets the block and keeps it in `spare` for the next install, or
//!   frees it if `spare` is taken. The embedded one stays until the queue
//!   drops.
//! * `spare` passes a whole block between owners: the consumer or a
//!   producer whose claim failed puts one in with a CAS from null (Release:
//!   the block's reset, and the consumer's reads of its values, happen
//!   before its next use), an installer takes it with a swap to null
//!   (Acquire). Neither side expects a particular non-null value, so a
//!   block's address coming back is no ABA: whoever holds the pointer owns
//!   the block. The queue frees the one left there when it drops.

use crate::loom::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, UnsafeCell, spin_wait};
use std::mem::MaybeUninit;
use std::ptr;
use std::task::Waker;

#[cfg(not(loom))]
const CAP: usize = 31;
/// Small blocks under loom, so models cross block boundaries.
#[cfg(loom)]
const CAP: usize = 2;
const LAP: usize = CAP + 1;

const PARKED: usize = 1;
const EPOCH: usize = 2;
const CHANGED: usize = 4;
/// The bits a push keeps as they are.
const FLAGS: usize = EPOCH | CHANGED;
const SHIFT: usize = 3;
/// Padding after `Tail` in a [`Queue`] (its size does not depend on `T`).
const APART: usize = 128usize.saturating_sub(size_of::<Tail<()>>());

/// `CAP` values, then their `ready` flags (not interleaved: for small
/// messages that halves a block, and the memory a backlog touches).
struct Block<T> {
    values: [UnsafeCell<MaybeUninit<T>>; CAP],
    /// `ready[i]` is set (Release) once `values[i]` is written.
    ready: [AtomicBool; CAP],
    next: AtomicPtr<Block<T>>,
}

impl<T> Block<T> {
    /// Initialises a block where it lies, its values unwritten: built on
    /// the stack and moved, a block would be copied whole (a few hundred
    /// bytes), uninitialised values included.
    ///
    /// # Safety
    ///
    /// `b` is valid for writes of a `Block<T>`.
    unsafe fn init(b: *mut Block<T>) {
        // Fails to compile if a field is added without its write below.
        #[allow(dead_code)]
        fn every_field<T>(b: Block<T>) {
            let Block {
                values: _,
                ready: _,
                next: _,
            } = b;
        }
        // SAFETY (every write): `b` is valid for writes.
        unsafe {
            for i in 0..CAP {
                // Outside loom a value's cell is a plain `UnsafeCell` of a
                // `MaybeUninit`: left unwritten, it is a valid uninitialised
                // value. loom's cell carries state of its own.
                #[cfg(loom)]
                ptr::addr_of_mut!((*b).values[i]).write(UnsafeCell::new(MaybeUninit::uninit()));
                ptr::addr_of_mut!((*b).ready[i]).write(AtomicBool::new(false));
            }
            ptr::addr_of_mut!((*b).next).write(AtomicPtr::new(ptr::null_mut()));
        }
    }

    /// Makes a used-up block (every slot read) like a new one: no slot
    /// ready, no next block. The values' cells are left as they are (read,
    /// so logically uninitialised).
    ///
    /// # Safety
    ///
    /// `b` is a block whose every slot was read, owned by the caller.
    unsafe fn reset(b: *mut Block<T>) {
        // SAFETY: the caller owns the block: nobody else accesses it, so
        // plain writes to its atomics race with nothing. Relaxed: the block
        // reaches its next user through `spare` (Release put, Acquire take).
        unsafe {
            // One `memset` for the flags (an `AtomicBool` is a `bool` in
            // memory, and `false` is 0); loom's atomics are not.
            #[cfg(not(loom))]
            ptr::write_bytes(ptr::addr_of_mut!((*b).ready).cast::<u8>(), 0, CAP);
            #[cfg(loom)]
            for i in 0..CAP {
                (*b).ready[i].store(false, Ordering::Relaxed);
            }
            (*b).next.store(ptr::null_mut(), Ordering::Relaxed);
        }
    }

    fn alloc() -> *mut Block<T> {
        let mut b = Box::<Block<T>>::new_uninit();
        // SAFETY: a fresh allocation for a `Block<T>`; `init` writes every
        // field.
        unsafe {
            Block::init(b.as_mut_ptr());
            Box::into_raw(b.assume_init())
        }
    }
}

/// The producers' end.
struct Tail<T> {
    word: AtomicUsize,
    /// The block that holds position `word >> SHIFT`.
    block: AtomicPtr<Block<T>>,
}

/// The consumer's end.
struct Head<T> {
    pos: usize,
    /// The block that holds `pos`.
    block: *mut Block<T>,
    /// The epoch of our park, while we may still be parked.
    parked: Option<usize>,
    /// The epoch of a park a producer took, until we saw its `done`.
    taken: Option<usize>,
}

#[repr(C)]
pub(crate) struct Queue<T> {
    tail: Tail<T>,
    /// Keeps the producers' `tail` and the consumer's `head` on different
    /// cache lines (128 bytes apart: a line and its prefetched neighbour)
    /// without over-aligning the queue: an over-aligned allocation goes
    /// through the system allocator's `memalign` path, which costs a mailbox
    /// (created for every actor) several times a plain allocation.
    _apart: [u8; APART],
    head: UnsafeCell<Head<T>>,
    waker: UnsafeCell<Option<Waker>>,
    /// The epoch of the last taken park whose taker is done with the waker.
    done: AtomicUsize,
    /// A used-up block, reset, for the next install; or null (module docs).
    spare: AtomicPtr<Block<T>>,
    /// Models only: a taker is running the waker. loom records a cell
    /// access at its start, not over its length, so the models check the
    /// length with this flag.
    #[cfg(loom)]
    waking: AtomicBool,
    /// The first block, in the queue's own allocation (module docs).
    first: Block<T>,
}

// SAFETY: values of `T` move from producers to the consumer through the
// Release/Acquire pairs on `ready`; the head and waker cells are accessed as
// the module docs describe.
unsafe impl<T: Send> Send for Queue<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Queue<T> {}

impl<T> Queue<T> {
    /// Initialises an empty queue where it lies (its first block is a few
    /// hundred bytes: built on the stack, it would be copied). It is
    /// usable once `settle`d.
    ///
    /// # Safety
    ///
    /// `q` is valid for writes of a `Queue<T>`.
    pub(crate) unsafe fn init(q: *mut Self) {
        // Fails to compile if a field is added without its write below.
        #[allow(dead_code)]
        fn every_field<T>(q: Queue<T>) {
            let Queue {
                tail: _,
                _apart: _,
                head: _,
                waker: _,
                done: _,
                spare: _,
                #[cfg(loom)]
                    waking: _,
                first: _,
            } = q;
        }
        // SAFETY (every write): `q` is valid for writes.
        unsafe {
            ptr::addr_of_mut!((*q).tail).write(Tail {
                word: AtomicUsize::new(0),
                block: AtomicPtr::new(ptr::null_mut()),
            });
            ptr::addr_of_mut!((*q)._apart).write([0; APART]);
            ptr::addr_of_mut!((*q).head).write(UnsafeCell::new(Head {
                pos: 0,
                block: ptr::null_mut(),
                parked: None,
                taken: None,
            }));
            ptr::addr_of_mut!((*q).waker).write(UnsafeCell::new(None));
            ptr::addr_of_mut!((*q).done).write(AtomicUsize::new(0));
            ptr::addr_of_mut!((*q).spare).write(AtomicPtr::new(ptr::null_mut()));
            #[cfg(loom)]
            ptr::addr_of_mut!((*q).waking).write(AtomicBool::new(false));
            Block::init(ptr::addr_of_mut!((*q).first));
        }
    }

    /// Points the queue at its embedded first block, now that it lies
    /// where it stays (`init` cannot: the queue may still move then).
    ///
    /// # Safety
    ///
    /// Once, after `init`, before the queue is shared; it never moves
    /// afterwards.
    pub(crate) unsafe fn settle(&self) {
        let first = self.first_ptr();
        // Relaxed: the queue is not shared yet; whoever it is shared with
        // sees this through the synchronisation that shares it.
        self.tail.block.store(first, Ordering::Relaxed);
        // SAFETY: not shared yet: nobody else touches `head`.
        self.head.with_mut(|h| unsafe { (*h).block = first });
    }

    /// The embedded first block, which only `Drop` of the queue frees.
    fn first_ptr(&self) -> *mut Block<T> {
        ptr::from_ref(&self.first).cast_mut()
    }

    /// Appends `value` and wakes the consumer if it is parked.
    ///
    /// Inlined: the common case (a slot that is not its block's last, no
    /// park to take) is a load, a compare-and-swap and two stores; the rare
    /// cases (a block to install, a park to take, a lost race) are out of
    /// line, so they do not weigh on the registers of the common one.
    #[inline]
    pub(crate) fn push(&self, value: T) {
        // Acquire (here and on the CAS's failure): as in `push_slow`,
        // pairing with an installer's Release `fetch_add` (so the
        // `tail.block` read below is current for `t`).
        let mut t = self.tail.word.load(Ordering::Acquire);
        let pos = t >> SHIFT;
        let offset = pos % LAP;
        if offset + 1 < CAP {
            // Not the block's last slot (nor the install position): no block
            // to prepare. Acquire: pairs with the installer's Release store.
            let block = self.tail.block.load(Ordering::Acquire);
            let new = ((pos + 1) << SHIFT) | (t & FLAGS);
            // AcqRel / Acquire: as in `push_slow`.
            match self
                .tail
                .word
                .compare_exchange_weak(t, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    // SAFETY: as in `push_slow`: the CAS claimed `offset` in
                    // `block` (read before it, with `tail` unchanged since).
                    unsafe { Self::write(block, offset, value) };
                    if t & PARKED != 0 {
                        self.wake(t & EPOCH);
                    }
                    return;
                }
                Err(now) => t = now,
            }
        }
        self.push_slow(value, t);
    }

    /// Writes `value` into slot `offset` of `block` and marks it ready.
    ///
    /// # Safety
    ///
    /// The caller claimed `offset` in `block` (so the block stays alive
    /// until the slot is read, and nobody else writes it).
    #[inline]
    unsafe fn write(block: *mut Block<T>, offset: usize, value: T) {
        // SAFETY: the caller's claim.
        unsafe {
            (*block).values[offset].with_mut(|v| (*v).write(value));
            // Release: the value is visible to the consumer's Acquire load
            // of `ready`.
            (*block).ready[offset].store(true, Ordering::Release);
        }
    }

    /// `push`, every case: a block's last slot (allocate and install the
    /// next block), the install position (wait), a lost race (retry). `t`
    /// is the word as `push` last read it (with Acquire).
    #[cold]
    #[inline(never)]
    fn push_slow(&self, value: T, mut t: usize) {
        let mut spare: Option<*mut Block<T>> = None;
        let mut step = 0;
        // `t` came from an Acquire load or a failed CAS's Acquire, as do
        // its reloads here (below and on the CAS's failure): they pair with
        // an installer's Release `fetch_add` that moved `tail` past the
        // install position, so the `tail.block` read below sees the block
        // installed before it.
        loop {
            let pos = t >> SHIFT;
            let offset = pos % LAP;
            if offset == CAP {
                // Another producer is installing the next block.
                spin_wait(&mut step);
                t = self.tail.word.load(Ordering::Acquire);
                continue;
            }
            if offset + 1 == CAP && spare.is_none() {
                // We may fill the block: have the next one ready before we
                // claim, so the install window stays short.
                spare = Some(self.take_spare());
            }
            // The block that holds `pos`, read *before* the claim: if the CAS
            // below succeeds, `tail` did not move, so this is still the block
            // of our slot. (Read after the claim, it could already be the
            // next block, installed by whoever filled this one meanwhile.)
            // Acquire: pairs with the installer's Release store.
            let block = self.tail.block.load(Ordering::Acquire);
            let new = ((pos + 1) << SHIFT) | (t & FLAGS);
            // AcqRel: Acquire pairs with the Release of the install (so the
            // block read above is current for `t`) and of the consumer's
            // park (so its waker is visible); Release keeps the release
            // sequence going.
            match self
                .tail
                .word
                .compare_exchange_weak(t, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if offset + 1 == CAP {
                        let next = spare.take().expect("allocated above");
                        // Release (both stores): the block's initialisation
                        // is visible to producers that Acquire `tail.block`
                        // or the word.
                        self.tail.block.store(next, Ordering::Release);
                        self.tail.word.fetch_add(1 << SHIFT, Ordering::Release);
                        // SAFETY: `block` is alive: our slot in it is not
                        // written yet, so the consumer has not freed it.
                        // Release: pairs with the consumer's Acquire load of
                        // `next` in `pop`, which then sees the block's
                        // initialisation.
                        unsafe { (*block).next.store(next, Ordering::Release) };
                    }
                    // SAFETY: we claimed `offset` in `block`, which stays
                    // alive until our slot is read; nobody else writes it.
                    unsafe { Self::write(block, offset, value) };
                    if t & PARKED != 0 {
                        self.wake(t & EPOCH);
                    }
                    if let Some(b) = spare {
                        // Taken or allocated above, never published, as new.
                        self.put_spare(b);
                    }
                    return;
                }
                Err(now) => t = now,
            }
        }
    }

    /// A block for the next install: the spare if there is one, else a new
    /// one.
    fn take_spare(&self) -> *mut Block<T> {
        // Relaxed: only decides whether to try; the swap synchronises.
        if !self.spare.load(Ordering::Relaxed).is_null() {
            // Acquire: pairs with `put_spare`'s Release, so the block's reset
            // (and the consumer's reads of its values) happen before our
            // writes to it.
            let b = self.spare.swap(ptr::null_mut(), Ordering::Acquire);
            if !b.is_null() {
                return b;
            }
        }
        Block::alloc()
    }

    /// Keeps `b` as the spare, or frees it if there is one already.
    ///
    /// `b` is a block nobody else holds, every slot unready and `next` null
    /// (new, or `reset`), and never the embedded first block.
    fn put_spare(&self, b: *mut Block<T>) {
        // Release: the block's reset happens before the Acquire swap of the
        // producer that takes it. Relaxed on failure: we keep `b`.
        if self
            .spare
            .compare_exchange(ptr::null_mut(), b, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: allocated by `Block::alloc` (never `first`), and ours.
            drop(unsafe { Box::from_raw(b) });
        }
    }

    /// Wakes the consumer if it is parked, without a message, or else makes
    /// a park in progress fail: the consumer should look at something else
    /// (the mailbox closed, the last address went). Call it after that
    /// change.
    pub(crate) fn poke(&self) {
        let mut t = self.tail.word.load(Ordering::Relaxed);
        loop {
            let new = if t & PARKED != 0 {
                t & !PARKED
            } else {
                t ^ CHANGED
            };
            // AcqRel: Release orders the caller's change before the word's
            // new value (a consumer that reads it with Acquire sees the
            // change); Acquire for the waker, as in `push`.
            match self
                .tail
                .word
                .compare_exchange_weak(t, new, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) if t & PARKED != 0 => return self.wake(t & EPOCH),
                Ok(_) => return,
                Err(now) => t = now,
            }
        }
    }

    /// We took the park of epoch `epoch`: run the waker, then say we are
    /// done with the cell.
    fn wake(&self, epoch: usize) {
        // Under loom only, a flag for the assertion in `park`; SeqCst so the
        // check needs no reasoning of its own.
        #[cfg(loom)]
        self.waking.store(true, Ordering::SeqCst);
        // SAFETY: we took the park: the consumer does not write the cell
        // until it sees our `done` (module docs).
        self.waker.with(|w| {
            if let Some(w) = unsafe { &*w } {
                w.wake_by_ref();
            }
        });
        #[cfg(loom)]
        self.waking.store(false, Ordering::SeqCst);
        // Release: our read of the cell happens before the consumer's next
        // write of it (it waits for this epoch with Acquire). A plain store:
        // one taker per park, and the next park waits for this one.
        self.done.store(epoch, Ordering::Release);
    }

    /// Takes the oldest value, or `None` if no push has claimed a slot since
    /// the last value was taken. Waits (a few instructions) for a push that
    /// claimed its slot but has not written it yet.
    ///
    /// Inlined: the common cases (a ready slot that is not its block's
    /// last, an empty queue) are a few loads; leaving a block and waiting
    /// for a slot being written are out of line.
    ///
    /// # Safety
    ///
    /// Only the single consumer may call the consumer methods (`pop`, `park`,
    /// `unpark`), one at a time.
    #[inline]
    pub(crate) unsafe fn pop(&self) -> Option<T> {
        // SAFETY: the consumer owns `head`.
        let head = self.head.with_mut(|h| unsafe { &mut *h });
        let offset = head.pos % LAP;
        // SAFETY: `head.block` is alive: only the consumer frees blocks.
        let block = unsafe { &*head.block };
        // Acquire: pairs with the producer's Release store of `ready`, so
        // the value it wrote is visible.
        if !block.ready[offset].load(Ordering::Acquire) {
            // Relaxed: only compares positions; the slot's `ready` carries
            // the value.
            if self.tail.word.load(Ordering::Relaxed) >> SHIFT == head.pos {
                return None;
            }
            // Claimed, not yet written.
            Self::wait_ready(block, offset);
        }
        // SAFETY: `ready` (Acquire) says the value is written, and we are
        // the only reader of this slot.
        let value = block.values[offset].with(|v| unsafe { (*v).assume_init_read() });
        head.pos += 1;
        if offset + 1 == CAP {
            self.next_block(head);
        }
        Some(value)
    }

    /// Waits until a claimed slot is written (its producer is between its
    /// claim and its `ready` store).
    #[cold]
    #[inline(never)]
    fn wait_ready(block: &Block<T>, offset: usize) {
        let mut step = 0;
        // Acquire: as in `pop`.
        while !block.ready[offset].load(Ordering::Acquire) {
            spin_wait(&mut step);
        }
    }

    /// The block at `head` is used up: move to the next (linked before its
    /// last slot was marked ready) and free this one.
    #[cold]
    #[inline(never)]
    fn next_block(&self, head: &mut Head<T>) {
        // SAFETY: `head.block` is alive: only the consumer frees blocks.
        let block = unsafe { &*head.block };
        // Acquire: pairs with the installer's Release store of `next`.
        let next = block.next.load(Ordering::Acquire);
        debug_assert!(!next.is_null());
        if head.block != self.first_ptr() {
            // Relaxed: only saves the reset of a block that would be freed
            // anyway; `put_spare` decides.
            if self.spare.load(Ordering::Relaxed).is_null() {
                // SAFETY: allocated by `Block::alloc` (not `first`), and
                // every slot was read: no producer touches the block, it is
                // ours.
                unsafe { Block::reset(head.block) };
                self.put_spare(head.block);
            } else {
                // SAFETY: as above; nobody else holds it.
                drop(unsafe { Box::from_raw(head.block) });
            }
        }
        head.block = next;
        head.pos += 1; // skip the install position
    }

    /// Parks the consumer with `waker` if no push claimed a slot since the
    /// last `pop` and `stop()` is false; returns `false` (not parked)
    /// otherwise. A parked consumer is woken by the next push or `poke`.
    /// `stop` reads what `poke`'s callers change; it runs after an Acquire
    /// load of the word, and the CAS that parks fails if a `poke` came
    /// between.
    ///
    /// # Safety
    ///
    /// The consumer only (see [`pop`](Self::pop)).
    pub(crate) unsafe fn park(&self, waker: &Waker, stop: impl Fn() -> bool) -> bool {
        // SAFETY: the consumer owns `head`.
        let head = self.head.with_mut(|h| unsafe { &mut *h });
        // Acquire (this load and every CAS below, on either outcome): pairs
        // with `poke`'s Release, so `stop()` sees the change a poke
        // announced (a close, the last address gone).
        let mut t = self.tail.word.load(Ordering::Acquire);
        loop {
            self.note_taken(head, t);
            if t >> SHIFT != head.pos || stop() {
                // Something arrived (or is arriving), or nothing more can:
                // look instead. An earlier park stays in place; the caller
                // unparks when it commits.
                return false;
            }
            // SAFETY: reading the cell races only with a taker's read.
            let same = self
                .waker
                .with(|w| unsafe { (*w).as_ref() }.is_some_and(|w| w.will_wake(waker)));
            if head.parked.is_some() {
                if same {
                    // Still parked (no push came: it would have cleared
                    // PARKED), with the right waker.
                    return true;
                }
                // Unpark to write the new waker, then park again.
                match self.tail.word.compare_exchange_weak(
                    t,
                    t & !PARKED,
                    Ordering::Acquire,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        head.parked = None;
                        t &= !PARKED;
                    }
                    Err(now) => t = now,
                }
                continue;
            }
            // The taker of our last park may still read the cell: wait until
            // it is done (usually it is), so at most one taker is ever
            // outstanding.
            self.wait_for_taker(head);
            if !same {
                // Under loom only: SeqCst, as for the flag's stores in `wake`.
                #[cfg(loom)]
                assert!(
                    !self.waking.load(Ordering::SeqCst),
                    "the waker was replaced while a sender ran it"
                );
                // SAFETY: not parked, and no taker is outstanding (above):
                // nobody else reads the cell.
                self.waker.with_mut(|w| unsafe { *w = Some(waker.clone()) });
            }
            // The new park's epoch differs from `done` (stable now: no taker
            // is outstanding), so its taker's store is told apart from any
            // earlier one. Relaxed: the wait above (or an earlier one)
            // already synchronised with the last store.
            let epoch = self.done.load(Ordering::Relaxed) ^ EPOCH;
            let new = (t & !EPOCH) | PARKED | epoch;
            // Release: publishes the waker to the producer whose Acquire CAS
            // takes the park. Fails if a push claimed a slot meanwhile.
            match self
                .tail
                .word
                .compare_exchange(t, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    head.parked = Some(new & EPOCH);
                    return true;
                }
                Err(now) => t = now,
            }
        }
    }

    /// The consumer leaves for good: stop waiting and drop the stored waker,
    /// so the queue (kept alive by senders' addresses) does not keep the
    /// consumer's task — and through it, its runtime — alive.
    ///
    /// # Safety
    ///
    /// The consumer only (see [`pop`](Self::pop)), and it parks no more.
    pub(crate) unsafe fn forget_waker(&self) {
        // SAFETY: the consumer's own call.
        unsafe { self.unpark() };
        // SAFETY: the consumer owns `head`.
        let head = self.head.with_mut(|h| unsafe { &mut *h });
        self.wait_for_taker(head);
        // SAFETY: not parked and no taker outstanding: nobody reads the cell.
        let waker = self.waker.with_mut(|w| unsafe { (*w).take() });
        drop(waker);
    }

    /// Waits until the producer that took our last park (if any) is done
    /// with the waker cell: it stores the park's epoch in `done` (Acquire
    /// pairs with that Release store).
    fn wait_for_taker(&self, head: &mut Head<T>) {
        if let Some(epoch) = head.taken.take() {
            let mut step = 0;
            while self.done.load(Ordering::Acquire) != epoch {
                spin_wait(&mut step);
            }
        }
    }

    /// If we were parked and `t` (a fresh load of the word) shows no
    /// `PARKED`, a producer took our park.
    fn note_taken(&self, head: &mut Head<T>, t: usize) {
        if t & PARKED == 0 {
            if let Some(epoch) = head.parked.take() {
                head.taken = Some(epoch);
            }
        }
    }

    /// Stops waiting: afterwards no producer will run the waker (one may
    /// just have: a spurious wake is harmless).
    ///
    /// # Safety
    ///
    /// The consumer only (see [`pop`](Self::pop)).
    pub(crate) unsafe fn unpark(&self) {
        // SAFETY: the consumer owns `head`.
        let head = self.head.with_mut(|h| unsafe { &mut *h });
        if head.parked.is_none() {
            return;
        }
        // Acquire (load and CAS): as in `park`, pairing with `poke`'s
        // Release.
        let mut t = self.tail.word.load(Ordering::Acquire);
        loop {
            self.note_taken(head, t);
            if head.parked.is_none() {
                return;
            }
            match self.tail.word.compare_exchange_weak(
                t,
                t & !PARKED,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    head.parked = None;
                    return;
                }
                Err(now) => t = now,
            }
        }
    }
}

impl<T> Drop for Queue<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no producer or other consumer remains.
        while unsafe { self.pop() }.is_some() {}
        let block = self.head.with_mut(|h| unsafe { (*h).block });
        if block != self.first_ptr() {
            // SAFETY: the consumer's current block, allocated (not `first`)
            // and owned by nobody else now; blocks after it do not exist
            // (nothing was claimed past `pos`).
            drop(unsafe { Box::from_raw(block) });
        }
        // Relaxed: `&mut self`, nobody else holds the queue.
        let spare = self.spare.load(Ordering::Relaxed);
        if !spare.is_null() {
            // SAFETY: a block allocated by `Block::alloc`, owned by `spare`.
            drop(unsafe { Box::from_raw(spare) });
        }
    }
}
