"""One CSV row per call site, for spreadsheets and scripts."""

import csv
import io

from .folded import number
from ..words import share

# The liveness columns come last, so that readers of the first ten keep
# working; their cells are empty when frees were not recorded (temporary:
# also in sampled mode).
COLUMNS = ["rank", "function", "file", "line", "dso", "count", "bytes",
           "share", "avg_size", "tags", "peak_bytes", "peak_count",
           "leaked_bytes", "leaked_count", "temporary"]


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
                        site.tag_bytes.items()))] +
                   [_cell(v) for v in (site.peak_bytes, site.peak_count,
                                       site.leaked_bytes, site.leaked_count,
                                       site.temporary)])
    return buf.getvalue()


def _cell(value):
    return "" if value is None else number(value)
