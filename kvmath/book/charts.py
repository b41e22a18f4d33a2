"""Altair charts for the book. Sliders are Vega-Lite parameters bound to HTML inputs, so they work
in the static page with no kernel: the data are computed by kvmath over a grid in Python, and the
chart only filters and scales them in the browser.

Altair is imported inside each function (``import kvmath`` stays light).
"""

from __future__ import annotations

GIB = 2**30


def memory_vs_context(frame, *, title: str, card_gib: float = 24.0, max_seqs: int = 16,
                      default_format: str | None = None, default_tp: int | None = None,
                      weights_gb: float | None = None):
    """Per-card memory (GiB) against context, one line per term, from ``kvmath.report.curve_frame``.

    Bound inputs: KV format (select), TP (radio), sequences (slider; the cache terms scale with it)
    and card memory (slider; drawn as a horizontal rule). ``frame`` columns: format, tp, ctx,
    growing_bytes, fixed_bytes (per sequence, per card, bytes). ``weights_gb`` (decimal GB, the whole
    checkpoint) adds a weights line, divided by TP, and makes the total weights + cache.
    """
    import altair as alt

    formats = list(dict.fromkeys(frame["format"]))
    tps = sorted(set(int(t) for t in frame["tp"]))
    fmt = alt.param(name="kv_format", value=default_format or formats[0],
                    bind=alt.binding_select(options=formats, name="KV format "))
    tp = alt.param(name="tp", value=default_tp or tps[0],
                   bind=alt.binding_radio(options=tps, name="TP "))
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
    return (lines + rule).add_params(fmt, tp, seqs, card).properties(title=title, width=560, height=300)


def per_token_bars(frame, *, title: str):
    """Bars of growing KV bytes per token per card by format, one colour per TP (``report.per_token_frame``)."""
    import altair as alt

    return alt.Chart(frame).mark_bar().encode(
        y=alt.Y("format:N", sort=None, title=None),
        x=alt.X("bytes_per_token:Q", title="bytes per token per card"),
        color=alt.Color("tp:O", title="TP"),
        yOffset="tp:O",
        tooltip=["format", "tp", alt.Tooltip("bytes_per_token:Q", format=",")],
    ).properties(title=title, width=520)


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
        (alt.datum.max_num_seqs == seqs) & (alt.datum.tp == tp)).properties(title=title, width=520)
