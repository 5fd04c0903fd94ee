#!/usr/bin/python3
"""How many bytes of user stack must perf copy per allocation event
(`perf record --call-graph dwarf,SIZE`) for a real interpreter's stacks to
reach main, and what does each size cost in loss, time and data?

  /usr/bin/python3 bench/stack_depth.py [--runs 3] [--workloads synthetic,luacheck]
      [--sizes 2048,4096,8192,16384,32768,65528] [--rounds 2] [--keep DIR]
      [--trigger uprobe|pagefault]

The interpreter is bench/lua_host (Lua 5.4 linked statically, its lua_Alloc
annotated; built by bench/lib/build.py). Workloads:
  synthetic  bench/lua_workload.lua ROUNDS: generates Lua modules, compiles
             them with load/loadfile (the parser recurses in C), runs them,
             serializes the result (gsub, string.format, table.sort)
  luacheck   luacheck 1.1 (Debian lua-check, written for 5.1, runs on 5.4)
             checking three of its own files, through bench/luacheck_54.lua;
             skipped if lua-check is not installed
For each workload: one native run with LUA_HOST_STACK=1 gives the host's
own count of allocations and how deep the C stack was at each of them
(bytes from l_alloc's stack pointer up to __libc_stack_end). Then for each
SIZE, RUNS recordings with the recording defaults under test,
    perf record -z -m 16384 --no-bpf-event --call-graph dwarf,SIZE -e EVENT
(EVENT: sdt_rt:alloc created here for lua_host, with a private build-id
cache; perf may name it alloc_N because other users' events exist; only
that event is deleted at the end, also on errors and signals), each with
`perf report --stats` for the samples received and lost. The run that lost
least is then reported twice:
  - `scripts/allocsites report -i FILE --json` as a user runs it (perf
    script's default --max-stack, 127 frames): truncated_allocations;
  - `perf script --no-inline --max-stack 1024 -s bench/stack_depth_perf.py`
    (the same report, plus perf's raw callchains: how many reach main,
    how they end, their frame counts).
--trigger pagefault records the same stacks without uprobes, for a kernel
whose uprobe events cannot be created or opened (this happened: a kernel
oops in uprobe_register left tracefs's event_mutex locked, and every
perf probe and every tracepoint open then hangs). bench/lua_host-pf
writes to a fresh page of a fixed region at each allocation, right after
RT_ALLOC in l_alloc, and perf records the page-faults software event
(-c 1 -d: every fault, with its address) instead of sdt_rt:alloc: same
trap site, same user registers, same stack copy. Only the faults in the
region count as allocations. The trap costs differ (a page fault here is
~15 us, a uprobe trap ~1.5 us), so its loss and wall time are not the
uprobe's.
Prints Markdown on stdout (progress on stderr). Run as root. Each
recording is short (under 10 s); each report pass takes about 1 minute
per 150000 samples on a 2-core VM.
"""

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from lib.build import build_lua_host  # noqa: E402
from allocsites_lib import perfrun  # noqa: E402

PERF = "perf"
LUACHECK_DIR = "/usr/share/lua/5.1/luacheck"
LUACHECK_FILES = ["parser.lua", "lexer.lua", "main.lua"]
MARKER = 0xffffffffffffffff


def log(msg):
    sys.stderr.write("stack_depth: %s\n" % msg)
    sys.stderr.flush()


def workloads(names, rounds):
    """[(name, description, argv after the host)]"""
    out = []
    for name in names:
        if name == "synthetic":
            out.append((name, "bench/lua_workload.lua %d" % rounds,
                        [os.path.join(HERE, "lua_workload.lua"), str(rounds)]))
        elif name == "luacheck":
            if not os.path.isdir(LUACHECK_DIR):
                log("luacheck skipped: apt-get install lua-check")
                continue
            files = [os.path.join(LUACHECK_DIR, f) for f in LUACHECK_FILES]
            out.append((name, "luacheck --no-cache --no-color " +
                        " ".join(files) + " (bench/luacheck_54.lua)",
                        [os.path.join(HERE, "luacheck_54.lua"), "--no-cache",
                         "--no-color"] + files))
        else:
            raise SystemExit("stack_depth: unknown workload %s" % name)
    return out


