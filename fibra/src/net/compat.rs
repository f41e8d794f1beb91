//! The I/O traits of other crates on fibra's sockets, behind features:
//! tokio's `AsyncRead`/`AsyncWrite` (feature `tokio`: `tokio-util` codecs,
//! anything written for tokio's traits) and hyper's `rt::Read`/`rt::Write`
//! (feature `hyper`; its `Executor` and `Timer` are in `net/hyper_rt.rs`).

#[cfg(any(feature = "tokio", feature = "hyper"))]
use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
#[cfg(any(feature = "tokio", feature = "hyper"))]
use super::tcp_stream::TcpStream;
#[cfg(any(feature = "tokio", feature = "hyper"))]
use std::io;
#[cfg(any(feature = "tokio", feature = "hyper"))]
use std::net::Shutdown;
#[cfg(any(feature = "tokio", feature = "hyper"))]
use std::pin::Pin;
#[cfg(any(feature = "tokio", feature = "hyper"))]
use std::task::{Context, Poll};

/// The stream under a stream or one of its halves.
#[cfg(any(feature = "tokio", feature = "hyper"))]
trait Stream {
    fn stream(&self) -> &TcpStream;
}

#[cfg(any(feature = "tokio", feature = "hyper"))]
impl Stream for TcpStream {
    fn stream(&self) -> &TcpStream {
        self
    }
}

#[cfg(any(feature = "tokio", feature = "hyper"))]
macro_rules! stream_of {
    ($($t:ty),*) => {$(
        impl Stream for $t {
            fn stream(&self) -> &TcpStream {
                &self.0
            }
        }
    )*};
}
#[cfg(any(feature = "tokio", feature = "hyper"))]
stream_of!(ReadHalf<'_>, WriteHalf<'_>, OwnedReadHalf, OwnedWriteHalf);

/// `$trait` (tokio's `AsyncWrite` or hyper's `rt::Write`, whose methods
/// have the same signatures) for the writing types `$t`.
#[cfg(any(feature = "tokio", feature = "hyper"))]
macro_rules! write_impl {
    ($trait:path: $($t:ty),*) => {$(
        impl $trait for $t {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                self.stream().poll_write_buf(cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.stream().poll_write_vectored_bufs(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            // Writes go straight to the socket: nothing to flush.
            fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }

            fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(self.stream().shutdown(Shutdown::Write))
            }
        }
    )*};
}

#[cfg(feature = "tokio")]
macro_rules! tokio_read {
    ($($t:ty),*) => {$(
        impl tokio::io::AsyncRead for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                // SAFETY: `poll_read_uninit` only writes initialised bytes
                // into the unfilled part, never de-initialises any.
                let unfilled = unsafe { buf.unfilled_mut() };
                let n = std::task::ready!(self.stream().poll_read_uninit(cx, unfilled))?;
                // SAFETY: `read(2)` initialised the first `n` bytes.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
        }
    )*};
}

#[cfg(feature = "tokio")]
tokio_read!(TcpStream, ReadHalf<'_>, OwnedReadHalf);
#[cfg(feature = "tokio")]
write_impl!(tokio::io::AsyncWrite: TcpStream, WriteHalf<'_>, OwnedWriteHalf);

#[cfg(feature = "hyper")]
macro_rules! hyper_read {
    ($($t:ty),*) => {$(
        impl hyper::rt::Read for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                mut buf: hyper::rt::ReadBufCursor<'_>,
            ) -> Poll<io::Result<()>> {
                // SAFETY: `poll_read_uninit` only writes initialised bytes
                // into the cursor's memory, never de-initialises any.
                let unfilled = unsafe { buf.as_mut() };
                let n = std::task::ready!(self.stream().poll_read_uninit(cx, unfilled))?;
                // SAFETY: `read(2)` initialised the first `n` bytes.
                unsafe { buf.advance(n) };
                Poll::Ready(Ok(()))
            }
        }
    )*};
}

#[cfg(feature = "hyper")]
hyper_read!(TcpStream, ReadHalf<'_>, OwnedReadHalf);
#[cfg(feature = "hyper")]
write_impl!(hyper::rt::Write: TcpStream, WriteHalf<'_>, OwnedWriteHalf);
