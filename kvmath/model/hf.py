"""Load a Hugging Face ``config.json`` (path, dict, or a model id kvmath knows) into an Architecture.

Every field is read under its HF key name. Each model family's rules for turning keys into layers
follow transformers 5.23 (``models/<family>/configuration_*.py``), the reference implementation that
the tests run on the CPU. Anything the loader does not understand is an error that names the model
type and the fields it would need: kvmath never guesses dense attention.

Families (one rule each; this module and ``hf_families``): dense / GQA / MQA attention with every form of
sliding window (``llama``, ``mistral``, ``qwen2``, ``qwen3``, ``gemma2``, ``gpt_oss``, ``phi3``, ``exaone4``,
``olmo3``, ``cohere2``, Qwen2.5-VL's text part, ``mimo_v2_flash`` with twice the KV heads on its sliding layers;
vLLM and llama.cpp refuse it), full attention only (``qwen3_moe``, ``mixtral``, ``glm4``,
``glm4_moe``, ``minimax_m2``, ``olmo2``, ``olmoe``, ``cohere``, ``granite``, ``granitemoe``, ``internlm3``,
``ernie4_5``, ``hunyuan_v1_*``, ``seed_oss``, ``ministral3``, ``qwen3_vl*_text``, ``qwen2_moe``, ``smollm3``;
a window there is refused unless its engine rules were checked), Gemma 3 / 3n / 4 (per-type heads and widths,
KV sharing), Llama 4 (chunked attention), Gated DeltaNet hybrids (``qwen3_next``, ``qwen3_5_text``,
``qwen3_5_moe_text``), MLA (``deepseek_v2``, ``deepseek_v3``, ``glm4_moe_lite``), MLA with the DSA indexer
(``deepseek_v32``, ``glm_moe_dsa``), DeepSeek-V4's sliding window with compressed entries (``deepseek_v4``;
transformers only: vLLM, SGLang and llama.cpp refuse it), Kimi Linear (MLA + Kimi Delta Attention, 1-based layer
lists), Nemotron-H, Granite 4.0-H and Bamba (Mamba-2 and attention), pure Mamba-2 (``mamba2``), Falcon-H1
(attention and Mamba-2 side by side in every layer), MiniMax-Text-01 / M1 (``minimax``: lightning attention and full
attention), Mamba-1 (``mamba``, ``falcon_mamba``, ``jamba``) and LFM2's short convolutions. Multimodal wrappers
(``_WRAPPERS``: Qwen-VL, Gemma 3 / 3n / 4, Llama 4, Mistral 3, LFM2-VL, LLaVA, LLaVA-NeXT / -NeXT-Video / -OneVision,
InternVL, Aya Vision, Command A Vision, PaliGemma, Idefics3, SmolVLM, EXAONE 4.5, MiniCPM-V 4.6 / 4.7,
GLM-4.1V / 4.5V / 4.6V (``glm4v_text``, ``glm4v_moe_text``), Voxtral, Kimi K2.5, Step 3.7 whose ``step3p5``
text decoder is full / sliding GQA; LightOnOCR, Qianfan-OCR, Video-LLaVA, VipLLaVA, Perception LM, Janus, Ovis2,
VideoLLaMA3, ShieldGemma 2, MiniCPM-OCR, LFM3-VL, PaddleOCR-VL with its ``paddleocr_vl_text`` decoder, flat or
nested, and Molmo 2 with its ``molmo2_text`` decoder, both full GQA; Kosmos-2 / 2.5 (every head of their
``kosmos_2_text_model`` / ``kosmos_2_5_text_model``), InstructBLIP / -Video (OPT or Llama text part) and
PP-Chart2Table) are read from their text part (a sparse one with its text class's defaults), with
the vision tower's size; any other outer ``model_type`` holding a ``text_config`` is refused (the
encoder-decoders Pix2Struct, PP-FormulaNet and UDOP and Unlimited-OCR's reference sliding window naming why).
Older layouts:
``gpt2``, ``gptj``, ``gpt_bigcode``
(GPT-2's key names; ``gpt-sw3`` is GPT-2, ``codegen`` under the same names), ``opt`` (``ffn_dim``), ``bloom`` (``n_layer`` /
``n_head``), ``falcon`` (the multi-query 7B; 40B's broadcast cache is refused), ``dbrx`` and ``mpt`` (MosaicML's
``d_model`` / ``n_heads`` / ``n_layers``, DBRX's ``attn_config.kv_n_heads``), ``persimmon`` (every head,
``hidden_size / heads`` wide), and plain attention in ``gpt_neox``, ``olmo``, ``stablelm``, ``nemotron``,
``apertus``, ``arcee``, ``flex_olmo``, ``nanochat``, ``bitnet``, ``helium``, ``glm`` (GLM-4-9B's transformers
layout); Arcee Trinity (``afmoe``: 3 sliding to 1 full, written ``layer_types``), Granite SWA (``granite_swa``,
``granitemoe_swa``: full every 4th layer from layer 0), ``ministral`` (one window for every layer, or
``layer_types``), ``gpt_neo`` (its local layers windowed by the mask only: every layer caches every token in
transformers; vLLM and llama.cpp refuse it). Hybrid and state-space decoders in ``hf_hybrids``: OLMo Hybrid
(``olmo_hybrid``: Gated DeltaNet and full attention), Zamba2 (``zamba2``: Mamba-2 on every layer, a shared attention
block before it on ``hybrid`` layers), Ling 3.0 (``bailing_hybrid``: KDA and MLA), LFM3 (``lfm3``: short convolutions,
sliding and full attention), HRM-Text (``hrm_text``: one K/V slot per attention invocation of its H / L
cycles), RecurrentGemma (``recurrent_gemma``: RG-LRU blocks and local attention); the text decoders ``aria_text`` (full GQA) and ``cohere_compass_text`` (full / sliding ``layer_types``).
Batch A1 (session 34): the wrappers Aria (``aria``), HyperCLOVA X SEED Vision v2 (``hyperclovax_vision_v2``), GLM-OCR
(``glm_ocr``, its ``glm_ocr_text`` decoder: GQA, no window), BLIP-2 (``blip-2``, an OPT text part) and Fuyu (``fuyu``,
a Persimmon text part lifted from its flat config), Granite 4 Vision (``granite4_vision_text``), Granite-Docling
(``granite_docling_text``) and HunYuan-VL / HunyuanOCR (``hunyuan_vl``: flat or nested, ``hunyuan_vl_text``, head_dim
written), Emu3 (``emu3_text_model``), DeepSeek-OCR 2 (``deepseek_ocr2_text``: head_dim always hidden / heads),
DeepSeek-VL / -VL-Hybrid (``llama``), GOT-OCR 2 and FastVLM (``qwen2``) and Idefics2 (``mistral``) read from their text
part (GQA on every layer), and Chameleon (``chameleon``: GQA, ``hidden_size / heads`` wide); Florence-2 (an
encoder-decoder), IDEFICS and Evolla (cross-attention blocks) are refused naming why.
Read with their config classes' defaults for absent keys: full
attention in ``solar_open``, ``hy_v3``, ``iquestcoder``, ``jais2``, ``hyperclovax``, ``diffllama``, ``doge``, ``jetmoe``
(``num_key_value_heads`` x ``kv_channels``), and every head in ``xglm``, ``biogpt``, ``ctrl``,
``gpt_neox_japanese``; full / sliding by each class's own rule in ``dots1``, ``exaone_moe``, ``cohere2_moe``,
``cwm``, ``vaultgemma``, ``laguna``, ``mellum``, ``flint``, ``kolibri1``, and ``afmoe`` without ``layer_types``;
MLA latents in ``minicpm3``, ``youtu``, ``axk1`` and ``longcat_flash`` (two MLA sublayers per decoder layer); MLA
with the DSA indexer in ``axk2`` and ``hy_v4`` (its ``shared`` layers cache no indexer keys). Issue 20's session-34 batch B1 (``hf_batch_b1``): Mistral Small 4 (``mistral4``: MLA latents, also inside a
``mistral3`` wrapper), ERNIE 4.5 VL's text decoder (``ernie4_5_vl_moe_text``: full GQA), Gemma 4 12B's text decoder
(``gemma4_unified_text``, by the ``gemma4_text`` rule), Cosmos 3 Edge's (``cosmos3_edge_text``: full GQA) and the
wrappers ``glmga``, ``cohere_compass``, ``ernie4_5_vl_moe``, ``gemma4_unified``, ``cosmos3_edge`` and ``cosmos3_omni``;
the Gemma 4 drafters (``gemma4_assistant``, ``gemma4_unified_assistant``: no cache of their own) are refused. ``openai-gpt`` (GPT-1
keeps no cache) is refused. ``minimax_m3`` (a model_type transformers 5.23 does not build) is
refused naming the fields a spec would need. Speech / omni wrappers read from their text part: ``qwen2_audio``
(qwen2), ``granite_speech`` (granite), ``nemotron_h_omni`` (nemotron_h), ``moss_transcribe_diarize`` (qwen3), the
Qwen-Omni thinkers ``qwen2_5_omni_thinker`` / ``qwen3_omni_moe_thinker`` (their ``qwen2_5_omni_text`` /
``qwen3_omni_moe_text`` decoders: full attention, no window) and ``muse_spark`` / ``muse_glimmer`` (their
``muse_*_text`` decoders: full every 4th layer counted from the last, sliding elsewhere); ``qwen4_exp`` /
``qwen4_exp_text`` and ``minimax_m3_vl`` are refused naming why. ``whisper`` (session 34, famC5): every decoder layer a
``CrossAttentionLayer`` (decoder self-attention K/V plus cross-attention K/V over ``max_source_positions`` encoder
frames, transformers' ``EncoderDecoderCache``), priced by the transformers engine only. ``modernbert-decoder``
(every head; full iff i % global_attn_every_n_layers == 0, else a window of local_attention // 2).
Malformed, truncated or contradictory configs raise KvMathError
(tests/test_fuzz_config.py fuzzes this); counts are bounded by ``MAX_LAYERS`` / ``MAX_INT``.
"""

from __future__ import annotations

import math
from typing import Any

from .specs import (
    FULL, LINEAR, MLP, MOE, SLIDING, Architecture, AttentionLayer, GatedDeltaNetLayer, KDALayer, MLALayer,
    Mamba2Layer, NoCacheLayer, VisionTower,
)
from ..errors import KvMathError, choices
from ..validate import MAX_INT, MAX_LAYERS, as_int as _as_int


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


def architecture_from_config(cfg: Any, *, name: str, source: str = "") -> Architecture:
    """Build an Architecture from a parsed config.json (a dict), by its ``model_type``'s family rule.

    A multimodal wrapper known to ``_WRAPPERS`` (``qwen3_5``, ``gemma4``, ``qwen3_vl``, ``llama4``, ``mistral3``,
    ...) is read from its text part and its ``vision_config`` kept as ``Architecture.vision``; a ``text_config``
    under any other outer ``model_type`` is refused naming it (``_unwrap``). Raises KvMathError for a
    non-object, an unknown ``model_type`` (naming the fields that would be needed) and impossible values. ``kvmath.model.load`` is the entry point for paths, model
    folders, GGUF files and known ids.
    """
    if not isinstance(cfg, dict):
        raise KvMathError(f"config must be a JSON object, got {type(cfg).__name__}")
    outer_type = cfg.get("model_type")
    cfg, vision = _unwrap(cfg)
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise KvMathError("config has no model_type; it is needed to know the layer layout")
    family = _FAMILIES.get(model_type)
    if family is None:
        needs = _NEEDED_FIELDS.get(model_type, _NEEDED_DEFAULT)
        raise KvMathError(
            f"model_type {model_type!r} is not supported: kvmath would need its per-layer cache layout "
            f"({needs}); supported: {choices(supported_model_types())}"
        )
    arch = family(_Config(cfg, model_type), name or model_type, source)
    refusals = _WRAPPER_REFUSALS.get(outer_type, ())
    served = _WRAPPER_SERVES.get(outer_type, ()) if isinstance(outer_type, str) else ()
    if vision is not None or refusals or served:
        from dataclasses import replace

        kept = tuple(r for r in arch.engine_refusals if r[0] not in served)
        arch = replace(arch, vision=vision if vision is not None else arch.vision, engine_refusals=kept + refusals)
    return arch


