//! A runtime's I/O driver: one `mio::Poll` (epoll on Linux), the table of
//! registered sources and the waker that interrupts a worker sleeping in
//! the poll.
//!
//! Nobody owns the poll: a worker about to sleep takes it if it is free
//! (`try_poller`) and sleeps in `epoll_wait` instead of on its condvar
//! (`park.rs`), and a busy worker turns it without waiting every
//! `INJECTOR_INTERVAL` ticks (`worker.rs`). No thread is dedicated to I/O,
//! and a runtime that never opens a socket has no driver at all (it is
//! made at the first registration).
//!
//! # Invariants
//!
//! * A token names a slot of `sources` and its generation: an event for a
//!   source deregistered meanwhile (its slot freed or reused) finds a
//!   different generation and is dropped, never delivered to another
//!   source.
//! * Readiness is set and wakers woken after `sources`' lock is released
//!   (the poller collects the slots first).
//! * After `shutdown`, no registration succeeds and every slot registered
//!   before has `SHUTDOWN` set.

use super::readiness::{
    ERROR, PAUSED, READ_CLOSED, READABLE, Readiness, SHUTDOWN, WRITABLE, WRITE_CLOSED,
};
use mio::{Events, Interest, Poll, Registry, Token};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Duration;

/// The token of the driver's own waker.
const WAKER: Token = Token(usize::MAX);
/// Events taken per `epoll_wait`.
const EVENTS: usize = 1024;
const INDEX_BITS: u32 = 32;

/// See the module docs.
pub(crate) struct Driver {
    // Under loom no worker turns the poll (they park on their condvars:
    // `Worker::park`), so the poll and what turns it go unused there.
    #[cfg_attr(loom, allow(dead_code))]
    poller: Mutex<Poller>,
    registry: Registry,
    waker: mio::Waker,
    sources: Mutex<Sources>,
    shutdown: AtomicBool,
}

/// The poll and its buffers; whoever holds it turns the driver.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) struct Poller {
    poll: Poll,
    events: Events,
    ready: Vec<(Arc<Readiness>, usize)>,
}

#[derive(Default)]
struct Sources {
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// A current-thread runtime outside its `block_on` (`PAUSED`).
    paused: bool,
}

#[derive(Default)]
struct Slot {
    generation: u32,
    readiness: Option<Arc<Readiness>>,
}

/// A source's place in its driver; freed on drop. The I/O object that owns
/// it deregisters the source from the poll before dropping both.
pub(crate) struct Registration {
    driver: Arc<Driver>,
    token: Token,
    readiness: Arc<Readiness>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The error every I/O call returns once its runtime shut down.
pub(crate) fn shutdown_error() -> io::Error {
    io::Error::other("the fibra runtime this I/O object belongs to has shut down")
}

/// The error of a wait on a source whose current-thread runtime is not
/// running.
pub(crate) fn paused_error() -> io::Error {
    io::Error::other(
        "the current-thread fibra runtime this I/O object belongs to is not running (no \
         `block_on` in progress), so nothing polls its sockets: use the socket inside that \
         runtime's `block_on`, or make it on a multi-thread runtime",
    )
}

impl Driver {
    pub(crate) fn new() -> io::Result<Driver> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = mio::Waker::new(&registry, WAKER)?;
        Ok(Driver {
            poller: Mutex::new(Poller {
                poll,
                events: Events::with_capacity(EVENTS),
                ready: Vec::new(),
            }),
            registry,
            waker,
            sources: Mutex::default(),
            shutdown: AtomicBool::new(false),
        })
    }

    /// Registers `source` for `interest`, edge-triggered.
    pub(crate) fn register(
        self: &Arc<Self>,
        source: &mut impl mio::event::Source,
        interest: Interest,
    ) -> io::Result<Registration> {
        let readiness = Arc::new(Readiness::default());
        let token = {
            let mut sources = lock(&self.sources);
            // Under the lock, against `shutdown`'s sweep: a registration
            // either comes before it (and is swept) or sees the flag.
            if self.shutdown.load(Ordering::Relaxed) {
                return Err(shutdown_error());
            }
            let index = match sources.free.pop() {
                Some(i) => i,
                None => {
                    sources.slots.push(Slot::default());
                    sources.slots.len() - 1
                }
            };
            if index >= (1 << INDEX_BITS) - 1 {
                sources.free.push(index);
                return Err(io::Error::other(
                    "fibra: too many I/O sources in one runtime",
                ));
            }
            if sources.paused {
                // Not shared yet: a plain event on our own slot.
                readiness.set(PAUSED);
            }
            let slot = &mut sources.slots[index];
            slot.readiness = Some(readiness.clone());
            Token(((slot.generation as usize) << INDEX_BITS) | index)
        };
        let registration = Registration {
            driver: self.clone(),
            token,
            readiness,
        };
        // On error the registration's drop frees the slot.
        self.registry.register(source, token, interest)?;
        Ok(registration)
    }

