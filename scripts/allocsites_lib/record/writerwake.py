"""Pings perf record's control fd so its writer drains the rings early.

Wakes perf record's writer every few milliseconds, through its control
fd, so it drains the rings continuously instead of at half-ring wakeups.

perf record leaves the kernel's default wakeup watermark: a ring wakes
the writer only when it is half full (there is no perf knob for it;
--no-buffering wakes it on every event: a wakeup per allocation).
So a writer that has caught up sleeps while 64 MiB pile up, and when it
is then held up (its CPU taken by the hypervisor, a page fault storm, a
compression stretch), only the other half of the ring is left before
events are lost. perf's `--control` fd is polled with the rings: a
"ping" written there wakes the loop, which then reads every ring (perf
6.1 builtin-record.c: each pass of the loop drains them before it
handles the command). Pinged every WAKE_MS, a ring holds about that much
when a stall begins, not up to half of it: the demo rode out 30 ms stalls
of perf that cost perf alone events in half the runs
(docs/notes/2026-design-history.md, "How long the writer may
stall"). Not twice as long as
without: perf frees a ring's space only once it has compressed all it
read, so after a stall the ring must also hold what comes while the
backlog is compressed.

The pings come from a thread of this process; perf's reply to them goes
nowhere (no ack fd). ALLOCSITES_WAKE_MS=0 in the environment turns it
off, for comparisons.

perf is given the pipe as `--control fifo:/proc/PID/fd/N`, not as an
inherited `fd:N`: perf opens a FIFO itself with O_CLOEXEC (evlist.c,
evlist__parse_control_fifo), and /proc/PID/fd/N of a pipe opens like
one, so the program perf starts does not inherit a stray descriptor, and
there is no path on disk to clean up. This process keeps its read end
open until the end, so /proc/PID/fd/N exists whenever perf gets to it.
"""

import errno
import fcntl
import math
import os
import threading

WAKE_MS = 2.0
PING = b"ping\n"


def interval_ms(environ=None):
    """The ping interval in ms, or 0 (off): ALLOCSITES_WAKE_MS, if it is a
    finite number >= 0, else WAKE_MS."""
    value = (environ if environ is not None else os.environ).get(
        "ALLOCSITES_WAKE_MS")
    if value is None:
        return WAKE_MS
    try:
        ms = float(value)
    except ValueError:
        return WAKE_MS
    return ms if math.isfinite(ms) and ms >= 0 else WAKE_MS


class Waker:
    """with Waker() as w: perf gets w.perf_args(); after perf has
    started, w.start(); the with block's end stops the pings and closes
    the pipe."""

    def __init__(self, ms=None):
        self.ms = interval_ms() if ms is None else ms
        self.read_fd = self.write_fd = None
        self.pings = 0
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        if self.ms:
            self.read_fd, self.write_fd = os.pipe()
            # Never block on a full pipe (perf stopped, or reading slowly):
            # a ping that does not fit is not needed, one is pending.
            flags = fcntl.fcntl(self.write_fd, fcntl.F_GETFL)
            fcntl.fcntl(self.write_fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        return self

    def control_path(self):
        """What perf opens as its control FIFO, or None when off."""
        if self.read_fd is None:
            return None
        return "/proc/%d/fd/%d" % (os.getpid(), self.read_fd)

    def perf_args(self):
        path = self.control_path()
        return [] if path is None else ["--control", "fifo:" + path]

    def start(self):
        """Starts the pings."""
        if self.write_fd is None:
            return
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="perf-writer-wake")
        self._thread.start()

    def _run(self):
        wait = self.ms / 1000.0
        while not self._stop.wait(wait):
            try:
                os.write(self.write_fd, PING)
                self.pings += 1
            except OSError as e:
                if e.errno != errno.EAGAIN:   # not a full pipe: give up
                    return

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for fd in (self.read_fd, self.write_fd):
            if fd is not None:
                os.close(fd)
        self.read_fd = self.write_fd = None
        return False
