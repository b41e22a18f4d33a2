"""vLLM's ``--kv-cache-dtype`` values as kvmath formats: bytes per element, scales and slot rules."""

from __future__ import annotations

from ...errors import KvMathError, choices
from ...formats import BF16, F16, F32, FP8_E4M3, FP8_E5M2, ElementFormat, KVFormat, lookup as _lookup

# --- vLLM -------------------------------------------------------------------------------------
_VLLM_IFACE = "vllm/v1/kv_cache_interface.py (AttentionSpec.real_page_size_bytes), vLLM 0.20-0.25"

_PTH_SCALE = 4  # one fp32 scale per head per token, for K and again for V
INT8_PTH = ElementFormat(
    "int8_per_token_head", 1, 1,
    "vLLM int8_per_token_head (PR #40391): int8 data + fp32 scale per token per head; "
    + _VLLM_IFACE,
    head_extra_bytes=_PTH_SCALE,
)
FP8_PTH = ElementFormat(
    "fp8_per_token_head", 1, 1,
    "vLLM fp8_per_token_head: fp8 data + fp32 scale per token per head; " + _VLLM_IFACE,
    head_extra_bytes=_PTH_SCALE,
)
INT4_PTH = ElementFormat(
    "int4_per_token_head", 2, 1,
    "vLLM int4_per_token_head: packed int4 + fp32 scale per token per head; " + _VLLM_IFACE,
    head_extra_bytes=_PTH_SCALE,
)
# NVFP4: two 4-bit values per byte plus one fp8 (e4m3) scale per 16 elements = D/2 + D/16 bytes.
NVFP4 = ElementFormat(
    "nvfp4", 16, 9,
    "vLLM nvfp4 KV cache: nvfp4_kv_cache_full_dim(D) = D//2 + D//16 (vllm/utils/torch_utils.py @0024350b)",
)

# TurboQuant (vllm/model_executor/layers/quantization/turboquant/config.py @1471680b, v0.20+):
# K = ceil(D * key_bits / 8) + 2 (fp16 norm), or D bytes of fp8 for k8v4;
# V = ceil(D * value_bits / 8) + 4 (fp16 scale and zero); slot = K + V rounded up to even.
_TQ = "vLLM TurboQuant (quantization/turboquant/config.py @1471680b, v0.20+): "
_TQ_K8 = ElementFormat("fp8 (TurboQuant K)", 1, 1, _TQ + "K as fp8, no norm")
_TQ_K4 = ElementFormat("4-bit (TurboQuant K)", 2, 1, _TQ + "4-bit K + fp16 norm", head_extra_bytes=2)
_TQ_K3 = ElementFormat("3-bit (TurboQuant K)", 8, 3, _TQ + "3-bit K + fp16 norm", head_extra_bytes=2)
_TQ_V4 = ElementFormat("4-bit (TurboQuant V)", 2, 1, _TQ + "4-bit V + fp16 scale and zero", head_extra_bytes=4)
_TQ_V3 = ElementFormat("3-bit (TurboQuant V)", 8, 3, _TQ + "3-bit V + fp16 scale and zero", head_extra_bytes=4)
_TQ_NOTE = (
    "TurboQuant: on models without Mamba/GDN layers vLLM keeps the first 2 and last 2 layers in the "
    "model dtype (get_boundary_skip_layers); it also reserves a decode workspace outside the KV pool"
)


def _vllm(name, k, v, source, aliases=(), note="", cc=None, slot_align=1, flag=""):
    return KVFormat(name, "vllm", k, v, source, tuple(aliases), note, cc, slot_align, flag)


VLLM_FORMATS: dict[str, KVFormat] = {
    f.name: f
    for f in (
        # vllm/config/cache.py CacheDType spells these "bfloat16" and "float16" ("auto" = the model dtype).
        _vllm("bf16", BF16, BF16, _VLLM_IFACE, ("bfloat16",), flag="bfloat16"),
        _vllm("fp16", F16, F16, _VLLM_IFACE, ("float16",), flag="float16"),
        _vllm("fp8_e4m3", FP8_E4M3, FP8_E4M3, _VLLM_IFACE, ("fp8",),
              "needs compute capability 8.9 or newer (not sm_86: RTX 3090, A5000)",
              cc=(89, 90, 100, 103, 110, 120, 121)),
        _vllm("fp8_e5m2", FP8_E5M2, FP8_E5M2, _VLLM_IFACE),
        _vllm("int8_per_token_head", INT8_PTH, INT8_PTH, INT8_PTH.source,
              note="1 byte per element plus an fp32 scale per head per token, for K and for V"),
        _vllm("fp8_per_token_head", FP8_PTH, FP8_PTH, FP8_PTH.source),
        _vllm("int4_per_token_head", INT4_PTH, INT4_PTH, INT4_PTH.source),
        _vllm("nvfp4", NVFP4, NVFP4, NVFP4.source,
              note="datacenter Blackwell only (sm_100 / sm_103); crashes on sm_120 (vLLM #43562)",
              cc=(100, 103)),
        _vllm("turboquant_k8v4", _TQ_K8, _TQ_V4, _TQ, ("k8v4",), _TQ_NOTE, slot_align=2),
        _vllm("turboquant_4bit_nc", _TQ_K4, _TQ_V4, _TQ, (), _TQ_NOTE, slot_align=2),
        _vllm("turboquant_k3v4_nc", _TQ_K3, _TQ_V4, _TQ, (), _TQ_NOTE, slot_align=2),
        _vllm("turboquant_3bit_nc", _TQ_K3, _TQ_V3, _TQ, ("tq3",), _TQ_NOTE, slot_align=2),
    )
}
TURBOQUANT_VLLM = tuple(n for n in VLLM_FORMATS if n.startswith("turboquant"))

AUTO_ONLY_FORMATS: dict[str, KVFormat] = {
    "fp32": _vllm("fp32", F32, F32, _VLLM_IFACE, ("float32",),
                  "the auto cache of a --dtype float32 model: vllm/config/cache.py CacheDType has no float32, so only "
                  "kv_cache_dtype auto gives it (the cache takes the model dtype, v1/worker/gpu_model_runner.py "
                  "get_kv_cache_spec: kv_cache_dtype = model_config.dtype)"),
}
"""KV formats no ``--kv-cache-dtype`` names: reached only through ``auto`` (kept out of ``VLLM_FORMATS`` so the
flag's parser, the book's tables and the format listings do not offer them)."""


def vllm_format(name: str) -> KVFormat:
    """The vLLM format for a ``--kv-cache-dtype`` value (aliases accepted). Raises KvMathError.

    ``q4_0`` and the other GGML types are llama.cpp cache types; vLLM has no such kv_cache_dtype
    (``CacheDType`` in vllm/config/cache.py), so they are rejected here with that explanation.
    """
    if isinstance(name, str) and name in AUTO_ONLY_FORMATS:
        return AUTO_ONLY_FORMATS[name]
    try:
        return _lookup(VLLM_FORMATS, name, "vLLM --kv-cache-dtype")
    except KvMathError:
        if not isinstance(name, str):
            raise
        from .. import format_owners  # the registry, not another engine: asked only on this error path

        owners = format_owners(name, exclude="vllm")
        if not owners:
            raise
    raise KvMathError(f"{name} is a {' / '.join(owners)} cache type, not a vLLM --kv-cache-dtype (use --engine "
                      f"{owners[0]}); vLLM formats: {choices(VLLM_FORMATS)}")


