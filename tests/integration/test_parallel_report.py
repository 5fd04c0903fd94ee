"""The parallel report under real perf: K workers on time ranges give
exactly the report of one perf script run, perf's --time is inclusive at
both ends, perfdata.scan agrees with perf report --stats, and a recording
perf cannot read makes the report fail instead of shrinking silently."""

import glob
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ALLOCSITES, PYTHON, ROOT, ProfileTest,  # noqa: E402
                     allocsites, program, report_sites)

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib.read import (mailbox, perf_vdso,  # noqa: E402
                                 perfdata, perfrun, scancache,
                                 time_ranges, worker_files, workers)

ENTRY = os.path.join(ROOT, "scripts", "allocsites.py")


def same_order(report):
    """The report with its warnings sorted: the symbolizer's come in the
    order of a set of DSO names, which Python's string hashing changes
    from process to process."""
    return dict(report, warnings=sorted(report["warnings"]))
class ParallelReport(ProfileTest):

    def record(self, prog, args, name="run.data"):
        """allocsites record with its defaults (the recordings the parallel
        report is made fast for), with rt:exit so completeness is checked."""
        data = os.path.join(self.tmp, name)
        rec = allocsites(["record", "-o", data, "--", prog] + list(args),
                         env={"TRUTH_FILE": os.path.join(self.tmp,
                                                         "truth.json")})
        self.assertEqual(rec.returncode, 0, rec.stderr)
        return data

    def single(self, data, *extra):
        """The report of one perf script run, by hand."""
        out = os.path.join(self.tmp, "single.json")
        proc = subprocess.run(
            ["perf", "script", "-i", data, "--no-inline", "-s", ENTRY, "--",
             "--json", out] + list(extra), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out) as f:
            return json.load(f)

    def parallel(self, data, jobs, *extra):
        """The report of `jobs` perf script workers (the native reader,
        the default, is compared with perf in test_native_reader.py)."""
        out = os.path.join(self.tmp, "parallel%d.json" % jobs)
        rep = allocsites(["report", "-i", data, "-j", str(jobs), "--json",
                          out] + list(extra),
                         env={"ALLOCSITES_READER": "perf"})
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertNotIn("Traceback", rep.stderr)
        with open(out) as f:
            return json.load(f)

    def test_workers_give_the_single_run_report_exactly(self):
        # Workers that stop early would leave perf's /tmp/perf-vdso.so-*
        # files (perf removes them only when it ends normally).
        vdso = set(glob.glob(perf_vdso.PERF_VDSO_GLOB))
        self.addCleanup(lambda: self.assertEqual(
            set(glob.glob(perf_vdso.PERF_VDSO_GLOB)) - vdso, set(),
            "perf's vdso files left behind"))
        for prog, args in ((program("t_threads"), ["8000"]),
                           (program("t_basic"), ["3000"])):
            with self.subTest(prog=os.path.basename(prog)):
                data = self.record(prog, args)
                one = self.single(data)
                self.assertLossless(one)
                scan = perfdata.scan(data)
                for jobs in (2, 3, 5):
                    # The ranges really split the samples.
                    ranges = time_ranges.split(scan.times, jobs)
                    self.assertEqual(len(ranges), jobs)
                    many = self.parallel(data, jobs)
                    self.assertEqual(report_sites(many), report_sites(one))
                    self.assertEqual(many["totals"], one["totals"])
                    self.assertEqual(many["events"], one["events"])
                    self.assertEqual(many["stacks"], one["stacks"])
                    self.assertEqual(same_order(many), same_order(one))
                with open(os.path.join(self.tmp, "truth.json")) as f:
                    truth = json.load(f)
                self.assertMatchesTruth(many, truth)
                # Options that change the tally reach the workers.
                some = ["--min-size", "100", "--skip", "^nest$"]
                self.assertEqual(same_order(self.parallel(data, 2, *some)),
                                 same_order(self.single(data, *some)))

    @unittest.skipUnless(os.path.exists("/usr/include/perf/perf_dlfilter.h"),
                         "no perf dlfilter header: the filter is not built")
    def test_workers_take_the_plain_events_through_the_dlfilter(self):
        """A worker with the built dlfilter (mailbox.py) turns it on after
        checking it, and its tally equals the one without it."""
        lib = mailbox.library_path(ENTRY)
        self.assertIsNotNone(lib, "allocsites_mailbox.so is not built")
        data = self.record(program("t_basic"), ["3000"])
        scan = perfdata.scan(data)
        pids = os.path.join(self.tmp, "pids")
        worker_files.write_pids(pids, scan.pids)
        payloads = []
        for index, so in enumerate((lib, None)):
            w = workers.Worker(index, 1, None, None, self.tmp)
            proc = subprocess.run(
                w.command("perf", data, ENTRY, [], pids, so),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                universal_newlines=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(w.tally_path, "rb") as f:
                payloads.append(pickle.load(f))
        with_it, without = payloads
        self.assertEqual(with_it["mailbox"], mailbox.ON)
        self.assertIsNone(without["mailbox"])
        a, b = with_it["tally"], without["tally"]
        self.assertEqual(a.events, b.events)
        self.assertGreater(a.events["free"], 9000)
        self.assertEqual(a.frees, b.frees)
        self.assertEqual(dict(a.stacks), dict(b.stacks))
        self.assertEqual([list(c) for c in a.log.columns()],
                         [list(c) for c in b.log.columns()])
        self.assertEqual(with_it["handler_errors"], 0)

    def test_record_keeps_its_scan_and_the_report_agrees_without_it(self):
        data = self.record(program("t_threads"), ["4000"])
        # record keeps its scan without the sample times (the native
        # reader, the default, needs none): the workers scan again
        kept = scancache.load(data, keep_times=False)
        self.assertIsNotNone(kept, "allocsites record kept no scan")
        fresh = vars(perfdata.scan(data, keep_times=False))
        self.assertEqual({k: v for k, v in vars(kept).items() if k != "times"},
                         {k: v for k, v in fresh.items() if k != "times"})
        self.assertIsNone(scancache.load(data, keep_times=True))
        with_it = self.parallel(data, 2)
        os.unlink(scancache.path_for(data))
        self.assertEqual(same_order(self.parallel(data, 2)),
                         same_order(with_it))
        with open(os.path.join(self.tmp, "truth.json")) as f:
            self.assertMatchesTruth(with_it, json.load(f))

    def test_time_ranges_are_inclusive_in_ns(self):
        data = self.record(program("t_basic"), ["3000"])
        times = perfdata.scan(data).times
        t = times[len(times) // 2]

        def shown(window):
            out = subprocess.run(
                ["perf", "script", "-i", data, "-F", "time", "--ns",
                 "--time", window], stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, universal_newlines=True).stdout
            return [line.strip().rstrip(":") for line in out.splitlines()
                    if line.strip()]

        self.assertEqual(shown(time_ranges.time_option(t, t)),
                         [time_ranges.format_time(t)] * times.count(t))
        before = shown(time_ranges.time_option(None, t - 1))
        after = shown(time_ranges.time_option(t, None))
        self.assertEqual(len(before) + len(after), len(times))
        self.assertEqual(after[0], time_ranges.format_time(t))

    def test_scan_agrees_with_perf_report_stats(self):
        # A ring of 8 pages loses samples: LOST_SAMPLES to count.
        big_ring = ["-z", "-m", "16384", "--no-bpf-event", "--call-graph",
                    "dwarf,8192"]
        small_ring = ["-z", "-m", "8", "--no-bpf-event", "--call-graph",
                      "dwarf,8192"]
        for options in (big_ring, small_ring):
            with self.subTest(options=options):
                data = os.path.join(self.tmp, "stats.data")
                prog = program("t_basic")
                out = subprocess.run(["perf", "--buildid-dir",
                                      os.path.join(self.tmp, "b"), "probe",
                                      "-f", "-x", prog, "sdt_rt:alloc"],
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT,
                                     universal_newlines=True)
                name = re.findall(r"(sdt_rt:alloc(?:_\d+)?)\s", out.stdout)[0]
                try:
                    # -N: nothing left in ~/.debug (build-id cache)
                    subprocess.run(["perf", "record", "-q", "-N"] + options +
                                   ["-e", name, "-o", data, "--", prog,
                                    "3000"], stdout=subprocess.DEVNULL,
                                   env=dict(os.environ, TRUTH_FILE=os.path.join(
                                       self.tmp, "t.json")), check=True)
                finally:
                    subprocess.run(["perf", "probe", "-q", "-d", name])
                text = perfrun.stats_text(data)
                scan = perfdata.scan(data)
                self.assertEqual({name: scan.samples},
                                 perfrun.event_samples(text))
                self.assertEqual(scan.event_samples,
                                 perfrun.event_samples(text))
                self.assertEqual(scan.lost(), perfrun.lost_from_stats(text))

    def test_truncated_recording_fails(self):
        data = self.record(program("t_basic"), ["3000"])
        cut = os.path.join(self.tmp, "cut.data")
        shutil.copy(data, cut)
        subprocess.run(["truncate", "-s", str(os.path.getsize(data) // 2),
                        cut], check=True)
        rep = allocsites(["report", "-i", cut, "-j", "2"],
                         env={"TMPDIR": self.tmp})
        self.assertNotEqual(rep.returncode, 0, rep.stdout + rep.stderr)
        self.assertNotIn("Traceback", rep.stderr)
        self.assertIn("truncated", rep.stderr)
        self.assertEqual(glob.glob(os.path.join(self.tmp,
                                                "allocsites-report-*")), [])

    def test_failed_worker_is_a_read_error(self):
        # A zstd stream damaged in the middle: perf stops reading there.
        data = self.record(program("t_threads"), ["8000"])
        bad = os.path.join(self.tmp, "bad.data")
        shutil.copy(data, bad)
        with open(bad, "r+b") as f:
            f.seek(os.path.getsize(bad) // 2)
            f.write(b"\0" * 512)
        rep = allocsites(["report", "-i", bad, "-j", "2"],
                         env={"TMPDIR": self.tmp})
        self.assertNotEqual(rep.returncode, 0, rep.stdout + rep.stderr)
        self.assertNotIn("Traceback", rep.stderr)
        self.assertRegex(rep.stderr, r"not read|error")
        self.assertEqual(glob.glob(os.path.join(self.tmp,
                                                "allocsites-report-*")), [])

    def test_ctrl_c_stops_workers_and_cleans_up(self):
        data = self.record(program("t_basic"), ["100000"])
        proc = subprocess.Popen(
            [PYTHON, ALLOCSITES, "report", "-i", data, "-j", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, start_new_session=True,
            env=dict(os.environ, TMPDIR=self.tmp, ALLOCSITES_READER="perf"))
        deadline = time.time() + 60
        while not glob.glob(os.path.join(self.tmp, "allocsites-report-*",
                                         "stderr.1")):
            self.assertLess(time.time(), deadline, "workers never started")
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)   # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, err)
        self.assertIn("interrupted", err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(out, "")
        self.assertEqual(glob.glob(os.path.join(self.tmp,
                                                "allocsites-report-*")), [])
        ps = subprocess.run(["pgrep", "-f", data], stdout=subprocess.PIPE,
                            universal_newlines=True).stdout
        self.assertEqual(ps.strip(), "", "workers outlived the report")


if __name__ == "__main__":
    unittest.main()
