"""Byte units. kvmath computes in exact integer bytes and converts only for display.

Engines log binary units (vLLM "GiB", llama.cpp "MiB"); card makers and the source document use
decimal GB. Every figure kvmath prints names its unit, and the two families are never mixed.
"""

from __future__ import annotations

KB = 10**3
MB = 10**6
GB = 10**9  # decimal gigabyte, 1e9 bytes
KiB = 2**10
MiB = 2**20
GiB = 2**30  # binary gibibyte, 2^30 bytes, the unit vLLM logs

UNITS = {"B": 1, "KB": KB, "MB": MB, "GB": GB, "KiB": KiB, "MiB": MiB, "GiB": GiB}


def fmt_bytes(n: int | float, unit: str = "GiB", digits: int = 2) -> str:
    """Format ``n`` bytes in ``unit`` (one of B, KB, MB, GB, KiB, MiB, GiB), e.g. ``'1.50 GiB'``.

    ``n`` is a finite number of bytes of magnitude below 2^100, ``digits`` an integer in [0, 12].
    Raises KvMathError otherwise, or for an unknown unit.
    """
    import math

    from .errors import KvMathError, choices

    if not isinstance(unit, str) or unit not in UNITS:
        raise KvMathError(f"unknown unit {str(unit)[:20]!r}; valid units: {choices(UNITS)}")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12:
        raise KvMathError(f"digits must be an integer in [0, 12], got {str(digits)[:20]}")
    if isinstance(n, bool) or not isinstance(n, (int, float)) or (isinstance(n, float) and not math.isfinite(n)):
        raise KvMathError(f"a byte count must be a finite number, got {str(n)[:40]}")
    if abs(n) >= 2**100:
        raise KvMathError("a byte count must be below 2^100 in magnitude")
    if unit == "B":
        return f"{int(n):,} B"
    text = f"{n / UNITS[unit]:,.{digits}f}"
    if text.startswith("-") and not text.strip("-0.,"):  # -5 B is '-0.00 GiB': rounded to zero, no sign
        text = text[1:]
    return f"{text} {unit}"


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for integers, exactly (no float): the block, page and chunk counts of every engine."""
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    """``a`` rounded up to a multiple of ``b`` (integers, exact): aligned sizes and padded lengths."""
    return ceil_div(a, b) * b


def parse_bytes(text: str, what: str = "a memory size") -> int:
    """``"24GiB"``, ``"23.69 GiB"``, ``"80GB"``, ``"512MiB"``, ``"1073741824"`` (bytes) -> exact bytes.

    The unit names the family: GB / MB / KB are decimal, GiB / MiB / KiB binary, a bare integer is bytes.
    Raises KvMathError naming ``what`` for anything else (no unit guessing, no NaN, nothing above 2^60)."""
    import re
    from decimal import Decimal, InvalidOperation

    from .errors import KvMathError, choices

    m = re.fullmatch(r"\s*([0-9]{1,15}(?:\.[0-9]{1,9})?)\s*([A-Za-z]{0,3})\s*", str(text)[:64])
    if not m:
        raise KvMathError(f"{what} must be a number with a unit ({choices(UNITS)}), got {str(text)[:40]!r}")
    number, unit = m.groups()
    if unit and unit not in UNITS:
        raise KvMathError(f"{what}: unknown unit {unit!r}; valid units: {choices(UNITS)}")
    if not unit and "." in number:
        raise KvMathError(f"{what} {number} needs a unit ({choices(UNITS)}): bytes are whole numbers")
    try:
        n = int(Decimal(number) * UNITS[unit or "B"])
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise KvMathError(f"{what} must be a number, got {number!r}") from None
    if not 0 < n <= 2**60:
        raise KvMathError(f"{what} must be above 0 and at most 1 EiB, got {str(text)[:40]!r}")
    return n


def parse_device_memory(text: str) -> int:
    """``--device-memory``: a card's memory with its unit (``"24GiB"``, ``"25.4GB"``, ``"24576MiB"``) -> bytes.
    A bare number is refused (is ``24`` GiB or bytes?): the message gives the unit spellings. Raises
    KvMathError."""
    import re

    from .errors import KvMathError

    if re.fullmatch(r"\s*[0-9.]{1,30}\s*", str(text)):
        n = str(text).strip()
        raise KvMathError(f"--device-memory {n} needs a unit: {n}GiB (GiB as PyTorch reports the card), or {n}GB / "
                          "MiB / MB")
    return parse_bytes(text, "--device-memory")

