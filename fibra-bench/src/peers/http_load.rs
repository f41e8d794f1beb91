//! An HTTP server under load ([`crate::case::Runner::Http`]): the row's
//! server runs in a process of its own (this executable's
//! `__http-server`, or the Go program's `http-server`), which prints its
//! address as its first line of output and serves until its standard input
//! closes. The server is started once per row; then every run (the warm-up
//! too) first checks one response itself, then loads the server with
//! [`wrk`] and checks wrk's counts.
//!
//! The checks: the response to one `GET` over a std `TcpStream` has status
//! 200 and exactly the expected body; wrk saw no socket errors, no
//! timeouts and no status of 400 or above; and every byte wrk read belongs
//! to whole responses of the checked size (`requests × size`), plus at most
//! one unfinished response per connection when the run stopped. A failed
//! check fails the row.
//!
//! A run reports its time per request (`seconds / requests`, so the row's
//! ns/op is the inverse of its throughput), the body length the check
//! verified as its result, and the figures `rps`, `p50_us`, `p99_us`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use super::run_line::PeerRun;
use super::wrk::{self, Summary};

/// The figures every run reports.
pub const MEASURED: &[&str] = &["rps", "p50_us", "p99_us"];

/// Where a row's server comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpServer {
    /// This executable with these arguments (`__http-server <system> ...`).
    ThisExe(Vec<String>),
    /// The Go program's subcommand.
    Go(&'static str),
}

/// What the load asks for, and what every answer must carry.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// The path requested, e.g. `/file`.
    pub path: &'static str,
    /// The body every response must have.
    pub body: &'static [u8],
    /// wrk's threads, connections and duration.
    pub wrk: wrk::Options,
}

/// How long the check and the server's start may take before the row fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// Starts the server with `server`, then does one warm-up run and `runs`
/// timed runs of `load` with the wrk executable `wrk`, its hook written
/// into `scratch`. Returns every run (warm-up first).
pub fn measure(
    server: Command,
    wrk: &Path,
    scratch: &Path,
    load: &Load,
    runs: usize,
) -> Result<Vec<PeerRun>, String> {
    let script = wrk::write_script(scratch)
        .map_err(|e| format!("cannot write wrk's script into {}: {e}", scratch.display()))?;
    let server = Server::start(server)?;
    let url = format!("http://{}{}", server.addr, load.path);
    (0..=runs)
        .map(|i| {
            let response_len = check(server.addr, load)?;
            let summary = wrk::run(wrk, &script, &url, load.wrk)?;
            verify(&summary, response_len, load.wrk.connections)
                .map_err(|e| format!("{url}: {e}"))?;
            eprint!(".");
            Ok(PeerRun {
                warmup: i == 0,
                seconds: summary.seconds / summary.requests as f64,
                result: load.body.len() as u64,
                figures: vec![
                    ("rps".into(), summary.requests as f64 / summary.seconds),
                    ("p50_us".into(), summary.p50_us),
                    ("p99_us".into(), summary.p99_us),
                ],
            })
        })
        .collect()
}

/// Checks wrk's counts of a run whose responses are `response_len` bytes.
fn verify(summary: &Summary, response_len: u64, connections: u64) -> Result<(), String> {
    if summary.errors() > 0 {
        return Err(format!("wrk counted errors: {summary:?}"));
    }
    if summary.requests == 0 {
        return Err(format!("no response in the whole run: {summary:?}"));
    }
    let whole = summary.requests * response_len;
    let most = whole + connections * response_len;
    if summary.bytes < whole || summary.bytes > most {
        return Err(format!(
            "wrk read {} bytes for {} responses of {response_len} bytes \
             (expected {whole} to {most})",
            summary.bytes, summary.requests
        ));
    }
    Ok(())
}

