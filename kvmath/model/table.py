"""A tensor table held as columns: the rows of :class:`kvmath.model.checkpoint.Checkpoint` without a Python object
per tensor until one is asked for.

A 400,963-entry safetensors header (issue 21: "any answer within 1 s") made 1.6 million JSON objects, then
400,963 ``Tensor`` rows, then a tuple per row for each question asked of them (duplicates, layers present,
placement); each of those passes cost a quarter to a full second. Here a table is:

- ``kinds``: the distinct ``(dtype, shape, nbytes)`` of its rows (a few dozen in 400,000) and ``kind_of``, each row's
  number in it (a numpy array);
- ``prefixes`` / ``prefix_of``: each row's module prefix, the name up to and with its last dot
  (``model.layers.3.mlp.experts.7.up_proj.``; ``""`` for a name without a dot), and ``leaves`` / ``leaf_of``, the
  rest (``weight_packed``): a name is ``prefix + leaf``, read back exactly;
- ``files`` / ``file_of``: the file each row was read from.

:func:`fast_header` fills these columns straight from the bytes of a safetensors header written the way the
``safetensors`` crate writes one (huggingface/safetensors ``safetensors/src/tensor.rs``: ``serde_json`` compact
output, each entry ``{"dtype":..,"shape":[..],"data_offsets":[b,e]}``, ``__metadata__`` first, spaces after the
closing brace up to an 8-byte boundary), checking every byte of that grammar; any other header (other key order,
whitespace, escapes, non-ASCII names, a duplicate name, a refused entry) returns None and is read by the general
JSON reader, which names what is wrong. Both give the same table.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from operator import itemgetter


@dataclass(frozen=True)
class Tensor:
    """One stored tensor: ``name`` as saved, ``dtype`` (a safetensors dtype name), ``shape``, ``nbytes``."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    file: str = ""

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _tensor(name: str, dtype: str, shape: tuple, nbytes: int, file: str) -> Tensor:
    """``Tensor(name, dtype, shape, nbytes, file)`` without the frozen dataclass's per-field ``__setattr__``
    (the same object: equal, hashed and shown alike; 0.3 s of 400,000 header entries)."""
    t = object.__new__(Tensor)
    d = t.__dict__
    d["name"], d["dtype"], d["shape"], d["nbytes"], d["file"] = name, dtype, shape, nbytes, file
    return t


_META = re.compile(rb'\{"__metadata__":(\{[^{}\\]*\}),"')
_INT = r"(?:0|[1-9][0-9]{0,14})"
_KIND = re.compile(r'([A-Za-z0-9_]{1,16})","shape":\[(%s(?:,%s){0,15})?' % (_INT, _INT))
_DTYPE_KEY, _OFFSETS_KEY = b"dtype", b"data_offsets"
_NOT_EXPERT_NUMBER = re.compile(r"[0-9](?<![^.\n][0-9])(?<!experts\.[0-9])[0-9]*(?=\.)")  # a digit first: fast to skip
_LAYER_AND_REST = re.compile(r"(?m)^(?:((?:[^\n]*?\.)??(?:layers|h|blocks)\.)(\d+)\.)?([^\n]*)$")
_FIRST_LAYER = re.compile(r"(?m)^(?:[^\n]*?\.)??(?:layers|h|blocks)\.(\d+)\.")


