"""`allocsites report` with K perf script workers, split by time.

perf script is single-threaded, and most of a report is perf's: reading
(and, with -z, decompressing) the file, unwinding every stack, building
the Python arguments. So the report runs K of them at once, each on one
time range of the recording:

  1. perfdata.scan() reads the sample times (and the loss) in one cheap
     pass; split() cuts them into K ranges of about equal sample counts.
  2. K x `perf script -i FILE --no-inline --time START,END -s
     allocsites.py -- --worker-out DIR/tally.N ...`. perf's --time range
     is inclusive at both ends, in ns (time-utils.c:
     perf_time__skip_sample drops t < start or t > end), so the ranges
     [start_i, start_(i+1) - 1] hold every sample exactly once. Records
     perf wrote twice share their nanosecond, so they land in the same
     worker, where Tally's duplicate filter sees both.
  3. Each worker writes its Tally (pickle) at trace_end instead of a
     report; this process merges them (Tally.merge) and builds the report
     with the usual pipeline.

A worker that fails (exit status, signal, no tally) is never dropped
silently: its status and the error lines it printed become read_errors,
which the report turns into warnings and a non-zero exit status.

Progress: each worker writes the time of its latest sample to a side
file every PROGRESS_EVERY events; with a terminal on stderr, this
process shows the share of the samples done.
"""

import bisect
import glob
import collections
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TALLY_VERSION = 1
PROGRESS_EVERY = 4096       # events between a worker's progress writes
PROGRESS_INTERVAL = 0.25    # seconds between progress lines
MIN_SAMPLES_PER_WORKER = 20000  # below this a second perf process costs more
MAX_ERROR_LINES = 5         # error lines kept per worker

# Lines of perf's stderr that mean part of the file was not read.
ERROR_MARKERS = ("failed", "couldn't", "can't", "cannot",
                 "error", "corrupt", "problem processing", "invalid",
                 "incompatible", "bad ", "truncated", "unknown sample",
                 "traceback", "allocsites:")


# ---------------------------------------------------------------- worker

def write_tally(path, tally, handler_errors, perf_inlines, mailbox=None):
    """The worker's result, written to path.tmp then renamed, so the
    parent never reads half a file. mailbox: the dlfilter's state at the
    end (mailbox.py; None without it), for tests."""
    payload = {"version": TALLY_VERSION, "tally": tally,
               "handler_errors": handler_errors,
               "perf_inlines": perf_inlines, "mailbox": mailbox}
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.rename(tmp, path)


def read_tally(path):
    """(tally, handler_errors, perf_inlines) from write_tally's file;
    raises OSError or ValueError."""
    with open(path, "rb") as f:
        try:
            payload = pickle.load(f)
        except Exception as e:  # noqa: BLE001 - any unpickling failure
            raise ValueError("unreadable tally file: %s" % e)
    if not isinstance(payload, dict) or \
            payload.get("version") != TALLY_VERSION:
        raise ValueError("tally file of another version")
    return payload["tally"], payload["handler_errors"], payload["perf_inlines"]


def write_pids(path, pids):
    """{thread id: process id} for the workers (see parse.Reader)."""
    with open(path, "wb") as f:
        pickle.dump(dict(pids), f, protocol=pickle.HIGHEST_PROTOCOL)


def read_pids(path):
    with open(path, "rb") as f:
        pids = pickle.load(f)
    if not isinstance(pids, dict):
        raise ValueError("%s: not a map of thread ids" % path)
    return pids


