//! Time as ops: [`after`], [`at`], [`sleep`], [`timeout`] and periodic
//! ticks ([`interval`]).
//!
//! Time ops are first-class: use them in any choice, with the same
//! cancellation guarantees as channel ops. They work everywhere — fibra's
//! runtime, other executors, plain OS threads — through one process-wide
//! timer thread driving a hashed timer wheel (`wheel.rs`: O(1) insert and
//! cancel). A time op commits at its deadline, never early, and late only
//! by the timer thread's wake-up (tens of microseconds when the machine is
//! idle): the wheel's slots are a millisecond wide, but the thread sleeps
//! until the earliest exact deadline.
//!
//! ```
//! use fibra::{Op, choose, time};
//! use std::time::Duration;
//!
//! let (_tx, rx) = fibra::channel::<u32>();
//! // Wait for a message, but not for more than 10 ms.
//! let got = choose((
//!     rx.recv_op().wrap(|r| r.ok()),
//!     time::after(Duration::from_millis(10)).wrap(|()| None),
//! ))
//! .perform();
//! assert_eq!(got, None);
//! ```

mod interval;
mod wheel;

pub use interval::{Interval, MissedTickBehavior, TickOp, interval, interval_at};

use crate::op::{BlockCx, Choose, Op, Perform, Wrap, choose_biased, sealed::Sealed};
use std::fmt;
use std::pin::Pin;
use std::time::{Duration, Instant};
use wheel::{TimerKey, driver};

/// An op that commits once `deadline` has passed: made by [`after`] and
/// [`at`].
///
/// ```
/// use fibra::{Op, time::after};
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// let op: fibra::time::After = after(Duration::from_millis(2));
/// op.perform();
/// assert!(start.elapsed() >= Duration::from_millis(2));
/// ```
#[derive(Debug)]
#[must_use = "an op does nothing unless performed"]
pub struct After {
    deadline: Instant,
    published: Option<TimerKey>,
}

/// The op that commits `d` from now (CML's `timeOutEvt`). The clock starts
/// when `after` is called, not when the op is performed.
///
/// ```
/// use fibra::{Op, time::after};
/// use std::time::{Duration, Instant};
///
/// let t = Instant::now();
/// after(Duration::from_millis(5)).perform();
/// assert!(t.elapsed() >= Duration::from_millis(5));
/// ```
pub fn after(d: Duration) -> After {
    at(Instant::now().checked_add(d).unwrap_or_else(far_future))
}

/// The op that commits at `deadline` (CML's `atTimeEvt`); at once if it
/// has passed.
///
/// ```
/// use fibra::{Op, time::at};
/// use std::time::Instant;
///
/// assert!(at(Instant::now()).try_perform().is_ok());
/// ```
pub fn at(deadline: Instant) -> After {
    After {
        deadline,
        published: None,
    }
}

