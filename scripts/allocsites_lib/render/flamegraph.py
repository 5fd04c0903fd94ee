"""Interactive flame graph SVG for allocation stacks (stdlib only).

Emulates Brendan Gregg's flamegraph.pl output:

* Input: iterable of ``(frames, count, nbytes)``, or ``(frames, count,
  nbytes, value)`` for the weights peak, leaked and temporary (value: the
  stack's bytes live at the peak, bytes leaked, temporary allocations);
  ``frames`` is ROOT FIRST
  (outermost caller first, allocation site last).  Identical prefixes merge
  into a tree under a root box named ``all``; every box carries the totals of
  both ``count`` and ``nbytes`` of all stacks passing through it.
* Layout: root at the bottom, callees stacked above, children sorted
  alphabetically and left-aligned in their parent.  Box width is proportional
  to the chosen weight (WEIGHTS); boxes narrower than MIN_WIDTH px
  are omitted (their weight still counts in the parent).  Coordinates are
  rounded to 4 decimals.
* Each frame is ``<g class="f" data-v=WEIGHT data-end=LAST_DESCENDANT_INDEX>``
  holding ``<title>`` (name, bytes, count, percentage, one per line),
  ``<rect>`` and ``<text>`` (label truncated with ".." to fit, like
  flamegraph.pl).  Frames are emitted in pre-order, so the descendants of
  frame i are exactly the frames i+1 .. data-end.
* Colours: flamegraph.pl "hot" palette, derived from zlib.crc32 of the
  function name (the part before " (file:line)"), so output is deterministic.
  Float inputs are sampling estimates and are shown rounded with a "~" prefix.
* Inline JavaScript: hover shows the details line at the bottom; click zooms
  (box becomes full width, ancestors stay greyed, the rest is hidden); "Reset
  Zoom" restores; "Search" (or Ctrl-F) prompts for a regex, paints matches
  magenta and shows "Matched: X%" of the total weight.
"""

import json
import zlib

from ..words import human_bytes
from .svg import (CTRL as _CTRL, FONT_SIZE, FONT_W, attr as _attr, escape,
                  fit as _fit, estimate_bytes as _human_bytes, num as _num)
from .text import lost_text, verdict_line

MIN_WIDTH = 0.1       # px, like flamegraph.pl --minwidth
XPAD = 10             # left/right padding
FRAME_H = 16          # frame height (rect is FRAME_H - 1)
SEARCH_COLOR = "rgb(230,0,230)"

# What the boxes can measure (options.WEIGHTS), and what an empty graph of
# each says: a graph of leaks with nothing leaked is a result, not a
# missing recording.
WEIGHTS = ("bytes", "count", "peak", "leaked", "temporary")
EMPTY = {"bytes": "No allocations recorded",
         "count": "No allocations recorded",
         "peak": "Nothing live at the peak",
         "leaked": "Nothing leaked: every allocation was freed",
         "temporary": "No temporary allocations"}


class _Node(object):
    __slots__ = ("name", "count", "nbytes", "value", "children", "base")

    def __init__(self, name):
        self.name, self.count, self.nbytes, self.children = name, 0, 0, {}
        self.value = 0     # peak, leaked or temporary: the 4th stack item
        self.base = None   # a differential graph: the base profile's node


def _attach_base(node, base):
    """Pairs each node with the base tree's node of the same path."""
    node.base = base if base is not None else _Node(node.name)
    for name, child in node.children.items():
        _attach_base(child, base.children.get(name) if base is not None
                     else None)


def _build_tree(stacks):
    """Merge stacks (root first) into a prefix tree rooted at "all"."""
    root = _Node("all")
    for stack in stacks:
        frames, count, nbytes = stack[:3]
        value = stack[3] if len(stack) > 3 else 0
        node = root
        node.count += count
        node.nbytes += nbytes
        node.value += value
        for name in frames:
            name = _CTRL.sub(" ", str(name))
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = _Node(name)
            child.count += count
            child.nbytes += nbytes
            child.value += value
            node = child
    return root


