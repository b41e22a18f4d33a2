"""Weights per device: a GGUF tensor table placed the way llama.cpp places it.

Rules from llama.cpp 0c1e570 (``src/llama-model.cpp`` ``load_tensors``, ``src/llama-model-loader.cpp``
``get_mapping_range``, ``common/arg.cpp`` / ``common/common.h`` for ``--n-cpu-moe``), numbered so the
tests and the chapter can name them:

1. Layers. ``i_gpu_start = max(n_layer_all + 1 - n_gpu_layers, 0)``; block ``il`` goes to a GPU when
   ``il >= i_gpu_start``; the output layer counts as layer ``n_layer_all`` (so ``-ngl`` must exceed the
   block count to offload it). ``-ngl`` -1 (or ``all`` / ``auto``) means every layer.
2. ``--tensor-split`` / ``-ts``: cumulative split points ``s_i`` (normalised); an offloaded layer goes to
   the first device whose split point exceeds ``(il - i_gpu_start) / act_gpu_layers``. Without ``-ts``
   llama.cpp splits by each device's *free* memory; here the devices' memory is passed in.
3. The input layer (``token_embd``, Gemma's ``per_layer_token_embd``) always stays on the CPU ("there is
   very little benefit to offloading the input layer").
4. A tied output head (no ``output.weight``) loads ``token_embd.weight`` a second time on the output device.
5. ``-ot PATTERN=BUFT`` moves every tensor whose name matches (``std::regex_search``) to that buffer type;
   ``--n-cpu-moe N`` adds ``blk\\.i\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU`` for ``i < N``; ``--cpu-moe``
   does it for every block. Overrides are tried in order, the first match wins.
6. Host buffers. With mmap (the default) a CPU buffer is the *mapped span* of the file between the first
   and the last byte of the tensors it holds (``get_mapping_range``), gaps included: ``CPU_Mapped model
   buffer size``. Without mmap (``--no-mmap``) CPU tensors are copied into a pinned ``CUDA_Host`` buffer
   (their sum); the input embedding stays in a plain ``CPU`` buffer.
7. A CUDA buffer is the sum of its tensors, each padded as ``ggml_backend_cuda_buffer_type_get_alloc_size``
   does (a quantised matrix whose row length is not a multiple of ``MATRIX_ROW_PADDING`` = 512 gets the
   bytes of the missing elements) and aligned to 128 bytes.
8. ``-sm row``: the 2-D weights of offloaded layers are split by rows over the devices in the ``-ts``
   proportions (``CUDA_Split`` buffers, rows rounded to the quantisation block); the rest stays on the main
   GPU (``-mg``, device 0). ``-sm none``: everything offloaded goes to the main GPU.

Not modelled: CPU "extra" buffer types (``CPU_REPACK`` for AVX2/ARM repacked Q4_0 / IQ4_NL when the CPU
holds weights), Metal / Vulkan / ROCm buffer rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import KvMathError
from ...units import MiB, round_up

EXPS = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"
"""``LLM_FFN_EXPS_REGEX`` (common/common.h)."""
CUDA_ALIGNMENT = 128
MATRIX_ROW_PADDING = 512
BLOCK = re.compile(r"^blk\.(\d+)\.")
"""A block tensor's name (``blk.<N>.``): the one pattern every llama.cpp rule here reads the block from."""


@dataclass(frozen=True)
class Tensor:
    """One tensor of a GGUF table: name, shape (ggml order, ne0 first), ggml type name, bytes, file offset."""

    name: str
    shape: tuple[int, ...]
    ggml_type: str
    n_bytes: int
    offset: int = 0


def tensors_from_header(header) -> tuple[Tensor, ...]:
    """The tensor table of a :class:`kvmath.model.gguf.GGUFHeader` as :class:`Tensor` records (offsets
    absolute in the file, as llama.cpp's mapping uses them)."""
    return tuple(Tensor(t.name, tuple(int(x) for x in t.shape), getattr(t.tensor_type, "name", str(t.tensor_type)),
                        int(t.n_bytes), int(header.data_offset + t.data_offset)) for t in header.tensors)


