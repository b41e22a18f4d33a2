"""Solvers written once over the engine protocol: the largest context, the most sequences, the smallest offload.

Each asks an engine's :meth:`~kvmath.engines.base.Engine.verdict` about launches that differ in one setting
(the one the engine names in ``context_setting``, ``seqs_setting`` or ``offload_setting``) and bisects, under
the one assumption every engine's rules satisfy: booting is monotone in that setting (a longer context or
more sequences never needs less memory; offloading more experts never needs more device memory). Each
search costs O(log range) verdicts.
"""

from __future__ import annotations

from .engines.base import Engine, Launch
from .errors import KvMathError
from .units import ceil_div


def _boots(engine: Engine, launch: Launch, setting: str, value: int) -> bool:
    return engine.verdict(launch.with_settings(**{setting: value})).boots


def last_true(predicate, lo: int, hi: int, step: int = 1) -> int | None:
    """The largest multiple of ``step`` in [lo, hi] where ``predicate`` holds, None if none does; assumes it
    holds below any value where it holds (O(log) calls). The one bisection of the package."""
    lo_k, hi_k = ceil_div(lo, step), hi // step
    if hi_k < lo_k or not predicate(lo_k * step):
        return None
    while lo_k < hi_k:
        mid = (lo_k + hi_k + 1) // 2
        if predicate(mid * step):
            lo_k = mid
        else:
            hi_k = mid - 1
    return lo_k * step


def first_true(predicate, lo: int, hi: int) -> int | None:
    """The smallest integer in [lo, hi] where ``predicate`` holds, None if none does; assumes it holds above
    any value where it holds."""
    if hi < lo or not predicate(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if predicate(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def largest(engine: Engine, launch: Launch, setting: str, lo: int, hi: int, step: int = 1) -> int | None:
    """The largest multiple of ``step`` in [lo, hi] at which the launch boots, None if none does.

    Assumes booting is monotone (true below any value that boots)."""
    launch = engine.for_solving(launch)
    return last_true(lambda v: _boots(engine, launch, setting, v), lo, hi, step)


def smallest(engine: Engine, launch: Launch, setting: str, lo: int, hi: int) -> int | None:
    """The smallest integer in [lo, hi] at which the launch boots, None if none does (monotone: true above)."""
    launch = engine.for_solving(launch)
    return first_true(lambda v: _boots(engine, launch, setting, v), lo, hi)


def _setting(engine: Engine, kind: str) -> str:
    name = getattr(engine, f"{kind}_setting")
    if not name:
        raise KvMathError(f"{engine.name} has no {kind} setting to solve for")
    return name


def largest_context(engine: Engine, launch: Launch) -> int | None:
    """The largest context (the engine's ``context_setting``) that boots, tokens; None when none does."""
    s = _setting(engine, "context")
    lo, hi, step = engine.range_of(launch, s)
    return largest(engine, launch, s, lo, hi, step)


def most_sequences(engine: Engine, launch: Launch) -> int | None:
    """The most sequences at once (``seqs_setting``) that boot at the launch's context; None when none."""
    s = _setting(engine, "seqs")
    lo, hi, step = engine.range_of(launch, s)
    return largest(engine, launch, s, lo, hi, step)


def smallest_offload(engine: Engine, launch: Launch) -> int | None:
    """The smallest offload count (``offload_setting``, llama.cpp's ``--n-cpu-moe``) that fits; None if none.

    Booting is not monotone in it when the host is checked too: more offloaded experts free the devices but
    fill the host, so the values that boot are an interval. The bisection runs on the devices' side alone (an
    engine's ``offload_frees_devices(verdict)``, monotone; without one, the verdict), and the smallest value
    whose devices fit boots or none does (every larger value puts more on the host)."""
    s = _setting(engine, "offload")
    lo, hi, _ = engine.range_of(launch, s)
    frees = getattr(engine, "offload_frees_devices", None)
    if frees is None:
        return smallest(engine, launch, s, lo, hi)
    launch = engine.for_solving(launch)
    k = first_true(lambda v: frees(engine.verdict(launch.with_settings(**{s: v}))), lo, hi)
    return k if k is not None and _boots(engine, launch, s, k) else None


def answers(engine: Engine, launch: Launch) -> dict:
    """Every solver the engine supports, by name (``VERDICT_FIELDS['answers.*']``)."""
    out = {}
    if engine.context_setting:
        out["largest_context"] = largest_context(engine, launch)
    if engine.seqs_setting:
        out["most_sequences"] = most_sequences(engine, launch)
    if engine.offload_setting:
        out["smallest_offload"] = smallest_offload(engine, launch)
    return out
