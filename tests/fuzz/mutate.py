#!/usr/bin/python3
"""tests/fuzz/mutate.py - structure-aware mutants of real perf.data files
for the native reader (scripts/reader/, allocsites-read): issue 31's
classes of hostile input, each written as a file.

    mutate.py OUTDIR [--fifo PATH] [--seeds DIR]
        every mutant of the seeds (default tests/fuzz/seeds/) into OUTDIR,
        one file each, named after its class; a listing on stdout
    mutate.py plain IN OUT [--thin N]
        IN (a perf -z recording) decompressed: its PERF_RECORD_COMPRESSED
        records replaced by what they hold (needs the zstd command), the
        compression feature dropped; --thin N keeps the first N samples
        of each event without a stack copy (the rest are alike)

The mutants are the same on every run (a seeded RNG): the regression
test (tests/unit/test_reader_hostile.py) makes them again from the
committed seeds, and make fuzz hands them to AFL++ as its corpus.

A mutant of the uncompressed seed is also written compressed: its
records wrapped in zstd frames of raw (stored) blocks, which any zstd
decoder reads, so the reader's decompressing path sees each class too.
Standard library only: it runs under /usr/bin/python3 on a bare
Debian."""

import os
import random
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "seeds")

# perf_event.h / perf's header.h values (little-endian PERFILE2 only)
REC_MMAP, REC_COMM, REC_EXIT, REC_FORK = 1, 3, 4, 7
REC_SAMPLE, REC_MMAP2 = 9, 10
REC_FINISHED_ROUND, REC_COMPRESSED = 68, 81
REC_COMPRESSED2 = 83   # perf 6.15 and later: u64 data_size, bytes, padding
# pipe mode's records for what a file's header holds
REC_HEADER_ATTR, REC_HEADER_TRACING_DATA = 64, 66
REC_EVENT_UPDATE, REC_HEADER_FEATURE, REC_FINISHED_INIT = 78, 80, 82
FEAT_TRACING_DATA, FEAT_EVENT_DESC, FEAT_COMPRESSED = 1, 12, 27
ST_IP, ST_TID, ST_TIME, ST_ADDR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
ST_ID, ST_CPU, ST_PERIOD, ST_STREAM_ID = 1 << 6, 1 << 7, 1 << 8, 1 << 9
ST_CALLCHAIN, ST_RAW = 1 << 5, 1 << 10
ST_REGS_USER, ST_STACK_USER, ST_IDENTIFIER = 1 << 12, 1 << 13, 1 << 16
PERF_REG_BP, PERF_REG_SP, PERF_REG_IP = 6, 7, 8
U64_MAX = (1 << 64) - 1


def u64(b, off):
    return struct.unpack_from("<Q", b, off)[0]


def u32(b, off):
    return struct.unpack_from("<I", b, off)[0]


class Attr:
    def __init__(self, body, ids):
        self.body = bytearray(body)   # perf_event_attr, without its ids
        self.ids = bytearray(ids)     # the ids' file section

    @property
    def sample_type(self):
        return u64(self.body, 24)

    @property
    def regs_mask(self):
        return u64(self.body, 80)

    @property
    def sample_id_all(self):
        return u64(self.body, 40) >> 18 & 1

    def id_list(self):
        return [u64(self.ids, i) for i in range(0, len(self.ids), 8)]


