"""Input checks shared by the command lines and the Python API: one place, one message style.

Every check raises :class:`kvmath.errors.KvMathError` with one line naming the field, the value and
the valid range, before any arithmetic runs. Bounds are generous (far beyond any published model or
deployment) but finite, so no input can make kvmath loop, allocate or compute without bound.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import stat
from contextlib import contextmanager

from .errors import KvMathError

MAX_LAYERS = 512
"""Upper bound on a config's layer count: llama.cpp's ``LLAMA_MAX_LAYERS`` (src/llama-hparams.h), which
the GGUF reader applies too. The largest published decoders have under 200 layers; vLLM's grouping is
quadratic in the layer count, so a bound keeps every plan well under a second."""
MAX_INT = 2**32
"""Upper bound on any other count or width read from a config (heads, widths, windows, positions)."""
MAX_TOKENS = 2**31
"""Upper bound on a context length or token budget (tokens)."""
MAX_BYTES = 2**60
"""Upper bound on a memory figure given by a user (bytes; 1 EiB)."""
MAX_GB = MAX_BYTES // 10**9
"""The same bound in GB (1e9 B): weights, drafter and reserved-KV sizes given in GB."""
MAX_TP = 4096
"""Upper bound on a tensor-parallel size."""
MAX_NAME = 200
"""Longest name (format, card, variant, version, model id) kvmath reads, in characters."""


def as_int(value, key: str, minimum: int = 1, maximum: int = MAX_INT) -> int:
    """``value`` as an int in ``[minimum, maximum]`` (an integral float such as ``32.0`` is accepted).

    ``key`` names the field in the message. Raises KvMathError for a bool, a string, a non-integral or
    non-finite float, or a value out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise KvMathError(f"config field {key} must be an integer, got {_short(value)}")
    if value < minimum:
        raise KvMathError(f"config field {key} must be >= {minimum}, got {_short(value)}")
    if value > maximum:
        raise KvMathError(f"config field {key} must be <= {maximum}, got {_short(value)}")
    return value


def check_positive(value, what: str, maximum: int = MAX_INT) -> int:
    """A user-supplied count (context, sequences, TP): a positive integer up to ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise KvMathError(f"{what} must be a positive integer, got {_short(value)}")
    if value < 1:
        raise KvMathError(f"{what} must be a positive integer, got {_short(value)}")
    if value > maximum:
        raise KvMathError(f"{what} must be at most {maximum:,}, got {_short(value)}")
    return value


def check_count(value, what: str, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """An integer in ``[minimum, maximum]`` (a count that may be 0)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise KvMathError(f"{what} must be an integer >= {minimum}, got {_short(value)}")
    if not minimum <= value <= maximum:
        raise KvMathError(f"{what} must be an integer in [{minimum}, {maximum:,}], got {_short(value)}")
    return value


def stoi_int(text: str) -> int:
    """An argparse ``type`` for a llama.cpp integer flag: ASCII digits with an optional sign, nothing else.

    llama.cpp reads its integer flags with ``std::stoi`` (common/arg.cpp), which takes only ASCII digits and
    stops at the first other character: ``1_000`` is 1 there and ``\u0661\u0662`` (Arabic-Indic 12) an error,
    where Python's ``int`` reads 1000 and 12. Anything but ``-?[0-9]+`` is refused rather than read
    differently from the engine. Raises argparse.ArgumentTypeError (argparse's one-line error names the flag)."""
    if not isinstance(text, str) or not re.fullmatch(r"[+-]?[0-9]{1,15}", text.strip()):
        from argparse import ArgumentTypeError

        raise ArgumentTypeError(f"llama.cpp takes an integer of ASCII digits (as std::stoi reads it), got {_short(text)}")
    n = int(text.strip())
    if not INT32_MIN <= n <= INT32_MAX:
        from argparse import ArgumentTypeError

        # std::stoi throws std::out_of_range past a 32-bit int: llama.cpp stops with "error while handling argument"
        raise ArgumentTypeError(f"llama.cpp takes a 32-bit integer (std::stoi: {INT32_MIN:,} to {INT32_MAX:,}), got "
                                f"{_short(text)}")
    return n


INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
"""The range of ``std::stoi`` (a C++ ``int``), which llama.cpp's integer flags are read with."""


STOF = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def stof_float(text, what: str) -> float:
    """A llama.cpp number flag (``-ts`` proportions), as ``std::stof`` reads it (common/arg.cpp): ASCII digits,
    a point and an exponent. ``1_0`` is 1 for stof and 10 for Python's ``float``; Arabic-Indic digits are an
    error for stof: anything outside that grammar is refused, not read differently. The range is the caller's.
    Raises KvMathError naming ``what``."""
    t = str(text).strip()
    if len(t) > 40 or not STOF.fullmatch(t):
        raise KvMathError(f"{what} takes a number of ASCII digits (as llama.cpp's std::stof reads it), got {_short(text)}")
    return float(t)


def check_bool(value, what: str) -> bool:
    if not isinstance(value, bool):
        raise KvMathError(f"{what} must be True or False, got {_short(value)}")
    return value


def check_choice(value, what: str, valid) -> str:
    """``value`` if it is one of ``valid`` (strings), else KvMathError listing them."""
    valid = tuple(valid)
    if not isinstance(value, str) or value not in valid:
        raise KvMathError(f"{what} must be one of {', '.join(map(str, valid))}; got {_short(value)}")
    return value