def _block_size(ggml_type: str) -> tuple[int, int]:
    from .formats import ggml_block

    return ggml_block(ggml_type)


def cuda_alloc_size(t: Tensor) -> int:
    """Rule 7: bytes a tensor takes in a CUDA buffer (row padding for quantised types, 128-byte alignment)."""
    size = t.n_bytes
    elems, nbytes = _block_size(t.ggml_type)
    if elems > 1 and t.shape and t.shape[0] % MATRIX_ROW_PADDING:
        size += (MATRIX_ROW_PADDING - t.shape[0] % MATRIX_ROW_PADDING) // elems * nbytes
    return round_up(size, CUDA_ALIGNMENT)


@dataclass(frozen=True)
class Placement:
    """Where every tensor went and what each buffer logs (``load_tensors: <BUF> model buffer size``)."""

    device_of: dict = field(repr=False)          # tensor name -> buffer name ("CUDA0", "CPU_Mapped", ...)
    buffers: dict                                # buffer name -> bytes, as the buffer is allocated
    n_layer: int
    n_gpu_layers: int
    offloaded: int                               # "offloaded X/Y layers to GPU": X
    notes: tuple[str, ...] = ()
    layer_device: tuple[str, ...] = ()           # device of block 0 .. n_layer-1, then of the output layer

    def device_bytes(self, device: str) -> int:
        return self.buffers.get(device, 0)

    @property
    def host_bytes(self) -> int:
        return sum(v for k, v in self.buffers.items() if not k.startswith("CUDA") or k == "CUDA_Host")

    def log_lines(self) -> list[str]:
        """The ``load_tensors`` lines llama.cpp prints (buffer names right-aligned to 10, MiB to 2 places)."""
        out = [f"load_tensors: offloaded {self.offloaded}/{self.n_layer + 1} layers to GPU"]
        order = sorted(self.buffers, key=lambda k: (not k.startswith("CUDA") or k == "CUDA_Host", k))
        for k in order:
            out.append(f"load_tensors: {k:>12} model buffer size = {self.buffers[k] / MiB:10.2f} MiB")
        return out


def _ngl(n_gpu_layers, n_layer_all: int) -> int:
    if n_gpu_layers in (None, -1, "all", "auto", "-1"):
        return n_layer_all + 1
    text = str(n_gpu_layers).strip() if isinstance(n_gpu_layers, (int, str)) and not isinstance(n_gpu_layers,
                                                                                                    bool) else ""
    # std::stoi (common/arg.cpp, kvmath.validate.engine_int); more layers than the model has = all of them
    from ...validate import engine_int

    try:
        n = engine_int(str(n_gpu_layers) if isinstance(n_gpu_layers, (int, str)) and not isinstance(n_gpu_layers, bool)
                       else "", "-ngl", "stoi")
    except KvMathError:
        raise KvMathError(f"-ngl must be a number of layers (a 32-bit integer), 'all' or 'auto', got "
                          f"{str(n_gpu_layers)[:40]!r}") from None
    if n < 0:
        return n_layer_all + 1
    return n


def parse_override(spec: str) -> tuple[str, str]:
    """``-ot`` / ``--override-tensor`` value ``PATTERN=BUFT`` (several joined by commas are split by the caller)."""
    if not isinstance(spec, str) or "=" not in spec:
        raise KvMathError(f"-ot takes PATTERN=BUFFER (e.g. 'exps=CPU'), got {spec!r}")
    pat, buft = spec.rsplit("=", 1)
    try:
        re.compile(pat)
    except re.error as e:
        raise KvMathError(f"-ot pattern {pat!r} is not a regular expression: {e}") from None
    return pat, buft.strip()


