"""The native reader on hostile recordings (issue 31): every structured
mutant of tests/fuzz/mutate.py, made again from the committed seeds
(tests/fuzz/seeds/), and every reproducer AFL++ found
(tests/fuzz/crashes/), read by the reader built with AddressSanitizer
and UndefinedBehaviorSanitizer (make all builds it: build/fuzz/).

The contract: exit 0 or 1, never a signal, never a hang (10 s each),
at most 1 GB of memory (contract.py),
never a sanitizer's report; at most two lines on stderr, each
'allocsites-read: ...'; and where a sample's fields lie past its data,
stderr says records were left out (never exit 0 with a field read as
0). No perf, no root: the recordings are files."""

import concurrent.futures
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
FUZZ = os.path.join(ROOT, "tests", "fuzz")
CRASHES = os.path.join(FUZZ, "crashes")
READER_ASAN = os.path.join(BUILD, "fuzz", "allocsites-read-asan")

sys.path.insert(0, FUZZ)
import contract  # noqa: E402
import mutate  # noqa: E402


def run_all(files):
    """files: [(name, path, expect)] -> ['name: what broke']."""
    workers = max(2, os.cpu_count() or 2)

    def one(item):
        name, path, expect = item
        rc, err, rss = contract.read(READER_ASAN, path)
        why = contract.broken(rc, err, expect, rss=rss)
        return "%s: %s" % (name, why) if why else None
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return [r for r in ex.map(one, files) if r]


