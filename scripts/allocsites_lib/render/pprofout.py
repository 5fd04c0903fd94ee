"""--pprof FILE: the profile as a gzipped profile.proto.

--pprof FILE: the profile as pprof reads it (a gzip-compressed
profile.proto, github.com/google/pprof/proto/profile.proto), written the
way Go writes a heap profile: sample types alloc_objects/count and
alloc_space/bytes, values already unbiased in sampled mode (period =
R), one Location per (binary, address) with its inlined functions as
Line entries (innermost first), a Mapping per binary with its build-id
and has_functions/has_filenames/has_line_numbers/has_inline_frames set,
so pprof does not symbolize again, the tag as the string label "tag",
and Go's numeric label "bytes" (unit bytes): the sample's bytes over its
count, as Go computes it for a heap profile's sample. Go keeps a sample
per stack and size, so its label is each object's size; allocsites keeps
a sample per stack and tag, so the label is the objects' size where the
site allocates one size (the common case that -tagfocus=bytes=... is
for) and their mean where it allocates several. With threads (from the
event log, analyze/threads.py): a sample per stack and thread, labelled
with the numeric "pid" and "tid" as perf_data_converter labels them.

The allocator's own frame (the one holding the probe) is left out of
each stack, as Go leaves out runtime.mallocgc, and so are the wrappers
the table skips (--skip, RT_SKIP): leading frames whose function matches
are dropped, a location whose inlined lines only partly match keeps the
rest, so that pprof's flat figures name the callers the table names.
Byte values whose sum would pass int64 are given in kilobytes (or a
larger unit): pprof sums them as int64 unchecked (byte_units).
Encoded by hand: the message has seven kinds of fields, and perf's
embedded Python has no protobuf module."""

import gzip
import re

from ..analyze.fold import tag_label, tag_selected
from ..analyze.guest import GUEST_DSO, INTERPRETER
from ..analyze.symbolize import bare_function
from ..read import elf as elfmod
from ..read.parse import guest_of


# profile.proto field numbers
P_SAMPLE_TYPE, P_SAMPLE, P_MAPPING, P_LOCATION, P_FUNCTION = 1, 2, 3, 4, 5
P_STRINGS, P_PERIOD_TYPE, P_PERIOD, P_DEFAULT_TYPE = 6, 11, 12, 14
P_TIME_NANOS, P_DURATION_NANOS = 9, 10
# A Mapping's range: 2^44 bytes each, mapping i at i * 2^44, so that the
# binaries' ranges never overlap (pprof merges and attributes by range).
MAPPING_BITS = 44
MAPPING_MASK = (1 << MAPPING_BITS) - 1


def mapping_base(mid):
    return mid << MAPPING_BITS


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(field, n):
    return _varint(field << 3) + _varint(n) if n else b""


def _bytes(field, data):
    return _varint(field << 3 | 2) + _varint(len(data)) + data


INT64_MAX = (1 << 63) - 1


def _whole(v):
    """A value (a float in sampled mode) as the integer pprof gets."""
    return int(round(v))


def saturated(v):
    """A sample value as profile.proto's int64 holds it: an allocation of
    SIZE_MAX bytes (or a sum past 2^63) would otherwise wrap to a
    negative number; it stays at the largest int64 instead."""
    v = int(round(v))
    return INT64_MAX if v > INT64_MAX else v


def _packed(field, values):
    return _bytes(field, b"".join(_varint(v) for v in values)) if values \
        else b""


class _Strings:
    def __init__(self):
        self.table, self.index = [""], {"": 0}

    def __call__(self, s):
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.table)
            self.table.append(s)
        return i


