"""The Report: what every renderer reads and --save-profile writes.

A Report is fold.py's Profile (sites, stacks, totals) plus all else
known of the run: events, loss, verdict, liveness, warnings, the extras'
data. Renderers (render/: table, jsonout, folded, csvout, flamegraph,
timeline, pprofout) read a Report and nothing else, so each can be
tested with a Report built by hand; words.py and render/text.py word its
figures. What pprof and the timeline need is in it as plain data, made
here in analyze/ (pprofdata.py, timeline_series.py).
"""

import collections


Report = collections.namedtuple("Report", [
    "mode",        # "exact" or "sampled" (counts and bytes are estimates)
    "profile",     # fold.Profile: sites, stacks, totals
    "events",      # {"alloc": n, "free": n, ...} events perf delivered
    "malformed",   # rt events whose arguments could not be read
    "lost",        # samples lost in recording, or None if unknown
    "lost_reason", # why lost is unknown, or None
    "frees",       # (count, bytes) of free events
    "filters",     # {"tag": [...], "min_size": n, ...} as given
    "warnings",    # [str]
    "sampling",    # None (exact), or {"samples": n, "sample_bytes": R}
    "duplicates",  # sample records perf wrote twice, dropped
    "verdict",     # completeness.Verdict
    "pprof",       # --pprof: the profile's samples, locations, mappings
                   # (pprofdata.profile's plain data), else None
    "liveness",    # LiveSummary, or None when no frees were recorded
    "timeline",    # --timeline, with frees or phases: the chart's series
                   # (timeline_series.series's plain data), else None
    "duplicates_by_kind",  # {"alloc": n, "free": n, ...} of duplicates
    "unwind",      # "dwarf", "fp" or None: how the stacks were taken
    "bad_options", # option values that named nothing (--tag, --phase):
                   # the outputs are written, the exit status is 2
], defaults=(None, 0, None, None, None, None, None, None, ()))

# Who holds the memory (liveness.py computes it; docs/output-formats.md
# describes it). Estimates (floats) in sampled mode.
LiveSummary = collections.namedtuple("LiveSummary", [
    "peak_bytes",       # total live bytes at the peak
    "peak_count",       # allocations live at the peak
    "peak_time",        # ns from the first event to the peak
    "leaked_bytes",     # live at the end (exit, or end of recording)
    "leaked_count",
    "temporary",        # allocations freed by the very next event; None
                        # in sampled mode
    "unmatched_frees",  # (count, bytes): frees of pointers never seen
    "untracked",        # sampled allocations the header could not track
    "committed",        # None, or (peak, at the peak, at the end) bytes
    "phases",           # [PhaseRow], [] when the program marks none
    "phase",            # the --phase the outputs are restricted to, or None
    "unmatched_phase_ends",  # int
    "open_phases",      # int: phases still open at exit, closed there
    # None: the figures are the whole program's; else what the selection
    # is ("phase parse", "tag ast"): peak, leaked and temporary are then
    # the selection's own allocations (live at the whole program's peak,
    # live at the end), the rest stays the whole program's
    "scope",
], defaults=(None,))
# One phase (RT_PHASE_BEGIN/END). left_live, peak, growth: None without
# frees; committed_growth: None without commit events.
PhaseRow = collections.namedtuple(
    "PhaseRow", "id name runs count bytes left_live peak growth "
                "committed_growth")
