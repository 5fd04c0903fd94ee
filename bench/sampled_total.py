#!/usr/bin/python3
"""Sampled mode, everything included, against the program run alone.

Regenerates the table of docs/benchmarks.md,
"Sampled mode, everything included: `bench/sampled_total.py`":

    /usr/bin/python3 bench/sampled_total.py --runs 5 --size 120000

The wall time of `allocsites
record --sample RATE -- PROG` (probe set-up, perf's start and exit, the
program, clean-up) against the program run alone, as issue 15's third
target counts it (at most 1.10x for a ~4 s allocation-heavy run).

  /usr/bin/python3 bench/sampled_total.py [--runs N] [--size N] [--rate R]

PROG is $BUILD/minicc SIZE (default 50000: a compiler front end making
about 21M allocations, a few seconds natively). N runs each (default 3),
interleaved; prints the median (min-max) wall times and their ratio as a
Markdown table. Needs root and perf; run on an otherwise idle machine.
bench/sampled_overhead.py measures the program's own time instead
(perf's start and exit excluded) with an uninstrumented build beside it.
"""

import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ALLOCSITES = os.path.join(ROOT, "scripts", "allocsites")
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
# Timed as a user's machine runs it: Python's bytecode cache on
# (bench/lib/quick.py says why).
sys.path.insert(0, HERE)
from lib.quick import WRAPPER_ENV, median_range, timed  # noqa: E402


def wall(cmd):
    return timed(cmd, WRAPPER_ENV, "sampled_total")[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", type=int, default=50000)
    ap.add_argument("--rate", default="512k")
    args = ap.parse_args()
    prog = [os.path.join(BUILD, "minicc"), str(args.size)]
    if not os.path.exists(prog[0]):
        raise SystemExit("sampled_total: %s is not built: run make" % prog[0])
    with tempfile.TemporaryDirectory(prefix="sampled-total-") as tmp:
        data = os.path.join(tmp, "run.data")
        record = ["/usr/bin/python3", ALLOCSITES, "record", "-o", data,
                  "--sample", args.rate, "--"] + prog
        wall(record)   # fills __pycache__ and the page cache
        plain, sampled = [], []
        for i in range(args.runs):
            sys.stderr.write("sampled_total: run %d of %d\n"
                             % (i + 1, args.runs))
            plain.append(wall(prog))
            sampled.append(wall(record))
    p, s = statistics.median(plain), statistics.median(sampled)
    print("`%s` alone and under `allocsites record --sample %s`, %d runs "
          "each, interleaved; machine: %d cores, kernel %s"
          % (" ".join(prog), args.rate, args.runs, os.cpu_count(),
             os.uname().release))
    print()
    print("| run | wall s, median (min-max) |")
    print("|---|---|")
    print("| program alone | %s |" % median_range(plain, 2))
    print("| allocsites record --sample %s | %s |"
          % (args.rate, median_range(sampled, 2)))
    print()
    print("everything included: %.2fx the program alone" % (s / p))


if __name__ == "__main__":
    main()
