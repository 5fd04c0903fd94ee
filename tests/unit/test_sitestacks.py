"""--stacks SITE: which stacks a SITE selects, their order and their
rendering. No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from allocsites_lib.render import jsonout, sitestacks
from allocsites_lib.analyze.fold import Profile, Stack
from allocsites_lib.analyze.symbolize import Frame


def fr(function, path, line):
    return Frame(function, path, line, "/bin/p", False)


PARSE = fr("parse_primary", "/src/cc/parser.c", 127)
LEX = fr("lex", "/src/cc/lexer.c", 32)
STMT = fr("parse_stmt", "/src/cc/parser.c", 200)
EXPR = fr("parse_expr", "/src/cc/parser.c", 150)
MAIN = fr("main", "/src/cc/main.c", 10)
STACKS = [Stack((PARSE, STMT, MAIN), 30, 3000, {"ast": 3000}),
          Stack((PARSE, EXPR, STMT, MAIN), 50, 5000, {"ast": 5000}),
          Stack((LEX, MAIN), 100, 1000, {"tokens": 1000})]
PROFILE = Profile([], STACKS, 180, 9000, 0)


class SelectTest(unittest.TestCase):

    def picked(self, site, top=None):
        shown, n, total = sitestacks.stacks_of(PROFILE, site, top)
        return [s.frames[1].function for s in shown], n, total

    def test_by_function_file_line_and_tag(self):
        both = (["parse_expr", "parse_stmt"], 2, 8000)   # most bytes first
        self.assertEqual(self.picked("parse_primary"), both)
        self.assertEqual(self.picked("parser.c:127"), both)
        self.assertEqual(self.picked("cc/parser.c:127"), both)
        self.assertEqual(self.picked("/src/cc/parser.c:127"), both)
        self.assertEqual(self.picked("ast"), both)
        self.assertEqual(self.picked("tokens"), (["main"], 1, 1000))

    def test_no_partial_matches(self):
        for site in ("arser.c:127", "parser.c:12", "parser.c", "parse",
                     "parser.c:x", ":127", "main"):
            with self.subTest(site=site):
                self.assertEqual(self.picked(site)[1], 0)

    def test_top(self):
        self.assertEqual(self.picked("ast", top=1), (["parse_expr"], 2, 8000))


class RenderTest(unittest.TestCase):

    def test_backtrace(self):
        text = sitestacks.render_stacks(PROFILE, "parser.c:127", 1,
                                        relative_to="/src")
        self.assertEqual(text, (
            "stacks reaching parser.c:127: 1 of 2 shown, 8000 bytes in all\n"
            "#1  5000 bytes (55.6% of all), 50 allocations\n"
            "      parse_primary  cc/parser.c:127\n"
            "      parse_expr  cc/parser.c:150\n"
            "      parse_stmt  cc/parser.c:200\n"
            "      main  cc/main.c:10\n"))

    def test_nothing_matched_says_so(self):
        self.assertIn("none", sitestacks.render_stacks(PROFILE, "nope"))

    def test_a_callers_line_says_it_is_not_a_site(self):
        # parser.c:200 is parse_stmt's call, in the first two stacks
        self.assertEqual(
            sitestacks.render_stacks(PROFILE, "parser.c:200"),
            "stacks reaching parser.c:200: none: that line is not an "
            "allocation site but a caller's, in 2 stacks (8000 bytes) that "
            "reach parse_primary parser.c:127: give --stacks one of those\n")
        self.assertIn("reach parse_primary parser.c:127, lex lexer.c:32:",
                      sitestacks.render_stacks(PROFILE, "main.c:10"))

    def test_json(self):
        doc = sitestacks.stacks_json(PROFILE, "ast", 10, jsonout.frame_json)
        self.assertEqual((doc["site"], doc["stacks_total"], doc["bytes"]),
                         ("ast", 2, 8000))
        self.assertEqual([(s["count"], s["bytes"], s["share"])
                          for s in doc["stacks"]],
                         [(50, 5000, 55.5556), (30, 3000, 33.3333)])
        self.assertEqual(doc["stacks"][0]["frames"][0]["line"], 127)


if __name__ == "__main__":
    unittest.main()
