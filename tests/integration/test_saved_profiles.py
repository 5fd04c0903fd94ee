"""The profile document under real perf: for recordings the other tests
make (threads, phases and frees, sampled with frees, wrappers, a language
runtime), every output `allocsites report --from` renders from the saved
document (--save-profile) is byte for byte the output of the report of
the recording, the table and the warnings too; and allocsites diff reads
the document as the recording's JSON report.
(tests/unit/test_profile_document.py checks the outputs against the code
before the document.)"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ProfileTest, allocsites, program  # noqa: E402

# every file output, by its name in the report's directory
FILES = (("--json", "out.json"), ("--csv", "out.csv"),
         ("--folded", "out.folded"), ("--svg", "out.svg"),
         ("--pprof", "out.pb.gz"), ("--timeline", "timeline.svg"),
         ("--save-profile", "profile.json"))
OUTPUT_ARGS = [a for flag, name in FILES for a in (flag, name)]


class FromDocument(ProfileTest):

    def record(self, prog, args=(), record_args=()):
        data = os.path.join(self.tmp, "run.data")
        rec = allocsites(["record", "-o", data] + list(record_args) +
                         ["--", prog] + list(args))
        self.assertEqual(rec.returncode, 0, rec.stderr)
        return data

    def outputs(self, where, args):
        """allocsites report args with every file output, run in where:
        ({name: bytes} with "stdout" and "stderr", status)."""
        os.makedirs(where)
        run = allocsites(["report"] + list(args) + OUTPUT_ARGS, cwd=where)
        self.assertNotIn("Traceback", run.stderr)
        got = {"stdout": run.stdout, "stderr": run.stderr}
        for _, name in FILES:
            path = os.path.join(where, name)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    got[name] = f.read()
        return got, run.returncode

    def check(self, data, made=(), rendered=()):
        """The outputs of data's report (made: the options that make the
        profile, rendered: the rest) and those rendered from a document
        saved with only the made options: the same bytes."""
        saved = os.path.join(self.tmp, "saved")
        os.makedirs(saved)
        doc = os.path.join(saved, "p.json")
        run = allocsites(["report", "-i", data, "--save-profile", doc] +
                         list(made))
        self.assertIn(run.returncode, (0, 2, 3), run.stderr)
        want, status = self.outputs(os.path.join(self.tmp, "direct"),
                                    ["-i", data] + list(made) +
                                    list(rendered))
        got, from_status = self.outputs(os.path.join(self.tmp, "from"),
                                        ["--from", doc] + list(rendered))
        self.assertEqual(sorted(got), sorted(want))
        for name in want:
            self.assertEqual(got[name], want[name], "%s differs" % name)
        self.assertEqual(from_status, status)
        return want

    def test_threads(self):
        got = self.check(self.record(program("t_threads")), (),
                         ("--top", "3", "--sort", "count"))
        self.assertIn("out.pb.gz", got)

    def test_phases_with_frees(self):
        data = self.record(program("t_phases"))
        got = self.check(data, (), ("--weight", "peak", "--title", "T"))
        self.assertIn("timeline.svg", got)
        self.check_again(data, ("--phase", "scan", "--skip", "^xmalloc$"),
                         ("--stacks", "main"))

    def check_again(self, data, made, rendered):
        for sub in ("saved", "direct", "from"):
            path = os.path.join(self.tmp, sub)
            for name in os.listdir(path):
                os.unlink(os.path.join(path, name))
            os.rmdir(path)
        self.check(data, made, rendered)

    def test_sampled_with_frees(self):
        self.check(self.record(program("t_sampled_live"), ["2"],
                               ["--sample", "64k"]),
                   ("--tag", "1", "--min-size", "16"), ("--top", "2"))

    def test_wrappers_and_depth(self):
        self.check(self.record(program("t_wrap")), ("--depth", "3"),
                   ("--weight", "count"))

    def test_language_runtime_by_guest_location(self):
        from test_guest import N, SCRIPT, STACK, lua_guest
        self.check(self.record(lua_guest(), [SCRIPT, str(N)],
                               ["--stack-size", STACK]),
                   ("--guest",), ("--top", "5"))

    def test_diff_reads_the_document(self):
        data = self.record(program("t_basic"))
        got = self.check(data)
        js = os.path.join(self.tmp, "direct", "out.json")
        doc = os.path.join(self.tmp, "direct", "profile.json")
        by_json = allocsites(["diff", js, data])
        by_doc = allocsites(["diff", doc, data])
        self.assertEqual(by_json.returncode, 0, by_json.stderr)
        self.assertEqual(by_doc.stdout.replace(doc, "BASE"),
                         by_json.stdout.replace(js, "BASE"))
        self.assertIn("out.json", got)


if __name__ == "__main__":
    unittest.main()
