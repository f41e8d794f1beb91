#!/usr/bin/env python3
"""Markdown tables from a fibra-bench report.

    python3 scripts/bench-tables.py [target/fibra-bench/report.json] [--commit C]

Writes docs/bench/results.md (every row of the run, with the cores each
in-process row kept busy) and prints the README's tables: the summary (one
row per workload and parameters, one column per peer, each cell the peer's
time divided by fibra's: > 1 means fibra is faster), the actor groups'
speedups, and the rows between OS threads with wall and CPU time per op.
"""

import json
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Peer columns of the summary, in this order (systems not listed follow).
PEERS = [
    "tokio-ct", "tokio-ct-oneshot", "tokio-mt", "tokio-ct-mimalloc",
    "tokio-mt-mimalloc", "go", "erlang", "erlang-1", "racket", "crossbeam",
    "flume-threads", "flume-tokio-ct", "flume-tokio-mt",
]


def is_fibra(system):
    return system.startswith("fibra")


def params_text(params):
    return " ".join(f"{k}={v}" for k, v in params.items())


def ns_text(row):
    ns = row["ns_per_op"]
    text = f"{ns:.3g}" if ns < 100 else f"{ns:.0f}"
    if "bytes_per_task" in row:
        text += f"; {row['bytes_per_task']} B/task"
    if "rps" in row:
        text += f"; {row['rps']} req/s"
    if "p99_us" in row:
        text += f"; p50 {row['p50_us']} µs, p99 {row['p99_us']} µs"
    return text


def cpu_text(row):
    """The cores a row's process kept busy while it ran (its CPU time over
    its wall time; in-process rows only), e.g. "1.97"."""
    return f"{row['cpu_pct'] / 100:.2f}" if "cpu_pct" in row else ""


def threads_md(report):
    """Rows between OS threads (fibra-threads, crossbeam, flume-threads):
    wall time per op and CPU time per op, side by side."""
    systems = ["fibra-threads", "crossbeam", "flume-threads"]
    works = OrderedDict()
    for row in report["results"]:
        if row["system"] in systems and "cpu_pct" in row:
            key = (row["group"], row["workload"], params_text(row["params"]))
            works.setdefault(key, {})[row["system"]] = row
    head = ["group", "workload", "params"] + [f"{s} ns/op (CPU ns/op)" for s in systems]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (group, workload, params), rows in works.items():
        if "fibra-threads" not in rows:
            continue
        cells = [group, workload, params]
        for system in systems:
            r = rows.get(system)
            if r:
                ns = r["ns_per_op"]
                cpu = ns * r["cpu_pct"] / 100
                cells.append(f"{ns:.3g} ({cpu:.3g})")
            else:
                cells.append("")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n" if len(out) > 2 else ""


def ratio_of(row):
    """The peer's ratio against fibra: against the fastest fibra row for
    Go, Erlang and Racket, else against fibra in the same context."""
    r = row.get("vs_best_fibra") or row.get("vs_fibra")
    if not r:
        return None
    return r["ratio"], r["system"]


