"""Engines: one subpackage each (its settings, formats, rules per layer kind, allocation, log lines,
launch line and budget).

Adding an engine is one subpackage with an ``ENGINE`` object implementing ``base.Engine`` and one
line in ``REGISTRY`` below. An engine is imported the first time it is asked for.
"""

from __future__ import annotations

from ..errors import KvMathError, choices
from ..formats import KVFormat
from .base import Engine, LayerGroup, StateTensor
from .base import valid_tp as _valid_tp
from collections.abc import Mapping
from importlib import import_module

# name -> (subpackage, other names it answers to, the first words of its launch lines). One line per engine.
# The first words let the front door import only the engines a pasted line can belong to; each must start
# one of the engine's ``programs`` (tests/test_engines.py checks the two agree).
REGISTRY: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "vllm": ("vllm", (), ("vllm", "python", "python3")),
    "llama.cpp": ("llamacpp", ("llamacpp", "llama-cpp"), ("llama-server", "llama-cli", "llama-fit-params")),
    "transformers": ("transformers", ("hf",), ()),
    "sglang": ("sglang", ("sgl",), ("python", "python3", "sglang")),
}
ALIASES = {alias: name for name, (_, aliases, _) in REGISTRY.items() for alias in aliases}


class _Engines(Mapping):
    """``name -> Engine``, importing an engine's subpackage on first use (the commands load only the
    engines an answer needs)."""

    def __init__(self):
        self._loaded: dict[str, Engine] = {}

    def __getitem__(self, name: str) -> Engine:
        if name not in REGISTRY:
            raise KeyError(name)
        if name not in self._loaded:
            self._loaded[name] = import_module(f"{__name__}.{REGISTRY[name][0]}").ENGINE
        return self._loaded[name]

    def __iter__(self):
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


ENGINES: Mapping[str, Engine] = _Engines()


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
    # the engines' own format tables, loaded the way the registry loads an engine (an engine's formats module
    # asks format_owners on its error path, so a static import here would be a cycle)
    def table(sub):
        return import_module(f"{__name__}.{sub}.formats")

    return (list(table("vllm").VLLM_FORMATS.values())
            + [table("llamacpp").llamacpp_format(t) for t in ENGINES["llama.cpp"].formats]
            + list(table("transformers").TRANSFORMERS_FORMATS.values()))


def format_owners(name: str, exclude: str = "") -> list[str]:
    """The engines (other than ``exclude``) with a cache format named ``name`` (spelt exactly: the engines'
    parsers are case-sensitive)."""
    key = str(name)
    return [n for n, e in ENGINES.items() if n != exclude and key in e.formats]


def engine_for_launch(argv) -> tuple[Engine, int] | None:
    """The engine whose launch-line command words (``Engine.programs``) start ``argv``, and how many words
    they are (the longest match), or None when the line starts with none of them."""
    best = None
    first = argv[0] if argv else None
    for name, (_, _, words) in REGISTRY.items():
        if first not in words:
            continue
        e = ENGINES[name]
        for prog in e.programs:
            if tuple(argv[: len(prog)]) == prog and (best is None or len(prog) > best[1]):
                best = (e, len(prog))
    return best


__all__ = ["ENGINES", "REGISTRY", "Engine", "engine_for_launch", "LayerGroup", "StateTensor", "get_engine", "valid_tp", "all_formats",
           "settings_owners"]
