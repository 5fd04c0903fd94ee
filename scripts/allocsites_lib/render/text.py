"""How the outputs word a report's figures, locations and verdict.

How the outputs word a report's figures: bytes for people (human_bytes),
file:line locations and flame graph labels, shares, the loss and the
completeness verdict."""

import math
import os

from ..analyze import completeness


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


def peak_error(live, sampling):
    """One standard error of a sampled peak, sqrt(R x peak) bytes
    (docs/sampling.md); None in exact mode or without a peak."""
    if not (sampling and sampling.get("sample_bytes")) or \
            live.peak_bytes <= 0:
        return None
    return math.sqrt(sampling["sample_bytes"] * live.peak_bytes)
