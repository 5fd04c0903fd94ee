"""The Python scan of a perf.data file: the oracle for allocsites-read --scan.

The product scans a recording with the native reader (perfdata.scan,
scripts/reader/scan.c). This is the same pass in Python, as the product
had it before: the header, the attributes (sample_type, ids), the event
names (feature EVENT_DESC), the data section record by record,
PERF_RECORD_COMPRESSED records decompressed with the libzstd perf itself
links (ctypes), the time of every sample, LOST / LOST_SAMPLES. Its rules
are the reader's (the same checks of the header, the same names, the
same damaged records): tests/unit/test_scan_native.py holds the two
equal, field by field, on real recordings and hostile ones.
"""

import collections
import ctypes
import ctypes.util
import mmap
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
from allocsites_lib.read.perfdata import (  # noqa: E402
    PerfDataError, Scan, _open_check)


HEADER = struct.Struct("<8sQQQQQQQQ4Q")  # perf_file_header, 104 bytes
RECORD_HEADER = struct.Struct("<IHH")
U64 = struct.Struct("<Q")
U32X2 = struct.Struct("<II")
U32X4 = struct.Struct("<IIII")

PERF_RECORD_LOST = 2
PERF_RECORD_COMM = 3
PERF_RECORD_EXIT = 4
PERF_RECORD_FORK = 7
PERF_RECORD_MMAP2 = 10
PERF_RECORD_MISC_MMAP_BUILD_ID = 1 << 14
PROT_EXEC = 4
PERF_RECORD_SAMPLE = 9
PERF_RECORD_LOST_SAMPLES = 13
PERF_RECORD_COMPRESSED = 81
# perf 6.15 and later with -z: u64 data_size, the zstd bytes, padding
PERF_RECORD_COMPRESSED2 = 83
# pipe mode's records for what a file's header holds (perffile.c)
PERF_RECORD_HEADER_ATTR = 64
PERF_RECORD_HEADER_EVENT_TYPE = 65
PERF_RECORD_HEADER_TRACING_DATA = 66
PERF_RECORD_HEADER_BUILD_ID = 67
PERF_RECORD_EVENT_UPDATE = 78
PERF_RECORD_HEADER_FEATURE = 80
PERF_RECORD_FINISHED_INIT = 82
EVENT_UPDATE_NAME = 2
MAX_ATTRS = 4096
# tracing data amid a stream's records: at most half the reader's window
PIPE_TRACING_MAX = (1 << 20) // 2

PERF_TYPE_TRACEPOINT = 2

# sample_type bits, in the order their fields appear in a sample.
SAMPLE_IP = 1 << 0
SAMPLE_TID = 1 << 1
SAMPLE_TIME = 1 << 2
SAMPLE_ADDR = 1 << 3
SAMPLE_READ = 1 << 4
SAMPLE_CALLCHAIN = 1 << 5
SAMPLE_ID = 1 << 6
SAMPLE_CPU = 1 << 7
SAMPLE_PERIOD = 1 << 8
SAMPLE_STREAM_ID = 1 << 9
SAMPLE_RAW = 1 << 10
SAMPLE_BRANCH_STACK = 1 << 11
SAMPLE_REGS_USER = 1 << 12
SAMPLE_IDENTIFIER = 1 << 16
ATTR_FLAG_SAMPLE_ID_ALL = 1 << 18
X86_REG_SP = 7          # perf_regs.h: PERF_REG_X86_SP
STACK_EVERY = 16        # one sample in this many gives its stack depth
RECENT = 64             # sample times kept per thread to tell copies

FEAT_TRACING_DATA = 1
FEAT_CMDLINE = 11
FEAT_EVENT_DESC = 12
FEAT_COMPRESSED = 27
COMP_ZSTD = 1
CMDLINE_MAX = 16 << 20

# Decompressed bytes are walked in a buffer of this size; a record is at
# most 64 KiB (its size is a u16), so one always fits after a partial one.
OUT_SIZE = 1 << 20


class Attr:
    """One perf_event_attr of the recording, with its ids and name."""

    def __init__(self, type_, sample_type, flags, ids, name=None,
                 regs_user=0, stack_user=0):
        self.type = type_
        self.sample_type = sample_type
        self.sample_id_all = bool(flags & ATTR_FLAG_SAMPLE_ID_ALL)
        self.ids = ids
        self.name = name
        self.regs_user = regs_user      # sample_regs_user mask
        self.stack_user = stack_user    # bytes of user stack per sample


