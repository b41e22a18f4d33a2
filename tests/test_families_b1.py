"""Issue 20, session-34 batch B1: the families and wrappers of kvmath/model/hf_batch_b1.py.

Each fixture's cache is also checked layer by layer against transformers 5.23's real cache by
tests/test_families.py (every file under tests/fixtures/configs is a case there); this file adds what that
parametrized test does not: the whole wrapper built by transformers, hand derivations, the class defaults a sparse
config relies on (against the config object transformers builds), the engines' one-line refusals and the
configs that would be guessed."""

from __future__ import annotations

import copy

import pytest

import kvmath
from kvmath.errors import KvMathError
from test_families import DEFAULTS, OVERRIDES, _check_wrapper_cache, _config, _test_config


@pytest.mark.parametrize("case", [DEFAULTS + "glmga", DEFAULTS + "cohere_compass", DEFAULTS + "ernie4_5_vl_moe"])
def test_b1_wrapper_model_caches_only_its_text_part(case):
    """The whole wrapper transformers 5.23 builds from the config (its own config class building the text part, the
    tower cut to one layer), run on text tokens: its cache equals kvmath's derivation layer by layer."""
    _check_wrapper_cache(_test_config(case), OVERRIDES.get(case))


def test_mistral_small_4_as_published_a_mistral3_wrapper_of_mistral4():
    """Mistral Small 4 ships as ``mistral3`` with a ``mistral4`` text_config: the whole Mistral3 model built from it
    caches the MLA latent of its text part only (kvmath reads the text part as mistral4)."""
    text = _config(DEFAULTS + "mistral4")
    cfg = {"model_type": "mistral3", "text_config": text,
           "vision_config": {"model_type": "pixtral", "hidden_size": 64, "intermediate_size": 64,
                             "num_hidden_layers": 1, "num_attention_heads": 2, "head_dim": 32, "patch_size": 16}}
    from test_families import _cut

    _cut(cfg["text_config"])
    assert kvmath.load_architecture(cfg).model_type == "mistral4"
    _check_wrapper_cache(cfg, None)


def test_mistral4_latent_by_hand_and_engines():
    """Mistral4Config's defaults (the Mistral-Small-4-119B-2603 layout): 36 layers x (kv_lora_rank 256 +
    qk_rope_head_dim 64) x 2 B = 23,040 B a token; 4,096 tokens = 94,371,840 B in transformers and in llama.cpp
    (``llama_model_mistral4`` is ``llama_model_deepseek2``: one 320-wide latent row per token and layer). vLLM 0.24
    registers no Mistral4ForCausalLM: refused in one line."""
    for cfg in (_config(DEFAULTS + "mistral4"),
                {"model_type": "mistral3", "text_config": _config(DEFAULTS + "mistral4")}):
        arch = kvmath.load_architecture(cfg)
        assert {(a.kv_lora_rank, a.qk_rope_head_dim) for a in arch.layers} == {(256, 64)}
        assert len(arch.layers) == 36
        for engine in ("transformers", "llama.cpp"):
            assert kvmath.derive(arch, engine=engine, max_ctx=4096, max_num_seqs=1).total_bytes == 4096 * 36 * 320 * 2
        with pytest.raises(KvMathError, match="^vllm: kvmath does not price mistral4 .*no Mistral4ForCausalLM") as e:
            kvmath.derive(arch, engine="vllm", max_ctx=4096)
        assert "\n" not in str(e.value)


