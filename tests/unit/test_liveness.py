"""liveness.sweep: peak, leaked, temporary, phases and the timeline from
an EventLog. Hand-built logs with the figures worked out in the test, and
random logs against a brute-force replay (reference() below) that works
differently: it first turns the log into allocation intervals [made, ended)
and run intervals, then computes every figure from scratch at each moment
it needs. Each case also holds the product's sweep (allocsites-sweep, C)
equal, bit for bit, to the Python sweep it replaced, kept as the oracle
(tests/oracle/liveness_py.py). No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import math
import random

from allocsites_lib.analyze import liveness, nativesweep, timeline_series
from allocsites_lib.read.eventlog import EventLog
from allocsites_lib.read.tally import ExactEntry, SampledEntry
from allocsites_lib.analyze.liveness import KeyLive, PhaseStats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "oracle"))
import liveness_py  # noqa: E402


def sweep(log, mode, points=400, engine="native", min_size=0, series=True):
    """The product's sweep (engine 'native': allocsites-sweep, through
    liveness.sweep; 'follow': the same following the log as a reader
    writes it, series False), or the oracle's (engine 'python')."""
    if engine == "python":
        return liveness_py.sweep(log, mode, points, min_size=min_size,
                                 series=series)
    if engine == "follow":
        return followed_sweep(log, mode, min_size)
    return liveness.sweep(log, mode, points, min_size=min_size,
                          series=series)


def follow(log, table, min_size=0, end=None):
    """allocsites-sweep's answer lines in follow mode, the mode the
    native reader runs it in (allocsites-read --sweep), told table's
    chunks of log's file one by one, then the end (end: another line)."""
    import subprocess
    request = ["fd %d" % log._file.fileno(), "nkeys 0",
               "min_size %d" % min_size, "series 0", "sampled 0",
               "times first", "chunks follow"]
    request += ["chunk %d %s" % (offset, " ".join(map(str, lengths)))
                for offset, lengths in table]
    request.append(end or "end %d %d %d" % (max(1, len(log.keys)),
                                            len(table), len(log)))
    proc = subprocess.run([nativesweep.program_path()],
                          input=("\n".join(request) + "\n").encode(),
                          capture_output=True,
                          pass_fds=(log._file.fileno(),))
    if proc.returncode:
        raise nativesweep.SweepError(proc.stderr.decode().strip())
    return proc.stdout.decode().splitlines()


def followed_sweep(log, mode, min_size=0):
    """liveness.sweep of a log the sweep followed chunk by chunk, as the
    native reader runs it, its answer taken as the reader's
    (log.answered), with allocsites-sweep hidden from the sweep after
    the reader: the answer can only be the followed one."""
    f, table = log.export()
    try:
        log._file, log._chunks = f, table
        log.answered = follow(log, table, min_size)
        built = nativesweep.program_path
        nativesweep.program_path = lambda build=None: None
        try:
            return liveness.sweep(log, mode, min_size=min_size,
                                  series=False)
        finally:
            nativesweep.program_path = built
    finally:
        f.close()


A, B, C, D = "key A", "key B", "key C", "key D"


class Builder:
    """Events as (kind, time, pid, tid, a, b, size, key), 10 ns apart."""

    def __init__(self, pid=1, tid=1):
        self.events = []
        self.time = 0
        self.pid, self.tid = pid, tid

    def add(self, kind, a=0, b=0, key=None, size=None, pid=None, tid=None,
            dt=10):
        self.time += dt
        self.events.append((kind, self.time, self.pid if pid is None else pid,
                            self.tid if tid is None else tid, a, b,
                            size if kind == "sample" else b, key))
        return self

    def alloc(self, ptr, size, key, **kw):
        return self.add("alloc", ptr, size, key, **kw)

    def free(self, ptr, size=0, **kw):
        return self.add("free", ptr, size, **kw)

    def sample(self, ptr, size, weight, key, **kw):
        return self.add("sample", ptr, weight, key, size=size, **kw)

    def sample_free(self, ptr, weight, **kw):
        return self.add("sample_free", ptr, weight, **kw)

    def begin(self, phase, **kw):
        return self.add("phase_begin", phase, **kw)

    def end(self, phase, **kw):
        return self.add("phase_end", phase, **kw)

    def log(self):
        return log_of(self.events)


def log_of(events, spill_every=None):
    """The EventLog of events; spill_every: spilled to a file every that
    many events (as the native report's log is), read back in chunks."""
    log = EventLog()
    if spill_every:
        log.spill_to(every=spill_every)
    for kind, t, pid, tid, a, b, size, key in events:
        log.append(kind, t, pid, tid, a, b, key=key, size=size)
        log.maybe_spill()
    return log


# ---------------------------------------------------------------- reference

class Alloc:
    def __init__(self, i, pid, gen, tid, ptr, key, nbytes, count, phase,
                 runs, size):
        self.i, self.pid, self.gen, self.tid, self.ptr = i, pid, gen, tid, ptr
        self.size = size
        self.key, self.bytes, self.count = key, nbytes, count
        self.phase, self.runs = phase, runs
        self.end, self.how = None, None


class Run:
    def __init__(self, phase, pid, gen, tid, begin):
        self.phase, self.pid, self.gen, self.tid = phase, pid, gen, tid
        self.begin, self.end, self.at_exit = begin, None, False


