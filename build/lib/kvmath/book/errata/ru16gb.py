"""Checks of the 16 GB article (llama.cpp on a 16 GB card; the records of ``data/errata.json`` with ``document``
ru16gb), with the 16 GB chapter's own method: Q4_K_M tensors from config.json, llama-server's card budget, the
article's turbo4 / turbo3 flags, the calibrated speed model."""

from __future__ import annotations

from .base import (  # noqa: F401
    Check, GB, GIB, KINDS, KvMathError, MB, MIB, VERDICTS, _arch, _b, _bpt, _budget, _close, _compare, _config, _gb, _gib, _grade, _llama, _mb, _preset_budget, _reference, _rows, _short_refusal, _slug, _text_config, _title, _vllm, facts, label_for, lru_cache, math, not_checkable, re, statistics, check)



@check
def formula(*, models: list) -> Check:
    """KV bytes per token = 2 x KV heads x head_dim x layers x bytes per element (f16), all layers."""
    ok, parts = 0, []
    for m in models:
        a = _arch(m)
        tc = _text_config(m)
        # every layer counted, as the article does: an attention layer with its own heads and width, any
        # other layer with the config's num_key_value_heads x head_dim
        hand = 2 * 2 * sum(l.num_kv_heads * l.head_dim if l.kind == "attention"
                           else tc["num_key_value_heads"] * tc["head_dim"] for l in a.layers)
        got = _llama(m, 32768, "f16").bytes_per_token
        ok += hand == got
        parts.append(f"{_title(m)}: formula {hand:,}, llama.cpp {got:,}")
    return Check(_grade(ok, len(models)), "; ".join(parts), "2 x h x d x L x bytes",
                 f"Right for a model whose every layer is full attention; sliding-window and recurrent layers do "
                 f"not grow with the context ({ok} of {len(models)} models agree, f16, B/token).")


@check
def element_sizes(*, sizes: dict) -> Check:
    from ...engines.llamacpp.formats import llamacpp_type

    ok, parts = 0, []
    for t, doc in sizes.items():
        f = llamacpp_type(t)
        got = f.block_bytes / f.block_elems
        ok += abs(got - doc) < 1e-9
        parts.append(f"{t} {got:g} B")
    blocks = "; ".join(f"{t}: {llamacpp_type(t).block_bytes} B per {llamacpp_type(t).block_elems} elements"
                       for t in sizes if llamacpp_type(t).block_elems > 1)
    return Check(_grade(ok, len(sizes)), "; ".join(parts), "; ".join(f"{t} {v:g} B" for t, v in sizes.items()),
                 f"ggml's block sizes ({blocks}) include a 16-bit scale per block.")


@check
def halving(*, model: str, ctx: int) -> Check:
    q8, q4 = _llama(model, ctx, "q8_0"), _llama(model, ctx, "q4_0")
    pct = 100 * q4.bytes_per_token / q8.bytes_per_token
    return Check("partly", f"{pct:.1f} % left", "50 %",
                 f"{_title(model)} in llama.cpp: {q8.bytes_per_token:,} B/token in q8_0, {q4.bytes_per_token:,} in "
                 "q4_0; the block scales keep it a little above half. Quality is not measured here.")


@check
def gemma_vs_qwen(*, gemma: str, qwen: str, doc: float, ctx: int) -> Check:
    g, q = _llama(gemma, ctx, "f16"), _llama(qwen, ctx, "f16")
    full = _llama(gemma, ctx, "f16", swa_full=True)
    r = g.bytes_per_token / q.bytes_per_token
    rf = sum(c.bytes_per_cell for c in full.kv) / q.bytes_per_token
    return Check("wrong" if abs(r - doc) > 0.2 * doc else "holds", f"{r:.2f}x ({rf:.1f}x with --swa-full)", f"~{doc:g}x",
                 f"llama.cpp keeps Gemma 4's sliding layers in a window-sized cache: {g.bytes_per_token:,} against "
                 f"{q.bytes_per_token:,} B/token (f16); only --swa-full makes every layer grow.")


@check
def kv_vs_weights(*, gemma: str, ctx: int, weight_bits, cache_type: str = "f16") -> Check:
    w = _weights(gemma, weight_bits)
    wt = w.total + w.output_bytes
    kv = _llama(gemma, ctx, cache_type).total_bytes
    kvf = _llama(gemma, ctx, cache_type, swa_full=True).total_bytes
    return Check("wrong" if kv < wt else "holds", f"cache {_gib(kv)} ({_gib(kvf)} with --swa-full)",
                 f"cache > weights ({_gib(wt)}, {_wdesc(weight_bits)})",
                 f"{_title(gemma)} at {ctx:,} tokens, {cache_type}: the default cache is far below the weights; only "
                 "--swa-full would exceed them.")


@check
def default_type() -> Check:
    from ...engines.llamacpp import LlamaCppSettings
    from ...engines.llamacpp.formats import llamacpp_type

    q8 = llamacpp_type("q8_0")
    f = LlamaCppSettings.__dataclass_fields__
    k, v = f["cache_type_k"].default, f["cache_type_v"].default
    return Check("partly", f"llama.cpp default -ctk {k} / -ctv {v}", "q8_0, 1 B per element",
                 "llama.cpp's own default is f16; that many examples set q8_0 is not checkable here, and q8_0 costs "
                 f"{q8.block_bytes / q8.block_elems:g} B per element, not 1.")


