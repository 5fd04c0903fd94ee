"""Every relative link in README.md and docs/*.md names a
file that exists, every 'FILE.md, "Section"' reference anywhere in the
tree names a heading of that file, and the README stays a first page
(issue: at most 150 lines, the rest in docs/). No perf needed."""
import glob, os, re, unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")


def documents():
    return ([os.path.join(ROOT, "README.md")] +
            sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))


# A section reference: 'design.md, "Completeness"', 'docs/design.md,
# "Loss"' or '[design.md](design.md), "Tail calls"', the quoted name
# possibly wrapped over comment lines. The name must be a heading of that
# file or the start of one ("Report throughput" for "Report throughput:
# `bench/report_throughput.py`").
SECTION_REF_RE = re.compile(
    r'(?:\]\(([\w./-]+\.md)(?:#[^)]*)?\)|([\w./-]*\.md))\]?,\s*"([^"]+)"')
SOURCE_DIRS = ("scripts", "include", "tests", "bench", "docs", "probes")
SOURCE_EXTS = (".py", ".c", ".h", ".md", ".lua", ".d", ".sh", ".1", ".inc")
# A line break inside a comment: the next line's indent and comment marker.
WRAP_RE = re.compile(r"\n[ \t]*(?:#+|\*|//)?[ \t]*")


def sources():
    yield os.path.join(ROOT, "README.md")
    yield os.path.join(ROOT, "Makefile")
    for top in SOURCE_DIRS:
        for base, dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name == os.path.basename(__file__):
                    continue        # its own examples
                if name.endswith(SOURCE_EXTS) or name.startswith("Makefile"):
                    yield os.path.join(base, name)


def headings(path):
    with open(path, encoding="utf-8") as f:
        return [line.lstrip("#").strip() for line in f
                if re.match(r"#{1,6} ", line)]


def resolve(source, name):
    """The Markdown file a reference names: relative to the citing file
    for a document, else to docs/ (code says 'design.md' or
    'docs/design.md'), else to the tree's root."""
    bases = [os.path.dirname(source), os.path.join(ROOT, "docs"), ROOT]
    for base in bases:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    return None


def section_refs(text):
    """(file, section) for every section reference in text."""
    flat = WRAP_RE.sub(" ", text)
    for link, name, section in SECTION_REF_RE.findall(flat):
        yield link or name, " ".join(section.split())


class DocLinks(unittest.TestCase):
    def test_section_references_name_headings(self):
        broken = []
        for source in sources():
            try:
                with open(source, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            for name, section in section_refs(text):
                path = resolve(source, name)
                if path is None:
                    continue        # not one of the tree's documents
                if not any(h == section or h.startswith(section)
                           for h in headings(path)):
                    broken.append('%s: %s, "%s"' % (
                        os.path.relpath(source, ROOT), name, section))
        self.assertEqual(broken, [])

    def test_section_refs_are_found_across_comment_lines(self):
        text = ('# see docs/design.md, "Why the two\n'
                '# per-event loops"\n'
                ' * (design.md, "Loss") and\n'
                '[usage.md](usage.md#x), "Exit statuses"\n')
        self.assertEqual(list(section_refs(text)), [
            ("docs/design.md", "Why the two per-event loops"),
            ("design.md", "Loss"), ("usage.md", "Exit statuses")])

    def test_relative_links_exist(self):
        broken = []
        for doc in documents():
            with open(doc, encoding="utf-8") as f:
                text = f.read()
            for target in LINK_RE.findall(text):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                if not os.path.exists(os.path.join(os.path.dirname(doc), path)):
                    broken.append("%s: %s" % (os.path.relpath(doc, ROOT), target))
        self.assertEqual(broken, [])

    def test_the_readme_indexes_every_doc(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for doc in glob.glob(os.path.join(ROOT, "docs", "*.md")):
            name = "docs/" + os.path.basename(doc)
            self.assertIn("](%s)" % name, readme, name)

    def test_the_readme_is_a_first_page(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            self.assertLessEqual(len(f.read().splitlines()), 150)


if __name__ == "__main__":
    unittest.main()
