import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import stat
import subprocess
import tempfile

from allocsites_lib.read import perfrun

STATS = """\
Aggregated stats:
           TOTAL events:      86014
            LOST events:      13126  (15.3%)
          SAMPLE events:      42170  (49.0%)
    LOST_SAMPLES events:          1  ( 0.0%)
sdt_rt:alloc stats:
          SAMPLE events:      42170
    LOST_SAMPLES events:     157844
"""

# Two binaries carrying the probe, frees, and an unrelated event.
STATS_MANY = """\
Aggregated stats:
           TOTAL events:     200000
            MMAP events:         12  ( 0.0%)
            LOST events:          7  ( 0.0%)
            LOST events:          3  ( 0.0%)
          SAMPLE events:     150000  (75.0%)
sdt_rt:alloc stats:
          SAMPLE events:     100000
    LOST_SAMPLES events:        100
sdt_rt:free stats:
          SAMPLE events:      40000
    LOST_SAMPLES events:         20
sdt_rt:alloc_1 stats:
          SAMPLE events:       5000
    LOST_SAMPLES events:          3
cycles:u stats:
          SAMPLE events:       5000
    LOST_SAMPLES events:       9999
            LOST events:        500
"""

CLEAN = """\
Aggregated stats:
           TOTAL events:       2048
          SAMPLE events:       2000  (97.7%)
sdt_rt:alloc stats:
          SAMPLE events:       2000
"""


class ParseStatsTest(unittest.TestCase):
    def test_example(self):
        self.assertEqual(perfrun.parse_stats(STATS), (157844, 13126))

    def test_sums_rt_events_only(self):
        self.assertEqual(perfrun.parse_stats(STATS_MANY), (123, 10))

    def test_other_prefix(self):
        self.assertEqual(perfrun.parse_stats(STATS_MANY, "cycles"), (9999, 10))

    def test_clean(self):
        self.assertEqual(perfrun.parse_stats(CLEAN), (0, 0))

    def test_empty_and_garbage(self):
        self.assertEqual(perfrun.parse_stats(""), (0, 0))
        self.assertEqual(perfrun.parse_stats("perf: command not found\n"), (0, 0))

    def test_records_before_any_section(self):
        self.assertEqual(perfrun.parse_stats("  LOST events:   5\n"), (0, 5))


class EventSamplesTest(unittest.TestCase):
    def test_example(self):
        self.assertEqual(perfrun.event_samples(STATS), {"sdt_rt:alloc": 42170})

    def test_many(self):
        self.assertEqual(perfrun.event_samples(STATS_MANY), {
            "sdt_rt:alloc": 100000, "sdt_rt:free": 40000,
            "sdt_rt:alloc_1": 5000, "cycles:u": 5000})

    def test_samples_outside_sections_ignored(self):
        self.assertEqual(perfrun.event_samples("  SAMPLE events: 5\n"), {})
        self.assertEqual(perfrun.event_samples(""), {})


class InputPathTest(unittest.TestCase):
    def path(self, *args):
        return perfrun.input_path(["perf", "script"] + list(args))

    def test_default(self):
        self.assertEqual(self.path("--no-inline", "-s", "scripts/allocsites.py"), "perf.data")

    def test_dash_i(self):
        self.assertEqual(self.path("-i", "run.data", "-s", "x.py"), "run.data")

    def test_dash_i_attached(self):
        self.assertEqual(self.path("-irun.data", "-s", "x.py"), "run.data")

    def test_long_forms(self):
        self.assertEqual(self.path("--input", "a.data"), "a.data")
        self.assertEqual(self.path("--input=b.data"), "b.data")

    def test_pipe(self):
        self.assertEqual(self.path("-i", "-", "-s", "x.py"), "-")

    def test_last_wins(self):
        self.assertEqual(self.path("-i", "a", "--input=b", "-i", "c"), "c")

    def test_script_options_after_double_dash_ignored(self):
        self.assertEqual(self.path("-s", "x.py", "--", "-i", "nope", "--input=no"), "perf.data")
        self.assertEqual(self.path("-i", "yes", "-s", "x.py", "--", "-i", "no"), "yes")

    def test_dash_i_without_value(self):
        self.assertEqual(self.path("-s", "x.py", "-i"), "perf.data")

    def test_other_options_not_taken_for_input(self):
        self.assertEqual(self.path("--itrace=i", "-F", "ip", "-s", "x.py"), "perf.data")

    def test_path_with_spaces(self):
        self.assertEqual(self.path("-i", "/tmp/my run/perf.data"), "/tmp/my run/perf.data")

    def test_argv0_only_or_empty(self):
        self.assertEqual(perfrun.input_path(["perf"]), "perf.data")
        self.assertEqual(perfrun.input_path([]), "perf.data")


class InlineExpansionTest(unittest.TestCase):
    def test_no_inline_given(self):
        self.assertFalse(perfrun.inline_expansion(
            ["perf", "script", "--no-inline", "-s", "x.py"]))
        self.assertFalse(perfrun.inline_expansion(
            ["perf", "script", "--no-inline", "-s", "x.py", "--", "--json", "a"]))

    def test_default_is_on(self):
        self.assertTrue(perfrun.inline_expansion(["perf", "script", "-s", "x.py"]))

    def test_after_double_dash_not_perfs(self):
        self.assertTrue(perfrun.inline_expansion(
            ["perf", "script", "-s", "x.py", "--", "--no-inline"]))

    def test_argv0_not_an_option(self):
        self.assertTrue(perfrun.inline_expansion(["--no-inline"]))
        self.assertTrue(perfrun.inline_expansion([]))


