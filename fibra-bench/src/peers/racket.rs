//! The Racket peer: one program (`fibra-bench/racket/main.rkt`, a workload
//! per first argument) using threads and rendezvous channels, compiled with
//! `raco make` (its compiled files redirected under
//! `<target>/fibra-bench/racket-compiled/`, so the source tree stays clean)
//! and run by `racket`:
//!
//! `racket main.rkt <workload> name=value... runs=N` does one warm-up run
//! and N timed runs and prints one JSON line per run, like the Go program.
//! Skipped with a note when `racket` or `raco` is not on PATH
//! (`setup-peers.sh` installs them).

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::external::{ExternalPeer, Launch, Peer, find_on_path, first_line};

/// The program.
const MAIN: &str = "main.rkt";

/// The Racket peer: sources in `source_dir`, compiled under
/// `<output_dir>/racket-compiled`.
pub fn peer(source_dir: PathBuf, output_dir: &Path) -> ExternalPeer {
    let compiled_root = output_dir.join("racket-compiled");
    ExternalPeer::new(
        Peer::Racket,
        format!("raco make {}", source_dir.join(MAIN).display()),
        Box::new(move || prepare(&source_dir, &compiled_root)),
    )
}

fn prepare(source_dir: &Path, compiled_root: &Path) -> Result<Launch, String> {
    let missing = |tool| {
        format!("`{tool}` not found on PATH (Debian: racket; see fibra-bench/setup-peers.sh)")
    };
    let racket = find_on_path("racket").ok_or_else(|| missing("racket"))?;
    let raco = find_on_path("raco").ok_or_else(|| missing("raco"))?;
    let roots = compiled_roots(&racket, compiled_root)?;
    let main = source_dir.join(MAIN);
    let output = Command::new(raco)
        .arg("make")
        .arg(&main)
        .env("PLTCOMPILEDROOTS", &roots)
        .output()
        .map_err(|e| format!("cannot run `raco make`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`raco make` failed: {}",
            first_line(&output.stderr)
        ));
    }
    Ok(Launch {
        program: racket,
        args: vec![main.into_os_string()],
        env: vec![("PLTCOMPILEDROOTS", roots)],
        param_prefix: "",
    })
}

/// `PLTCOMPILEDROOTS` that puts our compiled files under `root` and keeps
/// the installation's roots after it: Debian keeps Racket's own compiled
/// collections in a separate root (`same:/usr/lib/racket/compiled`), and
/// without it every start would recompile `racket/base` (seconds).
fn compiled_roots(racket: &Path, root: &Path) -> Result<OsString, String> {
    let output = Command::new(racket)
        .args([
            "-l",
            "racket/base",
            "-e",
            "(for-each (lambda (r) (displayln (if (eq? r 'same) \"same\" r))) (current-compiled-file-roots))",
        ])
        .output()
        .map_err(|e| format!("cannot run `racket`: {e}"))?;
    if !output.status.success() {
        return Err(format!("`racket` failed: {}", first_line(&output.stderr)));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let installed = stdout
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(PathBuf::from);
    env::join_paths(std::iter::once(root.to_path_buf()).chain(installed))
        .map_err(|e| format!("bad compiled-file root {}: {e}", root.display()))
}
