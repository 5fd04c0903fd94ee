"""Every option the command's --help lists is documented (docs/usage.md
or docs/output-formats.md), and every option the README and
docs/usage.md name for the command exists. No perf needed."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import argparse
import re

from allocsites_lib.cli import parsers, options

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OPTION_RE = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def help_options():
    """The long options the three forms' --help show (argparse, hidden ones
    left out), and the perf-script entry's."""
    found = {"--help"}
    for p in (parsers.record_parser(), parsers.report_parser(),
              parsers.profile_parser(), parsers.diff_parser(),
              options.parser()):
        for action in p._actions:
            if action.help != argparse.SUPPRESS:
                found.update(o for o in action.option_strings
                             if o.startswith("--"))
    return found


class DocumentedOptions(unittest.TestCase):
    def test_every_help_option_is_documented(self):
        docs = read("docs/usage.md") + read("docs/output-formats.md")
        documented = set(OPTION_RE.findall(docs))
        self.assertEqual(sorted(help_options() - documented), [])

    def test_the_man_page_lists_every_option(self):
        man = read("docs/man/allocsites.1").replace("\\-", "-")
        self.assertEqual(sorted(help_options() - {"--help", "--worker-out"} -
                                set(OPTION_RE.findall(man))), [])

    def test_every_option_in_the_readme_exists(self):
        readme = read("README.md")
        self.assertEqual(sorted(set(OPTION_RE.findall(readme)) - help_options()), [])

    def test_every_option_in_the_usage_exists(self):
        # Up to the plain-perf section, whose options are perf's.
        usage = read("docs/usage.md")
        usage = usage[:usage.index("## The same with plain perf")]
        # --version is answered before any parser (command.dispatch).
        self.assertEqual(sorted(set(OPTION_RE.findall(usage)) - help_options()
                                - {"--version"}), [])


if __name__ == "__main__":
    unittest.main()
