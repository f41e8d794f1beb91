//! Child processes: rows whose every run happens in a fresh process of this
//! executable ([`crate::case::Runner::Child`]), for figures a long-lived
//! process would blur. Resident memory is one: memory freed by one run stays
//! mapped in the process (allocators keep it), so a second run in the same
//! process would seem to need none.
//!
//! `fibra-bench __child <workload> <args>...` does the work once and prints
//! one JSON line in the format of the Go peer (see [`super::run_line`]);
//! the harness starts it once for the warm-up and once per timed run.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use serde_json::{Map, Value, json};

use super::run_line::{PeerRun, parse_run};

/// The first argument that makes this executable a child.
pub const ARG: &str = "__child";

/// Starts `fibra-bench __child <args>...` and returns the run it reports.
pub fn run_once(args: &[String]) -> Result<PeerRun, String> {
    let args: Vec<&str> = std::iter::once(ARG)
        .chain(args.iter().map(String::as_str))
        .collect();
    let stdout = run_self(&args, false)?;
    let mut lines = stdout.lines().filter(|line| !line.trim().is_empty());
    match (lines.next(), lines.next()) {
        (Some(line), None) => parse_run(line),
        _ => Err(format!("expected one line from the child, got: {stdout:?}")),
    }
}

/// Runs this executable with `args` and returns what it printed on
/// stdout. Its stderr is shown as it comes with `show_stderr` (progress),
/// else captured into the error if it fails.
pub fn run_self(args: &[&str], show_stderr: bool) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    run_exe(&exe, args, show_stderr)
}

/// [`run_self`] with the executable `exe` (`fibra-bench-mimalloc`).
pub fn run_exe(exe: &Path, args: &[&str], show_stderr: bool) -> Result<String, String> {
    let mut command = Command::new(exe);
    command.args(args);
    if show_stderr {
        command.stderr(Stdio::inherit());
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if !output.status.success() {
        let stderr = if show_stderr {
            "its error is above".into()
        } else {
            String::from_utf8_lossy(&output.stderr).trim().to_string()
        };
        return Err(format!(
            "`{} {}` exited with {}: {stderr}",
            exe.display(),
            args.join(" "),
            output.status,
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The line a child prints: its time, its result and its figures.
pub fn line(seconds: f64, result: u64, figures: &[(&str, f64)]) -> String {
    let mut object = Map::new();
    object.insert("warmup".into(), json!(false));
    object.insert("seconds".into(), json!(seconds));
    object.insert("result".into(), json!(result));
    for &(name, value) in figures {
        object.insert(name.into(), json!(value));
    }
    Value::Object(object).to_string()
}

/// What `main` does when the first argument is [`ARG`]: runs the child
/// named by `args` and prints its line.
pub fn main(args: &[String]) -> ExitCode {
    match crate::workloads::run_child(args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("fibra-bench {ARG} {}: {message}", args.join(" "));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_line_parses_as_a_run() {
        let run = parse_run(&line(0.5, 42, &[("bytes_per_task", 300.25)])).unwrap();
        assert_eq!(
            run,
            PeerRun {
                warmup: false,
                seconds: 0.5,
                result: 42,
                figures: vec![("bytes_per_task".into(), 300.25)],
            }
        );
    }
}
