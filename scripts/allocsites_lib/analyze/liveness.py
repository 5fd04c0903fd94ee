"""Who holds the memory: one sweep of an EventLog in time order.

sweep(log, mode, points) replays the rt events and returns a Liveness:
peak, leaked, temporary and in-use per (phase, key), the phases, and the
memory-over-time Timeline. The definitions follow heaptrack's
(docs/design.md, "Liveness: the sweep"):

- live: allocated and not yet freed, per process, matched by pointer.
  A free of a pointer not live in its process is unmatched (counted,
  never matched to anything else); an allocation of a pointer already
  live frees the old one first (counted in `reused`). A process's
  memory stops being live at its last rt:exit (each ELF file fires one,
  so the last one is the process's end): what is live there is leaked.
- peak: the first moment at which the live bytes of all processes
  together were highest; each (phase, key)'s peak is its live bytes and
  count at that moment.
- temporary (exact mode): an allocation freed by the very next
  alloc/free/release event of its process.
- sampled mode: the same on rt:sample / rt:sample_free, each sample
  standing for `weight` bytes and weight / size objects; rt:alloc and
  rt:free are ignored (exact mode ignores rt:sample and rt:sample_free).
  release applies in both.
- phases per thread; each allocation is charged to the innermost phase
  open in its thread (None: outside every phase).

The sweep itself runs in allocsites-sweep (scripts/sweep/, C; run and
read by nativesweep.py): about 6 bytes a live allocation, where Python
kept about 150. This module assembles its answer into a Liveness and
the Timeline. The Python sweep it replaced is the tests' oracle
(tests/oracle/liveness_py.py, which says how it was measured).
"""

import bisect
import collections

from ..read.tally import ExactEntry, SampledEntry
from . import nativesweep

KeyLive = collections.namedtuple(
    "KeyLive", "peak_bytes peak_count leaked_bytes leaked_count temporary")
Liveness = collections.namedtuple("Liveness", [
    "by_phase_key",    # {(phase_id or None, key): KeyLive}
    "entries",         # {phase_id or None: {key: ExactEntry | SampledEntry}}
    "peak_bytes", "peak_count", "peak_time",
    "leaked_bytes", "leaked_count", "temporary",  # temporary None: sampled
    "unmatched_frees",  # (count, bytes)
    "reused",           # allocations of a pointer already live
    "committed_peak", "committed_at_peak", "committed_end",  # None: no commit
    "phases",           # {phase_id: PhaseStats}
    "unmatched_phase_ends", "open_phases",   # int, [(pid, tid, id)]
    "timeline",         # Timeline
    "frees_recorded",   # bool: events that end allocations were recorded
])
PhaseStats = collections.namedtuple(
    "PhaseStats", "runs count bytes left_live peak growth committed_growth")
# times: ns (the log's clock); total, committed: bytes at each time;
# by_key: {key: [bytes at each time]}. The chart's phase bands come from
# the log (timeline_series.phase_bands), not from the sweep.
Timeline = collections.namedtuple(
    "Timeline", "times total by_key committed")


# ---------------------------------------------------------------- timeline

def sample_times(log, points):
    """Up to `points` times evenly spread from the log's first event to
    its last, both included (integer ns, no repeats)."""
    if not len(log) or points < 1:
        return []
    t0, t1 = log.first_time(), log.last_time()
    if points == 1 or t1 <= t0:
        return [t1]
    out = []
    for j in range(points):
        t = t0 + (t1 - t0) * j // (points - 1)
        if not out or t > out[-1]:
            out.append(t)
    return out


def _timeline(log, plan, times, main, peak_kb, totals, committed, series):
    """The Timeline: the columns at the sample times (series: {key index:
    bytes at each time}, for the keys non-zero at some time; None: no
    key's, by_key empty) with the peak's state (peak_kb: {key index:
    bytes}) put in at its moment."""
    times, totals, committed = list(times), list(totals), list(committed)
    npoints = len(times)
    wanted = series is not None
    series = dict(series or {})
    if main.peak_i >= 0:
        # The peak is a moment of its own; a sample time equal to it shows
        # the peak (the state right after the peak event).
        pos = bisect.bisect_left(times, main.peak_t)
        replace = pos < len(times) and times[pos] == main.peak_t
        if not replace:
            times.insert(pos, main.peak_t)
        for k, v in peak_kb.items() if wanted else ():
            if v and k not in series:
                series[k] = [0] * npoints
        for col, value in ([(totals, main.peak),
                            (committed, main.committed_at_peak)] +
                           [(s, peak_kb.get(k, 0))
                            for k, s in series.items()]):
            if replace:
                col[pos] = value
            else:
                col.insert(pos, value)
    keys = log.keys
    by_key = {keys[k]: series[k] for k in sorted(series) if any(series[k])}
    return Timeline(times, totals, by_key,
                    committed if plan.has_commit else None)


# ---------------------------------------------------------------- sweep

