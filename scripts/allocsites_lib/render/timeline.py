"""The --timeline SVG chart of live bytes over time.

Memory-over-time chart: a self-contained SVG stacked-area chart of live
bytes (stdlib only; same conventions as flamegraph.py's).

* Input (contract section 6): ``times`` in ns since the first event,
  ascending; ``series`` the top sites ``(label, [bytes per time])``, largest
  first; ``other`` the rest grouped ("other sites") or None; ``total`` the
  live bytes; ``peak`` ``(time_ns, bytes)``; ``committed`` bytes or None;
  ``phases`` ``(name, start_ns, end_ns)``.  Negative, non-finite or
  mis-sized input, and unsorted times, raise ValueError.
* Layout, top to bottom: title, subtitle, the peak label, one row per level
  of overlapping phase labels, the plot (PLOT_H px), the time axis, the
  legend (one row per entry).  The time axis spans the points, the peak
  and the phases (a single moment: 1 ms from it).  Coordinates are
  rounded to 4 decimals.
* Plot: the series stacked bottom-up in input order (largest at the
  bottom), "other sites" on top, each a ``<polygon class="area">`` through
  the points, linearly joined; a single point is drawn flat across the
  plot.  Phases are translucent full-height bands behind the areas.  The
  committed bytes are a dashed ``<polyline id="committed">`` above them;
  the peak a vertical line with a dot at its value and a label.  Phase
  labels go where their estimated width (label_width) fits: inside the
  band, cut to it, or beside it; one that would overlap a label already
  in its row is left out (phase_labels), the widest bands first.
* Hover: one transparent ``<rect class="c">`` column per point (from midway
  to the previous point to midway to the next) whose ``<title>`` lists the
  time, then one "label: bytes" line per legend row, so it works with
  scripting off (a tooltip).  With scripting on, the inline script copies
  those values into the legend (which otherwise shows the peak) and moves
  a cursor line to the point.
* Bytes are formatted by report.human_bytes ("~" for float estimates),
  times in ms, or in s for runs of a second or more; the peak's time (its
  label, the legend's head) as the table prints it (ranking.time_text:
  ms below a second), so that both say the same.
"""

import colorsys
import math

from ..words import human_bytes
from .flamegraph import report_subtitle   # the chart's subtitle too
from .ranking import time_text   # the peak's time as the table says it
from .svg import (CTRL as _CTRL, FONT_SIZE, FONT_W, attr as _attr,
                  escape, fit as _fit, estimate_bytes as _human_bytes,
                  num as _num)

WIDTH = 1200
LEFT = 90             # room for the byte axis labels
RIGHT = 20
PLOT_H = 320
ROW_H = 16            # one phase label row, one legend row
LEGEND_GAP = 44       # plot bottom to the legend heading (time labels between)
TICKS = 5             # about this many intervals on each axis
OTHER_LABEL = "other sites"
OTHER_COLOR = "rgb(180,180,180)"
PHASE_COLOR = "rgb(60,110,200)"
LABEL_GAP = 4         # px at least between two phase labels in a row


def _text(s):
    """Element text: XML-escaped, control characters (invalid in XML 1.0,
    and a newline would shift the hover lines) replaced by spaces."""
    return escape(_CTRL.sub(" ", str(s)))


def _check_values(what, values, n):
    if len(values) != n:
        raise ValueError("timeline: %s has %d values, not %d"
                         % (what, len(values), n))
    for v in values:
        try:   # float(): an int too large for a float cannot be drawn
            ok = isinstance(v, (int, float)) and math.isfinite(float(v)) \
                and v >= 0
        except OverflowError:
            ok = False
        if not ok:
            raise ValueError("timeline: %s has a value %r: times and bytes "
                             "are numbers, finite and >= 0" % (what, v))


