"""Raw event counts per (raw stack, tag): the read stage's product.

The Tally is what reading a recording gives the report (the perf script
path builds it per event, Tally.add_fields, inside perf; the native
reader's reader/tally.c applies the same rules in C and native.py fills
one from its answer): counts and bytes per (raw stack, tag) key, the
completeness counts, the guest locations, and the EventLog of every event
in time order for the liveness sweep. analyze/fold.py sums it per call
site. A parallel report merges one Tally per perf script worker (merge,
MERGE_RULES).
"""

import collections
import math

from ..contract import COUNTED_AS
from . import parse
from .eventlog import EventLog

PHASE_KINDS = ("phase_begin", "phase_end")
# rt:exit events whose counts are all this are padding (include/rt_exit.h)
EXIT_PADDING = (1 << 64) - 1


class ExactEntry:
    """One (raw stack, tag) of the exact stream (rt:alloc)."""
    __slots__ = ("count", "bytes")

    def __init__(self, count=0, nbytes=0):
        self.count, self.bytes = count, nbytes

    def merge(self, other):
        self.count += other.count
        self.bytes += other.bytes

    def __eq__(self, other):
        return type(other) is ExactEntry and \
            (self.count, self.bytes) == (other.count, other.bytes)

    def __repr__(self):
        return "ExactEntry(%r, %r)" % (self.count, self.bytes)


class SampledEntry:
    """One (raw stack, tag) of the sampled stream (rt:sample): the
    estimates sum(weight / size) and sum(weight), sum(weight / size**2)
    for the count's error, and the number of samples behind them
    (docs/sampling.md)."""
    __slots__ = ("count", "bytes", "weight_by_size2", "samples")

    def __init__(self, count=0.0, nbytes=0, weight_by_size2=0.0, samples=0):
        self.count, self.bytes = count, nbytes
        self.weight_by_size2, self.samples = weight_by_size2, samples

    def merge(self, other):
        self.count += other.count
        self.bytes += other.bytes
        self.weight_by_size2 += other.weight_by_size2
        self.samples += other.samples

    def __eq__(self, other):
        return type(other) is SampledEntry and \
            (self.count, self.bytes, self.weight_by_size2, self.samples) == \
            (other.count, other.bytes, other.weight_by_size2, other.samples)

    def __repr__(self):
        return "SampledEntry(%r, %r, %r, %r)" % (
            self.count, self.bytes, self.weight_by_size2, self.samples)


