//! The halves of a `TcpStream`: borrowed (`split`) and owned
//! (`into_split`), each with the reading or the writing half of the
//! stream's methods and I/O traits.

use super::tcp_stream::{ReadyOp, TcpStream};
use std::fmt;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The reading half of a borrowed [`TcpStream`]: made by
/// [`TcpStream::split`].
///
/// ```
/// # use fibra::net::{TcpListener, TcpStream};
/// # fibra::run(async {
/// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
/// let (s, _) = l.accept().await.unwrap();
/// let (r, w) = s.split();
/// c.write_all(b"echo").await.unwrap();
/// let mut buf = [0; 4];
/// r.read_exact(&mut buf).await.unwrap();
/// w.write_all(&buf).await.unwrap();
/// c.read_exact(&mut buf).await.unwrap();
/// assert_eq!(&buf, b"echo");
/// # });
/// ```
#[derive(Debug)]
pub struct ReadHalf<'a>(pub(super) &'a TcpStream);

/// The writing half of a borrowed [`TcpStream`]: made by
/// [`TcpStream::split`].
///
/// ```
/// # use fibra::net::{TcpListener, TcpStream};
/// # fibra::run(async {
/// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
/// let (_r, w) = c.split();
/// w.write_all(b"x").await.unwrap();
/// # });
/// ```
#[derive(Debug)]
pub struct WriteHalf<'a>(pub(super) &'a TcpStream);

/// The reading half of a [`TcpStream`], owned: made by
/// [`TcpStream::into_split`]. The connection closes when both halves are
/// dropped.
///
/// ```
/// # use fibra::net::{TcpListener, TcpStream};
/// # fibra::run(async {
/// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
/// let (s, _) = l.accept().await.unwrap();
/// let (r, _w) = s.into_split();
/// let reader = fibra::spawn(async move {
///     let mut buf = [0; 2];
///     r.read_exact(&mut buf).await.map(|()| buf)
/// });
/// c.write_all(b"ok").await.unwrap();
/// assert_eq!(&reader.await.unwrap().unwrap(), b"ok");
/// # });
/// ```
#[derive(Debug)]
pub struct OwnedReadHalf(pub(super) Arc<TcpStream>);

/// The writing half of a [`TcpStream`], owned: made by
/// [`TcpStream::into_split`]. Dropping it does not shut the connection
/// down (the reading half may still be in use): call
/// [`shutdown`](Self::shutdown) to send EOF.
///
/// ```
/// # use fibra::net::{TcpListener, TcpStream};
/// # fibra::run(async {
/// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
/// let (_r, w) = c.into_split();
/// fibra::spawn(async move { w.write_all(b"x").await }).await.unwrap().unwrap();
/// # });
/// ```
#[derive(Debug)]
pub struct OwnedWriteHalf(pub(super) Arc<TcpStream>);

/// The two halves given to [`OwnedReadHalf::reunite`] came from different
/// streams: here they are back.
///
/// ```
/// # use fibra::net::{TcpListener, TcpStream};
/// # fibra::run(async {
/// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let (r1, _w1) = TcpStream::connect(l.local_addr().unwrap()).await.unwrap().into_split();
/// let (_r2, w2) = TcpStream::connect(l.local_addr().unwrap()).await.unwrap().into_split();
/// let err: fibra::net::ReuniteError = r1.reunite(w2).unwrap_err();
/// # drop(err);
/// # });
/// ```
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Debug for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReuniteError(..)")
    }
}

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the halves given to `reunite` come from different TcpStreams")
    }
}

impl std::error::Error for ReuniteError {}

impl OwnedReadHalf {
    /// Puts the halves back together; they must come from the same
    /// stream.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let (r, w) = TcpStream::connect(l.local_addr().unwrap()).await.unwrap().into_split();
    /// let stream = r.reunite(w).unwrap();
    /// # drop(stream);
    /// # });
    /// ```
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if !Arc::ptr_eq(&self.0, &other.0) {
            return Err(ReuniteError(self, other));
        }
        drop(other);
        Ok(Arc::into_inner(self.0).expect("both halves were given back"))
    }
}

