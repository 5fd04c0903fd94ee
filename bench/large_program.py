#!/usr/bin/python3
"""A large program: many functions, many allocation sites, one source file.

Regenerates the table of docs/benchmarks.md,
"A large program: `bench/large_program.py`":

    /usr/bin/python3 bench/large_program.py

  bench/large_program.py [--functions 20000] [--rounds 5]

What it is for: the report's cost that grows with the program, not with
the events. A compiler or a database engine has tens of thousands of
functions, and an amalgamated source (SQLite's sqlite3.c) has them in
one translation unit. Naming a frame once per distinct pc used to cost
a pass over all of a binary's symbols (libdw's dwfl_module_addrinfo),
and the line of a pc a walk of its whole unit (dwarf_getscopes), so the
report grew with functions x sites: by hand, before both were indexed
(commits c178d07 and 77a4dab), a 30,000-function program's 30,000
sites took the report 28 s, and 5000 inlined probe sites 188 s.

The program, generated here: --functions functions in one C file, each
calling the reference allocator (examples/rtalloc) from a call site of
its own, and main calling each of them --rounds times, then freeing
every block. Built twice with gcc -O1 -g: with the probes, and with
heaptrack's custom-allocator API in the same allocator (bench/lib,
-DRT_ALLOC_HEAPTRACK, as exact_scale.py's minicc).

Rows, one run each: native (the probes build alone); allocsites dwarf
(`allocsites record`, then `allocsites report --json`); heaptrack (the
hooked build under heaptrack, then heaptrack_print with exact_scale.py's
options). Columns: record and report wall times, the report's peak
memory (all its processes' resident sizes, polled every 50 ms), the
sites the report found (allocsites: its JSON's sites; the truth is
--functions), and whether its totals equal the program's (count and
bytes, which the generator knows).

Prints Markdown on stdout; progress on stderr. Run as root (perf), after
`make all`: about two minutes here at the defaults, the build (about
25 s) included.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from exact_scale import ALLOCSITES, run  # noqa: E402
from lib.quick import fill_bytecode_cache  # noqa: E402

SIZES = 7   # block sizes cycle through 16 + 8 * (i % SIZES)


def say(text):
    sys.stderr.write("large_program: %s\n" % text)
    sys.stderr.flush()


def source(functions, rounds):
    """The program's C source, and its truth: (allocations, bytes)."""
    out = ['#include "rt_alloc.h"',
           "#define NOINLINE __attribute__((noinline))",
           "static void *kept[%d];" % (functions * rounds),
           "static unsigned long n;"]
    for i in range(functions):
        out.append("NOINLINE void f%d(void) { kept[n++] = rt_alloc(%d, %d); }"
                   % (i, 16 + 8 * (i % SIZES), i % 5))
    out.append("int main(void)\n{\n\tfor (int r = 0; r < %d; r++) {"
               % rounds)
    out += ["\t\tf%d();" % i for i in range(functions)]
    out.append("\t}\n\tfor (unsigned long i = 0; i < n; i++)\n"
               "\t\trt_free(kept[i]);\n\treturn 0;\n}")
    nbytes = rounds * sum(16 + 8 * (i % SIZES) for i in range(functions))
    return "\n".join(out) + "\n", (functions * rounds, nbytes)


def build(src, out, *flags):
    alloc = os.path.join(ROOT, "examples", "rtalloc", "rt_alloc.c")
    if "-DRT_ALLOC_HEAPTRACK" in flags:
        alloc = os.path.join(HERE, "lib", "rt_alloc_hooked.c")
    subprocess.run(["gcc", "-O1", "-g", "-std=c99", "-D_DEFAULT_SOURCE"] +
                   list(flags) +
                   ["-I" + os.path.join(ROOT, "include"),
                    "-I" + os.path.join(ROOT, "examples", "rtalloc"),
                    "-I" + os.path.join(HERE, "lib"), src, alloc,
                    "-o", out, "-pthread"], check=True)


def allocsites_row(prog, truth, tmp):
    data = os.path.join(tmp, "run.data")
    out = os.path.join(tmp, "r.json")
    say("allocsites: record")
    rec_s, _, rc, err = run(ALLOCSITES + ["record", "-o", data, "--",
                                          prog])
    if rc != 0:
        return ["allocsites dwarf", "failed: %s"
                % err.strip().splitlines()[-1:], "", "", "", ""]
    say("allocsites: report")
    rep_s, rss, rc, err = run(ALLOCSITES + ["report", "-i", data, "--json",
                                            out])
    try:
        with open(out) as f:
            r = json.load(f)
        sites = len(r["sites"])
        totals = (r["totals"]["count"], r["totals"]["bytes"])
        complete = r["complete"]
    except (OSError, ValueError, KeyError):
        sites, totals, complete = "-", None, None
    good = "yes" if totals == truth and complete else \
        "no: %s, complete %s" % (totals, complete)
    return ["allocsites dwarf", "%.1f s" % rec_s,
            "%.1f s" % rep_s if rc in (0, 3) else "failed: %s"
            % err.strip().splitlines()[-1:],
            "%.0f MB" % (rss / 1e6), str(sites), good]


def heaptrack_row(prog, tmp):
    if shutil.which("heaptrack") is None:
        return ["heaptrack", "not run: heaptrack is not installed", "", "",
                "", ""]
    say("heaptrack: record")
    base = os.path.join(tmp, "heaptrack")
    rec_s, _, rc, _ = run(["heaptrack", "-o", base, prog])
    data = base + ".zst"
    if rc != 0 or not os.path.exists(data):
        return ["heaptrack", "failed", "", "", "", ""]
    say("heaptrack: heaptrack_print")
    rep_s, rss, _, _ = run(["heaptrack_print", "-f", data, "-a", "1",
                            "-p", "0", "-T", "0", "-l", "0", "-m", "0",
                            "-n", "1000000000"])
    return ["heaptrack", "%.1f s" % rec_s, "%.1f s" % rep_s,
            "%.0f MB" % (rss / 1e6), "", "(no check)"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--functions", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.functions < 1 or args.rounds < 1:
        raise SystemExit("large_program: --functions and --rounds must be "
                         "at least 1")
    tmp = tempfile.mkdtemp(prefix="large-program-")
    try:
        src = os.path.join(tmp, "large.c")
        text, truth = source(args.functions, args.rounds)
        with open(src, "w") as f:
            f.write(text)
        prog = os.path.join(tmp, "large")
        hooked = os.path.join(tmp, "large-heaptrack")
        say("build (%d functions)" % args.functions)
        build(src, prog)
        build(src, hooked, "-DRT_PROBES_DISABLE", "-DRT_ALLOC_HEAPTRACK")
        fill_bytecode_cache()
        say("native")
        nat_s, _, _, _ = run([prog])
        rows = [["native", "%.2f s" % nat_s, "", "", "", ""],
                allocsites_row(prog, truth, tmp), heaptrack_row(hooked, tmp)]
        print("# A large program: %d functions in one file, %d allocations"
              "\n" % (args.functions, truth[0]))
        print("Machine: %s, %d CPUs, %s; `bench/large_program.py "
              "--functions %d --rounds %d`.\n"
              % (platform.node(), os.cpu_count(), platform.release(),
                 args.functions, args.rounds))
        print("| tool | record | report | report memory | sites | "
              "matches truth |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            print("| %s |" % " | ".join(row))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
