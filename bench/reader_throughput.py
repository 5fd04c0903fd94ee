#!/usr/bin/python3
"""The native reader's speed: events per second per core, against perf.

  bench/reader_throughput.py [--units 2500] [--rounds 3]

Records `build/minicc UNITS` once with `allocsites record` (DWARF stack
copies, the default), then times on that one file, --rounds times each,
interleaved:

  allocsites-read           the native reader alone (stream to /dev/null)
  allocsites-read, libdw    the same with ALLOCSITES_READER_NO_CACHE=1:
                            every sample through libdw's unwinder
  perf script               one plain text pass (perf's own unwinding)

and prints the median (min-max) wall time, events per second (alloc and
free events, from the reader's own count) and peak RSS. Every sample is
unwound by both of the reader's paths once more with
ALLOCSITES_READER_VERIFY=1, and the count of differing stacks printed.
Run as root on an idle machine.
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
READER = os.path.join(BUILD, "allocsites-read")


def timed(argv, env=None):
    """(seconds, peak RSS KB, stderr) of argv, stdout to /dev/null."""
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=dict(os.environ, **(env or {})),
                          universal_newlines=True)
    took = time.monotonic() - start
    lines = proc.stderr.strip().splitlines()
    return took, int(lines[-1]) if lines else 0, "\n".join(lines[:-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--units", type=int, default=2500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="reader-throughput-")
    data = os.path.join(tmp, "run.data")
    try:
        rec = subprocess.run(
            ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites"),
             "record", "-o", data, "--", os.path.join(BUILD, "minicc"),
             str(args.units)], stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, universal_newlines=True)
        if rec.returncode != 0:
            raise SystemExit("reader_throughput: record failed: %s"
                             % rec.stderr.strip()[-300:])
        _, _, said = timed([READER, data], {"ALLOCSITES_READER_VERIFY": "1"})
        m = re.search(r"unwound (\d+) samples from cached CFI, (\d+) with "
                      r"libdw; (\d+) differ", said)
        events = int(subprocess.run(
            ["/usr/bin/python3", "-c",
             "import sys; sys.path.insert(0, %r); "
             "from allocsites_lib import perfdata; "
             "print(perfdata.scan(%r, keep_times=False).samples)"
             % (os.path.join(ROOT, "scripts"), data)],
            stdout=subprocess.PIPE, universal_newlines=True,
            check=True).stdout)
        runs = {"allocsites-read": ([READER, data], None),
                "allocsites-read, libdw": ([READER, data],
                                           {"ALLOCSITES_READER_NO_CACHE":
                                            "1"}),
                "perf script": (["perf", "script", "-i", data], None)}
        results = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, (argv, env) in runs.items():
                results[name].append(timed(argv, env))
        print("# The native reader's throughput\n")
        print("Machine: %s, %d CPUs, %s; `bench/reader_throughput.py "
              "--units %d --rounds %d`: minicc %d, %d events (%.1f MB "
              "recording).\n" % (platform.node(), os.cpu_count(),
                                 platform.release(), args.units,
                                 args.rounds, args.units, events,
                                 os.path.getsize(data) / 1e6))
        print("| reader | wall s, median (min-max) | events/s | peak RSS |")
        print("|---|---|---|---|")
        for name, rows in results.items():
            secs = [r[0] for r in rows]
            med = statistics.median(secs)
            print("| %s | %.2f (%.2f-%.2f) | %.0fk | %d MB |"
                  % (name, med, min(secs), max(secs), events / med / 1e3,
                     max(r[1] for r in rows) // 1024))
        if m:
            print("\nUnwound from cached CFI: %s samples, with libdw: %s; "
                  "stacks that differ between the two: %s." % m.groups())
    finally:
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)


if __name__ == "__main__":
    sys.exit(main())
