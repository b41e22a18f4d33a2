"""SGLang's settings (its ``ServerArgs`` names) and the defaults each release derives from the GPU memory.

``default_mem_fraction`` / ``graph_defaults`` follow the release's ``mfs_rule`` / ``graph_table``
(:mod:`kvmath.engines.sglang.releases` cites the lines). ``G`` is the GPU memory in MiB as
``get_nvgpu_memory_capacity`` reads it (``nvidia-smi --query-gpu=memory.total``, the smallest card).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import KvMathError
from ...validate import MAX_TOKENS, check_positive
from .releases import SglangRelease


def check_fraction(value, what: str = "--mem-fraction-static") -> float:
    """A fraction in (0, 1): KvMathError for <= 0, >= 1, nan, or a non-number."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise KvMathError(f"{what} must be a number in (0, 1), got {str(value)[:40]!r}") from None
    if not math.isfinite(f) or not 0 < f < 1:
        raise KvMathError(f"{what} must be in (0, 1) (SGLang's static share of GPU memory), got {str(value)[:40]}")
    return f


@dataclass(frozen=True)
class SglangSettings:
    """The flags that size SGLang's pools, by their ``ServerArgs`` names (``--context-length`` =
    ``context_length``); None means SGLang's own default for the release, which the budget fills in.

    ``kv_cache_memory_bytes`` is not an SGLang flag: the bytes the pools get (``rest`` in
    ``profile_max_num_token``), for the cache mode; None = the pool ``max_running_requests`` requests of
    ``context_length`` tokens need."""

    context_length: int
    max_running_requests: int | None = None
    tp_size: int = 1
    dp_size: int = 1
    enable_dp_attention: bool = False
    kv_cache_dtype: str = "auto"
    page_size: int = 1
    mem_fraction_static: float | None = None
    max_total_tokens: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int = 16384
    cuda_graph_max_bs: int | None = None
    disable_cuda_graph: bool = False
    max_mamba_cache_size: int | None = None
    mamba_full_memory_ratio: float = 0.9
    mamba_ssm_dtype: str | None = None
    disable_radix_cache: bool = False
    swa_full_tokens_ratio: float = 0.8
    disable_hybrid_swa_memory: bool = False
    attention_backend: str | None = None
    sglang_version: str | None = None
    kv_cache_memory_bytes: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "context_length", check_positive(self.context_length, "--context-length",
                                                                  maximum=MAX_TOKENS))
        for name in ("max_running_requests", "max_total_tokens", "chunked_prefill_size", "cuda_graph_max_bs",
                     "max_mamba_cache_size", "kv_cache_memory_bytes"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, check_positive(v, "--" + name.replace("_", "-"), maximum=2**60))
        for name in ("tp_size", "dp_size", "page_size", "max_prefill_tokens"):
            object.__setattr__(self, name, check_positive(getattr(self, name), "--" + name.replace("_", "-"),
                                                          maximum=MAX_TOKENS))
        if self.mem_fraction_static is not None:
            object.__setattr__(self, "mem_fraction_static", check_fraction(self.mem_fraction_static))
        for name in ("mamba_full_memory_ratio", "swa_full_tokens_ratio"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0 or v > 100:
                raise KvMathError(f"--{name.replace('_', '-')} must be a positive number, got {str(v)[:40]}")
        if self.enable_dp_attention and self.tp_size % self.dp_size:
            raise KvMathError(f"--dp-size {self.dp_size} must divide --tp-size {self.tp_size} with --enable-dp-attention")
        if self.mamba_ssm_dtype not in (None, "float32", "bfloat16", "float16"):
            raise KvMathError(f"--mamba-ssm-dtype must be float32, bfloat16 or float16, got {str(self.mamba_ssm_dtype)[:40]!r}")

    @property
    def attn_tp_size(self) -> int:
        """Attention TP: ``tp_size // dp_size`` with ``--enable-dp-attention`` (layers/dp_attention.py)."""
        return self.tp_size // self.dp_size if self.enable_dp_attention else self.tp_size

    # the common names the derivation reports
    @property
    def max_num_seqs(self) -> int:
        return self.max_running_requests or 1

    @property
    def max_ctx(self) -> int:
        return self.context_length

    @property
    def tp(self) -> int:
        return self.tp_size


def graph_defaults(rel: SglangRelease, gpu_mib: float | None, tp: int) -> tuple[int, int]:
    """``(chunked_prefill_size, cuda_graph_max_bs)`` when unset, by GPU memory ``G`` in MiB (server_args.py)."""
    G = gpu_mib
    if rel.graph_table == "0.4.3":
        if G is not None and G < 25_000:
            return 2048, (8 if tp < 4 else 80)
        return 8192, 160
    if rel.graph_table == "0.4.8":
        if G is None:
            return 4096, 160
        if G < 35 * 1024:
            return 2048, (8 if tp < 4 else 80)
        if G < 60 * 1024:
            return 8192, 160
        return (8192 if G < 160 * 1024 else 16384), 160
    if G is None:
        return 4096, 160
    table = ((20, 2048, 8, 8), (35, 2048, 24, 80), (60, 4096, 32, 160), (90, 8192, 256, 512), (160, 8192, 256, 512))
    if rel.graph_table == "0.5.23":
        table = ((20, 2048, 8, 8), (35, 4096, 48, 160), (60, 4096, 32, 160), (90, 8192, 256, 512),
                 (160, 8192, 256, 512))
    for limit, chunk, small, big in table:
        if G < limit * 1024:
            return chunk, (small if tp < 4 else big)
    return 16384, 512


def reserved_mib(rel: SglangRelease, s: SglangSettings, gpu_mib: float | None, chunk: int, bs: int,
                 speculative: bool = False) -> float:
    """The MiB SGLang's default fraction leaves for activations and CUDA graphs (0.5.4-0.5.9
    ``_handle_gpu_memory_settings``): ``512 + 1.5 max(chunk, 2048) + 2 bs + 1024 tp / 8``, DP attention
    ``+ 3 bs dp`` (``+ 1.5 bs dp`` above 300), at least 10 GiB above 60 GiB."""
    r = 512 + (max(chunk, 2048) if chunk > 0 else max(s.max_prefill_tokens, 2048)) * 1.5
    r += bs * 2
    r += s.tp_size / 8 * 1024
    if s.enable_dp_attention:
        r += bs * s.dp_size * 3
        if bs > 300:
            r += bs * s.dp_size * 1.5
    if gpu_mib is not None and gpu_mib > 60 * 1024:
        r = max(r, 10 * 1024)
    if speculative:
        r += 2 * 1024
    return r


def default_mem_fraction(rel: SglangRelease, s: SglangSettings, gpu_mib: float | None, chunk: int, bs: int,
                         vision: dict | None = None) -> float:
    """SGLang's ``mem_fraction_static`` when ``--mem-fraction-static`` is not given (see ``mfs_rule``).

    ``vision`` is the config's ``vision_config`` (0.5.4 on: ``adjust_mem_fraction_for_vlm``). Raises
    KvMathError for 0.5.23, whose default kvmath does not model (give the flag)."""
    G, tp = gpu_mib, s.tp_size
    if rel.mfs_rule == "given":
        raise KvMathError(f"SGLang {rel.name}'s default --mem-fraction-static reserves prefill CUDA-graph memory "
                          "(default_prefill_backend and its capture list) that kvmath has not modelled; give "
                          "--mem-fraction-static")
    if rel.mfs_rule in ("tp", "tp_big_gpu"):
        f = 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88
        if rel.mfs_rule == "tp_big_gpu":
            if G is not None and G > 81920:
                f = 0.88
            if G is not None and G > 180 * 1000:
                f = 0.79
            elif G is not None and G > 96 * 1024:
                f = min(f + 48 * 1024 * (1 - f) / G, (G - 18 * 1024) / G)
        return f
    if G is None:
        return 0.88
    if rel.mfs_rule == "gpu_table":
        p = tp
        if G < 35 * 1024:
            r = (2.8 + p / 10) * 1024
        elif G < 90 * 1024:
            r = (9.5 + p / 2) * 1024
        elif G < 160 * 1024:
            r = (12 + p / 2) * 1024
        else:
            r = 32 * 1024
        if s.enable_dp_attention:
            r += 4 * 1024
        return round((G - r) / G, 3)
    f = round((G - reserved_mib(rel, s, G, chunk, bs)) / G, 3)
    if vision:
        layers = vision.get("num_hidden_layers", 24)  # getattr(vision_config, "num_hidden_layers", 24)
        hidden = vision.get("hidden_size", 1024)
        ratio = layers * hidden ** 2 / (24 * 1024 ** 2)
        f = f * (0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0))))
    return f