def test_b1_sparse_configs_take_the_config_classes_defaults():
    """A sparse config reads as transformers 5.23's config class fills it (the config objects built from the same
    dicts are the independent side): Mistral4Config kv_lora_rank 256 / qk_rope_head_dim 64 / 36 layers;
    Ernie4_5_VLMoeTextConfig 4 KV heads x hidden_size / heads; the ERNIE and Cohere Compass wrappers build their
    own text classes whatever text_config's model_type says."""
    from transformers import AutoConfig, CONFIG_MAPPING

    arch = kvmath.load_architecture({"model_type": "mistral4", "num_hidden_layers": 36, "num_attention_heads": 32})
    hf = AutoConfig.for_model("mistral4")
    assert {(a.kv_lora_rank, a.qk_rope_head_dim) for a in arch.layers} == {(hf.kv_lora_rank, hf.qk_rope_head_dim)}
    assert len(arch.layers) == hf.num_hidden_layers
    text = {"model_type": "something_else", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 3}
    for outer in ("ernie4_5_vl_moe", "cohere_compass"):
        built = CONFIG_MAPPING[outer](text_config=dict(text)).text_config
        arch = kvmath.load_architecture({"model_type": outer, "text_config": dict(text)})
        assert arch.model_type == type(built).model_type  # the class built; its instance keeps the dict's name
        head_dim = getattr(built, "head_dim", None) or built.hidden_size // built.num_attention_heads
        kinds = getattr(built, "layer_types", None) or ["full_attention"] * built.num_hidden_layers
        assert [(a.layer_type, a.num_kv_heads, a.head_dim) for a in arch.layers] == \
            [(t, built.num_key_value_heads, head_dim) for t in kinds]


@pytest.mark.parametrize("case,engine,phrase", [
    (DEFAULTS + "glmga", "vllm", "registers neither GlmgaForConditionalGeneration"),
    (DEFAULTS + "glmga", "llama.cpp", "glmga wrapper was read"),
    (DEFAULTS + "cohere_compass", "vllm", "no CohereCompassForConditionalGeneration"),
    (DEFAULTS + "cohere_compass", "llama.cpp", "Cohere Compass's text decoder"),
    (DEFAULTS + "ernie4_5_vl_moe", "vllm", "flat remote-code config"),
    (DEFAULTS + "ernie4_5_vl_moe", "llama.cpp", "was not read"),
])
def test_b1_engines_refuse_what_they_were_not_read_for(case, engine, phrase):
    arch = kvmath.load_architecture(_config(case))
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.derive(arch, engine=engine, max_ctx=4096)
    assert "\n" not in str(e.value)


def _with(case, **text_changes):
    cfg = copy.deepcopy(_config(case))
    (cfg.get("text_config") or cfg).update(text_changes)
    return cfg


@pytest.mark.parametrize("cfg,phrase", [
    (_with(DEFAULTS + "mistral4", sliding_window=4096), "has no sliding window"),
    (_with(DEFAULTS + "mistral4", kv_lora_rank=None), "sets kv_lora_rank null"),
    (_with(DEFAULTS + "mistral4", layer_types=["sliding_attention"] * 36), "layer_types"),
    (_with(DEFAULTS + "ernie4_5_vl_moe", head_dim=None), "sets head_dim null"),
    (_with(DEFAULTS + "ernie4_5_vl_moe", num_key_value_heads=None), "sets num_key_value_heads null"),
    (_with(DEFAULTS + "ernie4_5_vl_moe", sliding_window=4096), "sliding_window"),
    ({k: v for k, v in _config(DEFAULTS + "ernie4_5_vl_moe").items() if k != "text_config"}, "has no text_config"),
    # moe_intermediate_size [text, vision] is ERNIE 4.5 VL's only: three widths, or a list elsewhere, are refused
    (_with(DEFAULTS + "ernie4_5_vl_moe", moe_intermediate_size=[1536, 512, 64]), "a list of two widths"),
    (dict(_config(DEFAULTS + "ernie4_5_vl_moe")["text_config"], model_type="ernie4_5_moe"), "a list of two widths"),
])
def test_b1_configs_that_would_be_guessed_are_refused(cfg, phrase):
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("case", [DEFAULTS + t for t in ("mistral4", "glmga", "cohere_compass", "ernie4_5_vl_moe")])
def test_b1_config_only_weights_are_refused_not_guessed(case):
    """The config-only weights estimate has no tensor table for these text types: refused in one line."""
    from kvmath.model.checkpoint import estimate_checkpoint

    with pytest.raises(KvMathError, match="estimates checkpoint tensors from config.json only for") as e:
        estimate_checkpoint(_config(case))
    assert "\n" not in str(e.value)


