"""Ground-truth KV-cache bytes from a real (scaled-down) transformers model.

Test helper for KV_MATH.  ``transformers_cache_bytes(config, batch=..., seq_len=...)``
takes a Hugging Face ``config.json`` dict, builds a *randomly initialised, text-only*
transformers model in which every field that shapes the cache is kept exactly as in
the dict while everything that does not (hidden size, MLP / MoE widths, expert
count, vocabulary, vision / audio towers) is shrunk, runs one prefill forward pass
(plus optional single-token decode steps) on the CPU with ``use_cache=True`` and
measures what the returned ``past_key_values`` object actually holds.

Nothing is downloaded: the model is built with ``AutoModelForCausalLM.from_config``.

Developed and checked against transformers 5.23.0 / torch 2.13.0 (CPU).  In that
version (``transformers/cache_utils.py``) the per-layer cache objects hold:

* ``DynamicLayer`` (full attention):  ``keys``, ``values``
  ``[batch, kv_heads, tokens, head_dim]``.
* ``DynamicSlidingWindowLayer`` (sliding / chunked attention): ``keys``, ``values``,
  truncated to the last ``sliding_window - 1`` tokens after every update (they are
  *views* into the concatenated full tensor, see ``storage_bytes``), plus a 0-d
  ``_sliding_window_tensor`` (an int64 holding the window: 8 bytes, counted).
* ``DynamicIndexedLayer`` (DSA): ``keys``, ``values``, ``indexer_keys``.
* ``LinearAttentionLayer`` (GDN / KDA / Mamba2 / short conv): dicts
  ``conv_states{state_idx: tensor}`` and ``recurrent_states{state_idx: tensor}``.
* ``LinearAttentionAnd*AttentionLayer`` (hybrid): both of the above.
* ``DummyLayer`` (KV-shared consumer layers, MLP / MoE-only blocks): nothing
  (``keys = values = None``).
* Quantized layers: ``keys``/``values`` residual + ``_quantized_keys``/``_quantized_values``.

Unknown layer classes are handled generically: every ``torch.Tensor`` found in the
layer's ``__dict__`` (directly, or inside a dict / list / tuple) with at least one
dimension is counted; 0-d tensors and the names in ``_BOOKKEEPING_ATTRS`` are listed
under ``"ignored"`` and not counted.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

__all__ = ["transformers_cache_bytes", "build_small_text_config", "CACHE_FIELDS"]

# Fields that (can) shape a KV / state cache.  They are never touched by the shrinking
# below; after the config object is built they are compared to the input dict and any
# difference is reported in ``result["config_check"]``.
CACHE_FIELDS = (
    "num_hidden_layers",
    "layer_types",
    "full_attention_interval",
    "num_key_value_heads",
    "head_dim",
    "num_global_key_value_heads",
    "global_head_dim",
    "attention_k_eq_v",
    "num_kv_shared_layers",
    "sliding_window",
    "attention_chunk_size",
    "use_sliding_window",
    "max_window_layers",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
    "mamba_ssm_dtype",
    "mamba_ssm_cache_dtype",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "linear_attn_config",
    "hybrid_override_pattern",
    "mamba_num_heads",
    "mamba_head_dim",
    "ssm_state_size",
    "n_groups",
    "conv_kernel",
    "expand",
    "state_size",
    "no_rope_layers",
    "no_rope_layer_interval",
    "index_head_dim",
    "conv_L_cache",
    "full_attn_idxs",
    "attn_layer_period",
    "attn_layer_offset",
    "mamba_d_state",
    "mamba_d_conv",
    "mamba_expand",
    "sliding_window_pattern",
)

# Non-cache sizes: shrunk to these values (only if present and larger).
_SHRINK_TO = {
    "hidden_size": 64,
    "intermediate_size": 64,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "moe_shared_expert_intermediate_size": 32,
    "expert_intermediate_size": 32,
    "q_lora_rank": 32,  # MLA query low-rank: never cached
    "vocab_size": 256,
    "vocab_size_per_layer_input": 256,
    "hidden_size_per_layer_input": 16,  # Gemma PLE width (0 stays 0)
}
_NUM_EXPERTS_KEYS = ("num_experts", "n_routed_experts", "num_local_experts")
_TOPK_KEYS = ("num_experts_per_tok", "top_k_experts", "experts_per_token", "num_experts_per_token", "moe_topk")
_GROUP_KEYS = ("n_group", "num_expert_group", "topk_group")
_SMALL_EXPERTS = 4
_SMALL_TOPK = 2
_SMALL_MLA_HEADS = 8
# Keys removed from the dict before building the config.
_DROP_KEYS = (
    "quantization_config",  # fp8 / mxfp4 checkpoints: we build plain random weights
    "auto_map",  # never use remote code
    "transformers_version",
    "architectures",
    "torch_dtype",
    "dtype",
    "vision_config",
    "audio_config",
    "_name_or_path",
)
_TOKEN_ID_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id")
# Model types whose hidden_size is part of the cache (state width = expand * hidden_size).
_HIDDEN_IS_CACHE_RELEVANT = ("mamba", "mamba2", "falcon_mamba", "falcon_h1", "bamba", "granitemoehybrid", "zamba", "zamba2", "jamba",
                             "lfm2", "lfm2_moe", "lfm3")

# Layer attributes that are bookkeeping, not cache state.
_BOOKKEEPING_ATTRS = frozenset(
    {
        "cumulative_length",
        "cumulative_length_int",
        "indexer_cumulative_length",
        "indexer_position_ids",
        "_pending_beam_idx",
        "device",
        "dtype",
    }
)

_TOWER_SUFFIX = "_text"
# Models whose forward fills a past_key_values it is given but returns a CausalLMOutput without one (transformers
# 5.23 RecurrentGemmaForCausalLM); their recurrent state lives on the modules (``module_states=True``).
# Granite4VisionTextModel returns the past_key_values it was given (None unless generate() or the caller makes one).
_CACHE_NOT_RETURNED = ("recurrent_gemma", "granite4_vision_text")


def _text_part(config: dict) -> tuple[dict, str | None]:
    """Return (text_config_dict, model_type) for plain or nested configs."""
    if "text_config" in config and isinstance(config["text_config"], dict):
        text = copy.deepcopy(config["text_config"])
        mt = text.get("model_type")
        if not mt:
            top = config.get("model_type")
            mt = f"{top}{_TOWER_SUFFIX}" if top else None
        # a few fields sometimes live only at the top level
        for k in ("tie_word_embeddings",):
            if k not in text and k in config:
                text[k] = config[k]
        return text, mt
    text = copy.deepcopy(config)
    return text, text.get("model_type")


def _class_head_dim(model_type: str, text: dict) -> int | None:
    """``head_dim`` as transformers' config class sets it for the full-size ``text`` (a class default such as
    Qwen3Config's 128, or its own ``__post_init__`` rule), or None when the class has none or cannot be built."""
    import warnings

    from transformers import AutoConfig

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hd = getattr(AutoConfig.for_model(model_type, **{k: v for k, v in text.items() if k != "model_type"}),
                         "head_dim", None)
    except Exception:  # noqa: BLE001 - a config the class rejects keeps the old rule
        return None
    return hd if isinstance(hd, int) and not isinstance(hd, bool) and hd > 0 else None


