"""allocsites diff BASE NEW: what changed between two profiles.

BASE and NEW are JSON reports (allocsites report --json), profile
documents (--save-profile) or recordings (reported here first). Sites
are matched across a rebuild: by function, file and line first ("same"),
then, among what is left, by function and file when that names exactly
one site on each side ("moved": the line changed); the rest are "new" or
"gone". In sampled profiles a change smaller than z* combined standard
errors (sqrt(e_base^2 + e_new^2), each site's bytes_error) is marked
"not significant", where z* makes the chance that noise alone passes it
at any of the m sites compared at most FAMILY_ALPHA (Bonferroni: z* =
the normal quantile of 1 - alpha/(2m): 1.96 for one site, 3.14 for 30).
One standard error, the rule before, let 13 of 30 changes between
identical runs through (bench/diff_noise.py measures both). The output:
the table of changes, largest first; the totals before and after;
optionally the same as JSON and a differential flame graph (widths from
NEW, grown red, shrunk blue, as in Brendan Gregg's differential flame
graphs)."""

import collections
import json
import math
import statistics

from ..words import frame_label, human_bytes

Change = collections.namedtuple(
    "Change", "function file line base_line match count_before "
              "count_after bytes_before bytes_after significant error",
    defaults=(0.0,))

# The chance, over all the sites of a sampled diff, that a site which did
# not change is called significant (family-wise, Bonferroni).
FAMILY_ALPHA = 0.05


def z_threshold(sites, alpha=FAMILY_ALPHA):
    """z*: how many combined standard errors a change must reach to be
    significant when `sites` sites are compared."""
    sites = max(1, sites)
    return statistics.NormalDist().inv_cdf(1 - alpha / (2.0 * sites))


class BadInput(ValueError):
    """An input that is not an allocsites JSON report (its message names
    the file and what is wrong, in one line)."""


def load(path, json_of_recording, json_of_document=None):
    """A JSON report from path, as a dict: itself if it is one, the JSON
    report of a profile document (--save-profile; json_of_document(path,
    parsed document) -> the JSON report as a dict), else the JSON report
    of the recording (json_of_recording(path) -> JSON text). Raises
    BadInput for a JSON file that is not a JSON report (checked: what
    diff reads)."""
    import os
    import stat
    if os.path.exists(path) and not os.path.isdir(path) and \
            not stat.S_ISREG(os.stat(path).st_mode):
        raise BadInput("%s: not a regular file (a pipe or a device)" % path)
    with open(path, "rb") as f:
        head = f.read(8)
    if head.lstrip()[:1] == b"{":
        try:
            with open(path, encoding="utf-8") as f:
                js = json.load(f)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            # RecursionError: nested deeper than Python's stack
            raise BadInput("%s: not valid JSON (%s)" % (path, e))
        if json_of_document is not None and isinstance(js, dict) and \
                "format" in js:
            js = json_of_document(path, js)
    else:
        js = json.loads(json_of_recording(path))
    check(js, path)
    return js


_NUMBER = (int, float)
# What diff reads of a report, and of each site and stack frame.
_SITE = (("function", str), ("file", str), ("line", int),
         ("count", _NUMBER), ("bytes", _NUMBER))
_FRAME = (("function", str), ("file", str), ("line", int),
          ("inlined", bool))


def _need(obj, fields, what, path):
    for name, kind in fields:
        if name not in obj:
            raise BadInput("%s: not an allocsites JSON report: %s has no "
                           "%r" % (path, what, name))
        if not isinstance(obj[name], kind) or isinstance(obj[name], bool) \
                and kind is not bool:
            raise BadInput("%s: not an allocsites JSON report: %s's %r is "
                           "%r" % (path, what, name, obj[name]))


def check(js, path):
    """Raises BadInput unless js (a parsed JSON file) has what diff reads
    of a JSON report."""
    if not isinstance(js, dict):
        raise BadInput("%s: not an allocsites JSON report (a JSON %s)"
                       % (path, type(js).__name__))
    _need(js, (("sites", list), ("totals", dict)), "the report", path)
    _need(js["totals"], (("count", _NUMBER), ("bytes", _NUMBER)),
          "totals", path)
    for i, site in enumerate(js["sites"]):
        if not isinstance(site, dict):
            raise BadInput("%s: not an allocsites JSON report: site %d is "
                           "not an object" % (path, i + 1))
        _need(site, _SITE, "site %d" % (i + 1), path)
        err = site.get("bytes_error")
        if err is not None and not isinstance(err, _NUMBER):
            raise BadInput("%s: not an allocsites JSON report: site %d's "
                           "'bytes_error' is %r" % (path, i + 1, err))
    stacks = js.get("stacks", [])
    if not isinstance(stacks, list):
        raise BadInput("%s: not an allocsites JSON report: 'stacks' is not "
                       "a list" % path)
    for i, stack in enumerate(stacks):
        if not isinstance(stack, dict) or \
                not isinstance(stack.get("frames"), list):
            raise BadInput("%s: not an allocsites JSON report: stack %d "
                           "has no frames" % (path, i + 1))
        _need(stack, (("count", _NUMBER), ("bytes", _NUMBER)),
              "stack %d" % (i + 1), path)
        for frame in stack["frames"]:
            if not isinstance(frame, dict):
                raise BadInput("%s: not an allocsites JSON report: a frame "
                               "of stack %d is not an object"
                               % (path, i + 1))
            _need(frame, _FRAME, "a frame of stack %d" % (i + 1), path)


