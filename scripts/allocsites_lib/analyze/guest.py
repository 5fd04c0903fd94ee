"""Guest locations: a language runtime's program frames in the report.

A runtime that annotates its allocator with RT_ALLOC_GUEST gives each
allocation the id of the guest program's location (the script's line),
and defines each id once with RT_GUEST (docs/probes.md, "Guest
locations"): its frame (source, line, function) and its caller's id, so
that an id stands for a whole guest stack, innermost frame first, as
heaptrack's trace tree does. The Tally keeps the definitions
(Tally.guests) and each key's id (parse.GuestFrames).

With --guest the report's sites are guest locations: an allocation's
site is its innermost guest frame, and one made outside any guest frame
(start-up, the garbage collector between two instructions) is charged
to [interpreter], as LuaJIT's memprof charges INTERNAL. Its stack is
spliced, as memray splices Python frames: the guest frames, innermost
first, then the native frames outside the runtime's dispatch loop (the
outermost native frame whose function matches RT_GUEST_DISPATCH or
--guest-dispatch; with none declared, every native frame past the call
site, so the guest frames sit on top of the native stack).
"""

import re

from .. import textio
from .symbolize import Frame, bare_function

GUEST_DSO = "[guest]"
INTERPRETER = Frame("[interpreter]", "", 0, "", False)
# A guest stack deeper than this is cut (a definition that names itself
# as an ancestor would otherwise never end).
MAX_DEPTH = 4096



class GuestView:
    """Guest frames for ids, and native stacks spliced with them.
    guests: Tally.guests ({id: (parent, line, source, function)});
    dispatch: a regex (str) for the dispatch loop's native frames, or
    None."""

    def __init__(self, guests, dispatch=None):
        self.guests = guests
        self.dispatch = re.compile(dispatch) if dispatch else None
        self._frames = {}

    def frames(self, gid):
        """The guest frames of id gid, innermost first (a frame named
        "[guest N]" for an id never defined: its rt:guest was lost)."""
        got = self._frames.get(gid)
        if got is not None:
            return got
        out, seen, at = [], set(), gid
        while at and at not in seen and len(out) < MAX_DEPTH:
            seen.add(at)
            d = self.guests.get(at)
            if d is None:
                out.append(Frame("[guest %d]" % at, "", 0, GUEST_DSO, False))
                break
            parent, line, source, function = d
            # names the traced program gave: control characters escaped
            out.append(Frame(textio.printable(function or "?"),
                             textio.printable(source or "?"), line,
                             GUEST_DSO, False))
            at = parent
        got = self._frames[gid] = tuple(out)
        return got

    def outside_dispatch(self, chain):
        """The native frames of chain (from the call site outwards) past
        its outermost dispatch frame; all of them without one."""
        return tuple(chain[self.dispatch_index([(f,) for f in chain]):])

    def is_dispatch(self, frame):
        """Whether frame is the dispatch loop's: matched on its symbol,
        so that "^luaV_execute$" names a static liblua's frame
        "luaV_execute+0x123b" (no line info) too."""
        return self.dispatch is not None and \
            self.dispatch.search(bare_function(frame)) is not None

    def splice(self, gid, chain):
        """An allocation's stack from its guest site outwards: the guest
        frames of gid ([interpreter] for 0), then the native frames
        outside the dispatch loop."""
        head = self.frames(gid) if gid else (INTERPRETER,)
        return head + self.outside_dispatch(chain)

    def dispatch_index(self, lines_of_raws):
        """For a stack of raw frames given as their symbolized lines
        (lists of Frame, from the call site outwards): the index of the
        first raw frame past the outermost dispatch frame (0 without
        one)."""
        if self.dispatch is None:
            return 0
        last = -1
        for i, lines in enumerate(lines_of_raws):
            if any(self.is_dispatch(f) for f in lines):
                last = i
        return last + 1


def dispatch_regex(tally, symbolizer, option):
    """The dispatch loop's regex: --guest-dispatch's (option, a list of
    regexes or None) and the recorded binaries' RT_GUEST_DISPATCH, as one
    alternation; None when there is none."""
    from .wrappers import declared_patterns
    found = list(option or [])
    for regex, _dso in declared_patterns(tally, symbolizer,
                                         ".rt_guest_dispatch",
                                         "RT_GUEST_DISPATCH"):
        if regex not in found:
            found.append(regex)
    return "|".join("(?:%s)" % r for r in found) or None
