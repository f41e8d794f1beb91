//! loom models of the op combinators (see `chan/loom_models.rs`).

use crate::loom::{model, thread};
use crate::{Nack, Op, channel, choose, with_nack};

#[test]
fn loom_with_nack_fires_iff_branch_lost() {
    // The receiver's branch on A is built with a nack; the sender offers A or
    // B. Whichever commits, the nack is fired exactly when B won.
    model(|| {
        let (a_tx, a_rx) = channel::<u32>();
        let (b_tx, b_rx) = channel::<u32>();
        let sender = thread::spawn(move || {
            choose((a_tx.send_op(1), b_tx.send_op(2)))
                .perform()
                .unwrap();
        });
        let mut nack: Option<Nack> = None;
        let got = choose((
            with_nack(|n| {
                nack = Some(n);
                a_rx.recv_op()
            }),
            b_rx.recv_op(),
        ))
        .perform()
        .unwrap();
        let nack = nack.expect("builder ran at perform time");
        assert_eq!(nack.is_fired(), got == 2, "got {got}");
        sender.join().unwrap();
    });
}

#[test]
fn loom_nack_wakes_a_waiting_server() {
    // A server blocks on the nack of a client's branch; the client's other
    // branch wins; the server must be woken.
    model(|| {
        let (b_tx, b_rx) = channel::<u32>();
        let (nack_tx, nack_rx) = crate::bounded::<Nack>(1);
        let client = thread::spawn(move || {
            choose((
                with_nack(|n| {
                    nack_tx.try_send(n).unwrap();
                    crate::never::<u32>()
                }),
                b_rx.recv_op().wrap(Result::unwrap),
            ))
            .perform()
        });
        let nack = nack_rx.recv_blocking().unwrap();
        let server = thread::spawn(move || nack.perform());
        b_tx.send_blocking(4).unwrap();
        assert_eq!(client.join().unwrap(), 4);
        server.join().unwrap();
    });
}

/// A future completed by another thread: ready with 7 once `done` is set
/// (the setter wakes the waker it finds).
struct SetLater(
    crate::loom::Arc<(
        crate::loom::AtomicBool,
        crate::loom::Mutex<Option<std::task::Waker>>,
    )>,
);

impl std::future::Future for SetLater {
    type Output = u32;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<u32> {
        use crate::loom::Ordering;
        let (done, waker) = &*self.0;
        // Acquire: pairs with the setter's Release store.
        if done.load(Ordering::Acquire) {
            return std::task::Poll::Ready(7);
        }
        *crate::loom::lock(waker) = Some(cx.waker().clone());
        if done.load(Ordering::Acquire) {
            std::task::Poll::Ready(7)
        } else {
            std::task::Poll::Pending
        }
    }
}

#[test]
fn loom_future_op_keeps_an_output_that_loses_the_race() {
    // A choice between a receive (a value sent by one thread) and a
    // `FutureCell` (its future completed by another): one branch commits;
    // the other's value is not lost: the sent value stays in the channel,
    // or the future's output waits in the cell (or comes from the future).
    model(|| {
        use crate::loom::{Arc, AtomicBool, Mutex, Ordering, lock};
        let (tx, rx) = crate::bounded::<u32>(1);
        let flag = Arc::new((AtomicBool::new(false), Mutex::new(None::<std::task::Waker>)));
        let setter = {
            let flag = flag.clone();
            thread::spawn(move || {
                flag.0.store(true, Ordering::Release);
                if let Some(w) = lock(&flag.1).take() {
                    w.wake();
                }
            })
        };
        let sender = thread::spawn(move || {
            tx.try_send(1).unwrap();
            tx
        });
        let mut cell = super::FutureCell::new(SetLater(flag));
        let got = choose((
            rx.recv_op().wrap(|r| (Some(r.unwrap()), None)),
            cell.op().wrap(|v| (None, Some(v))),
        ))
        .perform();
        setter.join().unwrap();
        let _tx = sender.join().unwrap();
        match got {
            (Some(1), None) => {
                // The future's output: kept in the cell, or the future is
                // ready now (its setter has run).
                assert_eq!(cell.op().try_perform().ok(), Some(7));
            }
            (None, Some(7)) => assert_eq!(rx.try_recv(), Ok(1)),
            other => panic!("got {other:?}"),
        }
        assert!(cell.is_terminated());
    });
}

/// A future that is ready once `Flag::set` ran; its waker is kept under a
/// lock, so the only way to lose a wake-up is in `block_on`'s handshake.
struct Flag {
    set: crate::loom::AtomicBool,
    waker: crate::loom::Mutex<Option<std::task::Waker>>,
}

impl Flag {
    fn new() -> crate::loom::Arc<Self> {
        crate::loom::Arc::new(Self {
            set: crate::loom::AtomicBool::new(false),
            waker: crate::loom::Mutex::new(None),
        })
    }

    /// Sets the flag and wakes the waiter `wakes` times (by reference,
    /// then by value), as a commit that is followed by late wakes would.
    fn set(&self, wakes: usize) {
        // Release: pairs with the Acquire load in `poll`.
        self.set.store(true, crate::loom::Ordering::Release);
        let waker = crate::loom::lock(&self.waker).clone();
        if let Some(w) = waker {
            for _ in 1..wakes {
                w.wake_by_ref();
            }
            w.wake();
        }
    }

    /// Waits for the flag, counting its polls in `polls`.
    async fn wait(&self, polls: &std::cell::Cell<usize>) {
        std::future::poll_fn(|cx| {
            polls.set(polls.get() + 1);
            *crate::loom::lock(&self.waker) = Some(cx.waker().clone());
            // Acquire: pairs with the Release store in `set`.
            if self.set.load(crate::loom::Ordering::Acquire) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await;
    }
}

#[test]
fn loom_block_on_never_loses_a_wake() {
    // The wake may come before the poll, between the poll's `Pending` and
    // the park's compare-exchange, or after the thread parked; in every
    // order the thread returns (a lost wake-up would park it for ever, which
    // loom reports as a deadlock), after at most two polls.
    block_on_waits_after_wakes(1, 1, 1..=2);
}

#[test]
fn loom_block_on_repeated_wakes_are_neither_lost_nor_left_over() {
    // Three wakes of one waiting: the later ones find `NOTIFIED` (or the
    // thread polling again) and must neither be lost nor leave the thread
    // parked; two waiters in a row on the same flag return as well.
    block_on_waits_after_wakes(3, 2, 2..=3);
}

/// A thread sets a [`Flag`] and wakes its waiter `wakes` times while this
/// one waits for it `waits` times in a row with `block_on`; every wait
/// returns, after a number of polls in `polls` all told.
fn block_on_waits_after_wakes(wakes: usize, waits: usize, polls: std::ops::RangeInclusive<usize>) {
    model(move || {
        let flag = Flag::new();
        let setter = {
            let flag = flag.clone();
            thread::spawn(move || flag.set(wakes))
        };
        let counted = std::cell::Cell::new(0);
        for _ in 0..waits {
            crate::block_on(flag.wait(&counted));
        }
        assert!(polls.contains(&counted.get()), "{} polls", counted.get());
        setter.join().unwrap();
    });
}
