#!/usr/bin/python3
"""What recording every free costs: the demo with and without --no-frees.

Regenerates the table of docs/benchmarks.md,
"What recording the frees costs: `bench/free_cost.py`":

    /usr/bin/python3 bench/free_cost.py

`allocsites record` of the demo with its defaults (every rt:free
recorded, for the peak, leaked and temporary figures) against
`--no-frees`.

  /usr/bin/python3 bench/free_cost.py [--runs N] [--size N]

Records $BUILD/minicc SIZE (default 500: 215,196 allocations, as many
frees) N times each way (default 5), interleaved, and prints a Markdown
table: the median (min-max) wall time of `allocsites record`, the
recording's size, and the events perf counted lost; then the cost per
free, (median with - median without) / frees. Needs root and perf.
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ALLOCSITES = os.path.join(ROOT, "scripts", "allocsites")
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
MINICC = os.path.join(BUILD, "minicc")
SUMMARY_RE = re.compile(r"recorded (\d+) alloc events(?: and (\d+) without "
                        r"a call graph[^;]*)?; lost: (\S+)")


def record(data, extra, size):
    cmd = ["/usr/bin/python3", ALLOCSITES, "record", "-o", data] + extra + \
        ["--", MINICC, str(size)]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, universal_newlines=True)
    wall = time.monotonic() - start
    m = SUMMARY_RE.search(proc.stderr)
    if proc.returncode != 0 or not m:
        raise SystemExit("free_cost: %s failed:\n%s" % (" ".join(cmd),
                                                         proc.stderr))
    return wall, os.path.getsize(data), int(m.group(2) or 0), m.group(3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", type=int, default=500)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not os.path.exists(MINICC):
        raise SystemExit("free_cost: %s is not built: run make" % MINICC)
    tmp = tempfile.mkdtemp(prefix="free-cost-")
    ways = (("defaults (frees recorded)", []), ("--no-frees", ["--no-frees"]))
    results = {name: [] for name, _ in ways}
    try:
        for i in range(args.runs):
            sys.stderr.write("free_cost: run %d of %d\n" % (i + 1, args.runs))
            for name, extra in ways:
                data = os.path.join(tmp, "run.data")
                results[name].append(record(data, extra, args.size))
                os.unlink(data)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("`allocsites record -- %s %d`, %d runs each way, interleaved; "
          "machine: %d cores, kernel %s" % (MINICC, args.size, args.runs,
                                           os.cpu_count(), os.uname().release))
    print()
    print("| recording | wall s, median (min-max) | MB, median | events "
          "without call graph | lost |")
    print("|---|---|---|---|---|")
    medians = {}
    for name, rows in results.items():
        walls = [r[0] for r in rows]
        medians[name] = statistics.median(walls)
        print("| %s | %.2f (%.2f-%.2f) | %.1f | %d | %s |" % (
            name, medians[name], min(walls), max(walls),
            statistics.median(r[1] for r in rows) / 1e6, rows[0][2],
            ", ".join(sorted({r[3] for r in rows}))))
    frees = results[ways[0][0]][0][2] - results[ways[1][0]][0][2]
    if frees > 0:
        print()
        print("cost per recorded free: %.2f us (%d frees)" % (
            1e6 * (medians[ways[0][0]] - medians[ways[1][0]]) / frees, frees))


if __name__ == "__main__":
    main()