class TensorTable:
    """Rows of tensors as columns (module docstring). ``sort_in_files``: :meth:`rows` lists each file's rows sorted by
    name (as a safetensors header's table was listed), else in the order given."""

    def __init__(self, prefixes, prefix_of, leaves, leaf_of, kinds, kind_of, files, file_of, sort_in_files=False):
        self.prefixes, self.prefix_of = list(prefixes), prefix_of
        self.leaves, self.leaf_of = list(leaves), leaf_of
        self.kinds, self.kind_of = list(kinds), kind_of
        self.files, self.file_of = list(files), file_of
        self.sort_in_files = sort_in_files

    def __len__(self) -> int:
        return len(self.kind_of)

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorTable) and self.rows() == other.rows()

    __hash__ = None

    @classmethod
    def from_rows(cls, tensors) -> "TensorTable":
        """The table of ``Tensor`` rows (kept in their order)."""
        import numpy as np

        tensors = tuple(tensors)
        split = list(map(str.rpartition, (t.name for t in tensors), repeat(".")))
        prefixes = [p + d for p, d, _ in split]
        cols = [prefixes, list(map(itemgetter(2), split)), [(t.dtype, t.shape, t.nbytes) for t in tensors],
                [t.file for t in tensors]]
        out = []
        for col in cols:
            ids = {v: i for i, v in enumerate(dict.fromkeys(col))}
            out += [list(ids), np.fromiter(map(ids.__getitem__, col), np.int64, len(col))]
        table = cls(*out)
        table.__dict__["rows"] = lambda: tensors  # the rows as given: the same objects
        return table

    @classmethod
    def concat(cls, tables) -> "TensorTable":
        """One table of ``tables``' rows, in order (each column's distinct values merged)."""
        import numpy as np

        tables = list(tables)
        if len(tables) == 1:
            return tables[0]
        out = []
        for values, of in (("prefixes", "prefix_of"), ("leaves", "leaf_of"), ("kinds", "kind_of"), ("files", "file_of")):
            ids: dict = {}
            parts = []
            for t in tables:
                remap = np.array([ids.setdefault(v, len(ids)) for v in getattr(t, values)], np.int64)
                parts.append(remap[getattr(t, of)] if len(remap) else np.zeros(0, np.int64))
            out += [list(ids), np.concatenate(parts) if parts else np.zeros(0, np.int64)]
        return cls(*out, sort_in_files=all(t.sort_in_files for t in tables))

    @cached_property
    def names(self) -> list[str]:
        """Each row's tensor name (made when first asked for)."""
        return list(map(str.__add__, map(self.prefixes.__getitem__, self.prefix_of.tolist()),
                        map(self.leaves.__getitem__, self.leaf_of.tolist())))

    def rows(self) -> tuple:
        """The rows as ``kvmath.model.checkpoint.Tensor`` objects (made once, when first asked for)."""
        cached = self.__dict__.get("_rows")
        if cached is not None:
            return cached
        names, kinds, files = self.names, self.kinds, self.files
        order = range(len(names))
        if self.sort_in_files and len(names):
            import numpy as np

            cuts = [0, *(np.flatnonzero(np.diff(self.file_of)) + 1).tolist(), len(names)]
            order = [i for a, b in zip(cuts, cuts[1:]) for i in sorted(range(a, b), key=names.__getitem__)]
        k_of, f_of = self.kind_of.tolist(), self.file_of.tolist()
        out = tuple(_tensor(names[i], *kinds[k_of[i]], files[f_of[i]]) for i in order)
        self.__dict__["_rows"] = out
        return out

    def kind_counts(self) -> list[int]:
        """Rows of each kind (``kinds[i]``: ``counts[i]`` rows)."""
        import numpy as np

        return np.bincount(self.kind_of, minlength=len(self.kinds)).tolist()

    def total_bytes(self) -> int:
        """Bytes of every row (Python integers: no overflow)."""
        return sum(n * k[2] for n, k in zip(self.kind_counts(), self.kinds))

    def has_duplicates(self) -> bool:
        """True when a name is on two rows."""
        import numpy as np

        codes = np.sort(self.prefix_of * max(len(self.leaves), 1) + self.leaf_of)
        return bool((codes[1:] == codes[:-1]).any())

    def decoder_layers(self, not_decoder: re.Pattern) -> set[int]:
        """The decoder layer numbers the rows hold: the first ``layers.N.`` / ``h.N.`` / ``blocks.N.`` of each module
        prefix, not counting a prefix that matches ``not_decoder`` nor rows whose leaf does (towers, MTP layers).
        A prefix is kept when one of its rows' leaves passes (``kvmath.model.checkpoint._check_layers_present``)."""
        import numpy as np

        if not len(self):
            return set()
        leaf_ok = np.array([not not_decoder.search(x) for x in self.leaves], bool)
        kept = np.zeros(len(self.prefixes), bool)
        kept[self.prefix_of[leaf_ok[self.leaf_of]]] = True
        canon = self.canonical_prefixes
        canon_ok = {c: not not_decoder.search(c) for c in set(canon)}
        lines = [p for p, k, c in zip(self.prefixes, kept.tolist(), canon) if k and canon_ok[c] and p]
        return set(map(int, set(_FIRST_LAYER.findall("\n".join(lines)))))

    def layer_gap(self, not_decoder: re.Pattern, layers: int):
        """``(layer, missing, beside)`` for the first decoder layer below ``layers`` that lacks a tensor or module
        every other layer holds beside one it does hold (``beside``, held by at least two other layers, never without
        ``missing``): a layer missing some of its tensors (a damaged or partial shard). Names are within the layer
        (``self_attn.q_proj.weight_scale``), ``missing`` with the layer's stem (``model.layers.3.``). None when no
        layer has such a gap. Layers that differ as a whole pattern (dense and MoE layers, attention and linear
        attention, a module two or more layers lack) are not gaps. Prefixes and leaves as
        :meth:`decoder_layers` reads them."""
        if not len(self):
            return None
        import numpy as np

        bad = [bool(not_decoder.search(x)) for x in self.leaves]
        if len(self.leaves) <= 62:  # each prefix's leaves as one bit mask, made at once
            ok = ~np.array(bad, bool)[self.leaf_of]
            masks = np.zeros(len(self.prefixes), np.uint64)
            np.bitwise_or.at(masks, self.prefix_of[ok], np.left_shift(np.uint64(1), self.leaf_of[ok].astype(np.uint64)))
            leafsets = masks.tolist()
        else:
            sets: dict = {}
            for pid, leaf in zip(self.prefix_of.tolist(), self.leaf_of.tolist()):
                if not bad[leaf]:
                    sets.setdefault(pid, set()).add(leaf)
            leafsets = [frozenset(sets.get(i, ())) for i in range(len(self.prefixes))]
        canon_ok = {c: not not_decoder.search(c) for c in set(self.canonical_prefixes)}
        per_layer: dict = {}
        stems: dict = {}
        found = _LAYER_AND_REST.findall("\n".join(self.prefixes))
        if _layers_alike(found, self.canonical_prefixes, canon_ok, leafsets, layers):
            return None
        for (stem, num, rest), canon, leaves in zip(found, self.canonical_prefixes, leafsets):
            if not num or not leaves or not canon_ok[canon] or int(num) >= layers:
                continue
            per_layer.setdefault(int(num), set()).add((rest, leaves))
            stems.setdefault(int(num), stem)
        return _first_gap(per_layer, stems, self.leaves)

    @cached_property
    def canonical_prefixes(self) -> list[str]:
        """Each distinct prefix with its all-digit parts other than expert numbers (``experts.N``) written 0: the placement
        rules (``kvmath.engines.vllm.weights._module_facts``) read a module's names and its expert number, never a
        layer number, so prefixes of one canonical form are placed alike."""
        return _NOT_EXPERT_NUMBER.sub("0", "\n".join(self.prefixes)).split("\n")


