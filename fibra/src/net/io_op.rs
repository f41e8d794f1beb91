//! The leaf every socket op is made of: it commits itself, like a mailbox
//! receive (`docs/op-protocol.md`, "Leaves that commit themselves"). Its
//! try makes the call once (without a waker); its block and every repoll
//! make it again with the task's waker registered in the socket's
//! readiness slot; when the call succeeds the leaf claims the opstate. If
//! another branch committed meanwhile, the claim fails and the result goes
//! back to the socket ([`Attempt::keep`]): an accepted connection or a
//! received datagram is handed to the next accept or receive, never lost.

use crate::op::{BlockCx, Op, sealed::Sealed};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// One kind of socket call, for [`IoOp`].
pub(crate) trait Attempt {
    type Output;
    /// Makes the call; `Pending` with `cx`'s waker registered if the socket
    /// is not ready.
    fn attempt(&mut self, cx: &mut Context<'_>) -> Poll<Self::Output>;
    /// A result whose branch lost the choice: back to the socket.
    fn keep(&mut self, out: Self::Output);
    /// The wait is given up: drops the registered waker.
    fn cancel(&mut self);
}

/// A self-committing leaf over an [`Attempt`].
pub(crate) struct IoOp<A: Attempt> {
    attempt: A,
    won: Option<A::Output>,
}

impl<A: Attempt> IoOp<A> {
    pub(crate) fn new(attempt: A) -> Self {
        IoOp { attempt, won: None }
    }

    fn attempt_and_commit(&mut self, cx: BlockCx<'_>) {
        if let Poll::Ready(out) = self.attempt.attempt(&mut Context::from_waker(cx.waker)) {
            if cx.claim().is_ok() {
                self.won = Some(out);
                cx.state.commit_own(cx.leaf);
            } else {
                self.attempt.keep(out);
            }
        }
    }
}

impl<A: Attempt> Sealed for IoOp<A> {}

impl<A: Attempt + Unpin> Op for IoOp<A>
where
    A::Output: Unpin,
{
    type Output = A::Output;

    fn commits_remotely(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<A::Output> {
        let this = self.get_mut();
        match this
            .attempt
            .attempt(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(out) => Some(out),
            Poll::Pending => None,
        }
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.get_mut().attempt_and_commit(cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.get_mut().attempt_and_commit(cx);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> A::Output {
        let this = self.get_mut();
        this.attempt.cancel();
        this.won
            .take()
            .expect("a committed socket op has its result")
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        let this = self.get_mut();
        if let Some(out) = this.won.take() {
            this.attempt.keep(out);
        }
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.get_mut().attempt.cancel();
    }
}

impl<A: Attempt> Drop for IoOp<A> {
    fn drop(&mut self) {
        self.attempt.cancel();
        if let Some(out) = self.won.take() {
            self.attempt.keep(out);
        }
    }
}

/// Implements `IntoFuture` (perform with `.await`) and `Debug` for a
/// public op type wrapping an [`IoOp`] in its field `0`, and forwards
/// `Op` to it.
macro_rules! socket_op {
    ($(#[$doc:meta])* $name:ident<$lt:lifetime> = $attempt:ty => $out:ty) => {
        $(#[$doc])*
        #[must_use = "an op does nothing unless performed"]
        pub struct $name<$lt>(pub(super) $crate::net::io_op::IoOp<$attempt>);

        impl<$lt> $crate::op::sealed::Sealed for $name<$lt> {}

        impl<$lt> $crate::op::Op for $name<$lt> {
            type Output = $out;
            fn commits_remotely(&self) -> bool {
                false
            }
            fn try_now(self: std::pin::Pin<&mut Self>) -> Option<$out> {
                std::pin::Pin::new(&mut self.get_mut().0).try_now()
            }
            fn block(self: std::pin::Pin<&mut Self>, cx: $crate::op::BlockCx<'_>) {
                std::pin::Pin::new(&mut self.get_mut().0).block(cx)
            }
            fn repoll(self: std::pin::Pin<&mut Self>, cx: $crate::op::BlockCx<'_>) {
                std::pin::Pin::new(&mut self.get_mut().0).repoll(cx)
            }
            fn finish(self: std::pin::Pin<&mut Self>, leaf: usize) -> $out {
                std::pin::Pin::new(&mut self.get_mut().0).finish(leaf)
            }
            fn abandon(self: std::pin::Pin<&mut Self>, leaf: usize) {
                std::pin::Pin::new(&mut self.get_mut().0).abandon(leaf)
            }
            fn withdraw(self: std::pin::Pin<&mut Self>) {
                std::pin::Pin::new(&mut self.get_mut().0).withdraw()
            }
        }

        impl<$lt> std::future::IntoFuture for $name<$lt> {
            type Output = $out;
            type IntoFuture = $crate::op::Perform<Self>;
            fn into_future(self) -> Self::IntoFuture {
                $crate::op::Perform::new(self)
            }
        }

        impl<$lt> std::fmt::Debug for $name<$lt> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use socket_op;

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::net::{TcpListener, UdpSocket};
    use crate::op::state::OpState;
    use crate::op::{BlockCx, Op};
    use std::pin::Pin;
    use std::task::Waker;

    /// An opstate another branch has committed: a leaf's claim fails.
    fn lost() -> OpState {
        let state = OpState::new();
        state.claim().unwrap();
        state.commit_own(1);
        state
    }

    fn cx(state: &OpState) -> BlockCx<'_> {
        BlockCx {
            state,
            leaf: 0,
            waker: Waker::noop(),
            exclusive: false,
            install: None,
        }
    }

    #[test]
    fn an_accept_that_loses_the_choice_keeps_the_connection() {
        crate::Runtime::new().unwrap().block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            l.io.ready(crate::rt::io::Direction::Read).await.unwrap();
            let state = lost();
            let mut op = l.accept_op();
            Pin::new(&mut op).block(cx(&state));
            assert_eq!(l.kept_len(), 1, "accepted, lost the claim, kept");
            drop(op);
            let (_, peer) = l.accept().await.unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
        });
    }

    #[test]
    fn a_receive_that_loses_the_choice_keeps_the_datagram() {
        crate::Runtime::new().unwrap().block_on(async {
            let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            s.send_to(b"kept", s.local_addr().unwrap()).await.unwrap();
            s.io.ready(crate::rt::io::Direction::Read).await.unwrap();
            let state = lost();
            let mut buf = [0u8; 16];
            let mut op = s.recv_from_op(&mut buf);
            Pin::new(&mut op).block(cx(&state));
            drop(op);
            let mut buf = [0u8; 16];
            let (n, _) = s.try_recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"kept");
        });
    }
}
