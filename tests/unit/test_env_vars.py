"""Every environment variable the product reads is in docs/usage.md,
"Environment variables" (issue 33: every variable documented, or gone
from the code). Read means getenv("X") in C, environ.get("X") or
environ["X"] in Python, or an "ALLOCSITES_..." string in scripts/ (a
name kept in a constant). Variables of the tests and the benchmarks
named ALLOCSITES_* are held to the same table. No perf needed."""
import os, re, unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
READ_RE = re.compile(
    r'(?:getenv\(|environ\.get\(|environ\[)\s*"([A-Za-z_][A-Za-z0-9_]*)"')
LITERAL_RE = re.compile(r'"(ALLOCSITES_[A-Z0-9_]+)"')
# The system's own variables, documented by the system.
STANDARD = {"PATH", "TMPDIR", "HOME", "TERM", "LANG", "LC_ALL"}


def files(top, exts=(".py", ".c", ".h")):
    for base, dirs, names in os.walk(os.path.join(ROOT, top)):
        for name in names:
            if name.endswith(exts) or name == "allocsites":
                yield os.path.join(base, name)


def read_variables(tops, only_ours=False):
    """{name: first file that reads it} over the files under tops."""
    found = {}
    for top in tops:
        for path in files(top):
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            names = set(READ_RE.findall(text))
            if top in ("scripts", "include"):
                names |= set(LITERAL_RE.findall(text))
            for name in names:
                if only_ours and not name.startswith("ALLOCSITES_"):
                    continue
                found.setdefault(name, os.path.relpath(path, ROOT))
    return found


def documented():
    with open(os.path.join(ROOT, "docs", "usage.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n## Environment variables\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", section,
                          re.M))


class EnvironmentVariables(unittest.TestCase):
    def test_the_products_variables_are_in_usage(self):
        table = documented()
        missing = ["%s (read in %s)" % (name, path) for name, path in
                   sorted(read_variables(("scripts", "include")).items())
                   if name not in table and name not in STANDARD]
        self.assertEqual(missing, [], "add them to docs/usage.md, "
                         "\"Environment variables\", or stop reading them")

    def test_the_tests_and_benchmarks_allocsites_variables_too(self):
        table = documented()
        missing = ["%s (read in %s)" % (name, path) for name, path in
                   sorted(read_variables(("tests", "bench"), True).items())
                   if name not in table]
        self.assertEqual(missing, [])

    def test_the_finder_sees_a_read_split_over_lines(self):
        text = 'x = os.environ.get(\n    "ALLOCSITES_WAKE_MS")\n' \
               'v = getenv("RT_SAMPLE_SEED");'
        self.assertEqual(READ_RE.findall(text),
                         ["ALLOCSITES_WAKE_MS", "RT_SAMPLE_SEED"])

    def test_the_table_names_each_variable_once(self):
        with open(os.path.join(ROOT, "docs", "usage.md"),
                  encoding="utf-8") as f:
            rows = re.findall(r"^\| `([A-Za-z_0-9]+)` \|", f.read(), re.M)
        self.assertEqual(len(rows), len(set(rows)))


if __name__ == "__main__":
    unittest.main()
