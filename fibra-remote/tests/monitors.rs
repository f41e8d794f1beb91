//! Monitors across nodes: an actor's end, a node's clean stop, and a node's
//! process killed (a real child process, SIGKILLed).

mod common;

use fibra_remote::{Down, LookupError, SendError};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum Cmd {
    Echo(u32),
    Stop,
    Crash,
    CrashOnCall(fibra_remote::ReplyTo<u32>),
}

fn stoppable() -> fibra::Addr<Cmd> {
    fibra::spawn_actor(|mut mb| async move {
        while let Some(cmd) = mb.recv().await {
            match cmd {
                Cmd::Echo(_) => {}
                Cmd::Stop => return,
                Cmd::Crash => panic!("boom"),
                Cmd::CrashOnCall(_) => panic!("no answer"),
            }
        }
    })
}

#[test]
fn an_actor_end_fires_the_monitor_and_frees_the_name() {
    let server = common::server();
    fibra::run(async move {
        let host = common::node(&server).await;
        let client = common::node(&server).await;
        for (cmd, want) in [
            (Cmd::Stop, Down::Normal),
            (Cmd::Crash, Down::Panicked("boom".into())),
        ] {
            host.register("svc", stoppable()).await.unwrap();
            let svc = client
                .lookup::<Cmd>("svc")
                .await
                .unwrap_or_else(|e| panic!("lookup after {want:?}: {e:?}"));
            svc.send(Cmd::Echo(1)).unwrap();
            svc.send(cmd).unwrap();
            assert_eq!(
                common::within(Duration::from_secs(10), svc.exited_op()).await,
                want
            );
            // The actor's reason, from its exit notice (its node is alive).
            match svc.send(Cmd::Echo(2)) {
                Err(SendError::Down(Cmd::Echo(2), why)) => assert_eq!(why, want),
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                client.lookup::<Cmd>("svc").await,
                Err(LookupError::NotFound(_))
            ));
        }
    });
}

#[test]
fn a_call_whose_actor_dies_fails_with_the_reason() {
    let server = common::server();
    fibra::run(async move {
        let host = common::node(&server).await;
        host.register("svc", stoppable()).await.unwrap();
        let client = common::node(&server).await;
        let mut svc = client.lookup::<Cmd>("svc").await.unwrap();
        let got = svc.call(Cmd::CrashOnCall, Duration::from_secs(10)).await;
        assert_eq!(
            got,
            Err(fibra_remote::CallError::Down(Down::Panicked(
                "no answer".into()
            )))
        );
    });
}

#[test]
fn a_closed_node_is_reported_stopped_at_once() {
    let server = common::server();
    fibra::run(async move {
        let host = common::node(&server).await;
        host.register("svc", stoppable()).await.unwrap();
        let client = common::node(&server).await;
        let svc = client.lookup::<Cmd>("svc").await.unwrap();
        host.close().await;
        // `Stopping`, not a heartbeat timeout (that says unreachable).
        assert_eq!(
            common::within(Duration::from_secs(10), svc.exited_op()).await,
            Down::NodeStopped
        );
        // Its names went with it, and it registers nothing more.
        let own = client.lookup::<Cmd>("svc").await;
        assert!(own.is_err(), "the name went with the node");
        let (addr, _mb) = fibra::mailbox::<Cmd>();
        assert!(host.register("again", addr).await.is_err());
    });
}

const CHILD_ENV: &str = "FIBRA_REMOTE_TEST_CHILD_URL";

/// Not a test of its own: the host process of
/// `a_killed_node_is_detected_within_the_heartbeat_timeout`, which runs
/// this test binary again with `CHILD_ENV` set. Without it, does nothing.
#[test]
fn child_host() {
    let Ok(url) = std::env::var(CHILD_ENV) else {
        return;
    };
    fibra::run(async move {
        let host = common::node_at(&url).await;
        host.register("victim", stoppable()).await.unwrap();
        println!("ready");
        fibra::time::sleep(Duration::from_secs(30)).await;
    });
}

#[test]
fn a_killed_node_is_detected_within_the_heartbeat_timeout() {
    let server = common::server();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_host", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, server.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("ready"))),
        "the child did not start"
    );
    fibra::run(async move {
        let client = common::node(&server).await;
        let victim = client.lookup::<Cmd>("victim").await.unwrap();
        victim.send(Cmd::Echo(1)).unwrap();
        fibra::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(victim.try_exited(), None, "alive while heartbeats come");
        child.kill().unwrap();
        let killed = Instant::now();
        child.wait().unwrap();
        assert_eq!(
            common::within(Duration::from_secs(10), victim.exited_op()).await,
            Down::NodeUnreachable
        );
        let took = killed.elapsed();
        // The bound: down_after (300 ms) plus one interval (50 ms), plus
        // slack for a loaded machine.
        assert!(
            took < Duration::from_millis(2_000),
            "detected after {took:?}"
        );
        assert!(
            took >= Duration::from_millis(200),
            "detected after {took:?}"
        );
        eprintln!("killed node detected after {took:?}");
        assert!(matches!(
            victim.send(Cmd::Echo(2)),
            Err(SendError::Down(Cmd::Echo(2), Down::NodeUnreachable))
        ));
    });
}

#[test]
fn losing_the_nats_server_fires_monitors_as_unreachable() {
    let mut server = common::server();
    let (addr, _mb) = fibra::mailbox::<Cmd>();
    let (_host, client) = fibra::block_on(async {
        let host = common::node(&server).await;
        host.register("svc", addr).await.unwrap();
        (host, common::node(&server).await)
    });
    let svc = fibra::block_on(client.lookup::<Cmd>("svc")).unwrap();
    // This node's own link is gone: it cannot tell a dead peer from a
    // cut network, and says so after the same timeout.
    server.stop();
    let why = fibra::block_on(common::within(Duration::from_secs(5), svc.exited_op()));
    assert_eq!(why, Down::NodeUnreachable);
}

#[test]
fn an_actor_that_ends_while_the_server_is_down_is_still_reported() {
    let mut server = common::server();
    let opts = || {
        fibra_remote::NodeOptions::new()
            .heartbeat(Duration::from_millis(50), Duration::from_secs(10))
            .max_reconnect_delay(Duration::from_millis(50))
    };
    let (addr, mb) = fibra::mailbox::<Cmd>();
    let (_host, client) = fibra::block_on(async {
        let host = opts().connect(server.url()).await.unwrap();
        host.register("svc", addr).await.unwrap();
        (host, opts().connect(server.url()).await.unwrap())
    });
    let svc = fibra::block_on(client.lookup::<Cmd>("svc")).unwrap();
    server.stop();
    drop(mb); // the actor ends while nobody can hear its exit notice
    std::thread::sleep(Duration::from_millis(300));
    server.restart().unwrap();
    // Either the notice, buffered through the outage, arrives (`Closed`),
    // or the watcher's check after the heartbeat gap finds it gone.
    let why = fibra::block_on(common::within(Duration::from_secs(5), svc.exited_op()));
    eprintln!("reported as {why:?}");
    assert!(matches!(why, Down::Closed | Down::NoActor), "{why:?}");
}
