"""perfdata.scan on perf.data files built here byte by byte, plain and
zstd-compressed the way perf 6.1 writes them (one stream, flushed per
COMPRESSED record, records cut across records). No perf needed; the
real files are checked against perf report --stats in
tests/integration/test_parallel_report.py."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import ctypes
import shutil
import struct
import tempfile

from allocsites_lib.read import perfdata as pd
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "oracle"))
import perfdata_py  # noqa: E402  (libzstd through ctypes, to compress)

IP, TID, TIME, ID, CPU, PERIOD, RAW = 1, 2, 4, 64, 128, 256, 1024
IDENTIFIER = 1 << 16
ATTR_SIZE = 136     # perf 6.1's perf_event_attr (PERF_ATTR_SIZE_VER8)


def attr_bytes(sample_type, type_=2, sample_id_all=True):
    flags = 1 << 18 if sample_id_all else 0
    raw = struct.pack("<IIQQQQQ", type_, ATTR_SIZE, 0x917, 1, sample_type,
                      0, flags)
    return raw + b"\0" * (ATTR_SIZE - len(raw))


def record(type_, body, misc=0):
    return struct.pack("<IHH", type_, misc, 8 + len(body)) + body


def sample(time, sample_type=IP | TID | TIME | CPU | PERIOD | RAW, ident=None,
           payload=40):
    body = b""
    if sample_type & IDENTIFIER:
        body += struct.pack("<Q", ident)
    body += struct.pack("<QIIQ", 0x55550000 + time % 97, 42, 43, time)
    if sample_type & ID:
        body += struct.pack("<Q", ident)
    return record(9, body + b"\xab" * payload)


def sample_id(sample_type, time, ident):
    """The sample_id_all trailer: TID TIME ID STREAM_ID CPU IDENTIFIER."""
    out = struct.pack("<IIQ", 42, 43, time)
    if sample_type & ID:
        out += struct.pack("<Q", ident)
    if sample_type & CPU:
        out += struct.pack("<II", 0, 0)
    if sample_type & IDENTIFIER:
        out += struct.pack("<Q", ident)
    return out


def lost_samples(n, sample_type, ident):
    return record(13, struct.pack("<Q", n) + sample_id(sample_type, 0, ident))


def lost(n, sample_type, ident):
    return record(2, struct.pack("<QQ", ident, n) +
                  sample_id(sample_type, 0, ident))


def pstring(text):
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 64)
    return struct.pack("<I", len(raw)) + raw


def zstd_stream(chunks):
    """perf 6.1's compression: one stream, each chunk flushed (not ended)."""
    lib = perfdata_py.libzstd()
    lib.ZSTD_createCStream.restype = ctypes.c_void_p
    lib.ZSTD_initCStream.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.ZSTD_compressStream.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(perfdata_py._ZstdBuffer),
        ctypes.POINTER(perfdata_py._ZstdBuffer)]
    lib.ZSTD_compressStream.restype = ctypes.c_size_t
    lib.ZSTD_flushStream.argtypes = [ctypes.c_void_p,
                                     ctypes.POINTER(perfdata_py._ZstdBuffer)]
    lib.ZSTD_flushStream.restype = ctypes.c_size_t
    lib.ZSTD_freeCStream.argtypes = [ctypes.c_void_p]
    stream = lib.ZSTD_createCStream()
    lib.ZSTD_initCStream(stream, 1)
    out = []
    for chunk in chunks:
        src_buf = ctypes.create_string_buffer(chunk, len(chunk))
        dst_buf = ctypes.create_string_buffer(len(chunk) + 4096)
        src = perfdata_py._ZstdBuffer(ctypes.addressof(src_buf), len(chunk), 0)
        dst = perfdata_py._ZstdBuffer(ctypes.addressof(dst_buf), len(dst_buf), 0)
        while src.pos < src.size:
            lib.ZSTD_compressStream(stream, ctypes.byref(dst),
                                    ctypes.byref(src))
        while lib.ZSTD_flushStream(stream, ctypes.byref(dst)):
            pass
        out.append(dst_buf.raw[:dst.pos])
    lib.ZSTD_freeCStream(stream)
    return out