def _validate(times, series, other, total, peak, committed, phases):
    n = len(times)
    _check_values("times", times, n)
    if any(b < a for a, b in zip(times, times[1:])):
        raise ValueError("timeline: times must be ascending")
    for label, values in series:
        _check_values("series %r" % (label,), values, n)
    for what, values in (("other", other), ("total", total),
                         ("committed", committed)):
        if values is not None:
            _check_values(what, values, n)
    _check_values("peak", peak, 2)
    for name, start, end in phases:
        _check_values("phase %r" % (name,), (start, end), 2)
        if end < start:
            raise ValueError("timeline: phase %r ends before it begins"
                             % (name,))


def _nice(raw):
    """The smallest 1, 2 or 5 times a power of ten that is >= raw > 0."""
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw * (1 - 1e-9):
            return m * mag
    return 10 * mag  # not reached


def _byte_ticks(vmax):
    """(top of the axis, tick values).  Steps are 1, 2 or 5 times a power
    of ten of the largest binary unit (B, KiB, ...) below vmax, or half a
    unit, so that human_bytes prints them exactly."""
    vmax = max(vmax, 1)
    unit = 1
    while unit < 1024 ** 4 and vmax >= unit * 1024:
        unit *= 1024
    step = max(_nice(vmax / unit / TICKS), 0.5 if unit > 1 else 1) * unit
    n = int(math.ceil(vmax / step - 1e-9))
    return n * step, [i * step for i in range(n + 1)]


def _time_unit(hi):
    return (1e9, "s") if hi >= 1e9 else (1e6, "ms")


def _time_text(ns, unit):
    return "%.3f %s" % (ns / unit[0], unit[1])


def _time_ticks(lo, hi, unit):
    """[(ns, label)] at 1, 2 or 5 times a power of ten of the unit."""
    step = _nice((hi - lo) / unit[0] / TICKS)
    digits = max(0, -int(math.floor(math.log10(step) + 1e-9)))
    first = int(math.ceil(lo / unit[0] / step - 1e-9))
    last = int(math.floor(hi / unit[0] / step + 1e-9))
    return [(k * step * unit[0], "%.*f %s" % (digits, k * step, unit[1]))
            for k in range(first, last + 1)]


def _color(i):
    """Well-separated hues (golden angle), deterministic; the lightness
    cycles too, so that hues which come round again still differ."""
    r, g, b = colorsys.hls_to_rgb((i * 0.381966) % 1.0,
                                  (0.6, 0.45, 0.72)[i % 3], 0.55)
    return "rgb(%d,%d,%d)" % (round(r * 255), round(g * 255), round(b * 255))


def _phase_rows(phases):
    """Row of each phase label: the lowest row whose previous label ended
    by the phase's start (overlapping phases stack)."""
    ends, rows = [], [0] * len(phases)
    for i in sorted(range(len(phases)), key=lambda i: (phases[i][1], i)):
        start, end = phases[i][1], phases[i][2]
        row = next((r for r, e in enumerate(ends) if e <= start), len(ends))
        if row == len(ends):
            ends.append(end)
        ends[row] = end
        rows[i] = row
    return rows


def _peak_index(times, t):
    """The first point nearest the peak's time (the timeline samples the
    peak moment itself, so normally the exact one)."""
    return min(range(len(times)), key=lambda i: (abs(times[i] - t), i))


CLIP_RATIO = 8   # committed above this many times the live top: clipped


class _Chart(object):
    """Scales: chart coordinates of a time and of a byte value."""

    def __init__(self, top, lo, hi, ymax):
        self.left, self.right = LEFT, WIDTH - RIGHT
        self.top, self.bottom = top, top + PLOT_H
        self.lo, self.hi, self.ymax = lo, hi, ymax

    def x(self, t):
        return self.left + (t - self.lo) * (self.right - self.left) / \
            float(self.hi - self.lo)

    def y(self, v):
        return self.bottom - v * PLOT_H / float(self.ymax)


def _layers(series, other):
    """[(label, colour, values)] bottom-up: the series, then other sites."""
    out = [(label, _color(i), values) for i, (label, values) in
           enumerate(series)]
    if other is not None:
        out.append((OTHER_LABEL, OTHER_COLOR, other))
    return out


def _xs(chart, times):
    """x of each point; a single point spans the plot (drawn flat)."""
    if len(times) == 1:
        return [chart.left, chart.right]
    return [chart.x(t) for t in times]