def _weights(model: str, weights):
    """llama.cpp weight bytes of ``model``: ``weights`` names a llama-quantize mix (``Q4_K_M``: the tensors
    ``kvmath.engines.llamacpp.weights.weights_from_mix`` builds from config.json, as the 16 GB chapter uses
    them), or is a flat bits per weight."""
    from ...engines.llamacpp.weights import estimate_weights, weights_from_mix

    if isinstance(weights, str):
        return weights_from_mix(_config(model), weights)[1]
    return estimate_weights(_config(model), bits_per_weight=weights)


def _wdesc(weights) -> str:
    return f"weights in {weights} (tensor by tensor from config.json)" if isinstance(weights, str) else \
        f"weights estimated at {weights:g} bits per weight"


def _lb_setup(model: str, ctx: int, t: str, n: int, weight_bits, card: str, t_v: str | None = None):
    from ...engines.llamacpp import budget as LB

    w = _weights(model, weight_bits)
    c = LB.card(card)
    s, _, _ = LB.plan(model, _config(model), n_ctx=ctx, cache_type_k=t, cache_type_v=t_v or t, weights=w, n_cpu_moe=n,
                      total_mib=c["total_gib"] * 1024, fork="turboquant" if t.startswith("turbo") else None)
    return s.budget, w


def _lb_smallest(model, ctx, t, weight_bits, card):
    from ...solve import first_true

    _, w = _lb_setup(model, ctx, t, 0, weight_bits, card)
    return first_true(lambda k: _lb_setup(model, ctx, t, k, weight_bits, card)[0].spare_mib >= 0, 0, w.n_blocks)


@check
def fits_16gb(*, models: list, ctx: int, cache_type: str, weight_bits: float, card: str) -> Check:
    parts, ok = [], 0
    for m in models:
        n = _lb_smallest(m, ctx, cache_type, weight_bits, card)
        ok += n is not None
        parts.append(f"{_title(m)}: --n-cpu-moe {n}" if n is not None else f"{_title(m)}: does not fit")
    return Check(_grade(ok, len(models)), "; ".join(parts), f"{ctx:,} tokens fit on 16 GB",
                 f"llama.cpp's card budget on {card} ({cache_type}, {_wdesc(weight_bits)}, llama-server): the smallest "
                 "number of layers whose experts stay in RAM.")


@check
def gemma_peak(*, model: str, ctx: int, cache_type: str, n_oom: int, doc_peak_gb: float, weight_bits,
                  card: str, n_peak: int = 12) -> Check:
    peak, _ = _lb_setup(model, ctx, cache_type, n_peak, weight_bits, card)
    b, _ = _lb_setup(model, ctx, cache_type, n_oom, weight_bits, card)
    n = _lb_smallest(model, ctx, cache_type, weight_bits, card)
    got = peak.load_mib * MIB
    ok = _close(got, doc_peak_gb * GB, 0.05) and b.spare_mib < 0
    return Check("holds" if ok else "wrong",
                 f"--n-cpu-moe {n_peak}: {_gb(got)}; --n-cpu-moe {n_oom}: {b.verdict} ({b.spare_mib:,.0f} MiB spare); "
                 f"fits from {n}", f"peak {doc_peak_gb:g} GB at {n_peak}; out of memory at {n_oom}",
                 f"CUDA0 total (model + KV + state + compute) on {card}, {cache_type}, {_wdesc(weight_bits)}, "
                 "llama-server: " + ("as the article says." if ok else "neither the peak nor the out-of-memory is "
                                     "reproduced at the article's flags."))


@check
def qwen_within(*, model: str, ctx: int, cache_type: str, doc_gb: float, weight_bits, card: str) -> Check:
    n = _lb_smallest(model, ctx, cache_type, weight_bits, card)
    b, _ = _lb_setup(model, ctx, cache_type, n, weight_bits, card)
    tot = b.load_mib * MIB
    return Check("holds" if tot <= doc_gb * GB else "partly", f"{_gb(tot)} ({b.load_mib:,.0f} MiB) at --n-cpu-moe {n}",
                 f"within {doc_gb:g} GB", f"CUDA0 total (model + KV + state + compute) on {card}, {cache_type}, "
                 f"{_wdesc(weight_bits)}, llama-server; the margin comes from the experts moved to RAM.")


@check
def offload_slower(*, model: str, n_lo: int, n_hi: int, host_gbs: float, card: str, weight_bits) -> Check:
    tg = _tg(model, [n_lo, n_hi], host_gbs, card, weight_bits)
    return Check("holds" if tg[1] < tg[0] else "wrong", f"{tg[0]:.0f} -> {tg[1]:.0f} tokens/s", "slower",
                 f"kvmath's calibrated speed model ({_title(model)}, --n-cpu-moe {n_lo} -> {n_hi}, host RAM at "
                 f"{host_gbs:g} GB/s): each layer moved reads its active experts over the host's bandwidth.")


