"""Family rules for hybrid and state-space decoders added in issue 20's fifth batch (one rule per family).

Each rule reads a config as transformers 5.23 builds it (``models/<family>/configuration_*.py``
``__post_init__`` and ``cache_utils.get_layer_types_and_kwargs``) and refuses, in one line, a key that would
change the layout and that it does not model. tests/test_families.py checks every rule against transformers'
real caches on the CPU. The engines price these layers by their spec kinds only where their own model files
were read; the others refuse the family (``kvmath.engines.base.UNCHECKED_MODEL_TYPES``). Registered into
``kvmath.model.hf``'s registry by ``@_family``.
"""

from __future__ import annotations

from ..errors import KvMathError, choices
from ..validate import MAX_LAYERS
from .hf import _Config, _arch, _family, _head_dim, _kv_heads, _no_window, _window
from .specs import (
    CONV, FULL, HYBRID, LINEAR, SLIDING, AttentionLayer, AttentionMamba2Layer, GatedDeltaNetLayer, KDALayer,
    Mamba2Layer, MLALayer, RGLRULayer, ShortConvLayer,
)


@_family("olmo_hybrid")
def _olmo_hybrid(c: _Config, name: str, source: str):
    """OLMo Hybrid (``olmo_hybrid``, AllenAI): Gated DeltaNet layers with full attention between them.

    transformers 5.23 ``OlmoHybridConfig.__post_init__``: ``layer_types`` when given (``linear_attention`` /
    ``full_attention``), else full attention iff ``i % 4 == 3`` and, when that leaves none, the last layer; at
    least one of each kind (``validate_architecture``). Attention: ``num_key_value_heads`` (None: the heads) x
    (``head_dim`` or ``hidden_size / num_attention_heads``, modeling_olmo_hybrid.py ``OlmoHybridAttention``), no
    window. Gated DeltaNet (``OlmoHybridGatedDeltaNet``): ``linear_num_key_heads`` / ``linear_num_value_heads``
    (None: ``num_attention_heads``), ``linear_key_head_dim`` (None: ``int(0.75 x hidden_size / key heads)``),
    ``linear_value_head_dim`` (None: ``2 x key head dim``), conv over ``2 x key_dim + value_dim`` channels of
    ``linear_conv_kernel_dim`` (4) columns, cached as Qwen3-Next's (``update_conv_state`` /
    ``update_recurrent_state``). vLLM 0.24 (olmo_hybrid.py) sizes the same Gated DeltaNet state
    (``gated_delta_net_state_shape`` / ``_dtype`` from the same keys) and attention heads of ``hidden_size //
    num_attention_heads``, so it is priced generically unless ``head_dim`` says otherwise (then refused for vLLM);
    llama.cpp refuses it (``UNCHECKED_MODEL_TYPES``). Raises KvMathError for a missing ``num_hidden_layers`` / ``hidden_size`` /
    ``num_attention_heads``, a ``sliding_window``, other layer types, or value heads that are not whole groups
    of key heads.
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    hidden = c.int("hidden_size")
    _no_window(c)
    types = c.layer_types(n, (FULL, LINEAR))
    if types is None:
        types = [FULL if i % 4 == 3 else LINEAR for i in range(n)]
        if FULL not in types:
            types[-1] = FULL
    if LINEAR not in types or FULL not in types:
        raise KvMathError("olmo_hybrid layer_types needs at least one linear_attention and one full_attention layer "
                          "(OlmoHybridConfig.validate_architecture)")
    kv = _kv_heads(c, heads)
    head_dim = _head_dim(c)
    nk, nv = c.int("linear_num_key_heads", heads), c.int("linear_num_value_heads", heads)
    if nv % nk:
        raise KvMathError(f"olmo_hybrid linear_num_value_heads {nv} is not a multiple of linear_num_key_heads {nk}; "
                          "Gated DeltaNet repeats each key head over whole groups of value heads")
    dk = c.int("linear_key_head_dim", int(0.75 * hidden / nk))
    dv = c.int("linear_value_head_dim", 2 * dk)
    kernel = c.int("linear_conv_kernel_dim", 4)
    layers = [AttentionLayer(i, FULL, kv, head_dim, head_dim) if t == FULL else
              GatedDeltaNetLayer(i, nk, nv, dk, dv, kernel) for i, t in enumerate(types)]
    refusals = ()
    if hidden % heads or head_dim != hidden // heads:
        # vllm/model_executor/models/olmo_hybrid.py (0.24.0) OlmoHybridAttention: head_dim = hidden_size //
        # num_attention_heads, after assert hidden_size % num_attention_heads == 0; it never reads head_dim
        refusals = (("vllm", f"vLLM 0.24's OlmoHybridAttention caches hidden_size // num_attention_heads = "
                             f"{hidden // heads} wide heads (and asserts they divide), not head_dim {head_dim}"),)
    return _arch(c, name, source, layers, heads, engine_refusals=refusals)


_LEGACY_TYPES = {"mamba": LINEAR, "attention": FULL}
"""transformers 5.23 ``configuration_utils.remap_legacy_layer_types`` (the names a layer list may still use); a
Zamba2 ``hybrid`` layer is a shared transformer block followed by a Mamba-2 mixer."""
_ZAMBA2_DEFAULT = [LINEAR] + ([LINEAR] * 5 + [HYBRID]) * 7 + [LINEAR] * 4 + [HYBRID] + [LINEAR] * 3 + [HYBRID] + \
    [LINEAR] * 2
"""Zamba2Config's 54-layer ``layers_block_type`` when the config gives none (transformers 5.23)."""


