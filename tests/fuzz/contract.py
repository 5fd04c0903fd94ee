"""tests/fuzz/contract.py - what the native reader promises on any file
(issue 31), checked on one run of its ASan/UBSan build: exit 0 or 1,
never a signal, never a hang, never a sanitizer's report, at most two
lines on stderr, each 'allocsites-read: ...'; and where a mutant's
sample fields lie past its data, stderr says records were left out.
Used by tests/unit/test_reader_hostile.py and tests/fuzz/run_afl.py."""

import os
import subprocess
import tempfile
import threading

TIMEOUT = 10
# Memory: what the ASan build holds at most on any mutant (the 3 GB of
# the zstd bomb, the 5 GB of the fork bomb were the findings; the
# largest after their fixes is about 470 MB).
MAX_RSS_MB = 1024
# Sanitizer reports exit 86, not the reader's 1. Leak checking is off: it
# costs 0.3 s a run, and what the reader holds at exit is not the
# contract.
SAN_ENV = {"ASAN_OPTIONS": "detect_leaks=0:exitcode=86:abort_on_error=0",
           "UBSAN_OPTIONS": "halt_on_error=1:exitcode=86:print_stacktrace=1"}


def read(reader, path, timeout=TIMEOUT):
    """(returncode or 'hang', stderr, peak RSS in MB) of reader on path,
    run as the report runs it: the event log to a file, the liveness
    sweep in a thread of the reader (--log-fd, --sweep)."""
    env = dict(os.environ, **SAN_ENV)
    with tempfile.TemporaryFile(prefix="allocsites-log-") as log:
        fd = log.fileno()
        proc = subprocess.Popen([reader, "--log-fd", str(fd), "--sweep",
                                 path], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=env,
                                pass_fds=(fd,))
        return _finish(proc, timeout)


def _finish(proc, timeout):
    fired = []

    def kill():
        fired.append(1)
        proc.kill()
    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        err = proc.stderr.read()
        # wait4: this child's own peak memory, not all children's
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
        proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if fired:
        return "hang", "", 0
    return (proc.returncode, err.decode("utf-8", "replace"),
            usage.ru_maxrss // 1024)


def broken(rc, err, expect=None, timeout=TIMEOUT, rss=0):
    """What breaks the contract in one run, or None."""
    lines = err.splitlines()
    if rc == "hang":
        return "no answer in %d s" % timeout
    if rss > MAX_RSS_MB:
        return "%d MB of memory (at most %d)" % (rss, MAX_RSS_MB)
    if rc < 0:
        return "killed by signal %d" % -rc
    if rc not in (0, 1):
        # the sanitizer's own summary line says most
        summary = [l for l in lines if "SUMMARY:" in l or
                   "runtime error" in l]
        return "exit %d: %s" % (rc, " | ".join((summary or lines)[:3]))
    if len(lines) > 2 or any(not l.startswith("allocsites-read: ")
                             for l in lines):
        return "stderr: %s" % " | ".join(lines[:6])
    if rc == 1 and not lines:
        return "exit 1 and nothing said"
    if expect == "left_out" and rc == 0 and "left out" not in err:
        return "exit 0 without saying records were left out"
    return None
