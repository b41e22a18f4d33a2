"""SGLang: its token pools, their start-up lines and its boot verdict, release by release (0.4.3-0.5.23).

SGLang sizes memory unlike vLLM: one pool of ``max_total_num_tokens`` token cells (no blocks per request),
sized from the free memory after the weights minus a share ``1 - mem_fraction_static`` of the free memory
before them; a state pool split off first for hybrid GDN / Mamba models; separate full and sliding-window
pools for the architectures a release lists. :mod:`.pools` holds the rules, :mod:`.releases` the
per-release switches with the wheel file each was read in, :mod:`.budget` the verdict and :mod:`.launch`
the launch line.

Cache mode (``kvmath --engine sglang``): without ``--kv-cache-memory-bytes`` the allocation is the pool
``--max-running-requests`` requests of ``--context-length`` tokens need (the MHA buffers' extra
``page_size`` rows and the Mamba pool's extra slot included); with it, the pool SGLang builds from that
much memory, and its start-up lines.
"""

from __future__ import annotations

import argparse

from ...errors import KvMathError
from ...formats import BF16, F16, FP8_E4M3, FP8_E5M2, KVFormat
from ...model.specs import FULL, LINEAR, SLIDING, Architecture
from ..base import Engine, LayerGroup, StateTensor, merge_empty
from . import geometry as geo
from .pools import TORCH_DTYPES, Pools, size_pools
from .releases import DEFAULT_SGLANG_VERSION, TABLE
from .settings import SglangSettings, check_fraction

SGLANG_FORMATS: dict[str, KVFormat] = {
    f.name: f for f in (
        KVFormat("auto", "sglang", BF16, BF16, "--kv-cache-dtype auto: the model dtype (or the checkpoint's FP8 KV)"),
        KVFormat("bf16", "sglang", BF16, BF16, "torch.bfloat16 pool", ("bfloat16",)),
        KVFormat("fp16", "sglang", F16, F16, "torch.float16 pool (the model dtype)", ("float16",)),
        KVFormat("fp8_e4m3", "sglang", FP8_E4M3, FP8_E4M3, "torch.float8_e4m3fn stored as uint8"),
        KVFormat("fp8_e5m2", "sglang", FP8_E5M2, FP8_E5M2, "torch.float8_e5m2 stored as uint8"),
    )}
_ELEMENT = {"bfloat16": BF16, "float16": F16, "fp8_e4m3": FP8_E4M3, "fp8_e5m2": FP8_E5M2}