class PerfData:
    """A perf.data file as parts: attributes (with their ids), the data
    section's records, the feature sections. build() lays them out again
    as perf does (header, ids, attributes, data, feature table and
    sections), offsets recomputed."""

    def __init__(self, raw):
        raw = bytes(raw)
        if raw[:8] != b"PERFILE2" or u64(raw, 8) != 104:
            raise ValueError("not a little-endian perf.data file")
        (self.attr_size, attrs_off, attrs_size, data_off, data_size,
         self.evtypes_off, self.evtypes_size) = struct.unpack_from(
             "<7Q", raw, 16)
        self.bits = list(struct.unpack_from("<4Q", raw, 72))
        self.attrs = []
        for at in range(attrs_off, attrs_off + attrs_size, self.attr_size):
            a = raw[at:at + self.attr_size]
            ids_off, ids_size = struct.unpack_from("<QQ", a, len(a) - 16)
            self.attrs.append(Attr(a[:-16], raw[ids_off:ids_off + ids_size]))
        self.records = []
        pos, end = data_off, data_off + data_size
        while pos + 8 <= end:
            size = struct.unpack_from("<H", raw, pos + 6)[0]
            if size < 8 or pos + size > end:
                break
            self.records.append(bytearray(raw[pos:pos + size]))
            pos += size
        self.features = {}     # feature bit -> its section's bytes
        table = end
        for feat in range(256):
            if self.bits[feat // 64] >> (feat % 64) & 1:
                off, size = struct.unpack_from("<QQ", raw, table)
                self.features[feat] = raw[off:off + size]
                table += 16

    def build(self):
        out = bytearray(104)
        ids_at = []
        for a in self.attrs:
            ids_at.append(len(out))
            out += a.ids
        attrs_off = len(out)
        for a, at in zip(self.attrs, ids_at):
            body = bytes(a.body).ljust(self.attr_size - 16, b"\0")
            out += body[:self.attr_size - 16] + struct.pack(
                "<QQ", at, len(a.ids))
        data_off = len(out)
        for r in self.records:
            out += r
        data_size = len(out) - data_off
        bits = [0, 0, 0, 0]
        feats = sorted(self.features)
        for f in feats:
            bits[f // 64] |= 1 << (f % 64)
        table = len(out)
        out += bytes(16 * len(feats))
        for i, f in enumerate(feats):
            struct.pack_into("<QQ", out, table + 16 * i, len(out),
                             len(self.features[f]))
            out += self.features[f]
        struct.pack_into("<8sQQQQQQQQ4Q", out, 0, b"PERFILE2", 104,
                         self.attr_size, attrs_off,
                         len(self.attrs) * self.attr_size, data_off,
                         data_size, 0, 0, *bits)
        return bytes(out)

    def copy(self):
        return PerfData(self.build())

    def build_pipe(self, names=True):
        """The same recording as perf record -o - writes it: a 16-byte
        header, then a HEADER_ATTR record per attribute (the attr, then
        its ids), a HEADER_FEATURE record per feature but the tracing
        data, a HEADER_TRACING_DATA record followed by the formats
        (outside its size, padded to 8 bytes), an EVENT_UPDATE naming
        each attribute (names: from EVENT_DESC), FINISHED_INIT, the
        data's records."""
        out = bytearray(b"PERFILE2" + struct.pack("<Q", 16))
        for a in self.attrs:
            body = bytes(a.body)
            asz = u32(body, 4) or len(body)
            body = body[:asz].ljust(asz, b"\0")
            out += header_record(REC_HEADER_ATTR, body + bytes(a.ids))
        for f in sorted(self.features):
            if f != FEAT_TRACING_DATA:
                out += header_record(REC_HEADER_FEATURE,
                                     struct.pack("<Q", f) +
                                     self.features[f])
        td = self.features.get(FEAT_TRACING_DATA)
        if td is not None:
            padded = bytes(td).ljust((len(td) + 7) // 8 * 8, b"\0")
            out += header_record(REC_HEADER_TRACING_DATA,
                                 struct.pack("<II", len(padded), 0))
            out += padded
        if names:
            for id_, name in event_names(self.features.get(
                    FEAT_EVENT_DESC, b"")):
                text = name.encode() + b"\0"
                out += header_record(REC_EVENT_UPDATE, struct.pack(
                    "<QQ", 2, id_) + text.ljust((len(text) + 7) // 8 * 8,
                                                b"\0"))
        out += header_record(REC_FINISHED_INIT, b"")
        for r in self.records:
            out += r
        return bytes(out)

    # -- what a record is ------------------------------------------------

    def attr_of(self, rec):
        """The attribute a record belongs to, as the reader finds it
        (IDENTIFIER first in a sample, last in a sample_id_all trailer)."""
        if len(self.attrs) == 1:
            return self.attrs[0]
        first = self.attrs[0]
        if not first.sample_type & ST_IDENTIFIER:
            return first
        if rec_type(rec) == REC_SAMPLE:
            ident = u64(rec, 8) if len(rec) >= 16 else None
        elif first.sample_id_all and len(rec) >= 16:
            ident = u64(rec, len(rec) - 8)
        else:
            return first
        for a in self.attrs:
            if ident in a.id_list():
                return a
        return first

    def trailer_size(self, rec):
        a = self.attr_of(rec)
        if not a.sample_id_all:
            return 0
        st = a.sample_type
        return 8 * sum(1 for bit in (ST_TID, ST_TIME, ST_ID, ST_STREAM_ID,
                                     ST_CPU, ST_IDENTIFIER) if st & bit)

    def sample_layout(self, rec):
        """Offsets of a sample's fields, as parse_sample walks them."""
        a = self.attr_of(rec)
        st = a.sample_type
        lay, pos = {}, 8
        for bit, name in ((ST_IDENTIFIER, "ident"), (ST_IP, "ip"),
                          (ST_TID, "tid"), (ST_TIME, "time"),
                          (ST_ADDR, "addr"), (ST_ID, "id"),
                          (ST_STREAM_ID, "stream"), (ST_CPU, "cpu"),
                          (ST_PERIOD, "period")):
            if st & bit:
                lay[name] = pos
                pos += 8
        if st & ST_CALLCHAIN:
            lay["callchain"] = pos
            pos += 8 + 8 * u64(rec, pos)
        if st & ST_RAW:
            lay["raw_size"] = pos
            pos += 4 + u32(rec, pos)
        if st & ST_REGS_USER:
            lay["regs_abi"] = pos
            pos += 8
            if u64(rec, lay["regs_abi"]):
                lay["regs"] = pos
                pos += 8 * bin(a.regs_mask).count("1")
        if st & ST_STACK_USER:
            lay["stack_size"] = pos
            sz = u64(rec, pos)
            pos += 8
            if sz:
                lay["stack"] = pos
                lay["dyn_size"] = pos + sz
                pos += sz + 8
        lay["end"] = pos
        return lay

    def reg_at(self, rec, lay, perf_reg):
        mask = self.attr_of(rec).regs_mask
        if "regs" not in lay or not mask >> perf_reg & 1:
            return None
        return lay["regs"] + 8 * bin(mask & ((1 << perf_reg) - 1)).count("1")

    def indexes(self, pred):
        return [i for i, r in enumerate(self.records) if pred(r)]

    def stack_samples(self):
        return self.indexes(lambda r: rec_type(r) == REC_SAMPLE and
                            "stack" in self.sample_layout(r))

    def tracepoint_samples(self):
        return self.indexes(lambda r: rec_type(r) == REC_SAMPLE and
                            "raw_size" in self.sample_layout(r))


def header_record(rtype, payload):
    """A record of rtype around payload (padded to 8 bytes)."""
    payload = bytes(payload).ljust((len(payload) + 7) // 8 * 8, b"\0")
    return bytes(set_size(bytearray(struct.pack("<IHH", rtype, 0, 0)) +
                          payload))


def event_names(desc):
    """[(id, name)] of an EVENT_DESC section."""
    out = []
    if len(desc) < 8:
        return out
    nr, sz = struct.unpack_from("<II", desc, 0)
    pos = 8
    for _ in range(nr):
        pos += sz
        nids, slen = struct.unpack_from("<II", desc, pos)
        pos += 8
        name = bytes(desc[pos:pos + slen]).split(b"\0")[0].decode()
        pos += slen
        for k in range(nids):
            out.append((u64(desc, pos + 8 * k), name))
        pos += 8 * nids
    return out


def as_compressed2(pd, damage=None):
    """A -z recording as perf 6.15 and later writes it: each COMPRESSED
    record a COMPRESSED2 (u64 data_size, the same zstd bytes, padded to
    8 bytes). damage: "size" says one byte more than the record holds,
    "short" makes the first one 8 bytes, without its data_size."""
    q = PerfData(pd.build())
    first = True
    for i, r in enumerate(q.records):
        if rec_type(r) != REC_COMPRESSED:
            continue
        data = bytes(r[8:])
        pad = (-(16 + len(data))) % 8
        n = len(data) + (pad + 1 if damage == "size" and first else 0)
        if damage == "short" and first:
            q.records[i] = bytearray(struct.pack("<IHH", REC_COMPRESSED2,
                                                 0, 8))
        else:
            q.records[i] = bytearray(struct.pack(
                "<IHHQ", REC_COMPRESSED2, 0, 16 + len(data) + pad, n) +
                data + bytes(pad))
        first = False
    return q.build()


def m_pipe(pd, ctx):
    """Pipe-mode streams (perf record -o -) of the seed: whole, and with
    each header record damaged: an attr's size 0, short or past its
    record, a tracing data size past the end or huge, a feature record
    too short, a name without its NUL, no attributes, tracing data again
    amid the records (its bytes outside its size), records cut short."""
    whole = pd.build_pipe()
    out = [("pipe", whole, None), ("pipe_unnamed", pd.build_pipe(False),
                                   None)]
    first = 16   # the first HEADER_ATTR record

    def at_type(b, rtype):
        pos = 16
        while pos + 8 <= len(b):
            t, size = struct.unpack_from("<I", b, pos)[0], \
                struct.unpack_from("<H", b, pos + 6)[0]
            if t == rtype:
                return pos
            if size < 8:
                return None
            pos += size + (struct.unpack_from("<I", b, pos + 8)[0]
                           if t == REC_HEADER_TRACING_DATA else 0)
        return None
    for name, value in (("0", 0), ("95", 95), ("past", 0xfff0)):
        b = bytearray(whole)
        struct.pack_into("<I", b, first + 12, value)
        out.append(("pipe_attr_size_" + name, bytes(b), None))
    td = at_type(whole, REC_HEADER_TRACING_DATA)
    if td is not None:
        for name, value in (("past", len(whole)), ("huge", 0xffffffff),
                            ("odd", 13)):
            b = bytearray(whole)
            struct.pack_into("<I", b, td + 8, value)
            out.append(("pipe_tracing_" + name, bytes(b), None))
    feat = at_type(whole, REC_HEADER_FEATURE)
    if feat is not None:
        b = bytearray(whole)
        struct.pack_into("<H", b, feat + 6, 12)
        out.append(("pipe_feature_short", bytes(b), None))
    upd = at_type(whole, REC_EVENT_UPDATE)
    if upd is not None:
        b = bytearray(whole)
        size = struct.unpack_from("<H", b, upd + 6)[0]
        b[upd + 24:upd + size] = b"x" * (size - 24)
        out.append(("pipe_update_nonul", bytes(b), None))
    no_attrs = PerfData(pd.build())
    no_attrs.attrs = []
    try:
        out.append(("pipe_no_attrs", no_attrs.build_pipe(), None))
    except (ValueError, struct.error):
        pass
    amid = PerfData(pd.build())
    td_bytes = bytes(4096)
    amid.records.insert(min(10, len(amid.records)), bytearray(
        header_record(REC_HEADER_TRACING_DATA, struct.pack("<II", 4096, 0))
        + td_bytes))
    out.append(("pipe_tracing_amid", amid.build_pipe(), None))
    huge = PerfData(pd.build())
    huge.records.insert(min(10, len(huge.records)), bytearray(
        header_record(REC_HEADER_TRACING_DATA,
                      struct.pack("<II", 0xfffffff8, 0))))
    out.append(("pipe_tracing_amid_huge", huge.build_pipe(), None))
    for at in (8, 16, 17, first + 100, td + 20 if td else 200,
               len(whole) // 2, len(whole) - 3):
        out.append(("pipe_cut_at_%d" % at, whole[:at], None))
    return out


def rec_type(rec):
    return u32(rec, 0)


def set_size(rec):
    struct.pack_into("<H", rec, 6, len(rec))
    return rec


# -- zstd: stored frames, and the zstd command to undo perf's -z ---------

def zstd_stored(data):
    """A zstd frame holding data in raw (stored) blocks: no FCS, a 64 KiB
    window, no checksum (RFC 8878, 3.1.1)."""
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x30")
    chunks = [data[i:i + 32768] for i in range(0, len(data), 32768)] or [b""]
    for i, c in enumerate(chunks):
        last = i == len(chunks) - 1
        out += struct.pack("<I", len(c) << 3 | last)[:3] + c
    return bytes(out)


COMPRESSED_FEATURE = struct.pack("<IIIII", 0, 1, 3, 1, 1 << 19)


def zstd_rle(byte, n):
    """A zstd frame of n copies of byte in RLE blocks: 4 bytes of file
    per 128 KiB (RFC 8878, 3.1.1.2.2)."""
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x30")
    while n:
        k = min(n, 1 << 16)   # no block past the 64 KiB window
        n -= k
        out += struct.pack("<I", k << 3 | 1 << 1 | (n == 0))[:3] + \
            bytes([byte])
    return bytes(out)


def compressed(pd, limit=60000):
    """pd as perf -z writes it: runs of kernel records (type < 64) in
    PERF_RECORD_COMPRESSED records, perf's own records between them."""
    out = pd.copy()
    recs, run = [], bytearray()

    def flush():
        if run:
            payload = zstd_stored(bytes(run))
            rec = bytearray(struct.pack("<IHH", REC_COMPRESSED, 0, 0))
            recs.append(set_size(rec + payload))
            del run[:]
    for r in pd.records:
        if rec_type(r) >= 64:
            flush()
            recs.append(bytearray(r))
            continue
        if len(run) + len(r) > limit:
            flush()
        run += r
    flush()
    out.records = recs
    out.features[FEAT_COMPRESSED] = COMPRESSED_FEATURE
    return out


def decompressed(pd):
    """pd's compressed records replaced by their records, in place (a
    prefix of perf's zstd stream decompresses to whole records at each
    record's end: perf flushes the stream there)."""
    out = pd.copy()
    recs, payload, done, pending = [], b"", 0, b""
    for r in pd.records:
        if rec_type(r) != REC_COMPRESSED:
            recs.append(r)
            continue
        payload += bytes(r[8:])
        got = subprocess.run(["zstd", "-dcq"], input=payload,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL).stdout
        pending += got[done:]
        done = len(got)
        while len(pending) >= 8:
            size = struct.unpack_from("<H", pending, 6)[0]
            if size < 8 or size > len(pending):
                break
            recs.append(bytearray(pending[:size]))
            pending = pending[size:]
    out.records = recs
    out.features.pop(FEAT_COMPRESSED, None)
    return out


def thinned(pd, keep):
    """The first keep samples of each event without a stack copy."""
    out, seen = pd.copy(), {}
    recs = []
    for r in out.records:
        if rec_type(r) == REC_SAMPLE and "stack" not in out.sample_layout(r):
            key = id(out.attr_of(r))
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > keep:
                continue
        recs.append(r)
    out.records = recs
    return out


# -- the mutants ---------------------------------------------------------
# Each is a function (pd, ctx) -> [(name, bytes, expect)]; expect is
# "left_out" where the reader must say that records were left out (or
# refuse the file) rather than exit 0 having read a field as 0.

def m_attr_ids(pd, ctx):
    out = []
    raw = pd.build()
    size = len(raw)
    # where attr 0's ids section entry lies in the built file
    ids_entry = 104 + sum(len(a.ids) for a in pd.attrs) + pd.attr_size - 16
    for name, off, n in (("past_file", size - 8, 16),
                         ("off_huge", U64_MAX - 7, 8),
                         ("size_huge", 104, 1 << 62),
                         ("size_wraps", 104, U64_MAX - 7),
                         ("size_odd", 104, 12),
                         ("both_wrap", U64_MAX, U64_MAX)):
        b = bytearray(raw)
        struct.pack_into("<QQ", b, ids_entry, off, n)
        out.append(("attr_ids_" + name, bytes(b), None))
    # an id in no attribute: every sample of that event belongs to none
    q = pd.copy()
    for a in q.attrs:
        if a.ids:
            struct.pack_into("<Q", a.ids, 0, 0xdeadbeef)
    out.append(("attr_ids_unknown", q.build(), None))
    return out


def m_attr_table(pd, ctx):
    raw = pd.build()
    out = []
    for name, fields in (("size0", {32: 0}),
                         ("attr_size0", {16: 0}),
                         ("attr_size_huge", {16: U64_MAX}),
                         ("off_huge", {24: U64_MAX - 100}),
                         ("size_huge", {32: 1 << 63}),
                         ("not_multiple", {32: pd.attr_size + 8}),
                         ("data_size0", {48: 0}),
                         ("data_off_huge", {40: U64_MAX - 8}),
                         ("data_size_huge", {48: U64_MAX - 1000})):
        b = bytearray(raw)
        for off, v in fields.items():
            struct.pack_into("<Q", b, off, v)
        out.append(("attr_table_" + name, bytes(b), None))
    # one attribute left: the other's samples parsed with its layout
    q = pd.copy()
    q.attrs = q.attrs[:1]
    out.append(("attr_table_one_of_two", q.build(), None))
    q = pd.copy()
    q.attrs = q.attrs[::-1]
    out.append(("attr_table_reversed", q.build(), None))
    return out


def _format_mutant(pd, old, new):
    """The tracing data with the first field text old of the alloc event's
    format replaced by new (lengths fixed up)."""
    q = pd.copy()
    td = q.features.get(FEAT_TRACING_DATA)
    if td is None:
        return None
    at = td.find(b"name: alloc")
    field = td.find(old, at)
    if at < 0 or field < 0:
        return None
    # the format text is preceded by its u64 length
    start = td.rfind(b"name: ", 0, at + 1)
    n = u64(td, start - 8)
    td = td[:field] + new + td[field + len(old):]
    td = td[:start - 8] + struct.pack("<Q", n + len(new) - len(old)) + \
        td[start:]
    q.features[FEAT_TRACING_DATA] = td
    return q.build()


def m_tracefmt(pd, ctx):
    out = []
    for name, old, new, expect in (
            ("offset_minus1", b"offset:16;", b"offset:-1;", "left_out"),
            ("offset_past_raw", b"offset:16;", b"offset:60000;", "left_out"),
            ("offset_u32_wrap", b"offset:16;", b"offset:4294967292;",
             "left_out"),
            ("size_huge", b"size:8;", b"size:4294967295;", "left_out"),
            ("size_past_raw", b"size:8;", b"size:4096;", "left_out"),
            ("size0", b"size:8;", b"size:0;", None),
            ("no_id", b"ID: ", b"XX: ", None),
            ("name_long", b"field:", b"field:" + b"x" * 300 + b" ", None)):
        b = _format_mutant(pd, old, new)
        if b is not None:
            out.append(("tracefmt_" + name, b, expect))
    # the feature section cut short, and its counts huge
    q = pd.copy()
    td = q.features.get(FEAT_TRACING_DATA, b"")
    q.features[FEAT_TRACING_DATA] = td[:len(td) // 2]
    out.append(("tracefmt_cut_half", q.build(), None))
    for i, off in enumerate(ctx["rng"].sample(range(12, max(13, len(td))),
                                              min(8, max(1, len(td) - 12)))):
        b = bytearray(td)
        b[off:off + 8] = b"\xff" * len(b[off:off + 8])
        q.features[FEAT_TRACING_DATA] = bytes(b)
        out.append(("tracefmt_ff_%d" % i, q.build(), None))
    return out


def _systems_at(td):
    """Where the tracing data's count of event systems lies (perf's
    trace-event-info.c: magic, version, endianness, long size, page size,
    header_page, header_event, ftrace formats, then the systems)."""
    pos = td.index(b"\0", 10) + 1 + 2 + 4
    for _ in range(2):
        pos = td.index(b"\0", pos) + 1
        pos += 8 + u64(td, pos)
    nftrace = u32(td, pos)
    pos += 4
    for _ in range(nftrace):
        pos += 8 + u64(td, pos)
    return pos


def m_formats_many(pd, ctx, count=100000):
    """count tiny event formats ('ID: n', 13 bytes each) in a system of
    their own: each was kept, about 1 KB of memory for 13 bytes of
    file."""
    q = pd.copy()
    td = q.features.get(FEAT_TRACING_DATA)
    if td is None:
        return []
    at = _systems_at(td)
    fmts = b"".join(struct.pack("<Q", len(t)) + t for t in
                    (b"ID: %d" % (10 ** 6 + k) for k in range(count)))
    q.features[FEAT_TRACING_DATA] = (
        td[:at] + struct.pack("<I", u32(td, at) + 1) + b"fuzz\0" +
        struct.pack("<I", count) + fmts + td[at + 4:])
    return [("tracefmt_many_%d" % count, q.build(), None)]


def m_raw_data(pd, ctx):
    """Samples whose raw data is shorter than their format's fields: the
    fields past it must not read as 0."""
    out = []
    for name, cut in (("short8", 8), ("empty", None)):
        q = pd.copy()
        hit = 0
        for i in q.tracepoint_samples():
            r = q.records[i]
            lay = q.sample_layout(r)
            rs = lay["raw_size"]
            n = u32(r, rs)
            k = n - 4 if cut is None else cut   # keep raw_size + 4 aligned
            if k <= 0 or k > n:
                continue
            struct.pack_into("<I", r, rs, n - k)
            del r[rs + 4 + n - k:rs + 4 + n]
            set_size(r)
            hit += 1
        if hit:
            out.append(("raw_" + name, q.build(), "left_out"))
    # raw_size past the record, and 2^32-1 (a 32-bit wrap in NEED)
    for name, v in (("size_past", 65536), ("size_u32max", 0xffffffff),
                    ("size_wrap", 0xfffffff8)):
        q = pd.copy()
        for i in q.tracepoint_samples()[:3]:
            r = q.records[i]
            struct.pack_into("<I", r, q.sample_layout(r)["raw_size"], v)
        out.append(("raw_" + name, q.build(), "left_out"))
    return out


def m_stack(pd, ctx):
    out = []
    idx = pd.stack_samples()
    for name, field, v in (("size_max", "stack_size", U64_MAX),
                           ("size_past", "stack_size", 1 << 16),
                           ("size_plus8", "stack_size", None),
                           ("size_2_63", "stack_size", 1 << 63),
                           ("dyn_max", "dyn_size", U64_MAX),
                           ("callchain_max", "callchain", U64_MAX),
                           ("callchain_past", "callchain", 1 << 13),
                           ("regs_abi0", "regs_abi", 0)):
        q = pd.copy()
        hit = 0
        for i in idx[:4]:
            r = q.records[i]
            lay = q.sample_layout(r)
            if field not in lay:
                continue
            val = v if v is not None else u64(r, lay[field]) + 8
            struct.pack_into("<Q", r, lay[field], val)
            hit += 1
        if hit:
            # 8 bytes more can be taken from a field the reader does
            # not read (DATA_SRC): not detectable, not damaged
            out.append(("stack_" + name, q.build(),
                        None if field in ("dyn_size", "regs_abi") or
                        v is None else "left_out"))
    # samples cut inside their stack copy (record sizes fixed up)
    q = pd.copy()
    for i in idx[:4]:
        r = q.records[i]
        del r[len(r) // 2:]
        set_size(r)
    out.append(("stack_cut_records", q.build(), "left_out"))
    return out


def m_regs(pd, ctx):
    """Registers at the very top of the address space (a real program can
    leave rbp = -16), and sp far from the stack copy."""
    out = []
    cases = (("bp_minus16", {PERF_REG_BP: U64_MAX - 15}),
             ("sp_top", {PERF_REG_SP: U64_MAX - 7}),
             ("sp_top_64", {PERF_REG_SP: U64_MAX - 63}),
             ("sp_bp_top", {PERF_REG_SP: U64_MAX - 255,
                            PERF_REG_BP: U64_MAX - 15}),
             ("ip_max", {PERF_REG_IP: U64_MAX}),
             ("ip_zero", {PERF_REG_IP: 0}),
             ("sp_zero", {PERF_REG_SP: 0}),
             ("bp_eq_sp", {PERF_REG_BP: None}))
    for name, regs in cases:
        q = pd.copy()
        for i in q.stack_samples():
            r = q.records[i]
            lay = q.sample_layout(r)
            for reg, v in regs.items():
                at = q.reg_at(r, lay, reg)
                if at is None:
                    continue
                if v is None:   # bp = sp: a frame chain onto itself
                    v = u64(r, q.reg_at(r, lay, PERF_REG_SP))
                struct.pack_into("<Q", r, at, v)
        out.append(("regs_" + name, q.build(), None))
    # the stack copy's words all pointing at the top of the space
    q = pd.copy()
    for i in q.stack_samples():
        r = q.records[i]
        lay = q.sample_layout(r)
        for at in range(lay["stack"], lay["dyn_size"], 8):
            struct.pack_into("<Q", r, at, U64_MAX - 15)
    out.append(("regs_stack_top_words", q.build(), None))
    return out


def _exec_mmaps(pd):
    """The MMAP2 records of executable mappings of the program (not
    libc, not [vdso])."""
    res = []
    for i, r in enumerate(pd.records):
        if rec_type(r) == REC_MMAP2 and u32(r, 64) & 4:
            path = bytes(r[72:]).split(b"\0")[0]
            if path.startswith(b"/") and b"/libc" not in path and \
                    b"/ld-linux" not in path:
                res.append(i)
    return res


def _with_path(pd, rec, path):
    """An MMAP2 record naming path, its sample_id trailer kept."""
    t = pd.trailer_size(rec)
    p = path + b"\0"
    p += b"\0" * (-len(p) % 8)
    return set_size(bytearray(rec[:72]) + p +
                    (bytearray(rec[len(rec) - t:]) if t else b""))


def m_mmap_paths(pd, ctx):
    out = []
    idx = _exec_mmaps(pd)
    if not idx:
        return out
    paths = [("dev_zero", b"/dev/zero"), ("dir", b"/tmp"),
             ("missing", b"/nonexistent/allocsites-fuzz/none.so"),
             ("proc_self_mem", b"/proc/self/mem"),
             ("dev_stdin", b"/dev/stdin"), ("relative", b"t_basic"),
             ("empty", b"")]
    if ctx.get("fifo"):
        paths.insert(0, ("fifo", ctx["fifo"].encode()))
    for name, path in paths:
        q = pd.copy()
        for i in idx:
            q.records[i] = _with_path(q, q.records[i], path)
        out.append(("mmap_" + name, q.build(), None))
    # the path without its NUL, and a range that wraps
    q = pd.copy()
    r = q.records[idx[0]]
    t = q.trailer_size(r)
    end = len(r) - t
    r[72:end] = b"/" * (end - 72)
    if t:
        r[end:] = b"\xff" * t
    out.append(("mmap_no_nul", q.build(), None))
    for name, start, length in (("wraps", U64_MAX - 4095, 8192),
                                ("len0", 0x400000, 0),
                                ("everything", 0, U64_MAX)):
        q = pd.copy()
        struct.pack_into("<QQ", q.records[idx[0]], 16, start, length)
        out.append(("mmap_" + name, q.build(), None))
    return out


def m_many_mmaps(pd, ctx, count=8000):
    """count executable mappings of one file, each at its own address (a
    libdw module each, were they not bounded), before the first
    sample."""
    idx = _exec_mmaps(pd)
    if not idx:
        return []
    q = pd.copy()
    base = q.records[idx[0]]
    start = u64(base, 16)
    extra = []
    for k in range(count):
        r = bytearray(base)
        struct.pack_into("<Q", r, 16, start + (k + 64) * (1 << 24))
        extra.append(r)
    first = min(q.stack_samples() or [len(q.records)])
    q.records[first:first] = extra
    return [("mmap_many_%d" % count, q.build(), None)]


def m_ids_many(pd, ctx, count=100000):
    """count ids in an attribute and as many others in EVENT_DESC, none
    matching: each desc id was searched for in every attribute's ids
    (10^10 comparisons), and each sample's too."""
    q = pd.copy()
    ed = q.features.get(FEAT_EVENT_DESC)
    if ed is None or len(q.attrs) < 2:
        return []
    q.attrs[1].ids += b"".join(struct.pack("<Q", (1 << 40) + k)
                               for k in range(count))
    sz = u32(ed, 4)
    body = bytes(q.attrs[0].body)[:sz].ljust(sz, b"\0")
    name = b"sdt_rt:many\0".ljust(16, b"\0")
    q.features[FEAT_EVENT_DESC] = (
        struct.pack("<II", 1, sz) + body +
        struct.pack("<II", count, len(name)) + name +
        b"".join(struct.pack("<Q", (1 << 41) + k) for k in range(count)))
    return [("attr_ids_many_%d" % count, q.build(), None)]


def m_fork_bomb(pd, ctx, nmaps=8000, nforks=20000):
    """nmaps exec mappings of one process, then nforks FORK records of
    it: each child had a copy of its parent's maps (5 GB)."""
    idx = _exec_mmaps(pd)
    if not idx:
        return []
    q = pd.copy()
    base = q.records[idx[0]]
    pid, start = u32(base, 8), u64(base, 16)
    extra = []
    for k in range(nmaps):
        r = bytearray(base)
        struct.pack_into("<Q", r, 16, start + (k + 64) * (1 << 24))
        extra.append(r)
    t = pd.trailer_size(base)
    for k in range(nforks):
        # pid, ppid, tid, ptid, time, then the mapping's trailer (its
        # time: the forks are ordered after the mappings)
        extra.append(set_size(bytearray(
            struct.pack("<IHHIIIIQ", REC_FORK, 0, 0, 200000 + k, pid,
                        200000 + k, pid, 0) + base[len(base) - t:])))
    first = min(q.stack_samples() or [len(q.records)])
    q.records[first:first] = extra
    return [("fork_bomb_%d_%d" % (nmaps, nforks), q.build(), None)]


def m_zstd_bomb(pd, ctx, units=1500):
    """A perf -z file with no FINISHED_ROUND in which every ~2 MB of
    decompressed records holds one sample and otherwise records of a
    type the reader skips, RLE-compressed: 2 KB of file for 2 MB. Each
    queued sample kept its 4 MiB decompression buffer until the end:
    3 GB of memory for a 3 MB file."""
    samples = pd.stack_samples()
    if not samples:
        return []
    sample = bytes(pd.records[samples[0]])
    filler = 1000 * 0x0808    # records of type 0x08080808, size 0x0808
    q = pd.copy()
    first = min(i for i, r in enumerate(q.records) if rec_type(r) < 64)
    head = [r for r in q.records[first:samples[0]]
            if rec_type(r) != REC_FINISHED_ROUND]
    # perf's own records, the mappings before the first sample, then
    # the units
    recs = list(q.records[:first]) + compressed(_only(q, head)).records
    for _ in range(units):
        frame = zstd_stored(sample) + zstd_rle(0x08, filler)
        recs.append(set_size(bytearray(
            struct.pack("<IHH", REC_COMPRESSED, 0, 0)) + frame))
    q.records = recs
    q.features[FEAT_COMPRESSED] = COMPRESSED_FEATURE
    return [("zstd_bomb_%d" % units, q.build(), None)]


def _only(pd, records):
    q = pd.copy()
    q.records = [bytearray(r) for r in records]
    return q


def m_short_records(pd, ctx):
    out = []
    for typ, name in ((REC_FORK, "fork"), (REC_COMM, "comm"),
                      (REC_MMAP2, "mmap2"), (REC_MMAP, "mmap"),
                      (REC_EXIT, "exit"), (REC_SAMPLE, "sample")):
        for n in (8, 12, 15):
            q = pd.copy()
            i = q.indexes(lambda r: rec_type(r) == typ)
            rec = bytearray(struct.pack("<IHH", typ, 0, n)) + \
                bytes(n - 8)
            if i:
                q.records[i[0]] = rec
            else:   # no such record: one made before the first sample
                q.records.insert(len(q.records) // 2, rec)
            out.append(("short_%s_%d" % (name, n), q.build(), None))
    # a record of size 0..7 in the data section
    for n in range(8):
        q = pd.copy()
        q.records.insert(len(q.records) // 3,
                         bytearray(struct.pack("<IHH", REC_SAMPLE, 0, n)))
        out.append(("size_%d" % n, q.build(), None))
    return out


def m_no_rounds(pd, ctx):
    q = pd.copy()
    q.records = [r for r in q.records if rec_type(r) != REC_FINISHED_ROUND]
    # and the rounds doubled, and samples' times reversed
    r2 = pd.copy()
    recs = []
    for r in r2.records:
        recs.append(r)
        if rec_type(r) == REC_FINISHED_ROUND:
            recs.append(bytearray(r))
    r2.records = recs
    r3 = pd.copy()
    for i in r3.indexes(lambda r: rec_type(r) == REC_SAMPLE):
        lay = r3.sample_layout(r3.records[i])
        if "time" in lay:
            struct.pack_into("<Q", r3.records[i], lay["time"],
                             U64_MAX - i)
    return [("no_finished_round", q.build(), None),
            ("rounds_doubled", r2.build(), None),
            ("times_reversed", r3.build(), None)]


def truncations(raw, pd, per_record=True):
    """The data section cut at a record's start, after its header and in
    its middle, for the first record of each type, the header's sizes
    and the features kept (a recording whose last records were not all
    written); and the file itself cut inside the header, the attributes,
    the data and the features (the header then says more than there
    is)."""
    out = []
    seen = set()
    for i, r in enumerate(pd.records if per_record else ()):
        t = rec_type(r)
        if t in seen:
            continue
        seen.add(t)
        for name, part in (("start", None), ("head", r[:8]),
                           ("mid", r[:len(r) // 2])):
            q = pd.copy()
            q.records = q.records[:i] + ([part] if part else [])
            out.append(("trunc_%d_%s" % (t, name), q.build(), None))
    data_off, data_size = u64(raw, 40), u64(raw, 48)
    for at in (0, 7, 8, 50, 103, 104, data_off - 1, data_off,
               data_off + data_size // 2, data_off + data_size,
               data_off + data_size + 8, len(raw) - 1):
        out.append(("cut_at_%d" % at, raw[:at], None))
    return out


def flips(raw, pd, rng, count):
    """count mutants, each with a few bytes flipped inside the file's
    header, an attribute, or a record's header."""
    heads = [(0, 104)]
    attrs_off = u64(raw, 24)
    heads += [(attrs_off, u64(raw, 32))]
    pos = u64(raw, 40)
    for r in pd.records:
        heads.append((pos, 8))
        pos += len(r)
    out = []
    for k in range(count):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            start, n = rng.choice(heads)
            at = start + rng.randrange(n)
            if at < len(b):
                b[at] ^= 1 << rng.randrange(8)
        out.append(("flip_%03d" % k, bytes(b), None))
    return out


STRUCTURED = (m_attr_ids, m_attr_table, m_tracefmt, m_raw_data, m_stack,
              m_regs, m_mmap_paths, m_many_mmaps, m_ids_many, m_fork_bomb,
              m_formats_many, m_zstd_bomb,
              m_short_records, m_no_rounds, m_pipe)


def mutants(seeds, fifo=None, rng_seed=31, nflips=12, compress=("basic",)):
    """Every mutant of the seeds: [(name, bytes, expect)]. seeds: {name:
    bytes}; the uncompressed ones get the structured classes, those named
    in compress written compressed too; every seed gets truncations and
    nflips flips."""
    rng = random.Random(rng_seed)
    ctx = {"rng": rng, "fifo": fifo}
    res = []
    for sname in sorted(seeds):
        raw = seeds[sname]
        pd = PerfData(raw)
        is_z = any(rec_type(r) == REC_COMPRESSED for r in pd.records)
        if not is_z:
            for fn in STRUCTURED:
                for name, b, expect in fn(pd, ctx):
                    res.append(("%s-%s" % (sname, name), b, expect))
                    # the same records, compressed: not the file-level
                    # mutants (their bytes are the header's)
                    if fn in (m_attr_ids, m_attr_table, m_ids_many,
                              m_formats_many, m_zstd_bomb) or \
                            sname not in compress:
                        continue
                    try:
                        z = compressed(PerfData(b)).build()
                    except (ValueError, struct.error, IndexError):
                        continue
                    res.append(("%s-z-%s" % (sname, name), z, expect))
        if is_z:
            res += [("%s-compressed2" % sname, as_compressed2(pd), None),
                    ("%s-compressed2_size" % sname,
                     as_compressed2(pd, "size"), None),
                    ("%s-compressed2_short" % sname,
                     as_compressed2(pd, "short"), None)]
        res += [("%s-%s" % (sname, n), b, e) for n, b, e in
                truncations(raw, pd, not is_z or
                            sname[:-2] in compress)]
        res += [("%s-%s" % (sname, n), b, e)
                for n, b, e in flips(raw, pd, rng, nflips)]
    return res


def load_seeds(d=SEEDS):
    seeds = {}
    for name in sorted(os.listdir(d)):
        if name.endswith(".data"):
            with open(os.path.join(d, name), "rb") as f:
                seeds[name[:-5]] = f.read()
    return seeds


def main(argv):
    if argv[:1] == ["plain"]:
        args = argv[1:]
        keep = None
        if "--thin" in args:
            i = args.index("--thin")
            keep = int(args[i + 1])
            del args[i:i + 2]
        if len(args) != 2:
            print(__doc__, file=sys.stderr)
            return 2
        with open(args[0], "rb") as f:
            pd = decompressed(PerfData(f.read()))
        if keep is not None:
            pd = thinned(pd, keep)
        with open(args[1], "wb") as f:
            f.write(pd.build())
        return 0
    fifo, seeds_dir, args = None, SEEDS, list(argv)
    for opt in ("--fifo", "--seeds"):
        if opt in args:
            i = args.index(opt)
            if opt == "--fifo":
                fifo = args[i + 1]
            else:
                seeds_dir = args[i + 1]
            del args[i:i + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(args[0], exist_ok=True)
    for name, b, expect in mutants(load_seeds(seeds_dir), fifo):
        with open(os.path.join(args[0], name + ".data"), "wb") as f:
            f.write(b)
        print(name, len(b), expect or "")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
