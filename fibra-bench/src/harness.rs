//! Running rows: a warm-up, then N timed runs, every result checked;
//! statistics; progress on stderr.
//!
//! The rows of one workload (same group, workload and params: the rows
//! whose ratios are compared) are measured in passes, interleaved: pass 1
//! of every system, then pass 2 of every system, and so on, each pass a
//! fresh process (or peer program) with a warm-up of its own and a share
//! of the timed runs. The machines this runs on are shared and slow down
//! for seconds at a time; measured row after row, a slow stretch lands on
//! one system's whole row and moves a ratio, while interleaved it lands on
//! one pass of each, and the median over every pass's runs discounts it.

use std::any::Any;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use crate::case::{Case, Params, RunFn, Runner, Spec};
use crate::peers::Peers;
use crate::peers::child;
use crate::peers::external::Peer;
use crate::peers::http_load::{self, HttpServer};
use crate::peers::run_line::PeerRun;
use crate::peers::wrk;
use crate::report::Row;
use crate::system::Allocator;
use crate::workloads::Config;

/// Median, min and max of the timed runs, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Median (mean of the two middle runs for an even count).
    pub median_s: f64,
    /// Fastest run.
    pub min_s: f64,
    /// Slowest run.
    pub max_s: f64,
}

impl Stats {
    /// Statistics of `samples` (seconds). Panics if there are none.
    pub fn from_samples(samples: &[f64]) -> Self {
        assert!(!samples.is_empty(), "no samples");
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let median_s = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        };
        Self {
            median_s,
            min_s: sorted[0],
            max_s: sorted[sorted.len() - 1],
        }
    }
}

/// A failure that aborts the whole suite: numbers from a broken run are
/// not numbers.
#[derive(Debug)]
pub enum BenchError {
    /// A run returned the wrong result.
    WrongResult {
        /// [`Case::label`] of the row.
        case: String,
        /// `warm-up` or `run 3`.
        run: String,
        /// What the run returned.
        got: u64,
        /// What it should have returned.
        expected: u64,
    },
    /// A run panicked (e.g. a send failed, a task panicked).
    Panicked {
        /// [`Case::label`] of the row.
        case: String,
        /// The panic message.
        message: String,
    },
    /// An external peer program crashed or printed something unexpected.
    Peer {
        /// [`Case::label`] of the row.
        case: String,
        /// What went wrong.
        message: String,
    },
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongResult {
                case,
                run,
                got,
                expected,
            } => write!(
                f,
                "WRONG RESULT in {case} ({run}): got {got}, expected {expected}"
            ),
            Self::Panicked { case, message } => write!(f, "{case} panicked: {message}"),
            Self::Peer { case, message } => write!(f, "{case}: peer failed: {message}"),
        }
    }
}

impl std::error::Error for BenchError {}

/// The payload of a panic by which an in-process row's setup says the row
/// cannot run here (a server it needs failed to start, say): the row is
/// reported as skipped with this reason instead of aborting the suite.
/// Raise it with [`skip_row`].
#[derive(Debug)]
pub struct SkipRow(pub String);

/// Skips the in-process row whose setup calls it (see [`SkipRow`]).
pub fn skip_row(reason: String) -> ! {
    panic::panic_any(SkipRow(reason))
}

/// Installs a panic hook that stays silent for [`SkipRow`] panics (they are
/// reported as skipped rows) and prints every other panic as before.
pub fn quiet_skip_panics() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<SkipRow>().is_none() {
            previous(info);
        }
    }));
}

/// What an in-process row gave: its timed runs, or why it was skipped.
type InProcess = Result<TimedRuns, String>;

/// The timed runs of an in-process row (a row process prints them as
/// JSON): wall-clock seconds and the CPU seconds the process used over
/// the same span (every thread: workers spinning or idle count too).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct TimedRuns {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

impl TimedRuns {
    /// The samples and the figure `cpu_pct`: per run, CPU time over wall
    /// time, in percent (200: two cores busy throughout).
    fn into_measured(self) -> Measured {
        let shares: Vec<f64> = self
            .wall
            .iter()
            .zip(&self.cpu)
            .map(|(wall, cpu)| if *wall > 0.0 { cpu * 100.0 / wall } else { 0.0 })
            .collect();
        let mut measured = Measured {
            seconds: self.wall,
            ..Measured::default()
        };
        measured.figure("cpu_pct", shares);
        measured
    }
}

/// A row's timed runs so far, every pass's: seconds, and the value of
/// each figure (`cpu_pct`, `bytes_per_task`, ...) per run.
#[derive(Debug, Default)]
struct Measured {
    seconds: Vec<f64>,
    figures: Vec<(&'static str, Vec<f64>)>,
    /// The largest cross-core round trip measured before a pass (ns; 0:
    /// none measured).
    cross_core_ns: f64,
}

impl Measured {
    /// Adds `values` (one per run) to the figure `name`.
    fn figure(&mut self, name: &'static str, values: Vec<f64>) {
        match self.figures.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => old.extend(values),
            None => self.figures.push((name, values)),
        }
    }

