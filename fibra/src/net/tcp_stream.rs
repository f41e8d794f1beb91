//! `TcpStream`: a connection, with async reads and writes, readiness ops
//! for choices, and the `futures-io` traits.

use super::addr::{ToSocketAddrs, first_that};
use super::io_op::{Attempt, IoOp, socket_op};
use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use crate::rt::io::{Direction, IoSource, WaitKey, short_read};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// What a stream's registration waits for.
const INTEREST: mio::Interest = mio::Interest::READABLE.add(mio::Interest::WRITABLE);

/// A TCP connection on fibra's runtime.
///
/// Made inside a fibra runtime (by [`connect`](Self::connect) or
/// [`TcpListener::accept`](super::TcpListener::accept)); usable from any
/// task, thread or executor afterwards. Reads and writes take `&self`, so
/// one task may read while another writes (or [`split`](Self::split) it).
/// Implements `futures_io::{AsyncRead, AsyncWrite}`, and with the features
/// `tokio` and `hyper` their traits too.
///
/// ```
/// use fibra::net::{TcpListener, TcpStream};
///
/// # fibra::run(async {
/// let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let addr = listener.local_addr().unwrap();
/// // An echo of one message.
/// let server = fibra::spawn(async move {
///     let (conn, _) = listener.accept().await.unwrap();
///     let mut buf = [0; 64];
///     let n = conn.read(&mut buf).await.unwrap();
///     conn.write_all(&buf[..n]).await.unwrap();
/// });
/// let c = TcpStream::connect(addr).await.unwrap();
/// c.write_all(b"ping").await.unwrap();
/// let mut buf = [0; 4];
/// c.read_exact(&mut buf).await.unwrap();
/// assert_eq!(&buf, b"ping");
/// server.await.unwrap();
/// # });
/// ```
pub struct TcpStream {
    pub(super) io: IoSource<mio::net::TcpStream>,
}

