"""vLLM's per-layer rules: KV heads per rank, the format a layer is stored in, and state shapes.

Sources (vLLM V1; the releases read are listed in ``kvmath.engines.vllm.alloc``):

- Heads per rank: ``vllm/config/model.py get_num_kv_heads`` = ``max(1, total // tp)`` (KV heads are
  replicated when TP exceeds them).
- MLA (``MLAAttentionSpec.real_page_size_bytes``, vllm/v1/kv_cache_interface.py @001cabc1 =
  ``block_size * num_kv_heads * head_size * dtype size`` with ``num_kv_heads`` 1 on every rank,
  ``get_num_kv_heads`` "When using MLA during decode it becomes MQA", and ``head_size = kv_lora_rank +
  qk_rope_head_dim``): 576 elements per token and layer for DeepSeek-V3, no V. MLA backends take
  kv_cache_dtype auto / bfloat16 / float16 / fp8 (FlashMLA ``supported_kv_cache_dtypes``).
- GDN state (``MambaStateShapeCalculator.gated_delta_net_state_shape``,
  vllm/model_executor/layers/mamba/mamba_utils.py @02d71083): conv ``(K - 1 + num_spec, conv_dim /
  tp)`` in ``mamba_cache_dtype`` (auto: the model dtype), temporal ``(nv / tp, dv, dk)`` in
  ``mamba_ssm_cache_dtype`` (Qwen 3.5 / 3.6 copy the config's ``mamba_ssm_dtype``; else the conv dtype).
- Mamba-2 (``mamba2_state_shape``): ``n_groups`` padded to a multiple of TP
  (``extra_groups_for_head_shards``), conv ``(K - 1 + num_spec, (heads * head_dim + 2 * n_groups *
  d_state) / tp)``, temporal ``(heads / tp, head_dim, d_state)`` in ``mamba_ssm_cache_dtype``;
  NemotronH takes it from the config's ``mamba_ssm_cache_dtype``, else float32
  (``NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE``, models/config.py).
- KDA (``kda_state_shape`` / ``kda_state_dtype``): conv ``(K - 1 + num_spec, 3 * nh * hd / tp)`` in the
  model dtype, recurrent ``(nh / tp, hd, hd)`` always float32.
- TurboQuant boundary layers (``TurboQuantConfig.get_boundary_skip_layers``): models without Mamba /
  GDN layers keep the first and last ``min(2, n // 2)`` layers in the model dtype.
"""

from __future__ import annotations

from ...errors import KvMathError, choices
from ...formats import DTYPE_BYTES, KVFormat
from ...model.specs import Architecture
from ..base import StateTensor
from .formats import vllm_format

KINDS = ("attention", "mla", "gdn", "mamba2", "kda", "none")
"""The layer kinds (spec ``kind``) vLLM's rules here cover; a model with another kind is refused
(``base.require_kinds``). Attention-like kinds are ``attention`` (``FullAttentionSpec`` /
``SlidingWindowSpec``) and ``mla`` (``MLAAttentionSpec``); state kinds ``gdn``, ``mamba2``, ``kda``
(``MambaSpec``); ``none`` builds no spec."""
STATE_KINDS = ("gdn", "mamba2", "kda")

MLA_FORMATS = ("bf16", "fp16", "fp8_e4m3")
_DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}


def state_dtype(name: str) -> str:
    """A ``--mamba-cache-dtype`` / ``--mamba-ssm-cache-dtype`` value as a torch dtype name."""
    d = _DTYPE_ALIASES.get(name, name)
    if d not in DTYPE_BYTES:
        raise KvMathError(f"unknown state dtype {name!r}; valid: auto, {choices(sorted(DTYPE_BYTES))}")
    return d


def model_format(arch: Architecture, kv_cache_dtype: str | None) -> KVFormat:
    """The format of ``--kv-cache-dtype`` (``auto`` = the model dtype)."""
    if kv_cache_dtype in (None, "auto"):
        kv_cache_dtype = {"bfloat16": "bf16", "float16": "fp16"}.get(arch.dtype, "bf16")
    return vllm_format(kv_cache_dtype)


