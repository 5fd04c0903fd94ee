"""valgrind DHAT, to show what it does with the same client requests:
nothing. DHAT (3.19) handles only its own requests; for each
VALGRIND_MALLOCLIKE_BLOCK / FREELIKE_BLOCK it prints "unknown DHAT client
request code 1301" (1302) and goes on, so it reports only malloc's blocks
(libc's own), none of the storm's. The row is there so the claim is
measured, not asserted. (DHAT's ad-hoc mode, DHAT_AD_HOC_EVENT, would
need a different annotation; not measured.)
"""

import json
import os

from . import score
from .tool_massif import source_frames


class Dhat:
    variant = "valgrind"
    name = "valgrind DHAT"

    def record(self, argv, tmp):
        # The per-request warnings go to a log file, not to our pipe.
        return ["valgrind", "--tool=dhat", "--dhat-out-file=" +
                os.path.join(tmp, "dhat.json"), "--log-file=" +
                os.path.join(tmp, "dhat.log")] + argv, None

    def analyze(self, tmp):
        return None  # the output is JSON for DHAT's viewer (a web page)

    def outputs(self, tmp):
        return [os.path.join(tmp, "dhat.json")]

    def profile(self, tmp, record_run, analyze_run):
        with open(os.path.join(tmp, "dhat.json")) as f:
            return dhat_profile(json.load(f)), None


def dhat_profile(doc):
    """DHAT JSON -> {(file, line): [blocks, bytes]} by each program
    point's first frame outside the allocator."""
    profile = {}
    for pp in doc["pps"]:
        labels = [doc["ftbl"][index] for index in pp["fs"]]
        score.charge(profile, source_frames(labels), pp["tbk"], pp["tb"])
    return profile
