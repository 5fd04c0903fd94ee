"""The Report assembled from a Tally: fold, liveness, verdict, warnings.

build makes the Report of a Tally: fold, liveness, the verdict, the
warnings, and the data of the extras (pprof, timeline) a Report carries;
analyze/ makes them, render/ only encodes or draws them.
build_after_reading adds what only the reading knows.

pipeline.py calls build_after_reading for the perf entry script
(scripts/allocsites.py) at trace_end and for `allocsites report`; tests
call build on a hand-made Tally."""

import collections
import os
import threading

from . import (completeness, guest, liveview, liveness, pprofdata, threads,
               timeline_series)
from ..read import parse
from ..read.perfdata import STACK_COPY_MAX

from ..read.elf import tag_names
from .fold import fold, tag_selected
from .report import Report
from .stale import gone_warning, missing_binaries, stale_binaries
from .wrappers import (declared_skips, rust_allocator_advice, skip_regex,
                       wrapper_advice, wrapper_suspects)


NO_THREAD_LABELS = ("--pprof: no thread labels: the allocations split by "
                    "thread did not add up to the profile")


def collect_tag_names(tally, symbolizer):
    """{tag: name} from the .rt_tags of every DSO in the stacks; the DSO
    holding the probe (the leaf) wins over others."""
    names = {}
    leaves = {frames[0].dso for frames, _ in tally.keys() if frames}
    for dso in sorted(tally.dsos(), key=lambda d: (d in leaves, d)):
        image = symbolizer.elf(dso)
        if image is not None:
            names.update(tag_names(image))
    return names


def pprof_phases(sweep, entries, live, names):
    """pprofdata.profile's phased: each phase's allocations (and, with
    frees, their liveness) to label by phase, when the program marks
    phases and no --phase restricts the report; else None."""
    if sweep is None or entries is not None or not sweep.phases:
        return None
    live_of = collections.defaultdict(dict)   # phase -> {key: KeyLive}
    if live is not None:
        for (ph, key), kl in sweep.by_phase_key.items():
            live_of[ph][key] = kl
    return [(None if phase is None else liveview.phase_label(phase, names),
             phase_entries, live_of[phase] if live is not None else None)
            for phase, phase_entries in sorted(
                sweep.entries.items(),
                key=lambda p: (p[0] is not None, p[0] or 0))]


def pprof_threads(tally, mode, opts, phased, entries, selected, names):
    """pprofdata.profile's threads: {(phase label or None, key): {(pid,
    tid): [count, bytes]}} for the samples encode writes (phased's, one
    --phase's, or the whole tally's), from the event log; None when there
    is no log or the split does not add up to those samples exactly."""
    log = tally.log
    if log is None:
        return None
    split = threads.split(log, mode == "sampled",
                          getattr(opts, "min_size", 0) or 0)
    if phased is not None:
        by_thread = threads.relabelled(
            split, lambda ph: liveview.phase_label(ph, names))
        want = [(phase, e) for phase, e, _ in phased]
    elif entries is not None:   # one --phase: the sweep's, that phase's
        by_thread = threads.relabelled(split, only=selected)
        want = [(None, entries)]
    else:
        by_thread = threads.relabelled(split)
        want = [(None, tally.entries(mode))]
    return by_thread if threads.matches(by_thread, want) else None


def recording_span(tally, data):
    """{time_nanos, duration_nanos} of the recording for pprof: its
    length from the first event to the last, and its start as the file's
    modification time (perf finishes it after the last event) less that
    length: perf 6.1's clock is not the wall clock. Empty when unknown."""
    log = tally.log
    if log is None or not len(log) or data is None:
        return {}
    first, last = log.first_time(), log.last_time()
    try:
        end = os.stat(data).st_mtime_ns
    except OSError:
        return {}
    duration = max(0, last - first)
    return {"time_nanos": max(0, end - duration), "duration_nanos": duration}


def resolve_ahead(tally, opts, symbolizer, mode):
    """A thread resolving the frames fold will ask for (the same set, so
    the same warnings in the same order), started before the liveness
    sweep's answer is read or the sweep run (after the reader, in its
    own process): the symbolizer's allocsites-read --lines then works
    on the other core meanwhile. None with --phase
    (fold then resolves that phase's frames only). The caller joins it
    before anything else uses the symbolizer; a failure here is left
    for fold to meet again and report."""
    if getattr(opts, "phase", None):
        return None
    raws = {raw for frames, _ in tally.entries(mode) for raw in frames}

    def resolve():
        try:
            symbolizer.resolve(raws)
        except Exception:   # noqa: BLE001 -- fold resolves them again
            pass
    thread = threading.Thread(target=resolve, daemon=True)
    thread.start()
    return thread


