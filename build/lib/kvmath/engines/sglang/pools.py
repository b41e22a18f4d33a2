"""SGLang's token pools on one rank: the geometry it builds for a model, the tokens a budget buys, the
bytes each buffer holds and the lines it logs.

Rules (each switch is a field of :class:`~kvmath.engines.sglang.releases.SglangRelease`, cited there):

- **cell** (bytes one token takes in the pool, ``profile_max_num_token`` / ``get_cell_size_per_token``):
  MHA ``kv_heads_rank * head_dim * L * 2 * elt`` (``kv_heads * (head_dim + v_head_dim)`` from 0.5.9),
  ``kv_heads_rank = max(1, num_key_value_heads // attn_tp_size)`` (``ModelConfig.get_num_kv_heads``); MLA
  ``(kv_lora_rank + qk_rope_head_dim) * L * elt`` on every rank; hybrid linear-attention models count only
  their full-attention layers; hybrid SWA (0.5.9) ``F * n_full + W * n_swa``.
- **tokens**: ``max_total_num_tokens = int(rest_GiB * 2**30) // cell`` (``rest_GiB`` a float, as SGLang
  keeps it), then ``min(., --max-total-tokens)``, then floored to a multiple of ``page_size`` (0.4.4 on).
- **state pool** (``handle_max_mamba_cache``, 0.5.4 on): ``max_mamba_cache_size`` from
  ``--max-mamba-cache-size``, or ``--max-running-requests`` with the radix cache off, or
  ``int(rest * r / (1 + r) * 2**30 // per_req)`` with ``r = --mamba-full-memory-ratio`` (0.9); the pool's
  bytes come off ``rest`` before the KV tokens are counted. Per request and linear layer
  (``Mamba2StateShape.create``, configs/mamba_utils.py): conv ``(conv_dim / tp, K - 1)`` in bfloat16,
  temporal ``(heads / tp, head_dim, state_size)`` in the SSM dtype, ``n_groups`` padded to a multiple of TP.
- **buffers** (memory_pool.py ``_create_buffers``): K ``[#tokens + pad, kv_heads_rank, head_dim]`` and V
  ``[#tokens + pad, kv_heads_rank, v_head_dim]`` per layer, ``pad`` = 1 (0.4.3) or ``page_size``; MLA one
  ``[#tokens + pad, 1, kv_lora_rank + qk_rope_head_dim]`` per layer; Mamba ``[layers, size + 1, ...]``.
- **hybrid SWA**: 0.4.10-0.5.6 split ``N * num_hidden_layers`` tokens as ``full = int(total / (rho * n_swa +
  n_full))``, ``swa = int(rho * full)``; 0.5.9 on split the memory, ``full = int(N * cell / (F n_full + rho W
  n_swa))``, ``swa = int(rho * full)``, both floored to the page (``set_num_tokens_hybrid_swa``).

Everything here is per rank and in exact integer bytes except ``rest_gib``, which is SGLang's own float.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import KvMathError
from ...units import GiB
from .releases import SglangRelease

TORCH_DTYPES = {"bfloat16": ("torch.bfloat16", 2), "float16": ("torch.float16", 2), "float32": ("torch.float32", 4),
                "fp8_e4m3": ("torch.float8_e4m3fn", 1), "fp8_e5m2": ("torch.float8_e5m2", 1)}
"""kvmath's name -> (the torch dtype SGLang logs, bytes per element). fp8 pools store uint8 (1 byte)."""

MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO = 3
"""model_runner_kv_cache_mixin.py (0.5.9): ``max_num_reqs <= max_mamba_cache_size // 3`` with the radix cache on."""


@dataclass(frozen=True)
class StateGeometry:
    """The per-request state of the linear-attention layers on one rank (``Mamba2CacheParams``)."""

    layers: tuple[int, ...]
    conv_shapes: tuple[tuple[int, ...], ...]
    temporal_shape: tuple[int, ...]
    conv_dtype: str
    ssm_dtype: str
    kind: str = "gdn"

    @property
    def conv_bytes_per_req(self) -> int:
        n = sum(_prod(s) for s in self.conv_shapes)
        return n * TORCH_DTYPES[self.conv_dtype][1] * len(self.layers)

    @property
    def ssm_bytes_per_req(self) -> int:
        return _prod(self.temporal_shape) * TORCH_DTYPES[self.ssm_dtype][1] * len(self.layers)

    @property
    def per_req(self) -> int:
        """``mamba_cache_per_req``: conv + temporal bytes of one request over all linear layers."""
        return self.conv_bytes_per_req + self.ssm_bytes_per_req


