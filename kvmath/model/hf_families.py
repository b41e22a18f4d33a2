"""Family rules for the model types added beyond the first reference set (one rule per family).

Each rule reads a config as transformers 5.23 builds it (``models/<family>/configuration_*.py``
``__post_init__`` and ``cache_utils.get_layer_types_and_kwargs``), and refuses what it cannot read exactly:
a window no engine rule has been checked for, a field whose class default transformers would silently fill
in, a layer kind no spec covers. tests/test_families.py checks every rule against transformers' real caches
on the CPU. Registered into ``kvmath.model.hf``'s registry by ``@_family``.
"""

from __future__ import annotations

from ..errors import KvMathError
from ..validate import MAX_LAYERS
from .hf import (
    _WINDOW_UNCHECKED, _Config, _arch, _deepseek_v3, _family, _full_only, _head_dim, _kv_heads, _mla_fields,
    _no_window, _window,
)
from .specs import (
    CHUNKED, CONV, FULL, HYBRID, LINEAR, SLIDING, AttentionLayer, AttentionMamba2Layer, ChunkedAttentionLayer,
    CompressedAttentionLayer, DSALayer, LightningLayer, Mamba1Layer, Mamba2Layer, MLALayer, ShortConvLayer,
)


def _attention_layers(c: _Config, types: list[str], *, head_dim: int | None = None) -> list[AttentionLayer]:
    """Attention layers of ``types`` (full / sliding), ``num_key_value_heads`` x ``head_dim``, the sliding ones
    windowed by ``sliding_window``."""
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    head_dim = head_dim or _head_dim(c)
    window = _window(c) if SLIDING in types else None
    return [AttentionLayer(i, t, kv, head_dim, head_dim, window if t == SLIDING else None) for i, t in enumerate(types)]


def _typed(c: _Config, name, source, default, *, head_dim: int | None = None, mtp_key: str | None = None):
    """A family whose layers are full or sliding attention: ``layer_types`` when given, else ``default(n)``
    (the config class's own ``__post_init__`` rule)."""
    n = c.layer_count()
    types = c.layer_types(n, (FULL, SLIDING)) or default(n)
    layers = _attention_layers(c, types, head_dim=head_dim)
    mtp = c.int(mtp_key, 0, minimum=0, maximum=MAX_LAYERS) if mtp_key else 0
    return _arch(c, name, source, layers, c.int("num_attention_heads"), mtp_num_hidden_layers=mtp)


def _needs_written(c: _Config, key: str, default) -> None:
    """Refuse a config that leaves ``key`` to the config class's default (transformers would fill it in)."""
    if key not in c.cfg:
        raise KvMathError(f"{c.model_type} config has no {key}; transformers' config class would default it to "
                          f"{default!r}: write it out")


# --- plain attention on every layer -------------------------------------------------------------------------

@_family("olmo2", "olmoe", "cohere", "granite", "granitemoe", "granitemoeshared", "ernie4_5_moe",
         "hunyuan_v1_dense", "hunyuan_v1_moe", "gpt_neox", "olmo", "nemotron")
def _plain(c: _Config, name: str, source: str):
    """Full attention on every layer, ``num_key_value_heads`` x (``head_dim`` or ``hidden_size /
    num_attention_heads``), no window: OLMo 2, OLMoE, Command-R (``cohere``), Granite 3 (``granite``,
    ``granitemoe``, ``granitemoeshared``), ERNIE 4.5 MoE, Hunyuan v1, GPT-NeoX / Pythia (``gpt_neox``: no KV-head
    key, every head cached), OLMo 1 (``olmo``) and Nemotron-4 / Minitron (``nemotron``: ``head_dim`` None becomes
    ``hidden_size / num_attention_heads``, ``num_key_value_heads`` None the heads) (transformers 5.23: none of these
    config classes has a ``sliding_window`` or a ``head_dim`` default of its own; the modeling files read
    ``getattr(config, "head_dim", hidden_size // num_attention_heads)``)."""
    return _full_only(c, name, source)


@_family("stablelm")
def _stablelm(c: _Config, name: str, source: str):
    """StableLM (``stablelm``): full attention, ``num_key_value_heads`` x ``hidden_size / num_attention_heads``;
    ``StableLmConfig`` defaults the KV heads to 32 whatever the heads are, so a config must write them."""
    _needs_written(c, "num_key_value_heads", 32)
    return _full_only(c, name, source)


@_family("falcon")
def _falcon(c: _Config, name: str, source: str):
    """Falcon 7B / RW (``falcon``, the original decoder): full attention, head width ``hidden_size /
    num_attention_heads``, one KV head with ``multi_query`` (transformers 5.23 modeling_falcon.py: ``num_kv_heads =
    config.num_kv_heads if (new_decoder_architecture or not multi_query) else 1``; vLLM's
    ``get_total_num_kv_heads`` returns 1 for a multi-query Falcon; llama.cpp's converter writes ``head_count_kv``
    1), every head without it. ``new_decoder_architecture`` (Falcon 40B / 180B) is refused: transformers
    broadcasts K and V to all ``num_attention_heads`` before caching them (``_split_heads``), while vLLM and
    llama.cpp cache ``num_kv_heads``, and kvmath's layers carry one KV-head count. ``multi_query`` must be
    written (FalconConfig defaults it to true)."""
    if c.bool("new_decoder_architecture"):
        raise KvMathError("falcon config sets new_decoder_architecture (Falcon 40B / 180B): transformers caches K and "
                          "V broadcast to every query head while vLLM and llama.cpp cache num_kv_heads; kvmath does "
                          "not price that layout")
    _needs_written(c, "multi_query", True)
    heads = c.int("num_attention_heads")
    kv = 1 if c.bool("multi_query") else c.int("num_kv_heads", heads)
    if kv != 1 and kv != heads:
        raise KvMathError(f"falcon config without multi_query caches every head; num_kv_heads {kv} must be "
                          f"num_attention_heads {heads}")
    cfg = {k: v for k, v in c.cfg.items() if k not in ("num_kv_heads", "num_key_value_heads")}
    cfg["num_key_value_heads"] = kv
    hidden = c.int("hidden_size")
    cfg["intermediate_size"] = c.int("ffn_hidden_size", 4 * hidden)
    return _full_only(_Config(cfg, c.model_type), name, source)


@_family("opt", "bloom")
def _opt_bloom(c: _Config, name: str, source: str):
    """OPT and BLOOM: full attention on every head, head width ``hidden_size / num_attention_heads``, under their
    own key names (transformers 5.23): OPT's MLP width is ``ffn_dim``; BLOOM names the layers and heads ``n_layer``
    and ``n_head`` (``BloomConfig.attribute_map``), the width ``hidden_size`` (or the older ``n_embed``) and has a
    ``4 x hidden_size`` MLP and no position embeddings (ALiBi; vLLM then takes the length from ``seq_length``)."""
    cfg = dict(c.cfg)
    renames = {"ffn_dim": "intermediate_size"} if c.model_type == "opt" else {
        "n_layer": "num_hidden_layers", "n_head": "num_attention_heads", "n_embed": "hidden_size"}
    for old, new in renames.items():
        if c.has(old):
            if c.has(new) and c.cfg[new] != c.cfg[old]:
                raise KvMathError(f"{c.model_type} config sets both {old} and {new}, differently; they name one field")
            cfg[new] = c.cfg[old]
    if c.has("num_key_value_heads"):
        raise KvMathError(f"{c.model_type} config sets num_key_value_heads, which its model does not read: remove it")
    if c.model_type == "bloom":
        cfg["intermediate_size"] = 4 * _Config(cfg, c.model_type).int("hidden_size")
    return _full_only(_Config(cfg, c.model_type), name, source)


@_family("phi")
def _phi(c: _Config, name: str, source: str):
    """Phi-1 / Phi-1.5 / Phi-2 (``phi``): full attention on every layer (transformers 5.23 configuration_phi.py:
    ``num_key_value_heads`` None becomes ``num_attention_heads`` in ``__post_init__``; modeling_phi.py:
    ``head_dim = hidden_size // num_attention_heads``; no window). ``partial_rotary_factor`` rotates part of
    each head and does not change what is cached."""
    return _full_only(c, name, source)


@_family("gemma")
def _gemma(c: _Config, name: str, source: str):
    """Gemma 1 (``gemma``): full attention on every layer, no window. transformers 5.23 configuration_gemma.py
    defaults ``num_key_value_heads`` to 16 and ``head_dim`` to 256, neither derived from the heads or the hidden
    size, so a config must write both (the published ones do: gemma-2b 1 x 256, gemma-7b 16 x 256)."""
    _needs_written(c, "num_key_value_heads", 16)
    return _full_only(c, name, source, head_dim_default=256)


_GPT_KEYS = {"n_embd": "hidden_size", "n_layer": "num_hidden_layers", "n_head": "num_attention_heads",
             "n_positions": "max_position_embeddings"}
"""GPT-2-style key names -> the HF names kvmath reads (transformers 5.23 ``GPT2Config`` / ``GPTJConfig`` /
``GPTBigCodeConfig`` ``attribute_map``)."""
_GPT_DEFAULTS = {"gpt2": (768, 12, 12, 1024), "gptj": (4096, 28, 16, 2048), "gpt_bigcode": (768, 12, 12, 1024),
                 "gpt-sw3": (768, 12, 12, 1024)}
"""The config classes' own defaults of n_embd, n_layer, n_head, n_positions (a config must write them out)."""


@_family("gpt2", "gptj", "gpt_bigcode", "gpt-sw3")
def _gpt2(c: _Config, name: str, source: str):
    """GPT-2, GPT-J and GPTBigCode (StarCoder 1, SantaCoder): full attention on every layer under GPT-2's key names
    (``n_embd``, ``n_layer``, ``n_head``, ``n_positions``; :data:`_GPT_KEYS`), head width ``n_embd / n_head``,
    MLP width ``n_inner`` or ``4 x n_embd`` when null (modeling_gpt2.py / modeling_gptj.py /
    modeling_gpt_bigcode.py, transformers 5.23). KV heads: ``n_head``, and 1 for GPTBigCode with ``multi_query``
    (modeling_gpt_bigcode.py ``kv_heads = 1 if self.multi_query else self.num_heads``; vLLM's
    ``ModelConfig.get_total_num_kv_heads`` returns 1 for ``multi_query``; llama.cpp's converter writes
    ``head_count_kv`` 1). GPT-SW3 (``gpt-sw3``) is GPT-2 (transformers 5.23 ``CONFIG_MAPPING['gpt-sw3']`` is
    ``GPT2Config``, built as ``GPT2LMHeadModel``). A config leaving a size or ``multi_query`` to its class default is
    refused."""
    cfg = dict(c.cfg)
    for (old, new), default in zip(_GPT_KEYS.items(), _GPT_DEFAULTS[c.model_type]):
        _needs_written(c, old, default)
        if c.has(new) and c.cfg[new] != c.cfg[old]:
            raise KvMathError(f"{c.model_type} config sets both {old} {c.cfg[old]!r} and {new} {c.cfg[new]!r}; "
                              "they name the same field (transformers' attribute_map) and must agree")
        cfg[new] = c.cfg[old]
    if c.has("num_key_value_heads"):
        raise KvMathError(f"{c.model_type} config sets num_key_value_heads, which its model does not read: remove it")
    if c.model_type == "gpt_bigcode":
        _needs_written(c, "multi_query", True)
        if c.bool("multi_query"):
            cfg["num_key_value_heads"] = 1
    inner = c.int("n_inner", 0, minimum=1)
    hidden = _Config(cfg, c.model_type).int("hidden_size")
    cfg["intermediate_size"] = inner or 4 * hidden
    return _full_only(_Config(cfg, c.model_type), name, source)


@_family("internlm3", "ernie4_5", "seed_oss", "qwen3_vl_text", "ministral3")
def _plain_head_dim(c: _Config, name: str, source: str):
    """Full attention on every layer with an explicit ``head_dim`` (transformers 5.23: InternLM3Config,
    Ernie4_5Config, SeedOssConfig, Qwen3VLTextConfig and Ministral3Config default it to 128, which is not
    ``hidden_size / num_attention_heads`` for ERNIE 4.5 0.3B or Seed-OSS, so a config without it is refused).
    A ``sliding_window`` (Ministral3Config has the key; the published configs write null) is refused."""
    return _full_only(c, name, source, head_dim_default=128, window=_WINDOW_UNCHECKED)


@_family("qwen3_vl_moe_text")
def _qwen3_vl_moe(c: _Config, name: str, source: str):
    """Qwen3-VL MoE's text decoder: full attention, ``head_dim`` (``Qwen3VLMoeTextConfig`` derives it from
    ``hidden_size / num_attention_heads`` when absent, as ``_head_dim`` does), MoE MLPs."""
    return _full_only(c, name, source)


@_family("phimoe")
def _window_unchecked(c: _Config, name: str, source: str):
    """Phi-3.5-MoE: full attention; a ``sliding_window`` (the published configs set one) is refused:
    transformers 5.23 would window every layer, and kvmath has not checked what vLLM's and llama.cpp's converters
    do with it for this family."""
    return _full_only(c, name, source, window=_WINDOW_UNCHECKED)


@_family("starcoder2")
def _starcoder2(c: _Config, name: str, source: str):
    """StarCoder2: GQA on every layer, head width ``hidden_size / num_attention_heads`` (modeling_starcoder2.py),
    and with a ``sliding_window`` (the published 3B / 7B / 15B configs: 4096) every layer windowed.

    transformers 5.23 builds the cache that way (``Starcoder2Config`` has no ``layer_types``, so cache_utils
    ``get_layer_types_and_kwargs`` makes every layer sliding when the config has a window); vLLM 0.24 too: with no
    ``layer_types`` the model is not interleaved (transformers_utils/config.py ``is_interleaved``), so
    engine/arg_utils.py sets ``CacheConfig.sliding_window`` to the config's and starcoder2.py's ``Attention``
    takes it as the model-level window (layers/attention/attention.py). llama.cpp runs it without one: its
    converter writes no window for ``Starcoder2ForCausalLM`` (conversion/starcoder.py) and src/models/starcoder2.cpp
    reads none (``kvmath.engines.llamacpp.memory.NO_WINDOW_MODEL_TYPES``). ``sliding_window`` null: full."""
    n = c.layer_count()
    return _arch(c, name, source, _attention_layers(c, [SLIDING if c.has("sliding_window") else FULL] * n),
                 c.int("num_attention_heads"))


@_family("phi3")
def _phi3(c: _Config, name: str, source: str):
    """Phi-3 / Phi-3.5 / Phi-4 / Phi-4-mini (``phi3``): GQA on every layer, head width ``hidden_size /
    num_attention_heads`` (modeling_phi3.py).

    With a ``sliding_window`` (Phi-3-mini-4k: 2047) every layer is windowed, as transformers 5.23 builds the
    cache (``get_layer_types_and_kwargs``: no ``layer_types``, so a layer is sliding iff the config has a
    window) and as vLLM applies it (``Phi3ForCausalLM`` is ``LlamaForCausalLM``: the model-level window,
    ``Attention`` ``cache_config.sliding_window``). llama.cpp loads Phi-3 without it (src/llama-model.cpp
    LLM_ARCH_PHI3: "Phi SWA is currently disabled", ggml-org/llama.cpp#13676); that is llama.cpp's rule
    (``kvmath.engines.llamacpp`` lists phi3 among its no-window families). ``sliding_window`` null: full.
    """
    n = c.layer_count()
    types = c.layer_types(n, (FULL, SLIDING))
    if types is None:
        types = [SLIDING if c.has("sliding_window") else FULL] * n
    layers = _attention_layers(c, types)
    return _arch(c, name, source, layers, c.int("num_attention_heads"))


# --- full / sliding patterns ----------------------------------------------------------------------------------

@_family("olmo3")
def _olmo3(c: _Config, name: str, source: str):
    """OLMo 3: ``layer_types``, else sliding except every 4th layer (``Olmo3Config.__post_init__``:
    ``sliding_attention if (i + 1) % 4 != 0``); ``sliding_window`` must be written (the class default 4096)."""
    if c.raw("layer_types") is None or SLIDING in (c.raw("layer_types") or []):
        _needs_written(c, "sliding_window", 4096)
    return _typed(c, name, source, lambda n: [SLIDING if (i + 1) % 4 else FULL for i in range(n)])