class Tally:
    """Raw event counts, keyed by (raw stack, tag). Cheap per event.

    stacks: exact allocations, [count, bytes] per key.
    sampled: rt:sample events, [count estimate, bytes estimate,
    sum(weight / size**2), samples] per key (docs/sampling.md: the
    estimates are sum(weight / size) and sum(weight); the third sum times
    R is the variance of the count estimate).

    A parallel report has one Tally per perf script worker and merges
    them (merge(); every field needs a rule in MERGE_RULES). The entry
    factories are module functions so that a Tally pickles."""

    def __init__(self, min_size=0, log=True):
        self.min_size = min_size
        # Every event in time order, for the liveness sweep (liveness.py):
        # who holds the memory needs the frees matched to their allocations
        # across the workers' time ranges. None: counters only.
        self.log = EventLog() if log else None
        self.stacks = collections.defaultdict(ExactEntry)
        self.sampled = collections.defaultdict(SampledEntry)
        self.weight_gcd = 0                   # R's guess for old headers
        self.sample_rates = collections.Counter()  # R -> samples (None: old)
        self.events = collections.Counter()   # kind -> events seen
        self.malformed = 0                    # rt events perf could not decode
        self.filtered = 0                     # allocations under --min-size
        self.frees = [0, 0]                   # count, bytes
        self.no_callchain = 0
        self.duplicate_kinds = collections.Counter()  # kind -> duplicates
        self.padding = 0                      # rt:exit padding (rt_exit.h)
        self._last_time = {}                  # tid -> time of its last event
        # rt:sample's phases (rt:phase_track recorded): tid -> the phase
        # id + 1 of its last sample; True once any sample carried one
        self._sample_phase = {}
        # tid -> (phase, time, pid) of its first sample here: a worker's
        # tally starts outside every phase, so merge() ends there the run
        # the earlier worker's samples left open (Tally.merge)
        self._first_sample_phase = {}
        self.phases_from_samples = False
        # The end-to-end check (completeness.py): events received per
        # process and kind, and what each process's rt:exit said it fired
        # (summed over its ELF files), as [allocs, frees, samples].
        self.received = collections.defaultdict(collections.Counter)
        self.fired = {}
        # A language runtime's guest locations (rt:guest): id -> (parent
        # id, line, source, function), its first definition
        self.guests = {}

    @property
    def duplicates(self):
        """Sample records perf wrote twice, dropped (all kinds)."""
        return sum(self.duplicate_kinds.values())

    def add(self, event):
        """Count one parse.Event (None counts as malformed)."""
        if event is None:
            self.malformed += 1
            return
        self.add_fields(event.kind, event.pid, event.tid, event.size,
                        event.tag, parse.weight_slot(event), event.frames,
                        event.time, event.ptr)

    def _track_phase(self, phase, time, pid, tid):
        """rt:sample's phase (id + 1, 0: none; rt:phase_track recorded):
        the thread's phase runs as the event log would have had them from
        rt:phase_begin and rt:phase_end, seen at the samples: a change of
        the thread's phase between two samples ends its run and begins
        the next there. Counts and bytes per phase are then those of
        exact attribution (the innermost phase); runs and their times are
        only as fine as the samples (livereport shows no run figures)."""
        self.phases_from_samples = True
        if tid not in self._first_sample_phase:
            self._first_sample_phase[tid] = (phase, time, pid)
        now = self._sample_phase.get(tid, 0)
        if now == phase:
            return
        if now:
            self.log.append("phase_end", time, pid, tid, now - 1, 0)
        if phase:
            self.log.append("phase_begin", time, pid, tid, phase - 1, 0)
        self._sample_phase[tid] = phase

    def add_fields(self, kind, pid, tid, size, tag, weight, frames, time,
                   ptr=None):
        """add() with the Event's fields as arguments: the per-event path
        inside perf (parse.Reader.read gives them as a plain tuple, no
        Event built). For rt:exit, weight is its counts; for rt:sample,
        (weight, rate, phase), rate None from an older header, phase
        None from one without rt:phase_track (a 2-tuple: neither)."""
        # perf 6.1 sometimes writes one sample record twice (same thread,
        # same nanosecond, same bytes): perf_mmap__push reads the ring's
        # head twice and copies up to the second reading, then resumes
        # from the first (docs/design.md, "perf writes some sample
        # records twice"). Two real events of one thread cannot share a
        # nanosecond (each is a trap of over a microsecond), so the second
        # is dropped and counted.
        if time is not None:
            last = self._last_time
            if last.get(tid) == time:
                self.duplicate_kinds[kind] += 1
                return
            last[tid] = time
        if kind == "guest":   # a name (weight: its definition)
            self.events[kind] += 1
            self.guests.setdefault(weight[0], tuple(weight[1:]))
            return
        if kind == "exit" and weight and \
                all(n == EXIT_PADDING for n in weight):
            self.padding += 1   # include/rt_exit.h: not an exit
            return
        if kind == "sample" and not weight[0]:
            # A phase mark (include/rt_probes.h, rt__phase_mark): an
            # rt:sample of nothing from a thread's end or the process's
            # exit, carrying the thread's phase then. It ends the run the
            # samples began; no allocation, not one of the samples.
            self.received[pid][COUNTED_AS.get(kind, kind)] += 1
            phase = (tuple(weight) + (None, None))[2]
            if phase is not None and self.log is not None:
                self._track_phase(phase, time, pid, tid)
            return
        self.events[kind] += 1
        log = self.log
        if kind == "exit":   # weight: rt:exit's counts (3, or 8 now)
            if log is not None:
                log.append("exit", time, pid, tid, 0, 0)
            fired = self.fired.setdefault(pid, [])
            fired.extend([0] * (len(weight) - len(fired)))
            for i, n in enumerate(weight):
                fired[i] += n
            return
        self.received[pid][COUNTED_AS.get(kind, kind)] += 1
        if kind == "sample":
            weight, rate, phase = (tuple(weight) + (None,))[:3]
            self.sample_rates[rate] += 1
            if phase is not None and log is not None:
                self._track_phase(phase, time, pid, tid)
        if kind == "free":
            self.frees[0] += 1
            self.frees[1] += size
            if log is not None:
                log.append("free", time, pid, tid, ptr, size)
            return
        if kind not in ("alloc", "sample"):   # release, commit, phase_begin...
            if log is not None:   # phases: the id is in tag
                log.append(kind, time, pid, tid,
                           tag if kind in PHASE_KINDS else ptr, size)
            return
        if log is not None:
            # Under --min-size too: their frees must find them.
            if kind == "alloc":
                log.append("alloc", time, pid, tid, ptr, size, (frames, tag))
            elif size > 0 and weight > 0:
                log.append("sample", time, pid, tid, ptr, weight,
                           (frames, tag), size)
        if size < self.min_size:
            self.filtered += 1
            return
        if not frames:
            self.no_callchain += 1
        if kind == "alloc":
            entry = self.stacks[(frames, tag)]
            entry.count += 1
            entry.bytes += size
        elif size > 0 and weight > 0:   # kind == "sample"
            entry = self.sampled[(frames, tag)]
            entry.count += weight / size
            entry.bytes += weight
            entry.weight_by_size2 += weight / (size * size)
            entry.samples += 1
            self.weight_gcd = math.gcd(self.weight_gcd, weight)

    def merge(self, other):
        """Adds other's counts to this Tally (a worker's, from another time
        range of the same recording) and returns self. Every field is
        merged by its rule in MERGE_RULES; a field without a rule raises
        TypeError, so a new field cannot be dropped silently."""
        names = set(vars(self)) | set(vars(other))
        missing = sorted(names - set(MERGE_RULES))
        if missing:
            raise TypeError("Tally.merge has no rule for field(s) %s: add "
                            "them to tally.MERGE_RULES" % ", ".join(missing))
        self._end_open_runs(other)
        for name in sorted(names):
            setattr(self, name, MERGE_RULES[name](
                name, getattr(self, name), getattr(other, name)))
        return self

    def _end_open_runs(self, later):
        """Phases seen at the samples, merging a later worker's tally: it
        began every thread outside every phase, so a run this tally's
        samples left open would never end (and count as open at exit).
        It ends at the thread's first sample there, where that tally
        began its own run (or none: phase 0). The run of one phase across
        the boundary becomes two: runs are not known in sampled mode."""
        if self.log is None or later.log is None:
            return
        for tid, now in sorted(self._sample_phase.items()):
            first = later._first_sample_phase.get(tid)
            if now and first is not None:
                _phase, time, pid = first
                self.log.append("phase_end", time, pid, tid, now - 1, 0)

    def mode(self):
        """'exact' if rt:alloc was recorded (it wins when both were),
        'sampled' if only rt:sample was."""
        return "sampled" if self.sampled and not self.stacks else "exact"

    def entries(self, mode):
        return self.sampled if mode == "sampled" else self.stacks

    def keys(self):
        """Every (raw stack, tag) recorded, exact and sampled."""
        return list(self.stacks) + list(self.sampled)

    def dsos(self):
        """Every DSO that appears in a recorded stack. Kept while no key
        is added (keys are only ever added): a report asks five times, a
        pass over every frame of every key each."""
        n = len(self.stacks) + len(self.sampled)
        memo = getattr(self, "_dsos", None)
        if memo is None or memo[0] != n:
            found = {raw.dso for frames, _ in self.keys() for raw in frames}
            memo = self._dsos = (n, frozenset(found - parse.END_DSOS))
        return set(memo[1])


