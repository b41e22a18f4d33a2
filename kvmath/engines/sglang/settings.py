"""SGLang's settings (its ``ServerArgs`` names) and the defaults each release derives from the GPU memory.

``default_mem_fraction`` / ``graph_defaults`` follow the release's ``mfs_rule`` / ``graph_table``
(:mod:`kvmath.engines.sglang.releases` cites the lines). ``G`` is the GPU memory in MiB as
``get_nvgpu_memory_capacity`` reads it (``nvidia-smi --query-gpu=memory.total``, the smallest card).
0.5.23's default (:func:`graph_reserve`) also reads the model class and the ``--model-path`` string; it is
checked against the wheel's own resolution code in tests/test_sglang_defaults.py.
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


ATTENTION_BACKENDS = (
    "aiter", "ascend", "compressed", "cutedsl_mla", "cutlass_mla", "dsa", "dsv4", "dual_chunk_flash_attn", "fa3", "fa4",
    "flashinfer", "flashmla", "flex_attention", "hpc_ops", "intel_amx", "intel_xpu", "llada2_cfg_flashinfer",
    "minicpm_flashattn", "minicpm_flashinfer", "nsa", "qsa", "tokenspeed_mla", "torch_native", "triton", "trtllm_mha",
    "trtllm_mla", "wave")
"""``--attention-backend`` (and ``--prefill-`` / ``--decode-attention-backend``) choices over the releases kvmath
reads: ``ATTENTION_BACKEND_CHOICES`` of sglang/srt/arg_groups/choices.py (0.5.23) and the ``choices`` of
server_args.py (0.4.3-0.5.9), joined. SGLang's argparse refuses any other name."""


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
        if self.swa_full_tokens_ratio > 1:
            # SGLang 0.5.9 server_args.py and 0.5.23 arg_groups/kv_cache_hook.py: "--swa-full-tokens-ratio should be
            # in range (0, 1.0]"; 0.4.3-0.5.6 do not check it. --mamba-full-memory-ratio has no bound in 0.5.23
            # (kv_cache_configurator.py divides by 1 + ratio), so 1.5 stays accepted
            from .releases import TABLE

            if TABLE.choose(self.sglang_version).release.key >= TABLE.by_name["0.5.9"].key:
                raise KvMathError(f"--swa-full-tokens-ratio should be in range (0, 1.0] (SGLang 0.5.9 and later refuse "
                                  f"it at start-up), got {self.swa_full_tokens_ratio}")
        if self.enable_dp_attention and self.tp_size % self.dp_size:
            raise KvMathError(f"--dp-size {self.dp_size} must divide --tp-size {self.tp_size} with --enable-dp-attention")
        if self.attention_backend is not None and self.attention_backend not in ATTENTION_BACKENDS:
            raise KvMathError(f"--attention-backend {str(self.attention_backend)[:40]!r} is not an SGLang backend; "
                              f"valid: {', '.join(ATTENTION_BACKENDS)}")
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
    ``+ 3 bs dp`` (``+ 1.5 bs dp`` above 300), at least 10 GiB above 60 GiB. 0.5.23's reserve is
    :func:`graph_reserve`'s."""
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


# --- 0.5.23: arg_groups/memory_hook.py handle_gpu_memory_settings ----------------------------------------------
# Every line number below is of the sglang 0.5.23 wheel (paths inside it, under sglang/srt/).
#
# Order (arg_groups/pipeline.py run_resolution_pipeline, the one caller: server_args.py l.244-277 resolve_once,
# run once per record): handle_deprecated_dp_attention l.45 (``--dp-size N --enable-dp-attention`` becomes
# ``attn_dp_size N``), handle_expert_pack l.139, handle_pd_disaggregation l.147, handle_dwdp l.189,
# handle_cuda_graph_config l.191 (parse_cuda_graph_config + apply_cuda_graph_compatibility: the prefill graph
# backend's default and its auto-disable rules), the platform hooks l.205-214, then handle_gpu_memory_settings
# l.218, which computes and declares mem_fraction_static. The hooks that set the prefill backend DISABLED later
# (handle_model_specific_adjustments l.225, handle_attention_backend_compatibility l.242,
# disable_prefill_cuda_graph_for_deepseek_trtllm_mla l.245, handle_multi_item_scoring l.263,
# handle_context_parallelism / cp_tp_group_sharing_hook l.278, handle_kv_cache_sharding l.284, handle_a2a_moe
# l.295, handle_unified_memory_pool l.338, handle_dllm_inference l.342, handle_other_validations l.349,
# handle_model_capability_adjustments l.352) run after the fraction is declared and do not recompute it: the
# default keeps the prefill reserve even when a later hook drops the graph. Only two later hooks rewrite the
# fraction: attention_hook.py l.244-269 (x 0.85 for attention_backend aiter with context_len > 8192, a ROCm
# backend; refused below) and kv_shard_hook.py l.295-317 (--enable-kv-cache-sharding, a flag kvmath does not
# parse).

