//! The workloads: every module contributes its rows to [`all`].
//!
//! Adding a workload: write a module with a `cases(&Config) -> Vec<Case>`
//! (one [`crate::case::Spec`] per parameter set, [`crate::case::Spec::on`]
//! per system; [`crate::exec::fibra_rows!`] for the rows on fibra's own
//! runtime; [`task_rows`] for a workload of tasks and channels), add it to
//! [`all`], and, for a Go peer, a subcommand of the
//! program in `go/` (Erlang: a `workload/2` clause in
//! `erlang/fibra_bench.erl`; Racket: a case in `racket/main.rkt`; see
//! [`langs`]). Its name then drops out of the "not yet" list.
//! A workload whose runs need a fresh process each
//! ([`crate::case::Runner::Child`]) also answers in [`run_child`].

mod actors;
mod chain;
mod channels;
mod diagonal;
mod fan_out;
mod floor;
mod futures_wait;
mod http;
pub mod http_server;
mod idle_memory;
mod langs;
mod mailboxes;
mod parasites;
mod percentiles;
mod ping_pong;
pub mod remote;
mod select;
mod sieve;
mod spawn_join;
mod spsc;
mod task_rows;
mod tcp_echo;
mod timed_child;
mod timers;
mod wake_latency;

use crate::case::Case;

/// Settings that size the workloads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// Tiny parameters (`--quick`).
    pub quick: bool,
    /// `--workers`: workers of the `fibra` row's runtime (default: one per
    /// core).
    pub workers: Option<usize>,
}

impl Config {
    /// `full` in a full run, `quick` with `--quick`.
    pub fn size(&self, full: u64, quick: u64) -> u64 {
        if self.quick { quick } else { full }
    }
}

