//! A fresh process for every run of an in-process row: the issue this
//! group measures is a spread between processes (a runtime that settles
//! into a slow mode in some processes and not in others), which runs that
//! share one process would hide. [`per_run_process`] turns a row's
//! [`Runner::InProcess`] into a [`Runner::Child`]; the harness then starts
//! `fibra-bench __child channels <label> <quick> <workers>` once for the
//! warm-up and once per timed run, and the row's min, median and max are
//! over processes. Each child ([`child`]) finds its row by label among the
//! group's in-process rows, builds it (the untimed setup: a runtime), does
//! an untimed warm-up pass, then times one pass; both results are checked.

use std::time::Instant;

use crate::case::{Case, Runner};
use crate::peers::child;
use crate::workloads::Config;

/// The first argument of the group's child processes.
pub const WORKLOAD: &str = "channels";

/// `case` with its in-process runner replaced by a child process per run;
/// other runners (Go, an unavailable row) are kept.
pub fn per_run_process(case: Case, config: &Config) -> Case {
    if !matches!(case.runner, Runner::InProcess(_)) {
        return case;
    }
    let workers = config
        .workers
        .map_or_else(|| "-".to_string(), |n| n.to_string());
    let args = vec![
        WORKLOAD.to_string(),
        case.label(),
        config.quick.to_string(),
        workers,
    ];
    Case {
        runner: Runner::Child { args },
        ..case
    }
}

/// A child's run: `args` are the row's label, `quick` and the workers
/// (`-`: the default), as [`per_run_process`] wrote them; `rows` builds
/// the group's in-process rows for a configuration. Returns the line to
/// print.
pub fn run_child(
    args: &[String],
    rows: impl FnOnce(&Config) -> Vec<Case>,
) -> Result<String, String> {
    let [label, quick, workers] = args else {
        return Err(format!("expected <label> <quick> <workers>, got {args:?}"));
    };
    let quick = quick
        .parse()
        .map_err(|_| format!("bad quick flag {quick:?}"))?;
    let workers = match workers.as_str() {
        "-" => None,
        n => Some(n.parse().map_err(|_| format!("bad worker count {n:?}"))?),
    };
    let case = rows(&Config { quick, workers })
        .into_iter()
        .find(|case| case.label() == *label)
        .ok_or_else(|| format!("no row {label:?}"))?;
    let Runner::InProcess(setup) = case.runner else {
        return Err(format!("{label} does not run in this process"));
    };
    let expected = case.spec.expected;
    let mut run = setup();
    let warm_up = run();
    if warm_up != expected {
        return Err(format!(
            "WRONG RESULT in {label} (warm-up pass): got {warm_up}, expected {expected}"
        ));
    }
    let cpu_start = crate::harness::process_cpu_seconds();
    let start = Instant::now();
    let result = run();
    let seconds = start.elapsed().as_secs_f64();
    let cpu = crate::harness::process_cpu_seconds() - cpu_start;
    let cpu_pct = if seconds > 0.0 {
        cpu / seconds * 100.0
    } else {
        0.0
    };
    Ok(child::line(seconds, result, &[("cpu_pct", cpu_pct)]))
}
