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
#
# `allocsites report` runs several of these at once, each on a time range
# (--time), with --worker-out: then trace_end writes the Tally there and
# the command merges them and reports (allocsites_lib/read/workers.py).
import gc
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from allocsites_lib.read import (hotpath, parse, perfrun,  # noqa: E402
                                 perfstderr, worker_files)
from allocsites_lib.cli import options  # noqa: E402
from allocsites_lib import textio  # noqa: E402
from allocsites_lib.errors import StageError  # noqa: E402
from allocsites_lib.read.tally import Tally  # noqa: E402

# a path that is not UTF-8 is printed as its bytes (textio.py)
textio.reconfigure(sys.stdout)


# Exit statuses: 0 the report is complete or could not be checked; 3 it
# is incomplete (events are known to be missing: the outputs say why);
# 130 interrupted (the outputs are partial and say so); 1 the report
# failed; 2 bad options.
INCOMPLETE, INTERRUPTED = 3, 130
PROGRESS_EVERY = worker_files.PROGRESS_EVERY


def _flush_stdout():
    """Flushes stdout; False when its reader went away (`| head`): stdout
    is /dev/null from then on, so that no later flush (perf's, at exit)
    fails again -- the Python documentation's "Note on SIGPIPE". perf
    runs Python with SIGPIPE ignored: a closed pipe is a BrokenPipeError,
    which escaping a handler would abort perf."""
    try:
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        return False


def _fail(message, status=2):
    _flush_stdout()
    sys.stderr.write("allocsites: %s\n" % message)
    sys.stderr.flush()
    os._exit(status)  # SystemExit inside perf prints a traceback; this won't


class Run:
    """Everything one perf script run accumulates."""

    def __init__(self, argv):
        self.opts = options.parse(argv)
        self.handler_errors = 0
        self.perf_argv = perfrun.perf_argv()
        self.perf_inlines = perfrun.inline_expansion(self.perf_argv)
        self.interrupted = False
        self.stderr = None
        # A worker gets the process id of each thread from the command
        # (it read the recording); then perf need not build
        # perf_sample_dict (see trace_unhandled).
        self.pids = None
        if self.opts.worker_pids:
            self.pids = worker_files.read_pids(self.opts.worker_pids)
        self.reader = parse.Reader(
            self.perf_inlines, self.pids,
            True if self.opts.worker_return_addresses else None)
        self.use_tally(Tally(self.opts.min_size))
        self.delivered = 0   # events perf handed over, whatever they were
        # A worker whose time range ends before the recording does stops
        # once it has had all its samples (the command counted them):
        # reading the rest of the file would only cost time.
        self.stop_after = self.opts.worker_samples if self.opts.worker_out \
            else None
        self.progress = None
        self.next_progress = PROGRESS_EVERY
        if self.opts.worker_progress:
            self.progress = worker_files.ProgressWriter(
                self.opts.worker_progress)
        # The plain events through perf's dlfilter (mailbox.py), from
        # trace_begin on: perf loads the filter before the script.
        self.mailbox = None

    def use_tally(self, tally):
        """Events go to tally from now on (docs/notes/2026-design-history.md,
        "Per-event handler cost", gives one without an event log)."""
        if getattr(self, "handle", None) is not None:
            self.handle.flush()
        self.tally = tally
        # Reader.read then Tally.add_fields, fused for allocs and frees;
        # the tally's event log is complete after self.handle.flush().
        self.handle = hotpath.handler(self.reader, tally)

    def start(self):
        # perf's own SIGINT handler is gone once Python is loaded (Python
        # puts KeyboardInterrupt in its place, which would abort perf from
        # inside a handler): Ctrl-C is taken here, and the next event ends
        # the report, marked as interrupted.
        signal.signal(signal.SIGINT, self._interrupt)
        # A worker's stderr goes to the command, which reads it itself.
        if not self.opts.worker_out:
            self.stderr = perfstderr.Capture()
        if self.opts.worker_mailbox and self.pids is not None:
            from allocsites_lib.read import mailbox
            try:
                self.mailbox = mailbox.Mailbox(self.opts.worker_mailbox)
            except (OSError, ValueError):
                self.mailbox = None   # perf did not load it: as before

    def _interrupt(self, _sig, _frame):
        self.interrupted = True

    def event(self, event_name, fields, sample=None):
        if self.interrupted:
            self.end()
        if self.mailbox is not None:
            self.read_mailbox(event_name, fields)
        self.delivered += 1
        try:
            time = self.handle(event_name, fields, sample)
            # time is None for a malformed event: write() ignores it
            if self.progress and self.delivered >= self.next_progress:
                self.next_progress = self.delivered + PROGRESS_EVERY
                self.progress.write(time)
        except Exception:  # noqa: BLE001 - see the file comment
            self.handler_errors += 1
        if self.stop_after is not None and self.delivered >= self.stop_after:
            self.end()

    def read_mailbox(self, event_name=None, fields=None):
        """The plain events the dlfilter kept for this handler since perf
        last called it, which all came before the event it brings now
        (event_name, fields: perf's first plain event checks the filter's
        reading of it, mailbox.Mailbox.verify)."""
        box = self.mailbox
        try:
            if box.pending():
                self.delivered += self.handle.mail(box.take(),
                                                   box.event_name)
            elif event_name is not None and box.verifying() and \
                    parse.event_kind(event_name) == "plain":
                box.verify(event_name, fields)
        except Exception:  # noqa: BLE001 - see the file comment
            self.handler_errors += 1

    def end(self):
        """Writes the report and exits perf with the report's status."""
        gc.enable()
        if self.mailbox is not None:
            self.read_mailbox()
        try:
            self.handle.flush()
            status = self.finish()
            if not _flush_stdout():
                status = 0
        except BrokenPipeError:   # the reader went away: end quietly
            _flush_stdout()
            status = 0
        except options.UsageError as e:   # --weight peak without frees...
            _fail("%s" % e, 2)
        except StageError as e:   # allocsites-sweep not built, or failed
            _fail("error: %s" % e, 1)
        except OSError as e:
            _fail("%s" % e, 1)
        except Exception as e:  # noqa: BLE001
            _fail("report failed: %s: %s" % (type(e).__name__, e), 1)
        sys.stderr.flush()
        os._exit(status)

    def finish(self):
        """The report (a worker: its Tally); returns the exit status."""
        if self.opts.worker_out:
            worker_files.write_tally(self.opts.worker_out, self.tally,
                                     self.handler_errors, self.perf_inlines,
                                     self.mailbox.state() if self.mailbox
                                     else None)
            return INTERRUPTED if self.interrupted else 0
        perf_said = self.stderr.finish() if self.stderr else []
        from allocsites_lib import pipeline
        from allocsites_lib.analyze.symbolize import Symbolizer
        from allocsites_lib.analyze import facts
        data = perfrun.data_path(self.perf_argv)
        known = recording_facts(data)
        report = pipeline.analyze_and_render(
            self.tally, self.opts, Symbolizer(), known.lost,
            known.lost_reason, data, handler_errors=self.handler_errors,
            perf_inlines=self.perf_inlines,
            read_errors=perfstderr.read_errors(perf_said),
            interrupted=self.interrupted, **facts.kwargs(known))
        if self.interrupted:
            return INTERRUPTED
        if report.bad_options:   # a --tag or --phase that names nothing
            return 2
        return INCOMPLETE if report.verdict.complete is False else 0


