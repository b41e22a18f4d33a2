"""Read a ``.gguf`` file's header (metadata and tensor table) into kvmath's Architecture and weight bytes.

Only the header is read (the file is memory-mapped; tensor data is never touched), so a 40 GB model
file costs a few milliseconds. The header is read by a bounded reader here (:func:`read_header`), not
by ``gguf.GGUFReader``, which trusts the lengths in the file: every count, array length and string
length is checked against the bytes that remain before anything loops or allocates, and a malformed
file is refused at once with one KvMathError line. ``gguf`` supplies the type tables
(``GGUFValueType``, ``GGMLQuantizationType``, ``GGML_QUANT_SIZES``). Metadata values are checked again
after translation (a ``head_count`` of 0, a ``block_count`` beyond llama.cpp's ``LLAMA_MAX_LAYERS`` (512), a
``full_attention_interval`` of 0, a per-layer array of the wrong length are refused naming the key).

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

import math
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KvMathError, choices
from .hf import architecture_from_config
from ..validate import MAX_INT, MAX_LAYERS, MAX_TOKENS, _short, check_count
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
# reading: a bounded header reader
#
# gguf.GGUFReader trusts every length and count in the file (a corrupt array count drives its loop
# and its allocations), so the header is read here instead, with gguf kept for its type tables. Each
# count, array length and string length is checked against the bytes left in the file before anything
# loops or allocates; a malformed file is refused at once with one KvMathError line. The limits follow
# llama.cpp's own reader (ggml/src/gguf.cpp) where it has one.

GGML_MAX_DIMS = 4
"""Most dimensions a tensor may have (ggml.h ``GGML_MAX_DIMS``; gguf.cpp refuses more)."""
GGML_MAX_NAME = 64
"""Tensor names are shorter than this (ggml.h ``GGML_MAX_NAME``; gguf.cpp refuses longer ones)."""
MAX_KEY_BYTES = 64 * 1024
"""Longest metadata key accepted (real keys are a few dozen bytes)."""
MAX_STRING_BYTES = 1 << 20
"""Longest metadata string value read into memory; a longer one is stepped over (:class:`UnreadValue`)."""
MAX_ARRAY_ITEMS = 1 << 16
"""Most items of a metadata array read into memory (per-layer arrays have one per block); longer
arrays, and every ``tokenizer.ggml.*`` array, are stepped over without being materialised."""
MAX_KV_COUNT = 1 << 20
"""Most metadata pairs accepted (real files have a few dozen)."""
MAX_TENSOR_COUNT = 1 << 20
"""Most tensors accepted (the largest published models have a few thousand)."""
LLAMA_MAX_LAYERS = 512
"""Most blocks a GGUF may have: llama.cpp's ``LLAMA_MAX_LAYERS`` (src/llama-hparams.h); its
``get_key_or_arr`` refuses a ``block_count`` above it, so no larger file loads in llama.cpp."""

_SCALAR_CODES = {
    "UINT8": "B", "INT8": "b", "UINT16": "H", "INT16": "h", "UINT32": "I", "INT32": "i",
    "FLOAT32": "f", "BOOL": "?", "UINT64": "Q", "INT64": "q", "FLOAT64": "d",
}
_MIN_KV_BYTES = 8 + 4 + 1  # key length, value type, smallest value
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8  # name length, n_dims, type, offset


@dataclass(frozen=True)
class UnreadValue:
    """A metadata value too large to be worth reading (stepped over, its bounds checked)."""

    kind: str
    count: int

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"<{self.kind} of {self.count:,} items, not read>"


@dataclass(frozen=True)
class GGUFTensorInfo:
    """One entry of a GGUF tensor table (no tensor data is read)."""

    name: str
    shape: tuple[int, ...]
    tensor_type: Any  # gguf.GGMLQuantizationType
    n_elements: int
    n_bytes: int
    data_offset: int


@dataclass(frozen=True)
class GGUFHeader:
    """A ``.gguf`` file's header: metadata (as Python values) and tensor table."""

    path: str
    version: int
    byte_order: str
    metadata: dict
    tensors: tuple[GGUFTensorInfo, ...]
    alignment: int
    data_offset: int
    file_size: int


