"""vLLM's log text: its GiB formatting, and the byte band a logged GiB figure stands for."""

from __future__ import annotations

from ...errors import KvMathError

GIB = 2**30


def format_gib(n: int) -> str:
    """vLLM's GiB text: ``str(round(n / 2**30, 2))`` (vllm/utils/mem_utils.py ``format_gib``), e.g.
    ``'11.1'`` or ``'2.4'`` (no trailing zero)."""
    return f"{round(n / GIB, 2)}"


def gib_band(logged: str | float) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` that vLLM prints as ``logged`` GiB (two-decimal rounding).

    ``logged`` is the printed value (``"11.10"``, ``11.1``). vLLM prints ``round(b / 2**30, 2)``, so a
    printed value pins the bytes only to a band about 0.01 GiB (10.7 MB) wide; for a hybrid model
    that is one block or less. Found by bisection on vLLM's own formatting, so the edges are exact.
    """
    try:
        target = round(float(logged), 2)
    except (TypeError, ValueError):
        raise KvMathError(f"{logged!r} is not a GiB value") from None

    def first_at_least(v: float) -> int:
        lo, hi = 0, int((v + 1) * GIB)
        while lo < hi:
            mid = (lo + hi) // 2
            if round(mid / GIB, 2) >= v:
                hi = mid
            else:
                lo = mid + 1
        return lo

    lo = first_at_least(target)
    hi = first_at_least(round(target + 0.01, 2))
    if lo >= hi or round(lo / GIB, 2) != target:
        raise KvMathError(f"{logged!r} is not a GiB value vLLM can print")
    return lo, hi


