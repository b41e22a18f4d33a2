"""The book's answer at a glance: what fits on common cards, per model and per engine.

For each model and each card of :data:`GLANCE_CARDS` (one per memory class: 16, 24, 32, 48, 80 and 141 GB),
each engine answers two questions with its own budget and solver:

* the largest context of one sequence that starts (vLLM: ``budget`` + ``solve_max_model_len``, one
  sequence; llama.cpp: ``plan`` with ``-np 1``, the largest ``-c`` in steps of 256 that leaves the card's memory
  after its CUDA context and first batch);
* how many sequences of :data:`GLANCE_CONTEXT` tokens it serves at once (vLLM: ``vllm serve --max-model-len
  32768`` with the card's batch defaults, the integer part of its logged maximum concurrency; llama.cpp: the
  largest ``-np N`` with ``-c 32768·N`` that fits).

Engines are entries of :data:`ENGINES` (name -> answer function), so an engine is added in one place: the
SGLang engine registers ``"SGLang": sglang_answer`` there (a function ``(model_id, card_id) -> Answer``), and
every table and chart of this module takes a list of engine names. pandas and Altair are imported inside
the functions that draw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..engines.vllm.settings import SERVE_GPU_MEMORY_UTILIZATION
from ..errors import KvMathError

GLANCE_CARDS = ("rtx4060ti-16", "rtx3090", "rtx5090", "a6000", "h100", "h200")
"""One card per memory class (``data/cards.json`` ids): 16, 24, 32, 48, 80 and 141 GB."""

GLANCE_CONTEXT = 32768
"""The context per sequence of the "sequences at once" answer (tokens)."""

MEM_UTIL = SERVE_GPU_MEMORY_UTILIZATION
"""vLLM's default ``gpu_memory_utilization`` (0.92 in 0.20-0.33: ``kvmath.engines.vllm.settings``)."""

LLAMACPP_MIX = "Q4_K_M"
"""The GGUF mix llama.cpp's weights are built in from config.json (llama-quantize's per-tensor rules)."""


@dataclass(frozen=True)
class Answer:
    """One engine's answer for one model on one card (TP 1).

    ``largest_context``: tokens of one sequence that still start (0: none; None: the engine does not apply,
    ``note`` says why). ``seqs_at_context``: sequences of :data:`GLANCE_CONTEXT` tokens served at once
    (0: none; None: not applicable, e.g. the model's own maximum is shorter). ``weights``: what the weights
    are (checkpoint name or "config.json estimate"). ``note``: one line, or "".
    """

    engine: str
    model: str
    card: str
    largest_context: int | None
    seqs_at_context: int | None
    weights: str = ""
    note: str = ""


def card_label(card_id: str) -> str:
    """A card's short name with its memory class (``RTX 3090 (24 GB)``), from ``data/cards.json``."""
    from ..engines.vllm.budget import card

    c = card(card_id)
    name = c["name"].replace("NVIDIA ", "").replace("GeForce ", "").replace(" HBM3", "")
    name = re.sub(rf"\s*{c['nominal_gb']:g}\s*GB$", "", name)
    return f"{name} ({c['nominal_gb']:g} GB)"


def card_class(card_id: str) -> str:
    """A card's memory class as a column header: ``24 GB``."""
    from ..engines.vllm.budget import card

    return f"{card(card_id)['nominal_gb']:g} GB"


@lru_cache(maxsize=None)
def vllm_answer(model: str, card: str) -> Answer:
    """vLLM (``kvmath.engines.vllm.budget``): ``budget(model, card=card, mem_util=MEM_UTIL, max_num_seqs=1)`` solved
    with ``solve_max_model_len``; at :data:`GLANCE_CONTEXT`, ``vllm serve``'s batch defaults for the card and
    ``solve_max_num_seqs``. The weights are the model's default checkpoint (``data/deployments.json``) or, where
    none is recorded, its config.json estimate. Raises nothing: a refusal is an answer of 0 with the note."""
    from ..engines.vllm.budget import budget, solve_max_model_len, solve_max_num_seqs

    from .frames import DEFAULT_CONTEXT, chapter_context
    from ..model.load import load_architecture

    top, _ = chapter_context(load_architecture(model))
    note = "" if top != DEFAULT_CONTEXT or load_architecture(model).max_position_embeddings else (
        f"the config states no maximum length: solved up to {DEFAULT_CONTEXT:,} tokens")
    try:
        one = budget(model, card=card, mem_util=MEM_UTIL, max_num_seqs=1, max_model_len=top)
    except KvMathError as e:
        return Answer("vLLM", model, card, None, None, note=str(e))
    largest = solve_max_model_len(one)
    seqs = None
    if GLANCE_CONTEXT <= top:
        seqs = most_sequences(model, card, GLANCE_CONTEXT)
    else:
        note = f"the model's maximum length is {top:,} tokens"
    return Answer("vLLM", model, card, largest, seqs, weights=one.weights_variant, note=note)


