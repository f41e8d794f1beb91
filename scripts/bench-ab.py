#!/usr/bin/env python3
"""Compares two builds of fibra-bench row by row, alternating them.

    python3 scripts/bench-ab.py BASE NEW PASSES [fibra-bench arguments...]

BASE and NEW are fibra-bench executables (or the `target/release` folders
that hold them), for instance the current tree's and one built from a
`git worktree` of the commit to compare against. Each pass runs BASE, then
NEW, with the same arguments (filters, `--system`, `--runs`...), so that
both see the same state of a shared machine within minutes of each other.
The table gives each row's median ns/op in every pass, base then new.

Each run writes its report and charts where a fibra-bench run does
(`target/fibra-bench/`, replacing those of the last full run): keep a
full run's `report.json` elsewhere before comparing.

Example (the parasite rows of spawn-cost, three passes):

    git worktree add ../base HEAD~1
    (cd ../base && cargo build --release -p fibra-bench)
    python3 scripts/bench-ab.py ../base/target/release target/release 3 \\
        parasites/spawn-cost --system fibra-parasite --runs 5
"""

import json
import os
import subprocess
import sys


def executable(path):
    if os.path.isdir(path):
        path = os.path.join(path, "fibra-bench")
    if not os.access(path, os.X_OK):
        sys.exit(f"bench-ab: {path} is not an executable fibra-bench")
    return path


def run(exe, args):
    """One fibra-bench run; {row key: ns per op}."""
    out = subprocess.run(
        [exe, *args, "--json"], stdout=subprocess.PIPE, text=True, check=True
    ).stdout
    rows = {}
    for r in json.loads(out)["results"]:
        params = " ".join(f"{k}={v}" for k, v in sorted(r["params"].items()))
        key = f'{r["group"]}/{r["workload"]} [{params}] {r["system"]}'
        rows[key] = r["ns_per_op"]
    return rows


def main():
    if len(sys.argv) < 4 or not sys.argv[3].isdigit():
        sys.exit(__doc__)
    base, new = executable(sys.argv[1]), executable(sys.argv[2])
    passes, args = int(sys.argv[3]), sys.argv[4:]
    results = {"base": [], "new": []}
    for i in range(passes):
        for name, exe in (("base", base), ("new", new)):
            print(f"pass {i + 1}/{passes}: {name}", file=sys.stderr)
            results[name].append(run(exe, args))
    keys = []
    for rows in results["base"] + results["new"]:
        keys += [k for k in rows if k not in keys]
    width = max(len(k) for k in keys) if keys else 0
    print(f'{"row":<{width}}  base ns/op per pass  ->  new ns/op per pass')
    for k in keys:
        cells = {
            name: ", ".join(
                f"{rows[k]:.3g}" if k in rows else "-" for rows in results[name]
            )
            for name in results
        }
        print(f'{k:<{width}}  {cells["base"]}  ->  {cells["new"]}')


if __name__ == "__main__":
    main()
