//! [`Recv`]: the future of [`Mailbox::recv`], a plain receive that needs
//! none of the op machinery.
//!
//! A plain receive is the only party of its wait, so it has no opstate to
//! claim: a poll takes the next message if there is one, else parks its
//! waker in the queue (the park fails if a message came, or the last
//! address went, since it looked) and returns `Pending`. A message is taken
//! only by the poll that returns it, so dropping a `Recv` loses nothing
//! (cancel-safe); a drop while parked unparks. In a choice, use
//! [`Mailbox::recv_op`].

use super::Mailbox;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The future of [`Mailbox::recv`]: the next message, or `None` once the
/// mailbox is closed or no address is left, and it is empty.
///
/// ```
/// let (addr, mut mb) = fibra::mailbox::<u8>();
/// addr.send(1).unwrap();
/// futures::executor::block_on(async {
///     let next: fibra::mailbox::Recv<'_, u8> = mb.recv();
///     assert_eq!(next.await, Some(1));
/// });
/// ```
#[must_use = "futures do nothing unless polled: .await it"]
pub struct Recv<'a, M> {
    mb: &'a mut Mailbox<M>,
    /// Whether our waker is parked in the queue.
    parked: bool,
    /// Polled before (the cooperative budget is taken at the first poll,
    /// as a perform does).
    started: bool,
}

impl<'a, M> Recv<'a, M> {
    pub(super) fn new(mb: &'a mut Mailbox<M>) -> Self {
        Self {
            mb,
            parked: false,
            started: false,
        }
    }

    fn unpark(&mut self) {
        if std::mem::take(&mut self.parked) {
            self.mb.unpark();
        }
    }

    fn done(&mut self, got: Option<M>) -> Poll<Option<M>> {
        self.unpark();
        Poll::Ready(got)
    }
}

impl<M> Future for Recv<'_, M> {
    type Output = Option<M>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<M>> {
        let this = self.get_mut();
        if !std::mem::replace(&mut this.started, true) && !crate::coop::consume() {
            // Out of budget on a fibra worker: let the others run first.
            this.started = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        loop {
            if let Some(m) = this.mb.take_delivered() {
                return this.done(Some(m));
            }
            if this.mb.park(cx.waker()) {
                // Nothing came since we looked, and something still can:
                // the next push (or a close) wakes us.
                this.parked = true;
                return Poll::Pending;
            }
            // Something came, or nothing more can (the park checks that
            // after its load of the queue's tail).
            if this.mb.is_disconnected() {
                // A message pushed before the last address went is visible
                // now.
                let last = this.mb.take_delivered();
                return this.done(last);
            }
        }
    }
}

impl<M> Drop for Recv<'_, M> {
    fn drop(&mut self) {
        self.unpark();
    }
}

impl<M> std::fmt::Debug for Recv<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recv")
            .field("parked", &self.parked)
            .finish_non_exhaustive()
    }
}
