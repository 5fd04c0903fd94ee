"""The Python liveness sweep: the oracle for allocsites-sweep (scripts/sweep/).

The product sweeps an EventLog in C (analyze/nativesweep.py); this is
the same replay in Python, as the product had it before, rule for rule
(the rules: analyze/liveness.py's opening comment). sweep.c follows it
function by function, and tests/unit/test_liveness.py holds the two
equal on every case and on random logs, in exact and sampled mode, with
a third, event-by-event reference of its own.

Speed and memory, for the record: the loop is plain Python over the
log's columns with the hot state in locals and one tuple per live
allocation (about 150 bytes): 1.6-2.6 million events a second on the
2-CPU VM. The C sweep keeps about 6 bytes a live allocation. Exact mode
makes one pass (the state at the peak is the state at the end with what
came and went since the peak undone, _Sweep.at_peak); a sampled log, or
a spilled one, is replayed up to the peak, so that the float sums come
out in the order the C sweep also keeps.
"""

import collections
import os
import sys
from itertools import islice

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
from allocsites_lib.read.eventlog import (  # noqa: E402
    ALLOC, FREE, SAMPLE, SAMPLE_FREE, RELEASE, COMMIT, DECOMMIT,
    PHASE_BEGIN, PHASE_END, EXIT)
from allocsites_lib.analyze import liveness  # noqa: E402

GRANULE_BITS = 16     # the release index buckets pointers by 64 KiB
SHARED_LIMIT = 1 << 20  # distinct live records shared, at most
DENSE_LIMIT = 1 << 20  # per-(phase, key) counters in lists up to this size
# (sweep.c orders sampled codes the same way: by code up to this many)
NO_PHASE = (0, ())    # a thread outside every phase: (code base, runs)
NO_POINTER = -1       # rt pointers are unsigned: never equal to this


class _Proc:
    """One process's state. The loop keeps the current process's fields
    in local variables and writes them back here when it switches."""
    __slots__ = ("pid", "live", "total", "last", "hw", "commit", "open",
                 "buckets")

    def __init__(self, pid, track_ranges):
        self.pid = pid
        # ptr -> (bytes, code, key index, open runs, count); code is
        # phase slot * number of keys + key index.
        self.live = {}
        self.total = 0          # live bytes
        self.last = NO_POINTER  # pointer of the latest event if an alloc
        self.hw = 0             # highest total since the last run boundary
        self.commit = 0         # committed bytes
        self.open = []          # its open runs
        # granule -> set of live pointers, for release (only when the log
        # has release events: it costs every alloc and free a set update).
        self.buckets = {} if track_ranges else None


class _Thread:
    __slots__ = ("pid", "stack")

    def __init__(self, pid):
        self.pid = pid
        self.stack = []   # [(phase id, run)] outermost first


def _positions(raw, code):
    """Indexes of the events of one kind (raw: the kinds column's bytes)."""
    needle = bytes((code,))
    out = []
    i = raw.find(needle)
    while i >= 0:
        out.append(i)
        i = raw.find(needle, i + 1)
    return out


class _Plan:
    """What the sweep needs to know before the loop, from a cheap scan of
    the kinds column."""

    def __init__(self, log, mode, min_size=0):
        self.sampled = mode == "sampled"
        # --min-size: smaller allocations are live memory like any other
        # (peaks, totals, phases' growth) but no key's count and bytes
        self.min_size = min_size
        self.last_exit = {}
        phase_ids = set()
        kinds_seen = set()
        base = 0   # the index of the chunk's first event in the log
        for kinds, _times, pids, _tids, col_a, _b, _s, _k in log.chunks():
            raw = kinds.tobytes()
            for i in _positions(raw, EXIT):
                self.last_exit[pids[i]] = base + i
            phase_ids.update(col_a[i] for i in _positions(raw, PHASE_BEGIN))
            kinds_seen.update(raw)
            base += len(kinds)
        self.phase_ids = sorted(phase_ids)
        self.slot_of = {pid: s + 1 for s, pid in enumerate(self.phase_ids)}
        self.nkeys = max(1, len(log.keys))
        self.has_release = RELEASE in kinds_seen
        self.has_commit = COMMIT in kinds_seen or DECOMMIT in kinds_seen
        ends = SAMPLE_FREE if self.sampled else FREE
        self.frees_recorded = self.has_release or ends in kinds_seen