def results_md(report, commit):
    out = []
    out.append("# Benchmark results: every row\n")
    out.append(
        f"Measured {report['date'][:10]} on a {report['machine']['cpus']}-core "
        f"{report['machine']['arch']} {report['machine']['os']} VM with "
        f"`cargo run --release -p fibra-bench` at commit {commit}; median of "
        "the timed runs after a warm-up. ns/op = median / ops; \"vs fibra\" is "
        "the peer's time / fibra's time (> 1: fibra is faster), against fibra "
        "in the peer's context (see `fibra-bench/src/report/ratio.rs`). The "
        "README has the summary and the charts.\n"
    )
    xcore = report["machine"].get("cross_core_ns")
    if xcore:
        out.append(
            "x-core ns: the largest cross-core round trip (one cache line to "
            "the other core and back, `fibra-bench/src/cross_core.rs`) measured "
            "before any of the row's passes. In this run: min "
            f"{xcore['min']:.0f} ns, median {xcore['median']:.0f}, max "
            f"{xcore['max']:.0f} over {xcore['passes']} passes. Rows with a "
            "figure above twice the median ran a pass while the machine moved "
            "data between its cores several times slower than usual: "
            "rows of work spread over two cores are not comparable then.\n"
        )
    if report.get("skipped"):
        out.append("Skipped in this run: " + ", ".join(map(str, report["skipped"])) + ".\n")
    group = None
    for row in report["results"]:
        if row["group"] != group:
            group = row["group"]
            out.append(f"\n## {group}\n")
            out.append(
                "| workload | params | system | median s | ns/op | CPU | vs fibra | x-core ns |"
            )
            out.append("|---|---|---|---|---|---|---|---|")
        r = row.get("vs_fibra")
        vs = f"{r['ratio']:.2f} (vs {r['system']})" if r else ""
        x = row.get("xcore_ns")
        x = "" if x is None else (f"**{x}**" if xcore and x > 2 * xcore["median"] else f"{x}")
        out.append(
            f"| {row['workload']} | {params_text(row['params'])} | {row['system']} "
            f"| {row['median_s']:.4g} | {ns_text(row)} | {cpu_text(row)} | {vs} | {x} |"
        )
    return "\n".join(out) + "\n"


def summary_md(report):
    works = OrderedDict()
    for row in report["results"]:
        key = (row["group"], row["workload"], params_text(row["params"]))
        works.setdefault(key, []).append(row)
    present = {row["system"] for row in report["results"] if not is_fibra(row["system"])}
    peers = [p for p in PEERS if p in present] + sorted(present - set(PEERS))
    head = ["group", "workload", "params", "fibra ns/op"] + peers
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (group, workload, params), rows in works.items():
        fibra = [r for r in rows if is_fibra(r["system"])]
        if not fibra:
            continue
        best = min(fibra, key=lambda r: r["median_s"])
        cells = [group, workload, params, f"{ns_text(best)} ({best['system']})"]
        by_system = {r["system"]: r for r in rows}
        for peer in peers:
            r = by_system.get(peer)
            ratio = ratio_of(r) if r else None
            cells.append(f"{ratio[0]:.2f}" if ratio else "")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def speedup_md(report, groups=("erlang", "savina")):
    """1 -> 2 workers (fibra-1 -> fibra) beside Erlang's one scheduler ->
    default (erlang-1 -> erlang), and the one-worker overhead (fibra-1 /
    fibra-ct), for the actor groups."""
    works = OrderedDict()
    for row in report["results"]:
        if row["group"] in groups:
            key = (row["group"], row["workload"], params_text(row["params"]))
            works.setdefault(key, {})[row["system"]] = row["median_s"]
    out = [
        "| group | workload | params | fibra 1 → 2 workers | erlang +S 1 → default | fibra-1 / fibra-ct |",
        "|---|---|---|---|---|---|",
    ]
    for (group, workload, params), t in works.items():
        def ratio(a, b):
            return f"{t[a] / t[b]:.2f}x" if a in t and b in t else ""
        out.append(
            f"| {group} | {workload} | {params} | {ratio('fibra-1', 'fibra')} "
            f"| {ratio('erlang-1', 'erlang')} | {ratio('fibra-1', 'fibra-ct')} |"
        )
    return "\n".join(out) + "\n" if len(out) > 2 else ""


def main():
    args = sys.argv[1:]
    commit = None
    if "--commit" in args:
        i = args.index("--commit")
        commit = args[i + 1]
        del args[i : i + 2]
    path = Path(args[0]) if args else ROOT / "target/fibra-bench/report.json"
    report = json.loads(path.read_text())
    if commit is None:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    (ROOT / "docs/bench/results.md").write_text(results_md(report, commit))
    sys.stdout.write(summary_md(report))
    speedups = speedup_md(report)
    if speedups:
        sys.stdout.write("\n" + speedups)
    threads = threads_md(report)
    if threads:
        sys.stdout.write("\n" + threads)


if __name__ == "__main__":
    main()
