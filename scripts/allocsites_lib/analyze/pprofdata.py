"""What --pprof encodes, as plain data: samples, locations, mappings.

The pprof profile's content, worked out from a Tally (render/pprofout.py
encodes it; docs/output-formats.md, "The profile document", describes
it): one Location per (binary, address) with its inlined functions as
Lines (innermost first), a Mapping per binary with its build-id, the
samples per phase, key and thread. Numbered in the order the samples
first name them, as the encoded profile numbers them.

The allocator's own frame (the one holding the probe) is left out of
each stack, as Go leaves out runtime.mallocgc, and so are the wrappers
the table skips (--skip, RT_SKIP): leading frames whose function matches
are dropped, a location whose inlined lines only partly match keeps the
rest, so that pprof's flat figures name the callers the table names.

The result (the Report's pprof):
  {"inuse": bool (the samples have inuse_objects/inuse_space too),
   "time_nanos": int, "duration_nanos": int (0: unknown),
   "mappings": [{"id", "dso", "build_id" (hex or None)}],
   "locations": [{"id", "mapping", "address" (the binary's own address;
                  None for a guest location), "lines": [[function id,
                  line], ...]}],
   "functions": [{"id", "name", "file"}],
   "phases": [{"phase": label or None, "samples": [{"locations": [ids],
               "values": [count, bytes(, inuse count, inuse bytes)],
               "tag": label, "size": bytes per object or None,
               "thread": [pid, tid] or None}]}]}
Values are as the tally has them (floats in sampled mode)."""

import re

from ..read import elf as elfmod
from ..read.parse import guest_of, without_end
from .fold import leading_skipped, tag_label, tag_selected
from .guest import GUEST_DSO, INTERPRETER
from .symbolize import bare_function


class Locations:
    """The profile's Mappings, Locations and Functions, numbered as the
    samples first name them."""

    def __init__(self, symbolizer, skip):
        self.symbolizer = symbolizer
        self.skip_re = re.compile(skip) if skip else None
        self.mappings, self.locations, self.functions = {}, {}, {}

    def mapping_id(self, dso):
        if dso not in self.mappings:
            self.mappings[dso] = len(self.mappings) + 1
        return self.mappings[dso]

    def function_id(self, frame):
        # "_start+0x20" (no line info) is function _start: the offset is
        # the Location's address already, and pprof groups by name
        key = (bare_function(frame), frame.file)
        if key not in self.functions:
            self.functions[key] = len(self.functions) + 1
        return self.functions[key]

    def location_id(self, raw, drop=0):
        """The Location of raw's address; drop: without its innermost
        `drop` inlined lines (skipped wrappers), a Location of its own."""
        addr = raw.addr if raw.addr is not None else raw.ip
        key = (raw.dso, addr, drop)
        loc = self.locations.get(key)
        if loc is None:
            mid = self.mapping_id(raw.dso)
            lines = [[self.function_id(f), f.line]
                     for f in self.symbolizer.frames(raw)[drop:]]
            loc = self.locations[key] = {
                "id": len(self.locations) + 1, "mapping": mid,
                "address": addr or 0, "lines": lines}
        return loc["id"]

    def guest_location_id(self, frame):
        """The Location of a guest frame (analyze/guest.py): in the
        [guest] Mapping, one Line, no address of its own."""
        key = (GUEST_DSO, frame.function, frame.file, frame.line)
        loc = self.locations.get(key)
        if loc is None:
            mid = self.mapping_id(GUEST_DSO)
            n = len(self.locations) + 1
            loc = self.locations[key] = {
                "id": n, "mapping": mid, "address": None,
                "lines": [[self.function_id(frame), frame.line]]}
        return loc["id"]

    def stack_ids(self, raws, guest=None, gid=0):
        """Location ids from the call site outwards: the leading wrapper
        frames skip names left out (all of a stack's: none left out, as
        fold keeps the stack). guest: a GuestView (--guest): the guest
        frames of gid first, then the native frames outside the dispatch
        loop, as fold splices them."""
        raws = without_end(raws)
        if guest is not None:
            head = [self.guest_location_id(f) for f in
                    (guest.frames(gid) if gid else (INTERPRETER,))]
            if guest.dispatch is None:
                return head + self._native_ids(raws)
            k = guest.dispatch_index([self.symbolizer.frames(r)
                                      for r in raws])
            return head + [self.location_id(r) for r in raws[k:]]
        return self._native_ids(raws)

    def _native_ids(self, raws):
        """fold's rule (leading_skipped) on the stack's lines, inlined
        ones expanded; the first line it keeps starts the first Location
        (its raw frame's address, less the lines skipped)."""
        if self.skip_re is None:
            return [self.location_id(raw) for raw in raws]
        where = [(i, j) for i, raw in enumerate(raws)
                 for j in range(len(self.symbolizer.frames(raw)))]
        k = leading_skipped([self.symbolizer.frames(raws[i])[j].function
                             for i, j in where], self.skip_re)
        if k == len(where):   # all of them: kept whole, as fold keeps it
            return [self.location_id(raw) for raw in raws]
        i, drop = where[k]
        return [self.location_id(raws[i], drop)] + \
            [self.location_id(r) for r in raws[i + 1:]]

    def tables(self):
        """(mappings, locations, functions) as the profile's lists."""
        mappings = []
        for dso, mid in self.mappings.items():
            image = self.symbolizer.elf(dso) if dso != GUEST_DSO else None
            mappings.append({"id": mid, "dso": dso, "build_id":
                             elfmod.build_id(image) if image is not None
                             else None})
        locations = sorted(self.locations.values(), key=lambda l: l["id"])
        functions = [{"id": fid, "name": name, "file": path}
                     for (name, path), fid in self.functions.items()]
        return mappings, locations, functions


