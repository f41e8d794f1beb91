//! The `fibra-bench-mimalloc` executable, which runs the rows whose system
//! wants mimalloc ([`crate::system::Allocator::Mimalloc`]). `cargo run`
//! builds only the executable it runs, so the suite builds this one itself
//! on first use, with the same cargo, profile, target and target directory
//! as the running `fibra-bench` (a no-op when it is up to date), and then
//! starts it as a row process like any other row.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::paths;

/// The executable's name.
pub const NAME: &str = "fibra-bench-mimalloc";

/// Why the mimalloc rows are skipped in a build without the feature.
pub const NO_FEATURE: &str = "tokio-*-mimalloc rows: fibra-bench was built without its \
     `mimalloc` feature";

/// Builds `fibra-bench-mimalloc` next to the running executable and returns
/// its path, or why it could not. Progress goes to stderr.
pub fn build() -> Result<PathBuf, String> {
    if !cfg!(feature = "mimalloc") {
        return Err(NO_FEATURE.to_string());
    }
    let exe = env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let profile_dir = exe
        .parent()
        .ok_or_else(|| format!("{} has no directory", exe.display()))?;
    let target_dir = paths::target_dir();
    let mut command = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .args(["build", "--quiet", "-p", "fibra-bench", "--bin", NAME])
        .args(["--features", "mimalloc"])
        .arg("--target-dir")
        .arg(&target_dir)
        .args(profile_args(profile_dir, &target_dir)?)
        .current_dir(paths::manifest_dir());
    eprintln!("building {NAME} (mimalloc as the global allocator) ...");
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo to build {NAME}: {e}"))?;
    if !status.success() {
        return Err(format!("building {NAME} failed ({status}): see above"));
    }
    let built = profile_dir.join(format!("{NAME}{}", env::consts::EXE_SUFFIX));
    if built.is_file() {
        Ok(built)
    } else {
        Err(format!(
            "cargo built {NAME}, but not at {}",
            built.display()
        ))
    }
}

/// The cargo arguments that build into `profile_dir`
/// (`<target>/[<triple>/]<profile>`): `--release`, `--profile NAME`, and
/// `--target TRIPLE` when the directory is a cross-compilation one.
fn profile_args(profile_dir: &Path, target_dir: &Path) -> Result<Vec<String>, String> {
    let name = |dir: &Path| {
        dir.file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
            .ok_or_else(|| format!("unexpected build directory {}", profile_dir.display()))
    };
    let mut args = match name(profile_dir)?.as_str() {
        "debug" => Vec::new(),
        "release" => vec!["--release".to_string()],
        other => vec!["--profile".to_string(), other.to_string()],
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    match profile_dir.parent() {
        Some(parent) if same(parent, target_dir) => {}
        Some(parent) => args.extend(["--target".to_string(), name(parent)?]),
        None => {
            return Err(format!(
                "unexpected build directory {}",
                profile_dir.display()
            ));
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_and_target_from_the_directory() {
        let t = Path::new("/w/target");
        assert!(profile_args(&t.join("debug"), t).unwrap().is_empty());
        assert_eq!(profile_args(&t.join("release"), t).unwrap(), ["--release"]);
        assert_eq!(
            profile_args(&t.join("bench"), t).unwrap(),
            ["--profile", "bench"]
        );
        assert_eq!(
            profile_args(&t.join("x86_64-unknown-linux-gnu/release"), t).unwrap(),
            ["--release", "--target", "x86_64-unknown-linux-gnu"]
        );
    }
}
