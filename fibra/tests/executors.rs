//! The same ping-pong on every executor: fibra's ops need only a `Waker`
//! (tokio, futures' executors, `fibra::block_on`) or a parked OS thread.

mod common;

use fibra::{Op, Receiver, Sender, bounded, channel, choose};
use futures::task::LocalSpawnExt;

const ROUNDS: u64 = 1_000;

/// Sends 0..rounds and checks each answer.
async fn pinger(tx: Sender<u64>, rx: Receiver<u64>, rounds: u64) -> u64 {
    for i in 0..rounds {
        tx.send(i).await.unwrap();
        assert_eq!(rx.recv().await, Ok(i + 1));
    }
    rounds
}

/// Answers every value with its successor until the pinger hangs up.
async fn ponger(rx: Receiver<u64>, tx: Sender<u64>) -> u64 {
    let mut n = 0;
    while let Ok(v) = rx.recv().await {
        tx.send(v + 1).await.unwrap();
        n += 1;
    }
    n
}

/// The same, using ops in a choice (with a quit channel) rather than plain
/// methods.
async fn ponger_choosing(rx: Receiver<u64>, tx: Sender<u64>, quit: Receiver<()>) -> u64 {
    let mut n = 0;
    loop {
        let msg = choose((rx.recv_op().wrap(|r| r.ok()), quit.recv_op().wrap(|_| None))).await;
        match msg {
            Some(v) => {
                tx.send(v + 1).await.unwrap();
                n += 1;
            }
            None => return n,
        }
    }
}

type Pair = (Sender<u64>, Receiver<u64>);
type MakePair = fn() -> Pair;
/// The pinger's ends (send pings, receive pongs) and the ponger's.
type Ends = ((Sender<u64>, Receiver<u64>), (Receiver<u64>, Sender<u64>));

fn pairs(make: MakePair) -> Ends {
    let (ping_tx, ping_rx) = make();
    let (pong_tx, pong_rx) = make();
    ((ping_tx, pong_rx), (ping_rx, pong_tx))
}