/// The server process. Dropping it closes its standard input (it exits)
/// and waits for it, killing it if it lingers.
struct Server {
    child: Child,
    addr: SocketAddr,
    stdin: Option<ChildStdin>,
    /// Kept open so that a server writing more does not die of SIGPIPE.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(mut command: Command) -> Result<Self, String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the server {command:?}: {e}"))?;
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let addr = match read.map(|_| line.trim().parse::<SocketAddr>()) {
            Ok(Ok(addr)) => addr,
            _ => {
                let _ = child.kill();
                let status = child.wait().map_or("unknown".into(), |s| s.to_string());
                return Err(format!(
                    "the server {command:?} printed {line:?} instead of its address \
                     (exit status {status})"
                ));
            }
        };
        Ok(Self {
            child,
            addr,
            stdin,
            _stdout: stdout,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stdin = None; // EOF: the server exits
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one `GET` like wrk's (HTTP/1.1, keep-alive) and checks the answer:
/// status 200 and exactly `load.body`. Returns the response's length,
/// head and body.
pub fn check(addr: SocketAddr, load: &Load) -> Result<u64, String> {
    let fail = |what: String| format!("checking GET {} on {addr}: {what}", load.path);
    let mut stream = TcpStream::connect_timeout(&addr, PATIENCE)
        .map_err(|e| fail(format!("cannot connect: {e}")))?;
    stream
        .set_read_timeout(Some(PATIENCE))
        .map_err(|e| fail(e.to_string()))?;
    let request = format!("GET {} HTTP/1.1\r\nHost: {addr}\r\n\r\n", load.path);
    stream
        .write_all(request.as_bytes())
        .map_err(|e| fail(format!("cannot send: {e}")))?;
    let (head_len, body) = read_response(&mut stream, load.body.len()).map_err(fail)?;
    if body != load.body {
        return Err(fail(format!(
            "the body ({} bytes) differs from the expected one ({} bytes)",
            body.len(),
            load.body.len()
        )));
    }
    Ok((head_len + body.len()) as u64)
}

/// Reads one response with a `Content-Length` of at most `max_body`
/// bytes; returns the length of its head and its body.
fn read_response(stream: &mut impl Read, max_body: usize) -> Result<(usize, Vec<u8>), String> {
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_len = loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if data.len() > 64 * 1024 {
            return Err("no end of the head in the first 64 KB".into());
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(format!("closed after {} bytes", data.len())),
            Ok(n) => data.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("read: {e}")),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_len]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 200 ") {
        return Err(format!("status line {status:?}"));
    }
    let length: usize = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .ok_or_else(|| format!("no Content-Length in {head:?}"))?
        .1
        .trim()
        .parse()
        .map_err(|_| format!("bad Content-Length in {head:?}"))?;
    if length > max_body {
        return Err(format!("Content-Length {length}, expected {max_body}"));
    }
    let mut body = data.split_off(head_len);
    while body.len() < length {
        match stream.read(&mut chunk) {
            Ok(0) => return Err(format!("closed after {} body bytes", body.len())),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    if body.len() > length {
        return Err(format!(
            "{} bytes after a body of {length}",
            body.len() - length
        ));
    }
    Ok((head_len, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_response_and_its_body() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ndate: x\r\n\r\nhello";
        let (head, body) = read_response(&mut &raw[..], 5).unwrap();
        assert_eq!((head, body.as_slice()), (raw.len() - 5, &b"hello"[..]));
        let not_found = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
        assert!(read_response(&mut &not_found[..], 5).is_err());
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel";
        assert!(read_response(&mut &short[..], 5).is_err());
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello";
        assert!(read_response(&mut &chunked[..], 5).is_err());
    }

    #[test]
    fn wrks_counts_must_add_up() {
        let ok = Summary {
            seconds: 1.0,
            requests: 100,
            bytes: 100 * 50 + 20,
            ..Summary::default()
        };
        assert_eq!(verify(&ok, 50, 2), Ok(()));
        // Fewer bytes than the responses: some were short.
        let short = Summary { bytes: 4999, ..ok };
        assert!(verify(&short, 50, 2).is_err());
        // More than one unfinished response per connection.
        let long = Summary { bytes: 5101, ..ok };
        assert!(verify(&long, 50, 2).is_err());
        let errors = Summary {
            status_errors: 1,
            ..ok
        };
        assert!(verify(&errors, 50, 2).is_err());
        let nothing = Summary {
            requests: 0,
            bytes: 0,
            ..ok
        };
        assert!(verify(&nothing, 50, 2).is_err());
    }
}
