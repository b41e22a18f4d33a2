"""vLLM's engine arguments that shape the KV cache, with vLLM's defaults, and the releases read."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import lru_cache

from ...errors import KvMathError, choices
from ...validate import MAX_TOKENS, MAX_TP, _short, check_bool, check_count, check_name, check_positive
from .releases import DEFAULT as DEFAULT_VLLM_VERSION
from .releases import TABLE, release

READ_VERSIONS = tuple(r.name for r in TABLE.releases if r.read == "full")
"""The vLLM releases whose sizing code these rules were read from and reproduce (``releases.RECORDS`` with
``read="full"``; 0.20.0, 0.22.0, 0.24.0, 0.26.0 and 0.27.0 were also run: tests/fixtures/vllm/). The later
records were read in part (see :mod:`kvmath.engines.vllm.releases`)."""

MAMBA_CACHE_MODES = ("none", "align", "all")
TOKEN_FORMULAS = ("groups", "concurrency")


@dataclass(frozen=True)
class VllmSettings:
    """The vLLM engine arguments that decide the KV-cache layout. Token counts are tokens.

    - ``max_model_len``: ``--max-model-len`` (None: the model's ``max_position_embeddings``).
    - ``kv_cache_dtype``: ``--kv-cache-dtype`` (``auto`` = the model dtype), a kvmath vLLM format name.
    - ``tensor_parallel_size``: KV heads per rank are ``max(1, heads // tp)``
      (vllm/config/model.py ``get_num_kv_heads``); GDN state is split by ``tp``.
    - ``block_size``: ``--block-size`` (default 16, ``CacheConfig.DEFAULT_BLOCK_SIZE``);
      ``kernel_block_size`` the attention backend's smallest kernel block (16 for FlashAttention,
      Triton and FlashInfer on sm_8x; an MLA backend's: :func:`mla_kernel_block_size`), the alignment unit of
      the hybrid block size; None: 16, said in a note for an MLA hybrid, whose backend depends on the card.
    - ``max_num_batched_tokens``: default 2048 (``vllm serve`` on cards under 70 GiB,
      ``EngineArgs.get_batch_defaults``, engine/arg_utils.py l.2415); ``max_num_seqs`` default 256
      (same place; it does not change the pool, only ``fits_max_num_seqs``).
    - ``num_speculative_tokens``: adds conv-state rows and ``num_speculative_blocks`` to every
      Mamba/GDN state (mamba_utils.py ``gated_delta_net_state_shape``; abstract.py ``get_kv_cache_spec``).
    - ``drafter_kv_layers``: full-attention layers the drafter adds to the KV cache. None = automatic:
      with speculative tokens, a model with ``mtp_num_hidden_layers`` (Qwen 3.5 / 3.6 MTP,
      qwen3_5_mtp.py builds them with ``layer_type="full_attention"``) adds that many layers with the
      target's full-attention spec; Gemma 4's assistant drafter shares the target's KV
      (``Gemma4MTPAttention``, ``kv_sharing_target_layer_name``) and adds none. An explicit count adds
      layers with the target's full-attention spec (a DFlash/EAGLE drafter with other head shapes is
      not modelled).
    - ``enable_prefix_caching``: vLLM's default is on for generative models
      (``ModelConfig.is_prefix_caching_supported``); ``mamba_cache_mode`` None = automatic ("align"
      with prefix caching, "none" without; "all" falls back to "align" for models without
      ``SupportsMambaPrefixCaching``, which includes every GDN model).
    - ``mamba_cache_dtype`` / ``mamba_ssm_cache_dtype``: ``auto`` = conv state in the model dtype;
      temporal state in the config's ``mamba_ssm_dtype`` for Qwen 3.5 / 3.6
      (``Qwen3_5ForConditionalGenerationConfig``), else the conv dtype.
    - ``disable_hybrid_kv_cache_manager``: sliding layers become full-attention specs (no window
      saving); a model with Mamba/GDN layers cannot then be unified and vLLM refuses.
    - ``num_gpu_blocks_override``: replaces the computed block count.
    - ``async_scheduling``: only matters from 0.26 (sliding-window in-flight tokens); None = vLLM's
      default (on).
    - ``gemma4_pth_page_padding``: apply the padding of vLLM PR #40391 (open; not in a release): with a
      per-token-head dtype, a full-attention layer's bytes per head are rounded up to a multiple of the
      sliding layers' bytes per head (Gemma 4 512-dim: 1032 -> 1040 B) so the pages divide. The
      club-3090 builds that logged Gemma 4 int8 pools carry it (their token counts need it).
    - ``allow_long_max_model_len``: the environment variable ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``; without
      it a ``max_model_len`` above the model's derived maximum is refused (vllm/config/model.py
      ``_get_and_verify_max_len``).
    - ``enforce_eager``: ``--enforce-eager`` (CUDA graphs off). vLLM's default captures full decode CUDA
      graphs, and then a model with Mamba/GDN layers refuses to start when ``max_num_seqs`` exceeds the
      pool's blocks (``CompilationConfig.resolve_cudagraph_mode_and_sizes``, config/compilation.py 0.20.0
      l.1420-1443, unchanged to 0.33.0); with ``enforce_eager`` that check is skipped.
    - ``vllm_version``: which release's rules (see the module docstring).
    """

    max_model_len: int | None = None
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    block_size: int = 16
    kernel_block_size: int | None = None
    max_num_batched_tokens: int = 2048
    max_num_seqs: int = 256
    num_speculative_tokens: int = 0
    drafter_kv_layers: int | None = None
    enable_prefix_caching: bool = True
    mamba_cache_mode: str | None = None
    mamba_block_size: int | None = None
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    disable_hybrid_kv_cache_manager: bool = False
    num_gpu_blocks_override: int | None = None
    async_scheduling: bool | None = None
    gemma4_pth_page_padding: bool = False
    enforce_eager: bool = False
    allow_long_max_model_len: bool = False
    vllm_version: str = DEFAULT_VLLM_VERSION

    def __post_init__(self):
        for name in ("tensor_parallel_size", "block_size", "kernel_block_size"):
            if getattr(self, name) is not None or name != "kernel_block_size":
                object.__setattr__(self, name, check_positive(getattr(self, name), name, maximum=MAX_TP))
        if self.block_size not in VLLM_BLOCK_SIZES:  # vllm/config/cache.py BlockSize; the CLI and the API alike
            raise KvMathError(f"block_size (--block-size) {self.block_size} is not one vLLM takes (vLLM's BlockSize); valid: "
                              f"{', '.join(map(str, VLLM_BLOCK_SIZES))}")
        for name in ("max_num_batched_tokens", "max_num_seqs"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name, maximum=MAX_TOKENS))
        if self.max_model_len is not None:
            object.__setattr__(self, "max_model_len", check_positive(self.max_model_len, "max_model_len",
                                                                     maximum=MAX_TOKENS))
        if self.max_num_batched_tokens < self.max_num_seqs:  # vllm/config/scheduler.py verify_max_model_len
            raise KvMathError(
                f"vLLM refuses this at start-up (SchedulerConfig): max_num_batched_tokens "
                f"({self.max_num_batched_tokens}) must be greater than or equal to max_num_seqs "
                f"({self.max_num_seqs}). Raise --max-num-batched-tokens or lower --max-num-seqs")
        object.__setattr__(self, "num_speculative_tokens",
                           check_count(self.num_speculative_tokens, "num_speculative_tokens", maximum=1024))
        for name in ("drafter_kv_layers", "num_gpu_blocks_override"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, check_count(v, name, maximum=2**40))
        if self.mamba_block_size is not None:
            object.__setattr__(self, "mamba_block_size", check_positive(self.mamba_block_size, "mamba_block_size",
                                                                        maximum=MAX_TOKENS))
        if self.mamba_cache_mode is not None and self.mamba_cache_mode not in MAMBA_CACHE_MODES:
            raise KvMathError(
                f"mamba_cache_mode must be one of {choices(MAMBA_CACHE_MODES)} (or None), got "
                f"{_short(self.mamba_cache_mode)}")
        for name in ("enable_prefix_caching", "disable_hybrid_kv_cache_manager", "gemma4_pth_page_padding",
                     "enforce_eager", "allow_long_max_model_len"):
            check_bool(getattr(self, name), name)
        if self.async_scheduling is not None:
            check_bool(self.async_scheduling, "async_scheduling")
        for name in ("kv_cache_dtype", "mamba_cache_dtype", "mamba_ssm_cache_dtype"):
            check_name(getattr(self, name), name, maximum=64)
        if self.kv_cache_dtype != "auto":  # a vLLM CacheDType (vllm/config/cache.py), checked here, not at first use
            from .formats import vllm_format

            vllm_format(self.kv_cache_dtype)
        for name in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):  # checked for every model, not only hybrids
            if getattr(self, name) != "auto":
                from .rules import state_dtype

                try:
                    state_dtype(getattr(self, name))
                except KvMathError as e:
                    raise KvMathError(f"--{name.replace('_', '-')}: {e}") from None
        v = self.vllm_version
        if isinstance(v, tuple):
            if len(v) not in (2, 3) or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 10**4
                                                for x in v):
                raise KvMathError(f"vllm_version must look like 0.24.0 or (0, 24), got {_short(v)}")
        else:
            check_name(v, "vllm_version", maximum=40)
        release(v)

    # the common names kvmath.derive and the book use
    @property
    def max_ctx(self) -> int | None:
        return self.max_model_len

    @property
    def tp(self) -> int:
        return self.tensor_parallel_size


def in_flight_tokens(s: VllmSettings) -> int:
    """Tokens a sliding-window request may hold beyond its window: ``max_num_batched_tokens`` up to
    0.25; from 0.26 ``max_in_flight_tokens = max_concurrent_batches * max_num_batched_tokens``, with 2
    concurrent batches under async scheduling (its default) and 1 without (config/vllm.py 0.26.0
    l.512-533)."""
    if release(s.vllm_version).in_flight_batches:
        asynchronous = True if s.async_scheduling is None else s.async_scheduling
        return (2 if asynchronous else 1) * s.max_num_batched_tokens
    return s.max_num_batched_tokens




GIB_BYTES = 2**30


MLA_KERNEL_BLOCKS = {"TRITON_MLA": 16, "FLASH_ATTN_MLA": 16, "FLASHINFER_MLA": 32}
"""The smallest kernel block of the CUDA MLA backends vLLM picks first on a card (``get_supported_kernel_block_sizes``,
vllm/v1/attention/backends/mla/*.py, 0.20.0-0.27.0: MultipleOf(16), MultipleOf(16), [32, 64])."""


def mla_kernel_block_size(compute_capability: int | None, qk_nope_head_dim: int | None) -> tuple[int, str]:
    """(the smallest kernel block, tokens; the backend) of the MLA attention backend vLLM picks on a card, the
    first of platforms/cuda.py ``_get_backend_priorities`` (0.20.0-0.27.0) the card runs: on sm_100
    FLASHINFER_MLA when ``qk_nope_head_dim`` is 64, 128 or 192 (its ``supports_combination``), on sm_90
    FLASH_ATTN_MLA, elsewhere TRITON_MLA. kvmath's ``--attention-backend`` names no MLA backend, so none is
    chosen by hand."""
    major = (compute_capability or 0) // 10
    name = ("FLASHINFER_MLA" if major == 10 and qk_nope_head_dim in (64, 128, 192)
            else "FLASH_ATTN_MLA" if major == 9 else "TRITON_MLA")
    return MLA_KERNEL_BLOCKS[name], name


def batch_defaults(total_bytes: int, device_name: str = "", compute_capability: int | None = None,
                   version: str = DEFAULT_VLLM_VERSION) -> tuple[int, int, str]:
    """``vllm serve``'s defaults ``(max_num_batched_tokens, max_num_seqs, why)`` on a CUDA card of
    ``total_bytes`` (``torch.cuda`` total memory, what ``current_platform.get_device_total_memory()``
    returns) named ``device_name``.

    ``EngineArgs.get_batch_defaults`` (engine/arg_utils.py 0.24.0 l.2404-2423, the same 0.20.0-0.27.0),
    UsageContext.OPENAI_API_SERVER column::

        if device_memory >= 70 * GiB_bytes and "a100" not in device_name:
            default_max_num_batched_tokens = {... OPENAI_API_SERVER: 8192}
            default_max_num_seqs = {... OPENAI_API_SERVER: 1024}
        else:
            default_max_num_batched_tokens = {... OPENAI_API_SERVER: 2048}
            default_max_num_seqs = {... OPENAI_API_SERVER: 256}

    0.28.0 adds a first tier ``device_memory >= 160 * GiB_bytes``: 16384 and 1024; 0.33.0 keeps the GB10
    (``is_device_capability((12, 1))``) on the small tier.
    """
    rec = release(version)
    name = device_name.lower()
    gib = total_bytes / GIB_BYTES
    if rec.batch_tier_160 and total_bytes >= 160 * GIB_BYTES:
        return 16384, 1024, f"{gib:.2f} GiB >= 160 GiB (vLLM >= 0.28)"
    if total_bytes >= 70 * GIB_BYTES and "a100" not in name and not (rec.gb10_small_tier and compute_capability == 121):
        return 8192, 1024, f"{gib:.2f} GiB >= 70 GiB, not an A100"
    why = ("an A100" if "a100" in name and total_bytes >= 70 * GIB_BYTES else
           "a GB10" if total_bytes >= 70 * GIB_BYTES else f"{gib:.2f} GiB < 70 GiB")
    return 2048, 256, why


SERVE_GPU_MEMORY_UTILIZATION = 0.92
"""``--gpu-memory-utilization`` when a serve line leaves it out: ``CacheConfig.gpu_memory_utilization`` (vllm/config/
cache.py ``Field(default=0.92)`` in every release 0.20.0-0.33.0, read at each tag; 0.9 in 0.19 and before). 0.34.0
leaves it unset (None: 1.0 with its extensible KV cache, sized from measured memory), which these rules do not
model."""


def serve_gpu_memory_utilization(version: str | None) -> tuple[float, str]:
    """(the ``gpu_memory_utilization`` a ``vllm serve`` line without the flag runs at, the note saying so) for
    ``version`` (None: ``DEFAULT_VLLM_VERSION``). Raises KvMathError from 0.34, whose unset default sizes an
    extensible KV cache (vllm/config/cache.py 0.34.0 ``resolved_gpu_memory_utilization``) these rules do not read:
    the message asks for the flag."""
    rec = release(version)
    if rec.serve_gpu_memory_utilization is None:
        raise KvMathError(f"vLLM {version} leaves --gpu-memory-utilization unset by default (1.0 with its extensible "
                          "KV cache, sized from measured memory), which kvmath has not read; pass "
                          "--gpu-memory-utilization (0.92 is what 0.20-0.33 used)")
    return rec.serve_gpu_memory_utilization, (
        f"gpu_memory_utilization {rec.serve_gpu_memory_utilization}: vLLM's default when the line leaves it out "
        f"(CacheConfig, vllm/config/cache.py, 0.20-0.33; vLLM {version or DEFAULT_VLLM_VERSION})")


def serve_batch_settings(total_bytes: int, device_name: str, compute_capability: int | None, version: str,
                         max_model_len: int, max_num_batched_tokens: int | None, max_num_seqs: int | None
                         ) -> tuple[int, int, str | None]:
    """What ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` does with the values the
    user left unset (engine/arg_utils.py 0.24.0): the card's defaults, then, for a defaulted
    ``max_num_batched_tokens``, ``min(max_num_seqs * max_model_len, max_num_batched_tokens)`` (chunked
    prefill on, vLLM's default). Returns ``(batched, seqs, note)``; the note is None when both were given."""
    if max_num_batched_tokens is not None and max_num_seqs is not None:
        return max_num_batched_tokens, max_num_seqs, None
    d_batched, d_seqs, why = batch_defaults(total_bytes, device_name, compute_capability, version)
    parts = []
    seqs = max_num_seqs
    if seqs is None:
        seqs = d_seqs
        parts.append(f"max_num_seqs {seqs:,}")
    batched = max_num_batched_tokens
    if batched is None:
        batched = min(seqs * max_model_len, d_batched)
        parts.append(f"max_num_batched_tokens {batched:,}")
    note = (f"{' and '.join(parts)}: vllm serve's default{'s' if len(parts) > 1 else ''} on this card ({why}; "
            f"EngineArgs.get_batch_defaults, vllm/engine/arg_utils.py, vLLM {version})")
    return batched, seqs, note


def long_max_model_len_allowed(env) -> bool:
    """``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` in the mapping ``env`` as vllm/envs.py reads it (``1`` or ``true``)."""
    value = env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "") if env is not None else ""
    return str(value).strip().lower() in ("1", "true")


VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)  # vllm/config/cache.py BlockSize


def human_readable_int(text: str) -> int:
    """vLLM's integer flags as ``vllm serve`` parses them (``human_readable_int``, vllm/engine/arg_utils.py,
    0.20-0.26): a plain integer, or a number with a suffix, lowercase decimal (``k`` 10^3, ``m`` 10^6,
    ``g`` 10^9, ``t`` 10^12; ``25.6k`` = 25,600) or uppercase binary (``K`` 2^10 ... ``T`` 2^40; integers
    only). Raises argparse.ArgumentTypeError (one line) otherwise."""
    import re

    from ...validate import MAX_BYTES

    from ...validate import engine_int

    try:
        out = engine_int(text, "value", "vllm_human")  # the one integer reader (kvmath.validate)
    except KvMathError as e:
        if "decimals are not allowed" in str(e):
            raise argparse.ArgumentTypeError(str(e).removeprefix("value: ")) from None
        raise argparse.ArgumentTypeError(f"not an integer: {str(text)[:40]!r} (e.g. 8192, 8k, 16K)") from None
    if not 0 < out <= MAX_BYTES:
        raise argparse.ArgumentTypeError(f"must be positive and at most 2^60, got {text[:40]!r}")
    return out
