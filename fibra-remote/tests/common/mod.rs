//! What the integration tests share: a real nats-server per test.

#![allow(dead_code)]

use fibra_remote::{NatsServer, Node, NodeOptions};
use std::time::{Duration, Instant};

/// A fresh nats-server on a free loopback port; panics with how to install
/// it if the binary is missing.
pub fn server() -> NatsServer {
    server_with(&[])
}

pub fn server_with(args: &[&str]) -> NatsServer {
    NatsServer::start_with(args).unwrap_or_else(|e| panic!("{e}"))
}

/// Fast heartbeats, so that monitor tests take a fraction of a second.
pub fn fast() -> NodeOptions {
    NodeOptions::new().heartbeat(Duration::from_millis(50), Duration::from_millis(300))
}

pub async fn node(server: &NatsServer) -> Node {
    fast().connect(server.url()).await.unwrap()
}

/// Polls `cond` every 5 ms for at most `limit`.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    cond()
}

pub async fn node_at(url: &str) -> Node {
    fast().connect(url).await.unwrap()
}

/// Performs `op`, failing the test if it takes more than `limit`.
pub async fn within<O: fibra::Op>(limit: Duration, op: O) -> O::Output {
    fibra::time::timeout(op, limit)
        .await
        .unwrap_or_else(|_| panic!("not done within {limit:?}"))
}
