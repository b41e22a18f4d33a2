"""kvmath's transformers rules against transformers' real cache, on the CPU.

For each model, ``realcache.transformers_cache_bytes`` builds a scaled-down random model with the
same layer pattern, KV heads, head widths and linear-attention state fields as the model's
config.json (hidden sizes, experts and vocabulary shrunk), runs a prefill and a few decode steps,
and adds up the tensors the returned ``DynamicCache`` holds. The window is shortened to 16 tokens so
that 40 tokens cross it; kvmath derives from the very same config dict.

The four models kvmath ships facts for run everywhere; every other reference config in data/configs
(GQA, MQA-like MLA, every sliding-window form, GDN, Mamba-2 and KDA hybrids, MoE-only blocks) runs
too; the configs are in the repository. The model is built in the config's own dtype
(Gemma 2 9B says float32), as transformers would load it.
"""

import copy
import json
import os
import sys
from pathlib import Path

import pytest

import kvmath

sys.path.insert(0, str(Path(__file__).parent))
from realcache import transformers_cache_bytes  # noqa: E402

SHARED = Path(__file__).resolve().parents[1] / "data" / "configs"  # copies of the published configs (SOURCES.md)
SHIPPED = {  # kvmath id -> the same config in data/configs (tests/test_config.py checks they agree)
    "qwen3.6-27b": "Qwen__Qwen3.6-27B.json",
    "qwen3.6-35b-a3b": "Qwen__Qwen3.6-35B-A3B.json",
    "gemma-4-31b": "google__gemma-4-31B-it.json",
    "gemma-4-26b-a4b": "google__gemma-4-26B-A4B.json",
}
SHARED_FILES = sorted({
    "Qwen__Qwen2.5-7B-Instruct.json", "Qwen__Qwen2.5-7B.json", "Qwen__Qwen3-32B.json",
    "Qwen__Qwen3-Next-80B-A3B-Instruct.json", "Qwen__Qwen3.5-27B.json", "Qwen__Qwen3.5-35B-A3B.json",
    "deepseek-ai__DeepSeek-V3.json", "google__gemma-2-9b.json", "meta-llama__Llama-3.1-70B-Instruct.json",
    "meta-llama__Llama-3.1-70B.json", "meta-llama__Llama-3.1-8B-Instruct.json", "meta-llama__Llama-3.1-8B.json",
    "mistralai__Mistral-7B-v0.1.json", "moonshotai__Kimi-Linear-48B-A3B-Instruct.json",
    "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json", "nvidia__Nemotron-H-56B-Base-8K.json",
    "openai__gpt-oss-120b.json", "openai__gpt-oss-20b.json",
} | ({p.name for p in SHARED.glob("*.json")} if SHARED.is_dir() else set()))
SHARED_CASES = [f.removesuffix(".json") for f in SHARED_FILES if f not in SHIPPED.values()]
CASES = list(SHIPPED) + SHARED_CASES
BATCH, PREFILL, DECODE, WINDOW = 2, 40, 3, 16

# Nemotron-H 56B: 54 Mamba-2 layers of 256 heads x 64 x state 256 take minutes in transformers'
# reference (torch) SSD kernel. Its per-layer fields are kept exactly; the layer pattern is cut to
# its first period "M-M-M-M*-" (every block kind), unless KVMATH_FULL_REALCACHE=1. The full
# 118-layer pattern was run once and matched to the byte (1,833,156,608 B).
_PATTERN_CUT = {"nvidia__Nemotron-H-56B-Base-8K": "M-M-M-M*-"}


def case_config(case: str) -> dict:
    """The config dict of a case, with the window shortened to 16 tokens where one applies.

    (Qwen 2.5's ``sliding_window`` 131072 is inert, ``use_sliding_window`` being false: it stays.)"""
    if case in SHIPPED:
        cfg = copy.deepcopy(kvmath.resolve_model(case)["config"])
    else:
        cfg = json.loads((SHARED / f"{case}.json").read_text())
    text = cfg.get("text_config", cfg)
    if text.get("sliding_window") and kvmath.load_architecture(cfg).layers_of("sliding_attention"):
        text["sliding_window"] = WINDOW
    cut = _PATTERN_CUT.get(case)
    if cut and os.environ.get("KVMATH_FULL_REALCACHE") != "1":
        text["hybrid_override_pattern"] = cut
        text["num_hidden_layers"] = len(cut)
    return cfg


_RUNS = {}


def run(case):
    """(config, real cache, kvmath derivation) for one case; each is built once per session."""
    if case not in _RUNS:
        cfg = case_config(case)
        arch = kvmath.load_architecture(cfg)
        # Mamba-2's chunk_size only tiles the prefill scan (no cache field); 16 keeps the reference
        # kernel's [chunk, chunk, heads, state] intermediates small.
        text = cfg.get("text_config", cfg)
        overrides = {"chunk_size": 16} if text.get("model_type") == "nemotron_h" else None
        real = transformers_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE, dtype=arch.dtype,
                                        overrides=overrides)
        # Qwen 2.5: Qwen2Config clears an inert sliding_window (use_sliding_window false); that is expected
        inert = text.get("use_sliding_window") is False
        problems = [c for c in real["config_check"]
                    if not (inert and c["field"] == "sliding_window" and c["built"] is None)]
        assert problems == [], problems
        d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
        _RUNS[case] = (case, cfg, real, d)
    return _RUNS[case]


@pytest.fixture(params=CASES)
def case(request):
    return run(request.param)


def kinds(case_id):
    return {g.kind for g in run(case_id)[3].groups}


def test_total_bytes_equal(case):
    _, _, real, d = case
    assert d.total_bytes == real["total_bytes"]


