"""The allocsites command: record, report, or both in one go. The
command line is parsers.py's; this module does the work."""

import gc
import json
import os
import signal
import subprocess
import sys
import tempfile

# The report's modules (pipeline, fold, flamegraph, diff, reading) are
# imported where a report is made, not here: `allocsites record` does not need them,
# and their imports were a tenth of its fixed cost.
from .. import SCRIPTS_DIR
from . import parsers, options
from ..read import perfdata, perfrun, scancache
from ..record import (buildids, datafile, eventlock, perfcommand,
                      prerequisites, probeevents, programenv, runstate,
                      unwindchoice, writerpriority, writerwake)
from ..record.binaries import (probed_binaries, process_binaries,
                               resolve_library, resolve_program,
                               unprobed_code)
from ..record.tracefs import Tracefs, listed_events
from ..analyze import completeness
from ..read.parse import event_kind
from ..record.errors import RecordError
from ..render.text import human_bytes, lost_words

ENTRY_SCRIPT = os.path.join(SCRIPTS_DIR, "allocsites.py")
USAGE = parsers.USAGE


class Usage(Exception):
    """A usage error found after parsing: one line, status 2."""


class Interrupts:
    """While perf runs, SIGINT/SIGTERM/SIGHUP are passed to perf as SIGINT
    (it stops the program and writes its data); this process remembers
    them, so the probe events are still removed afterwards."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.child = None
        self.received = None
        self.saved = {}

    def __enter__(self):
        for sig in self.SIGNALS:
            self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, sig, _frame):
        self.received = sig
        # Ctrl-C reaches perf through the terminal too, but a SIGINT sent
        # to this process alone (kill -INT) does not: perf is told in
        # every case (a second SIGINT only sets its stop flag again).
        if self.child is not None:
            try:
                self.child.send_signal(signal.SIGINT)
            except OSError:
                pass

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        return False


class Stopped(Exception):
    """SIGTERM or SIGHUP during recording: clean up and exit 128+signal."""

    def __init__(self, sig):
        Exception.__init__(self, sig)
        self.sig = sig


def record(opts, argv, out=sys.stderr):
    """Records argv with RecordOptions opts; returns perf record's exit
    status. opts.sample > 0 records the sampled stream (rt:sample) at that
    mean gap instead of every allocation. Ctrl-C stops the program and
    keeps the recording (as perf does); SIGTERM and SIGHUP raise Stopped
    once the probe events are removed."""
    output = opts.output
    alloc_probe = "sample" if opts.sample else "alloc"
    pid = getattr(opts, "pid", None)
    if not argv and pid is None:
        raise Usage("no program given after --")
    perf = prerequisites.find_perf()
    prerequisites.check_privileges()
    prog, name, binaries = probe_targets(opts, argv, pid, alloc_probe)
    unwind = choose_unwind(opts, prog, binaries, alloc_probe, out)
    moved = check_output_path(output)
    tracefs = Tracefs()
    events = probeevents.ProbeEvents(perf)
    # Signals are held from the first probe event to the last removal: an
    # interrupted run must never leave events behind.
    with Interrupts() as interrupts:
        status = None
        try:
            tracefs.ensure()
            events.tracefs = tracefs.path
            events.state = runstate.RunState()
            allocs, plain = add_events(events, tracefs, binaries, alloc_probe,
                                       opts, out)
            if interrupts.received is None:
                status = run_perf(perf, opts, argv, pid, unwind, allocs,
                                  plain, events, interrupts)
        finally:
            clean_up(events, tracefs, out)
    check_recording(output, status, interrupts.received, out)
    out.write(moved)
    scan = scan_recording(output, interrupts.received == signal.SIGINT and
                          pid is None)
    summarize(perf, output, out, scan)
    if pid is not None:
        out.write("allocsites: attached to %s: its allocations before the "
                  "attach are not in the recording%s\n"
                  % (name, "" if runstate.alive(pid) else
                     "; it exited while attached"))
    buildids.write_buildids(output, [path for path, _ in binaries])
    if scan is not None:
        warn_unprobed(scan.code, [path for path, _ in binaries], out)
    return record_status(status, pid, name, argv, interrupts.received, out)


def probe_targets(opts, argv, pid, alloc_probe):
    """(program path, its name for messages, [(path, {probe names})] of
    the binaries to probe): the program started (argv) or attached to
    (pid), its libraries and --lib's; a RecordError if none has the
    allocation probe."""
    extra = [resolve_library(lib) for lib in opts.libs]
    if pid is not None:   # attach: the process's executable and its maps
        prog, libs = process_binaries(pid)
        name = "process %d (%s)" % (pid, prog)
        binaries = probed_binaries(prog, extra, libs=libs)
    else:
        prog = resolve_program(argv[0])
        name = argv[0]
        binaries = probed_binaries(prog, extra)
    if not binaries:
        raise RecordError("no rt probes in %s or the libraries it links: build "
                          "the allocator with include/rt_probes.h (and without "
                          "-DRT_PROBES_DISABLE), or name a dlopen'ed library "
                          "with --lib" % name)
    if not any(alloc_probe in names for _, names in binaries):
        raise RecordError("%s has rt probes but no rt:%s: rebuild it with the "
                          "current include/rt_probes.h" % (name, alloc_probe))
    return prog, name, binaries


def choose_unwind(opts, prog, binaries, alloc_probe, out):
    """--unwind's value, auto decided (and said) from the binaries that
    carry the allocation probe (unwindchoice.py)."""
    unwind = getattr(opts, "unwind", "dwarf")
    if unwind == "auto":
        unwind, why = unwindchoice.choose(
            [prog] + [p for p, names in binaries
                      if alloc_probe in names and p != prog])
        out.write("allocsites: --unwind auto: %s (%s)\n" % (unwind, why))
    return unwind


def check_output_path(output):
    """-o's directory exists and can be written, and perf may replace
    what is there (datafile.check_output); returns the note to print
    after the recording ("" if none)."""
    parent = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(parent):
        raise RecordError("-o %s: directory %s does not exist" % (output, parent))
    try:   # a read-only or full filesystem: one line now, not perf's three
        fd, probe = tempfile.mkstemp(prefix=".allocsites-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise RecordError("-o %s: cannot write in %s: %s"
                          % (output, parent, e.strerror or e))
    return datafile.check_output(output)


def add_events(events, tracefs, binaries, alloc_probe, opts, out):
    """Under the EventLock: undoes what killed runs left (runstate.sweep),
    then creates this run's uprobe events; returns (allocation events,
    events without a call graph)."""
    allocs, plain = [], []
    with eventlock.EventLock(tracefs.path):
        for line in runstate.sweep(
                events.delete_named,
                lambda: listed_events(tracefs.path) or ()):
            out.write("allocsites: %s\n" % line)
        wanted = plain_probes(opts)
        for path, names in binaries:
            if alloc_probe in names:
                # One event for the sites of every binary, written
                # to tracefs; perf probe where that cannot be.
                merged = events.add_alloc(path, alloc_probe)
                if merged is None:
                    allocs.append(events.add(path, alloc_probe))
                elif merged not in allocs:
                    allocs.append(merged)
            kinds = names & wanted
            if "phase_track" in kinds:   # sampled mode, new header
                kinds -= {"phase_begin", "phase_end"}
            if not kinds:
                continue
            merged = events.add_plain(path, kinds)
            if merged is None:   # perf probe, one event each
                plain.extend(events.add(path, k) for k in sorted(kinds))
            elif merged not in plain:
                plain.append(merged)
    return allocs, plain


def run_perf(perf, opts, argv, pid, unwind, allocs, plain, events,
             interrupts):
    """Runs perf record (its writer woken by writerwake, ahead of the
    program by writerpriority) until it ends, or until --duration has
    passed; returns its exit status (0 when stopped for --duration)."""
    output, stack_size = opts.output, opts.stack_size
    env = programenv.program_environment(os.environ, stack_size,
                                         opts.sample)
    with writerwake.Waker() as waker:
        with writerpriority.Boost() as boost:
            cmd = perfcommand.record_command(
                perf, output, allocs, plain, stack_size, argv,
                boost.step, pid=pid, control=waker.perf_args(),
                rings=perfcommand.RINGS_SAMPLED
                if opts.sample and not opts.frees
                else perfcommand.RINGS_EXACT,
                unwind=unwind)
            try:
                child = subprocess.Popen(
                    cmd, env=env, preexec_fn=boost.preexec)
            except (OSError, subprocess.SubprocessError) as e:
                raise RecordError("cannot run perf: %s" % e)
        waker.start()
        interrupts.child = child
        events.state.note(perf=child.pid)
        status = wait_perf(child, getattr(opts, "duration", None))
    if status == "duration":   # stopped by us, as planned
        status = 0
    return status


def clean_up(events, tracefs, out):
    """Removes the run's events (and its state file once they are gone)
    and unmounts tracefs if this run mounted it; names the events that
    could not be removed."""
    failed = remove_events(events, tracefs)
    if events.state is not None and not failed:
        events.state.done()
    tracefs.release()
    if failed:
        # Name them: 'sdt_rt:*' would delete other people's too.
        out.write("allocsites: warning: could not remove probe events "
                  "%s: remove them with perf probe%s\n"
                  % (" ".join(failed),
                     "".join(" -d " + n for n in failed)))


def check_recording(output, status, received, out):
    """Stopped for a signal other than SIGINT (received), or a RecordError
    when perf left no usable file: none, one cut short by a full disk, or
    one it never finished."""
    if status is None:  # a signal came before perf started
        raise Stopped(received)
    if received not in (None, signal.SIGINT):
        if os.path.exists(output) and not datafile.finished(output):
            out.write("allocsites: %s\n" % (datafile.UNFINISHED % output))
        raise Stopped(received)
    if not os.path.exists(output):
        raise RecordError("perf record wrote no data (exit status %d)" % status)
    full = datafile.disk_full(output) if status != 0 else None
    if full is not None:
        raise RecordError(full)
    if not datafile.finished(output):
        raise RecordError(datafile.UNFINISHED % output)


def scan_recording(output, interrupted):
    """One pass over the recording for the summary and the unprobed code,
    kept beside it for the report (scancache.py); None if it cannot be
    read. interrupted: stopped by SIGINT, kept for the report's verdict."""
    # Without the sample times where the native reader will report (they
    # are one Python int a sample: 9 GB of the record's memory at 10^8
    # allocations); the perf script workers' report scans again for them.
    from ..read import native
    try:
        scan = perfdata.scan(output, keep_times=native.reader_path(
            ENTRY_SCRIPT) is None)
    except Exception:  # noqa: BLE001 - perf report --stats says it instead
        return None
    if interrupted:
        scan.stopped = "SIGINT"   # kept for the report's verdict
    scancache.save(output, scan)
    return scan


