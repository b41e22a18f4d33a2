"""Tables for the book and for notebooks: kvmath results as pandas DataFrames.

pandas is imported inside each function, so importing kvmath (and the command line) stays light.
All byte columns are exact integers named ``*_bytes``; converted columns say their unit
(``*_gib`` = 2^30 bytes, ``*_mib`` = 2^20 bytes).
"""

from __future__ import annotations

import json
from fractions import Fraction

from .. import facts
from ..derive import Derivation, derive
from ..engines import get_engine, valid_tp
from ..errors import KvMathError
from ..model.load import load_architecture
from ..engines.vllm.settings import SERVE_GPU_MEMORY_UTILIZATION
from ..units import GiB, MiB

BOOK_VLLM_FORMATS = ("bf16", "fp8_e5m2", "int8_per_token_head", "turboquant_k8v4", "turboquant_3bit_nc", "nvfp4")
BOOK_LLAMACPP_FORMATS = ("f16", "q8_0", "q5_0", "q4_0", "turbo4", "turbo3")


def layer_groups_frame(d: Derivation):
    """One row per layer group of a derivation: type, count, shape, per-token and fixed bytes per card."""
    import pandas as pd

    rows = []
    for g in d.groups:
        rows.append({
            "layer type": g.layer_type,
            "layers": g.n_layers,
            "first index": g.layers[0],
            "what it caches": g.description,
            "KV heads / card": g.kv_heads_per_rank if not g.state else None,
            "bytes / token / layer": g.bytes_per_token if not g.state else None,
            "state bytes / seq / layer": g.state_bytes_per_seq if g.state else None,
            "cells": g.cells if not g.state else None,
            "total_bytes": g.bytes,
        })
    return pd.DataFrame(rows)


