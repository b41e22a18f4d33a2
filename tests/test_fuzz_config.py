"""The config loader under fuzzing: malformed, truncated and contradictory configs.

Every example starts from a config that loads (one minimal config per family, the shipped model
facts, and every reference config in data/configs) and applies a few
random mutations: keys deleted, values replaced by wrong types (strings, bools, lists, objects for
integers), negative, zero, huge, NaN and infinite numbers, ``layer_types`` truncated, extended or
given unknown strings, ``text_config`` / ``linear_attn_config`` replaced by garbage, layer patterns
with unknown letters. The properties:

- loading raises ``KvMathError`` with a message, or returns an Architecture - never another
  exception;
- a loaded Architecture has exactly the layers the config declares, and every layer's widths are
  values the config holds (or the documented defaults);
- ``derive`` on every engine either raises ``KvMathError`` or gives non-negative integers whose
  groups cover every layer once, a positive total, and JSON-clean ``to_dict()``; the transformers
  total equals an independent per-layer sum written here from transformers' cache layouts.
"""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kvmath
from kvmath.model.specs import (
    FULL, SLIDING, AttentionLayer, CompressedAttentionLayer, GatedDeltaNetLayer, KDALayer, MLALayer, Mamba2Layer,
    CrossAttentionLayer, NoCacheLayer,
)
from kvmath.formats import DTYPE_BYTES

SHARED = Path(__file__).resolve().parents[1] / "data" / "configs"  # copies of the published configs (SOURCES.md)

