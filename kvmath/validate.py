"""Input checks shared by the command lines and the Python API: one place, one message style.

Every check raises :class:`kvmath.errors.KvMathError` with one line naming the field, the value and
the valid range, before any arithmetic runs. Bounds are generous (far beyond any published model or
deployment) but finite, so no input can make kvmath loop, allocate or compute without bound.
"""

from __future__ import annotations

import math

from .errors import KvMathError

MAX_LAYERS = 65536
"""Upper bound on a config's layer count (the largest published decoders have a few hundred)."""
MAX_INT = 2**32
"""Upper bound on any other count or width read from a config (heads, widths, windows, positions)."""
MAX_TOKENS = 2**31
"""Upper bound on a context length or token budget (tokens)."""
MAX_BYTES = 2**60
"""Upper bound on a memory figure given by a user (bytes; 1 EiB)."""


def as_int(value, key: str, minimum: int = 1, maximum: int = MAX_INT) -> int:
    """``value`` as an int in ``[minimum, maximum]`` (an integral float such as ``32.0`` is accepted).

    ``key`` names the field in the message. Raises KvMathError for a bool, a string, a non-integral or
    non-finite float, or a value out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise KvMathError(f"config field {key} must be an integer, got {_short(value)}")
    if value < minimum:
        raise KvMathError(f"config field {key} must be >= {minimum}, got {value}")
    if value > maximum:
        raise KvMathError(f"config field {key} must be <= {maximum}, got {_short(value)}")
    return value


def check_positive(value, what: str, maximum: int = MAX_INT) -> int:
    """A user-supplied count (context, sequences, TP): a positive integer up to ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise KvMathError(f"{what} must be a positive integer, got {_short(value)}")
    if value < 1:
        raise KvMathError(f"{what} must be a positive integer, got {value}")
    if value > maximum:
        raise KvMathError(f"{what} must be at most {maximum:,}, got {_short(value)}")
    return value


def check_count(value, what: str, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """An integer in ``[minimum, maximum]`` (a count that may be 0)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise KvMathError(f"{what} must be an integer >= {minimum}, got {_short(value)}")
    if not minimum <= value <= maximum:
        raise KvMathError(f"{what} must be an integer in [{minimum}, {maximum:,}], got {_short(value)}")
    return value


def check_bool(value, what: str) -> bool:
    if not isinstance(value, bool):
        raise KvMathError(f"{what} must be True or False, got {_short(value)}")
    return value


def check_choice(value, what: str, valid) -> str:
    """``value`` if it is one of ``valid`` (strings), else KvMathError listing them."""
    valid = tuple(valid)
    if not isinstance(value, str) or value not in valid:
        raise KvMathError(f"{what} must be one of {', '.join(map(str, valid))}; got {_short(value)}")
    return value


def is_finite_number(v) -> bool:
    """A real, finite number that is not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _short(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a 5,000-digit integer is not echoed whole)."""
    try:
        text = repr(value)
    except ValueError:  # int too large for repr under Python's digit limit
        return "an integer with too many digits"
    return text if len(text) <= limit else text[: limit - 3] + "..."
