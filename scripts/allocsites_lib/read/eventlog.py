"""The rt events in time order, kept compactly for the liveness sweep.

Liveness and phases (liveness.sweep) need every event in order across the
perf script workers: a free in worker 2 of an allocation in worker 1. A
list of tuples would cost ~150 bytes an event; an EventLog keeps one
`array` per field instead, and each (raw stack, tag) key once, as a small
int into a list.

Columns (one entry per event unless said):
  kinds  'B'  index into KINDS
  times  'q'  ns (a missing time takes the one of the event before, so
              the column stays ascending)
  pids   'i', tids 'i'
  a, b   'Q'  the event's two arguments (table below)
  sizes  'Q'  only for sample events: the allocation's size
  keyidx 'I'  only for alloc and sample events: index into keys

  kind         a      b       key
  alloc        ptr    size    (frames, tag)
  sample       ptr    weight  (frames, tag)   + size
  free         ptr    size
  sample_free  ptr    weight
  release      base   len
  commit       ptr    size    (decommit alike)
  phase_begin  id     0       (phase_end alike)
  exit         0      0       the process's rt:exit

Spilled (spill_to): a long recording's log does not stay in memory. Every
SPILL_EVERY events (2^19) the columns are appended to an unlinked temporary
file and emptied in place (the hot path keeps references to them), and
readers walk chunks() instead of the columns: memory is then one chunk
(about 18 MB), not the run's length. The native report spills; the
perf script workers' logs travel pickled and are not spilled.

Memory: 33 bytes an event, plus 4 for alloc and sample events and 8 more
for sample events (and array's up-to-12% growth slack): 35 bytes an event
for an exact log of as many frees as allocations. Measured with nbytes()
on 1 million such events: 35.0 bytes each, and as much pickled
(tests/unit/test_eventlog.py keeps it under 40). append() costs ~0.6 us
an event on the 2-CPU VM (Python 3.11, keys of 20 frames: hashing the
key to intern it is most of it).
"""

import array
import heapq
import os
import tempfile

KINDS = ("alloc", "free", "sample", "sample_free", "release", "commit",
         "decommit", "phase_begin", "phase_end", "exit")
KIND_CODE = {name: i for i, name in enumerate(KINDS)}
ALLOC, FREE, SAMPLE, SAMPLE_FREE, RELEASE, COMMIT, DECOMMIT, \
    PHASE_BEGIN, PHASE_END, EXIT = range(len(KINDS))
KEYED = (ALLOC, SAMPLE)   # the kinds that carry a key

# (name, typecode, lowest, highest): what a bad value is clamped to.
_I32 = (-(1 << 31), (1 << 31) - 1)
_U64 = (0, (1 << 64) - 1)
_COLUMNS = (("kinds", "B"), ("times", "q"), ("pids", "i"), ("tids", "i"),
            ("a", "Q"), ("b", "Q"), ("sizes", "Q"), ("keyidx", "I"))


def _clamp(value, lo, hi):
    """An int within [lo, hi] for whatever came (None and junk: lo)."""
    try:
        value = int(value)
    except (TypeError, ValueError, OverflowError):
        return lo
    return lo if value < lo else hi if value > hi else value


SPILL_EVERY = 1 << 19


