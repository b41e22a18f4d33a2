"""vLLM's KV-cache block allocation, rule for rule: pages, block sizes, groups, blocks, and its logs.

``kvmath.derive`` says how many bytes a token or a sequence costs. vLLM does not hand out bytes: it
hands out *blocks*, and the figures it logs at start-up ("GPU KV cache size: N tokens", "Maximum
concurrency for L tokens per request: X", or the refusal "X GiB KV cache is needed, which is larger
than the available KV cache memory (Y GiB) ... the estimated maximum model length is N") come from
its block arithmetic. This module reproduces that arithmetic exactly, in integers, for an
``Architecture`` and a set of vLLM settings:

1. one KV-cache spec per layer (``vllm/v1/kv_cache_interface.py``: ``FullAttentionSpec``,
   ``SlidingWindowSpec``, ``TQFullAttentionSpec``, ``MambaSpec``), plus the full-attention layer(s)
   of a Qwen 3.5 / 3.6 MTP drafter (``vllm/model_executor/models/qwen3_5_mtp.py``);
2. the hybrid attention / Gated-DeltaNet block-size alignment
   (``Platform._align_hybrid_block_size``, ``vllm/platforms/interface.py``): the attention block
   grows until its page holds one recurrent state, and the state's page is padded to it;
3. ``mamba_cache_mode`` from prefix caching (``MambaModelConfig.verify_and_update_config``,
   ``vllm/model_executor/models/config.py``);
4. grouping (``get_kv_cache_groups``, ``unify_kv_cache_spec_page_size``,
   ``_get_kv_cache_groups_uniform_page_size``, ``unify_hybrid_kv_cache_specs`` in
   ``vllm/v1/core/kv_cache_utils.py``), including the 1.5x rule and padding layers;
5. ``num_blocks = available // page // group_size`` (``get_num_blocks``), the per-request need
   (``max_memory_usage_bytes`` per spec, ``_max_memory_usage_bytes_from_groups``), the start-up check
   and its binary search for the "estimated maximum model length"
   (``_check_enough_kv_cache_memory``, ``_estimate_max_model_len_from_groups``), and the two logged
   figures (``get_max_concurrency_for_kv_cache_config``, ``_report_kv_cache_config`` /
   ``get_kv_cache_capacity``).

Sources. Every rule was read from the released wheels' Python files (PyPI ``vllm`` 0.20.0, 0.21.0,
0.22.0, 0.23.0, 0.24.0, 0.25.0, 0.26.0); line numbers below are from 0.24.0 unless a version is
named. The rules that change between those releases are keyed on ``vllm_version``:

- "GPU KV cache size": 0.20.x logs ``num_blocks // num_groups * min_block_size``
  (kv_cache_utils.py ``_report_kv_cache_config``, 0.20.0 l.1693); from 0.21.0 it logs
  ``int(max_concurrency * max_model_len)`` (0.22.0 l.1731; 0.24.0 ``get_kv_cache_capacity`` l.1788).
- Attention pages that do not divide the largest page: 0.20-0.23 raise ``NotImplementedError``
  (``unify_kv_cache_spec_page_size``, 0.22.0 l.1039); from 0.24.0 the smaller page is padded up to
  the largest one when the backend indexes pages by block stride (l.1049-1100; FlashAttention,
  FlashInfer and Triton all do).
- TurboQuant on a hybrid model: refused by 0.20.0 (engine/arg_utils.py l.1676); from 0.21.0
  ``_align_hybrid_block_size`` sizes the attention page from the TurboQuant slot.
- Sliding-window per-request blocks: ``W - 1 + max_num_batched_tokens`` tokens up to 0.25; from 0.26.0
  ``W - 1 + max_in_flight_tokens`` where ``max_in_flight_tokens = 2 * max_num_batched_tokens`` with
  async scheduling (the 0.26 default) (kv_cache_interface.py 0.26.0 l.567-598, config/vllm.py l.512-533).

Units: every byte figure is an exact integer number of bytes, per card (one tensor-parallel rank);
token figures are tokens; GiB = 2**30 bytes as vLLM logs it (``format_gib`` = ``round(b / 2**30, 2)``,
vllm/utils/mem_utils.py l.30).

The default version is 0.24.0 (``DEFAULT_VLLM_VERSION``): the release whose rules reproduce the
club-3090 boot logs of Qwen 3.6 27B / 35B-A3B exactly (see tests/test_vllm_alloc.py). Versions 0.20
to 0.26 are covered; a later version is planned with the 0.26 rules and says so in ``notes``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from .arch import FULL, SLIDING, Architecture, AttentionLayer, GatedDeltaNetLayer
from .config import check_positive, load_architecture
from .errors import KvMathError, choices
from .formats import DTYPE_BYTES, KVFormat, vllm_format
from .engines import Deployment, get_engine

GIB = 2**30
DEFAULT_VLLM_VERSION = "0.24.0"
READ_VERSIONS = ("0.20.0", "0.21.0", "0.22.0", "0.23.0", "0.24.0", "0.25.0", "0.26.0")
"""The vLLM releases whose sizing code these rules were read from (and, for 0.20.0, 0.22.0, 0.24.0,
0.26.0, run against: tests/fixtures/vllm/)."""

MAMBA_CACHE_MODES = ("none", "align", "all")
TOKEN_FORMULAS = ("groups", "concurrency")

# Model types whose vLLM model class implements SupportsMambaPrefixCaching ("all" mode). Qwen 3.5 / 3.6
# and Qwen3-Next do not (model_executor/models/*.py in 0.20.0-0.26.0: only bamba, falcon_h1,
# granitemoehybrid, jamba, mamba, mamba2, nemotron_h, zamba2), so "all" falls back to "align".
_SUPPORTS_MAMBA_PREFIX_CACHING: frozenset[str] = frozenset()

# Per-token-head quantisation modes (kv_cache_interface.py KVQuantMode.is_per_token_head).
_PTH = ("int8_per_token_head", "fp8_per_token_head")


def parse_version(version: str | tuple) -> tuple[int, int]:
    """``"0.24.0"`` / ``"v0.24"`` / ``(0, 24)`` -> ``(0, 24)``. Raises KvMathError for other forms or
    for releases before 0.20 (whose rules were not read)."""
    if isinstance(version, tuple):
        parts = list(version[:2])
    else:
        text = str(version).strip().lstrip("vV")
        try:
            parts = [int(p) for p in text.split(".")[:2]]
        except ValueError:
            raise KvMathError(f"vllm_version must look like 0.24.0, got {version!r}") from None
    if len(parts) != 2 or not all(isinstance(p, int) for p in parts):
        raise KvMathError(f"vllm_version must look like 0.24.0, got {version!r}")
    major, minor = parts
    if (major, minor) < (0, 20):
        raise KvMathError(
            f"vLLM {major}.{minor} is older than the releases these rules were read from; "
            f"covered: {choices(READ_VERSIONS)}"
        )
    return major, minor


def format_gib(n: int) -> str:
    """vLLM's GiB text: ``str(round(n / 2**30, 2))`` (vllm/utils/mem_utils.py ``format_gib``), e.g.
    ``'11.1'`` or ``'2.4'`` (no trailing zero)."""
    return f"{round(n / GIB, 2)}"


def gib_band(logged: str | float) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` that vLLM prints as ``logged`` GiB (two-decimal rounding).

    ``logged`` is the printed value (``"11.10"``, ``11.1``). vLLM prints ``round(b / 2**30, 2)``, so a
    printed value pins the bytes only to a band about 0.01 GiB (10.7 MB) wide; for a hybrid model
    that is one block or less. Found by bisection on vLLM's own formatting, so the edges are exact.
    """
    try:
        target = round(float(logged), 2)
    except (TypeError, ValueError):
        raise KvMathError(f"{logged!r} is not a GiB value") from None

    def first_at_least(v: float) -> int:
        lo, hi = 0, int((v + 1) * GIB)
        while lo < hi:
            mid = (lo + hi) // 2
            if round(mid / GIB, 2) >= v:
                hi = mid
            else:
                lo = mid + 1
        return lo

    lo = first_at_least(target)
    hi = first_at_least(round(target + 0.01, 2))
    if lo >= hi or round(lo / GIB, 2) != target:
        raise KvMathError(f"{logged!r} is not a GiB value vLLM can print")
    return lo, hi