def record_status(status, pid, name, argv, received, out):
    """record's exit status: the program's (as a shell gives it), 0 for
    an attach that ended as planned, Ctrl-C's when perf ended the program
    after a SIGINT to this process alone."""
    if pid is not None:   # the process's status is not ours to give
        return 0 if status in (0, -signal.SIGINT) else exit_status(
            status, name, out)
    if received == signal.SIGINT and \
            status in (-signal.SIGTERM, 128 + signal.SIGTERM):
        # interrupted (kill -INT of this process alone): perf stopped and
        # ended the program with SIGTERM; the status is Ctrl-C's
        out.write("allocsites: interrupted: recording stopped; %s was "
                  "ended by perf\n" % argv[0])
        return 128 + signal.SIGINT
    return exit_status(status, argv[0], out)


def plain_probes(opts):
    """The probes recorded without a call graph: rt:exit for the end-to-end
    count (docs/design.md, "Completeness"; binaries built with an older
    header have none), the bulk releases, committed bytes and phases, and
    the frees: every rt:free in exact mode (unless --no-frees), only the
    frees of sampled allocations (rt:sample_free) in sampled mode, where
    every free would cost more than the sampling saves (unless --frees)."""
    kinds = {"exit", "commit", "decommit", "phase_begin", "phase_end"}
    if opts.sample:
        # rt:phase_track where the binary has it: its phase markers then
        # cost no trap, and rt:sample carries the thread's phase
        kinds |= {"sample_free", "release", "phase_track"}
        if opts.frees:
            kinds.add("free")
    elif not getattr(opts, "no_frees", False):
        kinds |= {"free", "release"}   # a bulk release frees too
    return kinds


