//! Cancellation: a perform dropped before it commits withdraws cleanly; a
//! receive dropped after a sender committed to it gives the value back to the
//! channel. Nothing is lost to a cancelled branch of a foreign `select!`.

mod common;

use common::{AllowDrop, DropCount, Ledger, MakeChan, Msg, WakeCounter, poll_noop, poll_with};
use fibra::{RecvError, TryRecvError, TrySendError, bounded, channel, choose, unbounded};
use futures::FutureExt;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

fn flavours() -> [(&'static str, MakeChan); 4] {
    [
        ("rendezvous", channel::<u64>),
        ("bounded(1)", || bounded(1)),
        ("bounded(3)", || bounded(3)),
        ("unbounded", unbounded::<u64>),
    ]
}

// ----- dropped before any commit: withdrawn ----------------------------------

#[test]
fn a_dropped_pending_receive_does_not_absorb_a_later_send() {
    for (name, make) in flavours() {
        let (tx, rx) = make();
        {
            let mut recv = pin!(rx.recv());
            assert!(poll_noop(recv.as_mut()).is_pending(), "{name}");
        }
        match tx.try_send(1) {
            // Rendezvous: nobody is waiting any more.
            Err(TrySendError::Full(1)) => assert_eq!(tx.capacity(), Some(0), "{name}"),
            // Buffered: the value waits in the buffer, not in a dead receiver.
            Ok(()) => assert_eq!(rx.len(), 1, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        // A live receiver gets the next value.
        let t = {
            let tx = tx.clone();
            std::thread::spawn(move || tx.send_blocking(2))
        };
        let first = rx.recv_blocking().unwrap();
        let want = if tx.capacity() == Some(0) { 2 } else { 1 };
        assert_eq!(first, want, "{name}");
        t.join().unwrap().unwrap();
    }
}

#[test]
fn a_dropped_pending_choice_withdraws_every_branch() {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..4).map(|_| channel::<u32>()).unzip();
    {
        let ops: Vec<_> = rxs.iter().map(|rx| rx.recv_op()).collect();
        let mut fut = pin!(choose(ops).into_future());
        assert!(poll_noop(fut.as_mut()).is_pending());
    }
    for (i, tx) in txs.iter().enumerate() {
        assert_eq!(
            tx.try_send(1),
            Err(TrySendError::Full(1)),
            "branch {i} left a receiver"
        );
    }
}

#[test]
fn a_dropped_pending_send_withdraws_and_drops_its_value_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    for cap in [0, 2] {
        drops.store(0, Ordering::SeqCst);
        let (tx, rx) = bounded::<DropCount>(cap);
        for i in 0..cap {
            tx.try_send(DropCount::new(i as u64, &drops)).unwrap();
        }
        {
            let mut send = pin!(tx.send(DropCount::new(99, &drops)));
            assert!(poll_noop(send.as_mut()).is_pending());
        }
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "cap {cap}: the unsent value"
        );
        for i in 0..cap {
            assert_eq!(rx.try_recv().unwrap().value, i as u64);
        }
        assert!(
            matches!(rx.try_recv(), Err(TryRecvError::Empty)),
            "cap {cap}"
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1 + cap);
    }
}

#[test]
fn dropping_a_send_future_after_its_value_was_taken_keeps_it_delivered_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = channel::<DropCount>();
    let got = {
        let mut send = pin!(tx.send(DropCount::new(5, &drops)));
        assert!(poll_noop(send.as_mut()).is_pending());
        rx.try_recv().unwrap() // commits the send; its future is dropped unpolled
    };
    assert_eq!(got.value, 5);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "the delivered value was dropped"
    );
    drop(got);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
}

// ----- dropped after a commit: the value goes back --------------------------

