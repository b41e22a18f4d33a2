"""Engines: one subpackage each (its settings, formats, rules per layer kind, allocation, log lines).

Adding an engine is one subpackage with an ``ENGINE`` object implementing ``base.Engine`` and one
line in ``ENGINES`` below.
"""

from __future__ import annotations

from ..errors import KvMathError, choices
from ..formats import KVFormat
from .base import Engine, LayerGroup, StateTensor
from .base import valid_tp as _valid_tp
from .llamacpp import ENGINE as _LLAMACPP
from .transformers import ENGINE as _TRANSFORMERS
from .vllm import ENGINE as _VLLM

ENGINES: dict[str, Engine] = {e.name: e for e in (_VLLM, _LLAMACPP, _TRANSFORMERS)}
ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "hf": "transformers"}


def get_engine(name) -> Engine:
    """The engine by name (``vllm``, ``llama.cpp``, ``transformers``) or an Engine. Raises KvMathError."""
    if isinstance(name, Engine):
        return name
    if not isinstance(name, str):
        raise KvMathError(f"engine must be a name, got {type(name).__name__}; valid: {choices(ENGINES)}")
    key = ALIASES.get(name.lower(), name.lower())
    if key not in ENGINES:
        raise KvMathError(f"unknown engine {name[:40]!r}; valid: {choices(ENGINES)}")
    return ENGINES[key]


def valid_tp(arch, engine="vllm", candidates=(1, 2, 4, 8, 16)) -> list[int]:
    """The tensor-parallel sizes among ``candidates`` the engine (name or Engine) accepts for ``arch``.

    Raises KvMathError when ``arch`` is not an Architecture or a candidate is not a positive integer."""
    from ..model.specs import Architecture
    from ..validate import check_positive

    if not isinstance(arch, Architecture):
        raise KvMathError(f"valid_tp needs an Architecture (kvmath.load_architecture), got {type(arch).__name__}")
    try:
        cands = tuple(candidates)
    except TypeError:
        raise KvMathError(f"candidates must be a sequence of TP sizes, got {type(candidates).__name__}") from None
    return _valid_tp(arch, get_engine(engine), tuple(check_positive(c, "TP candidate", maximum=4096) for c in cands))


def settings_owners() -> dict[str, tuple[str, ...]]:
    """Engine name -> the setting names it takes (to name the owner of a misplaced setting)."""
    return {e.name: e.setting_names for e in ENGINES.values()}


def all_formats() -> list[KVFormat]:
    """Every named format of every engine (llama.cpp with the same type for K and V)."""
    from .llamacpp.formats import llamacpp_format
    from .transformers.formats import TRANSFORMERS_FORMATS
    from .vllm.formats import VLLM_FORMATS

    return (list(VLLM_FORMATS.values()) + [llamacpp_format(t) for t in _LLAMACPP.formats]
            + list(TRANSFORMERS_FORMATS.values()))


__all__ = ["ENGINES", "Engine", "LayerGroup", "StateTensor", "get_engine", "valid_tp", "all_formats",
           "settings_owners"]
