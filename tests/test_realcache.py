"""kvmath's transformers rules against transformers' real cache, on the CPU.

For each model, ``realcache.transformers_cache_bytes`` builds a scaled-down random model with the
same layer pattern, KV heads, head widths and linear-attention state fields as the model's
config.json (hidden sizes, experts and vocabulary shrunk), runs a prefill and a few decode steps,
and adds up the tensors the returned ``DynamicCache`` holds. The window is shortened to 16 tokens so
that 40 tokens cross it; kvmath derives from the very same config dict.
"""

import copy
import sys
from pathlib import Path

import pytest

import kvmath

sys.path.insert(0, str(Path(__file__).parent))
from realcache import transformers_cache_bytes  # noqa: E402

MODELS = ["qwen3.6-27b", "qwen3.6-35b-a3b", "gemma-4-31b", "gemma-4-26b-a4b"]
BATCH, PREFILL, DECODE = 2, 40, 3


def scaled_config(model_id: str) -> dict:
    cfg = copy.deepcopy(kvmath.resolve_model(model_id)["config"])
    if cfg.get("sliding_window"):
        cfg["sliding_window"] = 16
    return cfg


_RUNS = {}


def run(model_id):
    """(config, real cache, kvmath derivation) for one model; each model is built once per session."""
    if model_id not in _RUNS:
        cfg = scaled_config(model_id)
        real = transformers_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE)
        assert real["config_check"] == [], real["config_check"]
        d = kvmath.derive(cfg, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
        _RUNS[model_id] = (model_id, cfg, real, d)
    return _RUNS[model_id]


@pytest.fixture(params=MODELS)
def case(request):
    return run(request.param)


@pytest.fixture(params=[m for m in MODELS if m.startswith("qwen")])
def gdn_case(request):
    return run(request.param)


@pytest.fixture(params=[m for m in MODELS if m.startswith("gemma")])
def gemma_case(request):
    return run(request.param)


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


def test_state_tensor_shapes_and_dtypes(gdn_case):
    _, _, real, d = gdn_case
    (g,) = [g for g in d.groups if g.layer_type == "linear_attention"]
    layer = next(l for l in real["layers"] if l["index"] == g.layers[0])
    shapes = sorted((tuple(t["shape"][1:]), t["dtype"].replace("torch.", "")) for t in layer["tensors"].values()
                    if t.get("counted", True))
    assert shapes == sorted((t.shape, t.dtype) for t in g.state)


def test_gemma4_k_eq_v_layers_store_both_k_and_v(gemma_case):
    model, cfg, real, _ = gemma_case
    assert cfg["attention_k_eq_v"]
    full = next(l for l in real["layers"] if l["class"] == "DynamicLayer")
    names = {n.split("[")[0] for n, t in full["tensors"].items() if t.get("counted", True)}
    assert {"keys", "values"} <= names
    keys = full["tensors"]["keys"]
    # [batch, num_global_key_value_heads, tokens, global_head_dim]
    assert keys["shape"] == [BATCH, cfg["num_global_key_value_heads"], PREFILL + DECODE, cfg["global_head_dim"]]
