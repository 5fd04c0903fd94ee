#!/usr/bin/python3
"""Does perf record lose rt:alloc events without counting them?

  bench/loss_stress.py [--runs N] [--programs t_basic,minicc,burst]
                       [--load idle,loaded] [--perf-flags "FLAGS"]
                       [--burst-pairs N] [--burst-depth N] [--keep-silent DIR]

A stress test of exact mode's recording options. Each program is recorded
--runs times under each load, the loads interleaved run by run, with

    perf record FLAGS -e EVENT -o FILE -- PROG ARGS

where FLAGS is --perf-flags (default: the candidate defaults
"-z -m 16384 --no-bpf-event --call-graph dwarf,8192") and EVENT is this
script's own sdt_rt:alloc event for PROG (rt:free is not recorded).
Programs (each prints how many allocations it made: the truth):
  t_basic   $BUILD/tests/t_basic 3000 (9322 allocations; truth.h JSON)
  minicc    $BUILD/minicc 500 (the demo, 213431 allocations; allocs=N)
  burst     bench/burst PAIRS DEPTH built by bench/lib (default 218469
            pairs, 10 frames: ~218k allocations in a few ms)
Loads: idle (nothing added), loaded (one busy-loop process, spinning on
one core, started before and killed after each recording).

Per recording it counts the samples twice, independently:
  - `perf report --stats`: SAMPLE events and LOST_SAMPLES of the event,
    and LOST records of the aggregate section;
  - `perf script --ns -F tid,cpu,time,event,trace`: one line per sample.
perf 6.1 writes some sample records twice (same thread, same ns); those
pairs are counted as duplicates and dropped. The run is then:
  exact     received (duplicates dropped) == truth, nothing counted lost
  counted   perf counted lost samples and received + lost >= truth
  SILENT    fewer received than truth, and the counted loss (if any)
            does not cover the difference
  extra     more received than truth, duplicates dropped
Prints one Markdown row per (program, load, flags): runs per class, events
lost (counted and silent), duplicates, median wall time of perf record,
median bytes of perf.data per allocation; then every silent-loss run in
detail (which events are missing, compared with an exact run of the same
program, and when the last sample came before the program's EXIT record),
and the runs with counted loss or extra events. Progress goes to stderr.

Run as root after `make all`. It creates its probe events itself
(perf probe -f: a name taken by someone else becomes sdt_rt:alloc_N) and
deletes exactly those, also on Ctrl-C or SIGTERM. --keep-silent DIR keeps
the perf.data of every silent-loss run there.
"""

import argparse
import collections
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare import machine  # noqa: E402
from lib.build import BUILD, build  # noqa: E402
from lib.measure import run as measure  # noqa: E402
from allocsites_lib import perfrun, recorder  # noqa: E402

CANDIDATE = "-z -m 16384 --no-bpf-event --call-graph dwarf,8192"
BUSY_LOOP = ["/usr/bin/python3", "-c", "while True: pass"]


# --- the programs -----------------------------------------------------------

class Program:
    def __init__(self, name, binary, args, describe, truth):
        self.name, self.binary, self.args = name, binary, args
        self.describe, self._truth = describe, truth

    def argv(self):
        return [self.binary] + self.args

    def truth(self, stdout, truth_file):
        n = self._truth(stdout, truth_file)
        if n is None:
            raise SystemExit("loss_stress: %s printed no allocation count:\n%s"
                             % (self.name, stdout[-2000:]))
        return n


def _count(pattern):
    def truth(stdout, _):
        m = re.search(pattern, stdout)
        return int(m.group(1)) if m else None
    return truth


def _truth_json(_, truth_file):
    try:
        with open(truth_file) as f:
            return sum(r["count"] for r in json.load(f)["records"])
    except (OSError, ValueError, KeyError):
        return None


def made(path):
    if not os.access(path, os.X_OK):
        raise SystemExit("loss_stress: %s missing: run make all first" % path)
    return path


