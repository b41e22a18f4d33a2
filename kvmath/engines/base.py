"""The engine protocol: what every engine subpackage answers, and the record its allocation yields.

An engine (``kvmath.engines.<engine>``) owns, for one Architecture:

1. its settings (``settings()``: one frozen record with the engine's own defaults, built from the
   common arguments ``max_ctx`` / ``max_num_seqs`` / ``tp`` / format plus engine keywords; a keyword of
   another engine is refused naming that engine);
2. its allocation (``allocate()``): the objects the engine really creates, vLLM's per-layer KV specs
   and blocks, llama.cpp's cache objects and streams, transformers' cache tensors;
3. its layer groups (``layer_groups()``): the allocation summed per kind of layer. ``kvmath.derive``
   only adds these up, so its totals cannot disagree with the engine's own figures or log lines.

Dispatch by layer kind goes through :meth:`Engine.rule`: an engine without a rule for a kind of
layer answers with one error naming the engine and the kind.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ..errors import KvMathError, choices
from ..formats import DTYPE_BYTES, KVFormat
from ..model.specs import FULL, LINEAR, SLIDING, Architecture

GROUP_KINDS = ("attention", "mla", "gdn", "mamba2", "kda", "none", "padding")
"""``LayerGroup.kind`` values: softmax attention, MLA latent, Gated DeltaNet, Mamba-2, Kimi Delta
Attention state, blocks without a cache, and vLLM's padding layers (empty group slots that still take
their share of every block)."""


@dataclass(frozen=True)
class StateTensor:
    """One recurrent-state tensor per sequence and rank: its name, shape (elements) and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class LayerGroup:
    """Layers whose cache the engine allocates alike, and what that allocation holds, per card.

    - ``bytes``: what the group's allocation holds for the whole deployment (all its layers, all
      sequences or streams), exact bytes per card. This is the engine's figure, not a formula.
    - ``bytes_per_token``: K + V bytes one token takes in one layer (attention, MLA); 0 for state.
    - ``cells``: token slots per stream and layer the engine allocates (vLLM: blocks x block size one
      request may hold; llama.cpp: cells; transformers: cached positions); ``streams``: sequences or
      llama.cpp streams.
    - ``state``: the recurrent-state tensors of one layer and sequence; ``state_bytes_per_seq`` what
      the engine holds per layer and sequence for them (vLLM: the padded state blocks one request
      holds, llama.cpp: its R and S rows, snapshots included).
    - ``kind``: one of ``GROUP_KINDS``; ``layer_type`` the HF layer type the engine treats the layers
      as (a sliding layer whose window the engine does not apply is ``full_attention`` here, and its
      ``description`` says so).
    """

    layer_type: str
    layers: tuple[int, ...]
    description: str
    bytes: int
    kind: str = "attention"
    kv_heads_per_rank: int = 0
    bytes_per_token: int = 0
    cells: int = 0
    streams: int = 0
    state: tuple[StateTensor, ...] = ()
    state_bytes_per_seq: int = 0
    owns_cache: bool = True
    kv_format: str = ""

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def growing(self) -> bool:
        """True when the term grows with context (full attention and MLA), False when it is bounded."""
        return self.layer_type == FULL and self.owns_cache

    @property
    def sliding(self) -> bool:
        return self.layer_type == SLIDING and self.owns_cache

    @property
    def is_state(self) -> bool:
        return self.layer_type == LINEAR and self.owns_cache


