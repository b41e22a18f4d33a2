"""What each engine stores for each layer spec: one rule per method, each naming its source.

An engine answers, for one layer of an Architecture under a Deployment:
- ``kv_heads_per_rank``: how many KV heads one tensor-parallel rank holds;
- ``attention_cells``: how many token slots a layer's K/V tensors have, and in how many streams;
- ``state_tensors``: the recurrent-state tensors of a linear-attention layer, per sequence and rank.
Byte counts come from the cache format (``kvmath.formats``). Rules follow the engine versions named in
``Engine.version``; ``shared/engine-notes.md`` in the project's reference material cites the lines.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

from .arch import (
    FULL, SLIDING, Architecture, AttentionLayer, GatedDeltaNetLayer, KDALayer, MLALayer, Mamba2Layer,
)
from .config import check_positive
from .errors import KvMathError, choices
from .formats import (
    DTYPE_BYTES,
    KVFormat,
    llamacpp_format,
    transformers_format,
    vllm_format,
    VLLM_FORMATS,
    LLAMACPP_CACHE_TYPES,
    TRANSFORMERS_FORMATS,
)


@dataclass(frozen=True)
class Deployment:
    """How the model is served. Token counts are per sequence; memory figures are per card (rank).

    - ``max_ctx``: vLLM ``max_model_len``; for llama.cpp the per-sequence context (``-c`` is
      ``max_ctx * max_num_seqs``); for transformers the sequence length reached.
    - ``max_num_seqs``: vLLM ``max_num_seqs``, llama.cpp ``-np/--parallel``, transformers batch size.
    - ``tp``: ``tensor_parallel_size`` (vLLM only).
    - vLLM: ``block_size`` (tokens per KV block, default 16), ``max_num_batched_tokens`` (default 2048:
      ``vllm serve`` on cards under 70 GiB, ``EngineArgs.get_batch_defaults`` in
      vllm/engine/arg_utils.py), ``num_speculative_tokens`` (extra conv-state rows for MTP),
      ``mamba_ssm_cache_dtype`` (override of the recurrent-state dtype).
    - llama.cpp: ``n_ubatch`` (default 512), ``swa_full`` (default False, as the CLI),
      ``kv_unified`` (default False), ``llamacpp_build`` (which llama.cpp the rules follow where
      releases differ; see ``LLAMACPP_BUILDS``: ``"current"``, or ``"pre-v-less"`` for builds before
      PR #19067, whose MLA layers still allocate a V cache).
    """

    max_ctx: int
    max_num_seqs: int = 1
    tp: int = 1
    block_size: int = 16
    max_num_batched_tokens: int = 2048
    num_speculative_tokens: int = 0
    mamba_ssm_cache_dtype: str | None = None
    mamba_cache_dtype: str | None = None
    n_ubatch: int = 512
    swa_full: bool = False
    kv_unified: bool = False
    llamacpp_build: str = "current"

    def __post_init__(self):
        for name in ("max_ctx", "max_num_seqs", "tp", "block_size", "max_num_batched_tokens", "n_ubatch"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name))
        if isinstance(self.num_speculative_tokens, bool) or not isinstance(self.num_speculative_tokens, int) \
                or self.num_speculative_tokens < 0:
            raise KvMathError(f"num_speculative_tokens must be an integer >= 0, got {self.num_speculative_tokens!r}")
        for name in ("swa_full", "kv_unified"):
            if not isinstance(getattr(self, name), bool):
                raise KvMathError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in ("mamba_ssm_cache_dtype", "mamba_cache_dtype"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or value not in DTYPE_BYTES):
                raise KvMathError(f"{name} must be one of {choices(DTYPE_BYTES)}, got {value!r}")
        build = self.llamacpp_build
        build = LLAMACPP_BUILD_ALIASES.get(build, build) if isinstance(build, str) else None
        if build not in LLAMACPP_BUILDS:
            raise KvMathError(f"unknown llamacpp_build {self.llamacpp_build!r}; valid: {choices(LLAMACPP_BUILDS)}")
        object.__setattr__(self, "llamacpp_build", build)


LLAMACPP_BUILDS = {
    "current": (
        "upstream llama.cpp since PR #19067 \"kv-cache : support V-less cache\" (merged 2026-01-24): "
        "MLA layers (DeepSeek2, Kimi Linear) cache only the K latent, kv_lora_rank + qk_rope_head_dim wide"
    ),
    "pre-v-less": (
        "upstream llama.cpp before PR #19067 (e.g. ec98e2002 as vendored in ollama): MLA layers allocate "
        "K (kv_lora_rank + qk_rope_head_dim) and V (kv_lora_rank), one KV head"
    ),
}
"""The llama.cpp builds kvmath distinguishes, where their cache sizes differ."""
LLAMACPP_BUILD_ALIASES = {"ec98e2002": "pre-v-less", "pr19067": "current"}


@dataclass(frozen=True)
class StateTensor:
    """One recurrent-state tensor per sequence and rank: its name, shape (elements) and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_BYTES[self.dtype]


class Engine(ABC):
    """The rules of one engine. Subclasses answer every abstract method for each layer kind."""

    name = ""
    version = ""
    formats: tuple[str, ...] = ()

    @abstractmethod
    def cache_format(self, arch: Architecture, kv_format=None, cache_type_k=None, cache_type_v=None) -> KVFormat:
        ...

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

    def kv_heads_per_rank(self, total: int, tp: int) -> int:
        return total

    def stores_v(self, layer: AttentionLayer) -> bool:
        """Whether V is cached. For ``attention_k_eq_v`` layers every engine here still stores V: the
        value path normalises without a scale and skips RoPE, so the cached V differs from K
        (transformers models/gemma4 ``v_norm``; vLLM models/gemma4.py writes V; llama.cpp
        src/models/gemma4-iswa.cpp builds V from Kcur before separate norms)."""
        return True

    def applies_window(self, layer: AttentionLayer, arch: Architecture) -> bool:
        """Whether the engine keeps a sliding layer's window (else it caches the layer in full)."""
        return True

    def layer_format(self, layer: AttentionLayer, arch: Architecture, fmt: KVFormat) -> KVFormat:
        """The format a given layer is stored in (engines may keep some layers unquantised)."""
        return fmt

    @abstractmethod
    def attention_cells(self, layer: AttentionLayer | MLALayer, dep: Deployment) -> tuple[int, int]:
        """(token slots per stream, streams) of one attention layer's K and V tensors."""
        ...

    def mla_format(self, layer: MLALayer, arch: Architecture, fmt: KVFormat) -> KVFormat:
        """The format an MLA layer is stored in; raises KvMathError if the engine has none for MLA."""
        return fmt

    @abstractmethod
    def mla_dims(self, layer: MLALayer, arch: Architecture, dep: Deployment) -> tuple[int, int]:
        """(K elements, V elements) one token adds to an MLA layer, in one KV head on every rank."""
        ...

    def state_tensors(self, layer, arch: Architecture, dep: Deployment) -> list[StateTensor]:
        """The recurrent-state tensors of one GDN, Mamba-2 or KDA layer, per sequence and rank."""
        if isinstance(layer, GatedDeltaNetLayer):
            return self.gdn_state(layer, arch, dep)
        if isinstance(layer, Mamba2Layer):
            return self.mamba2_state(layer, arch, dep)
        if isinstance(layer, KDALayer):
            return self.kda_state(layer, arch, dep)
        raise KvMathError(f"{self.name}: no state rule for {type(layer).__name__}")

    @abstractmethod
    def gdn_state(self, layer: GatedDeltaNetLayer, arch: Architecture, dep: Deployment) -> list[StateTensor]:
        ...

    @abstractmethod
    def mamba2_state(self, layer: Mamba2Layer, arch: Architecture, dep: Deployment) -> list[StateTensor]:
        ...

    @abstractmethod
    def kda_state(self, layer: KDALayer, arch: Architecture, dep: Deployment) -> list[StateTensor]:
        ...

    def state_streams(self, dep: Deployment) -> int:
        return dep.max_num_seqs


class VLLM(Engine):
    """vLLM V1 engine.

    Heads per rank: ``vllm/config/model.py get_num_kv_heads`` = ``max(1, total // tp)`` (KV heads are
    replicated when tp exceeds them). Per-request memory (``max_memory_usage_bytes``,
    vllm/v1/kv_cache_interface.py @001cabc1): full attention ``ceil(L / B)`` blocks; sliding window W
    ``ceil(min(W - 1 + max_num_batched_tokens, L) / B) + 1`` blocks ("+1": the window may start
    mid-block). GDN state (``MambaStateShapeCalculator.gated_delta_net_state_shape``,
    vllm/model_executor/layers/mamba/mamba_utils.py @02d71083): conv ``(K - 1 + num_spec,
    conv_dim / tp)`` in the model dtype, temporal ``(nv / tp, dv, dk)`` in ``mamba_ssm_dtype``
    (Qwen 3.5 / 3.6 copy the config's ``mamba_ssm_dtype``; Qwen3-Next has no override: model dtype).

    MLA (``MLAAttentionSpec.real_page_size_bytes`` @001cabc1 = ``block_size * num_kv_heads *
    head_size * dtype size`` with ``num_kv_heads`` 1 on every rank, ``get_num_kv_heads`` "When using
    MLA during decode it becomes MQA", and ``head_size = kv_lora_rank + qk_rope_head_dim``): 576
    elements per token and layer for DeepSeek-V3, no V. MLA backends take kv_cache_dtype auto /
    bfloat16 / float16 / fp8 (FlashMLA ``supported_kv_cache_dtypes``; FlashMLA also forces
    ``block_size`` 64, which kvmath takes from the Deployment).
    Mamba-2 (``mamba2_state_shape``): ``n_groups`` padded to a multiple of TP
    (``extra_groups_for_head_shards``), conv ``(K - 1 + num_spec, (heads * head_dim + 2 * n_groups *
    d_state) / tp)`` in the model dtype, temporal ``(heads / tp, head_dim, d_state)`` in
    ``mamba_ssm_cache_dtype``; NemotronH takes it from the config's ``mamba_ssm_cache_dtype``, else
    float32 (``NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE``, models/config.py).
    KDA (``kda_state_shape`` / ``kda_state_dtype``): conv ``(K - 1 + num_spec, (nh * hd + 2 * nk * dk)
    / tp)`` in the model dtype, recurrent ``(nh / tp, hd, hd)`` always float32.
    These are the bytes the cache holds. vLLM's block-level rules (page unification, the hybrid
    attention/GDN block alignment, grouping, the start-up check) are in ``kvmath.vllm_alloc.plan``,
    which gives what vLLM allocates and logs; ``kvmath --kv-cache-memory-bytes`` prints both.
    """

    name = "vllm"
    version = "vLLM V1 (kv_cache_interface.py @001cabc1, mamba_utils.py @02d71083; v0.20-0.25)"
    formats = tuple(VLLM_FORMATS)

    def cache_format(self, arch, kv_format=None, cache_type_k=None, cache_type_v=None):
        if cache_type_k or cache_type_v:
            raise KvMathError("vLLM takes one --kv-format (kv_cache_dtype) for K and V, not cache_type_k/v")
        if kv_format in (None, "auto"):
            kv_format = {"bfloat16": "bf16", "float16": "fp16"}.get(arch.dtype, "bf16")
        return vllm_format(kv_format)

    def tp_problem(self, arch, tp):
        heads = arch.num_attention_heads
        if heads % tp:
            return f"tensor_parallel_size {tp} does not divide num_attention_heads {heads}"
        for kv in sorted(arch.kv_head_counts()):
            if kv % tp and tp % kv:
                return f"tensor_parallel_size {tp} neither divides nor is a multiple of {kv} KV heads"
        for layer in arch.linear_layers()[:1]:
            if layer.num_k_heads % tp or layer.num_v_heads % tp:
                return (
                    f"tensor_parallel_size {tp} does not divide the linear-attention heads "
                    f"({layer.num_k_heads} K, {layer.num_v_heads} V)"
                )
        for layer in arch.state_layers():
            if isinstance(layer, Mamba2Layer):
                # mamba_mixer2.py MambaMixer2.__init__ asserts
                if layer.num_heads % tp:
                    return f"tensor_parallel_size {tp} does not divide the {layer.num_heads} Mamba-2 heads"
                if layer.n_groups % tp and layer.n_groups != 1:
                    return (
                        f"tensor_parallel_size {tp} does not divide n_groups {layer.n_groups} "
                        "(vLLM pads groups only when n_groups is 1)"
                    )
                if self._mamba2_conv_dim(layer, tp) % tp:
                    return f"tensor_parallel_size {tp} does not divide the Mamba-2 conv width"
            elif isinstance(layer, KDALayer):
                if layer.num_heads % tp or layer.conv_dim % tp:
                    return f"tensor_parallel_size {tp} does not divide the {layer.num_heads} KDA heads"
        return None

    @staticmethod
    def _mamba2_conv_dim(layer: Mamba2Layer, tp: int) -> int:
        # MambaStateShapeCalculator.extra_groups_for_head_shards: 0 if n_groups % tp == 0 else tp - n_groups
        groups = layer.n_groups + (0 if layer.n_groups % tp == 0 else tp - layer.n_groups)
        return layer.intermediate_size + 2 * groups * layer.state_size

    def kv_heads_per_rank(self, total, tp):
        return max(1, total // tp)

    def layer_format(self, layer, arch, fmt):
        # TurboQuantConfig.get_boundary_skip_layers: models without Mamba/GDN layers keep the first and
        # last min(2, n // 2) layers in the model dtype (kv_cache_dtype "auto").
        if fmt.name.startswith("turboquant") and not arch.state_layers():
            n = arch.num_hidden_layers
            skip = min(2, n // 2)
            if layer.index < skip or layer.index >= n - skip:
                return self.cache_format(arch, "auto")
        return fmt

    def attention_cells(self, layer, dep):
        L, B = dep.max_ctx, dep.block_size
        if layer.layer_type == SLIDING:
            blocks = math.ceil(min(layer.sliding_window - 1 + dep.max_num_batched_tokens, L) / B) + 1
        else:
            blocks = math.ceil(L / B)
        return blocks * B, dep.max_num_seqs

    MLA_FORMATS = ("bf16", "fp16", "fp8_e4m3")

    def mla_format(self, layer, arch, fmt):
        if fmt.name not in self.MLA_FORMATS:
            raise KvMathError(
                f"vLLM's MLA backends have no {fmt.name} cache (FlashMLA/Triton MLA supported_kv_cache_dtypes: "
                f"auto, bfloat16, float16, fp8); MLA formats here: {choices(self.MLA_FORMATS)}"
            )
        return fmt

    def mla_dims(self, layer, arch, dep):
        return layer.latent_dim, 0

    @staticmethod
    def _conv_dtype(arch: Architecture, dep: Deployment) -> str:
        """``mamba_cache_dtype`` as vLLM resolves it: "auto" is the model dtype (MambaStateDtypeCalculator)."""
        return dep.mamba_cache_dtype or arch.dtype

    def _ssm_dtype(self, arch: Architecture, dep: Deployment) -> str:
        """``mamba_ssm_cache_dtype`` as vLLM resolves it for this model (see the class docstring);
        "auto" follows the conv-state dtype."""
        if dep.mamba_ssm_cache_dtype:
            return dep.mamba_ssm_cache_dtype
        if arch.model_type in ("qwen3_5_text", "qwen3_5_moe_text") and arch.mamba_ssm_dtype:
            return arch.mamba_ssm_dtype
        if arch.model_type == "nemotron_h":
            return arch.mamba_ssm_dtype or "float32"
        return self._conv_dtype(arch, dep)

    def gdn_state(self, layer, arch, dep):
        tp = dep.tp
        return [
            StateTensor("conv", (layer.conv_kernel - 1 + dep.num_speculative_tokens, layer.conv_dim // tp),
                        self._conv_dtype(arch, dep)),
            StateTensor("temporal", (layer.num_v_heads // tp, layer.v_head_dim, layer.k_head_dim),
                        self._ssm_dtype(arch, dep)),
        ]

    def mamba2_state(self, layer, arch, dep):
        tp = dep.tp
        return [
            StateTensor("conv", (layer.conv_kernel - 1 + dep.num_speculative_tokens,
                                 self._mamba2_conv_dim(layer, tp) // tp), arch.dtype),
            StateTensor("temporal", (layer.num_heads // tp, layer.head_dim, layer.state_size),
                        self._ssm_dtype(arch, dep)),
        ]

    def kda_state(self, layer, arch, dep):
        tp = dep.tp
        return [
            StateTensor("conv", (layer.conv_kernel - 1 + dep.num_speculative_tokens, layer.conv_dim // tp), arch.dtype),
            StateTensor("recurrent", (layer.num_heads // tp, layer.head_dim, layer.head_dim), "float32"),
        ]


class LlamaCpp(Engine):
    """llama.cpp (upstream ec98e2002 as vendored in ollama; iSWA formula unchanged in 2026 upstream).

    ``n_ctx = GGML_PAD(max_ctx * n_seq, 256)`` (src/llama-context.cpp); per stream
    ``n_ctx_seq = n_ctx`` when unified, else ``GGML_PAD(n_ctx / n_seq, 256)`` with one stream per
    sequence. Full layers hold ``n_ctx_seq`` cells. SWA layers (src/llama-kv-cache-iswa.cpp) hold
    ``GGML_PAD(min(n_ctx_seq, n_swa * (unified ? n_seq : 1) + n_ubatch), 256)`` cells, or
    ``n_ctx_seq`` with ``--swa-full``. Recurrent layers (src/llama-memory-recurrent.cpp): one f32 cell
    per sequence with r = ``(K - 1) * conv_dim`` and s = ``dk * nv * dv`` elements (GDN).

    Other layer kinds (src/llama-hparams.cpp ``n_embd_r`` / ``n_embd_s``, src/llama-kv-cache.cpp):
    Mamba-2 r = ``(d_conv - 1) * (d_inner + 2 * n_group * d_state)``, s = ``d_state * d_inner`` with
    ``d_inner = mamba_num_heads * mamba_head_dim`` (convert_hf_to_gguf.py NemotronH); Kimi KDA
    r = ``3 * (d_conv - 1) * n_head * kda_head_dim`` and s = ``kda_head_dim**2 * n_head``, where
    ``n_head`` is the model's ``num_attention_heads`` (the converter asserts it equals the KDA
    ``num_heads``). MLA layers are converted to one KV head of ``kv_lora_rank + qk_rope_head_dim``
    (576); since PR #19067 (2026-01-24) no V is allocated for them (``has_v = !is_mla``), before it
    V was ``kv_lora_rank`` wide: ``Deployment.llamacpp_build`` names which. The same rules read in
    llama.cpp 0c1e570 (vendored in llama-cpp-python 0.3.36): src/llama-kv-cache.cpp ``has_v = !is_mla``,
    src/llama-hparams.cpp ``n_embd_r`` / ``n_embd_s``. Sliding windows of llama / mistral / qwen2 /
    qwen3 configs are not applied (``NO_WINDOW_MODEL_TYPES``).
    """

    name = "llama.cpp"
    version = ("llama.cpp 0c1e570 (llama-kv-cache.cpp, llama-kv-cache-iswa.cpp, llama-memory-recurrent.cpp; "
               "the build tests/fixtures/llamacpp ran; plain and iSWA rules as in ec98e2002; V-less MLA since "
               "PR #19067 unless llamacpp_build says otherwise). kvmath.llamacpp_memory gives its log lines")
    formats = LLAMACPP_CACHE_TYPES

    def cache_format(self, arch, kv_format=None, cache_type_k=None, cache_type_v=None):
        if kv_format and (cache_type_k or cache_type_v):
            raise KvMathError("give either --kv-format or --cache-type-k/--cache-type-v, not both")
        k = cache_type_k or kv_format or "f16"
        return llamacpp_format(k, cache_type_v or kv_format or ("f16" if cache_type_k else k))

    # The GGUF converters of these families write no sliding window (conversion/llama.py LlamaModel,
    # which MistralForCausalLM maps to; conversion/qwen.py Qwen2Model / Qwen3Model) and their
    # load_arch_hparams read none (src/models/llama.cpp), so every layer is a full KV layer: llama.cpp
    # never implemented Mistral 7B's window (ggml-org/llama.cpp issues #3371, #3377).
    NO_WINDOW_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")

    def applies_window(self, layer, arch):
        return arch.model_type not in self.NO_WINDOW_MODEL_TYPES

    @staticmethod
    def n_ctx_seq(dep: Deployment) -> tuple[int, int]:
        pad = lambda x: -(-x // 256) * 256  # GGML_PAD(x, 256)
        n_seq = dep.max_num_seqs
        n_ctx = pad(dep.max_ctx * n_seq)
        if dep.kv_unified:
            return n_ctx, 1
        return pad(n_ctx // n_seq), n_seq

    def attention_cells(self, layer, dep):
        cells, streams = self.n_ctx_seq(dep)
        if layer.layer_type == SLIDING and not dep.swa_full:
            n_seq_per_stream = dep.max_num_seqs if dep.kv_unified else 1
            cells = -(-min(cells, layer.sliding_window * n_seq_per_stream + dep.n_ubatch) // 256) * 256
        return cells, streams

    def mla_dims(self, layer, arch, dep):
        if dep.llamacpp_build == "pre-v-less":
            if arch.model_type != "deepseek_v3":
                raise KvMathError(
                    f"kvmath has the pre-PR-#19067 llama.cpp MLA layout (K {layer.latent_dim} + V "
                    f"{layer.kv_lora_rank}) for DeepSeek-V3 only, not for {arch.model_type}; use llamacpp_build 'current'"
                )
            return layer.latent_dim, layer.kv_lora_rank
        return layer.latent_dim, 0

    def gdn_state(self, layer, arch, dep):
        return [
            StateTensor("r", ((layer.conv_kernel - 1) * layer.conv_dim,), "float32"),
            StateTensor("s", (layer.k_head_dim * layer.num_v_heads * layer.v_head_dim,), "float32"),
        ]

    def mamba2_state(self, layer, arch, dep):
        return [
            StateTensor("r", ((layer.conv_kernel - 1) * layer.conv_dim,), "float32"),
            StateTensor("s", (layer.state_size * layer.intermediate_size,), "float32"),
        ]

    def kda_state(self, layer, arch, dep):
        n_head = arch.num_attention_heads
        if n_head != layer.num_heads:
            raise KvMathError(
                f"llama.cpp sizes KDA state by n_head (num_attention_heads {n_head}), but the KDA layers have "
                f"{layer.num_heads} heads; its converter rejects such a model (llama-hparams.cpp n_embd_r)"
            )
        return [
            StateTensor("r", (3 * (layer.conv_kernel - 1) * n_head * layer.head_dim,), "float32"),
            StateTensor("s", (layer.head_dim * layer.head_dim * n_head,), "float32"),
        ]


class Transformers(Engine):
    """transformers 5.23 ``DynamicCache`` after a forward pass over ``max_ctx`` tokens.

    ``DynamicLayer`` keeps every token; ``DynamicSlidingWindowLayer`` keeps the last
    ``sliding_window - 1`` (src/transformers/cache_utils.py). Linear-attention layers keep a conv
    state ``[B, conv_dim, K]`` in the model dtype (K columns, not K - 1) and a recurrent state
    ``[B, nv, dk, dv]`` in float32 (models/qwen3_next, torch reference kernels).

    MLA layers (models/deepseek_v3 and models/kimi_linear ``past_key_values.update(kv_nope, k_rot)``)
    cache the latent as keys ``[B, 1, T, kv_lora_rank]`` and the RoPE key as values
    ``[B, 1, T, qk_rope_head_dim]``: 1,152 bytes per token and layer in bf16 for DeepSeek-V3.
    Mamba-2 layers (models/nemotron_h): conv ``[B, heads * head_dim + 2 * n_groups * d_state, K]`` in
    the model dtype and SSM state ``[B, heads, head_dim, d_state]`` in float32 (the config's
    ``mamba_ssm_cache_dtype`` is not applied by the torch path). KDA layers (models/kimi_linear): one
    conv state ``[B, 3 * heads * head_dim, K]`` in the model dtype and recurrent ``[B, heads, head_dim,
    head_dim]`` in float32. MLP/MoE-only blocks get a ``DummyLayer`` holding nothing.
    """

    name = "transformers"
    version = "transformers 5.23 (cache_utils.py DynamicCache)"
    formats = tuple(TRANSFORMERS_FORMATS)

    def cache_format(self, arch, kv_format=None, cache_type_k=None, cache_type_v=None):
        if cache_type_k or cache_type_v:
            raise KvMathError("transformers caches in the model dtype; cache_type_k/v are llama.cpp flags")
        return transformers_format(kv_format or arch.dtype)

    def attention_cells(self, layer, dep):
        if layer.layer_type == SLIDING:
            return min(dep.max_ctx, layer.sliding_window - 1), dep.max_num_seqs
        return dep.max_ctx, dep.max_num_seqs

    def mla_dims(self, layer, arch, dep):
        return layer.kv_lora_rank, layer.qk_rope_head_dim

    def gdn_state(self, layer, arch, dep):
        return [
            StateTensor("conv_states", (layer.conv_dim, layer.conv_kernel), arch.dtype),
            StateTensor("recurrent_states", (layer.num_v_heads, layer.k_head_dim, layer.v_head_dim), "float32"),
        ]

    def mamba2_state(self, layer, arch, dep):
        return [
            StateTensor("conv_states", (layer.conv_dim, layer.conv_kernel), arch.dtype),
            StateTensor("recurrent_states", (layer.num_heads, layer.head_dim, layer.state_size), "float32"),
        ]

    def kda_state(self, layer, arch, dep):
        return [
            StateTensor("conv_states", (layer.conv_dim, layer.conv_kernel), arch.dtype),
            StateTensor("recurrent_states", (layer.num_heads, layer.head_dim, layer.head_dim), "float32"),
        ]


ENGINES: dict[str, Engine] = {e.name: e for e in (VLLM(), LlamaCpp(), Transformers())}
_ENGINE_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "hf": "transformers"}


def get_engine(name: str) -> Engine:
    """The engine rules by name (``vllm``, ``llama.cpp``, ``transformers``). Raises KvMathError."""
    if not isinstance(name, str):
        raise KvMathError(f"engine must be a name, got {name!r}; valid: {choices(ENGINES)}")
    key = _ENGINE_ALIASES.get(name.lower(), name.lower())
    if key not in ENGINES:
        raise KvMathError(f"unknown engine {name!r}; valid: {choices(ENGINES)}")
    return ENGINES[key]


def valid_tp(arch: Architecture, engine: Engine | str = "vllm", candidates=(1, 2, 4, 8, 16)) -> list[int]:
    """The tensor-parallel sizes among ``candidates`` the engine accepts for this architecture."""
    engine = get_engine(engine) if isinstance(engine, str) else engine
    return [tp for tp in candidates if engine.tp_problem(arch, tp) is None]