def programs(names, pairs, depth):
    known = {
        "t_basic": lambda: Program(
            "t_basic", made(os.path.join(BUILD, "tests", "t_basic")), ["3000"],
            "tests/programs/t_basic.c: several sites, recursion, realloc",
            _truth_json),
        "minicc": lambda: Program(
            "minicc", made(os.path.join(BUILD, "minicc")), ["500"],
            "the demo compiler", _count(r"\ballocs=(\d+)")),
        "burst": lambda: Program(
            "burst", build("burst", [os.path.join(HERE, "burst.c")]),
            [str(pairs), str(depth)],
            "bench/burst.c: alloc+free pairs as fast as it can",
            _count(r"\ballocations=(\d+)")),
    }
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit("loss_stress: unknown program(s) %s; choose among %s"
                         % (", ".join(unknown), ", ".join(known)))
    return [known[n]() for n in names]


# --- one recording ----------------------------------------------------------

Run = collections.namedtuple(
    "Run", "program load index wall size truth stats_samples lost "
           "lost_records script_samples duplicates lost_lines kind silent "
           "last_time exit_time last_cpu stderr")

_SAMPLE_RE = re.compile(r"^\s*(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(\S+):\s+\(")
_ARGS_RE = re.compile(r"arg2=(\d+) arg3=(\d+)")
_EXIT_RE = re.compile(r"^\s*\d+\s+\[\d+\]\s+(\d+\.\d+):\s+PERF_RECORD_EXIT")