# One small config per family, so the fuzzer covers every loader without shared/.
MINIMAL = {
    "llama": {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
              "hidden_size": 512, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"},
    "mistral": {"model_type": "mistral", "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 8,
                "hidden_size": 256, "sliding_window": 64, "max_position_embeddings": 1024},
    "qwen2": {"model_type": "qwen2", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
              "hidden_size": 256, "sliding_window": 32, "use_sliding_window": True, "max_window_layers": 2},
    "gemma2": {"model_type": "gemma2", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
               "head_dim": 64, "sliding_window": 32, "torch_dtype": "float32"},
    "gpt_oss": {"model_type": "gpt_oss", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
                "head_dim": 64, "sliding_window": 16,
                "layer_types": ["sliding_attention", "full_attention"] * 2},
    "gemma4": {"model_type": "gemma4", "text_config": {
        "model_type": "gemma4_text", "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 32, "global_head_dim": 64, "attention_k_eq_v": True, "num_global_key_value_heads": 2,
        "sliding_window": 16, "num_kv_shared_layers": 2, "dtype": "bfloat16"}},
    "qwen3_5": {"model_type": "qwen3_5", "text_config": {
        "model_type": "qwen3_5_text", "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 2,
        "head_dim": 64, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32,
        "linear_value_head_dim": 32, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
        "mamba_ssm_dtype": "float32", "dtype": "bfloat16"}},
    "deepseek_v3": {"model_type": "deepseek_v3", "num_hidden_layers": 3, "num_attention_heads": 8,
                    "kv_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32,
                    "num_nextn_predict_layers": 1, "torch_dtype": "bfloat16"},
    "kimi_linear": {"model_type": "kimi_linear", "num_hidden_layers": 4, "num_attention_heads": 8,
                    "kv_lora_rank": 64, "qk_rope_head_dim": 16, "dtype": "bfloat16",
                    "linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 2, 3], "num_heads": 8,
                                           "head_dim": 32, "short_conv_kernel_size": 4}},
    "nemotron_h": {"model_type": "nemotron_h", "hybrid_override_pattern": "M-M*E", "num_attention_heads": 8,
                   "num_key_value_heads": 2, "head_dim": 64, "mamba_num_heads": 8, "mamba_head_dim": 32,
                   "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4, "mamba_ssm_cache_dtype": "float32"},
    "deepseek_v4": {"model_type": "deepseek_v4", "num_hidden_layers": 4, "num_attention_heads": 8,
                    "num_key_value_heads": 1, "head_dim": 64, "sliding_window": 16, "compress_ratios": [0, 4, 128, 4],
                    "index_head_dim": 32, "index_n_heads": 4, "index_topk": 8, "torch_dtype": "bfloat16"},
    "mimo_v2_flash": {"model_type": "mimo_v2_flash", "num_hidden_layers": 7, "num_attention_heads": 8,
                      "num_key_value_heads": 2, "head_dim": 48, "v_head_dim": 32, "sliding_window": 16,
                      "sliding_window_size": 16, "swa_num_key_value_heads": 4, "hybrid_layer_pattern": [0, 1, 1, 1, 1, 0, 1]},
}

MINIMAL.update({  # batch D families: each class's own layer rule, with a window, and the MLA / two-sublayer layouts
    "exaone_moe": {"model_type": "exaone_moe", "num_hidden_layers": 8, "num_attention_heads": 8,
                   "num_key_value_heads": 2, "head_dim": 64, "sliding_window": 16, "sliding_window_pattern": 4},
    "cohere2_moe": {"model_type": "cohere2_moe", "num_hidden_layers": 6, "num_attention_heads": 8,
                    "num_key_value_heads": 2, "head_dim": 64, "sliding_window": 16, "sliding_window_pattern": 3},
    "dots1": {"model_type": "dots1", "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2,
              "hidden_size": 512, "sliding_window": 16, "max_window_layers": 3},
    "cwm": {"model_type": "cwm", "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2,
            "head_dim": 64, "sliding_window": 16},
    "vaultgemma": {"model_type": "vaultgemma", "num_hidden_layers": 5, "num_attention_heads": 8,
                   "num_key_value_heads": 2, "head_dim": 64, "sliding_window": 16},
    "minicpm3": {"model_type": "minicpm3", "num_hidden_layers": 3, "num_attention_heads": 8, "hidden_size": 512,
                 "kv_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32},
    "longcat_flash": {"model_type": "longcat_flash", "num_layers": 2, "num_attention_heads": 8, "kv_lora_rank": 64,
                      "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32},
})


MINIMAL.update({  # batch A1 (session 34): Chameleon and the wrappers read from their text part
    "chameleon": {"model_type": "chameleon", "num_hidden_layers": 4, "num_attention_heads": 8,
                  "num_key_value_heads": 2, "hidden_size": 512},
    "glm_ocr": {"model_type": "glm_ocr", "text_config": {"model_type": "glm_ocr_text", "num_hidden_layers": 4,
                                                         "num_attention_heads": 8, "num_key_value_heads": 2,
                                                         "hidden_size": 512, "head_dim": 32}},
    "blip-2": {"model_type": "blip-2", "text_config": {"model_type": "opt", "num_hidden_layers": 3,
                                                       "num_attention_heads": 4, "hidden_size": 256}},
    "aria": {"model_type": "aria", "text_config": {"model_type": "aria_text", "num_hidden_layers": 3,
                                                   "num_attention_heads": 8, "num_key_value_heads": 4,
                                                   "hidden_size": 512}},
    "granite4_vision": {"model_type": "granite4_vision", "text_config": {
        "model_type": "granite4_vision_text", "num_hidden_layers": 3, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512}},
    "granite_docling": {"model_type": "granite_docling", "text_config": {
        "model_type": "granite_docling_text", "num_hidden_layers": 3, "num_attention_heads": 8,
        "num_key_value_heads": 4, "hidden_size": 256, "head_dim": 64}},
    "hunyuan_vl": {"model_type": "hunyuan_vl", "text_config": {
        "model_type": "hunyuan_vl_text", "num_hidden_layers": 3, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "head_dim": 128}},
})

MINIMAL.update({  # issue 20 batch A2: wrappers whose text part kvmath reads (class defaults fill a sparse one)
    "a2_lighton_ocr": {"model_type": "lighton_ocr", "dtype": "bfloat16",
                       "text_config": {"model_type": "qwen3", "hidden_size": 512, "num_hidden_layers": 4,
                                       "num_attention_heads": 8, "num_key_value_heads": 2}},
    "a2_video_llama_3": {"model_type": "video_llama_3", "dtype": "bfloat16",
                         "text_config": {"model_type": "qwen2", "hidden_size": 512, "num_hidden_layers": 4,
                                         "num_attention_heads": 8, "num_key_value_heads": 2}},
    "a2_paddleocr_vl": {"model_type": "paddleocr_vl", "dtype": "bfloat16",  # PaddleOCRTextConfig: 2 KV heads x 128
                        "text_config": {"model_type": "paddleocr_vl_text", "hidden_size": 512, "num_hidden_layers": 4,
                                        "num_attention_heads": 8}},
})


def _seeds() -> dict[str, dict]:
    seeds = {f"min:{k}": v for k, v in MINIMAL.items()}
    for model_id, entry in kvmath.known_models().items():
        seeds[f"shipped:{model_id}"] = entry["config"]
    if SHARED.is_dir():
        for p in sorted(SHARED.glob("*.json")):
            seeds[f"shared:{p.stem}"] = json.loads(p.read_text())
    return seeds


SEEDS = _seeds()
for _name, _cfg in SEEDS.items():  # every seed must load, or the fuzzer starts from nothing
    kvmath.load_architecture(copy.deepcopy(_cfg))

# Keys the loaders read; mutations target these as well as whatever keys a config has.
READ_KEYS = (
    "model_type", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size",
    "attention_head_dim", "sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
    "layers_block_type", "full_attention_interval", "global_head_dim", "num_global_key_value_heads",
    "attention_k_eq_v", "num_kv_shared_layers", "linear_num_key_heads", "linear_num_value_heads",
    "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "mamba_ssm_dtype",
    "mtp_num_hidden_layers", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
    "num_nextn_predict_layers", "linear_attn_config", "full_attn_layers", "kda_layers", "num_heads",
    "short_conv_kernel_size", "hybrid_override_pattern", "mamba_num_heads", "mamba_head_dim", "ssm_state_size",
    "n_groups", "conv_kernel", "mamba_ssm_cache_dtype", "dtype", "torch_dtype", "max_position_embeddings",
    "text_config", "use_bidirectional_attention", "compress_ratios",
)
LAYER_WORDS = ["full_attention", "sliding_attention", "linear_attention", "mlp", "moe", "chunked_attention",
               "attention", "mamba", "", "FULL_ATTENTION"]
NUMBERS = st.one_of(
    st.sampled_from([0, -1, 1, 2, 3, 4, 7, 16, 64, 2**31, 2**32, 2**32 + 1, 2**64, 10**30, -(2**63)]),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 1.5, 32.0, -4.0, 0.0, 1e300, 2.0**70]),
    st.floats(allow_nan=True, allow_infinity=True),
)
SCALARS = st.one_of(
    st.none(), st.booleans(), NUMBERS,
    st.sampled_from(["32", "", "abc", "bfloat16", "torch.float16", "fp8", "M*-E", "MMX", "all"] + LAYER_WORDS),
    st.text(max_size=6),
)
JUNK = st.one_of(
    SCALARS,
    st.lists(st.one_of(st.sampled_from(LAYER_WORDS), st.integers(-2, 40), st.none(), st.booleans()), max_size=10),
    st.dictionaries(st.sampled_from(READ_KEYS + ("x", "")), SCALARS, max_size=4),
)


def _dicts(cfg: dict) -> list[dict]:
    """The config's mutable objects: the top level and nested text_config / linear_attn_config."""
    out = [cfg]
    for d in list(out):
        for key in ("text_config", "linear_attn_config"):
            if isinstance(d.get(key), dict):
                out.append(d[key])
                if isinstance(d[key].get("linear_attn_config"), dict):
                    out.append(d[key]["linear_attn_config"])
    return out


def mutate(cfg: dict, data) -> None:
    target = data.draw(st.sampled_from(_dicts(cfg)), label="object")
    read = sorted(k for k in target if k in READ_KEYS)
    key = data.draw(st.one_of(st.sampled_from(read or list(READ_KEYS)), st.sampled_from(sorted(target) + list(READ_KEYS))),
                    label="key")
    op = data.draw(st.sampled_from(["delete", "set", "set", "edge", "edge", "scale", "list"]), label="op")
    value = target.get(key)
    if op == "delete":
        target.pop(key, None)
    elif op == "set":
        target[key] = data.draw(JUNK, label="value")
    elif op == "edge":  # the boundary values a loader most easily gets wrong
        target[key] = data.draw(st.sampled_from([0, 1, 2, -1, 1.0, 0.0, True, False, "1", None, [], {}]), label="edge")
    elif op == "scale":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            factor = data.draw(st.sampled_from([-1, 0, 2, 3, 10**12, 0.5, 1.5, float("inf")]), label="factor")
            target[key] = value * factor
        elif isinstance(value, str) and value:
            # truncate, extend or corrupt a pattern string
            cut = data.draw(st.integers(0, len(value)), label="cut")
            target[key] = data.draw(st.sampled_from([value[:cut], value + value[-1], value[:cut] + "X"]))
        else:
            target[key] = data.draw(NUMBERS, label="value")
    else:  # list surgery: truncate, extend, replace one entry
        if not isinstance(value, list):
            value = ["full_attention", "sliding_attention", "linear_attention"] * 3
        value = list(value)
        how = data.draw(st.sampled_from(["truncate", "extend", "replace"]), label="how")
        if how == "truncate":
            value = value[: data.draw(st.integers(0, max(0, len(value) - 1)), label="len")]
        elif how == "extend":
            value = value + data.draw(st.lists(st.sampled_from(LAYER_WORDS + [3, None]), min_size=1, max_size=4))
        elif value:
            i = data.draw(st.integers(0, len(value) - 1), label="i")
            value[i] = data.draw(st.one_of(st.sampled_from(LAYER_WORDS), st.integers(-1, 99), st.none()))
        target[key] = value


# ---------------------------------------------------------------------------------------------------
# the properties

CTX, SEQS = 300, 2


def _num(x):
    """An integral config number as an int, else None (mirrors what a loader may accept)."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and math.isfinite(x) and x.is_integer():
        return int(x)
    return None


def _text(cfg: dict) -> dict:
    return cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg


def declared_layer_count(t: dict) -> int:
    if t.get("model_type") == "nemotron_h":
        for key in ("layers_block_type", "layer_types", "hybrid_override_pattern"):
            if t.get(key) is not None:
                return len(t[key])
    if t.get("model_type") == "longcat_flash":  # LongcatFlashConfig.num_hidden_layers is 2 x num_layers (two MLA each)
        n = _num(t.get("num_layers"))
        return None if n is None else 2 * n
    if t.get("model_type") == "whisper":  # WhisperConfig: the decoder's decoder_layers (class default 4) cache
        n = _num(t.get("decoder_layers"))
        if n is None:
            from transformers import WhisperConfig

            n = WhisperConfig.__dataclass_fields__["decoder_layers"].default
        return n
    return _num(t.get("num_hidden_layers"))


CLASS_DEFAULTED = ("solar_open", "hy_v3", "iquestcoder", "jais2", "diffllama", "doge", "dots1", "exaone_moe",
                   "cohere2_moe", "cwm", "vaultgemma", "laguna", "mellum", "minicpm3", "youtu", "longcat_flash",
                   "jetmoe", "axk1", "flint", "kolibri1", "axk2", "hy_v4", "hyperclovax",
                   "mistral4", "ernie4_5_vl_moe_text", "gemma4_unified_text", "cosmos3_edge_text")  # batch B1 (session 34)
"""Families kvmath reads with their config classes' defaults for absent keys (batch D)."""
SIZE_DEFAULTED = ("qwen2_5_omni_text", "qwen3_omni_moe_text", "muse_spark_text", "muse_glimmer_text",
                  "modernbert-decoder")
"""Families whose absent layer count, hidden size and heads also take the config class's defaults (s34 batch B2)."""
CLASS_DEFAULTED += ("molmo2_text", "paddleocr_vl_text")  # issue 20 batch A2
HEAD_DIM_DEFAULTED = ("qwen3",)
"""Families whose absent ``head_dim`` alone takes the config class's default (Qwen3Config: 128, not hidden / heads)."""


def with_class_defaults(t: dict) -> dict:
    """``t`` with the cache-shaping keys it leaves out set to transformers 5.23's own config-class field defaults
    (read from the installed class, ``__dataclass_fields__``), for the :data:`CLASS_DEFAULTED` families."""
    mt = t.get("model_type")
    if mt in HEAD_DIM_DEFAULTED and "head_dim" not in t:
        from transformers import CONFIG_MAPPING

        return {**t, "head_dim": CONFIG_MAPPING[mt].__dataclass_fields__["head_dim"].default}
    if mt not in CLASS_DEFAULTED + SIZE_DEFAULTED:
        return t
    from transformers import CONFIG_MAPPING

    fields = getattr(CONFIG_MAPPING[mt], "__dataclass_fields__", {})
    out = dict(t)
    sizes = ("num_hidden_layers", "hidden_size", "num_attention_heads", "local_attention") \
        if mt in SIZE_DEFAULTED else ()
    for k in ("num_key_value_heads", "head_dim", "sliding_window", "kv_lora_rank", "qk_rope_head_dim", "kv_channels",
              *sizes):
        default = fields[k].default if k in fields else None
        if k not in t and isinstance(default, int) and not isinstance(default, bool):
            out[k] = default
    return out


A1_DEFAULTED = ("chameleon", "glm_ocr", "blip-2", "aria", "fuyu", "hyperclovax_vision_v2", "granite4_vision",
                "granite_docling", "hunyuan_vl")
"""Batch A1 (session 34): configs whose absent sizes take the (text) config class's defaults."""
A1_TEXT = ("glm_ocr_text", "granite4_vision_text", "granite_docling_text", "hunyuan_vl_text", "emu3_text_model",
           "deepseek_ocr2_text")


def with_a1_defaults(cfg: dict, t: dict) -> dict:
    """``t`` with the sizes it leaves out taken from the config object transformers 5.23 builds from ``cfg`` (the
    wrapper's own text part for :data:`A1_DEFAULTED` wrappers), unchanged when transformers rejects it."""
    outer = cfg.get("model_type")
    if outer not in A1_DEFAULTED + A1_TEXT:
        return t
    from transformers import CONFIG_MAPPING

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if outer in ("chameleon",) + A1_TEXT:
                built = CONFIG_MAPPING[outer](**{k: v for k, v in cfg.items() if k != "model_type"})
            else:  # the text class the wrapper builds: its own (forced) one, else AutoConfig of the written type
                forced = outer in ("aria", "glm_ocr", "granite4_vision", "granite_docling", "hunyuan_vl")
                cls = type(CONFIG_MAPPING[outer]().text_config) if forced else CONFIG_MAPPING[t["model_type"]]
                built = cls(**{k: v for k, v in t.items() if k != "model_type"})
    except Exception:
        return t
    out = dict(t)
    for k in ("num_hidden_layers", "num_attention_heads", "hidden_size", "num_key_value_heads"):
        if k not in t and isinstance(getattr(built, k, None), int):
            out[k] = getattr(built, k)
    return out


A2_WRAPPERS = ("lighton_ocr", "qianfan_ocr", "video_llava", "vipllava", "perception_lm", "janus", "ovis2",
               "video_llama_3", "paddleocr_vl")
"""Issue 20 batch A2's wrappers: their text config class fills absent keys (Qwen3Config's head_dim 128)."""


def with_wrapper_built_defaults(cfg: dict, t: dict) -> dict:
    """``t`` with the cache-shaping keys it leaves out set to the field defaults of the text config class transformers
    5.23's wrapper config class builds for it (:data:`A2_WRAPPERS`; the class read from the installed wrapper's
    ``sub_configs_defaults``: a named class, or ``CONFIG_MAPPING`` of the text model_type for ``AutoConfig``)."""
    if cfg.get("model_type") not in A2_WRAPPERS or not isinstance(cfg.get("text_config"), dict):
        return t
    from transformers import CONFIG_MAPPING, PreTrainedConfig

    spec = CONFIG_MAPPING[cfg["model_type"]].sub_configs_defaults["text_config"]
    spec_class = getattr(spec, "config_class", spec)
    if isinstance(spec_class, type) and issubclass(spec_class, PreTrainedConfig):
        text_class = spec_class
    else:
        mt = t.get("model_type") if isinstance(t.get("model_type"), str) else spec.model_type
        if mt not in CONFIG_MAPPING:
            return t
        text_class = CONFIG_MAPPING[mt]
    fields = getattr(text_class, "__dataclass_fields__", {})
    out = dict(t)
    for k in ("num_hidden_layers", "num_attention_heads", "hidden_size", "num_key_value_heads", "head_dim"):
        default = fields[k].default if k in fields else None
        if k not in t and isinstance(default, int) and not isinstance(default, bool):
            out[k] = default
    return out


def check_layers_match_fields(arch, cfg: dict) -> None:
    t = with_wrapper_built_defaults(cfg, with_a1_defaults(cfg, with_class_defaults(_text(cfg))))
    assert arch.num_hidden_layers == declared_layer_count(t)
    assert [layer.index for layer in arch.layers] == list(range(arch.num_hidden_layers))
    assert any(layer.owns_cache for layer in arch.layers)
    val = lambda *keys: {_num(t.get(k)) for k in keys} - {None}  # noqa: E731
    heads = _num(t.get("num_attention_heads"))
    hidden = _num(t.get("hidden_size"))
    lac = t.get("linear_attn_config") if isinstance(t.get("linear_attn_config"), dict) else {}
    mimo = t.get("model_type") == "mimo_v2_flash"  # 2 x the KV heads on sliding layers, V rows of v_head_dim
    for layer in arch.layers:
        if isinstance(layer, AttentionLayer):
            kv_heads = val("num_key_value_heads", "num_global_key_value_heads") | {heads}
            assert layer.num_kv_heads in kv_heads | ({2 * k for k in kv_heads} if mimo else set())
            widths = val("head_dim", "global_head_dim", "attention_head_dim", "kv_channels") | {512}
            if hidden and heads:
                widths.add(hidden // heads)
            assert layer.head_dim in widths
            assert layer.v_head_dim == (_num(t.get("v_head_dim")) if mimo else layer.head_dim)
            if layer.layer_type == SLIDING:
                window = _num(t.get("sliding_window_size")) + 1 if mimo and t.get("sliding_window_size") is not None \
                    else _num(t.get("sliding_window"))
                if t.get("model_type") == "modernbert-decoder":  # ModernBertDecoderConfig overwrites sliding_window
                    window = _num(t.get("local_attention")) // 2
                assert layer.sliding_window == window >= 2
            if layer.kv_source is not None:
                assert layer.kv_source < layer.index and arch.layers[layer.kv_source].owns_cache
        elif isinstance(layer, MLALayer):
            assert (layer.kv_lora_rank, layer.qk_rope_head_dim) == (
                _num(t.get("kv_lora_rank")), _num(t.get("qk_rope_head_dim")))
        elif isinstance(layer, GatedDeltaNetLayer):
            assert (layer.num_k_heads, layer.num_v_heads, layer.k_head_dim, layer.v_head_dim) == tuple(
                _num(t.get(k)) for k in ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                                         "linear_value_head_dim"))
            assert layer.conv_kernel == (_num(t.get("linear_conv_kernel_dim")) or 4)
            assert layer.num_v_heads % layer.num_k_heads == 0
        elif isinstance(layer, Mamba2Layer):
            assert (layer.num_heads, layer.head_dim, layer.state_size, layer.n_groups) == tuple(
                _num(t.get(k)) for k in ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups"))
            assert layer.conv_kernel == (_num(t.get("conv_kernel")) or 4)
        elif isinstance(layer, KDALayer):
            assert (layer.num_heads, layer.head_dim, layer.conv_kernel) == tuple(
                _num(lac.get(k)) for k in ("num_heads", "head_dim", "short_conv_kernel_size"))
        elif isinstance(layer, CompressedAttentionLayer):  # DeepSeek-V4
            assert layer.head_dim == _num(t.get("head_dim")) and layer.sliding_window == _num(t.get("sliding_window"))
            assert layer.compress_rate == {SLIDING: 0, "compressed_sparse_attention": 4,
                                           "heavily_compressed_attention": 128}[layer.layer_type]
        elif isinstance(layer, CrossAttentionLayer):  # Whisper: WhisperConfig's decoder sizes, its class defaults
            from transformers import WhisperConfig

            w = {k: _num(t.get(k)) for k in ("decoder_attention_heads", "d_model", "max_source_positions")}
            w = {k: WhisperConfig.__dataclass_fields__[k].default if v is None else v for k, v in w.items()}
            heads, width = w["decoder_attention_heads"], w["d_model"] // w["decoder_attention_heads"]
            assert (layer.num_kv_heads, layer.head_dim, layer.v_head_dim) == (heads, width, width)
            assert layer.source_tokens == w["max_source_positions"]
            s = layer.self_attention
            assert s is not None and (s.num_kv_heads, s.head_dim, s.v_head_dim) == (heads, width, width)
        else:
            assert isinstance(layer, NoCacheLayer) and not layer.owns_cache


def transformers_oracle(arch) -> int:
    """Bytes of transformers' DynamicCache after CTX tokens for SEQS sequences, layer by layer.

    Written from cache_utils.py (DynamicLayer keeps every token, DynamicSlidingWindowLayer the last
    W - 1, plus its 8-byte int64 ``_sliding_window_tensor``), models/deepseek_v3 (latent keys + RoPE
    values), the linear-attention layers (conv state
    with K columns in the model dtype, float32 recurrent state) and DummyLayer (nothing).
    """
    dt = DTYPE_BYTES[arch.dtype]
    total = 0
    for layer in arch.layers:
        if isinstance(layer, AttentionLayer):
            if layer.kv_source is None:
                cells = min(CTX, layer.sliding_window - 1) if layer.layer_type == SLIDING else CTX
                total += SEQS * cells * layer.num_kv_heads * (layer.head_dim + layer.v_head_dim) * dt
                if layer.layer_type == SLIDING:  # DynamicSlidingWindowLayer's int64 window tensor, once
                    total += 8
        elif isinstance(layer, MLALayer):
            total += SEQS * CTX * (layer.kv_lora_rank + layer.qk_rope_head_dim) * dt
        elif isinstance(layer, GatedDeltaNetLayer):
            conv = 2 * layer.num_k_heads * layer.k_head_dim + layer.num_v_heads * layer.v_head_dim
            total += SEQS * (conv * layer.conv_kernel * dt + layer.num_v_heads * layer.k_head_dim * layer.v_head_dim * 4)
        elif isinstance(layer, Mamba2Layer):
            conv = layer.num_heads * layer.head_dim + 2 * layer.n_groups * layer.state_size
            total += SEQS * (conv * layer.conv_kernel * dt + layer.num_heads * layer.head_dim * layer.state_size * 4)
        elif isinstance(layer, KDALayer):
            conv = 3 * layer.num_heads * layer.head_dim
            total += SEQS * (conv * layer.conv_kernel * dt + layer.num_heads * layer.head_dim ** 2 * 4)
        elif isinstance(layer, CompressedAttentionLayer):
            # models/deepseek_v4: a sliding layer keeps K and V (W - 1 rows each); a CSA / HCA layer keeps the window
            # once (values is keys) and, per compressor (CSA: main + indexer), CTX // m entries, CTX % m pending rows of
            # kv and of gate (2 x width for CSA), and CSA's m-row kv and gate overlap once a window closed; +8 B
            win, m, csa = min(CTX, layer.sliding_window - 1), layer.compress_rate, layer.overlap
            elements = 2 * win * layer.head_dim if not m else win * layer.head_dim
            for w in ([layer.head_dim, layer.index_head_dim] if csa else [layer.head_dim] if m else []):
                elements += CTX // m * w + 2 * (CTX % m) * (2 if csa else 1) * w + (2 * m * w if CTX >= m and csa else 0)
            total += SEQS * elements * dt + 8
        elif isinstance(layer, CrossAttentionLayer):  # EncoderDecoderCache: self part over CTX, cross over the source
            s = layer.self_attention
            total += SEQS * CTX * s.num_kv_heads * (s.head_dim + s.v_head_dim) * dt
            total += SEQS * layer.source_tokens * layer.num_kv_heads * (layer.head_dim + layer.v_head_dim) * dt
    return total


def _is_count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def check_derivation(d, arch) -> None:
    covered = sorted(i for g in d.groups if g.kind != "cross_attention" for i in g.layers)  # its self part: once
    assert covered == list(range(arch.num_hidden_layers))
    for g in d.groups:
        for x in (g.bytes, g.bytes_per_token, g.cells, g.streams, g.state_bytes_per_seq, g.kv_heads_per_rank):
            assert _is_count(x), (g, x)
        # what the engine holds per sequence covers the state tensors (vLLM: padded state blocks,
        # llama.cpp: rollback snapshots); transformers holds exactly the tensors
        assert g.state_bytes_per_seq >= sum(t.nbytes for t in g.state)
        if d.engine == "transformers":
            assert g.state_bytes_per_seq == sum(t.nbytes for t in g.state)
        if g.owns_cache and g.kind in ("attention", "mla"):
            assert g.bytes_per_token > 0 and g.cells > 0 and g.streams > 0
        if g.kind == "none":
            assert g.bytes == 0
    for x in (d.bytes_per_token, d.growing_bytes, d.sliding_bytes, d.state_bytes, d.state_bytes_per_seq):
        assert _is_count(x)
    assert _is_count(d.total_bytes) and d.total_bytes > 0
    assert d.total_bytes == sum(g.bytes for g in d.groups)
    json.dumps(d.to_dict(), allow_nan=False)


def check(cfg) -> None:
    try:
        arch = kvmath.load_architecture(cfg)
    except kvmath.KvMathError as e:
        assert str(e).strip()
        return
    check_layers_match_fields(arch, cfg)
    for engine in ("vllm", "llama.cpp", "transformers"):
        try:
            d = kvmath.derive(arch, engine=engine, max_ctx=CTX, max_num_seqs=SEQS)
        except kvmath.KvMathError as e:
            assert str(e).strip() and engine != "transformers", e
            continue
        check_derivation(d, arch)
        if engine == "transformers":
            assert d.total_bytes == transformers_oracle(arch)
    if arch.max_position_embeddings:  # the default context is the config's own
        try:
            d = kvmath.derive(arch, engine="vllm")
        except kvmath.KvMathError:
            return
        assert d.deployment.max_ctx == arch.max_position_embeddings
        check_derivation(d, arch)


FUZZ = settings(max_examples=int(os.environ.get("KVMATH_FUZZ_EXAMPLES", "1000")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_every_seed_derives_consistently(seed):
    check(copy.deepcopy(SEEDS[seed]))


@FUZZ
@given(data=st.data())
def test_mutated_configs_fail_cleanly_or_derive_consistently(data):
    cfg = copy.deepcopy(SEEDS[data.draw(st.sampled_from(sorted(SEEDS)), label="seed")])
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        mutate(cfg, data)
    check(cfg)


@settings(max_examples=500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_type=st.sampled_from(kvmath.supported_model_types() + ["falcon_mamba", "jamba", "rwkv", ""]),
       fields=st.dictionaries(st.sampled_from(READ_KEYS), JUNK, max_size=12))
def test_configs_made_of_random_fields(model_type, fields):
    check({**fields, "model_type": model_type})
    check_against_transformers({**fields, "model_type": model_type})


@settings(max_examples=150, deadline=None, database=None)
@given(seed=st.sampled_from(sorted(SEEDS)), cut=st.floats(0, 1, exclude_max=True))
def test_truncated_json_files(seed, cut):
    text = json.dumps(SEEDS[seed], indent=2)
    text = text[: int(len(text) * cut)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(text)
        with pytest.raises(kvmath.KvMathError, match="not valid JSON|must be a JSON object"):
            kvmath.load_architecture(path)


@pytest.mark.parametrize("top", [[], "llama", 3, None, True, [{"model_type": "llama"}]])
def test_top_level_that_is_not_an_object(top, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(top))
    with pytest.raises(kvmath.KvMathError, match="must be a JSON object"):
        kvmath.load_architecture(path)


def test_nan_and_infinity_tokens_in_the_file(tmp_path):
    # Python's json accepts the bare NaN / Infinity tokens (Nemotron-H 56B's time_step_limit has one)
    base = dict(MINIMAL["llama"])
    for bad in ("NaN", "Infinity", "-Infinity", "1e400"):
        path = tmp_path / "config.json"
        path.write_text(json.dumps(base).replace('"num_key_value_heads": 2', f'"num_key_value_heads": {bad}'))
        with pytest.raises(kvmath.KvMathError, match="num_key_value_heads must be an integer"):
            kvmath.load_architecture(path)


# ---------------------------------------------------------------------------------------------------
# differential: kvmath's layer kinds against the cache layout transformers 5.23 builds from the same
# (mutated) config, through its own config classes and cache_utils.get_layer_types_and_kwargs

def transformers_cache_layout(cfg: dict):
    """[(layer type, window)] as transformers' DynamicCache would build it, or None if it rejects cfg."""
    import transformers
    from transformers import AutoConfig
    from transformers.cache_utils import get_layer_types_and_kwargs

    transformers.logging.set_verbosity_error()
    text = copy.deepcopy(_text(cfg))
    model_type = text.pop("model_type", None)
    for key in ("auto_map", "quantization_config", "architectures"):
        text.pop(key, None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = AutoConfig.for_model(model_type, **text)
            if model_type == "whisper":  # WhisperDecoder.forward sizes its DynamicCache by decoder_layers
                config.num_hidden_layers = config.decoder_layers  # (num_hidden_layers is encoder_layers' alias)
            types, kwargs = get_layer_types_and_kwargs(config)
    except Exception:  # transformers rejects it: nothing to compare
        return None
    return [(t, kw.get("sliding_window")) for t, kw in zip(types, kwargs)]


def kvmath_cache_layout(arch) -> list:
    out = []
    for layer in arch.layers:
        if not layer.owns_cache:
            out.append(("dummy", None))
        elif isinstance(layer, AttentionLayer):
            out.append((layer.layer_type, layer.sliding_window))
        elif isinstance(layer, CompressedAttentionLayer):  # transformers passes the config, not a window, to CSA / HCA
            out.append((layer.layer_type, layer.sliding_window if layer.layer_type == SLIDING else None))
        elif isinstance(layer, (MLALayer, CrossAttentionLayer)):  # Whisper: its self-attention DynamicCache's layers
            out.append((FULL, None))
        else:
            out.append(("linear_attention", None))
    return out


def check_against_transformers(cfg) -> None:
    try:
        arch = kvmath.load_architecture(cfg)
    except kvmath.KvMathError:
        return
    theirs = transformers_cache_layout(cfg)
    if theirs is not None:
        assert kvmath_cache_layout(arch) == theirs


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_seed_layouts_equal_transformers(seed):
    cfg = copy.deepcopy(SEEDS[seed])
    assert transformers_cache_layout(cfg) is not None
    check_against_transformers(cfg)


@settings(max_examples=int(os.environ.get("KVMATH_FUZZ_EXAMPLES", "1000")), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_layouts_equal_transformers(data):
    cfg = copy.deepcopy(SEEDS[data.draw(st.sampled_from(sorted(SEEDS)), label="seed")])
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        mutate(cfg, data)
    check_against_transformers(cfg)


# ---------------------------------------------------------------------------------------------------
# the vLLM block plan and the budget under fuzzing (issue #12: every crash of the config fuzzer was in
# one of these two): any config that loads either plans / budgets cleanly or is refused with KvMathError

SIGNED = frozenset({"available_kv_bytes", "available_kv_gib", "margin_bytes", "margin_gib", "model_offset_bytes"})
"""Budget fields that may be negative by their meaning (memory left after the non-KV terms, the margin
to the memory line, the fitted MoE offset); every other figure is a count or a size >= 0."""


def bad_numbers(obj, path="") -> list[str]:
    """Paths of NaN / infinite numbers anywhere in ``obj`` and negative ones outside ``SIGNED``."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += bad_numbers(v, f"{path}.{k}" if path else str(k)) if k not in SIGNED or not isinstance(
                v, (int, float)) else ([] if math.isfinite(v) else [f"{path}.{k}={v}"])
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out += bad_numbers(v, f"{path}[{i}]")
    elif isinstance(obj, float) and not math.isfinite(obj):
        out.append(f"{path}={obj}")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool) and obj < 0:
        out.append(f"{path}={obj}")
    return out


def check_plan(p) -> None:
    assert p.needed_bytes >= 0 and p.num_blocks >= 0 and p.bytes_per_block >= 0
    assert not bad_numbers(p.to_dict()), bad_numbers(p.to_dict())[:5]
    json.dumps(p.to_dict(), allow_nan=False)


def check_budget(b) -> None:
    assert b.non_kv == sum(v for _, v in b.terms()), "non_kv is not the sum of its terms"
    assert b.activation == b.gdn_scratch + b.activation_fitted
    assert b.available_kv == b.requested - b.non_kv
    if b.outcome == "boots":
        assert b.pool_bytes == b.plan.num_blocks * b.plan.bytes_per_block > 0
    d = b.to_dict()
    assert not bad_numbers(d), bad_numbers(d)[:5]
    json.dumps(d, allow_nan=False)


PLAN_MEMORY = st.one_of(st.sampled_from([None, 0, 1, -1, 2**20, 2**30, 10 * 2**30, 2**40, 2**61]),
                        st.integers(-(2**40), 2**45))


def check_plan_and_budget(arch, data) -> None:
    """The vLLM plan with a random memory and budget() with random deployment figures, on ``arch``."""
    ctx = data.draw(st.sampled_from([None, 1, 16, CTX, 4096, 2**20]), label="max_model_len")
    memory = data.draw(PLAN_MEMORY, label="memory")
    seqs = data.draw(st.sampled_from([1, 2, 256, 4096]), label="seqs")
    try:
        p = kvmath.vllm_plan(arch, memory, max_model_len=ctx, max_num_seqs=seqs,
                             max_num_batched_tokens=data.draw(st.sampled_from([16, 2048, 8192]), label="batched"))
    except kvmath.KvMathError as e:
        assert str(e).strip() and "\n" not in str(e)
    else:
        check_plan(p)
    from kvmath.engines.vllm.budget import budget

    kw = dict(max_model_len=ctx, max_num_seqs=data.draw(st.sampled_from([1, 2, 64]), label="budget seqs"),
              weights_gb_total=data.draw(st.sampled_from([0.5, 10.0, 80.0, 1e6]), label="weights"),
              mem_util=data.draw(st.sampled_from([0.5, 0.92, 1.0]), label="mem_util"),
              tp=data.draw(st.sampled_from([1, 2, 8]), label="tp"), allow_long_max_model_len=True,
              kv_format=data.draw(st.sampled_from(["auto", "fp8_e5m2", "int8_per_token_head", "bf16"]), label="kv"))
    if data.draw(st.booleans(), label="custom card"):
        kw.update(card=None, total_gib=data.draw(st.sampled_from([0.5, 24.0, 80.0, 2.0**20]), label="gib"))
    try:
        b = budget(arch, **kw)
    except kvmath.KvMathError as e:
        assert str(e).strip() and "\n" not in str(e)
    else:
        check_budget(b)


@settings(max_examples=int(os.environ.get("KVMATH_FUZZ_EXAMPLES", "150")) // 2 or 1, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_configs_plan_and_budget_cleanly(data):
    cfg = copy.deepcopy(SEEDS[data.draw(st.sampled_from(sorted(SEEDS)), label="seed")])
    for _ in range(data.draw(st.integers(0, 3), label="mutations")):
        mutate(cfg, data)
    try:
        arch = kvmath.load_architecture(cfg)
    except kvmath.KvMathError:
        return
    check_plan_and_budget(arch, data)


# ---------------------------------------------------------------------------------------------------
# the weight estimators under fuzzing (issue #25): the checkpoint table from config.json
# (kvmath.model.checkpoint.estimate_checkpoint), vLLM's per-rank weights from it and llama.cpp's config
# estimate either refuse with one line or give non-negative integer sizes; a negative or list-valued
# width (intermediate_size -5 priced Qwen 3.6 27B at 20.5 GB instead of 54.7 GB) never gets that far.

WEIGHT_KEYS = ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size", "vocab_size",
               "hidden_size", "num_experts", "num_local_experts", "n_routed_experts", "head_dim",
               "num_attention_heads", "num_key_value_heads", "tie_word_embeddings", "expert_intermediate_size",
               "first_k_dense_replace", "n_shared_experts", "num_hidden_layers")
WEIGHT_VALUES = st.one_of(NUMBERS, st.sampled_from([[5120], [], "5120", True, None, {}]))


def check_weights(cfg) -> None:
    """Every weight estimator on ``cfg``: KvMathError in one line, or sizes that are non-negative integers."""
    from kvmath.engines.llamacpp.weights import estimate_weights
    from kvmath.engines.vllm.weights import weights_from_config
    from kvmath.model.checkpoint import ESTIMATED_MODEL_TYPES, estimate_checkpoint

    try:
        arch = kvmath.load_architecture(cfg)
    except kvmath.KvMathError as e:
        assert str(e).strip() and "\n" not in str(e)
        return
    checked = arch.extras["hf_config"]  # what every reader gets: the validated config
    mt = _text(checked).get("model_type")
    from kvmath.engines.llamacpp.weights import GGUF_ARCH, weights_from_mix

    for name, fn in (("checkpoint", lambda c: estimate_checkpoint(c)),
                     ("vllm", lambda c: weights_from_config(c, tp=1)),
                     ("llama.cpp", lambda c: estimate_weights(c, bits_per_weight=4.5)),
                     ("llama.cpp mix", lambda c: weights_from_mix(c, "Q4_K_M")[1])):
        if not name.startswith("llama.cpp") and mt not in ESTIMATED_MODEL_TYPES:
            continue
        if name == "llama.cpp" and mt not in ("qwen3_5_moe_text", "qwen3_5_text", "gemma4_text"):
            continue
        if name == "llama.cpp mix" and mt not in GGUF_ARCH:
            continue
        try:
            out = fn(checked)
        except kvmath.KvMathError as e:
            assert str(e).strip() and "\n" not in str(e), (name, str(e)[:200])
            continue
        except (KeyError, TypeError) as e:  # a field the estimator needs is absent: not a silent number
            raise AssertionError(f"{name}: {type(e).__name__} {e}") from None
        if name == "checkpoint":
            assert all(_is_count(t.nbytes) and all(_is_count(d) for d in t.shape) for t in out.tensors)
            assert _is_count(out.total_bytes)
        elif name == "vllm":
            for x in (out.sharded, out.replicated, out.vocab, out.experts, out.buffers, out.total):
                assert _is_count(x), (name, out)
        else:
            assert not bad_numbers(vars(out)), (name, bad_numbers(vars(out))[:5])


@settings(max_examples=int(os.environ.get("KVMATH_FUZZ_EXAMPLES", "150")) // 3 or 1, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_configs_estimate_weights_cleanly(data):
    cfg = copy.deepcopy(SEEDS[data.draw(st.sampled_from(sorted(SEEDS)), label="seed")])
    target = _text(cfg)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        if data.draw(st.booleans(), label="weight field"):
            target[data.draw(st.sampled_from(WEIGHT_KEYS), label="key")] = data.draw(WEIGHT_VALUES, label="value")
        else:
            mutate(cfg, data)
    check_weights(cfg)


@pytest.mark.parametrize("value", [-5, 0, [5120], "5120", float("nan"), float("inf"), True, 10**30])
def test_bad_intermediate_size_is_refused_before_any_estimate(value):
    cfg = copy.deepcopy(SEEDS["shipped:qwen3.6-27b"])
    _text(cfg)["intermediate_size"] = value
    with pytest.raises(kvmath.KvMathError, match=r"config field (text_config\.)?intermediate_size must be"):
        kvmath.load_architecture(cfg)
    from kvmath.engines.vllm.budget import budget

    with pytest.raises(kvmath.KvMathError, match="intermediate_size"):
        budget(cfg, max_model_len=4096)