def _samples(locs, names, tags, phased, inuse, threads, guest=None):
    """[{"phase", "samples"}]: per phase and key, or per phase, key and
    thread (and then what was live at the end a sample of its own)."""
    out = []
    for phase, phase_entries, phase_live in phased:
        samples = []
        for (frames, tag), entry in phase_entries.items():
            if not tag_selected(tag, names, tags):
                continue
            ids = locs.stack_ids(frames[1:], guest, guest_of(frames))
            name = tag_label(tag, names)
            kl = (phase_live or {}).get((frames, tag)) if inuse else None
            leaked = [kl.leaked_count, kl.leaked_bytes] \
                if kl is not None else [0, 0]
            by_thread = threads.get((phase, (frames, tag))) \
                if threads is not None else None
            if not by_thread:
                values = [entry.count, entry.bytes]
                samples.append(_sample(ids, values + leaked if inuse
                                       else values, name, entry.count,
                                       entry.bytes))
                continue
            for (pid, tid), (count, nbytes) in sorted(by_thread.items()):
                values = [count, nbytes]
                samples.append(_sample(ids, values + [0, 0] if inuse
                                       else values, name, count, nbytes,
                                       [pid, tid]))
            if any(round(v) for v in leaked):
                samples.append(_sample(ids, [0, 0] + leaked, name, 0, 0))
        out.append({"phase": phase, "samples": samples})
    return out


def _sample(ids, values, tag, count, nbytes, thread=None):
    # size: Go's "bytes" label, the objects' size (their mean over
    # several); none for a sample of no allocations
    return {"locations": ids, "values": values, "tag": tag,
            "size": nbytes / count if count > 0 else None, "thread": thread}


def profile(tally, symbolizer, names, mode, tags=None, entries=None,
            live=None, skip=None, time_nanos=0, duration_nanos=0,
            phased=None, threads=None, guest=None):
    """The pprof profile of tally (resolved by symbolizer) as plain data
    (the module doc); names: {tag: name}; tags: the --tag filter or None;
    entries: {key: entry} instead of the tally's (one --phase); live:
    {key: liveness.KeyLive} when frees were recorded: then the profile
    also has Go's inuse_objects and inuse_space, what was live at the end
    (as a Go heap profile taken at exit). skip: the wrappers' regex
    (fold's), or None. time_nanos, duration_nanos: the recording's start
    (ns since the epoch) and length, 0 when unknown: what a
    continuous-profiling upload files the profile under. phased: instead
    of entries and live, [(phase name or None, {key: entry}, {key:
    KeyLive} or None)]: a sample per phase and key, labelled "phase"
    (none outside every phase); their sums are the whole profile's.
    threads: {(phase or None, key): {(pid, tid): [count, bytes]}}
    (analyze/threads.py), or None: given, each key's allocations are a
    sample per thread, labelled "pid" and "tid", and what was live at the
    end a sample of its own (its threads are not known). guest: a
    guest.GuestView (--guest): stacks spliced with the guest frames."""
    inuse = live is not None or \
        any(pl is not None for _, _, pl in phased or ())
    locs = Locations(symbolizer, skip)
    if phased is None:
        phased = [(None, tally.entries(mode) if entries is None else entries,
                   live)]
    phases = _samples(locs, names, tags, phased, inuse, threads, guest)
    mappings, locations, functions = locs.tables()
    return {"inuse": inuse, "time_nanos": time_nanos,
            "duration_nanos": duration_nanos, "mappings": mappings,
            "locations": locations, "functions": functions,
            "phases": phases}
