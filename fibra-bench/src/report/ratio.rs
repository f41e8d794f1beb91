//! Ratios: peer median / fibra median for the same work (> 1: fibra is
//! faster).
//!
//! * `vs_fibra`: against the first of the peer's [`System::baseline`] rows
//!   that was run for the same work: fibra in the peer's execution context
//!   where that row exists (OS-thread peers against `fibra-threads`, tokio
//!   peers against fibra's channels on the same tokio runtime), else fibra
//!   on its own runtime (tokio-ct, tokio-ct-oneshot and the floor against
//!   `fibra-ct`; tokio-mt, Go, Erlang and Racket against `fibra`).
//! * `vs_best_fibra`: for Go, Erlang and Racket
//!   ([`System::vs_best_fibra`]), against the
//!   fastest fibra row of the same work.
//!
//! A ratio is absent when its fibra row was not run.

use super::Row;
use crate::system::System;

/// One comparison of a peer row with a fibra row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    /// The fibra row compared with.
    pub fibra: System,
    /// Peer median / fibra median.
    pub value: f64,
}

/// The comparisons of one row (both absent for fibra rows).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowRatios {
    /// Against fibra in the same execution context.
    pub vs_fibra: Option<Ratio>,
    /// Against the fastest fibra row.
    pub vs_best_fibra: Option<Ratio>,
}

/// The ratios of every row, in order.
pub fn ratios(rows: &[Row]) -> Vec<RowRatios> {
    rows.iter().map(|row| row_ratios(row, rows)).collect()
}

fn row_ratios(row: &Row, rows: &[Row]) -> RowRatios {
    let fibra_rows = || {
        rows.iter()
            .filter(|other| other.system.is_fibra() && other.same_work(row))
    };
    let ratio_to = |fibra: &Row| Ratio {
        fibra: fibra.system,
        value: row.stats.median_s / fibra.stats.median_s,
    };
    let vs_fibra = row
        .system
        .baseline()
        .iter()
        .find_map(|&baseline| fibra_rows().find(|f| f.system == baseline))
        .map(ratio_to);
    let vs_best_fibra = if row.system.vs_best_fibra() {
        fibra_rows()
            .min_by(|a, b| a.stats.median_s.total_cmp(&b.stats.median_s))
            .map(ratio_to)
    } else {
        None
    };
    RowRatios {
        vs_fibra,
        vs_best_fibra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::row;

    #[test]
    fn peers_against_their_context_and_go_against_the_best() {
        let rows = [
            row("a", System::FibraThreads, 2.0),
            row("a", System::FibraTokioCt, 0.5),
            row("a", System::Crossbeam, 3.0),
            row("a", System::TokioCt, 1.0),
            row("a", System::TokioMt, 1.0),
            row("a", System::Go, 1.0),
            row("b", System::FibraThreads, 10.0),
        ];
        let r = ratios(&rows);
        assert_eq!(r[0], RowRatios::default());
        assert_eq!(r[2].vs_fibra.unwrap().value, 1.5);
        assert_eq!(r[2].vs_best_fibra, None);
        assert_eq!(
            r[3].vs_fibra,
            Some(Ratio {
                fibra: System::FibraTokioCt,
                value: 2.0
            })
        );
        // No fibra-tokio-mt row: no ratio.
        assert_eq!(r[4], RowRatios::default());
        let go = r[5];
        assert_eq!(go.vs_fibra.unwrap().value, 0.5);
        assert_eq!(
            go.vs_best_fibra,
            Some(Ratio {
                fibra: System::FibraTokioCt,
                value: 2.0
            })
        );
    }

    #[test]
    fn task_workloads_compare_with_fibra_on_its_own_runtime() {
        let rows = [
            row("a", System::Fibra, 1.0),
            row("a", System::Fibra1, 2.0),
            row("a", System::FibraCt, 0.5),
            row("a", System::TokioCt, 1.0),
            row("a", System::TokioCtOneshot, 0.5),
            row("a", System::TokioMt, 3.0),
            row("a", System::Go, 2.0),
            row("a", System::Floor, 0.25),
        ];
        let r = ratios(&rows);
        let vs = |i: usize| r[i].vs_fibra.map(|x| (x.fibra, x.value));
        assert_eq!(vs(1), None, "fibra rows have no ratio");
        assert_eq!(vs(3), Some((System::FibraCt, 2.0)));
        assert_eq!(vs(4), Some((System::FibraCt, 1.0)));
        assert_eq!(vs(5), Some((System::Fibra, 3.0)));
        assert_eq!(vs(6), Some((System::Fibra, 2.0)));
        assert_eq!(vs(7), Some((System::FibraCt, 0.5)));
        let best = r[6].vs_best_fibra.unwrap();
        assert_eq!((best.fibra, best.value), (System::FibraCt, 4.0));
    }

    #[test]
    fn erlang_and_racket_compare_with_fibra_and_the_best_fibra() {
        let rows = [
            row("a", System::Fibra, 1.0),
            row("a", System::FibraCt, 0.5),
            row("a", System::Erlang, 3.0),
            row("a", System::Racket, 4.0),
        ];
        let r = ratios(&rows);
        for (i, vs, best) in [(2, 3.0, 6.0), (3, 4.0, 8.0)] {
            assert_eq!(
                r[i].vs_fibra.map(|x| (x.fibra, x.value)),
                Some((System::Fibra, vs))
            );
            assert_eq!(
                r[i].vs_best_fibra.map(|x| (x.fibra, x.value)),
                Some((System::FibraCt, best))
            );
        }
    }
}
