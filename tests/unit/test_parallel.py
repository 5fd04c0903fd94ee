"""The parallel report's pieces without perf: the time split and perf's
--time syntax, the worker tally and progress files, progress lines, and
worker failures turning into read_errors."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import io
import random
import shutil
import tempfile

from allocsites_lib.cli import parsers, options
from allocsites_lib.read import (progress, time_ranges, worker_files,
                                 worker_sizing, workers)
from allocsites_lib.analyze import assemble
from allocsites_lib.cli.options import UsageError
from allocsites_lib.read.tally import ExactEntry, Tally
from allocsites_lib.read.parse import Event
from fixtures import raw

STACK = (raw(0x10, "rt_alloc"), raw(0x20, "main"))


def skipped(start, end, t):
    """perf 6.1's perf_time__skip_sample for one --time range (start or
    end 0: unbounded; both ends inclusive)."""
    return bool((start and t < start) or (end and t > end))


def perf_range(option):
    """--time 'S,E' back to perf's ns bounds (parse_nsec_time)."""
    def ns(text):
        if not text:
            return 0
        sec, _, frac = text.partition(".")
        return int(sec) * 10 ** 9 + int((frac + "000000000")[:9])
    start, end = option.split(",")
    return ns(start), ns(end)


class SplitTest(unittest.TestCase):

    def check_partition(self, times, k, read_us=0.0, work=None):
        ranges = time_ranges.split(times, k, read_us, work)
        self.assertLessEqual(len(ranges), max(1, k))
        self.assertIsNone(ranges[0][0])
        self.assertIsNone(ranges[-1][1])
        for (_, end), (start, _) in zip(ranges, ranges[1:]):
            self.assertEqual(end + 1, start)
        # Every sample in exactly one range, as perf filters them.
        windows = [time_ranges.time_option(s, e) for s, e in ranges]
        for t in times:
            hits = [w for w in windows
                    if w is None or not skipped(*perf_range(w), t)]
            self.assertEqual(len(hits), 1, (t, windows))
        return ranges

    def test_halves_have_equal_samples(self):
        times = list(range(1000, 2000))
        ranges = self.check_partition(times, 2)
        self.assertEqual([time_ranges.samples_in(times, s, e)[1]
                          for s, e in ranges], [500, 500])

    def test_uneven_times_split_by_count(self):
        rnd = random.Random(7)
        times = sorted(rnd.randrange(10 ** 9, 10 ** 12) for _ in range(5000))
        for k in (2, 3, 4, 7):
            with self.subTest(k=k):
                ranges = self.check_partition(times, k)
                counts = [time_ranges.samples_in(times, s, e)[1]
                          for s, e in ranges]
                self.assertEqual(sum(counts), len(times))
                self.assertLessEqual(max(counts) - min(counts), 5)

    def test_equal_times_are_never_cut(self):
        # Records perf wrote twice share their nanosecond: one worker must
        # see both, or the duplicate filter misses them.
        times = [5] * 10 + [6] * 10 + [7] * 3
        ranges = self.check_partition(times, 4)
        for s, e in ranges:
            first, count = time_ranges.samples_in(times, s, e)
            inside = times[first:first + count]
            self.assertTrue(all(t not in times[:first] for t in inside))

    def test_one_worker_or_no_samples_is_the_whole_file(self):
        self.assertEqual(time_ranges.split([1, 2, 3], 1), [(None, None)])
        self.assertEqual(time_ranges.split([], 4), [(None, None)])
        self.assertEqual(time_ranges.split([9] * 100, 4), [(None, None)])
        # perf_time__skip_sample keeps time 0 in every range.
        self.assertEqual(time_ranges.split([0] + list(range(5, 500)), 4),
                         [(None, None)])
        self.assertIsNone(time_ranges.time_option(None, None))

    def test_more_workers_than_samples(self):
        self.check_partition([1, 2, 3], 8)

    def test_early_ranges_get_more_samples_when_reading_costs(self):
        # A worker stops reading after its range, the last reads it all.
        times = list(range(10 ** 6, 10 ** 6 + 10000))
        for k in (2, 3, 4):
            for cost in (0.0, 0.59, 3.0):
                with self.subTest(k=k, read_cost=cost):
                    ranges = self.check_partition(times, k, cost)
                    self.assertEqual(len(ranges), k)
                    shares = [time_ranges.samples_in(times, s, e)[1] / 10000
                              for s, e in ranges]
                    ends = [sum(shares[:i + 1]) for i in range(k)]
                    costs = [cost * (ends[i] if i < k - 1 else 1) + shares[i]
                             for i in range(k)]
                    for c in costs:
                        self.assertAlmostEqual(c, costs[0], delta=0.002)
                    if cost:
                        self.assertEqual(shares, sorted(shares, reverse=True))

    def test_two_workers_closed_form(self):
        # Reading at f per sample, processing at 1: (f + 1) e = f + 1 - e,
        # so the first worker's share is e = (f + 1) / (f + 2).
        times = list(range(1, 100001))
        first = time_ranges.split(times, 2, 0.875)[0]
        share = time_ranges.samples_in(times, *first)[1] / 1e5
        self.assertAlmostEqual(share, 1.875 / 2.875, places=3)

    def test_costly_samples_get_fewer_per_worker(self):
        # Samples of the second half cost 3 (deeper stacks), no read cost:
        # half the cost (1 of 2) is at 0.5 + 0.5/3 of the samples.
        times = list(range(1, 60001))
        work = [(t, 1.0 if t <= 30000 else 3.0) for t in times[::10]]
        ranges = self.check_partition(times, 2, 0.0, work)
        share = time_ranges.samples_in(times, *ranges[0])[1] / 6e4
        self.assertAlmostEqual(share, 0.5 + 0.5 / 3, places=2)

    def test_costs_from_a_scan(self):
        class Scan:
            times = list(range(100))
            compressed = True
            decompressed = 100 * 8500
            data_size = 0
            depths = [(0, 96), (50, 570)]
        read_us, work = time_ranges.costs(Scan)
        self.assertAlmostEqual(read_us,
                               8500 * time_ranges.READ_US_PER_BYTE[True])
        a, b = time_ranges.SAMPLE_US, time_ranges.STACK_US_PER_BYTE
        self.assertEqual(work, [(0, a + b * 96), (50, a + b * 570)])
        Scan.depths = []   # no stack depths: every sample costs 1
        read_us, work = time_ranges.costs(Scan)
        self.assertIsNone(work)
        self.assertAlmostEqual(read_us, 8500 * time_ranges.READ_US_PER_BYTE[
            True] / time_ranges.MEAN_SAMPLE_US)

    def test_time_option_format(self):
        self.assertEqual(time_ranges.time_option(None, 655613035122),
                         ",655.613035122")
        self.assertEqual(time_ranges.time_option(655613035123, None),
                         "655.613035123,")
        self.assertEqual(time_ranges.time_option(1000000007, 2000000000),
                         "1.000000007,2.000000000")

    def test_worker_count(self):
        wc = worker_sizing.worker_count
        self.assertEqual(wc(2, 213431, 0, None), 2)
        self.assertEqual(wc(8, 50000, 0, None), 2)     # few samples
        self.assertEqual(wc(4, 100, 0, None), 1)
        self.assertEqual(wc(0, 10 ** 6, 0, None), 1)
        gib = 1 << 30
        self.assertEqual(wc(16, 10 ** 7, 2 * gib, 5 * gib), 2)  # memory
        self.assertEqual(wc(16, 10 ** 7, 2 * gib, gib), 1)
        # CPUs other processes keep busy are not counted.
        self.assertEqual(wc(2, 213431, 0, None, free=0.9), 1)
        self.assertEqual(wc(2, 213431, 0, None, free=1.6), 2)
        self.assertEqual(wc(8, 10 ** 7, 0, None, free=0.0), 1)

    def test_free_cpus(self):
        # (machine busy s, this process busy s, time)
        free_cpus = worker_sizing.free_cpus
        self.assertAlmostEqual(free_cpus((10, 1, 0), (11.1, 1.5, 1), 2), 1.4)
        self.assertEqual(free_cpus((10, 1, 0), (16, 1, 1), 2), 0.0)
        self.assertIsNone(free_cpus((10, 1, 0), (10, 1, 0.01), 2))
        self.assertIsNone(free_cpus(None, (10, 1, 1), 2))
        self.assertEqual(len(worker_sizing.cpu_use()), 3)


