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
             "qwen3_moe": "qwen3moe"}
"""HF ``model_type`` -> the GGUF ``general.architecture`` the vendored convert_hf_to_gguf.py writes (Mistral and
Mixtral are converted by ``LlamaModel``: ``MistralForCausalLM`` / ``MixtralForCausalLM`` are registered there)."""


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
    Supported: ``llama``, ``mistral``, ``mixtral`` (llama with merged ``ffn_*_exps`` experts), ``qwen2`` (q/k/v
    biases), ``qwen3`` (dense Qwen 3), ``qwen3_moe`` (``qwen3moe``: every layer MoE), ``qwen3_5_text`` / ``qwen3_5_moe_text`` (Qwen 3.5 / 3.6),
    ``gemma4_text`` (Gemma 4 without per-layer embeddings), ``gpt_oss``. ``mtp=True`` adds Qwen 3.5 / 3.6's multi-token-prediction
    block (``blk.<n>.`` plus ``nextn.*``; shapes from src/models/qwen35*.cpp, not checked against a converted
    file). Others raise KvMathError.
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
    except (TypeError, ValueError, OverflowError) as e:  # None, a list, a string or NaN where a size is read
        raise KvMathError(f"config.json of {mt}: a field its tensor shapes read is not a size ({e})") from None


def _tables(cfg: dict, mt: str, mtp: bool):
    E, n, V = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"]), int(cfg["vocab_size"])
    W, F = "BF16", "F32"
    out: list = []
    # conversion/base.py (prepare_tensors): 1-D tensors, norms, routers and conv1d kernels stay F32
    f32 = lambda name, shape: len(shape) < 2 or shape[1] == 1 or name.endswith("_norm.weight") or \
        ".ffn_gate_inp" in name or ".ssm_conv1d" in name
    add = lambda name, shape: out.append((name, tuple(int(x) for x in shape), F if f32(name, shape) else W))
    tied = bool(cfg.get("tie_word_embeddings", config_tied(cfg)))
    if mt == "gemma4_text" and int(cfg.get("hidden_size_per_layer_input") or 0):
        raise KvMathError("Gemma 4 with per-layer embeddings (hidden_size_per_layer_input > 0) is not tabled")
    add("token_embd.weight", (E, V))
    if not tied:
        add("output.weight", (E, V))
    add("output_norm.weight", (E,))
    arch = GGUF_ARCH[mt]
    n_blocks = _BLOCKS[mt](cfg, mt, add, out, E, n, W, F, mtp)
    return arch, n_blocks, tuple(out)


def _llama_blocks(cfg: dict, mt: str, add, out: list, E: int, n: int, W: str, F: str, mtp: bool) -> int:
    """Llama-style blocks (src/models/llama.cpp, qwen2.cpp, qwen3.cpp, qwen3moe.cpp create_tensor): q/k/v/o
    (Qwen 2 with q/k/v biases, Qwen 3 with per-head q/k norms), then a dense SwiGLU MLP or, for Mixtral and
    Qwen3-MoE, the router ``ffn_gate_inp`` and the experts merged into ``ffn_{gate,up,down}_exps`` of shape
    ``(H, I_e, n_expert)`` / ``(I_e, H, n_expert)`` (convert_hf_to_gguf.py stacks ``experts.{e}.*``)."""
    ne = int(cfg.get("num_local_experts") or cfg.get("num_experts") or 0) if mt in ("mixtral", "qwen3_moe") else 0
    if mt == "qwen3_moe" and (cfg.get("mlp_only_layers") or int(cfg.get("decoder_sparse_step") or 1) != 1):
        raise KvMathError("qwen3_moe with mlp_only_layers or decoder_sparse_step != 1 mixes dense and MoE layers; "
                          "kvmath tables only every-layer-MoE checkpoints")
    fe = int(cfg["moe_intermediate_size"] if mt == "qwen3_moe" else cfg["intermediate_size"]) if ne else 0
    H, Hkv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    d = int(cfg.get("head_dim") or E // H)
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


_BLOCKS = {"llama": _llama_blocks, "mistral": _llama_blocks, "mixtral": _llama_blocks, "qwen2": _llama_blocks,
           "qwen3": _llama_blocks, "qwen3_moe": _llama_blocks, "qwen3_5_text": _qwen35_blocks,
           "qwen3_5_moe_text": _qwen35_blocks, "gemma4_text": _gemma4_blocks, "gpt_oss": _gpt_oss_blocks}
"""model_type -> the function writing its blocks' tensors (one per family)."""


def config_tied(cfg: dict) -> bool:
    return bool(cfg.get("tie_word_embeddings", False))
