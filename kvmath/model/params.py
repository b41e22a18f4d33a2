"""The tensors a checkpoint of a config holds, family by family, as GGUF names them.

``gguf_tensor_table(config)`` is the tensor table llama.cpp's ``convert_hf_to_gguf.py`` writes for a checkpoint
with this config (names, shapes ne0 first, source types), the model side's per-family shapes that
``kvmath.engines.llamacpp.weights`` applies a quantisation mix to. GGUF is a model format (``kvmath.model.gguf``
reads it), so its tensor names live here, beside the config reader, and no engine reads a config for them.
"""

from __future__ import annotations

from ..errors import KvMathError
from .gguf import WeightBytes

GGUF_ARCH = {"llama": "llama", "qwen3": "qwen3", "qwen3_5_text": "qwen35", "qwen3_5_moe_text": "qwen35moe",
             "gemma4_text": "gemma4", "gpt_oss": "gpt-oss", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2",
             "qwen3_moe": "qwen3moe", "gemma2": "gemma2", "gemma3_text": "gemma3", "deepseek_v2": "deepseek2",
             "deepseek_v3": "deepseek2", "kimi_k2": "deepseek2", "qwen3_next": "qwen3next",
             "nemotron_h": "nemotron_h", "phi3": "phi3", "olmo2": "olmo2", "olmo3": "olmo2", "smollm3": "smollm3",
             "granite": "granite", "granitemoe": "granitemoe", "granitemoeshared": "granitemoe",
             "seed_oss": "seed_oss",
             "ernie4_5": "ernie4_5", "olmoe": "olmoe", "cohere": "command-r", "cohere2": "cohere2",
             "starcoder2": "starcoder2", "glm4": "glm4", "qwen2_moe": "qwen2moe", "glm4_moe": "glm4moe",
             "exaone4": "exaone4", "ernie4_5_moe": "ernie4_5-moe",
             "hunyuan_v1_dense": "hunyuan-dense", "hunyuan_v1_moe": "hunyuan-moe",
             "granitemoehybrid": "granitehybrid", "falcon_h1": "falcon-h1", "lfm2": "lfm2"}
"""HF ``model_type`` -> the GGUF ``general.architecture`` the vendored convert_hf_to_gguf.py writes (Mistral and
Mixtral are converted by ``LlamaModel``: ``MistralForCausalLM`` / ``MixtralForCausalLM`` are registered there;
DeepSeek V2 / V3 and Kimi K2 by ``DeepseekV2Model`` (conversion/deepseek.py); OLMo 2 and Olmo 3 by
``Olmo2Model`` (conversion/olmo.py); SmolLM 3 by ``SmolLM3Model(LlamaModel)`` (conversion/llama.py); ``nemotron_h`` becomes
``nemotron_h_moe`` when its config has ``num_experts_per_tok`` (conversion/nemotron.py), see :func:`gguf_arch`).
The one list of families kvmath writes a GGUF tensor table for; every other ``model_type`` is refused naming it."""


def gguf_arch(cfg: dict) -> str:
    """The GGUF architecture convert_hf_to_gguf.py writes for the (unwrapped) text config ``cfg``."""
    mt = cfg.get("model_type")
    if mt == "nemotron_h" and "num_experts_per_tok" in cfg:  # NemotronHModel.__init__: has_moe_params
        return "nemotron_h_moe"
    return GGUF_ARCH[mt]


def estimate_weight_bytes(config: dict, *, bits_per_weight: float = 4.5, name: str = "") -> WeightBytes:
    """Approximate weight bytes of a MoE or dense model from its config shapes, split as llama.cpp
    places them (see :class:`kvmath.model.gguf.WeightBytes`).

    Every matrix is counted at ``bits_per_weight`` (Q4_K stores 256 weights in 144 bytes = 4.5 bits;
    a Q4_K_M file averages ~4.8-4.9 bits because some tensors stay at Q6_K); 1-D tensors (norms,
    biases) are left out. Supported: Qwen 3.5 / 3.6 (``qwen3_5_moe_text``, Gated DeltaNet + gated
    full attention + routed and shared experts) and Gemma 4 (``gemma4_text``, dense MLP plus routed
    experts). An exact figure needs the GGUF's tensor table (``kvmath.model.gguf``).
    """
    from .hf import _unwrap

    if not isinstance(config, dict):
        raise KvMathError(f"config must be a JSON object, got {type(config).__name__}")
    cfg, _ = _unwrap(config)
    mt = cfg.get("model_type")
    try:
        w = _estimate_weight_bytes(cfg, mt, bits_per_weight, name)
    except KeyError as e:
        raise KvMathError(f"config.json of {mt} lacks {e.args[0]!r}, needed for its weight estimate") from None
    except (TypeError, ValueError, OverflowError) as e:  # None, a list, a string or NaN where a size is read
        raise KvMathError(f"config.json of {mt}: a field the weight estimate reads is not a size ({e})") from None
    return _checked_sizes(w, mt)


def _checked_sizes(w: WeightBytes, mt):
    """``w`` if every size in it is a non-negative integer; KvMathError otherwise (a negative or absurd
    config field would make a silent wrong number)."""
    sizes = (w.input, w.attention, w.experts, w.other, w.mtp, w.output_bytes, *w.experts_per_block)
    if not all(isinstance(x, int) and 0 <= x < 2**60 for x in sizes):
        raise KvMathError(f"config.json of {mt}: its fields give a negative or impossible weight size")
    return w


def _estimate_weight_bytes(cfg: dict, mt, bits_per_weight: float, name: str) -> WeightBytes:
    """The body of :func:`estimate_weight_bytes` on the unwrapped text config (raises KeyError / TypeError on
    a missing or non-numeric field, which the caller turns into KvMathError)."""
    h = cfg["hidden_size"]
    n = cfg["num_hidden_layers"]
    vocab = cfg["vocab_size"]
    bpw = bits_per_weight / 8
    nb = lambda params: int(round(params * bpw))
    per_block_exp, attn, other = [], 0, 0
    if mt in ("qwen3_5_moe_text", "qwen3_5_text", "qwen3_next"):
        arch_layers = cfg.get("layer_types") or [
            "full_attention" if (i + 1) % cfg.get("full_attention_interval", 4) == 0 else "linear_attention"
            for i in range(n)]
        heads, kv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        nk, nv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
        dk, dv, kern = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"], cfg["linear_conv_kernel_dim"]
        full = h * heads * hd * 2 + 2 * h * kv * hd + heads * hd * h  # q (+gate), k, v, o
        conv_dim = 2 * nk * dk + nv * dv
        lin = h * (conv_dim + nv * dv) + h * 2 * nv + conv_dim * kern + nv * dv * h  # qkv, z, b+a, conv, out
        e = cfg.get("num_experts") or 0  # Qwen 3.5 / 3.6 27B are dense: one MLP of intermediate_size
        mi = cfg["moe_intermediate_size"] if e else 0
        shared = cfg.get("shared_expert_intermediate_size", 0)
        dense = 0 if e else cfg["intermediate_size"]
        for t in arch_layers[:n]:
            attn += nb(full if t == "full_attention" else lin)
            per_block_exp.append(nb(3 * e * h * mi) if e else 0)
            other += nb(h * e + (3 * h * shared + h if shared else 0)) if e else nb(3 * h * dense)
    elif mt == "gemma4_text":
        types = cfg["layer_types"]
        heads, kv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        gkv, ghd = cfg.get("num_global_key_value_heads", kv), cfg.get("global_head_dim", hd)
        k_eq_v = cfg.get("attention_k_eq_v", False)
        e, mi, inter = cfg.get("num_experts", 0), cfg.get("moe_intermediate_size", 0), cfg["intermediate_size"]
        for t in types[:n]:
            if t == "full_attention":
                attn += nb(h * heads * ghd + h * gkv * ghd * (1 if k_eq_v else 2) + heads * ghd * h)
            else:
                attn += nb(h * heads * hd + 2 * h * kv * hd + heads * hd * h)
            per_block_exp.append(nb(3 * e * h * mi) if e else 0)
            other += nb(3 * h * inter + (h * e if e else 0))
    else:
        raise KvMathError(f"estimate_weights knows qwen3_5_moe_text, qwen3_5_text, qwen3_next and gemma4_text, "
                          f"not {mt!r}; read a GGUF's tensor table instead")
    embd = nb(vocab * h)
    tied = cfg.get("tie_word_embeddings", False)
    other += 0 if tied else embd
    return WeightBytes(embd, attn, sum(per_block_exp), other, 0, embd if tied else 0, tuple(per_block_exp),
                       f"estimated from config shapes at {bits_per_weight} bits per weight{(' (' + name + ')') if name else ''}")


