"""Is the profile complete? One verdict from every source of evidence.

  - the end-to-end count: each process's rt:exit event says how many
    alloc, free and sample events it fired while they were recorded
    (include/rt_exit.h); the Tally counts what arrived, per process;
  - perf's own loss counter (perfrun.count_lost);
  - what perf printed while reading (read errors: a damaged or truncated
    file that perf could not read to its end);
  - events that could not be decoded; a report that was interrupted.

The verdict is True (complete, and checked end to end), False (something
is known to be missing: the reason says what), or None (nothing is known
to be missing, but the end-to-end check could not be made: the reason
says why). docs/design.md, "Completeness", has the rules.
"""

import collections

from .. import contract

# The order of rt:exit's arguments: allocs, frees, samples (every header),
# then sample_frees, releases, commits (commit and decommit), phases
# (begin and end) from headers since the liveness probes; the eighth,
# untracked, counts no event (sampled pointers the table could not hold).
KINDS = contract.EXIT_COUNTS
# Event kind -> the count of rt:exit it is checked against.
COUNTED_AS = contract.COUNTED_AS

Verdict = collections.namedtuple("Verdict", [
    "complete",    # True, False or None (not checked)
    "reason",      # one line for the user
    "fired",       # {kind: n} the processes that exited said they fired
    "received",    # {kind: n} events received from those processes
    "missing",     # fired - received, summed over processes (>= 0)
    "unchecked",   # events from processes that sent no rt:exit
    "unchecked_by_kind",  # {kind: n} of those
], defaults=({},))


def count_check(received, fired):
    """The end-to-end comparison.

    received: {pid: {kind: n}} (kinds as in KINDS); fired: {pid: rt:exit's
    counts [allocs, frees, samples, ...]}: 3 from an older header, 8 now.
    Returns (fired_totals, received_totals, missing, extra, unchecked,
    unchecked_pids)."""
    fired_tot = collections.Counter()
    recv_tot = collections.Counter()
    missing = extra = unchecked = 0
    unchecked_pids = 0
    by_kind = collections.Counter()
    for pid in set(received) | set(fired):
        got = received.get(pid, {})
        if pid not in fired:
            unchecked += sum(got.values())
            unchecked_pids += 1
            by_kind.update(got)
            continue
        for kind, n in zip(KINDS, fired[pid]):
            r = got.get(kind, 0)
            fired_tot[kind] += n
            recv_tot[kind] += r
            if r < n:
                missing += n - r
            else:
                extra += r - n
    return fired_tot, recv_tot, missing, extra, unchecked, unchecked_pids, \
        dict(by_kind)


TAIL_CUT = ("perf's last compressed record was cut short (a perf 6.1 -z "
            "fault), so the end of the recording is missing")


