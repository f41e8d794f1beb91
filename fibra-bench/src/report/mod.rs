//! The results of a run: rows, ratios, `report.json` and the text table.

mod ratio;
mod svg;
mod table;

use std::path::Path;
use std::time::SystemTime;
use std::{fs, io};

use serde_json::{Map, Value, json};

use crate::case::{ParamValue, Params, Spec};
use crate::harness::Stats;
use crate::system::System;

pub use ratio::{Ratio, RowRatios, ratios};
pub use svg::write_charts;
pub use table::{render_cross_core, render_missing, render_table};

/// One measured row.
#[derive(Clone, Debug)]
pub struct Row {
    /// The work.
    pub spec: Spec,
    /// Who did it.
    pub system: System,
    /// Timed runs behind the statistics.
    pub runs: usize,
    /// Median, min, max seconds.
    pub stats: Stats,
    /// Caveat, shown as a footnote.
    pub note: Option<&'static str>,
    /// Extra report fields.
    pub extra: Params,
    /// Figures the runs measured besides time (medians over the timed
    /// runs, e.g. `bytes_per_task`): extra report fields, and a table column.
    pub figures: Params,
}

impl Row {
    /// Nanoseconds per op at the median.
    pub fn ns_per_op(&self) -> f64 {
        self.stats.median_s * 1e9 / self.spec.ops.max(1) as f64
    }

    /// Whether `other` did the same work (same group, workload and params),
    /// so the two can be compared.
    pub fn same_work(&self, other: &Row) -> bool {
        self.spec.group == other.spec.group
            && self.spec.workload == other.spec.workload
            && self.spec.params == other.spec.params
    }
}

/// Everything a run produced.
#[derive(Debug)]
pub struct Report {
    /// Start of the run, UTC ISO 8601.
    pub date: String,
    /// The command line, e.g. `fibra-bench --runs 5`.
    pub command: String,
    /// Whether `--quick` sizes were used.
    pub quick: bool,
    /// `--workers`, if given.
    pub workers: Option<usize>,
    /// Measured rows in run order.
    pub rows: Vec<Row>,
    /// Why some rows were skipped, one line per reason.
    pub skipped: Vec<String>,
    /// docs/benchmarks.md workloads not implemented yet, per group.
    pub not_yet: Vec<(&'static str, Vec<&'static str>)>,
    /// The cross-core round trip (ns) measured before each pass, in run
    /// order (`crate::cross_core`); empty if not measured.
    pub cross_core_ns: Vec<f64>,
}

impl Report {
    /// A report of a run started at `started` with `command`.
    pub fn new(started: SystemTime, command: String) -> Self {
        Self {
            date: humantime::format_rfc3339_seconds(started).to_string(),
            command,
            quick: false,
            workers: None,
            rows: Vec::new(),
            skipped: Vec::new(),
            not_yet: Vec::new(),
            cross_core_ns: Vec::new(),
        }
    }

    /// The cross-core round trips of the run: min, median and max (ns;
    /// the runs' statistics, over nanoseconds here).
    pub fn cross_core_range(&self) -> Option<(f64, f64, f64)> {
        if self.cross_core_ns.is_empty() {
            return None;
        }
        let s = Stats::from_samples(&self.cross_core_ns);
        Some((s.min_s, s.median_s, s.max_s))
    }

    /// The report in the shape docs/benchmarks.md fixes (plus extra fields).
    pub fn to_json(&self) -> Value {
        let results: Vec<Value> = self
            .rows
            .iter()
            .zip(ratios(&self.rows))
            .map(|(row, ratios)| row_json(row, &ratios))
            .collect();
        let not_yet: Map<String, Value> = self
            .not_yet
            .iter()
            .map(|(group, names)| (group.to_string(), json!(names)))
            .collect();
        json!({
            "date": self.date,
            "command": self.command,
            "machine": {
                "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
                "os": std::env::consts::OS,
                "arch": std::env::consts::ARCH,
                "cross_core_ns": self.cross_core_range().map(|(min, median, max)| json!({
                    "passes": self.cross_core_ns.len(),
                    "min": min.round(),
                    "median": median.round(),
                    "max": max.round(),
                })),
            },
            "quick": self.quick,
            "workers": self.workers,
            "skipped": self.skipped,
            "not_yet": not_yet,
            "results": results,
        })
    }

