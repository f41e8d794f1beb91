//! Rendezvous channels (`channel()`, `bounded(0)`): capacity zero, every send
//! meets a receiver.

mod common;

use common::{WakeCounter, poll_noop, poll_with};
use fibra::{Op, RecvError, TryRecvError, TrySendError, bounded, channel};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Duration;

#[test]
fn rendezvous_has_capacity_zero_and_never_buffers() {
    let (tx, rx) = channel::<u8>();
    assert_eq!(tx.capacity(), Some(0));
    assert_eq!(rx.capacity(), Some(0));
    assert_eq!(bounded::<u8>(0).0.capacity(), Some(0));
    assert!(tx.is_empty() && rx.is_empty());
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    assert_eq!((tx.len(), rx.len()), (0, 0));
}

#[test]
fn try_send_without_a_waiting_receiver_returns_the_value_as_full() {
    let (tx, _rx) = channel::<String>();
    let err = tx.try_send("hello".to_string()).unwrap_err();
    assert!(err.is_full() && !err.is_disconnected());
    assert_eq!(err.into_inner(), "hello");
}

#[test]
fn try_recv_without_a_waiting_sender_is_empty() {
    let (_tx, rx) = channel::<u8>();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert!(rx.recv_op().try_perform().is_err());
}

#[test]
fn bounded_zero_is_a_rendezvous_too() {
    let (tx, rx) = bounded::<u8>(0);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    let t = std::thread::spawn(move || tx.send_blocking(9));
    assert_eq!(rx.recv_blocking(), Ok(9));
    t.join().unwrap().unwrap();
}

#[test]
fn try_send_hands_the_value_to_a_blocked_receiver() {
    let (tx, rx) = channel::<u32>();
    let (waker, wakes) = WakeCounter::new();
    let mut recv = pin!(rx.recv());
    assert!(poll_with(recv.as_mut(), &waker).is_pending());
    assert_eq!(tx.try_send(5), Ok(()));
    assert!(wakes.count() >= 1, "the blocked receiver was not woken");
    assert_eq!(poll_with(recv.as_mut(), &waker), Poll::Ready(Ok(5)));
    assert_eq!(
        rx.len(),
        0,
        "a rendezvous hand-off must not go through a buffer"
    );
}

#[test]
fn try_recv_takes_the_value_of_a_blocked_sender() {
    let (tx, rx) = channel::<u32>();
    let (waker, wakes) = WakeCounter::new();
    let mut send = pin!(tx.send(7));
    assert!(poll_with(send.as_mut(), &waker).is_pending());
    assert!(
        poll_with(send.as_mut(), &waker).is_pending(),
        "spurious poll"
    );
    assert_eq!(rx.try_recv(), Ok(7));
    assert!(wakes.count() >= 1, "the blocked sender was not woken");
    assert_eq!(poll_with(send.as_mut(), &waker), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn blocked_senders_are_matched_in_fifo_order() {
    let (tx, rx) = channel::<u32>();
    let mut sends: Vec<_> = (0..5).map(|i| Box::pin(tx.send(i))).collect();
    for s in &mut sends {
        assert!(poll_noop(s.as_mut()).is_pending());
    }
    for i in 0..5 {
        assert_eq!(rx.try_recv(), Ok(i));
    }
    for s in &mut sends {
        assert_eq!(poll_noop(s.as_mut()), Poll::Ready(Ok(())));
    }
}

#[test]
fn blocked_receivers_are_matched_in_fifo_order() {
    let (tx, rx) = channel::<u32>();
    let mut recvs: Vec<_> = (0..5).map(|_| Box::pin(rx.recv())).collect();
    for r in &mut recvs {
        assert!(poll_noop(r.as_mut()).is_pending());
    }
    for i in 0..5 {
        assert_eq!(tx.try_send(i), Ok(()));
    }
    assert_eq!(tx.try_send(99), Err(TrySendError::Full(99)));
    for (i, r) in recvs.iter_mut().enumerate() {
        assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Ok(i as u32)));
    }
}

#[test]
fn send_blocking_returns_only_after_a_receiver_took_the_value() {
    let (tx, rx) = channel::<u32>();
    let sent = Arc::new(AtomicBool::new(false));
    let t = {
        let sent = sent.clone();
        std::thread::spawn(move || {
            tx.send_blocking(1).unwrap();
            sent.store(true, Ordering::SeqCst);
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !sent.load(Ordering::SeqCst),
        "send completed with nobody receiving"
    );
    assert_eq!(rx.recv_blocking(), Ok(1));
    t.join().unwrap();
    assert!(sent.load(Ordering::SeqCst));
}

#[test]
fn recv_blocking_waits_for_a_sender_on_another_thread() {
    let (tx, rx) = channel::<&str>();
    let t = std::thread::spawn(move || rx.recv_blocking());
    std::thread::sleep(Duration::from_millis(20));
    tx.send_blocking("late").unwrap();
    assert_eq!(t.join().unwrap(), Ok("late"));
}

#[test]
fn ops_perform_on_os_threads() {
    let (tx, rx) = channel::<u64>();
    let t = std::thread::spawn(move || {
        for i in 0..100 {
            tx.send_op(i).perform().unwrap();
        }
    });
    for i in 0..100 {
        assert_eq!(rx.recv_op().perform(), Ok(i));
    }
    t.join().unwrap();
    assert_eq!(rx.recv_op().perform(), Err(RecvError));
}

#[test]
fn one_producer_one_consumer_preserves_order_across_threads() {
    let (tx, rx) = channel::<u64>();
    let n = 2000;
    let t = std::thread::spawn(move || {
        for i in 0..n {
            tx.send_blocking(i).unwrap();
        }
    });
    for i in 0..n {
        assert_eq!(rx.recv_blocking(), Ok(i));
    }
    t.join().unwrap();
}

#[test]
fn mpmc_os_threads_deliver_each_value_exactly_once() {
    common::mpmc_os_threads(channel::<u64>, 3, 3, 1000);
}

#[test]
fn mpmc_mixing_os_threads_and_tokio_tasks_delivers_each_value_once() {
    common::mpmc_threads_and_tasks(channel::<u64>, 1000);
}

#[test]
fn ping_pong_between_os_thread_and_tokio_task() {
    common::ping_pong_thread_and_task(channel::<u64>, 500);
}

#[test]
fn two_futures_on_one_thread_rendezvous() {
    let (tx, rx) = channel::<u32>();
    let (a, b) = futures::executor::block_on(async {
        futures::join!(
            async {
                for i in 0..100 {
                    tx.send(i).await.unwrap();
                }
            },
            async {
                let mut sum = 0;
                for _ in 0..100 {
                    sum += rx.recv().await.unwrap();
                }
                sum
            }
        )
    });
    assert_eq!((a, b), ((), 4950));
}

#[test]
fn handles_know_their_channel() {
    let (tx, rx) = channel::<u8>();
    let (tx2, rx2) = channel::<u8>();
    assert!(tx.same_channel(&tx.clone()));
    assert!(rx.same_channel(&rx.clone()));
    assert!(!tx.same_channel(&tx2));
    assert!(!rx.same_channel(&rx2));
    // A clone receives what is sent on the original's channel.
    let rx_clone = rx.clone();
    let t = std::thread::spawn(move || rx_clone.recv_blocking());
    tx.send_blocking(3).unwrap();
    assert_eq!(t.join().unwrap(), Ok(3));
}