fn far_future() -> Instant {
    // About 30 years: effectively never, without overflowing `Instant`.
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

/// Waits for `d`, without blocking the thread: the future of performing
/// [`after`]`(d)`.
///
/// ```
/// use std::time::Duration;
///
/// fibra::run(async {
///     fibra::time::sleep(Duration::from_millis(2)).await;
/// });
/// ```
pub fn sleep(d: Duration) -> Perform<After> {
    Perform::new(after(d))
}

impl After {
    /// When the op commits.
    ///
    /// ```
    /// use fibra::time::after;
    /// use std::time::{Duration, Instant};
    ///
    /// let op = after(Duration::from_secs(1));
    /// assert!(op.deadline() > Instant::now());
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl Sealed for After {}
impl Unpin for After {}

impl Op for After {
    type Output = ();

    // Committed by its partners, never woken to look again.
    fn repoll(self: Pin<&mut Self>, _cx: BlockCx<'_>) {}

    fn looks_again(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<()> {
        (Instant::now() >= self.deadline).then_some(())
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let this = self.get_mut();
        this.published = Some(driver().insert(this.deadline, cx));
        // The record is published; a deadline reached meanwhile is fired by
        // the driver's next pass (it always looks at past ticks).
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) {
        // The driver removed our entry when it fired.
        self.get_mut().published = None;
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        self.finish(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        if let Some(key) = self.get_mut().published.take() {
            driver().cancel(key);
        }
    }
}

crate::op::op_into_future! {
    impl[] After;
}

/// The error of a [`timeout`] whose time ran out first.
///
/// ```
/// use fibra::Op;
/// use fibra::time::{Elapsed, timeout};
/// use std::time::Duration;
///
/// let (_tx, rx) = fibra::channel::<u8>();
/// let got = timeout(rx.recv_op(), Duration::from_millis(1)).perform();
/// assert_eq!(got, Err(Elapsed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline elapsed")
    }
}

impl std::error::Error for Elapsed {}

type Ok<T> = fn(T) -> Result<T, Elapsed>;
type Late<T> = fn(()) -> Result<T, Elapsed>;
/// The choice a `Timeout` is made of: the op first, then the deadline.
type TimeoutChoice<O> = Choose<(
    Wrap<O, Ok<<O as Op>::Output>>,
    Wrap<After, Late<<O as Op>::Output>>,
)>;

/// The op returned by [`timeout`].
///
/// ```
/// use fibra::{Op, time::timeout};
/// use std::time::Duration;
///
/// let (tx, rx) = fibra::bounded::<u8>(1);
/// tx.try_send(1).unwrap();
/// let op: fibra::time::Timeout<_> = timeout(rx.recv_op(), Duration::from_secs(5));
/// assert_eq!(op.perform(), Ok(Ok(1)));
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct Timeout<O: Op> {
    inner: TimeoutChoice<O>,
}

/// `op`, unless `d` passes first: then `Err(Elapsed)` and `op` is withdrawn
/// (nothing it carried is lost: a value it had received goes back to its
/// channel if the perform is dropped). If both are ready, `op` wins.
///
/// ```
/// use fibra::{Op, time::{Elapsed, timeout}};
/// use std::time::Duration;
///
/// let (tx, rx) = fibra::bounded::<u8>(1);
/// assert_eq!(timeout(rx.recv_op(), Duration::from_millis(5)).perform(), Err(Elapsed));
/// tx.try_send(1).unwrap();
/// assert_eq!(timeout(rx.recv_op(), Duration::from_millis(5)).perform(), Ok(Ok(1)));
/// ```
pub fn timeout<O: Op>(op: O, d: Duration) -> Timeout<O> {
    Timeout {
        inner: choose_biased((
            op.wrap(Ok as Ok<O::Output>),
            after(d).wrap((|()| Err(Elapsed)) as Late<O::Output>),
        )),
    }
}

impl<O: Op> Sealed for Timeout<O> {}

impl<O: Op> Timeout<O> {
    fn inner(self: Pin<&mut Self>) -> Pin<&mut TimeoutChoice<O>> {
        // SAFETY: `inner` is structurally pinned and never moved.
        unsafe { self.map_unchecked_mut(|t| &mut t.inner) }
    }
}

impl<O: Op> Timeout<O> {
    /// The timed op, pinned (to recover what it holds after a timeout).
    pub(crate) fn op(self: Pin<&mut Self>) -> Pin<&mut O> {
        // SAFETY: tuple fields are structurally pinned; nothing is moved.
        let first = unsafe { self.inner().branches().map_unchecked_mut(|b| &mut b.0) };
        first.inner()
    }
}

impl<O: Op> Op for Timeout<O> {
    type Output = Result<O::Output, Elapsed>;

    fn leaves(&self) -> usize {
        self.inner.leaves()
    }

    fn prepare(self: Pin<&mut Self>) {
        self.inner().prepare();
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Self::Output> {
        self.inner().try_now()
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.inner().block(cx);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.inner().repoll(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> Self::Output {
        self.inner().finish(leaf)
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        self.inner().abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.inner().withdraw();
    }
}

crate::op::op_into_future! {
    impl[O: Op] Timeout<O>;
}
