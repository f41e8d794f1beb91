//! A remote key-value actor and its client, in two OS processes.
//!
//! ```sh
//! scripts/nats-server.sh start 4222 &                                  # a NATS server
//! cargo run -p fibra-remote --example kv -- server nats://127.0.0.1:4222 # process 1
//! cargo run -p fibra-remote --example kv -- client nats://127.0.0.1:4222 # process 2
//! ```
//!
//! With no arguments it does all of that itself: starts a nats-server on a
//! free port, runs the server half in a child process, the client here,
//! then kills the child and shows the client's monitor firing.

use fibra_remote::{NatsServer, Node, ReplyTo};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The key-value actor's messages: the same type on both sides.
#[derive(Debug, Serialize, Deserialize)]
enum Kv {
    Put(String, String),
    Get(String, ReplyTo<Option<String>>),
    Delete(String),
    Len(ReplyTo<usize>),
}

/// Process 1: host the actor under the name "kv" until killed.
async fn server(url: &str) {
    let node = Node::connect(url).await.expect("connect");
    let kv = fibra::spawn_actor(|mut mb| async move {
        let mut map = HashMap::new();
        // An ordinary receive loop: remote messages land in the mailbox.
        while let Some(msg) = mb.recv().await {
            match msg {
                Kv::Put(k, v) => {
                    map.insert(k, v);
                }
                Kv::Get(k, reply) => {
                    let _ = reply.send(map.get(&k).cloned());
                }
                Kv::Delete(k) => {
                    map.remove(&k);
                }
                Kv::Len(reply) => {
                    let _ = reply.send(map.len());
                }
            }
        }
    });
    node.register("kv", kv).await.expect("register");
    println!("kv: serving as node {:016x}", node.id());
    fibra::time::sleep(Duration::from_secs(3600)).await;
}

/// Process 2: use it.
async fn client(url: &str) {
    let node = Node::connect(url).await.expect("connect");
    let mut kv = node.lookup::<Kv>("kv").await.expect("lookup");
    let t = Duration::from_secs(5);
    for i in 0..100 {
        kv.send(Kv::Put(format!("key{i}"), format!("value{i}")))
            .expect("send");
    }
    kv.send(Kv::Delete("key7".into())).expect("send");
    // In order: the call sees every Put and the Delete before it.
    let len = kv.call(Kv::Len, t).await.expect("len");
    let k42 = kv
        .call(|r| Kv::Get("key42".into(), r), t)
        .await
        .expect("get");
    let k7 = kv
        .call(|r| Kv::Get("key7".into(), r), t)
        .await
        .expect("get");
    println!("client: len = {len}, key42 = {k42:?}, key7 = {k7:?}");
    assert_eq!((len, k42.as_deref(), k7), (99, Some("value42"), None));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["server", url] => {
            let url = url.to_string();
            fibra::run(async move { server(&url).await })
        }
        ["client", url] => {
            let url = url.to_string();
            fibra::run(async move { client(&url).await })
        }
        [] => demo(),
        _ => eprintln!("usage: kv [server URL | client URL]"),
    }
}

fn demo() {
    let nats = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["server", nats.url()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    println!("{}", out.next().unwrap().unwrap()); // "kv: serving ..."
    fibra::run(async move {
        client(nats.url()).await;
        let node = Node::connect(nats.url()).await.unwrap();
        let kv = node.lookup::<Kv>("kv").await.unwrap();
        child.kill().unwrap();
        let killed = Instant::now();
        let why = kv.exited().await;
        println!(
            "client: the kv process was killed; monitor fired after {:?}: {why}",
            killed.elapsed()
        );
        let _ = child.wait();
    });
}
