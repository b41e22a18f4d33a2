"""What a model chapter computes and shows, as functions: ``notebooks/model_chapter.md`` calls them.

The template keeps the prose (Markdown with ``{eval}`glued.x``` numbers) and a few small visible cells with
the kvmath calls that produce its key figures; everything else is here. :class:`ModelChapter` holds what a
chapter decides once (the context, the formats vLLM accepts, the flags, the reference derivation) and has one
method per section, each displaying its tables and gluing its numbers in the cell that calls it. Nothing here
names a model: every choice comes from the architecture (see :mod:`kvmath.book.prose` for the prose that depends
on it). What every chapter would say alike (what the terms are, how a table or chart is read) is on one page,
``book/reading_a_chapter.md``, which each section links to.

pandas, Altair and IPython are imported inside the functions that use them.
"""

from __future__ import annotations

from ..engines.vllm.settings import SERVE_GPU_MEMORY_UTILIZATION
from ..units import GiB, MiB
from . import tables
from .prose import KIND_WORDS


def budget_curve(model, cards, *, max_ctx: int, mem_util: float = SERVE_GPU_MEMORY_UTILIZATION, points: int = 12,
                 **vllm_flags):
    """vLLM's budget per card against ``max_model_len``, term by term, for the memory-against-context chart.

    For each card (TP 1, one sequence, ``gpu_memory_utilization`` ``mem_util``, ``vllm serve``'s batch defaults
    for the card, ``vllm_flags`` on top): ``kvmath.engines.vllm.budget.budget`` at ``points`` lengths up to
    ``max_ctx`` plus the solver's answer ``solve_max_model_len`` and one token past it, so the stack crosses
    the limit exactly where the solver says. Returns a long pandas frame: card, card_label, context, term
    (:data:`kvmath.book.charts.BUDGET_TERMS`), gib, limit_gib (requested: total x mem_util), total_gib,
    mem_util, largest (the solver's answer, tokens; 0 when no length starts). Terms: weights (+ drafter),
    activation peak (the profile run's torch peak + GDN warm-up + fitted activation), CUDA graphs, memory
    outside PyTorch (fitted constant + model offset), KV cache of one request (vLLM's needed bytes + reserved
    draft KV). Their sum is ``non_kv + kv_per_request``; vLLM starts when it is at most the limit.
    """
    import pandas as pd

    from ..engines.vllm.budget import budget, solve_max_model_len
    from .glance import card_label

    rows = []
    for card in cards:
        b0 = budget(model, card=card, mem_util=mem_util, max_num_seqs=1, max_model_len=max_ctx, **vllm_flags)
        largest = solve_max_model_len(b0)
        grid = {max(1, max_ctx * k // points) for k in range(1, points + 1)} | {1024 if max_ctx > 1024 else max_ctx}
        if 0 < largest < max_ctx:
            grid |= {largest, largest + 1}
        for L in sorted(grid):
            b = budget(model, card=card, mem_util=mem_util, max_num_seqs=1, max_model_len=L, **vllm_flags)
            terms = (b.weights + b.drafter_weights, b.profile_peak + b.activation, b.cudagraph,
                     b.overhead + b.model_offset, b.kv_per_request + b.draft_kv)
            for term, v in zip(("weights", "activation peak", "CUDA graphs", "memory outside PyTorch",
                                "KV cache (one request)"), terms):
                rows.append({"card": card, "card_label": card_label(card), "context": L, "term": term,
                             "bytes": v, "gib": v / GiB, "limit_bytes": b.requested, "limit_gib": b.requested / GiB,
                             "total_gib": b.total_bytes / GiB, "mem_util": mem_util, "largest": largest})
    return pd.DataFrame(rows)


def crossing(curve, card: str) -> int:
    """The largest context of ``curve`` (``budget_curve``) on ``card`` whose stacked terms stay within the
    limit, 0 if none: where the chart's stack crosses the limit line."""
    c = curve[curve["card"] == card]
    total = c.groupby("context")["bytes"].sum()
    limit = int(c["limit_bytes"].iloc[0])
    inside = [int(L) for L, t in total.items() if t <= limit]
    return max(inside, default=0)


class ModelChapter:
    """One model chapter's choices and sections (see the module docstring).

    ``model``: a known id or a config.json path; the other arguments are the template's parameters.
    """

    def __init__(self, model, *, title: str = "", formats=(), tps=(1, 2, 4, 8), reference_format: str = "bf16",
                 ctx: int = 0, seqs: int = 1, max_num_batched_tokens: int = 2048, card_gib: float = 24,
                 budget_cards=None, mem_util: float = SERVE_GPU_MEMORY_UTILIZATION):
        import kvmath
        from . import frames as report

        self.model, self.seqs, self.mem_util, self.card_gib = model, seqs, mem_util, card_gib
        self.max_num_batched_tokens = max_num_batched_tokens
        self.tps = tuple(tps)
        self.budget_cards = list(budget_cards or report.BUDGET_CARDS)
        self.arch = arch = kvmath.load_architecture(model)
        self.counts = arch.layer_type_counts()
        self.is_known = model in kvmath.facts.deployments()
        self.in_doc = model in report.source_doc()["per_token_tp1"]
        self.name = title or arch.name
        self.valid = kvmath.valid_tp(arch, "vllm", tuple(tps))
        if not ctx:
            self.ctx, self.ctx_text = report.chapter_context(arch)
        else:
            self.ctx, self.ctx_text = ctx, f"{ctx:,} tokens (the chapter's parameter)"
        self.verdicts = report.format_verdicts(arch, list(formats) or None, max_ctx=self.ctx)
        self.accepted = [f for f, why in self.verdicts.items() if why is None]
        self.refused_formats = {f: why for f, why in self.verdicts.items() if why is not None}
        self.reference_format = reference_format if reference_format in self.accepted else self.accepted[0]
        self.vllm_flags, self.prefix_refusal = report.vllm_chapter_flags(arch, self.reference_format, self.ctx,
                                                                         max_num_batched_tokens)
        self.prefix_off = {k: v for k, v in self.vllm_flags.items() if k == "enable_prefix_caching"}
        self.ref = kvmath.derive(arch, engine="vllm", kv_format=self.reference_format, tp=1, max_ctx=self.ctx,
                                 max_num_seqs=seqs, **self.vllm_flags)
        self.state_kinds = sorted({g.kind for g in self.ref.groups if g.is_state})
        self.n_mla = len(arch.mla_layers())
        self.notes: list[str] = []
        self._shown = 0
        self.weights_gb = None

    # --- notes under tables -------------------------------------------------------------------------
    def note(self, text: str) -> str:
        """Number a long message for the notes under a table; returns its marker."""
        if text not in self.notes:
            self.notes.append(text)
        return f"[{self.notes.index(text) + 1}]"

    def show_notes(self, first: int | None = None) -> None:
        """Show the notes not yet on the page (numbered as their markers)."""
        from IPython.display import Markdown, display

        first = self._shown if first is None else max(first, self._shown)
        if len(self.notes) > first:
            display(Markdown("\n".join(f"{i + 1}. {t}" for i, t in enumerate(self.notes) if i >= first)))
        self._shown = len(self.notes)

    # --- sections -------------------------------------------------------------------------------------
    def glue_overview(self) -> None:
        """The numbers the overview and later prose quote."""
        from myst_nb import glue as glue_obj

        from . import frames as report
        from .glue import glue

        arch, counts, ref = self.arch, self.counts, self.ref
        glue("n_layers", arch.num_hidden_layers)
        glue("n_full", counts.get("full_attention", 0))
        glue("n_sliding", counts.get("sliding_attention", 0))
        glue("n_linear", counts.get("linear_attention", 0))
        glue("n_state_layers", sum(g.n_layers for g in ref.groups if g.is_state))
        glue("max_num_batched_tokens", self.max_num_batched_tokens)
        glue("mem_util", self.mem_util, fmt="{:g}")
        glue("ctx_tokens", self.ctx)
        glue("seqs", self.seqs)
        glue("ref_bytes_per_token", ref.bytes_per_token)
        glue("ref_total_gib", ref.total_bytes / GiB, fmt=",.2f")
        glue_obj("model_name", self.name, display=False)
        glue_obj("pattern", report.layer_pattern(arch), display=False)
        glue_obj("ref_format", self.reference_format, display=False)
        glue_obj("ctx_text", self.ctx_text, display=False)
        glue_obj("valid_tps", ", ".join(map(str, self.valid)), display=False)

    def first_screen(self, engines=None) -> None:
        """The model's verdicts on the common cards (``kvmath.book.glance``), a small reflowing table, with the
        notes said once under it. ``engines``: names of ``glance.ENGINES`` (default all; SGLang joins there)."""
        from IPython.display import Markdown, display

        from . import glance, tables

        f = glance.frame([self.model], engines=engines)
        from .prose import glance_sentences

        display(Markdown(" ".join(glance_sentences(self, f))))
        tables.show(glance.chapter_table(f, caption=(
            f"{self.name}, one card, TP 1: longest context of one sequence (tokens) / sequences of 32k at once; "
            "none: does not start; n/a: not priced")))
        weights = "; ".join(dict.fromkeys(f"{r.engine} weights: {r.weights}" for r in f.itertuples() if r.weights))
        lines = [weights] + glance.notes(f)
        display(Markdown("\n".join(f"- {n}" for n in lines if n)))

    def prefix_note(self) -> None:
        from IPython.display import Markdown, display

        from .frames import shorten

        if self.prefix_refusal:
            display(Markdown(
                "With prefix caching on (vLLM's default) kvmath does not derive this model: "
                f"{shorten(self.prefix_refusal, 160)} {self.note(self.prefix_refusal)} Every vLLM figure in this "
                "chapter is therefore for `--no-enable-prefix-caching`."))
            self.show_notes()

    def architecture(self):
        """The layer groups table and the pattern sentence."""
        import pandas as pd
        from IPython.display import Markdown, display

        from . import frames as report
        from .prose import layer_summary

        arch = self.arch
        display(Markdown(f"Source: `{arch.source}`" if arch.source else "Source: a config dict"))
        display(Markdown(layer_summary(self)))
        groups = pd.DataFrame([{"layers": report.layer_kind_label(g), "count": g.n_layers, "first index": g.layers[0],
                                "what it caches": g.description} for g in self.ref.groups if g.kind != "padding"])
        tables.show(tables.frame_table(groups))

    def growing(self) -> None:
        """The growing term worked out for this model (:func:`kvmath.book.prose.growing_paragraph`)."""
        from IPython.display import Markdown, display

        from .prose import growing_paragraph

        display(Markdown(growing_paragraph(self)))

    def per_token(self):
        """The bytes-per-token table (formats x TP), glued per TP for the reference format."""
        import pandas as pd
        from IPython.display import display

        from . import frames as report
        from .glue import glue

        self.per_tok = report.per_token_frame(self.arch, "vllm", list(self.verdicts), tuple(self.valid),
                                              max_ctx=min(self.ctx, 4096))
        pt, rf = self.per_tok, self.reference_format
        for tp in self.valid:
            glue(f"bytes_per_token_{rf}_tp{tp}", int(pt[(pt["format"] == rf) & (pt["tp"] == tp)]["bytes_per_token"]
                                                     .iloc[0]))
        cell = {}
        for r in pt.itertuples():
            cell[r.format, f"TP {r.tp}"] = (f"{int(r.bytes_per_token):,}" if not r.refused
                                            else f"refused {self.note(r.refused)}")
        cols = [f"TP {tp}" for tp in self.valid]
        table = pd.DataFrame({"format": list(self.verdicts), **{c: [cell[f, c] for f in self.verdicts] for c in cols}})
        tables.show(tables.frame_table(table))  # one header row (a named index made an empty second one)
        self.show_notes()

    def per_token_chart(self):
        from . import charts

        if self.ref.bytes_per_token:
            return charts.per_token_bars(self.per_tok[self.per_tok["refused"] == ""],
                                         title=f"{self.name}: growing KV per token per card (vLLM)")
        return None

    def allocation(self) -> None:
        """What vLLM allocates per format for one request of the chapter's context."""
        import pandas as pd
        from IPython.display import Markdown, display

        import kvmath
        from ..engines.vllm import alloc as vllm_alloc

        arch, ctx, flags = self.arch, self.ctx, self.vllm_flags
        first_note = len(self.notes)
        rows = []
        for fmt in self.accepted:
            p = vllm_alloc.plan(arch, 1 << 50, max_model_len=ctx, kv_cache_dtype=fmt, **flags)
            d = kvmath.derive(arch, engine="vllm", kv_format=fmt, max_ctx=ctx, **flags) if p.boots else None
            # what one request's tokens and state occupy, before vLLM rounds them to blocks and pages
            content = None if d is None else sum(
                g.bytes_per_token * g.n_layers * (min(ctx, arch.layers[g.layers[0]].sliding_window) if g.sliding
                                                  else ctx)
                + sum(t.nbytes for t in g.state) * g.n_layers
                for g in d.groups if g.owns_cache and g.kind != "padding")
            rows.append({
                "format": fmt, "tokens per block": f"{p.block_size:,}",
                "cache content (GiB)": f"{content / GiB:,.2f}" if d else "refused",
                "vLLM needs (GiB)": f"{p.needed_bytes / GiB:,.2f}" if p.boots else "refused",
                "start-up check": "passes" if p.boots else f"refused {self.note(p.refusal or 'refused')}",
                "_needs": p.needed_bytes if p.boots else None, "_content": content})
        ref_row = next(r for r in rows if r["format"] == self.reference_format)
        if ref_row["_needs"] is not None:
            display(Markdown(self._allocation_sentence(ref_row)))
        refused_here = [r["format"] for r in rows if r["_needs"] is None]
        if refused_here:
            display(Markdown(f"With these flags vLLM refuses to start with {', '.join(refused_here)}: the reason is "
                             "in the last column and the notes."))
        tables.show(tables.frame_table(pd.DataFrame(rows).drop(columns=["_needs", "_content"])))
        if self.refused_formats:
            display(Markdown(f"Not in the table: {', '.join(self.refused_formats)}, which vLLM refuses for this model "
                             "at any context (the per-token table's notes say why)."))
        self.show_notes(first_note)

    def _allocation_sentence(self, row) -> str:
        """What vLLM asks for beside what one request's tokens and state occupy, and where the difference
        comes from in this model (block rounding; window plus a scheduler step; pages stretched for state)."""
        needs, content, fmt = row["_needs"], row["_content"], self.reference_format
        what = "keys, values and state" if self.state_kinds else "keys and values"
        extra = needs / content - 1 if content else 0.0
        if extra < 0.01:
            return (f"At {fmt}, vLLM's start-up check asks for {needs / GiB:,.2f} GiB for one request of "
                    f"{self.ctx:,} tokens: its {what}, in blocks of {row['tokens per block']} tokens, with under 1 % "
                    "lost to rounding.")
        why = ("its attention pages stretched to hold a recurrent state, and the state blocks prefix caching keeps"
               if self.state_kinds else
               "each sliding layer's window plus one scheduler step of `max_num_batched_tokens`, rounded to blocks"
               if self.counts.get("sliding_attention") else "pages padded to a common size")
        return (f"At {fmt}, one request of {self.ctx:,} tokens has {content / GiB:,.2f} GiB of {what}, and vLLM's "
                f"start-up check asks for {needs / GiB:,.2f} GiB, {extra:.0%} more: {why} (blocks of "
                f"{row['tokens per block']} tokens).")

    def fixed(self) -> None:
        """The fixed term per engine (sliding window, recurrent state), with a paragraph per state kind."""
        import pandas as pd
        from IPython.display import Markdown, display

        import kvmath
        from .glue import glue
        from .prose import state_paragraphs

        engines = [("vllm", self.reference_format, self.vllm_flags), ("llama.cpp", "f16", {}),
                   ("transformers", None, {})]
        label = {"vllm": "vLLM", "llama.cpp": "llama.cpp", "transformers": "transformers"}
        first_note = len(self.notes)
        rows = []
        for eng, fmt, extra in engines:
            try:
                d = kvmath.derive(self.arch, engine=eng, kv_format=fmt, tp=1, max_ctx=self.ctx, max_num_seqs=1,
                                  **extra)
            except kvmath.KvMathError as e:
                rows.append({"engine": label[eng], "term": f"refused {self.note(str(e))}", "tokens held": "",
                             "bytes per sequence": ""})
                continue
            for g in d.groups:
                if g.sliding and g.owns_cache:
                    rows.append({"engine": label[eng], "term": "sliding-window KV", "tokens held": f"{g.cells:,}",
                                 "bytes per sequence": f"{g.bytes_per_token * g.cells * g.n_layers:,}"})
                if g.state:
                    shapes = "; ".join(f"{t.name} {tuple(t.shape)} {t.dtype}" for t in g.state)
                    rows.append({"engine": label[eng], "term": f"{KIND_WORDS.get(g.kind, g.kind)} state ({shapes})",
                                 "tokens held": "", "bytes per sequence": f"{g.state_bytes_per_seq * g.n_layers:,}"})
        ref, seqs = self.ref, self.seqs
        glue("fixed_bytes_per_seq", ref.fixed_bytes // seqs)
        glue("fixed_mib_per_seq", ref.fixed_bytes / seqs / MiB, fmt=",.1f")
        glue("state_bytes_per_seq", ref.state_bytes_per_seq)
        glue("sliding_bytes_per_seq", ref.sliding_bytes // seqs)
        for paragraph in state_paragraphs(self):
            display(Markdown(paragraph))
        if rows:
            tables.show(tables.frame_table(pd.DataFrame(rows)))
            self.show_notes(first_note)

    def weights(self) -> None:
        """Recorded checkpoints divided over the cards, or the config.json estimate vLLM's budget uses."""
        from IPython.display import Markdown, display

        from . import frames as report
        from .glue import glue
        from ..engines.vllm.budget import budget

        if self.is_known:
            w = report.weights_frame(self.model, tuple(self.valid))
            facts = report.deployment_facts(self.model)
            self.weights_gb = facts["weights_gb"][facts["default_weights"]]
            glue("weights_gb", self.weights_gb, fmt=",.2f")
            w = w.rename(columns={"quantisation": "weights", "total_gb": "total (GB)"})
            tables.show(tables.frame_table(w, {c: "{:,.2f}" for c in w.columns if c != "weights"}))
            return
        b = budget(self.model, card="h200", mem_util=self.mem_util, max_num_seqs=1, max_model_len=min(self.ctx, 4096),
                   **self.prefix_off)
        self.weights_gb = b.weights / 1e9  # TP 1: the whole checkpoint on one card
        glue("weights_gb", self.weights_gb, fmt=",.2f")
        display(Markdown(
            f"vLLM's budget prices {self.name}'s {b.weights_variant} at **{b.weights / 1e9:,.2f} GB** "
            f"({b.weights / GiB:,.2f} GiB) on one card" + (", experts included" if self.arch.is_moe else "")
            + "; the verdicts and the memory chart use it."))

    def activation(self):
        from ..engines.vllm.activation import activation_frame
        from .glue import glue

        self.act_tp = act_tp = self.valid[0] if self.valid else 1
        act = activation_frame(self.arch, max_num_batched_tokens=self.max_num_batched_tokens, max_num_seqs=self.seqs,
                               tp=act_tp)
        peak_row = act[act["phase"] == "total"].iloc[0]
        glue("act_peak_mib", float(peak_row["MiB per card"]), fmt=",.0f")
        glue("act_tokens", self.max_num_batched_tokens)
        glue("act_seqs", self.seqs)
        glue("act_tp", act_tp)
        terms = act[(act["MiB per card"] > 0) & ~act["phase"].isin(["total"])
                    & ~act["term"].astype(str).str.endswith("phase peak")]
        tensors = terms[terms["phase"].isin(["forward", "sampler", "encoder"])]
        if len(tensors):
            from IPython.display import Markdown, display

            top = tensors.loc[tensors["MiB per card"].idxmax()]
            display(Markdown(
                f"{self.name}'s profile-run peak is {float(peak_row['MiB per card']):,.0f} MiB per card at "
                f"{self.max_num_batched_tokens:,} batched tokens and TP {act_tp}; its largest tensor is "
                f"*{top['term']}* ({top['phase']}, {float(top['MiB per card']):,.1f} MiB, shape {top['shape']})."))
        terms = terms.assign(**{"vLLM source": terms["vLLM source"].astype(str).str.slice(0, 70)})
        tables.show(tables.frame_table(terms, {"MiB per card": "{:,.1f}"}))

    def activation_chart(self):
        from . import charts
        from . import frames as report

        tps = tuple(self.valid[:3]) or (1,)
        grid = report.activation_grid(self.arch, seqs=(1, 16, 256), tps=tps)
        return charts.activation_lines(grid, title=f"{self.name}: vLLM profile-run peak per card",
                                       seqs_choices=(1, 16, 256), tp_choices=tps)

    def memory_chart(self, cards=None):
        """Every term of vLLM's budget against the context on the common cards (:func:`budget_curve`)."""
        from . import charts, glance
        from .glue import glue

        cards = list(cards or glance.GLANCE_CARDS)
        self.curve = budget_curve(self.model, cards, max_ctx=self.ctx, mem_util=self.mem_util, **self.prefix_off)
        default = "rtx3090" if "rtx3090" in cards else cards[0]
        glue("chart_largest_ctx", int(self.curve[self.curve["card"] == default]["largest"].iloc[0]))
        return charts.budget_terms(self.curve, title=f"{self.name}: vLLM's budget per card, one sequence",
                                   default_card=glance.card_label(default))

    def memory_story(self) -> None:
        """The memory chart's verdict on the 24 GB card in words: where the stack crosses the limit and what
        it is made of there (``self.curve`` from :meth:`memory_chart`)."""
        from IPython.display import Markdown, display

        from .glance import card_label

        card = "rtx3090" if "rtx3090" in set(self.curve["card"]) else self.curve["card"].iloc[0]
        c = self.curve[self.curve["card"] == card]
        largest, limit = int(c["largest"].iloc[0]), float(c["limit_gib"].iloc[0])
        at = c[c["context"] == (largest if largest else c["context"].min())].set_index("term")["gib"]
        w, kv = at["weights"], at["KV cache (one request)"]
        rest = at.sum() - w - kv
        label = card_label(card)
        if not largest:
            text = (f"On one {label} the weights alone ({w:,.2f} GiB) are over the {limit:,.2f} GiB limit: no "
                    "length starts." if w > limit else
                    f"On one {label} the weights ({w:,.2f} GiB) and the other non-KV terms ({rest:,.2f} GiB) leave "
                    f"less than one request's cache under the {limit:,.2f} GiB limit: no length starts.")
        elif largest >= self.ctx:
            text = (f"On one {label} the whole stack at {self.ctx:,} tokens is {at.sum():,.2f} GiB, under the "
                    f"{limit:,.2f} GiB limit: weights {w:,.2f} GiB, one request's cache {kv:,.2f} GiB, the rest "
                    f"{rest:,.2f} GiB.")
        else:
            text = (f"On one {label} the stack meets the {limit:,.2f} GiB limit at {largest:,} tokens, where the "
                    f"weights take {w:,.2f} GiB, the cache {kv:,.2f} GiB and the other terms {rest:,.2f} GiB.")
        display(Markdown(text))

    def default_budget(self) -> None:
        """The default deployment on the chapter's budget cards (``frames.default_budget_frame``)."""
        from IPython.display import Markdown, display
        from myst_nb import glue as glue_obj

        from . import frames as report
        from .glue import glue
        from ..engines.vllm import budget

        glue("budget_error_gib", budget.CALIBRATION_ERROR_GIB, "{:.2f}")
        frame, notes = report.default_budget_frame(self.model, max_model_len=self.ctx, cards=self.budget_cards,
                                                   tps=self.tps, mem_util=self.mem_util, **self.prefix_off)
        glue_obj("budget_prefix_text", "prefix caching off" if self.prefix_off else
                 "prefix caching on (vLLM's default)", display=False)
        return frame, notes

    def presets(self) -> None:
        """The source document's presets on their cards, in two tables, and the probe chart of the first."""
        from IPython.display import Markdown, display

        from . import charts
        from . import frames as report
        from .glue import glue
        from myst_nb import glue as glue_obj
        from ..engines.vllm import budget

        if not (self.is_known and budget.presets().get(self.model)):
            return
        probe_grid = list(range(4096, 262144 + 1, 4096))  # the budget chart's contexts: its slider's steps
        frames = report.chapter_frames(self.model, contexts=probe_grid)
        table = frames["table"]
        glue_obj("budget_preset", frames["preset"], display=False)
        glue("budget_largest_ctx", int(frames["refusal_context"]))
        glue("budget_presets", len(table))
        glue("budget_boots", int((table["outcome"] == "boots").sum()))
        marginal = int(table["marginal"].fillna(False).astype(bool).sum())
        glue("budget_marginal", marginal)
        display(Markdown(
            f"**The source document's presets** ({marginal} of them *marginal*). Of the {len(table)} presets, "
            f"{int((table['outcome'] == 'boots').sum())} boot as configured; for {frames['preset']} on one "
            f"{budget.card(frames['card'])['name']}, the largest `max_model_len` that boots is "
            f"{int(frames['refusal_context']):,} tokens."))
        shown = table.drop(columns=["weights GiB"]).astype(object).where(table.drop(columns=["weights GiB"]).notna(), "")
        split = ["preset", "kv_format", "TP", "max_model_len", "max_num_seqs", "mem_util", "non-KV GiB",
                 "available KV GiB", "outcome", "margin GiB"]
        rest = ["preset"] + [c for c in shown.columns if c not in split]
        for c in shown.columns:  # yes / no, not Python's True / False
            shown[c] = [("yes" if v else "no") if isinstance(v, bool) else v for v in shown[c]]
        fmt2 = {c: "{:,.2f}" for c in ("non-KV GiB", "available KV GiB", "margin GiB", "max concurrency", "mem_util")}
        ints = {c: "{:,}" for c in ("max_model_len", "max_num_seqs", "pool tokens", "largest max_model_len")}
        for cols in (split, rest):
            part = shown[cols]
            tables.show(tables.frame_table(part, {k: v for k, v in {**fmt2, **ints}.items() if k in cols}))
        first_len = table.loc[table["preset"] == frames["preset"], "max_model_len"].iloc[0]
        display(charts.budget_probe(
            frames["curve"], refusal_context=frames["refusal_context"],
            start=charts.probe_start(probe_grid, frames["refusal_context"], preferred=first_len),
            title=f"{self.name}: {frames['preset']} on one {frames['card']}"))
        display(Markdown(
            f"The probe line starts near {frames['preset']}'s own `max_model_len`; vLLM refuses past "
            f"{int(frames['refusal_context']):,} tokens."))

    def source_doc_differences(self) -> None:
        """The source document's per-token figures beside kvmath's, and the differences in words."""
        import pandas as pd
        from IPython.display import Markdown, display

        import kvmath
        from . import frames as report
        from .glue import glue

        if not self.in_doc:
            glue("doc_bytes_per_token", 0)
            display(Markdown("The source document has no figures for this model."))
            return
        model, arch, counts, rf = self.model, self.arch, self.counts, self.reference_format
        doc = report.source_doc()
        err = report.errata_frame(model)
        glue("doc_bytes_per_token", int(err[err["format"] == rf]["doc_bytes_per_token"].iloc[0])
             if rf in set(err["format"]) else 0)
        doc_notes = []
        full = [l for l in arch.attention_layers() if l.layer_type == "full_attention"]
        if doc["k_v_tensors"].get(model) == 1:
            doc_notes.append(
                "The document counts K and V once (`k_v_tensors = 1`) because the config sets "
                "`attention_k_eq_v`. That flag ties the *weights*: the value path then gets its own norm "
                "without RoPE, so the cached V differs from K, and vLLM, llama.cpp and transformers all store "
                "both (the real-cache test in this project counts both tensors in transformers' cache).")
        if full and doc["global_kv_heads"].get(model) not in (None, full[0].num_kv_heads):
            doc_notes.append(
                f"The document uses {doc['global_kv_heads'][model]} KV heads on the full-attention layers; the "
                f"config's `num_global_key_value_heads` is {full[0].num_kv_heads}.")
        if counts.get("linear_attention") and model in doc["recurrent_state_per_seq"]:
            st = kvmath.derive(arch, engine="llama.cpp", max_ctx=4096)
            glue("doc_state_bytes", doc["recurrent_state_per_seq"][model])
            glue("llamacpp_state_bytes", st.state_bytes_per_seq)
            doc_notes.append(
                f"The document's recurrent state sums vectors: {doc['recurrent_state_per_seq'][model]:,} bytes per "
                f"sequence. The state is a matrix per value head; llama.cpp (all float32) holds "
                f"{st.state_bytes_per_seq:,} bytes, "
                f"{st.state_bytes_per_seq / doc['recurrent_state_per_seq'][model]:.0f} times as much.")
        if counts.get("sliding_attention") and model in doc["sliding_fixed_total_per_bpe"]:
            doc_notes.append(
                "The document sizes the sliding term as one window of K (no V) per layer. vLLM holds "
                f"{self.ref.sliding_bytes // self.seqs:,} bytes per sequence at {rf}: K and V, and a window of "
                "W - 1 + max_num_batched_tokens tokens rounded to blocks.")
        if counts.get("linear_attention"):
            doc_notes.append(
                "The document says the split between attention and DeltaNet layers is not in `config.json`; "
                "it is, in `layer_types` (and `full_attention_interval`).")
        first = len(self.notes)
        shown = err.rename(columns={"doc_bytes_per_token": "document (B/token)",
                                    "kvmath_bytes_per_token": "kvmath (B/token)", "ratio": "kvmath / document"})
        shown["kvmath (B/token)"] = [f"{int(v):,}" if pd.notna(v) else f"refused {self.note(r)}"
                                     for v, r in zip(err["kvmath_bytes_per_token"], err["refused"])]
        shown["kvmath / document"] = [f"{v:.3f}" if pd.notna(v) else "refused" for v in err["ratio"]]
        shown["document (B/token)"] = [f"{int(v):,}" for v in err["doc_bytes_per_token"]]
        tables.show(tables.frame_table(shown.drop(columns=["refused"])))
        display(Markdown("\n".join(f"- {n}" for n in doc_notes) or "No differences found."))
        self.show_notes(first)

    def explore(self):
        """The live cell: format, TP, context and sequences recompute the cache and redraw its chart."""
        import ipywidgets as widgets
        from IPython.display import display

        import kvmath
        from . import charts
        from . import frames as report
        from .glue import book_build

        if book_build():
            # A static page cannot run the callbacks, so the book makes no widgets (none in the page's widget
            # state either); its calculator panel (kvmath.book.calculator) answers in the page. A kernel shows them.
            return None
        ctx = self.ctx
        controls = {
            "kv_format": widgets.Dropdown(options=self.accepted, value=self.reference_format, description="format"),
            "tp": widgets.Dropdown(options=self.valid, value=self.valid[0], description="TP"),
            "max_ctx": widgets.IntSlider(value=ctx, min=min(1024, ctx), max=ctx, step=min(1024, ctx),
                                         description="context"),
            "max_num_seqs": widgets.IntSlider(value=self.seqs, min=1, max=64, description="sequences"),
        }
        answer = widgets.HTML()
        figure = widgets.Output()  # the memory-against-context chart for the chosen format, TP and sequences

        def update(_=None):
            chosen = {k: w.value for k, w in controls.items()}
            d = kvmath.derive(self.arch, engine="vllm", **self.vllm_flags, **chosen)
            answer.value = (f"<b>{d.total_bytes / GiB:,.2f} GiB</b> of cache per card: "
                            f"{d.growing_bytes / GiB:,.2f} GiB growing ({d.bytes_per_token:,} B per token), "
                            f"{d.fixed_bytes / MiB:,.1f} MiB fixed")
            grid = sorted({*(ctx * k // 12 for k in range(1, 13)), chosen["max_ctx"]} - {0})
            live = report.curve_frame(self.arch, "vllm", [chosen["kv_format"]], (chosen["tp"],), contexts=grid,
                                      **self.vllm_flags)
            with figure:
                figure.clear_output(wait=True)
                display(charts.live_memory(live, ctx=chosen["max_ctx"], seqs=chosen["max_num_seqs"],
                                           weights_gb=self.weights_gb,
                                           title=f"{self.name}: {chosen['kv_format']}, TP {chosen['tp']}, "
                                                 f"{chosen['max_num_seqs']} sequence(s)"))

        for w in controls.values():
            w.observe(update, names="value")
        update()
        return widgets.VBox([*controls.values(), answer, figure])
