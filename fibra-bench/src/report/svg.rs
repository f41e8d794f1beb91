//! One SVG bar chart per group (`target/fibra-bench/<group>.svg`),
//! hand-written: no plotting crate.
//!
//! Why not plotters (the maintained Rust plotting crate): it draws one
//! coordinate system per chart area, with uniform axis labels. This chart
//! is a column of small charts, one linear scale per cluster, whose rows
//! are labelled with bold names for fibra's rows, whose whiskers are cut
//! with an arrow head at the axis end, and whose bars carry a value label
//! with the ratio to fibra and a hover tooltip (`<title>`) with the row's
//! parameters. With plotters, only the bars and the tick positions would
//! come from the crate: the names, value labels, cut whiskers and cluster
//! headings would be placed by hand as here, its SVG backend has no
//! tooltips (it writes only shapes and text, at whole-pixel coordinates),
//! and without its `ttf` feature (system fonts through font-kit) its text
//! extents are estimates like [`CHAR_12`]. The layout code would stay; the
//! XML writing (a few `writeln!`s and [`escape`]) is all it would replace.
//!
//! Each (workload, params) is a cluster of horizontal bars, one per system,
//! in run order: length = ns per op at the median, a whisker from the
//! fastest to the slowest run, the value (and the peer's ratio to its fibra
//! row) printed after the bar. fibra rows are blues with bold names; peers
//! have their own colour families. The workloads of a group count different
//! things (messages, round trips, tasks) and differ by 100x in cost, so every
//! cluster has its own linear scale, drawn as a small axis under its bars.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{fs, io};

use super::{Report, Row, RowRatios, ratios};
use crate::system::System;

/// Outer margin.
const MARGIN: f64 = 16.0;
/// Length of the longest bar (or whisker) of a cluster.
const PLOT_W: f64 = 460.0;
/// Room after the axis end for a cut whisker's arrow head.
const OVERFLOW: f64 = 8.0;
/// Height of one bar, and the space between two bars.
const BAR_H: f64 = 14.0;
const BAR_GAP: f64 = 4.0;
/// Room above a cluster's bars for its heading, and below for its axis.
const HEAD_H: f64 = 24.0;
const AXIS_H: f64 = 24.0;
/// Space between clusters.
const CLUSTER_GAP: f64 = 10.0;
/// Estimated advance of one character at 12 px (labels) and 11 px (values)
/// in a sans-serif font, rounded up: SVG cannot measure text, so the layout
/// leaves this much room per character.
const CHAR_12: f64 = 7.4;
const CHAR_11: f64 = 6.8;
/// The same for running text at 12 px (mostly lower case).
const CHAR_12_SMALL: f64 = 6.6;
/// Legend: swatch size and the row height.
const SWATCH: f64 = 12.0;
const LEGEND_ROW: f64 = 20.0;
/// Ticks of a cluster axis: about this many intervals.
const TICKS: f64 = 4.0;

const FONT: &str = "DejaVu Sans, Verdana, Arial, sans-serif";

/// Fill colour of a system's bars: blues for fibra, other families for peers.
fn colour(system: System) -> &'static str {
    match system {
        System::Fibra => "#08519c",
        System::Fibra1 => "#3182bd",
        System::FibraCt => "#6baed6",
        System::FibraThreads => "#2171b5",
        System::FibraParasite => "#084594",
        System::FibraSendAsync => "#2b8cbe",
        System::FibraParasiteNoInflation => "#4292c6",
        System::FibraChooseAll => "#c6dbef",
        System::FibraTokioCt => "#4eb3d3",
        System::FibraTokioMt => "#9ecae1",
        System::Go => "#f16913",
        System::TokioCt => "#238b45",
        System::TokioCtOneshot => "#74c476",
        System::TokioMt => "#a1d99b",
        System::TokioCtMimalloc => "#006d2c",
        System::TokioMtMimalloc => "#41ab5d",
        System::Crossbeam => "#6a51a3",
        System::FlumeThreads => "#9e9ac8",
        System::FlumeTokioCt => "#807dba",
        System::FlumeTokioMt => "#bcbddc",
        System::Erlang => "#cb181d",
        System::Erlang1 => "#fb6a4a",
        System::Racket => "#8c510a",
        System::Floor => "#969696",
    }
}

