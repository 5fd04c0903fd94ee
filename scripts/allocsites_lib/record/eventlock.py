"""The flock held on uprobe_events while a run changes events.

The lock held while a run creates or deletes uprobe events (an flock on
tracefs' uprobe_events).
"""

import fcntl
import os
import time

from .errors import RecordError
from .helpercmd import COMMAND_TIMEOUT


class EventLock:
    """Held while this run creates or deletes uprobe events.

    perf probe -f picks the next free name (alloc_1, alloc_2, ...) by
    reading the existing events, then writes the new one: two runs at the
    same moment pick the same name, and one fails with "Failed to write
    event: File exists" (3 of 8 runs started together). The lock is an
    flock on tracefs' uprobe_events itself, which every run has and which
    nothing has to clean up; it is released by the kernel if the run dies.
    Recordings themselves run in parallel."""

    def __init__(self, tracefs_path, timeout=COMMAND_TIMEOUT):
        self.path = os.path.join(tracefs_path, "uprobe_events")
        self.timeout = timeout
        self.fd = None

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_RDONLY)
        except OSError as e:
            raise RecordError("cannot open %s: %s" % (self.path, e.strerror))
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except OSError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise RecordError("another allocsites has held %s for "
                                      "%d s" % (self.path, self.timeout))
                time.sleep(0.02)

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)   # releases the lock
            self.fd = None
        return False