class PerfArgvTest(unittest.TestCase):
    def test_reads_other_process(self):
        # The child says "ready" once it runs: by then its argv is final
        # (right after fork, /proc/PID/cmdline may still be empty).
        code = "import sys; print('ready', flush=True); sys.stdin.read()"
        argv = ["/usr/bin/python3", "-c", code, "two words", "\u00e9"]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self.assertEqual(proc.stdout.readline(), b"ready\n")
            self.assertEqual(perfrun.perf_argv(proc.pid), argv)
        finally:
            proc.stdin.close()
            proc.stdout.close()
            proc.wait()

    def test_unreadable(self):
        self.assertEqual(perfrun.perf_argv("no-such-pid"), [])


class CountLostTest(unittest.TestCase):
    """count_lost with a stand-in for perf: a shell script printing text."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.data = os.path.join(self.tmp.name, "perf.data")
        with open(self.data, "wb") as f:
            f.write(b"PERFILE2")
        self.args_file = os.path.join(self.tmp.name, "args")

    def fake_perf(self, output, status=0, sleep=None):
        out_file = os.path.join(self.tmp.name, "out.txt")
        with open(out_file, "w") as f:
            f.write(output)
        path = os.path.join(self.tmp.name, "perf")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
            f.write('printf "%%s\\n" "$@" > "%s"\n' % self.args_file)
            if sleep:
                f.write("exec sleep %d\n" % sleep)
            f.write('cat "%s"\nexit %d\n' % (out_file, status))
        os.chmod(path, stat.S_IRWXU)
        return path

    def test_pipe(self):
        self.assertEqual(perfrun.count_lost("-"), (
            None, "input is a pipe; run perf report --stats on a file"))

    def test_missing_file(self):
        path = os.path.join(self.tmp.name, "gone.data")
        self.assertEqual(perfrun.count_lost(path), (None, "%s not found" % path))

    def test_lost_counted(self):
        perf = self.fake_perf(STATS)
        self.assertEqual(perfrun.count_lost(self.data, perf=perf), (157844, None))
        with open(self.args_file) as f:
            self.assertEqual(f.read().split("\n")[:-1],
                             ["report", "--stats", "-i", self.data])

    def test_clean(self):
        self.assertEqual(perfrun.count_lost(self.data, perf=self.fake_perf(CLEAN)), (0, None))

    def test_records_without_count_is_unknown(self):
        text = "Aggregated stats:\n            LOST events:      13126  (15.3%)\n"
        self.assertEqual(perfrun.count_lost(self.data, perf=self.fake_perf(text)),
                         (None, "13126 PERF_RECORD_LOST records without a count"))

    def test_perf_missing(self):
        lost, reason = perfrun.count_lost(self.data, perf=os.path.join(self.tmp.name, "noperf"))
        self.assertIsNone(lost)
        self.assertTrue(reason.startswith("perf report --stats failed: "), reason)

    def test_timeout(self):
        perf = self.fake_perf(STATS, sleep=20)
        lost, reason = perfrun.count_lost(self.data, perf=perf, timeout=0.5)
        self.assertIsNone(lost)
        self.assertTrue(reason.startswith("perf report --stats failed: "), reason)

    def test_stats_text_merges_stderr(self):
        path = os.path.join(self.tmp.name, "perf2")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho out\necho err >&2\n")
        os.chmod(path, stat.S_IRWXU)
        self.assertEqual(perfrun.stats_text(self.data, perf=path), "out\nerr\n")

    # The exit status of perf report counts: a perf that fails
    # (Debian's /usr/bin/perf wrapper without a matching kernel build, an
    # unreadable file...) must not read as "nothing lost".
    def test_failing_perf_is_unknown_not_clean(self):
        perf = self.fake_perf("WARNING: perf not found for kernel 6.1.0-99\n", status=2)
        lost, reason = perfrun.count_lost(self.data, perf=perf)
        self.assertIsNone(lost)
        self.assertIsNotNone(reason)



class LostFromStatsTest(unittest.TestCase):
    """The one rule for what perf report --stats says about loss."""

    def test_counted_loss(self):
        self.assertEqual(perfrun.lost_from_stats(STATS), (157844, None))

    def test_clean(self):
        self.assertEqual(perfrun.lost_from_stats(
            "sdt_rt:alloc stats:\n          SAMPLE events:      9322\n"), (0, None))

    def test_lost_records_without_count_is_unknown_not_zero(self):
        text = ("Aggregated stats:\n            LOST events:          3\n"
                "sdt_rt:alloc stats:\n          SAMPLE events:      9322\n")
        self.assertEqual(perfrun.lost_from_stats(text),
                         (None, "3 PERF_RECORD_LOST records without a count"))

    def test_perf_error_is_unknown_not_zero(self):
        # perf 6.1 on a pipe-mode recording (perf record -o - > file)
        # with tracing data: exit status 0, this output, no statistics
        text = ("0xe64 [0x6963]: failed to process type: 1950615575\n"
                "Error:\nfailed to process sample\n")
        self.assertEqual(perfrun.lost_from_stats(text), (
            None, "perf report --stats could not read the file: failed to "
            "process sample"))

    def test_error_after_statistics_is_unknown(self):
        self.assertEqual(perfrun.lost_from_stats(
            STATS + "Error:\nfailed to process sample\n")[0], None)

    def test_no_statistics_is_unknown(self):
        self.assertEqual(perfrun.lost_from_stats(""), (
            None, "perf report --stats printed no statistics"))


if __name__ == "__main__":
    unittest.main()
