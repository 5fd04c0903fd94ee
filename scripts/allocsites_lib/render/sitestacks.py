"""--stacks SITE: the call stacks behind one site, as a backtrace.

--stacks SITE: the call stacks that reach one site, most bytes first,
printed like a debugger's backtrace (the site first, the outermost
caller last). SITE is a function name, a 'file:line' (a path suffix:
'parser.c:127' matches '/src/examples/minicc/parser.c:127'), or a tag.
Which stacks a SITE selects is site_matches'; render_stacks prints them,
stacks_json gives the JSON entries."""

import os

from ..words import location, share


def _at_line(frame, site):
    """Whether frame is at SITE's 'file:line' (a path suffix)."""
    path, sep, line = site.rpartition(":")
    if not sep or not line.isdigit() or not path:
        return False
    return int(line) == frame.line and (
        frame.file == path or frame.file.endswith("/" + path.lstrip("/")))


def site_matches(stack, site):
    """Whether stack's site (its first frame) is SITE, or carries SITE as
    a tag."""
    frame = stack.frames[0]
    if frame.function == site or site in stack.tags:
        return True
    return _at_line(frame, site)


def callers_at(profile, site, most=3):
    """When SITE's 'file:line' is no site but a caller's line: (stacks
    through it, their bytes, [the sites they reach, most bytes first, at
    most `most`]); None when no stack passes there either."""
    through = [s for s in profile.stacks
               if len(s.frames) > 1 and any(_at_line(f, site)
                                            for f in s.frames[1:])]
    if not through:
        return None
    by_site = {}
    for s in through:
        key = "%s %s:%s" % (s.frames[0].function,
                            os.path.basename(s.frames[0].file or "?"),
                            s.frames[0].line)
        by_site[key] = by_site.get(key, 0) + s.bytes
    ranked = sorted(by_site, key=lambda k: (-by_site[k], k))
    return len(through), sum(s.bytes for s in through), ranked[:most]


def stacks_of(profile, site, top=None):
    """(the stacks reaching site, most bytes first, at most top; how many
    there are in all; their total bytes)."""
    found = [s for s in profile.stacks if s.frames and site_matches(s, site)]
    found.sort(key=lambda s: (-s.bytes, -s.count))
    total = sum(s.bytes for s in found)
    return found[:top] if top else found, len(found), total


def render_stacks(profile, site, top=None, est="", relative_to=None):
    shown, n, total = stacks_of(profile, site, top)
    if not n:
        via = callers_at(profile, site)
        if via is not None:
            return "stacks reaching %s: none: that line is not an " \
                   "allocation site but a caller's, in %d stacks (%s%.0f " \
                   "bytes) that reach %s: give --stacks one of those\n" % (
                       site, via[0], est, via[1], ", ".join(via[2]))
        return "stacks reaching %s: none (no site, function or tag of " \
               "that name)\n" % site
    lines = ["stacks reaching %s: %d of %d shown, %s%d bytes in all" % (
        site, len(shown), n, est, total)]
    for i, s in enumerate(shown, 1):
        lines.append("#%d  %s%.0f bytes (%.1f%% of all), %s%.0f allocations"
                     % (i, est, s.bytes, share(s.bytes, profile.bytes), est,
                        s.count))
        for frame in s.frames:
            where = location(frame, relative_to or os.getcwd())
            lines.append("      %s%s  %s" % (
                frame.function, " [inlined]" if frame.inlined else "", where))
    return "\n".join(lines) + "\n"


def stacks_json(profile, site, top, frame_json):
    shown, n, total = stacks_of(profile, site, top)
    return {"site": site, "stacks_total": n, "bytes": total,
            "stacks": [{"frames": [frame_json(f) for f in s.frames],
                        "count": s.count, "bytes": s.bytes,
                        "share": round(share(s.bytes, profile.bytes), 4)}
                       for s in shown]}