def _zamba2_types(c: _Config, n: int) -> list[str]:
    """Layer types of a Zamba2 config: ``layers_block_type`` (or its alias ``layer_types``, Zamba2Config's
    attribute_map), else the class's 54-layer default, which only a 54-layer config can take."""
    listed = [c.raw(k) for k in ("layers_block_type", "layer_types") if c.has(k)]
    if len(listed) == 2 and listed[0] != listed[1]:
        raise KvMathError("zamba2 config sets both layers_block_type and layer_types, differently; they name the "
                          "same field (Zamba2Config.attribute_map) and must agree")
    if not listed:
        if n != len(_ZAMBA2_DEFAULT):
            raise KvMathError(f"zamba2 config has no layers_block_type, and Zamba2Config's default pattern has "
                              f"{len(_ZAMBA2_DEFAULT)} layers, not num_hidden_layers {n}: write it out")
        return list(_ZAMBA2_DEFAULT)
    value = listed[0]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KvMathError("zamba2 config field layers_block_type must be a list of strings")
    if len(value) != n:
        raise KvMathError(f"zamba2 layers_block_type has {len(value)} entries but num_hidden_layers is {n}; they "
                          "must agree")
    value = [_LEGACY_TYPES.get(v, v) for v in value]
    bad = sorted(set(value) - {LINEAR, HYBRID})
    if bad:
        raise KvMathError(f"zamba2 layers_block_type contains {choices(bad)}; Zamba2Model builds only "
                          f"{choices([HYBRID, LINEAR])} ('mamba') layers")
    return value


