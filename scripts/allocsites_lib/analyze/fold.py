"""A Tally folded into call sites and stacks: the Profile (Report.profile).

A Profile is the sites, the stacks and their totals only; the Report
(report.py) is a Profile plus all else known of the run.

Two stages, so the per-event work stays a count (in C, or a dict update
inside perf):
  1. the read stage's Tally (read/tally.py, scripts/reader/tally.c):
     counts identical raw stacks (tuples of RawFrame) per tag; nothing is
     symbolized yet.
  2. fold(tally, symbolizer, ...): symbolizes each distinct frame once,
     expands inlines, finds each stack's call site and sums per site.

The call site of an allocation is the first source frame outside the
allocator: the stack, leaf first and inlines expanded, minus its first
frame (the function that holds the probe, e.g. rt_alloc), minus any
leading frames whose function matches --skip (wrappers such as xmalloc).
"""

import collections
import math
import re

from ..read import parse
from .symbolize import Frame

# Functions that start a thread or a process: a stack that does not end in
# one was cut short (perf copies a fixed amount of user stack per sample).
# Without debug info a name comes as "clone3+0x2c", hence the suffix.
ROOT_FUNCTIONS = re.compile(
    r"^(_start|__libc_start_main\w*|__libc_start_call_main|start_thread|"
    r"clone3?|__clone3?|_dl_start_user|_dl_init|call_init)(\+0x[0-9a-f]+)?$")



def reaches_root(logical):
    """Whether a stack (innermost first) reaches a process or thread start.
    A stripped executable's _start has no symbol (perf finds none in
    .dynsym either): an unnamed outermost frame just outside
    __libc_start_main is that _start, not a stack cut short."""
    if ROOT_FUNCTIONS.match(logical[-1].function):
        return True
    return (len(logical) >= 2 and logical[-1].line == 0 and
            not logical[-1].inlined and
            ROOT_FUNCTIONS.match(logical[-2].function) is not None)


NO_CALLER = Frame("[no caller]", "", 0, "", False)
# The root of every stack that did not reach a process or thread start:
# one named box in the flame graph, instead of towers under whatever
# frame the copy happened to end in.
CUT_SHORT = Frame("[stack cut short]", "", 0, "", False)
# The root of every stack the native reader saw go on where no stack copy
# reaches (parse.SWITCHED_DSO): a larger --stack-size would not help.
SWITCHED = Frame("[stack switched]", "", 0, "", False)


class Site:
    """One call site's totals (estimates in sampled mode)."""
    __slots__ = ("frame", "count", "bytes", "tag_bytes", "tag_counts",
                 "weight_by_size2", "samples", "peak_bytes", "peak_count",
                 "leaked_bytes", "leaked_count", "temporary")

    def __init__(self, frame):
        self.frame = frame
        self.count = 0
        self.bytes = 0
        self.tag_bytes = collections.Counter()
        self.tag_counts = collections.Counter()
        self.weight_by_size2 = 0.0   # sampled: sum(weight / size**2)
        self.samples = 0             # sampled: rt:sample events
        # Liveness (liveness.py), None when no frees were recorded: bytes
        # and allocations live at the global peak, live at the end, and
        # allocations freed by the very next event (None in sampled mode).
        self.peak_bytes = self.peak_count = None
        self.leaked_bytes = self.leaked_count = None
        self.temporary = None

    def errors(self, r):
        """(bytes, count) standard errors of the estimates at mean gap r:
        Var(bytes) = r * bytes, Var(count) = r * sum(weight / size**2).
        At r = 1 every byte is a sample point: exact, no error."""
        if r == 1:
            return 0.0, 0.0
        return (math.sqrt(r * self.bytes),
                math.sqrt(r * self.weight_by_size2))


# frames: tuple of Frame from the call site outwards (site first).
# peak, leaked: bytes live at the peak and at the end; temporary: count;
# all None when no frees were recorded.
Stack = collections.namedtuple("Stack", "frames count bytes tags peak leaked "
                               "temporary", defaults=(None, None, None))

# The sites (largest first), the stacks and the totals fold made: a
# Report's profile. site_of: {(raw stack, tag): (function, file, line) of
# its site}, for whatever is kept per key elsewhere (the timeline's series).
# truncated_at_jit: of truncated, the allocations whose stack ends in JIT
# code (no CFI: no unwinder goes past it); truncated_switched: of
# truncated, those whose stack goes on where no copy reaches
# (parse.SWITCHED_DSO). A stack the reader saw end at a frame without a
# caller (parse.OUTERMOST_DSO) is whole, whatever its first function.
Profile = collections.namedtuple(
    "Profile", "sites stacks count bytes truncated site_of truncated_at_jit "
    "truncated_switched", defaults=(None, 0, 0))


def tag_label(tag, names):
    return names.get(tag, str(tag))


def tag_selected(tag, names, tags):
    """Whether --tag's tags (None: all) keep an allocation of tag, named
    or numbered (names: {tag: name})."""
    return tags is None or tag_label(tag, names) in tags or str(tag) in tags


def leading_skipped(functions, skip_re):
    """How many of functions, from the first, are wrappers skip_re (--skip,
    RT_SKIP) names: the one rule of what a wrapper is, for fold's sites
    and pprof's locations (pprofdata.py)."""
    k = 0
    if skip_re is not None:
        for name in functions:   # any iterable: read up to the first kept
            if not skip_re.search(name or ""):
                break
            k += 1
    return k


