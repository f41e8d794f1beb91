//! hyper's runtime traits on fibra (feature `hyper`): an executor that
//! spawns on a fibra runtime and a timer on fibra's time ops. With them,
//! and `TcpStream`'s `hyper::rt::{Read, Write}`, hyper's servers and
//! clients run on fibra unchanged.

use crate::rt::Handle;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// hyper's `Executor` on fibra: spawns each future as a fibra task, on the
/// runtime given ([`HyperExecutor::new`]) or on the current one
/// ([`HyperExecutor::current`], the default).
///
/// ```
/// use fibra::net::HyperExecutor;
/// use hyper::rt::Executor;
///
/// # fibra::run(async {
/// let (tx, rx) = fibra::channel::<u32>();
/// HyperExecutor::current().execute(async move { tx.send(1).await.unwrap() });
/// assert_eq!(rx.recv().await.unwrap(), 1);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct HyperExecutor {
    handle: Option<Handle>,
}

impl HyperExecutor {
    /// Spawns on `handle`'s runtime.
    ///
    /// ```
    /// let rt = fibra::Runtime::new().unwrap();
    /// let exec = fibra::net::HyperExecutor::new(rt.handle());
    /// # drop(exec);
    /// ```
    pub fn new(handle: Handle) -> Self {
        HyperExecutor {
            handle: Some(handle),
        }
    }

    /// Spawns on the runtime of the task that calls `execute` (it panics,
    /// as `fibra::spawn` does, if called outside a fibra runtime).
    ///
    /// ```
    /// let exec = fibra::net::HyperExecutor::current();
    /// # drop(exec);
    /// ```
    pub fn current() -> Self {
        HyperExecutor { handle: None }
    }
}

impl<F> hyper::rt::Executor<F> for HyperExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        match &self.handle {
            Some(h) => drop(h.spawn(fut)),
            None => drop(crate::rt::spawn(fut)),
        }
    }
}

/// hyper's `Timer` on fibra's timer wheel (`fibra::time`).
///
/// ```
/// use fibra::net::HyperTimer;
/// use hyper::rt::Timer;
/// use std::time::Duration;
///
/// # fibra::run(async {
/// HyperTimer.sleep(Duration::from_millis(1)).await;
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct HyperTimer;

impl hyper::rt::Timer for HyperTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(Sleep(crate::time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(Sleep(crate::op::Perform::new(crate::time::at(deadline))))
    }
}

/// A fibra sleep as hyper's `Sleep`.
struct Sleep(crate::op::Perform<crate::time::After>);

// SAFETY: a shared `&Sleep` gives access to nothing (no method takes
// `&self`); the perform inside is only reached through `Pin<&mut Sleep>`
// (`poll`), which is exclusive. So sharing `&Sleep` between threads cannot
// race, whatever the perform holds.
unsafe impl Sync for Sleep {}

impl hyper::rt::Sleep for Sleep {}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: structural pinning: the perform is never moved out of
        // `Sleep`, which has no `Drop` and is not `Unpin`-projected
        // elsewhere.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }.poll(cx)
    }
}
