"""The allocsites command's own option handling (no perf needed)."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from allocsites_lib import cli


class RecordOptionsTest(unittest.TestCase):
    def take(self, args):
        return cli.take_record_options(args)

    def test_defaults(self):
        opts, rest = self.take(["--json", "x.json"])
        self.assertEqual(opts, cli.RecordOptions("perf.data", 8192, [], False, 0))
        self.assertEqual(rest, ["--json", "x.json"])

    def test_values(self):
        opts, _ = self.take(["-o", "r.data", "--stack-size=16384", "--lib", "a.so",
                             "--lib=b.so", "--frees", "--sample", "512k"])
        self.assertEqual(opts, cli.RecordOptions("r.data", 16384, ["a.so", "b.so"], True,
                                                 524288))

    def test_sample_the_header_cannot_represent(self):
        for text in ("99999999999999999999", "18446744073709551617",
                     "4611686018427387905", "4503599627370497m"):
            with self.assertRaisesRegex(cli.Usage, r"^--sample must be at most "
                                        r"4611686018427387904 bytes \(2\^62\)"):
                self.take(["--sample", text])
        opts, _ = self.take(["--sample", "4611686018427387904"])
        self.assertEqual(opts.sample, 1 << 62)

    def test_bad_numbers(self):
        for args, message in ((["--sample", "12x"], "not a whole number of bytes"),
                              (["--stack-size", "100"], "multiple of 8"),
                              (["--stack-size", "65536"], "from 8 to 65528"),
                              (["-o"], "-o needs a value")):
            with self.assertRaisesRegex(cli.Usage, message):
                self.take(args)



class ExitStatusTest(unittest.TestCase):
    """perf re-raises the program's fatal signal on itself: Popen gives
    -signal, which becomes 128 + signal, said in one line."""

    def test_statuses(self):
        import io
        for status, want, said in ((0, 0, ""), (3, 3, ""), (-11, 139,
                                    "allocsites: ./p was killed by SIGSEGV "
                                    "(exit status 139)\n"),
                                   (-6, 134, "allocsites: ./p was killed by "
                                    "SIGABRT (exit status 134)\n"),
                                   (-2, 130, "")):
            out = io.StringIO()
            self.assertEqual(cli.exit_status(status, "./p", out), want)
            self.assertEqual(out.getvalue(), said)

if __name__ == "__main__":
    unittest.main()