/// Every row of the suite, in table order.
pub fn all(config: &Config) -> Vec<Case> {
    [
        chain::cases(config),
        ping_pong::cases(config),
        fan_out::cases(config),
        diagonal::cases(config),
        sieve::cases(config),
        mailboxes::cases(config),
        select::cases(config),
        futures_wait::cases(config),
        parasites::cases(config),
        spsc::cases(config),
        channels::cases(config),
        spawn_join::cases(config),
        idle_memory::cases(config),
        timers::cases(config),
        wake_latency::cases(config),
        actors::cases(config),
        remote::cases(config),
        tcp_echo::cases(config),
        http::cases(config),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A child process's run (see [`crate::peers::child`]): `args` name the
/// workload, then what it needs. Returns the line to print.
pub fn run_child(args: &[String]) -> Result<String, String> {
    match args.split_first() {
        Some((workload, rest)) if workload == idle_memory::WORKLOAD => idle_memory::child(rest),
        Some((workload, rest)) if workload == timers::WORKLOAD => timers::child(rest),
        Some((workload, rest)) if workload == wake_latency::WORKLOAD => wake_latency::child(rest),
        Some((workload, rest)) if workload == channels::WORKLOAD => channels::child(rest),
        _ => Err(format!("no child workload in {args:?}")),
    }
}

/// Every workload docs/benchmarks.md asks for, by group.
const CATALOGUE: &[(&str, &[&str])] = &[
    (
        "fibers",
        &["chain", "ping-pong", "fan-out", "diagonal", "sieve"],
    ),
    (
        "racket",
        &[
            "sema-baseline",
            "switch-baseline",
            "asymmetric-sema",
            "asymmetric-mailbox",
            "asymmetric-channel",
            "asymmetric-buffered",
            "symmetric-sema",
            "symmetric-mailbox",
            "symmetric-channel",
            "symmetric-buffered",
        ],
    ),
    (
        "cforall",
        &[
            "select-channels",
            "select-overlap",
            "futures-or",
            "futures-and",
            "futures-and-or",
            "futures-or-and",
        ],
    ),
    (
        "parasites",
        &[
            "async-send",
            "spawn-cost",
            "choose-all",
            "inflation",
            "par-fib",
            "par-tak",
            "mergesort",
        ],
    ),
    ("erlang", &["big-bang", "hackbench", "mandelbrot", "random"]),
    ("savina", &["count", "fjcreate", "fjthrput", "big", "fib"]),
    (
        "general",
        &["spawn-join", "idle-memory", "timers", "wake-latency"],
    ),
    ("remote", &["remote-ping-pong", "remote-throughput"]),
    ("io", &["tcp-echo", "http-hello", "http-file"]),
    (
        "channels",
        &["seq", "spsc", "mpsc", "mpmc", "select-rx", "select-both"],
    ),
];

/// Every group of docs/benchmarks.md, in catalogue order.
pub fn groups() -> Vec<&'static str> {
    CATALOGUE.iter().map(|&(group, _)| group).collect()
}

/// The catalogue's workloads that no fibra row in `cases` implements, per
/// group (groups with nothing missing are left out). A workload whose peers
/// run but whose fibra side waits for an API counts as missing.
pub fn not_yet(cases: &[Case]) -> Vec<(&'static str, Vec<&'static str>)> {
    CATALOGUE
        .iter()
        .map(|&(group, names)| {
            let missing = names
                .iter()
                .copied()
                .filter(|name| {
                    !cases.iter().any(|c| {
                        c.spec.group == group && c.spec.workload == *name && c.system.is_fibra()
                    })
                })
                .collect::<Vec<_>>();
            (group, missing)
        })
        .filter(|(_, missing)| !missing.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Runner;
    use crate::system::System;

    #[test]
    fn rows_are_well_formed() {
        for quick in [true, false] {
            let cases = all(&Config {
                quick,
                workers: None,
            });
            assert!(!cases.is_empty());
            for case in &cases {
                let groups: Vec<&str> = CATALOGUE.iter().map(|(g, _)| *g).collect();
                assert!(groups.contains(&case.spec.group), "{}", case.label());
                assert!(case.spec.ops > 0, "{}", case.label());
                assert!(case.spec.params.iter().next().is_some(), "{}", case.label());
            }
        }
    }

    #[test]
    fn not_yet_lists_what_is_missing() {
        let missing = not_yet(&all(&Config {
            quick: true,
            workers: None,
        }));
        // Every workload of the catalogue has its fibra rows.
        assert_eq!(missing, [], "{missing:?}");
    }

    #[test]
    fn a_workload_with_peers_but_no_fibra_row_is_not_yet_done() {
        let peers_only: Vec<Case> = all(&Config::default())
            .into_iter()
            .filter(|c| !(c.spec.workload == "futures-and" && c.system.is_fibra()))
            .collect();
        let missing = not_yet(&peers_only);
        assert_eq!(missing[0], ("cforall", vec!["futures-and"]));
    }

    #[test]
    fn every_task_workload_has_the_fibra_runtime_rows_and_its_peers() {
        let cases = all(&Config::default());
        let names = ["chain", "ping-pong", "fan-out", "diagonal", "sieve"]
            .into_iter()
            .map(|w| ("fibers", w))
            .chain(["spawn-join", "idle-memory", "timers", "wake-latency"].map(|w| ("general", w)));
        for (group, workload) in names {
            let systems: Vec<&str> = cases
                .iter()
                .filter(|c| c.spec.group == group && c.spec.workload == workload)
                .map(|c| c.system.name())
                .collect();
            for system in ["fibra", "fibra-1", "fibra-ct", "tokio-ct", "tokio-mt", "go"] {
                assert!(systems.contains(&system), "{workload}: no {system} row");
            }
            // The workloads that spawn or allocate per message (those of
            // `task_rows`) also run tokio with mimalloc.
            if group == "fibers" || workload == "spawn-join" {
                for system in ["tokio-ct-mimalloc", "tokio-mt-mimalloc"] {
                    assert!(systems.contains(&system), "{workload}: no {system} row");
                }
            }
        }
    }

    #[test]
    fn erlang_and_racket_run_the_workloads_that_fit_them() {
        let cases = all(&Config::default());
        let expected = [
            ("fibers", "chain", 3),
            ("fibers", "ping-pong", 3),
            ("fibers", "fan-out", 2),
            ("general", "spawn-join", 1),
        ];
        // Erlang also runs the `remote` group (distribution between two
        // nodes); Racket does not.
        let remote: &[(&str, &str, usize)] = &[
            ("remote", "remote-ping-pong", 1),
            ("remote", "remote-throughput", 1),
        ];
        // The `racket` group: Racket runs all ten workloads; Erlang, which
        // has mailboxes but no semaphores or channels, three.
        let racket_group = CATALOGUE[1].1;
        let erlang_in_racket_group = ["switch-baseline", "asymmetric-mailbox", "symmetric-mailbox"];
        for system in [System::Erlang, System::Racket] {
            let rows: Vec<&Case> = cases.iter().filter(|c| c.system == system).collect();
            let in_group: &[&str] = match system {
                System::Racket => racket_group,
                _ => &erlang_in_racket_group,
            };
            // The actor groups: Erlang only (Racket has no such program).
            let actor_rows: &[(&str, &str, usize)] = match system {
                System::Racket => &[],
                _ => &[
                    ("erlang", "big-bang", 3),
                    ("erlang", "hackbench", 1),
                    ("erlang", "mandelbrot", 1),
                    ("erlang", "random", 1),
                    ("savina", "count", 1),
                    ("savina", "fjcreate", 1),
                    ("savina", "fjthrput", 1),
                    ("savina", "big", 1),
                    ("savina", "fib", 1),
                ],
            };
            let remote = match system {
                System::Erlang => remote,
                _ => &[],
            };
            // Erlang runs the parasites group's recursive workloads too.
            let parasites: &[(&str, &str, usize)] = match system {
                System::Erlang => &[("parasites", "par-fib", 1), ("parasites", "par-tak", 1)],
                _ => &[],
            };
            let expected = expected
                .into_iter()
                .chain(in_group.iter().map(|&w| ("racket", w, 1)))
                .chain(actor_rows.iter().copied())
                .chain(remote.iter().copied())
                .chain(parasites.iter().copied());
            let mut total = 0;
            for (group, workload, count) in expected {
                let n = rows
                    .iter()
                    .filter(|c| c.spec.group == group && c.spec.workload == workload)
                    .count();
                assert_eq!(n, count, "{system} {workload}");
                total += count;
            }
            assert_eq!(rows.len(), total, "{system}: no other rows");
            for row in rows {
                assert!(row.note.is_some(), "{}: says how it works", row.label());
                let Runner::External { program, .. } = row.runner else {
                    panic!("{}: not an external program", row.label());
                };
                assert_eq!(program, row.spec.workload);
            }
        }
    }

    #[test]
    fn rows_compared_with_each_other_do_the_same_work() {
        // Rows of one workload with equal params must agree on ops and result.
        let cases = all(&Config::default());
        for a in &cases {
            for b in &cases {
                if a.spec.workload == b.spec.workload && a.spec.params == b.spec.params {
                    assert_eq!(a.spec.ops, b.spec.ops, "{}", a.label());
                    assert_eq!(a.spec.expected, b.spec.expected, "{}", a.label());
                }
            }
        }
    }

    #[test]
    fn the_help_names_every_group() {
        let listed = crate::cli::USAGE
            .split_once("groups: ")
            .expect("a list of groups in --help")
            .1
            .split("\n\n")
            .next()
            .unwrap_or_default();
        let listed: Vec<&str> = listed
            .split(',')
            .map(|item| item.split_whitespace().next().unwrap_or_default())
            .collect();
        assert_eq!(listed, groups());
    }

    #[test]
    fn child_dispatch_rejects_unknown_workloads() {
        assert!(run_child(&["nope".to_string()]).is_err());
        assert!(run_child(&[]).is_err());
    }
}
