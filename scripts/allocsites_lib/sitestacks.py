"""--stacks SITE: the call stacks that reach one site, most bytes first,
printed like a debugger's backtrace (the site first, the outermost
caller last). SITE is a function name, a 'file:line' (a path suffix:
'parser.c:127' matches '/src/examples/minicc/parser.c:127'), or a tag.
Which stacks a SITE selects is site_matches'; render_stacks prints them,
stacks_json gives the JSON entries."""

import os

from .report import location, share


def site_matches(stack, site):
    """Whether stack's site (its first frame) is SITE, or carries SITE as
    a tag."""
    frame = stack.frames[0]
    if frame.function == site or site in stack.tags:
        return True
    path, sep, line = site.rpartition(":")
    if not sep or not line.isdigit() or not path:
        return False
    return int(line) == frame.line and (
        frame.file == path or frame.file.endswith("/" + path.lstrip("/")))


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
