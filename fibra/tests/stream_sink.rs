//! `Receiver` as a `futures::Stream`, `Sender` as a `futures::Sink`.

mod common;

use common::{WakeCounter, poll_noop};
use fibra::{SendError, TryRecvError, bounded, channel, unbounded};
use futures::{SinkExt, Stream, StreamExt};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

fn poll_next<S: Stream + Unpin>(s: &mut S, waker: &std::task::Waker) -> Poll<Option<S::Item>> {
    Pin::new(s).poll_next(&mut Context::from_waker(waker))
}

// ----- Stream ---------------------------------------------------------------

#[test]
fn the_stream_yields_every_buffered_value_then_ends_when_senders_drop() {
    let (tx, rx) = unbounded::<u32>();
    for i in 0..100 {
        tx.try_send(i).unwrap();
    }
    drop(tx);
    let all: Vec<u32> = futures::executor::block_on(rx.collect());
    assert_eq!(all, (0..100).collect::<Vec<_>>());
}

#[test]
fn the_stream_collects_from_a_producer_thread_on_a_rendezvous_channel() {
    let (tx, rx) = channel::<u32>();
    let producer = std::thread::spawn(move || {
        for i in 0..500 {
            tx.send_blocking(i).unwrap();
        }
    });
    let all: Vec<u32> = futures::executor::block_on(rx.collect());
    producer.join().unwrap();
    assert_eq!(all, (0..500).collect::<Vec<_>>());
}

#[test]
fn the_stream_of_a_closed_empty_channel_ends_at_once_and_stays_ended() {
    let (tx, mut rx) = bounded::<u32>(2);
    drop(tx);
    futures::executor::block_on(async {
        assert_eq!(rx.next().await, None);
        assert_eq!(rx.next().await, None);
    });
}

#[test]
fn a_waiting_stream_is_woken_by_a_send_and_by_close() {
    let (tx, mut rx) = channel::<u32>();
    let (waker, wakes) = WakeCounter::new();
    assert!(poll_next(&mut rx, &waker).is_pending());
    assert!(poll_next(&mut rx, &waker).is_pending());
    tx.try_send(1).unwrap(); // the stream's receive is in flight: it takes it
    assert!(wakes.count() >= 1);
    assert_eq!(poll_next(&mut rx, &waker), Poll::Ready(Some(1)));
    assert!(poll_next(&mut rx, &waker).is_pending());
    let before = wakes.count();
    drop(tx);
    assert!(wakes.count() > before, "close did not wake the stream");
    assert_eq!(poll_next(&mut rx, &waker), Poll::Ready(None));
}

