"""A run's uprobe events: created, and removed again in all cases.

The uprobe events of one run: created (written to tracefs, or by perf
probe) and removed again in all cases.

Probe events are created for exactly the binaries being run, every time
(a uprobe is bound to an inode and offset: after a rebuild an old event
records nothing, without an error). probedefs.py writes the definitions.
"""

import errno
import os
import re
import shutil
import tempfile

from ..read import elf
from . import probedefs
from .errors import RecordError
from .helpercmd import first_error_line, output_text, run
from .tracefs import listed_events, tracefs_error

_ADDED_RE = re.compile(r"^\s*(sdt_rt:\w+)\s+\(on ")


class ProbeEvents:
    """The uprobe events of one run: created by add(), all removed by
    remove(). perf names events globally; with -f a name already taken
    (by another binary, or by someone else's event) becomes alloc_1,
    alloc_2..., so existing events are never replaced or deleted.

    perf probe reads SDT notes through perf's build-id cache (~/.debug),
    keyed by build-id. Two identical binaries at two paths (a copy, or the
    same sources built twice) share a build-id; once the cache maps it to
    the first path, `perf probe -x second` fails with only "Failed to add
    events". So each run gives perf probe a private cache, removed after."""

    def __init__(self, perf, tracefs=None):
        self.perf = perf
        self.tracefs = tracefs     # its path: to check what perf created
        self.state = None          # runstate.RunState: for a killed run
        self.created = []          # event names, e.g. "sdt_rt:alloc_1"
        self.cache = None          # private --buildid-dir

    def add(self, binary, probe):
        if self.cache is None:
            self.cache = tempfile.mkdtemp(prefix="allocsites-buildid-")
        proc = run([self.perf, "--buildid-dir", self.cache, "probe", "-f",
                    "-x", binary, "sdt_rt:" + probe])
        text = output_text(proc)
        names = [m.group(1) for m in map(_ADDED_RE.match, text.splitlines())
                 if m]
        if proc.returncode != 0 or not names:
            raise RecordError("perf probe could not add sdt_rt:%s in %s: %s"
                              % (probe, binary, first_error_line(text)))
        # perf 6.1 says "Added new event" and exits 0 for a path with a
        # space, but the kernel rejected the definition: nothing exists.
        # Only what exists is this run's to remove: a name perf merely
        # reported may be created later by another run, whose event this
        # run's clean-up (or a later one reading its state) must not
        # delete.
        missing = [n for i, n in enumerate(names)
                   if n not in names[:i] and not self.exists(n)]
        for name in names:
            if name not in self.created and name not in missing:
                self.created.append(name)
        if self.state is not None:
            self.state.note(events=self.created, dirs=[self.cache])
        if missing:
            raise RecordError(
                "perf probe reported %s in %s, but the kernel has no such "
                "event%s" % (" ".join(missing), binary,
                             ": perf cannot probe a path with a space; move "
                             "or link the file to a path without one"
                             if " " in binary else ""))
        return names[0]

    def add_plain(self, binary, kinds, fast=False):
        """The probes of `kinds` (e.g. {"free", "exit"}) in binary, as
        probes of this run's one plain event (probedefs.py), written to
        tracefs directly. Returns the event's name, or None when they
        cannot be written that way (the caller then adds them with perf
        probe, one event each). fast: at the sites' 5-byte nops
        (probedefs.fast_site)."""
        return self._add_direct(binary, "plain", lambda image, name:
                                probedefs.definitions(binary, image, kinds,
                                                      name, fast))

    def add_alloc(self, binary, probe, fast=False):
        """Every site of the allocation probe ("alloc" or "sample") in
        binary, as probes of this run's one event for it (alloc_PID: the
        sites of every probed binary share it), written to tracefs
        directly; the event's name, or None as for add_plain. fast: as
        add_plain's."""
        return self._add_direct(binary, probe, lambda image, name:
                                probedefs.alloc_definitions(binary, image,
                                                            probe, name,
                                                            fast))

    def add_guest(self, binary):
        """Every rt:guest site in binary, as probes of this run's one
        guest event (guest_PID), its names fetched as strings; the
        event's name, or None where they cannot be written so (perf
        probe would fetch the names as numbers: no use)."""
        return self._add_direct(binary, "guest", lambda image, name:
                                probedefs.guest_definitions(binary, image,
                                                            name))

    def _add_direct(self, binary, what, definitions):
        image = elf.open_elf(binary)
        if image is None or self.tracefs is None:
            return None
        name = probedefs.event_name(os.getpid(), what)
        lines = definitions(image, name)
        if not lines:
            return None
        full = "%s:%s" % (probedefs.GROUP, name)
        appending = full in self.created
        if not appending:
            self.created.append(full)
        if self.state is not None:
            self.state.note(events=self.created)
        try:
            self._write(lines)
        except OSError as e:
            if appending and e.errno == errno.EINVAL:
                # The kernel appends a probe to an event only when its
                # fields have the same names and types: a binary built
                # with another header's argument sizes gets perf probe's
                # events of its own instead.
                return None
            raise RecordError("cannot add the probes of %s to %s: %s%s"
                              % (binary, full, e.strerror,
                                 tracefs_error(self.tracefs)))
        return full

    def exists(self, name):
        """Whether tracefs lists the uprobe event (True when unknown)."""
        if self.tracefs is None:
            return True
        listed = listed_events(self.tracefs)
        return listed is None or name in listed

    def remove(self):
        """Deletes the events this run created, in one perf probe call
        (perf takes -d repeatedly); name by name only if that fails, to
        know which. Returns the names that could not be removed."""
        failed = self.delete_named(self.created)
        self.created = []
        if self.cache is not None:
            shutil.rmtree(self.cache, ignore_errors=True)
            self.cache = None
        return failed

    def delete_named(self, names):
        """Deletes exactly these events; returns those that failed. By a
        write to tracefs ("-:GROUP/NAME" removes every probe of the
        event), else with perf probe -d (a perf process: ~10 ms)."""
        names = [n for n in names if not self._delete_direct(n)]
        if not names or self._delete(names):
            return []
        return [n for n in names if not self._delete([n])]

    def _delete_direct(self, name):
        if self.tracefs is None or ":" not in name:
            return False
        try:
            self._write(["-:%s" % name.replace(":", "/", 1)])
        except OSError:
            return False
        return True

    def _write(self, lines):
        """Each line to tracefs' uprobe_events, one write(2) per line (a
        definition, or a deletion): os.write, because Python's open(...,
        "a") seeks to the end first, which tracefs refuses (EINVAL).
        Raises OSError."""
        fd = os.open(os.path.join(self.tracefs, "uprobe_events"),
                     os.O_WRONLY | os.O_APPEND)
        try:
            for line in lines:
                # a path of any bytes, as the file system has it
                os.write(fd, os.fsencode(line + "\n"))
        finally:
            os.close(fd)

    def _delete(self, names):
        cmd = [self.perf, "probe", "-q"]
        for name in names:
            cmd += ["-d", name]
        try:
            return run(cmd).returncode == 0
        except RecordError:
            return False
