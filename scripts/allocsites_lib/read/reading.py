"""The report's reading: the reader chosen, the scan, the fit, the run.

Reads a recording for the report: chooses the reader (allocsites-read,
or perf script workers on time ranges), scans the file, checks that the
reading fits, and runs it; the tally and read errors go back to the
report (cli/command.py), which hands them to pipeline.py.

Every refusal and every failure to read anything is said here, on err,
in the report's words; read_recording then returns None (the report
exits 1).
"""

import os
import sys
import tempfile

from . import (elf, limits, mailbox, native, perfdata, scancache,
               time_ranges, worker_sizing, workers)


class ReaderFailed(Exception):
    """A reader failed (its RuntimeError): one line for the user."""


class Reading:
    """What read_recording read: the reader's result (.tally,
    .handler_errors, .perf_inlines), the recording's scan (None where
    perf script read what the scan could not) and every read error."""

    def __init__(self, result, scan, read_errors):
        self.result = result
        self.scan = scan
        self.read_errors = read_errors


def read_recording(data, report_args, new_tally, perf, entry_script,
                   probed, jobs=None, err=None, sweep=False, on_frames=None):
    """Reads the recording at data into tallies made by new_tally();
    probed: {binary: build-ids} of the recording's FILE.buildids. jobs:
    the number of perf script workers (None: one per CPU, within limits).
    sweep: the native reader runs the liveness sweep itself, on the
    event log in memory (native.run; the perf script workers do not).
    on_frames: native.run's, the raw frames as the native reader meets
    them (the perf script workers hand none over).
    Returns a Reading, or None when the recording cannot be read (said
    on err). Raises interrupts.Interrupted when interrupted, ReaderFailed
    when a reader fails."""
    err = err or sys.stderr
    read_errors = []
    cpus = worker_sizing.cpu_count()
    before = worker_sizing.cpu_use()
    reader = choose_reader(entry_script)
    warning = reader_value_warning()
    if warning:
        err.write(warning + "\n")
    header_damage = []
    scan = scan_recording(data, reader, read_errors, err, header_damage)
    if header_damage:
        # damaged in its header (attributes or sections outside the
        # file): perf script reads nothing either, and its errors would
        # bury this one. Damage among the records: the native reader
        # reads every record before it (perf script, often none), and
        # the report is incomplete (exit 3).
        err.write("allocsites: error: %s\n" % header_damage[0])
        return None
    others = other_events_only(scan)
    if others:
        err.write("allocsites: error: %s has samples of %s only, none of "
                  "the rt probes (sdt_rt:*): not a recording of an "
                  "allocator; record one with: allocsites record -- PROG\n"
                  % (data, ", ".join(others)))
        return None
    if scan is None and not (reader is not None and read_errors):
        reader = None   # perf script reads what the scan cannot
    if reader is None and not perf_script_unwinds(data, probed, scan, err):
        return None
    if scan is not None and not fits(data, scan, reader, err):
        return None
    if reader is None and scan is not None:
        times = scan.times
        k = jobs or worker_sizing.worker_count(
            cpus, len(times), scan.decompressed, worker_sizing.mem_available(),
            worker_sizing.free_cpus(before, worker_sizing.cpu_use(), cpus))
        ranges = time_ranges.split(times, k, *time_ranges.costs(scan))
    else:   # one worker on the whole file, loss from perf report --stats
        times, ranges = [], [(None, None)]
    try:
        result = run_reader(reader, data, report_args, new_tally, perf,
                            entry_script, scan, times, ranges, err,
                            sweep, on_frames)
    except RuntimeError as e:
        raise ReaderFailed(str(e))
    for line in result.passthrough:
        err.write(line + "\n")
    read_errors += result.read_errors
    if not result.tallies:
        for line in read_errors:
            err.write("allocsites: error: %s\n" % line)
        err.write("allocsites: no report: perf script read nothing of %s\n"
                  % data)
        return None
    return Reading(result, scan, read_errors)


def choose_reader(entry_script):
    """The native reader (native.py) unless it is not built or
    ALLOCSITES_READER=perf asks for perf script's workers: its path, or
    None for the workers."""
    return native.reader_path(entry_script) \
        if os.environ.get("ALLOCSITES_READER", "native") != "perf" else None