def reference(events, mode, points=400):
    """The Liveness of events, by brute force (see the module docstring)."""
    sampled = mode == "sampled"
    made, ends = ("sample", "sample_free") if sampled else ("alloc", "free")
    n = len(events)
    last_exit = {}
    for i, e in enumerate(events):
        if e[0] == "exit":
            last_exit[e[2]] = i

    def gen(i, pid):   # a pid seen after its last rt:exit is a new process
        return 1 if pid in last_exit and i > last_exit[pid] else 0

    # 1. Intervals.
    allocs, runs, stacks, live = [], [], {}, {}
    unmatched, reused, unmatched_ends = [0, 0], 0, 0
    for i, (kind, t, pid, tid, a, b, size, key) in enumerate(events):
        g = gen(i, pid)
        if kind == made:
            if sampled and (size <= 0 or b <= 0):
                continue
            stack = stacks.get(tid, [])
            phase = runs[stack[-1]].phase if stack else None
            old = live.pop((pid, g, a), None)
            if old is not None:
                old.end, old.how = i, "reused"
                reused += 1
            rec = Alloc(i, pid, g, tid, a, key, b, b / size if sampled else 1,
                        phase, list(stack), size)
            live[(pid, g, a)] = rec
            allocs.append(rec)
        elif kind == ends:
            rec = live.pop((pid, g, a), None)
            if rec is None:
                unmatched[0] += 1
                unmatched[1] += b
            else:
                rec.end, rec.how = i, "free"
        elif kind == "release":
            for where in list(live):
                if where[:2] == (pid, g) and a <= where[2] < a + b:
                    rec = live.pop(where)
                    rec.end, rec.how = i, "release"
        elif kind == "phase_begin":
            stacks.setdefault(tid, []).append(len(runs))
            runs.append(Run(a, pid, g, tid, i))
        elif kind == "phase_end":
            stack = stacks.get(tid, [])
            found = [d for d, r in enumerate(stack) if runs[r].phase == a]
            if not found:
                unmatched_ends += 1
            else:
                for r in stack[found[-1]:]:
                    runs[r].end = i
                del stack[found[-1]:]
        elif kind == "exit" and i == last_exit[pid]:
            for where in list(live):
                if where[:2] == (pid, 0):
                    rec = live.pop(where)
                    rec.end, rec.how = i, "exit"
            for stack in stacks.values():
                for r in [r for r in stack if runs[r].pid == pid and
                          runs[r].gen == 0]:
                    runs[r].end, runs[r].at_exit = i, True
                    stack.remove(r)
    for rec in live.values():
        rec.end, rec.how = n, "end"
    for stack in stacks.values():
        for r in stack:
            runs[r].end, runs[r].at_exit = n, True

    # 2. Figures from the intervals, recomputed at every moment used.
    def live_at(m, pid=None, g=None):   # after event m
        return [x for x in allocs if x.i <= m < x.end and
                (pid is None or (x.pid, x.gen) == (pid, g))]

    def live_bytes(m, pid=None, g=None):
        return sum(x.bytes for x in live_at(m, pid, g))

    def committed(m, pid=None, g=None):
        """Committed bytes after event m, replayed from the start."""
        per = {}
        for i in range(m + 1):
            kind, _, p, _, _, b, _, _ = events[i]
            where = (p, gen(i, p))
            if kind == "commit":
                per[where] = per.get(where, 0) + b
            elif kind == "decommit":
                per[where] = per.get(where, 0) - min(b, per.get(where, 0))
            elif kind == "exit" and i == last_exit[p]:
                per.pop(where, None)
        if pid is not None:
            return per.get((pid, g), 0)
        return sum(per.values())

    number = float if sampled else int
    totals = [live_bytes(m) for m in range(n)]
    peak = max(totals, default=0)
    peak_m = totals.index(peak) if peak > 0 else None
    peak_set = live_at(peak_m) if peak_m is not None else []

    entries, by_pk = {}, {}
    for x in allocs:
        entry = entries.setdefault(x.phase, {}).setdefault(
            x.key, SampledEntry() if sampled else ExactEntry())
        entry.count += x.count
        entry.bytes += x.bytes
        if sampled:
            entry.weight_by_size2 += x.bytes / x.size ** 2
            entry.samples += 1

    def temporary(x):
        if x.how != "free":
            return False
        later = [j for j in range(x.i + 1, n) if events[j][2] == x.pid and
                 gen(j, x.pid) == x.gen and
                 events[j][0] in (made, ends, "release")]
        return later[0] == x.end

    for phase, keys in entries.items():
        for key in keys:
            mine = [x for x in allocs if (x.phase, x.key) == (phase, key)]
            at_peak = [x for x in peak_set if (x.phase, x.key) == (phase, key)]
            leaked = [x for x in mine if x.how in ("exit", "end")]
            by_pk[(phase, key)] = KeyLive(
                number(sum(x.bytes for x in at_peak)),
                number(sum(x.count for x in at_peak)),
                number(sum(x.bytes for x in leaked)),
                number(sum(x.count for x in leaked)),
                None if sampled else sum(map(temporary, mine)))

    frees = any(e[0] in (ends, "release") for e in events)
    has_commit = any(e[0] in ("commit", "decommit") for e in events)
    phases = {}
    for phase in sorted({r.phase for r in runs}):
        mine = [r for r in runs if r.phase == phase]
        left = growth = cgrowth = best = 0
        for r in mine:
            k = runs.index(r)
            # The state at the run's end: before the event that closed it
            # (an rt:exit drops the process's memory after closing it).
            e = r.end - 1
            left += sum(x.bytes for x in allocs if k in x.runs and
                        x.end >= r.end)
            growth += live_bytes(e, r.pid, r.gen) - \
                live_bytes(r.begin, r.pid, r.gen)
            cgrowth += committed(e, r.pid, r.gen) - \
                committed(r.begin, r.pid, r.gen)
            best = max([best] + [live_bytes(m, r.pid, r.gen)
                                 for m in range(r.begin, r.end)])
        charged = entries.get(phase, {}).values()
        phases[phase] = PhaseStats(
            len(mine), sum(x.count for x in charged),
            sum(x.bytes for x in charged),
            number(left) if frees else None, number(best) if frees else None,
            number(growth) if frees else None,
            cgrowth if has_commit else None)

    # The timeline.
    times = []
    if n and points >= 1:
        t0, t1 = events[0][1], events[-1][1]
        if points == 1 or t1 == t0:
            times = [t1]
        else:
            times = sorted({t0 + (t1 - t0) * j // (points - 1)
                            for j in range(points)})
    moments = [max(m for m in range(n) if events[m][1] <= t) for t in times]
    if peak_m is not None:
        pt = events[peak_m][1]
        if pt in times:
            moments[times.index(pt)] = peak_m
        else:
            times.append(pt)
            times.sort()
            moments.insert(times.index(pt), peak_m)
    by_key = {}
    for key in {x.key for x in allocs}:
        series = [sum(x.bytes for x in live_at(m) if x.key == key)
                  for m in moments]
        if any(series):
            by_key[key] = series
    timeline = liveness.Timeline(
        times, [live_bytes(m) for m in moments], by_key,
        [committed(m) for m in moments] if has_commit else None)

    leaked = [x for x in allocs if x.how in ("exit", "end")]
    ends_at = {}   # each process's last moment: its committed there
    for i, e in enumerate(events):
        ends_at[(e[2], gen(i, e[2]))] = i
    committed_end = sum(committed(min(i, last_exit.get(p, n) - 1)
                                  if g == 0 and p in last_exit else i, p, g)
                        for (p, g), i in ends_at.items())
    cpeak = max([committed(m) for m in range(n)] + [0])
    return liveness.Liveness(
        by_phase_key=by_pk, entries=entries,
        peak_bytes=number(peak),
        peak_count=number(sum(x.count for x in peak_set)),
        peak_time=events[peak_m][1] if peak_m is not None else None,
        leaked_bytes=number(sum(x.bytes for x in leaked)),
        leaked_count=number(sum(x.count for x in leaked)),
        temporary=None if sampled else sum(map(temporary, allocs)),
        unmatched_frees=tuple(unmatched), reused=reused,
        committed_peak=cpeak if has_commit else None,
        committed_at_peak=(committed(peak_m) if peak_m is not None else 0)
        if has_commit else None,
        committed_end=committed_end if has_commit else None,
        phases=phases, unmatched_phase_ends=unmatched_ends,
        open_phases=[(r.pid, r.tid, r.phase) for r in runs if r.at_exit],
        timeline=timeline, frees_recorded=frees)