def _skip_key(name: str) -> bool:
    # vocabularies are large and say nothing about the cache
    return name.startswith("tokenizer.ggml.") and name != "tokenizer.ggml.model"


class _Reader:
    """Bounds-checked reads from a buffer (an mmap of the file)."""

    def __init__(self, buf, path: str):
        import gguf

        self.gguf = gguf
        self.buf = buf
        self.size = len(buf)
        self.pos = 0
        self.order = "<"
        self.path = path
        self.types = {int(t): t for t in gguf.GGUFValueType}
        self.codes = {int(t): _SCALAR_CODES[t.name] for t in gguf.GGUFValueType if t.name in _SCALAR_CODES}
        self.sizes = {k: struct.calcsize("<" + c) for k, c in self.codes.items()}

    def fail(self, problem: str):
        raise KvMathError(f"{self.path}: not a readable GGUF file: {problem}")

    @property
    def left(self) -> int:
        return self.size - self.pos

    def need(self, nbytes: int, what: str) -> None:
        if nbytes > self.left:
            self.fail(f"{what} needs {nbytes:,} bytes at offset {self.pos:,}, only {self.left:,} remain "
                      "(truncated or corrupt)")

    def scalar(self, code: str, what: str):
        n = struct.calcsize(code)
        self.need(n, what)
        value = struct.unpack_from(self.order + code, self.buf, self.pos)[0]
        self.pos += n
        return value

    def u32(self, what: str) -> int:
        return self.scalar("I", what)

    def u64(self, what: str) -> int:
        return self.scalar("Q", what)

    def raw_string(self, what: str, cap: int) -> bytes | int:
        """The bytes of a GGUF string; its length (an int) when longer than ``cap`` (stepped over)."""
        n = self.u64(f"{what} length")
        self.need(n, f"{what} ({n:,}-byte string)")
        if n > cap:
            self.pos += n
            return n
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def value(self, vtype: int, key: str, *, keep: bool):
        """One metadata value of type ``vtype`` (the value type read from the file)."""
        if vtype in self.codes:
            return self.scalar(self.codes[vtype], f"key {key!r} value")
        if vtype not in self.types:
            self.fail(f"key {key!r} has unknown value type {vtype}")
        t = self.types[vtype]
        if t.name == "STRING":
            if not keep:
                n = self.u64(f"key {key!r} string length")
                self.need(n, f"key {key!r} ({n:,}-byte string)")
                self.pos += n
                return None
            raw = self.raw_string(f"key {key!r} value", MAX_STRING_BYTES)
            if isinstance(raw, int):
                return UnreadValue("string", raw)
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                return UnreadValue("non-UTF-8 string", len(raw))
        # ARRAY: item type, count, items
        item = self.u32(f"key {key!r} array item type")
        count = self.u64(f"key {key!r} array length")
        if item in self.codes:
            size = self.sizes[item]
            self.need(count * size, f"key {key!r} (array of {count:,} {self.types[item].name.lower()})")
            if not keep or count > MAX_ARRAY_ITEMS:
                self.pos += count * size
                return UnreadValue(f"array of {self.types[item].name.lower()}", count) if keep else None
            out = list(struct.unpack_from(f"{self.order}{count}{self.codes[item]}", self.buf, self.pos))
            self.pos += count * size
            return out
        if item not in self.types:
            self.fail(f"key {key!r} is an array of unknown value type {item}")
        if self.types[item].name != "STRING":
            self.fail(f"key {key!r} is an array of arrays, which GGUF readers (llama.cpp's too) refuse")
        # strings: every item is at least its 8-byte length
        self.need(count * 8, f"key {key!r} (array of {count:,} strings)")
        materialise = keep and count <= MAX_ARRAY_ITEMS
        out = [] if materialise else None
        unpack, buf, order = struct.unpack_from, self.buf, self.order + "Q"
        pos, size = self.pos, self.size
        for i in range(count):
            if size - pos < 8:
                self.pos = pos
                self.fail(f"key {key!r} string {i:,} of {count:,} runs past the end of the file")
            n = unpack(order, buf, pos)[0]
            pos += 8
            if n > size - pos:
                self.pos = pos
                self.fail(f"key {key!r} string {i:,} of {count:,} claims {n:,} bytes, only {size - pos:,} remain")
            if materialise:
                if n > MAX_STRING_BYTES:
                    out.append(UnreadValue("string", n))
                else:
                    try:
                        out.append(bytes(buf[pos:pos + n]).decode("utf-8"))
                    except UnicodeDecodeError:
                        out.append(UnreadValue("non-UTF-8 string", n))
            pos += n
        self.pos = pos
        if keep and not materialise:
            return UnreadValue("array of string", count)
        return out


