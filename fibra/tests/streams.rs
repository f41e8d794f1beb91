//! `Receiver` as a `FusedStream` and `Mailbox` as a `Stream`: they yield
//! every value in order, end when nothing more can come, report it through
//! `is_terminated`, and lose nothing when a pending `next()` is dropped.

mod common;

use common::{assert_exactly_once, poll_noop};
use futures::StreamExt;
use futures::stream::FusedStream;
use std::pin::pin;
use std::time::Duration;

#[test]
fn a_receiver_is_terminated_once_closed_and_drained() {
    let (tx, mut rx) = fibra::bounded::<u32>(2);
    assert!(!rx.is_terminated());
    tx.try_send(1).unwrap();
    drop(tx);
    assert!(!rx.is_terminated());
    futures::executor::block_on(async {
        assert_eq!(rx.next().await, Some(1));
        assert_eq!(rx.next().await, None);
    });
    assert!(rx.is_terminated());
}

#[test]
fn a_receiver_in_futures_select_is_skipped_once_terminated() {
    futures::executor::block_on(async {
        let (tx_a, mut a) = fibra::unbounded::<u32>();
        let (tx_b, mut b) = fibra::unbounded::<u32>();
        for i in 0..3 {
            tx_a.try_send(i).unwrap();
            tx_b.try_send(10 + i).unwrap();
        }
        drop((tx_a, tx_b));
        let mut got = Vec::new();
        loop {
            futures::select! {
                v = a.next() => got.extend(v),
                v = b.next() => got.extend(v),
                complete => break,
            }
        }
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2, 10, 11, 12]);
    });
}

#[test]
fn a_mailbox_streams_its_messages_until_no_address_is_left() {
    let (addr, mb) = fibra::mailbox::<u64>();
    let producer = std::thread::spawn(move || {
        for i in 0..1_000 {
            addr.send(i).unwrap();
            if i % 100 == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    });
    let got: Vec<u64> = futures::executor::block_on(mb.collect());
    producer.join().unwrap();
    assert!(got.windows(2).all(|w| w[0] < w[1]), "out of order");
    assert_exactly_once(got, 1_000);
}

#[test]
fn a_mailbox_stream_in_an_actor_and_across_executors() {
    let got = fibra::run(async {
        let (reply, answers) = fibra::unbounded::<u32>();
        let addr = fibra::spawn_actor(move |mb| async move {
            mb.for_each(|n: u32| {
                let reply = reply.clone();
                async move { reply.send(n * 2).await.unwrap() }
            })
            .await;
        });
        for n in 1..=3 {
            addr.send(n).unwrap();
        }
        drop(addr);
        answers.collect::<Vec<_>>().await
    });
    assert_eq!(got, [2, 4, 6]);

    let got = common::tokio_mt().block_on(async {
        let (addr, mut mb) = fibra::mailbox::<u32>();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            addr.send(9).unwrap();
        });
        (mb.next().await, mb.next().await)
    });
    assert_eq!(got, (Some(9), None));
}

#[test]
fn a_dropped_pending_next_loses_no_message() {
    let (addr, mut mb) = fibra::mailbox::<u32>();
    {
        let mut next = pin!(mb.next());
        assert!(poll_noop(next.as_mut()).is_pending()); // parked
        addr.send(1).unwrap();
        // Dropped without another poll.
    }
    addr.send(2).unwrap();
    assert_eq!(mb.try_recv(), Ok(1));
    // A receive after the stream parked (with a waker now stale) still
    // works, and waits properly.
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        addr.send(3).unwrap();
    });
    assert_eq!(mb.recv_blocking(), Some(2));
    assert_eq!(mb.recv_blocking(), Some(3));
    t.join().unwrap();
    assert_eq!(mb.recv_blocking(), None);
}

#[test]
fn a_closed_mailbox_stream_drains_then_ends() {
    let (addr, mut mb) = fibra::mailbox::<u32>();
    addr.send(1).unwrap();
    mb.close();
    assert!(addr.send(2).is_err());
    futures::executor::block_on(async {
        assert_eq!(mb.next().await, Some(1));
        assert_eq!(mb.next().await, None);
    });
}