def comparable(value, places=6):
    """Liveness -> plain data, floats rounded to places (sums in another
    order), or kept as they are (places None: bit for bit, the floats'
    types and the dicts' orders too)."""
    if isinstance(value, float):
        return ("float", value.hex()) if places is None \
            else round(value, places)
    if isinstance(value, (ExactEntry, SampledEntry)):
        return (type(value).__name__,) + tuple(
            comparable(getattr(value, f), places) for f in value.__slots__)
    if isinstance(value, dict):
        items = [(k, comparable(v, places)) for k, v in value.items()]
        return items if places is None else dict(items)
    if isinstance(value, (list, tuple)):
        return type(value)(comparable(v, places) for v in value) \
            if not hasattr(value, "_fields") else \
            {f: comparable(getattr(value, f), places) for f in value._fields}
    return value


def assert_same_liveness(test, got, want, places=None, **labels):
    """Every Liveness field of got equals want's as comparable() makes
    them (places None: bit for bit), each field a subTest with labels."""
    for field in liveness.Liveness._fields:
        with test.subTest(field=field, **labels):
            test.assertEqual(comparable(getattr(got, field), places),
                             comparable(getattr(want, field), places))


class Case(unittest.TestCase):
    maxDiff = None

    def check(self, events, mode="exact", points=400):
        """sweep() on events, after checking it against the reference, and
        the product's sweep (C) against the oracle's (Python) bit for bit,
        on the same log in memory and spilled in chunks of 7 events (the
        oracle's replay to the peak instead of the undo, chunk boundaries
        everywhere)."""
        got = sweep(log_of(events), mode, points)
        want = reference(events, mode, points)
        oracle = sweep(log_of(events), mode, points, engine="python")
        others = [sweep(log_of(events, spill_every=7), mode, points,
                        engine=engine) for engine in ("python", "native")]
        assert_same_liveness(self, got, want, places=6)
        assert_same_liveness(self, got, oracle)
        for engine, other in zip(("python", "native"), others):
            assert_same_liveness(self, other, got, spilled=engine)
        if mode == "exact" and events:
            # the sweep that follows the reader, against the oracle's
            # without the chart (its one point the first event), the log
            # in chunks of 7 events: exits and phases everywhere
            oracle = sweep(log_of(events), mode, engine="python",
                           series=False)
            followed = sweep(log_of(events, spill_every=7), mode,
                             engine="follow")
            assert_same_liveness(self, followed, oracle, follow=True)
        return got


# ---------------------------------------------------------------- exact