def _ys(chart, values):
    """y of each value, twice for a single point (see _xs)."""
    ys = [chart.y(v) for v in values]
    return ys * 2 if len(ys) == 1 else ys


def _points(xs, ys):
    return " ".join("%s,%s" % (_num(x), _num(y)) for x, y in zip(xs, ys))


def _areas(chart, times, layers):
    xs = _xs(chart, times)
    base = [0] * len(times)
    o = ['<g id="areas">']
    for label, colour, values in layers:
        top = [b + v for b, v in zip(base, values)]
        pts = _points(xs + xs[::-1],
                      _ys(chart, top) + _ys(chart, base)[::-1])
        o.append('<polygon class="area" data-label="%s" fill="%s" '
                 'points="%s"/>' % (_attr(_CTRL.sub(" ", label)), colour, pts))
        base = top
    o.append('</g>')
    return o


def _committed_line(chart, times, committed):
    return ['<polyline id="committed" points="%s"/>'
            % _points(_xs(chart, times), _ys(chart, committed))]


def _y_axis(chart, ticks):
    o = ['<rect id="plot" x="%d" y="%d" width="%d" height="%d"/>'
         % (chart.left, chart.top, chart.right - chart.left, PLOT_H),
         '<g id="yaxis">']
    for v in ticks:
        y = _num(chart.y(v))
        o.append('<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>'
                 '<text x="%d" y="%s">%s</text>'
                 % (chart.left, y, chart.right, y, chart.left - 6,
                    _num(chart.y(v) + 4), _text(human_bytes(v))))
    o.append('</g>')
    return o


def _x_axis(chart, ticks):
    o = ['<g id="xaxis"><line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>'
         % (chart.left, chart.bottom, chart.right, chart.bottom)]
    for t, label in ticks:
        x = _num(chart.x(t))
        o.append('<line class="axis" x1="%s" y1="%d" x2="%s" y2="%d"/>'
                 '<text x="%s" y="%d">%s</text>'
                 % (x, chart.bottom, x, chart.bottom + 4, x,
                    chart.bottom + 4 + FONT_SIZE + 2, _text(label)))
    o.append('</g>')
    return o


def label_width(text):
    """A label's width in px, estimated from the font size: FONT_W (the
    average glyph's share of it, Verdana's) per character."""
    return len(text) * FONT_SIZE * FONT_W


def phase_labels(chart, phases, rows):
    """Where each phase band's name goes: per band (text, x, anchor,
    left, right) -- anchor "start" or "end", left and right the
    estimated extent (label_width) -- or None when it would overlap a
    label already placed in its row (LABEL_GAP px apart at least): the
    band's <title> still names it. The widest bands are named first.
    Each band tries, in order: its full name inside it; the name cut to
    the band (_fit, 3 characters at least); the full name beside it,
    right of it, else left (a band too narrow for any of its name: a
    phase of microseconds in a run of seconds)."""
    placed = [[] for _ in range(max(rows) + 1 if rows else 0)]
    out = [None] * len(phases)
    order = sorted(range(len(phases)),
                   key=lambda i: (phases[i][1] - phases[i][2],
                                  phases[i][1], i))
    for i in order:
        name, start, end = phases[i]
        x0, x1 = chart.x(start), chart.x(end)
        shown = _CTRL.sub(" ", str(name))
        width = label_width(shown)
        cut = _fit(shown, x1 - x0)
        tries = []
        if width <= x1 - x0 - 6:
            tries.append((shown, x0 + 3, "start"))
        elif cut.strip():
            tries.append((cut, x0 + 3, "start"))
        if x1 + 3 + width <= chart.right:
            tries.append((shown, x1 + 3, "start"))
        if x0 - 3 - width >= 0:
            tries.append((shown, x0 - 3, "end"))
        for text, x, anchor in tries:
            w = label_width(text)
            left, right = (x, x + w) if anchor == "start" else (x - w, x)
            if all(right + LABEL_GAP <= a or left >= b + LABEL_GAP
                   for a, b in placed[rows[i]]):
                placed[rows[i]].append((left, right))
                out[i] = (text, x, anchor, left, right)
                break
    return out


