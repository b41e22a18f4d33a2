"""Weight bytes as llama.cpp places them, from a config when no GGUF tensor table is at hand."""

from __future__ import annotations

from ...model.gguf import WeightBytes
from ...errors import KvMathError
from ...model.params import GGUF_ARCH, config_tied, gguf_tensor_table as gguf_tensors_from_config  # noqa: F401

# The per-family tensor shapes live with the model side (kvmath.model.params); this module applies llama.cpp's
# quantisation mix to them (``weights_from_mix``). ``gguf_tensors_from_config`` keeps its name for the callers.




def estimate_weights(config: dict, *, bits_per_weight: float = 4.5, name: str = "") -> WeightBytes:
    """Weight bytes at a flat ``bits_per_weight`` from config shapes, split as llama.cpp places them: the model
    side's :func:`kvmath.model.params.estimate_weight_bytes` (its docstring gives the families and rules)."""
    from ...model.params import estimate_weight_bytes

    return estimate_weight_bytes(config, bits_per_weight=bits_per_weight, name=name)


# --- a GGUF tensor table from config.json, and a named quantisation mix applied to it --------------------

def mix_model_from_config(config: dict, arch: str, n_blocks: int, table=()):
    """The :class:`quantmix.MixModel` llama-quantize would read from the converted file's metadata: the expert
    count from the table's merged ``*_exps`` tensors (their third dimension), and ``n_gqa`` of layer 0 as
    ``llama_hparams::n_gqa`` gives it (0 when block 0 has no attention, as a Nemotron-H or Granite 4.0-H Mamba block or an LFM2 short-conv block; MLA's
    ``deepseek2`` is written with ``head_count_kv`` 1, conversion/deepseek.py)."""
    from ...model.hf import _unwrap
    from .quantmix import MixModel

    cfg, _ = _unwrap(config)
    h = int(cfg["num_attention_heads"])
    kv = int(cfg.get("num_key_value_heads") or h)
    if arch == "deepseek2":
        kv = 1
    if arch in ("nemotron_h", "nemotron_h_moe") and str(cfg.get("hybrid_override_pattern", ""))[:1] != "*":
        kv = 0
    # granitehybrid / lfm2: head_count_kv is written per layer, 0 on Mamba-2 / short-conv blocks
    # (conversion/granite.py GraniteHybridModel, conversion/lfm2.py LFM2Model)
    if arch == "granitehybrid" and (cfg.get("layer_types") or cfg.get("layers_block_type") or ["mamba"])[0] != "attention":
        kv = 0
    if arch == "lfm2" and (cfg.get("layer_types") or ["conv"])[0] == "conv":
        kv = 0
    ne = max((int(s[2]) for n, s, _ in table if "_exps." in n and len(s) > 2), default=0)
    return MixModel(arch, n_blocks, ne, h // kv if kv else 0, h != kv)


def weights_from_mix(config: dict, mix: str, *, imatrix: bool = False, mtp: bool = False, name: str = ""):
    """Weights of a GGUF that ``llama-quantize <mix>`` would make from this config, as a tensor table
    (:class:`placement.Tensor` records with offsets in the output order) and a :class:`WeightBytes` summary.

    Exact per tensor where the converter's table and llama-quantize's rules are (both tested); the file's
    metadata (tokenizer: a few MiB) is not counted. Returns ``(tensors, WeightBytes)``.
    """
    from ...model.gguf import weight_bytes
    from .quantmix import SOURCE, quantised_table

    from ...model.hf import _unwrap

    arch, n_blocks, table = gguf_tensors_from_config(config, mtp=mtp)
    cfg, _ = _unwrap(config)
    try:
        model = mix_model_from_config(config, arch, n_blocks, table)
        n_layer = int(cfg["num_hidden_layers"])
    except (KeyError, TypeError, ValueError, OverflowError, ZeroDivisionError) as e:
        raise KvMathError(f"config.json of {arch}: its head counts or layer count are not sizes ({e!r})") from None
    tensors = quantised_table(table, model, mix, imatrix=imatrix)
    # split as a real GGUF's table is split (kvmath.model.gguf.weight_bytes: blocks past the decoder are MTP)
    wb = weight_bytes(tensors, n_layer=n_layer,
                      source=f"{mix} from config shapes ({SOURCE}){' (' + name + ')' if name else ''}")
    if any(t.n_bytes < 0 for t in tensors):
        raise KvMathError(f"config.json of {arch}: its fields give a negative tensor size")
    return tensors, wb
