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
        "0.10.1", "0.10.2", "0.11.0", "0.11.0", "0.12.0", "0.12.0", "0.14.1", "0.14.1", "0.19.0", "0.19.0"]
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


# --- Qwen3-Next (Gated DeltaNet hybrid) on 0.10.2 and 0.11.0 ------------------------------------------------------
# Public start-up log of vLLM 0.10.2 (banner "vLLM API server version 0.10.2"; "Initializing a V1 LLM engine
# (v0.10.2)"), Qwen3-Next-80B-A3B-Instruct bf16, `--tensor-parallel-size 2`, max model len 262144 (default), two
# H200 (fused_moe config "device_name=NVIDIA_H200"). Found in the tool library's code index (a pasted log of user
# "aiuser3@ai-smartlaw", `python -m vllm.entrypoints.openai.api_server --model /data/models/Qwen3-Next-80B-A3B-Instruct
# --host 0.0.0.0 --port 8000 --tensor-parallel-size 2`; the index returns no repository URL for it: find it with
# find_string "GPU KV cache size: 973,760 tokens"). Its lines:
#   [config.py:310] Hybrid or mamba-based model detected: disabling prefix caching since it is not yet supported.
#   [config.py:390] Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.
#   [config.py:411] Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are
#                   exactly equal.
#   [gpu_worker.py:298] Available KV cache memory: 44.59 GiB
#   [kv_cache_utils.py:1028] GPU KV cache size: 973,760 tokens
#   [kv_cache_utils.py:1032] Maximum concurrency for 262,144 tokens per request: 14.77x
#   [gpu_worker.py:391] ... Current kv cache memory in use is 47878721024 bytes.
#       (0.10.2 gpu_worker.py l.388-389: int(self.available_kv_cache_memory_bytes), the exact available bytes)
#   [loggers.py:142] Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 7162
QWEN3_NEXT_0_10_2_BYTES = 47878721024


def test_qwen3_next_on_0_10_2_reproduces_the_public_log_from_its_exact_bytes():
    p = plan("qwen3-next-80b-a3b", QWEN3_NEXT_0_10_2_BYTES, vllm_version="0.10.2", tensor_parallel_size=2,
             max_model_len=262144)
    assert releases.release("0.10.2").name == "0.10.2" and p.boots
    assert p.block_size == 544 and p.mamba_cache_mode == "none"
    assert p.num_blocks == 7162 and p.gpu_kv_cache_tokens == 973760 and round(p.max_concurrency, 2) == 14.77
    assert any("Setting attention block size to 544 tokens" in n for n in p.notes)
    assert any("Padding mamba page size by 1.49%" in n for n in p.notes)
    assert any("disabling prefix caching" in n for n in p.notes)


def test_qwen3_next_on_0_10_2_reproduces_the_public_log_from_its_logged_gib():
    lo, hi = plan_from_logged_gib("qwen3-next-80b-a3b", "44.59", vllm_version="0.10.2", tensor_parallel_size=2,
                                  max_model_len=262144)
    assert lo.boots and hi.boots and lo.token_formula == "groups"
    assert lo.gpu_kv_cache_tokens <= 973760 <= hi.gpu_kv_cache_tokens
    assert round(lo.max_concurrency, 2) <= 14.77 <= round(hi.max_concurrency, 2)


