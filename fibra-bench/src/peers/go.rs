//! The Go peer: one Go program (`fibra-bench/go/`, a subcommand per
//! workload), built at run time into `<target>/fibra-bench/go-bin/`.
//!
//! Protocol: `fibra-bench-go <program> -<param>=<value>... -runs=N` does one
//! warm-up run and N timed runs and prints one JSON line per run:
//! `{"warmup":true,"seconds":0.0123,"result":499999500000}` (plus any
//! figures the row measures, e.g. `"bytes_per_task":2730`). The harness
//! checks every `result`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::external::{ExternalPeer, Launch, Peer, find_on_path, first_line};

/// Name of the built executable.
const BINARY_NAME: &str = "fibra-bench-go";

/// The Go peer: sources in `source_dir`, built into `<output_dir>/go-bin`.
pub fn peer(source_dir: PathBuf, output_dir: &Path) -> ExternalPeer {
    let bin_dir = output_dir.join("go-bin");
    ExternalPeer::new(
        Peer::Go,
        format!("go build {}", source_dir.display()),
        Box::new(move || {
            build(&source_dir, &bin_dir).map(|binary| Launch {
                program: binary,
                args: Vec::new(),
                env: Vec::new(),
                param_prefix: "-",
            })
        }),
    )
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
        return Err(format!("`go build` failed: {}", first_line(&output.stderr)));
    }
    Ok(binary)
}

/// `go` from PATH, else from `$GOROOT/bin` or the standard install
/// location (a non-login shell may lack `/usr/local/go/bin` on its PATH).
fn go_command() -> PathBuf {
    if find_on_path("go").is_some() {
        return PathBuf::from("go");
    }
    env::var_os("GOROOT")
        .map(|root| PathBuf::from(root).join("bin/go"))
        .into_iter()
        .chain([PathBuf::from("/usr/local/go/bin/go")])
        .find(|go| go.is_file())
        .unwrap_or_else(|| PathBuf::from("go"))
}
