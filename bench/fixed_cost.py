#!/usr/bin/python3
"""The fixed cost of a recording: what `allocsites record` adds to a
program that does almost nothing, and where that time goes.

  /usr/bin/python3 bench/fixed_cost.py [--runs N]

Runs build/tests/t_basic 0 (a handful of allocations) N times (default
10) in each of these ways, interleaved, and prints the median and range
of the wall time of each as a Markdown table on stdout (progress on
stderr):

  native                  the program alone
  allocsites record       the whole wrapper: probe set-up, perf record,
                          clean-up, the summary line
  allocsites record --sample 512k
                          the same in sampled mode (rt:sample, its
                          smaller rings)
  perf record, defaults   raw perf record with the wrapper's flags, on
                          events created once beforehand
  perf record, sampled rings
                          the same with sampled mode's ring size
  perf record, old flags  the same with the flags before issue 15:
                          -m 65536 --call-graph dwarf,2048, BPF events on
  perf probe -x (add)     creating one event
  perf probe -d (delete)  deleting one event

Needs root and perf; creates its own events (perf probe -f: it reads the
names perf gives them) and deletes exactly those. Target (issue 15): the
whole `allocsites record` of such a program in at most 0.5 s.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib import recorder  # noqa: E402
sys.path.insert(0, HERE)
from lib.quick import WRAPPER_ENV, add_event, median_range, timed  # noqa: E402

ALLOCSITES = os.path.join(ROOT, "scripts", "allocsites")
PROGRAM = os.path.join(os.environ.get("BUILD", os.path.join(ROOT, "build")),
                       "tests", "t_basic")
ENV = dict(WRAPPER_ENV, TRUTH_FILE=os.devnull)


def run(cmd):
    return timed(cmd, ENV, "fixed_cost")


def new_event(cache, probe="alloc"):
    return add_event(cache, PROGRAM, probe, "fixed_cost")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    # SIGTERM unwinds through the finally that deletes the probe event.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not os.path.exists(PROGRAM):
        raise SystemExit("fixed_cost: %s is not built: run make" % PROGRAM)
    tmp = tempfile.mkdtemp(prefix="fixed-cost-")
    cache = os.path.join(tmp, "cache")
    data = os.path.join(tmp, "run.data")
    own = []
    try:
        own += [new_event(cache), new_event(cache, "exit")]
        alloc, exit_ = own
        prog = [PROGRAM, "0"]
        new = recorder.record_command("perf", data, [alloc], [exit_],
                                      recorder.DEFAULT_STACK_SIZE, prog)
        small = recorder.record_command("perf", data, [alloc], [exit_],
                                        recorder.DEFAULT_STACK_SIZE, prog,
                                        rings=recorder.RINGS_SAMPLED)
        old = ["perf", "record", "-o", data, "-m", "65536", "--call-graph",
               "dwarf,2048", "-e", alloc, "--"] + prog
        ways = [
            ("native", lambda: run(prog)),
            ("allocsites record", lambda: run(
                ["/usr/bin/python3", ALLOCSITES, "record", "-o", data, "--"] +
                prog)),
            ("allocsites record --sample 512k", lambda: run(
                ["/usr/bin/python3", ALLOCSITES, "record", "-o", data,
                 "--sample", "512k", "--"] + prog)),
            ("perf record, defaults", lambda: run(new)),
            ("perf record, sampled rings", lambda: run(small)),
            ("perf record, old flags", lambda: run(old)),
        ]

        def add_delete():
            start = time.monotonic()
            name = new_event(cache)
            added = time.monotonic() - start
            start = time.monotonic()
            subprocess.run(["perf", "probe", "-q", "-d", name], check=True)
            return added, time.monotonic() - start

        ways[1][1]()   # fills __pycache__ (see ENV)
        walls = {name: [] for name, _ in ways}
        walls["perf probe -x (add)"] = []
        walls["perf probe -d (delete)"] = []
        for i in range(args.runs):
            sys.stderr.write("fixed_cost: run %d of %d\n" % (i + 1, args.runs))
            for name, way in ways:
                walls[name].append(way()[0])
            added, deleted = add_delete()
            walls["perf probe -x (add)"].append(added)
            walls["perf probe -d (delete)"].append(deleted)
    finally:
        if own:
            subprocess.run(["perf", "probe", "-q"] +
                           [a for n in own for a in ("-d", n)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    print("program: %s 0; %d runs each, interleaved; machine: %d cores, "
          "kernel %s" % (PROGRAM, args.runs, os.cpu_count(), os.uname().release))
    print()
    print("| what | wall s, median (min-max) |")
    print("|---|---|")
    for name, values in walls.items():
        print("| %s | %s |" % (name, median_range(values)))


if __name__ == "__main__":
    main()
