"""Ctrl-C (SIGINT, SIGTERM, SIGHUP) during a report: it stops the report
wherever it is, and leaves no output file behind (issue 31: a Ctrl-C
while allocsites-read ran was counted as one bad event, and the report
of what had been read so far written, exit 3)."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import signal
import tempfile

from allocsites_lib import interrupts
from allocsites_lib.read import native
from allocsites_lib.render import outputs


class NotCountedAsABadEvent(unittest.TestCase):
    """An interrupt while the native reader's stream is read goes through
    (the stream counts nothing as a bad event: the reader tallies)."""

    def test_interrupted_goes_through_the_stream(self):
        import io
        import struct
        stream = native.Stream()

        def interrupted():
            raise interrupts.Interrupted(signal.SIGINT)
        stream.on_block = interrupted
        block = struct.pack("<IIQ", native.B_PROGRESS, 8, 65536)
        with self.assertRaises(interrupts.Interrupted) as got:
            stream.feed(io.BytesIO(block))
        self.assertEqual(got.exception.sig, signal.SIGINT)
        self.assertEqual(stream.events, 65536)

    def test_not_an_exception(self):
        self.assertFalse(issubclass(interrupts.Interrupted, Exception))


class OutputFiles(unittest.TestCase):
    """outputs.Files: temporary files beside the outputs, renamed into
    place at the end, none left when interrupted."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="allocsites-test-")
        self.addCleanup(lambda: [os.unlink(os.path.join(self.dir, n))
                                 for n in os.listdir(self.dir)]
                        and None or os.rmdir(self.dir))

    def write(self, files, names):
        for name in names:
            with files.open(os.path.join(self.dir, name),
                            "wb" if name.endswith(".gz") else "w") as f:
                f.write(b"x" if name.endswith(".gz") else "x")

    def test_renamed_at_the_end(self):
        files = outputs.Files()
        self.write(files, ["a.json", "a.pb.gz"])
        listed = sorted(os.listdir(self.dir))
        self.assertEqual(len(listed), 2)
        self.assertTrue(all(n.startswith((".a.json.", ".a.pb.gz."))
                            and n.endswith(".tmp") for n in listed), listed)
        files.commit()
        self.assertEqual(sorted(os.listdir(self.dir)), ["a.json", "a.pb.gz"])
        with open(os.path.join(self.dir, "a.json")) as f:
            self.assertEqual(f.read(), "x")
        mask = os.umask(0o022)
        os.umask(mask)
        self.assertEqual(os.stat(os.path.join(self.dir, "a.json")).st_mode
                         & 0o777, 0o666 & ~mask)

    def test_a_signal_pending_at_the_end_renames_nothing(self):
        files = outputs.Files()
        self.write(files, ["a.json", "a.svg"])
        with self.assertRaises(interrupts.Interrupted):
            try:
                with interrupts.Raised():
                    old = interrupts.block()
                    os.kill(os.getpid(), signal.SIGINT)   # held pending
                    self.assertTrue(interrupts.pending())
                    files.commit()
            except BaseException:
                files.discard()
                raise
        self.assertEqual(os.listdir(self.dir), [])
        self.assertEqual(signal.pthread_sigmask(signal.SIG_BLOCK, []), old)

    def test_a_directory_not_writable_names_the_output(self):
        files = outputs.Files()
        with self.assertRaises(OSError) as got:
            files.open(os.path.join(self.dir, "no", "a.json"), "w")
        self.assertEqual(got.exception.filename,
                         os.path.join(self.dir, "no", "a.json"))


if __name__ == "__main__":
    unittest.main()
