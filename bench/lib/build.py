"""Builds the benchmark programs into $BUILD/bench (default
build/bench): gcc -O2 -g, the reference allocator linked in statically
(one binary, one DWARF). Sources are compiled by absolute path, so that
every tool's DWARF file names are the same absolute paths.

build(name, sources, *flags)   any program (BURST, minicc);
                               rtalloc=False leaves the reference
                               allocator out, libs= are linked last
build_storm(variant)           bench/storm in one of VARIANTS, once per
                               process (the sources do not change while
                               a benchmark runs)
build_lua_host()               bench/lua_host.c with Lua 5.4 linked in
                               statically (Debian liblua5.4-dev)
"""

import functools
import os
import subprocess

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
# burst: rt_alloc+rt_free pairs as fast as it can (its source lives with
# the test that counts its instructions, tests/unit/test_offcost.py).
BURST = os.path.join(ROOT, "tests", "c", "burst.c")

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


def build(name, sources, *flags, rtalloc=True, libs=()):
    """-> path of $BUILD/bench/name, built from sources + rt_alloc.c
    (without it if rtalloc is false), linked with libs (after the
    sources, as static libraries need)."""
    out = os.path.join(BUILD, "bench", name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    allocator = [os.path.join(ROOT, "examples", "rtalloc", "rt_alloc.c")]
    if {"-DRT_ALLOC_HEAPTRACK", "-DRT_ALLOC_VALGRIND"} & set(flags):
        # The same allocator, other tools' hooks in place of its probes.
        allocator = [os.path.join(HERE, "lib", "rt_alloc_hooked.c")]
    subprocess.run(["gcc", "-O2", "-g", "-std=c99", "-D_DEFAULT_SOURCE"] +
                   list(flags) +
                   ["-I" + os.path.join(ROOT, "include"),
                    "-I" + os.path.join(ROOT, "examples", "rtalloc"),
                    "-I" + os.path.join(HERE, "lib")] +
                   [os.path.abspath(s) for s in sources] +
                   (allocator if rtalloc else []) +
                   ["-o", out, "-pthread"] + list(libs), check=True)
    return out


@functools.lru_cache(maxsize=None)
def build_storm(variant):
    """-> path of the storm binary of this variant."""
    return build("storm-" + variant,
                 [os.path.join(HERE, "storm", "storm.c")],
                 "-Wall", "-Wextra", *VARIANTS[variant])


LUA_INCLUDE = "/usr/include/lua5.4"
LUA_STATIC = "/usr/lib/x86_64-linux-gnu/liblua5.4.a"


def build_lua_host(trigger=None):
    """-> path of $BUILD/bench/lua_host: bench/lua_host.c, its own
    annotated lua_Alloc, Lua 5.4 linked statically (Debian's
    liblua5.4-dev: no debug info, but symbols and .eh_frame, which is
    what perf's unwinder needs). -Wl,-E exports the
    Lua API to C modules that require() loads (luafilesystem), as the
    lua standalone does.

    trigger="pagefault": $BUILD/bench/lua_host-pf instead, whose every
    allocation also page-faults on a fixed page (bench/lua_host.c,
    LUA_HOST_FAULT_TRIGGER): for recording the same stacks with the
    page-faults software event where uprobes are not usable."""
    for path in (LUA_INCLUDE, LUA_STATIC):
        if not os.path.exists(path):
            raise SystemExit("bench: %s missing: apt-get install "
                             "liblua5.4-dev" % path)
    variant = ["-DLUA_HOST_FAULT_TRIGGER"] if trigger == "pagefault" else []
    return build("lua_host-pf" if trigger == "pagefault" else "lua_host",
                 [os.path.join(HERE, "lua_host.c")],
                 "-Wall", "-Wextra", "-I" + LUA_INCLUDE, *variant,
                 rtalloc=False,
                 libs=[LUA_STATIC, "-lm", "-ldl", "-Wl,-E"])
