"""The figures a --sort or --weight names, and whether a Report knows them.

bytes and count are always known. peak and leaked need frees (the Report's
liveness is None without them); temporary is counted in exact mode only.
The table, folded stacks and the flame graph ask here, so they all refuse
an unknown figure with the same one-line message (a ValueError the caller
prints, exit status 2) instead of drawing zeros that look like a result.
"""

# Per site and per stack (fold.Site, fold.Stack): the value each name
# measures. peak and leaked are bytes; temporary is a count.
SITE_VALUES = {
    "bytes": lambda s: s.bytes,
    "count": lambda s: s.count,
    "peak": lambda s: s.peak_bytes,
    "leaked": lambda s: s.leaked_bytes,
    "temporary": lambda s: s.temporary,
}
STACK_VALUES = {
    "bytes": lambda s: s.bytes,
    "count": lambda s: s.count,
    "peak": lambda s: s.peak,
    "leaked": lambda s: s.leaked,
    "temporary": lambda s: s.temporary,
}


def frees_known(report):
    """Whether the report has liveness figures (frees were recorded)."""
    live = report.liveness
    return live is not None and live.peak_bytes is not None


def temporary_known(report):
    return frees_known(report) and report.liveness.temporary is not None


def unknown_reason(report, name):
    """Why NAME is unknown in this report, or None when it is known."""
    if name not in SITE_VALUES:
        return "unknown figure %r (one of %s)" % (
            name, ", ".join(SITE_VALUES))
    if name in ("bytes", "count"):
        return None
    if not frees_known(report):
        return ("no frees were recorded, so what is live is unknown "
                "(record without --no-frees)")
    if name == "temporary" and not temporary_known(report):
        return ("temporary allocations are counted in exact mode only "
                "(this profile is sampled)")
    return None


def require(report, option, name):
    """Raises ValueError('--OPTION NAME: why') when NAME is unknown."""
    why = unknown_reason(report, name)
    if why is not None:
        raise ValueError("--%s %s: %s" % (option, name, why))


def check(report, sort="bytes", weight="bytes"):
    """require() for both options at once: call it before writing any
    output, so that a bad option leaves no file half made."""
    require(report, "sort", sort)
    require(report, "weight", weight)


def site_value(report, sort):
    """The site figure --sort SORT ranks by (ValueError when unknown)."""
    require(report, "sort", sort)
    return SITE_VALUES[sort]


def stack_value(report, weight):
    """The stack figure --weight WEIGHT measures (ValueError when
    unknown)."""
    require(report, "weight", weight)
    return STACK_VALUES[weight]


def ranked(report, sort="bytes"):
    """The report's sites, largest SORT figure first. sorted() is stable,
    so ties keep the profile's order (bytes, count, file, line,
    function): the order of the table without --sort."""
    value = site_value(report, sort)
    return sorted(report.profile.sites, key=lambda s: -(value(s) or 0))


def time_text(ns):
    """'3.217 ms', or '1.250 s' from a second on (the timeline's units)."""
    if ns >= 1e9:
        return "%.3f s" % (ns / 1e9)
    return "%.3f ms" % (ns / 1e6)
