//! `UdpSocket`: datagrams, as async methods and as a receive op.
//!
//! A datagram received by an op whose branch lost its choice is copied to
//! `kept` and handed out first by the next receive.

use super::addr::{ToSocketAddrs, first_that};
use super::io_op::{Attempt, IoOp, socket_op};
use crate::rt::io::{Direction, IoSource, WaitKey};
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

/// A UDP socket on fibra's runtime.
///
/// Made inside a fibra runtime (it belongs to it); usable from any task,
/// thread or executor afterwards.
///
/// ```
/// use fibra::net::UdpSocket;
///
/// # fibra::run(async {
/// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
/// let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
/// a.send_to(b"hello", b.local_addr().unwrap()).await.unwrap();
/// let mut buf = [0; 16];
/// let (n, from) = b.recv_from(&mut buf).await.unwrap();
/// assert_eq!((&buf[..n], from), (&b"hello"[..], a.local_addr().unwrap()));
/// # });
/// ```
pub struct UdpSocket {
    pub(super) io: IoSource<mio::net::UdpSocket>,
    /// Datagrams an op received but did not deliver (it lost a choice).
    kept: Mutex<VecDeque<(Vec<u8>, SocketAddr)>>,
}

impl UdpSocket {
    /// Binds to `addr` (the first of its addresses that binds). Must be
    /// called inside a fibra runtime. A host name in `addr` is looked up on
    /// the runtime's blocking pool ([`ToSocketAddrs`]).
    ///
    /// ```
    /// # fibra::run(async {
    /// let s = fibra::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// assert!(s.local_addr().unwrap().port() > 0);
    /// # });
    /// ```
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        let s = first_that(addr, "bind to", |a| {
            std::future::ready(mio::net::UdpSocket::bind(a))
        });
        Self::from_mio(s.await?)
    }

    /// Wraps a socket made with the standard library (switched to
    /// non-blocking mode). Must be called inside a fibra runtime.
    ///
    /// ```
    /// # fibra::run(async {
    /// let std = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    /// let s = fibra::net::UdpSocket::from_std(std).unwrap();
    /// # drop(s);
    /// # });
    /// ```
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Self::from_mio(mio::net::UdpSocket::from_std(socket))
    }

    fn from_mio(s: mio::net::UdpSocket) -> io::Result<UdpSocket> {
        Ok(UdpSocket {
            io: IoSource::new(
                s,
                mio::Interest::READABLE | mio::Interest::WRITABLE,
                "fibra::net::UdpSocket",
            )?,
            kept: Mutex::default(),
        })
    }

    /// The local address.
    ///
    /// ```
    /// # fibra::run(async {
    /// let s = fibra::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// assert!(s.local_addr().unwrap().ip().is_loopback());
    /// # });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// Sets the default peer of [`send`](Self::send) and filters
    /// [`recv`](Self::recv) to it.
    ///
    /// ```
    /// # use fibra::net::UdpSocket;
    /// # fibra::run(async {
    /// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// a.connect(b.local_addr().unwrap()).await.unwrap();
    /// a.send(b"x").await.unwrap();
    /// let mut buf = [0; 4];
    /// assert_eq!(b.recv_from(&mut buf).await.unwrap().0, 1);
    /// # });
    /// ```
    pub async fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        first_that(addr, "connect to", |a| {
            std::future::ready(self.io.get().connect(a))
        })
        .await
    }

    /// Sends `buf` to `target`; returns the bytes sent.
    ///
    /// ```
    /// # use fibra::net::UdpSocket;
    /// # fibra::run(async {
    /// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// let n = a.send_to(b"abc", a.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(n, 3);
    /// # });
    /// ```
    pub async fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        self.io
            .io(Direction::Write, |s| s.send_to(buf, target))
            .await
    }

    /// Sends `buf` to the connected peer.
    ///
    /// ```
    /// # use fibra::net::UdpSocket;
    /// # fibra::run(async {
    /// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// a.connect(a.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(a.send(b"ab").await.unwrap(), 2);
    /// # });
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.io(Direction::Write, |s| s.send(buf)).await
    }

    /// Receives one datagram into `buf` (the rest of a longer one is
    /// discarded); returns its length here and its sender.
    ///
    /// ```
    /// # use fibra::net::UdpSocket;
    /// # fibra::run(async {
    /// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// a.send_to(b"me", a.local_addr().unwrap()).await.unwrap();
    /// let mut buf = [0; 8];
    /// let (n, from) = a.recv_from(&mut buf).await.unwrap();
    /// assert_eq!((n, from), (2, a.local_addr().unwrap()));
    /// # });
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.recv_from_op(buf).await
    }

    /// Receives one datagram from the connected peer.
    ///
    /// ```
    /// # use fibra::net::UdpSocket;
    /// # fibra::run(async {
    /// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// a.connect(a.local_addr().unwrap()).await.unwrap();
    /// a.send(b"hi").await.unwrap();
    /// let mut buf = [0; 8];
    /// assert_eq!(a.recv(&mut buf).await.unwrap(), 2);
    /// # });
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv_from(buf).await.map(|(n, _)| n)
    }

    /// The op of [`recv_from`](Self::recv_from), for choices. A datagram
    /// received while another branch commits is kept for the next receive.
    ///
    /// ```
    /// use fibra::{select, time::after};
    /// use std::time::Duration;
    /// # use fibra::net::UdpSocket;
    /// # fibra::run(async {
    /// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// let mut buf = [0; 8];
    /// let got = select! {
    ///     r = a.recv_from_op(&mut buf) => Some(r.unwrap().0),
    ///     () = after(Duration::from_millis(5)) => None,
    /// };
    /// assert_eq!(got, None);
    /// # });
    /// ```
    pub fn recv_from_op<'a>(&'a self, buf: &'a mut [u8]) -> RecvFromOp<'a> {
        RecvFromOp(IoOp::new(Receiving {
            socket: self,
            buf,
            key: WaitKey::default(),
        }))
    }

    /// Sends without waiting: `WouldBlock` if the send buffer is full.
    ///
    /// ```
    /// # use fibra::net::UdpSocket;
    /// # fibra::run(async {
    /// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// assert_eq!(a.try_send_to(b"x", a.local_addr().unwrap()).unwrap(), 1);
    /// # });
    /// ```
    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |s| s.send_to(buf, target))
    }

    /// Receives without waiting: `WouldBlock` if no datagram is there.
    ///
    /// ```
    /// # use fibra::net::UdpSocket;
    /// # fibra::run(async {
    /// let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// let err = a.try_recv_from(&mut [0; 8]).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    /// # });
    /// ```
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        if let Some(got) = self.take_kept(buf) {
            return Ok(got);
        }
        self.io.try_io(Direction::Read, |s| s.recv_from(buf))
    }

    fn take_kept(&self, buf: &mut [u8]) -> Option<(usize, SocketAddr)> {
        let (data, from) = self
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()?;
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        Some((n, from))
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local_addr", &self.local_addr().ok())
            .finish_non_exhaustive()
    }
}

