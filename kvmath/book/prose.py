"""Prose that depends on what a model's architecture has.

Two mechanisms, so a chapter's text differs where models differ:

* the template's Markdown cells tagged ``if-<kind>`` (or ``if-not-<kind>``) are kept only in the chapters of
  models that have (or lack) that kind (:func:`kinds`, applied by ``model_chapter.make_chapter``): a paragraph
  per layer kind present, none for kinds it lacks, with their citations and equations as ordinary MyST;
* sentences built from the config (:func:`layer_summary`, :func:`state_paragraphs`, :func:`particular`),
  naming the model and its own shapes.
"""

from __future__ import annotations

KINDS = ("full", "gqa", "mla", "sliding", "recurrent", "gdn", "mamba2", "kda", "moe", "vision", "mtp")
"""The kinds a template cell can be conditioned on (``if-<kind>`` / ``if-not-<kind>`` tags)."""


#: The words a chapter uses for each recurrent-state kind (``LayerGroup.kind``).
KIND_WORDS = {"gdn": "Gated DeltaNet", "mamba2": "Mamba-2", "kda": "Kimi Delta Attention"}


def kinds(arch) -> set[str]:
    """The kinds of :data:`KINDS` this architecture has: ``full`` (any full-attention layer, MLA included),
    ``gqa`` (full attention with K and V rows per head), ``mla``, ``sliding``, ``recurrent`` (any layer with a
    fixed state), ``gdn`` / ``mamba2`` / ``kda`` (its state kind), ``moe``, ``vision`` (a vision tower in the
    config), ``mtp`` (multi-token prediction layers)."""
    out = set()
    counts = arch.layer_type_counts()
    n_mla = len(arch.mla_layers())
    if counts.get("full_attention"):
        out.add("full")
        if counts["full_attention"] > n_mla:
            out.add("gqa")
    if n_mla:
        out.add("mla")
    if counts.get("sliding_attention"):
        out.add("sliding")
    for layer in arch.state_layers():
        out.add("recurrent")
        out.add(layer.kind)
    if arch.is_moe:
        out.add("moe")
    if _vision(arch):
        out.add("vision")
    if _config(arch).get("mtp_num_hidden_layers") or _config(arch).get("num_nextn_predict_layers"):
        out.add("mtp")
    return out


def conditions(model, arch) -> set[str]:
    """What a chapter's ``if-`` tags are tested against: :func:`kinds` plus ``known`` when checkpoint sizes are
    recorded for the model (``data/deployments.json``) and ``doc`` when the source document prices it
    (``frames.source_doc()["per_token_tp1"]``)."""
    from .. import facts

    from .frames import source_doc

    out = kinds(arch) | ({"known"} if isinstance(model, str) and model in facts.deployments() else set())
    return out | ({"doc"} if isinstance(model, str) and model in source_doc()["per_token_tp1"] else set())


def keep_cell(tags, present: set[str]) -> bool:
    """Whether a template cell with ``tags`` belongs in a chapter whose architecture has ``present``."""
    for t in tags or ():
        if t.startswith("if-not-") and t[len("if-not-"):] in present:
            return False
        if t.startswith("if-") and not t.startswith("if-not-") and t[len("if-"):] not in present:
            return False
    return True


def _config(arch) -> dict:
    """The whole config.json of the model (parsed file, or a known model's reference config), text part."""
    from .. import facts
    from ..errors import KvMathError

    cfg = arch.extras.get("hf_config")
    if not isinstance(cfg, dict):
        try:
            cfg = facts.reference_config(arch.name, copy_=False) or {}
        except KvMathError:
            cfg = {}
    return cfg.get("text_config", cfg) if isinstance(cfg.get("text_config"), dict) else cfg


def _vision(arch) -> dict | None:
    from .. import facts
    from ..errors import KvMathError

    cfg = arch.extras.get("hf_config")
    if not isinstance(cfg, dict):
        try:
            cfg = facts.reference_config(arch.name, copy_=False) or {}
        except KvMathError:
            cfg = {}
    v = cfg.get("vision_config")
    return v if isinstance(v, dict) else None


