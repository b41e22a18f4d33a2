"""A checkpoint's tensor table: every weight tensor's name, dtype, shape and bytes, without loading data.

Two sources, one output (:class:`Checkpoint`, a tuple of :class:`Tensor` rows):

- :func:`read_checkpoint` reads a model folder's ``*.safetensors`` headers. A safetensors file is an
  8-byte little-endian header length ``N``, then ``N`` bytes of JSON (``{name: {"dtype", "shape",
  "data_offsets": [begin, end]}, "__metadata__": {...}}``), then the data. Only the first ``8 + N``
  bytes are read, by a bounded reader (:func:`read_safetensors_header`) in the manner of
  :mod:`kvmath.model.gguf`: the length is checked against the file size and a cap before it is read,
  and every entry's shape, dtype and offsets are checked (``end - begin`` must equal the bytes the
  dtype and shape give, and no tensor may lie past the end of the file). The format is the one the
  ``safetensors`` package writes (huggingface/safetensors ``safetensors/src/tensor.rs``: ``Dtype``,
  ``Metadata::validate``); the tests write their files with that package. When a folder has no
  ``.safetensors`` files but a ``model.safetensors.index.json``, the table is estimated from the
  folder's ``config.json`` and the index's ``metadata.total_size`` is kept beside it for comparison.
- :func:`estimate_checkpoint` builds the table a checkpoint of this config would hold from
  ``config.json`` alone (names as Hugging Face saves them, shapes from the config, the stored tensors
  of the ``quantization_config`` format). Each format follows the tensors vLLM's quantization method
  creates (``create_weights``) for it, at the file named in :data:`FORMAT_SOURCES`. It is an estimate:
  a checkpoint may hold tensors the config does not announce (extra heads, a drafter), and its
  vision tower is counted from ``vision_config`` with the common ViT layout (below).

Conventions. ``Tensor.nbytes`` is exact: ``ceil(prod(shape) * bits / 8)``. Linear weights are
``[out, in]`` (PyTorch), AWQ tensors ``[in, out / pack]``, GPTQ ``qweight`` ``[in / pack, out]``. A
quantised linear layer is one module prefix with several tensors (``q_proj.qweight``,
``q_proj.scales``, ...); :mod:`kvmath.engines.vllm.weights` shards them per rank.
"""

from __future__ import annotations

import re

import math
from itertools import repeat
import os
import stat
import struct
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from operator import attrgetter
from pathlib import Path

from ..errors import KvMathError, choices
from .table import Tensor, TensorTable, _tensor, fast_header  # noqa: F401  (Tensor: re-exported)
from ..validate import _short, check_regular_file, gc_paused, keep_for_run, open_regular, parse_json, read_bounded

# safetensors dtype (lower-cased: the header's "BF16" is "bf16" here) -> bits per element (huggingface/safetensors safetensors/src/tensor.rs ``Dtype``,
# 0.6+: F4 = float4_e2m1 packed two per byte, F6_* six bits, E8M0 the MX scale)
DTYPE_BITS: dict[str, int] = {
    "bool": 8, "u8": 8, "i8": 8, "f8_e5m2": 8, "f8_e4m3": 8, "f8_e8m0": 8, "e8m0": 8,
    "i16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "i32": 32, "u32": 32, "f32": 32, "i64": 64, "u64": 64, "f64": 64, "c64": 64,
    "f4": 4, "f6_e2m3": 6, "f6_e3m2": 6,
}
FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")

MAX_HEADER_BYTES = 100 * 2**20
"""Largest safetensors header read (the safetensors crate refuses headers over 100 MB, ``MAX_HEADER_SIZE``)."""
MAX_TENSORS = 2_000_000
MAX_FILES = 4096


def tensor_bytes(dtype: str, shape) -> int:
    """Bytes of a tensor of ``dtype`` and ``shape`` (sub-byte types packed, rounded up to a byte)."""
    dtype = dtype.lower() if isinstance(dtype, str) else dtype
    if dtype not in DTYPE_BITS:
        raise KvMathError(f"unknown safetensors dtype {dtype!r}; known: {choices(DTYPE_BITS)}")
    return -(-math.prod(shape) * DTYPE_BITS[dtype] // 8)


@dataclass(frozen=True)
class Checkpoint:
    """A tensor table. ``table`` is a :class:`kvmath.model.table.TensorTable` (columns) or a sequence of
    :class:`Tensor` rows (made into one); ``tensors`` gives the rows. ``estimated`` is True when it was built from
    config.json, not read from files; ``index_total_size`` is ``metadata.total_size`` of
    ``model.safetensors.index.json`` when there is one."""

    table: object
    source: str
    estimated: bool = False
    quant_method: str | None = None
    index_total_size: int | None = None
    metadata: dict = field(default_factory=dict)
    notes: tuple = ()
    """Lines for the user about how the table was read (safetensors files the index leaves out)."""

    def __post_init__(self):
        if not isinstance(self.table, TensorTable):  # rows stay rows (no numpy: the page's Pyodide has none)
            object.__setattr__(self, "table", tuple(self.table))

    @cached_property
    def tensors(self) -> tuple[Tensor, ...]:
        """The rows, made from the columns when first asked for (a header's rows sorted by name within each file)."""
        return self.table.rows() if isinstance(self.table, TensorTable) else self.table

    @cached_property
    def total_bytes(self) -> int:
        """Sum of the tensors' bytes, summed once per table (the table is immutable)."""
        if isinstance(self.table, TensorTable):
            return self.table.total_bytes()
        return sum(map(attrgetter("nbytes"), self.table))

    def by_dtype(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.dtype] = out.get(t.dtype, 0) + t.nbytes
        return out

    def names(self) -> set[str]:
        return set(self.table.names) if isinstance(self.table, TensorTable) else {t.name for t in self.table}


# ---------------------------------------------------------------------------------------------------
# reading safetensors headers

def check_link(folder, path) -> None:
    """Refuse ``path`` (an entry of the model folder ``folder``) when it is a symbolic link that leads out of
    the folder, except into a Hugging Face cache's blob store: in the hub's cache layout a snapshot folder
    ``models--org--name/snapshots/<revision>/`` holds links into ``models--org--name/blobs/``
    (huggingface_hub ``file_download.py``, ``_create_symlink``), which are followed. A link to nothing is
    refused too. KvMathError, one line, naming the link and where it leads."""
    folder, path = Path(folder), Path(path)
    if not os.path.islink(path):
        return
    try:
        target = Path(os.path.realpath(path))
        root = Path(os.path.realpath(folder))
    except (OSError, RuntimeError, ValueError):  # a link loop
        raise KvMathError(f"{path}: a symbolic link that cannot be resolved (a loop?)") from None
    if not os.path.exists(target):
        raise KvMathError(f"{path}: a symbolic link to nothing ({str(target)[:200]})")
    allowed = [root]
    if root.parent.name == "snapshots":  # an HF cache snapshot: its links point into ../../blobs
        allowed.append(root.parent.parent / "blobs")
    if not any(target == a or a in target.parents for a in allowed):
        raise KvMathError(f"{path}: a symbolic link out of the model folder (to {str(target)[:200]}); kvmath follows "
                          "links only within the folder or into its Hugging Face cache's blobs/")


def read_safetensors_header(path) -> tuple[list[Tensor], dict]:
    """The tensor table and ``__metadata__`` of one ``.safetensors`` file, reading only its header.

    Refuses (KvMathError, one line naming the file) anything but a regular file (a FIFO or a device is not
    opened for reading), a file shorter than 8 bytes, a header length beyond the file or
    :data:`MAX_HEADER_BYTES`, a header that is not a JSON object (or nested deeper than
    ``kvmath.validate.MAX_JSON_DEPTH``), an unknown dtype, a shape that is not a list of non-negative
    integers, offsets that do not match the dtype and shape, and a tensor that ends past the file. A
    file's table is read once per (path, size, modification time) in a process.
    """
    table, meta = read_safetensors_table(path)
    return list(table.rows()), dict(meta)


def read_safetensors_table(path) -> tuple[TensorTable, dict]:
    """:func:`read_safetensors_header` as columns (:class:`kvmath.model.table.TensorTable`, shared: not to be
    changed) and the ``__metadata__`` (shared too). Raises KvMathError as that function does."""
    path = Path(path)
    st = check_regular_file(path, "safetensors file")
    return _header_cached(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4096)
def _header_cached(path_text: str, size_hint: int, mtime_ns: int) -> tuple[TensorTable, dict]:
    with gc_paused():  # a header of 400,000 entries read by the general reader makes 1.6 million objects
        return _header_read(path_text)


def _header_read(path_text: str) -> tuple[TensorTable, dict]:
    """:func:`_header_cached`'s work: the file opened, its header read and parsed."""
    path = Path(path_text)
    with open_regular(path, "safetensors file") as f:
        try:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            if len(head) < 8:
                raise KvMathError(f"{path}: {size} bytes is too short for a safetensors file (8-byte header length)")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES or n > size - 8:
                raise KvMathError(f"{path}: header length {n:,} is beyond the file ({size:,} bytes) "
                                  f"or the {MAX_HEADER_BYTES:,}-byte limit")
            raw = f.read(n)
        except OSError as e:
            raise KvMathError(f"{path}: cannot read ({e.strerror})") from None
    if len(raw) != n:
        raise KvMathError(f"{path}: the file ended inside its {n:,}-byte header")
    return _parse_table(raw, size - 8 - n, str(path), path.name)  # no copy of a 55 MB header


def parse_safetensors_header(head: bytes, size: int, where: str, file: str = "") -> tuple[list[Tensor], dict]:
    """The tensor table and ``__metadata__`` of a safetensors file from its first ``8 + n`` bytes (``head``: the
    little-endian u64 header length ``n``, then the header) and the whole file's ``size`` in bytes, which the
    tensors' ``data_offsets`` are checked against. ``where`` names the file in messages, ``file`` is kept on
    each Tensor. For headers read without the file: ranged reads from the Hub (``kvmath.hub``). Refuses as
    :func:`read_safetensors_header` does (KvMathError, one line; JSON nested deeper than
    ``kvmath.validate.MAX_JSON_DEPTH`` too)."""
    table, meta = parse_safetensors_table(head, size, where, file)
    return list(table.rows()), meta


def parse_safetensors_table(head: bytes, size: int, where: str, file: str = "") -> tuple[TensorTable, dict]:
    """:func:`parse_safetensors_header` as columns. A header written as the safetensors crate writes it is read
    straight into columns (:func:`kvmath.model.table.fast_header`, every byte of its grammar checked); any other,
    and any the column reader does not pass, by ``json`` and the checks below, which name the entry refused."""
    if len(head) < 8:
        raise KvMathError(f"{where}: {len(head)} bytes is too short for a safetensors file (8-byte header length)")
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_HEADER_BYTES or n > size - 8 or len(head) < 8 + n:
        raise KvMathError(f"{where}: header length {n:,} is beyond the file ({size:,} bytes) "
                          f"or the {MAX_HEADER_BYTES:,}-byte limit")
    return _parse_table(head[8:8 + n], size - 8 - n, where, file)


def _parse_table(raw: bytes, data_len: int, where: str, file: str) -> tuple[TensorTable, dict]:
    """:func:`parse_safetensors_table` of the header text ``raw`` (its length already checked) with ``data_len`` bytes
    of data after it."""
    fast = fast_header(raw, data_len, file, DTYPE_BITS)
    if fast is not None and len(fast[0]) <= MAX_TENSORS:
        table, meta = fast
        _check_metadata(meta, where)
        return table, {str(k): str(v) for k, v in meta.items()}
    try:
        header = parse_json(raw, f"{where}: the safetensors header", MAX_HEADER_BYTES)
    except KvMathError as e:
        raise KvMathError(f"{e}: not valid UTF-8 JSON") from None
    if not isinstance(header, dict):
        raise KvMathError(f"{where}: the safetensors header is not a JSON object")
    if len(header) > MAX_TENSORS:
        raise KvMathError(f"{where}: {len(header):,} header entries (at most {MAX_TENSORS:,})")
    meta = header.pop("__metadata__", None) or {}
    _check_metadata(meta, where)
    tensors = _tensors_checked_at_once(header, data_len, file)
    if tensors is None:  # some entry is refused: the entries one by one, in order, name the first
        tensors = _tensors_checked_one_by_one(header, data_len, where, file)
    tensors.sort(key=attrgetter("name"))
    return TensorTable.from_rows(tensors), {str(k): str(v) for k, v in meta.items()}


def _check_metadata(meta, where: str) -> None:
    """``__metadata__`` must map names to strings (the crate's Metadata holds Option<HashMap<String, String>>: a
    number there fails to parse). KvMathError."""
    if not isinstance(meta, dict):
        raise KvMathError(f"{where}: __metadata__ is not an object")
    bad = next((k for k, v in meta.items() if not isinstance(v, str)), None)
    if bad is not None:
        raise KvMathError(f"{where}: __metadata__[{bad[:60]!r}] is {_short(meta[bad])}, not a string (safetensors "
                          "headers map metadata names to strings)")


def _tensors_checked_at_once(header: dict, data_len: int, file: str) -> list[Tensor] | None:
    """The header's entries as Tensors when every one passes :func:`_tensors_checked_one_by_one`'s checks, the
    checks made over all entries at once (a 400,000-entry header); None when any entry fails one (that function
    then names the first). ``data_len``: bytes after the header."""
    from itertools import chain, repeat

    infos = list(header.values())
    if not infos:
        return [] if data_len == 0 else None
    if set(map(type, infos)) != {dict}:
        return None
    dtypes, shapes, offs = (list(map(dict.get, infos, repeat(k))) for k in ("dtype", "shape", "data_offsets"))
    if set(map(type, dtypes)) != {str} or set(map(type, shapes)) != {list} or set(map(type, offs)) != {list}:
        return None
    lower = {d: d.lower() for d in set(dtypes) if d.lower() in DTYPE_BITS}
    if len(lower) < len(set(dtypes)):
        return None
    dims, ends = list(chain.from_iterable(shapes)), list(chain.from_iterable(offs))
    if max(map(len, shapes)) > 16 or set(map(len, offs)) != {2} or not set(map(type, dims + ends)) <= {int}:
        return None
    if dims and not (min(dims) >= 0 and max(dims) < 2**48) or min(ends) < 0:
        return None
    dtypes = list(map(lower.__getitem__, dtypes))
    shapes = list(map(tuple, shapes))
    kinds = list(zip(shapes, dtypes))  # a few hundred distinct (shape, dtype) in 400,000 entries: bytes once each
    size = {k: -(-math.prod(k[0]) * DTYPE_BITS[k[1]] // 8) for k in dict.fromkeys(kinds)}
    nbytes = list(map(size.__getitem__, kinds))
    begins, ends = ends[0::2], ends[1::2]
    if list(map(int.__sub__, ends, begins)) != nbytes or max(ends) > data_len:
        return None
    spans = sorted(zip(begins, ends))
    if [b for b, _ in spans] != [0] + [e for _, e in spans[:-1]] or spans[-1][1] != data_len:
        return None
    return list(map(_tensor, header, dtypes, shapes, nbytes, repeat(file)))


def _tensors_checked_one_by_one(header: dict, data_len: int, where: str, file: str) -> list[Tensor]:
    """The header's entries as Tensors, each checked (KvMathError naming the first refused entry)."""
    tensors = []
    for name, info in header.items():
        if not isinstance(info, dict):
            raise KvMathError(f"{where}: entry {name[:80]!r} is not an object")
        dtype, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        dtype = dtype.lower() if isinstance(dtype, str) else dtype  # kvmath names dtypes in lower case
        if not isinstance(dtype, str) or dtype not in DTYPE_BITS:  # a list or an object is not a dtype either
            raise KvMathError(f"{where}: tensor {name[:80]!r} has unknown dtype {str(dtype)[:20]!r}")
        if (not isinstance(shape, list) or len(shape) > 16
                or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**48 for d in shape)):
            raise KvMathError(f"{where}: tensor {name[:80]!r} has a bad shape {str(shape)[:60]}")
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offs)):
            raise KvMathError(f"{where}: tensor {name[:80]!r} has bad data_offsets {str(offs)[:60]}")
        nbytes = tensor_bytes(dtype, shape)
        if offs[1] - offs[0] != nbytes:
            raise KvMathError(f"{where}: tensor {name[:80]!r} holds {offs[1] - offs[0]:,} bytes, but {dtype} "
                              f"{shape} is {nbytes:,}")
        if offs[1] > data_len:
            raise KvMathError(f"{where}: tensor {name[:80]!r} ends at byte {offs[1]:,}, past the data ({data_len:,})")
        tensors.append(Tensor(name, dtype, tuple(shape), nbytes, file))
    _check_tiling(header, data_len, where)
    return tensors