def kv_heads_per_rank(total: int, tp: int) -> int:
    return max(1, total // tp)


def mamba2_conv_dim(layer, tp: int) -> int:
    """Conv channels of a Mamba-2 layer (``mamba2``) on one of ``tp`` ranks, group padding included."""
    # MambaStateShapeCalculator.extra_groups_for_head_shards: 0 if n_groups % tp == 0 else tp - n_groups
    groups = layer.n_groups + (0 if layer.n_groups % tp == 0 else tp - layer.n_groups)
    return layer.intermediate_size + 2 * groups * layer.state_size


def tp_problem(arch: Architecture, tp: int) -> str | None:
    """Why vLLM cannot shard ``arch`` over ``tp`` ranks (its layers' divide() / asserts), or None."""
    heads = arch.num_attention_heads
    if heads % tp:
        return f"tensor_parallel_size {tp} does not divide num_attention_heads {heads}"
    for kv in sorted(arch.kv_head_counts()):
        if kv % tp and tp % kv:
            return f"tensor_parallel_size {tp} neither divides nor is a multiple of {kv} KV heads"
    for layer in arch.state_layers():
        problem = _TP_PROBLEM[layer.kind](layer, tp)
        if problem:
            return problem
    return None


def _gdn_tp(layer, tp: int) -> str | None:
    if layer.num_k_heads % tp or layer.num_v_heads % tp or layer.conv_dim % tp:
        return (f"tensor_parallel_size {tp} does not divide the linear-attention heads "
                f"({layer.num_k_heads} K, {layer.num_v_heads} V)")
    return None


def _mamba2_tp(layer, tp: int) -> str | None:
    # mamba_mixer2.py MambaMixer2.__init__ asserts
    if layer.num_heads % tp:
        return f"tensor_parallel_size {tp} does not divide the {layer.num_heads} Mamba-2 heads"
    if layer.n_groups % tp and layer.n_groups != 1:
        return (f"tensor_parallel_size {tp} does not divide n_groups {layer.n_groups} "
                "(vLLM pads groups only when n_groups is 1)")
    if mamba2_conv_dim(layer, tp) % tp:
        return f"tensor_parallel_size {tp} does not divide the Mamba-2 conv width"
    return None


def _kda_tp(layer, tp: int) -> str | None:
    if layer.num_heads % tp or layer.conv_dim % tp:
        return f"tensor_parallel_size {tp} does not divide the {layer.num_heads} KDA heads"
    return None


_TP_PROBLEM = {"gdn": _gdn_tp, "mamba2": _mamba2_tp, "kda": _kda_tp}


def layer_format(layer, arch: Architecture, fmt: KVFormat) -> KVFormat:
    """The format ``layer`` is stored in: TurboQuant boundary layers of models without state layers stay
    in the model dtype; MLA layers need a format the MLA backends have."""
    if layer.kind == "mla":
        if fmt.name not in MLA_FORMATS:
            raise KvMathError(
                f"vLLM's MLA backends have no {fmt.name} cache (FlashMLA/Triton MLA supported_kv_cache_dtypes: "
                f"auto, bfloat16, float16, fp8); MLA formats: {choices(MLA_FORMATS)}")
        return fmt
    if fmt.name.startswith("turboquant") and not arch.state_layers():
        n = arch.num_hidden_layers
        skip = min(2, n // 2)
        if layer.index < skip or layer.index >= n - skip:
            return model_format(arch, "auto")
    return fmt


def _conv_dtype(arch: Architecture, mamba_cache_dtype: str) -> str:
    return arch.dtype if mamba_cache_dtype == "auto" else state_dtype(mamba_cache_dtype)


def _ssm_dtype(arch: Architecture, mamba_cache_dtype: str, mamba_ssm_cache_dtype: str) -> str:
    if mamba_ssm_cache_dtype != "auto":
        return state_dtype(mamba_ssm_cache_dtype)
    if arch.model_type in ("qwen3_5_text", "qwen3_5_moe_text") and arch.mamba_ssm_dtype:
        return arch.mamba_ssm_dtype
    if arch.model_type == "nemotron_h":
        return arch.mamba_ssm_dtype or "float32"
    return _conv_dtype(arch, mamba_cache_dtype)


def state_tensors(layer, arch: Architecture, *, tp: int, num_speculative_tokens: int = 0,
                  mamba_cache_dtype: str = "auto", mamba_ssm_cache_dtype: str = "auto") -> list[StateTensor]:
    """The recurrent-state tensors of one GDN, Mamba-2 or KDA layer per sequence and rank (shapes in
    elements, vLLM's dtypes). Raises KvMathError for another layer kind."""
    conv = _conv_dtype(arch, mamba_cache_dtype)
    ssm = _ssm_dtype(arch, mamba_cache_dtype, mamba_ssm_cache_dtype)
    rows = layer.conv_kernel - 1 + num_speculative_tokens
    state = _STATE.get(layer.kind)
    if state is None:
        raise KvMathError(f"vllm has no state rule for {type(layer).__name__} layers")
    return state(layer, tp, rows, conv, ssm, arch.dtype)


def _gdn_state(layer, tp, rows, conv, ssm, model_dtype) -> list[StateTensor]:
    # mamba_utils.py MambaStateShapeCalculator.gated_delta_net_state_shape
    if layer.conv_dim % tp or layer.num_v_heads % tp:
        raise KvMathError(f"tensor_parallel_size {tp} does not divide the GDN conv channels ({layer.conv_dim}) "
                          f"and value heads ({layer.num_v_heads}); vLLM's divide() would fail")
    return [StateTensor("conv", (rows, layer.conv_dim // tp), conv),
            StateTensor("temporal", (layer.num_v_heads // tp, layer.v_head_dim, layer.k_head_dim), ssm)]


def _mamba2_state(layer, tp, rows, conv, ssm, model_dtype) -> list[StateTensor]:
    # mamba_utils.py MambaStateShapeCalculator.mamba2_state_shape
    return [StateTensor("conv", (rows, mamba2_conv_dim(layer, tp) // tp), model_dtype),
            StateTensor("temporal", (layer.num_heads // tp, layer.head_dim, layer.state_size), ssm)]


def _kda_state(layer, tp, rows, conv, ssm, model_dtype) -> list[StateTensor]:
    # mamba_utils.py MambaStateShapeCalculator.kda_state_shape: float32 recurrent state
    return [StateTensor("conv", (rows, layer.conv_dim // tp), model_dtype),
            StateTensor("recurrent", (layer.num_heads // tp, layer.head_dim, layer.head_dim), "float32")]


_STATE = {"gdn": _gdn_state, "mamba2": _mamba2_state, "kda": _kda_state}


def state_names(layer) -> tuple[str, ...]:
    """Names of a state layer's tensors as vLLM's ``get_state_shape`` orders them: (conv, temporal), or
    (conv, recurrent) for KDA."""
    return ("conv", "recurrent") if layer.kind == "kda" else ("conv", "temporal")


def attention_dims(layer) -> tuple[int, int, int]:
    """(KV heads before TP, K width, V width) of an attention or MLA layer's vLLM spec."""
    if layer.kind == "mla":
        return 1, layer.latent_dim, 0
    if layer.kind == "attention":
        return layer.num_kv_heads, layer.head_dim, layer.v_head_dim
    raise KvMathError(f"vllm has no attention rule for {type(layer).__name__} layers")
