"""An architecture is the list of what each decoder layer keeps between tokens.

One frozen spec per layer, in the spirit of vLLM's ``vllm/v1/kv_cache_interface.py``: a spec says
what the layer caches in model terms (heads, widths, window, state shapes). How many bytes that
becomes depends on the engine and the cache format; that is ``kvmath.engines``' job.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import ClassVar

FULL = "full_attention"
SLIDING = "sliding_attention"
LINEAR = "linear_attention"
MLP = "mlp"
MOE = "moe"
CHUNKED = "chunked_attention"
CONV = "conv"
HYBRID = "hybrid"
CROSS = "cross_attention"
"""Layer type names as transformers 5.23 writes them in ``layer_types`` (``NemotronHConfig`` maps its
``hybrid_override_pattern`` letters M / * / - / E to linear_attention / full_attention / mlp / moe;
``KimiLinearConfig`` calls MLA layers full_attention and KDA layers linear_attention; ``FalconH1Config`` calls
every layer ``hybrid``: attention and a Mamba-2 mixer side by side)."""


# Each spec class carries ``kind``, the one name the engines know it by: the key of an engine's
# ``rules`` table and, for the kinds an engine reports, its ``LayerGroup.kind``.


@dataclass(frozen=True)
class AttentionLayer:
    """A softmax-attention layer: per token it caches a K row and a V row.

    ``num_kv_heads`` heads of ``head_dim`` (K) and ``v_head_dim`` (V) elements. A sliding layer only
    ever attends to the last ``sliding_window`` tokens. ``k_eq_v`` records the config's
    ``attention_k_eq_v`` (the V projection reuses K's weights); whether V is still stored is an
    engine question. ``kv_source`` is the index of the layer whose cache this layer reads
    (``num_kv_shared_layers``); such a layer owns no cache.
    """

    kind: ClassVar[str] = "attention"

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

    kind: ClassVar[str] = "gdn"

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


@dataclass(frozen=True)
class MLALayer:
    """A multi-head latent attention layer (DeepSeek-V2/V3, Kimi Linear's full-attention layers).

    Per token the model keeps one compressed latent of ``kv_lora_rank`` elements and one shared
    RoPE key of ``qk_rope_head_dim`` elements, whatever the number of query heads (DeepSeek-V2
    paper, section 2.1; ``kv_a_proj_with_mqa`` in transformers models/deepseek_v3). How those
    ``kv_lora_rank + qk_rope_head_dim`` elements are stored is an engine question
    (``kvmath.engines``): vLLM and llama.cpp keep them as one 576-wide row of a single KV head,
    transformers as keys ``[.., kv_lora_rank]`` plus values ``[.., qk_rope_head_dim]``.
    ``qk_nope_head_dim`` and ``v_head_dim`` are the decompressed per-head widths (not cached).
    """

    kind: ClassVar[str] = "mla"

    index: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    layer_type: str = FULL

    @property
    def latent_dim(self) -> int:
        """Elements cached per token: ``kv_lora_rank + qk_rope_head_dim`` (576 for DeepSeek-V3)."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return f"MLA latent {self.kv_lora_rank} + RoPE key {self.qk_rope_head_dim} (one shared KV head)"


@dataclass(frozen=True)
class Mamba2Layer:
    """A Mamba-2 (SSD) mixer layer (Nemotron-H ``M`` blocks).

    Per sequence it keeps a causal-conv state over ``conv_dim = num_heads * head_dim + 2 * n_groups *
    state_size`` channels (x, B and C) and an SSM state of ``num_heads x head_dim x state_size``
    elements (Dao & Gu, "Transformers are SSMs", ICML 2024; transformers models/nemotron_h
    ``NemotronHMamba2Mixer``: ``intermediate_size = mamba_num_heads * mamba_head_dim``).
    """

    kind: ClassVar[str] = "mamba2"

    index: int
    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    layer_type: str = LINEAR

    @property
    def intermediate_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        return self.intermediate_size + 2 * self.n_groups * self.state_size

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return (
            f"Mamba-2: {self.num_heads} heads x {self.head_dim}, state {self.state_size}, "
            f"{self.n_groups} groups, conv kernel {self.conv_kernel}"
        )


@dataclass(frozen=True)
class KDALayer:
    """A Kimi Delta Attention layer (Kimi Linear's ``kda_layers``).

    Per sequence it keeps short-conv states over the q, k and v projections (``conv_dim = 3 *
    num_heads * head_dim`` channels; q and k have as many heads as v in Kimi Linear) and one
    ``head_dim x head_dim`` recurrent matrix per head (transformers models/kimi_linear
    ``KimiLinearDeltaAttention``; vLLM ``kda_state_shape``).
    """

    kind: ClassVar[str] = "kda"

    index: int
    num_heads: int
    head_dim: int
    conv_kernel: int
    layer_type: str = LINEAR

    @property
    def conv_dim(self) -> int:
        return 3 * self.num_heads * self.head_dim

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return f"KDA: {self.num_heads} heads x {self.head_dim}, conv kernel {self.conv_kernel}"


@dataclass(frozen=True)
class NoCacheLayer:
    """A block that keeps nothing between tokens: an MLP or MoE-only layer (Nemotron-H ``-`` / ``E``).

    transformers 5.23 gives it a ``DummyLayer`` (no tensors); vLLM builds no KV spec for it;
    llama.cpp allocates zero-width K/V rows (``n_head_kv(il) = 0``).
    """

    kind: ClassVar[str] = "none"

    index: int
    layer_type: str = MLP

    @property
    def owns_cache(self) -> bool:
        return False

    def describe(self) -> str:
        return f"{self.layer_type.upper()} block, no cache"


@dataclass(frozen=True)
class ChunkedAttentionLayer:
    """A chunked local-attention layer (Llama 4's RoPE layers): a token attends only to the tokens of its own
    ``attention_chunk_size``-token chunk.

    ``Llama4TextConfig.__post_init__`` (transformers 5.23) marks layer i ``chunked_attention`` when
    ``no_rope_layers[i]`` is 1; ``cache_utils.get_layer_types_and_kwargs`` builds a sliding-window cache
    layer of window ``attention_chunk_size`` for it. vLLM (``ChunkedLocalAttentionSpec``) and llama.cpp
    (``LLAMA_SWA_TYPE_CHUNKED``) keep their own amounts; an engine without a rule for this kind refuses it.
    """

    kind: ClassVar[str] = "chunked"

    index: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    attention_chunk_size: int
    layer_type: str = CHUNKED

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return f"{self.num_kv_heads} KV heads x {self.head_dim}, chunks of {self.attention_chunk_size}"


@dataclass(frozen=True)
class Mamba1Layer:
    """A Mamba-1 (S6) mixer layer (``mamba``, ``falcon_mamba``, Jamba's mamba layers).

    Per sequence it keeps a causal-conv state over ``intermediate_size`` channels (``expand x
    hidden_size``) of ``conv_kernel`` columns and an SSM state of ``intermediate_size x state_size``
    elements (Gu & Dao, "Mamba", 2023; transformers 5.23 models/mamba ``MambaMixer``:
    ``intermediate_size = int(expand * hidden_size)``, ``ssm_state_size = state_size``,
    ``conv_kernel_size = conv_kernel``).
    """

    kind: ClassVar[str] = "mamba1"

    index: int
    intermediate_size: int
    state_size: int
    conv_kernel: int
    layer_type: str = LINEAR

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return f"Mamba-1: {self.intermediate_size} channels, state {self.state_size}, conv kernel {self.conv_kernel}"


@dataclass(frozen=True)
class ShortConvLayer:
    """A gated short-convolution block (LFM2's ``conv`` layers): per sequence a conv state of ``width``
    channels (``hidden_size``) and ``conv_kernel`` columns (``conv_L_cache``), no recurrent state
    (transformers 5.23 models/lfm2 ``Lfm2ShortConv``: ``conv1d(hidden_size, hidden_size, L_cache)``)."""

    kind: ClassVar[str] = "conv"

    index: int
    width: int
    conv_kernel: int
    layer_type: str = CONV

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return f"short conv: {self.width} channels, kernel {self.conv_kernel}"


@dataclass(frozen=True)
class DSALayer:
    """An MLA layer with DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5).

    Besides the MLA latent (``kv_lora_rank + qk_rope_head_dim`` elements per token, as :class:`MLALayer`)
    the indexer caches one key of ``index_head_dim`` elements per token (transformers 5.23
    ``DynamicIndexedLayer``: ``indexer_keys [B, 1, T, index_head_dim]``; vLLM ``DeepseekV32IndexerCache``).
    ``index_n_heads`` query heads score the keys; ``index_topk`` tokens are kept per query (not cached).
    """

    kind: ClassVar[str] = "dsa"

    index: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    index_head_dim: int
    index_n_heads: int
    index_topk: int
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    layer_type: str = FULL

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return (f"MLA latent {self.kv_lora_rank} + RoPE key {self.qk_rope_head_dim}, DSA indexer key "
                f"{self.index_head_dim} (top {self.index_topk})")


@dataclass(frozen=True)
class AttentionMamba2Layer:
    """A decoder layer that runs softmax attention and a Mamba-2 mixer side by side (Falcon-H1's ``hybrid``
    layers), so it keeps both a K/V row per token and a Mamba-2 state per sequence.

    ``attention`` and ``mamba`` are the two parts as their own specs (same ``index``). transformers 5.23 caches
    them in one ``LinearAttentionAndFullAttentionLayer`` (keys, values, conv_states, recurrent_states); vLLM
    registers the two modules as two KV-cache layers (``model.layers.i.self_attn.attn`` and
    ``model.layers.i.mamba``, vllm/model_executor/models/falcon_h1.py); llama.cpp's hybrid memory takes every
    layer into both its K/V cache and its recurrent memory (src/llama-model.cpp ``create_memory``, FALCON_H1). An
    engine without a rule for this kind refuses it (``base.require_kinds``: vLLM and SGLang here).
    """

    kind: ClassVar[str] = "attention_mamba2"

    index: int
    attention: AttentionLayer
    mamba: Mamba2Layer
    layer_type: str = HYBRID

    def __post_init__(self):
        if self.attention.index != self.index or self.mamba.index != self.index:
            raise ValueError("the attention and Mamba-2 parts of a hybrid layer must carry its index")

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return f"attention {self.attention.describe()} + {self.mamba.describe()}"


@dataclass(frozen=True)
class LightningLayer:
    """A lightning-attention (linear attention) layer: MiniMax-Text-01 / MiniMax-M1's ``linear_attention`` layers.

    Per sequence it keeps one ``head_dim x head_dim`` matrix (the running K^T V sum) per attention head,
    ``num_heads`` heads (``num_attention_heads``, not the KV heads), and no conv state (Qin et al., "Lightning
    Attention-2", 2024; transformers 5.23 models/minimax ``MiniMaxLightningAttention``: ``attn_weights_inter``
    ``[B, num_attention_heads, head_dim, head_dim]`` in the activation dtype, kept by ``MiniMaxCache.linear_cache``).
    """

    kind: ClassVar[str] = "lightning"

    index: int
    num_heads: int
    head_dim: int
    layer_type: str = LINEAR

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return f"lightning attention: {self.num_heads} heads x {self.head_dim} x {self.head_dim} state"


@dataclass(frozen=True)
class CompressedAttentionLayer:
    """A DeepSeek-V4 attention layer: one shared K=V head over a sliding window, plus (``compress_rate`` > 0) a
    compressor that folds every ``compress_rate`` tokens into one long-range entry.

    ``layer_type`` is transformers 5.23's (configuration_deepseek_v4.py ``DEEPSEEK_V4_LAYER_TYPES``):
    ``sliding_attention`` (window only, ``compress_rate`` 0), ``compressed_sparse_attention`` (CSA: overlapping
    windows, so the compressor projects ``2 x head_dim`` per token and carries the last window's first half to the
    next call, ``overlap``; a lightning indexer of ``index_head_dim`` runs its own compressor over the same
    windows and picks ``index_topk`` entries with ``index_n_heads`` heads) and ``heavily_compressed_attention``
    (HCA: disjoint windows, no indexer). ``head_dim`` is the K=V row width, ``sliding_window`` the window in
    tokens. What is kept between tokens is an engine question: transformers keeps the window, the compressed
    entries and the tokens of the window not yet closed (``DeepseekV4CSACache`` / ``DeepseekV4HCACache``); vLLM
    0.24 allocates an MLA-style compressed cache, a separate SWA cache and compressor state caches
    (vllm/models/deepseek_v4/attention.py, compressor.py), which kvmath does not model, so it refuses the kind.
    """

    kind: ClassVar[str] = "compressed"

    index: int
    layer_type: str
    head_dim: int
    sliding_window: int
    compress_rate: int = 0
    overlap: bool = False
    index_head_dim: int = 0
    index_n_heads: int = 0
    index_topk: int = 0

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        s = f"1 shared K=V head x {self.head_dim}, window {self.sliding_window}"
        if self.compress_rate:
            s += f"; 1 compressed entry per {self.compress_rate} tokens" + (" (overlapping windows)" if self.overlap
                                                                            else "")
        if self.index_head_dim:
            s += f"; indexer key {self.index_head_dim} (top {self.index_topk})"
        return s


@dataclass(frozen=True)
class RGLRULayer:
    """A Griffin / RecurrentGemma recurrent block (``recurrent`` in ``block_types``): a causal conv over ``lru_width``
    channels and the RG-LRU's hidden state, ``lru_width`` elements per sequence (De et al., "Griffin", 2024;
    transformers 5.23 models/recurrent_gemma ``RecurrentGemmaRecurrentBlock``: ``conv1d_state [B, lru_width,
    conv1d_width - 1]`` in the activation dtype, ``rg_lru.recurrent_states [B, lru_width]`` in float32). transformers
    keeps both on the module, not in the ``DynamicCache``. An engine without a rule for this kind refuses it."""

    kind: ClassVar[str] = "rglru"

    index: int
    lru_width: int
    conv_kernel: int
    layer_type: str = LINEAR

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        return f"RG-LRU: {self.lru_width} channels, conv width {self.conv_kernel}"


@dataclass(frozen=True)
class CrossAttentionLayer:
    """A decoder layer that attends to an encoder's output (Whisper's decoder layers, Llama 3.2 Vision's
    ``cross_attention_layers``): it caches K and V over ``source_tokens`` encoder positions per sequence, computed
    once from the encoder output, so the cross part does NOT grow with the decoder's context.

    ``num_kv_heads`` heads of ``head_dim`` (K) and ``v_head_dim`` (V) elements per source position.
    ``self_attention``: the layer's own causal self-attention (Whisper: every decoder layer has both, transformers
    5.23 ``EncoderDecoderCache`` keeps them in ``self_attention_cache`` / ``cross_attention_cache``), None for a
    layer that only cross-attends (mllama's ``MllamaCrossAttentionDecoderLayer``). ``source`` names what the
    source positions are (``max_source_positions`` audio frames, vision tokens per image). An engine without a
    rule for this kind refuses it.
    """

    kind: ClassVar[str] = "cross_attention"

    index: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    source_tokens: int
    source: str = "encoder positions"
    self_attention: AttentionLayer | None = None
    layer_type: str = CROSS

    def __post_init__(self):
        if self.self_attention is not None and self.self_attention.index != self.index:
            raise ValueError("the self-attention part of a cross-attention layer must carry its index")

    @property
    def owns_cache(self) -> bool:
        return True

    def describe(self) -> str:
        s = (f"cross-attention {self.num_kv_heads} KV heads x {self.head_dim} over {self.source_tokens:,} "
             f"{self.source} per sequence (fixed: does not grow with the decoder's context)")
        if self.self_attention is not None:
            s = f"self-attention {self.self_attention.describe()} + {s}"
        return s


@dataclass(frozen=True)
class VisionTower:
    """The vision encoder's size, as its ``vision_config`` states it (0 where the config does not say).

    ``depth``: blocks (``depth`` / ``num_hidden_layers``); ``hidden_size``, ``intermediate_size``,
    ``num_heads`` (``num_heads`` / ``num_attention_heads``), ``patch_size``, ``spatial_merge_size``,
    ``temporal_patch_size``, ``out_hidden_size`` (the merger's output width), ``model_type`` of the tower.
    ``soft_tokens_per_image``: the wrapper's ``vision_soft_tokens_per_image`` (Gemma 4), else 0.
    """

    model_type: str = ""
    depth: int = 0
    hidden_size: int = 0
    intermediate_size: int = 0
    num_heads: int = 0
    patch_size: int = 0
    spatial_merge_size: int = 0
    temporal_patch_size: int = 0
    out_hidden_size: int = 0
    soft_tokens_per_image: int = 0


LayerSpec = (AttentionLayer | GatedDeltaNetLayer | MLALayer | Mamba2Layer | KDALayer | NoCacheLayer
             | ChunkedAttentionLayer | Mamba1Layer | ShortConvLayer | DSALayer | AttentionMamba2Layer | LightningLayer
             | CompressedAttentionLayer | RGLRULayer | CrossAttentionLayer)
LAYER_KINDS = (AttentionLayer, GatedDeltaNetLayer, MLALayer, Mamba2Layer, KDALayer, NoCacheLayer,
               ChunkedAttentionLayer, Mamba1Layer, ShortConvLayer, DSALayer, AttentionMamba2Layer, LightningLayer,
               CompressedAttentionLayer, RGLRULayer, CrossAttentionLayer)
"""Every layer spec class. Engines never name them: they key their rules by the class's ``kind``
(``Engine.rules``) and refuse a kind they have no rule for (``engines.base.require_kinds``)."""
StateLayer = GatedDeltaNetLayer | Mamba2Layer | KDALayer
STATE_LAYER_TYPES = (GatedDeltaNetLayer, Mamba2Layer, KDALayer)


@dataclass(frozen=True)
class Architecture:
    """What a model caches, layer by layer, plus the config facts engines need.

    ``dtype`` is the model's torch dtype name (``bfloat16``); ``mamba_ssm_dtype`` the config's
    recurrent-state dtype when it names one (Qwen 3.5 / 3.6 ``mamba_ssm_dtype``: ``float32``;
    Nemotron-H ``mamba_ssm_cache_dtype``), else None. ``mtp_num_hidden_layers`` counts the
    multi-token-prediction layers the config declares beside the decoder (``mtp_num_hidden_layers``;
    DeepSeek-V3 / Kimi ``num_nextn_predict_layers``); they are not in ``layers``.

    Model facts later stages need, read once by ``kvmath.model`` (no later stage re-reads a config):
    ``hidden_size`` and ``vocab_size`` (0 when the config does not state them), ``num_experts`` (routed
    experts; 0 for a dense model), ``derived_max_model_len``: the longest ``max_model_len`` vLLM accepts
    without ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` (vllm/config/model.py ``_get_and_verify_max_len``:
    ``max_position_embeddings``, or ``original_max_position_embeddings x factor`` under a YaRN-type
    ``rope_scaling``), None when the config states no length. ``mamba_chunk_size``: the SSD chunk size of a
    Mamba-2 model (``mamba_chunk_size`` or ``chunk_size``, the transformers config class's default when the
    config omits it), which vLLM aligns its prefix-caching state blocks to; None for other models.

    The MLP and expert widths the engines' weight and activation terms read (0 when the config does not
    state them): ``num_experts_per_tok`` (``num_experts_per_tok`` / ``top_k_experts`` / ``moe_top_k`` /
    ``moe_k``), ``intermediate_size`` (the dense MLP), ``moe_intermediate_size`` (one routed expert),
    ``shared_expert_intermediate_size`` (all shared experts together: the config's
    ``shared_expert_intermediate_size``, else ``n_shared_experts x moe_intermediate_size``),
    ``dense_mlp_beside_experts`` (Gemma 4 ``enable_moe_block``: a dense MLP runs beside the experts),
    ``tie_word_embeddings``; ``vision``: the vision tower of a multimodal wrapper (:class:`VisionTower`), else None.
    ``engine_refusals``: (engine name, reason) pairs for engines whose allocation of this family kvmath has not
    modelled (the family rule sets them; ``engines.base.require_kinds`` refuses with the reason).
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
    hidden_size: int = 0
    vocab_size: int = 0
    num_experts: int = 0
    derived_max_model_len: int | None = None
    mamba_chunk_size: int | None = None
    num_experts_per_tok: int = 0
    intermediate_size: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    dense_mlp_beside_experts: bool = False
    tie_word_embeddings: bool = False
    vision: VisionTower | None = None
    engine_refusals: tuple[tuple[str, str], ...] = ()
    extras: dict = field(default_factory=dict, compare=False, hash=False)

    def __hash__(self) -> int:
        # The fields' hash, computed once: engines key their caches by the Architecture, and hashing 64
        # layer records on every call cost more than the plan itself. Not pickled (str hashes differ
        # between processes).
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in fields(self) if f.hash is not False and f.compare))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def is_moe(self) -> bool:
        """True when the decoder routes tokens to experts (``num_experts`` / ``n_routed_experts`` /
        ``num_local_experts`` > 0 in the config)."""
        return self.num_experts > 0

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
        """The Gated DeltaNet layers (see ``state_layers`` for every recurrent kind)."""
        return [layer for layer in self.layers if isinstance(layer, GatedDeltaNetLayer)]

    def mla_layers(self) -> list[MLALayer]:
        return [layer for layer in self.layers if isinstance(layer, MLALayer)]

    def state_layers(self) -> list[StateLayer]:
        """Layers that keep a fixed-size recurrent state per sequence (GDN, Mamba-2, KDA)."""
        return [layer for layer in self.layers if isinstance(layer, STATE_LAYER_TYPES)]

    def kv_head_counts(self) -> set[int]:
        return {layer.num_kv_heads for layer in self.attention_layers()}


__all__ = [
    "FULL", "SLIDING", "LINEAR", "MLP", "MOE", "CHUNKED", "CONV", "HYBRID", "CROSS", "Architecture", "VisionTower",
    *(c.__name__ for c in LAYER_KINDS),
]
