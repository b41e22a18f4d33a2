"""vLLM rules added for issue #10, each against vLLM's own code (lines quoted from the released wheels,
PyPI ``vllm`` 0.20.0-0.33.0) or against the fixtures real vLLM produced (tests/fixtures/vllm/).

Nothing here is checked against kvmath's own arithmetic: the expected strings and numbers are vLLM's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kvmath
from kvmath.engines.vllm.alloc import plan
from kvmath.engines.vllm.settings import READ_VERSIONS

FIXTURES = Path(__file__).parent / "fixtures" / "vllm"
GIB = 2**30


# ---------------------------------------------------------------------------------------------------
# refusal messages word for word: every refusal real vLLM raised in the fixtures, compared whole


def _refusals():
    out = []
    for path in sorted(FIXTURES.glob("vllm-*.json")):
        data = json.loads(path.read_text())
        for c in data["cases"]:
            for r in c.get("results", []):
                if not r["boots"]:
                    out.append(pytest.param(data["vllm_version"], c["case"], r,
                                            id=f"{data['vllm_version']}-{c['case']['name']}-{r['available_kv_bytes']}"))
    return out


@pytest.mark.parametrize("version,case,real", _refusals())
def test_refusal_message_is_vllms_whole_message(version, case, real):
    """The whole ValueError / AssertionError text real vLLM raised (its closing "See https://docs.vllm.ai/...
    for more details." included), not a prefix."""
    p = plan(case["model"], real["available_kv_bytes"], tensor_parallel_size=case["tp"],
             kv_cache_dtype=case["kv_cache_dtype"], max_model_len=case["max_model_len"],
             max_num_batched_tokens=case["max_num_batched_tokens"],
             num_speculative_tokens=case.get("num_speculative_tokens", 0),
             enable_prefix_caching=case.get("prefix_caching", True),
             disable_hybrid_kv_cache_manager=case.get("disable_hybrid", False), vllm_version=version,
             enforce_eager=True)
    assert not p.boots
    assert p.refusal == real["error"].split(": ", 1)[1]


def test_fixture_versions_cover_read_versions_with_fixtures():
    versions = {json.loads(p.read_text())["vllm_version"] for p in FIXTURES.glob("vllm-*.json")}
    assert {"0.20.0", "0.22.0", "0.24.0", "0.26.0", "0.27.0"} <= versions <= set(READ_VERSIONS)


def test_closing_sentences_from_the_source():
    """kv_cache_utils.py 0.20.0 l.697-700 / l.719-722 and 0.22.0 l.699-704 / l.723-727 (the same text in
    kv_cache_planning.py 0.33.0 l.57-64 / l.82-86):

        0.20.0: "Try increasing `gpu_memory_utilization` when initializing the engine. "
                "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
        0.22.0: "Try increasing `gpu_memory_utilization` when initializing the engine "
                "(this flag also controls CPU memory reservation on the CPU backend, despite its name). "
                "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    """
    docs = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    old = plan("gemma-4-31b", 0, max_model_len=8192, vllm_version="0.20.0")
    assert old.refusal == ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                           "when initializing the engine. " + docs)
    for v in ("0.22.0", "0.33.0"):
        new = plan("gemma-4-31b", 0, max_model_len=8192, vllm_version=v)
        assert new.refusal == (
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
            "the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). "
            + docs)
    short = plan("gemma-4-31b", GIB, max_model_len=131072, tensor_parallel_size=2, vllm_version="0.21.0")
    assert short.refusal.startswith("To serve at least one request with the models's max seq len (131072)")
    assert short.refusal.endswith("Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                                  "initializing the engine. " + docs)
    short = plan("gemma-4-31b", GIB, max_model_len=131072, tensor_parallel_size=2, vllm_version="0.33.0")
    assert short.refusal.endswith("Try increasing `gpu_memory_utilization` (which also controls CPU memory on "
                                  "the CPU backend) or decreasing `max_model_len` when initializing the engine. "
                                  + docs)


# ---------------------------------------------------------------------------------------------------
# max_num_seqs above the Mamba cache blocks (config/compilation.py, every release 0.20.0-0.33.0)
#
#     if (
#         kv_cache_config is not None
#         and max_num_reqs is not None
#         and cudagraph_mode.has_full_cudagraphs()
#         and not is_profiling
#         and kv_cache_config.has_mamba_layers
#         and max_num_reqs > kv_cache_config.num_blocks
#     ):
#         raise ValueError(
#             f"max_num_seqs ({max_num_reqs}) exceeds available Mamba cache "
#             f"blocks ({kv_cache_config.num_blocks}). Each decode sequence "
#             "requires one Mamba cache block, so CUDA graph capture cannot "
#             "proceed. Please lower max_num_seqs to at most "
#             f"{kv_cache_config.num_blocks} or increase "
#             "gpu_memory_utilization."
#         )
#
# (0.20.0 l.1420-1443 ... 0.33.0 l.1510-1533; max_num_reqs = scheduler_config.max_num_seqs,
# v1/worker/gpu_model_runner.py 0.24.0 l.470; has_mamba_layers: any group spec is a MambaSpec,
# kv_cache_interface.py 0.24.0 l.899-900.)

Q27 = dict(tensor_parallel_size=2, kv_cache_dtype="int8_per_token_head", max_model_len=262144,
           max_num_batched_tokens=8192, num_speculative_tokens=4)
F01_AVAIL = 11918534246  # the 0.24.0 / 0.26.0 fixture "qwen27b-tp2-int8pth-mtp4": real vLLM made 425 blocks


def _mamba_message(seqs, blocks):
    return (f"max_num_seqs ({seqs}) exceeds available Mamba cache blocks ({blocks}). Each decode sequence "
            "requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs "
            f"to at most {blocks} or increase gpu_memory_utilization.")


@pytest.mark.parametrize("version", ["0.20.0", "0.24.0", "0.26.0", "0.27.0", "0.33.0"])
def test_max_num_seqs_above_mamba_blocks_is_refused(version):
    ok = plan("qwen3.6-27b", F01_AVAIL, max_num_seqs=425, vllm_version=version, **Q27)
    assert ok.boots and ok.num_blocks == 425
    over = plan("qwen3.6-27b", F01_AVAIL, max_num_seqs=426, vllm_version=version, **Q27)
    assert not over.boots and over.refusal_stage == "mamba_blocks"
    assert over.refusal == _mamba_message(426, 425)
    # the capacity lines are logged by the engine core before the worker's CUDA-graph check raises
    assert [line for line in over.log_lines if not line.startswith("WARNING")][-1] == f"ERROR {over.refusal}"
    assert any(line.startswith("GPU KV cache size") for line in over.log_lines)


def test_vllm_serve_default_256_is_refused_on_a_small_pool():
    """vLLM's default max_num_seqs (256 below 70 GiB) against a 62-block pool (fixture 0.24.0
    "qwen27b-tp1-bf16-nomtp-32k": 3 GiB, real vLLM made 62 blocks)."""
    p = plan("qwen3.6-27b", 3 * GIB, max_model_len=32768, max_num_batched_tokens=2048, max_num_seqs=256)
    assert p.refusal == _mamba_message(256, 62)


def test_no_mamba_check_without_full_cudagraphs_or_mamba_layers():
    # --enforce-eager: cudagraph_mode NONE returns before the check (compilation.py 0.24.0 l.1329-1331)
    assert plan("qwen3.6-27b", F01_AVAIL, max_num_seqs=1024, enforce_eager=True, **Q27).boots
    # no MambaSpec group: Gemma 4 boots whatever max_num_seqs is and queues what does not fit
    g = plan("gemma-4-31b", 10 * GIB, tensor_parallel_size=2, max_model_len=131072, max_num_batched_tokens=4096,
             max_num_seqs=4096, num_gpu_blocks_override=1000)
    assert g.boots and g.num_blocks == 1000  # 4096 sequences scheduled over 1,000 blocks: no refusal


# ---------------------------------------------------------------------------------------------------
# vllm serve's batch defaults by card and version (EngineArgs.get_batch_defaults, engine/arg_utils.py)
#
# 0.24.0 l.2404-2423 (the same 0.20.0-0.27.0):
#     if device_memory >= 70 * GiB_bytes and "a100" not in device_name:
#         default_max_num_batched_tokens = {UsageContext.LLM_CLASS: 16384, UsageContext.OPENAI_API_SERVER: 8192}
#         default_max_num_seqs = {UsageContext.LLM_CLASS: 1024, UsageContext.OPENAI_API_SERVER: 1024}
#     else:
#         default_max_num_batched_tokens = {UsageContext.LLM_CLASS: 8192, UsageContext.OPENAI_API_SERVER: 2048}
#         default_max_num_seqs = {UsageContext.LLM_CLASS: 256, UsageContext.OPENAI_API_SERVER: 256}
# 0.28.0 first: if device_memory >= 160 * GiB_bytes: ... OPENAI_API_SERVER: 16384 ... 1024
# 0.33.0: ... and not is_gb10 (is_device_capability((12, 1)))
# then (_set_default_max_num_seqs_and_batched_tokens_args): max_num_batched_tokens =
#     min(self.max_num_seqs * model_config.max_model_len, self.max_num_batched_tokens)

from kvmath.engines.vllm.budget import budget  # noqa: E402
from kvmath.engines.vllm.settings import batch_defaults, serve_batch_settings  # noqa: E402


@pytest.mark.parametrize("gib,name,cc,version,expected", [
    (23.69, "NVIDIA GeForce RTX 3090", 86, "0.24.0", (2048, 256)),
    (79.65, "NVIDIA H100 80GB HBM3", 90, "0.24.0", (8192, 1024)),
    (79.25, "NVIDIA A100 80 GB", 80, "0.24.0", (2048, 256)),      # "a100" in the name: small tier
    (178.36, "NVIDIA B200", 100, "0.27.0", (8192, 1024)),
    (178.36, "NVIDIA B200", 100, "0.28.0", (16384, 1024)),        # the 160 GiB tier from 0.28
    (119.7, "NVIDIA GB10", 121, "0.32.0", (8192, 1024)),
    (119.7, "NVIDIA GB10", 121, "0.33.0", (2048, 256)),           # GB10 kept small from 0.33
    (69.99, "NVIDIA Something", 90, "0.24.0", (2048, 256)),
])
def test_batch_defaults(gib, name, cc, version, expected):
    assert batch_defaults(round(gib * GIB), name, cc, version)[:2] == expected


def test_defaulted_batched_tokens_capped_by_seqs_times_len():
    assert serve_batch_settings(80 * GIB, "NVIDIA H100", 90, "0.24.0", 4, None, 1)[:2] == (4, 1)
    assert serve_batch_settings(80 * GIB, "NVIDIA H100", 90, "0.24.0", 32768, None, None)[:2] == (8192, 1024)
    assert serve_batch_settings(80 * GIB, "NVIDIA H100", 90, "0.24.0", 32768, 2048, 8)[2] is None


def test_budget_takes_the_cards_default_and_says_so():
    h100 = budget("gemma-4-31b", card="h100", max_model_len=32768, kv_format="bf16")
    assert h100.max_num_batched_tokens == 8192
    assert any("vllm serve's default" in n and "8,192" in n for n in h100.notes)
    small = budget("gemma-4-31b", card="rtx3090", tp=2, max_model_len=32768, kv_format="bf16")
    assert small.max_num_batched_tokens == 2048
    given = budget("gemma-4-31b", card="h100", max_model_len=32768, kv_format="bf16", max_num_batched_tokens=2048)
    assert given.max_num_batched_tokens == 2048 and not any("vllm serve's default" in n for n in given.notes)


# ---------------------------------------------------------------------------------------------------
# the null block (0.29+): get_kv_cache_configs, kv_cache_utils.py 0.29.0 / kv_cache_planning.py 0.33.0
#     check_memory = [avail_mem - _pool_bytes_per_block_from_builder(builder, vllm_config, groups) ...]
#     _check_enough_kv_cache_memory(avail_mem (= check_memory), ..., vllm_config.model_config.max_model_len, ...)
#     num_blocks = available_memory_one_worker // bytes_per_block     (the full memory)

def test_null_block_reserved_in_the_check_from_029():
    s = dict(tensor_parallel_size=2, max_model_len=131072, max_num_batched_tokens=4096)
    exact = plan("gemma-4-31b", None, vllm_version="0.28.0", **s).needed_bytes  # just enough before 0.29
    assert plan("gemma-4-31b", None, vllm_version="0.29.0", **s).needed_bytes == exact
    assert plan("gemma-4-31b", exact, vllm_version="0.28.0", **s).boots
    p29 = plan("gemma-4-31b", exact, vllm_version="0.29.0", **s)
    assert not p29.boots and f"({p29.needed_gib} GiB KV cache is needed" in p29.refusal
    assert plan("gemma-4-31b", exact + p29.bytes_per_block, vllm_version="0.33.0", **s).boots


def test_max_model_len_above_the_derived_maximum_is_refused_as_vllm_words_it():
    # vllm/config/model.py _get_and_verify_max_len (text identical 0.20.0-0.33.0):
    #   msg = (f"User-specified max_model_len ({max_model_len}) is greater "
    #          f"than the derived max_model_len ({max_len_key}="
    #          f"{derived_max_model_len} or model_max_length="
    #          f"{model_max_length} in model's config.json).")
    #   raise ValueError(f"{msg} To allow overriding this maximum, set "
    #                    f"the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. {warning}")
    import subprocess
    import sys

    from kvmath.engines.vllm.alloc import plan

    p = plan("llama-3.1-8b", 2**34, max_model_len=131073)
    assert not p.boots and p.refusal.startswith(
        "User-specified max_model_len (131073) is greater than the derived max_model_len "
        "(max_position_embeddings=131072 or model_max_length=None in model's config.json). To allow overriding "
        "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.")
    assert plan("llama-3.1-8b", 2**34, max_model_len=131072).boots
    assert plan("llama-3.1-8b", 2**35, max_model_len=131073, allow_long_max_model_len=True).boots
    with pytest.raises(kvmath.KvMathError, match="User-specified max_model_len"):
        kvmath.derive("llama-3.1-8b", max_ctx=1_000_000)
    cmd = [sys.executable, "-m", "kvmath.cli", "--config", "llama-3.1-8b", "--max-model-len", "1000000"]
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 2
    import os
    env = dict(os.environ, VLLM_ALLOW_LONG_MAX_MODEL_LEN="1")
    assert subprocess.run(cmd, capture_output=True, text=True, env=env).returncode == 0


def test_plan_names_an_unknown_setting():
    with pytest.raises(kvmath.KvMathError, match="unknown vLLM setting.*tp"):
        plan("qwen3.6-27b", 2**33, tp=2)
