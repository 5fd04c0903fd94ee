"""perf's handler arguments -> Event tuples.

The perf entry script receives every event through trace_unhandled, as
(event_name, fields, perf_sample_dict). This module turns that into an
Event and never raises: perf aborts (SIGABRT) on any exception in a
handler and the whole report is lost, so malformed input yields None.

Facts about perf 6.1 this relies on (docs/design.md, "Facts about perf
6.1 the code relies on", has the rest):
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

from .. import contract

# kind: "alloc" | "free" | "sample" | "exit" | "sample_free" | "release" |
# "commit" | "decommit" | "phase_begin" | "phase_end" (sample_free: size is
# the weight; release: size is the length; phases: tag is the id); frames: tuple of RawFrame,
# leaf first. time: the sample's timestamp in ns (None if perf gave none).
# counts: rt:exit only, (allocs, frees, samples) the ELF file fired while
# recorded (include/rt_exit.h); size and tag are then 0. rate: rt:sample
# only, R as the program sampled with (None from an older header, whose
# rt:sample had no fifth argument).
# phase: rt:sample only, the thread's innermost phase id + 1 (0: none)
# while rt:phase_track was recorded; None from an older header.
Event = collections.namedtuple(
    "Event", "kind pid tid size tag weight frames ptr time counts rate "
             "phase", defaults=(None, None, None, None))

# A frame before symbolization. addr: perf's address of the instruction in
# the DSO (sym.start + sym_off), or None when perf had no symbol; then ip
# (the run-time address) is all there is. sym, off: perf's symbol name and
# the offset into it, or None.
RawFrame = collections.namedtuple("RawFrame", "dso addr sym off ip")


class GuestFrames(tuple):
    """An allocation's raw frames (a tuple of RawFrame, as any key's)
    with the guest location id its runtime gave (RT_ALLOC_GUEST): equal
    only to the same frames with the same id, so the key (frames, tag)
    keeps allocations of two guest locations apart, while everything that
    walks the native frames sees a tuple of RawFrame (docs/probes.md,
    "Guest locations")."""

    def __new__(cls, frames, guest):
        self = tuple.__new__(cls, frames)
        self.guest = guest
        return self

    def __eq__(self, other):
        return isinstance(other, GuestFrames) and \
            self.guest == other.guest and tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((tuple.__hash__(self), self.guest))

    def __reduce__(self):
        return (GuestFrames, (tuple(self), self.guest))

    def __repr__(self):
        return "GuestFrames(%s, %d)" % (tuple.__repr__(self), self.guest)


def with_guest(frames, guest):
    """frames as a key's frames for an allocation at guest location id
    guest (0: none, frames unchanged)."""
    return GuestFrames(frames, guest) if guest else frames


def guest_of(frames):
    """The guest location id of a key's frames (0: none)."""
    return frames.guest if type(frames) is GuestFrames else 0

# perf script calls the handler "sdt_rt__alloc_1"; perf itself (perf
# report --stats, perf probe) names the event "sdt_rt:alloc_1".
_EVENT_RE = re.compile(
    r"^sdt_rt(?:__|:)(%s|plain)(?:_\d+)?\Z" % "|".join(contract.FIRING))

# The wrapper's one event for every probe without a call graph
# (probedefs.py): its field "kind" names the probe, a..h are its
# arguments, as arg1..arg8 are in an event of the probe's own.
PLAIN_KINDS = contract.PLAIN_NAMES
_PLAIN_FIELDS = tuple(zip("abcdefgh", ("arg%d" % i for i in range(1, 9))))
# Kinds recorded without a call graph whose arguments are (ptr, size): the
# size slot carries release's length, sample_free's weight.
_PTR_SIZE_KINDS = ("free", "release", "commit", "decommit", "sample_free")

# The guest location's argument of each allocation event: alloc's fourth,
# sample's seventh (an older header's events have none: 0).
GUEST_ARG = {"alloc": "arg4", "sample": "arg7"}

