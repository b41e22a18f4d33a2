"""The config loader on the real configs (data/configs) and the shipped model facts."""

import json
from pathlib import Path

import pytest

import kvmath
from kvmath.errors import KvMathError
from kvmath.model.specs import FULL, LINEAR, SLIDING

SHARED = Path(__file__).resolve().parents[1] / "data" / "configs"  # the reference configs (data/configs/SOURCES.md)
FILES = {
    "qwen3.6-27b": "Qwen__Qwen3.6-27B.json",
    "qwen3.6-35b-a3b": "Qwen__Qwen3.6-35B-A3B.json",
    "gemma-4-31b": "google__gemma-4-31B-it.json",
    "gemma-4-26b-a4b": "google__gemma-4-26B-A4B.json",
}


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
    ({"model_type": "rwkv"}, "not supported"),
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
    with pytest.raises(kvmath.KvMathError, match="known: .*gemma-4-26b-a4b"):
        kvmath.load_architecture("llama-9000")
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(kvmath.KvMathError, match="not valid JSON"):
        kvmath.load_architecture(bad)
    with pytest.raises(kvmath.KvMathError, match="no such config.json"):
        kvmath.load_architecture(tmp_path / "missing.json")


def test_hf_repo_names_resolve():
    assert kvmath.load_architecture("Qwen/Qwen3.6-27B").name == "qwen3.6-27b"


# Layer kinds per config, from the key-fields table of data/configs/SOURCES.md.
SHARED_LAYOUTS = {
    "Qwen__Qwen2.5-7B-Instruct.json": {"full_attention": 28},
    "Qwen__Qwen2.5-7B.json": {"full_attention": 28},
    "Qwen__Qwen3-32B.json": {"full_attention": 64},
    "Qwen__Qwen3-Next-80B-A3B-Instruct.json": {"linear_attention": 36, "full_attention": 12},
    "Qwen__Qwen3.5-27B.json": {"linear_attention": 48, "full_attention": 16},
    "Qwen__Qwen3.5-35B-A3B.json": {"linear_attention": 30, "full_attention": 10},
    "Qwen__Qwen3.6-27B.json": {"linear_attention": 48, "full_attention": 16},
    "Qwen__Qwen3.6-35B-A3B.json": {"linear_attention": 30, "full_attention": 10},
    "deepseek-ai__DeepSeek-V3.json": {"full_attention": 61},
    "google__gemma-2-9b.json": {"sliding_attention": 21, "full_attention": 21},
    "google__gemma-4-26B-A4B.json": {"sliding_attention": 25, "full_attention": 5},
    "google__gemma-4-31B-it.json": {"sliding_attention": 50, "full_attention": 10},
    "meta-llama__Llama-3.1-70B-Instruct.json": {"full_attention": 80},
    "meta-llama__Llama-3.1-70B.json": {"full_attention": 80},
    "meta-llama__Llama-3.1-8B-Instruct.json": {"full_attention": 32},
    "meta-llama__Llama-3.1-8B.json": {"full_attention": 32},
    "mistralai__Mistral-7B-v0.1.json": {"sliding_attention": 32},
    "moonshotai__Kimi-Linear-48B-A3B-Instruct.json": {"linear_attention": 20, "full_attention": 7},
    "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json": {"linear_attention": 23, "full_attention": 6, "moe": 23},
    "nvidia__Nemotron-H-56B-Base-8K.json": {"linear_attention": 54, "full_attention": 10, "mlp": 54},
    "openai__gpt-oss-120b.json": {"sliding_attention": 18, "full_attention": 18},
    "openai__gpt-oss-20b.json": {"sliding_attention": 12, "full_attention": 12},
}


@pytest.mark.parametrize("name", sorted(SHARED_LAYOUTS))
def test_every_shared_config_loads_with_its_layer_kinds(name):
    a = kvmath.load_architecture(SHARED / name)
    assert a.layer_type_counts() == SHARED_LAYOUTS[name]


def test_no_shared_config_is_left_out():
    assert {p.name for p in SHARED.glob("*.json")} <= set(SHARED_LAYOUTS)