_WRAPPERS = {"qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text", "gemma4": "gemma4_text",
             "gemma3": "gemma3_text", "gemma3n": "gemma3n_text", "qwen3_vl": "qwen3_vl_text",
             "qwen3_vl_moe": "qwen3_vl_moe_text", "qwen2_5_vl": "qwen2_5_vl_text", "qwen2_vl": "qwen2_vl_text",
             "llama4": "llama4_text", "mistral3": "mistral", "lfm2_vl": "lfm2", "llava": "llama", "voxtral": "llama",
             "kimi_k25": "deepseek_v3", "step3p7": "step3p5"}
_WRAPPERS.update({"llava_next": "llama", "llava_next_video": "llama", "llava_onevision": "qwen2", "internvl": "qwen2",
                  "aya_vision": "cohere2", "cohere2_vision": "cohere2", "paligemma": "gemma", "idefics3": "llama",
                  "smolvlm": "llama", "exaone4_5": "exaone4", "minicpmv4_6": "qwen3_5_text",
                  "minicpmv4_7": "qwen3_5_text", "glm4v": "glm4v_text", "glm4v_moe": "glm4v_moe_text",
                  "glm46v": "glm4v_text"})
"""Wrappers whose config class builds its text part as ``CONFIG_MAPPING[text_config["model_type"]](**text_config)``
and leaves it unchanged (transformers 5.23 ``sub_configs_defaults``: ``SubConfigSpec(AutoConfig, model_type=...)``,
the default text model_type being the value here; a spec's ``init_kwargs`` apply only when there is no text_config,
configuration_utils.py ``SubConfigSpec.create_subconfig``). Their models build the decoder with
``AutoModel.from_config(config.text_config)`` and its cache is the text model's. PaliGemma's ``__post_init__`` sets
the text part's ``use_bidirectional_attention`` and ``num_image_tokens`` (the mask and the prompt, not the cache);
LLaVA-NeXT-Video and LLaVA-OneVision copy the text part's ``tie_word_embeddings`` up."""
"""Multimodal wrapper model_type -> the model_type of its text_config when the text_config names none
(transformers 5.23 ``sub_configs`` defaults: ``Mistral3Config`` builds a ``mistral`` text config by default,
``Lfm2VlConfig`` an ``lfm2`` one, ``LlavaConfig`` and ``VoxtralConfig`` a ``llama`` one, ``KimiK25Config`` a
``deepseek_v3`` one, and it reads a ``kimi_k2`` text_config as ``deepseek_v3``: :data:`_TEXT_REMAP`)."""
_TEXT_REMAP = {"kimi_k25": {"kimi_k2": "deepseek_v3"}, "exaone4_5": {"exaone4_5_text": "exaone4"}}
"""Text model_types a wrapper's config class rewrites (transformers 5.23 ``KimiK25Config.__post_init__``;
``Exaone4_5_Config.__post_init__``: EXAONE 4.5 was first released with ``exaone4_5_text``, now built as ``exaone4``,
and vLLM 0.24's exaone4_5.py builds its language model as ``Exaone4ForCausalLM`` from the same text config)."""
_FORCED_TEXT = ("step3p7",)
"""Wrappers whose config class drops the text_config's model_type and always builds its own text class (transformers
5.23 ``Step3p7Config.__post_init__``: "Force default model-type - hub has a remote-code format config")."""
_CLASS_DEFAULTS = {"llava": {"llama": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                                       "num_attention_heads": 32, "max_position_embeddings": 2048,
                                       "vocab_size": 32000}}}
