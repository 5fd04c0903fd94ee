"""The native reader (allocsites-read, the report's default) against perf
script: on a recording of every kind the test programs make, the JSON
report of each is the same, key for key; its stacks reach main past 127
frames; it reports a recording under an address-space cap far below
what the recording decompresses to (perf script holds all of that); and
it says in one line what is wrong with a file it cannot read."""

import json
import os
import resource
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BUILD, ProfileTest, allocsites, program,  # noqa: E402
                     ROOT)

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib.read import perfdata  # noqa: E402

READER = os.path.join(BUILD, "allocsites-read")


def same_order(report):
    """Warnings come in the order of a set of DSO names (string hashing
    differs between processes): compared sorted."""
    return dict(report, warnings=sorted(report["warnings"]))


class NativeAgainstPerf(ProfileTest):

    def record(self, prog, args, record_args=(), env=None):
        data = os.path.join(self.tmp, "run.data")
        for leftover in (data, data + ".scan", data + ".buildids"):
            if os.path.exists(leftover):
                os.unlink(leftover)
        full_env = {"TRUTH_FILE": os.path.join(self.tmp, "truth.json")}
        full_env.update(env or {})
        rec = allocsites(["record", "-o", data] + list(record_args) +
                         ["--", prog] + list(args), env=full_env)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        return data

    def report(self, data, reader, *extra, env=None):
        # the native reader with the liveness sweep in it (its default),
        # against perf script's workers and the sweep after them
        out = os.path.join(self.tmp, "%s.json" % reader)
        rep = allocsites(["report", "-i", data, "-j", "1", "--json", out] +
                         list(extra), env=dict({"ALLOCSITES_READER": reader},
                                               **(env or {})))
        self.assertNotIn("Traceback", rep.stderr)
        with open(out) as f:
            return json.load(f), rep

    def assertSameReport(self, data, *extra):
        native, nrep = self.report(data, "native", *extra)
        perf, prep = self.report(data, "perf", *extra)
        self.assertEqual(nrep.returncode, prep.returncode,
                         nrep.stderr + prep.stderr)
        self.assertEqual(same_order(native), same_order(perf))
        self.assertEqual(nrep.stdout.replace("native.json", "X"),
                         prep.stdout.replace("perf.json", "X"))
        return native

    def test_corpus_reports_equal_perf_scripts(self):
        cases = [
            ("t_basic", ["3000"], []),
            # lld puts text a page past its file offset: perf gives its
            # symbols as file offsets (for a PIE too), which the lines
            # must take back through the segment (elf.to_link_address)
            ("t_basic_lld", ["300"], []),
            ("t_threads", ["4000"], []),
            ("t_shlib", ["500"], []),
            ("t_phases", [], []),
            ("t_live", [], []),
            ("t_wrap", [], []),
            ("t_deep", ["60"], []),
            ("t_sampled", ["2"], ["--sample", "64k"]),
            ("t_sampled_live", ["2"], ["--sample", "64k"]),
            ("t_basic", ["300"], ["--stack-size", "2048"]),
            # no call graph: both events' samples alike, told apart by
            # SAMPLE_ID at its place instead of SAMPLE_IDENTIFIER
            ("t_basic", ["300"], ["--unwind", "none"]),
            # the kernel's frame-pointer walk: perf script hands its
            # callers on at their return addresses, which the perf path
            # moves back into the call (parse.kernel_callchain), as the
            # reader does
            ("t_basic_fp", ["3000"], ["--unwind", "fp"]),
        ]
        for name, args, record_args in cases:
            with self.subTest(prog=name, record=record_args):
                data = self.record(program(name), args, record_args,
                                   env={"RT_SAMPLE_SEED": "7"})
                report = self.assertSameReport(data)
                self.assertGreater(report["events"]["alloc"] +
                                   report["events"].get("sample", 0), 0)

    def test_the_reader_sweeps_in_memory(self):
        # allocsites-read --sweep: the liveness sweep in a thread of the
        # reader, on the log's chunks in memory: nothing written to the
        # log's file, and the report the same as with the sweep after
        # the reader (ALLOCSITES_FOLLOW=0); t_basic 300000: more than
        # 2^19 events, several of its chunks (2^15 events)
        from allocsites_lib.read import native
        from allocsites_lib.read.tally import Tally
        data = self.record(program("t_basic"), ["300000"],
                           env={"TRUTH_FILE": os.devnull})
        tally = Tally(0)
        result = native.run(READER, data, tally, sweep=True)
        self.assertEqual(result.read_errors, [])
        self.assertIsNotNone(tally.log.answered)
        self.assertEqual(tally.log.chunk_count(), 0)
        self.assertEqual(os.fstat(tally.log._file.fileno()).st_size, 0)
        self.assertGreater(len(tally.log), 1 << 19)
        self.assertEqual(tally.log.answered[-1], "end")
        after, _ = self.report(data, "native",
                               env={"ALLOCSITES_FOLLOW": "0"})
        swept, _ = self.report(data, "native")
        self.assertEqual(swept, after)

    def test_a_sweep_held_back_reads_the_file(self):
        # a fork's child exits while its parent goes on: the sweep waits
        # at that exit for the end of the log (it may not be the
        # process's last), the chunks after it held back; past
        # ALLOCSITES_SWEEP_HELD of them they go to the log's file, and
        # the report is the same
        for name, args in (("t_live", []), ("t_deep", ["60"])):
            with self.subTest(prog=name):
                data = self.record(program(name), args)
                want, _ = self.report(data, "native",
                                      env={"ALLOCSITES_FOLLOW": "0"})
                for held in ("0", "1"):
                    got, rep = self.report(
                        data, "native", env={"ALLOCSITES_SWEEP_HELD": held})
                    self.assertEqual(got, want, rep.stderr)

    def test_exec_and_a_second_program(self):
        data = self.record(program("t_exec"), [program("t_basic"), "5"],
                           env={"TRUTH_FILE": os.devnull})
        self.assertSameReport(data)

    def test_filters_and_weights_equal_perf_scripts(self):
        data = self.record(program("t_phases"), [])
        self.assertSameReport(data, "--phase", "parse")
        self.assertSameReport(data, "--weight", "peak")

    def test_stacks_past_127_frames_reach_main(self):
        report, _, _, _ = self.profile(program("t_deep"), ["400"],
                                       record_args=["--stack-size",
                                                    "65528"])
        self.assertEqual(report["truncated_allocations"], 0)
        deepest = max(report["stacks"], key=lambda s: len(s["frames"]))
        self.assertGreater(len(deepest["frames"]), 400)


