#!/usr/bin/python3
"""The sampled peak estimate against the exact peak, over many runs.

Regenerates the tables of docs/benchmarks.md,
"The sampled peak against the exact one: `bench/sampled_peak.py`":

    /usr/bin/python3 bench/sampled_peak.py --runs 10 --cases minicc:500:64k,minicc:2500:512k
    /usr/bin/python3 bench/sampled_peak.py --runs 10 --cases sawtooth:200:64k,sawtooth:200:512k

  bench/sampled_peak.py [--runs 10]
      [--cases minicc:500:64k,minicc:2500:512k,sawtooth:200:64k]

For each case PROG:ARG:RATE (PROG in $BUILD, or tests/PROG, or a
bench/PROG.c built here: sawtooth.c, whose live bytes return to nearly
the same high once a cycle, ARG cycles), one exact
recording gives the true peak (liveness.peak_bytes), then RUNS sampled
recordings at RATE give estimates. The peak is the maximum over time of
a noisy series, so its estimate is biased upwards (docs/sampling.md);
this measures by how much, in bytes and in standard errors of the total
at the peak (sqrt(R * peak)), with the runs' spread. Prints Markdown;
needs root and perf.
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
ALLOCSITES = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites")]
sys.path.insert(0, HERE)
from lib.build import build  # noqa: E402
UNITS = {"k": 1 << 10, "m": 1 << 20}


def rate_bytes(text):
    text = text.lower()
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def program(name):
    if os.path.exists(os.path.join(HERE, name + ".c")):
        return build(name, [os.path.join(HERE, name + ".c")])
    for path in (os.path.join(BUILD, name), os.path.join(BUILD, "tests", name)):
        if os.path.exists(path):
            return path
    raise SystemExit("sampled_peak: %s is not built" % name)


def peak(tmp, argv, record_args):
    data = os.path.join(tmp, "run.data")
    out = os.path.join(tmp, "run.json")
    subprocess.run(ALLOCSITES + ["record", "-o", data] + record_args +
                   ["--"] + argv, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL,
                   env=dict(os.environ, TRUTH_FILE=os.devnull))
    subprocess.run(ALLOCSITES + ["report", "-i", data, "--json", out],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)["liveness"]["peak_bytes"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--cases", default="minicc:500:64k,minicc:2500:512k,"
                    "sawtooth:200:64k")
    args = ap.parse_args()
    print("Machine: %s, %d CPUs, %s; `bench/sampled_peak.py --runs %d "
          "--cases %s`.\n" % (platform.node(), os.cpu_count(),
                              platform.release(), args.runs, args.cases))
    print("| program | R | exact peak | sampled, mean (min-max) | bias | "
          "SE = sqrt(R x peak) | bias in SE | runs above the exact peak |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="sampled-peak-") as tmp:
        for case in args.cases.split(","):
            name, arg, rate = case.split(":")
            argv = [program(name)] + ([arg] if arg else [])
            exact = peak(tmp, argv, [])
            got = [peak(tmp, argv, ["--sample", rate])
                   for _ in range(args.runs)]
            mean = statistics.mean(got)
            se = math.sqrt(rate_bytes(rate) * exact)
            print("| %s %s | %s | %d | %.0f (%.0f-%.0f) | %+.0f | %.0f | "
                  "%+.2f | %d of %d |"
                  % (name, arg, rate, exact, mean, min(got), max(got),
                     mean - exact, se, (mean - exact) / se,
                     sum(1 for g in got if g > exact), len(got)))


if __name__ == "__main__":
    main()