class ProgressWriter:
    """Worker side: the latest sample time, fixed width, at offset 0."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def write(self, sample_time):
        try:
            os.pwrite(self.fd, b"%020d" % sample_time, 0)
        except (OSError, TypeError):
            pass


def read_progress(path):
    """The time a worker last wrote, or None."""
    try:
        with open(path, "rb") as f:
            text = f.read(20)
    except OSError:
        return None
    return int(text) if len(text) == 20 and text.isdigit() else None


# ---------------------------------------------------------------- split

def split(times, k, read_us=0.0, work=None):
    """Sorted sample times -> at most k ranges (start, end) of ns,
    inclusive; start None: from the beginning, end None: to the end.

    The ranges cost their workers the same, by this model: a worker reads
    the file up to its range's last sample and stops there (the last one
    reads it all), at read_us per sample read, and processes its own
    samples, at the us of work: (time, us) of a sample of the samples,
    sorted (each stands for len(times) / len(work) of them); without work
    every sample costs 1. With read_us 0 and no work the ranges hold equal
    numbers of samples. A run of equal times is never cut, so there may
    be fewer than k ranges. perf never drops a sample of time 0 for
    --time, so with one of those there is one range."""
    n = len(times)
    if k <= 1 or n == 0 or times[0] == 0:
        return [(None, None)]
    if work:
        work_times = [t for t, _ in work]
        scale = n / len(work)
        cumulative, total = [], 0.0
        for _, us in work:
            total += us * scale
            cumulative.append(total)

        def processed(j):   # cost of processing samples [0, j)
            i = bisect.bisect_right(work_times, times[j - 1]) if j else 0
            return cumulative[i - 1] if i else 0.0
    else:
        def processed(j):
            return float(j)

    def end_of(first, budget):
        """The smallest j > first with read_us * j + processed(j) -
        processed(first) >= budget (n when there is none)."""
        if first >= n:
            return n
        base = processed(first)
        lo, hi = first + 1, n
        while lo < hi:
            mid = (lo + hi) // 2
            if read_us * mid + processed(mid) - base >= budget:
                hi = mid
            else:
                lo = mid + 1
        return lo

    whole = read_us * n + processed(n)
    lo, hi = 0.0, whole
    for _ in range(50):   # the last worker's cost falls as budget grows
        budget = (lo + hi) / 2
        j = 0
        for _ in range(k - 1):
            j = end_of(j, budget)
        if whole - processed(j) > budget:
            lo = budget
        else:
            hi = budget
    ends, j = [], 0
    for _ in range(k - 1):
        j = end_of(j, hi)
        ends.append(j)
    starts = []
    for j in ends:
        if j >= n:
            break
        t = times[j]
        if t > times[0] and (not starts or t > starts[-1]):
            starts.append(t)
    ranges = []
    begin = None
    for st in starts:
        ranges.append((begin, st - 1))
        begin = st
    ranges.append((begin, None))
    return ranges


def format_time(ns):
    """ns -> perf's 'seconds.nanoseconds' (parse_nsec_time reads up to 9
    fraction digits)."""
    return "%d.%09d" % divmod(ns, 1000000000)


def time_option(start, end):
    """--time value for a range of split(), or None for the whole file."""
    if start is None and end is None:
        return None
    return "%s,%s" % ("" if start is None else format_time(start),
                      "" if end is None else format_time(end))


def describe_range(start, end):
    def fmt(ns):
        return "%d.%06d" % (ns // 1000000000, ns % 1000000000 // 1000)
    if start is None and end is None:
        return "the whole recording"
    return "samples from %s to %s" % (
        "the start" if start is None else fmt(start),
        "the end" if end is None else fmt(end))


def samples_in(times, start, end):
    """(index of the first, count) of the sorted times in [start, end]."""
    lo = 0 if start is None else bisect.bisect_left(times, start)
    hi = len(times) if end is None else bisect.bisect_right(times, end)
    return lo, hi - lo


def worker_count(cpus, samples, decompressed, mem_available, free=None):
    """How many workers: one per CPU, but not more than the samples
    justify, nor more than the memory holds (perf 6.1 keeps every
    decompressed record of a -z file in memory until it exits), nor more
    than the CPUs other processes left free (free, from cpu_use(); every
    worker reads the file, so a worker without a CPU of its own costs
    more than it saves)."""
    k = max(1, cpus)
    k = min(k, max(1, samples // MIN_SAMPLES_PER_WORKER))
    if decompressed and mem_available:
        k = min(k, max(1, mem_available // (decompressed + (64 << 20))))
    if free is not None:
        k = min(k, max(1, int(free + 0.5)))
    return k


# perf script's cost per sample, measured on the 213431 samples of
# minicc 500 (perf 6.1 on the 2-CPU VM, -z, 8 KiB stacks): reading the
# file, 7.0 s (3.9 ns a decompressed byte); handing the samples to
# allocsites.py, 8.0 s more. Its lexing samples (96 bytes of stack below
# main) cost less than its parsing ones (570): 22 us a sample and 0.064
# us a byte of stack to unwind give the 8.0 s and the best split of two
# workers found by trying (71% of the samples to the first). Reading an
# uncompressed file is a guess: a quarter of the cost (the page cache
# instead of zstd and fresh memory).
READ_US_PER_BYTE = {True: 0.0039, False: 0.001}
SAMPLE_US = 22.0
STACK_US_PER_BYTE = 0.064
MEAN_SAMPLE_US = 37.5   # without stack depths: minicc's mean


def costs(scan):
    """(read_us, work) for split(), from a perfdata.Scan."""
    if not scan.times:
        return 0.0, None
    per_sample = (scan.decompressed if scan.compressed else scan.data_size) \
        / len(scan.times)
    read_us = READ_US_PER_BYTE[scan.compressed] * per_sample
    if not scan.depths:
        return read_us / MEAN_SAMPLE_US, None
    return read_us, [(t, SAMPLE_US + STACK_US_PER_BYTE * depth)
                     for t, depth in scan.depths]


def cpu_use():
    """(busy CPU seconds of the machine, of this process, monotonic time):
    two of them give the CPUs other processes kept busy in between."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    busy = (sum(fields) - fields[3] - fields[4]) / ticks
    mine = os.times()
    return busy, mine.user + mine.system, time.monotonic()


def free_cpus(before, after, cpus):
    """CPUs not used by other processes between two cpu_use() values, or
    None when the interval is too short to tell."""
    if before is None or after is None or after[2] - before[2] < 0.1:
        return None
    others = (after[0] - before[0]) - (after[1] - before[1])
    return max(0.0, cpus - others / (after[2] - before[2]))


