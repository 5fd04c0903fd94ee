import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import re
import tempfile

from allocsites_lib.analyze import wrappers
from allocsites_lib.cli import options
from allocsites_lib.cli.options import UsageError


class DefaultsTest(unittest.TestCase):
    def test_defaults(self):
        o = options.parse([])
        self.assertEqual(
            (o.json, o.folded, o.svg, o.csv, o.weight, o.tag, o.min_size, o.depth,
             o.top, o.skip, o.title),
            (None, None, None, None, "bytes", None, 0, None, None, None, None))


class NumbersTest(unittest.TestCase):
    def test_values(self):
        o = options.parse(["--min-size", "4096", "--depth", "3", "--top=5"])
        self.assertEqual((o.min_size, o.depth, o.top), (4096, 3, 5))

    def test_hex_and_zero(self):
        o = options.parse(["--min-size", "0x100", "--depth", "0"])
        self.assertEqual((o.min_size, o.depth), (256, 0))

    def test_min_size_fits_the_probes_64_bits(self):
        # the C stages take it: 2^64 made the reader print its usage,
        # which the report took for a damaged recording
        self.assertEqual(options.parse(["--min-size", str(2 ** 64 - 1)])
                         .min_size, 2 ** 64 - 1)
        with self.assertRaises(UsageError) as cm:
            options.parse(["--min-size", str(2 ** 64)])
        self.assertIn("must be below 2^64", str(cm.exception))

    def test_top_zero_rejected(self):
        # --top 0 would silently mean "the default": refuse it.
        with self.assertRaises(UsageError) as cm:
            options.parse(["--top", "0"])
        self.assertIn("must be at least 1", str(cm.exception))

    def test_negative_rejected(self):
        for argv in (["--min-size=-1"], ["--min-size", "-1"], ["--depth=-2"], ["--top=-3"]):
            with self.subTest(argv=argv):
                with self.assertRaises(UsageError) as cm:
                    options.parse(argv)
                if "=" in argv[0]:
                    self.assertIn("must not be negative", str(cm.exception))

    def test_not_a_number(self):
        for argv in (["--min-size", "abc"], ["--depth", "1.5"], ["--top", ""]):
            with self.subTest(argv=argv):
                with self.assertRaises(UsageError) as cm:
                    options.parse(argv)
                self.assertIn("not a whole number", str(cm.exception))

    def test_missing_value(self):
        with self.assertRaises(UsageError):
            options.parse(["--min-size"])


class TagTest(unittest.TestCase):
    def test_repeat_and_commas(self):
        o = options.parse(["--tag", "ast,tokens", "--tag", "7"])
        self.assertEqual(o.tag, ["ast", "tokens", "7"])

    def test_empty_pieces_dropped(self):
        self.assertEqual(options.parse(["--tag", ",ast,,tokens,"]).tag, ["ast", "tokens"])

    def test_single(self):
        self.assertEqual(options.parse(["--tag=ast"]).tag, ["ast"])

    def test_no_tag_at_all_is_a_usage_error(self):
        # --tag "$EMPTY" used to mean every tag, silently
        for arg in ("", ",", ",,"):
            with self.subTest(arg=arg), self.assertRaises(UsageError):
                options.parse(["--tag", arg])


