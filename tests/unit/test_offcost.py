"""The cost of the probes when nothing records, counted: the reference
allocator with its probes must execute exactly 2 more instructions per
probe event (the semaphore test and its branch) than without them. And
the cost per free while sampled frees are recorded, bounded.

Counts instructions with valgrind's callgrind, which is repeatable, over
tests/c/burst.c (N rt_alloc + rt_free pairs, 2 events each), built and
counted by callgrind.py beside this file (bench/offcost_callgrind.py
does the same with more pairs). Each binary runs at two sizes and only the difference
counts, so the constant start-up and exit work (the probed build
registers a fork handler and has an exit destructor: a few hundred
instructions once) cancels out exactly; the test fails on any per-event
regression, such as the extra register move a call in the probe's
enabled branch once cost (+2.50 per event). Needs gcc and valgrind; no
perf."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind import build_burst, instructions  # noqa: E402

PAIRS = 20000


class OffCost(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="allocsites-offcost-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def build(self, name, *flags):
        return build_burst(os.path.join(self.tmp, name), *flags)

    def test_two_instructions_per_event(self):
        on = self.build("burst")
        off = self.build("burst-noprobes", "-DRT_PROBES_DISABLE")
        def per_pairs(prog):
            return instructions(prog, 2 * PAIRS) - instructions(prog, PAIRS)
        added = per_pairs(on) - per_pairs(off)
        events = 2 * PAIRS
        # 2 per event; the slack (< 0.001 per event) is for the loop's
        # other branches, never a whole instruction per event.
        self.assertLess(abs(added - 2 * events), 40,
                        "%+.3f instructions per probe event, expected +2"
                        % (added / events))

    def test_guest_location_costs_nothing_when_off(self):
        # A runtime's RT_ALLOC_GUEST(p, n, tag, guest_where(n)): the same
        # 2 instructions per event; the location's lookup (a call) is
        # never made while nothing records (tests/c/burst.c, BENCH_GUEST).
        on = self.build("burst-guest", "-DBENCH_GUEST")
        off = self.build("burst-guest-noprobes", "-DBENCH_GUEST",
                         "-DRT_PROBES_DISABLE")
        def per_pairs(prog):
            return instructions(prog, 2 * PAIRS) - instructions(prog, PAIRS)
        added = per_pairs(on) - per_pairs(off)
        events = 2 * PAIRS
        # The semaphore test and its branch, and here one register move
        # there and back that GCC adds around malloc's result in
        # guest_alloc (+2.50 measured: docs/benchmarks.md, "Cost when
        # nothing records"); the lookup, a call, would be +6 or more.
        self.assertLess(abs(added - 2.5 * events), 40,
                        "%+.3f instructions per probe event, expected "
                        "+2.50" % (added / events))

    def test_cost_per_free_while_sampling(self):
        # rt:sample_free recorded: every rt_free looks its pointer up in
        # rt_live.h's table. burst frees each block at once, so the
        # table stays nearly empty and a lookup is the common miss: the
        # semaphore tests, the hash and one byte of used[] (13.7 per free
        # measured, docs/sampling.md). A lookup that reads the bucket's
        # keys costs about 25 more; a regression to a loop, a call or a
        # scan past the bucket shows here.
        sampling = self.build("burst-sampling",
                              "-DBENCH_RAISE_SAMPLE_SEMAPHORE")
        frees = self.build("burst-sampling-frees",
                           "-DBENCH_RAISE_SAMPLE_SEMAPHORE",
                           "-DBENCH_RAISE_SAMPLE_FREE_SEMAPHORE")
        env = {"RT_SAMPLE_BYTES": "64k", "RT_SAMPLE_SEED": "1"}
        def per_pairs(prog):
            return (instructions(prog, 2 * PAIRS, env) -
                    instructions(prog, PAIRS, env))
        per_free = (per_pairs(frees) - per_pairs(sampling)) / PAIRS
        self.assertGreater(per_free, 10, "the lookup did not run")
        self.assertLess(per_free, 18)


if __name__ == "__main__":
    unittest.main()
