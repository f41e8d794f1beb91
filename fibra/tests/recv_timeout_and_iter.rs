//! `Receiver::recv_timeout` (async and blocking) and the blocking
//! iterators `iter`, `try_iter` and `into_iter`: what each yields on time,
//! late, after the senders went, and that nothing is lost when a receive
//! times out.

mod common;

use common::assert_exactly_once;
use fibra::{RecvTimeoutError, bounded, channel, unbounded};
use std::time::{Duration, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn recv_timeout_blocking_times_out_receives_and_sees_disconnection() {
    let (tx, rx) = channel::<u32>();
    let start = Instant::now();
    assert_eq!(
        rx.recv_timeout_blocking(ms(5)),
        Err(RecvTimeoutError::Timeout)
    );
    assert!(start.elapsed() >= ms(5), "timed out early");

    let t = std::thread::spawn(move || {
        std::thread::sleep(ms(5));
        tx.send_blocking(1).unwrap();
    });
    assert_eq!(rx.recv_timeout_blocking(Duration::from_secs(10)), Ok(1));
    t.join().unwrap();
    assert_eq!(
        rx.recv_timeout_blocking(Duration::from_secs(10)),
        Err(RecvTimeoutError::Disconnected)
    );
}

#[test]
fn recv_timeout_drains_the_buffer_before_disconnected() {
    let (tx, rx) = bounded(2);
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    drop(tx);
    assert_eq!(rx.recv_timeout_blocking(ms(1)), Ok(1));
    assert_eq!(rx.recv_timeout_blocking(ms(1)), Ok(2));
    assert_eq!(
        rx.recv_timeout_blocking(ms(1)),
        Err(RecvTimeoutError::Disconnected)
    );
}

#[test]
fn recv_timeout_async_on_fibra_and_tokio() {
    fibra::run(async {
        let (tx, rx) = unbounded::<u8>();
        assert_eq!(rx.recv_timeout(ms(2)).await, Err(RecvTimeoutError::Timeout));
        tx.send(1).await.unwrap();
        assert_eq!(rx.recv_timeout(ms(2)).await, Ok(1));
    });
    common::tokio_mt().block_on(async {
        let (tx, rx) = unbounded::<u8>();
        tokio::spawn(async move {
            tokio::time::sleep(ms(2)).await;
            tx.send(2).await.unwrap();
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).await, Ok(2));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).await,
            Err(RecvTimeoutError::Disconnected)
        );
    });
}

#[test]
fn receives_timing_out_against_a_sender_lose_nothing() {
    // A rendezvous sender meets receivers whose waits keep timing out:
    // every value arrives exactly once.
    let n = common::scaled(2_000) as u64;
    let (tx, rx) = channel::<u64>();
    let producer = std::thread::spawn(move || {
        for i in 0..n {
            tx.send_blocking(i).unwrap();
        }
    });
    let mut got = Vec::new();
    let mut timeouts = 0;
    loop {
        match rx.recv_timeout_blocking(Duration::from_micros(20)) {
            Ok(v) => got.push(v),
            Err(RecvTimeoutError::Timeout) => timeouts += 1,
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    producer.join().unwrap();
    eprintln!("{timeouts} timeouts");
    assert_exactly_once(got, n);
}

#[test]
fn iter_waits_for_each_value_and_ends_when_the_senders_go() {
    let (tx, rx) = channel::<u32>();
    let t = std::thread::spawn(move || {
        for i in 0..5 {
            tx.send_blocking(i).unwrap();
        }
    });
    assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    t.join().unwrap();

    let (tx, rx) = unbounded();
    tx.try_send('a').unwrap();
    drop(tx);
    let mut seen = Vec::new();
    for c in &rx {
        seen.push(c);
    }
    assert_eq!(seen, ['a']);
}

#[test]
fn try_iter_takes_what_is_there_now() {
    let (tx, rx) = unbounded();
    assert_eq!(rx.try_iter().count(), 0);
    for i in 0..3 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [0, 1, 2]);
    tx.try_send(3).unwrap();
    assert_eq!(rx.try_iter().next(), Some(3));
}

#[test]
fn into_iter_owns_the_receiver() {
    let (tx, rx) = bounded(4);
    let consumer = std::thread::spawn(move || rx.into_iter().sum::<u64>());
    for i in 1..=100 {
        tx.send_blocking(i).unwrap();
    }
    drop(tx);
    assert_eq!(consumer.join().unwrap(), 5050);
}

#[test]
fn iter_on_a_fibra_worker_fails_loudly() {
    let rt = fibra::Runtime::new().unwrap();
    let (_tx, rx) = unbounded::<u8>();
    let r = rt.block_on(rt.spawn(async move { rx.iter().next() }));
    assert!(
        r.is_err(),
        "a blocking iterator on a worker must panic, not hang"
    );
}
