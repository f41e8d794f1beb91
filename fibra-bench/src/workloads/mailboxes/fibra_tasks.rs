//! The group on fibra tasks on fibra's runtime: `Semaphore`, `mailbox()`,
//! `channel()`, `unbounded()`, `yield_now()`.

use std::future::Future;
use std::sync::Arc;

use super::workload::{
    Asymmetric, Buffered, Channel, Mailbox, Sema, SemaBaseline, SwitchBaseline, Symmetric, Workload,
};

/// One run of `workload` on fibra's runtime.
pub async fn run(workload: Workload, n: u64) -> u64 {
    match workload {
        SemaBaseline => sema_baseline(n).await,
        SwitchBaseline => switch(n).await,
        Asymmetric(Sema) => asymmetric_sema(n).await,
        Asymmetric(Mailbox) => asymmetric_mailbox(n).await,
        Asymmetric(Channel) => asymmetric(fibra::channel(), n).await,
        Asymmetric(Buffered) => asymmetric(fibra::unbounded(), n).await,
        Symmetric(Sema) => symmetric_sema(n).await,
        Symmetric(Mailbox) => symmetric_mailbox(n).await,
        Symmetric(Channel) => symmetric(fibra::channel(), fibra::channel(), n).await,
        Symmetric(Buffered) => symmetric(fibra::unbounded(), fibra::unbounded(), n).await,
    }
}

/// Spawns `main` then `other` as fibra tasks; returns `main`'s result once
/// both are done.
async fn two_tasks(
    main: impl Future<Output = u64> + Send + 'static,
    other: impl Future<Output = ()> + Send + 'static,
) -> u64 {
    let main = fibra::spawn(main);
    let other = fibra::spawn(other);
    other.await.expect("fibra task failed");
    main.await.expect("fibra task failed")
}

async fn sema_baseline(n: u64) -> u64 {
    let task = fibra::spawn(async move {
        let sema = fibra::Semaphore::new(1);
        let mut count = 0;
        for _ in 0..n {
            let permit = sema.acquire().await.expect("fibra: semaphore closed");
            drop(permit);
            count += 1;
        }
        assert_eq!(sema.available_permits(), 1, "fibra: permit lost");
        count
    });
    task.await.expect("fibra task failed")
}

async fn asymmetric_sema(n: u64) -> u64 {
    let sema = Arc::new(fibra::Semaphore::new(0));
    let posts = sema.clone();
    two_tasks(
        async move {
            let mut count = 0;
            for _ in 0..n {
                sema.acquire()
                    .await
                    .expect("fibra: semaphore closed")
                    .forget();
                count += 1;
            }
            count
        },
        async move {
            for _ in 0..n {
                posts.release(1);
            }
        },
    )
    .await
}

async fn symmetric_sema(n: u64) -> u64 {
    use fibra::Semaphore;
    let ping = Arc::new(Semaphore::new(0));
    let pong = Arc::new(Semaphore::new(0));
    let (ping2, pong2) = (ping.clone(), pong.clone());
    two_tasks(
        async move {
            let mut count = 0;
            for _ in 0..n {
                ping.release(1);
                pong.acquire()
                    .await
                    .expect("fibra: semaphore closed")
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
                    .expect("fibra: semaphore closed")
                    .forget();
                pong2.release(1);
            }
        },
    )
    .await
}

/// `asymmetric-mailbox`: the producer sends to the consumer's address
/// (a send never blocks).
async fn asymmetric_mailbox(n: u64) -> u64 {
    let (addr, mut inbox) = fibra::mailbox::<u64>();
    two_tasks(
        async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += inbox.recv().await.expect("fibra: producer gone");
            }
            sum
        },
        async move {
            for i in 0..n {
                assert!(addr.send(i).is_ok(), "fibra: consumer gone");
            }
        },
    )
    .await
}

async fn symmetric_mailbox(n: u64) -> u64 {
    let (ping, mut ping_inbox) = fibra::mailbox::<u64>();
    let (pong, mut pong_inbox) = fibra::mailbox::<u64>();
    two_tasks(
        async move {
            let mut sum = 0;
            for i in 0..n {
                assert!(ping.send(i).is_ok(), "fibra: responder gone");
                sum += pong_inbox.recv().await.expect("fibra: responder gone");
            }
            sum
        },
        async move {
            for _ in 0..n {
                let v = ping_inbox.recv().await.expect("fibra: initiator gone");
                assert!(pong.send(v + 1).is_ok(), "fibra: initiator gone");
            }
        },
    )
    .await
}

async fn switch(n: u64) -> u64 {
    async fn yielder(n: u64) -> u64 {
        let mut count = 0;
        for _ in 0..n {
            fibra::yield_now().await;
            count += 1;
        }
        count
    }
    let handles = [fibra::spawn(yielder(n)), fibra::spawn(yielder(n))];
    crate::exec::fibra_join_sum(handles).await
}

/// `asymmetric-channel` (rendezvous) and `asymmetric-buffered` (unbounded).
async fn asymmetric((tx, rx): (fibra::Sender<u64>, fibra::Receiver<u64>), n: u64) -> u64 {
    two_tasks(
        async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += rx.recv().await.expect("fibra: producer gone");
            }
            sum
        },
        async move {
            for i in 0..n {
                assert!(tx.send(i).await.is_ok(), "fibra: consumer gone");
            }
        },
    )
    .await
}

/// `symmetric-channel` (rendezvous) and `symmetric-buffered` (unbounded).
async fn symmetric(
    (ping_tx, ping_rx): (fibra::Sender<u64>, fibra::Receiver<u64>),
    (pong_tx, pong_rx): (fibra::Sender<u64>, fibra::Receiver<u64>),
    n: u64,
) -> u64 {
    two_tasks(
        async move {
            let mut sum = 0;
            for i in 0..n {
                assert!(ping_tx.send(i).await.is_ok(), "fibra: responder gone");
                sum += pong_rx.recv().await.expect("fibra: responder gone");
            }
            sum
        },
        async move {
            for _ in 0..n {
                let v = ping_rx.recv().await.expect("fibra: initiator gone");
                assert!(pong_tx.send(v + 1).await.is_ok(), "fibra: initiator gone");
            }
        },
    )
    .await
}
