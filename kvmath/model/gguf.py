"""Read a ``.gguf`` file's header (metadata and tensor table) into kvmath's Architecture and weight bytes.

Only the header is read (``gguf.GGUFReader`` maps the file; tensor data is never touched), so a
40 GB model file costs a few milliseconds.

Design: the GGUF metadata is translated into a Hugging Face style config dict (HF key names, the
same ``model_type`` values transformers uses) and handed to :func:`kvmath.load_architecture`, so one
loader, with one set of layer rules, serves ``config.json`` and ``.gguf`` input alike. The
translation follows how llama.cpp itself reads the keys (vendored llama.cpp 0c1e570, as shipped in
the llama-cpp-python 0.3.36 sdist):

- ``src/llama-model.cpp`` ``load_hparams``: ``{arch}.block_count`` counts every block, including
  ``{arch}.nextn_predict_layers`` multi-token-prediction blocks at the end (``n_layer() =
  n_layer_all - n_layer_nextn``); ``attention.head_count`` / ``attention.head_count_kv`` are a scalar
  or one value per block (``get_key_or_arr``), ``head_count_kv`` defaults to ``head_count``;
  ``attention.key_length`` / ``value_length`` default to ``embedding_length / head_count``;
  ``attention.key_length_swa`` / ``value_length_swa`` default to the full-layer widths.
- ``src/models/gemma4.cpp``: ``attention.sliding_window_pattern`` is one bool per block (true =
  sliding), ``attention.shared_kv_layers`` the number of trailing blocks that own no cache.
- ``src/models/qwen3next.cpp`` / ``qwen35.cpp`` / ``qwen35moe.cpp``: Gated DeltaNet layers read
  ``ssm.conv_kernel``, ``ssm.state_size`` (= key and value head width), ``ssm.group_count`` (= key
  heads), ``ssm.time_step_rank`` (= value heads), ``ssm.inner_size`` (= value heads x width); the
  recurrent layers are ``attention.recurrent_layers`` (one bool per block) when present, else every
  layer ``i`` with ``(i + 1) % full_attention_interval != 0`` (default 4).
- Gemma 2 and gpt-oss set ``swa_pattern(2)``: even-indexed layers slide (``llama_hparams::
  set_swa_pattern``), as transformers builds their ``layer_types``.

Weight bytes come from the tensor table (each tensor's ``n_bytes``), split the way llama.cpp
places them (``src/llama-model.cpp`` ``load_tensors``; ``common/common.h``):

- ``input``: ``token_embd.*`` (and Gemma's ``per_layer_token_embd``): "there is very little benefit
  to offloading the input layer, so always keep it on the CPU";
- ``experts``: tensors matching ``LLM_FFN_EXPS_REGEX`` = ``\\.ffn_(up|down|gate|gate_up)_(ch|)exps``,
  the ones ``--n-cpu-moe N`` keeps in system RAM for blocks ``0 .. N-1`` and ``--cpu-moe`` for all;
- ``attention``: ``attn_*`` and ``ssm_*`` tensors of a block (softmax and linear attention);
- ``other``: the rest (norms, router, shared experts, dense FFN, output head);
- ``mtp``: tensors of the ``nextn_predict_layers`` blocks, which llama.cpp skips unless a
  multi-token-prediction draft context is created.

When the file has no ``output.weight`` (tied embeddings), llama.cpp loads ``token_embd.weight`` a
second time for the output layer (``TENSOR_DUPLICATED``) on the output device; ``output_bytes``
records that copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KvMathError, choices
from .hf import architecture_from_config
from .specs import Architecture

# GGUF general.architecture -> the transformers model_type kvmath's config loader knows.
# Entries marked "same cache layout" map a model type kvmath has no family for onto one whose
# attention cache is identical (the difference is in the MLP, which a cache does not see).
GGUF_ARCHES: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen2moe": "qwen2",  # same cache layout as qwen2 (MoE MLP)
    "qwen3": "qwen3",
    "qwen3moe": "qwen3",  # same cache layout as qwen3 (MoE MLP)
    "gemma2": "gemma2",
    "gemma4": "gemma4_text",
    "gpt-oss": "gpt_oss",
    "qwen3next": "qwen3_next",
    "qwen35": "qwen3_5_text",
    "qwen35moe": "qwen3_5_moe_text",
}
_SAME_LAYOUT_NOTE = {"qwen2moe": "qwen2", "qwen3moe": "qwen3"}
_HYBRID = ("qwen3next", "qwen35", "qwen35moe")

EXPERT_REGEX = re.compile(r"\.ffn_(up|down|gate|gate_up)_(ch|)exps")
"""``LLM_FFN_EXPS_REGEX`` of llama.cpp ``common/common.h``: the tensors ``--n-cpu-moe`` moves."""

_BLOCK = re.compile(r"^blk\.(\d+)\.")


@dataclass(frozen=True)
class WeightBytes:
    """Bytes of a model's weight tensors, by where llama.cpp puts them (exact, from a tensor table).

    ``experts_per_block[i]`` is block ``i``'s expert-tensor bytes (``--n-cpu-moe`` unit). ``mtp`` is
    kept apart: llama.cpp does not load those blocks for the main context. ``output_bytes`` is the
    extra copy of the embedding for a tied output head (0 when the file has ``output.weight``).
    """

    input: int
    attention: int
    experts: int
    other: int
    mtp: int = 0
    output_bytes: int = 0
    experts_per_block: tuple[int, ...] = ()
    source: str = ""

    @property
    def total(self) -> int:
        """Every tensor in the file (the MTP blocks included, the tied-output copy not)."""
        return self.input + self.attention + self.experts + self.other + self.mtp

    @property
    def n_blocks(self) -> int:
        return len(self.experts_per_block)

    def split(self, n_cpu_moe: int = 0, *, cpu_moe: bool = False) -> tuple[int, int]:
        """(GPU bytes, system-RAM bytes) with every layer offloaded (``-ngl all``) and ``--n-cpu-moe N``.

        RAM holds the input embedding and the expert tensors of blocks ``0 .. N-1`` (all blocks with
        ``cpu_moe``); the GPU holds everything else plus the tied output copy. MTP blocks are left
        out of both.
        """
        if isinstance(n_cpu_moe, bool) or not isinstance(n_cpu_moe, int) or n_cpu_moe < 0:
            raise KvMathError(f"n_cpu_moe must be an integer >= 0, got {n_cpu_moe!r}")
        n = len(self.experts_per_block) if cpu_moe else min(n_cpu_moe, len(self.experts_per_block))
        ram_experts = sum(self.experts_per_block[:n])
        gpu = self.attention + self.other + self.output_bytes + (self.experts - ram_experts)
        ram = self.input + ram_experts
        return gpu, ram


@dataclass(frozen=True)
class GGUFModel:
    """What kvmath reads from one ``.gguf`` header."""

    path: str
    gguf_arch: str
    config: dict
    architecture: Architecture
    weights: WeightBytes
    metadata: dict = field(default_factory=dict, compare=False, hash=False)


# ---------------------------------------------------------------------------------------------------
# reading


def _open(path: str | Path):
    import gguf

    p = Path(path)
    if not p.is_file():
        raise KvMathError(f"{p}: no such .gguf file")
    try:
        return gguf.GGUFReader(str(p), "r")
    except Exception as e:  # gguf raises ValueError / struct.error / OSError on bad input
        raise KvMathError(f"{p}: not a readable GGUF file ({type(e).__name__}: {e})") from None


def _metadata(reader) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, fld in reader.fields.items():
        if name.startswith("tokenizer.ggml.") and name not in ("tokenizer.ggml.model",):
            continue  # vocabularies are large and say nothing about the cache
        try:
            out[name] = fld.contents()
        except Exception:  # pragma: no cover - malformed field
            continue
    return out


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The GGUF key/value metadata of ``path`` (tokenizer arrays left out), as Python values."""
    return _metadata(_open(path))


