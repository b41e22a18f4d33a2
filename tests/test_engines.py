"""Engine rules, each checked against a derivation written here from the engine's source.

Where a figure comes from a published worked number (shared/engine-notes.md section 4, which reads
vLLM mamba_utils.py, transformers modular_qwen3_next.py and llama.cpp llama-hparams.cpp), the test
says so; kvmath's own arithmetic is never reused.
"""

import math
from pathlib import Path

import pytest

import kvmath

MiB = 2**20
SHARED = Path(__file__).resolve().parents[2] / "shared" / "hf-configs"


def group(d, layer_type):
    (g,) = [g for g in d.groups if g.layer_type == layer_type]
    return g


def test_vllm_qwen36_27b_fp8_tp2_per_token():
    # 16 full layers x (4 KV heads / TP 2) x 256 x (K + V) x 1 byte
    d = kvmath.derive("qwen3.6-27b", kv_format="fp8_e5m2", tp=2, max_ctx=262144)
    assert d.bytes_per_token == 16 * 2 * 256 * 2 * 1
    # vLLM full attention: ceil(L / 16) blocks of 16 tokens; 262144 is a multiple of 16
    assert d.growing_bytes == 16 * 2 * 256 * 2 * 262144


def test_vllm_full_attention_rounds_to_blocks():
    d = kvmath.derive("qwen3.6-35b-a3b", kv_format="bf16", max_ctx=1000, block_size=16)
    assert group(d, "full_attention").cells == 63 * 16  # ceil(1000/16) = 63 blocks


def test_vllm_gdn_state_qwen_27b():
    # mamba_utils.gated_delta_net_state_shape: conv (K-1, conv_dim) in bf16, temporal (nv, dv, dk) in
    # mamba_ssm_dtype = float32 (Qwen 3.5 / 3.6 config). conv_dim = 2*16*128 + 48*128 = 10240.
    d = kvmath.derive("qwen3.6-27b", kv_format="bf16", max_ctx=4096)
    g = group(d, "linear_attention")
    shapes = {t.name: (t.shape, t.dtype) for t in g.state}
    assert shapes == {"conv": ((3, 10240), "bfloat16"), "temporal": ((48, 128, 128), "float32")}
    # engine-notes worked number: Qwen3.5-27B recurrent state, fp32, 48 GDN layers = 144.0 MiB per sequence
    temporal_total = 48 * math.prod((48, 128, 128)) * 4
    assert temporal_total == 144 * MiB
    assert d.state_bytes_per_seq == temporal_total + 48 * 3 * 10240 * 2


