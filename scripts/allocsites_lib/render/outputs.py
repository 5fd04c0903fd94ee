"""The outputs a report asks for: the table on stdout, the files (JSON,
CSV, pprof, timeline, folded, flame graph), the warnings on stderr."""

import sys

from . import (csvout, flamegraph, folded, jsonout, ranking, sitestacks,
               table)
from ..cli.options import UsageError


def write_outputs(report, opts, out=sys.stdout, err=sys.stderr):
    """Table to `out`, files as asked, warnings to `err`. Returns the list
    of (kind, path) written. A --sort or --weight this report has no
    figures for (peak without frees) raises options.UsageError before
    any file is written."""
    try:
        ranking.check(report, getattr(opts, "sort", "bytes"), opts.weight)
    except ValueError as e:
        raise UsageError(str(e))
    written = []

    def save(kind, path, text):
        """text: a string, or its pieces (written one at a time)."""
        with open(path, "w", encoding="utf-8") as f:
            if isinstance(text, str):
                f.write(text)
            else:
                for piece in text:
                    f.write(piece)
        written.append((kind, path))

    if opts.json:
        save("json", opts.json, jsonout.iter_json(report, opts.top,
                                                  opts.stacks))
    if opts.csv:
        save("csv", opts.csv, csvout.render_csv(report, opts.top))
    if report.pprof is not None:
        with open(opts.pprof, "wb") as f:
            f.write(report.pprof)
        written.append(("pprof", opts.pprof))
    if report.timeline is not None:
        save("timeline", opts.timeline, report.timeline)
    if opts.folded:
        save("folded", opts.folded, folded.render_folded(report, opts.weight))
    if opts.svg:
        title = opts.title or "allocsites: %s by call stack" % opts.weight
        save("svg", opts.svg, flamegraph.render_svg(folded.svg_stacks(report,
                                                                  opts.weight),
                                             opts.weight, title,
                                             flamegraph.report_subtitle(report)))
    out.write(table.render_table(report, opts.top or 20, sort=opts.sort))
    if opts.stacks:
        out.write(sitestacks.render_stacks(
            report.profile, opts.stacks, opts.top or 10,
            "~" if report.sampling else ""))
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
