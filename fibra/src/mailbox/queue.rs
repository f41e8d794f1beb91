//! The mailbox queue: many producers, one consumer, one allocation per
//! message, wait-free push (Dmitry Vyukov's intrusive MPSC queue).
//!
//! # Invariants
//!
//! * `tail` is the last node pushed. A push allocates its node, swaps it
//!   into `tail` and then links it from the node it displaced (`prev.next`).
//! * `head` belongs to the consumer. It is the "stub": the node whose value
//!   was taken last (or the initial empty node); values live in the nodes
//!   after it, in push order.
//! * The consumer frees a node only after it saw the node's `next` non-null,
//!   i.e. after the one producer that could still touch it (the one linking
//!   its successor) is done with it.
//! * Between a producer's swap and its link the queue is briefly
//!   inconsistent: `tail != head` but `head.next` is null. The consumer then
//!   waits for the link (a few instructions away) rather than report empty.

use crate::loom::{AtomicPtr, Ordering, UnsafeCell, spin_wait};
use crossbeam_utils::CachePadded;
use std::ptr;

struct Node<T> {
    next: AtomicPtr<Node<T>>,
    value: UnsafeCell<Option<T>>,
}

impl<T> Node<T> {
    fn alloc(value: Option<T>) -> *mut Node<T> {
        Box::into_raw(Box::new(Node {
            next: AtomicPtr::new(ptr::null_mut()),
            value: UnsafeCell::new(value),
        }))
    }
}

pub(crate) struct Queue<T> {
    /// Producers' end. Padded: every push swaps it, and the consumer's
    /// `head` should not share its cache line.
    tail: CachePadded<AtomicPtr<Node<T>>>,
    /// Consumer's end (see the invariants).
    head: UnsafeCell<*mut Node<T>>,
}

// SAFETY: values of `T` move from producer threads to the consumer; nodes are
// handed over through the Release/Acquire pairs described below.
unsafe impl<T: Send> Send for Queue<T> {}
// SAFETY: as above; `head` is only touched by the single consumer (the
// callers of the `unsafe` methods promise that).
unsafe impl<T: Send> Sync for Queue<T> {}

impl<T> Queue<T> {
    pub(crate) fn new() -> Self {
        let stub = Node::alloc(None);
        Self {
            tail: CachePadded::new(AtomicPtr::new(stub)),
            head: UnsafeCell::new(stub),
        }
    }

    /// Appends `value`. Wait-free apart from the allocation.
    pub(crate) fn push(&self, value: T) {
        let node = Node::alloc(Some(value));
        // AcqRel: Acquire so the node we displace (made by another producer)
        // is initialised before we write its `next`; Release so the next
        // producer's Acquire sees our node initialised likewise.
        let prev = self.tail.swap(node, Ordering::AcqRel);
        // SAFETY: `prev` is alive: the consumer frees a node only after its
        // `next` is set, and only we set `prev.next`. Release publishes our
        // node and its value to the consumer's Acquire load of `next`.
        unsafe { (*prev).next.store(node, Ordering::Release) };
    }

    /// Takes the oldest value, or `None` if no push has started since the
    /// last value was taken.
    ///
    /// # Safety
    ///
    /// Only one thread at a time may call the consumer methods (`pop`,
    /// `is_empty`): the single consumer.
    pub(crate) unsafe fn pop(&self) -> Option<T> {
        let mut step = 0;
        loop {
            // SAFETY: the consumer owns `head`.
            let head = self.head.with_mut(|h| unsafe { *h });
            // SAFETY: `head` is alive: only the consumer frees nodes.
            let next = unsafe { (*head).next.load(Ordering::Acquire) };
            if !next.is_null() {
                // SAFETY: the consumer owns `head`.
                self.head.with_mut(|h| unsafe { *h = next });
                // SAFETY: `next` was published by a Release store that we
                // read with Acquire; its value is ours to take (nodes after
                // `head` are written only before they are linked).
                let value = unsafe { (*next).value.with_mut(|v| (*v).take()) };
                // SAFETY: the old stub's `next` is set, so no producer
                // touches it any more; we moved past it.
                drop(unsafe { Box::from_raw(head) });
                return value;
            }
            // Acquire: pairs with the producers' swap, so a node we learn
            // of here is initialised when we later follow the link to it.
            if self.tail.load(Ordering::Acquire) == head {
                return None;
            }
            // A producer swapped `tail` and is about to link its node.
            spin_wait(&mut step);
        }
    }

    /// Whether no push has started since the last value was taken. Relaxed:
    /// callers order it with a fence (the mailbox's parking protocol).
    ///
    /// # Safety
    ///
    /// As for [`pop`](Self::pop): the consumer only.
    pub(crate) unsafe fn is_empty(&self) -> bool {
        // SAFETY: the consumer owns `head`.
        let head = self.head.with_mut(|h| unsafe { *h });
        self.tail.load(Ordering::Relaxed) == head
    }
}

impl<T> Drop for Queue<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no producer or other consumer remains.
        while unsafe { self.pop() }.is_some() {}
        let stub = self.head.with_mut(|h| unsafe { *h });
        // SAFETY: the last node, owned by nobody else now.
        drop(unsafe { Box::from_raw(stub) });
    }
}
