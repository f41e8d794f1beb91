//! Command-line options (parsed with `lexopt`; the help text is [`USAGE`]).

/// What `--help` prints.
pub const USAGE: &str = "\
fibra-bench: fibra against the systems a user would pick instead, same workload, same run

USAGE:
    cargo run --release -p fibra-bench -- [OPTIONS] [FILTER]...

ARGS:
    [FILTER]...      run only workloads whose group or name contains one of these
                     (e.g. `general`, `spsc`, `spsc-bounded`, `general/spsc-rendezvous`,
                     `io/` for the io group alone, `channels/mpmc`); groups: fibers, racket,
                     cforall, parasites, erlang, savina, general, remote, io, channels

OPTIONS:
    --quick          tiny parameters: the whole suite runs in a minute or two (CI)
    --runs N         timed runs per row, after a warm-up [default: 5]
    --passes N       split each row's runs into N passes, each with its own warm-up
                     and process, interleaved with the other systems' passes of the
                     same workload, so a slow stretch of the machine hits every
                     system alike [default: 3; at most --runs]
    --json           print the report JSON on stdout instead of the table
    --workers N      workers of fibra's multi-thread runtime in the `fibra` rows
                     [default: one per core] (`fibra-1` always has 1)
    --system NAME    run only systems whose name contains NAME (repeatable;
                     e.g. `--system fibra --system crossbeam`)
    --list           list the rows that would run, and exit
    -h, --help       print this help

OUTPUT:
    a table on stdout (progress on stderr), target/fibra-bench/report.json and
    an SVG bar chart per group, target/fibra-bench/<group>.svg

NOTES:
    every row runs in a fresh process; the tokio-*-mimalloc rows run in a second
    executable, fibra-bench-mimalloc (mimalloc as the global allocator), which the
    suite builds with cargo on first use. Go, Erlang and Racket rows are skipped
    with a note when their toolchain is missing, the io group's HTTP rows when the
    load generator wrk is (see docs/benchmarks.md)
";

/// The options of one benchmark run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Use tiny parameters.
    pub quick: bool,
    /// Timed runs per row (the warm-up comes on top).
    pub runs: usize,
    /// Interleaved passes the runs are split into (at most `runs`).
    pub passes: usize,
    /// Print the report JSON instead of the table.
    pub json: bool,
    /// Workers of fibra's multi-thread runtime in the `fibra` rows.
    pub workers: Option<usize>,
    /// Only list the selected rows.
    pub list: bool,
    /// Substrings selecting workloads by group or name; empty selects all.
    pub filters: Vec<String>,
    /// Substrings selecting systems by name; empty selects all.
    pub systems: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            quick: false,
            runs: 5,
            passes: 3,
            json: false,
            workers: None,
            list: false,
            filters: Vec::new(),
            systems: Vec::new(),
        }
    }
}

impl Options {
    /// Whether the workload `group/workload` on `system` is selected by the
    /// filters.
    pub fn selects(&self, group: &str, workload: &str, system: &str) -> bool {
        let full = format!("{group}/{workload}");
        let workload_ok =
            self.filters.is_empty() || self.filters.iter().any(|f| full.contains(f.as_str()));
        let system_ok =
            self.systems.is_empty() || self.systems.iter().any(|s| system.contains(s.as_str()));
        workload_ok && system_ok
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Run (or list) the benchmarks.
    Run(Options),
    /// Print [`USAGE`].
    Help,
}

/// Parses the arguments that follow the program name (with `lexopt`:
/// `--name value` and `--name=value` alike, `--` before a filter that
/// starts with `-`).
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, String> {
    use lexopt::prelude::*;

    let mut options = Options::default();
    let mut parser = lexopt::Parser::from_args(args);
    // A count of at least 1, for `--runs`, `--passes` and `--workers`.
    let count = |parser: &mut lexopt::Parser, name: &str| -> Result<usize, String> {
        let text = parser.value().map_err(|e| e.to_string())?;
        let text = text.to_string_lossy();
        match text.parse::<usize>() {
            Ok(0) => Err(format!("--{name} must be at least 1")),
            Ok(n) => Ok(n),
            Err(_) => Err(format!("--{name} needs a number, got `{text}`")),
        }
    };
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Long("quick") => options.quick = true,
            Long("json") => options.json = true,
            Long("list") => options.list = true,
            Long("runs") => options.runs = count(&mut parser, "runs")?,
            Long("passes") => options.passes = count(&mut parser, "passes")?,
            Long("workers") => options.workers = Some(count(&mut parser, "workers")?),
            Long("system") => {
                let name = parser.value().map_err(|e| e.to_string())?;
                options
                    .systems
                    .push(name.string().map_err(|e| e.to_string())?);
            }
            Value(filter) => options
                .filters
                .push(filter.string().map_err(|e| e.to_string())?),
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    Ok(Command::Run(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Command, String> {
        parse(args.iter().map(|s| s.to_string()))
    }

    fn options(args: &[&str]) -> Options {
        match parse_strs(args) {
            Ok(Command::Run(o)) => o,
            other => panic!("{args:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        assert_eq!(options(&[]), Options::default());
        assert_eq!(Options::default().runs, 5);
        assert_eq!(Options::default().passes, 3);
    }

    #[test]
    fn flags_values_and_filters() {
        let o = options(&[
            "--quick",
            "--runs",
            "3",
            "--json",
            "--workers=2",
            "spsc",
            "general",
        ]);
        assert!(o.quick && o.json && !o.list);
        assert_eq!(o.runs, 3);
        assert_eq!(o.workers, Some(2));
        assert_eq!(o.filters, ["spsc", "general"]);
        assert_eq!(options(&["--runs=7"]).runs, 7);
        assert_eq!(options(&["--passes", "2"]).passes, 2);
    }

    #[test]
    fn help_and_errors() {
        assert_eq!(parse_strs(&["-h"]), Ok(Command::Help));
        assert_eq!(parse_strs(&["x", "--help"]), Ok(Command::Help));
        assert!(parse_strs(&["--runs"]).is_err());
        assert!(parse_strs(&["--runs", "many"]).is_err());
        assert!(parse_strs(&["--runs", "0"]).is_err());
        assert!(parse_strs(&["--fast"]).is_err());
        assert!(parse_strs(&["--quick=yes"]).is_err());
        assert!(parse_strs(&["--workers", "0"]).is_err());
        assert!(parse_strs(&["--passes", "0"]).is_err());
        let unknown = parse_strs(&["--fast"]).unwrap_err();
        assert!(unknown.contains("--fast"), "{unknown}");
    }

    #[test]
    fn filters_match_group_or_workload_substrings() {
        let all = Options::default();
        assert!(all.selects("general", "spsc-bounded", "go"));
        let o = options(&["spsc-rend", "fibers"]);
        assert!(o.selects("general", "spsc-rendezvous", "go"));
        assert!(!o.selects("general", "spsc-bounded", "go"));
        assert!(o.selects("fibers", "chain", "go"));
        assert!(options(&["general/spsc-b"]).selects("general", "spsc-bounded", "go"));
    }

    #[test]
    fn system_filters_match_substrings() {
        let o = options(&["--system", "fibra", "--system=crossbeam", "spsc"]);
        assert_eq!(o.systems, ["fibra", "crossbeam"]);
        assert!(o.selects("general", "spsc-bounded", "fibra-tokio-ct"));
        assert!(o.selects("general", "spsc-bounded", "crossbeam"));
        assert!(!o.selects("general", "spsc-bounded", "tokio-ct"));
        assert!(!o.selects("fibers", "chain", "crossbeam"));
    }
}
