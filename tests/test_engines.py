"""Engine rules, each checked against a derivation written here from the engine's source.

Where a figure comes from a published worked number (shared/engine-notes.md section 4, which reads
vLLM mamba_utils.py, transformers modular_qwen3_next.py and llama.cpp llama-hparams.cpp), the test
says so; kvmath's own arithmetic is never reused.
"""

import json
import math
from pathlib import Path

import pytest

import kvmath

MiB = 2**20
SHARED = Path(__file__).resolve().parents[1] / "data" / "configs"  # the reference configs (data/configs/SOURCES.md)


def group(d, layer_type):
    (g,) = [g for g in d.groups if g.layer_type == layer_type]
    return g


def test_vllm_qwen36_27b_fp8_tp2_per_token():
    # 16 full layers x (4 KV heads / TP 2) x 256 x (K + V) x 1 byte
    d = kvmath.derive("qwen3.6-27b", kv_format="fp8_e5m2", tp=2, max_ctx=262144)
    assert d.bytes_per_token == 16 * 2 * 256 * 2 * 1
    # Hybrid block alignment (Platform._align_hybrid_block_size): the attention block grows until one
    # page holds a GDN state. Per rank: attention 1024 B/token; state = conv 3 x 5120 bf16 (30,720 B)
    # + temporal 24 x 128 x 128 fp32 (1,572,864 B) = 1,603,584 B -> block 16 * ceil(1603584 / 16384) = 1568.
    # Full attention holds ceil(262144 / 1568) = 168 blocks = 263,424 tokens per request.
    assert d.growing_bytes == 16 * 1024 * 168 * 1568


def test_vllm_full_attention_rounds_to_blocks():
    # a model without state layers keeps --block-size: ceil(1000 / 16) = 63 blocks
    d = kvmath.derive("llama-3.1-8b", kv_format="bf16", max_ctx=1000, block_size=16)
    assert group(d, "full_attention").cells == 63 * 16
    # Qwen 3.6 35B-A3B (hybrid): 2 KV heads x 256 bf16 = 2,048 B/token; state conv 3 x 8192 bf16 + temporal
    # 32 x 128 x 128 fp32 = 2,146,304 B -> block 16 * ceil(2146304 / 32768) = 1056 tokens; 1000 -> 1 block
    h = kvmath.derive("qwen3.6-35b-a3b", kv_format="bf16", max_ctx=1000, block_size=16)
    assert group(h, "full_attention").cells == 1056


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
    assert sum(t.nbytes for t in g.state) * 48 == temporal_total + 48 * 3 * 10240 * 2
    # What vLLM holds per request (mamba_cache_mode "align", prefix caching on): 2 blocks of the padded
    # page. Attention 4 x 256 x 2 x 2 = 4,096 B/token; state 3,207,168 B -> block 16 * ceil(3207168 / 65536)
    # = 784 tokens; page 784 * 4096 = 3,211,264 B (0.13 % padding).
    assert d.state_bytes_per_seq == 48 * 2 * 784 * 4096


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
    # get_boundary_skip_layers: min(2, 32 // 2) = 2 layers at each end of Llama 3.1 8B stay bf16
    d = kvmath.derive("llama-3.1-8b", kv_format="turboquant_3bit_nc", max_ctx=8192)
    bf16 = [g for g in d.groups if g.kv_format == "bf16"]
    assert sorted(i for g in bf16 for i in g.layers) == [0, 1, 30, 31]
    # Gemma 4 mixes sliding and full layers: the bf16 boundary pages and TurboQuant pages must unify, and
    # vLLM 0.24 cannot pad a TurboQuant page (unify_kv_cache_spec_page_size), so it refuses at start-up
    with pytest.raises(kvmath.KvMathError, match="cannot be padded"):
        kvmath.derive("gemma-4-31b", kv_format="turboquant_3bit_nc", max_ctx=8192)
    # hybrid (GDN) models skip nothing
    q = kvmath.derive("qwen3.6-27b", kv_format="turboquant_3bit_nc", max_ctx=8192, max_num_batched_tokens=8192)
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
        kvmath.derive("gemma-4-31b", engine="tgi", max_ctx=1024)


# ---------------------------------------------------------------------------------------------------
# MLA, Mamba-2, KDA and MoE-only blocks: every figure below is derived here from the engine source
# named in the comment (vLLM vllm-project/vllm @001cabc1 kv_cache_interface.py and @02d71083
# mamba_utils.py; llama.cpp src/llama-hparams.cpp n_embd_r / n_embd_s, PR #19067; transformers 5.23
# models/deepseek_v3, models/kimi_linear, models/nemotron_h), never from kvmath's arithmetic.

