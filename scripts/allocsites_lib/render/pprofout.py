"""--pprof FILE: the Report's pprof data encoded as a gzipped profile.proto.

The profile as pprof reads it (a gzip-compressed profile.proto,
github.com/google/pprof/proto/profile.proto), from the Report's pprof
(analyze/pprofdata.py says what it holds), written the way Go writes a
heap profile: sample types alloc_objects/count and alloc_space/bytes
(and inuse_objects/inuse_space with frees), values already unbiased in
sampled mode (period = R), a Mapping per binary with its build-id and
has_functions/has_filenames/has_line_numbers/has_inline_frames set, so
pprof does not symbolize again, the tag as the string label "tag", the
phase as "phase", and Go's numeric label "bytes" (unit bytes): the
sample's bytes over its count, as Go computes it for a heap profile's
sample. Go keeps a sample per stack and size, so its label is each
object's size; allocsites keeps a sample per stack and tag, so the label
is the objects' size where the site allocates one size (the common case
that -tagfocus=bytes=... is for) and their mean where it allocates
several. With threads: the numeric "pid" and "tid", as
perf_data_converter labels them.

Each binary gets an address range of its own (mapping_base), its
Locations' addresses placed in it, so that no two Mappings overlap.
Byte values whose sum would pass int64 are given in kilobytes (or a
larger unit): pprof sums them as int64 unchecked (byte_units).
Encoded by hand: the message has seven kinds of fields, and perf's
embedded Python has no protobuf module."""

import gzip

from .. import textio


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


def _locations(pprof, strings):
    """The Mapping, Location and Function messages of the Report's pprof
    data, their strings interned in the order they always were."""
    out = []
    for m in pprof["mappings"]:
        mid = m["id"]
        # Each binary its own range (its addresses are the DSO's, not
        # the process's: perf's per-DSO address, or a run-time one
        # without a symbol), file_offset so that address - start +
        # offset is it.
        out.append(_bytes(P_MAPPING, _int(1, mid) +
                          _int(2, mapping_base(mid)) +
                          _int(3, mapping_base(mid + 1)) +
                          _int(5, strings(m["dso"])) +
                          _int(6, strings(m["build_id"] or "")) +
                          _int(7, 1) + _int(8, 1) + _int(9, 1) +
                          _int(10, 1)))
    for loc in pprof["locations"]:
        n, mid, addr = loc["id"], loc["mapping"], loc["address"]
        # a guest location has no address: its number in its range
        place = n if addr is None else addr & MAPPING_MASK
        out.append(_bytes(P_LOCATION, _int(1, n) + _int(2, mid) +
                          _int(3, mapping_base(mid) + place) + b"".join(
                              _bytes(4, _int(1, fid) + _int(2, line))
                              for fid, line in loc["lines"])))
    for f in pprof["functions"]:
        out.append(_bytes(P_FUNCTION, _int(1, f["id"]) +
                          _int(2, strings(f["name"])) +
                          _int(3, strings(f["name"])) +
                          _int(4, strings(f["file"]))))
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

    def size(self, mean):
        """Go's "bytes": the objects' size (their mean over several)."""
        return self.num(self.bytes_key, saturated(mean), self.bytes_key)

    def thread(self, pid, tid):
        return self.num(self.pid, pid) + self.num(self.tid, tid)


def _samples(pprof, labels):
    """The samples, as (packed location ids, [values], labels) to encode
    (see _encode_samples); each phase's name interned before its
    samples' tags, as they always were."""
    out = []
    for group in pprof["phases"]:
        phase = group["phase"]
        phase_label = b"" if phase is None else \
            labels.text(labels.phase_key, str(phase))
        for sample in group["samples"]:
            label = labels.text(labels.tag, sample["tag"]) + phase_label
            if sample["size"] is not None:
                label += labels.size(sample["size"])
            if sample["thread"] is not None:
                label += labels.thread(*sample["thread"])
            out.append((_packed(1, sample["locations"]),
                        [_whole(v) for v in sample["values"]], label))
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


def encode(pprof, mode, sample_bytes=0):
    """The gzip-compressed profile.proto of the Report's pprof data
    (analyze/pprofdata.py); mode: the Report's; sample_bytes: R, the
    period of a sampled profile."""
    strings = _Strings()
    types = [("alloc_objects", "count"), ("alloc_space", "bytes")]
    if pprof["inuse"]:
        types += [("inuse_objects", "count"), ("inuse_space", "bytes")]
    for t, u in types:   # first in the string table, as they always were
        strings(t), strings(u)
    labels = _Labels(strings)
    samples = _samples(pprof, labels)
    shifts = byte_units(samples, types)
    out = [_bytes(P_SAMPLE_TYPE, _int(1, strings(t)) + _int(
        2, strings(BYTE_UNITS[k] if u == "bytes" else u)))
           for (t, u), k in zip(types, shifts)]
    out += _encode_samples(samples, shifts)
    out += _locations(pprof, strings)
    out.append(_bytes(P_PERIOD_TYPE, _int(1, strings("space")) +
                      _int(2, strings("bytes"))))
    out.append(_int(P_PERIOD, sample_bytes if mode == "sampled" else 1))
    out.append(_int(P_DEFAULT_TYPE, strings("alloc_space")))
    if pprof["time_nanos"]:
        out.append(_int(P_TIME_NANOS, pprof["time_nanos"]))
    if pprof["duration_nanos"]:
        out.append(_int(P_DURATION_NANOS, pprof["duration_nanos"]))
    # The string table last: every string above is in it by now.
    # UTF-8, as profile.proto's strings must be (textio.utf8)
    out.append(b"".join(_bytes(P_STRINGS, textio.utf8(s))
                        for s in strings.table))
    return gzip.compress(b"".join(out), mtime=0)


def render_pprof(report):
    """The --pprof file's bytes from the Report."""
    sampling = report.sampling
    return encode(report.pprof, report.mode,
                  sampling["sample_bytes"] if sampling else 0)
