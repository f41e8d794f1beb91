//! The `remote` group: two OS processes on this machine talking over
//! loopback.
//!
//! * `remote-ping-pong`: `round_trips` round trips of a small message, one
//!   after another; the reply to `i` is `i + 1`. Result: the sum of the
//!   replies. Ops: round trips.
//! * `remote-throughput`: `messages` one-way messages (the integers
//!   `0..messages`), then one round trip that asks the receiver how many
//!   it counted; the time runs from the first send to that answer. The
//!   receiver counts and sums every message; a wrong sum fails the run.
//!   Result: the count. Ops: messages.
//!
//! fibra: fibra-remote over a `nats-server` that the row starts on a free
//! loopback port (`fibra_remote::NatsServer`), and a second process of
//! this executable ([`HOST_ARG`]) hosting the receiving actor; this
//! process runs the sender on fibra's multi-thread runtime. The round trip
//! is a [`fibra_remote::RemoteAddr::call`] (the request carries a
//! `ReplyTo`, the actor answers with `ReplyTo::send`); the one-way messages
//! are [`fibra_remote::RemoteAddr::send`]s. Every message goes through the
//! NATS server: two TCP hops each way. Without `nats-server` the fibra rows
//! are skipped with a note (`scripts/nats-server.sh install` installs it).
//!
//! Erlang: two nodes of Erlang distribution (`erl -sname`, started by the
//! Erlang program with the `peer` module on a private `epmd`), messages
//! `{Name, Node} ! Msg` to registered processes: one TCP hop each way.

// Without fibra's runtime the fibra rows are skipped, and most of this
// module is left unused.
#![cfg_attr(not(feature = "fibra-rt"), allow(dead_code, unused_imports))]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::time::Duration;

use fibra_remote::{NatsServer, Node, NodeOptions, RemoteAddr, ReplyTo, SendError};
use serde::{Deserialize, Serialize};

use crate::case::{Case, Params, Runner, Spec};
use crate::system::System;
use crate::workloads::Config;

/// The first argument that makes this executable the receiving process of
/// a fibra row: `fibra-bench __remote-host <nats-url> <workers|->`.
pub const HOST_ARG: &str = "__remote-host";

/// The name the receiving actor is registered under.
const ACTOR: &str = "fibra-bench-sink";

/// How long a call may take before the run fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How the fibra rows work.
const FIBRA_NOTE: &str = "fibra: fibra-remote through a nats-server on loopback (two TCP hops \
     each way); round trip = RemoteAddr::call (the actor answers through its ReplyTo); one-way = \
     RemoteAddr::send, then a call for the receiver's count";

/// How the Erlang rows work.
const ERLANG_NOTE: &str = "erlang: two distributed nodes (-sname ...@localhost, private epmd), \
     {Name, Node} ! Msg to registered processes (one TCP hop each way)";

/// Why the fibra rows are skipped when nats-server is missing.
const NO_NATS: &str = "remote fibra rows: nats-server not found \
     (install it with `bash scripts/nats-server.sh install`, or set NATS_SERVER_BIN)";

/// Both nodes' options: a node-down timeout far above the default (1 s),
/// so that a machine loaded by the benchmark itself (a million messages
/// in flight) is not taken for a dead peer.
fn options() -> NodeOptions {
    NodeOptions::new().heartbeat(Duration::from_millis(250), Duration::from_secs(30))
}

/// The messages of the benchmark.
#[derive(Debug, Serialize, Deserialize)]
enum Bench {
    /// Answer `n + 1`.
    Ping(u64, ReplyTo<u64>),
    /// Count and sum `n`.
    Cast(u64),
    /// How many casts arrived since the last `Count`, and their sum; then
    /// start over.
    Count(ReplyTo<(u64, u64)>),
}

