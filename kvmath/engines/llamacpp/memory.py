"""llama.cpp's own cache allocation, object by object, as its log prints it.

``llamacpp_memory(model, n_ctx=..., ...)`` follows what ``llama_init_from_model`` allocates for the
memory module of a model, flag by flag, and returns every cache object llama.cpp creates (a plain or
non-SWA KV cache, an SWA KV cache, a recurrent-state cache) with its cells, layers, sequences,
streams and the exact bytes of its K and V (or R and S) tensors. ``log_lines()`` renders them as
llama.cpp prints them::

    llama_kv_cache_iswa: creating non-SWA KV cache, size = 262144 cells
    llama_kv_cache: size = 5120.00 MiB (262144 cells,   5 layers,  1/1 seqs), K (f16): 2560.00 MiB, ...

This module is the authoritative llama.cpp sizing in kvmath. ``kvmath.engines.LlamaCpp`` is the
per-layer summary that ``kvmath.derive`` uses for its cross-engine tables; it applies the same context
padding, stream and SWA rules, and ``tests/test_llamacpp.py`` checks that the two agree on cells,
streams, bytes per token and recurrent state. What only this module models: V padded to the widest
layer without flash attention, ``n_ubatch`` clamped to ``n_batch`` and the context, the hybrid
attention cache of older builds, MLA's V-less cache, the quantised-V / flash-attention rule, the
TurboQuant fork's per-layer types, and the log lines.

Sources (vendored llama.cpp ``0c1e570`` = "webgpu: fix SSM_SCAN binding aliasing (#29750)", the tree
in the llama-cpp-python 0.3.36 sdist, built and run for the fixtures in
``tests/fixtures/llamacpp/``):

- ``src/llama-context.cpp`` (constructor): ``n_batch = min(n_ctx, n_batch)`` for causal models,
  ``n_ubatch = min(n_batch, n_ubatch)``; ``n_ctx = GGML_PAD(n_ctx, 256)``; ``--kv-unified``:
  ``n_ctx_seq = n_ctx``, else ``n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256)`` and ``n_ctx`` reset to
  ``n_ctx_seq * n_seq_max``. ``llama_init_from_model``: a quantised V cache with flash attention
  ``auto`` turns it on, with ``off`` returns "quantized V cache requires flash_attn to be enabled";
  with flash attention on, a quantised K (V) type whose block does not divide every layer's head
  width is refused. The memory module is created while ``cparams.flash_attn`` still reads
  ``flash_attn_type != DISABLED``, so ``auto`` sizes the cache as with flash attention.
- ``src/llama-model.cpp`` ``create_memory``: iSWA models get ``llama_kv_cache_iswa(kv_size =
  n_ctx_seq)``, others ``llama_kv_cache(kv_size = n_ctx_seq)``, hybrids ``llama_memory_hybrid``
  (attention cache of ``n_ctx_seq`` cells on the non-recurrent layers, recurrent cache of
  ``max(1, n_seq_max)`` cells on the recurrent ones), ``v_trans = !flash_attn``; Gemma 4's trailing
  ``shared_kv_layers`` reuse earlier layers' tensors and own none.
- ``src/llama-kv-cache.cpp`` constructor: per layer ``k = [n_embd_k_gqa(il), kv_size, n_stream]`` of
  ``type_k``, ``v = [v_trans ? n_embd_v_gqa_max() : n_embd_v_gqa(il), kv_size, n_stream]`` of
  ``type_v`` (no V for MLA since PR #19067), ``n_stream = unified ? 1 : n_seq_max``; the size line
  sums ``ggml_nbytes`` over the layers and prints it through a ``float``.
- ``src/llama-kv-cache-iswa.cpp``: ``size_swa = GGML_PAD(min(size_base, n_swa * (unified ?
  n_seq_max : 1) + n_ubatch), 256)``, ``size_base`` with ``--swa-full``.
- ``src/llama-memory-recurrent.cpp``: per recurrent layer ``r = [n_embd_r, mem_size * (1 +
  n_rs_seq)]`` and ``s = [n_embd_s, ...]`` in f32; "layers" prints the model's ``n_layer()``.
  ``src/llama-hparams.cpp``: ``n_embd_r = (d_conv - 1) * (d_inner + 2 * n_group * d_state)``,
  ``n_embd_s = d_state * d_inner``.

Older build ``ec98e2002`` (as vendored in ollama; engine-notes section 3b and ollama's
``llama/llama.cpp/src/llama-memory-recurrent.cpp`` @008a6cae): MLA stores V; the hybrid attention
cache gets ``n_ctx`` cells (not ``n_ctx_seq``); the recurrent line has no ``rs_seq`` / ``P`` fields;
a quantised V without flash attention fails with "quantized V cache was requested, but this
requires Flash Attention".

Older build ``1c872f71`` (b6057, 2025-08-01; also priced for b4406-b7443): the context is rounded up to
``get_padding() = flash_attn ? 256 : 32`` cells (PR #7257 to PR #16812; 256 for every cache again from PR
#17046), MLA stores V, and a quantised V without flash attention fails with "V cache quantization requires
flash_attn" (``MemoryRules.ctx_pad = "fa256_else32"``).

TurboQuant fork (TheTom/llama-cpp-turboquant, ``src/llama-kv-cache.cpp`` @00910b10, older @fc660808):
``turbo2/3/4`` K (V) heads not a multiple of 128 are zero-padded to the next multiple of 128;
"auto-asymmetric" (@00910b10, not in @fc660808): when K and V are the same turbo type and
``n_head(0) / n_head_kv(0) >= 6``, K becomes ``q8_0`` for the whole cache; "Boundary V" (mode 7,
chosen automatically when V is ``turbo2`` and the model has at least 8 layers): layers ``il < 2`` and
``il >= n_layer - 2`` (absolute layer indices) store V as ``q8_0``; a cache whose K type is a turbo
type also holds two 128 x 128 f32 rotation matrices and a 128-float scale in its buffer (not in the
size line).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ...errors import KvMathError, choices
from ...validate import _short
from ...formats import ElementFormat
from ...model.load import load_architecture
from ...model.specs import SLIDING, STATE_LAYER_TYPES, Architecture
from ..base import require_kinds
from ...units import MiB, round_up
from ...validate import MAX_TOKENS, check_bool, check_count
from .formats import llamacpp_type

# ---------------------------------------------------------------------------------------------------
# builds and fork versions


@dataclass(frozen=True)
class MemoryRules:
    """The build-dependent rules of llama.cpp's memory module, by the commit whose tree was read.

    The build records by tag (:mod:`.builds`, ``--llamacpp-build bNNNN``) name one of these in their
    ``memory`` switch."""

    name: str
    source: str
    mla_v_less: bool  # PR #19067 (2026-01-24): MLA caches K only
    hybrid_attn_cells: str  # "n_ctx_seq" (newer) or "n_ctx" (the attention cache of a hybrid model)
    recurrent_log: str  # "rs_seq" (size line with rs_seq and P) or "plain"
    quant_v_error: str
    checks_block_divides_head: bool  # llama_init_from_model refuses K/V types whose block does not divide heads
    ctx_pad: str = "256"  # cell padding of the context: "256", or "fa256_else32" (256 with FA, else 32)


BUILDS: dict[str, MemoryRules] = {
    b.name: b
    for b in (
        MemoryRules(
            "0c1e570",
            "llama.cpp 0c1e570 (llama-cpp-python 0.3.36 sdist vendor/llama.cpp); built and run for the fixtures",
            mla_v_less=True,
            hybrid_attn_cells="n_ctx_seq",
            recurrent_log="rs_seq",
            quant_v_error="quantized V cache requires flash_attn to be enabled",
            checks_block_divides_head=True,
        ),
        MemoryRules(
            "1c872f71",
            "llama.cpp b6057 (1c872f71, 2025-08-01), issue #15009's log: the cache rounds the context up to "
            "llama_kv_cache_unified::get_padding() = flash_attn ? 256 : 32 cells (PR #7257, 2024-05-13; the "
            "padding was removed by PR #16812, 2025-10-28, and made 256 for every cache by PR #17046, "
            "2025-11-07): -c 70000 without FA -> 70016 cells. MLA stores V (before PR #19067); the hybrid, "
            "recurrent-log and quantised-V rules are ec98e2002's (not read at this build); the quantised-V "
            "message is the 2024-2025 one ('V cache quantization requires flash_attn', as quoted from b4792)",
            mla_v_less=False,
            hybrid_attn_cells="n_ctx",
            recurrent_log="plain",
            quant_v_error="V cache quantization requires flash_attn",
            checks_block_divides_head=False,
            ctx_pad="fa256_else32",
        ),
        MemoryRules(
            "ec98e2002",
            "llama.cpp ec98e2002 (2025-12-16) as vendored in ollama 0.21-0.24 (engine-notes 3b); not run here",
            mla_v_less=False,
            hybrid_attn_cells="n_ctx",
            recurrent_log="plain",
            quant_v_error="quantized V cache was requested, but this requires Flash Attention",
            checks_block_divides_head=False,
        ),
    )
}
DEFAULT_BUILD = "0c1e570"
BUILD_ALIASES = {"current": "0c1e570", "pre-v-less": "ec98e2002"}
"""The names ``kvmath.engines.Deployment.llamacpp_build`` uses for the same two rule sets."""


@dataclass(frozen=True)
class TurboQuantFork:
    """Rules of one TheTom/llama-cpp-turboquant version (src/llama-kv-cache.cpp)."""

    name: str
    auto_asymmetric: bool
    source: str


FORKS: dict[str, TurboQuantFork] = {
    f.name: f
    for f in (
        TurboQuantFork("00910b10", True,
                       "TheTom/llama-cpp-turboquant src/llama-kv-cache.cpp @00910b10 (auto-asymmetric, "
                       "Boundary V, 128-padding)"),
        TurboQuantFork("fc660808", False,
                       "TheTom/llama-cpp-turboquant src/llama-kv-cache.cpp @fc660808 (Boundary V, "
                       "128-padding; no auto-asymmetric)"),
    )
}
DEFAULT_FORK = "00910b10"
_FORK_ALIASES = {"turboquant": DEFAULT_FORK, "llama-cpp-turboquant": DEFAULT_FORK, "thetom": DEFAULT_FORK}
TURBO_TYPES = ("turbo2", "turbo3", "turbo4")
TURBO_ROTATION_BYTES = 2 * 128 * 128 * 4 + 128 * 4
"""turbo_rotation + turbo_rotation_inv (128 x 128 f32) + turbo_innerq_scale_inv (128 f32)."""

_FLASH_ATTN = {"auto": "auto", "on": "on", "off": "off", "enabled": "on", "disabled": "off",
               True: "on", False: "off", "1": "on", "0": "off"}


# ---------------------------------------------------------------------------------------------------
# results


def _f32_mib(nbytes: int) -> float:
    """``(float) nbytes / (1024.0f * 1024.0f)`` as llama.cpp computes its size lines (float precision)."""
    return struct.unpack("f", struct.pack("f", float(nbytes)))[0] / MiB


@dataclass(frozen=True)
class LayerTensors:
    """One layer's tensors in a KV cache object: type and row width (elements per cell) of K and V,
    and the bytes of each whole tensor (all cells, all streams). ``v_type`` is None when no V is
    stored (MLA)."""

    index: int
    k_type: str
    k_width: int
    v_type: str | None
    v_width: int
    k_bytes: int
    v_bytes: int


@dataclass(frozen=True)
class KVCacheObject:
    """One ``llama_kv_cache`` object: ``kind`` is ``"kv"`` (the only one), ``"non-SWA"`` or ``"SWA"``."""

    kind: str
    cells: int
    n_seq_max: int
    n_stream: int
    type_k: str  # as printed (after the TurboQuant fork's auto-asymmetric upgrade)
    type_v: str
    layers: tuple[LayerTensors, ...]
    extra_buffer_bytes: int = 0  # TurboQuant rotation tensors: in the buffer, not in the size line

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def k_bytes(self) -> int:
        return sum(layer.k_bytes for layer in self.layers)

    @property
    def v_bytes(self) -> int:
        return sum(layer.v_bytes for layer in self.layers)

    @property
    def bytes(self) -> int:
        """``size_k_bytes() + size_v_bytes()``: what the size line prints."""
        return self.k_bytes + self.v_bytes

    @property
    def bytes_per_cell(self) -> int:
        """K + V bytes of one cell of one stream over this object's layers."""
        return self.bytes // (self.cells * self.n_stream) if self.cells else 0

    def buffer_bytes(self, alignment: int = 32) -> int:
        """The backend buffer: every tensor rounded up to ``alignment`` (CPU: 32), plus extras."""
        pad = lambda n: round_up(n, alignment)
        extra = 2 * pad(128 * 128 * 4) + pad(128 * 4) if self.extra_buffer_bytes else 0
        return sum(pad(t.k_bytes) + (pad(t.v_bytes) if t.v_type else 0) for t in self.layers) + extra

    def log_line(self) -> str:
        """The ``llama_kv_cache: size = ...`` line (src/llama-kv-cache.cpp)."""
        return (
            f"llama_kv_cache: size = {_f32_mib(self.bytes):7.2f} MiB ({self.cells:6d} cells, "
            f"{self.n_layers:3d} layers, {self.n_seq_max:2d}/{self.n_stream} seqs), "
            f"K ({self.type_k}): {_f32_mib(self.k_bytes):7.2f} MiB, V ({self.type_v}): {_f32_mib(self.v_bytes):7.2f} MiB"
        )