def test_qwen3_next_on_0_11_0_by_hand_from_the_release_source():
    """Hand derivation from the 0.11.0 wheel, Qwen3-Next-80B-A3B (48 layers: 12 full attention, 2 KV heads, head 256;
    36 GDN: 16 key heads and 32 value heads of 128, conv kernel 4), bf16, TP 4, 20 GiB available, max_model_len 32768:

    - models/config.py l.295-298: prefix caching forced off; one token's FullAttentionSpec page on a rank
      (get_num_kv_heads: max(1, 2 // 4) = 1 head) = 2 * 1 * 256 * 2 B = 1024 B;
    - qwen3_next.py l.1150-1156 + mamba_utils.py l.74-80 and l.166-186: conv (3, (128*16*2 + 128*32) / 4 = 2048) bf16
      = 12288 B, temporal (32 / 4, 128, 128) bf16 = 262144 B; Mamba page 274432 B;
    - models/config.py l.367: block = 16 * cdiv(274432, 16 * 1024) = 16 * 17 = 272; page = 272 * 1024 = 278528 B,
      padding (278528 - 274432) / 274432 = 1.49%;
    - kv_cache_utils.py l.977: group size min(12, 36) = 12, groups 1 + 3 = 4; l.824: num_blocks =
      21474836480 // 278528 // 12 = 77101 // 12 = 6425; l.1080: tokens = 6425 // 4 * 272 = 436832;
    - l.780-795: blocks per request = cdiv(32768, 272) + 3 Mamba groups * 1 = 121 + 3 = 124; 6425 / 124 = 51.81x.
    """
    p = plan("qwen3-next-80b-a3b", 20 * 2**30, vllm_version="0.11.0", tensor_parallel_size=4, max_model_len=32768)
    assert p.block_size == 272 and p.page_size_bytes == 278528 and p.mamba_state_bytes == 274432
    assert p.num_blocks == 6425 and p.gpu_kv_cache_tokens == 436832 and p.blocks_per_request == 124
    assert round(p.max_concurrency, 2) == 51.81
    assert any("Padding mamba page size by 1.49%" in n for n in p.notes)


def test_0_11_keeps_prefix_caching_off_and_reads_no_ssm_dtype_for_gdn():
    """0.11.0: enable_prefix_caching is forced off for hybrids (models/config.py l.295-298), and a GDN layer's state
    dtype is gated_delta_net_state_dtype(model dtype, mamba_cache_dtype) for both tensors (mamba_utils.py l.74-80),
    so --mamba-ssm-cache-dtype float32 leaves the block at 272 (above). 0.19.0 reads it (_mamba_state_dtype,
    mamba_utils.py l.79-87): temporal (8, 128, 128) float32 = 524288 B + conv 12288 B = 536576 B, block
    16 * cdiv(536576, 16384) = 16 * 33 = 528."""
    kw = dict(tensor_parallel_size=4, max_model_len=32768)
    on = plan("qwen3-next-80b-a3b", 20 * 2**30, vllm_version="0.11.0", enable_prefix_caching=True,
              mamba_ssm_cache_dtype="float32", **kw)
    assert on.block_size == 272 and on.mamba_cache_mode == "none" and on.gpu_kv_cache_tokens == 436832
    new = plan("qwen3-next-80b-a3b", 20 * 2**30, vllm_version="0.19.0", enable_prefix_caching=False,
               mamba_ssm_cache_dtype="float32", **kw)
    assert new.block_size == 528 and new.mamba_state_bytes == 536576


@pytest.mark.parametrize("model, version, what", [
    ("qwen3-next-80b-a3b", "0.10.1", "Mamba / Gated-DeltaNet hybrids"),  # Qwen3-Next is new in 0.10.2
    ("qwen3-next-80b-a3b", "0.13.0", "read for 0.12.x only"),  # takes the 0.12.0 record; 0.13 not read
    ("qwen3-next-80b-a3b", "0.17.0", "read for 0.14.x only"),  # takes the 0.14.1 record; 0.15-0.18 not read
    ("qwen3-next-80b-a3b", "0.18.0", "read for 0.14.x only"),
    ("nemotron-h-56b", "0.14.1", "Mamba / Gated-DeltaNet hybrids other than qwen3_next"),  # Mamba-2 not read
    ("qwen3.6-27b", "0.11.0", "Mamba / Gated-DeltaNet hybrids other than qwen3_next"),
    ("nemotron-h-56b", "0.10.2", "Mamba / Gated-DeltaNet hybrids other than qwen3_next"),
])
def test_hybrids_not_read_stay_refused(model, version, what):
    with pytest.raises(KvMathError) as e:
        plan(model, 10 * 2**30, vllm_version=version, max_model_len=4096)
    msg = str(e.value)
    assert "\n" not in msg and f"vLLM {version}" in msg and what in msg and "not read for this release" in msg


