"""Builds tests/c/burst.c with the reference allocator and counts a run's
instructions with valgrind's callgrind (repeatable, unlike wall time).
Used by test_offcost.py; bench/offcost_callgrind.py counts the same with
more pairs through these two functions."""

import os
import re
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BURST = os.path.join(ROOT, "tests", "c", "burst.c")


def build_burst(out, *flags):
    """-> out: tests/c/burst.c and examples/rtalloc/rt_alloc.c built with
    gcc -O2 and flags (as the benchmarks build it)."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(["gcc", "-O2", "-g", "-std=c99", "-D_DEFAULT_SOURCE"] +
                   list(flags) +
                   ["-I" + os.path.join(ROOT, "include"),
                    "-I" + os.path.join(ROOT, "examples", "rtalloc"),
                    BURST, os.path.join(ROOT, "examples", "rtalloc", "rt_alloc.c"),
                    "-o", out, "-pthread"], check=True)
    return out


def instructions(prog, pairs, env=None):
    """Instructions callgrind counts for `prog PAIRS` under env."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=" +
             os.path.join(tmp, "cg.out"), prog, str(pairs)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, env=dict(os.environ, **(env or {})))
    m = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or not m:
        raise RuntimeError("callgrind failed:\n" + proc.stderr)
    return int(m.group(1))
