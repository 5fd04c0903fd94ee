#!/usr/bin/python3
"""The floor of an exact profile, and each stage's distance from it.

Regenerates the table of docs/benchmarks.md, "The floor: `bench/floor.py`":

    /usr/bin/python3 bench/floor.py [--pairs N] [--depth D] [--runs R]

What one allocation costs at each stage, per event, on the burst program
(tests/c/burst.c: N rt_alloc + rt_free pairs, D frames deep, 250000 and
12 by default), each figure the median of R runs (3):

  trap          the uprobe trap of one event, no stack, at the probe's
                one-byte nop (where a DWARF recording takes it): burst's
                own loop time recorded with --unwind none and
                ALLOCSITES_FAST_SITE=0, less its time alone, per event
                (alloc and free each trap)
  call          the same at the site's 5-byte nop, where a recording
                with ALLOCSITES_FAST_SITE=1 takes it (--unwind none):
                Linux >= 6.18 calls the uprobe syscall from a
                trampoline there instead of trapping (docs/probes.md,
                "The probe site")
  stack copy    what a DWARF stack copy (8 KiB, -z) adds to an alloc's
                event: recorded with DWARF stacks and every probe at the
                trap (ALLOCSITES_FAST_SITE=0), less the trap's
                recording, per allocation (the defaults take the frees
                at the call)
  record        allocsites record with the defaults, the whole command
                (perf's start and end, the scan), per event
  scan          record's pass over the finished file for its summary
                (allocsites-read --scan), per event: what record adds
                after perf exits
  bare perf     `perf record` alone, the same command allocsites record
                runs (the same events, created the same way, and options)
                less what only allocsites adds around it (the writer's
                wake-ups and priority, the --control FIFO), timed from
                perf's start to its exit; record's whole command against
                it is issue 30's "record within 1.1x a bare perf record":
                the median of each run's own ratio, the two run one
                after the other, in turn first
  read          allocsites-read alone (the native reader: parse,
                decompress, order, unwind, tally) over the recording, per
                event; and over the --unwind none recording (no stack to
                decompress or unwind)
  read, sweep   allocsites-read --sweep: the same and the liveness sweep
                in a thread of the reader, as the report runs them
  report        allocsites report --json, the whole command, per event;
                less the reader's and the sweep's time: the Python
                side's share

The floor is the trap (the call, without stack copies) and the stack
copy: what perf and the kernel cost whatever the tool does. A stage's
distance from it is what the tool adds.
The burst is the worst case for the tool's share (nothing but
allocations); a real program spends more of its time on its own work.
Run as root on an idle machine after `make all`.
"""

import argparse
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lib.build import BUILD, BURST, build  # noqa: E402
from lib.measure import run  # noqa: E402

ROOT = os.path.dirname(HERE)
ALLOCSITES = os.path.join(ROOT, "scripts", "allocsites")
READER = os.path.join(BUILD, "allocsites-read")
PY = "/usr/bin/python3"


def elapsed_ns(text):
    m = re.search(r"elapsed_ns=(\d+)", text)
    if not m:
        raise SystemExit("bench: burst printed no elapsed_ns:\n" + text)
    return int(m.group(1))


def timed(cmd, discard=True):
    start = time.monotonic()
    r = run(cmd, discard_stdout=discard)
    return time.monotonic() - start, r


# Runs recording.record with its perf step replaced by the bare command:
# the probe events are made and removed exactly as allocsites does, and
# only perf record itself is timed (prints bare_wall=SECONDS).
BARE = r"""
import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from allocsites_lib.cli import parsers
from allocsites_lib.record import perfcommand, recording
inv = parsers.parse(["record", "-o", sys.argv[2], "--"] + sys.argv[3:])

def bare(perf, opts, argv, pid, unwind, allocs, plain, events, interrupts):
    cmd = perfcommand.record_command(perf, opts.output, allocs, plain,
                                     opts.stack_size, argv, unwind=unwind)
    start = time.monotonic()
    status = subprocess.call(cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    print("bare_wall=%f" % (time.monotonic() - start), flush=True)
    return status

recording.run_perf = bare
recording.record(inv.record, inv.program, out=open("/dev/null", "w"))
"""


