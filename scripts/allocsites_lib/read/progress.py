"""The report's progress line on a terminal, for both readers.

The report's progress line on a terminal: the share of the samples read
(both readers: the perf script workers and the native reader).
"""

import time

PROGRESS_INTERVAL = 0.25    # seconds between progress lines


def progress_text(done, total):
    """'allocsites: report 45% (96000 of 213431 samples)'."""
    if total <= 0:
        return "allocsites: report running"
    done = max(0, min(done, total))
    return "allocsites: report %d%% (%d of %d samples)" % (
        100 * done // total, done, total)


class Progress:
    """One line on a terminal, rewritten in place (\\r) at most every
    `interval` seconds and erased by clear(). Silent unless the stream is
    a terminal."""

    def __init__(self, stream, interval=PROGRESS_INTERVAL,
                 clock=time.monotonic, enabled=None):
        self.stream = stream
        self.interval = interval
        self.clock = clock
        if enabled is None:
            try:
                enabled = stream.isatty()
            except (AttributeError, ValueError):
                enabled = False
        self.enabled = enabled
        self.last_time = None
        self.last_text = None
        self.width = 0

    def show(self, text):
        if not self.enabled or text == self.last_text:
            return
        now = self.clock()
        if self.last_time is not None and now - self.last_time < self.interval:
            return
        self.last_time = now
        self.last_text = text
        pad = max(0, self.width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self.width = len(text)

    def clear(self):
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
            self.last_text = None
