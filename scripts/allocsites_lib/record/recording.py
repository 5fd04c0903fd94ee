"""One recording run, in order, from the binaries to the summary.

One recording run, in order: the binaries to probe and how to unwind,
the uprobe events made, perf record run ahead of the program with
signals held until every event is removed again, the recording checked,
scanned, summarized and its sidecars written (record/ holds each step's
parts; cli/command.py calls record())."""

import os
import re
import signal
import subprocess
import sys
import tempfile

from ..read import perfdata, perfrun, scancache
from ..read.parse import event_kind
from . import (buildids, datafile, eventlock, perfcommand, prerequisites,
               probeevents, programenv, runstate, unwindchoice,
               writerpriority, writerwake)
from .binaries import (is_script, launched_programs, probed_binaries,
                       process_binaries,
                       resolve_library, resolve_program, semaphore_trouble,
                       stuck_semaphores_warning, unprobed_code)
from .errors import RecordError
from .tracefs import Tracefs, listed_events
from ..words import human_bytes, lost_words


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
    perf = prerequisites.find_perf()
    prerequisites.check_privileges()
    prog, name, binaries = probe_targets(opts, argv, pid, alloc_probe, out)
    for path, _ in binaries:
        why = semaphore_trouble(path)
        if why:
            out.write("allocsites: warning: %s\n"
                      % stuck_semaphores_warning(path, why))
    unwind = choose_unwind(opts, prog, binaries, alloc_probe, out)
    moved = check_output_path(output)
    tracefs = Tracefs()
    events = probeevents.ProbeEvents(perf)
    # Signals are held from the first probe event to the last removal: an
    # interrupted run must never leave events behind.
    with Interrupts() as interrupts:
        status = None
        fast = False
        try:
            tracefs.ensure()
            events.tracefs = tracefs.path
            events.state = runstate.RunState()
            if tracefs.mounted_here:
                events.state.note(mounted=tracefs.path)
            # opt-in: on 6.18 a child forked after a site was turned
            # into a call crashes there (docs/probes.md, "The probe site")
            fast = fast_site(os.environ, out)
            allocs, plain = add_events(
                events, tracefs, binaries, alloc_probe, opts, out,
                fast_alloc=fast and unwind != "dwarf", fast_plain=fast)
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
        if fast:
            warn_forked(scan.started, out)
    return record_status(status, pid, name, argv, interrupts.received, out)


def probe_targets(opts, argv, pid, alloc_probe, out=sys.stderr):
    """(program path, its name for messages, [(path, {probe names})] of
    the binaries to probe): the program started (argv) or attached to
    (pid), its libraries and --lib's; a RecordError if none has the
    allocation probe."""
    extra = [resolve_library(lib) for lib in opts.libs]
    if pid is not None:   # attach: the process's executable and its maps
        prog, libs, deleted = process_binaries(pid)
        name = "process %d (%s)" % (pid, prog)
        binaries = probed_binaries(prog, extra, libs=libs)
        if deleted:
            # the probes of a library replaced since it was loaded cannot
            # be recorded, nor its frames named
            gone = ", ".join(deleted[:3]) + (" ..." if len(deleted) > 3
                                               else "")
            if not any(alloc_probe in names for _, names in binaries):
                raise RecordError(
                    "no rt:%s probe in %s or the libraries it links that "
                    "are still in place; deleted or replaced since they "
                    "were loaded (an upgrade or a rebuild), or another "
                    "mount namespace's: %s; restart the process, then "
                    "attach" % (alloc_probe, name, gone))
            out.write("allocsites: warning: %s maps libraries deleted or "
                      "replaced since they were loaded, or another mount "
                      "namespace's: %s; their probes are not recorded and "
                      "their frames are shown as addresses\n"
                      % (name, gone))
    else:
        prog = resolve_program(argv[0], scripts=bool(extra))
        name = argv[0]
        binaries = probed_binaries(prog, extra)
        # a launcher (env VAR=1 PROG, nice, taskset, timeout): the first
        # program it runs that has probes is the one, as with --lib PROG
        # (--lib's files have none, or binaries would not be empty)
        for launched in [] if binaries else launched_programs(argv[1:]):
            binaries = probed_binaries(launched, extra)
            if binaries:
                name = "%s (run by %s)" % (launched, argv[0])
                prog = launched
                break
    if not binaries:
        raise RecordError("no rt probes in %s or the libraries it links: build "
                          "the allocator with include/rt_probes.h (and without "
                          "-DRT_PROBES_DISABLE), or name with --lib a dlopen'ed "
                          "library, or the program it runs (a script, make)"
                          % name)
    if not any(alloc_probe in names for _, names in binaries):
        raise RecordError("%s has rt probes but no rt:%s: rebuild it with the "
                          "current include/rt_probes.h" % (name, alloc_probe))
    for path, _ in binaries:
        # a probe definition is one line of words (tracefs, perf probe):
        # such a path cannot be written in one, and a newline in it made
        # the kernel's error two lines of ours. Said before any is made.
        if UNPROBEABLE.search(path):
            raise RecordError(
                "perf cannot probe a path with a space or a control "
                "character: %r; move or link the file to a path without "
                "one" % path)
    return prog, name, binaries