def test_every_layer_equal(case):
    _, _, real, d = case
    per_layer = {}
    for g in d.groups:
        for i in g.layers:
            per_layer[i] = g.bytes // g.n_layers
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == per_layer


def _counted(layer):
    return {n: t for n, t in layer["tensors"].items() if t.get("counted", True)}


def test_state_tensor_shapes_and_dtypes(case):
    # GDN, Mamba-2 and KDA: conv [B, conv_dim, K] in the model dtype, recurrent state in float32.
    _, _, real, d = case
    groups = [g for g in d.groups if g.state]
    for g in groups:
        layer = next(l for l in real["layers"] if l["index"] == g.layers[0])
        shapes = sorted((tuple(t["shape"][1:]), t["dtype"].replace("torch.", "")) for t in _counted(layer).values())
        assert shapes == sorted((t.shape, t.dtype) for t in g.state)


def test_attention_cells_are_the_cached_tokens(case):
    # full layers keep every token, sliding layers the last W - 1 (DynamicSlidingWindowLayer)
    _, _, real, d = case
    for g in d.groups:
        if g.kind not in ("attention", "mla") or not g.owns_cache:
            continue
        layer = next(l for l in real["layers"] if l["index"] == g.layers[0])
        keys = _counted(layer)["keys"]
        assert keys["shape"][0] == BATCH and keys["shape"][2] == g.cells
        assert g.cells == (WINDOW - 1 if g.layer_type == "sliding_attention" else PREFILL + DECODE)


@pytest.mark.parametrize("case_id", ["deepseek-ai__DeepSeek-V3", "moonshotai__Kimi-Linear-48B-A3B-Instruct"])
def test_mla_layers_cache_latent_keys_and_rope_values(case_id):
    # DeepseekV3Attention / KimiLinearAttention: past_key_values.update(kv_nope [B,1,T,512], k_rot [B,1,T,64])
    _, cfg, real, d = run(case_id)
    (g,) = [g for g in d.groups if g.kind == "mla"]
    layer = next(l for l in real["layers"] if l["index"] == g.layers[0])
    t = _counted(layer)
    assert t["keys"]["shape"] == [BATCH, 1, PREFILL + DECODE, cfg["kv_lora_rank"]]
    assert t["values"]["shape"] == [BATCH, 1, PREFILL + DECODE, cfg["qk_rope_head_dim"]]
    assert g.bytes_per_token == (512 + 64) * 2 == 1152


def test_kimi_layer_lists_are_one_based():
    # full_attn_layers [4, 8, ..., 24, 27] are the MLA layers at 0-based 3, 7, ..., 23, 26
    _, _, real, d = run("moonshotai__Kimi-Linear-48B-A3B-Instruct")
    (g,) = [g for g in d.groups if g.kind == "mla"]
    assert g.layers == (3, 7, 11, 15, 19, 23, 26)
    assert [l["index"] for l in real["layers"] if l["class"] == "DynamicLayer"] == list(g.layers)


@pytest.mark.parametrize("case_id", ["nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia__Nemotron-H-56B-Base-8K"])
def test_nemotron_mlp_and_moe_blocks_hold_nothing(case_id):
    _, _, real, d = run(case_id)
    none = [i for g in d.groups if g.kind == "none" for i in g.layers]
    assert none
    for layer in real["layers"]:
        if layer["index"] in none:
            assert (layer["class"], layer["bytes"]) == ("DummyLayer", 0)


def test_gemma4_k_eq_v_layers_store_both_k_and_v():
    for model in ("gemma-4-31b", "gemma-4-26b-a4b"):
        _, cfg, real, _ = run(model)
        assert cfg["attention_k_eq_v"]
        full = next(l for l in real["layers"] if l["class"] == "DynamicLayer")
        names = {n.split("[")[0] for n in _counted(full)}
        assert {"keys", "values"} <= names
        keys = full["tensors"]["keys"]
        # [batch, num_global_key_value_heads, tokens, global_head_dim]
        assert keys["shape"] == [BATCH, cfg["num_global_key_value_heads"], PREFILL + DECODE, cfg["global_head_dim"]]


@pytest.mark.parametrize("path, layers, dtype", [
    ("tests/fixtures/configs/transformers-5.23-defaults__mamba.json", 2, "bfloat16"),
    ("tests/fixtures/configs/transformers-5.23-defaults__lfm2.json", 4, "float32"),
    ("data/configs/Qwen__Qwen3.6-27B.json", 4, "float32")])
def test_state_in_the_dtype_the_model_is_loaded_in(path, layers, dtype):
    """transformers keeps a model-dtype state (conv states, LFM2's short conv) in the dtype the model is loaded in,
    not the config's: kvmath had sized Mamba's conv states in the config's float32 for a model loaded in bfloat16
    (mamba-2.8b-hf cut to 4 layers: 3,276,800 B against transformers' 2,949,120 B, the seventh held-out check),
    and Qwen 3.5 / 3.6's GDN conv states in bfloat16 for a model loaded in float32. Both sides at the other dtype."""
    cfg = json.loads((Path(__file__).resolve().parents[1] / path).read_text())
    text = cfg.get("text_config", cfg)
    text["num_hidden_layers"] = layers
    for key in ("layer_types", "layers_block_type"):
        if isinstance(text.get(key), list):
            text[key] = text[key][:layers]
    if "full_attention_interval" in text:
        text["full_attention_interval"] = min(text["full_attention_interval"], layers)
    real = transformers_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, dtype=dtype)
    d = kvmath.derive(cfg, engine="transformers", max_ctx=PREFILL, max_num_seqs=BATCH, kv_format=dtype)
    assert d.total_bytes == real["total_bytes"]
