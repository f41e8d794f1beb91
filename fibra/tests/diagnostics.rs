//! Misuse outside fibra's runtime fails with a message naming what was
//! called and what to do instead; with the `tokio` feature, a blocking
//! perform inside a tokio runtime is made safe or refused.

use fibra::Op;
use std::panic::{AssertUnwindSafe, catch_unwind};

fn panic_message(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("should panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn spawn_actor_outside_a_runtime_names_itself() {
    let built = std::sync::atomic::AtomicBool::new(false);
    let msg = panic_message(|| {
        let _: fibra::Addr<u8> = fibra::spawn_actor(|_mb| {
            built.store(true, std::sync::atomic::Ordering::Relaxed);
            async {}
        });
    });
    assert!(
        msg.contains("fibra::spawn_actor called outside a fibra runtime"),
        "{msg}"
    );
    assert!(msg.contains("Handle::spawn_actor"), "{msg}");
    assert!(!built.into_inner(), "the body is not run outside a runtime");
}

#[test]
fn spawn_and_spawn_blocking_outside_a_runtime_name_themselves() {
    let msg = panic_message(|| drop(fibra::spawn(async {})));
    assert!(msg.contains("fibra::spawn called outside"), "{msg}");
    let msg = panic_message(|| drop(fibra::spawn_blocking(|| ())));
    assert!(
        msg.contains("fibra::spawn_blocking called outside"),
        "{msg}"
    );
}

#[test]
fn a_blocking_perform_on_a_fibra_worker_says_what_to_do() {
    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    let h = rt.spawn(async {
        let (_tx, rx) = fibra::channel::<u8>();
        panic_message(|| {
            let _ = rx.recv_op().perform();
        })
    });
    let msg = fibra::block_on(h).unwrap();
    assert!(msg.contains("use `.await` instead"), "{msg}");
}

#[cfg(feature = "tokio")]
mod tokio_feature {
    use super::*;

    #[test]
    fn a_blocking_perform_in_a_tokio_multi_thread_task_blocks_in_place() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let (tx, rx) = fibra::channel::<u32>();
        rt.block_on(async move {
            // The only worker blocks in a perform (started first); the
            // sender, a task of the same runtime spawned after, still runs
            // because the perform blocked through `block_in_place`, which
            // handed the worker to another thread. Without it the receive
            // would time out: nothing else could run the sender.
            let receiver = tokio::spawn(async move {
                fibra::choose((
                    rx.recv_op().wrap(|r| r.ok()),
                    fibra::time::after(std::time::Duration::from_secs(10)).wrap(|()| None),
                ))
                .perform()
            });
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            let sender = tokio::spawn(async move { tx.send(7).await.unwrap() });
            assert_eq!(receiver.await.unwrap(), Some(7));
            sender.await.unwrap();
        });
    }

    #[test]
    fn a_blocking_perform_in_a_tokio_current_thread_runtime_panics() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let msg = panic_message(|| {
            rt.block_on(async {
                let (_tx, rx) = fibra::channel::<u32>();
                // Bounded, so that a missing check fails rather than hangs.
                fibra::choose((
                    rx.recv_op().wrap(|_| ()),
                    fibra::time::after(std::time::Duration::from_secs(2)),
                ))
                .perform();
            })
        });
        assert!(msg.contains("tokio current-thread runtime"), "{msg}");
        assert!(msg.contains("use `.await` instead"), "{msg}");
    }

    #[test]
    fn a_blocking_perform_in_tokio_spawn_blocking_is_fine() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (tx, rx) = fibra::channel::<u32>();
        rt.block_on(async move {
            let recv = tokio::task::spawn_blocking(move || rx.recv_op().perform());
            tx.send(3).await.unwrap();
            assert_eq!(recv.await.unwrap(), Ok(3));
        });
    }
}

#[test]
fn select_accepts_every_irrefutable_pattern_form() {
    // The refutable-pattern check looks at a clause's first tokens; these
    // irrefutable forms must still pass through it.
    struct Pair(u8, u8);
    let (tx, rx) = fibra::bounded::<(u8, u8)>(4);
    let (ptx, prx) = fibra::bounded::<Pair>(4);
    tx.try_send((1, 2)).unwrap();
    let got = fibra::select_blocking! {
        mut v = rx.recv_op() => { v = v.map(|(a, b)| (b, a)); v.unwrap() }
        else => (0, 0),
    };
    assert_eq!(got, (2, 1));
    tx.try_send((3, 4)).unwrap();
    let got = fibra::select_blocking! {
        ref r = rx.recv_op() => *r.as_ref().unwrap(),
        else => (0, 0),
    };
    assert_eq!(got, (3, 4));
    ptx.try_send(Pair(5, 6)).unwrap();
    let got = fibra::select_blocking! {
        Pair(a, b) = prx.recv_op().wrap(Result::unwrap) => a + b,
        else => 0,
    };
    assert_eq!(got, 11);
    tx.try_send((7, 8)).unwrap();
    let got = fibra::select_blocking! {
        (a, b) = rx.recv_op().wrap(Result::unwrap) => a * b,
        _ = prx.recv_op() => 0,
    };
    assert_eq!(got, 56);
}
