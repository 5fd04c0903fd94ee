"""The stdout table: top sites by bytes, a totals line, events and loss."""

import os

from .report import human_bytes, location, lost_text, share, verdict_line


def render_table(report, top=20, cwd=None):
    profile = report.profile
    cwd = cwd if cwd is not None else os.getcwd()
    # Sampled estimates are rounded and marked with "~".
    est = "~" if report.sampling else ""
    rows = []
    for rank, site in enumerate(profile.sites[:top], 1):
        tags = ",".join("%s:%s%s" % (t, est, human_bytes(b)) for t, b in sorted(
            site.tag_bytes.items(), key=lambda kv: (-kv[1], kv[0])))
        rows.append((str(rank), "%s%.0f" % (est, site.bytes), "%.1f%%" % share(
            site.bytes, profile.bytes), "%s%.0f" % (est, site.count),
            "%.1f" % (site.bytes / site.count if site.count else 0),
            "%s %s" % (site.frame.function, location(site.frame, cwd)), tags))
    header = ("#", est + "bytes", "share", est + "count", "avg", "site", "tags")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
    lines = []

    def emit(cols):
        left = "  ".join(c.rjust(widths[i]) for i, c in enumerate(cols[:5]))
        lines.append(("%s  %s  %s" % (left, cols[5], cols[6])).rstrip())

    emit(header)
    for row in rows:
        emit(row)
    shown = len(rows)
    more = len(profile.sites) - shown
    lines.append("total: %s%.0f bytes (%s) in %s%.0f allocations at %d sites%s"
                 % (est, profile.bytes, human_bytes(profile.bytes), est,
                    profile.count, len(profile.sites),
                    (", %d not shown" % more) if more > 0 else ""))
    ev = report.events
    frees = ("%d free" % ev["free"]) if ev.get("free") else "frees not recorded"
    if report.sampling:
        lines.append("estimates from %d samples, one per ~%s allocated "
                     "(docs/sampling.md)" % (report.sampling["samples"],
                                             human_bytes(report.sampling[
                                                 "sample_bytes"])))
        recorded = "%d sample" % ev.get("sample", 0)
    else:
        recorded = "%d alloc" % ev.get("alloc", 0)
    lines.append("events: %s, %s; lost: %s%s" % (
        recorded, frees, lost_text(report),
        (", malformed: %d" % report.malformed) if report.malformed else ""))
    lines.append(verdict_line(report))
    return "\n".join(lines) + "\n"