class FramePointers(ProfileTest):
    """--unwind fp: the kernel's frame-pointer walk, nothing copied."""

    def test_fp_and_dwarf_give_the_same_sites(self):
        reports = {}
        for unwind in ("fp", "dwarf"):
            report, truth, _, rep = self.profile(
                program("t_basic_fp"), ["300"],
                record_args=["--unwind", unwind])
            self.assertMatchesTruth(report, truth)
            self.assertLossless(report)
            self.assertEqual(report["unwind"], unwind)
            self.assertEqual(report["truncated_allocations"], 0)
            reports[unwind] = report
        key = [(s["function"], s["file"], s["line"], s["count"], s["bytes"])
               for s in reports["fp"]["sites"]]
        self.assertEqual(key, [(s["function"], s["file"], s["line"],
                                s["count"], s["bytes"])
                               for s in reports["dwarf"]["sites"]])

    def test_fp_without_frame_pointers_says_so(self):
        # t_basic keeps no frame pointers: the kernel's walk is cut, and
        # the warning must not advise a larger stack copy
        report, _, _, rep = self.profile(program("t_basic"), ["300"],
                                         record_args=["--unwind", "fp"])
        self.assertEqual(report["unwind"], "fp")
        self.assertEqual(report["truncated_allocations"],
                         report["totals"]["count"])
        self.assertIn("--unwind dwarf", rep.stderr)
        self.assertNotIn("--stack-size", rep.stderr)


    def test_auto_takes_fp_only_where_frame_pointers_are_kept(self):
        for prog, want in (("t_basic_fp", "fp"), ("t_basic", "dwarf")):
            report, truth, rec, _ = self.profile(
                program(prog), ["300"], record_args=["--unwind", "auto"])
            with self.subTest(prog=prog):
                self.assertMatchesTruth(report, truth)
                self.assertEqual(report["unwind"], want)
                self.assertEqual(report["truncated_allocations"], 0)
                self.assertRegex(rec.stderr, r"allocsites: --unwind auto: %s "
                                             r"\(%s" % (want, prog))


