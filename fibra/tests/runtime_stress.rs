//! Stress tests of the runtime. Sizes scale with `FIBRA_STRESS` (default 1).

use fibra::Runtime;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

fn scale() -> u64 {
    std::env::var("FIBRA_STRESS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

#[test]
fn a_million_tasks_spawned_and_joined() {
    let n = if cfg!(debug_assertions) {
        100_000
    } else {
        1_000_000
    } * scale();
    let rt = Runtime::new().unwrap();
    let sum = rt.block_on(async move {
        let hs: Vec<_> = (0..n).map(|i| fibra::spawn(async move { i })).collect();
        let mut sum = 0u64;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, n * (n - 1) / 2);
}

#[test]
fn tasks_spawned_from_many_workers_at_once() {
    let rt = Runtime::builder().workers(4).build().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    let per = 2_000 * scale();
    rt.block_on(async move {
        let spawners: Vec<_> = (0..8)
            .map(|_| {
                let c = c.clone();
                fibra::spawn(async move {
                    let hs: Vec<_> = (0..per)
                        .map(|_| {
                            let c = c.clone();
                            fibra::spawn(async move {
                                fibra::yield_now().await;
                                c.fetch_add(1, Ordering::Relaxed);
                            })
                        })
                        .collect();
                    for h in hs {
                        h.await.unwrap();
                    }
                })
            })
            .collect();
        for s in spawners {
            s.await.unwrap();
        }
    });
    assert_eq!(count.load(Ordering::Relaxed), 8 * per);
}

#[test]
fn panics_under_load_are_contained() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let n = 5_000 * scale();
    let (ok, panicked) = rt.block_on(async move {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                fibra::spawn(async move {
                    fibra::yield_now().await;
                    assert!(i % 7 != 0, "planned panic {i}");
                    i
                })
            })
            .collect();
        let (mut ok, mut panicked) = (0, 0);
        for h in hs {
            match h.await {
                Ok(_) => ok += 1,
                Err(e) if e.is_panic() => panicked += 1,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        (ok, panicked)
    });
    assert_eq!(panicked, n.div_ceil(7));
    assert_eq!(ok + panicked, n);
}

#[test]
fn many_pairs_exchange_every_message_across_workers() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let pairs = 50;
    let rounds = 2_000 * scale();
    let total = Arc::new(AtomicUsize::new(0));
    let t = total.clone();
    rt.block_on(async move {
        let mut hs = Vec::new();
        for _ in 0..pairs {
            let (ping_tx, ping_rx) = fibra::channel::<u64>();
            let (pong_tx, pong_rx) = fibra::channel::<u64>();
            hs.push(fibra::spawn(async move {
                while let Ok(v) = ping_rx.recv().await {
                    pong_tx.send(v + 1).await.unwrap();
                }
            }));
            let t = t.clone();
            hs.push(fibra::spawn(async move {
                for i in 0..rounds {
                    ping_tx.send(i).await.unwrap();
                    assert_eq!(pong_rx.recv().await.unwrap(), i + 1);
                    t.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
    assert_eq!(total.load(Ordering::Relaxed), pairs * rounds as usize);
}

/// Tasks come from their spawning worker's slab; here their last
/// references go on other threads (OS threads joining them, and tasks of
/// different sizes completing on either worker), so their blocks go back
/// through the pages' remote lists, and later rounds reuse those pages.
/// Every task's future and output is dropped exactly once, and every
/// output arrives intact (a block handed out twice would mix them).
#[test]
fn tasks_freed_off_their_worker_are_each_dropped_once() {
    struct Counted(Arc<AtomicUsize>, [u64; 4]);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let rt = Runtime::builder().workers(2).build().unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let per_round = 20_000 * scale() as usize;
    for round in 0..3u64 {
        let d = drops.clone();
        let handles = rt.block_on(async move {
            (0..per_round as u64)
                .map(|i| {
                    let guard = Counted(d.clone(), [i; 4]);
                    let v = round * 1_000_000 + i;
                    if i % 2 == 0 {
                        // Small: the future holds the guard and a number.
                        fibra::spawn(async move {
                            Counted(guard.0.clone(), [v, v, v, drop_then(guard)])
                        })
                    } else {
                        // Larger: a bigger future, another size class.
                        let pad = [v; 24];
                        fibra::spawn(async move {
                            fibra::yield_now().await;
                            Counted(guard.0.clone(), [pad[0], pad[23], v, drop_then(guard)])
                        })
                    }
                })
                .collect::<Vec<_>>()
        });
        // Join from two OS threads: the handles' references are the last
        // ones there.
        let mut handles = handles.into_iter().enumerate().collect::<Vec<_>>();
        let other = handles.split_off(handles.len() / 2);
        let check = move |hs: Vec<(usize, fibra::JoinHandle<Counted>)>| {
            for (i, h) in hs {
                let out = fibra::block_on(h).unwrap();
                let v = round * 1_000_000 + i as u64;
                assert_eq!(out.1, [v, v, v, 0], "task {i} of round {round}");
            }
        };
        let t = std::thread::spawn(move || check(other));
        check(handles);
        t.join().unwrap();
    }
    drop(rt);
    // Per task: its guard (dropped in its body) and its output.
    assert_eq!(drops.load(Ordering::Relaxed), 3 * per_round * 2);
}

/// Drops `c` and returns 0.
fn drop_then<T>(c: T) -> u64 {
    drop(c);
    0
}

/// Pipelines longer and shorter than a worker's ring of retained tasks
/// (rt/retained.rs, 128), on every flavour: retained tasks are taken out by
/// local wakes, evicted when the ring fills, and woken from the other worker
/// while retained. Every value arrives, once, in order.
#[test]
fn pipelines_around_the_retained_ring_size_deliver_every_value_in_order() {
    let messages = 2_000 * scale();
    for links in [10, 127, 128, 129, 300] {
        for rt in [
            Runtime::builder().current_thread().build().unwrap(),
            Runtime::builder().workers(1).build().unwrap(),
            Runtime::builder().workers(2).build().unwrap(),
        ] {
            let got = rt.block_on(async move {
                let (first, mut last) = fibra::channel::<u64>();
                let mut stages = Vec::new();
                for _ in 0..links {
                    let (tx, next) = fibra::channel();
                    let rx = std::mem::replace(&mut last, next);
                    stages.push(fibra::spawn(async move {
                        while let Ok(v) = rx.recv().await {
                            tx.send(v).await.unwrap();
                        }
                    }));
                }
                let producer = fibra::spawn(async move {
                    for i in 0..messages {
                        first.send(i).await.unwrap();
                    }
                });
                let mut expect = 0;
                while let Ok(v) = last.recv().await {
                    assert_eq!(v, expect, "{links} links");
                    expect += 1;
                }
                producer.await.unwrap();
                for s in stages {
                    s.await.unwrap();
                }
                expect
            });
            assert_eq!(got, messages, "{links} links");
        }
    }
}
