"""Altair charts for the book. Sliders are Vega-Lite parameters bound to HTML inputs, so they work
in the static page with no kernel: the data are computed by kvmath over a grid in Python, and the
chart only filters and scales them in the browser.

Altair is imported inside each function (``import kvmath`` stays light).
"""

from __future__ import annotations

GIB = 2**30

#: Chart width (px). A fixed width, not Vega-Lite's "container": vega-embed's .vega-embed element is an
#: inline-block, so a "container" chart drew 0 px wide in the book (tests/test_pages.py, every model
#: chapter), and JupyterChart in JupyterLab has the same zero first render (vega/altair#3328). The book
#: narrows a fixed-width chart to its column instead (tools/book_assets.py's vegaEmbed wrapper, 390 px).
WIDTH = 560


def tp_changes_data(frame, value_columns=("growing_bytes", "fixed_bytes"), *, weights: bool = False) -> bool:
    """Whether picking another TP changes any figure of ``frame`` (columns tp plus ``value_columns``,
    the rest identifying a row): False when every TP draws the same numbers (an MLA model's latent cache,
    one copy per card whatever TP, and no weights line). ``weights``: a weights line is drawn (it is
    divided by TP, so TP always matters). A control that changes nothing is left out of the chart."""
    tps = sorted(set(int(t) for t in frame["tp"]))
    if weights and len(tps) > 1:
        return True
    if len(tps) < 2:
        return False
    keys = [c for c in frame.columns if c not in (*value_columns, "tp")]
    first = frame[frame["tp"] == tps[0]].set_index(keys)[list(value_columns)].sort_index()
    for t in tps[1:]:
        other = frame[frame["tp"] == t].set_index(keys)[list(value_columns)].sort_index()
        if not other.index.equals(first.index) or not (other.values == first.values).all():
            return True
    return False


def memory_vs_context(frame, *, title: str, card_gib: float = 24.0, max_seqs: int = 16,
                      default_format: str | None = None, default_tp: int | None = None,
                      weights_gb: float | None = None):
    """Per-card memory (GiB) against context, one line per term, from ``kvmath.report.curve_frame``.

    Bound inputs: KV format (select), TP (radio), sequences (slider; the cache terms scale with it)
    and card memory (slider; drawn as a horizontal rule). ``frame`` columns: format, tp, ctx,
    growing_bytes, fixed_bytes (per sequence, per card, bytes). ``weights_gb`` (decimal GB, the whole
    checkpoint) adds a weights line, divided by TP, and makes the total weights + cache.

    The TP control is left out when every TP draws the same lines (:func:`tp_changes_data`: an MLA
    latent cache is one copy per card at any TP, and with no weights line nothing else depends on TP);
    the chart then shows the first TP of ``frame``, and its title says the lines hold for every TP.
    """
    import altair as alt

    formats = list(dict.fromkeys(frame["format"]))
    tps = sorted(set(int(t) for t in frame["tp"]))
    fmt = alt.param(name="kv_format", value=default_format or formats[0],
                    bind=alt.binding_select(options=formats, name="KV format "))
    tp_bound = tp_changes_data(frame, weights=bool(weights_gb))
    if tp_bound:
        tp = alt.param(name="tp", value=default_tp or tps[0],
                       bind=alt.binding_radio(options=tps, name="TP "))
    else:
        tp = alt.param(name="tp", value=tps[0])  # fixed: no control that would change nothing
        if len(tps) > 1:
            title = f"{title} (the same at TP {', '.join(map(str, tps))})"
    seqs = alt.param(name="seqs", value=1, bind=alt.binding_range(min=1, max=max_seqs, step=1, name="sequences "))
    card = alt.param(name="card_gib", value=card_gib,
                     bind=alt.binding_range(min=8, max=96, step=1, name="card memory (GiB) "))

    weights = f"{(weights_gb or 0) * 1e9} / datum.tp / {GIB}"
    terms = ["growing", "fixed", "total"] + (["weights"] if weights_gb else [])
    base = alt.Chart(frame).transform_filter(
        (alt.datum.format == fmt) & (alt.datum.tp == tp)
    ).transform_calculate(
        growing=f"datum.growing_bytes * seqs / {GIB}",
        fixed=f"datum.fixed_bytes * seqs / {GIB}",
        weights=weights,
        total=f"(datum.growing_bytes + datum.fixed_bytes) * seqs / {GIB} + {weights}",
    ).transform_fold(terms, as_=["term", "gib"])

    lines = base.mark_line().encode(
        x=alt.X("ctx:Q", title="context per sequence (tokens)", axis=alt.Axis(format="~s")),
        y=alt.Y("gib:Q", title="per card (GiB)"),
        color=alt.Color("term:N", title="term", sort=["total", "weights", "growing", "fixed"]),
        tooltip=[alt.Tooltip("ctx:Q", format=","), "term:N", alt.Tooltip("gib:Q", format=".3f")],
    )
    import pandas as pd

    rule = alt.Chart(pd.DataFrame({"row": [0]})).transform_calculate(card="card_gib").mark_rule(
        strokeDash=[6, 4], color="firebrick"
    ).encode(y="card:Q")
    return (lines + rule).add_params(fmt, tp, seqs, card).properties(title=title, width=WIDTH, height=300)