def _phase_bands(chart, phases, rows, tags_top, unit):
    o = ['<g id="phases">']
    labels = phase_labels(chart, phases, rows)
    for (name, start, end), row, label in zip(phases, rows, labels):
        x0, x1 = chart.x(start), chart.x(end)
        y = tags_top + row * ROW_H
        text = ""
        if label is not None:
            text = '<text x="%s" y="%d"%s>%s</text>' % (
                _num(label[1]), y + ROW_H - 4,
                ' text-anchor="end"' if label[2] == "end" else "",
                _text(label[0]))
        o.append('<g class="phase"><title>%s: %s - %s</title>'
                 '<rect class="band" x="%s" y="%d" width="%s" height="%d" '
                 'fill="%s"/><rect class="tag" x="%s" y="%d" width="%s" '
                 'height="%d" fill="%s"/>%s</g>'
                 % (_text(name), _time_text(start, unit), _time_text(end, unit),
                    _num(x0), chart.top, _num(x1 - x0), PLOT_H, PHASE_COLOR,
                    _num(x0), y, _num(x1 - x0), ROW_H - 2, PHASE_COLOR,
                    text))
    o.append('</g>')
    return o


def _peak_marker(chart, peak, unit, label_y):
    x, y = _num(chart.x(peak[0])), _num(chart.y(peak[1]))
    right_half = chart.x(peak[0]) > (chart.left + chart.right) / 2.0
    return ['<g id="peak"><line x1="%s" y1="%d" x2="%s" y2="%d"/>'
            '<circle cx="%s" cy="%s" r="3"/>'
            '<text x="%s" y="%d" text-anchor="%s">peak %s at %s</text></g>'
            % (x, label_y - FONT_SIZE, x, chart.bottom, x, y,
               _num(chart.x(peak[0]) + (-4 if right_half else 4)), label_y,
               "end" if right_half else "start",
               _text(_human_bytes(peak[1])), time_text(peak[0]))]


def _legend_rows(layers, total, committed):
    """[(label, swatch class, colour, values)]: the rows of the legend and
    the lines of each column's <title>, in this order."""
    rows = [("total", None, None, total)]
    rows += [(label, "swatch", colour, values)
             for label, colour, values in layers]
    if committed is not None:
        rows.append(("committed", "line", None, committed))
    return rows


def _columns(chart, times, rows, unit):
    """Per-point hover targets; their <title>s carry the values."""
    xs = [chart.x(t) for t in times]
    edges = [chart.left] + [(a + b) / 2.0 for a, b in zip(xs, xs[1:])] + \
        [chart.right]
    o = ['<line id="cursor" class="hide" x1="0" y1="%d" x2="0" y2="%d"/>'
         % (chart.top, chart.bottom), '<g id="columns">']
    for i, t in enumerate(times):
        lines = [_time_text(t, unit)] + [
            "%s: %s" % (label, _human_bytes(values[i]))
            for label, _cls, _colour, values in rows]
        o.append('<rect class="c" data-x="%s" x="%s" y="%d" width="%s" '
                 'height="%d"><title>%s</title></rect>'
                 % (_num(xs[i]), _num(edges[i]), chart.top,
                    _num(edges[i + 1] - edges[i]), PLOT_H,
                    "\n".join(_text(line) for line in lines)))
    o.append('</g>')
    return o