def gguf_to_hf_config(meta: dict[str, Any], *, tensor_names: set[str] | None = None) -> dict:
    """Translate GGUF metadata into a Hugging Face style config dict kvmath's loader reads.

    ``tensor_names`` (optional) lets Gemma 4's ``attention_k_eq_v`` be read from the tensor table: a
    full-attention block without ``attn_v.weight`` computes V from the K projection. Raises
    KvMathError for an architecture kvmath cannot map, naming the supported ones.
    """
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise KvMathError("GGUF has no general.architecture; cannot tell the layer layout")
    if arch not in GGUF_ARCHES:
        raise KvMathError(
            f"GGUF architecture {arch!r} is not supported: kvmath would need its per-layer cache layout; "
            f"supported GGUF architectures: {choices(sorted(GGUF_ARCHES))}"
        )

    def key(name, default=None, *, required=False):
        full = f"{arch}.{name}"
        if full in meta:
            return meta[full]
        if required:
            raise KvMathError(f"GGUF ({arch}) is missing {full}")
        return default

    n_all = _int(key("block_count", required=True), f"{arch}.block_count")
    n_nextn = _int(key("nextn_predict_layers", 0), f"{arch}.nextn_predict_layers")
    n_layer = n_all - n_nextn
    if n_layer < 1:
        raise KvMathError(f"GGUF {arch}: block_count {n_all} leaves no decoder layer after {n_nextn} nextn layers")
    n_embd = _int(key("embedding_length", required=True), f"{arch}.embedding_length")
    heads = _per_layer(key("attention.head_count", required=True), n_all, f"{arch}.attention.head_count")
    kv_raw = key("attention.head_count_kv")
    kv = _per_layer(kv_raw, n_all, f"{arch}.attention.head_count_kv") if kv_raw is not None else list(heads)
    n_head = heads[0]
    if len(set(heads[:n_layer])) != 1:
        raise KvMathError(f"GGUF {arch}: per-layer attention.head_count {sorted(set(heads))} is not supported")
    k_len = _int(key("attention.key_length", n_embd // n_head), f"{arch}.attention.key_length")
    v_len = _int(key("attention.value_length", n_embd // n_head), f"{arch}.attention.value_length")
    ctx = key("context_length")

    cfg: dict[str, Any] = {
        "model_type": GGUF_ARCHES[arch],
        "num_hidden_layers": n_layer,
        "hidden_size": n_embd,
        "num_attention_heads": n_head,
        "head_dim": k_len,
    }
    if ctx is not None:
        cfg["max_position_embeddings"] = _int(ctx, f"{arch}.context_length")
    if key("expert_count"):
        cfg["num_experts"] = _int(key("expert_count"), f"{arch}.expert_count")
        if key("expert_used_count") is not None and not isinstance(key("expert_used_count"), list):
            cfg["num_experts_per_tok"] = _int(key("expert_used_count"), f"{arch}.expert_used_count")
    if key("expert_feed_forward_length") is not None and not isinstance(key("expert_feed_forward_length"), list):
        cfg["moe_intermediate_size"] = _int(key("expert_feed_forward_length"), f"{arch}.expert_feed_forward_length")
    if key("vocab_size") is not None:
        cfg["vocab_size"] = _int(key("vocab_size"), f"{arch}.vocab_size")

    if arch == "gemma4":
        pattern = key("attention.sliding_window_pattern", required=True)
        if not isinstance(pattern, list) or len(pattern) < n_layer:
            raise KvMathError(f"GGUF gemma4: attention.sliding_window_pattern must list {n_layer} booleans")
        swa = [bool(x) for x in pattern[:n_layer]]
        kv_swa = {kv[i] for i in range(n_layer) if swa[i]}
        kv_full = {kv[i] for i in range(n_layer) if not swa[i]}
        if len(kv_swa) > 1 or len(kv_full) > 1:
            raise KvMathError(
                f"GGUF gemma4: head_count_kv varies within one layer type (sliding {sorted(kv_swa)}, "
                f"full {sorted(kv_full)}); kvmath's Gemma 4 layout has one count per type"
            )
        k_swa = _int(key("attention.key_length_swa", k_len), f"{arch}.attention.key_length_swa")
        v_swa = _int(key("attention.value_length_swa", v_len), f"{arch}.attention.value_length_swa")
        if k_swa != v_swa or k_len != v_len:
            raise KvMathError("GGUF gemma4: K and V head widths differ; llama.cpp requires them equal for Gemma 4")
        full_layers = [i for i in range(n_layer) if not swa[i]]
        k_eq_v = bool(tensor_names is not None and full_layers
                      and all(f"blk.{i}.attn_v.weight" not in tensor_names for i in full_layers))
        sw_kv = kv_swa.pop() if kv_swa else kv[0]
        full_kv = kv_full.pop() if kv_full else sw_kv
        if full_kv != sw_kv and not k_eq_v:
            # transformers' Gemma4TextConfig only reads num_global_key_value_heads with attention_k_eq_v;
            # the cache does not depend on the flag (V is stored either way), so it is set to keep the heads.
            k_eq_v = True
        cfg.update(
            layer_types=["sliding_attention" if s else "full_attention" for s in swa],
            num_key_value_heads=sw_kv,
            head_dim=k_swa,
            global_head_dim=k_len,
            num_global_key_value_heads=full_kv,
            attention_k_eq_v=k_eq_v,
            sliding_window=_int(key("attention.sliding_window", required=True), f"{arch}.attention.sliding_window"),
            num_kv_shared_layers=_int(key("attention.shared_kv_layers", 0), f"{arch}.attention.shared_kv_layers"),
        )
        return cfg

    if v_len != k_len:
        raise KvMathError(
            f"GGUF {arch}: key_length {k_len} != value_length {v_len}; kvmath's {GGUF_ARCHES[arch]} layout "
            "has one head width"
        )

    if arch in _HYBRID:
        attn_kv = {kv[i] for i in range(n_layer)}
        recurrent = key("attention.recurrent_layers")
        if recurrent is not None:
            if not isinstance(recurrent, list) or len(recurrent) < n_layer:
                raise KvMathError(f"GGUF {arch}: attention.recurrent_layers must list {n_layer} booleans")
            types = ["linear_attention" if r else "full_attention" for r in recurrent[:n_layer]]
        else:
            interval = _int(key("full_attention_interval", 4), f"{arch}.full_attention_interval")
            types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n_layer)]
        full_kv = {kv[i] for i in range(n_layer) if types[i] == "full_attention"} or attn_kv
        if len(full_kv) > 1:
            raise KvMathError(f"GGUF {arch}: head_count_kv differs between attention layers {sorted(full_kv)}")
        d_state = _int(key("ssm.state_size", required=True), f"{arch}.ssm.state_size")
        n_group = _int(key("ssm.group_count", required=True), f"{arch}.ssm.group_count")
        dt_rank = _int(key("ssm.time_step_rank", required=True), f"{arch}.ssm.time_step_rank")
        d_inner = _int(key("ssm.inner_size", required=True), f"{arch}.ssm.inner_size")
        if d_inner != dt_rank * d_state:
            raise KvMathError(
                f"GGUF {arch}: ssm.inner_size {d_inner} != ssm.time_step_rank {dt_rank} x ssm.state_size {d_state}; "
                "llama.cpp's Gated DeltaNet takes value heads = time_step_rank of width state_size"
            )
        cfg.update(
            layer_types=types,
            num_key_value_heads=full_kv.pop(),
            linear_num_key_heads=n_group,
            linear_num_value_heads=dt_rank,
            linear_key_head_dim=d_state,
            linear_value_head_dim=d_state,
            linear_conv_kernel_dim=_int(key("ssm.conv_kernel", required=True), f"{arch}.ssm.conv_kernel"),
            mamba_ssm_dtype="float32",  # llama.cpp keeps the recurrent state in f32 (create_memory)
            mtp_num_hidden_layers=n_nextn,
        )
        return cfg

    kv_set = set(kv[:n_layer])
    if len(kv_set) != 1:
        raise KvMathError(
            f"GGUF {arch}: per-layer attention.head_count_kv {sorted(kv_set)} is not supported for "
            f"{GGUF_ARCHES[arch]} (one KV head count for every layer)"
        )
    cfg["num_key_value_heads"] = kv_set.pop()
    window = key("attention.sliding_window")
    if arch in ("gemma2", "gpt-oss"):
        if window is None:
            raise KvMathError(f"GGUF {arch} is missing {arch}.attention.sliding_window")
        cfg["sliding_window"] = _int(window, f"{arch}.attention.sliding_window")
        cfg["layer_types"] = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n_layer)]
    # llama / mistral / qwen2 / qwen3: llama.cpp reads no window for these (src/models/llama.cpp,
    # qwen2.cpp, qwen3.cpp load_arch_hparams), so a sliding_window key, if any, is not applied.
    if cfg["model_type"] in ("qwen2", "qwen3"):
        cfg["use_sliding_window"] = False
    return cfg


