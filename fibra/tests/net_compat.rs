//! Other crates' I/O traits on fibra's sockets: tokio's `AsyncRead`/
//! `AsyncWrite` (feature `tokio`), `futures-io`'s (always), and hyper's
//! runtime traits (feature `hyper`): a hyper server and client on fibra.

#![cfg(all(feature = "tokio", feature = "hyper"))]

use bytes::Bytes;
use fibra::net::{HyperExecutor, HyperTimer, TcpListener, TcpStream};
use http_body_util::{BodyExt, Full};
use hyper::rt::Executor;
use std::convert::Infallible;

#[test]
fn tokio_io_traits_on_a_fibra_stream() {
    // The traits' methods, called through the traits (the inherent
    // `read`/`write_all` of the same names would be picked otherwise).
    use tokio::io::{AsyncReadExt as R, AsyncWriteExt as W};
    fibra::run(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let echo = fibra::spawn(async move {
            let (mut r, mut w) = s.into_split();
            let mut buf = vec![0u8; 100_000];
            R::read_exact(&mut r, &mut buf).await.unwrap();
            W::write_all(&mut w, &buf).await.unwrap();
            W::shutdown(&mut w).await.unwrap();
        });
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 31) as u8).collect();
        let (mut cr, mut cw) = c.split();
        let mut back = Vec::new();
        let (wrote, read) = futures::join!(
            W::write_all(&mut cw, &data),
            R::read_to_end(&mut cr, &mut back)
        );
        wrote.unwrap();
        assert_eq!(read.unwrap(), data.len());
        assert_eq!(back, data);
        echo.await.unwrap();
    });
}

#[test]
fn futures_io_traits_on_a_fibra_stream() {
    use futures::io::{AsyncReadExt, AsyncWriteExt};
    fibra::run(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (mut s, _) = l.accept().await.unwrap();
        c.write_all(b"futures-io").await.unwrap();
        c.close().await.unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "futures-io");
    });
}

#[test]
fn hyper_server_and_client_on_fibra() {
    fibra::run(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = fibra::spawn(async move {
            let (stream, _) = l.accept().await.unwrap();
            let service = hyper::service::service_fn(
                |req: hyper::Request<hyper::body::Incoming>| async move {
                    let n = req.into_body().collect().await.unwrap().to_bytes().len();
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(n.to_string()))))
                },
            );
            hyper::server::conn::http1::Builder::new()
                .timer(HyperTimer)
                .serve_connection(stream, service)
                .await
                .unwrap();
        });
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, Full<Bytes>>(stream)
            .await
            .unwrap();
        // hyper's executor trait, on fibra: drives the client connection.
        let (done_tx, done) = fibra::oneshot::channel();
        HyperExecutor::current().execute(async move {
            let _ = done_tx.send(conn.await.is_ok());
        });
        for size in [0usize, 1, 10_000, 300_000] {
            let req = hyper::Request::post("/")
                .header(hyper::header::HOST, addr.to_string())
                .body(Full::new(Bytes::from(vec![7u8; size])))
                .unwrap();
            let resp = sender.send_request(req).await.unwrap();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, size.to_string().as_bytes());
        }
        drop(sender);
        assert!(done.await.unwrap());
        server.await.unwrap();
    });
}