class Basics(Case):
    def test_empty_log(self):
        got = self.check([])
        self.assertEqual((got.peak_bytes, got.peak_time, got.leaked_bytes,
                          got.temporary, got.unmatched_frees, got.reused),
                         (0, None, 0, 0, (0, 0), 0))
        self.assertEqual(got.timeline, liveness.Timeline([], [], {}, None))
        self.assertEqual((got.entries, got.phases, got.frees_recorded),
                         ({}, {}, False))
        self.assertIsNone(got.committed_peak)

    def test_frees_from_another_thread(self):
        b = Builder()
        b.alloc(0x100, 100, A, tid=1)        # t10: 100
        b.alloc(0x200, 40, B, tid=1)         # t20: 140 (the peak)
        b.free(0x100, 100, tid=2)            # t30: 40
        b.alloc(0x300, 60, A, tid=2)         # t40: 100
        b.free(0x200, 40, tid=3)             # t50: 60
        got = self.check(b.events)
        self.assertEqual((got.peak_bytes, got.peak_count, got.peak_time),
                         (140, 2, 20))
        self.assertEqual(got.by_phase_key[(None, A)],
                         KeyLive(100, 1, 60, 1, 0))
        self.assertEqual(got.by_phase_key[(None, B)],
                         KeyLive(40, 1, 0, 0, 0))
        self.assertEqual((got.leaked_bytes, got.leaked_count), (60, 1))
        self.assertEqual(got.entries, {None: {A: ExactEntry(2, 160),
                                              B: ExactEntry(1, 40)}})
        self.assertEqual(got.unmatched_frees, (0, 0))
        self.assertTrue(got.frees_recorded)

    def test_realloc_chain(self):
        # realloc(p, n) is a free of p then an allocation: each step is a
        # temporary allocation (the free right after it), but the last.
        b = Builder()
        b.alloc(0x10, 16, A)
        b.free(0x10, 16).alloc(0x20, 32, A)
        b.free(0x20, 32).alloc(0x30, 64, A)
        b.alloc(0x99, 8, B)                  # something in between
        b.free(0x30, 64).alloc(0x40, 128, A)
        got = self.check(b.events)
        self.assertEqual((got.peak_bytes, got.peak_time), (136, 80))
        self.assertEqual(got.by_phase_key[(None, A)],
                         KeyLive(128, 1, 128, 1, 2))
        self.assertEqual(got.temporary, 2)
        self.assertEqual(got.entries[None][A], ExactEntry(4, 240))

    def test_free_of_an_unknown_pointer(self):
        b = Builder()
        b.alloc(0x10, 50, A)
        b.free(0xdead, 4000)                 # allocated before recording
        b.free(0xdead, 4000)
        b.free(0x10, 50)
        b.free(0x10, 50)                     # a second free: unknown now
        got = self.check(b.events)
        self.assertEqual(got.unmatched_frees, (3, 8050))
        self.assertEqual((got.peak_bytes, got.leaked_bytes), (50, 0))
        self.assertEqual(got.timeline.total[-1], 0)   # never below 0
        self.assertEqual(got.temporary, 0)   # unknown frees came between

    def test_a_leak_at_exit(self):
        b = Builder()
        b.alloc(0x10, 10, A).alloc(0x20, 20, B).alloc(0x30, 30, A)
        b.free(0x20, 20)
        b.add("exit")                        # the executable's rt:exit
        b.free(0x30, 30)                     # a library's destructor
        b.add("exit")                        # the library's rt:exit
        got = self.check(b.events)
        self.assertEqual((got.leaked_bytes, got.leaked_count), (10, 1))
        self.assertEqual(got.by_phase_key[(None, A)],
                         KeyLive(40, 2, 10, 1, 0))
        self.assertEqual(got.unmatched_frees, (0, 0))
        # After the last rt:exit the process holds nothing.
        self.assertEqual(got.timeline.total[-1], 0)
        self.assertEqual(got.timeline.by_key[A][-1], 0)

    def test_leaked_at_the_log_end_without_exit(self):
        b = Builder()
        b.alloc(0x10, 10, A).alloc(0x20, 20, A).free(0x10, 10)
        got = self.check(b.events)
        self.assertEqual((got.leaked_bytes, got.leaked_count), (20, 1))
        self.assertEqual(got.timeline.total[-1], 20)

    def test_bulk_release(self):
        b = Builder()
        arena = 0x7f0000010000
        b.alloc(arena, 100, A)
        b.alloc(arena + 0x18000, 200, A)     # a later 64 KiB granule
        b.alloc(arena + 0x20000, 300, B)     # just past the arena's end
        b.alloc(arena - 8, 400, B)           # just before it
        b.alloc(0x1000, 500, C, pid=2)       # another process
        b.alloc(arena + 16, 600, C, pid=2)   # ... in the same range
        b.add("release", arena, 0x20000)
        b.free(arena, 100)                   # released already: unknown
        got = self.check(b.events)
        self.assertEqual(got.by_phase_key[(None, A)],
                         KeyLive(300, 2, 0, 0, 0))
        self.assertEqual((got.leaked_bytes, got.leaked_count),
                         (300 + 400 + 500 + 600, 4))
        self.assertEqual(got.unmatched_frees, (1, 100))
        self.assertEqual(got.peak_bytes, 2100)

    def test_a_release_comes_between(self):
        # Temporary means nothing happened to the heap in between: a
        # release (even one that frees nothing) counts.
        b = Builder()
        b.alloc(0x10, 8, A).add("release", 0x1000, 0x100).free(0x10)
        b.alloc(0x20, 8, A).free(0x20)
        got = self.check(b.events)
        self.assertEqual(got.temporary, 1)

    def test_release_of_a_huge_range_and_of_nothing(self):
        b = Builder()
        b.alloc(0x10, 1, A).alloc(1 << 40, 2, A).alloc((1 << 64) - 16, 4, B)
        b.add("release", 0, 0)               # empty: frees nothing
        b.add("release", 0, 1 << 63)
        got = self.check(b.events)
        self.assertEqual(got.leaked_bytes, 4)

    def test_fork(self):
        # The child (pid 2) inherits the parent's heap but not our record
        # of it: its frees of the parent's pointers are unmatched there,
        # and the parent's own free still matches.
        b = Builder()
        b.alloc(0x10, 100, A, pid=1)
        b.alloc(0x20, 50, B, pid=2, tid=2)   # child
        b.free(0x10, 100, pid=2, tid=2)      # child frees its copy
        b.alloc(0x10, 70, C, pid=2, tid=2)   # same address, child's own
        b.add("exit", pid=2, tid=2)
        b.free(0x10, 100, pid=1)
        got = self.check(b.events, points=6)
        self.assertEqual(got.unmatched_frees, (1, 100))
        self.assertEqual(got.reused, 0)
        self.assertEqual((got.peak_bytes, got.peak_time), (220, 40))
        # Temporary: the child's events do not come between the parent's.
        self.assertEqual(got.by_phase_key[(None, A)],
                         KeyLive(100, 1, 0, 0, 1))
        self.assertEqual((got.leaked_bytes, got.leaked_count), (120, 2))
        # The child's memory leaves the total at its exit.
        self.assertEqual(got.timeline.times, [10, 20, 30, 40, 50, 60])
        self.assertEqual(got.timeline.total, [100, 150, 150, 220, 100, 0])

    def test_pointer_reuse(self):
        b = Builder()
        b.alloc(0x10, 10, A)
        b.alloc(0x10, 20, B)                 # its free was not recorded
        b.free(0x10, 20)
        got = self.check(b.events)
        self.assertEqual(got.reused, 1)
        self.assertEqual((got.peak_bytes, got.leaked_bytes), (20, 0))
        self.assertEqual(got.by_phase_key[(None, A)], KeyLive(0, 0, 0, 0, 0))
        self.assertEqual(got.by_phase_key[(None, B)], KeyLive(20, 1, 0, 0, 1))

    def test_the_first_moment_of_the_peak(self):
        b = Builder()
        b.alloc(0x10, 10, A).free(0x10).alloc(0x20, 10, B)
        got = self.check(b.events)
        self.assertEqual((got.peak_bytes, got.peak_time), (10, 10))
        self.assertEqual(got.by_phase_key[(None, B)].peak_bytes, 0)

    def test_the_peak_is_over_all_processes(self):
        b = Builder()
        b.alloc(0x10, 100, A, pid=1)         # pid 1 alone is highest here
        b.free(0x10, pid=1)
        b.alloc(0x10, 60, B, pid=2)
        b.alloc(0x20, 60, C, pid=3)          # 120 over two processes
        got = self.check(b.events)
        self.assertEqual((got.peak_bytes, got.peak_time), (120, 40))
        self.assertEqual(got.by_phase_key[(None, A)].peak_bytes, 0)

    def test_sample_events_ignored_in_exact_mode(self):
        b = Builder()
        b.sample(0x10, 8, 4096, D)
        b.alloc(0x20, 10, A)
        b.sample(0x30, 8, 4096, D).add("sample_free", 0x10, 4096)
        b.alloc(0x40, 20, B)
        got = self.check(b.events)
        self.assertEqual(set(got.by_phase_key), {(None, A), (None, B)})
        self.assertEqual(got.peak_bytes, 30)
        self.assertFalse(got.frees_recorded)


class Committed(Case):
    def test_committed_bytes(self):
        b = Builder()
        b.add("commit", 0x1000, 4096)
        b.alloc(0x1000, 1000, A)
        b.add("commit", 0x2000, 8192)        # 12288: highest
        b.alloc(0x2000, 3000, A)             # the live peak: 4000
        b.free(0x1000)
        b.add("decommit", 0x1000, 4096)
        b.add("decommit", 0x9000, 1 << 20)   # more than committed: to 0
        b.add("commit", 0x1000, 100, pid=2)
        got = self.check(b.events)
        self.assertEqual((got.committed_peak, got.committed_at_peak,
                          got.committed_end), (12288, 12288, 100))
        self.assertEqual(got.timeline.committed[-1], 100)

    def test_none_without_commit_events(self):
        got = self.check(Builder().alloc(0x10, 1, A).events)
        self.assertEqual((got.committed_peak, got.committed_at_peak,
                          got.committed_end, got.timeline.committed),
                         (None, None, None, None))


# ---------------------------------------------------------------- sampled