def _legend(rows, at, top, peak_time, unit, scope=None):
    """The legend: each row's bytes at point `at` (the peak) and label."""
    head = "Live bytes at the peak, %s" % time_text(peak_time)
    if scope:
        head += " (the whole program; the sites of %s named)" % scope
    o = ['<g id="legend"><text id="legend-head" x="%d" y="%d">%s</text>'
         % (LEFT, top, _text(head))]
    label_x = LEFT + 130
    for k, (label, cls, colour, values) in enumerate(rows):
        y = top + (k + 1) * ROW_H
        label = _CTRL.sub(" ", label)
        shown = _fit(label, WIDTH - RIGHT - label_x)
        o.append('<g class="entry">')
        if cls == "swatch":
            o.append('<rect class="swatch" x="%d" y="%d" width="12" '
                     'height="12" fill="%s"/>' % (LEFT, y - 10, colour))
        elif cls == "line":
            o.append('<line class="swatch" x1="%d" y1="%d" x2="%d" y2="%d"/>'
                     % (LEFT, y - 4, LEFT + 12, y - 4))
        o.append('<text class="v" x="%d" y="%d">%s</text>'
                 '<text class="l" x="%d" y="%d">%s%s</text></g>'
                 % (label_x - 10, y, _text(_human_bytes(values[at])),
                    label_x, y, escape(shown),
                    "" if shown == label else
                    "<title>%s</title>" % escape(label)))
    o.append('</g>')
    return o


_STYLE = """
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: rgb(0,0,0); }
#title { text-anchor: middle; font-size: 17px; }
#subtitle { text-anchor: middle; fill: rgb(120,120,120); }
#empty { text-anchor: middle; font-size: 15px; fill: rgb(120,120,120); }
#yaxis text, .v { text-anchor: end; }
#xaxis text { text-anchor: middle; }
#plot { fill: rgb(250,250,250); }
.grid { stroke: rgb(225,225,225); }
.axis { stroke: rgb(0,0,0); }
.band { fill-opacity: 0.08; }
.tag { fill-opacity: 0.3; stroke: rgb(255,255,255); }
#committed, line.swatch { fill: none; stroke: rgb(0,0,0); stroke-width: 1.5; stroke-dasharray: 6,3; }
#peak line { stroke: rgb(200,0,0); stroke-dasharray: 3,3; }
#peak circle, #peak text { fill: rgb(200,0,0); }
#cursor { stroke: rgb(0,0,0); stroke-opacity: 0.6; pointer-events: none; }
.hide { display: none; }
.c { fill: rgb(0,0,0); fill-opacity: 0; }
.c:hover { fill-opacity: 0.06; }
"""

# Hover: a column's <title> is the time, then "label: bytes" per legend row
# (labels may hold ": ", human_bytes never does); the legend shows those
# values until the pointer leaves, then the peak's again.
_JS = r"""
"use strict";
function init(evt) {
  var cols = document.getElementById("columns"), cursor = document.getElementById("cursor");
  var head = document.getElementById("legend-head");
  var vals = document.getElementById("legend").getElementsByClassName("v");
  var saved = [head.textContent];
  for (var k = 0; k < vals.length; k++) saved.push(vals[k].textContent);
  cols.addEventListener("mouseover", function (e) {
    var x = e.target.getAttribute("data-x");
    if (x === null) return;
    var lines = e.target.getElementsByTagName("title")[0].textContent.split("\n");
    head.textContent = "Live bytes at " + lines[0];
    for (var k = 0; k < vals.length; k++)
      vals[k].textContent = lines[k + 1].substring(lines[k + 1].lastIndexOf(": ") + 2);
    cursor.setAttribute("x1", x); cursor.setAttribute("x2", x);
    cursor.classList.remove("hide");
  });
  cols.addEventListener("mouseout", function () {
    head.textContent = saved[0];
    for (var k = 0; k < vals.length; k++) vals[k].textContent = saved[k + 1];
    cursor.classList.add("hide");
  });
}
"""


def _document(height, title, subtitle, body):
    o = ['<?xml version="1.0" standalone="no"?>',
         '<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" '
         'onload="init(evt)" xmlns="http://www.w3.org/2000/svg">'
         % (WIDTH, height, WIDTH, height),
         '<style type="text/css"><![CDATA[%s]]></style>' % _STYLE,
         '<script type="text/ecmascript"><![CDATA[%s]]></script>' % _JS,
         '<rect x="0" y="0" width="%d" height="%d" fill="rgb(255,255,255)"/>'
         % (WIDTH, height),
         '<text id="title" x="%s" y="%d">%s</text>'
         % (_num(WIDTH / 2.0), FONT_SIZE * 2, _text(title))]
    if subtitle:
        o.append('<text id="subtitle" x="%s" y="%d">%s</text>'
                 % (_num(WIDTH / 2.0), FONT_SIZE * 4, _text(subtitle)))
    return "\n".join(o + body + ['</svg>\n'])


