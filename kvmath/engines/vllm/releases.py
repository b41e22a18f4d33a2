"""vLLM releases as data: one frozen record of named rule switches per release whose source was read.

Every rule of this engine that changes between releases reads a switch off the chosen release's record
(``release.pad_attention_pages``, ``release.null_block_check`` ...) instead of comparing version numbers
inline, so what changed between two releases is the difference of their records
(``VllmRelease.switches()``), and the covered range in every header, note and error comes from this one table.

A record stands for its release and the unread releases after it, up to the next record
(:class:`kvmath.engines.releases.ReleaseTable`). Three depths of reading, the record's ``read`` field:

- ``"full"``: the sizing code was read line by line and reproduced (0.20.0-0.27.0; 0.20.0, 0.22.0, 0.24.0,
  0.26.0 and 0.27.0 were also run: ``tests/fixtures/vllm/``);
- ``"part"``: read for the messages, the batch defaults, the null block, the Mamba-blocks check and the serve
  default; the grouping changes of 0.28+ are not modelled, and each answer says so (``not_modelled``);
- ``"profile"``: only the profile run's switches are known (from the pull requests that changed them), for
  pricing public boots of releases before 0.20 (``kvmath.engines.vllm.calibration``); a plan refuses them.

Sources are the PyPI wheels (``pip download --no-deps vllm==V``), files named in each record's ``source``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...errors import KvMathError
from ..releases import Release, ReleaseTable, release_key


@dataclass(frozen=True)
class VllmRelease(Release):
    """One vLLM release's rule switches (see each field; the source of each is in the record's ``source``).

    - ``read``: ``"full"``, ``"part"`` or ``"profile"`` (module docstring);
    - ``serve_gpu_memory_utilization``: ``CacheConfig.gpu_memory_utilization``'s default (vllm/config/cache.py),
      None when the release leaves it unset (0.34: an extensible KV cache these rules do not model);
    - ``estimate_cudagraphs``: ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to 1, so the CUDA graph
      estimate is subtracted before the KV cache is sized (vllm/envs.py 0.20.0; PR #30515);
    - ``sort_top_k_top_p``: the sampler's dummy run sorts the logits for top-k / top-p at every batch size
      (before the Triton kernel of PR #33538, taken as 0.16);
    - ``encoder_frame_loop``: Gemma 4's video encoder runs one frame at a time (gemma4_mm.py before
      ``_encoder_chunk`` of 0.22.0);
    - ``gemma4_position_one_hot``: Gemma 4's vision patch embedder (HF transformers, which vLLM's gemma4_mm.py
      calls) builds the ``F.one_hot`` position tensor [frames, patches, 2, position_embedding_size] int64 + its
      bf16 cast: transformers before 5.11.0 (modeling_gemma4.py 5.10.0 l.590); 5.11.0 (PyPI 2026-06-10, PR
      #46176) looks the positions up with ``F.embedding``. vLLM sets only a lower bound (transformers>=5.5.3 in
      0.26.0's metadata), so this follows the transformers a fresh install took on the release day: 0.22.0
      (2026-05-29) and earlier with one-hot, 0.23.0 (2026-06-13) and later without (a B300 boot of Gemma 4 31B
      on 0.26.0 logs 3.9 GiB of peak activation, where the one-hot over 96 frames alone is 11.5 GiB);
    - ``token_formula``: "GPU KV cache size" is ``num_blocks // num_groups * min_block_size`` (``"groups"``,
      0.20.x ``_report_kv_cache_config``) or ``int(max_concurrency * max_model_len)`` (``"concurrency"``, 0.21+);
    - ``turboquant_hybrid``: TurboQuant on a hybrid model is sized from its slot (0.21+), not refused (0.20.0
      engine/arg_utils.py l.1676);
    - ``cpu_backend_messages``: the memory check says "model's" and names the CPU backend (0.22+;
      kv_cache_utils.py 0.22.0 l.699-728), not "models's";
    - ``pad_attention_pages``: an attention page that does not divide the largest page is padded up to it
      (0.24+, ``unify_kv_cache_spec_page_size`` l.1049-1100), not refused;
    - ``in_flight_batches``: a sliding-window request holds ``max_in_flight_tokens`` (2 batches under async
      scheduling) beyond its window (0.26+, config/vllm.py 0.26.0 l.512-533), not one batch;
    - ``align_block_check``: Mamba align mode asserts ``block_size <= max_num_batched_tokens``
      (``VllmConfig.validate_block_size``, to 0.26.0 l.2264-2270);
    - ``promote_specs_message``: an un-unifiable ``--disable-hybrid-kv-cache-manager`` says "Failed to promote
      local KV cache specs ..." (0.27+, kv_cache_utils.py 0.27.0 l.1525-1529);
    - ``mla_align_128``: an MLA hybrid's block is aligned to at least 128 (0.27+, platforms/interface.py
      ``_align_hybrid_block_size``);
    - ``trtllm_mxfp4_intermediate_128``: FlashInfer TRT-LLM's MXFP4 experts pad the intermediate size to 128
      (0.27+, fused_moe/oracle/mxfp4.py);
    - ``batch_tier_160``: ``get_batch_defaults`` has a first tier at 160 GiB: 16384 tokens, 1024 sequences
      (0.28+, engine/arg_utils.py);
    - ``null_block_check``: the memory check plans against the available memory less one null block (0.29+,
      ``get_kv_cache_configs``, kv_cache_utils.py 0.29.0; kv_cache_planning.py 0.33.0 l.1533-1552);
    - ``gb10_small_tier``: the GB10 (sm_121) stays on the small batch tier (0.33+, engine/arg_utils.py);
    - ``group_size_factor``: ``_get_kv_cache_groups_uniform_page_size`` takes the largest layer count as the
      group size when it is below ``factor * min`` (1.5 from 0.19, 1.25 in 0.12-0.14; 0 in 0.10-0.11, which
      take the smallest count alone: kv_cache_utils.py 0.10.1.1 l.966, 0.11.0 l.945);
    - ``hybrid_align_16``: a hybrid's attention block is aligned to 16 tokens (HybridAttentionMambaModelConfig,
      models/config.py 0.19.0 l.217-218), not to ``max(kernel block, block size)`` (0.20+, platforms/interface.py);
    - ``mamba_blocks_check``: "max_num_seqs (N) exceeds available Mamba cache blocks" (config/compilation.py
      0.20.0 l.1420-1443; absent from 0.19.0);
    - ``hybrid_prefix_caching``: a hybrid keeps ``--enable-prefix-caching`` (Mamba cache modes ``align`` /
      ``all``); False in 0.10-0.11, whose ``MambaModelConfig.verify_and_update_config`` sets
      ``enable_prefix_caching = False`` for every hybrid ("Hybrid or mamba-based model detected: disabling prefix
      caching since it is not yet supported.", models/config.py 0.10.2 l.308-311, 0.11.0 l.295-298), and in
      0.12-0.14 for every hybrid without SupportsMambaPrefixCaching, Qwen3-Next among them ("... without support for
      prefix caching: disabling.", models/config.py 0.12.0 l.292-309, 0.14.1 l.332-349), so the
      Mamba block is ``max_model_len`` (gpu_model_runner.py 0.10.2 l.3714-3721) and a state layer holds one page
      per request (``MambaSpec.max_memory_usage_bytes``, kv_cache_interface.py 0.10.2 l.209-213);
    - ``head256_align_32``: a hybrid whose attention head is 256 is aligned to 32 tokens, not 16, on sm_100 with
      FlashInfer or the default backend (flashinfer issue 1993): ``"exact"`` in 0.12-0.13
      (``is_device_capability(100)``, models/config.py 0.12.0 l.364-375), ``"family"`` in 0.14
      (``is_device_capability_family(100)``, 0.14.1 l.401-412), ``""`` otherwise. The card is not a plan setting:
      a plan takes 32 when ``kernel_block_size`` is 32 (kvmath-fit sets it from ``--card``), 16 otherwise, and says so;
    - ``hybrid_model_types``: the hybrid ``model_type`` values a record prices (None: every hybrid the rules
      know), for the record's own ``MAJOR.MINOR`` line only (a later line taking the record, 0.13 or 0.15-0.18,
      refuses hybrids: its sources were not read for them). 0.10-0.11: ``("qwen3_next",)``, the one Gated-DeltaNet hybrid in their registry
      (models/registry.py: Qwen3NextForCausalLM; no Qwen 3.5 / 3.6), whose state is
      ``gated_delta_net_state_dtype(model dtype, mamba_cache_dtype)`` for both tensors (mamba_utils.py 0.10.2
      l.74-80, 0.11.0 l.74-80: ``--mamba-ssm-cache-dtype`` is not read) and
      ``gated_delta_net_state_shape`` (the same byte count as 0.19.0's: temporal ``(v_heads / TP, k_dim, v_dim)``
      against ``(v_heads / TP, v_dim, k_dim)``, mamba_utils.py 0.10.2 l.177-202, 0.11.0 l.166-186, 0.19.0
      l.177-200);
    - ``gdn_ssm_dtype``: a Gated-DeltaNet layer's temporal state takes ``--mamba-ssm-cache-dtype`` (0.19.0
      ``gated_delta_net_state_dtype`` -> ``_mamba_state_dtype``, mamba_utils.py l.79-87); False in 0.10-0.11, where
      both GDN tensors take ``mamba_cache_dtype`` (or the model dtype) alone (mamba_utils.py 0.10.2 l.74-80,
      0.11.0 l.74-80; qwen3_next.py 0.10.2 l.1175-1181, 0.11.0 l.1150-1156);
    - ``refuse_kinds``: the model kinds a ``"part"`` record has not read, refused in one KvMathError line naming
      the release (``mamba``, ``mamba2_state``, ``mla``, ``mla_hybrid``, ``kv_format``, ``speculative``, ``page_sizes``,
      ``padding_layers``, ``disable_hybrid``; alloc.py ``_refuse_unread``);
    - ``not_modelled``: what this release changes that the rules do not model ("" when nothing is known).
    """

    read: str = "full"
    serve_gpu_memory_utilization: float | None = 0.92
    estimate_cudagraphs: bool = True
    sort_top_k_top_p: bool = False
    encoder_frame_loop: bool = False
    gemma4_position_one_hot: bool = False
    token_formula: str = "concurrency"
    turboquant_hybrid: bool = True
    cpu_backend_messages: bool = True
    pad_attention_pages: bool = True
    in_flight_batches: bool = True
    align_block_check: bool = False
    promote_specs_message: bool = True
    mla_align_128: bool = True
    trtllm_mxfp4_intermediate_128: bool = True
    batch_tier_160: bool = True
    null_block_check: bool = True
    gb10_small_tier: bool = True
    group_size_factor: float = 1.5
    hybrid_align_16: bool = False
    mamba_blocks_check: bool = True
    gptq_marlin_only: bool = True
    hybrid_prefix_caching: bool = True
    gdn_ssm_dtype: bool = True
    head256_align_32: str = ""
    hybrid_model_types: tuple[str, ...] | None = None
    refuse_kinds: tuple[str, ...] = ()
    not_modelled: str = ""

    @property
    def minor(self) -> tuple[int, int]:
        """``(major, minor)``, how vLLM's own messages and the book name a release line."""
        return self.key[0], self.key[1]


