"""How the outputs word a Report's loss, verdict and a sampled peak's error.

Figures and frames in words are words.py's."""

import math

from ..words import lost_words


def lost_text(report):
    return lost_words(report.lost, report.lost_reason)


def verdict(report):
    """The report's completeness verdict (analyze/completeness.py made it;
    every Report carries one)."""
    return report.verdict


def verdict_line(report, warning="WARNING: "):
    """The table's last line (and the SVG subtitle's end)."""
    v = verdict(report)
    if v.complete:
        return "complete: yes (checked: %s)" % v.reason
    if v.complete is False:
        return "%sthis profile is incomplete: %s" % (warning, v.reason)
    return "complete: not checked (%s)" % v.reason


def peak_error(live, sampling):
    """One standard error of a sampled peak, sqrt(R x peak) bytes
    (docs/sampling.md); None in exact mode or without a peak."""
    if not (sampling and sampling.get("sample_bytes")) or \
            live.peak_bytes <= 0:
        return None
    return math.sqrt(sampling["sample_bytes"] * live.peak_bytes)