def layer_pattern(arch, limit: int = 160) -> str:
    """The layer-type sequence in run-length form, e.g. ``(3 x linear, 1 x full) x 16``.

    A sequence with no repeating unit is written as its runs, cut to ``limit`` characters.
    """
    short = {"full_attention": "full", "sliding_attention": "sliding", "linear_attention": "linear"}
    types = [short.get(layer.layer_type, layer.layer_type) for layer in arch.layers]
    if not types:
        return "no layers"
    for period in range(1, len(types) + 1):
        if len(types) % period == 0 and types == types[:period] * (len(types) // period):
            unit = types[:period]
            runs, i = [], 0
            while i < len(unit):
                j = i
                while j < len(unit) and unit[j] == unit[i]:
                    j += 1
                runs.append(f"{j - i} x {unit[i]}")
                i = j
            body = ", ".join(runs)
            return shorten(f"({body}) x {len(types) // period}" if len(types) // period > 1 else body, limit)
    return shorten(", ".join(types), limit)


def per_token_frame(model, engine="vllm", formats=BOOK_VLLM_FORMATS, tps=(1, 2, 4), **deployment):
    """Growing KV bytes per token per card for each format and each valid TP among ``tps``.

    Columns: format, tp, bytes_per_token, bits_per_element_k, bits_per_element_v, refused (the engine's
    one-line refusal where it refuses the format at start-up; the figures are then empty). TPs the engine
    cannot use for this model are left out (see ``valid_tp``).
    """
    import pandas as pd

    arch = model if not isinstance(model, (str, dict)) else load_architecture(model)
    eng = get_engine(engine)
    ok = [tp for tp in tps if tp in valid_tp(arch, eng, tps)]
    rows = []
    max_ctx = deployment.pop("max_ctx", 4096)
    if eng.name == "vllm":
        # bytes per token are a property of the format; without prefix caching vLLM's align-mode limit
        # (block size <= max_num_batched_tokens) cannot refuse a format that otherwise runs
        deployment.setdefault("enable_prefix_caching", False)
    for fmt in formats:
        for tp in ok:
            try:
                d = derive(arch, engine=eng, kv_format=fmt, tp=tp, max_ctx=max_ctx, **deployment)
            except KvMathError as e:  # the engine refuses this format here (vLLM page unification, MLA formats)
                rows.append({"format": fmt, "tp": tp, "bytes_per_token": None, "bits_per_element_k": None,
                             "bits_per_element_v": None, "refused": str(e)})
                continue
            rows.append({
                "format": fmt,
                "tp": tp,
                "bytes_per_token": d.bytes_per_token,
                "bits_per_element_k": float(d.kv_format.k.bits_per_element),
                "bits_per_element_v": float(d.kv_format.v.bits_per_element),
                "refused": "",
            })
    return pd.DataFrame(rows)


def curve_frame(model, engine="vllm", formats=BOOK_VLLM_FORMATS, tps=(1, 2, 4), contexts=None, **deployment):
    """Per-card cache of ONE sequence against context, for the memory-vs-context charts.

    Columns: format, tp, ctx, growing_bytes, fixed_bytes (sliding window + state), both per sequence
    per card; a chart multiplies them by the number of sequences. ``contexts`` defaults to a grid from
    1K to the model's maximum.
    """
    import pandas as pd

    arch = model if not isinstance(model, (str, dict)) else load_architecture(model)
    eng = get_engine(engine)
    if contexts is None:
        top = arch.max_position_embeddings or 131072
        contexts = sorted({*range(1024, top + 1, max(1024, top // 64)), top})
    ok = valid_tp(arch, eng, tps)
    rows = []
    for fmt in formats:
        for tp in ok:
            for ctx in contexts:
                try:
                    d = derive(arch, engine=eng, kv_format=fmt, tp=tp, max_ctx=ctx, max_num_seqs=1, **deployment)
                except KvMathError:  # refused at start-up by the engine: no point on the curve
                    continue
                # everything that is not full-attention KV: sliding window, state, vLLM padding layers
                rows.append({"format": fmt, "tp": tp, "ctx": ctx, "growing_bytes": d.growing_bytes,
                             "fixed_bytes": d.total_bytes - d.growing_bytes})
    return pd.DataFrame(rows)


def deployment_facts(model_id: str) -> dict:
    """Weights per quantisation (GB) and drafters of a known model (``kvmath/data/deployments.json``)."""
    table = facts.deployments()
    if model_id not in table:
        raise KvMathError(f"no deployment facts for {model_id!r}; known: {', '.join(table)}")
    return table[model_id]


def weights_frame(model_id: str, tps=(1, 2, 4)):
    """Checkpoint size per quantisation and per card under TP (GB = 1e9 bytes, as published).

    Every weight tensor is treated as sharded evenly; embeddings and norms that vLLM replicates are
    a small share for these models and are not separated here.
    """
    import pandas as pd

    facts = deployment_facts(model_id)
    rows = []
    for variant, gb in facts["weights_gb"].items():
        row = {"quantisation": variant, "total_gb": gb}
        for tp in tps:
            row[f"per card TP{tp} (GB)"] = round(gb / tp, 3)
        rows.append(row)
    return pd.DataFrame(rows)


def source_doc() -> dict:
    """The source document's stated figures (``kvmath/data/source_doc.json``)."""
    return facts.source_doc()


def errata_frame(model_id: str, tp: int = 1):
    """The source document's per-token figures beside kvmath's, for vLLM at TP ``tp``.

    Columns: format, doc_bytes_per_token, kvmath_bytes_per_token, ratio (kvmath / doc).
    Formats vLLM does not have (q4_0) are derived for llama.cpp and say so.
    """
    import pandas as pd

    doc = source_doc()["per_token_tp1"].get(model_id, {})
    arch = load_architecture(model_id)
    rows = []
    for fmt, doc_value in doc.items():
        engine = "llama.cpp" if fmt == "q4_0" else "vllm"
        # bytes per token do not depend on prefix caching; without it vLLM's align-mode block limit
        # (block_size <= max_num_batched_tokens) does not apply
        extra = {"enable_prefix_caching": False} if engine == "vllm" else {}
        try:
            d = derive(arch, engine=engine, kv_format=fmt, tp=tp, max_ctx=4096, **extra)
        except KvMathError as e:  # vLLM refuses the format on this model at start-up
            rows.append({"format": fmt, "engine": engine, "doc_bytes_per_token": doc_value // tp,
                         "kvmath_bytes_per_token": None, "ratio": None, "refused": str(e)})
            continue
        rows.append({
            "format": fmt,
            "engine": engine,
            "doc_bytes_per_token": doc_value // tp,
            "kvmath_bytes_per_token": d.bytes_per_token,
            "ratio": round(d.bytes_per_token / (doc_value / tp), 3),
            "refused": "",
        })
    return pd.DataFrame(rows)


def chapter_frames(model_id: str, card: str = "rtx3090", contexts=None) -> dict:
    """Frames for a model chapter's vLLM budget section (pandas, the budget and the calibration imported here).

    Returns ``{"table": one row per preset (GiB per card, outcome, its margin and whether it is inside
    the calibration error band, pool tokens, concurrency, largest context, anchor verdict, and the
    measured outcome of the anchor's calibration boots of that preset, at their booted configuration),
    "curve": budget vs context for the first preset (long form: context,
    term, GiB, plus the refusal line), "refusal_context": largest max_model_len that boots for that
    preset, "preset": its name, "card": card}``.
    """
    import pandas as pd

    from ..engines.vllm.budget import (GIB, anchor_prediction, card as get_card, preset, preset_budget, presets,
                                       rebudget, solve_max_model_len)
    from ..engines.vllm.calibration import measured_for_preset

    rows = []
    names = list(presets().get(model_id, {}))
    for name in names:
        pr = preset(model_id, name)
        try:
            b = preset_budget(model_id, name, card=card)
        except KvMathError as e:
            rows.append({"preset": name, "outcome": f"invalid: {e}"})
            continue
        anchor = anchor_prediction(model_id, kv_format=pr["kv_format"], max_ctx=pr["max_ctx"],
                                   max_num_seqs=pr["max_num_seqs"], tp=pr["tp"], mem_util=pr["mem_util"],
                                   vram_gb=get_card(card)["nominal_gb"], mtp=pr["mtp"],
                                   drafter_gb=pr["drafter_gb"], weights_variant=pr["weights"])
        rows.append({
            "preset": name, "kv_format": b.kv_format, "TP": b.tp, "max_model_len": b.max_model_len,
            "max_num_seqs": b.max_num_seqs, "mem_util": b.mem_util,
            "weights GiB": b.weights / GIB, "non-KV GiB": b.non_kv / GIB,
            "available KV GiB": b.available_kv / GIB,
            "outcome": b.outcome + (" (config)" if b.refusal_kind == "config" else ""),
            "margin GiB": b.margin_bytes / GIB, "marginal": b.marginal, "pool tokens": b.pool_tokens,
            "max concurrency": round(b.max_concurrency, 2),
            "largest max_model_len": solve_max_model_len(b, upper=262144),
            "anchor verdict": anchor["verdict"] if anchor else None,
            "measured (club-3090)": ", ".join(f"{m.outcome} ({m.id})"
                                              for m in measured_for_preset(model_id, name, card)) or None,
            "caveat": "; ".join(c for c, on in (
                ("DFlash drafter KV not modelled: pool and concurrency are upper bounds", b.settings.get("dflash")),
                ("the fit has no boot of this checkpoint", any(n.startswith("the fit has no boot of") for n in b.notes)),
            ) if on) or None,
        })
    table = pd.DataFrame(rows)
    curve = pd.DataFrame()
    refusal = None
    first = names[0] if names else None
    if first:
        b0 = preset_budget(model_id, first, card=card)
        ctxs = contexts if contexts is not None else [2**k for k in range(12, 19)] + [262144]
        recs = []
        for L in ctxs:
            b = rebudget(b0, max_model_len=int(L), check_card=False)
            recs += [
                {"context": L, "term": "non-KV (weights, activation, overhead)", "GiB": b.non_kv / GIB},
                {"context": L, "term": "KV one request needs", "GiB": b.kv_per_request / GIB},
                {"context": L, "term": f"KV for max_num_seqs={b.max_num_seqs}", "GiB": b.demand_bytes / GIB},
                {"context": L, "term": "available KV", "GiB": b.available_kv / GIB},
            ]
        curve = pd.DataFrame(recs)
        refusal = solve_max_model_len(b0, upper=262144)
    return {"table": table, "curve": curve, "refusal_context": refusal, "preset": first, "card": card}


# ---------------------------------------------------------------------------------------------------
# model chapters: what a chapter chooses for its model (every architecture, no per-model list)

DEFAULT_CONTEXT = 131072
"""Context a chapter takes when a config states no maximum length (said in the chapter)."""

BUDGET_CARDS = ("rtx3090", "rtx5090", "a6000", "h100")
"""The cards a chapter's default-deployment budget is priced on (``data/cards.json`` ids)."""


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, with an ellipsis (for table cells)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:(") + "…"


def chapter_context(arch) -> tuple[int, str]:
    """(context a chapter prices, the sentence saying where it comes from).

    The model's own maximum (vLLM's derived ``max_model_len``: ``max_position_embeddings``, rope scaling
    applied); ``DEFAULT_CONTEXT`` when the config states none, and the sentence says so.
    """
    top = arch.derived_max_model_len or arch.max_position_embeddings
    if top:
        return int(top), "the model's maximum length, from its config"
    return DEFAULT_CONTEXT, ("a choice, not the model's limit: the config states no maximum length "
                             "(max_position_embeddings)")


def vllm_chapter_flags(arch, kv_format: str, max_ctx: int, max_num_batched_tokens: int) -> tuple[dict, str]:
    """(vLLM settings a chapter uses, why prefix caching is off or "").

    vLLM's defaults (prefix caching on) where kvmath can derive them; where ``derive`` refuses the model with
    prefix caching on (Mamba-2 and KDA layers: their prefix-caching state blocks are not modelled), prefix
    caching off, with the refusal returned so the chapter can say it.
    """
    flags = {"max_num_batched_tokens": max_num_batched_tokens}
    try:
        derive(arch, engine="vllm", kv_format=kv_format, max_ctx=max_ctx, **flags)
        return flags, ""
    except KvMathError as e:
        flags["enable_prefix_caching"] = False
        derive(arch, engine="vllm", kv_format=kv_format, max_ctx=max_ctx, **flags)  # must work now
        return flags, str(e)


def format_verdicts(arch, candidates=None, *, max_ctx: int = 4096, **deployment) -> dict:
    """``{format: None or the engine's refusal}`` for vLLM's formats on ``arch`` at TP 1.

    ``candidates`` default: every ``--kv-cache-dtype`` vLLM has (``kvmath.engines.vllm.formats``). A format is
    kept when ``derive`` accepts it (MLA takes bf16 / fp16 / fp8_e4m3 only; vLLM refuses page sizes it
    cannot unify, e.g. TurboQuant on Gemma 4). Prefix caching off unless given: bytes per token do not
    depend on it.
    """
    from ..engines.vllm.formats import VLLM_FORMATS

    deployment.setdefault("enable_prefix_caching", False)
    out = {}
    for fmt in candidates or VLLM_FORMATS:
        try:
            derive(arch, engine="vllm", kv_format=fmt, tp=1, max_ctx=max_ctx, **deployment)
            out[fmt] = None
        except KvMathError as e:
            out[fmt] = str(e)
    return out


def layer_kind_label(group) -> str:
    """A layer group in words (``full attention``, ``Mamba-2``, ...) for tables."""
    if group.kind == "attention":
        return "sliding-window attention" if group.sliding else "full attention"
    return {"mla": "multi-head latent attention", "gdn": "Gated DeltaNet", "mamba2": "Mamba-2",
            "kda": "Kimi Delta Attention", "padding": "vLLM padding"}.get(
        group.kind, "MoE block (no cache)" if group.layer_type == "moe" else "MLP block (no cache)")


def _largest_boot_gb(kw: dict, tp: int) -> float | None:
    """Largest checkpoint (GB, 2 decimals) with which ``budget(**kw)`` boots, or None if none does.

    Weights enter the budget linearly (weights per card = GB * 1e9 / TP, subtracted from what the card
    gives): solved from one budget, then checked at the answer and one step above it; bisection if the
    check fails.
    """
    from ..engines.vllm.budget import budget

    def boots(w):
        return budget(weights_gb_total=w, **kw).outcome == "boots"

    step = 0.01
    if not boots(step):
        return None
    b = budget(weights_gb_total=step, **kw)
    room = b.requested - (b.non_kv - b.weights) - b.kv_per_request  # bytes per card the weights may take
    w = int(room * tp / 1e9 / step) * step
    if w >= step and boots(w) and not boots(w + step):
        return round(w, 2)
    lo, hi = step, max(2 * w, 1.0)
    while boots(hi):
        lo, hi = hi, hi * 2
    while hi - lo > step / 2:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if boots(mid) else (lo, mid)
    return round(int(lo / step) * step, 2)


def default_budget_frame(model_id: str, *, max_model_len: int, cards=BUDGET_CARDS, tps=(1, 2, 4, 8),
                         mem_util: float = SERVE_GPU_MEMORY_UTILIZATION, **vllm_flags):
    """The default deployment of a model on a list of cards, one row per card and valid TP.

    The deployment: ``--kv-cache-dtype auto``, one sequence of ``max_model_len`` tokens, ``gpu_memory_utilization``
    ``mem_util``, ``vllm serve``'s batch defaults for the card; ``vllm_flags`` on top (prefix caching off for
    the models ``vllm_chapter_flags`` says). Columns: card, TP, KV one request needs (GiB), largest checkpoint
    that boots (GB; needs no checkpoint size), and for a model with checkpoint sizes
    (``data/deployments.json``) the verdict with its default checkpoint. Returns ``(frame, notes)``: notes
    are the budget's own notes and refusals, deduplicated, full text.
    """
    import pandas as pd

    from ..engines.vllm.budget import budget, card as get_card

    arch = load_architecture(model_id)
    known = model_id in facts.deployments()
    rows, notes = [], []
    for c in cards:
        for tp in valid_tp(arch, "vllm", tuple(tps)):
            kw = dict(model=model_id, card=c, tp=tp, kv_format="auto", max_model_len=max_model_len, max_num_seqs=1,
                      mem_util=mem_util, **vllm_flags)
            row = {"card": get_card(c)["name"].replace("NVIDIA ", "").replace("GeForce ", ""), "TP": tp}
            try:
                probe = budget(weights_gb_total=0.01, **kw)
            except KvMathError as e:
                row["KV one request needs (GiB)"] = "refused"
                row["largest checkpoint that boots (GB)"] = "refused"
                notes.append(str(e))
                rows.append(row)
                continue
            if not known:  # a known model's notes come from its own checkpoint's budget below
                notes += list(probe.notes)
            row["KV one request needs (GiB)"] = f"{probe.kv_per_request / GiB:,.2f}" if probe.kv_per_request else "refused"
            if probe.outcome != "boots" and probe.refusal_kind in ("config", "startup", "mamba_blocks"):
                row["largest checkpoint that boots (GB)"] = "refused"
                notes.append(probe.refusal)
            else:
                w = _largest_boot_gb(kw, tp)
                row["largest checkpoint that boots (GB)"] = f"{w:,.2f}" if w is not None else "none"
            if known:
                b = budget(**kw)
                row[f"with the {b.weights_variant} checkpoint"] = b.outcome
                if b.refusal:
                    notes.append(b.refusal)
                notes += list(b.notes)
            rows.append(row)
    return pd.DataFrame(rows), list(dict.fromkeys(n for n in notes if n))


def activation_grid(model, *, tokens=(512, 1024, 2048, 4096, 8192, 16384), seqs=(1, 16, 256), tps=(1,)):
    """The profile run's peak per phase (forward, sampler, encoder, total, first CUDA-graph capture) over a
    grid of ``max_num_batched_tokens`` x ``max_num_seqs`` x TP, MiB per card, from
    ``kvmath.engines.vllm.activation.activation_frame`` (phase total rows). Combinations vLLM's scheduler
    refuses (``max_num_seqs`` above ``max_num_batched_tokens``) are left out."""
    import pandas as pd

    from ..engines.vllm.activation import activation_frame

    rows = []
    for tp in tps:
        for s in seqs:
            for t in tokens:
                if s > t:
                    continue
                f = activation_frame(model, max_num_batched_tokens=t, max_num_seqs=s, tp=tp)
                keep = f["term"].astype(str).str.endswith("phase peak") | f["phase"].isin(["total", "cudagraph"])
                for _, r in f[keep].iterrows():
                    label = {"total": "peak (largest phase)", "cudagraph": "first CUDA-graph capture"}.get(
                        r["phase"], r["phase"])
                    rows.append({"max_num_batched_tokens": t, "max_num_seqs": s, "tp": tp,
                                 "phase": label, "mib": float(r["MiB per card"])})
    out = pd.DataFrame(rows)
    empty = out.groupby("phase")["mib"].max() == 0  # e.g. the encoder phase of a text-only model
    return out[~out["phase"].isin(empty[empty].index)].reset_index(drop=True)