macro_rules! read_half {
    ($($t:ty),*) => {$(
        impl $t {
            /// Reads into `buf` ([`TcpStream::read`]).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (s, _) = l.accept().await.unwrap();
            /// c.write_all(b"x").await.unwrap();
            /// let (r, _w) = s.split();
            /// assert_eq!(r.read(&mut [0; 4]).await.unwrap(), 1);
            /// # });
            /// ```
            pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.read(buf).await
            }

            /// Reads exactly `buf.len()` bytes ([`TcpStream::read_exact`]).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (s, _) = l.accept().await.unwrap();
            /// c.write_all(b"xy").await.unwrap();
            /// let (r, _w) = s.into_split();
            /// let mut buf = [0; 2];
            /// r.read_exact(&mut buf).await.unwrap();
            /// # });
            /// ```
            pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
                self.0.read_exact(buf).await
            }

            /// Reads without waiting ([`TcpStream::try_read`]).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (r, _w) = c.split();
            /// assert!(r.try_read(&mut [0; 4]).is_err());
            /// # });
            /// ```
            pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.try_read(buf)
            }

            /// Waits until readable ([`TcpStream::readable`]).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (s, _) = l.accept().await.unwrap();
            /// c.write_all(b"x").await.unwrap();
            /// let (r, _w) = s.split();
            /// r.readable().await.unwrap();
            /// # });
            /// ```
            pub async fn readable(&self) -> io::Result<()> {
                self.0.readable().await
            }

            /// The op of [`readable`](Self::readable).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (s, _) = l.accept().await.unwrap();
            /// c.write_all(b"x").await.unwrap();
            /// let (r, _w) = s.split();
            /// r.readable_op().await.unwrap();
            /// # });
            /// ```
            pub fn readable_op(&self) -> ReadyOp<'_> {
                self.0.readable_op()
            }

            /// The remote address.
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (r, _w) = c.split();
            /// assert_eq!(r.peer_addr().unwrap(), l.local_addr().unwrap());
            /// # });
            /// ```
            pub fn peer_addr(&self) -> io::Result<SocketAddr> {
                self.0.peer_addr()
            }
        }

        impl futures_io::AsyncRead for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                self.0.poll_read_buf(cx, buf)
            }
        }
    )*};
}

macro_rules! write_half {
    ($($t:ty),*) => {$(
        impl $t {
            /// Writes some of `buf` ([`TcpStream::write`]).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (_r, w) = c.split();
            /// assert_eq!(w.write(b"ab").await.unwrap(), 2);
            /// # });
            /// ```
            pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
                self.0.write(buf).await
            }

            /// Writes all of `buf` ([`TcpStream::write_all`]).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (_r, w) = c.into_split();
            /// w.write_all(b"ab").await.unwrap();
            /// # });
            /// ```
            pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
                self.0.write_all(buf).await
            }

            /// Writes without waiting ([`TcpStream::try_write`]).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (_r, w) = c.split();
            /// assert_eq!(w.try_write(b"ab").unwrap(), 2);
            /// # });
            /// ```
            pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
                self.0.try_write(buf)
            }

            /// Waits until writable ([`TcpStream::writable`]).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (_r, w) = c.split();
            /// w.writable().await.unwrap();
            /// # });
            /// ```
            pub async fn writable(&self) -> io::Result<()> {
                self.0.writable().await
            }

            /// The op of [`writable`](Self::writable).
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (_r, w) = c.split();
            /// w.writable_op().await.unwrap();
            /// # });
            /// ```
            pub fn writable_op(&self) -> ReadyOp<'_> {
                self.0.writable_op()
            }

            /// Shuts the write side down: the peer reads EOF.
            ///
            /// ```
            /// # use fibra::net::{TcpListener, TcpStream};
            /// # fibra::run(async {
            /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            /// let (s, _) = l.accept().await.unwrap();
            /// let (_r, w) = c.split();
            /// w.shutdown().unwrap();
            /// assert_eq!(s.read(&mut [0; 4]).await.unwrap(), 0);
            /// # });
            /// ```
            pub fn shutdown(&self) -> io::Result<()> {
                self.0.shutdown(Shutdown::Write)
            }
        }

        impl futures_io::AsyncWrite for $t {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                self.0.poll_write_buf(cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.0.poll_write_vectored_bufs(cx, bufs)
            }

            fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }

            fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(self.0.shutdown(Shutdown::Write))
            }
        }
    )*};
}

read_half!(ReadHalf<'_>, OwnedReadHalf);
write_half!(WriteHalf<'_>, OwnedWriteHalf);
