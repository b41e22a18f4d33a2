"""vLLM's KV-cache specs reduced to what the allocator reads (vllm/v1/kv_cache_interface.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from ...formats import DTYPE_BYTES



@dataclass(frozen=True)
class KVSpec:
    """One layer's vLLM KV-cache spec, reduced to what the allocator reads.

    ``kind``: ``full_attention`` (``FullAttentionSpec`` / ``TQFullAttentionSpec``), ``sliding_window``
    (``SlidingWindowSpec``) or ``mamba`` (``MambaSpec``). ``block_size`` is tokens per block (for a
    Mamba spec, the tokens one state block stands for: ``max_model_len`` in mode "none").
    ``token_bytes`` (attention) is bytes per token per layer per rank, scales included;
    ``real_page_bytes`` is ``block_size * token_bytes`` or, for Mamba, the state bytes
    ``sum(prod(shape) * dtype size)``; ``page_padded_bytes`` overrides it when set
    (``page_size_padded``). ``sliding_window`` on a full-attention spec records a window that
    ``disable_hybrid_kv_cache_manager`` turned into full attention. Specs compare equal exactly when
    vLLM's do, which is what grouping keys on.
    """

    kind: str
    block_size: int
    num_kv_heads: int = 0
    head_size: int = 0
    head_size_v: int = 0
    kv_cache_dtype: str = ""
    token_bytes: int = 0
    sliding_window: int | None = None
    state_shapes: tuple[tuple[int, ...], ...] = ()
    state_dtypes: tuple[str, ...] = ()
    mamba_cache_mode: str = "none"
    num_speculative_blocks: int = 0
    page_padded_bytes: int | None = None

    @cached_property  # the spec is frozen; a page is asked for thousands of times per plan
    def real_page_bytes(self) -> int:
        if self.kind == "mamba":
            return sum(math.prod(s) * DTYPE_BYTES[d] for s, d in zip(self.state_shapes, self.state_dtypes))
        return self.block_size * self.token_bytes

    @cached_property
    def page_size_bytes(self) -> int:
        """Bytes of one block of this layer (``page_size_bytes``): padded size when padded."""
        real = self.real_page_bytes
        if self.page_padded_bytes is not None:
            if self.page_padded_bytes < real:
                raise AssertionError("padded page smaller than the real page")
            return self.page_padded_bytes
        return real

    def max_memory_usage_bytes(self, max_model_len: int, in_flight_tokens: int) -> int:
        """Bytes one request of ``max_model_len`` tokens may hold in this layer (``max_memory_usage_bytes``).

        Full attention: ``ceil(L / B)`` pages. Sliding window W:
        ``ceil(min(W - 1 + in_flight, L) / B) + 1`` pages ("+1": the window may start mid-block;
        ``in_flight`` is ``max_num_batched_tokens``, or ``max_in_flight_tokens`` from 0.26). Mamba:
        ``1 + spec`` pages in mode "none", ``2 + spec`` in "align", ``ceil(L / B) + spec`` in "all"
        (kv_cache_interface.py l.238, l.520-537, l.646-655).
        """
        page = self.page_size_bytes
        if self.kind == "full_attention":
            return -(-max_model_len // self.block_size) * page
        if self.kind == "sliding_window":
            tokens = min(self.sliding_window - 1 + in_flight_tokens, max_model_len)
            return (-(-tokens // self.block_size) + 1) * page
        if self.mamba_cache_mode == "all":
            return (-(-max_model_len // self.block_size) + self.num_speculative_blocks) * page
        if self.mamba_cache_mode == "align":
            return (2 + self.num_speculative_blocks) * page
        return (1 + self.num_speculative_blocks) * page

    def describe(self) -> str:
        if self.kind == "mamba":
            shapes = " + ".join(f"{'x'.join(map(str, s))} {d}" for s, d in zip(self.state_shapes, self.state_dtypes))
            s = f"mamba state {shapes} = {self.real_page_bytes:,} B"
        else:
            s = (f"{self.kind} {self.num_kv_heads} heads x {self.head_size}"
                 + (f"/{self.head_size_v}" if self.head_size_v != self.head_size else "")
                 + f" {self.kv_cache_dtype}, {self.token_bytes:,} B/token")
            if self.sliding_window:
                s += f", window {self.sliding_window}"
        s += f"; block {self.block_size} tokens, page {self.page_size_bytes:,} B"
        if self.page_padded_bytes is not None and self.page_padded_bytes != self.real_page_bytes:
            s += f" (padded from {self.real_page_bytes:,} B)"
        return s


@dataclass(frozen=True)
class KVGroup:
    """One KV-cache group: layers sharing a block table (``KVCacheGroupSpec``).

    ``padding_layers`` is how many empty slots the group has against ``group_size`` (vLLM's
    "Add %d padding layers" counts them per attention type).
    """

    layer_names: tuple[str, ...]
    spec: KVSpec
    padding_layers: int = 0

    @property
    def kind(self) -> str:
        return self.spec.kind


