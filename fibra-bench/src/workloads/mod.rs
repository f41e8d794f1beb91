//! The workloads: every module contributes its rows to [`all`].
//!
//! Adding a workload: write a module with a `cases(&Config) -> Vec<Case>`
//! (one [`crate::case::Spec`] per parameter set, [`crate::case::Spec::on`]
//! per system), add it to [`all`], and, for a Go peer, a subcommand of the
//! program in `go/`. Its name then drops out of the "not yet" list.

mod spsc;

use crate::case::Case;

/// Settings that size the workloads.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Tiny parameters (`--quick`).
    pub quick: bool,
}

/// Every row of the suite, in table order.
pub fn all(config: &Config) -> Vec<Case> {
    spsc::cases(config)
}

/// Every workload BENCHMARKS.md asks for, by group.
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
    (
        "general",
        &["spawn-join", "idle-memory", "timers", "wake-latency"],
    ),
];

/// The catalogue's workloads that no case in `cases` implements, per group
/// (groups with nothing missing are left out).
pub fn not_yet(cases: &[Case]) -> Vec<(&'static str, Vec<&'static str>)> {
    CATALOGUE
        .iter()
        .map(|&(group, names)| {
            let missing = names
                .iter()
                .copied()
                .filter(|name| {
                    !cases
                        .iter()
                        .any(|c| c.spec.group == group && c.spec.workload == *name)
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

    #[test]
    fn rows_are_well_formed() {
        for quick in [true, false] {
            let cases = all(&Config { quick });
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
        let missing = not_yet(&all(&Config { quick: true }));
        assert_eq!(missing[0], ("fibers", CATALOGUE[0].1.to_vec()));
        let general = missing.iter().find(|(g, _)| *g == "general").unwrap();
        assert!(general.1.contains(&"timers"));
    }
}
