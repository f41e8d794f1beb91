//! `time::interval`: ticks as ops, on schedule; a tick that loses a choice
//! or whose perform is dropped is not lost; the three behaviours for late
//! ticks; and ticks on fibra's runtime, tokio and OS threads.

mod common;

use common::{poll_noop, tokio_mt};
use fibra::time::{MissedTickBehavior, interval, interval_at};
use fibra::{Op, always, choose, choose_biased};
use std::pin::pin;
use std::time::{Duration, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn the_first_tick_is_at_once_and_the_next_ones_a_period_apart() {
    let start = Instant::now();
    let mut every = interval(ms(5));
    let first = every.tick_blocking();
    assert!(first <= Instant::now());
    let second = every.tick_blocking();
    let third = every.tick_blocking();
    assert_eq!(second, first + ms(5));
    assert_eq!(third, first + ms(10));
    assert!(Instant::now() >= third, "a tick came early");
    assert!(start.elapsed() >= ms(10));
}

#[test]
fn interval_at_starts_at_its_start() {
    let start = Instant::now() + ms(20);
    let mut every = interval_at(start, ms(5));
    assert!(every.tick_op().try_perform().is_err(), "not due yet");
    assert_eq!(every.tick_blocking(), start);
    assert!(Instant::now() >= start);
}

#[test]
fn a_tick_that_loses_a_choice_is_not_lost() {
    let mut every = interval(ms(50));
    // Due now, but the biased choice takes the first branch.
    let ticked = choose_biased((always(false), every.tick_op().wrap(|_| true))).perform();
    assert!(!ticked);
    let due = every.next_tick();
    assert_eq!(every.tick_op().try_perform().ok(), Some(due));
}

#[test]
fn a_tick_whose_perform_is_dropped_after_it_fired_is_not_lost() {
    let mut every = interval_at(Instant::now() + ms(2), ms(1_000));
    let due = every.next_tick();
    {
        let mut tick = pin!(every.tick());
        assert!(poll_noop(tick.as_mut()).is_pending()); // published in the wheel
        std::thread::sleep(ms(10)); // the timer fires: committed
        // Dropped without another poll: the commit is abandoned.
    }
    assert_eq!(every.next_tick(), due, "the interval moved without a tick");
    assert_eq!(every.tick_op().try_perform().ok(), Some(due));
}

#[test]
fn late_ticks_burst_by_default() {
    let mut every = interval(ms(5));
    let first = every.tick_blocking();
    std::thread::sleep(ms(18)); // the ticks at 5, 10 and 15 are missed
    for k in 1..=3 {
        assert_eq!(
            every.tick_op().try_perform().ok(),
            Some(first + ms(5) * k),
            "missed tick {k} is ready at once"
        );
    }
    assert_eq!(every.next_tick(), first + ms(20));
}

#[test]
fn late_ticks_delay_from_when_they_are_taken() {
    let mut every = interval(ms(5));
    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    every.tick_blocking();
    std::thread::sleep(ms(18));
    let before = Instant::now();
    assert!(
        every.tick_op().try_perform().is_ok(),
        "one late tick at once"
    );
    assert!(every.next_tick() >= before + ms(5), "then a full period");
}

#[test]
fn late_ticks_skip_to_the_schedule() {
    let mut every = interval(ms(5));
    every.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let first = every.tick_blocking();
    std::thread::sleep(ms(18));
    assert_eq!(every.tick_op().try_perform().ok(), Some(first + ms(5)));
    let next = every.next_tick();
    // On the original schedule, in the future.
    assert_eq!((next - first).as_nanos() % ms(5).as_nanos(), 0);
    assert!(next > Instant::now() - ms(1));
    assert!(next >= first + ms(20));
}

#[test]
fn reset_restarts_the_schedule_from_now() {
    let mut every = interval(ms(1_000));
    every.tick_blocking();
    std::thread::sleep(ms(2));
    let before = Instant::now();
    every.reset();
    assert!(every.next_tick() >= before + ms(1_000));
}

#[test]
fn ticks_in_a_choice_with_a_channel() {
    let (tx, rx) = fibra::unbounded();
    let producer = std::thread::spawn(move || {
        for i in 0..3 {
            std::thread::sleep(ms(6));
            tx.send_blocking(i).unwrap();
        }
    });
    let mut every = interval(ms(2));
    let (mut ticks, mut got) = (0, Vec::new());
    loop {
        let done = choose((
            rx.recv_op().wrap(|r| match r {
                Ok(v) => {
                    got.push(v);
                    false
                }
                Err(_) => true,
            }),
            every.tick_op().wrap(|_| {
                ticks += 1;
                false
            }),
        ))
        .perform();
        if done {
            break;
        }
    }
    producer.join().unwrap();
    assert_eq!(got, [0, 1, 2]);
    assert!(ticks >= 3, "ticks: {ticks}");
}

#[test]
fn ticks_on_fibra_and_tokio() {
    fibra::run(async {
        let mut every = interval(ms(1));
        let first = every.tick().await;
        let third = {
            every.tick().await;
            every.tick().await
        };
        assert_eq!(third, first + ms(2));
    });
    tokio_mt().block_on(async {
        let mut every = interval(ms(1));
        let first = every.tick().await;
        assert_eq!(every.tick().await, first + ms(1));
    });
}

#[test]
#[should_panic(expected = "period must be non-zero")]
fn a_zero_period_panics() {
    let _ = interval(Duration::ZERO);
}