def layer_summary(ch) -> str:
    """One paragraph: the layer pattern in words, what grows (when some layers are bounded) and where the config
    states the pattern. The experts are in :func:`particular`."""
    from . import frames as report

    arch, counts, name = ch.arch, ch.counts, ch.name
    n_state = sum(g.n_layers for g in ch.ref.groups if g.is_state)
    state_words = " / ".join(ch_kind_words(ch)) + " (recurrent)"
    n_full = counts.get("full_attention", 0)
    parts = [f"{n} {w}" for n, w in (
        (n_full - ch.n_mla, "full-attention"),
        (ch.n_mla, "multi-head latent attention (MLA)"),
        (counts.get("sliding_attention", 0), "sliding-window"), (n_state, state_words),
        (counts.get("mlp", 0) + counts.get("moe", 0), "MLP or MoE-only")) if n]
    text = f"{name}'s layer pattern is {report.layer_pattern(arch)}: " + ", ".join(parts) + " layers. "
    bounded = [f"{n} {w}" for n, w in ((counts.get("sliding_attention", 0), "sliding-window"),
                                       (n_state, " / ".join(ch_kind_words(ch)))) if n]
    if n_full and bounded:
        text += (f"Only the {n_full} full-attention layers grow with context; the " + " and ".join(bounded)
                 + " layers stop at a fixed size. ")
    elif not n_full:
        text += f"No layer of {name} is full attention, so nothing grows past the bounded terms. "
    return text + pattern_source(arch)


def pattern_source(arch) -> str:
    """Where the config states the layer pattern: its own ``layer_types``, or the key transformers builds
    that list from (``full_attention_interval``, ``hybrid_override_pattern``, ``linear_attn_config``,
    ``sliding_window``), or none (every layer full attention)."""
    cfg = _config(arch)
    if isinstance(cfg.get("layer_types"), list):
        return f"The config lists the pattern itself in `layer_types` ({len(cfg['layer_types'])} entries)."
    if cfg.get("full_attention_interval"):
        k = cfg["full_attention_interval"]
        return (f"The config has no `layer_types`: `full_attention_interval` = {k} makes every {k}th layer full "
                "attention and the others linear, the rule transformers builds the list by.")
    if cfg.get("hybrid_override_pattern"):
        return ("The config has no `layer_types`: `hybrid_override_pattern` gives one character per layer "
                "(M Mamba-2, * attention, - MLP, E MoE), the string transformers builds the list from.")
    if isinstance(cfg.get("linear_attn_config"), dict):
        return ("The config has no `layer_types`: `linear_attn_config` lists the full-attention and KDA layers "
                "(1-based numbers).")
    if arch.layer_type_counts().get("sliding_attention"):
        return (f"The config has no `layer_types`: its `sliding_window` of {cfg.get('sliding_window'):,} tokens "
                "applies to every layer.")
    return "The config has no `layer_types` and no window, so transformers makes every layer full attention."


def growing_paragraph(ch) -> str:
    """The growing term worked out for this model at the reference format and TP 1: a sentence per
    full-attention group (layers, KV heads or latent width, bytes per row), their sum, and how TP divides
    the heads (``get_num_kv_heads``: floor(h / TP), at least 1)."""
    name, fmt = ch.name, ch.reference_format
    groups = [g for g in ch.ref.groups if g.growing]
    if not groups:
        return (f"None of {name}'s layers keeps every token: at {ch.ctx:,} tokens the windows bound them all, so "
                "the sum is empty and the growing term is 0 bytes.")
    out = []
    for g in groups:
        layer = ch.arch.layers[g.layers[0]]
        if hasattr(layer, "kv_lora_rank"):
            out.append(f"At {fmt}, each of {name}'s {g.n_layers} MLA layers stores one latent row of "
                       f"{layer.latent_dim} elements ({g.bytes_per_token:,} bytes) per token, whatever the TP: "
                       f"{g.n_layers} × {g.bytes_per_token:,} = {g.n_layers * g.bytes_per_token:,} bytes.")
            continue
        h = g.kv_heads_per_rank or layer.num_kv_heads
        row = g.bytes_per_token // (2 * h) if h else 0
        out.append(f"At {fmt}, each of {name}'s {g.n_layers} full-attention layers (head width {layer.head_dim}) "
                   f"stores a K and a V row of {row:,} bytes for each of its {h} KV heads: {g.n_layers} × {h} × 2 "
                   f"× {row:,} = {g.n_layers * g.bytes_per_token:,} bytes per token.")
    if len(groups) > 1:
        out.append(f"Summed, {ch.ref.bytes_per_token:,} bytes per token at TP 1.")
    heads = sorted({ch.arch.layers[g.layers[0]].num_kv_heads for g in groups
                    if not hasattr(ch.arch.layers[g.layers[0]], "kv_lora_rank")})
    if heads:
        h = heads[0]
        copied = [tp for tp in ch.valid if tp > h]
        out.append(f"With {h} KV heads, TP up to {h} gives each card its share; "
                   + (f"at TP {', '.join(map(str, copied))} vLLM copies a head onto every card instead of "
                      "splitting it." if copied else
                      f"every TP vLLM accepts here ({', '.join(map(str, ch.valid))}) divides them evenly."))
    return " ".join(out)


