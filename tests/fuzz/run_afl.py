#!/usr/bin/python3
"""tests/fuzz/run_afl.py - make fuzz: AFL++ on the native reader for a
bounded time, then every crash and hang it found read again by the
ASan/UBSan reader; each that breaks the contract (contract.py) is kept
in tests/fuzz/crashes/ with a line in its NOTES, and make check reads
it from then on (tests/unit/test_reader_hostile.py).

    run_afl.py --seconds N --out DIR --afl-reader BIN --asan-reader BIN

The corpus: the seeds (tests/fuzz/seeds/) and the structured mutants of
the uncompressed ones (mutate.py) up to 256 KB, made in DIR/in. AFL++
forks the reader once per input (its fork server): the reader keeps
state in statics, which a fresh process starts clean. It runs as the
report runs it (--sweep, the event log on stderr). Hangs are runs
over 5 s (the 8000-mapping mutant takes 1-3 s under ASan)."""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import contract  # noqa: E402
import mutate  # noqa: E402

CRASHES = os.path.join(HERE, "crashes")
MAX_INPUT = 256 << 10
HANG_MS = 5000


def corpus(indir, fifo):
    """Seeds and structured mutants of the uncompressed seeds, not their
    truncations and flips (AFL makes those itself)."""
    if os.path.isdir(indir):
        shutil.rmtree(indir)
    os.makedirs(indir)
    seeds = mutate.load_seeds()
    files = [(n, b) for n, b in seeds.items()]
    for n, b, _ in mutate.mutants(seeds, fifo=fifo, nflips=0,
                                  compress=()):
        if "-trunc_" in n or "-cut_" in n:
            continue
        files.append((n, b))
    kept = 0
    for n, b in files:
        if len(b) <= MAX_INPUT:
            with open(os.path.join(indir, n + ".data"), "wb") as f:
                f.write(b)
            kept += 1
    return kept


def afl_env():
    env = dict(os.environ)
    env.update({
        "AFL_SKIP_CPUFREQ": "1",
        "AFL_NO_UI": "1",
        # other work shares the machine's cores: no core of its own
        "AFL_NO_AFFINITY": "1",
        "AFL_FAST_CAL": "1",
        # an inherited input may be slow: skip it, not abort the run
        "AFL_SKIP_CRASHES": "1",
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:symbolize=0",
    })
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern.startswith("|"):
        # a crash handler (systemd-coredump, apport) would delay every
        # crash AFL sees; we do not change the machine's setting
        print("make fuzz: core_pattern is %r: crashes are reported late "
              "(echo core > /proc/sys/kernel/core_pattern to fix)" % pattern)
        env["AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES"] = "1"
    return env


def stats(outdir):
    res = {}
    try:
        with open(os.path.join(outdir, "default", "fuzzer_stats")) as f:
            for line in f:
                k, _, v = line.partition(":")
                res[k.strip()] = v.strip()
    except OSError:
        pass
    return res


def keep(path, why, kind, seconds):
    """Copies a reproducer into tests/fuzz/crashes/ (once: named by its
    hash) with a line in NOTES; returns its name."""
    with open(path, "rb") as f:
        data = f.read()
    name = "afl-%s.data" % hashlib.sha1(data).hexdigest()[:12]
    dest = os.path.join(CRASHES, name)
    if os.path.exists(dest):
        return name
    os.makedirs(CRASHES, exist_ok=True)
    with open(dest, "wb") as f:
        f.write(data)
    with open(os.path.join(CRASHES, "NOTES"), "a") as f:
        f.write("%s: AFL++ %s in a %d s run on %s; under ASan: %s\n"
                % (name, kind, seconds, time.strftime("%Y-%m-%d"), why))
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--out", required=True)
    ap.add_argument("--afl-reader", required=True)
    ap.add_argument("--asan-reader", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    fifo = os.path.join(os.path.abspath(args.out), "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    indir = os.path.join(args.out, "in")
    outdir = os.path.join(args.out, "afl")
    n = corpus(indir, fifo)
    if os.path.isdir(outdir):
        shutil.rmtree(outdir)
    print("make fuzz: %d inputs, %d s of AFL++ on %s"
          % (n, args.seconds, args.afl_reader), flush=True)
    # the reader as the report runs it: the event log written (to
    # stderr, which AFL throws away) and the sweep in its thread
    cmd = ["afl-fuzz", "-i", indir, "-o", outdir, "-V", str(args.seconds),
           "-t", str(HANG_MS), "-m", "none", "--", args.afl_reader,
           "--log-fd", "2", "--sweep", "@@"]
    start = time.time()
    log = os.path.join(args.out, "afl.log")
    with open(log, "w") as f:
        rc = subprocess.run(cmd, env=afl_env(), stdout=f,
                            stderr=subprocess.STDOUT).returncode
    took = time.time() - start
    st = stats(outdir)
    if rc != 0 and not st:
        with open(log) as f:
            print(f.read()[-3000:])
        print("make fuzz: afl-fuzz failed (exit %d; %s)" % (rc, log))
        return 1
    print("make fuzz: %s execs in %.0f s (%s/s), %s paths, %s crashes, "
          "%s hangs" % (st.get("execs_done"), took,
                        st.get("execs_per_sec"),
                        st.get("corpus_count", st.get("paths_total")),
                        st.get("saved_crashes", st.get("unique_crashes")),
                        st.get("saved_hangs", st.get("unique_hangs"))))
    found, kept = 0, []
    for kind in ("crashes", "hangs"):
        d = os.path.join(outdir, "default", kind)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else ():
            if not name.startswith("id:"):
                continue
            found += 1
            path = os.path.join(d, name)
            rc, err, rss = contract.read(args.asan_reader, path)
            why = contract.broken(rc, err, rss=rss)
            if why is None:
                print("  %s/%s: not reproduced under ASan (rc %s)"
                      % (kind, name, rc))
                continue
            kept.append(keep(path, why, kind[:-1] if kind == "hangs"
                             else "crash", int(took)))
            print("  %s/%s -> tests/fuzz/crashes/%s: %s"
                  % (kind, name, kept[-1], why))
    print("make fuzz: %d found, %d kept in tests/fuzz/crashes/ (make check "
          "reads them)" % (found, len(set(kept))))
    return 1 if kept else 0


if __name__ == "__main__":
    sys.exit(main())
