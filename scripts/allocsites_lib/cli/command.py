"""The allocsites command's forms run: record, report, both, or diff.

The command line is parsers.py's; this module does the work."""

import argparse
import gc
import json
import os
import sys

# The report's modules (pipeline, fold, flamegraph, diff, reading) are
# imported where a report is made, not here: `allocsites record` does not need them,
# and their imports were a tenth of its fixed cost.
from .. import SCRIPTS_DIR, textio
from . import parsers, options
from ..record import buildids, datafile, prerequisites, recording
from ..record.errors import RecordError
from ..errors import StageError

ENTRY_SCRIPT = os.path.join(SCRIPTS_DIR, "allocsites.py")
USAGE = parsers.USAGE


# allocsites report's status when the profile is incomplete (the same as
# scripts/allocsites.py's).
INCOMPLETE = 3

def run_report(data, opts, stdout=None, jobs=None, err=None):
    """Reports the recording at data: read/reading.py reads it (the native
    reader, or perf script workers running allocsites.py on time ranges
    of it), this process writes the outputs from the tally. opts: the
    report options (options.report_options, parsed once). jobs: the
    number of workers (None: one per CPU, within limits). Returns 0
    (complete, or not checked), 3 when the profile is incomplete (events
    missing, or part of the recording not read: the report says which), 1
    when nothing could be read, or 128+signal when interrupted."""
    stdout = stdout or sys.stdout
    err = err or sys.stderr
    # The merge, the sweep and the renderers make millions of small objects
    # and no cycles worth collecting in a process that ends with the
    # report; the cyclic GC would keep rescanning the tallies' stacks
    # (bench/report_throughput.py), as in the workers (allocsites.py).
    gc.disable()
    perf = prerequisites.find_perf()
    datafile.check_perf_data(data)
    from .. import interrupts
    # SIGINT, SIGTERM and SIGHUP raise Interrupted from here until the
    # outputs are in place (render/outputs.py writes them to temporary
    # files, removed when interrupted, renamed at the end).
    try:
        with interrupts.Raised():
            return _read_and_render(data, opts, perf, stdout, jobs, err)
    except interrupts.Interrupted as e:
        err.write("allocsites: report interrupted; nothing written\n")
        return 128 + e.sig


def _read_and_render(data, opts, perf, stdout, jobs, err):
    from ..read import reading
    from .. import pipeline
    from ..read.tally import Tally
    from ..analyze import symbolize
    probed = buildids.read_buildids(data)   # {binary: build-ids}, or {}
    symbolizer = symbolize.Symbolizer()
    # addr2line asked about the frames, and the later stages imported,
    # while the reader reads (symbolize.Prefetch)
    with symbolize.Prefetch(symbolizer, warm=_import_later_stages) as ahead:
        try:
            got = reading.read_recording(
                data, options.report_argv(opts),
                lambda: Tally(opts.min_size), perf,
                ENTRY_SCRIPT, probed, jobs=jobs, err=err,
                sweep=_sweep_in_reader(opts), on_frames=ahead.add)
        except reading.ReaderFailed as e:
            raise RecordError(str(e))
    if got is None:   # refused, or nothing read: said
        return 1
    from ..analyze import facts
    known = facts.recording_facts(data, got.scan, probed, perf)
    result = got.result
    rep = pipeline.analyze_and_render(
        result.tally, opts, symbolizer, known.lost, known.lost_reason,
        os.path.abspath(data), out=stdout, err=err,
        handler_errors=result.handler_errors,
        perf_inlines=result.perf_inlines, read_errors=got.read_errors,
        **facts.kwargs(known))
    if rep.bad_options:   # a --tag or --phase that names nothing
        return 2
    return INCOMPLETE if rep.verdict.complete is False else 0


def _import_later_stages():
    """The modules the report needs after reading, imported ahead."""
    import importlib
    for name in ("analyze.assemble", "analyze.liveness", "render.outputs",
                 "render.jsonout", "render.table"):
        importlib.import_module(".." + name, __package__)


def _sweep_in_reader(opts):
    """Whether the native reader runs the liveness sweep itself, on the
    event log in memory (nativesweep.py): where nothing else reads the
    log (the timeline's points, --pprof's threads, --save-profile,
    which holds both); ALLOCSITES_FOLLOW=0 sweeps after the reader
    instead (the same answer; tests, benchmarks)."""
    if opts.timeline or opts.save_profile or getattr(opts, "pprof", None):
        return False
    return os.environ.get("ALLOCSITES_FOLLOW") != "0"


def render_saved(path, opts, stdout=None, err=None):
    """allocsites report --from PATH: the outputs opts ask for,
    rendered from the profile document at path (--save-profile), as the
    recording's report wrote them. The same statuses as run_report: 0, 3
    (incomplete), 2 (the document was made with a --tag or --phase that
    named nothing); 1 when path is not a profile document."""
    from ..analyze import document
    from ..render import outputs
    stdout = stdout or sys.stdout
    err = err or sys.stderr
    try:
        rep = document.load(path)
    except document.BadDocument as e:
        raise RecordError(str(e))
    rep = document.for_render(rep, opts)
    outputs.write_outputs(rep, opts, out=stdout, err=err)
    if rep.bad_options:
        return 2
    return INCOMPLETE if rep.verdict.complete is False else 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    # a path that is not UTF-8 is printed as the bytes it is, as ls
    # prints it, not as a traceback (textio.py)
    textio.reconfigure(sys.stdout)
    try:
        status = _main(argv)
    except SystemExit as e:   # argparse's --help and errors
        if e.code is None or isinstance(e.code, int):
            status = e.code or 0
        else:
            sys.stderr.write("%s\n" % e.code)
            status = 1
    # stdout is flushed here, not by Python at exit: a pipe is block
    # buffered (unless PYTHONUNBUFFERED is set), so a report shorter than
    # the buffer meets a closed pipe only then, where Python can only print
    # "Exception ignored ... BrokenPipeError" and exit 120.
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except OSError as e:
        _quiet_stdout()
        sys.stderr.write("allocsites: error: cannot write the output: %s\n"
                         % (e.strerror or e))
        return 1
    return status