class WorkerCommandTest(unittest.TestCase):

    def test_command(self):
        w = workers.Worker(0, 2, None, 655877054733, "/tmp/d")
        w.stop_after = 131020
        self.assertEqual(
            w.command("perf", "x.data", "/a/allocsites.py", ["--top", "5"],
                      "/tmp/d/pids"),
            ["perf", "script", "-i", "x.data", "--no-inline", "--max-stack",
             "8192", "--time", ",655.877054733", "-s", "/a/allocsites.py", "--",
             "--worker-out", "/tmp/d/tally.0", "--worker-progress",
             "/tmp/d/progress.0", "--worker-pids", "/tmp/d/pids",
             "--worker-samples", "131020", "--top", "5"])
        last = workers.Worker(1, 2, 655877054734, None, "/tmp/d")
        self.assertEqual(last.command("perf", "x.data", "/a/s.py", []),
                         ["perf", "script", "-i", "x.data", "--no-inline",
                          "--max-stack", "8192", "--time", "655.877054734,",
                          "-s", "/a/s.py", "--",
                          "--worker-out", "/tmp/d/tally.1",
                          "--worker-progress", "/tmp/d/progress.1"])
        whole = workers.Worker(0, 1, None, None, "/tmp/d")
        self.assertNotIn("--time", whole.command("perf", "x", "s", []))

    def test_worker_options_are_hidden_report_options(self):
        opts = options.parse(["--worker-out", "t", "--worker-samples", "7",
                              "--worker-pids", "p", "--worker-progress", "q"])
        self.assertEqual((opts.worker_out, opts.worker_samples,
                          opts.worker_pids, opts.worker_progress),
                         ("t", 7, "p", "q"))
        self.assertNotIn("worker", options.parser().format_help())


class TallyFileTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_round_trip(self):
        t = Tally(8)
        t.add(Event("alloc", 1, 1, 64, 3, None, STACK, 0x10, 100))
        t.add(Event("alloc", 1, 1, 64, 3, None, STACK, 0x10, 100))
        t.add(None)
        path = os.path.join(self.tmp, "tally.0")
        worker_files.write_tally(path, t, 2, True)
        self.assertEqual(os.listdir(self.tmp), ["tally.0"])
        back, errors, inlines = worker_files.read_tally(path)
        self.assertEqual(dict(back.stacks), {(STACK, 3): ExactEntry(1, 64)})
        self.assertEqual((back.duplicates, back.malformed, back.min_size),
                         (1, 1, 8))
        self.assertEqual((errors, inlines), (2, True))

    def test_garbage_and_other_versions_refused(self):
        path = os.path.join(self.tmp, "tally.0")
        with open(path, "wb") as f:
            f.write(b"not a pickle")
        with self.assertRaises(ValueError):
            worker_files.read_tally(path)
        worker_files.write_tally(path, Tally(), 0, False)
        worker_files.TALLY_VERSION += 1
        try:
            with self.assertRaises(ValueError):
                worker_files.read_tally(path)
        finally:
            worker_files.TALLY_VERSION -= 1

    def test_progress_file(self):
        path = os.path.join(self.tmp, "progress.0")
        self.assertIsNone(worker_files.read_progress(path))
        w = worker_files.ProgressWriter(path)
        self.assertIsNone(worker_files.read_progress(path))
        w.write(655613035122)
        self.assertEqual(worker_files.read_progress(path), 655613035122)
        w.write(7)
        self.assertEqual(worker_files.read_progress(path), 7)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class ProgressTest(unittest.TestCase):

    def test_text(self):
        self.assertEqual(progress.progress_text(96000, 213431),
                         "allocsites: report 44% (96000 of 213431 samples)")
        self.assertEqual(progress.progress_text(0, 10),
                         "allocsites: report 0% (0 of 10 samples)")
        self.assertEqual(progress.progress_text(12, 10),
                         "allocsites: report 100% (10 of 10 samples)")
        self.assertEqual(progress.progress_text(0, 0),
                         "allocsites: report running")

    def test_in_place_rate_limited_and_cleared(self):
        out, clock = io.StringIO(), FakeClock()
        p = progress.Progress(out, interval=0.25, clock=clock, enabled=True)
        p.show("allocsites: report 10% (1 of 10 samples)")
        clock.now = 0.1
        p.show("allocsites: report 20% (2 of 10 samples)")   # too soon
        clock.now = 0.3
        p.show("allocsites: report 9%")
        clock.now = 0.9
        p.show("allocsites: report 9%")   # unchanged: not written again
        p.clear()
        first = "allocsites: report 10% (1 of 10 samples)"
        second = "allocsites: report 9%"
        self.assertEqual(out.getvalue(),
                         "\r" + first +
                         "\r" + second + " " * (len(first) - len(second)) +
                         "\r" + " " * len(second) + "\r")
        p.clear()   # nothing shown since: nothing to erase
        self.assertTrue(out.getvalue().endswith(" \r"))

    def test_silent_when_not_a_terminal(self):
        out = io.StringIO()   # isatty() is False
        p = progress.Progress(out, clock=FakeClock())
        p.show("allocsites: report 10%")
        p.clear()
        self.assertEqual(out.getvalue(), "")


class FakeProc:
    def __init__(self, returncode):
        self.returncode = returncode