class SglangEngine(Engine):
    name = "sglang"
    label = "SGLang"
    version = f"SGLang token pools (memory_pool.py, profile_max_num_token; {TABLE.covers}; default {DEFAULT_SGLANG_VERSION})"
    formats = tuple(SGLANG_FORMATS)
    setting_names = tuple(f for f in SglangSettings.__dataclass_fields__
                          if f != "kv_cache_dtype")
    rules = {"attention": "_attention", "mla": "_mla", "gdn": "_state", "mamba2": "_state", "kda": "_kda",
             "none": "_none"}
    cli_title = "SGLang flags (python -m sglang.launch_server names)"
    programs = (("python", "-m", "sglang.launch_server"), ("python3", "-m", "sglang.launch_server"),
                ("sglang", "serve"))
    context_setting = "context_length"
    seqs_setting = ""
    json_fields = {
        "engine_detail.pool": "mha | mla | swa (SWAKVPool) | hybrid_linear (HybridLinearKVPool over a MambaPool)",
        "engine_detail.kv_dtype": "the pool's element type (kvmath name; the log names the torch dtype)",
        "engine_detail.cell_bytes": "profile_max_num_token's bytes per token on one rank",
        "engine_detail.rest_bytes": "the pools' budget, bytes: available - total * (1 - mem_fraction_static) "
                                    "(SGLang computes it as a float in GiB)",
        "engine_detail.max_total_num_tokens": "the KV pool's tokens (the full pool's for hybrid SWA)",
        "engine_detail.profiled_tokens": "tokens before --max-total-tokens and the page floor",
        "engine_detail.swa_tokens": "the sliding-window pool's tokens (hybrid SWA), else 0",
        "engine_detail.k_bytes": "K buffer bytes on one rank (MLA: the latent)",
        "engine_detail.v_bytes": "V buffer bytes on one rank (MLA: 0)",
        "engine_detail.max_mamba_cache_size": "the state pool's requests (hybrid models), else 0",
        "engine_detail.conv_state_bytes": "the state pool's conv buffers, bytes per rank",
        "engine_detail.ssm_state_bytes": "the state pool's temporal (SSM) buffers, bytes per rank",
        "engine_detail.max_num_reqs": "the request pool's size (ReqToTokenPool)",
        "engine_detail.refusal": "SGLang's own start-up refusal, or null",
        "engine_detail.release": "the SGLang release record whose rules were applied",
        "engine_detail.total_gpu_memory_bytes": "T: free memory per rank before the weights, bytes (derived)",
        "engine_detail.available_after_weights_bytes": "A: free memory per rank after the weights, bytes (derived)",
        "engine_detail.mem_fraction_static": "the fraction applied (given, or the release's default for the card)",
        "engine_detail.smallest_mem_fraction_static": "the smallest --mem-fraction-static (3 decimals) at which "
                                                      "SGLang starts, everything else as given; null when none does "
                                                      "(the text answer prints it among the answers)",
        "engine_detail.smallest_mem_fraction_static_full_request": "the smallest --mem-fraction-static at which "
                                                                   "SGLang starts and its pool holds one request of "
                                                                   "the whole --context-length; null when none does",
    }

    # --- the cache protocol ------------------------------------------------------------------------
    def settings(self, arch, *, max_ctx, max_num_seqs, tp, kv_format, cache_type_k=None, cache_type_v=None, **kw):
        if cache_type_k is not None or cache_type_v is not None:
            raise KvMathError("cache_type_k / cache_type_v (-ctk / -ctv) are llama.cpp flags; SGLang takes one "
                              "--kv-cache-dtype for K and V")
        ctx = kw.pop("context_length", None)
        ctx = max_ctx if ctx is None else ctx  # --context-length 0 is refused by SglangSettings, not defaulted
        if ctx is None:
            ctx = arch.max_position_embeddings
            if not ctx:
                raise KvMathError(f"{arch.name}: config has no max_position_embeddings; give --context-length")
        reqs = kw.pop("max_running_requests", None)
        if reqs is None and max_num_seqs != 1:
            reqs = max_num_seqs
        tp_size = kw.pop("tp_size", None)
        tp = tp if tp_size is None else tp_size  # --tp-size 0 is refused by SglangSettings
        fmt = "auto" if kv_format is None else str(kv_format).lower()
        s = SglangSettings(context_length=ctx, max_running_requests=reqs, tp_size=tp, kv_cache_dtype=fmt, **kw)
        TABLE.choose(s.sglang_version)  # an unknown release is refused here
        self.check_tp(arch, s.attn_tp_size)
        return s

    def tp_problem(self, arch, tp):
        if tp < 1:
            return f"--tp-size must be positive, got {tp}"
        for layer in arch.layers:
            if layer.kind == "attention" and layer.owns_cache:
                n = layer.num_kv_heads
                if tp > n and tp % n:
                    return f"SGLang replicates KV heads only when TP is a multiple of them ({n} KV heads, TP {tp})"
                if tp <= n and n % tp:
                    return f"{n} KV heads do not split over TP {tp}"
        if arch.num_attention_heads % tp:
            return f"{arch.num_attention_heads} attention heads do not split over TP {tp}"
        return None

    def release(self, s: SglangSettings):
        return TABLE.choose(s.sglang_version)

    def geometry(self, arch: Architecture, s: SglangSettings, compute_capability: int | None = None):
        rel = self.release(s).release
        return geo.build(arch, rel, attn_tp=s.attn_tp_size, kv_flag=s.kv_cache_dtype, backend=s.attention_backend,
                         disable_hybrid_swa_memory=s.disable_hybrid_swa_memory,
                         compute_capability=compute_capability, ssm_dtype_flag=s.mamba_ssm_dtype, engine=self)

    def pools_for(self, arch: Architecture, s: SglangSettings, rest_gib: float, g=None, **kw) -> Pools:
        """The pools SGLang builds from ``rest_gib`` (float GiB, SGLang's ``rest_memory``)."""
        chosen = self.release(s)
        g = g or self.geometry(arch, s)
        page = _page_size(s, g)
        return size_pools(g, chosen.release, rest_gib, page_size=page, context_len=s.context_length,
                          max_total_tokens=s.max_total_tokens, max_running_requests=s.max_running_requests,
                          max_mamba_cache_size=s.max_mamba_cache_size,
                          mamba_full_memory_ratio=s.mamba_full_memory_ratio,
                          disable_radix_cache=s.disable_radix_cache, swa_full_tokens_ratio=s.swa_full_tokens_ratio,
                          mem_fraction_static=s.mem_fraction_static, **kw)

    def allocate(self, arch: Architecture, s: SglangSettings) -> Pools:
        chosen = self.release(s)
        rel = chosen.release
        g = self.geometry(arch, s)
        if s.kv_cache_memory_bytes is not None:
            p = self.pools_for(arch, s, s.kv_cache_memory_bytes / (1 << 30), g)
        else:  # the pool that holds max_running_requests requests of context_length tokens
            from dataclasses import replace as _replace

            page = _page_size(s, g)
            reqs = s.max_running_requests or 1
            want = -(-(reqs * s.context_length) // page) * page
            mamba = reqs if g.state is not None else None
            state_gib = (mamba * g.state.per_req) / (1 << 30) if mamba else 0.0
            rest = (want * g.cell) / (1 << 30) + state_gib
            s2 = _replace(s, max_total_tokens=want, max_mamba_cache_size=mamba, max_running_requests=reqs)
            p = size_pools(g, rel, rest, page_size=page, context_len=s.context_length, max_total_tokens=want,
                           max_running_requests=reqs, max_mamba_cache_size=mamba,
                           swa_full_tokens_ratio=s2.swa_full_tokens_ratio)
        notes = list(g.notes) + list(p.notes)
        if chosen.note and chosen.note not in notes:
            notes.append(chosen.note)
        from dataclasses import replace

        return replace(p, notes=tuple(notes))

    def cache_format(self, p: Pools) -> KVFormat:
        el = _ELEMENT[p.geometry.kv_dtype]
        return KVFormat(p.geometry.kv_dtype, "sglang", el, el, TORCH_DTYPES[p.geometry.kv_dtype][0])

    # one rule per layer kind: which part of SGLang's pools a layer lands in
    def _attention(self, layer):
        return geo.attention_kind(layer)

    def _mla(self, layer):
        return "mla"

    def _state(self, layer):
        return "state"

    def _kda(self, layer):
        raise KvMathError("SGLang's Kimi Delta Attention state pool is not modelled in kvmath")

    def _none(self, layer):
        return "none"

    def layer_groups(self, arch: Architecture, p: Pools) -> tuple[LayerGroup, ...]:
        g = p.geometry
        by = {x.index: x for x in arch.layers}
        out: list[LayerGroup] = []
        if p.refusal:
            raise KvMathError(f"SGLang refuses to start: {p.refusal}")
        rows_full = p.full_k_bytes // max(1, (g.mla_dim if g.pool == "mla" else g.kv_heads * g.head_dim)
                                          * g.elt * len(g.full_layers))
        desc = (f"SGLang {'MLA latent' if g.pool == 'mla' else 'MHA'} pool: {p.max_total_num_tokens:,} tokens "
                f"(+{rows_full - p.max_total_num_tokens} padded row(s)) shared by all requests")
        full_type_layers: dict[str, list[int]] = {}
        for i in g.full_layers:
            full_type_layers.setdefault(by[i].layer_type, []).append(i)
        n_full = len(g.full_layers)
        for lt, idx in full_type_layers.items():
            d = desc + ("; the window is not applied (full-length pool)" if lt == SLIDING else "")
            out.append(LayerGroup(FULL, tuple(idx), f"{by[idx[0]].describe()}; {d}",
                                  bytes=(p.full_k_bytes + p.full_v_bytes) * len(idx) // n_full,
                                  kind="mla" if g.pool == "mla" else "attention",
                                  kv_heads_per_rank=1 if g.pool == "mla" else g.kv_heads,
                                  bytes_per_token=g.full_token_bytes, cells=rows_full, streams=1,
                                  kv_format=g.kv_dtype))
        if g.swa_layers:
            rows = p.swa_k_bytes // max(1, g.swa_kv_heads * g.swa_head_dim * g.elt * len(g.swa_layers))
            out.append(LayerGroup(SLIDING, g.swa_layers, f"{by[g.swa_layers[0]].describe()}; SGLang SWA pool: "
                                  f"{p.swa_tokens:,} tokens", bytes=p.swa_k_bytes + p.swa_v_bytes,
                                  kv_heads_per_rank=g.swa_kv_heads, bytes_per_token=g.swa_token_bytes, cells=rows,
                                  streams=1, kv_format=g.kv_dtype))
        if g.state is not None:
            st = g.state
            per_layer = (p.conv_bytes + p.ssm_bytes) // len(st.layers)
            tensors = (StateTensor("conv_state", st.conv_shapes[0], st.conv_dtype),
                       StateTensor("ssm_state", st.temporal_shape, st.ssm_dtype))
            out.append(LayerGroup(LINEAR, st.layers, f"{by[st.layers[0]].describe()}; SGLang MambaPool: "
                                  f"{p.mamba_size} request slots (+1 padded slot)", bytes=p.conv_bytes + p.ssm_bytes,
                                  kind=st.kind, state=tensors, state_bytes_per_seq=per_layer // (p.mamba_size + 1),
                                  streams=p.mamba_size + 1))
        placed = set(g.full_layers) | set(g.swa_layers) | (set(g.state.layers) if g.state else set())
        for x in arch.layers:
            if x.index not in placed:
                out.append(LayerGroup(x.layer_type, (x.index,), x.describe(), 0, kind="none", owns_cache=False))
        return merge_empty(out)

    # --- command line (kvmath --engine sglang) -----------------------------------------------------------
    def add_cli_flags(self, g) -> list[str]:
        S = argparse.SUPPRESS
        g.add_argument("--context-length", type=int, default=S, help="context_len (default: the config's)")
        g.add_argument("--max-running-requests", type=int, default=S, help="requests at once (ReqToTokenPool)")
        g.add_argument("--tp-size", type=int, default=S, help="tensor parallel size (--tp also works)")
        g.add_argument("--page-size", type=int, default=S, help="tokens per page (default 1)")
        g.add_argument("--mem-fraction-static", type=float, default=S,
                       help="checked here; the budget that uses it is kvmath-fit's job")
        g.add_argument("--max-total-tokens", type=int, default=S, help="cap on the pool's tokens")
        g.add_argument("--dp-size", type=int, default=S, help="data parallel size (with --enable-dp-attention)")
        g.add_argument("--enable-dp-attention", action="store_true", default=S, help="attention TP = tp / dp")
        g.add_argument("--max-mamba-cache-size", type=int, default=S, help="state pool requests (hybrid models)")
        g.add_argument("--mamba-full-memory-ratio", type=float, default=S, help="state : KV memory (default 0.9)")
        g.add_argument("--mamba-ssm-dtype", default=S, help="state dtype (float32, bfloat16)")
        g.add_argument("--disable-radix-cache", action="store_true", default=S)
        g.add_argument("--swa-full-tokens-ratio", type=float, default=S, help="SWA : full pool tokens (0.8)")
        g.add_argument("--disable-hybrid-swa-memory", action="store_true", default=S)
        g.add_argument("--attention-backend", default=S, help="backends that force a page size: flashmla (64), "
                                                             "cutlass_mla (128), fa4 (128)")
        g.add_argument("--sglang-version", default=S, help=f"whose rules apply ({TABLE.covers})")
        return ["context_length", "max_running_requests", "tp_size", "page_size", "mem_fraction_static",
                "max_total_tokens", "dp_size", "enable_dp_attention", "max_mamba_cache_size",
                "mamba_full_memory_ratio", "mamba_ssm_dtype", "disable_radix_cache", "swa_full_tokens_ratio",
                "disable_hybrid_swa_memory", "attention_backend", "sglang_version", "kv_cache_memory_bytes"]

    def settings_from_cli(self, args: dict) -> dict:
        out = dict(args)
        if "mem_fraction_static" in out:
            check_fraction(out["mem_fraction_static"])
        return out

    def cache_report(self, d) -> tuple[list[str], dict] | None:
        """The start-up lines of the pools ``d`` sums (the cache CLI's engine block; None without pool memory)."""
        p: Pools = d.allocation
        if d.settings.kv_cache_memory_bytes is None:
            return None
        lines = ["", f"SGLang {self.release(d.settings).release.name} pools for "
                     f"{d.settings.kv_cache_memory_bytes / (1 << 30):.2f} GiB per rank:"]
        lines += [f"  log: {x}" for x in p.log_lines]
        lines += [f"  max_running_requests: {p.max_num_reqs}"]
        return lines, {"sglang_pools": {**p.to_dict(), "log_lines": list(p.log_lines)}}

    # --- the budget protocol ------------------------------------------------------------------------------
    def launch_flags(self):
        """SGLang flags by what kvmath does with them (kvmath.engines.sglang.launch tables)."""
        from .launch import IGNORED_SWITCH, IGNORED_VALUE, MODELLED, REFUSED

        return {"priced": list(MODELLED), "ignored (they do not change memory)": [*IGNORED_VALUE, *IGNORED_SWITCH],
                "refused (not modelled)": list(REFUSED)}

    def parse_launch(self, argv, env=None):
        from .launch import parse

        return parse(argv, env or {})

    def verdict(self, launch):
        from .budget import verdict

        return verdict(self, launch)

    def range_of(self, launch, setting):
        from .budget import context_range

        if setting == "context_length":
            return context_range(self, launch)
        raise KvMathError(f"SGLang names no search range for {setting}")

    def render(self, verdict, answers):
        from ..base import render_verdict
        from .budget import smallest_fraction

        answers = dict(answers)
        if verdict.detail is not None and "smallest_mem_fraction_static" not in answers:
            answers["smallest_mem_fraction_static"] = smallest_fraction(self, verdict.detail.launch)
            answers["smallest_mem_fraction_static_for_a_full_length_request"] = smallest_fraction(
                self, verdict.detail.launch, full_request=True)
        return render_verdict(verdict, answers)


def _page_size(s: SglangSettings, g) -> int:
    """``--page-size``, or the page a backend forces (server_args.py: flashmla 64, cutlass_mla / fa4 128)."""
    forced = {"flashmla": 64, "cutlass_mla": 128, "fa4": 128}.get(s.attention_backend or "")
    return forced or s.page_size


ENGINE = SglangEngine()
