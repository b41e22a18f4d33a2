"""Input checks shared by the command lines and the Python API: one place, one message style.

Every check raises :class:`kvmath.errors.KvMathError` with one line naming the field, the value and
the valid range, before any arithmetic runs. Bounds are generous (far beyond any published model or
deployment) but finite, so no input can make kvmath loop, allocate or compute without bound.
"""

from __future__ import annotations

import math

from .errors import KvMathError

MAX_LAYERS = 512
"""Upper bound on a config's layer count: llama.cpp's ``LLAMA_MAX_LAYERS`` (src/llama-hparams.h), which
the GGUF reader applies too. The largest published decoders have under 200 layers; vLLM's grouping is
quadratic in the layer count, so a bound keeps every plan well under a second."""
MAX_INT = 2**32
"""Upper bound on any other count or width read from a config (heads, widths, windows, positions)."""
MAX_TOKENS = 2**31
"""Upper bound on a context length or token budget (tokens)."""
MAX_BYTES = 2**60
"""Upper bound on a memory figure given by a user (bytes; 1 EiB)."""
MAX_GB = MAX_BYTES // 10**9
"""The same bound in GB (1e9 B): weights, drafter and reserved-KV sizes given in GB."""
MAX_TP = 4096
"""Upper bound on a tensor-parallel size."""
MAX_NAME = 200
"""Longest name (format, card, variant, version, model id) kvmath reads, in characters."""


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
        raise KvMathError(f"config field {key} must be >= {minimum}, got {_short(value)}")
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
        raise KvMathError(f"{what} must be a positive integer, got {_short(value)}")
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


def check_number(value, what: str, minimum: float = 0.0, maximum: float = float(MAX_GB), *,
                 open_min: bool = False) -> float:
    """A real, finite number (not a bool) in ``[minimum, maximum]`` (``(minimum, maximum]`` with
    ``open_min``); an int is accepted and returned as a float when it is in range."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if not is_int and not (isinstance(value, float) and math.isfinite(value)):
        raise KvMathError(f"{what} must be a finite number, got {_short(value)}")
    low = "(" if open_min else "["
    if (value <= minimum if open_min else value < minimum) or value > maximum:
        raise KvMathError(f"{what} must be a number in {low}{_num(minimum)}, {_num(maximum)}], got {_short(value)}")
    return float(value)


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def check_name(value, what: str, maximum: int = MAX_NAME, *, optional: bool = False) -> str | None:
    """A non-empty string of at most ``maximum`` characters (None too with ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise KvMathError(f"{what} must be a name (a string), got {_short(value)}")
    if not value.strip():
        raise KvMathError(f"{what} is empty; give a name")
    if len(value) > maximum or "\x00" in value:
        raise KvMathError(f"{what} is {len(value):,} characters long; names are at most {maximum} "
                          f"(got {_short(value)})")
    return value


def one_line(message, limit: int = 600) -> str:
    """An error message as one line of at most ``limit`` characters (what a command line prints)."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_finite_number(v) -> bool:
    """A real, finite number that is not a bool (an int too large for a float is not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _short(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a 5,000-digit integer is not echoed whole)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]  # repr of the head only: a huge string is not copied whole
    try:
        text = repr(value)
    except ValueError:  # int too large for repr under Python's digit limit
        return "an integer with too many digits"
    except Exception:  # noqa: BLE001 - an object whose repr fails still gets a message
        return f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