_ALLOCS_RE = re.compile(r"^lua_host: allocs=(\d+) bytes=(\d+)$", re.M)
_HIST_RE = re.compile(r"^lua_host: stack-bytes((?: \d+:\d+)*)$", re.M)


def host_counts(stderr):
    m = _ALLOCS_RE.search(stderr)
    if not m:
        raise SystemExit("stack_depth: no count from lua_host:\n" + stderr)
    return int(m.group(1)), int(m.group(2))


def native_run(host, argv):
    """(wall s, allocs, {upper bound bytes: allocations})"""
    env = dict(os.environ, LUA_HOST_STACK="1")
    start = time.monotonic()
    proc = subprocess.run([host] + argv, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, universal_newlines=True,
                          env=env)
    wall = time.monotonic() - start
    allocs, _ = host_counts(proc.stderr)
    hist = {}
    m = _HIST_RE.search(proc.stderr)
    for pair in (m.group(1).split() if m else []):
        upper, count = pair.split(":")
        hist[int(upper)] = int(count)
    return wall, allocs, hist


_ADDED_RE = re.compile(r"^\s*(sdt_rt:\w+)\s+\(on ")


class Event:
    """sdt_rt:alloc on one binary: perf's name for it, deleted by close()."""

    def __init__(self, binary):
        self.name = None
        self.cache = tempfile.mkdtemp(prefix="stack-depth-buildid-")
        proc = subprocess.run([PERF, "--buildid-dir", self.cache, "probe",
                               "-f", "-x", binary, "sdt_rt:alloc"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
        names = {m.group(1) for m in map(_ADDED_RE.match,
                                         proc.stdout.splitlines()) if m}
        if len(names) == 1:
            self.name = names.pop()
        if proc.returncode != 0 or self.name is None:
            self.close()
            raise SystemExit("stack_depth: perf probe failed or named "
                             "%s:\n%s" % (sorted(names), proc.stdout))

    def close(self):
        if self.name:
            proc = subprocess.run([PERF, "probe", "-q", "-d", self.name],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT,
                                  universal_newlines=True)
            if proc.returncode != 0:
                log("could not delete %s: %s" % (self.name, proc.stdout))
            else:
                log("deleted %s" % self.name)
            self.name = None
        shutil.rmtree(self.cache, ignore_errors=True)


TRIGGER_PREFIX = "2000"  # lua_host.c's TRIGGER_BASE, as perf script -F addr prints it


def trigger_samples(data):
    """Samples of the stand-in trigger: page faults in the region."""
    proc = subprocess.run([PERF, "script", "-i", data, "-F", "addr"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          universal_newlines=True, check=True)
    return sum(1 for line in proc.stdout.splitlines()
               if line.strip().startswith(TRIGGER_PREFIX) and
               len(line.strip()) == 12)


def record(event, size, host, argv, data):
    """One recording: dict(wall, allocs, received, lost, bytes).
    event: the uprobe event's name, or None for the page-fault trigger."""
    trig = ["-e", event] if event else ["-c", "1", "-d", "-e", "page-faults:u"]
    cmd = [PERF, "record", "-q", "-o", data, "-z", "-m", "16384",
           "--no-bpf-event", "--call-graph", "dwarf,%d" % size] + trig + \
        ["--", host] + argv
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, universal_newlines=True)
    wall = time.monotonic() - start
    allocs, _ = host_counts(proc.stderr)
    if proc.returncode not in (0, 1):    # luacheck exits 1 on warnings
        raise SystemExit("stack_depth: perf record failed (%d):\n%s"
                         % (proc.returncode, proc.stderr[-2000:]))
    text = perfrun.stats_text(data, PERF, timeout=600)
    if event:
        received = sum(perfrun.event_samples(text).values())
        lost, lost_records = perfrun.parse_stats(text)
    else:
        received = trigger_samples(data)
        lost, lost_records = perfrun.parse_stats(text, "page-faults")
    if lost == 0 and lost_records:
        lost = "?(%d records)" % lost_records
    return {"wall": wall, "allocs": allocs, "received": received,
            "lost": lost, "bytes": os.path.getsize(data)}


def timed(cmd, env=None):
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, universal_newlines=True,
                          env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit("stack_depth: %s failed (%d):\n%s" % (
            " ".join(cmd), proc.returncode, proc.stderr[-3000:]))
    return time.monotonic() - start


def reports(data, tmp, uprobe=True):
    """Both report passes over one recording. uprobe false: the stand-in
    trigger's recording, which allocsites report cannot read: its default
    pass runs bench/stack_depth_perf.py with perf script's default
    --max-stack."""
    default_json = os.path.join(tmp, "default.json")
    deep_json = os.path.join(tmp, "deep.json")
    stats_json = os.path.join(tmp, "stats.json")
    default_stats = os.path.join(tmp, "default_stats.json")
    wrapper = [PERF, "script", "-i", data, "--no-inline"]
    script = ["-s", os.path.join(HERE, "stack_depth_perf.py"), "--",
              "--json"]
    if uprobe:
        t_default = timed(["/usr/bin/python3", os.path.join(ROOT, "scripts",
                                                            "allocsites"),
                           "report", "-i", data, "--json", default_json])
    else:
        t_default = timed(wrapper + script + [default_json],
                          env=dict(os.environ, STACK_DEPTH_STATS=default_stats))
    t_deep = timed(wrapper + ["--max-stack", "1024"] + script + [deep_json],
                   env=dict(os.environ, STACK_DEPTH_STATS=stats_json))
    out = {"t_default": t_default, "t_deep": t_deep}
    for key, path in (("default", default_json), ("deep", deep_json),
                      ("stats", stats_json)):
        with open(path) as f:
            out[key] = json.load(f)
    out["marker_frames"] = marker_frames(out["default"])
    return out


def marker_frames(report):
    """How the report shows perf's end-of-unwind marker: the distinct
    outermost frames of stacks that end in an address-only frame."""
    seen = {}
    for stack in report.get("stacks", []):
        frames = stack.get("frames") or []
        if frames and "ffffffffffffffff" in json.dumps(frames[-1]):
            key = json.dumps(frames[-1], sort_keys=True)
            seen[key] = seen.get(key, 0) + stack.get("count", 0)
    return seen


def pct(part, whole):
    return "%.1f%%" % (100.0 * part / whole) if whole else "-"


def share_within(hist, size):
    """Allocations whose stack depth (host's count) is at most size."""
    return sum(c for upper, c in hist.items() if upper <= size)


def measure(wl, host, native_host, event, sizes, runs, keep):
    """native_host: the host without the page-fault trigger, for the
    native run (the trigger's faults would dominate its time)."""
    name, desc, argv = wl
    log("%s: native run" % name)
    native_wall, native_allocs, hist = native_run(native_host, argv)
    rows = []
    for size in sizes:
        tmp = tempfile.mkdtemp(prefix="stack-depth-", dir=keep)
        try:
            recs = []
            for i in range(runs):
                data = os.path.join(tmp, "run%d.data" % i)
                rec = record(event, size, host, argv, data)
                log("%s %d run %d: %.2f s, %d of %d received, lost %s, "
                    "%.1f MB" % (name, size, i + 1, rec["wall"],
                                 rec["received"], rec["allocs"],
                                 rec["lost"], rec["bytes"] / 1e6))
                rec["data"] = data
                recs.append(rec)
            best = min(recs, key=lambda r: (r["allocs"] - r["received"], r["wall"]))
            for r in recs:
                if r is not best and not keep:
                    os.unlink(r["data"])
            log("%s %d: reporting run %d" % (name, size, recs.index(best) + 1))
            rep = reports(best["data"], tmp, uprobe=event is not None)
            log("%s %d: reports took %.0f s and %.0f s" % (
                name, size, rep["t_default"], rep["t_deep"]))
            rows.append((size, recs, best, rep))
        finally:
            if not keep:
                shutil.rmtree(tmp, ignore_errors=True)
    return native_wall, native_allocs, hist, rows


def print_workload(wl, native_wall, native_allocs, hist, rows):
    name, desc, _ = wl
    deepest = max(hist) if hist else 0
    print("### %s: %s" % (name, desc))
    print()
    print("Native (lua_host): %d allocations in %.2f s. C stack depth at the "
          "allocations (lua_host's own count, bytes from l_alloc's stack "
          "pointer to __libc_stack_end): median <= %d, 99%% <= %d, "
          "deepest <= %d bytes." % (
              native_allocs, native_wall, quantile(hist, 0.5),
              quantile(hist, 0.99), deepest))
    print()
    print("| stack bytes | record wall s, median (min-max) | received / "
          "host allocs, per run | lost samples, per run | perf.data bytes "
          "per received event | report s (default / --max-stack 1024) |")
    print("|---|---|---|---|---|---|")
    for size, recs, best, rep in rows:
        walls = [r["wall"] for r in recs]
        print("| %d | %.2f (%.2f-%.2f) | %s | %s | %.0f | %.0f / %.0f |" % (
            size, statistics.median(walls), min(walls), max(walls),
            " ".join("%d/%d" % (r["received"], r["allocs"]) for r in recs),
            " ".join(str(r["lost"]) for r in recs),
            best["bytes"] / max(best["received"], 1),
            rep["t_default"], rep["t_deep"]))
    print()
    print("Stacks of the run with the least loss (shares of its received "
          "events; \"host\": share of the native run's allocations whose "
          "stack depth is at most the copy size):")
    print()
    print("| stack bytes | host: depth <= size | raw chain has main | raw "
          "chain ends at _start | ends at the 0xff..ff marker | ends "
          "elsewhere | report reaches a root, default --max-stack (127) "
          "| same, --max-stack 1024 | deepest chain, entries | chains over "
          "127 entries |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size, recs, best, rep in rows:
        st = rep["stats"]
        n = st["samples"]
        frames = {int(k): v for k, v in st["frames"].items()}
        d, dp = rep["default"], rep["deep"]
        print("| %d | %s | %s | %s | %s | %s | %s | %s | %d | %d |" % (
            size, pct(share_within(hist, size), native_allocs),
            pct(st["reach_main"], n), pct(st["end_root"], n),
            pct(st["end_marker"], n), pct(st["end_other"], n),
            pct(d["totals"]["count"] - d["truncated_allocations"],
                d["totals"]["count"]),
            pct(dp["totals"]["count"] - dp["truncated_allocations"],
                dp["totals"]["count"]),
            max(frames) if frames else 0,
            sum(v for k, v in frames.items() if k > 127)))
    print()
    for size, recs, best, rep in rows:
        st = rep["stats"]
        if st["tails"]:
            print("Cut-short callchains at %d bytes (perf's last 3 entries, "
                  "leaf first; up to 2 shown):" % size)
            print()
            for t in st["tails"][:2]:
                print("    %d entries: ...%s" % (t["entries"],
                                                json.dumps(t["tail"])))
            print()
            print("The marker's entries: %s; in the report's JSON the "
                  "outermost frame of those stacks: %s" % (
                      json.dumps(st["marker_entries"]),
                      json.dumps(rep["marker_frames"]) or "-"))
            print()
            break


def quantile(hist, q):
    total = sum(hist.values())
    acc = 0
    for upper in sorted(hist):
        acc += hist[upper]
        if acc >= q * total:
            return upper
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="2048,4096,8192,16384,32768,65528")
    ap.add_argument("--workloads", default="synthetic,luacheck")
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds of bench/lua_workload.lua")
    ap.add_argument("--keep", help="keep the recordings under this directory")
    ap.add_argument("--trigger", choices=("uprobe", "pagefault"),
                    default="uprobe")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    wls = workloads(args.workloads.split(","), args.rounds)
    uprobe = args.trigger == "uprobe"
    native_host = build_lua_host()
    host = native_host if uprobe else build_lua_host("pagefault")
    # SIGTERM/SIGHUP unwind like Ctrl-C, so that the event is deleted.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    event = Event(host) if uprobe else None
    if event:
        log("event %s" % event.name)
    results = []
    try:
        for wl in wls:
            results.append((wl, measure(wl, host, native_host,
                                        event and event.name,
                                        sizes, args.runs, args.keep)))
    finally:
        if event:
            event.close()
    print("machine: %d cores (nproc), kernel %s; %s; %d recordings per "
          "size" % (os.cpu_count(), platform.release(),
                    subprocess.run([PERF, "version"], stdout=subprocess.PIPE,
                                   universal_newlines=True).stdout.strip(),
                    args.runs))
    print("recording: perf record -z -m 16384 --no-bpf-event "
          "--call-graph dwarf,SIZE %s" % (
              "-e sdt_rt:alloc (lua_host)" if uprobe else
              "-c 1 -d -e page-faults:u (lua_host-pf: the page-fault "
              "stand-in for the uprobe, see the docstring)"))
    print()
    for wl, res in results:
        print_workload(wl, *res)


if __name__ == "__main__":
    main()