@_family("exaone4")
def _exaone4(c: _Config, name: str, source: str):
    """EXAONE 4.0: ``layer_types`` (the published configs write them: 3 sliding then 1 full), else, with an
    integer ``sliding_window_pattern`` p, sliding iff ``(i + 1) % p != 0`` (``Exaone4Config.__post_init__``);
    with ``sliding_window`` null every layer is full. A key left out takes Exaone4Config's class default, as
    transformers 5.23 and vLLM (which builds the same config class) do: ``sliding_window`` 4096,
    ``sliding_window_pattern`` 4 -- so a sparse config without ``layer_types`` is 3 sliding layers to 1 full, not
    all full. A string pattern (``"LLLG"``) without ``layer_types`` is refused: transformers 5.23's rule takes an
    integer; an explicit null pattern beside a window is refused (transformers cannot build it)."""
    if c.raw("layer_types") is None:
        filled = {k: v for k, v in (("sliding_window", 4096), ("sliding_window_pattern", 4)) if k not in c.cfg}
        if filled:
            c = _Config(dict(c.cfg, **filled), c.model_type)
        if not c.has("sliding_window"):
            return _typed(c, name, source, lambda n: [FULL] * n)
        pattern = c.raw("sliding_window_pattern")
        if isinstance(pattern, str):
            raise KvMathError(f"exaone4 config has sliding_window_pattern {pattern!r} and no layer_types; "
                              "transformers 5.23 reads an integer pattern: write layer_types")
        p = c.int("sliding_window_pattern", None, maximum=MAX_LAYERS) if c.has("sliding_window_pattern") else None
        if p is None:
            raise KvMathError("exaone4 config has a sliding_window and a null sliding_window_pattern and no "
                              "layer_types (transformers 5.23 cannot build it): write layer_types")
        return _typed(c, name, source, lambda n: [SLIDING if (i + 1) % p else FULL for i in range(n)])
    return _typed(c, name, source, lambda n: [FULL] * n)


