"""Tables for bench/run.sh, from the raw samples it left in a directory.

usage: /usr/bin/python3 bench/report.py RAWDIR

RAWDIR holds:
  header.txt           printed first, as it is
  workloads.tsv        KEY<TAB>CODE, one line per workload
  rows.tsv             ID<TAB>LABEL<TAB>NOTE; NOTE empty when the row ran, else why not
  ID.KEY.txt           one line per measured run (bench-client's format:
                       ok total_us acquire_us setup_us run_us teardown_us path)
  tp.KEY.txt           throughput lines: clients ok fail seconds execs_per_s p50_us p99_us
  notes.txt            printed last, as it is (optional)
"""

import math
import os
import sys

FAST = "socket"  # the row every ratio is taken against
PLAIN = "plain"
PHASES = ("acquire_us", "setup_us", "run_us", "teardown_us")


def quantile(sorted_xs, q):
    """Nearest-rank quantile (p99 of 200 samples is the 198th smallest)."""
    if not sorted_xs:
        return None
    rank = max(1, min(len(sorted_xs), math.ceil(q * len(sorted_xs) - 1e-9)))
    return sorted_xs[rank - 1]


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def read_samples(path):
    """[(ok, total_us, [phases], path)] from a bench-client OUT file."""
    runs = []
    with open(path, encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 7:
                continue
            runs.append((parts[0] == "1", int(parts[1]), [int(x) for x in parts[2:6]],
                         parts[6]))
    return runs


def ms(us):
    if us is None:
        return "-"
    v = us / 1000
    if v < 10:
        return f"{v:.2f}"
    if v < 100:
        return f"{v:.1f}"
    return f"{v:.0f}"


def ratio(a, b):
    if a is None or not b:
        return "n/a"
    r = a / b
    return f"{r:.2f}x" if r < 10 else f"{r:.0f}x"


def main():
    raw = sys.argv[1]
    workloads = read_tsv(os.path.join(raw, "workloads.tsv"))
    rows = read_tsv(os.path.join(raw, "rows.tsv"))
    out = []
    header = os.path.join(raw, "header.txt")
    if os.path.exists(header):
        with open(header, encoding="utf-8") as f:
            out.append(f.read().rstrip("\n"))
        out.append("")

    stats = {}  # (row id, workload) -> dict
    for rid, _label, note in rows:
        if note:
            continue
        for key, _code in workloads:
            path = os.path.join(raw, f"{rid}.{key}.txt")
            if not os.path.exists(path):
                continue
            runs = read_samples(path)
            good = sorted(r[1] for r in runs if r[0])
            phases = {}
            for i, name in enumerate(PHASES):
                vals = [r[2][i] for r in runs if r[0] and r[2][i] >= 0]
                phases[name] = median(vals)
            stats[(rid, key)] = {"n": len(good), "fail": len(runs) - len(good),
                                 "median": median(good), "p99": quantile(good, 0.99),
                                 "phases": phases}

    label_w = max([len(r[1]) for r in rows] + [20])
    failures = []
    for key, code in workloads:
        fast = stats.get((FAST, key))
        plain = stats.get((PLAIN, key))
        out.append(f"workload {key}: {code}")
        out.append(f"{'':<{label_w}}  {'median ms':>10} {'p99 ms':>9} {'vs fast':>8} "
                   f"{'vs plain':>10} {'runs':>6}")
        for rid, label, note in rows:
            if note:
                out.append(f"{label:<{label_w}}  {note}")
                continue
            st = stats.get((rid, key))
            if not st:
                out.append(f"{label:<{label_w}}  (not run)")
                continue
            runs = f"{st['n']}" + (f"!{st['fail']}" if st["fail"] else "")
            out.append(f"{label:<{label_w}}  {ms(st['median']):>10} {ms(st['p99']):>9} "
                       f"{ratio(st['median'], fast and fast['median']):>8} "
                       f"{ratio(st['median'], plain and plain['median']):>10} {runs:>6}")
            if st["fail"]:
                failures.append(f"{label}, workload {key}: {st['fail']} failed runs "
                                f"(left out of the statistics)")
        out.append("")
    out.append("vs fast, vs plain: this median / the median of hutch's fast path over the "
               "socket, / that of the interpreter with no isolation")
    out.append("runs: runs that passed the output check (!N: N more failed it)")
    if not any(k[0] == FAST for k in stats):
        out.append("(the fast path did not run, so there is no ratio to it)")
    out.extend(failures)

    # Throughput over the socket.
    tp = {}
    for key, _code in workloads:
        for parts in read_tsv(os.path.join(raw, f"tp.{key}.txt")):
            fields = parts[0].split()
            if len(fields) == 7:
                tp[(key, int(fields[0]))] = fields
    if tp:
        out.append("")
        out.append("throughput over the socket (each client: one keep-alive connection, "
                   "one request at a time)")
        head = f"{'clients':>8}"
        for key, _code in workloads:
            head += f"  | {'workload ' + key + ': execs/s':>18} {'p50 ms':>8} {'p99 ms':>8} {'fail':>5}"
        out.append(head)
        for c in sorted({c for (_k, c) in tp}):
            line = f"{c:>8}"
            for key, _code in workloads:
                f = tp.get((key, c))
                if not f:
                    line += f"  | {'-':>18} {'-':>8} {'-':>8} {'-':>5}"
                    continue
                line += (f"  | {float(f[4]):>18.1f} {ms(int(f[5])):>8} {ms(int(f[6])):>8} "
                         f"{f[2]:>5}")
            out.append(line)

    # Per-phase medians from the ExecResult timings.
    phase_rows = [(rid, label) for rid, label, note in rows
                  if not note and any(stats.get((rid, k), {}).get("phases", {}).get("run_us")
                                      is not None for k, _c in workloads)]
    if phase_rows:
        out.append("")
        out.append("phases from the ExecResult \"timings\" (medians, µs) and the end-to-end "
                   "median seen by the client")
        out.append(f"{'':<{label_w}}  {'wl':>2} {'acquire':>8} {'setup':>8} {'run':>8} "
                   f"{'teardown':>8} {'end to end':>11}")
        for rid, label in phase_rows:
            for key, _code in workloads:
                s = stats.get((rid, key))
                if not s:
                    continue
                ph = s["phases"]
                cells = " ".join(f"{'-' if ph[p] is None else int(ph[p]):>8}" for p in PHASES)
                e2e = "-" if s["median"] is None else int(s["median"])
                out.append(f"{label:<{label_w}}  {key:>2} {cells} {e2e:>11}")

    notes = os.path.join(raw, "notes.txt")
    if os.path.exists(notes):
        with open(notes, encoding="utf-8") as f:
            text = f.read().strip()
        if text:
            out.append("")
            out.append(text)
    print("\n".join(out))


if __name__ == "__main__":
    main()