# perf's libunwind callchains end, when the stack copy ran out before the
# outermost frame, in an entry whose ip is -1 (shown by perf as
# "[unknown] [unknown]+0xffffffffffffffff"): an end-of-unwind marker, not
# a frame. Any ip this high is outside user space.
_USER_IP_LIMIT = 1 << 63

UNKNOWN_DSO = "[unknown]"

# The native reader ends a raw stack with a raw frame of one of these
# DSOs where its unwinding tells why the stack ends (scripts/reader/
# reader.h): the CFI says the frame before it has no caller (a
# process's, a thread's or a coroutine's first function), or the next
# return address lies where no stack copy reaches (a signal handler on
# sigaltstack, a coroutine or fiber, a frame pointer that is not one).
# Not frames: they have no lines (symbolize.py) and no Location
# (pprofdata.py). perf script tells neither: its stacks have none.
OUTERMOST_DSO = "[outermost]"
SWITCHED_DSO = "[stack switched]"
END_DSOS = frozenset((OUTERMOST_DSO, SWITCHED_DSO))
# allocsites-read --text's name of each ("\t-- outermost"), and the raw
# frame the stream gives for it (emit.c: no address, ip 0)
END_TEXT = {"outermost": OUTERMOST_DSO, "stack switched": SWITCHED_DSO}


def end_frame(dso):
    """The raw frame of a stack's end marker of DSO (END_DSOS)."""
    return RawFrame(dso, None, None, None, 0)


def stack_end(frames):
    """OUTERMOST_DSO or SWITCHED_DSO where a key's raw frames end in
    that marker, else None."""
    if frames and frames[-1].dso in END_DSOS:
        return frames[-1].dso
    return None


def without_end(frames):
    """A key's raw frames without their end marker, if any."""
    return frames[:-1] if stack_end(frames) else frames

# perf's name for executable memory without a file (JIT code), whose
# symbols a runtime may write there (scripts/reader/perfmap.c)
_JIT_MAP = re.compile(r"/tmp/perf-\d+\.map\Z")


def is_jit_map(dso):
    """Whether a frame's DSO is JIT code (perf's /tmp/perf-PID.map)."""
    return bool(dso) and _JIT_MAP.match(dso) is not None


def event_kind(event_name):
    """'alloc', 'free', 'sample', 'exit', ... (or 'plain', the wrapper's
    event that carries the kind in its payload) for an rt event's name, as
    perf script's handler ("sdt_rt__alloc_1") or perf ("sdt_rt:alloc_1")
    spells it, else None: the one event-name parser."""
    if not isinstance(event_name, str):
        return None
    m = _EVENT_RE.match(event_name)
    return m.group(1) if m else None


# perf_event_attr.sample_type (at byte 24) bits
_SAMPLE_CALLCHAIN = 1 << 5
_SAMPLE_STACK_USER = 1 << 13


def kernel_callchain(sample):
    """Whether sample's (perf_sample_dict's) callchain is the kernel's
    frame-pointer walk (--call-graph fp: a callchain and no user stack
    copy in its event's attr), whose callers are return addresses: perf
    script hands them on as they are, while its DWARF unwinding (libdw)
    moves a caller back into its call instruction, as the native reader
    does for both. False when it cannot tell (no attr)."""
    attr = sample.get("attr") if isinstance(sample, dict) else None
    if not isinstance(attr, bytes) or len(attr) < 32:
        return False
    sample_type = int.from_bytes(attr[24:32], "little")
    return bool(sample_type & _SAMPLE_CALLCHAIN) and \
        not sample_type & _SAMPLE_STACK_USER


def raw_frames(callchain, perf_inlines=False, return_addresses=False):
    """perf callchain list -> tuple of RawFrame, leaf first.

    perf_inlines: perf ran with inline expansion on, so same-ip entries with
    a different name are inline entries to drop (see the module doc).
    return_addresses: the callers are return addresses (kernel_callchain):
    each but the leaf is moved back one byte, into its call, as the native
    reader does (main.c's user_chain) and perf's DWARF unwinding does, so
    that its line is the call's, not the next statement's. A return
    address at its symbol's very start (a call that never returns, last
    in its function) stays: the symbol perf gave is the next function's,
    and the one before it is not known here."""
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
        if return_addresses and frames and (addr is None or off > 0):
            ip -= 1
            if addr is not None:
                addr, off = addr - 1, off - 1
        frames.append(RawFrame(dso, addr, name, off,
                               None if addr is not None else ip))
    return tuple(frames)


