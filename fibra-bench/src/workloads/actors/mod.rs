//! The actor workloads: the `erlang` group (the Erlang-VM scalability
//! study's benchmarks, scaled from its 64 cores to this 2-core machine) and
//! the `savina` group (micro-benchmarks of Savina, the common actor
//! benchmark suite). Every system writes them with its own processes and
//! inboxes, the way its programmers would:
//!
//! * fibra: tasks owning a `Mailbox` ([`fibra_actors`]);
//! * tokio: tasks with an unbounded `mpsc` channel as inbox ([`tokio_peer`]);
//! * Go: goroutines with a buffered channel as inbox, each buffer large
//!   enough that the workload cannot deadlock (`go/actors.go`);
//! * Erlang: processes and `!` (`erlang/fibra_bench.erl`), on the default VM
//!   (`erlang`, one scheduler per core) and on one scheduler (`erlang-1`).
//!
//! The workloads (ops in brackets; every result is checked):
//!
//! * `big-bang n`: every one of `n` processes pings every other and answers
//!   each ping with a pong; result: the pongs, n(n-1) [messages, 2n(n-1)].
//! * `hackbench groups messages`: per group, 20 writers each send
//!   `messages` numbers (0, 1, ...) to each of the group's 20 listeners;
//!   result: the sum the listeners took [messages].
//! * `mandelbrot size tasks`: each task computes the same `size` x `size`
//!   image ([`kernels::mandelbrot`]); the root joins them in turn; result:
//!   the iterations summed [pixels].
//! * `random tasks values`: task `i` sorts `values` numbers from a 31-bit
//!   LCG seeded with `i` and returns the middle one; result: their sum
//!   [tasks].
//! * `count messages`: the root sends `messages` numbers to a counter, then
//!   asks it for the total [messages].
//! * `fjcreate actors`: the root creates `actors` processes and sends each
//!   one message, which it sends back before ending [processes].
//! * `fjthrput actors messages`: the root sends `messages` numbers to each of
//!   `actors` processes, round-robin; each reports its sum [messages].
//! * `big actors pings`: each process pings a pseudo-random process (LCG)
//!   and waits for the pong, `pings` times, answering others' pings
//!   meanwhile [messages, 2 x actors x pings].
//! * `fib n`: a process per call of the naive recursive fib [processes].
//!
//! Sizes: the study ran big-bang with 500-1000 processes (kept), hackbench
//! with 100-1000 groups of 700-500 messages, mandelbrot with 100-600 tasks
//! and random with 180 tasks on 64 cores; here hackbench, mandelbrot and
//! random are scaled down so that a row stays near a second ([`NOTE`]).

#[cfg(feature = "fibra-rt")]
mod fibra_actors;
pub mod kernels;
mod tokio_peer;

use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{fibra_rows, on_tokio_ct, on_tokio_mt};
use crate::system::System;
use crate::workloads::Config;

/// The scaling note every row carries.
const NOTE: &str = "erlang/savina groups: the Erlang-VM study's sizes scaled down to a \
     2-core machine (hackbench 10 groups x 100 messages, mandelbrot 16 tasks of 250x250, \
     random 24 tasks); go: channels as inboxes, buffered so that no send can deadlock; \
     tokio: unbounded mpsc as inboxes";

/// One workload: its spec and how fibra and tokio run it.
struct Work {
    spec: Spec,
    /// fibra's run (on every fibra runtime flavour).
    #[cfg(feature = "fibra-rt")]
    fibra: fn(&Params) -> std::pin::Pin<Box<dyn Future<Output = u64> + Send>>,
    /// tokio's run.
    tokio: fn(&Params) -> std::pin::Pin<Box<dyn Future<Output = u64> + Send>>,
}

/// A parameter of `params` by name (every workload's runs name theirs).
fn param(params: &Params, name: &str) -> u64 {
    params
        .iter()
        .find_map(|(n, v)| match v {
            crate::case::ParamValue::Int(v) if *n == name => Some(*v),
            _ => None,
        })
        .unwrap_or_else(|| panic!("actor workload without parameter {name}"))
}

/// Declares a [`Work`]: `work!(spec, |p| fibra_actors::x(param(p, "a")),
/// |p| tokio_peer::x(...))`, the two runs written once each.
macro_rules! work {
    ($spec:expr, $workload:ident ( $($arg:literal),* )) => {
        Work {
            spec: $spec,
            #[cfg(feature = "fibra-rt")]
            fibra: |p| Box::pin(fibra_actors::$workload($(param(p, $arg)),*)),
            tokio: |p| Box::pin(tokio_peer::$workload($(param(p, $arg)),*)),
        }
    };
}

fn spec(
    group: &'static str,
    workload: &'static str,
    params: Params,
    ops: u64,
    expected: u64,
) -> Spec {
    Spec {
        group,
        workload,
        params,
        ops,
        expected,
    }
}