DSV3 = SHARED / "deepseek-ai__DeepSeek-V3.json"
KIMI = SHARED / "moonshotai__Kimi-Linear-48B-A3B-Instruct.json"
NANO = SHARED / "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json"
NEMO56 = SHARED / "nvidia__Nemotron-H-56B-Base-8K.json"


def state(d, kind):
    (g,) = [g for g in d.groups if g.kind == kind]
    return g, {t.name: (t.shape, t.dtype) for t in g.state}


def test_vllm_deepseek_v3_mla_latent_576_per_token_replicated_on_every_rank():
    # MLAAttentionSpec.real_page_size_bytes = block_size * num_kv_heads(1) * head_size * dtype size,
    # head_size = kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576; bf16: 1152 B per token and layer.
    for tp in (1, 8):
        d = kvmath.derive(DSV3, engine="vllm", tp=tp, max_ctx=163840)
        (g,) = d.groups
        assert (g.kind, g.n_layers, g.kv_heads_per_rank) == ("mla", 61, 1)
        assert g.bytes_per_token == 576 * 2
        assert d.bytes_per_token == 61 * 1152 == 70272
        assert g.cells == math.ceil(163840 / 16) * 16
    fp8 = kvmath.derive(DSV3, engine="vllm", kv_format="fp8_e4m3", max_ctx=4096)
    assert fp8.bytes_per_token == 61 * 576


@pytest.mark.parametrize("fmt", ["fp8_e5m2", "int8_per_token_head", "nvfp4", "turboquant_k8v4"])
def test_vllm_mla_rejects_formats_its_mla_backends_lack(fmt):
    with pytest.raises(kvmath.KvMathError, match="MLA"):
        kvmath.derive(DSV3, engine="vllm", kv_format=fmt, max_ctx=4096)


def test_llamacpp_deepseek_v3_v_less_since_pr_19067_and_k_plus_v_before():
    # PR #19067 (2026-01-24): has_v = !is_mla, K = n_embd_head_k (576) x n_head_kv (1), f16.
    d = kvmath.derive(DSV3, engine="llama.cpp", max_ctx=4096)
    assert d.bytes_per_token == 61 * 576 * 2
    # before it (ec98e2002): K 576 + V 512 (n_embd_head_v = kv_lora_rank), one KV head
    old = kvmath.derive(DSV3, engine="llama.cpp", max_ctx=4096, build="ec98e2002")
    assert old.settings.build == "ec98e2002"
    assert old.bytes_per_token == 61 * (576 + 512) * 2
    # q8_0: a 576-element row is 18 blocks of 34 bytes (ggml type_traits)
    q8 = kvmath.derive(DSV3, engine="llama.cpp", kv_format="q8_0", max_ctx=4096)
    assert q8.bytes_per_token == 61 * 18 * 34
    with pytest.raises(kvmath.KvMathError, match="unknown llama.cpp build"):
        kvmath.derive(DSV3, engine="llama.cpp", max_ctx=4096, build="b1")


def test_transformers_deepseek_v3_latent_keys_and_rope_values():
    # DeepseekV3Attention: keys kv_nope [B, 1, T, 512], values k_rot [B, 1, T, 64], bf16
    d = kvmath.derive(DSV3, engine="transformers", max_ctx=100, max_num_seqs=3)
    (g,) = d.groups
    assert g.bytes_per_token == (512 + 64) * 2
    assert d.total_bytes == 61 * 3 * 100 * 1152


