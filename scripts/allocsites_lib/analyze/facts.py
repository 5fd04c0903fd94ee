"""What a recording says about its profile's completeness, made once.

Both ways of making a report (`allocsites report`, cli/command.py, and
`perf script -s allocsites.py`) take these facts from here, so that they
give the same verdict: the loss (the scan's count, else perf report
--stats), the build-ids of what ran, an attach, a tail perf -z cut, how
the stacks were taken, the code that ran unprobed, processes still
running, a Ctrl-C the recorder noted. They are keyword arguments of
pipeline.analyze_and_render (kwargs()).
"""

import collections

from . import completeness
from ..read import parse, perfdata, perfrun
from ..record.binaries import (semaphore_trouble, stuck_semaphores_warning,
                               unprobed_code)

Facts = collections.namedtuple(
    "Facts", "lost lost_reason build_ids attached tail_cut unwind unseen "
             "still_running stopped running stack_size system_wide "
             "user_regs shared_kinds")


def recording_facts(data, scan, probed, perf="perf"):
    """The Facts of the recording at data. scan: its perfdata.Scan, or
    None (the loss then from perf report --stats); probed: {binary:
    build-ids} from FILE.buildids ({} without)."""
    if scan is not None:
        lost, reason = scan.lost()
    else:
        lost, reason = perfrun.count_lost(data, perf)
    attached = scan is not None and perfdata.attached(scan.cmdline)
    running = scan.running() if scan is not None else []
    # the processes still running are named by the verdict, which knows
    # which of them sent an rt:exit (not when attached: that is the point)
    # the files record probed (FILE.buildids; a recording by hand has
    # none, and is not checked for this)
    unseen = completeness.unseen(
        unprobed=unprobed_code(scan.code, probed)
        if scan is not None and probed else (),
        stuck=[stuck_semaphores_warning(p, why) for p, why in
               ((p, semaphore_trouble(p)) for p in sorted(probed)) if why])
    return Facts(
        lost=lost, lost_reason=reason,
        build_ids=dict(scan.build_ids if scan is not None else {}, **probed),
        attached=attached,
        tail_cut=scan is not None and bool(scan.tail_cut),
        unwind=scan.unwind if scan is not None else None, unseen=unseen,
        still_running=bool(attached and running),
        stopped=scan.stopped if scan is not None else None,
        running=tuple(running) if not attached else (),
        stack_size=scan.stack_size if scan is not None else 0,
        system_wide=scan is not None and perfdata.system_wide(scan.cmdline),
        user_regs=perfdata.user_regs(scan.cmdline) if scan is not None
        else None,
        shared_kinds=shared_kinds(scan.event_samples)
        if scan is not None else ())


def shared_kinds(event_samples):
    """The event names of each probe kind that several recorded events
    carry (("sdt_rt:alloc", "sdt_rt:alloc_1"), ...), from the scan's
    samples per event name. Several are right for several binaries (one
    event each); on one probe (perf probe run twice, then 'sdt_rt:*'
    recorded) every hit is recorded once per event."""
    by_kind = collections.defaultdict(list)
    for name, n in sorted(event_samples.items()):
        kind = parse.event_kind(name)
        if n and kind not in (None, "plain"):
            by_kind[kind].append(name)
    return tuple(tuple(names) for _, names in sorted(by_kind.items())
                 if len(names) > 1)


def kwargs(facts):
    """pipeline.analyze_and_render's keyword arguments for the facts (the
    loss is given apart)."""
    out = facts._asdict()
    del out["lost"], out["lost_reason"]
    return out
