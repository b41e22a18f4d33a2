"""SGLang's boot verdict on one card per rank: the free memory before and after the weights, the pools,
SGLang's own refusals.

The budget, as ``profile_max_num_token`` computes it per rank (GiB floats, as SGLang keeps them)::

    T    = free memory after init_torch_distributed  (capacity - CUDA context - NCCL; derived)
    A    = T - weights on the rank                   (kvmath.model.checkpoint's tensors, split by TP; derived)
    rest = A - T * (1 - mem_fraction_static)         (- 100 MiB multimodal reservation in 0.5.23)

then the pools of :func:`kvmath.engines.sglang.pools.size_pools`. SGLang refuses when the pool gets no
token ("Not enough memory. Please try to increase --mem-fraction-static." and its release variants). The
CUDA graphs, activations and the request-to-token table come out of the ``T * (1 - fraction)`` slack, which
SGLang does not check at start-up: kvmath reports ``oom`` only when the weights or the request-to-token
table alone exceed what is left, and says what SGLang's own default fraction would have reserved.

The CUDA context + NCCL figure (``CUDA_CONTEXT_GIB``, ``NCCL_GIB``) is an assumption checked against the
public logs' "Load weight begin. avail mem=" figures in tests/test_sglang_logs.py, not an SGLang rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from ...errors import KvMathError, choices
from ...units import GiB, MiB
from ..base import Device, Term, Verdict
from . import geometry as geo
from .settings import SglangSettings, default_mem_fraction, graph_defaults, graph_reserve, reserved_mib

CUDA_CONTEXT_GIB = 0.50
"""Memory a rank loses before SGLang takes ``T``: the CUDA context and torch's start-up allocations, GiB (an
assumption; the public logs give 79.11 - 78.59 = 0.52 on an H100 at TP 1, sglang PR #4760, and 22.03 - 21.63 -
0.13 = 0.27 on an L4, data/measurements/sglang-public-boots.csv; tests/test_sglang_logs.py checks T)."""
NCCL_GIB = 0.13
"""Extra memory at TP > 1 before ``T``: NCCL's communicators, GiB ("Init torch distributed ends. mem usage=0.13
GB" at TP 4 in the S03 log)."""

CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                       "max_position_embeddings")
"""srt/configs/model_config.py / hf_transformers_utils.py ``get_context_length``: the first key present."""


def derived_context_len(arch) -> int:
    """SGLang's ``get_context_length(hf_text_config)``: the first of ``CONTEXT_LENGTH_KEYS`` times the rope
    scaling factor (1 for ``llama3`` rope and when ``original_max_position_embeddings`` is given)."""
    raw = geo.hf_config(arch)
    tc = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    rs = tc.get("rope_scaling") or {}
    factor = 1
    if isinstance(rs, dict) and rs:
        factor = rs.get("factor", 1) or 1
        if "original_max_position_embeddings" in rs or rs.get("rope_type") == "llama3":
            factor = 1
    for k in CONTEXT_LENGTH_KEYS:
        if tc.get(k) is not None:
            return int(factor * tc[k])
    if arch.max_position_embeddings:
        return int(arch.max_position_embeddings)
    raise KvMathError(f"{arch.name}: the config has none of {', '.join(CONTEXT_LENGTH_KEYS)}; give --context-length")


def card_record(name: str) -> dict:
    """A card by the names people type (``kvmath.cards.card``: id, alias, nvidia-smi name); KvMathError naming
    the known ones."""
    from ... import cards

    return cards.card(name)


@lru_cache(maxsize=128)
def _weights(arch, tp: int) -> tuple[int, str]:
    return weights_per_rank(arch, tp)


