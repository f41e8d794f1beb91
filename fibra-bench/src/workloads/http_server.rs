//! The Rust servers of the `http-*` rows (see [`super::http`]): one hyper
//! service ([`respond`]) served by hyper 1.x's HTTP/1.1 connection
//! (`hyper::server::conn::http1`, its defaults: keep-alive, a 30 s
//! header-read timeout on the runtime's timer) on the row's runtime, a
//! task per connection, `TCP_NODELAY` on (as Go's net/http has it).
//!
//! `fibra-bench __http-server <system> <workers|->` binds a free loopback
//! port, prints its address on one line, serves until its standard input
//! closes, then exits.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};

use crate::system::System;
use crate::workloads::Config;
use crate::workloads::http::body;

/// The first argument that makes this executable a server.
pub const ARG: &str = "__http-server";

/// The arguments that start the server of `system`'s row.
pub fn args(system: System, config: &Config) -> Vec<String> {
    let workers = config
        .workers
        .map_or_else(|| "-".to_string(), |n| n.to_string());
    vec![ARG.to_string(), system.name().to_string(), workers]
}

/// The service: [`body`]'s answer for `GET` of a known path, else 404.
async fn respond(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let found = match *request.method() {
        hyper::Method::GET => body(request.uri().path()),
        _ => None,
    };
    let mut response = match found {
        Some(body) => Response::new(Full::new(Bytes::from_static(body))),
        None => {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
        }
    };
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(response)
}

/// Prints the address the server listens on, for the harness.
fn announce(addr: SocketAddr) {
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{addr}");
    let _ = stdout.flush();
}

/// What `main` does when the first argument is [`ARG`].
pub fn main(args: &[String]) -> ExitCode {
    let [system, workers] = args else {
        eprintln!("fibra-bench {ARG}: expected <system> <workers|->, got {args:?}");
        return ExitCode::FAILURE;
    };
    let workers: Option<usize> = match workers.as_str() {
        "-" => None,
        n => match n.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                eprintln!("fibra-bench {ARG}: bad worker count {n:?}");
                return ExitCode::FAILURE;
            }
        },
    };
    // The harness closes our standard input when the row is done.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let served = match system.as_str() {
        "tokio-mt" => serve_tokio(announce),
        #[cfg(feature = "fibra-rt")]
        "fibra" => serve_fibra(workers, announce),
        other => Err(format!("no HTTP server for system `{other}`")),
    };
    #[cfg(not(feature = "fibra-rt"))]
    let _ = workers;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fibra-bench {ARG} {system}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// hyper on tokio's multi-thread runtime (2 workers); the accept loop is a
/// task too. `bound` is told the address once the server listens.
fn serve_tokio(bound: impl FnOnce(SocketAddr)) -> Result<(), String> {
    use hyper_util::rt::{TokioIo, TokioTimer};

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::exec::TOKIO_MT_WORKERS)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("bind: {e}"))?;
        bound(listener.local_addr().map_err(|e| e.to_string())?);
        let accept = tokio::spawn(async move {
            loop {
                let (stream, _) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => return format!("accept: {e}"),
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(respond);
                    // A connection's end (the client closed it or reset
                    // it when its run stopped) is no error of the server.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Err(accept.await.map_err(|e| e.to_string())?)
    })
}

/// hyper on fibra's multi-thread runtime (one worker per core, or
/// `workers`), over `fibra::net::TcpStream` (fibra's feature `hyper`),
/// with fibra's `HyperTimer`; the accept loop is a task too. `bound` is
/// told the address once the server listens.
#[cfg(feature = "fibra-rt")]
fn serve_fibra(
    workers: Option<usize>,
    bound: impl FnOnce(SocketAddr) + Send + 'static,
) -> Result<(), String> {
    let rt = crate::exec::FibraFlavour::Multi(workers).build();
    rt.block_on(async {
        let listener = fibra::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("bind: {e}"))?;
        bound(listener.local_addr().map_err(|e| e.to_string())?);
        let accept = fibra::spawn(async move {
            loop {
                let (stream, _) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => return format!("accept: {e}"),
                };
                let _ = stream.set_nodelay(true);
                drop(fibra::spawn(async move {
                    let service = hyper::service::service_fn(respond);
                    // A connection's end (the client closed it or reset
                    // it when its run stopped) is no error of the server.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(fibra::net::HyperTimer)
                        .serve_connection(stream, service)
                        .await;
                })); // detached
            }
        });
        Err(accept.await.map_err(|e| e.to_string())?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::http_load::{Load, check};
    use crate::peers::wrk;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Starts `serve` on a thread of its own (left running: the test
    /// process ends with it) and returns its address.
    fn start(serve: fn(mpsc::Sender<SocketAddr>) -> Result<(), String>) -> SocketAddr {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || serve(tx));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the server listens")
    }

    /// The check every run of a row makes, on both paths.
    fn answers_both_paths(addr: SocketAddr) {
        for path in ["/", "/file"] {
            let body = body(path).unwrap();
            let load = Load {
                path,
                body,
                wrk: wrk::Options {
                    threads: 1,
                    connections: 1,
                    duration: Duration::from_millis(1),
                },
            };
            let response_len = check(addr, &load).unwrap();
            assert!(response_len > body.len() as u64, "{path}");
            // The same size every time (wrk's byte count relies on it).
            assert_eq!(check(addr, &load).unwrap(), response_len, "{path}");
        }
        let missing = Load {
            path: "/nope",
            body: b"",
            wrk: wrk::Options {
                threads: 1,
                connections: 1,
                duration: Duration::from_millis(1),
            },
        };
        assert!(check(addr, &missing).unwrap_err().contains("404"));
    }

    #[test]
    fn the_tokio_server_answers() {
        answers_both_paths(start(|tx| serve_tokio(move |addr| tx.send(addr).unwrap())));
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn the_fibra_server_answers() {
        answers_both_paths(start(|tx| {
            serve_fibra(Some(2), move |addr| tx.send(addr).unwrap())
        }));
    }
}