    /// Adds a later pass's runs.
    fn append(&mut self, pass: Self) {
        self.seconds.extend(pass.seconds);
        self.cross_core_ns = self.cross_core_ns.max(pass.cross_core_ns);
        for (name, values) in pass.figures {
            self.figure(name, values);
        }
    }

    /// The samples and the median (rounded) of every figure that every run
    /// reported.
    fn finish(self) -> (Vec<f64>, Params) {
        let mut figures = Params::new();
        for (name, values) in self.figures {
            if values.len() == self.seconds.len() && !values.is_empty() {
                let median = Stats::from_samples(&values).median_s;
                figures = figures.with(name, median.max(0.0).round() as u64);
            }
        }
        if self.cross_core_ns > 0.0 {
            figures = figures.with("xcore_ns", self.cross_core_ns.round() as u64);
        }
        (self.seconds, figures)
    }
}

/// CPU seconds used so far by every thread of this process.
pub(crate) fn process_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec`; the clock id is a
    // constant every Linux kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// What running the selected rows produced.
#[derive(Debug, Default)]
pub struct Summary {
    /// Measured rows, in run order.
    pub rows: Vec<Row>,
    /// One line per reason rows were skipped (a peer not installed, ...).
    pub skipped: Vec<String>,
    /// The cross-core round trip measured before each pass, in run order
    /// (empty unless [`Harness::probe_cross_core`]).
    pub cross_core_ns: Vec<f64>,
}

/// Runs rows and remembers per-run state such as the built peer programs.
pub struct Harness {
    runs: usize,
    /// Passes each row's runs are split into, interleaved with the other
    /// rows of its workload (module docs); at most `runs`.
    passes: usize,
    peers: Peers,
    /// Run each in-process row in a fresh process of this executable,
    /// which builds the rows from this configuration ([`row_main`]).
    isolate: Option<Config>,
    /// The `fibra-bench-mimalloc` executable once built (or why not), for
    /// the rows that want mimalloc.
    mimalloc: Option<Result<PathBuf, String>>,
    /// Measure the cross-core round trip before each pass
    /// ([`crate::cross_core`]).
    probe_cross_core: bool,
}

/// A row being measured: its case, and what its passes gave so far.
struct Pending {
    label: String,
    case: Case,
    /// An in-process row's run, once set up (rows measured in this
    /// process: its later passes reuse it).
    prepared: Option<RunFn>,
    measured: Option<Measured>,
    /// Why the row cannot run; no later pass tries it again.
    skipped: Option<String>,
}

impl Harness {
    /// A harness doing `runs` timed runs per row, in one pass; `peers` are
    /// prepared (built, compiled) on first use.
    pub fn new(runs: usize, peers: Peers) -> Self {
        Self {
            runs,
            passes: 1,
            peers,
            isolate: None,
            mimalloc: None,
            probe_cross_core: false,
        }
    }

    /// Measures the machine's cross-core round trip before each pass of
    /// every row ([`crate::cross_core`]): the row's figure `xcore_ns` is
    /// the largest of its passes', and [`Summary::cross_core_ns`] keeps
    /// every pass's.
    pub fn probe_cross_core(mut self) -> Self {
        self.probe_cross_core = true;
        self
    }

    /// Splits each row's runs into `passes` passes (at most one per run),
    /// interleaved with the other rows of its workload (module docs).
    pub fn passes(mut self, passes: usize) -> Self {
        self.passes = passes.clamp(1, self.runs.max(1));
        self
    }

    /// Runs every in-process row in a process of its own (all its runs
    /// there), so that no row measures in a heap another row left behind:
    /// the allocator's state after one system's row changes another's
    /// figures (tokio-mt's spawn-join is slower after fibra's rows than
    /// alone).
    pub fn isolated(mut self, config: Config) -> Self {
        self.isolate = Some(config);
        self
    }

    /// Timed runs in pass `pass` (from 0): the runs shared out, the first
    /// passes taking one more when they do not divide evenly.
    fn runs_in_pass(&self, pass: usize) -> usize {
        self.runs / self.passes + usize::from(pass < self.runs % self.passes)
    }

    /// Runs every case, the rows of each workload in interleaved passes,
    /// printing one progress line per row and pass on stderr. Stops at the
    /// first [`BenchError`]. Rows come out in the cases' order.
    pub fn run_all(&mut self, cases: Vec<Case>) -> Result<Summary, BenchError> {
        let mut summary = Summary::default();
        let total = cases.len();
        // Prepare the peers before the first progress line, so the two
        // don't mix.
        for peer in Peer::ALL {
            if cases.iter().any(|c| match &c.runner {
                Runner::External { peer: p, .. } => *p == peer,
                Runner::Http { server, .. } => {
                    peer == Peer::Go && matches!(server, HttpServer::Go(_))
                }
                _ => false,
            }) {
                let _ = self.peers.get(peer).launch();
            }
        }
        if self.isolate.is_some()
            && cases.iter().any(|c| {
                c.system.allocator() == Allocator::Mimalloc
                    && matches!(c.runner, Runner::InProcess(_))
            })
        {
            let _ = self.mimalloc_exe();
        }
        let mut cases = cases.into_iter().enumerate().peekable();
        while let Some(first) = cases.next() {
            // The rows of one workload: consecutive cases of the same work.
            let mut block = vec![first];
            while let Some(next) = cases.next_if(|(_, c)| same_work(&c.spec, &block[0].1.spec)) {
                block.push(next);
            }
            let mut pending: Vec<(usize, Pending)> = block
                .into_iter()
                .map(|(i, case)| {
                    let pending = Pending {
                        label: case.label(),
                        case,
                        prepared: None,
                        measured: None,
                        skipped: None,
                    };
                    (i, pending)
                })
                .collect();
            for pass in 0..self.passes {
                let runs = self.runs_in_pass(pass);
                for (i, row) in &mut pending {
                    if row.skipped.is_some() {
                        continue;
                    }
                    let of_passes = if self.passes > 1 {
                        format!(" (pass {}/{})", pass + 1, self.passes)
                    } else {
                        String::new()
                    };
                    eprint!("[{}/{total}] {}{of_passes} ... ", *i + 1, row.label);
                    let cross_core = if self.probe_cross_core {
                        crate::cross_core::round_trip_ns()
                    } else {
                        None
                    };
                    match self.measure(row, runs)? {
                        Samples::Timed(mut measured) => {
                            if let Some(ns) = cross_core {
                                // This pass's; `append` keeps the largest.
                                summary.cross_core_ns.push(ns);
                                measured.cross_core_ns = ns;
                            }
                            let stats = Stats::from_samples(&measured.seconds);
                            eprintln!(
                                " {:.4} s (min {:.4}, max {:.4})",
                                stats.median_s, stats.min_s, stats.max_s
                            );
                            match &mut row.measured {
                                Some(so_far) => so_far.append(measured),
                                None => row.measured = Some(measured),
                            }
                        }
                        Samples::Skipped(reason) => {
                            eprintln!("skipped ({reason})");
                            row.skipped = Some(reason);
                        }
                    }
                }
            }
            for (_, row) in pending {
                let Pending {
                    case,
                    measured,
                    skipped,
                    ..
                } = row;
                if let Some(reason) = skipped {
                    if !summary.skipped.contains(&reason) {
                        summary.skipped.push(reason);
                    }
                    continue;
                }
                let Some(measured) = measured else { continue };
                let (samples, figures) = measured.finish();
                summary.rows.push(Row {
                    runs: samples.len(),
                    stats: Stats::from_samples(&samples),
                    spec: case.spec,
                    system: case.system,
                    note: case.note,
                    extra: case.extra,
                    figures,
                });
            }
        }
        Ok(summary)
    }

    /// The `fibra-bench-mimalloc` executable, built on first call.
    fn mimalloc_exe(&mut self) -> Result<PathBuf, String> {
        self.mimalloc
            .get_or_insert_with(crate::mimalloc_bin::build)
            .clone()
    }

    /// Runs one pass of `row`: a warm-up and `runs` timed runs, checked.
    fn measure(&mut self, row: &mut Pending, runs: usize) -> Result<Samples, BenchError> {
        let label = row.label.as_str();
        let Case {
            spec,
            system,
            runner,
            measured,
            ..
        } = &mut row.case;
        let peer_error = |message| BenchError::Peer {
            case: label.to_string(),
            message,
        };
        if let Some(run) = &mut row.prepared {
            // A later pass of a row set up in this process.
            return Ok(
                match catching(label, || time_runs(label, spec, run, runs))? {
                    Ok(timed) => Samples::Timed(timed.into_measured()),
                    Err(reason) => Samples::Skipped(reason),
                },
            );
        }
        match runner {
            Runner::InProcess(_) => {
                let exe = match (system.allocator(), self.isolate) {
                    (Allocator::System, _) => None,
                    (Allocator::Mimalloc, Some(_)) => match self.mimalloc_exe() {
                        Ok(exe) => Some(exe),
                        Err(reason) => {
                            return Ok(Samples::Skipped(format!(
                                "{} rows: {reason}",
                                crate::mimalloc_bin::NAME
                            )));
                        }
                    },
                    (Allocator::Mimalloc, None) => {
                        return Ok(Samples::Skipped(
                            "mimalloc rows: run only in row processes".to_string(),
                        ));
                    }
                };
                let outcome = match self.isolate {
                    None => {
                        // Set up once; the later passes reuse the run.
                        let set_up = std::mem::replace(runner, Runner::Unavailable("set up"));
                        let Runner::InProcess(setup) = set_up else {
                            unreachable!("matched above")
                        };
                        match catching(label, || Ok(setup()))? {
                            Ok(run) => {
                                let run = row.prepared.insert(run);
                                catching(label, || time_runs(label, spec, run, runs))?
                            }
                            Err(reason) => Err(reason),
                        }
                    }
                    Some(config) => measure_in_row_process(label, &config, exe, runs)?,
                };
                Ok(match outcome {
                    Ok(timed) => Samples::Timed(timed.into_measured()),
                    Err(reason) => Samples::Skipped(reason),
                })
            }
            Runner::External { peer, program } => match self.peers.get(*peer).launch() {
                Ok(launch) => {
                    let reported = launch
                        .run(program, &spec.params, runs)
                        .map_err(peer_error)?;
                    eprint!("{}", ".".repeat(reported.len()));
                    check_reported(label, spec, measured, runs, &reported)
                }
                Err(reason) => Ok(Samples::Skipped(format!("{} rows: {reason}", peer.name()))),
            },
            Runner::Child { args } => {
                let mut reported = Vec::with_capacity(runs + 1);
                for i in 0..=runs {
                    let run = child::run_once(args).map_err(peer_error)?;
                    eprint!("."); // a fresh process per run: show each one
                    reported.push(PeerRun {
                        warmup: i == 0,
                        ..run
                    });
                }
                check_reported(label, spec, measured, runs, &reported)
            }
            Runner::Http { server, load } => {
                let command = match server {
                    HttpServer::ThisExe(args) => {
                        let exe = std::env::current_exe()
                            .map_err(|e| peer_error(format!("cannot find this executable: {e}")))?;
                        let mut command = Command::new(exe);
                        command.args(args.iter());
                        command
                    }
                    HttpServer::Go(program) => match self.peers.get(Peer::Go).launch() {
                        Ok(launch) => {
                            let mut command = Command::new(&launch.program);
                            command.args(&launch.args).arg(*program);
                            command.envs(launch.env.iter().map(|(k, v)| (k, v)));
                            command
                        }
                        Err(reason) => {
                            return Ok(Samples::Skipped(format!(
                                "{} rows: {reason}",
                                Peer::Go.name()
                            )));
                        }
                    },
                };
                let Some(wrk) = wrk::find() else {
                    return Ok(Samples::Skipped(wrk::MISSING.to_string()));
                };
                let scratch = crate::paths::output_dir();
                let reported =
                    http_load::measure(command, &wrk, &scratch, load, runs).map_err(peer_error)?;
                check_reported(label, spec, measured, runs, &reported)
            }
            Runner::Unavailable(reason) => Ok(Samples::Skipped(reason.to_string())),
        }
    }
}

/// Whether two rows do the same work (group, workload and params): they
/// are compared, so they are measured in interleaved passes.
fn same_work(a: &Spec, b: &Spec) -> bool {
    a.group == b.group && a.workload == b.workload && a.params == b.params
}

/// What measuring a row gave.
enum Samples {
    /// The timed runs, with the figures each reported.
    Timed(Measured),
    /// The row cannot run here, for this reason.
    Skipped(String),
}

/// Runs `f`, which may panic: a [`SkipRow`] panic skips the row
/// (`Ok(Err(reason))`), any other is an error naming the row.
fn catching<T>(
    label: &str,
    f: impl FnOnce() -> Result<T, BenchError>,
) -> Result<Result<T, String>, BenchError> {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.map(Ok),
        Err(payload) => match payload.downcast::<SkipRow>() {
            Ok(skip) => Ok(Err(skip.0)),
            Err(payload) => Err(BenchError::Panicked {
                case: label.to_string(),
                message: panic_message(payload.as_ref()),
            }),
        },
    }
}

/// Set up, warm up once, then time `runs` runs; every result is verified.
/// A setup that panics with [`SkipRow`] skips the row (`Ok(Err(reason))`).
fn measure_in_process(
    label: &str,
    spec: &Spec,
    setup: Box<dyn FnOnce() -> RunFn>,
    runs: usize,
) -> Result<InProcess, BenchError> {
    catching(label, || {
        let mut run = setup();
        time_runs(label, spec, &mut run, runs)
    })
}

/// How long an in-process row warms up, at least (one run, then more
/// until this much time has passed): a process's first runs of a short
/// row pay for growing its heap and slabs (`parasites/spawn-cost`'s
/// parasite row, 1.5 ms a run once warm, takes 3 to 5 ms a run for its
/// first three or four).
const WARM_UP: Duration = Duration::from_millis(50);
/// At most this many warm-up runs.
const WARM_UP_RUNS: usize = 20;

/// Warms `run` up ([`WARM_UP`]), then times `runs` runs; every result is
/// verified.
fn time_runs(
    label: &str,
    spec: &Spec,
    run: &mut RunFn,
    runs: usize,
) -> Result<TimedRuns, BenchError> {
    let warm_up = Instant::now();
    for _ in 0..WARM_UP_RUNS {
        verify(label, spec, 0, run())?;
        if warm_up.elapsed() >= WARM_UP {
            break;
        }
    }
    eprint!("."); // one dot for the warm-up
    let mut timed = TimedRuns {
        wall: Vec::with_capacity(runs),
        cpu: Vec::with_capacity(runs),
    };
    for i in 1..=runs {
        let cpu_start = process_cpu_seconds();
        let start = Instant::now();
        let result = run();
        let seconds = start.elapsed().as_secs_f64();
        let cpu = process_cpu_seconds() - cpu_start;
        verify(label, spec, i, result)?;
        eprint!("."); // one dot per run: long rows show they are alive
        timed.wall.push(seconds);
        timed.cpu.push(cpu);
    }
    Ok(timed)
}

/// The first argument that makes this executable a row process.
pub const ROW_ARG: &str = "__row";

/// Starts `fibra-bench __row <label> <runs> <quick> <workers>` (or `exe`
/// instead of this executable), which runs the in-process row `label`
/// (warm-up and timed runs, every result checked) and prints its timed
/// samples as a JSON array (or `{"skipped": reason}`, see [`SkipRow`]).
/// Its progress dots and any error go to our stderr.
fn measure_in_row_process(
    label: &str,
    config: &Config,
    exe: Option<PathBuf>,
    runs: usize,
) -> Result<InProcess, BenchError> {
    let failed = |message| BenchError::Peer {
        case: label.to_string(),
        message,
    };
    let workers = config
        .workers
        .map_or_else(|| "-".to_string(), |n| n.to_string());
    let (runs_arg, quick) = (runs.to_string(), config.quick.to_string());
    let args = [ROW_ARG, label, &runs_arg, &quick, &workers];
    let stdout = match exe {
        None => child::run_self(&args, true),
        Some(exe) => child::run_exe(&exe, &args, true),
    }
    .map_err(failed)?;
    if let Ok(RowSkipped { skipped }) = serde_json::from_str::<RowSkipped>(stdout.trim()) {
        return Ok(Err(skipped));
    }
    serde_json::from_str::<TimedRuns>(stdout.trim())
        .ok()
        .filter(|timed| timed.wall.len() == runs && timed.cpu.len() == runs)
        .map(Ok)
        .ok_or_else(|| failed(format!("expected {runs} timed runs, got {stdout:?}")))
}

/// What a row process prints for a row that cannot run here.
#[derive(serde::Serialize, serde::Deserialize)]
struct RowSkipped {
    skipped: String,
}

/// What `main` does when the first argument is [`ROW_ARG`]: measures one
/// in-process row and prints its samples (see [`measure_in_row_process`]).
/// `allocator` is this executable's global allocator: a row that wants
/// another one is an error, not a measurement.
pub fn row_main(args: &[String], allocator: Allocator) -> ExitCode {
    let result = (|| {
        let [label, runs, quick, workers] = args else {
            return Err(format!(
                "expected <label> <runs> <quick> <workers>, got {args:?}"
            ));
        };
        let runs: usize = runs.parse().map_err(|e| format!("runs {runs:?}: {e}"))?;
        let quick: bool = quick.parse().map_err(|e| format!("quick {quick:?}: {e}"))?;
        let workers = match workers.as_str() {
            "-" => None,
            n => Some(n.parse().map_err(|e| format!("workers {n:?}: {e}"))?),
        };
        let config = Config { quick, workers };
        let case = crate::workloads::all(&config)
            .into_iter()
            .find(|case| case.label() == *label)
            .ok_or_else(|| format!("no row {label:?}"))?;
        let Runner::InProcess(setup) = case.runner else {
            return Err(format!("{label} is not an in-process row"));
        };
        if case.system.allocator() != allocator {
            return Err(format!(
                "{label} wants the {} allocator, this executable has the {}",
                case.system.allocator().name(),
                allocator.name()
            ));
        }
        match measure_in_process(label, &case.spec, setup, runs).map_err(|e| e.to_string())? {
            Ok(timed) => serde_json::to_string(&timed),
            Err(skipped) => serde_json::to_string(&RowSkipped { skipped }),
        }
        .map_err(|e| e.to_string())
    })();
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("fibra-bench {ROW_ARG}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Checks the runs an external program reported (one warm-up, then `runs`
/// timed runs, every result right, every figure in `measured` present) and
/// returns the timed runs with their figures.
fn check_reported(
    label: &str,
    spec: &Spec,
    measured: &[&'static str],
    runs: usize,
    reported: &[PeerRun],
) -> Result<Samples, BenchError> {
    let peer_error = |message| BenchError::Peer {
        case: label.to_string(),
        message,
    };
    let warmups = reported.iter().filter(|r| r.warmup).count();
    if warmups != 1 || !reported[0].warmup || reported.len() != runs + 1 {
        return Err(peer_error(format!(
            "expected 1 warm-up and {runs} timed runs, got {reported:?}"
        )));
    }
    let mut timed = Measured::default();
    for (i, run) in reported.iter().enumerate() {
        verify(label, spec, i, run.result)?;
        if !run.warmup {
            timed.seconds.push(run.seconds);
        }
    }
    for &name in measured {
        let values = reported
            .iter()
            .filter(|run| !run.warmup)
            .map(|run| run.figure(name))
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| peer_error(format!("a run did not report `{name}`: {reported:?}")))?;
        timed.figure(name, values);
    }
    // The cores a run kept busy, where every timed run reported them (the
    // rows this executable runs in a process of their own).
    let cpu: Option<Vec<f64>> = reported
        .iter()
        .filter(|run| !run.warmup)
        .map(|run| run.figure("cpu_pct"))
        .collect();
    if let Some(cpu) = cpu.filter(|c| !c.is_empty() && !measured.contains(&"cpu_pct")) {
        timed.figure("cpu_pct", cpu);
    }
    Ok(Samples::Timed(timed))
}

/// Checks the result of run `index` (0 is the warm-up).
fn verify(label: &str, spec: &Spec, index: usize, got: u64) -> Result<(), BenchError> {
    if got == spec.expected {
        return Ok(());
    }
    Err(BenchError::WrongResult {
        case: label.to_string(),
        run: if index == 0 {
            "warm-up".into()
        } else {
            format!("run {index}")
        },
        got,
        expected: spec.expected,
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{ParamValue, Params};
    use crate::exec::on_threads;
    use crate::system::System;

    fn spec(expected: u64) -> Spec {
        Spec {
            group: "general",
            workload: "test",
            params: Params::new().with("n", 3),
            ops: 3,
            expected,
        }
    }

    fn harness(runs: usize) -> Harness {
        Harness::new(runs, Peers::unavailable("not in tests"))
    }

    #[test]
    fn stats_of_odd_and_even_counts() {
        let s = Stats::from_samples(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median_s, s.min_s, s.max_s), (2.0, 1.0, 3.0));
        let s = Stats::from_samples(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!((s.median_s, s.min_s, s.max_s), (2.5, 1.0, 4.0));
    }

    /// A row whose run takes `run` and returns 7, and the count of its
    /// calls.
    fn counted_row(run: Duration) -> (Case, std::rc::Rc<std::cell::Cell<usize>>) {
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let seen = calls.clone();
        let case = spec(7).on(
            System::Crossbeam,
            on_threads(move || {
                seen.set(seen.get() + 1);
                std::thread::sleep(run);
                7
            }),
        );
        (case, calls)
    }

    #[test]
    fn warm_up_plus_timed_runs_all_checked() {
        let (case, calls) = counted_row(Duration::ZERO);
        let summary = harness(4).run_all(vec![case]).unwrap();
        // Instant runs: the warm-up repeats until its cap.
        assert_eq!(calls.get(), WARM_UP_RUNS + 4);
        assert_eq!(summary.rows[0].runs, 4);
    }

    #[test]
    fn a_probed_row_keeps_its_largest_cross_core_round_trip() {
        let (case, _) = counted_row(Duration::ZERO);
        let summary = harness(3)
            .passes(3)
            .probe_cross_core()
            .run_all(vec![case])
            .unwrap();
        // Under a parallel test run a probe may find no second core free
        // (no figure for that pass): whatever was measured is kept.
        let passes = &summary.cross_core_ns;
        assert!(
            passes.len() <= 3 && passes.iter().all(|ns| *ns > 0.0),
            "{passes:?}"
        );
        let largest = passes.iter().copied().fold(0.0, f64::max);
        let figure = summary.rows[0]
            .figures
            .iter()
            .find(|(name, _)| *name == "xcore_ns")
            .map(|(_, value)| value.clone());
        if passes.is_empty() {
            assert_eq!(figure, None);
        } else {
            assert_eq!(figure, Some(ParamValue::Int(largest.round() as u64)));
        }
    }

    #[test]
    fn a_pass_without_a_probe_leaves_the_largest_figure_alone() {
        let mut all = Measured {
            seconds: vec![1.0],
            cross_core_ns: 340.4,
            ..Measured::default()
        };
        all.append(Measured {
            seconds: vec![1.0],
            cross_core_ns: 70.0,
            ..Measured::default()
        });
        all.append(Measured {
            seconds: vec![1.0],
            ..Measured::default()
        });
        let (_, figures) = all.finish();
        assert_eq!(figures, Params::new().with("xcore_ns", 340));
    }

    #[test]
    fn wrong_result_names_the_row() {
        let mut n = 0;
        let case = spec(7).on(
            System::Crossbeam,
            on_threads(move || {
                n += 1;
                if n == WARM_UP_RUNS + 2 { 8 } else { 7 }
            }),
        );
        let err = harness(5).run_all(vec![case]).unwrap_err().to_string();
        assert!(err.contains("WRONG RESULT"), "{err}");
        assert!(
            err.contains("general/test [n=3] crossbeam (run 2)"),
            "{err}"
        );
    }

    #[test]
    fn panic_becomes_an_error_naming_the_row() {
        let case = spec(7).on(System::FibraThreads, on_threads(|| panic!("send failed")));
        let err = harness(1).run_all(vec![case]).unwrap_err().to_string();
        assert!(err.contains("fibra-threads panicked: send failed"), "{err}");
    }

    #[test]
    fn a_setup_that_skips_its_row_leaves_a_note_and_the_suite_goes_on() {
        let skipping = spec(7).on(
            System::Fibra,
            Runner::InProcess(Box::new(|| {
                skip_row("remote fibra rows: nats-server did not start: test".to_string())
            })),
        );
        let after = spec(7).on(System::Crossbeam, on_threads(|| 7));
        let summary = harness(2).run_all(vec![skipping, after]).unwrap();
        assert_eq!(summary.rows.len(), 1, "the next row still ran");
        assert!(
            summary
                .skipped
                .iter()
                .any(|s| s.contains("nats-server did not start: test")),
            "{:?}",
            summary.skipped
        );
    }

    fn reported(results: &[(bool, u64, Option<f64>)]) -> Vec<PeerRun> {
        results
            .iter()
            .map(|&(warmup, result, bytes)| PeerRun {
                warmup,
                seconds: 0.5,
                result,
                figures: bytes
                    .map(|b| ("bytes_per_task".to_string(), b))
                    .into_iter()
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn timed_runs_give_their_cpu_share_as_a_figure() {
        let timed = TimedRuns {
            wall: vec![1.0, 2.0, 0.5],
            cpu: vec![1.0, 3.9, 1.0],
        };
        let (samples, figures) = timed.into_measured().finish();
        assert_eq!(samples, [1.0, 2.0, 0.5]);
        // Shares 1.0, 1.95, 2.0: the median is 1.95.
        assert_eq!(figures, Params::new().with("cpu_pct", 195));
    }

    #[test]
    fn passes_add_up_their_runs_and_figures() {
        let mut all = TimedRuns {
            wall: vec![1.0, 1.0],
            cpu: vec![1.0, 1.0],
        }
        .into_measured();
        all.append(
            TimedRuns {
                wall: vec![1.0],
                cpu: vec![2.0],
            }
            .into_measured(),
        );
        let mut partial = Measured::default();
        partial.seconds.push(3.0);
        all.append(partial);
        // A figure one pass did not report is left out.
        let (samples, figures) = all.finish();
        assert_eq!(samples, [1.0, 1.0, 1.0, 3.0]);
        assert_eq!(figures, Params::new());
    }

    #[test]
    fn the_rows_of_a_workload_run_in_interleaved_passes() {
        let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let row = |system: System, params: u64, tag: &'static str| {
            let order = order.clone();
            Spec {
                params: Params::new().with("n", params),
                ..spec(7)
            }
            .on(
                system,
                on_threads(move || {
                    order.borrow_mut().push(tag);
                    7
                }),
            )
        };
        let cases = vec![
            row(System::Crossbeam, 3, "a"),
            row(System::FibraThreads, 3, "b"),
            row(System::Crossbeam, 4, "c"),
        ];
        let summary = harness(5).passes(2).run_all(cases).unwrap();
        // Passes of 3 and 2 timed runs, each after a warm-up (instant runs:
        // its cap); the rows of one workload alternate pass by pass, the
        // next workload follows.
        let w = WARM_UP_RUNS;
        let (a, b, c) = (
            ["a"; WARM_UP_RUNS + 3],
            ["b"; WARM_UP_RUNS + 3],
            ["c"; WARM_UP_RUNS + 3],
        );
        let expected: Vec<&str> = [
            &a[..],
            &b[..],
            &a[..w + 2],
            &b[..w + 2],
            &c[..],
            &c[..w + 2],
        ]
        .concat();
        assert_eq!(*order.borrow(), expected);
        let runs: Vec<usize> = summary.rows.iter().map(|r| r.runs).collect();
        assert_eq!(runs, [5, 5, 5]);
        assert_eq!(summary.rows[1].system, System::FibraThreads);
    }

    #[test]
    fn a_row_warms_up_for_a_while_then_stops() {
        // 30 ms a run: two warm-up runs reach the 50 ms, then one timed.
        let (case, calls) = counted_row(Duration::from_millis(30));
        harness(1).run_all(vec![case]).unwrap();
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn passes_are_at_most_one_per_run() {
        let h = harness(2).passes(3);
        assert_eq!((h.passes, h.runs_in_pass(0), h.runs_in_pass(1)), (2, 1, 1));
        let h = harness(5).passes(3);
        let runs: Vec<usize> = (0..3).map(|p| h.runs_in_pass(p)).collect();
        assert_eq!(runs, [2, 2, 1]);
    }

    #[test]
    fn an_in_process_run_counts_the_cpu_it_burns() {
        let spin = |seconds: f64| {
            let start = Instant::now();
            let mut x = 0u64;
            while start.elapsed().as_secs_f64() < seconds {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        let before = process_cpu_seconds();
        spin(0.05);
        let used = process_cpu_seconds() - before;
        // A busy thread uses about its wall time (less if descheduled).
        assert!(used > 0.005 && used < 1.0, "{used}");
    }

    #[test]
    fn reported_runs_give_samples_and_median_figures() {
        let runs = reported(&[
            (true, 7, Some(1.0)),
            (false, 7, Some(300.0)),
            (false, 7, Some(310.4)),
            (false, 7, Some(900.0)),
        ]);
        let Ok(Samples::Timed(timed)) =
            check_reported("row", &spec(7), &["bytes_per_task"], 3, &runs)
        else {
            panic!("not timed");
        };
        let (samples, figures) = timed.finish();
        assert_eq!(samples, [0.5; 3]);
        assert_eq!(figures, Params::new().with("bytes_per_task", 310));
    }

    #[test]
    fn reported_runs_are_checked() {
        let wrong = reported(&[(true, 7, None), (false, 8, None)]);
        let err = check_reported("row", &spec(7), &[], 1, &wrong)
            .err()
            .unwrap();
        assert!(err.to_string().contains("WRONG RESULT"), "{err}");
        let missing = reported(&[(true, 7, Some(1.0)), (false, 7, None)]);
        let err = check_reported("row", &spec(7), &["bytes_per_task"], 1, &missing)
            .err()
            .unwrap();
        assert!(err.to_string().contains("bytes_per_task"), "{err}");
        let no_warmup = reported(&[(false, 7, None), (false, 7, None)]);
        assert!(check_reported("row", &spec(7), &[], 1, &no_warmup).is_err());
    }

    #[test]
    fn unavailable_rows_are_skipped_with_their_reason() {
        let cases = vec![
            spec(7).on(System::Fibra, Runner::Unavailable("no runtime")),
            spec(7).on(System::FibraCt, Runner::Unavailable("no runtime")),
        ];
        let summary = harness(1).run_all(cases).unwrap();
        assert!(summary.rows.is_empty());
        assert_eq!(summary.skipped, ["no runtime"]);
    }

    #[test]
    fn a_mimalloc_row_never_runs_with_this_executables_allocator() {
        // Without row processes there is no second executable to run it in.
        let case = spec(7).on(System::TokioCtMimalloc, on_threads(|| 7));
        let summary = harness(1).run_all(vec![case]).unwrap();
        assert!(summary.rows.is_empty());
        assert_eq!(
            summary.skipped,
            ["mimalloc rows: run only in row processes"]
        );
        assert_eq!(System::TokioMtMimalloc.allocator(), Allocator::Mimalloc);
        assert_eq!(System::TokioMt.allocator(), Allocator::System);
    }

    #[test]
    fn unavailable_peers_skip_with_one_note_each() {
        let load = http_load::Load {
            path: "/",
            body: b"",
            wrk: wrk::Options {
                threads: 1,
                connections: 1,
                duration: std::time::Duration::from_millis(1),
            },
        };
        let cases = vec![
            spec(7).on(
                System::Go,
                Runner::Http {
                    server: HttpServer::Go("z"),
                    load,
                },
            ),
            spec(7).on(System::Go, Runner::go("x")),
            spec(7).on(System::Go, Runner::go("y")),
            spec(7).on(System::Erlang, Runner::erlang("x")),
            spec(7).on(System::Racket, Runner::racket("x")),
            spec(7).on(System::Racket, Runner::racket("y")),
        ];
        let summary = harness(1).run_all(cases).unwrap();
        assert!(summary.rows.is_empty());
        assert_eq!(
            summary.skipped,
            [
                "go rows: not in tests",
                "erlang rows: not in tests",
                "racket rows: not in tests"
            ]
        );
    }
}
