"""KV-cache storage formats: how many bytes one token's K or V row takes, per engine.

A format is a pair of element formats, one for K and one for V (vLLM's ``k8v4`` stores them
differently; llama.cpp takes ``--cache-type-k`` and ``--cache-type-v`` separately). Each element
format is a block layout: ``block_bytes`` bytes hold ``block_elems`` elements, plus optional
per-head extras (a per-token-head scale) and per-head padding. Bytes per element are therefore
exact fractions (q8_0 = 34/32), and the bytes of a row are exact integers.

This module is byte arithmetic only. Each engine's table of named formats lives with the engine
(``kvmath.engines.<engine>.formats``); GGML block sizes come from the ``gguf`` package there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .errors import KvMathError, choices
from .validate import _short


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



def lookup(table: dict[str, KVFormat], name: str, what: str) -> KVFormat:
    if not isinstance(name, str):
        raise KvMathError(f"{what} must be a name, got {_short(name)}; valid: {choices(table)}")
    # exact spelling: the engines' own parsers compare case-sensitively (vLLM's --kv-cache-dtype is an argparse
    # choice of CacheDType's literals, vllm/config/cache.py), so "FP8_E5M2" would not paste into the engine
    for fmt in table.values():
        if name == fmt.name or name in fmt.aliases:
            return fmt
    low = name.lower()
    hint = next((f" (names are lower case: {f.name!r})" for f in table.values() if low == f.name or low in f.aliases), "")
    raise KvMathError(f"unknown {what} {_short(name)}{hint}; valid: {choices(table)}")
