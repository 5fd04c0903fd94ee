"""Runs the perf script workers and merges what they counted.

Runs the report's K perf script workers, one per time range, and
collects what they counted: `allocsites report` with perf script.

perf script is single-threaded, and most of a report is perf's: reading
(and, with -z, decompressing) the file, unwinding every stack, building
the Python arguments. So the report runs K of them at once, each on one
time range of the recording:

  1. perfdata.scan() reads the sample times (and the loss) in one cheap
     pass; time_ranges.split() cuts them into K ranges of about equal
     cost (worker_sizing.worker_count() chooses K).
  2. K x `perf script -i FILE --no-inline --time START,END -s
     allocsites.py -- --worker-out DIR/tally.N ...` (run()); perf's
     --time holds every sample in exactly one range (time_ranges.py).
  3. Each worker writes its Tally (pickle, worker_files.py) at trace_end
     instead of a report; this process merges them (collect(),
     Tally.merge) and builds the report with the usual pipeline.

A worker that fails (exit status, signal, no tally) is never dropped
silently: its status and the error lines it printed become read_errors,
which the report turns into warnings and a non-zero exit status.

Progress: each worker writes the time of its latest sample to a side
file every PROGRESS_EVERY events (worker_files.py); with a terminal on
stderr, this process shows the share of the samples done (progress.py).
"""

import bisect
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from .. import interrupts
from . import perf_vdso, time_ranges, worker_files
from .progress import PROGRESS_INTERVAL, Progress, progress_text

MAX_ERROR_LINES = 5         # error lines kept per worker

# Lines of perf's stderr that mean part of the file was not read.
ERROR_MARKERS = ("failed", "couldn't", "can't", "cannot",
                 "error", "corrupt", "problem processing", "invalid",
                 "incompatible", "bad ", "truncated", "unknown sample",
                 "traceback", "allocsites:")


class Worker:
    def __init__(self, index, count, start, end, tmpdir):
        self.index = index
        self.count = count
        self.start = start
        self.end = end
        self.tally_path = os.path.join(tmpdir, "tally.%d" % index)
        self.progress_path = os.path.join(tmpdir, "progress.%d" % index)
        self.stderr_path = os.path.join(tmpdir, "stderr.%d" % index)
        self.proc = None
        self.first = 0       # index of its first sample in the sorted times
        self.samples = 0
        self.stop_after = None   # samples after which it may stop reading

    def name(self):
        if self.count == 1:
            return "perf script"
        return "perf script worker %d of %d (%s)" % (
            self.index + 1, self.count,
            time_ranges.describe_range(self.start, self.end))

    def command(self, perf, data, entry_script, report_args, pids_path=None,
                mailbox_path=None, return_addresses=False):
        """mailbox_path: the built allocsites_mailbox.so (mailbox.py), or
        None: the plain events then come through perf's Python glue.
        return_addresses: the recording's callchains are the kernel's
        frame-pointer walk (parse.kernel_callchain), said to the script,
        which with pids gets no perf_sample_dict to tell it by."""
        cmd = [perf, "script", "-i", data, "--no-inline", "--max-stack",
               str(MAX_STACK)]
        window = time_ranges.time_option(self.start, self.end)
        if window:
            cmd += ["--time", window]
        if mailbox_path:
            cmd += ["--dlfilter", mailbox_path,
                    "--dlarg", str(self.stop_after or 0)]
        cmd += ["-s", entry_script, "--", "--worker-out", self.tally_path,
                "--worker-progress", self.progress_path]
        if mailbox_path:
            cmd += ["--worker-mailbox", mailbox_path]
        if pids_path:
            cmd += ["--worker-pids", pids_path]
        if return_addresses:
            cmd += ["--worker-return-addresses"]
        if self.stop_after is not None:
            cmd += ["--worker-samples", str(self.stop_after)]
        return cmd + list(report_args)


# perf script stops unwinding at 127 frames (the kernel.perf_event_max_stack
# sysctl) unless told otherwise, whatever the stack copy holds. A stack
# copy of at most 65528 bytes holds at most 8191 frames (8 bytes each at
# the least: a return address).
MAX_STACK = 8192


# tallies: how many workers' tallies were merged (0: nothing to report);
# passthrough: perf's other stderr lines, once each.
Result = collections.namedtuple(
    "Result", "tally tallies handler_errors perf_inlines read_errors "
              "passthrough")


def error_lines(text):
    """perf's stderr -> (lines that say part of the file was not read,
    other non-empty lines)."""
    errors, other = [], []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        low = line.lower()
        (errors if any(m in low for m in ERROR_MARKERS) else other).append(
            line)
    return errors, other


