#!/usr/bin/python3
"""Report throughput: samples per second of `allocsites report` against
perf's own tools, on the same perf.data.

  bench/report_throughput.py [--allocs N] [--depth N]

Records the storm once, exactly (`allocsites record`: every allocation a
sample, 2048 bytes of stack each), then times, on that file:
  allocsites report --json     unwinds, folds, symbolizes to file:line
                               with inlined frames (addr2line), renders
  perf script                  perf's text output: unwinding, symbol names
                               and inlined frames (its default --inline)
  perf script --no-inline      the same without inlined frames
  perf script -s bench/stackcollapse_sdt.py
                               perf's own stackcollapse.py (folded
                               stacks, function names), with the one
                               handler it lacks for sdt events: unchanged,
                               it prints nothing for them (the script
                               says so, counting its output lines)
Each is run once; the rate is the samples in the file over wall seconds.
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lib.build import build_storm  # noqa: E402
from lib.measure import run  # noqa: E402
from lib.tool_allocsites import ALLOCSITES  # noqa: E402

STACKCOLLAPSE = "/usr/lib/perf-core/scripts/python/stackcollapse.py"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--allocs", type=int, default=200000)
    ap.add_argument("--depth", type=int, default=12)
    args = ap.parse_args()
    prog = build_storm("probes")
    tmp = tempfile.mkdtemp(prefix="allocsites-throughput-")
    try:
        data = os.path.join(tmp, "perf.data")
        rec = run(ALLOCSITES + ["record", "-o", data, "--", prog,
                                str(args.allocs), "1", str(args.depth)])
        m = re.search(r"recorded (\d+) alloc events; lost: (\S+)", rec.stderr)
        if not m:
            raise SystemExit("bench: no summary from allocsites record:\n"
                             + rec.stderr)
        samples, lost = int(m.group(1)), m.group(2)
        tools = [
            ("allocsites report --json", ALLOCSITES + [
                "report", "-i", data, "--json", os.path.join(tmp, "r.json")]),
            ("perf script", ["perf", "script", "-i", data]),
            ("perf script --no-inline", ["perf", "script", "--no-inline",
                                         "-i", data]),
            ("perf script -s stackcollapse.py (+ trace_unhandled)", [
                "perf", "script", "-i", data, "-s",
                os.path.join(HERE, "stackcollapse_sdt.py")]),
        ]
        print("storm %d 1 %d recorded exactly: %d samples, lost %s, "
              "perf.data %.0f MB\n" % (args.allocs, args.depth, samples, lost,
                                       os.path.getsize(data) / 1e6))
        print("| tool | wall s | samples/s | peak RSS MB |")
        print("|---|---|---|---|")
        for name, cmd in tools:
            r = run(cmd, cwd=tmp, discard_stdout=True)
            print("| %s | %.1f | %.0f | %.0f |" % (
                name, r.wall, samples / r.wall, r.maxrss_kb / 1024))
            sys.stdout.flush()
        unchanged = run(["perf", "script", "-i", data, "-s", STACKCOLLAPSE])
        print("\nperf's stackcollapse.py unchanged, on the same file: %d lines "
              "of output (it has no handler for tracepoint events)"
              % len(unchanged.stdout.splitlines()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
