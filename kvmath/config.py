"""Load a Hugging Face ``config.json`` (path, dict, or a model id kvmath knows) into an Architecture.

Every field is read under its HF key name. Each model family's rules for turning keys into layers
follow transformers 5.23 (``models/<family>/configuration_*.py``), the reference implementation that
the tests run on the CPU. Anything the loader does not understand is an error that names the model
type and the fields it would need: kvmath never guesses dense attention.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .arch import FULL, LINEAR, SLIDING, Architecture, AttentionLayer, GatedDeltaNetLayer
from .errors import KvMathError, choices

DATA_DIR = Path(__file__).parent / "data"

# model_type -> family handler name; filled by the @_family decorator below.
_FAMILIES: dict[str, Any] = {}


def _family(*model_types):
    def register(fn):
        for model_type in model_types:
            _FAMILIES[model_type] = fn
        return fn

    return register


def supported_model_types() -> list[str]:
    """The ``model_type`` values the loader knows."""
    return sorted(_FAMILIES)


# ---------------------------------------------------------------------------------------------------
# entry points


def known_models() -> dict[str, dict]:
    """The models kvmath ships facts for (``kvmath/data/models/*.json``), by id."""
    out = {}
    for path in sorted((DATA_DIR / "models").glob("*.json")):
        entry = json.loads(path.read_text())
        out[entry["id"]] = entry
    return out


def resolve_model(name: str) -> dict:
    """The data entry of a known model by kvmath id (``qwen3.6-27b``) or HF repo (``Qwen/Qwen3.6-27B``).

    Raises KvMathError listing the known ids.
    """
    models = known_models()
    key = name.strip().lower()
    for entry in models.values():
        if key == entry["id"] or key == entry["hf_repo"].lower():
            return entry
    raise KvMathError(
        f"unknown model {name!r}: not a file and not a known model id; known: {choices(models)} "
        "(or pass the path of a config.json)"
    )


def load_architecture(src: str | Path | dict, *, name: str | None = None) -> Architecture:
    """Build an Architecture from a config.json path, a config dict, or a known model id.

    A config with a ``text_config`` (multimodal wrappers: ``qwen3_5``, ``gemma4``) is read from its
    text part. Raises KvMathError for a missing or unreadable file, malformed JSON, an unknown
    ``model_type`` (naming the fields that would be needed) and impossible values.
    """
    source = ""
    if isinstance(src, dict):
        cfg = src
        source = "config dict"
    else:
        path = Path(src)
        if path.suffix == ".gguf":
            raise KvMathError(f"{path}: GGUF input is not supported yet; pass the model's config.json")
        if path.is_file():
            try:
                cfg = json.loads(path.read_text())
            except json.JSONDecodeError as e:
                raise KvMathError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
            except (OSError, UnicodeDecodeError) as e:
                raise KvMathError(f"{path}: cannot read ({e})") from None
            source = str(path)
            name = name or path.stem
        elif path.suffix == ".json" or path.is_dir():
            raise KvMathError(f"{path}: no such config.json file")
        else:
            entry = resolve_model(str(src))
            cfg = entry["config"]
            name = name or entry["id"]
            source = f"{entry['hf_repo']}@{entry['revision'][:12]} config.json ({entry['source']})"
    if not isinstance(cfg, dict):
        raise KvMathError(f"config must be a JSON object, got {type(cfg).__name__}")
    text = cfg.get("text_config")
    if text is not None:
        if not isinstance(text, dict):
            raise KvMathError("config field text_config must be an object")
        outer = cfg
        cfg = dict(text)
        # Wrappers carry dtype and model_type at the top level on older exports.
        cfg.setdefault("dtype", outer.get("dtype") or outer.get("torch_dtype"))
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise KvMathError("config has no model_type; it is needed to know the layer layout")
    family = _FAMILIES.get(model_type)
    if family is None:
        raise KvMathError(
            f"model_type {model_type!r} is not supported: kvmath would need its per-layer cache layout "
            "(layer_types, num_key_value_heads, head_dim, sliding_window, and any state fields); "
            f"supported: {choices(supported_model_types())}"
        )
    return family(_Config(cfg, model_type), name or model_type, source)


# ---------------------------------------------------------------------------------------------------
# field access with clear errors


class _Config:
    def __init__(self, cfg: dict, model_type: str):
        self.cfg = cfg
        self.model_type = model_type

    def has(self, key):
        return self.cfg.get(key) is not None

    def raw(self, key, default=None):
        value = self.cfg.get(key)
        return default if value is None else value

    def int(self, key, default: int | None = None, *, minimum: int = 1) -> int:
        value = self.cfg.get(key)
        if value is None:
            if default is None:
                raise KvMathError(f"{self.model_type} config is missing {key} (a positive integer)")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise KvMathError(f"config field {key} must be an integer, got {value!r}")
        if value < minimum:
            raise KvMathError(f"config field {key} must be >= {minimum}, got {value}")
        return value

    def bool(self, key, default: bool = False) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise KvMathError(f"config field {key} must be true or false, got {value!r}")
        return value

    def dtype(self) -> str:
        value = self.cfg.get("dtype") or self.cfg.get("torch_dtype") or "bfloat16"
        return _dtype_name(value, "dtype")

    def layer_types(self, n_layers: int, allowed: tuple[str, ...]) -> list[str] | None:
        value = self.cfg.get("layer_types")
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise KvMathError("config field layer_types must be a list of strings")
        if len(value) < n_layers:
            raise KvMathError(
                f"layer_types has {len(value)} entries but num_hidden_layers is {n_layers}; they must agree"
            )
        # transformers' layer_type_validation accepts extra entries for MTP layers; only the decoder's count.
        value = value[:n_layers]
        bad = sorted(set(value) - set(allowed))
        if bad:
            raise KvMathError(
                f"{self.model_type} layer_types contains {choices(bad)}; valid layer types: {choices(allowed)}"
            )
        return value


_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
           "half": "float16", "float32": "float32", "fp32": "float32", "float": "float32"}


def _dtype_name(value, key) -> str:
    if not isinstance(value, str) or value.replace("torch.", "") not in _DTYPES:
        raise KvMathError(f"config field {key} must be one of {choices(sorted(set(_DTYPES.values())))}, got {value!r}")
    return _DTYPES[value.replace("torch.", "")]


def _head_dim(c: _Config) -> int:
    if c.has("head_dim"):
        return c.int("head_dim")
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    if hidden % heads:
        raise KvMathError(
            f"config has no head_dim and hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
        )
    return hidden // heads


def _kv_heads(c: _Config, heads: int) -> int:
    kv = c.int("num_key_value_heads", heads)
    if heads % kv:
        raise KvMathError(
            f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}; GQA needs whole groups"
        )
    return kv


def _arch(c: _Config, name, source, layers, heads, **kw) -> Architecture:
    return Architecture(
        name=name,
        model_type=c.model_type,
        layers=tuple(layers),
        num_attention_heads=heads,
        dtype=c.dtype(),
        max_position_embeddings=c.int("max_position_embeddings", 0, minimum=0) or None,
        source=source,
        **kw,
    )


# ---------------------------------------------------------------------------------------------------
# families


@_family("qwen3_5_text", "qwen3_5_moe_text", "qwen3_next")
def _qwen_gdn(c: _Config, name: str, source: str) -> Architecture:
    """Qwen3-Next and Qwen 3.5 / 3.6: full attention every ``full_attention_interval`` layers, GDN elsewhere.

    transformers 5.23 ``Qwen3_5TextConfig`` / ``Qwen3NextConfig``: when ``layer_types`` is absent,
    layer i is full attention iff ``(i + 1) % full_attention_interval == 0``.
    """
    n = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    head_dim = _head_dim(c)
    types = c.layer_types(n, (FULL, LINEAR))
    if types is None:
        interval = c.int("full_attention_interval", 4)
        types = [FULL if (i + 1) % interval == 0 else LINEAR for i in range(n)]
    nk, nv = c.int("linear_num_key_heads"), c.int("linear_num_value_heads")
    if nv % nk:
        raise KvMathError(
            f"linear_num_value_heads {nv} is not a multiple of linear_num_key_heads {nk}; "
            "Gated DeltaNet repeats each key head over whole groups of value heads"
        )
    dk, dv = c.int("linear_key_head_dim"), c.int("linear_value_head_dim")
    kernel = c.int("linear_conv_kernel_dim", 4)
    layers = []
    for i, t in enumerate(types):
        if t == FULL:
            layers.append(AttentionLayer(i, FULL, kv, head_dim, head_dim))
        else:
            layers.append(GatedDeltaNetLayer(i, nk, nv, dk, dv, kernel))
    ssm = c.raw("mamba_ssm_dtype")
    return _arch(
        c, name, source, layers, heads,
        mamba_ssm_dtype=_dtype_name(ssm, "mamba_ssm_dtype") if ssm is not None else None,
        mtp_num_hidden_layers=c.int("mtp_num_hidden_layers", 0, minimum=0),
    )


@_family("gemma4_text")
def _gemma4(c: _Config, name: str, source: str) -> Architecture:
    """Gemma 4: sliding and full layers with their own KV heads and head widths, optional KV sharing.

    transformers 5.23 ``Gemma4TextConfig.__post_init__``: full layers use ``global_head_dim``
    (default 512) and, when ``attention_k_eq_v`` is true, ``num_global_key_value_heads``; the last
    layer is always full; the last ``num_kv_shared_layers`` layers read the cache of the last earlier
    layer of the same type (``kv_sharing_modes``).
    """
    n = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    head_dim = _head_dim(c)
    global_dim = c.int("global_head_dim", 512)
    k_eq_v = c.bool("attention_k_eq_v", False)
    global_kv = c.int("num_global_key_value_heads", kv) if k_eq_v else kv
    if heads % global_kv:
        raise KvMathError(
            f"num_attention_heads {heads} is not a multiple of num_global_key_value_heads {global_kv}"
        )
    if c.raw("use_bidirectional_attention") == "all":
        raise KvMathError("gemma4 with use_bidirectional_attention 'all' (an encoder) keeps no KV cache to size")
    window = c.int("sliding_window")
    types = c.layer_types(n, (FULL, SLIDING))
    if types is None:
        types = [SLIDING if (i + 1) % 6 else FULL for i in range(n)]
    types[-1] = FULL
    shared = c.int("num_kv_shared_layers", 0, minimum=0)
    if shared >= n:
        raise KvMathError(f"num_kv_shared_layers {shared} must be smaller than num_hidden_layers {n}")
    first_shared = n - shared
    producers = {}
    for i in range(first_shared):
        producers[types[i]] = i
    layers = []
    for i, t in enumerate(types):
        source_layer = None
        if i >= first_shared:
            if t not in producers:
                raise KvMathError(
                    f"layer {i} ({t}) shares KV but no earlier non-shared layer of type {t} produces it"
                )
            source_layer = producers[t]
        if t == FULL:
            layers.append(AttentionLayer(i, FULL, global_kv, global_dim, global_dim, None, k_eq_v, source_layer))
        else:
            layers.append(AttentionLayer(i, SLIDING, kv, head_dim, head_dim, window, False, source_layer))
    return _arch(c, name, source, layers, heads)


@_family("llama", "mistral", "qwen2", "qwen3", "gemma2", "gpt_oss")
def _dense(c: _Config, name: str, source: str) -> Architecture:
    """Softmax attention on every layer, some layers windowed.

    Window rules, as transformers 5.23 builds ``layer_types``: ``mistral`` windows every layer when
    ``sliding_window`` is set; ``qwen2`` / ``qwen3`` window layers ``>= max_window_layers`` only when
    ``use_sliding_window`` is true; ``gemma2`` alternates sliding (even index) and full;
    ``gpt_oss`` lists ``layer_types``.
    """
    n = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    head_dim = _head_dim(c)
    types = c.layer_types(n, (FULL, SLIDING))
    mt = c.model_type
    if types is None:
        if mt == "mistral" and c.has("sliding_window"):
            types = [SLIDING] * n
        elif mt in ("qwen2", "qwen3") and c.bool("use_sliding_window") and c.has("sliding_window"):
            first = c.int("max_window_layers", n, minimum=0)
            types = [SLIDING if i >= first else FULL for i in range(n)]
        elif mt == "gemma2":
            types = [SLIDING if (i + 1) % 2 else FULL for i in range(n)]
        else:
            types = [FULL] * n
    if mt in ("qwen2", "qwen3") and not c.bool("use_sliding_window"):
        types = [FULL] * n
    window = c.int("sliding_window") if SLIDING in types else None
    layers = [
        AttentionLayer(i, t, kv, head_dim, head_dim, window if t == SLIDING else None) for i, t in enumerate(types)
    ]
    return _arch(c, name, source, layers, heads)


def check_positive(value, what: str) -> int:
    """Validate a user-supplied count (context, sequences, TP): a positive integer, else KvMathError."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise KvMathError(f"{what} must be a positive integer, got {value!r}")
    if value < 1:
        raise KvMathError(f"{what} must be a positive integer, got {value}")
    return value
