"""The [vdso] files perf script leaves in /tmp, removed when ours.

The [vdso] files perf script leaves in /tmp when a worker stops early or
is killed: found, and removed when they are surely the report's.
"""

import glob
import os


# perf script writes the recorded [vdso] image to a temporary file of this
# name (util/vdso.c: the directory is fixed) and removes it when it ends
# normally. A worker that stops early (os._exit once it has its samples)
# or is killed leaves it behind: one 8 KiB file per worker and report.
PERF_VDSO_GLOB = "/tmp/perf-vdso.so-*"


def perf_vdso_files():
    return set(glob.glob(PERF_VDSO_GLOB))


def remove_perf_vdso_files(before, at_most):
    """Removes the vdso files that appeared while the workers ran, if there
    are no more of them than workers that could have left one (early
    stops and kills): then they are ours. More means another perf ran at
    the same time and may still need its file: then none is touched."""
    new = perf_vdso_files() - before
    if not new or len(new) > at_most:
        return
    for path in new:
        try:
            os.unlink(path)
        except OSError:
            pass