def collect(workers, tally_factory):
    """Merges the workers' tallies; returns a Result. read_errors: one
    line per problem (status, missing tally, perf's error lines)."""
    tally = tally_factory()
    tallies = handler_errors = 0
    perf_inlines = False
    read_errors = []
    passthrough = []
    for w in workers:
        status = w.proc.returncode if w.proc is not None else None
        try:
            with open(w.stderr_path, "r", encoding="utf-8",
                      errors="replace") as f:
                errors, other = error_lines(f.read())
        except OSError:
            errors, other = [], []
        for line in other:
            if line not in passthrough:
                passthrough.append(line)
        problems = []
        if status is None:
            problems.append("%s did not run" % w.name())
        elif status < 0:
            problems.append("%s was killed by signal %d" % (w.name(), -status))
        elif status > 0:
            problems.append("%s exited with status %d" % (w.name(), status))
        got_tally = False
        try:
            part, errs, inlines = worker_files.read_tally(w.tally_path)
            tally.merge(part)
            handler_errors += errs
            perf_inlines = perf_inlines or inlines
            got_tally = True
            tallies += 1
        except FileNotFoundError:
            problems.append("%s wrote no tally: its samples are missing"
                            % w.name())
        except (OSError, ValueError, TypeError) as e:
            problems.append("%s: its tally cannot be read (%s): its samples "
                            "are missing" % (w.name(), e))
        if problems or errors:
            if not problems and got_tally:
                problems.append("%s reported errors" % w.name())
            read_errors.extend(problems)
            read_errors.extend("%s: perf: %s" % (w.name(), line)
                               for line in errors[:MAX_ERROR_LINES])
            if len(errors) > MAX_ERROR_LINES:
                read_errors.append("%s: perf: (%d more lines)" % (
                    w.name(), len(errors) - MAX_ERROR_LINES))
    return Result(tally, tallies, handler_errors, perf_inlines, read_errors,
                  passthrough)


def _unblock_signals():
    signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupts.STOP_SIGNALS)


def run(perf, data, entry_script, report_args, ranges, times, tally_factory,
        pids=None, stop_early=False, err=sys.stderr, progress=None,
        mailbox_path=None, return_addresses=False):
    """Runs one worker per range of time_ranges.split(); returns
    collect()'s Result. pids: {thread id: process id} for the workers,
    or None (they then read it from perf_sample_dict). mailbox_path: the
    built allocsites_mailbox.so, used with pids only (mailbox.py).
    return_addresses: the recording is --unwind fp (Worker.command).
    stop_early: times are exactly the samples perf hands the script, so a
    worker may stop reading once it has had all of its range's (all but
    the last). Raises interrupts.Interrupted on SIGINT, SIGTERM or
    SIGHUP, after stopping the workers. Every temporary file is removed,
    whatever happens."""
    progress = progress or Progress(err)
    workers = []
    tmpdir = None
    saved = {}
    try:
        for sig in interrupts.STOP_SIGNALS:
            saved[sig] = signal.signal(sig, interrupts.raise_interrupted)
        vdso_before = perf_vdso.perf_vdso_files()
        tmpdir = tempfile.mkdtemp(prefix="allocsites-report-")
        workers = [Worker(i, len(ranges), start, end, tmpdir)
                   for i, (start, end) in enumerate(ranges)]
        for w in workers:
            w.first, w.samples = time_ranges.samples_in(times, w.start, w.end)
            if stop_early and w.end is not None and w.samples:
                w.stop_after = w.samples
        pids_path = None
        if pids is not None:
            pids_path = os.path.join(tmpdir, "pids")
            worker_files.write_pids(pids_path, pids)
        for w in workers:
            # Signals wait until the worker has a handle (then _stop kills
            # it); the worker itself starts with them unblocked.
            signal.pthread_sigmask(signal.SIG_BLOCK, interrupts.STOP_SIGNALS)
            try:
                with open(w.stderr_path, "wb") as stderr:
                    w.proc = subprocess.Popen(
                        w.command(perf, data, entry_script, report_args,
                                  pids_path,
                                  mailbox_path if pids_path else None,
                                  return_addresses),
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=stderr, preexec_fn=_unblock_signals)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK,
                                       interrupts.STOP_SIGNALS)
        _wait(workers, times, progress)
        progress.clear()
        return collect(workers, tally_factory)
    except OSError as e:
        raise RuntimeError("cannot run perf: %s" % e)
    finally:
        # A second Ctrl-C must not cut the cleanup short.
        for sig in saved:
            signal.signal(sig, signal.SIG_IGN)
        progress.clear()
        killed = _stop(workers)
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
            perf_vdso.remove_perf_vdso_files(vdso_before, killed + sum(
                1 for w in workers if w.stop_after is not None))
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _wait(workers, times, progress):
    if not progress.enabled:
        for w in workers:
            w.proc.wait()
        return
    total = len(times)
    while True:
        running = [w for w in workers if w.proc.poll() is None]
        if not running:
            return
        done = 0
        for w in workers:
            if w.proc.returncode is not None:
                done += w.samples
                continue
            t = worker_files.read_progress(w.progress_path)
            if t is not None:
                done += max(0, min(w.samples,
                                   bisect.bisect_right(times, t) - w.first))
        progress.show(progress_text(done, total))
        try:
            running[0].proc.wait(timeout=PROGRESS_INTERVAL)
        except subprocess.TimeoutExpired:
            pass


def _stop(workers):
    """Kills the workers still running (an interrupted report) and reaps
    them all, so none outlives the report or writes to a removed dir.
    Returns how many it killed."""
    killed = 0
    for w in workers:
        if w.proc is not None and w.proc.poll() is None:
            try:
                w.proc.kill()
                killed += 1
            except OSError:
                pass
    for w in workers:
        if w.proc is not None:
            w.proc.wait()
    return killed
