"""KV formats: bytes per row checked against block layouts written out from their sources."""

import pytest

import kvmath
from kvmath import llamacpp_type, vllm_format, llamacpp_format, all_formats


# ggml-common.h block structs (ggml/src/ggml-common.h): QK = 32 elements per block.
#   block_q8_0 { ggml_half d; int8_t qs[32]; }                 -> 2 + 32      = 34 B
#   block_q4_0 { ggml_half d; uint8_t qs[16]; }                -> 2 + 16      = 18 B
#   block_q4_1 { ggml_half d, m; uint8_t qs[16]; }             -> 4 + 16      = 20 B
#   block_q5_0 { ggml_half d; uint8_t qh[4]; uint8_t qs[16]; } -> 2 + 4 + 16  = 22 B
#   block_q5_1 { ggml_half d, m; uint8_t qh[4]; qs[16]; }      -> 4 + 4 + 16  = 24 B
#   block_iq4_nl { ggml_half d; uint8_t qs[16]; }              -> 18 B
GGML_BLOCK_BYTES = {"q8_0": 34, "q4_0": 18, "q4_1": 20, "q5_0": 22, "q5_1": 24, "iq4_nl": 18}


@pytest.mark.parametrize("name,block_bytes", sorted(GGML_BLOCK_BYTES.items()))
def test_ggml_quantised_row_bytes_match_struct_layout(name, block_bytes):
    # One token of a layer with 4 KV heads of 256: a row of 1024 elements = 32 blocks.
    assert llamacpp_type(name).row_bytes(4, 256) == 32 * block_bytes


@pytest.mark.parametrize("name,size", [("f32", 4), ("f16", 2), ("bf16", 2)])
def test_ggml_float_types(name, size):
    assert llamacpp_type(name).row_bytes(8, 128) == 8 * 128 * size


def test_ggml_refuses_partial_block():
    # Kimi Linear's MLA-less layers have head_dim 72: 1 head x 72 is not a whole number of 32-blocks.
    with pytest.raises(kvmath.KvMathError, match="blocks of 32"):
        llamacpp_type("q8_0").row_bytes(1, 72)


def test_turbo_fork_blocks_and_padding():
    # TheTom fork ggml-common.h static_asserts: turbo3 = 2 + QK/4 + QK/8 with QK=128 -> 50 B;
    # turbo4 = 2 + 64 = 66 B; turbo2 = 2 + 32 = 34 B. Heads are zero-padded to 128.
    assert llamacpp_type("turbo3").row_bytes(2, 256) == 2 * 2 * 50
    assert llamacpp_type("turbo4").row_bytes(1, 128) == 66
    assert llamacpp_type("turbo2").row_bytes(1, 96) == 34  # 96 padded to 128


def test_vllm_per_token_head_scales():
    # int8 per token-head: D int8 values + one fp32 scale, for K and again for V (PR #40391):
    # D=256 -> (256 + 4) * 2 = 520 B per head; D=512 -> 1032 B.
    f = vllm_format("int8_per_token_head")
    assert f.token_bytes(1, 256, 256) == 520
    assert f.token_bytes(1, 512, 512) == 1032


def test_vllm_nvfp4():
    # nvfp4_kv_cache_full_dim(D) = D//2 + D//16: D=128 -> 72 B per head for K, same for V.
    assert vllm_format("nvfp4").token_bytes(1, 128, 128) == 144


@pytest.mark.parametrize("name,slot", [
    # tq_slot_size at head_size 128, as listed for vLLM v0.20+ TurboQuant presets.
    ("turboquant_k8v4", 196), ("turboquant_4bit_nc", 134), ("turboquant_k3v4_nc", 118), ("turboquant_3bit_nc", 102),
])
def test_vllm_turboquant_slot_sizes(name, slot):
    assert vllm_format(name).token_bytes(1, 128, 128) == slot


def test_vllm_aliases_and_rejections():
    assert vllm_format("fp8").name == "fp8_e4m3"
    assert vllm_format("k8v4").name == "turboquant_k8v4"
    with pytest.raises(kvmath.KvMathError, match="llama.cpp cache type"):
        vllm_format("q4_0")
    with pytest.raises(kvmath.KvMathError, match="valid: bf16"):
        vllm_format("fp6")


def test_llamacpp_k_and_v_separately():
    f = llamacpp_format("q8_0", "q4_0")
    assert f.token_bytes(2, 128, 128) == 8 * 34 + 8 * 18
    with pytest.raises(kvmath.KvMathError, match="valid: f32"):
        llamacpp_format("q3_k")


def test_every_format_names_a_source():
    for f in all_formats():
        assert f.source and f.k.source and f.v.source


def test_vllm_flag_values_are_vllms_spelling():
    # vllm/config/cache.py CacheDType: "bfloat16", "float16", "fp8_e5m2", ... (no "bf16")
    assert vllm_format("bf16").flag == "bfloat16"
    assert vllm_format("fp16").flag == "float16"
    assert vllm_format("fp8_e5m2").flag == "fp8_e5m2"