def gguf_tensor_table(config: dict, *, mtp: bool = False) -> tuple[str, int, tuple]:
    """The tensors llama.cpp 0c1e570's ``convert_hf_to_gguf.py`` writes for a checkpoint with this config:
    ``(gguf architecture, block count, ((name, shape ne0 first, source type), ...))``; weights of two or more
    dimensions in BF16, everything else F32, as ``--outtype bf16`` leaves them.

    Names and shapes follow the converter and ``src/models/<arch>.cpp`` ``create_tensor`` calls, and are
    tested against the tables of converted files (``tests/fixtures/llamacpp/compute_fixtures.json``).
    Supported: the ``model_type`` keys of :data:`GGUF_ARCH` (the one list; each family's block writer below
    names its sources): Llama / Mistral / Mixtral, Qwen 2 / 3 / 3-MoE / 3.5 / 3.6 / 3-Next, Gemma 2 / 3 / 4
    (Gemma 4 without per-layer embeddings), gpt-oss, DeepSeek V2 / V3 / Kimi K2, Nemotron-H (dense and MoE),
    Phi-3 / 4, OLMo 2 / Olmo 3, OLMoE, SmolLM 3, Granite / Granite MoE, Seed-OSS, ERNIE 4.5 (dense), Cohere / Cohere 2, StarCoder 2,
    GLM-4 (0414, dense), Qwen2-MoE, GLM-4.5 / 4.6 / 4.7 MoE (the trunk), EXAONE 4.0, Granite 4.0-H (Mamba-2 +
    attention, MoE or dense), Falcon-H1, LFM2. ``mtp=True`` adds Qwen 3.5 / 3.6's
    multi-token-prediction block (``blk.<n>.`` plus ``nextn.*``; shapes from src/models/qwen35*.cpp, not checked
    against a converted file). Others raise KvMathError naming the model_type and listing the known ones.
    """
    from .hf import _unwrap

    if not isinstance(config, dict):
        raise KvMathError(f"config must be a JSON object, got {type(config).__name__}")
    cfg, _ = _unwrap(config)  # a wrapper kvmath does not know is refused, not read from its text part
    mt = cfg.get("model_type")
    if mt not in GGUF_ARCH:
        raise KvMathError(f"no GGUF tensor table from config for model_type {mt!r} (known: "
                          f"{', '.join(GGUF_ARCH)}); read the GGUF itself")
    try:
        return _tables(cfg, mt, mtp)
    except KeyError as e:
        raise KvMathError(f"config.json of {mt} lacks {e.args[0]!r}, needed for its tensor shapes") from None
    except (TypeError, ValueError, OverflowError, ZeroDivisionError, IndexError, AttributeError) as e:
        # None, a list, a string, NaN or 0 where a size is read, a pattern shorter than the layers
        raise KvMathError(f"config.json of {mt}: a field its tensor shapes read is not a size ({e})") from None


def _tables(cfg: dict, mt: str, mtp: bool):
    E, n, V = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"]), int(cfg["vocab_size"])
    W, F = "BF16", "F32"
    out: list = []
    # conversion/base.py (prepare_tensors): 1-D tensors, norms, routers and conv1d kernels stay F32
    f32 = lambda name, shape: len(shape) < 2 or shape[1] == 1 or name.endswith("_norm.weight") or \
        ".ffn_gate_inp" in name or ".ssm_conv1d" in name or ".shortconv.conv" in name or not name.endswith(".weight")
    add = lambda name, shape: out.append((name, tuple(int(x) for x in shape), F if f32(name, shape) else W))
    tied = config_tied(cfg)
    if mt == "gemma3_text":
        V = _gemma3_vocab(V)
    if mt == "gemma4_text" and int(cfg.get("hidden_size_per_layer_input") or 0):
        raise KvMathError("Gemma 4 with per-layer embeddings (hidden_size_per_layer_input > 0) is not tabled")
    add("token_embd.weight", (E, V))
    if not tied:
        add("output.weight", (E, V))
    add("output_norm.weight", (E,))
    arch = gguf_arch(cfg)
    n_blocks = _BLOCKS[mt](cfg, mt, add, out, E, n, W, F, mtp)
    return arch, n_blocks, tuple(out)


def _llama_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Llama-style blocks (src/models/llama.cpp, qwen2.cpp, qwen3.cpp, qwen3moe.cpp create_tensor): q/k/v/o
    (Qwen 2 with q/k/v biases, Qwen 3 with per-head q/k norms), then a dense SwiGLU MLP or, for Mixtral and
    Qwen3-MoE, the router ``ffn_gate_inp`` and the experts merged into ``ffn_{gate,up,down}_exps`` of shape
    ``(H, I_e, n_expert)`` / ``(I_e, H, n_expert)`` (convert_hf_to_gguf.py stacks ``experts.{e}.*``). Granite
    (src/models/granite.cpp, conversion/granite.py) is Llama with ``head_dim`` ignored (E / H); Granite MoE splits
    the fused ``input_linear`` into ``ffn_gate_exps`` / ``ffn_up_exps`` and, for ``granitemoeshared``, the shared
    MLP's into ``ffn_{gate,up}_shexp`` of ``shared_intermediate_size``. SmolLM 3 is Llama; so is ERNIE 4.5
    (src/models/ernie4-5.cpp; conversion/ernie.py splits a fused ``qkv_proj`` into q / k / v)."""
    moe = ("mixtral", "qwen3_moe", "granitemoe", "granitemoeshared")
    ne = int(cfg.get("num_local_experts") or cfg.get("num_experts") or 0) if mt in moe else 0
    if mt.startswith("granitemoe") and ne < 1:
        raise KvMathError(f"{mt} without num_local_experts (a dense shared-MLP Granite) is not tabled")
    fs = int(cfg.get("shared_intermediate_size") or 0) if mt == "granitemoeshared" else 0
    if mt == "qwen3_moe" and (cfg.get("mlp_only_layers") or int(cfg.get("decoder_sparse_step") or 1) != 1):
        raise KvMathError("qwen3_moe with mlp_only_layers or decoder_sparse_step != 1 mixes dense and MoE layers; "
                          "kvmath tables only every-layer-MoE checkpoints")
    fe = int(cfg["moe_intermediate_size"] if mt == "qwen3_moe" else cfg["intermediate_size"]) if ne else 0
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d = E // H if mt.startswith("granite") else int(cfg.get("head_dim") or E // H)  # GraniteModel pops head_dim
    if mt != "qwen2" and (cfg.get("attention_bias") or cfg.get("mlp_bias") or cfg.get("use_bias")):
        raise KvMathError(f"{mt} with attention_bias or mlp_bias is not tabled")
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type") == "llama3":
        add("rope_freqs.weight", (d // 2,))
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        add(p + "attn_q.weight", (E, H * d))
        add(p + "attn_k.weight", (E, Hkv * d))
        add(p + "attn_v.weight", (E, Hkv * d))
        add(p + "attn_output.weight", (H * d, E))
        if mt == "qwen2":
            add(p + "attn_q.bias", (H * d,))
            add(p + "attn_k.bias", (Hkv * d,))
            add(p + "attn_v.bias", (Hkv * d,))
        if mt in ("qwen3", "qwen3_moe"):
            add(p + "attn_q_norm.weight", (d,))
            add(p + "attn_k_norm.weight", (d,))
        add(p + "ffn_norm.weight", (E,))
        if ne:
            add(p + "ffn_gate_inp.weight", (E, ne))
            add(p + "ffn_gate_exps.weight", (E, fe, ne))
            add(p + "ffn_up_exps.weight", (E, fe, ne))
            add(p + "ffn_down_exps.weight", (fe, E, ne))
            if fs:
                add(p + "ffn_gate_shexp.weight", (E, fs))
                add(p + "ffn_up_shexp.weight", (E, fs))
                add(p + "ffn_down_shexp.weight", (fs, E))
            continue
        add(p + "ffn_gate.weight", (E, int(cfg["intermediate_size"])))
        add(p + "ffn_up.weight", (E, int(cfg["intermediate_size"])))
        add(p + "ffn_down.weight", (int(cfg["intermediate_size"]), E))
    return n


def _qwen35_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Qwen 3.5 / 3.6 blocks: gated full attention, Gated DeltaNet, dense or routed + shared experts, MTP."""
    H, Hkv, d = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"]), int(cfg["head_dim"])
    nk, nv = int(cfg["linear_num_key_heads"]), int(cfg["linear_num_value_heads"])
    dk, dv = int(cfg["linear_key_head_dim"]), int(cfg["linear_value_head_dim"])
    kern = int(cfg["linear_conv_kernel_dim"])
    types = cfg.get("layer_types") or ["full_attention" if (i + 1) % int(cfg["full_attention_interval"]) == 0
                                       else "linear_attention" for i in range(n)]
    moe = mt == "qwen3_5_moe_text"
    n_mtp = int(cfg.get("mtp_num_hidden_layers") or 0) if mtp else 0
    n_blocks = n + n_mtp
    for i in range(n_blocks):
        p = f"blk.{i}."
        full = i >= n or types[i] == "full_attention"
        add(p + "attn_norm.weight", (E,))
        add(p + "post_attention_norm.weight", (E,))
        if full:
            add(p + "attn_q.weight", (E, H * d * 2))
            add(p + "attn_k.weight", (E, Hkv * d))
            add(p + "attn_v.weight", (E, Hkv * d))
            add(p + "attn_output.weight", (H * d, E))
            add(p + "attn_q_norm.weight", (d,))
            add(p + "attn_k_norm.weight", (d,))
        else:
            conv = 2 * nk * dk + nv * dv
            add(p + "attn_qkv.weight", (E, conv))
            add(p + "attn_gate.weight", (E, nv * dv))
            add(p + "ssm_conv1d.weight", (kern, conv))
            add(p + "ssm_dt.bias", (nv,))
            add(p + "ssm_a", (nv,))
            add(p + "ssm_beta.weight", (E, nv))
            add(p + "ssm_alpha.weight", (E, nv))
            add(p + "ssm_norm.weight", (dv,))
            add(p + "ssm_out.weight", (nv * dv, E))
        if moe:
            ne, fe, fs = int(cfg["num_experts"]), int(cfg["moe_intermediate_size"]), \
                int(cfg["shared_expert_intermediate_size"])
            add(p + "ffn_gate_inp.weight", (E, ne))
            add(p + "ffn_gate_exps.weight", (E, fe, ne))
            add(p + "ffn_up_exps.weight", (E, fe, ne))
            add(p + "ffn_down_exps.weight", (fe, E, ne))
            out.append((p + "ffn_gate_inp_shexp.weight", (E, 1), F))
            add(p + "ffn_gate_shexp.weight", (E, fs))
            add(p + "ffn_up_shexp.weight", (E, fs))
            add(p + "ffn_down_shexp.weight", (fs, E))
        else:
            f = int(cfg["intermediate_size"])
            add(p + "ffn_gate.weight", (E, f))
            add(p + "ffn_up.weight", (E, f))
            add(p + "ffn_down.weight", (f, E))
        if i >= n:
            add(p + "nextn.eh_proj.weight", (2 * E, E))
            for k in ("enorm", "hnorm", "shared_head_norm"):
                add(p + f"nextn.{k}.weight", (E,))
    return n_blocks


