"""Runs the liveness sweep, allocsites-sweep (scripts/sweep/, C).

The sweep replays the EventLog in time order (the rules: liveness.py's
opening comment) and keeps about 6 bytes a live allocation (heaptrack's
pointer map layout), where a dict in Python took about 84: a program
with tens of millions of allocations live at its peak (a compiler's
arenas) would have needed gigabytes. It reads the log's columns from the
log's own file, handed over as a descriptor, and answers with the
figures liveness.sweep assembles into a Liveness; this module runs it
and parses that answer (a plan, a "main" with the counters, the state at
the peak, the timeline's columns).

It runs after the reader (run), or in the native reader itself, in a
thread, on the log's chunks in memory as the reader makes them
(allocsites-read --sweep, reader/sweeper.c; its answer comes in the
reader's stream and parse reads it alike). Only an exact-mode sweep
without the timeline's points (no --timeline, --save-profile or
--pprof) runs there: their sample times are spread over the whole log,
whose end is not known while it is written (docs/design.md, "The sweep
runs in the reader").

The Python sweep it replaced stays in the tests as the oracle
(tests/oracle/liveness_py.py); tests/unit/test_liveness.py holds the two
equal on every case and on random logs, in both modes.
"""

import subprocess

from ..errors import StageError
from ..read.native import child_env


class SweepError(StageError):
    """allocsites-sweep failed or answered what this module cannot read."""


def program_path(build=None):
    """The built allocsites-sweep (native.built_program), or None."""
    from .. import SCRIPTS_DIR
    from ..read.native import built_program
    return built_program("allocsites-sweep", SCRIPTS_DIR, build)


class Plan:
    """What the assembly needs of the sweep's plan, as its scan found it."""

    def __init__(self, fields, nkeys, sampled=False):
        # fields: has_release has_commit frees_recorded phase ids...; the
        # assembly needs no has_release (the C sweep used it)
        self.sampled = sampled
        self.has_commit = fields[1] == "1"
        self.frees_recorded = fields[2] == "1"
        self.phase_ids = [int(x) for x in fields[3:]]
        self.nkeys = nkeys


class Main:
    """The sweep's counters after its main pass and the end, per code in
    dicts (codes that allocated; sampled mode: that counted a sample, in
    the sweep's order), per phase slot in lists."""

    def __init__(self, nslots, sampled=False):
        self.ec, self.eb, self.temp = {}, {}, {}
        self.es, self.ew2 = ({}, {}) if sampled else (None, None)
        self.leaked_b, self.leaked_c = {}, {}
        self.runs = [0] * nslots
        self.left = [0] * nslots
        self.phase_peak = [0] * nslots
        self.growth = [0] * nslots
        self.cgrowth = [0] * nslots
        self.open_phases = []
        self.peak = self.peak_i = 0
        self.peak_t = None
        self.committed_peak = self.committed_at_peak = 0
        self.committed_end = 0
        self.unmatched = (0, 0)
        self.reused = self.unmatched_phase_ends = 0


class Answer:
    """plan, main, peak_codes {code: (bytes, count)}, peak_kb {key index:
    bytes}, and the timeline's columns at the sample times: totals,
    committed, series {key index: [bytes]} (keys ever non-zero there)."""

    def __init__(self, plan, main, peak_codes, peak_kb, totals, committed,
                 series):
        self.plan, self.main = plan, main
        self.peak_codes, self.peak_kb = peak_codes, peak_kb
        self.totals, self.committed, self.series = totals, committed, series


def request(fd, nkeys, times, table, min_size=0, series=True,
            sampled=False):
    lines = ["fd %d" % fd, "nkeys %d" % nkeys, "min_size %d" % min_size,
             "series %d" % bool(series), "sampled %d" % bool(sampled),
             " ".join(["times %d" % len(times)] + [str(t) for t in times]),
             "chunks %d" % len(table)]
    for offset, lengths in table:
        lines.append(" ".join(str(x) for x in [offset] + list(lengths)))
    return ("\n".join(lines) + "\n").encode()


def _answer(proc, request, nkeys, npoints, sampled=False):
    """The Answer allocsites-sweep at proc writes after request on its
    stdin, proc reaped; SweepError, with the line it said on stderr, when
    it failed or its answer cannot be read."""
    try:
        proc.stdin.write(request)
        proc.stdin.close()
        answer = parse(proc.stdout, nkeys, npoints, sampled)
    except (BrokenPipeError, SweepError) as e:
        proc.kill()
        proc.wait()
        err = proc.stderr.read().decode(errors="replace").strip()
        raise SweepError(err or "allocsites-sweep: %s" % e) from None
    err = proc.stderr.read().decode(errors="replace").strip()
    if proc.wait() != 0:
        raise SweepError(err or "allocsites-sweep: exit status %d"
                         % proc.returncode)
    return answer


