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

Sources. Every rule was read from the released wheels' Python files (PyPI ``vllm`` 0.20.0 to 0.33.0);
line numbers below are from 0.24.0 unless a version is named. The rules that change between those releases read
a named switch of the release's record (:mod:`kvmath.engines.vllm.releases`, given in brackets):

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
- Mamba align mode: ``block_size <= max_num_batched_tokens`` is asserted by
  ``VllmConfig.validate_block_size`` up to 0.26.0 (config/vllm.py 0.26.0 l.2264-2270); 0.27.0 dropped it.
- ``--disable-hybrid-kv-cache-manager`` on a model it cannot unify: "Hybrid KV cache manager is disabled
  but failed to convert ..." up to 0.26; "Failed to promote local KV cache specs to one unified type."
  from 0.27.0 (``_promote_local_kv_cache_specs``, kv_cache_utils.py 0.27.0 l.1525-1529).
- The memory check's messages: "models's" and no CPU-backend clause in 0.20-0.21; "model's" and "(which
  also controls CPU memory on the CPU backend)" from 0.22.0, unchanged to 0.33.0; every message closes
  with "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
  (``no_memory_message``, ``memory_refusal_message``).
- The null block: from 0.29.0 the check and its estimate compare against the available memory less one
  block's bytes (the null block BlockPool holds back; ``get_kv_cache_configs``, kv_cache_utils.py 0.29.0,
  kv_cache_planning.py 0.33.0 l.1533-1552), so the printed "available KV cache memory" and the estimated
  maximum length are lower by one block; with ``num_gpu_blocks_override`` the memory is
  ``override * bytes_per_block`` first. Read from the source; 0.29+ has no fixture yet.
- Mamba blocks and ``max_num_seqs`` (every release read): with full decode CUDA graphs (the default) a
  model with Mamba/GDN layers refuses to start when ``max_num_seqs > num_blocks``
  (``CompilationConfig.resolve_cudagraph_mode_and_sizes``, config/compilation.py 0.20.0 l.1420-1443 to
  0.33.0 l.1510-1533; PR #38270): "max_num_seqs (N) exceeds available Mamba cache blocks (M). ...".
  It runs in the worker after the two capacity lines are logged (engine/core.py 0.24.0 l.294-321).

Units: every byte figure is an exact integer number of bytes, per card (one tensor-parallel rank);
token figures are tokens; GiB = 2**30 bytes as vLLM logs it (``format_gib`` = ``round(b / 2**30, 2)``,
vllm/utils/mem_utils.py l.30).

The default version is 0.24.0 (``DEFAULT_VLLM_VERSION``): the release whose rules reproduce the
club-3090 boot logs of Qwen 3.6 27B / 35B-A3B exactly (see tests/test_vllm_alloc.py). The covered range is
``releases.covered()``: 0.20 to 0.27 read in full and checked against real vLLM (tests/fixtures/vllm); a later
version is planned with the 0.27 rules plus the switches of the later records, and says so in ``notes``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from dataclasses import asdict, dataclass, field, replace

from ...errors import KvMathError
from ...validate import _short
from ...formats import DTYPE_BYTES, KVFormat
from ...model.load import load_architecture
from ...model.specs import FULL, SLIDING, Architecture
from ..base import require_kinds
from . import rules
from .log import format_gib, gib_band
from . import releases
from .releases import VllmRelease, release
from .settings import DEFAULT_VLLM_VERSION, READ_VERSIONS, VllmSettings, in_flight_tokens
from .specs import KVGroup, KVSpec

# Model types whose vLLM model class implements SupportsMambaPrefixCaching, so prefix caching runs their
# state in mamba_cache_mode "all" (MambaModelConfig.verify_and_update_config, models/config.py l.417-421,
# 0.24.0). The classes that declare it in model_executor/models/*.py, 0.24.0: bamba, falcon_h1,
# granitemoehybrid, jamba, mamba, mamba2, nemotron_h, zamba2 (of these, kvmath's vLLM plan prices granitemoehybrid
# and nemotron_h; it refuses bamba, falcon_h1 and mamba2). Qwen 3.5 / 3.6, Qwen3-Next and Kimi Linear do not: "all" falls back to "align".
_SUPPORTS_MAMBA_PREFIX_CACHING: frozenset[str] = frozenset(
    {"bamba", "falcon_h1", "granitemoehybrid", "jamba", "mamba", "mamba2", "nemotron_h", "zamba2"})

# Model types kvmath reads whose vLLM rules it has not checked, with the one-line reason the vLLM plan refuses them.
_UNCHECKED_MODEL_TYPES: dict[str, str] = {
    "bamba": ("vLLM 0.23.0 removed BambaForCausalLM (vllm/model_executor/models/registry.py "
              "_PREVIOUSLY_SUPPORTED_MODELS, 0.24.0) and kvmath has not checked the Bamba state rules of the earlier "
              "releases; kvmath has no vLLM plan for bamba"),
}

# Per-token-head quantisation modes (kv_cache_interface.py KVQuantMode.is_per_token_head).
_PTH = ("int8_per_token_head", "fp8_per_token_head")



# ---------------------------------------------------------------------------------------------------
# the plan


@dataclass(frozen=True)
class VllmPlan:
    """What vLLM allocates and logs for one model, settings and KV memory budget (bytes per card).

    - ``available_kv_bytes``: the "Available KV cache memory" vLLM computed (input).
    - ``block_size``: attention tokens per block after the hybrid alignment; ``mamba_block_size``;
      ``mamba_cache_mode`` effective; ``attn_page_bytes_per_token`` the hybrid alignment's one-token
      attention page; ``mamba_state_bytes`` / ``mamba_page_bytes`` the real and padded state page.
    - ``layers``: (layer name, spec) for every layer that owns cache, drafter layers included;
      ``final_layers`` the same after page unification (the spec each layer's blocks really have;
      empty when vLLM refuses the layout).
    - ``groups``; ``group_size`` (layers per group = tensors in the pool); ``page_size_bytes`` the one
      page every group shares; ``bytes_per_block = group_size * page_size_bytes``.
    - ``num_blocks = available // page // group_size`` (then ``num_gpu_blocks_override``).
    - ``blocks_per_request``: the concurrency denominator (``ceil(group_size * sum of specs'
      max_memory_usage_bytes / bytes_per_block)``); ``needed_bytes``: the start-up check's
      ``group_size * page * sum_groups ceil(max_memory_usage / page)``.
    - ``max_concurrency = num_blocks / blocks_per_request``; ``gpu_kv_cache_tokens`` the logged
      "GPU KV cache size" by ``token_formula`` ("groups" before 0.21, "concurrency" from 0.21);
      ``token_figures`` both formulas.
    - ``boots``; ``refusal`` (vLLM's message, or None); ``refusal_stage``: where vLLM stopped, ``config``
      (a configuration check before memory is sized), ``memory`` (the KV check), ``mamba_blocks``
      (after the pool is sized and logged: ``max_num_seqs`` above the blocks of a model with Mamba/GDN
      layers, full CUDA graphs on); ``estimated_max_model_len`` (the binary search's
      answer on a memory refusal; also filled when it boots: the longest length that would pass the check).
    - ``log_lines``: the lines vLLM prints (warnings for padding layers, the two capacity lines or the
      error); ``notes``: what kvmath assumed.
    """

    model: str
    settings: VllmSettings
    vllm_version: str
    available_kv_bytes: int | None
    max_model_len: int
    kv_format: str
    block_size: int
    mamba_block_size: int | None
    mamba_cache_mode: str
    attn_page_bytes_per_token: int | None
    mamba_state_bytes: int | None
    mamba_page_bytes: int | None
    layers: tuple[tuple[str, KVSpec], ...]
    final_layers: tuple[tuple[str, KVSpec], ...]
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
    refusal_stage: str | None = None

    @property
    def num_groups(self) -> int:
        return len(self.groups)

    @property
    def needed_gib(self) -> str:
        return format_gib(self.needed_bytes)

    @property
    def available_gib(self) -> str | None:
        """The available KV memory as vLLM prints it (None for an allocation-only plan)."""
        return None if self.available_kv_bytes is None else format_gib(self.available_kv_bytes)

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
                        self.max_model_len, in_flight_tokens(self.settings)),
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
            "refusal_stage": self.refusal_stage,
            "estimated_max_model_len": self.estimated_max_model_len,
            "fits_max_num_seqs": self.fits_max_num_seqs,
            "log_lines": list(self.log_lines),
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------------------------------------------
# vLLM's messages, word for word per release


