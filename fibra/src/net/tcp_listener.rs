//! `TcpListener`: accepts connections, as an async method and as an op.
//!
//! Connections accepted by an op whose branch lost its choice wait in
//! `kept` and are handed out first by the next accept.
//!
//! Running out of file descriptors (`EMFILE`, `ENFILE`) or memory
//! (`ENOBUFS`, `ENOMEM`) is reported, and the listener then backs off: the
//! next accept waits first (5 ms, doubling up to 1 s while the error lasts)
//! instead of retrying in a loop while the kernel still refuses.

use super::addr::{ToSocketAddrs, first_that};
use super::io_op::{Attempt, IoOp, socket_op};
use super::tcp_stream::TcpStream;
use crate::rt::io::{Direction, IoSource, WaitKey};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

const BACKOFF_MIN: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A TCP socket listening for connections, on fibra's runtime.
///
/// Made inside a fibra runtime (it belongs to it); usable from any task,
/// thread or executor afterwards. Accept with [`accept`](Self::accept), or
/// with [`accept_op`](Self::accept_op) in a choice.
///
/// ```
/// use fibra::net::{TcpListener, TcpStream};
///
/// # fibra::run(async {
/// let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let addr = listener.local_addr().unwrap();
/// let client = fibra::spawn(async move {
///     let c = TcpStream::connect(addr).await.unwrap();
///     c.write_all(b"hi").await.unwrap();
/// });
/// let (conn, _peer) = listener.accept().await.unwrap();
/// let mut buf = [0; 2];
/// conn.read_exact(&mut buf).await.unwrap();
/// assert_eq!(&buf, b"hi");
/// client.await.unwrap();
/// # });
/// ```
pub struct TcpListener {
    pub(super) io: IoSource<mio::net::TcpListener>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Connections an op accepted but did not deliver (it lost a choice).
    kept: VecDeque<(TcpStream, SocketAddr)>,
    /// After a resource error: no accept before this instant.
    backoff_until: Option<Instant>,
    /// The next back-off (doubling while the errors last).
    backoff: Duration,
}

fn is_resource_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

impl TcpListener {
    /// Binds to `addr` (the first of its addresses that binds) and listens.
    ///
    /// Must be called inside a fibra runtime. A host name in `addr` is
    /// looked up on the runtime's blocking pool ([`ToSocketAddrs`]).
    ///
    /// ```
    /// # fibra::run(async {
    /// let l = fibra::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// assert!(l.local_addr().unwrap().port() > 0);
    /// # });
    /// ```
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        let l = first_that(addr, "bind to", |a| {
            std::future::ready(mio::net::TcpListener::bind(a))
        });
        Self::from_mio(l.await?)
    }

    /// Wraps a listener made with the standard library (it is switched to
    /// non-blocking mode). Must be called inside a fibra runtime.
    ///
    /// ```
    /// # fibra::run(async {
    /// let std = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let l = fibra::net::TcpListener::from_std(std).unwrap();
    /// assert!(l.local_addr().is_ok());
    /// # });
    /// ```
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Self::from_mio(mio::net::TcpListener::from_std(listener))
    }

    fn from_mio(l: mio::net::TcpListener) -> io::Result<TcpListener> {
        Ok(TcpListener {
            io: IoSource::new(l, mio::Interest::READABLE, "fibra::net::TcpListener")?,
            state: Mutex::default(),
        })
    }

    /// The address the listener is bound to.
    ///
    /// ```
    /// # fibra::run(async {
    /// let l = fibra::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// assert!(l.local_addr().unwrap().ip().is_loopback());
    /// # });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// Waits for a connection.
    ///
    /// Errors of the accepted socket (`ECONNABORTED`: the peer gave up while
    /// queued) and resource errors (`EMFILE`...) are returned; after a
    /// resource error the next accept first waits (see the type's docs), so
    /// an accept loop that logs errors and goes on does not spin.
    ///
    /// ```
    /// use fibra::net::{TcpListener, TcpStream};
    /// # fibra::run(async {
    /// let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let addr = l.local_addr().unwrap();
    /// let c = fibra::spawn(async move { TcpStream::connect(addr).await.unwrap() });
    /// let (s, peer) = l.accept().await.unwrap();
    /// assert_eq!(peer, c.await.unwrap().local_addr().unwrap());
    /// # drop(s);
    /// # });
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        Accepting::new(self).await
    }

    /// The op of [`accept`](Self::accept), for choices: a connection it
    /// accepts while another branch commits is kept for the next accept.
    ///
    /// ```
    /// use fibra::net::TcpListener;
    /// use fibra::{select, time::after};
    /// use std::time::Duration;
    /// # fibra::run(async {
    /// let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let got = select! {
    ///     c = l.accept_op() => Some(c),
    ///     () = after(Duration::from_millis(5)) => None,
    /// };
    /// assert!(got.is_none());
    /// # });
    /// ```
    pub fn accept_op(&self) -> AcceptOp<'_> {
        AcceptOp(IoOp::new(Accepting::new(self)))
    }

    /// How many connections wait in `kept`.
    #[cfg(all(test, not(loom)))]
    pub(super) fn kept_len(&self) -> usize {
        self.state().kept.len()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("local_addr", &self.local_addr().ok())
            .finish_non_exhaustive()
    }
}