def _uint(value, bits):
    if not isinstance(value, int):
        return None
    return value & ((1 << bits) - 1)


def weight_slot(event):
    """What Tally.add_fields takes as weight: rt:exit's counts, rt:guest's
    (id, parent, line, source, function), rt:sample's (weight, rate,
    phase), else None."""
    if event.kind in ("exit", "guest"):
        return event.counts
    if event.kind == "sample":
        return (event.weight, event.rate, event.phase)
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
    if kind == "plain":
        kind, fields = _unplain(fields)
        if kind is None:
            return None
    if kind == "exit":
        return _exit_event(fields, sample)
    if kind == "guest":
        return _guest_event(fields, sample)
    if kind not in ("alloc", "sample"):
        return _plain_event(kind, fields, sample)
    size = _uint(fields.get("arg2"), 64)
    tag = _uint(fields.get("arg3"), 32)
    if size is None or tag is None:
        return None
    weight = rate = phase = None
    if kind == "sample":
        weight = _uint(fields.get("arg4"), 64)
        if weight is None:
            return None
        if "arg5" in fields:
            rate = _uint(fields["arg5"], 64)
            if rate is None:
                return None
        if "arg6" in fields:
            phase = _uint(fields["arg6"], 64)
            if phase is None:
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
    guest = _uint(fields.get(GUEST_ARG[kind], 0), 64)
    if guest is None:
        return None
    return Event(kind, pid, tid, size, tag, weight,
                 with_guest(raw_frames(callchain, perf_inlines,
                                       kernel_callchain(sample)), guest),
                 ptr,
                 time, None, rate, phase)


def _unplain(fields):
    """(kind, fields as the probe's own event names them) for the plain
    event, or (None, None)."""
    kind = PLAIN_KINDS.get(fields.get("kind"))
    if kind is None:
        return None, None
    renamed = {arg: fields[f] for f, arg in _PLAIN_FIELDS if f in fields}
    for name in ("common_pid", "common_s", "common_ns", "common_callchain"):
        if name in fields:
            renamed[name] = fields[name]
    return kind, renamed


def _thread_time(fields, sample):
    """(pid, tid, time) of an event without a call graph."""
    pid = tid = fields.get("common_pid")
    time = _common_time(fields)
    if isinstance(sample, dict) and isinstance(sample.get("sample"), dict):
        s = sample["sample"]
        pid, tid = s.get("pid", pid), s.get("tid", tid)
        time = s.get("time") if isinstance(s.get("time"), int) else None
    return pid, tid, time


def _exit_event(fields, sample):
    # rt:exit had 3 arguments, now 8 (allocs, frees, samples, sample_frees,
    # releases, commits, phases, untracked); the plain event fetches 8, the
    # last ones 0 for an older header.
    n = max([i for i in range(1, 9) if "arg%d" % i in fields] or [3])
    counts = tuple(_uint(fields.get("arg%d" % i), 64)
                   for i in range(1, max(n, 3) + 1))
    if None in counts:
        return None
    pid, tid, time = _thread_time(fields, sample)
    return Event("exit", pid, tid, 0, 0, None, (), None, time, counts)


def _guest_event(fields, sample):
    """rt:guest: (id, parent, line, source, function) in counts; a name
    that is not a string (perf probe's event fetches the pointer) is
    None."""
    ids = [_uint(fields.get("arg%d" % i), 64) for i in (1, 2, 3)]
    if None in ids:
        return None
    names = [fields.get(a) for a in ("arg4", "arg5")]
    names = [n if isinstance(n, str) else None for n in names]
    pid, tid, time = _thread_time(fields, sample)
    return Event("guest", pid, tid, 0, 0, None, (), None, time,
                 tuple(ids + names))