_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."


def no_memory_message(version: str) -> str:
    """``_check_enough_kv_cache_memory``'s first ValueError (kv_cache_utils.py 0.20.0 l.697-700; the
    CPU-backend sentence from 0.22.0 l.699-704; kv_cache_planning.py 0.33.0 l.57-64)."""
    if not release(version).cpu_backend_messages:
        return ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                f"initializing the engine. {_DOCS}")
    return ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
            "the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). "
            f"{_DOCS}")


def memory_refusal_message(version: str, max_model_len: int, needed: int, available: int, estimated: int) -> str:
    """``_check_enough_kv_cache_memory``'s second ValueError (kv_cache_utils.py 0.20.0 l.714-723 with the
    "models's" typo; "model's" and the CPU-backend clause from 0.22.0 l.718-728; unchanged to
    kv_cache_planning.py 0.33.0 l.77-87). ``available`` is what the check compared against (from 0.29
    the memory less one null block)."""
    old = not release(version).cpu_backend_messages
    est = (f"Based on the available memory, the estimated maximum model length is {estimated}. "
           if estimated > 0 else "")
    whose = "models's" if old else "model's"
    hint = ("Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine. "
            if old else
            "Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
            "decreasing `max_model_len` when initializing the engine. ")
    return (f"To serve at least one request with the {whose} max seq len ({max_model_len}), "
            f"({format_gib(needed)} GiB KV cache is needed, which is larger than the available KV cache memory "
            f"({format_gib(available)} GiB). {est}{hint}{_DOCS}")


def mamba_blocks_message(max_num_seqs: int, num_blocks: int) -> str:
    """``CompilationConfig.resolve_cudagraph_mode_and_sizes``'s ValueError (config/compilation.py 0.20.0
    l.1436-1443, the same text in every release to 0.33.0 l.1526-1533; vLLM PR #38270, issue #34094)."""
    return (f"max_num_seqs ({max_num_seqs}) exceeds available Mamba cache blocks ({num_blocks}). Each decode "
            "sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower "
            f"max_num_seqs to at most {num_blocks} or increase gpu_memory_utilization.")