def build(tally, opts, symbolizer, lost, lost_reason, data=None,
          read_errors=(), interrupted=False, build_ids=None,
          attached=False, tail_cut=False, unwind=None, unseen=(),
          still_running=False, stopped=None, running=(), stack_size=0,
          system_wide=False, user_regs=None, shared_kinds=()):
    """The Report of tally, as opts ask for it. data: the perf.data path,
    to notice binaries rebuilt since; build_ids: {path: set of hex
    build-ids} the recording's MMAP2 records name
    (perfdata.Scan.build_ids), the better way to notice them;
    read_errors: one-line strings, each a part of the recording that perf
    could not read (a failed perf script worker, perf's error lines): the
    profile is then incomplete; interrupted: the report stopped before
    the end; unwind: how the stacks were taken (perfdata.Scan.unwind);
    stack_size: the bytes of stack copied a sample (Scan.stack_size);
    system_wide: recorded on every CPU (record -a), so that running
    names every process of the machine, of which only those that sent
    rt events count; user_regs: perf record --user-regs's value, where
    the recording took fewer registers than all (perfdata.user_regs);
    shared_kinds: event names that record one probe kind
    (facts.shared_kinds)."""
    names = collect_tag_names(tally, symbolizer)
    tags = set(opts.tag) if opts.tag else None
    mode = tally.mode()
    declared = declared_skips(tally, symbolizer)
    skip = "|".join(p for p in [skip_regex(opts.skip)] +
                    ["(?:%s)" % r for r, _ in declared] if p) or None
    warnings = []
    phase_names = liveview.phase_names(tally, symbolizer)
    bad_options = []   # option values that name nothing: exit status 2
    ahead = resolve_ahead(tally, opts, symbolizer, mode)
    sweep, live_summary, entries, live, selected = liveness_of(
        tally, opts, phase_names, mode, warnings, bad_options)
    if ahead is not None:
        ahead.join()
    guest_view = None
    if getattr(opts, "guest", None):
        guest_view = guest.GuestView(tally.guests, guest.dispatch_regex(
            tally, symbolizer, getattr(opts, "guest_dispatch", None)))
        if not tally.guests and not any(
                parse.guest_of(f) for f, _ in tally.keys()):
            warnings.append("--guest: this recording has no guest "
                            "locations (RT_ALLOC_GUEST, RT_GUEST): every "
                            "allocation is [interpreter]'s")
    result = fold(tally, symbolizer, names, skip, tags, opts.depth, mode,
                  entries=entries, live=live, guest=guest_view)
    live_summary = selected_liveness(
        live_summary, result, opts, sweep,
        lambda key: tag_selected(key[1], names, tags))
    # a file gone since the recording has no symbols: said as gone
    gone = missing_binaries(tally.dsos(), build_ids)
    nosym = {"no symbols for %s: frames shown as addresses" % d:
             gone_warning(d) for d in gone}
    warnings = [nosym.get(w, w) for w in symbolizer.warnings] + warnings
    for regex, dso in declared:
        warnings.append("wrappers declared by %s (RT_SKIP): %s; their "
                        "callers are charged" % (os.path.basename(dso), regex))
    for site, n, chain in wrapper_suspects(result):
        warnings.append(wrapper_advice(site, n, chain))
    rust = rust_allocator_advice(result)
    if rust is not None:
        warnings.append(rust)
    sampling = _more_warnings(tally, opts, names, tags, mode, result,
                              (unwind, stack_size, user_regs), data,
                              build_ids, gone,
                              read_errors, warnings, bad_options)
    filters = {"tag": opts.tag, "min_size": opts.min_size,
               "depth": opts.depth, "top": opts.top, "skip": opts.skip,
               # RT_SKIP's, in effect as --skip is (appended to the contract)
               "skip_declared": [r for r, _ in declared]}
    if guest_view is not None:   # only then: other reports' JSON as before
        filters["guest"] = True
        filters["guest_dispatch"] = guest_view.dispatch.pattern \
            if guest_view.dispatch else None
    if system_wide:
        # every process of the machine was running: only those that
        # sent rt events can have allocated unseen
        running = [p for p in running if p in tally.received]
    check = completeness.verdict(tally.received, tally.fired, lost,
                                 lost_reason, read_errors, tally.malformed,
                                 interrupted, attached, tail_cut, unseen,
                                 still_running, stopped, running,
                                 shared_kinds)
    if attached:
        warnings.append("recorded by attaching to a running process: its "
                        "allocations before the attach, and the frees of "
                        "those, are not in this profile")
    pprof = None
    # the profile document holds every output's data (render/profiledoc.py)
    saving = bool(getattr(opts, "save_profile", None))
    if getattr(opts, "pprof", None) or saving:
        phased = pprof_phases(sweep, entries, live, phase_names)
        by_thread = pprof_threads(tally, mode, opts, phased, entries,
                                  selected, phase_names)
        note = None
        if by_thread is None and tally.log is not None:
            # where the warning stands (and stands only with --pprof):
            # the document keeps it, for report --from --pprof
            note = [len(warnings), NO_THREAD_LABELS]
            if getattr(opts, "pprof", None):
                warnings.append(NO_THREAD_LABELS)
        pprof = pprofdata.profile(
            tally, symbolizer, names, mode, tags, entries=entries,
            live=live, skip=skip, phased=phased, threads=by_thread,
            guest=guest_view, **recording_span(tally, data))
        pprof["thread_note"] = note
    report = Report(mode=mode, profile=result, events=dict(tally.events),
                    malformed=tally.malformed, lost=lost,
                    lost_reason=lost_reason, frees=tuple(tally.frees),
                    filters=filters, warnings=warnings, sampling=sampling,
                    duplicates=tally.duplicates, verdict=check, pprof=pprof,
                    liveness=live_summary,
                    duplicates_by_kind=dict(tally.duplicate_kinds),
                    unwind=unwind, bad_options=tuple(bad_options))
    if sweep is not None and (getattr(opts, "timeline", None) or saving):
        report = report._replace(timeline=timeline_series.series(
            sweep, tally.log, result, phase_names,
            scope=live_summary.scope if live_summary is not None else None))
    return report