def bare_perf(prog, output):
    """Seconds of the bare perf record of prog into output."""
    r = run([PY, "-c", BARE, os.path.join(ROOT, "scripts"), output] + prog,
            discard_stdout=False)
    m = re.search(r"bare_wall=([0-9.]+)", r.stdout)
    if not m:
        raise SystemExit("bench: the bare perf record printed no time:\n"
                         + r.stdout)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=250000)
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    burst = build("burst", [BURST])
    prog = [burst, str(args.pairs), str(args.depth)]
    events = 2 * args.pairs
    tmp = tempfile.mkdtemp(prefix="allocsites-floor-")
    rows = {k: [] for k in ("alone", "none", "trap", "dwarf_trap", "dwarf",
                            "record", "bare", "scan", "read_none", "read",
                            "sweep", "report")}
    ratios = []   # each run's whole record command / its bare perf record
    try:
        for i in range(args.runs):
            print("run %d of %d" % (i + 1, args.runs), file=sys.stderr)
            rows["alone"].append(elapsed_ns(run(prog).stdout) / 1e9)
            none = os.path.join(tmp, "none.data")
            dwarf = os.path.join(tmp, "dwarf.data")
            r = run([PY, ALLOCSITES, "record", "--unwind", "none", "-o",
                     none, "--"] + prog,
                    env=dict(os.environ, ALLOCSITES_FAST_SITE="1"))
            rows["none"].append(elapsed_ns(r.stdout) / 1e9)
            r = run([PY, ALLOCSITES, "record", "--unwind", "none", "-o",
                     os.path.join(tmp, "trap.data"), "--"] + prog,
                    env=dict(os.environ, ALLOCSITES_FAST_SITE="0"))
            rows["trap"].append(elapsed_ns(r.stdout) / 1e9)
            r = run([PY, ALLOCSITES, "record", "-o",
                     os.path.join(tmp, "dwarf_trap.data"), "--"] + prog,
                    env=dict(os.environ, ALLOCSITES_FAST_SITE="0"))
            rows["dwarf_trap"].append(elapsed_ns(r.stdout) / 1e9)
            # the whole command and the bare perf record one after the
            # other, in turn first: the VM's speed drifts by tens of
            # percent within minutes, and a pair's own ratio (ratios
            # below) cancels what they share
            bare_first = i % 2 == 1
            if bare_first:
                rows["bare"].append(bare_perf(prog, os.path.join(
                    tmp, "bare.data")))
            wall, r = timed([PY, ALLOCSITES, "record", "-o", dwarf, "--"] +
                            prog, discard=False)
            rows["dwarf"].append(elapsed_ns(r.stdout) / 1e9)
            rows["record"].append(wall)
            if not bare_first:
                rows["bare"].append(bare_perf(prog, os.path.join(
                    tmp, "bare.data")))
            ratios.append(rows["record"][-1] / rows["bare"][-1])
            rows["scan"].append(timed([READER, "--scan", dwarf])[0])
            rows["read_none"].append(timed([READER, none])[0])
            rows["read"].append(timed([READER, dwarf])[0])
            # as the report runs it: the liveness sweep in a thread of the
            # reader, the log's file (unused but for a sweep far behind)
            rows["sweep"].append(timed(
                ["sh", "-c", 'exec "$0" --log-fd 3 --sweep "$1" 3>"$2"',
                 READER, dwarf, os.path.join(tmp, "log")])[0])
            rows["report"].append(timed([PY, ALLOCSITES, "report", "-i",
                                         dwarf, "--json", os.devnull])[0])
    finally:
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    med = {k: statistics.median(v) for k, v in rows.items()}

    def us(seconds, n):
        return "%.2f" % (seconds / n * 1e6)

    print("burst %d pairs, %d frames deep (%d events), median of %d runs; "
          "%s" % (args.pairs, args.depth, events, args.runs,
                  os.uname().release))
    print()
    print("| stage | us per event | what it is |")
    print("|---|---:|---|")
    print("| program alone | %s | burst's loop, nothing recorded |"
          % us(med["alone"], events))
    print("| **trap** | %s | the uprobe trap at the one-byte nop, no stack "
          "(--unwind none, ALLOCSITES_FAST_SITE=0, less alone) |"
          % us(med["trap"] - med["alone"], events))
    print("| **call** | %s | the same at the 5-byte nop: the uprobe "
          "syscall (--unwind none, less alone) |"
          % us(med["none"] - med["alone"], events))
    print("| **stack copy** | %s | per allocation: 8 KiB DWARF copy, -z "
          "(DWARF at the trap, less the trap's recording) |"
          % us(med["dwarf_trap"] - med["trap"], args.pairs))
    print("| record, whole command | %s | perf's start and end, the "
          "summary's scan |" % us(med["record"], events))
    print("| bare perf record | %s | the same perf record alone, same "
          "events and options |" % us(med["bare"], events))
    print("| record against bare perf | %.2fx | whole command / bare perf "
          "record, the median of the runs' own ratios (%s) |"
          % (statistics.median(ratios),
             ", ".join("%.2fx" % r for r in ratios)))
    print("| record's scan | %s | its pass over the file after perf "
          "(allocsites-read --scan) |" % us(med["scan"], events))
    print("| read, no stacks | %s | allocsites-read on the --unwind none "
          "recording |" % us(med["read_none"], events))
    print("| read | %s | allocsites-read: decompress, order, unwind, "
          "tally |" % us(med["read"], events))
    print("| read and sweep | %s | allocsites-read --sweep: the same, "
          "the liveness sweep in a thread of its own, as the report runs "
          "it |" % us(med["sweep"], events))
    print("| report, whole command | %s | allocsites report --json |"
          % us(med["report"], events))
    print("| report's Python share | %s | report less read and sweep |"
          % us(med["report"] - med["sweep"], events))


if __name__ == "__main__":
    main()
