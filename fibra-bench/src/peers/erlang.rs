//! The Erlang/OTP peer: one module (`fibra-bench/erlang/fibra_bench.erl`, a
//! workload per `main/1` argument), compiled with `erlc` into
//! `<target>/fibra-bench/erlang-bin/` and run by `erl` on the default SMP
//! VM (one scheduler per core), or on one scheduler (`+S 1`, the
//! `erlang-1` rows):
//!
//! `erl +P 1048576 [+S 1] -noinput -pa <dir> -run fibra_bench main <workload>
//! name=value... runs=N` does one warm-up run and N timed runs and prints
//! one JSON line per run, like the Go program. Skipped with a note when
//! `erl` or `erlc` is not on PATH (`setup-peers.sh` installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::external::{ExternalPeer, Launch, Peer, find_on_path, first_line};

/// The module, and its source file.
const MODULE: &str = "fibra_bench";

/// The Erlang peer: sources in `source_dir`, compiled into
/// `<output_dir>/erlang-bin`, run with `schedulers` schedulers (`None`: the
/// VM's default, one per core; `Some(n)`: `+S n`, the [`Peer::Erlang1`]
/// rows for `Some(1)`).
pub fn peer(source_dir: PathBuf, output_dir: &Path, schedulers: Option<u32>) -> ExternalPeer {
    let bin_dir = output_dir.join("erlang-bin");
    let peer = if schedulers.is_some() {
        Peer::Erlang1
    } else {
        Peer::Erlang
    };
    ExternalPeer::new(
        peer,
        format!(
            "erlc {}",
            source_dir.join(format!("{MODULE}.erl")).display()
        ),
        Box::new(move || prepare(&source_dir, &bin_dir, schedulers)),
    )
}

fn prepare(source_dir: &Path, bin_dir: &Path, schedulers: Option<u32>) -> Result<Launch, String> {
    let missing = |tool| {
        format!("`{tool}` not found on PATH (Debian: erlang-nox; see fibra-bench/setup-peers.sh)")
    };
    let erl = find_on_path("erl").ok_or_else(|| missing("erl"))?;
    let erlc = find_on_path("erlc").ok_or_else(|| missing("erlc"))?;
    let source = source_dir.join(format!("{MODULE}.erl"));
    let beam = bin_dir.join(format!("{MODULE}.beam"));
    if !is_newer(&beam, &source) {
        std::fs::create_dir_all(bin_dir)
            .map_err(|e| format!("cannot create {}: {e}", bin_dir.display()))?;
        let output = Command::new(erlc)
            .arg("-o")
            .arg(bin_dir)
            .arg(&source)
            .output()
            .map_err(|e| format!("cannot run `erlc`: {e}"))?;
        if !output.status.success() {
            // erlc reports compile errors on stdout.
            let mut text = output.stdout;
            text.extend(output.stderr);
            return Err(format!("`erlc` failed: {}", first_line(&text)));
        }
    }
    Ok(Launch {
        program: erl,
        args: [
            // Room for spawn-join's processes (the default limit is 262,144).
            "+P", "1048576",
        ]
        .into_iter()
        .map(Into::into)
        .chain(
            schedulers
                .into_iter()
                .flat_map(|n| ["+S".into(), n.to_string().into()]),
        )
        .chain(["-noinput", "-pa"].map(Into::into))
        .chain([bin_dir.as_os_str().to_owned()])
        .chain(["-run", MODULE, "main"].map(Into::into))
        .collect(),
        env: Vec::new(),
        param_prefix: "",
    })
}

/// Whether `file` exists and was modified after `than`.
fn is_newer(file: &Path, than: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((modified(file), modified(than)), (Some(a), Some(b)) if a > b)
}
