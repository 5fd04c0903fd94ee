"""Every relative link in README.md and docs/*.md names a
file that exists, and the README stays a first page (issue: at most 150
lines, the rest in docs/). No perf needed."""
import glob, os, re, unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")


def documents():
    return ([os.path.join(ROOT, "README.md")] +
            sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))


class DocLinks(unittest.TestCase):
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
