#!/usr/bin/python3
"""How often a sampled diff calls noise significant: pairs of identical runs.

Regenerates the table of docs/benchmarks.md,
"A sampled diff of identical runs: `bench/diff_noise.py`":

    /usr/bin/python3 bench/diff_noise.py --pairs 5 --units 2500 --sample 64k

  bench/diff_noise.py [--pairs 5] [--units 2500] [--sample 64k]

Records build/minicc UNITS twice per pair with `allocsites record
--sample RATE` (the same program, input and build: every difference is
sampling noise), reports both to JSON and diffs them with allocsites'
diff (allocsites_lib/analyze/diff.py). For each pair: the sampled sites
compared, how many changes one standard error (the rule before) would
call significant, and how many the diff's threshold z* does (Bonferroni
over the sites, a 5% family-wise chance). Prints Markdown; needs root
and perf.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
ALLOCSITES = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites")]
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib.analyze import diff  # noqa: E402


def profile(tmp, name, units, rate):
    data = os.path.join(tmp, name + ".data")
    out = os.path.join(tmp, name + ".json")
    subprocess.run(ALLOCSITES + ["record", "-o", data, "--sample", rate,
                                 "--", os.path.join(BUILD, "minicc"),
                                 str(units)],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    subprocess.run(ALLOCSITES + ["report", "-i", data, "--json", out],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--units", type=int, default=2500)
    ap.add_argument("--sample", default="64k")
    args = ap.parse_args()
    print("Machine: %s, %d CPUs, %s; `bench/diff_noise.py --pairs %d "
          "--units %d --sample %s`.\n" % (platform.node(), os.cpu_count(),
                                          platform.release(), args.pairs,
                                          args.units, args.sample))
    print("| pair | sampled sites | significant at 1 SE | significant at z* "
          "| z* |")
    print("|---|---|---|---|---|")
    totals = [0, 0, 0]
    with tempfile.TemporaryDirectory(prefix="diff-noise-") as tmp:
        for i in range(1, args.pairs + 1):
            base = profile(tmp, "a%d" % i, args.units, args.sample)
            new = profile(tmp, "b%d" % i, args.units, args.sample)
            changes = diff.match_sites(base, new)
            sampled = [c for c in changes if c.error]
            one_se = sum(1 for c in sampled
                         if abs(c.bytes_after - c.bytes_before) >= c.error)
            flagged = sum(1 for c in sampled if c.significant)
            totals[0] += len(sampled)
            totals[1] += one_se
            totals[2] += flagged
            print("| %d | %d | %d | %d | %.2f |"
                  % (i, len(sampled), one_se, flagged,
                     diff.z_threshold(len(sampled))))
            sys.stdout.flush()
    print("| all | %d | %d | %d | |" % tuple(totals))


if __name__ == "__main__":
    main()