def read_header(mm, size):
    if size < HEADER.size:
        raise PerfDataError("too short for a perf.data header", corrupt=True)
    (magic, hsize, attr_size, attrs_off, attrs_size, data_off, data_size,
     _types_off, _types_size, *features) = HEADER.unpack_from(mm, 0)
    if magic != b"PERFILE2":
        raise PerfDataError("not a little-endian perf.data file (magic %r)"
                            % magic)
    if hsize != HEADER.size:
        raise PerfDataError("not a perf.data header (its size is neither a "
                            "file's nor a stream's: %d)" % hsize)
    if data_size == 0:
        raise PerfDataError("header has no data size (unfinished recording?)")
    if data_off + data_size > size or attrs_off + attrs_size > size:
        raise PerfDataError("file is truncated: the header says the data "
                            "ends at byte %d, the file has %d"
                            % (data_off + data_size, size), corrupt=True)
    # perf_event_attr is about 136 bytes, then its ids' file section
    if attr_size <= 16 + 96 or attr_size > 4096 or attrs_size == 0 or \
            attrs_size % attr_size or attrs_size // attr_size > 4096:
        raise PerfDataError("bad attribute table (attribute size %d)"
                            % attr_size, corrupt=True)
    bits = 0
    for i, word in enumerate(features):
        bits |= word << (64 * i)
    return attr_size, attrs_off, attrs_size, data_off, data_size, bits


def attr_at(mm, off, ids):
    """The Attr of the perf_event_attr at off, with its ids (perffile.c
    set_attr); a sample type the reader refuses raises, as
    refuse_sample_type."""
    type_ = struct.unpack_from("<I", mm, off)[0]
    sample_type, _read_format, flags = struct.unpack_from("<QQQ", mm,
                                                          off + 24)
    regs_user, stack_user = struct.unpack_from("<QI", mm, off + 80)
    if sample_type & (SAMPLE_READ | SAMPLE_BRANCH_STACK):
        raise PerfDataError("samples carry read values or branch "
                            "stacks (not recorded by allocsites)")
    return Attr(type_, sample_type, flags, ids, regs_user=regs_user,
                stack_user=stack_user)


