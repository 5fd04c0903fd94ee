"""The native scan (allocsites-read --scan, scripts/reader/scan.c) against
the Python one (tests/oracle/perfdata_py.py's scan_python), field by field, sample times and
stack depths included (--times): on every seed of tests/fuzz/seeds/,
every mutant tests/fuzz/mutate.py makes of them (issue 31's hostile
files), and the files test_perfdata and test_scancache build byte by
byte. Where one fails the other must too, with the same corrupt and
in_data flags (reading.py tells header damage from damaged records by
them). No perf, no root: make builds the reader ($BUILD)."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import shutil
import struct
import subprocess
import tempfile
from unittest import mock

from allocsites_lib.read import native, perfdata
import test_perfdata
import test_scancache

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz"))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import perfdata_py  # noqa: E402
import contract  # noqa: E402
import mutate  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))


def reader():
    path = native.built_program("allocsites-read",
                                os.path.join(ROOT, "scripts"), BUILD)
    if path is None:
        subprocess.run(["make", "-C", ROOT, "--no-print-directory",
                        "BUILD=" + BUILD, os.path.join(BUILD,
                                                       "allocsites-read")],
                       check=True, stdout=subprocess.DEVNULL)
        path = native.built_program("allocsites-read",
                                    os.path.join(ROOT, "scripts"), BUILD)
    return path


def sanitized(program):
    """The reader built with AddressSanitizer and UBSan (make all builds
    it; test_reader_hostile.py runs it) when it has --scan, else
    program."""
    asan = os.path.join(BUILD, "fuzz", "allocsites-read-asan")
    if os.path.exists(asan):
        said = subprocess.run([asan, "--scan"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE).stderr
        if b"--scan" in said:
            return asan
    return program


def mmap2(path, build_id, prot=5, nul=True):
    """An MMAP2 record of path (bytes); build_id: its --buildid-mmap
    build-id, or None for maj/min/ino."""
    head = struct.pack("<IIQQQ", 42, 43, 0x5555000, 0x1000, 0)
    if build_id is None:
        ident, misc = struct.pack("<IIQQ", 8, 1, 1234, 0), 0
    else:
        ident = struct.pack("<BBH", len(build_id), 0, 0) + build_id + \
            b"\0" * (20 - len(build_id))
        misc = 1 << 14
    name = path + (b"\0" if nul else b"")
    name += b"\0" * (-len(name) % 8) if nul else b"."  * (-len(name) % 8)
    return test_perfdata.record(10, head + ident +
                                struct.pack("<II", prot, 2) + name, misc)


def with_cmdline(blob, args):
    """blob (a perf.data of test_perfdata.perf_data) with a CMDLINE
    feature section holding args (bytes each)."""
    b = bytearray(blob)
    data_off, data_size = struct.unpack_from("<QQ", b, 40)
    bits = struct.unpack_from("<Q", b, 72)[0]
    table = data_off + data_size
    feats = [f for f in range(64) if bits >> f & 1]
    entries = [list(struct.unpack_from("<QQ", b, table + 16 * i))
               for i in range(len(feats))]
    for e in entries:
        e[0] += 16          # the table grows by one entry
    section = struct.pack("<I", len(args))
    for a in args:
        raw = a + b"\0" * (-len(a) % 8 or 8)
        section += struct.pack("<I", len(raw)) + raw
    entries.append([len(b) + 16, len(section)])
    feats.append(11)
    entries = [e for _, e in sorted(zip(feats, entries))]
    struct.pack_into("<Q", b, 72, bits | 1 << 11)
    rest = b[table + 16 * (len(feats) - 1):]
    return bytes(b[:table]) + b"".join(struct.pack("<QQ", *e)
                                       for e in entries) + bytes(rest) + \
        section


def outcome(fn, path, keep_times):
    """('ok', vars of the Scan) or ('error', corrupt, in_data, message)."""
    try:
        return ("ok", vars(fn(path, keep_times)))
    except perfdata.PerfDataError as e:
        return ("error", e.corrupt, e.in_data, str(e))


def differences(program, path, keeps=(True, False)):
    """What the native scan of path says otherwise than the Python one,
    with the times and without (keeps): [] when they agree."""
    out = []
    for keep in keeps:
        py = outcome(perfdata_py.scan_python, path, keep)
        c = outcome(lambda p, k: perfdata.scan_native(program, p, k), path,
                    keep)
        if py[0] != c[0]:
            out.append("keep_times=%s: python %r, native %r"
                       % (keep, py[:1] + py[1:][-1:], c[:1] + c[1:][-1:]))
        elif py[0] == "error":
            if py[1:3] != c[1:3]:
                out.append("keep_times=%s: python (corrupt, in_data) %r "
                           "(%s), native %r (%s)"
                           % (keep, py[1:3], py[3], c[1:3], c[3]))
        else:
            for field in sorted(set(py[1]) | set(c[1])):
                if py[1].get(field) != c[1].get(field):
                    out.append("keep_times=%s: %s: python %.200r, native "
                               "%.200r" % (keep, field, py[1].get(field),
                                           c[1].get(field)))
    return out


class NativeScanEqualsPython(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.program = reader()
        cls.tmp = tempfile.mkdtemp(prefix="allocsites-scan-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def check_file(self, name, data, keeps=(True, False)):
        path = os.path.join(self.tmp, "x.data")
        with open(path, "wb") as f:
            f.write(data)
        return ["%s: %s" % (name, d)
                for d in differences(self.program, path, keeps)]

    def test_seeds(self):
        for name, data in sorted(mutate.load_seeds().items()):
            with self.subTest(seed=name):
                self.assertEqual(self.check_file(name, data), [])
                # and they are read whole: no seed is an error
                path = os.path.join(mutate.SEEDS, name + ".data")
                s = perfdata.scan_native(self.program, path, True)
                self.assertGreater(s.samples, 0)
                self.assertEqual(len(s.times), sum(s.event_samples.values()))

    def test_mutants(self):
        # fifo=None: no mutant maps a FIFO (a scan opens no mapped file).
        # Under the sanitizers where they are built: a report of theirs
        # is an exit status of 86, which no Python scan matches.
        broken, kinds = [], set()
        program = self.program
        self.program = sanitized(program)
        try:
            with mock.patch.dict(os.environ, contract.SAN_ENV):
                for name, data, _expect in mutate.mutants(
                        mutate.load_seeds()):
                    # with the times: the scan's every path (without,
                    # it only skips the stack points)
                    broken += self.check_file(name, data, (True,))
                    kinds.add(name.split("-")[-1].split("_")[0])
        finally:
            self.program = program
        self.assertEqual(broken, [])
        for c in ("attr", "tracefmt", "raw", "stack", "regs", "mmap",
                  "trunc", "cut", "flip", "zstd"):
            self.assertIn(c, kinds)

    def test_names_paths_and_arguments_of_any_bytes(self):
        # event names, mapped paths and perf's arguments with spaces,
        # backslashes, newlines and bytes that are not UTF-8
        st = test_perfdata.TWO_ST
        events = [("sdt rt:a\\x41\n\u00e9", st, [7], 2),
                  ("?", st, [9], 2), ("x" * 300, st, [11], 2)]
        records = [test_perfdata.sample(t, st, ident=(7, 9, 11, 5)[t % 4])
                   for t in range(1, 60)]
        records += [mmap2(b"/a b\\c\n\xff\xfe.so", bytes(range(20))),
                    mmap2(b"/x\x7f", b""), mmap2(b"", b"\x01" * 3),
                    mmap2(b"/no nul", None, nul=False)]
        args = [b"perf", b"", b"a b", b"\\x41", b"\xff\n", b"\x00x"]
        for every in (None, 300):
            blob = with_cmdline(test_perfdata.perf_data(events, records,
                                                        every), args)
            self.assertEqual(self.check_file("names", blob), [])
        path = os.path.join(self.tmp, "x.data")
        s = perfdata.scan_native(self.program, path, False)
        self.assertEqual(s.cmdline, ["perf", "", "a b", "\\x41", "\ufffd\n",
                                     ""])
        self.assertIn("/a b\\c\n\udcff\udcfe.so", s.code)
        self.assertEqual(s.build_ids[""], {"010101"})
        self.assertEqual(s.event_samples["?"], 30)   # id 9 and unknown 5
        self.assertEqual(s.event_samples["x" * 255], 15)

    def test_without_the_build_there_is_no_scan(self):
        # the Python scan is the tests' oracle, not the product's: without
        # the reader the scan is refused as unsupported (not damaged), and
        # the report falls back to perf report --stats
        path = os.path.join(self.tmp, "x.data")
        with open(path, "wb") as f:
            f.write(test_scancache.recording(50))
        with mock.patch.object(perfdata, "scan_program", return_value=None):
            with self.assertRaises(perfdata.PerfDataError) as got:
                perfdata.scan(path)
            self.assertFalse(got.exception.corrupt)
        self.assertEqual(len(perfdata.scan(path).times), 50)

    def test_scancache_recordings(self):
        for every in (None, 200):
            for n in (1, 300):
                blob = test_scancache.recording(n, compress_every=every)
                self.assertEqual(self.check_file("recording(%d, %s)"
                                                 % (n, every), blob), [])


class PerfDataTestsBothWays(test_perfdata.ScanTest):
    """test_perfdata's files and expectations, each file scanned by both,
    which must agree."""

    program = None

    def scan(self, blob):
        if PerfDataTestsBothWays.program is None:
            PerfDataTestsBothWays.program = reader()
        path = os.path.join(self.tmp, "perf.data")
        with open(path, "wb") as f:
            f.write(blob)
        self.assertEqual(differences(self.program, path), [])
        return perfdata.scan_native(self.program, path, True)


if __name__ == "__main__":
    unittest.main()