def _gemma4_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Gemma 4 blocks: per-type widths, K=V full layers, dense MLP beside routed experts."""
    H, Hkv, d = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"]), int(cfg["head_dim"])
    gkv, gd = int(cfg.get("num_global_key_value_heads") or Hkv), int(cfg.get("global_head_dim") or d)
    k_eq_v = bool(cfg.get("attention_k_eq_v"))
    types = cfg["layer_types"]
    f = int(cfg["intermediate_size"])
    ne, fe = int(cfg.get("num_experts") or 0), int(cfg.get("moe_intermediate_size") or 0)
    add("rope_freqs.weight", (gd // 2,))
    for i in range(n):
        p = f"blk.{i}."
        full = types[i] == "full_attention"
        hkv, hd = (gkv, gd) if full else (Hkv, d)
        add(p + "attn_norm.weight", (E,))
        add(p + "attn_q.weight", (E, H * hd))
        add(p + "attn_k.weight", (E, hkv * hd))
        if not (full and k_eq_v):
            add(p + "attn_v.weight", (E, hkv * hd))
        add(p + "attn_output.weight", (H * hd, E))
        add(p + "attn_q_norm.weight", (hd,))
        add(p + "attn_k_norm.weight", (hd,))
        add(p + "post_attention_norm.weight", (E,))
        add(p + "ffn_norm.weight", (E,))
        add(p + "ffn_gate.weight", (E, f))
        add(p + "ffn_up.weight", (E, f))
        add(p + "ffn_down.weight", (f, E))
        add(p + "post_ffw_norm.weight", (E,))
        add(p + "layer_output_scale.weight", (1,))
        if ne:
            add(p + "ffn_gate_inp.weight", (E, ne))
            add(p + "ffn_gate_inp.scale", (E,))
            add(p + "ffn_gate_up_exps.weight", (E, 2 * fe, ne))
            add(p + "ffn_down_exps.weight", (fe, E, ne))
            add(p + "ffn_down_exps.scale", (ne,))
            for k in ("post_ffw_norm_1", "post_ffw_norm_2", "pre_ffw_norm_2"):
                add(p + f"{k}.weight", (E,))
    return n


def _gpt_oss_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """gpt-oss blocks: biased q/k/v/o, attention sinks, biased routed experts."""
    H, Hkv, d = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"]), int(cfg["head_dim"])
    ne, f = int(cfg["num_local_experts"]), int(cfg["intermediate_size"])
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        add(p + "post_attention_norm.weight", (E,))
        for k, w in (("q", H * d), ("k", Hkv * d), ("v", Hkv * d)):
            add(p + f"attn_{k}.weight", (E, w))
            add(p + f"attn_{k}.bias", (w,))
        add(p + "attn_output.weight", (H * d, E))
        add(p + "attn_output.bias", (E,))
        add(p + "attn_sinks.weight", (H,))
        add(p + "ffn_gate_inp.weight", (E, ne))
        add(p + "ffn_gate_inp.bias", (ne,))
        for k, shp in (("gate", (E, f, ne)), ("up", (E, f, ne)), ("down", (f, E, ne))):
            add(p + f"ffn_{k}_exps.weight", shp)
            out.append((p + f"ffn_{k}_exps.bias", (shp[1], ne), F))
    return n


def _gemma_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Gemma 2 / Gemma 3 blocks (src/models/gemma2.cpp, gemma3.cpp create_tensor): q/k/v/o with post-attention
    and post-FFN norms around a GeGLU MLP; Gemma 3 adds per-head q/k norms. No rope_freqs, no output.weight
    (tied: see :func:`config_tied`)."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f = int(cfg.get("head_dim") or 256), int(cfg["intermediate_size"])  # head_dim 256: both configs' default
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        add(p + "attn_q.weight", (E, H * d))
        add(p + "attn_k.weight", (E, Hkv * d))
        add(p + "attn_v.weight", (E, Hkv * d))
        add(p + "attn_output.weight", (H * d, E))
        if mt == "gemma3_text":
            add(p + "attn_q_norm.weight", (d,))
            add(p + "attn_k_norm.weight", (d,))
        add(p + "post_attention_norm.weight", (E,))
        add(p + "ffn_norm.weight", (E,))
        add(p + "ffn_gate.weight", (E, f))
        add(p + "ffn_up.weight", (E, f))
        add(p + "ffn_down.weight", (f, E))
        add(p + "post_ffw_norm.weight", (E,))
    return n


def _deepseek2_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """DeepSeek V2 / V3 and Kimi K2 blocks (``deepseek2``; src/models/deepseek2.cpp create_tensor, conversion/
    deepseek.py DeepseekV2Model): MLA with a low-rank query (``attn_q_a`` / ``attn_q_b``, or one ``attn_q`` when
    ``q_lora_rank`` is null), ``attn_kv_a_mqa``, and ``kv_b_proj`` split by the converter into ``attn_k_b``
    ``(qk_nope_head_dim, kv_lora_rank, n_head)`` and ``attn_v_b`` ``(kv_lora_rank, v_head_dim, n_head)``; the first
    ``first_k_dense_replace`` blocks a dense SwiGLU MLP, the rest routed experts merged into ``ffn_*_exps`` plus
    ``n_shared_experts`` x ``moe_intermediate_size`` shared ones, and ``exp_probs_b`` (the
    ``e_score_correction_bias`` of ``topk_method: noaux_tc``). MTP layers are skipped (``skip_mtp = True``)."""
    H = int(cfg["num_attention_heads"])
    qr = int(cfg.get("q_lora_rank") or 0)
    kvr, nope, rope, vd = (int(cfg[k]) for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                                  "v_head_dim"))
    dense, f = int(cfg.get("first_k_dense_replace") or 0), int(cfg["intermediate_size"])
    ne, fe = int(cfg["n_routed_experts"]), int(cfg["moe_intermediate_size"])
    fs = int(cfg.get("n_shared_experts") or 0) * fe
    if int(cfg.get("moe_layer_freq") or 1) != 1 or ne < 1:
        raise KvMathError(f"{mt} with moe_layer_freq != 1 or no routed experts is not tabled")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        if qr:
            add(p + "attn_q_a_norm.weight", (qr,))
            add(p + "attn_q_a.weight", (E, qr))
            add(p + "attn_q_b.weight", (qr, H * (nope + rope)))
        else:
            add(p + "attn_q.weight", (E, H * (nope + rope)))
        add(p + "attn_kv_a_norm.weight", (kvr,))
        add(p + "attn_kv_a_mqa.weight", (E, kvr + rope))
        add(p + "attn_k_b.weight", (nope, kvr, H))
        add(p + "attn_v_b.weight", (kvr, vd, H))
        add(p + "attn_output.weight", (H * vd, E))
        add(p + "ffn_norm.weight", (E,))
        if i < dense:
            add(p + "ffn_gate.weight", (E, f))
            add(p + "ffn_up.weight", (E, f))
            add(p + "ffn_down.weight", (f, E))
            continue
        add(p + "ffn_gate_inp.weight", (E, ne))
        if cfg.get("topk_method") == "noaux_tc":
            add(p + "exp_probs_b.bias", (ne,))
        add(p + "ffn_gate_exps.weight", (E, fe, ne))
        add(p + "ffn_up_exps.weight", (E, fe, ne))
        add(p + "ffn_down_exps.weight", (fe, E, ne))
        if fs:
            add(p + "ffn_gate_shexp.weight", (E, fs))
            add(p + "ffn_up_shexp.weight", (E, fs))
            add(p + "ffn_down_shexp.weight", (fs, E))
    return n


def _qwen3next_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Qwen3-Next blocks (src/models/qwen3next.cpp create_tensor, conversion/qwen.py Qwen3NextModel): gated full
    attention every ``full_attention_interval``-th layer, Gated DeltaNet elsewhere (``in_proj_qkvz`` split into
    ``attn_qkv`` + ``attn_gate``, ``in_proj_ba`` kept as one ``ssm_ba``), routed experts plus one gated shared
    expert (``ffn_gate_inp_shexp`` 1-D) in every layer. No MTP block (``mtp=True`` is refused)."""
    if mtp:
        raise KvMathError("qwen3_next: the MTP block's table is not written (mtp=True)")
    if cfg.get("mlp_only_layers") or int(cfg.get("decoder_sparse_step") or 1) != 1:
        raise KvMathError("qwen3_next with mlp_only_layers or decoder_sparse_step != 1 is not tabled")
    H, Hkv, d = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"]), int(cfg["head_dim"])
    nk, nv = int(cfg["linear_num_key_heads"]), int(cfg["linear_num_value_heads"])
    dk, dv, kern = int(cfg["linear_key_head_dim"]), int(cfg["linear_value_head_dim"]), int(cfg["linear_conv_kernel_dim"])
    ne, fe, fs = int(cfg["num_experts"]), int(cfg["moe_intermediate_size"]), int(cfg["shared_expert_intermediate_size"])
    types = cfg.get("layer_types") or ["full_attention" if (i + 1) % int(cfg.get("full_attention_interval") or 4) == 0
                                       else "linear_attention" for i in range(n)]
    if len(types) != n:
        raise KvMathError(f"qwen3_next layer_types has {len(types)} entries, num_hidden_layers {n}")
    conv = 2 * nk * dk + nv * dv
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        add(p + "post_attention_norm.weight", (E,))
        if types[i] == "full_attention":
            add(p + "attn_q.weight", (E, H * d * 2))
            add(p + "attn_k.weight", (E, Hkv * d))
            add(p + "attn_v.weight", (E, Hkv * d))
            add(p + "attn_output.weight", (H * d, E))
            add(p + "attn_q_norm.weight", (d,))
            add(p + "attn_k_norm.weight", (d,))
        else:
            add(p + "attn_qkv.weight", (E, conv))
            add(p + "attn_gate.weight", (E, nv * dv))
            add(p + "ssm_conv1d.weight", (kern, conv))
            add(p + "ssm_dt.bias", (nv,))
            add(p + "ssm_a", (nv,))
            add(p + "ssm_ba.weight", (E, 2 * nv))
            add(p + "ssm_norm.weight", (dv,))
            add(p + "ssm_out.weight", (nv * dv, E))
        add(p + "ffn_gate_inp.weight", (E, ne))
        add(p + "ffn_gate_exps.weight", (E, fe, ne))
        add(p + "ffn_up_exps.weight", (E, fe, ne))
        add(p + "ffn_down_exps.weight", (fe, E, ne))
        add(p + "ffn_gate_inp_shexp.weight", (E,))
        add(p + "ffn_gate_shexp.weight", (E, fs))
        add(p + "ffn_up_shexp.weight", (E, fs))
        add(p + "ffn_down_shexp.weight", (fs, E))
    return n


