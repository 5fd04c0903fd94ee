"""What perf prints on stderr while the script runs, kept and read.

perf script tells a script nothing when it cannot read part of a
recording: it prints "failed to process type: 81" or "Couldn't decompress
data" on stderr, stops reading, and still calls trace_end, so the report
would look whole. The entry script therefore sends file descriptor 2 to
a temporary file while perf reads (perf's messages and the script's
own), then puts it back, copies what was kept to the real stderr, and
looks for read errors in it. A file, not a pipe: nothing in perf's
process would drain a pipe, and a full one would block perf for good.
"""

import os
import re
import tempfile

# perf 6.1's messages for a recording it could not read to the end
# (damaged records, a cut zstd frame, a file cut short).
READ_ERROR_RE = re.compile(
    r"failed to process|decompress|corrupt|truncat|incompatible file format|"
    r"failed to read|can't read|cannot read|unexpected end|"
    r"properly terminated|data size field is 0", re.IGNORECASE)


# perf's unwinder on one sample's stack ("unwind: can't read reg 6" when
# perf record --user-regs left the register out, "unwind: no map for 9"):
# that stack ends there, the recording is read on.
UNWIND_RE = re.compile(r"\s*unwind: ")


def read_errors(lines):
    """The lines of perf's stderr that say part of the file was not read."""
    return [line.strip() for line in lines
            if READ_ERROR_RE.search(line) and not UNWIND_RE.match(line)]


class Capture:
    """Sends fd 2 to a temporary file until finish()."""

    def __init__(self):
        self._saved = os.dup(2)
        self._file = tempfile.TemporaryFile()
        os.dup2(self._file.fileno(), 2)

    def finish(self):
        """Puts fd 2 back, copies what was kept there, returns its lines."""
        if self._file is None:
            return []
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        data = self._file.read()
        self._file.close()
        self._file = None
        if data:
            os.write(2, data)
        return data.decode("utf-8", "replace").splitlines()