def read_header(path: str | Path, *, file_size: int | None = None) -> GGUFHeader:
    """Read the header of ``path`` (metadata and tensor table) with every length checked.

    ``file_size``: the size in bytes of the whole file when ``path`` holds only its first bytes (a ranged
    read from the Hub, ``kvmath.hub``): tensors are checked against it instead of the bytes at hand.

    Raises KvMathError, naming the problem, for a missing, unreadable or malformed file: a bad magic
    or version, any count, length or offset reaching past the end of the file, an unknown value or
    tensor type, duplicate keys or tensor names, a bad ``general.alignment``.
    """
    import mmap

    p = Path(path)
    if not p.is_file():
        raise KvMathError(f"{p}: no such .gguf file")
    try:
        with open(p, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 24:
                raise KvMathError(f"{p}: not a readable GGUF file: {size} bytes, shorter than a GGUF header")
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except KvMathError:
        raise
    except (OSError, ValueError) as e:  # unreadable, or mmap refusing the file
        raise KvMathError(f"{p}: cannot read the file ({type(e).__name__}: {getattr(e, 'strerror', None) or e})") from None
    try:
        return _parse(buf, p, file_size)
    finally:
        buf.close()


def _parse(buf, p: Path, file_size: int | None = None) -> GGUFHeader:
    gguf = __import__("gguf")
    r = _Reader(buf, str(p))
    if bytes(buf[:4]) != b"GGUF":
        r.fail("the file does not start with the GGUF magic")
    r.pos = 4
    version = r.u32("version")
    if version & 0xFFFF == 0:  # written on a machine of the other byte order (as gguf.GGUFReader)
        r.order = ">"
        version = struct.unpack(">I", struct.pack("<I", version))[0]
    if version not in (2, 3):
        r.fail(f"GGUF version {version} is not supported (2 and 3 are)")
    tensor_count = r.u64("tensor count")
    kv_count = r.u64("metadata key count")
    if kv_count > MAX_KV_COUNT or kv_count * _MIN_KV_BYTES > r.left:
        r.fail(f"metadata key count {kv_count:,} does not fit in the {r.left:,} bytes that remain")
    if tensor_count > MAX_TENSOR_COUNT or tensor_count * _MIN_TENSOR_INFO_BYTES > r.left:
        r.fail(f"tensor count {tensor_count:,} does not fit in the {r.left:,} bytes that remain")

    meta: dict[str, Any] = {"GGUF.version": version, "GGUF.tensor_count": tensor_count, "GGUF.kv_count": kv_count}
    seen: set[str] = set()
    alignment = gguf.GGUF_DEFAULT_ALIGNMENT
    for i in range(kv_count):
        raw = r.raw_string(f"metadata key {i}", MAX_KEY_BYTES)
        if isinstance(raw, int):
            r.fail(f"metadata key {i} is {raw:,} bytes long (at most {MAX_KEY_BYTES:,})")
        try:
            key = raw.decode("utf-8")
        except UnicodeDecodeError:
            r.fail(f"metadata key {i} is not UTF-8 ({_short(raw)})")
        if key in seen:
            r.fail(f"duplicate metadata key {_short(key)}")
        seen.add(key)
        vtype = r.u32(f"key {key!r} value type")
        keep = not _skip_key(key)
        value = r.value(vtype, key[:80], keep=keep)
        if key == "general.alignment":
            if vtype != int(gguf.GGUFValueType.UINT32):
                r.fail("general.alignment must be a uint32")
            if value == 0 or value & (value - 1):
                r.fail(f"general.alignment {value} is not a power of two")
            alignment = value
        if keep:
            meta[key] = value

    infos = []
    names: set[str] = set()
    for i in range(tensor_count):
        raw = r.raw_string(f"tensor {i} name", GGML_MAX_NAME - 1)
        if isinstance(raw, int):
            r.fail(f"tensor {i} name is {raw:,} bytes long (llama.cpp allows {GGML_MAX_NAME - 1})")
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            r.fail(f"tensor {i} name is not UTF-8 ({_short(raw)})")
        if name in names:
            r.fail(f"duplicate tensor name {name!r}")
        names.add(name)
        n_dims = r.u32(f"tensor {name!r} dimension count")
        if n_dims > GGML_MAX_DIMS:
            r.fail(f"tensor {name!r} has {n_dims:,} dimensions (at most {GGML_MAX_DIMS})")
        shape = tuple(r.u64(f"tensor {name!r} dimension {d}") for d in range(n_dims))
        raw_type = r.u32(f"tensor {name!r} type")
        try:
            ttype = gguf.GGMLQuantizationType(raw_type)
            block, type_size = gguf.GGML_QUANT_SIZES[ttype]
        except (ValueError, KeyError):
            r.fail(f"tensor {name!r} has unknown ggml type {raw_type}")
        offset = r.u64(f"tensor {name!r} data offset")
        n_elem = 1
        for d in shape:
            n_elem *= d
        if shape and shape[0] % block:
            r.fail(f"tensor {name!r}: row of {shape[0]:,} elements is not a multiple of the {ttype.name} "
                   f"block size {block}")
        infos.append((name, shape, ttype, n_elem, n_elem * type_size // block, offset))

    data_offset = r.pos + (-r.pos % alignment)
    size = file_size if file_size is not None else r.size
    tensors = []
    for name, shape, ttype, n_elem, n_bytes, offset in infos:
        start = data_offset + offset
        if start + n_bytes > size:
            r.fail(f"tensor {name!r} ({n_bytes:,} bytes at offset {start:,}) reaches past the end of the "
                   f"{size:,}-byte file")
        tensors.append(GGUFTensorInfo(name, shape, ttype, n_elem, n_bytes, start))
    return GGUFHeader(str(p), version, r.order, meta, tuple(tensors), alignment, data_offset, size)


def _open(path: str | Path) -> GGUFHeader:
    return read_header(path)


def _metadata(header: GGUFHeader) -> dict[str, Any]:
    return dict(header.metadata)


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The GGUF key/value metadata of ``path`` (``tokenizer.ggml.*`` vocabularies left out), as Python values.

    Arrays longer than :data:`MAX_ARRAY_ITEMS` and strings longer than :data:`MAX_STRING_BYTES` are
    :class:`UnreadValue` placeholders (their bounds checked, their items not read).
    """
    return _metadata(read_header(path))


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
            f"GGUF architecture {_short(arch)} is not supported: kvmath would need its per-layer cache layout; "
            f"supported GGUF architectures: {choices(sorted(GGUF_ARCHES))}"
        )

    def key(name, default=None, *, required=False):
        full = f"{arch}.{name}"
        if full in meta:
            return meta[full]
        if required:
            raise KvMathError(f"GGUF ({arch}) is missing {full}")
        return default

    n_all = _int(key("block_count", required=True), f"{arch}.block_count", 1, LLAMA_MAX_LAYERS)
    n_nextn = _int(key("nextn_predict_layers", 0), f"{arch}.nextn_predict_layers", 0, LLAMA_MAX_LAYERS)
    n_layer = n_all - n_nextn
    if n_layer < 1:
        raise KvMathError(f"GGUF {arch}: block_count {n_all} leaves no decoder layer after {n_nextn} nextn layers")
    n_embd = _int(key("embedding_length", required=True), f"{arch}.embedding_length", 1)
    heads = _per_layer(key("attention.head_count", required=True), n_all, f"{arch}.attention.head_count", 1)
    kv_raw = key("attention.head_count_kv")
    kv = _per_layer(kv_raw, n_all, f"{arch}.attention.head_count_kv") if kv_raw is not None else list(heads)
    n_head = heads[0]
    if len(set(heads[:n_layer])) != 1:
        raise KvMathError(f"GGUF {arch}: per-layer attention.head_count {_short(sorted(set(heads)))} is not supported")
    if n_embd // n_head < 1 and (f"{arch}.attention.key_length" not in meta or f"{arch}.attention.value_length" not in meta):
        raise KvMathError(
            f"GGUF {arch}: embedding_length {n_embd} / attention.head_count {n_head} gives a head width of 0 "
            f"and the file sets no {arch}.attention.key_length / value_length"
        )
    k_len = _int(key("attention.key_length", n_embd // n_head), f"{arch}.attention.key_length", 1)
    v_len = _int(key("attention.value_length", n_embd // n_head), f"{arch}.attention.value_length", 1)
    ctx = key("context_length")

    cfg: dict[str, Any] = {
        "model_type": GGUF_ARCHES[arch],
        "num_hidden_layers": n_layer,
        "hidden_size": n_embd,
        "num_attention_heads": n_head,
        "head_dim": k_len,
    }
    if ctx is not None:
        cfg["max_position_embeddings"] = _int(ctx, f"{arch}.context_length", 1, MAX_TOKENS)
    if key("expert_count"):
        cfg["num_experts"] = _int(key("expert_count"), f"{arch}.expert_count")
        if key("expert_used_count") is not None and not isinstance(key("expert_used_count"), list):
            cfg["num_experts_per_tok"] = _int(key("expert_used_count"), f"{arch}.expert_used_count")
    if key("expert_feed_forward_length") is not None and not isinstance(key("expert_feed_forward_length"), list):
        cfg["moe_intermediate_size"] = _int(key("expert_feed_forward_length"), f"{arch}.expert_feed_forward_length")
    if key("vocab_size") is not None:
        cfg["vocab_size"] = _int(key("vocab_size"), f"{arch}.vocab_size")

    if arch == "gemma4":
        return _gemma4_from_gguf(cfg, key, arch, n_layer, kv, k_len, v_len, tensor_names)
    if v_len != k_len:
        raise KvMathError(
            f"GGUF {arch}: key_length {k_len} != value_length {v_len}; kvmath's {GGUF_ARCHES[arch]} layout "
            "has one head width"
        )

    if arch in _HYBRID:
        return _hybrid_from_gguf(cfg, key, arch, n_layer, n_nextn, kv)
    return _plain_from_gguf(cfg, key, arch, n_layer, kv)


def _gemma4_from_gguf(cfg, key, arch, n_layer, kv, k_len, v_len, tensor_names) -> dict:
    """Gemma 4's layer types, per-type KV heads and widths, K=V and KV sharing, from its GGUF keys (into ``cfg``)."""
    pattern = key("attention.sliding_window_pattern", required=True)
    if not isinstance(pattern, list) or len(pattern) < n_layer:
        raise KvMathError(f"GGUF gemma4: attention.sliding_window_pattern must list {n_layer} booleans")
    swa = _bools(pattern[:n_layer], f"{arch}.attention.sliding_window_pattern")
    kv_swa = {kv[i] for i in range(n_layer) if swa[i]}
    kv_full = {kv[i] for i in range(n_layer) if not swa[i]}
    if len(kv_swa) > 1 or len(kv_full) > 1:
        raise KvMathError(
            f"GGUF gemma4: head_count_kv varies within one layer type (sliding {sorted(kv_swa)}, "
            f"full {sorted(kv_full)}); kvmath's Gemma 4 layout has one count per type"
        )
    k_swa = _int(key("attention.key_length_swa", k_len), f"{arch}.attention.key_length_swa", 1)
    v_swa = _int(key("attention.value_length_swa", v_len), f"{arch}.attention.value_length_swa", 1)
    if k_swa != v_swa or k_len != v_len:
        raise KvMathError("GGUF gemma4: K and V head widths differ; llama.cpp requires them equal for Gemma 4")
    full_layers = [i for i in range(n_layer) if not swa[i]]
    k_eq_v = bool(tensor_names is not None and full_layers
                  and all(f"blk.{i}.attn_v.weight" not in tensor_names for i in full_layers))
    sw_kv = kv_swa.pop() if kv_swa else kv[0]
    full_kv = kv_full.pop() if kv_full else sw_kv
    _positive_kv(min(sw_kv, full_kv), arch)
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
        sliding_window=_int(key("attention.sliding_window", required=True), f"{arch}.attention.sliding_window", 1),
        num_kv_shared_layers=_int(key("attention.shared_kv_layers", 0), f"{arch}.attention.shared_kv_layers",
                                  0, n_layer),
    )
    return cfg


def _hybrid_from_gguf(cfg, key, arch, n_layer, n_nextn, kv) -> dict:
    """A Gated DeltaNet hybrid's (qwen35 / qwen35moe / qwen3next) layer types and state widths from its GGUF keys."""
    attn_kv = {kv[i] for i in range(n_layer)}
    recurrent = key("attention.recurrent_layers")
    if recurrent is not None:
        if not isinstance(recurrent, list) or len(recurrent) < n_layer:
            raise KvMathError(f"GGUF {arch}: attention.recurrent_layers must list {n_layer} booleans")
        rec = _bools(recurrent[:n_layer], f"{arch}.attention.recurrent_layers")
        types = ["linear_attention" if r else "full_attention" for r in rec]
    else:
        interval = _int(key("full_attention_interval", 4), f"{arch}.full_attention_interval", 1, LLAMA_MAX_LAYERS)
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n_layer)]
    full_kv = {kv[i] for i in range(n_layer) if types[i] == "full_attention"} or attn_kv
    if len(full_kv) > 1:
        raise KvMathError(f"GGUF {arch}: head_count_kv differs between attention layers {_short(sorted(full_kv))}")
    d_state = _int(key("ssm.state_size", required=True), f"{arch}.ssm.state_size", 1)
    n_group = _int(key("ssm.group_count", required=True), f"{arch}.ssm.group_count", 1)
    dt_rank = _int(key("ssm.time_step_rank", required=True), f"{arch}.ssm.time_step_rank", 1)
    d_inner = _int(key("ssm.inner_size", required=True), f"{arch}.ssm.inner_size", 1)
    if d_inner != dt_rank * d_state:
        raise KvMathError(
            f"GGUF {arch}: ssm.inner_size {d_inner} != ssm.time_step_rank {dt_rank} x ssm.state_size {d_state}; "
            "llama.cpp's Gated DeltaNet takes value heads = time_step_rank of width state_size"
        )
    n_kv = full_kv.pop()
    _positive_kv(n_kv, arch)
    cfg.update(
        layer_types=types,
        num_key_value_heads=n_kv,
        linear_num_key_heads=n_group,
        linear_num_value_heads=dt_rank,
        linear_key_head_dim=d_state,
        linear_value_head_dim=d_state,
        linear_conv_kernel_dim=_int(key("ssm.conv_kernel", required=True), f"{arch}.ssm.conv_kernel", 1),
        mamba_ssm_dtype="float32",  # llama.cpp keeps the recurrent state in f32 (create_memory)
        mtp_num_hidden_layers=n_nextn,
    )
    return cfg


