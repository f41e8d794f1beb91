//! `SendFromOp`: a send whose value lives in a slot the caller owns, so a
//! send that loses a choice leaves its value there (crossbeam's `select!`
//! leaves a losing send's message with the caller).
//!
//! Invariants: the value moves from the caller's slot into an inner
//! [`SendOp`] when the op is made, and back when the op is dropped unsent.
//! Dropping the op is the only way back, and it happens with the op
//! unpublished: a perform withdraws (or finishes) every leaf before its
//! fields drop, a choice that was never performed published nothing, and
//! `try_perform` withdraws before it gives the op back. A send that
//! committed took the value (or, for a closed channel, hands it back in
//! `Err(SendError(v))`), so the slot stays empty.

use super::SendError;
use super::ops::{ChanRef, SendOp};
use crate::op::{BlockCx, Op, sealed::Sealed};
use pin_project_lite::pin_project;
use std::fmt;
use std::pin::Pin;

pin_project! {
    /// The op of sending the value in a slot the caller owns: made by
    /// [`Sender::send_op_from`](crate::Sender::send_op_from).
    ///
    /// If the send commits, the slot is left empty (`None`); if it loses a
    /// choice, is cancelled, or is never performed, the value is back in
    /// the slot as soon as the op is dropped — at the end of the
    /// `select!`, `choose(..).await`, `perform()` or
    /// [`WaitUntil::run`](crate::WaitUntil::run). A slot holding `None`
    /// makes an op that never commits (a disabled clause).
    ///
    /// ```
    /// use fibra::{Op, choose};
    ///
    /// let (tx, _rx) = fibra::channel::<String>();
    /// let (_other_tx, other) = fibra::bounded::<u8>(1);
    /// _other_tx.try_send(1).unwrap();
    /// let mut msg = Some("hello".to_string());
    /// // Nobody receives on `tx`'s channel: the other branch wins ...
    /// let got = choose((
    ///     tx.send_op_from(&mut msg).wrap(|_| None),
    ///     other.recv_op().wrap(|r| r.ok()),
    /// ))
    /// .perform();
    /// assert_eq!(got, Some(1));
    /// // ... and the message is still ours.
    /// assert_eq!(msg.as_deref(), Some("hello"));
    /// ```
    #[must_use = "an op does nothing unless performed"]
    pub struct SendFromOp<'a, T> {
        #[pin]
        send: Option<SendOp<'a, T>>,
        home: &'a mut Option<T>,
    }

    impl<'a, T> PinnedDrop for SendFromOp<'a, T> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(v) = this.send.as_pin_mut().and_then(SendOp::take_unsent) {
                **this.home = Some(v);
            }
        }
    }
}

impl<'a, T> SendFromOp<'a, T> {
    pub(super) fn new(chan: ChanRef<'a, T>, home: &'a mut Option<T>) -> Self {
        Self {
            send: home.take().map(|v| SendOp::new(chan, v)),
            home,
        }
    }
}

impl<T> fmt::Debug for SendFromOp<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFromOp")
            .field("has_value", &self.send.is_some())
            .finish_non_exhaustive()
    }
}

impl<T> Sealed for SendFromOp<'_, T> {}

impl<T> Op for SendFromOp<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        self.project().send.as_pin_mut()?.try_now()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(send) = self.project().send.as_pin_mut() {
            send.block(cx);
        }
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(send) = self.project().send.as_pin_mut() {
            send.repoll(cx);
        }
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> Self::Output {
        self.project()
            .send
            .as_pin_mut()
            .expect("only a send with a value commits")
            .finish(leaf)
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        if let Some(send) = self.project().send.as_pin_mut() {
            send.abandon(leaf);
        }
    }

    fn withdraw(self: Pin<&mut Self>) {
        if let Some(send) = self.project().send.as_pin_mut() {
            send.withdraw();
        }
    }
}