def wait_perf(child, duration):
    """perf's exit status, or "duration" when it ran for duration seconds
    (attach) and was then stopped with SIGINT, as Ctrl-C stops it."""
    if duration is None:
        return child.wait()
    try:
        return child.wait(timeout=duration)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGINT)
        child.wait()
        return "duration"


def warn_unprobed(code, probed, out):
    """One warning per annotated file that ran unprobed (binaries.
    unprobed_code; code: the recording's executable mappings): exec'd
    programs and dlopen'ed libraries."""
    for path in unprobed_code(code, probed):
        out.write("allocsites: warning: %s ran during the recording and has "
                  "rt probes, but was not probed (a program started by exec, "
                  "or a library loaded by dlopen): its allocations are not in "
                  "this recording; profile it directly, or name the library "
                  "with --lib\n" % path)


def exit_status(status, program, out):
    """The shell's convention for the program's status. perf record exits
    with the program's status, but when the program dies of a signal perf
    re-raises that signal on itself at exit (record__sig_exit), so Popen
    sees -signal: 128 + signal, as a shell would give (139 for SIGSEGV,
    not the 245 that sys.exit(-11) makes)."""
    if status >= 0:
        return status
    sig = -status
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = "signal %d" % sig
    if sig != signal.SIGINT:
        out.write("allocsites: %s was killed by %s (exit status %d)\n"
                  % (program, name, 128 + sig))
    return 128 + sig


