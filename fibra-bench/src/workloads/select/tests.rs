//! Every system's runs return the expected results; the rows and their
//! parameters.

#[cfg(feature = "fibra-rt")]
use super::fibra_tasks;
use super::rows::FIBRA_NOTE;
use super::shape::{Shape, Variant};
use super::{cases, crossbeam_peer, fibra_threads, tokio_peer};
use crate::case::Case;
use crate::system::System;
use crate::workloads::Config;

fn shapes(messages: u64, consumers: u64) -> impl Iterator<Item = Shape> {
    [Variant::Blocking, Variant::Else]
        .into_iter()
        .flat_map(move |variant| {
            [2, 4, 8, 16].into_iter().map(move |clauses| Shape {
                clauses,
                variant,
                producers: consumers,
                consumers,
                messages,
            })
        })
}

#[test]
fn thread_rows_return_the_expected_results() {
    for sides in [1, 2] {
        for shape in shapes(600, sides) {
            assert_eq!(fibra_threads::select(shape), shape.expected(), "{shape:?}");
            assert_eq!(crossbeam_peer::select(shape), shape.expected(), "{shape:?}");
        }
    }
    assert_eq!(fibra_threads::overlap(600), 600 * 599 / 2);
    assert_eq!(crossbeam_peer::overlap(600), 600 * 599 / 2);
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
    for shape in shapes(600, 1) {
        for rt in [&ct, &mt] {
            assert_eq!(
                rt.block_on(tokio_peer::select(shape)),
                shape.expected(),
                "{shape:?}"
            );
        }
    }
}

#[cfg(feature = "fibra-rt")]
#[test]
fn fibra_rows_return_the_expected_results() {
    use crate::exec::FibraFlavour;
    for flavour in [FibraFlavour::CurrentThread, FibraFlavour::Multi(Some(2))] {
        let rt = flavour.build();
        for sides in [1, 2] {
            for shape in shapes(600, sides) {
                assert_eq!(
                    rt.block_on(fibra_tasks::select(shape)),
                    shape.expected(),
                    "{shape:?} on {flavour:?}"
                );
            }
        }
        assert_eq!(rt.block_on(fibra_tasks::overlap(600)), 600 * 599 / 2);
    }
}

#[test]
fn rows_and_params() {
    let cases = cases(&Config::default());
    let select: Vec<&Case> = cases
        .iter()
        .filter(|c| c.spec.workload == "select-channels")
        .collect();
    // 8 parameter sets x fibra, fibra-ct, fibra-threads, tokio-ct,
    // tokio-mt, crossbeam, go.
    assert_eq!(select.len(), 8 * 7);
    for case in &select {
        assert_eq!(case.spec.group, "cforall");
        let names: Vec<&str> = case.spec.params.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "clauses",
                "variant",
                "producers",
                "consumers",
                "messages",
                "capacity"
            ]
        );
        assert_eq!(
            case.system.is_fibra(),
            case.note == Some(FIBRA_NOTE),
            "{}",
            case.label()
        );
    }
    let overlap: Vec<System> = cases
        .iter()
        .filter(|c| c.spec.workload == "select-overlap")
        .map(|c| c.system)
        .collect();
    assert_eq!(
        overlap,
        [
            System::Fibra,
            System::FibraCt,
            System::FibraThreads,
            System::Crossbeam,
            System::Go
        ]
    );
}