class CollectTest(unittest.TestCase):
    """Worker outcomes -> merged tally and read_errors."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def worker(self, i, n, status, stderr="", tally=True, start=None,
               end=None):
        w = workers.Worker(i, n, start, end, self.tmp)
        w.proc = FakeProc(status)
        with open(w.stderr_path, "w") as f:
            f.write(stderr)
        if tally:
            t = Tally()
            t.add(Event("alloc", 1, 1, 10 * (i + 1), 0, None, STACK, 0, i))
            worker_files.write_tally(w.tally_path, t, i, False)
        return w

    def test_all_well(self):
        ws = [self.worker(0, 2, 0, end=99), self.worker(1, 2, 0, start=100)]
        r = workers.collect(ws, Tally)
        self.assertEqual(r.read_errors, [])
        self.assertEqual(r.tallies, 2)
        self.assertEqual(dict(r.tally.stacks), {(STACK, 0): ExactEntry(2, 30)})
        self.assertEqual(r.handler_errors, 1)

    def test_failed_worker_with_tally(self):
        ws = [self.worker(0, 2, 0, end=655613035122),
              self.worker(1, 2, 255, start=655613035123, stderr=(
                  "failed to decompress (B): 65527 -> 67112960\n"
                  "Couldn't decompress data\n"
                  "0x44109e [0xffff]: failed to process type: 81\n"))]
        r = workers.collect(ws, Tally)
        self.assertEqual(r.tallies, 2)
        self.assertEqual(r.read_errors[0],
                         "perf script worker 2 of 2 (samples from "
                         "655.613035 to the end) exited with status 255")
        self.assertEqual(len(r.read_errors), 4)
        self.assertTrue(r.read_errors[3].endswith(
            "perf: 0x44109e [0xffff]: failed to process type: 81"))

    def test_killed_worker_without_tally(self):
        ws = [self.worker(0, 2, -9, tally=False, end=99),
              self.worker(1, 2, 0, start=100)]
        r = workers.collect(ws, Tally)
        self.assertEqual(r.tallies, 1)
        self.assertEqual(r.read_errors, [
            "perf script worker 1 of 2 (samples from the start to "
            "0.000000) was killed by signal 9",
            "perf script worker 1 of 2 (samples from the start to "
            "0.000000) wrote no tally: its samples are missing"])

    def test_exit_0_without_tally(self):
        r = workers.collect([self.worker(0, 1, 0, tally=False)], Tally)
        self.assertEqual(r.tallies, 0)
        self.assertEqual(r.read_errors, [
            "perf script wrote no tally: its samples are missing"])

    def test_error_lines_with_exit_0(self):
        r = workers.collect([self.worker(0, 1, 0, stderr=(
            "problem processing 9 event, skipping it.\n"))], Tally)
        self.assertEqual(r.read_errors, [
            "perf script reported errors",
            "perf script: perf: problem processing 9 event, skipping it."])

    def test_other_lines_pass_through_once(self):
        warning = "Warning:\nProcessed 100 events and lost 1 chunks!\n"
        r = workers.collect([self.worker(0, 2, 0, stderr=warning),
                              self.worker(1, 2, 0, stderr=warning)], Tally)
        self.assertEqual(r.read_errors, [])
        self.assertEqual(r.passthrough, [
            "Warning:", "Processed 100 events and lost 1 chunks!"])

    def test_error_lines_capped(self):
        lines = "".join("failed to process type: %d\n" % i for i in range(9))
        r = workers.collect([self.worker(0, 1, 1, stderr=lines)], Tally)
        self.assertEqual(len(r.read_errors), 1 + workers.MAX_ERROR_LINES + 1)
        self.assertEqual(r.read_errors[-1],
                         "perf script: perf: (4 more lines)")


class ReadErrorsInReportTest(unittest.TestCase):

    def test_each_becomes_a_warning(self):
        from test_pipeline import make_tally, symbolizer
        opts = options.parse([])
        report = assemble.build(
            make_tally(), opts, symbolizer(), 0, None,
            read_errors=["perf script worker 2 of 2 exited with status 255"])
        self.assertIn("not read: perf script worker 2 of 2 exited with "
                      "status 255", report.warnings)
        clean = assemble.build(make_tally(), opts, symbolizer(), 0,
                               None)
        self.assertEqual(len(report.warnings), len(clean.warnings) + 1)


class ReportRefusesWorkerOptionsTest(unittest.TestCase):

    def test_refused(self):
        for flag in ("--worker-out", "--worker-pids", "--worker-progress",
                     "--worker-samples"):
            with self.subTest(flag=flag):
                with self.assertRaisesRegex(UsageError, flag):
                    parsers.parse(["report", flag, "t"])


class JobsOptionTest(unittest.TestCase):

    def test_forms(self):
        for argv, jobs in ((["report", "-j", "3", "--top", "5"], 3),
                           (["report", "--jobs=2"], 2),
                           (["report", "--json", "x"], None),
                           (["-j", "4", "--", "prog"], 4)):
            with self.subTest(argv=argv):
                self.assertEqual(parsers.parse(argv).jobs, jobs)
        for bad in (["-j"], ["-j", "0"], ["--jobs=x"]):
            with self.subTest(bad=bad):
                with self.assertRaises(UsageError):
                    parsers.parse(["report"] + bad)


if __name__ == "__main__":
    unittest.main()
