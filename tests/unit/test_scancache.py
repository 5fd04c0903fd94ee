"""scancache.py on perf.data files built by test_perfdata's helpers: the
kept scan equals a fresh one, and is ignored for any other bytes."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import shutil
import tempfile
import time
from unittest import mock

from allocsites_lib.read import perfdata, scancache
from test_perfdata import ONE, TWO, lost, lost_samples, perf_data, record, sample, sample_id

ST = ONE[0][1]


def recording(n=300, compress_every=200):
    times = [1000 + 37 * ((i * 7919) % n) for i in range(n)]
    records = [record(3, b"minicc\0\0" + sample_id(ST, 0, 0))]
    records += [sample(t, payload=40 + i % 300) for i, t in enumerate(times)]
    records += [lost(5, ST, 51), lost_samples(12, ST, 52)]
    return perf_data(ONE, records, compress_every)


class ScanCacheTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.data = os.path.join(self.tmp, "perf.data")

    def write(self, blob):
        with open(self.data, "wb") as f:
            f.write(blob)

    def test_kept_scan_equals_a_fresh_one(self):
        for every in (None, 200):
            with self.subTest(compress_every=every):
                self.write(recording(compress_every=every))
                fresh = perfdata.scan(self.data)
                scancache.save(self.data, fresh)
                with mock.patch.object(perfdata, "scan",
                                       side_effect=AssertionError("rescanned")):
                    kept = scancache.scan(self.data)
                self.assertEqual(vars(kept), vars(fresh))

    def test_other_bytes_are_scanned_again(self):
        self.write(recording(300))
        scancache.save(self.data, perfdata.scan(self.data))
        self.write(recording(301))   # another recording at the same path
        self.assertIsNone(scancache.load(self.data))
        self.assertEqual(len(scancache.scan(self.data).times), 301)

    def test_damage_after_saving_is_not_hidden(self):
        # saved as soon as written, the stat is not settled: the digest
        # decides, though the edit may fall in the same clock tick
        blob = recording(300)
        self.write(blob)
        scancache.save(self.data, perfdata.scan(self.data))
        damaged = bytearray(blob)
        damaged[len(blob) // 2] ^= 0xff   # same size, one byte changed
        self.write(bytes(damaged))
        self.assertIsNone(scancache.load(self.data))

    def later(self, seconds):
        """time.time_ns as it will be in seconds."""
        now = time.time_ns() + seconds * 10 ** 9
        return mock.patch.object(scancache.time, "time_ns", return_value=now)

    def no_hashing(self):
        return mock.patch.object(scancache, "digest",
                                 side_effect=AssertionError("hashed"))

    def test_a_settled_recording_is_not_hashed_again(self):
        self.write(recording())
        fresh = perfdata.scan(self.data)
        with self.later(10):   # the file last changed 10 s before
            scancache.save(self.data, fresh)
        with self.no_hashing():
            self.assertEqual(vars(scancache.load(self.data)), vars(fresh))
            self.assertEqual(vars(scancache.load(self.data, False)),
                             vars(perfdata.scan(self.data, False)))

    def test_hashed_while_not_settled_then_kept_settled(self):
        self.write(recording())
        fresh = perfdata.scan(self.data)
        scancache.save(self.data, fresh)   # just written: not settled
        with mock.patch.object(scancache, "digest",
                               wraps=scancache.digest) as hashed:
            self.assertEqual(vars(scancache.load(self.data)), vars(fresh))
            self.assertEqual(hashed.call_count, 1)
            with self.later(10):   # settled by now: the stat is kept
                self.assertEqual(vars(scancache.load(self.data)),
                                 vars(fresh))
            self.assertEqual(hashed.call_count, 2)
        with self.no_hashing():
            self.assertEqual(vars(scancache.load(self.data)), vars(fresh))

    def test_a_change_to_a_settled_recording_is_seen(self):
        blob = recording(300)
        self.write(blob)
        with self.later(10):
            scancache.save(self.data, perfdata.scan(self.data))
        damaged = bytearray(blob)
        damaged[len(blob) // 2] ^= 0xff   # same size, one byte changed
        self.write(bytes(damaged))
        # the write moved mtime and ctime (the kernel's clock ticks in
        # ms, and this test may fall in the same tick: mtime set apart)
        st = os.stat(self.data)
        os.utime(self.data, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        self.assertIsNone(scancache.load(self.data))

    def test_a_touched_recording_is_hashed(self):
        self.write(recording())
        fresh = perfdata.scan(self.data)
        with self.later(10):
            scancache.save(self.data, fresh)
        st = os.stat(self.data)
        os.utime(self.data, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        with mock.patch.object(scancache, "digest",
                               wraps=scancache.digest) as hashed:
            self.assertEqual(vars(scancache.load(self.data)), vars(fresh))
            self.assertEqual(hashed.call_count, 1)

    def test_a_bad_sidecar_is_ignored(self):
        self.write(recording())
        fresh = perfdata.scan(self.data)
        scancache.save(self.data, fresh)
        with open(scancache.path_for(self.data), "rb") as f:
            good = f.read()
        for bad in (b"", b"garbage\n", good[:len(good) - 8],
                    scancache.MAGIC + b"{not json\n",
                    good.replace(b'"samples":300', b'"samples":"x"')):
            with self.subTest(bad=bad[:40]):
                with open(scancache.path_for(self.data), "wb") as f:
                    f.write(bad)
                self.assertIsNone(scancache.load(self.data))
                self.assertEqual(vars(scancache.scan(self.data)), vars(fresh))

    def test_unwritable_place_is_no_error(self):
        self.write(recording())
        os.mkdir(scancache.path_for(self.data))   # cannot be replaced
        scancache.save(self.data, perfdata.scan(self.data))
        self.assertEqual(os.listdir(self.tmp), ["perf.data", "perf.data.scan"])
        self.assertIsNone(scancache.load(self.data))

    def test_two_events_and_their_names(self):
        st = TWO[0][1]
        records = [sample(10 + i, st, ident=7 if i % 3 else 9)
                   for i in range(30)]
        self.write(perf_data(TWO, records, 100))
        fresh = perfdata.scan(self.data)
        scancache.save(self.data, fresh)
        self.assertEqual(vars(scancache.load(self.data)), vars(fresh))


if __name__ == "__main__":
    unittest.main()
