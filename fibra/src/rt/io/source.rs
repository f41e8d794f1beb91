//! An I/O source registered with a runtime's driver: a mio socket and its
//! readiness slot, and the loop every socket call runs (wait until the
//! direction is ready, try the call, clear the readiness on `WouldBlock`).
//!
//! The source belongs to the runtime it was made in: its readiness comes
//! from that runtime's driver, whichever thread or executor waits on it.
//! Once that runtime shuts down, every call fails with
//! [`shutdown_error`](super::driver::shutdown_error); while a current-thread
//! runtime is outside its `block_on`, every wait fails with
//! [`paused_error`](super::driver::paused_error).

use super::driver::{Driver, Registration, paused_error, shutdown_error};
use super::readiness::{Direction, Seen, WaitKey};
use mio::Interest;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The error a wait that saw `seen` ends with, if its runtime shut down or
/// is a current-thread one outside its `block_on`.
fn ended(seen: Seen) -> Option<io::Error> {
    if seen.is_shutdown() {
        Some(shutdown_error())
    } else if seen.is_paused() {
        Some(paused_error())
    } else {
        None
    }
}

/// A registered mio source; deregistered before it is closed.
pub(crate) struct IoSource<S: mio::event::Source> {
    source: S,
    registration: Registration,
}

impl<S: mio::event::Source> IoSource<S> {
    /// Registers `source` with the current fibra runtime's driver.
    pub(crate) fn new(source: S, interest: Interest, what: &str) -> io::Result<Self> {
        let driver = crate::rt::current_io_driver(what)?;
        Self::with_driver(&driver, source, interest)
    }

    /// Registers `source` with the driver `self` belongs to (a connection
    /// accepted from a listener belongs to the listener's runtime,
    /// whichever thread accepts it).
    pub(crate) fn sibling<T: mio::event::Source>(
        &self,
        source: T,
        interest: Interest,
    ) -> io::Result<IoSource<T>> {
        IoSource::with_driver(self.registration.driver(), source, interest)
    }

    fn with_driver(driver: &Arc<Driver>, mut source: S, interest: Interest) -> io::Result<Self> {
        let registration = driver.register(&mut source, interest)?;
        Ok(IoSource {
            source,
            registration,
        })
    }

    /// The socket.
    pub(crate) fn get(&self) -> &S {
        &self.source
    }

    /// Runs `f` once `dir` is ready, again after every `WouldBlock`;
    /// `Pending` with the waker registered under `key` while not ready.
    pub(crate) fn poll_io<R>(
        &self,
        dir: Direction,
        key: &mut WaitKey,
        cx: &mut Context<'_>,
        f: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_drained(dir, key, cx, f, |_| false)
    }

