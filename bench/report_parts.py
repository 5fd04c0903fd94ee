#!/usr/bin/python3
"""The report's own work outside perf, on a demo recording: the scan of
the file against the scan record kept (FILE.scan), and the liveness
sweep in one pass against the former two (a second replay up to the
peak).

  bench/report_parts.py [--runs 3] [--size 500]

Records `build/minicc SIZE` with `allocsites record` (which keeps its
scan beside the file), then times, RUNS times each:
  perfdata.scan           reading the whole file (what the report did)
  scancache.digest        the BLAKE2b digest that checks FILE.scan
  scancache.load          reading FILE.scan, digest included
and, on the event log of one perf script worker over the whole file
(parallel.run, as `allocsites report -j 1` runs it):
  liveness.sweep          all of it, as the report calls it
  its pass + undone       the pass over the log and _Sweep.at_peak (now)
  its pass + replay       the same pass and a replay up to the peak (before)
Run as root after `make all`. Markdown on stdout.
"""

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare import machine  # noqa: E402
from lib.quick import median_range, timed  # noqa: E402
from allocsites_lib import (cli, liveness, parallel, perfdata,  # noqa: E402
                            recorder, scancache)
from allocsites_lib.fold import Tally  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))


def seconds(fn, runs):
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def state_at_peak(log, replay):
    """The sweep's pass over the log, then the state at the peak: undone
    from the end (now), or replayed up to the peak (before)."""
    plan = liveness._Plan(log, "exact")
    main = liveness._Sweep(log, plan, liveness.sample_times(log, 400)).run(
        len(log))
    if replay:
        liveness._Sweep(log, plan, []).run(main.peak_i + 1).live_by_code()
    else:
        main.at_peak()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", type=int, default=500)
    a = ap.parse_args()
    prog = [os.path.join(BUILD, "minicc"), str(a.size)]
    with tempfile.TemporaryDirectory(prefix="report-parts-") as tmp:
        data = os.path.join(tmp, "demo.data")
        timed(["/usr/bin/python3", os.path.join(ROOT, "scripts",
                                               "allocsites"),
               "record", "-o", data, "--"] + prog, None, "report_parts")
        scan = perfdata.scan(data)
        if scancache.load(data) is None:
            raise SystemExit("report_parts: allocsites record kept no scan")
        rows = [
            ("perfdata.scan", seconds(lambda: perfdata.scan(data), a.runs)),
            ("scancache.digest", seconds(lambda: scancache.digest(data),
                                         a.runs)),
            ("scancache.load", seconds(lambda: scancache.load(data),
                                       a.runs)),
        ]
        result = parallel.run(recorder.find_perf(), data, cli.ENTRY_SCRIPT,
                              [], [(None, None)], scan.times, Tally,
                              pids=scan.pids,
                              stop_early=scan.all_tracepoints)
        log = result.tally.log
        rows += [
            ("liveness.sweep, all of it",
             seconds(lambda: liveness.sweep(log, "exact"), a.runs)),
            ("its pass and the state at the peak undone (now)",
             seconds(lambda: state_at_peak(log, False), a.runs)),
            ("its pass and a replay up to the peak (before)",
             seconds(lambda: state_at_peak(log, True), a.runs)),
        ]
        size = os.path.getsize(data)
    print("%s: %d samples, %.1f MB; %d events in the log; %d runs each; %s\n"
          % (" ".join(os.path.basename(p) for p in prog), len(scan.times),
             size / 1e6, len(log), a.runs, machine()))
    print("| step | s, median (min-max) |")
    print("|---|---|")
    for name, values in rows:
        print("| %s | %s |" % (name, median_range(values)))


if __name__ == "__main__":
    main()