impl TcpStream {
    /// Connects to `addr`, trying each of its addresses in turn.
    ///
    /// Must be called inside a fibra runtime. A host name in `addr` is
    /// looked up on the runtime's blocking pool ([`ToSocketAddrs`]).
    ///
    /// ```
    /// # fibra::run(async {
    /// // Nothing listens on a port just freed: refused.
    /// let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    /// let err = fibra::net::TcpStream::connect(port).await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    /// # });
    /// ```
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        first_that(addr, "connect to", Self::connect_one).await
    }

    async fn connect_one(addr: SocketAddr) -> io::Result<TcpStream> {
        let stream = TcpStream::from_mio(mio::net::TcpStream::connect(addr)?)?;
        // Writable once the connect is over, whichever way it went.
        stream.io.ready(Direction::Write).await?;
        if let Some(e) = stream.io.get().take_error()? {
            return Err(e);
        }
        match stream.io.get().peer_addr() {
            Ok(_) => Ok(stream),
            // Not connected after all: the error says why.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                Err(stream.io.get().take_error()?.unwrap_or(e))
            }
            Err(e) => Err(e),
        }
    }

    /// Wraps a connected stream made with the standard library (it is
    /// switched to non-blocking mode). Must be called inside a fibra
    /// runtime.
    ///
    /// ```
    /// # fibra::run(async {
    /// let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let std = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// let s = fibra::net::TcpStream::from_std(std).unwrap();
    /// assert_eq!(s.peer_addr().unwrap(), l.local_addr().unwrap());
    /// # });
    /// ```
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        Self::from_mio(mio::net::TcpStream::from_std(stream))
    }

    fn from_mio(s: mio::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: IoSource::new(s, INTEREST, "fibra::net::TcpStream")?,
        })
    }

    /// A stream accepted by `listener`: it belongs to the listener's
    /// runtime.
    pub(super) fn accepted(
        listener: &IoSource<mio::net::TcpListener>,
        s: mio::net::TcpStream,
    ) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: listener.sibling(s, INTEREST)?,
        })
    }

    /// Reads into `buf`; `Ok(0)` at the end of the stream (or if `buf` is
    /// empty).
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// # let addr = l.local_addr().unwrap();
    /// # fibra::spawn(async move { let c = TcpStream::connect(addr).await.unwrap(); c.write_all(b"x").await.unwrap(); });
    /// let (conn, _) = l.accept().await.unwrap();
    /// let mut buf = [0; 8];
    /// let n = conn.read(&mut buf).await.unwrap();
    /// assert_eq!(&buf[..n], b"x");
    /// # });
    /// ```
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let len = buf.len();
        self.io.read_io(len, |s| (&*s).read(buf)).await
    }

    /// Reads exactly `buf.len()` bytes; `UnexpectedEof` if the stream ends
    /// first.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// # let addr = l.local_addr().unwrap();
    /// # fibra::spawn(async move { let c = TcpStream::connect(addr).await.unwrap(); c.write_all(b"abc").await.unwrap(); });
    /// let (conn, _) = l.accept().await.unwrap();
    /// let mut buf = [0; 3];
    /// conn.read_exact(&mut buf).await.unwrap();
    /// assert_eq!(&buf, b"abc");
    /// # });
    /// ```
    pub async fn read_exact(&self, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read(buf).await? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => buf = &mut buf[n..],
            }
        }
        Ok(())
    }

    /// Writes some of `buf`; returns how much.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(c.write(b"hello").await.unwrap(), 5);
    /// # });
    /// ```
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.io(Direction::Write, |s| (&*s).write(buf)).await
    }

    /// Writes all of `buf`, waiting while the peer's window is full.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.write_all(b"hello").await.unwrap();
    /// # });
    /// ```
    pub async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(buf).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }

    /// Reads without waiting: `WouldBlock` if nothing is there yet.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let err = c.try_read(&mut [0; 4]).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    /// # });
    /// ```
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Read, |s| (&*s).read(buf))
    }

    /// Writes without waiting: `WouldBlock` if the send buffer is full.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(c.try_write(b"hi").unwrap(), 2);
    /// # });
    /// ```
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |s| (&*s).write(buf))
    }

    /// Waits until the stream is readable (data, end of stream or an
    /// error): then [`try_read`](Self::try_read).
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let (s, _) = l.accept().await.unwrap();
    /// c.write_all(b"x").await.unwrap();
    /// s.readable().await.unwrap();
    /// assert_eq!(s.try_read(&mut [0; 4]).unwrap(), 1);
    /// # });
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.io.ready(Direction::Read).await
    }

    /// Waits until the stream is writable.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.writable().await.unwrap();
    /// # });
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.io.ready(Direction::Write).await
    }

    /// The op of [`readable`](Self::readable), for choices. Readiness may
    /// be spurious: a `try_read` after it can still say `WouldBlock`.
    ///
    /// ```
    /// use fibra::{select, time::after};
    /// # use fibra::net::{TcpListener, TcpStream};
    /// use std::time::Duration;
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// // An idle peer: the timeout wins.
    /// let timed_out = select! {
    ///     r = c.readable_op() => { r.unwrap(); false }
    ///     () = after(Duration::from_millis(5)) => true,
    /// };
    /// assert!(timed_out);
    /// # });
    /// ```
    pub fn readable_op(&self) -> ReadyOp<'_> {
        ReadyOp(IoOp::new(Readying::new(&self.io, Direction::Read)))
    }

    /// The op of [`writable`](Self::writable), for choices.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.writable_op().await.unwrap();
    /// # });
    /// ```
    pub fn writable_op(&self) -> ReadyOp<'_> {
        ReadyOp(IoOp::new(Readying::new(&self.io, Direction::Write)))
    }

    /// Shuts down the read side, the write side or both (the peer reads
    /// EOF after the write side goes).
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let (s, _) = l.accept().await.unwrap();
    /// c.shutdown(std::net::Shutdown::Write).unwrap();
    /// assert_eq!(s.read(&mut [0; 4]).await.unwrap(), 0);
    /// # });
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get().shutdown(how)
    }

    /// The remote address.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(c.peer_addr().unwrap(), l.local_addr().unwrap());
    /// # });
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }

    /// The local address.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// assert!(c.local_addr().unwrap().ip().is_loopback());
    /// # });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small writes).
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.set_nodelay(true).unwrap();
    /// assert!(c.nodelay().unwrap());
    /// # });
    /// ```
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.io.get().set_nodelay(on)
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// assert!(!c.nodelay().unwrap());
    /// # });
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.get().nodelay()
    }

    /// Borrowed halves: one reads, the other writes (each usable in its
    /// own task of a scope, or in one `join`).
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let (r, w) = c.split();
    /// # drop((r, w));
    /// # });
    /// ```
    pub fn split(&self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (ReadHalf(self), WriteHalf(self))
    }

    /// Owned halves, for two tasks; [`OwnedReadHalf::reunite`] puts them
    /// back together.
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let (r, w) = c.into_split();
    /// let writer = fibra::spawn(async move { w.write_all(b"x").await });
    /// writer.await.unwrap().unwrap();
    /// # drop(r);
    /// # });
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let shared = Arc::new(self);
        (OwnedReadHalf(shared.clone()), OwnedWriteHalf(shared))
    }

    /// `poll_read` of the I/O traits: one waiter per direction (the latest
    /// caller's waker).
    pub(super) fn poll_read_buf(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.io.poll_io_drained(
            Direction::Read,
            &mut WaitKey::for_poll(),
            cx,
            |s| (&*s).read(buf),
            |n| short_read(n, len),
        )
    }

    /// `poll_read` of the traits whose buffers may be uninitialised
    /// (tokio's, hyper's): the bytes go there through `read(2)` on a raw
    /// pointer, no reference to uninitialised memory is made.
    #[cfg(any(feature = "tokio", feature = "hyper"))]
    pub(super) fn poll_read_uninit(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [std::mem::MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        use std::os::fd::AsRawFd;
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        self.io.poll_io_drained(
            Direction::Read,
            &mut WaitKey::for_poll(),
            cx,
            |s| {
                // SAFETY: `ptr` points to `len` writable bytes of `buf`,
                // borrowed mutably for this call; `read(2)` writes at most
                // `len` bytes there and reads none, and `s` is an open
                // socket owned by this stream.
                let n = unsafe { libc::read(s.as_raw_fd(), ptr.cast(), len) };
                // A negative return is an error (errno); else a count.
                usize::try_from(n).map_err(|_| io::Error::last_os_error())
            },
            |n| short_read(n, len),
        )
    }

    /// `poll_write` of the I/O traits.
    pub(super) fn poll_write_buf(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.io
            .poll_io(Direction::Write, &mut WaitKey::for_poll(), cx, |s| {
                (&*s).write(buf)
            })
    }

    /// `poll_write_vectored` of the I/O traits.
    pub(super) fn poll_write_vectored_bufs(
        &self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io
            .poll_io(Direction::Write, &mut WaitKey::for_poll(), cx, |s| {
                (&*s).write_vectored(bufs)
            })
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local_addr", &self.local_addr().ok())
            .field("peer_addr", &self.peer_addr().ok())
            .finish_non_exhaustive()
    }
}

