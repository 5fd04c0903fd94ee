#!/usr/bin/python3
"""Exact mode under a burst: does recording lose events, and does the
report keep up?

  bench/exact_burst.py [--runs N] [--pairs N] [--depth N]
                       [--stack-sizes 2048,4096,8192] [--no-frees]

Builds bench/burst (rt_alloc+rt_free pairs as fast as it can, DEPTH frames
deep; default 750000 pairs = the 1.5 million alloc+free events of the
issue), then for each stack size records it N times with
`allocsites record` (the wrapper's own options) and reports once:
  - record wall time (median, min, max) of allocsites record, which
    includes probe setup and perf's start;
  - events lost per run (the summary line of allocsites record; the
    frees are recorded, as by default, unless --no-frees);
  - report wall time of `allocsites report` and its samples per second,
    next to plain `perf script` (text, no Python) on the same file;
  - whether the report's totals equal the program's own truth.
Prints a Markdown table. Run as root on an otherwise idle machine: loss
depends on how much CPU perf's writer gets.
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lib.build import build  # noqa: E402
ROOT = os.path.dirname(HERE)
ALLOCSITES = [sys.executable, os.path.join(ROOT, "scripts", "allocsites")]


def timed(cmd, **kw):
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, **kw)
    return time.monotonic() - start, proc


# allocsites record's summary: allocations, then the events without a
# call graph (frees, rt:exit and its padding, ...), then the loss.
SUMMARY_RE = re.compile(r"recorded (\d+) alloc events(?: and (\d+) without "
                        r"a call graph[^;]*)?; lost: (\S+)")


def lost_and_recorded(stderr):
    m = SUMMARY_RE.search(stderr)
    if not m:
        raise SystemExit("bench: no summary from allocsites record:\n" + stderr)
    return int(m.group(1)), int(m.group(2) or 0), m.group(3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=750000)
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--stack-sizes", default="2048,4096,8192")
    ap.add_argument("--no-frees", action="store_true",
                    help="do not record rt:free (allocsites record "
                    "--no-frees)")
    args = ap.parse_args()
    prog = build("burst", [os.path.join(HERE, "burst.c")])
    truth = subprocess.run([prog, str(args.pairs), str(args.depth)],
                           stdout=subprocess.PIPE, universal_newlines=True,
                           check=True).stdout
    truth_bytes = int(re.search(r"bytes=(\d+)", truth).group(1))
    plain_wall, _ = timed([prog, str(args.pairs), str(args.depth)])
    rows = []
    with tempfile.TemporaryDirectory(prefix="allocsites-bench-") as tmp:
        for stack in [int(s) for s in args.stack_sizes.split(",")]:
            data = os.path.join(tmp, "burst-%d.data" % stack)
            walls, losses = [], []
            for _ in range(args.runs):
                cmd = ALLOCSITES + ["record", "-o", data, "--stack-size",
                                    str(stack)] + \
                    (["--no-frees"] if args.no_frees else []) + \
                    ["--", prog, str(args.pairs), str(args.depth)]
                wall, proc = timed(cmd)
                if proc.returncode != 0:
                    raise SystemExit("bench: record failed: " + proc.stderr)
                allocs, frees, lost = lost_and_recorded(proc.stderr)
                walls.append(wall)
                losses.append(lost)
            out_json = os.path.join(tmp, "r.json")
            rep_wall, rep = timed(ALLOCSITES + ["report", "-i", data,
                                                "--json", out_json])
            if rep.returncode != 0:
                raise SystemExit("bench: report failed: " + rep.stderr)
            with open(out_json) as f:
                report = json.load(f)
            script_wall, _ = timed(["sh", "-c", "perf script --no-inline "
                                    "-i '%s' > /dev/null" % data])
            samples = allocs + frees
            exact = (report["totals"]["count"] == args.pairs and
                     report["totals"]["bytes"] == truth_bytes and
                     report["lost"] == 0)
            rows.append((stack, walls, losses, samples, rep_wall, script_wall,
                         exact, os.path.getsize(data)))
    print("burst: %d alloc+free pairs, %d frames deep; frees recorded: %s" % (
        args.pairs, args.depth, "no" if args.no_frees else "yes"))
    print("machine: %s, %d cores, %s; perf: %s" % (
        platform.node(), os.cpu_count(), platform.release(),
        subprocess.run(["perf", "--version"], stdout=subprocess.PIPE,
                       universal_newlines=True).stdout.strip()))
    print("the same run with probes compiled in but not recorded: %.3f s"
          % plain_wall)
    print()
    print("| stack bytes | record wall s (median, min-max) | lost per run "
          "| data MB | report s | report samples/s | perf script s "
          "| report = truth |")
    print("|---|---|---|---|---|---|---|---|")
    for stack, walls, losses, samples, rep, script, exact, size in rows:
        print("| %d | %.2f (%.2f-%.2f) | %s | %.1f | %.1f | %.0f | %.1f | %s |" % (
            stack, statistics.median(walls), min(walls), max(walls),
            " ".join(losses), size / 1e6, rep, samples / rep, script,
            "yes" if exact else "NO"))


if __name__ == "__main__":
    main()