def _nemotron_h_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Nemotron-H blocks (src/models/nemotron-h.cpp create_tensor, conversion/nemotron.py NemotronHModel): one
    norm per block, then by ``hybrid_override_pattern`` a Mamba-2 mixer (``M``: ``ssm_in`` of
    2 d_inner + 2 n_groups d_state + n_heads, conv over d_inner + 2 n_groups d_state, grouped ``ssm_norm``),
    attention (``*``), a ReLU^2 MLP (``-``: up / down, no gate) or routed + shared ReLU^2 experts (``E``, with
    ``exp_probs_b``); d_inner = mamba_num_heads x mamba_head_dim. Latent MoE and MTP heads are refused."""
    pat = cfg["hybrid_override_pattern"]
    if not isinstance(pat, str) or len(pat) != n or set(pat) - set("M*-E"):
        raise KvMathError(f"nemotron_h hybrid_override_pattern must be {n} letters of M * - E, got {pat!r}"[:200])
    if cfg.get("moe_latent_size") or int(cfg.get("num_nextn_predict_layers") or 0) or mtp:
        raise KvMathError("nemotron_h with moe_latent_size or an MTP head is not tabled")
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"])
    d = int(cfg.get("head_dim") or cfg["attention_head_dim"])
    nh, hd, g, ds = (int(cfg[k]) for k in ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size"))
    kern, di = int(cfg["conv_kernel"]), nh * hd
    if di % g:
        raise KvMathError(f"nemotron_h: d_inner {di} is not a multiple of n_groups {g}")
    moe = "num_experts_per_tok" in cfg
    f = int(cfg["intermediate_size"])
    for i, c in enumerate(pat):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        if c == "M":
            add(p + "ssm_in.weight", (E, 2 * di + 2 * g * ds + nh))
            add(p + "ssm_conv1d.weight", (kern, di + 2 * g * ds))
            if cfg.get("use_conv_bias", True):
                add(p + "ssm_conv1d.bias", (di + 2 * g * ds,))
            add(p + "ssm_dt.bias", (nh,))
            add(p + "ssm_a", (1, nh))
            add(p + "ssm_d", (1, nh))
            add(p + "ssm_norm.weight", (di // g, g))
            add(p + "ssm_out.weight", (di, E))
        elif c == "*":
            add(p + "attn_q.weight", (E, H * d))
            add(p + "attn_k.weight", (E, Hkv * d))
            add(p + "attn_v.weight", (E, Hkv * d))
            add(p + "attn_output.weight", (H * d, E))
        elif c == "E" and moe:
            ne, fe = int(cfg["n_routed_experts"]), int(cfg["moe_intermediate_size"])
            fs = int(cfg["moe_shared_expert_intermediate_size"])  # the shared MLP's width (GGUF shexp length)
            add(p + "ffn_gate_inp.weight", (E, ne))
            add(p + "exp_probs_b.bias", (ne,))
            add(p + "ffn_up_exps.weight", (E, fe, ne))
            add(p + "ffn_down_exps.weight", (fe, E, ne))
            add(p + "ffn_up_shexp.weight", (E, fs))
            add(p + "ffn_down_shexp.weight", (fs, E))
        elif c == "-" and not moe:
            add(p + "ffn_up.weight", (E, f))
            add(p + "ffn_down.weight", (f, E))
        else:
            raise KvMathError(f"nemotron_h block {i} is {c!r} but the config {'has' if moe else 'lacks'} "
                              "num_experts_per_tok (E needs it, - must not have it)")
    return n


def _phi3_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Phi-3 / Phi-4 blocks (src/models/phi3.cpp create_tensor, conversion/phi.py Phi3MiniModel): the checkpoint's
    fused ``qkv_proj`` kept as ``attn_qkv`` and fused ``gate_up_proj`` as one ``ffn_up`` of 2 x intermediate_size;
    LongRoPE configs (``rope_scaling.long_factor``) add ``rope_factors_long`` / ``rope_factors_short``."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f = E // H, int(cfg["intermediate_size"])
    if cfg.get("attention_bias") or cfg.get("mlp_bias"):
        raise KvMathError("phi3 with attention or MLP biases is not tabled")
    rs = cfg.get("rope_scaling") or {}
    if rs.get("long_factor"):
        add("rope_factors_long.weight", (len(rs["long_factor"]),))
        add("rope_factors_short.weight", (len(rs["short_factor"]),))
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        add(p + "attn_qkv.weight", (E, H * d + 2 * Hkv * d))
        add(p + "attn_output.weight", (H * d, E))
        add(p + "ffn_norm.weight", (E,))
        add(p + "ffn_up.weight", (E, 2 * f))
        add(p + "ffn_down.weight", (f, E))
    return n


def _olmo2_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """OLMo 2 / Olmo 3 blocks (src/models/olmo2.cpp create_tensor): no pre-norms, post-attention and post-FFN norms,
    q / k norms over the whole projection (H x head_dim and H_kv x head_dim), a SwiGLU MLP; the output head is
    required (a tied config is refused)."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f = int(cfg.get("head_dim") or E // H), int(cfg["intermediate_size"])
    if config_tied(cfg) or cfg.get("attention_bias"):
        raise KvMathError(f"{mt} with tie_word_embeddings or attention_bias is not tabled (olmo2.cpp needs output.weight)")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_q.weight", (E, H * d))
        add(p + "attn_k.weight", (E, Hkv * d))
        add(p + "attn_v.weight", (E, Hkv * d))
        add(p + "attn_output.weight", (H * d, E))
        add(p + "attn_q_norm.weight", (H * d,))
        add(p + "attn_k_norm.weight", (Hkv * d,))
        add(p + "post_attention_norm.weight", (E,))
        add(p + "ffn_gate.weight", (E, f))
        add(p + "ffn_up.weight", (E, f))
        add(p + "ffn_down.weight", (f, E))
        add(p + "post_ffw_norm.weight", (E,))
    return n