class Sampled(Case):
    def poisson(self, rng, mean):
        """Knuth's method: enough for the small means used here."""
        k, p, limit = 0, 1.0, math.exp(-mean)
        while True:
            p *= rng.random()
            if p <= limit:
                return k
            k += 1

    def test_estimates_follow_their_formula(self):
        # A program's allocations, sampled as rt_sampler.h does (N ~
        # Poisson(size / R) points each, weight N * R); the sampled frees
        # come as rt:sample_free with the sample's weight.
        rng = random.Random(1213)
        R = 256
        b = Builder()
        live, samples = {}, {}
        for step in range(300):
            if live and rng.random() < 0.45:
                ptr = rng.choice(sorted(live))
                del live[ptr]
                if ptr in samples:
                    b.sample_free(ptr, samples.pop(ptr)[1])
                else:
                    b.free(ptr)              # recorded, but not sampled
            else:
                ptr = 0x1000 + 16 * step
                size = rng.choice((16, 100, 400, 1000))
                live[ptr] = size
                n = self.poisson(rng, size / R)
                if n:
                    key = A if size < 200 else B
                    samples[ptr] = (size, n * R, key)
                    b.sample(ptr, size, n * R, key)
        got = self.check(b.events, "sampled")
        self.assertIsNone(got.temporary)
        # Leaked: the samples still live at the end, each weight bytes and
        # weight / size objects.
        self.assertTrue(samples)
        self.assertEqual(got.leaked_bytes, float(sum(
            w for _, w, _ in samples.values())))
        self.assertAlmostEqual(got.leaked_count, sum(
            w / s for s, w, _ in samples.values()))
        self.assertIsInstance(got.peak_bytes, float)
        # The per-key peak adds up to the total peak.
        self.assertEqual(sum(k.peak_bytes for k in got.by_phase_key.values()),
                         got.peak_bytes)
        # Entries as the Tally's: sum(w / s), sum(w), sum(w / s**2), n.
        sampled = [e for e in b.events if e[0] == "sample"]
        want = SampledEntry()
        for e in sampled:
            if e[7] == A:
                want.count += e[5] / e[6]
                want.bytes += e[5]
                want.weight_by_size2 += e[5] / e[6] ** 2
                want.samples += 1
        self.assertEqual(got.entries[None][A], want)

    def test_exact_frees_are_ignored_in_sampled_mode(self):
        b = Builder()
        b.sample(0x10, 64, 512, A).free(0x10).alloc(0x20, 8, B)
        got = self.check(b.events, "sampled")
        self.assertEqual((got.leaked_bytes, got.leaked_count), (512.0, 8.0))
        self.assertFalse(got.frees_recorded)
        self.assertEqual(list(got.entries[None]), [A])

    def test_sample_free_of_an_unknown_pointer(self):
        b = Builder()
        b.sample(0x10, 64, 512, A).sample_free(0x20, 1024)
        b.sample_free(0x10, 512)
        got = self.check(b.events, "sampled")
        self.assertEqual(got.unmatched_frees, (1, 1024))
        self.assertEqual((got.peak_bytes, got.leaked_bytes), (512.0, 0.0))

    def test_a_sample_of_size_0_stands_for_nothing(self):
        b = Builder()
        b.sample(0x10, 0, 512, A).sample(0x20, 8, 0, A)
        got = self.check(b.events, "sampled")
        self.assertEqual((got.entries, got.peak_bytes), ({}, 0.0))


# ---------------------------------------------------------------- phases

class Phases(Case):
    def test_nested_phases(self):
        b = Builder()
        b.alloc(0x1, 1000, A)                # before every phase
        b.begin(1)                           # total 1000
        b.alloc(0x10, 100, A)                # charged to 1
        b.begin(2)
        b.alloc(0x20, 20, B)                 # charged to 2 (innermost)
        b.alloc(0x30, 30, B)                 # peak of both: 1150
        b.free(0x20)
        b.end(2)                             # 2 leaves 30; growth 30
        b.free(0x10)
        b.alloc(0x40, 40, A)
        b.end(1)                             # 1 leaves 30 + 40; growth 70
        got = self.check(b.events)
        self.assertEqual(got.phases[1], PhaseStats(1, 2, 140, 70, 1150, 70,
                                                   None))
        self.assertEqual(got.phases[2], PhaseStats(1, 2, 50, 30, 1150, 30,
                                                   None))
        self.assertEqual(set(got.entries), {None, 1, 2})
        self.assertEqual(got.entries[1], {A: ExactEntry(2, 140)})
        self.assertEqual(got.by_phase_key[(2, B)], KeyLive(50, 2, 30, 1, 0))
        self.assertEqual(got.open_phases, [])

    def test_min_size_counts_in_no_entry_but_stays_live(self):
        # --min-size: a phase's and a key's count and bytes leave out the
        # smaller allocations, as the table's sites do; they are still
        # live memory (the peak counts them). Every engine, the reader's too.
        b = Builder()
        b.begin(1)
        b.alloc(0x10, 8, A)                  # under 16: no entry
        b.alloc(0x20, 16, A)
        b.alloc(0x30, 100, B)                # peak 124
        b.free(0x10)
        b.end(1)
        for engine in ("python", "native", "follow"):
            got = sweep(log_of(b.events), "exact", engine=engine,
                        min_size=16)
            with self.subTest(engine=engine):
                self.assertEqual(got.entries[1], {A: ExactEntry(1, 16),
                                                  B: ExactEntry(1, 100)})
                self.assertEqual((got.phases[1].count, got.phases[1].bytes),
                                 (2, 116))
                self.assertEqual(got.peak_bytes, 124)
        s = Builder()
        s.sample(0x10, 8, 4096, A).sample(0x20, 64, 4096, A)
        got = sweep(log_of(s.events), "sampled", min_size=16)
        self.assertEqual(got.entries[None][A].bytes, 4096)
        self.assertEqual(got.entries[None][A].count, 64.0)

    def test_two_threads_in_different_phases(self):
        b = Builder()
        b.free(0x99)                         # frees are recorded
        b.begin(1, tid=1).begin(2, tid=2)
        b.alloc(0x10, 10, A, tid=1)
        b.alloc(0x20, 20, A, tid=2)
        b.alloc(0x30, 40, A, tid=3)          # thread 3: no phase
        b.end(1, tid=1)
        b.alloc(0x40, 80, A, tid=1)          # thread 1 left its phase
        b.alloc(0x50, 160, A, tid=2)
        b.end(2, tid=2)
        got = self.check(b.events)
        self.assertEqual({p: e[A] for p, e in got.entries.items()},
                         {None: ExactEntry(2, 120), 1: ExactEntry(1, 10),
                          2: ExactEntry(2, 20 + 160)})
        # left_live counts only the run's own thread; growth, the process.
        self.assertEqual(got.phases[1].left_live, 10)
        self.assertEqual(got.phases[1].growth, 70)
        self.assertEqual(got.phases[2].left_live, 180)
        self.assertEqual(got.phases[2].growth, 310)

    def test_a_phase_left_open_and_an_end_without_begin(self):
        b = Builder()
        b.free(0x99)                         # frees are recorded
        b.end(5)                             # never begun
        b.begin(1).begin(2)
        b.alloc(0x10, 10, A)
        b.begin(3, tid=2)
        b.end(1, tid=2)                      # not open in thread 2
        b.add("exit")                        # closes 2, 1 and 3
        b.alloc(0x10, 10, A)                 # pid 1 again: a new process
        got = self.check(b.events)
        self.assertEqual(got.unmatched_phase_ends, 2)
        self.assertEqual(got.open_phases, [(1, 1, 1), (1, 1, 2), (1, 2, 3)])
        self.assertEqual(got.phases[2], PhaseStats(1, 1, 10, 10, 10, 10,
                                                   None))
        self.assertEqual(got.reused, 0)
        self.assertEqual(got.leaked_bytes, 20)

    def test_end_of_an_outer_phase_closes_the_inner(self):
        b = Builder()
        b.begin(1).begin(2).begin(2)         # 2 inside itself
        b.alloc(0x10, 10, A)
        b.end(1)                             # closes both runs of 2 too
        b.alloc(0x20, 10, B)
        b.end(2)                             # nothing open any more
        got = self.check(b.events)
        self.assertEqual(got.phases[2].runs, 2)
        self.assertEqual(got.entries[None], {B: ExactEntry(1, 10)})
        self.assertEqual(got.unmatched_phase_ends, 1)
        # the chart's bands: the outer end closed the inner runs too
        # (its two runs of 2 overlap: one band)
        self.assertEqual(
            timeline_series.phase_bands(log_of(b.events), {}, 0, 10 ** 9),
            [("phase 1", 10, 50), ("phase 2", 20, 50)])

    def test_phase_runs_add_up(self):
        b = Builder()
        b.add("commit", 0, 1000)
        b.alloc(0x1, 5, B).free(0x1)         # frees are recorded
        for i in range(3):
            b.begin(7)
            b.alloc(0x100 + i, 10 * (i + 1), A)
            b.add("commit", 0, 100)
            b.end(7)
        got = self.check(b.events)
        self.assertEqual(got.phases[7], PhaseStats(3, 3, 60, 60, 60, 60, 300))

    def test_phases_in_sampled_mode(self):
        b = Builder()
        b.begin(1).sample(0x10, 64, 512, A).sample(0x20, 32, 512, B)
        b.sample_free(0x10, 512).end(1)
        got = self.check(b.events, "sampled")
        self.assertEqual(got.phases[1], PhaseStats(1, 24.0, 1024, 512.0,
                                                   1024.0, 512.0, None))

    def test_without_frees_the_live_figures_are_none(self):
        b = Builder()
        b.begin(1).alloc(0x10, 10, A).end(1)
        got = self.check(b.events)
        self.assertEqual(got.phases[1], PhaseStats(1, 1, 10, None, None, None,
                                                   None))


