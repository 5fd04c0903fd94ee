#!/usr/bin/python3
"""Does sampled mode lose events on a busy machine?

    /usr/bin/python3 bench/sampled_loss.py [--runs 10] [--blocks 50000]
        [--size 262144] [--rate 64k] [--hogs 2] [--modes sampled,exact]
        [--record-args "ARGS"] [--allocsites PATH]

bench/big_blocks.c allocates and frees --blocks blocks of --size bytes,
12 frames deep. With --size a few times --rate nearly every block is
sampled, so sampled mode records an rt:sample (stack copy) and an
rt:sample_free per block, as fast as exact mode records its events
(issue 31: 719 of 92,687 events lost at --sample 64k on the 2-core VM
while other work ran, exact mode none). Each run starts --hogs busy-loop
processes (one per core by default) that spin for the whole recording
and are killed after it (bounded: the recording's length), then:

    allocsites record -o FILE [--sample RATE] ARGS -- big_blocks ...
    allocsites report -i FILE --json J

and judges it by the report's own check: "complete" (lost 0, and every
event the program fired received: rt:exit's counts), or LOSS with the
report's reason. (A block of --size bytes is sampled with probability
1 - exp(-size/rate): 98% at 256 KiB and 64k, so sampled mode's events
per run vary a little.) Modes alternate run by run. Prints a Markdown
table; progress on stderr. Run as root after `make all`.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib.build import build  # noqa: E402

ALLOCSITES = ["/usr/bin/python3",
              os.path.join(ROOT, "scripts", "allocsites")]
BUSY_LOOP = ["/usr/bin/python3", "-c", "while True: pass"]


def once(prog, mode, a, tmp):
    data, js = os.path.join(tmp, "run.data"), os.path.join(tmp, "run.json")
    extra = ["--sample", a.rate] if mode == "sampled" else []
    hogs = [subprocess.Popen(BUSY_LOOP) for _ in range(a.hogs)]
    try:
        start = time.monotonic()
        rec = subprocess.run(
            ALLOCSITES + ["record", "-o", data] + extra +
            a.record_args.split() + ["--", prog, str(a.blocks),
                                     str(a.size)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, timeout=600)
        wall = time.monotonic() - start
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    if rec.returncode != 0:
        return dict(ok=False, wall=wall, events=0, reason="record failed "
                    "(%d): %s" % (rec.returncode, rec.stderr.strip()[-300:]))
    rep = subprocess.run(ALLOCSITES + ["report", "-i", data, "--json", js],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         universal_newlines=True)
    try:
        with open(js) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return dict(ok=False, wall=wall, events=0, reason="report failed "
                    "(%d): %s" % (rep.returncode, rep.stderr.strip()[-300:]))
    finally:
        for path in (data, js, data + ".scan", data + ".buildids"):
            if os.path.exists(path):
                os.unlink(path)
    events = sum(v for k, v in r["events"].items()
                 if isinstance(v, int) and k not in ("malformed",
                                                     "duplicates"))
    ok = r["complete"] is True and r["lost"] == 0
    return dict(ok=ok, wall=wall, events=events,
                reason="" if ok else "lost %s, complete %s (%s)"
                % (r["lost"], r["complete"], r["complete_reason"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--blocks", type=int, default=50000)
    ap.add_argument("--size", type=int, default=262144)
    ap.add_argument("--rate", default="64k")
    ap.add_argument("--hogs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--modes", default="sampled,exact")
    ap.add_argument("--record-args", default="")
    ap.add_argument("--allocsites", default=ALLOCSITES[1],
                    help="the allocsites command to run (another "
                    "checkout's scripts/allocsites, to compare)")
    a = ap.parse_args()
    ALLOCSITES[1:] = [a.allocsites]
    # kill(1) too ends the busy loops (once()'s finally)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    prog = build("big_blocks", [os.path.join(HERE, "big_blocks.c")])
    modes = a.modes.split(",")
    results = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="sampled-loss-") as tmp:
        for i in range(a.runs):
            for mode in modes:
                r = once(prog, mode, a, tmp)
                results[mode].append(r)
                print("run %d %s: %s %s" % (i + 1, mode,
                                            "complete" if r["ok"] else "LOSS",
                                            r["reason"]), file=sys.stderr)
    print("big_blocks %d x %d B, %d busy loops, %s\n"
          % (a.blocks, a.size, a.hogs, " ".join(a.record_args.split())
             or "default options"))
    print("| mode | complete | with loss | events per run "
          "| median record wall |")
    print("|---|---|---|---|---|")
    for mode in modes:
        rs = results[mode]
        print("| %s | %d | %d | %d | %.2f s |" % (
            "--sample %s" % a.rate if mode == "sampled" else "exact",
            sum(r["ok"] for r in rs), sum(not r["ok"] for r in rs),
            max(r["events"] for r in rs),
            statistics.median(r["wall"] for r in rs)))
    for mode in modes:
        for r in results[mode]:
            if not r["ok"]:
                print("\n%s: %s" % (mode, r["reason"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