_WHEEL = "PyPI wheel vllm=={}: "
_SIZING = ("v1/core/kv_cache_utils.py, v1/kv_cache_interface.py, platforms/interface.py, config/vllm.py, "
           "config/cache.py, engine/arg_utils.py, v1/worker/gpu_model_runner.py, v1/worker/gpu_worker.py")
_UNREAD_28 = ("planned with the 0.27 rules plus what later releases were read for (the batch defaults, the "
              "null block of 0.29+, the messages to 0.33); the grouping changes of 0.28+ (packed groups from 0.30, "
              "kv_cache_planning.py in 0.33) are not modelled")

_BEFORE_20 = dict(read="profile", serve_gpu_memory_utilization=0.9, estimate_cudagraphs=False, token_formula="groups",
                  turboquant_hybrid=False, cpu_backend_messages=False, pad_attention_pages=False,
                  in_flight_batches=False, align_block_check=True, promote_specs_message=False, mla_align_128=False,
                  trtllm_mxfp4_intermediate_128=False, batch_tier_160=False, null_block_check=False,
                  gb10_small_tier=False, encoder_frame_loop=True, gemma4_position_one_hot=True, hybrid_align_16=True, mamba_blocks_check=False,
                  gptq_marlin_only=False)
_20 = dict(_BEFORE_20, read="full", serve_gpu_memory_utilization=0.92, estimate_cudagraphs=True, sort_top_k_top_p=False,
           hybrid_align_16=False, mamba_blocks_check=True)