def test_vllm_gdn_state_splits_over_tp_and_speculative_rows():
    d = kvmath.derive("qwen3.6-27b", kv_format="bf16", max_ctx=4096, tp=4, num_speculative_tokens=3)
    shapes = {t.name: t.shape for t in group(d, "linear_attention").state}
    assert shapes == {"conv": (3 + 3, 10240 // 4), "temporal": (48 // 4, 128, 128)}


def test_vllm_sliding_window_blocks():
    # max_memory_usage_bytes for SlidingWindowSpec: (ceil(min(W-1+T_b, L)/B) + 1) blocks
    d = kvmath.derive("gemma-4-31b", kv_format="bf16", max_ctx=262144, max_num_batched_tokens=2048)
    g = group(d, "sliding_attention")
    assert g.cells == (math.ceil((1024 - 1 + 2048) / 16) + 1) * 16 == 3088
    assert g.bytes_per_token == 16 * 256 * 2 * 2  # 16 KV heads x 256, K and V, bf16
    short = kvmath.derive("gemma-4-31b", kv_format="bf16", max_ctx=2000, max_num_batched_tokens=8192)
    assert group(short, "sliding_attention").cells == (math.ceil(2000 / 16) + 1) * 16


def test_vllm_replicates_kv_heads_beyond_tp():
    # Gemma 4 31B: 4 global KV heads; at TP 8 every card holds one (max(1, 4 // 8)).
    d = kvmath.derive("gemma-4-31b", kv_format="bf16", tp=8, max_ctx=8192)
    assert group(d, "full_attention").kv_heads_per_rank == 1
    assert group(d, "sliding_attention").kv_heads_per_rank == 2


def test_vllm_gemma4_stores_v_for_k_eq_v_layers():
    # 10 full layers x 4 heads x 512 x (K and V) x 2 bytes
    d = kvmath.derive("gemma-4-31b", kv_format="bf16", max_ctx=8192)
    assert d.bytes_per_token == 10 * 4 * 512 * 2 * 2 == 81920


def test_vllm_turboquant_keeps_boundary_layers_in_model_dtype_on_dense_models():
    d = kvmath.derive("gemma-4-31b", kv_format="turboquant_3bit_nc", max_ctx=8192)
    bf16 = [g for g in d.groups if g.kv_format == "bf16"]
    assert sorted(i for g in bf16 for i in g.layers) == [0, 1, 58, 59]
    # hybrid (GDN) models skip nothing
    q = kvmath.derive("qwen3.6-27b", kv_format="turboquant_3bit_nc", max_ctx=8192)
    assert {g.kv_format for g in q.groups if g.layer_type == "full_attention"} == {"turboquant_3bit_nc"}


@pytest.mark.parametrize("model,tp,match", [
    ("qwen3.6-35b-a3b", 3, "does not divide num_attention_heads 16"),
    ("qwen3.6-27b", 16, "does not divide num_attention_heads 24"),
])
def test_vllm_tp_errors_name_valid_sizes(model, tp, match):
    with pytest.raises(kvmath.KvMathError, match=match) as e:
        kvmath.derive(model, tp=tp, max_ctx=1024)
    assert "valid TP" in str(e.value)


def test_llamacpp_pads_n_ctx_and_sizes_swa():
    # llama-context.cpp: n_ctx = GGML_PAD(n_ctx, 256); iswa: size_swa = PAD(min(n_ctx_seq, n_swa + n_ubatch), 256)
    d = kvmath.derive("gemma-4-26b-a4b", engine="llama.cpp", kv_format="f16", max_ctx=1000)
    assert group(d, "full_attention").cells == 1024
    d = kvmath.derive("gemma-4-26b-a4b", engine="llama.cpp", kv_format="f16", max_ctx=262144)
    assert group(d, "sliding_attention").cells == 1536  # PAD(1024 + 512, 256)
    full = kvmath.derive("gemma-4-26b-a4b", engine="llama.cpp", kv_format="f16", max_ctx=262144, swa_full=True)
    assert group(full, "sliding_attention").cells == 262144


def test_llamacpp_streams_unified_and_not():
    # -np 4 -c 131072: per-sequence streams of n_ctx/4 = 32768, SWA PAD(1024 + 512) each;
    # --kv-unified: one stream of 131072 cells, SWA PAD(1024 * 4 + 512, 256) = 4608.
    per_seq = kvmath.derive("gemma-4-31b", engine="llama.cpp", kv_format="q8_0", max_ctx=32768, max_num_seqs=4)
    assert (group(per_seq, "full_attention").cells, group(per_seq, "full_attention").streams) == (32768, 4)
    assert (group(per_seq, "sliding_attention").cells, group(per_seq, "sliding_attention").streams) == (1536, 4)
    uni = kvmath.derive("gemma-4-31b", engine="llama.cpp", kv_format="q8_0", max_ctx=32768, max_num_seqs=4,
                        kv_unified=True)
    assert (group(uni, "full_attention").cells, group(uni, "full_attention").streams) == (131072, 1)
    assert group(uni, "sliding_attention").cells == 4608


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared/hf-configs is not beside this checkout")
def test_llamacpp_recurrent_state_qwen3_next_worked_numbers():
    # engine-notes section 4 worked numbers, Qwen3-Next-80B (36 GDN layers; nk 16, nv 32, d 128, K 4):
    # recurrent fp32 72.0 MiB, conv (K-1) f32 3.375 MiB per sequence.
    d = kvmath.derive(SHARED / "Qwen__Qwen3-Next-80B-A3B-Instruct.json", engine="llama.cpp", max_ctx=4096)
    g = group(d, "linear_attention")
    assert g.n_layers == 36
    r, s = g.state
    assert (r.name, s.name) == ("r", "s")
    assert s.nbytes * 36 == 72 * MiB
    assert r.nbytes * 36 == int(3.375 * MiB)
    # vLLM keeps Qwen3-Next's temporal state in the model dtype (no mamba_ssm_dtype override): 36.0 MiB
    v = kvmath.derive(SHARED / "Qwen__Qwen3-Next-80B-A3B-Instruct.json", engine="vllm", max_ctx=4096)
    temporal = [t for t in group(v, "linear_attention").state if t.name == "temporal"][0]
    assert temporal.nbytes * 36 == 36 * MiB


def test_llamacpp_has_no_tp_and_rejects_vllm_formats():
    with pytest.raises(kvmath.KvMathError, match="tp must be 1"):
        kvmath.derive("gemma-4-31b", engine="llama.cpp", tp=2, max_ctx=1024)
    with pytest.raises(kvmath.KvMathError, match="valid: f32"):
        kvmath.derive("gemma-4-31b", engine="llama.cpp", kv_format="fp8_e5m2", max_ctx=1024)


def test_deployment_rejects_impossible_numbers():
    for kw in ({"max_ctx": 0}, {"max_ctx": -5}, {"max_num_seqs": 0}, {"max_ctx": 1.5}, {"tp": 0}):
        with pytest.raises(kvmath.KvMathError, match="positive integer"):
            kvmath.derive("gemma-4-31b", **{"max_ctx": 1024, **kw})
    with pytest.raises(kvmath.KvMathError, match="unknown engine"):
        kvmath.derive("gemma-4-31b", engine="sglang", max_ctx=1024)
