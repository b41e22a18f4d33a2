"""kvmath.engines.llamacpp.memory against real llama.cpp, and its other rules against derivations from llama.cpp's source.

Real llama.cpp: ``tests/fixtures/llamacpp/llamacpp_fixtures.json`` holds the lines llama.cpp 0c1e570
(vendored in the llama-cpp-python 0.3.36 sdist) printed while it created the context for tiny GGUF
models with the real cache shapes of Gemma 4 26B-A4B and Qwen 3.6 35B-A3B and for a plain GQA llama,
under several flag sets (``regenerate.py`` rebuilds them; CI only reads the JSON). For every run the
architecture is read from the fixture's GGUF metadata the way ``kvmath.model.gguf`` reads a file, and
kvmath's rendering of the cache lines must equal llama.cpp's, character for character (the MiB
figures are printed with 2 decimals, so bytes are compared to that rounding; the parameters echoed by
llama_context are compared exactly).

Rules the fixtures do not reach (other builds, MLA, the TurboQuant fork) are checked against
derivations typed out here, each citing the source line it follows.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

import kvmath
from kvmath import KvMathError
from kvmath.model.specs import Architecture, AttentionLayer
from kvmath.model.gguf import gguf_to_hf_config, weight_bytes
from kvmath.engines.llamacpp.memory import BUILDS, FORKS, TURBO_ROTATION_BYTES, _f32_mib, llamacpp_memory

FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "llamacpp" / "llamacpp_fixtures.json").read_text())
MODELS = FIXTURES["models"]
PREFIX = re.compile(r"^\S+ [DIWE] ")  # common/log.cpp timestamp + level, e.g. "0.00.141.754 D "
CACHE_LINE = re.compile(r"^(llama_kv_cache_iswa: (creating|using full-size)|llama_kv_cache: (size =|\s*\S+ KV buffer)|"
                        r"llama_memory_recurrent: )")
MiB = 2**20


def _runs():
    for name, model in MODELS.items():
        for i, run in enumerate(model["runs"]):
            yield pytest.param(name, i, id=f"{name}[{run['tool']} {' '.join(run['flags'])}]")


def _arch(name):
    m = MODELS[name]
    cfg = gguf_to_hf_config(m["gguf_metadata"], tensor_names={t["name"] for t in m["tensors"]})
    return kvmath.load_architecture(cfg, name=name)


def _kwargs(flags):
    kw, it = {}, iter(flags)
    names = {"-c": "n_ctx", "-np": "n_parallel", "-ctk": "cache_type_k", "-ctv": "cache_type_v",
             "-fa": "flash_attn", "-ub": "n_ubatch", "-b": "n_batch"}
    for f in it:
        if f in names:
            v = next(it)
            kw[names[f]] = int(v) if names[f] in ("n_ctx", "n_parallel", "n_ubatch", "n_batch") else v
        elif f == "--swa-full":
            kw["swa_full"] = True
        elif f == "--kv-unified":
            kw["kv_unified"] = True
        else:  # pragma: no cover - a flag the fixtures gained without the test learning it
            raise AssertionError(f"unknown flag {f}")
    return kw


def _lines(run):
    return [PREFIX.sub("", l) for l in run["lines"]]


def _context_params(lines):
    out = {}
    for l in lines:
        m = re.match(r"llama_context: (\w+)\s+= (\S+)$", l)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_fixtures_name_their_build():
    lc = FIXTURES["llama_cpp"]
    assert lc["commit"].startswith("0c1e570")
    assert BUILDS["0c1e570"].source.startswith("llama.cpp 0c1e570")
    assert sum(len(m["runs"]) for m in MODELS.values()) >= 25


@pytest.mark.parametrize("name,i", list(_runs()))
def test_cache_lines_equal_real_llama_cpp(name, i):
    run = MODELS[name]["runs"][i]
    arch = _arch(name)
    kw = _kwargs(run["flags"])
    lines = _lines(run)
    if run["returncode"] != 0:
        # llama_init_from_model refused the flags: kvmath raises with llama.cpp's own message
        err = next(l for l in lines if "llama_init_from_model" in l).split(": ", 1)[1]
        with pytest.raises(KvMathError) as e:
            llamacpp_memory(arch, **kw)
        assert str(e.value) == err
        return
    mem = llamacpp_memory(arch, **kw)
    ours = mem.log_lines(buffers="CPU", no_alloc=True)
    theirs = [l for l in lines if CACHE_LINE.match(l)]
    assert len(theirs) >= 2 and ours == theirs
    p = _context_params(lines)
    assert int(p["n_ctx"]) == mem.n_ctx and int(p["n_ctx_seq"]) == mem.n_ctx_seq
    assert int(p["n_seq_max"]) == mem.n_seq_max
    assert int(p["n_batch"]) == mem.n_batch and int(p["n_ubatch"]) == mem.n_ubatch
    assert p["flash_attn"] == mem.flash_attn_type
    assert p["kv_unified"] == ("true" if mem.kv_unified else "false")
    # warnings llama.cpp prints about the allocation are kvmath notes
    for l in lines:
        if "padding V cache to" in l:
            assert any(l.split("llama_kv_cache: ")[1] == n for n in mem.notes)
        if "enabling flash_attn since it is required for quantized V cache" in l:
            assert mem.flash_attn and any("required for a quantized V cache" in n for n in mem.notes)


def test_fixture_architecture_is_the_real_models_cache_shape():
    # The tiny GGUFs keep every cache-shaping field of the real configs: their architectures read back
    # from the GGUF header equal those of the real config.json, layer for layer.
    for name, model_id in (("gemma4-26b-a4b-shape", "gemma-4-26b-a4b"), ("qwen3.6-35b-a3b-shape", "qwen3.6-35b-a3b")):
        assert _arch(name).layers == kvmath.load_architecture(model_id).layers
    gqa = _arch("llama-gqa")
    assert gqa.layers == kvmath.load_architecture(MODELS["llama-gqa"]["hf_config"]).layers


@pytest.mark.parametrize("name,model_id", [("gemma4-26b-a4b-shape", "gemma-4-26b-a4b"),
                                           ("qwen3.6-35b-a3b-shape", "qwen3.6-35b-a3b")])
def test_known_models_give_the_fixture_lines(name, model_id):
    # So the book's figures for the real models are the ones llama.cpp printed.
    for run in MODELS[name]["runs"]:
        if run["returncode"]:
            continue
        mem = llamacpp_memory(model_id, **_kwargs(run["flags"]))
        size_line = re.compile(r"^(llama_kv_cache|llama_memory_recurrent): size =")
        assert [l for l in mem.log_lines() if size_line.match(l)] == [l for l in _lines(run) if size_line.match(l)]


def test_fixture_tensor_tables():
    # gguf_input's split of a real converter's tensor table: experts are the ffn_*_exps tensors
    q = MODELS["qwen3.6-35b-a3b-shape"]
    w = weight_bytes([(t["name"], t["n_bytes"]) for t in q["tensors"]], n_layer=40)
    meta = q["gguf_metadata"]
    n_embd, n_exp, n_ff = (meta[f"qwen35moe.{k}"] for k in ("embedding_length", "expert_count", "expert_feed_forward_length"))
    assert w.experts_per_block == (3 * n_exp * n_embd * n_ff * 2,) * 40  # gate, up, down in f16
    assert w.total == sum(t["n_bytes"] for t in q["tensors"])
    g = MODELS["gemma4-26b-a4b-shape"]
    wg = weight_bytes([(t["name"], t["n_bytes"]) for t in g["tensors"]], n_layer=30)
    assert wg.output_bytes == next(t["n_bytes"] for t in g["tensors"] if t["name"] == "token_embd.weight")  # tied
    full_v = [t for t in g["tensors"] if re.match(r"blk\.(5|11|17|23|29)\.attn_v\.", t["name"])]
    assert full_v == []  # K=V full layers have no V projection, yet llama.cpp caches V (the fixtures' V MiB)


# ---------------------------------------------------------------------------------------------------
# consistency with kvmath.engines.LlamaCpp (the per-layer summary kvmath.derive uses)


@pytest.mark.parametrize("model", ["gemma-4-26b-a4b", "gemma-4-31b", "qwen3.6-35b-a3b", "qwen3.6-27b"])
@pytest.mark.parametrize("ctx,seqs,unified,fmt", [(262144, 1, False, "f16"), (100_000, 3, False, "q8_0"),
                                                  (32768, 4, True, "q4_0"), (1000, 2, False, "f16")])
def test_agrees_with_engines_llamacpp(model, ctx, seqs, unified, fmt):
    mem = llamacpp_memory(model, n_ctx=ctx * seqs, n_parallel=seqs, cache_type_k=fmt, cache_type_v=fmt,
                          kv_unified=unified)
    d = kvmath.derive(model, engine="llama.cpp", kv_format=fmt, max_ctx=ctx, max_num_seqs=seqs, kv_unified=unified)
    iswa = any(c.kind == "SWA" for c in mem.kv)
    for g in d.groups:
        if g.layer_type == "linear_attention":
            assert mem.recurrent.bytes == g.bytes and mem.recurrent.layers == g.layers
            continue
        cache = mem.cache("SWA" if g.layer_type == "sliding_attention" else ("non-SWA" if iswa else "kv"))
        assert (cache.cells, cache.n_stream) == (g.cells, g.streams)
        per_layer = {t.index: (t.k_bytes + t.v_bytes) // (cache.cells * cache.n_stream) for t in cache.layers}
        assert {per_layer[i] for i in g.layers} == {g.bytes_per_token}
    assert mem.total_bytes == d.total_bytes
    assert mem.bytes_per_token == d.bytes_per_token


SHARED = Path(__file__).resolve().parents[1] / "data" / "configs"  # the reference configs (data/configs/SOURCES.md)
OTHER_CONFIGS = ["deepseek-ai__DeepSeek-V3.json", "moonshotai__Kimi-Linear-48B-A3B-Instruct.json",
                 "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json", "mistralai__Mistral-7B-v0.1.json",
                 "openai__gpt-oss-20b.json", "google__gemma-2-9b.json", "Qwen__Qwen3-Next-80B-A3B-Instruct.json"]


@pytest.mark.parametrize("config", OTHER_CONFIGS)
def test_agrees_with_engines_llamacpp_on_other_layer_kinds(config):
    # MLA (DeepSeek-V3), KDA + MLA (Kimi Linear), Mamba-2 + MLP blocks (Nemotron), an unapplied window
    # (Mistral 7B), iSWA (gpt-oss, Gemma 2), GDN (Qwen3-Next): same totals and growing term as derive.
    arch = kvmath.load_architecture(SHARED / config)
    mem = llamacpp_memory(arch, n_ctx=65536, n_parallel=2, cache_type_k="q8_0", cache_type_v="q8_0")
    d = kvmath.derive(arch, engine="llama.cpp", kv_format="q8_0", max_ctx=32768, max_num_seqs=2)
    assert (mem.total_bytes, mem.bytes_per_token) == (d.total_bytes, d.bytes_per_token)


def test_hybrid_old_build_differs_from_engines_llamacpp():
    # engines.LlamaCpp gives every build the n_ctx_seq attention cache; ec98e2002's hybrid cache had
    # n_ctx cells per stream (engine-notes 3b), so with -np 2 the old build holds twice the attention KV.
    new = llamacpp_memory("qwen3.6-27b", n_ctx=65536, n_parallel=2)
    old = llamacpp_memory("qwen3.6-27b", n_ctx=65536, n_parallel=2, build="pre-v-less")
    assert old.kv_bytes == 2 * new.kv_bytes and old.recurrent_bytes == new.recurrent_bytes


# ---------------------------------------------------------------------------------------------------
# rules checked against derivations from the source


def _g4():
    return kvmath.load_architecture("gemma-4-26b-a4b")


def test_v_padded_to_widest_layer_without_flash_attention():
    # llama-kv-cache.cpp: n_embd_v_gqa = !v_trans ? n_embd_v_gqa(il) : n_embd_v_gqa_max(); v_trans = !flash_attn.
    # Gemma 4 26B-A4B: sliding V rows 8 x 256 = 2048, full V rows 2 x 512 = 1024 -> padded to 2048.
    on = llamacpp_memory(_g4(), n_ctx=4096, flash_attn="on").cache("non-SWA")
    off = llamacpp_memory(_g4(), n_ctx=4096, flash_attn="off").cache("non-SWA")
    assert {t.v_width for t in on.layers} == {2 * 512} and {t.v_width for t in off.layers} == {2048}
    assert off.v_bytes == 5 * 2048 * 2 * 4096 and on.v_bytes == 5 * 1024 * 2 * 4096
    assert off.k_bytes == on.k_bytes  # K is never padded
    # auto sizes as flash attention on: create_memory runs before the auto resolution (llama-context.cpp)
    assert llamacpp_memory(_g4(), n_ctx=4096).cache("non-SWA") == on


def test_ubatch_clamped_before_swa_size():
    # llama-context.cpp: n_batch = min(n_ctx, n_batch); n_ubatch = min(n_batch, n_ubatch);
    # llama-kv-cache-iswa.cpp: size_swa = GGML_PAD(min(size_base, n_swa*(unified ? n_seq : 1) + n_ubatch), 256)
    m = llamacpp_memory(_g4(), n_ctx=3000, n_batch=256)
    assert (m.n_batch, m.n_ubatch) == (256, 256)
    assert m.cache("SWA").cells == -(-(1024 + 256) // 256) * 256 == 1280
    m = llamacpp_memory(_g4(), n_ctx=600)
    assert (m.n_batch, m.n_ubatch, m.n_ctx) == (600, 512, 768)
    assert m.cache("SWA").cells == 768  # min(size_base, ...) then padded


def test_quantised_v_needs_flash_attention_by_build():
    with pytest.raises(KvMathError, match="^quantized V cache requires flash_attn to be enabled$"):
        llamacpp_memory(_g4(), n_ctx=4096, cache_type_v="q4_0", flash_attn="off")
    with pytest.raises(KvMathError, match="^quantized V cache was requested, but this requires Flash Attention$"):
        llamacpp_memory(_g4(), n_ctx=4096, cache_type_v="q4_0", flash_attn="off", build="ec98e2002")
    # K alone may be quantised without flash attention (only V is checked)
    m = llamacpp_memory(_g4(), n_ctx=4096, cache_type_k="q8_0", flash_attn="off")
    assert m.cache("SWA").type_k == "q8_0" and m.v_trans


def test_block_must_divide_head_width():
    # llama_init_from_model: with flash attention a quantised K whose block size does not divide n_embd_head_k fails
    arch = Architecture("h80", "llama", tuple(AttentionLayer(i, "full_attention", 8, 80, 80) for i in range(2)), 32, "bfloat16")
    with pytest.raises(KvMathError, match="^K cache type q4_0 with block size 32 does not divide n_embd_head_k=80$"):
        llamacpp_memory(arch, n_ctx=1024, cache_type_k="q4_0")
    # without flash attention llama.cpp does not check; the 640-wide row (8 x 80) is 20 whole q4_0 blocks
    m = llamacpp_memory(arch, n_ctx=1024, cache_type_k="q4_0", flash_attn="off")
    assert m.cache("kv").layers[0].k_bytes == 640 // 32 * 18 * 1024


def _mla():
    # DeepSeek-V3: 61 MLA layers, kv_lora_rank 512, qk_rope_head_dim 64. llama.cpp's GGUF form
    # (convert_hf_to_gguf.py DeepseekV2Model): 1 KV head, K = 512 + 64 = 576 wide, V = 512 wide.
    from kvmath.model.specs import MLALayer

    layers = tuple(MLALayer(i, 512, 64, 128, 128) for i in range(61))
    return Architecture("mla", "deepseek_v3", layers, 128, "bfloat16", 163840)


def test_mla_v_less_since_pr_19067():
    # PR #19067 (2026-01-24): has_v = !is_mla, only the latent K is cached ("almost x2 less memory")
    new = llamacpp_memory(_mla(), n_ctx=65536).cache("kv")
    old = llamacpp_memory(_mla(), n_ctx=65536, build="ec98e2002").cache("kv")
    assert new.v_bytes == 0 and new.k_bytes == 61 * 576 * 2 * 65536
    assert old.v_bytes == 61 * 512 * 2 * 65536 and old.k_bytes == new.k_bytes
    assert "V (f16):    0.00 MiB" in new.log_line()
    with pytest.raises(KvMathError, match=r"does not support different K \(q8_0\) and V \(f16\)"):
        llamacpp_memory(_mla(), n_ctx=4096, cache_type_k="q8_0")


def test_gemma4_shared_kv_layers_own_no_cache():
    # create_memory: Gemma 4 layers >= n_layer_kv_from_start reuse earlier layers (has_kv false): they add
    # neither cells nor a "layers" count (llama-kv-cache.cpp counts layers.size()).
    cfg = dict(kvmath.resolve_model("gemma-4-26b-a4b")["config"], num_kv_shared_layers=6)
    m = llamacpp_memory(cfg, n_ctx=8192)
    assert (m.cache("non-SWA").n_layers, m.cache("SWA").n_layers) == (4, 20)
    assert "  4 layers" in m.cache("non-SWA").log_line()


def test_hybrid_attention_cells_by_build():
    # create_memory: llama_memory_hybrid(attn_kv_size = n_ctx_seq) now; ec98e2002 passed cparams.n_ctx
    new = llamacpp_memory("qwen3.6-35b-a3b", n_ctx=131072, n_parallel=4)
    old = llamacpp_memory("qwen3.6-35b-a3b", n_ctx=131072, n_parallel=4, build="ec98e2002")
    assert new.cache("kv").cells == 32768 and old.cache("kv").cells == 131072
    assert old.cache("kv").bytes == 4 * new.cache("kv").bytes
    # the older recurrent line has no rs_seq / P fields (ollama llama/llama.cpp/src/llama-memory-recurrent.cpp)
    assert old.recurrent.log_line() == ("llama_memory_recurrent: size =  251.25 MiB (     4 cells,  40 layers,  4 seqs), "
                                        "R (f32):   11.25 MiB, S (f32):  240.00 MiB")


def test_recurrent_rollback_snapshots():
    # llama-memory-recurrent.cpp: rows = mem_size * (1 + n_rs_seq); common.h need_n_rs_seq() = draft n_max for MTP
    base = llamacpp_memory("qwen3.6-35b-a3b", n_ctx=4096).recurrent
    mtp = llamacpp_memory("qwen3.6-35b-a3b", n_ctx=4096, n_rs_seq=3).recurrent
    assert mtp.bytes == 4 * base.bytes
    assert "1 seqs  3 rs_seq)" in mtp.log_line()


def test_size_lines_print_through_float():
    # llama-kv-cache.cpp: (float)(memory_size_k + memory_size_v) / (1024.0f * 1024.0f), printed with %7.2f.
    # Above 2**24 bytes a float drops low bits; find a byte count where that changes the printed figure.
    b = next(n for n in range(2**33 + 5_000, 2**33 + 400_000, 7)
             if f"{_f32_mib(n):.2f}" != f"{n / MiB:.2f}")
    f32 = struct.unpack("f", struct.pack("f", float(b)))[0]
    assert f"{_f32_mib(b):.2f}" == f"{f32 / MiB:.2f}"


# ---------------------------------------------------------------------------------------------------
# TurboQuant fork (TheTom/llama-cpp-turboquant src/llama-kv-cache.cpp @00910b10, @fc660808)


def test_turbo_types_need_the_fork():
    with pytest.raises(KvMathError, match="only in the TurboQuant fork"):
        llamacpp_memory(_g4(), n_ctx=4096, cache_type_k="turbo3", cache_type_v="turbo3")
    assert llamacpp_memory(_g4(), n_ctx=4096, cache_type_k="turbo3", cache_type_v="turbo3", fork="turboquant").fork == "00910b10"
    with pytest.raises(KvMathError, match="unknown TurboQuant fork version"):
        llamacpp_memory(_g4(), n_ctx=4096, fork="abc")


def test_turbo_block_sizes_and_128_padding():
    # ggml-common.h @17dd3529: per 128 elements turbo4 = 2 + 64, turbo3 = 2 + 32 + 16, turbo2 = 2 + 32 bytes.
    # llama-kv-cache.cpp: "pad K head_dim to next multiple of 128" -> a 192-wide head is stored as 256.
    arch = Architecture("h192", "llama", tuple(AttentionLayer(i, "full_attention", 4, 192, 192) for i in range(2)), 16, "bfloat16")
    for t, block in (("turbo4", 66), ("turbo3", 50), ("turbo2", 34)):
        c = llamacpp_memory(arch, n_ctx=1024, cache_type_k=t, cache_type_v="f16", fork="turboquant").cache("kv")
        assert c.layers[0].k_width == 4 * 256
        assert c.layers[0].k_bytes == 4 * 256 // 128 * block * 1024
        assert c.layers[0].v_bytes == 4 * 192 * 2 * 1024  # f16 V is not padded


def test_turbo_auto_asymmetric():
    # @00910b10: symmetric turbo K=V and n_head(0)/n_head_kv(0) >= 6 -> K = q8_0 for the whole cache.
    # Qwen 3.6 35B-A3B: 16 / 2 = 8 (a public user log quotes the fork: "auto-asymmetric: GQA ratio 8:1
    # (n_head=16, n_head_kv=2) — upgrading K from turbo3 to q8_0"); Gemma 4 26B-A4B layer 0: 16 / 8 = 2.
    q = llamacpp_memory("qwen3.6-35b-a3b", n_ctx=262144, cache_type_k="turbo3", cache_type_v="turbo3", fork="turboquant")
    assert q.cache("kv").type_k == "q8_0" and q.cache("kv").type_v == "turbo3"
    assert any("GQA ratio 8:1 (n_head=16, n_head_kv=2)" in n for n in q.notes)
    assert q.cache("kv").k_bytes == 10 * 2 * 256 // 32 * 34 * 262144
    assert q.cache("kv").v_bytes == 10 * 2 * 256 // 128 * 50 * 262144
    assert q.extra_buffer_bytes == 0  # no turbo K, no rotation matrices
    g = llamacpp_memory(_g4(), n_ctx=262144, cache_type_k="turbo3", cache_type_v="turbo3", fork="turboquant")
    assert g.cache("non-SWA").type_k == "turbo3"
    # the rule wants K == V: an asymmetric request is left alone; the older fork has no such rule
    a = llamacpp_memory("qwen3.6-35b-a3b", n_ctx=4096, cache_type_k="turbo4", cache_type_v="turbo3", fork="turboquant")
    assert a.cache("kv").type_k == "turbo4"
    o = llamacpp_memory("qwen3.6-35b-a3b", n_ctx=4096, cache_type_k="turbo3", cache_type_v="turbo3", fork="fc660808")
    assert o.cache("kv").type_k == "turbo3" and FORKS["fc660808"].auto_asymmetric is False


def test_turbo_boundary_v_and_rotation_buffers():
    # Mode 7 (auto when V is turbo2 and n_layer >= 8): il < 2 or il >= n_layer - 2 -> V = q8_0.
    # Absolute layer indices: Gemma 4 26B-A4B (30 layers) -> sliding 0, 1, 28 and full 29.
    m = llamacpp_memory(_g4(), n_ctx=8192, cache_type_k="turbo2", cache_type_v="turbo2", fork="turboquant")
    swa, full = m.cache("SWA"), m.cache("non-SWA")
    assert [t.index for t in swa.layers if t.v_type == "q8_0"] == [0, 1, 28]
    assert [t.index for t in full.layers if t.v_type == "q8_0"] == [29]
    assert full.type_v == "turbo2"  # the size line prints the requested type
    t29 = next(t for t in full.layers if t.index == 29)
    assert t29.v_bytes == 2 * 512 // 32 * 34 * 8192 and t29.k_bytes == 2 * 512 // 128 * 34 * 8192
    # each cache object with turbo K holds two 128x128 f32 rotations and a 128-float scale in its buffer
    assert m.extra_buffer_bytes == 2 * TURBO_ROTATION_BYTES == 2 * (2 * 128 * 128 * 4 + 128 * 4)
    assert m.total_bytes == swa.bytes + full.bytes
    # Qwen 3.6: attention layers 3, 7, ..., 39 -> only layer 39 is a boundary layer
    q = llamacpp_memory("qwen3.6-35b-a3b", n_ctx=8192, cache_type_k="q8_0", cache_type_v="turbo2", fork="turboquant")
    assert [t.index for t in q.cache("kv").layers if t.v_type == "q8_0"] == [39]


def test_gguf_path_and_model_id_inputs(tmp_path):
    with pytest.raises(KvMathError, match="no such .gguf file"):
        llamacpp_memory(tmp_path / "x.gguf", n_ctx=1024)
    with pytest.raises(KvMathError, match="unknown llama.cpp build"):
        llamacpp_memory("qwen3.6-35b-a3b", n_ctx=1024, build="b1")
    with pytest.raises(KvMathError, match="flash_attn must be one of"):
        llamacpp_memory("qwen3.6-35b-a3b", n_ctx=1024, flash_attn="maybe")
    with pytest.raises(KvMathError, match="n_parallel must be an integer in \\[1"):
        llamacpp_memory("qwen3.6-35b-a3b", n_ctx=1024, n_parallel=0)
    # n_ctx 0 = the training context (llama-context.cpp)
    assert llamacpp_memory("qwen3.6-35b-a3b", n_ctx=0).n_ctx == 262144


# ---------------------------------------------------------------------------------------------------
# the chapter notebooks/llamacpp_16gb.md


def test_chapter_glue_equals_kvmath():
    import jupytext
    import papermill as pm

    from kvmath.book import read_glue

    path = Path(__file__).resolve().parents[1] / "notebooks" / "llamacpp_16gb.md"
    nb = pm.execute_notebook(jupytext.read(path), None, kernel_name="python3", cwd=str(path.parent),
                             progress_bar=False)
    glued = read_glue(nb)
    text = path.read_text()
    used = (set(re.findall(r"\{glue:text\}`([^`]+)`", text)) | set(re.findall(r"\{eval\}`glued\.(\w+)`", text))
            | set(re.findall(r"\{glue:figure\} (\S+)", text)))
    assert used
    assert used - set(glued) == set()
    g = {k[:-5]: v for k, v in glued.items() if k.endswith("__raw")}
    for key, model in (("q", "qwen3.6-35b-a3b"), ("g", "gemma-4-26b-a4b")):
        for t in ("f16", "q8_0", "q4_0"):
            m = llamacpp_memory(model, n_ctx=262144, cache_type_k=t, cache_type_v=t)
            assert g[f"{key}_{t}_bytes_per_token"] == m.bytes_per_token
            assert g[f"{key}_{t}_total_gib"] == pytest.approx(m.total_bytes / 2**30)
    assert g["g_swa_cells_tokens"] == 1536 and g["g_kv_heads_total"] == 25 * 8 + 5 * 2
    assert g["g_swa_full_bytes_per_token"] == 25 * 8 * 256 * 2 * 2 + 5 * 2 * 512 * 2 * 2
    assert g["q_turbo4_turbo_ctx_mib"] == pytest.approx(10 * 2 * 256 * (34 / 32 + 66 / 128) * 131072 / MiB)
    assert g["k_state_mib"] == pytest.approx(20 * 4 * (32 * 128 * 128 + 3 * 3 * 32 * 128) / MiB)