def parse(lines, nkeys, npoints, sampled=False):
    """An Answer from allocsites-sweep's output lines (bytes or str):
    its own, or the reader's that ran it (EventLog.answered). Sampled
    mode's counts are doubles, written exactly (%.17g). SweepError when
    the lines are not such an answer."""
    try:
        return _parse(lines, nkeys, npoints, sampled)
    except (ValueError, IndexError, TypeError, AttributeError) as e:
        # a line short of fields, not a number, before its plan
        raise SweepError("allocsites-sweep: its answer cannot be read: "
                         "%s" % e) from None


def _parse(lines, nkeys, npoints, sampled):
    plan = main = None
    peak_codes, peak_kb = {}, {}
    totals, committed, series = [], [], {}
    ended = False
    for line in lines:
        f = line.split()
        if not f:
            continue
        tag = f[0] if isinstance(f[0], str) else f[0].decode()
        if tag == "P":
            j = len(totals)
            totals.append(int(f[1]))
            committed.append(int(f[2]))
            for i in range(3, len(f) - 1, 2):
                k = int(f[i])
                s = series.get(k)
                if s is None:
                    s = series[k] = [0] * npoints
                s[j] = int(f[i + 1])
        elif tag == "C":
            code = int(f[1])
            ec, eb, temp, lb, lc, pb, pc = (int(x) for x in f[2:9])
            main.ec[code], main.eb[code], main.temp[code] = ec, eb, temp
            if lb or lc:
                main.leaked_b[code], main.leaked_c[code] = lb, lc
            if pb or pc:
                peak_codes[code] = (pb, pc)
        elif tag == "F":
            code = int(f[1])
            main.ec[code], main.eb[code] = float(f[2]), int(f[3])
            main.ew2[code], main.es[code] = float(f[4]), int(f[5])
        elif tag == "L":
            code = int(f[1])
            main.leaked_b[code], main.leaked_c[code] = int(f[2]), float(f[3])
        elif tag == "K":
            peak_codes[int(f[1])] = (int(f[2]), float(f[3]))
        elif tag == "B":
            peak_kb[int(f[1])] = int(f[2])
        elif tag == "O":
            main.open_phases.append(tuple(int(x) for x in f[1:5]))
        elif tag == "S":
            slot = int(f[1])
            (main.runs[slot], main.left[slot], main.phase_peak[slot],
             main.growth[slot], main.cgrowth[slot]) = \
                (int(x) for x in f[2:7])
        elif tag == "R":
            v = [int(x) for x in f[1:11]]
            main.peak, main.peak_i = v[0], v[1]
            main.peak_t = v[2] if v[1] >= 0 else None
            main.committed_peak, main.committed_at_peak = v[3], v[4]
            main.committed_end = v[5]
            main.unmatched = (v[6], v[7])
            main.reused, main.unmatched_phase_ends = v[8], v[9]
        elif tag == "plan":
            plan = Plan([x if isinstance(x, str) else x.decode()
                         for x in f[1:]], nkeys, sampled)
            main = Main(len(plan.phase_ids) + 1, sampled)
        elif tag == "end":
            ended = True
        else:
            raise SweepError("allocsites-sweep: unknown line %r" % tag)
    if not ended or plan is None or len(totals) != npoints:
        raise SweepError("allocsites-sweep: its answer stopped short")
    return Answer(plan, main, peak_codes, peak_kb, totals, committed,
                  series)


def run(log, times, program, directory=None, min_size=0, series=True,
        sampled=False):
    """The Answer of allocsites-sweep at program for the EventLog log and
    the timeline's sample times (series False: the totals there, not
    each key's bytes; sampled: sampled mode). Raises SweepError (and
    OSError where the log cannot be written out)."""
    nkeys = max(1, len(log.keys))
    f, table = log.export(directory)
    owned = f is not getattr(log, "_file", None)
    try:
        fd = f.fileno()
        try:
            proc = subprocess.Popen(
                [program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, pass_fds=(fd,),
                env=child_env())
        except OSError as e:
            raise SweepError("allocsites-sweep: %s" % e) from None
        try:
            return _answer(proc, request(fd, nkeys, times, table,
                                         min_size, series, sampled),
                           nkeys, len(times), sampled)
        finally:
            proc.stdout.close()
            proc.stderr.close()
    finally:
        if owned:
            f.close()
