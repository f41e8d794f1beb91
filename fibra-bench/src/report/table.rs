//! The text table printed on stdout.

use std::fmt::Write as _;

use super::{Report, ratios};

/// Column headers; numeric columns are right-aligned.
const HEADERS: [&str; 11] = [
    "group",
    "workload",
    "params",
    "system",
    "median s",
    "min s",
    "max s",
    "ns/op",
    "vs fibra",
    "vs best fibra",
    "measured",
];
/// Numeric columns: right-aligned.
const FIRST_NUMERIC: usize = 4;
const LAST_NUMERIC: usize = 10;

/// What the ratio columns mean, printed under the table.
const LEGEND: &str = "\
ratios = peer median / fibra median for the same workload and params (> 1: fibra is faster)
  vs fibra:      the fibra row of the same context: crossbeam, flume-threads vs fibra-threads;
                 tokio-ct, flume-tokio-ct vs fibra-tokio-ct; tokio-mt, flume-tokio-mt vs fibra-tokio-mt;
                 where fibra runs on its own runtime (task workloads): tokio-ct, tokio-ct-oneshot,
                 tokio-ct-mimalloc vs fibra-ct, tokio-mt, tokio-mt-mimalloc vs fibra; go vs fibra,
                 else fibra-threads; erlang, racket vs fibra
  *-mimalloc:    the same tokio code with mimalloc as the global allocator (fibra's tasks come from its own slabs)
  floor:         a reference, not a peer: a hand-rolled single-threaded executor (vs fibra-ct; < 1 is expected)
  vs best fibra: go, erlang and racket, vs the fastest fibra row (named)";

/// The table of measured rows, a legend, and the rows' footnotes.
pub fn render_table(report: &Report) -> String {
    let mut notes: Vec<&str> = Vec::new();
    let mut lines: Vec<Option<[String; 11]>> = Vec::new(); // None: a gap between workloads
    for (i, (row, ratios)) in report.rows.iter().zip(ratios(&report.rows)).enumerate() {
        if i > 0 && !row.same_work(&report.rows[i - 1]) {
            lines.push(None);
        }
        let mut system = row.system.to_string();
        if let Some(note) = row.note {
            let n = match notes.iter().position(|n| *n == note) {
                Some(n) => n,
                None => {
                    notes.push(note);
                    notes.len() - 1
                }
            };
            write!(system, " [{}]", n + 1).unwrap();
        }
        lines.push(Some([
            row.spec.group.to_string(),
            row.spec.workload.to_string(),
            row.spec.params.to_string(),
            system,
            secs(row.stats.median_s),
            secs(row.stats.min_s),
            secs(row.stats.max_s),
            ns(row.ns_per_op()),
            ratios
                .vs_fibra
                .map_or(String::new(), |r| format!("{:.2}", r.value)),
            ratios
                .vs_best_fibra
                .map_or(String::new(), |r| format!("{:.2} ({})", r.value, r.fibra)),
            row.figures.to_string(),
        ]));
    }

    let mut widths = HEADERS.map(str::len);
    for cells in lines.iter().flatten() {
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.len());
        }
    }
    let mut out = String::new();
    let headers = HEADERS.map(String::from);
    for cells in std::iter::once(Some(&headers)).chain(lines.iter().map(Option::as_ref)) {
        let Some(cells) = cells else {
            out.push('\n');
            continue;
        };
        let mut line = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if (FIRST_NUMERIC..LAST_NUMERIC).contains(&i) {
                write!(line, "{cell:>width$}  ").unwrap();
            } else {
                write!(line, "{cell:<width$}  ").unwrap();
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
    out.push_str(LEGEND);
    out.push('\n');
    for (i, note) in notes.iter().enumerate() {
        writeln!(out, "[{}] {note}", i + 1).unwrap();
    }
    out
}

/// Rows that were skipped and workloads not written yet, one line each.
pub fn render_missing(report: &Report) -> String {
    let mut out = String::new();
    for reason in &report.skipped {
        writeln!(out, "skipped: {reason}").unwrap();
    }
    if !report.not_yet.is_empty() {
        writeln!(
            out,
            "not yet (docs/benchmarks.md workloads without an implementation):"
        )
        .unwrap();
        for (group, names) in &report.not_yet {
            writeln!(out, "  {group}: {}", names.join(", ")).unwrap();
        }
    }
    out
}

/// The cross-core round trips of the run, one line (empty if none were
/// measured): the range, and how many passes ran while it was more than
/// twice its median (a slow stretch of the machine: see each row's
/// `xcore_ns`).
pub fn render_cross_core(report: &Report) -> String {
    let Some((min, median, max)) = report.cross_core_range() else {
        return String::new();
    };
    let slow = report
        .cross_core_ns
        .iter()
        .filter(|ns| **ns > 2.0 * median)
        .count();
    format!(
        "cross-core round trip before each pass: min {min:.0} ns, median {median:.0}, max \
         {max:.0}; {slow} of {} passes above twice the median (each row's xcore_ns: the \
         largest of its passes)\n",
        report.cross_core_ns.len()
    )
}

/// Seconds with 4 significant digits.
fn secs(s: f64) -> String {
    if s <= 0.0 || !s.is_finite() {
        return format!("{s}");
    }
    let decimals = (3 - s.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{s:.decimals$}")
}

/// Nanoseconds: one decimal below 100 ns, whole numbers above.
fn ns(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Params;
    use crate::report::tests::row;
    use crate::system::System;
    use std::time::SystemTime;

    #[test]
    fn number_formats() {
        assert_eq!(secs(0.012345), "0.01235");
        assert_eq!(secs(1.5), "1.500");
        assert_eq!(secs(123.456), "123.5");
        assert_eq!(ns(12.34), "12.3");
        assert_eq!(ns(1234.5), "1234");
    }

    #[test]
    fn table_has_rows_ratios_and_footnotes() {
        let mut report = Report::new(SystemTime::UNIX_EPOCH, String::new());
        report.rows.push(row("spsc", System::FibraTokioCt, 0.5));
        let mut peer = row("spsc", System::TokioCt, 1.0);
        peer.note = Some("tokio has no rendezvous");
        peer.figures = Params::new().with("bytes_per_task", 300);
        report.rows.push(peer);
        report.rows.push(row("other", System::Go, 1.0));
        let text = render_table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("group"), "{text}");
        assert!(
            lines[2].contains("tokio-ct [1]")
                && lines[2].contains(" 2.00 ")
                && lines[2].ends_with("  bytes_per_task=300"),
            "{text}"
        );
        assert!(lines[0].ends_with("vs best fibra  measured"), "{text}");
        assert_eq!(lines[3], "", "a gap between workloads: {text}");
        assert!(text.contains("[1] tokio has no rendezvous"), "{text}");
        report.not_yet = vec![("fibers", vec!["chain", "sieve"])];
        assert!(render_missing(&report).contains("  fibers: chain, sieve"));
    }

    #[test]
    fn the_cross_core_line_counts_the_slow_passes() {
        let mut report = Report::new(SystemTime::UNIX_EPOCH, String::new());
        assert_eq!(render_cross_core(&report), "");
        report.cross_core_ns = vec![70.2, 60.0, 340.0];
        let line = render_cross_core(&report);
        assert!(
            line.starts_with(
                "cross-core round trip before each pass: min 60 ns, median 70, max 340; 1 of 3 \
                 passes above twice the median"
            ),
            "{line}"
        );
    }
}