/// Writes one chart per group of `report` into `dir` (`<group>.svg`) and
/// returns their paths, in the order the groups were run. The charts of the
/// other `known_groups` (left by an earlier run) are removed, so that the
/// charts in `dir` always match the report next to them.
pub fn write_charts(
    report: &Report,
    dir: &Path,
    known_groups: &[&str],
) -> io::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir)?;
    let groups = groups(report);
    let mut paths = Vec::new();
    for &group in &groups {
        if let Some(svg) = render_group(report, group) {
            let path = dir.join(format!("{group}.svg"));
            fs::write(&path, svg)?;
            paths.push(path);
        }
    }
    for group in known_groups.iter().filter(|g| !groups.contains(g)) {
        match fs::remove_file(dir.join(format!("{group}.svg"))) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(paths)
}

/// The groups of the report's rows, in run order.
fn groups(report: &Report) -> Vec<&'static str> {
    let mut groups = Vec::new();
    for row in &report.rows {
        if !groups.contains(&row.spec.group) {
            groups.push(row.spec.group);
        }
    }
    groups
}

/// A cluster: the rows of one (workload, params), with their ratios.
struct Cluster<'a> {
    rows: Vec<(&'a Row, RowRatios)>,
}

impl Cluster<'_> {
    /// The axis: (interval between ticks, end of the axis), in ns per op.
    /// It fits the longest bar: a slow outlier run only clips its whisker.
    fn axis(&self) -> (f64, f64) {
        let max = self
            .rows
            .iter()
            .map(|(row, _)| row.ns_per_op())
            .fold(0.0, f64::max);
        let step = nice_step(max / TICKS);
        (step, (max / step).ceil().max(1.0) * step)
    }

    fn height(&self) -> f64 {
        HEAD_H + self.rows.len() as f64 * (BAR_H + BAR_GAP) + AXIS_H
    }
}

/// Nanoseconds per op of `seconds` for the row's work.
fn ns_per_op(row: &Row, seconds: f64) -> f64 {
    seconds * 1e9 / row.spec.ops.max(1) as f64
}

/// The chart of `group`, or `None` if the report has no row of it.
pub fn render_group(report: &Report, group: &str) -> Option<String> {
    let all_ratios = ratios(&report.rows);
    let mut clusters: Vec<Cluster> = Vec::new();
    for (row, ratios) in report.rows.iter().zip(all_ratios) {
        if row.spec.group != group {
            continue;
        }
        match clusters.iter_mut().find(|c| c.rows[0].0.same_work(row)) {
            Some(cluster) => cluster.rows.push((row, ratios)),
            None => clusters.push(Cluster {
                rows: vec![(row, ratios)],
            }),
        }
    }
    if clusters.is_empty() {
        return None;
    }
    let mut systems: Vec<System> = Vec::new();
    for (row, _) in clusters.iter().flat_map(|c| &c.rows) {
        if !systems.contains(&row.system) {
            systems.push(row.system);
        }
    }
    // Fibra first in the legend, then the peers, each in run order.
    systems.sort_by_key(|s| !s.is_fibra());

    // Horizontal layout: names | bars | values.
    let name_w = systems.iter().map(|s| s.name().len()).max().unwrap_or(0) as f64 * CHAR_12 + 10.0;
    let value_w = clusters
        .iter()
        .flat_map(|c| &c.rows)
        .map(|(row, ratios)| value_label(row, ratios).chars().count())
        .max()
        .unwrap_or(0) as f64
        * CHAR_11
        + 10.0;
    let plot_x = MARGIN + name_w;

    let runs = clusters[0].rows[0].0.runs;
    let title = format!("fibra-bench: {group}");
    let mut context = format!("{} · {}", report.date, report.command);
    if report.quick {
        context.push_str(" · --quick sizes (tiny; not for comparison)");
    }
    let lines = [
        format!(
            "ns per op, median of {runs} runs; shorter is faster; each cluster has its own scale"
        ),
        "whisker: fastest to slowest run (an arrow: cut off at the end of the axis)".to_string(),
        "×N vs S: peer median / median of fibra row S (> 1: fibra is faster)".to_string(),
        context,
    ];
    let longest_line = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let width = (plot_x + PLOT_W + OVERFLOW + value_w + MARGIN)
        .max(2.0 * MARGIN + longest_line as f64 * CHAR_12_SMALL)
        .ceil();

    let mut body = String::new();
    let mut y = MARGIN + 18.0;
    text(&mut body, MARGIN, y, 17.0, "bold", "start", "#000", &title);
    y += 20.0;
    for line in &lines {
        text(&mut body, MARGIN, y, 12.0, "normal", "start", "#444", line);
        y += 16.0;
    }

    // Legend: swatches wrapped to the chart's width.
    y += 6.0;
    let mut x = MARGIN;
    for system in &systems {
        let w = SWATCH + 6.0 + system.name().len() as f64 * CHAR_12 + 18.0;
        if x + w > width - MARGIN && x > MARGIN {
            x = MARGIN;
            y += LEGEND_ROW;
        }
        writeln!(
            body,
            r#"<rect x="{x:.1}" y="{:.1}" width="{SWATCH}" height="{SWATCH}" fill="{}"/>"#,
            y - SWATCH + 2.0,
            colour(*system)
        )
        .unwrap();
        let weight = if system.is_fibra() { "bold" } else { "normal" };
        text(
            &mut body,
            x + SWATCH + 6.0,
            y,
            12.0,
            weight,
            "start",
            "#000",
            system.name(),
        );
        x += w;
    }
    y += LEGEND_ROW;

    for cluster in &clusters {
        y += CLUSTER_GAP;
        render_cluster(&mut body, cluster, plot_x, y);
        y += cluster.height();
    }
    let height = (y + MARGIN).ceil();

    let mut svg = String::new();
    writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="{FONT}">"#
    )
    .unwrap();
    writeln!(svg, "<title>{}</title>", escape(&title)).unwrap();
    writeln!(
        svg,
        r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>"##
    )
    .unwrap();
    svg.push_str(&body);
    svg.push_str("</svg>\n");
    Some(svg)
}