def ch_kind_words(ch) -> list[str]:
    return [KIND_WORDS[k] for k in ch.state_kinds if k in KIND_WORDS]


def state_paragraphs(ch) -> list[str]:
    """A paragraph per bounded kind the model has: the sliding window, and each recurrent state's shapes."""
    arch, name, out = ch.arch, ch.name, []
    if ch.counts.get("sliding_attention"):
        w = arch.layers_of("sliding_attention")[0].sliding_window
        out.append(f"The window of {name}'s {ch.counts['sliding_attention']} sliding layers is {w:,} tokens.")
    if "gdn" in ch.state_kinds:
        g0 = arch.linear_layers()[0]
        out.append(
            f"Each of {name}'s {len(arch.linear_layers())} Gated DeltaNet layers keeps two tensors per sequence, "
            "whatever the context: a causal-convolution state over the "
            f"2·n<sub>k</sub>·d<sub>k</sub> + n<sub>v</sub>·d<sub>v</sub> = {g0.conv_dim:,} q/k/v channels, and a "
            f"recurrent state that is a {g0.k_head_dim} × {g0.v_head_dim} **matrix** per value head "
            f"({g0.num_v_heads} heads). vLLM and llama.cpp keep K − 1 = {g0.conv_kernel - 1} convolution columns, "
            f"transformers all K = {g0.conv_kernel}; the matrix is float32 in llama.cpp and transformers, and in "
            f"vLLM it takes the config's `mamba_ssm_dtype` ({arch.mamba_ssm_dtype or 'unset: the model dtype'}).")
    if "mamba2" in ch.state_kinds:
        m0 = next(l for l in arch.state_layers() if l.layer_type == "linear_attention" and hasattr(l, "state_size"))
        out.append(
            f"Each Mamba-2 layer of {name} keeps, per sequence, a causal-convolution state over the "
            f"heads·head_dim + 2·n_groups·d_state = {m0.conv_dim:,} x, B and C channels (K − 1 = "
            f"{m0.conv_kernel - 1} columns in vLLM and llama.cpp), and an SSM state of {m0.num_heads} heads × "
            f"{m0.head_dim} × {m0.state_size} elements, in `mamba_ssm_cache_dtype` in vLLM "
            f"({arch.mamba_ssm_dtype or 'unset: float32'}).")
    if "kda" in ch.state_kinds:
        k0 = next(l for l in arch.state_layers() if hasattr(l, "num_heads") and not hasattr(l, "state_size"))
        out.append(
            f"Each Kimi Delta Attention layer of {name} keeps, per sequence, short-convolution states over the q, k "
            f"and v projections (3·heads·head_dim = {k0.conv_dim:,} channels) and one {k0.head_dim} × {k0.head_dim} "
            f"recurrent matrix per head ({k0.num_heads} heads), float32 in vLLM.")
    return out


