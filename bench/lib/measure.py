"""Runs one command and measures it: wall time and peak RSS.

Peak RSS is GNU time's %M (ru_maxrss): the largest resident set of the
command or of any descendant it waited for, not their sum. For a
profiler that is its biggest process: perf with its ring buffers,
valgrind with the program inside it, heaptrack's interpreter.

Why GNU time and not os.wait4 here: a process's maxrss survives exec,
so a child forked from Python starts with Python's resident set (14 MB
here) as its high-water mark. /usr/bin/time's own fork is small.
"""

import collections
import subprocess
import tempfile
import time

Run = collections.namedtuple("Run", "wall maxrss_kb returncode stdout stderr")


def run(cmd, env=None, cwd=None, check=True, discard_stdout=False):
    """Runs cmd (a list); its stdout (unless discarded: big text outputs)
    and stderr are captured as text."""
    with tempfile.NamedTemporaryFile("r") as rss:
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", "-o",
                               rss.name] + list(cmd),
                              stdout=subprocess.DEVNULL if discard_stdout
                              else subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, cwd=cwd, universal_newlines=True)
        wall = time.monotonic() - start
        text = rss.read().split()
    result = Run(wall, int(text[-1]) if text else None, proc.returncode,
                 proc.stdout, proc.stderr)
    if check and result.returncode != 0:
        raise SystemExit("bench: %s exited with %d:\n%s%s"
                         % (" ".join(cmd), result.returncode,
                            result.stdout[-2000:], result.stderr[-3000:]))
    return result