@dataclass(frozen=True)
class RecurrentObject:
    """The ``llama_memory_recurrent`` object: f32 R (conv) and S (state) rows per sequence and layer."""

    cells: int  # mem_size = max(1, n_seq_max)
    n_layer_printed: int  # the model's n_layer(), not the number of recurrent layers
    n_seq_max: int
    n_rs_seq: int
    layers: tuple[int, ...]
    r_width: int  # n_embd_r, f32 elements per row
    s_width: int  # n_embd_s
    log_format: str = "rs_seq"

    @property
    def rows(self) -> int:
        return self.cells * (1 + self.n_rs_seq)

    @property
    def r_bytes(self) -> int:
        return 4 * self.r_width * self.rows * len(self.layers)

    @property
    def s_bytes(self) -> int:
        return 4 * self.s_width * self.rows * len(self.layers)

    @property
    def bytes(self) -> int:
        return self.r_bytes + self.s_bytes

    @property
    def bytes_per_seq(self) -> int:
        return 4 * (self.r_width + self.s_width) * len(self.layers) * (1 + self.n_rs_seq)

    def buffer_bytes(self, alignment: int = 32) -> int:
        pad = lambda n: round_up(n, alignment)
        return len(self.layers) * (pad(4 * self.r_width * self.rows) + pad(4 * self.s_width * self.rows))

    def log_line(self) -> str:
        head = (f"llama_memory_recurrent: size = {_f32_mib(self.bytes):7.2f} MiB ({self.cells:6d} cells, "
                f"{self.n_layer_printed:3d} layers, {self.n_seq_max:2d} seqs")
        tail = f"R (f32): {_f32_mib(self.r_bytes):7.2f} MiB, S (f32): {_f32_mib(self.s_bytes):7.2f} MiB"
        if self.log_format == "rs_seq":
            return f"{head} {self.n_rs_seq:2d} rs_seq), {tail}, P (f32): {_f32_mib(0):7.2f} MiB"
        return f"{head}), {tail}"