def read_attrs(mm, size, attr_size, attrs_off, attrs_size):
    attrs = []
    for off in range(attrs_off, attrs_off + attrs_size, attr_size):
        ids_off, ids_size = struct.unpack_from("<QQ", mm,
                                               off + attr_size - 16)
        if ids_off + ids_size > size or ids_size % 8 or \
                ids_size > 64 << 20:
            raise PerfDataError("attribute ids outside the file",
                                corrupt=True)
        ids = list(struct.unpack_from("<%dQ" % (ids_size // 8), mm, ids_off))
        attrs.append(attr_at(mm, off, ids))
    return attrs


def read_pipe(mm, size):
    """A stream's (perf record -o -) attributes, feature sections (the
    tracing data's among them), event names and data section, as
    perffile.c's open_pipe reads them: (attrs, sections, names, data_off,
    data_size); names: [(id, name)] from EVENT_UPDATE records."""
    attrs, sections, names = [], {}, []
    pos, data_start = 16, None
    while pos + 8 <= size:
        type_, _misc, rsize = RECORD_HEADER.unpack_from(mm, pos)
        if rsize < 8:
            raise PerfDataError("a record of size %d at offset %d: the file "
                                "is damaged" % (rsize, pos), corrupt=True)
        if type_ in (PERF_RECORD_SAMPLE, PERF_RECORD_COMPRESSED,
                     PERF_RECORD_COMPRESSED2,
                     PERF_RECORD_FINISHED_INIT):
            break
        if pos + rsize > size:
            raise PerfDataError("file is truncated", corrupt=True)
        total = rsize
        if type_ == PERF_RECORD_HEADER_TRACING_DATA:
            if rsize < 16:
                raise PerfDataError("a tracing data record too short",
                                    corrupt=True)
            tsize = struct.unpack_from("<I", mm, pos + 8)[0]
            total += tsize
            if pos + total > size:
                raise PerfDataError("file is truncated (in its tracing "
                                    "data)", corrupt=True)
            sections[FEAT_TRACING_DATA] = (pos + rsize, tsize)
        elif type_ == PERF_RECORD_HEADER_ATTR:
            asz = struct.unpack_from("<I", mm, pos + 12)[0] \
                if rsize >= 16 else 0
            if asz < 96 or asz > rsize - 8 or (rsize - 8 - asz) % 8:
                raise PerfDataError("a bad attribute record", corrupt=True)
            if len(attrs) == MAX_ATTRS:
                raise PerfDataError("more attributes than any recording "
                                    "has", corrupt=True)
            nids = (rsize - 8 - asz) // 8
            ids = list(struct.unpack_from("<%dQ" % nids, mm, pos + 8 + asz))
            attrs.append(attr_at(mm, pos + 8, ids))
        elif type_ == PERF_RECORD_HEADER_FEATURE:
            if rsize < 16:
                raise PerfDataError("a feature record too short",
                                    corrupt=True)
            feat = struct.unpack_from("<Q", mm, pos + 8)[0]
            if feat < 64:
                sections[feat] = (pos + 16, rsize - 16)
        elif type_ == PERF_RECORD_EVENT_UPDATE and rsize >= 24 and \
                struct.unpack_from("<Q", mm, pos + 8)[0] == \
                EVENT_UPDATE_NAME:
            if len(names) == MAX_ATTRS:
                raise PerfDataError("more event names than any recording "
                                    "has", corrupt=True)
            id_ = struct.unpack_from("<Q", mm, pos + 16)[0]
            text = bytes(mm[pos + 24:pos + rsize]).split(b"\0", 1)[0]
            names.append((id_, text[:255].decode("utf-8", "replace")))
        if data_start is None and type_ not in (
                PERF_RECORD_HEADER_ATTR, PERF_RECORD_HEADER_FEATURE,
                PERF_RECORD_HEADER_TRACING_DATA,
                PERF_RECORD_HEADER_EVENT_TYPE, PERF_RECORD_HEADER_BUILD_ID):
            data_start = pos
        pos += total
    if data_start is None:
        data_start = pos
    if not attrs:
        raise PerfDataError("a pipe-mode recording without its attributes",
                            corrupt=True)
    check_sections(mm, size, sections)
    return attrs, sections, names, data_start, size - data_start


def check_sections(mm, size, sections):
    """The sections the reader uses lie in the file and the compression
    is zstd, checked in feature order (perffile.c read_features, for a
    file's table and a stream's records alike)."""
    for feat in (FEAT_TRACING_DATA, FEAT_EVENT_DESC, FEAT_COMPRESSED):
        if feat not in sections:
            continue
        off, n = sections[feat]
        if off + n > size or n > 1 << 30:
            raise PerfDataError("a feature section lies outside the file",
                                corrupt=True)
        if feat == FEAT_COMPRESSED and n >= 8 and \
                struct.unpack_from("<I", mm, off + 4)[0] != COMP_ZSTD:
            raise PerfDataError("compressed with something other than "
                                "zstd")


def feature_sections(mm, size, data_end, bits):
    """{feature number: (offset, size)} from the table after the data
    (perffile.c table_features), then check_sections."""
    sections = {}
    pos = data_end
    for feat in range(256):
        if bits >> feat & 1:
            if pos + 16 > size:
                raise PerfDataError("file is truncated: feature table "
                                    "past the end", corrupt=True)
            sections[feat] = struct.unpack_from("<QQ", mm, pos)
            pos += 16
    check_sections(mm, size, sections)
    return sections


def read_cmdline(mm, size, section):
    """perf's own command line (CMDLINE: u32 nr, then nr strings, each
    u32 length and that many bytes, NUL-padded; none past the
    section)."""
    off, n = section
    if off + n > size or n > CMDLINE_MAX:
        raise PerfDataError("a feature section lies outside the file",
                            corrupt=True)
    d = bytes(mm[off:off + n])
    out = []
    if n >= 4:
        nr = struct.unpack_from("<I", d)[0]
        pos = 4
        while len(out) < nr and n - pos >= 4:
            k = struct.unpack_from("<I", d, pos)[0]
            pos += 4
            have = min(k, n - pos)
            out.append(d[pos:pos + have].split(b"\0", 1)[0].decode(
                "utf-8", "replace"))
            pos += have
    return out


def id_owners(attrs):
    """{id: every attr with that id}: a name for an id names them all."""
    owners = {}
    for attr in attrs:
        for i in attr.ids:
            owners.setdefault(i, []).append(attr)
    return owners


def read_event_names(mm, section, attrs):
    """Names from EVENT_DESC, matched to attrs by id: each entry names
    every attr with one of its ids (a later entry again); at most 255
    bytes; an entry past the section ends the table (perffile.c)."""
    off, size = section
    d = bytes(mm[off:off + size])
    if size < 8:
        return
    owners = id_owners(attrs)
    nr, sz = struct.unpack_from("<II", d)
    pos = 8
    for _ in range(nr):
        if pos + sz + 8 > size:
            return
        pos += sz
        nr_ids, slen = struct.unpack_from("<II", d, pos)
        pos += 8
        if pos + slen + 8 * nr_ids > size:
            return
        name = d[pos:pos + min(slen, 255)].split(b"\0", 1)[0].decode(
            "utf-8", "replace")
        pos += slen
        for i in struct.unpack_from("<%dQ" % nr_ids, d, pos):
            for attr in owners.get(i, ()):
                attr.name = name
        pos += 8 * nr_ids


class _ZstdBuffer(ctypes.Structure):
    # ZSTD_inBuffer and ZSTD_outBuffer have the same layout.
    _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t),
                ("pos", ctypes.c_size_t)]


_ZSTD = []


def libzstd():
    """libzstd via ctypes (loaded once), or PerfDataError."""
    if not _ZSTD:
        # The soname first: perf itself links libzstd.so.1, so it is there
        # whenever perf can write -z; find_library runs ldconfig -p (a
        # process and ~10 ms), so it is only the fallback.
        try:
            lib = ctypes.CDLL("libzstd.so.1")
        except OSError:
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("zstd") or
                                  "libzstd.so")
            except OSError as e:
                raise PerfDataError("cannot load libzstd: %s" % e)
        lib.ZSTD_createDStream.restype = ctypes.c_void_p
        lib.ZSTD_freeDStream.argtypes = [ctypes.c_void_p]
        lib.ZSTD_initDStream.argtypes = [ctypes.c_void_p]
        lib.ZSTD_initDStream.restype = ctypes.c_size_t
        lib.ZSTD_decompressStream.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(_ZstdBuffer),
            ctypes.POINTER(_ZstdBuffer)]
        lib.ZSTD_decompressStream.restype = ctypes.c_size_t
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_getErrorName.argtypes = [ctypes.c_size_t]
        lib.ZSTD_getErrorName.restype = ctypes.c_char_p
        _ZSTD.append(lib)
    return _ZSTD[0]