def _check_tiling(header: dict, data_len: int, where: str) -> None:
    """The tensors' ``data_offsets`` tile the data exactly, as the ``safetensors`` crate requires before it opens
    a file (huggingface/safetensors ``safetensors/src/tensor.rs``: ``Metadata::validate`` sorts the entries by
    offsets and refuses any whose begin is not the previous end, ``InvalidOffset``; ``SafeTensors::deserialize``
    refuses data longer or shorter than the last end, ``MetadataIncompleteBuffer``). Two tensors over the same
    bytes would otherwise be priced twice. KvMathError naming the first tensor out of place."""
    start = 0
    for name, (b, e) in sorted(((n, tuple(i["data_offsets"])) for n, i in header.items()), key=lambda x: x[1]):
        if b != start:
            how = "overlaps the tensor before it" if b < start else f"leaves bytes {start:,}..{b:,} unused"
            raise KvMathError(f"{where}: tensor {name[:80]!r} at data_offsets [{b:,}, {e:,}] {how} (the safetensors "
                              "format stores tensors back to back: InvalidOffset)")
        start = e
    if start != data_len:
        raise KvMathError(f"{where}: the tensors end at byte {start:,} of {data_len:,} bytes of data (the safetensors "
                          "format refuses a file longer than its tensors: MetadataIncompleteBuffer)")


def _read_json(path: Path, what: str, limit: int = 64 * 2**20):
    """A JSON file of the model folder: regular, at most ``limit`` bytes, bounded nesting (KvMathError)."""
    return parse_json(read_bounded(path, limit, what), f"{path} ({what})", limit)


_SHARD = re.compile(r"(.+)-(\d{5})-of-(\d{5})\.safetensors")


@dataclass(frozen=True)
class FolderListing:
    """A model folder as read once: its ``*.safetensors`` files (sorted, each a regular file or a permitted
    link), whether it has ``model.safetensors.index.json`` and ``config.json``."""

    folder: str
    safetensors: tuple[str, ...]
    has_index: bool
    has_config: bool


def list_folder(folder) -> FolderListing:
    """The listing of a model folder, read once per (folder, modification time) in a process: every entry
    is checked (links only within the folder or into an HF cache's blobs, :func:`check_link`; a
    ``.safetensors`` entry must be a regular file, not a FIFO, device or folder). Raises KvMathError."""
    folder = Path(folder)
    try:
        st = os.stat(folder)
    except OSError as e:
        raise KvMathError(f"{folder}: not a model folder ({e.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise KvMathError(f"{folder}: not a model folder")
    return _listing_cached(str(folder), st.st_mtime_ns)


@lru_cache(maxsize=64)
def _listing_cached(folder_text: str, mtime_ns: int) -> FolderListing:
    folder = Path(folder_text)
    names = []
    try:
        with os.scandir(folder) as it:
            for i, entry in enumerate(it):
                if i >= 8 * MAX_FILES:
                    raise KvMathError(f"{folder}: more than {8 * MAX_FILES:,} entries; not a model folder")
                if entry.name.endswith(".safetensors") or entry.name in (INDEX_NAME, "config.json"):
                    names.append(entry.name)
    except OSError as e:
        raise KvMathError(f"{folder}: cannot list the folder ({e.strerror})") from None
    files = sorted(n for n in names if n.endswith(".safetensors"))
    if len(files) > MAX_FILES:
        raise KvMathError(f"{folder}: {len(files)} safetensors files (at most {MAX_FILES})")
    for n in names:
        check_link(folder, folder / n)
        check_regular_file(folder / n, "safetensors file" if n.endswith(".safetensors") else n)
    return FolderListing(str(folder), tuple(files), INDEX_NAME in names, "config.json" in names)


INDEX_NAME = "model.safetensors.index.json"


def _check_shards(folder: Path, files) -> None:
    """Sharded names say how many files there are (``model-00001-of-00004.safetensors``): refuse impossible
    numbering (shard 0, a count of 0, a shard past the count) and a missing shard, naming it."""
    shards: dict = {}
    for name in files:
        m = _SHARD.fullmatch(name)
        if m:
            i, n = int(m.group(2)), int(m.group(3))
            if n < 1 or not 1 <= i <= n:
                raise KvMathError(f"{folder}: {name} is not a possible shard name (shard {i} of {n}; shards count "
                                  "from 1 to their total)")
            shards.setdefault((m.group(1), n), set()).add(i)
    for (stem, n), got in shards.items():
        if got != set(range(1, n + 1)):
            first = min(set(range(1, n + 1)) - got)
            raise KvMathError(f"{folder}: {stem}-{first:05d}-of-{n:05d}.safetensors is missing ({len(got)} of "
                              f"{n} shards present): a partial download would price a fraction of the model")


def read_checkpoint(folder) -> Checkpoint:
    """The tensor table of a model folder: its ``*.safetensors`` headers, or, with none, the estimate from
    its ``config.json`` (``index_total_size`` from ``model.safetensors.index.json`` when present).

    The folder is listed once and each header read once per run (:func:`list_folder`,
    :func:`read_safetensors_header`), and the table is built and checked once per state of the folder's
    files: the same object while no listed file (headers, index, config.json) changes its size,
    modification time or inode (``_TABLES``). A folder whose index names files that are not there is refused
    naming the first missing file; so are impossible or missing shard numbers, links out of the folder
    and entries that are not regular files.
    """
    folder = Path(folder)
    listing = list_folder(folder)
    names = listing.safetensors + ((INDEX_NAME,) if listing.has_index else ()) + (
        ("config.json",) if listing.has_config else ())
    stamps = []
    for n in names:
        st = check_regular_file(folder / n, "safetensors file" if n.endswith(".safetensors") else n)
        stamps.append((n, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev))
    key = (str(folder), listing, tuple(stamps))
    hit = _TABLES.get(key)
    if hit is not None:
        return hit
    with gc_paused():  # hundreds of thousands of Tensors (kvmath.validate.gc_paused)
        table = _read_checkpoint(folder, listing)
        keep_for_run(len(table.table))  # kept (_TABLES): not rescanned by the collector (kvmath.validate)
    if len(_TABLES) >= 8:
        _TABLES.pop(next(iter(_TABLES)))
    _TABLES[key] = table
    return table


_TABLES: dict = {}  # (folder, listing, each listed file's (name, size, mtime, inode, device)) -> Checkpoint


def _read_checkpoint(folder: Path, listing: FolderListing) -> Checkpoint:
    """:func:`read_checkpoint`'s work, not remembered."""
    files = [folder / n for n in listing.safetensors]
    index_path = folder / INDEX_NAME
    index = _read_json(index_path, "safetensors index") if listing.has_index else None
    total = None
    if index is not None:
        if not isinstance(index, dict) or not isinstance(index.get("weight_map", {}), dict):
            raise KvMathError(f"{index_path}: no weight_map object")
        meta = index.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise KvMathError(f"{index_path}: metadata must be an object, got {type(meta).__name__}")
        for f in index.get("weight_map", {}).values():
            if not isinstance(f, str) or not f or f in (".", "..") or "/" in f or "\\" in f or "\0" in f:
                raise KvMathError(f"{index_path}: weight_map names {_short(f)}, not a file name in the folder "
                                  "(valid: a plain name such as model-00001-of-00002.safetensors)")
        total = (meta or {}).get("total_size")
        if total is not None and (isinstance(total, bool) or not isinstance(total, int) or not 0 <= total <= 2**60):
            raise KvMathError(f"{index_path}: metadata.total_size must be a byte count (an integer >= 0), got "
                              f"{str(total)[:40]}")
    cfg_path = folder / "config.json"
    config = _read_json(cfg_path, "config.json", 4 * 2**20) if listing.has_config else None
    if isinstance(config, dict):
        from ..validate import check_config

        config = check_config(config, str(cfg_path))
    quant = _quant_method(config) if isinstance(config, dict) else None
    if files:
        notes: tuple = ()
        weight_map = index.get("weight_map", {}) if index is not None else None
        if weight_map is not None:
            wanted = sorted({str(v) for v in weight_map.values()})
            have = {p.name for p in files}
            missing = [w for w in wanted if w not in have]
            if missing:
                raise KvMathError(f"{folder}: the index names {missing[0][:200]} but the folder does not hold it "
                                  f"({len(missing)} of {len(wanted)} files missing)")
            if not wanted:
                raise KvMathError(f"{index_path}: its weight_map names no file (vLLM reads only the files it names, "
                                  "weight_utils.py filter_duplicate_safetensors_files: none would load)")
            notes = index_notes([p.name for p in files if p.name not in wanted])
            files = [p for p in files if p.name in wanted]
        _check_shards(folder, listing.safetensors)
        tables, meta = [], {}
        for p in files:
            t, m = read_safetensors_table(p)
            tables.append(t)
            meta.update(m)
        table = TensorTable.concat(tables)
        check_tensor_files(folder, table, weight_map, config)
        return Checkpoint(table, str(folder), False, quant, total, meta, notes)
    if not isinstance(config, dict):
        raise KvMathError(f"{folder}: no *.safetensors files and no config.json to estimate them from")
    est = estimate_checkpoint(config)
    held = ""
    if index is not None and index.get("weight_map"):
        n = len({str(v) for v in index["weight_map"].values()})
        held = f"; its {INDEX_NAME} names {n} safetensors file{'s' * (n > 1)} the folder does not hold"
    return Checkpoint(est.tensors, f"{folder} (estimated from config.json{held})", True, est.quant_method, total)


def index_notes(skipped) -> tuple:
    """The note for safetensors files a folder holds that its ``model.safetensors.index.json`` does not name
    (vLLM 0.24 ``model_loader/weight_utils.py`` ``filter_duplicate_safetensors_files`` drops them, "for models
    like Mistral-7B-Instruct-v0.3 there are both sharded safetensors files and a consolidated safetensors file.
    Using both breaks"); () when there are none."""
    if not skipped:
        return ()
    shown = ", ".join(sorted(skipped)[:4]) + (f" and {len(skipped) - 4} more" if len(skipped) > 4 else "")
    return (f"not read: {shown} (not in model.safetensors.index.json's weight_map; vLLM's "
            "filter_duplicate_safetensors_files skips it; with --load-format auto vLLM 0.24 would load "
            "consolidated*.safetensors instead when present, the same weights in Mistral's layout)",)


def check_tensor_files(where, tensors, weight_map: dict | None, config) -> None:
    """One check of a tensor table read from several safetensors files (a model folder or a Hub repository):
    no tensor name in two files (vLLM would load both into one parameter; kvmath would price it twice), every
    tensor the index's ``weight_map`` names held by the file it names, and the decoder layers as
    :func:`_check_layers_present` requires. ``tensors``: a :class:`kvmath.model.table.TensorTable` or Tensors
    with ``file`` set (a file name). Raises KvMathError, one line, naming the tensor and the files."""
    table = tensors if isinstance(tensors, TensorTable) else TensorTable.from_rows(tensors)
    if len(table.files) > 1 and table.has_duplicates():
        seen: dict = {}
        for name, f in zip(table.names, table.file_of.tolist()):
            if name in seen:
                raise KvMathError(f"{where}: tensor {name[:80]!r} is in both {table.files[seen[name]][:80]} and "
                                  f"{table.files[f][:80]}; one checkpoint holds each tensor once (a second copy of the "
                                  "model in the folder?)")
            seen[name] = f
    if weight_map:
        files = table.files
        owner = dict(zip(table.names, map(files.__getitem__, table.file_of.tolist())))
        for name, f in weight_map.items():
            held = owner.get(name)
            if held != str(f):
                where_held = f"it is in {held[:80]}" if held else "that file does not hold it"
                raise KvMathError(f"{where}: the index's weight_map puts tensor {str(name)[:80]!r} in {str(f)[:80]}, "
                                  f"but {where_held}: the index and the files disagree")
    if isinstance(config, dict):
        _check_layers_present(where, table, config)


_NOT_DECODER = re.compile(r"vision|visual|audio|mtp\.|multi_modal")  # towers and MTP layers: not counted
_DECODER_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d+)\.")