@dataclass(frozen=True)
class LlamaCppMemory:
    """What llama.cpp allocates for the memory module of one model under one set of flags.

    ``n_ctx`` is the context llama.cpp ends up with (padded, and rounded to whole streams),
    ``n_ctx_seq`` the cells of a full-attention layer per stream. Byte figures are exact integers.
    """

    model: str
    build: str
    fork: str | None
    n_ctx: int
    n_ctx_seq: int
    n_seq_max: int
    n_stream: int
    n_batch: int
    n_ubatch: int
    flash_attn: bool
    flash_attn_type: str  # as llama_context logs it: auto, enabled, disabled
    v_trans: bool
    type_k: str
    type_v: str
    swa_full: bool
    kv_unified: bool
    kv: tuple[KVCacheObject, ...]
    recurrent: RecurrentObject | None = None
    notes: tuple[str, ...] = ()
    source: str = field(default="", compare=False)

    @property
    def kv_bytes(self) -> int:
        return sum(c.bytes for c in self.kv)

    @property
    def recurrent_bytes(self) -> int:
        return self.recurrent.bytes if self.recurrent else 0

    @property
    def total_bytes(self) -> int:
        """Every cache object's tensors (KV + recurrent); TurboQuant's rotation tensors not included."""
        return self.kv_bytes + self.recurrent_bytes

    @property
    def extra_buffer_bytes(self) -> int:
        return sum(c.extra_buffer_bytes for c in self.kv)

    def cache(self, kind: str) -> KVCacheObject:
        """The KV cache object of a kind (``"kv"``, ``"non-SWA"``, ``"SWA"``). Raises KvMathError."""
        for c in self.kv:
            if c.kind == kind:
                return c
        raise KvMathError(f"no {kind!r} KV cache here; caches: {choices(c.kind for c in self.kv)}")

    @property
    def bytes_per_token(self) -> int:
        """K + V bytes one more token of context costs per sequence: the full-size (non-SWA) caches."""
        return sum(c.bytes_per_cell for c in self.kv if c.kind != "SWA")

    def log_lines(self, *, buffers: str | None = None, no_alloc: bool = False, alignment: int = 32) -> list[str]:
        """The lines llama.cpp prints while it creates the memory module.

        ``buffers`` (e.g. ``"CPU"``, ``"CUDA0"``) adds the per-buffer lines ``KV buffer size`` /
        ``RS buffer size`` for a single device, each tensor padded to ``alignment`` bytes (CPU 32); a
        callable (layer index -> device name) prints one line per device holding layers of the cache, as
        llama-kv-cache.cpp does: one context per buffer type in a ``std::map`` ordered by ``strcmp`` of the
        buffer type names (``CPU`` < ``CUDA0`` < ``CUDA1``), each its own ``%10s KV buffer size`` line
        (a layer left on the CPU takes the CPU buffer type: ``dev_layer(il)`` is the CPU device).
        ``no_alloc=True`` prints the KV buffers as llama.cpp's sizing pass does (a dummy buffer of
        0 bytes); the recurrent buffer is always really allocated.
        """
        out: list[str] = []
        iswa = any(c.kind == "SWA" for c in self.kv)
        for c in self.kv:
            if iswa:
                if c.kind == "non-SWA" and self.swa_full:
                    out.append("llama_kv_cache_iswa: using full-size SWA cache (ref: "
                               "https://github.com/ggml-org/llama.cpp/pull/13194#issuecomment-2868343055)")
                label = "non-SWA" if c.kind == "non-SWA" else "    SWA"
                out.append(f"llama_kv_cache_iswa: creating {label} KV cache, size = {c.cells} cells")
            if buffers and c.layers:
                for i, (dev, part) in enumerate(_per_buffer(c.layers, buffers, lambda t: t.index)):
                    size = 0 if no_alloc else (c.buffer_bytes(alignment) if part is None else
                                               _layers_padded(part, alignment) + (_extra(c, alignment) if i == 0 else 0))
                    out.append(f"llama_kv_cache: {dev:>10s} KV buffer size = {size / MiB:8.2f} MiB")
            out.append(c.log_line())
        if self.recurrent:
            r = self.recurrent
            if buffers:
                for dev, part in _per_buffer(r.layers, buffers, lambda il: il):
                    size = r.buffer_bytes(alignment) if part is None else \
                        r.buffer_bytes(alignment) * len(part) // len(r.layers)
                    out.append(f"llama_memory_recurrent: {dev:>10s} RS buffer size = {size / MiB:8.2f} MiB")
            out.append(r.log_line())
        return out

    def summary(self) -> str:
        parts = [f"{c.kind} {c.cells} cells x {c.n_layers} layers = {c.bytes / MiB:,.2f} MiB" for c in self.kv]
        if self.recurrent:
            parts.append(f"recurrent {self.recurrent.bytes / MiB:,.2f} MiB")
        return f"{self.model} on llama.cpp {self.build}: " + "; ".join(parts) + \
            f"; total {self.total_bytes / MiB:,.2f} MiB"


