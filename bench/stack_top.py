#!/usr/bin/python3
"""Whole stack copies from the main thread: the size of a recording with
include/rt_stack_top.h and record's environment pad, and without both.

  bench/stack_top.py [--runs 8] [--programs minicc,luacheck]

perf copies --stack-size bytes of stack per allocation and stops at the
first page that is not mapped in: the hole the kernel leaves below the
environment strings (arch_align_stack) or the end of the stack. The rest
of the record keeps stale ring bytes, which do not compress
(docs/design.md, "Why the same program's file was sometimes twice as
large"). Each program (bench/lossless_runs.py's) is recorded --runs times
each way with `allocsites record`, the ways interleaved:

  whole      the program as built now: the header's constructor maps the
             hole, record pads the environment by one stack copy
  stale      the same sources built with -DRT_STACK_TOP_DISABLE, recorded
             with ALLOCSITES_STACK_PAD set empty (no pad): as before

Per way: perf.data MiB and bytes per recorded event (alloc and plain
events), median (min-max), and each run's MiB. Run as root after `make
all`, on an otherwise idle machine. Progress on stderr; Markdown on
stdout.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare import machine  # noqa: E402
from lib.build import LUA_INCLUDE, LUA_STATIC, build  # noqa: E402
from lib.quick import median_range  # noqa: E402
from lossless_runs import ALLOCSITES, programs  # noqa: E402

SUMMARY = re.compile(r"recorded (\d+) (?:alloc|sample) events and (\d+) "
                     r"without a call graph")
OFF = "-DRT_STACK_TOP_DISABLE"


def stale_build(name, argv):
    """argv with the program rebuilt without rt_stack_top.h's constructor."""
    if name == "minicc":
        srcs = glob.glob(os.path.join(ROOT, "examples", "minicc", "*.c")) + \
            [os.path.join(ROOT, "examples", "rtalloc", "rt_arena.c")]
        return [build("minicc-stale", srcs, OFF)] + argv[1:]
    if name == "luacheck":
        return [build("lua_host-stale", [os.path.join(HERE, "lua_host.c")],
                      "-Wall", "-Wextra", "-I" + LUA_INCLUDE, OFF,
                      rtalloc=False,
                      libs=[LUA_STATIC, "-lm", "-ldl", "-Wl,-E"])] + argv[1:]
    raise SystemExit("stack_top: no stale build for %s" % name)


def once(argv, env, tmp):
    data = os.path.join(tmp, "run.data")
    rec = subprocess.run(ALLOCSITES + ["record", "-o", data, "--"] + argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         universal_newlines=True, env=env)
    m = SUMMARY.search(rec.stderr)
    if m is None or "lost: 0 " not in rec.stderr:
        raise SystemExit("stack_top: record failed or lost events:\n" +
                         rec.stderr[-2000:])
    size = os.path.getsize(data)
    for path in os.listdir(tmp):
        os.unlink(os.path.join(tmp, path))
    return size / 2**20, size / (int(m.group(1)) + int(m.group(2)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--programs", default="minicc,luacheck")
    args = ap.parse_args()
    progs = programs(args.programs.split(","))
    whole_env = {k: v for k, v in os.environ.items()
                 if k != "ALLOCSITES_STACK_PAD"}
    stale_env = dict(whole_env, ALLOCSITES_STACK_PAD="")
    print("allocsites record, defaults; %d runs each way, interleaved; %s"
          % (args.runs, machine()))
    print()
    print("| program | way | MiB, median (min-max) | bytes/event, median "
          "(min-max) | each run, MiB |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="stack-top-") as tmp:
        for name, (argv, _truth) in progs.items():
            ways = [("whole", argv, whole_env),
                    ("stale", stale_build(name, argv), stale_env)]
            rows = {w: [] for w, _, _ in ways}
            for i in range(args.runs):
                for way, av, env in ways:
                    sys.stderr.write("stack_top: %s %s %d/%d\n"
                                     % (name, way, i + 1, args.runs))
                    rows[way].append(once(av, env, tmp))
            for way, _, _ in ways:
                mib = [r[0] for r in rows[way]]
                per = [r[1] for r in rows[way]]
                print("| %s | %s | %s | %s | %s |" % (
                    name, way, median_range(mib, 1), median_range(per, 1),
                    " ".join("%.1f" % m for m in mib)))


if __name__ == "__main__":
    main()
