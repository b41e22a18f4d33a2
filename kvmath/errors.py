"""The one error type kvmath raises for bad input."""

from __future__ import annotations


class KvMathError(ValueError):
    """Bad input: the message names the problem and, where there is a finite set, the valid choices.

    The command line prints ``str(error)`` on one line and exits with status 2; it never shows a
    traceback for this type.
    """


def choices(values) -> str:
    """Format a set of valid values for an error message: ``a, b, c``."""
    return ", ".join(str(v) for v in values)
