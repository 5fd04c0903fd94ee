#!/usr/bin/python3
"""Why recordings of one program differ in size: how many stack copies
reach the top of the stack, with ASLR and without.

  bench/stack_copy_sizes.py [--runs 3] [--program luacheck]

The kernel copies `--stack-size` bytes of stack per event, or up to the
top of the stack mapping if that comes first, and keeps the full size
in the ring either way: the rest is skipped (stale ring bytes, which
zstd cannot match). Where ASLR puts the top of the stack decides how
often that happens. Each run records the program (bench/lossless_runs.py's
programs; default Lua running luacheck) with `allocsites record`, once
as it is and once under `setarch -R` (no ASLR), interleaved, and reads
every sample's copied size with `perf report -D` ("ustack: size N").
Per run: the file's size, the copies shorter than the stack size, and
the mean bytes copied. Run as root after `make all`. Progress on stderr;
Markdown on stdout. About 12 minutes with the defaults on the reference
machine.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import machine  # noqa: E402
from lossless_runs import ALLOCSITES, programs  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from allocsites_lib import recorder  # noqa: E402

USTACK = re.compile(r"ustack: size (\d+)")


def once(argv, no_aslr, tmp):
    data = os.path.join(tmp, "run.data")
    prog = (["setarch", "-R"] if no_aslr else []) + argv
    # Under setarch the probed program is not argv[0]: name it.
    rec = subprocess.run(ALLOCSITES + ["record", "-o", data, "--lib",
                                       argv[0], "--"] + prog,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         universal_newlines=True)
    m = re.search(r"; lost: (\S+)", rec.stderr)
    if not m or not os.path.exists(data):
        raise SystemExit("stack_copy_sizes: record failed:\n"
                         + rec.stderr[-2000:])
    dump = subprocess.run(["perf", "report", "-D", "-i", data],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          universal_newlines=True).stdout
    sizes = [int(n) for n in USTACK.findall(dump)]
    full = recorder.DEFAULT_STACK_SIZE
    row = dict(mib=os.path.getsize(data) / 2**20, lost=m.group(1),
               copies=len(sizes), short=sum(1 for n in sizes if n < full),
               mean=sum(sizes) / max(len(sizes), 1))
    for path in os.listdir(tmp):
        os.unlink(os.path.join(tmp, path))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # perf report -D of one Lua recording takes about two minutes here.
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--program", default="luacheck")
    a = ap.parse_args()
    argv, _ = programs([a.program])[a.program]
    rows = {"ASLR (as run)": [], "setarch -R": []}
    with tempfile.TemporaryDirectory(prefix="stack-copy-sizes-") as tmp:
        for i in range(a.runs):
            for name in rows:
                r = once(argv, name == "setarch -R", tmp)
                rows[name].append(r)
                print("%s, run %d: %s" % (name, i + 1, r), file=sys.stderr)
    print("`allocsites record` of %s, --stack-size %d, %d runs each, "
          "interleaved; %s\n" % (a.program, recorder.DEFAULT_STACK_SIZE,
                                 a.runs, machine()))
    print("| run | MiB | copies short of the stack size | of | mean bytes "
          "copied | lost |")
    print("|---|---|---|---|---|---|")
    for name, rs in rows.items():
        for r in rs:
            print("| %s | %.1f | %d | %d | %.0f | %s |" % (
                name, r["mib"], r["short"], r["copies"], r["mean"],
                r["lost"]))


if __name__ == "__main__":
    main()
