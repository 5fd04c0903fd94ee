"""Allocations split by thread, for pprof's thread labels.

Who allocated, by thread: each (phase, stack and tag)'s allocations split
by the (pid, tid) that made them, for pprof's thread labels.

The Tally folds threads together as it reads (a key is a stack and a tag),
so the split comes from the EventLog, which keeps every event's pid and
tid, in one pass over it. Each allocation is charged to its thread's
innermost open phase, as the liveness sweep charges it; the split is kept
only where its sums are the sweep's (or the tally's) exactly, so a label
never tells a different story from the table."""

import collections

from ..read.eventlog import ALLOC, PHASE_BEGIN, PHASE_END, SAMPLE

# Relative difference allowed between sums of floats (sampled estimates,
# added in another order) before the split is called different.
FLOAT_TOLERANCE = 1e-9


def split(log, sampled, min_size=0):
    """{(phase id or None, key): {(pid, tid): [count, bytes]}} of every
    allocation in log (rt:alloc, or rt:sample when sampled: count
    weight/size, bytes weight), min_size: those below it left out."""
    kind_wanted = SAMPLE if sampled else ALLOC
    keys = log.keys
    stacks = {}   # tid -> (pid, [open phase ids, innermost last])
    out = collections.defaultdict(
        lambda: collections.defaultdict(lambda: [0, 0]))
    for kinds, _times, pids, tids, col_a, col_b, sizes, keyidx \
            in log.chunks():
        ki = si = 0
        for i, kind in enumerate(kinds):
            if kind == ALLOC or kind == SAMPLE:
                k = keyidx[ki]
                ki += 1
                size = col_b[i]
                if kind == SAMPLE:
                    size = sizes[si]
                    si += 1
                if kind != kind_wanted or size < min_size:
                    continue
                if sampled and (size <= 0 or col_b[i] <= 0):
                    continue   # stands for nothing (as in read/tally.py)
                pid, tid = pids[i], tids[i]
                open_ = stacks.get(tid)
                phase = open_[1][-1] if open_ and open_[0] == pid and \
                    open_[1] else None
                acc = out[(phase, keys[k])][(pid, tid)]
                if sampled:
                    acc[0] += col_b[i] / size
                    acc[1] += col_b[i]
                else:
                    acc[0] += 1
                    acc[1] += size
            elif kind == PHASE_BEGIN:
                pid, tid = pids[i], tids[i]
                open_ = stacks.get(tid)
                if open_ is None or open_[0] != pid:
                    open_ = stacks[tid] = (pid, [])
                open_[1].append(col_a[i])
            elif kind == PHASE_END:
                open_ = stacks.get(tids[i])
                ids = open_[1] if open_ else []
                if col_a[i] in ids:   # else unmatched: ignored, as the sweep
                    while ids.pop() != col_a[i]:
                        pass
    return out


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= FLOAT_TOLERANCE * max(abs(a), abs(b), 1.0)
    return a == b


def matches(by_thread, phased_entries):
    """True when by_thread (split's) sums to phased_entries exactly:
    [(phase, {key: entry})], each key's count and bytes."""
    want = {}
    for phase, entries in phased_entries:
        for key, entry in entries.items():
            if entry.count or entry.bytes:
                want[(phase, key)] = (entry.count, entry.bytes)
    got = {}
    for pk, threads in by_thread.items():
        count = sum(c for c, _ in threads.values())
        nbytes = sum(b for _, b in threads.values())
        if count or nbytes:
            got[pk] = (count, nbytes)
    if set(want) != set(got):
        return False
    return all(_same(want[pk][0], got[pk][0]) and
               _same(want[pk][1], got[pk][1]) for pk in want)


def relabelled(by_thread, label=None, only=None):
    """by_thread with each phase id replaced by label(id) (ids outside
    every phase stay None), or with the phases summed away when label is
    None; only: keep one phase id's allocations (a --phase)."""
    out = collections.defaultdict(
        lambda: collections.defaultdict(lambda: [0, 0]))
    for (phase, key), threads in by_thread.items():
        if only is not None and phase != only:
            continue
        name = None if label is None or phase is None else label(phase)
        for thread, (count, nbytes) in threads.items():
            acc = out[(name, key)][thread]
            acc[0] += count
            acc[1] += nbytes
    return out
