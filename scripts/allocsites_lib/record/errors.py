"""RecordError: a failure of recording, as one line for the user.

RecordError: a failure of recording (or of opening a recording) as one
line for the user; exit status 1.
"""


class RecordError(Exception):
    """One line for the user; exit status 1."""