def _main(argv):
    try:
        return dispatch(argv)
    except options.UsageError as e:
        sys.stderr.write("allocsites: %s\n" % e)
        return 2
    except RecordError as e:
        sys.stderr.write("allocsites: %s\n" % e)
        return 1
    except StageError as e:
        sys.stderr.write("allocsites: error: %s\n" % e)
        return 1
    except recording.Stopped as e:
        sys.stderr.write("allocsites: stopped by signal %d; probe events "
                         "removed\n" % e.sig)
        return 128 + e.sig
    except KeyboardInterrupt:
        sys.stderr.write("allocsites: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`| head`, a pager quit): end
        # quietly, as perf script does; Python's own flush at exit would
        # fail again, so stdout goes to /dev/null first.
        _quiet_stdout()
        return 0
    except OSError as e:   # an output that cannot be written: a full disk
        _quiet_stdout()
        sys.stderr.write("allocsites: error: cannot write %s: %s\n"
                         % (e.filename or "the output", e.strerror or e))
        return 1


def _quiet_stdout():
    """stdout to /dev/null, so that nothing flushes into the closed pipe
    again (the Python documentation's "Note on SIGPIPE"); what stdout
    still buffers is dropped."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def run_diff(opts, out=sys.stdout):
    """allocsites diff: both profiles as JSON reports (a recording is
    reported first, its table not shown; a profile document rendered as
    its JSON report), then the diff's outputs."""
    import io
    import tempfile
    from ..analyze import diff
    from ..render import flamegraph

    def json_of_recording(path):
        with tempfile.TemporaryDirectory(prefix="allocsites-diff-") as tmp:
            js = os.path.join(tmp, "r.json")
            status = run_report(path, options.report_options(
                argparse.Namespace(json=js, guest=bool(opts.guest))),
                stdout=io.StringIO())
            if not os.path.exists(js):
                if status != 0:   # the report said why, in its one line
                    raise SystemExit(status)
                raise RecordError("cannot report %s (status %d)"
                                  % (path, status))
            with open(js, encoding="utf-8") as f:
                return f.read()

    def json_of_document(path, doc):
        # the JSON report the document's recording would have given
        from ..analyze import document
        from ..render import jsonout
        try:
            return jsonout.report_dict(document.from_dict(doc, path))
        except document.BadDocument as e:
            raise diff.BadInput(str(e))

    try:
        base = diff.load(opts.base, json_of_recording, json_of_document)
        new = diff.load(opts.new, json_of_recording, json_of_document)
    except FileNotFoundError as e:
        raise RecordError("%s: no such file" % e.filename)
    except diff.BadInput as e:
        raise RecordError(str(e))
    except IsADirectoryError as e:
        raise RecordError("%s: a directory, not a report or recording"
                          % e.filename)
    except PermissionError as e:
        raise RecordError("%s: %s" % (e.filename, e.strerror))
    except (ValueError, KeyError) as e:
        raise RecordError("not a report or recording: %s" % e)
    changes = diff.match_sites(base, new)
    out.write(diff.render_table(opts.base, opts.new, base, new, changes,
                                opts.top))
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump(diff.diff_json(opts.base, opts.new, base, new,
                                     changes), f, indent=1)
        out.write("json: %s\n" % opts.json)
    if opts.svg:
        with open(opts.svg, "w", encoding="utf-8") as f:
            f.write(flamegraph.render_svg(
                diff.svg_stacks(new), "bytes",
                "allocsites diff: %s -> %s" % (opts.base, opts.new),
                "widths: %s; red: grown, blue: shrunk" % opts.new,
                base_stacks=diff.svg_stacks(base)))
        out.write("svg: %s\n" % opts.svg)
    return 0


def dispatch(argv):
    if argv[:1] in (["--version"], ["-V"]):
        from .. import __version__
        from ..render import jsonout, profiledoc
        sys.stdout.write("allocsites %s (JSON report version %d; profile "
                         "document version %d; perf %s)\n"
                         % (__version__, jsonout.VERSION, profiledoc.VERSION,
                            prerequisites.perf_version() or "not found"))
        return 0
    inv = parsers.parse(argv)
    if inv is None:    # allocsites --help
        sys.stdout.write(USAGE)
        return 0
    if inv.form == "report":
        return run_report(inv.input, inv.opts, jobs=inv.jobs)
    if inv.form == "render":
        return render_saved(inv.input, inv.opts)
    if inv.form == "diff":
        return run_diff(inv.opts)
    if inv.form == "record":
        return recording.record(inv.record, inv.program)
    status = recording.record(inv.record, inv.program)
    report_status = run_report(inv.record.output, inv.opts, jobs=inv.jobs)
    return report_status or status