/// What a run does.
#[derive(Clone, Copy, Debug)]
enum Work {
    PingPong(u64),
    Throughput(u64),
}

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let round_trips = config.size(10_000, 200);
    let messages = config.size(1_000_000, 10_000);
    let ping_pong = Spec {
        group: "remote",
        workload: "remote-ping-pong",
        params: Params::new().with("round_trips", round_trips),
        ops: round_trips,
        expected: round_trips * (round_trips + 1) / 2,
    };
    let throughput = Spec {
        group: "remote",
        workload: "remote-throughput",
        params: Params::new().with("messages", messages),
        ops: messages,
        expected: messages,
    };
    [
        (ping_pong, Work::PingPong(round_trips)),
        (throughput, Work::Throughput(messages)),
    ]
    .into_iter()
    .flat_map(|(spec, work)| {
        [
            spec.on(System::Fibra, fibra_runner(work, config.workers))
                .with_note(FIBRA_NOTE),
            spec.on(System::Erlang, Runner::erlang(spec.workload))
                .with_note(ERLANG_NOTE),
        ]
    })
    .collect()
}

/// The fibra row's runner: skipped without nats-server (or without fibra's
/// runtime in this build).
fn fibra_runner(work: Work, workers: Option<usize>) -> Runner {
    #[cfg(not(feature = "fibra-rt"))]
    {
        let _ = (work, workers);
        Runner::Unavailable(crate::exec::NO_FIBRA_RT)
    }
    #[cfg(feature = "fibra-rt")]
    match nats_server_installed() {
        true => Runner::InProcess(Box::new(move || {
            let mut session = Session::start(workers);
            Box::new(move || session.run(work))
        })),
        false => Runner::Unavailable(NO_NATS),
    }
}

/// Whether a nats-server binary is where `NatsServer` looks (without
/// installing it, which `NatsServer::binary` would do).
fn nats_server_installed() -> bool {
    if let Some(bin) = std::env::var_os("NATS_SERVER_BIN") {
        return std::path::Path::new(&bin).is_file();
    }
    crate::peers::external::find_on_path("nats-server").is_some()
        || std::env::var_os("HOME").is_some_and(|home| {
            std::path::Path::new(&home)
                .join("go/bin/nats-server")
                .is_file()
        })
}

/// A fibra row's setup: the server, the receiving process, and this
/// process's node with its address of the receiver. Dropping it stops the
/// receiving process and then the server.
#[cfg(feature = "fibra-rt")]
struct Session {
    rt: fibra::Runtime,
    /// `None` only while a run has it.
    sink: Option<RemoteAddr<Bench>>,
    node: Node,
    host: Child,
    /// Closed (dropped) to tell the host to exit.
    host_stdin: Option<ChildStdin>,
    _server: NatsServer,
}

