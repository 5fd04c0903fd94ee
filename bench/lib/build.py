"""Builds the benchmark programs into $BUILD/bench (default
build/bench): gcc -O2 -g, the reference allocator linked in statically
(one binary, one DWARF). Sources are compiled by absolute path, so that
every tool's DWARF file names are the same absolute paths.

build(name, sources, *flags)   any program (bench/burst.c, minicc)
build_storm(variant)           bench/storm in one of VARIANTS, once per
                               process (the sources do not change while
                               a benchmark runs)
"""

import functools
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


def build(name, sources, *flags):
    """-> path of $BUILD/bench/name, built from sources + rt_alloc.c."""
    out = os.path.join(BUILD, "bench", name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(["gcc", "-O2", "-g", "-std=c99", "-D_DEFAULT_SOURCE"] +
                   list(flags) +
                   ["-I" + os.path.join(ROOT, "include"),
                    "-I" + os.path.join(ROOT, "examples", "rtalloc")] +
                   [os.path.abspath(s) for s in sources] +
                   [os.path.join(ROOT, "examples", "rtalloc", "rt_alloc.c"),
                    "-o", out, "-pthread"], check=True)
    return out


@functools.lru_cache(maxsize=None)
def build_storm(variant):
    """-> path of the storm binary of this variant."""
    return build("storm-" + variant,
                 [os.path.join(HERE, "storm", "storm.c")],
                 "-Wall", "-Wextra", *VARIANTS[variant])