def weights_per_rank(arch, tp: int) -> tuple[int, str]:
    """Bytes of the weights one rank holds, and how they were got: the checkpoint's tensors (the
    safetensors headers of a model folder, else estimated from config.json by kvmath.model.checkpoint),
    2-D and larger tensors split over TP (SGLang's column / row / vocab-parallel layers), 1-D ones (norms,
    biases) replicated. Raises KvMathError when the checkpoint cannot be priced."""
    from ...model.checkpoint import estimate_checkpoint, read_checkpoint

    folder = (arch.extras or {}).get("folder")
    ck = read_checkpoint(folder) if folder else estimate_checkpoint(geo.hf_config(arch))
    total = 0
    for t in ck.tensors:
        total += t.nbytes if len(t.shape) < 2 else -(-t.nbytes // tp)
    how = ("estimated from config.json" if ck.estimated else "safetensors headers") + f" ({ck.total_bytes:,} B in all)"
    how += "".join(f"; {n}" for n in ck.notes)
    return total, how


@dataclass(frozen=True)
class SglangBoot:
    """The engine's own record of a verdict (``Verdict.detail``)."""

    launch: object
    settings: SglangSettings
    release: str
    total_gib: float
    available_gib: float
    mem_fraction_static: float
    pools: object
    engine: object = None

    def to_dict(self) -> dict:
        out = {**self.pools.to_dict(), "release": self.release,
               "total_gpu_memory_bytes": int(round(self.total_gib * (1 << 30))),
               "available_after_weights_bytes": int(round(self.available_gib * (1 << 30))),
               "mem_fraction_static": self.mem_fraction_static}
        if self.engine is not None:
            out["smallest_mem_fraction_static"] = smallest_fraction(self.engine, self.launch)
            out["smallest_mem_fraction_static_full_request"] = smallest_fraction(self.engine, self.launch,
                                                                                 full_request=True)
        return out


def _device(launch) -> tuple[int, int | None, str]:
    """(capacity bytes, compute capability or None, name) of the launch's card or ``--device-memory``."""
    if launch.card is not None and launch.device_bytes is not None:  # as the vLLM front door: no silent winner
        raise KvMathError("pass --card or --device-memory, not both")
    if launch.card is not None:
        c = card_record(launch.card)
        if c.get("runtime", "cuda") != "cuda":
            raise KvMathError(f"{c['name']}: kvmath prices SGLang on CUDA cards only (this card runs "
                              f"{c.get('runtime')}; SGLang's ROCm / NPU rules were not read)")
        return int(round(c["total_gib"] * GiB)), c.get("compute_capability"), c["name"]
    if launch.device_bytes is not None:
        return int(launch.device_bytes), None, "device"
    raise KvMathError("name the card (--card h100; kvmath.facts.cards()) or its memory (--device-memory 80GiB): "
                      "SGLang's pool is sized from the GPU's free memory")


def budget(engine, launch):
    """The verdict's pieces for ``launch``: (settings, pools, terms, numbers). Raises KvMathError."""
    from ...model.load import load_architecture

    arch = load_architecture(launch.model)
    kw = dict(launch.settings)
    allow_longer = kw.pop("allow_longer_context", False)
    ctx = kw.pop("context_length", None)
    derived = derived_context_len(arch)
    s = engine.settings(arch, max_ctx=ctx or derived, max_num_seqs=1, tp=kw.pop("tp_size", 1),
                        kv_format=kw.pop("kv_cache_dtype", None), **kw)
    chosen = engine.release(s)
    rel = chosen.release
    if s.attention_backend == "aiter":
        # ROCm's backend; 0.5.23 also scales even an explicit --mem-fraction-static by 0.85 with it when
        # context_len > 8192 (arg_groups/attention_hook.py l.244-269)
        raise KvMathError("--attention-backend aiter is SGLang's ROCm backend, and kvmath prices SGLang on CUDA "
                          "cards only (its ROCm rules, such as 0.5.23's x 0.85 of --mem-fraction-static, are not "
                          "modelled)")
    cap, cc, dev_name = _device(launch)
    g = engine.geometry(arch, s, compute_capability=cc)
    gpu_mib = cap / MiB
    chunk, bs = graph_defaults(rel, gpu_mib, s.tp_size)
    chunk = s.chunked_prefill_size or chunk
    bs = s.cuda_graph_max_bs or bs
    notes = list(launch.notes) + list(g.notes)
    if chosen.note and chosen.note not in notes:  # a parsed launch's notes already hold it
        notes.append(chosen.note)
    vision = geo.hf_config(arch).get("vision_config") if rel.mfs_rule == "reserve" else None
    gr, gr_refusal = None, None
    if rel.mfs_rule == "reserve_graphs":  # 0.5.23: the reserve reads the model class and the --model-path string
        try:
            gr = graph_reserve(rel, s, gpu_mib, geo.hf_config(arch), launch.model or arch.name)
        except KvMathError as e:
            if s.mem_fraction_static is None:
                raise
            gr_refusal = str(e)
        if gr is not None:
            chunk, bs = gr.chunk, gr.decode_max_bs
    if s.mem_fraction_static is None:
        f = gr.fraction if gr is not None else default_mem_fraction(rel, s, gpu_mib, chunk, bs,
                                                                    vision if isinstance(vision, dict) else None)
        notes.append(f"--mem-fraction-static not given: SGLang {rel.name}'s default for this GPU is {f} (GPU memory "
                     f"read as {gpu_mib:.0f} MiB; nvidia-smi's figure, which SGLang reads, is ~0.5 GiB higher)")
        if gr is not None:
            notes.append(f"SGLang {rel.name}'s default fraction: {gr.describe()} (arg_groups/memory_hook.py)")
        s = replace(s, mem_fraction_static=f)
    f = s.mem_fraction_static
    ctx_b = int((CUDA_CONTEXT_GIB + (NCCL_GIB if s.tp_size > 1 else 0)) * GiB)
    T = cap - ctx_b
    w, how = _weights(arch, s.tp_size)
    A = T - w
    T_gib, A_gib = T / GiB, A / GiB
    refusal = None
    if s.context_length > derived and not allow_longer:
        refusal = (f"User-specified context_length ({s.context_length}) is greater than the derived context_length "
                   f"({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the derived "
                   "context_length may differ from max_position_embeddings in the model's config. To allow "
                   "overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
    rest = A_gib - T_gib * (1 - f)
    if rel.mm_reserve_mib and isinstance(geo.hf_config(arch).get("vision_config"), dict):
        rest -= rel.mm_reserve_mib / 1024
        notes.append(f"multimodal model: {rel.mm_reserve_mib} MiB of the pool budget reserved "
                     "(SGLANG_VLM_CACHE_SIZE_MB, 0.5.23)")
    pools = engine.pools_for(arch, s, rest, g, minimum_fraction=1 - A_gib / T_gib)
    return arch, s, rel, pools, dict(cap=cap, cc=cc, dev=dev_name, ctx_b=ctx_b, T=T, A=A, w=w, how=how, chunk=chunk,
                                     bs=bs, refusal=refusal, notes=notes, gpu_mib=gpu_mib, graphs=gr,
                                     graphs_refusal=gr_refusal)


def verdict(engine, launch) -> Verdict:
    """The verdict for ``launch`` (see the module docstring)."""
    arch, s, rel, p, n = budget(engine, launch)
    f = s.mem_fraction_static
    outcome, message = "boots", None
    if n["w"] >= n["T"]:
        outcome, message = "oom", (f"CUDA out of memory while loading the weights: {n['w'] / GiB:.2f} GiB on a rank "
                                   f"with {n['T'] / GiB:.2f} GiB free")
    elif n["refusal"]:
        outcome, message = "refused", n["refusal"]
    elif p.refusal:
        outcome, message = "refused", p.refusal
    reqs_pool = 0
    if outcome == "boots":
        rows = p.max_num_reqs
        reqs_pool = rows * (s.context_length + 4) * 4  # int32 [size, context_len + 4] (ReqToTokenPool)
    terms = [Term("cuda_context", n["ctx_b"], False, f"CUDA context{' + NCCL' if s.tp_size > 1 else ''} before SGLang "
                  f"reads the free memory (an assumption: {n['ctx_b'] / GiB:.2f} GiB)"),
             Term("weights", n["w"], False, f"the checkpoint's tensors split over TP {s.tp_size} ({n['how']})")]
    if outcome == "boots":
        terms += [Term("kv_cache", p.kv_bytes, True, f"SGLang {rel.name} {p.geometry.pool} pool (memory_pool.py)")]
        if p.state_bytes:
            terms.append(Term("state_pool", p.state_bytes, True, "MambaPool conv + ssm buffers (memory_pool.py)"))
        terms.append(Term("req_to_token_pool", reqs_pool, True,
                          f"ReqToTokenPool int32 [{p.max_num_reqs}, context_len + 4] (memory_pool.py)"))
    slack = n["T"] * (1 - f)
    used_static = n["ctx_b"] + n["w"] + p.total_bytes
    left = n["cap"] - used_static - reqs_pool
    notes = list(n["notes"])
    if outcome == "boots":
        if rel.mfs_rule == "reserve_graphs":
            want = n["graphs"].reserve_mib * MiB if n["graphs"] is not None else None
        else:
            want = reserved_mib(rel, s, n["gpu_mib"], n["chunk"], n["bs"]) * MiB
        notes.append(f"{left / GiB:.2f} GiB stay free for CUDA graphs and activations " + (
            f"(SGLang's own default fraction plans {want / GiB:.2f} GiB for them on this GPU)" if want is not None
            else "(SGLang's own default fraction for this launch is not modelled: "
            + n["graphs_refusal"].split("; give --mem-fraction-static")[0] + ")"))
        if left < 0:
            outcome, message = "oom", (f"the request-to-token table ({reqs_pool / GiB:.2f} GiB) does not fit the "
                                       f"{slack / GiB:.2f} GiB left by --mem-fraction-static {f}")
        if p.max_total_num_tokens < s.context_length:
            notes.append(f"the pool holds {p.max_total_num_tokens:,} tokens, fewer than --context-length "
                         f"{s.context_length:,}: SGLang starts, and rejects longer requests")
    dev = Device(n["dev"], n["cap"], tuple(terms))
    devices = tuple(replace(dev, name=f"{n['dev']} (rank {r})") for r in range(s.tp_size)) if s.tp_size > 1 else (dev,)
    lines = [f"Load weight begin. avail mem={n['T'] / GiB:.2f} GB"]
    if outcome != "oom" or n["w"] < n["T"]:
        lines += list(p.log_lines)
    if outcome == "boots":
        run = min(p.max_total_num_tokens // 2 if s.max_running_requests is None else
                  s.max_running_requests // (s.dp_size if s.enable_dp_attention else 1), p.max_num_reqs)
        line = (f"max_total_num_tokens={p.max_total_num_tokens}, chunked_prefill_size={n['chunk']}, "
                f"max_prefill_tokens={s.max_prefill_tokens}, max_running_requests={run}, "
                f"context_len={s.context_length}")
        if rel.name != "0.4.3" and rel.name != "0.4.4" and rel.name != "0.4.7":
            line += f", available_gpu_mem={max(left, 0) / GiB:.2f} GB"
            notes.append("available_gpu_mem in the scheduler line is derived (kvmath's figure, not a rule)")
        lines.append(line)
    notes.append("\"Load weight begin. avail mem\" is derived: capacity minus the assumed CUDA context")
    boot = SglangBoot(launch, s, rel.name, n["T"] / GiB, n["A"] / GiB, f, p, engine)
    return Verdict("sglang", rel.name, launch.model or "", outcome, devices, message, tuple(lines),
                   p.max_total_num_tokens if outcome == "boots" else None, s.context_length,
                   s.max_running_requests, tuple(notes), boot)


def context_range(engine, launch) -> tuple[int, int, int]:
    """Context lengths the solver searches: 1 to SGLang's derived context length of the model."""
    from ...model.load import load_architecture

    return 1, derived_context_len(load_architecture(launch.model)), 1


def smallest_fraction(engine, launch, *, full_request: bool = False) -> float | None:
    """The smallest ``--mem-fraction-static`` (in steps of 0.001) at which SGLang starts with the launch's
    other settings; None when even 0.999 does not. ``full_request``: the smallest at which it starts AND its pool
    holds one request of the launch's whole context (``max_total_num_tokens >= context_length``: SGLang starts
    with a smaller pool but rejects a longer request). Bisection over the verdict (monotone up to the fraction
    where the slack no longer holds the request table, which this search does not look at)."""
    def boots(milli: int) -> bool:  # SGLang starts: the pool gets tokens (the refusal is the monotone part)
        try:
            v = verdict(engine, launch.with_settings(mem_fraction_static=milli / 1000))
        except KvMathError:
            return False
        if full_request:
            return v.outcome == "boots" and (v.pool_tokens or 0) >= (v.context or 0)
        return v.outcome != "refused"

    lo, hi = 1, 999
    if not boots(hi):  # near 1 the slack may not hold the request table: start from the launch's own fraction
        own = launch.settings.get("mem_fraction_static")
        hi = round(own * 1000) if own else 0
        if not hi or not boots(hi):
            return None
    while lo < hi:
        mid = (lo + hi) // 2
        if boots(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo / 1000
