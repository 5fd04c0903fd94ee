"""The per-event path: Reader.read and Tally.add_fields fused in one.

The per-event path inside perf: Reader.read then Tally.add_fields, fused
for the two events that are nearly all of an exact recording.

An exact recording is one rt:alloc event (a call chain) per allocation
and one plain event (kind 1, a free) per free: 400,000 events for the
demo, each costing perf's handler its own Python work. Done generically
(parse.Reader.read builds a 9-tuple, Tally.add_fields takes it apart and
branches on the kind, EventLog.append branches again and hashes the
20-frame (stack, tag) key to intern it, and Tally hashes it once more for
its counts), that was 4.2 us an allocation and 1.9 us a free on the
reference VM (docs/notes/2026-design-history.md, "Per-event handler
cost"). handler() does the same work for these two events in one
function, with what repeats cached:

  - per distinct chain of ips: its RawFrames (shared with the Reader's
    cache) and, per tag, the key's index in the EventLog and its
    ExactEntry in Tally.stacks, so no per-event hashing of the key;
  - the Tally's and the EventLog's containers and their bound methods
    are closure variables: no attribute lookups per event;
  - the log gets one tuple per event, and its seven columns are
    extended from those every FLUSH_EVERY events (handle.flush()).

Everything else, and any alloc or free that is not exactly the common
shape (a sample dict for a free, a non-int thread or time, a missing or
odd field, a value a log column cannot hold), goes through Reader.read
and Tally.add_fields unchanged, so every result is the one they give:
the same Tally, the same EventLog, the same malformed count, the same
exceptions (tests/unit/test_hotpath.py compares the two on the same
input). The checks that send an event there come before any change to
the Tally.

The caches hold references into the Tally (stacks, the log's columns,
frees...): the handler is valid while the Tally is fed only through it
and its fallbacks, as a perf script run's Tally is until trace_end (no
merge, no unpickling in between).
"""

import operator

from . import eventlog, mailbox, parse
from ..contract import COUNTED_AS

# Events kept before they go to the log's columns (flush()).
FLUSH_EVERY = 1024

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1
_IP = operator.itemgetter("ip")

class _NotHot(Exception):
    """Raised inside handle's checks: this event takes the general path."""


# The event name's kind, as far as the handler cares.
_OTHER, _ALLOC, _PLAIN = 0, 1, 2


def _name_code(event_name):
    kind = parse.event_kind(event_name)
    return _ALLOC if kind == "alloc" else _PLAIN if kind == "plain" \
        else _OTHER


