//! The Go peer: one Go program (`fibra-bench/go/`, a subcommand per
//! workload), built at run time into the target directory.
//!
//! Protocol: `fibra-bench-go <program> -<param>=<value>... -runs=N` does one
//! warm-up run and N timed runs and prints one JSON line per run:
//! `{"warmup":true,"seconds":0.0123,"result":499999500000}` (plus any
//! figures the row measures, e.g. `"bytes_per_task":2730`). The harness
//! checks every `result`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::case::Params;

use super::{PeerRun, parse_run};

/// Name of the built executable.
const BINARY_NAME: &str = "fibra-bench-go";

/// The Go programs, built on first use.
pub struct GoPeer {
    state: State,
}

enum State {
    NotBuilt {
        source_dir: PathBuf,
        bin_dir: PathBuf,
    },
    Built(PathBuf),
    Unavailable(String),
}

impl GoPeer {
    /// Go sources in `source_dir`, to be built into `bin_dir`.
    pub fn new(source_dir: PathBuf, bin_dir: PathBuf) -> Self {
        Self {
            state: State::NotBuilt {
                source_dir,
                bin_dir,
            },
        }
    }

    /// A Go peer that is known to be unusable, for `reason`.
    #[cfg(test)]
    pub fn unavailable(reason: &str) -> Self {
        Self {
            state: State::Unavailable(reason.to_string()),
        }
    }

    /// The built program, building it first if needed (progress on stderr).
    /// `Err(reason)` when `go` is missing or the build fails: Go rows are
    /// then skipped, never failed.
    pub fn binary(&mut self) -> Result<&Path, &str> {
        if let State::NotBuilt {
            source_dir,
            bin_dir,
        } = &self.state
        {
            let started = Instant::now();
            eprint!("building Go peers ({}) ... ", source_dir.display());
            self.state = match build(source_dir, bin_dir) {
                Ok(binary) => {
                    eprintln!("ok ({:.1} s)", started.elapsed().as_secs_f64());
                    State::Built(binary)
                }
                Err(reason) => {
                    eprintln!("{reason}: go rows will be skipped");
                    State::Unavailable(reason)
                }
            };
        }
        match &self.state {
            State::Built(binary) => Ok(binary),
            State::Unavailable(reason) => Err(reason),
            State::NotBuilt { .. } => unreachable!("built above"),
        }
    }

    /// Runs `program` with the workload parameters; returns every run it
    /// reported (warm-up first). `Err` if it crashed or printed garbage.
    pub fn run(
        binary: &Path,
        program: &str,
        params: &Params,
        runs: usize,
    ) -> Result<Vec<PeerRun>, String> {
        let mut command = Command::new(binary);
        command.arg(program);
        for (name, value) in params.iter() {
            command.arg(format!("-{name}={value}"));
        }
        command.arg(format!("-runs={runs}"));
        let output = command
            .output()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        if !output.status.success() {
            return Err(format!(
                "{command:?} exited with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(parse_run)
            .collect()
    }
}

/// Builds the Go module in `source_dir` into `bin_dir`.
fn build(source_dir: &Path, bin_dir: &Path) -> Result<PathBuf, String> {
    let binary = bin_dir.join(BINARY_NAME);
    let mut command = Command::new(go_command());
    command
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(source_dir)
        .env("GOFLAGS", "-mod=mod")
        .env("GOWORK", "off")
        // Never try to download a toolchain: use the installed one.
        .env("GOTOOLCHAIN", "local");
    if ["GOCACHE", "XDG_CACHE_HOME", "HOME"]
        .iter()
        .all(|v| env::var_os(v).is_none())
    {
        // go refuses to build without a cache directory.
        command.env("GOCACHE", bin_dir.join("go-cache"));
    }
    let output = match command.output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("`go` not found (PATH, $GOROOT/bin, /usr/local/go/bin)".into());
        }
        Err(e) => return Err(format!("cannot run `go build`: {e}")),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().next().unwrap_or("(no output)");
        return Err(format!("`go build` failed: {first}"));
    }
    Ok(binary)
}

/// `go` from PATH, else from `$GOROOT/bin` or the standard install
/// location (a non-login shell may lack `/usr/local/go/bin` on its PATH).
fn go_command() -> PathBuf {
    let on_path = env::var_os("PATH")
        .is_some_and(|path| env::split_paths(&path).any(|dir| dir.join("go").is_file()));
    if on_path {
        return PathBuf::from("go");
    }
    env::var_os("GOROOT")
        .map(|root| PathBuf::from(root).join("bin/go"))
        .into_iter()
        .chain([PathBuf::from("/usr/local/go/bin/go")])
        .find(|go| go.is_file())
        .unwrap_or_else(|| PathBuf::from("go"))
}
