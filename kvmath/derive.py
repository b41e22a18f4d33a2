"""From an Architecture, an engine, a cache format and a Deployment to exact bytes per card.

``derive`` groups identical layers (same type, heads, widths, window) and reports, per group and in
total, per card (one tensor-parallel rank):

- ``bytes_per_token``: K + V bytes one token adds in a full-attention layer (the growing term);
  for an MLA layer the latent row(s) the engine stores;
- ``cells`` / ``streams``: the token slots the engine allocates per layer for the deployment;
- ``state_bytes_per_seq``: recurrent state of a linear-attention layer (GDN, Mamba-2, KDA),
  independent of context;
- ``bytes``: what the group holds for the whole deployment (all sequences).

Each group has a ``kind``: ``attention``, ``mla``, ``gdn``, ``mamba2``, ``kda`` or ``none`` (MLP / MoE
blocks that keep nothing).

All byte figures are exact Python integers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from .arch import (
    FULL, LINEAR, SLIDING, Architecture, AttentionLayer, GatedDeltaNetLayer, KDALayer, MLALayer, Mamba2Layer,
    NoCacheLayer,
)
from .config import load_architecture
from .engines import Deployment, Engine, StateTensor, get_engine
from .formats import KVFormat
from .units import GiB, fmt_bytes


@dataclass(frozen=True)
class LayerGroup:
    """Layers that cache the same thing, with their per-card byte terms for one deployment."""

    layer_type: str
    layers: tuple[int, ...]
    description: str
    kv_heads_per_rank: int = 0
    bytes_per_token: int = 0  # K + V of one token in one layer, per rank
    cells: int = 0  # token slots per stream and layer
    streams: int = 0
    state: tuple[StateTensor, ...] = ()
    state_bytes_per_seq: int = 0  # per layer, per sequence, per rank
    owns_cache: bool = True
    kv_format: str = ""
    kind: str = "attention"  # attention, mla, gdn, mamba2, kda or none

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def growing(self) -> bool:
        """True when the term grows with context (full attention), False when it is bounded."""
        return self.layer_type == FULL and self.owns_cache

    @property
    def bytes(self) -> int:
        """Bytes this group holds for the deployment, per rank (all layers, all streams)."""
        if not self.owns_cache:
            return 0
        per_layer = self.bytes_per_token * self.cells * self.streams + self.state_bytes_per_seq * self.streams
        return per_layer * self.n_layers


@dataclass(frozen=True)
class Derivation:
    """The cache of one model on one engine, format and deployment; bytes are per card (rank)."""

    arch: Architecture
    engine: str
    engine_version: str
    kv_format: KVFormat
    deployment: Deployment
    groups: tuple[LayerGroup, ...]

    @property
    def bytes_per_token(self) -> int:
        """Growing KV bytes per token per sequence per card: sum over full-attention layers."""
        return sum(g.bytes_per_token * g.n_layers for g in self.groups if g.growing)

    @property
    def growing_bytes(self) -> int:
        """Full-attention KV for the whole deployment, per card (engine's cell rounding included)."""
        return sum(g.bytes for g in self.groups if g.growing)

    @property
    def sliding_bytes(self) -> int:
        """Sliding-window KV for the whole deployment, per card (bounded by the window)."""
        return sum(g.bytes for g in self.groups if g.layer_type == SLIDING)

    @property
    def state_bytes(self) -> int:
        """Recurrent state of linear-attention layers for all sequences, per card."""
        return sum(g.bytes for g in self.groups if g.layer_type == LINEAR)

    @property
    def state_bytes_per_seq(self) -> int:
        return sum(g.state_bytes_per_seq * g.n_layers for g in self.groups if g.layer_type == LINEAR)

    @property
    def fixed_bytes(self) -> int:
        """Everything that does not grow with context: sliding window plus recurrent state."""
        return self.sliding_bytes + self.state_bytes

    @property
    def total_bytes(self) -> int:
        return self.growing_bytes + self.fixed_bytes

    def to_dict(self) -> dict:
        """The derivation as plain JSON types; every byte figure is an integer number of bytes."""
        dep = asdict(self.deployment)
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
            "totals": {
                "bytes_per_token": self.bytes_per_token,
                "growing_bytes": self.growing_bytes,
                "sliding_bytes": self.sliding_bytes,
                "state_bytes_per_seq": self.state_bytes_per_seq,
                "state_bytes": self.state_bytes,
                "fixed_bytes": self.fixed_bytes,
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
    **deployment,
) -> Derivation:
    """Derive the per-card cache bytes of ``model`` on ``engine``.

    ``model`` is an Architecture, a config dict, a config.json path or a known model id.
    ``kv_format`` is the engine's format name (vLLM ``--kv-cache-dtype``; llama.cpp one type for K
    and V; transformers the cache dtype), or ``cache_type_k`` / ``cache_type_v`` for llama.cpp.
    ``max_ctx`` defaults to the model's ``max_position_embeddings``. Other keyword arguments are
    Deployment fields (``block_size``, ``max_num_batched_tokens``, ``n_ubatch``, ``swa_full``,
    ``mamba_ssm_cache_dtype``, ``llamacpp_build``, ...).

    Raises KvMathError for an unknown model, engine or format, a TP the heads cannot be split over,
    or non-positive counts.
    """
    arch = model if isinstance(model, Architecture) else load_architecture(model)
    eng = engine if isinstance(engine, Engine) else get_engine(engine)
    if max_ctx is None:
        if not arch.max_position_embeddings:
            from .errors import KvMathError

            raise KvMathError(f"{arch.name}: config has no max_position_embeddings; pass max_ctx")
        max_ctx = arch.max_position_embeddings
    from dataclasses import fields

    unknown = sorted(set(deployment) - {f.name for f in fields(Deployment)})
    if unknown:
        from .errors import KvMathError, choices

        raise KvMathError(f"unknown deployment setting(s) {choices(unknown)}; valid: "
                          f"{choices(f.name for f in fields(Deployment))}")
    dep = Deployment(max_ctx=max_ctx, max_num_seqs=max_num_seqs, tp=tp, **deployment)
    eng.check_tp(arch, dep.tp)
    fmt = eng.cache_format(arch, kv_format, cache_type_k, cache_type_v)

    groups: dict[tuple, list] = {}
    unwindowed: set[int] = set()
    for layer in arch.layers:
        if isinstance(layer, AttentionLayer) and layer.layer_type == SLIDING and not eng.applies_window(layer, arch):
            # the engine caches this layer in full (e.g. llama.cpp has no window for Mistral 7B)
            layer = replace(layer, layer_type=FULL, sliding_window=None)
            unwindowed.add(layer.index)
        if isinstance(layer, AttentionLayer):
            key = ("attention", layer.layer_type, layer.num_kv_heads, layer.head_dim, layer.v_head_dim,
                   layer.sliding_window, layer.k_eq_v, layer.owns_cache, eng.layer_format(layer, arch, fmt).name,
                   layer.index in unwindowed)
        elif isinstance(layer, MLALayer):
            key = ("mla", layer.layer_type, layer.kv_lora_rank, layer.qk_rope_head_dim, layer.qk_nope_head_dim,
                   layer.v_head_dim)
        elif isinstance(layer, GatedDeltaNetLayer):
            key = ("gdn", layer.layer_type, layer.num_k_heads, layer.num_v_heads, layer.k_head_dim,
                   layer.v_head_dim, layer.conv_kernel)
        elif isinstance(layer, Mamba2Layer):
            key = ("mamba2", layer.layer_type, layer.num_heads, layer.head_dim, layer.state_size, layer.n_groups,
                   layer.conv_kernel)
        elif isinstance(layer, KDALayer):
            key = ("kda", layer.layer_type, layer.num_heads, layer.head_dim, layer.conv_kernel)
        elif isinstance(layer, NoCacheLayer):
            key = ("none", layer.layer_type)
        else:  # pragma: no cover - every LayerSpec is handled above
            raise TypeError(f"unknown layer spec {type(layer).__name__}")
        groups.setdefault(key, []).append(layer)

    out = []
    for key, layers in groups.items():
        kind = key[0]
        first = layers[0]
        idx = tuple(layer.index for layer in layers)
        if kind == "attention":
            heads = eng.kv_heads_per_rank(first.num_kv_heads, dep.tp)
            layer_fmt = eng.layer_format(first, arch, fmt)
            v_dim = first.v_head_dim if eng.stores_v(first) else 0
            per_token = layer_fmt.token_bytes(heads, first.head_dim, v_dim)
            cells, streams = eng.attention_cells(first, dep)
            desc = first.describe() + ("" if layer_fmt is fmt else f", stored as {layer_fmt.name}")
            if first.index in unwindowed:
                desc += f", window {arch.layers[first.index].sliding_window} not applied by {eng.name}"
            out.append(LayerGroup(first.layer_type, idx, desc, heads, per_token, cells, streams,
                                  owns_cache=first.owns_cache, kv_format=layer_fmt.name, kind=kind))
        elif kind == "mla":
            # One latent "head" per token, replicated on every tensor-parallel rank.
            layer_fmt = eng.mla_format(first, arch, fmt)
            k_dim, v_dim = eng.mla_dims(first, arch, dep)
            per_token = layer_fmt.token_bytes(1, k_dim, v_dim)
            cells, streams = eng.attention_cells(first, dep)
            desc = first.describe() + f"; stored as K {k_dim}" + (f" + V {v_dim}" if v_dim else ", no V")
            out.append(LayerGroup(first.layer_type, idx, desc, 1, per_token, cells, streams,
                                  kv_format=layer_fmt.name, kind=kind))
        elif kind == "none":
            out.append(LayerGroup(first.layer_type, idx, first.describe(), owns_cache=False, kind=kind))
        else:
            state = tuple(eng.state_tensors(first, arch, dep))
            out.append(LayerGroup(first.layer_type, idx, first.describe(), state=state,
                                  state_bytes_per_seq=sum(t.nbytes for t in state),
                                  streams=eng.state_streams(dep), kind=kind))
    return Derivation(arch, eng.name, eng.version, fmt, dep, tuple(out))