/// One cluster, its heading at `top`.
fn render_cluster(out: &mut String, cluster: &Cluster, plot_x: f64, top: f64) {
    let first = cluster.rows[0].0;
    let (step, end) = cluster.axis();
    let scale = PLOT_W / end;
    writeln!(
        out,
        r##"<text x="{MARGIN}" y="{:.1}" font-size="13"><tspan font-weight="bold">{}</tspan><tspan fill="#555" dx="10">{} · {} ops</tspan></text>"##,
        top + 14.0,
        escape(first.spec.workload),
        escape(&first.spec.params.to_string()),
        first.spec.ops
    )
    .unwrap();
    let bars_top = top + HEAD_H;
    let bars_bottom = bars_top + cluster.rows.len() as f64 * (BAR_H + BAR_GAP);

    // Grid lines behind the bars, one per tick.
    let ticks = (end / step).round() as usize;
    for i in 0..=ticks {
        let x = plot_x + i as f64 * step * scale;
        let colour = if i == 0 { "#888" } else { "#e3e3e3" };
        writeln!(
            out,
            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{colour}" stroke-width="1"/>"#,
            bars_top - 2.0,
            bars_bottom + 2.0
        )
        .unwrap();
    }

    for (i, (row, ratios)) in cluster.rows.iter().enumerate() {
        let y = bars_top + i as f64 * (BAR_H + BAR_GAP);
        let mid = y + BAR_H / 2.0;
        let weight = if row.system.is_fibra() {
            "bold"
        } else {
            "normal"
        };
        text(
            out,
            plot_x - 6.0,
            mid + 4.0,
            12.0,
            weight,
            "end",
            "#000",
            row.system.name(),
        );
        let median = row.ns_per_op();
        let w = (median * scale).max(1.0);
        writeln!(
            out,
            r#"<rect x="{plot_x:.1}" y="{y:.1}" width="{w:.1}" height="{BAR_H}" fill="{}"><title>{} {}: {}</title></rect>"#,
            colour(row.system),
            escape(&row.system.to_string()),
            escape(&first.spec.params.to_string()),
            escape(&value_label(row, ratios))
        )
        .unwrap();
        // The whisker; past the axis end it is cut, with an arrow head.
        let axis_end = plot_x + PLOT_W;
        let lo = plot_x + ns_per_op(row, row.stats.min_s) * scale;
        let hi = plot_x + ns_per_op(row, row.stats.max_s) * scale;
        let (hi, hi_cap) = if hi > axis_end + 1.0 {
            let (a, b) = (axis_end + 6.0, axis_end + 1.0);
            (
                a,
                format!(
                    "M{b:.1} {:.1}L{a:.1} {mid:.1}L{b:.1} {:.1}",
                    mid - 3.0,
                    mid + 3.0
                ),
            )
        } else {
            (hi, format!("M{hi:.1} {:.1}V{:.1}", mid - 3.0, mid + 3.0))
        };
        writeln!(
            out,
            r##"<path d="M{lo:.1} {mid:.1}H{hi:.1}M{lo:.1} {:.1}V{:.1}{hi_cap}" stroke="#222" stroke-width="1" fill="none"/>"##,
            mid - 3.0,
            mid + 3.0,
        )
        .unwrap();
        text(
            out,
            plot_x + w.max(hi - plot_x) + 6.0,
            mid + 4.0,
            11.0,
            "normal",
            "start",
            "#222",
            &value_label(row, ratios),
        );
    }

    // The axis: tick labels under the bars, in one unit, named at the end.
    let unit = Unit::for_value(end);
    let label_y = bars_bottom + 14.0;
    for i in 0..=ticks {
        let v = i as f64 * step;
        let x = plot_x + v * scale;
        let mut label = unit.number(v);
        if i == ticks {
            write!(label, " {}/op", unit.name).unwrap();
        }
        let anchor = if i == 0 { "start" } else { "middle" };
        text(out, x, label_y, 10.0, "normal", anchor, "#666", &label);
    }
}

