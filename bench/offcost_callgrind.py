#!/usr/bin/python3
"""Instructions the probes add per allocation when nothing records.

Regenerates the table of docs/benchmarks.md,
"Cost when nothing records: `bench/offcost_callgrind.py`":

    /usr/bin/python3 bench/offcost_callgrind.py

  bench/offcost_callgrind.py [--pairs N]

Counts instructions (valgrind --tool=callgrind: repeatable, unlike wall
time on a VM) of bench/burst running N rt_alloc+rt_free pairs, built with
and without the probes, and divides the difference by the number of probe
events (2 per pair: rt:alloc and rt:free). Then counts the sampled path
with rt:sample's semaphore raised by the program (bench/burst built with
-DBENCH_RAISE_SAMPLE_SEMAPHORE): the countdown and the draws, without the
kernel trap a recorded sample adds (bench/sampled_overhead.py measures that).
Then a language runtime's allocator (-DBENCH_GUEST: malloc with
RT_ALLOC_GUEST, whose guest location is a call into the runtime) with
and without the probes. Last, the sampled frees: rt:sample_free's semaphore raised too
(-DBENCH_RAISE_SAMPLE_FREE_SEMAPHORE), so that every sampled pointer goes
into rt_live.h's table and every rt_free looks its pointer up; the
difference to the sampled path alone, per pair, is the cost per free while
sampling (with the rare insert of a sampled pointer and its hit folded in).
The difference includes what
the probes change around them (registers kept alive for the arguments, a
tail call the compiler can no longer make), not only the semaphore test.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "unit"))
from lib.build import BURST, build  # noqa: E402
# The counter test_offcost.py uses, so that the test and this table agree.
from callgrind import instructions  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=1000000)
    args = ap.parse_args()
    burst = [BURST]
    on = build("burst", burst)
    off = build("burst-noprobes", burst, "-DRT_PROBES_DISABLE")
    sampling = build("burst-sampling", burst, "-DBENCH_RAISE_SAMPLE_SEMAPHORE")
    n_on, n_off = instructions(on, args.pairs), instructions(off, args.pairs)
    # a runtime's allocator: RT_ALLOC_GUEST with a location lookup
    guest_on = build("burst-guest", burst, "-DBENCH_GUEST")
    guest_off = build("burst-guest-noprobes", burst, "-DBENCH_GUEST",
                      "-DRT_PROBES_DISABLE")
    n_guest_on = instructions(guest_on, args.pairs)
    n_guest_off = instructions(guest_off, args.pairs)
    frees = build("burst-sampling-frees", burst, "-DBENCH_RAISE_SAMPLE_SEMAPHORE",
                  "-DBENCH_RAISE_SAMPLE_FREE_SEMAPHORE")
    n_sampling = {r: instructions(sampling, args.pairs,
                                  {"RT_SAMPLE_BYTES": r, "RT_SAMPLE_SEED": "1"})
                  for r in ("512k", "64k")}
    n_frees = {r: instructions(frees, args.pairs,
                               {"RT_SAMPLE_BYTES": r, "RT_SAMPLE_SEED": "1"})
               for r in ("512k", "64k")}
    events = 2 * args.pairs
    print("bench/burst %d pairs (%d probe events), gcc -O2, callgrind:"
          % (args.pairs, events))
    print()
    print("| build | instructions | per probe event |")
    print("|---|---|---|")
    print("| -DRT_PROBES_DISABLE | %d | - |" % n_off)
    print("| probes compiled in, not recorded | %d | %+.2f |"
          % (n_on, (n_on - n_off) / events))
    print("| -DBENCH_GUEST -DRT_PROBES_DISABLE (malloc) | %d | - |"
          % n_guest_off)
    print("| -DBENCH_GUEST: RT_ALLOC_GUEST, not recorded | %d | %+.2f |"
          % (n_guest_on, (n_guest_on - n_guest_off) / events))
    print()
    print("The sampled path, rt:sample's semaphore raised by the program itself "
          "(the probe is a nop: no trap, no perf), per allocation:")
    print()
    print("| RT_SAMPLE_BYTES | instructions | per allocation vs -DRT_PROBES_DISABLE |")
    print("|---|---|---|")
    for r, n in n_sampling.items():
        print("| %s | %d | %+.2f |" % (r, n, (n - n_off) / args.pairs))
    print()
    print("Sampled frees, rt:sample_free's semaphore raised too (every sampled "
          "pointer in the table, every free looked up), per free:")
    print()
    print("| RT_SAMPLE_BYTES | instructions | per free vs the sampled path alone |")
    print("|---|---|---|")
    for r, n in n_frees.items():
        print("| %s | %d | %+.2f |" % (r, n, (n - n_sampling[r]) / args.pairs))


if __name__ == "__main__":
    main()
