//! Remote ping-pong round trip and one-way throughput between two OS
//! processes over loopback NATS.
//!
//! ```sh
//! cargo run --release -p fibra-remote --example remote_bench [-- ROUND_TRIPS MESSAGES]
//! ```
//!
//! Starts a nats-server on a free loopback port and a child process (this
//! program with `pong URL`) that hosts the actor; this process pings it.
//! Round trip: a `call` (send, the actor replies through its `ReplyTo`,
//! the reply lands in the caller's reply mailbox), one after another.
//! Throughput: `MESSAGES` casts of a `u64`, then a call that returns how
//! many arrived; the time runs from the first send to that reply.

use fibra_remote::{NatsServer, Node, NodeOptions, ReplyTo, async_nats};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Serialize, Deserialize)]
enum Bench {
    Ping(u64, ReplyTo<u64>),
    Cast(u64),
    /// How many casts arrived, their sum, and the pong node's counts of
    /// slow-consumer reports and lost messages.
    Count(ReplyTo<(u64, u64, u64, u64)>),
}

async fn pong(url: &str) {
    // A large subscription buffer: this measures throughput; what happens
    // when it overflows is the slow-consumer test's business.
    let node = NodeOptions::new()
        .subscription_capacity(1 << 21)
        .connect(url)
        .await
        .expect("connect");
    let stats = node.clone();
    let actor = fibra::spawn_actor(|mut mb| async move {
        let (mut count, mut sum) = (0u64, 0u64);
        while let Some(msg) = mb.recv().await {
            match msg {
                Bench::Ping(n, reply) => {
                    let _ = reply.send(n);
                }
                Bench::Cast(n) => {
                    count += 1;
                    sum = sum.wrapping_add(n);
                }
                Bench::Count(reply) => {
                    let s = stats.stats();
                    let _ = reply.send((count, sum, s.slow_consumer, s.lost));
                }
            }
        }
    });
    node.register("pong", actor).await.expect("register");
    raw_echo(url);
    println!("ready");
    fibra::time::sleep(Duration::from_secs(3600)).await;
}

async fn ping(url: &str, round_trips: u64, messages: u64) {
    let node = Node::connect(url).await.expect("connect");
    let mut pong = node.lookup::<Bench>("pong").await.expect("lookup");
    let t = Duration::from_secs(30);
    for n in 0..100 {
        pong.call(|r| Bench::Ping(n, r), t).await.expect("warm-up");
    }
    let start = Instant::now();
    for n in 0..round_trips {
        let got = pong.call(|r| Bench::Ping(n, r), t).await.expect("ping");
        assert_eq!(got, n);
    }
    let rtt = start.elapsed();
    println!(
        "round trip (call, {round_trips} in sequence): {:.1} us",
        rtt.as_secs_f64() * 1e6 / round_trips as f64
    );

    let start = Instant::now();
    for n in 0..messages {
        pong.send(Bench::Cast(n)).expect("send");
    }
    let queued = start.elapsed();
    let (count, sum, slow, lost) = pong.call(Bench::Count, t).await.expect("count");
    let took = start.elapsed();
    println!(
        "one-way: {count} of {messages} u64 messages in {:.3} s: {:.0} msg/s, {:.2} us/msg \
         (sends queued in {:.3} s)",
        took.as_secs_f64(),
        count as f64 / took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / count.max(1) as f64,
        queued.as_secs_f64()
    );
    println!("pong node: slow-consumer reports {slow}, lost {lost}");
    let want: u64 = (0..messages).sum();
    if count == messages {
        assert_eq!(sum, want);
    }
    println!("ping node: {:?}", node.stats());
}

/// The baseline: a plain async-nats responder (tokio, no fibra) echoing on
/// `bench.raw`, running when this returns.
fn raw_echo(url: &str) {
    let url = url.to_string();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let client = async_nats::connect(url).await.unwrap();
            let mut sub = client.subscribe("bench.raw").await.unwrap();
            client.flush().await.unwrap();
            ready_tx.send(()).unwrap();
            while let Some(m) = sub.next().await {
                if let Some(reply) = m.reply {
                    let _ = client.publish(reply, m.payload).await;
                }
            }
        });
    });
    ready_rx.recv().unwrap();
}

/// The baseline's round trip: plain async-nats requests from tokio.
fn raw_round_trip(url: &str, round_trips: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        let payload = bytes::Bytes::from_static(&[0; 27]);
        for _ in 0..100 {
            client.request("bench.raw", payload.clone()).await.unwrap();
        }
        let start = Instant::now();
        for _ in 0..round_trips {
            client.request("bench.raw", payload.clone()).await.unwrap();
        }
        println!(
            "baseline round trip (async-nats request on tokio, {round_trips} in sequence): {:.1} us",
            start.elapsed().as_secs_f64() * 1e6 / round_trips as f64
        );
    });
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let ["pong", url] = &args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        let url = url.to_string();
        return fibra::run(async move { pong(&url).await });
    }
    let round_trips = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let messages = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let nats = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["pong", nats.url()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(out.next().unwrap().unwrap(), "ready");
    raw_round_trip(nats.url(), round_trips);
    let url = nats.url().to_string();
    fibra::run(async move { ping(&url, round_trips, messages).await });
    let _ = child.kill();
    let _ = child.wait();
}