class Engine(ABC):
    """The rules of one engine. See the module docstring for the three questions it answers."""

    name = ""
    label = ""
    """How the engine is written in prose and messages (``vLLM``)."""
    version = ""
    formats: tuple[str, ...] = ()
    setting_names: tuple[str, ...] = ()
    """Keyword arguments :meth:`settings` accepts besides the common ones (its own names)."""

    # --- layer-kind dispatch ------------------------------------------------------------------------
    rules: dict[type, str] = {}
    """Layer spec class -> name of the method that handles it."""

    def rule(self, layer, arch: Architecture):
        """The bound method handling ``layer``'s kind; KvMathError naming engine and kind if none."""
        method = self.rules.get(type(layer))
        if method is None:
            raise KvMathError(
                f"{self.name} has no rule for {type(layer).__name__} layers ({arch.name}, layer {layer.index}); "
                f"kinds it handles: {choices(c.__name__ for c in self.rules)}")
        return getattr(self, method)

    # --- the three questions --------------------------------------------------------------------------
    @abstractmethod
    def settings(self, arch: Architecture, *, max_ctx: int | None, max_num_seqs: int, tp: int,
                 kv_format: str | None, cache_type_k: str | None, cache_type_v: str | None, **kw) -> Any:
        """The engine's settings record for these arguments (engine keywords in ``kw``)."""

    @abstractmethod
    def allocate(self, arch: Architecture, settings) -> Any:
        """What the engine allocates for ``arch`` under ``settings`` (its own record type)."""

    @abstractmethod
    def layer_groups(self, arch: Architecture, allocation) -> tuple[LayerGroup, ...]:
        """The allocation summed per group of alike layers; the groups' ``bytes`` add up to it."""

    @abstractmethod
    def cache_format(self, allocation) -> KVFormat:
        """The cache format the allocation used."""

    # --- tensor parallelism ---------------------------------------------------------------------------
    def tp_problem(self, arch: Architecture, tp: int) -> str | None:
        """Why this engine cannot split ``arch`` over ``tp`` ranks, or None if it can."""
        if tp != 1:
            return f"{self.name} has no tensor parallelism in kvmath's rules (tp must be 1, got {tp})"
        return None

    def check_tp(self, arch: Architecture, tp: int) -> None:
        """Raise KvMathError naming the problem and the valid TP sizes if ``tp`` is not possible."""
        problem = self.tp_problem(arch, tp)
        if problem:
            raise KvMathError(f"{problem}; valid TP for {arch.name} on {self.name}: {choices(valid_tp(arch, self))}")

    # --- command line ---------------------------------------------------------------------------------
    cli_title = ""

    def add_cli_flags(self, group) -> list[str]:
        """Add the engine's own launch flags to an argparse group; return their ``dest`` names.

        Flags are added with ``default=argparse.SUPPRESS`` so the CLI can tell which were given.
        """
        return []

    def settings_from_cli(self, args: dict) -> dict:
        """Map the given engine flags (``dest -> value``) to :meth:`settings` keywords."""
        return dict(args)

    def env_settings(self, env) -> dict:
        """:meth:`settings` keywords the engine's own launcher takes from its environment, read from the
        mapping ``env`` a command passes (the library never reads ``os.environ``). None by default."""
        return {}


def valid_tp(arch: Architecture, engine: Engine, candidates=(1, 2, 4, 8, 16)) -> list[int]:
    """The tensor-parallel sizes among ``candidates`` the engine accepts for this architecture."""
    return [tp for tp in candidates if engine.tp_problem(arch, tp) is None]


def unknown_settings(engine: Engine, given: dict, others: dict[str, tuple[str, ...]]) -> None:
    """Refuse keywords ``engine`` does not take: one line naming the engine a keyword belongs to."""
    bad = sorted(set(given) - set(engine.setting_names))
    if not bad:
        return
    owners = {k: [e for e, names in others.items() if k in names] for k in bad}
    foreign = [k for k in bad if owners[k]]
    if foreign:
        k = foreign[0]
        raise KvMathError(f"{k} is a {' / '.join(owners[k])} setting, not a {engine.name} one; "
                          f"{engine.name} settings: {choices(engine.setting_names)}")
    raise KvMathError(f"unknown {engine.name} setting(s) {choices(bad)}; valid: {choices(engine.setting_names)}")


def merge_empty(groups: list[LayerGroup]) -> tuple[LayerGroup, ...]:
    """Layers without a cache of one type and description become one group."""
    out: list[LayerGroup] = []
    seen: dict[tuple, int] = {}
    for g in groups:
        if g.owns_cache:
            out.append(g)
            continue
        key = (g.layer_type, g.description, g.kind)
        if key in seen:
            prev = out[seen[key]]
            out[seen[key]] = LayerGroup(prev.layer_type, prev.layers + g.layers, prev.description, 0,
                                        kind=prev.kind, owns_cache=False)
        else:
            seen[key] = len(out)
            out.append(g)
    return tuple(out)
