"""The JSON report, version 2 (docs/output-formats.md describes it).

Version 2 adds who holds the memory (issue 12) and the phases (issue 13);
every field of version 1 is still there, with its meaning."""

import json
import types

from . import sitestacks
from ..words import share
from .text import peak_error, verdict

VERSION = 2


def frame_json(frame):
    return {"function": frame.function, "file": frame.file,
            "line": frame.line, "dso": frame.dso, "inlined": frame.inlined}


class _Encoded(str):
    """An item iter_json writes as it is: already JSON."""


def _encoded_stacks(stacks):
    """Each stack as JSON text, the one encoder of a stack: {"frames":
    [frame_json, ...], "count", "bytes", "tags" (sorted by label),
    "peak", "leaked", "temporary"}, as json.dumps would write that dict
    (separators ", " and ": "). Each distinct frame is encoded once:
    stacks share most of their frames (9625 stacks of 217723 frames, 89
    distinct ones, in minicc's report at 10^6 allocations), and encoding
    them was most of the JSON's time."""
    dumps = json.dumps
    cache = {}
    labels = {}   # a tag's label -> its JSON
    for s in stacks:
        parts = []
        for f in s.frames:
            text = cache.get(f)
            if text is None:
                text = cache[f] = dumps(frame_json(f))
            parts.append(text)
        # the rest as json.dumps writes it, without its dict (a dumps a
        # stack was two thirds of this loop's time)
        tags = []
        for label, value in sorted(s.tags.items()):
            key = labels.get(label)
            if key is None:
                key = labels[label] = dumps(label)
            tags.append(key + ": " + _number(value))
        yield _Encoded('{"frames": [%s], "count": %s, "bytes": %s, '
                       '"tags": {%s}, "peak": %s, "leaked": %s, '
                       '"temporary": %s}' % (
                           ", ".join(parts), _number(s.count),
                           _number(s.bytes), ", ".join(tags),
                           _number(s.peak), _number(s.leaked),
                           _number(s.temporary)))


def _number(value, dumps=json.dumps):
    """A count, bytes or None as json.dumps writes it."""
    if type(value) is int:   # noqa: E721 -- not bool, which dumps as true
        return str(value)
    return "null" if value is None else dumps(value)


def report_dict(report, top=None, stacks_site=None, lazy=False):
    """The document as a dict; lazy: its stacks as a generator, for
    iter_json (a large recording's stacks are most of the document)."""
    profile = report.profile
    sampling = report.sampling
    sites = []
    for site in profile.sites[:top] if top else profile.sites:
        f = site.frame
        entry = {
            "file": f.file, "line": f.line, "function": f.function,
            "dso": f.dso, "count": site.count, "bytes": site.bytes,
            "share": round(share(site.bytes, profile.bytes), 4),
            "avg_size": (site.bytes / site.count) if site.count else 0,
            "tags": dict(sorted(site.tag_bytes.items())),
            "tag_counts": dict(sorted(site.tag_counts.items())),
            # null when frees were not recorded (temporary: also in
            # sampled mode)
            "peak_bytes": site.peak_bytes, "peak_count": site.peak_count,
            "leaked_bytes": site.leaked_bytes,
            "leaked_count": site.leaked_count, "temporary": site.temporary,
        }
        if sampling:
            bytes_err, count_err = site.errors(sampling["sample_bytes"])
            entry.update(samples=site.samples, bytes_error=bytes_err,
                         count_error=count_err)
        sites.append(entry)
    stacks = _encoded_stacks(profile.stacks)
    if not lazy:   # as dicts: the same encoder's text, read back
        stacks = [json.loads(text) for text in stacks]
    events = {"alloc": 0, "free": 0, "sample": 0}
    events.update(report.events)
    events.update(malformed=report.malformed, duplicates=report.duplicates,
                  duplicates_by_kind=dict(sorted(
                      (report.duplicates_by_kind or {}).items())))
    check = verdict(report)
    return {
        "version": VERSION,
        "mode": report.mode,
        # sampled mode: rt:sample events and R, the mean bytes between
        # samples; count and bytes are then unbiased estimates (floats)
        # and each site has one-standard-error bytes_error/count_error.
        "samples": sampling["samples"] if sampling else None,
        "sample_bytes": sampling["sample_bytes"] if sampling else None,
        "lost": report.lost,
        "lost_reason": report.lost_reason,
        # true: checked end to end (rt:exit); false: events are missing
        # (the reason says which and why); null: could not be checked.
        "complete": check.complete,
        "complete_reason": check.reason,
        "check": {"fired": check.fired, "received": check.received,
                  "missing": check.missing, "unchecked": check.unchecked,
                  "unchecked_by_kind": dict(sorted(
                      check.unchecked_by_kind.items()))},
        "events": events,
        # frees: null when rt:free was not recorded (allocsites record
        # --frees), rather than a misleading 0.
        "totals": {"count": profile.count, "bytes": profile.bytes,
                   "frees": report.frees[0] if report.events.get("free")
                   else None,
                   "freed_bytes": report.frees[1] if report.events.get("free")
                   else None},
        # allocations whose stack does not reach main/_start/a thread start
        "truncated_allocations": profile.truncated,
        # who holds the memory: null when frees were not recorded
        "liveness": liveness_json(report.liveness, report.sampling),
        # RT_PHASE_BEGIN/END: [] when the program marks none
        "phases": [phase_json(p) for p in report.liveness.phases]
        if report.liveness is not None else [],
        "filters": report.filters,
        "warnings": list(report.warnings),
        "sites": sites,
        # --stacks SITE: the stacks reaching it (absent without --stacks)
        **({"site_stacks": sitestacks.stacks_json(
            profile, stacks_site, top or 10, frame_json)}
           if stacks_site else {}),
        "stacks": stacks,
        # how the stacks were taken (record --unwind): "dwarf", "fp", or
        # null when not known (a recording without a call graph)
        "unwind": report.unwind,
    }