def _counters(size, kind):
    """Per-code counters: a list when small enough, else a dict."""
    if size <= DENSE_LIMIT:
        return [kind()] * size
    return collections.defaultdict(kind)


class _Nowhere:
    """A list that keeps nothing (_Sweep.added and removed when spilled)."""
    __slots__ = ()

    def append(self, _item):
        pass

    def extend(self, _items):
        pass

    def clear(self):
        pass


class _Sweep:
    """One replay of the log, up to `stop` events. Hot state lives in
    run()'s locals; the rare events (phases, release, exit) are methods
    working on the attributes, synced before and after each call."""

    def __init__(self, log, plan, sample_times):
        self.log = log
        self.plan = plan
        self.sampled = plan.sampled
        nslots = len(plan.phase_ids) + 1
        ncodes = nslots * plan.nkeys
        number = float if self.sampled else int
        self.ec = _counters(ncodes, number)   # allocations per code
        self.eb = _counters(ncodes, int)      # their bytes (weights)
        self.ew2 = _counters(ncodes, float) if self.sampled else None
        self.es = _counters(ncodes, int) if self.sampled else None
        self.temp = _counters(ncodes, int)
        self.kb = [0] * plan.nkeys            # live bytes per key
        self.procs = {}
        self.threads = {}                     # tid -> _Thread with a stack
        self.thread_phase = {}                # tid -> (code base, runs)
        self.total = 0
        self.ctotal = 0
        # Runs of phases, by number: slot, pid, totals at the start, live
        # bytes allocated inside, best total.
        self.run_slot, self.run_pid = [], []
        self.run_total0, self.run_commit0 = [], []
        self.run_live, self.run_best = [], []
        self.runs = [0] * nslots
        self.left = [0] * nslots
        self.growth = [0] * nslots
        self.cgrowth = [0] * nslots
        self.phase_peak = [0] * nslots
        self.unmatched_phase_ends = 0
        self.open_phases = []                 # [(run, pid, tid, id)]
        self.leaked_b = collections.defaultdict(int)
        self.leaked_c = collections.defaultdict(number)
        self.committed_end = 0
        self.sample_times = sample_times
        self.snaps = []                       # (total, committed, kb copy)
        # The allocations that came and went since the current peak (their
        # records): with the state at the end they give the state at the
        # peak (at_peak) without replaying the log up to it again.
        # A spilled log (a long recording) keeps none: it is replayed up to
        # the peak instead, so that memory stays what is live.
        self.added, self.removed = ([], []) if not log.spilled else \
            (_Nowhere(), _Nowhere())
        self.peak = 0
        self.peak_i = -1
        self.peak_t = None
        self.committed_peak = 0
        self.committed_at_peak = 0
        self.unmatched = [0, 0]
        self.reused = 0

    # ------------------------------------------------------------ the loop

    def run(self, stop):
        """Replays the first `stop` events (once per _Sweep).

        One long loop on purpose, as hotpath.handler: the sweep's state
        lives in locals while it runs (an attribute per update would cost
        about twice as much, docs/benchmarks.md, "Why the two per-event
        loops stay one function each"); the rare kinds (release, phases,
        exit) are methods."""
        plan = self.plan
        sampled = self.sampled
        min_size = plan.min_size
        if sampled:
            AK, FK, OK = SAMPLE, SAMPLE_FREE, ALLOC
        else:
            AK, FK, OK = ALLOC, FREE, SAMPLE
        procs, thread_phase, last_exit = \
            self.procs, self.thread_phase, plan.last_exit
        track = plan.has_release
        kb, ec, eb, ew2, es, temp = \
            self.kb, self.ec, self.eb, self.ew2, self.es, self.temp
        run_live = self.run_live
        added, removed = self.added, self.removed
        add_rec, remove_rec = added.append, removed.append
        shared = {}   # record -> the one object kept for all equal ones
        same = shared.setdefault
        gbits = GRANULE_BITS
        ts, snaps = self.sample_times, self.snaps
        nts = len(ts)
        j = 0
        inf = float("inf")
        next_t = ts[0] if nts else inf
        total = ctotal = 0
        peak, peak_i, peak_t = self.peak, self.peak_i, self.peak_t
        cpeak, cat_peak = self.committed_peak, self.committed_at_peak
        un_n = un_b = reused = 0
        cpid = cproc = clive = cbuckets = None
        ptotal = pcommit = phw = 0
        clast = NO_POINTER
        ctid, cbase, cruns = None, 0, ()
        i = -1
        t = None
        left = stop
        for kinds, times, pids, tids, col_a, col_b, sizes, keyidx \
                in self.log.chunks():
            if left <= 0:
                break
            ki = si = 0   # keyidx and sizes restart in each chunk
            n = len(kinds) if len(kinds) < left else left
            left -= n
            for kind, t, pid, tid, a, b in islice(
                    zip(kinds, times, pids, tids, col_a, col_b), n):
                i += 1
                if t > next_t:   # the state at sample times before this event
                    snap = (total, ctotal, kb[:])
                    while t > next_t:
                        snaps.append(snap)
                        j += 1
                        next_t = ts[j] if j < nts else inf
                if pid != cpid:
                    if cproc is not None:
                        cproc.total, cproc.last, cproc.hw, cproc.commit = \
                            ptotal, clast, phw, pcommit
                    cproc = procs.get(pid)
                    if cproc is None:
                        cproc = procs[pid] = _Proc(pid, track)
                    clive, cbuckets = cproc.live, cproc.buckets
                    ptotal, clast, phw, pcommit = \
                        cproc.total, cproc.last, cproc.hw, cproc.commit
                    cpid = pid
                if kind == AK:
                    k = keyidx[ki]
                    ki += 1
                    if tid != ctid:
                        ctid = tid
                        cbase, cruns = thread_phase.get(tid, NO_PHASE)
                    code = cbase + k
                    if sampled:
                        size = sizes[si]
                        si += 1
                        if size <= 0 or b <= 0:
                            continue   # stands for nothing (as in read/tally.py)
                        cnt = b / size
                        if size >= min_size:
                            ec[code] += cnt
                            eb[code] += b
                            ew2[code] += cnt / size
                            es[code] += 1
                    else:
                        cnt = 1
                        if b >= min_size:
                            ec[code] += 1
                            eb[code] += b
                    old = clive.get(a)
                    if old is not None:   # its free was not seen: freed now
                        reused += 1
                        remove_rec(old)
                        osz = old[0]
                        ptotal -= osz
                        total -= osz
                        kb[old[2]] -= osz
                        for r in old[3]:
                            run_live[r] -= osz
                    elif track:
                        g = a >> gbits
                        bucket = cbuckets.get(g)
                        if bucket is None:
                            bucket = cbuckets[g] = set()
                        bucket.add(a)
                    rec = (b, code, k, cruns, cnt)
                    # one tuple for all live allocations alike (a site
                    # allocates few sizes): 80-170 bytes less for each
                    rec = clive[a] = same(rec, rec)
                    if len(shared) > SHARED_LIMIT:
                        shared.clear()
                    add_rec(rec)
                    kb[k] += b
                    if cruns:
                        for r in cruns:
                            run_live[r] += b
                    ptotal += b
                    total += b
                    if ptotal > phw:
                        phw = ptotal
                    if total > peak:
                        peak, peak_i, peak_t, cat_peak = total, i, t, ctotal
                        added.clear()
                        removed.clear()
                    clast = a
                elif kind == FK:
                    rec = clive.pop(a, None)
                    if rec is None:
                        un_n += 1
                        un_b += b
                    else:
                        remove_rec(rec)
                        sz = rec[0]
                        ptotal -= sz
                        total -= sz
                        kb[rec[2]] -= sz
                        if rec[3]:
                            for r in rec[3]:
                                run_live[r] -= sz
                        if a == clast:
                            temp[rec[1]] += 1
                        if track:
                            cbuckets[a >> gbits].discard(a)
                    clast = NO_POINTER
                elif kind == OK:   # the other mode's allocation: its cursors
                    ki += 1
                    if kind == SAMPLE:
                        si += 1
                elif kind == COMMIT:
                    pcommit += b
                    ctotal += b
                    if ctotal > cpeak:
                        cpeak = ctotal
                elif kind == DECOMMIT:
                    # Never below 0: what was committed before the recording
                    # began is not known.
                    d = b if b <= pcommit else pcommit
                    pcommit -= d
                    ctotal -= d
                elif kind >= RELEASE:   # release, phases, exit: the rare ones
                    # (left: the other mode's free, ignored)
                    if kind == EXIT and last_exit.get(pid) != i:
                        continue   # not the process's last rt:exit
                    cproc.total, cproc.last, cproc.hw, cproc.commit = \
                        ptotal, clast, phw, pcommit
                    self.total, self.ctotal = total, ctotal
                    if kind == RELEASE:
                        self._release(cproc, a, b)
                    elif kind == PHASE_BEGIN:
                        self._begin(cproc, tid, a)
                        ctid = None
                    elif kind == PHASE_END:
                        self._end(tid, a)
                        ctid = None
                    else:
                        self._exit(cproc, drop=True)
                        ctid = None
                    total, ctotal = self.total, self.ctotal
                    if kind == EXIT:
                        cpid = cproc = None   # the pid starts afresh if seen
                        continue
                    clive, cbuckets = cproc.live, cproc.buckets
                    ptotal, clast, phw, pcommit = \
                        cproc.total, cproc.last, cproc.hw, cproc.commit
        if cproc is not None:
            cproc.total, cproc.last, cproc.hw, cproc.commit = \
                ptotal, clast, phw, pcommit
        if j < nts:   # the sample times after the last event
            snap = (total, ctotal, kb[:])
            snaps.extend([snap] * (nts - j))
        self.total, self.ctotal = total, ctotal
        self.peak, self.peak_i, self.peak_t = peak, peak_i, peak_t
        self.committed_peak, self.committed_at_peak = cpeak, cat_peak
        self.unmatched = [self.unmatched[0] + un_n, self.unmatched[1] + un_b]
        self.reused += reused
        return self

    # ------------------------------------------------------------ rare events

    def _forget(self, proc, rec):
        """An allocation ends without a free event (release, reuse)."""
        self.removed.append(rec)
        size = rec[0]
        proc.total -= size
        self.total -= size
        self.kb[rec[2]] -= size
        for r in rec[3]:
            self.run_live[r] -= size

    def _release(self, proc, base, length):
        """Frees every live allocation of proc in [base, base + length)."""
        proc.last = NO_POINTER
        if length <= 0:
            return
        end = base + length
        live, buckets = proc.live, proc.buckets
        first, last = base >> GRANULE_BITS, (end - 1) >> GRANULE_BITS
        if buckets is not None and last - first < len(buckets):
            victims = [p for g in range(first, last + 1)
                       for p in buckets.get(g, ()) if base <= p < end]
        else:
            victims = [p for p in live if base <= p < end]
        for p in victims:
            self._forget(proc, live.pop(p))
            if buckets is not None:
                buckets[p >> GRANULE_BITS].discard(p)

    def _flush(self, proc):
        """A run boundary in proc: every open run saw proc's highest total
        since the last boundary."""
        hw, best = proc.hw, self.run_best
        for r in proc.open:
            if hw > best[r]:
                best[r] = hw
        proc.hw = proc.total

    def _set_thread(self, tid, thread):
        if thread.stack:
            slot = self.plan.slot_of[thread.stack[-1][0]]
            self.thread_phase[tid] = (slot * self.plan.nkeys,
                                      tuple(r for _, r in thread.stack))
        else:
            self.thread_phase.pop(tid, None)
            del self.threads[tid]

    def _begin(self, proc, tid, phase):
        slot = self.plan.slot_of[phase]
        thread = self.threads.get(tid)
        if thread is None or thread.pid != proc.pid:
            thread = self.threads[tid] = _Thread(proc.pid)
        self._flush(proc)
        r = len(self.run_slot)
        for column, value in ((self.run_slot, slot), (self.run_pid, proc.pid),
                              (self.run_total0, proc.total),
                              (self.run_commit0, proc.commit),
                              (self.run_live, 0),
                              (self.run_best, proc.total)):
            column.append(value)
        self.runs[slot] += 1
        proc.open.append(r)
        thread.stack.append((phase, r))
        self._set_thread(tid, thread)

    def _end(self, tid, phase):
        """Closes the innermost open run of `phase` in the thread and the
        runs opened inside it."""
        thread = self.threads.get(tid)
        stack = thread.stack if thread is not None else ()
        depth = len(stack) - 1
        while depth >= 0 and stack[depth][0] != phase:
            depth -= 1
        if depth < 0:
            self.unmatched_phase_ends += 1
            return
        proc = self.procs[thread.pid]
        self._flush(proc)
        while len(stack) > depth:
            self._close(proc, stack.pop()[1])
        self._set_thread(tid, thread)

    def _close(self, proc, r):
        slot = self.run_slot[r]
        self.left[slot] += self.run_live[r]
        self.growth[slot] += proc.total - self.run_total0[r]
        self.cgrowth[slot] += proc.commit - self.run_commit0[r]
        if self.run_best[r] > self.phase_peak[slot]:
            self.phase_peak[slot] = self.run_best[r]
        proc.open.remove(r)

    def _exit(self, proc, drop):
        """The process ends (its last rt:exit, or the log's end): its open
        phases close, its live allocations are leaked and, with drop, its
        memory leaves the totals."""
        if proc.open:
            self._flush(proc)
            for tid, thread in list(self.threads.items()):
                if thread.pid != proc.pid:
                    continue
                while thread.stack:
                    phase, r = thread.stack.pop()
                    self._close(proc, r)
                    self.open_phases.append((r, proc.pid, tid, phase))
                self._set_thread(tid, thread)
        lb, lc, kb = self.leaked_b, self.leaked_c, self.kb
        if drop:
            self.removed.extend(proc.live.values())
        for rec in proc.live.values():
            lb[rec[1]] += rec[0]
            lc[rec[1]] += rec[4]
            if drop:
                kb[rec[2]] -= rec[0]
        self.committed_end += proc.commit
        if drop:
            self.total -= proc.total
            self.ctotal -= proc.commit
            del self.procs[proc.pid]

    def finish(self):
        """The log's end: every process still running ends there."""
        for proc in list(self.procs.values()):
            self._exit(proc, drop=False)
        return self

    def at_peak(self):
        """({code: [bytes, count]}, live bytes per key) at the peak, after
        run() over the whole log and before finish(): the state now, less
        what was allocated since the peak, plus what ended since."""
        codes = self.live_by_code()
        kb = list(self.kb)
        for recs, sign in ((self.added, -1), (self.removed, 1)):
            for rec in recs:
                slot = codes[rec[1]]
                slot[0] += sign * rec[0]
                slot[1] += sign * rec[4]
                kb[rec[2]] += sign * rec[0]
        return {c: v for c, v in codes.items() if v != [0, 0]}, kb

    def live_by_code(self):
        """{code: [bytes, count]} of what is live now."""
        out = collections.defaultdict(lambda: [0, 0])
        for proc in self.procs.values():
            for rec in proc.live.values():
                slot = out[rec[1]]
                slot[0] += rec[0]
                slot[1] += rec[4]
        return out


