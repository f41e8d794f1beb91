//! `Stream` for `Receiver` and `Sink` for `Sender`, so channels plug into the
//! futures ecosystem (`StreamExt`, `forward`, `select_all`, …).
//!
//! Each handle keeps at most one perform in flight (boxed, allocated only when
//! the operation has to wait). A received value whose in-flight perform is
//! dropped with the handle goes back to the channel, like any other
//! cancelled receive.

use super::ops::{ChanRef, RecvOp, SendOp};
use super::{Receiver, SendError, Sender, TrySendError};
use crate::op::Perform;
use futures_core::Stream;
use futures_core::stream::FusedStream;
use futures_sink::Sink;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

impl<T> Stream for Receiver<T> {
    type Item = T;

    /// Yields each value received; ends when every sender is gone and the
    /// channel is empty.
    ///
    /// ```
    /// use futures::StreamExt;
    ///
    /// let (tx, rx) = fibra::unbounded();
    /// for i in 1..=3 {
    ///     tx.try_send(i).unwrap();
    /// }
    /// drop(tx);
    /// let all: Vec<i32> = futures::executor::block_on(rx.collect());
    /// assert_eq!(all, [1, 2, 3]);
    /// ```
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        if this.stream.is_none() {
            match this.try_recv() {
                Ok(v) => return Poll::Ready(Some(v)),
                Err(super::TryRecvError::Disconnected) => return Poll::Ready(None),
                Err(super::TryRecvError::Empty) => {}
            }
            // SAFETY: the op stays in `this.stream`, which the receiver's
            // `Drop` clears before its `chan` goes.
            let op = RecvOp::new(unsafe { ChanRef::in_handle(&this.chan) });
            this.stream = Some(Box::pin(Perform::new(op)));
        }
        let pending = this.stream.as_mut().expect("receive in flight");
        let out = ready!(pending.as_mut().poll(cx));
        this.stream = None;
        Poll::Ready(out.ok())
    }
}

/// The stream is over once every sender is gone and the channel is empty
/// (no sender can come back: a [`WeakSender`](super::WeakSender) cannot
/// upgrade then), so `futures::select!` can skip it.
///
/// ```
/// use futures::stream::FusedStream;
///
/// let (tx, rx) = fibra::unbounded::<u8>();
/// tx.try_send(1).unwrap();
/// drop(tx);
/// assert!(!rx.is_terminated()); // one value left
/// rx.try_recv().unwrap();
/// assert!(rx.is_terminated());
/// ```
impl<T> FusedStream for Receiver<T> {
    fn is_terminated(&self) -> bool {
        self.stream.is_none() && self.is_disconnected()
    }
}

impl<T> Sender<T> {
    /// Drives the send in flight, if any.
    fn poll_in_flight(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        let Some(pending) = self.sink.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let out = ready!(pending.as_mut().poll(cx));
        self.sink = None;
        Poll::Ready(out)
    }
}

/// A `Sink` that sends each item as [`Sender::send`] would: `poll_ready`
/// completes once the previous item was taken, so at most one item is in
/// flight per handle.
///
/// ```
/// use futures::{SinkExt, StreamExt};
///
/// futures::executor::block_on(async {
///     let (tx, rx) = fibra::bounded(8);
///     let mut sink = tx;
///     sink.send(1).await.unwrap();
///     sink.send(2).await.unwrap();
///     drop(sink);
///     assert_eq!(rx.collect::<Vec<_>>().await, [1, 2]);
/// });
/// ```
impl<T> Sink<T> for Sender<T> {
    type Error = SendError<T>;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        self.get_mut().poll_in_flight(cx)
    }

    fn start_send(self: Pin<&mut Self>, item: T) -> Result<(), SendError<T>> {
        let this = self.get_mut();
        assert!(
            this.sink.is_none(),
            "Sink::start_send called without poll_ready completing first"
        );
        match this.try_send(item) {
            Ok(()) => Ok(()),
            Err(TrySendError::Disconnected(v)) => Err(SendError(v)),
            Err(TrySendError::Full(v)) => {
                // SAFETY: the op stays in `this.sink`, which the sender's
                // `Drop` clears before its `chan` goes.
                let op = SendOp::new(unsafe { ChanRef::in_handle(&this.chan) }, v);
                this.sink = Some(Box::pin(Perform::new(op)));
                Ok(())
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        self.get_mut().poll_in_flight(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        self.get_mut().poll_in_flight(cx)
    }
}