/// `157 ns (×1.99 vs fibra)`: the median per op, and for a peer its ratio to
/// its fibra row.
fn value_label(row: &Row, ratios: &RowRatios) -> String {
    let ns = row.ns_per_op();
    let unit = Unit::for_value(ns);
    let mut label = format!("{} {}", unit.number(ns), unit.name);
    if let Some(r) = ratios.vs_fibra {
        write!(label, " (×{:.2} vs {})", r.value, r.fibra).unwrap();
    }
    label
}

/// A time unit for nanosecond values.
struct Unit {
    name: &'static str,
    ns: f64,
}

impl Unit {
    /// The largest unit in which `ns` is at least 1.
    fn for_value(ns: f64) -> Self {
        let (name, size) = if ns >= 1e6 {
            ("ms", 1e6)
        } else if ns >= 1e3 {
            ("µs", 1e3)
        } else {
            ("ns", 1.0)
        };
        Self { name, ns: size }
    }

    /// `ns` in this unit with 3 significant digits (whole numbers above 100).
    fn number(&self, ns: f64) -> String {
        let v = ns / self.ns;
        if v == 0.0 {
            "0".into()
        } else if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 10.0 {
            trim_zeros(format!("{v:.1}"))
        } else {
            trim_zeros(format!("{v:.2}"))
        }
    }
}

/// `2.50` -> `2.5`, `3.00` -> `3`.
fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&step| step >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * power)
}

/// A `<text>` element.
#[allow(clippy::too_many_arguments)]
fn text(
    out: &mut String,
    x: f64,
    y: f64,
    size: f64,
    weight: &str,
    anchor: &str,
    fill: &str,
    content: &str,
) {
    writeln!(
        out,
        r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" font-weight="{weight}" text-anchor="{anchor}" fill="{fill}">{}</text>"#,
        escape(content)
    )
    .unwrap();
}

