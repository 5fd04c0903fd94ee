"""The allocsites command's own option handling (no perf needed): one
argparse parser per form (record, report, record-then-report), built from
shared option groups."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import contextlib
import re
import io

from allocsites_lib.cli import command, parsers, options
from allocsites_lib.cli.options import UsageError
from allocsites_lib.record import recording


def parse(argv):
    return parsers.parse(argv)


class RecordOptionsTest(unittest.TestCase):

    def test_defaults(self):
        inv = parse(["record", "--", "./prog", "-x"])
        self.assertEqual(inv.form, "record")
        self.assertEqual(vars(inv.record), {
            "output": "perf.data", "stack_size": 8192, "unwind": "dwarf",
            "libs": [],
            "frees": False, "no_frees": False, "sample": 0, "pid": None,
            "duration": None, "system_wide": False})
        self.assertEqual(inv.program, ["./prog", "-x"])

    def test_values(self):
        inv = parse(["record", "-o", "r.data", "--stack-size=16384", "--lib",
                     "a.so", "--lib=b.so", "--frees", "--sample", "512k",
                     "--", "p"])
        self.assertEqual(vars(inv.record), {
            "output": "r.data", "stack_size": 16384, "unwind": "dwarf",
            "libs": ["a.so", "b.so"],
            "frees": True, "no_frees": False, "sample": 524288, "pid": None,
            "duration": None, "system_wide": False})

    def test_frees_and_no_frees_exclude_each_other(self):
        with self.assertRaises(UsageError):
            parse(["record", "--frees", "--no-frees", "--", "p"])
        inv = parse(["record", "--no-frees", "--", "p"])
        self.assertEqual((inv.record.frees, inv.record.no_frees), (False, True))

    def test_sample_the_header_cannot_represent(self):
        for text in ("99999999999999999999", "18446744073709551617",
                     "4611686018427387905", "4503599627370497m"):
            with self.assertRaisesRegex(UsageError, r"^--sample must be at "
                                        r"most 4611686018427387904 bytes "
                                        r"\(2\^62\)"):
                parse(["record", "--sample", text, "--", "p"])
        inv = parse(["record", "--sample", "4611686018427387904", "--", "p"])
        self.assertEqual(inv.record.sample, 1 << 62)

    def test_bad_numbers_and_forms(self):
        for argv, message in (
                (["record", "--sample", "12x", "--", "p"],
                 "not a whole number of bytes"),
                (["record", "--stack-size", "100", "--", "p"], "multiple of 8"),
                (["record", "--stack-size", "65536", "--", "p"],
                 "from 8 to 65528"),
                (["record", "-o"], "expected one argument"),
                (["record", "-o", "x"], "record: put the program after --"),
                (["record", "--"], "no program given after --"),
                (["record", "--json", "x", "--", "p"],
                 "unrecognized arguments: --json"),
                (["frobnicate"], "unknown command frobnicate"),
                ([], "no command"),
                (["--out", "x", "--", "p"], "unrecognized arguments: --out"),
                (["record", "-p", "12", "--", "p"], "give it no program"),
                (["record", "--duration", "5", "--", "p"], "--duration needs -p"),
                (["record", "-a", "-p", "12"], "-a records every process"),
                (["record", "-p", "x"], "-p/--pid: not a process id: .x.")):
            with self.subTest(argv=argv):
                with self.assertRaisesRegex(UsageError, message):
                    parse(argv)


class FormsTest(unittest.TestCase):

    def test_attach(self):
        inv = parse(["record", "-p", "4242", "--duration", "30", "-o", "s.data"])
        self.assertEqual((inv.record.pid, inv.record.duration, inv.program),
                         (4242, 30, []))
        self.assertEqual(parse(["record", "--pid=7"]).record.pid, 7)

    def test_system_wide(self):
        self.assertIs(parse(["record", "-a", "--", "make", "-j8"])
                      .record.system_wide, True)
        self.assertIs(parse(["record", "--system-wide", "make"])
                      .record.system_wide, True)
        self.assertIs(parse(["record", "--", "p"]).record.system_wide, False)

    def test_report(self):
        inv = parse(["report", "-i", "run.data", "-j", "2", "--top", "5",
                     "--tag", "a,b", "--skip", "^x$", "--skip", "y"])
        self.assertEqual((inv.form, inv.input, inv.jobs, inv.program),
                         ("report", "run.data", 2, None))
        self.assertEqual(inv.opts.skip, ["^x$", "y"])
        self.assertEqual(inv.opts.tag, ["a", "b"])
        self.assertEqual(inv.opts.top, 5)

    def test_report_options_are_parsed_once_as_the_workers_would(self):
        # The typed options the command takes are those a perf script
        # worker parses from report_argv: the two entries cannot differ.
        argv = ["report", "--json", "j", "--folded", "f", "--svg", "s",
                "--csv", "c", "--pprof", "p", "--weight", "count",
                "--tag", "t,u", "--min-size", "3", "--depth", "4",
                "--top", "5", "--skip", "k", "--skip", "l", "--title", "T",
                "--stacks", "7", "--timeline", "tl.svg", "--sort", "peak",
                "--phase", "lex", "--guest", "--guest-dispatch", "^v$",
                "--save-profile", "doc.json"]
        opts = parse(argv).opts
        self.assertEqual(vars(opts),
                         vars(options.parse(options.report_argv(opts))))
        self.assertEqual(set(vars(opts)), set(vars(options.parse([]))))
        self.assertEqual(opts.tag, ["t", "u"])

    def test_one_command_puts_the_flame_graph_beside_the_recording(self):
        inv = parse(["-o", "c.data", "--top", "10", "--", "prog", "--top"])
        self.assertEqual(inv.form, "profile")
        self.assertEqual(inv.record.output, "c.data")
        self.assertEqual(inv.program, ["prog", "--top"])
        self.assertEqual(inv.opts.svg, "c.svg")
        inv = parse(["--svg", "f.svg", "--", "prog"])
        self.assertEqual(inv.opts.svg, "f.svg")

    def test_report_argv_gives_back_every_report_option(self):
        # A report option that report_argv does not know would be lost on
        # its way to the perf script workers.
        argv = ["--json", "j", "--folded", "f", "--svg", "s", "--csv", "c",
                "--weight", "count", "--tag", "t", "--min-size", "3",
                "--depth", "4", "--top", "5", "--skip", "k", "--title", "T"]
        opts = options.parse(argv)
        self.assertEqual(vars(options.parse(options.report_argv(opts))),
                         vars(opts))
        dests = {a.dest for a in options.parser()._actions
                 if a.option_strings and not a.dest.startswith("worker_")
                 and a.dest != "help"}
        self.assertEqual(dests, {d for d, _, _ in options.REPORT_FLAGS})

    def test_each_form_has_its_own_help_with_examples(self):
        for argv, usage, example in (
                (["record", "--help"], "usage: allocsites record",
                 "allocsites record --lib"),
                (["report", "--help"], "usage: allocsites report",
                 "allocsites report -i run.data --skip"),
                (["--", "--help"], "usage: allocsites [record options]",
                 "allocsites -o c.data --top 10")):
            with self.subTest(argv=argv):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    with self.assertRaises(SystemExit) as cm:
                        parse(argv)
                self.assertEqual(cm.exception.code, 0)
                self.assertTrue(out.getvalue().startswith(usage))
                self.assertIn(example, out.getvalue())
        self.assertIsNone(parse(["--help"]))


class ExitStatusTest(unittest.TestCase):
    """perf re-raises the program's fatal signal on itself: Popen gives
    -signal, which becomes 128 + signal, said in one line."""

    def test_statuses(self):
        for status, want, said in ((0, 0, ""), (3, 3, ""), (-11, 139,
                                    "allocsites: ./p was killed by SIGSEGV "
                                    "(exit status 139)\n"),
                                   (-6, 134, "allocsites: ./p was killed by "
                                    "SIGABRT (exit status 134)\n"),
                                   (-2, 130, "")):
            out = io.StringIO()
            self.assertEqual(recording.exit_status(status, "./p", out), want)
            self.assertEqual(out.getvalue(), said)


class RecordWithoutDashDashTest(unittest.TestCase):
    """`allocsites record ./prog args`, as perf record takes it."""

    def test_program_after_the_options(self):
        inv = parse(["record", "-o", "r.data", "--stack-size=16384",
                     "--no-frees", "./prog", "-o", "x", "--", "y"])
        self.assertEqual((inv.record.output, inv.record.stack_size,
                          inv.record.no_frees),
                         ("r.data", 16384, True))
        self.assertEqual(inv.program, ["./prog", "-o", "x", "--", "y"])

    def test_program_first(self):
        self.assertEqual(parse(["record", "prog", "--help"]).program,
                         ["prog", "--help"])

    def test_an_unknown_option_before_the_program_is_still_an_error(self):
        with self.assertRaises((UsageError, SystemExit)):
            parse(["record", "--bogus", "./prog"])


class SummaryTest(unittest.TestCase):
    """The record summary counts what perf recorded without a call graph
    the same whether it came as the one plain event or, where that could
    not be written, as perf probe's events of their own."""

    def summary(self, samples, twice=None):
        import io

        class Scan:
            event_samples = samples
            duplicate_samples = twice or {}

            def lost(self):
                return 0, None
            tail_cut = 0
        out = io.StringIO()
        recording.summarize("perf", "/nonexistent.data", out, Scan())
        return out.getvalue()

    def test_records_perf_wrote_twice_are_not_counted(self):
        # As the report drops them: the counts agree with the program's.
        text = self.summary({"sdt_rt:alloc_7": 16, "sdt_rt:plain_7": 13},
                            {"sdt_rt:alloc_7": 6, "sdt_rt:plain_7": 1})
        self.assertIn("recorded 10 alloc events and 12 without a call "
                      "graph", text)

    def test_plain_event_and_own_events_count_alike(self):
        merged = self.summary({"sdt_rt:alloc_7": 10, "sdt_rt:plain_7": 12})
        own = self.summary({"sdt_rt:alloc": 10, "sdt_rt:free": 10,
                            "sdt_rt:exit": 1, "sdt_rt:commit_1": 1})
        for text in (merged, own):
            self.assertIn("recorded 10 alloc events and 12 without a call "
                          "graph", text)
        self.assertIn("recorded 5 sample events;",
                      self.summary({"sdt_rt:sample": 5}))


