//! An HTTP/1.1 server: hyper on fibra's runtime, serving a small "hello"
//! and a 10 KB static file (the test of Swerve, the web server written in
//! Concurrent ML), with a graceful shutdown on SIGINT or SIGTERM: the
//! listener stops accepting, requests in flight are answered, then the
//! program ends.
//!
//! The accept loop is a choice between a new connection and the stop
//! signal (`select!` over `accept_op` and `cancelled_op`); each connection
//! is a fibra task running hyper's `serve_connection` with fibra's timer
//! (`HyperTimer`: idle connections are closed after 10 s without a
//! request's headers, so a slowloris cannot hold a task for ever).
//!
//! Run without arguments, it checks itself: it serves on a free loopback
//! port, fetches both paths with hyper's client over fibra's `TcpStream`
//! (many requests on several keep-alive connections), starts a slow
//! request, sends itself SIGTERM, and checks that the slow request is
//! still answered and that new connections are refused afterwards. CI runs
//! it this way. To serve until Ctrl-C:
//!
//! ```sh
//! cargo run --release -p fibra --features hyper --example http_server -- --serve 127.0.0.1:8080
//! # then: curl http://127.0.0.1:8080/  or  wrk -c 64 -d 5 http://127.0.0.1:8080/file
//! ```

use bytes::Bytes;
use fibra::net::{HyperTimer, TcpListener, TcpStream};
use fibra::{CancellationToken, JoinSet, select};
use futures::future::{Either, select as race};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::pin;
use std::time::Duration;

/// The static file: 10 KB of deterministic bytes.
fn file() -> Bytes {
    (0..10 * 1024)
        .map(|i| b'a' + (i % 26) as u8)
        .collect::<Vec<u8>>()
        .into()
}

async fn handle(req: Request<Incoming>, file: Bytes) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body, kind) = match req.uri().path() {
        "/" => (
            StatusCode::OK,
            Bytes::from_static(b"Hello, world!\n"),
            "text/plain",
        ),
        "/file" => (StatusCode::OK, file, "application/octet-stream"),
        // For the self-check: a request still in flight at shutdown.
        "/slow" => {
            fibra::time::sleep(Duration::from_millis(300)).await;
            (StatusCode::OK, Bytes::from_static(b"slow\n"), "text/plain")
        }
        _ => (
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"not found\n"),
            "text/plain",
        ),
    };
    Ok(Response::builder()
        .status(status)
        .header(CONTENT_TYPE, kind)
        .body(Full::new(body))
        .expect("a valid response"))
}

/// One connection: hyper's HTTP/1 server until the client goes, or until
/// `stop`, then a graceful end (the request in flight is answered).
async fn connection(stream: TcpStream, stop: CancellationToken, file: Bytes) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |req| handle(req, file.clone()));
    let mut conn = pin!(
        http1::Builder::new()
            .timer(HyperTimer)
            .header_read_timeout(Duration::from_secs(10))
            .serve_connection(stream, service)
    );
    let stopped = pin!(stop.cancelled());
    let result = match race(conn.as_mut(), stopped).await {
        Either::Left((result, _)) => result,
        Either::Right(((), _)) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        // A client that hangs up mid-request, or a timeout: not ours.
        if !e.is_incomplete_message() && !e.is_timeout() {
            eprintln!("http_server: connection: {e}");
        }
    }
}

/// Accepts until `stop`, then waits for every connection to end. Returns
/// how many connections were served.
async fn serve(listener: TcpListener, stop: CancellationToken) -> usize {
    let file = file();
    let mut connections = JoinSet::new();
    let mut served = 0;
    loop {
        select! {
            accepted = listener.accept_op() => match accepted {
                Ok((stream, _)) => {
                    served += 1;
                    connections.spawn(connection(stream, stop.clone(), file.clone()));
                }
                // Out of descriptors (the listener backs off) or a peer
                // that gave up while queued: log and go on.
                Err(e) => eprintln!("http_server: accept: {e}"),
            },
            () = stop.cancelled_op() => break,
        }
        // Reap finished connections as we go.
        while connections.try_join_next().is_some() {}
    }
    // Stop accepting: the listener closes now, then the connections end.
    drop(listener);
    while connections.join_next().await.is_some() {}
    served
}

/// SIGINT or SIGTERM cancels `stop`.
fn on_signal(stop: CancellationToken) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            stop.cancel();
        }
    });
    Ok(())
}

/// GET `path` on one keep-alive connection, `n` times; returns the bodies'
/// total length.
async fn fetch(addr: SocketAddr, path: &'static str, n: usize) -> usize {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .handshake::<_, Empty<Bytes>>(stream)
        .await
        .expect("handshake");
    let conn = fibra::spawn(async move { conn.await.expect("client connection") });
    let mut total = 0;
    for _ in 0..n {
        let req = Request::get(path)
            .header(HOST, addr.to_string())
            .body(Empty::new())
            .unwrap();
        let resp = sender.send_request(req).await.expect("request");
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        if path == "/file" {
            assert_eq!(body, file(), "the file, byte for byte");
        }
        total += body.len();
    }
    drop(sender);
    conn.await.unwrap();
    total
}

fn self_check() {
    fibra::run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        on_signal(stop.clone()).expect("signal handler");
        let server = fibra::spawn(serve(listener, stop));

        // Several keep-alive connections at once, both paths.
        let clients: Vec<_> = (0..4)
            .map(|i| fibra::spawn(fetch(addr, if i % 2 == 0 { "/" } else { "/file" }, 50)))
            .collect();
        let mut bytes = 0;
        for c in clients {
            bytes += c.await.unwrap();
        }
        assert_eq!(bytes, 2 * 50 * 14 + 2 * 50 * 10 * 1024);

        // A request in flight when the signal comes is still answered.
        let slow = fibra::spawn(fetch(addr, "/slow", 1));
        fibra::time::sleep(Duration::from_millis(50)).await;
        signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
        assert_eq!(slow.await.unwrap(), 5);
        let served = server.await.unwrap();
        assert_eq!(served, 5);
        // The listener is closed.
        let refused = TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
        println!("http_server: {served} connections served, {bytes} bytes checked, graceful stop");
    });
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => self_check(),
        [flag, addr] if flag == "--serve" => fibra::run({
            let addr = addr.clone();
            async move {
                let listener = TcpListener::bind(addr.as_str()).await.unwrap_or_else(|e| {
                    eprintln!("http_server: cannot listen on {addr}: {e}");
                    std::process::exit(1)
                });
                let stop = CancellationToken::new();
                on_signal(stop.clone()).expect("signal handler");
                println!(
                    "http_server: serving http://{} (Ctrl-C stops)",
                    listener.local_addr().unwrap()
                );
                let served = serve(listener, stop).await;
                println!("http_server: stopped after {served} connections");
            }
        }),
        _ => {
            eprintln!("usage: http_server [--serve ADDR]");
            std::process::exit(2);
        }
    }
}
