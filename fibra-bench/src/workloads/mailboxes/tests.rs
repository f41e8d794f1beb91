//! Every system's runs return the expected results; every workload has its
//! rows.

use super::workload::{Asymmetric, Channel, Mailbox, SwitchBaseline, Symmetric, WORKLOADS};
use super::{ITERATIONS, cases, tokio_peer};
use crate::system::System;
use crate::workloads::{CATALOGUE, Config};

const N: u64 = 1000;

#[test]
fn names_and_results() {
    let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name()).collect();
    let catalogue = CATALOGUE
        .iter()
        .find(|(group, _)| *group == "racket")
        .unwrap()
        .1;
    assert_eq!(names, catalogue);
    assert_eq!(Asymmetric(Mailbox).expected(4), 6);
    assert_eq!(Symmetric(Channel).expected(4), 10);
    assert_eq!(SwitchBaseline.expected(4), 8);
}

#[test]
fn tokio_runs_return_the_expected_results() {
    let ct = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    for workload in WORKLOADS {
        for rt in [&ct, &mt] {
            assert_eq!(
                rt.block_on(tokio_peer::run(workload, N)),
                workload.expected(N),
                "{workload:?}"
            );
        }
    }
}

#[cfg(feature = "fibra-rt")]
#[test]
fn fibra_runs_return_the_expected_results() {
    use crate::exec::FibraFlavour;
    for flavour in [FibraFlavour::CurrentThread, FibraFlavour::Multi(Some(2))] {
        let rt = flavour.build();
        for workload in WORKLOADS {
            assert_eq!(
                rt.block_on(super::fibra_tasks::run(workload, N)),
                workload.expected(N),
                "{workload:?} on {flavour:?}"
            );
        }
    }
}

#[test]
fn every_workload_has_its_systems() {
    let cases = cases(&Config::default());
    for workload in WORKLOADS {
        let systems: Vec<System> = cases
            .iter()
            .filter(|c| c.spec.workload == workload.name())
            .map(|c| c.system)
            .collect();
        let mut expected = vec![
            System::Fibra,
            System::FibraCt,
            System::TokioCt,
            System::TokioMt,
            System::Go,
        ];
        if workload.erlang() {
            expected.push(System::Erlang);
        }
        expected.push(System::Racket);
        assert_eq!(systems, expected, "{workload:?}");
        for case in cases.iter().filter(|c| c.spec.workload == workload.name()) {
            assert_eq!(case.spec.group, "racket");
            assert_eq!(case.spec.ops, ITERATIONS.0);
            assert_eq!(case.system.is_fibra(), case.note.is_none());
        }
    }
}