# ---------------------------------------------------------------------------------------------------
# building the specs


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


def _shape_key(layer) -> tuple:
    """A layer's fields but its index: layers with the same key get the same spec."""
    return (type(layer),) + tuple(v for k, v in vars(layer).items() if k != "index")


def _state_of(layer, arch: Architecture, s: VllmSettings) -> tuple[tuple, tuple]:
    """(shapes, dtypes) of one state layer per rank: the rule in ``rules.state_tensors``."""
    ssm = s.mamba_ssm_cache_dtype
    if layer.kind == "gdn" and not release(s.vllm_version).gdn_ssm_dtype:
        ssm = "auto"  # 0.10-0.11: gated_delta_net_state_dtype(model dtype, mamba_cache_dtype) alone
    ts = rules.state_tensors(layer, arch, tp=s.tensor_parallel_size, num_speculative_tokens=s.num_speculative_tokens,
                             mamba_cache_dtype=s.mamba_cache_dtype, mamba_ssm_cache_dtype=ssm)
    return tuple(t.shape for t in ts), tuple(t.dtype for t in ts)


def _layout(arch: Architecture, s: VllmSettings) -> VllmLayout:
    """The layout at ``s``; computed once per model and settings other than ``max_model_len`` wherever the
    length enters only the record's ``max_model_len`` (not above the derived maximum, and no Mamba block
    that takes the length, as mode 'none' does). A sweep over lengths then reuses one layout."""
    L = s.max_model_len
    derived = arch.derived_max_model_len
    if L and (not derived or L <= derived) and L != 1:
        base = _layout_at(arch, _at_length_one(s))
        if base.refusal is None and (base.mamba_block_size is None or base.mamba_cache_mode != "none"):
            return replace(base, max_model_len=L)
    return _layout_at(arch, s)


def _at_length_one(s: VllmSettings) -> VllmSettings:
    """``s`` at ``max_model_len`` 1, copied without re-running the settings' validation (``s`` passed it, and
    1 is a valid length): the key of the layout shared by every length."""
    import copy

    t = copy.copy(s)
    object.__setattr__(t, "max_model_len", 1)
    return t


