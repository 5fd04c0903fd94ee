#!/usr/bin/python3
"""Exact mode at scale, side by side with heaptrack, on the example compiler.

Regenerates the table of docs/benchmarks.md,
"Exact mode at scale: `bench/exact_scale.py`":

    /usr/bin/python3 bench/exact_scale.py --units 250,2500,25000 --tools floor,dwarf,fp,sampled,heaptrack
    /usr/bin/python3 bench/exact_scale.py --units 250000 --skip-above 250000 --tools dwarf,fp,sampled,heaptrack

  bench/exact_scale.py [--units 250,2500,25000] [--skip-above 25000]
                       [--tools floor,dwarf,fp,sampled,heaptrack]

For each size (minicc UNITS: about 418 allocations a unit, so 250, 2500,
25000 and 250000 units are 10^5 to 10^8 allocations, as many frees), in
one run on this machine:

  native            minicc alone (wall time)
  no call graph     `allocsites record --unwind none`: every event, no
                    stack: the floor the other modes are measured from
  allocsites dwarf  `allocsites record` (DWARF stack copies, the default),
                    then `allocsites report` (the native reader)
  allocsites fp     the same on build/minicc-fp with --unwind fp
  sampled 512k      `allocsites record --sample 512k`, then its report
  heaptrack         minicc built with heaptrack's custom-allocator API
                    (bench/lib/build.py), `heaptrack`, then heaptrack_print

Columns: record and report wall time; decompress alone: the wall time
of `allocsites-read --scan` on the recording, one pass that
decompresses every record and orders, unwinds and tallies nothing (the
least any reader of a perf -z recording does: perf's zstd stream is one
stream, decompressed in order on one CPU); the report's peak memory (the sum
of the resident sizes of all its processes, polled every 50 ms), bytes
of recording per event (alloc and free events), and whether the report
said it was complete. allocsites runs with Python's bytecode cache on,
filled before the first timed run, as on a user's machine (even where
PYTHONDONTWRITEBYTECODE is set). A size above --skip-above is printed as not run,
with the reason (at 10^8 the recordings alone take about half an
hour), never left out silently.

Prints Markdown on stdout; progress on stderr. Run as root (perf).
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, HERE)
from lib.build import build  # noqa: E402
from lib.quick import WRAPPER_ENV, fill_bytecode_cache  # noqa: E402

ALLOCSITES = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites")]
MINICC_SRC = [os.path.join(ROOT, "examples", "minicc", n + ".c")
              for n in ("main", "lexer", "parser", "types", "emit")] + \
    [os.path.join(ROOT, "examples", "rtalloc", "rt_arena.c")]
TOOLS = ("floor", "dwarf", "fp", "sampled", "heaptrack")
ALLOCS_PER_UNIT = 417.6   # minicc 2500: 1,040,191 allocations


def tree_rss(pid):
    """Resident bytes of pid and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/statm" % p) as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return total