fn flavours() -> [(&'static str, MakePair); 2] {
    [
        ("rendezvous", channel::<u64>),
        ("bounded(1)", || bounded(1)),
    ]
}

#[test]
fn ping_pong_on_tokio_current_thread_runtime() {
    for (name, make) in flavours() {
        let ((tx, rx), (prx, ptx)) = pairs(make);
        let rt = common::tokio_ct();
        let (a, b) = rt.block_on(async {
            let pong = tokio::spawn(ponger(prx, ptx));
            let ping = tokio::spawn(pinger(tx, rx, ROUNDS));
            (ping.await.unwrap(), pong.await.unwrap())
        });
        assert_eq!((a, b), (ROUNDS, ROUNDS), "{name}");
    }
}

#[test]
fn ping_pong_on_tokio_multi_thread_runtime() {
    for (name, make) in flavours() {
        let ((tx, rx), (prx, ptx)) = pairs(make);
        let rt = common::tokio_mt();
        let pong = rt.spawn(ponger(prx, ptx));
        let ping = rt.spawn(pinger(tx, rx, ROUNDS));
        assert_eq!(rt.block_on(ping).unwrap(), ROUNDS, "{name}");
        assert_eq!(rt.block_on(pong).unwrap(), ROUNDS, "{name}");
    }
}

#[test]
fn ping_pong_on_futures_local_pool() {
    for (name, make) in flavours() {
        let ((tx, rx), (prx, ptx)) = pairs(make);
        let mut pool = futures::executor::LocalPool::new();
        let spawner = pool.spawner();
        let pong = spawner.spawn_local_with_handle(ponger(prx, ptx)).unwrap();
        let ping = spawner
            .spawn_local_with_handle(pinger(tx, rx, ROUNDS))
            .unwrap();
        let (a, b) = pool.run_until(async { (ping.await, pong.await) });
        assert_eq!((a, b), (ROUNDS, ROUNDS), "{name}");
    }
}

#[test]
fn ping_pong_between_two_futures_joined_in_futures_block_on() {
    for (name, make) in flavours() {
        let ((tx, rx), (prx, ptx)) = pairs(make);
        let (a, b) = futures::executor::block_on(async {
            futures::join!(pinger(tx, rx, ROUNDS), ponger(prx, ptx))
        });
        assert_eq!((a, b), (ROUNDS, ROUNDS), "{name}");
    }
}

#[test]
fn ping_pong_between_two_futures_joined_in_fibra_block_on() {
    for (name, make) in flavours() {
        let ((tx, rx), (prx, ptx)) = pairs(make);
        let (a, b) =
            fibra::block_on(async { futures::join!(pinger(tx, rx, ROUNDS), ponger(prx, ptx)) });
        assert_eq!((a, b), (ROUNDS, ROUNDS), "{name}");
    }
}

#[test]
fn ping_pong_between_os_threads_with_blocking_calls() {
    for (name, make) in flavours() {
        let ((tx, rx), (prx, ptx)) = pairs(make);
        let pong = std::thread::spawn(move || {
            let mut n = 0;
            while let Ok(v) = prx.recv_blocking() {
                ptx.send_blocking(v + 1).unwrap();
                n += 1;
            }
            n
        });
        for i in 0..ROUNDS {
            tx.send_blocking(i).unwrap();
            assert_eq!(rx.recv_blocking(), Ok(i + 1), "{name}");
        }
        drop(tx);
        assert_eq!(pong.join().unwrap(), ROUNDS, "{name}");
    }
}

#[test]
fn ping_pong_between_an_os_thread_and_a_tokio_task() {
    for (name, make) in flavours() {
        // thread pings, task pongs
        let ((tx, rx), (prx, ptx)) = pairs(make);
        let rt = common::tokio_mt();
        let pong = rt.spawn(ponger(prx, ptx));
        let ping = std::thread::spawn(move || fibra::block_on(pinger(tx, rx, ROUNDS)));
        assert_eq!(ping.join().unwrap(), ROUNDS, "{name}");
        assert_eq!(rt.block_on(pong).unwrap(), ROUNDS, "{name}");

        // task pings, thread pongs with blocking calls
        let ((tx, rx), (prx, ptx)) = pairs(make);
        let pong = std::thread::spawn(move || {
            let mut n = 0;
            while let Ok(v) = prx.recv_op().perform() {
                ptx.send_op(v + 1).perform().unwrap();
                n += 1;
            }
            n
        });
        let ping = rt.spawn(pinger(tx, rx, ROUNDS));
        assert_eq!(rt.block_on(ping).unwrap(), ROUNDS, "{name}");
        assert_eq!(pong.join().unwrap(), ROUNDS, "{name}");
    }
}

#[test]
fn ping_pong_between_a_tokio_task_and_a_futures_local_pool_on_another_thread() {
    let ((tx, rx), (prx, ptx)) = pairs(channel::<u64>);
    let (quit_tx, quit_rx) = channel::<()>();
    let pong = std::thread::spawn(move || {
        let mut pool = futures::executor::LocalPool::new();
        pool.run_until(ponger_choosing(prx, ptx, quit_rx))
    });
    let rt = common::tokio_ct();
    rt.block_on(async {
        // Keep a sender alive so that only the quit message ends the ponger.
        assert_eq!(pinger(tx.clone(), rx, ROUNDS).await, ROUNDS);
        quit_tx.send(()).await.unwrap();
    });
    drop(tx);
    assert_eq!(pong.join().unwrap(), ROUNDS);
}

#[test]
fn a_token_passes_around_a_ring_of_stages_on_different_executors() {
    // Stage 0: an OS thread (blocking); 1: a tokio task; 2: a LocalPool
    // thread; 3: fibra::block_on on a thread. Each adds its index.
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..4).map(|_| channel::<u64>()).unzip();
    let mut rxs = rxs.into_iter();
    let mut txs = txs.into_iter();
    let (rx0, rx1, rx2, rx3) = (
        rxs.next().unwrap(),
        rxs.next().unwrap(),
        rxs.next().unwrap(),
        rxs.next().unwrap(),
    );
    let (tx0, tx1, tx2, tx3) = (
        txs.next().unwrap(),
        txs.next().unwrap(),
        txs.next().unwrap(),
        txs.next().unwrap(),
    );
    let laps = 200;
    // Stage k receives on rx_k and sends on tx_{k+1}.
    let rt = common::tokio_mt();
    let s1 = rt.spawn(async move {
        while let Ok(v) = rx1.recv().await {
            tx2.send(v + 1).await.unwrap();
        }
    });
    let s2 = std::thread::spawn(move || {
        futures::executor::LocalPool::new().run_until(async move {
            while let Ok(v) = rx2.recv().await {
                tx3.send(v + 2).await.unwrap();
            }
        })
    });
    let s3 = std::thread::spawn(move || {
        fibra::block_on(async move {
            while let Ok(v) = rx3.recv().await {
                if tx0.send(v + 3).await.is_err() {
                    return;
                }
            }
        })
    });
    let mut token = 0;
    for lap in 0..laps {
        tx1.send_blocking(token).unwrap();
        token = rx0.recv_blocking().unwrap();
        assert_eq!(token, (lap + 1) * 6);
    }
    drop(tx1);
    rt.block_on(s1).unwrap();
    s2.join().unwrap();
    s3.join().unwrap();
}

#[test]
fn ops_work_on_smol_and_meet_an_os_thread() {
    let (tx, rx) = fibra::channel::<u64>();
    let (back_tx, back_rx) = fibra::channel::<u64>();
    let echo = std::thread::spawn(move || {
        while let Ok(v) = rx.recv_blocking() {
            back_tx.send_blocking(v * 2).unwrap();
        }
    });
    let sum = smol::block_on(async {
        let ex = smol::Executor::new();
        ex.run(async {
            let mut sum = 0;
            for i in 0..1000 {
                tx.send(i).await.unwrap();
                sum += back_rx.recv().await.unwrap();
            }
            drop(tx);
            sum
        })
        .await
    });
    echo.join().unwrap();
    assert_eq!(sum, 999 * 1000);
}