def recording_facts(data):
    """The facts of the recording perf script reads (read/facts.py), as
    `allocsites report` has them: from one scan of the file and its
    FILE.buildids, else the loss from perf report --stats (a pipe, a file
    the scan cannot read)."""
    from allocsites_lib.analyze import facts   # the report only
    from allocsites_lib.read import scancache
    from allocsites_lib.record import buildids
    scan, probed = None, {}
    if data != "-":
        try:
            scan = scancache.scan(data)
        except Exception:  # noqa: BLE001 - perf report --stats says it instead
            scan = None
        probed = buildids.read_buildids(data)
    return facts.recording_facts(data, scan, probed)


try:
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        try:
            sys.stdout.write(options.parser().format_help())
        except BrokenPipeError:
            pass
        _flush_stdout()
        os._exit(0)
    _RUN = Run(sys.argv[1:])
except options.UsageError as e:
    _fail(e)
except Exception as e:  # noqa: BLE001
    _fail("cannot start: %s" % e, 1)


# The per-event path allocates no reference cycles, and the cyclic GC
# would keep scanning perf's per-event dicts: perf script with an empty
# handler took 13.8 s instead of 15.4 s on the minicc recording with it
# off (one run each). It is back on for trace_end.
gc.disable()


def trace_begin():
    _RUN.start()


if _RUN.pids is None:
    def trace_unhandled(event_name, context, event_fields_dict,
                        perf_sample_dict):
        _RUN.event(event_name, event_fields_dict, perf_sample_dict)
else:
    # Three arguments: perf builds perf_sample_dict only for a handler that
    # takes it, and it is about a tenth of perf's work per event here.
    # Thread and time come from the tracepoint's common_pid (the thread id)
    # and common_s/common_ns, the process from the worker's pids.
    def trace_unhandled(event_name, context, event_fields_dict):
        _RUN.event(event_name, event_fields_dict)


def trace_end():
    _RUN.end()
