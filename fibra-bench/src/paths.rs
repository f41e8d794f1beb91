//! Where things live: the workspace target directory and the peers' sources.

use std::env;
use std::path::{Path, PathBuf};

use crate::peers::external::Peer;

/// The workspace target directory: `$CARGO_TARGET_DIR`, else the nearest
/// ancestor of this executable that cargo marked with `CACHEDIR.TAG`, else
/// `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .skip(1)
                .find(|dir| dir.join("CACHEDIR.TAG").is_file())
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| match manifest_dir().parent() {
            Some(workspace) => workspace.join("target"),
            None => manifest_dir().join("target"),
        })
}

/// `<target>/fibra-bench`: the report, the charts, and the built peers
/// (`go-bin/`, `erlang-bin/`, `racket-compiled/`).
pub fn output_dir() -> PathBuf {
    target_dir().join("fibra-bench")
}

/// The sources of an external peer: `fibra-bench/go`, `erlang`, `racket`.
pub fn peer_source_dir(peer: Peer) -> PathBuf {
    manifest_dir().join(peer.source_folder())
}

/// The fibra-bench crate's directory.
pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