    /// [`poll_io`](Self::poll_io), where a result for which `drained` is
    /// true also clears the readiness: a stream read that returned fewer
    /// bytes than asked emptied the socket's buffer, so the next read
    /// waits for the next edge instead of paying a system call to learn
    /// `WouldBlock`. Data arriving after the read makes a new edge (the
    /// clear is conditional on the tick, like any other).
    pub(crate) fn poll_io_drained<R>(
        &self,
        dir: Direction,
        key: &mut WaitKey,
        cx: &mut Context<'_>,
        mut f: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        let readiness = self.registration.readiness();
        loop {
            let seen = std::task::ready!(readiness.poll_ready(dir, key, cx));
            if let Some(e) = ended(seen) {
                return Poll::Ready(Err(e));
            }
            match f(&self.source) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => readiness.clear(dir, seen),
                Ok(r) => {
                    if drained(&r) {
                        readiness.clear(dir, seen);
                    }
                    return Poll::Ready(Ok(r));
                }
                r => return Poll::Ready(r),
            }
        }
    }

    /// Runs `f` now, whatever the readiness; a `WouldBlock` clears it.
    pub(crate) fn try_io<R>(
        &self,
        dir: Direction,
        f: impl FnOnce(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        let readiness = self.registration.readiness();
        let seen = readiness.peek(dir);
        if seen.is_some_and(|s| s.is_shutdown()) {
            return Err(shutdown_error());
        }
        let r = f(&self.source);
        if let (Err(e), Some(seen)) = (&r, seen) {
            if e.kind() == io::ErrorKind::WouldBlock {
                readiness.clear(dir, seen);
            }
        }
        r
    }

    /// Whether `dir` is ready; registers the waker under `key` if not.
    pub(crate) fn poll_ready(
        &self,
        dir: Direction,
        key: &mut WaitKey,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let seen = std::task::ready!(self.registration.readiness().poll_ready(dir, key, cx));
        Poll::Ready(ended(seen).map_or(Ok(()), Err))
    }

    /// Drops the waiter registered under `key` (a wait given up).
    pub(crate) fn forget(&self, dir: Direction, key: &mut WaitKey) {
        self.registration.readiness().forget(dir, key);
    }

    /// The future of a call: `f` until it does not block.
    pub(crate) fn io<R, F: FnMut(&S) -> io::Result<R>>(
        &self,
        dir: Direction,
        f: F,
    ) -> IoFuture<'_, S, F, R> {
        IoFuture {
            source: self,
            dir,
            key: WaitKey::default(),
            f,
            drained: (never, 0),
        }
    }

    /// The future of a stream read into `len` bytes: `f` until it does
    /// not block; a short read clears the readiness
    /// ([`poll_io_drained`](Self::poll_io_drained)).
    pub(crate) fn read_io<F: FnMut(&S) -> io::Result<usize>>(
        &self,
        len: usize,
        f: F,
    ) -> IoFuture<'_, S, F, usize> {
        IoFuture {
            source: self,
            dir: Direction::Read,
            key: WaitKey::default(),
            f,
            drained: (short_read, len),
        }
    }

    /// The future that is ready once `dir` is (`readable`, `writable`).
    pub(crate) fn ready(&self, dir: Direction) -> Ready<'_, S> {
        Ready {
            source: self,
            dir,
            key: WaitKey::default(),
        }
    }
}

impl<S: mio::event::Source> Drop for IoSource<S> {
    fn drop(&mut self) {
        self.registration.deregister(&mut self.source);
    }
}

/// Whether a read that returned `n` of `len` bytes emptied the socket:
/// `0 < n < len` (0 is the end of the stream, or an empty buffer).
pub(crate) fn short_read(n: &usize, len: usize) -> bool {
    *n > 0 && *n < len
}

/// No result proves the socket drained.
fn never<R>(_: &R, _: usize) -> bool {
    false
}

/// The future of [`IoSource::io`] and [`IoSource::read_io`].
pub(crate) struct IoFuture<'a, S: mio::event::Source, F, R> {
    source: &'a IoSource<S>,
    dir: Direction,
    key: WaitKey,
    f: F,
    /// Whether a result emptied the socket, given the second field.
    drained: (fn(&R, usize) -> bool, usize),
}

impl<S: mio::event::Source, R, F: FnMut(&S) -> io::Result<R> + Unpin> Future
    for IoFuture<'_, S, F, R>
{
    type Output = io::Result<R>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let this = self.get_mut();
        let (drained, len) = this.drained;
        let r = this
            .source
            .poll_io_drained(this.dir, &mut this.key, cx, &mut this.f, |r| {
                drained(r, len)
            });
        if r.is_ready() {
            this.source.forget(this.dir, &mut this.key);
        }
        r
    }
}

impl<S: mio::event::Source, F, R> Drop for IoFuture<'_, S, F, R> {
    fn drop(&mut self) {
        self.source.forget(self.dir, &mut self.key);
    }
}

/// The future of [`IoSource::ready`].
pub(crate) struct Ready<'a, S: mio::event::Source> {
    source: &'a IoSource<S>,
    dir: Direction,
    key: WaitKey,
}

impl<S: mio::event::Source> Ready<'_, S> {
    /// Polls for readiness (the op form's repoll uses it too).
    pub(crate) fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = self.source.poll_ready(self.dir, &mut self.key, cx);
        if r.is_ready() {
            self.source.forget(self.dir, &mut self.key);
        }
        r
    }
}

impl<S: mio::event::Source> Future for Ready<'_, S> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_ready(cx)
    }
}

impl<S: mio::event::Source> Drop for Ready<'_, S> {
    fn drop(&mut self) {
        self.source.forget(self.dir, &mut self.key);
    }
}
