"""From the liveness sweep to what the outputs show: the per-key figures
fold() sums per site, the totals (report.LiveSummary), the phase table
(report.PhaseRow), the --phase selection and the memory-over-time chart.

liveness.py computes; this module only picks and names. Phases are named
by the RT_PHASE_NAME records of the recorded binaries (elf.phase_names),
else "phase N".
"""

import collections

from ..read import eventlog
from . import liveness
from ..render import timeline
from ..read.elf import phase_names as elf_phase_names
from .report import LiveSummary, PhaseRow, human_bytes

TIMELINE_SITES = 8   # sites named on the chart; the rest are "other sites"
# Phase runs closer than this share of the run's span are one band.
BAND_GAP = 0.005


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


def summary(sweep, rows, phase_name, untracked, mode):
    committed = None
    if sweep.committed_peak is not None:
        committed = (sweep.committed_peak, sweep.committed_at_peak,
                     sweep.committed_end)
    start = sweep.timeline.times[0] if sweep.timeline.times else 0
    return LiveSummary(
        peak_bytes=sweep.peak_bytes, peak_count=sweep.peak_count,
        peak_time=(sweep.peak_time - start) if sweep.peak_time is not None
        else None,
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


def phase_bands(log, names, start, span):
    """[(name, start, end)] of every phase run of every thread, nested
    ones too (the chart gives overlapping bands rows of their own),
    relative to start; runs of one phase closer than BAND_GAP of the span
    are merged, so a phase run thousands of times stays one band."""
    open_runs = {}   # tid -> [(id, start)]
    runs = []
    for kinds, times, _pids, tids, ids, _b, _s, _k in log.chunks():
        for i in range(len(kinds)):
            k = kinds[i]
            if k == eventlog.PHASE_BEGIN:
                open_runs.setdefault(tids[i], []).append((ids[i], times[i]))
            elif k == eventlog.PHASE_END:
                stack = open_runs.get(tids[i])
                ids_open = [p for p, _ in stack] if stack else []
                if ids[i] in ids_open:
                    while stack:
                        ph, t = stack.pop()
                        runs.append((ph, t, times[i]))
                        if ph == ids[i]:
                            break
    end = start + span
    for stack in open_runs.values():
        runs.extend((ph, t, end) for ph, t in stack)
    runs.sort(key=lambda r: (r[0], r[1]))
    bands = []
    gap = BAND_GAP * span
    for ph, t0, t1 in runs:
        if bands and bands[-1][0] == ph and t0 - bands[-1][2] <= gap:
            bands[-1][2] = max(bands[-1][2], t1)
        else:
            bands.append([ph, t0, t1])
    return [(phase_label(ph, names), t0 - start, t1 - start)
            for ph, t0, t1 in sorted(bands, key=lambda b: b[1])]


def render_timeline(sweep, log, profile, names, title, subtitle,
                    top=TIMELINE_SITES):
    """The --timeline SVG: the top sites (by their own highest point, then
    by bytes live at the peak) stacked, the rest as "other sites": a
    large user released before the peak is drawn as itself, not as grey
    "other sites" (issue 23, item 4)."""
    tl = sweep.timeline
    if not tl.times:
        return timeline.render(title, subtitle, [], [], None, [], (0, 0))
    start = tl.times[0]
    times = [t - start for t in tl.times]
    site_of = profile.site_of or {}
    per_site = collections.defaultdict(lambda: [0] * len(times))
    for key, series in tl.by_key.items():
        site = site_of.get(key)
        acc = per_site[site]
        for i, v in enumerate(series):
            acc[i] += v
    labels = {}
    for s in profile.sites:
        k = (s.frame.function, s.frame.file, s.frame.line)
        labels[k] = "%s %s:%d" % (s.frame.function, s.frame.file.rsplit(
            "/", 1)[-1], s.frame.line) if s.frame.line else s.frame.function
    peak_i = max(range(len(times)), key=lambda i: (tl.total[i], -i))
    ranked = sorted((k for k in per_site if k is not None),
                    key=lambda k: (-max(per_site[k]), -per_site[k][peak_i],
                                   labels.get(k, str(k))))
    shown = ranked[:top]
    series = [(labels.get(k, str(k)), per_site[k]) for k in shown]
    rest = [k for k in per_site if k not in shown]
    other = None
    if rest:
        other = [sum(per_site[k][i] for k in rest) for i in range(len(times))]
    span = times[-1] if times else 0
    bands = phase_bands(log, names, start, span) if log is not None else []
    peak_time = (sweep.peak_time - start) if sweep.peak_time is not None \
        else times[peak_i]
    return timeline.render(title, subtitle, times, series, other,
                           list(tl.total), (peak_time, sweep.peak_bytes),
                           list(tl.committed) if tl.committed else None,
                           bands)