def _plain_from_gguf(cfg, key, arch, n_layer, kv) -> dict:
    """One KV head count on every layer, and the window where llama.cpp reads one (gemma2, gpt-oss)."""
    kv_set = set(kv[:n_layer])
    if len(kv_set) != 1:
        raise KvMathError(
            f"GGUF {arch}: per-layer attention.head_count_kv {_short(sorted(kv_set))} is not supported for "
            f"{GGUF_ARCHES[arch]} (one KV head count for every layer)"
        )
    cfg["num_key_value_heads"] = kv_set.pop()
    _positive_kv(cfg["num_key_value_heads"], arch)
    window = key("attention.sliding_window")
    if arch in ("gemma2", "gpt-oss"):
        if window is None:
            raise KvMathError(f"GGUF {arch} is missing {arch}.attention.sliding_window")
        cfg["sliding_window"] = _int(window, f"{arch}.attention.sliding_window", 1)
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
        if n_blocks > MAX_LAYERS:
            raise KvMathError(f"tensor table names block {n_blocks - 1:,}; at most {MAX_LAYERS:,} blocks are supported")
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


def read_gguf(path: str | Path, *, name: str | None = None, file_size: int | None = None) -> GGUFModel:
    """Read a ``.gguf`` header: the architecture (via kvmath's config loader) and the weight bytes.
    ``file_size``: as :func:`read_header` (``path`` holds the first bytes of a file of that size).

    Raises KvMathError for a missing or unreadable file and for an architecture kvmath cannot map.
    """
    header = read_header(path, file_size=file_size)
    meta = _metadata(header)
    names = {t.name for t in header.tensors}
    cfg = gguf_to_hf_config(meta, tensor_names=names)
    gguf_arch = meta["general.architecture"]
    label = name or _label(meta.get("general.name")) or Path(path).stem
    arch = architecture_from_config(cfg, name=str(label), source="GGUF header")
    note = f", read as {_SAME_LAYOUT_NOTE[gguf_arch]} (same cache layout)" if gguf_arch in _SAME_LAYOUT_NOTE else ""
    source = f"{Path(path).name} (GGUF {gguf_arch}{note}; header read by kvmath, gguf {_gguf_version()} type tables)"
    arch = _with_source(arch, source, cfg)
    weights = weight_bytes(header.tensors, n_layer=arch.num_hidden_layers, source=source)
    return GGUFModel(str(path), gguf_arch, cfg, arch, weights, meta)


