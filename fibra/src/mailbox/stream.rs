//! `Stream` for [`Mailbox`], so a mailbox plugs into the futures ecosystem
//! (`StreamExt::next`, `for_each`, `select_all`, …).
//!
//! `poll_next` is [`Recv`](super::Recv)'s poll without a future to hold
//! the parked state: the queue itself knows whether the consumer is parked
//! (`Queue::unpark` does nothing otherwise), so each poll that returns a
//! message unparks first, and a stream dropped while parked leaves only a
//! waker that a later push wakes spuriously, or that the mailbox's next
//! receive replaces.

use super::Mailbox;
use futures_core::Stream;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Yields each message in order; ends (`None`) once the mailbox is closed
/// or no address is left, and it is empty. A message is taken only by the
/// poll that returns it.
///
/// ```
/// use futures::StreamExt;
///
/// let (addr, mb) = fibra::mailbox();
/// for i in 1..=3 {
///     addr.send(i).unwrap();
/// }
/// drop(addr);
/// let all: Vec<i32> = futures::executor::block_on(mb.collect());
/// assert_eq!(all, [1, 2, 3]);
/// ```
impl<M> Stream for Mailbox<M> {
    type Item = M;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<M>> {
        let mb = self.get_mut();
        if !crate::coop::consume() {
            // Out of budget on a fibra worker: let the others run first.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        loop {
            if let Some(m) = mb.take_delivered() {
                mb.unpark();
                return Poll::Ready(Some(m));
            }
            if mb.is_disconnected() {
                // A message pushed before the last address went is visible
                // now.
                let last = mb.take_delivered();
                mb.unpark();
                return Poll::Ready(last);
            }
            if mb.park(cx.waker()) {
                return Poll::Pending;
            }
            // Something came (or nothing more can): look again.
        }
    }
}
