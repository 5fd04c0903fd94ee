"""The --timeline chart's series from the sweep: sites, bands, peak.

The --timeline chart's data from the liveness sweep, as plain data (the
Report's timeline): the sites to stack (by their own highest point), the
phase bands, the peak; render/timeline.py draws it."""

import bisect
import collections

from ..read import eventlog
from .liveview import phase_label, since_origin, time_origin


TIMELINE_SITES = 8   # sites named on the chart; the rest are "other sites"


# Runs of one phase back to back, closer than this share of the span
# with no other phase beginning or ending between them, are one band.
BAND_GAP = 0.005


def phase_bands(log, names, start, span):
    """[(name, start, end)] of every phase run of every thread, nested
    ones too (the chart gives overlapping bands rows of their own),
    relative to start: one band per run. Only runs of one phase back to
    back (closer than BAND_GAP of the span, and no other phase's run
    beginning or ending between them: a phase run thousands of times in
    a row) are one band; a run of another phase between two runs keeps
    them apart (ten runs of compile with output and delete after each
    are ten bands, not one over all three)."""
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
    # every phase's run boundaries, to find another phase between two runs
    edges = collections.defaultdict(list)
    for ph, t0, t1 in runs:
        edges[ph].extend((t0, t1))
    every = sorted(t for ts in edges.values() for t in ts)
    for ts in edges.values():
        ts.sort()
    runs.sort(key=lambda r: (r[0], r[1]))
    bands = []
    gap = BAND_GAP * span
    for ph, t0, t1 in runs:
        last = bands[-1] if bands else None
        if last is not None and last[0] == ph and (
                t0 <= last[2] or (t0 - last[2] <= gap and
                                  _count(every, last[2], t0) ==
                                  _count(edges[ph], last[2], t0))):
            last[2] = max(last[2], t1)
        else:
            bands.append([ph, t0, t1])
    return [(phase_label(ph, names), t0 - start, t1 - start)
            for ph, t0, t1 in sorted(bands, key=lambda b: b[1])]


def _count(times, lo, hi):
    """How many values of the sorted list times are in [lo, hi]."""
    return bisect.bisect_right(times, hi) - bisect.bisect_left(times, lo)


def series(sweep, log, profile, names, top=TIMELINE_SITES, scope=None):
    """The --timeline chart's data (render/timeline.py's render takes its
    values as arguments): {"times", "series": [[label, values]], "other",
    "total", "peak": [time, bytes], "committed", "phases": [[name, start,
    end]], "scope"}. The top sites (by their own highest point, then by
    bytes live at the peak) are series of their own, the rest "other
    sites": a large user released before the peak is drawn as itself,
    not as grey "other sites" (issue 23, item 4). scope: --tag's or
    --phase's selection (LiveSummary.scope), said in the legend."""
    tl = sweep.timeline
    if not tl.times:
        return {"times": [], "series": [], "other": None, "total": [],
                "peak": [0, 0], "committed": None, "phases": [],
                "scope": None}
    start = time_origin(sweep)   # the table's base too (liveview.summary)
    times = [t - start for t in tl.times]
    site_of = profile.site_of or {}
    per_site = collections.defaultdict(lambda: [0] * len(times))
    for key, values in tl.by_key.items():
        site = site_of.get(key)
        acc = per_site[site]
        for i, v in enumerate(values):
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
    rest = [k for k in per_site if k not in shown]
    other = None
    if rest:
        other = [sum(per_site[k][i] for k in rest) for i in range(len(times))]
    span = times[-1] if times else 0
    bands = phase_bands(log, names, start, span) if log is not None else []
    peak_time = since_origin(sweep, sweep.peak_time)
    if peak_time is None:
        peak_time = times[peak_i]
    return {"times": times,
            "series": [[labels.get(k, str(k)), per_site[k]] for k in shown],
            "other": other, "total": list(tl.total),
            "peak": [peak_time, sweep.peak_bytes],
            "committed": list(tl.committed) if tl.committed else None,
            "phases": [list(b) for b in bands], "scope": scope}
