"""GGUF input: small files written here with gguf's GGUFWriter are read back into the architecture
and the weight bytes that were written.

Key names and their meaning follow llama.cpp (src/llama-model.cpp load_hparams, src/models/gemma4.cpp,
src/models/qwen35moe.cpp at 0c1e570); the byte counts are those of the arrays handed to the writer.
"""

from __future__ import annotations

import numpy as np
import pytest

import gguf

import kvmath
from kvmath import KvMathError
from kvmath.model.gguf import (
    EXPERT_REGEX,
    gguf_to_hf_config,
    gguf_weight_bytes,
    load_gguf_architecture,
    read_gguf,
    read_metadata,
    weight_bytes,
)
from kvmath.engines.llamacpp.memory import llamacpp_memory


class Writer:
    """GGUFWriter plus a ledger of the bytes written per tensor."""

    def __init__(self, path, arch):
        self.path = path
        self.w = gguf.GGUFWriter(str(path), arch)
        self.bytes: dict[str, int] = {}

    def f16(self, name, *shape):
        a = np.zeros(shape[::-1], dtype=np.float16)  # gguf shapes are written innermost-first
        self.w.add_tensor(name, a)
        self.bytes[name] = a.nbytes

    def q8_0(self, name, *shape):
        assert shape[0] % 32 == 0
        # byte-shaped rows: block_q8_0 = fp16 scale + 32 int8 = 34 bytes per 32 elements
        raw = np.zeros((*shape[1:][::-1], shape[0] // 32 * 34), dtype=np.uint8)
        self.w.add_tensor(name, raw, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        self.bytes[name] = raw.nbytes

    def close(self):
        self.w.write_header_to_file()
        self.w.write_kv_data_to_file()
        self.w.write_tensors_to_file()
        self.w.close()
        return self.path


def _block_attn(w, i, n_embd, heads, kv, hd, v=True):
    w.f16(f"blk.{i}.attn_norm.weight", n_embd)
    w.f16(f"blk.{i}.attn_q.weight", n_embd, heads * hd)
    w.f16(f"blk.{i}.attn_k.weight", n_embd, kv * hd)
    if v:
        w.f16(f"blk.{i}.attn_v.weight", n_embd, kv * hd)
    w.f16(f"blk.{i}.attn_output.weight", heads * hd, n_embd)


@pytest.fixture
def llama_gguf(tmp_path):
    """A llama-style GQA model: 4 layers, 8 heads of 64, 2 KV heads, dense MLP, untied output."""
    w = Writer(tmp_path / "tiny-llama.gguf", "llama")
    w.w.add_block_count(4)
    w.w.add_context_length(4096)
    w.w.add_embedding_length(128)
    w.w.add_feed_forward_length(96)
    w.w.add_head_count(8)
    w.w.add_head_count_kv(2)
    w.w.add_key_length(64)
    w.w.add_value_length(64)
    w.w.add_vocab_size(32)
    w.f16("token_embd.weight", 128, 32)
    for i in range(4):
        _block_attn(w, i, 128, 8, 2, 64)
        w.f16(f"blk.{i}.ffn_norm.weight", 128)
        w.f16(f"blk.{i}.ffn_gate.weight", 128, 96)
        w.f16(f"blk.{i}.ffn_up.weight", 128, 96)
        w.f16(f"blk.{i}.ffn_down.weight", 96, 128)
    w.f16("output_norm.weight", 128)
    w.f16("output.weight", 128, 32)
    return w.close(), w.bytes


SWA_PATTERN = [True] * 5 + [False] + [True] * 5 + [False]


@pytest.fixture
def gemma_gguf(tmp_path):
    """A Gemma 4 style iSWA MoE model: 12 layers, 5 sliding (8 KV heads x 256) then 1 full (2 x 512),
    per-layer head_count_kv array, K=V on full layers (no attn_v), routed experts in q8_0, tied output."""
    w = Writer(tmp_path / "tiny-gemma4.gguf", "gemma4")
    kv = [8 if s else 2 for s in SWA_PATTERN]
    w.w.add_block_count(12)
    w.w.add_context_length(262144)
    w.w.add_embedding_length(64)
    w.w.add_feed_forward_length(64)
    w.w.add_head_count(16)
    w.w.add_head_count_kv(kv)
    w.w.add_key_length(512)
    w.w.add_value_length(512)
    w.w.add_key_length_swa(256)
    w.w.add_value_length_swa(256)
    w.w.add_sliding_window(1024)
    w.w.add_sliding_window_pattern(SWA_PATTERN)
    w.w.add_shared_kv_layers(0)
    w.w.add_expert_count(4)
    w.w.add_expert_used_count(2)
    w.w.add_expert_feed_forward_length(32)
    w.w.add_vocab_size(64)
    w.f16("token_embd.weight", 64, 64)
    for i, s in enumerate(SWA_PATTERN):
        hd = 256 if s else 512
        _block_attn(w, i, 64, 16, kv[i], hd, v=s)
        w.f16(f"blk.{i}.ffn_gate_inp.weight", 64, 4)
        w.q8_0(f"blk.{i}.ffn_gate_up_exps.weight", 64, 64, 4)
        w.q8_0(f"blk.{i}.ffn_down_exps.weight", 32, 64, 4)
        w.f16(f"blk.{i}.ffn_gate.weight", 64, 64)
    w.f16("output_norm.weight", 64)
    return w.close(), w.bytes


QWEN_TYPES = ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"]


@pytest.fixture
def qwen_gguf(tmp_path):
    """A Qwen3-Next / Qwen 3.5 style hybrid: 8 layers (full every 4th), Gated DeltaNet with 4 key heads,
    8 value heads of 32, conv kernel 4, experts, plus one MTP (nextn) block at the end."""
    w = Writer(tmp_path / "tiny-qwen35moe.gguf", "qwen35moe")
    w.w.add_block_count(9)
    w.w.add_nextn_predict_layers(1)
    w.w.add_context_length(262144)
    w.w.add_embedding_length(64)
    w.w.add_head_count(8)
    w.w.add_head_count_kv(2)
    w.w.add_key_length(64)
    w.w.add_value_length(64)
    w.w.add_ssm_conv_kernel(4)
    w.w.add_ssm_state_size(32)
    w.w.add_ssm_group_count(4)
    w.w.add_ssm_time_step_rank(8)
    w.w.add_ssm_inner_size(8 * 32)
    w.w.add_full_attention_interval(4)
    w.w.add_expert_count(4)
    w.w.add_expert_used_count(2)
    w.w.add_expert_feed_forward_length(32)
    w.w.add_vocab_size(64)
    w.f16("token_embd.weight", 64, 64)
    conv_dim = 2 * 4 * 32 + 8 * 32
    for i in range(9):
        t = QWEN_TYPES[i] if i < 8 else "full_attention"
        if t == "full_attention":
            _block_attn(w, i, 64, 8, 2, 64)
        else:
            w.f16(f"blk.{i}.attn_norm.weight", 64)
            w.f16(f"blk.{i}.attn_qkv.weight", 64, conv_dim)
            w.f16(f"blk.{i}.attn_gate.weight", 64, 8 * 32)
            w.f16(f"blk.{i}.ssm_conv1d.weight", 4, conv_dim)
            w.f16(f"blk.{i}.ssm_out.weight", 8 * 32, 64)
        w.q8_0(f"blk.{i}.ffn_gate_exps.weight", 64, 32, 4)
        w.q8_0(f"blk.{i}.ffn_up_exps.weight", 64, 32, 4)
        w.q8_0(f"blk.{i}.ffn_down_exps.weight", 32, 64, 4)
        w.f16(f"blk.{i}.ffn_up_shexp.weight", 64, 32)
    w.f16("output_norm.weight", 64)
    w.f16("output.weight", 64, 64)
    return w.close(), w.bytes


def _sum(ledger, pred):
    return sum(v for k, v in ledger.items() if pred(k))


def test_llama_gqa_architecture_and_weights(llama_gguf):
    path, ledger = llama_gguf
    g = read_gguf(path)
    a = g.architecture
    assert g.gguf_arch == "llama" and a.model_type == "llama"
    assert a.num_hidden_layers == 4 and a.num_attention_heads == 8 and a.max_position_embeddings == 4096
    assert {(l.layer_type, l.num_kv_heads, l.head_dim, l.v_head_dim) for l in a.layers} == {("full_attention", 2, 64, 64)}
    w = g.weights
    assert w.total == sum(ledger.values())
    assert w.input == ledger["token_embd.weight"]
    assert w.attention == _sum(ledger, lambda k: ".attn_" in k)
    assert w.experts == 0 and w.mtp == 0 and w.output_bytes == 0  # untied: output.weight is in the file
    assert w.other == sum(ledger.values()) - w.input - w.attention
    # kvmath's derive sees the same model as its config would describe
    d = kvmath.derive(a, engine="llama.cpp", kv_format="f16", max_ctx=4096)
    assert d.bytes_per_token == 4 * 2 * (64 * 2 + 64 * 2)


def test_gemma_iswa_per_layer_kv_heads(gemma_gguf):
    path, ledger = gemma_gguf
    g = read_gguf(path)
    a = g.architecture
    assert a.model_type == "gemma4_text" and a.num_hidden_layers == 12
    assert [l.layer_type == "sliding_attention" for l in a.layers] == SWA_PATTERN
    sliding = {(l.num_kv_heads, l.head_dim, l.sliding_window) for l in a.layers_of("sliding_attention")}
    full = {(l.num_kv_heads, l.head_dim, l.k_eq_v) for l in a.layers_of("full_attention")}
    assert sliding == {(8, 256, 1024)} and full == {(2, 512, True)}
    assert g.config["num_global_key_value_heads"] == 2 and g.config["global_head_dim"] == 512
    w = g.weights
    assert w.total == sum(ledger.values())
    assert w.experts == _sum(ledger, lambda k: "_exps" in k)
    assert w.experts_per_block == tuple(_sum(ledger, lambda k, i=i: k.startswith(f"blk.{i}.") and "_exps" in k)
                                        for i in range(12))
    # tied output: llama.cpp loads token_embd a second time for the output layer
    assert w.output_bytes == ledger["token_embd.weight"]
    gpu, ram = w.split(5)
    assert ram == ledger["token_embd.weight"] + sum(w.experts_per_block[:5])
    assert gpu + ram == w.total + w.output_bytes
    assert w.split(0, cpu_moe=True)[1] == w.input + w.experts


def test_qwen_hybrid_ssm_fields_and_mtp(qwen_gguf):
    path, ledger = qwen_gguf
    g = read_gguf(path)
    a = g.architecture
    assert a.model_type == "qwen3_5_moe_text"
    assert a.num_hidden_layers == 8 and a.mtp_num_hidden_layers == 1  # block_count 9 = 8 + 1 nextn
    assert [l.layer_type for l in a.layers] == QWEN_TYPES
    gdn = a.linear_layers()[0]
    assert (gdn.num_k_heads, gdn.num_v_heads, gdn.k_head_dim, gdn.v_head_dim, gdn.conv_kernel) == (4, 8, 32, 32, 4)
    assert {(l.num_kv_heads, l.head_dim) for l in a.attention_layers()} == {(2, 64)}
    w = g.weights
    assert w.mtp == _sum(ledger, lambda k: k.startswith("blk.8."))
    assert w.n_blocks == 8 and w.total == sum(ledger.values())
    assert w.attention == _sum(ledger, lambda k: not k.startswith("blk.8.") and (".attn_" in k or ".ssm_" in k))
    # the recurrent state llama.cpp allocates from these fields (llama-hparams.cpp n_embd_r / n_embd_s)
    m = llamacpp_memory(path, n_ctx=4096)
    assert m.recurrent.r_width == (4 - 1) * (8 * 32 + 2 * 4 * 32)
    assert m.recurrent.s_width == 32 * 8 * 32
    assert m.recurrent.layers == tuple(l.index for l in a.linear_layers())


def test_metadata_and_shortcuts(qwen_gguf):
    path, _ = qwen_gguf
    meta = read_metadata(path)
    assert meta["general.architecture"] == "qwen35moe" and meta["qwen35moe.ssm.state_size"] == 32
    assert load_gguf_architecture(path).layers == read_gguf(path).architecture.layers
    assert gguf_weight_bytes(path) == read_gguf(path).weights


def test_expert_regex_is_llama_cpp_s():
    # common/common.h LLM_FFN_EXPS_REGEX, as --n-cpu-moe applies it to "blk.N" + regex
    for name in ("blk.3.ffn_up_exps.weight", "blk.3.ffn_down_exps.scale", "blk.3.ffn_gate_up_exps.weight",
                 "blk.3.ffn_gate_chexps.weight"):
        assert EXPERT_REGEX.search(name)
    for name in ("blk.3.ffn_up_shexp.weight", "blk.3.ffn_gate_inp.weight", "blk.3.ffn_up.weight"):
        assert not EXPERT_REGEX.search(name)
    w = weight_bytes([("blk.0.ffn_up_exps.weight", 10), ("blk.1.ffn_up_exps.weight", 20), ("output.weight", 5)])
    assert w.experts_per_block == (10, 20) and w.split(1) == (25, 10)


def test_unsupported_and_bad_files(tmp_path):
    w = gguf.GGUFWriter(str(tmp_path / "ds.gguf"), "deepseek2")
    w.add_block_count(2)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    with pytest.raises(KvMathError, match="deepseek2.*not supported.*supported GGUF architectures: .*gemma4"):
        read_gguf(tmp_path / "ds.gguf")
    with pytest.raises(KvMathError, match="no such .gguf file"):
        read_gguf(tmp_path / "missing.gguf")
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf at all")
    with pytest.raises(KvMathError, match="not a readable GGUF"):
        read_gguf(tmp_path / "junk.gguf")


def test_config_translation_errors():
    base = {"general.architecture": "gemma4", "gemma4.block_count": 2, "gemma4.embedding_length": 64,
            "gemma4.attention.head_count": 4, "gemma4.attention.key_length": 128, "gemma4.attention.value_length": 128,
            "gemma4.attention.sliding_window": 512, "gemma4.attention.sliding_window_pattern": [True, True],
            "gemma4.attention.head_count_kv": [2, 4]}
    with pytest.raises(KvMathError, match="varies within one layer type"):
        gguf_to_hf_config(base)
    with pytest.raises(KvMathError, match="missing gemma4.attention.sliding_window_pattern"):
        gguf_to_hf_config({k: v for k, v in base.items() if "pattern" not in k})
    llama = {"general.architecture": "llama", "llama.block_count": 2, "llama.embedding_length": 64,
             "llama.attention.head_count": 4, "llama.attention.head_count_kv": [1, 2]}
    with pytest.raises(KvMathError, match="per-layer attention.head_count_kv"):
        gguf_to_hf_config(llama)
    with pytest.raises(KvMathError, match="no general.architecture"):
        gguf_to_hf_config({})
    # scalar defaults as llama.cpp: head_count_kv = head_count, key_length = embedding_length / head_count
    cfg = gguf_to_hf_config({k: v for k, v in llama.items() if "kv" not in k})
    assert cfg["num_key_value_heads"] == 4 and cfg["head_dim"] == 16


# ---------------------------------------------------------------------------------------------------
# the bounded header reader (kvmath.model.gguf.read_header) and the checks after translation


def test_bounded_reader_matches_gguf_reader(llama_gguf, gemma_gguf, qwen_gguf):
    from kvmath.model.gguf import read_header

    for path, _ in (llama_gguf, gemma_gguf, qwen_gguf):
        h = read_header(path)
        old = gguf.GGUFReader(str(path))
        assert h.data_offset == old.data_offset and h.alignment == old.alignment
        assert [(t.name, t.shape, t.tensor_type, t.n_elements, t.n_bytes, t.data_offset) for t in h.tensors] == [
            (t.name, tuple(t.shape.tolist()), t.tensor_type, t.n_elements, t.n_bytes, t.data_offset)
            for t in old.tensors]
        assert h.metadata == {k: f.contents() for k, f in old.fields.items()}


def test_big_endian_file_reads_like_little_endian(tmp_path):
    def write(name, endian):
        w = gguf.GGUFWriter(str(tmp_path / name), "llama", endianess=endian)
        for k, v in (("block_count", 2), ("embedding_length", 64), ("attention.head_count", 4),
                     ("attention.head_count_kv", 2), ("context_length", 2048)):
            w.add_uint32(f"llama.{k}", v)
        w.add_tensor("token_embd.weight", np.zeros((8, 64), dtype=np.float16))
        w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
        return read_gguf(tmp_path / name)

    le, be = write("le.gguf", gguf.GGUFEndian.LITTLE), write("be.gguf", gguf.GGUFEndian.BIG)
    assert be.architecture.layers == le.architecture.layers and be.weights.total == le.weights.total == 8 * 64 * 2


def test_long_arrays_and_vocabularies_are_not_materialised(tmp_path):
    from kvmath.model.gguf import MAX_ARRAY_ITEMS, UnreadValue

    w = gguf.GGUFWriter(str(tmp_path / "v.gguf"), "llama")
    w.add_token_list([f"t{i}" for i in range(1000)])
    w.add_array("general.big", [1] * (MAX_ARRAY_ITEMS + 1))
    w.add_tokenizer_model("llama")
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    meta = read_metadata(tmp_path / "v.gguf")
    assert "tokenizer.ggml.tokens" not in meta and meta["tokenizer.ggml.model"] == "llama"
    assert isinstance(meta["general.big"], UnreadValue) and len(meta["general.big"]) == MAX_ARRAY_ITEMS + 1


def test_truncated_and_corrupt_headers_are_refused(llama_gguf, tmp_path):
    path, _ = llama_gguf
    data = path.read_bytes()
    bad = tmp_path / "bad.gguf"
    for cut in (0, 3, 10, 30, 200, len(data) - 1):
        bad.write_bytes(data[:cut])
        with pytest.raises(KvMathError, match="not a readable GGUF file"):
            read_gguf(bad)
    bad.write_bytes(data[:8] + (2**64 - 1).to_bytes(8, "little") + data[16:])  # tensor count
    with pytest.raises(KvMathError, match="tensor count 18,446,744,073,709,551,615 does not fit"):
        read_gguf(bad)
    bad.write_bytes(data[:4] + (7).to_bytes(4, "little") + data[8:])
    with pytest.raises(KvMathError, match="GGUF version 7 is not supported"):
        read_gguf(bad)


@pytest.mark.parametrize("key, value, message", [
    ("llama.attention.head_count", 0, r"llama.attention.head_count must be an integer in \[1, "),
    ("llama.block_count", 2**32 - 1, r"llama.block_count must be an integer in \[1, 512\]"),
    ("llama.block_count", 513, r"llama.block_count must be an integer in \[1, 512\]"),
    ("llama.block_count", 0, r"llama.block_count must be an integer in \[1, "),
    ("llama.embedding_length", -64, r"llama.embedding_length must be an integer in \[1, "),
    ("llama.attention.head_count", [4, 4, 4], r"llama.attention.head_count has 3 entries, block_count is 2"),
    ("llama.attention.head_count_kv", 0, r"llama.attention.head_count_kv must be >= 1"),
    ("llama.attention.key_length", float("nan"), r"llama.attention.key_length must be an integer"),
    ("llama.context_length", "4096", r"llama.context_length must be an integer"),
])
def test_translated_values_are_range_checked(key, value, message):
    meta = {"general.architecture": "llama", "llama.block_count": 2, "llama.embedding_length": 64,
            "llama.attention.head_count": 4, key: value}
    with pytest.raises(KvMathError, match=message):
        gguf_to_hf_config(meta)


def test_hybrid_and_gemma4_values_are_range_checked():
    qwen = {"general.architecture": "qwen35", "qwen35.block_count": 4, "qwen35.embedding_length": 64,
            "qwen35.attention.head_count": 4, "qwen35.attention.head_count_kv": 2, "qwen35.ssm.state_size": 16,
            "qwen35.ssm.group_count": 2, "qwen35.ssm.time_step_rank": 4, "qwen35.ssm.inner_size": 64,
            "qwen35.ssm.conv_kernel": 4}
    assert gguf_to_hf_config(qwen)["layer_types"][3] == "full_attention"
    with pytest.raises(KvMathError, match=r"qwen35.full_attention_interval must be an integer in \[1, "):
        gguf_to_hf_config({**qwen, "qwen35.full_attention_interval": 0})
    with pytest.raises(KvMathError, match="qwen35.attention.recurrent_layers must list booleans"):
        gguf_to_hf_config({**qwen, "qwen35.attention.recurrent_layers": ["yes"] * 4})
    with pytest.raises(KvMathError, match="head width of 0"):
        gguf_to_hf_config({**qwen, "qwen35.embedding_length": 3, "qwen35.attention.key_length": 16})
    gemma = {"general.architecture": "gemma4", "gemma4.block_count": 2, "gemma4.embedding_length": 64,
             "gemma4.attention.head_count": 4, "gemma4.attention.key_length": 128,
             "gemma4.attention.value_length": 128, "gemma4.attention.sliding_window": 512,
             "gemma4.attention.sliding_window_pattern": [True, False], "gemma4.attention.head_count_kv": 2}
    with pytest.raises(KvMathError, match="sliding_window_pattern must list booleans"):
        gguf_to_hf_config({**gemma, "gemma4.attention.sliding_window_pattern": [0.5, 2]})
    with pytest.raises(KvMathError, match=r"gemma4.attention.sliding_window must be an integer in \[1, "):
        gguf_to_hf_config({**gemma, "gemma4.attention.sliding_window": 0})