def _check_layers_present(folder, tensors, config: dict) -> None:
    """Refuse a folder whose tensors stop short of the config's decoder: the highest ``layers.N`` index found
    must be ``num_hidden_layers - 1`` (text layers; vision / audio towers and MTP layers are not counted).
    A folder with a few stray tensors, or some shards of a download, would otherwise pass as the model."""
    tc = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    L = tc.get("num_hidden_layers")
    if not isinstance(L, int) or isinstance(L, bool) or L < 1:
        return
    # The patterns are searched once per distinct module prefix, not per tensor (kvmath.model.table:
    # TensorTable.decoder_layers; 400,963 names of a large header are 80,451 prefixes and 17 last parts).
    table = tensors if isinstance(tensors, TensorTable) else TensorTable.from_rows(tensors)
    seen = table.decoder_layers(_NOT_DECODER)
    if not seen:
        raise KvMathError(f"{folder}: its safetensors files hold no decoder layer tensors (layers.N) for the "
                          f"config's {L} layers; is this the model's folder?")
    spec = tc.get("num_nextn_predict_layers")
    spec = spec if isinstance(spec, int) and not isinstance(spec, bool) and spec > 0 else 0
    extra = sorted(i for i in seen if i >= L + spec)
    if extra:  # vLLM's load_weights looks the name up in params_dict: a layer it did not build is a KeyError
        raise KvMathError(f"{folder}: the safetensors files hold decoder layer {extra[0]} (layers.{extra[0]}.*) but the "
                          f"config has {L} layers" + (f" and {spec} MTP layer(s) after them" if spec else "")
                          + ": another model's tensors, or num_hidden_layers is wrong")
    missing = sorted(set(range(L)) - seen)
    if missing:
        raise KvMathError(f"{folder}: the safetensors files hold {len(seen)} of the config's {L} decoder layers "
                          f"(layer {missing[0]} is missing): a partial download or another model")
    gap = table.layer_gap(_NOT_DECODER, L)
    if gap is not None:  # vLLM's loader leaves the parameter it never reads uninitialised: no error, wrong weights
        i, missing_name, beside = gap
        raise KvMathError(f"{folder}: decoder layer {i} lacks {missing_name[:120]} (every other layer holding {beside[:80]} "
                          "holds it too): a damaged or partial shard")


# ---------------------------------------------------------------------------------------------------
# estimating from config.json + quantization_config

FORMAT_SOURCES: dict[str, str] = {
    "none": "vllm/model_executor/layers/linear.py UnquantizedLinearMethod.create_weights: weight [out, in] "
            "in the model dtype",
    "fp8": "vllm/model_executor/layers/quantization/fp8.py Fp8LinearMethod.create_weights: weight "
           "float8_e4m3fn [out, in]; per tensor: weight_scale float32 (one per logical shard), input_scale "
           "float32 when activation_scheme is static; weight_block_size [bn, bk]: weight_scale_inv float32 "
           "[ceil(out / bn), ceil(in / bk)] (v0.6.4-v0.11)",
    "awq": "vllm/model_executor/layers/quantization/awq.py AWQLinearMethod.create_weights: qweight int32 "
           "[in, out / pack], qzeros int32 [in / group, out / pack], scales float16 [in / group, out], "
           "pack = 32 / bits (v0.4-v0.11; awq_marlin.py keeps the same checkpoint tensors)",
    "gptq": "vllm/model_executor/layers/quantization/gptq.py GPTQLinearMethod.create_weights: qweight int32 "
            "[in / pack, out], g_idx int32 [in], qzeros int32 [in / group, out / pack], scales float16 "
            "[in / group, out] (group_size -1 = one group; v0.4-v0.11; gptq_marlin.py reads the same)",
    "auto-round": "vllm/model_executor/layers/quantization/auto_round.py: packing_format auto_round:auto_gptq "
                  "(default) stores the GPTQ tensors, auto_awq the AWQ tensors; bits, group_size, sym",
    "compressed-tensors": "vllm/model_executor/layers/quantization/compressed_tensors/schemes/: "
                          "compressed_tensors_wNa16.py (weight_packed int32 [out, in * bits / 32], weight_scale "
                          "[out, in / group], weight_shape int64 [2], weight_zero_point int32 [out * bits / 32, "
                          "in / group] when asymmetric), compressed_tensors_w8a8_fp8.py / _w8a8_int8.py (weight "
                          "[out, in], weight_scale float32 [1] per tensor or [out, 1] per channel), "
                          "compressed_tensors_w4a4_nvfp4.py (weight_packed uint8 [out, in / 2], weight_scale "
                          "float8_e4m3fn [out, in / 16], weight_global_scale / input_global_scale float32 [1])",
    "modelopt": "vllm/model_executor/layers/quantization/modelopt.py: ModelOptNvFp4LinearMethod (weight uint8 "
                "[out, in / 2], weight_scale float8_e4m3fn [out, in / group(16)], weight_scale_2 and input_scale "
                "float32 scalars), ModelOptFp8LinearMethod (weight float8_e4m3fn, weight_scale / input_scale "
                "float32 scalars)",
    "mxfp4": "vllm/model_executor/layers/quantization/mxfp4.py Mxfp4MoEMethod.create_weights (gpt-oss experts): "
             "w13_weight uint8 [E, 2I, H / 2], w13_weight_scale uint8 [E, 2I, H / 32], w13_bias bf16 [E, 2I], "
             "w2_weight uint8 [E, H, I / 2], w2_weight_scale uint8 [E, H, I / 32], w2_bias bf16 [E, H]; the "
             "checkpoint stores gate_up_proj_blocks [E, 2I, H / 32, 16] and _scales [E, 2I, H / 32] (same bytes); "
             "attention, router, embeddings stay bf16 (v0.10.1-v0.11)",
}

_DT = {"bfloat16": "bf16", "float16": "f16", "half": "f16", "float32": "f32", "float": "f32"}


def _quant_method(config: dict) -> str | None:
    q = config.get("quantization_config")
    if not isinstance(q, dict):
        tc = config.get("text_config")
        q = tc.get("quantization_config") if isinstance(tc, dict) else None
    if not isinstance(q, dict):
        return None
    return str(q.get("quant_method") or q.get("quant_algo") or "unknown").lower()


MOE_LAYER_FREQ_TYPES = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_linear", "kimi_k2")
"""model_types whose vLLM 0.24 model file reads ``moe_layer_freq`` (``deepseek_v2.py`` ``getattr(config,
"moe_layer_freq", 1)``, ``kimi_linear.py`` ``config.moe_layer_freq``, default 1 in
``transformers_utils/configs/kimi_linear.py``)."""


def moe_layer_flags(tc: dict, layers: int) -> list[bool]:
    """Which of the ``layers`` decoder layers hold routed experts, as vLLM 0.24 builds them: ``deepseek_v2.py``
    ``DeepseekV2DecoderLayer`` / ``kimi_linear.py`` ``KimiDecoderLayer`` put the MoE block on layer ``i`` when
    the config has experts, ``i >= first_k_dense_replace`` and ``i % moe_layer_freq == 0`` (the last only for
    :data:`MOE_LAYER_FREQ_TYPES`; elsewhere every layer from ``first_k_dense_replace`` on). ``tc``: the
    decoder's config. Raises KvMathError for a ``moe_layer_freq`` that is not an integer >= 1 there (vLLM's
    ``%`` would raise on a list or divide by 0)."""
    E = _int(tc, "num_local_experts", "num_experts", "n_routed_experts", default=0)
    first = _int(tc, "first_k_dense_replace", default=0)
    freq = 1
    if str(tc.get("model_type", "")) in MOE_LAYER_FREQ_TYPES and tc.get("moe_layer_freq") is not None:
        freq = tc["moe_layer_freq"]
        if not isinstance(freq, int) or isinstance(freq, bool) or freq < 1:
            raise KvMathError(f"config field moe_layer_freq must be an integer >= 1 for {tc.get('model_type')} "
                              f"(vLLM 0.24 deepseek_v2.py / kimi_linear.py: layer_idx % moe_layer_freq), got "
                              f"{_short(freq)}")
    return [bool(E) and i >= first and i % freq == 0 for i in range(layers)]


def _int(c: dict, *keys, default=None):
    for k in keys:
        v = c.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    if default is None:
        raise KvMathError(f"config.json has none of {', '.join(keys)}: cannot estimate the checkpoint")
    return default


