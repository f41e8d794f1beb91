//! Bad input and faults: unreadable payloads, a name registered twice, an
//! oversized message, a slow consumer, the NATS server restarted
//! mid-traffic. Each is counted or reported, never a panic, never a
//! duplicate.

mod common;

use fibra::{Op, RecvTimeoutError};
use fibra_remote::{NatsServer, RegisterError, SendError, wire};
use std::time::Duration;

/// Publishes raw payloads with a plain NATS client (on its own tokio
/// runtime).
fn publish_raw(server: &NatsServer, subject: &str, payloads: Vec<Vec<u8>>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        for p in payloads {
            client.publish(subject.to_string(), p.into()).await.unwrap();
        }
        client.flush().await.unwrap();
    });
}

fn recv(mb: &mut fibra::Mailbox<u64>, limit: Duration) -> Result<u64, RecvTimeoutError> {
    match fibra::time::timeout(mb.recv_op(), limit).perform() {
        Ok(Some(m)) => Ok(m),
        Ok(None) => Err(RecvTimeoutError::Disconnected),
        Err(_) => Err(RecvTimeoutError::Timeout),
    }
}

#[test]
fn unreadable_payloads_are_counted_and_dropped() {
    let server = common::server();
    let (addr, mut mb) = fibra::mailbox::<u64>();
    let (host, client) = fibra::block_on(async {
        let host = common::node(&server).await;
        host.register("n", addr).await.unwrap();
        (host, common::node(&server).await)
    });
    let n = fibra::block_on(client.lookup::<u64>("n")).unwrap();
    let mut wrong_version = vec![wire::VERSION + 1, 1];
    wrong_version.extend([0; 16]);
    // A cast header (kind 1) from sender 9, seq 1, then a body that is no
    // u64 (a varint may not run past ten bytes).
    let mut bad_body = vec![
        wire::VERSION,
        1,
        9,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    bad_body.extend([0xff; 12]);
    publish_raw(
        &server,
        n.subject(),
        vec![vec![1, 2, 3], wrong_version, bad_body, Vec::new()],
    );
    n.send(42).unwrap();
    assert_eq!(recv(&mut mb, Duration::from_secs(5)), Ok(42));
    // The bridge counts a delivery just after handing the message over.
    assert!(
        common::wait_until(Duration::from_secs(5), || {
            let stats = host.stats();
            stats.decode_errors == 4 && stats.delivered == 1
        }),
        "{:?}",
        host.stats()
    );
}

#[test]
fn a_name_registered_twice_is_refused() {
    let server = common::server();
    fibra::block_on(async {
        let a = common::node(&server).await;
        let b = common::node(&server).await;
        let (first, _mb1) = fibra::mailbox::<u64>();
        let (second, _mb2) = fibra::mailbox::<u64>();
        a.register("kv", first).await.unwrap();
        let taken = RegisterError::NameTaken {
            name: "kv".into(),
            node: a.id(),
        };
        // On the same node, and on another one.
        assert_eq!(a.register("kv", second.clone()).await, Err(taken.clone()));
        assert_eq!(b.register("kv", second.clone()).await, Err(taken));
        assert_eq!(
            b.register("k.v", second.clone()).await,
            Err(RegisterError::InvalidName("k.v".into()))
        );
        // The refused actor can take another name.
        b.register("kv2", second).await.unwrap();
    });
}

#[test]
fn an_oversized_message_is_refused_and_handed_back() {
    let server = common::server();
    fibra::block_on(async {
        let host = common::node(&server).await;
        let (addr, _mb) = fibra::mailbox::<Vec<u8>>();
        host.register("blob", addr).await.unwrap();
        let blob = host.lookup::<Vec<u8>>("blob").await.unwrap();
        let max = host.max_payload();
        assert!(max > 0);
        match blob.send(vec![7; max]) {
            Err(SendError::TooLarge { msg, size, max: m }) => {
                assert_eq!(msg.len(), max);
                assert!(size > max);
                assert_eq!(m, max);
            }
            other => panic!("{other:?}"),
        }
        // Just below the limit goes through.
        blob.send(vec![7; max - 64]).unwrap();
    });
}

#[test]
fn a_slow_consumer_is_reported_and_its_losses_counted() {
    let server = common::server();
    // A mailbox that holds one message, read only later; NATS buffers 16
    // more for the actor, then drops.
    let (addr, mut mb) = fibra::bounded_mailbox::<u64>(1);
    let (host, client) = fibra::block_on(async {
        let host = common::fast()
            .subscription_capacity(16)
            .connect(server.url())
            .await
            .unwrap();
        host.register("slow", addr).await.unwrap();
        (host, common::node(&server).await)
    });
    let slow = fibra::block_on(client.lookup::<u64>("slow")).unwrap();
    const N: u64 = 2_000;
    for i in 1..=N {
        slow.send(i).unwrap();
    }
    assert!(
        common::wait_until(Duration::from_secs(5), || host.stats().slow_consumer > 0),
        "no slow consumer reported: {:?}",
        host.stats()
    );
    // Drain, then a last message: the gap before it counts what was lost.
    let mut got = Vec::new();
    while let Ok(m) = recv(&mut mb, Duration::from_millis(300)) {
        got.push(m);
    }
    slow.send(N + 1).unwrap();
    while let Ok(m) = recv(&mut mb, Duration::from_secs(5)) {
        got.push(m);
        if m == N + 1 {
            break;
        }
    }
    assert_eq!(got.last(), Some(&(N + 1)));
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "in order, no duplicate"
    );
    let stats = host.stats();
    eprintln!(
        "slow consumer: {} of {N} delivered, {stats:?}",
        got.len() - 1
    );
    assert_eq!(got.len() as u64 - 1 + stats.lost, N, "{stats:?}");
    assert!(stats.lost > 0);
    assert_eq!(stats.duplicates, 0);
}