def _layout(root, value, width):
    """Pre-order list of [node, depth, x, w, end_index] for boxes >= MIN_WIDTH."""
    total = value(root)
    scale = (width - 2 * XPAD) / float(total)
    out, todo = [], [(root, 0, float(XPAD))]
    while todo:
        item = todo.pop()
        if item[0] is None:               # subtree finished: record last index
            item[1][4] = len(out) - 1
            continue
        node, depth, x = item
        w = value(node) * scale
        if w < MIN_WIDTH:
            continue
        rec = [node, depth, x, w, None]
        out.append(rec)
        todo.append((None, rec))
        acc, pushes = 0, []
        for name in sorted(node.children):
            child = node.children[name]
            pushes.append((child, depth + 1, x + acc * scale))
            acc += value(child)
        todo.extend(reversed(pushes))
    return out


def _amount(v):
    """Exact for ints, rounded with a '~' for float estimates."""
    return "~%d" % round(v) if isinstance(v, float) else "%d" % v


def _measure(weight):
    """node -> the figure its box is sized by."""
    if weight == "bytes":
        return lambda n: n.nbytes
    if weight == "count":
        return lambda n: n.count
    return lambda n: n.value


def _figure_line(node, weight):
    """The tooltip line of a liveness weight ('' for bytes and count)."""
    if weight == "temporary":
        return "temporary: %s allocations\n" % _amount(node.value)
    if weight in ("peak", "leaked"):
        return "%s: %s (%s bytes)\n" % (
            "live at the peak" if weight == "peak" else "leaked",
            _human_bytes(node.value), _amount(node.value))
    return ""


def _info(node, weight, total):
    value = _measure(weight)
    w = value(node)
    pct = 100.0 * w / total if total else 0.0
    text = "%s\nbytes: %s (%s bytes)\ncount: %s\n%s%.2f%% of total %s" % (
        node.name, _human_bytes(node.nbytes), _amount(node.nbytes),
        _amount(node.count), _figure_line(node, weight), pct, weight)
    if node.base is not None:
        before = value(node.base)
        text += "\nchange: %+.0f %s (base %.0f)" % (w - before, weight,
                                                  before)
    return text


def _diff_color(node, weight):
    """Grown red, shrunk blue, unchanged white: the stronger the change
    relative to the node's size, the deeper the colour."""
    value = _measure(weight)
    w, before = value(node), value(node.base)
    delta = w - before
    scale = max(w, before) or 1
    depth = int(200 * min(1.0, abs(delta) / scale))
    if delta > 0:
        return "rgb(255,%d,%d)" % (255 - depth, 255 - depth)
    if delta < 0:
        return "rgb(%d,%d,255)" % (255 - depth, 255 - depth)
    return "rgb(250,250,250)"


def _color(name):
    """flamegraph.pl "hot" palette from a stable hash of the function name."""
    h = zlib.crc32(name.split(" (", 1)[0].encode("utf-8", "replace"))
    v1, v2, v3 = (h & 0xff) / 255.0, ((h >> 8) & 0xff) / 255.0, ((h >> 16) & 0xff) / 255.0
    return "rgb(%d,%d,%d)" % (205 + int(50 * v3), int(230 * v1), int(55 * v2))


_STYLE = """
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: rgb(0,0,0); }
#title { text-anchor: middle; font-size: 17px; }
#subtitle { text-anchor: middle; fill: rgb(120,120,120); }
#empty { text-anchor: middle; font-size: 15px; fill: rgb(120,120,120); }
#search, #unzoom { cursor: pointer; opacity: 0.15; }
#search:hover, #search.show, #unzoom:hover, #unzoom.show { opacity: 1; }
#unzoom.hide { display: none; }
#matched { text-anchor: end; }
.f { cursor: pointer; }
.f text { pointer-events: none; }
.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }
.parent { opacity: 0.5; }
"""