# 0.10-0.14, read from the wheels for full and sliding-window attention (kv_cache_utils.py: the check, the groups,
# get_num_blocks, "GPU KV cache size" = num_blocks // groups * min block; kv_cache_interface.py: the page and
# per-request bytes; config/cache.py: 0.9; engine/arg_utils.py: the 70 GiB / A100 batch tiers; envs.py: no CUDA
# graph estimate; topk_topp_sampler.py: the sort path)
_OLD_KINDS = ("mamba", "mla", "kv_format", "speculative", "page_sizes", "padding_layers", "disable_hybrid")
_UNREAD_OLD = ("full and sliding-window attention read; Mamba / GDN hybrids, MLA, other KV formats, speculative "
               "decoding, mixed page sizes and padded groups are refused")
_12 = dict(_BEFORE_20, read="part", sort_top_k_top_p=True, group_size_factor=1.25, refuse_kinds=_OLD_KINDS,
           not_modelled=_UNREAD_OLD)
# 0.10.2-0.11 hybrids (Qwen3-Next, new in 0.10.2), read from the wheels 0.10.2 and 0.11.0:
# HybridAttentionMambaModelConfig (models/config.py 0.10.2 l.327-418, 0.11.0 l.314-404) sets the attention block to
# 16 * cdiv(mamba page, 16 * one token's FullAttentionSpec page) (0.10.2 l.381, 0.11.0 l.367) and pads the Mamba
# page to it, as 0.19.0 does without prefix caching (0.19.0 l.273-275: hybrid_align_16); prefix caching is forced off
# (hybrid_prefix_caching); _get_kv_cache_config_uniform_page_size groups by the smallest layer count
# (group_size_factor 0), takes num_blocks = available // page // group size (get_num_blocks) and logs
# num_blocks // groups * min block (0.10.2 l.1026, 0.11.0 l.1080); get_max_concurrency_for_kv_cache_config is
# 0.19.0's (0.10.2 l.768-783, 0.11.0 l.780-795, 0.19.0 l.802-820). Mamba-2 / KDA (Nemotron-H, Granite 4.0-H,
# Falcon-H1, Jamba ...) are not read and stay refused (mamba2_state), as do MLA, speculative decoding and formats
_OLD_HYBRID_KINDS = tuple(k for k in _OLD_KINDS if k != "mamba") + ("mamba2_state",)
_UNREAD_10 = ("full and sliding-window attention and Qwen3-Next (Gated DeltaNet, prefix caching forced off) read; "
              "other hybrids (Mamba-2 / KDA, Qwen 3.5 / 3.6, not in this release's registry), MLA, other KV formats, "
              "speculative decoding, mixed page sizes and padded groups are refused")