#[test]
fn a_server_restart_mid_traffic_loses_at_most_what_is_counted_and_never_duplicates() {
    let mut server = common::server();
    let url = server.url().to_string();
    let opts = || {
        fibra_remote::NodeOptions::new()
            .heartbeat(Duration::from_millis(50), Duration::from_secs(10))
            .max_reconnect_delay(Duration::from_millis(50))
    };
    let (addr, mut mb) = fibra::mailbox::<u64>();
    let (host, client) = fibra::block_on(async {
        let host = opts().connect(&url).await.unwrap();
        host.register("sink", addr).await.unwrap();
        (host, opts().connect(&url).await.unwrap())
    });
    let sink = fibra::block_on(client.lookup::<u64>("sink")).unwrap();
    const N: u64 = 20_000;
    let sender = {
        let sink = sink.clone();
        std::thread::spawn(move || {
            for i in 1..=N {
                sink.send(i).unwrap();
                if i % 200 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(60));
    server.restart().unwrap();
    sender.join().unwrap();
    assert!(
        common::wait_until(Duration::from_secs(10), || host.is_connected()
            && client.is_connected()),
        "no reconnection"
    );
    let mut got = Vec::new();
    // After the reconnection, a last message: its gap counts what was lost.
    std::thread::sleep(Duration::from_millis(200));
    sink.send(N + 1).unwrap();
    while let Ok(m) = recv(&mut mb, Duration::from_secs(5)) {
        got.push(m);
        if m == N + 1 {
            break;
        }
    }
    assert_eq!(got.last(), Some(&(N + 1)), "the last message arrived");
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "in order, no duplicate"
    );
    let stats = host.stats();
    eprintln!(
        "server restart: {} of {N} delivered, host {stats:?}, client {:?}",
        got.len() - 1,
        client.stats()
    );
    assert_eq!(got.len() as u64 - 1 + stats.lost, N);
    assert_eq!(stats.duplicates, 0);
    assert!(stats.disconnects >= 1 && stats.reconnects >= 1, "{stats:?}");
    assert_eq!(sink.try_exited(), None, "10 s timeout: the monitor holds");
}

#[test]
fn two_nodes_racing_for_a_name_never_both_get_it() {
    let server = common::server();
    fibra::block_on(async {
        let a = common::node(&server).await;
        let b = common::node(&server).await;
        let mut wins = [0; 2];
        for round in 0..10 {
            let name = format!("contested{round}");
            let (x, _mbx) = fibra::mailbox::<u64>();
            let (y, _mby) = fibra::mailbox::<u64>();
            // Both probes go out before either subscription is in place.
            let (ra, rb) = futures_util::join!(a.register(&name, x), b.register(&name, y));
            assert!(
                !(ra.is_ok() && rb.is_ok()),
                "round {round}: both nodes hold {name:?}"
            );
            for (i, r) in [ra, rb].into_iter().enumerate() {
                match r {
                    Ok(()) => wins[i] += 1,
                    Err(RegisterError::NameTaken { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
        eprintln!("racing registrations won: {wins:?} of 10 rounds");
    });
}

#[test]
fn a_full_outgoing_queue_hands_the_message_back_and_never_blocks() {
    let mut server = common::server();
    let url = server.url().to_string();
    const CAPACITY: usize = 16;
    // The NATS client's own command buffer is tiny too, so that with the
    // server down the publisher soon waits on it and the queue fills.
    let opts = || {
        fibra_remote::NodeOptions::new()
            .heartbeat(Duration::from_millis(50), Duration::from_secs(10))
            .max_reconnect_delay(Duration::from_millis(50))
            .nats(async_nats::ConnectOptions::new().client_capacity(4))
            .outgoing_capacity(CAPACITY)
    };
    let (addr, mut mb) = fibra::mailbox::<u64>();
    let (host, client) = fibra::block_on(async {
        let host = opts().connect(&url).await.unwrap();
        host.register("sink", addr).await.unwrap();
        (host, opts().connect(&url).await.unwrap())
    });
    let sink = fibra::block_on(client.lookup::<u64>("sink")).unwrap();
    server.stop();
    assert!(
        common::wait_until(Duration::from_secs(5), || !client.is_connected()),
        "still connected"
    );
    // With nothing draining the queue, sends are refused once it is full,
    // each handing its message back; none waits.
    const N: u64 = 10_000;
    let mut accepted = 0u64;
    let mut refused = 0u64;
    for i in 1..=N {
        match sink.send(i) {
            Ok(()) => accepted += 1,
            Err(SendError::Full(back)) => {
                assert_eq!(back, i, "the refused message comes back");
                refused += 1;
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    eprintln!("outgoing queue of {CAPACITY}: {accepted} accepted, {refused} refused");
    assert_eq!(accepted + refused, N);
    assert!(refused > 0, "the queue never filled");
    // At most: the queue, a batch the publisher took, the client's buffer
    // and the message it waits to hand over.
    assert!(
        accepted <= 2 * CAPACITY as u64 + 4 + 1,
        "{accepted} accepted"
    );
    // Back online, the queue drains: sends are accepted again, and every
    // accepted message arrived or is counted lost (a gap before a later
    // one), in order, never twice.
    server.restart().unwrap();
    assert!(
        common::wait_until(Duration::from_secs(10), || host.is_connected()
            && client.is_connected()),
        "no reconnection"
    );
    let mut got = Vec::new();
    let mut markers = 0;
    'sync: for k in 1..=100 {
        let marker = N + k;
        loop {
            match sink.send(marker) {
                Ok(()) => break,
                Err(SendError::Full(_)) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => panic!("{e}"),
            }
        }
        markers += 1;
        while let Ok(m) = recv(&mut mb, Duration::from_millis(200)) {
            got.push(m);
            if m > N {
                break 'sync;
            }
        }
    }
    assert!(got.last().is_some_and(|&m| m > N), "no marker arrived");
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "in order, no duplicate: {got:?}"
    );
    let stats = host.stats();
    assert_eq!(
        got.len() as u64 + stats.lost,
        accepted + markers,
        "{stats:?}"
    );
    assert_eq!(stats.duplicates, 0);
}