def reader_value_warning(environ=os.environ):
    """The warning for an ALLOCSITES_READER that is neither perf nor
    native (a typo of the oracle's perf would read with the native
    reader unsaid), or None."""
    value = environ.get("ALLOCSITES_READER")
    if value in (None, "", "native", "perf"):
        return None
    return ("allocsites: warning: ALLOCSITES_READER=%s is neither perf nor "
            "native: the native reader reads" % value)


def other_events_only(scan):
    """The events a recording has samples of, sorted, when none of them
    is an rt probe's (sdt_rt:*, as allocsites record and perf record -e
    sdt_rt:... name them): a perf recording of something else, such as
    cpu-clock. [] otherwise, and for a recording without samples (a
    program that allocated nothing is an empty profile, not an error)."""
    names = sorted(scan.event_samples) if scan is not None else []
    if any(n.startswith("sdt_rt:") for n in names):
        return []
    return names


def scan_recording(data, reader, read_errors, err, header_damage=None):
    """The recording's scan (scancache.py), or None when it cannot be
    scanned: a corrupt file's error joins read_errors (and
    header_damage, when given, if the damage is in the header), a
    scanner bug is a warning."""
    try:
        # the native path needs no sample times (they grow with the file)
        return scancache.scan(data, keep_times=reader is None)
    except perfdata.PerfDataError as e:
        if e.corrupt:
            read_errors.append("%s: %s" % (data, e))
            if header_damage is not None and not e.in_data:
                header_damage.append(read_errors[-1])
    except Exception as e:  # noqa: BLE001 - a scanner bug must not cost the report
        err.write("allocsites: warning: could not scan %s (%s: %s); reading "
                  "it with one perf script worker\n"
                  % (data, type(e).__name__, e))
    return None


def perf_script_unwinds(data, probed, scan, err):
    """Whether perf script can read the recording (said on err if not):
    not DWARF stack copies of a statically linked probed binary."""
    static = [p for p in sorted(probed) if elf.is_static(elf.open_elf(p))]
    if static and scan is not None and scan.unwind == "dwarf":
        # perf 6.1's unwinder stops at the allocator in a static
        # binary: one site, "[no caller] ?", whatever the stack size
        err.write("allocsites: error: cannot report %s with perf script: "
                  "%s is statically linked, and perf's unwinding stops "
                  "at the allocator in such a binary; the native reader "
                  "unwinds it (make builds it; unset ALLOCSITES_READER)\n"
                  % (data, static[0]))
        return False
    return True


def fits(data, scan, reader, err):
    """Whether the reading fits in memory and on disk (limits.py; said
    on err if not)."""
    # Refused before it starts when it cannot fit (limits.py): better than
    # the kernel's OOM killer, or a full disk, halfway through.
    too_big = limits.native_fits(scan.samples, tempfile.gettempdir()) \
        if reader is not None else \
        limits.fits(scan.samples, worker_sizing.mem_available(),
                    scan.decompressed)
    if too_big:
        err.write("allocsites: error: cannot report %s: %s\n"
                  % (data, too_big))
        return False
    return True


def run_reader(reader, data, report_args, new_tally, perf, entry_script,
               scan, times, ranges, err, sweep=False, on_frames=None):
    """Runs the native reader, or the perf script workers on ranges;
    their result (workers.run's or native.run's)."""
    if reader is not None:
        return native.run(reader, data, new_tally(),
                          scan.samples if scan is not None else 0, err,
                          sweep=sweep, on_frames=on_frames)
    return workers.run(
        perf, data, entry_script, report_args, ranges, times, new_tally,
        pids=scan.pids if scan is not None and scan.pids else None,
        stop_early=scan is not None and scan.all_tracepoints,
        return_addresses=scan is not None and scan.unwind == "fp",
        err=err, mailbox_path=mailbox.library_path(entry_script)
        # With several workers on time ranges the dlfilter counted
        # a buffer of frees twice now and then (t_threads 8000,
        # -j 2..5: 4095 frees too many in 2 of 3 runs, also before
        # the native reader; none in 3 runs without it), so only
        # a single worker takes the plain events past perf's glue.
        if os.environ.get("ALLOCSITES_MAILBOX") != "0" and
        len(ranges) == 1 else None)
