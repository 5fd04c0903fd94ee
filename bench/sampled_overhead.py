#!/usr/bin/python3
"""Cost of sampled mode against the uninstrumented program.

Regenerates the table of docs/benchmarks.md,
"Sampled mode against the uninstrumented program: `bench/sampled_overhead.py`":

    /usr/bin/python3 bench/sampled_overhead.py --runs 5

  bench/sampled_overhead.py [--runs N] [--rates 512k,64k] [--workloads minicc,burst]

Runs two allocation-heavy workloads (see WORKLOADS: the example compiler
with 21M allocations, and bench/burst with 100M, a program that does
nothing but allocate) as:
  - uninstrumented: built with -DRT_PROBES_DISABLE;
  - probes in, not recorded: the same source with the probes;
  - sampled at each rate: `allocsites record --sample RATE`.
The times compared are the program's own measurements: the wall time of
its work (elapsed_ns) and its CPU time, user + system, traps included
(cpu_ns, from getrusage), so perf's start-up and the writing of perf.data at exit are
excluded, as the issue asks. Median of --runs, min and max shown. Prints a
Markdown table. Run as root on an otherwise idle machine.
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lib.build import BURST, build  # noqa: E402
ROOT = os.path.dirname(HERE)
ALLOCSITES = [sys.executable, os.path.join(ROOT, "scripts", "allocsites")]


def elapsed(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    m = re.search(r"elapsed_ns=(\d+) cpu_ns=(\d+)", proc.stdout)
    if proc.returncode != 0 or not m:
        raise SystemExit("bench: %s failed:\n%s%s" % (cmd, proc.stdout,
                                                      proc.stderr))
    lost = re.search(r"lost: (\S+)", proc.stderr)
    samples = re.search(r"recorded (\d+) sample", proc.stderr)
    return (int(m.group(1)) / 1e9, lost.group(1) if lost else "-",
            int(samples.group(1)) if samples else None, int(m.group(2)) / 1e9)


MINICC = [os.path.join(ROOT, "examples", "minicc", n + ".c")
          for n in ("main", "lexer", "parser", "types", "emit")]
WORKLOADS = {
    # name: (sources, argument, what it is)
    "burst": ([BURST], "100000000",
              "bench/burst 100000000: 100M rt_alloc+rt_free pairs of 8..127 "
              "bytes and nothing else, 12 frames deep (the worst case)"),
    "minicc": (MINICC, "50000",
               "examples/minicc 50000: a compiler front end (lex, parse, type "
               "check) making 21M allocations"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rates", default="512k,64k")
    ap.add_argument("--workloads", default="minicc,burst")
    args = ap.parse_args()
    print("machine: %d cores, kernel %s; %s; median of %d runs, the "
          "configurations interleaved" % (
              os.cpu_count(), platform.release(),
              subprocess.run(["perf", "--version"], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.strip(),
              args.runs))
    for workload in args.workloads.split(","):
        sources, arg, what = WORKLOADS[workload]
        plain = build(workload, sources)
        off = build(workload + "-noprobes", sources, "-DRT_PROBES_DISABLE")
        configs = [("uninstrumented (-DRT_PROBES_DISABLE)", lambda d: [off]),
                   ("probes compiled in, not recorded", lambda d: [plain])]
        for rate in args.rates.split(","):
            configs.append(("sampled, --sample %s" % rate,
                            lambda d, rate=rate: ALLOCSITES + [
                                "record", "--sample", rate, "-o",
                                os.path.join(d, "s.data"), "--", plain]))
        results = {name: [] for name, _ in configs}
        with tempfile.TemporaryDirectory(prefix="allocsites-bench-") as tmp:
            for _ in range(args.runs):      # interleaved: drift hits all
                for name, make in configs:
                    results[name].append(elapsed(make(tmp) + [arg]))
        base = statistics.median(r[0] for r in results[configs[0][0]])
        print()
        print("workload: " + what)
        print()
        cpu_base = statistics.median(r[3] for r in results[configs[0][0]])
        print("| build / recording | wall s, median (min-max) | vs "
              "uninstrumented | CPU s (user+sys), median (min-max) | vs "
              "uninstrumented | samples per run | lost |")
        print("|---|---|---|---|---|---|---|")
        for name, _ in configs:
            times = [r[0] for r in results[name]]
            cpus = [r[3] for r in results[name]]
            samples = [r[2] for r in results[name] if r[2] is not None]
            med, cmed = statistics.median(times), statistics.median(cpus)
            print("| %s | %.3f (%.3f-%.3f) | %+.1f%% | %.3f (%.3f-%.3f) | "
                  "%+.1f%% | %s | %s |" % (
                      name, med, min(times), max(times),
                      100.0 * (med - base) / base, cmed, min(cpus), max(cpus),
                      100.0 * (cmed - cpu_base) / cpu_base,
                      ("%d" % statistics.median(samples)) if samples else "-",
                      ", ".join(sorted({r[1] for r in results[name]}))))


if __name__ == "__main__":
    main()
