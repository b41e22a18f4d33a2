"""Every family kvmath reads, against transformers 5.23's real caches on the CPU.

For each config in tests/fixtures/configs (SOURCES.md: repository, revision and sha256 of each), kvmath either
reads it, and then ``realcache.transformers_cache_bytes`` builds a scaled-down random model with the same
cache-shaping fields, runs a prefill of 40 tokens and 3 decode steps for 2 sequences, and the cache it
holds must equal kvmath's transformers derivation byte for byte, layer by layer; or kvmath refuses it, and
the refusal must be one of the expected ones below, naming the model_type or the field. Windows and chunks are
shortened to 16 tokens so the 43 tokens cross them. The tally (read exactly / refused, with the reasons) is
asserted at the end, so a config that silently changes side fails.
"""

import copy
import json
import sys
from pathlib import Path

import pytest

import kvmath
from kvmath.errors import KvMathError

sys.path.insert(0, str(Path(__file__).parent))
from realcache import transformers_cache_bytes, whisper_cache_bytes  # noqa: E402

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
BATCH, PREFILL, DECODE, WINDOW = 2, 40, 3, 16
DEFAULTS = "transformers-5.23-defaults__"

REFUSED = {  # config -> a phrase the one-line refusal must contain (the model_type or the field it names)
    "MiniMaxAI__MiniMax-M3": "model_type 'minimax_m3' is not supported",
    "XiaomiMiMo__MiMo-7B-Base": "model_type 'mimo' is not supported",  # remote code, not in transformers 5.23
    "moonshotai__Kimi-K2-Instruct": "model_type 'kimi_k2' is not supported",
    # 93 x 896 expert MLPs: the size guard of kvmath.validate speaks before the model_type check
    "moonshotai__Kimi-K3": "93 layers x 896 experts = 83,328 expert MLPs; kvmath reads at most 65,536",
    "nvidia__Llama-3_3-Nemotron-Super-49B-v1": "model_type 'nemotron-nas' is not supported",
    # flat: transformers 5.23's Step3p7Config reads only text_config and would build the class-default decoder
    "stepfun-ai__Step-3.7-Flash": "model_type 'step3p7' is a multimodal wrapper and this config has no text_config",
    # transformers broadcasts Falcon 40B's K and V to every head; vLLM and llama.cpp cache its 8 KV heads
    "tiiuae__falcon-40b-instruct": "sets new_decoder_architecture",
    DEFAULTS + "step3p7": "step3p5 config has no sliding_window",  # Step3p7TextModel cannot run without one
    # BambaConfig's attn_layer_indices default None makes every layer Mamba-2; transformers cannot decode that
    DEFAULTS + "bamba": "bamba config has no attn_layer_indices",
    # Lfm2MoeConfig derives no layout (no full_attn_idxs): layer_types None, and Lfm2MoeModel fails on it
    DEFAULTS + "lfm2_moe": "lfm2_moe config needs layer_types",
    # Glm4vMoeTextConfig's defaults: 96 heads of a 4096 hidden size and no head_dim (GLM-4.5V writes 128)
    DEFAULTS + "glm4v_moe": "hidden_size 4096 is not a multiple of num_attention_heads 96",
    # DogeConfig writes num_experts 16384 (read only with is_moe): kvmath's size guard refuses it before the family rule
    DEFAULTS + "doge": "config field num_experts must be <= 4,096",
    # Qwen3OmniMoeTextConfig's defaults: hidden 2048 / 28 heads = 73 wide, which its RoPE check refuses to build
    DEFAULTS + "qwen3_omni_moe_thinker": "gives an odd head width 73",
}
OVERRIDES = {  # fields transformers needs to build the shrunk model that do not shape the cache
    "meta-llama__Meta-Llama-3.1-405B": {"hidden_size": 128},  # 128 heads: hidden must be a multiple
    # Qwen2.5-VL's text attention and OLMoE's q/k norms take hidden_size = heads x head_dim: keep the real one
    "Qwen__Qwen2.5-VL-7B-Instruct": {"hidden_size": 3584},
    DEFAULTS + "olmoe": {"hidden_size": 2048},
    # GPT-NeoX and OPT cache hidden_size / num_attention_heads per head (no head_dim): keep _cut's 2-head width
    DEFAULTS + "gpt_neox": {"hidden_size": 192}, DEFAULTS + "opt": {"hidden_size": 128},
    "tiiuae__falcon-7b-instruct": {"hidden_size": 128},
    "stabilityai__stablelm-2-zephyr-1_6b": {"hidden_size": 2048},  # its partial rotary takes the real head width
    DEFAULTS + "deepseek_v2": {"num_experts_per_tok": 2},  # the class default None fails in the router
    # Helium's o_proj and BitNet's attention sub-norm are hidden_size wide: keep _cut's 4 heads x 128
    "kyutai__helium-1-preview-2b": {"hidden_size": 512}, DEFAULTS + "bitnet": {"hidden_size": 512},
    "THUDM__glm-4-9b-chat-hf": {"pad_token_id": None},  # GlmConfig's default 151329 lies outside the shrunk vocab
    # Persimmon and GPT-Neo take their head width from hidden_size / heads: keep _cut's 2 heads x 64
    "adept__persimmon-8b-base": {"hidden_size": 128}, "EleutherAI__gpt-neo-125M": {"hidden_size": 128},
    # Glm4vTextAttention: hidden / heads wide (_cut's 2 heads x 128); the class default's full-width rotary does not
    # fit its own mrope_section [8, 12, 12]: GLM-4.1V's partial_rotary_factor 0.5 (RoPE only, no cache field)
    DEFAULTS + "glm4v": {"hidden_size": 256, "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default",
                                                                 "partial_rotary_factor": 0.5}},
    # Ling: 5.23 takes kda_lower_bound as a float only; pad 156892 lies outside the shrunk vocabulary; the KDA heads
    # are num_attention_heads (BailingHybridConfig), which realcache would cut to 8 as for any MLA model
    # CohereCompassTextConfig's default rope_parameters {} cannot build the model (one entry per layer type is read)
    DEFAULTS + "cohere_compass_text": {"rope_parameters": {t: {"rope_type": "default", "rope_theta": 10000.0}
                                                            for t in ("full_attention", "sliding_attention")}},
    "inclusionAI__Ling-3.0-tiny": {"kda_lower_bound": -5.0, "pad_token_id": None, "num_attention_heads": 16,
                                   "num_key_value_heads": 16},
    # BioGPT and GPT-NeoX-Japanese cache hidden_size / num_attention_heads per head: keep _cut's 2 heads of 64 / 80
    DEFAULTS + "biogpt": {"hidden_size": 128}, DEFAULTS + "gpt_neox_japanese": {"hidden_size": 160},
    # CwmConfig / IQuestCoderConfig / Jais2Config check hidden_size % heads (head_dim is written): 48 / 40 / 26 divide it
    DEFAULTS + "cwm": {"hidden_size": 96}, DEFAULTS + "iquestcoder": {"hidden_size": 80},
    DEFAULTS + "jais2": {"hidden_size": 52},
    # MuseSparkTextConfig checks hidden_size % heads (head_dim 64 is written): its 128 query heads need 128
    DEFAULTS + "muse_spark": {"hidden_size": 128}, DEFAULTS + "muse_spark_text": {"hidden_size": 128},
    DEFAULTS + "modernbert-decoder": {"hidden_size": 768},  # every head cached hidden / heads wide: keep 12 x 64
    DEFAULTS + "jetmoe": {"head_dim": 128},  # realcache writes head_dim = hidden / heads, JetMoE's alias of kv_channels
    # batch B1 (session 34): the wrappers' text parts need what their text types need above (glm4v_text, cohere_compass_text)
    DEFAULTS + "glmga": {"hidden_size": 256, "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default",
                                                                 "partial_rotary_factor": 0.5}},
    DEFAULTS + "cohere_compass": {"rope_parameters": {t: {"rope_type": "default", "rope_theta": 10000.0}
                                                      for t in ("full_attention", "sliding_attention")}},
}
OVERRIDES.update({  # batch A1 (session 34): OPT / Persimmon inside BLIP-2 / Fuyu cache hidden / heads per head
    DEFAULTS + "blip-2": {"hidden_size": 128}, DEFAULTS + "fuyu": {"hidden_size": 128},
    DEFAULTS + "chameleon": {"vocabulary_map": {"<image>": 3}, "hidden_size": 256}})
OVERRIDES.update({  # DeepseekOcr2TextConfig's mlp_layer_types default None cannot build the model (MLP choice only)
    DEFAULTS + "deepseek_ocr2": {"mlp_layer_types": ["dense"] * 8, "hidden_size": 256}})
REFUSED.update({  # batch A1: HunYuanVLTextConfig's head_dim default None cannot build its attention (TypeError)
    DEFAULTS + "hunyuan_vl": "hunyuan_vl_text config has no head_dim"})  # ChameleonModel needs a map (the Hub configs write one)
CASES = sorted(p.stem for p in CONFIGS.glob("*.json"))
READ = [c for c in CASES if c not in REFUSED]


def _config(case: str) -> dict:
    return json.loads((CONFIGS / f"{case}.json").read_text())


def _test_config(case: str) -> dict:
    """The config with windows and chunks shortened to 16 tokens (where a layer is windowed) and, for the flat
    Qwen2.5-VL wrapper, its text part as transformers builds it (its top-level keys)."""
    cfg = copy.deepcopy(_config(case))
    arch = kvmath.load_architecture(cfg)
    if cfg.get("model_type") == "qwen2_5_vl":
        cfg = {k: v for k, v in cfg.items() if k != "vision_config"}
        cfg["model_type"] = "qwen2_5_vl_text"
    text = cfg.get("text_config", cfg)
    if cfg.get("model_type") == "exaone4_5" and text.get("model_type") == "exaone4_5_text":
        text["model_type"] = "exaone4"  # Exaone4_5_Config.__post_init__: the first release's text model_type
    if text.get("model_type") == "glm_moe_dsa":  # GlmMoeDsaConfig sets head_dim = qk_rope_head_dim (GLM-5.2 states
        text.pop("head_dim", None)                # 192); MLA caches the latent, so the key shapes no cache
    _cut(text)
    if text.get("sliding_window") and arch.layers_of("sliding_attention"):
        text["sliding_window"] = WINDOW
        if text.get("model_type") == "mimo_v2_flash" and text.get("sliding_window_size"):
            text["sliding_window_size"] = WINDOW - 1  # MiMoV2FlashConfig: sliding_window = sliding_window_size + 1
    if text.get("attention_chunk_size") and arch.layers_of("chunked_attention"):
        text["attention_chunk_size"] = WINDOW
    return cfg


MAX_LAYERS = 8
STATE_HIDDEN = 256