#[test]
fn a_value_taken_by_a_dropped_receivers_pending_read_goes_back_to_the_channel() {
    let (tx, rx) = channel::<String>();
    let mut reader = rx.clone();
    assert!(poll_next(&mut reader, std::task::Waker::noop()).is_pending());
    tx.try_send("in flight".to_string()).unwrap(); // committed to `reader`
    drop(reader);
    assert_eq!(rx.try_recv().unwrap(), "in flight");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn a_cancelled_next_keeps_its_read_in_the_stream() {
    // `next()` futures dropped by a select! do not lose values: the stream
    // keeps its receive in flight and yields the value on the next call.
    let rt = common::tokio_mt();
    let n = common::scaled(3000) as u64;
    let (tx, mut rx) = channel::<u64>();
    let producer = std::thread::spawn(move || {
        for i in 0..n {
            tx.send_blocking(i).unwrap();
        }
    });
    let got = rt.block_on(async move {
        let mut got = Vec::new();
        let mut cancelled = 0;
        loop {
            tokio::select! {
                v = rx.next() => match v {
                    Some(v) => got.push(v),
                    None => break,
                },
                _ = tokio::task::yield_now() => cancelled += 1,
            }
        }
        assert!(cancelled > 0);
        got
    });
    producer.join().unwrap();
    assert_eq!(
        got,
        (0..n).collect::<Vec<_>>(),
        "values lost, duplicated or reordered"
    );
}

#[test]
fn streams_of_several_receiver_clones_share_the_values() {
    let rt = common::tokio_mt();
    let (tx, rx) = bounded::<u64>(4);
    let readers: Vec<_> = (0..3)
        .map(|_| rt.spawn(rx.clone().collect::<Vec<u64>>()))
        .collect();
    drop(rx);
    let producer = std::thread::spawn(move || {
        for i in 0..3000 {
            tx.send_blocking(i).unwrap();
        }
    });
    producer.join().unwrap();
    let mut all = Vec::new();
    for r in readers {
        all.extend(rt.block_on(r).unwrap());
    }
    common::assert_exactly_once(all, 3000);
}

// ----- Sink -----------------------------------------------------------------
//
// `Sender::send` (inherent, async) shadows `SinkExt::send`; these tests call
// the `Sink` path explicitly.

#[test]
fn sink_send_delivers_items_in_order() {
    let (mut tx, rx) = bounded::<u32>(8);
    futures::executor::block_on(async {
        for i in 0..5 {
            SinkExt::send(&mut tx, i).await.unwrap();
        }
        tx.send_all(&mut futures::stream::iter((5..8).map(Ok)))
            .await
            .unwrap();
    });
    drop(tx);
    let all: Vec<u32> = futures::executor::block_on(rx.collect());
    assert_eq!(all, (0..8).collect::<Vec<_>>());
}

#[test]
fn sink_send_on_a_rendezvous_channel_completes_when_a_receiver_takes_the_item() {
    let (mut tx, rx) = channel::<u32>();
    {
        let mut send = pin!(SinkExt::send(&mut tx, 9));
        assert!(poll_noop(send.as_mut()).is_pending());
        assert!(poll_noop(send.as_mut()).is_pending());
        assert_eq!(rx.try_recv(), Ok(9));
        assert_eq!(poll_noop(send.as_mut()), Poll::Ready(Ok(())));
    }
    // The sink is ready for the next item.
    let t = std::thread::spawn(move || rx.recv_blocking());
    futures::executor::block_on(SinkExt::send(&mut tx, 10)).unwrap();
    assert_eq!(t.join().unwrap(), Ok(10));
}

#[test]
fn sink_send_waits_for_room_in_a_full_buffer() {
    let (mut tx, rx) = bounded::<u32>(1);
    tx.try_send(0).unwrap();
    let mut send = pin!(SinkExt::send(&mut tx, 1));
    assert!(poll_noop(send.as_mut()).is_pending());
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(poll_noop(send.as_mut()), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), Ok(1));
}

#[test]
fn sink_send_fails_with_the_item_when_receivers_are_gone() {
    let (mut tx, rx) = bounded::<String>(1);
    drop(rx);
    let err = futures::executor::block_on(SinkExt::send(&mut tx, "lost?".to_string())).unwrap_err();
    assert_eq!(err, SendError("lost?".to_string()));
}

#[test]
fn an_in_flight_sink_item_comes_back_when_receivers_drop() {
    let (mut tx, rx) = channel::<String>();
    let mut send = pin!(SinkExt::send(&mut tx, "waiting".to_string()));
    assert!(poll_noop(send.as_mut()).is_pending());
    drop(rx);
    match poll_noop(send.as_mut()) {
        Poll::Ready(Err(SendError(v))) => assert_eq!(v, "waiting"),
        other => panic!("expected the item back, got {other:?}"),
    }
}

#[test]
fn forward_pipes_one_channel_into_another() {
    let (tx_in, rx_in) = channel::<u64>();
    let (tx_out, rx_out) = bounded::<u64>(3);
    let producer = std::thread::spawn(move || {
        for i in 0..1000 {
            tx_in.send_blocking(i).unwrap();
        }
    });
    let pipe = std::thread::spawn(move || {
        futures::executor::block_on(rx_in.map(|v| Ok(v * 2)).forward(tx_out)).unwrap();
    });
    let mut got = Vec::new();
    while let Ok(v) = rx_out.recv_blocking() {
        got.push(v);
    }
    producer.join().unwrap();
    pipe.join().unwrap();
    assert_eq!(got, (0..1000).map(|v| v * 2).collect::<Vec<_>>());
}

#[test]
fn sink_close_flushes_the_item_in_flight() {
    let (mut tx, rx) = channel::<u32>();
    let consumer = std::thread::spawn(move || rx.recv_blocking());
    futures::executor::block_on(async {
        tx.feed(4).await.unwrap();
        tx.close().await.unwrap();
    });
    assert_eq!(consumer.join().unwrap(), Ok(4));
}
