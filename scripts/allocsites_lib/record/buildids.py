"""FILE.buildids: the probed binaries' build-ids beside the recording.

The FILE.buildids sidecar: the probed binaries' build-ids beside the
recording, so the report can tell a binary rebuilt since.
"""

import json
import re

from ..read import elf
from .datafile import is_regular


def buildids_path(data):
    """The file beside a recording with its probed binaries' build-ids."""
    return data + ".buildids"


def write_buildids(data, binaries):
    """{path: build-id} of the probed binaries, beside the recording (a
    JSON object); best effort."""
    ids = {}
    for path in binaries:
        image = elf.open_elf(path)
        bid = elf.build_id(image) if image is not None else None
        if bid:
            ids[path] = bid
    try:
        with open(buildids_path(data), "w") as f:
            json.dump(ids, f, indent=1, sort_keys=True)
    except OSError:
        pass


_BUILD_ID = re.compile(r"[0-9a-f]{2,128}\Z")


def read_buildids(data):
    """{path: {build-id}} from the file beside a recording, or {} where
    there is none or it is not what write_buildids writes (an object of
    absolute paths to hex build-ids): a damaged file must not make the
    report say a binary changed, or was not probed."""
    if not is_regular(buildids_path(data)):
        return {}
    try:
        with open(buildids_path(data)) as f:
            ids = json.load(f)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return {}
    if not isinstance(ids, dict) or not all(
            isinstance(p, str) and p.startswith("/") and
            isinstance(b, str) and _BUILD_ID.match(b)
            for p, b in ids.items()):
        return {}
    return {p: {b} for p, b in ids.items()}