def per_token_bars(frame, *, title: str):
    """Bars of growing KV bytes per token per card by format, one colour per TP (``report.per_token_frame``)."""
    import altair as alt

    return alt.Chart(frame).mark_bar().encode(
        y=alt.Y("format:N", sort=None, title=None),
        x=alt.X("bytes_per_token:Q", title="bytes per token per card"),
        color=alt.Color("tp:O", title="TP"),
        yOffset="tp:O",
        tooltip=["format", "tp", alt.Tooltip("bytes_per_token:Q", format=",")],
    ).properties(title=title, width=WIDTH)


def activation_lines(frame, *, title: str, seqs_choices, tp_choices):
    """The profile run's peak (MiB per card) against ``max_num_batched_tokens``, one line per phase, with
    bound inputs for ``max_num_seqs`` and TP (``kvmath.book.frames.activation_grid``: columns
    max_num_batched_tokens, max_num_seqs, tp, phase, mib)."""
    import altair as alt

    seqs = alt.param(name="act_seqs", value=int(seqs_choices[0]),
                     bind=alt.binding_select(options=[int(s) for s in seqs_choices], name="max_num_seqs "))
    tp = alt.param(name="act_tp", value=int(tp_choices[0]),
                   bind=alt.binding_radio(options=[int(t) for t in tp_choices], name="TP "))
    return alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("max_num_batched_tokens:Q", scale=alt.Scale(type="log", base=2), title="max_num_batched_tokens"),
        y=alt.Y("mib:Q", title="MiB per card"),
        color=alt.Color("phase:N", title="phase"),
        tooltip=["phase", alt.Tooltip("max_num_batched_tokens:Q", format=","), alt.Tooltip("mib:Q", format=",.1f")],
    ).add_params(seqs, tp).transform_filter(
        (alt.datum.max_num_seqs == seqs) & (alt.datum.tp == tp)).properties(title=title, width=WIDTH)