def match_sites(base, new):
    """[Change] for every site of either report, matched as the module
    says; sampled significance from bytes_error."""
    left = list(base["sites"])
    by_line = {}
    for s in left:
        by_line.setdefault((s["function"], s["file"], s["line"]), []).append(s)
    out, pending = [], []
    used = set()
    for s in new["sites"]:
        same = [b for b in by_line.get((s["function"], s["file"], s["line"]), ())
                if id(b) not in used]
        if same:
            used.add(id(same[0]))
            out.append(_change(same[0], s, "same"))
        else:
            pending.append(s)
    for s in pending:
        cands = [b for b in left if id(b) not in used and
                 (b["function"], b["file"]) == (s["function"], s["file"])]
        others = [n for n in pending
                  if (n["function"], n["file"]) == (s["function"], s["file"])]
        if len(cands) == 1 and len(others) == 1:
            used.add(id(cands[0]))
            out.append(_change(cands[0], s, "moved"))
        else:
            out.append(_change(None, s, "new"))
    for b in left:
        if id(b) not in used:
            out.append(_change(b, None, "gone"))
    out.sort(key=lambda c: (-abs(c.bytes_after - c.bytes_before),
                            -abs(c.count_after - c.count_before),
                            c.file, c.line, c.function))
    z = z_threshold(sum(1 for c in out if c.error))
    return [c._replace(significant=abs(c.bytes_after - c.bytes_before) >=
                       z * c.error) if c.error else c for c in out]


def _change(b, n, how):
    site = n or b
    err = math.hypot((b or {}).get("bytes_error") or 0,
                     (n or {}).get("bytes_error") or 0)
    before = b["bytes"] if b else 0
    after = n["bytes"] if n else 0
    return Change(site["function"], site["file"], site["line"],
                  b["line"] if b else None, how,
                  b["count"] if b else 0, n["count"] if n else 0,
                  before, after, True, err)


def signed(v, human=False):
    text = human_bytes(abs(v)) if human else ("%.0f" % abs(v))
    return ("+" if v > 0 else "-" if v < 0 else "") + text


def render_table(base_name, new_name, base, new, changes, top=20):
    rows = [c for c in changes if (c.bytes_after != c.bytes_before or
                                   c.count_after != c.count_before)]
    lines = ["diff: %s -> %s" % (base_name, new_name),
             " #      bytes     count  before -> after (bytes)  site  match"]
    for i, c in enumerate(rows[:top], 1):
        where = "%s:%d" % (c.file, c.line) if c.line else c.file
        how = c.match if c.match != "moved" else "moved from line %d" % \
            c.base_line
        lines.append("%2d %10s %9s  %.0f -> %.0f  %s %s  %s%s" % (
            i, signed(c.bytes_after - c.bytes_before, True),
            signed(c.count_after - c.count_before), c.bytes_before,
            c.bytes_after, c.function, where, how,
            "" if c.significant else "  (not significant)"))
    tb, tn = base["totals"], new["totals"]
    lines.append("total: %.0f -> %.0f bytes (%s, %s), %.0f -> %.0f "
                 "allocations (%s); %d sites changed, %d unchanged"
                 % (tb["bytes"], tn["bytes"],
                    signed(tn["bytes"] - tb["bytes"], True),
                    _percent(tb["bytes"], tn["bytes"]), tb["count"],
                    tn["count"], signed(tn["count"] - tb["count"]),
                    len(rows), len(changes) - len(rows)))
    sampled = sum(1 for c in changes if c.error)
    if sampled:
        lines.append("significant: a change of at least %.2f standard "
                     "errors (at most a %d%% chance that noise passes it at "
                     "any of the %d sampled sites)"
                     % (z_threshold(sampled), round(100 * FAMILY_ALPHA),
                        sampled))
    moved = ["%s %s:%d -> %d" % (c.function, c.file, c.base_line, c.line)
             for c in changes if c.match == "moved"]
    if moved:
        lines.append("moved (matched by function and file): " +
                     ", ".join(moved))
    for name, rep in (("base", base), ("new", new)):
        if rep.get("complete") is False:
            lines.append("WARNING: the %s profile is incomplete: %s"
                         % (name, rep.get("complete_reason")))
    return "\n".join(lines) + "\n"


def _percent(before, after):
    if not before:
        return "new"
    return "%+.1f%%" % (100.0 * (after - before) / before)


def diff_json(base_name, new_name, base, new, changes):
    sampled = sum(1 for c in changes if c.error)
    return {"version": 1, "base": base_name, "new": new_name,
            "totals": {"before": base["totals"], "after": new["totals"]},
            "sites": [dict(c._asdict()) for c in changes],
            # (appended) sampled: a change is significant from z_threshold
            # combined standard errors ("error"), null in exact diffs
            "z_threshold": round(z_threshold(sampled), 3) if sampled
            else None}


def svg_stacks(js):
    """A JSON report's stacks (js: the report as a dict) as render_svg
    wants them (root first)."""
    out = []
    for s in js.get("stacks", ()):
        frames = [frame_label(_Frame(f)) for f in reversed(s["frames"])]
        out.append((frames, s["count"], s["bytes"]))
    return out


class _Frame:
    """A JSON frame, as words.frame_label reads one."""

    def __init__(self, d):
        self.function, self.file = d["function"], d["file"]
        self.line, self.inlined = d["line"], d["inlined"]