_10_1 = dict(_12, group_size_factor=0.0)
_10 = dict(_12, group_size_factor=0.0, hybrid_prefix_caching=False, gdn_ssm_dtype=False,
           hybrid_model_types=("qwen3_next",), refuse_kinds=_OLD_HYBRID_KINDS, not_modelled=_UNREAD_10)
# 0.12-0.14 Qwen3-Next, read from the wheels 0.12.0 and 0.14.1: as 0.10.2-0.11 (prefix caching off: Qwen3-Next has no
# SupportsMambaPrefixCaching, only bamba, falcon_h1, granitemoehybrid, jamba, mamba, mamba2, nemotron_h, zamba2 do;
# GDN dtypes from mamba_cache_dtype alone, mamba_utils.py 0.12.0 / 0.14.1 l.74-81; Mamba block max_model_len,
# models/config.py 0.12.0 l.311-312, 0.14.1 l.351-352; one page per request, kv_cache_interface.py 0.12.0
# l.262-264) with the 1.25 group factor and the sm_100 head-256 alignment (head256_align_32)
_UNREAD_12H = _UNREAD_10.replace("Qwen 3.5 / 3.6, not in this release's registry", "Qwen 3.5 / 3.6, not in this "
                                 "release's registry; Mamba-2 models, whose experimental prefix caching was not read")