class _Records:
    """Walks records and keeps the figures in a Scan."""

    def __init__(self, attrs, scan):
        self.scan = scan
        self.attrs = attrs
        self.pipe = False   # a stream (perf record -o -): _scan sets it
        # an id several attributes have is the first one's (perffile.c)
        self.by_id = {i: a for a in reversed(attrs) for i in a.ids}
        self.id_samples = collections.Counter()   # sample id -> records
        self.id_duplicates = collections.Counter()  # sample id -> twice
        self.duplicates = 0
        # Per thread: its latest sample time, and its last RECENT times.
        # perf copies again the records that reached a ring while it read
        # the ring's head twice (often several: a free and an allocation),
        # so a copy follows the originals, after the last of them; the
        # thread's own records in the file are out of time order only
        # where it moved between CPUs (rings), at times never seen before.
        self.last_time = {}
        self.recent = {}
        first = attrs[0]
        prefixes = {a.sample_type & (SAMPLE_IDENTIFIER | SAMPLE_IP |
                                     SAMPLE_TID | SAMPLE_TIME)
                    for a in attrs}
        if len(prefixes) != 1 or not first.sample_type & SAMPLE_TIME:
            raise PerfDataError("samples without a common time field")
        st = first.sample_type
        self.time_off = 8 + 8 * sum(1 for bit in (SAMPLE_IDENTIFIER,
                                                  SAMPLE_IP, SAMPLE_TID)
                                    if st & bit)
        # {u32 pid, u32 tid} just before the time, when sampled.
        self.tid_off = self.time_off - 8 if st & SAMPLE_TID else None
        # Which attribute a sample belongs to (perf's own rule: with one
        # attribute, or no id in the sample, the first one).
        self.sample_id_off = None
        if len(attrs) > 1:
            if st & SAMPLE_IDENTIFIER:
                self.sample_id_off = 8
            elif all(a.sample_type == st for a in attrs) and st & SAMPLE_ID:
                self.sample_id_off = 8 + 8 * sum(
                    1 for bit in (SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME,
                                  SAMPLE_ADDR) if st & bit)
            else:
                raise PerfDataError("cannot tell the events' samples apart")
        self.all_tracepoints = all(a.type == PERF_TYPE_TRACEPOINT
                                   for a in attrs)
        # A sample shorter than its time or id is damaged.
        self.min_sample = max(self.time_off, self.sample_id_off or 0) + 8
        # Where SP is in a sample of each attribute (None: not there).
        self.sp_layouts = {i: self._sp_layout(a) for a in reversed(attrs)
                           for i in a.ids}
        self.sp_layout = self._sp_layout(attrs[0]) if len(attrs) == 1 or \
            self.sample_id_off is None else None
        self.stacks = self.sp_layout is not None or (
            self.sample_id_off is not None and
            any(self.sp_layouts.values()))
        self.stack_countdown = STACK_EVERY
        # The id in the sample_id trailer of other records (sample_id_all).
        self.trailer_id_back = None
        if first.sample_id_all:
            if st & SAMPLE_IDENTIFIER:
                self.trailer_id_back = 8
            elif st & SAMPLE_ID:
                after = sum(1 for bit in (SAMPLE_STREAM_ID, SAMPLE_CPU)
                            if st & bit)
                self.trailer_id_back = 8 * (after + 1)

    def event_samples(self, by_id=None, single=None):
        """{event name: sample records} once the walk is done (with one
        attribute, or no id in the samples, every sample is the first
        attribute's: perf's own rule). by_id, single: another count of
        samples, per id and in all (duplicate_samples)."""
        if by_id is None:
            by_id, single = self.id_samples, len(self.scan.times)
        if self.sample_id_off is None:
            counts = {self.attrs[0].name or "?": single}
        else:
            counts = {}
            for ident, n in by_id.items():
                attr = self.by_id.get(ident)
                name = (attr.name if attr is not None else None) or "?"
                counts[name] = counts.get(name, 0) + n
        return {name: n for name, n in counts.items() if n}

    @staticmethod
    def _sp_layout(attr):
        """(offset of the callchain or what follows it, has callchain, has
        raw, index of SP in the user registers) in a sample of attr, or
        None when its samples carry no SP at a computable place."""
        st, mask = attr.sample_type, attr.regs_user
        if not st & SAMPLE_REGS_USER or not mask >> X86_REG_SP & 1 or \
                st & (SAMPLE_READ | SAMPLE_BRANCH_STACK):
            return None
        fixed = (SAMPLE_IDENTIFIER, SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME,
                 SAMPLE_ADDR, SAMPLE_ID, SAMPLE_STREAM_ID, SAMPLE_CPU,
                 SAMPLE_PERIOD)
        off = 8 + 8 * sum(1 for bit in fixed if st & bit)
        sp_index = bin(mask & ((1 << X86_REG_SP) - 1)).count("1")
        return (off, bool(st & SAMPLE_CALLCHAIN), bool(st & SAMPLE_RAW),
                sp_index)

    def stack_point(self, buf, pos, size, time, tid):
        """Keeps (time, tid, user SP) of this sample (none when its
        fields lie past the record)."""
        layout = self.sp_layout
        if layout is None:
            layout = self.sp_layouts.get(
                U64.unpack_from(buf, pos + self.sample_id_off)[0])
            if layout is None:
                return
        p, callchain, raw, sp_index = layout
        p += pos
        end = pos + size
        if callchain:
            if p + 8 > end:
                return
            nr = U64.unpack_from(buf, p)[0]
            p += 8
            if nr > (end - p) // 8:
                return
            p += 8 * nr
        if raw:
            if p + 4 > end:
                return
            n = struct.unpack_from("<I", buf, p)[0]
            p += 4
            if n > end - p:
                return
            p += n
        if p + 8 > end or not U64.unpack_from(buf, p)[0]:
            return   # abi: 0 when no user registers
        p += 8
        if (end - p) // 8 <= sp_index:
            return
        sp = U64.unpack_from(buf, p + 8 * sp_index)[0]
        self.scan._stack_points.append((time, tid, sp))

    def attr_of(self, buf, pos, size, back):
        """perf's evlist__id2evsel for a record: the first attribute when
        there is one, or no id; None for an id no attribute has."""
        if len(self.attrs) == 1 or back is None or size < back + 8:
            return self.attrs[0]
        ident = U64.unpack_from(buf, pos + size - back)[0]
        if ident == 0:
            return self.attrs[0]
        return self.by_id.get(ident)

    def task(self, type_, buf, pos, size):
        """FORK and EXIT: u32 pid, ppid, tid, ptid; COMM: u32 pid, tid."""
        if size < (16 if type_ == PERF_RECORD_COMM else 24):
            _damaged("a task record too short", pos)
        if type_ == PERF_RECORD_COMM:
            pid, tid = U32X2.unpack_from(buf, pos + 8)
            if pid == tid:
                self.scan.started.add(pid)
            return
        pid, ppid, tid, _ = U32X4.unpack_from(buf, pos + 8)
        if pid != tid:
            return   # a thread
        if type_ == PERF_RECORD_FORK:
            if pid != ppid:
                self.scan.started.add(pid)
        else:
            self.scan.ended.add(pid)

    def mmap2(self, buf, pos, size, misc):
        """MMAP2: u32 pid, tid; u64 addr, len, pgoff; then either u32 maj,
        min, u64 ino, ino_generation or (misc bit 14, --buildid-mmap) u8
        build_id_size, 3 reserved, 20 bytes of build-id; u32 prot, flags;
        the file name (NUL-terminated, padded), then the sample id."""
        if size < 72:
            _damaged("a mapping record too short", pos)
        prot = struct.unpack_from("<I", buf, pos + 64)[0]
        name = bytes(buf[pos + 72:pos + size])
        name = name[:name.find(b"\0")] if b"\0" in name else name
        path = name.decode("utf-8", "surrogateescape")
        if prot & PROT_EXEC and path.startswith("/"):
            self.scan.code.add(path)
        if misc & PERF_RECORD_MISC_MMAP_BUILD_ID:
            n = struct.unpack_from("<B", buf, pos + 40)[0]
            if n <= 20:
                self.scan.build_ids.setdefault(path, set()).add(
                    bytes(buf[pos + 44:pos + 44 + n]).hex())

    def walk(self, buf, start, end, on_compressed=None):
        """Records in buf[start:end]; returns where the first incomplete
        record starts (end when none is)."""
        unpack = RECORD_HEADER.unpack_from
        u64 = U64.unpack_from
        times = self.scan.times
        pids = self.scan.pids
        time_off = self.time_off
        tid_off = self.tid_off
        id_off = self.sample_id_off
        min_sample = self.min_sample
        last_time, recent = self.last_time, self.recent
        pos = start
        samples = duplicates = 0
        while pos + 8 <= end:
            type_, _misc, size = unpack(buf, pos)
            if size < 8:
                raise PerfDataError("record of size %d at offset %d"
                                    % (size, pos), corrupt=True,
                                    in_data=True)
            if type_ == PERF_RECORD_HEADER_TRACING_DATA and self.pipe and \
                    on_compressed is not None:
                # a stream's tracing data amid its records: its bytes
                # follow the record, outside its size (perffile.c walk)
                if size < 16 or pos + 16 > end:
                    break
                total = size + struct.unpack_from("<I", buf, pos + 8)[0]
                if total > PIPE_TRACING_MAX:
                    raise PerfDataError("tracing data of %d bytes amid the "
                                        "records" % total, corrupt=True,
                                        in_data=True)
                if pos + total > end:
                    break
                pos += total
                continue
            if pos + size > end:
                break
            if type_ == PERF_RECORD_SAMPLE:
                if size < min_sample:
                    _damaged("a sample shorter than its time or id", pos)
                t = u64(buf, pos + time_off)[0]
                times.append(t)
                if tid_off is not None:
                    pid_tid = u64(buf, pos + tid_off)[0]
                    pids[pid_tid >> 32] = pid_tid & 0xffffffff
                    if t > last_time.get(pid_tid, -1):
                        last_time[pid_tid] = t
                        seen = recent.get(pid_tid)
                        if seen is None:
                            seen = recent[pid_tid] = collections.deque(
                                maxlen=RECENT)
                        seen.append(t)
                    elif t in recent[pid_tid]:
                        duplicates += 1
                        if id_off is not None:
                            self.id_duplicates[u64(buf, pos + id_off)[0]] += 1
                    else:
                        recent[pid_tid].append(t)
                    self.stack_countdown -= 1
                    if not self.stack_countdown and self.stacks:
                        self.stack_countdown = STACK_EVERY
                        self.stack_point(buf, pos, size, t,
                                         pid_tid >> 32)
                if id_off is not None:
                    self.id_samples[u64(buf, pos + id_off)[0]] += 1
                if self.all_tracepoints:
                    samples += 1
                else:
                    attr = self.attrs[0] if id_off is None else \
                        self.by_id.get(u64(buf, pos + id_off)[0])
                    if attr is not None and attr.type == PERF_TYPE_TRACEPOINT:
                        samples += 1
            elif type_ == PERF_RECORD_COMPRESSED2 and on_compressed:
                data_size = u64(buf, pos + 8)[0] if size >= 16 else None
                if data_size is None or data_size > size - 16:
                    raise PerfDataError("a COMPRESSED2 record says more than "
                                        "it holds", corrupt=True,
                                        in_data=True)
                on_compressed(buf, pos + 16, data_size)
            elif type_ == PERF_RECORD_COMPRESSED and on_compressed:
                on_compressed(buf, pos + 8, size - 8)
            elif type_ == PERF_RECORD_LOST_SAMPLES:
                if size < 16:
                    _damaged("a LOST_SAMPLES record too short", pos)
                attr = self.attr_of(buf, pos, size, self.trailer_id_back)
                if attr is not None:
                    name = attr.name or "?"
                    lost = self.scan.lost_samples
                    lost[name] = lost.get(name, 0) + u64(buf, pos + 8)[0]
            elif type_ == PERF_RECORD_LOST:
                self.scan.lost_records += 1
            elif type_ == PERF_RECORD_MMAP2:
                self.mmap2(buf, pos, size, _misc)
            elif type_ in (PERF_RECORD_FORK, PERF_RECORD_EXIT,
                           PERF_RECORD_COMM):
                self.task(type_, buf, pos, size)
            pos += size
        self.scan.samples += samples
        self.duplicates += duplicates
        return pos


