//! Unbounded channels: sends never wait.

mod common;

use common::{WakeCounter, poll_noop, poll_with};
use fibra::{Op, TryRecvError, unbounded};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

#[test]
fn unbounded_reports_no_capacity() {
    let (tx, rx) = unbounded::<u8>();
    assert_eq!(tx.capacity(), None);
    assert_eq!(rx.capacity(), None);
    assert!(tx.is_empty() && rx.is_empty());
}

#[test]
fn try_send_never_reports_full_and_len_counts_everything() {
    let (tx, rx) = unbounded::<u32>();
    for i in 0..10_000 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(tx.len(), 10_000);
    assert_eq!(rx.len(), 10_000);
    for i in 0..10_000 {
        assert_eq!(rx.try_recv(), Ok(i));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert!(rx.is_empty());
}

#[test]
fn async_send_completes_on_the_first_poll() {
    let (tx, rx) = unbounded::<u32>();
    for i in 0..100 {
        let mut send = pin!(tx.send(i));
        assert_eq!(poll_noop(send.as_mut()), Poll::Ready(Ok(())));
    }
    assert!(tx.send_op(100).try_perform().is_ok());
    assert_eq!(rx.len(), 101);
}

#[test]
fn send_blocking_never_waits_for_a_receiver() {
    let (tx, rx) = unbounded::<u32>();
    // On this thread, with nobody receiving: must not park.
    for i in 0..1000 {
        tx.send_blocking(i).unwrap();
    }
    assert_eq!(rx.len(), 1000);
}

#[test]
fn a_blocked_receiver_is_handed_the_value_directly() {
    let (tx, rx) = unbounded::<u32>();
    let (waker, wakes) = WakeCounter::new();
    let mut recv = pin!(rx.recv());
    assert!(poll_with(recv.as_mut(), &waker).is_pending());
    tx.try_send(3).unwrap();
    assert!(wakes.count() >= 1);
    assert_eq!(
        rx.len(),
        0,
        "a waiting receiver takes the value, not the buffer"
    );
    assert_eq!(poll_with(recv.as_mut(), &waker), Poll::Ready(Ok(3)));
}

#[test]
fn blocked_receivers_are_served_in_fifo_order() {
    let (tx, rx) = unbounded::<u32>();
    let mut recvs: Vec<_> = (0..4).map(|_| Box::pin(rx.recv())).collect();
    for r in &mut recvs {
        assert!(poll_noop(r.as_mut()).is_pending());
    }
    for i in 0..6 {
        tx.try_send(i).unwrap();
    }
    for (i, r) in recvs.iter_mut().enumerate() {
        assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Ok(i as u32)));
    }
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.try_recv(), Ok(4));
    assert_eq!(rx.try_recv(), Ok(5));
}

#[test]
fn recv_blocking_waits_for_a_value_on_os_threads() {
    let (tx, rx) = unbounded::<u32>();
    let t = std::thread::spawn(move || rx.recv_blocking());
    std::thread::sleep(Duration::from_millis(20));
    tx.send_blocking(4).unwrap();
    assert_eq!(t.join().unwrap(), Ok(4));
}

#[test]
fn one_producer_one_consumer_preserves_order_across_threads() {
    let (tx, rx) = unbounded::<u64>();
    let n = 5000;
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
    common::mpmc_os_threads(unbounded::<u64>, 4, 3, 1000);
}

#[test]
fn mpmc_mixing_os_threads_and_tokio_tasks_delivers_each_value_once() {
    common::mpmc_threads_and_tasks(unbounded::<u64>, 1000);
}

#[test]
fn ping_pong_between_os_thread_and_tokio_task() {
    common::ping_pong_thread_and_task(unbounded::<u64>, 500);
}
