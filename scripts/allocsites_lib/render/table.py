"""The stdout table: top sites, totals, who holds the memory, phases.

The stdout table: top sites by bytes (or --sort), a totals line, who
holds the memory when frees were recorded, the phases, events and loss."""

import os
import re

from . import ranking
from ..words import human_bytes, location, share
from .text import lost_text, peak_error, verdict_line

_CTRL = re.compile("[\x00-\x1f\x7f]")


def render_table(report, top=20, cwd=None, sort="bytes"):
    """sort: bytes, count, peak, leaked or temporary (ValueError, one
    line, when the report does not know that figure)."""
    profile = report.profile
    cwd = cwd if cwd is not None else os.getcwd()
    sites = ranking.ranked(report, sort)
    # Sampled estimates are rounded and marked with "~".
    est = "~" if report.sampling else ""
    columns = _site_columns(report, est)
    header = tuple(name for name, _ in columns) + ("site", "tags")
    rows = []
    for rank, site in enumerate(sites[:top], 1):
        tags = ",".join("%s:%s%s" % (t, est, human_bytes(b)) for t, b in sorted(
            site.tag_bytes.items(), key=lambda kv: (-kv[1], kv[0])))
        rows.append(tuple(fn(rank, site) for _, fn in columns) + (
            "%s %s" % (site.frame.function, location(site.frame, cwd)),
            tags))
    n = len(columns)
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(n)]
    lines = []

    def emit(cols):
        left = "  ".join(c.rjust(widths[i]) for i, c in enumerate(cols[:n]))
        lines.append(("%s  %s  %s" % (left, cols[n], cols[n + 1])).rstrip())

    emit(header)
    for row in rows:
        emit(row)
    shown = len(rows)
    more = len(profile.sites) - shown
    lines.append("total: %s%.0f bytes (%s) in %s%.0f allocations at %d site%s%s%s"
                 % (est, profile.bytes, human_bytes(profile.bytes), est,
                    profile.count, len(profile.sites),
                    "" if len(profile.sites) == 1 else "s",
                    (", %d not shown" % more) if more > 0 else "",
                    (", ranked by %s" % RANKED_BY[sort]) if sort != "bytes"
                    else ""))
    if ranking.frees_known(report):
        lines.extend(_live_lines(report.liveness, est, report.sampling))
    if report.liveness is not None and report.liveness.phases:
        lines.extend(_phase_lines(report.liveness, est))
    ev = report.events
    # an arena that ends its allocations by RT_RELEASE alone has no free
    # events, yet its peak and leaked figures are known from the releases
    frees = ("%d free" % ev["free"]) if ev.get("free") else \
        ("%d release, no frees" % ev["release"]) if ev.get("release") else \
        "frees not recorded"
    if report.sampling:
        lines.append("estimates from %d samples, one per ~%s allocated "
                     "(docs/sampling.md)" % (report.sampling["samples"],
                                             human_bytes(report.sampling[
                                                 "sample_bytes"])))
        recorded = "%d sample" % ev.get("sample", 0)
    else:
        recorded = "%d alloc" % ev.get("alloc", 0)
    lines.append("events: %s, %s; lost: %s%s" % (
        recorded, frees, lost_text(report),
        (", malformed: %d" % report.malformed) if report.malformed else ""))
    lines.append(verdict_line(report))
    return "\n".join(lines) + "\n"


# The total line's words for a --sort other than bytes.
RANKED_BY = {"count": "allocation count", "peak": "bytes live at the peak",
             "leaked": "bytes leaked", "temporary": "temporary allocations"}


def _site_columns(report, est):
    """[(header, fn(rank, site) -> cell)] of the right-aligned columns.
    With liveness, avg gives way to peak, leaked and temporary, so a row
    stays within about 120 columns (the figures are human-sized bytes)."""
    profile = report.profile
    columns = [
        ("#", lambda rank, s: str(rank)),
        (est + "bytes", lambda rank, s: "%s%.0f" % (est, s.bytes)),
        ("share", lambda rank, s: "%.1f%%" % share(s.bytes, profile.bytes)),
        (est + "count", lambda rank, s: "%s%.0f" % (est, s.count)),
    ]
    if not ranking.frees_known(report):
        columns.append(("avg", lambda rank, s: "%.1f" % (
            s.bytes / s.count if s.count else 0)))
        return columns
    columns.append((est + "peak", lambda rank, s: _bytes(s.peak_bytes, est)))
    columns.append((est + "leaked",
                    lambda rank, s: _bytes(s.leaked_bytes, est)))
    if ranking.temporary_known(report):
        columns.append(("temporary", lambda rank, s: _count(s.temporary)))
    return columns


