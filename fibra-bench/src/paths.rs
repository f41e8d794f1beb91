//! Where things live: the workspace target directory and the Go sources.

use std::env;
use std::path::{Path, PathBuf};

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
        .unwrap_or_else(|| manifest_dir().join("../target"))
}

/// `<target>/fibra-bench`: the report, and the built peers under `go-bin/`.
pub fn output_dir() -> PathBuf {
    target_dir().join("fibra-bench")
}

/// The Go module of the Go peers.
pub fn go_source_dir() -> PathBuf {
    manifest_dir().join("go")
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
