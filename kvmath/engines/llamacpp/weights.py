"""Weight bytes as llama.cpp places them, from a config when no GGUF tensor table is at hand."""

from __future__ import annotations

from ...errors import KvMathError
from ...model.gguf import WeightBytes
from ...model.params import GGUF_ARCH, config_tied, gguf_tensor_table as gguf_tensors_from_config  # noqa: F401

# The per-family tensor shapes live with the model side (kvmath.model.params); this module applies llama.cpp's
# quantisation mix to them (``weights_from_mix``). ``gguf_tensors_from_config`` keeps its name for the callers.




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


# --- a GGUF tensor table from config.json, and a named quantisation mix applied to it --------------------

def mix_model_from_config(config: dict, arch: str, n_blocks: int):
    """The :class:`quantmix.MixModel` llama-quantize would read from the converted file's metadata."""
    from .quantmix import MixModel

    cfg = config.get("text_config", config)
    h = int(cfg["num_attention_heads"])
    kv = cfg.get("num_key_value_heads") or h
    ne = int(cfg.get("num_experts") or cfg.get("num_local_experts") or 0)
    return MixModel(arch, n_blocks, ne, h // int(kv) if kv else 0, h != int(kv))


def weights_from_mix(config: dict, mix: str, *, imatrix: bool = False, mtp: bool = False, name: str = ""):
    """Weights of a GGUF that ``llama-quantize <mix>`` would make from this config, as a tensor table
    (:class:`placement.Tensor` records with offsets in the output order) and a :class:`WeightBytes` summary.

    Exact per tensor where the converter's table and llama-quantize's rules are (both tested); the file's
    metadata (tokenizer: a few MiB) is not counted. Returns ``(tensors, WeightBytes)``.
    """
    from ...model.gguf import weight_bytes
    from .quantmix import SOURCE, quantised_table

    arch, n_blocks, table = gguf_tensors_from_config(config, mtp=mtp)
    tensors = quantised_table(table, mix_model_from_config(config, arch, n_blocks), mix, imatrix=imatrix)
    cfg = config.get("text_config", config)
    # split as a real GGUF's table is split (kvmath.model.gguf.weight_bytes: blocks past the decoder are MTP)
    wb = weight_bytes(tensors, n_layer=int(cfg["num_hidden_layers"]),
                      source=f"{mix} from config shapes ({SOURCE}){' (' + name + ')' if name else ''}")
    return tensors, wb