def render(title, subtitle, times, series, other, total, peak,
           committed=None, phases=(), scope=None):
    """The memory-over-time chart as an SVG document (a str); the
    arguments are described in the module docstring. scope: the sites'
    selection (--tag, --phase: "tag ast"), said in the legend's head: the
    chart is the whole program's memory, the selection's sites named."""
    times, total, peak = list(times), list(total), tuple(peak)
    series = [(str(label), list(values)) for label, values in series]
    other = None if other is None else list(other)
    committed = None if committed is None else list(committed)
    phases = [(str(name), start, end) for name, start, end in phases]
    _validate(times, series, other, total, peak, committed, phases)

    header = FONT_SIZE * 3 + (FONT_SIZE * 1.5 if subtitle else 0)
    if not times:
        return _document(int(header + 60), title, subtitle, [
            '<text id="empty" x="%s" y="%s">No memory recorded</text>'
            % (_num(WIDTH / 2.0), _num(header + 30))])

    rows = _phase_rows(phases)
    tags_top = header + ROW_H + 2
    lo = min([times[0], peak[0]] + [p[1] for p in phases])
    hi = max([times[-1], peak[0]] + [p[2] for p in phases])
    hi = hi if hi > lo else lo + 1e6       # one moment: show 1 ms after it
    unit = _time_unit(hi)
    layers = _layers(series, other)
    tops = [sum(values[i] for _l, _c, values in layers)
            for i in range(len(times))]
    live_top = max(tops + total + [peak[1]])
    committed_top = max(committed) if committed else 0
    # Committed bytes far above the live ones (an arena's 64 MiB reserve
    # for 28 KiB of allocations) would flatten the live area to a line at
    # zero: the scale is then the live bytes', the committed line stops
    # at the top, and a note says so.
    clipped = committed_top > CLIP_RATIO * max(live_top, 1)
    ymax, yticks = _byte_ticks(live_top if clipped
                               else max(live_top, committed_top))
    chart = _Chart(tags_top + (max(rows) + 1 if rows else 0) * ROW_H + 2,
                   lo, hi, ymax)
    legend = _legend_rows(layers, total, committed)
    legend_top = chart.bottom + LEGEND_GAP

    body = _y_axis(chart, yticks) + \
        _phase_bands(chart, phases, rows, tags_top, unit) + \
        _areas(chart, times, layers) + \
        (_committed_line(chart, times, [min(v, ymax) for v in committed]
                         if clipped else committed)
         if committed is not None else []) + \
        (['<text id="committed-clipped" x="%s" y="%s">committed bytes '
          '(up to %s) run above the chart: its scale is the live '
          'bytes\'</text>' % (_num(chart.left), _num(chart.top - 4),
                              _text(human_bytes(committed_top)))]
         if clipped else []) + \
        _x_axis(chart, _time_ticks(lo, hi, unit)) + \
        _peak_marker(chart, peak, unit, header + FONT_SIZE) + \
        _columns(chart, times, legend, unit) + \
        _legend(legend, _peak_index(times, peak[0]), legend_top, peak[0],
                unit, scope)
    height = int(legend_top + len(legend) * ROW_H + 12)
    return _document(height, title, subtitle, body)


DEFAULT_TITLE = "allocsites: live bytes over time"


def render_report(report, title=None):
    """The --timeline SVG of a Report: its timeline data (made by
    analyze/timeline_series.py), the flame graph's subtitle; title: --title
    (None: DEFAULT_TITLE)."""
    d = report.timeline
    return render(title or DEFAULT_TITLE, report_subtitle(report),
                  d["times"], d["series"], d["other"], d["total"],
                  d["peak"], d["committed"], d["phases"], scope=d["scope"])