_12H = dict(_10, group_size_factor=1.25, not_modelled=_UNREAD_12H)
_19 = dict(_BEFORE_20, read="part", group_size_factor=1.5,
           refuse_kinds=("mla", "kv_format", "speculative", "mamba2_state"),
           not_modelled="read as 0.20 less its changes (no CUDA graph estimate, 0.9, 'groups' tokens, 16-token hybrid "
           "alignment, no Mamba-blocks check); MLA, Mamba-2 / KDA state layers, KV formats new in 0.20 and "
           "speculative decoding are refused")
_OLD_SRC = ("v1/core/kv_cache_utils.py, v1/kv_cache_interface.py, config/cache.py, engine/arg_utils.py, envs.py, "
            "v1/sample/ops/topk_topp_sampler.py")
_HYB_SRC = ("model_executor/models/config.py (MambaModelConfig, HybridAttentionMambaModelConfig), "
            "model_executor/layers/mamba/mamba_utils.py, model_executor/models/qwen3_next.py, "
            "v1/worker/gpu_model_runner.py (MambaSpec), models/registry.py")
_21 = dict(_20, token_formula="concurrency", turboquant_hybrid=True)
_22 = dict(_21, cpu_backend_messages=True, encoder_frame_loop=False)
# gptq_marlin_only: 0.24.0 maps quant_method "gptq" (and --quantization gptq / gptq_marlin) to
# quantization/auto_gptq.py AutoGPTQConfig, whose TYPE_MAP holds (4, sym) and (8, sym) only: any other bits or
# sym=False raise "Unsupported quantization config: bits=.., sym=..", and from_config reads bits, group_size, desc_act
# and sym with get_from_keys (a missing one raises "Cannot find any of ['sym'] ..."). 0.19.0 still had gptq.py, the
# plain kernel of 2, 3, 4 and 8 bits; 0.20-0.23 were not read for it (their records keep 0.19's False)
_23 = dict(_22, gemma4_position_one_hot=False)
_24 = dict(_23, pad_attention_pages=True, gptq_marlin_only=True)
_26 = dict(_24, in_flight_batches=True)
_27 = dict(_26, align_block_check=False, promote_specs_message=True, mla_align_128=True,
           trtllm_mxfp4_intermediate_128=True)
_28 = dict(_27, read="part", batch_tier_160=True, not_modelled=_UNREAD_28)
_29 = dict(_28, null_block_check=True)
_33 = dict(_29, gb10_small_tier=True)

