//! Every system's runs return the expected results on every shape; the
//! rows, their parameters and their child processes.

use super::child::per_run_process;
#[cfg(feature = "fibra-rt")]
use super::fibra_tasks;
use super::shape::{Capacity, Kind, Shape};
use super::{cases, child, crossbeam_peer, fibra_threads, flume_peer, shapes, tokio_peer};
use crate::case::Runner;
use crate::peers::run_line::parse_run;
use crate::system::System;
use crate::workloads::Config;

const QUICK: Config = Config {
    quick: true,
    workers: None,
};

/// Every parameter set, with few messages.
fn small_shapes() -> Vec<Shape> {
    shapes(&QUICK)
        .into_iter()
        .map(|shape| Shape {
            messages: 400,
            ..shape
        })
        .collect()
}

#[test]
fn the_shapes_and_their_sums() {
    let all = shapes(&QUICK);
    // seq at N only; the others at 0, 1, N; those with threads at 2 and 4.
    assert_eq!(all.len(), 1 + 3 * (1 + 4 * 2));
    assert!(
        all.iter()
            .filter(|s| s.kind == Kind::Seq)
            .all(|s| s.capacity == Capacity::All)
    );
    let select_both = Shape {
        kind: Kind::SelectBoth,
        capacity: Capacity::One,
        threads: 4,
        messages: 400,
    };
    assert_eq!((select_both.producers(), select_both.consumers()), (4, 4));
    assert_eq!(
        (select_both.channels(), select_both.per_consumer()),
        (4, 100)
    );
    assert_eq!(select_both.expected(), 4 * (99 * 100 / 2));
    let seq = Shape {
        kind: Kind::Seq,
        capacity: Capacity::All,
        threads: 1,
        messages: 400,
    };
    assert_eq!(seq.capacity(), 400);
    assert_eq!(seq.expected(), 399 * 400 / 2);
}

#[test]
fn thread_rows_return_the_expected_results() {
    for shape in small_shapes() {
        assert_eq!(fibra_threads::run(shape), shape.expected(), "{shape:?}");
        assert_eq!(crossbeam_peer::run(shape), shape.expected(), "{shape:?}");
        if flume_peer::expresses(shape) {
            assert_eq!(flume_peer::run(shape), shape.expected(), "{shape:?}");
        }
    }
}

#[test]
fn tokio_rows_return_the_expected_results() {
    let ct = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let expressed: Vec<Shape> = small_shapes()
        .into_iter()
        .filter(|&s| tokio_peer::expresses(s))
        .collect();
    // seq; spsc, mpsc x2, select-rx x2 at capacities 1 and N.
    assert_eq!(expressed.len(), 1 + 2 * 5);
    for shape in expressed {
        for rt in [&ct, &mt] {
            assert_eq!(rt.block_on(tokio_peer::run(shape)), shape.expected());
        }
    }
}

#[cfg(feature = "fibra-rt")]
#[test]
fn fibra_rows_return_the_expected_results() {
    use crate::exec::FibraFlavour;
    for flavour in [FibraFlavour::CurrentThread, FibraFlavour::Multi(Some(2))] {
        let rt = flavour.build();
        for shape in small_shapes() {
            assert_eq!(
                rt.block_on(fibra_tasks::run(shape)),
                shape.expected(),
                "{shape:?} on {flavour:?}"
            );
        }
    }
}

#[test]
fn rows_systems_and_params() {
    let cases = cases(&Config::default());
    let systems = |workload: &str, capacity: u64, producers: u64| -> Vec<System> {
        cases
            .iter()
            .filter(|c| c.spec.workload == workload)
            .filter(|c| {
                c.spec
                    .params
                    .iter()
                    .any(|p| *p == ("capacity", capacity.into()))
            })
            .filter(|c| {
                c.spec
                    .params
                    .iter()
                    .any(|p| *p == ("producers", producers.into()))
            })
            .map(|c| c.system)
            .collect()
    };
    let tasks_and_threads = [
        System::Fibra,
        System::Fibra1,
        System::FibraCt,
        System::TokioCt,
        System::TokioMt,
        System::Go,
        System::FibraThreads,
        System::Crossbeam,
        System::FlumeThreads,
    ];
    assert_eq!(systems("mpsc", 1, 4), tasks_and_threads);
    assert_eq!(systems("select-rx", 1, 2), tasks_and_threads);
    // No tokio rows at capacity 0, nor for several consumers per channel.
    let no_tokio: Vec<System> = tasks_and_threads
        .into_iter()
        .filter(|s| !matches!(s, System::TokioCt | System::TokioMt))
        .collect();
    assert_eq!(systems("spsc", 0, 1), no_tokio);
    assert_eq!(systems("mpmc", 1, 4), no_tokio);
    // Nor flume's for select-both.
    assert_eq!(systems("select-both", 0, 4), no_tokio[..no_tokio.len() - 1]);
    assert_eq!(systems("select-both", 1, 2), no_tokio[..no_tokio.len() - 1]);
    for case in &cases {
        assert_eq!(case.spec.group, "channels");
        let names: Vec<&str> = case.spec.params.iter().map(|(n, _)| *n).collect();
        let expected: &[&str] = if case.spec.workload.starts_with("select") {
            &["capacity", "producers", "consumers", "clauses", "messages"]
        } else {
            &["capacity", "producers", "consumers", "messages"]
        };
        assert_eq!(names, expected, "{}", case.label());
        assert!(case.note.is_some(), "{}", case.label());
        // Every Rust row runs in a process per run; Go in its own program.
        match (&case.runner, case.system) {
            (Runner::External { program, .. }, System::Go) => {
                assert!(program.starts_with("channels-"), "{}", case.label());
            }
            (Runner::Child { args }, _) => assert_eq!(args[1], case.label()),
            #[cfg(not(feature = "fibra-rt"))]
            (Runner::Unavailable(_), _) => assert!(case.system.is_fibra()),
            _ => panic!("{}: not a child process per run", case.label()),
        }
    }
}

#[test]
fn a_child_runs_its_row_and_checks_it() {
    // The quick rows share a process per row; a full run's rows start a
    // child per run, which builds the rows again from its arguments.
    assert!(
        cases(&QUICK)
            .iter()
            .all(|c| !matches!(c.runner, Runner::Child { .. }))
    );
    let cases: Vec<_> = cases(&QUICK)
        .into_iter()
        .map(|case| per_run_process(case, &QUICK))
        .collect();
    for system in [System::Crossbeam, System::FibraCt, System::TokioMt] {
        let case = cases
            .iter()
            .find(|c| c.spec.workload == "mpsc" && c.system == system)
            .expect("an mpsc row");
        let Runner::Child { args } = &case.runner else {
            panic!("{}: not a child", case.label());
        };
        let line = crate::workloads::run_child(args).expect("the child runs");
        let run = parse_run(&line).unwrap();
        assert_eq!(run.result, case.spec.expected, "{}", case.label());
        assert!(!run.warmup && run.seconds > 0.0);
    }
    let bad = |args: &[&str]| child(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert!(bad(&["no such row", "true", "-"]).is_err());
    assert!(bad(&["x", "maybe", "-"]).is_err());
    assert!(bad(&["x", "true", "zero"]).is_err());
    assert!(bad(&["x"]).is_err());
}