class _Decompressor:
    """perf's zstd stream: each COMPRESSED record continues it."""

    def __init__(self, records):
        self.lib = libzstd()
        self.records = records
        self.stream = self.lib.ZSTD_createDStream()
        if not self.stream:
            raise PerfDataError("ZSTD_createDStream failed")
        self.lib.ZSTD_initDStream(self.stream)
        self.inbuf = ctypes.create_string_buffer(1 << 16)
        self.out = ctypes.create_string_buffer(OUT_SIZE)
        self.view = memoryview(self.out)
        self.have = 0   # bytes of an incomplete record at the buffer start
        self.total = 0

    def close(self):
        if self.stream:
            self.lib.ZSTD_freeDStream(self.stream)
            self.stream = None

    def feed(self, buf, pos, size):
        lib = self.lib
        if size > len(self.inbuf):
            self.inbuf = ctypes.create_string_buffer(size)
        ctypes.memmove(self.inbuf, bytes(buf[pos:pos + size]), size)
        src = _ZstdBuffer(ctypes.addressof(self.inbuf), size, 0)
        out_base = ctypes.addressof(self.out)
        dst = _ZstdBuffer(out_base, OUT_SIZE, 0)
        while True:
            dst.pos = self.have
            ret = lib.ZSTD_decompressStream(self.stream, ctypes.byref(dst),
                                            ctypes.byref(src))
            if lib.ZSTD_isError(ret):
                raise PerfDataError(
                    "zstd: %s" % lib.ZSTD_getErrorName(ret).decode(),
                    corrupt=True, in_data=True)
            filled = dst.pos
            self.total += filled - self.have
            done = self.records.walk(self.view, 0, filled)
            self.have = filled - done
            if self.have:
                ctypes.memmove(out_base, out_base + done, self.have)
            if src.pos == src.size and filled < OUT_SIZE:
                return