def _per_buffer(layers, buffers, index_of):
    """``(device, layers or None)`` per buffer line: one device by name (None: every layer), or the layers
    grouped by ``buffers(index)`` in ``strcmp`` order of the names (llama-kv-cache.cpp's buft map)."""
    if isinstance(buffers, str):
        return [(buffers, None)]
    groups: dict[str, list] = {}
    for t in layers:
        groups.setdefault(buffers(index_of(t)), []).append(t)
    return sorted(groups.items(), key=lambda kv: kv[0].encode())


def _layers_padded(layers, alignment: int) -> int:
    """K and V tensors of ``layers``, each rounded up to ``alignment`` (as ``KvCache.buffer_bytes``)."""
    pad = lambda n: round_up(n, alignment)
    return sum(pad(t.k_bytes) + (pad(t.v_bytes) if t.v_type else 0) for t in layers)


def _extra(c, alignment: int) -> int:
    """The cache's extra tensors (rotation matrices), counted once, with the first buffer."""
    pad = lambda n: round_up(n, alignment)
    return 2 * pad(128 * 128 * 4) + pad(128 * 4) if c.extra_buffer_bytes else 0


# ---------------------------------------------------------------------------------------------------
# the model as llama.cpp's hparams see it

LLAMACPP_KINDS = ("attention", "mla", "gdn", "mamba2", "kda", "none", "attention_mamba2")
"""The layer kinds (spec ``kind``) this module has rules for; others are refused (``base.require_kinds``)."""

