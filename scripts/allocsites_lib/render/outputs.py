"""The outputs a report asks for: the table on stdout, the files (JSON,
CSV, pprof, timeline, folded, flame graph), the warnings on stderr."""

import os
import sys
import tempfile

from . import (csvout, flamegraph, folded, jsonout, ranking, sitestacks,
               table)
from ..errors import UsageError


def write_outputs(report, opts, out=sys.stdout, err=sys.stderr):
    """Table to `out`, files as asked, warnings to `err`. Returns the list
    of (kind, path) written. A --sort or --weight this report has no
    figures for (peak without frees) raises UsageError before
    any file is written."""
    try:
        ranking.check(report, getattr(opts, "sort", "bytes"), opts.weight)
    except ValueError as e:
        raise UsageError(str(e))
    files = Files()
    try:
        written = _write(report, opts, out, files)
        files.commit()
    except BaseException:   # an interrupt, a full disk: no file half-done
        files.discard()
        raise
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


class Files:
    """The output files, each written to a temporary file beside it
    (.NAME.XXXXXXXX.tmp) and renamed into place by commit(), once the
    whole report is made: an interrupted or failed report leaves no file
    half-written, and no file of a report that did not finish. A path
    that is there and not a regular file (/dev/stdout, a FIFO) is
    written directly."""

    def __init__(self):
        self.pending = []   # (temporary path, final path)
        self.direct = []

    def open(self, path, mode):
        final = os.path.realpath(path)
        if os.path.exists(final) and not os.path.isfile(final):
            f = open(path, mode, **({} if "b" in mode
                                    else {"encoding": "utf-8"}))
            self.direct.append(f)
            return f
        try:
            fd, tmp = tempfile.mkstemp(
                dir=os.path.dirname(final),
                prefix=".%s." % os.path.basename(final), suffix=".tmp")
        except OSError as e:
            e.filename = path   # the error names the output asked for
            raise
        self.pending.append((tmp, final))
        os.fchmod(fd, 0o666 & ~_umask())   # as open() would have made it
        return os.fdopen(fd, mode, **({} if "b" in mode
                                      else {"encoding": "utf-8"}))

    def commit(self):
        """Renames every file into place, with SIGINT, SIGTERM and SIGHUP
        held; one that is pending first goes to its handler (which raises:
        write_outputs then removes the files; or notes it and returns, as
        perf script's does). Inside interrupts.Raised (cli/command.py's
        report) the signals stay held after the renames, until Raised
        gives the mask back: one that comes then came after the report,
        which is written, and is not told as "nothing written"."""
        import signal
        from ..read import interrupts
        while True:
            mask = interrupts.block()
            if not interrupts.pending():
                break
            signal.pthread_sigmask(signal.SIG_UNBLOCK,
                                   interrupts.STOP_SIGNALS)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        try:
            for tmp, final in self.pending:
                os.rename(tmp, final)
            self.pending = []
        finally:
            if not interrupts.Raised.active:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def discard(self):
        for f in self.direct:
            try:
                f.close()
            except OSError:
                pass
        for tmp, _ in self.pending:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.pending = []


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write(report, opts, out, files):
    """The files to temporary files (files.open) and the table to out;
    returns [(kind, path)]."""
    written = []

    def save(kind, path, text):
        """text: a string, or its pieces (written one at a time)."""
        with files.open(path, "w") as f:
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
        with files.open(opts.pprof, "wb") as f:
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
    return written
