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
import re

# kind: "alloc" | "free" | "sample" | "exit"; frames: tuple of RawFrame,
# leaf first. time: the sample's timestamp in ns (None if perf gave none).
# counts: rt:exit only, (allocs, frees, samples) the ELF file fired while
# recorded (include/rt_exit.h); size and tag are then 0.
Event = collections.namedtuple(
    "Event", "kind pid tid size tag weight frames ptr time counts",
    defaults=(None, None))

# A frame before symbolization. addr: perf's address of the instruction in
# the DSO (sym.start + sym_off), or None when perf had no symbol; then ip
# (the run-time address) is all there is. sym, off: perf's symbol name and
# the offset into it, or None.
RawFrame = collections.namedtuple("RawFrame", "dso addr sym off ip")

_EVENT_RE = re.compile(r"^sdt_rt__(alloc|free|sample|exit)(?:_\d+)?\Z")

# perf's libunwind callchains end, when the stack copy ran out before the
# outermost frame, in an entry whose ip is -1 (shown by perf as
# "[unknown] [unknown]+0xffffffffffffffff"): an end-of-unwind marker, not
# a frame. Any ip this high is outside user space.
_USER_IP_LIMIT = 1 << 63

UNKNOWN_DSO = "[unknown]"


def event_kind(event_name):
    """'alloc', 'free', 'sample', 'exit' for an rt event handler name, else
    None."""
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


def event_from_perf(event_name, fields, sample, perf_inlines=False):
    """An Event, or None if this is not an rt event or is malformed.

    fields: perf's event field dict (arg1.., common_pid, common_callchain);
    sample: perf_sample_dict (sample{pid,tid}, callchain) or None."""
    kind = event_kind(event_name)
    if kind is None or not isinstance(fields, dict):
        return None
    if kind == "exit":
        return _exit_event(fields, sample)
    size = _uint(fields.get("arg2"), 64)
    tag = _uint(fields.get("arg3"), 32)
    if size is None or tag is None:
        return None
    weight = None
    if kind == "sample":
        weight = _uint(fields.get("arg4"), 64)
        if weight is None:
            return None
    ptr = _uint(fields.get("arg1"), 64)
    pid = tid = fields.get("common_pid")
    callchain = fields.get("common_callchain")
    time = None
    if isinstance(sample, dict):
        callchain = sample.get("callchain", callchain)
        s = sample.get("sample")
        if isinstance(s, dict):
            pid, tid = s.get("pid", pid), s.get("tid", tid)
            time = s.get("time") if isinstance(s.get("time"), int) else None
    return Event(kind, pid, tid, size, tag, weight,
                 raw_frames(callchain, perf_inlines), ptr, time)


def _exit_event(fields, sample):
    counts = tuple(_uint(fields.get("arg%d" % i), 64) for i in (1, 2, 3))
    if None in counts:
        return None
    pid = tid = fields.get("common_pid")
    time = None
    if isinstance(sample, dict) and isinstance(sample.get("sample"), dict):
        s = sample["sample"]
        pid, tid = s.get("pid", pid), s.get("tid", tid)
        time = s.get("time") if isinstance(s.get("time"), int) else None
    return Event("exit", pid, tid, 0, 0, None, (), None, time, counts)
