#!/usr/bin/python3
"""What waking perf's writer every 2 ms changes in a recording:
wake-ups, records perf writes twice, file size, loss.

  bench/writer_wake.py [--runs 5] [--wake 0,2] [--program minicc]

Records the program (bench/lossless_runs.py's programs; default the
demo) with `allocsites record` under ALLOCSITES_WAKE_MS=W for each W
(0: perf's own half-ring wake-ups only), the values interleaved run by
run, and reports each recording with `allocsites report --json`. Per
run: perf's own "Woken up N times", the records perf wrote twice that
the report dropped (events.duplicates_by_kind) and those the record
summary's scan found (perfdata.duplicate_samples), the file's size, and
the loss and verdict. Run as root after `make all`, on an otherwise idle
machine. Progress on stderr; Markdown on stdout.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import machine  # noqa: E402
from lossless_runs import ALLOCSITES, programs  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from allocsites_lib import perfdata  # noqa: E402

WOKEN = re.compile(r"Woken up (\d+) times")


def once(argv, wake, tmp):
    data, js = os.path.join(tmp, "run.data"), os.path.join(tmp, "run.json")
    rec = subprocess.run(ALLOCSITES + ["record", "-o", data, "--"] + argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         universal_newlines=True,
                         env=dict(os.environ, ALLOCSITES_WAKE_MS=str(wake)))
    woken = WOKEN.search(rec.stderr)
    if not woken or not os.path.exists(data):
        raise SystemExit("writer_wake: record failed:\n" + rec.stderr[-2000:])
    subprocess.run(ALLOCSITES + ["report", "-i", data, "--json", js],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(js) as f:
        report = json.load(f)
    scan = perfdata.scan(data)
    row = dict(woken=int(woken.group(1)),
               dropped=report["events"]["duplicates"],
               kinds=report["events"]["duplicates_by_kind"],
               scanned=sum(scan.duplicate_samples.values()),
               mib=os.path.getsize(data) / 2**20, lost=report["lost"],
               complete=report["complete"])
    for path in os.listdir(tmp):
        os.unlink(os.path.join(tmp, path))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--wake", default="0,2")
    ap.add_argument("--program", default="minicc")
    a = ap.parse_args()
    argv, _ = programs([a.program])[a.program]
    wakes = a.wake.split(",")
    rows = {w: [] for w in wakes}
    with tempfile.TemporaryDirectory(prefix="writer-wake-") as tmp:
        for i in range(a.runs):
            for w in wakes:
                r = once(argv, w, tmp)
                rows[w].append(r)
                print("wake %s ms, run %d: %s" % (w, i + 1, r),
                      file=sys.stderr)
    print("`allocsites record -- %s` under ALLOCSITES_WAKE_MS=W, %d runs "
          "each, interleaved; %s\n" % (" ".join(os.path.basename(x)
                                               for x in argv),
                                      a.runs, machine()))
    print("| W (ms) | perf woken up, median (min-max) | written twice, "
          "per run (report) | found by the record's scan | MiB per run | "
          "lost | complete |")
    print("|---|---|---|---|---|---|---|")
    for w, rs in rows.items():
        woken = [r["woken"] for r in rs]
        print("| %s | %d (%d-%d) | %s | %s | %s | %s | %s |" % (
            w, statistics.median(woken), min(woken), max(woken),
            " ".join("%d%s" % (r["dropped"], "" if not r["kinds"] else
                               " (" + ", ".join("%s %d" % kv for kv in
                                                sorted(r["kinds"].items()))
                               + ")") for r in rs),
            " ".join(str(r["scanned"]) for r in rs),
            " ".join("%.1f" % r["mib"] for r in rs),
            " ".join(str(r["lost"]) for r in rs),
            " ".join("yes" if r["complete"] else "NO" for r in rs)))


if __name__ == "__main__":
    main()