def test_mla_and_state_layer_fields():
    d = kvmath.load_architecture(SHARED / "deepseek-ai__DeepSeek-V3.json")
    assert {(l.kv_lora_rank, l.qk_rope_head_dim, l.qk_nope_head_dim, l.v_head_dim) for l in d.layers} == {
        (512, 64, 128, 128)}
    assert d.mtp_num_hidden_layers == 1  # num_nextn_predict_layers
    k = kvmath.load_architecture(SHARED / "moonshotai__Kimi-Linear-48B-A3B-Instruct.json")
    # linear_attn_config lists are 1-based: full_attn_layers [4, 8, ..., 24, 27] -> 0-based 3, 7, ..., 23, 26
    assert [l.index for l in k.mla_layers()] == [3, 7, 11, 15, 19, 23, 26]
    assert {(l.num_heads, l.head_dim, l.conv_kernel, l.conv_dim) for l in k.state_layers()} == {(32, 128, 4, 12288)}
    n = kvmath.load_architecture(SHARED / "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json")
    pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
    assert "".join({"linear_attention": "M", "full_attention": "*", "moe": "E"}[l.layer_type]
                   for l in n.layers) == pattern
    (m,) = {(l.num_heads, l.head_dim, l.state_size, l.n_groups, l.conv_kernel, l.conv_dim) for l in n.state_layers()}
    assert m == (64, 64, 128, 8, 4, 64 * 64 + 2 * 8 * 128)
    assert n.mamba_ssm_dtype == "float32" and {l.num_kv_heads for l in n.attention_layers()} == {2}
    big = kvmath.load_architecture(SHARED / "nvidia__Nemotron-H-56B-Base-8K.json")
    assert {(l.num_kv_heads, l.head_dim) for l in big.attention_layers()} == {(8, 128)}  # attention_head_dim
    assert big.mamba_ssm_dtype is None


