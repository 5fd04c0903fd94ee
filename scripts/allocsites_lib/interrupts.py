"""SIGINT, SIGTERM or SIGHUP during a report, raised as Interrupted.

Raised so that a reader stops its perf processes and removes its files
first. At the top of the package, as errors.py is: the readers (read/),
the outputs' last step (render/outputs.py holds the signals while it
renames the files into place) and the command (cli/) share it.
"""

import signal


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP during a report (while a reader ran, or
    while the report was made and written). A BaseException, as
    KeyboardInterrupt is: the handler raises it wherever the report is,
    and the `except Exception` that counts a bad event and goes on
    (native.py, hotpath.py) must not take it for one -- it did, and a
    Ctrl-C while allocsites-read ran became a report of what was read
    so far, "incomplete", exit 3 (issue 31)."""

    def __init__(self, sig):
        BaseException.__init__(self, sig)
        self.sig = sig


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def raise_interrupted(sig, _frame):
    """The handler a reader installs for STOP_SIGNALS."""
    raise Interrupted(sig)


def block():
    """Holds STOP_SIGNALS (they stay pending); returns the mask to give
    back to signal.pthread_sigmask(signal.SIG_SETMASK, mask)."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def pending():
    """True when a STOP_SIGNAL is held pending (see block)."""
    return bool(set(STOP_SIGNALS) & signal.sigpending())


class Raised:
    """with Raised(): STOP_SIGNALS raise Interrupted inside; on the way
    out the handlers and the signal mask are given back as they were (a
    signal held pending meanwhile is then delivered to the old handler:
    Python's SIGINT handler raises KeyboardInterrupt)."""

    active = 0   # Raised blocks entered and not left

    def __enter__(self):
        Raised.active += 1
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        self.saved = {}
        for sig in STOP_SIGNALS:
            self.saved[sig] = signal.signal(sig, raise_interrupted)
        return self

    def __exit__(self, *exc):
        Raised.active -= 1
        for sig, old in self.saved.items():
            signal.signal(sig, old)
        signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)
        return False
