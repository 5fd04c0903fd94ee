"""perf's handler arguments -> Event tuples.

The perf entry script receives every event through trace_unhandled, as
(event_name, fields, perf_sample_dict). This module turns that into an
Event and never raises: perf aborts (SIGABRT) on any exception in a
handler and the whole report is lost, so malformed input yields None.

Facts about perf 6.1 this relies on (docs/design.md has the rest):
  - event names come as "sdt_rt__alloc"; a second binary carrying the same
    probe gets "sdt_rt__alloc_1", so names are matched by prefix;
  - probe arguments are fields "arg1".."argN"; perf drops an operand it
    cannot translate and numbers the rest, so they are read by name;
  - callchain entries are dicts {ip, sym {start, end, name}, sym_off, dso},
    leaf first. perf has already moved caller ips back into the call
    instruction (unwind-libunwind-local.c decrements them), so no -1 here;
  - with inline expansion on (perf script without --no-inline), perf adds
    an entry per inlined function at the same ip, the inlined functions'
    names first. symbolize.py expands inlines itself, so those entries are
    dropped. Recursion also repeats an ip (each level returns into the same
    call instruction) but with the same name, so it is kept. Recursion
    *through* an inlined helper is indistinguishable from an inline entry;
    hence the wrapper runs perf script --no-inline, where every entry is a
    real frame and nothing is guessed.
"""

import collections
import operator
import re

# kind: "alloc" | "free" | "sample" | "exit"; frames: tuple of RawFrame,
# leaf first. time: the sample's timestamp in ns (None if perf gave none).
# counts: rt:exit only, (allocs, frees, samples) the ELF file fired while
# recorded (include/rt_exit.h); size and tag are then 0. rate: rt:sample
# only, R as the program sampled with (None from an older header, whose
# rt:sample had no fifth argument).
Event = collections.namedtuple(
    "Event", "kind pid tid size tag weight frames ptr time counts rate",
    defaults=(None, None, None))

# A frame before symbolization. addr: perf's address of the instruction in
# the DSO (sym.start + sym_off), or None when perf had no symbol; then ip
# (the run-time address) is all there is. sym, off: perf's symbol name and
# the offset into it, or None.
RawFrame = collections.namedtuple("RawFrame", "dso addr sym off ip")

# perf script calls the handler "sdt_rt__alloc_1"; perf itself (perf
# report --stats, perf probe) names the event "sdt_rt:alloc_1".
_EVENT_RE = re.compile(r"^sdt_rt(?:__|:)(alloc|free|sample|exit)(?:_\d+)?\Z")

# perf's libunwind callchains end, when the stack copy ran out before the
# outermost frame, in an entry whose ip is -1 (shown by perf as
# "[unknown] [unknown]+0xffffffffffffffff"): an end-of-unwind marker, not
# a frame. Any ip this high is outside user space.
_USER_IP_LIMIT = 1 << 63

UNKNOWN_DSO = "[unknown]"


def event_kind(event_name):
    """'alloc', 'free', 'sample', 'exit' for an rt event's name, as perf
    script's handler ("sdt_rt__alloc_1") or perf ("sdt_rt:alloc_1") spells
    it, else None: the one event-name parser."""
    if not isinstance(event_name, str):
        return None
    m = _EVENT_RE.match(event_name)
    return m.group(1) if m else None


def raw_frames(callchain, perf_inlines=False):
    """perf callchain list -> tuple of RawFrame, leaf first.

    perf_inlines: perf ran with inline expansion on, so same-ip entries with
    a different name are inline entries to drop (see the module doc)."""
    if not isinstance(callchain, (list, tuple)):
        return ()
    frames = []
    last_ip = last_name = None
    for entry in callchain:
        if not isinstance(entry, dict):
            continue
        ip = entry.get("ip")
        if not isinstance(ip, int) or ip >= _USER_IP_LIMIT:
            continue
        dso = entry.get("dso") or UNKNOWN_DSO
        sym = entry.get("sym")
        addr = name = off = None
        if isinstance(sym, dict):
            start, off = sym.get("start"), entry.get("sym_off")
            name = sym.get("name")
            if isinstance(start, int) and isinstance(off, int):
                addr = start + off
        inline_entry = perf_inlines and ip == last_ip and name != last_name
        last_ip, last_name = ip, name
        if inline_entry:
            continue
        if addr is None:
            off = None
        frames.append(RawFrame(dso, addr, name, off,
                               None if addr is not None else ip))
    return tuple(frames)


def _uint(value, bits):
    if not isinstance(value, int):
        return None
    return value & ((1 << bits) - 1)


def weight_slot(event):
    """What Tally.add_fields takes as weight: rt:exit's counts, rt:sample's
    (weight, rate), else None."""
    if event.kind == "exit":
        return event.counts
    if event.kind == "sample":
        return (event.weight, event.rate)
    return event.weight