def _more_warnings(tally, opts, names, tags, mode, result, stacks, data,
                   build_ids, gone, read_errors, warnings, bad_options):
    """build's warnings about the options, the sampling, the stacks
    and the binaries, appended to warnings (and bad_options); returns the
    report's sampling ({samples, sample_bytes}, or None in exact mode).
    stacks: (unwind, stack_size, user_regs), how the stacks were
    taken."""
    unwind, stack_size, user_regs = stacks
    if tags is not None:
        present = {label for _, tag in tally.entries(mode)
                   for label in (str(tag), names.get(tag))}
        unmatched = sorted(t for t in tags if t not in present)
        if unmatched:
            shown = sorted({names.get(tag, str(tag))
                            for _, tag in tally.entries(mode)})
            warnings.append("no allocation has the tag%s %s; the tags in "
                            "this recording: %s" % (
                                "s" if len(unmatched) > 1 else "",
                                ", ".join(unmatched),
                                ", ".join(shown) or "none"))
            bad_options.append(warnings[-1])
    if not tally.events.get("alloc") and not tally.events.get("sample") \
            and (tally.events.get("free") or tally.events.get("release")):
        # frees came, no allocation at all: a recording by hand without
        # the allocation event, more likely than a program that only frees
        warnings.append("the recording has frees but no allocation event: "
                        "was sdt_rt:alloc recorded? (allocsites record "
                        "records it; with perf record by hand, add -e "
                        "sdt_rt:alloc)")
    sampling = None
    if mode == "sampled":
        rate, warning = sample_rate(tally)
        sampling = {"samples": tally.events.get("sample", 0),
                    "sample_bytes": rate}
        if warning:
            warnings.append(warning)
    elif tally.sampled:
        warnings.append("both sdt_rt:alloc and sdt_rt:sample were recorded: "
                        "reporting the exact stream, ignoring %d samples"
                        % tally.events.get("sample", 0))
    if tally.no_callchain:
        warnings.append("%d allocations have no call chain: record with "
                        "--unwind dwarf (the default) or --unwind fp"
                        % tally.no_callchain)
    at_jit = result.truncated_at_jit
    if at_jit:
        warnings.append("%d allocations have stacks that end in JIT code "
                        "(/tmp/perf-PID.map): there is no CFI to unwind "
                        "it, and perf's unwinding stops there too; the "
                        "frames from the allocator to the JIT code are "
                        "complete" % at_jit)
    switched = result.truncated_switched
    if switched:
        warnings.append("%d allocations have stacks that go on where no "
                        "stack copy reaches (a signal handler on an "
                        "alternate stack, a coroutine or fiber, or a frame "
                        "pointer that is not one): a larger --stack-size "
                        "does not help; the frames from the allocator to "
                        "the switch are complete" % switched)
    cut = result.truncated - at_jit - switched
    if cut and unwind == "fp":
        warnings.append("%d allocations have stacks cut short (not reaching "
                        "main/_start): the kernel's frame-pointer walk stops "
                        "at a function built without frame pointers; record "
                        "with --unwind dwarf" % cut)
    elif cut and gone:
        # not the stack copy's size: a stack is not unwound past a frame
        # in a file that is gone (no CFI to read)
        warnings.append("%d allocations have stacks cut short (not reaching "
                        "main/_start): %s %s gone since the recording, and "
                        "a stack is not unwound past a frame in a file "
                        "that is not there; report while %s in place"
                        % (cut, ", ".join(gone),
                           "is" if len(gone) == 1 else "are",
                           "it is" if len(gone) == 1 else "they are"))
    elif cut and unwind == "dwarf" and user_regs is not None:
        # not the copy's size either: the unwinding of a caller whose
        # CFA needs a register the samples lack stops (perf's as well)
        warnings.append("%d allocations have stacks cut short (not reaching "
                        "main/_start): the recording has only the registers "
                        "%s (perf record --user-regs), and a stack stops at "
                        "a frame whose caller needs another to be found; "
                        "record without --user-regs" % (cut, user_regs))
    elif cut and stack_size >= STACK_COPY_MAX:
        warnings.append("%d allocations have stacks cut short (not reaching "
                        "main/_start): they are deeper than the largest "
                        "stack copy perf takes (%d bytes, this recording's "
                        "--stack-size); record with --unwind fp if the "
                        "program keeps frame pointers" % (cut, stack_size))
    elif cut:
        warnings.append("%d allocations have stacks cut short (not reaching "
                        "main/_start): raise --stack-size (8192 by default; "
                        "16384 reaches main for 99%% of a Lua interpreter's "
                        "stacks)" % cut)
    for dso in stale_binaries(tally.dsos(), data, build_ids):
        warnings.append("%s changed after the recording: its frames may be "
                        "wrong; record again" % dso)
    # Records perf wrote twice (tally.duplicates) are no warning: they are
    # dropped exactly, and JSON counts them (docs/design.md, "perf writes
    # some sample records twice").
    if tally.filtered:
        warnings.append("%d allocations under --min-size %d not counted"
                        % (tally.filtered, opts.min_size))
    if tally.malformed:
        warnings.append("%d rt events could not be decoded (missing probe "
                        "arguments?)" % tally.malformed)
    for line in read_errors or ():
        warnings.append("not read: %s" % line)
    return sampling


