"""allocsites as a contender: `allocsites record`, then `report --json`.

The profile is the report's own site table (JSON `sites`): the site rule
is allocsites' (the first frame after rt_alloc/rt_realloc, inlined
frames expanded), so this scores what a user reads.
"""

import json
import os
import re

from . import score

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ALLOCSITES = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "allocsites")]


class Allocsites:
    variant = "probes"

    def __init__(self, sample=None):
        self.sample = sample
        self.name = ("allocsites sampled %s" % sample if sample
                     else "allocsites exact")

    def record(self, argv, tmp):
        opts = ["--sample", self.sample] if self.sample else []
        return ALLOCSITES + ["record", "-o", os.path.join(tmp, "perf.data")] \
            + opts + ["--"] + argv, None

    def analyze(self, tmp):
        return ALLOCSITES + ["report", "-i", os.path.join(tmp, "perf.data"),
                             "--json", os.path.join(tmp, "report.json")]

    def outputs(self, tmp):
        return [os.path.join(tmp, "perf.data")]

    def record_lost(self, record_run, tmp):
        """Events lost, as `allocsites record` says on stderr."""
        m = re.search(r"; lost: (\S+)", record_run.stderr)
        return m.group(1) if m else "?"

    def profile(self, tmp, record_run, analyze_run):
        """-> (profile, lost): lost as the report states it."""
        with open(os.path.join(tmp, "report.json")) as f:
            report = json.load(f)
        profile = {}
        for site in report["sites"]:
            score.add(profile, score.site_key(site["file"], site["line"]),
                      site["count"], site["bytes"])
        lost = report["lost"] if report["lost"] is not None else "unknown"
        self.notes = {"truncated": report["truncated_allocations"]}
        return profile, lost


class Bare:
    """The storm alone: the baseline without probes (Bare("plain",
    "uninstrumented")), or with the probes compiled in and nothing
    recording them."""
    analyze = None

    def __init__(self, variant, name):
        self.variant, self.name = variant, name

    def record(self, argv, tmp):
        return argv, None


def Plain():
    return Bare("plain", "uninstrumented")


def ProbesOff():
    return Bare("probes", "probes compiled in, not recorded")
