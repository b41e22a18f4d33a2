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
    CHUNKED, CONV, FULL, LINEAR, SLIDING, AttentionLayer, ChunkedAttentionLayer, DSALayer, Mamba1Layer, MLALayer,
    ShortConvLayer,
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
_GPT_DEFAULTS = {"gpt2": (768, 12, 12, 1024), "gptj": (4096, 28, 16, 2048), "gpt_bigcode": (768, 12, 12, 1024)}
"""The config classes' own defaults of n_embd, n_layer, n_head, n_positions (a config must write them out)."""


@_family("gpt2", "gptj", "gpt_bigcode")
def _gpt2(c: _Config, name: str, source: str):
    """GPT-2, GPT-J and GPTBigCode (StarCoder 1, SantaCoder): full attention on every layer under GPT-2's key names
    (``n_embd``, ``n_layer``, ``n_head``, ``n_positions``; :data:`_GPT_KEYS`), head width ``n_embd / n_head``,
    MLP width ``n_inner`` or ``4 x n_embd`` when null (modeling_gpt2.py / modeling_gptj.py /
    modeling_gpt_bigcode.py, transformers 5.23). KV heads: ``n_head``, and 1 for GPTBigCode with ``multi_query``
    (modeling_gpt_bigcode.py ``kv_heads = 1 if self.multi_query else self.num_heads``; vLLM's
    ``ModelConfig.get_total_num_kv_heads`` returns 1 for ``multi_query``; llama.cpp's converter writes
    ``head_count_kv`` 1). A config leaving a size or ``multi_query`` to its class default is refused."""
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


@_family("starcoder2", "phimoe")
def _window_unchecked(c: _Config, name: str, source: str):
    """StarCoder2 and Phi-3.5-MoE: full attention; a ``sliding_window`` (the published configs set one) is
    refused: transformers 5.23 would window every layer, and kvmath has not checked what vLLM's and llama.cpp's
    converters do with it for these families."""
    return _full_only(c, name, source, window=_WINDOW_UNCHECKED)


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
    with ``sliding_window`` null every layer is full. A string pattern (``"LLLG"``) without ``layer_types`` is
    refused: transformers 5.23's rule takes an integer."""
    if c.raw("layer_types") is None:
        if not c.has("sliding_window"):
            return _typed(c, name, source, lambda n: [FULL] * n)
        pattern = c.raw("sliding_window_pattern")
        if isinstance(pattern, str):
            raise KvMathError(f"exaone4 config has sliding_window_pattern {pattern!r} and no layer_types; "
                              "transformers 5.23 reads an integer pattern: write layer_types")
        p = c.int("sliding_window_pattern", None, maximum=MAX_LAYERS) if c.has("sliding_window_pattern") else None
        if p is None:
            raise KvMathError("exaone4 config has a sliding_window but neither layer_types nor sliding_window_pattern")
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
    attention at ``full_attn_idxs`` (default: every layer) and conv elsewhere; conv state ``[B, hidden_size,
    conv_L_cache]`` (``Lfm2ShortConv``); attention ``num_key_value_heads`` x ``hidden_size /
    num_attention_heads``. ``conv_L_cache`` must be written (class default 3).
    """
    n = c.layer_count()
    types = c.layer_types(n, (FULL, CONV))
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
        raise KvMathError("afmoe config has no layer_types: transformers derives them from global_attn_every_n_layers "
                          "but vLLM's AfmoeConfig does not (its attention indexes config.layer_types); write them out")
    types = c.layer_types(n, (FULL, SLIDING))
    if types != [SLIDING if (i + 1) % 4 else FULL for i in range(n)]:
        raise KvMathError("afmoe layer_types is not 3 sliding layers to 1 full: llama.cpp's loader sets that pattern "
                          "whatever the config says, so the engines would cache different layers")
    _needs_written(c, "head_dim", 128)
    if SLIDING in types:
        _needs_written(c, "sliding_window", 1024)
    return _typed(c, name, source, lambda n: [FULL] * n, head_dim=c.int("head_dim"))


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
