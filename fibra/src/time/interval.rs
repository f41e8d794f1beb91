//! [`Interval`]: a periodic tick whose wait is an op.
//!
//! An interval keeps the deadline of its next tick. [`Interval::tick_op`]
//! is the time op [`at`](super::at) that deadline, which, when it commits,
//! moves the deadline on by one period (or more: see
//! [`MissedTickBehavior`]). The deadline moves only in the commit's result:
//! a tick op that loses a choice, or whose perform is dropped, leaves it
//! where it was, so that tick is not lost: the next `tick_op` yields it.

use super::{After, at, far_future};
use crate::op::{BlockCx, Op, Perform, sealed::Sealed};
use std::pin::Pin;
use std::time::{Duration, Instant};

/// What an [`Interval`] does when ticks are late: the program was busy (or
/// waiting elsewhere) past the time of the next tick as well.
///
/// A tick is *late* when it is taken at or after the deadline of the tick
/// that follows it. On time, the next deadline is one period after this
/// one, whatever the behaviour.
///
/// ```
/// use fibra::time::{MissedTickBehavior, interval};
/// use std::time::Duration;
///
/// let mut every = interval(Duration::from_millis(10));
/// every.set_missed_tick_behavior(MissedTickBehavior::Skip);
/// assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Skip);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissedTickBehavior {
    /// Catch up: the missed ticks are ready at once, one after another,
    /// until the interval is back on its schedule (tokio's default). Every
    /// tick of the schedule is yielded; none is dropped.
    #[default]
    Burst,
    /// Start again from now: the next tick is one period after the late one
    /// was taken. The schedule shifts; the missed ticks are not yielded.
    Delay,
    /// Keep the schedule, drop the missed ticks: the next tick is the first
    /// one of the original schedule still in the future.
    Skip,
}

/// A periodic tick: made by [`interval`] or [`interval_at`]. Wait for the
/// next tick with [`tick_op`](Self::tick_op) (an op, for choices),
/// [`tick`](Self::tick) (async) or [`tick_blocking`](Self::tick_blocking)
/// (OS threads); each yields the instant the tick was due.
///
/// ```
/// use fibra::{Op, time};
/// use std::time::Duration;
///
/// let (tx, rx) = fibra::unbounded();
/// std::thread::spawn(move || {
///     for i in 0..3 {
///         std::thread::sleep(Duration::from_millis(4));
///         tx.try_send(i).unwrap();
///     }
/// });
/// let mut heartbeat = time::interval(Duration::from_millis(2));
/// let (mut beats, mut got) = (0, Vec::new());
/// while got.len() < 3 {
///     fibra::choose((
///         rx.recv_op().wrap(|v| got.push(v.unwrap())),
///         heartbeat.tick_op().wrap(|_| beats += 1),
///     ))
///     .perform();
/// }
/// assert_eq!(got, [0, 1, 2]);
/// assert!(beats >= 1); // the first tick is at once
/// ```
#[derive(Debug)]
pub struct Interval {
    next: Instant,
    period: Duration,
    missed: MissedTickBehavior,
}

/// An interval whose first tick is now and then one every `period`
/// (tokio's `time::interval`).
///
/// # Panics
///
/// If `period` is zero.
///
/// ```
/// use fibra::time::interval;
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// let mut every = interval(Duration::from_millis(3));
/// every.tick_blocking(); // at once
/// every.tick_blocking();
/// every.tick_blocking();
/// assert!(start.elapsed() >= Duration::from_millis(6));
/// ```
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// An interval whose first tick is at `start` and then one every `period`.
///
/// # Panics
///
/// If `period` is zero.
///
/// ```
/// use fibra::time::interval_at;
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now() + Duration::from_millis(2);
/// let mut every = interval_at(start, Duration::from_millis(2));
/// assert_eq!(every.tick_blocking(), start);
/// assert!(Instant::now() >= start);
/// ```
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(!period.is_zero(), "an interval's period must be non-zero");
    Interval {
        next: start,
        period,
        missed: MissedTickBehavior::default(),
    }
}