class EventLog:
    """Columnar, append-only log of rt events. Pickles (a worker's log
    travels inside its Tally) unless spilled."""

    KINDS = KINDS

    def __init__(self):
        for name, code in _COLUMNS:
            setattr(self, name, array.array(code))
        self.keys = []      # index -> key
        self._index = {}    # key -> index
        self._file = None   # the spill file (spill_to)
        self._chunks = []   # [(offset, [length per column])] in the file
        self._spilled = 0   # events in the file
        self._first = self._last = None   # times of the spilled events

    # The answer of the sweep the reader ran itself (allocsites-read
    # --sweep: allocsites-sweep's lines, native.fill_tally), its events
    # then swept and not kept: a log to sweep once, not to read.
    answered = None

    class NotKept(Exception):
        """The log's events were swept by the reader, not kept."""

    @classmethod
    def from_file(cls, f, chunks, keys, events, first, last):
        """The log another process wrote to the file f, chunk by chunk in
        the spill format (allocsites-read, reader/tally.c): chunks
        [(offset, [length per column])], keys its key per index, events
        its length, first and last its first and last times."""
        log = cls()
        log.keys = list(keys)
        log._index = {key: i for i, key in enumerate(log.keys)}
        log._file, log._chunks, log._spilled = f, list(chunks), events
        log._every = SPILL_EVERY
        if events:
            log._first, log._last = first, last
        return log

    # ------------------------------------------------------------ spilling

    def spill_to(self, directory=None, every=SPILL_EVERY):
        """From now on keep at most `every` events in memory: the rest go
        to a temporary file in directory (TMPDIR by default), unlinked at
        once, so nothing is left behind however the process ends."""
        fd, path = tempfile.mkstemp(prefix="allocsites-log-", dir=directory)
        os.unlink(path)
        self._file = os.fdopen(fd, "w+b")
        self._every = every
        return self

    @property
    def spilled(self):
        return self._file is not None

    def maybe_spill(self):
        """Moves the columns to the file when they hold `every` events.
        Raises OSError when the file cannot be written (a full disk)."""
        if self._file is not None and len(self.kinds) >= self._every:
            self._spill()

    def _spill(self):
        f = self._file
        f.seek(0, os.SEEK_END)
        offset = f.tell()
        lengths = []
        for name, _ in _COLUMNS:
            col = getattr(self, name)
            col.tofile(f)
            lengths.append(len(col))
        if self._first is None:
            self._first = self.times[0]
        self._last = self.times[-1]
        self._chunks.append((offset, lengths))
        self._spilled += len(self.kinds)
        for name, _ in _COLUMNS:
            del getattr(self, name)[:]   # in place: references stay valid

    def chunks(self):
        """The columns (as columns() gives them) of each chunk in time
        order: the spilled ones read back one at a time, then the ones in
        memory. keyidx and sizes restart in each chunk."""
        self._kept()
        for offset, lengths in self._chunks:
            self._file.seek(offset)
            cols = []
            for (_, code), n in zip(_COLUMNS, lengths):
                col = array.array(code)
                col.fromfile(self._file, n)
                cols.append(col)
            yield tuple(cols)
        yield self.columns()

    def export(self, directory=None):
        """(file, [(offset, [length per column])]): every event's columns
        in a file, chunk by chunk as _spill writes them, for a reader in
        another process (allocsites-sweep). A spilled log's file is used,
        its in-memory events appended at the end as one more chunk (the
        log itself is unchanged: a later spill appends after them); any
        other log is written to a new unlinked temporary file, which the
        caller closes."""
        self._kept()
        if self._file is None:
            fd, path = tempfile.mkstemp(prefix="allocsites-log-",
                                        dir=directory)
            os.unlink(path)
            f, table = os.fdopen(fd, "w+b"), []
        else:
            f, table = self._file, list(self._chunks)
        if len(self.kinds) or not table:
            f.seek(0, os.SEEK_END)
            offset = f.tell()
            for name, _ in _COLUMNS:
                getattr(self, name).tofile(f)
            table.append((offset, [len(getattr(self, name))
                                   for name, _ in _COLUMNS]))
        f.flush()
        return f, table

    def _kept(self):
        if self.answered is not None and self._spilled:
            raise EventLog.NotKept("the event log was swept by the reader, "
                                   "not kept")

    def chunk_count(self):
        """The chunks in the log's file (each as _spill writes it)."""
        return len(self._chunks)

    def first_time(self):
        if self._first is not None:
            return self._first
        return self.times[0] if self.times else None

    def last_time(self):
        if self.times:
            return self.times[-1]
        return self._last

    # ------------------------------------------------------------ building

    def intern(self, key):
        """The small int that stands for key in this log."""
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.keys)
            self.keys.append(key)
        return i

    def append(self, kind, time, pid, tid, a, b, key=None, size=None):
        """One event, in time order (the table in the module docstring).
        size: the allocation's size, for sample events only (b is the
        weight there); None stands for b. A value that does not fit its
        column (negative, too large, None) is clamped, never raised on:
        this runs inside perf's event handler."""
        code = KIND_CODE[kind]   # an unknown kind is a caller's bug
        if time is None:
            time = self.last_time() or 0
        if code == SAMPLE and size is None:
            size = b
        n = len(self.kinds)
        try:
            self.times.append(time)
            self.pids.append(pid)
            self.tids.append(tid)
            self.a.append(a)
            self.b.append(b)
            if code == SAMPLE:
                self.sizes.append(size)
        except (TypeError, OverflowError, ValueError):
            self._truncate(n)
            self.times.append(_clamp(time, 0, (1 << 63) - 1))
            self.pids.append(_clamp(pid, *_I32))
            self.tids.append(_clamp(tid, *_I32))
            self.a.append(_clamp(a, *_U64))
            self.b.append(_clamp(b, *_U64))
            if code == SAMPLE:
                self.sizes.append(_clamp(size, *_U64))
        if code == ALLOC or code == SAMPLE:
            self.keyidx.append(self.intern(key))
        self.kinds.append(code)   # last: the event exists once this is in

    def _truncate(self, n):
        """Drops what a failed append added past event n (sizes is
        appended last: a failed append never added to it)."""
        for name in ("times", "pids", "tids", "a", "b"):
            del getattr(self, name)[n:]

    def extend(self, other):
        """Appends other's events (a later worker's: later in time) and
        returns self; other's keys are re-interned into this log. If other
        starts before this log ends (workers merged out of order), the two
        are merged by time instead, this log's events first at equal
        times."""
        if not len(other):
            return self
        if len(self) and other.times[0] < self.times[-1]:
            merged = EventLog()
            for event in heapq.merge(iter(self), iter(other),
                                     key=lambda e: e[1]):
                merged.append(*event[:6], key=event[7], size=event[6])
            self.__setstate__(merged.__getstate__())
            return self
        remap = [self.intern(key) for key in other.keys]
        for name in ("kinds", "times", "pids", "tids", "a", "b", "sizes"):
            getattr(self, name).extend(getattr(other, name))
        if remap == list(range(len(remap))):
            self.keyidx.extend(other.keyidx)
        else:
            self.keyidx.extend(array.array("I", map(remap.__getitem__,
                                                    other.keyidx)))
        return self

    # ------------------------------------------------------------ reading

    def __len__(self):
        return self._spilled + len(self.kinds)

    def __iter__(self):
        """(kind, time, pid, tid, a, b, size, key) per event; size is b
        but for sample events, key None but for alloc and sample."""
        keys = self.keys
        for kinds, times, pids, tids, col_a, col_b, sizes, keyidx in \
                self.chunks():
            keyidx, sizes = iter(keyidx), iter(sizes)
            for code, time, pid, tid, a, b in zip(kinds, times, pids, tids,
                                                  col_a, col_b):
                if code == ALLOC:
                    yield (KINDS[code], time, pid, tid, a, b, b,
                           keys[next(keyidx)])
                elif code == SAMPLE:
                    yield (KINDS[code], time, pid, tid, a, b, next(sizes),
                           keys[next(keyidx)])
                else:
                    yield KINDS[code], time, pid, tid, a, b, b, None

    def columns(self):
        """The raw columns, for a reader that walks them itself (the
        sweep): (kinds, times, pids, tids, a, b, sizes, keyidx)."""
        return tuple(getattr(self, name) for name, _ in _COLUMNS)

    def nbytes(self):
        """Bytes held by the columns (their allocated size, slack
        included; not the keys, which the Tally holds anyway)."""
        return sum(col.buffer_info()[1] * col.itemsize
                   for col in self.columns())

    def __eq__(self, other):
        if not isinstance(other, EventLog):
            return NotImplemented
        if self.keys == other.keys and not (self.spilled or other.spilled):
            return self.columns() == other.columns()
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None

    def __repr__(self):
        return "EventLog(%d events, %d keys)" % (len(self), len(self.keys))

    # ------------------------------------------------------------ pickling

    def __getstate__(self):
        if self._file is not None:
            raise TypeError("a spilled EventLog does not pickle")
        state = {name: getattr(self, name) for name, _ in _COLUMNS}
        state["keys"] = self.keys
        return state

    def __setstate__(self, state):
        for name, _ in _COLUMNS:
            setattr(self, name, state[name])
        self.keys = list(state["keys"])
        self._index = {key: i for i, key in enumerate(self.keys)}
        self._file, self._chunks, self._spilled = None, [], 0
        self._first = self._last = None