# ---------------------------------------------------------------------------------------------------
# settings


@dataclass(frozen=True)
class VllmSettings:
    """The vLLM engine arguments that decide the KV-cache layout. Token counts are tokens.

    - ``max_model_len``: ``--max-model-len`` (None: the model's ``max_position_embeddings``).
    - ``kv_cache_dtype``: ``--kv-cache-dtype`` (``auto`` = the model dtype), a kvmath vLLM format name.
    - ``tensor_parallel_size``: KV heads per rank are ``max(1, heads // tp)``
      (vllm/config/model.py ``get_num_kv_heads``); GDN state is split by ``tp``.
    - ``block_size``: ``--block-size`` (default 16, ``CacheConfig.DEFAULT_BLOCK_SIZE``);
      ``kernel_block_size`` the attention backend's smallest kernel block (16 for FlashAttention,
      Triton and FlashInfer on sm_8x), the alignment unit of the hybrid block size.
    - ``max_num_batched_tokens``: default 2048 (``vllm serve`` on cards under 70 GiB,
      ``EngineArgs.get_batch_defaults``, engine/arg_utils.py l.2415); ``max_num_seqs`` default 256
      (same place; it does not change the pool, only ``fits_max_num_seqs``).
    - ``num_speculative_tokens``: adds conv-state rows and ``num_speculative_blocks`` to every
      Mamba/GDN state (mamba_utils.py ``gated_delta_net_state_shape``; abstract.py ``get_kv_cache_spec``).
    - ``drafter_kv_layers``: full-attention layers the drafter adds to the KV cache. None = automatic:
      with speculative tokens, a model with ``mtp_num_hidden_layers`` (Qwen 3.5 / 3.6 MTP,
      qwen3_5_mtp.py builds them with ``layer_type="full_attention"``) adds that many layers with the
      target's full-attention spec; Gemma 4's assistant drafter shares the target's KV
      (``Gemma4MTPAttention``, ``kv_sharing_target_layer_name``) and adds none. An explicit count adds
      layers with the target's full-attention spec (a DFlash/EAGLE drafter with other head shapes is
      not modelled).
    - ``enable_prefix_caching``: vLLM's default is on for generative models
      (``ModelConfig.is_prefix_caching_supported``); ``mamba_cache_mode`` None = automatic ("align"
      with prefix caching, "none" without; "all" falls back to "align" for models without
      ``SupportsMambaPrefixCaching``, which includes every GDN model).
    - ``mamba_cache_dtype`` / ``mamba_ssm_cache_dtype``: ``auto`` = conv state in the model dtype;
      temporal state in the config's ``mamba_ssm_dtype`` for Qwen 3.5 / 3.6
      (``Qwen3_5ForConditionalGenerationConfig``), else the conv dtype.
    - ``disable_hybrid_kv_cache_manager``: sliding layers become full-attention specs (no window
      saving); a model with Mamba/GDN layers cannot then be unified and vLLM refuses.
    - ``num_gpu_blocks_override``: replaces the computed block count.
    - ``async_scheduling``: only matters from 0.26 (sliding-window in-flight tokens); None = vLLM's
      default (on).
    - ``gemma4_pth_page_padding``: apply the padding of vLLM PR #40391 (open; not in a release): with a
      per-token-head dtype, a full-attention layer's bytes per head are rounded up to a multiple of the
      sliding layers' bytes per head (Gemma 4 512-dim: 1032 -> 1040 B) so the pages divide. The
      club-3090 builds that logged Gemma 4 int8 pools carry it (their token counts need it).
    - ``vllm_version``: which release's rules (see the module docstring).
    """

    max_model_len: int | None = None
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    block_size: int = 16
    kernel_block_size: int = 16
    max_num_batched_tokens: int = 2048
    max_num_seqs: int = 256
    num_speculative_tokens: int = 0
    drafter_kv_layers: int | None = None
    enable_prefix_caching: bool = True
    mamba_cache_mode: str | None = None
    mamba_block_size: int | None = None
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    disable_hybrid_kv_cache_manager: bool = False
    num_gpu_blocks_override: int | None = None
    async_scheduling: bool | None = None
    gemma4_pth_page_padding: bool = False
    vllm_version: str = DEFAULT_VLLM_VERSION

    def __post_init__(self):
        for name in ("tensor_parallel_size", "block_size", "kernel_block_size", "max_num_batched_tokens",
                     "max_num_seqs"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name))
        if self.max_model_len is not None:
            object.__setattr__(self, "max_model_len", check_positive(self.max_model_len, "max_model_len"))
        for name in ("num_speculative_tokens",):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise KvMathError(f"{name} must be an integer >= 0, got {v!r}")
        for name in ("drafter_kv_layers", "num_gpu_blocks_override"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise KvMathError(f"{name} must be None or an integer >= 0, got {v!r}")
        if self.mamba_block_size is not None:
            object.__setattr__(self, "mamba_block_size", check_positive(self.mamba_block_size, "mamba_block_size"))
        if self.mamba_cache_mode is not None and self.mamba_cache_mode not in MAMBA_CACHE_MODES:
            raise KvMathError(
                f"mamba_cache_mode must be one of {choices(MAMBA_CACHE_MODES)} (or None), got {self.mamba_cache_mode!r}"
            )
        parse_version(self.vllm_version)


# ---------------------------------------------------------------------------------------------------
# specs


@dataclass(frozen=True)
class KVSpec:
    """One layer's vLLM KV-cache spec, reduced to what the allocator reads.

    ``kind``: ``full_attention`` (``FullAttentionSpec`` / ``TQFullAttentionSpec``), ``sliding_window``
    (``SlidingWindowSpec``) or ``mamba`` (``MambaSpec``). ``block_size`` is tokens per block (for a
    Mamba spec, the tokens one state block stands for: ``max_model_len`` in mode "none").
    ``token_bytes`` (attention) is bytes per token per layer per rank, scales included;
    ``real_page_bytes`` is ``block_size * token_bytes`` or, for Mamba, the state bytes
    ``sum(prod(shape) * dtype size)``; ``page_padded_bytes`` overrides it when set
    (``page_size_padded``). ``sliding_window`` on a full-attention spec records a window that
    ``disable_hybrid_kv_cache_manager`` turned into full attention. Specs compare equal exactly when
    vLLM's do, which is what grouping keys on.
    """

    kind: str
    block_size: int
    num_kv_heads: int = 0
    head_size: int = 0
    head_size_v: int = 0
    kv_cache_dtype: str = ""
    token_bytes: int = 0
    sliding_window: int | None = None
    state_shapes: tuple[tuple[int, ...], ...] = ()
    state_dtypes: tuple[str, ...] = ()
    mamba_cache_mode: str = "none"
    num_speculative_blocks: int = 0
    page_padded_bytes: int | None = None

    @property
    def real_page_bytes(self) -> int:
        if self.kind == "mamba":
            return sum(math.prod(s) * DTYPE_BYTES[d] for s, d in zip(self.state_shapes, self.state_dtypes))
        return self.block_size * self.token_bytes

    @property
    def page_size_bytes(self) -> int:
        """Bytes of one block of this layer (``page_size_bytes``): padded size when padded."""
        real = self.real_page_bytes
        if self.page_padded_bytes is not None:
            if self.page_padded_bytes < real:
                raise AssertionError("padded page smaller than the real page")
            return self.page_padded_bytes
        return real

    def max_memory_usage_bytes(self, max_model_len: int, in_flight_tokens: int) -> int:
        """Bytes one request of ``max_model_len`` tokens may hold in this layer (``max_memory_usage_bytes``).

        Full attention: ``ceil(L / B)`` pages. Sliding window W:
        ``ceil(min(W - 1 + in_flight, L) / B) + 1`` pages ("+1": the window may start mid-block;
        ``in_flight`` is ``max_num_batched_tokens``, or ``max_in_flight_tokens`` from 0.26). Mamba:
        ``1 + spec`` pages in mode "none", ``2 + spec`` in "align", ``ceil(L / B) + spec`` in "all"
        (kv_cache_interface.py l.238, l.520-537, l.646-655).
        """
        page = self.page_size_bytes
        if self.kind == "full_attention":
            return -(-max_model_len // self.block_size) * page
        if self.kind == "sliding_window":
            tokens = min(self.sliding_window - 1 + in_flight_tokens, max_model_len)
            return (-(-tokens // self.block_size) + 1) * page
        if self.mamba_cache_mode == "all":
            return (-(-max_model_len // self.block_size) + self.num_speculative_blocks) * page
        if self.mamba_cache_mode == "align":
            return (2 + self.num_speculative_blocks) * page
        return (1 + self.num_speculative_blocks) * page

    def describe(self) -> str:
        if self.kind == "mamba":
            shapes = " + ".join(f"{'x'.join(map(str, s))} {d}" for s, d in zip(self.state_shapes, self.state_dtypes))
            s = f"mamba state {shapes} = {self.real_page_bytes:,} B"
        else:
            s = (f"{self.kind} {self.num_kv_heads} heads x {self.head_size}"
                 + (f"/{self.head_size_v}" if self.head_size_v != self.head_size else "")
                 + f" {self.kv_cache_dtype}, {self.token_bytes:,} B/token")
            if self.sliding_window:
                s += f", window {self.sliding_window}"
        s += f"; block {self.block_size} tokens, page {self.page_size_bytes:,} B"
        if self.page_padded_bytes is not None and self.page_padded_bytes != self.real_page_bytes:
            s += f" (padded from {self.real_page_bytes:,} B)"
        return s


@dataclass(frozen=True)
class KVGroup:
    """One KV-cache group: layers sharing a block table (``KVCacheGroupSpec``).

    ``padding_layers`` is how many empty slots the group has against ``group_size`` (vLLM's
    "Add %d padding layers" counts them per attention type).
    """

    layer_names: tuple[str, ...]
    spec: KVSpec
    padding_layers: int = 0

    @property
    def kind(self) -> str:
        return self.spec.kind


# ---------------------------------------------------------------------------------------------------
# the plan


@dataclass(frozen=True)
class VllmPlan:
    """What vLLM allocates and logs for one model, settings and KV memory budget (bytes per card).

    - ``available_kv_bytes``: the "Available KV cache memory" vLLM computed (input).
    - ``block_size``: attention tokens per block after the hybrid alignment; ``mamba_block_size``;
      ``mamba_cache_mode`` effective; ``attn_page_bytes_per_token`` the hybrid alignment's one-token
      attention page; ``mamba_state_bytes`` / ``mamba_page_bytes`` the real and padded state page.
    - ``layers``: (layer name, spec) for every layer that owns cache, drafter layers included.
    - ``groups``; ``group_size`` (layers per group = tensors in the pool); ``page_size_bytes`` the one
      page every group shares; ``bytes_per_block = group_size * page_size_bytes``.
    - ``num_blocks = available // page // group_size`` (then ``num_gpu_blocks_override``).
    - ``blocks_per_request``: the concurrency denominator (``ceil(group_size * sum of specs'
      max_memory_usage_bytes / bytes_per_block)``); ``needed_bytes``: the start-up check's
      ``group_size * page * sum_groups ceil(max_memory_usage / page)``.
    - ``max_concurrency = num_blocks / blocks_per_request``; ``gpu_kv_cache_tokens`` the logged
      "GPU KV cache size" by ``token_formula`` ("groups" before 0.21, "concurrency" from 0.21);
      ``token_figures`` both formulas.
    - ``boots``; ``refusal`` (vLLM's message, or None); ``estimated_max_model_len`` (the binary search's
      answer on a memory refusal; also filled when it boots: the longest length that would pass the check).
    - ``log_lines``: the lines vLLM prints (warnings for padding layers, the two capacity lines or the
      error); ``notes``: what kvmath assumed.
    """

    model: str
    settings: VllmSettings
    vllm_version: str
    available_kv_bytes: int
    max_model_len: int
    kv_format: str
    block_size: int
    mamba_block_size: int | None
    mamba_cache_mode: str
    attn_page_bytes_per_token: int | None
    mamba_state_bytes: int | None
    mamba_page_bytes: int | None
    layers: tuple[tuple[str, KVSpec], ...]
    groups: tuple[KVGroup, ...]
    group_size: int
    page_size_bytes: int
    bytes_per_block: int
    num_blocks: int
    blocks_per_request: int
    needed_bytes: int
    max_concurrency: float
    gpu_kv_cache_tokens: int
    token_formula: str
    token_figures: dict
    boots: bool
    refusal: str | None
    estimated_max_model_len: int | None
    log_lines: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def num_groups(self) -> int:
        return len(self.groups)

    @property
    def needed_gib(self) -> str:
        return format_gib(self.needed_bytes)

    @property
    def available_gib(self) -> str:
        return format_gib(self.available_kv_bytes)

    @property
    def fits_max_num_seqs(self) -> bool:
        """Whether ``max_num_seqs`` requests of ``max_model_len`` tokens fit the pool at once."""
        return self.boots and self.max_concurrency >= self.settings.max_num_seqs

    def to_dict(self) -> dict:
        """The plan as plain JSON types; bytes are integers per card, tokens are tokens."""
        return {
            "model": self.model,
            "vllm_version": self.vllm_version,
            "settings": asdict(self.settings),
            "units": "bytes per card (tensor-parallel rank); tokens; GiB = 2**30 bytes",
            "available_kv_bytes": self.available_kv_bytes,
            "available_kv_gib": self.available_gib,
            "max_model_len": self.max_model_len,
            "kv_format": self.kv_format,
            "block_size": self.block_size,
            "mamba_block_size": self.mamba_block_size,
            "mamba_cache_mode": self.mamba_cache_mode,
            "attn_page_bytes_per_token": self.attn_page_bytes_per_token,
            "mamba_state_bytes": self.mamba_state_bytes,
            "mamba_page_bytes": self.mamba_page_bytes,
            "groups": [
                {
                    "kind": g.kind,
                    "n_layers": len(g.layer_names),
                    "layer_names": list(g.layer_names),
                    "padding_layers": g.padding_layers,
                    "block_size": g.spec.block_size,
                    "page_size_bytes": g.spec.page_size_bytes,
                    "real_page_bytes": g.spec.real_page_bytes,
                    "token_bytes": g.spec.token_bytes,
                    "max_memory_usage_bytes": g.spec.max_memory_usage_bytes(
                        self.max_model_len, _in_flight_tokens(self.settings)),
                    "spec": g.spec.describe(),
                }
                for g in self.groups
            ],
            "num_groups": self.num_groups,
            "group_size": self.group_size,
            "page_size_bytes": self.page_size_bytes,
            "bytes_per_block": self.bytes_per_block,
            "num_blocks": self.num_blocks,
            "blocks_per_request": self.blocks_per_request,
            "needed_bytes": self.needed_bytes,
            "needed_gib": self.needed_gib,
            "max_concurrency": self.max_concurrency,
            "gpu_kv_cache_tokens": self.gpu_kv_cache_tokens,
            "token_formula": self.token_formula,
            "token_figures": dict(self.token_figures),
            "boots": self.boots,
            "refusal": self.refusal,
            "estimated_max_model_len": self.estimated_max_model_len,
            "fits_max_num_seqs": self.fits_max_num_seqs,
            "log_lines": list(self.log_lines),
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------------------------------------------
# building the specs


def _in_flight_tokens(s: VllmSettings) -> int:
    """Tokens a sliding-window request may hold beyond its window: ``max_num_batched_tokens`` up to
    0.25; from 0.26 ``max_in_flight_tokens = max_concurrent_batches * max_num_batched_tokens``, with 2
    concurrent batches under async scheduling (its default) and 1 without (config/vllm.py 0.26.0
    l.512-533)."""
    if parse_version(s.vllm_version) >= (0, 26):
        asynchronous = True if s.async_scheduling is None else s.async_scheduling
        return (2 if asynchronous else 1) * s.max_num_batched_tokens
    return s.max_num_batched_tokens


def _kv_format(arch: Architecture, name: str) -> KVFormat:
    if name in (None, "auto"):
        name = {"bfloat16": "bf16", "float16": "fp16"}.get(arch.dtype, "bf16")
    return vllm_format(name)


def _attn_token_bytes(fmt: KVFormat, heads: int, k_dim: int, v_dim: int, sliding: bool) -> int:
    """Bytes per token per layer of an attention spec. vLLM's page is ``block_size`` times this.

    kvmath's format bytes match vLLM's pages (``AttentionSpec.page_size_bytes``: data plus, for
    per-token-head modes, ``2 * H * 4`` B of fp32 scales; nvfp4 ``D/2 + D/16`` per vector;
    ``TQFullAttentionSpec``: ``H * slot_size_aligned``). One vLLM rule differs: a sliding layer under
    TurboQuant gets a plain ``SlidingWindowSpec`` (the sliding branch of ``Attention.get_kv_cache_spec``
    comes first, model_executor/layers/attention/attention.py l.594) whose dtype is uint8, i.e.
    ``H * (D + Dv) * 1`` bytes.
    """
    if sliding and fmt.name.startswith("turboquant"):
        return heads * (k_dim + v_dim)
    return fmt.token_bytes(heads, k_dim, v_dim)


def _gdn_state(layer: GatedDeltaNetLayer, arch: Architecture, s: VllmSettings) -> tuple[tuple, tuple]:
    """Shapes and dtypes of one GDN layer's state per rank.

    ``MambaStateShapeCalculator.gated_delta_net_state_shape`` (model_executor/layers/mamba/mamba_utils.py
    l.213): conv ``(K - 1 + num_spec, conv_dim / tp)``, temporal ``(nv / tp, dv, dk)``.
    ``MambaStateDtypeCalculator._mamba_state_dtype`` (l.84): conv = ``mamba_cache_dtype`` (auto: model
    dtype), temporal = ``mamba_ssm_cache_dtype`` (auto: the conv dtype), with Qwen 3.5 / 3.6 copying
    the HF ``mamba_ssm_dtype`` into ``mamba_ssm_cache_dtype`` (``Qwen3_5ForConditionalGenerationConfig``,
    model_executor/models/config.py l.603).
    """
    tp = s.tensor_parallel_size
    if layer.conv_dim % tp or layer.num_v_heads % tp:
        raise KvMathError(
            f"tensor_parallel_size {tp} does not divide the GDN conv channels ({layer.conv_dim}) and value "
            f"heads ({layer.num_v_heads}); vLLM's divide() would fail"
        )
    # The shapes and dtypes are kvmath.engines.VLLM's rule; only the settings are mapped here.
    dep = Deployment(
        max_ctx=1, tp=tp, num_speculative_tokens=s.num_speculative_tokens,
        mamba_cache_dtype=None if s.mamba_cache_dtype == "auto" else _dtype(s.mamba_cache_dtype),
        mamba_ssm_cache_dtype=None if s.mamba_ssm_cache_dtype == "auto" else _dtype(s.mamba_ssm_cache_dtype),
    )
    conv, temporal = get_engine("vllm").gdn_state(layer, arch, dep)
    return (conv.shape, temporal.shape), (conv.dtype, temporal.dtype)


def _dtype(name: str) -> str:
    aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}
    d = aliases.get(name, name)
    if d not in DTYPE_BYTES:
        raise KvMathError(f"unknown state dtype {name!r}; valid: {choices(sorted(DTYPE_BYTES))}")
    return d


def _heads(total: int, tp: int) -> int:
    return get_engine("vllm").kv_heads_per_rank(total, tp)  # vllm/config/model.py get_num_kv_heads


def _drafter_layers(arch: Architecture, s: VllmSettings) -> int:
    if s.drafter_kv_layers is not None:
        return s.drafter_kv_layers
    if s.num_speculative_tokens and arch.mtp_num_hidden_layers:
        return arch.mtp_num_hidden_layers
    return 0


@dataclass(frozen=True)
class VllmLayout:
    layers: tuple[tuple[str, KVSpec], ...]
    block_size: int
    mamba_block_size: int | None
    mamba_cache_mode: str
    attn_page_1tok: int | None
    mamba_state_bytes: int | None
    mamba_page_bytes: int | None
    max_model_len: int
    fmt: KVFormat
    notes: tuple[str, ...]
    refusal: str | None = None


def layer_specs(model, **settings) -> VllmLayout:
    """Per-layer vLLM specs after the hybrid block-size alignment (before page unification).

    Keyword arguments are ``VllmSettings`` fields. Returns an internal layout record with ``layers``
    (name, KVSpec), ``block_size``, ``mamba_block_size``, ``mamba_cache_mode`` and the alignment's
    page figures.
    """
    arch = model if isinstance(model, Architecture) else load_architecture(model)
    s = settings if isinstance(settings, VllmSettings) else VllmSettings(**settings)
    return _layout(arch, s)


def _layout(arch: Architecture, s: VllmSettings) -> VllmLayout:
    from .engines import get_engine

    other = sorted({type(layer).__name__ for layer in arch.layers
                    if layer.owns_cache and not isinstance(layer, (GatedDeltaNetLayer, AttentionLayer))})
    if other:
        raise KvMathError(
            f"{arch.name}: kvmath plans vLLM's blocks for attention and Gated DeltaNet layers; this model also has "
            f"{', '.join(other)} layers, whose block plan is not implemented yet. `kvmath --config ... --engine vllm` "
            "gives their exact bytes per token and per sequence")
    version = parse_version(s.vllm_version)
    notes: list[str] = []
    if version > (0, 26):
        notes.append(f"vLLM {s.vllm_version} is newer than the releases read; planned with the 0.26 rules")
    L = s.max_model_len or arch.max_position_embeddings
    if not L:
        raise KvMathError(f"{arch.name}: config has no max_position_embeddings; pass max_model_len")
    if arch.max_position_embeddings and L > arch.max_position_embeddings:
        notes.append(
            f"max_model_len {L} exceeds max_position_embeddings {arch.max_position_embeddings}: vLLM refuses "
            "this unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
        )
    eng = get_engine("vllm")
    eng.check_tp(arch, s.tensor_parallel_size)
    fmt = _kv_format(arch, s.kv_cache_dtype)
    tp = s.tensor_parallel_size
    hybrid = bool(arch.linear_layers())
    refusal = None

    # --- cache mode (MambaModelConfig.verify_and_update_config, models/config.py l.404-461)
    mode = "none"
    if hybrid:
        if s.enable_prefix_caching:
            mode = s.mamba_cache_mode if s.mamba_cache_mode not in (None, "none") else (
                "all" if arch.model_type in _SUPPORTS_MAMBA_PREFIX_CACHING else "align")
            if mode == "all" and arch.model_type not in _SUPPORTS_MAMBA_PREFIX_CACHING:
                mode = "align"
                notes.append(f"{arch.model_type} lacks SupportsMambaPrefixCaching: mamba_cache_mode 'all' -> 'align'")
        elif s.mamba_cache_mode not in (None, "none"):
            notes.append("prefix caching is off: vLLM sets mamba_cache_mode to 'none'")
    if hybrid and fmt.name.startswith("turboquant") and version < (0, 21):
        refusal = ("TurboQuant KV cache is not supported for hybrid (attention + Mamba) models. Boundary "
                   "layer protection requires uniform attention layers.")
        notes.append("refused by EngineArgs.create_engine_config (vLLM 0.20.0 engine/arg_utils.py l.1676)")

    # --- hybrid block-size alignment (Platform._align_hybrid_block_size, platforms/interface.py l.633-800)
    block_size = s.block_size
    mamba_block_size = None
    attn_1tok = mamba_state = mamba_page = None
    gdn = arch.linear_layers()
    if gdn:
        shapes, dtypes = _gdn_state(gdn[0], arch, s)
        mamba_state = sum(math.prod(sh) * DTYPE_BYTES[d] for sh, d in zip(shapes, dtypes))
        full = arch.layers_of(FULL)
        ref = full[0] if full else arch.attention_layers()[0]
        h = _heads(ref.num_kv_heads, tp)
        # FullAttentionSpec(block_size=1, head_size=model head size, kv dtype) page; the TurboQuant slot
        # for TurboQuant (TQFullAttentionSpec, 0.21+). 0.20.0 had no TurboQuant branch (it refuses
        # TurboQuant on hybrids before getting here): a uint8 FullAttentionSpec, H * 2D bytes.
        if fmt.name.startswith("turboquant") and version < (0, 21):
            attn_1tok = h * 2 * ref.head_dim
        else:
            attn_1tok = fmt.token_bytes(h, ref.head_dim, ref.head_dim)
        a = max(s.kernel_block_size, s.block_size)
        if mode == "all":
            base = s.mamba_block_size
            if base is None:
                raise KvMathError("mamba_cache_mode 'all' needs mamba_block_size (GDN configs carry no chunk size)")
            chunk = math.lcm(base, a)
            tokens_per_state = -(-mamba_state // attn_1tok)
            attn_block = chunk * -(-tokens_per_state // chunk)
            mamba_block_size = attn_block
        else:
            attn_block = a * -(-mamba_state // (a * attn_1tok))
        if block_size < attn_block:
            block_size = attn_block
            notes.append(
                f"vLLM: 'Setting attention block size to {attn_block} tokens to ensure that attention page "
                "size is >= mamba page size.'"
            )
        if mode == "align":
            mamba_block_size = block_size
        elif mode == "none":
            mamba_block_size = L  # MambaModelConfig: max_model_len without prefix caching
        mamba_page = block_size * attn_1tok
        if mamba_page != mamba_state:
            notes.append(
                f"vLLM: 'Padding mamba page size by {100 * (mamba_page - mamba_state) / mamba_state:.2f}% to "
                "ensure that mamba page size and attention page size are exactly equal.'"
            )
        if mode == "align" and block_size > s.max_num_batched_tokens and refusal is None:
            refusal = (
                f"In Mamba cache align mode, block_size ({block_size}) must be <= max_num_batched_tokens "
                f"({s.max_num_batched_tokens})."
            )
            notes.append("refused by VllmConfig.validate_block_size (config/vllm.py l.2141, 0.20-0.26)")

    # --- per-layer specs
    layers: list[tuple[str, KVSpec]] = []
    full_spec = None
    sliding_pth_pad = None
    if s.gemma4_pth_page_padding and fmt.name in _PTH:
        sl = arch.layers_of(SLIDING)
        if sl:
            hs = _heads(sl[0].num_kv_heads, tp)
            sliding_pth_pad = fmt.token_bytes(hs, sl[0].head_dim, sl[0].v_head_dim) // hs
    for layer in arch.layers:
        if isinstance(layer, GatedDeltaNetLayer):
            shapes, dtypes = _gdn_state(layer, arch, s)
            spec = KVSpec("mamba", mamba_block_size, state_shapes=shapes, state_dtypes=dtypes,
                          mamba_cache_mode=mode, num_speculative_blocks=s.num_speculative_tokens,
                          page_padded_bytes=mamba_page if mamba_page != mamba_state else None)
        else:
            if not layer.owns_cache:
                continue  # kv_sharing_target_layer_name: no spec (gpu_model_runner.get_kv_cache_spec)
            lfmt = eng.layer_format(layer, arch, fmt)  # TurboQuant boundary layers stay in the model dtype
            h = _heads(layer.num_kv_heads, tp)
            sliding = layer.layer_type == SLIDING
            tb = _attn_token_bytes(lfmt, h, layer.head_dim, layer.v_head_dim, sliding)
            if sliding_pth_pad and not sliding and lfmt.name in _PTH:
                # PR #40391: bytes per head rounded up to a multiple of the sliding head's (1032 -> 1040);
                # modelled per token so the page keeps scaling with the block size.
                padded_tb = -(-(tb // h) // sliding_pth_pad) * sliding_pth_pad * h
                if padded_tb != tb:
                    note = f"PR #40391 padding: full-attention {tb // h} -> {padded_tb // h} B per head per token"
                    if note not in notes:
                        notes.append(note)
                    tb = padded_tb
            spec = KVSpec(
                "sliding_window" if sliding else "full_attention", block_size, h, layer.head_dim,
                layer.v_head_dim, lfmt.name, tb, layer.sliding_window if sliding else None)
            if not sliding and full_spec is None:
                full_spec = spec
        layers.append((f"layers.{layer.index}", spec))
    n_draft = _drafter_layers(arch, s)
    if n_draft:
        if full_spec is None:
            raise KvMathError(f"{arch.name} has no full-attention layer for drafter_kv_layers to copy")
        for j in range(n_draft):
            layers.append((f"mtp.layers.{arch.num_hidden_layers + j}", full_spec))
        notes.append(f"drafter adds {n_draft} full-attention layer(s) with the target's spec")
    if s.num_speculative_tokens and not n_draft and not arch.mtp_num_hidden_layers and s.drafter_kv_layers is None:
        notes.append("speculative tokens without drafter KV layers (Gemma 4 assistant shares the target's KV)")
    return VllmLayout(tuple(layers), block_size, mamba_block_size, mode, attn_1tok, mamba_state, mamba_page,
                   L, fmt, tuple(notes), refusal)


# ---------------------------------------------------------------------------------------------------
# grouping (vllm/v1/core/kv_cache_utils.py)


class _Refused(Exception):
    pass


def _is_uniform(specs: list[KVSpec]) -> bool:
    """``is_kv_cache_spec_uniform``: every spec merges into the first (same spec, sliding windows aside
    for full-attention specs, which ``FullAttentionSpec.merge`` unifies)."""
    first = specs[0]
    return all(_strip_window(x) == _strip_window(first) for x in specs)


def _strip_window(spec: KVSpec) -> KVSpec:
    return replace(spec, sliding_window=None) if spec.kind == "full_attention" else spec


def _uniform_type(specs: list[KVSpec]) -> bool:
    """``UniformTypeKVCacheSpecs.is_uniform_type``: one block size and one type (full attention of any
    width, or sliding windows of one size, or Mamba with one ``num_speculative_blocks``)."""
    if len({x.block_size for x in specs}) > 1:
        return False
    first = specs[0]
    if first.kind == "full_attention":
        return all(x.kind == "full_attention" for x in specs)
    if first.kind == "sliding_window":
        return all(x.kind == "sliding_window" and x.sliding_window == first.sliding_window for x in specs)
    return all(x.kind == "mamba" and x.num_speculative_blocks == first.num_speculative_blocks for x in specs)


def _unify_hybrid(named: list[tuple[str, KVSpec]]) -> list[tuple[str, KVSpec]]:
    """``unify_hybrid_kv_cache_specs`` (``--disable-hybrid-kv-cache-manager``): sliding specs become
    full-attention specs that remember their window; raises _Refused if the result is still mixed."""
    specs = [x for _, x in named]
    if _is_uniform(specs) or _uniform_type(specs):
        return named
    has_full = any(x.kind == "full_attention" for x in specs)
    has_sw = any(x.kind == "sliding_window" for x in specs)
    if has_full and has_sw:
        named = [(n, replace(x, kind="full_attention") if x.kind == "sliding_window" else x) for n, x in named]
    specs = [x for _, x in named]
    if not (_is_uniform(specs) or _uniform_type(specs)):
        raise _Refused(
            "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type."
        )
    return named


def _unify_page_size(named: list[tuple[str, KVSpec]], version: tuple[int, int]) -> list[tuple[str, KVSpec]]:
    """``unify_kv_cache_spec_page_size`` (kv_cache_utils.py l.1049): every smaller page takes
    ``block_size * (max_page / page)``; a page that does not divide the largest is padded up to it
    (attention specs, from 0.24, backends that index by block stride) or refused (0.20-0.23)."""
    pages = {x.page_size_bytes for _, x in named}
    if len(pages) <= 1:
        return named
    top = max(pages)
    out = []
    for name, x in named:
        p = x.page_size_bytes
        if p == top:
            out.append((name, x))
        elif top % p == 0:
            out.append((name, replace(x, block_size=x.block_size * (top // p),
                                      page_padded_bytes=None if x.page_padded_bytes is None
                                      else x.page_padded_bytes * (top // p))))
        elif x.kind != "mamba" and version >= (0, 24) and not x.kv_cache_dtype.startswith("turboquant"):
            out.append((name, replace(x, page_padded_bytes=top)))
        else:
            if version >= (0, 24):
                raise _Refused(
                    f"Layer {name}: page size is not divisible by the maximum page size and cannot be padded."
                )
            raise _Refused(
                "The page size of the layer is not divisible by the maximum page size. "
                "Cannot unify by adjusting block_size.",
                f"{name}: page {p:,} B does not divide {top:,} B (unify_kv_cache_spec_page_size, vLLM < 0.24)",
            )
    return out


def kv_cache_groups(
    named: list[tuple[str, KVSpec]], settings: VllmSettings
) -> tuple[list[KVGroup], list[str], list[KVSpec] | None]:
    """``get_kv_cache_groups``: the groups, vLLM's padding warnings, and, when the single group is a
    ``UniformTypeKVCacheSpecs`` (one type, per-layer page sizes), its per-layer specs (else None).

    Uniform spec -> one group of every layer; one type of different sizes -> one group with per-layer
    pages (``UniformTypeKVCacheSpecs``; represented here as one group whose ``spec`` is the first
    layer's and whose pages are summed by the caller); otherwise unify page sizes, bucket layers by
    spec, ``group_size = min`` count (or ``max`` when ``max < 1.5 * min``), split each bucket into
    ``ceil(n / group_size)`` groups ``layers[i::num_groups]`` (l.1108-1228).
    """
    version = parse_version(settings.vllm_version)
    if settings.disable_hybrid_kv_cache_manager:
        named = _unify_hybrid(named)
    specs = [x for _, x in named]
    if _is_uniform(specs):
        return [KVGroup(tuple(n for n, _ in named), specs[0])], [], None
    if _uniform_type(specs):
        return [KVGroup(tuple(n for n, _ in named), specs[0])], [], specs
    named = _unify_page_size(named, version)
    buckets: dict[KVSpec, list[str]] = {}
    for name, x in named:
        buckets.setdefault(x, []).append(name)
    counts = [len(v) for v in buckets.values()]
    group_size = min(counts)
    if max(counts) < min(counts) * 1.5:
        group_size = max(counts)
    groups: list[KVGroup] = []
    warnings = []
    for spec, names in buckets.items():
        pad = group_size - len(names) % group_size
        if pad != group_size:
            warnings.append(
                f"Add {pad} padding layers, may waste at most {pad / len(names) * 100:.2f}% KV cache memory"
            )
        n_groups = -(-len(names) // group_size)
        for i in range(n_groups):
            members = tuple(names[i::n_groups])
            groups.append(KVGroup(members, spec, group_size - len(members)))
    return groups, warnings, None


# ---------------------------------------------------------------------------------------------------
# the plan


def plan(model, available_kv_bytes: int, **settings) -> VllmPlan:
    """Plan vLLM's KV cache for ``model`` with ``available_kv_bytes`` of KV memory per card.

    ``model`` is an Architecture, a config dict or path, or a known model id (``qwen3.6-27b``).
    ``available_kv_bytes`` is vLLM's "Available KV cache memory" in bytes (use ``gib_band`` to turn a
    logged GiB value into its byte band). Keyword arguments are ``VllmSettings`` fields
    (``max_model_len``, ``kv_cache_dtype``, ``tensor_parallel_size``, ``max_num_batched_tokens``,
    ``num_speculative_tokens``, ``enable_prefix_caching``, ``vllm_version``, ...).

    Never raises for a configuration vLLM would refuse: the plan says ``boots=False`` and carries
    vLLM's message in ``refusal``. Raises KvMathError for bad input (unknown model or format, a TP
    the heads cannot be split over, non-positive counts).
    """
    arch = model if isinstance(model, Architecture) else load_architecture(model)
    s = VllmSettings(**settings)
    if isinstance(available_kv_bytes, bool) or not isinstance(available_kv_bytes, int):
        raise KvMathError(f"available_kv_bytes must be an integer number of bytes, got {available_kv_bytes!r}")
    version = parse_version(s.vllm_version)
    lay = _layout(arch, s)
    L = lay.max_model_len
    in_flight = _in_flight_tokens(s)
    notes = list(lay.notes)
    log: list[str] = []
    refusal = lay.refusal

    groups: list[KVGroup] = []
    uniform_specs: list[KVSpec] | None = None
    if refusal is None:
        try:
            groups, warns, uniform_specs = kv_cache_groups(list(lay.layers), s)
            log += [f"WARNING {w}" for w in warns]
        except _Refused as e:
            refusal = e.args[0]
            notes.extend(e.args[1:])

    def need(max_len: int) -> int:
        """``_max_memory_usage_bytes_from_groups`` at ``max_len``."""
        if uniform_specs:
            return sum(x.max_memory_usage_bytes(max_len, in_flight) for x in uniform_specs)
        gs = max(len(g.layer_names) for g in groups)
        pg = groups[0].spec.page_size_bytes
        return gs * pg * sum(-(-g.spec.max_memory_usage_bytes(max_len, in_flight) // pg) for g in groups)

    def estimate(avail: int) -> int:
        """``_estimate_max_model_len_from_groups``: binary search over [1, max_model_len]."""
        if need(1) > avail:
            return 0
        lo, hi, best = 1, L, 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if need(mid) <= avail:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best

    group_size = page = per_block = num_blocks = per_request = needed = 0
    concurrency = 0.0
    tokens = 0
    figures: dict = {}
    estimated = None
    if refusal is None and groups:
        if uniform_specs:
            group_size = len(groups[0].layer_names)
            page = sum(x.page_size_bytes for x in uniform_specs)
            per_block = page
        else:
            group_size = max(len(g.layer_names) for g in groups)
            page = groups[0].spec.page_size_bytes
            per_block = page * group_size
        needed = need(L)
        estimated = estimate(available_kv_bytes) if available_kv_bytes > 0 else 0
        if available_kv_bytes <= 0:
            refusal = ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                       "when initializing the engine.")
        elif needed > available_kv_bytes:
            est = f"Based on the available memory, the estimated maximum model length is {estimated}. " \
                if estimated > 0 else ""
            whose = "models's" if version < (0, 22) else "model's"  # vLLM's own typo until 0.21
            refusal = (
                f"To serve at least one request with the {whose} max seq len ({L}), "
                f"({format_gib(needed)} GiB KV cache is needed, which is larger than the available KV cache "
                f"memory ({format_gib(available_kv_bytes)} GiB). {est}Try increasing `gpu_memory_utilization` "
                "or decreasing `max_model_len` when initializing the engine."
            )
        # get_num_blocks / get_kv_cache_config_from_groups
        num_blocks = max(available_kv_bytes // per_block, 0)
        if s.num_gpu_blocks_override is not None:
            num_blocks = s.num_gpu_blocks_override
        # get_max_concurrency_for_kv_cache_config (l.919): spec-level bytes summed, then one ceil
        if uniform_specs:
            per_request = max(-(-x.max_memory_usage_bytes(L, in_flight) // x.page_size_bytes)
                              for x in uniform_specs)
        else:
            total = group_size * sum(g.spec.max_memory_usage_bytes(L, in_flight) for g in groups)
            per_request = -(-total // per_block)
        concurrency = num_blocks / per_request
        min_block = min(g.spec.block_size for g in groups)
        figures = {
            "groups": num_blocks // len(groups) * min_block,
            "concurrency": int(concurrency * L),
        }
        formula = "groups" if version < (0, 21) else "concurrency"
        tokens = figures[formula]
        if refusal is None:
            log.append(f"GPU KV cache size: {tokens:,} tokens")
            log.append(f"Maximum concurrency for {L:,} tokens per request: {concurrency:.2f}x")
        else:  # vLLM stops at the check: nothing is allocated or logged
            num_blocks, concurrency, tokens, figures = 0, 0.0, 0, {}
    formula = "groups" if version < (0, 21) else "concurrency"
    if refusal is not None:
        log.append(f"ERROR {refusal}")
    return VllmPlan(
        model=arch.name,
        settings=s,
        vllm_version=s.vllm_version,
        available_kv_bytes=available_kv_bytes,
        max_model_len=L,
        kv_format=lay.fmt.name,
        block_size=lay.block_size,
        mamba_block_size=lay.mamba_block_size,
        mamba_cache_mode=lay.mamba_cache_mode,
        attn_page_bytes_per_token=lay.attn_page_1tok,
        mamba_state_bytes=lay.mamba_state_bytes,
        mamba_page_bytes=lay.mamba_page_bytes,
        layers=lay.layers,
        groups=tuple(groups),
        group_size=group_size,
        page_size_bytes=page,
        bytes_per_block=per_block,
        num_blocks=num_blocks,
        blocks_per_request=per_request,
        needed_bytes=needed,
        max_concurrency=concurrency,
        gpu_kv_cache_tokens=tokens,
        token_formula=formula,
        token_figures=figures,
        boots=refusal is None,
        refusal=refusal,
        estimated_max_model_len=estimated,
        log_lines=tuple(log),
        notes=tuple(notes),
    )


def plan_from_logged_gib(model, logged_gib: str | float, **settings) -> tuple[VllmPlan, VllmPlan]:
    """Plans at both edges of the byte band a logged "Available KV cache memory: X GiB" stands for.

    Returns ``(low, high)``: the plan at the smallest and at the largest byte count vLLM prints as
    ``logged_gib``. A logged figure is reproduced when it lies between the two (block counts differ by
    at most one block for the models here).
    """
    lo, hi = gib_band(logged_gib)
    return plan(model, lo, **settings), plan(model, hi - 1, **settings)


__all__ = [
    "DEFAULT_VLLM_VERSION", "READ_VERSIONS", "KVSpec", "KVGroup", "VllmPlan", "VllmSettings", "format_gib",
    "gib_band", "kv_cache_groups", "layer_specs", "parse_version", "plan", "plan_from_logged_gib",
]