def test_kimi_linear_per_engine():
    # 7 MLA layers (1-based 4, 8, ..., 24, 27) and 20 KDA layers (32 heads x 128, short conv 4).
    v = kvmath.derive(KIMI, engine="vllm", max_ctx=4096, enable_prefix_caching=False)
    mla = [g for g in v.groups if g.kind == "mla"][0]
    assert mla.layers == (3, 7, 11, 15, 19, 23, 26)
    assert v.bytes_per_token == 7 * 576 * 2
    # kda_state_shape: conv (K-1, nh*hd + 2*nk*dk) = (3, 12288) in bf16; kda_state_dtype: recurrent fp32
    g, shapes = state(v, "kda")
    assert g.n_layers == 20
    assert shapes == {"conv": ((3, 12288), "bfloat16"), "recurrent": ((32, 128, 128), "float32")}
    assert sum(t.nbytes for t in g.state) == 3 * 12288 * 2 + 32 * 128 * 128 * 4 == 2_170_880
    # mode "none" (prefix caching off): one block of the padded page per request. MLA page per token
    # 576 x 2 = 1,152 B -> block 16 * ceil(2170880 / 18432) = 1888 tokens, page 1888 * 1152 B.
    assert v.state_bytes_per_seq == 20 * 1888 * 1152
    # prefix caching on: Kimi Linear does not implement SupportsMambaPrefixCaching, so mamba_cache_mode is
    # "align" (models/config.py MambaModelConfig) and a request holds 2 state blocks (MambaSpec
    # max_memory_usage_bytes: page_size_bytes * (2 + num_speculative_blocks))
    on = kvmath.derive(KIMI, engine="vllm", max_ctx=4096, enable_prefix_caching=True)
    assert on.state_bytes_per_seq == 20 * 2 * 1888 * 1152
    _, shapes = state(kvmath.derive(KIMI, engine="vllm", max_ctx=4096, tp=2, num_speculative_tokens=2,
                                    enable_prefix_caching=False), "kda")
    assert shapes == {"conv": ((3 + 2, 6144), "bfloat16"), "recurrent": ((16, 128, 128), "float32")}
    # --mamba-ssm-cache-dtype does not reach KDA (kda_state_dtype returns float32 unconditionally)
    _, shapes = state(kvmath.derive(KIMI, engine="vllm", max_ctx=4096, mamba_ssm_cache_dtype="bfloat16",
                                    enable_prefix_caching=False), "kda")
    assert shapes["recurrent"][1] == "float32"
    # llama.cpp n_embd_r = 3 * (d_conv - 1) * n_head * kda_head_dim, n_embd_s = kda_head_dim^2 * n_head, f32
    c = kvmath.derive(KIMI, engine="llama.cpp", max_ctx=4096)
    _, shapes = state(c, "kda")
    assert shapes == {"r": ((3 * 3 * 32 * 128,), "float32"), "s": ((128 * 128 * 32,), "float32")}
    assert c.state_bytes_per_seq == 20 * 4 * (36864 + 524288) == 44_892_160
    assert c.bytes_per_token == 7 * 576 * 2  # V-less MLA
    with pytest.raises(kvmath.KvMathError, match="DeepSeek-V3 only"):
        kvmath.derive(KIMI, engine="llama.cpp", max_ctx=4096, build="pre-v-less")
    # transformers: conv_states [B, 3*32*128, 4] bf16, recurrent_states [B, 32, 128, 128] fp32
    t = kvmath.derive(KIMI, engine="transformers", max_ctx=4096)
    _, shapes = state(t, "kda")
    assert shapes == {"conv_states": ((12288, 4), "bfloat16"), "recurrent_states": ((32, 128, 128), "float32")}
    assert t.state_bytes_per_seq == 20 * (12288 * 4 * 2 + 32 * 128 * 128 * 4) == 43_909_120