def event_from_perf(event_name, fields, sample, perf_inlines=False):
    """An Event, or None if this is not an rt event or is malformed.

    fields: perf's event field dict (arg1.., common_pid, common_s,
    common_ns, common_callchain); sample: perf_sample_dict (sample{pid,
    tid, time}, callchain) or None. Without a sample dict, the thread is
    common_pid (the tracepoint's pid field is the thread id) and the time
    common_s * 10**9 + common_ns."""
    kind = event_kind(event_name)
    if kind is None or not isinstance(fields, dict):
        return None
    if kind == "exit":
        return _exit_event(fields, sample)
    size = _uint(fields.get("arg2"), 64)
    tag = _uint(fields.get("arg3"), 32)
    if size is None or tag is None:
        return None
    weight = rate = None
    if kind == "sample":
        weight = _uint(fields.get("arg4"), 64)
        if weight is None:
            return None
        if "arg5" in fields:
            rate = _uint(fields["arg5"], 64)
            if rate is None:
                return None
    ptr = _uint(fields.get("arg1"), 64)
    pid = tid = fields.get("common_pid")
    callchain = fields.get("common_callchain")
    time = _common_time(fields)
    if isinstance(sample, dict):
        callchain = sample.get("callchain", callchain)
        s = sample.get("sample")
        if isinstance(s, dict):
            pid, tid = s.get("pid", pid), s.get("tid", tid)
            if isinstance(s.get("time"), int):
                time = s["time"]
    return Event(kind, pid, tid, size, tag, weight,
                 raw_frames(callchain, perf_inlines), ptr, time, None, rate)


def _exit_event(fields, sample):
    counts = tuple(_uint(fields.get("arg%d" % i), 64) for i in (1, 2, 3))
    if None in counts:
        return None
    pid = tid = fields.get("common_pid")
    time = _common_time(fields)
    if isinstance(sample, dict) and isinstance(sample.get("sample"), dict):
        s = sample["sample"]
        pid, tid = s.get("pid", pid), s.get("tid", tid)
        time = s.get("time") if isinstance(s.get("time"), int) else None
    return Event("exit", pid, tid, 0, 0, None, (), None, time, counts)


def _common_time(fields):
    """The sample time in ns from the tracepoint fields, or None."""
    s, ns = fields.get("common_s"), fields.get("common_ns")
    if isinstance(s, int) and isinstance(ns, int):
        return s * 1000000000 + ns
    return None


_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1
_IP = operator.itemgetter("ip")


class Reader:
    """event_from_perf for the per-event path inside perf, with the work
    that repeats across events done once.

    read(event_name, fields, sample=None) returns the fields of an Event
    but ptr, as the plain tuple Tally.add_fields takes (kind, pid, tid,
    size, tag, weight, frames, time; for rt:exit, weight is its counts),
    or None where event_from_perf returns None; like it, it never raises
    (anything unexpected goes through event_from_perf itself).

    sample None is what a 3-argument trace_unhandled gets: perf then does
    not build perf_sample_dict at all (registers, raw data, decoded
    fields; about a tenth of its own per-event work here). The thread is
    then common_pid (a tracepoint's pid field is the thread id), the time
    common_s * 10**9 + common_ns, and the process id comes from pids
    ({thread id: process id}, from perfdata.scan), or is the thread id.

    The call chain is converted once per distinct chain of ips: the
    RawFrames of a chain are a function of its ips and the address space
    of the process, so a whole chain of equal ips (typically 10 to 20
    return addresses) in a different address space would have to be the
    same call path at the same addresses. Many samples share a stack
    (213431 samples of build/minicc 500 have 3510 distinct chains), so the
    conversion (about 20 us a chain) runs once per chain, and Tally finds
    the same tuple object for each repeat."""

    def __init__(self, perf_inlines=False, pids=None):
        self.perf_inlines = perf_inlines
        self.pids = pids or {}
        self._kinds = {}    # event name -> kind or None
        self._chains = {}   # tuple of ips -> tuple of RawFrame
        self._frames = {}   # RawFrame -> itself: one object per frame

    def read(self, event_name, fields, sample=None):
        try:
            kind = self._kinds[event_name]
        except KeyError:
            kind = self._kinds[event_name] = event_kind(event_name)
        except TypeError:   # an unhashable name: event_from_perf rejects it
            return None
        if kind is None:
            return None
        if kind == "exit":   # once per process: the slow path will do
            return self._read_slow(event_name, fields, sample)
        try:
            size = fields["arg2"] & _MASK64
            tag = fields["arg3"] & _MASK32
            weight = None
            if kind == "sample":   # (weight, rate): see Tally.add_fields
                rate = fields.get("arg5")
                weight = (fields["arg4"] & _MASK64,
                          None if rate is None else rate & _MASK64)
            if sample is None:
                tid = fields["common_pid"]
                sec, nsec = fields["common_s"], fields["common_ns"]
                if type(sec) is not int or type(nsec) is not int:
                    return self._read_slow(event_name, fields, sample)
                time = sec * 1000000000 + nsec
                pid = self.pids.get(tid, tid)
                chain = fields["common_callchain"]
            else:
                s = sample["sample"]
                pid, tid, time = s["pid"], s["tid"], s["time"]
                if type(time) is not int:
                    return self._read_slow(event_name, fields, sample)
                chain = sample["callchain"]
            key = tuple(map(_IP, chain))
            frames = self._chains.get(key)
            if frames is None:
                frames = self._chains[key] = self._convert(chain)
            return kind, pid, tid, size, tag, weight, frames, time
        except Exception:  # noqa: BLE001 - never raise; the slow path checks
            return self._read_slow(event_name, fields, sample)

    def _convert(self, chain):
        """raw_frames, each frame shared with the chains that have it
        (less memory, and a smaller, faster pickle for parallel.py)."""
        frames = self._frames
        return tuple([frames.setdefault(f, f)
                      for f in raw_frames(chain, self.perf_inlines)])

    def _read_slow(self, event_name, fields, sample):
        event = event_from_perf(event_name, fields, sample, self.perf_inlines)
        if event is None:
            return None
        pid = event.pid
        if not isinstance(sample, dict):
            try:
                pid = self.pids.get(event.tid, event.tid)
            except TypeError:   # an unhashable tid
                pass
        return (event.kind, pid, event.tid, event.size, event.tag,
                weight_slot(event), event.frames, event.time)