def verdict(received, fired, lost=0, lost_reason=None, read_errors=(),
            malformed=0, interrupted=False, attached=False, tail_cut=False,
            unseen=(), still_running=False, stopped=None, running=(),
            shared_kinds=()):
    """The Verdict for one recording (see the module doc). tail_cut: the
    recording's compressed stream ends inside a record: complete only if
    the end-to-end count proves that what is missing was not the
    program's (include/rt_exit.h pads the end for that). unseen: one line
    each for what could have allocated where no count reaches (unseen()):
    then nothing is called complete. still_running: the recorded
    processes had not ended when the recording did (an attached one goes
    on), so no rt:exit could come. stopped: what stopped the recording
    before the program ended ("SIGINT": Ctrl-C, or kill -INT of
    allocsites), as record noted it. running: the pids the recording
    saw start and not end (perfdata.Scan.running): those without an
    rt:exit are unseen. One that sent its rt:exit was ending, and its
    counts check what it fired: a missing EXIT record (perf's last
    records) does not make it a daemon. shared_kinds: groups of event
    names that record one kind of probe (facts.shared_kinds): named
    where there are more events than the program fired."""
    unseen = unseen_running(running, fired) + list(unseen)
    fired_tot, recv_tot, missing, extra, unchecked, unchecked_pids, \
        unchecked_kinds = count_check(received, fired)

    def made(complete, reason):
        return Verdict(complete, reason, dict(fired_tot), dict(recv_tot),
                       missing, unchecked, unchecked_kinds)

    if interrupted:
        return made(False, "the report was interrupted before the end of "
                    "the recording")
    if read_errors:
        return made(False, "perf could not read the whole recording: %s"
                    % read_errors[0])
    if missing and attached and not lost:
        # perf record -p raises the semaphores when it opens its events
        # and enables them after: what the program fires in between is
        # counted but not recorded, and cannot be told from loss.
        return made(None, "attached to a running process: %d events the "
                    "program fired were not recorded, around the attach "
                    "(perf enables its events after the probes are raised)"
                    % missing)
    if missing:
        return made(False, "%d events missing: the program fired %d, the "
                    "recording has %d%s" % (
                        missing, sum(fired_tot.values()),
                        sum(recv_tot.values()),
                        "; " + TAIL_CUT if tail_cut else ""))
    if tail_cut and (not fired or unchecked or lost or lost is None):
        return made(False, TAIL_CUT + ", and what it held cannot be "
                    "checked")
    if lost:
        return made(False, "perf lost %d samples while recording" % lost)
    if malformed:
        return made(False, "%d events could not be decoded" % malformed)
    if stopped:
        return made(None, "the recording was stopped by %s before the "
                    "program ended: what it allocated after that is not in "
                    "this recording" % (
                        "Ctrl-C (SIGINT)" if stopped == "SIGINT" else stopped))
    if extra and shared_kinds:
        return made(None, "%d more events than the program counted: the "
                    "recording has several events of one probe (%s), and "
                    "where they are on the same one each hit is recorded "
                    "once per event; record one event a probe and binary"
                    % (extra, "; ".join(", ".join(g) for g in shared_kinds)))
    if extra:
        return made(None, "%d more events than the program "
                    "counted (events after its exit handler?)" % extra)
    if not fired and unseen:
        # what could not be seen says more than the missing rt:exit that
        # follows from it (a file whose probes never fired sent none)
        return made(None, "; ".join(unseen))
    if not fired:
        why = ("no rt:exit event: the process was still running when the "
               "recording stopped" if still_running else
               "no rt:exit event (the program did not exit normally, or was "
               "built with an older rt_probes.h)")
        if lost is None:
            why += "; perf's loss count unknown: %s" % lost_reason
        return made(None, why)
    if unchecked:
        why = ("%d events of %d process%s without an rt:exit event (killed, "
               "exec'd, ended by _exit, built with an older rt_probes.h, or "
               "forked and run beside its siblings, whose probes can stop "
               "firing: record -a gets them; forked processes in "
               "docs/limitations.md)"
               % (unchecked, unchecked_pids,
                  "" if unchecked_pids == 1 else "es"))
        if lost is None:
            why += "; perf's loss count unknown: %s" % lost_reason
        return made(None, why)
    if unseen:
        return made(None, "; ".join(unseen))
    return made(True, "%d events received, as many as the program fired%s"
                % (sum(recv_tot.values()),
                   " (perf cut the recording's last compressed record "
                   "short, after them)" if tail_cut else ""))


def unseen_running(running, fired):
    """unseen()'s line for the pids of running that sent no rt:exit
    (fired: {pid: counts}, as verdict has it), or []."""
    return unseen(running=[p for p in running if p not in fired])


def unseen(running=(), unprobed=(), stuck=()):
    """The lines for verdict's unseen. running: pids of processes still
    running when the recording ended (perfdata.Scan.running; not when
    attached, where that is the point); unprobed: files with rt probes
    that ran code but were not probed (binaries.unprobed_code). Neither
    sent an rt:exit that the recording holds, so no count can say what
    they allocated. stuck: the lines of files whose semaphores the kernel
    raises elsewhere (binaries.stuck_semaphores_warning): their probes
    may not have fired, and the count counts fired probes."""
    lines = list(stuck)
    if running:
        shown = ", ".join(str(p) for p in running[:3])
        lines.append("process%s %s%s still running when the recording "
                     "ended (a daemon, or a child its parent did not wait "
                     "for): what %s allocated after that is not in this "
                     "recording" % (
                         "es" if len(running) > 1 else "", shown,
                         " and %d more" % (len(running) - 3)
                         if len(running) > 3 else "",
                         "they" if len(running) > 1 else "it"))
    for path in unprobed:
        lines.append("%s ran and has rt probes but was not probed (a library "
                     "loaded by dlopen, or a program started by exec): what "
                     "it allocated is not in this recording; name a library "
                     "with --lib, profile a program directly" % path)
    return lines