def test_gemma4_unified_whole_model_caches_its_text_part():
    """google/gemma-4-12B-it (the published subset): the whole Gemma4UnifiedForConditionalGeneration (encoder-free
    vision and audio embedders) built from it caches only its text part, as kvmath reads it (8 layers, window 16)."""
    from test_families import _cut

    cfg = _config("google__gemma-4-12B-it")
    _cut(cfg["text_config"])
    cfg["text_config"]["sliding_window"] = 16
    _check_wrapper_cache(cfg, None)


def test_gemma4_unified_12b_by_hand():
    """gemma-4-12B-it at 4,096 tokens, one sequence, bf16: 48 layers, every 6th full (8 full, the last among them).
    Sliding: 40 x 1,023 kept tokens x 8 KV heads x 256 x (K + V) x 2 B + 8 B window each = 335,216,960 B; full
    (attention_k_eq_v, 1 global KV head of 512, K and V both kept): 8 x 4,096 x 512 x 2 x 2 B = 67,108,864 B."""
    arch = kvmath.load_architecture(_config("google__gemma-4-12B-it"))
    assert [a.index for a in arch.layers_of("full_attention")] == list(range(5, 48, 6))
    full, sliding = arch.layers_of("full_attention")[0], arch.layers_of("sliding_attention")[0]
    assert (full.num_kv_heads, full.head_dim, sliding.num_kv_heads, sliding.head_dim) == (1, 512, 8, 256)
    d = kvmath.derive(arch, engine="transformers", max_ctx=4096, max_num_seqs=1)
    assert d.total_bytes == 40 * (1023 * 8 * 256 * 2 * 2 + 8) + 8 * 4096 * 512 * 2 * 2 == 402_325_824
    for engine, phrase in (("vllm", "config.global_head_dim"), ("llama.cpp", "was not read")):
        with pytest.raises(KvMathError, match=f"^{engine}: kvmath does not price gemma4_unified_text .*{phrase}") as e:
            kvmath.derive(arch, engine=engine, max_ctx=4096)
        assert "\n" not in str(e.value)


def test_gemma4_unified_text_class_defaults_and_per_layer_config_form():
    """Gemma4UnifiedTextConfig's own defaults saved by transformers 5.23 (``to_dict``: ``per_layer_config`` {5:
    head_dim 512}, window 1024, 4 KV heads x 256) for 6 layers, against the real cache; and a sparse text config
    reads the same class defaults (the config object transformers builds is the other side)."""
    from transformers import CONFIG_MAPPING

    from test_families import _real_equals_kvmath

    saved = CONFIG_MAPPING["gemma4_unified_text"](num_hidden_layers=6).to_dict()
    saved.pop("transformers_version", None)
    assert saved["per_layer_config"] == {"5": {"head_dim": 512}}  # keys padded to the widest index
    arch, _ = _real_equals_kvmath(saved)
    assert [(a.layer_type, a.num_kv_heads, a.head_dim) for a in arch.layers] == \
        [("sliding_attention", 4, 256)] * 5 + [("full_attention", 4, 512)]
    sparse = {"model_type": "gemma4_unified", "text_config": {"num_hidden_layers": 6, "num_attention_heads": 8,
                                                               "global_head_dim": 512}}
    built = CONFIG_MAPPING["gemma4_unified"](text_config=dict(sparse["text_config"])).text_config
    arch = kvmath.load_architecture(sparse)
    assert {a.sliding_window for a in arch.layers_of("sliding_attention")} == {built.sliding_window} == {1024}
    assert {(a.num_kv_heads, a.head_dim) for a in arch.layers_of("sliding_attention")} == \
        {(built.per_layer_config[0].num_key_value_heads, built.per_layer_config[0].head_dim)}
    assert {(a.num_kv_heads, a.head_dim) for a in arch.layers_of("full_attention")} == \
        {(built.per_layer_config[5].num_key_value_heads, built.per_layer_config[5].head_dim)} == {(4, 512)}
    with pytest.raises(KvMathError, match="use_bidirectional_attention 'all'"):
        kvmath.load_architecture({"model_type": "gemma4_unified", "text_config": dict(
            sparse["text_config"], use_bidirectional_attention="all")})


