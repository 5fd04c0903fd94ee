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
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from allocsites_lib import options, parse, perfrun, perfstderr  # noqa: E402
from allocsites_lib.fold import Tally  # noqa: E402


# Exit statuses: 0 the report is complete or could not be checked; 3 it
# is incomplete (events are known to be missing: the outputs say why);
# 130 interrupted (the outputs are partial and say so); 1 the report
# failed; 2 bad options.
INCOMPLETE, INTERRUPTED = 3, 130


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
        self.interrupted = False
        self.stderr = None

    def start(self):
        # perf's own SIGINT handler is gone once Python is loaded (Python
        # puts KeyboardInterrupt in its place, which would abort perf from
        # inside a handler): Ctrl-C is taken here, and the next event ends
        # the report, marked as interrupted.
        signal.signal(signal.SIGINT, self._interrupt)
        self.stderr = perfstderr.Capture()

    def _interrupt(self, _sig, _frame):
        self.interrupted = True

    def event(self, event_name, fields, sample):
        if self.interrupted:
            self.end()
        try:
            self.tally.add(parse.event_from_perf(event_name, fields, sample,
                                                 self.perf_inlines))
        except Exception:  # noqa: BLE001 - see the file comment
            self.handler_errors += 1

    def end(self):
        """Writes the report and exits perf with the report's status."""
        try:
            status = self.finish()
        except OSError as e:
            _fail("%s" % e, 1)
        except Exception as e:  # noqa: BLE001
            _fail("report failed: %s: %s" % (type(e).__name__, e), 1)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

    def finish(self):
        """The report; returns the exit status."""
        perf_said = self.stderr.finish() if self.stderr else []
        from allocsites_lib import pipeline
        from allocsites_lib.symbolize import Symbolizer
        data = pipeline.data_path(self.perf_argv)
        lost, reason = perfrun.count_lost(data)
        report = pipeline.build_report(
            self.tally, self.opts, Symbolizer(), lost, reason, data,
            read_errors=perfstderr.read_errors(perf_said),
            interrupted=self.interrupted)
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
        if self.interrupted:
            return INTERRUPTED
        return INCOMPLETE if report.verdict.complete is False else 0


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
    _RUN.start()


def trace_unhandled(event_name, context, event_fields_dict, perf_sample_dict):
    _RUN.event(event_name, event_fields_dict, perf_sample_dict)


def trace_end():
    _RUN.end()
