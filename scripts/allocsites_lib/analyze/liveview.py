"""The liveness sweep's figures as the outputs show them.

From the liveness sweep to what the outputs show: the per-key figures
fold() sums per site, the totals (report.LiveSummary), the phase table
(report.PhaseRow), the --phase selection and the memory-over-time chart.

liveness.py computes; this module only picks and names. Phases are named
by the RT_PHASE_NAME records of the recorded binaries (elf.phase_names),
else "phase N".
"""

import collections

from . import liveness
from ..read.elf import phase_names as elf_phase_names
from .report import LiveSummary, PhaseRow
from ..words import human_bytes


def frees_recorded(tally):
    """Whether the recording can say who holds the memory: frees (or the
    frees of sampled allocations, or bulk releases) were recorded."""
    return tally.log is not None and any(
        tally.events.get(k) for k in ("free", "sample_free", "release"))


def phase_names(tally, symbolizer):
    """{phase id: name} from the .rt_phases of every DSO in the stacks."""
    names = {}
    for dso in sorted(tally.dsos()):
        image = symbolizer.elf(dso)
        if image is not None:
            names.update(elf_phase_names(image))
    return names


def phase_label(phase, names):
    if phase is None:
        return "(no phase)"
    return names.get(phase, "phase %d" % phase)


def resolve_phase(wanted, names, present):
    """--phase NAME -> (phase id, None) or (None, warning). NAME is a
    phase's name or its number; present: the ids the recording has."""
    by_name = {v: k for k, v in names.items()}
    if wanted in by_name:
        return by_name[wanted], None
    if wanted.isdigit() and int(wanted) in present:
        return int(wanted), None
    shown = ", ".join(sorted(phase_label(p, names) for p in present
                             if p is not None)) or "none"
    return None, ("--phase %s: no such phase in this recording; its phases: "
                  "%s" % (wanted, shown))


def selection(sweep, phase="all"):
    """(entries, live) for fold: the allocations of one phase (phase: an
    id, or None for those outside every phase) and their liveness, or
    everything (phase "all": entries None, fold takes the tally's)."""
    live = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for (ph, key), kl in sweep.by_phase_key.items():
        if phase != "all" and ph != phase:
            continue
        acc = live[key]
        acc[0] += kl.peak_bytes
        acc[1] += kl.peak_count
        acc[2] += kl.leaked_bytes
        acc[3] += kl.leaked_count
        acc[4] += kl.temporary or 0
    live = {key: liveness.KeyLive(*v) for key, v in live.items()}
    if phase == "all":
        return None, live
    return dict(sweep.entries.get(phase, {})), live


def phase_rows(sweep, names):
    """[PhaseRow], most bytes first."""
    rows = []
    for ph, st in sweep.phases.items():
        rows.append(PhaseRow(ph, phase_label(ph, names), st.runs, st.count,
                             st.bytes, st.left_live, st.peak, st.growth,
                             st.committed_growth))
    rows.sort(key=lambda r: (-r.bytes, r.name))
    return rows


def time_origin(sweep):
    """The one time base of every time the report shows: the table's and
    the JSON's peak_time, the timeline's axis, points, peak and phase
    bands are all nanoseconds since this moment, the first recorded
    event (the timeline's first point), in perf's clock (which is not
    the wall clock: since boot). Not the program's start nor the
    recording's: neither is an event of the recording."""
    times = sweep.timeline.times
    return times[0] if times else 0


def since_origin(sweep, t):
    """t (perf's clock) as time_origin's nanoseconds; None stays None."""
    return None if t is None else t - time_origin(sweep)


def summary(sweep, rows, phase_name, untracked, mode):
    committed = None
    if sweep.committed_peak is not None:
        committed = (sweep.committed_peak, sweep.committed_at_peak,
                     sweep.committed_end)
    return LiveSummary(
        peak_bytes=sweep.peak_bytes, peak_count=sweep.peak_count,
        peak_time=since_origin(sweep, sweep.peak_time),
        leaked_bytes=sweep.leaked_bytes, leaked_count=sweep.leaked_count,
        temporary=None if mode == "sampled" else sweep.temporary,
        unmatched_frees=tuple(sweep.unmatched_frees), untracked=untracked,
        committed=committed, phases=rows, phase=phase_name,
        unmatched_phase_ends=sweep.unmatched_phase_ends,
        open_phases=len(sweep.open_phases))


def warnings(sweep, untracked, names, runs_known=True):
    """runs_known False: the phase runs were seen at the samples
    (rt:phase_track), so open and unmatched runs say nothing."""
    out = []
    count, nbytes = sweep.unmatched_frees
    if count:
        out.append("%d frees (%s) of pointers never seen allocated (before "
                   "the recording began, or by code without probes): not "
                   "matched to anything" % (count, human_bytes(nbytes)))
    if sweep.reused:
        out.append("%d allocations returned a pointer that was still live "
                   "(a free without a probe?): the older block counts as "
                   "freed" % sweep.reused)
    if untracked:
        out.append("%d sampled allocations could not be tracked (the "
                   "header's pointer table was full): in-use, peak and "
                   "leaked estimates are too high by at most their weight"
                   % untracked)
    if not runs_known:
        return out
    for pid, tid, ph in sweep.open_phases:
        out.append("phase %s of thread %d (process %d) was still open at "
                   "exit: closed there" % (phase_label(ph, names), tid, pid))
    if sweep.unmatched_phase_ends:
        out.append("%d RT_PHASE_END without a matching RT_PHASE_BEGIN in "
                   "its thread: ignored" % sweep.unmatched_phase_ends)
    return out


