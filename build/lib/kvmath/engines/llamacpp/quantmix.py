"""A named llama.cpp quantisation mix (``Q4_K_M``, ``IQ4_XS``, ...) applied to a tensor table: the GGML type
``llama-quantize`` gives each tensor, and so the bytes of a GGUF nobody has downloaded yet.

The rules are those of llama.cpp 0c1e570 ``src/llama-quant.cpp`` (``tensor_allows_quantization``,
``tensor_get_category``, ``llama_tensor_get_type`` / ``llama_tensor_get_type_impl``,
``tensor_type_fallback``, ``llama_ftype_get_default_type``), written out here in kvmath's own terms:

- **what is quantised**: tensors of two or more dimensions whose name ends in ``weight``, except norms,
  ``ffn_gate_inp`` (the router), ``ssm_conv1d``, ``altup`` / ``laurel`` / ``per_layer_model_proj``, positional
  and token-type embeddings, ``attn_rel_b`` and a few others listed in ``_KEEP``; everything else keeps the
  type the source file has (F32 for 1-D tensors, BF16 / F16 for a 2-D weight the rules skip);
- **the mix's default type** (``MIXES``), then per category: the output head (and a tied token embedding)
  Q6_K unless the default is Q8_0 (Q8_0 also when the row length is not a multiple of the block, and in
  MXFP4_MOE); ``attn_v`` / ``attn_qkv`` / ``attn_kv_b`` by the mix and their index among such tensors
  (``use_more_bits``: the first and last eighth and every third one between); ``ffn_down`` by its layer;
  ``attn_output`` for 8-expert models; MXFP4_MOE puts every 3-D (expert) tensor in MXFP4 and the rest in
  Q8_0;
- **fallback**: a row length that is not a multiple of the chosen type's block (256 for the K and IQ types)
  demotes Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL, Q2_K / Q3_K -> Q4_0, and to F16 when
  even that block does not divide it.

Tensor order matters (the ``attn_v`` counter): llama-quantize walks the tensors as its loader's map holds
them, non-block tensors first, then block by block, names in byte order within a block (``_order``).

Checked tensor by tensor against ``llama-quantize --dry-run`` of the same build on sparse BF16 GGUFs with
the real tensor tables of 7 models (``tests/fixtures/llamacpp/quant_fixtures.json``). Not modelled: the
IQ1 / IQ2 / IQ3 mixes and Q2_K_S (they need an importance matrix and more rules), ``--tensor-type`` /
``--output-tensor-type`` overrides, ``--pure``; ``imatrix=True`` only switches the rules that test
``has_imatrix`` (IQ4_NL / IQ4_XS ``ffn_down``, Q4_0 / Q5_0 ``ffn_down``), not checked against a run with an
imatrix. Unsloth's "UD" dynamic mixes are per-model choices with no rule in llama.cpp: not modelled (refused).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import KvMathError, choices

MIXES: dict[str, str] = {
    # llama.cpp ftype name (llama-quantize's spelling) -> default tensor type (llama_ftype_get_default_type)
    "Q4_0": "Q4_0", "Q4_1": "Q4_1", "Q5_0": "Q5_0", "Q5_1": "Q5_1", "Q8_0": "Q8_0",
    "Q2_K": "Q2_K", "Q3_K_S": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_L": "Q3_K",
    "Q4_K_S": "Q4_K", "Q4_K_M": "Q4_K", "Q5_K_S": "Q5_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K",
    "IQ4_NL": "IQ4_NL", "IQ4_XS": "IQ4_XS", "MXFP4_MOE": "MXFP4", "BF16": "BF16", "F16": "F16",
}
"""Mixes kvmath applies, by llama-quantize's names."""
SOURCE = "llama.cpp 0c1e570 src/llama-quant.cpp (llama_tensor_get_type_impl, tensor_type_fallback)"
_FALLBACK = {"IQ4_XS": "IQ4_NL", "Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
_KEEP = ("_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
         "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
         "attn_rel_b.weight", ".position_embd", ".rel_pos", ".patch_embd", ".patch_merger", "time_mix_")
_POS = ("position_embd.weight", "token_types.weight")
_LARGE_TYPE_LAYERS = {"llama": 80, "qwen2": 80, "olmo": 80, "deci": 80, "jais2": 68}
"""Block counts at which llama.cpp types the model LLM_TYPE_70B (src/models/*.cpp), which moves attn_v up."""
_BLK = re.compile(r"^blk\.(\d+)\.")


def _block_of(name: str) -> int:
    m = _BLK.match(name)
    return int(m.group(1)) if m else -1


def order(names) -> list[str]:
    """Tensor names in llama-quantize's order (``llama_model_loader::weight_name_comparer``: block number,
    -1 for tensors outside a block, then the name)."""
    return sorted(names, key=lambda n: (_block_of(n), n.encode()))


def _category(name: str) -> str:
    if name == "output.weight":
        return "output"
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return "token_embd"
    for key, cat in (("attn_qkv.weight", "attn_qkv"), ("attn_kv_b.weight", "attn_kv_b"), ("attn_v.weight", "attn_v"),
                     ("attn_k.weight", "attn_k"), ("attn_q.weight", "attn_q"),
                     ("attn_output.weight", "attn_output"), ("ffn_up", "ffn_up"), ("ffn_gate", "ffn_gate"),
                     ("ffn_down", "ffn_down")):
        if key in name:
            return cat
    return "other"


def quantisable(name: str, shape) -> bool:
    """``tensor_allows_quantization`` (default parameters): 2-D / 3-D weights that are not norms, routers, ..."""
    dims = len(shape)
    while dims > 1 and shape[dims - 1] == 1:
        dims -= 1
    if dims < 2 or not name.endswith("weight"):
        return False
    if any(k in name for k in _KEEP) or name in _POS:
        return False
    return True


def _blck(t: str) -> int:
    from .formats import ggml_block

    return ggml_block(t)[0]


@dataclass(frozen=True)
class MixModel:
    """What the rules read from the model (``llama_hparams``): the architecture name as GGUF spells it, the
    block count (``n_layer_all``, MTP blocks included), experts, query heads per KV head of layer 0."""

    arch: str
    n_layer_all: int
    n_expert: int = 0
    n_gqa: int = 1
    n_head_differs_from_kv: bool = True


def mix_model_from_gguf(metadata: dict) -> MixModel:
    arch = metadata["general.architecture"]

    def first(key, default=0):
        v = metadata.get(f"{arch}.{key}", default)
        return v[0] if isinstance(v, list) else v

    h, hkv = int(first("attention.head_count", 0)), int(first("attention.head_count_kv", 0) or 0)
    if f"{arch}.attention.head_count_kv" not in metadata:
        hkv = h
    return MixModel(arch, int(metadata[f"{arch}.block_count"]), int(first("expert_count", 0)),
                    h // hkv if hkv else 0, h != hkv)


def check_mix(mix) -> str:
    if not isinstance(mix, str) or mix.upper() not in MIXES:
        extra = "; Unsloth 'UD' dynamic mixes are per-model choices llama.cpp has no rule for: read the GGUF" \
            if isinstance(mix, str) and "UD" in mix.upper() else ""
        raise KvMathError(f"unknown llama.cpp quantisation mix {mix!r}; valid: {choices(tuple(MIXES))}{extra}")
    return mix.upper()


def tensor_types(tensors, model: MixModel, mix: str, *, imatrix: bool = False) -> dict[str, str]:
    """The GGML type llama-quantize gives each tensor of ``tensors`` (``(name, shape ne0 first, source type)``)
    under ``mix``. Returns name -> type name (``gguf.GGMLQuantizationType`` spelling)."""
    mix = check_mix(mix)
    default = MIXES[mix]
    rows = {n: (tuple(s), t) for n, s, t in tensors}
    names = order(rows)
    tied = "output.weight" not in rows
    n_wv = sum(1 for n in names if _category(n) in ("attn_v", "attn_qkv", "attn_kv_b"))
    n_layer = model.n_layer_all
    n_exp = max(1, model.n_expert)
    large = _LARGE_TYPE_LAYERS.get(model.arch) == n_layer and (model.arch != "llama" or model.n_head_differs_from_kv)
    i_wv = i_down = 0
    more = lambda i, n: i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2
    out: dict[str, str] = {}
    for name in names:
        shape, src = rows[name]
        if not quantisable(name, shape):
            out[name] = src
            continue
        if default in ("BF16", "F16"):  # not a quantised type: no per-tensor rules (ggml_is_quantized)
            out[name] = default
            continue
        cat = _category(name)
        t = default
        if cat == "output" or (tied and cat == "token_embd"):
            if mix == "MXFP4_MOE" or shape[0] % _blck(t):
                t = "Q8_0"
            elif t != "Q8_0":
                t = "Q6_K"
        elif mix == "MXFP4_MOE":
            t = "MXFP4" if len(shape) > 2 and shape[2] > 1 else "Q8_0"
        elif cat == "token_embd":
            pass
        elif cat in ("attn_v", "attn_qkv", "attn_kv_b"):
            if mix == "Q2_K":
                t = "Q4_K" if model.n_gqa >= 4 else "Q3_K"
            elif mix == "Q3_K_M":
                t = "Q5_K" if i_wv < 2 else "Q4_K"
            elif mix == "Q3_K_L":
                t = "Q5_K"
            elif mix in ("IQ4_NL", "IQ4_XS") and model.n_gqa >= 4:
                t = "Q5_K"
            elif mix in ("Q4_K_M", "Q5_K_M") and more(i_wv, n_wv):
                t = "Q6_K"
            elif mix == "Q4_K_S" and i_wv < 4:
                t = "Q5_K"
            if large and t in ("Q3_K", "Q4_K"):
                t = "Q5_K"
            if model.n_expert == 8:
                t = "Q8_0"
            i_wv += 1
        elif cat == "attn_k":
            if model.n_expert == 8:
                t = "Q8_0"
        elif cat == "ffn_down":
            il = _block_of(name) if n_exp > 1 else i_down
            if n_exp > 1 and not 0 <= il < n_layer:
                raise KvMathError(f"{name}: block {il} outside 0..{n_layer - 1} (llama-quantize refuses it)")
            if mix == "Q2_K":
                t = "Q3_K"
            elif mix == "Q3_K_M":
                t = "Q5_K" if il < n_layer // 16 else \
                    ("Q4_K" if model.arch != "falcon" or more(il, n_layer) else "Q3_K")
            elif mix == "Q3_K_L":
                t = "Q4_K" if model.arch == "falcon" else "Q5_K"
            elif mix == "Q4_K_M":
                if model.arch == "falcon":
                    t = "Q6_K" if il < n_layer // 16 else ("Q5_K" if more(il, n_layer) else "Q4_K")
                elif more(il, n_layer):
                    t = "Q6_K"
            elif il < n_layer // 8 and mix in ("IQ4_NL", "IQ4_XS") and not imatrix:
                t = "Q5_K"
            elif mix == "Q5_K_M" and more(il, n_layer):
                t = "Q6_K"
            elif mix == "Q4_K_S" and model.arch != "falcon" and il < n_layer // 8:
                t = "Q5_K"
            elif mix in ("Q4_0", "Q5_0") and imatrix and il < n_layer // 8:
                t = "Q4_1" if mix == "Q4_0" else "Q5_1"
            i_down += 1
        elif cat == "attn_output":
            if model.arch != "falcon":
                if model.n_expert == 8:
                    if mix in ("Q2_K", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ4_XS"):
                        t = "Q5_K"
                else:
                    t = {"Q2_K": "Q3_K", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K"}.get(mix, t)
            elif mix == "Q3_K_L":
                t = "Q4_K"
        if shape[0] % _blck(t):
            fb = _FALLBACK.get(t, t)
            if _blck(t) > 32 and t not in _FALLBACK:
                raise KvMathError(f"{name}: no llama.cpp fallback type for {t}")
            t = fb if shape[0] % _blck(fb) == 0 else "F16"
        out[name] = t
    return out


def nbytes(shape, ggml_type: str) -> int:
    """Bytes of a tensor of ``shape`` (ne0 first) in ``ggml_type`` (``formats.GGML_TYPE_BLOCKS``, gguf's
    ``GGML_QUANT_SIZES``)."""
    from .formats import ggml_block

    elems, size = ggml_block(ggml_type)
    n = 1
    for x in shape:
        n *= int(x)
    if int(shape[0]) % elems:
        raise KvMathError(f"row of {shape[0]} elements is not a whole number of {ggml_type} blocks ({elems})")
    return n // elems * size


def quantised_table(tensors, model: MixModel, mix: str, *, imatrix: bool = False, data_offset: int = 0):
    """The tensor table a ``llama-quantize <mix>`` output file would have: :class:`placement.Tensor` records in
    the output's order with their types, bytes and offsets (each tensor aligned to 32 bytes,
    ``GGUF_DEFAULT_ALIGNMENT``), so :func:`placement.place` can place it like a real file's."""
    from .placement import Tensor

    types = tensor_types(tensors, model, mix, imatrix=imatrix)
    shapes = {n: tuple(s) for n, s, _ in tensors}
    out, off = [], data_offset
    for name in order(shapes):
        b = nbytes(shapes[name], types[name])
        off = -(-off // 32) * 32
        out.append(Tensor(name, shapes[name], types[name], b, off))
        off += b
    return tuple(out)
