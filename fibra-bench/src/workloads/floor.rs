//! The `floor` reference row of `fibers/ping-pong` (one pair): the least a
//! single-threaded executor can spend on a round trip between two futures.
//!
//! A hand-rolled executor polls exactly two futures, each woken by a flag;
//! the futures hand a value back and forth through two one-value slots
//! (`Cell` + the waiting side's `Waker`). No task allocation, no queue, no
//! atomics beyond the wake flags, no channel protocol: what is left is the
//! cost of `poll`, `Waker` clone/wake and the hand-off itself, the floor
//! that fibra's ping-pong on `fibra-ct` is compared against.

use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// A one-value slot between one putter and one taker. At most one side
/// waits at a time (the putter when it is full, the taker when it is
/// empty), so one waker suffices.
#[derive(Default)]
struct Slot {
    value: Cell<Option<u64>>,
    waiter: RefCell<Option<Waker>>,
}

impl Slot {
    fn wait(&self, cx: &Context<'_>) {
        let mut waiter = self.waiter.borrow_mut();
        match &*waiter {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *waiter = Some(cx.waker().clone()),
        }
    }

    fn wake_other(&self) {
        if let Some(w) = self.waiter.borrow_mut().take() {
            w.wake();
        }
    }

    /// Puts `v` once the slot is empty.
    fn put(&self, v: u64) -> impl Future<Output = ()> + '_ {
        poll_fn(move |cx| {
            if self.value.get().is_some() {
                self.wait(cx);
                return Poll::Pending;
            }
            self.value.set(Some(v));
            self.wake_other();
            Poll::Ready(())
        })
    }

    /// Takes the value once there is one.
    fn take(&self) -> impl Future<Output = u64> + '_ {
        poll_fn(move |cx| match self.value.take() {
            Some(v) => {
                self.wake_other();
                Poll::Ready(v)
            }
            None => {
                self.wait(cx);
                Poll::Pending
            }
        })
    }
}

/// A task's "runnable" flag: waking sets it, the executor clears it before
/// polling.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// Polls `main` and `helper` whenever woken until `main` finishes; returns
/// its output (the helper is dropped unfinished).
fn run_pair(main: impl Future<Output = u64>, helper: impl Future<Output = ()>) -> u64 {
    let (mut main, mut helper) = (pin!(main), pin!(helper));
    let main_flag = Arc::new(Flag(AtomicBool::new(true)));
    let helper_flag = Arc::new(Flag(AtomicBool::new(true)));
    let main_waker = Waker::from(main_flag.clone());
    let helper_waker = Waker::from(helper_flag.clone());
    let mut main_cx = Context::from_waker(&main_waker);
    let mut helper_cx = Context::from_waker(&helper_waker);
    loop {
        let mut polled = false;
        if main_flag.0.swap(false, Ordering::Acquire) {
            polled = true;
            if let Poll::Ready(out) = main.as_mut().poll(&mut main_cx) {
                return out;
            }
        }
        if helper_flag.0.swap(false, Ordering::Acquire) {
            polled = true;
            let _ = helper.as_mut().poll(&mut helper_cx);
        }
        assert!(polled, "floor: both futures wait: deadlock");
    }
}

/// One pair, `round_trips` round trips: the pinger puts `i`, the ponger
/// takes it and puts back `i + 1`; returns the sum of the replies.
pub fn ping_pong(round_trips: u64) -> u64 {
    let ping = Slot::default();
    let pong = Slot::default();
    let pinger = async {
        let mut sum = 0;
        for i in 0..round_trips {
            ping.put(i).await;
            sum += pong.take().await;
        }
        sum
    };
    let ponger = async {
        loop {
            let v = ping.take().await;
            pong.put(v + 1).await;
        }
    };
    run_pair(pinger, ponger)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_add_one_each() {
        assert_eq!(ping_pong(0), 0);
        assert_eq!(ping_pong(1), 1);
        assert_eq!(ping_pong(100), 100 * 101 / 2);
    }
}