class _Locations:
    """The profile's Mappings, Locations and Functions, numbered as the
    samples first name them."""

    def __init__(self, symbolizer, skip):
        self.symbolizer = symbolizer
        self.skip_re = re.compile(skip) if skip else None
        self.mappings, self.locations, self.functions = {}, {}, {}

    def mapping_id(self, dso):
        if dso not in self.mappings:
            self.mappings[dso] = len(self.mappings) + 1
        return self.mappings[dso]

    def function_id(self, frame):
        # "_start+0x20" (no line info) is function _start: the offset is
        # the Location's address already, and pprof groups by name
        key = (bare_function(frame), frame.file)
        if key not in self.functions:
            self.functions[key] = len(self.functions) + 1
        return self.functions[key]

    def location_id(self, raw, drop=0):
        """The Location of raw's address; drop: without its innermost
        `drop` inlined lines (skipped wrappers), a Location of its own.
        Its address is the DSO's address placed in its Mapping's range
        (mapping_base), so that no two Mappings overlap."""
        addr = raw.addr if raw.addr is not None else raw.ip
        key = (raw.dso, addr, drop)
        loc = self.locations.get(key)
        if loc is None:
            mid = self.mapping_id(raw.dso)
            lines = b"".join(
                _bytes(4, _int(1, self.function_id(f)) + _int(2, f.line))
                for f in self.symbolizer.frames(raw)[drop:])
            n = len(self.locations) + 1
            loc = self.locations[key] = (n, _bytes(
                P_LOCATION, _int(1, n) + _int(2, mid) +
                _int(3, mapping_base(mid) + ((addr or 0) & MAPPING_MASK)) +
                lines))
        return loc[0]

    def guest_location_id(self, frame):
        """The Location of a guest frame (analyze/guest.py): in the
        [guest] Mapping, numbered in its range, one Line."""
        key = (GUEST_DSO, frame.function, frame.file, frame.line)
        loc = self.locations.get(key)
        if loc is None:
            mid = self.mapping_id(GUEST_DSO)
            n = len(self.locations) + 1
            line = _bytes(4, _int(1, self.function_id(frame)) +
                          _int(2, frame.line))
            loc = self.locations[key] = (n, _bytes(
                P_LOCATION, _int(1, n) + _int(2, mid) +
                _int(3, mapping_base(mid) + n) + line))
        return loc[0]

    def stack_ids(self, raws, guest=None, gid=0):
        """Location ids from the call site outwards: the leading wrapper
        frames skip names left out (all of a stack's: none left out, as
        fold keeps the stack). guest: a GuestView (--guest): the guest
        frames of gid first, then the native frames outside the dispatch
        loop, as fold splices them."""
        if guest is not None:
            head = [self.guest_location_id(f) for f in
                    (guest.frames(gid) if gid else (INTERPRETER,))]
            if guest.dispatch is None:
                return head + self._native_ids(raws)
            k = guest.dispatch_index([self.symbolizer.frames(r)
                                      for r in raws])
            return head + [self.location_id(r) for r in raws[k:]]
        return self._native_ids(raws)

    def _native_ids(self, raws):
        skip_re = self.skip_re
        if skip_re is None:
            return [self.location_id(raw) for raw in raws]
        for i, raw in enumerate(raws):
            lines = self.symbolizer.frames(raw)
            k = 0
            while k < len(lines) and skip_re.search(lines[k].function or ""):
                k += 1
            if k < len(lines):
                return [self.location_id(raw, k)] + \
                    [self.location_id(r) for r in raws[i + 1:]]
        return [self.location_id(raw) for raw in raws]

    def encoded(self, strings):
        """The Mapping, Location and Function messages."""
        out = []
        for dso, mid in self.mappings.items():
            image = self.symbolizer.elf(dso) if dso != GUEST_DSO else None
            build_id = elfmod.build_id(image) if image is not None else None
            # Each binary its own range (its addresses are the DSO's, not
            # the process's: perf's per-DSO address, or a run-time one
            # without a symbol), file_offset so that address - start +
            # offset is it.
            out.append(_bytes(P_MAPPING, _int(1, mid) +
                              _int(2, mapping_base(mid)) +
                              _int(3, mapping_base(mid + 1)) +
                              _int(5, strings(dso)) +
                              _int(6, strings(build_id or "")) +
                              _int(7, 1) + _int(8, 1) + _int(9, 1) +
                              _int(10, 1)))
        out += [loc for _, loc in sorted(self.locations.values())]
        for (name, path), fid in self.functions.items():
            out.append(_bytes(P_FUNCTION, _int(1, fid) +
                              _int(2, strings(name)) +
                              _int(3, strings(name)) +
                              _int(4, strings(path))))
        return out


