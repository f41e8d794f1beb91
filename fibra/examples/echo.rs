//! A TCP echo server written with ops: the accept loop is a choice between
//! a new connection and a stop message, and each connection waits for
//! data, its idle timeout or the stop, in one `select!`.
//!
//! * A connection idle for `IDLE` is closed (a slowloris holds nothing).
//! * A stop closes the listener and every connection at its next wait.
//!
//! Run, it checks itself: clients echo messages of every size up to 64 KB
//! and count every byte back; one client stays idle and finds itself
//! disconnected after the timeout; then the server is stopped. CI runs it.
//!
//! ```sh
//! cargo run -p fibra --example echo
//! ```

use fibra::net::{TcpListener, TcpStream};
use fibra::time::after;
use fibra::{Receiver, select};
use std::io::ErrorKind;
use std::time::{Duration, Instant};

const IDLE: Duration = Duration::from_millis(200);

/// Echoes until the peer closes, goes idle for `IDLE`, or `stop`.
async fn echo(conn: TcpStream, stop: Receiver<()>) -> usize {
    let mut buf = vec![0u8; 16 * 1024];
    let mut echoed = 0;
    loop {
        select! {
            ready = conn.readable_op() => {
                if ready.is_err() {
                    return echoed;
                }
                match conn.try_read(&mut buf) {
                    Ok(0) => return echoed,
                    Ok(n) => {
                        if conn.write_all(&buf[..n]).await.is_err() {
                            return echoed;
                        }
                        echoed += n;
                    }
                    // Readiness can be spurious: wait again.
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(_) => return echoed,
                }
            }
            () = after(IDLE) => return echoed,
            _ = stop.recv_op() => return echoed,
        }
    }
}

/// Accepts until a message on `stop`; returns the bytes echoed on every
/// connection.
async fn serve(listener: TcpListener, stop: Receiver<()>) -> usize {
    let mut connections = fibra::JoinSet::new();
    loop {
        select! {
            accepted = listener.accept_op() => match accepted {
                Ok((conn, _)) => connections.spawn(echo(conn, stop.clone())),
                Err(e) => eprintln!("echo: accept: {e}"),
            },
            _ = stop.recv_op() => break,
        }
    }
    drop(listener);
    let mut total = 0;
    while let Some(done) = connections.join_next().await {
        total += done.unwrap();
    }
    total
}

async fn client(addr: std::net::SocketAddr, seed: usize) -> usize {
    let conn = TcpStream::connect(addr).await.unwrap();
    conn.set_nodelay(true).unwrap();
    let (r, w) = conn.split();
    let mut sent = 0;
    for round in 0..40 {
        let len = 1 + (seed * 7919 + round * 104_729) % (64 * 1024);
        let msg: Vec<u8> = (0..len).map(|i| (i + seed + round) as u8).collect();
        // Write and read at once: a message larger than the socket
        // buffers would otherwise stall both sides.
        let mut back = vec![0u8; len];
        let (wrote, read) = futures::join!(w.write_all(&msg), r.read_exact(&mut back));
        wrote.unwrap();
        read.unwrap();
        assert_eq!(back, msg, "echoed byte for byte");
        sent += len;
    }
    sent
}

fn main() {
    fibra::run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // A broadcast of one: every receiver sees the stop once the
        // sender is dropped (recv fails: the channel is closed).
        let (stop_tx, stop) = fibra::channel::<()>();
        let server = fibra::spawn(serve(listener, stop));

        let clients: Vec<_> = (0..8).map(|i| fibra::spawn(client(addr, i))).collect();
        let mut sent = 0;
        for c in clients {
            sent += c.await.unwrap();
        }

        // An idle client is disconnected after `IDLE`.
        let idle = TcpStream::connect(addr).await.unwrap();
        let start = Instant::now();
        assert_eq!(
            idle.read(&mut [0u8; 1]).await.unwrap(),
            0,
            "closed by the server"
        );
        let waited = start.elapsed();
        assert!(
            waited >= IDLE - Duration::from_millis(5),
            "closed after {waited:?}"
        );

        drop(stop_tx);
        let echoed = server.await.unwrap();
        assert_eq!(echoed, sent, "every byte sent came back");
        println!(
            "echo: {sent} bytes echoed on 8 connections; the idle one closed after {waited:?}"
        );
    });
}
