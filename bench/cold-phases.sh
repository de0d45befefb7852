#!/bin/bash
# Phase timings of the cold path: median (and p90) of N runs of
# `hutch run --json` for /bin/true and a Python one-liner, plus the end-to-end
# time of the whole `hutch run` process.
# usage: bench/cold-phases.sh [N]   (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100}
H=build/hutch
PY=/usr/bin/python3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

bench() {
	local name=$1
	shift
	for _ in $(seq 5); do $H run --json -- "$@" >/dev/null; done
	: >"$out/$name.jsonl"
	: >"$out/$name.e2e"
	for _ in $(seq "$N"); do
		local t0 t1
		t0=$(date +%s%N)
		$H run --json -- "$@" >>"$out/$name.jsonl"
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) >>"$out/$name.e2e"
	done
}
bench true /bin/true
bench python /usr/bin/python3 -c 'print(sum(range(1000)))'
"$PY" - "$out" "$N" <<'PYEOF'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))]
print(f"cold path, {n} runs each, µs: median (p90)")
print(f"{'workload':<10} {'acquire':>14} {'setup':>14} {'run':>14} {'teardown':>14} {'end to end':>16}")
for name in ("true", "python"):
    rows = [json.loads(l)["timings"] for l in open(f"{out}/{name}.jsonl")]
    e2e = [int(l) for l in open(f"{out}/{name}.e2e")]
    cols = []
    for k in ("acquire_us", "setup_us", "run_us", "teardown_us"):
        xs = [r[k] for r in rows]
        cols.append(f"{int(statistics.median(xs))} ({q(xs, .9)})")
    cols.append(f"{int(statistics.median(e2e))} ({q(e2e, .9)})")
    print(f"{name:<10} " + " ".join(f"{c:>14}" for c in cols[:4]) + f" {cols[4]:>16}")
PYEOF