def _context(arch: Architecture, s: VllmSettings, version) -> tuple[int, list[str], str | None]:
    """(max_model_len, the notes it starts with, vLLM's refusal of a length above the derived maximum or None).
    Raises KvMathError without a length."""
    notes: list[str] = releases.notes(s.vllm_version)
    L = s.max_model_len or arch.max_position_embeddings
    if not L:
        raise KvMathError(f"{arch.name}: config has no max_position_embeddings; pass max_model_len")
    derived = arch.derived_max_model_len
    long_refusal = None
    if derived and L > derived:
        # vllm/config/model.py _get_and_verify_max_len (0.20.0-0.33.0, same text): a ValueError at config time
        msg = (f"User-specified max_model_len ({L}) is greater than the derived max_model_len "
               f"(max_position_embeddings={derived} or model_max_length=None in model's config.json).")
        warning = ("VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative "
                   "position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model "
                   "uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA "
                   "array out-of-bounds error.")
        if s.allow_long_max_model_len:
            notes.append(f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: {msg}")
        else:
            long_refusal = (f"{msg} To allow overriding this maximum, set the env var "
                            f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. {warning}")
    return L, notes, long_refusal


def _cache_mode(arch: Architecture, s: VllmSettings, hybrid: bool, notes: list, version=None) -> str:
    """The Mamba cache mode vLLM settles on (``none`` / ``align`` / ``all``)."""
    # --- cache mode (MambaModelConfig.verify_and_update_config, models/config.py l.404-461)
    mode = "none"
    if hybrid:
        if version is not None and not version.hybrid_prefix_caching:
            # 0.10-0.11: MambaModelConfig sets enable_prefix_caching = False for every hybrid
            # (models/config.py 0.10.2 l.308-311, 0.11.0 l.295-298)
            notes.append("vLLM: 'Hybrid or mamba-based model detected: disabling prefix caching since it is not yet "
                         "supported.'" if version.group_size_factor == 0 else "vLLM: 'Hybrid or mamba-based model "
                         "detected without support for prefix caching: disabling.'")
        elif s.enable_prefix_caching:
            mode = s.mamba_cache_mode if s.mamba_cache_mode not in (None, "none") else (
                "all" if arch.model_type in _SUPPORTS_MAMBA_PREFIX_CACHING else "align")
            if mode == "all" and arch.model_type not in _SUPPORTS_MAMBA_PREFIX_CACHING:
                mode = "align"
                notes.append(f"{arch.model_type} lacks SupportsMambaPrefixCaching: mamba_cache_mode 'all' -> 'align'")
        elif s.mamba_cache_mode not in (None, "none"):
            notes.append("prefix caching is off: vLLM sets mamba_cache_mode to 'none'")
    return mode


def _mla_alignment(a: int, s: VllmSettings, version, notes: list) -> int:
    """The hybrid block alignment of an MLA + linear-attention model (Kimi Linear): the MLA backend's smallest
    kernel block (``s.kernel_block_size``: 16 for TRITON_MLA on sm_8x / sm_12x and FLASH_ATTN_MLA on sm_90, 32
    for FLASHINFER_MLA, vLLM's first choice on sm_100: ``settings.mla_kernel_block_size``), and from 0.27.0 at
    least 128 on every card ("TRTLLM/FlashInfer MLA decode kernels require the physical number of kernel blocks
    to be aligned to 128 / kernel_block_size", platforms/interface.py ``_align_hybrid_block_size``; absent in
    0.26.0)."""
    if version.mla_align_128:
        return max(a, 128)
    if s.kernel_block_size is None:
        notes.append("MLA kernel block 16 (TRITON_MLA, FLASH_ATTN_MLA: no card given); on sm_100 vLLM picks "
                     "FLASHINFER_MLA, whose block is 32 (kvmath-fit --card sets it)")
    return a


def _hybrid_alignment(arch: Architecture, s: VllmSettings, version, *, hybrid: bool, mode: str, fmt, tp: int,
                      attention: list, state_layers: list, L: int, refusal: str | None, notes: list):
    """(attention block size, Mamba block size, one token's attention page bytes, the state bytes, the padded
    Mamba page bytes, the refusal so far): the hybrid block-size alignment. Attention-only models keep
    ``s.block_size`` and None for the rest."""
    # --- hybrid block-size alignment (Platform._align_hybrid_block_size, platforms/interface.py l.633-800)
    block_size = s.block_size
    mamba_block_size = None
    attn_1tok = mamba_state = mamba_page = None
    if not hybrid:
        return block_size, mamba_block_size, attn_1tok, mamba_state, mamba_page, refusal
    states = {_state_of(layer, arch, s) for layer in {_shape_key(x): x for x in state_layers}.values()}
    mamba_state = max(sum(math.prod(sh) * DTYPE_BYTES[d] for sh, d in zip(shapes, dtypes))
                      for shapes, dtypes in states)
    full = [layer for layer in attention if layer.layer_type == FULL]
    ref = full[0] if full else attention[0]
    heads, k_dim, v_dim = rules.attention_dims(ref)
    h = rules.kv_heads_per_rank(heads, tp) if ref.kind != "mla" else 1
    ref_fmt = rules.layer_format(ref, arch, fmt)
    # FullAttentionSpec(block_size=1, head_size=model head size, kv dtype) page; the TurboQuant slot
    # for TurboQuant (TQFullAttentionSpec, 0.21+). 0.20.0 had no TurboQuant branch (it refuses
    # TurboQuant on hybrids before getting here): a uint8 FullAttentionSpec, H * 2D bytes.
    if fmt.name.startswith("turboquant") and not version.turboquant_hybrid:
        attn_1tok = h * 2 * k_dim
    elif ref.kind == "mla":
        attn_1tok = ref_fmt.token_bytes(1, k_dim, 0)
    else:
        attn_1tok = ref_fmt.token_bytes(h, k_dim, k_dim)
    a = max(s.kernel_block_size or 16, s.block_size)
    if version.hybrid_align_16 and ref.kind != "mla":
        # 0.19 and before: HybridAttentionMambaModelConfig (models/config.py 0.19.0 l.217-218) aligns an
        # attention page to 16 tokens, not to the backend's kernel block or the chosen block size
        a = 16
        if version.head256_align_32 and k_dim == 256:
            # 0.12-0.14: 32 on sm_100 with FlashInfer / the default backend (models/config.py 0.12.0 l.364-375,
            # 0.14.1 l.401-412); the card reaches a plan as kernel_block_size 32 (kvmath-fit --card)
            if s.kernel_block_size == 32:
                a = 32
                notes.append("vLLM 0.12-0.14: head size 256 on sm_100 with FlashInfer: hybrid block aligned to 32 "
                             "tokens (models/config.py HybridAttentionMambaModelConfig)")
            else:
                notes.append("vLLM 0.12-0.14 align a head-256 hybrid to 32 tokens on sm_100 (B200 / GB200) with "
                             "FlashInfer or the default backend; priced at 16 (another card); kernel_block_size=32 "
                             "prices sm_100")
    if ref.kind == "mla":
        a = _mla_alignment(a, s, version, notes)
    if mode == "all":
        # platforms/interface.py l.752-760 (0.24.0): base_chunk_size = the user's mamba_block_size or
        # model_config.get_mamba_chunk_size() (mamba_chunk_size / chunk_size; 2048 when the config has none)
        base = s.mamba_block_size or arch.mamba_chunk_size or 2048
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
    if mode == "align" and block_size > s.max_num_batched_tokens and refusal is None and version.align_block_check:
        refusal = (
            f"In Mamba cache align mode, block_size ({block_size}) must be <= max_num_batched_tokens "
            f"({s.max_num_batched_tokens})."
        )
        notes.append("refused by VllmConfig.validate_block_size (config/vllm.py 0.26.0 l.2264-2270; the "
                     "assertion is gone from 0.27.0)")

    return block_size, mamba_block_size, attn_1tok, mamba_state, mamba_page, refusal


def _layer_specs(arch: Architecture, s: VllmSettings, *, fmt, tp: int, state_idx: set, mode: str, block_size: int,
                 mamba_block_size, mamba_page, notes: list) -> tuple[list, object]:
    """(``(name, KVSpec)`` per cache-owning layer, the first full-attention spec or None), as
    ``gpu_model_runner.get_kv_cache_spec`` builds them after the alignment."""
    # --- per-layer specs
    state_memo: dict[tuple, tuple[tuple, tuple]] = {}
    layers: list[tuple[str, KVSpec]] = []
    full_spec = None
    sliding_pth_pad = None
    if s.gemma4_pth_page_padding and fmt.name in _PTH:
        sl = arch.layers_of(SLIDING)
        if sl:
            hs = rules.kv_heads_per_rank(sl[0].num_kv_heads, tp)
            sliding_pth_pad = fmt.token_bytes(hs, sl[0].head_dim, sl[0].v_head_dim) // hs
    for layer in arch.layers:
        if not layer.owns_cache:
            continue  # MLP / MoE blocks; kv_sharing_target_layer_name: no spec (gpu_model_runner.get_kv_cache_spec)
        if layer.index in state_idx:
            key = _shape_key(layer)
            if key not in state_memo:
                state_memo[key] = _state_of(layer, arch, s)
            shapes, dtypes = state_memo[key]
            real = sum(math.prod(sh) * DTYPE_BYTES[d] for sh, d in zip(shapes, dtypes))
            spec = KVSpec("mamba", mamba_block_size, state_shapes=shapes, state_dtypes=dtypes,
                          mamba_cache_mode=mode, num_speculative_blocks=s.num_speculative_tokens,
                          page_padded_bytes=mamba_page if mamba_page != real else None)
        else:
            lfmt = rules.layer_format(layer, arch, fmt)  # TurboQuant boundary layers stay in the model dtype
            heads, k_dim, v_dim = rules.attention_dims(layer)
            if layer.kind == "mla":
                # MLAAttentionSpec: one latent "head" on every rank, no V
                h, sliding, tb = 1, False, lfmt.token_bytes(1, k_dim, 0)
            else:
                h = rules.kv_heads_per_rank(heads, tp)
                sliding = layer.layer_type == SLIDING
                tb = _attn_token_bytes(lfmt, h, k_dim, v_dim, sliding)
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
                "sliding_window" if sliding else "full_attention", block_size, h, k_dim,
                v_dim, lfmt.name, tb, layer.sliding_window if sliding else None)
            if not sliding and full_spec is None:
                full_spec = spec
        layers.append((f"layers.{layer.index}", spec))
    return layers, full_spec


def _unread(text: str | None, version, what: str) -> str:
    """The one-line refusal of a model kind a ``read="part"`` record has not read."""
    return (f"vLLM {text or version.name}: {what} not read for this release (record {version.name}, read in part: "
            f"{version.not_modelled}); kvmath does not price it with another release's rules")


def _refuse_unread(arch: Architecture, s: VllmSettings, version, *, hybrid: bool, fmt, attention: list) -> None:
    """Raise KvMathError for a model kind the release's record lists in ``refuse_kinds``."""
    if hybrid and version.hybrid_model_types is not None and s.vllm_version:
        from ..releases import release_key

        line = release_key(str(s.vllm_version).split("+", 1)[0].lstrip("v"))[:2]
        if line != version.key[:2]:
            # hybrids were read for the record's own release line only: 0.13 and 0.15-0.18 take a record
            # whose hybrid rules were not checked against their sources
            raise KvMathError(_unread(s.vllm_version, version, f"Mamba / Gated-DeltaNet hybrids (read for "
                                      f"{version.minor[0]}.{version.minor[1]}.x only, not for this release line)"))
    if hybrid and version.hybrid_model_types is not None and arch.model_type not in version.hybrid_model_types:
        raise KvMathError(_unread(s.vllm_version, version, f"Mamba / Gated-DeltaNet hybrids other than "
                                  f"{', '.join(version.hybrid_model_types)} ({arch.model_type}: not among the "
                                  "hybrids of this release's models/registry.py that were read)"))
    kinds = version.refuse_kinds
    if not kinds:
        return
    if "mamba" in kinds and hybrid:
        raise KvMathError(_unread(s.vllm_version, version, "Mamba / Gated-DeltaNet hybrids (block alignment, "
                                  "Mamba cache modes)"))
    if "mamba2_state" in kinds and any(x.kind in ("mamba2", "kda") for x in arch.state_layers()):
        raise KvMathError(_unread(s.vllm_version, version, "Mamba-2 / KDA state layers (Nemotron-H's and Kimi "
                                  "Linear's state dtypes and shapes: models/config.py)"))
    if "mla" in kinds and any(layer.kind == "mla" for layer in attention):
        raise KvMathError(_unread(s.vllm_version, version, "MLA attention"))
    if "mla_hybrid" in kinds and hybrid and any(layer.kind == "mla" for layer in attention):
        raise KvMathError(_unread(s.vllm_version, version, "MLA + linear-attention hybrids (the 64 / 128 "
                                  "alignment of HybridAttentionMambaModelConfig)"))
    if "kv_format" in kinds and (fmt.name.startswith(("turboquant", "nvfp4", "int8")) or "per_token_head" in fmt.name):
        raise KvMathError(_unread(s.vllm_version, version, f"--kv-cache-dtype {fmt.name}"))
    if "speculative" in kinds and s.num_speculative_tokens:
        raise KvMathError(_unread(s.vllm_version, version, "speculative decoding (drafter layers, Mamba cache mode)"))
    if "disable_hybrid" in kinds and s.disable_hybrid_kv_cache_manager:
        raise KvMathError(_unread(s.vllm_version, version, "--disable-hybrid-kv-cache-manager"))


@lru_cache(maxsize=512)  # Architecture and VllmSettings are frozen: a layout is a pure function of both
def _layout_at(arch: Architecture, s: VllmSettings) -> VllmLayout:
    """The layout of ``arch`` at ``s``: the length checks, the cache mode, the hybrid alignment, the per-layer
    specs and the drafter's layers. Raises KvMathError for bad input; vLLM's refusals are in the record."""
    version = release(s.vllm_version)
    if arch.model_type in _UNCHECKED_MODEL_TYPES:
        raise KvMathError(f"{arch.name}: {_UNCHECKED_MODEL_TYPES[arch.model_type]}")
    L, notes, long_refusal = _context(arch, s, version)
    require_kinds("vllm", arch, rules.KINDS)
    tp = s.tensor_parallel_size
    problem = rules.tp_problem(arch, tp)
    if problem:
        raise KvMathError(f"{problem}; valid TP for {arch.name} on vllm: "
                          f"{', '.join(str(t) for t in (1, 2, 4, 8, 16, 32, 64) if rules.tp_problem(arch, t) is None)}")
    fmt = rules.model_format(arch, s.kv_cache_dtype)
    state_layers = arch.state_layers()
    state_idx = {layer.index for layer in state_layers}
    attention = [layer for layer in arch.layers if layer.owns_cache and layer.index not in state_idx]
    if not attention:
        raise KvMathError(
            f"{arch.name} has no attention layer: vLLM sizes its state blocks from an attention page "
            "(Platform._align_hybrid_block_size), so kvmath has no vLLM plan for it")
    hybrid = bool(state_layers)
    _refuse_unread(arch, s, version, hybrid=hybrid, fmt=fmt, attention=attention)
    refusal = long_refusal
    mode = _cache_mode(arch, s, hybrid, notes, version)
    if hybrid and fmt.name.startswith("turboquant") and not version.turboquant_hybrid:
        refusal = ("TurboQuant KV cache is not supported for hybrid (attention + Mamba) models. Boundary "
                   "layer protection requires uniform attention layers.")
        notes.append("refused by EngineArgs.create_engine_config (vLLM 0.20.0 engine/arg_utils.py l.1676)")

    block_size, mamba_block_size, attn_1tok, mamba_state, mamba_page, refusal = _hybrid_alignment(
        arch, s, version, hybrid=hybrid, mode=mode, fmt=fmt, tp=tp, attention=attention, state_layers=state_layers,
        L=L, refusal=refusal, notes=notes)
    layers, full_spec = _layer_specs(arch, s, fmt=fmt, tp=tp, state_idx=state_idx, mode=mode, block_size=block_size,
                                     mamba_block_size=mamba_block_size, mamba_page=mamba_page, notes=notes)
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


def _unify_hybrid(named: list[tuple[str, KVSpec]], version: VllmRelease) -> list[tuple[str, KVSpec]]:
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
        if version.promote_specs_message:  # _promote_local_kv_cache_specs (kv_cache_utils.py 0.27.0 l.1525-1529)
            raise _Refused("Failed to promote local KV cache specs to one unified type.")
        raise _Refused(
            "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type."
        )
    return named


def _unify_page_size(named: list[tuple[str, KVSpec]], version: VllmRelease) -> list[tuple[str, KVSpec]]:
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
        elif x.kind != "mamba" and version.pad_attention_pages and not x.kv_cache_dtype.startswith("turboquant"):
            out.append((name, replace(x, page_padded_bytes=top)))
        else:
            if version.pad_attention_pages:
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
    version = release(settings.vllm_version)
    if settings.disable_hybrid_kv_cache_manager:
        named = _unify_hybrid(named, version)
    specs = [x for _, x in named]
    if _is_uniform(specs):
        return [KVGroup(tuple(n for n, _ in named), specs[0])], [], None
    if _uniform_type(specs):
        if "page_sizes" in version.refuse_kinds and len({x.page_size_bytes for x in specs}) > 1:
            raise KvMathError(_unread(settings.vllm_version, version, "layers of different page sizes "
                                      "(UniformTypeKVCacheSpecs / unify_kv_cache_spec_page_size)"))
        return [KVGroup(tuple(n for n, _ in named), specs[0])], [], specs
    if "page_sizes" in version.refuse_kinds and len({x.page_size_bytes for x in specs}) > 1:
        raise KvMathError(_unread(settings.vllm_version, version, "layers of different page sizes "
                                  "(unify_kv_cache_spec_page_size)"))
    named = _unify_page_size(named, version)
    buckets: dict[KVSpec, list[str]] = {}
    for name, x in named:
        buckets.setdefault(x, []).append(name)
    counts = [len(v) for v in buckets.values()]
    group_size = min(counts)
    # _get_kv_cache_groups_uniform_page_size: min count; max when max < factor * min (1.25 in 0.12-0.14,
    # 1.5 from 0.19; 0.10-0.11 take the min alone: group_size_factor 0)
    if max(counts) < min(counts) * version.group_size_factor:
        group_size = max(counts)
    if "padding_layers" in version.refuse_kinds and any(c % group_size for c in counts):
        # before 0.19 check_enough_kv_cache_memory sums every layer's own need, not the padded groups'
        raise KvMathError(_unread(settings.vllm_version, version, "groups with padding layers (the memory check "
                                  "summed per layer, not per padded group)"))
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


_GROUPS: dict[tuple, tuple] = {}


def _groups_of(layers: tuple[tuple[str, KVSpec], ...], s: VllmSettings):
    """``kv_cache_groups(layers, s)`` and the final (name, spec) list, kept for the layers tuple of a cached layout (the grouping reads only
    the specs, the hybrid-manager switch and the version): a sweep over lengths groups once. A refusal is
    kept too. Keyed by the tuple's identity, which the entry holds alive; at most 1,024 entries."""
    key = (id(layers), s.disable_hybrid_kv_cache_manager, s.vllm_version)
    hit = _GROUPS.get(key)
    if hit is not None and hit[0] is layers:
        result = hit[1]
    else:
        try:
            groups, warns, uniform = kv_cache_groups(list(layers), s)
            if uniform is not None:
                final = tuple(zip(groups[0].layer_names, uniform))
            else:
                final = tuple((n, g.spec) for g in groups for n in g.layer_names)
            result = (groups, warns, uniform, final)
        except _Refused as e:
            result = e
        if len(_GROUPS) >= 1024:
            _GROUPS.clear()
        _GROUPS[key] = (layers, result)
    if isinstance(result, _Refused):
        raise result
    groups, warns, uniform, final = result
    return groups, list(warns), uniform, final


# ---------------------------------------------------------------------------------------------------
# the plan


def _settings_record(settings, kw: dict) -> VllmSettings:
    """``plan``'s settings: one ``VllmSettings`` record, or its fields as keywords. Raises KvMathError."""
    if settings is None:
        unknown = sorted(set(kw) - set(VllmSettings.__dataclass_fields__))
        if unknown:
            raise KvMathError(f"unknown vLLM setting(s) {', '.join(unknown)}; valid: "
                              f"{', '.join(VllmSettings.__dataclass_fields__)}")
        return VllmSettings(**kw)
    if isinstance(settings, VllmSettings) and not kw:
        return settings
    raise KvMathError("give plan() either a VllmSettings record or its fields as keywords, not both")


def _need(groups, uniform_specs, in_flight: int, max_len: int) -> int:
    """``_max_memory_usage_bytes_from_groups`` at ``max_len`` (bytes)."""
    if uniform_specs:
        return sum(x.max_memory_usage_bytes(max_len, in_flight) for x in uniform_specs)
    gs = max(len(g.layer_names) for g in groups)
    pg = groups[0].spec.page_size_bytes
    return gs * pg * sum(-(-g.spec.max_memory_usage_bytes(max_len, in_flight) // pg) for g in groups)


def _estimate(groups, uniform_specs, in_flight: int, L: int, avail: int) -> int:
    """``_estimate_max_model_len_from_groups``: binary search over [1, max_model_len] (tokens)."""
    if _need(groups, uniform_specs, in_flight, 1) > avail:
        return 0
    lo, hi, best = 1, L, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if _need(groups, uniform_specs, in_flight, mid) <= avail:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


@dataclass
class _Pool:
    """The pool ``plan`` sizes from its groups (bytes, blocks, tokens); all zero when nothing is planned."""

    group_size: int = 0
    page: int = 0
    per_block: int = 0
    num_blocks: int = 0
    per_request: int = 0
    needed: int = 0
    concurrency: float = 0.0
    tokens: int = 0
    figures: dict = field(default_factory=dict)
    estimated: int | None = None
    mamba_refused: bool = False


def _pool_of(groups, uniform_specs, s: VllmSettings, lay, available_kv_bytes: int | None, version, log: list):
    """(the pool, vLLM's refusal or None) of grouped layers: the memory check of ``get_kv_cache_configs``, the
    block count, concurrency and the "GPU KV cache size" figure, the decode-block check of Mamba layers;
    appends the lines vLLM logs to ``log``."""
    L = lay.max_model_len
    in_flight = in_flight_tokens(s)
    refusal = None
    p = _Pool()
    if uniform_specs:
        p.group_size = len(groups[0].layer_names)
        p.page = sum(x.page_size_bytes for x in uniform_specs)
        p.per_block = p.page
    else:
        p.group_size = max(len(g.layer_names) for g in groups)
        p.page = groups[0].spec.page_size_bytes
        p.per_block = p.page * p.group_size
    p.needed = _need(groups, uniform_specs, in_flight, L)
    # 0.29+: the check and its estimate plan against the memory minus the null block BlockPool holds
    # back (get_kv_cache_configs, kv_cache_utils.py 0.29.0; kv_cache_planning.py 0.33.0 l.1533-1552);
    # 0.29+ also sizes the check from num_gpu_blocks_override * bytes_per_block when it is set.
    check = available_kv_bytes
    if check is not None and version.null_block_check:
        if s.num_gpu_blocks_override is not None:
            check = s.num_gpu_blocks_override * p.per_block
        check -= p.per_block
    if available_kv_bytes is None:
        pass  # the allocation alone: no memory check, no pool
    elif check <= 0:
        p.estimated = 0
        refusal = no_memory_message(s.vllm_version)
    elif p.needed > check:
        p.estimated = _estimate(groups, uniform_specs, in_flight, L, check)
        refusal = memory_refusal_message(s.vllm_version, L, p.needed, check, p.estimated)
    else:
        # _need() is monotone in the length and _need(L) fits: the binary search would end at L itself
        p.estimated = L
    # get_num_blocks / get_kv_cache_config_from_groups
    p.num_blocks = max((available_kv_bytes or 0) // p.per_block, 0)
    if s.num_gpu_blocks_override is not None:
        p.num_blocks = s.num_gpu_blocks_override
    # get_max_concurrency_for_kv_cache_config (l.919): spec-level bytes summed, then one ceil
    if uniform_specs:
        p.per_request = max(-(-x.max_memory_usage_bytes(L, in_flight) // x.page_size_bytes)
                            for x in uniform_specs)
    else:
        total = p.group_size * sum(g.spec.max_memory_usage_bytes(L, in_flight) for g in groups)
        p.per_request = -(-total // p.per_block)
    p.concurrency = p.num_blocks / p.per_request
    min_block = min(g.spec.block_size for g in groups)
    figures = {
        "groups": p.num_blocks // len(groups) * min_block,
        "concurrency": int(p.concurrency * L),
    }
    formula = version.token_formula
    p.tokens = figures[formula]
    if available_kv_bytes is None:
        p.num_blocks, p.concurrency, p.tokens, figures = 0, 0.0, 0, {}
    elif refusal is None:
        log.append(f"GPU KV cache size: {p.tokens:,} tokens")
        log.append(f"Maximum concurrency for {L:,} tokens per request: {p.concurrency:.2f}x")
        # The worker's initialize_kv_cache then resolves the CUDA-graph mode: with full decode CUDA graphs
        # (vLLM's default unless --enforce-eager / cudagraph_mode NONE or PIECEWISE) and Mamba layers, every
        # decode sequence needs one block (config/compilation.py 0.20.0 l.1420-1443 to 0.33.0 l.1510-1533:
        # ``kv_cache_config.has_mamba_layers and max_num_reqs > kv_cache_config.num_blocks``).
        if (lay.mamba_state_bytes is not None and not s.enforce_eager and version.mamba_blocks_check
                and s.max_num_seqs > p.num_blocks):
            refusal = mamba_blocks_message(s.max_num_seqs, p.num_blocks)
            p.mamba_refused = True
    else:  # vLLM stops at the check: nothing is allocated or logged
        p.num_blocks, p.concurrency, p.tokens, figures = 0, 0.0, 0, {}
    p.figures = figures
    return p, refusal


def plan(model, available_kv_bytes: int | None, settings: VllmSettings | None = None, **kw) -> VllmPlan:
    """Plan vLLM's KV cache for ``model`` with ``available_kv_bytes`` of KV memory per card.

    ``model`` is an Architecture, a config dict or path, or a known model id (``qwen3.6-27b``).
    ``available_kv_bytes`` is vLLM's "Available KV cache memory" in bytes (use ``gib_band`` to turn a
    logged GiB value into its byte band). Keyword arguments are ``VllmSettings`` fields
    (``max_model_len``, ``kv_cache_dtype``, ``tensor_parallel_size``, ``max_num_batched_tokens``,
    ``num_speculative_tokens``, ``enable_prefix_caching``, ``vllm_version``, ...).

    ``settings`` may be given as one ``VllmSettings`` record instead of keywords.
    ``available_kv_bytes=None`` plans the allocation alone (specs, groups, what one request of
    ``max_model_len`` holds) without the memory check or the pool: this is what ``kvmath.derive`` sums.

    Never raises for a configuration vLLM would refuse: the plan says ``boots=False`` and carries
    vLLM's message in ``refusal``. Raises KvMathError for bad input (unknown model or format, a TP
    the heads cannot be split over, non-positive counts).
    """
    arch = load_architecture(model)
    s = _settings_record(settings, kw)
    if available_kv_bytes is not None and (isinstance(available_kv_bytes, bool)
                                           or not isinstance(available_kv_bytes, int)
                                           or not -2**62 < available_kv_bytes < 2**62):
        raise KvMathError(f"available_kv_bytes must be an integer number of bytes, got {_short(available_kv_bytes)}")
    version = release(s.vllm_version)
    lay = _layout(arch, s)
    L = lay.max_model_len
    notes = list(lay.notes)
    log: list[str] = []
    refusal = lay.refusal

    groups: list[KVGroup] = []
    uniform_specs: list[KVSpec] | None = None
    final: tuple[tuple[str, KVSpec], ...] = ()
    if refusal is None:
        try:
            groups, warns, uniform_specs, final = _groups_of(lay.layers, s)
            log += [f"WARNING {w}" for w in warns]
        except _Refused as e:
            refusal = e.args[0]
            notes.extend(e.args[1:])
    pool = _Pool()
    if refusal is None and groups:
        pool, refusal = _pool_of(groups, uniform_specs, s, lay, available_kv_bytes, version, log)
    group_size, page, per_block, num_blocks = pool.group_size, pool.page, pool.per_block, pool.num_blocks
    per_request, needed, concurrency, tokens = pool.per_request, pool.needed, pool.concurrency, pool.tokens
    figures, estimated, mamba_refused = pool.figures, pool.estimated, pool.mamba_refused
    formula = version.token_formula
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
        final_layers=final,
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
        refusal_stage=None if refusal is None else "mamba_blocks" if mamba_refused else
        "memory" if needed and available_kv_bytes is not None else "config",
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
    "gib_band", "kv_cache_groups", "layer_specs", "plan", "plan_from_logged_gib",
]