def probe_start(contexts, refusal: int | None, preferred: int | None = None) -> int:
    """Where a probe slider starts: the point of the grid ``contexts`` nearest ``preferred`` (e.g. the
    preset's own max_model_len) unless that is the refusal context, else the grid point nearest half the refusal context
    (inside the booting range, never on the refusal line itself), else the grid's middle."""
    grid = sorted(int(c) for c in contexts)
    if preferred is not None:
        near = min(grid, key=lambda c: abs(c - int(preferred)))  # the slider's grid point nearest it
        if near != refusal:
            return near
    if refusal:
        below = [c for c in grid if c < refusal] or [c for c in grid if c != refusal] or grid
        return min(below, key=lambda c: abs(c - refusal / 2))
    return grid[len(grid) // 2]


def budget_probe(curve, *, title: str, refusal_context: int | None, start: int | None = None,
                 step: int | None = None):
    """A preset's budget against ``max_model_len`` with a probe: the lines of ``curve`` (long form:
    context, term, GiB per card; ``kvmath.book.frames.chapter_frames(...)["curve"]``), vLLM's refusal
    context as a dashed red rule, and a grey rule moved by a "context" slider with a readout of every
    term at the probe (text marks: GiB per card, and the context itself at the top).

    The slider runs over the grid of ``curve`` (its step is the grid's, ``step``, so the readout reads
    exact rows, not interpolations) and starts at ``start`` (:func:`probe_start`: not on the refusal
    line). ``refusal_context`` None: no refusal rule; 0: the rule at 0 (no context boots)."""
    import altair as alt
    import pandas as pd

    grid = sorted(set(int(c) for c in curve["context"]))
    if step is None:
        steps = {b - a for a, b in zip(grid, grid[1:])}
        step = steps.pop() if len(steps) == 1 else 1024
    start = start if start is not None else probe_start(grid, refusal_context)
    probe = alt.param(name="probe", value=int(start),
                      bind=alt.binding_range(min=grid[0], max=grid[-1], step=step, name="context "))
    color = alt.Color("term:N", title=None, legend=alt.Legend(orient="bottom", columns=2, labelLimit=0))
    lines = alt.Chart(curve).mark_line().encode(
        x=alt.X("context:Q", title="max_model_len (tokens)", axis=alt.Axis(format="~s")),
        y=alt.Y("GiB:Q", title="per card (GiB)"),
        color=color,
        tooltip=[alt.Tooltip("context:Q", format=","), "term:N", alt.Tooltip("GiB:Q", format=".2f")],
    )
    at_probe = alt.Chart(curve).transform_filter(alt.datum.context == probe)
    points = at_probe.mark_point(filled=True, size=40).encode(x="context:Q", y="GiB:Q", color=color)
    # labels on the side of the probe with more room (left of it in the right half of the axis)
    right_half = f"probe > {(grid[0] + grid[-1]) / 2}"
    align = alt.expr(f"{right_half} ? 'right' : 'left'")
    dx = alt.expr(f"{right_half} ? -6 : 6")
    readout = at_probe.transform_calculate(label="format(datum.GiB, ',.2f') + ' GiB'").mark_text(
        align=align, dx=dx, dy=-6, fontSize=11).encode(x="context:Q", y="GiB:Q", text="label:N", color=color)
    rule_frame = pd.DataFrame({"row": [0]})
    rule = alt.Chart(rule_frame).transform_calculate(x="probe").mark_rule(color="gray").encode(x="x:Q")
    where = alt.Chart(rule_frame).transform_calculate(
        x="probe", label="'max_model_len ' + format(probe, ',')").mark_text(
        align=align, dx=dx, baseline="bottom", y=alt.expr("height - 4"), fontSize=11, color="gray").encode(
        x="x:Q", text="label:N")
    layers = [lines, rule, points, readout, where]
    if refusal_context is not None:  # 0: nothing boots, the whole axis is refused
        layers.insert(1, alt.Chart(pd.DataFrame({"x": [int(refusal_context)]})).mark_rule(
            color="firebrick", strokeDash=[6, 4]).encode(x="x:Q"))
    return alt.layer(*layers).add_params(probe).properties(width=WIDTH, height=280, title=title)


def live_memory(frame, *, ctx: int, seqs: int, title: str, weights_gb: float | None = None):
    """The live notebook's figure (no bound inputs: ipywidgets redraw it): per-card memory (GiB) against
    context for ONE format and TP, from ``kvmath.book.frames.curve_frame`` (columns ctx, tp,
    growing_bytes, fixed_bytes per sequence per card), times ``seqs`` sequences, plus the weights
    (``weights_gb``, decimal GB for the whole checkpoint, divided by TP) when known; a grey rule at the
    chosen context ``ctx`` with the total there written next to it."""
    import altair as alt
    import pandas as pd

    rows = []
    for r in frame.itertuples():
        w = (weights_gb or 0) * 1e9 / int(r.tp) / GIB
        terms = {"growing": r.growing_bytes * seqs / GIB, "fixed": r.fixed_bytes * seqs / GIB}
        if weights_gb:
            terms["weights"] = w
        terms["total"] = sum(terms.values())
        rows += [{"ctx": int(r.ctx), "term": k, "gib": v} for k, v in terms.items()]
    data = pd.DataFrame(rows)
    color = alt.Color("term:N", title="term", sort=["total", "weights", "growing", "fixed"])
    lines = alt.Chart(data).mark_line().encode(
        x=alt.X("ctx:Q", title="context per sequence (tokens)", axis=alt.Axis(format="~s")),
        y=alt.Y("gib:Q", title="per card (GiB)"), color=color,
        tooltip=[alt.Tooltip("ctx:Q", format=","), "term:N", alt.Tooltip("gib:Q", format=".3f")])
    at = data[(data["ctx"] == ctx) & (data["term"] == "total")]
    marks = alt.Chart(pd.DataFrame({"ctx": [int(ctx)]})).mark_rule(color="gray").encode(x="ctx:Q")
    layers = [lines, marks]
    if len(at):
        label = at.assign(label=[f"{v:,.2f} GiB at {int(c):,} tokens" for c, v in zip(at["ctx"], at["gib"])])
        right = ctx > (data["ctx"].min() + data["ctx"].max()) / 2
        layers.append(alt.Chart(label).mark_text(align="right" if right else "left", dx=-6 if right else 6,
                                                 dy=-8, fontSize=11).encode(x="ctx:Q", y="gib:Q", text="label:N"))
    return alt.layer(*layers).properties(title=title, width=WIDTH, height=260)


BUDGET_TERMS = ("weights", "activation peak", "CUDA graphs", "memory outside PyTorch", "KV cache (one request)")
"""The terms of vLLM's budget the memory-against-context chart stacks, bottom to top."""


def budget_terms(frame, *, title: str, default_card: str | None = None, height: int = 300):
    """Every term of vLLM's budget per card, stacked, against ``max_model_len``, under the card's limit.

    ``frame`` (``kvmath.book.chapter.budget_curve``): card, card_label, context, term (one of
    :data:`BUDGET_TERMS`), gib, limit_gib (requested = total x gpu_memory_utilization), largest (the solver's
    largest context on that card, 0 if none). A card menu picks the card; the limit is a labelled dashed line,
    the solver's answer a labelled vertical rule where the stack crosses it. Distinct colours per term.
    """
    import altair as alt

    labels = list(dict.fromkeys(frame["card_label"]))
    pick = alt.param(name="card", value=default_card or labels[0],
                     bind=alt.binding_select(options=labels, name="card "))
    order = {t: i for i, t in enumerate(BUDGET_TERMS)}
    data = frame.assign(order=frame["term"].map(order), context_k=frame["context"] / 1024)
    base = alt.Chart(data).transform_filter(alt.datum.card_label == pick)
    area = base.mark_area(opacity=0.85).encode(
        x=alt.X("context:Q", title="max_model_len (tokens, one sequence)", axis=alt.Axis(format="~s")),
        y=alt.Y("gib:Q", stack="zero", title="GiB per card"),
        color=alt.Color("term:N", sort=list(BUDGET_TERMS), scale=alt.Scale(
            domain=list(BUDGET_TERMS), range=["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756"]),
            legend=alt.Legend(title=None, orient="bottom", columns=2)),
        order=alt.Order("order:Q"),
        tooltip=["term", alt.Tooltip("context:Q", format=","), alt.Tooltip("gib:Q", format=",.2f")])
    limits = frame.drop_duplicates("card_label")[["card_label", "limit_gib", "largest", "total_gib", "mem_util"]]
    lim = alt.Chart(limits).transform_filter(alt.datum.card_label == pick)
    rule = lim.mark_rule(strokeDash=[6, 4], color="black").encode(y="limit_gib:Q")
    rule_text = lim.mark_text(align="left", dx=4, dy=-6, fontSize=11).encode(
        x=alt.value(0), y="limit_gib:Q",
        text=alt.Text("limit_text:N")).transform_calculate(
        limit_text="'limit ' + format(datum.limit_gib, ',.2f') + ' GiB = ' + format(datum.mem_util, '.2f') + "
                   "' x ' + format(datum.total_gib, ',.2f') + ' GiB'")
    cross = lim.transform_filter(alt.datum.largest > 0).mark_rule(color="#e45756", strokeWidth=2).encode(
        x="largest:Q")
    cross_text = lim.transform_filter(alt.datum.largest > 0).mark_text(
        align="right", dx=-4, y=12, fontSize=11, color="#b03030").encode(
        x="largest:Q", text="cross_text:N").transform_calculate(
        cross_text="'largest context ' + format(datum.largest, ',') + ' tokens'")
    return (area + rule + rule_text + cross + cross_text).add_params(pick).properties(
        width=WIDTH, height=height, title=title)