_JS = r"""
"use strict";
var frames = [], fg, details, matchedtxt, searchbtn, unzoombtn, searching = null;
function init(evt) {
  fg = document.getElementById("frames");
  details = document.getElementById("details");
  matchedtxt = document.getElementById("matched");
  searchbtn = document.getElementById("search");
  unzoombtn = document.getElementById("unzoom");
  var gs = fg.getElementsByTagName("g");
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], r = g.getElementsByTagName("rect")[0];
    var title = g.getElementsByTagName("title")[0].textContent;
    g._i = i;
    frames.push({g: g, r: r, t: g.getElementsByTagName("text")[0], i: i,
      x: parseFloat(r.getAttribute("x")), w: parseFloat(r.getAttribute("width")),
      fill: r.getAttribute("fill"), v: parseFloat(g.getAttribute("data-v")),
      end: parseInt(g.getAttribute("data-end"), 10),
      name: title.split("\n")[0], info: title.replace(/\n/g, " | ")});
  }
  fg.addEventListener("mouseover", function (e) {
    var f = frameOf(e.target), n = Math.floor((CFG.fullW - 150) / (CFG.fontSize * CFG.fontW));
    if (f) details.textContent = f.info.length <= n ? f.info : f.info.substring(0, n - 2) + ".."; });
  fg.addEventListener("mouseout", function () { details.textContent = " "; });
  fg.addEventListener("click", function (e) { var f = frameOf(e.target); if (f) zoom(f); });
  unzoombtn.addEventListener("click", unzoom);
  searchbtn.addEventListener("click", searchPrompt);
  window.addEventListener("keydown", function (e) {
    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {
      e.preventDefault(); searchPrompt();
    } else if (e.key === "Escape") { unzoom(); resetSearch(); }
  });
}
function frameOf(el) {
  while (el && el !== fg) { if (el._i !== undefined) return frames[el._i]; el = el.parentNode; }
  return null;
}
function fit(f, w) {
  var n = Math.floor(w / (CFG.fontSize * CFG.fontW)), s = "";
  if (n >= 3) s = f.name.length <= n ? f.name : f.name.substring(0, n - 2) + "..";
  f.t.textContent = s;
}
function place(f, x, w, parent) {
  f.g.style.display = "";
  f.r.setAttribute("x", x.toFixed(4)); f.r.setAttribute("width", w.toFixed(4));
  f.t.setAttribute("x", (x + 3).toFixed(4));
  if (parent) f.g.classList.add("parent"); else f.g.classList.remove("parent");
  fit(f, w);
}
function zoom(z) {
  var scale = CFG.fullW / z.w;
  for (var j = 0; j < frames.length; j++) {
    var f = frames[j];
    if (j >= z.i && j <= z.end) place(f, CFG.xpad + (f.x - z.x) * scale, f.w * scale, false);
    else if (j < z.i && z.i <= f.end) place(f, CFG.xpad, CFG.fullW, true);
    else f.g.style.display = "none";
  }
  unzoombtn.classList.remove("hide"); unzoombtn.classList.add("show");
}
function unzoom() {
  for (var j = 0; j < frames.length; j++) place(frames[j], frames[j].x, frames[j].w, false);
  unzoombtn.classList.add("hide"); unzoombtn.classList.remove("show");
}
function searchPrompt() {
  if (searching !== null) { resetSearch(); return; }
  var term = prompt("Enter a search term (regexp allowed, eg: ^malloc)", "");
  if (term) search(term);
}
function search(term) {
  var re;
  try { re = new RegExp(term); } catch (e) { alert("Invalid regexp: " + e.message); return; }
  var matched = 0, covered = -1;
  for (var j = 0; j < frames.length; j++) {
    var f = frames[j];
    if (re.test(f.name)) {
      f.r.setAttribute("fill", CFG.searchColor);
      if (j > covered) { matched += f.v; covered = f.end; }  // count outermost match only
    } else f.r.setAttribute("fill", f.fill);
  }
  searching = term;
  searchbtn.textContent = "Reset Search"; searchbtn.classList.add("show");
  var pct = CFG.total > 0 ? 100 * matched / CFG.total : 0;
  matchedtxt.textContent = "Matched: " + pct.toFixed(1) + "% of " + CFG.weight;
}
function resetSearch() {
  for (var j = 0; j < frames.length; j++) frames[j].r.setAttribute("fill", frames[j].fill);
  searching = null;
  searchbtn.textContent = "Search"; searchbtn.classList.remove("show");
  matchedtxt.textContent = " ";
}
"""


