"""One CSV row per call site, for spreadsheets and scripts."""

import csv
import io

from .collapsed import number
from .report import share

COLUMNS = ["rank", "function", "file", "line", "dso", "count", "bytes",
           "share", "avg_size", "tags"]


def render_csv(report, top=None):
    profile = report.profile
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for rank, site in enumerate(profile.sites[:top] if top else profile.sites, 1):
        f = site.frame
        w.writerow([rank, f.function, f.file, f.line, f.dso,
                    number(site.count), number(site.bytes), "%.4f" % share(site.bytes, profile.bytes),
                    "%.2f" % (site.bytes / site.count if site.count else 0),
                    ";".join("%s=%s" % (t, number(b)) for t, b in sorted(
                        site.tag_bytes.items()))])
    return buf.getvalue()