def call_site_stack(logical, skip_re):
    """Source frames from the call site outwards (drops the probe's function
    and the wrappers --skip names)."""
    rest = logical[1:]
    if skip_re is None:
        return tuple(rest)
    return tuple(rest[leading_skipped((f.function for f in rest),
                                      skip_re):])


_LEFT_OUT = object()


def fold(tally, symbolizer, tag_names=None, skip=None, tags=None, depth=None,
         mode="exact", entries=None, live=None, guest=None):
    """Sum a Tally per call site.

    tag_names: {tag: name}; skip: regex str for wrapper functions; tags:
    set of tag names or numbers (as str) to keep, None for all; depth: keep
    at most this many frames of each stack (the site and its callers);
    entries: {key: entry} to fold instead of the tally's (one phase's);
    live: {key: liveness.KeyLive} to sum per site and stack as well
    (None: no frees recorded, the liveness fields stay None); guest: a
    guest.GuestView: sites by guest location, stacks spliced (--guest)."""
    tag_names = tag_names or {}
    skip_re = re.compile(skip) if skip else None
    if entries is None:
        entries = tally.entries(mode)
    symbolizer.resolve({raw for frames, _ in entries for raw in frames})
    sites = {}
    stacks = collections.OrderedDict()
    site_of = {}
    stack_live = collections.defaultdict(lambda: [0, 0, 0])
    total_count = total_bytes = truncated = at_jit = switched = 0
    expand = symbolizer.expand
    labels = {}   # tag -> its label, or _LEFT_OUT by --tag: once a tag
    for (frames, tag), entry in entries.items():
        label = labels.get(tag)
        if label is None:
            label = labels[tag] = tag_label(tag, tag_names) \
                if tag_selected(tag, tag_names, tags) else _LEFT_OUT
        if label is _LEFT_OUT:
            continue
        count, nbytes = entry.count, entry.bytes
        logical = expand(frames)
        chain = call_site_stack(logical, skip_re)
        if guest is not None:
            chain = guest.splice(parse.guest_of(frames), chain)
        end = parse.stack_end(frames)
        if logical and end != parse.OUTERMOST_DSO and \
                not reaches_root(logical):
            truncated += count
            if end == parse.SWITCHED_DSO:
                switched += count
            elif parse.is_jit_map(logical[-1].dso):
                at_jit += count
            if chain:
                chain += (SWITCHED if end == parse.SWITCHED_DSO
                          else CUT_SHORT,)
        site_frame = chain[0] if chain else NO_CALLER
        key = (site_frame.function, site_frame.file, site_frame.line)
        site_of[(frames, tag)] = key
        site = sites.get(key)
        if site is None:
            site = sites[key] = Site(site_frame)
        site.count += count
        site.bytes += nbytes
        kl = None
        if live is not None:
            kl = live.get((frames, tag)) or ZERO_LIVE
            add_live(site, kl, mode)
        if mode == "sampled":
            site.weight_by_size2 += entry.weight_by_size2
            site.samples += entry.samples
        site.tag_bytes[label] += nbytes
        site.tag_counts[label] += count
        total_count += count
        total_bytes += nbytes
        shown = chain[:depth] if depth else chain
        if not shown:
            shown = (NO_CALLER,)
        total = stacks.get(shown)   # [count, bytes, {tag: bytes}]
        if total is None:
            total = stacks[shown] = [0, 0, collections.Counter()]
        total[0] += count
        total[1] += nbytes
        total[2][label] += nbytes
        if kl is not None:
            sl = stack_live[shown]
            sl[0] += kl.peak_bytes
            sl[1] += kl.leaked_bytes
            sl[2] += kl.temporary or 0
    ordered = sorted(sites.values(), key=lambda s: (
        -s.bytes, -s.count, s.frame.file, s.frame.line, s.frame.function))

    def stack(shown, total):
        count, nbytes, tags = total
        if live is None:
            return Stack(shown, count, nbytes, dict(tags))
        peak, leaked, temporary = stack_live[shown]
        return Stack(shown, count, nbytes, dict(tags), peak, leaked,
                     None if mode == "sampled" else temporary)

    stack_list = by_size_then_functions(
        [stack(shown, total) for shown, total in stacks.items()])
    return Profile(ordered, stack_list, total_count, total_bytes, truncated,
                   site_of, at_jit, switched)


def by_size_then_functions(stacks):
    """stacks most bytes first, then most allocations, then by their
    functions' names: sorted by the names only where the first two tie
    (building every stack's list of names was a fifth of fold's time on
    16,659 stacks)."""
    out = sorted(stacks, key=lambda s: (-s.bytes, -s.count))
    i, n = 0, len(out)
    while i < n:
        j = i + 1
        while j < n and out[j].bytes == out[i].bytes and \
                out[j].count == out[i].count:
            j += 1
        if j - i > 1:
            out[i:j] = sorted(out[i:j], key=lambda s: [
                f.function for f in s.frames])
        i = j
    return out


class _ZeroLive:
    """A key the sweep has no figures for: nothing live, nothing temporary."""
    peak_bytes = peak_count = leaked_bytes = leaked_count = temporary = 0


ZERO_LIVE = _ZeroLive()


def add_live(site, kl, mode):
    """Adds one key's liveness (liveness.KeyLive) to a Site."""
    if site.peak_bytes is None:
        site.peak_bytes = site.peak_count = 0
        site.leaked_bytes = site.leaked_count = 0
        site.temporary = None if mode == "sampled" else 0
    site.peak_bytes += kl.peak_bytes
    site.peak_count += kl.peak_count
    site.leaked_bytes += kl.leaked_bytes
    site.leaked_count += kl.leaked_count
    if site.temporary is not None:
        site.temporary += kl.temporary or 0
