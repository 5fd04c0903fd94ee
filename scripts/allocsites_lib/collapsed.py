"""Brendan Gregg's folded stacks: 'root;caller;site N' per line.

The text format flamegraph.pl, speedscope and inferno read. Frames run
from the outermost caller to the call site; N is bytes or count."""

from .report import frame_label


def folded_lines(report, weight="bytes"):
    out = []
    for stack in report.profile.stacks:
        value = stack.bytes if weight == "bytes" else stack.count
        labels = [frame_label(f) for f in reversed(stack.frames)]
        out.append("%s %s" % (";".join(labels), number(value)))
    out.sort()
    return out


def svg_stacks(report):
    """(frames root first, count, bytes) for svg.render_svg."""
    return [([frame_label(f) for f in reversed(s.frames)], s.count, s.bytes)
            for s in report.profile.stacks]


def number(value):
    return str(int(value)) if float(value).is_integer() else "%.3f" % value


def render_folded(report, weight="bytes"):
    return "".join(line + "\n" for line in folded_lines(report, weight))
