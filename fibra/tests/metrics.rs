//! `Handle::metrics`: worker count and queue depths always; counters
//! (polls, steals, parks, alive tasks) with the feature `metrics`.

#[test]
fn depths_and_workers() {
    let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    let m = rt.handle().metrics();
    assert_eq!(m.num_workers(), 1);
    // Spawned from outside and not run yet: in the global queue.
    let hs: Vec<_> = (0..5).map(|i| rt.spawn(async move { i })).collect();
    assert_eq!(m.global_queue_depth(), 5);
    let sum = rt.block_on(async move {
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, 10);
    assert_eq!(m.global_queue_depth(), 0);
    assert_eq!(m.worker_local_queue_depth(0), 0);
}

#[cfg(feature = "metrics")]
#[test]
fn counters_count_polls_alive_tasks_and_parks() {
    const N: usize = 50;
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    let m = rt.handle().metrics();
    let inside = rt.block_on(async move {
        let (tx, rx) = fibra::channel::<()>();
        let mut hs = Vec::new();
        for _ in 0..N {
            let rx = rx.clone();
            hs.push(fibra::spawn(async move { rx.recv().await }));
        }
        // Let every waiter block.
        for _ in 0..10 {
            fibra::yield_now().await;
        }
        let m = fibra::Handle::try_current().unwrap().metrics();
        // The N waiters and this task.
        let alive = m.num_alive_tasks();
        for _ in 0..N {
            tx.send(()).await.unwrap();
        }
        for h in hs {
            h.await.unwrap().unwrap();
        }
        alive
    });
    assert_eq!(inside, N + 1);
    assert_eq!(m.num_alive_tasks(), 0);
    let polls = m.worker_poll_count(0) + m.worker_poll_count(1);
    assert!(
        polls >= 2 * N as u64,
        "{polls} polls: each waiter ran twice"
    );
    // Idle now: both workers sleep soon.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while m.worker_park_count(0) == 0 || m.worker_park_count(1) == 0 {
        assert!(std::time::Instant::now() < deadline, "workers never parked");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = m.worker_steal_count(0) + m.worker_steal_count(1);
    // spawn_blocking counts as a task too, and finishes.
    rt.block_on(async { fibra::spawn_blocking(|| 1).await.unwrap() });
    assert_eq!(m.num_alive_tasks(), 0);
}