# ---------------------------------------------------------------- timeline

class TimelineTest(Case):
    def test_points_include_the_peak(self):
        b = Builder()
        b.alloc(0x10, 100, A)                # t10
        b.alloc(0x20, 50, B, dt=3)           # t13: peak 150
        b.free(0x10, dt=2)                   # t15
        b.free(0x20, dt=45)                  # t60
        b.alloc(0x30, 10, A, dt=40)          # t100
        got = self.check(b.events, points=4)
        tl = got.timeline
        self.assertEqual(tl.times, [10, 13, 40, 70, 100])
        self.assertEqual(tl.total, [100, 150, 50, 0, 10])
        self.assertEqual(tl.by_key, {A: [100, 100, 0, 0, 10],
                                     B: [0, 50, 50, 0, 0]})

    def test_a_sample_time_on_the_peak_shows_the_peak(self):
        b = Builder()
        b.alloc(0x10, 100, A)
        b.alloc(0x20, 50, B)                  # t20: the peak ...
        b.free(0x20, dt=0)                    # ... and gone in the same ns
        b.alloc(0x30, 1, C, dt=20)            # t40
        got = self.check(b.events, points=4)
        self.assertEqual(got.timeline.times, [10, 20, 30, 40])
        self.assertEqual(got.timeline.total, [100, 150, 100, 101])

    def test_few_points(self):
        b = Builder().alloc(0x10, 5, A).alloc(0x20, 6, A).free(0x10)
        for points in (0, 1, 2, 3, 1000):
            with self.subTest(points=points):
                got = self.check(b.events, points=points)
                self.assertLessEqual(len(got.timeline.times), max(points, 0) + 1)
                self.assertIn(20, got.timeline.times)   # the peak

    def test_keys_never_live_at_a_point_are_left_out(self):
        b = Builder()
        b.alloc(0x20, 1, B, dt=1)
        b.alloc(0x10, 5, A, dt=1).free(0x10, dt=1)   # between two points
        b.alloc(0x30, 9, B, dt=100).alloc(0x40, 9, B, dt=100)
        got = self.check(b.events, points=3)
        self.assertEqual(list(got.timeline.by_key), [B])


# ---------------------------------------------------------------- random

def random_events(rng, n, mode):
    """A random log: few pointers (so reuse and unknown frees happen),
    several processes and threads, phases, releases, commits, exits."""
    made = "sample" if mode == "sampled" else "alloc"
    ends = "sample_free" if mode == "sampled" else "free"
    events, t = [], 0
    for _ in range(n):
        t += rng.choice((0, 1, 1, 2, 5))
        pid = rng.choice((1, 1, 1, 2, 3))
        tid = pid * 10 + rng.randrange(3)
        r = rng.random()
        ptr = rng.randrange(12) * 0x8000 + rng.choice((0, 16))
        key = rng.choice((A, B, C))
        if r < 0.38:
            size = rng.randrange(0, 300)
            weight = size if mode == "exact" else rng.choice((0, 256, 512))
            events.append((made, t, pid, tid, ptr, weight, size, key))
        elif r < 0.7:
            events.append((ends, t, pid, tid, ptr, rng.randrange(300),
                           None, None))
        elif r < 0.74:
            other = "alloc" if mode == "sampled" else "sample"
            events.append((other, t, pid, tid, ptr, 100, 10, key))
        elif r < 0.77:
            base = rng.randrange(12) * 0x8000
            events.append(("release", t, pid, tid, base,
                           rng.choice((0, 0x8000, 0x10000, 0x30010)),
                           None, None))
        elif r < 0.82:
            kind = rng.choice(("commit", "decommit"))
            events.append((kind, t, pid, tid, 0, rng.randrange(5000),
                           None, None))
        elif r < 0.9:
            events.append(("phase_begin", t, pid, tid, rng.randrange(1, 4),
                           0, None, None))
        elif r < 0.98:
            events.append(("phase_end", t, pid, tid, rng.randrange(1, 4),
                           0, None, None))
        else:
            events.append(("exit", t, pid, pid, 0, 0, None, None))
    return [e[:6] + (e[5] if e[6] is None else e[6],) + e[7:]
            for e in events]