def _seed_oss_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Seed-OSS blocks (src/models/seed-oss.cpp create_tensor; gguf-py maps ``post_attention_layernorm`` to
    ``post_attention_norm`` for SEED_OSS): q/k/v with biases when ``attention_bias``, an unbiased o (a config
    with ``attention_out_bias`` or ``mlp_bias`` is refused: seed-oss.cpp creates no such tensor), SwiGLU MLP."""
    H, Hkv, d = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"]), int(cfg["head_dim"])
    f = int(cfg["intermediate_size"])
    if cfg.get("attention_out_bias") or cfg.get("mlp_bias"):
        raise KvMathError("seed_oss with attention_out_bias or mlp_bias is not tabled")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        for k, w in (("q", H * d), ("k", Hkv * d), ("v", Hkv * d)):
            add(p + f"attn_{k}.weight", (E, w))
            if cfg.get("attention_bias"):
                add(p + f"attn_{k}.bias", (w,))
        add(p + "attn_output.weight", (H * d, E))
        add(p + "post_attention_norm.weight", (E,))
        add(p + "ffn_gate.weight", (E, f))
        add(p + "ffn_up.weight", (E, f))
        add(p + "ffn_down.weight", (f, E))
    return n


def _olmoe_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """OLMoE blocks (src/models/olmoe.cpp create_tensor, conversion/olmo.py OlmoeModel): pre-norms, q / k norms over
    the whole projection, router plus ``num_experts`` SwiGLU experts of ``intermediate_size`` merged into
    ``ffn_*_exps``; the output head is required. olmoe.cpp sizes ``attn_k_norm`` as n_embd, so a config with
    fewer KV heads than query heads is refused, as is a tied one."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f, ne = E // H, int(cfg["intermediate_size"]), int(cfg["num_experts"])
    if Hkv != H or config_tied(cfg) or cfg.get("attention_bias") or ne < 1:
        raise KvMathError("olmoe tabled only with num_key_value_heads = num_attention_heads, experts, no bias, untied")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        for k in ("q", "k", "v"):
            add(p + f"attn_{k}.weight", (E, H * d))
        add(p + "attn_output.weight", (H * d, E))
        add(p + "attn_q_norm.weight", (H * d,))
        add(p + "attn_k_norm.weight", (H * d,))
        add(p + "ffn_norm.weight", (E,))
        add(p + "ffn_gate_inp.weight", (E, ne))
        add(p + "ffn_gate_exps.weight", (E, f, ne))
        add(p + "ffn_up_exps.weight", (E, f, ne))
        add(p + "ffn_down_exps.weight", (f, E, ne))
    return n


def _cohere_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Cohere (Command R: ``command-r``) and Cohere 2 (Command R7B / A: ``cohere2``) blocks (src/models/command-r.cpp,
    cohere2.cpp create_tensor, conversion/command_r.py): one norm per block (attention and MLP in parallel), q/k/v/o,
    SwiGLU MLP, the output read from ``token_embd``; Command R's per-head q / k norms ``(head_dim, heads)`` exist
    when ``use_qk_norm`` and llama.cpp loads them only for 64 or more layers (a config where the two disagree is
    refused, as are biases and an untied head)."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f = E // H, int(cfg["intermediate_size"])
    qk = bool(cfg.get("use_qk_norm")) and mt == "cohere"
    if cfg.get("attention_bias") or cfg.get("tie_word_embeddings") is False or (mt == "cohere" and qk != (n >= 64)):
        raise KvMathError(f"{mt} with attention_bias, an untied head, or use_qk_norm disagreeing with llama.cpp's "
                          "n_layer >= 64 rule is not tabled")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        add(p + "attn_q.weight", (E, H * d))
        add(p + "attn_k.weight", (E, Hkv * d))
        add(p + "attn_v.weight", (E, Hkv * d))
        add(p + "attn_output.weight", (H * d, E))
        if qk:
            add(p + "attn_q_norm.weight", (d, H))
            add(p + "attn_k_norm.weight", (d, Hkv))
        add(p + "ffn_gate.weight", (E, f))
        add(p + "ffn_up.weight", (E, f))
        add(p + "ffn_down.weight", (f, E))
    return n


