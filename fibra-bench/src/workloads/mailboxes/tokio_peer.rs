//! The group on tokio: `Semaphore`, the unbounded mpsc for mailboxes and
//! buffered channels, `mpsc::channel(1)` for rendezvous channels,
//! `task::yield_now`.

use std::future::Future;
use std::sync::Arc;

use super::workload::{
    Asymmetric, Buffered, Channel, Mailbox, Sema, SemaBaseline, SwitchBaseline, Symmetric, Workload,
};

/// One run of `workload` on tokio.
pub async fn run(workload: Workload, n: u64) -> u64 {
    match workload {
        SemaBaseline => sema_baseline(n).await,
        SwitchBaseline => switch(n).await,
        Asymmetric(Sema) => asymmetric_sema(n).await,
        Asymmetric(Mailbox | Buffered) => asymmetric_unbounded(n).await,
        Asymmetric(Channel) => asymmetric_channel(n).await,
        Symmetric(Sema) => symmetric_sema(n).await,
        Symmetric(Mailbox | Buffered) => symmetric_unbounded(n).await,
        Symmetric(Channel) => symmetric_channel(n).await,
    }
}

/// Spawns `main` then `other` as tokio tasks; returns `main`'s result once
/// both are done.
async fn two_tasks(
    main: impl Future<Output = u64> + Send + 'static,
    other: impl Future<Output = ()> + Send + 'static,
) -> u64 {
    let main = tokio::spawn(main);
    let other = tokio::spawn(other);
    other.await.expect("tokio task failed");
    main.await.expect("tokio task failed")
}

async fn sema_baseline(n: u64) -> u64 {
    let task = tokio::spawn(async move {
        let sema = tokio::sync::Semaphore::new(1);
        let mut count = 0;
        for _ in 0..n {
            let permit = sema.acquire().await.expect("tokio: semaphore closed");
            drop(permit);
            count += 1;
        }
        assert_eq!(sema.available_permits(), 1, "tokio: permit lost");
        count
    });
    task.await.expect("tokio task failed")
}

async fn switch(n: u64) -> u64 {
    async fn yielder(n: u64) -> u64 {
        let mut count = 0;
        for _ in 0..n {
            tokio::task::yield_now().await;
            count += 1;
        }
        count
    }
    let handles = [tokio::spawn(yielder(n)), tokio::spawn(yielder(n))];
    crate::exec::tokio_join_sum(handles).await
}

async fn asymmetric_sema(n: u64) -> u64 {
    let sema = Arc::new(tokio::sync::Semaphore::new(0));
    let posts = sema.clone();
    two_tasks(
        async move {
            let mut count = 0;
            for _ in 0..n {
                sema.acquire()
                    .await
                    .expect("tokio: semaphore closed")
                    .forget();
                count += 1;
            }
            count
        },
        async move {
            for _ in 0..n {
                posts.add_permits(1);
            }
        },
    )
    .await
}

async fn symmetric_sema(n: u64) -> u64 {
    use tokio::sync::Semaphore;
    let ping = Arc::new(Semaphore::new(0));
    let pong = Arc::new(Semaphore::new(0));
    let (ping2, pong2) = (ping.clone(), pong.clone());
    two_tasks(
        async move {
            let mut count = 0;
            for _ in 0..n {
                ping.add_permits(1);
                pong.acquire()
                    .await
                    .expect("tokio: semaphore closed")
                    .forget();
                count += 1;
            }
            count
        },
        async move {
            for _ in 0..n {
                ping2
                    .acquire()
                    .await
                    .expect("tokio: semaphore closed")
                    .forget();
                pong2.add_permits(1);
            }
        },
    )
    .await
}

async fn asymmetric_unbounded(n: u64) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    two_tasks(
        async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += rx.recv().await.expect("tokio: producer gone");
            }
            sum
        },
        async move {
            for i in 0..n {
                assert!(tx.send(i).is_ok(), "tokio: consumer gone");
            }
        },
    )
    .await
}

async fn asymmetric_channel(n: u64) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    two_tasks(
        async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += rx.recv().await.expect("tokio: producer gone");
            }
            sum
        },
        async move {
            for i in 0..n {
                assert!(tx.send(i).await.is_ok(), "tokio: consumer gone");
            }
        },
    )
    .await
}

async fn symmetric_unbounded(n: u64) -> u64 {
    use tokio::sync::mpsc::unbounded_channel;
    let (ping_tx, mut ping_rx) = unbounded_channel::<u64>();
    let (pong_tx, mut pong_rx) = unbounded_channel::<u64>();
    two_tasks(
        async move {
            let mut sum = 0;
            for i in 0..n {
                assert!(ping_tx.send(i).is_ok(), "tokio: responder gone");
                sum += pong_rx.recv().await.expect("tokio: responder gone");
            }
            sum
        },
        async move {
            for _ in 0..n {
                let v = ping_rx.recv().await.expect("tokio: initiator gone");
                assert!(pong_tx.send(v + 1).is_ok(), "tokio: initiator gone");
            }
        },
    )
    .await
}

async fn symmetric_channel(n: u64) -> u64 {
    use tokio::sync::mpsc::channel;
    let (ping_tx, mut ping_rx) = channel::<u64>(1);
    let (pong_tx, mut pong_rx) = channel::<u64>(1);
    two_tasks(
        async move {
            let mut sum = 0;
            for i in 0..n {
                assert!(ping_tx.send(i).await.is_ok(), "tokio: responder gone");
                sum += pong_rx.recv().await.expect("tokio: responder gone");
            }
            sum
        },
        async move {
            for _ in 0..n {
                let v = ping_rx.recv().await.expect("tokio: initiator gone");
                assert!(pong_tx.send(v + 1).await.is_ok(), "tokio: initiator gone");
            }
        },
    )
    .await
}
