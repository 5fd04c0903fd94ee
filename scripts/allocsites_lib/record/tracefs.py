"""tracefs: mounted if need be, its uprobe events and error log read.

tracefs: mounted if it is not (and unmounted again), and read: the
uprobe events it lists, the kernel's last error about a definition.
"""

import os

from .errors import RecordError
from .helpercmd import first_error_line, output_text, run

TRACEFS = "/sys/kernel/tracing"


def tracefs_mounted(mounts_text=None):
    """The tracefs mount point, or None."""
    if mounts_text is None:
        try:
            with open("/proc/mounts") as f:
                mounts_text = f.read()
        except OSError:
            return None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "tracefs":
            return parts[1]
    return None


class Tracefs:
    """Makes sure tracefs is mounted; unmounts it afterwards only if this
    run mounted it (leave the machine as it was found)."""

    def __init__(self):
        self.mounted_here = False
        self.adopted = False
        self.path = None

    def ensure(self):
        self.path = tracefs_mounted()
        if self.path is None:
            proc = run(["mount", "-t", "tracefs", "nodev", TRACEFS])
            if proc.returncode != 0:
                raise RecordError("tracefs is not mounted and mounting it at "
                                  "%s failed: %s" % (TRACEFS, first_error_line(
                                      output_text(proc))))
            self.mounted_here = True
            self.path = TRACEFS
        if not os.path.exists(os.path.join(self.path, "uprobe_events")):
            raise RecordError("this kernel has no uprobes (%s/uprobe_events "
                              "missing): CONFIG_UPROBE_EVENTS is needed"
                              % self.path)

    def adopt(self, path):
        """A killed run's mount at path, which it could not unmount:
        unmounted by release, as if this run had made it."""
        if path == self.path and not self.mounted_here:
            self.mounted_here = self.adopted = True

    def release(self, others_alive=None):
        """Unmounts tracefs if this run mounted it, or adopted a killed
        run's mount; an adopted one stays while another run is alive
        (others_alive(), runstate's), which may still use it."""
        if self.adopted and others_alive is not None and others_alive():
            self.mounted_here = False
        if self.mounted_here:
            self.mounted_here = False
            try:
                run(["umount", self.path])
            except RecordError:
                pass


def tracefs_error(tracefs):
    """': LAST LINE' of tracefs' error_log (why the kernel refused a probe
    definition), or ''."""
    try:
        with open(os.path.join(tracefs, "error_log")) as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return ""
    return (": " + lines[-1]) if lines else ""


def listed_events(tracefs):
    """The uprobe events tracefs lists, as perf names them ("sdt_rt:alloc"
    for the line "p:sdt_rt/alloc /path:0x..."), or None if unreadable."""
    try:
        with open(os.path.join(tracefs, "uprobe_events")) as f:
            return {line.split(None, 1)[0].split(":", 1)[-1].replace("/", ":", 1)
                    for line in f if line.strip()}
    except OSError:
        return None
