"""KV-cache storage formats: how many bytes one token's K or V row takes, per engine.

A format is a pair of element formats, one for K and one for V (vLLM's ``k8v4`` stores them
differently; llama.cpp takes ``--cache-type-k`` and ``--cache-type-v`` separately). Each element
format is a block layout: ``block_bytes`` bytes hold ``block_elems`` elements, plus optional
per-head extras (a per-token-head scale) and per-head padding. Bytes per element are therefore
exact fractions (q8_0 = 34/32), and the bytes of a row are exact integers.

GGML block sizes are read from the ``gguf`` package (``gguf.GGML_QUANT_SIZES``), the same table
llama.cpp's Python tools use; they are not typed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .errors import KvMathError, choices


@dataclass(frozen=True)
class ElementFormat:
    """Storage of one cached vector (the K or the V of one token, one head) in some dtype.

    ``block_elems`` elements are stored in ``block_bytes`` bytes; each head's vector is first padded
    to a multiple of ``pad_head_to`` elements; each head of each token also carries
    ``head_extra_bytes`` (for example an fp32 scale).
    """

    name: str
    block_elems: int
    block_bytes: int
    source: str
    head_extra_bytes: int = 0
    pad_head_to: int = 1
    # ggml quantises a whole row (all heads of a layer) at once; vLLM stores per head.
    per_row: bool = False

    @property
    def bytes_per_element(self) -> Fraction:
        """Bytes per stored element, ignoring per-head extras and padding (q8_0: 34/32)."""
        return Fraction(self.block_bytes, self.block_elems)

    @property
    def bits_per_element(self) -> Fraction:
        return self.bytes_per_element * 8

    def row_bytes(self, n_heads: int, head_dim: int) -> int:
        """Bytes of one token's row of ``n_heads`` heads of width ``head_dim`` (elements).

        Raises KvMathError when the width is not a whole number of blocks (ggml refuses such a
        tensor; vLLM has no kernel for it).
        """
        width = -(-head_dim // self.pad_head_to) * self.pad_head_to
        elems = width * n_heads if self.per_row else width
        if elems % self.block_elems:
            unit = "row" if self.per_row else "head"
            raise KvMathError(
                f"cache type {self.name} stores blocks of {self.block_elems} elements, but a {unit} "
                f"here has {elems} elements (head_dim {head_dim}); choose a type whose block divides it"
            )
        data = elems // self.block_elems * self.block_bytes
        if self.per_row:
            return data + n_heads * self.head_extra_bytes
        return n_heads * (data + self.head_extra_bytes)


@dataclass(frozen=True)
class KVFormat:
    """A cache format as an engine names it: the K element format and the V element format."""

    name: str
    engine: str
    k: ElementFormat
    v: ElementFormat
    source: str
    aliases: tuple[str, ...] = ()
    note: str = ""
    # Compute capabilities (major*10+minor) the engine runs it on; None = any.
    compute_capabilities: tuple[int, ...] | None = None

    # vLLM TurboQuant rounds each head's K+V slot up to a multiple of this many bytes.
    slot_align: int = 1
    # The value the engine's own flag takes, when it differs from ``name`` (vLLM: bf16 -> bfloat16).
    flag_value: str = ""

    @property
    def flag(self) -> str:
        """What to pass to the engine's flag (``--kv-cache-dtype`` / ``-ctk``/``-ctv``) for this format."""
        return self.flag_value or self.name

    def token_bytes(self, n_heads: int, k_dim: int, v_dim: int) -> int:
        """Bytes of one token in one layer: ``n_heads`` heads of K (``k_dim``) and V (``v_dim``).

        ``v_dim`` 0 means no V is stored (an engine question, e.g. llama.cpp MLA).
        """
        if self.slot_align > 1:
            k, v = self.k.row_bytes(1, k_dim), self.v.row_bytes(1, v_dim) if v_dim else 0
            return n_heads * (-(-(k + v) // self.slot_align) * self.slot_align)
        return self.k.row_bytes(n_heads, k_dim) + (self.v.row_bytes(n_heads, v_dim) if v_dim else 0)


# --- plain floating-point element formats ---------------------------------------------------------
_TORCH = "torch dtype itemsize"
F32 = ElementFormat("float32", 1, 4, _TORCH)
F16 = ElementFormat("float16", 1, 2, _TORCH)
BF16 = ElementFormat("bfloat16", 1, 2, _TORCH)
FP8_E4M3 = ElementFormat("fp8_e4m3", 1, 1, _TORCH)
FP8_E5M2 = ElementFormat("fp8_e5m2", 1, 1, _TORCH)

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
"""Bytes per element of the torch dtypes HF configs name (``dtype``, ``mamba_ssm_dtype``)."""


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


# --- llama.cpp ----------------------------------------------------------------------------------
# Values accepted by -ctk / -ctv (common/arg.cpp kv_cache_types).
LLAMACPP_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
_GGML_SOURCE = "ggml type_traits (ggml/src/ggml.c) via gguf.GGML_QUANT_SIZES, gguf {version}"


def _ggml(name: str) -> ElementFormat:
    import gguf

    qtype = gguf.GGMLQuantizationType[name.upper()]
    block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    version = getattr(gguf, "__version__", None)
    if version is None:
        from importlib.metadata import version as _v

        version = _v("gguf")
    return ElementFormat(name, block_elems, block_bytes, _GGML_SOURCE.format(version=version), per_row=True)


_TURBO_SOURCE = (
    "TheTom/llama-cpp-turboquant ggml/src/ggml-common.h @17dd3529 (block_turbo*: fp16 norm + packed "
    "indices, QK=128); heads padded to 128 in src/llama-kv-cache.cpp @00910b10"
)
TURBO_TYPES: dict[str, ElementFormat] = {
    # bytes per 128-element block: turbo4 2+64, turbo3 2+32+16, turbo2 2+32 (static_assert formulas)
    "turbo4": ElementFormat("turbo4", 128, 66, _TURBO_SOURCE, pad_head_to=128, per_row=True),
    "turbo3": ElementFormat("turbo3", 128, 50, _TURBO_SOURCE, pad_head_to=128, per_row=True),
    "turbo2": ElementFormat("turbo2", 128, 34, _TURBO_SOURCE, pad_head_to=128, per_row=True),
}


def llamacpp_type(name: str) -> ElementFormat:
    """The element format of a llama.cpp ``--cache-type-k/-v`` value (or a TurboQuant-fork turbo type).

    Raises KvMathError naming the valid values.
    """
    if not isinstance(name, str):
        raise KvMathError(f"llama.cpp cache type must be a name, got {name!r}; valid: {choices(LLAMACPP_CACHE_TYPES)}")
    key = name.lower()
    if key in TURBO_TYPES:
        return TURBO_TYPES[key]
    if key not in LLAMACPP_CACHE_TYPES:
        raise KvMathError(
            f"unknown llama.cpp cache type {name!r}; valid: {choices(LLAMACPP_CACHE_TYPES + tuple(TURBO_TYPES))}"
        )
    return _ggml(key)


def llamacpp_format(cache_type_k: str = "f16", cache_type_v: str | None = None) -> KVFormat:
    """A llama.cpp cache format from ``-ctk`` and ``-ctv`` (``-ctv`` defaults to ``-ctk``'s value here)."""
    k = llamacpp_type(cache_type_k)
    v = llamacpp_type(cache_type_v or cache_type_k)
    name = k.name if k.name == v.name else f"{k.name}/{v.name}"
    return KVFormat(name, "llama.cpp", k, v, k.source)


# --- transformers ---------------------------------------------------------------------------------
TRANSFORMERS_FORMATS: dict[str, KVFormat] = {
    f.name: f
    for f in (
        KVFormat("bf16", "transformers", BF16, BF16, "torch.bfloat16 cache tensors", ("bfloat16",)),
        KVFormat("fp16", "transformers", F16, F16, "torch.float16 cache tensors", ("float16",)),
        KVFormat("f32", "transformers", F32, F32, "torch.float32 cache tensors", ("float32", "fp32")),
    )
}


def vllm_format(name: str) -> KVFormat:
    """The vLLM format for a ``--kv-cache-dtype`` value (aliases accepted). Raises KvMathError.

    ``q4_0`` and the other GGML types are llama.cpp cache types; vLLM has no such kv_cache_dtype
    (``CacheDType`` in vllm/config/cache.py), so they are rejected here with that explanation.
    """
    if isinstance(name, str) and name.lower() in LLAMACPP_CACHE_TYPES and name.lower() not in ("bf16",):
        raise KvMathError(
            f"{name} is a llama.cpp cache type, not a vLLM --kv-cache-dtype (use --engine llama.cpp); "
            f"vLLM formats: {choices(VLLM_FORMATS)}"
        )
    return _lookup(VLLM_FORMATS, name, "vLLM --kv-cache-dtype")


def transformers_format(name: str) -> KVFormat:
    """The transformers cache dtype (the model's dtype). Raises KvMathError."""
    return _lookup(TRANSFORMERS_FORMATS, name, "transformers cache dtype")


def _lookup(table: dict[str, KVFormat], name: str, what: str) -> KVFormat:
    if not isinstance(name, str):
        raise KvMathError(f"{what} must be a name, got {name!r}; valid: {choices(table)}")
    key = name.lower()
    for fmt in table.values():
        if key == fmt.name or key in fmt.aliases:
            return fmt
    raise KvMathError(f"unknown {what} {name!r}; valid: {choices(table)}")


def all_formats() -> list[KVFormat]:
    """Every named format of every engine (llama.cpp with the same type for K and V)."""
    out = list(VLLM_FORMATS.values())
    out += [llamacpp_format(t) for t in LLAMACPP_CACHE_TYPES + tuple(TURBO_TYPES)]
    out += list(TRANSFORMERS_FORMATS.values())
    return out
