"""An architecture is the list of what each decoder layer keeps between tokens.

One frozen spec per layer, in the spirit of vLLM's ``vllm/v1/kv_cache_interface.py``: a spec says
what the layer caches in model terms (heads, widths, window, state shapes). How many bytes that
becomes depends on the engine and the cache format; that is ``kvmath.engines``' job.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

FULL = "full_attention"
SLIDING = "sliding_attention"
LINEAR = "linear_attention"


@dataclass(frozen=True)
class AttentionLayer:
    """A softmax-attention layer: per token it caches a K row and a V row.

    ``num_kv_heads`` heads of ``head_dim`` (K) and ``v_head_dim`` (V) elements. A sliding layer only
    ever attends to the last ``sliding_window`` tokens. ``k_eq_v`` records the config's
    ``attention_k_eq_v`` (the V projection reuses K's weights); whether V is still stored is an
    engine question. ``kv_source`` is the index of the layer whose cache this layer reads
    (``num_kv_shared_layers``); such a layer owns no cache.
    """

    index: int
    layer_type: str
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    sliding_window: int | None = None
    k_eq_v: bool = False
    kv_source: int | None = None

    @property
    def owns_cache(self) -> bool:
        return self.kv_source is None

    def describe(self) -> str:
        s = f"{self.num_kv_heads} KV heads x {self.head_dim}"
        if self.v_head_dim != self.head_dim:
            s += f" (V {self.v_head_dim})"
        if self.sliding_window:
            s += f", window {self.sliding_window}"
        if self.k_eq_v:
            s += ", K=V weights"
        if self.kv_source is not None:
            s += f", reads layer {self.kv_source}'s cache"
        return s


@dataclass(frozen=True)
class GatedDeltaNetLayer:
    """A Gated DeltaNet linear-attention layer (Qwen3-Next, Qwen 3.5 / 3.6).

    It keeps, per sequence, a causal-conv state over the concatenated q, k, v channels
    (``conv_dim = 2 * num_k_heads * k_head_dim + num_v_heads * v_head_dim`` channels) and a recurrent
    state of one ``k_head_dim x v_head_dim`` matrix per value head (Yang et al., "Gated Delta
    Networks", ICLR 2025; transformers ``models/qwen3_next``, vLLM ``mamba_utils.py``).
    """

    index: int
    num_k_heads: int
    num_v_heads: int
    k_head_dim: int
    v_head_dim: int
    conv_kernel: int
    layer_type: str = LINEAR

    @property
    def conv_dim(self) -> int:
        return 2 * self.num_k_heads * self.k_head_dim + self.num_v_heads * self.v_head_dim

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return (
            f"{self.num_k_heads} K heads x {self.k_head_dim}, {self.num_v_heads} V heads x "
            f"{self.v_head_dim}, conv kernel {self.conv_kernel}"
        )


LayerSpec = AttentionLayer | GatedDeltaNetLayer


@dataclass(frozen=True)
class Architecture:
    """What a model caches, layer by layer, plus the config facts engines need.

    ``dtype`` is the model's torch dtype name (``bfloat16``); ``mamba_ssm_dtype`` the config's
    recurrent-state dtype when it names one (Qwen 3.5 / 3.6: ``float32``), else None.
    """

    name: str
    model_type: str
    layers: tuple[LayerSpec, ...]
    num_attention_heads: int
    dtype: str
    max_position_embeddings: int | None = None
    mamba_ssm_dtype: str | None = None
    mtp_num_hidden_layers: int = 0
    source: str = ""
    extras: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def num_hidden_layers(self) -> int:
        return len(self.layers)

    def layer_type_counts(self) -> dict[str, int]:
        """Layers per type, e.g. ``{'linear_attention': 48, 'full_attention': 16}``."""
        return dict(Counter(layer.layer_type for layer in self.layers))

    def layers_of(self, layer_type: str) -> list[LayerSpec]:
        return [layer for layer in self.layers if layer.layer_type == layer_type]

    def attention_layers(self) -> list[AttentionLayer]:
        return [layer for layer in self.layers if isinstance(layer, AttentionLayer)]

    def linear_layers(self) -> list[GatedDeltaNetLayer]:
        return [layer for layer in self.layers if isinstance(layer, GatedDeltaNetLayer)]

    def kv_head_counts(self) -> set[int]:
        return {layer.num_kv_heads for layer in self.attention_layers()}
