//! Remote messages land in an actor's ordinary mailbox, in order; calls,
//! send ops in choices, lookups of unknown names; from fibra, tokio and OS
//! threads.

mod common;

use fibra::{Op, choose};

use fibra_remote::{CallError, LookupError, ReplyTo};
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Serialize, Deserialize)]
enum Msg {
    Push(u64),
    Sum(ReplyTo<(u64, u64)>),
    Ignore(ReplyTo<u64>),
}

/// An actor that checks it sees 1, 2, 3, … and answers `Sum` with
/// (count, sum).
fn summer() -> fibra::Addr<Msg> {
    fibra::spawn_actor(|mut mb| async move {
        let (mut count, mut sum) = (0, 0);
        while let Some(msg) = mb.recv().await {
            match msg {
                Msg::Push(n) => {
                    assert_eq!(n, count + 1, "out of order");
                    count += 1;
                    sum += n;
                }
                Msg::Sum(reply) => reply.send((count, sum)).unwrap(),
                Msg::Ignore(_) => {}
            }
        }
    })
}

#[test]
fn messages_arrive_in_order_and_calls_see_them() {
    let server = common::server();
    fibra::run(async move {
        let host = common::node(&server).await;
        host.register("summer", summer()).await.unwrap();
        let client = common::node(&server).await;
        let mut summer = client.lookup::<Msg>("summer").await.unwrap();
        const N: u64 = 10_000;
        for n in 1..=N {
            summer.send(Msg::Push(n)).unwrap();
        }
        let got = summer.call(Msg::Sum, Duration::from_secs(10)).await;
        assert_eq!(got, Ok((N, N * (N + 1) / 2)));
        // The bridge counts a delivery just after handing the message over.
        assert!(
            common::wait_until(Duration::from_secs(5), || host.stats().delivered == N + 1),
            "{:?}",
            host.stats()
        );
        assert_eq!(host.stats().lost, 0);
        assert_eq!(host.stats().duplicates, 0);
        assert!(summer.try_exited().is_none());
    });
}

#[test]
fn call_times_out_and_a_late_reply_is_not_taken_by_the_next_call() {
    let server = common::server();
    fibra::run(async move {
        let host = common::node(&server).await;
        host.register("summer", summer()).await.unwrap();
        let client = common::node(&server).await;
        let mut summer = client.lookup::<Msg>("summer").await.unwrap();
        let got = summer.call(Msg::Ignore, Duration::from_millis(50)).await;
        assert_eq!(got, Err(CallError::Timeout));
        summer.send(Msg::Push(1)).unwrap();
        assert_eq!(
            summer.call(Msg::Sum, Duration::from_secs(5)).await,
            Ok((1, 1))
        );
    });
}

#[test]
fn send_op_sends_only_for_the_branch_that_commits() {
    let server = common::server();
    fibra::run(async move {
        let host = common::node(&server).await;
        host.register("summer", summer()).await.unwrap();
        let client = common::node(&server).await;
        let mut summer = client.lookup::<Msg>("summer").await.unwrap();
        let (tx, rx) = fibra::bounded::<()>(1);
        tx.try_send(()).unwrap();
        // Biased: the ready receive wins; the send op must not send.
        let first = fibra::choose_biased((
            rx.recv_op().wrap(|_| "recv"),
            summer.send_op(Msg::Push(1)).wrap(|_| "send"),
        ))
        .await;
        assert_eq!(first, "recv");
        let second = choose((summer.send_op(Msg::Push(1)).wrap(|r| r.is_ok()),)).await;
        assert!(second);
        assert_eq!(
            summer.call(Msg::Sum, Duration::from_secs(5)).await,
            Ok((1, 1))
        );
    });
}

#[test]
fn lookup_of_an_unknown_name_fails_at_once() {
    let server = common::server();
    fibra::block_on(async move {
        let node = common::node(&server).await;
        let t = std::time::Instant::now();
        let got = node.lookup::<Msg>("nobody").await;
        assert_eq!(got.unwrap_err(), LookupError::NotFound("nobody".into()));
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "no responders is immediate"
        );
    });
}

#[test]
fn works_from_tokio_and_os_threads() {
    let server = common::server();
    let url = server.url().to_string();
    // Host on an OS thread with a plain mailbox (no fibra runtime).
    let (addr, mut mb) = fibra::mailbox::<Msg>();
    let host = fibra::block_on(common::fast().connect(&url)).unwrap();
    fibra::block_on(host.register("plain", addr)).unwrap();
    // Client on tokio.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = common::fast().connect(&url).await.unwrap();
        let plain = client.lookup::<Msg>("plain").await.unwrap();
        plain.send(Msg::Push(7)).unwrap();
        plain.send_op(Msg::Push(8)).await.unwrap();
        // Flushes what is queued (a plain drop would abandon it).
        client.close().await;
    });
    let got: Vec<u64> = (0..2)
        .map(|_| {
            let next = fibra::time::timeout(mb.recv_op(), Duration::from_secs(5));
            match next.perform() {
                Ok(Some(Msg::Push(n))) => n,
                other => panic!("{other:?}"),
            }
        })
        .collect();
    assert_eq!(got, [7, 8]);
}

#[test]
fn a_second_lookup_continues_the_first_ones_sequence() {
    let server = common::server();
    let (addr, mut mb) = fibra::mailbox::<u64>();
    fibra::block_on(async {
        let host = common::node(&server).await;
        host.register("n", addr).await.unwrap();
        let client = common::node(&server).await;
        for i in 0..3 {
            // Every address dropped between sends: the receiver must not
            // take the next ones for duplicates.
            let n = client.lookup::<u64>("n").await.unwrap();
            n.send(i).unwrap();
            assert_eq!(mb.recv_timeout(Duration::from_secs(5)).await, Ok(i));
        }
        assert_eq!(host.stats().duplicates, 0);
    });
}