def _same(name, mine, theirs):
    if mine != theirs:
        raise ValueError("cannot merge tallies with different %s: %r and %r"
                         % (name, mine, theirs))
    return mine


def _sum(_name, mine, theirs):
    return mine + theirs


def _sum_pairwise(_name, mine, theirs):
    return [a + b for a, b in zip(mine, theirs)]


def _sum_entries(_name, mine, theirs):
    for key, entry in theirs.items():
        mine[key].merge(entry)
    return mine


def _sum_counter(_name, mine, theirs):
    mine.update(theirs)   # Counter.update adds
    return mine


def _sum_per_process(_name, mine, theirs):
    """{pid: Counter} or {pid: [allocs, frees, samples]}: summed per pid."""
    for pid, counts in theirs.items():
        if pid not in mine:
            mine[pid] = counts
        elif isinstance(counts, list):   # rt:exit's counts: 3 or 8
            a, b = mine[pid], counts
            n = max(len(a), len(b))
            a, b = a + [0] * (n - len(a)), b + [0] * (n - len(b))
            mine[pid] = [x + y for x, y in zip(a, b)]
        else:
            mine[pid].update(counts)
    return mine


def _concatenate(_name, mine, theirs):
    if mine is None or theirs is None:
        return mine if theirs is None else theirs
    return mine.extend(theirs)


def _gcd(_name, mine, theirs):
    return math.gcd(mine, theirs)


def _latest(_name, mine, theirs):
    for tid, time in theirs.items():
        if tid not in mine or time > mine[tid]:
            mine[tid] = time
    return mine


# How Tally.merge combines each field: fn(name, mine, theirs) -> merged.
# A new Tally field needs an entry (tests/unit/test_merge.py checks it).
MERGE_RULES = {
    "min_size": _same,
    "stacks": _sum_entries,
    "sampled": _sum_entries,
    "weight_gcd": _gcd,
    "sample_rates": _sum_counter,
    "events": _sum_counter,
    "malformed": _sum,
    "filtered": _sum,
    "frees": _sum_pairwise,
    "no_callchain": _sum,
    "duplicate_kinds": _sum_counter,
    "padding": _sum,
    "_last_time": _latest,   # only the duplicate filter reads it
    "received": _sum_per_process,
    "fired": _sum_per_process,
    "log": _concatenate,   # workers merge in time order (workers.collect)
    "_sample_phase": lambda _name, mine, theirs: {**mine, **theirs},
    "_first_sample_phase": lambda _name, mine, theirs: {**theirs, **mine},
    "phases_from_samples": lambda _name, mine, theirs: mine or theirs,
    "guests": lambda _name, mine, theirs: {**theirs, **mine},
}
