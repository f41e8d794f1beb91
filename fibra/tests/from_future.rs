//! Ops from foreign futures (`op::from_future`, `op::FutureCell`): mixed
//! with fibra's ops in `select!` on every executor, and nothing a future
//! produced is lost when it completes while another branch wins.

use fibra::op::{FutureCell, from_future};
use fibra::{Op, Receiver, WaitUntil, bounded, channel, choose, choose_biased, select};
use futures::StreamExt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A future that, at each poll until it succeeds, tries to send `value` on
/// a fibra channel, then is ready with `output`: polled while the same
/// choice has a receive published on that channel, its own poll commits
/// that other branch just before it completes.
struct SendsThenReady {
    tx: fibra::Sender<u32>,
    value: u32,
    output: u32,
}

impl Future for SendsThenReady {
    type Output = u32;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        if self.tx.try_send(self.value).is_ok() {
            Poll::Ready(self.output)
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[derive(Debug, PartialEq)]
enum Either {
    Channel(Result<u32, fibra::RecvError>),
    Future(u32),
}

#[test]
fn a_cell_keeps_the_output_of_a_future_that_completed_while_another_branch_won() {
    let (tx, rx) = channel::<u32>();
    let _open = tx.clone(); // the future's sender drops once it completes
    let mut cell = FutureCell::new(SendsThenReady {
        tx,
        value: 7,
        output: 42,
    });
    // Biased: the receive is published first, then the future is polled,
    // commits the receive (its own send meets the record), and completes.
    let got = choose_biased((
        rx.recv_op().wrap(Either::Channel),
        cell.op().wrap(Either::Future),
    ))
    .perform();
    assert_eq!(got, Either::Channel(Ok(7)));
    assert!(cell.is_ready());
    // The next choice takes the kept output at once.
    let again = choose((
        rx.recv_op().wrap(Either::Channel),
        cell.op().wrap(Either::Future),
    ))
    .try_perform()
    .ok();
    assert_eq!(again, Some(Either::Future(42)));
    assert!(cell.is_terminated());
    assert!(
        cell.op().try_perform().is_err(),
        "a spent cell never commits"
    );
}

#[test]
fn a_future_op_that_lost_with_an_output_yields_it_in_the_next_round() {
    // WaitUntil re-performs the clauses that lost a round: the output kept
    // in the op comes out in the next one.
    let (tx, rx) = channel::<u32>();
    let mut w = WaitUntil::new();
    let a = w.add(rx.recv_op());
    let b = w.add(from_future(SendsThenReady {
        tx,
        value: 7,
        output: 42,
    }));
    assert!(w.run_blocking(a.done() & b.done()));
    assert_eq!(a.take(), Some(Ok(7)));
    assert_eq!(b.take(), Some(42));
}

#[test]
fn a_ready_future_commits_in_the_try_phase() {
    let (_tx, rx) = channel::<u32>();
    let got = select_blocking_else(&rx);
    assert_eq!(got, "future");
    // A future that is never ready loses to `else`, and comes back with no
    // output.
    let op = from_future(std::future::pending::<u8>())
        .try_perform()
        .unwrap_err();
    assert_eq!(op.into_output(), None);
}

fn select_blocking_else(rx: &Receiver<u32>) -> &'static str {
    fibra::select_blocking! {
        _ = rx.recv_op() => "channel",
        () = from_future(std::future::ready(())) => "future",
        else => "else",
    }
}

/// Receives `n_fibra` values from a fibra channel and `n_foreign` from a
/// `futures` mpsc channel in one `select!` loop, polling the foreign
/// stream through a `FutureCell`; returns every value received.
async fn drain_both(rx: Receiver<u32>, foreign: futures::channel::mpsc::Receiver<u32>) -> Vec<u32> {
    let mut got = Vec::new();
    let mut fibra_open = true;
    let mut next = FutureCell::new(foreign.into_future());
    while fibra_open || !next.is_terminated() {
        select! {
            v = rx.recv_op(), if fibra_open => match v {
                Ok(v) => got.push(v),
                Err(_) => fibra_open = false,
            },
            // A stream's next item: if it arrives while the other clause
            // wins, it waits in the cell for the next round.
            (item, rest) = next.op(), if !next.is_terminated() => {
                if let Some(v) = item {
                    got.push(v);
                    next = FutureCell::new(rest.into_future());
                }
            }
        }
    }
    got
}

const N: u32 = 2_000;

/// Producers on OS threads: fibra values `0..N`, foreign values `N..2N`.
fn producers() -> (
    Receiver<u32>,
    futures::channel::mpsc::Receiver<u32>,
    impl FnOnce(),
) {
    let (tx, rx) = bounded::<u32>(8);
    let (mut ftx, frx) = futures::channel::mpsc::channel::<u32>(8);
    let a = std::thread::spawn(move || {
        for i in 0..N {
            tx.send_blocking(i).unwrap();
        }
    });
    let b = std::thread::spawn(move || {
        futures::executor::block_on(async {
            use futures::SinkExt;
            for i in N..2 * N {
                ftx.send(i).await.unwrap();
            }
        });
    });
    (rx, frx, move || {
        a.join().unwrap();
        b.join().unwrap();
    })
}

fn check(mut got: Vec<u32>) {
    got.sort_unstable();
    assert_eq!(got, (0..2 * N).collect::<Vec<_>>(), "every value once");
}

#[test]
fn mixed_select_on_tokio_current_thread() {
    let (rx, frx, join) = producers();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    check(rt.block_on(drain_both(rx, frx)));
    join();
}

#[test]
fn mixed_select_on_tokio_multi_thread() {
    let (rx, frx, join) = producers();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    check(rt.block_on(async move { tokio::spawn(drain_both(rx, frx)).await.unwrap() }));
    join();
}

#[test]
fn mixed_select_on_smol() {
    let (rx, frx, join) = producers();
    check(smol::block_on(drain_both(rx, frx)));
    join();
}

#[test]
fn mixed_select_on_futures_executor() {
    let (rx, frx, join) = producers();
    check(futures::executor::block_on(drain_both(rx, frx)));
    join();
}

#[test]
fn mixed_select_on_fibra() {
    let (rx, frx, join) = producers();
    check(fibra::run(drain_both(rx, frx)));
    join();
    let (rx, frx, join) = producers();
    let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    check(rt.block_on(drain_both(rx, frx)));
    join();
}

#[test]
fn tokio_timer_as_a_timeout_in_a_fibra_choice() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = channel::<u32>();
        // Nothing sent: the tokio timer wins.
        let got = select! {
            v = rx.recv_op() => v.ok(),
            () = from_future(tokio::time::sleep(Duration::from_millis(2))) => None,
        };
        assert_eq!(got, None);
        // A sender waiting: the channel wins, and the timer is dropped.
        let h = tokio::spawn(async move { tx.send(5).await });
        let got = select! {
            v = rx.recv_op() => v.ok(),
            () = from_future(tokio::time::sleep(Duration::from_secs(60))) => None,
        };
        assert_eq!(got, Some(5));
        h.await.unwrap().unwrap();
    });
}

#[test]
fn smol_timer_on_an_os_thread() {
    let (_tx, rx) = channel::<u32>();
    let got = fibra::select_blocking! {
        v = rx.recv_op() => v.ok(),
        _ = from_future(smol::Timer::after(Duration::from_millis(2))) => None,
    };
    assert_eq!(got, None);
}