    /// Writes [`Self::to_json`] to `path`, creating its directory.
    pub fn write_json(&self, path: &Path) -> io::Result<()> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let mut text = serde_json::to_string_pretty(&self.to_json()).map_err(io::Error::other)?;
        text.push('\n');
        fs::write(path, text)
    }
}

fn params_json(params: &Params) -> Map<String, Value> {
    params
        .iter()
        .map(|(name, value)| {
            let value = match value {
                ParamValue::Int(v) => json!(v),
                ParamValue::Text(v) => json!(v),
            };
            (name.to_string(), value)
        })
        .collect()
}

fn ratio_json(ratio: &Option<Ratio>) -> Value {
    match ratio {
        Some(r) => json!({"system": r.fibra.name(), "ratio": r.value}),
        None => Value::Null,
    }
}

fn row_json(row: &Row, ratios: &RowRatios) -> Value {
    let mut fields = json!({
        "group": row.spec.group,
        "workload": row.spec.workload,
        "params": params_json(&row.spec.params),
        "system": row.system.name(),
        "runs": row.runs,
        "median_s": row.stats.median_s,
        "min_s": row.stats.min_s,
        "max_s": row.stats.max_s,
        "ops": row.spec.ops,
        "verified": true,
        "ns_per_op": row.ns_per_op(),
    });
    let object = fields.as_object_mut().expect("a JSON object");
    if ratios.vs_fibra.is_some() {
        object.insert("vs_fibra".into(), ratio_json(&ratios.vs_fibra));
    }
    if ratios.vs_best_fibra.is_some() {
        object.insert("vs_best_fibra".into(), ratio_json(&ratios.vs_best_fibra));
    }
    if let Some(note) = row.note {
        object.insert("note".into(), json!(note));
    }
    object.extend(params_json(&row.extra));
    object.extend(params_json(&row.figures));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn row(workload: &'static str, system: System, median_s: f64) -> Row {
        Row {
            spec: Spec {
                group: "general",
                workload,
                params: Params::new().with("messages", 1000),
                ops: 1000,
                expected: 0,
            },
            system,
            runs: 5,
            stats: Stats {
                median_s,
                min_s: median_s * 0.9,
                max_s: median_s * 1.1,
            },
            note: None,
            extra: Params::new(),
            figures: Params::new(),
        }
    }

    #[test]
    fn json_has_the_fixed_shape() {
        let mut report = Report::new(SystemTime::UNIX_EPOCH, "fibra-bench --runs 5".into());
        report.rows.push(row("spsc", System::FibraThreads, 0.5));
        let mut peer = row("spsc", System::TokioCt, 1.0);
        peer.note = Some("capacity 1");
        peer.extra = Params::new().with("peer_capacity", 1);
        peer.figures = Params::new().with("bytes_per_task", 300);
        report.rows.push(peer);
        let v = report.to_json();
        assert_eq!(v["date"], "1970-01-01T00:00:00Z");
        assert_eq!(v["command"], "fibra-bench --runs 5");
        assert!(v["machine"]["cpus"].as_u64().unwrap() >= 1);
        assert_eq!(v["machine"]["os"], std::env::consts::OS);
        assert_eq!(v["machine"]["arch"], std::env::consts::ARCH);
        let r = &v["results"][0];
        for key in [
            "group", "workload", "params", "system", "runs", "median_s", "min_s", "max_s", "ops",
            "verified",
        ] {
            assert!(!r[key].is_null(), "missing {key}");
        }
        assert_eq!(r["params"]["messages"], 1000);
        assert_eq!(r["verified"], true);
        let p = &v["results"][1];
        assert_eq!(p["peer_capacity"], 1);
        assert_eq!(p["bytes_per_task"], 300);
        assert_eq!(p["note"], "capacity 1");
        // tokio-ct has no fibra-tokio-ct row here: no ratio.
        assert!(p.get("vs_fibra").is_none());
    }
}
