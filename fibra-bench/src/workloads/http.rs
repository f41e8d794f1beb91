//! `io/http-hello` and `io/http-file`: an HTTP/1.1 server under the load
//! generator `wrk`, over loopback, keep-alive.
//!
//! Every server answers `GET /` with [`HELLO`] and `GET /file` with
//! [`file_body`] (10 KB, generated once at start), `Content-Type:
//! text/plain`, and runs in a process of its own ([`super::http_server`];
//! the Go program's `http-server`). `wrk` (2 threads, 64 or 256
//! connections) loads it for `duration_ms`, once for the warm-up and once
//! per timed run, a process of its own each time; before each run the
//! harness checks one response itself (see `peers::http_load`, which also
//! checks that wrk saw no error and read only whole responses).
//!
//! Each run reports its time per request (so ns/op is the inverse of the
//! throughput, and the ratios compare throughputs) and the figures `rps`,
//! `p50_us` and `p99_us` (wrk's latency percentiles). Result: the length
//! of the body the check verified. Ops: 1 (a request).

use std::sync::OnceLock;
use std::time::Duration;

use crate::case::{Case, Params, Runner, Spec};
use crate::peers::http_load::{HttpServer, Load, MEASURED};
use crate::peers::wrk;
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::http_server;

/// The body of `GET /`.
pub const HELLO: &[u8] = b"Hello, World!";

/// The length of the body of `GET /file`.
pub const FILE_LEN: usize = 10 * 1024;

/// wrk's threads.
const WRK_THREADS: u64 = 2;

/// How the rows work.
const NOTE: &str = "http: an HTTP/1.1 keep-alive server in a process of its own (fibra: hyper \
     1.x http1 over fibra::net::TcpStream, a fibra::spawn per connection; tokio-mt: the same \
     hyper code over tokio's TcpStream (hyper-util TokioIo), tokio::spawn, 2 workers; go: \
     net/http), loaded by wrk -t2 for duration_ms per run; time/op = seconds per request \
     (1/rps); rps, p50_us, p99_us from wrk; every run checks one response and wrk's counts \
     (no errors, only whole responses)";

/// The body of `GET /file`: lines of 63 letters drawn by a linear
/// congruential generator, each ending in a newline (the Go program draws
/// the same).
pub fn file_body() -> &'static [u8] {
    static BODY: OnceLock<Vec<u8>> = OnceLock::new();
    BODY.get_or_init(|| {
        let mut x: u32 = 1;
        (0..FILE_LEN)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                if i % 64 == 63 {
                    b'\n'
                } else {
                    b'a' + ((x >> 16) % 26) as u8
                }
            })
            .collect()
    })
}

/// The body a server answers `path` with, if any.
pub fn body(path: &str) -> Option<&'static [u8]> {
    match path {
        "/" => Some(HELLO),
        "/file" => Some(file_body()),
        _ => None,
    }
}

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let duration_ms = config.size(2_000, 100);
    let mut cases = Vec::new();
    for (workload, path) in [("http-hello", "/"), ("http-file", "/file")] {
        let body = body(path).expect("a path the servers answer");
        for connections in [64, 256] {
            let spec = Spec {
                group: "io",
                workload,
                params: Params::new()
                    .with("connections", connections)
                    .with("threads", WRK_THREADS)
                    .with("duration_ms", duration_ms),
                ops: 1,
                expected: body.len() as u64,
            };
            let load = Load {
                path,
                body,
                wrk: wrk::Options {
                    threads: WRK_THREADS,
                    connections,
                    duration: Duration::from_millis(duration_ms),
                },
            };
            let runner = |server| Runner::Http { server, load };
            let this_exe =
                |system: System| runner(HttpServer::ThisExe(http_server::args(system, config)));
            cases.extend(
                [
                    spec.on(System::Fibra, fibra_runner(this_exe(System::Fibra))),
                    spec.on(System::TokioMt, this_exe(System::TokioMt)),
                    spec.on(System::Go, runner(HttpServer::Go("http-server"))),
                ]
                .into_iter()
                .map(|case| case.with_note(NOTE).with_measured(MEASURED)),
            );
        }
    }
    cases
}

/// The fibra row's runner: skipped with a note in a build without fibra's
/// runtime.
fn fibra_runner(runner: Runner) -> Runner {
    #[cfg(not(feature = "fibra-rt"))]
    let runner = {
        drop(runner);
        Runner::Unavailable(crate::exec::NO_FIBRA_RT)
    };
    runner
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_10_kb_of_text_lines() {
        let body = file_body();
        assert_eq!(body.len(), FILE_LEN);
        assert_eq!(body.iter().filter(|&&b| b == b'\n').count(), FILE_LEN / 64);
        assert!(body.iter().all(|b| b.is_ascii_lowercase() || *b == b'\n'));
        // The first letters of the generator's sequence (as the Go program
        // draws them).
        assert_eq!(&body[..8], b"quzzptir");
        assert_eq!(super::body("/nope"), None);
    }
}