@dataclass(frozen=True)
class Geometry:
    """What SGLang builds for one model on one rank, before any memory figure.

    ``pool``: ``"mha"``, ``"mla"``, ``"swa"`` (SWAKVPool) or ``"hybrid_linear"`` (HybridLinearKVPool over a
    MambaPool); ``full_layers`` / ``swa_layers`` the layer indices of each KV pool; heads are per rank;
    ``elt`` bytes per KV element; ``cell`` the budget's bytes per token (``profile_max_num_token``)."""

    pool: str
    kv_dtype: str
    elt: int
    full_layers: tuple[int, ...]
    kv_heads: int = 0
    head_dim: int = 0
    v_head_dim: int = 0
    swa_layers: tuple[int, ...] = ()
    swa_kv_heads: int = 0
    swa_head_dim: int = 0
    swa_v_head_dim: int = 0
    mla_dim: int = 0
    state: StateGeometry | None = None
    cell: int = 0
    notes: tuple[str, ...] = ()

    @property
    def full_token_bytes(self) -> int:
        """Bytes one token takes in one full layer of the pool (K + V, or the MLA latent row)."""
        if self.pool == "mla":
            return self.mla_dim * self.elt
        return self.kv_heads * (self.head_dim + self.v_head_dim) * self.elt

    @property
    def swa_token_bytes(self) -> int:
        return self.swa_kv_heads * (self.swa_head_dim + self.swa_v_head_dim) * self.elt


@dataclass(frozen=True)
class Pools:
    """The pools SGLang allocates on one rank for a budget, and what it logs about them.

    ``max_total_num_tokens`` is SGLang's figure (the full pool's tokens for hybrid SWA);
    ``swa_tokens`` the SWA pool's; ``k_bytes`` / ``v_bytes`` per pool as ``get_kv_size_bytes`` sums them
    (MLA: ``k_bytes`` is the latent, ``v_bytes`` 0); ``mamba_size`` the state pool's requests;
    ``refusal`` SGLang's own message when it stops (then the sizes are what it computed before stopping)."""

    geometry: Geometry
    rest_gib: float
    max_total_num_tokens: int
    profiled_tokens: int
    swa_tokens: int = 0
    full_k_bytes: int = 0
    full_v_bytes: int = 0
    swa_k_bytes: int = 0
    swa_v_bytes: int = 0
    mamba_size: int = 0
    conv_bytes: int = 0
    ssm_bytes: int = 0
    max_num_reqs: int = 0
    refusal: str | None = None
    log_lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def kv_bytes(self) -> int:
        return self.full_k_bytes + self.full_v_bytes + self.swa_k_bytes + self.swa_v_bytes

    @property
    def state_bytes(self) -> int:
        return self.conv_bytes + self.ssm_bytes

    @property
    def total_bytes(self) -> int:
        """Every byte of the KV and state pools (the request-to-token table is not here)."""
        return self.kv_bytes + self.state_bytes

    def to_dict(self) -> dict:
        return {"pool": self.geometry.pool, "kv_dtype": self.geometry.kv_dtype, "cell_bytes": self.geometry.cell,
                "rest_bytes": int(self.rest_gib * (1 << 30)), "max_total_num_tokens": self.max_total_num_tokens,
                "profiled_tokens": self.profiled_tokens, "swa_tokens": self.swa_tokens,
                "k_bytes": self.full_k_bytes + self.swa_k_bytes, "v_bytes": self.full_v_bytes + self.swa_v_bytes,
                "max_mamba_cache_size": self.mamba_size, "conv_state_bytes": self.conv_bytes,
                "ssm_state_bytes": self.ssm_bytes, "max_num_reqs": self.max_num_reqs, "refusal": self.refusal}


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


def _gb(n: int) -> str:
    """SGLang's ``{n / GB:.2f}`` with ``GB = 1024 ** 3`` (memory_pool.py): GiB printed as "GB"."""
    return f"{n / GiB:.2f}"


def pad_rows(rel: SglangRelease, page_size: int) -> int:
    """Rows a KV buffer holds beyond ``#tokens`` (memory_pool.py ``_create_buffers``)."""
    return 1 if rel.pad_rows == "one" else page_size