def _starcoder2_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """StarCoder 2 blocks (src/models/starcoder2.cpp create_tensor, conversion/starcoder.py): LayerNorms with
    biases (the output norm's too), biased q/k/v/o and a biased two-matrix GELU MLP (up, down); llama.cpp requires
    every bias, so ``use_bias: false`` is refused."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f = E // H, int(cfg["intermediate_size"])
    if not cfg.get("use_bias", True):
        raise KvMathError("starcoder2 with use_bias false is not tabled (starcoder2.cpp requires the biases)")
    add("output_norm.bias", (E,))
    for i in range(n):
        p = f"blk.{i}."
        for name, shape in (("attn_norm", (E,)), ("attn_q", (E, H * d)), ("attn_k", (E, Hkv * d)),
                            ("attn_v", (E, Hkv * d)), ("attn_output", (H * d, E)), ("ffn_norm", (E,)),
                            ("ffn_up", (E, f)), ("ffn_down", (f, E))):
            add(p + f"{name}.weight", shape)
            add(p + f"{name}.bias", (shape[-1],))  # a bias is as long as the output (ne1, or ne0 of a norm)
    return n


def _glm4_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """GLM-4 (0414) blocks (src/models/glm4.cpp create_tensor, conversion/glm.py Glm4Model): sandwich norms (attn,
    post-attention, FFN, post-FFN), q/k/v with biases when ``attention_bias``, an unbiased o, and the fused
    ``gate_up_proj`` kept as one ``ffn_up`` of 2 x intermediate_size. MTP heads are refused."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"])
    d, f = int(cfg.get("head_dim") or E // H), int(cfg["intermediate_size"])
    if int(cfg.get("num_nextn_predict_layers") or 0) or mtp:
        raise KvMathError("glm4 with an MTP head (num_nextn_predict_layers) is not tabled")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        for k, w in (("q", H * d), ("k", Hkv * d), ("v", Hkv * d)):
            add(p + f"attn_{k}.weight", (E, w))
            if cfg.get("attention_bias"):
                add(p + f"attn_{k}.bias", (w,))
        add(p + "attn_output.weight", (H * d, E))
        add(p + "post_attention_norm.weight", (E,))
        add(p + "ffn_norm.weight", (E,))
        add(p + "ffn_up.weight", (E, 2 * f))
        add(p + "ffn_down.weight", (f, E))
        add(p + "post_ffw_norm.weight", (E,))
    return n


def _attn_qkvo(add, p: str, E: int, H: int, Hkv: int, d: int, bias: bool) -> None:
    """One block's q / k / v / o as ``create_tensor_qkv`` and ``wo`` lay them out (src/llama-model.cpp): q
    ``(E, H*d)``, k and v ``(E, Hkv*d)``, biases on q / k / v only when ``bias``, an unbiased o ``(H*d, E)``."""
    for k, w in (("q", H * d), ("k", Hkv * d), ("v", Hkv * d)):
        add(p + f"attn_{k}.weight", (E, w))
        if bias:
            add(p + f"attn_{k}.bias", (w,))
    add(p + "attn_output.weight", (H * d, E))


def _routed_experts(add, p: str, E: int, fe: int, ne: int) -> None:
    """The router and the experts merged by the converter into ``ffn_{gate,up,down}_exps`` (gate / up
    ``(E, fe, ne)``, down ``(fe, E, ne)``, ne0 first), as every MoE ``create_tensor`` of llama.cpp names them."""
    add(p + "ffn_gate_inp.weight", (E, ne))
    add(p + "ffn_gate_exps.weight", (E, fe, ne))
    add(p + "ffn_up_exps.weight", (E, fe, ne))
    add(p + "ffn_down_exps.weight", (fe, E, ne))


def _swiglu(add, p: str, E: int, f: int, suffix: str = "") -> None:
    """A SwiGLU MLP's three matrices (``ffn_gate`` / ``ffn_up`` ``(E, f)``, ``ffn_down`` ``(f, E)``), or a shared
    expert's with ``suffix`` ``_shexp``."""
    add(p + f"ffn_gate{suffix}.weight", (E, f))
    add(p + f"ffn_up{suffix}.weight", (E, f))
    add(p + f"ffn_down{suffix}.weight", (f, E))


def _qwen2moe_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Qwen2-MoE blocks (Qwen1.5-MoE, Qwen2-57B-A14B; src/models/qwen2moe.cpp create_tensor, conversion/qwen.py
    Qwen2MoeModel): q / k / v with biases (``qkv_bias``, default true in transformers 5.23's Qwen2MoeConfig), routed
    experts of ``moe_intermediate_size`` in every block, one shared expert of ``shared_expert_intermediate_size``
    with its sigmoid gate ``ffn_gate_inp_shexp`` (HF ``shared_expert_gate``: ``(1, E)``, ne ``(E, 1)``, kept F32).
    llama.cpp's ``wo`` is ``(E, E)``, so ``num_attention_heads x head_dim`` must equal ``hidden_size``; configs
    mixing dense blocks in (``mlp_only_layers``, ``decoder_sparse_step`` > 1) are refused, as qwen2moe.cpp makes
    every block MoE."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d = int(cfg.get("head_dim") or E // H)
    ne, fe, fs = int(cfg["num_experts"]), int(cfg["moe_intermediate_size"]), int(cfg["shared_expert_intermediate_size"])
    if H * d != E or cfg.get("mlp_only_layers") or int(cfg.get("decoder_sparse_step") or 1) != 1 or ne < 1 or mtp:
        raise KvMathError("qwen2_moe with heads x head_dim != hidden_size, dense blocks (mlp_only_layers, "
                          "decoder_sparse_step != 1), no experts or an MTP block is not tabled")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        _attn_qkvo(add, p, E, H, Hkv, d, bool(cfg.get("qkv_bias", True)))
        add(p + "ffn_norm.weight", (E,))
        _routed_experts(add, p, E, fe, ne)
        add(p + "ffn_gate_inp_shexp.weight", (E, 1))
        _swiglu(add, p, E, fs, "_shexp")
    return n


def _glm4moe_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """GLM-4.5 / 4.6 / 4.7 MoE blocks (``glm4moe``; src/models/glm4-moe.cpp create_tensor, conversion/glm.py
    Glm4MoeModel): q / k / v biased when ``attention_bias``, per-head q / k norms when ``use_qk_norm``, the pre-FFN
    norm named ``post_attention_norm``; the first ``first_k_dense_replace`` blocks a dense SwiGLU of
    ``intermediate_size``, the rest ``n_routed_experts`` routed experts with ``exp_probs_b`` (the router's
    ``e_score_correction_bias``) and ``n_shared_experts x moe_intermediate_size`` shared ones. The trunk only: the
    converter also writes the ``num_nextn_predict_layers`` MTP blocks, which glm4-moe.cpp skips at load
    (``TENSOR_SKIP`` unless MTP is loaded); ``mtp=True`` (their table) is refused, not guessed."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"])
    d, f = int(cfg.get("head_dim") or E // H), int(cfg["intermediate_size"])
    ne, fe = int(cfg["n_routed_experts"]), int(cfg["moe_intermediate_size"])
    fs, dense = int(cfg.get("n_shared_experts") or 0) * fe, int(cfg.get("first_k_dense_replace") or 0)
    if mtp or ne < 1:
        raise KvMathError("glm4_moe: the MTP blocks' table (mtp=True) or a config without routed experts is not "
                          "tabled")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        _attn_qkvo(add, p, E, H, Hkv, d, bool(cfg.get("attention_bias")))
        if cfg.get("use_qk_norm"):
            add(p + "attn_q_norm.weight", (d,))
            add(p + "attn_k_norm.weight", (d,))
        add(p + "post_attention_norm.weight", (E,))
        if i < dense:
            _swiglu(add, p, E, f)
            continue
        _routed_experts(add, p, E, fe, ne)
        add(p + "exp_probs_b.bias", (ne,))
        if fs:
            _swiglu(add, p, E, fs, "_shexp")
    return n


def _exaone4_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """EXAONE 4.0 blocks (src/models/exaone4.cpp create_tensor, conversion/exaone.py Exaone4Model): no pre-norms,
    post-attention and post-FFN norms, per-head q / k norms, unbiased q / k / v / o (``wo`` ``(E, E)``: heads x
    head_dim must equal hidden_size), a SwiGLU MLP; one ``rope_freqs`` of ``head_dim / 2`` when the (full
    attention) RoPE is ``llama3`` (``generate_extra_tensors``). MTP blocks are refused."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f = int(cfg.get("head_dim") or E // H), int(cfg["intermediate_size"])
    if H * d != E or mtp or int(cfg.get("num_nextn_predict_layers") or 0):
        raise KvMathError("exaone4 with heads x head_dim != hidden_size or an MTP block is not tabled")
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    rp = rp.get("full_attention", rp) if isinstance(rp, dict) else {}
    if str(rp.get("rope_type", "")).lower() == "llama3":
        add("rope_freqs.weight", (d // 2,))
    for i in range(n):
        p = f"blk.{i}."
        _attn_qkvo(add, p, E, H, Hkv, d, False)
        add(p + "post_attention_norm.weight", (E,))
        add(p + "attn_q_norm.weight", (d,))
        add(p + "attn_k_norm.weight", (d,))
        _swiglu(add, p, E, f)
        add(p + "post_ffw_norm.weight", (E,))
    return n


def _ernie45moe_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """ERNIE 4.5 MoE blocks (``ernie4_5-moe``; src/models/ernie4-5.cpp create_tensor, conversion/ernie.py
    Ernie4_5MoeModel): Llama-style attention, the first ``moe_layer_start_index`` blocks a dense SwiGLU of
    ``intermediate_size``, the rest ``moe_num_experts`` routed experts of ``moe_intermediate_size`` with
    ``exp_probs_b`` (HF ``moe_statics.e_score_correction_bias``, ``(1, n_expert)``: ne ``(n_expert, 1)``) and
    ``moe_num_shared_experts x moe_intermediate_size`` shared ones. The loader makes every block past the dense
    lead MoE and reads the shared width as ``intermediate_size // num_key_value_heads`` (the converter's key), so
    ``moe_layer_interval`` != 1, an early ``moe_layer_end_index``, a shared width that disagrees, or
    ``use_bias`` are refused. The MTP block is skipped by the converter."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f = int(cfg.get("head_dim") or E // H), int(cfg["intermediate_size"])
    ne, fe = int(cfg["moe_num_experts"]), int(cfg["moe_intermediate_size"])
    fs, lead = int(cfg.get("moe_num_shared_experts") or 0) * fe, int(cfg.get("moe_layer_start_index") or 0)
    end = int(cfg.get("moe_layer_end_index", -1) if cfg.get("moe_layer_end_index") is not None else -1)
    if int(cfg.get("moe_layer_interval") or 1) != 1 or end not in (-1, n - 1) or (fs and fs != f // Hkv) or \
            cfg.get("use_bias") or ne < 1 or mtp:
        raise KvMathError("ernie4_5_moe with moe_layer_interval != 1, moe_layer_end_index before the last layer, "
                          "a shared-expert width other than intermediate_size // num_key_value_heads, use_bias, no "
                          "experts or an MTP block is not tabled")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        _attn_qkvo(add, p, E, H, Hkv, d, False)
        add(p + "ffn_norm.weight", (E,))
        if i < lead:
            _swiglu(add, p, E, f)
            continue
        _routed_experts(add, p, E, fe, ne)
        add(p + "exp_probs_b.bias", (ne, 1))
        if fs:
            _swiglu(add, p, E, fs, "_shexp")
    return n


def _hunyuan_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Hunyuan V1 dense and MoE blocks (``hunyuan-dense``: src/models/hunyuan-vl.cpp, whose loader hunyuan-dense
    inherits; ``hunyuan-moe``: src/models/hunyuan-moe.cpp; conversion/hunyuan.py): unbiased q / k / v / o, per-head
    q / k norms (HF ``query_layernorm`` / ``key_layernorm``), then a SwiGLU of ``intermediate_size`` (dense) or, in
    every block, ``num_experts`` routed experts and one shared MLP, both ``intermediate_size`` wide, as
    transformers 5.23's HunYuanMoEV1 builds them and the loader reads them (``n_ff`` for the experts; the
    converter writes ``intermediate_size`` as the shared width). A per-layer ``moe_intermediate_size`` other than
    ``intermediate_size``, a ``num_shared_expert`` other than 1, or ``attention_bias`` is refused."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d, f = int(cfg.get("head_dim") or E // H), int(cfg["intermediate_size"])
    listed = lambda k: [int(x) for x in (cfg[k] if isinstance(cfg.get(k), list) else [cfg[k]])] if \
        cfg.get(k) is not None else []
    moe = mt == "hunyuan_v1_moe"
    ne = int(cfg["num_experts"]) if moe else 0
    if cfg.get("attention_bias") or mtp or (moe and (ne < 1 or any(x != f for x in listed("moe_intermediate_size"))
                                                     or any(x != 1 for x in listed("num_shared_expert")))):
        raise KvMathError(f"{mt} with attention_bias, no experts, a moe_intermediate_size other than "
                          "intermediate_size or a num_shared_expert other than 1 is not tabled")
    for i in range(n):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        _attn_qkvo(add, p, E, H, Hkv, d, False)
        add(p + "attn_k_norm.weight", (d,))
        add(p + "attn_q_norm.weight", (d,))
        add(p + "ffn_norm.weight", (E,))
        if not moe:
            _swiglu(add, p, E, f)
            continue
        _routed_experts(add, p, E, f, ne)
        _swiglu(add, p, E, f, "_shexp")
    return n


def _mamba2_mixer(add, p: str, E: int, di: int, g: int, ds: int, nh: int, kern: int, conv_bias: bool,
                  norm: bool) -> None:
    """One Mamba-2 mixer as conversion/mamba.py Mamba2Model writes it and the Mamba-2 loaders create it
    (granite-hybrid.cpp, falcon-h1.cpp): ``ssm_in`` ``(E, 2 d_inner + 2 n_group d_state + n_head)``, the conv
    kernel squeezed to ``(d_conv, d_inner + 2 n_group d_state)`` and its bias, ``dt_bias`` as ``ssm_dt.bias``,
    ``A_log`` as ``ssm_a`` (= -exp, unsqueezed to ne ``(1, n_head)``), ``D`` as ``ssm_d`` ``(1, n_head)``, the gated
    norm reshaped to ``(d_inner / n_group, n_group)``, ``ssm_out`` ``(d_inner, E)``."""
    conv = di + 2 * g * ds
    add(p + "ssm_in.weight", (E, 2 * di + 2 * g * ds + nh))
    add(p + "ssm_conv1d.weight", (kern, conv))
    if conv_bias:
        add(p + "ssm_conv1d.bias", (conv,))
    add(p + "ssm_dt.bias", (nh,))
    add(p + "ssm_a", (1, nh))
    add(p + "ssm_d", (1, nh))
    if norm:
        add(p + "ssm_norm.weight", (di // g, g))
    add(p + "ssm_out.weight", (di, E))


def _granitehybrid_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Granite 4.0-H blocks (``granitehybrid``; src/models/granite-hybrid.cpp create_tensor, conversion/granite.py
    GraniteHybridModel over Mamba2Model and GraniteMoeModel): per ``layer_types`` (the converter counts the
    entries spelled ``attention`` as attention, every other entry as Mamba-2) a Mamba-2 mixer of ``d_inner =
    mamba_expand x hidden_size`` with ``mamba_n_heads`` heads and ``mamba_n_groups`` groups, or q / k / v / o with
    head_dim ``hidden_size / num_attention_heads`` (GraniteModel pops ``head_dim``); then ``ffn_norm`` and, with
    ``num_local_experts``, the router, the fused ``input_linear`` split into ``ffn_gate_exps`` / ``ffn_up_exps``
    and the shared MLP split into ``ffn_{gate,up,down}_shexp`` of ``shared_intermediate_size``; without experts the
    shared MLP is the block's ``ffn_{gate,up,down}``, which the loader reads ``intermediate_size`` wide. Refused
    (the loader or converter would fail): ``mamba_expand`` != 2 (``GGML_ASSERT(2 * n_embd == d_inner)``), no
    ``layer_types``, a ``full_attention`` entry (transformers' spelling, which the converter would write as Mamba-2), a dense config whose
    ``shared_intermediate_size`` differs from ``intermediate_size``, ``vocab_size`` not a multiple of 8 (the
    converter pads the vocabulary to it, the embedding rows stay), ``mamba_proj_bias``, ``attention_bias``, a
    ``head_dim`` other than hidden_size / heads, a ``llama3`` RoPE."""
    types = cfg.get("layer_types") if cfg.get("layer_types") is not None else cfg.get("layers_block_type")
    if not isinstance(types, list) or len(types) != n or set(types) - {"mamba", "linear_attention", "attention"}:
        raise KvMathError(f"granitemoehybrid layer_types must be {n} entries of 'mamba' / 'attention' (the spelling "
                          f"convert_hf_to_gguf.py reads; it takes 'full_attention' for Mamba-2), got "
                          f"{str(types)[:120]}")
    H = int(cfg["num_attention_heads"])
    Hkv, d = int(cfg.get("num_key_value_heads") or H), E // H
    nh, g, ds, kern = (int(cfg[k]) for k in ("mamba_n_heads", "mamba_n_groups", "mamba_d_state", "mamba_d_conv"))
    di, ne = int(cfg["mamba_expand"]) * E, int(cfg.get("num_local_experts") or 0)
    f, fs = int(cfg["intermediate_size"]), int(cfg["shared_intermediate_size"])
    rs = cfg.get("rope_scaling") or {}
    if int(cfg["mamba_expand"]) != 2 or di % g or (not ne and fs != f) or int(cfg["vocab_size"]) % 8 or \
            cfg.get("mamba_proj_bias") or cfg.get("attention_bias") or int(cfg.get("head_dim") or d) != d or \
            rs.get("rope_type") == "llama3" or mtp:
        raise KvMathError("granitemoehybrid with mamba_expand != 2, d_inner not a multiple of mamba_n_groups, a "
                          "dense shared_intermediate_size != intermediate_size, vocab_size not a multiple of 8, "
                          "mamba_proj_bias, attention_bias, head_dim != hidden_size / heads or a llama3 RoPE is not "
                          "tabled (llama.cpp's loader or converter rejects it)")
    for i, t in enumerate(types):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        if t != "attention":
            _mamba2_mixer(add, p, E, di, g, ds, nh, kern, cfg.get("mamba_conv_bias", True), True)
        else:
            _attn_qkvo(add, p, E, H, Hkv, d, False)
        add(p + "ffn_norm.weight", (E,))
        if ne:
            _routed_experts(add, p, E, f, ne)
            if fs:
                _swiglu(add, p, E, fs, "_shexp")
        else:
            _swiglu(add, p, E, fs)
    return n


def _falcon_h1_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Falcon-H1 blocks (``falcon-h1``; src/models/falcon-h1.cpp create_tensor, conversion/falcon_h1.py
    FalconH1Model over Mamba2Model): every block holds a Mamba-2 mixer of ``d_inner = mamba_d_ssm`` (the loader's
    heads are ``mamba_d_ssm / mamba_d_head``, the converter's ``ssm.time_step_rank``), its gated norm only with
    ``mamba_rms_norm``, and q / k / v / o of ``head_dim`` in parallel, then ``ffn_norm`` and a SwiGLU of
    ``intermediate_size``. The muP multipliers are folded into the weights by the converter: no tensor is added.
    HF ``pre_ff_layernorm.weight`` matches gguf-py's FFN_NORM key with its suffix, so the file (and the loader,
    ``tn(LLM_TENSOR_FFN_NORM, i)``) names it ``blk.<i>.ffn_norm`` without ``.weight``. Refused: a config without
    ``head_dim`` or ``mamba_d_ssm`` (the converter reads both), ``mamba_n_heads x mamba_d_head != mamba_d_ssm``,
    ``projectors_bias``, ``mlp_bias``, ``attention_bias``."""
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    if cfg.get("head_dim") is None or cfg.get("mamba_d_ssm") is None:
        raise KvMathError("falcon_h1 without head_dim or mamba_d_ssm: convert_hf_to_gguf.py reads both from "
                          "config.json")
    d, di, nh, hd = int(cfg["head_dim"]), int(cfg["mamba_d_ssm"]), int(cfg["mamba_n_heads"]), int(cfg["mamba_d_head"])
    g, ds, kern, f = (int(cfg[k]) for k in ("mamba_n_groups", "mamba_d_state", "mamba_d_conv", "intermediate_size"))
    if nh * hd != di or di % g or cfg.get("projectors_bias") or cfg.get("mlp_bias") or cfg.get("attention_bias") \
            or mtp:
        raise KvMathError("falcon_h1 with mamba_n_heads x mamba_d_head != mamba_d_ssm, d_inner not a multiple of "
                          "mamba_n_groups, projectors_bias, mlp_bias or attention_bias is not tabled")
    for i in range(n):
        p = f"blk.{i}."
        _mamba2_mixer(add, p, E, di, g, ds, nh, kern, cfg.get("mamba_conv_bias", True), bool(cfg.get("mamba_rms_norm")))
        _attn_qkvo(add, p, E, H, Hkv, d, False)
        add(p + "attn_norm.weight", (E,))
        add(p + "ffn_norm", (E,))
        _swiglu(add, p, E, f)
    return n


def _lfm2_ff(cfg: dict) -> int:
    """The SwiGLU width of an LFM2 block: ``block_ff_dim`` (which Lfm2Config takes as ``intermediate_size``, and
    the converter reads first), cut to 2/3, scaled by ``block_ffn_dim_multiplier`` and rounded up to
    ``block_multiple_of`` when ``block_auto_adjust_ff_dim`` (modeling_lfm2.py Lfm2MLP, conversion/lfm2.py
    _add_feed_forward_length: the same steps)."""
    f = int(cfg["block_ff_dim"] if cfg.get("block_ff_dim") is not None else cfg["intermediate_size"])
    if cfg["block_auto_adjust_ff_dim"]:
        f = int(2 * f / 3)
        if cfg.get("block_ffn_dim_multiplier") is not None:
            f = int(cfg["block_ffn_dim_multiplier"] * f)
        m = int(cfg["block_multiple_of"])
        f = m * ((f + m - 1) // m)
    return f


def _lfm2_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """LFM2 blocks (``lfm2``; src/models/lfm2.cpp create_tensor, conversion/lfm2.py LFM2Model): ``operator_norm``
    as ``attn_norm``, then per ``layer_types`` a gated short convolution (``conv``: ``shortconv.in_proj``
    ``(E, 3E)``, the depthwise kernel squeezed to ``shortconv.conv`` ``(conv_L_cache, E)``, ``shortconv.out_proj``
    ``(E, E)``) or attention (``full_attention``: q ``(E, E)``, k / v, per-head q / k norms, o ``(E, E)``: heads x
    head_dim must equal hidden_size), ``ffn_norm`` and a SwiGLU of :func:`_lfm2_ff`. The final norm (HF
    ``embedding_norm``) is ``token_embd_norm`` (llama-arch.cpp LLM_TENSOR_OUTPUT_NORM_LFM2), not ``output_norm``.
    Refused: other layer types, ``conv_bias`` (lfm2.cpp creates no conv biases), ``head_dim`` x heads !=
    hidden_size."""
    types = cfg.get("layer_types")
    H = int(cfg["num_attention_heads"])
    Hkv, d = int(cfg.get("num_key_value_heads") or H), int(cfg.get("head_dim") or E // H)
    if not isinstance(types, list) or len(types) != n or set(types) - {"conv", "full_attention"}:
        raise KvMathError(f"lfm2 layer_types must be {n} entries of 'conv' / 'full_attention', got "
                          f"{str(types)[:120]}")
    if cfg.get("conv_bias") or H * d != E or mtp:
        raise KvMathError("lfm2 with conv_bias or num_attention_heads x head_dim != hidden_size is not tabled "
                          "(src/models/lfm2.cpp creates neither)")
    kern, f = int(cfg["conv_L_cache"]), _lfm2_ff(cfg)
    j = next(k for k, row in enumerate(out) if row[0] == "output_norm.weight")
    out[j] = ("token_embd_norm.weight",) + out[j][1:]
    for i, t in enumerate(types):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (E,))
        if t == "conv":
            add(p + "shortconv.in_proj.weight", (E, 3 * E))
            add(p + "shortconv.conv.weight", (kern, E))
            add(p + "shortconv.out_proj.weight", (E, E))
        else:
            _attn_qkvo(add, p, E, H, Hkv, d, False)
            add(p + "attn_q_norm.weight", (d,))
            add(p + "attn_k_norm.weight", (d,))
        add(p + "ffn_norm.weight", (E,))
        _swiglu(add, p, E, f)
    return n


_BLOCKS = {"llama": _llama_blocks, "mistral": _llama_blocks, "mixtral": _llama_blocks, "qwen2": _llama_blocks,
           "qwen3": _llama_blocks, "qwen3_moe": _llama_blocks, "qwen3_5_text": _qwen35_blocks,
           "qwen3_5_moe_text": _qwen35_blocks, "gemma4_text": _gemma4_blocks, "gpt_oss": _gpt_oss_blocks,
           "gemma2": _gemma_blocks, "gemma3_text": _gemma_blocks, "deepseek_v2": _deepseek2_blocks,
           "deepseek_v3": _deepseek2_blocks, "kimi_k2": _deepseek2_blocks, "qwen3_next": _qwen3next_blocks,
           "nemotron_h": _nemotron_h_blocks, "phi3": _phi3_blocks, "olmo2": _olmo2_blocks, "olmo3": _olmo2_blocks,
           "smollm3": _llama_blocks, "granite": _llama_blocks, "granitemoe": _llama_blocks,
           "granitemoeshared": _llama_blocks, "seed_oss": _seed_oss_blocks, "ernie4_5": _llama_blocks,
           "olmoe": _olmoe_blocks, "cohere": _cohere_blocks, "cohere2": _cohere_blocks,
           "starcoder2": _starcoder2_blocks, "glm4": _glm4_blocks, "qwen2_moe": _qwen2moe_blocks,
           "glm4_moe": _glm4moe_blocks, "exaone4": _exaone4_blocks, "ernie4_5_moe": _ernie45moe_blocks,
           "hunyuan_v1_dense": _hunyuan_blocks, "hunyuan_v1_moe": _hunyuan_blocks,
           "granitemoehybrid": _granitehybrid_blocks, "falcon_h1": _falcon_h1_blocks, "lfm2": _lfm2_blocks}
"""model_type -> the function writing its blocks' tensors (one per family)."""


def config_tied(cfg: dict) -> bool:
    """Whether the converted GGUF has no ``output.weight`` (llama.cpp then reads ``token_embd`` twice):
    ``tie_word_embeddings`` (default False; True for ``gemma3_text``, ``smollm3``, ``ernie4_5``, ``starcoder2`` and
    ``lfm2``, their config classes' default; LFM2's ``tie_embedding`` wins when present), and always for
    Gemma 2, whose converter drops ``lm_head.weight`` (conversion/gemma.py Gemma2Model.filter_tensors), and for
    Cohere / Cohere 2, whose llama.cpp models read ``token_embd`` as the output (command-r.cpp, cohere2.cpp;
    an untied Cohere config is refused in :func:`_cohere_blocks`)."""
    if cfg.get("model_type") in ("gemma2", "cohere", "cohere2"):
        return True
    if cfg.get("model_type") == "lfm2" and "tie_embedding" in cfg:  # Lfm2Config pops it over tie_word_embeddings
        return bool(cfg["tie_embedding"])
    return bool(cfg.get("tie_word_embeddings",
                        cfg.get("model_type") in ("gemma3_text", "smollm3", "ernie4_5", "starcoder2", "lfm2")))


def _gemma3_vocab(v: int) -> int:
    """Rows of a Gemma 3 ``token_embd``: the converter keeps the tokenizer's entries only (conversion/gemma.py
    Gemma3Model.modify_tensors), 262144 for the Gemma 3 tokenizer, whose config.json says 262208 (64 padding
    rows; llama.cpp tests/snapshots/gemma-3-4b-it.schema: n_vocab=262144). Another vocab_size is refused."""
    if v != 262208:
        raise KvMathError(f"gemma3_text vocab_size {v}: the GGUF's token rows come from tokenizer.model, known only "
                          "for the Gemma 3 tokenizer (vocab_size 262208 -> 262144 rows)")
    return 262144
