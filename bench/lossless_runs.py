#!/usr/bin/python3
"""Does `allocsites record` lose nothing, run after run, with its defaults?

Regenerates the table of docs/benchmarks.md,
"Loss: `bench/lossless_runs.py`":

    /usr/bin/python3 bench/lossless_runs.py

  bench/lossless_runs.py [--runs 20] [--programs minicc,burst,luacheck]
                         [--load idle,loaded] [--record-args "ARGS"]

Each program is recorded --runs times in a row under each load (loads
interleaved run by run) exactly as a user would:

    allocsites record -o FILE ARGS -- PROG ...
    allocsites report -i FILE --json J

and each run is judged by the report's own end-to-end check against the
count the program prints itself:
  complete  "complete": true, lost 0, received == the program's count
  LOSS      anything else (the reason is printed under the table)
Programs:
  minicc    $BUILD/minicc 500: the demo (213,431 allocations)
  burst     bench/burst 218469 10: ~218k allocations in a few ms, 10 deep
  luacheck  bench/lua_host running luacheck on three of its own files
            (Debian lua-check; skipped if missing): a real interpreter
Loads: idle; loaded = one busy-loop process spinning on one of the two
cores for the whole recording.
Per row: runs complete / with loss, events per run, median wall time of
allocsites record (probe setup, perf start and stop, clean-up included),
and the median size of perf.data per recorded event.

Run as root after `make all`, on an otherwise idle machine (about 25
minutes for the defaults). Progress goes to stderr; Markdown to stdout.
"""

import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare import machine  # noqa: E402
from lib.build import BUILD, BURST, build, build_lua_host  # noqa: E402

ALLOCSITES = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites")]
BUSY_LOOP = ["/usr/bin/python3", "-c", "while True: pass"]
LUACHECK = "/usr/share/lua/5.1/luacheck"


def _count(pattern):
    rx = re.compile(pattern, re.M)

    def truth(output):
        m = rx.search(output)
        return int(m.group(1)) if m else None
    return truth


def programs(names):
    """name -> (argv, truth(stdout+stderr) -> allocations)"""
    out = {}
    for name in names:
        if name == "minicc":
            out[name] = ([os.path.join(BUILD, "minicc"), "500"],
                         _count(r"\ballocs=(\d+)"))
        elif name == "burst":
            out[name] = ([build("burst", [BURST]),
                          "218469", "10"], _count(r"\ballocations=(\d+)"))
        elif name == "luacheck":
            if not os.path.isdir(LUACHECK):
                print("luacheck skipped: apt-get install lua-check",
                      file=sys.stderr)
                continue
            out[name] = ([build_lua_host(),
                          os.path.join(HERE, "luacheck_54.lua"),
                          "--no-cache", "--no-color"] +
                         [os.path.join(LUACHECK, f) for f in
                          ("parser.lua", "lexer.lua", "main.lua")],
                         _count(r"^lua_host: allocs=(\d+)"))
        else:
            raise SystemExit("lossless_runs: unknown program %s" % name)
    return out


def once(argv, truth, record_args, tmp):
    """One record + report. -> dict(ok, reason, events, wall, bytes)"""
    data, js = os.path.join(tmp, "run.data"), os.path.join(tmp, "run.json")
    start = time.monotonic()
    rec = subprocess.run(ALLOCSITES + ["record", "-o", data] + record_args +
                         ["--"] + argv, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True)
    wall = time.monotonic() - start
    want = truth(rec.stdout + rec.stderr)
    # luacheck exits 1 when it has warnings: the recording still counts.
    if rec.returncode not in (0, 1) or want is None:
        return dict(ok=False, reason="record failed (%d): %s" % (
            rec.returncode, rec.stderr.strip()[-300:]), events=0, wall=wall,
            bytes=0, bytes_all=0)
    size = os.path.getsize(data)
    rep = subprocess.run(ALLOCSITES + ["report", "-i", data, "--json", js],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         universal_newlines=True)
    try:
        with open(js) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return dict(ok=False, reason="report failed (%d): %s" % (
            rep.returncode, rep.stderr.strip()[-300:]), events=0, wall=wall,
            bytes=size, bytes_all=size)
    got = r["events"]["alloc"]
    ok = r["complete"] is True and r["lost"] == 0 and got == want
    reason = "" if ok else "received %d of %d, lost %s, complete %s (%s)" % (
        got, want, r["lost"], r["complete"], r["complete_reason"])
    os.unlink(data)
    os.unlink(js)
    everything = sum(v for k, v in r["events"].items()
                     if isinstance(v, int) and
                     k not in ("malformed", "duplicates"))
    return dict(ok=ok, reason=reason, events=want, wall=wall,
                bytes=size / max(got, 1), bytes_all=size / max(everything, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--programs", default="minicc,burst,luacheck")
    ap.add_argument("--load", default="idle,loaded")
    ap.add_argument("--record-args", default="",
                    help="extra allocsites record options (default: none)")
    a = ap.parse_args()
    # SIGTERM (pkill, a CI timeout) must unwind like Ctrl-C, through the
    # finally that kills the busy loop: an orphaned busy loop once made
    # every later "idle" run of a benchmark a loaded one.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    progs = programs(a.programs.split(","))
    loads = a.load.split(",")
    extra = shlex.split(a.record_args)
    results = {(p, l): [] for p in progs for l in loads}
    with tempfile.TemporaryDirectory(prefix="lossless-runs-") as tmp:
        for name, (argv, truth) in progs.items():
            for i in range(a.runs):
                for load in loads:
                    busy = (subprocess.Popen(BUSY_LOOP) if load == "loaded"
                            else None)
                    try:
                        r = once(argv, truth, extra, tmp)
                    finally:
                        if busy:
                            busy.kill()
                            busy.wait()
                    results[(name, load)].append(r)
                    print("%s %s %d/%d: %s %.1f s" % (
                        name, load, i + 1, a.runs,
                        "complete" if r["ok"] else "LOSS " + r["reason"],
                        r["wall"]), file=sys.stderr)
    print("`allocsites record %s` then `allocsites report`, %d consecutive "
          "runs per row; %s\n" % (a.record_args or "(defaults)", a.runs,
                                  machine()))
    print("| program | load | complete | with loss | allocations/run | "
          "record s (median) | bytes/allocation (median) | bytes/event, "
          "frees and all (median) |")
    print("|---|---|---|---|---|---|---|---|")
    failures = []
    for (name, load), runs in results.items():
        good = sum(r["ok"] for r in runs)
        failures += ["%s %s: %s" % (name, load, r["reason"])
                     for r in runs if not r["ok"]]
        print("| %s | %s | %d | %d | %s | %.2f | %.0f | %.0f |" % (
            name, load, good, len(runs) - good,
            "/".join(sorted({str(r["events"]) for r in runs})),
            statistics.median(r["wall"] for r in runs),
            statistics.median(r["bytes"] for r in runs),
            statistics.median(r.get("bytes_all", 0) for r in runs)))
    for f in failures:
        print("\n- " + f)


if __name__ == "__main__":
    main()