class SkipOptionTest(unittest.TestCase):
    def test_bad_regex(self):
        with self.assertRaises(UsageError) as cm:
            options.parse(["--skip", "(xmalloc"])
        self.assertIn("bad regex", str(cm.exception))

    def test_regexes_python_cannot_compile(self):
        # re raises OverflowError and RecursionError for these, not
        # re.error: a traceback until 2026-11-28
        for regex in ("a{4294967296}", "(" * 5000 + ")" * 5000):
            for option in ("--skip", "--guest-dispatch"):
                with self.subTest(regex=regex[:20], option=option), \
                        self.assertRaises(UsageError) as cm:
                    options.parse([option, regex])
                msg = str(cm.exception)
                self.assertIn("bad regex", msg)
                self.assertLess(len(msg), 300)

    def test_skip_list(self):
        o = options.parse(["--skip", "^xmalloc$", "--skip", "arena_"])
        self.assertEqual(o.skip, ["^xmalloc$", "arena_"])

    def test_skip_regex_joined(self):
        o = options.parse(["--skip", "^xmalloc$", "--skip", "arena_(new|grow)"])
        joined = wrappers.skip_regex(o.skip)
        self.assertEqual(joined, "(?:^xmalloc$)|(?:arena_(new|grow))")
        for name, match in [("xmalloc", True), ("xmalloc2", False), ("my_arena_grow", True),
                            ("arena_free", False)]:
            with self.subTest(name=name):
                self.assertEqual(bool(re.search(joined, name)), match)

    def test_skip_alternation_stays_inside_group(self):
        joined = wrappers.skip_regex(options.parse(["--skip", "^a$|^b$", "--skip", "^c$"]).skip)
        self.assertTrue(re.search(joined, "b"))
        self.assertFalse(re.search(joined, "xbx"))

    def test_no_skip(self):
        self.assertIsNone(wrappers.skip_regex(options.parse([]).skip))


class OutputsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_files_in_existing_dir(self):
        paths = {k: os.path.join(self.tmp.name, "out." + k) for k in ("json", "folded", "svg", "csv")}
        o = options.parse(["--json", paths["json"], "--folded", paths["folded"],
                           "--svg", paths["svg"], "--csv", paths["csv"], "--weight", "count",
                           "--title", "my title"])
        self.assertEqual((o.json, o.folded, o.svg, o.csv, o.weight, o.title),
                         (paths["json"], paths["folded"], paths["svg"], paths["csv"],
                          "count", "my title"))

    def test_relative_path_in_cwd(self):
        self.assertEqual(options.parse(["--json", "out.json"]).json, "out.json")

    def test_missing_output_dir(self):
        for flag in ("--json", "--folded", "--svg", "--csv"):
            missing = os.path.join(self.tmp.name, "no", "such")
            path = os.path.join(missing, "out")
            with self.subTest(flag=flag):
                with self.assertRaises(UsageError) as cm:
                    options.parse([flag, path])
                self.assertEqual(str(cm.exception), "%s %s: directory %s does not exist"
                                 % (flag, path, missing))

    def test_bad_weight(self):
        with self.assertRaises(UsageError):
            options.parse(["--weight", "size"])


class ErrorsTest(unittest.TestCase):
    def test_unknown_option(self):
        with self.assertRaises(UsageError) as cm:
            options.parse(["--bogus"])
        self.assertIn("--bogus", str(cm.exception))

    def test_positional_rejected(self):
        with self.assertRaises(UsageError):
            options.parse(["stray"])

    def test_usage_error_is_one_line(self):
        for argv in (["--skip", "("], ["--min-size", "x"], ["--bogus"]):
            with self.subTest(argv=argv):
                with self.assertRaises(UsageError) as cm:
                    options.parse(argv)
                self.assertNotIn("\n", str(cm.exception))

    def test_help_text_mentions_options(self):
        text = options.parser("allocsites report").format_help()
        self.assertTrue(text.startswith("usage: allocsites report"))
        for flag in ("--json", "--folded", "--svg", "--csv", "--weight", "--tag",
                     "--min-size", "--depth", "--top", "--skip", "--title", "examples:"):
            self.assertIn(flag, text)



class OutputPathsTest(unittest.TestCase):
    """Two outputs never share a path, and none is the recording."""

    def test_two_outputs_one_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            same = os.path.join(tmp, "out")
            with self.assertRaisesRegex(options.UsageError, "--json and --svg "
                                        "name the same file"):
                options.parse(["--json", same, "--svg", same])
            opts = options.parse(["--json", same + ".json", "--svg",
                                  same + ".svg"])
            with self.assertRaisesRegex(options.UsageError, "--svg %s is the "
                                        "recording itself" % (same + ".svg")):
                options.check_not_input(opts, same + ".svg")
            options.check_not_input(opts, same + ".data")

if __name__ == "__main__":
    unittest.main()
