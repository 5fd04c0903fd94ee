"""Wires the stages: Tally -> fold -> Report -> output files.

Used by the perf entry script (scripts/allocsites.py) at trace_end; kept
out of it so it can be run on a hand-made Tally in tests."""

import os
import sys

from . import completeness, csvout, folded, jsonout, perfrun, svg, table
from .elf import tag_names
from .fold import fold
from .options import skip_regex
from .report import Report, lost_text, verdict_line


def collect_tag_names(tally, symbolizer):
    """{tag: name} from the .rt_tags of every DSO in the stacks; the DSO
    holding the probe (the leaf) wins over others."""
    names = {}
    leaves = {frames[0].dso for frames, _ in tally.keys() if frames}
    for dso in sorted(tally.dsos(), key=lambda d: (d in leaves, d)):
        image = symbolizer.elf(dso)
        if image is not None:
            names.update(tag_names(image))
    return names


def build_report(tally, opts, symbolizer, lost, lost_reason, data=None,
                 read_errors=(), interrupted=False):
    """data: the perf.data path, to notice binaries rebuilt since;
    read_errors: one-line strings, each a part of the recording that perf
    could not read (a failed perf script worker, perf's error lines): the
    profile is then incomplete; interrupted: the report stopped before
    the end."""
    names = collect_tag_names(tally, symbolizer)
    tags = set(opts.tag) if opts.tag else None
    mode = tally.mode()
    result = fold(tally, symbolizer, names, skip_regex(opts), tags, opts.depth,
                  mode)
    warnings = list(symbolizer.warnings)
    if tags is not None:
        present = {label for _, tag in tally.entries(mode)
                   for label in (str(tag), names.get(tag))}
        unmatched = sorted(t for t in tags if t not in present)
        if unmatched:
            shown = sorted({names.get(tag, str(tag))
                            for _, tag in tally.entries(mode)})
            warnings.append("no allocation has the tag%s %s; the tags in "
                            "this recording: %s" % (
                                "s" if len(unmatched) > 1 else "",
                                ", ".join(unmatched),
                                ", ".join(shown) or "none"))
    sampling = None
    if mode == "sampled":
        sampling = {"samples": tally.events.get("sample", 0),
                    "sample_bytes": tally.weight_gcd}
    elif tally.sampled:
        warnings.append("both sdt_rt:alloc and sdt_rt:sample were recorded: "
                        "reporting the exact stream, ignoring %d samples"
                        % tally.events.get("sample", 0))
    if tally.no_callchain:
        warnings.append("%d allocations have no call chain: record with "
                        "--call-graph dwarf" % tally.no_callchain)
    if result.truncated:
        warnings.append("%d allocations have stacks cut short (not reaching "
                        "main/_start): raise --stack-size (8192 by default; "
                        "16384 reaches main for 99%% of a Lua interpreter's "
                        "stacks)" % result.truncated)
    for dso in stale_binaries(tally.dsos(), data) if data else ():
        warnings.append("%s changed after the recording: its frames may be "
                        "wrong; record again" % dso)
    if tally.duplicates:
        warnings.append("%d duplicated sample records dropped (same thread "
                        "and nanosecond: written twice by perf)"
                        % tally.duplicates)
    if tally.filtered:
        warnings.append("%d allocations under --min-size %d not counted"
                        % (tally.filtered, opts.min_size))
    if tally.malformed:
        warnings.append("%d rt events could not be decoded (missing probe "
                        "arguments?)" % tally.malformed)
    for line in read_errors or ():
        warnings.append("not read: %s" % line)
    filters = {"tag": opts.tag, "min_size": opts.min_size,
               "depth": opts.depth, "top": opts.top, "skip": opts.skip}
    check = completeness.verdict(tally.received, tally.fired, lost,
                                 lost_reason, read_errors, tally.malformed,
                                 interrupted)
    return Report(mode, result, dict(tally.events), tally.malformed, lost,
                  lost_reason, tuple(tally.frees), filters, warnings, sampling,
                  tally.duplicates, check)


def finish_report(tally, opts, symbolizer, lost, lost_reason, data=None,
                  handler_errors=0, perf_inlines=False, read_errors=(),
                  interrupted=False):
    """build_report plus what only the perf script run knows: handler
    exceptions, inline expansion, no events at all. Used by
    allocsites.py's trace_end and by `allocsites report` after merging
    its workers' tallies."""
    report = build_report(tally, opts, symbolizer, lost, lost_reason, data,
                          read_errors=read_errors, interrupted=interrupted)
    if handler_errors:
        report.warnings.append("%d events raised in the handler and were "
                               "skipped" % handler_errors)
    if perf_inlines:
        report.warnings.append("perf script ran without --no-inline: "
                               "slower, and recursion through inlined "
                               "functions may lose frames")
    if not tally.events:
        report.warnings.append("no sdt_rt events in this recording")
    return report


def write_outputs(report, opts, out=sys.stdout, err=sys.stderr):
    """Table to `out`, files as asked, warnings to `err`. Returns the list
    of (kind, path) written."""
    written = []

    def save(kind, path, text):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append((kind, path))

    if opts.json:
        save("json", opts.json, jsonout.render_json(report, opts.top))
    if opts.csv:
        save("csv", opts.csv, csvout.render_csv(report, opts.top))
    if opts.folded:
        save("folded", opts.folded, folded.render_folded(report, opts.weight))
    if opts.svg:
        title = opts.title or "allocsites: %s by call stack" % opts.weight
        est = "~" if report.sampling else ""
        sub = "%s%.0f allocations, %s%.0f bytes, lost: %s%s; %s" % (
            est, report.folded.count, est, report.folded.bytes,
            lost_text(report), "; estimates from %d samples" %
            report.sampling["samples"] if report.sampling else "",
            verdict_line(report, warning=""))
        save("svg", opts.svg, svg.render_svg(folded.svg_stacks(report),
                                             opts.weight, title, sub))
    out.write(table.render_table(report, opts.top or 20))
    for kind, path in written:
        out.write("%s: %s\n" % (kind, path))
    for w in report.warnings:
        err.write("allocsites: warning: %s\n" % w)
    check = report.verdict
    if check is not None and check.complete is False:
        err.write("allocsites: warning: this profile is incomplete (%s); "
                  "counts and bytes are lower bounds\n" % check.reason)
    elif check is not None and check.complete is None:
        err.write("allocsites: warning: completeness not checked: %s\n"
                  % check.reason)
    return written


def data_path(perf_argv):
    """The perf.data perf script reads (from perf's argv), absolute, or '-'."""
    path = perfrun.input_path(perf_argv)
    return path if path == "-" else os.path.abspath(path)


def stale_binaries(dsos, data):
    """DSOs modified after the recording was written: their addresses no
    longer match the file, so their lines would be wrong."""
    try:
        recorded = os.path.getmtime(data)
    except OSError:
        return []
    stale = []
    for dso in sorted(dsos):
        try:
            if os.path.getmtime(dso) > recorded:
                stale.append(dso)
        except OSError:
            pass
    return stale