/// One receive in progress.
pub(crate) struct Receiving<'a> {
    socket: &'a UdpSocket,
    buf: &'a mut [u8],
    key: WaitKey,
}

impl Attempt for Receiving<'_> {
    type Output = io::Result<(usize, SocketAddr)>;

    fn attempt(&mut self, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(got) = self.socket.take_kept(self.buf) {
            return Poll::Ready(Ok(got));
        }
        let buf = &mut *self.buf;
        self.socket
            .io
            .poll_io(Direction::Read, &mut self.key, cx, |s| s.recv_from(buf))
    }

    fn keep(&mut self, out: Self::Output) {
        if let Ok((n, from)) = out {
            let data = self.buf[..n].to_vec();
            self.socket
                .kept
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push_back((data, from));
        }
    }

    fn cancel(&mut self) {
        self.socket.io.forget(Direction::Read, &mut self.key);
    }
}

socket_op! {
    /// The op of [`UdpSocket::recv_from`]: made by
    /// [`UdpSocket::recv_from_op`].
    ///
    /// ```
    /// # fibra::run(async {
    /// let s = fibra::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// s.send_to(b"x", s.local_addr().unwrap()).await.unwrap();
    /// let mut buf = [0; 4];
    /// let op: fibra::net::RecvFromOp<'_> = s.recv_from_op(&mut buf);
    /// assert_eq!(op.await.unwrap().0, 1);
    /// # });
    /// ```
    RecvFromOp<'a> = Receiving<'a> => io::Result<(usize, SocketAddr)>
}