fn works(config: &Config) -> Vec<Work> {
    let mut works = Vec::new();
    let bangs: &[u64] = if config.quick {
        &[20]
    } else {
        &[500, 800, 1000]
    };
    for &n in bangs {
        let p = Params::new().with("processes", n);
        works.push(work!(
            spec("erlang", "big-bang", p, 2 * n * (n - 1), n * (n - 1)),
            big_bang("processes")
        ));
    }
    let (groups, messages) = (config.size(10, 1), config.size(100, 10));
    let each = kernels::GROUP * kernels::GROUP * messages;
    works.push(work!(
        spec(
            "erlang",
            "hackbench",
            Params::new()
                .with("groups", groups)
                .with("messages", messages),
            groups * each,
            groups * kernels::GROUP * kernels::GROUP * (messages * (messages - 1) / 2),
        ),
        hackbench("groups", "messages")
    ));
    let (size, tasks) = (config.size(250, 30), config.size(16, 4));
    works.push(work!(
        spec(
            "erlang",
            "mandelbrot",
            Params::new().with("size", size).with("tasks", tasks),
            tasks * size * size,
            tasks * kernels::mandelbrot(size),
        ),
        mandelbrot("size", "tasks")
    ));
    let (tasks, values) = (config.size(24, 4), config.size(100_000, 1000));
    works.push(work!(
        spec(
            "erlang",
            "random",
            Params::new().with("tasks", tasks).with("values", values),
            tasks,
            kernels::random_expected(tasks, values),
        ),
        random("tasks", "values")
    ));
    let n = config.size(1_000_000, 10_000);
    works.push(work!(
        spec(
            "savina",
            "count",
            Params::new().with("messages", n),
            n,
            n * (n - 1) / 2
        ),
        count("messages")
    ));
    let n = config.size(100_000, 1000);
    works.push(work!(
        spec(
            "savina",
            "fjcreate",
            Params::new().with("actors", n),
            n,
            n * (n - 1) / 2
        ),
        fjcreate("actors")
    ));
    let (actors, messages) = (config.size(60, 4), config.size(10_000, 100));
    works.push(work!(
        spec(
            "savina",
            "fjthrput",
            Params::new()
                .with("actors", actors)
                .with("messages", messages),
            actors * messages,
            actors * (messages * (messages - 1) / 2),
        ),
        fjthrput("actors", "messages")
    ));
    let (actors, pings) = (config.size(120, 8), config.size(2000, 20));
    works.push(work!(
        spec(
            "savina",
            "big",
            Params::new().with("actors", actors).with("pings", pings),
            2 * actors * pings,
            actors * pings,
        ),
        big("actors", "pings")
    ));
    let n = config.size(25, 10);
    works.push(work!(
        spec(
            "savina",
            "fib",
            Params::new().with("n", n),
            kernels::fib_calls(n),
            kernels::fib(n)
        ),
        fib("n")
    ));
    works
}

/// The rows of every actor workload: fibra's three runtime rows, tokio's
/// two, Go's, Erlang's on the default VM and on one scheduler.
pub fn cases(config: &Config) -> Vec<Case> {
    works(config)
        .into_iter()
        .flat_map(|work| {
            let Work { spec, tokio, .. } = work;
            #[cfg(feature = "fibra-rt")]
            let fibra = work.fibra;
            let (p1, p2) = (spec.params.clone(), spec.params.clone());
            let mut rows = fibra_rows!(&spec, config, move || fibra(&p1));
            let p3 = spec.params.clone();
            rows.extend([
                spec.on(System::TokioCt, on_tokio_ct(move || tokio(&p2))),
                spec.on(System::TokioMt, on_tokio_mt(move || tokio(&p3))),
                spec.on(System::Go, Runner::go(spec.workload)),
                spec.on(System::Erlang, Runner::erlang(spec.workload)),
                spec.on(System::Erlang1, Runner::erlang_one_scheduler(spec.workload)),
            ]);
            rows.into_iter()
                .map(|case| case.with_note(NOTE))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every workload's fibra and tokio runs return the expected result on
    /// the quick sizes.
    #[test]
    fn fibra_and_tokio_runs_return_the_expected_results() {
        let config = Config {
            quick: true,
            workers: None,
        };
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        #[cfg(feature = "fibra-rt")]
        let fibra_rt = fibra::Runtime::builder().workers(2).build().unwrap();
        for work in works(&config) {
            let label = format!("{}/{}", work.spec.group, work.spec.workload);
            let got = tokio_rt.block_on((work.tokio)(&work.spec.params));
            assert_eq!(got, work.spec.expected, "tokio {label}");
            #[cfg(feature = "fibra-rt")]
            {
                let got = fibra_rt.block_on((work.fibra)(&work.spec.params));
                assert_eq!(got, work.spec.expected, "fibra {label}");
            }
        }
    }
}
