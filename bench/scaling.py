#!/usr/bin/python3
"""How recording cost grows with allocation count and with stack depth.

Regenerates the table of docs/benchmarks.md,
"How the cost grows: `bench/scaling.py`":

    /usr/bin/python3 bench/scaling.py

  bench/scaling.py [--counts 100000,1000000,10000000] [--depths 4,16,64,256]
                   [--depth-allocs 200000] [--report-max 1000000]

The storm (bench/storm), one thread, recorded once per cell by:
uninstrumented, allocsites exact, allocsites sampled 512k, heaptrack,
bpftrace and massif (the contenders of bench/compare.py). The figure is
the recording cost per allocation: the storm's own time for its work
(elapsed_ns: no tool start-up, no output written at exit) divided by its
allocations, in ns. Loss is what each tool says; allocsites exact is
also reported (analysis time, attribution, truncated stacks) up to
--report-max allocations: beyond, its report takes minutes (10k to 20k
samples per second, bench/report_throughput.py) and only the recording
is measured. An exact recording of 10M allocations writes about 23 GB
of perf.data; it is deleted as soon as it is measured.
"""

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import machine, measure, share, truth_for  # noqa: E402
from lib import score  # noqa: E402
from lib.build import build_storm  # noqa: E402
from lib.tool_allocsites import Allocsites, Plain  # noqa: E402
from lib.tool_bpftrace import Bpftrace  # noqa: E402
from lib.tool_heaptrack import Heaptrack  # noqa: E402
from lib.tool_massif import Massif  # noqa: E402


def contenders():
    return [Plain(), Allocsites(), Allocsites("512k"), Heaptrack(),
            Bpftrace(), Massif()]


def cell(row, allocs, name, truth):
    ns = row["programs"][0] * 1e9 / allocs
    notes = []
    lost = (row.get("record_lost") or [row.get("lost")])[0]
    if lost not in (None, 0, "0"):
        notes.append("lost %s" % lost)
    prof = row.get("profile")
    if prof is not None and not name.startswith("valgrind"):
        a, _ = score.attribution(prof, truth)
        if a is not None and a < 0.9999:
            notes.append("%s right" % share(a))
    return "%.0f%s" % (ns, " (%s)" % ", ".join(notes) if notes else "")


def table(title, label, keys, argvs, report_max, scratch, extra=None):
    cs = contenders()
    results = []
    for key, argv in zip(keys, argvs):
        truth = truth_for([build_storm("plain")] + argv, scratch)
        # allocsites exact's report is the one that takes minutes.
        rows = measure(cs, argv, 1, scratch, analyze=lambda c: (
            c.name != Allocsites().name or truth["count"] <= report_max))
        results.append((key, truth, rows))
    print("\n### %s\n" % title)
    print("| %s | allocations | " % label +
          " | ".join(c.name for c in cs) + " |")
    print("|---" * (len(cs) + 2) + "|")
    for key, truth, rows in results:
        print("| %s | %d | " % (key, truth["count"]) + " | ".join(
            cell(rows[c.name], truth["count"], c.name, truth) for c in cs)
            + " |")
    if extra:
        extra(results)
    sys.stdout.flush()


def exact_report(results):
    """allocsites exact: what depth does to its report."""
    print("\nallocsites exact, the report of the same recordings:\n")
    print("| expression depth | report s | samples/s | allocations with "
          "truncated stacks |")
    print("|---|---|---|---|")
    for key, truth, rows in results:
        row = rows[Allocsites().name]
        if row.get("analysis"):
            print("| %s | %.1f | %.0f | %s |" % (
                key, row["analysis"], truth["count"] / row["analysis"],
                row.get("truncated", "-")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default="100000,1000000,10000000")
    ap.add_argument("--depths", default="4,16,64,256")
    ap.add_argument("--depth-allocs", type=int, default=200000)
    ap.add_argument("--report-max", type=int, default=1100000)
    args = ap.parse_args()
    print("machine: " + machine())
    print("\nns of the storm's own work per allocation, while recorded "
          "(one run per cell; in brackets: loss, and the share of "
          "allocations at the right line when below 100%; allocsites "
          "exact is not reported above --report-max allocations, only "
          "its loss)")
    scratch = tempfile.mkdtemp(prefix="allocsites-scaling-")
    try:
        counts = [int(n) for n in args.counts.split(",")]
        table("By allocation count (depth 12)", "storm ALLOCS", counts,
              [[str(n), "1", "12"] for n in counts], args.report_max, scratch)
        depths = [int(d) for d in args.depths.split(",")]
        table("By stack depth (%d allocations)" % args.depth_allocs,
              "expression depth", depths,
              [[str(args.depth_allocs), "1", str(d)] for d in depths],
              args.report_max, scratch, extra=exact_report)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
