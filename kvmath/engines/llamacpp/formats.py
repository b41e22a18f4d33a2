"""llama.cpp's ``-ctk`` / ``-ctv`` cache types (GGML block sizes from the ``gguf`` package) and the
TurboQuant fork's turbo types."""

from __future__ import annotations

from ...errors import KvMathError, choices
from ...validate import _short
from ...formats import ElementFormat, KVFormat

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
        raise KvMathError(f"llama.cpp cache type must be a name, got {_short(name)}; valid: {choices(LLAMACPP_CACHE_TYPES)}")
    key = name.lower()
    if key in TURBO_TYPES:
        return TURBO_TYPES[key]
    if key not in LLAMACPP_CACHE_TYPES:
        raise KvMathError(
            f"unknown llama.cpp cache type {_short(name)}; valid: {choices(LLAMACPP_CACHE_TYPES + tuple(TURBO_TYPES))}"
        )
    return _ggml(key)


def llamacpp_format(cache_type_k: str = "f16", cache_type_v: str | None = None) -> KVFormat:
    """A llama.cpp cache format from ``-ctk`` and ``-ctv`` (``-ctv`` defaults to ``-ctk``'s value here)."""
    k = llamacpp_type(cache_type_k)
    v = llamacpp_type(cache_type_v or cache_type_k)
    name = k.name if k.name == v.name else f"{k.name}/{v.name}"
    return KVFormat(name, "llama.cpp", k, v, k.source)


