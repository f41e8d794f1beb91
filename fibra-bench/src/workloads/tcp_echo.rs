//! `io/tcp-echo`: round trips of small messages over loopback TCP.
//!
//! A server echoes every byte it reads, a task per connection. Each of
//! `connections` clients (a task each) connects, then `round_trips` times
//! writes a `size`-byte message ([`fill_message`]: different for every
//! client and round trip) and reads until it has the echo back, which must
//! equal the message. Server and clients run on the row's runtime in one
//! process, so a row measures that runtime's I/O path only. The listener is
//! bound once per row (untimed); every run connects its clients anew.
//! `TCP_NODELAY` is on at both ends (Go sets it on every TCP connection).
//! Result: the bytes echoed correctly (a wrong echo fails the run). Ops:
//! round trips, all connections together.

use std::net::SocketAddr;

use crate::case::{Case, Params, RunFn, Runner, Spec};
use crate::exec::TOKIO_MT_WORKERS;
use crate::system::System;
use crate::workloads::Config;

/// Bytes per message.
const SIZE: usize = 64;

/// How the rows work.
const NOTE: &str = "tcp-echo: server and clients on the row's runtime in one process (Go: one \
     program), loopback, TCP_NODELAY; a task (goroutine) per connection on both sides; each \
     client writes a 64-byte message and reads its echo, round_trips times; the listener is \
     bound once per row, clients connect in every run";

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    [(1, config.size(20_000, 500)), (100, config.size(500, 20))]
        .into_iter()
        .flat_map(|(connections, round_trips)| {
            let spec = Spec {
                group: "io",
                workload: "tcp-echo",
                params: Params::new()
                    .with("connections", connections)
                    .with("round_trips", round_trips)
                    .with("size", SIZE as u64),
                ops: connections * round_trips,
                expected: connections * round_trips * SIZE as u64,
            };
            fibra_rows(&spec, config, connections, round_trips)
                .into_iter()
                .chain([
                    spec.on(
                        System::TokioCt,
                        tokio_runner(false, connections, round_trips),
                    ),
                    spec.on(
                        System::TokioMt,
                        tokio_runner(true, connections, round_trips),
                    ),
                    spec.on(System::Go, Runner::go("tcp-echo")),
                ])
                .map(|case| case.with_note(NOTE))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Message `i` of client `k` (the Go program sends the same bytes).
fn fill_message(msg: &mut [u8; SIZE], k: u64, i: u64) {
    for (j, byte) in msg.iter_mut().enumerate() {
        *byte =
            (k.wrapping_mul(131).wrapping_add(i.wrapping_mul(7)) as usize).wrapping_add(j) as u8;
    }
}

/// The rows on fibra's own runtime (`fibra`, `fibra-1`, `fibra-ct`), with
/// `fibra::net`: the accept loop and every client are spawned tasks.
#[cfg(feature = "fibra-rt")]
fn fibra_rows(spec: &Spec, config: &Config, connections: u64, round_trips: u64) -> Vec<Case> {
    crate::exec::FIBRA_RUNTIME_SYSTEMS
        .iter()
        .map(|&system| {
            let flavour =
                crate::exec::FibraFlavour::of(system, config.workers).expect("a fibra runtime row");
            let runner = Runner::InProcess(Box::new(move || {
                let rt = flavour.build();
                let addr = rt.block_on(async {
                    let listener = fibra::net::TcpListener::bind("127.0.0.1:0")
                        .await
                        .expect("bind a loopback port");
                    let addr = listener.local_addr().expect("local address");
                    drop(fibra::spawn(fibra_echo_server(listener))); // detached
                    addr
                });
                Box::new(move || {
                    rt.block_on(async move {
                        let clients = (0..connections)
                            .map(|k| fibra::spawn(fibra_client(addr, k, round_trips)))
                            .collect::<Vec<_>>();
                        crate::exec::fibra_join_sum(clients).await
                    })
                }) as RunFn
            }));
            spec.on(system, runner)
        })
        .collect()
}

/// Without fibra's runtime in this build: listed, skipped with a note.
#[cfg(not(feature = "fibra-rt"))]
fn fibra_rows(spec: &Spec, _: &Config, _: u64, _: u64) -> Vec<Case> {
    crate::exec::fibra_rows_unavailable(spec)
}

/// Accepts connections for ever, a task echoing each.
#[cfg(feature = "fibra-rt")]
async fn fibra_echo_server(listener: fibra::net::TcpListener) {
    loop {
        let (stream, _) = listener.accept().await.expect("accept");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        drop(fibra::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if stream.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
        }));
    }
}

