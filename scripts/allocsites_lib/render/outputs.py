"""Writes the outputs the options ask for: the table, the files, warnings.

The table on stdout, the files (JSON, CSV, pprof, timeline, folded,
flame graph, profile document), the warnings on stderr. Each file is a
renderer of the Report in FILES: a new output is a module here and a
line there (and its option in cli/options.py)."""

import os
import sys
import tempfile

from . import (csvout, flamegraph, folded, jsonout, pprofout, profiledoc,
               ranking, sitestacks, table, timeline)
from .. import textio
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
        written, on_stdout = _write(report, opts, out, files)
        files.commit()
    except BaseException:   # an interrupt, a full disk: no file half-done
        files.discard()
        raise
    # with a file on stdout, the list of the others goes to stderr
    listed = err if on_stdout else out
    for kind, path in written:
        listed.write("%s: %s\n" % (kind, path))
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

    def open(self, path, mode, errors=textio.ERRORS):
        """errors: what a text file does with a name that is not UTF-8
        (textio.py): written back as the bytes it was, by default."""
        text = {} if "b" in mode else {"encoding": "utf-8",
                                       "errors": errors}
        final = os.path.realpath(path)
        if os.path.exists(final) and not os.path.isfile(final):
            f = open(path, mode, **text)
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
        return os.fdopen(fd, mode, **text)

    def commit(self):
        """Renames every file into place, with SIGINT, SIGTERM and SIGHUP
        held; one that is pending first goes to its handler (which raises:
        write_outputs then removes the files; or notes it and returns, as
        perf script's does). Inside interrupts.Raised (cli/command.py's
        report) the signals stay held after the renames, until Raised
        gives the mask back: one that comes then came after the report,
        which is written, and is not told as "nothing written"."""
        import signal
        from .. import interrupts
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


def _to_stream(out, data):
    """data (str, its pieces written one at a time, or bytes) written to
    out, a file or a text stream (bytes then to its buffer: pprof's gzip
    on stdout)."""
    if isinstance(data, bytes):
        out.flush()
        getattr(out, "buffer", out).write(data)
    elif isinstance(data, str):
        out.write(data)
    else:
        for piece in data:
            out.write(piece)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _svg(report, opts):
    title = opts.title or "allocsites: %s by call stack" % opts.weight
    return flamegraph.render_svg(folded.svg_stacks(report, opts.weight),
                                 opts.weight, title,
                                 flamegraph.report_subtitle(report))


# The files, in the order they are written and listed: (option dest, kind,
# renderer(report, opts) -> str, its pieces, or bytes; None when the
# report has nothing for it: a pprof or timeline it was made without).
FILES = (
    ("json", "json", lambda r, o: jsonout.iter_json(r, o.top, o.stacks)),
    ("csv", "csv", lambda r, o: csvout.render_csv(r, o.top)),
    ("pprof", "pprof", lambda r, o: pprofout.render_pprof(r)
     if r.pprof is not None else None),
    ("timeline", "timeline", lambda r, o: timeline.render_report(r, o.title)
     if r.timeline is not None else None),
    ("folded", "folded", lambda r, o: folded.render_folded(r, o.weight)),
    ("svg", "svg", _svg),
    ("save_profile", "profile", lambda r, o: profiledoc.render_document(r)),
)


def _write(report, opts, out, files):
    """The files to temporary files (files.open) and the table to out;
    returns ([(kind, path)], whether one went to out). A file named "-"
    (one at most: cli/options.py's check_outputs) goes to out instead of
    the table (`--folded - | flamegraph.pl`), and is not listed."""
    written = []
    to_stdout = False
    for dest, kind, render in FILES:
        path = getattr(opts, dest, None)
        if not path:
            continue
        data = render(report, opts)
        if data is None:
            continue
        binary = isinstance(data, bytes)
        if path == "-":
            to_stdout = True
            _to_stream(out, data)
            continue
        # an SVG is XML, which has no place for bytes that are not
        # UTF-8: U+FFFD for them there; elsewhere the bytes themselves
        with files.open(path, "wb" if binary else "w",
                        errors="replace" if kind == "svg"
                        else textio.ERRORS) as f:
            _to_stream(f, data)
        written.append((kind, path))
    if to_stdout:
        return written, True
    out.write(table.render_table(report, opts.top or 20, sort=opts.sort))
    if opts.stacks:
        out.write(sitestacks.render_stacks(
            report.profile, opts.stacks, opts.top or 10,
            "~" if report.sampling else ""))
    return written, False