def check_number(value, what: str, minimum: float = 0.0, maximum: float = float(MAX_GB), *,
                 open_min: bool = False) -> float:
    """A real, finite number (not a bool) in ``[minimum, maximum]`` (``(minimum, maximum]`` with
    ``open_min``); an int is accepted and returned as a float when it is in range."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if not is_int and not (isinstance(value, float) and math.isfinite(value)):
        raise KvMathError(f"{what} must be a finite number, got {_short(value)}")
    low = "(" if open_min else "["
    if (value <= minimum if open_min else value < minimum) or value > maximum:
        raise KvMathError(f"{what} must be a number in {low}{_num(minimum)}, {_num(maximum)}], got {_short(value)}")
    return float(value)


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def check_name(value, what: str, maximum: int = MAX_NAME, *, optional: bool = False) -> str | None:
    """A non-empty string of at most ``maximum`` characters (None too with ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise KvMathError(f"{what} must be a name (a string), got {_short(value)}")
    if not value.strip():
        raise KvMathError(f"{what} is empty; give a name")
    if len(value) > maximum or "\x00" in value:
        raise KvMathError(f"{what} is {len(value):,} characters long; names are at most {maximum} "
                          f"(got {_short(value)})")
    return value


def one_line(message, limit: int = 600) -> str:
    """An error message as one line of at most ``limit`` characters (what a command line prints)."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_finite_number(v) -> bool:
    """A real, finite number that is not a bool (an int too large for a float is not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _short(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (a 5,000-digit integer is not echoed whole)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]  # repr of the head only: a huge string is not copied whole
    try:
        text = repr(value)
    except ValueError:  # int too large for repr under Python's digit limit
        return "an integer with too many digits"
    except Exception:  # noqa: BLE001 - an object whose repr fails still gets a message
        return f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------
# config fields: one table, checked once where a config dict enters (kvmath.model.load) before any reader

class Rule:
    """How one config field must look. ``kind``: ``int`` (an integer, not a bool; an integral float such as
    ``32.0`` is read as 32), ``number`` (a finite real), ``ints`` (a list of integers, at most ``max_len``
    long), ``strs`` (a list of strings), ``str`` (a string of at most ``max_len`` characters), ``bool``,
    ``dict`` (an object of at most ``max_len`` keys), ``either`` (the value passes one of ``options``, other
    rules, tried in order: EXAONE 4's ``sliding_window_pattern`` is an integer or a string such as ``"LLLG"``,
    Gemma 3n's ``intermediate_size`` an integer or one per layer). ``minimum`` / ``maximum`` bound the value
    (or each item). ``also``: other values accepted as they are (``"auto"`` for ``mamba_d_head``). A null value
    is always accepted: every reader treats it as absent."""

    __slots__ = ("kind", "minimum", "maximum", "max_len", "also", "open_min", "options")

    def __init__(self, kind: str, minimum=None, maximum=None, max_len: int | None = None, also: tuple = (),
                 open_min: bool = False, options: tuple = ()):
        self.kind, self.minimum, self.maximum, self.max_len, self.also = kind, minimum, maximum, max_len, also
        self.open_min, self.options = open_min, options

    def __repr__(self):  # pragma: no cover - for a reader of the table
        return f"Rule({self.kind!r}, {self.minimum!r}, {self.maximum!r}, max_len={self.max_len!r})"

    def describe(self) -> str:
        """The valid range in words, for the one-line refusal."""
        low = "(" if self.open_min else "["
        span = f"{low}{_num(self.minimum)}, {_num(self.maximum)}]" if self.minimum is not None else ""
        extra = "".join(f" or {a!r}" for a in self.also)
        if self.kind == "either":
            return " or ".join(o.describe() for o in self.options)
        if self.kind == "int":
            return f"an integer in {span}{extra}"
        if self.kind == "number":
            return f"a finite number in {span}"
        if self.kind == "ints":
            return f"a list of at most {self.max_len:,} integers in {span}"
        if self.kind == "strs":
            return f"a list of at most {self.max_len:,} strings"
        if self.kind == "str":
            return f"a string of at most {self.max_len:,} characters"
        if self.kind == "dict":
            return f"an object of at most {self.max_len:,} entries"
        return "true or false"


def count(minimum: int = 1, maximum: int = MAX_INT, also: tuple = ()) -> Rule:
    """An integer field in ``[minimum, maximum]``."""
    return Rule("int", minimum, maximum, also=also)


def layers(minimum: int = 1) -> Rule:
    """A layer count (or layer index bound) in ``[minimum, MAX_LAYERS]``."""
    return Rule("int", minimum, MAX_LAYERS)


WIDTH = 2**20
"""Upper bound on a hidden / intermediate width (1,048,576; the widest published layers are under 2^17)."""
HEADS = 2**16
"""Upper bound on a head count or a head width."""
MAX_EXPERTS = 4096
"""Upper bound on routed experts per layer (the most published: 512, Qwen3-Next)."""
MAX_LAYER_EXPERTS = 2**16
"""Upper bound on layers x experts: the checkpoint estimate writes rows per expert matrix and costs about
80 us per expert MLP with vLLM's sharding (Qwen3-Next, 48 x 512 = 24,576: 2.0 s; 512 x 512 took 26 s), so
65,536 keeps the published models (Nemotron-3-Super 88 x 512 = 45,056, Qwen3-Next 24,576, Kimi K2 61 x 384,
DeepSeek-V3 61 x 256; it was 32,768, which refused Nemotron-3-Super) and no config can make it run for minutes
(about 5 s at the bound)."""

CONFIG_RULES: dict[str, Rule] = {
    # layer counts (kvmath.model.hf, checkpoint.py, the weight estimators)
    "num_hidden_layers": layers(), "n_layer": layers(), "num_layers": layers(), "depth": layers(),
    "encoder_layers": layers(), "mtp_num_hidden_layers": layers(0), "num_nextn_predict_layers": layers(0),
    "num_kv_shared_layers": layers(0), "first_k_dense_replace": layers(0), "max_window_layers": layers(0),
    "full_attention_interval": layers(),
    "sliding_window_pattern": Rule("either", options=(layers(), Rule("str", max_len=MAX_LAYERS))), "decoder_sparse_step": layers(),
    # DeepSeek V2/V3, Kimi Linear: an MoE block every moe_layer_freq layers (vLLM deepseek_v2.py layer_idx %
    # moe_layer_freq); dots3_note / step3p7 (transformers 5.23) take a list of 0/1 flags, one per layer
    "moe_layer_freq": Rule("either", options=(count(1, 2**31 - 1), Rule("ints", 0, 1, MAX_LAYERS))),
    # attention
    "num_attention_heads": count(1, HEADS), "n_head": count(1, HEADS), "num_key_value_heads": count(1, HEADS),
    "num_global_key_value_heads": count(1, HEADS), "num_heads": count(1, HEADS),
    "head_dim": count(1, HEADS), "global_head_dim": count(1, HEADS), "attention_head_dim": count(1, HEADS),
    "kv_lora_rank": count(1, HEADS), "q_lora_rank": count(0, WIDTH), "qk_rope_head_dim": count(1, HEADS),
    "qk_nope_head_dim": count(0, HEADS), "v_head_dim": count(1, HEADS),
    "sliding_window": count(0, MAX_TOKENS),  # 0: no window (qwen2_moe defaults); _window refuses < 2 where read
    "max_position_embeddings": count(0, MAX_TOKENS),
    "original_max_position_embeddings": count(1, MAX_TOKENS),
    "partial_rotary_factor": Rule("number", 0, 1, open_min=True),
    # widths
    "hidden_size": count(1, WIDTH), "n_embd": count(1, WIDTH), "d_model": count(1, WIDTH), "width": count(1, WIDTH),
    "embed_dim": count(1, WIDTH),
    "intermediate_size": Rule("either", options=(count(1, WIDTH), Rule("ints", 1, WIDTH, MAX_LAYERS))), "ffn_hidden_size": count(1, WIDTH),
    "encoder_ffn_dim": count(1, WIDTH),
    # ERNIE 4.5 VL (transformers 5.23 Ernie4_5_VLMoeTextConfig): [text experts, vision experts] widths; Hunyuan V1
    # MoE: one per layer (see _one_expert_width)
    "moe_intermediate_size": Rule("either", options=(count(0, WIDTH), Rule("ints", 0, WIDTH, MAX_LAYERS))),
    "expert_intermediate_size": count(0, WIDTH), "shared_expert_intermediate_size": count(0, WIDTH),
    "moe_shared_expert_intermediate_size": count(0, WIDTH), "hidden_size_per_layer_input": count(0, WIDTH),
    "vocab_size": count(1, 2**24), "out_hidden_size": count(1, WIDTH), "projection_dim": count(1, WIDTH),
    # experts
    "num_experts": count(0, MAX_EXPERTS), "num_local_experts": count(0, MAX_EXPERTS),
    "n_routed_experts": count(0, MAX_EXPERTS), "n_shared_experts": count(0, MAX_EXPERTS),
    "num_shared_experts": count(0, MAX_EXPERTS), "num_experts_per_tok": count(0, MAX_EXPERTS),
    "top_k_experts": count(0, MAX_EXPERTS), "moe_top_k": count(0, MAX_EXPERTS),
    # linear attention / state-space mixers
    "linear_num_key_heads": count(1, HEADS), "linear_num_value_heads": count(1, HEADS),
    "linear_key_head_dim": count(1, HEADS), "linear_value_head_dim": count(1, HEADS),
    "linear_conv_kernel_dim": count(1, 1024), "short_conv_kernel_size": count(1, 1024), "conv_kernel": count(1, 1024),
    "mamba_num_heads": count(1, HEADS), "mamba_head_dim": count(1, HEADS), "mamba_n_heads": count(1, HEADS),
    "mamba_d_head": count(1, HEADS, also=("auto",)), "mamba_n_groups": count(1, HEADS),
    "mamba_d_state": count(1, HEADS), "mamba_d_conv": count(1, 1024), "mamba_expand": count(1, 64),
    "ssm_state_size": count(1, HEADS), "n_groups": count(1, HEADS), "mamba_chunk_size": count(1, WIDTH),
    "chunk_size": count(1, WIDTH),
    # vision / audio towers (checkpoint.py)
    "patch_size": count(1, 4096), "temporal_patch_size": count(1, 64), "spatial_merge_size": count(1, 64),
    "in_channels": count(1, 1024), "num_channels": count(1, 1024), "in_chans": count(1, 1024),
    "num_position_embeddings": count(0, 2**24), "position_embedding_size": count(1, 2**24),
    "vision_soft_tokens_per_image": count(0, 2**24),
    # Gemma 4 vision tower (transformers 5.23 Gemma4VisionConfig.pooling_kernel_size: int = 3; the checkpoints'
    # default_output_length 280): vLLM's encoder budget reads tokens x kernel^2 patches, so 0 / a list was
    # priced with a fallback (kernel 1, the soft-token count) instead of refused
    "pooling_kernel_size": count(1, 64), "default_output_length": count(1, 2**24),
    # lists and strings
    "layer_types": Rule("strs", max_len=2 * MAX_LAYERS), "layers_block_type": Rule("strs", max_len=2 * MAX_LAYERS),
    "hybrid_override_pattern": Rule("str", max_len=MAX_LAYERS), "mlp_only_layers": Rule("ints", 0, MAX_LAYERS,
                                                                                         MAX_LAYERS),
    "deepstack_visual_indexes": Rule("ints", 0, MAX_LAYERS, MAX_LAYERS),
    "per_layer_config": Rule("dict", max_len=MAX_LAYERS),
    # switches the readers take only as true / false (a string "false" would be read as a default)
    "tie_word_embeddings": Rule("bool"), "attention_k_eq_v": Rule("bool"), "use_sliding_window": Rule("bool"),
    "enable_moe_block": Rule("bool"), "attention_bias": Rule("bool"), "mlp_bias": Rule("bool"),
    "use_bias": Rule("bool"), "use_conv_bias": Rule("bool"), "attn_output_gate": Rule("bool"),
    "use_clipped_linears": Rule("bool"), "standardize": Rule("bool"),
    # the architecture the readers dispatch on (vLLM's registry, the family readers)
    "architectures": Rule("strs", max_len=64),
}
"""Every numeric (and list / switch) field a reader of kvmath takes from a config: ``kvmath.model.hf``
(the cache layout), ``kvmath.model.checkpoint`` (the tensor table), the weight estimators
(``kvmath.engines.vllm.weights``, ``kvmath.engines.llamacpp.weights``) and vLLM's activation model.
Checked in the top level and in every section of :data:`MODEL_SECTIONS` (and each ``per_layer_config``
entry). A family reader added later extends this dict with the keys it reads."""

SECTION_RULES: dict[str, dict[str, Rule]] = {
    "rope_scaling": {"factor": Rule("number", 0, 2**20, open_min=True),
                     "original_max_position_embeddings": count(1, MAX_TOKENS)},
    "linear_attn_config": {"num_heads": count(1, HEADS), "head_dim": count(1, HEADS),
                           "short_conv_kernel_size": count(1, 1024),
                           "full_attn_layers": Rule("ints", 1, MAX_LAYERS, MAX_LAYERS),
                           "kda_layers": Rule("ints", 1, MAX_LAYERS, MAX_LAYERS)},
    "quantization_config": {"bits": count(1, 64), "w_bit": count(1, 64), "group_size": count(-1, WIDTH),
                            "q_group_size": count(-1, WIDTH),
                            "weight_block_size": Rule("ints", 1, WIDTH, 2)},
}
"""Fields of the objects inside a config that the readers take numbers from (``rope_scaling`` also as
``rope_parameters``): key -> {field: rule}."""

PER_LAYER_MLP_TYPES = ("gemma3n",)
"""model_type prefixes whose ``intermediate_size`` may be a list of one width per decoder layer
(transformers 5.23 ``Gemma3nTextConfig``); everywhere else a list is refused."""

PER_LAYER_MOE_TYPES = ("hunyuan_v1_moe",)
"""model_types whose ``moe_intermediate_size`` may be a list of one width per decoder layer (transformers 5.23
``HunYuanMoEV1Config``: ``int | list[int]``; Hunyuan-A13B's config.json lists 32 equal widths). A list of one
repeated width is read as that width; widths that differ are refused (no reader prices them per layer)."""

POOLED_EXPERT_TYPES = ("ernie4_5_vl_moe_text",)
"""Text model_types whose ``moe_intermediate_size`` is a list of two widths, [text experts, vision experts]
(transformers 5.23 ``Ernie4_5_VLMoeTextConfig``, also built as the ``text_config`` of an ``ernie4_5_vl_moe``
wrapper whatever its model_type says); everywhere else a list is refused."""

STRICT_INT_FIELDS = {
    "num_key_value_heads": (
        'axk1', 'axk2', 'cwm', 'deepseek_v32', 'deepseek_v4', 'exaone4', 'exaone_moe', 'flint', 'gemma', 'gemma2',
        'gemma3_text', 'gemma3n_text', 'gemma4_text', 'gemma4_unified_text', 'glm4', 'glm4_moe', 'glm4_moe_lite',
        'glm4v_moe_text', 'glm_moe_dsa', 'glm_ocr_text', 'gpt_oss', 'helium', 'hy_v3', 'hy_v4', 'jamba', 'jetmoe',
        'kolibri1', 'laguna', 'lfm2', 'lfm2_moe', 'lfm3', 'llama4_text', 'mellum', 'mimo_v2_flash', 'minimax',
        'minimax_m2', 'ministral', 'ministral3', 'mistral', 'mixtral', 'molmo2_text', 'muse_glimmer_text',
        'muse_spark_text', 'nemotron_h', 'phimoe', 'qwen3_5_moe_text', 'qwen3_5_text', 'qwen3_moe', 'qwen3_next',
        'qwen3_omni_moe_text', 'qwen3_vl_moe_text', 'solar_open', 'stablelm', 'starcoder2', 'step3p5', 'vaultgemma',
        'youtu',
    ),
    "head_dim": (
        'axk2', 'bailing_hybrid', 'cohere2_moe', 'cosmos3_edge_text', 'cwm', 'deepseek_v32', 'deepseek_v4', 'flint',
        'gemma', 'gemma2', 'gemma3_text', 'gemma3n_text', 'gemma4_text', 'gemma4_unified_text', 'glm4',
        'glm_moe_dsa', 'gpt_oss', 'helium', 'hrm_text', 'hy_v3', 'hy_v4', 'kolibri1', 'laguna', 'lfm3',
        'llama4_text', 'longcat_flash', 'mamba2', 'mellum', 'mimo_v2_flash', 'minimax_m2', 'ministral3',
        'molmo2_text', 'muse_glimmer_text', 'muse_spark_text', 'nemotron_h', 'qwen3', 'qwen3_5_moe_text',
        'qwen3_5_text', 'qwen3_next', 'qwen3_vl_text', 'seed_oss', 'solar_open', 'step3p5', 'vaultgemma',
    ),
}
"""model_type -> the fields its transformers 5.23 config class types as a plain ``int``: a null there stops the class
(``CONFIG_MAPPING[t](field=None)`` raises StrictDataclassFieldValidationError), so transformers and vLLM, which builds
the same class, cannot load the config. Read from the installed classes for every type kvmath reads; kvmath had
treated such a null as absent and priced another width (Qwen 3.6 with ``num_key_value_heads`` null: every head)."""


def _check_strict_nulls(holder: dict, path: tuple) -> None:
    """KvMathError naming the field when ``holder`` sets a :data:`STRICT_INT_FIELDS` field of its model_type null."""
    mt = holder.get("model_type")
    for key, types in STRICT_INT_FIELDS.items():
        if mt in types and key in holder and holder[key] is None:
            name = ".".join(path + (key,))
            raise KvMathError(f"{mt} config sets {key} null ({name}): transformers 5.23's config class refuses None "
                              "there (an int field), so no engine loads it; write the value or leave the key out")


MODEL_SECTIONS = ("text_config", "vision_config", "audio_config")
"""Sub-configs read with :data:`CONFIG_RULES` (a multimodal wrapper's decoder and towers)."""


def check_config(cfg, where: str = "config") -> dict:
    """``cfg`` with every field of :data:`CONFIG_RULES` / :data:`SECTION_RULES` checked, before any family
    reader runs; raises KvMathError naming the first bad field (``config field text_config.intermediate_size
    must be an integer in [1, 1,048,576], got -5``), and for more layers x experts than
    :data:`MAX_LAYER_EXPERTS`.

    Returns ``cfg`` itself when every integer field already is an int, else a copy with the integral floats
    (``32.0``) turned into ints, so no later reader can take a float for a missing value. ``cfg`` is never
    modified. A non-dict is returned as is (the readers refuse it with their own message).
    """
    if not isinstance(cfg, dict):
        return cfg
    fixes: dict = {}
    _check_section(cfg, CONFIG_RULES, "", fixes)
    for sec in MODEL_SECTIONS:
        sub = cfg.get(sec)
        if isinstance(sub, dict):
            _check_section(sub, CONFIG_RULES, f"{sec}.", fixes, (sec,))
    for holder_path in [()] + [(s,) for s in MODEL_SECTIONS if isinstance(cfg.get(s), dict)]:
        holder = _at(cfg, holder_path)
        for sec, rules in SECTION_RULES.items():
            for name in ((sec, "rope_parameters") if sec == "rope_scaling" else (sec,)):
                sub = holder.get(name)
                if isinstance(sub, dict):
                    prefix = ".".join(holder_path + (name,)) + "."
                    _check_section(sub, rules, prefix, fixes, holder_path + (name,))
        plc = holder.get("per_layer_config")
        if isinstance(plc, dict):
            for k, sub in plc.items():
                if isinstance(sub, dict):
                    prefix = ".".join(holder_path + ("per_layer_config", str(k)[:20])) + "."
                    _check_section(sub, CONFIG_RULES, prefix, fixes, holder_path + ("per_layer_config", k))
    for holder_path in ([(), ("text_config",)] if isinstance(cfg.get("text_config"), dict) else [()]):
        holder = _at(cfg, holder_path)
        n = _fixed(holder, fixes, holder_path, "num_hidden_layers") or 0
        inter = holder.get("intermediate_size")
        if isinstance(inter, list) and not (str(holder.get("model_type", "")).startswith(PER_LAYER_MLP_TYPES)
                                            and len(inter) == n):
            name = ".".join(holder_path + ("intermediate_size",))
            raise KvMathError(f"config field {name} must be an integer (valid: an integer in [1, {WIDTH:,}]; a list "
                              f"of one width per layer only for {', '.join(PER_LAYER_MLP_TYPES)}), got {_short(inter)}")
        _check_strict_nulls(holder, holder_path)
        _one_expert_width(cfg, holder, fixes, holder_path, n)
        e = max((_fixed(holder, fixes, holder_path, k) or 0)
                for k in ("num_experts", "num_local_experts", "n_routed_experts"))
        if n * e > MAX_LAYER_EXPERTS:
            raise KvMathError(f"{where}: {n} layers x {e} experts = {n * e:,} expert MLPs; kvmath reads at most "
                              f"{MAX_LAYER_EXPERTS:,} (num_hidden_layers x num_experts)")
        _check_experts(holder, fixes, holder_path, e, where)
    _check_quant_config(cfg)
    _check_rope_keys(cfg)
    for sec in ("vision_config", "audio_config"):  # towers: one MLP width
        sub = cfg.get(sec)
        if isinstance(sub, dict) and isinstance(sub.get("intermediate_size"), list):
            raise KvMathError(f"config field {sec}.intermediate_size must be an integer (valid: an integer in "
                              f"[1, {WIDTH:,}]), got {_short(sub['intermediate_size'])}")
    return _apply(cfg, fixes) if fixes else cfg


def _one_expert_width(cfg: dict, holder: dict, fixes: dict, path: tuple, n_layers: int) -> None:
    """A list ``moe_intermediate_size``: two widths [text, vision experts] for :data:`POOLED_EXPERT_TYPES` (kept as
    is, their reader reads both); one equal width per layer for :data:`PER_LAYER_MOE_TYPES` (becomes that width
    in ``fixes``); any other list raises KvMathError naming the field and both allowances."""
    widths = fixes.get(path + ("moe_intermediate_size",), holder.get("moe_intermediate_size"))
    if not isinstance(widths, list):
        return
    name = ".".join(path + ("moe_intermediate_size",))
    pooled = holder.get("model_type") in POOLED_EXPERT_TYPES or \
        (path == ("text_config",) and cfg.get("model_type") == "ernie4_5_vl_moe")
    if pooled and len(widths) == 2:
        return
    if not pooled and str(holder.get("model_type", "")) in PER_LAYER_MOE_TYPES and len(widths) == n_layers and \
            len(set(widths)) == 1:
        fixes[path + ("moe_intermediate_size",)] = int(widths[0])
        return
    raise KvMathError(f"config field {name} must be an integer (valid: an integer in [0, {WIDTH:,}]; a list of two "
                      f"widths, text and vision experts, only for {', '.join(POOLED_EXPERT_TYPES)}; of one equal "
                      f"width per layer only for {', '.join(PER_LAYER_MOE_TYPES)}), got {_short(widths)}")


ROPE_REQUIRED = {"linear": ("factor",), "dynamic": ("factor",), "yarn": ("factor",),
                 "llama3": ("factor", "low_freq_factor", "high_freq_factor"), "longrope": ("short_factor", "long_factor")}
"""Keys each scaled RoPE type needs (transformers 5.23 modeling_rope_utils.py ``_validate_<type>_rope_parameters``
``required_keys``; ``_check_received_keys`` raises KeyError "Missing required keys in `rope_parameters`"; rope_theta
and original_max_position_embeddings are filled in before, by ``standardize_rope_params``)."""


def _check_rope_keys(cfg: dict) -> None:
    """A ``rope_scaling`` / ``rope_parameters`` (top level or ``text_config``, also per layer type) whose
    ``rope_type`` (or ``type``) is one of :data:`ROPE_REQUIRED` holds its required keys, as transformers requires
    before vLLM reads the config. Raises KvMathError naming the key."""
    for prefix, holder in (("", cfg), ("text_config.", cfg.get("text_config"))):
        if not isinstance(holder, dict):
            continue
        for name in ("rope_scaling", "rope_parameters"):
            rp = holder.get(name)
            if not isinstance(rp, dict):
                continue
            subs = [(f"{name}.{k}", v) for k, v in rp.items() if isinstance(v, dict)] or [(name, rp)]
            for where, d in subs:
                kind = d.get("rope_type", d.get("type"))
                missing = [k for k in ROPE_REQUIRED.get(kind, ()) if k not in d] if isinstance(kind, str) else []
                if missing:
                    raise KvMathError(f"config field {prefix}{where} has rope_type {kind!r} but no {missing[0]} "
                                      f"(transformers refuses it: \"Missing required keys in `rope_parameters`\")")


def _check_quant_config(cfg: dict) -> None:
    """``quantization_config`` (top level or the decoder's ``text_config``), when stated, is an object whose
    ``quant_method`` / ``quant_algo``, when stated, is a string: vLLM 0.24 ``ModelConfig._verify_quantization``
    reads ``quant_cfg.get("quant_method", "").lower()``, so a list there, or a null / numeric method, stops vLLM
    with an AttributeError, and kvmath's weight estimate would otherwise price an unquantised checkpoint (a list is
    falsy). Raises KvMathError."""
    for prefix, holder in (("", cfg), ("text_config.", cfg.get("text_config"))):
        if not isinstance(holder, dict) or holder.get("quantization_config") is None:
            continue
        q = holder["quantization_config"]
        if not isinstance(q, dict):
            raise KvMathError(f"config field {prefix}quantization_config must be an object (with quant_method), got "
                              f"{_short(q)}")
        for key in ("quant_method", "quant_algo"):
            if key in q and not isinstance(q[key], str) and not (key == "quant_method" and q[key] is None
                                                                  and isinstance(q.get("quant_algo"), str)):
                raise KvMathError(f"config field {prefix}quantization_config.{key} must be a string (a quantization "
                                  f"method such as 'awq', 'gptq', 'fp8'), got {_short(q[key])}")


EXPERT_COUNT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
TOP_K_KEYS = ("num_experts_per_tok", "top_k_experts", "moe_top_k")
EXPERT_WIDTH_KEYS = ("moe_intermediate_size", "expert_intermediate_size")


def _check_experts(holder: dict, fixes: dict, path: tuple, experts: int, where: str) -> None:
    """The routed-expert fields agree: a config that states both its expert count and its top-k routes
    1..count experts per token (transformers' MoE blocks take the top-k of the router's count logits;
    ``num_experts`` 0 with ``num_experts_per_tok`` 8 has no experts to route to), and a model with experts
    gives them a width >= 1. Each field's own range is in :data:`CONFIG_RULES`. Raises KvMathError."""
    stated = [k for k in EXPERT_COUNT_KEYS if _fixed(holder, fixes, path, k) is not None]
    top = next(((k, v) for k in TOP_K_KEYS if (v := _fixed(holder, fixes, path, k)) is not None), None)
    prefix = "".join(p + "." for p in path)
    if stated and top is not None:
        key, k = top
        if k > experts:
            raise KvMathError(f"{where}: {prefix}{key} {k} routes more experts than the {experts} of "
                              f"{prefix}{stated[0]} (valid: 1 to {stated[0]})")
        if experts > 0 and k == 0:
            raise KvMathError(f"{where}: {prefix}{key} is 0 but the model has {experts} experts (valid: 1 to "
                              f"{experts})")
    if experts > 0:
        stated_widths = [k for k in EXPERT_WIDTH_KEYS if k in holder]
        if stated_widths and all(holder[k] is None for k in stated_widths):
            # an explicit null is not an absent key for transformers (the config keeps None and the expert MLPs
            # cannot be built); kvmath's estimate would fall back to another width
            raise KvMathError(f"{where}: {prefix}{stated_widths[0]} is null but the model has {experts} experts (valid: "
                              f"an integer in [1, {WIDTH:,}])")
        for key in EXPERT_WIDTH_KEYS:
            if _fixed(holder, fixes, path, key) == 0:
                raise KvMathError(f"{where}: {prefix}{key} is 0 but the model has {experts} experts (valid: an "
                                  f"integer in [1, {WIDTH:,}])")


def _at(cfg: dict, path: tuple):
    for k in path:
        cfg = cfg[k]
    return cfg


def _fixed(holder: dict, fixes: dict, path: tuple, key: str):
    v = fixes.get(path + (key,), holder.get(key))
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _check_section(d: dict, rules: dict, prefix: str, fixes: dict, path: tuple = ()) -> None:
    for key, rule in rules.items():
        if key not in d:
            continue
        value = d[key]
        if value is None or (rule.also and isinstance(value, str) and value in rule.also):
            continue
        if key == "patch_size" and path == ("vision_config",) and isinstance(value, list) and len(value) == 2 \
                and value[0] == value[1]:  # InternVL's square [h, w] patch (InternVLVisionConfig)
            _check_value(value[0], rule, prefix + key)
            continue
        out = _check_value(value, rule, prefix + key)
        if out is not value and not (isinstance(out, int) and type(value) is int):
            fixes[path + (key,)] = out


def _bad(name: str, rule: Rule, value, why: str = "") -> KvMathError:
    """One line: what is wrong (``must be >= 1``, ``must be an integer``), the valid range, the value."""
    why = why or {"int": "must be an integer", "number": "must be a finite number", "bool": "must be true or false",
                  "str": "must be a string", "dict": "must be an object"}.get(rule.kind, "must be a list")
    return KvMathError(f"config field {name} {why} (valid: {rule.describe()}), got {_short(value)}")


def _range(name: str, rule: Rule, value, number) -> None:
    low_ok = number > rule.minimum if rule.open_min else number >= rule.minimum
    if not low_ok:
        raise _bad(name, rule, value, f"must be {'>' if rule.open_min else '>='} {_num(rule.minimum)}")
    if number > rule.maximum:
        raise _bad(name, rule, value, f"must be <= {_num(rule.maximum)}")


def _one_int(value, rule: Rule, name: str):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(name, rule, value, "must be an integer")
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            raise _bad(name, rule, value, "must be an integer")
        value = int(value)
    _range(name, rule, value, value)
    return value


def _check_value(value, rule: Rule, name: str):
    kind = rule.kind
    if kind == "either":  # the first form's refusal speaks when no form takes the value
        first = None
        for option in rule.options:
            try:
                return _check_value(value, option, name)
            except KvMathError as e:
                first = first or e
        raise first
    if kind == "int":
        return _one_int(value, rule, name)
    if kind == "number":
        if not is_finite_number(value):
            raise _bad(name, rule, value)
        _range(name, rule, value, value)
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise _bad(name, rule, value)
        return value
    if kind == "str":
        if not isinstance(value, str) or len(value) > rule.max_len:
            raise _bad(name, rule, value, "must be a string" if not isinstance(value, str) else
                       f"is {len(value):,} characters long")
        return value
    if kind == "dict":
        if not isinstance(value, dict) or len(value) > rule.max_len:
            raise _bad(name, rule, value, "must be an object" if not isinstance(value, dict) else
                       f"has {len(value):,} entries")
        return value
    if not isinstance(value, list):
        raise _bad(name, rule, value, "must be a list")
    if len(value) > rule.max_len:
        raise _bad(name, rule, f"a list of {len(value):,} items", f"has {len(value):,} entries")
    if kind == "strs":
        if not all(isinstance(v, str) and len(v) <= MAX_NAME for v in value):
            raise _bad(name, rule, value, "must be a list of strings")
        return value
    out = [_one_int(v, rule, name) for v in value]
    return value if all(type(v) is int for v in value) else out


def _apply(cfg: dict, fixes: dict) -> dict:
    """A copy of ``cfg`` with ``fixes`` ({path tuple: value}) set; only the objects on those paths are copied."""
    out = dict(cfg)
    for path, value in fixes.items():
        d = out
        for k in path[:-1]:
            d[k] = dict(d[k])
            d = d[k]
        d[path[-1]] = value
    return out


# ---------------------------------------------------------------------------------------------------
# files: regular, bounded, never blocking

MAX_JSON_DEPTH = 64
"""Deepest nesting of a JSON document kvmath reads (published configs nest 4 levels; the engines' JSON flags 2)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular_file(path, what: str = "file") -> os.stat_result:
    """``os.stat(path)`` when ``path`` is a regular file (links followed); KvMathError naming what it is
    instead (missing, a folder, a FIFO, a device, a socket) or why it cannot be read. Opens nothing, so a
    FIFO cannot block."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise KvMathError(f"{str(path)[:300]}: no such {what}") from None
    except OSError as e:
        raise KvMathError(f"{str(path)[:300]}: cannot read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise KvMathError(f"{str(path)[:300]}: is {_kind(st.st_mode)}, not a {what}")
    return st


def open_regular(path, what: str = "file"):
    """A binary file object for the regular file ``path``, opened with ``O_NONBLOCK`` (a FIFO swapped in
    after the check cannot hang the open) and checked again with ``fstat`` on the open descriptor.
    KvMathError (one line) for anything else."""
    check_regular_file(path, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise KvMathError(f"{str(path)[:300]}: cannot read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KvMathError(f"{str(path)[:300]}: is {_kind(st.st_mode)}, not a {what}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, refused (KvMathError) beyond ``limit`` bytes; never reads
    more than ``limit + 1`` bytes, whatever the file claims its size is."""
    with open_regular(path, what) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise KvMathError(f"{str(path)[:300]}: cannot read ({e.strerror or e})") from None
    if len(data) > limit:
        raise KvMathError(f"{str(path)[:300]}: larger than a {what} can be (at most {limit:,} bytes)")
    return data


def parse_json(text, where: str, max_bytes: int = 64 * 2**20, max_depth: int = MAX_JSON_DEPTH):
    """``json.loads(text)`` (str or UTF-8 bytes) with one-line refusals: more than ``max_bytes``, not UTF-8,
    not JSON (with the line and column), nested deeper than ``max_depth`` (checked before parsing, so a
    100,000-level document is neither parsed nor a RecursionError), an integer beyond Python's digit
    limit, a key given twice in one object, a lone UTF-16 surrogate escape (``"\\ud800"``: Python's json
    reads it into a str that cannot be written out as UTF-8). ``NaN`` / ``Infinity`` tokens parse as Python does; the field rules
    refuse them where a number is read."""
    if len(text) > max_bytes:
        raise KvMathError(f"{where}: {len(text):,} bytes of JSON is too large (at most {max_bytes:,})")
    raw = None
    if isinstance(text, (bytes, bytearray)):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise KvMathError(f"{where}: not UTF-8 text") from None
    depth = _json_depth_bytes(raw, max_depth) if raw is not None else None
    if depth is None:
        depth = json_depth(text)
    if depth > max_depth:
        raise KvMathError(f"{where}: JSON nested {depth:,} levels deep (at most {max_depth})")
    try:
        value = _loads(text)
        if _SURROGATE.search(text):  # a \ud800-\udfff escape: a lone one is no character in any encoding
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError:
        raise KvMathError(f"{where}: a \\u escape names a lone UTF-16 surrogate (\\ud800-\\udfff), which is no "
                          "character; the file is damaged") from None
    except json.JSONDecodeError as e:
        raise KvMathError(f"{where}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except _DuplicateKey as e:
        raise KvMathError(f"{where}: the key {str(e.args[0])[:80]!r} is given twice in one JSON object (which one "
                          "counts depends on the reader); keep one") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise KvMathError(f"{where}: JSON nested too deeply") from None
    except ValueError as e:  # an integer beyond Python's digit limit
        raise KvMathError(f"{where}: unreadable JSON value ({str(e).splitlines()[0][:80]})") from None


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_BRACKETS = re.compile(r"[\[\]{}]")


@contextmanager
def gc_paused():
    """The cyclic garbage collector paused inside the block (reference counting still frees what is not a
    cycle), for code that builds hundreds of thousands of objects at once: each automatic collection pass
    re-scans every container made so far, which took longer than the work itself (json.loads of a 55 MB
    safetensors header 2.2 s -> 1.1 s). Nested blocks and a collector already off are left as they are."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


FREEZE_ROWS = 50_000
"""Rows of a table kept for the run from which :func:`keep_for_run` freezes the collector's view of it."""


def keep_for_run(rows: int) -> None:
    """Move the objects alive now to the collector's permanent generation (``gc.freeze``) when a table of
    ``rows`` >= :data:`FREEZE_ROWS` rows, kept for the run, has just been built (inside :func:`gc_paused`).
    Paused only, the collector's next passes of generations 0, 1 and 2 each scanned all of a 400,000-Tensor
    table once more (0.65, 0.70 and 0.73 s measured on a loaded 2-core machine) though it holds no reference
    cycle. Frozen objects are still freed by reference counting when dropped; only a reference cycle that was
    already garbage is kept (until ``gc.unfreeze()``)."""
    if rows >= FREEZE_ROWS:
        gc.freeze()


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list) -> dict:
    """``object_pairs_hook``: a JSON object, refused when it names a key twice. ``json.loads`` keeps the last
    value silently, another reader (safetensors' serde, a C++ parser) may keep the first: the file does not
    say one thing."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return d


def _pairs_through_objects(value) -> int:
    """The key-value pairs of ``value``'s objects reachable through objects only (an object inside a list is not
    counted): a lower bound of the pairs the text holds."""
    n, level = 0, [value] if type(value) is dict else []
    while level:  # level by level: one comprehension per depth, not a generator per object
        n += sum(map(len, level))
        level = [v for d in level for v in d.values() if type(v) is dict]
    return n


def _loads(text: str):
    """``json.loads(text)`` refusing duplicate keys (:func:`_unique_keys`), the collector paused for a text over
    1 MiB (:func:`gc_paused`).

    Over 1 MiB the text is parsed first without the hook (a 400,000-entry safetensors header: 1.6 million pairs
    through a Python hook cost about a third of the parse). Every pair of a JSON text has one ``:`` outside its
    strings, and a key given twice keeps one pair of two, so the pairs kept <= the pairs written <= the text's
    ``:`` count; when the pairs kept (counted through objects, :func:`_pairs_through_objects`) equal the ``:``
    count, no key was given twice. Otherwise (a ``:`` inside a string, an object in a list, a repeated key)
    the text is parsed again with the hook, which names the repeated key if there is one."""
    if len(text) < 2**20:
        return json.loads(text, object_pairs_hook=_unique_keys)
    with gc_paused():
        value = json.loads(text)
        if _pairs_through_objects(value) == text.count(":"):
            return value
        return json.loads(text, object_pairs_hook=_unique_keys)


_SKELETON_DROP = bytes(b for b in range(256) if b not in b'"\\[]{}')
_ONE_BRACKET = bytes.maketrans(b"{}", b"[]")


def _json_depth_bytes(data: bytes, cap: int) -> int | None:
    """:func:`json_depth` of the UTF-8 text ``data`` found with whole-text byte operations (no per-character
    Python loop; UTF-8 holds ASCII bytes only as ASCII characters): the quotes and brackets are kept, the
    strings (pairs of quotes) dropped, and the innermost bracket pairs removed pass by pass, one pass per
    level. None, for :func:`json_depth` to count, when that does not apply or is not the whole answer: a
    backslash (escaped quotes), a bracket inside a string, unbalanced brackets, deeper than ``cap``."""
    skel = data.translate(None, _SKELETON_DROP)
    if b"\\" in skel:
        return None
    skel = skel.replace(b'""', b"")
    if b'"' in skel:
        return None
    skel = skel.translate(_ONE_BRACKET)  # json_depth counts [ and { alike
    depth = 0
    while skel:
        shorter = skel.replace(b"[]", b"")
        if depth >= cap or len(shorter) == len(skel):
            return None
        skel, depth = shorter, depth + 1
    return depth


def json_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text (strings skipped), in linear time without recursion."""
    level = deepest = 0
    for m in _BRACKETS.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            level += 1
            deepest = max(deepest, level)
        else:
            level -= 1
    return deepest


INT_GRAMMARS = ("python", "vllm_human", "stoi")
_STOI = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def engine_int(text, flag: str, grammar: str, lo: int | None = None, hi: int | None = None) -> int:
    """An integer flag's value read as its engine reads it, the one reader of every integer flag of every front door
    (issue 25, probe 4: each flag family had its own grammar). ``grammar``:

    - ``"python"``: argparse ``type=int``, i.e. Python's ``int(text)`` (vLLM's integer fields, vllm/engine/arg_utils.py
      0.24 ``get_kwargs``: ``type = int``; SGLang's server_args.py ``type=int``): surrounding whitespace, a sign,
      ``_`` between digits, leading zeros and Unicode decimal digits are accepted (``' 8'``, ``'+8'``, ``'0_8'``,
      ``'٨'`` are 8); anything else is refused;
    - ``"vllm_human"``: vLLM's ``human_readable_int`` (vllm/utils/argparse_utils.py 0.24: ``max_num_batched_tokens``,
      ``kv_cache_memory_bytes``; ``max_model_len`` with ``-1`` / ``auto`` first): the stripped text, a number and one
      suffix (``k m g t`` decimal, ``25.6k`` = 25,600; ``K M G T`` binary, integers only), else ``int()`` as above;
    - ``"stoi"``: llama.cpp's ``std::stoi`` (common/arg.cpp): C ``isspace`` characters, a sign, ASCII digits; no digit
      (``std::invalid_argument``) or a value past a 32-bit int (``std::out_of_range``) is refused as llama.cpp refuses
      it, and so is text after the digits, which stoi does not read (``'8k'`` is 8 to llama-server, ``'1_000'`` 1):
      a line whose number llama.cpp reads otherwise than it is written is refused naming both, not priced.

    Then ``lo <= value <= hi`` (when given). KvMathError, one line naming ``flag``."""
    if not isinstance(text, str) or len(text) > 200:
        raise KvMathError(f"{flag} takes an integer, got {_short(text, 40)}")
    if grammar == "stoi":
        m = _STOI.match(text)
        if not m:
            raise KvMathError(f"{flag} takes an integer (llama.cpp reads it with std::stoi: digits after optional "
                              f"spaces and a sign), got {_short(text, 40)}")
        n, rest = int(m.group(1)), text[m.end():]
        if rest.strip(" \t\n\v\f\r"):  # stoi stops there: '8k' is 8, '1_000' is 1, '0x10' is 0
            raise KvMathError(f"{flag} takes an integer in ASCII digits: llama.cpp's std::stoi reads {_short(text, 40)} "
                              f"as {n} and ignores {_short(rest, 20)}")
        if not -2**31 <= n < 2**31:
            raise KvMathError(f"{flag} takes a 32-bit integer (std::stoi: {-2**31:,} to {2**31 - 1:,}), got "
                              f"{_short(text, 40)}")
    elif grammar in ("python", "vllm_human"):
        value = text.strip() if grammar == "vllm_human" else text
        m = _HUMAN.fullmatch(value) if grammar == "vllm_human" else None
        try:
            if m and m.group(2) in "kmgt":
                n = int(float(m.group(1)) * {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[m.group(2)])
            elif m:
                try:
                    n = int(m.group(1)) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[m.group(2)]
                except ValueError:
                    raise KvMathError(f"{flag}: decimals are not allowed with binary suffixes like {m.group(2)} "
                                      f"(vLLM: use {m.group(1)}{m.group(2).lower()} instead)") from None
            else:
                n = int(value)
        except KvMathError:
            raise
        except (ValueError, OverflowError):
            example = " (e.g. 8192, 8k, 16K)" if grammar == "vllm_human" else ""
            raise KvMathError(f"{flag} takes an integer{example}, got {_short(text, 40)}") from None
    else:
        raise ValueError(f"unknown integer grammar {grammar!r}; known: {INT_GRAMMARS}")
    if lo is not None and n < lo:
        raise KvMathError(f"{flag} must be >= {lo:,}, got {n:,}")
    if hi is not None and n > hi:
        raise KvMathError(f"{flag} must be <= {hi:,}, got {n:,}")
    return n