#[cfg(feature = "fibra-rt")]
impl Session {
    /// `workers`: of both processes' runtimes (`--workers`; default: one
    /// per core).
    fn start(workers: Option<usize>) -> Session {
        let server = NatsServer::start().unwrap_or_else(|e| {
            crate::harness::skip_row(format!("remote fibra rows: nats-server did not start: {e}"))
        });
        let exe = std::env::current_exe().expect("this executable");
        let mut host = Command::new(exe)
            .args([HOST_ARG, server.url()])
            .arg(workers.map_or_else(|| "-".to_string(), |n| n.to_string()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the receiving process");
        let host_stdin = host.stdin.take();
        let mut line = String::new();
        let stdout = host.stdout.take().expect("piped");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read from the receiving process");
        assert_eq!(line.trim(), "ready", "the receiving process did not start");
        let rt = crate::exec::FibraFlavour::Multi(workers).build();
        let url = server.url().to_string();
        let (node, sink) = rt.block_on(async move {
            let node = options()
                .connect(&url)
                .await
                .expect("connect to nats-server");
            let sink = node
                .lookup::<Bench>(ACTOR)
                .await
                .expect("look the actor up");
            (node, sink)
        });
        Session {
            rt,
            sink: Some(sink),
            node,
            host,
            host_stdin,
            _server: server,
        }
    }

    /// One run; returns its result.
    fn run(&mut self, work: Work) -> u64 {
        let mut sink = self.sink.take().expect("one run at a time");
        let (sink, result) = self.rt.block_on(async move {
            let result = match work {
                Work::PingPong(n) => ping_pong(&mut sink, n).await,
                Work::Throughput(n) => throughput(&mut sink, n).await,
            };
            (sink, result)
        });
        self.sink = Some(sink);
        result
    }
}

#[cfg(feature = "fibra-rt")]
impl Drop for Session {
    fn drop(&mut self) {
        let node = self.node.clone();
        self.rt.block_on(async move { node.close().await });
        self.host_stdin = None; // EOF: the host exits
        let _ = self.host.wait();
    }
}

/// `n` calls in sequence; the sum of the replies.
async fn ping_pong(sink: &mut RemoteAddr<Bench>, n: u64) -> u64 {
    let mut sum = 0;
    for i in 0..n {
        sum += sink
            .call(|reply| Bench::Ping(i, reply), CALL_TIMEOUT)
            .await
            .expect("a ping's reply");
    }
    sum
}

/// `n` sends, then the receiver's count (its sum checked).
async fn throughput(sink: &mut RemoteAddr<Bench>, n: u64) -> u64 {
    for i in 0..n {
        let mut msg = Bench::Cast(i);
        // The node's outgoing queue holds a million messages; should the
        // publisher fall that far behind, wait for it (never block it).
        loop {
            match sink.send(msg) {
                Ok(()) => break,
                Err(SendError::Full(back)) => {
                    msg = back;
                    fibra::yield_now().await;
                }
                Err(e) => panic!("send: {e}"),
            }
        }
    }
    let (count, sum) = sink
        .call(Bench::Count, CALL_TIMEOUT)
        .await
        .expect("the count's reply");
    if count == n {
        assert_eq!(
            sum,
            n * (n.saturating_sub(1)) / 2,
            "wrong sum at the receiver"
        );
    }
    count
}

/// What `main` does when the first argument is [`HOST_ARG`]: hosts the
/// receiving actor, prints `ready` once it is registered, and exits when
/// its standard input closes (the row ended, or its process died).
pub fn host_main(args: &[String]) -> ExitCode {
    let [url, workers] = args else {
        eprintln!("fibra-bench {HOST_ARG}: expected <nats-url> <workers|->, got {args:?}");
        return ExitCode::FAILURE;
    };
    let mut builder = fibra::Runtime::builder();
    if let Ok(n) = workers.parse() {
        builder = builder.workers(n);
    }
    let rt = builder.build().expect("fibra runtime");
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let url = url.clone();
    rt.block_on(async move {
        // Room for every message of a run in the subscription's buffer:
        // this measures throughput, not the slow-consumer path.
        let node = options()
            .subscription_capacity(1 << 21)
            .connect(&url)
            .await
            .expect("connect to nats-server");
        let actor = fibra::spawn_actor(|mut mailbox| async move {
            let (mut count, mut sum) = (0u64, 0u64);
            while let Some(msg) = mailbox.recv().await {
                match msg {
                    Bench::Ping(n, reply) => reply.send(n + 1).expect("reply"),
                    Bench::Cast(n) => {
                        count += 1;
                        sum = sum.wrapping_add(n);
                    }
                    Bench::Count(reply) => {
                        reply.send((count, sum)).expect("reply");
                        (count, sum) = (0, 0);
                    }
                }
            }
        });
        node.register(ACTOR, actor).await.expect("register");
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "ready");
        let _ = stdout.flush();
        std::future::pending::<()>().await;
    });
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_pair_fibra_with_erlang() {
        let cases = cases(&Config::default());
        assert_eq!(cases.len(), 4);
        for case in &cases {
            assert_eq!(case.spec.group, "remote");
            assert!(case.note.is_some());
        }
        let throughput = &cases[2];
        assert_eq!(throughput.spec.ops, 1_000_000);
        assert_eq!(throughput.spec.expected, 1_000_000);
    }
}
