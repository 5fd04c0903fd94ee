"""FILE.buildids: the probed binaries' build-ids beside the recording.

The FILE.buildids sidecar: the probed binaries' build-ids beside the
recording, so the report can tell a binary rebuilt since.
"""

import json

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


def read_buildids(data):
    """{path: {build-id}} from the file beside a recording, or {}."""
    if not is_regular(buildids_path(data)):
        return {}
    try:
        with open(buildids_path(data)) as f:
            ids = json.load(f)
        return {str(p): {str(b)} for p, b in ids.items()}
    except (OSError, ValueError, AttributeError):
        return {}
