"""SGLang releases read, as rule switches (``kvmath.engines.releases.Release`` records).

Every record was read from the released wheel (``pip download --no-deps sglang==V``; paths are inside the
wheel, ``python/`` in the repository). A release between two records takes the older record's rules
(``ReleaseTable``); a version newer than 0.5.23 takes 0.5.23's with a note.

Files read per record (``source``):

- the budget ``profile_max_num_token``: ``srt/model_executor/model_runner.py`` (0.4.3-0.5.6),
  ``srt/model_executor/model_runner_kv_cache_mixin.py`` (0.5.9), ``srt/mem_cache/kv_cache_configurator.py``
  ``_profile_available_bytes`` + ``srt/model_executor/pool_configurator.py`` (0.5.23);
- the pools: ``srt/mem_cache/memory_pool.py`` (+ ``swa_memory_pool.py`` 0.5.9), the state shapes
  ``srt/configs/mamba_utils.py`` and ``srt/configs/qwen3_next.py``;
- the defaults: ``srt/server_args.py`` (``_handle_gpu_memory_settings`` from 0.5.4), and
  ``srt/arg_groups/memory_hook.py`` (0.5.23);
- the architectures each release serves: the ``EntryClass`` names in ``srt/models/*.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..releases import Release, ReleaseTable

_DENSE = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Gemma2ForCausalLM", "DeepseekV3ForCausalLM")


@dataclass(frozen=True)
class SglangRelease(Release):
    """One SGLang release's memory rules (each switch names the file it was read in).

    - ``log_tokens``: the MHA / MLA pool line carries ``#tokens: N`` (memory_pool.py: absent in 0.4.3,
      whose line is ``KV Cache is allocated. K size: X GB, V size: Y GB.``);
    - ``log_mla``: the MLA pool logs its line (memory_pool.py ``MLATokenToKVPool``: from 0.4.7; 0.4.3 / 0.4.4
      print nothing for it);
    - ``log_dtype``: the line also names ``dtype: torch.x`` (0.5.23 memory_pool.py l.2088);
    - ``pad_rows``: rows a K / V buffer holds beyond ``#tokens``: ``"one"`` (0.4.3: ``size + 1``) or
      ``"page"`` (0.4.4 on: ``size + page_size``), memory_pool.py ``_create_buffers``;
    - ``page_floor``: ``max_total_num_tokens`` floored to a multiple of ``page_size`` (0.4.4 on; 0.4.3 has no
      page size);
    - ``v_head_dim_cell``: the MHA cell is ``kv_heads * (head_dim + v_head_dim)`` (0.5.9 mixin
      ``get_cell_size_per_token``) instead of ``kv_heads * head_dim * 2``;
    - ``req_pool_plus_one``: ``ReqToTokenPool(size=max_num_reqs + 1)`` (0.4.3-0.4.6), so the scheduler line
      reports 2049 running requests;
    - ``mfs_rule``: the default ``--mem-fraction-static``: ``"tp"`` (0.4.3 server_args.py l.195),
      ``"tp_big_gpu"`` (0.4.7 l.253: the TP table up to 80 GiB, 0.88 above, 0.79 above 180,000 MiB,
      ``min(f + 48 GiB (1 - f) / G, (G - 18 GiB) / G)`` above 96 GiB), ``"gpu_table"`` (0.4.8.post1 l.275),
      ``"reserve"`` (0.5.4.post1 / 0.5.9 ``_handle_gpu_memory_settings``) or ``"reserve_graphs"`` (0.5.23
      arg_groups/memory_hook.py ``handle_gpu_memory_settings`` l.47-343 + ``reserve_for_graph_mb`` l.357-399:
      the decode graph only when captured, attention-DP terms from ``attn_dp_size``, and the prefill graph's
      reserve, ``len(capture list) x 8 MiB`` or 1.5 GiB for MLA, unless the backend that
      ``handle_cuda_graph_config`` leaves is DISABLED; ``settings.graph_reserve`` cites each line and
      refuses what it cannot read); ``"given"`` (the flag required) is kept for a record whose default was
      not read;
    - ``graph_table``: the ``chunked_prefill_size`` / ``cuda_graph_max_bs`` defaults by GPU memory
      (``"0.4.3"``, ``"0.4.8"``, ``"0.5.4"``, ``"0.5.23"``);
    - ``fp8_checkpoint_kv``: ``--kv-cache-dtype auto`` takes fp8_e4m3 from a checkpoint whose
      ``quantization_config`` says ``kv_cache_quant_algo: FP8`` (0.5.4 on);
    - ``kv_dtypes``: ``--kv-cache-dtype`` choices (server_args.py);
    - ``swa_pool``: hybrid SWA sizing: ``""`` none, ``"token"`` (0.4.10-0.5.6: full and SWA token counts from
      a full-geometry cell), ``"memory"`` (0.5.9 on: ``set_num_tokens_hybrid_swa``);
    - ``swa_archs``: ``is_hybrid_swa_model`` (configs/model_config.py);
    - ``gdn_archs`` / ``mamba2_archs``: ``hybrid_gdn_config`` / ``mamba2_config`` (model_runner.py);
    - ``ssm_dtype_from_config``: the SSM state dtype is the config's ``mamba_ssm_dtype`` (0.5.9
      mamba_utils.py ``mamba2_state_dtype``) instead of ``--mamba-ssm-dtype`` (default float32, 0.5.4-0.5.6);
    - ``mamba_size_rule``: how ``handle_max_mamba_cache`` picks the state pool's size: ``"ratio_first"``
      (0.5.4.post1 model_runner.py l.1285 / 0.5.6 l.1450: the memory ratio whenever the radix cache is on, an
      explicit ``--max-mamba-cache-size`` overwritten; radix cache off: the flag, else
      ``--max-running-requests``, else 512) or ``"explicit_first"`` (0.5.9 mixin: the flag, else
      ``--max-running-requests`` with the radix cache off, else the ratio);
    - ``refusal``: ``"plain"`` ("Not enough memory. Please try to increase --mem-fraction-static.", 0.4.x),
      ``"current"`` (0.5.4-0.5.9 add "Current value: self.server_args.mem_fraction_static=F", the f-string's
      ``=`` form) or ``"minimum"`` (0.5.23 kv_cache_configurator.py l.3043: names the minimum fraction);
    - ``reqs_cap_half``: ``max_num_reqs`` capped at ``max_total_num_tokens // 2`` (0.5.23);
    - ``mm_reserve_mib``: the multimodal reservation subtracted from the pool budget (0.5.23
      ``mm_runtime_reservation_gb``: ``SGLANG_VLM_CACHE_SIZE_MB`` = 100);
    - ``archs``: the architectures the release serves among kvmath's known models.
    """

    log_tokens: bool = True
    log_mla: bool = True
    log_dtype: bool = False
    pad_rows: str = "page"
    page_floor: bool = True
    v_head_dim_cell: bool = False
    req_pool_plus_one: bool = False
    mfs_rule: str = "gpu_table"
    graph_table: str = "0.4.8"
    fp8_checkpoint_kv: bool = False
    kv_dtypes: tuple[str, ...] = ("auto", "fp8_e5m2", "fp8_e4m3")
    swa_pool: str = ""
    swa_archs: tuple[str, ...] = ()
    gdn_archs: tuple[str, ...] = ()
    mamba2_archs: tuple[str, ...] = ()
    ssm_dtype_from_config: bool = False
    mamba_size_rule: str = "explicit_first"
    refusal: str = "plain"
    reqs_cap_half: bool = False
    mm_reserve_mib: int = 0
    archs: tuple[str, ...] = _DENSE


_Q3 = ("Qwen3ForCausalLM",)
_045 = _DENSE + _Q3 + ("Qwen3NextForCausalLM", "NemotronHForCausalLM", "GptOssForCausalLM")
_GDN_059 = ("Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")

SGLANG_RELEASES = (
    SglangRelease(
        "0.4.3", "sglang 0.4.3 wheel: srt/model_executor/model_runner.py profile_max_num_token l.547, "
        "srt/mem_cache/memory_pool.py MHATokenToKVPool l.170-195, srt/server_args.py l.195-220",
        log_tokens=False, log_mla=False, pad_rows="one", page_floor=False, req_pool_plus_one=True, mfs_rule="tp",
        graph_table="0.4.3"),
    SglangRelease(
        "0.4.3.post4", "sglang 0.4.3.post4 wheel: srt/mem_cache/memory_pool.py l.211 (#tokens in the line; "
        "size + 1 rows as 0.4.3), model_runner.py l.711 (ReqToTokenPool size=max_num_reqs + 1), server_args.py "
        "l.205-214 (mem_fraction_static by TP)",
        log_mla=False, pad_rows="one", page_floor=False, req_pool_plus_one=True, mfs_rule="tp", graph_table="0.4.3"),
    SglangRelease(
        "0.4.4", "sglang 0.4.4 wheel: memory_pool.py l.219-236 (#tokens in the line, size + page_size rows), "
        "model_runner.py l.612 and l.721 (ReqToTokenPool size=max_num_reqs + 1)",
        log_mla=False, req_pool_plus_one=True, mfs_rule="tp", graph_table="0.4.3"),
    SglangRelease(
        "0.4.7", "sglang 0.4.7 wheel: model_runner.py l.926 (ReqToTokenPool size=max_num_reqs), "
        "server_args.py l.253-283 (mem_fraction_static by TP, then by GPU memory above 96 GiB)",
        mfs_rule="tp_big_gpu", graph_table="0.4.3", archs=_DENSE + _Q3),
    SglangRelease(
        "0.4.8.post1", "sglang 0.4.8.post1 wheel: server_args.py l.275-330 (mem_fraction_static from the "
        "GPU-memory reserve table), model_runner.py profile_max_num_token l.818",
        archs=_DENSE + _Q3),
    SglangRelease(
        "0.4.10", "sglang 0.4.10 wheel: model_runner.py l.282-290 (every model whose class defines "
        "get_attention_sliding_window_size, Llama 4 aside, gets the hybrid SWA pool: here Gemma 2, models/gemma2.py "
        "l.469) and l.1015-1065 (the token split, swa_full_tokens_ratio 0.8), memory_pool.py l.227",
        swa_pool="token", swa_archs=("Gemma2ForCausalLM",), archs=_DENSE + _Q3),
    SglangRelease(
        "0.5.4.post1", "sglang 0.5.4.post1 wheel: model_runner.py profile_max_num_token l.1235 "
        "(full-attention layers only for hybrid models, handle_max_mamba_cache), server_args.py "
        "_handle_gpu_memory_settings (reserve = 512 + 1.5 chunk + 2 bs + 1024 tp pp / 8), "
        "configs/mamba_utils.py (SGLANG_MAMBA_SSM_DTYPE from --mamba-ssm-dtype float32), memory_pool.py l.212 / l.453; "
        "model_runner.py l.388-394 + server_args.py l.946-981 (hybrid SWA for models with a sliding window, Gemma 2/3 "
        "and Olmo 2 turned off: gpt-oss)",
        mfs_rule="reserve", graph_table="0.5.4", fp8_checkpoint_kv=True,
        kv_dtypes=("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"), swa_pool="token",
        refusal="current", swa_archs=("GptOssForCausalLM",),
        gdn_archs=("Qwen3NextForCausalLM",), mamba2_archs=("NemotronHForCausalLM", "FalconH1ForCausalLM"),
        mamba_size_rule="ratio_first", archs=_045),
    SglangRelease(
        "0.5.6", "sglang 0.5.6 wheel: model_runner.py l.1500-1520 (hybrid_gdn_config, mamba2_config, "
        "kimi_linear_config), server_args.py --kv-cache-dtype choices with fp4_e2m1, memory_pool.py l.1206",
        mfs_rule="reserve", graph_table="0.5.4", fp8_checkpoint_kv=True,
        kv_dtypes=("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"), swa_pool="token",
        refusal="current", swa_archs=("GptOssForCausalLM",),
        gdn_archs=("Qwen3NextForCausalLM",), mamba2_archs=("NemotronHForCausalLM", "FalconH1ForCausalLM"),
        mamba_size_rule="ratio_first", archs=_045 + ("KimiLinearForCausalLM",)),
    SglangRelease(
        "0.5.9", "sglang 0.5.9 wheel: model_executor/model_runner_kv_cache_mixin.py get_cell_size_per_token "
        "(head_dim + v_head_dim), profile_max_num_token, handle_max_mamba_cache, set_num_tokens_hybrid_swa "
        "(memory-based), init_memory_pool; configs/mamba_utils.py mamba2_state_dtype (config mamba_ssm_dtype); "
        "server_args.py l.911-1070; mem_cache/swa_memory_pool.py l.89",
        v_head_dim_cell=True, mfs_rule="reserve", graph_table="0.5.4", fp8_checkpoint_kv=True,
        kv_dtypes=("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"), swa_pool="memory",
        refusal="current", swa_archs=("Llama4ForConditionalGeneration", "GptOssForCausalLM", "MiMoV2FlashForCausalLM",
                   "Step3p5ForCausalLM"),
        gdn_archs=_GDN_059, mamba2_archs=("NemotronHForCausalLM", "FalconH1ForCausalLM"),
        ssm_dtype_from_config=True, archs=_045 + ("KimiLinearForCausalLM",) + _GDN_059[1:]),
    SglangRelease(
        "0.5.23", "sglang 0.5.23 wheel: mem_cache/kv_cache_configurator.py _profile_available_bytes l.2990-3060 "
        "(the minimum-fraction refusal), model_executor/pool_configurator.py l.96, mem_cache/memory_pool.py "
        "l.2088 (dtype in the pool line), arg_groups/memory_hook.py handle_gpu_memory_settings l.47-343 and "
        "reserve_for_graph_mb l.357-399, arg_groups/pipeline.py l.185-218 (the hooks before it), "
        "arg_groups/cuda_graph_hook.py l.32-255 and l.480-497, model_executor/cuda_graph_config.py l.119-155",
        log_dtype=True, v_head_dim_cell=True, mfs_rule="reserve_graphs", graph_table="0.5.23", fp8_checkpoint_kv=True,
        kv_dtypes=("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"), swa_pool="memory",
        swa_archs=("Llama4ForConditionalGeneration", "GptOssForCausalLM", "MiMoV2FlashForCausalLM",
                   "Step3p5ForCausalLM"),
        gdn_archs=_GDN_059, mamba2_archs=("NemotronHForCausalLM", "FalconH1ForCausalLM"),
        ssm_dtype_from_config=True, refusal="minimum", reqs_cap_half=True, mm_reserve_mib=100,
        archs=_045 + ("KimiLinearForCausalLM",) + _GDN_059[1:]),
)

TABLE = ReleaseTable("SGLang", SGLANG_RELEASES, flag="--sglang-version", allow_newer=False)
DEFAULT_SGLANG_VERSION = TABLE.default.name
