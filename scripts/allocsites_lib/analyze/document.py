"""A saved profile document (--save-profile) read back into a Report.

`allocsites report --from FILE` and `allocsites diff` read the document
render/profiledoc.py writes (docs/output-formats.md, "The profile
document"): the Report as it was made from the recording, so that every
output renders from it as from the recording. A file that is not such a
document (missing, not JSON, cut short, another version, a JSON report)
is a BadDocument whose message says so in one line."""

import collections
import json

from .completeness import Verdict
from .fold import Profile, Site, Stack
from .report import LiveSummary, PhaseRow, Report
from .symbolize import Frame

# The format and the version read here (render/profiledoc.py writes them).
FORMAT = "allocsites profile"
VERSION = 1

class BadDocument(ValueError):
    """Not a profile document this version reads (the message names the
    file and what is wrong, in one line)."""


def load(path):
    """The Report saved at path. Raises BadDocument."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise BadDocument("%s: cannot read it: %s" % (path,
                                                      e.strerror or e))
    try:
        doc = json.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        # RecursionError: arrays nested deeper than Python's stack
        raise BadDocument("%s: not a profile document (not JSON: %s)"
                          % (path, _first_line(e)))
    return from_dict(doc, path)


def is_document(doc):
    """Whether a parsed JSON file says it is a profile document."""
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def from_dict(doc, path):
    """The Report of a parsed document. Raises BadDocument."""
    if not is_document(doc):
        if isinstance(doc, dict) and "sites" in doc and "totals" in doc:
            raise BadDocument("%s: a JSON report (--json), not a profile "
                              "document: save one with --save-profile"
                              % path)
        raise BadDocument("%s: not a profile document (no \"format\": "
                          "\"%s\")" % (path, FORMAT))
    if doc.get("version") != VERSION:
        raise BadDocument("%s: a profile document of version %r; this "
                          "allocsites reads version %d: save it again with "
                          "this allocsites" % (path, doc.get("version"),
                                               VERSION))
    try:
        return _report(doc)
    except (KeyError, TypeError, ValueError, IndexError,
            AttributeError) as e:
        raise BadDocument("%s: a damaged profile document (%s: %s)"
                          % (path, type(e).__name__, _first_line(e)))


def _first_line(e):
    return (str(e).splitlines() or [""])[0]


def _report(doc):
    frames = [Frame(function, file, line, dso, inlined)
              for function, file, line, dso, inlined in doc["frames"]]
    p = doc["profile"]
    profile = Profile([_site(s, frames) for s in p["sites"]],
                      [_stack(s, frames) for s in p["stacks"]],
                      p["count"], p["bytes"], p["truncated"])
    verdict = Verdict(**doc["verdict"])
    return Report(
        mode=doc["mode"], profile=profile, events=dict(doc["events"]),
        malformed=doc["malformed"], lost=doc["lost"],
        lost_reason=doc["lost_reason"], frees=tuple(doc["frees"]),
        filters=dict(doc["filters"]), warnings=list(doc["warnings"]),
        sampling=doc["sampling"], duplicates=doc["duplicates"],
        verdict=verdict, pprof=doc["pprof"],
        liveness=_liveness(doc["liveness"]), timeline=doc["timeline"],
        duplicates_by_kind=dict(doc["duplicates_by_kind"]),
        unwind=doc["unwind"], bad_options=tuple(doc["bad_options"]))


def _site(d, frames):
    site = Site(frames[d["frame"]])
    site.count, site.bytes = d["count"], d["bytes"]
    site.tag_bytes = collections.Counter(d["tag_bytes"])
    site.tag_counts = collections.Counter(d["tag_counts"])
    site.weight_by_size2, site.samples = d["weight_by_size2"], d["samples"]
    site.peak_bytes, site.peak_count = d["peak_bytes"], d["peak_count"]
    site.leaked_bytes = d["leaked_bytes"]
    site.leaked_count = d["leaked_count"]
    site.temporary = d["temporary"]
    return site


def _stack(d, frames):
    return Stack(tuple(frames[i] for i in d["frames"]), d["count"],
                 d["bytes"], dict(d["tags"]), d["peak"], d["leaked"],
                 d["temporary"])


def _liveness(d):
    if d is None:
        return None
    d = dict(d)
    d["phases"] = [PhaseRow(**row) for row in d["phases"]]
    for pair in ("unmatched_frees", "committed"):
        if d[pair] is not None:
            d[pair] = tuple(d[pair])
    return LiveSummary(**d)


def for_render(report, opts):
    """The Report as the rendering options ask for it: --top is the
    rendering's, and the filters (in the JSON report) say so; the
    warning that pprof has no thread labels is there with --pprof only,
    where the recording's report puts it."""
    filters = dict(report.filters)
    filters["top"] = opts.top
    warnings = list(report.warnings)
    note = (report.pprof or {}).get("thread_note")
    if note:
        at, text = note
        there = at < len(warnings) and warnings[at] == text
        if getattr(opts, "pprof", None) and not there:
            warnings.insert(at, text)
        elif not getattr(opts, "pprof", None) and there:
            del warnings[at]
    return report._replace(filters=filters, warnings=warnings)