def weight_bytes(tensors, *, n_layer: int | None = None, source: str = "") -> WeightBytes:
    """Split a tensor table (``(name, n_bytes)`` pairs, or gguf ReaderTensors) into WeightBytes.

    Blocks ``>= n_layer`` (multi-token-prediction blocks) are counted as ``mtp``.
    """
    pairs = [(t.name, int(t.n_bytes)) if hasattr(t, "n_bytes") else (str(t[0]), int(t[1])) for t in tensors]
    names = {n for n, _ in pairs}
    blocks = [int(m.group(1)) for n, _ in pairs if (m := _BLOCK.match(n))]
    n_blocks = (max(blocks) + 1) if blocks else 0
    if n_layer is None:
        n_layer = n_blocks
    per_block = [0] * min(n_blocks, n_layer)
    inp = att = exp = oth = mtp = 0
    embd = 0
    for name, nbytes in pairs:
        m = _BLOCK.match(name)
        if m and int(m.group(1)) >= n_layer:
            mtp += nbytes
        elif name.startswith(("token_embd.", "per_layer_token_embd.")):
            inp += nbytes
            if name == "token_embd.weight":
                embd = nbytes
        elif m and EXPERT_REGEX.search(name):
            exp += nbytes
            per_block[int(m.group(1))] += nbytes
        elif m and re.match(r"^blk\.\d+\.(attn_|ssm_)", name):
            att += nbytes
        else:
            oth += nbytes
    tied = "output.weight" not in names
    return WeightBytes(inp, att, exp, oth, mtp, embd if tied else 0, tuple(per_block), source)