def _split_points(tensor_split, device_free, n: int) -> list[float]:
    """Rule 2: cumulative, normalised split points of ``n`` devices (``-ts``, else each device's free memory)."""
    if tensor_split and any(float(x) for x in tensor_split):
        ts = [float(x) for x in tensor_split][:n]
        ts += [0.0] * (n - len(ts))
    elif device_free:
        ts = [float(x) for x in device_free][:n]
    else:
        ts = [1.0] * n
    if any(x < 0 for x in ts) or sum(ts) <= 0:
        raise KvMathError(f"--tensor-split needs non-negative proportions with a positive sum, got {tensor_split!r}")
    acc, splits = 0.0, []
    for x in ts:
        acc += x
        splits.append(acc)
    return [x / acc for x in splits]


def layer_devices(n_layer_all: int, ngl: int, splits: list[float], split_mode: str, main: int) -> tuple[str, ...]:
    """Rules 1-2: the device of each block ``0 .. n_layer_all - 1`` and, last, of the output layer."""
    i_gpu_start = max(n_layer_all + 1 - ngl, 0)
    act = min(ngl, n_layer_all + 1)

    def dev(il: int) -> str:
        if il < i_gpu_start or (il - i_gpu_start) >= act:
            return "CPU"
        if split_mode != "layer":
            return f"CUDA{main}"
        x = (il - i_gpu_start) / act
        return f"CUDA{next((k for k, s in enumerate(splits) if s > x), len(splits) - 1)}"

    return tuple(dev(il) for il in range(n_layer_all + 1))


def _overrides(override_tensor, n_moe: int, n_layer_all: int) -> list[tuple[re.Pattern, str]]:
    """Rule 5: user ``-ot`` first, then ``--n-cpu-moe`` / ``--cpu-moe`` as common/arg.cpp appends them."""
    ovr: list[tuple[re.Pattern, str]] = []
    for spec in override_tensor or ():
        for part in (spec.split(",") if isinstance(spec, str) else [spec]):
            pat, buft = parse_override(part) if isinstance(part, str) else part
            ovr.append((re.compile(pat), buft))
    for i in range(min(n_moe, n_layer_all)):
        ovr.append((re.compile(rf"blk\.{i}{EXPS}"), "CPU"))
    return ovr


def _host_buffers(host, mmap: bool) -> dict[str, int]:
    """Rule 6: the host buffers of the tensors left on the CPU."""
    buffers: dict[str, int] = {}
    if mmap:
        spans = [t for t in host if t.offset >= 0]
        dup = sum(t.n_bytes for t in host if t.offset < 0)
        if spans:
            buffers["CPU_Mapped"] = max(t.offset + t.n_bytes for t in spans) - min(t.offset for t in spans)
        if dup:
            buffers["CPU"] = dup
    else:
        for t in host:
            key = "CPU" if t.name.startswith(("token_embd.", "per_layer_token_embd.")) else "CUDA_Host"
            buffers[key] = buffers.get(key, 0) + t.n_bytes
    return buffers


def _row_split(t: Tensor, splits: list[float], buffers: dict[str, int]) -> None:
    """Rule 8: a 2-D weight split by rows over the devices (``CUDA<i>_Split`` buffers)."""
    rows = t.shape[1]
    row_bytes = t.n_bytes // rows
    prev = 0
    for i, s in enumerate(splits):
        edge = rows if i == len(splits) - 1 else int(round(s * rows))
        r = max(edge - prev, 0)
        if r:
            part = Tensor(t.name, (t.shape[0], r), t.ggml_type, r * row_bytes, t.offset)
            buffers[f"CUDA{i}_Split"] = buffers.get(f"CUDA{i}_Split", 0) + cuda_alloc_size(part)
        prev = edge