def check_blocks(g: "GGUFModel", names) -> None:
    """Every decoder block ``g``'s header declares holds tensors (``names``: the tensor table's names), as
    llama.cpp needs to load it: load_tensors asks for each block's tensors by name and stops at the first
    absent one (llama-model.cpp ``create_tensor``: "missing tensor '%s'"). The reader itself accepts such a
    header (its architecture is readable); the llama.cpp verdict calls this. Raises KvMathError."""
    have = {int(m.group(1)) for n in names if (m := _BLOCK.match(n))}
    n_layer = g.architecture.num_hidden_layers
    for il in range(n_layer):
        if il not in have:
            arch = g.gguf_arch
            declared = g.metadata.get(f"{arch}.block_count", n_layer)
            raise KvMathError(f"GGUF {arch} declares block_count {declared} but holds no tensor of block {il}: "
                              f"llama.cpp refuses it (\"missing tensor 'blk.{il}.*'\" when it loads the tensors)")


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


def _int(value, what: str, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """A GGUF integer field in ``[minimum, maximum]`` (an integral float is accepted); KvMathError naming it."""
    return check_count(value, f"GGUF field {what}", minimum=minimum, maximum=maximum)


def _per_layer(value, n: int, what: str, minimum: int = 0) -> list[int]:
    """A GGUF scalar-or-array per-layer field as a list of n ints (llama.cpp ``get_key_or_arr``)."""
    if isinstance(value, list):
        if len(value) != n:
            raise KvMathError(f"GGUF field {what} has {len(value)} entries, block_count is {n}")
        return [_int(v, what, minimum) for v in value]
    return [_int(value, what, minimum)] * n


def _bools(values: list, what: str) -> list[bool]:
    """A GGUF per-layer flag array: booleans (or 0 / 1)."""
    out = []
    for v in values:
        if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
            out.append(bool(v))
        else:
            raise KvMathError(f"GGUF field {what} must list booleans, got an entry {_short(v)}")
    return out


def _positive_kv(n: int, arch: str) -> None:
    if n < 1:
        raise KvMathError(f"GGUF field {arch}.attention.head_count_kv must be >= 1 for attention layers, got {n}")


def _label(value) -> str | None:
    """``general.name`` fit for one line of output, or None."""
    if not isinstance(value, str):
        return None
    text = " ".join("".join(c if c.isprintable() else " " for c in value).split())
    return text[:120] or None
