"""The report worker's side of scripts/dlfilter/allocsites_mailbox.c.

perf loads that filter into its own process (`perf script --dlfilter`);
it takes the events without a call graph (frees, phases, rt:exit) past
perf's Python glue into a buffer, and this reads the buffer through
ctypes, from the handler perf calls for the next event, so the tally
still gets every event in time order (docs/design.md, "Report: parallel
workers"). The filter starts in VERIFY: perf hands the first plain event
over as before and verify() compares it with the filter's copy; only if
they agree does the filter buffer the rest.
"""

import ctypes
import os

WORDS = 11          # time, tid, kind, a..h: fields_of's record
VERIFY, ON, OFF = 0, 1, 2
_FIELDS = ("kind", "a", "b", "c", "d", "e", "f", "g", "h")


def library_path(entry_script, build=None):
    """The built filter: next to the entry script (installed) or in the
    build directory (a checkout); None if there is none."""
    here = os.path.dirname(os.path.abspath(entry_script))
    candidates = [os.path.join(here, "allocsites_mailbox.so")]
    build = build or os.environ.get("BUILD") or \
        os.path.join(os.path.dirname(here), "build")
    candidates.append(os.path.join(build, "allocsites_mailbox.so"))
    for path in candidates:
        if os.path.isfile(path):
            return os.path.abspath(path)
    return None


class Mailbox:
    """The filter's buffer in this process; OSError if perf did not load
    the filter at path, ValueError if its records are not WORDS long."""

    def __init__(self, path):
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        # The buffer's size, as the filter was built with it.
        self.cap, words = (ctypes.c_uint64 * 2).in_dll(
            lib, "allocsites_mailbox_layout")
        if words != WORDS:
            raise ValueError("a mailbox of %d-word records" % words)
        self._n = ctypes.c_uint64.in_dll(lib, "allocsites_mailbox_n")
        self._state = ctypes.c_uint64.in_dll(lib, "allocsites_mailbox_state")
        self._check = (ctypes.c_uint64 * WORDS).in_dll(
            lib, "allocsites_mailbox_check")
        self._buf = (ctypes.c_uint64 * (self.cap * WORDS)).in_dll(
            lib, "allocsites_mailbox")
        self.event_name = None   # the plain event's name, from verify()

    def pending(self):
        return self._n.value

    def take(self):
        """The buffered records, (time, tid, kind, a, ..., h) each, in
        the order perf read them; empties the buffer."""
        n = self._n.value
        if not n:
            return []
        words = self._buf[:n * WORDS]
        self._n.value = 0
        it = iter(words)
        return list(zip(*[it] * WORDS))

    def state(self):
        """VERIFY, ON or OFF."""
        return self._state.value

    def verifying(self):
        return self._state.value == VERIFY

    def verify(self, event_name, fields):
        """perf handed over the first plain event: turn the buffer on if
        the filter read it as perf did, off for good if not."""
        try:
            want = [fields["common_s"] * 1000000000 + fields["common_ns"],
                    fields["common_pid"]] + [fields[f] for f in _FIELDS]
            ok = [v & ((1 << 64) - 1) for v in want] == list(self._check)
        except Exception:  # noqa: BLE001 - anything odd: off
            ok = False
        self._state.value = ON if ok else OFF
        if ok:
            self.event_name = event_name
        return ok


def fields_of(record):
    """A record as perf's field dict for the plain event (the general
    path's input)."""
    time, tid = record[0], record[1]
    fields = {"common_pid": tid, "common_s": time // 1000000000,
              "common_ns": time % 1000000000, "common_callchain": []}
    fields.update(zip(_FIELDS, record[2:]))
    return fields
