#!/usr/bin/python3
"""perf record's zstd level: file size, recording time and loss per level.

  bench/compression_levels.py [--runs 4] [--levels 1,3,6]
                              [--programs minicc,burst,luacheck]

Records each program (bench/lossless_runs.py's) --runs times per level
with `allocsites record` under ALLOCSITES_ZSTD_LEVEL=L (recorder.py
passes it as perf's --compression-level), the levels interleaved run by
run. A higher level compresses more but costs perf's writer more CPU per
byte: a writer that falls behind loses events. Per row: the median
(min-max) perf.data size per recorded event (allocations and the events
without a call graph), the median wall time of the recording, and the
events lost in each run (record's own summary line). Run as root after
`make all`, on an otherwise idle machine. Progress on stderr; Markdown
on stdout.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import machine  # noqa: E402
from lib.quick import median_range  # noqa: E402
from lossless_runs import ALLOCSITES, programs  # noqa: E402

SUMMARY = re.compile(r"recorded (\d+) alloc events and (\d+) without a "
                     r"call graph.*lost: (\d+)")


def once(argv, level, tmp):
    data = os.path.join(tmp, "run.data")
    start = time.monotonic()
    rec = subprocess.run(ALLOCSITES + ["record", "-o", data, "--"] + argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         universal_newlines=True,
                         env=dict(os.environ,
                                  ALLOCSITES_ZSTD_LEVEL=str(level)))
    wall = time.monotonic() - start
    m = SUMMARY.search(rec.stderr)
    if m is None:
        raise SystemExit("compression_levels: no summary line:\n" +
                         rec.stderr[-2000:])
    events = int(m.group(1)) + int(m.group(2))
    size = os.path.getsize(data)
    for path in os.listdir(tmp):
        os.unlink(os.path.join(tmp, path))
    return size / events, wall, int(m.group(3))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--levels", default="1,3,6")
    ap.add_argument("--programs", default="minicc,burst,luacheck")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    progs = programs(args.programs.split(","))
    print("allocsites record, ALLOCSITES_ZSTD_LEVEL per row; %d runs per "
          "row, levels interleaved; %s" % (args.runs, machine()))
    print()
    print("| program | zstd level | bytes/event, median (min-max) | "
          "record s (median) | lost per run |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="zstd-levels-") as tmp:
        for name, (argv, _truth) in progs.items():
            rows = {lv: [] for lv in levels}
            for i in range(args.runs):
                for lv in levels:
                    sys.stderr.write("compression_levels: %s level %d %d/%d\n"
                                     % (name, lv, i + 1, args.runs))
                    rows[lv].append(once(argv, lv, tmp))
            for lv in levels:
                per = [r[0] for r in rows[lv]]
                print("| %s | %d | %s | %.2f | %s |" % (
                    name, lv, median_range(per, 1),
                    statistics.median(r[1] for r in rows[lv]),
                    " ".join(str(r[2]) for r in rows[lv])))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