def most_sequences(model: str, card: str, context: int) -> int:
    """vLLM: the largest ``max_num_seqs`` whose sequences of ``context`` tokens all fit the pool at once and
    boot (``Budget.fits_max_num_seqs``), on the card at TP 1. The sampler's share of the profile run grows with
    ``max_num_seqs``, so the concurrency logged at one sequence is an upper bound; booting with N sequences
    that fit is monotone in N, so the answer is found by bisection below it. 0 when none fits."""
    from ..engines.vllm.budget import budget, solve_max_num_seqs

    def ok(n: int) -> bool:
        return budget(model, card=card, mem_util=MEM_UTIL, max_model_len=context, max_num_seqs=n).fits_max_num_seqs

    hi = solve_max_num_seqs(budget(model, card=card, mem_util=MEM_UTIL, max_model_len=context, max_num_seqs=1))
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def _no_gguf_table() -> str:
    from ..model.params import GGUF_ARCH  # the one list of families with a GGUF table from config.json

    return ("not priced: kvmath writes a GGUF tensor table from config.json only for the model types "
            f"{', '.join(GGUF_ARCH)}; give the GGUF file itself to kvmath-fit for the others")


NO_GGUF_TABLE = _no_gguf_table()


@lru_cache(maxsize=None)
def _llamacpp_inputs(model: str):
    from .. import facts
    from ..engines.llamacpp.weights import weights_from_mix
    from ..model.load import load_architecture

    arch = load_architecture(model)
    cfg = arch.extras.get("hf_config")
    if not isinstance(cfg, dict):
        cfg = facts.reference_config(model) or facts.resolve_model(model)["config"]
    tensors, _ = weights_from_mix(cfg, LLAMACPP_MIX)
    return cfg, tensors, arch.max_position_embeddings or 131072


@lru_cache(maxsize=None)
def llamacpp_answer(model: str, card: str) -> Answer:
    """llama.cpp (``kvmath.engines.llamacpp.budget.plan``, llama-server, f16 cache, flash attention auto) with
    the weights of a :data:`LLAMACPP_MIX` GGUF built from config.json: the largest ``-c`` (multiple of 256, at
    most the model's trained length) with ``-np 1`` whose device budget leaves memory to spare, and the largest
    ``-np N`` with ``-c`` = 32768·N. Not applicable (None, with the reason) for a family kvmath cannot write a
    GGUF tensor table for."""
    from ..engines.llamacpp import budget as LB
    from ..solve import last_true

    try:
        cfg, tensors, top = _llamacpp_inputs(model)
    except KvMathError as e:
        if "no GGUF tensor table" not in str(e):
            raise
        return Answer("llama.cpp", model, card, None, None, note=NO_GGUF_TABLE)

    def fits(n_ctx: int, n_parallel: int = 1) -> bool:
        s = LB.plan(model, cfg, n_ctx=n_ctx, n_parallel=n_parallel, tensors=tensors, card_id=card)[0]
        return s.budget.spare_mib >= 0

    try:
        largest = last_true(fits, 256, top, step=256) or 0
        seqs = (last_true(lambda k: fits(GLANCE_CONTEXT * k, k), 1, 256) or 0) if top >= GLANCE_CONTEXT \
            else None
    except KvMathError as e:
        return Answer("llama.cpp", model, card, None, None, note=str(e))
    return Answer("llama.cpp", model, card, largest, seqs, weights=f"{LLAMACPP_MIX} GGUF from config.json")


ENGINES = {"vLLM": vllm_answer, "llama.cpp": llamacpp_answer}
"""Engine name -> answer function ``(model_id, card_id) -> Answer``. The SGLang engine adds its entry here
(``ENGINES["SGLang"] = sglang_answer``); the tables and charts below take a list of these names."""


def answers(models, cards=GLANCE_CARDS, engines=None) -> list[Answer]:
    """Every engine's answer for every model on every card (TP 1), in that order. ``engines``: names of
    :data:`ENGINES` (default: all). Raises KvMathError for an engine it does not know."""
    engines = list(engines or ENGINES)
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise KvMathError(f"unknown engine {unknown[0]!r}; known: {', '.join(ENGINES)}")
    return [ENGINES[e](m, c) for m in models for c in cards for e in engines]


