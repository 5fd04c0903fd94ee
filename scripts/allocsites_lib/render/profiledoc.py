"""--save-profile FILE: the whole Report as a JSON profile document.

Every other output renders from what this file holds: `allocsites report
--from FILE` reads it back (analyze/document.py) and writes any output
without the recording, byte for byte as the recording's report would
have. docs/output-formats.md, "The profile document", describes it.

Frames are written once, in the document's "frames" table, and named
by their index there: a stack repeats the frames of many others."""

import json

# The document's format name and version: analyze/document.py reads this
# version only (tests/unit/test_profile_document.py checks they agree).
# A change a reader of an older version would misread is a new version.
FORMAT = "allocsites profile"
VERSION = 1


class _Frames:
    """The frames table: each distinct frame once, numbered from 0."""

    def __init__(self):
        self.index, self.rows = {}, []

    def __call__(self, frame):
        i = self.index.get(frame)
        if i is None:
            i = self.index[frame] = len(self.rows)
            self.rows.append([frame.function, frame.file, frame.line,
                              frame.dso, frame.inlined])
        return i


def _site(site, frame_id):
    return {"frame": frame_id(site.frame), "count": site.count,
            "bytes": site.bytes, "tag_bytes": dict(site.tag_bytes),
            "tag_counts": dict(site.tag_counts),
            "weight_by_size2": site.weight_by_size2,
            "samples": site.samples, "peak_bytes": site.peak_bytes,
            "peak_count": site.peak_count,
            "leaked_bytes": site.leaked_bytes,
            "leaked_count": site.leaked_count, "temporary": site.temporary}


def _stack(stack, frame_id):
    return {"frames": [frame_id(f) for f in stack.frames],
            "count": stack.count, "bytes": stack.bytes,
            "tags": dict(stack.tags), "peak": stack.peak,
            "leaked": stack.leaked, "temporary": stack.temporary}


def _liveness(live):
    if live is None:
        return None
    doc = dict(live._asdict())
    doc["phases"] = [dict(row._asdict()) for row in live.phases]
    return doc


def document(report):
    """The profile document of report, as a dict."""
    frame_id = _Frames()
    profile = report.profile
    sites = [_site(s, frame_id) for s in profile.sites]
    stacks = [_stack(s, frame_id) for s in profile.stacks]
    return {
        "format": FORMAT, "version": VERSION,
        "mode": report.mode, "events": dict(report.events),
        "malformed": report.malformed, "lost": report.lost,
        "lost_reason": report.lost_reason, "frees": list(report.frees),
        "filters": report.filters, "warnings": list(report.warnings),
        "sampling": report.sampling, "duplicates": report.duplicates,
        "duplicates_by_kind": dict(report.duplicates_by_kind or {}),
        "unwind": report.unwind, "bad_options": list(report.bad_options),
        "verdict": dict(report.verdict._asdict()),
        "liveness": _liveness(report.liveness),
        "profile": {"count": profile.count, "bytes": profile.bytes,
                    "truncated": profile.truncated, "sites": sites,
                    "stacks": stacks},
        "frames": frame_id.rows,
        "pprof": report.pprof, "timeline": report.timeline,
    }


def render_document(report):
    """The document as JSON text, one line (the C encoder: a large
    recording's stacks are most of it)."""
    return json.dumps(document(report), separators=(",", ":")) + "\n"
