"""llama.cpp's ``-ctk`` / ``-ctv`` cache types (GGML block sizes of ggml.c's type_traits) and the
TurboQuant fork's turbo types."""

from __future__ import annotations

from ...errors import KvMathError, choices
from ...validate import _short
from ...formats import ElementFormat, KVFormat

# Values accepted by -ctk / -ctv (common/arg.cpp kv_cache_types).
LLAMACPP_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
_GGML_SOURCE = "ggml type_traits (ggml/src/ggml.c: blck_size, type_size)"
# (elements per block, bytes per block) of every GGML tensor type, by gguf's GGMLQuantizationType name: ggml.c's
# type_traits as gguf 0.19.0's GGML_QUANT_SIZES lists them (the weights of a quantisation mix and their CUDA
# allocation read it). Kept here, not read from gguf, because the page's Python has neither gguf nor numpy;
# tests/test_pagecalc.py checks it against gguf.GGML_QUANT_SIZES type by type, both ways.
GGML_TYPE_BLOCKS: dict[str, tuple[int, int]] = {
    "F32": (1, 4), "F16": (1, 2), "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24),
    "Q8_0": (32, 34), "Q8_1": (32, 40), "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144),
    "Q5_K": (256, 176), "Q6_K": (256, 210), "Q8_K": (256, 292), "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74),
    "IQ3_XXS": (256, 98), "IQ1_S": (256, 50), "IQ4_NL": (32, 18), "IQ3_S": (256, 110), "IQ2_S": (256, 82),
    "IQ4_XS": (256, 136), "I8": (1, 1), "I16": (1, 2), "I32": (1, 4), "I64": (1, 8), "F64": (1, 8),
    "IQ1_M": (256, 56), "BF16": (1, 2), "TQ1_0": (256, 54), "TQ2_0": (256, 66), "MXFP4": (32, 17),
    "NVFP4": (64, 36), "Q1_0": (128, 18),
}


# (elements per block, bytes per block) of each -ctk / -ctv type: the rows of GGML_TYPE_BLOCKS (block_q8_0 = fp16
# scale + 32 int8, block_q4_0 = fp16 + 16 B, ...); tests/test_pagecalc.py checks them against gguf too.
GGML_CACHE_BLOCKS: dict[str, tuple[int, int]] = {t: GGML_TYPE_BLOCKS[t.upper()] for t in LLAMACPP_CACHE_TYPES}


def ggml_block(ggml_type: str) -> tuple[int, int]:
    """(elements per block, bytes per block) of a GGML tensor type named as gguf names it (``Q4_K``; any
    case). Raises KvMathError naming the known types."""
    key = str(ggml_type).upper()
    if key not in GGML_TYPE_BLOCKS:
        raise KvMathError(f"unknown GGML type {_short(ggml_type)}; valid: {choices(GGML_TYPE_BLOCKS)}")
    return GGML_TYPE_BLOCKS[key]


def _ggml(name: str) -> ElementFormat:
    block_elems, block_bytes = GGML_CACHE_BLOCKS[name]
    return ElementFormat(name, block_elems, block_bytes, _GGML_SOURCE, per_row=True)


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
    # exact spelling: common/arg.cpp kv_cache_type_from_str compares with ggml_type_name ("q8_0"), so "Q8_0" is
    # "Unsupported cache type" to llama.cpp
    key = name
    if key in TURBO_TYPES:
        return TURBO_TYPES[key]
    if key not in LLAMACPP_CACHE_TYPES:
        hint = f" (names are lower case: {name.lower()!r})" if name.lower() in LLAMACPP_CACHE_TYPES + tuple(TURBO_TYPES) else ""
        raise KvMathError(
            f"unknown llama.cpp cache type {_short(name)}{hint}; valid: {choices(LLAMACPP_CACHE_TYPES + tuple(TURBO_TYPES))}"
        )
    return _ggml(key)


def llamacpp_format(cache_type_k: str = "f16", cache_type_v: str | None = None) -> KVFormat:
    """A llama.cpp cache format from ``-ctk`` and ``-ctv`` (``-ctv`` defaults to ``-ctk``'s value here)."""
    k = llamacpp_type(cache_type_k)
    v = llamacpp_type(cache_type_v or cache_type_k)
    name = k.name if k.name == v.name else f"{k.name}/{v.name}"
    return KVFormat(name, "llama.cpp", k, v, k.source)


