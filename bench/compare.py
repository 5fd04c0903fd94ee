#!/usr/bin/python3
"""allocsites against the tools a user would pick instead, on one workload.

Regenerates the table of docs/benchmarks.md,
"Side by side: `bench/compare.py`":

    /usr/bin/python3 bench/compare.py

  bench/compare.py [--allocs N] [--runs N] [--threads 1,4] [--only NAMES]

The workload is bench/storm (a compiler front end's allocation storm on
the reference allocator; it computes its own per-site truth). Each
contender records the same storm in the same run, the contenders
interleaved run by run:
  uninstrumented             storm built with -DRT_PROBES_DISABLE
  probes compiled in, not recorded
  allocsites exact           allocsites record, then report --json
  allocsites sampled 512k / 64k
  heaptrack                  heaptrack_malloc/heaptrack_free in rt_alloc
  bpftrace                   usdt:rt:alloc with ustack, frame pointers
  massif                     VALGRIND_MALLOCLIKE_BLOCK/FREELIKE_BLOCK
Per contender: the recording's wall time (median of --runs, min-max) and
its ratio to the uninstrumented run, the storm's own time for its work
(elapsed_ns: no tool start-up, no writing of output at exit), the
analysis time and output size (first run), the peak RSS (largest process,
median), events lost in each run ("-": the tool has no loss counter), and
the share of allocations and of bytes charged
to the right file:line (lib/score.py). Prints Markdown. Run as root on an
otherwise idle machine.
"""

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lib import score  # noqa: E402
from lib.build import build_storm  # noqa: E402
from lib.measure import run  # noqa: E402
from lib.contenders import all_contenders  # noqa: E402


def program_seconds(stdout):
    m = re.search(r"elapsed_ns=(\d+)", stdout)
    return int(m.group(1)) / 1e9 if m else None


def truth_for(argv, tmp):
    path = os.path.join(tmp, "truth.json")
    run(argv, env=dict(os.environ, TRUTH_FILE=path))
    return score.load_truth(path)


def first_run(contender, run_result, tmp):
    """Analysis time, output size, lost and attribution, from one run."""
    row = {}
    if contender.analyze is None:
        return row
    cmd = contender.analyze(tmp)
    analyze_run = run(cmd) if cmd else None
    row["analysis"] = analyze_run.wall if analyze_run else None
    row["output"] = sum(os.path.getsize(p) for p in contender.outputs(tmp)
                        if os.path.exists(p))
    row["profile"], row["lost"] = contender.profile(tmp, run_result,
                                                    analyze_run)
    row.update(getattr(contender, "notes", {}))
    return row


def measure(contenders, argv, runs, scratch, analyze=lambda c: True):
    """-> {name: row}: row has walls, programs, rss, record_lost (what
    the recorder itself says, if it says) and, for the contenders for
    which analyze(contender) is true, first_run's keys."""
    binaries = {}
    rows = {c.name: {"walls": [], "programs": [], "rss": []}
            for c in contenders}
    for i in range(runs):
        for c in contenders:
            if c.variant not in binaries:
                binaries[c.variant] = build_storm(c.variant)
            tmp = tempfile.mkdtemp(prefix="compare-", dir=scratch)
            try:
                cmd, env = c.record([binaries[c.variant]] + argv, tmp)
                r = run(cmd, env=dict(os.environ, **(env or {})), cwd=tmp)
                row = rows[c.name]
                row["walls"].append(r.wall)
                row["programs"].append(program_seconds(r.stdout + r.stderr))
                row["rss"].append(r.maxrss_kb)
                if hasattr(c, "record_lost"):
                    row.setdefault("record_lost", []).append(
                        c.record_lost(r, tmp))
                if i == 0 and analyze(c):
                    row.update(first_run(c, r, tmp))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            print("  %s run %d: %s %.2f s" % (" ".join(argv), i + 1, c.name,
                                               r.wall), file=sys.stderr)
    return rows


def fmt_spread(values, digits=2):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    f = "%%.%df" % digits
    return (f + " (" + f + "-" + f + ")") % (
        statistics.median(values), min(values), max(values))


def share(x):
    return "-" if x is None else "%.2f%%" % (100 * x)


def print_table(contenders, rows, truth):
    base = statistics.median(rows[contenders[0].name]["walls"])
    base_work = statistics.median(rows[contenders[0].name]["programs"])
    print("| contender | record wall s, median (min-max) | x uninstrumented "
          "| storm's own work s | x uninstrumented | analysis s "
          "| peak RSS MB | output MB | lost | allocations at right line "
          "| bytes at right line |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in contenders:
        row = rows[c.name]
        wall = statistics.median(row["walls"])
        prof = row.get("profile")
        if prof is None:
            counts = bytes_ = "-"
        elif getattr(c, "peak_only", False):
            counts = "n/a (no counts)"
            peak = score.peak_attribution(prof, truth)
            bytes_ = ("n/a (threads)" if peak is None
                      else share(peak) + " at peak")
        else:
            a, b = score.attribution(prof, truth)
            counts, bytes_ = share(a), share(b)
        print("| %s | %s | %.1f | %s | %.1f | %s | %.0f | %s | %s | %s | %s |"
              % (
            c.name, fmt_spread(row["walls"]), wall / base,
            fmt_spread(row["programs"], 3),
            statistics.median(row["programs"]) / base_work,
            "-" if row.get("analysis") is None else "%.1f" % row["analysis"],
            statistics.median(row["rss"]) / 1024,
            "-" if row.get("output") is None else "%.1f" % (row["output"] / 1e6),
            lost_column(row), counts, bytes_))


def lost_column(row):
    """Every run's loss where the tool counts it per run, else the
    analyzed run's; "-" for a tool without a loss counter."""
    if row.get("record_lost"):
        return " ".join(str(n) for n in row["record_lost"])
    lost = row.get("lost")
    return "-" if lost is None else str(lost)


def machine():
    perf = subprocess.run(["perf", "--version"], stdout=subprocess.PIPE,
                          universal_newlines=True).stdout.strip()
    return "%d cores, kernel %s, %s" % (os.cpu_count(), platform.release(),
                                        perf)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--allocs", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--only", help="comma-separated contender names "
                    "(substrings); the uninstrumented run is always in")
    args = ap.parse_args()
    contenders = all_contenders()
    if args.only:
        keys = args.only.split(",")
        contenders = [c for c in contenders if c is contenders[0] or
                      any(k in c.name for k in keys)]
    print("machine: " + machine())
    scratch = tempfile.mkdtemp(prefix="allocsites-compare-")
    try:
        for threads in [int(t) for t in args.threads.split(",")]:
            argv = [str(args.allocs), str(threads), str(args.depth)]
            truth = truth_for([build_storm("plain")] + argv, scratch)
            print("\n### storm %s: %d allocations, %d bytes, %d thread%s, "
                  "depth %d; %d runs\n" % (
                      " ".join(argv), truth["count"], truth["bytes"],
                      threads, "" if threads == 1 else "s", args.depth,
                      args.runs))
            sys.stdout.flush()
            rows = measure(contenders, argv, args.runs, scratch)
            print_table(contenders, rows, truth)
            sys.stdout.flush()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