#[test]
fn a_received_value_whose_perform_is_dropped_goes_back_to_the_front() {
    let (tx, rx) = bounded::<u32>(2);
    {
        let mut recv = pin!(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        tx.try_send(1).unwrap(); // committed to the waiting receive
        tx.try_send(2).unwrap(); // buffered
        assert_eq!(rx.len(), 1);
    } // dropped without being polled again
    assert_eq!(rx.try_recv(), Ok(1), "the rescued value must come first");
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn a_rescued_value_on_a_rendezvous_channel_waits_for_the_next_receiver() {
    let (tx, rx) = channel::<u32>();
    {
        let mut recv = pin!(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        tx.try_send(7).unwrap();
    }
    assert_eq!(rx.try_recv(), Ok(7));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn a_rescued_value_goes_to_a_receiver_already_waiting() {
    let (tx, rx) = channel::<u32>();
    let (waker, wakes) = WakeCounter::new();
    let mut second = pin!(rx.recv());
    {
        let mut first = pin!(rx.recv());
        assert!(poll_noop(first.as_mut()).is_pending());
        assert!(poll_with(second.as_mut(), &waker).is_pending());
        tx.try_send(3).unwrap(); // goes to `first`, the older waiter
        assert_eq!(wakes.count(), 0);
    }
    assert!(
        wakes.count() >= 1,
        "the waiting receiver was not handed the value"
    );
    assert_eq!(poll_with(second.as_mut(), &waker), Poll::Ready(Ok(3)));
}

#[test]
fn a_value_rescued_after_the_senders_left_is_still_received() {
    let (tx, rx) = channel::<u32>();
    {
        let mut recv = pin!(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        tx.try_send(4).unwrap();
        drop(tx);
    }
    assert_eq!(rx.try_recv(), Ok(4));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn a_received_value_in_a_dropped_choice_goes_back_to_its_own_channel() {
    let (tx_a, rx_a) = channel::<u32>();
    let (tx_b, rx_b) = channel::<u32>();
    {
        let mut fut = pin!(choose((rx_a.recv_op(), rx_b.recv_op())).into_future());
        assert!(poll_noop(fut.as_mut()).is_pending());
        tx_b.try_send(8).unwrap();
        assert_eq!(
            tx_a.try_send(1),
            Err(TrySendError::Full(1)),
            "choice committed twice"
        );
    }
    assert_eq!(rx_a.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(rx_b.try_recv(), Ok(8));
}

#[test]
fn a_committed_receive_dropped_by_tokio_timeout_gives_the_value_back() {
    // The timeout and the commit race; whichever way it goes, the value is
    // received exactly once.
    let rt = common::tokio_ct();
    let (tx, rx) = unbounded::<u32>();
    rt.block_on(async {
        let mut got = Vec::new();
        for i in 0..200 {
            let fut = rx.recv();
            let mut fut = pin!(tokio::time::timeout(std::time::Duration::ZERO, fut));
            // Register, let a send commit to us, then let the timeout win.
            let first = poll_noop(fut.as_mut());
            tx.try_send(i).unwrap();
            match first {
                Poll::Ready(Ok(r)) => got.push(r.unwrap()),
                _ => {
                    if let Ok(r) = fut.await {
                        got.push(r.unwrap());
                    }
                }
            }
        }
        drop(tx);
        while let Ok(v) = rx.recv().await {
            got.push(v);
        }
        let want: Vec<u32> = (0..200).collect();
        got.sort_unstable();
        assert_eq!(got, want);
    });
}

// ----- many cancellations under concurrency ----------------------------------

/// Producers (tokio tasks and an OS thread) send unique messages with plain
/// sends; consumer tasks receive through `select!`s that often cancel the
/// receive (possibly after a sender committed to it). Every message must be
/// received exactly once.
fn select_cancelled_receives(make: fn() -> (fibra::Sender<Msg>, fibra::Receiver<Msg>)) {
    let per = common::scaled(5000) as u32;
    let producers = 3u32;
    let ledger = Ledger::new((producers * per) as usize);
    let rt = common::tokio_mt();
    let (tx, rx) = make();
    let mut prods = Vec::new();
    for p in 0..producers - 1 {
        let (tx, ledger) = (tx.clone(), ledger.clone());
        prods.push(rt.spawn(async move {
            for s in 0..per {
                tx.send(Msg::new(p * per + s, &ledger)).await.unwrap();
                // Pace the sends so that receivers also have to wait (and
                // get cancelled while waiting), even on unbounded channels.
                tokio::task::yield_now().await;
            }
        }));
    }
    let thread_prod = {
        let (tx, ledger) = (tx.clone(), ledger.clone());
        let p = producers - 1;
        std::thread::spawn(move || {
            for s in 0..per {
                tx.send_blocking(Msg::new(p * per + s, &ledger)).unwrap();
                if s % 8 == 0 {
                    std::thread::yield_now();
                }
            }
        })
    };
    drop(tx);
    let cancelled = Arc::new(AtomicUsize::new(0));
    let consumers: Vec<_> = (0..3)
        .map(|c| {
            let rx = rx.clone();
            let cancelled = cancelled.clone();
            rt.spawn(async move {
                let mut n = 0u64;
                loop {
                    n += 1;
                    let r = match c {
                        0 => tokio::select! {
                            r = rx.recv() => Some(r),
                            _ = tokio::task::yield_now() => None,
                        },
                        1 => tokio::time::timeout(
                            std::time::Duration::from_micros(n % 50),
                            rx.recv(),
                        )
                        .await
                        .ok(),
                        _ => rx.recv().now_or_never(),
                    };
                    match r {
                        Some(Ok(m)) => {
                            m.received();
                        }
                        Some(Err(RecvError)) => return,
                        None => {
                            // Cancelled. Wait properly for the next one, so
                            // that consumers do not spin the CPU away from
                            // the producers.
                            cancelled.fetch_add(1, Ordering::Relaxed);
                            match rx.recv().await {
                                Ok(m) => {
                                    m.received();
                                }
                                Err(RecvError) => return,
                            }
                        }
                    }
                }
            })
        })
        .collect();
    drop(rx);
    thread_prod.join().unwrap();
    rt.block_on(async {
        for p in prods {
            p.await.unwrap();
        }
        for c in consumers {
            c.await.unwrap();
        }
    });
    let summary = ledger
        .verify(0..producers * per)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary.received, (producers * per) as usize);
    assert!(
        cancelled.load(Ordering::Relaxed) > 0,
        "no receive was ever cancelled"
    );
}

#[test]
fn select_racing_receives_loses_nothing_on_rendezvous_channels() {
    select_cancelled_receives(channel::<Msg>);
}

#[test]
fn select_racing_receives_loses_nothing_on_bounded_channels() {
    select_cancelled_receives(|| bounded(2));
}

#[test]
fn select_racing_receives_loses_nothing_on_unbounded_channels() {
    select_cancelled_receives(unbounded::<Msg>);
}

/// Producer tasks send through `select!`s that often cancel the send; a
/// cancelled send's message is either received (it was committed before the
/// drop) or dropped with the send future — exactly one of the two.
fn select_cancelled_sends(make: fn() -> (fibra::Sender<Msg>, fibra::Receiver<Msg>)) {
    let per = common::scaled(5000) as u32;
    let producers = 3u32;
    let ledger = Ledger::new((producers * per) as usize);
    let rt = common::tokio_mt();
    let (tx, rx) = make();
    let completed = Arc::new(AtomicUsize::new(0));
    let prods: Vec<_> = (0..producers)
        .map(|p| {
            let (tx, ledger, completed) = (tx.clone(), ledger.clone(), completed.clone());
            rt.spawn(async move {
                for s in 0..per {
                    let id = p * per + s;
                    let send = AllowDrop::new(vec![id], tx.send(Msg::new(id, &ledger)));
                    let done = match p {
                        0 => tokio::select! {
                            r = send => Some(r),
                            _ = tokio::task::yield_now() => None,
                        },
                        1 => tokio::time::timeout(std::time::Duration::from_micros(20), send)
                            .await
                            .ok(),
                        _ => send.now_or_never(),
                    };
                    if let Some(r) = done {
                        r.unwrap();
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let consumer_thread = {
        let rx = rx.clone();
        std::thread::spawn(move || {
            while let Ok(m) = rx.recv_blocking() {
                m.received();
            }
        })
    };
    let consumer_task = rt.spawn(async move {
        while let Ok(m) = rx.recv().await {
            m.received();
        }
    });
    rt.block_on(async {
        for p in prods {
            p.await.unwrap();
        }
        consumer_task.await.unwrap();
    });
    consumer_thread.join().unwrap();
    let summary = ledger
        .verify(0..producers * per)
        .unwrap_or_else(|e| panic!("{e}"));
    let completed = completed.load(Ordering::Relaxed);
    assert!(
        summary.received >= completed,
        "a completed send was not received"
    );
    assert!(completed > 0, "no send ever completed");
}

#[test]
fn select_racing_sends_loses_and_duplicates_nothing_on_rendezvous_channels() {
    select_cancelled_sends(channel::<Msg>);
}

#[test]
fn select_racing_sends_loses_and_duplicates_nothing_on_bounded_channels() {
    select_cancelled_sends(|| bounded(1));
}
