#!/usr/bin/python3
"""How long can perf's writer be held up before events are lost, with and
without the writer wake-ups (scripts/allocsites_lib/writerwake.py)?

  bench/stall_tolerance.py [--runs 3] [--stalls 20,40,60] [--every 250]
                           [--wake 0,2] [--program minicc]

Every loss seen with the defaults was a whole stretch of the run: the
writer did not drain a ring for long enough that it filled. What holds
it up on a VM is outside our control (the hypervisor taking its vCPU, a
page-fault storm); what we control is how full the ring already is when
that begins. This makes the stall on purpose: while `allocsites record`
runs, perf record is stopped (SIGSTOP) for STALL ms every EVERY ms and
then continued, while the program it records keeps running. Each row
runs allocsites record with ALLOCSITES_WAKE_MS=W (0: perf's own
half-ring wakeups only) and counts the events perf reports lost.

Run as root after `make all`, on an otherwise idle machine (about 3 s a
run). Progress goes to stderr; Markdown to stdout.
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import machine  # noqa: E402
from lossless_runs import ALLOCSITES, programs  # noqa: E402

LOST = re.compile(r"allocsites: recorded (\d+) alloc events.*; lost: (\d+) ")


def perf_of(parent, deadline):
    """The pid of `perf record`, the child of allocsites' process."""
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/task/%d/children" % (parent, parent)) as f:
                for pid in f.read().split():
                    with open("/proc/%s/comm" % pid) as c:
                        if c.read().strip() == "perf":
                            return int(pid)
        except OSError:
            pass
        time.sleep(0.005)
    return None


def stall(proc, ms, every, done, log):
    """Stops perf for ms, every `every` ms, until done is set; starts once
    the program runs (0.3 s after perf appears: perf's own start-up)."""
    perf = perf_of(proc.pid, time.monotonic() + 30)
    if perf is None:
        return
    time.sleep(0.3)
    while not done.is_set():
        try:
            os.kill(perf, signal.SIGSTOP)
            time.sleep(ms / 1000.0)
            os.kill(perf, signal.SIGCONT)
        except ProcessLookupError:
            return
        log.append(ms)
        done.wait(every / 1000.0)


def once(argv, wake, ms, every, tmp):
    """(allocations recorded, events lost, stalls made)"""
    data = os.path.join(tmp, "run.data")
    env = dict(os.environ, ALLOCSITES_WAKE_MS=str(wake))
    proc = subprocess.Popen(ALLOCSITES + ["record", "-o", data, "--"] + argv,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            universal_newlines=True, env=env)
    done, log = threading.Event(), []
    t = threading.Thread(target=stall, args=(proc, ms, every, done, log))
    t.start()
    try:
        err = proc.communicate()[1]
    finally:
        done.set()
        t.join()
    if os.path.exists(data):
        os.unlink(data)
    m = LOST.search(err)
    if not m:
        raise SystemExit("stall_tolerance: no summary line:\n" + err[-500:])
    return int(m.group(1)), int(m.group(2)), len(log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stalls", default="20,40,60")
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--wake", default="0,2")
    ap.add_argument("--program", default="minicc")
    a = ap.parse_args()
    argv, _truth = programs([a.program])[a.program]
    stalls = [int(s) for s in a.stalls.split(",")]
    wakes = a.wake.split(",")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="stall-tolerance-") as tmp:
        for i in range(a.runs):
            for ms in stalls:
                for wake in wakes:   # interleaved, run by run
                    r = once(argv, wake, ms, a.every, tmp)
                    rows.setdefault((ms, wake), []).append(r)
                    print("stall %d ms, wake %s ms, run %d: %d recorded, "
                          "%d lost, %d stalls" % ((ms, wake, i + 1) + r),
                          file=sys.stderr)
    print("`allocsites record -- %s` with perf stopped for STALL ms every "
          "%d ms; %d runs per row; %s\n"
          % (" ".join(os.path.basename(x) for x in argv), a.every, a.runs,
             machine()))
    print("| stall ms | ALLOCSITES_WAKE_MS | runs with loss | events lost "
          "per run (median) | lost per run |")
    print("|---|---|---|---|---|")
    for (ms, wake), runs in rows.items():
        lost = [r[1] for r in runs]
        print("| %d | %s | %d of %d | %d | %s |" % (
            ms, wake, sum(1 for n in lost if n), len(lost),
            statistics.median(lost), " ".join(map(str, lost))))


if __name__ == "__main__":
    main()
