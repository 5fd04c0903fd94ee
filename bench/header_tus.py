#!/usr/bin/python3
"""What including rt_probes.h in many translation units costs a program.

Regenerates the table of docs/benchmarks.md,
"Many files including the header: `bench/header_tus.py`":

    /usr/bin/python3 bench/header_tus.py --tus 500

  bench/header_tus.py [--tus 500]

Builds a program of N translation units that each include the header and
use RT_ALLOC and RT_FREE once, and one of a single such unit, then
prints, for both: the .init_array and .fini_array entries (constructors
and destructors run at start-up and exit), the copies of the header's
run-time functions in the binary (rt__exit_init: COMDAT, so one), the
instructions of a whole run that does nothing else (valgrind
--tool=callgrind, repeatable) and the wall time of a run (best of 5 x 100,
noisy). Prints Markdown on stdout. Needs gcc and valgrind.
"""

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TU = ('#include "rt_probes.h"\n#include <stddef.h>\n'
      'void f%d(void *p, size_t n) { RT_ALLOC(p, n, 1); RT_FREE(p); }\n')
MAIN = "int main(void) { return 0; }\n"


def section_entries(prog, name):
    out = subprocess.run(["readelf", "-SW", prog], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    for line in out.splitlines():
        fields = line.replace("[ ", "[").split()
        if name in fields:
            i = fields.index(name)
            return int(fields[i + 4], 16) // 8   # Size, 8 bytes an entry
    return 0


def copies(prog, symbol):
    out = subprocess.run(["objdump", "-d", prog], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    return len(re.findall(r"<%s>:" % re.escape(symbol), out))


def instructions(prog):
    out = subprocess.run(["valgrind", "--tool=callgrind",
                          "--callgrind-out-file=/dev/null", prog],
                         stderr=subprocess.PIPE, universal_newlines=True).stderr
    return int(re.search(r"Collected : (\d+)", out).group(1))


def wall_us(prog):
    best = None
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(100):
            subprocess.run([prog], check=True)
        t = (time.perf_counter() - start) / 100
        best = t if best is None else min(best, t)
    return best * 1e6


def build(tmp, n):
    objs = []
    for i in range(1, n + 1):
        src = os.path.join(tmp, "tu%d.c" % i)
        with open(src, "w") as f:
            f.write(TU % i)
        objs.append(src[:-2] + ".o")
    procs = []
    for src in (o[:-2] + ".c" for o in objs):   # two compilers at a time
        procs.append(subprocess.Popen(
            ["gcc", "-O2", "-I", os.path.join(ROOT, "include"), "-c", src,
             "-o", src[:-2] + ".o"]))
        if len(procs) >= 2:
            if procs.pop(0).wait():
                raise SystemExit("header_tus: gcc failed")
    for p in procs:
        if p.wait():
            raise SystemExit("header_tus: gcc failed")
    main = os.path.join(tmp, "main%d.c" % n)
    with open(main, "w") as f:
        f.write(MAIN)
    prog = os.path.join(tmp, "p%d" % n)
    subprocess.run(["gcc", "-O2", main] + objs + ["-o", prog, "-pthread"],
                   check=True)
    return prog


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tus", type=int, default=500)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="header-tus-")
    try:
        rows = []
        for n in (1, args.tus):
            d = os.path.join(tmp, str(n))
            os.mkdir(d)
            prog = build(d, n)
            rows.append((n, section_entries(prog, ".init_array"),
                         section_entries(prog, ".fini_array"),
                         copies(prog, "rt__exit_init"), instructions(prog),
                         wall_us(prog)))
        print("| translation units | .init_array | .fini_array | copies of "
              "rt__exit_init | instructions of a run | wall time of a run |")
        print("|---|---|---|---|---|---|")
        for n, init, fini, cp, ins, us in rows:
            print("| %d | %d | %d | %d | %d | %.0f us |"
                  % (n, init, fini, cp, ins, us))
        (n1, _, _, _, i1, _), (nn, _, _, _, inn, _) = rows
        print("\nPer extra translation unit: %.0f instructions (start-up "
              "and exit together)." % ((inn - i1) / float(nn - n1)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