@_family("cohere2")
def _cohere2(c: _Config, name: str, source: str):
    """Command R7B / Command A (``cohere2``): ``layer_types``, else sliding iff ``(i + 1) %
    sliding_window_pattern`` (default 4; ``Cohere2Config.__post_init__``). The head width is always
    ``hidden_size / num_attention_heads`` (``__post_init__`` overwrites ``head_dim``): a config whose
    ``head_dim`` disagrees is refused."""
    heads, hidden = c.int("num_attention_heads"), c.int("hidden_size")
    if hidden % heads:
        raise KvMathError(f"cohere2 hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    if c.has("head_dim") and c.int("head_dim") != hidden // heads:
        raise KvMathError(f"cohere2 config sets head_dim {c.int('head_dim')} but transformers uses hidden_size / "
                          f"num_attention_heads = {hidden // heads}; remove one")
    p = c.int("sliding_window_pattern", 4, maximum=MAX_LAYERS)
    if c.raw("layer_types") is None:
        _needs_written(c, "sliding_window", 4096)
    return _typed(c, name, source, lambda n: [SLIDING if (i + 1) % p else FULL for i in range(n)],
                  head_dim=hidden // heads)


@_family("smollm3")
def _smollm3(c: _Config, name: str, source: str):
    """SmolLM3: full attention (the NoPE layers only drop RoPE). ``SmolLM3Config.__post_init__`` windows the
    NoPE layers when ``use_sliding_window`` is true; kvmath has not checked vLLM's and llama.cpp's rule for
    that, so such a config is refused (the published SmolLM3-3B sets it false)."""
    n = c.layer_count()
    types = c.layer_types(n, (FULL, SLIDING))
    if c.bool("use_sliding_window") or (types and SLIDING in types):
        raise KvMathError(f"smollm3 config windows layers (use_sliding_window / layer_types): {_WINDOW_UNCHECKED}")
    return _typed(c, name, source, lambda n: [FULL] * n)


@_family("qwen2_moe")
def _qwen2_moe(c: _Config, name: str, source: str):
    """Qwen1.5-MoE / Qwen2-57B-A14B (``qwen2_moe``): full attention with ``use_sliding_window`` false (the
    published configs). With it true ``Qwen2MoeConfig.__post_init__`` windows the even layers below
    ``max_window_layers`` (``(i + 1) % 2 and i < max_window_layers``), a rule vLLM's qwen2_moe.py does not
    share: refused."""
    n = c.layer_count()
    types = c.layer_types(n, (FULL, SLIDING))
    if c.bool("use_sliding_window") or (types and SLIDING in types):
        raise KvMathError(f"qwen2_moe config sets use_sliding_window (or sliding layer_types): {_WINDOW_UNCHECKED}")
    cfg = {k: v for k, v in c.cfg.items() if k != "sliding_window"}  # inert without use_sliding_window
    return _full_only(_Config(cfg, c.model_type), name, source)


# --- MLA, DSA ----------------------------------------------------------------------------------------------

@_family("deepseek_v2", "glm4_moe_lite")
def _mla_family(c: _Config, name: str, source: str):
    """DeepSeek-V2 / V2-Lite and GLM-4.7-Flash (``glm4_moe_lite``): MLA on every layer, as DeepSeek-V3
    (transformers 5.23 ``DeepseekV2Attention`` / ``Glm4MoeLiteAttention`` cache the latent as keys and the
    RoPE key as values); ``num_nextn_predict_layers`` is the MTP head."""
    return _deepseek_v3(c, name, source)


@_family("deepseek_v32", "glm_moe_dsa")
def _dsa(c: _Config, name: str, source: str):
    """DeepSeek-V3.2 and GLM-5 (``glm_moe_dsa``): MLA plus DeepSeek Sparse Attention's indexer on every layer.

    transformers 5.23 ``DeepseekV32Config`` / ``GlmMoeDsaConfig``: ``layer_types`` all ``indexed_attention``
    (``DynamicIndexedLayer``: latent keys, RoPE values and ``indexer_keys [B, 1, T, index_head_dim]``).
    ``index_head_dim``, ``index_n_heads`` and ``index_topk`` must be written (class defaults 128, 64, 2048).
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    c.layer_types(n, ("indexed_attention",))
    _no_window(c)
    mla = _mla_fields(c)
    for key, default in (("index_head_dim", 128), ("index_n_heads", 64), ("index_topk", 2048)):
        _needs_written(c, key, default)
    idx = {"index_head_dim": c.int("index_head_dim"), "index_n_heads": c.int("index_n_heads"),
           "index_topk": c.int("index_topk")}
    modes = _indexer_types(c, n) if c.model_type == "glm_moe_dsa" else ["full"] * n
    layers = [DSALayer(i, mla["kv_lora_rank"], mla["qk_rope_head_dim"], **idx, qk_nope_head_dim=mla["qk_nope_head_dim"],
                       v_head_dim=mla["v_head_dim"]) if mode == "full" else
              MLALayer(i, mla["kv_lora_rank"], mla["qk_rope_head_dim"], mla["qk_nope_head_dim"], mla["v_head_dim"])
              for i, mode in enumerate(modes)]
    return _arch(c, name, source, layers, heads,
                 mtp_num_hidden_layers=c.int("num_nextn_predict_layers", 0, minimum=0, maximum=MAX_LAYERS))


def _indexer_types(c: _Config, n: int) -> list[str]:
    """GLM-5's per-layer indexer mode, as transformers 5.23 ``GlmMoeDsaConfig.__post_init__`` derives it:
    ``indexer_types`` ("full" / "shared"), else ``index_topk_pattern`` (a string of F / S, or a list), else
    ``"full" if max(i - index_skip_topk_offset + 1, 0) % max(index_topk_freq, 1) == 0 else "shared"`` (offset 2 and
    freq 1 by default: every layer full). A "shared" layer reuses the previous full layer's top-k and caches no
    indexer keys (modeling_glm_moe_dsa.py ``skip_topk``; GLM-5.2's real cache: 73,728 B against 90,112 B per layer
    at 64 tokens). Raises KvMathError for a list of the wrong length or another mode."""
    modes = c.raw("indexer_types")
    if modes is None:
        pattern = c.raw("index_topk_pattern")
        if isinstance(pattern, str):
            if set(pattern) - {"F", "S"}:
                raise KvMathError(f"glm_moe_dsa index_topk_pattern must be made of F and S, got {pattern[:40]!r}")
            modes = ["full" if ch == "F" else "shared" for ch in pattern]
        elif pattern is not None:
            modes = pattern
        else:
            freq = max(c.int("index_topk_freq", 1, minimum=0), 1)
            offset = c.int("index_skip_topk_offset", 2, minimum=0)
            return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n)]
    if not isinstance(modes, list) or len(modes) < n or set(modes[:n]) - {"full", "shared"}:
        raise KvMathError(f"glm_moe_dsa indexer_types must list 'full' or 'shared' for each of the {n} layers")
    return list(modes[:n])


# --- Llama 4: chunked attention -------------------------------------------------------------------------

@_family("llama4_text")
def _llama4(c: _Config, name: str, source: str):
    """Llama 4 Scout / Maverick text decoder: chunked local attention on the RoPE layers, full on the NoPE ones.

    transformers 5.23 ``Llama4TextConfig.__post_init__``: ``no_rope_layers`` (1 = RoPE; default: 0 every
    ``no_rope_layer_interval``-th layer, interval 4), ``layer_types[i] = chunked_attention if no_rope_layers[i]
    else full_attention``; ``attention_chunk_size`` (8192 in the published configs) is the chunk.
    ``head_dim`` must be written (class default 128).
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    _needs_written(c, "head_dim", 128)
    head_dim = c.int("head_dim")
    types = c.layer_types(n, (FULL, CHUNKED))
    if types is None:
        rope = c.raw("no_rope_layers")
        if rope:
            if not isinstance(rope, list) or len(rope) < n or any(v not in (0, 1) for v in rope[:n]):
                raise KvMathError(f"llama4 no_rope_layers must be a list of {n} zeros and ones")
        else:
            interval = c.int("no_rope_layer_interval", 4, maximum=MAX_LAYERS)
            rope = [int((i + 1) % interval != 0) for i in range(n)]
        types = [CHUNKED if r else FULL for r in rope[:n]]
    _no_window(c)
    chunk = None
    if CHUNKED in types:
        _needs_written(c, "attention_chunk_size", 8192)
        chunk = c.int("attention_chunk_size")
        if chunk < 2:
            raise KvMathError(f"llama4 attention_chunk_size must be >= 2 tokens, got {chunk}")
    layers = [ChunkedAttentionLayer(i, kv, head_dim, head_dim, chunk) if t == CHUNKED else
              AttentionLayer(i, FULL, kv, head_dim, head_dim) for i, t in enumerate(types)]
    return _arch(c, name, source, layers, heads)


# --- Gemma 3n: sliding / full with KV sharing -------------------------------------------------------------

@_family("gemma3n_text")
def _gemma3n(c: _Config, name: str, source: str):
    """Gemma 3n (E2B / E4B) text decoder: sliding and full layers, the last ``num_kv_shared_layers`` reading the
    cache of the last earlier non-shared layer of their type.

    transformers 5.23 ``Gemma3nTextConfig.__post_init__``: ``layer_types`` default full iff ``(i + 1) % 5 ==
    0``; ``head_dim`` (default 256) and ``sliding_window`` (default 512) must be written;
    ``configuration_gemma3n.py`` ``kv_sharing`` maps each shared layer to ``first_shared_layer - 1 -
    reversed_unshared.index(type)``. AltUp, per-layer inputs and activation sparsity do not change the cache.
    vLLM skips the RoPE scaling for model types containing gemma3 (``_get_and_verify_max_len``).
    """
    from .specs import AttentionLayer as A

    for key, default in (("head_dim", 256), ("sliding_window", 512)):
        _needs_written(c, key, default)
    c = _Config({k: v for k, v in c.cfg.items() if k != "rope_scaling"}, c.model_type)
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    types = c.layer_types(n, (FULL, SLIDING)) or [FULL if (i + 1) % 5 == 0 else SLIDING for i in range(n)]
    base = _attention_layers(c, types, head_dim=c.int("head_dim"))
    shared = c.int("num_kv_shared_layers", 0, minimum=0)
    if shared >= n:
        raise KvMathError(f"num_kv_shared_layers {shared} must be smaller than num_hidden_layers {n}")
    first = n - shared
    producer = {t: i for i, t in enumerate(types[:first])}
    layers = []
    for layer in base:
        if layer.index >= first:
            if layer.layer_type not in producer:
                raise KvMathError(f"gemma3n layer {layer.index} ({layer.layer_type}) shares KV but no earlier "
                                  f"non-shared layer of that type produces it")
            layer = A(layer.index, layer.layer_type, layer.num_kv_heads, layer.head_dim, layer.v_head_dim,
                      layer.sliding_window, False, producer[layer.layer_type])
        layers.append(layer)
    return _arch(c, name, source, layers, heads)


# --- state-space and convolution hybrids -------------------------------------------------------------------

@_family("mamba", "falcon_mamba")
def _mamba1(c: _Config, name: str, source: str):
    """Mamba-1 (``mamba``, ``falcon_mamba``): a Mamba-1 mixer on every layer, no attention.

    transformers 5.23 ``MambaConfig`` / ``FalconMambaConfig.__post_init__``: ``intermediate_size =
    int(expand * hidden_size)`` (overwriting a written one: a config whose ``intermediate_size`` disagrees is
    refused), ``state_size``, ``conv_kernel``; every layer ``linear_attention``.
    """
    n = c.layer_count()
    for key, default in (("expand", 2), ("state_size", 16), ("conv_kernel", 4)):
        _needs_written(c, key, default)
    inner = c.int("expand") * c.int("hidden_size")
    if c.has("intermediate_size") and c.int("intermediate_size") != inner:
        raise KvMathError(f"{c.model_type} config sets intermediate_size {c.int('intermediate_size')} but "
                          f"transformers uses expand * hidden_size = {inner}; remove one")
    layers = [Mamba1Layer(i, inner, c.int("state_size"), c.int("conv_kernel")) for i in range(n)]
    arch = _arch(c, name, source, layers, 0 if not c.has("num_attention_heads") else c.int("num_attention_heads"))
    return arch


@_family("jamba")
def _jamba(c: _Config, name: str, source: str):
    """Jamba: attention every ``attn_layer_period`` layers from ``attn_layer_offset``, Mamba-1 elsewhere.

    transformers 5.23 ``JambaConfig.layers_block_type``: ``attention if i % attn_layer_period ==
    attn_layer_offset else mamba`` (both must be written; class defaults 8 and 4); Mamba-1 widths
    ``mamba_expand * hidden_size``, ``mamba_d_state``, ``mamba_d_conv``; attention ``num_key_value_heads`` x
    ``hidden_size / num_attention_heads``. A ``sliding_window`` is refused.
    """
    n = c.layer_count()
    for key, default in (("attn_layer_period", 8), ("attn_layer_offset", 4), ("mamba_expand", 2),
                         ("mamba_d_state", 16), ("mamba_d_conv", 4)):
        _needs_written(c, key, default)
    period = c.int("attn_layer_period", maximum=MAX_LAYERS)
    offset = c.int("attn_layer_offset", minimum=0, maximum=MAX_LAYERS)
    if c.has("sliding_window"):
        raise KvMathError(f"jamba config sets sliding_window {c.raw('sliding_window')!r}: {_WINDOW_UNCHECKED}")
    types = [FULL if i % period == offset else LINEAR for i in range(n)]
    if FULL not in types:
        raise KvMathError(f"jamba attn_layer_offset {offset} >= attn_layer_period {period}: no attention layer")
    attn = {a.index: a for a in _attention_layers(c, [FULL] * n)}
    inner = c.int("mamba_expand") * c.int("hidden_size")
    layers = [attn[i] if t == FULL else Mamba1Layer(i, inner, c.int("mamba_d_state"), c.int("mamba_d_conv"))
              for i, t in enumerate(types)]
    return _arch(c, name, source, layers, c.int("num_attention_heads"))


@_family("lfm2", "lfm2_moe")
def _lfm2(c: _Config, name: str, source: str):
    """LFM2 / LFM2-MoE: gated short-convolution layers and GQA attention layers.

    transformers 5.23 ``Lfm2Config.__post_init__``: ``layer_types`` (``conv`` / ``full_attention``), else full
    attention at ``full_attn_idxs`` (default: every layer) and conv elsewhere; ``Lfm2MoeConfig`` has no
    ``full_attn_idxs`` and leaves ``layer_types`` None (its model then fails), so LFM2-MoE needs ``layer_types``; conv state ``[B, hidden_size,
    conv_L_cache]`` (``Lfm2ShortConv``); attention ``num_key_value_heads`` x ``hidden_size /
    num_attention_heads``. ``conv_L_cache`` must be written (class default 3).
    """
    n = c.layer_count()
    types = c.layer_types(n, (FULL, CONV))
    if types is None and c.model_type == "lfm2_moe":
        raise KvMathError("lfm2_moe config needs layer_types (conv / full_attention per layer): transformers 5.23 "
                          "Lfm2MoeConfig has no full_attn_idxs and derives no layout (Lfm2MoeDecoderLayer reads "
                          "config.layer_types[i]), nor does vLLM's lfm2_moe.py")
    if types is None:
        idx = c.raw("full_attn_idxs")
        if idx is None:
            raise KvMathError(f"{c.model_type} config needs layer_types (conv / full_attention per layer) or "
                              "full_attn_idxs; transformers would make every layer attention")
        if not isinstance(idx, list) or not all(isinstance(i, int) and 0 <= i < n for i in idx):
            raise KvMathError(f"{c.model_type} full_attn_idxs must be layer indices in [0, {n})")
        types = [FULL if i in set(idx) else CONV for i in range(n)]
    _needs_written(c, "conv_L_cache", 3)
    _no_window(c)
    attn = {a.index: a for a in _attention_layers(c, [FULL] * n)} if FULL in types else {}
    width, kernel = c.int("hidden_size"), c.int("conv_L_cache")
    layers = [attn[i] if t == FULL else ShortConvLayer(i, width, kernel) for i, t in enumerate(types)]
    return _arch(c, name, source, layers, c.int("num_attention_heads"))



# --- Mamba-2 families, Falcon-H1's parallel hybrid, MiniMax-Text-01's lightning attention ---------------------

def _mamba2_mixer(c: _Config, i: int, *, heads_key: str, head_dim_key: str, state_key: str, groups_key: str,
                  conv_key: str, intermediate: int) -> Mamba2Layer:
    """Layer ``i``'s Mamba-2 mixer from the family's key names; ``intermediate`` is the mixer width the config
    class derives. A head width of ``"auto"`` (or none) is ``intermediate / heads``, as ``FalconH1Config`` /
    ``BambaConfig.__post_init__`` set it; heads x head width must be the width (their ``validate_architecture``),
    the heads whole groups of ``n_groups``."""
    heads = c.int(heads_key)
    raw_dim = c.raw(head_dim_key, "auto")
    if raw_dim == "auto":
        if intermediate % heads:
            raise KvMathError(f"{c.model_type} {heads_key} {heads} does not divide the Mamba width {intermediate}")
        head_dim = intermediate // heads
    else:
        head_dim = c.int(head_dim_key)
    if heads * head_dim != intermediate:
        raise KvMathError(f"{c.model_type} {heads_key} {heads} x {head_dim_key} {head_dim} must equal the Mamba "
                          f"width {intermediate} (transformers' validate_architecture)")
    groups = c.int(groups_key)
    if heads % groups:
        raise KvMathError(f"{c.model_type} {heads_key} {heads} is not a multiple of {groups_key} {groups}; Mamba-2 "
                          "shares B and C over whole groups of heads")
    return Mamba2Layer(i, heads, head_dim, c.int(state_key), groups, c.int(conv_key))


@_family("mamba2")
def _mamba2(c: _Config, name: str, source: str):
    """Mamba-2 (``mamba2``, e.g. the ``-hf`` conversions of state-spaces/mamba2-*, Mamba-Codestral): a Mamba-2 mixer
    on every layer, no attention (transformers 5.23 ``Mamba2Config.layer_types``: all ``linear_attention``;
    ``Mamba2Mixer``: ``intermediate_size = int(expand * hidden_size)`` = ``num_heads x head_dim``, conv over
    ``intermediate + 2 * n_groups * state_size`` channels, SSM ``[num_heads, head_dim, state_size]``).
    ``num_heads``, ``head_dim``, ``state_size``, ``n_groups``, ``expand`` and ``conv_kernel`` must be written
    (class defaults 128, 64, 128, 8, 2, 4); ``chunk_size`` (default 256) is the SSD chunk. llama.cpp keeps the
    states in its recurrent memory (``llama_memory_recurrent``, R and S f32); kvmath's vLLM plan needs an attention
    layer and refuses it, SGLang serves no Mamba2ForCausalLM."""
    n = c.layer_count()
    for key, default in (("num_heads", 128), ("head_dim", 64), ("state_size", 128), ("n_groups", 8), ("expand", 2),
                         ("conv_kernel", 4)):
        _needs_written(c, key, default)
    inner = c.int("expand") * c.int("hidden_size")
    layers = [_mamba2_mixer(c, i, heads_key="num_heads", head_dim_key="head_dim", state_key="state_size",
                            groups_key="n_groups", conv_key="conv_kernel", intermediate=inner) for i in range(n)]
    return _arch(c, name, source, layers, 0, mamba_chunk_size=c.int("chunk_size", 256))


def _bamba_types(c: _Config, n: int) -> list[str]:
    """Bamba's layer kinds: ``full_attention`` at ``attn_layer_indices``, ``linear_attention`` elsewhere
    (``BambaConfig.layers_block_type``; no indices: every layer Mamba-2, which ``_bamba`` refuses)."""
    idx = c.raw("attn_layer_indices", [])
    if not isinstance(idx, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n
                                            for i in idx):
        raise KvMathError(f"bamba attn_layer_indices must be a list of layer indices in [0, {n})")
    return [FULL if i in set(idx) else LINEAR for i in range(n)]


@_family("bamba")
def _bamba(c: _Config, name: str, source: str):
    """Bamba (IBM): Mamba-2 layers with attention at ``attn_layer_indices`` (transformers 5.23 ``BambaConfig``).

    Mamba-2 width ``mamba_expand x hidden_size``, ``mamba_n_heads`` heads of ``mamba_d_head`` (``"auto"``: width /
    heads), ``mamba_n_groups``, ``mamba_d_state``, ``mamba_d_conv``; attention ``num_key_value_heads`` x
    (``head_dim`` or ``hidden_size / num_attention_heads``, modeling_bamba.py). ``mamba_n_heads`` and
    ``mamba_d_state`` must be written (class defaults 128 and 256); ``mamba_chunk_size`` defaults to 256. A config
    with no attention layer is refused (transformers cannot decode it). llama.cpp converts Bamba as
    GRANITE_HYBRID, Granite 4.0-H's architecture (convert_hf_to_gguf.py ``GraniteHybridModel``), so its rules price
    it as they do ``granitemoehybrid``; vLLM 0.23.0 removed Bamba and kvmath's vLLM plan refuses it.
    """
    n = c.layer_count()
    for key, default in (("mamba_n_heads", 128), ("mamba_d_state", 256)):
        _needs_written(c, key, default)
    _no_window(c)
    types = _bamba_types(c, n)
    if FULL not in types:
        raise KvMathError("bamba config has no attn_layer_indices (no attention layer): transformers 5.23 BambaModel "
                          "cannot decode without one (DynamicCache.get_seq_length needs an attention layer)")
    heads = c.int("num_attention_heads")
    attn = {a.index: a for a in _attention_layers(c, [FULL] * n)} if FULL in types else {}
    inner = c.int("mamba_expand", 2) * c.int("hidden_size")
    keys = {"heads_key": "mamba_n_heads", "head_dim_key": "mamba_d_head", "state_key": "mamba_d_state",
            "groups_key": "mamba_n_groups", "conv_key": "mamba_d_conv"}
    cfg = {k: v for k, v in c.cfg.items() if v is not None}
    cfg.setdefault("mamba_n_groups", 1), cfg.setdefault("mamba_d_conv", 4)  # BambaConfig's defaults
    m = _Config(cfg, c.model_type)
    layers = [attn[i] if t == FULL else _mamba2_mixer(m, i, **keys, intermediate=inner) for i, t in enumerate(types)]
    return _arch(c, name, source, layers, heads, mamba_chunk_size=c.int("mamba_chunk_size", 256))


@_family("falcon_h1")
def _falcon_h1(c: _Config, name: str, source: str):
    """Falcon-H1 (tiiuae): every decoder layer runs GQA attention and a Mamba-2 mixer side by side, so every layer
    keeps both a K/V cache and a Mamba-2 state (:class:`AttentionMamba2Layer`).

    transformers 5.23 ``FalconH1Config``: ``layers_block_type`` all ``hybrid`` (``LinearAttentionAndFullAttention
    Layer``); attention ``num_key_value_heads`` (None: the heads) x (``head_dim`` or ``hidden_size /
    num_attention_heads``, modeling_falcon_h1.py); the mixer width ``mamba_d_ssm`` (None: ``mamba_expand x
    hidden_size``), ``mamba_n_heads`` heads of ``mamba_d_head`` (``"auto"``: width / heads), ``mamba_n_groups``,
    ``mamba_d_state``, ``mamba_d_conv``. ``mamba_n_heads`` and ``mamba_d_state`` must be written (class defaults
    128 and 256). llama.cpp keeps a K/V row and an R / S state for every layer (``create_memory``: FALCON_H1's
    attention and recurrent filters both return true), which ``kvmath.engines.llamacpp`` prices; vLLM 0.24.0
    (falcon_h1.py) registers the two halves as two cache layers and SGLang pools them apart, which kvmath does not
    model: both refuse the kind.
    """
    n = c.layer_count()
    listed = c.raw("layers_block_type", c.raw("layer_types"))
    if listed is not None and (not isinstance(listed, list) or any(t != HYBRID for t in listed)):
        raise KvMathError("falcon_h1 layers_block_type must be 'hybrid' on every layer (FalconH1Config fixes it)")
    for key, default in (("mamba_n_heads", 128), ("mamba_d_state", 256)):
        _needs_written(c, key, default)
    _no_window(c)
    heads = c.int("num_attention_heads")
    attn = _attention_layers(c, [FULL] * n)
    inner = c.int("mamba_d_ssm") if c.has("mamba_d_ssm") else c.int("mamba_expand", 2) * c.int("hidden_size")
    cfg = {k: v for k, v in c.cfg.items() if v is not None}
    cfg.setdefault("mamba_n_groups", 1), cfg.setdefault("mamba_d_conv", 4)  # FalconH1Config's defaults
    m = _Config(cfg, c.model_type)
    layers = [AttentionMamba2Layer(i, attn[i], _mamba2_mixer(
        m, i, heads_key="mamba_n_heads", head_dim_key="mamba_d_head", state_key="mamba_d_state",
        groups_key="mamba_n_groups", conv_key="mamba_d_conv", intermediate=inner)) for i in range(n)]
    return _arch(c, name, source, layers, heads, mamba_chunk_size=c.int("mamba_chunk_size", 256))


@_family("minimax")
def _minimax(c: _Config, name: str, source: str):
    """MiniMax-Text-01 / MiniMax-M1 as transformers 5.23 reads them (``models/minimax``, the ``-hf`` checkpoints):
    lightning attention on ``linear_attention`` layers (:class:`LightningLayer`: ``num_attention_heads`` states of
    ``head_dim x head_dim``), GQA on ``full_attention`` layers (``num_key_value_heads`` x ``head_dim``; head width
    ``head_dim`` or ``hidden_size / num_attention_heads``).

    ``layer_types``, else ``MiniMaxConfig.__post_init__``'s ``full_attention if (i + 1) % 2 else
    linear_attention``. The remote-code configs' ``attn_type_list`` (0 = lightning, 1 = softmax) is not read by
    ``MiniMaxConfig``: a config that has it without ``layer_types`` is refused rather than read as the
    alternating default. A ``sliding_window`` is refused. vLLM 0.23.0 removed MiniMaxText01ForCausalLM
    (registry.py ``_PREVIOUSLY_SUPPORTED_MODELS``); kvmath's engines other than transformers refuse the kind.
    """
    n = c.layer_count()
    types = c.layer_types(n, (FULL, LINEAR))
    if types is None:
        if c.has("attn_type_list"):
            raise KvMathError("minimax config has attn_type_list but no layer_types; transformers 5.23 MiniMaxConfig "
                              "does not read attn_type_list (it alternates full / linear): write layer_types")
        types = [FULL if (i + 1) % 2 else LINEAR for i in range(n)]
    _no_window(c)
    heads = c.int("num_attention_heads")
    attn = _attention_layers(c, [FULL] * n)
    head_dim = attn[0].head_dim
    layers = [attn[i] if t == FULL else LightningLayer(i, heads, head_dim) for i, t in enumerate(types)]
    return _arch(c, name, source, layers, heads)


# --- DeepSeek-V4: sliding window plus compressed long-range entries ------------------------------------------

_CSA, _HCA = "compressed_sparse_attention", "heavily_compressed_attention"
_V4_RATIO_TYPES = {0: SLIDING, 4: _CSA, 128: _HCA}
"""configuration_deepseek_v4.py ``_COMPRESS_RATIO_TO_LAYER_TYPE`` (transformers 5.23): a legacy
``compress_ratios`` entry names a layer type; the rate itself comes from ``compress_rates``."""


def _v4_layer_types(c: _Config, n: int) -> list[str]:
    """DeepSeek-V4's per-layer attention types as ``DeepseekV4Config.__post_init__`` derives them:
    ``layer_types``, else the legacy ``compress_ratios`` (0 / 4 / 128 per layer; the published V4-Flash lists 44,
    one for its MTP layer, and transformers keeps the first ``num_hidden_layers``), else 2 HCA layers then CSA on
    odd and HCA on even positions of the rest."""
    types = c.layer_types(n, (SLIDING, _CSA, _HCA))
    if types is not None:
        return types
    ratios = c.raw("compress_ratios")
    if ratios is None:
        return [_HCA] * min(n, 2) + [_CSA if i % 2 else _HCA for i in range(max(n - 2, 0))]
    if not isinstance(ratios, list) or len(ratios) < n or not all(
            type(r) is int and r in _V4_RATIO_TYPES for r in ratios):
        raise KvMathError(f"deepseek_v4 compress_ratios must list 0, 4 or 128 for each of the {n} layers")
    return [_V4_RATIO_TYPES[r] for r in ratios[:n]]


def _v4_compress_rates(c: _Config) -> dict[str, int]:
    """``compress_rates`` (default CSA 4, HCA 128), with the legacy ``compress_rate_csa`` /
    ``compress_rate_hca`` folded in, as ``DeepseekV4Config.__post_init__`` does."""
    rates = c.raw("compress_rates")
    if rates is None:
        rates = {_CSA: 4, _HCA: 128}
    if not isinstance(rates, dict):
        raise KvMathError("deepseek_v4 compress_rates must be an object {layer type: tokens per entry}")
    rates = dict(rates)
    for key, kind in (("compress_rate_csa", _CSA), ("compress_rate_hca", _HCA)):
        if c.has(key):
            rates[kind] = c.int(key)
    for kind in (_CSA, _HCA):
        if kind not in rates:
            raise KvMathError(f"deepseek_v4 compress_rates has no rate for {kind}")
        rates[kind] = _Config(rates, c.model_type).int(kind)
    return rates


@_family("deepseek_v4")
def _deepseek_v4(c: _Config, name: str, source: str):
    """DeepSeek-V4 (``deepseek_v4``, V4-Flash / V4-Pro): every layer keeps one shared K=V head of ``head_dim``
    over a ``sliding_window``; CSA and HCA layers add compressed entries (:class:`CompressedAttentionLayer`).

    transformers 5.23 configuration_deepseek_v4.py: layer types :func:`_v4_layer_types`, rates
    :func:`_v4_compress_rates`; modeling_deepseek_v4.py ``DeepseekV4Attention`` projects ``kv_proj`` to one
    ``head_dim`` row whatever ``num_key_value_heads`` says, so a config stating another count is refused.
    ``head_dim``, ``sliding_window`` and, with CSA layers, ``index_head_dim`` / ``index_n_heads`` /
    ``index_topk`` must be written (class defaults 512, 128, 128, 64, 512).
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    for key, default in (("head_dim", 512), ("sliding_window", 128)):
        _needs_written(c, key, default)
    if c.int("num_key_value_heads", 1) != 1:
        raise KvMathError(f"deepseek_v4 config sets num_key_value_heads {c.int('num_key_value_heads')}; DeepSeek-V4's "
                          "attention has one shared K=V head (transformers' kv_proj ignores the field)")
    types = _v4_layer_types(c, n)
    rates = _v4_compress_rates(c)
    idx = {}
    if _CSA in types:
        for key, default in (("index_head_dim", 128), ("index_n_heads", 64), ("index_topk", 512)):
            _needs_written(c, key, default)
            idx[key] = c.int(key)
    head_dim, window = c.int("head_dim"), _window(c)
    layers = [CompressedAttentionLayer(i, t, head_dim, window, rates.get(t, 0), t == _CSA,
                                       **(idx if t == _CSA else {})) for i, t in enumerate(types)]
    return _arch(c, name, source, layers, heads,
                 mtp_num_hidden_layers=c.int("num_nextn_predict_layers", 0, minimum=0, maximum=MAX_LAYERS))


# --- MiMo-V2-Flash: hybrid sliding / full attention with per-type KV heads ------------------------------------

def _same_or_refuse(c: _Config, key: str, want: int, rule: str) -> None:
    """Refuse a config whose ``key`` (a field transformers 5.23 does not read) disagrees with ``want``, the value
    transformers uses by ``rule``; vLLM reads ``key`` itself, so a disagreement means the engines differ."""
    if c.has(key) and c.int(key) != want:
        raise KvMathError(f"{c.model_type} config sets {key} {c.int(key)} but transformers 5.23 uses {rule} = {want} "
                          "(vLLM reads the field): the engines would build different layers")


@_family("mimo_v2_flash")
def _mimo_v2_flash(c: _Config, name: str, source: str):
    """MiMo-V2-Flash (``mimo_v2_flash``): full attention on layer 0 and every 6th layer, sliding elsewhere; K rows of
    ``head_dim``, V rows of ``v_head_dim``; the sliding layers have twice the KV heads.

    transformers 5.23 configuration_mimo_v2_flash.py ``__post_init__``: ``layer_types``, else ``full_attention if
    i == 0 or (i + 1) % 6 == 0``; ``sliding_window = sliding_window_size + 1`` when ``sliding_window_size`` is given
    ("attends to sliding_window_size previous tokens plus the query"). modeling_mimo_v2_flash.py
    ``MiMoV2FlashAttention``: ``num_key_value_heads * 2`` KV heads on sliding layers, ``head_dim`` / ``v_head_dim``
    on every layer. vLLM 0.24 (model_executor/models/mimo_v2.py) instead reads ``hybrid_layer_pattern`` (1 =
    sliding), ``swa_num_key_value_heads``, ``swa_head_dim``, ``swa_v_head_dim`` and ``swa_num_attention_heads``:
    a config where those disagree with transformers' rule is refused. ``num_key_value_heads``, ``head_dim``,
    ``v_head_dim`` and the window must be written (class defaults 4, 192, 128, 129). The attention sinks are
    parameters, not cache.
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    for key, default in (("num_key_value_heads", 4), ("head_dim", 192), ("v_head_dim", 128)):
        _needs_written(c, key, default)
    types = c.layer_types(n, (FULL, SLIDING)) or [FULL if i == 0 or (i + 1) % 6 == 0 else SLIDING for i in range(n)]
    pattern = c.raw("hybrid_layer_pattern")
    if pattern is not None and (not isinstance(pattern, list) or len(pattern) < n or
                                [SLIDING if p == 1 else FULL for p in pattern[:n]] != types or
                                any(type(p) is not int or p not in (0, 1) for p in pattern)):
        raise KvMathError(f"mimo_v2_flash hybrid_layer_pattern (read by vLLM) must give 1 for each sliding and 0 for "
                          f"each full layer of the {n} that transformers 5.23 builds (layer_types or its rule)")
    kv = _kv_heads(c, heads)
    head_dim, v_head_dim = c.int("head_dim"), c.int("v_head_dim")
    window = None
    if SLIDING in types:
        if heads % (2 * kv):
            raise KvMathError(f"mimo_v2_flash sliding layers have 2 x {kv} KV heads, which must divide "
                              f"num_attention_heads {heads}")
        for key, want, rule in (("swa_num_key_value_heads", 2 * kv, "2 x num_key_value_heads"),
                                ("swa_head_dim", head_dim, "head_dim"), ("swa_v_head_dim", v_head_dim, "v_head_dim"),
                                ("swa_num_attention_heads", heads, "num_attention_heads")):
            _same_or_refuse(c, key, want, rule)
        if c.has("sliding_window_size"):
            window = c.int("sliding_window_size") + 1
        else:
            _needs_written(c, "sliding_window", 129)
            window = _window(c)
    layers = [AttentionLayer(i, t, 2 * kv if t == SLIDING else kv, head_dim, v_head_dim,
                             window if t == SLIDING else None) for i, t in enumerate(types)]
    return _arch(c, name, source, layers, heads, engine_refusals=_MIMO_REFUSALS)


_MIMO_REFUSALS = (
    ("vllm", "vLLM 0.24 (model_executor/models/mimo_v2.py) windows its sliding layers at sliding_window_size tokens, "
             "transformers 5.23 at sliding_window_size + 1, and kvmath's layers carry one window"),
    ("llama.cpp", "kvmath has not read llama.cpp's MiMo-V2 rules (its sliding-layer KV heads and window)"),
)


# --- Step 3.5 / 3.7 text decoder (Step3p7TextConfig, model_type step3p5) --------------------------------------

@_family("step3p5")
def _step3p5(c: _Config, name: str, source: str):
    """Step-3.7-Flash's text decoder (transformers 5.23 ``Step3p7TextConfig``, model_type ``step3p5``; the
    ``step3p7`` wrapper always builds it): GQA on every layer, full or sliding by ``layer_types``.

    configuration_step3p7.py: ``num_attention_groups`` is ``num_key_value_heads`` (attribute_map); ``layer_types``
    may carry ``num_nextn_predict_layers`` trailing MTP entries, which are split off; without ``layer_types`` every
    layer is full attention. The sliding layers' query heads (``attention_other_setting`` /
    ``num_sliding_attention_heads``) do not shape the cache: modeling_step3p7.py ``Step3p7Attention`` keeps
    ``num_key_value_heads`` x ``head_dim`` on every layer. vLLM 0.24 (model_executor/models/step3p5.py) reads
    ``attention_other_setting``'s ``num_attention_groups`` and ``head_dim`` for the sliding layers, so a config
    where they differ is refused; ``minimax_m3_sparse`` layers (sparse attention) are refused too. The KV heads,
    ``head_dim`` and ``sliding_window`` must be written (class defaults 8, 128, None; transformers cannot run
    without a window).
    """
    cfg = dict(c.cfg)
    for alias, key in (("num_attention_groups", "num_key_value_heads"), ("num_mtp_layers", "num_nextn_predict_layers")):
        if c.has(alias):
            if c.has(key) and c.cfg[key] != c.cfg[alias]:
                raise KvMathError(f"step3p5 config sets both {alias} and {key}, differently; they name one field")
            cfg[key] = c.cfg[alias]
    c = _Config(cfg, c.model_type)
    n = c.layer_count()
    mtp = c.int("num_nextn_predict_layers", 0, minimum=0, maximum=MAX_LAYERS)
    _needs_written(c, "num_key_value_heads", 8)
    _needs_written(c, "head_dim", 128)
    raw = c.raw("layer_types")
    if isinstance(raw, list) and len(raw) not in (n, n + mtp):
        raise KvMathError(f"step3p5 layer_types has {len(raw)} entries; transformers takes num_hidden_layers {n} "
                          f"(+ {mtp} MTP entries)")
    if isinstance(raw, list) and mtp and len(raw) == n + mtp:  # the MTP entries: split off, as Step3p7TextConfig
        c = _Config(dict(c.cfg, layer_types=raw[:n]), c.model_type)  # builds num_hidden_layers decoder layers
    if isinstance(raw, list) and "minimax_m3_sparse" in raw[:n]:
        raise KvMathError("step3p5 layer_types has minimax_m3_sparse layers (sparse attention with a block indexer); "
                          "kvmath has no spec for their cache")
    types = c.layer_types(n, (FULL, SLIDING)) or [FULL] * n
    if not c.has("sliding_window"):  # Step3p7TextModel.forward builds the sliding mask whatever the layer types
        raise KvMathError("step3p5 config has no sliding_window; transformers 5.23's Step3p7TextModel needs one even "
                          "when every layer is full attention (create_sliding_window_causal_mask raises)")
    kv, head_dim = _kv_heads(c, c.int("num_attention_heads")), c.int("head_dim")
    other = c.raw("attention_other_setting")
    if other is not None:
        if not isinstance(other, dict):
            raise KvMathError("step3p5 attention_other_setting must be an object")
        o = _Config(other, "attention_other_setting")
        for key, want in (("num_attention_groups", kv), ("head_dim", head_dim)):
            if o.has(key) and o.int(key) != want:
                raise KvMathError(f"step3p5 attention_other_setting.{key} {o.int(key)} differs from {want}: vLLM 0.24 "
                                  "applies it to the sliding layers, transformers 5.23 does not")
    from dataclasses import replace

    arch = _typed(c, name, source, lambda n: [FULL] * n, mtp_key="num_nextn_predict_layers")
    share = c.int("share_expert_dim", 0, minimum=0) if arch.num_experts else 0
    if share and not arch.shared_expert_intermediate_size:  # Step's name for the shared expert's width
        arch = replace(arch, shared_expert_intermediate_size=share)
    refusals = [("llama.cpp", "kvmath has not read llama.cpp's Step 3.5 / 3.7 rules (its window and MTP layers)")]
    if c.raw("att_impl_type") != "GQA":
        refusals.append(("vllm", f"vLLM 0.24's step3p5.py builds attention only for att_impl_type 'GQA' (this "
                                 f"config: {c.raw('att_impl_type')!r}; it raises on anything else)"))
    return replace(arch, engine_refusals=tuple(refusals))


# --- issue 20, more families people run: plain attention under their own key names ------------------------

@_family("apertus", "arcee", "flex_olmo", "nanochat")
def _plain_llama_like(c: _Config, name: str, source: str):
    """Full attention on every layer, ``num_key_value_heads`` (None: every head) x (``head_dim`` or
    ``hidden_size / num_attention_heads``), no window: Apertus (``apertus``), Arcee AFM (``arcee``), FlexOlmo
    (``flex_olmo``) and nanochat (``nanochat``). transformers 5.23: none of these config classes has a
    ``sliding_window`` or ``layer_types`` field (so ``DynamicCache`` builds full layers), their ``__post_init__``
    sets ``num_key_value_heads = num_attention_heads`` when it is None, and the modeling files read
    ``getattr(config, "head_dim", hidden_size // num_attention_heads)`` (``ArceeConfig.__post_init__`` writes the
    same quotient). vLLM 0.24 serves apertus, arcee and flex_olmo with their own model files (the same
    ``num_key_value_heads`` x ``head_dim`` attention); nanochat has none there."""
    return _full_only(c, name, source)


@_family("bitnet")
def _bitnet(c: _Config, name: str, source: str):
    """BitNet b1.58 (``bitnet``): full attention on every layer, ``num_key_value_heads`` x ``hidden_size /
    num_attention_heads`` (modeling_bitnet.py reads ``getattr(config, "head_dim", ...)``). ``BitNetConfig``
    (transformers 5.23) defaults ``num_key_value_heads`` to 5 when the key is absent (None means every head), so
    a config must write it. The ternary weights do not change the cache, which transformers keeps in ``dtype``."""
    _needs_written(c, "num_key_value_heads", 5)
    return _full_only(c, name, source)


@_family("helium")
def _helium(c: _Config, name: str, source: str):
    """Helium (``helium``): full attention on every layer. ``HeliumConfig`` (transformers 5.23) defaults
    ``num_key_value_heads`` to 20 and ``head_dim`` to 128, neither derived from the heads or the hidden size,
    so a config must write both (kyutai/helium-1-preview-2b: 20 x 128)."""
    _needs_written(c, "num_key_value_heads", 20)
    return _full_only(c, name, source, head_dim_default=128)


@_family("glm")
def _glm(c: _Config, name: str, source: str):
    """GLM-4-9B in transformers' own layout (``glm``, the type before GLM-4-0414's ``glm4``): full attention on
    every layer. ``GlmConfig`` (transformers 5.23) defaults ``num_key_value_heads`` to 2 and ``head_dim`` to 128,
    so a config must write both; ``partial_rotary_factor`` (0.5) rotates half of each head and does not change
    what is cached. vLLM 0.24 serves ``GlmForCausalLM`` as Llama with the partial rotary."""
    _needs_written(c, "num_key_value_heads", 2)
    return _full_only(c, name, source, head_dim_default=128)


def _every_head_width(c: _Config) -> int:
    """``hidden_size / num_attention_heads``, the head width of a model whose attention ignores ``head_dim``;
    a config stating another ``head_dim`` is refused."""
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    if hidden % heads:
        raise KvMathError(f"{c.model_type} hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    if c.has("head_dim") and c.int("head_dim") != hidden // heads:
        raise KvMathError(f"{c.model_type} config sets head_dim {c.int('head_dim')} but its attention uses "
                          f"hidden_size / num_attention_heads = {hidden // heads}; remove head_dim")
    return hidden // heads


@_family("persimmon")
def _persimmon(c: _Config, name: str, source: str):
    """Persimmon-8B (``persimmon``): full multi-head attention on every layer, head width ``hidden_size /
    num_attention_heads`` (transformers 5.23 modeling_persimmon.py ``PersimmonAttention``: K and V keep all
    ``num_attention_heads``, ``head_dim = hidden_size // num_heads``; ``PersimmonConfig`` has no KV-head or
    ``head_dim`` field; vLLM 0.24 persimmon.py caches the same heads). A ``num_key_value_heads`` other than the
    heads (adept/persimmon-8b-base writes 64 = its heads) or another ``head_dim`` is refused."""
    heads = c.int("num_attention_heads")
    if c.has("num_key_value_heads") and c.int("num_key_value_heads") != heads:
        raise KvMathError(f"persimmon config sets num_key_value_heads {c.int('num_key_value_heads')}, but its "
                          f"attention caches every one of its {heads} heads; remove num_key_value_heads")
    cfg = dict(c.cfg, num_key_value_heads=heads, head_dim=_every_head_width(c))
    return _full_only(_Config(cfg, c.model_type), name, source)


_MOSAIC_KEYS = {"d_model": "hidden_size", "n_heads": "num_attention_heads", "n_layers": "num_hidden_layers"}
"""DBRX / MPT key names -> the HF names kvmath reads (transformers 5.23 ``DbrxConfig`` / ``MptConfig``
``attribute_map``; DBRX also maps ``max_seq_len`` to ``max_position_embeddings``)."""


def _mosaic_renamed(c: _Config, defaults: tuple) -> dict:
    """The config under kvmath's names: ``d_model``, ``n_heads`` and ``n_layers`` must be written (the class
    defaults ``defaults`` would fill them in) and may not disagree with a ``hidden_size`` etc. also present."""
    cfg = dict(c.cfg)
    for (old, new), default in zip(_MOSAIC_KEYS.items(), defaults):
        _needs_written(c, old, default)
        if c.has(new) and c.cfg[new] != c.cfg[old]:
            raise KvMathError(f"{c.model_type} config sets both {old} {c.cfg[old]!r} and {new} {c.cfg[new]!r}; "
                              "they name the same field (transformers' attribute_map) and must agree")
        cfg[new] = c.cfg[old]
    if c.has("num_key_value_heads"):
        raise KvMathError(f"{c.model_type} config sets num_key_value_heads, which its model does not read "
                          "(the KV heads live in attn_config): remove it")
    return cfg


def _sub(c: _Config, key: str) -> _Config:
    """The nested object ``key`` (``attn_config`` / ``ffn_config``) as a _Config; {} when absent."""
    value = c.raw(key, {})
    if not isinstance(value, dict):
        raise KvMathError(f"{c.model_type} config field {key} must be an object")
    return _Config(value, f"{c.model_type} {key}")


@_family("dbrx")
def _dbrx(c: _Config, name: str, source: str):
    """DBRX (``dbrx``): grouped-query attention on every layer, ``attn_config.kv_n_heads`` x ``d_model /
    n_heads``, 16 experts per layer (``ffn_config``).

    transformers 5.23 configuration_dbrx.py ``DbrxConfig.__post_init__``: ``num_key_value_heads =
    attn_config.kv_n_heads`` (``DbrxAttentionConfig`` defaults it to 1, so it must be written);
    modeling_dbrx.py ``head_dim = hidden_size // n_heads``. vLLM 0.24 dbrx.py: ``total_num_kv_heads =
    config.attn_config.kv_n_heads``, the same head width. ``ffn_config`` gives ``moe_num_experts``,
    ``moe_top_k`` and ``ffn_hidden_size`` (each expert's width). No window.
    """
    cfg = _mosaic_renamed(c, (2048, 16, 24))
    attn, ffn = _sub(c, "attn_config"), _sub(c, "ffn_config")
    _needs_written(attn, "kv_n_heads", 1)
    cfg["num_key_value_heads"] = attn.int("kv_n_heads")
    if c.has("max_seq_len"):
        cfg["max_position_embeddings"] = c.cfg["max_seq_len"]
    for key, default in (("moe_num_experts", 4), ("moe_top_k", 1), ("ffn_hidden_size", 3584)):
        _needs_written(ffn, key, default)
    cfg.update(moe_num_experts=ffn.int("moe_num_experts"), moe_top_k=ffn.int("moe_top_k"),
               moe_intermediate_size=ffn.int("ffn_hidden_size"))
    r = _Config(cfg, c.model_type)
    _every_head_width(r)
    return _full_only(r, name, source)


@_family("mpt")
def _mpt(c: _Config, name: str, source: str):
    """MPT (``mpt``): full multi-head attention on every layer, every head cached, head width ``d_model /
    n_heads``, ALiBi (no position table: the length is ``max_seq_len``).

    transformers 5.23 modeling_mpt.py ``MptAttention``: ``Wqkv`` projects to ``3 x hidden_size`` and K / V keep
    all ``n_heads`` (``attn_config.attn_type`` is not read). vLLM 0.24 mpt.py caches ``attn_config.kv_n_heads``
    when given, else every head; a config with a ``kv_n_heads`` other than ``n_heads`` is refused (the two would
    differ). MLP width ``expansion_ratio x d_model`` (class default 4, must be written).
    """
    cfg = _mosaic_renamed(c, (2048, 16, 24))
    attn = _sub(c, "attn_config")
    heads = _Config(cfg, c.model_type).int("num_attention_heads")
    if attn.has("kv_n_heads") and attn.int("kv_n_heads") != heads:
        raise KvMathError(f"mpt attn_config.kv_n_heads {attn.int('kv_n_heads')} is not n_heads {heads}: transformers "
                          "caches every head (MptAttention), vLLM the kv_n_heads; kvmath does not pick one")
    _needs_written(c, "expansion_ratio", 4)
    cfg["intermediate_size"] = c.int("expansion_ratio") * _Config(cfg, c.model_type).int("hidden_size")
    r = _Config(cfg, c.model_type)
    _every_head_width(r)
    return _full_only(r, name, source)


@_family("afmoe")
def _afmoe(c: _Config, name: str, source: str):
    """Arcee Trinity (``afmoe``): three sliding-window layers to one full, ``num_key_value_heads`` x ``head_dim``
    on both, MoE MLPs after ``num_dense_layers`` dense ones.

    transformers 5.23 configuration_afmoe.py ``AfmoeConfig.__post_init__`` derives ``layer_types`` (sliding iff
    ``(i + 1) % global_attn_every_n_layers``) when absent, with ``sliding_window`` 1024 and ``head_dim`` 128 by
    default; vLLM 0.24 reads its own ``AfmoeConfig`` (vllm/transformers_utils/configs/afmoe.py), which keeps
    ``layer_types`` as given (models/afmoe.py indexes ``config.layer_types[layer_idx]``) and defaults the window
    to 2048. So ``layer_types``, ``sliding_window`` (when a layer slides) and ``head_dim`` must be written.
    llama.cpp's loader (src/llama-model.cpp ``LLM_ARCH_AFMOE``) ignores the list and sets ``set_swa_pattern(4)``
    (layers 0-2 of every 4 sliding): a ``layer_types`` other than that pattern is refused, as engines would differ.
    """
    n = c.layer_count()
    if c.raw("layer_types") is None:
        return _afmoe_derived(c, name, source)
    types = c.layer_types(n, (FULL, SLIDING))
    if types != [SLIDING if (i + 1) % 4 else FULL for i in range(n)]:
        raise KvMathError("afmoe layer_types is not 3 sliding layers to 1 full: llama.cpp's loader sets that pattern "
                          "whatever the config says, so the engines would cache different layers")
    _needs_written(c, "head_dim", 128)
    if SLIDING in types:
        _needs_written(c, "sliding_window", 1024)
    return _typed(c, name, source, lambda n: [FULL] * n, head_dim=c.int("head_dim"))


def _afmoe_derived(c: _Config, name: str, source: str):
    """An ``afmoe`` config without ``layer_types``, read as transformers 5.23's ``AfmoeConfig.__post_init__`` builds
    it: layer i sliding iff ``(i + 1) % global_attn_every_n_layers`` (default 4), ``sliding_window`` 1024 and
    ``head_dim`` 128 by default. vLLM 0.24 keeps ``layer_types`` None (its own AfmoeConfig) and models/afmoe.py
    indexes ``config.layer_types[layer_idx]``, so it cannot load such a config: refused there. llama.cpp's loader
    sets its 3 sliding : 1 full pattern whatever the config says: priced only when transformers' pattern is that
    one and the window and head width are written (what its converter reads), else refused."""
    from dataclasses import replace

    written = c.has("sliding_window") and c.has("head_dim")
    c = _class_filled(c, {"global_attn_every_n_layers": 4, "sliding_window": 1024, "head_dim": 128})
    every = c.int("global_attn_every_n_layers", maximum=MAX_LAYERS)
    n = c.layer_count()
    types = [SLIDING if (i + 1) % every else FULL for i in range(n)]
    arch = _arch(c, name, source, _attention_layers(c, types, head_dim=c.int("head_dim")),
                 c.int("num_attention_heads"))
    refusals = [("vllm", "vLLM 0.24's AfmoeConfig keeps layer_types None and models/afmoe.py indexes "
                         "config.layer_types[layer_idx]: it cannot load a config without layer_types")]
    if types != [SLIDING if (i + 1) % 4 else FULL for i in range(n)] or not written:
        refusals.append(("llama.cpp", "its loader sets 3 sliding layers to 1 full and its converter reads "
                                      "sliding_window and head_dim; this config's derived pattern or those fields "
                                      "differ from that"))
    return replace(arch, engine_refusals=tuple(refusals))


@_family("granite_swa", "granitemoe_swa")
def _granite_swa(c: _Config, name: str, source: str):
    """Granite SWA / Granite MoE SWA (``granite_swa``, ``granitemoe_swa``): full attention on every 4th layer from
    layer 0 and sliding-window attention elsewhere, ``num_key_value_heads`` x (``head_dim`` or ``hidden_size /
    num_attention_heads``) on both; the per-head attention sinks are weights, not cache.

    transformers 5.23 ``GraniteSWAConfig`` / ``GraniteMoeSWAConfig.__post_init__``: ``layer_types`` default
    ``full_attention if i % 4 == 0`` (layer 0 full, unlike the ``(i + 1) % n`` rules of other families),
    ``sliding_window`` 128 by default (must be written when a layer slides); ``GraniteSWAConfig`` defaults
    ``num_key_value_heads`` to 4 when the key is absent (must be written). vLLM 0.24 has no model file for them
    and serves them through its Transformers backend, which windows a layer iff ``config.layer_types[i]`` is
    sliding (models/transformers/base.py). llama.cpp's support (b10514, PR #25505) was not read: refused there.
    """
    if c.model_type == "granite_swa":
        _needs_written(c, "num_key_value_heads", 4)
    n = c.layer_count()
    types = c.layer_types(n, (FULL, SLIDING)) or [FULL if i % 4 == 0 else SLIDING for i in range(n)]
    if SLIDING in types:
        _needs_written(c, "sliding_window", 128)
    return _arch(c, name, source, _attention_layers(c, types), c.int("num_attention_heads"))


@_family("ministral")
def _ministral(c: _Config, name: str, source: str):
    """Ministral (``ministral``, transformers' own type for Ministral-8B's interleaved layout): ``layer_types``,
    else every layer sliding when ``sliding_window`` is set and full when it is null (``MinistralConfig.__post_init__``,
    transformers 5.23); ``num_key_value_heads`` x (``head_dim`` or ``hidden_size / num_attention_heads``).

    ``MinistralConfig`` defaults ``num_key_value_heads`` to 8 and ``sliding_window`` to 4096 when the keys are
    absent, so a config must write both. vLLM 0.24 windows a layer iff ``config.layer_types[i]`` is sliding, both
    in models/llama.py (``MistralForCausalLM``, ``Ministral3ForCausalLM``) and in its Transformers backend (no
    ``MinistralForCausalLM`` file). llama.cpp's converter for this type was not read: refused there.
    """
    _needs_written(c, "num_key_value_heads", 8)
    n = c.layer_count()
    types = c.layer_types(n, (FULL, SLIDING))
    if types is None or SLIDING in types:
        _needs_written(c, "sliding_window", 4096)
    if types is None:
        types = [SLIDING if c.has("sliding_window") else FULL] * n
    return _arch(c, name, source, _attention_layers(c, types), c.int("num_attention_heads"))


_NEO_KEYS = {"num_layers": "num_hidden_layers", "num_heads": "num_attention_heads"}
"""GPT-Neo key names -> kvmath's (transformers 5.23 ``GPTNeoConfig.attribute_map``)."""


def _neo_layers(c: _Config, n: int) -> None:
    """Check ``attention_types`` (``[[["global", "local"], repeats], ...]``) expands to ``n`` global / local layers,
    as ``GPTNeoConfig.expand_attention_types_params`` and its ``validate_architecture`` require."""
    spec = c.raw("attention_types")
    if spec is None:
        raise KvMathError("gpt_neo config has no attention_types; GPTNeoConfig would default it to "
                          "[[['global', 'local'], 12]] (24 layers): write it out")
    try:
        kinds = [k for pattern, repeats in spec for _ in range(_as_count(repeats)) for k in pattern]
    except (TypeError, ValueError):
        raise KvMathError("gpt_neo attention_types must be a list of [[layer kinds], repeats] pairs") from None
    if len(kinds) != n or set(kinds) - {"global", "local"}:
        raise KvMathError(f"gpt_neo attention_types expands to {len(kinds)} layers of {sorted(set(map(str, kinds)))}; "
                          f"transformers needs num_layers {n} of 'global' / 'local'")


def _as_count(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LAYERS:
        raise ValueError(value)
    return value


@_family("gpt_neo")
def _gpt_neo(c: _Config, name: str, source: str):
    """GPT-Neo (``gpt_neo``): multi-head attention on every layer, head width ``hidden_size / num_heads``, under
    GPT-Neo's key names (``num_layers``, ``num_heads``).

    Its "local" layers (``attention_types``, ``window_size`` 256) are windowed by the attention mask only
    (transformers 5.23 modeling_gpt_neo.py ``GPTNeoSelfAttention``: ``bias ^ tril(bias, -window_size)``, each token
    sees itself and the ``window_size - 1`` before it); the cache is ``DynamicCache(config=...)`` and
    ``GPTNeoConfig`` has no ``sliding_window`` or ``layer_types``, so every layer keeps every token, and kvmath
    prices full layers. vLLM 0.24 has no GPT-Neo model file and llama.cpp no GPT-Neo architecture that was read:
    both refuse it (``kvmath.engines.base.UNCHECKED_MODEL_TYPES``). ``num_layers``, ``num_heads``, ``hidden_size``
    and ``attention_types`` must be written (class defaults 24, 16, 2048, 12 x global/local).
    """
    cfg = dict(c.cfg)
    for (old, new), default in zip(_NEO_KEYS.items(), (24, 16)):
        _needs_written(c, old, default)
        if c.has(new) and c.cfg[new] != c.cfg[old]:
            raise KvMathError(f"gpt_neo config sets both {old} {c.cfg[old]!r} and {new} {c.cfg[new]!r}; they name the "
                              "same field (transformers' attribute_map) and must agree")
        cfg[new] = c.cfg[old]
    _needs_written(c, "hidden_size", 2048)
    for key in ("num_key_value_heads", "head_dim"):
        if c.has(key):
            raise KvMathError(f"gpt_neo config sets {key}, which its attention does not read: remove it")
    r = _Config(cfg, c.model_type)
    _neo_layers(r, r.layer_count())
    cfg["head_dim"] = _every_head_width(r)
    cfg["intermediate_size"] = r.int("intermediate_size", 0, minimum=1) or 4 * r.int("hidden_size")
    return _full_only(_Config({k: v for k, v in cfg.items() if k != "window_size"}, c.model_type), name, source)


_GPT_DEFAULTS["codegen"] = (4096, 28, 16, 2048)  # CodeGenConfig's n_embd, n_layer, n_head, n_positions (5.23)


@_family("codegen")
def _codegen(c: _Config, name: str, source: str):
    """CodeGen (``codegen``): multi-head attention on every layer under GPT-2's key names, read as :func:`_gpt2`
    reads them (transformers 5.23 ``CodeGenConfig.attribute_map``; modeling_codegen.py ``head_dim = embed_dim //
    num_attention_heads``, K and V of every head cached in the model dtype, ``key.to(hidden_states.dtype)``).
    ``rotary_dim`` rotates part of each head and does not change what is cached. vLLM 0.24 has no CodeGen model
    file and no llama.cpp architecture for it was read: both refuse it
    (``kvmath.engines.base.UNCHECKED_MODEL_TYPES``)."""
    return _gpt2(c, name, source)


# --- GLM-4.1V / 4.5V / 4.6V text parts (the glm4v / glm4v_moe / glm46v wrappers) ------------------------------

@_family("glm4v_text")
def _glm4v_text(c: _Config, name: str, source: str):
    """GLM-4.1V / GLM-4.6V-Flash's text decoder (``glm4v_text``): GQA on every layer, no window. transformers 5.23
    ``Glm4vTextAttention`` takes its head width as ``hidden_size // num_attention_heads`` whatever ``head_dim`` says
    (modeling_glm4v.py), so a disagreeing ``head_dim`` is refused; ``Glm4vTextConfig.num_key_value_heads`` defaults
    to 2 (null: the heads), so a config leaving the key out is refused. vLLM 0.24 glm4_1v.py serves the glm4v wrapper
    with ``Glm4ForCausalLM`` (head width ``head_dim`` or hidden / heads), the same cache."""
    _needs_written(c, "num_key_value_heads", 2)
    heads, hidden = c.int("num_attention_heads"), c.int("hidden_size")
    if hidden % heads:
        raise KvMathError(f"glm4v_text hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    if c.has("head_dim") and c.int("head_dim") != hidden // heads:
        raise KvMathError(f"glm4v_text config sets head_dim {c.int('head_dim')} but transformers' Glm4vTextAttention "
                          f"uses hidden_size / num_attention_heads = {hidden // heads}; remove one")
    return _full_only(c, name, source)


@_family("glm4v_moe_text")
def _glm4v_moe_text(c: _Config, name: str, source: str):
    """GLM-4.5V / GLM-4.6V's text decoder (``glm4v_moe_text``): GQA on every layer, MoE MLPs, no window; head width
    ``getattr(config, "head_dim", hidden_size // num_attention_heads)`` (modeling_glm4v_moe.py
    ``Glm4vMoeTextAttention``); ``Glm4vMoeTextConfig.num_key_value_heads`` defaults to 8, so a config leaving it out is
    refused. MTP layers are not recorded (transformers builds none; vLLM's MTP for this wrapper was not read). vLLM
    0.24 glm4_1v.py serves the glm4v_moe wrapper with ``Glm4MoeForCausalLM``."""
    _needs_written(c, "num_key_value_heads", 8)
    return _full_only(c, name, source)


# --- decoder families of batch D (issue 20): read with their config classes' own defaults -------------------

def _class_filled(c: _Config, defaults: dict, nullable: tuple[str, ...] = ()) -> _Config:
    """``c`` with every key of ``defaults`` that the config leaves out set to the config class's default, as
    transformers 5.23 builds the config (a dataclass field's default applies to an absent key only). An explicit
    null stays null where the class's ``__post_init__`` gives it a meaning (``nullable``: the heads for
    ``num_key_value_heads``, ``hidden_size / heads`` for ``head_dim``, no window for ``sliding_window``); anywhere
    else transformers keeps None and its attention cannot be built, so it is refused (KvMathError)."""
    cfg = dict(c.cfg)
    for key, value in defaults.items():
        if key not in cfg:
            cfg[key] = value
        elif cfg[key] is None and key not in nullable:
            raise KvMathError(f"{c.model_type} config sets {key} null: transformers 5.23's config class keeps None "
                              f"there (its default is {value!r}) and the model cannot be built; write a value")
    return _Config(cfg, c.model_type)


def _engines_unread(c: _Config, *engines: str, why: str = "") -> tuple[tuple[str, str], ...]:
    """``Architecture.engine_refusals`` for engines whose source for this family kvmath has not read."""
    reasons = {"vllm": why or f"vLLM 0.24's model file for {c.model_type} was not read",
               "llama.cpp": f"which llama.cpp converter and loader take {c.model_type}, and what they cache, was "
                            "not read"}
    return tuple((e, reasons[e]) for e in engines)


_NO_VLLM_FILE = "vLLM 0.24 registers no model class for it (model_executor/models/registry.py), and whether its " \
                "Transformers backend serves it was not read"

_BATCH_D = {
    # model_type: (class defaults of the cache-shaping keys, transformers 5.23 configuration_<type>.py; vLLM note)
    "solar_open": ({"num_key_value_heads": 8, "head_dim": 128}, _NO_VLLM_FILE),
    "hy_v3": ({"num_key_value_heads": 8, "head_dim": 128}, None),
    "iquestcoder": ({"num_key_value_heads": 8, "head_dim": 128}, None),  # __post_init__ fills a null pair
    "jais2": ({}, None),
    "diffllama": ({}, _NO_VLLM_FILE),
    "doge": ({}, _NO_VLLM_FILE),
    "hyperclovax": ({}, None),
}
"""Families with full attention on every layer and no window field (a ``sliding_window`` key would window every
layer's cache in transformers 5.23, ``cache_utils.get_layer_types_and_kwargs``, so it is refused), each with the
keys its config class defaults to a value that is not derived from the heads or the hidden size. vLLM 0.24 prices
``hy_v3`` (models/hy_v3.py: ``Attention`` of ``num_key_value_heads`` x ``config.head_dim``), ``iquestcoder``
(registry: ``IQuestCoderForCausalLM`` -> models/llama.py, no ``layer_types``, no window) and ``jais2``
(models/jais2.py: ``num_key_value_heads`` x ``head_dim``; a window only from ``interleaved_sliding_window``, which
is refused for vLLM) and ``hyperclovax`` (models/hyperclovax.py: ``num_key_value_heads`` x ``head_dim``, a null
``head_dim`` / KV-head count becoming ``hidden_size / heads`` / the heads in its config class as in transformers')
generically; the others have no vLLM model file and are refused there."""


@_family(*_BATCH_D)
def _batch_d_full(c: _Config, name: str, source: str):
    """Full attention on every layer, ``num_key_value_heads`` x (``head_dim`` or ``hidden_size /
    num_attention_heads``), with the config class's defaults for absent keys (:data:`_BATCH_D`): Solar Open
    (``solar_open``), Hunyuan 3 (``hy_v3``), IQuest-Coder (``iquestcoder``, built as ``LlamaForCausalLM``), Jais 2
    (``jais2``), HyperCLOVA X (``hyperclovax``), DiffLlama (``diffllama``: the differential attention splits V after
    the cache, which holds
    ``num_key_value_heads`` x ``head_dim`` K and V, modeling_diffllama.py) and Doge (``doge``: its dynamic mask and
    ``keep_window_size`` select keys from the whole cache, which keeps every token). transformers 5.23's modeling
    files read ``getattr(config, "head_dim", hidden_size // num_attention_heads)``. llama.cpp is refused."""
    defaults, vllm_note = _BATCH_D[c.model_type]
    c = _class_filled(c, defaults, ("num_key_value_heads", "head_dim") if c.model_type == "iquestcoder" else ())
    engines = ("llama.cpp",) if vllm_note is None else ("vllm", "llama.cpp")
    if c.model_type == "jais2" and c.has("interleaved_sliding_window"):
        engines = ("vllm", "llama.cpp")
        vllm_note = ("vLLM 0.24 models/jais2.py windows layers by interleaved_sliding_window, which transformers 5.23 "
                     "does not read; kvmath does not price the difference")
    if c.model_type == "doge" and not c.bool("is_moe"):  # DogeMLP, not DogeCDMoE: the expert keys are not read
        c = _Config({k: v for k, v in c.cfg.items() if k not in ("num_experts", "num_experts_per_tok")}, c.model_type)
    arch = _full_only(c, name, source)
    from dataclasses import replace

    return replace(arch, engine_refusals=_engines_unread(c, *engines, why=vllm_note or ""))


def _typed_filled(c: _Config, name: str, source: str, default, refusals=()):
    """Full / sliding attention layers of ``layer_types``, else ``default(n)`` (the config class's own
    ``__post_init__`` rule), ``num_key_value_heads`` x (``head_dim`` or ``hidden_size / num_attention_heads``), the
    sliding ones windowed by ``sliding_window``; ``refusals`` become ``Architecture.engine_refusals``."""
    from dataclasses import replace

    n = c.layer_count()
    types = c.layer_types(n, (FULL, SLIDING)) or default(n)
    arch = _arch(c, name, source, _attention_layers(c, types), c.int("num_attention_heads"))
    return replace(arch, engine_refusals=tuple(refusals))


@_family("dots1")
def _dots1(c: _Config, name: str, source: str):
    """dots.llm1 (``dots1``): ``layer_types``, else layer i sliding iff ``sliding_window`` is set and ``i >=
    max_window_layers`` (transformers 5.23 ``Dots1Config.__post_init__``; class defaults ``sliding_window`` 4096,
    ``max_window_layers`` 62, ``num_key_value_heads`` 32; ``use_sliding_window`` is not a Dots1Config field and
    is not read). Head width ``getattr(config, "head_dim", hidden_size // num_attention_heads)``
    (modeling_dots1.py). vLLM 0.23.0 removed ``Dots1ForCausalLM`` (0.24's registry lists it among the previously
    supported models), and llama.cpp's rules were not read: both refused."""
    c = _class_filled(c, {"num_key_value_heads": 32, "sliding_window": 4096, "max_window_layers": 62},
                      ("num_key_value_heads", "sliding_window"))
    window = c.has("sliding_window")
    first = c.int("max_window_layers", minimum=0, maximum=MAX_LAYERS) if window else 0
    return _typed_filled(c, name, source, lambda n: [SLIDING if window and i >= first else FULL for i in range(n)],
                         _engines_unread(c, "vllm", "llama.cpp", why="vLLM 0.23.0 removed Dots1ForCausalLM "
                                         "(model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS, 0.24.0)"))


@_family("exaone_moe")
def _exaone_moe(c: _Config, name: str, source: str):
    """K-EXAONE (``exaone_moe``): ``layer_types``, else with an integer ``sliding_window_pattern`` p (class default
    4) layer i sliding iff ``(i + 1) % p`` (transformers 5.23 ``ExaoneMoeConfig.__post_init__``, ``sliding_window``
    default 4096, ``num_key_value_heads`` default 32). Without ``layer_types`` a string pattern (``"LLLG"``) or a
    null ``sliding_window`` (the class then sets the pattern to 0 and takes ``(i + 1) % 0``) fails in transformers:
    refused. Head width ``getattr(config, "head_dim", hidden_size // num_attention_heads)``. vLLM 0.24
    (models/exaone_moe.py: ``Exaone4Attention``, window iff ``config.layer_types[i]`` is sliding, the same head
    width) is priced generically when the config writes ``is_moe_layer`` (the published ones do; vLLM's layers
    read it), and refused without it; llama.cpp is refused."""
    c = _class_filled(c, {"num_key_value_heads": 32, "sliding_window": 4096, "sliding_window_pattern": 4},
                      ("sliding_window", "sliding_window_pattern"))
    if c.raw("layer_types") is None:
        pattern = c.raw("sliding_window_pattern")
        if not c.has("sliding_window") or pattern is None:
            raise KvMathError("exaone_moe config has no layer_types and a null sliding_window or "
                              "sliding_window_pattern: transformers 5.23's ExaoneMoeConfig then divides by a pattern "
                              "of 0 and cannot build it; write layer_types")
        if isinstance(pattern, str):
            raise KvMathError(f"exaone_moe config has sliding_window_pattern {pattern!r} and no layer_types; "
                              "transformers 5.23 reads an integer pattern: write layer_types")
    p = c.int("sliding_window_pattern", 4, maximum=MAX_LAYERS) if c.raw("layer_types") is None else 1
    moe = c.raw("is_moe_layer")
    engines = ("llama.cpp",) if isinstance(moe, list) and len(moe) == c.layer_count() else ("vllm", "llama.cpp")
    why = ("vLLM 0.24 models/exaone_moe.py reads config.is_moe_layer (one flag per layer), which this config does not "
           "write (transformers' ExaoneMoeConfig derives mlp_layer_types instead): vLLM cannot build it")
    return _typed_filled(c, name, source, lambda n: [SLIDING if (i + 1) % p else FULL for i in range(n)],
                         _engines_unread(c, *engines, why=why))


@_family("cohere2_moe")
def _cohere2_moe(c: _Config, name: str, source: str):
    """Command A MoE (``cohere2_moe``): ``layer_types``, else the first ``first_k_dense_replace`` layers sliding
    iff ``(i + 1) % prefix_dense_sliding_window_pattern`` and the rest iff ``(j + 1) % sliding_window_pattern``
    counted from the first MoE layer (transformers 5.23 ``Cohere2MoeConfig.__post_init__``; defaults 0, 1, 4,
    ``sliding_window`` 4096, ``head_dim`` 128; ``num_key_value_heads`` None becomes the heads). Unlike ``cohere2``
    the head width is ``head_dim`` (modeling_cohere2_moe.py ``getattr(config, "head_dim", ...)``). vLLM 0.24
    (models/cohere2_moe.py: window iff ``config.layer_types[i]`` is sliding, ``num_key_value_heads`` x
    ``head_dim``, on transformers' own config class) is priced generically; llama.cpp is refused."""
    c = _class_filled(c, {"sliding_window": 4096, "sliding_window_pattern": 4, "head_dim": 128,
                          "prefix_dense_sliding_window_pattern": 1}, ("sliding_window",))
    k = c.int("first_k_dense_replace", 0, minimum=0, maximum=MAX_LAYERS)
    pre = c.int("prefix_dense_sliding_window_pattern", maximum=MAX_LAYERS)
    p = c.int("sliding_window_pattern", maximum=MAX_LAYERS)

    def default(n):
        if k > n:
            raise KvMathError(f"cohere2_moe first_k_dense_replace {k} exceeds num_hidden_layers {n}")
        return [SLIDING if (i + 1) % pre else FULL for i in range(k)] + \
            [SLIDING if (j + 1) % p else FULL for j in range(n - k)]

    return _typed_filled(c, name, source, default, _engines_unread(c, "llama.cpp"))


@_family("cwm")
def _cwm(c: _Config, name: str, source: str):
    """Code World Model (``cwm``): ``layer_types``, else full iff ``i % 4 == 0`` (layer 0 full) and sliding
    elsewhere (transformers 5.23 ``CwmConfig.__post_init__``; defaults ``sliding_window`` 8192, ``head_dim`` 128,
    ``num_key_value_heads`` 8, a null ``head_dim`` / KV-head count becoming ``hidden_size / heads`` / the heads).
    vLLM 0.24 serves ``CwmForCausalLM`` with models/llama.py, which windows layer i iff ``config.layer_types[i]``
    is sliding, on transformers' config class: priced generically; llama.cpp is refused."""
    c = _class_filled(c, {"sliding_window": 8192, "head_dim": 128, "num_key_value_heads": 8},
                      ("sliding_window", "head_dim", "num_key_value_heads"))
    return _typed_filled(c, name, source, lambda n: [FULL if i % 4 == 0 else SLIDING for i in range(n)],
                         _engines_unread(c, "llama.cpp"))


@_family("vaultgemma")
def _vaultgemma(c: _Config, name: str, source: str):
    """VaultGemma (``vaultgemma``): ``layer_types``, else sliding on even layers and full on odd ones (``(i + 1) %
    2``, transformers 5.23 ``VaultGemmaConfig.__post_init__``); class defaults ``num_key_value_heads`` 4,
    ``head_dim`` 256, ``sliding_window`` 4096. vLLM 0.24 has no model file for it and llama.cpp's rules were not
    read: both refused."""
    c = _class_filled(c, {"num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096}, ("sliding_window",))
    return _typed_filled(c, name, source, lambda n: [SLIDING if (i + 1) % 2 else FULL for i in range(n)],
                         _engines_unread(c, "vllm", "llama.cpp", why=_NO_VLLM_FILE))


@_family("laguna")
def _laguna(c: _Config, name: str, source: str):
    """Laguna (``laguna``, poolside): ``layer_types``, else every layer full (transformers 5.23
    ``LagunaConfig.__post_init__``); ``num_key_value_heads`` (default 8) x ``head_dim`` (default 128) on every
    layer, the query heads per layer (``num_attention_heads_per_layer``) not cached; ``sliding_window`` default
    512. vLLM 0.24 reads its own ``LagunaConfig`` (transformers_utils/configs/laguna.py: the same KV-head and head
    defaults, ``sliding_window`` default None, ``layer_types`` as given) and windows layer i iff
    ``config.layer_types[i]`` is sliding (models/laguna.py): priced generically, except a sliding layer with no
    written ``sliding_window`` (transformers 512, vLLM none), refused there. llama.cpp is refused."""
    raw_window = c.has("sliding_window")
    c = _class_filled(c, {"num_key_value_heads": 8, "head_dim": 128, "sliding_window": 512}, ("sliding_window",))
    n = c.layer_count()
    per_layer = c.raw("num_attention_heads_per_layer")
    if per_layer is not None and (not isinstance(per_layer, list) or len(per_layer) != n):
        raise KvMathError(f"laguna num_attention_heads_per_layer must list one head count per layer ({n})")
    kv = c.int("num_key_value_heads")
    for h in per_layer or []:
        if isinstance(h, bool) or not isinstance(h, int) or h < 1 or h % kv:
            raise KvMathError(f"laguna num_attention_heads_per_layer entry {h!r} is not a multiple of "
                              f"num_key_value_heads {kv}")
    types = c.layer_types(n, (FULL, SLIDING)) or [FULL] * n
    refusals = ["llama.cpp"] + (["vllm"] if SLIDING in types and not raw_window else [])
    why = "the config leaves sliding_window out: transformers windows its sliding layers at 512, vLLM 0.24's " \
          "LagunaConfig defaults it to None"
    return _typed_filled(c, name, source, lambda n: types, _engines_unread(c, *refusals, why=why))


@_family("mellum")
def _mellum(c: _Config, name: str, source: str):
    """Mellum (``mellum``, JetBrains): ``layer_types``, else every layer full (transformers 5.23
    ``MellumConfig.__post_init__``); class defaults ``num_key_value_heads`` 4, ``head_dim`` 128, ``sliding_window``
    1024. vLLM 0.24 builds its own ``MellumConfig`` on ``Qwen3MoeConfig`` (transformers_utils/configs/mellum.py),
    whose defaults were not checked against these: refused there, and on llama.cpp."""
    c = _class_filled(c, {"num_key_value_heads": 4, "head_dim": 128, "sliding_window": 1024}, ("sliding_window",))
    return _typed_filled(c, name, source, lambda n: [FULL] * n,
                         _engines_unread(c, "vllm", "llama.cpp", why="vLLM 0.24 builds its own MellumConfig on "
                                         "Qwen3MoeConfig, whose defaults kvmath has not checked against "
                                         "transformers' MellumConfig"))


def _mla_filled(c: _Config, name: str, source: str, n: int, refusals, **kw):
    """``n`` MLA layers (the latent ``kv_lora_rank`` and the shared RoPE key ``qk_rope_head_dim`` cached, as
    transformers 5.23 caches ``kv_nope`` / ``k_pass`` as keys and ``k_rot`` as values)."""
    from dataclasses import replace

    _no_window(c)
    mla = _mla_fields(c)
    arch = _arch(c, name, source, [MLALayer(i, **mla) for i in range(n)], c.int("num_attention_heads"), **kw)
    return replace(arch, engine_refusals=tuple(refusals))


@_family("minicpm3")
def _minicpm3(c: _Config, name: str, source: str):
    """MiniCPM3 (``minicpm3``): MLA on every layer. transformers 5.23 ``MiniCPM3Attention`` caches the latent
    ``kv_nope`` ``[B, 1, T, kv_lora_rank]`` and ``k_rot`` ``[B, 1, T, qk_rope_head_dim]`` (class defaults 256 and
    32, ``qk_nope_head_dim`` 64; ``v_head_dim`` None becomes ``hidden_size / num_attention_heads``). vLLM 0.24
    (models/minicpm3.py) does not cache the latent: its ``Attention`` holds ``num_attention_heads`` K and V heads of
    ``qk_nope_head_dim + qk_rope_head_dim`` (V zero-padded to that width), a layout kvmath's MLA layer does not
    carry: refused there, and on llama.cpp (not read)."""
    c = _class_filled(c, {"kv_lora_rank": 256, "qk_rope_head_dim": 32, "qk_nope_head_dim": 64})
    cfg = dict(c.cfg)
    if cfg.get("v_head_dim") is None:
        hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
        cfg["v_head_dim"] = hidden // heads
    c = _Config(cfg, c.model_type)
    vllm = ("vLLM 0.24 models/minicpm3.py caches num_attention_heads K and V heads of qk_nope_head_dim + "
            "qk_rope_head_dim each (V zero-padded), not the MLA latent; kvmath does not model that layout")
    return _mla_filled(c, name, source, c.layer_count(), _engines_unread(c, "vllm", "llama.cpp", why=vllm))


@_family("youtu")
def _youtu(c: _Config, name: str, source: str):
    """Youtu-LLM (``youtu``): MLA on every layer, the latent ``kv_nope`` and ``k_rot`` cached (transformers 5.23
    modeling_youtu.py; class defaults ``kv_lora_rank`` 512, ``qk_rope_head_dim`` 64, ``qk_nope_head_dim`` 128,
    ``v_head_dim`` 128). vLLM 0.24 has no model file for it and llama.cpp's rules were not read: both refused."""
    c = _class_filled(c, {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128})
    return _mla_filled(c, name, source, c.layer_count(), _engines_unread(c, "vllm", "llama.cpp", why=_NO_VLLM_FILE))


@_family("longcat_flash")
def _longcat_flash(c: _Config, name: str, source: str):
    """LongCat-Flash (``longcat_flash``): ``num_layers`` decoder layers of two MLA sublayers each, so ``2 x
    num_layers`` cache layers (transformers 5.23 ``LongcatFlashConfig.num_hidden_layers`` is the property ``2 *
    num_layers``; ``LongcatFlashMLA`` caches ``k_pass`` ``[B, 1, T, kv_lora_rank]`` and ``k_rot`` ``[B, 1, T,
    qk_rope_head_dim]``, class defaults 512 and 64; ``num_layers`` default 28 must be written). A
    ``num_hidden_layers`` key must equal ``2 x num_layers`` (transformers' setter would halve it into
    ``num_layers``). vLLM 0.24 (models/longcat_flash.py) builds ``config.num_hidden_layers`` decoder layers of
    two MLA each and has its own config class beside transformers' property: which one it loads was not read, so
    it is refused, and so is llama.cpp. MTP layers are not built by transformers."""
    _needs_written(c, "num_layers", 28)
    layers = c.int("num_layers", maximum=MAX_LAYERS // 2)
    if c.has("num_hidden_layers") and c.int("num_hidden_layers", maximum=MAX_LAYERS) != 2 * layers:
        raise KvMathError(f"longcat_flash config sets num_hidden_layers {c.raw('num_hidden_layers')!r} and num_layers "
                          f"{layers}: transformers 5.23 reads num_hidden_layers as 2 x num_layers; they must agree")
    c = _class_filled(c, {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128})
    c.layer_types(2 * layers, (FULL,))
    vllm = ("vLLM 0.24 models/longcat_flash.py builds config.num_hidden_layers decoder layers of two MLA each, and "
            "whether it reads that as num_layers (its own config class) or 2 x num_layers (transformers') was not read")
    return _mla_filled(c, name, source, 2 * layers, _engines_unread(c, "vllm", "llama.cpp", why=vllm))


@_family("jetmoe")
def _jetmoe(c: _Config, name: str, source: str):
    """JetMoE (``jetmoe``): mixture-of-attention-heads; the cache holds ``num_key_value_heads`` (default 16) K and V
    heads of ``kv_channels`` (default 128; ``JetMoeConfig.attribute_map`` names it ``head_dim``) on every layer
    (transformers 5.23 modeling_jetmoe.py: ``kv_proj`` to ``2 x kv_channels x num_key_value_heads``), and
    ``num_attention_heads`` is ``num_key_value_heads x num_experts_per_tok`` (default 2; ``__post_init__``). vLLM
    0.24 has no model file for it and llama.cpp's rules were not read: both refused."""
    from dataclasses import replace

    c = _class_filled(c, {"num_key_value_heads": 16, "kv_channels": 128, "num_experts_per_tok": 2})
    if c.has("head_dim") and c.raw("head_dim") != c.raw("kv_channels"):
        raise KvMathError("jetmoe config sets head_dim and kv_channels differently; they name one field")
    kv = c.int("num_key_value_heads")
    cfg = dict(c.cfg, head_dim=c.int("kv_channels"), num_attention_heads=kv * c.int("num_experts_per_tok"))
    arch = _full_only(_Config(cfg, c.model_type), name, source)
    return replace(arch, engine_refusals=_engines_unread(c, "vllm", "llama.cpp", why=_NO_VLLM_FILE))


_OLD_MHA = {
    # model_type: ({its key -> kvmath's key}, {kvmath's key: class default}, MLP width key or None)
    "xglm": ({"d_model": "hidden_size", "attention_heads": "num_attention_heads", "num_layers": "num_hidden_layers",
              "ffn_dim": "intermediate_size"}, {"hidden_size": 1024, "num_attention_heads": 16,
                                                "num_hidden_layers": 24}),
    "biogpt": ({}, {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24}),
    "ctrl": ({"n_embd": "hidden_size", "n_head": "num_attention_heads", "n_layer": "num_hidden_layers",
              "dff": "intermediate_size", "n_positions": "max_position_embeddings"},
             {"hidden_size": 1280, "num_attention_heads": 16, "num_hidden_layers": 48}),
    "gpt_neox_japanese": ({}, {"hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 32}),
}
"""Older multi-head decoders: key names (transformers 5.23 ``attribute_map`` / the modeling files' reads) and the
class defaults of the sizes a config must write out."""


@_family(*_OLD_MHA)
def _old_mha(c: _Config, name: str, source: str):
    """XGLM, BioGPT, CTRL and GPT-NeoX-Japanese: every head cached on every layer, ``hidden_size /
    num_attention_heads`` wide, no window (transformers 5.23: modeling_xglm.py ``head_dim = embed_dim //
    num_heads``, modeling_biogpt.py likewise, modeling_ctrl.py ``d_model_size / num_heads``,
    modeling_gpt_neox_japanese.py ``head_size = hidden_size // num_attention_heads``; each model's cache is
    ``DynamicCache(config=...)`` and its config class has no ``sliding_window``), under their own key names
    (:data:`_OLD_MHA`). A config leaving a size to its class default, or setting a KV-head count or ``head_dim``
    the models do not read, is refused. vLLM 0.24 has no model file for these and llama.cpp's rules were not read:
    both refused."""
    from dataclasses import replace

    renames, sizes = _OLD_MHA[c.model_type]
    cfg = dict(c.cfg)
    for old, new in renames.items():
        if c.has(old):
            if c.has(new) and c.cfg[new] != c.cfg[old]:
                raise KvMathError(f"{c.model_type} config sets both {old} and {new}, differently; they name one field")
            cfg[new] = c.cfg[old]
    back = {new: old for old, new in renames.items()}
    for key, default in sizes.items():
        if cfg.get(key) is None:
            raise KvMathError(f"{c.model_type} config has no {back.get(key, key)}; transformers' config class would "
                              f"default it to {default!r}: write it out")
    for key in ("num_key_value_heads", "head_dim"):
        if c.has(key):
            raise KvMathError(f"{c.model_type} config sets {key}, which its attention does not read: remove it")
    r = _Config(cfg, c.model_type)
    cfg["head_dim"] = _head_dim(r)
    arch = _full_only(_Config(cfg, c.model_type), name, source)
    return replace(arch, engine_refusals=_engines_unread(c, "vllm", "llama.cpp", why=_NO_VLLM_FILE))


@_family("axk1")
def _axk1(c: _Config, name: str, source: str):
    """A.X K1 (``axk1``): MLA on every layer, the latent ``kv_nope`` ``[B, 1, T, kv_lora_rank]`` and ``k_rot``
    ``[B, 1, T, qk_rope_head_dim]`` cached (transformers 5.23 modeling_axk1.py; class defaults 512 and 64,
    ``qk_nope_head_dim`` 128, ``v_head_dim`` 128). vLLM 0.24 serves ``AXK1ForCausalLM`` with its own config class
    (transformers_utils/configs/AXK1.py, model_type ``AXK1``), whose reading of this config was not checked:
    refused there, and on llama.cpp (not read)."""
    c = _class_filled(c, {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128})
    why = "vLLM 0.24 reads AXK1 through its own config class (model_type 'AXK1'), whose defaults were not checked"
    return _mla_filled(c, name, source, c.layer_count(), _engines_unread(c, "vllm", "llama.cpp", why=why))


@_family("flint", "kolibri1")
def _flint_kolibri(c: _Config, name: str, source: str):
    """Flint (``flint``) and Kolibri 1 (``kolibri1``): ``layer_types``, else transformers 5.23's
    ``__post_init__`` rule: Flint full on layers 0 and 1, every ``i % 4 == 1`` and the last layer, sliding elsewhere;
    Kolibri full iff ``(i + 1) % 5 == 0``. Class defaults ``num_key_value_heads`` 4, ``head_dim`` 128,
    ``sliding_window`` 513. vLLM 0.24 has no model file for either and llama.cpp's rules were not read: both
    refused."""
    c = _class_filled(c, {"num_key_value_heads": 4, "head_dim": 128, "sliding_window": 513}, ("sliding_window",))
    if c.model_type == "flint":
        def default(n):
            return [FULL if i < 2 or i % 4 == 1 or i == n - 1 else SLIDING for i in range(n)]
    else:
        def default(n):
            return [FULL if (i + 1) % 5 == 0 else SLIDING for i in range(n)]
    return _typed_filled(c, name, source, default, _engines_unread(c, "vllm", "llama.cpp", why=_NO_VLLM_FILE))


_DSA_DEFAULTS = {
    "axk2": {"kv_lora_rank": 128, "qk_rope_head_dim": 32, "qk_nope_head_dim": 64, "v_head_dim": 64,
             "index_head_dim": 128, "index_n_heads": 16, "index_topk": 2048},
    "hy_v4": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 192, "v_head_dim": 256,
              "index_head_dim": 128, "index_n_heads": 16, "index_topk": 2048},
}
"""transformers 5.23 ``AXK2Config`` / ``HYV4Config`` field defaults for the MLA and indexer widths."""


@_family(*_DSA_DEFAULTS)
def _dsa_defaulted(c: _Config, name: str, source: str):
    """A.X K2 (``axk2``) and Hunyuan 4 (``hy_v4``): MLA with DeepSeek Sparse Attention's indexer, ``layer_types``
    all ``indexed_attention`` (``DynamicIndexedLayer``: latent keys, RoPE values, ``indexer_keys [B, 1, T,
    index_head_dim]``), with the config classes' defaults (:data:`_DSA_DEFAULTS`). A.X K2 runs its indexer on every
    layer (modeling_axk2.py); Hunyuan 4 only where ``indexer_types`` is ``"full"``, default layer 0 and every
    ``(i - 1) % 4 == 0`` (``HYV4Config.__post_init__``), the ``"shared"`` layers reusing the previous top-k and
    caching no indexer keys (modeling_hy_v4.py ``skip_topk``). vLLM 0.24 has no model file for ``HYV4ForCausalLM``
    or A.X K2 and llama.cpp's rules were not read: both refused."""
    from dataclasses import replace

    c = _class_filled(c, _DSA_DEFAULTS[c.model_type])
    n = c.layer_count()
    c.layer_types(n, ("indexed_attention",))
    _no_window(c)
    mla = _mla_fields(c)
    idx = {k: c.int(k) for k in ("index_head_dim", "index_n_heads", "index_topk")}
    modes = c.raw("indexer_types") if c.model_type == "hy_v4" else None
    if modes is None:
        modes = ["full" if c.model_type == "axk2" or i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n)]
    if not isinstance(modes, list) or len(modes) != n or set(modes) - {"full", "shared"}:
        raise KvMathError(f"{c.model_type} indexer_types must list 'full' / 'shared' for each of the {n} layers")
    layers = [DSALayer(i, mla["kv_lora_rank"], mla["qk_rope_head_dim"], **idx, qk_nope_head_dim=mla["qk_nope_head_dim"],
                       v_head_dim=mla["v_head_dim"]) if mode == "full" else
              MLALayer(i, mla["kv_lora_rank"], mla["qk_rope_head_dim"], mla["qk_nope_head_dim"], mla["v_head_dim"])
              for i, mode in enumerate(modes)]
    arch = _arch(c, name, source, layers, c.int("num_attention_heads"))
    return replace(arch, engine_refusals=_engines_unread(c, "vllm", "llama.cpp", why=_NO_VLLM_FILE))


# --- Qwen-Omni thinker text decoders (issue 20, s34 batch B2) ------------------------------------------------------
_OMNI_TEXT_DEFAULTS = {
    "qwen2_5_omni_text": {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                          "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 32768,
                          "vocab_size": 152064},
    "qwen3_omni_moe_text": {"hidden_size": 2048, "intermediate_size": 18944, "num_hidden_layers": 28,
                            "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 32768,
                            "vocab_size": 3584},
}
"""transformers 5.23 ``Qwen2_5OmniTextConfig`` / ``Qwen3OmniMoeTextConfig`` field defaults
(configuration_qwen2_5_omni.py, configuration_qwen3_omni_moe.py). Neither class has a ``head_dim`` field: the attention takes a written ``head_dim``,
else ``hidden_size // num_attention_heads`` (modeling_*.py ``getattr(config, "head_dim", ...)``)."""


@_family(*_OMNI_TEXT_DEFAULTS)
def _qwen_omni_text(c: _Config, name: str, source: str):
    """The text decoder of the Qwen2.5-Omni / Qwen3-Omni thinkers: full attention on every layer,
    ``num_key_value_heads`` x (``head_dim`` or ``hidden_size // num_attention_heads``, rounded down as the attention
computes it: 2048 // 28 = 73 for Qwen3-Omni's class defaults), with the config classes'
    defaults (:data:`_OMNI_TEXT_DEFAULTS`; Qwen2.5-Omni's ``num_key_value_heads`` null means the heads,
    ``Qwen2_5OmniTextConfig.__post_init__``). The thinker text model builds ``DynamicCache(config=...)``, which
    windows a layer whenever the config carries a window (cache_utils ``get_layer_types_and_kwargs``) although its
    attention does not (Qwen3-Omni's ``Qwen3OmniMoeThinkerTextAttention.sliding_window = None``), so a window is
    refused: Qwen2.5-Omni's ``use_sliding_window`` true (its ``__post_init__`` keeps ``sliding_window`` only then)
    and Qwen3-Omni's ``sliding_window`` set. Written ``layer_types`` must be all full. vLLM 0.24 serves these as
    Qwen2ForCausalLM / Qwen3MoeForCausalLM only under the whole Omni model (``Architecture.engine_refusals`` of the
    thinker wrappers). Raises KvMathError for a window, a non-full layer type or a null field the class cannot
    build with."""
    mt = c.model_type
    nullable = ("num_key_value_heads",) if mt == "qwen2_5_omni_text" else ()
    c = _class_filled(c, _OMNI_TEXT_DEFAULTS[mt], nullable=nullable)
    n = c.layer_count()
    c.layer_types(n, (FULL,))
    windowed = c.bool("use_sliding_window") if mt == "qwen2_5_omni_text" else c.has("sliding_window")
    if windowed:
        raise KvMathError(f"{mt} config sets a sliding window: transformers 5.23's thinker windows its DynamicCache "
                          "but not its attention, and no engine rule was read for it; kvmath reads these without one")
    heads = c.int("num_attention_heads")
    if "head_dim" in c.cfg and c.cfg["head_dim"] is None:
        raise KvMathError(f"{mt} config sets head_dim null: the thinker's attention reads getattr(config, 'head_dim', "
                          "...) and cannot be built with None; write a width or leave the key out")
    # a written head_dim, else hidden_size // num_attention_heads rounded down, as the attention computes it
    head_dim = c.int("head_dim") if c.has("head_dim") else c.int("hidden_size") // heads
    if head_dim % 2:  # PreTrainedConfig.validate_rope: "RoPE requires an even rotary dimension"
        raise KvMathError(f"{mt} config gives an odd head width {head_dim} (head_dim, else hidden_size // "
                          "num_attention_heads): transformers 5.23's RoPE check cannot build it; write head_dim")
    layers = [AttentionLayer(i, FULL, _kv_heads(c, heads), head_dim, head_dim) for i in range(n)]
    return _arch(c, name, source, layers, heads)


# --- Muse Spark / Muse Glimmer text decoders (issue 20, s34 batch B2) ----------------------------------------------
_MUSE_DEFAULTS = {
    "muse_spark_text": {"hidden_size": 8192, "num_hidden_layers": 62, "num_attention_heads": 128,
                        "num_key_value_heads": 16, "head_dim": 64, "sliding_window": 2048,
                        "max_position_embeddings": 1048576, "vocab_size": 202048},
    "muse_glimmer_text": {"hidden_size": 6656, "num_hidden_layers": 52, "num_attention_heads": 32,
                          "num_key_value_heads": 2, "head_dim": 128, "sliding_window": 2048,
                          "max_position_embeddings": 131072, "vocab_size": 202048},
}
"""transformers 5.23 ``MuseSparkTextConfig`` / ``MuseGlimmerTextConfig`` field defaults (configuration_muse_spark.py,
configuration_muse_glimmer.py): the cache-shaping keys."""


@_family(*_MUSE_DEFAULTS)
def _muse_text(c: _Config, name: str, source: str):
    """Muse Spark / Muse Glimmer text decoders: ``layer_types``, else full attention on every 4th layer counted back
    from the last (``(num_hidden_layers - 1 - i) % 4 == 0``, the NoPE layers) and sliding elsewhere
    (``MuseSparkTextConfig`` / ``MuseGlimmerTextConfig.__post_init__``); ``num_key_value_heads`` x ``head_dim`` on
    every layer (modeling_muse_*.py ``getattr(config, "head_dim", ...)``; the output gate and per-layer RoPE thetas
    shape no cache), the sliding layers windowed by ``sliding_window`` (``DynamicCache(config=...)``). The config
    classes' defaults fill absent keys (:data:`_MUSE_DEFAULTS`); a null one is refused (the class keeps None and
    cannot build). vLLM 0.24 registers no Muse class; llama.cpp's rules were not read: both refused."""
    c = _class_filled(c, _MUSE_DEFAULTS[c.model_type])
    return _typed_filled(c, name, source, lambda n: [FULL if (n - 1 - i) % 4 == 0 else SLIDING for i in range(n)],
                         _engines_unread(c, "vllm", "llama.cpp", why=_NO_VLLM_FILE))


# --- ModernBERT decoder (issue 20, s34 batch B2) -------------------------------------------------------------------
_MODERNBERT_DECODER_DEFAULTS = {"hidden_size": 768, "num_hidden_layers": 22, "num_attention_heads": 12,
                                "local_attention": 128, "max_position_embeddings": 8192, "vocab_size": 50368}
"""transformers 5.23 ``ModernBertDecoderConfig`` field defaults (configuration_modernbert_decoder.py)."""


@_family("modernbert-decoder")
def _modernbert_decoder(c: _Config, name: str, source: str):
    """ModernBERT decoder (``modernbert-decoder``, Ettin decoders): every head cached, ``hidden_size /
    num_attention_heads`` wide (modeling_modernbert_decoder.py ``ModernBertDecoderAttention``: q / k / v of
    ``all_head_size``, no ``num_key_value_heads`` or ``head_dim``); ``layer_types``, else layer i full iff ``i %
    global_attn_every_n_layers == 0`` (default 3) and sliding otherwise, the window ``local_attention // 2`` tokens
    whatever ``sliding_window`` says (``ModernBertDecoderConfig.__post_init__`` overwrites it; the cache is
    ``DynamicCache(config=...)``). Class defaults fill absent keys. Raises KvMathError for a null ``local_attention``
    (the class sets the window to -1), a window under 2 tokens, heads that do not divide the hidden size, or
    ``num_key_value_heads`` / ``head_dim`` keys (the attention reads neither). vLLM 0.24 registers only the encoder
    (ModernBertModel) and llama.cpp's rules were not read: both refused."""
    from dataclasses import replace

    c = _class_filled(c, _MODERNBERT_DECODER_DEFAULTS)
    for key in ("num_key_value_heads", "head_dim"):
        if c.has(key):
            raise KvMathError(f"modernbert-decoder config sets {key}: ModernBertDecoderAttention caches every head, "
                              "hidden_size / num_attention_heads wide, and reads no such key; remove it")
    n = c.layer_count()
    every = c.int("global_attn_every_n_layers", 3, minimum=1, maximum=MAX_LAYERS)
    types = c.layer_types(n, (FULL, SLIDING)) or [SLIDING if i % every else FULL for i in range(n)]
    heads, hidden = c.int("num_attention_heads"), c.int("hidden_size")
    if hidden % heads:
        raise KvMathError(f"modernbert-decoder hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    window = c.int("local_attention") // 2
    if SLIDING in types and window < 2:
        raise KvMathError(f"modernbert-decoder local_attention {c.raw('local_attention')!r} gives a window of {window} "
                          "token(s) (local_attention // 2); kvmath reads windows of at least 2")
    layers = [AttentionLayer(i, t, heads, hidden // heads, hidden // heads, window if t == SLIDING else None)
              for i, t in enumerate(types)]
    arch = _arch(c, name, source, layers, heads)
    return replace(arch, engine_refusals=_engines_unread(c, "vllm", "llama.cpp",
                                                         why="vLLM 0.24 registers only the ModernBERT encoder "
                                                             "(ModernBertModel), no decoder class"))
# --- batch A1 (issue 20, session 34): text decoders of multimodal wrappers -------------------------------------

_A1_TEXT = {
    # model_type: (the text config class's field defaults for the keys that shape the cache or the weights estimate,
    # transformers 5.23 configuration_<wrapper>.py; a null num_key_value_heads becomes the heads in each __post_init__;
    # head_dim: None = getattr(config, "head_dim", hidden_size // heads), "written" = the config must write it)
    "glm_ocr_text": ({"hidden_size": 1024, "num_hidden_layers": 16, "num_attention_heads": 16,
                      "num_key_value_heads": 8, "intermediate_size": 4096, "vocab_size": 59392,
                      "max_position_embeddings": 131072}, None),
    "granite4_vision_text": ({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                              "intermediate_size": 11008, "vocab_size": 32000, "max_position_embeddings": 2048}, None),
    "granite_docling_text": ({"hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
                              "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 133800,
                              "max_position_embeddings": 32768}, None),
    "hunyuan_vl_text": ({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                         "intermediate_size": 11008, "vocab_size": 290943, "max_position_embeddings": 2048},
                        "written"),
    "emu3_text_model": ({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                         "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 184622,
                         "max_position_embeddings": 9216}, None),
    "deepseek_ocr2_text": ({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                            "intermediate_size": 11008, "vocab_size": 102400, "max_position_embeddings": 2048},
                           "hidden"),
}
"""Text decoders of batch A1's wrappers: GQA on every layer, no window, ``num_key_value_heads`` x head width
(``"hidden"``: ``DeepseekOcr2TextConfig.__post_init__`` sets ``head_dim = hidden_size // num_attention_heads``
over any written value)."""
_A1_VLLM = {"granite_docling_text": "vLLM 0.24 registers no GraniteDocling class (model_executor/models/registry.py)",
            "emu3_text_model": "vLLM 0.24 serves Emu3 only through its Transformers backend (registry.py "
                               "_TRANSFORMERS_SUPPORTED_MODELS), whose cache layout kvmath has not read",
            "deepseek_ocr2_text": "vLLM 0.24's DeepseekOCR2ForCausalLM reads the remote-code deepseek_vl_v2 config "
                                  "(deepseek_ocr2.py DeepseekVLV2Config), not transformers' deepseek_ocr2 layout"}


@_family(*_A1_TEXT)
def _a1_text(c: _Config, name: str, source: str):
    """The text decoders of GLM-OCR (``glm_ocr_text``), Granite 4 Vision (``granite4_vision_text``), Granite-Docling
    (``granite_docling_text``) and HunYuan-VL / HunyuanOCR (``hunyuan_vl_text``): GQA on every layer, no window.
    transformers 5.23 modeling_<wrapper>.py attention: ``num_key_value_heads`` x ``getattr(config, "head_dim",
    hidden_size // num_attention_heads)``; absent keys take the config class's defaults (:data:`_A1_TEXT`).
    HunYuanVLTextConfig's ``head_dim`` field defaults to None, which its attention cannot build with, so it must be
    written (``attention_head_dim`` is its alias, ``attribute_map``). GLM-OCR's ``num_nextn_predict_layers`` (MTP) is
    not built by transformers and not recorded. vLLM 0.24 builds the language model from the text config with the
    same heads and widths: glm4_1v.py ``Glm4ForCausalLM`` for glm_ocr, granite4_vision.py a ``GraniteForCausalLM``,
    hunyuan_vision.py ``HunYuanDenseV1ForCausalLM`` (refused when ``use_cla`` is set: vLLM shares K / V across layers
    where transformers does not); it registers no Granite-Docling class (refused). Raises KvMathError for a
    ``sliding_window`` (transformers' cache would window every layer), broken head counts, or a missing head_dim."""
    from dataclasses import replace

    defaults, head = _A1_TEXT[c.model_type]
    cfg = dict(c.cfg)
    if c.has("attention_head_dim"):
        if c.has("head_dim") and c.int("head_dim") != c.int("attention_head_dim"):
            raise KvMathError(f"{c.model_type} config sets head_dim and its alias attention_head_dim, differently")
        cfg["head_dim"] = c.cfg["attention_head_dim"]
    c = _class_filled(_Config(cfg, c.model_type), defaults, ("num_key_value_heads",))
    if head == "hidden":
        c = _Config(dict(c.cfg, head_dim=c.int("hidden_size") // c.int("num_attention_heads")), c.model_type)
        if c.int("hidden_size") % c.int("num_attention_heads"):
            raise KvMathError(f"{c.model_type} hidden_size is not a multiple of num_attention_heads")
    if head == "written" and not c.has("head_dim"):
        raise KvMathError(f"{c.model_type} config has no head_dim: its config class keeps None there and its "
                          "attention cannot be built without it; write it")
    arch = _full_only(c, name, source, window=f"{c.model_type}'s config class defines no window")
    refusals = (("vllm", _A1_VLLM[c.model_type]),) if c.model_type in _A1_VLLM else ()
    if c.model_type == "hunyuan_vl_text" and c.bool("use_cla"):
        refusals = (("vllm", "vLLM 0.24 hunyuan_v1.py shares K / V across cla_share_factor layers when use_cla is "
                             "set (HunYuanVLTextConfig does not: transformers caches every layer); not priced"),)
    return replace(arch, engine_refusals=refusals)


_CHAMELEON_DEFAULTS = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                       "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 65536,
                       "max_position_embeddings": 4096}
"""``ChameleonConfig``'s field defaults (transformers 5.23 configuration_chameleon.py) for the cache-shaping and
weights keys; its ``num_key_value_heads`` (default 32) is not filled from the heads when null."""


@_family("chameleon")
def _chameleon(c: _Config, name: str, source: str):
    """Chameleon (``chameleon``, facebook/chameleon-7b / -30b; a flat decoder config, its VQ-GAN image tokenizer in
    ``vq_config`` caches nothing): GQA on every layer, no window. transformers 5.23 modeling_chameleon.py
    ``ChameleonAttention``: ``head_dim = hidden_size // num_heads`` (a written ``head_dim`` other than that is
    refused), ``num_key_value_heads`` K and V heads; absent keys take ``ChameleonConfig``'s defaults
    (:data:`_CHAMELEON_DEFAULTS`; a null KV-head count is refused, transformers cannot build it). vLLM 0.24
    chameleon.py ``ChameleonAttention`` caches ``num_key_value_heads`` x ``hidden_size // num_heads`` as well:
    priced generically; llama.cpp's LLM_ARCH_CHAMELEON loader was not read: refused."""
    from dataclasses import replace

    c = _class_filled(c, _CHAMELEON_DEFAULTS)
    cfg = dict(c.cfg, head_dim=_every_head_width(c))
    arch = _full_only(_Config(cfg, c.model_type), name, source, window="ChameleonConfig defines no window")
    return replace(arch, engine_refusals=_engines_unread(c, "llama.cpp"))


# --- issue 20, batch A2: text decoders of engine-served multimodal wrappers -----------------------------------

_PADDLEOCR_VL_TEXT = {"num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 3072, "vocab_size": 103424,
                      "max_position_embeddings": 131072}
"""transformers 5.23 configuration_paddleocr_vl.py ``PaddleOCRTextConfig`` field defaults for the KV-head, head-width
and weight keys (the layer and head counts and hidden size must be written, as for every family)."""


@_family("paddleocr_vl_text")
def _paddleocr_vl_text(c: _Config, name: str, source: str):
    """PaddleOCR-VL's text decoder (``paddleocr_vl_text``, an ERNIE 4.5 0.3B layout): full attention on every layer,
    ``num_key_value_heads`` x ``head_dim`` K and V (modeling_paddleocr_vl.py ``PaddleOCRAttention``; the model builds
    ``DynamicCache(config=self.config)``), with ``PaddleOCRTextConfig``'s defaults for absent keys (2 KV heads, head
    width 128); a null ``num_key_value_heads`` / ``head_dim`` becomes the heads / ``hidden_size / heads``
    (its ``__post_init__``). The class defines no window: a ``sliding_window`` would window every layer's cache
    (cache_utils get_layer_types_and_kwargs) while the attention reads ``layer_types``, so it is refused, and so is a
    ``layer_types`` other than full. vLLM 0.24 paddleocr_vl.py folds the built text config into the top-level config and
    runs ``Ernie4_5ForCausalLM`` (models/ernie45.py, the Llama model: ``num_key_value_heads`` x ``head_dim``, full)
    on it: priced generically. llama.cpp: refused (its converter for PaddleOCR-VL was not read)."""
    from dataclasses import replace

    c = _class_filled(c, _PADDLEOCR_VL_TEXT, ("num_key_value_heads", "head_dim"))
    arch = _full_only(c, name, source)
    return replace(arch, engine_refusals=_engines_unread(c, "llama.cpp"))


_MOLMO2_TEXT = {"num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936,
                "max_position_embeddings": 36864}
"""transformers 5.23 configuration_molmo2.py ``Molmo2TextConfig`` field defaults for the KV-head, head-width and
weight keys (``head_dim`` 128 whatever ``hidden_size / heads``; layer and head counts and hidden size must be
written)."""


@_family("molmo2_text")
def _molmo2_text(c: _Config, name: str, source: str):
    """Molmo 2's text decoder (``molmo2_text``): full attention on every layer, ``num_key_value_heads`` x ``head_dim``
    K and V (modeling_molmo2.py ``Molmo2Attention``, ``DynamicCache(config=self.config)`` in ``Molmo2TextModel``),
    with ``Molmo2TextConfig``'s defaults for absent keys (8 KV heads, head width 128). The class defines no
    window: a ``sliding_window`` (every layer windowed in the cache) or non-full ``layer_types`` is refused. vLLM 0.24
    molmo2.py reads ``num_key_value_heads`` and ``head_dim`` from the built text config into its own ``TextConfig``
    and runs full ``Attention`` of that width on ``num_hidden_layers`` layers: priced generically. llama.cpp refused
    (its converter for Molmo 2 was not read)."""
    from dataclasses import replace

    c = _class_filled(c, _MOLMO2_TEXT)
    arch = _full_only(c, name, source)
    return replace(arch, engine_refusals=_engines_unread(c, "llama.cpp"))


_OLD_MHA.update({
    # Kosmos-2 / 2.5's text decoders (Kosmos2TextConfig / Kosmos2_5TextConfig attribute_map)
    **{t: ({"embed_dim": "hidden_size", "attention_heads": "num_attention_heads", "layers": "num_hidden_layers",
            "ffn_dim": "intermediate_size"}, sizes)
       for t, sizes in (("kosmos_2_text_model", {"hidden_size": 2048, "num_attention_heads": 32,
                                                 "num_hidden_layers": 24}),
                        ("kosmos_2_5_text_model", {"hidden_size": 1536, "num_attention_heads": 16,
                                                   "num_hidden_layers": 24}))},
})


@_family("kosmos_2_text_model", "kosmos_2_5_text_model")
def _kosmos_text(c: _Config, name: str, source: str):
    """Kosmos-2 / Kosmos-2.5's text decoders: every head cached on every layer, ``embed_dim / attention_heads`` wide
    (transformers 5.23 modeling_kosmos2.py / modeling_kosmos2_5.py ``KosmosTextAttention``: ``head_dim = embed_dim //
    num_heads``; ``DynamicCache(config=self.config)``; no window field), read as :func:`_old_mha` reads its
    families (sizes must be written). Kosmos-2 with ``add_cross_attention`` or ``is_encoder_decoder`` builds an
    ``EncoderDecoderCache`` with cross-attention entries kvmath has no spec for: refused. vLLM 0.24 has no Kosmos
    model file; llama.cpp not read: both refused."""
    for key in ("add_cross_attention", "is_encoder_decoder"):
        if c.bool(key):
            raise KvMathError(f"{c.model_type} config sets {key}: transformers 5.23 then caches cross-attention keys "
                              "and values beside the self-attention cache (EncoderDecoderCache), which kvmath does not "
                              "size")
    return _old_mha(c, name, source)


# --- issue 20, session 34 (famC5): encoder-decoder cross-attention caches ------------------------------------------

_WHISPER_DEFAULTS = {"decoder_layers": 4, "decoder_attention_heads": 6, "d_model": 384, "max_source_positions": 1500,
                     "max_target_positions": 448, "decoder_ffn_dim": 1536, "vocab_size": 51865}
"""transformers 5.23 configuration_whisper.py ``WhisperConfig`` field defaults for the keys the decoder's cache and
size read (a published Whisper config writes them all)."""
_WHISPER_ENGINES = (
    ("vllm", "vLLM 0.24's WhisperForConditionalGeneration keeps its cross-attention K/V in a CrossAttentionSpec cache "
             "sized by the scheduler's encoder budget (max_num_encoder_input_tokens), an allocation kvmath does not "
             "model"),
    ("sglang", "kvmath has not read whether or how SGLang serves Whisper's encoder-decoder cache"),
    ("llama.cpp", "llama.cpp does not run Whisper (whisper.cpp is a separate project)"),
)


@_family("whisper")
def _whisper(c: _Config, name: str, source: str):
    """Whisper (``whisper``, WhisperForConditionalGeneration): each of the ``decoder_layers`` decoder layers caches its
    causal self-attention K and V for every decoder token and its cross-attention K and V over the encoder's output,
    ``decoder_attention_heads`` heads of ``d_model / decoder_attention_heads`` (transformers 5.23 modeling_whisper.py
    ``WhisperAttention``: ``head_dim = embed_dim // num_heads``, a width that does not divide is refused as it
    refuses it; ``WhisperDecoder`` builds an ``EncoderDecoderCache`` of two ``DynamicCache`` of ``decoder_layers``
    layers). The encoder output is always ``max_source_positions`` frames (``WhisperEncoder.forward`` refuses mel
    input not ``max_source_positions x 2 x 2`` / 2 long: 1,500 frames for every released size), so the cross part is
    fixed per sequence. The decoder holds at most ``max_target_positions`` tokens (kvmath's max_position_embeddings).
    The encoder caches nothing. vLLM, SGLang and llama.cpp are refused (``_WHISPER_ENGINES``)."""
    from dataclasses import replace

    from .specs import CrossAttentionLayer

    c = _Config({**_WHISPER_DEFAULTS, **{k: v for k, v in c.cfg.items() if v is not None}}, c.model_type)
    n = c.int("decoder_layers", maximum=MAX_LAYERS)
    heads = c.int("decoder_attention_heads")
    d_model = c.int("d_model")
    if d_model % heads:
        raise KvMathError(f"whisper config: d_model {d_model} is not a multiple of decoder_attention_heads {heads} "
                          "(transformers' WhisperAttention refuses it)")
    head_dim = d_model // heads
    frames = c.int("max_source_positions")
    layers = [CrossAttentionLayer(i, heads, head_dim, head_dim, frames, "encoder frames",
                                  AttentionLayer(i, FULL, heads, head_dim, head_dim)) for i in range(n)]
    cfg = dict(c.cfg, hidden_size=d_model, max_position_embeddings=c.int("max_target_positions"),
               intermediate_size=c.int("decoder_ffn_dim"))
    cfg.pop("sliding_window", None)
    arch = _arch(_Config(cfg, c.model_type), name, source, layers, heads)
    return replace(arch, engine_refusals=_WHISPER_ENGINES)