MLA_ARCHS_0523 = (
    "DeepseekV2ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV3ForCausalLMNextN",
    "Glm4MoeLiteForCausalLM", "Glm4MoeLiteForCausalLMNextN", "GlmMoeDsaForCausalLM", "GlmMoeDsaForCausalLMNextN",
    "Glm5NextForConditionalGeneration", "Glm5NextForConditionalGenerationNextN", "LongcatFlashForCausalLM",
    "LongcatFlashForCausalLMNextN", "HYV4ForCausalLM", "HYV4ForCausalLMNextN", "DotsVLMForCausalLM",
    "Dots3NoteForCausalLM", "Dots3NoteForCausalLMNextN", "MistralLarge3ForCausalLM", "MistralLarge3ForCausalLMEagle",
    "KimiK25ForConditionalGeneration", "Eagle3DeepseekV2ForCausalLM", "GigaChat35ForCausalLM",
    "GigaChat35ForCausalLMNextN", "KimiLinearForCausalLM", "KimiK3LinearForCausalLM", "KimiK3ForConditionalGeneration")
"""configs/model_config.py l.1367-1397 and l.1463-1470: ``attention_arch = AttentionArch.MLA``, which
``use_mla_backend`` (arg_groups/model_override_base.py l.185-189) reads."""

MM_ARCHS_0523 = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")
"""The classes kvmath's 0.5.23 record serves that configs/model_config.py ``multimodal_model_archs`` lists (l.2439-
2440), so ``is_multimodal`` (l.820-828: ``enable_multimodal`` defaults on for them, l.690-717). Both are also in
``multimodal_breakable_cuda_graph_supported_model_archs`` (l.2507-2508): their prefill graph stays breakable."""

MM_BCG_ARCHS_0523 = MM_ARCHS_0523
_MM_SUBCONFIGS = ("vision_config", "text_config", "llm_config", "language_config", "thinker_config", "audio_config")


def prefill_capture_sizes(max_bs: int) -> list[int]:
    """arg_groups/cuda_graph_hook.py l.480-497 ``generate_prefill_cuda_graph_batch_sizes``: the prefill graph's
    token buckets up to ``max_bs``."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1024 + 1, 64)) + list(range(1280, 4096 + 1, 256)) + list(range(4608, max_bs + 1, 512)))
    return [x for x in sizes if x <= max_bs]


def uses_kda_attention(config: dict) -> bool:
    """configs/model_config.py l.230-251: a ``linear_attn_config`` with ``kda_layers``, or ``linear_attention``
    in ``layer_types`` with ``linear_num_heads`` and ``linear_head_dim``, on the config or its text config."""
    for c in (config, config.get("text_config")):
        if not isinstance(c, dict):
            continue
        lac = c.get("linear_attn_config")
        if isinstance(lac, dict) and lac.get("kda_layers"):
            return True
        if ("linear_attention" in (c.get("layer_types") or []) and c.get("linear_num_heads") is not None
                and c.get("linear_head_dim") is not None):
            return True
    return False


@dataclass(frozen=True)
class GraphReserve:
    """What 0.5.23's ``handle_gpu_memory_settings`` derives for one launch (MiB; see ``graph_reserve``)."""

    chunk: int
    decode_max_bs: int
    decode_graph: bool
    prefill_backend: str
    prefill_max_bs: int
    prefill_sizes: int
    mla: bool
    multimodal: bool
    activation_mib: float
    decode_mib: float
    dp_attention_mib: float
    prefill_mib: float
    reserve_mib: float
    vlm_factor: float
    fraction: float
    prefill_why: str = ""

    def describe(self) -> str:
        prefill = (f"prefill graph {self.prefill_mib:.0f} MiB ("
                   + ("MLA: 1.5 GiB" if self.mla else f"{self.prefill_sizes} capture sizes up to "
                      f"{self.prefill_max_bs} x 8 MiB") + ")") if self.prefill_backend != "disabled" else \
            f"no prefill graph ({self.prefill_why})"
        text = (f"reserve {self.reserve_mib:.0f} MiB = 512 + 1.5 x {max(self.chunk, 2048)} activation tokens "
                f"+ tp/8 x 1024 + decode graph {self.decode_mib:.0f} MiB (max_bs {self.decode_max_bs})"
                + (f" + DP attention {self.dp_attention_mib:.0f} MiB" if self.dp_attention_mib else "")
                + f" + {prefill}, at least 10 GiB above 60 GiB")
        if self.vlm_factor != 1:
            text += f"; x {self.vlm_factor:.4f} for the vision tower (adjust_mem_fraction_for_vlm)"
        return text