/// Waiting for a direction to become ready (no call made).
pub(crate) struct Readying<'a> {
    io: &'a IoSource<mio::net::TcpStream>,
    dir: Direction,
    key: WaitKey,
}

impl<'a> Readying<'a> {
    fn new(io: &'a IoSource<mio::net::TcpStream>, dir: Direction) -> Self {
        Readying {
            io,
            dir,
            key: WaitKey::default(),
        }
    }
}

impl Attempt for Readying<'_> {
    type Output = io::Result<()>;

    fn attempt(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_ready(self.dir, &mut self.key, cx)
    }

    // Readiness is not consumed: nothing to give back.
    fn keep(&mut self, _out: io::Result<()>) {}

    fn cancel(&mut self) {
        self.io.forget(self.dir, &mut self.key);
    }
}

socket_op! {
    /// The op of [`TcpStream::readable`] or [`TcpStream::writable`].
    ///
    /// ```
    /// # use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// # let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let op: fibra::net::ReadyOp<'_> = c.writable_op();
    /// op.await.unwrap();
    /// # });
    /// ```
    ReadyOp<'a> = Readying<'a> => io::Result<()>
}

macro_rules! async_io_traits {
    ($($t:ty),*) => {$(
        impl futures_io::AsyncRead for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                self.poll_read_buf(cx, buf)
            }
        }

        impl futures_io::AsyncWrite for $t {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                self.poll_write_buf(cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.poll_write_vectored_bufs(cx, bufs)
            }

            // Writes go straight to the socket: nothing to flush.
            fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }

            fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(self.shutdown(Shutdown::Write))
            }
        }
    )*};
}

async_io_traits!(TcpStream, &TcpStream);
