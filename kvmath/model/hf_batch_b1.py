"""Family rules for issue 20's session-34 batch B1: newer text decoders transformers 5.23 builds (one rule each).

Each rule reads a config as transformers 5.23 builds it (``models/<family>/configuration_*.py`` defaults and
``__post_init__``, the modeling file's cache updates) and refuses, in one line, a key that would change the layout
and that it does not model. tests/test_families.py checks every rule against transformers' real cache on the CPU.
Engines price a family generically only where their model file was read and allocates what kvmath models; the
others are refused per family (``Architecture.engine_refusals``). Registered into ``kvmath.model.hf``'s registry
by ``@_family``; the multimodal wrappers of this batch are added to ``hf._WRAPPERS`` at the end of this module.
"""

from __future__ import annotations

from .hf import _Config, _family
from .hf_families import _class_filled, _mla_filled

_MISTRAL4_DEFAULTS = {"kv_lora_rank": 256, "qk_rope_head_dim": 64, "qk_nope_head_dim": 64, "v_head_dim": 128}
"""transformers 5.23 ``Mistral4Config`` field defaults (configuration_mistral4.py) of the cached widths; the depth
and head count must be written (as every other family here)."""


@_family("mistral4")
def _mistral4(c: _Config, name: str, source: str):
    """Mistral Small 4 (``mistral4``; published as the ``text_config`` of a ``mistral3`` wrapper): MLA on every
    layer. transformers 5.23 ``Mistral4Attention`` caches the normalised latent ``k_pass`` ``[B, 1, T,
    kv_lora_rank]`` as keys and ``k_rot`` ``[B, 1, T, qk_rope_head_dim]`` as values (modeling_mistral4.py; class
    defaults 256 and 64, :data:`_MISTRAL4_DEFAULTS`); ``num_key_value_heads`` and ``head_dim`` (set to
    ``qk_nope_head_dim + qk_rope_head_dim`` by ``__post_init__``) shape no cache. The config class has no window
    and no ``layer_types``: a ``sliding_window`` is refused. llama.cpp's ``llama_model_mistral4`` is
    ``llama_model_deepseek2`` (its hparams, tensors and graph: src/models/models.h), priced as DeepSeek-V3's MLA;
    vLLM 0.24 registers no ``Mistral4ForCausalLM`` (model_executor/models/registry.py): refused there."""
    c = _class_filled(c, _MISTRAL4_DEFAULTS)
    c.layer_types(c.layer_count(), ("full_attention",))  # only validated: every layer is MLA
    vllm = ("vLLM 0.24 registers no Mistral4ForCausalLM (model_executor/models/registry.py), and how its "
            "Mistral3ForConditionalGeneration builds a mistral4 text_config was not read")
    return _mla_filled(c, name, source, c.layer_count(), (("vllm", vllm),))


_ERNIE_VL_TEXT_DEFAULTS = {"num_key_value_heads": 4}
"""transformers 5.23 ``Ernie4_5_VLMoeTextConfig`` field default (configuration_ernie4_5_vl_moe.py) of the cached KV
head count; the depth, heads and width must be written (as every other family here)."""


@_family("ernie4_5_vl_moe_text")
def _ernie4_5_vl_moe_text(c: _Config, name: str, source: str):
    """ERNIE 4.5 VL's text decoder (``ernie4_5_vl_moe_text``, the ``text_config`` of ``ernie4_5_vl_moe``): full
    attention on every layer, ``num_key_value_heads`` (default 4) x ``getattr(config, "head_dim", hidden_size //
    num_attention_heads)`` (modeling_ernie4_5_vl_moe.py ``Ernie4_5_VLMoeTextAttention``: a written null
    ``head_dim`` stays None there and the model cannot be built, so it is refused); the text / vision expert pools
    (``mlp_layer_types``, ``moe_intermediate_size`` [text, vision]) shape no cache. The config class has no window
    and no ``layer_types``. vLLM 0.24's ernie45_vl.py reads the flat remote-code config (``hidden_size``,
    ``spatial_conv_size`` at the top level), not a ``text_config``: refused there; llama.cpp not read."""
    from dataclasses import replace

    from ..errors import KvMathError
    from .hf import _full_only
    from .hf_families import _engines_unread

    if "head_dim" in c.cfg and c.cfg["head_dim"] is None:
        raise KvMathError("ernie4_5_vl_moe_text config sets head_dim null: Ernie4_5_VLMoeTextAttention reads it with "
                          "getattr and keeps None, so transformers cannot build it; write a width or leave it out")
    c = _class_filled(c, _ERNIE_VL_TEXT_DEFAULTS)
    arch = _full_only(c, name, source)
    vllm = ("vLLM 0.24 models/ernie45_vl.py reads ERNIE 4.5 VL's flat remote-code config (hidden_size, "
            "spatial_conv_size at the top level), not transformers' text_config layout")
    return replace(arch, engine_refusals=(("vllm", vllm),) + _engines_unread(c, "llama.cpp"))