def build_small_text_config(
    config: dict, *, dtype: str = "bfloat16", overrides: dict | None = None, shrink_mla_heads: bool = True
):
    """Build a shrunk transformers ``PreTrainedConfig`` for the text model.

    Returns ``(config_object, model_type, applied_changes, text_dict_original)``.
    """
    from transformers import AutoConfig

    text, model_type = _text_part(config)
    original = copy.deepcopy(text)
    if model_type is None:
        raise ValueError("config has no model_type")
    changes: dict[str, Any] = {}

    for k in _DROP_KEYS:
        if k in text:
            text.pop(k)

    # Preserve an implicit head_dim (hidden_size // num_attention_heads) before shrinking hidden_size.
    if (
        text.get("head_dim") is None
        and isinstance(text.get("hidden_size"), int)
        and isinstance(text.get("num_attention_heads"), int)
        and text["num_attention_heads"] > 0
        and "kv_lora_rank" not in text  # MLA has its own head dims
        and model_type != "falcon"  # FalconConfig.head_dim is a read-only property (hidden_size / heads)
    ):
        # the width the config class itself gives (Qwen3Config: 128 whatever hidden / heads), else hidden / heads
        text["head_dim"] = _class_head_dim(model_type, text) or text["hidden_size"] // text["num_attention_heads"]
        changes["head_dim"] = f"made explicit: {text['head_dim']}"

    shrink = dict(_SHRINK_TO)
    if model_type in _HIDDEN_IS_CACHE_RELEVANT:
        shrink.pop("hidden_size")
        if not model_type.startswith("lfm2"):  # LFM2's conv state is hidden_size wide; its MLP is not cached
            shrink.pop("intermediate_size")
    for k, small in shrink.items():
        v = text.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > small:
            text[k] = small
            changes[k] = f"{v} -> {small}"

    for k in _NUM_EXPERTS_KEYS:
        v = text.get(k)
        if isinstance(v, int) and v > _SMALL_EXPERTS:
            text[k] = _SMALL_EXPERTS
            changes[k] = f"{v} -> {_SMALL_EXPERTS}"
    for k in _TOPK_KEYS:
        v = text.get(k)
        if isinstance(v, int) and v > _SMALL_TOPK:
            text[k] = _SMALL_TOPK
            changes[k] = f"{v} -> {_SMALL_TOPK}"
    for k in _GROUP_KEYS:
        v = text.get(k)
        if isinstance(v, int) and v > 1:
            text[k] = 1
            changes[k] = f"{v} -> 1"

    # MLA (DeepSeek-V3 / Kimi): transformers 5.23 caches the compressed latent
    # ([b, 1, t, kv_lora_rank] + [b, 1, t, qk_rope_head_dim]), so the number of
    # query heads does not shape the cache, but kv_b_proj (kv_lora_rank x heads x 256)
    # dominates build time.  Shrink heads unless asked not to.
    if shrink_mla_heads and text.get("kv_lora_rank"):
        for k in ("num_attention_heads", "num_key_value_heads"):
            v = text.get(k)
            if isinstance(v, int) and v > _SMALL_MLA_HEADS:
                text[k] = _SMALL_MLA_HEADS
                changes[k] = f"{v} -> {_SMALL_MLA_HEADS} (MLA: latent cache is head-independent)"

    vocab = text.get("vocab_size", 256)
    for k in _TOKEN_ID_KEYS:
        v = text.get(k)
        if isinstance(v, int) and v >= vocab:
            text[k] = min(vocab - 1, 2)
            changes[k] = f"{v} -> {text[k]}"
        elif isinstance(v, list) and any(isinstance(x, int) and x >= vocab for x in v):
            text[k] = [x if x < vocab else min(vocab - 1, 2) for x in v]
            changes[k] = f"{v} -> {text[k]}"

    if overrides:
        for k, v in overrides.items():
            changes[k] = f"{text.get(k)!r} -> {v!r} (caller override)"
            text[k] = v

    text.pop("model_type", None)
    cfg = AutoConfig.for_model(model_type, **text)
    cfg.use_cache = True
    return cfg, model_type, changes, original