class HostileRecordings(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(READER_ASAN):
            subprocess.run(["make", "-C", ROOT, "--no-print-directory",
                            "BUILD=" + BUILD, READER_ASAN], check=True,
                           stdout=subprocess.DEVNULL)
        cls.tmp = tempfile.TemporaryDirectory(prefix="allocsites-hostile-")
        # a FIFO a mapping names: opened blocking, the reader would wait
        # for a writer forever
        cls.fifo = os.path.join(cls.tmp.name, "fifo")
        os.mkfifo(cls.fifo)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name + ".data")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_seeds_read_cleanly(self):
        for name, data in mutate.load_seeds().items():
            rc, err, _ = contract.read(
                READER_ASAN, os.path.join(mutate.SEEDS, name + ".data"))
            self.assertEqual((rc, err), (0, ""), name)

    def test_mutants_keep_the_contract(self):
        ms = mutate.mutants(mutate.load_seeds(), fifo=self.fifo)
        classes = {n.split("-")[-1].split("_")[0] for n, _, _ in ms}
        # every class issue 31 lists is made (a seed that changed shape
        # would silently make fewer)
        for c in ("attr", "tracefmt", "raw", "stack", "regs", "mmap",
                  "short", "size", "no", "trunc", "cut", "flip", "pipe"):
            self.assertIn(c, classes)
        names = {n for n, _, _ in ms}
        for n in ("basic-mmap_fifo", "basic-mmap_many_8000",
                  "basic-z-stack_size_max", "basic-tracefmt_offset_minus1",
                  "basic-raw_empty", "basic-attr_table_size0",
                  "basic-no_finished_round", "basic-short_fork_12",
                  "basic-zstd_bomb_1500", "basic-fork_bomb_8000_20000",
                  "basic-attr_ids_many_100000",
                  "basic-tracefmt_many_100000"):
            self.assertIn(n, names)
        files = [(n, self.write(n, b), e) for n, b, e in ms]
        self.assertEqual(run_all(files), [])

    def assertReadsAs(self, name, path, other):
        """other, another form of the recording at path, gives the same
        samples, frames and scan, but for the data section's size."""
        reader = os.path.join(BUILD, "allocsites-read")
        for args in (["--text"], ["--scan"]):
            want, got = (subprocess.run(
                [reader] + args + [p], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, universal_newlines=True)
                for p in (path, other))
            self.assertEqual((got.returncode, got.stderr), (0, ""), name)
            drop = ("data_size ",)
            self.assertEqual(
                [l for l in got.stdout.splitlines()
                 if not l.startswith(drop)],
                [l for l in want.stdout.splitlines()
                 if not l.startswith(drop)], "%s %s" % (name, args))

    def test_pipe_mode_reads_as_the_file(self):
        # each seed as perf record -o - writes it
        for name, data in mutate.load_seeds().items():
            self.assertReadsAs(name, os.path.join(mutate.SEEDS,
                                                  name + ".data"),
                               self.write(name + "-as-pipe", mutate.PerfData(
                                   data).build_pipe()))

    def test_compressed2_reads_as_compressed(self):
        # perf 6.15 and later write COMPRESSED2 records with -z (u64
        # data_size, the zstd bytes, padding)
        seeds = mutate.load_seeds()
        zs = [n for n in seeds if n.endswith("-z")]
        self.assertTrue(zs)
        for name in zs:
            self.assertReadsAs(name, os.path.join(mutate.SEEDS,
                                                  name + ".data"),
                               self.write(name + "-as-2", mutate.as_compressed2(
                                   mutate.PerfData(seeds[name]))))

    def test_another_machines_recording_is_refused(self):
        # HEADER_ARCH (feature 6) names the machine; a recording of
        # another's registers would be unwound as x86-64's, silently wrong
        reader = os.path.join(BUILD, "allocsites-read")
        data = mutate.load_seeds()["basic"]
        arch = mutate.PerfData(data).features[6]
        self.assertEqual(arch[4:arch.index(b"\0", 4)], b"x86_64")

        def read(feature, pipe=False):
            pd = mutate.PerfData(data)
            if feature is None:
                del pd.features[6]
            else:
                pd.features[6] = struct.pack("<I", len(feature)) + feature
            path = self.write("arch", pd.build_pipe() if pipe
                              else pd.build())
            return subprocess.run([reader, "--text", path],
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE,
                                  universal_newlines=True)
        for pipe in (False, True):
            for feature, says in (
                    (b"aarch64".ljust(64, b"\0"), "recorded on aarch64: "),
                    (b"riscv64\0", "recorded on riscv64: "),
                    (b"\x01\xfe\0", "recorded on another architecture: "),
                    (b"x86_64".ljust(64, b"\0"), None),
                    (b"", None),
                    (None, None)):
                with self.subTest(feature=feature, pipe=pipe):
                    got = read(feature, pipe)
                    if says is None:
                        self.assertEqual((got.returncode, got.stderr),
                                         (0, ""))
                    else:
                        self.assertEqual(got.returncode, 1)
                        self.assertEqual(got.stderr.count("\n"), 1)
                        self.assertIn(says, got.stderr)
                        self.assertIn("reads x86-64 recordings",
                                      got.stderr)

    def test_crash_reproducers(self):
        if not os.path.isdir(CRASHES):
            self.skipTest("no reproducers kept yet (tests/fuzz/crashes/)")
        files = [(f, os.path.join(CRASHES, f), None)
                 for f in sorted(os.listdir(CRASHES)) if f.endswith(".data")]
        self.assertEqual(run_all(files), [])

    def test_the_contract_checker_catches(self):
        # the checker itself, on what a broken reader does
        broken = contract.broken
        self.assertIsNotNone(broken(-11, ""))
        self.assertIsNotNone(broken("hang", ""))
        self.assertIsNotNone(broken(86, "==1==ERROR: AddressSanitizer"))
        self.assertIsNotNone(broken(0, "x.c:1:2: runtime error: load"))
        self.assertIsNotNone(broken(0, "", "left_out"))
        self.assertIsNotNone(broken(0, "", rss=3000))
        self.assertIsNone(broken(0, "allocsites-read: f: 3 damaged records "
                                 "left out (the first at offset 8: x)",
                                 "left_out"))
        self.assertIsNone(broken(1, "allocsites-read: f: file is truncated"))


if __name__ == "__main__":
    unittest.main()