NO_WINDOW_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "phi3", "starcoder2")
"""Families llama.cpp runs without a window: their converters write no ``sliding_window`` and their
``load_arch_hparams`` read none (conversion/llama.py, conversion/qwen.py; src/models/llama.cpp,
qwen2.cpp, qwen3.cpp), so a config's window (Mistral 7B v0.1) becomes a full cache in llama.cpp. Phi-3's
window is read and then dropped (src/llama-model.cpp LLM_ARCH_PHI3: "Phi SWA is currently disabled",
ggml-org/llama.cpp#13676). StarCoder2's converter writes none (conversion/starcoder.py ``StarCoder2Model``, 0c1e570)
and src/models/starcoder2.cpp reads none."""


@dataclass(frozen=True)
class _AttnView:
    index: int
    n_head_kv: int
    head_k: int
    head_v: int
    is_swa: bool
    window: int | None
    owns_cache: bool
    is_mla: bool = False


def _attention_view(arch: Architecture) -> list[_AttnView]:
    """Every layer with a KV cache, as llama.cpp's per-layer ``n_head_kv`` / ``n_embd_head_k/v``.

    MLA layers are converted to one KV head of ``kv_lora_rank + qk_rope_head_dim`` for K and
    ``kv_lora_rank`` for V (convert_hf_to_gguf.py DeepseekV2Model; llama-hparams.cpp ``is_mla``).
    """
    windowed = arch.model_type not in NO_WINDOW_MODEL_TYPES
    out = []
    for layer in arch.layers:
        layer = layer.attention if layer.kind == "attention_mamba2" else layer  # Falcon-H1: filter_attn all layers
        if layer.kind == "attention":
            swa = layer.layer_type == SLIDING and windowed
            out.append(_AttnView(layer.index, layer.num_kv_heads, layer.head_dim, layer.v_head_dim, swa,
                                 layer.sliding_window if swa else None, layer.owns_cache))
        elif layer.kind == "mla":
            out.append(_AttnView(layer.index, 1, layer.latent_dim, layer.kv_lora_rank, False, None, True, True))
    return out


def recurrent_layers(arch: Architecture) -> list:
    """The layers llama.cpp keeps a recurrent state for: the state layers, and the Mamba-2 part of every Falcon-H1
    hybrid layer (src/llama-model.cpp ``create_memory``: for LLM_ARCH_FALCON_H1 ``filter_attn`` and ``filter_recr``
    both return true, so every layer has a K/V row and an R / S state)."""
    return [layer.mamba if layer.kind == "attention_mamba2" else layer for layer in arch.layers
            if layer.kind == "attention_mamba2" or isinstance(layer, STATE_LAYER_TYPES)]


def _state_widths(layer, arch: Architecture) -> tuple[int, int]:
    """(n_embd_r, n_embd_s) of a recurrent layer (src/llama-hparams.cpp).

    GDN / Mamba-2: ``n_embd_r = (d_conv - 1) * (d_inner + 2 * n_group * d_state)``,
    ``n_embd_s = d_state * d_inner``; Kimi KDA: ``n_embd_r = 3 * (d_conv - 1) * n_head * head_dim``,
    ``n_embd_s = head_dim * head_dim * n_head`` with ``n_head`` the model's head count.
    """
    widths = _STATE_WIDTHS.get(layer.kind)
    if widths is not None:
        return widths(layer, arch)
    raise KvMathError(f"llama.cpp has no recurrent state rule for {type(layer).__name__}")  # pragma: no cover


def _gdn_widths(layer, arch: Architecture) -> tuple[int, int]:
    if layer.k_head_dim != layer.v_head_dim:
        raise KvMathError("llama.cpp's Gated DeltaNet uses one width (ssm.state_size) for keys and values")
    d_state, d_inner, n_group = layer.k_head_dim, layer.num_v_heads * layer.v_head_dim, layer.num_k_heads
    return (layer.conv_kernel - 1) * (d_inner + 2 * n_group * d_state), d_state * d_inner


def _mamba2_widths(layer, arch: Architecture) -> tuple[int, int]:
    d_inner = layer.intermediate_size
    return (layer.conv_kernel - 1) * (d_inner + 2 * layer.n_groups * layer.state_size), layer.state_size * d_inner


