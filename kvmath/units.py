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
    return f"{n / UNITS[unit]:,.{digits}f} {unit}"