@pytest.mark.parametrize("case", [DEFAULTS + "cosmos3_edge", DEFAULTS + "cosmos3_omni"])
def test_cosmos3_wrappers_cache_only_their_text_part(case):
    """Cosmos3EdgeForConditionalGeneration / Cosmos3OmniForConditionalGeneration built whole from the class defaults
    (towers cut to one layer): their cache equals kvmath's derivation of the text part, layer by layer."""
    _check_wrapper_cache(_test_config(case), OVERRIDES.get(case))


def test_cosmos3_by_hand_and_engines():
    """Class defaults at 4,096 tokens, one sequence, bf16: Cosmos3EdgeTextConfig 28 layers x 8 KV heads x 128 x (K +
    V) x 2 B = 114,688 B a token, 469,762,048 B; cosmos3_omni's qwen3_vl_text defaults are read as qwen3_vl_text.
    No engine model file was read for either: vLLM and llama.cpp refuse in one line."""
    edge = kvmath.load_architecture(_config(DEFAULTS + "cosmos3_edge"))
    assert kvmath.derive(edge, engine="transformers", max_ctx=4096, max_num_seqs=1).total_bytes == \
        4096 * 28 * 8 * 128 * 2 * 2
    omni = kvmath.load_architecture(_config(DEFAULTS + "cosmos3_omni"))
    assert omni.model_type == "qwen3_vl_text"
    for arch in (edge, omni):
        for engine in ("vllm", "llama.cpp"):
            with pytest.raises(KvMathError, match=f"^{engine}: kvmath does not price ") as e:
                kvmath.derive(arch, engine=engine, max_ctx=4096)
            assert "\n" not in str(e.value)
    sparse = kvmath.load_architecture({"model_type": "cosmos3_edge", "text_config": {
        "model_type": "x", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 2}})
    assert {(a.num_kv_heads, a.head_dim) for a in sparse.layers} == {(8, 128)}  # Cosmos3EdgeTextConfig's defaults


@pytest.mark.parametrize("cfg", [
    {"model_type": "gemma4_assistant", "text_config": {"model_type": "gemma4_text", "num_hidden_layers": 4}},
    {"model_type": "gemma4_unified_assistant", "text_config": {"num_hidden_layers": 4}},
    {"model_type": "gemma4_assistant", "num_hidden_layers": 4},
])
def test_gemma4_drafters_are_refused_as_keeping_no_cache_of_their_own(cfg):
    """Gemma4AssistantConfig / Gemma4UnifiedAssistantConfig.__post_init__ set num_kv_shared_layers to every layer,
    and the drafters' forward raises without the target model's shared_kv_states: nothing of theirs to size."""
    from transformers import CONFIG_MAPPING

    text = CONFIG_MAPPING["gemma4_unified_assistant"](text_config={"num_hidden_layers": 4}).text_config
    assert text.num_kv_shared_layers == text.num_hidden_layers == 4
    with pytest.raises(KvMathError, match="keeps no KV cache of its own") as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("cfg,phrase", [
    ({"model_type": "diffusion_gemma", "text_config": {"num_hidden_layers": 2}}, "block-diffusion encoder-decoder"),
    ({"model_type": "mistral_large4", "text_config": {}}, "kv_source_layers"),
    ({"model_type": "mistral_large4_text", "num_hidden_layers": 2}, "kv_source_layers"),
    ({"model_type": "glm5_next", "text_config": {}}, "pooled DSA indexer"),
    ({"model_type": "glm5_next_text", "num_hidden_layers": 2}, "pooled DSA indexer"),
    ({"model_type": "dots3_note", "text_config": {}}, "use_dsa"),
    ({"model_type": "inkling2", "text_config": {}}, "hybrid / hybrid_sliding"),
    ({"model_type": "inkling_mm_model", "text_config": {}}, "hybrid / hybrid_sliding"),
    ({"model_type": "blt", "num_hidden_layers": 2}, "EncoderDecoderCache"),
])
def test_b1_types_not_read_are_refused_naming_why(cfg, phrase):
    """The batch's types whose rules were not written: one line naming what kvmath would need (no guess)."""
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)