@pytest.mark.parametrize("model_type,needs", [
    ("rwkv", "no KV cache"),
    ("some_new_model", "layer_types, num_key_value_heads, head_dim"),
])
def test_unknown_architectures_fail_naming_type_and_fields(model_type, needs):
    cfg = {"model_type": model_type, "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512}
    with pytest.raises(kvmath.KvMathError, match=f"model_type '{model_type}' is not supported") as e:
        kvmath.load_architecture(cfg)
    assert needs in str(e.value) and "deepseek_v3" in str(e.value)


@pytest.mark.parametrize("model_type,needs", [("falcon_mamba", "no expand"), ("mamba", "no expand"),
                                              ("jamba", "no attn_layer_period"), ("mamba2", "no num_heads"),
                                              ("falcon_h1", "no mamba_n_heads"), ("bamba", "no mamba_n_heads")])
def test_state_space_families_refuse_a_field_left_to_the_class_default(model_type, needs):
    cfg = {"model_type": model_type, "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512}
    with pytest.raises(kvmath.KvMathError, match=needs):
        kvmath.load_architecture(cfg)


KIMI_MIN = {"model_type": "kimi_linear", "num_hidden_layers": 4, "num_attention_heads": 8, "kv_lora_rank": 64,
            "qk_rope_head_dim": 16, "linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 2, 3],
                                                           "num_heads": 8, "head_dim": 32, "short_conv_kernel_size": 4}}
NEMO_MIN = {"model_type": "nemotron_h", "hybrid_override_pattern": "M-*E", "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 64, "mamba_num_heads": 8, "mamba_head_dim": 32,
            "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4}


FALCON_H1_MIN = {"model_type": "falcon_h1", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 32,
                 "mamba_d_ssm": 32, "mamba_n_heads": 4, "mamba_d_state": 8}


def with_(base, **changes):
    cfg = json.loads(json.dumps(base))
    for k, v in changes.items():
        if k.startswith("lac_"):
            cfg["linear_attn_config"][k[4:]] = v
        elif v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    return cfg


def test_minimal_hybrids_load():
    k = kvmath.load_architecture(KIMI_MIN)
    assert [type(l).__name__ for l in k.layers] == ["KDALayer"] * 3 + ["MLALayer"]
    n = kvmath.load_architecture(NEMO_MIN)
    assert [type(l).__name__ for l in n.layers] == ["Mamba2Layer", "NoCacheLayer", "AttentionLayer", "NoCacheLayer"]
    # layers_block_type (transformers 5.x name) agrees with the pattern: accepted
    same = with_(NEMO_MIN, layers_block_type=["linear_attention", "mlp", "full_attention", "moe"])
    assert kvmath.load_architecture(same).layers == n.layers


@pytest.mark.parametrize("bad,match", [
    (with_(KIMI_MIN, lac_full_attn_layers=[4, 5]), "must be <= 4"),
    (with_(KIMI_MIN, lac_full_attn_layers=[0]), "must be >= 1"),
    (with_(KIMI_MIN, lac_full_attn_layers=[3]), "both full attention and KDA"),
    (with_(KIMI_MIN, lac_full_attn_layers=[2, 2]), "twice"),
    (with_(KIMI_MIN, lac_kda_layers=[1, 2]), "leave layers 3 of 4 unassigned"),
    (with_(KIMI_MIN, linear_attn_config={"num_heads": 8}), "needs linear_attn_config.full_attn_layers"),
    (with_(KIMI_MIN, linear_attn_config=[1]), "linear_attn_config must be an object"),
    (with_(KIMI_MIN, layer_types=["full_attention"] * 4), "disagree"),
    (with_(KIMI_MIN, lac_head_dim=None), "missing head_dim"),
    (with_(KIMI_MIN, kv_lora_rank=None), "missing kv_lora_rank"),
    (with_(NEMO_MIN, hybrid_override_pattern="M-*X"), "valid letters"),
    (with_(NEMO_MIN, hybrid_override_pattern=""), "non-empty string"),
    (with_(NEMO_MIN, hybrid_override_pattern=None), "needs hybrid_override_pattern"),
    (with_(NEMO_MIN, num_hidden_layers=5), "has 4 entries but num_hidden_layers is 5"),
    (with_(NEMO_MIN, layers_block_type=["linear_attention"] * 4), "disagree"),
    (with_(NEMO_MIN, hybrid_override_pattern="--EE"), "no layer that keeps a cache"),
    (with_(NEMO_MIN, n_groups=3), "not a multiple of n_groups"),
    (with_(NEMO_MIN, mamba_num_heads=None), "missing mamba_num_heads"),
    ({"model_type": "deepseek_v3", "num_hidden_layers": 2, "num_attention_heads": 8, "kv_lora_rank": 512},
     "missing qk_rope_head_dim"),
    ({"model_type": "deepseek_v3", "num_hidden_layers": 2, "num_attention_heads": 8, "kv_lora_rank": 512,
      "qk_rope_head_dim": 64, "layer_types": ["full_attention", "sliding_attention"]}, "valid layer types"),
    ({"model_type": "llama", "num_hidden_layers": 10**9, "num_attention_heads": 8, "hidden_size": 512},
     "must be <= 512"),  # kvmath.validate.MAX_LAYERS (llama.cpp LLAMA_MAX_LAYERS)
    ({"model_type": "llama", "num_hidden_layers": float("nan"), "num_attention_heads": 8, "hidden_size": 512},
     "must be an integer"),
])
def test_bad_hybrid_configs_raise_clear_errors(bad, match):
    with pytest.raises(kvmath.KvMathError, match=match):
        kvmath.load_architecture(bad)


LLAMA_MIN = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
             "hidden_size": 512}


@pytest.mark.parametrize("bad,match", [
    # a window of 1 keeps no past token; transformers' [-W + 1:] slice then keeps all of them
    (dict(LLAMA_MIN, model_type="mistral", sliding_window=1), "sliding_window must be >= 2"),
    # MistralConfig defaults a missing window to 4096: kvmath wants it written out
    (dict(LLAMA_MIN, model_type="mistral"), "no sliding_window key"),
    (dict(LLAMA_MIN, model_type="qwen2", use_sliding_window=True, sliding_window=64), "no max_window_layers key"),
    # transformers keeps the window in the cache, vLLM drops it
    (dict(LLAMA_MIN, sliding_window=64, use_sliding_window=False), "engines|vLLM would not"),
    # architectures without a window, given one
    (with_(KIMI_MIN, sliding_window=64), "has no sliding window"),
    (with_(NEMO_MIN, sliding_window=64), "has no sliding window"),
    ({"model_type": "deepseek_v3", "num_hidden_layers": 2, "num_attention_heads": 8, "kv_lora_rank": 512,
      "qk_rope_head_dim": 64, "sliding_window": 4096}, "has no sliding window"),
    # multimodal wrapper without its text part
    ({"model_type": "qwen3_5", "num_hidden_layers": 4}, "multimodal wrapper"),
    ({"model_type": [], "text_config": {"model_type": None}}, "wraps a text_config but is not a wrapper"),
    ({"model_type": "qwen3_5", "text_config": {"model_type": None}}, "no model_type|missing"),
    # a text_config naming its model_type by a non-string (found by the config fuzz test in CI): one line, no
    # TypeError from the wrapper's remap table
    ({"model_type": "gemma4", "text_config": {"model_type": []}}, "text_config.model_type must be"),
    ({"model_type": "kimi_k25", "text_config": {"model_type": {"a": 1}}}, "text_config.model_type must be"),
])
def test_window_and_wrapper_contradictions(bad, match):
    with pytest.raises(kvmath.KvMathError, match=match):
        kvmath.load_architecture(bad)


def test_window_rules_follow_transformers():
    # llama given a window is windowed on every layer, like mistral (cache_utils get_layer_types_and_kwargs;
    # vLLM models/llama.py with the model-level window); a null window is no window
    a = kvmath.load_architecture(dict(LLAMA_MIN, sliding_window=64))
    assert {(l.layer_type, l.sliding_window) for l in a.layers} == {("sliding_attention", 64)}
    assert kvmath.load_architecture(dict(LLAMA_MIN, model_type="mistral", sliding_window=None)).layer_type_counts() == {
        "full_attention": 4}
    # Qwen 2 with the window on: layers >= max_window_layers
    q = kvmath.load_architecture(dict(LLAMA_MIN, model_type="qwen2", use_sliding_window=True, sliding_window=64,
                                      max_window_layers=2))
    assert [l.layer_type for l in q.layers] == ["full_attention"] * 2 + ["sliding_attention"] * 2
    # a wrapper's text_config without model_type is the wrapper's text model
    cfg = json.loads(json.dumps(kvmath.resolve_model("qwen3.6-27b")["config"]))
    wrapped = {"model_type": "qwen3_5", "text_config": {k: v for k, v in cfg.items() if k != "model_type"}}
    assert kvmath.load_architecture(wrapped).layers == kvmath.load_architecture(cfg).layers


# --- Gemma 4 as transformers 5.x saves it: per_layer_config instead of global_head_dim / num_global_* ----------

GEMMA4_31B = SHARED / "google__gemma-4-31B-it.json"


def gemma4_per_layer_form(path=GEMMA4_31B) -> dict:
    """The 31B config in the form transformers >= 5.15 ``save_pretrained`` writes (5.23 read): the flat
    ``global_head_dim`` / ``num_global_key_value_heads`` are gone, each full layer's overrides sit in
    ``per_layer_config`` under a zero-padded index (HeterogeneousConfigMixin._update_heterogeneous_to_dict_output)."""
    cfg = json.loads(path.read_text())
    t = cfg["text_config"]
    full = [i for i, lt in enumerate(t["layer_types"]) if lt == "full_attention"]
    overrides = {"head_dim": t.pop("global_head_dim"), "num_key_value_heads": t.pop("num_global_key_value_heads")}
    t["per_layer_config"] = {f"{i:02d}": dict(overrides) for i in full}
    return cfg


def test_gemma4_per_layer_config_form_reads_the_full_layers_exactly():
    cfg = gemma4_per_layer_form()
    assert "global_head_dim" not in cfg["text_config"] and cfg["text_config"]["head_dim"] == 256
    a = kvmath.load_architecture(cfg)
    assert a.layers == kvmath.load_architecture(GEMMA4_31B).layers
    assert {(l.num_kv_heads, l.head_dim) for l in a.layers_of(FULL)} == {(4, 512)}
    assert {(l.num_kv_heads, l.head_dim) for l in a.layers_of(SLIDING)} == {(16, 256)}
    # by hand: 10 full layers x 4 KV heads x 512 x 2 (K and V) x 2 B (bf16); the sliding layers are windowed
    expected = 10 * 4 * 512 * 2 * 2
    assert expected == 81_920
    for engine in ("vllm", "llama.cpp", "transformers"):
        assert kvmath.derive(cfg, engine=engine, max_ctx=8192).bytes_per_token == expected, engine


def test_gemma4_per_layer_config_as_transformers_writes_it():
    import transformers  # pinned in requirements-test.lock
    cfg = json.loads(GEMMA4_31B.read_text())
    saved = json.loads(transformers.Gemma4Config(**cfg).to_json_string(use_diff=True))
    t = saved["text_config"]
    assert "per_layer_config" in t and "global_head_dim" not in t and "num_global_key_value_heads" not in t
    assert kvmath.load_architecture(saved).layers == kvmath.load_architecture(GEMMA4_31B).layers


@pytest.mark.parametrize("change,match", [
    # a full layer's entry without its KV heads (attention_k_eq_v is true): never the sliding 16
    (lambda t: t["per_layer_config"].__setitem__("11", {"head_dim": 512}), r"num_key_value_heads for full-attention layers 11"),
    # without its width: never the sliding 256
    (lambda t: t["per_layer_config"].__setitem__("05", {"num_key_value_heads": 4}), r"head_dim for full-attention layers 5"),
    (lambda t: t.__setitem__("per_layer_config", {}), r"does not state head_dim for full-attention layers 5, 11"),
    # neither form: the old silent 4x
    (lambda t: t.pop("per_layer_config"), r"global_head_dim and num_global_key_value_heads"),
    (lambda t: t.__setitem__("per_layer_config", {"x5": {}}), "not a layer index"),
    (lambda t: t.__setitem__("per_layer_config", {"60": {}}), r"not a layer index in \[0, 60\)"),
    (lambda t: t.__setitem__("per_layer_config", [1]), "must be an object"),
    (lambda t: t["per_layer_config"]["05"].__setitem__("skip", ["self_attn"]), "overrides 'skip'"),
    (lambda t: t.__setitem__("global_head_dim", 256), "sets global_head_dim 256 but per_layer_config gives"),
])
def test_gemma4_full_layer_fields_that_cannot_be_read_are_refused(change, match):
    cfg = gemma4_per_layer_form()
    change(cfg["text_config"])
    with pytest.raises(kvmath.KvMathError, match=match):
        kvmath.load_architecture(cfg)


def test_gemma4_flat_form_needs_its_global_fields():
    cfg = json.loads(GEMMA4_31B.read_text())
    del cfg["text_config"]["num_global_key_value_heads"]  # attention_k_eq_v true: transformers would use 16
    with pytest.raises(kvmath.KvMathError, match="num_global_key_value_heads"):
        kvmath.load_architecture(cfg)
    cfg = json.loads(GEMMA4_31B.read_text())
    del cfg["text_config"]["global_head_dim"]  # transformers would default it to 512
    with pytest.raises(kvmath.KvMathError, match="global_head_dim"):
        kvmath.load_architecture(cfg)


def test_gemma4_per_layer_form_without_k_eq_v_keeps_num_key_value_heads():
    # google/gemma-4-E2B-it as saved by transformers 5.x: full layers override head_dim only
    # (attention_k_eq_v false, so Gemma4TextConfig writes no num_key_value_heads override)
    cfg = {"model_type": "gemma4_text", "num_hidden_layers": 10, "num_attention_heads": 8, "num_key_value_heads": 1,
           "head_dim": 256, "sliding_window": 512, "attention_k_eq_v": False,
           "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 2,
           "per_layer_config": {"04": {"head_dim": 512}, "09": {"head_dim": 512}}}
    a = kvmath.load_architecture(cfg)
    assert {(l.num_kv_heads, l.head_dim) for l in a.layers_of(FULL)} == {(1, 512)}
    assert {(l.num_kv_heads, l.head_dim) for l in a.layers_of(SLIDING)} == {(1, 256)}
    assert kvmath.derive(cfg, engine="transformers", max_ctx=1024).bytes_per_token == 2 * 1 * 512 * 2 * 2


# --- families added in issue 10 (configs written from the published config.json; sizes by hand) -------------

# Qwen/Qwen3-30B-A3B config.json (https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json), cache fields
QWEN3_30B_A3B = {"model_type": "qwen3_moe", "num_hidden_layers": 48, "num_attention_heads": 32,
                 "num_key_value_heads": 4, "head_dim": 128, "hidden_size": 2048, "max_position_embeddings": 40960,
                 "max_window_layers": 48, "sliding_window": None, "use_sliding_window": False, "num_experts": 128,
                 "num_experts_per_tok": 8, "torch_dtype": "bfloat16", "vocab_size": 151936}
# mistralai/Mixtral-8x7B-v0.1 config.json (https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json)
MIXTRAL_8X7B = {"model_type": "mixtral", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "hidden_size": 4096, "max_position_embeddings": 32768, "sliding_window": None, "num_local_experts": 8,
                "num_experts_per_tok": 2, "torch_dtype": "bfloat16", "vocab_size": 32000}
# google/gemma-3-27b-it config.json text_config (https://huggingface.co/google/gemma-3-27b-it/blob/main/config.json;
# relies on Gemma3TextConfig's max_position_embeddings default, 131072)
GEMMA3_27B = {"model_type": "gemma3", "torch_dtype": "bfloat16", "text_config": {
    "head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text",
    "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16, "query_pre_attn_scalar": 168,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024, "sliding_window_pattern": 6}}
# MiniMaxAI/MiniMax-M2.5 config.json (https://huggingface.co/MiniMaxAI/MiniMax-M2.5/blob/main/config.json), cache fields
MINIMAX_M25 = {"model_type": "minimax_m2", "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
               "head_dim": 128, "hidden_size": 3072, "max_position_embeddings": 196608, "num_local_experts": 256,
               "num_experts_per_tok": 8,
               "torch_dtype": "bfloat16"}
# minimal hand-written configs with the published models' attention shapes (GLM-4-9B-0414, GLM-4.5)
GLM4_MIN = {"model_type": "glm4", "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2,
            "head_dim": 128, "hidden_size": 4096, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}
GLM45_MIN = {"model_type": "glm4_moe", "num_hidden_layers": 92, "num_attention_heads": 96, "num_key_value_heads": 8,
             "head_dim": 128, "hidden_size": 5120, "max_position_embeddings": 131072, "n_routed_experts": 160,
             "num_experts_per_tok": 8, "num_nextn_predict_layers": 1, "torch_dtype": "bfloat16"}
PHI3_MIN = {"model_type": "phi3", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
            "hidden_size": 3072, "max_position_embeddings": 4096, "sliding_window": None, "torch_dtype": "bfloat16"}
# minimal hand-written Granite 4.0-H layout: Mamba-2 and attention layers named the published way
GRANITE_H_MIN = {"model_type": "granitemoehybrid", "num_hidden_layers": 4, "hidden_size": 256,
                 "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
                 "layer_types": ["mamba", "mamba", "attention", "mamba"], "mamba_n_heads": 8, "mamba_d_head": "auto",
                 "mamba_d_state": 16, "mamba_n_groups": 2, "mamba_d_conv": 4, "mamba_expand": 2,
                 "torch_dtype": "bfloat16"}

ENGINES = ("vllm", "llama.cpp", "transformers")


@pytest.mark.parametrize("cfg,counts,per_token", [
    # 48 layers x 4 KV heads x 128 x 2 (K, V) x 2 B
    (QWEN3_30B_A3B, {"full_attention": 48}, 48 * 4 * 128 * 2 * 2),
    # head_dim = 4096 / 32 = 128: 32 x 8 x 128 x 2 x 2
    (MIXTRAL_8X7B, {"full_attention": 32}, 32 * 8 * 128 * 2 * 2),
    (MINIMAX_M25, {"full_attention": 62}, 62 * 8 * 128 * 2 * 2),
    (GLM4_MIN, {"full_attention": 40}, 40 * 2 * 128 * 2 * 2),
    (GLM45_MIN, {"full_attention": 92}, 92 * 8 * 128 * 2 * 2),  # head_dim 128, not 5120 / 96
    (PHI3_MIN, {"full_attention": 32}, 32 * 32 * 96 * 2 * 2),  # 3072 / 32 = 96
    # 62 layers, full iff (i + 1) % 6 == 0: 10 full (5, 11, ..., 59); the 52 sliding layers are windowed
    (GEMMA3_27B, {"sliding_attention": 52, "full_attention": 10}, 10 * 16 * 128 * 2 * 2),
])
def test_new_families_layer_kinds_and_bytes_per_token(cfg, counts, per_token):
    a = kvmath.load_architecture(cfg)
    assert a.layer_type_counts() == counts
    for engine in ENGINES:
        assert kvmath.derive(cfg, engine=engine, max_ctx=4096).bytes_per_token == per_token, engine


def test_new_families_fields():
    q = kvmath.load_architecture(QWEN3_30B_A3B)
    assert {(l.num_kv_heads, l.head_dim) for l in q.layers} == {(4, 128)} and q.num_experts == 128
    g = kvmath.load_architecture(GLM45_MIN)
    assert g.mtp_num_hidden_layers == 1 and g.num_experts == 160
    gem = kvmath.load_architecture(GEMMA3_27B)
    assert [l.index for l in gem.layers_of(FULL)] == list(range(5, 62, 6))
    assert {(l.num_kv_heads, l.head_dim, l.sliding_window) for l in gem.layers_of(SLIDING)} == {(16, 128, 1024)}
    # Gemma3TextConfig default length; vLLM does not scale Gemma 3's length by its rope_scaling factor
    assert gem.max_position_embeddings == gem.derived_max_model_len == 131072
    # layer_types instead of sliding_window_pattern
    text = dict(GEMMA3_27B["text_config"], layer_types=["sliding_attention"] * 5 + ["full_attention"] + (
        ["sliding_attention"] * 5 + ["full_attention"]) * 9 + ["sliding_attention"] * 2)
    del text["sliding_window_pattern"]
    assert kvmath.load_architecture(dict(GEMMA3_27B, text_config=text)).layers == gem.layers


def test_gemma3_defaults_are_transformers_defaults():
    # google/gemma-3-4b-it's text_config writes no head counts or head_dim: Gemma3TextConfig gives 8 heads,
    # 4 KV heads, head_dim 256 (not 2560 / 8)
    cfg = {"model_type": "gemma3", "torch_dtype": "bfloat16", "text_config": {
        "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}}
    a = kvmath.load_architecture(cfg)
    assert {(l.num_kv_heads, l.head_dim) for l in a.layers} == {(4, 256)}
    assert a.layer_type_counts() == {"sliding_attention": 29, "full_attention": 5}
    import transformers  # pinned in requirements-test.lock
    built = transformers.Gemma3TextConfig(**{k: v for k, v in cfg["text_config"].items() if k != "model_type"})
    assert (built.num_key_value_heads, built.head_dim, built.num_attention_heads) == (4, 256, 8)
    assert [l.layer_type for l in a.layers] == built.layer_types


def test_granite_hybrid_mamba2_and_attention():
    a = kvmath.load_architecture(GRANITE_H_MIN)
    assert [type(l).__name__ for l in a.layers] == ["Mamba2Layer", "Mamba2Layer", "AttentionLayer", "Mamba2Layer"]
    m = a.state_layers()[0]
    # mamba_d_head "auto" = mamba_expand * hidden_size / mamba_n_heads = 512 / 8
    assert (m.num_heads, m.head_dim, m.state_size, m.n_groups, m.conv_kernel) == (8, 64, 16, 2, 4)
    assert m.conv_dim == 512 + 2 * 2 * 16
    (attn,) = a.attention_layers()
    assert (attn.num_kv_heads, attn.head_dim) == (2, 64)  # 256 / 4
    assert kvmath.derive(GRANITE_H_MIN, engine="transformers", max_ctx=1024).bytes_per_token == 1 * 2 * 64 * 2 * 2
    # transformers' own config class agrees on the layer kinds and the Mamba-2 head width
    import transformers  # pinned in requirements-test.lock
    built = transformers.GraniteMoeHybridConfig(**{k: v for k, v in GRANITE_H_MIN.items() if k != "model_type"})
    assert built.layer_types == ["linear_attention", "linear_attention", "full_attention", "linear_attention"]
    assert built.mamba_d_head == m.head_dim


@pytest.mark.parametrize("cfg,match", [
    (dict(MIXTRAL_8X7B, sliding_window=4096), "mixtral config sets sliding_window 4096"),
    (dict(PHI3_MIN, sliding_window=1), "sliding_window must be >= 2"),  # phi3 windows are read (test_families)
    (dict(QWEN3_30B_A3B, use_sliding_window=True, sliding_window=4096), "no max_window_layers rule"),
    ({k: v for k, v in GLM4_MIN.items() if k != "head_dim"}, "default it to 128"),
    ({k: v for k, v in MINIMAX_M25.items() if k != "head_dim"}, "default it to 128"),
    ({k: v for k, v in GRANITE_H_MIN.items() if k != "layer_types"}, "needs layer_types"),
    (dict(GRANITE_H_MIN, layer_types=["mamba", "shortconv", "attention", "mamba"]), "valid layer types"),
    (dict(GRANITE_H_MIN, mamba_d_head=32), "mamba_d_head 32 x mamba_n_heads 8"),
    (dict(GRANITE_H_MIN, sliding_window=64), "has no sliding window"),
    ({"model_type": "gemma3_text", "num_hidden_layers": 6, "use_bidirectional_attention": True}, "encoder"),
    (dict(FALCON_H1_MIN, layers_block_type=["hybrid", "attention"]), "must be 'hybrid' on every layer"),
    (dict(FALCON_H1_MIN, mamba_d_head=16), "mamba_n_heads 4 x mamba_d_head 16 must equal the Mamba width 32"),
    (dict(FALCON_H1_MIN, mamba_n_groups=3), "not a multiple of mamba_n_groups 3"),
    (dict(FALCON_H1_MIN, model_type="bamba"), "bamba config has no attn_layer_indices"),
    (dict(FALCON_H1_MIN, model_type="bamba", attn_layer_indices=[2]), r"attn_layer_indices must be .* \[0, 2\)"),
    ({"model_type": "minimax", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512,
      "attn_type_list": [0, 1, 0, 1]}, "does not read attn_type_list"),
    ({"model_type": "lfm2_moe", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512,
      "conv_L_cache": 3, "full_attn_idxs": [1, 3]}, "Lfm2MoeConfig has no full_attn_idxs"),
])
def test_new_families_refuse_what_they_cannot_read(cfg, match):
    with pytest.raises(kvmath.KvMathError, match=match):
        kvmath.load_architecture(cfg)


def test_config_without_max_position_embeddings_gives_per_token_figures_with_max_ctx():
    # Kimi Linear states model_max_length, not max_position_embeddings: every per-token figure works once a
    # length is given; asking for one without it names max_ctx
    cfg = json.loads((SHARED / "moonshotai__Kimi-Linear-48B-A3B-Instruct.json").read_text())
    a = kvmath.load_architecture(cfg)
    assert a.max_position_embeddings is None
    # by hand: 7 MLA layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B in vLLM / llama.cpp (one latent row)
    assert kvmath.derive(cfg, engine="vllm", max_ctx=4096, enable_prefix_caching=False).bytes_per_token == 7 * 576 * 2
    for engine in ENGINES:
        kw = {"enable_prefix_caching": False} if engine == "vllm" else {}
        assert kvmath.derive(cfg, engine=engine, max_ctx=4096, **kw).bytes_per_token > 0
        with pytest.raises(kvmath.KvMathError, match="no max_position_embeddings; pass max_ctx"):
            kvmath.derive(cfg, engine=engine, **kw)


NEW_FAMILY_CASES = {"qwen3_moe": QWEN3_30B_A3B, "mixtral": MIXTRAL_8X7B, "minimax_m2": MINIMAX_M25, "glm4": GLM4_MIN,
                    "glm4_moe": GLM45_MIN, "phi3": PHI3_MIN, "gemma3": GEMMA3_27B, "granitemoehybrid": GRANITE_H_MIN}


@pytest.mark.parametrize("family", sorted(NEW_FAMILY_CASES))
def test_new_families_match_transformers_real_cache(family):
    """kvmath's transformers total against the DynamicCache a scaled-down random model really fills
    (tests/realcache.py: cache fields kept, widths of everything else shrunk), window cut to 16 tokens
    and long models cut to 12 layers (the Gemma 3 pattern keeps its two full layers)."""
    import torch  # noqa: F401 - pinned in requirements-test.lock
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from realcache import transformers_cache_bytes

    cfg = json.loads(json.dumps(NEW_FAMILY_CASES[family]))
    t = cfg.get("text_config", cfg)
    if t.get("sliding_window"):
        t["sliding_window"] = 16
    t["num_hidden_layers"] = min(t["num_hidden_layers"], 12)
    real = transformers_cache_bytes(cfg, batch=2, seq_len=40, decode_steps=3, threads=1)
    assert [c for c in real["config_check"] if c["field"] != "layer_types"] == []
    d = kvmath.derive(cfg, engine="transformers", max_ctx=43, max_num_seqs=2)
    assert d.total_bytes == real["total_bytes"]


@pytest.mark.parametrize("name, section, key", [
    ("openai__gpt-oss-20b", None, "num_key_value_heads"), ("google__gemma-2-9b", None, "head_dim"),
    ("Qwen__Qwen3.6-27B", "text_config", "num_key_value_heads"), ("Qwen__Qwen3.6-27B", "text_config", "head_dim")])
def test_a_null_where_the_config_class_takes_an_int_is_refused(name, section, key):
    """A null num_key_value_heads / head_dim was read as absent and priced another width (Qwen 3.6 with every head:
    616,562,688 -> 1,981,808,640 B at 4,096 tokens, the fifth bad-input probe). transformers 5.23's config class
    refuses the same null (an int field), so no engine loads the config: kvmath refuses it in one line."""
    from transformers import CONFIG_MAPPING

    cfg = json.loads((SHARED / f"{name}.json").read_text())
    holder = cfg[section] if section else cfg
    holder[key] = None
    with pytest.raises(Exception, match="Validation|validation|None"):  # the independent check: the class refuses
        CONFIG_MAPPING[holder["model_type"]](**{key: None})
    with pytest.raises(KvMathError, match=f"sets {key} null") as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)
