"""The finished report: folded tallies plus what is known about the run.

Renderers (table, jsonout, collapsed, csvout, svg) read a Report and nothing
else, so each can be tested with a Report built by hand.
"""

import collections
import os

from . import completeness

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
    "verdict",     # completeness.Verdict, or None: derived from lost
    "pprof",       # --pprof: the encoded profile (bytes), else None
    "liveness",    # LiveSummary, or None when no frees were recorded
    "timeline",    # --timeline: the SVG text, else None
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


def lost_words(lost, reason):
    """'157844', or 'unknown (REASON)' when the loss could not be read: the
    one wording of the loss, in the record summary and in every output."""
    return "unknown (%s)" % reason if lost is None else str(lost)


def lost_text(report):
    return lost_words(report.lost, report.lost_reason)


def verdict(report):
    """The report's completeness.Verdict (one from perf's loss count alone
    for a Report made without the end-to-end check)."""
    if report.verdict is not None:
        return report.verdict
    return completeness.verdict({}, {}, report.lost, report.lost_reason,
                                malformed=report.malformed)


def verdict_line(report, warning="WARNING: "):
    """The table's last line (and the SVG subtitle's end)."""
    v = verdict(report)
    if v.complete:
        return "complete: yes (checked: %s)" % v.reason
    if v.complete is False:
        return "%sthis profile is incomplete: %s" % (warning, v.reason)
    return "complete: not checked (%s)" % v.reason


def human_bytes(n):
    """1536 -> '1.5 KiB'. Exact below 1 KiB (a float estimate is rounded).
    The one byte formatter of the table, the SVG and the warnings."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%d %s" % (round(n), unit)) if unit == "B" else \
                ("%.1f %s" % (n, unit))
        n /= 1024.0
    return "%d B" % n  # not reached


def location(frame, relative_to=None):
    """'path/file.c:12' (relative to relative_to when below it)."""
    path = frame.file or "?"
    if relative_to and path.startswith(relative_to.rstrip("/") + "/"):
        path = os.path.relpath(path, relative_to)
    return "%s:%d" % (path, frame.line) if frame.line else path


def frame_label(frame):
    """One frame in folded stacks and flame graphs: 'func (file.c:12)'.

    Basename only: full paths make flame graph boxes unreadable; the JSON
    and CSV reports carry the full path. ';' would split a folded frame."""
    text = frame.function
    if frame.line:
        text = "%s (%s:%d)" % (text, os.path.basename(frame.file), frame.line)
    if frame.inlined:
        text += " [inlined]"
    return text.replace(";", ":")


def share(part, whole):
    return (100.0 * part / whole) if whole else 0.0
