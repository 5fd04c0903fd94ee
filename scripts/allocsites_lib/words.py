"""Figures and frames in words: bytes for people, locations, labels.

The wording every stage shares (the record's summary, the analysis's
warnings, every output): a leaf module, so that no stage imports another
stage for it. render/text.py words a report's verdict on top of these.
"""

import os


def lost_words(lost, reason):
    """'157844', or 'unknown (REASON)' when the loss could not be read: the
    one wording of the loss, in the record summary and in every output."""
    return "unknown (%s)" % reason if lost is None else str(lost)


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