def test_speculative_qwen3_next_stays_refused_on_0_11():
    with pytest.raises(KvMathError, match="vLLM 0.11.0: speculative decoding"):
        plan("qwen3-next-80b-a3b", 10 * 2**30, vllm_version="0.11.0", max_model_len=4096, tensor_parallel_size=4,
             num_speculative_tokens=2)


def test_the_cli_prices_qwen3_next_at_0_10_2():
    out = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "qwen3-next-80b-a3b", "--engine", "vllm",
                          "--vllm-version", "0.10.2", "--kv-cache-memory-bytes", str(QWEN3_NEXT_0_10_2_BYTES),
                          "--max-model-len", "262144", "--tensor-parallel-size", "2"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "973,760" in out.stdout or "973760" in out.stdout, out.stdout[-2000:]


@pytest.mark.parametrize("version", ["0.12.0", "0.14.1"])
def test_qwen3_next_on_0_12_and_0_14_by_hand_from_the_release_source(version):
    """Hand derivation from the 0.12.0 and 0.14.1 wheels, the same deployment as the 0.11.0 one above (TP 4, 20 GiB,
    32768): Qwen3-Next has no SupportsMambaPrefixCaching (only bamba, falcon_h1, granitemoehybrid, jamba, mamba,
    mamba2, nemotron_h, zamba2 carry it), so MambaModelConfig disables prefix caching (models/config.py 0.12.0
    l.292-309, 0.14.1 l.332-349) and the Mamba block is max_model_len (l.311-312 / l.351-352); the block is
    16 * cdiv(274432, 16 * 1024) = 272 off sm_100; _get_kv_cache_groups_uniform_page_size: 36 < 1.25 * 12 is false,
    so the group size is the smallest count, 12 (kv_cache_utils.py 0.12.0 l.1015-1023, 0.14.1 l.1034-1042);
    num_blocks 21474836480 // 278528 // 12 = 6425 (get_num_blocks), tokens 6425 // 4 * 272 = 436832
    (0.14.1 l.1288-1292), blocks per request cdiv(32768, 272) + 3 = 124, 6425 / 124 = 51.81x."""
    p = plan("qwen3-next-80b-a3b", 20 * 2**30, vllm_version=version, tensor_parallel_size=4, max_model_len=32768)
    assert p.block_size == 272 and p.mamba_cache_mode == "none" and p.num_blocks == 6425
    assert p.gpu_kv_cache_tokens == 436832 and p.blocks_per_request == 124 and round(p.max_concurrency, 2) == 51.81
    assert any("without support for prefix caching: disabling" in n for n in p.notes)


def test_qwen3_next_on_sm100_at_0_14_is_aligned_to_32_by_hand():
    """0.14.1 models/config.py l.401-412: head size 256 on the sm_100 family with FlashInfer or the default backend
    aligns to 32: block 32 * cdiv(274432, 32 * 1024) = 32 * 9 = 288, page 294912 B; num_blocks
    21474836480 // 294912 // 12 = 72817 // 12 = 6068; tokens 6068 // 4 * 288 = 436896; cdiv(32768, 288) + 3 = 117
    blocks per request, 6068 / 117 = 51.86x. kvmath-fit --card b200 sets kernel_block_size 32 for it; an H100
    (sm_90) keeps 272."""
    p = plan("qwen3-next-80b-a3b", 20 * 2**30, vllm_version="0.14.1", tensor_parallel_size=4, max_model_len=32768,
             kernel_block_size=32)
    assert p.block_size == 288 and p.num_blocks == 6068 and p.gpu_kv_cache_tokens == 436896
    assert p.blocks_per_request == 117 and round(p.max_concurrency, 2) == 51.86
    for card, block in (("b200", 288), ("h100", 272)):
        out = subprocess.run([sys.executable, "-m", "kvmath.fit", "vllm", "serve", "Qwen/Qwen3-Next-80B-A3B-Instruct",
                              "--tensor-parallel-size", "4", "--card", card, "--vllm-version", "0.14.1"],
                             capture_output=True, text=True, timeout=200)
        assert out.returncode == 0, out.stderr
        assert f"Setting attention block size to {block} tokens" in out.stdout