def _kda_widths(layer, arch: Architecture) -> tuple[int, int]:
    n_head = arch.num_attention_heads
    if n_head != layer.num_heads:
        raise KvMathError(f"llama.cpp sizes the KDA state by n_head ({n_head}); the KDA layers have "
                          f"{layer.num_heads} heads")
    return 3 * (layer.conv_kernel - 1) * n_head * layer.head_dim, layer.head_dim * layer.head_dim * n_head


_STATE_WIDTHS = {"gdn": _gdn_widths, "mamba2": _mamba2_widths, "kda": _kda_widths}


# ---------------------------------------------------------------------------------------------------
# the computation


_pad = round_up


def _count(value, what: str, minimum: int = 1, maximum: int = MAX_TOKENS) -> int:
    return check_count(value, what, minimum=minimum, maximum=maximum)


def _type(name: str, fork) -> ElementFormat:
    fmt = llamacpp_type(name)
    if fmt.name in TURBO_TYPES and fork is None:
        raise KvMathError(f"cache type {name} exists only in the TurboQuant fork; pass fork= one of {choices(FORKS)}")
    return fmt


def _quantized(fmt: ElementFormat) -> bool:
    return fmt.block_elems > 1  # ggml_is_quantized: every block type; f32 / f16 / bf16 are not


def _row_bytes(fmt: ElementFormat, n_heads: int, head_dim: int) -> tuple[int, int]:
    """(elements, bytes) of one cell row of ``n_heads`` heads: ggml_row_size, turbo heads padded to 128."""
    width = _pad(head_dim, fmt.pad_head_to) * n_heads
    return width, fmt.row_bytes(n_heads, head_dim)


def _rules(build, fork) -> tuple[MemoryRules, TurboQuantFork | None]:
    """The memory rules of ``build`` (:data:`BUILDS` or an alias) and the TurboQuant fork version, if any."""
    if not isinstance(build, str) or BUILD_ALIASES.get(build, build) not in BUILDS:
        raise KvMathError(f"unknown llama.cpp build {_short(build)}; known: {choices(list(BUILDS) + list(BUILD_ALIASES))}")
    if fork is None:
        return BUILDS[BUILD_ALIASES.get(build, build)], None
    key = _FORK_ALIASES.get(str(fork).lower(), str(fork).lower())
    if key not in FORKS:
        raise KvMathError(f"unknown TurboQuant fork version {_short(fork)}; known: {choices(FORKS)} (or 'turboquant')")
    return BUILDS[BUILD_ALIASES.get(build, build)], FORKS[key]


def _check_types(arch, rules, attn, fmt_k, fmt_v, fa: str, is_mla: bool, notes: list[str]) -> None:
    """``llama_init_from_model``'s refusals: MLA layouts, a quantised V without flash attention, a block type
    that does not divide a head width (each with llama.cpp's own message). Appends the notes it prints."""
    flash = fa != "off"
    if is_mla and not rules.mla_v_less and arch.model_type != "deepseek_v3":
        raise KvMathError(
            f"kvmath has the pre-PR-#19067 llama.cpp MLA layout (K latent + V kv_lora_rank) for DeepSeek-V3 only, "
            f"not for {arch.model_type}; use build 'current'")
    if is_mla and fmt_k.name != fmt_v.name and rules.mla_v_less:
        raise KvMathError(f"model does not support different K ({fmt_k.name}) and V ({fmt_v.name}) cache types")
    if _quantized(fmt_v) and fa == "off":
        raise KvMathError(rules.quant_v_error)
    if _quantized(fmt_v) and fa == "auto":
        notes.append("flash attention enabled: required for a quantized V cache")
    if flash and rules.checks_block_divides_head:
        for which, fmt, width in (("K", fmt_k, "head_k"), ("V", fmt_v, "head_v")):
            if _quantized(fmt) and fmt.name not in TURBO_TYPES:
                for a in attn:
                    w = getattr(a, width)
                    if w and w % fmt.block_elems:
                        raise KvMathError(
                            f"{which} cache type {fmt.name} with block size {fmt.block_elems} does not divide "
                            f"n_embd_head_{which.lower()}={w}"
                        )