def _plain_event(kind, fields, sample):
    """free, release, commit, decommit, sample_free: (ptr, size) in ptr and
    size (tag: free's tag); phase_begin, phase_end: the phase id in tag."""
    pid, tid, time = _thread_time(fields, sample)
    if kind in ("phase_begin", "phase_end"):
        phase = _uint(fields.get("arg1"), 32)
        if phase is None:
            return None
        return Event(kind, pid, tid, 0, phase, None, (), None, time)
    ptr = _uint(fields.get("arg1"), 64)
    size = _uint(fields.get("arg2"), 64)
    tag = _uint(fields.get("arg3", 0), 32) if kind == "free" else 0
    if ptr is None or size is None or tag is None:
        return None
    return Event(kind, pid, tid, size, tag, None, (), ptr, time)


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
    as the plain tuple Tally.add_fields takes (kind, pid, tid, size, tag,
    weight, frames, time, ptr; for rt:exit, weight is its counts),
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

    def __init__(self, perf_inlines=False, pids=None, return_addresses=None):
        """return_addresses: whether the callchains are the kernel's fp
        walk (kernel_callchain); None: told by the first event's attr."""
        self.perf_inlines = perf_inlines
        self.pids = pids or {}
        self._kinds = {}    # event name -> kind or None
        # the callers are return addresses (kernel_callchain), known from
        # the first event's attr (None until then: taken as False): one
        # recording, one --call-graph
        self.return_addresses = return_addresses
        self._chains = {}   # tuple of ips -> tuple of RawFrame
        self._frames = {}   # RawFrame -> itself: one object per frame
        self._guested = {}  # (frames, guest) -> GuestFrames

    def read(self, event_name, fields, sample=None):
        try:
            kind = self._kinds[event_name]
        except KeyError:
            kind = self._kinds[event_name] = event_kind(event_name)
            self.note(sample)
        except TypeError:   # an unhashable name: event_from_perf rejects it
            return None
        if kind is None:
            return None
        # Frees come in the plain event; inside perf, hotpath.handler reads
        # the common ones itself, so here every other kind, the plain
        # event's included, takes the slow path.
        if kind not in ("alloc", "sample"):
            return self._read_slow(event_name, fields, sample)
        try:
            size = fields["arg2"] & _MASK64
            tag = fields["arg3"] & _MASK32
            weight = None
            if kind == "sample":   # (weight, rate, phase): Tally.add_fields
                rate = fields.get("arg5")
                phase = fields.get("arg6")
                weight = (fields["arg4"] & _MASK64,
                          None if rate is None else rate & _MASK64,
                          None if phase is None else phase & _MASK64)
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
            guest = fields.get(GUEST_ARG[kind])
            if guest:
                frames = self._guest_frames(frames, guest & _MASK64)
            return (kind, pid, tid, size, tag, weight, frames, time,
                    fields["arg1"] & _MASK64)
        except Exception:  # noqa: BLE001 - never raise; the slow path checks
            return self._read_slow(event_name, fields, sample)

    def note(self, sample):
        """Takes the recording's kind of callchain from the first sample
        dict with an attr (kernel_callchain), before any chain is
        converted."""
        if self.return_addresses is None and isinstance(sample, dict) and \
                "attr" in sample:
            self.return_addresses = kernel_callchain(sample)

    def _guest_frames(self, frames, guest):
        """with_guest, one object per (frames, guest)."""
        key = (frames, guest)
        got = self._guested.get(key)
        if got is None:
            got = self._guested[key] = with_guest(frames, guest)
        return got

    def _convert(self, chain):
        """raw_frames, each frame shared with the chains that have it
        (less memory, and a smaller, faster pickle for workers.py)."""
        frames = self._frames
        return tuple([frames.setdefault(f, f)
                      for f in raw_frames(chain, self.perf_inlines,
                                          bool(self.return_addresses))])

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
                weight_slot(event), event.frames, event.time, event.ptr)
