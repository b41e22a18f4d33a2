"""The config loader on the real configs (shared/hf-configs) and the shipped model facts."""

import json
from pathlib import Path

import pytest

import kvmath
from kvmath.arch import FULL, LINEAR, SLIDING

SHARED = Path(__file__).resolve().parents[2] / "shared" / "hf-configs"
FILES = {
    "qwen3.6-27b": "Qwen__Qwen3.6-27B.json",
    "qwen3.6-35b-a3b": "Qwen__Qwen3.6-35B-A3B.json",
    "gemma-4-31b": "google__gemma-4-31B-it.json",
    "gemma-4-26b-a4b": "google__gemma-4-26B-A4B.json",
}
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared/hf-configs is not beside this checkout")


@needs_shared
@pytest.mark.parametrize("model_id", sorted(FILES))
def test_shipped_facts_give_the_same_architecture_as_the_full_config(model_id):
    full = kvmath.load_architecture(SHARED / FILES[model_id])
    shipped = kvmath.load_architecture(model_id)
    assert full.layers == shipped.layers
    assert (full.dtype, full.mamba_ssm_dtype, full.num_attention_heads) == (
        shipped.dtype, shipped.mamba_ssm_dtype, shipped.num_attention_heads)


def test_qwen36_27b_layout_matches_its_layer_types():
    # config.json: 64 layers, every 4th full attention (idx 3, 7, ..., 63), 4 KV heads x 256.
    a = kvmath.load_architecture("qwen3.6-27b")
    assert [l.index for l in a.layers_of(FULL)] == list(range(3, 64, 4))
    assert len(a.layers_of(LINEAR)) == 48
    gdn = a.linear_layers()[0]
    assert (gdn.num_k_heads, gdn.num_v_heads, gdn.k_head_dim, gdn.conv_kernel) == (16, 48, 128, 4)
    assert gdn.conv_dim == 2 * 16 * 128 + 48 * 128
    assert a.mamba_ssm_dtype == "float32"


def test_full_attention_interval_fallback_equals_layer_types():
    cfg = json.loads(json.dumps(kvmath.resolve_model("qwen3.6-35b-a3b")["config"]))
    with_types = kvmath.load_architecture(cfg)
    del cfg["layer_types"]
    assert kvmath.load_architecture(cfg).layers == with_types.layers


def test_gemma4_global_layers_use_global_heads_and_width():
    a = kvmath.load_architecture("gemma-4-31b")
    full, sliding = a.layers_of(FULL), a.layers_of(SLIDING)
    assert [l.index for l in full] == list(range(5, 60, 6))
    assert {(l.num_kv_heads, l.head_dim) for l in full} == {(4, 512)}  # num_global_key_value_heads, global_head_dim
    assert {(l.num_kv_heads, l.head_dim, l.sliding_window) for l in sliding} == {(16, 256, 1024)}
    b = kvmath.load_architecture("gemma-4-26b-a4b")
    assert {(l.num_kv_heads, l.head_dim) for l in b.layers_of(FULL)} == {(2, 512)}
    assert {l.num_kv_heads for l in b.layers_of(SLIDING)} == {8}


def test_gemma4_without_k_eq_v_keeps_num_key_value_heads_on_full_layers():
    # transformers Gemma4TextConfig: num_global_key_value_heads only applies with attention_k_eq_v.
    cfg = dict(kvmath.resolve_model("gemma-4-31b")["config"], attention_k_eq_v=False)
    a = kvmath.load_architecture(cfg)
    assert {l.num_kv_heads for l in a.layers_of(FULL)} == {16}


def test_gemma4_kv_shared_layers_read_the_last_producer_of_their_type():
    cfg = dict(kvmath.resolve_model("gemma-4-26b-a4b")["config"], num_kv_shared_layers=10)
    a = kvmath.load_architecture(cfg)
    # first shared index 20; last non-shared sliding layer is 19, last full layer before 20 is 17.
    assert a.layers[22].kv_source == 19 and a.layers[23].kv_source == 17 and a.layers[29].kv_source == 17
    assert all(l.kv_source is None for l in a.layers[:20])


@pytest.mark.parametrize("bad,match", [
    ({}, "no model_type"),
    ({"model_type": "mamba"}, "not supported"),
    ({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 5,
      "hidden_size": 4096}, "not a multiple of num_key_value_heads"),
    ({"model_type": "llama", "num_hidden_layers": "32", "num_attention_heads": 32, "hidden_size": 4096},
     "must be an integer"),
    ({"model_type": "gemma4_text", "num_hidden_layers": 3, "num_attention_heads": 8, "head_dim": 64,
      "sliding_window": 16, "layer_types": ["sliding_attention"]}, "layer_types has 1 entries"),
    ({"model_type": "qwen3_5_text", "num_hidden_layers": 4, "num_attention_heads": 8, "head_dim": 64,
      "linear_num_key_heads": 16, "linear_num_value_heads": 24, "linear_key_head_dim": 128,
      "linear_value_head_dim": 128}, "not a multiple of linear_num_key_heads"),
    ({"text_config": [1, 2]}, "text_config must be an object"),
])
def test_bad_configs_raise_clear_errors(bad, match):
    with pytest.raises(kvmath.KvMathError, match=match):
        kvmath.load_architecture(bad)


def test_unknown_model_and_bad_files(tmp_path):
    with pytest.raises(kvmath.KvMathError, match="known: gemma-4-26b-a4b"):
        kvmath.load_architecture("llama-9000")
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(kvmath.KvMathError, match="not valid JSON"):
        kvmath.load_architecture(bad)
    with pytest.raises(kvmath.KvMathError, match="no such config.json"):
        kvmath.load_architecture(tmp_path / "missing.json")


def test_hf_repo_names_resolve():
    assert kvmath.load_architecture("Qwen/Qwen3.6-27B").name == "qwen3.6-27b"