def remove_events(events, tracefs):
    """Removes the run's events under the EventLock (without it if the
    lock cannot be had: removing must not wait on anyone forever)."""
    if not events.created:
        return events.remove()
    try:
        with eventlock.EventLock(tracefs.path):
            return events.remove()
    except RecordError:
        return events.remove()


def summarize(perf, output, out, scan=None):
    """'recorded: N alloc, M free events; lost: L -> FILE (SIZE)' on
    stderr, from the recording's scan (the figures of `perf report
    --stats`, which reads the whole file a second time: 2 s for the demo,
    less the records perf wrote twice), or from perf report --stats when
    there is no scan (duplicates included then)."""
    if scan is not None:
        # Without the records perf wrote twice, which the report drops:
        # the counts then agree with the report's and the program's own.
        twice = getattr(scan, "duplicate_samples", {})
        samples = {event: n - twice.get(event, 0)
                   for event, n in scan.event_samples.items()}
        lost, unknown = scan.lost()
    else:
        try:
            text = perfrun.stats_text(output, perf)
        except (OSError, subprocess.SubprocessError) as e:
            out.write("allocsites: recorded %s (perf report --stats failed: "
                      "%s)\n" % (output, e))
            return
        samples = perfrun.event_samples(text)
        lost, unknown = perfrun.lost_from_stats(text)
    by_kind = {"alloc": 0, "sample": 0, "other": 0}
    for event, n in samples.items():
        kind = event_kind(event)
        # Everything else was recorded without a call graph: the plain
        # event (frees and the rarer probes, its kinds in the payload,
        # which the summary does not read), or perf probe's events of
        # their own for them where the plain event could not be written.
        if kind is not None:
            by_kind[kind if kind in by_kind else "other"] += n
    lost_text = lost_words(lost, unknown)
    main = ("%d sample" % by_kind["sample"]) if by_kind["sample"] else \
        ("%d alloc" % by_kind["alloc"])
    try:
        size = " (%s)" % human_bytes(os.path.getsize(output))
    except OSError:
        size = ""
    out.write("allocsites: recorded %s events%s; lost: %s -> %s%s\n"
              % (main, (" and %d without a call graph (frees, exit, ...)"
                        % by_kind["other"]) if by_kind["other"] else "",
                 lost_text, output, size))
    if lost or unknown:
        out.write("allocsites: warning: events were lost: the profile is "
                  "incomplete (see docs/design.md, Loss)\n")
    if scan is not None and scan.tail_cut:
        out.write("allocsites: warning: perf cut the recording's last "
                  "compressed record short (a perf 6.1 -z fault); the "
                  "report checks whether any of the program's events were "
                  "in it\n")


# allocsites report's status when the profile is incomplete (the same as
# scripts/allocsites.py's).
INCOMPLETE = 3

