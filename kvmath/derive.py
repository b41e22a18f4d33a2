"""The cache of one model on one engine: the engine's allocation, summed per group of alike layers.

``derive`` asks the engine (``kvmath.engines``) for its settings, its allocation and the allocation's
layer groups, and reports per group and in total, per card (one tensor-parallel rank):

- ``bytes``: what the group's allocation holds for the whole deployment (all sequences);
- ``bytes_per_token``: K + V bytes one token adds in a layer (the growing term for full attention;
  for an MLA layer the latent row the engine stores);
- ``cells`` / ``streams``: the token slots the engine allocates per layer;
- ``state_bytes_per_seq``: what the engine holds per sequence for a recurrent layer (GDN, Mamba-2, KDA).

Each group has a ``kind``: ``attention``, ``mla``, ``gdn``, ``mamba2``, ``kda``, ``none`` (MLP / MoE
blocks that keep nothing) or ``padding`` (vLLM's padding layers). The engine is engine-agnostic here:
no rule of any engine is restated in this module. All byte figures are exact Python integers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .engines import Engine, LayerGroup, get_engine, settings_owners
from .engines.base import unknown_settings
from .formats import KVFormat
from .model.load import load_architecture
from .model.specs import CROSS, Architecture
from .units import fmt_bytes
from .validate import MAX_TOKENS, MAX_TP, check_name, check_positive


@dataclass(frozen=True)
class Derivation:
    """The cache of one model on one engine, format and deployment; bytes are per card (rank)."""

    arch: Architecture
    engine: str
    engine_version: str
    kv_format: KVFormat
    deployment: Any
    groups: tuple[LayerGroup, ...]
    allocation: Any = None

    @property
    def bytes_per_token(self) -> int:
        """Growing KV bytes per token per sequence per card: sum over full-attention layers."""
        return sum(g.bytes_per_token * g.n_layers for g in self.groups if g.growing)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the engine's allocation says it assumed or changed (vLLM: block alignment, drafter layers,
        speculative tokens without drafter layers; llama.cpp: flash attention turned on, V padding)."""
        return tuple(getattr(self.allocation, "notes", ()) or ())

    @property
    def settings(self):
        """The engine's settings record (``VllmSettings``, ``LlamaCppSettings``, ``TransformersSettings``)."""
        return self.deployment

    @property
    def growing_bytes(self) -> int:
        """Full-attention KV for the whole deployment, per card (engine's cell rounding included)."""
        return sum(g.bytes for g in self.groups if g.growing)

    @property
    def sliding_bytes(self) -> int:
        """Sliding-window KV for the whole deployment, per card (bounded by the window)."""
        return sum(g.bytes for g in self.groups if g.sliding)

    @property
    def state_bytes(self) -> int:
        """Recurrent state of linear-attention layers for all sequences, per card."""
        return sum(g.bytes for g in self.groups if g.is_state)

    @property
    def state_bytes_per_seq(self) -> int:
        """What the engine holds per sequence for the recurrent state, over all state layers."""
        return sum(g.state_bytes_per_seq * g.n_layers for g in self.groups if g.is_state)

    @property
    def padding_bytes(self) -> int:
        """vLLM's padding layers: empty slots of a KV-cache group that still take their page (else 0)."""
        return sum(g.bytes for g in self.groups if g.kind == "padding")

    @property
    def cross_bytes(self) -> int:
        """Cross-attention K/V over an encoder's output (Whisper), all sequences, per card: fixed per sequence by
        the encoder's length, not by the decoder's context (0 for a decoder-only model)."""
        return sum(g.bytes for g in self.groups if g.layer_type == CROSS and g.owns_cache)

    @property
    def fixed_bytes(self) -> int:
        """Everything that does not grow with context: sliding window, recurrent state and cross-attention K/V."""
        return self.sliding_bytes + self.state_bytes + self.cross_bytes

    @property
    def total_bytes(self) -> int:
        """Everything the engine's allocation holds, per card: the sum of every group's bytes."""
        return sum(g.bytes for g in self.groups)

    def to_dict(self) -> dict:
        """The derivation as plain JSON types; every byte figure is an integer number of bytes."""
        dep = asdict(self.deployment) if self.deployment is not None else {}
        return {
            "model": self.arch.name,
            "model_type": self.arch.model_type,
            "source": self.arch.source,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "kv_format": {
                "name": self.kv_format.name,
                "k": self.kv_format.k.name,
                "v": self.kv_format.v.name,
                "k_bits_per_element": float(self.kv_format.k.bits_per_element),
                "v_bits_per_element": float(self.kv_format.v.bits_per_element),
                "source": self.kv_format.source,
            },
            "deployment": dep,
            "units": "bytes, per card (tensor-parallel rank)",
            "layer_groups": [
                {
                    "layer_type": g.layer_type,
                    "layers": list(g.layers),
                    "n_layers": g.n_layers,
                    "description": g.description,
                    "kind": g.kind,
                    "owns_cache": g.owns_cache,
                    "kv_format": g.kv_format,
                    "kv_heads_per_rank": g.kv_heads_per_rank,
                    "bytes_per_token_per_layer": g.bytes_per_token,
                    "cells": g.cells,
                    "streams": g.streams,
                    "state_tensors": [
                        {"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "bytes": t.nbytes} for t in g.state
                    ],
                    "state_bytes_per_seq_per_layer": g.state_bytes_per_seq,
                    "bytes": g.bytes,
                }
                for g in self.groups
            ],
            "notes": list(self.notes),
            "totals": {
                "bytes_per_token": self.bytes_per_token,
                "growing_bytes": self.growing_bytes,
                "sliding_bytes": self.sliding_bytes,
                "state_bytes_per_seq": self.state_bytes_per_seq,
                "state_bytes": self.state_bytes,
                "fixed_bytes": self.fixed_bytes,
                "padding_bytes": self.padding_bytes,
                "total_bytes": self.total_bytes,
            },
        }

    def summary(self) -> str:
        """A short human-readable line: total per card in GiB and the per-token figure."""
        return (
            f"{self.arch.name} on {self.engine} ({self.kv_format.name}, TP {self.deployment.tp}): "
            f"{self.bytes_per_token:,} B/token, total {fmt_bytes(self.total_bytes, 'GiB')} per card"
        )


def derive(
    model,
    *,
    engine: str | Engine = "vllm",
    kv_format: str | None = None,
    cache_type_k: str | None = None,
    cache_type_v: str | None = None,
    tp: int = 1,
    max_ctx: int | None = None,
    max_num_seqs: int = 1,
    **settings,
) -> Derivation:
    """Derive the per-card cache bytes of ``model`` on ``engine`` from the engine's own allocation.

    ``model`` is an Architecture, a config dict, a config.json path, a model folder, a ``.gguf`` file
    or a known model id. ``kv_format`` is the engine's format name (vLLM ``--kv-cache-dtype``;
    llama.cpp one type for K and V; transformers the cache dtype), or ``cache_type_k`` /
    ``cache_type_v`` for llama.cpp. ``max_ctx`` is tokens per sequence (vLLM ``max_model_len``,
    default the model's ``max_position_embeddings``), ``max_num_seqs`` the sequences held at once
    (vLLM ``max_num_seqs``, llama.cpp ``-np``, transformers batch size). Other keyword arguments are
    the engine's own settings (``VllmSettings`` fields, ``LlamaCppSettings`` fields such as ``n_ubatch``,
    ``swa_full``, ``flash_attn``, ``build``); one of another engine is refused naming its engine.

    Every byte figure is the engine's allocation summed (``Engine.layer_groups``): vLLM's per-request
    blocks after its block alignment and grouping (``total_bytes`` at one sequence equals the vLLM
    plan's ``needed_bytes``), llama.cpp's cache objects (what its size lines add up to), transformers'
    cache tensors.

    Raises KvMathError for an unknown model, engine, format or setting, a TP the heads cannot be split
    over, non-positive counts, or a configuration the engine refuses at start-up.
    """
    # argument checks, before the model is read or anything is computed
    for name, value in (("kv_format", kv_format), ("cache_type_k", cache_type_k), ("cache_type_v", cache_type_v)):
        check_name(value, name, maximum=64, optional=True)
    tp = check_positive(tp, "tp", maximum=MAX_TP)
    if max_ctx is not None:
        max_ctx = check_positive(max_ctx, "max_ctx", maximum=MAX_TOKENS)
    max_num_seqs = check_positive(max_num_seqs, "max_num_seqs", maximum=MAX_TOKENS)
    eng = get_engine(engine)
    arch = load_architecture(model)
    unknown_settings(eng, settings, settings_owners())
    s = eng.settings(arch, max_ctx=max_ctx, max_num_seqs=max_num_seqs, tp=tp, kv_format=kv_format,
                     cache_type_k=cache_type_k, cache_type_v=cache_type_v, **settings)
    allocation = eng.allocate(arch, s)
    groups = eng.layer_groups(arch, allocation)
    return Derivation(arch, eng.name, eng.version, eng.cache_format(allocation), s, groups, allocation)