def start_stats(perf, data, out):
    """perf report --stats, its output to the file out (read by
    read_stats once it has ended)."""
    return subprocess.Popen([perf, "report", "--stats", "-i", data],
                            stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def read_stats(proc, out, event):
    """-> (SAMPLE events, LOST_SAMPLES, LOST records) of the event, from
    perf report --stats (perfrun's parsers: the wrapper's own reading)."""
    rc = proc.wait()
    out.seek(0)
    text = out.read().decode("utf-8", "replace")
    if rc != 0:
        raise SystemExit("loss_stress: perf report --stats failed (%d):\n%s"
                         % (rc, text[-2000:]))
    lost, records = perfrun.parse_stats(text, event_prefix=event)
    return perfrun.event_samples(text).get(event, 0), lost, records


def read_samples(proc, event, err):
    """Reads every sample that perf script prints. -> (samples,
    duplicates, sequence, last_time, exit_time, last_cpu, lost_lines):
    sequence is the (size, tag) of each sample, duplicates dropped."""
    seen = set()
    samples = duplicates = lost_lines = 0
    sequence = []
    last_time = exit_time = last_cpu = None
    for line in proc.stdout:
        m = _SAMPLE_RE.match(line)
        if m and m.group(4) == event:
            samples += 1
            key = (m.group(1), m.group(3))
            if key in seen:
                duplicates += 1
                continue
            seen.add(key)
            a = _ARGS_RE.search(line)
            sequence.append((int(a.group(1)), int(a.group(2))) if a else None)
            last_time, last_cpu = m.group(3), int(m.group(2))
        elif "PERF_RECORD_LOST" in line:
            lost_lines += 1
        else:
            e = _EXIT_RE.match(line)
            if e:
                exit_time = e.group(1)
    if proc.wait() != 0:
        err.seek(0)
        raise SystemExit("loss_stress: perf script failed (%d):\n%s"
                         % (proc.returncode, err.read()[-2000:].decode(
                             "utf-8", "replace")))
    return samples, duplicates, sequence, last_time, exit_time, last_cpu, \
        lost_lines


def analyze(perf, data, event):
    """Both readers of one perf.data, side by side (2 cores); both are
    ended if anything goes wrong (Ctrl-C)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        procs = [start_stats(perf, data, out), subprocess.Popen(
            [perf, "script", "--ns", "--show-task-events",
             "--show-lost-events", "-F", "tid,cpu,time,event,trace", "-i",
             data], stdout=subprocess.PIPE, stderr=err,
            stdin=subprocess.DEVNULL, universal_newlines=True)]
        try:
            script = read_samples(procs[1], event, err)
            return read_stats(procs[0], out, event), script
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


def classify(truth, received, lost, lost_records):
    """-> (kind, events lost silently)."""
    missing = truth - received
    if missing == 0 and lost == 0 and lost_records == 0:
        return "exact", 0
    if missing < 0:
        return "extra", 0
    if missing > lost:
        return "silent", missing - lost
    return "counted", 0


class Spinner:
    """The load: one busy-loop process, in its own session (a Ctrl-C for
    us is not its business; stop() ends it, by its pid)."""

    def __init__(self):
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(BUSY_LOOP, start_new_session=True,
                                     stdin=subprocess.DEVNULL)
        time.sleep(0.2)             # spinning before perf starts

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def record_once(perf, flags, prog, event, load, index, tmp, spinner):
    data = os.path.join(tmp, "run.data")
    truth_file = os.path.join(tmp, "truth.json")
    for path in (data, truth_file):
        if os.path.exists(path):
            os.unlink(path)
    cmd = [perf, "record"] + flags + ["-e", event, "-o", data, "--"] + \
        prog.argv()
    if load == "loaded":
        spinner.start()
    try:
        rec = measure(cmd, env=dict(os.environ, TRUTH_FILE=truth_file),
                      check=False)
    finally:
        spinner.stop()
    if rec.returncode != 0:
        raise SystemExit("loss_stress: %s exited with %d:\n%s"
                         % (" ".join(cmd), rec.returncode, rec.stderr[-3000:]))
    truth = prog.truth(rec.stdout, truth_file)
    (stats_samples, lost, lost_records), (samples, dups, seq, last_time,
                                          exit_time, last_cpu, lost_lines) = \
        analyze(perf, data, event)
    kind, silent = classify(truth, samples - dups, lost, lost_records)
    r = Run(prog.name, load, index, rec.wall, os.path.getsize(data), truth,
            stats_samples, lost, lost_records, samples, dups, lost_lines, kind,
            silent, last_time, exit_time, last_cpu,
            rec.stderr.strip())
    return r, seq, data


# --- cleaning up -----------------------------------------------------------

def own_recorders(marker):
    """pids of the perf processes whose command line holds marker (this
    run's temporary directory: no one else's)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"perf" and \
                any(marker.encode() in a for a in argv[1:]):
            pids.append(int(entry))
    return pids


def stop_recorders(marker, timeout=60):
    """Ends this run's perf record, if it outlived us (SIGTERM, or an
    exception while it ran: subprocess kills /usr/bin/time, not perf), and
    waits until it is gone. True when none is left.

    The events must not be deleted while perf still records them: with
    kernel 6.18.44, deleting an event that has several probe points (perf
    makes one per RT_ALLOC site: sdt_rt:alloc has 3) while it is enabled
    frees it under the running uprobe (unregister_trace_uprobe skips the
    busy check when the event has siblings). The program then oopses in
    uprobe_dispatcher, and a later perf_event_open dies in uprobe_register
    holding event_mutex: every perf probe and uprobe perf record on the
    machine hangs until a reboot. Seen here (docs/design.md)."""
    deadline = time.monotonic() + timeout
    sig = signal.SIGINT               # perf stops the program, writes data
    while True:
        pids = own_recorders(marker)
        if not pids:
            return True
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                return False
            sig, deadline = signal.SIGKILL, time.monotonic() + 10
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        time.sleep(0.5)


# --- what is missing --------------------------------------------------------

def describe_gap(reference, seq):
    """Where seq (received, duplicates dropped) lacks events of reference
    (an exact run of the same program), as one line."""
    n = len(reference)
    p = 0
    while p < min(n, len(seq)) and reference[p] == seq[p]:
        p += 1
    s = 0
    while s < min(n, len(seq)) - p and reference[n - 1 - s] == seq[-1 - s]:
        s += 1
    if p + s == len(seq) and n > len(seq):
        gone = reference[p:n - s]
        where = ("the last %d" % len(gone) if s == 0 else
                 "%d before the last %d" % (len(gone), s))
        shown = ", ".join("%d/%d" % x for x in gone[:12])
        return ("missing events %d..%d of %d (%s; size/tag: %s%s)"
                % (p + 1, n - s, n, where, shown,
                   ", ..." if len(gone) > 12 else ""))
    return ("not one gap: the sequence differs from event %d on, and its "
            "last %d events match" % (p + 1, s))


def ms_between(a, b):
    if a is None or b is None:
        return "?"
    return "%.3f ms" % ((float(b) - float(a)) * 1e3)


# --- the tables -------------------------------------------------------------

def median_range(values, fmt):
    return (fmt % statistics.median(values) + " (" + fmt % min(values) + "-" +
            fmt % max(values) + ")")


def print_tables(results, flags_text, progs, loads, details):
    print("| program | load | perf flags | runs | exact | counted loss "
          "| SILENT loss | extra | lost, counted | lost, silent "
          "| duplicates (runs) | stats = script | record wall s, median "
          "(min-max) | bytes/event, median |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for prog in progs:
        for load in loads:
            rs = [r for r in results if r.program == prog.name and
                  r.load == load]
            if not rs:
                continue
            kinds = collections.Counter(r.kind for r in rs)
            print("| %s | %s | `%s` | %d | %d | %d | %d | %d | %d | %d "
                  "| %d (%d) | %d/%d | %s | %.0f |" % (
                      prog.name, load, flags_text, len(rs), kinds["exact"],
                      kinds["counted"], kinds["silent"], kinds["extra"],
                      sum(r.lost for r in rs), sum(r.silent for r in rs),
                      sum(r.duplicates for r in rs),
                      sum(1 for r in rs if r.duplicates),
                      sum(1 for r in rs if r.stats_samples ==
                          r.script_samples), len(rs),
                      median_range([r.wall for r in rs], "%.2f"),
                      statistics.median(r.size / r.truth for r in rs)))
    print()
    silent = [r for r in results if r.kind == "silent"]
    print("Silent-loss runs: %s" % (
        len(silent) if silent else "none in %d recordings" % len(results)))
    for r in silent:
        print("- %s %s run %d: truth %d, received %d (%d duplicates dropped), "
              "counted lost %d (%d LOST records), silently lost %d; %s; "
              "last sample on CPU %s, %s before the EXIT record; perf: %s"
              % (r.program, r.load, r.index, r.truth,
                 r.script_samples - r.duplicates, r.duplicates, r.lost,
                 r.lost_records, r.silent, details.get(id(r), "?"),
                 r.last_cpu, ms_between(r.last_time, r.exit_time),
                 " ".join(r.stderr.split())[-300:]))
    other = [r for r in results if r.kind in ("counted", "extra") or
             r.stats_samples != r.script_samples]
    if other:
        print()
        print("Runs with counted loss, extra events, or readers that "
              "disagree:")
        for r in other:
            print("- %s %s run %d: %s; truth %d, perf script %d samples "
                  "(%d duplicates), perf report --stats %d samples, lost %d "
                  "(%d LOST records, %d in perf script)"
                  % (r.program, r.load, r.index, r.kind, r.truth,
                     r.script_samples, r.duplicates, r.stats_samples, r.lost,
                     r.lost_records, r.lost_lines))


# --- main -------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--programs", default="t_basic")
    ap.add_argument("--load", default="idle,loaded")
    ap.add_argument("--perf-flags", default=CANDIDATE,
                    help="perf record options (default: %(default)s); "
                    "-e and -o are added")
    ap.add_argument("--burst-pairs", type=int, default=218469)
    ap.add_argument("--burst-depth", type=int, default=10)
    ap.add_argument("--keep-silent", metavar="DIR",
                    help="copy the perf.data of silent-loss runs here")
    args = ap.parse_args()
    loads = args.load.split(",")
    if set(loads) - {"idle", "loaded"}:
        ap.error("--load: idle and/or loaded")
    flags = shlex.split(args.perf_flags)
    try:
        perf = recorder.find_perf()
        recorder.check_privileges()
    except recorder.RecordError as e:
        raise SystemExit("loss_stress: %s" % e)
    if not recorder.tracefs_mounted():
        raise SystemExit("loss_stress: tracefs is not mounted: "
                         "mount -t tracefs nodev /sys/kernel/tracing")
    # Built (or checked) first: a uprobe is bound to the file's inode.
    progs = programs(args.programs.split(","), args.burst_pairs,
                     args.burst_depth)

    # Ctrl-C, SIGTERM and SIGHUP end the run through the finally blocks.
    def interrupted(signum, _):
        raise KeyboardInterrupt("signal %d" % signum)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupted)

    probes = recorder.ProbeEvents(perf)
    spinner = Spinner()
    tmp = tempfile.mkdtemp(prefix="loss-stress-")
    results, details, references = [], {}, {}
    pending = []                    # silent runs waiting for a reference
    start = time.monotonic()
    load_avg = open("/proc/loadavg").read().split()[:3]
    try:
        events = {}
        for prog in progs:
            try:
                events[prog.name] = probes.add(prog.binary, "alloc")
            except recorder.RecordError as e:
                raise SystemExit("loss_stress: %s" % e)
            print("loss_stress: %s -> %s" % (prog.binary, events[prog.name]),
                  file=sys.stderr)
        for prog in progs:
            for i in range(1, args.runs + 1):
                for load in loads:
                    r, seq, data = record_once(
                        perf, flags, prog, events[prog.name], load, i,
                        tmp, spinner)
                    results.append(r)
                    if r.kind == "exact" and prog.name not in references:
                        references[prog.name] = seq
                    if r.kind == "silent":
                        pending.append((r, seq))
                        if args.keep_silent:
                            os.makedirs(args.keep_silent, exist_ok=True)
                            shutil.copy(data, os.path.join(
                                args.keep_silent, "%s-%s-%d.data"
                                % (prog.name, load, i)))
                    print("loss_stress: %s %s %d/%d: truth %d, perf "
                          "script %d (%d dup), stats %d, lost %d: %s, "
                          "%.2f s, %.1f MB" % (
                              prog.name, load, i, args.runs, r.truth,
                              r.script_samples, r.duplicates,
                              r.stats_samples, r.lost, r.kind.upper()
                              if r.kind == "silent" else r.kind,
                              r.wall, r.size / 1e6), file=sys.stderr)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)   # clean up to the end
        spinner.stop()
        if stop_recorders(tmp):
            failed = probes.remove()
        else:
            failed = list(probes.created)
            print("loss_stress: warning: a perf record of this run is still "
                  "alive; its events are left in place", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        if failed:
            print("loss_stress: warning: could not delete %s; once no perf "
                  "records them, run: %s" % (
                      ", ".join(failed), "; ".join("perf probe -d " + n
                                                   for n in failed)),
                  file=sys.stderr)
    for r, seq in pending:
        ref = references.get(r.program)
        details[id(r)] = (describe_gap(ref, seq) if ref is not None else
                          "no exact run of %s to compare with" % r.program)

    print("loss_stress: perf record %s -e EVENT -o FILE -- PROG" %
          " ".join(flags))
    print("machine: %s; load average at start %s; %d recordings in %.0f s"
          % (machine(), " ".join(load_avg), len(results),
             time.monotonic() - start))
    for prog in progs:
        print("%s: %s %s: %s" % (prog.name, os.path.relpath(prog.binary, ROOT),
                                 " ".join(prog.args), prog.describe))
    print()
    print_tables(results, " ".join(flags), progs, loads, details)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        raise SystemExit("loss_stress: interrupted (%s); cleaned up" % e)