@_family("zamba2")
def _zamba2(c: _Config, name: str, source: str):
    """Zamba2 (``zamba2``, Zyphra): a Mamba-2 mixer on every layer, and on ``hybrid`` layers a shared attention block
    before it, so a hybrid layer keeps both K/V and a Mamba-2 state (:class:`AttentionMamba2Layer`; transformers
    5.23 caches it in one ``LinearAttentionAndFullAttentionLayer``).

    transformers 5.23 ``Zamba2Config.__post_init__`` derives ``attention_head_dim = 2 x hidden_size //
    num_attention_heads`` (the shared block attends over the concatenated ``2 x hidden_size`` input) and
    ``mamba_headdim = int(mamba_expand x hidden_size) // n_mamba_heads``, but a value the config writes wins (the
    extra keys are set after, by ``PreTrainedConfig.__post_init__``; ``head_dim`` is ``attention_head_dim``'s alias,
    and of the two the key written last wins: checked on 5.23, so two different values are refused); ``num_key_value_heads`` None is the heads. The mixer (modeling_zamba2.py ``Zamba2MambaMixer``): width ``int(mamba_expand x hidden_size)``,
    ``n_mamba_heads`` (8), ``mamba_d_state`` (64), ``mamba_ngroups`` (1), ``mamba_d_conv`` (4): the class defaults
    transformers fills in, read here as it does. The shared blocks' weight tying (``num_mem_blocks``) and adapters
    change no cache. Raises KvMathError for a missing ``num_hidden_layers`` / ``hidden_size`` /
    ``num_attention_heads``, a ``sliding_window``, other layer types, or a mixer width the heads do not divide.
    """
    n = c.layer_count()
    types = _zamba2_types(c, n)
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    _no_window(c)
    kv = _kv_heads(c, heads)
    written = {k: c.int(k) for k in ("attention_head_dim", "head_dim") if c.has(k)}
    if len(set(written.values())) > 1:
        raise KvMathError(f"zamba2 config sets attention_head_dim {written['attention_head_dim']} and its alias head_dim "
                          f"{written['head_dim']}; Zamba2Config keeps whichever key comes last, so write one")
    head_dim = next(iter(written.values()), 2 * hidden // heads)
    if head_dim < 1:
        raise KvMathError(f"zamba2 attention_head_dim 2 x hidden_size {hidden} // num_attention_heads {heads} is 0")
    inner = c.int("mamba_expand", 2) * hidden
    m_heads = c.int("n_mamba_heads", 8)
    groups = c.int("mamba_ngroups", 1)
    m_dim = c.int("mamba_headdim") if c.has("mamba_headdim") else inner // m_heads
    if m_heads * m_dim != inner or m_heads % groups:
        raise KvMathError(f"zamba2 n_mamba_heads {m_heads} x mamba_headdim {m_dim} must equal the Mamba width "
                          f"mamba_expand x hidden_size {inner} (Zamba2MambaMixer views it so), in whole groups of "
                          f"mamba_ngroups {groups}")
    state, conv = c.int("mamba_d_state", 64), c.int("mamba_d_conv", 4)
    layers = []
    for i, t in enumerate(types):
        mixer = Mamba2Layer(i, m_heads, m_dim, state, groups, conv)
        layers.append(mixer if t == LINEAR else
                      AttentionMamba2Layer(i, AttentionLayer(i, FULL, kv, head_dim, head_dim), mixer))
    return _arch(c, name, source, layers, heads, mamba_chunk_size=c.int("chunk_size", 256))


@_family("bailing_hybrid")
def _bailing_hybrid(c: _Config, name: str, source: str):
    """Ling 3.0 (``bailing_hybrid``, inclusionAI): Kimi Delta Attention layers with MLA every ``layer_group_size``-th
    layer.

    transformers 5.23 ``BailingHybridConfig.__post_init__``: ``layer_types`` when given, else layer i is
    ``full_attention`` (MLA) iff ``(i + 1) % layer_group_size == 0`` (6); the KDA widths are set from the config's
    ``head_dim`` (128) and ``num_attention_heads`` and its ``short_conv_kernel_size`` (4) as ``linear_head_dim`` /
    ``linear_num_heads`` / ``linear_conv_kernel_dim``, but those three, written, win (set after, by
    ``PreTrainedConfig.__post_init__``), and ``head_dim`` is then overwritten with ``qk_rope_head_dim`` (so a config
    transformers saved holds head_dim 64 and linear_head_dim 128). MLA (modeling_bailing_hybrid.py
    ``BailingHybridAttention``) caches ``kv_nope [B, 1, T, kv_lora_rank]`` (512) and ``k_rot [B, 1, T,
    qk_rope_head_dim]`` (64) as DeepSeek-V3 does; KDA (``BailingHybridDeltaAttention``) one conv state over ``3 x
    heads x head_dim`` channels and a float32 ``[heads, head_dim, head_dim]`` state, as :class:`KDALayer`.
    ``num_nextn_predict_layers`` (alias ``num_mtp_layers``) MTP modules are recorded, not layers. vLLM 0.24 registers
    no class for it and llama.cpp's was not read: both refuse it; SGLang serves no such architecture.
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    _no_window(c)
    types = c.layer_types(n, (FULL, LINEAR))
    if types is None:
        group = c.int("layer_group_size", 6)
        types = [FULL if (i + 1) % group == 0 else LINEAR for i in range(n)]
    kda_heads = c.int("linear_num_heads", heads)
    kda_dim = c.int("linear_head_dim") if c.has("linear_head_dim") else c.int("head_dim", 128)
    kernel = c.int("linear_conv_kernel_dim") if c.has("linear_conv_kernel_dim") else c.int("short_conv_kernel_size", 4)
    mla = {"kv_lora_rank": c.int("kv_lora_rank", 512), "qk_rope_head_dim": c.int("qk_rope_head_dim", 64),
           "qk_nope_head_dim": c.int("qk_nope_head_dim", 128), "v_head_dim": c.int("v_head_dim", 128)}
    layers = [MLALayer(i, **mla) if t == FULL else KDALayer(i, kda_heads, kda_dim, kernel) for i, t in enumerate(types)]
    mtp = [c.int(k, minimum=0, maximum=MAX_LAYERS) for k in ("num_nextn_predict_layers", "num_mtp_layers") if c.has(k)]
    if len(set(mtp)) > 1:
        raise KvMathError(f"bailing_hybrid config sets num_nextn_predict_layers and its alias num_mtp_layers to "
                          f"{mtp[0]} and {mtp[1]}; write one")
    why = "vLLM 0.24 registers no BailingHybrid / BailingMoeV3 model class (model_executor/models/registry.py)"
    return _arch(c, name, source, layers, heads, mtp_num_hidden_layers=mtp[0] if mtp else 1,
                 engine_refusals=(("vllm", why),))


_LFM3_DEFAULTS = {"num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128, "sliding_window": 256,
                  "conv_L_cache": 7}
"""Lfm3Config's class defaults for the keys that shape its cache (transformers 5.23 configuration_lfm3.py): what
transformers builds when a config leaves them out (the KV heads default to 4, not to the heads)."""


@_family("lfm3")
def _lfm3(c: _Config, name: str, source: str):
    """LFM3 (``lfm3``, LiquidAI): gated short convolutions, sliding-window and full GQA attention.

    transformers 5.23 ``Lfm3Config.__post_init__``: ``layer_types`` when given (``conv`` / ``sliding_attention`` /
    ``full_attention``), else full iff ``i % 4 == 2``, sliding iff ``i % 4 == 0 and i > 0``, conv elsewhere.
    ``Lfm3ShortConv``: one conv state ``[B, hidden_size, conv_L_cache]`` (:class:`ShortConvLayer`); ``Lfm3Attention``:
    ``num_key_value_heads`` x ``head_dim``, the sliding layers windowed by ``sliding_window``; class defaults in
    :data:`_LFM3_DEFAULTS`, read as transformers fills them in. A written ``sliding_window`` null with sliding layers
    is refused (transformers would build a window-less sliding cache layer). vLLM 0.24 registers no LFM3 class;
    llama.cpp's was not read: both refuse it.
    """
    n = c.layer_count()
    cfg = dict(c.cfg)
    for key, default in _LFM3_DEFAULTS.items():
        if key not in cfg:
            cfg[key] = default
    r = _Config(cfg, c.model_type)
    types = r.layer_types(n, (CONV, SLIDING, FULL))
    if types is None:
        types = [FULL if i % 4 == 2 else SLIDING if i % 4 == 0 and i > 0 else CONV for i in range(n)]
    if SLIDING in types and not r.has("sliding_window"):
        raise KvMathError("lfm3 config sets sliding_window null but has sliding_attention layers; Lfm3Attention "
                          "would build them without a window")
    heads = r.int("num_attention_heads")
    kv, head_dim = _kv_heads(r, heads), r.int("head_dim")
    window = _window(r) if SLIDING in types else None
    width, kernel = r.int("hidden_size"), r.int("conv_L_cache")
    layers = [ShortConvLayer(i, width, kernel) if t == CONV else
              AttentionLayer(i, t, kv, head_dim, head_dim, window if t == SLIDING else None)
              for i, t in enumerate(types)]
    why = "vLLM 0.24 registers no LFM3 model class (model_executor/models/registry.py)"
    return _arch(r, name, source, layers, heads, engine_refusals=(("vllm", why),))


@_family("hrm_text")
def _hrm_text(c: _Config, name: str, source: str):
    """HRM-Text (``hrm_text``, Sapient): two attention stacks (H and L) iterated ``H_cycles x (L_cycles + 1)`` times
    over the same tokens, each invocation of a layer caching its own K/V.

    transformers 5.23 ``HrmTextConfig.__post_init__``: a config without ``num_layers_per_stack`` carries the real
    per-stack depth in ``num_hidden_layers``; it is remembered as ``num_layers_per_stack`` and ``num_hidden_layers``
    becomes ``num_layers_per_stack x H_cycles x (L_cycles + 1)`` (2 and 3 by default), one ``DynamicLayer`` slot per
    attention invocation (modeling_hrm_text.py: slot ``(h x (L_cycles + 1) + l) x num_layers_per_stack + layer``).
    A config that writes ``num_layers_per_stack`` (one transformers saved) must carry that product already.
    ``HrmTextAttention`` is multi-head (every one of ``num_attention_heads`` heads cached; ``num_key_value_groups =
    1``) of ``head_dim`` (class default 128). Each slot is one full-attention layer here. ``sliding_window``,
    ``attention_chunk_size`` and ``layer_types`` are not HrmTextConfig fields but would shape transformers' cache
    layers if written: refused, as is a ``num_key_value_heads`` other than the heads. vLLM 0.24 (hrm_text.py) and
    llama.cpp were not read for it: both refuse it.
    """
    for key in ("sliding_window", "attention_chunk_size", "layer_types"):
        if c.has(key):
            raise KvMathError(f"hrm_text config sets {key}, which HrmTextConfig does not define but transformers' "
                              "cache would read: remove it")
    heads, hidden = c.int("num_attention_heads"), c.int("hidden_size")
    if hidden % heads:
        raise KvMathError(f"hrm_text hidden_size {hidden} is not a multiple of num_attention_heads {heads} "
                          "(HrmTextConfig.validate_architecture)")
    if c.has("num_key_value_heads") and c.int("num_key_value_heads") != heads:
        raise KvMathError(f"hrm_text num_key_value_heads {c.int('num_key_value_heads')} is not num_attention_heads "
                          f"{heads}: HrmTextAttention caches every head (no GQA)")
    cycles = c.int("H_cycles", 2) * (c.int("L_cycles", 3) + 1)
    per_stack = c.int("num_layers_per_stack", 0, minimum=0)
    slots = c.layer_count() if per_stack else c.layer_count() * cycles
    if per_stack and slots != per_stack * cycles:
        raise KvMathError(f"hrm_text num_hidden_layers {slots} is not num_layers_per_stack {per_stack} x H_cycles x "
                          f"(L_cycles + 1) = {per_stack * cycles}, the cache slots transformers fills")
    if slots > MAX_LAYERS:
        raise KvMathError(f"hrm_text caches {slots} attention invocations; kvmath reads at most {MAX_LAYERS} layers")
    head_dim = c.int("head_dim", 128)
    layers = [AttentionLayer(i, FULL, heads, head_dim, head_dim) for i in range(slots)]
    return _arch(c, name, source, layers, heads)


# --- text decoders of 2026 multimodal wrappers (read as text configs; the wrappers are read elsewhere) ----------


def _no_engine_class(model_type: str, what: str) -> tuple[tuple[str, str], ...]:
    """The vLLM refusal of a text decoder vLLM 0.24 serves only inside its wrapper (or not at all)."""
    return (("vllm", f"vLLM 0.24 registers no {what} text-only model class for {model_type} "
                     "(model_executor/models/registry.py)"),)


@_family("aria_text")
def _aria_text(c: _Config, name: str, source: str):
    """Aria's text decoder (``aria_text``, rhymes-ai/Aria's ``text_config``): full GQA attention on every layer
    (transformers 5.23 ``AriaTextConfig.__post_init__``: ``head_dim`` None is ``hidden_size / num_attention_heads``,
    ``num_key_value_heads`` None the heads; ``validate_architecture`` wants whole heads), MoE MLPs (``moe_num_experts``,
    ``moe_topk``, ``moe_num_shared_experts``) that cache nothing. No window: a ``sliding_window`` is refused. vLLM
    0.24 serves Aria only as ``AriaForConditionalGeneration`` and llama.cpp was not read: both refuse it."""
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    if hidden % heads:
        raise KvMathError(f"aria_text hidden_size {hidden} is not a multiple of num_attention_heads {heads} "
                          "(AriaTextConfig.validate_architecture)")
    n = c.layer_count()
    c.layer_types(n, (FULL,))
    if c.has("sliding_window"):
        raise KvMathError("aria_text config sets sliding_window, which AriaTextConfig does not define but "
                          "transformers' cache would apply to every layer: remove it")
    kv = _kv_heads(c, heads)
    head_dim = _head_dim(c)
    layers = [AttentionLayer(i, FULL, kv, head_dim, head_dim) for i in range(n)]
    return _arch(c, name, source, layers, heads, engine_refusals=_no_engine_class("aria_text", "Aria"))


@_family("cohere_compass_text")
def _cohere_compass_text(c: _Config, name: str, source: str):
    """Cohere Compass's text decoder (``cohere_compass_text``, CohereLabs/North-*-Vision's ``text_config``).

    transformers 5.23 ``CohereCompassTextConfig.__post_init__``: ``layer_types`` when given (``full_attention`` /
    ``sliding_attention``), else every layer full (its ``sliding_window_pattern`` fallback sits after that default
    and never runs, so the key changes nothing); ``num_key_value_heads`` None is the heads; ``head_dim`` is set to
    ``hidden_size // num_attention_heads`` but a written ``head_dim`` wins (set after, by
    ``PreTrainedConfig.__post_init__``). Sliding layers keep ``sliding_window`` (class default 4096) tokens
    (modeling_cohere_compass.py ``CohereCompassTextAttention``). vLLM 0.24 has no Cohere Compass class and
    llama.cpp was not read: both refuse it."""
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    types = c.layer_types(n, (FULL, SLIDING)) or [FULL] * n
    cfg = dict(c.cfg)
    if "sliding_window" not in cfg:
        cfg["sliding_window"] = 4096  # CohereCompassTextConfig's class default
    r = _Config(cfg, c.model_type)
    if SLIDING in types and not r.has("sliding_window"):
        raise KvMathError("cohere_compass_text config sets sliding_window null but has sliding_attention layers")
    kv, head_dim = _kv_heads(r, heads), _head_dim(r)
    window = _window(r) if SLIDING in types else None
    layers = [AttentionLayer(i, t, kv, head_dim, head_dim, window if t == SLIDING else None)
              for i, t in enumerate(types)]
    return _arch(r, name, source, layers, heads, engine_refusals=_no_engine_class("cohere_compass_text", "Cohere"))


@_family("recurrent_gemma")
def _recurrent_gemma(c: _Config, name: str, source: str):
    """RecurrentGemma (``recurrent_gemma``, Google's Griffin models): RG-LRU recurrent blocks and local attention.

    transformers 5.23 ``RecurrentGemmaConfig``: ``block_types`` (default ``recurrent, recurrent, attention``) repeated
    to ``num_hidden_layers`` (``layers_block_type``: ``recurrent`` -> linear_attention, ``attention`` ->
    sliding_attention, windowed by ``attention_window_size``, 2048, alias ``sliding_window``); attention
    ``num_key_value_heads`` (None: the heads) x ``hidden_size // num_attention_heads`` (``__post_init__``; a written
    ``head_dim`` wins, being no field); recurrent blocks keep a conv state of ``lru_width`` (None: ``hidden_size``)
    channels over ``conv1d_width - 1`` (class default 4) columns and a float32 ``lru_width`` state
    (:class:`RGLRULayer`). ``layer_types`` / ``layers_block_type`` is a derived property there: a written one is
    refused; the Hub's ``_block_types`` (google/recurrentgemma-*) is no field and is ignored, so it must agree with
    ``block_types``. vLLM, SGLang and llama.cpp have no rule for the RG-LRU kind and refuse it.
    """
    n = c.layer_count()
    for key in ("layer_types", "layers_block_type"):
        if c.has(key):
            raise KvMathError(f"recurrent_gemma config sets {key}; RecurrentGemmaConfig derives it from block_types "
                              "(write block_types instead)")
    blocks = c.raw("block_types", ["recurrent", "recurrent", "attention"])
    if not isinstance(blocks, list) or not blocks or any(b not in ("recurrent", "attention") for b in blocks):
        raise KvMathError("recurrent_gemma block_types must be a non-empty list of 'recurrent' / 'attention'")
    legacy = c.raw("_block_types")
    if legacy is not None and legacy != blocks:
        raise KvMathError(f"recurrent_gemma config sets _block_types {legacy!r}, which transformers 5.23 ignores (it "
                          f"reads block_types, here {blocks!r}): they must agree")
    types = (blocks * (n // len(blocks) + 1))[:n]
    window_keys = [k for k in ("attention_window_size", "sliding_window") if c.has(k)]
    if len({c.int(k) for k in window_keys}) > 1:
        raise KvMathError("recurrent_gemma config sets attention_window_size and its alias sliding_window differently")
    cfg = dict(c.cfg, sliding_window=c.int(window_keys[0]) if window_keys else 2048)
    r = _Config(cfg, c.model_type)
    heads, hidden = r.int("num_attention_heads"), r.int("hidden_size")
    kv = _kv_heads(r, heads)
    head_dim = r.int("head_dim") if r.has("head_dim") else hidden // heads
    window = _window(r)
    lru, kernel = r.int("lru_width", hidden), r.int("conv1d_width", 4)
    if kernel < 2:
        raise KvMathError("recurrent_gemma conv1d_width must be >= 2 (its conv state keeps conv1d_width - 1 columns)")
    layers = [RGLRULayer(i, lru, kernel) if t == "recurrent" else
              AttentionLayer(i, SLIDING, kv, head_dim, head_dim, window) for i, t in enumerate(types)]
    return _arch(r, name, source, layers, heads)