def _q_int(q: dict, keys: tuple, default: int, allowed: tuple | None, method: str) -> int:
    """An integer field of ``quantization_config`` (the first of ``keys`` present, else ``default``), refused
    unless it is an integer in ``allowed`` (bits) or a group size (-1 for one group, else positive)."""
    for k in keys:
        if k in q and q[k] is not None:
            v = q[k]
            if isinstance(v, bool) or not isinstance(v, int):
                raise KvMathError(f"quantization_config {k} must be an integer, got {str(v)[:30]!r} ({method})")
            if allowed is not None and v not in allowed:
                raise KvMathError(f"quantization_config {k} = {v} is not a width {method} stores; valid: "
                                  f"{', '.join(map(str, allowed))}")
            if allowed is None and not (v == -1 or 0 < v <= 2**20):
                raise KvMathError(f"quantization_config {k} = {v}: a group size is -1 (one group) or positive "
                                  f"({method})")
            return v
    return default


class _Linear:
    """How one linear layer is stored, for a quantisation format."""

    def __init__(self, q: dict | None, model_dtype: str):
        self.dt = model_dtype
        self.q = q or {}
        m = str(self.q.get("quant_method") or "").lower()
        algo = str(self.q.get("quant_algo") or "").upper()
        if m == "modelopt" or (not m and algo):
            inner = self.q.get("quantization") if isinstance(self.q.get("quantization"), dict) else {}
            algo = algo or str(inner.get("quant_algo") or "").upper()
            self.kind = "nvfp4" if "FP4" in algo else "fp8_tensor"
            self.method = "modelopt"
            self.group = int(self.q.get("group_size") or inner.get("group_size") or 16)
        elif m == "fp8":
            block = self.q.get("weight_block_size")
            self.kind = "fp8_block" if block else "fp8_tensor"
            self.block = tuple(block) if block else None
            self.static = str(self.q.get("activation_scheme", "dynamic")) == "static"
            self.method = "fp8"
        elif m in ("awq", "gptq", "auto-round", "autoround", "auto_round"):
            # vLLM 0.24 quantization/auto_awq.py AutoAWQConfig (awq, awq_marlin, auto_awq): TYPE_MAP = {4: uint4},
            # "Unsupported num_bits" (8-bit AWQ only with a Marlin backend named at launch, not modelled)
            self.bits = _q_int(self.q, ("bits", "w_bit"), 4, (4,) if m == "awq" else (2, 3, 4, 8), m)
            self.group = _q_int(self.q, ("group_size", "q_group_size"), 128, None, m)
            fmt = str(self.q.get("packing_format") or self.q.get("backend") or "")
            self.kind = "awq" if m == "awq" or "awq" in fmt else "gptq"
            self.sym = bool(self.q.get("sym", True))
            self.method = m
        elif m == "mxfp4":
            self.kind, self.method = "none", "mxfp4"  # only the experts are MXFP4
        elif m == "compressed-tensors":
            self.method = m
            groups = self.q.get("config_groups") or {}
            if not isinstance(groups, dict) or not all(isinstance(g, dict) for g in groups.values()):
                raise KvMathError("quantization_config config_groups must be an object of objects (compressed-tensors)")
            w = next(iter(groups.values()), {}).get("weights", {}) if groups else {}
            w = w if isinstance(w, dict) else {}
            self.bits = _q_int(w, ("num_bits",), 8, (2, 3, 4, 8), m)
            self.strategy = str(w.get("strategy") or "tensor")
            self.group = _q_int(w, ("group_size",), 128, None, m)
            self.sym = bool(w.get("symmetric", True))
            fmt = str(self.q.get("format") or "")
            if w.get("type") == "float" and self.bits == 4:
                self.kind = "ct_nvfp4"
                self.group = int(w.get("group_size") or 16)
            elif w.get("type") == "float":
                self.kind = "ct_fp8"
            elif self.bits == 8 and "pack" not in fmt:
                self.kind = "ct_int8"
            else:
                self.kind = "ct_packed"
        elif m in ("", "none", "bitsandbytes"):
            if m == "bitsandbytes":
                raise KvMathError("quantization_config quant_method bitsandbytes: not estimated (give the "
                                  "model folder with its safetensors files)")
            self.kind, self.method = "none", None
        else:
            raise KvMathError(f"quantization_config quant_method {m!r}: not estimated; known: "
                              f"{choices(sorted(FORMAT_SOURCES))}")
        skip = []
        for key in ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules"):
            v = self.q.get(key)
            if isinstance(v, list):
                skip.extend(str(s) for s in v)
        self.skip = skip
        # the skip list read once (a Qwen3-235B FP8 config lists 282 modules for 180,000 tensor prefixes): an
        # entry (``re:`` and a trailing ``*`` dropped, as literal text) leaves a prefix unconverted when the prefix
        # starts with it, or when it is a run of the prefix's dotted components (equal, a dotted suffix, or
        # ``.entry.`` inside ``.prefix.``)
        names = [n for n in ((s[3:] if s.startswith("re:") else s) for s in skip) if n]
        names = [n[:-1] if n.endswith("*") else n for n in names]
        self._skip_starts = tuple(n for n in names if n)
        self._skip_by_len: dict[int, set[str]] = {}  # ``prefix.startswith(entry)``: prefix[:len(entry)] in a set
        for n in self._skip_starts:
            self._skip_by_len.setdefault(len(n), set()).add(n)
        self._skip_by_last: dict[str, list[tuple[str, ...]]] = {}  # an entry's components, by its last one
        for n in set(self._skip_starts):
            t = tuple(n.split("."))
            self._skip_by_last.setdefault(t[-1], []).append(t)

    def converted(self, prefix: str) -> bool:
        """False when the module ``prefix`` is in the skip list (``modules_to_not_convert``, ``ignore``, ...)."""
        if not self._skip_starts:
            return True
        for n, entries in self._skip_by_len.items():
            if prefix[:n] in entries:
                return False
        parts = prefix.split(".")
        by_last = self._skip_by_last
        for j, last in enumerate(parts, 1):
            for t in by_last.get(last, ()):
                if len(t) <= j and tuple(parts[j - len(t):j]) == t:
                    return False
        return True

    def tensors(self, prefix: str, out: int, inp: int, bias: bool = False) -> list[tuple[str, str, tuple]]:
        dt = self.dt
        rows: list[tuple[str, str, tuple]] = []
        kind = self.kind if self.converted(prefix) else "none"
        if kind == "none":
            rows.append((f"{prefix}.weight", dt, (out, inp)))
        elif kind == "fp8_tensor":
            rows.append((f"{prefix}.weight", "f8_e4m3", (out, inp)))
            rows.append((f"{prefix}.weight_scale", "f32", ()))
            if getattr(self, "static", False) or self.method == "modelopt":
                rows.append((f"{prefix}.input_scale", "f32", ()))
        elif kind == "fp8_block":
            bn, bk = self.block
            rows.append((f"{prefix}.weight", "f8_e4m3", (out, inp)))
            rows.append((f"{prefix}.weight_scale_inv", "f32", (-(-out // bn), -(-inp // bk))))
        elif kind == "awq":
            pack = 32 // self.bits
            g = inp if self.group <= 0 else self.group
            rows += [(f"{prefix}.qweight", "i32", (inp, out // pack)),
                     (f"{prefix}.qzeros", "i32", (-(-inp // g), out // pack)),
                     (f"{prefix}.scales", "f16", (-(-inp // g), out))]
        elif kind == "gptq":
            pack = 32 // self.bits
            g = inp if self.group <= 0 else self.group
            rows += [(f"{prefix}.qweight", "i32", (inp // pack, out)),
                     (f"{prefix}.qzeros", "i32", (-(-inp // g), out // pack)),
                     (f"{prefix}.scales", "f16", (-(-inp // g), out)),
                     (f"{prefix}.g_idx", "i32", (inp,))]
        elif kind == "nvfp4":
            rows += [(f"{prefix}.weight", "u8", (out, inp // 2)),
                     (f"{prefix}.weight_scale", "f8_e4m3", (out, inp // self.group)),
                     (f"{prefix}.weight_scale_2", "f32", ()),
                     (f"{prefix}.input_scale", "f32", ())]
        elif kind == "ct_nvfp4":
            rows += [(f"{prefix}.weight_packed", "u8", (out, inp // 2)),
                     (f"{prefix}.weight_scale", "f8_e4m3", (out, inp // self.group)),
                     (f"{prefix}.weight_global_scale", "f32", (1,)),
                     (f"{prefix}.input_global_scale", "f32", (1,))]
        elif kind in ("ct_fp8", "ct_int8"):
            rows.append((f"{prefix}.weight", "f8_e4m3" if kind == "ct_fp8" else "i8", (out, inp)))
            shape = (out, 1) if self.strategy == "channel" else (1,)
            rows.append((f"{prefix}.weight_scale", "f32" if kind == "ct_fp8" else dt, shape))
        elif kind == "ct_packed":
            g = inp if self.strategy == "channel" else self.group
            rows += [(f"{prefix}.weight_packed", "i32", (out, inp * self.bits // 32)),
                     (f"{prefix}.weight_scale", dt, (out, -(-inp // g))),
                     (f"{prefix}.weight_shape", "i64", (2,))]
            if not self.sym:
                rows.append((f"{prefix}.weight_zero_point", "i32", (out * self.bits // 32, -(-inp // g))))
        if bias:
            rows.append((f"{prefix}.bias", dt, (out,)))
        return rows


_QKV_BIAS = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "gpt_oss"}

# transformers' config classes whose tie_word_embeddings default is False (PretrainedConfig's default is
# True: Gemma, Gemma 2 / 3 / 4 and most small models tie); read from each configuration_<type>.py
_UNTIED_BY_DEFAULT = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next",
                      "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "nemotron_h",
                      "gpt_oss", "phi3", "deepseek_v3", "deepseek_v2", "glm4", "glm4_moe", "minimax_m2"}


def tied_embeddings(config: dict) -> bool:
    """``tie_word_embeddings`` as transformers reads it: the stated value (top level first, then
    ``text_config``), else the config class default."""
    tc = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    for c in (config, tc):
        v = c.get("tie_word_embeddings")
        if isinstance(v, bool):
            return v
    return str(tc.get("model_type") or config.get("model_type") or "") not in _UNTIED_BY_DEFAULT


ESTIMATED_MODEL_TYPES = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gpt_oss",
                         "qwen3_5_text", "qwen3_5_moe_text", "qwen3_next", "deepseek_v3", "gemma2", "nemotron_h",
                         "gemma4_text", "kimi_linear", "granite", "granitemoe", "internlm3", "ernie4_5", "seed_oss",
                         "phi3")
"""Model types whose checkpoint layout :func:`estimate_checkpoint` writes: the Llama-style decoder (attention with
q/k/v/o projections, dense or routed MLP), Gemma 2 (four norms per layer), DeepSeek-V3 (MLA attention, shared and
routed experts), the Qwen3-Next / Qwen 3.5 / 3.6 hybrid (Gated DeltaNet and gated full-attention layers, the
Qwen 3.5 vision tower), Nemotron-H (Mamba-2, attention, MLP and MoE blocks), Gemma 4 (sliding and global
attention of their own widths, the dense MLP beside the experts, the Gemma 4 vision tower) and Kimi Linear (Kimi
Delta Attention and MLA layers, shared and routed experts), and the Llama-style layouts of Granite 3, InternLM3,
ERNIE 4.5, Seed-OSS and Phi-3 / Phi-4 (Phi-3's checkpoint fuses ``qkv_proj`` and ``gate_up_proj``: the same
elements and the same column-parallel shards as the separate projections written here; tests/test_families.py
checks every one against transformers' meta-device parameter count); any other is refused."""

_GDN_TYPES = ("qwen3_5_text", "qwen3_5_moe_text", "qwen3_next")


def _gdn_layer(lin: "_Linear", p: str, tc: dict, H: int, fused: bool) -> list[tuple[str, str, tuple]]:
    """One Gated DeltaNet mixer (``linear_attn``) as the checkpoint stores it: transformers
    models/qwen3_5/modeling_qwen3_5.py ``Qwen3_5GatedDeltaNet`` (``in_proj_qkv`` [2 n_k d_k + n_v d_v, H],
    ``in_proj_z`` [n_v d_v, H], ``in_proj_b`` / ``in_proj_a`` [n_v, H]) or, ``fused``, Qwen3-Next's
    ``in_proj_qkvz`` [2 n_k d_k + 2 n_v d_v, H] and ``in_proj_ba`` [2 n_v, H]; then ``conv1d`` [conv_dim, 1, K],
    ``dt_bias`` and ``A_log`` [n_v], the gated RMSNorm [d_v] and ``out_proj`` [H, n_v d_v]."""
    nk, dk = _int(tc, "linear_num_key_heads"), _int(tc, "linear_key_head_dim")
    nv, dv = _int(tc, "linear_num_value_heads"), _int(tc, "linear_value_head_dim")
    K = _int(tc, "linear_conv_kernel_dim", default=4)
    dt = lin.dt
    a = f"{p}.linear_attn"
    conv = 2 * nk * dk + nv * dv
    if fused:
        rows = lin.tensors(f"{a}.in_proj_qkvz", conv + nv * dv, H) + lin.tensors(f"{a}.in_proj_ba", 2 * nv, H)
    else:
        rows = (lin.tensors(f"{a}.in_proj_qkv", conv, H) + lin.tensors(f"{a}.in_proj_z", nv * dv, H)
                + lin.tensors(f"{a}.in_proj_b", nv, H) + lin.tensors(f"{a}.in_proj_a", nv, H))
    rows += [(f"{a}.conv1d.weight", dt, (conv, 1, K)), (f"{a}.dt_bias", dt, (nv,)), (f"{a}.A_log", dt, (nv,)),
             (f"{a}.norm.weight", dt, (dv,))]
    return rows + lin.tensors(f"{a}.out_proj", H, nv * dv)


def _qwen_vision(vc: dict, dt: str) -> list[tuple[str, str, tuple]]:
    """The Qwen 3.5 / 3.6 vision tower (transformers models/qwen3_5/modeling_qwen3_5.py ``Qwen3_5VisionModel``):
    a 3-D patch embedding with bias, learned position embeddings [num_position_embeddings, width], ``depth``
    blocks (LayerNorms with bias, fused ``qkv`` [3 width, width], ``proj``, a two-matrix MLP, all with biases)
    and the patch merger (LayerNorm over width, then [w m^2, w m^2] and [out, w m^2] with biases, m the
    spatial merge size). Deepstack mergers (``deepstack_visual_indexes``) are refused."""
    if vc.get("deepstack_visual_indexes"):
        raise KvMathError("vision_config deepstack_visual_indexes: deepstack mergers are not estimated; pass the "
                          "model folder with its safetensors files")
    w, n, ff = _int(vc, "hidden_size"), _int(vc, "depth"), _int(vc, "intermediate_size")
    ch, ps, tps = _int(vc, "in_channels", default=3), _int(vc, "patch_size"), _int(vc, "temporal_patch_size", default=2)
    m2 = _int(vc, "spatial_merge_size", default=2) ** 2
    out = _int(vc, "out_hidden_size")
    v = "model.visual"
    rows = [(f"{v}.patch_embed.proj.weight", dt, (w, ch, tps, ps, ps)), (f"{v}.patch_embed.proj.bias", dt, (w,))]
    if _int(vc, "num_position_embeddings", default=0):
        rows.append((f"{v}.pos_embed.weight", dt, (vc["num_position_embeddings"], w)))
    for i in range(n):
        b = f"{v}.blocks.{i}"
        for name, shape in (("norm1", (w,)), ("norm2", (w,))):
            rows += [(f"{b}.{name}.weight", dt, shape), (f"{b}.{name}.bias", dt, shape)]
        rows += [(f"{b}.attn.qkv.weight", dt, (3 * w, w)), (f"{b}.attn.qkv.bias", dt, (3 * w,)),
                 (f"{b}.attn.proj.weight", dt, (w, w)), (f"{b}.attn.proj.bias", dt, (w,)),
                 (f"{b}.mlp.linear_fc1.weight", dt, (ff, w)), (f"{b}.mlp.linear_fc1.bias", dt, (ff,)),
                 (f"{b}.mlp.linear_fc2.weight", dt, (w, ff)), (f"{b}.mlp.linear_fc2.bias", dt, (w,))]
    mg = f"{v}.merger"
    rows += [(f"{mg}.norm.weight", dt, (w,)), (f"{mg}.norm.bias", dt, (w,)),
             (f"{mg}.linear_fc1.weight", dt, (w * m2, w * m2)), (f"{mg}.linear_fc1.bias", dt, (w * m2,)),
             (f"{mg}.linear_fc2.weight", dt, (out, w * m2)), (f"{mg}.linear_fc2.bias", dt, (out,))]
    return rows


def _mla(lin: "_Linear", a: str, tc: dict, H: int, nh: int) -> list[tuple[str, str, tuple]]:
    """DeepSeek-V2 / V3 multi-head latent attention (transformers models/deepseek_v3/modeling_deepseek_v3.py
    ``DeepseekV3Attention``): ``q_a_proj`` [q_lora, H] + ``q_a_layernorm`` + ``q_b_proj`` [n_h (d_nope + d_rope),
    q_lora] (``q_proj`` [n_h (d_nope + d_rope), H] when ``q_lora_rank`` is null), ``kv_a_proj_with_mqa``
    [kv_lora + d_rope, H], ``kv_a_layernorm`` [kv_lora], ``kv_b_proj`` [n_h (d_nope + d_v), kv_lora] and
    ``o_proj`` [H, n_h d_v]."""
    qr, kr = tc.get("q_lora_rank"), _int(tc, "kv_lora_rank")
    nope, rope, dv = _int(tc, "qk_nope_head_dim"), _int(tc, "qk_rope_head_dim"), _int(tc, "v_head_dim")
    dt = lin.dt
    if isinstance(qr, int) and qr > 0:
        rows = lin.tensors(f"{a}.q_a_proj", qr, H) + [(f"{a}.q_a_layernorm.weight", dt, (qr,))]
        rows += lin.tensors(f"{a}.q_b_proj", nh * (nope + rope), qr)
    else:
        rows = lin.tensors(f"{a}.q_proj", nh * (nope + rope), H)
    rows += lin.tensors(f"{a}.kv_a_proj_with_mqa", kr + rope, H) + [(f"{a}.kv_a_layernorm.weight", dt, (kr,))]
    return rows + lin.tensors(f"{a}.kv_b_proj", nh * (nope + dv), kr) + lin.tensors(f"{a}.o_proj", H, nh * dv)


def _kda(lin: "_Linear", a: str, tc: dict, H: int) -> list[tuple[str, str, tuple]]:
    """A Kimi Delta Attention mixer (moonshotai/Kimi-Linear-48B-A3B-Instruct modeling_kimi.py; transformers
    models/kimi_linear, which fuses the three short convolutions into one): q / k / v projections [h d, H], a
    short convolution per projection [h d, 1, K], the forget gate (``A_log`` [h], ``dt_bias`` [h d], low-rank
    ``f_a_proj`` [d, H] and ``f_b_proj`` [h d, d]), ``b_proj`` [h, H], the low-rank output gate (``g_a_proj``,
    ``g_b_proj``), ``o_norm`` [d] and ``o_proj`` [H, h d]; h, d and K from ``linear_attn_config``."""
    lac = tc.get("linear_attn_config") if isinstance(tc.get("linear_attn_config"), dict) else {}
    h, d = _int(lac, "num_heads"), _int(lac, "head_dim")
    K = _int(lac, "short_conv_kernel_size", default=4)
    dt = lin.dt
    rows = lin.tensors(f"{a}.q_proj", h * d, H) + lin.tensors(f"{a}.k_proj", h * d, H) + lin.tensors(f"{a}.v_proj",
                                                                                                      h * d, H)
    rows += [(f"{a}.{x}_conv1d.weight", dt, (h * d, 1, K)) for x in ("q", "k", "v")]
    rows += [(f"{a}.A_log", dt, (1, 1, h, 1)), (f"{a}.dt_bias", dt, (h * d,))]
    rows += lin.tensors(f"{a}.f_a_proj", d, H) + lin.tensors(f"{a}.f_b_proj", h * d, d)
    rows += lin.tensors(f"{a}.b_proj", h, H)
    rows += lin.tensors(f"{a}.g_a_proj", d, H) + lin.tensors(f"{a}.g_b_proj", h * d, d)
    return rows + [(f"{a}.o_norm.weight", dt, (d,))] + lin.tensors(f"{a}.o_proj", H, h * d)


def _nemotron_h(lin: "_Linear", tc: dict, dt: str) -> list[tuple[str, str, tuple]]:
    """Nemotron-H (transformers models/nemotron_h/modeling_nemotron_h.py): one mixer per block after an
    RMSNorm, by ``hybrid_override_pattern``: ``M`` Mamba-2 (``in_proj`` [2 d_in + 2 g N + h, H] with
    d_in = ``mamba_num_heads`` x ``mamba_head_dim``, ``conv1d`` [d_in + 2 g N, 1, K] with its bias, ``dt_bias``,
    ``A_log``, ``D`` [h], the gated norm [d_in], ``out_proj`` [H, d_in]); ``*`` attention (q/k/v/o); ``-`` a
    squared-ReLU MLP (``up_proj``, ``down_proj``); ``E`` routed experts with the same two-matrix MLP, a router
    with its fp32 ``e_score_correction_bias`` and shared experts. With ``moe_latent_size`` L (Nemotron 3 Super /
    Ultra's LatentMoE) the routed experts take and give L wide vectors ([I, L] and [L, I]) between
    ``fc1_latent_proj`` [L, H] and ``fc2_latent_proj`` [H, L]; the shared experts stay H wide."""
    H, V = _int(tc, "hidden_size"), _int(tc, "vocab_size")
    pat = tc.get("hybrid_override_pattern")
    listed = tc.get("layers_block_type")
    if pat is None and isinstance(listed, list):  # Nemotron-3-Ultra: the layer list, older names too
        letters = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*", "mlp": "-",
                   "moe": "E"}
        pat = "".join(letters.get(v, "?") if isinstance(v, str) else "?" for v in listed)
    if not isinstance(pat, str) or not pat or set(pat) - set("M*-E"):
        raise KvMathError("nemotron_h config needs hybrid_override_pattern of M, *, - and E (or layers_block_type of "
                          "mamba, attention, mlp, moe) to estimate the checkpoint")
    nh, nkv = _int(tc, "num_attention_heads"), _int(tc, "num_key_value_heads")
    hd = tc.get("head_dim") if isinstance(tc.get("head_dim"), int) else H // nh
    h, hdim = _int(tc, "mamba_num_heads"), _int(tc, "mamba_head_dim")
    g, N, K = _int(tc, "n_groups", default=1), _int(tc, "ssm_state_size"), _int(tc, "conv_kernel", default=4)
    d_in = h * hdim
    conv = d_in + 2 * g * N
    inter = _int(tc, "intermediate_size")
    E = _int(tc, "n_routed_experts", default=0)
    moe_i = _int(tc, "moe_intermediate_size", default=inter)
    sh_i = _int(tc, "moe_shared_expert_intermediate_size", default=0)
    latent = _int(tc, "moe_latent_size", default=0) if tc.get("moe_latent_size") is not None else 0
    bias = bool(tc.get("use_bias", False))
    rows = [("backbone.embeddings.weight", dt, (V, H)), ("backbone.norm_f.weight", dt, (H,))]
    if not tied_embeddings({"text_config": tc, **tc}):
        rows.append(("lm_head.weight", dt, (V, H)))
    for i, kind in enumerate(pat):
        p = f"backbone.layers.{i}"
        x = f"{p}.mixer"
        rows.append((f"{p}.norm.weight", dt, (H,)))
        if kind == "M":
            rows += lin.tensors(f"{x}.in_proj", 2 * d_in + 2 * g * N + h, H, bias)
            rows += [(f"{x}.conv1d.weight", dt, (conv, 1, K))]
            if tc.get("use_conv_bias", True):
                rows.append((f"{x}.conv1d.bias", dt, (conv,)))
            rows += [(f"{x}.dt_bias", dt, (h,)), (f"{x}.A_log", dt, (h,)), (f"{x}.D", dt, (h,)),
                     (f"{x}.norm.weight", dt, (d_in,))]
            rows += lin.tensors(f"{x}.out_proj", H, d_in, bias)
        elif kind == "*":
            ab = bool(tc.get("attention_bias", False))
            rows += lin.tensors(f"{x}.q_proj", nh * hd, H, ab) + lin.tensors(f"{x}.k_proj", nkv * hd, H, ab)
            rows += lin.tensors(f"{x}.v_proj", nkv * hd, H, ab) + lin.tensors(f"{x}.o_proj", H, nh * hd, ab)
        elif kind == "-":
            mb = bool(tc.get("mlp_bias", False))
            rows += lin.tensors(f"{x}.up_proj", inter, H, mb) + lin.tensors(f"{x}.down_proj", H, inter, mb)
        else:
            if not E:
                raise KvMathError("nemotron_h pattern has E blocks but the config states no n_routed_experts")
            rows += [(f"{x}.gate.weight", dt, (E, H)), (f"{x}.gate.e_score_correction_bias", "f32", (E,))]
            if latent:  # NemotronHMoE: the experts run in moe_latent_size, projected in and out of it
                mb = bool(tc.get("mlp_bias", False))
                rows += lin.tensors(f"{x}.fc1_latent_proj", latent, H, mb)
                rows += lin.tensors(f"{x}.fc2_latent_proj", H, latent, mb)
            for e in range(E):
                rows += (lin.tensors(f"{x}.experts.{e}.up_proj", moe_i, latent or H)
                         + lin.tensors(f"{x}.experts.{e}.down_proj", latent or H, moe_i))
            if sh_i:
                rows += lin.tensors(f"{x}.shared_experts.up_proj", sh_i, H)
                rows += lin.tensors(f"{x}.shared_experts.down_proj", H, sh_i)
    return rows


def _gemma4(lin: "_Linear", config: dict, tc: dict, dt: str) -> list[tuple[str, str, tuple]]:
    """Gemma 4 (transformers models/gemma4/modeling_gemma4.py): tied embeddings; per layer a ``layer_scalar``,
    four norms (seven with experts), attention by ``layer_types`` — sliding layers ``head_dim`` wide with
    ``num_key_value_heads``, full layers ``global_head_dim`` wide with ``num_global_key_value_heads`` and no
    ``v_proj`` under ``attention_k_eq_v`` — q / k norms, the dense MLP (``intermediate_size``) and, with
    ``enable_moe_block``, a router (``scale`` [H], ``per_expert_scale`` [E], ``proj`` [E, H]) and experts
    (``gate_up_proj`` [2 I_e, H], ``down_proj`` [H, I_e] each). The vision tower: see ``_gemma4_vision``.
    Per-layer inputs, KV-shared layers and clipped linears (Gemma 3n-style configs) are refused."""
    H, V = _int(tc, "hidden_size"), _int(tc, "vocab_size")
    for key in ("hidden_size_per_layer_input", "num_kv_shared_layers"):
        if tc.get(key):
            raise KvMathError(f"gemma4 config {key} = {tc[key]!r}: those layers are not estimated; pass the model "
                              "folder with its safetensors files")
    lt = _layer_kinds(config)
    nh, nkv, hd = _int(tc, "num_attention_heads"), _int(tc, "num_key_value_heads"), _int(tc, "head_dim")
    ghd = _int(tc, "global_head_dim", default=hd)
    gkv = _int(tc, "num_global_key_value_heads", default=nkv)
    k_eq_v = bool(tc.get("attention_k_eq_v", False))
    inter = _int(tc, "intermediate_size")
    moe = bool(tc.get("enable_moe_block"))
    E = _int(tc, "num_experts", default=0) if moe else 0
    Ie = _int(tc, "expert_intermediate_size", "moe_intermediate_size", default=0) if moe else 0
    if moe and not (E and Ie):
        raise KvMathError("gemma4 config enables the MoE block without num_experts and expert_intermediate_size")
    base = "model.language_model"
    rows = [(f"{base}.embed_tokens.weight", dt, (V, H)), (f"{base}.norm.weight", dt, (H,))]
    if not tied_embeddings(config):
        rows.append(("lm_head.weight", dt, (V, H)))
    for i, kind in enumerate(lt):
        p = f"{base}.layers.{i}"
        rows.append((f"{p}.layer_scalar", dt, (1,)))
        norms = ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                 "post_feedforward_layernorm"]
        if moe:
            norms += ["post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"]
        rows += [(f"{p}.{n}.weight", dt, (H,)) for n in norms]
        a = f"{p}.self_attn"
        full = kind == "full_attention"
        w, kv = (ghd, gkv) if full else (hd, nkv)
        rows += lin.tensors(f"{a}.q_proj", nh * w, H) + lin.tensors(f"{a}.k_proj", kv * w, H)
        if not (full and k_eq_v):
            rows += lin.tensors(f"{a}.v_proj", kv * w, H)
        rows += lin.tensors(f"{a}.o_proj", H, nh * w) + [(f"{a}.q_norm.weight", dt, (w,)),
                                                          (f"{a}.k_norm.weight", dt, (w,))]
        m = f"{p}.mlp"
        rows += lin.tensors(f"{m}.gate_proj", inter, H) + lin.tensors(f"{m}.up_proj", inter, H)
        rows += lin.tensors(f"{m}.down_proj", H, inter)
        if moe:
            rows += [(f"{p}.router.scale", dt, (H,)), (f"{p}.router.per_expert_scale", dt, (E,))]
            rows += lin.tensors(f"{p}.router.proj", E, H)
            for e in range(E):
                rows += lin.tensors(f"{p}.experts.{e}.gate_up_proj", 2 * Ie, H)
                rows += lin.tensors(f"{p}.experts.{e}.down_proj", H, Ie)
    vc = config.get("vision_config")
    if isinstance(vc, dict):
        rows += _gemma4_vision(vc, dt, H)
    if isinstance(config.get("audio_config"), dict):
        raise KvMathError("gemma4 audio_config: the audio tower is not estimated; pass the model folder with its "
                          "safetensors files")
    return rows


def _gemma4_vision(vc: dict, dt: str, text_hidden: int) -> list[tuple[str, str, tuple]]:
    """The Gemma 4 vision tower (modeling_gemma4.py ``Gemma4VisionModel``): a patch projection [w, 3 p^2] and a
    2-D position table [2, position_embedding_size, w]; per encoder layer q / k / v / o [n_h d, w] (each a
    ``.linear``), q / k norms [d], a gated MLP and four norms; the ``std_bias`` / ``std_scale`` buffers when
    ``standardize``; then ``embed_vision.embedding_projection`` [H, w]."""
    if vc.get("use_clipped_linears"):
        raise KvMathError("gemma4 vision_config use_clipped_linears: clipped linears are not estimated; pass the "
                          "model folder with its safetensors files")
    w, n, ff = _int(vc, "hidden_size"), _int(vc, "num_hidden_layers"), _int(vc, "intermediate_size")
    nh, hd, ps = _int(vc, "num_attention_heads"), _int(vc, "head_dim"), _int(vc, "patch_size")
    nkv = _int(vc, "num_key_value_heads", default=nh)
    pos = _int(vc, "position_embedding_size")
    v = "model.vision_tower"
    rows = [(f"{v}.patch_embedder.input_proj.weight", dt, (w, 3 * ps * ps)),
            (f"{v}.patch_embedder.position_embedding_table", dt, (2, pos, w))]
    for i in range(n):
        p = f"{v}.encoder.layers.{i}"
        a = f"{p}.self_attn"
        rows += [(f"{a}.q_proj.linear.weight", dt, (nh * hd, w)), (f"{a}.k_proj.linear.weight", dt, (nkv * hd, w)),
                 (f"{a}.v_proj.linear.weight", dt, (nkv * hd, w)), (f"{a}.o_proj.linear.weight", dt, (w, nh * hd)),
                 (f"{a}.q_norm.weight", dt, (hd,)), (f"{a}.k_norm.weight", dt, (hd,))]
        rows += [(f"{p}.mlp.gate_proj.linear.weight", dt, (ff, w)), (f"{p}.mlp.up_proj.linear.weight", dt, (ff, w)),
                 (f"{p}.mlp.down_proj.linear.weight", dt, (w, ff))]
        rows += [(f"{p}.{nm}.weight", dt, (w,)) for nm in ("input_layernorm", "post_attention_layernorm",
                                                           "pre_feedforward_layernorm", "post_feedforward_layernorm")]
    if vc.get("standardize"):
        rows += [(f"{v}.std_bias", dt, (w,)), (f"{v}.std_scale", dt, (w,))]
    return rows + [("model.embed_vision.embedding_projection.weight", dt, (text_hidden, w))]


def _layer_kinds(config: dict) -> list[str]:
    """Each decoder layer's ``layer_type`` as kvmath's model reader reads the config (``kvmath.model.hf``: its
    ``layer_types``, ``full_attention_interval`` or per-layer forms), so the tensor table follows the same
    layout as the cache. Raises KvMathError as the reader does."""
    from .hf import architecture_from_config

    return [layer.layer_type for layer in architecture_from_config(config, name="checkpoint estimate").layers]


def estimate_checkpoint(config: dict) -> Checkpoint:
    """The tensors a checkpoint of ``config`` stores (a Llama-style decoder, with MoE experts, the
    ``quantization_config`` format and a vision tower from ``vision_config``). See :data:`FORMAT_SOURCES`.

    Names follow Hugging Face (``model.layers.{i}.self_attn.q_proj``); a multimodal config's text
    model lives under ``model.language_model``. Raises KvMathError for a config without the sizes.
    One table per config content in a process (``_ESTIMATES``: a Qwen3-235B config's 73,000 tensors are
    estimated once for the early check and every pricing of one answer); the same object for equal configs.
    """
    if not isinstance(config, dict):
        raise KvMathError("estimate_checkpoint needs a config dict")
    key = repr(config)  # tells a tuple from a list, 1 from "1" and True (json.dumps would not)
    hit = _ESTIMATES.get(key)
    if hit is None:
        hit = _estimate_checkpoint(config)
        if len(_ESTIMATES) >= 8:
            _ESTIMATES.pop(next(iter(_ESTIMATES)))
        _ESTIMATES[key] = hit
    return hit


_ESTIMATES: dict = {}  # repr(config) -> Checkpoint


def _estimate_checkpoint(config: dict) -> Checkpoint:
    """:func:`estimate_checkpoint`'s work, not remembered (the collector paused: kvmath.validate.gc_paused)."""
    with gc_paused():
        return _estimate_table(config)


def _estimate_table(config: dict) -> Checkpoint:
    """The table :func:`estimate_checkpoint` returns, built."""
    tc = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    outer = config.get("model_type")
    if outer in _SPEECH_UNWRITTEN:
        raise KvMathError(f"kvmath does not estimate the audio / speech encoder and projector of {outer} from "
                          "config.json; pass the model folder (its safetensors headers) or the checkpoint size "
                          "(--weights-gb)")
    if tc is not config and isinstance(outer, str):  # llava-1.5's sparse text_config, as transformers fills it
        from .hf import _CLASS_DEFAULTS, _WRAPPERS

        inner = tc.get("model_type") or _WRAPPERS.get(outer)
        if isinstance(inner, str) and inner in _CLASS_DEFAULTS.get(outer, {}):
            tc = {**_CLASS_DEFAULTS[outer][inner], **tc, "model_type": inner}
    q = config.get("quantization_config") or tc.get("quantization_config")
    if q is not None and not isinstance(q, dict):
        raise KvMathError(f"quantization_config must be an object with quant_method, got {str(q)[:40]!r}")
    dt_name = str(tc.get("torch_dtype") or tc.get("dtype") or config.get("torch_dtype") or "bfloat16")
    dt = _DT.get(dt_name.replace("torch.", ""), "bf16")
    lin = _Linear(q if isinstance(q, dict) else None, dt)
    mt = str(tc.get("model_type") or config.get("model_type") or "")
    if mt not in ESTIMATED_MODEL_TYPES:
        # a Llama-style table for another layout would be a silent wrong number (Qwen 3.6's GDN layers,
        # MLA, Gemma 4's per-type widths, Mamba-2 mixers all store other tensors)
        raise KvMathError(
            f"kvmath estimates checkpoint tensors from config.json only for {', '.join(ESTIMATED_MODEL_TYPES)}; "
            f"model_type {mt or '(none)'!r} needs its safetensors headers (pass the model folder) or the "
            "checkpoint size (--weights-gb)")
    if mt in ("nemotron_h", "gemma4_text"):
        rows = _nemotron_h(lin, tc, dt) if mt == "nemotron_h" else _gemma4(lin, config, tc, dt)
        tensors = tuple(Tensor(n, d, tuple(s), tensor_bytes(d, s)) for n, d, s in rows)
        return Checkpoint(tensors, "estimated from config.json", True, _quant_method(config))
    H = _int(tc, "hidden_size", "n_embd", "d_model")
    L = _int(tc, "num_hidden_layers", "n_layer", "num_layers")
    nh = _int(tc, "num_attention_heads", "n_head")
    nkv = _int(tc, "num_key_value_heads", default=nh)
    hd = tc.get("head_dim") if isinstance(tc.get("head_dim"), int) else H // nh
    V = _int(tc, "vocab_size")
    inter = _int(tc, "intermediate_size", "ffn_hidden_size", default=4 * H)
    E = _int(tc, "num_local_experts", "num_experts", "n_routed_experts", default=0)
    moe_inter = _int(tc, "moe_intermediate_size", default=inter)
    shared_inter = _int(tc, "shared_expert_intermediate_size", default=0)
    n_shared = _int(tc, "n_shared_experts", "num_shared_experts", default=0)
    qkv_bias = bool(tc.get("attention_bias", mt in _QKV_BIAS))
    tied = tied_embeddings(config)
    base = "model.language_model" if tc is not config else "model"
    rows: list[tuple[str, str, tuple]] = [(f"{base}.embed_tokens.weight", dt, (V, H)), (f"{base}.norm.weight", dt, (H,))]
    if not tied:
        rows.append(("lm_head.weight", dt, (V, H)))
    mxfp4 = lin.method == "mxfp4"
    gdn = mt in _GDN_TYPES
    kinds = _layer_kinds(config) if gdn else None
    moe = moe_layer_flags(tc, L)
    for i in range(L):
        p = f"{base}.layers.{i}"
        rows += [(f"{p}.input_layernorm.weight", dt, (H,)), (f"{p}.post_attention_layernorm.weight", dt, (H,))]
        if mt == "gemma2":  # Gemma 2's sandwich norms around the MLP (modeling_gemma2.py Gemma2DecoderLayer)
            rows += [(f"{p}.pre_feedforward_layernorm.weight", dt, (H,)),
                     (f"{p}.post_feedforward_layernorm.weight", dt, (H,))]
        a = f"{p}.self_attn"
        if mt == "deepseek_v3":
            rows += _mla(lin, a, tc, H, nh)
        elif mt == "kimi_linear":  # kda_layers / full_attn_layers count layers from 1
            kda = (tc.get("linear_attn_config") or {}).get("kda_layers")
            if not isinstance(kda, list):
                raise KvMathError("kimi_linear config needs linear_attn_config.kda_layers to estimate the checkpoint")
            rows += _kda(lin, a, tc, H) if i + 1 in kda else _mla(lin, a, tc, H, nh)
        elif gdn and kinds[i] == "linear_attention":
            rows += _gdn_layer(lin, p, tc, H, fused=mt == "qwen3_next")
        elif gdn:  # gated full attention: q_proj holds the query and its output gate (attn_output_gate)
            gate = 2 if tc.get("attn_output_gate", True) else 1
            rows += lin.tensors(f"{a}.q_proj", nh * hd * gate, H) + lin.tensors(f"{a}.k_proj", nkv * hd, H)
            rows += lin.tensors(f"{a}.v_proj", nkv * hd, H) + lin.tensors(f"{a}.o_proj", H, nh * hd)
            rows += [(f"{a}.q_norm.weight", dt, (hd,)), (f"{a}.k_norm.weight", dt, (hd,))]
        else:
            rows += lin.tensors(f"{a}.q_proj", nh * hd, H, qkv_bias)
            rows += lin.tensors(f"{a}.k_proj", nkv * hd, H, qkv_bias)
            rows += lin.tensors(f"{a}.v_proj", nkv * hd, H, qkv_bias)
            rows += lin.tensors(f"{a}.o_proj", H, nh * hd, mt == "gpt_oss")
            if mt in ("qwen3", "qwen3_moe"):
                rows += [(f"{a}.q_norm.weight", dt, (hd,)), (f"{a}.k_norm.weight", dt, (hd,))]
            if mt == "gpt_oss":
                rows.append((f"{a}.sinks", dt, (nh,)))
        m = f"{p}.mlp"
        if moe[i]:
            rows += _moe_mlp(lin, m, tc, mt, H, E, moe_inter, shared_inter, n_shared, dt, mxfp4)
        else:
            rows += lin.tensors(f"{m}.gate_proj", inter, H) + lin.tensors(f"{m}.up_proj", inter, H)
            rows += lin.tensors(f"{m}.down_proj", H, inter)
    vc = config.get("vision_config")
    if isinstance(vc, dict) and tc is not config:
        _refuse_unwritten_tower(config)
    if isinstance(vc, dict) and tc is not config and gdn:
        rows += _qwen_vision(vc, dt)
    elif isinstance(vc, dict) and tc is not config and config.get("model_type") == "kimi_k25":
        rows += _moonvit(vc, dt, H)
    elif isinstance(vc, dict) and tc is not config and config.get("model_type") in _CLIP_LLAVA:
        rows += _clip_llava(vc, dt, H, config)
    elif isinstance(vc, dict) and tc is not config:
        rows += _vision_tower(vc, dt, H)
    ac = config.get("audio_config")
    if isinstance(ac, dict) and tc is not config and config.get("model_type") == "voxtral":
        rows += _voxtral_audio(ac, dt, H)
    elif isinstance(ac, dict) and tc is not config:
        rows += _vision_tower(ac, dt, H, prefix="model.audio_tower", patch=False)
    tensors = tuple(Tensor(n, d, tuple(s), tensor_bytes(d, s)) for n, d, s in rows)
    return Checkpoint(tensors, "estimated from config.json", True, _quant_method(config))


def _moe_mlp(lin, m: str, tc: dict, mt: str, H: int, E: int, moe_inter: int, shared_inter: int, n_shared: int,
             dt: str, mxfp4: bool) -> list[tuple[str, str, tuple]]:
    """One MoE layer's MLP tensors under ``m`` (``model.layers.{i}.mlp``): the router, ``E`` routed experts of
    ``moe_intermediate_size`` (gpt-oss: MXFP4 blocks and scales, biases), the shared expert(s)
    (``shared_expert_intermediate_size`` or ``n_shared_experts x moe_intermediate_size``)."""
    out: list[tuple[str, str, tuple]] = []
    if mxfp4:
        I = moe_inter
        out += [(f"{m}.router.weight", dt, (E, H)), (f"{m}.router.bias", dt, (E,)),
                (f"{m}.experts.gate_up_proj_blocks", "u8", (E, 2 * I, H // 32, 16)),
                (f"{m}.experts.gate_up_proj_scales", "u8", (E, 2 * I, H // 32)),
                (f"{m}.experts.gate_up_proj_bias", dt, (E, 2 * I)),
                (f"{m}.experts.down_proj_blocks", "u8", (E, H, I // 32, 16)),
                (f"{m}.experts.down_proj_scales", "u8", (E, H, I // 32)),
                (f"{m}.experts.down_proj_bias", dt, (E, H))]
        return out
    gate_name = "router" if mt == "gpt_oss" else "gate"
    out.append((f"{m}.{gate_name}.weight", dt, (E, H)))
    if mt == "gpt_oss":
        out.append((f"{m}.router.bias", dt, (E,)))
    if tc.get("topk_method") == "noaux_tc" or mt == "kimi_linear":  # the router bias, fp32 in the checkpoint
        out.append((f"{m}.gate.e_score_correction_bias", "f32", (E,)))
    for e in range(E):
        x = f"{m}.experts.{e}"
        eb = mt == "gpt_oss"  # gpt-oss experts carry biases (gate_up_proj_bias, down_proj_bias)
        out += lin.tensors(f"{x}.gate_proj", moe_inter, H, eb) + lin.tensors(f"{x}.up_proj", moe_inter, H, eb)
        out += lin.tensors(f"{x}.down_proj", H, moe_inter, eb)
    si = shared_inter or (n_shared * moe_inter)
    if si:
        name = "shared_expert" if shared_inter else "shared_experts"
        out += lin.tensors(f"{m}.{name}.gate_proj", si, H) + lin.tensors(f"{m}.{name}.up_proj", si, H)
        out += lin.tensors(f"{m}.{name}.down_proj", H, si)
        if shared_inter:
            out.append((f"{m}.shared_expert_gate.weight", dt, (1, H)))
    return out


def _vit_layers(prefix: str, n: int, w: int, ff: int, dt: str) -> list[tuple[str, str, tuple]]:
    """``n`` ViT encoder layers under ``prefix`` (``<prefix>.<i>.``), width ``w`` and MLP ``ff``: q / k / v /
    out_proj [w, w] with biases, fc1 / fc2 [ff, w] / [w, ff] with biases, LayerNorms ``layer_norm1`` /
    ``layer_norm2`` (the CLIP / SigLIP layout, transformers 5.23 models/clip ``CLIPEncoderLayer``)."""
    rows: list[tuple[str, str, tuple]] = []
    for i in range(n):
        p = f"{prefix}.{i}"
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            rows += [(f"{p}.self_attn.{proj}.weight", dt, (w, w)), (f"{p}.self_attn.{proj}.bias", dt, (w,))]
        rows += [(f"{p}.mlp.fc1.weight", dt, (ff, w)), (f"{p}.mlp.fc1.bias", dt, (ff,)),
                 (f"{p}.mlp.fc2.weight", dt, (w, ff)), (f"{p}.mlp.fc2.bias", dt, (w,))]
        for norm in ("layer_norm1", "layer_norm2"):
            rows += [(f"{p}.{norm}.weight", dt, (w,)), (f"{p}.{norm}.bias", dt, (w,))]
    return rows


def _voxtral_audio(ac: dict, dt: str, text_hidden: int) -> list[tuple[str, str, tuple]]:
    """Voxtral's Whisper-style audio encoder and projector (transformers 5.23 models/voxtral ``VoxtralEncoder``,
    ``VoxtralMultiModalProjector``): ``conv1`` [w, num_mel_bins, 3] and ``conv2`` [w, w, 3] with biases,
    ``embed_positions`` [max_source_positions, w]; per layer q / v / out_proj [w, w] with biases and k_proj
    without, fc1 / fc2 [ff, w] / [w, ff] with biases, two LayerNorms; a final LayerNorm; then ``linear_1``
    [text hidden, ff] and ``linear_2`` [text hidden, text hidden] without biases (the projector takes four
    frames stacked: ff = ``intermediate_size``)."""
    w, n, ff = _int(ac, "hidden_size"), _int(ac, "num_hidden_layers"), _int(ac, "intermediate_size")
    mel, pos = _int(ac, "num_mel_bins"), _int(ac, "max_source_positions")
    if min(w, n, ff, mel, pos) < 1:
        raise KvMathError("voxtral audio_config needs positive hidden_size, num_hidden_layers, intermediate_size, "
                          "num_mel_bins and max_source_positions to estimate the audio tower")
    t = "model.audio_tower"
    rows = [(f"{t}.conv1.weight", dt, (w, mel, 3)), (f"{t}.conv1.bias", dt, (w,)),
            (f"{t}.conv2.weight", dt, (w, w, 3)), (f"{t}.conv2.bias", dt, (w,)),
            (f"{t}.embed_positions.weight", dt, (pos, w))]
    for i in range(n):
        p = f"{t}.layers.{i}"
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            rows.append((f"{p}.self_attn.{proj}.weight", dt, (w, w)))
            if proj != "k_proj":
                rows.append((f"{p}.self_attn.{proj}.bias", dt, (w,)))
        rows += [(f"{p}.fc1.weight", dt, (ff, w)), (f"{p}.fc1.bias", dt, (ff,)),
                 (f"{p}.fc2.weight", dt, (w, ff)), (f"{p}.fc2.bias", dt, (w,))]
        for norm in ("self_attn_layer_norm", "final_layer_norm"):
            rows += [(f"{p}.{norm}.weight", dt, (w,)), (f"{p}.{norm}.bias", dt, (w,))]
    j = "model.multi_modal_projector"
    return rows + [(f"{t}.layer_norm.weight", dt, (w,)), (f"{t}.layer_norm.bias", dt, (w,)),
                   (f"{j}.linear_1.weight", dt, (text_hidden, ff)),
                   (f"{j}.linear_2.weight", dt, (text_hidden, text_hidden))]


_CLIP_LLAVA = ("llava", "llava_next", "llava_next_video")
"""Wrappers whose tower :func:`_clip_llava` writes (a CLIP tower; LLaVA-NeXT's ``image_newline`` beside it)."""
_TOWER_UNWRITTEN = ("llava_onevision", "internvl", "aya_vision", "cohere2_vision", "paligemma", "idefics3", "smolvlm",
                    "exaone4_5", "minicpmv4_6", "minicpmv4_7")
"""Wrappers whose vision tower and projector neither the generic :func:`_vision_tower` nor the Qwen 3.5 tower
(:func:`_qwen_vision`, which a qwen3_5_text text part would otherwise pick) counts exactly (SigLIP without a class
embedding, InternViT's layer scales and q / k norms, Idefics3's pixel-shuffle connector, Aya Vision's SwiGLU
projector, MiniCPM-V's window-attention merger): the config-only estimate is refused for them."""

_TOWER_UNWRITTEN = _TOWER_UNWRITTEN + (  # batch A1 (issue 20, session 34): towers / connectors not written either
    "aria", "hyperclovax_vision_v2", "glm_ocr", "blip-2", "fuyu", "granite4_vision", "granite_docling", "hunyuan_vl",
    "emu3", "deepseek_ocr2", "deepseek_vl", "deepseek_vl_hybrid", "got_ocr2", "fast_vlm", "idefics2")
"""SigLIP / SAM (DeepSeek-VL, -Hybrid), GOT-OCR 2's SAM-style encoder, FastVLM's timm FastViT, Idefics2's perceiver
resampler, BLIP-2's Q-Former, Fuyu's patch projection, Emu3's / Chameleon-style VQ-VAE and the other wrappers' towers:
none is the generic ViT the estimate writes (their text parts may be llama / qwen2 / mistral, which it does write)."""

_SPEECH_UNWRITTEN = ("qwen2_audio", "granite_speech", "nemotron_h_omni", "moss_transcribe_diarize",
                     "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker", "muse_spark", "muse_glimmer")
"""Speech / omni wrappers whose encoders (Qwen2-Audio's Whisper-style encoder, Granite Speech's Conformer and Q-Former
projector, Nemotron-H Omni's RADIO + Parakeet towers, MOSS's audio encoder, the Qwen-Omni audio and vision towers) no
rule here writes: the generic tower table counts the wrong tensors (Qwen2-Audio's class defaults: 12,684,767,232
parameters where transformers 5.23 builds 12,692,062,208), so the config-only estimate is refused for them."""

_TOWER_UNWRITTEN += ("lighton_ocr", "qianfan_ocr", "video_llava", "vipllava", "perception_lm", "janus", "ovis2",
                     "video_llama_3", "shieldgemma2", "minicpm_ocr", "lfm3_vl", "instructblip", "instructblipvideo",
                     "pp_chart2table", "kosmos-2", "kosmos-2.5", "molmo2", "paddleocr_vl")
"""Issue 20 batch A2's wrappers: Pixtral (LightOnOCR), InternViT-style (Qianfan-OCR), CLIP towers with a video tower
(Video-LLaVA) or a multi-layer projector (VipLLaVA), timm (Perception LM), SigLIP + VQ-VAE (Janus), Ovis2's visual
tokenizer, VideoLLaMA3's, SigLIP (ShieldGemma 2), MiniCPM-OCR's and LFM3-VL's towers, InstructBLIP's Q-Former, GOT-OCR 2's (PP-Chart2Table), Kosmos' latent
queries, Molmo 2's adapter and PaddleOCR-VL's SigLIP: none is counted exactly."""

def _refuse_unwritten_tower(config: dict) -> None:
    """Raise KvMathError for a wrapper in :data:`_TOWER_UNWRITTEN` (its tower is not estimated exactly)."""
    mt = config.get("model_type")
    if mt in _TOWER_UNWRITTEN:
        raise KvMathError(f"kvmath does not estimate the vision tower and projector of {mt} from config.json; pass the "
                          "model folder (its safetensors headers) or the checkpoint size (--weights-gb)")


def _clip_llava(vc: dict, dt: str, text_hidden: int, config: dict) -> list[tuple[str, str, tuple]]:
    """LLaVA's CLIP vision tower and two-layer projector (transformers 5.23 models/clip ``CLIPVisionTransformer``,
    models/llava ``LlavaMultiModalProjector``): a class embedding [w], a patch embedding [w, 3, p, p] without bias,
    position embeddings [(image_size / p)^2 + 1, w], ``pre_layrnorm``; per layer q / k / v / out_proj [w, w] with
    biases, fc1 / fc2 [ff, w] / [w, ff] with biases, two LayerNorms; ``post_layernorm``; then ``linear_1``
    [text hidden, w x the number of ``vision_feature_layer`` entries] and ``linear_2`` [text hidden, text hidden],
    with biases unless ``multimodal_projector_bias`` is false. transformers builds every layer whatever
    ``vision_feature_layer`` picks. LLaVA-NeXT and LLaVA-NeXT-Video add ``image_newline`` [text hidden]
    (modeling_llava_next.py / modeling_llava_next_video.py; the video pooler has weights only when
    ``spatial_pool_mode`` is "conv", which is refused). Raises KvMathError for a non-CLIP tower."""
    mt = config.get("model_type")
    if vc.get("model_type", "clip_vision_model") != "clip_vision_model":
        raise KvMathError(f"{mt} vision_config.model_type {vc.get('model_type')!r}: kvmath estimates only a CLIP tower "
                          "from config.json; pass the model folder (its safetensors headers) or --weights-gb")
    if mt == "llava_next_video" and config.get("spatial_pool_mode") == "conv":
        raise KvMathError("llava_next_video spatial_pool_mode 'conv': its pooling convolution is not estimated; pass "
                          "the model folder (its safetensors headers) or --weights-gb")
    layers = config.get("vision_feature_layer", -2)
    feats = len(layers) if isinstance(layers, list) and layers else 1
    bias = config.get("multimodal_projector_bias", True) is not False
    w, n = _int(vc, "hidden_size"), _int(vc, "num_hidden_layers")
    ff, ps, img = _int(vc, "intermediate_size"), _int(vc, "patch_size"), _int(vc, "image_size")
    if min(w, n, ff, ps, img) < 1 or img % ps:
        raise KvMathError("llava vision_config needs positive hidden_size, num_hidden_layers, intermediate_size, "
                          "patch_size and an image_size divisible by it to estimate the vision tower")
    t = "model.vision_tower"
    rows = [(f"{t}.embeddings.class_embedding", dt, (w,)), (f"{t}.embeddings.patch_embedding.weight", dt, (w, 3, ps, ps)),
            (f"{t}.embeddings.position_embedding.weight", dt, ((img // ps) ** 2 + 1, w)),
            (f"{t}.pre_layrnorm.weight", dt, (w,)), (f"{t}.pre_layrnorm.bias", dt, (w,))]
    rows += _vit_layers(f"{t}.encoder.layers", n, w, ff, dt)
    j = "model.multi_modal_projector"
    rows += [(f"{t}.post_layernorm.weight", dt, (w,)), (f"{t}.post_layernorm.bias", dt, (w,)),
             (f"{j}.linear_1.weight", dt, (text_hidden, w * feats)),
             (f"{j}.linear_2.weight", dt, (text_hidden, text_hidden))]
    if bias:
        rows += [(f"{j}.linear_1.bias", dt, (text_hidden,)), (f"{j}.linear_2.bias", dt, (text_hidden,))]
    if mt in ("llava_next", "llava_next_video"):
        rows.append(("model.image_newline", dt, (text_hidden,)))
    return rows


def _moonvit(vc: dict, dt: str, text_hidden: int) -> list[tuple[str, str, tuple]]:
    """Kimi K2.5 / K2.6's MoonViT tower and patch-merger projector (transformers 5.23 models/kimi_k25
    ``Kimi_K25VisionConfig``, modeling_kimi_k25.py): a patch embedding [w, 3, p, p] with its bias, a learned
    position table [pos_emb_height, pos_emb_width, w]; per layer two LayerNorms, q / k / v / proj [w, w] with
    biases and an fc1 / fc2 MLP [ff, w] / [w, ff] with biases; a final LayerNorm; then ``mm_projector``: a
    LayerNorm [w], ``in_proj`` [m w, m w] and ``out_proj`` [text hidden, m w] with biases, m the
    ``merge_kernel_size`` product. The published configs write the tower's sizes as ``vt_hidden_size``,
    ``vt_num_hidden_layers``, ``vt_intermediate_size`` and the table as ``init_pos_emb_*`` (the names vLLM's
    kimi_k25 config reads); transformers reads ``hidden_size`` ... and else takes its class defaults (1152, 27,
    4304, 64 x 64), so both names are read and must agree."""
    def one(names: tuple, default: int) -> int:
        got = {vc[k] for k in names if isinstance(vc.get(k), int) and not isinstance(vc.get(k), bool)}
        if len(got) > 1:
            raise KvMathError(f"kimi_k25 vision_config sets {' and '.join(names)} differently: cannot estimate the "
                              "vision tower")
        v = got.pop() if got else default
        if v < 1:
            raise KvMathError(f"kimi_k25 vision_config {names[0]} must be a positive integer, got {v}")
        return v

    w = one(("vt_hidden_size", "hidden_size"), 1152)
    n = one(("vt_num_hidden_layers", "num_hidden_layers"), 27)
    ff = one(("vt_intermediate_size", "intermediate_size"), 4304)
    ph = one(("init_pos_emb_height", "pos_emb_height"), 64)
    pw = one(("init_pos_emb_width", "pos_emb_width"), 64)
    ps = one(("patch_size",), 14)
    mk = vc.get("merge_kernel_size", [2, 2])
    if not (isinstance(mk, list) and mk and all(isinstance(k, int) and not isinstance(k, bool) and 0 < k <= 64
                                                 for k in mk)):
        raise KvMathError(f"kimi_k25 vision_config merge_kernel_size must be a list of positive integers, got "
                          f"{str(mk)[:40]}")
    m = math.prod(mk)
    t = "model.vision_tower"
    rows = [(f"{t}.patch_embed.proj.weight", dt, (w, 3, ps, ps)), (f"{t}.patch_embed.proj.bias", dt, (w,)),
            (f"{t}.patch_embed.pos_emb.position_embeddings", dt, (ph, pw, w))]
    for i in range(n):
        p = f"{t}.layers.{i}"
        for norm in ("norm1", "norm2"):
            rows += [(f"{p}.{norm}.weight", dt, (w,)), (f"{p}.{norm}.bias", dt, (w,))]
        for proj in ("q_proj", "k_proj", "v_proj", "proj"):
            rows += [(f"{p}.attn.{proj}.weight", dt, (w, w)), (f"{p}.attn.{proj}.bias", dt, (w,))]
        rows += [(f"{p}.mlp.fc1.weight", dt, (ff, w)), (f"{p}.mlp.fc1.bias", dt, (ff,)),
                 (f"{p}.mlp.fc2.weight", dt, (w, ff)), (f"{p}.mlp.fc2.bias", dt, (w,))]
    rows += [(f"{t}.final_layernorm.weight", dt, (w,)), (f"{t}.final_layernorm.bias", dt, (w,))]
    j = "model.mm_projector"
    rows += [(f"{j}.pre_norm.weight", dt, (w,)), (f"{j}.pre_norm.bias", dt, (w,)),
             (f"{j}.in_proj.weight", dt, (m * w, m * w)), (f"{j}.in_proj.bias", dt, (m * w,)),
             (f"{j}.out_proj.weight", dt, (text_hidden, m * w)), (f"{j}.out_proj.bias", dt, (text_hidden,))]
    return rows


def _vision_tower(vc: dict, dt: str, text_hidden: int, prefix: str = "model.vision_tower",
                  patch: bool = True) -> list[tuple[str, str, tuple]]:
    """A ViT encoder from ``vision_config`` (or ``audio_config``): per layer fused-free q/k/v/o with
    biases, a two-matrix MLP with biases and two LayerNorms (weight + bias); a patch embedding
    (channels x patch^2 (x temporal patch) x width) and a projector to the text width. The common
    SigLIP / CLIP / Qwen-VL layout; towers with gated MLPs or extra blocks differ by their small
    parts."""
    w = _int(vc, "hidden_size", "embed_dim", "d_model", "width", default=0)
    if w <= 0:  # a tower left out would be a silent shortfall of the weights
        raise KvMathError(f"{prefix.rpartition('.')[2]} config has none of hidden_size, embed_dim, d_model, width: "
                          "its weights cannot be estimated; pass the model folder (its safetensors headers) or the "
                          "checkpoint size (--weights-gb)")
    n = _int(vc, "num_hidden_layers", "depth", "encoder_layers", "num_layers", default=0)
    ff = _int(vc, "intermediate_size", "encoder_ffn_dim", default=4 * w)
    rows = _vit_layers(f"{prefix}.encoder.layers", n, w, ff, dt)
    if patch:
        ps = _int(vc, "patch_size", default=14)
        ch = _int(vc, "num_channels", "in_channels", "in_chans", default=3)
        tps = _int(vc, "temporal_patch_size", default=1)
        rows.append((f"{prefix}.embeddings.patch_embedding.weight", dt, (w, ch, tps, ps, ps)))
    out = _int(vc, "out_hidden_size", "projection_dim", default=text_hidden)
    rows.append((f"{prefix}.projector.weight", dt, (out, w)))
    return rows