/// Escapes text for XML content and attribute values.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Params, Spec};
    use crate::harness::Stats;
    use std::time::SystemTime;

    fn row(workload: &'static str, links: u64, system: System, median_s: f64) -> Row {
        Row {
            spec: Spec {
                group: "fibers",
                workload,
                params: Params::new().with("links", links).with("messages", 1000),
                ops: 1000,
                expected: 0,
            },
            system,
            runs: 5,
            stats: Stats {
                median_s,
                min_s: median_s * 0.9,
                max_s: median_s * 1.2,
            },
            note: None,
            extra: Params::new(),
            figures: Params::new(),
        }
    }

    fn report() -> Report {
        let mut report = Report::new(SystemTime::UNIX_EPOCH, "fibra-bench <&> --quick".into());
        for (links, scale) in [(0, 1.0), (10, 10.0)] {
            report.rows.extend([
                row("chain", links, System::Fibra, 0.0001 * scale),
                row("chain", links, System::FibraCt, 0.00012 * scale),
                row("chain", links, System::Go, 0.0002 * scale),
                row("chain", links, System::Erlang, 0.0009 * scale),
            ]);
        }
        report.rows.push(row("sieve", 0, System::Racket, 0.003));
        let mut other = row("spsc", 0, System::Crossbeam, 0.01);
        other.spec.group = "general";
        report.rows.push(other);
        report
    }

    /// Checks that every tag is closed in order (a small XML-ish parser:
    /// no comments, CDATA or processing instructions are generated) and
    /// that no `<`/`&` appears raw in text.
    fn assert_well_formed(svg: &str) {
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let text = &rest[..start];
            for (i, _) in text.match_indices('&') {
                let entity = &text[i..];
                assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                        .iter()
                        .any(|e| entity.starts_with(e)),
                    "raw & in {text:?}"
                );
            }
            let end = rest[start..].find('>').expect("unclosed tag") + start;
            let tag = &rest[start + 1..end];
            assert!(!tag.contains('<'), "< inside a tag: {tag}");
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes: {tag}");
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
            } else if !tag.ends_with('/') {
                let name = tag.split_whitespace().next().expect("a tag name");
                stack.push(name);
            }
            rest = &rest[end + 1..];
        }
        assert!(rest.trim().is_empty(), "text after the root: {rest:?}");
        assert!(stack.is_empty(), "unclosed: {stack:?}");
    }

    #[test]
    fn chart_is_well_formed_and_names_every_system() {
        let report = report();
        let svg = render_group(&report, "fibers").unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert_well_formed(&svg);
        for system in [
            System::Fibra,
            System::FibraCt,
            System::Go,
            System::Erlang,
            System::Racket,
        ] {
            let label = format!(">{}</text>", system.name());
            // In the legend and on every bar of the system.
            assert!(svg.matches(&label).count() >= 2, "{system} missing");
            assert!(svg.contains(colour(system)), "{system} colour");
        }
        assert!(!svg.contains(">crossbeam<"), "another group's system");
        assert!(svg.contains("fibra-bench &lt;&amp;&gt; --quick"), "escaped");
        // Values and ratios are printed: go is 2x fibra in the first cluster.
        assert!(svg.contains(">100 ns</text>"), "{svg}");
        assert!(svg.contains(">200 ns (×2.00 vs fibra)</text>"), "{svg}");
        assert!(svg.contains("chain</tspan>"));
        assert!(svg.contains("sieve</tspan>"));
        assert!(svg.contains("µs/op</text>"), "an axis in µs for links=10");
    }

    #[test]
    fn a_slow_outlier_cuts_its_whisker_not_the_scale() {
        let mut report = report();
        report.rows[3].stats.max_s = 1.0; // erlang, chain links=0: 1000x its median
        let svg = render_group(&report, "fibers").unwrap();
        assert_well_formed(&svg);
        // The axis still ends near the slowest median (900 ns -> 1 µs).
        assert!(svg.contains(">1 µs/op</text>"), "{svg}");
        let arrow = format!(
            "L{:.1} ",
            MARGIN + "fibra-ct".len() as f64 * CHAR_12 + 10.0 + PLOT_W + 6.0
        );
        assert!(svg.contains(&arrow), "an arrow head at the axis end: {svg}");
    }

    #[test]
    fn one_file_per_group() {
        let dir = std::env::temp_dir().join(format!("fibra-bench-svg-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let stale = dir.join("racket.svg");
        fs::write(&stale, "<svg/>").unwrap();
        let paths = write_charts(&report(), &dir, &["fibers", "racket", "general"]).unwrap();
        assert_eq!(paths, [dir.join("fibers.svg"), dir.join("general.svg")]);
        assert!(!stale.exists(), "a chart of a group not in the report");
        let general = fs::read_to_string(&paths[1]).unwrap();
        assert_well_formed(&general);
        assert!(general.contains(">crossbeam</text>"));
        assert!(render_group(&report(), "racket").is_none());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn axis_steps_and_units() {
        assert_eq!(nice_step(23.0), 25.0);
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(1000.0), 1000.0);
        assert_eq!(nice_step(1200.0), 2000.0);
        assert_eq!(Unit::for_value(80.0).number(78.94), "78.9");
        assert_eq!(Unit::for_value(8194.7).number(8194.7), "8.19");
        assert_eq!(Unit::for_value(2.5e6).number(2.5e6), "2.5");
        assert_eq!(Unit::for_value(250.0).number(250.0), "250");
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
