"""A named llama.cpp quantisation mix from config.json (kvmath.engines.llamacpp.quantmix / weights), checked
against llama.cpp itself and against published GGUF figures.

- ``tests/fixtures/llamacpp/quant_fixtures.json``: what ``llama-quantize --dry-run`` of llama.cpp 0c1e570
  printed, tensor by tensor, for sparse BF16 GGUFs with the real tensor tables of 7 models in 17 mixes
  (``quant_regenerate.py`` says how they were made);
- ``tests/fixtures/llamacpp/compute_fixtures.json``: the tensor tables ``convert_hf_to_gguf.py`` wrote for
  6 of those models (names, shapes, source types), which kvmath's config-to-table must reproduce;
- ``data/measurements/llamacpp-gguf-sizes.csv``: llama-bench ``size`` lines and loader type counts of
  published files, with their URLs.
"""

from __future__ import annotations

import sys

import json
from pathlib import Path

import pytest

from kvmath.engines.llamacpp import quantmix as QM
from kvmath.engines.llamacpp.weights import gguf_tensors_from_config, weights_from_mix
from kvmath.errors import KvMathError

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "llamacpp"
QUANT = json.loads((FIX / "quant_fixtures.json").read_text())
COMPUTE = json.loads((FIX / "compute_fixtures.json").read_text())
CASES = [(m, mix) for m, e in QUANT["models"].items() for mix in e["mixes"]]