def _gather(a, starts, width: int):
    """Rows of ``width`` bytes of the uint8 array ``a`` from each of ``starts`` (``a`` padded by the caller)."""
    from numpy.lib.stride_tricks import sliding_window_view

    return sliding_window_view(a, width)[starts]  # one copy of the rows, no index array


def _region_ids(a, starts, lengths, cap: int):
    """(representative row of each distinct byte string, each row's number among them) of the regions
    ``a[starts[i]:starts[i] + lengths[i]]``, found by a 64-bit hash of each and checked byte by byte (None when the
    longest is over ``cap`` bytes or two different regions share a hash)."""
    import numpy as np

    if not len(starts):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    width = max(int(lengths.max()), 1)
    if width > cap:
        return None
    w8 = -(-width // 8) * 8
    g = _gather(a, starts, w8)
    g[np.arange(w8)[None, :] >= lengths[:, None]] = 0
    words = g.view(np.uint64)
    h = lengths.astype(np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            h = h * np.uint64(0x100000001B3) ^ words[:, j]
    order = np.argsort(h, kind="stable")
    hs = h[order]
    new = np.empty(len(hs), bool)
    new[0], new[1:] = True, hs[1:] != hs[:-1]
    first = order[new]  # the first row of each distinct hash
    inv = np.empty(len(h), np.int64)
    inv[order] = np.cumsum(new) - 1
    if not (g == g[first[inv]]).all() or not (lengths == lengths[first[inv]]).all():
        return None
    return first, inv


def fast_header(raw: bytes, data_len: int, file: str, dtype_bits: dict):
    """``(TensorTable, __metadata__)`` of the safetensors header text ``raw`` (the JSON after the 8-byte length) when
    it is written as the safetensors crate writes it (module docstring) and every entry passes the checks of
    ``kvmath.model.checkpoint.parse_safetensors_header``: a known dtype (``dtype_bits``, lower-case names), at most 16
    dimensions each below 2^48, ``data_offsets`` of exactly the bytes the dtype and shape give, tiling the
    ``data_len`` bytes after the header back to back, no name twice. None otherwise (the general reader then reads
    it and names the entry refused)."""
    import numpy as np

    end = len(raw.rstrip(b" "))
    if end < 4 or not raw.isascii() or b"\\" in raw or raw[end - 1:end] != b"}":
        return None
    a = np.frombuffer(raw, np.uint8)
    if a.min() < 32:  # JSON strings hold no raw control character
        return None
    meta, first = {}, 1
    m = _META.match(raw)
    if m:
        from ..validate import _DuplicateKey, _unique_keys

        try:
            meta = json.loads(m.group(1), object_pairs_hook=_unique_keys)
        except (ValueError, _DuplicateKey):
            return None
        first = m.end() - 1
    elif raw[:2] != b'{"':
        return None
    q = np.flatnonzero(a[first:end] == 34) + first
    n = len(q) // 10
    if n == 0 or len(q) != 10 * n:
        return None
    a = np.concatenate([a[:end], np.zeros(64, np.uint8)])
    Q = q.reshape(n, 10)
    q0, q1, q2, q3, q4, q8, q9 = (Q[:, i] for i in (0, 1, 2, 3, 4, 8, 9))
    nxt = np.empty(n, np.int64)
    nxt[:-1], nxt[-1] = q0[1:], end
    ok = (q0[0] == first and (q2 == q1 + 3).all() and (q3 == q2 + 6).all() and (q4 == q3 + 2).all()
          and (q9 == q8 + 13).all() and (a[nxt[:-1] - 1] == 44).all() and a[end - 1] == 125)
    for pos, text in ((q1 + 1, b":{"), (q2 + 1, _DTYPE_KEY), (q3 + 1, b":"), (q8 - 2, b"],"),
                      (q8 + 1, _OFFSETS_KEY), (q9 + 1, b":["), (nxt - 3, b"]}")):
        ok = ok and all((a[pos + i] == c).all() for i, c in enumerate(text))
    if not ok:
        return None
    kinds = _kinds(raw, a, q4 + 1, q8 - 2 - (q4 + 1), dtype_bits)
    offs = _offsets(a, q9 + 3, nxt - 3 - (q9 + 3))
    if kinds is None or offs is None:
        return None
    kind_list, kind_of = kinds
    begins, ends = offs
    nb = np.array([k[2] for k in kind_list], np.int64)[kind_of]
    if not ((ends - begins) == nb).all() or ends.max() > data_len:
        return None
    order = np.argsort(begins, kind="stable")
    b, e = begins[order], ends[order]
    if b[0] != 0 or not (b[1:] == e[:-1]).all() or e[-1] != data_len:
        return None
    names = _names(raw, a, q0 + 1, q1)
    if names is None:
        return None
    table = TensorTable(*names, kind_list, kind_of, [file], np.zeros(n, np.int64), sort_in_files=True)
    if table.has_duplicates():
        return None
    return table, meta


def _kinds(raw: bytes, a, starts, lengths, dtype_bits: dict):
    """(distinct (dtype, shape, nbytes), each row's number) of the ``DT","shape":[d0,d1`` regions, or None when one
    is not a known dtype and a shape of at most 16 integers below 2^48."""
    if (lengths < 1).any():
        return None
    ids = _region_ids(a, starts, lengths, 384)
    if ids is None:
        return None
    first, inv = ids
    kinds = []
    for r in first.tolist():
        s = int(starts[r])
        m = _KIND.fullmatch(raw[s:s + int(lengths[r])].decode("ascii"))
        dtype = m.group(1).lower() if m else None
        if dtype not in dtype_bits:
            return None
        shape = tuple(map(int, m.group(2).split(","))) if m.group(2) else ()
        if any(d >= 2**48 for d in shape):
            return None
        nbytes = -(-math.prod(shape) * dtype_bits[dtype] // 8)
        if nbytes >= 2**62:
            return None
        kinds.append((dtype, shape, nbytes))
    return kinds, inv


def _offsets(a, starts, lengths):
    """(begins, ends) of the ``b,e`` regions (JSON integers: no sign, no leading zero, at most 18 digits), or None."""
    import numpy as np

    if (lengths < 3).any() or lengths.max() > 37:
        return None
    w = int(lengths.max()) + 1
    g = _gather(a, starts, w)
    inside = np.arange(w)[None, :] < lengths[:, None]
    comma = (g == 44) & inside
    digit = (g >= 48) & (g <= 57)
    if not (comma.sum(1) == 1).all() or not (digit | comma | ~inside).all():
        return None
    rows = np.arange(len(starts))
    c = comma.argmax(1)
    left, right = c, lengths - c - 1
    if (left < 1).any() or (right < 1).any() or (left > 18).any() or (right > 18).any():
        return None
    if ((g[:, 0] == 48) & (left > 1)).any() or ((g[rows, c + 1] == 48) & (right > 1)).any():
        return None
    text = np.where(inside, g, 32).astype(np.uint8)
    text[rows, lengths] = 44
    text[-1, lengths[-1]] = 32
    vals = np.fromstring(text.tobytes(), dtype=np.int64, sep=",")  # text mode (sep given): not deprecated
    if len(vals) != 2 * len(starts):
        return None
    return vals[0::2], vals[1::2]


def _names(raw: bytes, a, starts, ends):
    """(prefixes, prefix_of, leaves, leaf_of) of the name regions ``raw[starts[i]:ends[i]]`` (split after the last dot),
    or None."""
    import numpy as np

    dots = np.flatnonzero(a == 46)
    i = np.searchsorted(dots, ends) - 1
    last = np.where(i >= 0, dots[np.maximum(i, 0)] if len(dots) else 0, -1)
    cut = np.where(last >= starts, last + 1, starts)  # the leaf begins after the last dot of the name
    out = []
    for s, e, cap in ((starts, cut, 512), (cut, ends, 512)):
        ids = _region_ids(a, s, e - s, cap)
        if ids is None:
            return None
        first, inv = ids
        out += [list(map(bytes.decode, map(raw.__getitem__, map(slice, s[first].tolist(), e[first].tolist())))), inv]
    return out


def _layers_alike(found: list, canon: list, canon_ok: dict, leafsets: list, layers: int) -> bool:
    """True when every decoder layer below ``layers`` holds the same (module path within the layer, leaves) pairs as
    every other, checked over all prefixes at once (:meth:`TensorTable.layer_gap` has no gap to find then; 80,451
    prefixes of a 64-layer, 416-expert header in a few hundredths of a second, where building each layer's set takes
    a tenth). False when they differ or a leaf set is not a bit mask: the caller then compares layer by layer."""
    import numpy as np

    if not found or not all(isinstance(x, int) for x in leafsets[:1]):
        return False
    ids: dict = {}
    rest = np.array([ids.setdefault(r, len(ids)) for _, _, r in found], np.int64)
    num = np.array([int(n) if n else -1 for _, n, _ in found], np.int64)
    ok = np.array(list(map(canon_ok.__getitem__, canon)), bool) & (num >= 0) & (num < layers)
    mask = np.array(leafsets, np.uint64)
    ok &= mask != 0
    if not ok.any():
        return True
    _, mask_id = np.unique(mask[ok], return_inverse=True)
    rest, num = rest[ok], num[ok]
    pair = rest * (int(mask_id.max()) + 1) + mask_id.ravel()  # (path, leaves) as one number
    _, pair = np.unique(pair, return_inverse=True)
    pair = pair.ravel()
    n_layers = len(np.unique(num))
    cells = np.unique(num * (int(pair.max()) + 1) + pair)  # no layer holds one pair twice ...
    return len(cells) == len(num) and bool((np.bincount(pair) == n_layers).all())  # ... and every layer holds each


def _first_gap(per_layer: dict, stems: dict, leaf_names: list):
    """:meth:`TensorTable.layer_gap` on ``{layer: {(module path within it, its leaves as a bit mask or a set)}}``."""
    groups: dict = {}  # identical layers once: {frozenset of (path, leaves): [layers]}
    for layer, nodes in per_layer.items():
        groups.setdefault(frozenset(nodes), []).append(layer)
    if len(groups) < 2:
        return None
    tree_of = {}  # each distinct layer's tree: {parent path: children}
    for nodes in groups:
        children: dict = {}
        for rest, leaves in nodes:
            ids = leaves if isinstance(leaves, frozenset) else [i for i in range(62) if leaves >> i & 1]
            for leaf in ids:
                parts = (rest + leaf_names[leaf]).split(".")
                for k in range(1, len(parts) + 1):
                    children.setdefault(".".join(parts[:k - 1]), set()).add(parts[k - 1])
        tree_of[nodes] = children
    held: dict = {}  # parent -> child -> layers holding it
    for nodes, layer_list in groups.items():
        for parent, kids in tree_of[nodes].items():
            for kid in kids:
                held.setdefault(parent, {}).setdefault(kid, set()).update(layer_list)
    for nodes, layer_list in sorted(groups.items(), key=lambda g: min(g[1])):
        mine = set(layer_list)
        for parent, kids in tree_of[nodes].items():
            missing = sorted(set(held[parent]) - kids)
            if not missing:
                continue
            for kid in sorted(kids):
                others = held[parent][kid] - mine
                if len(others) < 2:
                    continue
                for x in missing:
                    if others <= held[parent][x]:
                        i = min(layer_list)
                        name = f"{parent}.{x}" if parent else x
                        return i, f"{stems[i]}{i}.{name}", (f"{parent}.{kid}" if parent else kid)
    return None