/// Client `k`: the bytes of its echoes, every one checked.
#[cfg(feature = "fibra-rt")]
async fn fibra_client(addr: SocketAddr, k: u64, round_trips: u64) -> u64 {
    let stream = fibra::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("TCP_NODELAY");
    let (mut msg, mut echo) = ([0u8; SIZE], [0u8; SIZE]);
    let mut bytes = 0;
    for i in 0..round_trips {
        fill_message(&mut msg, k, i);
        stream.write_all(&msg).await.expect("write");
        let mut got = 0;
        while got < SIZE {
            match stream.read(&mut echo[got..]).await.expect("read") {
                0 => panic!("the server closed client {k}'s connection"),
                n => got += n,
            }
        }
        assert_eq!(msg, echo, "client {k}, round trip {i}: a wrong echo");
        bytes += SIZE as u64;
    }
    bytes
}

/// A tokio row: a current-thread runtime, or a multi-thread one with
/// [`TOKIO_MT_WORKERS`] workers (the accept loop and every client are
/// spawned tasks, so all of them run on its workers).
fn tokio_runner(multi: bool, connections: u64, round_trips: u64) -> Runner {
    Runner::InProcess(Box::new(move || {
        let rt = match multi {
            true => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(TOKIO_MT_WORKERS)
                .enable_io()
                .build(),
            false => tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build(),
        }
        .expect("build tokio runtime");
        let addr = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind a loopback port");
            let addr = listener.local_addr().expect("local address");
            tokio::spawn(tokio_echo_server(listener));
            addr
        });
        Box::new(move || {
            rt.block_on(async move {
                let clients = (0..connections)
                    .map(|k| tokio::spawn(tokio_client(addr, k, round_trips)))
                    .collect::<Vec<_>>();
                crate::exec::tokio_join_sum(clients).await
            })
        }) as RunFn
    }))
}

/// Accepts connections for ever, a task echoing each.
async fn tokio_echo_server(listener: tokio::net::TcpListener) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let (mut stream, _) = listener.accept().await.expect("accept");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if stream.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
}

/// Client `k`: the bytes of its echoes, every one checked.
async fn tokio_client(addr: SocketAddr, k: u64, round_trips: u64) -> u64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("TCP_NODELAY");
    let (mut msg, mut echo) = ([0u8; SIZE], [0u8; SIZE]);
    let mut bytes = 0;
    for i in 0..round_trips {
        fill_message(&mut msg, k, i);
        stream.write_all(&msg).await.expect("write");
        let mut got = 0;
        while got < SIZE {
            match stream.read(&mut echo[got..]).await.expect("read") {
                0 => panic!("the server closed client {k}'s connection"),
                n => got += n,
            }
        }
        assert_eq!(msg, echo, "client {k}, round trip {i}: a wrong echo");
        bytes += SIZE as u64;
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_differ_by_client_and_round_trip() {
        let (mut a, mut b) = ([0u8; SIZE], [0u8; SIZE]);
        fill_message(&mut a, 0, 0);
        fill_message(&mut b, 0, 1);
        assert_ne!(a, b);
        fill_message(&mut b, 1, 0);
        assert_ne!(a, b);
        // As the Go program computes it: byte(k*131 + i*7 + j).
        fill_message(&mut a, 3, 40);
        assert_eq!(a[5], (3 * 131 + 40 * 7 + 5) as u8);
    }

    /// Runs the quick 100-connection row of `system` twice (a listener
    /// serves every run of a row).
    fn run_twice(system: System) {
        let case = cases(&Config {
            quick: true,
            workers: None,
        })
        .into_iter()
        .find(|c| c.system == system && c.spec.ops > 500)
        .expect("the 100-connection row");
        let Runner::InProcess(setup) = case.runner else {
            panic!("in-process");
        };
        let mut run = setup();
        assert_eq!(run(), case.spec.expected);
        assert_eq!(run(), case.spec.expected);
    }

    #[test]
    fn a_tokio_row_echoes_every_byte() {
        run_twice(System::TokioCt);
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn the_fibra_rows_echo_every_byte() {
        for system in crate::exec::FIBRA_RUNTIME_SYSTEMS {
            run_twice(system);
        }
    }
}
