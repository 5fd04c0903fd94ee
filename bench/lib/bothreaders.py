"""One recording read by both readers, for the real-program benchmarks
(bench/real_database.py, bench/real_interpreter.py): `allocsites report`
with the native reader and with ALLOCSITES_READER=perf, compared site by
site, and every rt:alloc sample compared frame by frame as
tests/integration/test_differential.py compares them."""

import argparse
import collections
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import test_differential as differential  # noqa: E402
from lib import debsource  # noqa: E402

ALLOCSITES = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites")]
READER = os.path.join(BUILD, "allocsites-read")
SITE_FIELDS = ("count", "bytes", "peak_bytes", "leaked_bytes")


def report(data, out, who, env=None):
    """allocsites report --json; (wall seconds, the report)."""
    t0 = time.monotonic()
    proc = subprocess.run(ALLOCSITES + ["report", "-i", data, "--json", out],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True,
                          env=dict(os.environ, **(env or {})))
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit("%s: report failed:\n%s"
                         % (who, proc.stderr[-3000:]))
    with open(out) as f:
        return wall, json.load(f)


def sites(rep):
    """{(function, file, line): the SITE_FIELDS} of a JSON report."""
    return {(s["function"], s["file"], s["line"]):
            tuple(s.get(k) for k in SITE_FIELDS) for s in rep["sites"]}


def frame_by_frame(data):
    """test_differential's comparison of every rt:alloc sample: (samples,
    {why: differing samples} or None when the samples themselves differ,
    {accepted note: count}, the first difference rendered)."""
    native = subprocess.run([READER, "--text", data], stdout=subprocess.PIPE,
                            universal_newlines=True, check=True).stdout
    perf = subprocess.run(
        ["perf", "script", "-i", data, "--ns", "--no-inline",
         "-F", "pid,tid,time,event,ip,sym,symoff,dso"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        universal_newlines=True, check=True).stdout
    p_side = differential.parse_perf(perf)
    n_side = differential.parse_native(native)
    if len(p_side) != len(n_side):
        return len(p_side), None, {}, "perf gave %d samples, the native " \
            "reader %d" % (len(p_side), len(n_side))
    notes = collections.Counter()
    bad, first = collections.Counter(), None
    for i, (p, n) in enumerate(zip(p_side, n_side)):
        if p.key != n.key:
            return len(p_side), None, notes, \
                "sample #%d is not the same sample on both sides" % i
        diff, _ = differential.compare_sample(p, n, None, notes)
        if diff is not None:
            # why, without its counts: "native goes on past perf's last
            # frame (2 more)" and "(3 more)" are one reason
            bad[re.sub(r" \(\d+ more\)|\(-?\d+\)", "", diff[1])] += 1
            if first is None:
                first = differential.render_diff(i, p, n, *diff)
    return len(p_side), bad, dict(notes), first


def record_script(who, work, data, workload, filename, argv, cwd):
    """workload written to work/filename, then `allocsites record -o
    data -- ARGV FILE` in cwd (argv: the interpreter and its options
    before the script); returns record's stderr, or stops with its end
    when record fails."""
    script = os.path.join(work, filename)
    with open(script, "w") as f:
        f.write(workload)
    debsource.progress(who)("record the workload")
    rec = subprocess.run(ALLOCSITES + ["record", "-o", data, "--"] +
                         list(argv) + [script], cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if rec.returncode != 0:
        raise SystemExit("%s: allocsites record failed (exit %d):\n%s"
                         % (who, rec.returncode, rec.stderr[-3000:]))
    return rec.stderr


def compare_and_print(data, work, rec_err, who):
    """Both reports and the frame-by-frame comparison of data, printed as
    the rows of a Markdown table (after its header); returns 0 when the
    readers agree on every site and every sample, else 1."""
    sys.stderr.write("%s: report, native reader\n" % who)
    n_wall, n_rep = report(data, os.path.join(work, "native.json"), who)
    sys.stderr.write("%s: report, ALLOCSITES_READER=perf\n" % who)
    p_wall, p_rep = report(data, os.path.join(work, "perf.json"), who,
                           {"ALLOCSITES_READER": "perf"})
    sys.stderr.write("%s: frame by frame (perf script takes minutes)\n" % who)
    samples, bad, notes, first = frame_by_frame(data)
    summary = [line for line in rec_err.splitlines()
               if line.startswith("allocsites: recorded")]
    ns, ps = sites(n_rep), sites(p_rep)
    differ = sorted(k for k in set(ns) | set(ps) if ns.get(k) != ps.get(k))
    print("| what | figure |\n|---|---|")
    print("| recording | %s |" % (summary[-1].split(": ", 1)[1]
                                 if summary else "(no summary)"))
    print("| allocations, lost, complete (native report) | %d, %s, %s |"
          % (n_rep["events"]["alloc"], n_rep["lost"], n_rep["complete"]))
    print("| report, native reader | %.1f s |" % n_wall)
    print("| report, ALLOCSITES_READER=perf | %.1f s |" % p_wall)
    print("| sites, native / perf | %d / %d; %s |"
          % (len(ns), len(ps), "every site's %s the same" %
             ", ".join(SITE_FIELDS) if not differ else
             "%d differ (first: %s)" % (len(differ), differ[0])))
    print("| rt:alloc samples compared frame by frame | %d |" % samples)
    print("| samples that differ | %s |" % (
        "(not compared)" if bad is None else
        "%d%s" % (sum(bad.values()), "".join(
            "; %s: %d" % kv for kv in bad.most_common()))))
    print("| accepted as the same (test_differential.py) | %s |"
          % (", ".join("%s %d" % kv for kv in sorted(notes.items()))
             or "none"))
    if first:
        print("\nThe first difference:\n\n```\n%s\n```" % first)
    return 0 if not differ and bad is not None and not bad else 1


def main(who, description, package, is_tree, build, record, title, built,
         work_mode=None):
    """A real-program script's whole run: its options (--src, --keep,
    --jobs), package's source (fetched unless --src), build(source, work,
    jobs) -> what record(built, work, data) runs; then the table of
    compare_and_print under title, the machine and the build (built:
    how it was compiled). work_mode: the work directory's mode (a server
    run as another user must enter it). Returns the exit status."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--src", help="an unpacked %s tree" % package)
    ap.add_argument("--keep", help="work in this directory and keep it")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("%s: run as root (perf, uprobes)" % who)
    if not os.path.exists(READER):
        raise SystemExit("%s: %s is not built: make all" % (who, READER))
    if args.src and not is_tree(args.src):
        raise SystemExit("%s: %s is no %s tree" % (who, args.src, package))
    work = os.path.abspath(args.keep) if args.keep else \
        tempfile.mkdtemp(prefix="allocsites-%s-" % who)
    os.makedirs(work, exist_ok=True)
    if work_mode is not None:
        os.chmod(work, work_mode)
    say = debsource.progress(who)
    try:
        if args.src:
            source, version = args.src, package + " (--src)"
        else:
            source, version = debsource.fetch(work, package, is_tree, say,
                                              who=who)
        made = build(source, work, args.jobs)
        data = os.path.join(work, who + ".data")
        rec_err = record(made, work, data)
        print("# %s\n" % title)
        print("Machine: %s, %d CPUs, %s; `bench/%s.py`; %s, %s, the "
              "workload of the script's WORKLOAD.\n"
              % (platform.node(), os.cpu_count(), platform.release(), who,
                 version, built))
        return compare_and_print(data, work, rec_err, who)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