def selected_liveness(summary, profile, opts, sweep=None, tagged=None):
    """The LiveSummary restricted to what --phase and --tag select (the
    sums of the folded sites' figures), labelled with the selection; as it
    is without either. With --tag, the phases' count and bytes are the
    tag's too (tagged(key): the key has a selected tag; from the sweep's
    entries); their memory columns stay the whole program's."""
    parts = []
    if summary is not None and summary.phase is not None:
        parts.append("phase %s" % summary.phase)
    if summary is not None and getattr(opts, "tag", None):
        parts.append("tag %s" % ",".join(opts.tag))
    if not parts:
        return summary

    def total(field):
        values = [getattr(s, field) for s in profile.sites]
        if any(v is None for v in values):
            return None
        return sum(values)
    phases = summary.phases
    if getattr(opts, "tag", None) and sweep is not None and tagged:
        phases = sorted((row._replace(
            count=sum(e.count for k, e in sweep.entries.get(
                row.id, {}).items() if tagged(k)),
            bytes=sum(e.bytes for k, e in sweep.entries.get(
                row.id, {}).items() if tagged(k))) for row in phases),
            key=lambda r: (-r.bytes, r.name or ""))
    return summary._replace(
        phases=phases,
        peak_bytes=total("peak_bytes"), peak_count=total("peak_count"),
        leaked_bytes=total("leaked_bytes"),
        leaked_count=total("leaked_count"),
        temporary=total("temporary") if summary.temporary is not None
        else None, scope=", ".join(parts))