def frame(models, cards=GLANCE_CARDS, engines=None):
    """:func:`answers` as a long pandas frame: model, title, card, card_label, engine, largest_context,
    seqs_at_context (nullable integers), weights, note."""
    import pandas as pd

    from ..facts import model_title as title_of

    rows = [{"model": a.model, "title": title_of(a.model), "card": a.card, "card_label": card_label(a.card),
             "engine": a.engine, "largest_context": a.largest_context, "seqs_at_context": a.seqs_at_context,
             "weights": a.weights, "note": a.note} for a in answers(models, cards, engines)]
    out = pd.DataFrame(rows)
    for c in ("largest_context", "seqs_at_context"):
        out[c] = out[c].astype("Int64")
    return out


def tokens_text(n) -> str:
    """A token count for a table cell: ``24,304``; ``none`` for 0; ``n/a`` when missing."""
    import pandas as pd

    if n is None or pd.isna(n):
        return "n/a"
    return "none" if int(n) == 0 else f"{int(n):,}"


def _pair(largest, seqs):
    """A table cell: the largest context, and under it the sequences of 32k (left out when nothing starts)."""
    import pandas as pd

    if largest is None or pd.isna(largest) or int(largest) == 0:
        return tokens_text(largest)
    return (tokens_text(largest), f"{tokens_text(seqs)} × 32k" if seqs is not None and not pd.isna(seqs)
            else "n/a × 32k")


def glance_table(f, *, caption: str = "") -> str:
    """Every engine's answers as one reflowing HTML table: a row per model and engine, a column per card class,
    each cell the largest context of one sequence over the sequences of 32k tokens served at once. The cards
    are named once, in the caption. At phone width every row becomes a block of labelled lines."""
    from .tables import reflow_table

    cards = list(dict.fromkeys(f["card"]))
    rows = []
    for (title, engine), g in f.groupby(["title", "engine"], sort=False):
        by_card = {r.card: _pair(r.largest_context, r.seqs_at_context) for r in g.itertuples()}
        rows.append([title, engine] + [by_card[c] for c in cards])
    named = "; ".join(f"{card_class(c)}: {card_label(c).rsplit(' (', 1)[0]}" for c in cards)
    return reflow_table(["model", "engine"] + [card_class(c) for c in cards], rows,
                        caption=f"{caption} Cards: {named}." if caption else f"Cards: {named}.")


def chapter_table(f, *, caption: str = "") -> str:
    """One model's answers (``frame([model])``) as a small reflowing HTML table: a row per card, a column per
    engine, each cell the largest context of one sequence over the sequences of 32k served at once."""
    from .tables import reflow_table

    engines = list(dict.fromkeys(f["engine"]))
    rows = []
    for label, g in f.groupby("card_label", sort=False):
        by = {r.engine: r for r in g.itertuples()}
        rows.append([label] + [_pair(by[e].largest_context, by[e].seqs_at_context) for e in engines])
    return reflow_table(["card"] + engines, rows, caption=caption)


def notes(f) -> list[str]:
    """The frame's notes, each said once with the models it concerns: ``engine (models): text``."""
    by = {}
    for r in f.itertuples():
        if r.note:
            by.setdefault((r.engine, r.note), []).append(r.title)
    return [f"{e} ({', '.join(dict.fromkeys(t))}): {n}" for (e, n), t in by.items()]


def heatmap(f, *, title: str = "Largest context of one sequence, TP 1"):
    """Altair heatmap: a row per model, a column per card, the colour the largest context (log scale) and the
    figure written in the cell; an engine menu picks the engine. At most ~500 px tall."""
    import altair as alt

    d = f.assign(context=f["largest_context"].astype("float"),
                 label=[tokens_text(v) for v in f["largest_context"]])
    d = d[["title", "card_label", "engine", "context", "label"]].copy()
    d["shade"] = d["context"].where(d["context"] > 0)
    engines = list(dict.fromkeys(d["engine"]))
    pick = alt.param(name="engine", value=engines[0],
                     bind=alt.binding_select(options=engines, name="engine "))
    cards = list(dict.fromkeys(d["card_label"]))
    models = list(dict.fromkeys(d["title"]))
    base = alt.Chart(d).transform_filter(alt.datum.engine == pick).encode(
        x=alt.X("card_label:N", sort=cards, title=None, axis=alt.Axis(labelAngle=-30, labelLimit=120)),
        y=alt.Y("title:N", sort=models, title=None, axis=alt.Axis(labelLimit=150)))
    rect = base.mark_rect().encode(
        color=alt.Color("shade:Q", scale=alt.Scale(type="log", scheme="blues"),
                        legend=alt.Legend(title="tokens", orient="bottom", format="~s")),
        tooltip=["title", "card_label", "engine", alt.Tooltip("label:N", title="largest context")])
    text = base.mark_text(fontSize=10).encode(
        text="label:N", color=alt.condition("datum.context > 60000", alt.value("white"), alt.value("black")))
    height = min(440, 18 * len(models))
    return (rect + text).add_params(pick).properties(width=460, height=height, title=title)
