"""writerwake.py without perf: the control-fd arguments, the interval
from the environment, and the pings a reader of the pipe receives."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import select
import time

from allocsites_lib.record import perfcommand, writerwake


class Interval(unittest.TestCase):
    def test_default(self):
        self.assertEqual(writerwake.interval_ms({}), writerwake.WAKE_MS)

    def test_from_the_environment(self):
        self.assertEqual(writerwake.interval_ms({"ALLOCSITES_WAKE_MS": "5"}), 5.0)
        self.assertEqual(writerwake.interval_ms({"ALLOCSITES_WAKE_MS": "0"}), 0.0)

    def test_nonsense_keeps_the_default(self):
        for value in ("", "x", "-3", "nan", "inf"):
            with self.subTest(value=value):
                ms = writerwake.interval_ms({"ALLOCSITES_WAKE_MS": value})
                self.assertEqual(ms, writerwake.WAKE_MS)


class Pings(unittest.TestCase):
    def test_off_adds_nothing(self):
        with writerwake.Waker(ms=0) as w:
            self.assertEqual((w.perf_args(), w.control_path()), ([], None))
            w.start()
        self.assertEqual(w.pings, 0)

    def test_perf_reads_pings_from_the_fifo_it_is_given(self):
        with writerwake.Waker(ms=1) as w:
            args = w.perf_args()
            self.assertEqual(args, ["--control", "fifo:" + w.control_path()])
            # What perf does with it (evlist__parse_control_fifo).
            perf = os.open(w.control_path(),
                           os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            self.addCleanup(os.close, perf)
            w.start()
            got = b""
            deadline = time.monotonic() + 10
            while got.count(b"ping\n") < 3:
                self.assertLess(time.monotonic(), deadline)
                if select.select([perf], [], [], 1)[0]:
                    got += os.read(perf, 4096)
        # Every command is one whole line perf's parser takes.
        self.assertEqual(got.replace(b"ping\n", b""), b"")
        self.assertGreaterEqual(w.pings, 3)
        self.assertIsNone(w.control_path())   # closed at the end

    def test_a_full_pipe_never_blocks(self):
        with writerwake.Waker(ms=0.01) as w:
            w.start()
            time.sleep(0.5)      # nobody reads: the pipe fills
        self.assertGreater(w.pings, 0)   # and the with block still ended

    def test_record_command_passes_the_control_fd(self):
        cmd = perfcommand.record_command("perf", "o", ["sdt_rt:alloc_1"], [], 8192,
                                      ["./prog"], control=["--control", "fd:7"])
        self.assertEqual(cmd[cmd.index("--control"):cmd.index("--control") + 2],
                         ["--control", "fd:7"])
        self.assertLess(cmd.index("--control"), cmd.index("--"))


if __name__ == "__main__":
    unittest.main()