def graph_reserve(rel: SglangRelease, s: SglangSettings, gpu_mib: float | None, config: dict | None,
                  model_path: str | None) -> GraphReserve:
    """SGLang 0.5.23's default ``mem_fraction_static`` and the reserve behind it, from
    arg_groups/memory_hook.py ``handle_gpu_memory_settings`` (l.47-343) and ``reserve_for_graph_mb`` (l.357-399).

    ``config`` is the model's config.json, ``model_path`` the ``--model-path`` string SGLang sees. Raises
    KvMathError (naming what to give) where the default depends on something kvmath does not read."""
    G, tp = gpu_mib, s.tp_size
    if not config or not isinstance(config.get("architectures"), list):
        raise KvMathError(f"SGLang {rel.name}'s default --mem-fraction-static depends on the model class (MLA, "
                          "multimodal, KDA), which this model has no config.json for; give --mem-fraction-static")
    if model_path is None:
        raise KvMathError(f"SGLang {rel.name}'s default --mem-fraction-static reads the --model-path string "
                          "(memory_hook.py l.260: 'llama-2' caps the prefill capture at 4096); give "
                          "--mem-fraction-static")
    if s.attention_backend == "aiter":
        raise KvMathError(f"SGLang {rel.name} scales the default --mem-fraction-static by 0.85 for the aiter "
                          "backend (attention_hook.py l.244-269, ROCm), which kvmath does not price; give "
                          "--mem-fraction-static")
    archs = [str(a) for a in config["architectures"]]
    # multimodal: configs/model_config.py l.820-828 (is_multimodal), l.674 (language_model_only in the config)
    lm_only = bool(config.get("language_model_only"))
    multimodal = any(a in MM_ARCHS_0523 for a in archs) and not lm_only
    if not lm_only and not multimodal and any(k in config for k in _MM_SUBCONFIGS):
        raise KvMathError(f"SGLang {rel.name}: whether {archs[0]} is served as a multimodal model (is_multimodal: "
                          "its prefill CUDA graph and the vision-tower factor of the default fraction) was not "
                          "read; give --mem-fraction-static")
    mla = any(a in MLA_ARCHS_0523 for a in archs)

    # memory_hook.py l.89-180: chunked_prefill_size and the decode graph's max_bs by GPU memory (graph_defaults)
    chunk0, bs0 = graph_defaults(rel, G, tp)
    chunk = s.chunked_prefill_size or chunk0
    if s.cuda_graph_max_bs is not None:  # an explicit decode max_bs (cuda_graph_max_bs_decode): kept as given
        bs = s.cuda_graph_max_bs
    else:
        bs = bs0
        if s.max_running_requests is not None and bs > s.max_running_requests:  # l.182-188
            bs = s.max_running_requests
        # l.190-196 expand_multimodal_decode_graph_to_running_limit (model_overrides/qwen3_vl.py l.34-62): only
        # for model_type qwen3_vl / qwen3_vl_moe served as multimodal on sm90 with >= 60 GiB
        mt = str(config.get("model_type", ""))
        if (mt in ("qwen3_vl", "qwen3_vl_moe") and s.max_running_requests is not None
                and s.max_running_requests <= 512 and bs < s.max_running_requests):
            raise KvMathError(f"SGLang {rel.name} raises the decode CUDA-graph max_bs of Qwen3-VL on large Hopper "
                              "cards to --max-running-requests (model_overrides/qwen3_vl.py l.34-62), which kvmath "
                              "has not modelled; give --mem-fraction-static")

    # the graph backends as handle_cuda_graph_config (pipeline.py l.191) leaves them: decode FULL, prefill
    # default_prefill_backend() = BREAKABLE on CUDA (model_executor/cuda_graph_config.py l.119-123, l.150-155)
    decode_graph, prefill, why = True, "breakable", ""
    if s.disable_cuda_graph:  # cuda_graph_hook.py l.55-57: both phases DISABLED
        decode_graph, prefill, why = False, "disabled", "--disable-cuda-graph"
    else:
        # cuda_graph_hook.py l.170-255 disable_breakable_cudagraph_if_incompatible (pp > 1 l.150, DeepSeek-V4,
        # attn_cp / dcp > 1, two-batch overlap and a2a backends are flags kvmath refuses or models it does not serve)
        if uses_kda_attention(config) and "Glm5NextForConditionalGeneration" not in archs:
            prefill, why = "disabled", "KDA hybrid linear attention (cuda_graph_hook.py l.184-192)"
        elif multimodal and not any(a in MM_BCG_ARCHS_0523 for a in archs):
            prefill, why = "disabled", "multimodal model (cuda_graph_hook.py l.230-238)"

    # l.233-268: the prefill graph's max_bs and capture list
    pmax = chunk if not mla else min(8192, chunk)
    if s.max_total_tokens is not None:
        pmax = min(pmax, s.max_total_tokens)
    if "llama-2" in model_path.lower():
        pmax = min(pmax, 4096)
    sizes = prefill_capture_sizes(pmax)

    # l.297-317: activation tokens (chunked prefill on: max(chunk, 2048)), the parallel slack, the graphs
    act = 512 + max(chunk, 2048) * 1.5 + tp * 1 / 8 * 1024  # pp_size 1 (--pp-size is refused)
    decode_mib = bs * 2 if decode_graph else 0  # reserve_for_graph_mb l.364-368
    attn_dp = s.dp_size if s.enable_dp_attention else 1  # parallel_hook.py l.39-61 -> attn_dp_size
    dp_mib = 0.0
    if attn_dp > 1:  # runtime_context.py l.191-199 attn_dp_enabled_of; reserve_for_graph_mb l.370-378
        dp_mib = bs * attn_dp * 3 + (bs * attn_dp * 1.5 if bs > 300 else 0)
    prefill_mib = 0.0
    if prefill != "disabled":  # l.380-389 (the DeepEP term l.391-397: --moe-a2a-backend is refused)
        prefill_mib = 1.5 * 1024 if mla else len(sizes) * 8
    r = act + decode_mib + dp_mib + prefill_mib
    if G is not None and G > 60 * 1024:
        r = max(r, 10 * 1024)  # l.314-315
    f = round((G - r) / G, 3) if G is not None else 0.95  # l.324-328
    factor = 1.0
    vision = config.get("vision_config")
    if multimodal and isinstance(vision, dict):  # l.331-337, adjust_mem_fraction_for_vlm l.417-462
        layers = vision.get("num_hidden_layers", 24)  # Qwen3VLVisionConfig has no num_hidden_layers (depth)
        hidden = vision.get("hidden_size", 1152)  # configs/qwen3_vl.py l.11: the class default when absent
        ratio = layers * hidden ** 2 / (24 * 1024 ** 2)
        factor = 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
        f = f * factor
    return GraphReserve(chunk, bs, decode_graph, prefill, pmax, len(sizes), mla, multimodal, act, decode_mib, dp_mib,
                        prefill_mib, r, factor, f, why)


def default_mem_fraction(rel: SglangRelease, s: SglangSettings, gpu_mib: float | None, chunk: int, bs: int,
                         vision: dict | None = None, *, config: dict | None = None,
                         model_path: str | None = None) -> float:
    """SGLang's ``mem_fraction_static`` when ``--mem-fraction-static`` is not given (see ``mfs_rule``).

    ``vision`` is the config's ``vision_config`` (0.5.4-0.5.9: ``adjust_mem_fraction_for_vlm``). 0.5.23
    (``"reserve_graphs"``) reads the whole ``config`` and the ``model_path`` instead (:func:`graph_reserve`) and
    ignores ``chunk`` / ``bs``; it raises KvMathError where the default depends on what kvmath does not read."""
    G, tp = gpu_mib, s.tp_size
    if rel.mfs_rule == "reserve_graphs":
        return graph_reserve(rel, s, G, config, model_path).fraction
    if rel.mfs_rule == "given":
        raise KvMathError(f"SGLang {rel.name}'s default --mem-fraction-static is not modelled; give "
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
