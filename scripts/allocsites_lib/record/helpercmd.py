"""Helper commands (perf probe, ldd, mount) run with a timeout.

Runs the helper commands (perf probe, ldd, mount, umount) with a timeout,
and turns their output into one line for an error.
"""

import os
import subprocess

from .errors import RecordError


# How long a helper command (perf probe, ldd, mount) may take. perf probe
# answers in well under a second; one that does not answer has met a
# kernel whose trace event lock is stuck (seen on 6.18 after an Oops in
# the uprobe code: every later perf probe waits forever, unkillable).
COMMAND_TIMEOUT = 60


def run(cmd, timeout=COMMAND_TIMEOUT):
    """Runs cmd with its output captured (CompletedProcess, stdout bytes);
    never raises OSError, never waits longer than timeout seconds."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    except OSError as e:
        raise RecordError("cannot run %s: %s" % (cmd[0], e))
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        # No wait(): a process stuck in the kernel does not die of SIGKILL.
        raise RecordError("%s did not answer in %d s (%s): if dmesg shows an "
                          "Oops in uprobe code, the kernel needs a reboot"
                          % (os.path.basename(cmd[0]), timeout,
                             " ".join(cmd[1:])[:80]))
    return subprocess.CompletedProcess(cmd, proc.returncode, out)


def output_text(proc):
    return proc.stdout.decode("utf-8", "replace")


def first_error_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("Hint"):
            return line
    return "no output"
