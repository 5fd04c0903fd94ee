"""Wires the stages: Tally -> fold -> Report -> output files.

Used by the perf entry script (scripts/allocsites.py) at trace_end; kept
out of it so it can be run on a hand-made Tally in tests."""

import os
import sys

from . import csvout, folded, jsonout, perfrun, svg, table
from .elf import tag_names
from .fold import fold
from .options import skip_regex
from .report import Report, is_lossy, lost_text
from .symbolize import Symbolizer


def collect_tag_names(tally, symbolizer):
    """{tag: name} from the .rt_tags of every DSO in the stacks; the DSO
    holding the probe (the leaf) wins over others."""
    names = {}
    leaves = {frames[0].dso for frames, _ in tally.stacks if frames}
    for dso in sorted(tally.dsos(), key=lambda d: (d in leaves, d)):
        image = symbolizer.elf(dso)
        if image is not None:
            names.update(tag_names(image))
    return names


def build_report(tally, opts, symbolizer, lost, lost_reason):
    names = collect_tag_names(tally, symbolizer)
    tags = set(opts.tag) if opts.tag else None
    result = fold(tally, symbolizer, names, skip_regex(opts), tags, opts.depth)
    warnings = list(symbolizer.warnings)
    if tally.no_callchain:
        warnings.append("%d allocations have no call chain: record with "
                        "--call-graph dwarf" % tally.no_callchain)
    if result.truncated:
        warnings.append("%d allocations have stacks cut short (not reaching "
                        "main/_start): raise --stack-size" % result.truncated)
    if tally.malformed:
        warnings.append("%d rt events could not be decoded (missing probe "
                        "arguments?)" % tally.malformed)
    filters = {"tag": opts.tag, "min_size": opts.min_size,
               "depth": opts.depth, "top": opts.top, "skip": opts.skip}
    return Report("exact", result, dict(tally.events), tally.malformed, lost,
                  lost_reason, tuple(tally.frees), filters, warnings)


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
        sub = "%d allocations, %d bytes, lost: %s" % (
            report.folded.count, report.folded.bytes, lost_text(report))
        save("svg", opts.svg, svg.render_svg(folded.svg_stacks(report),
                                             opts.weight, title, sub))
    out.write(table.render_table(report, opts.top or 20))
    for kind, path in written:
        out.write("%s: %s\n" % (kind, path))
    for w in report.warnings:
        err.write("allocsites: warning: %s\n" % w)
    if is_lossy(report):
        err.write("allocsites: warning: lost events: %s; counts and bytes are "
                  "lower bounds\n" % lost_text(report))
    return written


def lost_for(path_hint=None):
    """(lost, reason) for the perf.data this process reads."""
    argv = perfrun.perf_argv()
    path = path_hint or perfrun.input_path(argv)
    if not os.path.isabs(path) and path != "-":
        path = os.path.abspath(path)
    return perfrun.count_lost(path)