def particular(ch) -> str:
    """"What is particular about this model", from its config: attention layout, windows, state shapes,
    experts, vision tower, MTP layers, length and embeddings. Markdown bullets, each naming the model."""
    arch, name = ch.arch, ch.name
    cfg = _config(arch)
    items = []
    full = [l for l in arch.attention_layers() if l.layer_type == "full_attention"]
    if ch.n_mla:
        m0 = arch.mla_layers()[0]
        items.append(f"{name} caches a latent, not K and V: `kv_lora_rank` {m0.kv_lora_rank} plus a shared RoPE key "
                     f"of `qk_rope_head_dim` {m0.qk_rope_head_dim}, {m0.latent_dim} elements per token and layer in "
                     f"{ch.n_mla} layers, the same on every card whatever TP.")
    if full and len(full) > ch.n_mla:
        a0 = next(l for l in full if not hasattr(l, "kv_lora_rank"))
        q = cfg.get("num_attention_heads")
        ratio = f", {q // a0.num_kv_heads} query heads per KV head" if q and a0.num_kv_heads else ""
        items.append(f"{name}'s full-attention layers have {a0.num_kv_heads} KV heads of width {a0.head_dim}{ratio}"
                     + (" (multi-query attention)" if a0.num_kv_heads == 1 else " (grouped-query attention)"
                        if q and q > a0.num_kv_heads else " (one KV head per query head)") + ".")
    slide = arch.layers_of("sliding_attention") if ch.counts.get("sliding_attention") else []
    if slide:
        s0 = slide[0]
        items.append(f"{name} alternates its attention: {len(slide)} of its {arch.num_hidden_layers} layers see only "
                     f"the last {s0.sliding_window:,} tokens ({s0.num_kv_heads} KV heads of width {s0.head_dim}), so "
                     "their cache stops growing there.")
    if ch.state_kinds:
        shapes = sorted({f"{t.name} {tuple(t.shape)}" for g in ch.ref.groups if g.state for t in g.state})
        items.append(f"{name}'s recurrent layers ({', '.join(ch_kind_words(ch))}) hold per sequence, in vLLM: "
                     + "; ".join(shapes) + ".")
    if arch.is_moe:
        k = cfg.get("num_experts_per_tok") or cfg.get("top_k_experts")
        shared = cfg.get("shared_expert_intermediate_size") or cfg.get("n_shared_experts")
        items.append(f"{name} is a mixture of experts: {arch.num_experts} experts"
                     + (f", {k} active per token" if k else "")
                     + (f", with a shared expert ({shared})" if shared else "")
                     + "; all of them are in memory, so the weights are those of the whole model while a token "
                       "reads only its share.")
    v = _vision(arch)
    if v:
        depth = v.get("depth") or v.get("num_hidden_layers")
        width = v.get("hidden_size") or v.get("embed_dim")
        items.append(f"{name}'s config carries a vision tower ({v.get('model_type', 'vision')}"
                     + (f", {depth} layers" if depth else "") + (f" of width {width}" if width else "")
                     + "): vLLM profiles its largest image before sizing the cache, which raises the activation "
                       "peak on every card.")
    mtp = cfg.get("mtp_num_hidden_layers") or cfg.get("num_nextn_predict_layers")
    if mtp:
        items.append(f"{name} ships {mtp} multi-token-prediction layer(s) for speculative decoding; with MTP on, "
                     "vLLM gives them cache of their own.")
    top = arch.derived_max_model_len or arch.max_position_embeddings
    items.append(f"{name}'s longest context is " + (f"{top:,} tokens (vLLM's derived `max_model_len`)." if top else
                                                   "not stated in its config (no `max_position_embeddings`)."))
    if cfg.get("tie_word_embeddings"):
        items.append(f"{name} ties its input and output embeddings, so its vocabulary's matrix is stored once.")
    return "\n".join(f"- {i}" for i in items)


def glance_sentences(ch, f) -> list[str]:
    """The first screen's answer in words, one sentence per engine of ``f`` (``glance.frame([model])``): the
    smallest card of the table that starts the model at TP 1 and the smallest that reaches the chapter's
    context (the model's maximum length), or that none does."""
    out = []
    for engine, g in f.groupby("engine", sort=False):
        g = g[g["largest_context"].notna()]
        if not len(g):
            continue
        lc = g["largest_context"].astype(int)
        starts, full = g[lc > 0], g[lc >= ch.ctx]
        if not len(starts):
            out.append(f"{engine} starts {ch.name} on none of these cards at TP 1: it needs tensor parallelism or "
                       "a larger card.")
        elif len(full) and full.index[0] == g.index[0]:
            out.append(f"{engine} runs {ch.name} at its full {ch.ctx:,} tokens on every card here, the "
                       f"{g['card_label'].iloc[0]} included.")
        elif len(full) and full.index[0] == starts.index[0]:
            out.append(f"{engine} needs at least the {starts['card_label'].iloc[0]} card for {ch.name}, and runs its "
                       f"full {ch.ctx:,} tokens there.")
        elif len(full):
            out.append(f"{engine} starts {ch.name} from the {starts['card_label'].iloc[0]} card "
                       f"({int(starts['largest_context'].iloc[0]):,} tokens) and reaches its full {ch.ctx:,} tokens "
                       f"from the {full['card_label'].iloc[0]} card.")
        else:
            best = g.loc[lc.idxmax()]
            out.append(f"{engine} starts {ch.name} from the {starts['card_label'].iloc[0]} card but reaches at most "
                       f"{int(best['largest_context']):,} of its {ch.ctx:,} tokens (on the {best['card_label']}).")
    return out