class _Labels:
    """A sample's labels, their keys interned once."""

    def __init__(self, strings):
        self.strings = strings
        self.tag = strings("tag")
        self.phase_key = strings("phase")
        self.bytes_key = strings("bytes")
        self.pid, self.tid = strings("pid"), strings("tid")

    def text(self, key, value):
        return _bytes(3, _int(1, key) + _int(2, self.strings(value)))

    def num(self, key, n, unit=0):
        # Label.num (3) and num_unit (4): pprof filters by them
        return _bytes(3, _int(1, key) + _int(3, n) + _int(4, unit))

    def size(self, count, nbytes):
        """Go's "bytes": the objects' size (their mean over several)."""
        return self.num(self.bytes_key, saturated(nbytes / count),
                        self.bytes_key) if count > 0 else b""

    def thread(self, pid, tid):
        return self.num(self.pid, pid) + self.num(self.tid, tid)


def _samples(locs, labels, names, tags, phased, inuse, threads, guest=None):
    """The samples, as (location ids, [values], labels) to encode (see
    _encode_samples): per phase and key, or per phase, key and thread
    (and then what was live at the end a sample of its own)."""
    out = []
    for phase, phase_entries, phase_live in phased:
        phase_label = b"" if phase is None else \
            labels.text(labels.phase_key, str(phase))
        for (frames, tag), entry in phase_entries.items():
            if not tag_selected(tag, names, tags):
                continue
            name = tag_label(tag, names)
            ids = _packed(1, locs.stack_ids(frames[1:], guest,
                                            guest_of(frames)))
            label = labels.text(labels.tag, name)
            kl = (phase_live or {}).get((frames, tag)) if inuse else None
            leaked = [_whole(kl.leaked_count), _whole(
                kl.leaked_bytes)] if kl is not None else [0, 0]
            by_thread = threads.get((phase, (frames, tag))) \
                if threads is not None else None
            if not by_thread:
                values = [_whole(entry.count), _whole(entry.bytes)]
                out.append((ids, values + leaked if inuse else values,
                            label + phase_label +
                            labels.size(entry.count, entry.bytes)))
                continue
            for (pid, tid), (count, nbytes) in sorted(by_thread.items()):
                values = [_whole(count), _whole(nbytes)]
                out.append((ids, values + [0, 0] if inuse else values,
                            label + phase_label + labels.size(count, nbytes)
                            + labels.thread(pid, tid)))
            if any(leaked):
                out.append((ids, [0, 0] + leaked, label + phase_label))
    return out


# The units a bytes value may be given in, as pprof's measurement package
# reads them ("kilobytes" -> kB): each 2^10 of the one before.
BYTE_UNITS = ("bytes", "kilobytes", "megabytes", "gigabytes", "terabytes",
              "petabytes")


def byte_units(samples, types):
    """For each sample type, the power of 2^10 its values are divided by:
    0 (bytes) unless its values add up past int64. pprof adds the values
    up as int64 (a function's flat and cum, the total) and does not check
    for overflow: two samples of 2^63-1 bytes (one SIZE_MAX allocation
    each) showed a total of -2 B. A bytes type whose sum would pass
    INT64_MAX is given in kilobytes, megabytes, ... instead, the first
    in which its sum, its values rounded to the nearest unit, fits.
    Counts are left as they are (2^63 allocations are not recorded)."""
    shifts = []
    for i, (_, unit) in enumerate(types):
        shift = 0
        if unit == "bytes":
            # each value rounds up by at most half a unit
            total = sum(v[i] for _, v, _ in samples)
            n = len(samples)
            while shift < len(BYTE_UNITS) - 1 and \
                    (total >> (10 * shift)) + n > INT64_MAX:
                shift += 1
        shifts.append(shift)
    return shifts