impl Interval {
    /// The op of waiting for the next tick: commits when it is due,
    /// yielding the instant it was due, and then moves the interval on. If
    /// it loses a choice (or its perform is dropped), the interval does not
    /// move: the next `tick_op` yields the same tick.
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased, time::interval};
    /// use std::time::Duration;
    ///
    /// let mut every = interval(Duration::from_secs(60));
    /// let first = every.tick_op().perform(); // at once
    /// // Not due for a minute: the fallback wins, and the tick stays.
    /// let ticked = choose_biased((every.tick_op().wrap(|_| true), always(false))).perform();
    /// assert!(!ticked);
    /// assert_eq!(every.next_tick(), first + Duration::from_secs(60));
    /// ```
    pub fn tick_op(&mut self) -> TickOp<'_> {
        let after = at(self.next);
        TickOp {
            interval: self,
            after,
        }
    }

    /// Waits for the next tick; see [`tick_op`](Self::tick_op).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// fibra::run(async {
    ///     let mut every = fibra::time::interval(Duration::from_millis(1));
    ///     for _ in 0..3 {
    ///         every.tick().await;
    ///     }
    /// });
    /// ```
    pub fn tick(&mut self) -> Perform<TickOp<'_>> {
        Perform::new(self.tick_op())
    }

    /// Waits for the next tick, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let mut every = fibra::time::interval(std::time::Duration::from_millis(1));
    /// every.tick_blocking();
    /// ```
    pub fn tick_blocking(&mut self) -> Instant {
        self.tick_op().perform()
    }

    /// When the next tick is due.
    ///
    /// ```
    /// use fibra::time::interval_at;
    /// use std::time::{Duration, Instant};
    ///
    /// let start = Instant::now();
    /// assert_eq!(interval_at(start, Duration::from_secs(1)).next_tick(), start);
    /// ```
    pub fn next_tick(&self) -> Instant {
        self.next
    }

    /// Restarts the schedule: the next tick is one period from now.
    ///
    /// ```
    /// use fibra::time::interval;
    /// use std::time::{Duration, Instant};
    ///
    /// let mut every = interval(Duration::from_secs(1));
    /// every.reset();
    /// assert!(every.next_tick() > Instant::now());
    /// ```
    pub fn reset(&mut self) {
        self.next = add(Instant::now(), self.period);
    }

    /// The period.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let every = fibra::time::interval(Duration::from_secs(1));
    /// assert_eq!(every.period(), Duration::from_secs(1));
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What the interval does when ticks are late.
    ///
    /// ```
    /// use fibra::time::{MissedTickBehavior, interval};
    ///
    /// let every = interval(std::time::Duration::from_secs(1));
    /// assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what the interval does when ticks are late.
    ///
    /// ```
    /// use fibra::time::{MissedTickBehavior, interval};
    ///
    /// let mut every = interval(std::time::Duration::from_secs(1));
    /// every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    /// ```
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }

    /// The tick due at `self.next` was taken at `now`: move on, and yield
    /// the instant it was due.
    fn advance(&mut self, now: Instant) -> Instant {
        let due = self.next;
        let following = add(due, self.period);
        self.next = if now < following {
            following
        } else {
            match self.missed {
                MissedTickBehavior::Burst => following,
                MissedTickBehavior::Delay => add(now, self.period),
                MissedTickBehavior::Skip => {
                    // The first tick of the schedule after `now`.
                    let late = now.duration_since(due).as_nanos();
                    let period = self.period.as_nanos();
                    let periods = late / period + 1;
                    match u32::try_from(periods)
                        .ok()
                        .and_then(|n| self.period.checked_mul(n))
                    {
                        Some(d) => add(due, d),
                        None => add(now, self.period),
                    }
                }
            }
        };
        due
    }
}

/// `t + d`, or a far future instead of overflowing.
fn add(t: Instant, d: Duration) -> Instant {
    t.checked_add(d).unwrap_or_else(far_future)
}

/// The op of waiting for an [`Interval`]'s next tick: made by
/// [`Interval::tick_op`]. Yields the instant the tick was due.
///
/// ```
/// use fibra::{Op, time};
///
/// let mut every = time::interval(std::time::Duration::from_millis(1));
/// let op: time::TickOp<'_> = every.tick_op();
/// op.perform();
/// ```
#[derive(Debug)]
#[must_use = "an op does nothing unless performed"]
pub struct TickOp<'a> {
    interval: &'a mut Interval,
    after: After,
}

impl TickOp<'_> {
    fn parts(self: Pin<&mut Self>) -> (&mut Interval, Pin<&mut After>) {
        // `TickOp` is `Unpin`: a reference and an `After` (which is).
        let this = self.get_mut();
        (this.interval, Pin::new(&mut this.after))
    }
}

impl Sealed for TickOp<'_> {}

impl Op for TickOp<'_> {
    type Output = Instant;

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.parts().1.repoll(cx);
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Instant> {
        let (interval, after) = self.parts();
        after.try_now()?;
        Some(interval.advance(Instant::now()))
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.parts().1.block(cx);
    }

    fn finish(self: Pin<&mut Self>, leaf: usize) -> Instant {
        let (interval, after) = self.parts();
        after.finish(leaf);
        interval.advance(Instant::now())
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        // The tick stays due: the interval does not move.
        self.parts().1.abandon(leaf);
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.parts().1.withdraw();
    }
}

crate::op::op_into_future! {
    impl['a] TickOp<'a>;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn at_ms(start: Instant, behavior: MissedTickBehavior) -> Interval {
        let mut i = interval_at(start, ms(10));
        i.set_missed_tick_behavior(behavior);
        i
    }

    #[test]
    fn on_time_ticks_follow_the_schedule_whatever_the_behaviour() {
        let t0 = Instant::now();
        for b in [
            MissedTickBehavior::Burst,
            MissedTickBehavior::Delay,
            MissedTickBehavior::Skip,
        ] {
            let mut i = at_ms(t0, b);
            assert_eq!(i.advance(t0 + ms(3)), t0);
            assert_eq!(i.next_tick(), t0 + ms(10), "{b:?}");
            assert_eq!(i.advance(t0 + ms(19)), t0 + ms(10));
            assert_eq!(i.next_tick(), t0 + ms(20), "{b:?}");
        }
    }

    #[test]
    fn late_ticks_burst_delay_or_skip() {
        let t0 = Instant::now();
        // Taken 35 ms late: the ticks at 10, 20 and 30 were missed.
        let now = t0 + ms(35);

        let mut burst = at_ms(t0, MissedTickBehavior::Burst);
        let due: Vec<Instant> = (0..4).map(|_| burst.advance(now)).collect();
        assert_eq!(due, [t0, t0 + ms(10), t0 + ms(20), t0 + ms(30)]);
        assert_eq!(burst.next_tick(), t0 + ms(40));

        let mut delay = at_ms(t0, MissedTickBehavior::Delay);
        assert_eq!(delay.advance(now), t0);
        assert_eq!(delay.next_tick(), now + ms(10));

        let mut skip = at_ms(t0, MissedTickBehavior::Skip);
        assert_eq!(skip.advance(now), t0);
        assert_eq!(skip.next_tick(), t0 + ms(40));
        // Exactly on a tick of the schedule: that one counts as missed too.
        let mut skip = at_ms(t0, MissedTickBehavior::Skip);
        skip.advance(t0 + ms(30));
        assert_eq!(skip.next_tick(), t0 + ms(40));
    }
}
