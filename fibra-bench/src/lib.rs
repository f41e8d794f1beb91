//! `cargo run --release -p fibra-bench`: fibra's benchmark suite.
//!
//! Runs every selected workload on fibra and on its peers in one run, prints
//! a table with ratios on stdout (progress on stderr) and writes
//! `target/fibra-bench/report.json` and one SVG bar chart per group
//! (`target/fibra-bench/<group>.svg`). See `--help` and docs/benchmarks.md.
//!
//! The suite is this library and two executables that differ only in their
//! global allocator: `fibra-bench` (the system's, glibc's malloc) runs the
//! suite and every row but the `*-mimalloc` ones, which run in row processes
//! of `fibra-bench-mimalloc` (mimalloc; see `src/mimalloc_bin.rs`). A global
//! allocator is fixed per executable, hence two.

mod case;
mod cli;
mod cross_core;
mod exec;
mod harness;
mod mimalloc_bin;
mod paths;
mod peers;
mod report;
mod system;
mod workloads;

use std::error::Error;
use std::process::ExitCode;
use std::time::SystemTime;

use cli::{Command, Options};
use harness::Harness;
use peers::Peers;
use report::Report;
pub use system::Allocator;

/// The `main` of both executables: `allocator` is the global allocator the
/// calling executable installed (a row process checks that its row wants
/// that one).
pub fn main(allocator: Allocator) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    harness::quiet_skip_panics();
    if args.first().is_some_and(|a| a == peers::child::ARG) {
        return peers::child::main(&args[1..]);
    }
    if args
        .first()
        .is_some_and(|a| a == workloads::remote::HOST_ARG)
    {
        return workloads::remote::host_main(&args[1..]);
    }
    if args
        .first()
        .is_some_and(|a| a == workloads::http_server::ARG)
    {
        return workloads::http_server::main(&args[1..]);
    }
    if args.first().is_some_and(|a| a == harness::ROW_ARG) {
        return harness::row_main(&args[1..], allocator);
    }
    match cli::parse(args.clone()) {
        Ok(Command::Help) => {
            print!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Command::Run(options)) => match run(&options, &args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fibra-bench: error: {e}");
                ExitCode::FAILURE
            }
        },
        Err(message) => {
            eprintln!("fibra-bench: {message}\n\n{}", cli::USAGE);
            ExitCode::from(2)
        }
    }
}

fn run(options: &Options, args: &[String]) -> Result<(), Box<dyn Error>> {
    let started = SystemTime::now();
    let config = workloads::Config {
        quick: options.quick,
        workers: options.workers,
    };
    let all = workloads::all(&config);
    let not_yet = workloads::not_yet(&all);
    let selected: Vec<_> = all
        .into_iter()
        .filter(|case| options.selects(case.spec.group, case.spec.workload, case.system.name()))
        .collect();
    if selected.is_empty() {
        return Err(format!(
            "nothing matches workloads {:?} and systems {:?} (see --list)",
            options.filters, options.systems
        )
        .into());
    }
    if options.list {
        for case in &selected {
            println!("{}", case.label());
        }
        return Ok(());
    }

    let output_dir = paths::output_dir();
    let peers = Peers::new(&output_dir);
    let summary = Harness::new(options.runs, peers)
        .passes(options.passes)
        .isolated(config)
        .probe_cross_core()
        .run_all(selected)?;

    let mut report = Report::new(started, command_line(args));
    report.quick = options.quick;
    report.workers = options.workers;
    report.rows = summary.rows;
    report.skipped = summary.skipped;
    report.cross_core_ns = summary.cross_core_ns;
    report.not_yet = not_yet;
    let path = output_dir.join("report.json");
    report.write_json(&path)?;
    let charts = report::write_charts(&report, &output_dir, &workloads::groups())?;

    if options.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
        eprint!("{}", report::render_missing(&report));
    } else {
        println!();
        print!("{}", report::render_table(&report));
        println!();
        print!("{}", report::render_missing(&report));
    }
    eprint!("{}", report::render_cross_core(&report));
    eprintln!("report: {}", path.display());
    for chart in &charts {
        eprintln!("chart:  {}", chart.display());
    }
    Ok(())
}

/// `fibra-bench --runs 5`: how this run was invoked, for the report.
fn command_line(args: &[String]) -> String {
    std::iter::once("fibra-bench")
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}
