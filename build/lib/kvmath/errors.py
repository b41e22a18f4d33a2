"""The one error type kvmath raises for bad input."""

from __future__ import annotations


class KvMathError(ValueError):
    """Bad input: the message names the problem and, where there is a finite set, the valid choices.

    The command line prints ``str(error)`` on one line and exits with status 2; it never shows a
    traceback for this type. A message is one line of at most ``MAX_MESSAGE`` characters: an argument
    echoed into it (a 100,000-character name) is cut, never printed whole.
    """

    MAX_MESSAGE = 1000

    def __init__(self, message="", *args):
        text = " ".join(str(message).split("\n"))
        if len(text) > self.MAX_MESSAGE:
            text = text[: self.MAX_MESSAGE - 3] + "..."
        super().__init__(text, *args)


def choices(values) -> str:
    """Format a set of valid values for an error message: ``a, b, c``."""
    return ", ".join(str(v) for v in values)