def read_gguf(path: str | Path, *, name: str | None = None) -> GGUFModel:
    """Read a ``.gguf`` header: the architecture (via kvmath's config loader) and the weight bytes.

    Raises KvMathError for a missing or unreadable file and for an architecture kvmath cannot map.
    """
    reader = _open(path)
    meta = _metadata(reader)
    names = {t.name for t in reader.tensors}
    cfg = gguf_to_hf_config(meta, tensor_names=names)
    gguf_arch = meta["general.architecture"]
    label = name or meta.get("general.name") or Path(path).stem
    arch = architecture_from_config(cfg, name=str(label), source="GGUF header")
    note = f", read as {_SAME_LAYOUT_NOTE[gguf_arch]} (same cache layout)" if gguf_arch in _SAME_LAYOUT_NOTE else ""
    source = f"{Path(path).name} (GGUF {gguf_arch}{note}; header read with gguf {_gguf_version()})"
    arch = _with_source(arch, source, cfg)
    weights = weight_bytes(reader.tensors, n_layer=arch.num_hidden_layers, source=source)
    return GGUFModel(str(path), gguf_arch, cfg, arch, weights, meta)


def load_gguf_architecture(path: str | Path, *, name: str | None = None) -> Architecture:
    """The Architecture of a ``.gguf`` file (see :func:`read_gguf`)."""
    return read_gguf(path, name=name).architecture


def gguf_weight_bytes(path: str | Path) -> WeightBytes:
    """The weight bytes of a ``.gguf`` file's tensor table (see :class:`WeightBytes`)."""
    return read_gguf(path).weights


# ---------------------------------------------------------------------------------------------------
# helpers


def _with_source(arch: Architecture, source: str, cfg: dict) -> Architecture:
    from dataclasses import replace

    extras = dict(arch.extras)
    extras["hf_config"] = cfg
    return replace(arch, source=source, extras=extras)


def _gguf_version() -> str:
    try:
        from importlib.metadata import version

        return version("gguf")
    except Exception:  # pragma: no cover
        return "?"


def _int(value, what: str) -> int:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise KvMathError(f"GGUF field {what} must be an integer, got {value!r}")
    return value


def _per_layer(value, n: int, what: str) -> list[int]:
    """A GGUF scalar-or-array per-layer field as a list of n ints (llama.cpp ``get_key_or_arr``)."""
    if isinstance(value, list):
        if len(value) != n:
            raise KvMathError(f"GGUF field {what} has {len(value)} entries, block_count is {n}")
        return [_int(v, what) for v in value]
    return [_int(value, what)] * n