def _tg(model, ns, host_gbs, card, weight_bits):
    from ...engines.llamacpp import budget as LB
    from ...engines.llamacpp import speed as SP
    w = _weights(model, weight_bits)
    tc = _text_config(model)
    frac = tc.get("num_experts_per_tok", tc.get("top_k_experts")) / tc["num_experts"]
    bw = LB.card(card)["bandwidth_gbs"]
    out = []
    for n in ns:
        ram = sum(w.experts_per_block[:n])
        out.append(SP.estimate(dense_gpu_bytes=w.attention + w.other + w.output_bytes, expert_gpu_bytes=w.experts - ram,
                               expert_host_bytes=ram, active_fraction=frac, gpu_bandwidth_gbs=bw,
                               host_bandwidth_gbs=host_gbs)["tg_tokens_per_s"])
    return out


@check
def speed_gap(*, gemma: str, qwen: str, n_lo: int, n_hi: int, host_gbs: float, card: str, weight_bits) -> Check:
    from ...engines.llamacpp import speed as SP

    g = _tg(gemma, [n_lo, n_hi], host_gbs, card, weight_bits)
    q = _tg(qwen, [n_lo, n_hi], host_gbs, card, weight_bits)
    dg, dq = 100 * (1 - g[1] / g[0]), 100 * (1 - q[1] / q[0])
    med = SP.summary(SP.leave_one_out())["tg_loo_median_abs_pct"]
    verdict = "wrong" if dg >= dq or abs(dg - dq) <= med else "holds"  # the chapter's "refuted as stated"
    return Check(verdict, f"Gemma -{dg:.0f} %, Qwen -{dq:.0f} %", "Gemma small, Qwen larger",
                 f"The calibrated speed model (median error {med:.0f} %) has Gemma lose at least as much; the gap is "
                 "within its error and no public run measures either model at both settings.")


@check
def turbo_ratio(*, types: list, doc_ratio: float) -> Check:
    from ...engines.llamacpp.formats import llamacpp_type

    f16 = llamacpp_type("f16").bits_per_element
    parts = [f"{t} {float(f16 / llamacpp_type(t).bits_per_element):.2f}x" for t in types]
    return Check("partly", "; ".join(parts), f"{doc_ratio:g}x at full-precision recall",
                 "Bits per element against f16 from the fork's block structs; recall is not measured in this project.")


@check
def turbo_flags(*, model: str, ctx: int, k: str, v: str) -> Check:
    m = _llama(model, ctx, k, v)
    stored = m.kv[0].type_k
    return Check("holds" if stored == k else "partly", f"K stored as {stored}, V as {m.kv[0].type_v}",
                 f"-ctk {k} -ctv {v}", f"kvmath's model of the TurboQuant fork accepts both types and, for "
                 f"{_title(model)} with these flags, stores K as {stored} and V as {m.kv[0].type_v}.")


@check
def turbo_vs_q4(*, model: str, ctx: int, doc_turbo_mb: float, doc_q4_mb: float, k: str = "turbo4",
                   v: str = "turbo3") -> Check:
    run = _llama(model, ctx, k, v)  # the article's own flags: -ctk turbo4 -ctv turbo3
    t4, q4 = run.kv_bytes, _llama(model, ctx, "q4_0").kv_bytes
    ok = t4 < q4 and _close(t4, doc_turbo_mb * MIB, 0.05) and _close(q4, doc_q4_mb * MIB, 0.05)
    return Check("holds" if ok else "wrong", f"-ctk {k} -ctv {v} {t4 / MIB:,.0f} MiB, q4_0 {q4 / MIB:,.0f} MiB",
                 f"turbo ~{doc_turbo_mb:g} MB, q4_0 ~{doc_q4_mb:g} MB",
                 f"{_title(model)} at {ctx:,} tokens with the article's flags (K stored as {run.kv[0].type_k}, V as "
                 f"{run.kv[0].type_v}); the article's 'MB' are MiB.")


@check
def q6() -> Check:
    from ...engines.llamacpp.formats import LLAMACPP_CACHE_TYPES

    has = [t for t in LLAMACPP_CACHE_TYPES if t.startswith("q6")]
    return Check("partly", "mainline cache types: " + ", ".join(LLAMACPP_CACHE_TYPES), "Q6 only in ik_llama",
                 "Mainline llama.cpp has no 6-bit cache type" + ("" if not has else " (found one)") +
                 "; ik_llama.cpp is not modelled here.")


@check
def linear_state(*, model: str) -> Check:
    a, b = _llama(model, 32768, "f16"), _llama(model, 262144, "f16")
    same = a.recurrent_bytes == b.recurrent_bytes
    return Check("partly" if same and a.bytes_per_token else ("holds" if same else "wrong"),
                 f"state {a.recurrent_bytes / MIB:,.1f} MiB at 32K and 256K; {a.bytes_per_token:,} B/token still grow",
                 "fixed size, bypasses the arithmetic",
                 f"The Kimi Delta Attention state is the same at both contexts, but {_title(model)} keeps MLA layers "
                 "whose cache grows per token.")


