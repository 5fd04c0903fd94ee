"""The errors every stage may raise for the command to report."""


class UsageError(Exception):
    """A bad option: reported as one line, exit status 2."""


class StageError(Exception):
    """A stage that cannot finish (a C stage not built, or failed): one
    line, exit status 1."""
