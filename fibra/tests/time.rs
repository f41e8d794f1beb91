//! Time ops: after/at/sleep/timeout, in choices, on every executor.

use fibra::time::{Elapsed, after, at, sleep, timeout};
use fibra::{Op, choose, choose_biased};
use std::time::{Duration, Instant};

#[test]
fn after_never_fires_early_on_an_os_thread() {
    for ms in [1u64, 3, 10, 25] {
        let t = Instant::now();
        after(Duration::from_millis(ms)).perform();
        assert!(
            t.elapsed() >= Duration::from_millis(ms),
            "{ms} ms fired early"
        );
    }
}

#[test]
fn timers_fire_in_deadline_order_and_within_their_deadline() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let order = rt.block_on(async {
        let (tx, rx) = fibra::unbounded::<u64>();
        let start = Instant::now();
        let mut hs = Vec::new();
        for ms in [40u64, 10, 30, 20, 50, 0, 5] {
            let tx = tx.clone();
            hs.push(fibra::spawn(async move {
                sleep(Duration::from_millis(ms)).await;
                let late = start.elapsed().as_millis() as u64;
                assert!(late >= ms, "timer {ms} fired at {late} ms");
                tx.send(ms).await.unwrap();
            }));
        }
        drop(tx);
        for h in hs {
            h.await.unwrap();
        }
        let mut order = Vec::new();
        while let Ok(v) = rx.try_recv() {
            order.push(v);
        }
        order
    });
    assert_eq!(order, [0, 5, 10, 20, 30, 40, 50]);
}

#[test]
fn many_concurrent_sleeps_all_complete() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let n = 10_000u64;
    let done = rt.block_on(async move {
        let hs: Vec<_> = (0..n)
            .map(|i| fibra::spawn(async move { sleep(Duration::from_millis(1 + i % 20)).await }))
            .collect();
        let mut done = 0;
        for h in hs {
            h.await.unwrap();
            done += 1;
        }
        done
    });
    assert_eq!(done, n);
}

#[test]
fn timeout_returns_elapsed_and_withdraws_the_op() {
    let (tx, rx) = fibra::channel::<u32>();
    assert_eq!(
        timeout(rx.recv_op(), Duration::from_millis(5)).perform(),
        Err(Elapsed)
    );
    // The withdrawn receive must not absorb a later send.
    assert!(tx.try_send(1).unwrap_err().is_full());
}

#[test]
fn a_timed_out_send_returns_nothing_lost_on_try() {
    let (tx, _rx) = fibra::channel::<String>();
    let op = timeout(tx.send_op("kept".to_string()), Duration::from_millis(1));
    assert_eq!(op.perform(), Err(Elapsed));
    // try_send gives the value back when nobody takes it.
    assert_eq!(tx.try_send("back".into()).unwrap_err().into_inner(), "back");
}

#[test]
fn time_ops_in_a_choice_with_channels_on_tokio() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = fibra::channel::<u8>();
        let r = choose((
            rx.recv_op().wrap(|r| r.ok()),
            after(Duration::from_millis(5)).wrap(|()| None),
        ))
        .await;
        assert_eq!(r, None);
        tokio::spawn(async move { tx.send(4).await.unwrap() });
        let r = choose((
            rx.recv_op().wrap(|r| r.ok()),
            after(Duration::from_secs(5)).wrap(|()| None),
        ))
        .await;
        assert_eq!(r, Some(4));
    });
}

#[test]
fn at_a_past_instant_is_ready_now() {
    assert!(
        at(Instant::now() - Duration::from_millis(1))
            .try_perform()
            .is_ok()
    );
    assert!(after(Duration::from_secs(60)).try_perform().is_err());
}

#[test]
fn dropping_a_pending_sleep_cancels_its_timer() {
    futures::executor::block_on(async {
        let (_tx, rx) = fibra::channel::<u8>();
        for _ in 0..1000 {
            let r = choose_biased((
                after(Duration::from_millis(1)).wrap(|()| 0u8),
                rx.recv_op().wrap(|r| r.unwrap()),
            ))
            .await;
            assert_eq!(r, 0);
            // A long timer whose perform is dropped at once.
            let fut = sleep(Duration::from_secs(3600));
            let mut fut = Box::pin(fut);
            let _ = futures::poll!(fut.as_mut());
            drop(fut);
        }
    });
}

#[test]
fn send_timeout_gives_the_value_back_on_every_path() {
    let (tx, rx) = fibra::bounded::<String>(1);
    tx.send_timeout_blocking("first".into(), Duration::from_millis(5))
        .unwrap();
    let err = tx
        .send_timeout_blocking("second".into(), Duration::from_millis(5))
        .unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(err.into_inner(), "second");
    assert_eq!(rx.try_recv().unwrap(), "first");
    // A receiver arriving in time takes it.
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        rx.recv_blocking().unwrap()
    });
    tx.send_timeout_blocking("third".into(), Duration::from_secs(10))
        .unwrap();
    tx.send_timeout_blocking("fourth".into(), Duration::from_secs(10))
        .unwrap();
    assert_eq!(t.join().unwrap(), "third");
    // Every receiver gone: disconnected, value back.
    let (tx, rx) = fibra::channel::<u8>();
    drop(rx);
    let err = tx
        .send_timeout_blocking(9, Duration::from_secs(1))
        .unwrap_err();
    assert!(!err.is_timeout());
    assert_eq!(err.into_inner(), 9);
}