RECORDS: tuple[VllmRelease, ...] = (
    VllmRelease("0.7.0", "the profile run's switches only, from vLLM PRs #30515 (CUDA graph estimate, 0.20), #33538 "
                "(Triton top-k / top-p, taken as 0.16) and gemma4_mm.py 0.22.0; V1 boots of 0.7-0.15",
                **dict(_BEFORE_20, sort_top_k_top_p=True)),
    VllmRelease("0.10.1", _WHEEL.format("0.10.1.1") + _OLD_SRC + " (no Qwen3-Next in its models/registry.py)",
                **_10_1),
    VllmRelease("0.10.2", _WHEEL.format("0.10.2") + _OLD_SRC + " diffed against 0.10.1.1 (kv_cache_utils.py, "
                "kv_cache_interface.py: decode-context-parallel additions only; config/cache.py 0.9 l.42; "
                "arg_utils.py batch defaults unchanged); hybrids: " + _HYB_SRC, **_10),
    VllmRelease("0.11.0", _WHEEL.format("0.11.0") + _OLD_SRC + "; hybrids: " + _HYB_SRC, **_10),
    VllmRelease("0.12.0", _WHEEL.format("0.12.0") + _OLD_SRC + " (group factor 1.25, l.1017); hybrids: " + _HYB_SRC,
                **dict(_12H, head256_align_32="exact")),
    VllmRelease("0.14.1", _WHEEL.format("0.14.1") + _OLD_SRC + " (group factor 1.25, l.1036); hybrids: " + _HYB_SRC
                + ", model_executor/layers/mamba/abstract.py (MambaSpec)", **dict(_12H, head256_align_32="family")),
    VllmRelease("0.16.0", "as 0.7.0, with the Triton top-k / top-p sampler (PR #33538)", **_BEFORE_20),
    VllmRelease("0.19.0", _WHEEL.format("0.19.0") + _OLD_SRC + ", model_executor/models/config.py "
                "(HybridAttentionMambaModelConfig), config/compilation.py", **_19),
    VllmRelease("0.20.0", _WHEEL.format("0.20.0") + _SIZING + "; run: tests/fixtures/vllm/", **_20),
    VllmRelease("0.20.2", _WHEEL.format("0.20.2") + "the sizing files diffed against 0.20.0 (kv_cache_interface.py, "
                "config/cache.py, engine/arg_utils.py, gpu_worker.py, platforms/interface.py unchanged): 0.20.0's "
                "rules, with 0.21's 'GPU KV cache size' = int(max_concurrency * max_model_len) backported "
                "(v1/core/kv_cache_utils.py l.1706; a 0.20.2 public log of Gemma 4 prints 984,297 tokens at 30.04x "
                "of 32,768)", **dict(_20, token_formula="concurrency")),
    VllmRelease("0.21.0", _WHEEL.format("0.21.0") + _SIZING, **_21),
    VllmRelease("0.22.0", _WHEEL.format("0.22.0") + _SIZING + "; run: tests/fixtures/vllm/", **_22),
    VllmRelease("0.23.0", _WHEEL.format("0.23.0") + _SIZING, **_23),
    VllmRelease("0.24.0", _WHEEL.format("0.24.0") + _SIZING + "; run: tests/fixtures/vllm/", **_24),
    VllmRelease("0.25.0", _WHEEL.format("0.25.0") + _SIZING, **_24),
    VllmRelease("0.26.0", _WHEEL.format("0.26.0") + _SIZING + "; run: tests/fixtures/vllm/", **_26),
    VllmRelease("0.27.0", _WHEEL.format("0.27.0") + _SIZING + "; run: tests/fixtures/vllm/", **_27),
    VllmRelease("0.28.0", _WHEEL.format("0.28.0") + "engine/arg_utils.py (get_batch_defaults), the memory check's "
                "messages", **_28),
    VllmRelease("0.29.0", _WHEEL.format("0.29.0") + "v1/core/kv_cache_utils.py (get_kv_cache_configs: the null "
                "block)", **_29),
    VllmRelease("0.33.0", _WHEEL.format("0.33.0") + "v1/core/kv_cache_planning.py (messages, null block), "
                "engine/arg_utils.py (the GB10 tier), config/compilation.py (the Mamba-blocks check)", **_33),
    VllmRelease("0.34.0", _WHEEL.format("0.34.0") + "config/cache.py (resolved_gpu_memory_utilization: unset by "
                "default)", **dict(_33, serve_gpu_memory_utilization=None)),
)
"""Every vLLM record, oldest first: the profile-only ones before 0.20, then the releases read."""

DEFAULT = "0.24.0"
"""The release a plan takes when none is named (said in a note): the most-tested of the fully read releases."""

_FIRST_FULL = min(r.key for r in RECORDS if r.read == "full")

