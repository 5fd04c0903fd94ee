"""What the SVG renderers (flamegraph.py, timeline.py) share.

The font's metrics, labels fitted to a width, numbers and text as SVG
attributes take them."""

import re

from ..words import human_bytes

FONT_SIZE = 12
FONT_W = 0.59         # average glyph width / font size (Verdana), as flamegraph.pl
CTRL = re.compile("[\x00-\x1f\x7f\ufffe\uffff]")


def num(v):
    s = "%.4f" % v
    return s.rstrip("0").rstrip(".") if "." in s else s


def estimate_bytes(v):
    """human_bytes, with a '~' for a float estimate (sampled mode)."""
    return ("~" if isinstance(v, float) else "") + human_bytes(v)


def fit(name, w):
    """Label for a box of width w: full name, '..'-truncated, or empty."""
    chars = int(w / (FONT_SIZE * FONT_W))
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[:chars - 2] + ".."


def escape(s):
    """&, < and > as entities (xml.sax.saxutils.escape without its import
    of urllib: 45 ms of every allocsites command's start)."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def attr(s):
    return escape(s).replace('"', "&quot;").replace("'", "&apos;")