def _bytes(value, est="", sign=False):
    """'1.5 KiB' ('~1.5 KiB' estimated, '+1.5 KiB' with sign), '-' when
    unknown."""
    if value is None:
        return "-"
    if not sign:
        return est + human_bytes(value)
    return "%s%s%s" % ("+" if value > 0 else "-" if value < 0 else "", est,
                       human_bytes(abs(value)))


def _count(value, est=""):
    return "-" if value is None else "%s%.0f" % (est, value)


# The sampled peak's measured overshoot, in standard errors of the total at
# the peak (bench/sampled_peak.py: sawtooth at R = 512 KiB, docs/sampling.md)
PEAK_BIAS_SE = 3


def _live_lines(live, est, sampling=None):
    """The totals of who holds the memory, after the 'total:' line."""
    # peak_time is None when nothing was ever live (no time to give)
    # with --phase or --tag: the selection's own figures, said as such;
    # unmatched frees and committed bytes stay the whole program's
    of = " (%s's allocations, at the whole program's peak)" % live.scope \
        if live.scope else ""
    lines = ["peak%s: %s%.0f bytes (%s) live in %s%.0f allocations%s" % (
        of, est, live.peak_bytes, human_bytes(live.peak_bytes), est,
        live.peak_count, ", at " + ranking.time_text(live.peak_time)
        if live.peak_time is not None else "")]
    error = peak_error(live, sampling)
    if error is not None:
        # The highest of many noisy moments overshoots where the program
        # comes back near its high often: bench/sampled_peak.py measured
        # up to PEAK_BIAS_SE standard errors (docs/sampling.md).
        lines[0] += ("; sampled: +-%s at a moment, and measured up to %sx "
                     "that too high where a program returns near its high "
                     "often (docs/sampling.md)" % (human_bytes(error),
                                                   PEAK_BIAS_SE))
    parts = ["leaked%s: %s%.0f bytes (%s) in %s%.0f allocations" % (
        " (%s's)" % live.scope if live.scope else "", est,
        live.leaked_bytes, human_bytes(live.leaked_bytes), est,
        live.leaked_count)]
    if live.temporary is not None:
        parts.append("temporary: %d allocations" % live.temporary)
    count, nbytes = live.unmatched_frees
    parts.append("unmatched frees%s: %d (%d bytes)" % (
        " (whole program)" if live.scope else "", count, nbytes))
    lines.append("; ".join(parts))
    if live.committed is not None:
        highest, at_peak, end = live.committed
        lines.append("committed%s: %s at the peak, %s at most, %s at the "
                     "end" % (" (whole program)" if live.scope else "",
                              human_bytes(at_peak), human_bytes(highest),
                              human_bytes(end)))
    if live.untracked:
        lines.append("untracked: %d sampled allocations the header could not "
                     "track (table full): live estimates may be too high by "
                     "their weight" % live.untracked)
    if live.phase is not None:
        lines.append("phase: %s (only the allocations made in it)"
                     % _CTRL.sub("?", str(live.phase)))
    return lines


PHASE_HEADER = ("runs", "count", "bytes", "left live", "peak", "growth",
                "committed")


def _phase_lines(live, est):
    """One row per phase (nested phases are rows of their own), in the
    report's order; a column no row knows is left out."""
    rows = []
    for p in live.phases:
        name = p.name if p.name is not None else p.id
        rows.append((_CTRL.sub("?", str(name)), _count(p.runs),
                     _count(p.count, est), _count(p.bytes, est),
                     _bytes(p.left_live, est), _bytes(p.peak, est),
                     _bytes(p.growth, est, sign=True),
                     _bytes(p.committed_growth, sign=True)))
    header = ("phase",) + tuple(
        (est if name not in ("runs", "committed") else "") + name
        for name in PHASE_HEADER)
    keep = [0, 1, 2, 3] + [i for i in range(4, len(header))
                           if any(r[i] != "-" for r in rows)]
    table = [tuple(r[i] for i in keep) for r in [header] + rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(keep))]
    lines = []
    for r in table:
        lines.append("  ".join([r[0].ljust(widths[0])] + [
            c.rjust(widths[i]) for i, c in enumerate(r) if i]).rstrip())
    notes = []
    if live.scope and "tag" in live.scope:
        notes.append("count and bytes are %s's, the rest the whole "
                     "program's" % live.scope.split(", ")[-1])
    if live.unmatched_phase_ends:
        notes.append("%d ends without a begin" % live.unmatched_phase_ends)
    if live.open_phases:
        notes.append("%d still open at exit, closed there" % live.open_phases)
    if notes:
        lines.append("phases: " + "; ".join(notes))
    return lines
