import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from allocsites_lib import words
from allocsites_lib.render import text
from allocsites_lib.analyze import completeness
from allocsites_lib.analyze.report import Report

from fixtures import fr


def rep(lost=0, reason=None, malformed=0):
    return Report(mode="exact", profile=None, events={}, malformed=malformed,
                  lost=lost, lost_reason=reason, frees=(0, 0), filters={},
                  warnings=[])


class HumanBytesTest(unittest.TestCase):
    def test_values(self):
        for n, want in [(0, "0 B"), (1, "1 B"), (1023, "1023 B"), (1024, "1.0 KiB"),
                        (1536, "1.5 KiB"), (10 * 1024 + 102, "10.1 KiB"),
                        (1048576, "1.0 MiB"), (3 * 1024 ** 3, "3.0 GiB"),
                        (2 * 1024 ** 4, "2.0 TiB"), (5 * 1024 ** 5, "5120.0 TiB")]:
            with self.subTest(n=n):
                self.assertEqual(words.human_bytes(n), want)


class LossTest(unittest.TestCase):
    def test_lost_text(self):
        self.assertEqual(text.lost_text(rep(0)), "0")
        self.assertEqual(text.lost_text(rep(157844)), "157844")
        self.assertEqual(text.lost_text(rep(None, "input is a pipe")),
                         "unknown (input is a pipe)")

    def test_verdict_from_perf_loss_alone(self):
        # Without the end-to-end count, nothing is ever "complete".
        def verdict(lost, reason=None, malformed=0):
            return completeness.verdict({}, {}, lost, reason,
                                        malformed=malformed)
        self.assertIsNone(verdict(0).complete)
        self.assertIs(verdict(1).complete, False)
        self.assertIsNone(verdict(None, "why").complete)
        self.assertIs(verdict(0, malformed=3).complete, False)


class LocationTest(unittest.TestCase):
    def test_relative_below_cwd(self):
        self.assertEqual(words.location(fr("f", 12, "/work/src/a.c"), "/work"), "src/a.c:12")
        self.assertEqual(words.location(fr("f", 12, "/work/src/a.c"), "/work/"), "src/a.c:12")

    def test_outside_cwd_kept_absolute(self):
        self.assertEqual(words.location(fr("f", 12, "/other/a.c"), "/work"), "/other/a.c:12")

    def test_prefix_is_not_a_parent(self):
        self.assertEqual(words.location(fr("f", 3, "/workshop/a.c"), "/work"), "/workshop/a.c:3")

    def test_no_relative_to(self):
        self.assertEqual(words.location(fr("f", 3, "/w/a.c")), "/w/a.c:3")

    def test_no_line(self):
        self.assertEqual(words.location(fr("f+0x10", 0, "/usr/bin/app"), "/work"), "/usr/bin/app")

    def test_no_file(self):
        self.assertEqual(words.location(fr("[no caller]", 0, "")), "?")


class FrameLabelTest(unittest.TestCase):
    def test_function_basename_line(self):
        self.assertEqual(words.frame_label(fr("parse", 120, "/src/deep/parser.c")),
                         "parse (parser.c:120)")

    def test_inlined(self):
        self.assertEqual(words.frame_label(fr("helper", 21, "/src/h.h", inlined=True)),
                         "helper (h.h:21) [inlined]")

    def test_no_line(self):
        self.assertEqual(words.frame_label(fr("clone3+0x2c", 0, "/lib/libc.so.6")),
                         "clone3+0x2c")

    def test_semicolons_escaped(self):
        self.assertEqual(words.frame_label(fr("a;b", 3, "/x/y;z.c", inlined=True)),
                         "a:b (y:z.c:3) [inlined]")
        self.assertNotIn(";", words.frame_label(fr(";;", 0, ";")))


class ShareTest(unittest.TestCase):
    def test_share(self):
        self.assertEqual(words.share(1, 4), 25.0)
        self.assertEqual(words.share(5, 0), 0.0)
        self.assertEqual(words.share(0, 0), 0.0)


if __name__ == "__main__":
    unittest.main()