TABLE = ReleaseTable("vLLM", [r for r in RECORDS if r.read != "profile"], flag="--vllm-version", default=DEFAULT,
                     allow_newer="patch")
"""The releases a plan can be priced at (0.10.1 and later; before 0.20 in part, ``refuse_kinds``)."""

PROFILE_TABLE = ReleaseTable("vLLM", RECORDS, flag="vllm_version")
"""Every record, for the profile run of a public boot of any V1 release (0.7 and later)."""


def covered(short: bool = False) -> str:
    """The covered range in words, the one text the engine's header (``short``), its notes and its errors use."""
    full = [r.name for r in TABLE.releases if r.read == "full"]
    old = [r.name for r in TABLE.releases if r.read == "part" and r.key < _FIRST_FULL]
    new = [r.name for r in TABLE.releases if r.read == "part" and r.name not in old]
    text = f"vLLM {full[0]}-{full[-1]} read in full, {new[0]}-{new[-1]} in part"
    if old:
        text += f", {old[0]}-{old[-1]} in part for full and sliding-window attention"
    if short:
        return text
    return (f"{text} (records at {', '.join(r.name for r in TABLE.releases)}; a release between two records takes "
            "the older one's rules)")


def _text(version) -> str:
    if isinstance(version, tuple):
        if not (2 <= len(version) <= 3 and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 10**4
                                               for x in version)):
            raise KvMathError(f"vllm_version must look like 0.24.0 or (0, 24), got {str(version)[:40]}")
        return ".".join(str(x) for x in version)
    if not isinstance(version, str) or not version.isprintable():  # a pasted newline or tab is not a version
        raise KvMathError(f"vllm_version must look like 0.24.0, got {str(version)[:40]!r}")
    return version


@lru_cache(maxsize=256)
def _chosen(text: str):
    public = text.split("+", 1)[0]  # a local build label (0.13.0+faa43dbf.nv26.01) does not change the release
    try:
        key = release_key(public)
    except KvMathError:
        key = ()
    if len(key) != len(TABLE.oldest.key):
        raise KvMathError(f"vllm_version must look like 0.24.0 (a vLLM release), got {text[:40]!r}; {covered()}")
    if key < TABLE.oldest.key:
        raise KvMathError(f"vLLM {text[:40]} is older than the releases these rules were read from; {covered()}")
    return TABLE.choose(public)


def release(version: str | tuple | None = None) -> VllmRelease:
    """The record whose rules apply to ``version`` (``"0.24.0"``, ``"v0.27.1"``, ``(0, 24)``; None: ``DEFAULT``).

    Raises KvMathError for a malformed version or one before 0.20.0 (whose sizing code was not read), naming the
    covered range."""
    return _chosen(_text(DEFAULT if version is None else version).strip()).release


def profile_release(version: str | tuple) -> VllmRelease:
    """The record of any V1 release for the profile run of a public boot (``"0.10.1"``, ``(0, 19)``): before
    0.20 a ``"profile"`` record. Raises KvMathError for a malformed version or one before 0.7 (V1's first releases)."""
    text = _text(version).strip()
    try:
        return PROFILE_TABLE.choose(text).release
    except KvMathError:
        raise KvMathError(f"profile_release must look like 0.19.0 or (0, 19) (vLLM 0.7 or later), got "
                          f"{text[:40]!r}") from None


def notes(version: str | tuple | None) -> list[str]:
    """The notes a plan at ``version`` carries: that its release line (``MAJOR.MINOR``) has no record of its own
    and whose rules it takes, and what its record does not model. Empty for a fully read release (a patch
    release takes its line's record, as the covered range says)."""
    text = _text(DEFAULT if version is None else version).strip()
    chosen = _chosen(text)
    rec = chosen.release
    out = []
    if chosen.note and (release_key(text.split("+", 1)[0])[:2] != rec.key[:2] or "pre-release" in chosen.note):
        out.append(chosen.note)
    if rec.not_modelled:
        out.append(f"vLLM {text[:40]}: {rec.not_modelled}")
    return out