def run(argv, env=None, stdout=subprocess.DEVNULL):
    """(seconds, peak tree RSS bytes, CompletedProcess-like (rc, stderr)).
    Python caches allocsites' bytecode as on a user's machine
    (WRAPPER_ENV; main fills the cache first)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL,
                            env=dict(WRAPPER_ENV, **(env or {})))
    peak = [0]
    done = threading.Event()

    def poll():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(proc.pid))
            done.wait(0.05)
    t = threading.Thread(target=poll, daemon=True)
    t.start()
    _, err = proc.communicate()
    done.set()
    t.join()
    return time.monotonic() - start, peak[0], proc.returncode, \
        err.decode("utf-8", "replace")


def say(text):
    sys.stderr.write("exact_scale: %s\n" % text)
    sys.stderr.flush()


def events_of(report_json):
    with open(report_json) as f:
        r = json.load(f)
    ev = r["events"]
    return ev.get("alloc", 0) + ev.get("free", 0) + ev.get("sample", 0), \
        r["complete"]


def allocsites_row(label, prog, units, tmp, record_args=(), after=False):
    data = os.path.join(tmp, "run.data")
    out = os.path.join(tmp, "r.json")
    say("%s: record minicc %d" % (label, units))
    rec_s, _, rc, err = run(ALLOCSITES + ["record", "-o", data] +
                            list(record_args) + ["--", prog, str(units)])
    if rc != 0:
        return [label, "failed: %s" % err.strip().splitlines()[-1:], "", "",
                "", "", ""]
    size = os.path.getsize(data)
    say("%s: decompress alone (allocsites-read --scan)" % label)
    scan_s, _, scan_rc, _ = run([os.path.join(BUILD, "allocsites-read"),
                                 "--scan", data])
    say("%s: report" % label)
    # with --sweep-after, the first report's sweep runs in the reader
    # (the default, ALLOCSITES_FOLLOW=1), the second's after it
    rep_s, rss, rc, err = run(ALLOCSITES + ["report", "-i", data, "--json",
                                            out],
                              env={"ALLOCSITES_FOLLOW": "1"} if after
                              else None)
    if after:   # the same report with the sweep after the reader
        say("%s: report, the sweep after the reader" % label)
        after_s, after_rss, _, _ = run(
            ALLOCSITES + ["report", "-i", data],
            env=dict(os.environ, ALLOCSITES_FOLLOW="0"))
    try:
        events, complete = events_of(out)
    except (OSError, ValueError, KeyError):
        events, complete = 0, None
    for leftover in (data, data + ".scan", data + ".buildids", out):
        if os.path.exists(leftover):
            os.unlink(leftover)
    last = err.strip().splitlines()[-1:] if rc not in (0, 3) else []
    return [label, "%.1f s" % rec_s,
            ("%.1f s" % rep_s + (" (sweep after: %.1f s)" % after_s
                                  if after else ""))
            if not last else "failed: %s" % last,
            "%.1f s" % scan_s if scan_rc == 0 else "failed",
            "%.0f MB" % (rss / 1e6) + (" (%.0f MB)" % (after_rss / 1e6)
                                        if after else ""),
            "%.1f" % (size / events) if events else "-",
            {True: "yes", False: "no", None: "not checked"}[complete]]


def heaptrack_row(prog, units, tmp):
    say("heaptrack: record minicc %d" % units)
    base = os.path.join(tmp, "heaptrack")
    rec_s, _, rc, err = run(["heaptrack", "-o", base, prog, str(units)])
    data = base + ".zst"
    if rc != 0 or not os.path.exists(data):
        return ["heaptrack", "failed", "", "", "", "", ""]
    size = os.path.getsize(data)
    say("heaptrack: heaptrack_print")
    rep_s, rss, rc, _ = run(["heaptrack_print", "-f", data, "-a", "1",
                             "-p", "0", "-T", "0", "-l", "0", "-m", "0",
                             "-n", "1000000000"])
    os.unlink(data)
    allocs = round(units * ALLOCS_PER_UNIT)
    return ["heaptrack", "%.1f s" % rec_s, "%.1f s" % rep_s, "",
            "%.0f MB" % (rss / 1e6), "%.1f" % (size / (2 * allocs)),
            "(no check)"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--units", default="250,2500,25000,250000")
    ap.add_argument("--skip-above", type=int, default=25000,
                    help="sizes above this many units are listed as not "
                         "run (default 25000: 10^8 allocations take about "
                         "25 minutes to record exactly here, and the "
                         "report as long again)")
    ap.add_argument("--sweep-after", action="store_true",
                    help="report each recording twice: the liveness "
                         "sweep in the reader (the default, "
                         "ALLOCSITES_FOLLOW=1), then after it (=0, in "
                         "parentheses)")
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help="the rows to run, of %s (default: all; a size "
                         "this large that only some fit the time, e.g. "
                         "10^8: --tools dwarf,heaptrack)" % ",".join(TOOLS))
    args = ap.parse_args()
    tools = args.tools.split(",")
    unknown = set(tools) - set(TOOLS)
    if unknown:
        raise SystemExit("exact_scale: unknown --tools %s" % ",".join(
            sorted(unknown)))
    minicc = os.path.join(BUILD, "minicc")
    minicc_fp = os.path.join(BUILD, "minicc-fp")
    for p in (minicc, minicc_fp):
        if not os.path.exists(p):
            raise SystemExit("exact_scale: %s missing: run make" % p)
    hooked = build("minicc-heaptrack", MINICC_SRC, "-DRT_PROBES_DISABLE",
                   "-DRT_ALLOC_HEAPTRACK")
    fill_bytecode_cache()
    have_heaptrack = shutil.which("heaptrack") is not None
    print("# Exact mode at scale: allocsites and heaptrack on minicc\n")
    print("Machine: %s, %d CPUs, %s; `bench/exact_scale.py --units %s "
          "%s--tools %s%s`.\n" % (platform.node(), os.cpu_count(),
                                   platform.release(), args.units,
                                   "--skip-above %d " % args.skip_above
                                   if args.skip_above != 25000 else "",
                                   args.tools,
                                   " --sweep-after" if args.sweep_after
                                   else ""))
    print("| allocations | tool | record | report | decompress alone "
          "| report memory | bytes/event | complete |")
    print("|---|---|---|---|---|---|---|---|")
    for units in [int(u) for u in args.units.split(",")]:
        allocs = "%.1fx10^%d" % _sci(units * ALLOCS_PER_UNIT)
        if units > args.skip_above:
            print("| %s | all | not run: above --skip-above %d (exact "
                  "recording about %.0f min here) | | | | | |"
                  % (allocs, args.skip_above,
                     units * ALLOCS_PER_UNIT * 12e-6 / 60))
            continue
        tmp = tempfile.mkdtemp(prefix="exact-scale-")
        try:
            say("native minicc %d" % units)
            nat_s, _, _, _ = run([minicc, str(units)])
            rows = [["native", "%.2f s" % nat_s, "", "", "", "", ""]]
            if "floor" in tools:
                rows.append(allocsites_row("no call graph (floor)", minicc,
                                           units, tmp, ["--unwind", "none"],
                                           args.sweep_after))
            if "dwarf" in tools:
                rows.append(allocsites_row("allocsites dwarf", minicc,
                                           units, tmp, (), args.sweep_after))
            if "fp" in tools:
                rows.append(allocsites_row("allocsites fp", minicc_fp,
                                           units, tmp, ["--unwind", "fp"],
                                           args.sweep_after))
            if "sampled" in tools:
                rows.append(allocsites_row("sampled 512k", minicc, units,
                                           tmp, ["--sample", "512k"]))
            if "heaptrack" in tools:
                rows.append(heaptrack_row(hooked, units, tmp)
                            if have_heaptrack else
                            ["heaptrack", "not run: heaptrack is not "
                             "installed", "", "", "", "", ""])
            for row in rows:
                print("| %s | %s |" % (allocs, " | ".join(str(c)
                                                         for c in row)))
            sys.stdout.flush()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _sci(x):
    e = 0
    while x >= 10:
        x /= 10
        e += 1
    return x, e


if __name__ == "__main__":
    main()
