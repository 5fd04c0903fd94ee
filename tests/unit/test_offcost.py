"""The cost of the probes when nothing records, counted: the reference
allocator with its probes must execute exactly 2 more instructions per
probe event (the semaphore test and its branch) than without them.

Counts instructions with valgrind's callgrind, which is repeatable, over
bench/burst (N rt_alloc + rt_free pairs, 2 events each), as
bench/offcost_callgrind.py does with more pairs. The only slack is the
constant start-up difference between two binaries (tens of
instructions), so the test fails on any per-event regression, such as
the extra register move a call in the probe's enabled branch once cost
(+2.50 per event). Needs gcc and valgrind; no perf."""

import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PAIRS = 20000


def build(out, *flags):
    subprocess.run(["gcc", "-O2", "-g", "-std=c99", "-D_DEFAULT_SOURCE"] +
                   list(flags) +
                   ["-I" + os.path.join(ROOT, "include"),
                    "-I" + os.path.join(ROOT, "examples", "rtalloc"),
                    os.path.join(ROOT, "bench", "burst.c"),
                    os.path.join(ROOT, "examples", "rtalloc", "rt_alloc.c"),
                    "-o", out, "-pthread"], check=True)


def instructions(prog, tmp):
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind",
         "--callgrind-out-file=" + os.path.join(tmp, "cg.out"),
         prog, str(PAIRS)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True)
    m = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or not m:
        raise AssertionError("callgrind failed:\n" + proc.stderr)
    return int(m.group(1))


class OffCost(unittest.TestCase):
    def test_two_instructions_per_event(self):
        with tempfile.TemporaryDirectory() as tmp:
            on, off = os.path.join(tmp, "on"), os.path.join(tmp, "off")
            build(on)
            build(off, "-DRT_PROBES_DISABLE")
            added = instructions(on, tmp) - instructions(off, tmp)
        events = 2 * PAIRS
        # 2 per event, give or take the start-up difference (< 1000).
        self.assertLess(abs(added - 2 * events), 1000,
                        "%+.3f instructions per probe event, expected +2"
                        % (added / events))


if __name__ == "__main__":
    unittest.main()