def render_svg(stacks, weight="bytes", title="Allocation flame graph", subtitle="", width=1200,
               base_stacks=None):
    """stacks: iterable of (frames, count, nbytes) where frames is a list/tuple of str, ROOT FIRST
    (outermost caller first, allocation site last), count and nbytes are int or float (float = estimates
    from sampling); for weight peak, leaked or temporary, (frames, count, nbytes, value) with value that
    figure of the stack (folded.svg_stacks makes them). weight: one of WEIGHTS -- which value sizes
    the boxes.
    base_stacks: the same for a base profile: a differential flame graph
    (widths from stacks, colour by the change from base_stacks).
    Returns the SVG document as a str."""
    if weight not in WEIGHTS:
        raise ValueError("weight must be one of %s, not %r"
                         % (", ".join(WEIGHTS), weight))
    value = _measure(weight)
    root = _build_tree(stacks)
    if base_stacks is not None:
        _attach_base(root, _build_tree(base_stacks))
    total = value(root)
    boxes = _layout(root, value, width) if total > 0 else []

    ypad1 = FONT_SIZE * 3 + (FONT_SIZE * 1.5 if subtitle else 0)
    ypad2 = FONT_SIZE * 2 + 10
    depth = max([b[1] for b in boxes]) + 1 if boxes else 3
    height = int(ypad1 + depth * FRAME_H + ypad2)
    cfg = {"total": total, "weight": weight, "xpad": XPAD, "fullW": width - 2 * XPAD,
           "fontSize": FONT_SIZE, "fontW": FONT_W, "searchColor": SEARCH_COLOR}

    o = ['<?xml version="1.0" standalone="no"?>',
         '<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" onload="init(evt)" '
         'xmlns="http://www.w3.org/2000/svg">' % (width, height, width, height),
         '<defs><linearGradient id="background" y1="0" y2="1" x1="0" x2="0">'
         '<stop stop-color="#eeeeee" offset="5%"/><stop stop-color="#eeeeb0" offset="95%"/>'
         '</linearGradient></defs>',
         '<style type="text/css"><![CDATA[%s]]></style>' % _STYLE,
         '<script type="text/ecmascript"><![CDATA[\nvar CFG = %s;%s]]></script>'
         % (json.dumps(cfg, sort_keys=True), _JS),
         '<rect x="0" y="0" width="%d" height="%d" fill="url(#background)"/>' % (width, height),
         '<text id="title" x="%s" y="%d">%s</text>' % (_num(width / 2.0), FONT_SIZE * 2, escape(title))]
    if subtitle:
        o.append('<text id="subtitle" x="%s" y="%d">%s</text>'
                 % (_num(width / 2.0), FONT_SIZE * 4, escape(subtitle)))
    y_btn, y_bot = FONT_SIZE * 2, height - ypad2 / 2.0
    o.append('<text id="unzoom" class="hide" x="%d" y="%d">Reset Zoom</text>' % (XPAD, y_btn))
    o.append('<text id="search" x="%d" y="%d">Search</text>' % (width - XPAD - 100, y_btn))
    o.append('<text id="details" x="%d" y="%s"> </text>' % (XPAD, _num(y_bot)))
    o.append('<text id="matched" x="%d" y="%s"> </text>' % (width - XPAD, _num(y_bot)))
    if not boxes:
        o.append('<text id="empty" x="%s" y="%s">%s</text>'
                 % (_num(width / 2.0), _num(ypad1 + depth * FRAME_H / 2.0),
                    EMPTY[weight]))
    o.append('<g id="frames">')
    for node, d, x, w, end in boxes:
        y = height - ypad2 - (d + 1) * FRAME_H
        o.append('<g class="f" data-v="%s" data-end="%d"><title>%s</title>'
                 '<rect x="%s" y="%d" width="%s" height="%d" rx="2" ry="2" fill="%s"/>'
                 '<text x="%s" y="%d">%s</text></g>'
                 % (_attr(repr(value(node))), end, escape(_info(node, weight, total)),
                    _num(x), y, _num(w), FRAME_H - 1,
                    _diff_color(node, weight) if node.base is not None
                    else _color(node.name),
                    _num(x + 3), y + 11, escape(_fit(node.name, w))))
    o.append('</g>\n</svg>\n')
    return "\n".join(o)


def report_subtitle(report):
    """The flame graph's subtitle: totals, who holds the memory when frees
    were recorded (and the --phase the report is restricted to), the loss,
    the samples behind sampled estimates, and the completeness verdict."""
    est = "~" if report.sampling else ""
    live = report.liveness
    held = ""
    if live is not None and live.peak_bytes is not None:
        held = ", peak %s%s, leaked %s%s" % (
            est, human_bytes(live.peak_bytes), est,
            human_bytes(live.leaked_bytes))
    if live is not None and live.scope:
        held += " (%s)" % live.scope
    elif live is not None and live.phase is not None:
        held += ", phase %s" % live.phase
    return "%s%.0f allocations, %s%.0f bytes%s, lost: %s%s; %s" % (
        est, report.profile.count, est, report.profile.bytes, held,
        lost_text(report), "; estimates from %d samples" %
        report.sampling["samples"] if report.sampling else "",
        verdict_line(report, warning=""))