def cpu_count():
    """CPUs this process may use: its affinity, within its cgroup's quota
    (cpu.max), which a container sets and the CPU count does not show."""
    from . import limits
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = os.cpu_count() or 1
    return limits.cpus_available(affinity)


def mem_available():
    """Bytes available: MemAvailable, within the cgroup's memory.max."""
    from . import limits
    return limits.memory_available()


# ---------------------------------------------------------------- progress

def progress_text(done, total):
    """'allocsites: report 45% (96000 of 213431 samples)'."""
    if total <= 0:
        return "allocsites: report running"
    done = max(0, min(done, total))
    return "allocsites: report %d%% (%d of %d samples)" % (
        100 * done // total, done, total)


class Progress:
    """One line on a terminal, rewritten in place (\\r) at most every
    `interval` seconds and erased by clear(). Silent unless the stream is
    a terminal."""

    def __init__(self, stream, interval=PROGRESS_INTERVAL,
                 clock=time.monotonic, enabled=None):
        self.stream = stream
        self.interval = interval
        self.clock = clock
        if enabled is None:
            try:
                enabled = stream.isatty()
            except (AttributeError, ValueError):
                enabled = False
        self.enabled = enabled
        self.last_time = None
        self.last_text = None
        self.width = 0

    def show(self, text):
        if not self.enabled or text == self.last_text:
            return
        now = self.clock()
        if self.last_time is not None and now - self.last_time < self.interval:
            return
        self.last_time = now
        self.last_text = text
        pad = max(0, self.width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self.width = len(text)

    def clear(self):
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
            self.last_text = None


# ---------------------------------------------------------------- parent

class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP while the workers ran."""

    def __init__(self, sig):
        Exception.__init__(self, sig)
        self.sig = sig


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
            self.index + 1, self.count, describe_range(self.start, self.end))

    def command(self, perf, data, entry_script, report_args, pids_path=None,
                mailbox_path=None):
        """mailbox_path: the built allocsites_mailbox.so (mailbox.py), or
        None: the plain events then come through perf's Python glue."""
        cmd = [perf, "script", "-i", data, "--no-inline", "--max-stack",
               str(MAX_STACK)]
        window = time_option(self.start, self.end)
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
            part, errs, inlines = read_tally(w.tally_path)
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


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(sig, _frame):
    raise Interrupted(sig)


def _unblock_signals():
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def run(perf, data, entry_script, report_args, ranges, times, tally_factory,
        pids=None, stop_early=False, err=sys.stderr, progress=None,
        mailbox_path=None):
    """Runs one worker per range of split(); returns collect()'s Result.
    pids: {thread id: process id} for the workers, or None (they then
    read it from perf_sample_dict). mailbox_path: the built
    allocsites_mailbox.so, used with pids only (mailbox.py). stop_early: times are exactly the
    samples perf hands the script, so a worker may stop reading once it
    has had all of its range's (all but the last). Raises Interrupted on
    SIGINT, SIGTERM or SIGHUP, after stopping the workers. Every
    temporary file is removed, whatever happens."""
    progress = progress or Progress(err)
    workers = []
    tmpdir = None
    saved = {}
    try:
        for sig in STOP_SIGNALS:
            saved[sig] = signal.signal(sig, _raise_interrupted)
        vdso_before = perf_vdso_files()
        tmpdir = tempfile.mkdtemp(prefix="allocsites-report-")
        workers = [Worker(i, len(ranges), start, end, tmpdir)
                   for i, (start, end) in enumerate(ranges)]
        for w in workers:
            w.first, w.samples = samples_in(times, w.start, w.end)
            if stop_early and w.end is not None and w.samples:
                w.stop_after = w.samples
        pids_path = None
        if pids is not None:
            pids_path = os.path.join(tmpdir, "pids")
            write_pids(pids_path, pids)
        for w in workers:
            # Signals wait until the worker has a handle (then _stop kills
            # it); the worker itself starts with them unblocked.
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            try:
                with open(w.stderr_path, "wb") as stderr:
                    w.proc = subprocess.Popen(
                        w.command(perf, data, entry_script, report_args,
                                  pids_path,
                                  mailbox_path if pids_path else None),
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=stderr, preexec_fn=_unblock_signals)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
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
            remove_perf_vdso_files(vdso_before, killed + sum(
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
            t = read_progress(w.progress_path)
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


# perf script writes the recorded [vdso] image to a temporary file of this
# name (util/vdso.c: the directory is fixed) and removes it when it ends
# normally. A worker that stops early (os._exit once it has its samples)
# or is killed leaves it behind: one 8 KiB file per worker and report.
PERF_VDSO_GLOB = "/tmp/perf-vdso.so-*"


def perf_vdso_files():
    return set(glob.glob(PERF_VDSO_GLOB))


def remove_perf_vdso_files(before, at_most):
    """Removes the vdso files that appeared while the workers ran, if there
    are no more of them than workers that could have left one (early
    stops and kills): then they are ours. More means another perf ran at
    the same time and may still need its file: then none is touched."""
    new = perf_vdso_files() - before
    if not new or len(new) > at_most:
        return
    for path in new:
        try:
            os.unlink(path)
        except OSError:
            pass
