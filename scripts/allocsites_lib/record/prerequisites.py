"""What recording needs first: perf, its version, the privilege.

What recording needs before it starts: perf (and its version), and the
privilege to create uprobe events.
"""

import os
import shutil
import subprocess

from .errors import RecordError


def find_perf():
    perf = shutil.which("perf")
    if perf is None:
        raise RecordError("perf not found: install it (Debian: apt-get install "
                          "linux-perf)")
    return perf


def perf_version():
    """perf's version ("6.1.187"), or None without a working perf."""
    perf = shutil.which("perf")
    if perf is None:
        return None
    try:
        out = subprocess.run([perf, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=10,
                             universal_newlines=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    words = out.split()
    return words[-1] if words else None


def check_privileges():
    """Creating uprobe events writes tracefs: root, or a user the admin
    let write uprobe_events, with perf_event_paranoid -1 for tracepoints."""
    if os.geteuid() == 0:
        return
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = int(f.read().strip())
    except (OSError, ValueError):
        paranoid = 2
    if paranoid > -1:
        raise RecordError("needs root (or perf_event_paranoid -1 and write "
                          "access to tracefs): it is %d and you are not root; "
                          "try sudo" % paranoid)