_GEMMA4_UNIFIED_DEFAULTS = {"num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024}
"""transformers 5.23 ``Gemma4UnifiedTextConfig`` field defaults of the sliding layers' cache widths and window
(configuration_gemma4_unified.py; ``Gemma4TextConfig``'s window default is 512)."""


@_family("gemma4_unified_text")
def _gemma4_unified_text(c: _Config, name: str, source: str):
    """Gemma 4 12B's text decoder (``gemma4_unified_text``, the ``text_config`` of ``gemma4_unified``): read by the
    ``gemma4_text`` rule (``hf._gemma4``), whose config class it copies: transformers 5.23
    ``Gemma4UnifiedTextConfig.__post_init__`` is ``Gemma4TextConfig``'s (layer_types 5 sliding : 1 full, the last
    layer forced full, full layers' ``global_head_dim`` / ``num_global_key_value_heads`` turned into
    ``per_layer_config``, ``kv_sharing_modes``) without the PLE and MoE fields, and ``Gemma4UnifiedTextAttention``
    caches as ``Gemma4TextAttention`` (modeling_gemma4_unified.py). Class defaults of its own:
    :data:`_GEMMA4_UNIFIED_DEFAULTS`; ``use_bidirectional_attention`` defaults to ``"vision"`` (a mask over image
    tokens, no cache change) and ``"all"`` (which halves ``sliding_window``) is refused as the gemma4 rule refuses
    it. vLLM 0.24 builds the text part as ``Gemma4ForCausalLM`` (models/gemma4_unified.py) whose full layers read
    ``config.global_head_dim``, an attribute transformers 5.23's config class does not keep (it writes
    ``per_layer_config``): refused there; llama.cpp not read."""
    from dataclasses import replace

    from .hf import _gemma4
    from .hf_families import _engines_unread

    arch = _gemma4(_class_filled(c, _GEMMA4_UNIFIED_DEFAULTS), name, source)
    vllm = ("vLLM 0.24 builds it as Gemma4ForCausalLM (models/gemma4_unified.py), whose full layers read "
            "config.global_head_dim, an attribute transformers 5.23's Gemma4UnifiedTextConfig does not keep; which "
            "width vLLM allocates was not checked")
    return replace(arch, engine_refusals=(("vllm", vllm),) + _engines_unread(c, "llama.cpp"))



_COSMOS3_EDGE_TEXT_DEFAULTS = {"num_key_value_heads": 8, "head_dim": 128}
"""transformers 5.23 ``Cosmos3EdgeTextConfig`` field defaults (configuration_cosmos3_edge.py); ``__post_init__``
turns a null ``head_dim`` into ``hidden_size / num_attention_heads`` and a null KV-head count into the heads."""


@_family("cosmos3_edge_text")
def _cosmos3_edge_text(c: _Config, name: str, source: str):
    """Cosmos 3 Edge's text decoder (``cosmos3_edge_text``, the ``text_config`` of ``cosmos3_edge``): full attention
    on every layer, ``num_key_value_heads`` x ``head_dim`` (class defaults 8 and 128, :data:`_COSMOS3_EDGE_TEXT_DEFAULTS`;
    modeling_cosmos3_edge.py ``Cosmos3EdgeTextAttention``); the config class has no window and no ``layer_types``.
    vLLM 0.24 registers no Cosmos3EdgeForConditionalGeneration and llama.cpp was not read: both refused."""
    from dataclasses import replace

    from .hf import _full_only
    from .hf_families import _NO_VLLM_FILE, _engines_unread

    c = _class_filled(c, _COSMOS3_EDGE_TEXT_DEFAULTS, ("num_key_value_heads", "head_dim"))
    arch = _full_only(c, name, source)
    return replace(arch, engine_refusals=_engines_unread(c, "vllm", "llama.cpp", why=_NO_VLLM_FILE))


# --- wrappers of this batch (appended to hf's tables: their text parts are read by the rules above or in hf) ---

def _register_wrappers() -> None:
    """Add this batch's multimodal wrappers to ``hf._WRAPPERS`` (outer model_type -> its text part's model_type),
    ``hf._FORCED_TEXT`` (config classes whose ``sub_configs_defaults`` name a concrete text-config class, so the
    text_config's own ``model_type`` is not used: transformers 5.23 configuration_utils.py
    ``SubConfigSpec.create_subconfig``) and ``hf._WRAPPER_REFUSALS``.

    - ``glmga`` (``GlmgaConfig``, a ``Glm46VConfig``: ``SubConfigSpec(AutoConfig, model_type="glm4v_text")``,
      modeled by ``Glm46VForConditionalGeneration``), as ``glm46v``;
    - ``cohere_compass`` (``CohereCompassConfig``: ``text_config`` is ``CohereCompassTextConfig``; the model builds
      ``AutoModel.from_config(config.text_config)``, modeling_cohere_compass.py);
    - ``ernie4_5_vl_moe`` (``Ernie4_5_VLMoeConfig``: ``text_config`` is ``Ernie4_5_VLMoeTextConfig``);
    - ``gemma4_unified`` (``Gemma4UnifiedConfig``: ``text_config`` is ``Gemma4UnifiedTextConfig``; encoder-free
      vision and audio embedders, no cache of their own);
    - ``cosmos3_edge`` (``Cosmos3EdgeConfig``: ``text_config`` is ``Cosmos3EdgeTextConfig``) and ``cosmos3_omni``
      (``Cosmos3OmniConfig``: ``SubConfigSpec(AutoConfig, model_type="qwen3_vl_text")``; ``Cosmos3OmniModel``
      builds ``AutoModel.from_config(config.text_config)``, modeling_cosmos3_omni.py).

    The Gemma 4 drafters ``gemma4_assistant`` / ``gemma4_unified_assistant`` are refused in one line
    (``hf._UNREAD_WRAPPERS`` / ``hf._NEEDED_FIELDS``): ``Gemma4AssistantConfig.__post_init__`` makes every layer
    KV-shared (``num_kv_shared_layers = num_hidden_layers``) and the model's forward requires the target model's
    ``shared_kv_states`` (modeling_gemma4_assistant.py), so a drafter keeps no KV cache of its own.
    """
    from . import hf

    hf._WRAPPERS.update({"glmga": "glm4v_text", "cohere_compass": "cohere_compass_text",
                         "ernie4_5_vl_moe": "ernie4_5_vl_moe_text", "gemma4_unified": "gemma4_unified_text",
                         "cosmos3_edge": "cosmos3_edge_text", "cosmos3_omni": "qwen3_vl_text"})
    hf._FORCED_TEXT = tuple(hf._FORCED_TEXT) + ("cohere_compass", "ernie4_5_vl_moe", "gemma4_unified", "cosmos3_edge")
    hf._WRAPPER_REFUSALS.update({
        "glmga": (("vllm", "vLLM 0.24 registers neither GlmgaForConditionalGeneration nor "
                           "Glm46VForConditionalGeneration (model_executor/models/registry.py)"),
                  ("llama.cpp", "no llama.cpp converter for the glmga wrapper was read")),
        "cohere_compass": (("vllm", "vLLM 0.24 registers no CohereCompassForConditionalGeneration "
                                    "(model_executor/models/registry.py)"),),
        "cosmos3_omni": (("vllm", "vLLM 0.24 registers no Cosmos3OmniForConditionalGeneration (its "
                                  "Cosmos3ForConditionalGeneration, models/cosmos3.py, was not read)"),
                         ("llama.cpp", "no llama.cpp converter for the cosmos3_omni wrapper was read")),
    })
    drafter = ("a Gemma 4 drafter: Gemma4AssistantConfig makes every layer KV-shared (num_kv_shared_layers = "
               "num_hidden_layers) and its forward reads the target model's shared_kv_states, so it keeps no KV cache "
               "of its own; size the target model")
    hf._UNREAD_WRAPPERS.update({"gemma4_assistant": drafter, "gemma4_unified_assistant": drafter})
    hf._UNREAD_WRAPPERS.update(_UNREAD_B1)
    hf._NEEDED_FIELDS.update({t: why for t, why in _UNREAD_B1_TEXT.items() if t not in hf._NEEDED_FIELDS})
    hf._NEEDED_FIELDS.update({"gemma4_assistant": drafter, "gemma4_unified_assistant": drafter})



_UNREAD_B1 = {
    "diffusion_gemma": "DiffusionGemma is a block-diffusion encoder-decoder: the encoder fills the KV cache and the "
                       "decoder reads it without storing its block (modeling_diffusion_gemma.py "
                       "DiffusionGemmaDecoderTextAttention.append_to_cache), a loop kvmath has no rule for",
    "mistral_large4": "Mistral Large 4's mistral_large4_text: MLA with a DSA indexer (indexer_types), layers reading "
                      "another layer's cache (kv_source_layers) and no_rope_layers; its rule was not written",
    "glm5_next": "GLM-5 Next's glm5_next_text: KDA linear-attention layers beside MLA layers with a pooled DSA indexer "
                 "(index_kpool, indexer_types); its rule was not written",
    "dots3_note": "dots3_note_text: MLA with a DSA indexer on indexed_attention layers beside per-layer sliding layers "
                  "(use_dsa, use_sliding_window, per_layer_config); its rule was not written",
    "inkling2": "inkling2_text: hybrid / hybrid_sliding layer_types whose cache layers kvmath has not read",
    "inkling_mm_model": "inkling_text: hybrid / hybrid_sliding layer_types whose cache layers kvmath has not read",
}
"""Wrappers of this batch not read (refused in one line naming why: transformers 5.23 source)."""
_UNREAD_B1_TEXT = {
    "mistral_large4_text": _UNREAD_B1["mistral_large4"], "glm5_next_text": _UNREAD_B1["glm5_next"],
    "blt": ("a Byte Latent Transformer: one EncoderDecoderCache whose self-attention part the local encoder and the "
            "global transformer fill and whose cross-attention part the byte decoder fills (modeling_blt.py "
            "BltModel.forward), over byte patches kvmath has no rule for"),
}


_register_wrappers()
