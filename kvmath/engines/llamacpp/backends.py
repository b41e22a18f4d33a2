"""Which ggml backend runs a llama.cpp launch: ``cuda``, ``hip``, ``vulkan``, ``metal`` or ``cpu``.

The device compute buffer is sized by the backend the graph runs on (:mod:`.compute`): the buffer type's
maximum size decides whether ``ggml-alloc`` splits the buffer into chunks, and the CPU backend holds the
graph inputs that a GPU backend leaves in its host buffer. The backend is read from what the user gives,
in this order:

1. llama.cpp's own ``-dev`` / ``--device``: the registered device names ``CUDA<i>`` (ggml-cuda), ``ROCm<i>``
   (ggml-cuda built for HIP: ``GGML_CUDA_NAME`` is ``"ROCm"``, ggml/include/ggml-cuda.h), ``Vulkan<i>``
   (ggml-vulkan), ``MTL<i>`` / ``Metal`` (ggml-metal), ``none`` (no GPU: the CPU backend);
2. the card (``--card``, or the GPU this machine reports): Apple silicon runs Metal, an AMD card HIP
   (``runtime`` in data/cards.json), an NVIDIA card CUDA;
3. otherwise (``--device-memory`` alone) the backend is not known: CUDA's rules are priced and the answer
   says so (:func:`resolve` returns the note).

Other registered backends (SYCL, MUSA, CANN, OpenCL, BLAS, RPC) have no rules read here: they are priced with
CUDA's rules, said in the note.
"""

from __future__ import annotations

import re

from ...errors import KvMathError
from ...validate import _short

BACKENDS = ("cuda", "hip", "vulkan", "metal", "cpu")
"""The backends whose compute-buffer rules were read (see :mod:`.compute`)."""

_PREFIX = {"cuda": "cuda", "rocm": "hip", "hip": "hip", "vulkan": "vulkan", "mtl": "metal", "metal": "metal",
           "cpu": "cpu", "none": "cpu"}
_OTHER = ("sycl", "musa", "cann", "opencl", "blas", "rpc")
_RUNTIME = {"cuda": "cuda", "rocm": "hip", "hip": "hip", "metal": "metal", "vulkan": "vulkan"}

VULKAN_MAX_CHUNK = 1 << 30
"""Bytes: the largest buffer ggml-vulkan hands ``ggml-alloc`` for one chunk of a compute buffer.
``ggml_backend_vk_buffer_type_get_max_size`` returns ``device->suballocation_block_size``, which is
``min(1 GiB, maxMemoryAllocationSize)`` unless ``GGML_VK_SUBALLOCATION_BLOCK_SIZE`` is set
(ggml/src/ggml-vulkan/ggml-vulkan.cpp: "Limit batching of allocations to 1GB by default", PR #11551; read in
0c1e570's tree; ollama PR #13244 of 2025-11-26 describes the same 1G cap before b7444). A driver whose
maxMemoryAllocationSize is below 1 GiB lowers it; kvmath takes 1 GiB."""


def backend_of_device(name: str) -> str | None:
    """The backend of one ``-dev`` entry (``Vulkan0`` -> ``vulkan``, ``ROCm1`` -> ``hip``, ``none`` -> ``cpu``),
    ``None`` for a registered backend without rules here (SYCL0, RPC[...]). Raises KvMathError for a name
    that is no backend."""
    n = str(name).strip().lower()
    if n.startswith("rpc["):
        return None
    m = re.fullmatch(r"([a-z]+)[0-9]{0,2}", n)
    if m and m.group(1) in _PREFIX:
        return _PREFIX[m.group(1)]
    if m and m.group(1) in _OTHER:
        return None
    raise KvMathError(f"-dev {_short(name)} is not a device name: llama.cpp's are a backend and its index "
                      "(CUDA0, ROCm1, Vulkan0, MTL0, SYCL0; none for the CPU)")


def resolve(devices: str | None, card: dict | None) -> tuple[str, str | None]:
    """The backend of a launch and a note when it was not read from the line (see the module docstring).

    ``devices``: the ``-dev`` value (comma-separated) or None; ``card``: a data/cards.json record or None.
    Returns ``(backend, note)``; ``note`` is None when ``-dev`` or the card named the backend. Raises
    KvMathError for a ``-dev`` list that mixes backends, or a card whose vendor cannot run the named one
    (Apple silicon has Metal and CPU only; ROCm/HIP is AMD's, CUDA NVIDIA's)."""
    if devices is not None:
        entries = [d for d in str(devices).split(",") if d.strip()]
        kinds = {backend_of_device(d) for d in entries}
        if len(kinds) > 1:
            raise KvMathError(f"-dev {_short(devices)} mixes backends; kvmath prices one backend per launch")
        kind = kinds.pop() if kinds else None
        if kind is not None:
            _check_card(kind, card)
            return kind, None
        return "cuda", (f"-dev {_short(devices)}: no compute-buffer rules read for that backend; priced with "
                        "CUDA's")
    if card is not None:
        rt = _RUNTIME.get(str(card.get("runtime") or "").lower())
        vendor = str(card.get("vendor") or "").lower()
        rt = rt or {"apple": "metal", "amd": "hip", "nvidia": "cuda"}.get(vendor)
        if rt is not None:
            return rt, None
    return "cuda", ("backend not named (no -dev, no card): priced as CUDA; give -dev Vulkan0 / ROCm0 / MTL0 / "
                    "none or --card for another backend")


def _check_card(kind: str, card: dict | None) -> None:
    if card is None or kind in ("vulkan", "cpu"):
        return
    vendor = str(card.get("vendor") or "").lower()
    allowed = {"apple": ("metal",), "amd": ("hip",), "nvidia": ("cuda",)}.get(vendor)
    if allowed is not None and kind not in allowed:
        raise KvMathError(f"-dev names a {kind.upper()} device but the card {_short(card.get('name'))} is "
                          f"{vendor}'s: it runs {', '.join(a.upper() for a in allowed)}, Vulkan or the CPU")


def max_chunk(backend: str, build) -> int | None:
    """Bytes: the largest chunk ``ggml-alloc`` gives one compute-buffer allocation on ``backend`` at ``build``,
    or None when the buffer is one allocation of any size.

    ggml-alloc splits a compute buffer into chunks of the buffer type's ``get_max_size`` since PR #15815
    ("split graph allocations according to backend max buffer size", 2025-09; ``build.alloc_chunks``). Of the
    backends here only Vulkan reports a small one (:data:`VULKAN_MAX_CHUNK`); CUDA / HIP and the CPU report
    none (``get_max_size`` NULL: ``SIZE_MAX``, ggml-cuda.cu, ggml-backend.cpp). Metal reports the device's
    ``maxBufferLength`` (ggml-metal-device.m), which data/cards.json does not hold: a Metal compute tensor
    above it is not modelled."""
    if backend == "vulkan" and getattr(build, "alloc_chunks", False):
        return VULKAN_MAX_CHUNK
    return None
