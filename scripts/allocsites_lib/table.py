"""The stdout table: top sites by bytes, a totals line, events and loss."""

import os

from .report import human_bytes, is_lossy, location, lost_text, share


def render_table(report, top=20, cwd=None):
    folded = report.folded
    cwd = cwd if cwd is not None else os.getcwd()
    rows = []
    for rank, site in enumerate(folded.sites[:top], 1):
        tags = ",".join("%s:%s" % (t, human_bytes(b)) for t, b in sorted(
            site.tag_bytes.items(), key=lambda kv: (-kv[1], kv[0])))
        rows.append((str(rank), str(site.bytes), "%.1f%%" % share(
            site.bytes, folded.bytes), str(site.count),
            "%.1f" % (site.bytes / site.count if site.count else 0),
            "%s %s" % (site.frame.function, location(site.frame, cwd)), tags))
    header = ("#", "bytes", "share", "count", "avg", "site", "tags")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
    lines = []

    def emit(cols):
        left = "  ".join(c.rjust(widths[i]) for i, c in enumerate(cols[:5]))
        lines.append(("%s  %s  %s" % (left, cols[5], cols[6])).rstrip())

    emit(header)
    for row in rows:
        emit(row)
    shown = len(rows)
    more = len(folded.sites) - shown
    lines.append("total: %d bytes (%s) in %d allocations at %d sites%s" % (
        folded.bytes, human_bytes(folded.bytes), folded.count,
        len(folded.sites), (", %d not shown" % more) if more > 0 else ""))
    ev = report.events
    frees = ("%d free" % ev["free"]) if ev.get("free") else "frees not recorded"
    lines.append("events: %d alloc, %s; lost: %s%s" % (
        ev.get("alloc", 0), frees, lost_text(report),
        (", malformed: %d" % report.malformed) if report.malformed else ""))
    if is_lossy(report):
        lines.append("WARNING: this profile is incomplete: events were lost")
    return "\n".join(lines) + "\n"