def report(data, report_args, stdout=None, jobs=None, err=None):
    """Reports the recording at data: read/reading.py reads it (the native
    reader, or perf script workers running allocsites.py on time ranges
    of it), this process writes the outputs from the tally. jobs: the
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
    opts = options.parse(report_args, prog="allocsites report")
    perf = prerequisites.find_perf()
    datafile.check_perf_data(data)
    from ..read import interrupts, reading
    from .. import pipeline
    from ..analyze.fold import Tally
    probed = buildids.read_buildids(data)   # {binary: build-ids}, or {}
    try:
        got = reading.read_recording(
            data, report_args, lambda: Tally(opts.min_size), perf,
            ENTRY_SCRIPT, probed, jobs=jobs, err=err)
    except interrupts.Interrupted as e:
        err.write("allocsites: report interrupted; nothing written\n")
        return 128 + e.sig
    except reading.ReaderFailed as e:
        raise RecordError(str(e))
    if got is None:   # refused, or nothing read: said
        return 1
    (lost, reason), facts = recording_facts(data, perf, got.scan, probed)
    from ..analyze.symbolize import Symbolizer
    result = got.result
    rep = pipeline.report(
        result.tally, opts, Symbolizer(), lost, reason, os.path.abspath(data),
        out=stdout, err=err, handler_errors=result.handler_errors,
        perf_inlines=result.perf_inlines, read_errors=got.read_errors,
        **facts)
    if rep.bad_options:   # a --tag or --phase that names nothing
        return 2
    return INCOMPLETE if rep.verdict.complete is False else 0


def recording_facts(data, perf, scan, probed):
    """What the recording says about the profile's completeness, for
    pipeline.report: (lost, reason), and its keyword arguments
    (build-ids, an attach, the unwinding, what ran unseen, ...). scan:
    the recording's, or None (loss then from perf report --stats);
    probed: {binary: build-ids} from FILE.buildids."""
    if scan is not None:
        lost, reason = scan.lost()
    else:
        lost, reason = perfrun.count_lost(data, perf)
    attached = scan is not None and perfdata.attached(scan.cmdline)
    running = scan.running() if scan is not None else []
    unseen = completeness.unseen(
        running=running if not attached else (),
        unprobed=unprobed_code(scan.code, probed)
        if scan is not None and probed else ())
    return (lost, reason), dict(
        build_ids=dict(scan.build_ids if scan is not None else {},
                       **probed),
        attached=attached,
        tail_cut=scan is not None and bool(scan.tail_cut),
        unwind=scan.unwind if scan is not None else None, unseen=unseen,
        still_running=bool(attached and running),
        stopped=scan.stopped if scan is not None else None)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return dispatch(argv)
    except Usage as e:
        sys.stderr.write("allocsites: %s (allocsites --help for usage)\n" % e)
        return 2
    except options.UsageError as e:
        sys.stderr.write("allocsites: %s\n" % e)
        return 2
    except RecordError as e:
        sys.stderr.write("allocsites: %s\n" % e)
        return 1
    except Stopped as e:
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
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def run_diff(opts, out=sys.stdout):
    """allocsites diff: both profiles as JSON reports (a recording is
    reported first, its table not shown), then the diff's outputs."""
    import io
    import tempfile
    from ..analyze import diff
    from ..render import flamegraph

    def report_recording(path):
        with tempfile.TemporaryDirectory(prefix="allocsites-diff-") as tmp:
            js = os.path.join(tmp, "r.json")
            status = report(path, ["--json", js], stdout=io.StringIO())
            if not os.path.exists(js):
                raise RecordError("cannot report %s (status %d)"
                                  % (path, status))
            with open(js, encoding="utf-8") as f:
                return f.read()

    try:
        base = diff.load(opts.base, report_recording)
        new = diff.load(opts.new, report_recording)
    except FileNotFoundError as e:
        raise RecordError("%s: no such file" % e.filename)
    except diff.BadReport as e:
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
        from ..render import jsonout
        sys.stdout.write("allocsites %s (JSON report version %d; perf %s)\n"
                         % (__version__, jsonout.VERSION,
                            prerequisites.perf_version() or "not found"))
        return 0
    inv = parsers.parse(argv)
    if inv is None:    # allocsites --help
        sys.stdout.write(USAGE)
        return 0
    if inv.form == "report":
        return report(inv.input, inv.report_args, jobs=inv.jobs)
    if inv.form == "diff":
        return run_diff(inv.report)
    if inv.form == "record":
        return record(inv.record, inv.program)
    status = record(inv.record, inv.program)
    report_status = report(inv.record.output, inv.report_args, jobs=inv.jobs)
    return report_status or status
