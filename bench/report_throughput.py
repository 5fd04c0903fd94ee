#!/usr/bin/python3
"""Report speed: the native reader (the default) and perf script workers,
against one plain perf script over the same file.

Regenerates the table of docs/benchmarks.md,
"Report throughput: `bench/report_throughput.py`":

    allocsites record -o FILE -- build/minicc 500
    /usr/bin/python3 bench/report_throughput.py --data FILE --runs 5

Samples per second of `allocsites report` as it reads by default (the
native reader, allocsites-read), and with ALLOCSITES_READER=perf's
perf script workers, one and K, against one plain `perf script` text run
over the same perf.data.

  bench/report_throughput.py [--workload minicc|storm] [--size N]
                             [--depth N] [--allocs N] [--runs N]
                             [--jobs K] [--data FILE]

Records once with the recording defaults, exactly:

    perf probe -f -x PROG sdt_rt:alloc        (its own build-id cache)
    perf record -z -m 16384 --no-bpf-event --call-graph dwarf,8192 \\
        -e NAME -- PROG ARGS                 (NAME as perf probe printed it)
    perf probe -d NAME                        (that event only)

(minicc 500 by default: 213431 allocations; --workload storm: bench/storm
SIZE 1 DEPTH), or takes --data FILE as it is. Then times on that file,
the tools interleaved, --runs rounds:

  perf script                      perf's plain text output: the reference
  perf script -s allocsites.py     the single-process report, by hand
                                   (--no-inline, as the README shows)
  allocsites report --json         the default: the native reader
  ALLOCSITES_READER=perf allocsites report -j 1 --json    one worker
  ALLOCSITES_READER=perf allocsites report -j K --json    K workers
                                   (default: the CPUs)
  ALLOCSITES_READER=perf allocsites report --json         K as the
                                   report picks it (fewer when other
                                   processes keep CPUs busy)
  perf script -s stackcollapse.py  perf's own folding script, with the
                                   trace_unhandled it lacks for sdt events

The rate is the samples in the file over the median wall time. The VM
this ran on is shared: each run first notes how busy the CPUs were in
the second before it (other processes), and the table gives min-max.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from lib.build import BUILD, build_storm  # noqa: E402
from lib.tool_allocsites import ALLOCSITES, ROOT  # noqa: E402
# The report timed as a user's machine runs it: Python's bytecode cache on
# (lib/quick.py says why), filled by an untimed first run.
from lib.quick import WRAPPER_ENV  # noqa: E402
from allocsites_lib.read import perfdata  # noqa: E402

# The wrapper's perf options (perfcommand.py), its stack pad in the
# program's environment; no frees (only the allocation event).
RECORD_OPTIONS = ["--compression-level=3", "-m", "16384", "--no-bpf-event",
                  "--call-graph", "dwarf,8192"]
RECORD_ENV = dict(os.environ, ALLOCSITES_STACK_PAD="." * 8192)
ENTRY = os.path.join(ROOT, "scripts", "allocsites.py")
PERF = {"ALLOCSITES_READER": "perf"}   # the perf script workers
STACKCOLLAPSE_SDT = os.path.join(HERE, "stackcollapse_sdt.py")


def busy(interval=1.0):
    """Share of CPU time the machine spent busy over interval."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = snap()
    time.sleep(interval)
    t1, i1 = snap()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def timed(cmd, cwd, env=None):
    """(wall s, user+sys s of the command and its children); env: more
    variables."""
    with tempfile.NamedTemporaryFile("r") as out:
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-q", "-f", "%U %S", "-o",
                               out.name] + cmd, cwd=cwd,
                              env=dict(WRAPPER_ENV, **(env or {})),
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, universal_newlines=True)
        wall = time.monotonic() - start
        user, sys_ = (float(x) for x in out.read().split()[-2:])
    if proc.returncode != 0:
        raise SystemExit("bench: %s exited with %d:\n%s" % (
            " ".join(cmd), proc.returncode, proc.stderr[-3000:]))
    return wall, user + sys_


