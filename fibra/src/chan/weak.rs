//! [`WeakSender`]: a sender that does not keep the channel open.
//!
//! # Invariants
//!
//! * A weak sender holds the channel's memory (`Arc<Chan<T>>`) but is not
//!   counted in `Chan::senders`: the channel closes for receivers when the
//!   last *counted* sender goes, as if weak senders did not exist.
//! * `upgrade` adds a counted sender only if the count is not zero, with
//!   one compare-and-swap: once the count reached zero (and the channel
//!   closed), nothing can raise it again, so a closed channel never
//!   reopens. Either the upgrade's increment comes first (the last
//!   sender's decrement then leaves one, and nothing closes) or the
//!   decrement does (the upgrade sees zero and fails).

use super::Sender;
use super::meeting::Chan;
use crate::loom::{Arc, Ordering};
use std::fmt;

impl<T> Sender<T> {
    /// A [`WeakSender`] of this channel: it can send only after
    /// [`upgrade`](WeakSender::upgrade), which fails once every (strong)
    /// sender is gone. It does not keep the channel open.
    ///
    /// ```
    /// let (tx, rx) = fibra::unbounded::<u32>();
    /// let weak = tx.downgrade();
    /// weak.upgrade().unwrap().try_send(1).unwrap();
    /// drop(tx);
    /// assert!(weak.upgrade().is_none());
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert!(rx.is_disconnected()); // the weak sender did not keep it open
    /// ```
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            chan: self.chan.clone(),
        }
    }

    /// How many (strong) senders this channel has now.
    ///
    /// ```
    /// let (tx, _rx) = fibra::channel::<u8>();
    /// let _weak = tx.downgrade();
    /// let tx2 = tx.clone();
    /// assert_eq!(tx2.sender_count(), 2);
    /// ```
    pub fn sender_count(&self) -> usize {
        self.chan.senders.load(Ordering::Relaxed)
    }
}

/// A sender that does not keep its channel open (tokio's `WeakSender`):
/// made by [`Sender::downgrade`]. Hold one where a strong sender would keep
/// a receiver waiting for ever (a task that sends to itself, a registry of
/// senders); [`upgrade`](Self::upgrade) it to send.
///
/// ```
/// let (tx, rx) = fibra::unbounded::<&str>();
/// let weak: fibra::WeakSender<&str> = tx.downgrade();
/// if let Some(tx) = weak.upgrade() {
///     tx.try_send("still open").unwrap();
/// }
/// assert_eq!(rx.try_recv(), Ok("still open"));
/// ```
pub struct WeakSender<T> {
    chan: Arc<Chan<T>>,
}

impl<T> WeakSender<T> {
    /// A (strong) [`Sender`], if the channel still has one; `None` once
    /// every sender is gone (the channel is closed and stays closed).
    ///
    /// ```
    /// let (tx, _rx) = fibra::channel::<u8>();
    /// let weak = tx.downgrade();
    /// assert!(weak.upgrade().is_some());
    /// drop(tx);
    /// assert!(weak.upgrade().is_none());
    /// ```
    pub fn upgrade(&self) -> Option<Sender<T>> {
        let mut n = self.chan.senders.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return None;
            }
            // Relaxed: the count only decides whether the channel is open;
            // what senders do is ordered by the channel's lock, and the
            // last decrement's AcqRel (`remove_sender`) still sees every
            // handle's work. The CAS alone keeps a zero count at zero.
            match self.chan.senders.compare_exchange_weak(
                n,
                n + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(Sender {
                        chan: self.chan.clone(),
                        sink: None,
                    });
                }
                Err(now) => n = now,
            }
        }
    }

    /// Whether `self` and `other` belong to the same channel.
    ///
    /// ```
    /// let (tx, _rx) = fibra::channel::<u8>();
    /// assert!(tx.downgrade().same_channel(&tx.downgrade()));
    /// ```
    pub fn same_channel(&self, other: &WeakSender<T>) -> bool {
        Arc::ptr_eq(&self.chan, &other.chan)
    }
}

impl<T> Clone for WeakSender<T> {
    fn clone(&self) -> Self {
        WeakSender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> fmt::Debug for WeakSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakSender").finish_non_exhaustive()
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use crate::loom::{model, thread};
    use crate::{TryRecvError, unbounded};

    #[test]
    fn loom_weak_sender_upgrade_racing_the_last_drop() {
        // The upgrade either comes first (it can send, and the channel
        // stays open until that sender goes) or finds the channel closed
        // for good.
        model(|| {
            let (tx, rx) = unbounded::<u32>();
            let weak = tx.downgrade();
            let t = thread::spawn(move || drop(tx));
            let sent = match weak.upgrade() {
                Some(tx2) => {
                    tx2.try_send(7).unwrap();
                    true
                }
                None => false,
            };
            t.join().unwrap();
            assert!(weak.upgrade().is_none(), "a closed channel reopened");
            if sent {
                assert_eq!(rx.try_recv(), Ok(7));
            }
            assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        });
    }
}