class Random(Case):
    def test_exact_against_the_reference(self):
        rng = random.Random(20240613)
        for trial in range(40):
            events = random_events(rng, rng.randrange(1, 160), "exact")
            with self.subTest(trial=trial):
                self.check(events, points=rng.choice((1, 7, 50)))

    def test_sampled_against_the_reference(self):
        rng = random.Random(613)
        for trial in range(40):
            events = random_events(rng, rng.randrange(1, 160), "sampled")
            with self.subTest(trial=trial):
                self.check(events, "sampled", points=rng.choice((2, 9, 40)))

    def test_min_size_every_engine_against_the_oracle(self):
        # --min-size on random logs: the product's sweep, after the
        # reader and in it (follow), bit for bit the oracle's
        rng = random.Random(5150)
        for trial in range(20):
            events = random_events(rng, rng.randrange(1, 160), "exact")
            min_size = rng.choice((2, 16, 64))
            want = sweep(log_of(events), "exact", 7, engine="python",
                         min_size=min_size)
            got = sweep(log_of(events, spill_every=7), "exact", 7,
                        min_size=min_size)
            want_followed = sweep(log_of(events), "exact", engine="python",
                                  min_size=min_size, series=False)
            followed = sweep(log_of(events, spill_every=7), "exact",
                             engine="follow", min_size=min_size)
            assert_same_liveness(self, got, want, trial=trial)
            assert_same_liveness(self, followed, want_followed, trial=trial,
                                 follow=True)

    def test_state_at_the_peak_equals_a_replay_up_to_it(self):
        # _Sweep.at_peak (the end state with the changes since the peak
        # undone) against a second replay stopped at the peak, as sweep()
        # once computed it: reuse, releases, exits and phases included.
        rng = random.Random(4242)
        for trial in range(300):
            events = random_events(rng, rng.randrange(1, 400), "exact")
            log = log_of(events)
            plan = liveness_py._Plan(log, "exact")
            main = liveness_py._Sweep(log, plan, []).run(len(log))
            if main.peak_i < 0:
                continue
            replay = liveness_py._Sweep(log, plan, []).run(main.peak_i + 1)
            with self.subTest(trial=trial):
                self.assertEqual(main.at_peak(),
                                 (dict(replay.live_by_code()), replay.kb))

    def test_the_release_index_matches_a_scan(self):
        # Many live pointers: release goes through the granule index.
        rng = random.Random(99)
        b = Builder()
        for i in range(200):
            b.alloc(rng.randrange(1 << 22) & ~15, 8, A, dt=1)
        for _ in range(20):
            b.add("release", rng.randrange(1 << 22), rng.randrange(1 << 18),
                  dt=1)
            b.alloc(rng.randrange(1 << 22) & ~15, 8, B, dt=1)
        self.check(b.events, points=5)


class NativeSweep(unittest.TestCase):
    """allocsites-sweep (C) against liveness.py's sweep on what its pointer
    map does that the cases above reach little: thousands of live pointers
    per 64 KiB granule (inserted in and out of order, compacted as they
    die, the granule given back when all have), releases through the
    granule index and through a scan, ranges that end past 2^64, sizes
    whose sums pass 2^64, pointers at the top of the address space."""
    maxDiff = None

    def events(self, rng, n):
        keys = (A, B, C, D)
        bases = (0x10000, 0x20000, 0x7fff0000, (1 << 64) - 0x20000)
        live, events, t = [], [], 0
        for i in range(n):
            t += rng.choice((0, 1, 3))
            pid = rng.choice((1, 1, 1, 2))
            tid = pid * 10 + rng.randrange(2)
            r = rng.random()
            if r < 0.55 or not live:
                base = rng.choice(bases)
                ptr = base + rng.randrange(0x18000) // 8 * 8 \
                    if rng.random() < 0.5 else base + 8 * (i % 0x2000)
                ptr %= 1 << 64
                size = rng.choice((8, 24, 100, (1 << 64) - 1)) \
                    if rng.random() < 0.01 else rng.randrange(1, 200)
                events.append(("alloc", t, pid, tid, ptr, size, size,
                               rng.choice(keys)))
                live.append((pid, ptr))
            elif r < 0.93:
                pid, ptr = live.pop(rng.randrange(len(live)))
                events.append(("free", t, pid, tid, ptr, 0, None, None))
            elif r < 0.95:
                base = rng.choice(bases) + rng.randrange(0x20000)
                length = rng.choice((0x100, 0x10000, 0x40000, 1 << 63,
                                     (1 << 64) - 1))
                events.append(("release", t, pid, tid, base % (1 << 64),
                               length, None, None))
            elif r < 0.97:
                events.append(("phase_begin", t, pid, tid,
                               rng.randrange(1, 3), 0, None, None))
            elif r < 0.99:
                events.append(("phase_end", t, pid, tid,
                               rng.randrange(1, 3), 0, None, None))
            else:
                events.append(("exit", t, pid, tid, 0, 0, None, None))
        return events

    def test_dense_granules_against_python(self):
        rng = random.Random(77)
        for trial in range(12):
            events = self.events(rng, rng.randrange(2000, 12000))
            points = rng.choice((1, 13, 400))
            want = sweep(log_of(events), "exact", points, engine="python")
            for spill in (None, 997):
                got = sweep(log_of(events, spill_every=spill), "exact",
                            points, engine="native")
                assert_same_liveness(self, got, want, trial=trial,
                                     spill=spill)

    def test_sampled_against_python(self):
        # The same logs as samples: weights that are not multiples of the
        # sizes (counts that are not whole), so that a sum in another
        # order than the oracle's would show in the last bits; the
        # exact-mode events left in are ignored, as recorded mixed.
        rng = random.Random(78)
        for trial in range(8):
            events = []
            for e in self.events(rng, rng.randrange(2000, 12000)):
                kind, t, pid, tid, a, b, size, key = e
                if kind == "alloc" and rng.random() < 0.9:
                    size = size % (1 << 20) + 1
                    e = ("sample", t, pid, tid, a,
                         size * rng.randrange(1, 9) + rng.randrange(7),
                         size, key)
                elif kind == "free" and rng.random() < 0.9:
                    e = ("sample_free", t, pid, tid, a, 0, None, None)
                events.append(e)
            points = rng.choice((1, 13, 400))
            want = sweep(log_of(events), "sampled", points, engine="python")
            self.assertGreater(want.leaked_count, 0)
            for spill in (None, 997):
                got = sweep(log_of(events, spill_every=spill), "sampled",
                            points)
                assert_same_liveness(self, got, want, trial=trial,
                                     spill=spill)

    def test_a_followed_sweep_told_too_little_fails(self):
        # A chunk missed, or an end that counts otherwise: an error,
        # never the sweep of part of the log
        b = Builder()
        for i in range(40):
            b.alloc(0x1000 + 16 * i, 16, (A, B)[i % 2])
            if i % 3:
                b.free(0x1000 + 16 * (i - 1))
        log = log_of(b.events, spill_every=7)
        f, table = log.export()
        log._file = f
        try:
            with self.assertRaisesRegex(nativesweep.SweepError,
                                        "chunks of .* events said"):
                follow(log, table[:2] + table[3:], end="end 2 %d %d" % (
                    len(table), len(log)))
            with self.assertRaisesRegex(nativesweep.SweepError,
                                        "stopped short"):
                follow(log, table, end=" ")
        finally:
            f.close()

    def test_a_log_the_reader_swept_is_not_read(self):
        # the reader swept it (log.answered) and kept no events: a sweep
        # that would need them (a timeline, sampled mode) is an error in
        # one line, as is reading its events
        log = log_of([("alloc", 1, 1, 1, 16, 8, 8, A),
                      ("free", 2, 1, 1, 16, 8, 8, None)], spill_every=1)
        log.answered = ["plan 0 0 1", "R 8 0 1 0 0 0 0 0 0 0", "P 0 0",
                        "end"]
        with self.assertRaisesRegex(nativesweep.SweepError,
                                    "swept by the reader"):
            liveness.sweep(log, "exact", series=True)
        with self.assertRaisesRegex(nativesweep.SweepError,
                                    "swept by the reader"):
            liveness.sweep(log, "sampled", series=False)
        with self.assertRaises(EventLog.NotKept):
            list(log)
        got = liveness.sweep(log, "exact", series=False)
        self.assertEqual(got.peak_bytes, 8)
        # an answer that is not one (a line before its plan, a field not
        # a number, one short): one line, not a traceback
        for bad in (["C 0 1 8 0 0 0 0 0", "end"],
                    ["plan 0 0 1", "R x", "P 0 0", "end"],
                    ["plan 0 0 1", "C 0 1", "P 0 0", "end"]):
            log.answered = bad
            with self.assertRaisesRegex(nativesweep.SweepError,
                                        "cannot be read"):
                liveness.sweep(log, "exact", series=False)

    def test_an_unbuilt_sweep_is_said(self):
        old = os.environ.get("BUILD")
        os.environ["BUILD"] = "/nonexistent"
        try:
            if nativesweep.program_path() is not None:
                self.skipTest("allocsites-sweep installed beside the module")
            for mode in ("exact", "sampled"):
                with self.assertRaisesRegex(nativesweep.SweepError,
                                            "allocsites-sweep is not built"):
                    sweep(log_of([("alloc", 1, 1, 1, 16, 8, 8, A)]), mode)
        finally:
            if old is None:
                del os.environ["BUILD"]
            else:
                os.environ["BUILD"] = old