def _context(arch, n_ctx: int, n_batch: int, n_ubatch: int, n_seq: int, kv_unified: bool, pad: int = 256):
    """llama-context.cpp: ``(n_ctx, n_ctx padded to whole streams, n_ctx_seq, n_batch, n_ubatch)`` as llama.cpp
    ends up with them (0 = the training context; batches clamped; ``pad``-cell padding: 256, or the build's
    ``MemoryRules.ctx_pad``)."""
    if n_ctx == 0:
        if not arch.max_position_embeddings:
            raise KvMathError(f"{arch.name}: n_ctx 0 means the training context, which the model does not state")
        n_ctx = arch.max_position_embeddings
    n_batch_eff = min(n_ctx, n_batch)
    n_ubatch_eff = min(n_batch_eff, n_ubatch)
    n_ctx_pad = _pad(n_ctx, pad)
    if kv_unified:
        n_ctx_seq = n_ctx_pad
    else:
        n_ctx_seq = _pad(n_ctx_pad // n_seq, pad)
        n_ctx_pad = n_ctx_seq * n_seq
    return n_ctx, n_ctx_pad, n_ctx_seq, n_batch_eff, n_ubatch_eff


def _turbo(arch, attn, fork_rules, fmt_k, fmt_v, auto_asymmetric: bool, boundary_v: bool, notes: list[str]):
    """The TurboQuant fork's changes (module docstring): ``(K format used, Boundary V on)``."""
    type_k_eff = fmt_k
    adaptive_boundary_v = False
    if fork_rules is not None:
        if auto_asymmetric and fork_rules.auto_asymmetric and fmt_k.name in TURBO_TYPES \
                and fmt_k.name == fmt_v.name:
            # n_head(0) / n_head_kv(0): GGUF scalars make layer 0 read the attention layers' counts
            n_head = arch.num_attention_heads
            first = next((a for a in attn if a.index == 0), attn[0] if attn else None)
            n_head_kv = first.n_head_kv if first else 0
            ratio = n_head // n_head_kv if n_head_kv else 1
            if ratio >= 6:
                type_k_eff = llamacpp_type("q8_0")
                notes.append(f"auto-asymmetric: GQA ratio {ratio}:1 (n_head={n_head}, n_head_kv={n_head_kv}) - "
                             f"upgrading K from {fmt_k.name} to q8_0")
        if boundary_v and fmt_v.name == "turbo2" and arch.num_hidden_layers >= 8:
            adaptive_boundary_v = True
            notes.append("Boundary V auto-enabled for turbo2-V: layers 0, 1 and the last two store V as q8_0")
    return type_k_eff, adaptive_boundary_v


def _recurrent(arch, recr: list, n_seq: int, n_rs_seq: int, rules: MemoryRules) -> RecurrentObject:
    """llama-memory-recurrent.cpp: ``max(1, n_seq_max)`` cells of one R / S shape over the recurrent layers."""
    widths = {_state_widths(l, arch) for l in recr}
    if len(widths) > 1:
        raise KvMathError("llama.cpp has one recurrent state shape per model (n_embd_r, n_embd_s); "
                          f"{arch.name} has several: {sorted(widths)}")
    r_width, s_width = widths.pop()
    return RecurrentObject(max(1, n_seq), arch.num_hidden_layers, n_seq, n_rs_seq, tuple(l.index for l in recr),
                           r_width, s_width, rules.recurrent_log)


def _sliding_window(arch, attn) -> int:
    """The one sliding window of the model's SWA layers (0 if none); llama.cpp has one per model."""
    windows = {a.window for a in attn if a.is_swa}
    if len(windows) > 1:
        raise KvMathError(f"llama.cpp has one sliding window per model; {arch.name} has {sorted(windows)}")
    return windows.pop() if windows else 0


def _switches(flash_attn, **flags) -> str:
    """``flash_attn`` as llama.cpp's ``-fa`` value (auto, on, off), each of ``flags`` True or False (a string "no"
    or the number 2 would read as on). Raises KvMathError."""
    for flag, value in flags.items():
        check_bool(value, flag)
    fa = _FLASH_ATTN.get(flash_attn if isinstance(flash_attn, bool) else str(flash_attn).lower())
    if fa is None:
        raise KvMathError(f"flash_attn must be one of auto, on, off; got {_short(flash_attn)}")
    return fa


def llamacpp_memory(
    model,
    *,
    n_ctx: int,
    n_parallel: int = 1,
    cache_type_k: str = "f16",
    cache_type_v: str = "f16",
    n_batch: int = 2048,
    n_ubatch: int = 512,
    swa_full: bool = False,
    flash_attn="auto",
    kv_unified: bool = False,
    n_rs_seq: int = 0,
    build: str = DEFAULT_BUILD,
    fork: str | None = None,
    turbo_auto_asymmetric: bool = True,
    turbo_boundary_v: bool = True,
) -> LlamaCppMemory:
    """The memory module llama.cpp allocates for ``model`` with these flags (exact bytes).

    Flags are the command line's: ``n_ctx`` (``-c``; 0 = the model's training context),
    ``n_parallel`` (``-np``), ``cache_type_k`` / ``cache_type_v`` (``-ctk`` / ``-ctv``), ``n_batch``
    (``-b``), ``n_ubatch`` (``-ub``), ``swa_full`` (``--swa-full``; the command line's default is
    False, the library's True), ``flash_attn`` (``-fa auto|on|off``), ``kv_unified``
    (``--kv-unified``), ``n_rs_seq`` (recurrent rollback snapshots per sequence, set by MTP / draft
    speculative decoding). ``build`` names the llama.cpp rules (:data:`BUILDS`); ``fork`` a
    TheTom/llama-cpp-turboquant version (:data:`FORKS`, ``"turboquant"`` = newest), needed for the
    ``turbo2/3/4`` types; ``turbo_auto_asymmetric=False`` is the fork's ``TURBO_AUTO_ASYMMETRIC=0``,
    ``turbo_boundary_v=False`` its ``TURBO_LAYER_ADAPTIVE=0``.

    ``model``: an Architecture, a known model id, a config.json path or dict, or a ``.gguf`` path.
    Raises KvMathError with llama.cpp's own message where llama.cpp refuses the flags (quantised V
    without flash attention; a block type that does not divide a head width).
    """
    arch = load_architecture(model)
    require_kinds("llama.cpp", arch, LLAMACPP_KINDS)
    rules, fork_rules = _rules(build, fork)
    fa = _switches(flash_attn, swa_full=swa_full, kv_unified=kv_unified, turbo_auto_asymmetric=turbo_auto_asymmetric,
                   turbo_boundary_v=turbo_boundary_v)
    n_parallel, n_batch, n_ubatch = (_count(v, k) for v, k in ((n_parallel, "n_parallel"), (n_batch, "n_batch"),
                                                               (n_ubatch, "n_ubatch")))
    n_ctx, n_rs_seq = _count(n_ctx, "n_ctx", minimum=0), _count(n_rs_seq, "n_rs_seq", minimum=0)
    fmt_k, fmt_v = _type(cache_type_k, fork_rules), _type(cache_type_v, fork_rules)
    notes: list[str] = []

    attn = _attention_view(arch)  # llama.cpp's per-layer K/V widths
    recr = recurrent_layers(arch)
    is_mla = any(a.is_mla for a in attn)

    # --- llama_init_from_model: type / flash-attention checks ---------------------------------------
    _check_types(arch, rules, attn, fmt_k, fmt_v, fa, is_mla, notes)
    flash = fa != "off"

    # --- context, batch, streams (llama-context.cpp) ---------------------------------------------
    pad = 256 if rules.ctx_pad == "256" or flash else 32
    n_ctx, n_ctx_pad, n_ctx_seq, n_batch_eff, n_ubatch_eff = _context(arch, n_ctx, n_batch, n_ubatch, n_parallel,
                                                                      kv_unified, pad)
    n_seq = n_parallel
    n_stream = 1 if kv_unified else n_seq
    v_trans = not flash

    # --- layer hparams ----------------------------------------------------------------------------
    n_swa = _sliding_window(arch, attn)
    # n_embd_v_gqa_max(): over every layer; GGUF scalars give recurrent layers the attention width
    v_widths = [a.n_head_kv * a.head_v for a in attn] or [0]
    v_max = max(v_widths)
    if v_trans and len(set(v_widths)) > 1:
        notes.append(f"the V embeddings have different sizes across layers and FA is not enabled - "
                     f"padding V cache to {v_max}")

    # --- TurboQuant fork: auto-asymmetric and the layer-adaptive mode ----------------------------
    type_k_eff, adaptive_boundary_v = _turbo(arch, attn, fork_rules, fmt_k, fmt_v, turbo_auto_asymmetric,
                                             turbo_boundary_v, notes)
    q8 = llamacpp_type("q8_0")
    n_layer = arch.num_hidden_layers
    has_v = not (is_mla and rules.mla_v_less)

    def layer_tensors(a: "_AttnView", cells: int) -> LayerTensors:
        lk = type_k_eff
        lv = fmt_v
        if adaptive_boundary_v and fmt_v.name in TURBO_TYPES and (a.index < 2 or a.index >= n_layer - 2):
            lv = q8
        k_width, k_row = _row_bytes(lk, a.n_head_kv, a.head_k)
        if not has_v:
            return LayerTensors(a.index, lk.name, k_width, None, 0, k_row * cells * n_stream, 0)
        if v_trans:
            v_width, v_row = v_max, lv.row_bytes(1, v_max)
        else:
            v_width, v_row = _row_bytes(lv, a.n_head_kv, a.head_v)
        return LayerTensors(a.index, lk.name, k_width, lv.name, v_width,
                            k_row * cells * n_stream, v_row * cells * n_stream)

    def kv_object(kind: str, members: list, cells: int) -> KVCacheObject:
        owned = [a for a in members if a.owns_cache]
        rotation = TURBO_ROTATION_BYTES if (type_k_eff.name in TURBO_TYPES and owned) else 0
        return KVCacheObject(kind, cells, n_seq, n_stream, type_k_eff.name, fmt_v.name,
                             tuple(layer_tensors(a, cells) for a in owned), rotation)

    # --- create_memory ------------------------------------------------------------------------------
    kv_cells = n_ctx_pad if recr and rules.hybrid_attn_cells == "n_ctx" else n_ctx_seq
    caches: list[KVCacheObject] = []
    if attn:
        if n_swa:
            size_swa = kv_cells if swa_full else _pad(min(kv_cells, n_swa * (n_seq if kv_unified else 1) + n_ubatch_eff), pad)
            caches.append(kv_object("non-SWA", [a for a in attn if not a.is_swa], kv_cells))
            caches.append(kv_object("SWA", [a for a in attn if a.is_swa], size_swa))
        else:
            caches.append(kv_object("kv", attn, kv_cells))
    recurrent = _recurrent(arch, recr, n_seq, n_rs_seq, rules) if recr else None

    src = rules.source + (f"; {fork_rules.source}" if fork_rules else "")
    return LlamaCppMemory(
        model=arch.name, build=rules.name, fork=fork_rules.name if fork_rules else None,
        n_ctx=n_ctx_pad, n_ctx_seq=n_ctx_seq, n_seq_max=n_seq, n_stream=n_stream,
        n_batch=n_batch_eff, n_ubatch=n_ubatch_eff, flash_attn=flash, v_trans=v_trans,
        flash_attn_type={"on": "enabled", "off": "disabled"}.get(fa, "enabled" if _quantized(fmt_v) else "auto"),
        type_k=fmt_k.name, type_v=fmt_v.name, swa_full=swa_full, kv_unified=kv_unified,
        kv=tuple(caches), recurrent=recurrent, notes=tuple(notes), source=src,
    )
