"""Builds the storm workload (bench/storm) in the variants the
contenders need, into $BUILD/bench (default build/bench).

Sources are compiled by absolute path, so that every tool's DWARF file
names are the same absolute paths. All variants: gcc -O2 -g, the
reference allocator linked in statically (one binary, one DWARF).
"""

import os
import subprocess

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))

# variant -> extra gcc flags
VARIANTS = {
    # no probes at all: the baseline
    "plain": ["-DRT_PROBES_DISABLE"],
    # the probes compiled in: allocsites (recorded or not)
    "probes": [],
    # heaptrack's custom-allocator API, no probes
    "heaptrack": ["-DRT_PROBES_DISABLE", "-DRT_ALLOC_HEAPTRACK"],
    # bpftrace: the probes, and frame pointers for its ustack unwinder
    "fp": ["-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
           "-fno-pie", "-no-pie"],
    # valgrind's client requests, no probes
    "valgrind": ["-DRT_PROBES_DISABLE", "-DRT_ALLOC_VALGRIND"],
}


def build_storm(variant):
    """-> path of the storm binary of this variant (rebuilt every time:
    cheap, and never a stale binary)."""
    out = os.path.join(BUILD, "bench", "storm-" + variant)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(["gcc", "-O2", "-g", "-std=gnu99", "-Wall", "-Wextra",
                    "-D_DEFAULT_SOURCE"] + VARIANTS[variant] +
                   ["-I" + os.path.join(ROOT, "include"),
                    "-I" + os.path.join(ROOT, "examples", "rtalloc"),
                    os.path.join(HERE, "storm", "storm.c"),
                    os.path.join(ROOT, "examples", "rtalloc", "rt_alloc.c"),
                    "-o", out, "-pthread"], check=True)
    return out