# ---------------------------------------------------------------- big

def big_log(n, phases):
    """n events: allocations and frees (each allocation freed 0-64 events
    later), the live set growing to the middle, optionally nested phases."""
    log = EventLog()
    rng = random.Random(1)
    keys = [("stack %d" % i, 0) for i in range(300)]
    pending = []
    t = 0
    for i in range(n // 2):
        t += 7
        if phases and i % 1000 == 0:
            log.append("phase_begin", t, 1, 1, 1 + (i // 1000) % 3, 0)
        ptr = 0x10000 + 16 * i
        log.append("alloc", t, 1, 1, ptr, 16 + (i & 255), key=keys[i % 300])
        if i < n // 4 and i % 4 == 0:
            continue   # stays live: grows the heap until the middle
        pending.append(ptr)
        if len(pending) > rng.randrange(64) or i == n // 2 - 1:
            while pending:
                t += 3
                log.append("free", t, 1, 2, pending.pop(), 0)
        if phases and i % 1000 == 999:
            log.append("phase_end", t, 1, 1, 1 + (i // 1000) % 3, 0)
    return log


class ManyPhaseKeys(unittest.TestCase):
    """More than 2^20 (phase, key) counters: the oracle keeps them in
    dicts, in the order first counted, not in lists by code, and
    sweep.c's codes_in_counter_order follows it (its sparse branch). A
    sampled sum in another order would show in the last bits, and the
    dicts' orders are compared too (comparable(..., None))."""
    maxDiff = None

    def events(self, sampled):
        # 1100 keys, 1000 phases one after the other: 1001 slots x 1100
        # keys > 2^20; keys met in an order unlike their codes'
        rng = random.Random(91)
        keys = ["k%04d" % i for i in range(1100)]
        events, t, ptr = [], 0, 0x10000
        for key in keys:   # every key known, outside every phase
            t += 1
            ptr += 64
            events.append(("alloc", t, 1, 1, ptr, 8, 8, key))
        for phase in range(1, 1001):
            t += 1
            events.append(("phase_begin", t, 1, 1, phase, 0, None, None))
            made = []
            for _ in range(3):
                t += 1
                ptr += 64
                size = rng.randrange(1, 300)
                key = rng.choice(keys)
                if sampled:
                    events.append(("sample", t, 1, 1, ptr,
                                   size * rng.randrange(1, 9) +
                                   rng.randrange(7), size, key))
                else:
                    events.append(("alloc", t, 1, 1, ptr, size, size, key))
                made.append(ptr)
            t += 1
            events.append(("sample_free" if sampled else "free", t, 1, 1,
                           made[rng.randrange(3)], 0, None, None))
            t += 1
            events.append(("phase_end", t, 1, 1, phase, 0, None, None))
        return events

    def test_exact_against_python(self):
        events = self.events(False)
        want = sweep(log_of(events), "exact", 13, engine="python")
        self.assertEqual(want.leaked_count, 1100 + 2000)
        got = sweep(log_of(events, spill_every=997), "exact", 13)
        # the sweep that follows the reader, against the oracle's without
        # the chart (as Case.check)
        want_followed = sweep(log_of(events), "exact", engine="python",
                              series=False)
        followed = sweep(log_of(events, spill_every=997), "exact",
                         engine="follow")
        assert_same_liveness(self, got, want)
        assert_same_liveness(self, followed, want_followed, follow=True)

    def test_sampled_against_python(self):
        events = self.events(True)
        want = sweep(log_of(events), "sampled", 13, engine="python")
        got = sweep(log_of(events, spill_every=997), "sampled", 13)
        self.assertGreater(want.leaked_count, 0)
        assert_same_liveness(self, got, want)


class BigLog(unittest.TestCase):
    def test_the_sweep_equals_the_oracle_on_a_big_log(self):
        # 200,000 events, a live set of 25,000 at the peak, with and
        # without nested phases: the two sweeps agree bit for bit.
        for phases in (False, True):
            log = big_log(200000, phases)
            got = sweep(log, "exact", 50)
            want = sweep(log, "exact", 50, engine="python")
            kept = sum(16 + (i & 255) for i in range(0, 50000, 4))
            self.assertEqual(got.leaked_bytes, kept)   # never freed
            self.assertEqual(got.leaked_count, 12500)
            self.assertGreaterEqual(got.peak_bytes, kept)
            assert_same_liveness(self, got, want, phases=phases)


if __name__ == "__main__":
    unittest.main()
