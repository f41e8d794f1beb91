#!/usr/bin/env bash
# Runs fibra's loom models (the `loom_*` tests of the library, built with
# `--cfg loom`), each in a process of its own, as many at once as there are
# cores.
#
# Usage: bash scripts/loom.sh [FILTER]
#   FILTER selects models by name as `cargo test` does (default `loom_`,
#   every model). LOOM_JOBS sets how many run at once (default: the number
#   of cores); LOOM_MAX_PREEMPTIONS overrides the models' preemption bounds.
#
# Why processes and not test threads: loom runs each model thread on a
# stack of its own, mapped and unmapped for every execution it explores, so
# a model spends more time in the kernel than in user space; two models in
# one process contend for its memory map, and each runs 1.5 to 4 times as
# long as it does alone (on this machine kind: the runtime's shutdown model
# 367 s against 235 s, the choice of two partners 211 s against 59 s).
# Apart, they do not.
set -euo pipefail
cd "$(dirname "$0")/.."

filter="${1:-loom_}"
jobs="${LOOM_JOBS:-$(nproc)}"
export RUSTFLAGS="--cfg loom"

# Build once and find the library's test executable.
bin="$(cargo test -p fibra --release --lib --no-run --message-format=json |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and t.get("name") == "fibra" and "lib" in t.get("kind", []):
        print(m["executable"])
')"
if [ -z "$bin" ]; then
  echo "loom.sh: no test executable for fibra's library" >&2
  exit 1
fi

# The whole-runtime models (`rt::`) first: they are the longest (minutes),
# and started first they overlap with the rest.
listed="$("$bin" "$filter" --list | sed -n 's/: test$//p')"
models="$(grep '^rt::' <<<"$listed" || true)
$(grep -v '^rt::' <<<"$listed" || true)"
models="$(sed '/^$/d' <<<"$models")"
count="$(grep -c . <<<"$models" || true)"
if [ "$count" -eq 0 ]; then
  echo "loom.sh: no model matches '$filter'" >&2
  exit 1
fi
echo "loom.sh: $count models, $jobs at a time"

# One model: its own process, run from the package's directory as `cargo
# test` would; prints its name, outcome and time, and its output if it
# failed.
run_one() {
  local name="$1" start out status
  start=$(date +%s)
  out="$(cd fibra && "$bin" --exact "$name" --test-threads=1 -q 2>&1)" && status=0 || status=$?
  if [ "$status" -eq 0 ]; then
    printf '%s ... ok (%d s)\n' "$name" "$(($(date +%s) - start))"
  else
    printf '%s ... FAILED (%d s)\n%s\n' "$name" "$(($(date +%s) - start))" "$out"
  fi
  return "$status"
}
export -f run_one
export bin

start=$(date +%s)
if printf '%s\n' "$models" | xargs -P "$jobs" -I{} bash -c 'run_one "$1"' _ {}; then
  echo "loom.sh: $count models passed in $(($(date +%s) - start)) s"
else
  echo "loom.sh: a model failed (above)" >&2
  exit 1
fi