def liveness_of(tally, opts, names, mode, warnings, bad_options=None):
    """(sweep, LiveSummary, entries, live, phase) for build: the liveness
    sweep over the tally's event log when frees or phases were recorded
    (else all None), the --phase selection (entries: that phase's
    allocations for fold, or None for all), and live: {key: KeyLive} for
    fold (None without frees), phase: the selected phase's id ("all",
    or -1 when --phase names none). names: {phase id: name}."""
    log = tally.log
    has_frees = liveview.frees_recorded(tally)
    # phases seen at the samples (rt:phase_track): each sample's phase is
    # exact, the runs between samples are not (Tally._track_phase)
    from_samples = getattr(tally, "phases_from_samples", False)
    has_phases = bool(tally.events.get("phase_begin")) or from_samples
    if log is None or not (has_frees or has_phases):
        if getattr(opts, "phase", None):
            warnings.append("--phase %s: this recording has no phases "
                            "(RT_PHASE_BEGIN/END)" % opts.phase)
            if bad_options is not None:
                bad_options.append(warnings[-1])
        return None, None, None, None, "all"
    sweep = liveness.sweep(log, mode,
                           min_size=getattr(opts, "min_size", 0) or 0,
                           series=bool(getattr(opts, "timeline", None) or
                                       getattr(opts, "save_profile", None)))
    phase = "all"
    wanted = getattr(opts, "phase", None)
    if wanted:
        phase, problem = liveview.resolve_phase(wanted, names,
                                                  set(sweep.phases))
        if problem:
            warnings.append(problem)
            if bad_options is not None:
                bad_options.append(problem)
            phase = -1   # no such phase: nothing is selected
    entries, live = liveview.selection(sweep, phase)
    untracked = sum(c[7] for c in tally.fired.values() if len(c) > 7)
    warnings.extend(liveview.warnings(sweep, untracked, names,
                                        runs_known=not from_samples))
    rows = liveview.phase_rows(sweep, names)
    if from_samples:
        rows = [r._replace(runs=None, left_live=None, peak=None, growth=None,
                           committed_growth=None) for r in rows]
    if not has_frees:   # without frees nothing is ever freed: no liveness
        rows = [r._replace(left_live=None, peak=None, growth=None)
                for r in rows]
        live = None
    summary = liveview.summary(
        sweep, rows, None if phase == "all" else wanted, untracked, mode) \
        if has_frees else None
    return sweep, summary, entries, live, phase


def build_after_reading(tally, opts, symbolizer, lost, lost_reason,
                        data=None, handler_errors=0, perf_inlines=False,
                        read_errors=(), interrupted=False, build_ids=None,
                        attached=False, tail_cut=False, unwind=None,
                        unseen=(), still_running=False, stopped=None,
                        running=(), stack_size=0, system_wide=False,
                        user_regs=None, shared_kinds=()):
    """build, plus what only the reading knows: handler exceptions,
    inline expansion, no events at all. Used (through
    pipeline.analyze_and_render) by allocsites.py's trace_end and by
    `allocsites report` after reading."""
    report = build(tally, opts, symbolizer, lost, lost_reason, data,
                   read_errors=read_errors, interrupted=interrupted,
                   build_ids=build_ids, attached=attached,
                   tail_cut=tail_cut, unwind=unwind, unseen=unseen,
                   still_running=still_running, stopped=stopped,
                   running=running, stack_size=stack_size,
                   system_wide=system_wide, user_regs=user_regs,
                   shared_kinds=shared_kinds)
    if handler_errors:
        report.warnings.append("%d events raised in the handler and were "
                               "skipped" % handler_errors)
    if perf_inlines:
        report.warnings.append("perf script ran without --no-inline: "
                               "slower, and recursion through inlined "
                               "functions may lose frames")
    if not tally.events:
        report.warnings.append("no sdt_rt events in this recording")
    return report


def sample_rate(tally):
    """(R, warning or None). R comes from the rt:sample events themselves;
    a recording from an older header (no rate argument) falls back to the
    gcd of the weights (each weight is k * R), which overstates R when
    every weight shares a larger factor (at R = 1: the gcd of the sizes);
    several programs sampled at different rates give the largest (the
    error bounds are then upper bounds)."""
    rates = tally.sample_rates
    known = sorted(r for r in rates if r)
    if not known:
        if not tally.weight_gcd:
            return 0, None
        return tally.weight_gcd, (
            "the samples carry no rate (built with an older rt_probes.h): "
            "R guessed as %d bytes from the weights; error bounds may be "
            "too large" % tally.weight_gcd)
    if len(known) > 1:
        return known[-1], ("the samples were taken at different rates (R = "
                           "%s bytes): error bounds use the largest" %
                           ", ".join(str(r) for r in known))
    if rates.get(None):
        return known[0], ("%d samples carry no rate (an older "
                          "rt_probes.h); R = %d from the others"
                          % (rates[None], known[0]))
    return known[0], None
