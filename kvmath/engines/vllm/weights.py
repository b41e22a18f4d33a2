"""Weight bytes on one vLLM rank, from a checkpoint's tensor table (:mod:`kvmath.model.checkpoint`).

vLLM builds every linear layer as one of a few parallel classes and loads each checkpoint tensor into
its rank's slice (``vllm/model_executor/layers/linear.py``, read at v0.6.4 / v0.10 / v0.11, where these
rules are the same):

1. ``ColumnParallelLinear`` / ``MergedColumnParallelLinear`` (``gate_proj``, ``up_proj``, ``q_b_proj``,
   ``fc1``, ...): the output dimension is split over the TP ranks; its bias is split too.
2. ``QKVParallelLinear``: query heads are split; key/value heads are split when there are at least as
   many as ranks, else every rank holds one KV head (``num_kv_head_replicas = tp / num_kv_heads``).
3. ``RowParallelLinear`` (``o_proj``, ``down_proj``, ``fc2``, ...): the input dimension is split; the
   bias is not (every rank holds it whole and rank 0 adds it).
4. ``ReplicatedLinear`` and everything that is not a linear layer (norms, MoE routers ``gate`` /
   ``router``, ``shared_expert_gate``, MLA's ``q_a_proj`` / ``kv_a_proj_with_mqa``, per-tensor scales,
   ``weight_shape``): whole on every rank.
5. ``VocabParallelEmbedding`` / ``ParallelLMHead`` (``vocab_parallel_embedding.py``): the vocabulary is
   padded to a multiple of ``DEFAULT_VOCAB_PADDING_SIZE = 64`` (``pad_vocab_size``) and the padded rows
   are divided over the ranks (``num_embeddings_per_partition = divide(padded, tp)``), so every rank
   holds ``pad64(V) / tp`` rows, padding included. With ``tie_word_embeddings`` the head is the
   embedding (no second copy); a stored ``lm_head.weight`` is then not loaded.
6. ``FusedMoE`` (``fused_moe/layer.py``): without expert parallelism each expert's intermediate size
   is split over the TP ranks (gate/up by output, down by input); with ``--enable-expert-parallel``
   the experts are divided over ``ep_size = tp * dp`` ranks whole (``determine_expert_map``: ``E //
   ep`` each, the first ``E % ep`` ranks one more) and the intermediate is not split.

Which axis of a stored tensor is "output" and which "input" depends on the format: PyTorch linear
tensors (``weight``, ``weight_packed``, fp8 ``weight_scale_inv``, NVFP4 ``weight_scale``, biases) are
``[out, in]``; AWQ and GPTQ (``qweight``, ``qzeros``, ``scales``, ``g_idx``) are ``[in, out]``; fused
3-D expert tensors (gpt-oss MXFP4 ``*_blocks`` / ``*_scales`` / ``*_bias``) are ``[E, out, in, ...]``. A
tensor that has no such axis, or whose axis has size 1 (a per-tensor scale, a per-channel scale of a
row-parallel layer, GPTQ's ``g_idx`` of a column-parallel layer), is whole on every rank.

Unquantised floating tensors are loaded in the model dtype (``--dtype``; ``auto`` = the config's
``torch_dtype``, float32 configs in bfloat16), quantised tensors and their scales as stored.

"Model loading took X GiB" (``gpu_model_runner.py`` ``load_model``: the allocator's growth while the
model is built and loaded) also holds the non-persistent buffers the model creates: the rotary
embedding's ``cos_sin_cache`` (``rotary_embedding.py``: ``[max_position, rotary_dim]`` cast to the
model dtype, one per distinct rope, shared by the layers through ``get_rope``'s cache) is counted
here by :func:`rotary_cache_bytes`. MXFP4 experts (gpt-oss) are allocated at the sizes the card's
MoE kernel pads them to (:func:`mxfp4_kernel_bytes`); other kernels' repacking after loading (Marlin for
AWQ / GPTQ / FP8) is not modelled, and :func:`loaded_bytes_per_rank` says so in its notes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, itemgetter

from ...errors import KvMathError
from .releases import release
from ...model.checkpoint import DTYPE_BITS, FLOAT_DTYPES, Checkpoint, tied_embeddings
from ...model.table import TensorTable

VOCAB_PADDING = 64  # vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE

COLUMN = {"q_proj", "k_proj", "v_proj", "qkv_proj", "query_key_value", "c_attn", "gate_proj", "up_proj",
          "gate_up_proj", "w1", "w3", "fc1", "c_fc", "dense_h_to_4h", "q_b_proj", "kv_b_proj", "in_proj",
          "linear_fc1", "wq", "wk", "wv",
          # Gated DeltaNet (qwen3_next.py / qwen3_5.py: in_proj_qkvz and in_proj_ba, which vLLM builds from
          # Qwen 3.5's in_proj_qkv + in_proj_z and in_proj_b + in_proj_a) and its short convolution, a
          # ColumnParallelLinear over the channels; Mamba-2's conv1d (mamba_mixer2.py); Kimi Delta Attention's
          # projections and convolutions (kda.py); the Qwen vision tower's fused qkv (QKVParallelLinear)
          "in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "conv1d",
          "q_conv1d", "k_conv1d", "v_conv1d", "b_proj", "f_b_proj", "g_b_proj", "qkv"}
ROW = {"o_proj", "down_proj", "dense", "w2", "fc2", "c_proj", "out_proj", "dense_4h_to_h", "linear_fc2", "wo"}
VOCAB = {"embed_tokens", "lm_head", "wte", "embed_out", "word_embeddings", "output", "tok_embeddings", "embeddings"}
REPLICATED_LINEAR = {"gate", "router", "shared_expert_gate", "q_a_proj", "kv_a_proj_with_mqa", "f_a_proj", "g_a_proj"}
# per-head parameters of the recurrent mixers, split with the heads (qwen3_next.py ``A_log`` / ``dt_bias`` of
# num_v_heads // tp; mamba_mixer2.py ``A``, ``D``, ``dt_bias`` of num_heads // tp; kda.py ``A_log`` [1, 1, h / tp, 1])
HEAD_SHARDED = {"dt_bias", "A_log", "D"}
# Mamba-2's gated norm is split over the inner width (mamba_mixer2.py Mixer2RMSNormGated: hidden_size // tp)
SHARDED_NORM_PARENTS = ("mixer",)
IN_FIRST = {"qweight", "qzeros", "scales", "g_idx"}  # AWQ / GPTQ layout [in, out]
_FLOAT_LEAVES = {"weight", "bias", "sinks"}


@dataclass(frozen=True)
class RankWeights:
    """Bytes on the most loaded rank (rank 0), split by how vLLM places them. ``total`` is the sum."""

    tp: int
    ep: int
    sharded: int
    replicated: int
    vocab: int
    experts: int
    buffers: int = 0
    checkpoint_bytes: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total(self) -> int:
        return self.sharded + self.replicated + self.vocab + self.experts + self.buffers

    @property
    def gib(self) -> float:
        return self.total / 2**30


def _split(name: str) -> tuple[str, str, str]:
    """(module prefix, module's last name, tensor leaf) of a stored tensor name."""
    parts = name.split(".")
    leaf = parts[-1]
    module = parts[-2] if len(parts) > 1 else ""
    if module == "experts" and "_" in leaf:  # gpt-oss fused: experts.gate_up_proj_blocks
        for base in ("gate_up_proj", "down_proj"):
            if leaf.startswith(base):
                return ".".join(parts[:-1]), base, leaf[len(base) + 1:] or "weight"
    return ".".join(parts[:-1]), module, leaf


def _axes(leaf: str, fused_experts: bool) -> tuple[int | None, int | None]:
    """(output axis, input axis) of a tensor by its leaf name and layout."""
    if fused_experts:
        return 1, 2
    if leaf in IN_FIRST:
        return (None, 0) if leaf == "g_idx" else (1, 0)
    return 0, 1


def _runtime_dtype(config: dict, dtype: str) -> str:
    if dtype != "auto":
        d = {"bfloat16": "bf16", "bf16": "bf16", "float16": "f16", "fp16": "f16", "half": "f16",
             "float32": "f32", "fp32": "f32"}.get(str(dtype).lower())
        if d is None:
            raise KvMathError(f"--dtype {dtype!r}: one of auto, bfloat16, float16, float32")
        return d
    tc = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    name = str(tc.get("torch_dtype") or tc.get("dtype") or config.get("torch_dtype") or "bfloat16")
    return {"float16": "f16", "half": "f16"}.get(name.replace("torch.", ""), "bf16")


def _axis_len(shape: tuple, axis: int | None) -> int:
    """The length of ``shape``'s ``axis`` when a split over it moves bytes (> 1), else 0 (whole on every rank)."""
    return shape[axis] if axis is not None and axis < len(shape) and shape[axis] > 1 else 0


VISION_TOWER_MODULES = ("vision_tower", "visual", "vision_model", "multi_modal_projector", "mm_projector",
                        "embed_vision")
AUDIO_TOWER_MODULES = ("audio_tower", "audio_model", "embed_audio")
"""Module names of a multimodal model's towers in its tensor names: the ones vLLM builds inside
``_mark_tower_model(vllm_config, {"image", "video"})`` / ``"audio"`` (qwen3_5.py ``visual``; gemma4_mm.py
``vision_tower`` and ``embed_vision``, ``audio_tower``; kimi_k25.py and hyperclovax_vision.py ``mm_projector``;
vllm/model_executor/models/interfaces.py, 0.24.0) and so
does not load when every modality of the tower has a ``--limit-mm-per-prompt`` of 0 (or ``--language-model-only``)."""


def _tower_of(prefix: str) -> str | None:
    """"vision", "audio" or None: the tower a tensor's module prefix belongs to."""
    if any(s in prefix for s in VISION_TOWER_MODULES):
        return "vision"
    if any(s in prefix for s in AUDIO_TOWER_MODULES):
        return "audio"
    return None


_TOWER = re.compile("|".join(VISION_TOWER_MODULES + AUDIO_TOWER_MODULES))
_EXPERT_INDEX = re.compile(r"\.experts\.(\d+)\.")


_EXPERTS_NUMBERED = re.compile(r"\.experts\.\d+")
_DIGIT = re.compile(r"\d")


def _module_facts(prefix: str) -> tuple:
    """What the placement rules ask of a tensor's module ``prefix`` (``model.layers.3.mlp.experts.7.up_proj``),
    asked once per module: (its last name, its tower ("vision", "audio") or None, an expert's tensor, the expert's index or
    -1, ends in ``.experts``, holds ``.experts.<digits>``, a Mamba mixer's gated norm, a vision ``attn.proj``)."""
    m = _EXPERT_INDEX.search(prefix + ".")
    return (prefix.rpartition(".")[2], _tower_of(prefix) if _TOWER.search(prefix) else None,
            ".experts." in f".{prefix}.",
            int(m.group(1)) if m else -1, prefix.endswith(".experts"), bool(_EXPERTS_NUMBERED.search(prefix)),
            prefix.rsplit(".", 1)[0].endswith(SHARDED_NORM_PARENTS) and ".mixer." in f".{prefix}.",
            prefix.endswith(".attn.proj"))


def _rule(facts: tuple, raw: str, dtype: str, shape: tuple, nb: int, bits: int, tied: bool,
          shard_vision: bool, skip_towers: tuple = ()) -> tuple | None:
    """The placement group of one tensor (rules: the module docstring): ``facts`` of its module
    (:func:`_module_facts`), ``raw`` the last part of its name, ``dtype``, ``shape`` and stored bytes ``nb``;
    ``bits`` per element of the runtime dtype unquantised floats are loaded in. None: not loaded (a tied
    ``lm_head``). A function of its arguments only, so :func:`_placements` asks it once per distinct tensor."""
    module, kind, expert, index, ends_experts, numbered, mixer_norm, attn_proj = facts
    tower = kind is not None
    leaf = raw
    if module == "experts" and "_" in raw:  # gpt-oss fused: experts.gate_up_proj_blocks (as _split reads it)
        for base in ("gate_up_proj", "down_proj"):
            if raw.startswith(base):
                module, leaf = base, raw[len(base) + 1:] or "weight"
                break
    if (leaf in _FLOAT_LEAVES or leaf.endswith("bias")) and dtype in FLOAT_DTYPES \
            and not raw.endswith("e_score_correction_bias"):
        nb = -(-math.prod(shape) * bits // 8)
    if kind in skip_towers:  # a tower vLLM does not build (its modalities all at --limit-mm-per-prompt 0)
        return ("skip", nb, kind)
    if module in VOCAB and not tower:
        if module == "lm_head" and tied:
            return None
        return ("vocab", nb, shape[0] if shape else 0)
    if expert:
        fused = ends_experts and not (numbered or _DIGIT.match(raw))
        out_ax, in_ax = _axes(leaf, fused)
        axis = out_ax if module in COLUMN else in_ax if module in ROW else None
        return ("expert", nb, fused, _axis_len(shape, 0), index, _axis_len(shape, axis))
    if tower and not shard_vision:
        return ("whole", nb)
    if module in COLUMN or module in ROW:
        out_ax, in_ax = _axes(leaf, False)
        if module in ROW:
            return ("split", nb, _axis_len(shape, in_ax))
        if module in ("k_proj", "v_proj", "wk", "wv") and not tower:
            return ("kv", nb, _axis_len(shape, out_ax))
        if module in ("qkv_proj",) and not tower:
            return ("qkv", nb, _axis_len(shape, out_ax))
        return ("split", nb, _axis_len(shape, out_ax))
    if module == "self_attn" and leaf == "sinks":  # gpt-oss: one sink per query head, split with the heads
        return ("sharded", nb, _axis_len(shape, 0))
    if leaf in HEAD_SHARDED and module in ("linear_attn", "mixer", "self_attn"):
        axis = max(range(len(shape)), key=lambda i: shape[i]) if shape else None
        return ("sharded", nb, _axis_len(shape, axis))
    if module == "norm" and mixer_norm:
        return ("sharded", nb, _axis_len(shape, 0))
    if module == "proj" and attn_proj and tower:  # Qwen vision attention output: row
        return ("vision_row", nb, _axis_len(shape, 1))
    return ("whole", nb)


def _placements(checkpoint: Checkpoint, rt: str, tied: bool, shard_vision: bool,
                skip_towers: tuple = ()) -> tuple[dict, bool]:
    """How every tensor of ``checkpoint`` is placed, by the rules of the module docstring, before any TP / EP
    degree is chosen: ``{(rule, bytes, axis length, ...): count}`` (bytes in the runtime dtype ``rt`` for
    unquantised floats; :func:`_price` turns them into bytes on rank 0) and whether a ``lm_head`` is stored.
    Each module's name is read once (:func:`_module_facts`) and each distinct (module facts, name's last part,
    dtype, shape, bytes) placed once (:func:`_rule`): a 400,000-tensor header or a Qwen3-235B estimate of 73,000
    tensors holds a few thousand distinct ones."""
    if not isinstance(checkpoint.table, TensorTable):  # rows (an estimate): no numpy needed (the page's Pyodide)
        return _group(_counts_of_rows(checkpoint.tensors), rt, tied, shard_vision, skip_towers)
    import numpy as np

    table = checkpoint.table
    # facts once per canonical prefix (numbers but expert numbers written 0: a layer number changes no rule)
    facts_ids: dict = {}  # facts -> number
    by_canon = {c: facts_ids.setdefault(_module_facts(c[:-1] if c.endswith(".") else c), len(facts_ids))
                for c in dict.fromkeys(table.canonical_prefixes)}
    fid_of_prefix = np.array([by_canon[c] for c in table.canonical_prefixes], np.int64)
    facts_list = list(facts_ids)  # number -> facts
    # each distinct (module facts, last part, (dtype, shape, bytes)) counted at once, as one integer per row
    nl, nk = max(len(table.leaves), 1), max(len(table.kinds), 1)
    codes = (fid_of_prefix[table.prefix_of] * nl + table.leaf_of) * nk + table.kind_of if len(table) else table.kind_of
    uniq, n_of = np.unique(codes, return_counts=True)
    counts = {(c // (nl * nk), table.leaves[c // nk % nl], *table.kinds[c % nk]): n
              for c, n in zip(uniq.tolist(), n_of.tolist())}
    return _group((counts, facts_list), rt, tied, shard_vision, skip_towers)


def _counts_of_rows(tensors) -> tuple[dict, list]:
    """:func:`_placements`' counts of a table given as rows: each module's name read once, each distinct (module
    facts, name's last part, dtype, shape, bytes) counted in C."""
    split = list(map(str.rpartition, map(attrgetter("name"), tensors), repeat(".")))  # (prefix, ".", last part)
    prefixes = list(map(itemgetter(0), split))
    facts_ids: dict = {}  # facts -> number
    fid_of = {p: facts_ids.setdefault(_module_facts(p), len(facts_ids)) for p in dict.fromkeys(prefixes)}
    counts = Counter(zip(map(fid_of.__getitem__, prefixes), map(itemgetter(2), split),
                         map(attrgetter("dtype"), tensors), map(attrgetter("shape"), tensors),
                         map(attrgetter("nbytes"), tensors)))
    return counts, list(facts_ids)


def _group(counted: tuple, rt: str, tied: bool, shard_vision: bool, skip_towers: tuple) -> tuple[dict, bool]:
    """:func:`_placements`' result from ``({(facts number, last part, dtype, shape, bytes): count}, facts by number)``."""
    counts, facts_list = counted
    bits = DTYPE_BITS[rt]
    groups: dict = {}
    for (fid, raw, dtype, shape, nb), n in counts.items():
        key = _rule(facts_list[fid], raw, dtype, shape, nb, bits, tied, shard_vision, skip_towers)
        if key is not None:
            groups[key] = groups.get(key, 0) + n
    return groups, any(f[0] == "lm_head" for f in facts_list)


_PLACEMENTS: dict = {}  # id(checkpoint) -> (weakref to it, rt, tied, shard_vision, skip_towers, placements)


def _placements_of(checkpoint: Checkpoint, rt: str, tied: bool, shard_vision: bool,
                   skip_towers: tuple = ()) -> tuple[dict, bool]:
    """:func:`_placements`, remembered for the table ``checkpoint`` (the same object: a table read or estimated
    once, :func:`kvmath.model.checkpoint.read_checkpoint` / ``estimate_checkpoint``) and the same dtype, tying and
    tower rule, so the solvers' repricings and each TP degree read its tensors once."""
    import weakref

    hit = _PLACEMENTS.get(id(checkpoint))
    if hit is not None and hit[0]() is checkpoint and hit[1:5] == (rt, tied, shard_vision, skip_towers):
        return hit[5]
    from ...validate import gc_paused

    with gc_paused():  # a key per tensor group, a facts tuple per module (kvmath.validate.gc_paused)
        out = _placements(checkpoint, rt, tied, shard_vision, skip_towers)
    for k in [k for k, v in _PLACEMENTS.items() if v[0]() is None]:
        del _PLACEMENTS[k]
    if len(_PLACEMENTS) >= 16:
        _PLACEMENTS.pop(next(iter(_PLACEMENTS)))
    try:
        _PLACEMENTS[id(checkpoint)] = (weakref.ref(checkpoint), rt, tied, shard_vision, skip_towers, out)
    except TypeError:  # an object without weak references: not remembered
        pass
    return out


def _price(groups: dict, *, tp: int, expert_parallel: bool, local_experts: int, E: int, nh: int, nkv: int,
           hd: int) -> dict:
    """Bytes on rank 0 by placement (``sharded``, ``replicated``, ``vocab``, ``experts``) of :func:`_placements`'
    groups at ``tp`` ranks; with ``expert_parallel`` rank 0 holds ``local_experts`` of the ``E`` experts whole.
    ``nh`` / ``nkv`` / ``hd``: the config's query heads, KV heads and head width (QKVParallelLinear's split)."""
    kv_local = 1 if nkv and tp >= nkv else (nkv // tp if nkv else 0)
    acc = {"sharded": 0, "replicated": 0, "vocab": 0, "experts": 0}

    def shard(nb, n, size_on_rank):  # _shard of a tensor of ``nb`` bytes over an axis of length n (0: whole)
        return nb * size_on_rank(n) // n if n else nb

    def on_rank(n):  # plain split
        return -(-n // tp)

    def kv(n):
        return n * kv_local // nkv

    def qkv(n):
        total = (nh + 2 * nkv) * hd
        return n * (nh // tp + 2 * kv_local) * hd // total if n == total else on_rank(n)

    for key, count in groups.items():
        rule, nb = key[0], key[1]
        if rule == "vocab":
            rows = -(-(-(-key[2] // VOCAB_PADDING) * VOCAB_PADDING) // tp)
            acc["vocab"] += count * (nb * rows // key[2] if key[2] else nb)
        elif rule == "expert":
            _, _, fused, n0, index, n = key
            if not expert_parallel:
                acc["experts"] += count * shard(nb, n, on_rank)
            elif fused:  # the experts' axis divided over the EP ranks
                acc["experts"] += count * shard(nb, n0, lambda n: local_experts * n // E if E else n)
            elif index < local_experts:  # rank 0 holds experts 0 .. local_experts - 1 (-1: no index in the name)
                acc["experts"] += count * nb
        elif rule == "skip":  # not loaded: counted apart for the note
            acc.setdefault("skipped", {})
            acc["skipped"][key[2]] = acc["skipped"].get(key[2], 0) + count * nb
        elif rule == "whole":
            acc["replicated"] += count * nb
        elif rule in ("split", "kv", "qkv"):
            f = on_rank if rule == "split" or (rule == "kv" and not nkv) or (rule == "qkv" and not (nkv and hd)) \
                else kv if rule == "kv" else qkv
            b = shard(nb, key[2], f)
            acc["sharded" if b < nb else "replicated"] += count * b
        elif rule == "sharded":
            acc["sharded"] += count * shard(nb, key[2], on_rank)
        else:  # vision_row
            acc["sharded" if tp > 1 else "replicated"] += count * shard(nb, key[2], on_rank)
    return acc
ONLINE_FP8_MARLIN_BELOW_SM = 89
"""Below sm_89 a card has no FP8 tensor cores and vLLM runs FP8 linears with the Marlin weight-only kernel
(model_executor/kernels/linear selection of ``init_fp8_linear_kernel``, quantization/fp8.py ``use_marlin``, 0.19.0)."""


ONLINE_FP8_FUSED_INTO = {"k_proj": "qkv_proj", "v_proj": "qkv_proj", "up_proj": "gate_up_proj"}
"""Checkpoint linears vLLM loads into a fused layer (the model files' ``packed_modules_mapping``, e.g. llama.py
``{"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}``): online FP8 quantises
the fused weight once, so they add no scale of their own (the q_proj / gate_proj entry carries the layer's)."""


def online_fp8_checkpoint(checkpoint: Checkpoint, *, marlin: bool = False, rt: str = "bf16") -> Checkpoint:
    """The tensor table vLLM holds after ``--quantization fp8`` of an unquantised checkpoint (online FP8).

    vLLM 0.19.0 quantization/fp8.py: ``Fp8Config.get_quant_method`` (l.174-203) gives every ``LinearBase`` layer
    ``Fp8OnlineLinearMethod`` (no ``ignored_layers`` from the command line); the embedding and ``lm_head``
    (``VocabParallelEmbedding`` / ``ParallelLMHead``, not ``LinearBase``) and the norms keep the model dtype.
    ``Fp8OnlineLinearMethod`` (l.500-563) creates the weight on the meta device, materialises each layer while
    loading (model_loader/reload/layerwise.py ``initialize_online_processing``) and its
    ``process_weights_after_loading`` quantises it with ``ops.scaled_fp8_quant(layer.weight, scale=None)``:
    float8_e4m3fn [out, in] plus one float32 ``weight_scale`` per layer (per tensor, dynamic: no input_scale).
    So each linear ``.weight`` becomes 1 byte per element (``weights_per_rank`` places it as the fp8 checkpoints'
    tensors) and each vLLM layer gains a scalar ``.weight_scale`` (fused layers one: ``ONLINE_FP8_FUSED_INTO``);
    biases stay in the model dtype. Because the quantisation is
    per layer during loading, the load never holds the whole model in 16 bits: the profiled baseline after
    loading is the fp8 model (P129: "Model loading took 8.49 GiB").

    ``marlin`` (a card below sm_89, ``ONLINE_FP8_MARLIN_BELOW_SM``): ``MarlinFP8ScaledMMLinearKernel``
    repacks the weight (``gptq_marlin_repack`` with 8 bits: the same K x N bytes) and turns the per-tensor scale
    into a per-channel one in the model dtype (quantization/utils/marlin_utils_fp8.py
    ``prepare_fp8_layer_for_marlin``: ``scales.view(1, 1).repeat_interleave(part_size_n, 1)``, ``.to(orig_dtype)``):
    ``.weight_scale`` [out] in ``rt``. Its per-layer ``workspace`` (``marlin_make_workspace_new``, a few KiB) is
    not counted.

    Raises KvMathError for a table with expert (MoE) tensors (``Fp8OnlineMoEMethod`` is not modelled) or an
    already quantised table."""
    if checkpoint.quant_method:
        raise KvMathError(f"--quantization fp8 on a {checkpoint.quant_method} checkpoint: vLLM refuses a method that "
                          "is not the checkpoint's own")
    out = []
    for t in checkpoint.tensors:
        prefix, _, leaf = t.name.rpartition(".")
        facts = _module_facts(prefix)
        module, tower, expert = facts[0], facts[1], facts[2]
        if expert:
            raise KvMathError("--quantization fp8 (online) on a MoE checkpoint: Fp8OnlineMoEMethod's expert layout "
                              "is not modelled; give an FP8 checkpoint or the size vLLM loads (--weights-gb)")
        if tower is None and leaf == "weight" and (module in COLUMN or module in ROW) and t.dtype in FLOAT_DTYPES:
            n = math.prod(t.shape)
            out.append(type(t)(t.name, "f8_e4m3", t.shape, n, t.file))
            if marlin:
                rows = t.shape[0] if t.shape else 1
                out.append(type(t)(f"{prefix}.weight_scale", rt, (rows,), rows * DTYPE_BITS[rt] // 8, t.file))
            elif module not in ONLINE_FP8_FUSED_INTO:
                out.append(type(t)(f"{prefix}.weight_scale", "f32", (), 4, t.file))
        else:
            out.append(t)
    return Checkpoint(tuple(out), checkpoint.source, checkpoint.estimated, "fp8", None,
                      dict(checkpoint.metadata))


def weights_per_rank(checkpoint: Checkpoint, config: dict, *, tp: int = 1, enable_expert_parallel: bool = False,
                     dp: int = 1, dtype: str = "auto", shard_vision: bool = True,
                     skip_towers: tuple[str, ...] = ()) -> RankWeights:
    """Weight bytes on rank 0 of a ``tp``-way (x ``dp`` with expert parallelism) vLLM deployment.

    ``checkpoint`` is a tensor table (read from safetensors headers or estimated from config.json);
    ``config`` the model's config.json (for heads, vocabulary and ``tie_word_embeddings``). Rules: the
    module docstring. ``shard_vision=False`` keeps the vision / audio tower whole on every rank (vLLM's
    ``--mm-encoder-tp-mode data``). ``skip_towers`` ("vision", "audio"): towers vLLM does not build
    (:data:`VISION_TOWER_MODULES`), their tensors not counted. The tensors are placed once per table
    (:func:`_placements_of`) and the placements priced at ``tp`` (:func:`_price`).
    """
    if not isinstance(tp, int) or isinstance(tp, bool) or not 1 <= tp <= 4096:
        raise KvMathError(f"tensor_parallel_size must be an integer in 1..4096, got {tp!r}")
    if not isinstance(dp, int) or isinstance(dp, bool) or not 1 <= dp <= 4096:
        raise KvMathError(f"data_parallel_size must be an integer in 1..4096, got {dp!r}")
    tc = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    nh = tc.get("num_attention_heads") or 0
    nkv = tc.get("num_key_value_heads") or nh
    hd = tc.get("head_dim") or ((tc.get("hidden_size") or 0) // nh if nh else 0)
    tied = tied_embeddings(config)
    E = tc.get("num_local_experts") or tc.get("num_experts") or tc.get("n_routed_experts") or 0
    ep = tp * dp if enable_expert_parallel else 1
    local_experts = (E // ep + (1 if E % ep else 0)) if E else 0
    groups, has_lm_head = _placements_of(checkpoint, _runtime_dtype(config, dtype), tied, shard_vision,
                                         tuple(skip_towers))
    acc = _price(groups, tp=tp, expert_parallel=enable_expert_parallel, local_experts=local_experts, E=E, nh=nh,
                 nkv=nkv, hd=hd)
    skipped = acc.pop("skipped", {})
    notes = []
    for kind, n in skipped.items():
        notes.append(f"the {kind} tower is not loaded ({n / 2**30:.2f} GiB of its tensors; every modality it serves has "
                     "a --limit-mm-per-prompt of 0, interfaces.py _mark_tower_model)")
    if tied and not has_lm_head:
        notes.append("tie_word_embeddings: the LM head is the embedding (no second copy)")
    if checkpoint.estimated:
        held = checkpoint.source.partition("; ")[2].rstrip(")") if "; " in checkpoint.source else ""
        notes.append("tensor table estimated from config.json (not read from safetensors headers"
                     + (f": {held}" if held else "") + ")")
    notes.extend(checkpoint.notes)
    if enable_expert_parallel and E:
        notes.append(f"expert parallelism over {ep} ranks: {local_experts} of {E} experts on rank 0")
    return RankWeights(tp=tp, ep=ep, checkpoint_bytes=checkpoint.total_bytes, notes=tuple(notes), **acc)


def check_gptq_loads(config: dict, vllm_version=None) -> None:
    """Refuse a GPTQ checkpoint (``quantization_config.quant_method`` "gptq") that vLLM ``vllm_version`` does not load,
    as it refuses it: from 0.24 (``release.gptq_marlin_only``) "gptq" is quantization/auto_gptq.py
    ``AutoGPTQConfig``, which reads ``bits``, ``group_size``, ``desc_act`` and ``sym`` (``get_from_keys``: "Cannot find
    any of ['sym'] in the model's quantization config.") and takes (bits, sym) in ``TYPE_MAP`` = {(4, True),
    (8, True)} only ("Unsupported quantization config: bits=3, sym=True"): 2- and 3-bit and asymmetric GPTQ do not
    load. Before, the plain GPTQ kernel (gptq.py, 0.19.0: bits 2, 3, 4, 8) loads them as stored and nothing is
    refused here. KvMathError, one line."""
    tc = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    q = config.get("quantization_config") or tc.get("quantization_config")
    if not isinstance(q, dict) or str(q.get("quant_method") or "").lower() != "gptq":
        return
    rel = release(vllm_version)
    if not rel.gptq_marlin_only:
        return
    for key in ("bits", "group_size", "desc_act", "sym"):
        if key not in q:
            raise KvMathError(f"quantization_config (gptq) has no {key}: vLLM {rel.name} refuses it (quantization/"
                              f"auto_gptq.py AutoGPTQConfig.from_config: \"Cannot find any of ['{key}'] in the model's "
                              "quantization config.\")")
    bits, sym = q["bits"], q["sym"]
    if (bits, sym) not in ((4, True), (8, True)) or isinstance(bits, bool):  # TYPE_MAP's dict lookup: sym 1 is True
        raise KvMathError(f"GPTQ bits={bits!r}, sym={sym!r}: vLLM {rel.name} does not load it (quantization/"
                          f"auto_gptq.py AutoGPTQConfig: \"Unsupported quantization config: bits={bits}, sym={sym}\"; "
                          "its kernels take 4- and 8-bit symmetric GPTQ only)")


def rotary_cache_bytes(config: dict, *, dtype: str = "auto") -> int:
    """Bytes of vLLM's rotary ``cos_sin_cache`` buffer(s): ``[max_position, rotary_dim]`` in the model dtype
    (``rotary_embedding.py``; YaRN multiplies the positions by its ``factor``). Models with a second
    rope for their sliding layers (Gemma 3 / 4: ``rope_local_base_freq`` or ``rope_parameters`` per layer
    type) have two. Replicated on every rank."""
    tc = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    nh = tc.get("num_attention_heads") or 0
    hd = tc.get("head_dim") or ((tc.get("hidden_size") or 0) // nh if nh else 0)
    pos = tc.get("max_position_embeddings") or 0
    if not hd or not pos:
        return 0
    rot = int(hd * float(tc.get("partial_rotary_factor") or 1.0))
    rs = tc.get("rope_scaling") or {}
    if isinstance(rs, dict) and str(rs.get("rope_type") or rs.get("type")) == "yarn":
        orig = rs.get("original_max_position_embeddings") or pos
        pos = int(orig * float(rs.get("factor") or 1))
    rt = _runtime_dtype(config, dtype)
    n = 2 if ("rope_local_base_freq" in tc or isinstance(tc.get("rope_parameters"), dict)
              and "sliding_attention" in tc.get("rope_parameters", {})) else 1
    return n * pos * rot * DTYPE_BITS[rt] // 8


# MXFP4 MoE backends (gpt-oss experts) as vLLM 0.20.0-0.27.0 pick them on a GPU with default bf16 activations
# (fused_moe/oracle/mxfp4.py ``_get_priority_backends_for_gpt_oss`` and each kernel's ``_supports_current_device``:
# FlashInfer TRT-LLM on the sm_100 family, the vendored Triton kernels on sm_90 (and sm_100, which takes TRT-LLM
# first), FlashInfer CUTLASS bf16 only on sm_90 after Triton, Marlin from sm_75; ROCm its AITER kernels), and the
# sizes ``mxfp4_round_up_hidden_size_and_intermediate_size`` pads (hidden, intermediate per partition) to before
# ``create_weights`` allocates the experts. 0.27.0 pads TRT-LLM's intermediate to 128 instead of 256.
MXFP4_PADDING = {"marlin": (256, 128), "triton": (1, 64), "flashinfer_trtllm": (256, 256), "rocm": (256, 256)}
MXFP4_MIN_CC = 75  # experts/marlin_moe.py MarlinExperts._supports_current_device: has_device_capability((7, 5))
# The Triton kernels' swizzled layout (triton_kernels HopperMXValueLayout / HopperMXScaleLayout) holds more than
# the padded experts: "Model loading took 64.38 GiB" for gpt-oss-120b on one H100 (vllm-project/vllm#33155,
# "Using Triton backend"), 3.60 GiB above the 56.80 GiB of MXFP4 expert tensors plus the rest. The ratio is fitted
# to that one log (not derived from the layout code); gpt-oss-20b's H100 log (13.47 GiB, llm-d config explorer)
# checks it (tests/test_checkpoint.py).
MXFP4_TRITON_FITTED_RATIO = 0.0633


def mxfp4_backend(compute_capability: int | None, vendor: str | None) -> str | None:
    """The MXFP4 MoE backend vLLM (0.20.0-0.27.0) runs gpt-oss experts with on a card: ``"marlin"``,
    ``"triton"``, ``"flashinfer_trtllm"``, ``"rocm"`` (any AMD card, ``vendor`` "amd"); None for a card whose
    kernel is not known (a custom card: ``compute_capability`` None; an Apple GPU, which vLLM does not run).
    ``compute_capability`` as ``major * 10 + minor`` (86 = sm_86). Rules: ``MXFP4_PADDING``'s comment.
    Raises KvMathError for an NVIDIA card below sm_75 (vLLM: "No MXFP4 MoE backend supports the deployment
    configuration")."""
    v = str(vendor or "nvidia").lower()
    if v == "amd":
        return "rocm"
    if v != "nvidia" or compute_capability is None:
        return None
    cc = int(compute_capability)
    if 100 <= cc < 110:
        return "flashinfer_trtllm"
    if cc == 90:
        return "triton"
    if cc >= MXFP4_MIN_CC:
        return "marlin"
    raise KvMathError(f"vLLM has no MXFP4 MoE kernel for sm_{cc} (Marlin needs sm_75 or newer; fused_moe/oracle/"
                      "mxfp4.py: 'No MXFP4 MoE backend supports the deployment configuration')")


def mxfp4_kernel_bytes(config: dict, backend: str, *, tp: int = 1, enable_expert_parallel: bool = False, dp: int = 1,
                       vllm_version: str | tuple | None = None) -> tuple[int, str]:
    """Bytes vLLM's MXFP4 expert allocation on rank 0 holds beyond the checkpoint's expert tensors, and a note.

    vLLM allocates each MoE layer's ``w13_weight`` uint8 [E_local, 2 I', H' / 2], ``w13_weight_scale`` uint8
    [E_local, 2 I', H' / 32], ``w13_bias`` bf16 [E_local, 2 I'], ``w2_weight`` [E_local, H', I' / 2],
    ``w2_weight_scale`` [E_local, H', I' / 32], ``w2_bias`` bf16 [E_local, H'] (quantization/mxfp4.py
    ``Mxfp4MoEMethod.create_weights``), where ``I'`` / ``H'`` are the intermediate size per partition
    (``intermediate_size / tp``; whole with expert parallelism) and ``hidden_size`` rounded up to the backend's
    alignment (``MXFP4_PADDING``). The result is that allocation minus the same at the unpadded sizes, plus the
    Triton backend's fitted layout overhead (``MXFP4_TRITON_FITTED_RATIO``). Config keys: ``hidden_size``,
    ``intermediate_size``, ``num_local_experts``, ``num_hidden_layers``."""
    tc = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    H, I = int(tc.get("hidden_size") or 0), int(tc.get("intermediate_size") or 0)
    E, L = int(tc.get("num_local_experts") or 0), int(tc.get("num_hidden_layers") or 0)
    if not (H and I and E and L):
        return 0, ""
    ep = tp * dp if enable_expert_parallel else 1
    e_local = -(-E // ep)
    ip = I if enable_expert_parallel else I // tp
    h_align, i_align = MXFP4_PADDING[backend]
    if backend == "flashinfer_trtllm" and release(vllm_version).trtllm_mxfp4_intermediate_128:
        i_align = 128
    hp, ipp = -(-H // h_align) * h_align, -(-ip // i_align) * i_align

    def per_expert(h, i):  # values (4 bits), E8M0 scales per 32, bf16 biases
        return 3 * h * i // 2 + 3 * h * i // 32 + 2 * (2 * i) + 2 * h

    pad = L * e_local * (per_expert(hp, ipp) - per_expert(H, ip))
    fitted = round(MXFP4_TRITON_FITTED_RATIO * L * e_local * per_expert(hp, ipp)) if backend == "triton" else 0
    words = {"marlin": "Marlin", "triton": "Triton", "flashinfer_trtllm": "FlashInfer TRT-LLM", "rocm": "ROCm"}[backend]
    note = (f"MXFP4 experts on vLLM's {words} backend: hidden {H} -> {hp}, intermediate per partition {ip} -> {ipp} "
            f"(+{pad / 2**30:.2f} GiB per rank; fused_moe/oracle/mxfp4.py)" if pad else
            f"MXFP4 experts on vLLM's {words} backend: no padding at hidden {H}, intermediate per partition {ip}")
    if fitted:
        note += (f", plus {fitted / 2**30:.2f} GiB the Triton kernels' swizzled layout holds (fitted to one public H100 "
                 "log, not derived)")
    elif backend in ("flashinfer_trtllm", "rocm"):
        note += "; the kernel's weight shuffle after loading is not derived and no public log checks it"
    return pad + fitted, note


def loaded_bytes_per_rank(checkpoint: Checkpoint, config: dict, *, mxfp4_backend: str | None = None,
                          vllm_version: str | tuple | None = None, online_fp8: str | None = None,
                          **kw) -> RankWeights:
    """What vLLM's "Model loading took X GiB" counts on rank 0: :func:`weights_per_rank` plus the rotary
    cache buffers, plus, for an MXFP4 checkpoint (gpt-oss) on a known ``mxfp4_backend``
    (:func:`mxfp4_backend`), the experts' kernel padding (:func:`mxfp4_kernel_bytes`, in ``experts``). The
    hook ``kvmath.engines.vllm.budget.budget()`` calls for its weights term. ``online_fp8`` ("native", or
    "marlin" below sm_89): ``--quantization fp8`` of an unquantised checkpoint, priced on the table
    :func:`online_fp8_checkpoint` makes of it. Bytes. Raises KvMathError."""
    online_note = ()
    if online_fp8:
        checkpoint = online_fp8_checkpoint(checkpoint, marlin=online_fp8 == "marlin",
                                           rt=_runtime_dtype(config, kw.get("dtype", "auto")))
        online_note = (("online FP8 (--quantization fp8 of the unquantised checkpoint): linear weights float8_e4m3 "
                        "with one float32 scale each, embeddings / lm_head / norms in the model dtype "
                        "(quantization/fp8.py Fp8OnlineLinearMethod, vLLM 0.19.0)")
                       + ("; Marlin below sm_89: per-channel scales in the model dtype (marlin_utils_fp8.py)"
                          if online_fp8 == "marlin" else ""),)
    w = weights_per_rank(checkpoint, config, **kw)
    buf = rotary_cache_bytes(config, dtype=kw.get("dtype", "auto"))
    notes, experts = w.notes + online_note, w.experts
    if online_fp8:
        pass
    elif checkpoint.quant_method == "mxfp4":
        if mxfp4_backend is None:
            notes += ("no MXFP4 kernel known for this card (a custom card, or no vLLM kernel), so the experts' kernel "
                      "padding is not applied (Marlin adds several percent of the expert bytes); pass --card",)
        else:
            extra, note = mxfp4_kernel_bytes(config, mxfp4_backend, tp=kw.get("tp", 1), dp=kw.get("dp", 1),
                                             enable_expert_parallel=kw.get("enable_expert_parallel", False),
                                             vllm_version=vllm_version)
            experts += extra
            notes += (note,) if note else ()
    elif checkpoint.quant_method:
        notes += ("Marlin repacking after loading not modelled",)
    return RankWeights(w.tp, w.ep, w.sharded, w.replicated, w.vocab, experts, buf, w.checkpoint_bytes, notes)


def weights_from_config(config: dict, **kw) -> RankWeights:
    """:func:`loaded_bytes_per_rank` of the checkpoint estimated from ``config`` alone."""
    from ...model.checkpoint import estimate_checkpoint

    return loaded_bytes_per_rank(estimate_checkpoint(config), config, **kw)


def gib(nbytes: int) -> float:
    return nbytes / 2**30


__all__ = ["RankWeights", "weights_per_rank", "loaded_bytes_per_rank", "rotary_cache_bytes", "weights_from_config",
           "mxfp4_backend", "mxfp4_kernel_bytes", "VISION_TOWER_MODULES", "AUDIO_TOWER_MODULES",
           "VOCAB_PADDING"]
