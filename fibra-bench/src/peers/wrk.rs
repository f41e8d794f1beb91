//! The HTTP load generator `wrk` (Debian's `wrk` package): one run against
//! a URL, its figures read from a line that a Lua `done` hook prints
//! ([`SCRIPT`]), so nothing depends on wrk's human-readable report.
//!
//! wrk takes its duration in whole seconds. A shorter run (`--quick`) asks
//! for the next whole second and sends wrk `SIGINT` when its time is up:
//! wrk then stops its threads (within its 100 ms bookkeeping tick), counts
//! what they did until then, and reports as usual, the duration it reports
//! being the time it really ran.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::external::find_on_path;

/// Why the rows that need wrk are skipped when it is missing.
pub const MISSING: &str = "io http rows: `wrk` not found \
     (Debian's `wrk` package: `sudo sh fibra-bench/setup-peers.sh`, or set WRK)";

/// The Lua hook that prints a run's figures on one line (wrk's latencies
/// are in microseconds).
const SCRIPT: &str = r#"-- Written by fibra-bench: prints one run's figures on one line.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "fibra-bench-wrk duration_us=%.0f requests=%.0f bytes=%.0f connect=%.0f read=%.0f write=%.0f status=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f\n",
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(99)))
end
"#;

/// What starts the line [`SCRIPT`] prints.
const MARK: &str = "fibra-bench-wrk ";

/// The wrk executable: `$WRK` if set, else `wrk` on PATH.
pub fn find() -> Option<PathBuf> {
    match std::env::var_os("WRK") {
        Some(path) => Some(PathBuf::from(path)).filter(|p| p.is_file()),
        None => find_on_path("wrk"),
    }
}

/// How hard and how long a run loads the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// wrk's threads (`-t`).
    pub threads: u64,
    /// Open connections, shared by the threads (`-c`).
    pub connections: u64,
    /// How long the run lasts.
    pub duration: Duration,
}

/// What one run reported.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// How long wrk ran, in seconds.
    pub seconds: f64,
    /// Responses received whole.
    pub requests: u64,
    /// Bytes read from the server, unfinished responses included.
    pub bytes: u64,
    /// Failed connects.
    pub connect_errors: u64,
    /// Failed reads (a connection closed or reset by the server).
    pub read_errors: u64,
    /// Failed writes.
    pub write_errors: u64,
    /// Responses whose status was 400 or above.
    pub status_errors: u64,
    /// Requests that went unanswered for wrk's timeout (2 s).
    pub timeouts: u64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
}

impl Summary {
    /// Every kind of error wrk counts.
    pub fn errors(&self) -> u64 {
        self.connect_errors
            + self.read_errors
            + self.write_errors
            + self.status_errors
            + self.timeouts
    }
}

/// Writes the Lua hook into `dir` (once per row) and returns its path.
pub fn write_script(dir: &Path) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("wrk-report.lua");
    std::fs::write(&path, SCRIPT)?;
    Ok(path)
}

/// Runs `wrk` against `url` with the hook at `script`.
pub fn run(wrk: &Path, script: &Path, url: &str, options: Options) -> Result<Summary, String> {
    let whole_seconds = options.duration.as_secs_f64().ceil().max(1.0) as u64;
    let mut child = Command::new(wrk)
        .arg(format!("-t{}", options.threads))
        .arg(format!("-c{}", options.connections))
        .arg(format!("-d{whole_seconds}s"))
        .arg("--latency")
        .arg("-s")
        .arg(script)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", wrk.display()))?;
    if options.duration < Duration::from_secs(whole_seconds) {
        std::thread::sleep(options.duration);
        let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
        // SAFETY: `kill` has no memory effects; `pid` is our child, not yet
        // waited for, so the id cannot have been reused.
        if unsafe { libc::kill(pid, libc::SIGINT) } != 0 {
            return Err(format!("cannot stop wrk: {}", io::Error::last_os_error()));
        }
    }
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut stdout)
            .map_err(|e| format!("reading wrk's output: {e}"))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("waiting for wrk: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "wrk exited with {}: {}{}",
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    parse(&stdout)
}

/// Reads [`SCRIPT`]'s line from wrk's output.
pub fn parse(stdout: &str) -> Result<Summary, String> {
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix(MARK))
        .ok_or_else(|| format!("no `{}` line in wrk's output: {stdout:?}", MARK.trim()))?;
    let mut summary = Summary::default();
    let mut seen = 0;
    for field in line.split_whitespace() {
        let (name, value) = field
            .split_once('=')
            .ok_or_else(|| format!("bad field {field:?} in wrk's line {line:?}"))?;
        let value: f64 = value
            .parse()
            .map_err(|_| format!("bad number in {field:?} of wrk's line {line:?}"))?;
        let count = value as u64;
        match name {
            "duration_us" => summary.seconds = value / 1e6,
            "requests" => summary.requests = count,
            "bytes" => summary.bytes = count,
            "connect" => summary.connect_errors = count,
            "read" => summary.read_errors = count,
            "write" => summary.write_errors = count,
            "status" => summary.status_errors = count,
            "timeout" => summary.timeouts = count,
            "p50_us" => summary.p50_us = value,
            "p99_us" => summary.p99_us = value,
            _ => return Err(format!("unknown field {name:?} in wrk's line {line:?}")),
        }
        seen += 1;
    }
    if seen != 10 {
        return Err(format!("expected 10 fields in wrk's line {line:?}"));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_hooks_line() {
        let out = "Running 1s test @ http://127.0.0.1:1/\n  2 threads and 64 connections\n\
            Requests/sec:  54146.00\n\
            fibra-bench-wrk duration_us=320984 requests=17380 bytes=1998700 connect=0 read=1 \
            write=0 status=2 timeout=0 p50_us=3741 p99_us=16161\n";
        let s = parse(out).unwrap();
        assert_eq!(s.seconds, 0.320984);
        assert_eq!((s.requests, s.bytes), (17380, 1998700));
        assert_eq!((s.read_errors, s.status_errors, s.errors()), (1, 2, 3));
        assert_eq!((s.p50_us, s.p99_us), (3741.0, 16161.0));
    }

    #[test]
    fn rejects_output_without_a_full_line() {
        assert!(parse("Requests/sec: 1\n").is_err());
        assert!(parse("fibra-bench-wrk duration_us=1 requests=2\n").is_err());
        assert!(parse("fibra-bench-wrk duration_us=x\n").is_err());
    }
}
