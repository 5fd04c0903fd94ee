"""SIGINT, SIGTERM or SIGHUP during a report, raised as Interrupted, so
that a reader stops its perf processes and removes its files first.
"""

import signal


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP while a reader ran (the perf script
    workers or allocsites-read)."""

    def __init__(self, sig):
        Exception.__init__(self, sig)
        self.sig = sig


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def raise_interrupted(sig, _frame):
    """The handler a reader installs for STOP_SIGNALS."""
    raise Interrupted(sig)