def _config_check(original: dict, cfg, overrides: dict | None, changes: dict | None = None) -> list[dict]:
    """Compare cache-relevant fields of the input dict with the built config.

    Uses ``cfg.to_dict()`` (transformers 5.x raises on direct access to per-layer
    attributes of heterogeneous configs such as Gemma 4), falling back to
    ``getattr``.  Fields that the config class folds into ``per_layer_config``
    (Gemma 4: ``global_head_dim``, ``num_global_key_value_heads``) are checked there;
    fields that are converted into ``layer_types`` (``full_attention_interval``,
    ``hybrid_override_pattern``) are checked against ``layer_types``.  Fields that
    were changed on purpose (listed in ``changes``) are skipped.
    """
    built = cfg.to_dict()
    plc = built.get("per_layer_config") or {}
    changes = changes or {}

    def get(k):
        if k in built:
            return built[k]
        try:
            return getattr(cfg, k)
        except Exception:
            return "<missing>"

    out = []
    for k in CACHE_FIELDS:
        if k not in original or k in changes:
            continue
        want = (overrides or {}).get(k, original[k])
        got = get(k)
        if k == "num_global_key_value_heads" and (overrides or {}).get(
            "attention_k_eq_v", original.get("attention_k_eq_v")
        ) is False:
            # Gemma 4 (5.23) applies num_global_key_value_heads only when attention_k_eq_v
            # is true; otherwise global layers use num_key_value_heads.
            vals = sorted({v.get("num_key_value_heads") for v in plc.values() if isinstance(v, dict)} - {None})
            got = vals[0] if len(vals) == 1 else "<ignored by transformers: attention_k_eq_v=false, global layers use num_key_value_heads>"
        elif k in ("global_head_dim", "num_global_key_value_heads") and plc:
            sub = "head_dim" if k == "global_head_dim" else "num_key_value_heads"
            vals = sorted({v.get(sub) for v in plc.values() if isinstance(v, dict) and sub in v})
            got = vals[0] if len(vals) == 1 else (vals or "<not in per_layer_config>")
        elif got == "<missing>" and k == "full_attention_interval":
            lt = list(get("layer_types") or [])
            exp = ["full_attention" if (i + 1) % want == 0 else "linear_attention" for i in range(len(lt))]
            got = want if lt == exp else f"layer_types={lt}"
        elif got == "<missing>" and k == "hybrid_override_pattern":
            lt = list(get("layer_types") or [])
            sym = {"M": ("mamba", "linear_attention"), "*": ("attention", "full_attention"),
                   "E": ("moe",), "-": ("mlp",)}
            ok = len(lt) == len(want) and all(t in sym.get(c, ()) for c, t in zip(want, lt))
            got = want if ok else f"layer_types={lt}"
        elif got == "<missing>" and k == "num_hidden_layers":
            lt = get("layer_types")
            got = len(lt) if isinstance(lt, (list, tuple)) else got
        if got != want and not (isinstance(got, (list, tuple)) and list(got) == want):
            out.append({"field": k, "input": want, "built": got if _jsonable(got) else repr(got)})
    return out