def perf_data(events, records, compress_every=None):
    """A perf.data file. events: [(name, sample_type, ids, type)];
    records: the data section's records (bytes each). compress_every:
    put the records into COMPRESSED records of about that many bytes of
    input each, cut anywhere (perf cuts at its ring buffer's end)."""
    header_size = 104
    attrs = b""
    ids_blob = b""
    ids_base = header_size
    for _name, st, ids, type_ in events:
        ids_blob += struct.pack("<%dQ" % len(ids), *ids)
    attrs_off = ids_base + len(ids_blob)
    pos = ids_base
    for _name, st, ids, type_ in events:
        attrs += attr_bytes(st, type_) + struct.pack("<QQ", pos, 8 * len(ids))
        pos += 8 * len(ids)
    data = b"".join(records)
    features = {12: b""}
    if compress_every:
        chunks = [data[i:i + compress_every]
                  for i in range(0, len(data), compress_every)]
        data = b"".join(record(81, c) for c in zstd_stream(chunks))
        features[27] = struct.pack("<IIIII", 1, 1, 1, 100, 1 << 20)
    desc = struct.pack("<II", len(events), ATTR_SIZE)
    for name, st, ids, type_ in events:
        desc += attr_bytes(st, type_) + struct.pack("<I", len(ids)) + \
            pstring(name) + struct.pack("<%dQ" % len(ids), *ids)
    features[12] = desc
    data_off = attrs_off + len(attrs)
    table_off = data_off + len(data)
    table = b""
    sections = b""
    body_off = table_off + 16 * len(features)
    for feat in sorted(features):
        table += struct.pack("<QQ", body_off + len(sections),
                             len(features[feat]))
        sections += features[feat]
    bits = sum(1 << f for f in features)
    header = struct.pack("<8sQQQQQQQQ4Q", b"PERFILE2", header_size,
                         ATTR_SIZE + 16, attrs_off, len(attrs), data_off,
                         len(data), 0, 0, bits, 0, 0, 0)
    return header + ids_blob + attrs + data + table + sections


ONE = [("sdt_rt:alloc", IP | TID | TIME | CPU | PERIOD | RAW, [51, 52], 2)]
TWO_ST = IDENTIFIER | IP | TID | TIME | CPU | PERIOD | RAW
TWO = [("sdt_rt:alloc_1", TWO_ST, [7, 8], 2), ("sdt_rt:exit", TWO_ST, [9], 2)]


class ScanTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def scan(self, blob):
        path = os.path.join(self.tmp, "perf.data")
        with open(path, "wb") as f:
            f.write(blob)
        return pd.scan(path)

    def check_times_and_loss(self, compress_every):
        st = ONE[0][1]
        times = [1000 + 37 * ((i * 7919) % 500) for i in range(500)]
        records = [record(3, b"minicc\0\0" + sample_id(st, 0, 0))]  # COMM
        records += [sample(t, payload=40 + i % 300)
                    for i, t in enumerate(times)]
        records += [lost(5, st, 51), lost_samples(12, st, 52),
                    lost_samples(3, st, 51)]
        s = self.scan(perf_data(ONE, records, compress_every))
        self.assertEqual(s.times, sorted(times))
        self.assertEqual(s.samples, 500)
        self.assertEqual(s.event_samples, {"sdt_rt:alloc": 500})
        self.assertEqual(s.lost_samples, {"sdt_rt:alloc": 15})
        self.assertEqual(s.lost_records, 1)
        self.assertEqual(s.lost(), (15, None))
        self.assertEqual(s.compressed, bool(compress_every))
        return s

    def test_plain(self):
        self.assertEqual(self.check_times_and_loss(None).decompressed, 0)

    def test_compressed_records_cut_anywhere(self):
        for every in (1000, 4093, 1 << 20):
            with self.subTest(every=every):
                s = self.check_times_and_loss(every)
                self.assertGreater(s.decompressed, 500 * 40)

    def test_output_buffer_boundaries(self):
        # More decompressed data than the scan's buffer, in big records.
        times = list(range(1, 400))
        records = [sample(t, payload=60000) for t in times]
        s = self.scan(perf_data(ONE, records, 1 << 16))
        self.assertEqual(s.times, times)
        self.assertGreater(s.decompressed, 2 * perfdata_py.OUT_SIZE)

    def test_two_events_by_identifier(self):
        records = [sample(t, TWO_ST, ident=7 if t % 3 else 9)
                   for t in range(1, 100)]
        records += [lost_samples(4, TWO_ST, 8), lost_samples(6, TWO_ST, 9),
                    lost_samples(1, TWO_ST, 1234)]   # unknown id: not counted
        s = self.scan(perf_data(TWO, records, 5000))
        self.assertEqual(len(s.times), 99)
        # ids 7 and 8 are alloc_1's, 9 exit's: t % 3 == 0 for 33 of them
        self.assertEqual(s.event_samples, {"sdt_rt:alloc_1": 66,
                                           "sdt_rt:exit": 33})
        self.assertEqual(s.lost_samples, {"sdt_rt:alloc_1": 4,
                                          "sdt_rt:exit": 6})
        self.assertEqual(s.lost(), (10, None))

    def test_records_written_twice_are_counted(self):
        # perf_mmap__push copies a record again at the start of its next
        # pass: same thread and nanosecond as that thread's record before.
        # Often several records at once: 20 and 21 are copied after both.
        records = [sample(10, TWO_ST, ident=7), sample(10, TWO_ST, ident=7),
                   sample(11, TWO_ST, ident=9), sample(11, TWO_ST, ident=9),
                   sample(20, TWO_ST, ident=7), sample(21, TWO_ST, ident=9),
                   sample(20, TWO_ST, ident=7), sample(21, TWO_ST, ident=9),
                   sample(30, TWO_ST, ident=7), sample(25, TWO_ST, ident=7)]
        for every in (None, 60):
            with self.subTest(compress_every=every):
                s = self.scan(perf_data(TWO, records, every))
                self.assertEqual(s.event_samples, {"sdt_rt:alloc_1": 6,
                                                   "sdt_rt:exit": 4})
                # 25 after 30 is out of order (the thread moved to the
                # other CPU's ring), at a time never seen: not a copy.
                self.assertEqual(s.duplicate_samples, {"sdt_rt:alloc_1": 2,
                                                       "sdt_rt:exit": 2})
        one = self.scan(perf_data(ONE, [sample(5), sample(5), sample(6)]))
        self.assertEqual(one.duplicate_samples, {"sdt_rt:alloc": 1})
        none = self.scan(perf_data(ONE, [sample(5), sample(6)]))
        self.assertEqual(none.duplicate_samples, {})

    def test_two_events_by_id(self):
        st = IP | TID | TIME | ID | CPU | PERIOD | RAW
        events = [("sdt_rt:alloc", st, [1], 2), ("cycles", st, [2], 0)]
        records = [sample(t, st, ident=1 + t % 2) for t in range(10)]
        records.append(lost_samples(9, st, 2))
        s = self.scan(perf_data(events, records))
        self.assertEqual(s.samples, 5)    # tracepoint samples only
        self.assertEqual(s.event_samples, {"sdt_rt:alloc": 5, "cycles": 5})
        self.assertEqual(len(s.times), 10)
        self.assertEqual(s.lost_samples, {"cycles": 9})
        self.assertEqual(s.lost(), (0, None))

    def test_build_ids_and_code_of_mmap2_records(self):
        # perf record --buildid-mmap: MMAP2 with misc bit 14 carries the
        # build-id where MMAP2 otherwise has maj/min/ino; plain MMAP2
        # records (no bit) give none.
        st = ONE[0][1]

        def mmap2(path, build_id=None, prot=5):
            head = struct.pack("<IIQQQ", 42, 43, 0x5555000, 0x1000, 0)
            if build_id is None:
                ident, misc = struct.pack("<IIQQ", 8, 1, 1234, 0), 0
            else:
                ident = struct.pack("<BBH", len(build_id), 0, 0) + \
                    build_id + b"\0" * (20 - len(build_id))
                misc = 1 << 14
            name = path.encode() + b"\0"
            name += b"\0" * (-len(name) % 8)
            return record(10, head + ident + struct.pack("<II", prot, 2) +
                          name + sample_id(st, 0, 0), misc)
        bid = bytes(range(1, 21))
        records = [mmap2("/usr/bin/prog", bid), mmap2("/lib/libc.so.6"),
                   mmap2("/usr/lib/libshort.so", b"\xaa" * 16),
                   mmap2("/data/file", prot=1), mmap2("[vdso]"),
                   sample(5)]
        for every in (None, 100):
            with self.subTest(compress_every=every):
                s = self.scan(perf_data(ONE, records, every))
                self.assertEqual(s.build_ids, {
                    "/usr/bin/prog": {bid.hex()},
                    "/usr/lib/libshort.so": {"aa" * 16}})
                # Code: the executable mappings of files, not data.
                self.assertEqual(s.code, {"/usr/bin/prog", "/lib/libc.so.6",
                                          "/usr/lib/libshort.so"})

    def test_lost_records_without_a_count_are_unknown(self):
        st = ONE[0][1]
        s = self.scan(perf_data(ONE, [sample(5), lost(3, st, 51)]))
        self.assertEqual(s.lost(), (None, "1 PERF_RECORD_LOST records "
                                          "without a count"))

    def test_truncated_file_is_corrupt(self):
        blob = perf_data(ONE, [sample(t) for t in range(100)])
        with self.assertRaises(pd.PerfDataError) as cm:
            self.scan(blob[:len(blob) // 2])
        self.assertTrue(cm.exception.corrupt)
        self.assertIn("truncated", str(cm.exception))

    def test_damaged_stream_is_corrupt(self):
        blob = bytearray(perf_data(ONE, [sample(t) for t in range(300)],
                                   2000))
        data_off = struct.unpack_from("<Q", blob, 40)[0]
        for i in range(data_off + 60, data_off + 260):
            blob[i] ^= 0x5a
        with self.assertRaises(pd.PerfDataError) as cm:
            self.scan(bytes(blob))
        self.assertTrue(cm.exception.corrupt)

    def test_stream_ending_inside_a_record_is_a_cut_tail(self):
        """perf 6.1's -z can lose the end of its last compressed record:
        the scan reads everything before it and says how much of a record
        was left (the verdict decides, by the end-to-end count)."""
        records = [sample(t) for t in range(100)]
        records[-1] = records[-1][:-10]
        s = self.scan(perf_data(ONE, records, 2000))
        self.assertEqual(s.tail_cut, len(records[-1]))
        self.assertEqual(s.times, list(range(99)))
        whole = self.scan(perf_data(ONE, [sample(t) for t in range(100)],
                                    2000))
        self.assertEqual(whole.tail_cut, 0)

    def test_record_running_past_the_data_is_corrupt(self):
        blob = bytearray(perf_data(ONE, [sample(t) for t in range(10)]))
        data_off = struct.unpack_from("<Q", blob, 40)[0]
        struct.pack_into("<H", blob, data_off + 6, 0xfff0)
        with self.assertRaises(pd.PerfDataError) as cm:
            self.scan(bytes(blob))
        self.assertTrue(cm.exception.corrupt)

    def test_pipe_stream_of_zeros_is_corrupt(self):
        # pipe mode (a 16-byte header): read since 2026-11-27, so a
        # stream of zeros is a record of size 0, damage
        pipe = struct.pack("<8sQ", b"PERFILE2", 16) + b"\0" * 200
        with self.assertRaises(pd.PerfDataError) as cm:
            self.scan(pipe)
        self.assertTrue(cm.exception.corrupt)
        self.assertIn("a record of size 0 at offset 16", str(cm.exception))

    def test_unsupported_is_not_corrupt(self):
        # a header of another size: another format, for perf to read
        other = struct.pack("<8sQ", b"PERFILE2", 120) + b"\0" * 200
        no_time = [("sdt_rt:alloc", IP | TID, [1], 2)]
        for blob in (other, perf_data(no_time, [record(9, b"\0" * 24)])):
            with self.assertRaises(pd.PerfDataError) as cm:
                self.scan(blob)
            self.assertFalse(cm.exception.corrupt)

    def test_not_perf_data(self):
        with self.assertRaises(pd.PerfDataError):
            self.scan(b"hello\n")


if __name__ == "__main__":
    unittest.main()


class CmdlineTest(unittest.TestCase):
    """What perf record's own options say, from its command line: the
    program's arguments after `--` are not perf's."""

    def test_attached(self):
        self.assertTrue(pd.attached(
            ["perf", "record", "-o", "x", "-e", "sdt_rt:alloc", "-p", "42"]))
        self.assertTrue(pd.attached(["perf", "record", "--pid=42"]))
        self.assertFalse(pd.attached(
            ["perf", "record", "-o", "x", "--", "mkdir", "-p", "a/b"]))

    def test_user_regs(self):
        self.assertEqual(pd.user_regs(
            ["perf", "record", "--user-regs=ip,sp", "--", "prog"]), "ip,sp")
        self.assertEqual(pd.user_regs(
            ["perf", "record", "--user-regs", "ip,sp,bp", "prog"]),
            "ip,sp,bp")
        self.assertIsNone(pd.user_regs(["perf", "record", "--call-graph",
                                        "dwarf", "--", "prog"]))
        # the program's own option, after --
        self.assertIsNone(pd.user_regs(
            ["perf", "record", "--", "prog", "--user-regs=ip"]))

    def test_system_wide(self):
        self.assertTrue(pd.system_wide(
            ["perf", "record", "-e", "sdt_rt:alloc", "-a", "--", "make"]))
        self.assertTrue(pd.system_wide(["perf", "record", "--all-cpus"]))
        self.assertFalse(pd.system_wide(
            ["perf", "record", "-e", "sdt_rt:alloc", "--", "ls", "-a"]))