# handler is one long function on purpose (issue 24 allows it where a
# split costs time): its per-event closure keeps the tally's state in
# local variables. Split into per-kind methods, that state becomes
# attributes: 3 counters kept as attributes of an object and updated by a
# method cost 64 ns an event against 31 ns as a loop's locals (Python
# 3.11, the 2-CPU VM, `python3 -m timeit`, both loops in
# docs/benchmarks.md, "Why the two per-event loops stay one function
# each"), and an event touches about ten.
def handler(reader, tally):
    """handle(event_name, fields, sample=None) for one perf event: adds it
    to tally as tally.add_fields(*reader.read(...)) does (tally.add(None)
    when read gives None) and returns the event's time (None for a
    malformed event or one without a time), for the progress file.
    Raises what those would raise (the caller counts handler errors).

    The log's columns get the allocs and frees in batches: the Tally's
    log is complete, event for event what add_fields would have made it,
    after handle.flush() (every FLUSH_EVERY events, before any event of
    the general path, and by the caller before it reads the log)."""
    read, add_fields, add = reader.read, tally.add_fields, tally.add
    pids_get = reader.pids.get
    chains, convert = reader._chains, reader._convert
    names = {}      # event name -> _ALLOC, _PLAIN or _OTHER
    # tuple of ips -> [frames, tag, keyidx, entry, others]: keyidx, the
    # key's index in the log, and entry, its ExactEntry in tally.stacks,
    # for (frames, tag), None until needed; others: {another tag: a list
    # of the same shape} (one chain nearly always has one tag).
    hot = {}
    last_time = tally._last_time
    last_get = last_time.get
    events = tally.events
    received = tally.received
    frees = tally.frees
    stacks = tally.stacks
    min_size = tally.min_size
    alloc_as = COUNTED_AS.get("alloc", "alloc")
    free_as = COUNTED_AS.get("free", "free")
    log = tally.log
    if log is not None:
        kinds, times, pid_col, tid_col, a_col, b_col, _sizes, keyidx = \
            log.columns()
        intern, log_append, log_keys = log.intern, log.append, log.keys
    # The log's share of each alloc and free, (time, pid, tid, ptr, size,
    # key index or None for a free), until flush() puts them in the log's
    # columns: one tuple an event instead of seven array appends.
    pending = []
    pend = pending.append
    ALLOC, FREE = eventlog.ALLOC, eventlog.FREE

    def flush():
        """Puts the pending events in the log, as EventLog.append would
        have one by one (values that do not fit clamped alike)."""
        if not pending:
            return
        n = len(kinds)
        try:
            t, p, th, a, b, k = zip(*pending)
            times.extend(t)
            pid_col.extend(p)
            tid_col.extend(th)
            a_col.extend(a)
            b_col.extend(b)
        except (TypeError, OverflowError, ValueError):
            # A value a column cannot hold: back to where the log was,
            # then EventLog.append for each, which clamps it.
            for col in (times, pid_col, tid_col, a_col, b_col):
                del col[n:]
            for time, pid, tid, ptr, size, i in pending:
                if i is None:
                    log_append("free", time, pid, tid, ptr, size)
                else:
                    log_append("alloc", time, pid, tid, ptr, size,
                               log_keys[i])
        else:
            keyidx.extend([i for i in k if i is not None])
            kinds.extend([FREE if i is None else ALLOC for i in k])
        finally:
            pending.clear()

    def slow(event_name, fields, sample):
        if pending:
            flush()   # the general path appends to the log itself
        values = read(event_name, fields, sample)
        if values is None:
            add(None)
            return None
        add_fields(*values)
        return values[7]

    def new_rec(ips, chain, tag):
        """hot's record for a chain of ips seen for the first time (its
        RawFrames shared with the Reader's cache)."""
        frames = chains.get(ips)
        if frames is None:
            frames = chains[ips] = convert(chain)
        rec = hot[ips] = [frames, tag, None, None, None]
        return rec

    def other_tag(rec, tag):
        others = rec[4]
        if others is None:
            others = rec[4] = {}
        mine = others.get(tag)
        if mine is None:
            mine = others[tag] = [rec[0], tag, None, None, None]
        return mine

    def handle(event_name, fields, sample=None):
        try:
            code = names[event_name]
        except KeyError:
            code = names[event_name] = _name_code(event_name)
            reader.note(sample)   # before its first chain is converted
        except TypeError:   # an unhashable name
            return slow(event_name, fields, sample)

        if code == _ALLOC:
            # Reader.read's fast path: the same checks, the same values.
            try:
                size = fields["arg2"] & _MASK64
                tag = fields["arg3"] & _MASK32
                if sample is None:
                    tid = fields["common_pid"]
                    sec, nsec = fields["common_s"], fields["common_ns"]
                    if type(sec) is not int or type(nsec) is not int:
                        raise _NotHot
                    time = sec * 1000000000 + nsec
                    pid = pids_get(tid, tid)
                    chain = fields["common_callchain"]
                else:
                    s = sample["sample"]
                    pid, tid, time = s["pid"], s["tid"], s["time"]
                    if type(time) is not int:
                        raise _NotHot
                    chain = sample["callchain"]
                ptr = fields["arg1"] & _MASK64
                if fields.get("arg4"):   # a guest location: Reader.read
                    raise _NotHot
                ips = tuple(map(_IP, chain))
                rec = hot.get(ips)
                if rec is None:
                    rec = new_rec(ips, chain, tag)
            except Exception:  # noqa: BLE001 - _NotHot, or for Reader.read
                # Outside the try: an exception of the general path must
                # reach the caller, not bring it here a second time.
                return slow(event_name, fields, sample)
            return add_alloc(rec, tid, pid, time, ptr, size, tag)

        if code == _PLAIN and sample is None:
            # A free of the plain event (parse.Reader reads it through
            # event_from_perf; this is the same tuple, directly).
            try:
                if fields["kind"] != 1:
                    raise _NotHot
                tid = fields["common_pid"]
                sec, nsec = fields["common_s"], fields["common_ns"]
                if type(sec) is not int or type(nsec) is not int:
                    raise _NotHot
                pid = pids_get(tid, tid)
                size = fields["b"] & _MASK64
                fields["c"] & _MASK32   # the tag: unused, but must be there
                ptr = fields["a"] & _MASK64
            except Exception:  # noqa: BLE001 - _NotHot, or for Reader.read
                # Outside the try: an exception of the general path must
                # reach the caller, not bring it here a second time.
                return slow(event_name, fields, sample)
            time = sec * 1000000000 + nsec
            add_free(time, pid, tid, ptr, size)
            return time

        return slow(event_name, fields, sample)

    def add_alloc(rec, tid, pid, time, ptr, size, tag):
        """Tally.add_fields for an alloc whose values were checked; rec:
        hot's record of its chain of ips."""
        if last_get(tid) == time:
            tally.duplicate_kinds["alloc"] += 1
            return time
        last_time[tid] = time
        events["alloc"] += 1
        received[pid][alloc_as] += 1
        if rec[1] != tag:
            rec = other_tag(rec, tag)
        frames = rec[0]
        if log is not None:
            i = rec[2]
            if i is None:
                i = rec[2] = intern((frames, tag))
            pend((time, pid, tid, ptr, size, i))
            if len(pending) >= FLUSH_EVERY:
                flush()
        if size < min_size:
            tally.filtered += 1
            return time
        if not frames:
            tally.no_callchain += 1
        entry = rec[3]
        if entry is None:
            entry = rec[3] = stacks[(frames, tag)]
        entry.count += 1
        entry.bytes += size
        return time

    def add_free(time, pid, tid, ptr, size):
        """Tally.add_fields for a free whose values were checked."""
        if last_get(tid) == time:
            tally.duplicate_kinds["free"] += 1
            return
        last_time[tid] = time
        events["free"] += 1
        received[pid][free_as] += 1
        frees[0] += 1
        frees[1] += size
        if log is not None:
            pend((time, pid, tid, ptr, size, None))
            if len(pending) >= FLUSH_EVERY:
                flush()

    def mail(records, event_name):
        """The records of the mailbox (mailbox.Mailbox.take: (time, tid,
        kind, a, ..., h), in time order), each added as handle adds the
        plain event it came from (event_name); returns how many. A free
        takes handle's free path; any other kind goes through the general
        path with the field dict perf would have built
        (mailbox.fields_of)."""
        for rec in records:
            if rec[2] == 1:
                time, tid, _kind, ptr, size = rec[:5]
                add_free(time, pids_get(tid, tid), tid, ptr, size)
            else:
                slow(event_name, mailbox.fields_of(rec), None)
        return len(records)

    handle.flush = flush if log is not None else (lambda: None)
    handle.mail = mail
    return handle