def _per_layer_overrides(cfg) -> dict | None:
    try:
        plc = cfg.to_dict().get("per_layer_config")
    except Exception:  # pragma: no cover
        return None
    return plc or None


def _jsonable(x) -> bool:
    try:
        json.dumps(x)
        return True
    except Exception:
        return False


def _iter_tensors(obj, prefix: str):
    """Yield (name, tensor) for tensors directly in obj or nested in dict/list/tuple."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _iter_tensors(v, f"{prefix}[{k}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _iter_tensors(v, f"{prefix}[{i}]")


def _tensor_identity(t) -> tuple:
    """Identity of the exact view (same storage, offset, shape, stride, dtype)."""
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # pragma: no cover
        ptr = id(t)
    return (ptr, t.storage_offset(), tuple(t.shape), tuple(t.stride()), str(t.dtype))


def _storage_key_and_bytes(t) -> tuple[int, int]:
    try:
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    except Exception:  # pragma: no cover
        return id(t), t.numel() * t.element_size()


def describe_cache(cache) -> dict:
    """Measure a transformers Cache object. Returns the ``layers``/``total_bytes`` part."""
    layers_out = []
    seen: dict[tuple, tuple[int, str]] = {}
    seen_storage: dict[int, int] = {}
    total = 0
    total_storage = 0
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise TypeError(f"cache object {type(cache).__name__} has no .layers (legacy tuple cache?)")
    for i, layer in enumerate(layers):
        entry: dict[str, Any] = {"index": i, "class": type(layer).__name__, "tensors": {}, "bytes": 0}
        if getattr(layer, "sliding_window", None) is not None:
            entry["sliding_window"] = layer.sliding_window
        for attr in ("cumulative_length", "cumulative_length_int"):
            v = getattr(layer, attr, None)
            if isinstance(v, int):
                entry["seen_tokens"] = v
        ignored = []
        for attr, val in sorted(vars(layer).items()):
            for name, t in _iter_tensors(val, attr):
                if attr in _BOOKKEEPING_ATTRS or (t.dim() == 0 and attr != "_sliding_window_tensor"):
                    ignored.append(name)
                    continue
                nbytes = t.numel() * t.element_size()
                skey, sbytes = _storage_key_and_bytes(t)
                info = {
                    "shape": list(t.shape),
                    "dtype": str(t.dtype),
                    "bytes": nbytes,
                    "storage_bytes": sbytes,
                }
                ident = _tensor_identity(t)
                if ident in seen:
                    owner_layer, owner_name = seen[ident]
                    info["shared_with"] = {"index": owner_layer, "tensor": owner_name}
                    info["counted"] = False
                else:
                    seen[ident] = (i, name)
                    info["counted"] = True
                    entry["bytes"] += nbytes
                    total += nbytes
                    if skey not in seen_storage:
                        seen_storage[skey] = sbytes
                        total_storage += sbytes
                entry["tensors"][name] = info
        if ignored:
            entry["ignored"] = ignored
        layers_out.append(entry)
    total += _linear_cache_entries(cache, layers_out)
    extra = {}
    for attr, val in vars(cache).items():
        if attr in ("layers", "linear_cache"):
            continue
        for name, t in _iter_tensors(val, attr):
            if t.dim() > 0:
                extra[name] = {"shape": list(t.shape), "dtype": str(t.dtype), "bytes": t.numel() * t.element_size()}
    out = {"layers": layers_out, "total_bytes": total, "total_storage_bytes": total_storage}
    if extra:
        out["cache_level_tensors_not_counted"] = extra
    return out


def _linear_cache_entries(cache, layers_out: list[dict]) -> int:
    """MiniMax's lightning-attention states: ``MiniMaxCache.linear_cache[layer_idx]`` (models/minimax, transformers
    5.23) lives on the cache object, not in ``cache.layers``; each tensor is counted in its layer's entry (entries
    are added for indices past ``cache.layers``). Returns the bytes added."""
    added = 0
    for i, t in enumerate(getattr(cache, "linear_cache", None) or []):
        if not hasattr(t, "numel") or t.dim() == 0:
            continue  # a skipped (full-attention) layer holds []
        while len(layers_out) <= i:
            layers_out.append({"index": len(layers_out), "class": "none", "tensors": {}, "bytes": 0})
        nbytes = t.numel() * t.element_size()
        layers_out[i]["tensors"]["linear_cache"] = {"shape": list(t.shape), "dtype": str(t.dtype), "bytes": nbytes,
                                                    "storage_bytes": nbytes, "counted": True}
        layers_out[i]["bytes"] += nbytes
        added += nbytes
    return added


def transformers_cache_bytes(
    config: dict,
    *,
    batch: int,
    seq_len: int,
    dtype: str = "bfloat16",
    decode_steps: int = 0,
    overrides: dict | None = None,
    seed: int = 0,
    threads: int | None = None,
    attn_implementation: str | None = None,
    shrink_mla_heads: bool = True,
    module_states: bool = False,
) -> dict:
    """Run a scaled-down random transformers model and measure its cache.

    Args:
        config: HF ``config.json`` as a dict (plain, or nested with ``text_config``;
            only the text part is used).  Cache-relevant fields are honoured as given,
            so pass e.g. a reduced ``sliding_window`` in the dict (or via ``overrides``)
            to make short sequences cross the window.
        batch: number of sequences.
        seq_len: prefill length (random token ids).
        dtype: torch dtype name for the model weights / activations.
        decode_steps: number of single-token forward passes after the prefill.
        overrides: extra keys set on the *text* config after shrinking (e.g.
            ``{"sliding_window": 16}`` or ``{"num_hidden_layers": 8, "layer_types": [...]}``).
        seed: RNG seed for weights and token ids.
        threads: if given, ``torch.set_num_threads(threads)``.
        attn_implementation: passed to ``from_config``; ``None`` lets transformers pick
            (sdpa where supported, eager otherwise, e.g. gemma2 / gpt_oss).
        shrink_mla_heads: for MLA configs (``kv_lora_rank`` set) reduce
            ``num_attention_heads``/``num_key_value_heads`` to 8; the transformers
            MLA cache is the head-independent latent, and this cuts DeepSeek-V3's
            build from ~15 s to ~2 s.  Set False to keep the real head count.

    Returns a dict with ``layers`` (per layer: index, class, tensors{name: shape,
    dtype, bytes, storage_bytes, counted[, shared_with]}, bytes), ``total_bytes``
    (sum of numel*element_size over distinct cache tensors), ``total_storage_bytes``
    (bytes of the distinct underlying storages; larger than total_bytes when a
    tensor is a view of a bigger buffer, e.g. sliding-window slices after prefill),
    ``transformers_version``, ``torch_version``, ``model_class``, ``model_type``,
    ``changes`` (what was shrunk), ``config_check`` (cache fields that differ
    between the input and the built config; should be empty), ``tokens_seen`` and
    ``timings``.
    """
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    if threads is not None:
        torch.set_num_threads(threads)
    torch_dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    t0 = time.perf_counter()
    cfg, model_type, changes, original = build_small_text_config(
        config, dtype=dtype, overrides=overrides, shrink_mla_heads=shrink_mla_heads
    )
    torch.manual_seed(seed)
    kw = {"attn_implementation": attn_implementation} if attn_implementation else {}
    try:
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch_dtype, **kw)
    except ValueError:
        # a multimodal wrapper's text config (Qwen3-VL, Qwen2.5-VL) has no *ForCausalLM of its own: its base
        # text model (AutoModel) builds the same decoder layers and the same cache
        from transformers import AutoModel

        try:
            model = AutoModel.from_config(cfg, dtype=torch_dtype, **kw)
        except ValueError:
            # a text config registered only as a wrapper's sub-config (Step3p7TextConfig, model_type step3p5): the
            # text model class beside it in the same models/<family> package (Step3p7TextModel)
            import importlib

            module = importlib.import_module(type(cfg).__module__.replace(".configuration_", ".modeling_"))
            name = type(cfg).__name__.replace("Config", "Model")
            # the Qwen-Omni thinkers' text model: Qwen2_5OmniTextConfig -> Qwen2_5OmniThinkerTextModel
            model_cls = getattr(module, name, None) or getattr(module, name.replace("TextModel", "ThinkerTextModel"))
            model = model_cls._from_config(cfg, dtype=torch_dtype, **kw)
    model.eval()
    t1 = time.perf_counter()

    vocab = int(getattr(model.config, "vocab_size", 256) or 256)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (batch, seq_len), generator=gen)
    with torch.no_grad():
        if model_type in _CACHE_NOT_RETURNED:  # the model fills a cache it is given but returns none
            from transformers import DynamicCache

            given = DynamicCache(config=model.config)
            out = model(input_ids=ids, use_cache=True, past_key_values=given)
            out.past_key_values = given
        else:
            out = model(input_ids=ids, use_cache=True)
        # Mamba-1 models (models/mamba, falcon_mamba) return their cache as ``cache_params``
        key = "cache_params" if getattr(out, "past_key_values", None) is None and \
            getattr(out, "cache_params", None) is not None else "past_key_values"
        cache = getattr(out, key)
        t2 = time.perf_counter()
        for _ in range(decode_steps):
            nxt = torch.randint(0, vocab, (batch, 1), generator=gen)
            out = model(input_ids=nxt, use_cache=True, **{key: cache})
            cache = getattr(out, key, None) if model_type not in _CACHE_NOT_RETURNED else cache
    t3 = time.perf_counter()

    if cache is None:
        raise RuntimeError(f"{type(model).__name__} returned no past_key_values")
    res = describe_cache(cache)
    res.update(
        {
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
            "model_class": type(model).__name__,
            "attn_implementation": getattr(model.config, "_attn_implementation", None),
            "cache_class": type(cache).__name__,
            "model_type": model_type,
            "batch": batch,
            "seq_len": seq_len,
            "decode_steps": decode_steps,
            "tokens_seen": seq_len + decode_steps,
            "dtype": str(torch_dtype),
            "changes": changes,
            "config_check": _config_check(original, model.config, overrides, changes),
            "per_layer_config": _per_layer_overrides(model.config),
            "num_parameters": sum(p.numel() for p in model.parameters()),
            "timings": {
                "build_s": round(t1 - t0, 3),
                "prefill_s": round(t2 - t1, 3),
                "decode_s": round(t3 - t2, 3),
                "total_s": round(t3 - t0, 3),
            },
        }
    )
    if module_states:
        res["module_states"] = _module_states(model)
    del model
    return res


def _module_states(model) -> dict[int, int]:
    """Bytes of the state tensors decoder layer i keeps as plain module attributes, outside ``past_key_values``
    (not parameters or buffers: RecurrentGemma's ``conv1d_state`` and ``rg_lru.recurrent_states``), by layer."""
    import torch

    layers = getattr(getattr(model, "model", model), "layers", [])
    out = {}
    for i, layer in enumerate(layers):
        total = 0
        for mod in layer.modules():
            for name, value in vars(mod).items():
                if isinstance(value, torch.Tensor) and not name.startswith("_") and value.dim() >= 1:
                    total += value.numel() * value.element_size()
        out[i] = total
    return out


def summarize(res: dict) -> list[dict]:
    """Group consecutive-or-not layers with an identical tensor signature (for reports)."""
    groups: dict[str, dict] = {}
    for L in res["layers"]:
        sig = json.dumps(
            {"class": L["class"], "t": {k: [v["shape"], v["dtype"], v.get("counted", True)] for k, v in L["tensors"].items()}},
            sort_keys=True,
        )
        g = groups.setdefault(sig, {"class": L["class"], "tensors": L["tensors"], "layers": [], "bytes_each": L["bytes"]})
        g["layers"].append(L["index"])
    return list(groups.values())


if __name__ == "__main__":  # pragma: no cover - manual use
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=40)
    ap.add_argument("--decode-steps", type=int, default=0)
    ap.add_argument("--sliding-window", type=int, default=None)
    ap.add_argument("--dtype", default="bfloat16")
    a = ap.parse_args()
    with open(a.config) as f:
        conf = json.load(f)
    ov = {"sliding_window": a.sliding_window} if a.sliding_window else None
    r = transformers_cache_bytes(conf, batch=a.batch, seq_len=a.seq_len, dtype=a.dtype, decode_steps=a.decode_steps, overrides=ov)
    for g in summarize(r):
        print(g["class"], "layers", g["layers"], "bytes_each", g["bytes_each"])
        for n, t in g["tensors"].items():
            print("   ", n, t["shape"], t["dtype"], t["bytes"], "storage", t["storage_bytes"], "" if t.get("counted", True) else "SHARED")
    print("total_bytes", r["total_bytes"], "total_storage_bytes", r["total_storage_bytes"])
    print("changes", r["changes"])
    print("config_check", r["config_check"])
    print("timings", r["timings"], "params", r["num_parameters"], r["model_class"], r["cache_class"])