class StaticBinaries(ProfileTest):
    """gcc -static (issue 21, class 3): the native reader unwinds it with
    the binary's own CFI; perf 6.1's unwinder stops at the allocator, so
    the perf script path refuses it in one line instead of a one-site
    table and advice to raise --stack-size."""

    def build_static(self):
        prog = os.path.join(self.tmp, "t_basic_static")
        src = [os.path.join(ROOT, p) for p in (
            "tests/programs/t_basic.c", "examples/rtalloc/rt_alloc.c",
            "examples/rtalloc/rt_arena.c")]
        subprocess.run(["gcc", "-std=c99", "-D_DEFAULT_SOURCE", "-O2", "-g",
                        "-static"] +
                       ["-I" + os.path.join(ROOT, d) for d in (
                           "include", "examples/rtalloc", "tests/programs")] +
                       src + ["-o", prog, "-pthread"], check=True)
        return prog

    def test_static_binary_against_its_truth(self):
        prog = self.build_static()
        report, truth, _, _ = self.profile(prog, ["300"])
        self.assertMatchesTruth(report, truth)
        self.assertEqual(report["truncated_allocations"], 0)
        rep = allocsites(["report", "-i", os.path.join(self.tmp, "run.data")],
                         env={"ALLOCSITES_READER": "perf"})
        self.assertEqual(rep.returncode, 1, rep.stderr)
        self.assertEqual(rep.stdout, "")
        self.assertEqual(len(rep.stderr.splitlines()), 1, rep.stderr)
        self.assertIn("%s is statically linked" % prog, rep.stderr)
        self.assertNotIn("--stack-size", rep.stderr)


class BoundedMemory(ProfileTest):

    def test_report_under_an_address_space_cap(self):
        # 60000 allocations and frees with 8 KiB stack copies decompress
        # to about 500 MB; the report (each of its processes) gets 300 MB
        # of address space, and must still match the program's truth.
        cap = 300 << 20
        data = os.path.join(self.tmp, "run.data")
        truth_path = os.path.join(self.tmp, "truth.json")
        rec = allocsites(["record", "-o", data, "--", program("t_basic"),
                          "20000"], env={"TRUTH_FILE": truth_path})
        self.assertEqual(rec.returncode, 0, rec.stderr)
        scan = perfdata.scan(data)
        self.assertGreater(scan.decompressed, cap,
                           "the recording is too small to test the cap")
        out = os.path.join(self.tmp, "r.json")

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        rep = subprocess.run(
            ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites"),
             "report", "-i", data, "--json", out],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, preexec_fn=limit)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(out) as f:
            report = json.load(f)
        with open(truth_path) as f:
            truth = json.load(f)
        self.assertMatchesTruth(report, truth)
        self.assertLossless(report)


    def test_too_large_for_memory_is_refused_before_it_starts(self):
        data = os.path.join(self.tmp, "run.data")
        rec = allocsites(["record", "-o", data, "--", program("t_basic"),
                          "300"], env={"TRUTH_FILE": os.devnull})
        self.assertEqual(rec.returncode, 0, rec.stderr)
        # perf script's workers: memory
        rep = allocsites(["report", "-i", data],
                         env={"ALLOCSITES_MEMORY": str(10 << 20),
                              "ALLOCSITES_READER": "perf"})
        self.assertEqual(rep.returncode, 1)
        self.assertEqual(rep.stdout, "")
        self.assertRegex(rep.stderr, r"\Aallocsites: error: cannot report "
                         r".*needs about [0-9.]+ GB of memory \(\d+ events.*"
                         r"--sample.*\n\Z")
        # the native reader: its event log on a filesystem too small for it
        # (its own directory: tearDown's rmtree of self.tmp runs before
        # the cleanups, and would leave a directory with a mount in it)
        import tempfile
        small = tempfile.mkdtemp(prefix="allocsites-test-small-")
        self.addCleanup(os.rmdir, small)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k",
                                  "allocsites-test", small],
                                 stderr=subprocess.PIPE)
        if mounted.returncode != 0:
            self.skipTest("cannot mount a tmpfs here")
        self.addCleanup(subprocess.run, ["umount", small], check=True)
        rep = allocsites(["report", "-i", data], env={"TMPDIR": small})
        self.assertEqual(rep.returncode, 1, rep.stderr)
        self.assertEqual(rep.stdout, "")
        self.assertRegex(rep.stderr, r"\Aallocsites: error: cannot report "
                         r".*event log needs about [0-9.]+ GB in %s.*TMPDIR"
                         r".*\n\Z" % small)