def sweep(log, mode, points=400, min_size=0, series=True):
    """The Liveness of an EventLog; mode 'exact' or 'sampled'; min_size
    (--min-size): smaller allocations count in no entry (they are still
    live memory); series False: no chart of the timeline is made, whose
    points then are only its origin, the first event (by_key empty).

    The sweep runs in allocsites-sweep (nativesweep.py), or ran in the
    native reader itself (log.answered: exact mode, the timeline's
    origin only, the --min-size it was read with), whose answer is then
    taken. Raises nativesweep.SweepError, one line, where it is not built
    or fails."""
    if log.answered is not None:
        if mode != "exact" or series:   # the report asked for it so
            raise nativesweep.SweepError(
                "the event log was swept by the reader for another "
                "report (%s mode%s)" % (mode, ", a timeline" if series
                                        else ""))
        got = nativesweep.parse(log.answered, max(1, len(log.keys)), 1)
        return _assemble(log, got.plan, got.main, got.peak_codes,
                         [log.first_time()], got.peak_kb, got.totals,
                         got.committed, None)
    times = sample_times(log, points) if series else \
        [log.first_time()] if len(log) else []
    program = nativesweep.program_path()
    if program is None:
        raise nativesweep.SweepError(
            "allocsites-sweep is not built: run make (it sweeps the "
            "events for peak, leaked and phases)")
    try:
        got = nativesweep.run(log, times, program, min_size=min_size,
                              series=series, sampled=mode == "sampled")
    except OSError as e:   # the log could not be written out for it
        raise nativesweep.SweepError(
            "the liveness sweep: cannot write the event log: %s"
            % (e.strerror or e)) from None
    return _assemble(log, got.plan, got.main, got.peak_codes, times,
                     got.peak_kb, got.totals, got.committed,
                     got.series if series else None)


def _nonzero(counters):
    """(code, value) of the counters not zero (a dict, or a list by code)."""
    if isinstance(counters, list):
        return ((i, v) for i, v in enumerate(counters) if v)
    return ((i, v) for i, v in counters.items() if v)


def _assemble(log, plan, main, peak_codes, times, peak_kb, totals,
              committed, series):
    """The Liveness from a sweep's counters (liveness._Sweep's or
    allocsites-sweep's, nativesweep.Main): peak_codes {code: (bytes,
    count)} and peak_kb {key index: bytes} at the peak, the timeline's
    columns at the sample times."""
    sampled = plan.sampled
    number = float if sampled else int
    nkeys = plan.nkeys
    phase_of = [None] + plan.phase_ids
    keys = log.keys
    entries = {}
    by_phase_key = {}
    counted = main.es if sampled else main.ec
    for code, _ in _nonzero(counted):
        slot, k = divmod(code, nkeys)
        phase, key = phase_of[slot], keys[k]
        if sampled:
            entry = SampledEntry(main.ec[code], main.eb[code],
                                 main.ew2[code], main.es[code])
        else:
            entry = ExactEntry(main.ec[code], main.eb[code])
        entries.setdefault(phase, {})[key] = entry
        peak_b, peak_c = peak_codes.get(code, (0, 0))
        by_phase_key[(phase, key)] = KeyLive(
            number(peak_b), number(peak_c), number(main.leaked_b.get(code, 0)),
            number(main.leaked_c.get(code, 0)),
            None if sampled else main.temp[code])

    frees = plan.frees_recorded
    phases = {}
    for slot, phase in enumerate(phase_of):
        if phase is None:
            continue
        mine = entries.get(phase, {}).values()
        phases[phase] = PhaseStats(
            main.runs[slot], sum(e.count for e in mine),
            sum(e.bytes for e in mine),
            number(main.left[slot]) if frees else None,
            number(main.phase_peak[slot]) if frees else None,
            number(main.growth[slot]) if frees else None,
            number(main.cgrowth[slot]) if plan.has_commit else None)

    commit = plan.has_commit
    return Liveness(
        by_phase_key=by_phase_key,
        entries=entries,
        peak_bytes=number(main.peak),
        peak_count=number(sum(c for _, c in peak_codes.values())),
        peak_time=main.peak_t,
        leaked_bytes=number(sum(main.leaked_b.values())),
        leaked_count=number(sum(main.leaked_c.values())),
        temporary=None if sampled else sum(v for _, v in _nonzero(main.temp)),
        unmatched_frees=tuple(main.unmatched),
        reused=main.reused,
        committed_peak=main.committed_peak if commit else None,
        committed_at_peak=main.committed_at_peak if commit else None,
        committed_end=main.committed_end if commit else None,
        phases=phases,
        unmatched_phase_ends=main.unmatched_phase_ends,
        open_phases=[(pid, tid, phase) for _, pid, tid, phase
                     in sorted(main.open_phases)],
        timeline=_timeline(log, plan, times, main, peak_kb, totals,
                           committed, series),
        frees_recorded=frees,
    )