UNPROBEABLE = re.compile(r"[\s\x00-\x1f\x7f]")


def fast_site(environ, out):
    """Whether ALLOCSITES_FAST_SITE=1 asks for the probes at the 5-byte
    nop (docs/probes.md, "The probe site"); another value than 0 or 1
    is said, not taken silently for 0."""
    value = environ.get("ALLOCSITES_FAST_SITE")
    if value not in (None, "", "0", "1"):
        out.write("allocsites: warning: ALLOCSITES_FAST_SITE=%s is neither "
                  "0 nor 1: every probe at the trap\n" % value)
    return value == "1"


def choose_unwind(opts, prog, binaries, alloc_probe, out):
    """--unwind's value, auto decided (and said) from the binaries that
    carry the allocation probe (unwindchoice.py)."""
    unwind = getattr(opts, "unwind", "dwarf")
    if unwind == "auto":
        # a script PROG (with --lib) has no code of its own to check
        unwind, why = unwindchoice.choose(
            [p for p in [prog] if not is_script(p)] +
            [p for p, names in binaries
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


def add_events(events, tracefs, binaries, alloc_probe, opts, out,
               fast_alloc=False, fast_plain=False):
    """Under the EventLock: undoes what killed runs left (runstate.sweep),
    then creates this run's uprobe events; returns (allocation events,
    events without a call graph). fast_alloc, fast_plain: the allocation
    probe, the probes without a call graph, taken at the sites' 5-byte
    nops where they have them (probedefs.fast_site). The caller takes
    the plain probes (frees, phases: no stack) there always, and the
    allocation probe where the recording copies no stack. A DWARF
    recording's allocations keep the int3 trap: with them at the call
    too, perf's writer fell behind the 8 KiB stack copies on this 2-CPU
    VM and lost events (docs/probes.md, "The probe site").
    Only with ALLOCSITES_FAST_SITE=1: on Linux 6.18 a child forked after
    a site became a call crashes when it reaches the site (the
    trampoline is not in its address space)."""
    allocs, plain = [], []
    with eventlock.EventLock(tracefs.path):
        for line in runstate.sweep(
                events.delete_named,
                lambda: listed_events(tracefs.path) or (),
                adopt_mount=tracefs.adopt):
            out.write("allocsites: %s\n" % line)
        wanted = plain_probes(opts)
        for path, names in binaries:
            if alloc_probe in names:
                # One event for the sites of every binary, written
                # to tracefs; perf probe where that cannot be.
                merged = events.add_alloc(path, alloc_probe, fast_alloc)
                if merged is None:
                    allocs.append(events.add(path, alloc_probe))
                elif merged not in allocs:
                    allocs.append(merged)
                # a language runtime's guest locations (RT_GUEST)
                guest = events.add_guest(path) if "guest" in names \
                    else None
                if guest is not None and guest not in plain:
                    plain.append(guest)
                elif "guest" in names and guest is None:
                    out.write("allocsites: warning: the guest locations "
                              "of %s cannot be recorded (its rt:guest "
                              "probes are not register operands)\n" % path)
            kinds = names & wanted
            if "phase_track" in kinds:   # sampled mode, new header
                kinds -= {"phase_begin", "phase_end"}
            if not kinds:
                continue
            merged = events.add_plain(path, kinds, fast_plain)
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
                unwind=unwind,
                system_wide=getattr(opts, "system_wide", False))
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
    tracefs.release(runstate.others_alive)
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
    # Without the sample times (one Python int a sample: 9 GB of the
    # record's memory at 10^8 allocations): the native reader needs none,
    # the perf script workers' report scans again for them.
    try:
        scan = perfdata.scan(output, keep_times=False)
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
                  "this recording; name it with --lib (a library, or a "
                  "program started by exec)\n" % path)


def warn_forked(started, out):
    """With ALLOCSITES_FAST_SITE=1: a warning when the recorded program
    started other processes (perfdata.Scan.started), whose crash at a
    probe site the opt-in can cause (docs/probes.md, "The probe site")."""
    forked = len(started) - 1
    if forked > 0:
        out.write("allocsites: warning: %d process%s forked during the "
                  "recording with ALLOCSITES_FAST_SITE=1: on Linux 6.18 a "
                  "child forked after a probe site became a call crashes "
                  "at it (docs/probes.md, \"The probe site\"); record "
                  "without ALLOCSITES_FAST_SITE if any of them crashed\n"
                  % (forked, " was" if forked == 1 else "es were"))


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