class OutputErrors(ProfileTest):
    """An output that cannot be written: a closed pipe ends quietly (as
    perf script | head does), a full disk is one line and status 1."""

    def test_closed_pipe_and_full_disk(self):
        data = os.path.join(self.tmp, "run.data")
        rec = allocsites(["record", "-o", data, "--", program("t_basic"),
                          "50"], env={"TRUTH_FILE": os.devnull})
        self.assertEqual(rec.returncode, 0, rec.stderr)
        argv = ["/usr/bin/python3", os.path.join(ROOT, "scripts",
                                                 "allocsites"),
                "report", "-i", data]
        # Both entry points, stdout block buffered (a pipe, no
        # PYTHONUNBUFFERED: the report then meets the closed pipe only at
        # the last flush, which exited 120) and unbuffered, in the C locale
        # of a minimal system and in UTF-8.
        script = ["perf", "script", "-i", data, "--no-inline", "-s",
                  os.path.join(ROOT, "scripts", "allocsites.py")]
        base = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONUNBUFFERED", "LANG", "LC_ALL")}
        for cmd in (argv, script, script + ["--", "--help"]):
            for extra in ({"LANG": "C"}, {"LANG": "C.UTF-8"},
                          {"PYTHONUNBUFFERED": "1"}):
                with self.subTest(cmd=cmd[:2] + cmd[-1:], env=extra):
                    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE,
                                            env=dict(base, **extra))
                    proc.stdout.close()   # before the first line
                    err = proc.stderr.read().decode()
                    proc.stderr.close()
                    self.assertEqual((proc.wait(), err), (0, ""))
        with open("/dev/full", "w") as full:
            proc = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE,
                                  universal_newlines=True)
        self.assertEqual(proc.returncode, 1)
        self.assertRegex(proc.stderr, r"\Aallocsites: error: cannot write "
                         r".*No space left on device\n\Z")


class InputErrors(ProfileTest):
    """A FIFO where a recording or a sidecar is expected: one line or
    ignored, never a report that hangs; diff of a JSON that is not a
    report: one line naming it."""

    def test_fifos_and_bad_reports(self):
        data = os.path.join(self.tmp, "run.data")
        rec = allocsites(["record", "-o", data, "--", program("t_basic"),
                          "50"], env={"TRUTH_FILE": os.devnull})
        self.assertEqual(rec.returncode, 0, rec.stderr)
        for side in (".scan", ".buildids"):
            os.unlink(data + side)
            os.mkfifo(data + side)
        rep = allocsites(["report", "-i", data], timeout=60)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        # a --tag or --phase that names nothing: the warning, status 2
        for opt in ("--tag", "--phase"):
            rep = allocsites(["report", "-i", data, opt, "nosuch"])
            self.assertEqual(rep.returncode, 2, rep.stderr)
            self.assertIn("nosuch", rep.stderr)
            self.assertNotIn("Traceback", rep.stderr)
        fifo = os.path.join(self.tmp, "fifo.data")
        os.mkfifo(fifo)
        empty = os.path.join(self.tmp, "e.json")
        with open(empty, "w") as f:
            f.write("{}\n")
        for args, said in (
                (["report", "-i", fifo], "fifo.data: not a regular file"),
                (["diff", data, fifo], "fifo.data: not a regular file"),
                (["diff", data, empty], "e.json: not an allocsites JSON "
                                        "report: the report has no "
                                        "'sites'")):
            with self.subTest(args=args[0]):
                rep = allocsites(args, timeout=60)
                self.assertEqual(rep.returncode, 1)
                self.assertEqual(len(rep.stderr.splitlines()), 1,
                                 rep.stderr)
                self.assertIn(said, rep.stderr)
                self.assertNotIn("Traceback", rep.stderr)


class ReaderErrors(unittest.TestCase):

    def run_reader(self, path):
        return subprocess.run([READER, path], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=False)

    def test_bad_inputs_get_one_line(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            cases = {
                "missing": None,
                "empty": b"",
                "text": b"not a recording at all\n" * 10,
                "pipe-mode": b"PERFILE2" + (16).to_bytes(8, "little") +
                             b"\0" * 100,
            }
            for name, content in cases.items():
                path = os.path.join(tmp, name)
                if content is not None:
                    with open(path, "wb") as f:
                        f.write(content)
                with self.subTest(case=name):
                    proc = self.run_reader(path)
                    self.assertEqual(proc.returncode, 1)
                    self.assertEqual(proc.stdout, b"")
                    err = proc.stderr.decode()
                    self.assertRegex(err, r"\Aallocsites-read: .*%s.*\n\Z"
                                     % name)


if __name__ == "__main__":
    unittest.main()
