# allocsites.py - perf script entry: per-call-site allocation report.
#
#   perf script --no-inline -s scripts/allocsites.py [-- options]
#   perf script --no-inline -s scripts/allocsites.py -- --help
#
# This file only adapts perf's callbacks; the work is in allocsites_lib/
# (parse -> fold -> symbolize -> render), testable without perf.
#
# perf runs this inside its own process with the system Python. An
# exception escaping a handler makes perf abort (SIGABRT) and lose the
# whole report, so every handler catches everything and counts it.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from allocsites_lib import options, parse, perfrun  # noqa: E402
from allocsites_lib.fold import Tally  # noqa: E402


def _fail(message, status=2):
    sys.stdout.flush()
    sys.stderr.write("allocsites: %s\n" % message)
    sys.stderr.flush()
    os._exit(status)  # SystemExit inside perf prints a traceback; this won't


class Run:
    """Everything one perf script run accumulates."""

    def __init__(self, argv):
        self.opts = options.parse(argv)
        self.tally = Tally(self.opts.min_size)
        self.handler_errors = 0
        self.perf_argv = perfrun.perf_argv()
        self.perf_inlines = perfrun.inline_expansion(self.perf_argv)

    def event(self, event_name, fields, sample):
        try:
            self.tally.add(parse.event_from_perf(event_name, fields, sample,
                                                 self.perf_inlines))
        except Exception:  # noqa: BLE001 - see the file comment
            self.handler_errors += 1

    def finish(self):
        from allocsites_lib import pipeline
        from allocsites_lib.symbolize import Symbolizer
        data = pipeline.data_path(self.perf_argv)
        lost, reason = perfrun.count_lost(data)
        report = pipeline.build_report(self.tally, self.opts, Symbolizer(),
                                       lost, reason, data)
        if self.handler_errors:
            report.warnings.append("%d events raised in the handler and were "
                                   "skipped" % self.handler_errors)
        if self.perf_inlines:
            report.warnings.append("perf script ran without --no-inline: "
                                   "slower, and recursion through inlined "
                                   "functions may lose frames")
        if not self.tally.events:
            report.warnings.append("no sdt_rt events in this recording")
        pipeline.write_outputs(report, self.opts)


try:
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        sys.stdout.write(options.parser().format_help())
        sys.stdout.flush()
        os._exit(0)
    _RUN = Run(sys.argv[1:])
except options.UsageError as e:
    _fail(e)
except Exception as e:  # noqa: BLE001
    _fail("cannot start: %s" % e, 1)


def trace_begin():
    pass


def trace_unhandled(event_name, context, event_fields_dict, perf_sample_dict):
    _RUN.event(event_name, event_fields_dict, perf_sample_dict)


def trace_end():
    try:
        _RUN.finish()
    except OSError as e:
        _fail("%s" % e, 1)
    except Exception as e:  # noqa: BLE001
        _fail("report failed: %s: %s" % (type(e).__name__, e), 1)
    sys.stdout.flush()
