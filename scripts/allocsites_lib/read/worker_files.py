"""The files between the report and its perf script workers.

The files between the report and its perf script workers: each worker's
tally (pickled), the thread map it is given, its progress.

The parent writes the thread map (write_pids) before it starts the
workers; each worker writes the time of its latest sample to its progress
file every PROGRESS_EVERY events (ProgressWriter), which the parent reads
for its progress line (read_progress), and its Tally at trace_end instead
of a report (write_tally), which the parent merges (read_tally,
workers.collect).
"""

import os
import pickle

TALLY_VERSION = 1
PROGRESS_EVERY = 4096       # events between a worker's progress writes


def write_tally(path, tally, handler_errors, perf_inlines, mailbox=None):
    """The worker's result, written to path.tmp then renamed, so the
    parent never reads half a file. mailbox: the dlfilter's state at the
    end (mailbox.py; None without it), for tests."""
    payload = {"version": TALLY_VERSION, "tally": tally,
               "handler_errors": handler_errors,
               "perf_inlines": perf_inlines, "mailbox": mailbox}
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.rename(tmp, path)


def read_tally(path):
    """(tally, handler_errors, perf_inlines) from write_tally's file;
    raises OSError or ValueError."""
    with open(path, "rb") as f:
        try:
            payload = pickle.load(f)
        except Exception as e:  # noqa: BLE001 - any unpickling failure
            raise ValueError("unreadable tally file: %s" % e)
    if not isinstance(payload, dict) or \
            payload.get("version") != TALLY_VERSION:
        raise ValueError("tally file of another version")
    return payload["tally"], payload["handler_errors"], payload["perf_inlines"]


def write_pids(path, pids):
    """{thread id: process id} for the workers (see parse.Reader)."""
    with open(path, "wb") as f:
        pickle.dump(dict(pids), f, protocol=pickle.HIGHEST_PROTOCOL)


def read_pids(path):
    with open(path, "rb") as f:
        pids = pickle.load(f)
    if not isinstance(pids, dict):
        raise ValueError("%s: not a map of thread ids" % path)
    return pids


class ProgressWriter:
    """Worker side: the latest sample time, fixed width, at offset 0."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def write(self, sample_time):
        try:
            os.pwrite(self.fd, b"%020d" % sample_time, 0)
        except (OSError, TypeError):
            pass


def read_progress(path):
    """The time a worker last wrote, or None."""
    try:
        with open(path, "rb") as f:
            text = f.read(20)
    except OSError:
        return None
    return int(text) if len(text) == 20 and text.isdigit() else None