/// One accept in progress: the listener, its wait key, and the back-off
/// timer if one is running.
pub(crate) struct Accepting<'a> {
    listener: &'a TcpListener,
    key: WaitKey,
    delay: Option<Pin<Box<crate::op::Perform<crate::time::After>>>>,
}

impl<'a> Accepting<'a> {
    fn new(listener: &'a TcpListener) -> Self {
        Accepting {
            listener,
            key: WaitKey::default(),
            delay: None,
        }
    }
}

impl Attempt for Accepting<'_> {
    type Output = io::Result<(TcpStream, SocketAddr)>;

    fn attempt(&mut self, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let l = self.listener;
        {
            let mut state = l.state();
            if let Some(kept) = state.kept.pop_front() {
                return Poll::Ready(Ok(kept));
            }
            if let Some(until) = state.backoff_until {
                if Instant::now() < until {
                    drop(state);
                    let delay = self.delay.get_or_insert_with(|| {
                        Box::pin(crate::op::Perform::new(crate::time::at(until)))
                    });
                    std::task::ready!(delay.as_mut().poll(cx));
                } else {
                    state.backoff_until = None;
                }
            }
        }
        self.delay = None;
        let accepted =
            std::task::ready!(l.io.poll_io(Direction::Read, &mut self.key, cx, |s| { s.accept() }));
        let mut state = l.state();
        Poll::Ready(match accepted {
            Ok((stream, peer)) => {
                state.backoff = Duration::ZERO;
                drop(state);
                TcpStream::accepted(&l.io, stream).map(|s| (s, peer))
            }
            Err(e) => {
                if is_resource_error(&e) {
                    let next = (state.backoff * 2).clamp(BACKOFF_MIN, BACKOFF_MAX);
                    state.backoff = next;
                    state.backoff_until = Some(Instant::now() + next);
                }
                Err(e)
            }
        })
    }

    fn keep(&mut self, out: Self::Output) {
        if let Ok(conn) = out {
            self.listener.state().kept.push_back(conn);
        }
    }

    fn cancel(&mut self) {
        self.listener.io.forget(Direction::Read, &mut self.key);
        self.delay = None;
    }
}

impl Future for Accepting<'_> {
    type Output = io::Result<(TcpStream, SocketAddr)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let r = this.attempt(cx);
        if r.is_ready() {
            this.cancel();
        }
        r
    }
}

impl Drop for Accepting<'_> {
    fn drop(&mut self) {
        self.listener.io.forget(Direction::Read, &mut self.key);
    }
}

socket_op! {
    /// The op of [`TcpListener::accept`]: made by
    /// [`TcpListener::accept_op`].
    ///
    /// ```
    /// # fibra::run(async {
    /// let l = fibra::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let op: fibra::net::AcceptOp<'_> = l.accept_op();
    /// # drop(op);
    /// # });
    /// ```
    AcceptOp<'a> = Accepting<'a> => io::Result<(TcpStream, SocketAddr)>
}
