"""Brendan Gregg's folded stacks: 'root;caller;site N' per line.

The text format flamegraph.pl, speedscope and inferno read. Frames run
from the outermost caller to the call site; N is the --weight: bytes,
count, peak (bytes live at the peak), leaked (bytes live at the end) or
temporary (allocations freed by the very next event)."""

from . import ranking
from ..words import frame_label


def folded_lines(report, weight="bytes"):
    """ValueError (one line) when the report does not know the weight
    (ranking.py): an empty or all-zero file would read as 'nothing'."""
    value = ranking.stack_value(report, weight)
    out = []
    for stack in report.profile.stacks:
        n = value(stack)
        if not n:   # nothing to draw: flamegraph.pl would drop it too
            continue
        labels = [frame_label(f) for f in reversed(stack.frames)]
        out.append("%s %s" % (";".join(labels), number(n)))
    out.sort()
    return out


def svg_stacks(report, weight="bytes"):
    """For flamegraph.render_svg: (frames root first, count, bytes), and for the
    liveness weights a fourth item, the stack's peak, leaked or temporary
    figure, so each box still shows its bytes and count beside it.
    ValueError when the report does not know the weight."""
    value = ranking.stack_value(report, weight)
    if weight in ("bytes", "count"):
        return [([frame_label(f) for f in reversed(s.frames)], s.count,
                 s.bytes) for s in report.profile.stacks]
    return [([frame_label(f) for f in reversed(s.frames)], s.count, s.bytes,
             value(s) or 0) for s in report.profile.stacks]


def number(value):
    return str(int(value)) if float(value).is_integer() else "%.3f" % value


def render_folded(report, weight="bytes"):
    return "".join(line + "\n" for line in folded_lines(report, weight))
