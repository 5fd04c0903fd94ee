#!/usr/bin/python3
"""What perf record's own fixed cost is made of: the number of uprobe
events it records, and the size of its ring buffers.

  /usr/bin/python3 bench/perf_startup.py [--runs N]

Records $BUILD/tests/t_basic 0 (a handful of allocations) with the
wrapper's perf flags (-z --no-bpf-event --call-graph dwarf,8192):
  - with 1, 2, 3 and 4 uprobe events (sdt_rt:alloc, then free, exit and
    commit, each its own event, created with perf probe -f; the last
    three without a call graph), 128 MiB rings;
  - with one event and rings of 8, 128 and 256 MiB per CPU (-m 2048,
    32768, 65536).
N runs each (default 5), interleaved; prints the median (min-max) wall
time per row as Markdown, and the cost per extra event (the slope of the
first rows: closing a uprobe event waits for the kernel's uprobe
unregistration, docs/design.md). Needs root and perf; creates its own
events and deletes exactly those.
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
PROGRAM = [os.path.join(BUILD, "tests", "t_basic"), "0"]
PROBES = ("alloc", "free", "exit", "commit")
sys.path.insert(0, HERE)
from lib.quick import add_event, median_range, timed  # noqa: E402


def wall(cmd):
    return timed(cmd, dict(os.environ, TRUTH_FILE=os.devnull),
                 "perf_startup")[0]


def record(data, events, pages):
    cmd = ["perf", "record", "-q", "-o", data, "-m", str(pages), "-z",
           "--no-bpf-event", "--call-graph", "dwarf,8192", "-e", events[0]]
    for name in events[1:]:
        cmd += ["-e", "%s/call-graph=no/" % name]
    return cmd + ["--"] + PROGRAM


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not os.path.exists(PROGRAM[0]):
        raise SystemExit("perf_startup: %s is not built: run make"
                         % PROGRAM[0])
    tmp = tempfile.mkdtemp(prefix="perf-startup-")
    data = os.path.join(tmp, "run.data")
    events = []
    try:
        for probe in PROBES:
            events.append(add_event(os.path.join(tmp, "cache"), PROGRAM[0],
                                    probe, "perf_startup"))
        rows = [("%d event%s, 128 MiB rings" % (n, "" if n == 1 else "s"),
                 record(data, events[:n], 32768))
                for n in range(1, len(events) + 1)]
        rows += [("1 event, %d MiB rings" % (pages // 256),
                  record(data, events[:1], pages))
                 for pages in (2048, 65536)]
        walls = {name: [] for name, _ in rows}
        for i in range(args.runs):
            sys.stderr.write("perf_startup: run %d of %d\n"
                             % (i + 1, args.runs))
            for name, cmd in rows:
                walls[name].append(wall(cmd))
    finally:
        if events:
            subprocess.run(["perf", "probe", "-q"] +
                           [a for n in events for a in ("-d", n)],
                           check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    print("perf record of %s, %d runs each, interleaved; machine: %d cores, "
          "kernel %s" % (" ".join(PROGRAM), args.runs, os.cpu_count(),
                         os.uname().release))
    print()
    print("| perf record | wall s, median (min-max) |")
    print("|---|---|")
    for name, values in walls.items():
        print("| %s | %s |" % (name, median_range(values)))
    firsts = [statistics.median(walls[name]) for name, _ in rows[:4]]
    print()
    print("each further uprobe event: %.0f ms (median of the steps)"
          % (1000 * statistics.median(
              b - a for a, b in zip(firsts, firsts[1:]))))


if __name__ == "__main__":
    main()
