"""Weight bytes as llama.cpp places them, from a config when no GGUF tensor table is at hand."""

from __future__ import annotations

from ...errors import KvMathError
from ...model.gguf import WeightBytes




def estimate_weights(config: dict, *, bits_per_weight: float = 4.5, name: str = "") -> "WeightBytes":
    """Approximate weight bytes of a MoE or dense model from its config shapes, split as llama.cpp
    places them (see :class:`kvmath.gguf_input.WeightBytes`).

    Every matrix is counted at ``bits_per_weight`` (Q4_K stores 256 weights in 144 bytes = 4.5 bits;
    a Q4_K_M file averages ~4.8-4.9 bits because some tensors stay at Q6_K); 1-D tensors (norms,
    biases) are left out. Supported: Qwen 3.5 / 3.6 (``qwen3_5_moe_text``, Gated DeltaNet + gated
    full attention + routed and shared experts) and Gemma 4 (``gemma4_text``, dense MLP plus routed
    experts). An exact figure needs the GGUF's tensor table (``kvmath.gguf_input``).
    """
    cfg = config.get("text_config", config)
    mt = cfg.get("model_type")
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
        e, mi = cfg["num_experts"], cfg["moe_intermediate_size"]
        shared = cfg.get("shared_expert_intermediate_size", 0)
        for t in arch_layers[:n]:
            attn += nb(full if t == "full_attention" else lin)
            per_block_exp.append(nb(3 * e * h * mi))
            other += nb(h * e + (3 * h * shared + h if shared else 0))
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