_TEXT_CLASS_DEFAULTS = {
    # transformers 5.23 CONFIG_MAPPING[t]().to_dict(): the keys that shape the cache or the weights estimate
    "llama": _CLASS_DEFAULTS["llava"]["llama"],
    "mistral": {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "max_position_embeddings": 131072, "vocab_size": 32000},
    "qwen2": {"hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 32, "max_position_embeddings": 32768, "vocab_size": 151936},
    "gemma": {"hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28, "num_attention_heads": 16,
              "num_key_value_heads": 16, "head_dim": 256, "max_position_embeddings": 8192, "vocab_size": 256000},
    "gemma2": {"hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
               "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096, "max_position_embeddings": 8192,
               "vocab_size": 256000},
}
"""The text config classes' own defaults for the keys a sparse published text_config leaves out (transformers 5.23
configuration_llama.py / _mistral.py / _qwen2.py / _gemma.py / _gemma2.py; head_dim follows hidden_size /
num_attention_heads where absent here, num_key_value_heads follows the heads for llama). MistralConfig's
``sliding_window`` default (4096) is left out on purpose: the mistral rule refuses a config without the key."""
_CLASS_DEFAULTS.update({w: {t: _TEXT_CLASS_DEFAULTS[t] for t in types} for w, types in {
    "llava": ("llama", "mistral", "qwen2"), "llava_next": ("llama", "mistral", "qwen2"),
    "llava_next_video": ("llama", "mistral", "qwen2"), "llava_onevision": ("qwen2",), "internvl": ("qwen2", "llama"),
    "paligemma": ("gemma", "gemma2"), "idefics3": ("llama",), "smolvlm": ("llama",)}.items()})
"""Wrappers whose published text_config is sparse, and the text config class's own defaults transformers fills in
for the keys it leaves out (transformers 5.23 ``LlavaConfig.__post_init__`` builds
``CONFIG_MAPPING[text_config["model_type"]](**text_config)``; ``LlamaConfig``'s defaults in
configuration_llama.py, ``num_key_value_heads`` and ``head_dim`` then following the heads). llava-1.5-7b's
text_config states only its ``max_position_embeddings``, ``vocab_size`` and ``rms_norm_eps``; vLLM builds the
same config through transformers' ``AutoConfig``."""
_WRAPPER_REFUSALS = {
    "minicpmv4_7": (("vllm", "vLLM 0.24 registers no MiniCPMV4_7ForConditionalGeneration (model_executor/models/"
                              "registry.py)"),
                    ("llama.cpp", "no llama.cpp converter for MiniCPM-V 4.7 was read")),
    "minicpmv4_6": (("llama.cpp", "no llama.cpp converter for MiniCPM-V 4.6 was read"),),
    "exaone4_5": (("llama.cpp", "llama.cpp's Exaone4_5_TextModel converter (conversion/exaone.py) adds the "
                                "num_nextn_predict_layers MTP blocks to block_count; how its cache treats them was not "
                                "read"),),
    "glm46v": (("vllm", "vLLM 0.24 registers no Glm46VForConditionalGeneration (model_executor/models/registry.py)"),
               ("llama.cpp", "no llama.cpp converter for GLM-4.6V's glm46v wrapper was read")),
    "glm4v": (("llama.cpp", "no llama.cpp converter for GLM-4.1V was read"),),
    "glm4v_moe": (("llama.cpp", "no llama.cpp converter for GLM-4.5V / 4.6V was read"),),
}
"""Engines kvmath does not price a wrapper on, whatever its text part (``Architecture.engine_refusals``). vLLM 0.24's
minicpmv4_6.py builds its language model as ``Qwen3_5ForCausalLM`` from the text config, as kvmath prices it."""
_UNREAD_WRAPPERS = {
    "mllama": "Llama 3.2 Vision: its cross_attention_layers cache the image's keys and values (modeling_mllama.py "
              "MllamaTextCrossAttention: images x max_num_tiles x ((image_size / patch_size)^2 + 1) positions, "
              "appended per new image, none for a text-only prompt), so the cache depends on the images per "
              "sequence, an input kvmath does not take; vLLM 0.10.2 removed MllamaForConditionalGeneration",
    "hunyuan_vl": "HunYuan-VL: HunYuanVLConfig folds top-level keys into its text part; that rule was not read",
}
"""Wrappers transformers 5.23 builds whose text part kvmath does not read, and why (named in the one-line refusal)."""

# --- speech / omni wrappers (issue 20, s34 batch B2) -------------------------------------------------------------
_SPEECH_WRAPPERS = {"qwen2_audio": "qwen2", "granite_speech": "granite", "nemotron_h_omni": "nemotron_h",
                    "moss_transcribe_diarize": "qwen3", "qwen2_5_omni_thinker": "qwen2_5_omni_text",
                    "qwen3_omni_moe_thinker": "qwen3_omni_moe_text", "muse_spark": "muse_spark_text",
                    "muse_glimmer": "muse_glimmer_text"}
"""Speech / omni wrappers and their text part (transformers 5.23 ``sub_configs_defaults``): ``Qwen2AudioConfig``
(``SubConfigSpec(AutoConfig, "qwen2")``), ``GraniteSpeechConfig`` (``"granite"``), ``NemotronHOmniConfig``
(``"nemotron_h"``; the released checkpoints' ``llm_config`` is its legacy name for ``text_config``),
``MossTranscribeDiarizeConfig`` (``"qwen3"``; its ``init_kwargs`` apply only without a text_config); the Qwen-Omni
thinkers and the Muse wrappers build their own text class whatever text_config says (``Qwen2_5OmniThinkerConfig`` /
``Qwen3OmniMoeThinkerConfig`` / ``MuseSparkConfig`` / ``MuseGlimmerConfig``: ``"text_config": Qwen2_5OmniTextConfig``
etc., not AutoConfig). Their models build the
decoder from ``config.text_config`` and run the audio / vision encoders outside the cache (modeling_*.py:
``past_key_values`` is the language model's)."""
_WRAPPERS.update(_SPEECH_WRAPPERS)
_UNREAD_WRAPPERS.update({
    "minimax_m3_vl": "MiniMax-M3-VL: its minimax_m3_sparse text layers keep a block-indexer key cache beside K/V "
                     "(MiniMaxM3VLSparseCacheLayer, sparse_attention_config), which kvmath has no spec for",
    "qwen4_exp": "Qwen4-Exp: its qwen4_exp_text part keeps Gated DeltaNet, PLE convolution and n-gram states beside "
                 "indexed-attention K/V and QSA indexer keys, which kvmath has no spec for",
})
_TOP_DTYPE_WINS = tuple(_SPEECH_WRAPPERS)
"""The rule of every wrapper (this name kept for the speech wrappers that first needed it): the top-level ``dtype``
(or ``torch_dtype``), when stated, is the text part's dtype whatever the text_config states; the text_config's
only when the top level states none. transformers 5.23 ``modeling_utils._get_dtype`` (``from_pretrained(dtype=
"auto")``) takes ``config.dtype`` and sets it on every sub-config; vLLM 0.24's ``ModelArchConfigConvertorBase.get_torch_dtype`` (transformers_utils/model_arch_config_convertor.py) reads
``config.dtype`` first and the text config's only when it is None. A Granite Speech config.json states
``torch_dtype`` bfloat16 at the top and ``dtype`` float32 in its text_config: the model loads, and caches, in
bfloat16; SmolVLM2-500M-Video states float32 at the top and bfloat16 inside: transformers caches float32."""
_FORCED_TEXT = _FORCED_TEXT + ("qwen2_5_omni_thinker", "qwen3_omni_moe_thinker", "muse_spark", "muse_glimmer")
_CLASS_DEFAULTS["qwen2_audio"] = {"qwen2": _TEXT_CLASS_DEFAULTS["qwen2"]}  # Qwen2-Audio-7B's text_config is sparse
_CLASS_DEFAULTS["moss_transcribe_diarize"] = {"qwen3": {  # Qwen3Config's own defaults (configuration_qwen3.py)
    "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 32768, "vocab_size": 151936}}
_LLAMACPP_SPEECH = "no llama.cpp converter for this speech / omni wrapper's text part was read"
_WRAPPER_REFUSALS.update({
    "qwen2_audio": (("llama.cpp", _LLAMACPP_SPEECH),),
    "granite_speech": (("llama.cpp", _LLAMACPP_SPEECH),),
    "nemotron_h_omni": (("llama.cpp", _LLAMACPP_SPEECH),),
    "moss_transcribe_diarize": (("vllm", "vLLM 0.24 registers no MossTranscribeDiarizeForConditionalGeneration "
                                          "(model_executor/models/registry.py)"), ("llama.cpp", _LLAMACPP_SPEECH)),
    "qwen2_5_omni_thinker": (("vllm", "vLLM 0.24 registers the thinker only under the whole model's classes "
                                      "(Qwen2_5OmniModel / Qwen2_5OmniForConditionalGeneration, a thinker_config "
                                      "config), not Qwen2_5OmniThinkerForConditionalGeneration"),
                             ("llama.cpp", _LLAMACPP_SPEECH)),
    "qwen3_omni_moe_thinker": (("vllm", "vLLM 0.24 registers the thinker only under the whole model's class "
                                        "(Qwen3OmniMoeForConditionalGeneration, a thinker_config config), not "
                                        "Qwen3OmniMoeThinkerForConditionalGeneration"),
                               ("llama.cpp", _LLAMACPP_SPEECH)),
})
_FLAT_WRAPPERS = ("qwen2_5_vl", "qwen2_vl")
"""Wrappers whose Hub configs are flat: transformers 5.23 ``Qwen2_5_VLConfig.__post_init__`` builds the text
config from the top-level keys when there is no ``text_config`` (Qwen2.5-VL-7B-Instruct's config.json)."""

# --- batch A1 (issue 20, session 34): wrappers whose text part kvmath reads --------------------------------------
_WRAPPERS.update({"aria": "aria_text", "hyperclovax_vision_v2": "hyperclovax", "glm_ocr": "glm_ocr_text",
                  "blip-2": "opt", "fuyu": "persimmon"})
"""transformers 5.23: ``AriaConfig`` / ``GlmOcrConfig`` always build ``AriaTextConfig`` / ``GlmOcrTextConfig``
(their ``sub_configs_defaults`` name the class, not ``AutoConfig``: :data:`_FORCED_TEXT`);
``HyperCLOVAXVisionV2Config`` (default ``hyperclovax``) and ``Blip2Config`` (default ``opt``) build
``AutoConfig`` from the text_config's own model_type (a ``t5`` one, BLIP-2 with Flan-T5, is an encoder-decoder kvmath
does not read and is refused as unsupported); ``FuyuConfig`` builds a ``persimmon`` one, from the top-level keys when
there is no text_config (:data:`_FLAT_SELECTED`). Each model's language model is ``AutoModel`` /
``AutoModelForCausalLM`` / ``GlmOcrTextModel`` from that text config, and its cache is the text model's."""
_FORCED_TEXT = _FORCED_TEXT + ("aria", "glm_ocr")
_FLAT_SELECTED = {"fuyu": (("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size",
                            "num_hidden_layers", "num_attention_heads", "hidden_act", "initializer_range",
                            "layer_norm_eps", "use_cache", "qk_layernorm", "hidden_dropout", "attention_dropout",
                            "eos_token_id", "rope_scaling", "rope_theta"),
                           {"vocab_size": 262144, "max_position_embeddings": 16384, "hidden_size": 4096,
                            "intermediate_size": 16384, "num_hidden_layers": 36, "num_attention_heads": 64},
                           {"partial_rotary_factor": 0.5})}
"""Wrappers whose Hub configs are flat and whose config class lifts only some top-level keys into the text config
(transformers 5.23 ``FuyuConfig.__post_init__``: the ``init_kwargs`` keys of its ``persimmon`` spec plus
``rope_scaling`` / ``rope_theta``, popped when present; ``partial_rotary_factor`` set to 0.5; with none present the
spec's ``init_kwargs``). wrapper -> (keys lifted, the text class's defaults for absent ones, keys set by default)."""
_CLASS_DEFAULTS.update({
    "blip-2": {"opt": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "ffn_dim": 3072,
                       "max_position_embeddings": 2048, "vocab_size": 50272}},
    "fuyu": {"persimmon": dict(_FLAT_SELECTED["fuyu"][1])}})
"""``OPTConfig``'s and ``PersimmonConfig``'s own defaults (transformers 5.23 configuration_opt.py /
configuration_persimmon.py) for the keys a sparse text_config of BLIP-2 / Fuyu leaves out."""
_WRAPPERS.update({"granite4_vision": "granite4_vision_text", "granite_docling": "granite_docling_text",
                  "hunyuan_vl": "hunyuan_vl_text"})
_FORCED_TEXT = _FORCED_TEXT + ("granite4_vision", "granite_docling", "hunyuan_vl")
_UNREAD_WRAPPERS.pop("hunyuan_vl", None)
_FLAT_SELECTED["hunyuan_vl"] = (
    ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
     "num_key_value_heads", "hidden_act", "max_position_embeddings", "initializer_range", "rms_norm_eps", "use_cache",
     "pad_token_id", "bos_token_id", "eos_token_id", "eod_token_id", "pretraining_tp", "tie_word_embeddings",
     "rope_parameters", "attention_bias", "attention_dropout", "head_dim", "sep_token_id", "dtype",
     "attention_head_dim", "org_vocab_size", "pad_id", "rope_scaling", "rope_theta"), {}, {})
"""Granite 4 Vision, Granite-Docling and HunYuan-VL build their own text class (transformers 5.23
``sub_configs_defaults`` name ``Granite4VisionTextConfig`` / ``GraniteDoclingTextConfig`` / ``HunYuanVLTextConfig``);
``HunYuanVLConfig.__post_init__`` folds a flat (Tencent HunyuanOCR) config's top-level keys that are
``HunYuanVLTextConfig`` fields, its ``attribute_map`` aliases or ``rope_scaling`` / ``rope_theta`` into the text
config; the rest stays on the outer config, which its cache does not read."""
_WRAPPERS.update({"emu3": "emu3_text_model", "deepseek_ocr2": "deepseek_ocr2_text", "deepseek_vl": "llama",
                  "deepseek_vl_hybrid": "llama", "got_ocr2": "qwen2", "fast_vlm": "qwen2", "idefics2": "mistral"})
_FORCED_TEXT = _FORCED_TEXT + ("emu3", "deepseek_ocr2")
_CLASS_DEFAULTS.update({w: {t: _TEXT_CLASS_DEFAULTS[t]} for w, t in {
    "deepseek_vl": "llama", "deepseek_vl_hybrid": "llama", "got_ocr2": "qwen2", "fast_vlm": "qwen2",
    "idefics2": "mistral"}.items()})
"""Emu3 and DeepSeek-OCR 2 build their own text class (``Emu3TextConfig``, ``DeepseekOcr2TextConfig``); DeepSeek-VL /
-VL-Hybrid (default ``llama``), GOT-OCR 2 and FastVLM (``qwen2``) and Idefics2 (``mistral``) build ``AutoConfig`` of
the written text type, unchanged by their ``__post_init__`` (transformers 5.23; Idefics2's touches only its
perceiver and tower, FastVLM's only ``tie_word_embeddings``). A sparse text_config takes the text class's own
defaults (a ``SubConfigSpec``'s ``init_kwargs``, e.g. GotOcr2Config's, apply only when there is no text_config, which
kvmath refuses for a wrapper)."""
_UNREAD_WRAPPERS["florence2"] = ("Florence-2: its BART text part is an encoder-decoder (transformers 5.23 "
                                  "EncoderDecoderCache: decoder self-attention plus cross-attention K / V of the "
                                  "encoded image and prompt), which kvmath has no spec for")
_WRAPPER_SERVES = {"aria": ("vllm",)}
"""Engines a text part's own refusal does not hold for inside this wrapper: vLLM 0.24 registers no text-only Aria
class (aria_text is refused there) but aria.py's ``AriaForConditionalGeneration`` builds ``AriaTextModel``, a
``LlamaModel`` whose attention caches ``num_key_value_heads`` x (``head_dim`` or hidden / heads) on every layer."""
_WRAPPER_REFUSALS.update({
    w: (("llama.cpp", f"no llama.cpp converter for {what} was read"),) for w, what in {
        "aria": "Aria", "hyperclovax_vision_v2": "HyperCLOVA X SEED Vision (hyperclovax_vision_v2)",
        "glm_ocr": "GLM-OCR", "blip-2": "BLIP-2", "fuyu": "Fuyu", "granite4_vision": "Granite 4 Vision",
        "granite_docling": "Granite-Docling", "hunyuan_vl": "HunYuan-VL", "emu3": "Emu3",
        "deepseek_ocr2": "DeepSeek-OCR 2"}.items()})
_WRAPPER_REFUSALS.update({
    w: (("vllm", f"vLLM 0.24 registers no {cls} (model_executor/models/registry.py)"),
        ("llama.cpp", f"no llama.cpp converter for {w} was read")) for w, cls in {
        "deepseek_vl": "DeepseekVLForConditionalGeneration",
        "deepseek_vl_hybrid": "DeepseekVLHybridForConditionalGeneration",
        "got_ocr2": "GotOcr2ForConditionalGeneration", "fast_vlm": "FastVlmForConditionalGeneration",
        "idefics2": "Idefics2ForConditionalGeneration"}.items()})


# --- issue 20, batch A2: wrappers whose text part is a type kvmath reads (transformers 5.23 SubConfigSpec(AutoConfig,
# model_type=...) builds CONFIG_MAPPING[text_config["model_type"]](**text_config) unchanged; each model builds its
# language model with AutoModel.from_config(config.text_config); no __post_init__ of these classes touches the text
# part: configuration_<type>.py / modeling_<type>.py of lighton_ocr, qianfan_ocr, video_llava, vipllava,
# perception_lm, janus, ovis2, video_llama_3, shieldgemma2 (Gemma3ForConditionalGeneration on its config),
# minicpm_ocr, lfm3_vl)
_WRAPPERS.update({"lighton_ocr": "qwen3", "qianfan_ocr": "qwen3", "video_llava": "llama", "vipllava": "llama",
                  "perception_lm": "llama", "janus": "llama", "ovis2": "qwen2", "video_llama_3": "qwen2",
                  "shieldgemma2": "gemma3_text", "minicpm_ocr": "qwen3_5_text", "lfm3_vl": "lfm3"})
_TEXT_CLASS_DEFAULTS.setdefault("qwen3", {  # transformers 5.23 Qwen3Config(): head_dim 128 whatever hidden / heads
    "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 32768, "vocab_size": 151936})
_CLASS_DEFAULTS.update({w: {t: _TEXT_CLASS_DEFAULTS[t] for t in types} for w, types in {
    "lighton_ocr": ("qwen3",), "qianfan_ocr": ("qwen3",), "video_llava": ("llama",), "vipllava": ("llama",),
    "perception_lm": ("llama",), "janus": ("llama",), "ovis2": ("qwen2",), "video_llama_3": ("qwen2",)}.items()})
_WRAPPER_REFUSALS.update({
    **{w: (("vllm", f"vLLM 0.24 registers no model class for {w} (model_executor/models/registry.py)"),
           ("llama.cpp", f"no llama.cpp converter for {w} was read"))
       for w in ("video_llava", "vipllava", "perception_lm", "janus", "ovis2", "video_llama_3", "shieldgemma2",
                 "minicpm_ocr", "lfm3_vl")},
    # vLLM 0.24 lightonocr.py / qianfan_ocr.py (InternVLChatModel) build the language model with
    # init_vllm_registered_model(hf_config=config.text_config), the same text config: priced there
    "lighton_ocr": (("llama.cpp", "no llama.cpp converter for LightOnOCR was read"),),
    "qianfan_ocr": (("llama.cpp", "no llama.cpp converter for Qianfan-OCR was read"),),
})
# PaddleOCR-VL (paddleocr_vl): its own text class, PaddleOCRTextConfig (model_type paddleocr_vl_text, hf_families);
# Hub configs are flat: PaddleOCRVLConfig.__post_init__ builds the text config from the top-level keys when there
# is no text_config (the text class's fields; kvmath reads every top-level key, so a stray top-level sliding_window
# is refused rather than ignored as transformers ignores it)
_WRAPPERS.update({"paddleocr_vl": "paddleocr_vl_text", "molmo2": "molmo2_text"})
_FLAT_WRAPPERS += ("paddleocr_vl",)
# PaddleOCRVLConfig / Molmo2Config name their text class itself in sub_configs_defaults (PaddleOCRTextConfig,
# Molmo2TextConfig, not SubConfigSpec(AutoConfig)): SubConfigSpec.create_subconfig builds that class whatever
# text_config's model_type says (configuration_utils.py)
_FORCED_TEXT += ("paddleocr_vl", "molmo2")
# Kosmos-2 / 2.5 (Kosmos2Config / Kosmos2_5Config name Kosmos2TextConfig / Kosmos2_5TextConfig: forced likewise);
# InstructBLIP / InstructBLIP-Video (SubConfigSpec(AutoConfig, "opt"); a decoder-only text part is built with
# AutoModelForCausalLM.from_config(config.text_config), a T5 one is encoder-decoder and refused as t5);
# PP-Chart2Table (SubConfigSpec(AutoConfig, "qwen2"), built as GotOcr2ForConditionalGeneration)
_WRAPPERS.update({"kosmos-2": "kosmos_2_text_model", "kosmos-2.5": "kosmos_2_5_text_model", "instructblip": "opt",
                  "instructblipvideo": "opt", "pp_chart2table": "qwen2"})
_FORCED_TEXT += ("kosmos-2", "kosmos-2.5")
_ENC_DEC = ("an encoder-decoder: transformers 5.23 caches its decoder's self-attention and its cross-attention keys "
            "and values over the encoded image (EncoderDecoderCache), which kvmath does not size")
_UNREAD_WRAPPERS.update({
    "pix2struct": "Pix2Struct is " + _ENC_DEC + " (modeling_pix2struct.py)",
    "pp_formulanet": "PP-FormulaNet is " + _ENC_DEC + " (modeling_pp_formulanet.py)",
    "unlimited_ocr": ("Unlimited-OCR: its reference_sliding_attention layers keep every prefill token and a window "
                      "over the decoded ones (UnlimitedOcrDynamicReferenceSlidingWindowLayer), a layout kvmath has "
                      "no spec for"),
})
_CLASS_DEFAULTS.update({w: {t: _TEXT_CLASS_DEFAULTS[t] for t in types} for w, types in {
    "instructblip": ("llama",), "instructblipvideo": ("llama",), "pp_chart2table": ("qwen2",)}.items()})
_WRAPPER_REFUSALS.update({w: (("vllm", f"vLLM 0.24 registers no model class for {w} (model_executor/models/"
                                       "registry.py)"),
                              ("llama.cpp", f"no llama.cpp converter for {w} was read"))
                          for w in ("instructblip", "instructblipvideo", "pp_chart2table")})


def _wrapper(model_type) -> bool:
    return isinstance(model_type, str) and model_type in _WRAPPERS


def _unwrap(cfg: dict) -> tuple[dict, "VisionTower | None"]:
    """The decoder's config of ``cfg`` and its vision tower (None for a text-only config).

    A config with a ``text_config`` (or ``llm_config``) is unwrapped only when its outer ``model_type`` is a
    known wrapper (``_WRAPPERS``); any other outer ``model_type`` is refused naming it, never read from its text
    part (a made-up or unknown wrapper could change the layout). Older exports carry ``dtype`` only at the top.
    """
    outer_type = cfg.get("model_type")
    inner_key = next((k for k in ("text_config", "llm_config") if cfg.get(k) is not None), None)
    if inner_key is None:
        if outer_type in _FLAT_WRAPPERS:
            flat = {k: v for k, v in cfg.items() if k not in ("vision_config", "model_type")}
            flat["model_type"] = _WRAPPERS[outer_type]
            return flat, _vision_tower(cfg)
        if isinstance(outer_type, str) and outer_type in _FLAT_SELECTED:
            return _flat_selected(cfg, outer_type), _vision_tower(cfg)
        if _wrapper(outer_type):
            raise KvMathError(
                f"model_type {outer_type!r} is a multimodal wrapper and this config has no text_config; "
                f"the decoder's fields ({_WRAPPERS[outer_type]}) live there"
            )
        return cfg, None
    text = cfg[inner_key]
    if not isinstance(text, dict):
        raise KvMathError(f"config field {inner_key} must be an object")
    if not _wrapper(outer_type):
        why = _UNREAD_WRAPPERS.get(outer_type) if isinstance(outer_type, str) else None
        raise KvMathError(
            f"model_type {outer_type!r} wraps a {inner_key} but is not a wrapper kvmath knows, so its decoder "
            f"cannot be read exactly" + (f" ({why})" if why else f"; known wrappers: {choices(sorted(_WRAPPERS))}")
        )
    inner = dict(text)
    inner.setdefault("dtype", cfg.get("dtype") or cfg.get("torch_dtype"))
    if cfg.get("dtype") or cfg.get("torch_dtype"):  # every wrapper: see _TOP_DTYPE_WINS
        inner["dtype"] = cfg.get("dtype") or cfg.get("torch_dtype")
        inner.pop("torch_dtype", None)
    if inner.get("model_type") is None or outer_type in _FORCED_TEXT:
        # transformers builds the wrapper's own text-config class whatever text_config says
        inner["model_type"] = _WRAPPERS[outer_type]
    if not isinstance(inner["model_type"], str) or not inner["model_type"]:
        raise KvMathError(
            f"{inner_key}.model_type must be a model_type name (a string); it names the decoder's layer layout"
        )
    inner["model_type"] = _TEXT_REMAP.get(outer_type, {}).get(inner["model_type"], inner["model_type"])
    for key, value in _CLASS_DEFAULTS.get(outer_type, {}).get(inner["model_type"], {}).items():
        inner.setdefault(key, value)
    if inner.get("tie_word_embeddings") is None and cfg.get("tie_word_embeddings") is not None:
        inner["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    return inner, _vision_tower(cfg)


def _flat_selected(cfg: dict, outer_type: str) -> dict:
    """The text config a flat ``cfg`` of wrapper ``outer_type`` builds (:data:`_FLAT_SELECTED`): the lifted keys
    present, else the spec's defaults; the text class's defaults for absent keys; the dtype kept from the top."""
    keys, defaults, set_default = _FLAT_SELECTED[outer_type]
    text = {k: cfg[k] for k in keys if k in cfg}
    if text:
        text["dtype"] = cfg.get("torch_dtype", cfg.get("dtype"))
        for key, value in set_default.items():
            text.setdefault(key, value)
    for key, value in defaults.items():
        text.setdefault(key, value)
    text["model_type"] = _WRAPPERS[outer_type]
    if text.get("dtype") is None:
        text["dtype"] = cfg.get("dtype") or cfg.get("torch_dtype")
    return text


def _vision_tower(cfg: dict) -> "VisionTower | None":
    """The ``vision_config`` of a wrapper as a :class:`VisionTower` (None when it has none)."""
    v = cfg.get("vision_config")
    if v is None:
        return None
    if not isinstance(v, dict):
        raise KvMathError("config field vision_config must be an object")
    c = _Config(v, "vision_config")

    def first(*keys):
        for k in keys:
            if isinstance(v.get(k), list) and k == "patch_size":  # InternVL's [h, w] patch: square only
                side = v[k]
                if len(side) != 2 or side[0] != side[1]:
                    raise KvMathError(f"vision_config.patch_size must be an integer or a square [h, w], got {side!r}")
                return _Config({k: side[0]}, "vision_config").int(k, minimum=0)
            if c.has(k):
                return c.int(k, minimum=0)
        return 0

    mt = v.get("model_type")
    return VisionTower(
        model_type=mt if isinstance(mt, str) else "",
        depth=first("depth", "num_hidden_layers"), hidden_size=first("hidden_size", "embed_dim"),
        intermediate_size=first("intermediate_size"), num_heads=first("num_heads", "num_attention_heads"),
        patch_size=first("patch_size"), spatial_merge_size=first("spatial_merge_size"),
        temporal_patch_size=first("temporal_patch_size"), out_hidden_size=first("out_hidden_size"),
        soft_tokens_per_image=_Config(cfg, "config").int("vision_soft_tokens_per_image", 0, minimum=0),
    )

_NEEDED_DEFAULT = "layer_types, num_key_value_heads, head_dim, sliding_window, and any state fields"
_NEEDED_FIELDS = {
    # GPT-1: transformers 5.23's OpenAIGPTModel takes no past_key_values and returns none (modeling_openai.py)
    "openai-gpt": "a KV cache: transformers 5.23's OpenAIGPTModel (GPT-1) keeps none, so there is no cache to size",
    # known architectures kvmath has no rules for, with the fields their cache depends on
    "rwkv": "an RWKV state per layer (hidden_size, attention_hidden_size, num_hidden_layers); it has no KV cache",
    # transformers 5.23 types read but not given a rule (issue 20's fifth batch): what their caches hold beyond K/V
    "xlstm": ("an mLSTM state per block (transformers' xLSTMCache: C, n and m per head in inference_state_dtype, "
              "from num_heads, qk_dim_factor, v_dim_factor, embedding_dim); it has no KV cache and kvmath no spec"),
    "zamba": ("hybrid layers holding a shared attention block's K/V beside a Mamba-1 state split over n_mamba_heads "
              "(layers_block_type, attn_layer_period / attn_layer_offset, mamba_d_state, mamba_d_conv, mamba_expand); "
              "kvmath has no spec for attention beside a Mamba-1 state"),
    "zaya": ("CCA conv and delayed-value states beside K/V on its hybrid / hybrid_sliding layers (layer_types, "
             "cca_time0, cca_time1, sliding_window), for which kvmath has no spec"),
    "inkling_text": "its hybrid / hybrid_sliding layer_types, whose cache layers kvmath has not read",
    "inkling2_text": "its hybrid / hybrid_sliding layer_types, whose cache layers kvmath has not read",
    "dots3_note_text": ("indexed_attention layers that keep an indexer key cache beside K/V (layer_types, the indexer "
                        "widths), which kvmath has not read for this family"),
    "minimax_m3_vl_text": ("its minimax_m3_sparse layers keep a block-indexer key cache beside K/V "
                           "(MiniMaxM3VLSparseCacheLayer, sparse_attention_config), for which kvmath has no spec"),
    # issue 20 batch A2: transformers 5.23 types whose cache kvmath has no spec for, or whose layer rule was not read
    "udop": "UDOP is " + "an encoder-decoder (T5 layout): transformers 5.23 caches its decoder's self-attention and "
            "cross-attention keys and values (EncoderDecoderCache), which kvmath does not size",
    "unlimited_ocr": ("Unlimited-OCR's reference_sliding_attention layers (every prefill token kept, a window over "
                      "the decoded ones: UnlimitedOcrDynamicReferenceSlidingWindowLayer), a layout kvmath has no spec "
                      "for"),
    "unlimited_ocr_text": ("its reference_sliding_attention layers (every prefill token kept, a window over the "
                           "decoded ones), a layout kvmath has no spec for"),
    "phi4_multimodal": ("Phi-4-multimodal's flat config (Phi4MultimodalConfig: the Phi-3 text fields beside "
                        "vision_config / audio_config); its layer rule was not read, and vLLM removed "
                        "Phi4MultimodalForCausalLM in 0.12.0"),
    # MiniMax-M3's published config.json (MiniMaxM3ForCausalLM, remote code): transformers 5.23 has no minimax_m3,
    # only minimax_m3_vl / minimax_m3_vl_text, and does not map one onto the other; vLLM 0.24 registers
    # MiniMaxM3SparseForCausalLM and caches an indexer key beside K/V on the sparse layers
    "minimax_m3": (
        "a model_type transformers 5.23 builds: it has minimax_m3_vl / minimax_m3_vl_text only, not minimax_m3, and "
        "no mapping between them; their minimax_m3_sparse layers (sparse_attention_config) also keep a block-indexer "
        "key cache beside K/V, for which kvmath has no spec"
    ),
}
# speech / omni batch (issue 20, s34 B2): types read but not given a rule, and what their caches hold
_NEEDED_FIELDS.update({
    "whisper": ("an encoder-decoder cache (EncoderDecoderCache: decoder self-attention K/V plus cross-attention K/V "
                "over the encoder's max_source_positions frames per layer), whose cross-attention part kvmath has no "
                "layer kind for"),
    "qwen4_exp_text": ("Gated DeltaNet, PLE convolution and n-gram context states beside indexed-attention K/V and QSA "
                       "indexer keys (layer_types, ple_layer_ids, indexer_* fields), for which kvmath has no spec"),
})
_NEEDED_FIELDS.update({  # batch A1 (issue 20, session 34): transformers 5.23 types of the batch not given a rule
    "idefics": ("its gated cross-attention blocks every cross_layer_interval layers beside LLaMA self-attention "
                "(modeling_idefics.py: only self-attention is cached) and its perceiver; that rule was not read"),
    "evolla": ("its protein-sequence aligner cross-attention layers (aligner_num_add_layers, "
               "aligner_enable_bias) beside LLaMA self-attention; that rule was not read"),
})


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

    def int(self, key, default: int | None = None, *, minimum: int = 1, maximum: int = MAX_INT) -> int:
        """The integer field ``key`` (an integral float such as ``32.0`` is accepted).

        Raises KvMathError when it is missing without a default, a bool, a string, a non-integral or
        non-finite float, or outside ``[minimum, maximum]``.
        """
        value = self.cfg.get(key)
        if value is None:
            if default is None:
                raise KvMathError(f"{self.model_type} config is missing {key} (a positive integer)")
            return default
        return _as_int(value, key, minimum, maximum)

    def layer_count(self, key="num_hidden_layers") -> int:
        return self.int(key, maximum=MAX_LAYERS)

    def bool(self, key, default: bool = False) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise KvMathError(f"config field {key} must be true or false, got {value!r}")
        return value

    def dtype(self) -> str:
        # the first of dtype / torch_dtype the config states; neither: bfloat16. An empty string is not absent:
        # transformers 5.23 refuses it ("module 'torch' has no attribute ''"), so it is refused here too
        # Both stated: transformers 5.23 (PreTrainedConfig.__init__) keeps dtype and drops torch_dtype unread, but a
        # value that is no dtype at all ("bfloat17") is a broken config, so each stated one must be a dtype
        stated = [_dtype_name(self.cfg[key], key) for key in ("dtype", "torch_dtype") if self.cfg.get(key) is not None]
        return stated[0] if stated else "bfloat16"

    def layer_types(self, n_layers: int, allowed: tuple[str, ...]) -> list[str] | None:
        value = self.cfg.get("layer_types")
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise KvMathError("config field layer_types must be a list of strings")
        if len(value) != n_layers:
            # transformers 5.23 PreTrainedConfig.validate_layer_type refuses any other length (vLLM loads the
            # config through it): "`num_hidden_layers` (64) must be equal to the number of `layer_types` (1000)"
            raise KvMathError(
                f"layer_types has {len(value)} entries but num_hidden_layers is {n_layers}; they must agree"
            )
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
    if not c.has("hidden_size"):
        raise KvMathError(
            f"{c.model_type} config has neither head_dim nor hidden_size (head_dim = hidden_size / num_attention_heads)"
        )
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    if hidden % heads:
        raise KvMathError(
            f"config has no head_dim and hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
        )
    return hidden // heads


def _window(c: _Config) -> int:
    """``sliding_window`` in tokens, at least 2.

    A window of 1 would keep no past token; transformers 5.23 ``DynamicSlidingWindowLayer`` slices
    ``[-sliding_window + 1:]``, which for 1 is ``[0:]`` and keeps every token, so no rule fits it.
    """
    window = c.int("sliding_window")
    if window < 2:
        raise KvMathError(f"config field sliding_window must be >= 2 tokens, got {window}")
    return window


def _kv_heads(c: _Config, heads: int) -> int:
    kv = c.int("num_key_value_heads", heads)
    if heads % kv:
        raise KvMathError(
            f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}; GQA needs whole groups"
        )
    return kv


def _arch(c: _Config, name, source, layers, heads, **kw) -> Architecture:
    if not any(layer.owns_cache for layer in layers):
        raise KvMathError(f"{c.model_type} config has no layer that keeps a cache (every layer is MLP/MoE-only)")
    max_pos = c.int("max_position_embeddings", 0, minimum=0) or None
    experts = max(c.int(k, 0, minimum=0) for k in _EXPERT_KEYS)
    return Architecture(
        name=name,
        model_type=c.model_type,
        layers=tuple(layers),
        num_attention_heads=heads,
        dtype=c.dtype(),
        max_position_embeddings=max_pos,
        source=source,
        hidden_size=c.int("hidden_size", 0, minimum=0),
        vocab_size=c.int("vocab_size", 0, minimum=0),
        num_experts=experts,
        derived_max_model_len=_derived_max_len(c, max_pos),
        **_mlp_fields(c, experts),
        **kw,
    )


_EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
_TOPK_KEYS = ("num_experts_per_tok", "top_k_experts", "moe_top_k", "moe_k", "moe_topk", "num_experts_per_token")
_SHARED_COUNT_KEYS = ("n_shared_experts", "num_shared_experts", "moe_num_shared_experts")


def _first_int(c: _Config, keys) -> int:
    """The first of ``keys`` the config states, as an integer >= 0 (a per-layer list of equal values counts
    as that value: Hunyuan's ``moe_topk``); 0 when none is stated."""
    for k in keys:
        v = c.raw(k)
        if isinstance(v, list) and v and all(x == v[0] for x in v):
            return _as_int(v[0], k, 0, MAX_INT)
        if v is not None and not isinstance(v, list):
            return c.int(k, minimum=0)
    return 0


def _mlp_fields(c: _Config, experts: int) -> dict:
    """The MLP and expert widths the Architecture carries for the engines (config keys in
    ``Architecture``'s docstring); 0 where the config does not state them."""
    moe_inter = _first_int(c, ("moe_intermediate_size", "expert_intermediate_size")) if experts else 0
    shared = _first_int(c, ("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size")) if experts else 0
    if experts and not shared:
        shared = _first_int(c, _SHARED_COUNT_KEYS) * moe_inter
    inter = c.raw("intermediate_size")
    if isinstance(inter, list):  # Gemma 3n: one width per layer
        inter = max((_as_int(v, "intermediate_size", 0, MAX_INT) for v in inter), default=0)
    else:
        inter = c.int("intermediate_size", 0, minimum=0)
    tied = c.raw("tie_word_embeddings")
    return {"num_experts_per_tok": _first_int(c, _TOPK_KEYS) if experts else 0, "intermediate_size": inter,
            "moe_intermediate_size": moe_inter, "shared_expert_intermediate_size": shared,
            "dense_mlp_beside_experts": bool(c.raw("enable_moe_block")) and inter > 0,
            "tie_word_embeddings": tied if isinstance(tied, bool) else False}


# rope_scaling types whose max_position_embeddings already is the extended length (vllm/config/model.py
# _get_and_verify_max_len skips them); every other type with a factor multiplies the original length.
_ROPE_NO_SCALE = ("su", "longrope", "llama3", "default", "mrope")


VLLM_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                     "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
"""The config keys vLLM derives a model's maximum length from, the smallest of those present, and
``model_max_length`` over all of them when it is set (transformers_utils/model_arch_config_convertor.py
``derive_max_model_len_and_key``, read in vLLM 0.20.0 and 0.24.0)."""


def _length_of_keys(c: _Config, max_pos: int | None) -> int | None:
    """The length vLLM reads from the config's length keys (:data:`VLLM_MAX_LEN_KEYS`), before rope scaling;
    None when the config has none of them. Raises KvMathError for a key that is not a positive integer."""
    found = [c.int(k, minimum=1) for k in VLLM_MAX_LEN_KEYS if k != "max_position_embeddings" and c.cfg.get(k)
             is not None]
    if max_pos:
        found.append(max_pos)
    if c.cfg.get("model_max_length") is not None:  # "For Command-R / Cohere": it wins over the others
        return c.int("model_max_length", minimum=1)
    return min(found) if found else None


def _derived_max_len(c: _Config, max_pos: int | None) -> int | None:
    """vLLM's derived maximum length (vllm/config/model.py ``_get_and_verify_max_len``, 0.20-0.27): the length
    of the config's length keys (:func:`_length_of_keys`: max_position_embeddings, or Kimi Linear's
    model_max_length); with a YaRN-type ``rope_scaling`` (or ``rope_parameters``),
    ``original_max_position_embeddings x factor``. A malformed ``rope_scaling`` is refused, not skipped."""
    max_pos = _length_of_keys(c, max_pos)
    rs = c.cfg.get("rope_scaling")
    if rs is None:
        return max_pos
    if not isinstance(rs, dict):
        raise KvMathError(f"config field rope_scaling must be an object or null, got {type(rs).__name__}")
    kind = rs.get("rope_type", rs.get("type"))
    if kind is not None and not isinstance(kind, str):
        raise KvMathError(f"config field rope_scaling.rope_type must be a string, got {kind!r}")
    if not kind or kind in _ROPE_NO_SCALE or rs.get("factor") is None:
        return max_pos
    factor = rs["factor"]
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) \
            or not 0 < factor <= 2**20:
        raise KvMathError(f"config field rope_scaling.factor must be a finite number in (0, 2^20], got {factor!r}")
    base = rs.get("original_max_position_embeddings")
    base = _as_int(base, "rope_scaling.original_max_position_embeddings") if base is not None else max_pos
    return int(base * factor) if base else max_pos


# ---------------------------------------------------------------------------------------------------
# families


@_family("qwen3_5_text", "qwen3_5_moe_text", "qwen3_next")
def _qwen_gdn(c: _Config, name: str, source: str) -> Architecture:
    """Qwen3-Next and Qwen 3.5 / 3.6: full attention every ``full_attention_interval`` layers, GDN elsewhere.

    transformers 5.23 ``Qwen3_5TextConfig`` / ``Qwen3NextConfig``: when ``layer_types`` is absent,
    layer i is full attention iff ``(i + 1) % full_attention_interval == 0``.
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    head_dim = _head_dim(c)
    _no_window(c)
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


_GEMMA4_LAYER_KEYS = frozenset({"head_dim", "num_key_value_heads", "num_attention_heads"})
"""``per_layer_config`` keys that shape a Gemma 4 layer's cache and that kvmath reads."""
_GEMMA4_LAYER_INERT = frozenset({
    "intermediate_size", "moe_intermediate_size", "num_experts", "top_k_experts", "enable_moe_block",
    "use_double_wide_mlp", "hidden_activation", "rms_norm_eps", "attention_bias", "attention_dropout",
    "rope_parameters", "initializer_range",
})
"""``per_layer_config`` keys that change a layer's weights or arithmetic but not what it caches."""


def _gemma4_per_layer(c: _Config, n: int) -> dict[int, dict] | None:
    """``per_layer_config`` as {layer index: overrides}, or None when the config has none.

    transformers 5.x (``configuration_utils.py`` ``PreTrainedConfig.__post_init__`` and
    ``integrations/heterogeneity/configuration_utils.py`` ``HeterogeneousConfigMixin``, 5.23 read)
    saves it as a mapping of zero-padded layer index strings (``"05"``) to the attributes that differ
    from the top-level ones; ``_apply_heterogeneous_config`` parses the keys with ``int()``. An
    override equal to the top-level value is dropped when the config is built, so a layer without
    an entry has the top-level ``head_dim`` / ``num_key_value_heads``.
    """
    raw = c.raw("per_layer_config")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise KvMathError("gemma4 config field per_layer_config must be an object {layer index: overrides}")
    out: dict[int, dict] = {}
    for key, overrides in raw.items():
        if isinstance(key, int) and not isinstance(key, bool):
            index = key
        elif isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 6:
            index = int(key)
        else:
            raise KvMathError(f"gemma4 per_layer_config key {key!r} is not a layer index (a string of digits)")
        if not 0 <= index < n:
            raise KvMathError(f"gemma4 per_layer_config key {key!r} is not a layer index in [0, {n})")
        if index in out:
            raise KvMathError(f"gemma4 per_layer_config lists layer {index} twice")
        if not isinstance(overrides, dict):
            raise KvMathError(f"gemma4 per_layer_config[{key!r}] must be an object of overrides")
        unknown = sorted(set(overrides) - _GEMMA4_LAYER_KEYS - _GEMMA4_LAYER_INERT, key=str)
        if unknown:
            raise KvMathError(
                f"gemma4 per_layer_config[{key!r}] overrides {choices(repr(k) for k in unknown)}; kvmath reads only "
                f"{choices(sorted(_GEMMA4_LAYER_KEYS))} per layer (and ignores weight-only keys), so it cannot "
                "size that layer's cache"
            )
        out[index] = overrides
    return out


@_family("gemma4_text")
def _gemma4(c: _Config, name: str, source: str) -> Architecture:
    """Gemma 4: sliding and full layers with their own KV heads and head widths, optional KV sharing.

    Two saved forms, both read as transformers 5.23 builds them (``models/gemma4/configuration_gemma4.py``
    ``Gemma4TextConfig.__post_init__``):

    - flat (transformers 5.5 dev exports, the published configs): full layers use ``global_head_dim``
      and, when ``attention_k_eq_v`` is true, ``num_global_key_value_heads``;
    - ``per_layer_config`` (saved by transformers >= 5.15's ``to_dict``): ``__post_init__`` turns the
      flat fields into ``{full layer: {"head_dim": global_head_dim, "num_key_value_heads": ...}}``
      and ``save_pretrained`` writes that mapping *instead of* ``global_head_dim`` /
      ``num_global_key_value_heads``; the top-level ``head_dim`` / ``num_key_value_heads`` are then the
      sliding layers' values (``Gemma4TextAttention``: ``config.per_layer_config[layer_idx].head_dim``).
      When a config has ``per_layer_config``, transformers ignores ``global_head_dim`` /
      ``num_global_key_value_heads`` (kvmath refuses them if they disagree).

    kvmath never takes the full layers' width or KV heads from the sliding values: a full layer
    whose ``head_dim`` (and, with ``attention_k_eq_v``, ``num_key_value_heads``) is not stated, in
    its ``per_layer_config`` entry or in ``global_head_dim`` / ``num_global_key_value_heads``, is
    refused naming the missing fields (transformers would default the width to 512 or drop an
    override equal to the top-level value; write it out). Without ``attention_k_eq_v`` the full
    layers keep ``num_key_value_heads`` (transformers writes no override for them). The last layer is
    always full; the last ``num_kv_shared_layers`` layers read the cache of the last earlier layer of
    the same type (``kv_sharing_modes``).
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    head_dim = _head_dim(c)
    k_eq_v = c.bool("attention_k_eq_v", False)
    if c.raw("use_bidirectional_attention") == "all":
        raise KvMathError("gemma4 with use_bidirectional_attention 'all' (an encoder) keeps no KV cache to size")
    window = _window(c)
    types = c.layer_types(n, (FULL, SLIDING))
    if types is None:
        types = [SLIDING if (i + 1) % 6 else FULL for i in range(n)]
    types[-1] = FULL
    widths = _gemma4_widths(c, types, heads, kv, head_dim, k_eq_v)
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
            if widths[source_layer] != widths[i]:
                raise KvMathError(
                    f"gemma4 layer {i} reads layer {source_layer}'s cache but their (num_key_value_heads, head_dim) "
                    f"differ: {widths[i]} vs {widths[source_layer]}"
                )
        layer_kv, dim = widths[i]
        if t == FULL:
            if heads % layer_kv:
                raise KvMathError(
                    f"num_attention_heads {heads} is not a multiple of the full-attention layers' KV heads {layer_kv}"
                )
            layers.append(AttentionLayer(i, FULL, layer_kv, dim, dim, None, k_eq_v, source_layer))
        else:
            layers.append(AttentionLayer(i, SLIDING, layer_kv, dim, dim, window, False, source_layer))
    return _arch(c, name, source, layers, heads)


def _gemma4_widths(c: _Config, types: list[str], heads: int, kv: int, head_dim: int,
                   k_eq_v: bool) -> list[tuple[int, int]]:
    """``(num_key_value_heads, head_dim)`` of every Gemma 4 layer, from the flat fields or ``per_layer_config``
    (the two saved forms ``_gemma4`` describes); refuses a full layer whose width or KV heads are not stated."""
    n = len(types)
    per_layer = _gemma4_per_layer(c, n)
    widths: list[tuple[int, int]] = []  # (num_kv_heads, head_dim) per layer
    if per_layer is None:
        missing = [k for k, needed in (("global_head_dim", True), ("num_global_key_value_heads", k_eq_v))
                   if needed and not c.has(k)]
        if missing:
            raise KvMathError(
                f"gemma4 config does not state the full-attention layers' {' and '.join(missing)} (nor a "
                "per_layer_config with their head_dim / num_key_value_heads); kvmath will not take them from "
                "the sliding layers' head_dim / num_key_value_heads or a default: write them out"
            )
        global_dim = c.int("global_head_dim")
        global_kv = c.int("num_global_key_value_heads") if k_eq_v else kv
        widths = [(global_kv, global_dim) if t == FULL else (kv, head_dim) for t in types]
    else:
        missing_at: dict[str, list[int]] = {}
        for i, t in enumerate(types):
            entry = _Config(per_layer.get(i, {}), f"gemma4 per_layer_config[{i}]")
            if t == FULL:
                for key, needed in (("head_dim", True), ("num_key_value_heads", k_eq_v)):
                    if needed and not entry.has(key):
                        missing_at.setdefault(key, []).append(i)
            layer_heads = entry.int("num_attention_heads", heads)
            layer_kv = entry.int("num_key_value_heads", kv)
            if layer_heads % layer_kv:
                raise KvMathError(
                    f"gemma4 layer {i}: num_attention_heads {layer_heads} is not a multiple of num_key_value_heads "
                    f"{layer_kv}; GQA needs whole groups"
                )
            widths.append((layer_kv, entry.int("head_dim", head_dim)))
        if missing_at:
            what = "; ".join(f"{key} for full-attention layers {choices(str(i) for i in idx)}"
                             for key, idx in missing_at.items())
            raise KvMathError(
                f"gemma4 per_layer_config does not state {what}: the top-level head_dim / num_key_value_heads "
                "are the sliding layers' values and kvmath will not use them for full layers (transformers drops an "
                "override equal to the top-level value: write it out)"
            )
        for key, sub in (("global_head_dim", 1), ("num_global_key_value_heads", 0)):
            if not c.has(key) or (key == "num_global_key_value_heads" and not k_eq_v):
                continue
            stated = c.int(key)
            got = {widths[i][sub] for i, t in enumerate(types) if t == FULL}
            if got != {stated}:
                raise KvMathError(
                    f"gemma4 config sets {key} {stated} but per_layer_config gives the full-attention layers "
                    f"{choices(sorted(got))}; transformers follows per_layer_config and ignores {key}: remove one"
                )
    return widths


@_family("llama", "mistral", "qwen2", "qwen3", "gemma2", "gpt_oss", "qwen2_5_vl_text", "qwen2_vl_text")
def _dense(c: _Config, name: str, source: str) -> Architecture:
    """Softmax attention on every layer, some layers windowed.

    Window rules, as transformers 5.23 builds ``layer_types`` and the cache (``cache_utils.py
    get_layer_types_and_kwargs``: without ``layer_types`` a layer is sliding iff its config has a
    ``sliding_window``):

    - ``mistral``, and ``llama`` given a ``sliding_window``: every layer windowed (vLLM serves both
      with models/llama.py and a model-level window, ``Attention`` ``cache_config.sliding_window``);
      with ``use_sliding_window: false`` as well the engines disagree (vLLM's
      ``get_sliding_window`` drops the window, transformers keeps it), so kvmath stops;
    - ``qwen2`` / ``qwen3``: layers ``>= max_window_layers`` windowed only when ``use_sliding_window``
      is true (``Qwen2Config.__post_init__`` clears ``sliding_window`` otherwise);
    - ``gemma2`` and ``gpt_oss``: ``layer_types``, or without it alternating sliding (even index)
      and full (``Gemma2Config`` / ``GptOssConfig.__post_init__``).

    Whether an engine applies the window is the engine's rule (llama.cpp's converters drop it for
    llama, mistral, qwen2 and qwen3: ``kvmath.engines.LlamaCpp``).
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    if c.model_type == "qwen3" and "head_dim" in c.cfg and c.cfg["head_dim"] is None:
        raise KvMathError("qwen3 config sets head_dim null: Qwen3Attention reads getattr(config, 'head_dim', ...) and "
                          "cannot be built with None; write the width or leave the key out (Qwen3Config's 128)")
    # Qwen3Config's head_dim defaults to 128 whatever hidden_size / heads (configuration_qwen3.py): a config that
    # leaves it out caches 128-wide heads, not hidden_size / num_attention_heads
    head_dim = 128 if c.model_type == "qwen3" and "head_dim" not in c.cfg else _head_dim(c)
    types = c.layer_types(n, (FULL, SLIDING))
    mt = c.model_type
    if types is None:
        if mt == "mistral" and "sliding_window" not in c.cfg:
            raise KvMathError(
                "mistral config has no sliding_window key; transformers' MistralConfig would default it to 4096 "
                "tokens: write it out (null for no window)"
            )
        if mt in _QWEN2_RULE and c.bool("use_sliding_window"):
            for key, default in (("sliding_window", 4096), ("max_window_layers", 28)):
                if key not in c.cfg:
                    raise KvMathError(
                        f"{mt} config has use_sliding_window true but no {key} key; transformers would default "
                        f"it to {default}: write it out"
                    )
        if mt in ("llama", "mistral") and c.has("sliding_window"):
            if c.raw("use_sliding_window") is False:
                raise KvMathError(
                    f"{mt} config sets sliding_window {c.raw('sliding_window')!r} and use_sliding_window false: "
                    "transformers 5.23 would still window every layer's cache, vLLM would not; remove one of them"
                )
            types = [SLIDING] * n
        elif mt in _QWEN2_RULE and c.bool("use_sliding_window") and c.has("sliding_window"):
            first = c.int("max_window_layers", n, minimum=0, maximum=MAX_LAYERS)
            types = [SLIDING if i >= first else FULL for i in range(n)]
        elif mt in ("gemma2", "gpt_oss"):
            types = [SLIDING if (i + 1) % 2 else FULL for i in range(n)]
        else:
            types = [FULL] * n
    if mt in _QWEN2_RULE and not c.bool("use_sliding_window"):
        types = [FULL] * n
    window = _window(c) if SLIDING in types else None
    layers = [
        AttentionLayer(i, t, kv, head_dim, head_dim, window if t == SLIDING else None) for i, t in enumerate(types)
    ]
    return _arch(c, name, source, layers, heads)


_QWEN2_RULE = ("qwen2", "qwen3", "qwen2_5_vl_text", "qwen2_vl_text")
"""Qwen2's window rule (``Qwen2Config`` / ``Qwen2_5_VLTextConfig.__post_init__``: layers ``>= max_window_layers``
sliding only when ``use_sliding_window``)."""


def _full_only(c: _Config, name: str, source: str, *, head_dim_default: int | None = None, window: str = "",
               mtp_key: str | None = None) -> Architecture:
    """Every layer full softmax attention, ``num_key_value_heads`` x head width; no window.

    ``head_dim_default``: the config class's own ``head_dim`` default (it is then not
    ``hidden_size / num_attention_heads``), so a config without ``head_dim`` is refused rather than
    guessed. ``window``: why a ``sliding_window`` in this family is refused (empty: the key must be null).
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    if head_dim_default is not None and not c.has("head_dim"):
        raise KvMathError(
            f"{c.model_type} config has no head_dim; transformers' config class would default it to "
            f"{head_dim_default} (not hidden_size / num_attention_heads): write it out"
        )
    head_dim = _head_dim(c)
    c.layer_types(n, (FULL,))  # only validated: no layer of these families is windowed
    if c.has("sliding_window"):
        raise KvMathError(
            f"{c.model_type} config sets sliding_window {c.raw('sliding_window')!r}: {window or 'this family has no window'}"
            "; kvmath sizes these models without a window only (set it to null)"
        )
    layers = [AttentionLayer(i, FULL, kv, head_dim, head_dim) for i in range(n)]
    mtp = c.int(mtp_key, 0, minimum=0, maximum=MAX_LAYERS) if mtp_key else 0
    return _arch(c, name, source, layers, heads, mtp_num_hidden_layers=mtp)


_WINDOW_UNCHECKED = ("transformers 5.23 would window every layer's cache (cache_utils get_layer_types_and_kwargs) "
                     "but kvmath has not checked that vLLM and llama.cpp apply it for this family")


@_family("mixtral")
def _mixtral(c: _Config, name: str, source: str) -> Architecture:
    """Mixtral: GQA on every layer, MoE MLPs (no cache).

    transformers 5.23 ``models/mixtral/configuration_mixtral.py`` ``MixtralConfig``: ``sliding_window``
    defaults to None (the published 8x7B / 8x22B configs write null), ``num_key_value_heads`` to
    ``num_attention_heads``; ``modeling_mixtral.py`` ``head_dim = getattr(config, "head_dim", None) or
    hidden_size // num_attention_heads``. A window is refused: llama.cpp converts Mixtral as ``llama``
    (no window) while transformers would window every layer.
    """
    return _full_only(c, name, source, window=_WINDOW_UNCHECKED)


@_family("qwen3_moe")
def _qwen3_moe(c: _Config, name: str, source: str) -> Architecture:
    """Qwen3-MoE (Qwen3-30B-A3B, 235B-A22B): GQA on every layer, explicit ``head_dim``.

    transformers 5.23 ``models/qwen3_moe/configuration_qwen3_moe.py`` ``Qwen3MoeConfig.__post_init__``
    clears ``sliding_window`` unless ``use_sliding_window`` is true (the published configs: false,
    window null); it has no ``max_window_layers`` rule (unlike Qwen2), so with the window on
    transformers would window every layer: kvmath refuses that case. ``mlp_only_layers`` /
    ``decoder_sparse_step`` only choose MLP vs MoE. ``head_dim`` is read as ``modeling_qwen3_moe.py``
    does (``getattr(config, "head_dim", hidden_size // num_attention_heads)``; 128 in the 30B, not 2048/32).
    """
    if c.bool("use_sliding_window") and c.has("sliding_window"):
        raise KvMathError(
            f"qwen3_moe config sets use_sliding_window true with sliding_window {c.raw('sliding_window')!r}: "
            f"{_WINDOW_UNCHECKED} (Qwen3MoeConfig has no max_window_layers rule); set use_sliding_window false"
        )
    if c.has("sliding_window"):
        c = _Config({k: v for k, v in c.cfg.items() if k != "sliding_window"}, c.model_type)
    return _full_only(c, name, source)


@_family("glm4")
def _glm4(c: _Config, name: str, source: str) -> Architecture:
    """GLM-4 (GLM-4-9B-0414, GLM-4-32B-0414): GQA on every layer.

    transformers 5.23 ``models/glm4/configuration_glm4.py`` ``Glm4Config``: ``head_dim`` defaults to
    128 (so a config without it is refused, not read as ``hidden_size / num_attention_heads``); no window;
    ``partial_rotary_factor`` shapes RoPE only.
    """
    return _full_only(c, name, source, head_dim_default=128)


@_family("glm4_moe")
def _glm4_moe(c: _Config, name: str, source: str) -> Architecture:
    """GLM-4.5 / 4.6 / 4.7 (``glm4_moe``): GQA on every layer, MoE MLPs, MTP layers recorded.

    transformers 5.23 ``models/glm4_moe/configuration_glm4_moe.py`` ``Glm4MoeConfig`` (no window, no
    ``head_dim`` field: ``modeling_glm4_moe.py`` reads ``getattr(config, "head_dim", hidden_size //
    num_attention_heads)``; GLM-4.5 writes 128 with 96 heads of a 5120 hidden size).
    ``num_nextn_predict_layers`` (``num_mtp_layers``) is the MTP head, beside the decoder.
    ``first_k_dense_replace`` only chooses MLP vs MoE.
    """
    return _full_only(c, name, source, mtp_key="num_nextn_predict_layers")


@_family("minimax_m2")
def _minimax_m2(c: _Config, name: str, source: str) -> Architecture:
    """MiniMax-M2 / M2.5 / M2.7: GQA on every layer, MoE MLPs.

    transformers 5.23 ``models/minimax_m2/configuration_minimax_m2.py`` ``MiniMaxM2Config``: ``head_dim``
    defaults to 128 (refused when absent), no window; ``rotary_dim`` shapes RoPE only.
    """
    return _full_only(c, name, source, head_dim_default=128)


_GEMMA3_DEFAULTS = {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096,
                    "max_position_embeddings": 131072}
"""``Gemma3TextConfig`` defaults (transformers 5.23) for the cache-shaping fields. Published Gemma 3 text
configs rely on them (google/gemma-3-4b-it's ``text_config`` writes no head counts or ``head_dim``)."""


@_family("gemma3_text")
def _gemma3(c: _Config, name: str, source: str) -> Architecture:
    """Gemma 3: 5 sliding layers to 1 full, one head width and KV-head count for both.

    transformers 5.23 ``models/gemma3/configuration_gemma3.py`` ``Gemma3TextConfig.__post_init__``:
    without ``layer_types``, layer i is full iff ``(i + 1) % sliding_window_pattern == 0`` (default 6);
    the cache-shaping fields left out of a config take the class defaults (``_GEMMA3_DEFAULTS``:
    8 heads, 4 KV heads, head_dim 256, window 4096), as every published Gemma 3 config expects
    (``modeling_gemma3.py`` reads ``config.head_dim``, not ``hidden_size / heads``).
    ``query_pre_attn_scalar`` only scales the queries. ``use_bidirectional_attention`` (EmbeddingGemma,
    an encoder) is refused: it keeps no KV cache to size.
    """
    if c.bool("use_bidirectional_attention"):
        raise KvMathError("gemma3 with use_bidirectional_attention true (an encoder) keeps no KV cache to size")
    filled = dict(c.cfg)
    # vLLM _get_and_verify_max_len (vllm/config/model.py): "Gemma3's max_model_len (128K) is already scaled by
    # RoPE scaling, so we skip applying the scaling factor again" (skipped for model types containing "gemma3").
    filled.pop("rope_scaling", None)
    for key, default in _GEMMA3_DEFAULTS.items():
        if key not in filled:  # an explicit null sliding_window stays null (refused below)
            filled[key] = default
    c = _Config(filled, c.model_type)
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    kv = _kv_heads(c, heads)
    head_dim = c.int("head_dim")
    types = c.layer_types(n, (FULL, SLIDING))
    if types is None:
        pattern = c.int("sliding_window_pattern", 6, maximum=MAX_LAYERS)
        types = [SLIDING if (i + 1) % pattern else FULL for i in range(n)]
    window = _window(c) if SLIDING in types else None
    layers = [AttentionLayer(i, t, kv, head_dim, head_dim, window if t == SLIDING else None)
              for i, t in enumerate(types)]
    return _arch(c, name, source, layers, heads)


_GRANITE_TYPES = {"mamba": LINEAR, "attention": FULL, LINEAR: LINEAR, FULL: FULL}


@_family("granitemoehybrid")
def _granitemoehybrid(c: _Config, name: str, source: str) -> Architecture:
    """Granite 4.0-H (``granitemoehybrid``): Mamba-2 layers and GQA attention layers.

    transformers 5.23 ``models/granitemoehybrid/configuration_granitemoehybrid.py``
    ``GraniteMoeHybridConfig``: ``layer_types`` (alias ``layers_block_type``; the published configs
    write ``mamba`` / ``attention``, which ``configuration_utils.remap_legacy_layer_types`` maps to
    linear_attention / full_attention); without it every layer is Mamba-2, which kvmath refuses to
    assume. ``modeling_granitemoehybrid.py`` ``GraniteMoeHybridMambaLayer``: ``intermediate_size =
    mamba_expand * hidden_size``, ``head_dim = mamba_d_head`` (``"auto"``: ``intermediate_size //
    mamba_n_heads``), ``conv_dim = intermediate_size + 2 * mamba_n_groups * mamba_d_state``, kernel
    ``mamba_d_conv``; attention ``num_key_value_heads`` x ``getattr(config, "head_dim", hidden_size //
    num_attention_heads)``. No window (``position_embedding_type`` only chooses RoPE or none).
    """
    _no_window(c)
    listed = None
    for k in ("layer_types", "layers_block_type"):
        value = c.raw(k)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise KvMathError(f"config field {k} must be a list of strings")
        bad = sorted(set(value) - set(_GRANITE_TYPES))
        if bad:
            raise KvMathError(f"granitemoehybrid {k} contains {choices(bad)}; valid layer types: "
                              f"{choices(sorted(_GRANITE_TYPES))}")
        mapped = [_GRANITE_TYPES[v] for v in value]
        if listed is not None and mapped != listed:
            raise KvMathError("layer_types and layers_block_type disagree")
        listed = mapped
    if listed is None:
        raise KvMathError(
            "granitemoehybrid config needs layer_types (mamba / attention per layer); transformers would make "
            "every layer Mamba-2"
        )
    n = c.layer_count()
    if len(listed) != n:
        raise KvMathError(f"layer_types has {len(listed)} entries but num_hidden_layers is {n}; they must agree")
    heads = c.int("num_attention_heads")
    if FULL in listed:
        kv = _kv_heads(c, heads)
        head_dim = _head_dim(c)
    if LINEAR in listed:
        m_heads = c.int("mamba_n_heads")
        groups, state, kernel = c.int("mamba_n_groups"), c.int("mamba_d_state"), c.int("mamba_d_conv")
        inter = c.int("mamba_expand") * c.int("hidden_size")
        if c.raw("mamba_d_head") == "auto":
            if inter % m_heads:
                raise KvMathError(f"mamba_n_heads {m_heads} does not divide mamba_expand * hidden_size {inter}")
            m_dim = inter // m_heads
        else:
            m_dim = c.int("mamba_d_head")
        if m_dim * m_heads != inter:
            raise KvMathError(
                f"mamba_d_head {m_dim} x mamba_n_heads {m_heads} != mamba_expand * hidden_size {inter}; "
                "transformers' GraniteMoeHybridConfig refuses it"
            )
        if m_heads % groups:
            raise KvMathError(f"mamba_n_heads {m_heads} is not a multiple of mamba_n_groups {groups}")
    layers = []
    for i, t in enumerate(listed):
        if t == FULL:
            layers.append(AttentionLayer(i, FULL, kv, head_dim, head_dim))
        else:
            layers.append(Mamba2Layer(i, m_heads, m_dim, state, groups, kernel))
    # GraniteMoeHybridConfig: mamba_chunk_size defaults to 256
    return _arch(c, name, source, layers, heads, mamba_chunk_size=c.int("mamba_chunk_size", 256))


def _no_window(c: _Config) -> None:
    """Families whose attention has no window: a ``sliding_window`` in the config is a contradiction.

    transformers 5.23 ignores it where ``layer_types`` is built (Qwen3-Next, Qwen 3.5, Kimi Linear,
    Nemotron-H) and windows every cache layer where it is not (DeepSeek-V3); vLLM applies it as the
    model-level window (``Attention``: ``cache_config.sliding_window``; NemotronH per layer) unless
    ``use_sliding_window`` is false. kvmath does not pick a side.
    """
    if c.has("sliding_window") and c.raw("use_sliding_window") is not False:
        raise KvMathError(
            f"{c.model_type} attention has no sliding window, but the config sets sliding_window "
            f"{c.raw('sliding_window')!r}; engines disagree on what it would do (remove it, or set "
            "use_sliding_window false)"
        )


def _mla_fields(c: _Config) -> dict:
    """The MLA widths: ``kv_lora_rank`` and ``qk_rope_head_dim`` are cached; the others are not."""
    out = {"kv_lora_rank": c.int("kv_lora_rank"), "qk_rope_head_dim": c.int("qk_rope_head_dim")}
    for key in ("qk_nope_head_dim", "v_head_dim"):
        out[key] = c.int(key) if c.has(key) else None
    return out


@_family("deepseek_v3")
def _deepseek_v3(c: _Config, name: str, source: str) -> Architecture:
    """DeepSeek-V3: MLA on every layer.

    transformers 5.23 ``DeepseekV3Attention`` caches the latent ``kv_nope`` ``[B, 1, T, kv_lora_rank]``
    as keys and ``k_rot`` ``[B, 1, T, qk_rope_head_dim]`` as values. ``num_nextn_predict_layers``
    (the MTP head) is recorded but not built by ``DeepseekV3ForCausalLM``.
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    c.layer_types(n, (FULL,))  # only validated: every DeepSeek-V3 layer is MLA
    _no_window(c)
    mla = _mla_fields(c)
    layers = [MLALayer(i, **mla) for i in range(n)]
    return _arch(c, name, source, layers, heads,
                 mtp_num_hidden_layers=c.int("num_nextn_predict_layers", 0, minimum=0, maximum=MAX_LAYERS))


def _index_list(value, key: str, n: int) -> list[int]:
    if not isinstance(value, list) or not value:
        raise KvMathError(f"linear_attn_config.{key} must be a non-empty list of 1-based layer numbers")
    out = [_as_int(v, f"linear_attn_config.{key} (1-based layer numbers)", 1, n) for v in value]
    if len(set(out)) != len(out):
        raise KvMathError(f"linear_attn_config.{key} lists a layer twice")
    return out


@_family("kimi_linear")
def _kimi_linear(c: _Config, name: str, source: str) -> Architecture:
    """Kimi Linear: MLA layers and Kimi Delta Attention (KDA) layers.

    The layer lists in ``linear_attn_config`` (``full_attn_layers``, ``kda_layers``) are 1-BASED:
    transformers 5.23 ``KimiLinearConfig.__post_init__`` sets ``layer_types[layer - 1]``, vLLM's
    ``is_kda_layer(i)`` tests ``i + 1``, and llama.cpp's converter ``il + 1 in full_attn_layers``.
    A top-level ``layer_types`` takes precedence (transformers). Without either kvmath stops: the
    engines' fallbacks disagree (transformers: full iff ``i and i % 4 == 0``; vLLM: all MLA).
    KDA widths come from ``linear_attn_config`` ``num_heads``, ``head_dim``, ``short_conv_kernel_size``.
    """
    n = c.layer_count()
    heads = c.int("num_attention_heads")
    _no_window(c)
    lac = c.raw("linear_attn_config")
    if lac is not None and not isinstance(lac, dict):
        raise KvMathError("config field linear_attn_config must be an object")
    lac = lac or {}
    types = c.layer_types(n, (FULL, LINEAR))
    if "full_attn_layers" in lac or "kda_layers" in lac:
        full = _index_list(lac.get("full_attn_layers"), "full_attn_layers", n)
        kda = _index_list(lac.get("kda_layers"), "kda_layers", n)
        both = sorted(set(full) & set(kda))
        if both:
            raise KvMathError(f"linear_attn_config lists layers {choices(both)} as both full attention and KDA")
        missing = sorted(set(range(1, n + 1)) - set(full) - set(kda))
        if missing:
            raise KvMathError(
                f"linear_attn_config full_attn_layers and kda_layers (1-based) leave layers {choices(missing)} "
                f"of {n} unassigned"
            )
        full_set = set(full)
        listed = [FULL if i + 1 in full_set else LINEAR for i in range(n)]
        if types is not None and types != listed:
            raise KvMathError(
                "layer_types and linear_attn_config (full_attn_layers / kda_layers, 1-based) disagree; "
                "transformers follows layer_types, vLLM and llama.cpp the layer lists"
            )
        types = listed
    if types is None:
        raise KvMathError(
            "kimi_linear config needs linear_attn_config.full_attn_layers and linear_attn_config.kda_layers "
            "(1-based layer numbers) or layer_types to know which layers are MLA and which KDA"
        )
    layers = []
    mla = _mla_fields(c) if FULL in types else None
    if LINEAR in types:
        kda_c = _Config(lac, "kimi_linear linear_attn_config")
        kda_heads, kda_dim = kda_c.int("num_heads"), kda_c.int("head_dim")
        kernel = kda_c.int("short_conv_kernel_size")
    for i, t in enumerate(types):
        layers.append(MLALayer(i, **mla) if t == FULL else KDALayer(i, kda_heads, kda_dim, kernel))
    return _arch(c, name, source, layers, heads,
                 mtp_num_hidden_layers=c.int("num_nextn_predict_layers", 0, minimum=0, maximum=MAX_LAYERS))


_NEMOTRON_PATTERN = {"M": LINEAR, "*": FULL, "-": MLP, "E": MOE}


@_family("nemotron_h")
def _nemotron_h(c: _Config, name: str, source: str) -> Architecture:
    """Nemotron-H: Mamba-2 (``M``), attention (``*``), MLP (``-``) and MoE (``E``) blocks.

    Layers come from ``layers_block_type`` / ``layer_types`` when given, else from
    ``hybrid_override_pattern`` (transformers 5.23 ``NemotronHConfig._pattern_to_list``; vLLM
    ``ALL_DECODER_LAYER_TYPES`` reads the pattern letter by letter). MLP and MoE blocks keep no cache.
    Mamba-2 widths: ``mamba_num_heads``, ``mamba_head_dim``, ``ssm_state_size``, ``n_groups``,
    ``conv_kernel``; attention: ``num_key_value_heads`` and ``head_dim`` (the 56B base config calls it
    ``attention_head_dim``; vLLM falls back to ``hidden_size // num_attention_heads``).
    ``mamba_ssm_cache_dtype`` is recorded as the recurrent-state dtype.
    """
    _no_window(c)
    allowed = (LINEAR, FULL, MLP, MOE)
    types = key = None
    for k in ("layers_block_type", "layer_types"):
        listed = c.raw(k)
        if listed is None:
            continue
        if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
            raise KvMathError(f"config field {k} must be a list of strings")
        # the older names (transformers 5.23 configuration_utils.py _LEGACY_LAYER_TYPE_REMAP): Nemotron-3-Ultra
        listed = [{"mamba": LINEAR, "attention": FULL}.get(v, v) for v in listed]
        bad = sorted(set(listed) - set(allowed))
        if bad:
            raise KvMathError(f"nemotron_h {k} contains {choices(bad)}; valid layer types: {choices(allowed)}")
        if types is not None and list(listed) != types:
            raise KvMathError(f"{key} and {k} disagree")
        types, key = list(listed), k
    pattern = c.raw("hybrid_override_pattern")
    if pattern is not None:
        if not isinstance(pattern, str) or not pattern:
            raise KvMathError(
                "config field hybrid_override_pattern must be a non-empty string, one letter per layer "
                "(M = Mamba-2, * = attention, - = MLP, E = MoE)"
            )
        bad = sorted(set(pattern) - set(_NEMOTRON_PATTERN))
        if bad:
            raise KvMathError(
                f"hybrid_override_pattern contains {choices(repr(b) for b in bad)}; valid letters: "
                f"{choices(_NEMOTRON_PATTERN)}"
            )
        from_pattern = [_NEMOTRON_PATTERN[ch] for ch in pattern]
        if types is not None and types != from_pattern:
            raise KvMathError(
                f"{key} and hybrid_override_pattern disagree; transformers follows {key}, vLLM the pattern"
            )
        types, key = from_pattern, "hybrid_override_pattern"
    if types is None:
        raise KvMathError(
            "nemotron_h config needs hybrid_override_pattern (one letter per layer: M = Mamba-2, "
            "* = attention, - = MLP, E = MoE) or layers_block_type"
        )
    if len(types) > MAX_LAYERS:
        raise KvMathError(f"{key} has {len(types)} layers; kvmath accepts at most {MAX_LAYERS}")
    if c.has("num_hidden_layers") and c.layer_count() != len(types):
        raise KvMathError(
            f"{key} has {len(types)} entries but num_hidden_layers is {c.layer_count()}; they must agree"
        )
    heads = c.int("num_attention_heads")
    if FULL in types:
        kv = _kv_heads(c, heads)
        if c.has("head_dim"):
            head_dim = c.int("head_dim")
        elif c.has("attention_head_dim"):
            head_dim = c.int("attention_head_dim")
        else:
            head_dim = _head_dim(c)
    if LINEAR in types:
        m_heads, m_dim = c.int("mamba_num_heads"), c.int("mamba_head_dim")
        state, groups = c.int("ssm_state_size"), c.int("n_groups")
        kernel = c.int("conv_kernel", 4)
        if m_heads % groups:
            raise KvMathError(
                f"mamba_num_heads {m_heads} is not a multiple of n_groups {groups}; Mamba-2 shares B and C "
                "over whole groups of heads"
            )
    layers = []
    for i, t in enumerate(types):
        if t == FULL:
            layers.append(AttentionLayer(i, FULL, kv, head_dim, head_dim))
        elif t == LINEAR:
            layers.append(Mamba2Layer(i, m_heads, m_dim, state, groups, kernel))
        else:
            layers.append(NoCacheLayer(i, t))
    ssm = c.raw("mamba_ssm_cache_dtype")
    # NemotronHConfig: chunk_size defaults to 128 (and takes a legacy mamba_chunk_size kwarg)
    chunk = c.int("mamba_chunk_size", None) if c.has("mamba_chunk_size") else c.int("chunk_size", 128)
    return _arch(c, name, source, layers, heads, mamba_chunk_size=chunk,
                 mamba_ssm_dtype=_dtype_name(ssm, "mamba_ssm_cache_dtype") if ssm is not None else None)