class Version(unittest.TestCase):
    def test_version_names_itself_the_json_format_and_perf(self):
        from allocsites_lib import __version__
        from allocsites_lib.render import jsonout, profiledoc
        for flag in ("--version", "-V"):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                status = command.dispatch([flag])
            self.assertEqual(status, 0)
            self.assertRegex(out.getvalue(),
                             r"^allocsites %s \(JSON report version %d; "
                             r"profile document version %d; "
                             r"perf (\S+|not found)\)\n$"
                             % (re.escape(__version__), jsonout.VERSION,
                                profiledoc.VERSION))


class ReportHelpExamples(unittest.TestCase):
    def test_every_output_a_heap_profiler_user_asks_for_has_an_example(self):
        for flag in ("--pprof", "--stacks", "--timeline", "--phase"):
            self.assertIn("allocsites report -i run.data %s" % flag,
                          parsers.REPORT_EXAMPLES)


if __name__ == "__main__":
    unittest.main()


class ClosedPipe(unittest.TestCase):
    """A reader that goes away before the output is written (`| head`, a
    pager quit) ends the command quietly with status 0. stdout is a pipe,
    so Python buffers it (unless PYTHONUNBUFFERED is set, as it is in
    some shells): output shorter than the buffer meets the closed pipe
    only at Python's flush at exit, which said "Exception ignored ...
    BrokenPipeError" and exited 120 (issue 31, on a fresh Debian 12)."""

    ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "..", "scripts", "allocsites")

    def run_closed(self, argv, env):
        import subprocess
        proc = subprocess.Popen(["/usr/bin/python3", self.ENTRY] + argv,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        proc.stdout.close()   # before the command writes anything
        err = proc.stderr.read().decode()
        proc.stderr.close()
        return proc.wait(), err

    def test_help_into_a_closed_pipe(self):
        base = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONUNBUFFERED", "LANG", "LC_ALL")}
        for extra in ({}, {"LANG": "C"}, {"LC_ALL": "C.UTF-8"},
                      {"PYTHONUNBUFFERED": "1"}):
            for argv in (["--help"], ["report", "--help"]):
                with self.subTest(env=extra, argv=argv):
                    status, err = self.run_closed(argv, dict(base, **extra))
                    self.assertEqual((status, err), (0, ""))

    def test_a_full_disk_at_the_last_flush_is_one_line(self):
        import subprocess
        with open("/dev/full", "w") as full:
            proc = subprocess.run(
                ["/usr/bin/python3", self.ENTRY, "--help"], stdout=full,
                stderr=subprocess.PIPE, universal_newlines=True,
                env={k: v for k, v in os.environ.items()
                     if k != "PYTHONUNBUFFERED"})
        self.assertEqual((proc.returncode, proc.stderr),
                         (1, "allocsites: error: cannot write the output: "
                             "No space left on device\n"))
