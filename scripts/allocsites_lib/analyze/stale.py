"""Binaries rebuilt since the recording, whose lines would be wrong, and
binaries gone since, whose frames can be neither named nor unwound.

Binaries rebuilt since the recording: their addresses no longer match,
so their lines would be wrong."""

import os

from ..read import elf


def stale_binaries(dsos, data, build_ids=None):
    """DSOs that are no longer what was recorded: their addresses no
    longer match the file, so their lines would be wrong. By build-id
    where the recording has one for the DSO (FILE.buildids, written by
    allocsites record, or MMAP2 records of perf record --buildid-mmap);
    else by modification time (later than the recording's), which misses
    a rebuilt binary copied with its old time (cp -p, rsync -a)."""
    build_ids = build_ids or {}
    try:
        recorded = os.path.getmtime(data) if data else None
    except OSError:
        recorded = None
    stale = []
    for dso in sorted(dsos):
        try:
            if dso in build_ids:
                # one that is gone is missing_binaries'; a file there
                # that is no longer an ELF with that build-id (rebuilt,
                # truncated, overwritten) is stale
                if not os.path.exists(dso):
                    continue
                image = elf.open_elf(dso)
                if image is None or elf.build_id(image) not in build_ids[dso]:
                    stale.append(dso)
            elif recorded is not None and os.path.getmtime(dso) > recorded:
                stale.append(dso)
        except OSError:
            pass
    return stale


def missing_binaries(dsos, build_ids=None):
    """DSOs the recording saw (a build-id for them in build_ids: FILE.
    buildids, or the MMAP2 records of perf record --buildid-mmap, as
    allocsites record writes them) where there is no longer a file
    (deleted or moved since the recording), sorted."""
    build_ids = build_ids or {}
    return sorted(d for d in dsos
                  if d in build_ids and not os.path.exists(d))


def gone_warning(dso):
    """The warning for a DSO missing_binaries found."""
    return ("%s is gone (deleted or moved since the recording): frames "
            "shown as addresses" % dso)