def graph_attr(attrs):
    """The first tracepoint attribute with a call graph, or None."""
    for attr in attrs:
        if attr.sample_type & SAMPLE_CALLCHAIN and \
                attr.type == PERF_TYPE_TRACEPOINT:
            return attr
    return None


def unwind_of(attrs):
    """"dwarf", "fp" or "none": how the first tracepoint attribute with a
    call graph takes its stacks (allocsites record --unwind); "none" when
    no tracepoint has one (the plain event never does)."""
    attr = graph_attr(attrs)
    if attr is None:
        return "none"
    if attr.sample_type & SAMPLE_REGS_USER and attr.stack_user:
        return "dwarf"
    return "fp"


def stack_size_of(attrs):
    """The copy size of the attribute unwind_of reads (0 but for
    "dwarf")."""
    attr = graph_attr(attrs)
    if attr is None or not attr.sample_type & SAMPLE_REGS_USER:
        return 0
    return attr.stack_user


class _Count:
    """Stands for Scan.times when they are not kept (scan(keep_times=
    False)): counts the samples in constant memory."""
    __slots__ = ("n",)

    def __init__(self):
        self.n = 0

    def append(self, _t):
        self.n += 1

    def sort(self):
        pass

    def __len__(self):
        return self.n


def scan_python(path, keep_times=True):
    """scan() in Python: where allocsites-read is not built (the perf
    script path needs no build), and the oracle the native scan is
    tested against (tests/unit/test_scan_native.py)."""
    _open_check(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise PerfDataError("cannot read %s: %s" % (path, e))
    try:
        return _scan(mm, size, keep_times)
    except struct.error as e:
        raise PerfDataError("unreadable record: %s" % e, corrupt=True,
                            in_data=True)
    finally:
        mm.close()


def _scan(mm, size, keep_times=True):
    pipe = size >= 16 and bytes(mm[:8]) == b"PERFILE2" and \
        struct.unpack_from("<Q", mm, 8)[0] == 16
    if pipe:
        attrs, sections, names, data_off, data_size = read_pipe(mm, size)
        owners = id_owners(attrs)
        for id_, name in names:
            for attr in owners.get(id_, ()):
                attr.name = name
    else:
        (attr_size, attrs_off, attrs_size, data_off, data_size,
         bits) = read_header(mm, size)
        attrs = read_attrs(mm, size, attr_size, attrs_off, attrs_size)
        sections = feature_sections(mm, size, data_off + data_size, bits)
    if FEAT_EVENT_DESC not in sections and \
            not any(a.name for a in attrs):
        raise PerfDataError("no event names (feature EVENT_DESC)")
    if FEAT_EVENT_DESC in sections:
        read_event_names(mm, sections[FEAT_EVENT_DESC], attrs)
    result = Scan()
    result.data_size = data_size
    result.unwind = unwind_of(attrs)
    result.stack_size = stack_size_of(attrs)
    if not keep_times:
        result.times = _Count()
    records = _Records(attrs, result)
    records.pipe = pipe
    if FEAT_CMDLINE in sections:
        result.cmdline = read_cmdline(mm, size, sections[FEAT_CMDLINE])
    if not keep_times:
        records.stacks = False   # no depths either
    result.all_tracepoints = records.all_tracepoints
    if FEAT_COMPRESSED in sections and sections[FEAT_COMPRESSED][1] >= 8:
        result.compressed = True   # zstd: feature_sections checked
    # COMPRESSED records are decompressed whatever the features say, as
    # perf and the native reader do.
    decompressor = []

    def feed(buf, pos, n):
        if not decompressor:
            decompressor.append(_Decompressor(records))
        decompressor[0].feed(buf, pos, n)
    try:
        end = data_off + data_size
        stop = records.walk(mm, data_off, end, feed)
        if stop != end:
            raise PerfDataError("the last record runs past the data section",
                                corrupt=True, in_data=True)
        if decompressor:
            # Not an error here: the end of the recording is missing, and
            # the end-to-end count says whether any of it was the
            # program's (completeness.verdict).
            result.tail_cut = decompressor[0].have
            result.decompressed = decompressor[0].total
    finally:
        if decompressor:
            decompressor[0].close()
    result.event_samples = records.event_samples()
    result.duplicate_samples = records.event_samples(records.id_duplicates,
                                                     records.duplicates)
    result.times.sort()
    result.depths = _depths(result._stack_points,
                            max(a.stack_user for a in attrs))
    result._stack_points = []
    if not keep_times:
        result.times = None
    return result


def _damaged(why, pos):
    raise PerfDataError("a damaged record (at offset %d of its buffer): %s"
                        % (pos, why), corrupt=True, in_data=True)


def _depths(points, stack_user):
    """(time, stack bytes) per point: the distance of its SP from the
    highest SP seen in its thread (the thread's outermost frames), at most
    the stack perf copied."""
    top = {}
    for _, tid, sp in points:
        if sp >= top.get(tid, 0):
            top[tid] = sp
    limit = stack_user or (1 << 16)
    return sorted((t, min(top[tid] - sp, limit)) for t, tid, sp in points)
