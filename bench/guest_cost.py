#!/usr/bin/python3
"""What a guest location costs per event while recording.

Regenerates the table of docs/probes.md, "Guest locations", "What it
costs":

    /usr/bin/python3 bench/guest_cost.py [--events 100000] [--runs 3]

Records bench/guest_cost.c (its own loop timed, so perf's start and end
do not count) with `allocsites record --unwind none` in three modes:
rt:alloc without a guest location, rt:alloc with one (RT_ALLOC_GUEST, 16
locations defined once each), and rt:guest definitions alone (each a
new id, its two names copied by the uprobe's string fetch). Prints the
median microseconds per event of --runs runs, and the program alone.
The cost when nothing records is counted by bench/offcost_callgrind.py.
Run as root (perf).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib.build import build  # noqa: E402

ALLOCSITES = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites")]
ELAPSED = re.compile(r"guest_cost: \w+ \d+ elapsed_ns=(\d+)")


def elapsed(argv):
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    m = ELAPSED.search(out.stdout)
    if out.returncode != 0 or not m:
        sys.exit("guest_cost: %s failed: %s" % (" ".join(argv),
                                                out.stderr.strip()[-300:]))
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    prog = build("guest_cost", [os.path.join(HERE, "guest_cost.c")],
                 rtalloc=False)
    rows = []
    with tempfile.TemporaryDirectory(prefix="allocsites-guest-") as tmp:
        data = os.path.join(tmp, "g.data")
        for mode in ("plain", "guest", "define"):
            alone = statistics.median(
                elapsed([prog, mode, str(args.events)])
                for _ in range(args.runs))
            recorded = statistics.median(
                elapsed(ALLOCSITES + ["record", "--unwind", "none", "-o",
                                      data, "--", prog, mode,
                                      str(args.events)])
                for _ in range(args.runs))
            rows.append((mode, alone / args.events / 1000.0,
                         recorded / args.events / 1000.0))
    uname = os.uname()
    print("Machine: %s, %d CPUs, %s; `bench/guest_cost.py --events %d "
          "--runs %d`." % (uname.nodename, os.cpu_count(), uname.release,
                            args.events, args.runs))
    print()
    print("| events | alone (us/event) | recorded (us/event) |")
    print("|---|---:|---:|")
    names = {"plain": "rt:alloc, no guest location",
             "guest": "rt:alloc with a guest location (RT_ALLOC_GUEST)",
             "define": "rt:guest, a new location's definition"}
    for mode, alone, recorded in rows:
        print("| %s | %.3f | %.2f |" % (names[mode], alone, recorded))


if __name__ == "__main__":
    main()