def cell_size(g: Geometry, rel: SglangRelease) -> int:
    """``profile_max_num_token``'s bytes per token for the geometry (see the module docstring)."""
    if g.pool == "mla":
        return g.mla_dim * len(g.full_layers) * g.elt
    if g.pool == "swa" and rel.swa_pool == "memory":
        return (g.full_token_bytes * len(g.full_layers) + g.swa_token_bytes * len(g.swa_layers))
    layers = len(g.full_layers) + (len(g.swa_layers) if g.pool == "swa" else 0)
    if rel.v_head_dim_cell:
        return g.kv_heads * (g.head_dim + g.v_head_dim) * layers * g.elt
    return g.kv_heads * g.head_dim * layers * 2 * g.elt


def size_pools(g: Geometry, rel: SglangRelease, rest_gib: float, *, page_size: int, context_len: int,
               max_total_tokens: int | None = None, max_running_requests: int | None = None,
               max_mamba_cache_size: int | None = None, mamba_full_memory_ratio: float = 0.9,
               disable_radix_cache: bool = False, swa_full_tokens_ratio: float = 0.8,
               mem_fraction_static: float | None = None, minimum_fraction: float | None = None) -> Pools:
    """SGLang's ``init_memory_pool`` on one rank for ``rest_gib`` (``available - total * (1 - fraction)``, the
    float GiB SGLang computes): the state pool, the tokens, the request count, the buffers and the lines.

    ``minimum_fraction`` (0.5.23) is ``1 - available / total``, printed in its refusal. Raises nothing for a
    budget that is too small: the result carries SGLang's own refusal text instead."""
    notes: list[str] = []
    lines: list[str] = []
    rest = rest_gib
    cell = g.cell
    if rel.refusal == "minimum" and rest <= 0:
        return _refused(g, rest_gib, rel, mem_fraction_static, minimum_fraction)
    mamba_size = 0
    if g.state is not None:
        per_req = g.state.per_req
        if rel.mamba_size_rule == "ratio_first" and disable_radix_cache:
            mamba_size = max_mamba_cache_size or max_running_requests or 512
        elif rel.mamba_size_rule == "explicit_first" and max_mamba_cache_size is not None:
            mamba_size = max_mamba_cache_size
        elif rel.mamba_size_rule == "explicit_first" and disable_radix_cache and max_running_requests is not None:
            mamba_size = max_running_requests
        else:
            raw = rest * mamba_full_memory_ratio / (1 + mamba_full_memory_ratio)
            mamba_size = int((raw * (1 << 30)) // per_req)
        rest = rest - mamba_size * per_req / (1 << 30)
    tokens = int(rest * (1 << 30)) // cell
    profiled = tokens
    if max_running_requests is None:
        reqs = min(max(int(tokens / context_len * 512), 2048), 4096)
    else:
        reqs = max_running_requests
    if g.state is not None and mamba_size >= 0:
        ratio = 1 if disable_radix_cache else MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
        reqs = min(reqs, mamba_size // ratio)
    if max_total_tokens is not None:
        if max_total_tokens > tokens:
            notes.append(f"max_total_tokens={max_total_tokens} is larger than the profiled value {tokens}. "
                         "Use the profiled value instead.")
        tokens = min(tokens, max_total_tokens)
    if rel.page_floor:
        tokens = tokens // page_size * page_size
    if rel.reqs_cap_half:
        reqs = min(reqs, max(tokens // 2, 0))
    swa_tokens = 0
    if g.pool == "swa":
        full_n, swa_n = len(g.full_layers), len(g.swa_layers)
        if rel.swa_pool == "token":
            total = tokens * (full_n + swa_n)
            full = int(total / (swa_full_tokens_ratio * swa_n + full_n))
            swa_tokens = int(full * swa_full_tokens_ratio)
        else:
            total_memory = tokens * (g.full_token_bytes * full_n + g.swa_token_bytes * swa_n)
            full = int(total_memory / (g.full_token_bytes * full_n + swa_full_tokens_ratio * g.swa_token_bytes * swa_n))
            swa_tokens = int(full * swa_full_tokens_ratio) // page_size * page_size
            full = full // page_size * page_size
        tokens = full
        lines.append(f"Use {'Sliding' if rel.swa_pool == 'token' else 'sliding'} window memory pool. "
                     f"full_layer_tokens={full}, swa_layer_tokens={swa_tokens}")
    if tokens <= 0:
        msg = "Not enough memory. Please try to increase --mem-fraction-static."
        if rel.refusal == "current":
            msg += f" Current value: self.server_args.mem_fraction_static={mem_fraction_static!r}"
        elif rel.refusal == "minimum" and mem_fraction_static is not None:
            msg += f" Current value: mem_fraction_static={mem_fraction_static}"
        return Pools(g, rest_gib, tokens, profiled, mamba_size=mamba_size, refusal=msg, notes=tuple(notes))
    pad = pad_rows(rel, page_size)
    conv_b = ssm_b = 0
    if g.state is not None:
        st = g.state
        rows = mamba_size + 1
        conv_b = sum(_prod(s) for s in st.conv_shapes) * len(st.layers) * rows * TORCH_DTYPES[st.conv_dtype][1]
        ssm_b = _prod(st.temporal_shape) * len(st.layers) * rows * TORCH_DTYPES[st.ssm_dtype][1]
        lines.append(f"Mamba Cache is allocated. max_mamba_cache_size: {mamba_size}, "
                     f"conv_state size: {_gb(conv_b)}GB, ssm_state size: {_gb(ssm_b)}GB ")
    sk = sv = 0
    if g.pool == "swa":
        srows = swa_tokens + pad
        sk = srows * g.swa_kv_heads * g.swa_head_dim * g.elt * len(g.swa_layers)
        sv = srows * g.swa_kv_heads * g.swa_v_head_dim * g.elt * len(g.swa_layers)
        lines.append(_kv_line(rel, g, swa_tokens, sk, sv))
    rows = tokens + pad
    if g.pool == "mla":
        fk, fv = rows * g.mla_dim * g.elt * len(g.full_layers), 0
    else:
        fk = rows * g.kv_heads * g.head_dim * g.elt * len(g.full_layers)
        fv = rows * g.kv_heads * g.v_head_dim * g.elt * len(g.full_layers)
    if g.pool != "mla" or rel.log_mla:
        lines.append(_kv_line(rel, g, tokens, fk, fv))
    if g.pool == "swa":
        usage = sk / GiB + sv / GiB + fk / GiB + fv / GiB
        shown = f"{usage:.2f}" if rel.swa_pool == "memory" else f"{usage}"
        lines.append(f"SWAKVPool mem usage: {shown} GB, swa size: {swa_tokens}, full size: {tokens}")
    if rel.req_pool_plus_one:
        reqs += 1
    return Pools(g, rest_gib, tokens, profiled, swa_tokens, fk, fv, sk, sv, mamba_size, conv_b, ssm_b, reqs,
                 None, tuple(lines), tuple(notes))


def _kv_line(rel: SglangRelease, g: Geometry, tokens: int, k: int, v: int) -> str:
    """The pool's "KV Cache is allocated" line, as the release prints it (memory_pool.py)."""
    if not rel.log_tokens:
        return f"KV Cache is allocated. K size: {_gb(k)} GB, V size: {_gb(v)} GB."
    head = "KV Cache is allocated. "
    if rel.log_dtype:
        head += f"dtype: {TORCH_DTYPES[g.kv_dtype][0]}, "
    if g.pool == "mla":
        return head + f"#tokens: {tokens}, KV size: {_gb(k)} GB"
    return head + f"#tokens: {tokens}, K size: {_gb(k)} GB, V size: {_gb(v)} GB"


def _refused(g, rest_gib, rel, fraction, minimum) -> Pools:
    """0.5.23's refusal before any pool is sized (kv_cache_configurator.py l.3043-3058)."""
    import math

    if fraction is None or minimum is None:
        msg = "Not enough memory. Please try to increase --mem-fraction-static."
    else:
        suggested = math.ceil(minimum * 1000) / 1000
        msg = (f"Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={fraction}. "
               f"Raise --mem-fraction-static above {suggested:.3f} (minimum viable = 1 - available/pre = "
               f"{minimum:.4f}). If using speculative decoding, draft weights are now counted.")
    return Pools(g, rest_gib, 0, 0, refusal=msg)


def check_geometry(g: Geometry) -> None:
    """Raise KvMathError for a geometry SGLang could not build (no layers in a pool)."""
    if not g.full_layers and not g.swa_layers:
        raise KvMathError("SGLang builds no KV pool for a model without attention layers")
