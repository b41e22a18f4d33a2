"""transformers 5.23 ``DynamicCache`` after a forward pass over ``max_ctx`` tokens.

``DynamicLayer`` keeps every token; ``DynamicSlidingWindowLayer`` keeps the last ``sliding_window - 1``
(src/transformers/cache_utils.py). Linear-attention layers keep a conv state ``[B, conv_dim, K]`` in
the model dtype (K columns, not K - 1) and a recurrent state ``[B, nv, dk, dv]`` in float32
(models/qwen3_next, torch reference kernels).

MLA layers (models/deepseek_v3 and models/kimi_linear ``past_key_values.update(kv_nope, k_rot)``)
cache the latent as keys ``[B, 1, T, kv_lora_rank]`` and the RoPE key as values
``[B, 1, T, qk_rope_head_dim]``: 1,152 bytes per token and layer in bf16 for DeepSeek-V3. Mamba-2
layers (models/nemotron_h): conv ``[B, heads * head_dim + 2 * n_groups * d_state, K]`` in the model
dtype and SSM state ``[B, heads, head_dim, d_state]`` in float32 (the config's
``mamba_ssm_cache_dtype`` is not applied by the torch path). KDA layers (models/kimi_linear): one conv
state ``[B, 3 * heads * head_dim, K]`` in the model dtype and recurrent ``[B, heads, head_dim,
head_dim]`` in float32. MLP/MoE-only blocks get a ``DummyLayer`` holding nothing. Falcon-H1's hybrid layers
(models/falcon_h1, ``LinearAttentionAndFullAttentionLayer``) hold both the attention keys / values and the
Mamba-2 conv and SSM states; they are reported as two groups (attention, Mamba-2) over the same layer index.
MiniMax-Text-01's lightning layers (models/minimax ``MiniMaxCache.linear_cache``) keep one ``[B, heads,
head_dim, head_dim]`` state in the model dtype, its full-attention layers a ``DynamicLayer``. RecurrentGemma's
RG-LRU blocks keep a conv state ``[B, lru_width, conv1d_width - 1]`` (model dtype) and a ``[B, lru_width]`` float32
state as module attributes beside the cache (models/recurrent_gemma). The allocation is
these tensors layer by layer; tests/test_realcache.py builds the real caches on the CPU and compares.
"The model dtype" is the dtype the model is loaded in, which is the cache's: the settings' ``dtype`` when given
(a model loaded in float32 keeps float32 conv states), else the config's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...errors import KvMathError
from ...formats import KVFormat
from ...model.specs import CROSS, FULL, LINEAR, SLIDING, Architecture
from ...validate import MAX_TOKENS, check_positive
from ..base import Engine, LayerGroup, StateTensor, merge_empty
from .formats import TRANSFORMERS_FORMATS, transformers_format


@dataclass(frozen=True)
class TransformersSettings:
    """``max_ctx``: tokens seen by the forward pass; ``batch_size``: sequences; ``dtype``: the cache
    dtype (a ``TRANSFORMERS_FORMATS`` name; None = the model dtype)."""

    max_ctx: int
    batch_size: int = 1
    dtype: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "max_ctx", check_positive(self.max_ctx, "max_ctx", maximum=MAX_TOKENS))
        object.__setattr__(self, "batch_size", check_positive(self.batch_size, "batch_size", maximum=MAX_TOKENS))

    @property
    def max_num_seqs(self) -> int:
        return self.batch_size

    @property
    def tp(self) -> int:
        return 1


@dataclass(frozen=True)
class LayerCache:
    """One decoder layer's cache tensors: K and V row bytes per token (attention, MLA), positions kept,
    and state tensors (per sequence)."""

    index: int
    kind: str
    heads: int = 0
    token_bytes: int = 0
    positions: int = 0
    state: tuple[StateTensor, ...] = ()
    fixed_bytes: int = 0  # per layer, not per sequence (DynamicSlidingWindowLayer's window tensor)


@dataclass(frozen=True)
class TransformersCache:
    settings: TransformersSettings
    fmt: KVFormat
    layers: tuple[LayerCache, ...]

    @property
    def total_bytes(self) -> int:
        b = self.settings.batch_size
        return sum((c.token_bytes * c.positions + sum(t.nbytes for t in c.state)) * b + c.fixed_bytes
                   for c in self.layers)


class TransformersEngine(Engine):
    name = "transformers"
    label = "transformers"
    version = "transformers 5.23 (cache_utils.py DynamicCache)"
    formats = tuple(TRANSFORMERS_FORMATS)
    setting_names = ()
    rules = {"attention": "_attention", "mla": "_mla", "gdn": "_gdn", "mamba2": "_mamba2", "kda": "_kda",
             "none": "_none", "chunked": "_chunked", "dsa": "_dsa", "mamba1": "_mamba1", "conv": "_short_conv",
             "attention_mamba2": "_attention_mamba2", "lightning": "_lightning", "compressed": "_compressed",
             "rglru": "_rglru", "cross_attention": "_cross_attention"}

    def settings(self, arch, *, max_ctx, max_num_seqs, tp, kv_format, cache_type_k=None, cache_type_v=None, **kw):
        if cache_type_k is not None or cache_type_v is not None:
            raise KvMathError("transformers caches in the model dtype; cache_type_k / cache_type_v are llama.cpp flags")
        self.check_tp(arch, tp)
        if kw:
            from ..base import unknown_settings
            unknown_settings(self, kw, {})
        if max_ctx is None:
            if not arch.max_position_embeddings:
                raise KvMathError(f"{arch.name}: config has no max_position_embeddings; pass max_ctx")
            max_ctx = arch.max_position_embeddings
        return TransformersSettings(max_ctx, max_num_seqs, kv_format)

    def allocate(self, arch: Architecture, s: TransformersSettings) -> TransformersCache:
        fmt = transformers_format(s.dtype or arch.dtype)
        return TransformersCache(s, fmt, tuple(self.rule(layer, arch)(layer, arch, s, fmt) for layer in arch.layers))

    def cache_format(self, cache: TransformersCache):
        return cache.fmt

    # one rule per layer kind --------------------------------------------------------------------
    def _attention(self, layer, arch, s, fmt):
        if not layer.owns_cache:
            return LayerCache(layer.index, "shared")
        sliding = layer.layer_type == SLIDING
        positions = min(s.max_ctx, layer.sliding_window - 1) if sliding else s.max_ctx
        # DynamicSlidingWindowLayer.__init__: _sliding_window_tensor = torch.tensor(window, dtype=torch.long),
        # one 8-byte int64 per sliding layer whatever the batch (transformers 5.23 cache_utils.py l.208)
        return LayerCache(layer.index, "attention", layer.num_kv_heads,
                          fmt.token_bytes(layer.num_kv_heads, layer.head_dim, layer.v_head_dim), positions,
                          fixed_bytes=8 if sliding else 0)

    def _mla(self, layer, arch, s, fmt):
        return LayerCache(layer.index, "mla", 1, fmt.token_bytes(1, layer.kv_lora_rank, layer.qk_rope_head_dim),
                          s.max_ctx)

    def _gdn(self, layer, arch, s, fmt):
        return LayerCache(layer.index, "gdn", state=(
            StateTensor("conv_states", (layer.conv_dim, layer.conv_kernel), _TORCH_DTYPE[fmt.name]),
            StateTensor("recurrent_states", (layer.num_v_heads, layer.k_head_dim, layer.v_head_dim), "float32")))

    def _mamba2(self, layer, arch, s, fmt):
        return LayerCache(layer.index, "mamba2", state=(
            StateTensor("conv_states", (layer.conv_dim, layer.conv_kernel), _TORCH_DTYPE[fmt.name]),
            StateTensor("recurrent_states", (layer.num_heads, layer.head_dim, layer.state_size), "float32")))

    def _kda(self, layer, arch, s, fmt):
        return LayerCache(layer.index, "kda", state=(
            StateTensor("conv_states", (layer.conv_dim, layer.conv_kernel), _TORCH_DTYPE[fmt.name]),
            StateTensor("recurrent_states", (layer.num_heads, layer.head_dim, layer.head_dim), "float32")))

    def _chunked(self, layer, arch, s, fmt):
        # get_layer_types_and_kwargs: a chunked_attention layer is a DynamicSlidingWindowLayer of window
        # attention_chunk_size (keeps the last chunk - 1 tokens, plus its int64 window tensor)
        return LayerCache(layer.index, "attention", layer.num_kv_heads,
                          fmt.token_bytes(layer.num_kv_heads, layer.head_dim, layer.v_head_dim),
                          min(s.max_ctx, layer.attention_chunk_size - 1), fixed_bytes=8)

    def _dsa(self, layer, arch, s, fmt):
        # DynamicIndexedLayer: keys [B,1,T,kv_lora_rank], values [B,1,T,qk_rope_head_dim], indexer_keys
        # [B,1,T,index_head_dim], all in the model dtype
        return LayerCache(layer.index, "mla", 1,
                          fmt.token_bytes(1, layer.kv_lora_rank, layer.qk_rope_head_dim)
                          + fmt.token_bytes(1, layer.index_head_dim, 0), s.max_ctx)

    def _mamba1(self, layer, arch, s, fmt):
        # models/mamba MambaMixer: conv [B, intermediate, conv_kernel], ssm [B, intermediate, state_size]
        return LayerCache(layer.index, "mamba1", state=(
            StateTensor("conv_states", (layer.intermediate_size, layer.conv_kernel), _TORCH_DTYPE[fmt.name]),
            StateTensor("recurrent_states", (layer.intermediate_size, layer.state_size), "float32")))

    def _short_conv(self, layer, arch, s, fmt):
        # models/lfm2 Lfm2ShortConv: one conv state [B, hidden_size, conv_L_cache] in the model dtype
        return LayerCache(layer.index, "conv", state=(
            StateTensor("conv_states", (layer.width, layer.conv_kernel), _TORCH_DTYPE[fmt.name]),))

    def _attention_mamba2(self, layer, arch, s, fmt):
        # LinearAttentionAndFullAttentionLayer (cache_utils.py): DynamicLayer keys / values of every token plus
        # the Mamba-2 conv [B, conv_dim, K] (model dtype) and SSM [B, heads, head_dim, d_state] (float32) states
        att, mamba = self._attention(layer.attention, arch, s, fmt), self._mamba2(layer.mamba, arch, s, fmt)
        return LayerCache(layer.index, "attention_mamba2", att.heads, att.token_bytes, att.positions, mamba.state)

    def _lightning(self, layer, arch, s, fmt):
        # MiniMaxLightningAttention: attn_weights_inter = zeros(B, num_attention_heads, head_dim, head_dim,
        # dtype=value_states.dtype), stored by MiniMaxCache.set_linear_cache; no conv state
        return LayerCache(layer.index, "lightning", state=(
            StateTensor("linear_cache", (layer.num_heads, layer.head_dim, layer.head_dim), _TORCH_DTYPE[fmt.name]),))

    def _rglru(self, layer, arch, s, fmt):
        # RecurrentGemmaRecurrentBlock (module attributes, not the DynamicCache): conv1d_state [B, lru_width,
        # conv1d_width - 1] in the activation dtype (the prefill pads / crops x_branch to width - 1 columns) and
        # rg_lru.recurrent_states [B, lru_width] in float32
        return LayerCache(layer.index, "rglru", state=(
            StateTensor("conv1d_state", (layer.lru_width, layer.conv_kernel - 1), _TORCH_DTYPE[fmt.name]),
            StateTensor("recurrent_states", (layer.lru_width,), "float32")))

    def _cross_attention(self, layer, arch, s, fmt):
        """A cross-attention layer (Whisper's decoder layers, models/whisper ``WhisperAttention`` with
        ``key_value_states``; mllama's ``MllamaTextCrossAttention``): ``cross_attention_cache.update(k, v)`` keeps K
        and V ``[B, heads, source_tokens, head_dim]`` once per sequence, in the cache dtype, whatever the decoder's
        context; Whisper's decoder self-attention beside it is a ``DynamicLayer`` of every decoder token
        (``EncoderDecoderCache.self_attention_cache``, transformers 5.23 cache_utils.py)."""
        dt = _TORCH_DTYPE[fmt.name]
        state = (StateTensor("cross_keys", (layer.num_kv_heads, layer.source_tokens, layer.head_dim), dt),
                 StateTensor("cross_values", (layer.num_kv_heads, layer.source_tokens, layer.v_head_dim), dt))
        att = layer.self_attention
        if att is None:
            return LayerCache(layer.index, "cross_attention", state=state)
        return LayerCache(layer.index, "cross_attention", att.num_kv_heads,
                          fmt.token_bytes(att.num_kv_heads, att.head_dim, att.v_head_dim), s.max_ctx, state)

    def _none(self, layer, arch, s, fmt):
        return LayerCache(layer.index, "none")

    def _compressed(self, layer, arch, s, fmt):
        """DeepSeek-V4 (models/deepseek_v4/modeling_deepseek_v4.py, transformers 5.23), per sequence after T =
        ``max_ctx`` tokens, window W, rate m, width w (``head_dim``; the indexer's ``index_head_dim``):

        - a sliding layer is a plain ``DynamicSlidingWindowLayer``: K and V, each ``min(T, W - 1)`` rows of w
          (``update(kv, kv)`` concatenates the two separately);
        - ``DeepseekV4HCACache`` / ``DeepseekV4CSACache`` keep the window once (``values = keys``), and per
          compressor (HCA: ``compressor``; CSA: ``compressor`` and ``indexer``) ``compressed_kv`` ``T // m`` rows
          of w, ``buffer_kv`` and ``buffer_gate`` ``T % m`` rows of ``c x w`` (the tokens of the window not yet
          closed; c = 2 for CSA's two overlapping series), and for CSA, once a window has closed (T >= m),
          ``overlap_kv`` and ``overlap_gate`` of ``m x w`` (the last window's first series);
        - every layer has the 8-byte int64 window tensor.
        All in the model dtype (the compressor's projections)."""
        positions = min(s.max_ctx, layer.sliding_window - 1)
        if not layer.compress_rate:
            return LayerCache(layer.index, "attention", 1, fmt.token_bytes(1, layer.head_dim, layer.head_dim),
                              positions, fixed_bytes=8)
        T, m, dt = s.max_ctx, layer.compress_rate, _TORCH_DTYPE[fmt.name]
        state = []
        for name, w in (("compressor", layer.head_dim), ("indexer", layer.index_head_dim)):
            if not w:
                continue
            c = 2 if layer.overlap else 1
            state += [StateTensor(f"compressed_kv[{name}]", (T // m, w), dt),
                      StateTensor(f"buffer_kv[{name}]", (T % m, c * w), dt),
                      StateTensor(f"buffer_gate[{name}]", (T % m, c * w), dt)]
            if layer.overlap and T >= m:
                state += [StateTensor(f"overlap_kv[{name}]", (m, w), dt),
                          StateTensor(f"overlap_gate[{name}]", (m, w), dt)]
        return LayerCache(layer.index, "compressed", 1, fmt.token_bytes(1, layer.head_dim, 0), positions,
                          tuple(state), fixed_bytes=8)

    def layer_groups(self, arch: Architecture, cache: TransformersCache) -> tuple[LayerGroup, ...]:
        b = cache.settings.batch_size
        by_index = {layer.index: layer for layer in arch.layers}
        buckets: dict[tuple, list[LayerCache]] = {}
        for c in cache.layers:
            layer = by_index[c.index]
            buckets.setdefault((layer.layer_type, layer.describe(), c.kind, c.heads, c.token_bytes, c.positions,
                                c.state, c.fixed_bytes), []).append(c)
        out = []
        for (layer_type, desc, kind, heads, tb, positions, state, fixed), cs in buckets.items():
            idx = tuple(c.index for c in cs)
            if kind in ("shared", "none"):
                out.append(LayerGroup(layer_type, idx, desc, 0, kind="attention" if kind == "shared" else "none",
                                      owns_cache=False))
            elif kind == "attention_mamba2":
                out += _hybrid_groups(by_index[idx[0]], idx, cs[0], b, cache.fmt.name)
            elif kind == "cross_attention":
                out += _cross_groups(by_index[idx[0]], idx, cs[0], b, cache.fmt.name)
            elif kind == "compressed":  # DeepSeek-V4: a window of K=V rows plus per-sequence compressor tensors
                per_seq = sum(t.nbytes for t in state)
                out.append(LayerGroup(layer_type, idx, desc + f"; plus a {fixed}-byte int64 window tensor per layer",
                                      len(cs) * ((tb * positions + per_seq) * b + fixed), kind=kind,
                                      kv_heads_per_rank=heads, bytes_per_token=tb, cells=positions, streams=b,
                                      state=state, state_bytes_per_seq=per_seq, kv_format=cache.fmt.name))
            elif state:
                per_seq = sum(t.nbytes for t in state)
                out.append(LayerGroup(layer_type, idx, desc, len(cs) * per_seq * b, kind=kind, state=state,
                                      state_bytes_per_seq=per_seq, streams=b))
            else:
                if fixed:
                    desc += f"; plus a {fixed}-byte int64 window tensor per layer"
                out.append(LayerGroup(layer_type, idx, desc, len(cs) * (tb * positions * b + fixed), kind=kind,
                                      kv_heads_per_rank=heads, bytes_per_token=tb, cells=positions, streams=b,
                                      kv_format=cache.fmt.name))
        return merge_empty(out)


def _hybrid_groups(layer, idx: tuple[int, ...], c: LayerCache, b: int, fmt_name: str) -> list[LayerGroup]:
    """The two groups of Falcon-H1 hybrid layers ``idx`` (alike; ``c`` one of their caches): their attention
    keys / values (``full_attention``, growing with context) and their Mamba-2 states (``linear_attention``)."""
    per_seq = sum(t.nbytes for t in c.state)
    return [LayerGroup(FULL, idx, f"{layer.attention.describe()} (hybrid layer's attention)",
                       len(idx) * c.token_bytes * c.positions * b, kind="attention", kv_heads_per_rank=c.heads,
                       bytes_per_token=c.token_bytes, cells=c.positions, streams=b, kv_format=fmt_name),
            LayerGroup(LINEAR, idx, f"{layer.mamba.describe()} (hybrid layer's Mamba-2 mixer)",
                       len(idx) * per_seq * b, kind="mamba2", state=c.state, state_bytes_per_seq=per_seq, streams=b)]


_TORCH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "f32": "float32"}
"""The torch dtype of each transformers cache format (:data:`TRANSFORMERS_FORMATS`)."""


def _cross_groups(layer, idx: tuple[int, ...], c: LayerCache, b: int, fmt_name: str) -> list[LayerGroup]:
    """The groups of cross-attention layers ``idx`` (alike; ``c`` one of their caches): their self-attention keys /
    values when they have any (``full_attention``, growing with the decoder's context; Whisper) and their
    cross-attention keys / values (``cross_attention``: per sequence, fixed by the encoder's output length)."""
    per_seq = sum(t.nbytes for t in c.state)
    out = []
    if layer.self_attention is not None:
        out.append(LayerGroup(FULL, idx, f"{layer.self_attention.describe()} (decoder self-attention)",
                              len(idx) * c.token_bytes * c.positions * b, kind="attention", kv_heads_per_rank=c.heads,
                              bytes_per_token=c.token_bytes, cells=c.positions, streams=b, kv_format=fmt_name))
    cross = replace(layer, self_attention=None)
    out.append(LayerGroup(CROSS, idx, cross.describe(), len(idx) * per_seq * b, kind="cross_attention",
                          state=c.state, state_bytes_per_seq=per_seq, streams=b, kv_format=fmt_name))
    return out


ENGINE = TransformersEngine()
