"""What bench/sampled_total.py and bench/report_throughput.py
share: a uprobe event made with perf probe, a command timed quietly, and
the median (min-max) cell of their tables."""

import os
import re
import statistics
import subprocess
import time

ADDED_RE = re.compile(r"^\s*(sdt_rt:\w+)\s+\(on ", re.M)

# Python caches compiled modules in __pycache__ unless
# PYTHONDONTWRITEBYTECODE is set, as it is in some containers (this
# project's development VM): every run then compiles the package again,
# 20-40 ms. The wrapper is timed as a user's machine runs it, caching on
# (a first, untimed run fills the cache).
WRAPPER_ENV = {k: v for k, v in os.environ.items()
               if k != "PYTHONDONTWRITEBYTECODE"}
PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "scripts", "allocsites_lib")


def fill_bytecode_cache():
    """Compiles the package into __pycache__ (untimed), as a user's first
    run does, so that no timed run of allocsites pays for it."""
    subprocess.run(["/usr/bin/python3", "-m", "compileall", "-q", PACKAGE],
                   env=WRAPPER_ENV, check=True, stdout=subprocess.DEVNULL)


def add_event(cache, program, probe, who):
    """The name perf probe gave the new event sdt_rt:PROBE of program
    (with a private build-id cache); SystemExit naming who if it failed."""
    proc = subprocess.run(["perf", "--buildid-dir", cache, "probe", "-f",
                           "-x", program, "sdt_rt:" + probe],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    names = ADDED_RE.findall(proc.stdout)
    if proc.returncode != 0 or not names:
        raise SystemExit("%s: perf probe failed:\n%s" % (who, proc.stdout))
    return names[0]


def timed(cmd, env, who):
    """(wall seconds, stderr) of cmd, its stdout discarded; SystemExit
    naming who when it fails."""
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          universal_newlines=True, env=env)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit("%s: %s exited with %d:\n%s"
                         % (who, " ".join(cmd), proc.returncode,
                            proc.stderr[-2000:]))
    return wall, proc.stderr


def median_range(values, digits=3):
    """'median (min-max)' with that many decimals."""
    f = "%%.%df" % digits
    return (f + " (" + f + "-" + f + ")") % (
        statistics.median(values), min(values), max(values))
