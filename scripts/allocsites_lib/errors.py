"""The errors every stage may raise for the command to report."""


class UsageError(Exception):
    """A bad option: reported as one line, exit status 2."""