def liveness_json(live, sampling=None):
    """LiveSummary -> object (its phases go to the top-level "phases");
    sampling: the report's, for the peak's standard error."""
    if live is None:
        return None
    count, nbytes = live.unmatched_frees
    committed = None
    if live.committed is not None:
        highest, at_peak, end = live.committed
        committed = {"peak": highest, "at_peak": at_peak, "end": end}
    return {"peak_bytes": live.peak_bytes, "peak_count": live.peak_count,
            "peak_time": live.peak_time,
            "leaked_bytes": live.leaked_bytes,
            "leaked_count": live.leaked_count,
            "temporary": live.temporary,
            "unmatched_frees": {"count": count, "bytes": nbytes},
            "untracked": live.untracked, "committed": committed,
            "phase": live.phase,
            "unmatched_phase_ends": live.unmatched_phase_ends,
            "open_phases": live.open_phases,
            # null: whole program; else the --phase/--tag selection whose
            # own allocations peak_*, leaked_* and temporary are
            "scope": live.scope,
            # sampled: one standard error of the total at the peak's
            # moment, sqrt(R x peak); null in exact mode (appended)
            "peak_bytes_error": peak_error(live, sampling)}


def phase_json(row):
    return dict(row._asdict())


def iter_json(report, top=None, stacks_site=None):
    """The document in pieces, indented by key, one list item (site,
    stack) per line, each item encoded on its own: json.dumps(indent=...)
    uses the pure-Python encoder (1.4 s for the 20 MB report of 213431
    allocations; item by item, the C encoder takes 0.1 s), and a whole
    document held at once, its dicts and its text, is what a large
    recording's report peaked at (16658 stacks of 393688 frames at 10^7
    allocations: about 300 MB, now one stack at a time)."""
    doc = report_dict(report, top, stacks_site, lazy=True)
    dumps = json.dumps
    sep = "{\n"
    for key, value in doc.items():
        if isinstance(value, (list, types.GeneratorType)):
            items = iter(value)
            first = next(items, _END)
            if first is _END:
                yield "%s %s: []" % (sep, dumps(key))
            else:
                yield "%s %s: [\n  %s" % (sep, dumps(key), _dumps(first))
                for item in items:
                    yield ",\n  " + _dumps(item)
                yield "\n ]"
        else:
            yield "%s %s: %s" % (sep, dumps(key), dumps(value))
        sep = ",\n"
    yield "\n}\n"


_END = object()


def _dumps(item):
    return item if isinstance(item, _Encoded) else json.dumps(item)


def render_json(report, top=None, stacks_site=None):
    """The whole document as one string (iter_json's pieces)."""
    return "".join(iter_json(report, top, stacks_site))