def _cut(text: dict) -> None:
    """Keep the run to a few seconds: at most 8 layers (every per-layer list of the config cut alike, so the
    first 8 layers' kinds are kept; Gemma 3n keeps 10, its 5-layer period twice), and Mamba / LFM2 state widths from a
    256-wide hidden size (their state is ``expand x hidden_size`` / ``hidden_size`` wide: kvmath reads the same
    cut dict, so the rule is still checked). Gemma 3n keeps 4 of its layers KV-shared."""
    mt = text.get("model_type")
    if mt in ("gpt2", "gptj", "gpt_bigcode", "codegen", "gpt-sw3"):  # GPT-2's key names: 2 heads of the real width, 4 layers
        width = text["n_embd"] // text["n_head"]
        heads = 4 if mt == "codegen" else 2  # CodeGenAttention splits its fused qkv into mp_num = 4 parts
        text.update(n_embd=heads * width, n_head=heads, n_inner=None, n_layer=min(text["n_layer"], 4))
        return
    if mt == "gpt_neo":  # GPT-Neo's key names: 4 layers (2 global / local pairs), 2 heads of the real width
        width = text["hidden_size"] // text["num_heads"]
        text.update(hidden_size=2 * width, num_heads=2, num_layers=4, attention_types=[[["global", "local"], 2]])
        text.pop("attention_layers", None)
        return
    if mt in ("xglm", "ctrl"):  # their own key names: 4 layers, 2 heads of the real width (every head cached)
        keys = {"xglm": ("d_model", "attention_heads", "num_layers", "ffn_dim"),
                "ctrl": ("n_embd", "n_head", "n_layer", "dff")}[mt]
        width = text[keys[0]] // text[keys[1]]
        text.update({keys[0]: 2 * width, keys[1]: 2, keys[2]: min(text[keys[2]], 4), keys[3]: 256})
        return
    if mt == "longcat_flash":  # num_layers decoder layers of two MLA sublayers: 4 of them, 8 cache layers
        text["num_layers"] = min(text["num_layers"], 4)
        return
    if mt in ("dbrx", "mpt"):  # MosaicML's key names: 4 layers, 2 KV heads of the real width (DBRX: 4 query heads)
        width = text["d_model"] // text["n_heads"]
        heads = 4 if mt == "dbrx" else 2
        text.update(d_model=heads * width, n_heads=heads, n_layers=min(text["n_layers"], 4))
        if mt == "dbrx":
            text["attn_config"] = dict(text["attn_config"], kv_n_heads=2)
            text["ffn_config"] = dict(text["ffn_config"], ffn_hidden_size=64, moe_num_experts=4, moe_top_k=2)
            if isinstance(text["ffn_config"].get("moe_normalize_expert_weights"), int):  # 5.23's strict DbrxFFNConfig
                text["ffn_config"]["moe_normalize_expert_weights"] = 1.0  # takes a float only (dbrx-instruct writes 1)
        return
    if mt == "glm4v_text":  # Glm4vTextAttention is hidden_size / heads wide: keep its KV heads, as many query heads
        width = text["hidden_size"] // text["num_attention_heads"]
        text.update(num_attention_heads=text["num_key_value_heads"],
                    hidden_size=text["num_key_value_heads"] * width)
    if mt == "recurrent_gemma":  # 2 heads of the real width (GQA grouping kept), the RG-LRU 256 channels wide
        width = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
        group = text["num_attention_heads"] // (text.get("num_key_value_heads") or text["num_attention_heads"])
        text.update(num_attention_heads=2, num_key_value_heads=max(1, 2 // group), hidden_size=2 * width,
                    lru_width=256, head_dim=width, attention_window_size=WINDOW)
    if mt == "hrm_text":  # 1 layer per stack x 2 H cycles x (3 + 1) = 8 cache slots, 2 heads of the real width
        text.update(num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
        return
    if mt in ("helium", "bitnet"):  # heads x head_dim must stay hidden_size: 4 heads of the real width, same grouping
        width = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
        group = text["num_attention_heads"] // text["num_key_value_heads"]
        text.update(num_attention_heads=4, num_key_value_heads=max(1, 4 // group), hidden_size=4 * width)
    width = text.get("hidden_size", 0) // max(1, text.get("num_attention_heads") or 1)
    if mt in ("persimmon", "chameleon", "deepseek_ocr2_text") and 2 * width < text["hidden_size"]:  # every head cached at hidden / heads: 2 real-width heads
        text.update(hidden_size=2 * width, num_attention_heads=2, num_key_value_heads=2)
        text.pop("intermediate_size", None)
    if mt in ("gpt_neox", "opt", "falcon", "biogpt", "gpt_neox_japanese") and 2 * width < text["hidden_size"]:  # 2 heads of the real width
        text.update(hidden_size=2 * width, num_attention_heads=2)
        text.pop("intermediate_size", None), text.pop("ffn_dim", None), text.pop("word_embed_proj_dim", None)
        text.pop("num_kv_heads", None) if mt == "falcon" else None
    if "num_hidden_layers" not in text and mt in ("llama", "mistral", "qwen2"):  # llava-1.5 / 1.6, Qwen2-Audio's
        text["num_hidden_layers"] = 2  # sparse text_config: the class's other defaults (4096 wide, 32 heads) shape it
    n = text.get("num_hidden_layers")
    if mt in ("mamba", "falcon_mamba", "jamba", "lfm2", "lfm2_moe", "zamba2", "lfm3") and text.get("hidden_size", 0) > STATE_HIDDEN:
        text["hidden_size"] = STATE_HIDDEN
        text.pop("intermediate_size", None) if mt in ("mamba", "falcon_mamba") else None
    if mt in ("mamba2", "falcon_h1", "bamba"):
        _cut_mamba2(text)
    if mt == "zamba2":  # the derived widths the class writes out follow the cut hidden size (Zamba2Config's rules)
        text.update(attention_head_dim=2 * text["hidden_size"] // text["num_attention_heads"], chunk_size=16,
                    head_dim=2 * text["hidden_size"] // text["num_attention_heads"],  # else realcache writes h / heads
                    mamba_headdim=text["mamba_expand"] * text["hidden_size"] // text["n_mamba_heads"])
        text.pop("attention_hidden_size", None), text.pop("kv_channels", None), text.pop("hybrid_layer_ids", None)
    cut = 10 if mt == "gemma3n_text" else MAX_LAYERS
    if isinstance(n, int) and n > cut:
        for k, v in list(text.items()):
            if isinstance(v, list) and len(v) == n or k == "hybrid_override_pattern" and len(v) == n:
                text[k] = v[:cut]  # Nemotron-H's pattern is a string, one character per layer
        text["num_hidden_layers"] = cut
        if text.get("num_kv_shared_layers"):
            text["num_kv_shared_layers"] = 4


def _cut_mamba2(text: dict) -> None:
    """Mamba-2 mixers an eighth as many heads wide (at least n_groups; the head width, state size, groups and
    kernel kept), the hidden size 256 with the attention head width written out: transformers' torch SSD scan
    of the class defaults' 128 heads took minutes. kvmath reads the same cut dict."""
    heads_key, dim_key, groups_key = {"mamba2": ("num_heads", "head_dim", "n_groups")}.get(
        text["model_type"], ("mamba_n_heads", "mamba_d_head", "mamba_n_groups"))
    groups = text.get(groups_key) or 1
    heads = max(groups, text[heads_key] // 8)
    width = heads * (text[dim_key] if isinstance(text.get(dim_key), int) else
                     (text.get("mamba_d_ssm") or text.get("mamba_expand", 2) * text["hidden_size"]) // text[heads_key])
    if text["model_type"] != "mamba2" and text.get("num_attention_heads"):
        text.setdefault("head_dim", text["hidden_size"] // text["num_attention_heads"])
    text[heads_key], text["hidden_size"] = heads, 256
    text["chunk_size" if text["model_type"] == "mamba2" else "mamba_chunk_size"] = 16  # the SSD scan pads to a chunk
    if "intermediate_size" in text:  # the MLP beside the mixer: not cached
        text["intermediate_size"] = 256
    if text["model_type"] == "falcon_h1":
        text["mamba_d_ssm"] = width
    else:  # width = expand x hidden_size
        key = "expand" if text["model_type"] == "mamba2" else "mamba_expand"
        if width % 256:
            raise AssertionError(f"{text['model_type']}: cut width {width} is not a multiple of 256")
        text[key] = width // 256


_RUNS: dict = {}


def _run(case: str):
    if case not in _RUNS:
        cfg = _test_config(case)
        arch = kvmath.load_architecture(cfg)
        if arch.model_type == "whisper":  # an encoder-decoder: the real EncoderDecoderCache of the whole model
            real = whisper_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE, dtype=arch.dtype,
                                       threads=1)
        else:
            real = transformers_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE, dtype=arch.dtype,
                                            overrides=OVERRIDES.get(case), threads=1,
                                            module_states=arch.model_type == "recurrent_gemma")
        for layer in real["layers"] if "module_states" in real else ():  # RecurrentGemma keeps its recurrent state
            layer["bytes"] += real["module_states"][layer["index"]]     # on the module, not in the DynamicCache
            real["total_bytes"] += real["module_states"][layer["index"]]
        check = real["config_check"]
        if arch.model_type == "bailing_hybrid":  # BailingHybridConfig reads head_dim as the KDA width, then sets it
            check = [x for x in check if x != {"field": "head_dim", "input": cfg.get("head_dim"),  # to the MLA rope
                                               "built": cfg.get("qk_rope_head_dim")}]      # width (its __post_init__)
        if arch.model_type == "hrm_text":  # HrmTextConfig rewrites the per-stack depth to the cache slots it fills
            check = [x for x in check if x != {"field": "num_hidden_layers", "input": cfg["num_hidden_layers"],
                                               "built": arch.num_hidden_layers}]
        text = cfg.get("text_config", cfg)
        if text.get("model_type") == "qwen2" and not text.get("use_sliding_window"):  # Qwen2Config.__post_init__
            check = [x for x in check if x != {"field": "sliding_window", "input": text.get("sliding_window"),
                                               "built": None}]  # clears the window unless use_sliding_window
        assert check == [], check
        d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
        _RUNS[case] = (arch, real, d)
    return _RUNS[case]


@pytest.mark.parametrize("case", READ)
def test_cache_equals_transformers_layer_by_layer(case):
    arch, real, d = _run(case)
    per_layer = dict.fromkeys(range(arch.num_hidden_layers), 0)
    for g in d.groups:  # a Falcon-H1 layer is in two groups (its attention, its Mamba-2 mixer): summed
        for i in g.layers:
            per_layer[i] += g.bytes // g.n_layers
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == per_layer
    assert d.total_bytes == real["total_bytes"]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_one_line_naming_the_problem(case):
    with pytest.raises(KvMathError) as e:
        kvmath.load_architecture(_config(case))
    msg = str(e.value)
    assert REFUSED[case] in msg and "\n" not in msg


def test_tally_of_real_configs():
    """Of the published configs (not the class-default files): how many read exactly, how many refused."""
    real = [c for c in CASES if not c.startswith(DEFAULTS)]
    read = [c for c in real if c not in REFUSED]
    assert (len(real), len(read), len(real) - len(read)) == (69, 62, 7)


def test_unknown_wrapper_is_refused_not_read_from_its_text_part():
    llama = json.loads((Path(__file__).resolve().parents[1] / "data" / "configs" /
                        "meta-llama__Llama-3.1-8B.json").read_text())
    for outer in ("no_such_wrapper", "kimi_k3"):
        with pytest.raises(KvMathError, match=f"model_type '{outer}' wraps a text_config"):
            kvmath.load_architecture({"model_type": outer, "text_config": llama})
    with pytest.raises(KvMathError, match="model_type None wraps"):
        kvmath.load_architecture({"text_config": llama})


def test_phi3_window_is_read_as_transformers_and_vllm_apply_it_and_llamacpp_drops_it():
    # Phi-4's real config with the window Phi-3-mini-4k sets (2047): every layer windowed in transformers
    # (get_layer_types_and_kwargs) and vLLM; llama.cpp disables Phi SWA (llama-model.cpp, #13676)
    cfg = dict(_config("microsoft__phi-4"), sliding_window=WINDOW)
    arch = kvmath.load_architecture(cfg)
    assert arch.layer_type_counts() == {"sliding_attention": 40}
    real = transformers_cache_bytes(cfg, batch=1, seq_len=PREFILL, decode_steps=0, dtype="bfloat16")
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL, max_num_seqs=1)
    assert d.total_bytes == real["total_bytes"]
    # hand derivation: 40 layers x (W - 1) tokens x 10 KV heads x 128 x 2 (K, V) x 2 B + 40 int64 windows
    assert d.total_bytes == 40 * (WINDOW - 1) * 10 * 128 * 2 * 2 + 40 * 8
    lc = kvmath.derive(arch, engine="llama.cpp", max_ctx=4096, max_num_seqs=1)
    assert all(g.layer_type == "full_attention" for g in lc.groups)


def test_bamba_with_attention_layers_equals_transformers_layer_by_layer():
    """BambaConfig's defaults with attention at layers 2 and 5 (the class default has none, refused above): the
    attention layers cache K/V, the other six a Mamba-2 state, byte for byte as transformers holds them."""
    cfg = dict(_config(DEFAULTS + "bamba"), attn_layer_indices=[2, 5], num_hidden_layers=8)
    _cut(cfg)
    arch = kvmath.load_architecture(cfg)
    assert [layer.layer_type for layer in arch.layers] == ["linear_attention"] * 2 + ["full_attention"] + \
        ["linear_attention"] * 2 + ["full_attention"] + ["linear_attention"] * 2
    real = transformers_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE, dtype=arch.dtype,
                                    threads=1)
    assert real["config_check"] == []
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    per_layer = {i: g.bytes // g.n_layers for g in d.groups for i in g.layers}
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == per_layer
    # by hand: attention 8 KV heads x 128 (hidden 4096 / 32 heads) x 2 (K, V) x 2 B x 43 tokens x 2 sequences
    assert per_layer[2] == 8 * 128 * 2 * 2 * 43 * 2


def test_falcon_h1_llamacpp_keeps_kv_and_a_recurrent_state_on_every_layer_and_vllm_refuses_it():
    """llama.cpp's create_memory gives Falcon-H1 a hybrid memory whose attention and recurrent filters both take
    every layer (src/llama-model.cpp, LLM_ARCH_FALCON_H1); vLLM registers each layer's attention and mixer as two
    cache layers, which kvmath's vLLM plan does not model: refused in one line."""
    arch = kvmath.load_architecture(_config(DEFAULTS + "falcon_h1"))
    d = kvmath.derive(arch, engine="llama.cpp", max_ctx=4096, max_num_seqs=2)
    kv = [g for g in d.groups if g.kind == "attention"]
    state = [g for g in d.groups if g.kind == "mamba2"]
    assert [g.layers for g in kv] == [g.layers for g in state] == [tuple(range(32))]
    # by hand: K and V f16, 8 KV heads x 128, 4,096 cells x 2 streams, 32 layers; R (d_conv - 1) x (d_ssm 1024 +
    # 2 x 1 group x d_state 256) f32 and S d_state 256 x d_ssm 1024 f32, per layer and sequence
    assert kv[0].bytes == 32 * 4096 * 2 * 8 * 128 * 2 * 2
    assert state[0].bytes == 32 * 2 * (3 * (1024 + 2 * 256) + 256 * 1024) * 4
    with pytest.raises(KvMathError, match="vllm has no rule for AttentionMamba2Layer"):
        kvmath.derive(arch, engine="vllm", max_ctx=4096)


def test_vllm_refuses_bamba_which_it_no_longer_serves():
    arch = kvmath.load_architecture(dict(_config(DEFAULTS + "bamba"), attn_layer_indices=[9, 18, 27]))
    with pytest.raises(KvMathError, match="vLLM 0.23.0 removed BambaForCausalLM"):
        kvmath.derive(arch, engine="vllm", max_ctx=4096)


@pytest.mark.parametrize("engine", ["vllm", "llama.cpp"])
@pytest.mark.parametrize("case", ["meta-llama__Llama-4-Scout-17B-16E-Instruct", DEFAULTS + "mamba",
                                  DEFAULTS + "jamba", "LiquidAI__LFM2.5-VL-1.6B", "deepseek-ai__DeepSeek-V3.2",
                                  DEFAULTS + "minimax", "deepseek-ai__DeepSeek-V4-Flash"])
def test_engines_without_a_rule_for_a_kind_refuse_it(case, engine):
    arch = kvmath.load_architecture(_config(case))
    with pytest.raises(KvMathError, match=f"{engine} has no rule for"):
        kvmath.derive(arch, engine=engine, max_ctx=4096)


def test_typed_fields_the_engines_read():
    # Qwen3-30B-A3B config.json: 128 experts, 8 per token, moe_intermediate_size 768, no shared expert
    a = kvmath.load_architecture(_config("Qwen__Qwen3-30B-A3B"))
    assert (a.num_experts, a.num_experts_per_tok, a.moe_intermediate_size, a.shared_expert_intermediate_size) == \
        (128, 8, 768, 0)
    # DeepSeek-V3.2: n_shared_experts 1 x moe_intermediate_size 2048
    a = kvmath.load_architecture(_config("deepseek-ai__DeepSeek-V3.2"))
    assert (a.num_experts, a.num_experts_per_tok, a.shared_expert_intermediate_size) == (256, 8, 2048)
    assert a.layers[0].index_head_dim == 128 and a.layers[0].latent_dim == 576
    # Qwen3-VL-8B vision_config: depth 27, hidden 1152, 16 heads, patch 16, merge 2, out 4096
    v = kvmath.load_architecture(_config("Qwen__Qwen3-VL-8B-Instruct")).vision
    assert (v.depth, v.hidden_size, v.num_heads, v.patch_size, v.spatial_merge_size, v.out_hidden_size) == \
        (27, 1152, 16, 16, 2, 4096)


@pytest.mark.parametrize("path", [CONFIGS / "mistralai__Mixtral-8x7B-v0.1.json", CONFIGS / "Qwen__Qwen3-30B-A3B.json",
                                  CONFIGS.parents[2] / "data" / "configs" / "Qwen__Qwen2.5-7B-Instruct.json",
                                  CONFIGS.parents[2] / "data" / "configs" / "mistralai__Mistral-7B-v0.1.json"])
def test_gguf_tensor_table_holds_every_parameter_transformers_builds(path):
    """kvmath.model.params' GGUF table for a config against the parameters transformers 5.23 builds for it on
    the meta device (no memory, full shapes): the same number of elements (llama.cpp's ``rope_freqs`` is a
    RoPE buffer, not a parameter, and is left out)."""
    import math

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from kvmath.model.params import gguf_tensor_table

    cfg = json.loads(path.read_text())
    _, _, table = gguf_tensor_table(cfg)
    ours = sum(math.prod(shape) for name, shape, _ in table if name != "rope_freqs.weight")
    hf = AutoConfig.for_model(**{k: v for k, v in cfg.items() if k not in ("architectures", "quantization_config")})
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf)
    assert ours == sum(p.numel() for p in model.parameters())


GGUF_NEW = {"google__gemma-2-9b": 0, DEFAULTS + "gemma3_text": -64 * 2304, DEFAULTS + "deepseek_v2": 0,
            "deepseek-ai__DeepSeek-V3": 0, "Qwen__Qwen3-Next-80B-A3B-Instruct": 0,
            "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": 0, "nvidia__Nemotron-H-56B-Base-8K": 0,
            "microsoft__phi-4": 0, DEFAULTS + "olmo2": 0, "allenai__Olmo-3.1-32B-Instruct": 0, DEFAULTS + "smollm3": 0,
            DEFAULTS + "granite": 0, DEFAULTS + "granitemoe": 0, DEFAULTS + "seed_oss": 0, DEFAULTS + "olmoe": 0,
            DEFAULTS + "ernie4_5": 0, DEFAULTS + "cohere": 0, DEFAULTS + "cohere2": 0,
            "tests/fixtures/llamacpp/harness/cohere-qknorm-variant": 0, DEFAULTS + "starcoder2": 0,
            "bigcode__starcoder2-7b": 0, DEFAULTS + "glm4": 0,
            "tests/fixtures/llamacpp/harness/granitemoeshared-variant": 0,
            DEFAULTS + "qwen2_moe": 0, "zai-org__GLM-4.5-Air": 0, "LGAI-EXAONE__EXAONE-4.0-32B": 0,
            DEFAULTS + "ernie4_5_moe": 0, "tests/fixtures/llamacpp/harness/hunyuan-a13b-shape": 0,
            "tests/fixtures/llamacpp/harness/hunyuan-dense-headdim": 0,
            "tests/fixtures/llamacpp/harness/granitemoehybrid-variant": 0,
            "tests/fixtures/llamacpp/harness/granitemoehybrid-dense-variant": 0,
            "tests/fixtures/llamacpp/harness/falcon-h1-0.5b-shape": 0,
            "tests/fixtures/llamacpp/harness/falcon_h1-defaults-rmsnorm": 0,
            "tests/fixtures/llamacpp/harness/lfm2-1.2b-text": 0, DEFAULTS + "lfm2": 0}
"""config -> elements the GGUF drops against transformers: Gemma 3's converter keeps the tokenizer's 262144 of
config.json's 262208 embedding rows (64 x hidden_size 2304 here). The Mamba-2 families' converter rewrites values
(A_log -> -exp, Falcon-H1's muP multipliers folded into the weights) and reshapes (conv kernels squeezed, A / D
unsqueezed, the gated norm split by group), none of which changes an element count."""


@pytest.mark.parametrize("case", GGUF_NEW)
def test_gguf_tables_of_the_newer_families_hold_transformers_parameters(case):
    """kvmath.model.params' GGUF table for Gemma 2 / 3, DeepSeek V2 / V3, Qwen3-Next, Nemotron-H (dense and MoE),
    Phi-4, OLMo 2, Olmo 3.1, OLMoE, SmolLM 3, Granite (dense, MoE, MoE with a shared MLP), Seed-OSS, ERNIE 4.5, Cohere (with and without q / k norms), Cohere 2, StarCoder 2, GLM-4 (0414), Granite 4.0-H (MoE and dense),
    Falcon-H1 (with and without the Mamba-2 gated norm) and LFM2
    against what transformers 5.23 builds on the meta device: its parameters plus the routers'
    ``e_score_correction_bias`` buffers (the GGUF's ``exp_probs_b``), less the rows the converter drops."""
    import math

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from kvmath.model.params import gguf_tensor_table

    root = CONFIGS.parents[2]
    path = next(p for p in (CONFIGS / f"{case}.json", root / "data" / "configs" / f"{case}.json", root / f"{case}.json")
                if p.exists())
    cfg = json.loads(path.read_text())
    _, _, table = gguf_tensor_table(cfg)
    ours = sum(math.prod(shape) for name, shape, _ in table if not name.startswith("rope_"))  # RoPE buffers
    hf = AutoConfig.for_model(**{k: v for k, v in cfg.items() if k not in ("architectures", "quantization_config")})
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf)
    real = sum(p.numel() for p in model.parameters()) + \
        sum(b.numel() for n, b in model.named_buffers() if n.endswith("e_score_correction_bias"))
    assert ours == real + GGUF_NEW[case]


META_ESTIMATED = ["mistralai__Mixtral-8x7B-v0.1", "Qwen__Qwen3-30B-A3B", "microsoft__phi-4", DEFAULTS + "granite",
                  DEFAULTS + "granitemoe", DEFAULTS + "internlm3", DEFAULTS + "ernie4_5", DEFAULTS + "seed_oss",
                  DEFAULTS + "qwen2_moe"]


@pytest.mark.parametrize("case", META_ESTIMATED)
def test_config_only_checkpoint_estimate_counts_transformers_parameters(case):
    """kvmath.model.checkpoint.estimate_checkpoint (the config-only weight estimate vLLM's budget shards) against
    the parameters (and stored buffers) transformers 5.23 builds for the same config on the meta device."""
    import torch
    from transformers import CONFIG_MAPPING, AutoModelForCausalLM

    from kvmath.model.checkpoint import estimate_checkpoint

    cfg = _config(case)
    cfg.pop("quantization_config", None)
    conf = CONFIG_MAPPING[cfg["model_type"]](**{k: v for k, v in cfg.items() if k != "model_type"})
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(conf)
    kept = set(m.state_dict())
    real = sum(p.numel() for p in m.parameters()) + sum(b.numel() for n, b in m.named_buffers() if n in kept)
    assert sum(t.numel for t in estimate_checkpoint(cfg).tensors) == real


def test_config_only_estimate_refuses_the_layouts_it_does_not_write():
    from kvmath.model.checkpoint import estimate_checkpoint

    for case in (DEFAULTS + "olmo2", DEFAULTS + "cohere", "LGAI-EXAONE__EXAONE-4.0-32B", DEFAULTS + "starcoder2",
                 "databricks__dbrx-instruct", "ibm-granite__granite-swash-2b", DEFAULTS + "olmo_hybrid",
                 DEFAULTS + "zamba2", "inclusionAI__Ling-3.0-tiny", DEFAULTS + "lfm3",
                 "sapientinc__HRM-Text-1B", DEFAULTS + "aria_text", DEFAULTS + "cohere_compass_text",
                 "google__recurrentgemma-2b"):
        with pytest.raises(KvMathError, match="estimates checkpoint tensors from config.json only for"):
            estimate_checkpoint(_config(case))


def test_mimo_v2_flash_fields_vllm_reads_must_agree_with_transformers_rule():
    # MiMo-V2-Flash config.json: hybrid_layer_pattern 0 at layers 0, 5, 11, ..., 47 (transformers' own rule), 4 KV
    # heads on full layers and swa_num_key_value_heads 8 = 2 x 4 on sliding ones, sliding_window_size 128 -> window
    # 129 (MiMoV2FlashConfig.__post_init__); vLLM's mimo_v2.py reads the swa_* fields and the pattern itself
    arch = kvmath.load_architecture(_config("XiaomiMiMo__MiMo-V2-Flash"))
    full, sliding = arch.layers_of("full_attention"), arch.layers_of("sliding_attention")
    assert [a.index for a in full] == [0, 5, 11, 17, 23, 29, 35, 41, 47] and len(sliding) == 39
    assert {(a.num_kv_heads, a.head_dim, a.v_head_dim, a.sliding_window) for a in full} == {(4, 192, 128, None)}
    assert {(a.num_kv_heads, a.head_dim, a.v_head_dim, a.sliding_window) for a in sliding} == {(8, 192, 128, 129)}
    for key, value in (("swa_num_key_value_heads", 4), ("swa_head_dim", 128), ("hybrid_layer_pattern", [1] * 48)):
        with pytest.raises(KvMathError, match=key):
            kvmath.load_architecture(dict(_config("XiaomiMiMo__MiMo-V2-Flash"), **{key: value}))
    for engine in ("vllm", "llama.cpp"):
        with pytest.raises(KvMathError, match=f"^{engine}: kvmath does not price mimo_v2_flash"):
            kvmath.derive(arch, engine=engine, max_ctx=4096)


def test_step3p7_wrapper_reads_its_text_config_as_transformers_builds_it():
    """The published Step-3.7-Flash fields (the flat copy, which transformers 5.23 does not read) put under a
    ``step3p7`` wrapper's text_config, as the Hub's wrapper config nests them: its 1 full + 3 sliding pattern, 8 KV
    heads x 128 on every layer, window 512 (cut to 16) and 3 trailing MTP entries; kvmath equals transformers' real
    cache layer by layer (Step3p7TextModel, built from the text config)."""
    flat = _config("stepfun-ai__Step-3.7-Flash")
    text = {k: v for k, v in flat.items() if k not in ("architectures", "torch_dtype")}
    text["layer_types"] = text["layer_types"] + ["full_attention"] * 3  # the Hub's 45 + num_nextn_predict_layers
    cfg = {"model_type": "step3p7", "architectures": ["Step3p7ForConditionalGeneration"], "torch_dtype": "bfloat16",
           "text_config": dict(text, model_type="step3p7")}  # Step3p7Config drops the text model_type
    arch = kvmath.load_architecture(cfg)
    assert arch.layer_type_counts() == {"full_attention": 12, "sliding_attention": 33} and arch.mtp_num_hidden_layers == 3
    assert {(a.num_kv_heads, a.head_dim) for a in arch.layers} == {(8, 128)}
    small = copy.deepcopy(cfg)
    _cut(small["text_config"])
    small["text_config"]["sliding_window"] = WINDOW
    small["text_config"]["layer_types"] = small["text_config"]["layer_types"][:MAX_LAYERS]
    small["text_config"].update(num_nextn_predict_layers=0, model_type="step3p5")  # the class transformers builds
    arch = kvmath.load_architecture(small)
    real = transformers_cache_bytes(small, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE, threads=1)
    assert real["config_check"] == [] and real["model_class"] == "Step3p7TextModel"
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == \
        {i: g.bytes // g.n_layers for g in d.groups for i in g.layers}
    # vLLM 0.24 step3p5.py needs att_impl_type "GQA"; attention_other_setting's KV heads / head_dim must agree
    with pytest.raises(KvMathError, match="att_impl_type"):
        kvmath.derive(arch, engine="vllm", max_ctx=4096)
    other = dict(text, model_type="step3p5", attention_other_setting={"num_attention_groups": 4})
    with pytest.raises(KvMathError, match="attention_other_setting.num_attention_groups 4"):
        kvmath.load_architecture({"model_type": "step3p7", "text_config": other})


def test_granite_swa_default_layer_types_are_the_published_pattern():
    """GraniteSWAConfig's default (full iff i % 4 == 0, transformers 5.23) against the list ibm-granite/granite-swash-2b
    publishes (layer 0 full, then 3 sliding to 1 full): the config without its layer_types reads the same layers."""
    cfg = _config("ibm-granite__granite-swash-2b")
    published = cfg.pop("layer_types")
    arch = kvmath.load_architecture(cfg)
    assert [layer.layer_type for layer in arch.layers] == published
    assert [layer.index for layer in arch.layers if layer.layer_type == "full_attention"] == [0, 4, 8, 12, 16, 20]


@pytest.mark.parametrize("case,engine", [
    ("ibm-granite__granite-swash-2b", "llama.cpp"), (DEFAULTS + "granitemoe_swa", "llama.cpp"),
    (DEFAULTS + "ministral", "llama.cpp"), ("EleutherAI__gpt-neo-125M", "vllm"),
    ("EleutherAI__gpt-neo-125M", "llama.cpp"), (DEFAULTS + "codegen", "vllm"),
    (DEFAULTS + "codegen", "llama.cpp"), (DEFAULTS + "olmo_hybrid", "llama.cpp"),
    ("inclusionAI__Ling-3.0-tiny", "llama.cpp"), (DEFAULTS + "lfm3", "llama.cpp"),
    (DEFAULTS + "aria_text", "llama.cpp")])
def test_engines_refuse_a_family_whose_source_was_not_read(case, engine):
    arch = kvmath.load_architecture(_config(case))
    with pytest.raises(KvMathError, match=f"{engine}: kvmath does not price model_type") as e:
        kvmath.derive(arch, engine=engine, max_ctx=4096)
    assert "\n" not in str(e.value)


def _edit(case, **changes):
    cfg = _config(case)
    for key, value in changes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    return cfg


@pytest.mark.parametrize("cfg,phrase", [
    # llama.cpp hardcodes 3 sliding : 1 full (a config without layer_types: test_afmoe_without_layer_types_...)
    (_edit("arcee-ai__Trinity-Nano-Preview", layer_types=["sliding_attention", "full_attention"] * 4),
     "not 3 sliding layers to 1 full"),
    (_edit("arcee-ai__Trinity-Nano-Preview", sliding_window=None), "no sliding_window"),
    # MPT: transformers caches every head, vLLM attn_config.kv_n_heads
    (_edit("mosaicml__mpt-7b-instruct", attn_config={"kv_n_heads": 8}), "kv_n_heads 8 is not n_heads 32"),
    (_edit("mosaicml__mpt-7b-instruct", n_heads=None), "no n_heads"),
    (_edit("databricks__dbrx-instruct", attn_config={"clip_qkv": 8}), "no kv_n_heads"),
    (_edit("databricks__dbrx-instruct", hidden_size=4096), "both d_model 6144 and hidden_size 4096"),
    (_edit("adept__persimmon-8b-base", num_key_value_heads=8), "caches every one of its 64 heads"),
    (_edit("adept__persimmon-8b-base", head_dim=128), "hidden_size / num_attention_heads = 64"),
    (_edit("kyutai__helium-1-preview-2b", head_dim=None), "no head_dim"),
    (_edit("kyutai__helium-1-preview-2b", num_key_value_heads=None), "no num_key_value_heads"),
    (_edit("THUDM__glm-4-9b-chat-hf", num_key_value_heads=None), "default it to 2"),
    (_edit(DEFAULTS + "bitnet", num_key_value_heads=None), "default it to 5"),
    (_edit("ibm-granite__granite-swash-2b", num_key_value_heads=None), "default it to 4"),
    (_edit("ibm-granite__granite-swash-2b", sliding_window=None), "default it to 128"),
    (_edit("swiss-ai__Apertus-8B-2509", sliding_window=4096), "sets sliding_window 4096"),
    (_edit(DEFAULTS + "ministral", sliding_window=None, layer_types=None), "default it to 4096"),
    (_edit(DEFAULTS + "ministral", num_key_value_heads=None), "default it to 8"),
    (_edit("EleutherAI__gpt-neo-125M", attention_types=[[["global", "local"], 5]]), "expands to 10 layers"),
    (_edit("EleutherAI__gpt-neo-125M", attention_types=None), "no attention_types"),
    (_edit("EleutherAI__gpt-neo-125M", num_key_value_heads=4), "does not read"),
    # Glm4vTextAttention ignores head_dim (hidden / heads); Glm4vTextConfig / Glm4vMoeTextConfig default the KV heads
    ({"model_type": "glm4v", "text_config": dict(_config(DEFAULTS + "glm4v")["text_config"], head_dim=256)},
     "uses hidden_size / num_attention_heads = 128"),
    ({"model_type": "glm4v", "text_config": {k: v for k, v in _config(DEFAULTS + "glm4v")["text_config"].items()
                                             if k != "num_key_value_heads"}}, "default it to 2"),
    ({"model_type": "glm4v_moe", "text_config": {k: v for k, v in _config("zai-org__GLM-4.5V")["text_config"].items()
                                                 if k != "num_key_value_heads"}}, "default it to 8"),
])
def test_new_family_configs_that_would_be_guessed_are_refused(cfg, phrase):
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)


def test_dbrx_and_mpt_hand_derivation():
    """Per token, per layer, K and V at bf16: DBRX 8 KV heads (attn_config.kv_n_heads) x 6144 / 48 = 128 wide,
    MPT-7B all 32 heads x 4096 / 32 = 128 wide (every head cached); 40 and 32 layers."""
    for case, per_token in (("databricks__dbrx-instruct", 40 * 8 * 128 * 2 * 2),
                            ("mosaicml__mpt-7b-instruct", 32 * 32 * 128 * 2 * 2)):
        arch = kvmath.load_architecture(_config(case))
        d = kvmath.derive(arch, engine="transformers", max_ctx=1000, max_num_seqs=1)
        assert d.total_bytes == 1000 * per_token


def test_gpt_neo_local_layers_keep_every_token_in_transformers_cache():
    """GPT-Neo's local layers window the attention mask, not the cache (modeling_gpt_neo.py): with window_size 16
    below the 43 tokens, transformers 5.23's real cache still holds all 43 per sequence on every layer. Hand
    derivation: 4 layers x 2 sequences x 43 tokens x 2 heads x 64 x 2 (K, V) x 2 B
    (bfloat16: the config states no dtype, and both sides are run at kvmath's default)."""
    cfg = dict(_test_config("EleutherAI__gpt-neo-125M"), window_size=WINDOW)
    arch = kvmath.load_architecture(cfg)
    real = transformers_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE, dtype=arch.dtype,
                                    overrides=OVERRIDES["EleutherAI__gpt-neo-125M"], threads=1)
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    assert real["total_bytes"] == d.total_bytes == 4 * BATCH * (PREFILL + DECODE) * 2 * 64 * 2 * 2


def test_starcoder2_window_per_engine():
    """StarCoder2-7B's sliding_window 4096 on every layer: transformers and vLLM window it (vLLM 0.24: no
    layer_types, so not interleaved, and CacheConfig.sliding_window is the model's: engine/arg_utils.py), llama.cpp
    runs it full (conversion/starcoder.py writes no window; src/models/starcoder2.cpp reads none). By hand, at
    n_ctx 16,384: llama.cpp 6 layers x 4 KV heads x 128 x (K + V) x 2 B x 16,384 = 201,326,592 B; vLLM's
    SlidingWindowSpec holds cdiv(4,095 + 2,048 batched tokens, 16) + 1 = 385 blocks of 16 = 6,160 cells a layer."""
    arch = kvmath.load_architecture(_config("bigcode__starcoder2-7b"))
    assert {(a.layer_type, a.sliding_window, a.num_kv_heads, a.head_dim) for a in arch.layers} == {
        ("sliding_attention", 4096, 4, 128)}
    assert kvmath.derive(arch, engine="llama.cpp", max_ctx=16384).total_bytes == 201_326_592
    v = kvmath.derive(arch, engine="vllm", max_ctx=16384)
    assert [(g.layer_type, g.cells) for g in v.groups] == [("sliding_attention", 6160)]


WRAPPED = ["llava-hf__llava-v1.6-mistral-7b-hf", "lerobot__pi0-paligemma-3b", DEFAULTS + "internvl",
           DEFAULTS + "llava_onevision", DEFAULTS + "llava_next_video", DEFAULTS + "aya_vision",
           DEFAULTS + "cohere2_vision", DEFAULTS + "idefics3", DEFAULTS + "smolvlm", "LGAI-EXAONE__EXAONE-4.5-33B",
           DEFAULTS + "minicpmv4_6", DEFAULTS + "minicpmv4_7", DEFAULTS + "glm4v", "zai-org__GLM-4.5V"]


@pytest.mark.parametrize("case", WRAPPED)
def test_wrapper_model_caches_its_text_part_as_kvmath_reads_it(case):
    """The whole wrapper as transformers 5.23 builds it from the config (its own config class building the text part
    from the text_config dict, its vision tower cut to one layer), run on text tokens: the cache it returns equals
    kvmath's derivation layer by layer. So the wrapper neither changes the text config nor caches anything beside the
    text model's cache (checked on the text model alone in test_cache_equals_transformers_layer_by_layer)."""
    cfg = _test_config(case)
    if case == DEFAULTS + "aya_vision":  # AyaVisionConfig's default tower (1152 wide, 14 heads) cannot be built
        cfg["vision_config"]["num_attention_heads"] = 16
    _check_wrapper_cache(cfg, OVERRIDES.get(case))


def _check_wrapper_cache(cfg: dict, overrides: dict | None) -> None:
    """Build the wrapper of ``cfg`` (its text part shrunk as realcache shrinks it, its tower cut to one layer), run
    text tokens through it and compare the cache it returns with kvmath's derivation, layer by layer."""
    import torch
    from transformers import CONFIG_MAPPING, AutoModelForImageTextToText

    from realcache import build_small_text_config, describe_cache

    arch = kvmath.load_architecture(cfg)
    small, _, _, _ = build_small_text_config(cfg, dtype=arch.dtype, overrides=overrides)
    text = small.to_dict()
    vision = dict(cfg["vision_config"])
    vision.update({k: 1 for k in ("num_hidden_layers", "depth") if k in vision})
    outer = {k: v for k, v in cfg.items() if k not in ("model_type", "text_config", "vision_config")}
    conf = CONFIG_MAPPING[cfg["model_type"]](text_config=text, vision_config=vision, **outer)
    torch.manual_seed(0)
    with torch.no_grad():
        model = AutoModelForImageTextToText.from_config(conf, dtype=getattr(torch, arch.dtype)).eval()
        vocab = conf.text_config.vocab_size
        out = model(input_ids=torch.randint(0, vocab, (BATCH, PREFILL)), use_cache=True)
        cache = out.past_key_values
        for _ in range(DECODE):
            cache = model(input_ids=torch.randint(0, vocab, (BATCH, 1)), past_key_values=cache,
                          use_cache=True).past_key_values
    real = describe_cache(cache)
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == \
        {i: g.bytes // g.n_layers for g in d.groups for i in g.layers}
    assert real["total_bytes"] == d.total_bytes


@pytest.mark.parametrize("outer,text", [
    ("llava_next", _config("llava-hf__llava-v1.6-mistral-7b-hf")["text_config"]),  # hidden, layers, heads left out
    ("llava_next_video", {"model_type": "llama", "max_position_embeddings": 4096, "vocab_size": 32064}),
    ("llava", {"model_type": "mistral", "sliding_window": None, "vocab_size": 131072, "head_dim": 128,
               "hidden_size": 5120, "num_hidden_layers": 40}),  # pixtral-12b's layout: heads and KV heads left out
    ("paligemma", _config("lerobot__pi0-paligemma-3b")["text_config"]),  # head_dim left to GemmaConfig (256)
    ("paligemma", {"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                   "num_key_value_heads": 4, "vocab_size": 257216}),  # paligemma2-3b's: heads, window, head_dim out
    ("llava_onevision", {"model_type": "qwen2", "hidden_size": 896, "num_attention_heads": 14, "num_hidden_layers": 24,
                         "num_key_value_heads": 2}),
    ("smolvlm", {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, "num_hidden_layers": 24}),
])
def test_sparse_wrapper_text_configs_read_as_the_wrapper_builds_them(outer, text):
    """A published wrapper's text_config often leaves sizes to its text config class; the wrapper builds
    ``CONFIG_MAPPING[model_type](**text_config)``. kvmath's layers against the text config transformers 5.23's own
    wrapper class builds (its layer_types, or sliding on every layer when it has a window; KV heads, head width,
    window): no model is run, the config object is the independent side."""
    from transformers import CONFIG_MAPPING

    built = CONFIG_MAPPING[outer](text_config=dict(text)).text_config
    n = built.num_hidden_layers
    types = getattr(built, "layer_types", None) or \
        ["sliding_attention" if getattr(built, "sliding_window", None) else "full_attention"] * n
    head_dim = getattr(built, "head_dim", None) or built.hidden_size // built.num_attention_heads
    window = getattr(built, "sliding_window", None)
    want = [(t, built.num_key_value_heads, head_dim, window if t == "sliding_attention" else None) for t in types]
    arch = kvmath.load_architecture({"model_type": outer, "text_config": dict(text)})
    assert [(a.layer_type, a.num_kv_heads, a.head_dim, a.sliding_window) for a in arch.layers] == want


def test_llava_next_hand_derivation_and_internvl_square_patch():
    """llava-v1.6-mistral-7b's sparse text_config: MistralConfig's 32 layers x 8 KV heads x 4096 / 32 = 128 wide, no
    window, float16 (the top-level torch_dtype): per token 32 x 8 x 128 x 2 (K, V) x 2 B = 131,072 B. InternVL writes
    its patch as [14, 14] (InternVLVisionConfig): read as 14; a non-square patch is refused in one line."""
    arch = kvmath.load_architecture(_config("llava-hf__llava-v1.6-mistral-7b-hf"))
    assert kvmath.derive(arch, engine="transformers", max_ctx=1000, max_num_seqs=1).total_bytes == 1000 * 131_072
    cfg = _config(DEFAULTS + "internvl")
    assert cfg["vision_config"]["patch_size"] == [14, 14] and kvmath.load_architecture(cfg).vision.patch_size == 14
    cfg["vision_config"]["patch_size"] = [14, 16]
    with pytest.raises(KvMathError, match="patch_size") as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("case,engine,phrase", [
    (DEFAULTS + "minicpmv4_7", "vllm", "registers no MiniCPMV4_7ForConditionalGeneration"),
    (DEFAULTS + "minicpmv4_7", "llama.cpp", "MiniCPM-V 4.7"), (DEFAULTS + "minicpmv4_6", "llama.cpp", "MiniCPM-V 4.6"),
    ("zai-org__GLM-4.5V", "llama.cpp", "GLM-4.5V"), (DEFAULTS + "glm4v", "llama.cpp", "GLM-4.1V"),
    ("LGAI-EXAONE__EXAONE-4.5-33B", "llama.cpp", "MTP blocks to block_count")])
def test_engines_refuse_a_wrapper_they_do_not_serve(case, engine, phrase):
    """MiniCPM-V 4.7 has no vLLM 0.24 model class (registry.py); no llama.cpp converter was read for either. Their
    Qwen 3.5 text part alone would be priced, so the wrapper's refusal must speak first, in one line."""
    arch = kvmath.load_architecture(_config(case))
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.derive(arch, engine=engine, max_ctx=4096)
    assert "\n" not in str(e.value)
    assert kvmath.derive(kvmath.load_architecture(_config(DEFAULTS + "minicpmv4_6")), engine="vllm", max_ctx=4096)


INTERNVL_VIT_300M = {  # OpenGVLab/InternVL internvl_chat/tools/internvl_custom2hf.py's vit_300m_config (ViT-300M)
    "architectures": ["InternVisionModel"], "attention_bias": True, "attention_dropout": 0.0, "dropout": 0.0,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "hidden_size": 1024, "image_size": [448, 448],
    "initializer_factor": 0.1, "initializer_range": 1e-10, "intermediate_size": 4096, "layer_norm_eps": 1e-06,
    "layer_scale_init_value": 0.1, "model_type": "internvl_vision", "norm_type": "layer_norm",
    "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 24, "patch_size": [14, 14],
    "projection_dropout": 0.0, "torch_dtype": "bfloat16", "use_absolute_position_embeddings": True,
    "use_mask_token": False, "use_mean_pooling": True, "use_qk_norm": False}


def test_internvl3_5_as_openGVLab_converts_it_caches_its_qwen3_text_part():
    """InternVL3.5-8B-HF as OpenGVLab's converter writes it (internvl_custom2hf.py ``convert_chat_config_to_hf``:
    ``text_config`` = the chat model's ``llm_config``, Qwen3-8B's fields here from tests/fixtures/configs, and
    ``vision_config`` = its ViT-300M dict): kvmath reads 36 full layers x 8 KV heads x 128, and the whole InternVL
    wrapper caches exactly that (text cut to 8 layers, tower to 1)."""
    text = {k: v for k, v in _config("Qwen__Qwen3-8B").items() if k != "architectures"}
    cfg = {"architectures": ["InternVLForConditionalGeneration"], "downsample_ratio": 0.5, "image_seq_length": 256,
           "image_token_id": 151671, "model_type": "internvl", "projector_hidden_act": "gelu",
           "text_config": dict(text, use_cache=True), "torch_dtype": "bfloat16", "vision_config": INTERNVL_VIT_300M,
           "vision_feature_layer": -1, "vision_feature_select_strategy": "default"}
    arch = kvmath.load_architecture(cfg)
    assert {(a.layer_type, a.num_kv_heads, a.head_dim) for a in arch.layers} == {("full_attention", 8, 128)}
    assert arch.num_hidden_layers == 36 and arch.vision.patch_size == 14 and arch.vision.depth == 24
    small = copy.deepcopy(cfg)
    _cut(small["text_config"])
    _check_wrapper_cache(small, None)


def test_wrappers_kvmath_does_not_read_are_refused_naming_why():
    """Llama 3.2 Vision (mllama): transformers caches the image's K / V on its cross-attention layers; the refusal
    names that instead of listing the known wrappers."""
    cfg = {"model_type": "mllama", "text_config": {"model_type": "mllama_text_model", "cross_attention_layers": [3, 8]},
           "vision_config": {"hidden_size": 1280}}
    with pytest.raises(KvMathError, match="cross_attention_layers cache the image") as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value) and "known wrappers" not in str(e.value)


# --- fifth batch (hybrid / state-space decoders) ----------------------------------------------------------------


def test_olmo_hybrid_vllm_state_by_hand_and_head_dim_vllm_does_not_read():
    """OlmoHybridConfig's defaults: vLLM 0.24 (olmo_hybrid.py, gated_delta_net_state_shape) keeps per sequence and
    Gated DeltaNet layer a conv state of (kernel 4 - 1) x (2 x 30 x 96 + 30 x 192) and a 30 x 96 x 192 state, both
    bf16: 3 x 11,520 x 2 + 552,960 x 2 = 1,175,040 B (by hand). A written head_dim other than hidden_size /
    num_attention_heads is what transformers caches but not vLLM (it computes hidden // heads): refused there."""
    cfg = _config(DEFAULTS + "olmo_hybrid")
    arch = kvmath.load_architecture(cfg)
    assert arch.layer_type_counts() == {"linear_attention": 24, "full_attention": 8}
    v = kvmath.derive(arch, engine="vllm", max_ctx=4096)
    assert "(page padded from 1,175,040 B" in next(g.description for g in v.groups if g.kind == "gdn")
    with pytest.raises(KvMathError, match="not head_dim 64") as e:
        kvmath.derive(kvmath.load_architecture(dict(cfg, head_dim=64)), engine="vllm", max_ctx=4096)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("cfg,phrase", [
    (_edit(DEFAULTS + "zamba2", head_dim=64), "attention_head_dim 160 and its alias head_dim 64"),
    (_edit(DEFAULTS + "zamba2", layers_block_type=None, num_hidden_layers=8), "no layers_block_type"),
    (_edit(DEFAULTS + "zamba2", layers_block_type=["mamba"] * 53 + ["attention"]), "contains full_attention; Zamba2Model builds only"),
    (_edit(DEFAULTS + "zamba2", mamba_headdim=64), "n_mamba_heads 8 x mamba_headdim 64 must equal"),
    (_edit(DEFAULTS + "zamba2", sliding_window=4096), "sets sliding_window 4096"),
    (_edit(DEFAULTS + "olmo_hybrid", layer_types=["linear_attention"] * 32), "at least one linear_attention and one"),
    (_edit(DEFAULTS + "olmo_hybrid", linear_num_key_heads=7), "not a multiple of linear_num_key_heads 7"),
    (_edit(DEFAULTS + "aria_text", sliding_window=4096), "AriaTextConfig does not define"),
    (_edit(DEFAULTS + "aria_text", hidden_size=4001), "not a multiple of num_attention_heads"),
    (dict(_config(DEFAULTS + "cohere_compass_text"), sliding_window=None, layer_types=["sliding_attention"] * 40),
     "sliding_window null but has sliding_attention"),
])
def test_hybrid_configs_that_would_be_guessed_are_refused(cfg, phrase):
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)


def _real_equals_kvmath(cfg: dict, overrides: dict | None = None):
    """kvmath's transformers derivation of ``cfg`` (cut by ``_cut``) against transformers' real cache, layer by
    layer; returns (arch, total bytes)."""
    _cut(cfg)
    arch = kvmath.load_architecture(cfg)
    if cfg.get("sliding_window") and arch.layers_of("sliding_attention"):
        cfg["sliding_window"] = WINDOW
        arch = kvmath.load_architecture(cfg)
    real = transformers_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE, dtype=arch.dtype,
                                    overrides=overrides, threads=1)
    assert real["config_check"] == [], real["config_check"]
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == \
        {i: g.bytes // g.n_layers for g in d.groups for i in g.layers}
    assert d.total_bytes == real["total_bytes"]
    return arch, d.total_bytes


_S, _F = "sliding_attention", "full_attention"


@pytest.mark.parametrize("case,changes,types", [
    # no layer_types: each config class's own __post_init__ rule, against transformers' real cache
    (DEFAULTS + "exaone_moe", {"layer_types": None}, [_S, _S, _S, _F] * 2),  # (i + 1) % sliding_window_pattern 4
    (DEFAULTS + "cwm", {"layer_types": None}, [_F, _S, _S, _S] * 2),  # full iff i % 4 == 0
    (DEFAULTS + "vaultgemma", {"layer_types": None}, [_S, _F] * 4),  # sliding iff (i + 1) % 2
    # Cohere2MoeConfig: first_k_dense_replace 2 layers on prefix_dense_sliding_window_pattern 2, the rest on 4
    (DEFAULTS + "cohere2_moe", {"layer_types": None, "mlp_layer_types": None, "first_k_dense_replace": 2,
                                "prefix_dense_sliding_window_pattern": 2}, [_S, _F, _S, _S, _S, _F, _S, _S]),
    # Dots1Config: sliding iff sliding_window is set and i >= max_window_layers (dots.llm1 with 4 of 8 windowed)
    ("rednote-hilab__dots.llm1.inst", {"sliding_window": 4096, "max_window_layers": 4}, [_F] * 4 + [_S] * 4),
    # written layer_types with sliding layers (the class defaults have none)
    (DEFAULTS + "laguna", {"layer_types": [_S, _S, _S, _F] * 10}, [_S, _S, _S, _F] * 2),
    (DEFAULTS + "mellum", {"layer_types": [_F, _S] * 14}, [_F, _S] * 4),
    # FlintConfig: full on layers 0, 1, every i % 4 == 1 and the last; Kolibri1Config: full iff (i + 1) % 5 == 0
    (DEFAULTS + "flint", {"layer_types": None}, [_F, _F, _S, _S, _S, _F, _S, _F]),
    (DEFAULTS + "kolibri1", {"layer_types": None}, [_S, _S, _S, _S, _F, _S, _S, _S]),
    # GPT-SW3 is GPT2Config under its own model_type (CONFIG_MAPPING['gpt-sw3']): every head, every token
    ("openai-community__gpt2", {"model_type": "gpt-sw3"}, [_F] * 4),
    # AfmoeConfig without layer_types: (i + 1) % global_attn_every_n_layers 4, as Trinity publishes them
    ("arcee-ai__Trinity-Nano-Preview", {"layer_types": None}, [_S, _S, _S, _F] * 2),
    # Exaone4Config's class defaults fill what a sparse config leaves out: sliding_window 4096 and
    # sliding_window_pattern 4 (kvmath read a config without the three keys as all full attention)
    ("LGAI-EXAONE__EXAONE-4.0-32B", {"layer_types": None, "sliding_window": None, "sliding_window_pattern": None},
     [_S, _S, _S, _F] * 2),
    ("LGAI-EXAONE__EXAONE-4.0-32B", {"layer_types": None, "sliding_window_pattern": None}, [_S, _S, _S, _F] * 2),
])
def test_batch_d_layer_rules_equal_transformers_real_cache(case, changes, types):
    cfg = _edit(case, **{k: v for k, v in changes.items() if v is not None})
    for key in [k for k, v in changes.items() if v is None]:
        cfg.pop(key, None)
    arch, _ = _real_equals_kvmath(cfg, OVERRIDES.get(case))
    assert [layer.layer_type for layer in arch.layers] == types


def test_minicpm3_latent_by_hand_and_engines():
    """MiniCPM3-4B (the published fields): transformers caches kv_lora_rank 256 + qk_rope_head_dim 32 per token and
    layer, 62 layers x 288 x 2 B = 35,712 B a token at bf16; vLLM 0.24 caches 40 heads x 96 for K and for V instead
    (models/minicpm3.py), which kvmath does not model: refused in one line, as is llama.cpp."""
    arch = kvmath.load_architecture(_config("openbmb__MiniCPM3-4B"))
    assert {(a.kv_lora_rank, a.qk_rope_head_dim, a.v_head_dim) for a in arch.layers} == {(256, 32, 64)}
    assert kvmath.derive(arch, engine="transformers", max_ctx=1000, max_num_seqs=1).total_bytes == 1000 * 62 * 288 * 2
    for engine, phrase in (("vllm", "not the MLA latent"), ("llama.cpp", "was not read")):
        with pytest.raises(KvMathError, match=f"^{engine}: kvmath does not price minicpm3 .*{phrase}") as e:
            kvmath.derive(arch, engine=engine, max_ctx=4096)
        assert "\n" not in str(e.value)


_VLLM_PRICED = ["hy_v3", "iquestcoder", "jais2", "cohere2_moe", "cwm", "laguna", "hyperclovax"]
_VLLM_REFUSED = ["solar_open", "diffllama", "jetmoe", "xglm", "biogpt", "ctrl", "gpt_neox_japanese", "vaultgemma",
                 "mellum", "youtu", "longcat_flash", "exaone_moe", "axk1", "flint", "kolibri1",
                 "axk2", "hy_v4"]


@pytest.mark.parametrize("mt", _VLLM_PRICED + _VLLM_REFUSED)
def test_batch_d_engines_price_or_refuse_in_one_line(mt):
    """llama.cpp refuses every batch-D type (no converter read); vLLM 0.24 prices the types whose model file
    allocates what transformers caches and refuses the rest in one line (the defaults exaone_moe writes no
    is_moe_layer, which vLLM's model file reads)."""
    arch = kvmath.load_architecture(_config(DEFAULTS + mt))
    engines = ["llama.cpp"] + (["vllm"] if mt in _VLLM_REFUSED else [])
    for engine in engines:
        with pytest.raises(KvMathError, match=f"^{engine}: kvmath does not price {mt} ") as e:
            kvmath.derive(arch, engine=engine, max_ctx=2048)
        assert "\n" not in str(e.value)
    if mt in _VLLM_PRICED:
        kv = kvmath.derive(arch, engine="vllm", max_ctx=2048)
        assert kv.total_bytes > 0


def test_vllm_prices_hy_v3_and_cwm_by_hand():
    """hy_v3's class defaults at 16,384 tokens: 80 layers x 8 KV heads x 128 x (K + V) x 2 B x 16,384 =
    5,368,709,120 B (vLLM models/hy_v3.py: Attention of num_key_value_heads x config.head_dim); CWM's 64 layers
    keep 16 full layers of 16,384 cells and 48 windowed at 8,192 (models/llama.py: layer_types[i])."""
    arch = kvmath.load_architecture(_config(DEFAULTS + "hy_v3"))
    assert kvmath.derive(arch, engine="vllm", max_ctx=16384).total_bytes == 80 * 8 * 128 * 2 * 2 * 16384
    cwm = kvmath.derive(kvmath.load_architecture(_config(DEFAULTS + "cwm")), engine="vllm", max_ctx=16384)
    assert {g.layer_type: sum(len(x.layers) for x in cwm.groups if x.layer_type == g.layer_type)
            for g in cwm.groups} == {_F: 16, _S: 48}
    # Laguna XS 2.1 (models/laguna.py: window iff layer_types[i] is sliding): 10 full layers of 16,384 cells and 30
    # windowed at 512, whose SlidingWindowSpec holds cdiv(511 + 2,048 batched tokens, 16) + 1 = 161 blocks of 16
    lag = kvmath.derive(kvmath.load_architecture(_config("poolside__Laguna-XS-2.1")), engine="vllm", max_ctx=16384)
    assert sorted((g.layer_type, len(g.layers), g.cells) for g in lag.groups) == [(_F, 10, 16384), (_S, 30, 2576)]


def test_k_exaone_vllm_reads_is_moe_layer():
    arch = kvmath.load_architecture(_config("LGAI-EXAONE__K-EXAONE-236B-A23B"))
    assert kvmath.derive(arch, engine="vllm", max_ctx=2048).total_bytes > 0
    with pytest.raises(KvMathError, match="reads config.is_moe_layer"):
        kvmath.derive(kvmath.load_architecture(_edit("LGAI-EXAONE__K-EXAONE-236B-A23B", is_moe_layer=None)),
                      engine="vllm", max_ctx=2048)


@pytest.mark.parametrize("cfg,phrase", [
    (_edit(DEFAULTS + "exaone_moe", layer_types=None, sliding_window_pattern="LLLG"), "reads an integer pattern"),
    (dict(_edit(DEFAULTS + "exaone_moe", layer_types=None), sliding_window=None), "divides by a pattern of 0"),
    (_edit(DEFAULTS + "longcat_flash", num_hidden_layers=28), "num_hidden_layers 28 and num_layers 28"),
    (_edit(DEFAULTS + "longcat_flash", num_layers=None), "no num_layers"),
    (_edit(DEFAULTS + "jetmoe", head_dim=64), "head_dim and kv_channels differently"),
    (_edit(DEFAULTS + "xglm", d_model=None), "no d_model"),
    (_edit(DEFAULTS + "ctrl", n_head=None), "no n_head"),
    (_edit(DEFAULTS + "biogpt", num_key_value_heads=4), "does not read"),
    (_edit(DEFAULTS + "solar_open", sliding_window=4096), "sets sliding_window 4096"),
    # an explicit null where the config class keeps None (SolarOpenConfig.head_dim: int = 128, no __post_init__ rule)
    (dict(_config(DEFAULTS + "solar_open"), head_dim=None), "sets head_dim null"),
    (dict(_config(DEFAULTS + "vaultgemma"), num_key_value_heads=None), "sets num_key_value_heads null"),
    (_edit(DEFAULTS + "laguna", num_attention_heads_per_layer=[12] * 40), "not a multiple of num_key_value_heads 8"),
    (_edit(DEFAULTS + "laguna", num_attention_heads_per_layer=[48] * 3), "one head count per layer"),
    (_edit(DEFAULTS + "minicpm3", sliding_window=1024), "has no sliding window"),
    (_edit(DEFAULTS + "hy_v4", indexer_types=["full", "sometimes"] * 17), "must list 'full' / 'shared'"),
    (_edit(DEFAULTS + "axk2", layer_types=["full_attention"] * 48), "valid layer types: indexed_attention"),
    ({"model_type": "openai-gpt", "n_embd": 768, "n_layer": 12, "n_head": 12}, "keeps none, so there is no cache"),
])
def test_batch_d_configs_that_would_be_guessed_are_refused(cfg, phrase):
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)


def test_zamba2_legacy_block_names_and_engines():
    """Zamba2Config remaps the legacy ``mamba`` name to linear_attention (configuration_utils.py
    remap_legacy_layer_types): the Hub's ['mamba', ..., 'hybrid'] lists read as the class default's layers. vLLM has
    no rule for a layer holding attention and a Mamba-2 state side by side; llama.cpp's source was not read."""
    cfg = _config(DEFAULTS + "zamba2")
    legacy = dict(cfg, layers_block_type=["mamba" if t == "linear_attention" else t for t in cfg["layers_block_type"]])
    assert kvmath.load_architecture(legacy).layers == kvmath.load_architecture(cfg).layers
    arch = kvmath.load_architecture(cfg)
    hybrid = arch.layers[6]
    assert (hybrid.attention.num_kv_heads, hybrid.attention.head_dim, hybrid.mamba.num_heads, hybrid.mamba.head_dim) \
        == (32, 160, 8, 640)
    with pytest.raises(KvMathError, match="vllm has no rule for AttentionMamba2Layer"):
        kvmath.derive(arch, engine="vllm", max_ctx=4096)
    with pytest.raises(KvMathError, match="llama.cpp: kvmath does not price model_type zamba2"):
        kvmath.derive(arch, engine="llama.cpp", max_ctx=4096)


def test_bailing_hybrid_kda_widths_as_the_config_class_sets_them():
    """BailingHybridConfig.__post_init__ (5.23): KDA heads x width = num_attention_heads x head_dim unless
    linear_num_heads / linear_head_dim are written (a config transformers saved: head_dim 64 = qk_rope_head_dim,
    linear_head_dim 128), MLA every layer_group_size-th layer. Ling-3.0-tiny: 16 x 128, MLA at 3, 7, ..., 23.
    By hand per sequence: KDA conv 3 x 16 x 128 x 4 x 2 B + state 16 x 128 x 128 x 4 B = 1,097,728 B."""
    cfg = _config("inclusionAI__Ling-3.0-tiny")
    arch = kvmath.load_architecture(cfg)
    assert [a.index for a in arch.layers_of("full_attention")] == [3, 7, 11, 15, 19, 23]
    assert (arch.layers[0].num_heads, arch.layers[0].head_dim, arch.mtp_num_hidden_layers) == (16, 128, 1)
    d = kvmath.derive(arch, engine="transformers", max_ctx=1, max_num_seqs=1)
    assert next(g.bytes // g.n_layers for g in d.groups if g.kind == "kda") == 1_097_728
    saved = dict(cfg, head_dim=64, linear_head_dim=128, linear_num_heads=16)
    assert kvmath.load_architecture(saved).layers == arch.layers
    with pytest.raises(KvMathError, match="vLLM 0.24 registers no BailingHybrid"):
        kvmath.derive(arch, engine="vllm", max_ctx=4096)


def test_lfm3_sparse_config_reads_lfm3_config_class_defaults():
    """A config that leaves the cache keys out is read with Lfm3Config's own defaults (the class-defaults file,
    written by transformers 5.23's to_dict, is the independent side): 4 KV heads (not the 16 heads) x 128, window
    256, conv kernel 7; layers 2, 6, ... full, 4, 8, ... sliding, the rest conv. A null window with sliding layers
    and the engines without an LFM3 rule are refused in one line."""
    full = _config(DEFAULTS + "lfm3")
    sparse = {k: full[k] for k in ("model_type", "num_hidden_layers", "hidden_size")}
    arch = kvmath.load_architecture(sparse)
    assert arch.layers == kvmath.load_architecture(full).layers
    assert [a.index for a in arch.layers_of("full_attention")] == [2, 6, 10, 14, 18, 22]
    assert [a.index for a in arch.layers_of("sliding_attention")] == [4, 8, 12, 16, 20]
    assert {(a.num_kv_heads, a.head_dim) for a in arch.attention_layers()} == {(4, 128)}
    assert {a.sliding_window for a in arch.layers_of("sliding_attention")} == {256}
    assert {(a.width, a.conv_kernel) for a in arch.layers_of("conv")} == {(2048, 7)}
    with pytest.raises(KvMathError, match="sets sliding_window null but has sliding_attention layers"):
        kvmath.load_architecture(dict(full, sliding_window=None))
    with pytest.raises(KvMathError, match="vLLM 0.24 registers no LFM3"):
        kvmath.derive(arch, engine="vllm", max_ctx=4096)


def test_hrm_text_caches_one_slot_per_attention_invocation():
    """sapientinc/HRM-Text-1B: 16 layers per stack, H_cycles 2, L_cycles 3 -> 16 x 2 x (3 + 1) = 128 cache slots
    (HrmTextConfig.__post_init__), each 12 heads x 128 (MHA). By hand per token: 128 x 12 x 128 x 2 (K, V) x 2 B =
    786,432 B. Saved by transformers (num_layers_per_stack 16, num_hidden_layers 128) it reads the same; a saved
    pair that disagrees, a window HrmTextConfig does not define, and the engines not read are refused."""
    cfg = _config("sapientinc__HRM-Text-1B")
    arch = kvmath.load_architecture(cfg)
    assert arch.num_hidden_layers == 128
    assert kvmath.derive(arch, engine="transformers", max_ctx=1000, max_num_seqs=1).total_bytes == 1000 * 786_432
    saved = dict(cfg, num_layers_per_stack=16, num_hidden_layers=128)
    assert kvmath.load_architecture(saved).layers == arch.layers
    for bad, phrase in ((dict(cfg, num_layers_per_stack=16), "num_hidden_layers 16 is not num_layers_per_stack 16"),
                        (dict(cfg, sliding_window=512), "sets sliding_window"),
                        (dict(cfg, num_key_value_heads=4), "caches every head")):
        with pytest.raises(KvMathError, match=phrase):
            kvmath.load_architecture(bad)
    for engine in ("vllm", "llama.cpp"):
        with pytest.raises(KvMathError, match=f"{engine}: kvmath does not price model_type hrm_text"):
            kvmath.derive(arch, engine=engine, max_ctx=4096)


def test_cohere_compass_text_sliding_layers_equal_transformers():
    """CohereCompassTextConfig's defaults with 3 sliding : 1 full layer_types, window 16, 8 layers: the sliding layers
    keep the last 15 tokens (plus the int64 window), the full ones all 43, layer by layer as transformers holds them.
    By hand, a full layer: 64 KV heads x 128 x 2 (K, V) x 2 B x 43 tokens x 2 sequences = 2,818,048 B. Without
    layer_types every layer is full (its sliding_window_pattern fallback never runs in 5.23)."""
    cfg = _config(DEFAULTS + "cohere_compass_text")
    assert kvmath.load_architecture(dict(cfg, layer_types=None, sliding_window_pattern=4)).layer_type_counts() == \
        {"full_attention": 40}
    types = ["sliding_attention"] * 3 + ["full_attention"]
    cfg = dict(cfg, num_hidden_layers=8, layer_types=types * 2, sliding_window=WINDOW)
    arch = kvmath.load_architecture(cfg)
    real = transformers_cache_bytes(cfg, batch=BATCH, seq_len=PREFILL, decode_steps=DECODE, dtype=arch.dtype,
                                    overrides=OVERRIDES[DEFAULTS + "cohere_compass_text"], threads=1)
    assert real["config_check"] == []
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    per_layer = {i: g.bytes // g.n_layers for g in d.groups for i in g.layers}
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == per_layer
    assert per_layer[3] == 64 * 128 * 2 * 2 * 43 * 2
    for engine, phrase in (("vllm", "registers no Cohere text-only model class"),
                           ("llama.cpp", "does not price model_type cohere_compass_text")):
        with pytest.raises(KvMathError, match=phrase):
            kvmath.derive(arch, engine=engine, max_ctx=4096)


def test_recurrent_gemma_state_and_window_by_hand():
    """google/recurrentgemma-2b: block_types cycled to 26 layers (attention at 2, 5, ..., 23), every attention layer
    local over attention_window_size 2048. By hand at 4,096 tokens, one sequence: an RG-LRU layer 2,560 x (4 - 1)
    x 2 B conv + 2,560 x 4 B state = 25,600 B; an attention layer 2,047 tokens x 1 KV head x 256 x 2 x 2 B + the
    8-byte window = 2,096,136 B. Engines without an RG-LRU rule refuse it; the Hub's _block_types must agree with
    block_types (transformers ignores it)."""
    cfg = _config("google__recurrentgemma-2b")
    arch = kvmath.load_architecture(cfg)
    assert [a.index for a in arch.layers_of("sliding_attention")] == [2, 5, 8, 11, 14, 17, 20, 23]
    d = kvmath.derive(arch, engine="transformers", max_ctx=4096, max_num_seqs=1)
    per_layer = {i: g.bytes // g.n_layers for g in d.groups for i in g.layers}
    assert (per_layer[0], per_layer[2]) == (25_600, 2_096_136)
    assert d.total_bytes == 18 * 25_600 + 8 * 2_096_136
    for engine in ("vllm", "llama.cpp"):
        with pytest.raises(KvMathError, match=f"{engine} has no rule for RGLRULayer"):
            kvmath.derive(arch, engine=engine, max_ctx=4096)
    for bad, phrase in ((dict(cfg, _block_types=["recurrent", "attention"]), "transformers 5.23 ignores"),
                        (dict(cfg, block_types=["recurrent", "mamba"]), "block_types must be"),
                        (dict(cfg, sliding_window=1024), "attention_window_size and its alias sliding_window"),
                        (dict(cfg, layer_types=["sliding_attention"] * 26), "derives it from block_types")):
        with pytest.raises(KvMathError, match=phrase):
            kvmath.load_architecture(bad)


def test_batch_d_absent_keys_take_the_config_class_defaults():
    """A sparse config reads as transformers 5.23's config classes fill it: SolarOpenConfig 8 KV heads x head_dim
    128, VaultGemmaConfig 4 x 256 with sliding_window 4096 on even layers, JetMoeConfig 16 KV heads x kv_channels
    128, MiniCPM3Config kv_lora_rank 256 + qk_rope_head_dim 32 (the transformers objects built from the same dicts
    agree: checked here)."""
    from transformers import AutoConfig

    base = {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 4, "intermediate_size": 256}
    for mt, expect in (("solar_open", {(8, 128, None)}), ("vaultgemma", {(4, 256, 4096), (4, 256, None)}),
                       ("jetmoe", {(16, 128, None)})):
        cfg = dict(base, model_type=mt)
        arch = kvmath.load_architecture(cfg)
        assert {(a.num_kv_heads, a.head_dim, a.sliding_window) for a in arch.layers} == expect
        hf = AutoConfig.for_model(mt, **{k: v for k, v in cfg.items() if k != "model_type"})
        assert (hf.num_key_value_heads, getattr(hf, "head_dim", None) or hf.kv_channels) == \
            (arch.layers[0].num_kv_heads, arch.layers[0].head_dim)
    arch = kvmath.load_architecture(dict(base, model_type="minicpm3"))
    assert {(a.kv_lora_rank, a.qk_rope_head_dim) for a in arch.layers} == {(256, 32)}


# --- speech / omni wrappers (issue 20, s34 batch B2) ---------------------------------------------------------------
SPEECH_WRAPPED = [DEFAULTS + "qwen2_audio", DEFAULTS + "granite_speech", DEFAULTS + "nemotron_h_omni",
                  DEFAULTS + "qwen2_5_omni_thinker", DEFAULTS + "moss_transcribe_diarize", DEFAULTS + "muse_spark",
                  DEFAULTS + "muse_glimmer", "ibm-granite__granite-speech-3.3-2b"]
_TOWER_KEYS = ("audio_config", "vision_config", "encoder_config", "projector_config")


def _check_speech_wrapper_cache(cfg: dict, overrides: dict | None = None) -> int:
    """Build the whole speech / omni wrapper (AutoModelForMultimodalLM from its own config class, the text part shrunk
    as realcache shrinks it, every tower cut to one layer), run text tokens through it and compare the cache it
    returns with kvmath's transformers derivation layer by layer. Returns the cache's total bytes."""
    import torch
    from transformers import CONFIG_MAPPING, AutoModelForMultimodalLM

    from realcache import build_small_text_config, describe_cache

    arch = kvmath.load_architecture(cfg)
    small, _, _, _ = build_small_text_config(cfg, dtype=arch.dtype, overrides=overrides)
    towers = {}
    for key in _TOWER_KEYS:
        if isinstance(cfg.get(key), dict):
            t = dict(cfg[key])
            depth = next((t[k] for k in ("num_hidden_layers", "depth", "encoder_layers", "num_layers") if k in t), None)
            t.update({k: v[:1] for k, v in t.items() if isinstance(v, list) and len(v) == depth})  # per-layer lists
            t.update({k: 1 for k in ("num_hidden_layers", "depth", "encoder_layers", "num_layers") if k in t})
            if key == "audio_config" and "out_hidden_size" in t:  # Muse Spark scatters audio onto the text width
                t["out_hidden_size"] = small.hidden_size
            towers[key] = t
    outer = {k: v for k, v in cfg.items() if k not in ("model_type", "text_config", "llm_config", *_TOWER_KEYS)}
    conf = CONFIG_MAPPING[cfg["model_type"]](text_config=small.to_dict(), **towers, **outer)
    torch.manual_seed(0)
    with torch.no_grad():
        model = AutoModelForMultimodalLM.from_config(conf, dtype=getattr(torch, arch.dtype)).eval()
        vocab = conf.text_config.vocab_size
        out = model(input_ids=torch.randint(0, vocab, (BATCH, PREFILL)), use_cache=True)
        cache = out.past_key_values
        for _ in range(DECODE):
            cache = model(input_ids=torch.randint(0, vocab, (BATCH, 1)), past_key_values=cache,
                          use_cache=True).past_key_values
    real = describe_cache(cache)
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    per_layer = dict.fromkeys(range(arch.num_hidden_layers), 0)
    for g in d.groups:
        for i in g.layers:
            per_layer[i] += g.bytes // g.n_layers
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == per_layer
    assert real["total_bytes"] == d.total_bytes
    return d.total_bytes


@pytest.mark.parametrize("case", SPEECH_WRAPPED)
def test_speech_wrapper_model_caches_its_text_part_as_kvmath_reads_it(case):
    """The whole Qwen2-Audio / Granite Speech / Nemotron-H Omni / Qwen2.5-Omni thinker / MOSS wrapper, as transformers
    5.23 builds it from the class-defaults config: only its text model caches, exactly as kvmath derives it."""
    _check_speech_wrapper_cache(_test_config(case), OVERRIDES.get(case))


def test_qwen3_omni_thinker_caches_its_published_text_layout():
    """Qwen3-Omni-30B-A3B's thinker text fields (48 layers, 32 heads, 4 KV heads x head_dim 128 written beside a
    2048 hidden size, no window; the Hub's config.json thinker_config.text_config) under the class-defaults thinker,
    cut to 8 layers: the whole thinker caches 8 x 2 (K, V) x 2 seqs x 43 tokens x 4 x 128 x 2 B = 1,409,024 B, by
    hand, and so does kvmath. Its class defaults alone (hidden 2048 / 28 heads, no head_dim) give an odd width 73
    that transformers' RoPE check refuses: kvmath refuses it too (REFUSED)."""
    cfg = _config(DEFAULTS + "qwen3_omni_moe_thinker")
    cfg["text_config"].update(num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
                              hidden_size=2048, sliding_window=None)
    arch = kvmath.load_architecture(cfg)
    assert {(a.num_kv_heads, a.head_dim, a.sliding_window) for a in arch.layers} == {(4, 128, None)}
    assert arch.num_hidden_layers == 48 and arch.dtype == "bfloat16"
    cut = copy.deepcopy(cfg)
    cut["text_config"].update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64)
    _cut(cut["text_config"])
    assert _check_speech_wrapper_cache(cut) == 8 * 2 * 2 * 43 * 4 * 128 * 2 == 1_409_024


def test_qwen2_audio_sparse_text_config_reads_qwen2_class_defaults():
    """Qwen2-Audio-7B(-Instruct)'s published text_config leaves hidden size, layers, heads and KV heads to Qwen2Config
    (it writes intermediate_size 11008, max_position_embeddings 8192, sliding_window 32768, vocab_size 156032 and no
    use_sliding_window). transformers 5.23's Qwen2AudioConfig builds 32 full layers x 32 KV heads x 128: kvmath reads
    the same, and the config object transformers builds from the same dict is the independent side."""
    from transformers import CONFIG_MAPPING

    text = {"model_type": "qwen2", "intermediate_size": 11008, "max_position_embeddings": 8192, "rope_theta": 10000,
            "rms_norm_eps": 1e-05, "sliding_window": 32768, "torch_dtype": "bfloat16", "use_mrope": False,
            "vocab_size": 156032, "bos_token_id": 151643, "eos_token_id": 151645}
    built = CONFIG_MAPPING["qwen2_audio"](text_config=dict(text)).text_config
    arch = kvmath.load_architecture({"model_type": "qwen2_audio", "text_config": dict(text)})
    want = {(built.num_key_value_heads, built.hidden_size // built.num_attention_heads, built.sliding_window)}
    assert {(a.num_kv_heads, a.head_dim, a.sliding_window) for a in arch.layers} == want == {(32, 128, None)}
    assert arch.num_hidden_layers == built.num_hidden_layers == 32
    assert set(built.layer_types) == {"full_attention"}


@pytest.mark.parametrize("case,engine,phrase", [
    (DEFAULTS + "qwen2_5_omni_thinker", "vllm", "not Qwen2_5OmniThinkerForConditionalGeneration"),
    (DEFAULTS + "moss_transcribe_diarize", "vllm", "registers no MossTranscribeDiarizeForConditionalGeneration"),
    (DEFAULTS + "qwen2_audio", "llama.cpp", "no llama.cpp converter for this speech / omni wrapper"),
])
def test_engines_refuse_speech_wrappers_they_do_not_serve(case, engine, phrase):
    from kvmath.engines.base import require_kinds

    arch = kvmath.load_architecture(_config(case))
    with pytest.raises(KvMathError, match=phrase) as e:
        require_kinds(engine, arch, ("attention", "mamba2", "none"))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text,phrase", [
    ({"use_sliding_window": True, "sliding_window": 4096}, "sets a sliding window"),
    ({"layer_types": ["sliding_attention"] * 28}, "layer_types"),
    ({"head_dim": None}, "sets head_dim null"),
    ({"num_attention_heads": None}, "sets num_attention_heads null"),
])
def test_qwen_omni_text_configs_that_would_be_guessed_are_refused(text, phrase):
    cfg = _config(DEFAULTS + "qwen2_5_omni_thinker")
    cfg["text_config"].update(text)
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.load_architecture(cfg)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("case", [DEFAULTS + "muse_spark_text", DEFAULTS + "muse_glimmer_text"])
def test_muse_text_without_layer_types_counts_full_layers_back_from_the_last(case):
    """MuseSparkTextConfig / MuseGlimmerTextConfig.__post_init__ without layer_types: full iff (n - 1 - i) % 4 == 0,
    so with 8 layers layers 3 and 7 are full (not 0 and 4), against transformers' real cache at window 16."""
    cfg = _config(case)
    cfg.pop("layer_types"), cfg.pop("layer_rope_theta", None)
    arch, _ = _real_equals_kvmath(cfg, OVERRIDES.get(case))
    assert [layer.layer_type for layer in arch.layers] == [_S, _S, _S, _F] * 2
    assert {(a.num_kv_heads, a.head_dim) for a in arch.layers} == {(cfg["num_key_value_heads"], cfg["head_dim"])}


@pytest.mark.parametrize("changes,types", [
    ({"local_attention": 2 * WINDOW}, [_F, _S, _S] * 2 + [_F, _S]),  # the class's layer_types, cut to 8
    ({"local_attention": 2 * WINDOW, "layer_types": None, "global_attn_every_n_layers": 2}, [_F, _S] * 4),
])
def test_modernbert_decoder_window_is_half_local_attention_in_transformers_cache(changes, types):
    """ModernBertDecoderConfig: sliding layers keep local_attention // 2 = 16 tokens (a written sliding_window is
    overwritten), full iff i % global_attn_every_n_layers == 0; every head cached, hidden / heads = 64 wide; against
    transformers 5.23's real cache with 43 tokens crossing the window."""
    cfg = _config(DEFAULTS + "modernbert-decoder")
    cfg.update({k: v for k, v in changes.items() if v is not None})
    for key in [k for k, v in changes.items() if v is None]:
        cfg.pop(key)
    arch, _ = _real_equals_kvmath(cfg, OVERRIDES[DEFAULTS + "modernbert-decoder"])
    assert [layer.layer_type for layer in arch.layers] == types
    assert {(a.num_kv_heads, a.head_dim, a.sliding_window) for a in arch.layers_of(_S)} == {(12, 64, WINDOW)}


@pytest.mark.parametrize("case,key", [(DEFAULTS + "qwen2_audio", "audio_config"),
                                      ("ibm-granite__granite-speech-3.3-2b", "encoder_config"),
                                      (DEFAULTS + "nemotron_h_omni", "sound_config")])
def test_vllm_refuses_to_size_a_speech_wrapper_with_its_audio_tower_profiled(case, key):
    """vLLM 0.24 builds and profiles the audio tower (audio_config; Granite Speech's encoder_config; Nemotron-H Omni's
    legacy sound_config) unless its limit is 0: kvmath has no rule for that profile, so it refuses in one line
    rather than leave it out, and prices the text model with the audio limit at 0."""
    from kvmath.engines.vllm.budget import mm_limits

    cfg = _config(case)
    if key == "sound_config":
        cfg["sound_config"] = cfg.pop("audio_config") or {"model_type": "parakeet_encoder"}
    arch = kvmath.load_architecture(cfg)
    arch.extras["hf_config"] = cfg
    with pytest.raises(KvMathError, match=f"has an audio tower \\({key}\\)") as e:
        mm_limits(arch, None)
    assert "\n" not in str(e.value)
    assert mm_limits(arch, {"audio": 0, "image": 0, "video": 0})[1][-1] == "audio"


# --- batch A1 (issue 20, session 34): multimodal wrappers whose text part kvmath reads --------------------------

A1_WRAPPED = [DEFAULTS + "aria", DEFAULTS + "hyperclovax_vision_v2", DEFAULTS + "glm_ocr", DEFAULTS + "fuyu",
              DEFAULTS + "blip-2", DEFAULTS + "granite4_vision", DEFAULTS + "granite_docling",
              DEFAULTS + "deepseek_vl", DEFAULTS + "deepseek_vl_hybrid", DEFAULTS + "got_ocr2", DEFAULTS + "idefics2"]
# not built whole here: FastVLM's timm tower (timm is not installed), Emu3's VQ-VAE / vocabulary map, DeepSeek-OCR 2's
# SAM + Qwen2 encoder; their text models are checked in test_cache_equals_transformers_layer_by_layer


def _a1_wrapper_model(cfg: dict, overrides: dict | None):
    """The whole wrapper transformers 5.23 builds from ``cfg`` (its own config class building the text part from the
    shrunk text dict; every tower cut to one layer): FuyuForCausalLM (no tower config) or the image-text-to-text
    class."""
    import torch
    from transformers import CONFIG_MAPPING, AutoModelForCausalLM, AutoModelForImageTextToText

    from realcache import build_small_text_config

    arch = kvmath.load_architecture(cfg)
    small, _, _, _ = build_small_text_config(cfg, dtype=arch.dtype, overrides=overrides)
    towers = {}
    for key in ("vision_config", "qformer_config"):
        if key in cfg:
            towers[key] = dict(cfg[key])
            towers[key].update({k: 1 for k in ("num_hidden_layers", "depth") if k in towers[key]})
    if "out_hidden_size" in towers.get("vision_config", {}):  # Granite-Docling: the connector lands on the text width
        towers["vision_config"]["out_hidden_size"] = small.hidden_size
    outer = {k: v for k, v in cfg.items() if k not in ("model_type", "text_config", *towers)}
    if cfg["model_type"] == "granite4_vision" and outer.get("deepstack_layer_map") is None:
        outer.update(deepstack_layer_map=[], downsample_rate="1/4")  # class defaults None cannot build the model
    conf = CONFIG_MAPPING[cfg["model_type"]](text_config=small.to_dict(), **towers, **outer)
    auto = AutoModelForCausalLM if cfg["model_type"] == "fuyu" else AutoModelForImageTextToText
    torch.manual_seed(0)
    return arch, conf, auto.from_config(conf, dtype=getattr(torch, arch.dtype)).eval()


@pytest.mark.parametrize("case", A1_WRAPPED)
def test_batch_a1_wrapper_model_caches_its_text_part(case):
    """Aria, HyperCLOVA X SEED Vision v2, GLM-OCR, Fuyu and BLIP-2 built whole by transformers 5.23 and run on text
    tokens (BLIP-2 through its language model, which is ``AutoModelForCausalLM`` of the text config the wrapper
    built: its forward wants pixel_values): the cache equals kvmath's derivation layer by layer, so the wrapper
    neither rewrites the cache-shaping text fields nor caches anything beside the text model."""
    import torch

    from realcache import describe_cache

    arch, conf, model = _a1_wrapper_model(_test_config(case), OVERRIDES.get(case))
    from transformers import DynamicCache

    run = model.language_model if case.endswith("blip-2") else model
    vocab = conf.text_config.vocab_size
    cache = DynamicCache(config=conf.text_config)  # as generate() makes it (Granite 4 Vision returns the one given)
    with torch.no_grad():
        for n in (PREFILL,) + (1,) * DECODE:
            out = run(input_ids=torch.randint(0, vocab, (BATCH, n)), past_key_values=cache, use_cache=True)
            assert out.past_key_values is cache
    real = describe_cache(cache)
    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    assert {layer["index"]: layer["bytes"] for layer in real["layers"]} == \
        {i: g.bytes // g.n_layers for g in d.groups for i in g.layers}
    assert real["total_bytes"] == d.total_bytes


A1_ARCHS = {"aria": "AriaForConditionalGeneration", "hyperclovax_vision_v2": "HCXVisionV2ForCausalLM",
            "glm_ocr": "GlmOcrForConditionalGeneration", "blip-2": "Blip2ForConditionalGeneration",
            "fuyu": "FuyuForCausalLM", "chameleon": "ChameleonForConditionalGeneration",
            "granite4_vision": "Granite4VisionForConditionalGeneration",
            "granite_docling": "GraniteDoclingForConditionalGeneration"}
A1_ARCHS.update({"emu3": "Emu3ForConditionalGeneration", "deepseek_ocr2": "DeepseekOcr2ForConditionalGeneration",
                 "deepseek_vl": "DeepseekVLForConditionalGeneration",
                 "deepseek_vl_hybrid": "DeepseekVLHybridForConditionalGeneration",
                 "got_ocr2": "GotOcr2ForConditionalGeneration", "fast_vlm": "FastVlmForConditionalGeneration",
                 "idefics2": "Idefics2ForConditionalGeneration"})
A1_NOT_VLLM = {"granite_docling": "registers no GraniteDocling class", "emu3": "Transformers backend",
               "deepseek_ocr2": "remote-code deepseek_vl_v2 config", **{
                   w: f"registers no {A1_ARCHS[w]}" for w in ("deepseek_vl", "deepseek_vl_hybrid", "got_ocr2",
                                                               "fast_vlm", "idefics2")}}


def test_batch_a1_flat_fuyu_config_reads_as_fuyu_config_lifts_it():
    """adept/fuyu-8b's config.json is flat; FuyuConfig.__post_init__ (transformers 5.23) lifts only its spec's
    init_kwargs keys (+ rope_scaling / rope_theta) into a persimmon text config. kvmath's layers against the
    FuyuConfig object built from the same dicts: a num_key_value_heads at the top is not lifted (every head is
    cached), absent sizes take the spec's defaults (36 layers x 64 heads of 4096 / 64)."""
    from transformers import FuyuConfig

    flat = {"model_type": "fuyu", "hidden_size": 2048, "num_attention_heads": 32, "num_hidden_layers": 6,
            "num_key_value_heads": 8, "torch_dtype": "float16", "patch_size": 30}
    for cfg in (flat, {"model_type": "fuyu"}, {"model_type": "fuyu", "num_hidden_layers": 3}):
        built = FuyuConfig(**{k: v for k, v in cfg.items() if k != "model_type"}).text_config
        arch = kvmath.load_architecture(dict(cfg))
        width = built.hidden_size // built.num_attention_heads
        assert [(a.layer_type, a.num_kv_heads, a.head_dim) for a in arch.layers] == \
            [("full_attention", built.num_attention_heads, width)] * built.num_hidden_layers
    assert kvmath.load_architecture(dict(flat)).dtype == "float16"


def test_batch_a1_text_classes_the_wrappers_force_and_blip2_t5():
    """AriaConfig and GlmOcrConfig build their own text class whatever text_config.model_type says (rhymes-ai/Aria's
    remote-code text_config names aria_moe_lm); BLIP-2 builds AutoConfig of the written type, so a Flan-T5 text part
    (t5, encoder-decoder) is refused in one line, and a sparse opt one takes OPTConfig's defaults as Blip2Config
    builds it."""
    from transformers import CONFIG_MAPPING

    text = {"model_type": "aria_moe_lm", "hidden_size": 2560, "num_attention_heads": 20, "num_key_value_heads": 20,
            "num_hidden_layers": 4}
    for outer, t in (("aria", text), ("glm_ocr", dict(text, model_type="glm4"))):
        built = CONFIG_MAPPING[outer](text_config=dict(t)).text_config
        arch = kvmath.load_architecture({"model_type": outer, "text_config": dict(t)})
        head = getattr(built, "head_dim", None) or built.hidden_size // built.num_attention_heads
        assert arch.model_type == type(built).model_type  # the class built (its instance keeps the written name)
        assert [(a.num_kv_heads, a.head_dim) for a in arch.layers] == [(built.num_key_value_heads, head)] * 4
    with pytest.raises(KvMathError, match="model_type 't5' is not supported") as e:
        kvmath.load_architecture({"model_type": "blip-2", "text_config": {"model_type": "t5"}})
    assert "\n" not in str(e.value)
    sparse = {"model_type": "opt", "num_hidden_layers": 4}
    built = CONFIG_MAPPING["blip-2"](text_config=dict(sparse)).text_config
    arch = kvmath.load_architecture({"model_type": "blip-2", "text_config": dict(sparse)})
    assert [(a.num_kv_heads, a.head_dim) for a in arch.layers] == \
        [(built.num_attention_heads, built.hidden_size // built.num_attention_heads)] * 4


@pytest.mark.parametrize("outer", sorted(A1_ARCHS))
def test_batch_a1_engines_price_the_text_part_or_refuse_in_one_line(outer):
    """vLLM 0.24 builds each of these wrappers' language model from the text config with the attention kvmath reads
    (aria.py AriaTextModel = LlamaModel, hyperclovax_vision_v2.py / blip2.py init_vllm_registered_model, glm4_1v.py
    Glm4ForCausalLM for glm_ocr, fuyu.py PersimmonForCausalLM, chameleon.py): its KV equals transformers' at 2,048
    tokens. GLM-OCR's class defaults by hand: 16 layers x 8 KV heads x 1024 / 16 x (K + V) x 2 B = 32,768 B a token,
    67,108,864 B at 2,048. SGLang 0.5.23 (no class among kvmath's served architectures) and llama.cpp (no converter
    read) refuse, in one line."""
    cfg = dict(_config(DEFAULTS + outer), architectures=[A1_ARCHS[outer]])
    arch = kvmath.load_architecture(cfg)
    t = kvmath.derive(arch, engine="transformers", max_ctx=2048, max_num_seqs=1).total_bytes
    if outer in A1_NOT_VLLM:
        with pytest.raises(KvMathError, match=A1_NOT_VLLM[outer]) as e:
            kvmath.derive(arch, engine="vllm", max_ctx=2048)
        assert "\n" not in str(e.value)
    else:
        assert kvmath.derive(arch, engine="vllm", max_ctx=2048).total_bytes == t
    if outer == "glm_ocr":
        assert t == 16 * 8 * 64 * 2 * 2 * 2048 == 67_108_864
    for engine in ("sglang", "llama.cpp"):
        with pytest.raises(KvMathError) as e:
            kvmath.derive(arch, engine=engine, max_ctx=2048)
        assert "\n" not in str(e.value) and (outer in str(e.value) or A1_ARCHS[outer] in str(e.value))


def test_batch_a1_chameleon_and_glm_ocr_fields_transformers_would_not_build_are_refused():
    """ChameleonAttention is hidden_size / heads wide whatever head_dim says and keeps a null num_key_value_heads
    None (it cannot be built); GlmOcrTextConfig defines no window (transformers' cache would window every layer);
    the config-only weights estimate writes none of these layouts and refuses them."""
    from kvmath.model.checkpoint import estimate_checkpoint

    cham = _config(DEFAULTS + "chameleon")
    for bad, phrase in ((dict(cham, head_dim=64), "hidden_size / num_attention_heads = 128"),
                        (dict(cham, num_key_value_heads=None), "sets num_key_value_heads null"),
                        ({"model_type": "glm_ocr", "text_config": {"sliding_window": 512}}, "defines no window")):
        with pytest.raises(KvMathError, match=phrase) as e:
            kvmath.load_architecture(bad)
        assert "\n" not in str(e.value)
    for outer in A1_ARCHS:
        with pytest.raises(KvMathError, match="estimates checkpoint tensors from config.json only for|does not "
                                              "estimate the vision tower and projector of") as e:
            estimate_checkpoint(_config(DEFAULTS + outer))
        assert "\n" not in str(e.value)


def test_batch_a1_hunyuan_vl_flat_config_folds_its_text_fields():
    """HunyuanOCR's flat config: HunYuanVLConfig.__post_init__ (transformers 5.23) folds the top-level keys that are
    HunYuanVLTextConfig fields or aliases (attention_head_dim -> head_dim) into the text config; a top-level
    sliding_window is not one and stays outside. kvmath's layers against that config object, and the cache of the
    HunYuanVLTextModel built from it (2 x 43 tokens) against kvmath's derivation byte for byte; use_cla (vLLM shares
    K / V across layers, transformers does not) is refused for vLLM in one line; a missing head_dim is refused."""
    import torch
    from transformers import CONFIG_MAPPING, AutoModel, DynamicCache

    flat = {"model_type": "hunyuan_vl", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
            "attention_head_dim": 128, "num_hidden_layers": 3, "intermediate_size": 64, "vocab_size": 512,
            "sliding_window": 16, "torch_dtype": "bfloat16", "architectures": ["HunYuanVLForConditionalGeneration"],
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [16, 16, 16, 16]}}
    built = CONFIG_MAPPING["hunyuan_vl"](**{k: v for k, v in flat.items() if k != "model_type"}).text_config
    arch = kvmath.load_architecture(dict(flat))
    assert [(a.layer_type, a.num_kv_heads, a.head_dim, a.sliding_window) for a in arch.layers] == \
        [("full_attention", built.num_key_value_heads, built.head_dim, None)] * built.num_hidden_layers == \
        [("full_attention", 2, 128, None)] * 3
    torch.manual_seed(0)
    model = AutoModel.from_config(built, dtype=torch.bfloat16).eval()
    cache = DynamicCache(config=built)
    with torch.no_grad():
        for n in (PREFILL,) + (1,) * DECODE:
            model(input_ids=torch.randint(0, 512, (BATCH, n)), past_key_values=cache, use_cache=True)
    from realcache import describe_cache

    d = kvmath.derive(arch, engine="transformers", max_ctx=PREFILL + DECODE, max_num_seqs=BATCH)
    assert describe_cache(cache)["total_bytes"] == d.total_bytes == 3 * 2 * 2 * 128 * 2 * 43 * 2  # layers KV K+V B
    assert kvmath.derive(arch, engine="vllm", max_ctx=2048).total_bytes == \
        kvmath.derive(arch, engine="transformers", max_ctx=2048, max_num_seqs=1).total_bytes
    assert kvmath.derive(kvmath.load_architecture(dict(flat, use_cla=True)), engine="vllm", max_ctx=2048)  # not folded
    nested = {"model_type": "hunyuan_vl", "text_config": dict(built.to_dict(), use_cla=True, cla_share_factor=2)}
    with pytest.raises(KvMathError, match="use_cla") as e:
        kvmath.derive(kvmath.load_architecture(nested), engine="vllm", max_ctx=2048)
    assert "\n" not in str(e.value)
    with pytest.raises(KvMathError, match="hunyuan_vl_text config has no head_dim"):
        kvmath.load_architecture({k: v for k, v in flat.items() if k != "attention_head_dim"})


def test_batch_a1_types_not_read_are_refused_naming_why():
    """Florence-2 (a BART encoder-decoder text part), IDEFICS (gated cross-attention blocks) and Evolla (protein
    aligner cross-attention) are refused in one line naming what kvmath has not read, not read as their text part."""
    for cfg, phrase in (({"model_type": "florence2", "text_config": {"model_type": "bart"}}, "encoder-decoder"),
                        ({"model_type": "idefics", "num_hidden_layers": 4}, "gated cross-attention"),
                        ({"model_type": "evolla", "num_hidden_layers": 4}, "aligner")):
        with pytest.raises(KvMathError, match=phrase) as e:
            kvmath.load_architecture(cfg)
        assert "\n" not in str(e.value)


# --- issue 20, batch A2: wrappers around a text type kvmath reads -----------------------------------------------

WRAPPED_A2 = [DEFAULTS + t for t in ("lighton_ocr", "qianfan_ocr", "video_llava", "vipllava", "janus", "ovis2",
                                     "video_llama_3", "shieldgemma2", "minicpm_ocr", "lfm3_vl", "paddleocr_vl", "molmo2",
                                     "kosmos-2.5", "pp_chart2table")]
# Kosmos-2 (pixel_values or image_embeds) and InstructBLIP / -Video (pixel_values, qformer_input_ids) cannot run on
# text tokens alone: their wrappers are checked on the config object (test_a2_forced_and_image_bound_wrappers_...)
OVERRIDES.update({DEFAULTS + "instructblip": {"hidden_size": 128},  # OPT: hidden / heads wide, _cut's 2 heads x 64
                  DEFAULTS + "instructblipvideo": {"hidden_size": 128}})
# perception_lm's tower is a timm_wrapper (TimmWrapperModel needs timm, not in the test venv): its wrapper is checked
# on the config object PerceptionLMConfig builds (test_a2_sparse_text_configs_read_as_the_wrapper_builds_them)


@pytest.mark.parametrize("case", WRAPPED_A2)
def test_a2_wrapper_model_caches_its_text_part_as_kvmath_reads_it(case):
    """As test_wrapper_model_caches_its_text_part_as_kvmath_reads_it: the whole wrapper transformers 5.23 builds from
    the config (AutoModelForImageTextToText; ShieldGemma 2 maps to Gemma3ForConditionalGeneration), tower cut to one
    layer, caches exactly kvmath's derivation layer by layer; its text model alone is checked in
    test_cache_equals_transformers_layer_by_layer."""
    cfg = _test_config(case)
    cfg["vision_config"].pop("layer_types", None)  # LFM3-VL's tower: Lfm3VlVisionConfig derives them for 1 layer
    if "adapter_config" in cfg:  # Molmo 2's adapter must read a layer of the 1-layer tower (validate_architecture)
        cfg["adapter_config"]["vision_feature_layer"] = [0]
    _check_wrapper_cache(cfg, OVERRIDES.get(case))


@pytest.mark.parametrize("outer,text", [
    ("perception_lm", {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
                       "num_key_value_heads": 8, "head_dim": 64}),
    ("perception_lm", {"model_type": "llama", "vocab_size": 128256}),  # LlamaConfig's 32 x 32 x 128 filled in
    ("janus", {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16}),
    ("vipllava", {"model_type": "llama", "vocab_size": 32064}), ("video_llava", {"model_type": "llama"}),
    ("ovis2", {"model_type": "qwen2", "hidden_size": 896, "num_attention_heads": 14, "num_key_value_heads": 2,
               "num_hidden_layers": 24}),
    ("video_llama_3", {"model_type": "qwen2", "hidden_size": 1536, "num_attention_heads": 12,
                       "num_key_value_heads": 2, "num_hidden_layers": 28}),
    # Qwen3Config's head_dim default is 128 whatever hidden / heads (1024 / 16 = 64): the class default is read
    ("lighton_ocr", {"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8,
                     "num_hidden_layers": 28}),
    ("qianfan_ocr", {"model_type": "qwen3", "vocab_size": 153678}),
])
def test_a2_sparse_text_configs_read_as_the_wrapper_builds_them(outer, text):
    """The text config transformers 5.23's own wrapper config class builds from a sparse text_config (layer types,
    KV heads, head width, window) against kvmath's layers: no model is run, the config object is the independent side
    (the text model's cache on the class-defaults files is checked in test_cache_equals_transformers_layer_by_layer)."""
    from transformers import CONFIG_MAPPING

    built = CONFIG_MAPPING[outer](text_config=dict(text)).text_config
    n = built.num_hidden_layers
    head_dim = getattr(built, "head_dim", None) or built.hidden_size // built.num_attention_heads
    assert getattr(built, "sliding_window", None) is None or not getattr(built, "use_sliding_window", True)
    want = [("full_attention", built.num_key_value_heads, head_dim, None)] * n
    arch = kvmath.load_architecture({"model_type": outer, "text_config": dict(text)})
    assert [(a.layer_type, a.num_kv_heads, a.head_dim, a.sliding_window) for a in arch.layers] == want


@pytest.mark.parametrize("wrapper", ["video_llava", "vipllava", "perception_lm", "janus", "ovis2", "video_llama_3",
                                     "shieldgemma2", "minicpm_ocr", "lfm3_vl", "lighton_ocr", "qianfan_ocr",
                                     "molmo2", "paddleocr_vl", "kosmos-2", "kosmos-2.5", "instructblip",
                                     "instructblipvideo", "pp_chart2table"])
def test_a2_engines_price_or_refuse_the_wrapper_in_one_line(wrapper):
    """vLLM 0.24 registers LightOnOCRForConditionalGeneration (lightonocr.py) and QianfanOCRForConditionalGeneration
    (qianfan_ocr.py, InternVLChatModel), both building their language model from config.text_config
    (init_vllm_registered_model): priced as the text part, by hand for LightOnOCR's class defaults (28 layers x 8 KV
    heads x 128 x (K + V) x 2 B = 114,688 B a token in transformers). The other wrappers have no vLLM 0.24 class, and no
    llama.cpp converter was read for any: refused in one line, not priced as their text part alone. Molmo 2 (vLLM 0.24
    molmo2.py: full Attention of num_key_value_heads x head_dim) and PaddleOCR-VL (paddleocr_vl.py: Ernie4_5ForCausalLM)
    are priced on vLLM."""
    arch = kvmath.load_architecture(_config(DEFAULTS + wrapper))
    vllm_served = ("lighton_ocr", "qianfan_ocr", "molmo2", "paddleocr_vl")
    engines = ("llama.cpp",) if wrapper in vllm_served else ("vllm", "llama.cpp")
    for engine in engines:
        with pytest.raises(KvMathError, match=f"kvmath does not price {arch.model_type}") as e:
            kvmath.derive(arch, engine=engine, max_ctx=4096)
        assert "\n" not in str(e.value)
    if wrapper == "lighton_ocr":
        d = kvmath.derive(arch, engine="transformers", max_ctx=1000, max_num_seqs=1)
        assert d.total_bytes == 1000 * 28 * 8 * 128 * 2 * 2
    if len(engines) == 1:
        assert kvmath.derive(arch, engine="vllm", max_ctx=4096).total_bytes > 0


def test_paddleocr_vl_flat_hub_config_reads_as_the_wrapper_builds_it():
    """PaddleOCR-VL's Hub configs are flat (PaddleOCRVLConfig.__post_init__ builds the text config from the top-level
    keys when there is no text_config). Its published layout written flat (18 layers, 16 heads, 2 KV heads x 128, the
    fields a Rust port's test copies from the 1.5 config): kvmath reads what the wrapper builds, by hand 18 x 2 x 128 x
    (K + V) x 2 B = 18,432 B a token in bf16; a null num_key_value_heads / head_dim becomes the heads / hidden / heads
    as PaddleOCRTextConfig.__post_init__ sets them. vLLM 0.24 (paddleocr_vl.py: Ernie4_5ForCausalLM on the folded
    text config) is priced, llama.cpp refused in one line."""
    from transformers import CONFIG_MAPPING

    flat = {"architectures": ["PaddleOCRVLForConditionalGeneration"], "model_type": "paddleocr_vl",
            "hidden_size": 1024, "num_hidden_layers": 18, "num_attention_heads": 16, "num_key_value_heads": 2,
            "head_dim": 128, "intermediate_size": 3072, "vocab_size": 103424, "max_position_embeddings": 131072,
            "sliding_window": None, "torch_dtype": "bfloat16", "vision_config": {"model_type": "paddleocr_vl_vision"}}
    for changes in ({}, {"num_key_value_heads": None, "head_dim": None}):
        cfg = dict(flat, **changes)
        built = CONFIG_MAPPING["paddleocr_vl"](**{k: v for k, v in cfg.items() if k != "model_type"}).text_config
        arch = kvmath.load_architecture(cfg)
        assert arch.model_type == "paddleocr_vl_text" and arch.num_hidden_layers == built.num_hidden_layers == 18
        assert {(a.layer_type, a.num_kv_heads, a.head_dim) for a in arch.layers} == {
            ("full_attention", built.num_key_value_heads, built.head_dim)}
    arch = kvmath.load_architecture(flat)
    assert kvmath.derive(arch, engine="transformers", max_ctx=1000, max_num_seqs=1).total_bytes == 1000 * 18_432
    assert kvmath.derive(arch, engine="vllm", max_ctx=4096).total_bytes > 0
    with pytest.raises(KvMathError, match="kvmath does not price paddleocr_vl_text") as e:
        kvmath.derive(arch, engine="llama.cpp", max_ctx=4096)
    assert "\n" not in str(e.value)
    with pytest.raises(KvMathError, match="paddleocr_vl_text config sets sliding_window 16") as e:
        kvmath.load_architecture(dict(flat, sliding_window=16))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("outer,text", [
    ("kosmos-2", {"model_type": "kosmos_2_text_model", "embed_dim": 2048, "attention_heads": 32, "layers": 24}),
    # Kosmos2Config builds Kosmos2TextConfig whatever text_config's model_type says
    ("kosmos-2", {"model_type": "llama", "embed_dim": 1024, "attention_heads": 16, "layers": 4}),
    ("kosmos-2.5", {"embed_dim": 1536, "attention_heads": 16, "layers": 24}),
    ("instructblip", {"model_type": "llama", "vocab_size": 32001}),  # instructblip-vicuna-7b's sparse text part
    ("instructblip", {"model_type": "opt", "hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 32,
                      "ffn_dim": 10240}),
    ("instructblipvideo", {"model_type": "llama", "hidden_size": 5120, "num_attention_heads": 40,
                           "num_hidden_layers": 40}),
    ("pp_chart2table", {"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16,
                        "num_key_value_heads": 16, "num_hidden_layers": 24}),  # Qwen2Config's KV default is 32
])
def test_a2_forced_and_image_bound_wrappers_read_their_text_part_as_built(outer, text):
    """The text config transformers 5.23's wrapper config class builds (Kosmos2Config / Kosmos2_5Config name their
    text class; InstructBLIP and PP-Chart2Table take CONFIG_MAPPING[model_type] with the class's defaults): every
    layer full, num_key_value_heads (or every head) x head width. Kosmos2ForConditionalGeneration's text model is
    Kosmos2TextForCausalLM(config.text_config) and InstructBLIP's language model AutoModelForCausalLM.from_config(
    config.text_config) (modeling_kosmos2.py / modeling_instructblip.py); their caches are checked on the text models
    in test_cache_equals_transformers_layer_by_layer. Kosmos-2 with add_cross_attention is refused in one line."""
    from transformers import CONFIG_MAPPING

    built = CONFIG_MAPPING[outer](text_config=dict(text)).text_config
    heads = built.num_attention_heads
    kv = getattr(built, "num_key_value_heads", None) or heads
    head_dim = getattr(built, "head_dim", None) or built.hidden_size // heads
    arch = kvmath.load_architecture({"model_type": outer, "text_config": dict(text)})
    assert [(a.layer_type, a.num_kv_heads, a.head_dim, a.sliding_window) for a in arch.layers] == \
        [("full_attention", kv, head_dim, None)] * built.num_hidden_layers
    if outer == "kosmos-2":
        with pytest.raises(KvMathError, match="sets add_cross_attention") as e:
            kvmath.load_architecture({"model_type": outer, "text_config": dict(text, add_cross_attention=True)})
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("model_type,phrase", [
    ("pix2struct", "Pix2Struct is an encoder-decoder"), ("pp_formulanet", "PP-FormulaNet is an encoder-decoder"),
    ("udop", "UDOP is an encoder-decoder"), ("unlimited_ocr", "reference_sliding_attention")])
def test_a2_types_without_a_spec_are_refused_naming_why(model_type, phrase):
    """transformers 5.23's class-defaults configs of the batch's encoder-decoders (EncoderDecoderCache: self- and
    cross-attention entries) and of Unlimited-OCR (prefill kept + a window over decoded tokens): one line naming
    the layout, exit 2, not read from their text part. Unlimited-OCR's original checkpoint form (language_config,
    no text_config) is refused the same way."""
    from transformers import CONFIG_MAPPING

    for cfg in (CONFIG_MAPPING[model_type]().to_dict(),) + (
            ({"model_type": "unlimited_ocr", "language_config": {"hidden_size": 1280}},)
            if model_type == "unlimited_ocr" else ()):
        with pytest.raises(KvMathError, match=phrase) as e:
            kvmath.load_architecture(cfg)
        assert "\n" not in str(e.value)


def test_qwen3_without_head_dim_takes_the_class_default_128():
    """Qwen3Config's head_dim defaults to 128 whatever hidden_size / num_attention_heads (configuration_qwen3.py):
    Qwen3-32B (5,120 / 64 = 80) with its head_dim left out caches 128-wide heads in transformers' real cache; kvmath
    had read 80. A null head_dim is refused (Qwen3Attention cannot be built with None)."""
    cfg = json.loads((Path(__file__).resolve().parents[1] / "data" / "configs" / "Qwen__Qwen3-32B.json").read_text())
    cfg.pop("head_dim")
    arch, _ = _real_equals_kvmath(cfg)
    assert {a.head_dim for a in arch.layers} == {128}
    with pytest.raises(KvMathError, match="head_dim null"):
        kvmath.load_architecture(dict(cfg, head_dim=None))


# --- famC5 (issue 20, session 34): Whisper's encoder-decoder cache, cross-attention layers -------------------------

def test_whisper_cross_attention_by_hand_and_against_the_real_cache():
    """whisper-large-v3-turbo (4 decoder layers, 20 heads of 1280 / 20 = 64, float32 as its config states) after 43
    decoder tokens for 2 sequences, by hand: self-attention 4 x 2 (K, V) x 20 x 64 x 4 B x 43 x 2 = 3,522,560 B;
    cross-attention over the encoder's 1,500 frames 4 x 2 x 20 x 64 x 4 B x 1,500 x 2 = 122,880,000 B, whatever the
    decoder's length (the same at 400 tokens); transformers 5.23's real EncoderDecoderCache holds the sum,
    126,402,560 B (test_cache_equals_transformers_layer_by_layer checks it layer by layer)."""
    case = "openai__whisper-large-v3-turbo"
    arch, real, d = _run(case)
    assert real["cache_class"] == "EncoderDecoderCache" and real["encoder_frames"] == 1500
    by_kind = {g.kind: g.bytes for g in d.groups}
    assert by_kind == {"attention": 3_522_560, "cross_attention": 122_880_000}
    assert d.total_bytes == real["total_bytes"] == 126_402_560
    assert d.cross_bytes == 122_880_000 and d.fixed_bytes == 122_880_000 and d.growing_bytes == 3_522_560
    assert arch.max_position_embeddings == 448  # max_target_positions: the decoder's longest sequence
    long = kvmath.derive(arch, engine="transformers", max_ctx=400, max_num_seqs=2)
    assert {g.kind: g.bytes for g in long.groups}["cross_attention"] == 122_880_000
    assert all("does not grow" in g.description for g in d.groups if g.kind == "cross_attention")


@pytest.mark.parametrize("engine,phrase", [("vllm", "CrossAttentionSpec"), ("sglang", "SGLang"),
                                           ("llama.cpp", "whisper.cpp")])
def test_whisper_engines_refuse_in_one_line(engine, phrase):
    arch = kvmath.load_architecture(_config("openai__whisper-large-v3-turbo"))
    with pytest.raises(KvMathError, match=phrase) as e:
        kvmath.derive(arch, engine=engine, max_ctx=448)
    assert "\n" not in str(e.value)


def test_whisper_head_width_that_does_not_divide_and_weights_estimate_are_refused():
    from kvmath.model.checkpoint import estimate_checkpoint

    cfg = _config("openai__whisper-large-v3-turbo")
    with pytest.raises(KvMathError, match="d_model 1280 is not a multiple of decoder_attention_heads 3") as e:
        kvmath.load_architecture(dict(cfg, decoder_attention_heads=3))
    assert "\n" not in str(e.value)
    with pytest.raises(KvMathError) as e:
        estimate_checkpoint(cfg)
    assert "whisper" in str(e.value) and "\n" not in str(e.value)