def place(tensors, *, n_layer: int | None = None, n_gpu_layers=-1, n_cpu_moe: int = 0, cpu_moe: bool = False,
          override_tensor=(), tensor_split=None, split_mode: str = "layer", n_devices: int = 1,
          device_free=None, mmap: bool = True, main_gpu: int = 0) -> Placement:
    """Place a tensor table (:class:`Tensor` records) on ``CUDA0..CUDA{n-1}`` and host buffers (rules 1-8).

    ``n_layer`` is the main model's block count; blocks at or past it (multi-token-prediction blocks) are
    not loaded for the main context and are left out (llama.cpp skips them unless an MTP draft is made).
    Raises KvMathError for a bad ``-sm``, device count, ``--n-cpu-moe``, ``-ts`` or ``-ot``.
    """
    tensors = tuple(tensors)
    blocks = [int(m.group(1)) for t in tensors if (m := BLOCK.match(t.name))]
    n_layer_all = max(blocks) + 1 if blocks else 0
    n_main = n_layer_all if n_layer is None else n_layer
    if split_mode not in ("layer", "row", "none"):
        raise KvMathError(f"-sm must be none, layer or row, got {split_mode!r}")
    if not isinstance(n_devices, int) or not 1 <= n_devices <= 16:
        raise KvMathError(f"n_devices must be 1..16, got {n_devices!r}")
    n_used = 1 if split_mode == "none" else n_devices
    ngl = _ngl(n_gpu_layers, n_layer_all)
    if isinstance(n_cpu_moe, bool) or not isinstance(n_cpu_moe, int) or n_cpu_moe < 0:
        raise KvMathError(f"--n-cpu-moe must be an integer >= 0, got {n_cpu_moe!r}")
    splits = _split_points(tensor_split, device_free, n_used)
    main = min(main_gpu, n_devices - 1) if split_mode == "none" else min(main_gpu, n_used - 1)
    devs = layer_devices(n_layer_all, ngl, splits, split_mode, main)
    ovr = _overrides(override_tensor, n_layer_all if cpu_moe else n_cpu_moe, n_layer_all)

    names = {t.name for t in tensors}
    tied = "output.weight" not in names and "token_embd.weight" in names
    out_dev = devs[n_layer_all]
    device_of: dict[str, str] = {}
    placed: list[tuple[Tensor, str]] = []
    for t in tensors:
        m = BLOCK.match(t.name)
        if m and int(m.group(1)) >= n_main:
            continue  # MTP / nextn block: not loaded for the main context
        dev = "CPU" if t.name.startswith(("token_embd.", "per_layer_token_embd.")) else (  # rule 3
            devs[int(m.group(1))] if m else out_dev)
        dev = next((b.upper().replace("CUDA_HOST", "CUDA_Host") for rx, b in ovr if rx.search(t.name)), dev)
        device_of[t.name] = dev
        placed.append((t, dev))
    if tied:
        emb = next(t for t in tensors if t.name == "token_embd.weight")
        placed.append((Tensor("output.weight (token_embd duplicated)", emb.shape, emb.ggml_type, emb.n_bytes, -1),
                       out_dev))

    buffers = _host_buffers([t for t, d in placed if d == "CPU"], mmap)
    row = split_mode == "row" and n_used > 1
    for t, d in placed:
        if d == "CPU":
            continue
        if d.startswith("CUDA") and d != "CUDA_Host":
            if row and BLOCK.match(t.name) and len(t.shape) == 2 and "exps" not in t.name:
                _row_split(t, splits, buffers)
                continue
            buffers[d] = buffers.get(d, 0) + cuda_alloc_size(t)
        else:
            buffers[d] = buffers.get(d, 0) + t.n_bytes
    notes = []
    if row:
        notes.append("-sm row: 2-D weights of offloaded layers split by rows (CUDA_Split); experts and the rest on "
                     f"the main GPU CUDA{main}")
    if tied:
        notes.append(f"tied output head: token_embd.weight loaded a second time on {out_dev}")
    offloaded = sum(1 for d in devs if d != "CPU")
    return Placement(device_of, buffers, n_layer_all, ngl, offloaded, tuple(notes), devs)


def gpu_bytes(p: Placement, device: int = 0) -> int:
    """Model bytes a CUDA device holds (its plain buffer plus its row-split share)."""
    return p.buffers.get(f"CUDA{device}", 0) + p.buffers.get(f"CUDA{device}_Split", 0)
