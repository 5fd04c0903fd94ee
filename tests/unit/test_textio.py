"""textio.py: text written out whatever its characters, without perf."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import io

from allocsites_lib import textio


class TextioTest(unittest.TestCase):
    def test_path_bytes_go_out_as_they_were(self):
        path = os.fsdecode(b"/tmp/\xff\xfe/p")
        self.assertEqual(path.encode("utf-8", textio.ERRORS),
                         b"/tmp/\xff\xfe/p")

    def test_other_lone_surrogates_as_escapes(self):
        self.assertEqual("a\ud800b\udfffc".encode("utf-8", textio.ERRORS),
                         b"a\\ud800b\\udfffc")

    def test_a_stream_reconfigured_writes_them(self):
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        textio.reconfigure(out)
        out.write(os.fsdecode(b"x\xff") + "\ud800\n")
        out.flush()
        self.assertEqual(out.buffer.getvalue(), b"x\xff\\ud800\n")
        textio.reconfigure(io.StringIO())   # no reconfigure: left alone

    def test_utf8_for_formats_that_must_be(self):
        self.assertEqual(textio.utf8("plain \u00e9"), "plain \u00e9".encode())
        self.assertEqual(textio.utf8(os.fsdecode(b"x\xff") + "\ud800"),
                         "x\ufffd\\ud800".encode())


if __name__ == "__main__":
    unittest.main()