def scaled(value, shift):
    """value (bytes) in units of 2^(10 shift) bytes, rounded to nearest."""
    if not shift:
        return value
    return (value + (1 << (10 * shift - 1))) >> (10 * shift)


def _encode_samples(samples, shifts):
    return [_bytes(P_SAMPLE, ids + _packed(
        2, [saturated(scaled(v, k)) for v, k in zip(values, shifts)]) + rest)
            for ids, values, rest in samples]


def encode(tally, symbolizer, names, mode, sample_bytes=0, tags=None,
           entries=None, live=None, skip=None, time_nanos=0,
           duration_nanos=0, phased=None, threads=None, guest=None):
    """The gzip-compressed profile of tally (read/tally.py's Tally, resolved by
    symbolizer); names: {tag: name}; tags: the --tag filter or None;
    entries: {key: entry} instead of the tally's (one --phase); live:
    {key: liveness.KeyLive} when frees were recorded: then the profile
    also has Go's inuse_objects and inuse_space, what was live at the end
    (as a Go heap profile taken at exit). skip: the wrappers' regex
    (fold's), or None. time_nanos, duration_nanos: the recording's start
    (ns since the epoch) and length, 0 when unknown: what a
    continuous-profiling upload files the profile under. phased: instead
    of entries and live, [(phase name or None, {key: entry}, {key:
    KeyLive} or None)]: a sample per phase and key, labelled "phase"
    (none outside every phase); their sums are the whole profile's.
    threads: {(phase or None, key): {(pid, tid): [count, bytes]}}
    (analyze/threads.py), or None: given, each key's allocations are a
    sample per thread, labelled "pid" and "tid", and what was live at the
    end a sample of its own (its threads are not known). guest: a
    guest.GuestView (--guest): stacks spliced with the guest frames."""
    strings = _Strings()
    inuse = live is not None or \
        any(pl is not None for _, _, pl in phased or ())
    types = [("alloc_objects", "count"), ("alloc_space", "bytes")]
    if inuse:
        types += [("inuse_objects", "count"), ("inuse_space", "bytes")]
    for t, u in types:   # first in the string table, as they always were
        strings(t), strings(u)
    locs, labels = _Locations(symbolizer, skip), _Labels(strings)
    if phased is None:
        phased = [(None, tally.entries(mode) if entries is None else entries,
                   live)]
    samples = _samples(locs, labels, names, tags, phased, inuse, threads,
                       guest)
    shifts = byte_units(samples, types)
    out = [_bytes(P_SAMPLE_TYPE, _int(1, strings(t)) + _int(
        2, strings(BYTE_UNITS[k] if u == "bytes" else u)))
           for (t, u), k in zip(types, shifts)]
    out += _encode_samples(samples, shifts)
    out += locs.encoded(strings)
    out.append(_bytes(P_PERIOD_TYPE, _int(1, strings("space")) +
                      _int(2, strings("bytes"))))
    out.append(_int(P_PERIOD, sample_bytes if mode == "sampled" else 1))
    out.append(_int(P_DEFAULT_TYPE, strings("alloc_space")))
    if time_nanos:
        out.append(_int(P_TIME_NANOS, time_nanos))
    if duration_nanos:
        out.append(_int(P_DURATION_NANOS, duration_nanos))
    # The string table last: every string above is in it by now.
    out.append(b"".join(_bytes(P_STRINGS, s.encode("utf-8"))
                        for s in strings.table))
    return gzip.compress(b"".join(out), mtime=0)