def sweep(log, mode, points=400, min_size=0, series=True):
    """The Liveness of an EventLog, as liveness.sweep gives it (the same
    assembly, liveness._assemble), swept here in Python. series False:
    the timeline's one point is its origin, the first event (as there)."""
    times = liveness.sample_times(log, points) if series else \
        [log.first_time()] if len(log) else []
    plan = _Plan(log, mode, min_size)
    main = _Sweep(log, plan, times).run(len(log))
    if main.peak_i < 0:
        peak_codes, peak_kb = {}, [0] * plan.nkeys
    elif plan.sampled or log.spilled:
        # Replayed up to the peak: its float sums then come out in one
        # order (sampled logs are short); a spilled log kept no record
        # of what came and went since the peak. The end's live
        # allocations are counted as leaked first, and let go, so that
        # the two sweeps' live sets are not in memory at once.
        main.finish()
        for proc in main.procs.values():
            proc.live, proc.buckets = {}, None
        at_peak = _Sweep(log, plan, []).run(main.peak_i + 1)
        peak_codes, peak_kb = at_peak.live_by_code(), at_peak.kb
        del at_peak
    else:
        peak_codes, peak_kb = main.at_peak()
    if not (plan.sampled or log.spilled) or main.peak_i < 0:
        main.finish()
    snaps = main.snaps
    series = {k: list(s) for k, s in
              enumerate(zip(*[snap[2] for snap in snaps])) if any(s)} \
        if series else None
    return liveness._assemble(
        log, plan, main, peak_codes, times,
        {k: v for k, v in enumerate(peak_kb) if v},
        [snap[0] for snap in snaps], [snap[1] for snap in snaps], series)