# --- encoder-decoder caches (Whisper): a self-contained path, the function above is untouched ----------------------

_WHISPER_CACHE_FIELDS = ("decoder_layers", "decoder_attention_heads", "d_model", "max_source_positions")
_WHISPER_SHRINK = {"encoder_layers": 1, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "vocab_size": 256}


def whisper_cache_bytes(config: dict, *, batch: int, seq_len: int, dtype: str = "float32", decode_steps: int = 0,
                        seed: int = 0, threads: int | None = None) -> dict:
    """The real ``EncoderDecoderCache`` of a shrunk random ``WhisperForConditionalGeneration`` (transformers 5.23).

    The decoder's cache-shaping keys (``_WHISPER_CACHE_FIELDS``) are kept; the encoder is cut to one layer and the
    MLPs and vocabulary shrunk (they shape no cache). ``input_features`` are random mel frames of the one length the
    encoder accepts (``num_mel_bins x 2 x max_source_positions``); ``seq_len`` random decoder tokens are the prefill,
    then ``decode_steps`` single tokens. Returns ``layers`` (per decoder layer: ``self`` and ``cross`` bytes summed
    in ``bytes``, the tensors of both named ``self.*`` / ``cross.*``), ``total_bytes``, ``config_check`` (kept keys
    the built config changed; should be empty), ``cache_class`` and ``encoder_frames`` (the cross K/V length)."""
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    if threads is not None:
        torch.set_num_threads(threads)
    torch_dtype = getattr(torch, dtype)
    cfg = {k: v for k, v in config.items() if k not in _DROP_KEYS and k not in ("num_hidden_layers",
                                                                                 "forced_decoder_ids")}
    cfg.update(_WHISPER_SHRINK)
    for k in _TOKEN_ID_KEYS + ("decoder_start_token_id",):
        cfg[k] = 1
    cfg["suppress_tokens"], cfg["begin_suppress_tokens"] = None, None
    built = WhisperConfig(**{k: v for k, v in cfg.items() if k != "model_type"})
    check = [{"field": k, "input": config.get(k), "built": getattr(built, k)} for k in _WHISPER_CACHE_FIELDS
             if k in config and config[k] != getattr(built, k)]
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(built).to(torch_dtype).eval()
    gen = torch.Generator().manual_seed(seed)
    feats = torch.randn(batch, built.num_mel_bins, 2 * built.max_source_positions, generator=gen).to(torch_dtype)
    ids = torch.randint(0, built.vocab_size, (batch, seq_len), generator=gen)
    with torch.no_grad():
        out = model(input_features=feats, decoder_input_ids=ids, use_cache=True)
        cache, enc = out.past_key_values, out.encoder_last_hidden_state
        for _ in range(decode_steps):
            nxt = torch.randint(0, built.vocab_size, (batch, 1), generator=gen)
            cache = model(encoder_outputs=(enc,), decoder_input_ids=nxt, past_key_values=cache,
                          use_cache=True).past_key_values
    parts = {"self": describe_cache(cache.self_attention_cache), "cross": describe_cache(cache.cross_attention_cache)}
    layers = []
    for i in range(built.decoder_layers):
        entry = {"index": i, "class": "EncoderDecoderCache", "tensors": {}, "bytes": 0}
        for part, res in parts.items():
            layer = res["layers"][i]
            entry["bytes"] += layer["bytes"]
            entry["tensors"].update({f"{part}.{n}": t for n, t in layer["tensors"].items()})
        layers.append(entry)
    return {"layers": layers, "total_bytes": sum(r["total_bytes"] for r in parts.values()),
            "config_check": check, "cache_class": type(cache).__name__, "encoder_frames": int(enc.shape[1]),
            "dtype": str(torch_dtype), "tokens_seen": seq_len + decode_steps}
