"""vLLM 0.10-0.19 as release records (kvmath.engines.vllm.releases, read="part"): public start-up logs of those
releases reproduced from their logged "Available KV cache memory", and the kinds a record has not read refused.

Independent checks: every expected figure is the public log's own "GPU KV cache size" / "Maximum concurrency"
line (data/measurements/vllm-public-boots.csv, its source_url), written here by hand; kvmath gets only the logged
GiB figure (the byte band it stands for, ``plan_from_logged_gib``) and the row's stated settings.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from kvmath.engines.vllm import releases
from kvmath.engines.vllm.alloc import plan, plan_from_logged_gib
from kvmath.errors import KvMathError

CSV = Path(__file__).resolve().parent.parent / "data" / "measurements" / "vllm-public-boots.csv"

# id, model, vllm_version (the record it takes), settings stated in the row, logged GiB, logged tokens, logged
# concurrency (both as the log prints them)
ROWS = [
    # 0.10.1.1 on 4x A100 (TP 4): gpt-oss-120b, sliding window + full attention, 18 + 18 layers
    ("P76", "gpt-oss-120b", "0.10.1", dict(tensor_parallel_size=4, max_model_len=16384), "45.32", 2640144, "284.25"),
    # 0.11.0: Llama 3.1 8B on an L4 and on a 40 GB A100
    ("P92", "llama-3.1-8b", "0.11.0", dict(max_model_len=32000), "4.75", 38944, "1.22"),
    ("P98", "llama-3.1-8b", "0.11.0", dict(max_model_len=4096), "19.24", 157584, "38.47"),
    # 0.11.2 (the 0.11.0 record): gpt-oss-120b on one >= 70 GiB non-A100 card, serve default 8192 batched tokens
    ("P88", "gpt-oss-120b", "0.11.2", dict(max_model_len=98304, max_num_batched_tokens=8192), "8.99", 130960,
     "2.46"),
    # 0.17.1 (no record of its own: the 0.14.1 record, the newest read before it): Llama 3.1 8B on an A100
    ("P97", "llama-3.1-8b", "0.17.1", dict(max_model_len=32768), "55.79", 457024, "13.95"),
    # 0.19.0: Qwen 3.5 27B (Gated DeltaNet hybrid) on 4x RTX 3090, prefix caching off (logged), enforce_eager
    ("P110", "qwen3.5-27b", "0.19.0", dict(tensor_parallel_size=4, max_model_len=32768, enforce_eager=True,
                                           enable_prefix_caching=False), "7.0", 114464, "12.98"),
    ("P111", "qwen3.5-27b", "0.19.0", dict(tensor_parallel_size=4, max_model_len=32768, enforce_eager=True,
                                           enable_prefix_caching=False), "7.47", 122304, "13.87"),
    ("P112", "qwen3.5-27b", "0.19.0", dict(tensor_parallel_size=4, max_model_len=50000, enforce_eager=True,
                                           enable_prefix_caching=False), "7.56", 123088, "9.42"),
]


def _csv():
    with CSV.open(newline="", encoding="utf-8") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_the_written_figures_are_the_rows_logged_ones(row):
    pid, _, version, settings, gib, tokens, conc = row
    rec = _csv()[pid]
    assert rec["vllm_version"].startswith(version) and rec["available_kv_gib"] == gib
    assert int(rec["pool_tokens"]) == tokens and float(rec["max_concurrency"]) == float(conc)
    assert str(settings["max_model_len"]) in rec["max_model_len"]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_a_public_boot_is_reproduced_from_its_logged_memory(row):
    pid, model, version, settings, gib, tokens, conc = row
    lo, hi = plan_from_logged_gib(model, gib, vllm_version=version, **settings)
    assert lo.boots and hi.boots and lo.token_formula == "groups"
    assert lo.gpu_kv_cache_tokens <= tokens <= hi.gpu_kv_cache_tokens, (lo.gpu_kv_cache_tokens, hi.gpu_kv_cache_tokens)
    assert round(lo.max_concurrency, 2) <= float(conc) <= round(hi.max_concurrency, 2)


def test_the_new_records_are_chosen_and_named_in_the_covered_range():
    assert [releases.release(v).name for v in ("0.10.1", "0.10.2", "0.11.0", "0.11.2", "0.12.0", "0.13.0",
                                               "0.14.1", "0.17.1", "0.19.0", "0.19.2rc1")] == [
        "0.10.1", "0.10.1", "0.11.0", "0.11.0", "0.12.0", "0.12.0", "0.14.1", "0.14.1", "0.19.0", "0.19.0"]
    text = releases.covered()
    for name in ("0.10.1", "0.11.0", "0.12.0", "0.14.1", "0.19.0"):
        assert name in text and releases.release(name).read == "part"
    assert "0.10.1-0.19.0 in part for full and sliding-window attention" in releases.covered(short=True)


@pytest.mark.parametrize("version", ["0.9.0", "0.10.0", "0.7.1"])
def test_releases_before_the_oldest_record_stay_refused(version):
    with pytest.raises(KvMathError, match="older than the releases these rules were read from"):
        releases.release(version)


def test_switches_read_from_the_old_sources():
    # config/cache.py gpu_memory_utilization 0.9 (0.10.1.1 l.43, 0.11.0 l.43, 0.12.0 l.49, 0.14.1 l.50, 0.19.0 l.41)
    # envs.py 0.19.0 l.1654-1656: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "0"
    for name in ("0.10.1", "0.11.0", "0.12.0", "0.14.1", "0.19.0"):
        rec = releases.release(name)
        assert rec.serve_gpu_memory_utilization == 0.9 and not rec.estimate_cudagraphs
        assert rec.token_formula == "groups" and not rec.mamba_blocks_check and not rec.null_block_check
    # kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: min alone (0.10.1.1 l.966), 1.25 (0.12.0 l.1017,
    # 0.14.1 l.1036), 1.5 (0.19.0 l.1046)
    assert [releases.release(v).group_size_factor for v in ("0.10.1", "0.11.0", "0.12.0", "0.14.1", "0.19.0")] == [
        0.0, 0.0, 1.25, 1.25, 1.5]
    # topk_topp_sampler.py: the Triton kernel is imported in 0.19.0 (l.14-17), not in 0.14.1
    assert releases.release("0.14.1").sort_top_k_top_p and not releases.release("0.19.0").sort_top_k_top_p


@pytest.mark.parametrize("model, version, what", [
    ("qwen3.5-27b", "0.11.0", "Mamba / Gated-DeltaNet hybrids"),
    ("qwen3.6-35b-a3b", "0.14.1", "Mamba / Gated-DeltaNet hybrids"),
    ("deepseek-v3", "0.12.0", "MLA attention"),
    ("deepseek-v3", "0.19.0", "MLA attention"),
])
def test_an_unread_kind_is_refused_in_one_line_naming_the_release(model, version, what):
    with pytest.raises(KvMathError) as e:
        plan(model, 10 * 2**30, vllm_version=version, max_model_len=4096)
    msg = str(e.value)
    assert "\n" not in msg and f"vLLM {version}" in msg and what in msg and "not read for this release" in msg


def test_speculative_and_new_kv_formats_are_refused_before_0_20():
    with pytest.raises(KvMathError, match="vLLM 0.19.0: speculative decoding"):
        plan("qwen3.6-27b", 10 * 2**30, vllm_version="0.19.0", max_model_len=4096, num_speculative_tokens=3)
    with pytest.raises(KvMathError, match="vLLM 0.11.0: --kv-cache-dtype nvfp4"):
        plan("llama-3.1-8b", 10 * 2**30, vllm_version="0.11.0", max_model_len=4096, kv_cache_dtype="nvfp4")


def test_the_cli_answers_for_0_11_and_refuses_a_hybrid_in_one_line():
    ok = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "llama-3.1-8b", "--vllm-version", "0.11.0",
                         "--kv-cache-memory-bytes", str(5 * 2**30), "--max-model-len", "32000"],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "qwen3.5-27b", "--vllm-version", "0.11.0",
                          "--kv-cache-memory-bytes", str(5 * 2**30)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "vLLM 0.11.0" in bad.stderr


def test_mamba2_state_layers_are_refused_on_0_19():
    """Nemotron-H's Mamba-2 layers take their SSM cache dtype from 0.19's NemotronHForCausalLMConfig, which was not
    read; kvmath refuses rather than price them with 0.20's rule."""
    import kvmath
    from kvmath.errors import KvMathError

    with pytest.raises(KvMathError, match="Mamba-2 / KDA state layers"):
        kvmath.derive("nemotron-h-56b", engine="vllm", max_ctx=8192, vllm_version="0.19.0")