    /// The poll, if no other thread is turning it.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn try_poller(&self) -> Option<MutexGuard<'_, Poller>> {
        match self.poller.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Interrupts the thread sleeping in the poll (an unpark, `park.rs`).
    pub(crate) fn wake(&self) {
        // An error would mean the eventfd is gone or full: full still
        // wakes the poll, and gone cannot happen while `self` lives.
        let _ = self.waker.wake();
    }

    /// Marks every source shut down and wakes its waiters; later
    /// registrations fail.
    pub(crate) fn shutdown(&self) {
        let all: Vec<Arc<Readiness>> = {
            let sources = lock(&self.sources);
            self.shutdown.store(true, Ordering::Relaxed);
            sources
                .slots
                .iter()
                .filter_map(|s| s.readiness.clone())
                .collect()
        };
        for r in all {
            r.set(SHUTDOWN);
        }
        self.wake();
    }

    /// A current-thread runtime leaves (`true`) or enters (`false`) its
    /// `block_on`: while it is out nobody turns the poll, so every wait on
    /// its sources ends at once with an error (`PAUSED`) instead of hanging.
    pub(crate) fn pause(&self, paused: bool) {
        let all: Vec<Arc<Readiness>> = {
            let mut sources = lock(&self.sources);
            sources.paused = paused;
            sources
                .slots
                .iter()
                .filter_map(|s| s.readiness.clone())
                .collect()
        };
        for r in all {
            if paused {
                r.set(PAUSED);
            } else {
                r.unpause();
            }
        }
    }

    /// Waits for events up to `timeout` (`None`: until one comes or the
    /// driver is woken) and delivers them; returns how many sources got
    /// one.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn turn(&self, poller: &mut Poller, timeout: Option<Duration>) -> usize {
        let Poller {
            poll,
            events,
            ready,
        } = poller;
        if let Err(e) = poll.poll(events, timeout) {
            // EINTR: a signal; the caller looks for work and comes back.
            debug_assert_eq!(e.kind(), io::ErrorKind::Interrupted, "epoll_wait: {e}");
            return 0;
        }
        {
            let sources = lock(&self.sources);
            for event in events.iter() {
                let token = event.token();
                if token == WAKER {
                    continue;
                }
                let index = token.0 & ((1 << INDEX_BITS) - 1);
                let generation = (token.0 >> INDEX_BITS) as u32;
                let Some(slot) = sources.slots.get(index) else {
                    continue;
                };
                let Some(readiness) = slot
                    .readiness
                    .as_ref()
                    .filter(|_| slot.generation == generation)
                else {
                    // Deregistered since the kernel queued the event.
                    continue;
                };
                let mut bits = 0;
                if event.is_readable() {
                    bits |= READABLE;
                }
                if event.is_writable() {
                    bits |= WRITABLE;
                }
                if event.is_read_closed() {
                    bits |= READ_CLOSED;
                }
                if event.is_write_closed() {
                    bits |= WRITE_CLOSED;
                }
                if event.is_error() {
                    bits |= ERROR;
                }
                ready.push((readiness.clone(), bits));
            }
        }
        let n = ready.len();
        for (readiness, bits) in ready.drain(..) {
            readiness.set(bits);
        }
        n
    }
}

impl Registration {
    pub(crate) fn driver(&self) -> &Arc<Driver> {
        &self.driver
    }

    pub(crate) fn readiness(&self) -> &Readiness {
        &self.readiness
    }

    /// Removes `source` from the poll (before it is closed).
    pub(crate) fn deregister(&self, source: &mut impl mio::event::Source) {
        // It fails only if the source was never registered, or the fd is
        // closed: nothing left to undo either way.
        let _ = self.driver.registry.deregister(source);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let index = self.token.0 & ((1 << INDEX_BITS) - 1);
        let mut sources = lock(&self.driver.sources);
        if let Some(slot) = sources.slots.get_mut(index) {
            slot.readiness = None;
            slot.generation = slot.generation.wrapping_add(1);
            sources.free.push(index);
        }
    }
}