def record(prog, args, data):
    """The recording with the defaults; creates and deletes its own event."""
    cache = tempfile.mkdtemp(prefix="allocsites-buildid-")
    try:
        out = subprocess.run(["perf", "--buildid-dir", cache, "probe", "-f",
                              "-x", prog, "sdt_rt:alloc"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        names = sorted(set(re.findall(r"(sdt_rt:alloc(?:_\d+)?)\s", out.stdout)))
        if out.returncode != 0 or len(names) != 1:
            raise SystemExit("bench: perf probe failed:\n" + out.stdout)
        name = names[0]
        try:
            subprocess.run(["perf", "record"] + RECORD_OPTIONS +
                           ["-e", name, "-o", data, "--", prog] + args,
                           stdout=subprocess.DEVNULL, check=True,
                           env=RECORD_ENV)
        finally:
            subprocess.run(["perf", "probe", "-q", "-d", name])
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", choices=("minicc", "storm"),
                    default="minicc")
    ap.add_argument("--size", type=int, default=None,
                    help="minicc functions (500) or storm allocations "
                         "(200000)")
    ap.add_argument("--depth", type=int, default=12, help="storm depth")
    ap.add_argument("--allocs", type=int, default=None,
                    help="the storm with this many allocations (as before: "
                         "--workload storm --size N)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--data", help="time this recording instead")
    args = ap.parse_args()
    if args.allocs:
        args.workload, args.size = "storm", args.allocs
    tmp = tempfile.mkdtemp(prefix="allocsites-throughput-")
    try:
        data = args.data
        if data is None:
            data = os.path.join(tmp, "perf.data")
            if args.workload == "minicc":
                prog = os.path.join(BUILD, "minicc")
                argv = [str(args.size or 500)]
            else:
                prog = build_storm("probes")
                argv = [str(args.size or 200000), "1", str(args.depth)]
            record(prog, argv, data)
            what = "%s %s" % (os.path.basename(prog), " ".join(argv))
        else:
            data = os.path.abspath(data)
            what = data
        scan = perfdata.scan(data)
        samples = len(scan.times)
        lost, reason = scan.lost()
        print("%s: %d samples, lost %s, perf.data %.1f MB (%s)" % (
            what, samples, lost if reason is None else "unknown",
            os.path.getsize(data) / 1e6, "zstd, %.0f MB decompressed" %
            (scan.decompressed / 1e6) if scan.compressed else "uncompressed"))
        print("machine: %d CPUs, kernel %s, %s; %d rounds, tools "
              "interleaved\n" % (
                  len(os.sched_getaffinity(0)), os.uname().release,
                  subprocess.run(["perf", "--version"], stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout.strip(),
                  args.runs))
        json_out = os.path.join(tmp, "r.json")
        tools = [
            ("perf script", ["perf", "script", "-i", data]),
            ("perf script --no-inline -s allocsites.py", [
                "perf", "script", "-i", data, "--no-inline", "-s", ENTRY,
                "--", "--json", json_out]),
            ("allocsites report --json (native reader, the default)",
             ALLOCSITES + ["report", "-i", data, "--json", json_out]),
            ("perf script workers: -j 1", ALLOCSITES + [
                "report", "-i", data, "-j", "1", "--json", json_out], PERF),
            ("perf script workers: -j %d" % args.jobs, ALLOCSITES + [
                "report", "-i", data, "-j", str(args.jobs), "--json",
                json_out], PERF),
            ("perf script workers: K from the free CPUs", ALLOCSITES + [
                "report", "-i", data, "--json", json_out], PERF),
            ("perf script -s stackcollapse.py (+ trace_unhandled)", [
                "perf", "script", "-i", data, "-s", STACKCOLLAPSE_SDT]),
        ]
        # Untimed: fills __pycache__ for the command and the workers'
        # script, as any first run on a user's machine does (WRAPPER_ENV).
        timed(ALLOCSITES + ["report", "-i", data, "--json", json_out], tmp)
        tools = [t if len(t) == 3 else t + (None,) for t in tools]
        results = {name: [] for name, _, _ in tools}
        for round_ in range(args.runs):
            for name, cmd, env in tools:
                load = busy()
                wall, cpu = timed(cmd, tmp, env)
                results[name].append((wall, cpu, load))
                sys.stderr.write("round %d: %-50s %6.2f s wall %6.2f s CPU "
                                 "(machine %2.0f%% busy before)\n" % (
                                     round_ + 1, name, wall, cpu, 100 * load))
        ref = statistics.median(w for w, _, _ in results["perf script"])
        print("| tool | wall s, median (min-max) | CPU s, median | "
              "samples/s | wall vs perf script |")
        print("|---|---|---|---|---|")
        for name, _, _ in tools:
            walls = [w for w, _, _ in results[name]]
            wall = statistics.median(walls)
            print("| %s | %.2f (%.2f-%.2f) | %.2f | %.0f | %.2fx |" % (
                name, wall, min(walls), max(walls),
                statistics.median(c for _, c, _ in results[name]),
                samples / wall, wall / ref))
        loads = [l for r in results.values() for _, _, l in r]
        print("\nother processes kept the CPUs %.0f%% busy (median of the "
              "seconds before each run; %.0f%%-%.0f%%)" % (
                  100 * statistics.median(loads), 100 * min(loads),
                  100 * max(loads)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