def test_fixture_is_the_pinned_build_and_covers_the_mixes_asked_for():
    assert QUANT["llama_cpp"]["commit"].startswith("0c1e570")
    mixes = set(next(iter(QUANT["models"].values()))["mixes"])
    assert {"Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "IQ4_XS"} <= mixes
    assert len(QUANT["models"]) == 7 and len(CASES) == 7 * 17


@pytest.mark.parametrize("model,mix", CASES)
def test_every_tensor_gets_the_type_llama_quantize_gives_it(model, mix):
    e = QUANT["models"][model]
    mm = QM.mix_model_from_gguf(COMPUTE["models"][model]["gguf_metadata"])
    got = QM.tensor_types([tuple(t) for t in e["tensors"]], mm, mix)
    want = dict(zip((t[0] for t in e["tensors"]), e["mixes"][mix]["types"].split()))
    assert {k: got[k] for k in want} == want
    # and the file size llama-quantize prints ("quant size = X MiB", 2 decimals)
    size = sum(QM.nbytes(s, got[n]) for n, s, _ in e["tensors"]) / 2**20
    assert abs(size - e["mixes"][mix]["quant_size_mib"]) <= 0.005


def _config(model):
    return json.loads((ROOT / COMPUTE["models"][model]["config"]).read_text())


TABLED = list(COMPUTE["models"])


@pytest.mark.parametrize("model", TABLED)
def test_config_gives_the_converters_tensor_table(model):
    arch, n_blocks, table = gguf_tensors_from_config(_config(model))
    meta = COMPUTE["models"][model]["gguf_metadata"]
    assert arch == meta["general.architecture"]
    assert n_blocks == meta[f"{arch}.block_count"]
    want = {n: tuple(s) for n, _, s, _, _ in COMPUTE["models"][model]["tensors"]}
    assert {n: s for n, s, _ in table} == want
    # the converter's F32 tensors (norms, routers, conv kernels, 1-D) are F32 in the table
    f32 = {n for n, t, *_ in COMPUTE["models"][model]["tensors"] if t == "F32"}
    assert {n for n, _, t in table if t == "F32"} == f32


@pytest.mark.parametrize("model", TABLED)
@pytest.mark.parametrize("mix", ["Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "IQ4_XS", "Q4_0", "MXFP4_MOE"])
def test_config_plus_mix_is_what_llama_quantize_makes(model, mix):
    tensors, wb = weights_from_mix(_config(model), mix)
    want = dict(zip((t[0] for t in QUANT["models"][model]["tensors"]),
                    QUANT["models"][model]["mixes"][mix]["types"].split()))
    assert {t.name: t.ggml_type for t in tensors} == want
    assert abs(sum(t.n_bytes for t in tensors) / 2**20 - QUANT["models"][model]["mixes"][mix]["quant_size_mib"]) \
        <= 0.005
    # the summary adds up to the same bytes (MTP none here; a tied output counted once in the file)
    assert wb.total == sum(t.n_bytes for t in tensors)


def test_output_order_and_offsets_are_the_quantised_files():
    tensors, _ = weights_from_mix(_config("gemma-4-26b-a4b"), "Q4_K_M")
    names = [t.name for t in tensors]
    assert names == [t[0] for t in QUANT["models"]["gemma-4-26b-a4b"]["tensors"]]  # llama-quantize's order
    assert all(t.offset % 32 == 0 for t in tensors)
    assert all(a.offset + a.n_bytes <= b.offset for a, b in zip(tensors, tensors[1:]))


def test_hand_checked_rules():
    # Llama 3.1 8B Q4_K_M typed out: use_more_bits(i, 32) is true for i < 4, i >= 28 and (i - 4) % 3 == 2,
    # i.e. 4 + 4 + 8 = 16 of 32 layers; attn_v and ffn_down of those layers are Q6_K, plus output.weight:
    # 2 x 16 + 1 = 33 Q6_K tensors (llama-quant.cpp use_more_bits; the LongWriter file of G04 has 33)
    more = [i for i in range(32) if i < 4 or i >= 28 or (i - 4) % 3 == 2]
    assert len(more) == 16
    tensors, _ = weights_from_mix(_config("llama-3.1-8b"), "Q4_K_M")
    q6 = sorted(t.name for t in tensors if t.ggml_type == "Q6_K")
    assert q6 == sorted(["output.weight"] + [f"blk.{i}.{k}.weight" for i in more for k in ("attn_v", "ffn_down")])
    # Gemma 4 26B-A4B: ffn_down_exps rows of 704 are not whole Q4_K / Q6_K blocks of 256: Q5_0 / Q8_0
    tensors, _ = weights_from_mix(_config("gemma-4-26b-a4b"), "Q4_K_M")
    by = {t.name: t.ggml_type for t in tensors}
    assert by["blk.0.ffn_down_exps.weight"] == "Q8_0" and by["blk.3.ffn_down_exps.weight"] == "Q5_0"
    assert by["token_embd.weight"] == "Q6_K"  # tied: the embedding gets the output head's type


sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import llamacpp_mixcheck as mixcheck  # noqa: E402

PUB = {r["id"]: r for r in mixcheck.published_checks()}


def test_published_llama_bench_sizes():
    # llama-bench prints the file's tensor bytes to 2 decimals; kvmath's estimate from config.json
    for rid in ("G01", "G02"):
        assert abs(PUB[rid]["error_mib"]) <= PUB[rid]["rounding_mib"], PUB[rid]
    # Qwen3 32B Q4_0 (maker and build not stated): kvmath is 59 MiB (0.33 %) short; kept as the stated error
    assert -62 < PUB["G03"]["error_mib"] < -57 and abs(PUB["G03"]["error_pct"]) < 0.4


def test_published_weight_counts_equal_the_tables():
    # llama-bench's params column (billions, 2 decimals) is the file's element count: the config's table holds
    # as many weights for every row that logs one (TinyLlama, Llama 3.2 3B, Qwen3 32B, DeepSeek-R1)
    rows = [r for r in PUB.values() if r.get("logged_params_b") is not None]
    assert len(rows) == 4
    for r in rows:
        assert abs(r["kvmath_params_b"] - r["logged_params_b"]) <= 0.005, r


def test_published_type_counts():
    assert PUB["G04"]["kvmath_counts"] == PUB["G04"]["logged_counts"].lower()


def test_unknown_and_dynamic_mixes_are_refused_with_the_choices():
    with pytest.raises(KvMathError, match="valid: Q4_0, .*Q4_K_M.*IQ4_XS"):
        QM.check_mix("Q4_K_X")
    with pytest.raises(KvMathError, match="UD"):
        QM.check_mix("UD-Q4_K_XL")
    with pytest.raises(KvMathError, match="model_type"):
        gguf_tensors_from_config({"model_type": "mamba", "hidden_size": 1, "num_hidden_layers": 1, "vocab_size": 1})


def test_fit_cli_quant_mix(capsys):
    from kvmath.engines.llamacpp.fit import run

    rc = run(["-m", "gemma-4-26b-a4b", "--quant-mix", "Q4_K_M", "-c", "262144", "-ctk", "q4_0", "-ctv", "q4_0",
              "--n-cpu-moe", "12", "--card", "5070ti", "--json"])
    out = json.loads(capsys.readouterr().out)
    tensors, _ = weights_from_mix(_config("gemma-4-26b-a4b"), "Q4_K_M")
    assert rc == 0 and out["engine_detail"]["weights"].startswith("Q4_K_M")
    host = next(d for d in out["devices"] if d["name"] == "Host")
    # the experts of the first 12 blocks are in RAM: the mapped host buffer holds at least their tensors
    experts = sum(t.n_bytes for t in tensors if "exps" in t.name and int(t.name.split(".")[1]) < 12)
    assert next(t["bytes"] for t in host["terms"] if t["name"] == "model") >= experts > 0
    assert run(["-m", "gemma-4-26b-a4b", "--quant-mix", "Q4_K_X"]) == 2
    assert "valid: Q4_0" in capsys.readouterr().err


# --- families checked against llama.cpp's own quant-type snapshots --------------------------------------------
# tests/fixtures/llamacpp/snapshots/*.schema: llama.cpp 0c1e570 tests/snapshots (README there), the types
# llama_tensor_get_type gives the quantisable tensors of published GGUF headers, per mix, listing only those that
# differ from the mix's default type. The config standing in for each file is checked against the header line.
SNAP = FIX / "snapshots"
GEMMA3_4B = {  # google/gemma-3-4b-it text_config (config.json): the fields the table reads
    "model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208}
SNAP_CONFIGS = {
    "deepseek-v3.1": "data/configs/deepseek-ai__DeepSeek-V3.json",  # V3.1 keeps V3's shapes (header below)
    "qwen3-coder-next": "data/configs/Qwen__Qwen3-Next-80B-A3B-Instruct.json",  # same qwen3next shapes
    "nvidia-nemotron-3-nano-30b-a3b": "data/configs/nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json",
    "gemma-3-4b-it": GEMMA3_4B,
}


def _snapshot(name, where=SNAP):
    head, secs, cur = {}, {}, None
    for line in (where / f"{name}.schema").read_text().splitlines():
        if line.startswith("# n_embd="):
            head = {k: int(v) for k, v in (kv.split("=") for kv in line[2:].split(", "))}
        elif line.startswith("["):
            mix, default = line[1:].split("] ")
            cur = secs.setdefault(mix, (default.upper(), {}))
        elif line and not line.startswith("#"):
            tensor, t = line.rsplit(" ", 1)
            cur[1][tensor] = t.upper()
    return head, secs


def _snap_config(name):
    c = SNAP_CONFIGS[name]
    return c if isinstance(c, dict) else json.loads((ROOT / c).read_text())


@pytest.mark.parametrize("name", SNAP_CONFIGS)
def test_snapshot_header_is_the_configs_shape(name):
    head, secs = _snapshot(name)
    arch, n_blocks, table = gguf_tensors_from_config(_snap_config(name))
    shapes = {n: s for n, s, _ in table}
    experts = {s[2] for n, s in shapes.items() if "_exps." in n}
    assert (shapes["token_embd.weight"], n_blocks) == ((head["n_embd"], head["n_vocab"]), head["n_layer"])
    assert experts == ({head["n_expert"]} if "n_expert" in head else set())
    assert {"Q4_K_M", "Q6_K", "Q8_0", "IQ4_XS", "MXFP4_MOE"} <= set(secs)


SNAP_CASES = [(n, mix) for n in SNAP_CONFIGS for mix in _snapshot(n)[1]]


@pytest.mark.parametrize("name,mix", SNAP_CASES)
def test_new_families_get_the_types_llama_cpp_snapshots_give(name, mix):
    """DeepSeek V3 (deepseek2: MLA with attn_k_b / attn_v_b), Qwen3-Next, Nemotron 3 Nano (nemotron_h_moe) and
    Gemma 3: every quantisable tensor of kvmath's table gets the snapshot's type, and the snapshot names no
    tensor kvmath lacks."""
    default, over = _snapshot(name)[1][mix]
    tensors, _ = weights_from_mix(_snap_config(name), mix)
    got = {t.name: t.ggml_type for t in tensors if QM.quantisable(t.name, t.shape) and t.ggml_type != default}
    assert got == over


HARNESS = FIX / "harness"
HARNESS_CASES = [(p.stem, mix) for p in sorted(HARNESS.glob("*.schema")) for mix in _snapshot(p.stem, HARNESS)[1]]


@pytest.mark.parametrize("name,mix", HARNESS_CASES)
def test_types_equal_llama_cpps_compiled_rules_on_kvmaths_tables(name, mix):
    """Gemma 2, Nemotron-H 56B, Kimi K2, DeepSeek V2, Phi-4, OLMo 2, Olmo 3.1, SmolLM 3, Granite (dense, MoE with 8
    experts, MoE with a shared MLP), Seed-OSS, OLMoE, ERNIE 4.5, Cohere, Cohere 2, StarCoder 2, GLM-4, Granite 4.0-H
    (MoE, dense), Falcon-H1 and LFM2 (among the others the schemas name): the types
    llama.cpp 0c1e570's own llama_quant_compute_types gave kvmath's table of each (harness/regenerate.py, the
    method of llama.cpp's snapshot test) are the types kvmath's quantmix gives."""
    text = (HARNESS / f"{name}.schema").read_text()
    cfg = json.loads((ROOT / text.splitlines()[0].removeprefix("# config: ")).read_text())
    default, over = _snapshot(name, HARNESS)[1][mix]
    tensors, _ = weights_from_mix(cfg, mix)
    got = {t.name: t.ggml_type for t in tensors if QM.quantisable(t.name, t.shape) and t.ggml_type != default}
    assert got == over


def test_hand_checked_rules_of_the_new_families():
    # DeepSeek V3 Q4_K_M, typed out from llama-quant.cpp: attn_k_b rows are qk_nope_head_dim = 128 long, not a
    # whole Q4_K block (256): Q5_0 (tensor_type_fallback); attn_v_b rows of kv_lora_rank 512 stay Q4_K; there
    # is no attn_v-like tensor (the split removed attn_kv_b), so only ffn_down moves: use_more_bits(i, 61) for
    # i < 7, i >= 53 and (i - 7) % 3 == 2 (7 + 8 + 15 = 30 blocks), by block number (n_expert 256 > 1).
    tensors, _ = weights_from_mix(_snap_config("deepseek-v3.1"), "Q4_K_M")
    by = {t.name: t.ggml_type for t in tensors}
    more = [i for i in range(61) if i < 7 or i >= 53 or (i - 7) % 3 == 2]
    assert len(more) == 30
    assert by["blk.5.attn_k_b.weight"] == "Q5_0" and by["blk.5.attn_v_b.weight"] == "Q4_K"
    q6 = sorted(n for n, t in by.items() if t == "Q6_K")
    want = ["output.weight"] + [f"blk.{i}.ffn_down.weight" for i in more if i < 3] + \
        [f"blk.{i}.{k}.weight" for i in more if i >= 3 for k in ("ffn_down_exps", "ffn_down_shexp")]
    assert q6 == sorted(want)
    # MXFP4_MOE: any 3-D tensor with ne2 > 1 is MXFP4, MLA's k_b / v_b too (only bailingmoe3 is excepted)
    tensors, _ = weights_from_mix(_snap_config("deepseek-v3.1"), "MXFP4_MOE")
    by = {t.name: t.ggml_type for t in tensors}
    assert by["blk.9.attn_k_b.weight"] == by["blk.9.ffn_up_exps.weight"] == "MXFP4"
    assert by["blk.9.attn_q_a.weight"] == "Q8_0"
    # Gemma 2 is always tied: the token embedding takes the output head's Q6_K in Q4_K_M; 42 blocks give
    # use_more_bits for i < 5, i >= 36 and (i - 5) % 3 == 2 (5 + 6 + 10 = 21) on attn_v and ffn_down
    g2 = json.loads((ROOT / "data/configs/google__gemma-2-9b.json").read_text())
    tensors, _ = weights_from_mix(g2, "Q4_K_M")
    by = {t.name: t.ggml_type for t in tensors}
    assert "output.weight" not in by and by["token_embd.weight"] == "Q6_K"
    assert sum(t == "Q6_K" for t in by.values()) == 1 + 2 * 21


def test_published_sizes_of_the_new_families():
    # G05: unsloth DeepSeek-R1 Q4_K_M, llama-bench size 376.65 GiB, 671.03 B weights. The weight count is
    # exact; the size is 0.06 GiB (0.016 %) above the file, which keeps one attn_kv_b (512 x 32768) per layer
    # where the pinned converter writes attn_k_b + attn_v_b (Q5_0 + Q4_K instead of Q4_K / Q6_K by layer).
    r = PUB["G05"]
    assert abs(r["kvmath_params_b"] - r["logged_params_b"]) <= 0.005
    assert 0 < r["error_mib"] < 0.1 * 1024 and r["error_pct"] < 0.02
    # G06: bartowski gemma-2-9b-it Q8_0, 9.82 GB on the model card (the whole file, so a few MB of header too)
    r = PUB["G06"]
    assert -(r["rounding_mib"] + 10e6 / 2**20) <= r["error_mib"] <= r["rounding_mib"]


def test_nemotron_h_dense_and_refusals():
    # Nemotron-H 56B (dense hybrid, no num_experts_per_tok): nemotron_h; '-' blocks a ReLU^2 up / down MLP
    cfg = json.loads((ROOT / "data/configs/nvidia__Nemotron-H-56B-Base-8K.json").read_text())
    arch, n, table = gguf_tensors_from_config(cfg)
    shapes = {name: s for name, s, _ in table}
    pat = cfg["hybrid_override_pattern"]
    assert (arch, n) == ("nemotron_h", 118)
    first_mlp, first_m = pat.index("-"), pat.index("M")
    assert shapes[f"blk.{first_mlp}.ffn_up.weight"] == (8192, 32768)
    assert f"blk.{first_mlp}.ffn_gate.weight" not in shapes
    # ssm_in: 2 x d_inner (256 heads x 64) + 2 x 8 groups x 256 state + 256 heads
    assert shapes[f"blk.{first_m}.ssm_in.weight"] == (8192, 2 * 16384 + 2 * 8 * 256 + 256)
    with pytest.raises(KvMathError, match="hybrid_override_pattern"):
        gguf_tensors_from_config({**cfg, "hybrid_override_pattern": pat[:-1]})
    with pytest.raises(KvMathError, match="gemma3_text vocab_size 1000"):
        gguf_tensors_from_config({**GEMMA3_4B, "vocab_size": 1000})
    with pytest.raises(KvMathError, match="known: llama, .*deepseek_v3.*nemotron_h.*smollm3"):
        gguf_tensors_from_config({"model_type": "kimi_linear", "hidden_size": 1, "num_hidden_layers": 1, "vocab_size": 1})
    # Command R: llama.cpp loads q / k norms for 64+ layers only; a 40-layer config with use_qk_norm is refused
    cohere = json.loads((ROOT / "tests/fixtures/configs/transformers-5.23-defaults__cohere.json").read_text())
    with pytest.raises(KvMathError, match="use_qk_norm"):
        gguf_tensors_from_config({**cohere, "use_qk_norm": True})


def test_mamba2_and_short_conv_hybrids_tables_and_refusals():
    """Granite 4.0-H, Falcon-H1 and LFM2: the shapes the loaders create (granite-hybrid.cpp, falcon-h1.cpp,
    lfm2.cpp) on the harness configs, and the layouts llama.cpp's converter or loader rejects, refused in one line."""
    H = ROOT / "tests/fixtures/llamacpp/harness"
    load = lambda name: json.loads((H / f"{name}.json").read_text())
    g = load("granitemoehybrid-variant")
    arch, n, table = gguf_tensors_from_config(g)
    shapes = {name: shape for name, shape, _ in table}
    assert arch == "granitehybrid" and n == 8
    # d_inner 2 x 4096; ssm_in 2 d_inner + 2 x 1 group x 256 state + 128 heads; conv over d_inner + 2 x 256
    assert shapes["blk.0.ssm_in.weight"] == (4096, 2 * 8192 + 2 * 256 + 128)
    assert shapes["blk.0.ssm_conv1d.weight"] == (4, 8192 + 512) and shapes["blk.0.ssm_a"] == (1, 128)
    assert shapes["blk.0.ssm_norm.weight"] == (8192, 1) and "blk.0.attn_q.weight" not in shapes
    assert shapes["blk.3.attn_k.weight"] == (4096, 4096) and "blk.3.ssm_in.weight" not in shapes
    assert shapes["blk.3.ffn_gate_exps.weight"] == (4096, 11008, 8) and shapes["blk.3.ffn_up_shexp.weight"] == (4096, 1024)
    dense = {name: shape for name, shape, _ in gguf_tensors_from_config(load("granitemoehybrid-dense-variant"))[2]}
    assert dense["blk.0.ffn_gate.weight"] == (4096, 11008) and "blk.0.ffn_gate_inp.weight" not in dense
    for bad in ({"mamba_expand": 1}, {"layer_types": ["full_attention"] * 8}, {"mamba_proj_bias": True},
                {"vocab_size": 32001}, {"num_local_experts": 0}):
        with pytest.raises(KvMathError, match="granitemoehybrid"):
            gguf_tensors_from_config({**g, **bad})
    f = load("falcon-h1-0.5b-shape")
    arch, n, table = gguf_tensors_from_config(f)
    shapes = {name: (shape, t) for name, shape, t in table}
    assert arch == "falcon-h1" and n == 36
    # every block: Mamba-2 (1536 = 24 heads x 64, 128 state) and attention (8 x 64 q, 2 x 64 k / v) side by side
    assert shapes["blk.5.ssm_in.weight"][0] == (1024, 2 * 1536 + 2 * 128 + 24)
    assert shapes["blk.5.attn_q.weight"][0] == (1024, 512) and shapes["blk.5.attn_v.weight"][0] == (1024, 128)
    assert shapes["blk.5.ffn_norm"] == ((1024,), "F32") and "blk.5.ssm_norm.weight" not in shapes
    for bad in ({"mamba_d_ssm": None}, {"head_dim": None}, {"mamba_n_heads": 16}, {"projectors_bias": True}):
        with pytest.raises(KvMathError, match="falcon_h1"):
            gguf_tensors_from_config({**f, **bad})
    lf = load("lfm2-1.2b-text")
    arch, n, table = gguf_tensors_from_config(lf)
    shapes = {name: (shape, t) for name, shape, t in table}
    # block_ff_dim 12288 -> 2/3 = 8192 (a multiple of 256); tied: no output.weight; the final norm is token_embd_norm
    assert arch == "lfm2" and shapes["blk.0.ffn_gate.weight"][0] == (2048, 8192)
    assert "output.weight" not in shapes and "output_norm.weight" not in shapes and "token_embd_norm.weight" in shapes
    assert shapes["blk.0.shortconv.conv.weight"] == ((3, 2048), "F32") and shapes["blk.0.shortconv.in_proj.weight"][0] == (2048, 6144)
    assert shapes["blk.2.attn_q_norm.weight"][0] == (64,) and "blk.2.shortconv.conv.weight" not in shapes
    for bad in ({"conv_bias": True}, {"layer_types": ["conv", "sliding_attention"] * 8}):
        with pytest.raises(KvMathError, match="lfm2"):
            gguf_tensors_from_config({**lf, **bad})


def test_hunyuan_per_layer_expert_widths():
    # Hunyuan-A13B's config.json lists moe_intermediate_size once per layer ([3072] * 32; HunYuanMoEV1Config takes
    # int | list[int]): one repeated width is that width; widths that differ, or a list on another family, are refused
    from kvmath.validate import check_config

    cfg = json.loads((HARNESS / "hunyuan-a13b-shape.json").read_text())
    assert cfg["moe_intermediate_size"] == [3072] * 32
    assert check_config(cfg)["moe_intermediate_size"] == 3072
    shapes = {n: s for n, s, _ in gguf_tensors_from_config(cfg)[2]}
    assert shapes["blk.31.ffn_down_exps.weight"] == (3072, 4096, 64) and shapes["blk.0.ffn_up_shexp.weight"] == (4096, 3072)
    with pytest.raises(KvMathError, match="one equal width per layer only for hunyuan_v1_moe"):
        check_config({**cfg, "moe_intermediate_size": [3072] * 31 + [1536]})
    with pytest.raises(KvMathError, match="one equal width per layer only for hunyuan_v1_moe"):
        check_config({**cfg, "model_type": "qwen3_moe"})