def test_nemotron_nano_mamba2_per_engine():
    # 23 M (Mamba-2: 64 heads x 64, d_state 128, 8 groups, conv 4), 6 * (2 KV heads x 128), 23 E (no cache)
    v = kvmath.derive(NANO, engine="vllm", max_ctx=8192, enable_prefix_caching=False)
    assert [g.n_layers for g in v.groups if g.kind == "none"] == [23]
    assert v.bytes_per_token == 6 * 2 * 128 * 2 * 2 == 6144
    # mamba2_state_shape: conv (K-1, 64*64 + 2*8*128 = 6144) bf16; temporal (64, 64, 128) in the config's
    # mamba_ssm_cache_dtype float32 (NemotronHForCausalLMConfig)
    g, shapes = state(v, "mamba2")
    assert g.n_layers == 23
    assert shapes == {"conv": ((3, 6144), "bfloat16"), "temporal": ((64, 64, 128), "float32")}
    assert sum(t.nbytes for t in g.state) == 3 * 6144 * 2 + 64 * 64 * 128 * 4 == 2_134_016
    # attention 2 x 128 x 2 x 2 = 1,024 B/token -> block 16 * ceil(2134016 / 16384) = 2096; one block per request
    assert v.state_bytes_per_seq == 23 * 2096 * 1024
    # prefix caching on: NemotronH implements SupportsMambaPrefixCaching, so mamba_cache_mode is "all" and the
    # block aligns to the SSD chunk (platforms/interface.py _align_hybrid_block_size, 0.24.0):
    # chunk = lcm(chunk_size 128, 16) = 128; ceil(2,134,016 / 1,024) = 2,084 tokens per state -> block
    # 128 * ceil(2084 / 128) = 2,176; "all" holds ceil(8192 / 2176) = 4 blocks per request per layer
    on = kvmath.derive(NANO, engine="vllm", max_ctx=8192)
    assert on.allocation.mamba_cache_mode == "all" and on.allocation.block_size == 2176
    assert on.state_bytes_per_seq == 23 * 4 * 2176 * 1024
    _, shapes = state(kvmath.derive(NANO, engine="vllm", max_ctx=8192, tp=4, enable_prefix_caching=False), "mamba2")
    assert shapes == {"conv": ((3, 6144 // 4), "bfloat16"), "temporal": ((16, 64, 128), "float32")}
    # MambaMixer2: n_groups % tp == 0 or n_groups == 1
    with pytest.raises(kvmath.KvMathError, match="n_groups 8"):
        kvmath.derive(NANO, engine="vllm", max_ctx=8192, tp=16, enable_prefix_caching=False)
    # llama.cpp: r = (d_conv-1)*(d_inner + 2*n_group*d_state), s = d_state*d_inner, f32
    c = kvmath.derive(NANO, engine="llama.cpp", max_ctx=8192)
    _, shapes = state(c, "mamba2")
    assert shapes == {"r": ((3 * 6144,), "float32"), "s": ((128 * 4096,), "float32")}
    assert c.state_bytes_per_seq == 23 * 4 * (18432 + 524288) == 49_930_240
    # transformers: conv_states [B, 6144, 4] bf16, recurrent_states [B, 64, 64, 128] fp32
    t = kvmath.derive(NANO, engine="transformers", max_ctx=8192)
    _, shapes = state(t, "mamba2")
    assert shapes == {"conv_states": ((6144, 4), "bfloat16"), "recurrent_states": ((64, 64, 128), "float32")}


def test_nemotron_56b_vllm_defaults_ssm_state_to_float32_without_a_config_dtype():
    # no mamba_ssm_cache_dtype in the 56B config: DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"
    v = kvmath.derive(NEMO56, engine="vllm", max_ctx=8192, enable_prefix_caching=False)
    g, shapes = state(v, "mamba2")
    conv_dim = 256 * 64 + 2 * 8 * 256  # 20480
    assert shapes == {"conv": ((3, conv_dim), "bfloat16"), "temporal": ((256, 64, 256), "float32")}
    g_state = 3 * conv_dim * 2 + 256 * 64 * 256 * 4  # 16,900,096 B
    assert sum(t.nbytes for t in g.state) == g_state
    # attention 8 KV heads x 128 x 2 x 2 = 4,096 B/token -> block 16 * ceil(g_state / 65536) = 4128 tokens;
    # one padded page of 4128 * 4096 B per request (mode "none")
    assert v.state_bytes_per_seq == 54 * 4128 * 4096
    half = kvmath.derive(NEMO56, engine="vllm", max_ctx=8192, mamba_ssm_cache_dtype="bfloat16",
                          enable_prefix_caching=False)
    assert state(half, "mamba2")[1]["temporal"][1] == "bfloat16"
    # 10 attention layers x 8 KV heads x attention_head_dim 128, K and V, bf16; 54 MLP blocks hold nothing
    assert v.bytes_per_token == 10 * 8 * 128 * 2 * 2
    assert sum(g.n_layers for g in v.groups if g.kind == "none") == 54


def test_vllm_mamba2_pads_a_single_group_to_tp():
    # extra_groups_for_head_shards(1, 4) = 3: conv_dim = 8*64 + 2*4*16 = 640, split over 4 ranks
    cfg = {"model_type": "nemotron_h", "hybrid_override_pattern": "M*", "num_attention_heads": 8,
           "num_key_value_heads": 4, "head_dim": 64, "mamba_num_heads": 8, "mamba_head_dim": 64,
           "ssm_state_size": 16, "n_groups": 1, "conv_kernel": 4, "dtype": "bfloat16"}
    _, shapes = state(kvmath.derive(cfg, engine="vllm", tp=4, max_ctx=64, enable_prefix_caching=False), "mamba2")
    assert shapes["conv"][0] == (3, (8 * 64 + 2 * 4 * 16) // 4)
    _, shapes = state(kvmath.derive(cfg, engine="vllm", tp=1, max_ctx=64, enable_prefix_caching=False), "mamba2")
    assert shapes["conv"][0] == (3, 8 * 64 + 2 * 1 * 16)


def test_sliding_window_forms():
    # Mistral: window on every layer; vLLM SlidingWindowSpec (ceil(min(W-1+T_b, L)/B) + 1) blocks
    m = kvmath.derive(SHARED / "mistralai__Mistral-7B-v0.1.json", engine="vllm", max_ctx=32768)
    (g,) = m.groups
    assert (g.layer_type, g.n_layers) == ("sliding_attention", 32)
    assert g.cells == (math.ceil((4096 - 1 + 2048) / 16) + 1) * 16
    # gpt-oss: layer_types alternate, sliding first; without layer_types GptOssConfig builds the same
    cfg = json.loads((SHARED / "openai__gpt-oss-20b.json").read_text())
    a = kvmath.load_architecture(cfg)
    assert [l.index for l in a.layers_of("sliding_attention")] == list(range(0, 24, 2))
    del cfg["layer_types"]
    assert kvmath.load_architecture(cfg).layers == a.layers
    # Gemma 2: no layer_types; Gemma2Config: even index sliding
    g2 = kvmath.load_architecture(SHARED / "google__gemma-2-9b.json")
    assert [l.index for l in g2.layers_of("sliding_attention")] == list(range(0, 42, 2))
    # Qwen 2.5 / Qwen 3: use_sliding_window false, so sliding_window 131072 is ignored
    for f in ("Qwen__Qwen2.5-7B.json", "Qwen__Qwen3-32B.json"):
        assert kvmath.load_architecture(SHARED / f).layer_type_counts().keys() == {"full_attention"}


def test_llamacpp_runs_mistral_7b_without_its_window():
    # conversion/llama.py (MistralForCausalLM -> LlamaModel) writes no sliding_window and
    # src/models/llama.cpp reads none: llama.cpp caches every layer in full (issues #3371, #3377),
    # while vLLM and transformers keep the 4096-token window.
    f = SHARED / "mistralai__Mistral-7B-v0.1.json"
    c = kvmath.derive(f, engine="llama.cpp", max_ctx=32768)
    (g,) = c.groups
    assert (g.layer_type, g.cells, g.n_layers) == ("full_attention", 32768, 32)
    assert c.bytes_per_token == 32 * 8 * 128 * 2 * 2 and "not applied by llama.cpp" in g.description
    (t,) = kvmath.derive(f, engine="transformers", max_ctx=32768).groups
    assert (t.layer_type, t.cells) == ("sliding_attention", 4095)
    # gpt-oss keeps its window in llama.cpp (conversion/gpt_oss.py writes sliding_window): iSWA sizing
    o = kvmath.derive(SHARED / "openai__gpt-oss-20b.json", engine="llama.cpp", max_ctx=32768)
    assert group(o, "sliding_attention").cells == 768  # GGML_PAD(128 + 512, 256)


@pytest.mark.parametrize("kwargs,match", [
    ({"engine": None}, "engine must be a name"),
    ({"kv_format": 5}, "name"),
    ({"swa_full": "no", "engine": "llama.cpp"}, "True or False"),
    ({"max_ctx_len": 4096}, "unknown vllm setting"),
])
def test_api_bad_arguments_are_kvmath_errors(kwargs, match):
    with pytest.raises(kvmath.KvMathError, match=match):
        kvmath.derive("gemma-4-31b", **{"max_ctx": 1024, **kwargs})


def test_fmt_bytes_refuses_nan():
    with pytest.raises(kvmath.KvMathError, match="finite"):
        kvmath.fmt_bytes(float("nan"))


def test_registry_first_words_match_the_engines_programs():
    # the front door imports only the engines whose registry words start the pasted line
    from kvmath.engines import ENGINES, REGISTRY, engine_for_launch

    for name, (_, _, words) in REGISTRY.items():
        assert {p[0] for p in ENGINES[name].programs} == set(words), name
    assert engine_for_launch(["vllm", "serve", "x"])[0].name == "vllm"
    assert engine_for_launch(["llama-server", "-m", "x"]) == (ENGINES["llama.cpp"], 1)
    assert engine_for_launch(["--model", "x"]) is None and engine_for_launch([]) is None
