"""Checks of club-3090's ``docs/KV_MATH.md`` and its calculator ``tools/kv-calc.py`` (the records of
``data/errata.json`` with ``document`` club3090): the architecture and config claims, bytes per token, the fixed
term and recurrent state, formats on cards, vLLM budgets and the calibration claims. ``kv_heads_total`` is also
used by the 16 GB article's records."""

from __future__ import annotations

from .base import (  # noqa: F401
    Check, GB, GIB, KINDS, KvMathError, MB, MIB, VERDICTS, _arch, _b, _bpt, _budget, _close, _compare, _config, _gb, _gib, _grade, _llama, _mb, _preset_budget, _reference, _rows, _short_refusal, _slug, _text_config, _title, _vllm, facts, label_for, lru_cache, math, not_checkable, re, statistics, check)


# --- architecture and config ---------------------------------------------------------------------------

@check
def layer_split(*, model: str, full: int, linear: int = 0, sliding: int = 0, full_indices=None,
                total: int | None = None) -> Check:
    """The document's layer counts (and full-attention indices) against the config's ``layer_types``."""
    a = _arch(model)
    counts = a.layer_type_counts()
    idx = [l.index for l in a.layers_of("full_attention")]
    got = {"total": a.num_hidden_layers, "full": counts.get("full_attention", 0),
           "linear": counts.get("linear_attention", 0), "sliding": counts.get("sliding_attention", 0)}
    want = {"full": full, "linear": linear, "sliding": sliding}
    if total is not None:
        want["total"] = total
    bad = [k for k, v in want.items() if got[k] != v]
    if full_indices is not None and list(full_indices) != idx:
        bad.append("indices")
    kv = f"{got['total']} layers: {got['full']} full" + (f", {got['linear']} linear" if got["linear"] else "") + (
        f", {got['sliding']} sliding" if got["sliding"] else "")
    doc = (f"{total} layers: " if total else "") + f"{full} full" + (f", {linear} linear" if linear else "") + (
        f", {sliding} sliding" if sliding else "")
    if full_indices is not None:
        kv += f" at {', '.join(map(str, idx))}"
        doc += f" at {', '.join(map(str, full_indices))}"
    ev = (f"The config's layer_types of {_title(model)} gives {kv}." if not bad else
          f"The config's layer_types of {_title(model)} disagrees on {', '.join(bad)}: {kv}.")
    return Check("holds" if not bad else "wrong", kv, doc, ev)


_CONFIG_ALIASES = {"num_experts_per_tok": ("num_experts_per_tok", "top_k_experts")}


@check
def config_values(*, model: str, values: dict, top_level: tuple = ()) -> Check:
    """Config keys the document states (``values``: key -> the document's value) against the reference config
    (text_config; ``top_level`` keys are read from the top level, e.g. ``architectures``)."""
    tc, top = _text_config(model), _reference(model)
    ok, parts_k, parts_d, bad = 0, [], [], []
    for key, doc in values.items():
        src = top if key in top_level else tc
        names = _CONFIG_ALIASES.get(key, (key,))
        found = next(((n, src[n]) for n in names if n in src), (key, None))
        got = found[1]
        if isinstance(got, list) and len(got) == 1 and not isinstance(doc, list):
            got = got[0]
        match = got == doc
        ok += match
        parts_k.append(f"{found[0]} = {got}")
        parts_d.append(f"{key} = {doc}")
        if not match:
            bad.append(f"{found[0]} is {got}, not {doc}")
    verdict = _grade(ok, len(values))
    ev = (f"All {len(values)} values match {_title(model)}'s reference config." if not bad else
          f"{_title(model)}'s reference config: " + "; ".join(bad) + ".")
    return Check(verdict, "; ".join(parts_k), "; ".join(parts_d), ev)


@check
def config_has_split(*, models: list) -> Check:
    """The document says the split between growing and fixed layers is in the model card, not the config."""
    found = []
    for m in models:
        tc = _text_config(m)
        lt = tc.get("layer_types") or []
        counts = _arch(m).layer_type_counts()
        found.append(f"{_title(m)}: layer_types lists {len(lt)} layers, {counts.get('full_attention', 0)} full")
    also = [_title(m) for m in models if "full_attention_interval" in _text_config(m)]
    return Check("wrong", "; ".join(found), "split only in the model card README",
                 "Every one of these configs carries the per-layer split in layer_types" +
                 (f" ({', '.join(also)} also in full_attention_interval)" if also else "") +
                 "; kvmath reads it from there and needs no README.")


@check
def config_has_keys(*, models: list, keys: list) -> Check:
    """The document lists keys as 'often missing' from config.json; which of them the configs have."""
    have = []
    for m in models:
        tc = _text_config(m)
        present = [k for k in keys if k in tc]
        have.append(f"{_title(m)}: {', '.join(present) or 'none'}")
    n_have = sum(1 for m in models for k in keys if k in _text_config(m))
    verdict = "wrong" if n_have >= len(models) else "partly"
    return Check(verdict, "; ".join(have), "missing or README-only",
                 f"The reference configs carry {n_have} of the keys the document calls missing or README-only "
                 "(layer pattern, K=V flag, recurrent-state shapes); only the cache layout an engine builds from "
                 "them is not in the config.")


@check
def head_dim_fallback(*, models: list) -> Check:
    """head_dim 'from config.json head_dim or hidden_size / num_attention_heads'."""
    parts, wrong = [], 0
    for m in models:
        tc = _text_config(m)
        fb = tc["hidden_size"] / tc["num_attention_heads"]
        hd = tc.get("head_dim")
        wrong += fb != hd
        parts.append(f"{_title(m)}: head_dim {hd}, hidden/heads {fb:g}")
    return Check("partly" if wrong else "holds", "; ".join(parts), "head_dim, or hidden_size / num_attention_heads",
                 f"The head_dim key is right; the fallback is wrong for {wrong} of {len(models)} of these models "
                 "(and Gemma 4's full layers use global_head_dim, which neither gives).")


@check
def valid_tp(*, model: str, doc_valid: list, candidates: list) -> Check:
    """The tensor-parallel sizes vLLM accepts for the model."""
    from ...engines import valid_tp as vt

    got = vt(_arch(model), "vllm", tuple(candidates))
    same = list(got) == list(doc_valid)
    return Check("holds" if same else "wrong", ", ".join(map(str, got)), ", ".join(map(str, doc_valid)),
                 "vLLM splits the KV heads over the cards while TP divides them and replicates each head past "
                 f"that, so TP is bounded by the attention and linear-attention heads, not by the "
                 f"{_arch(model).attention_layers()[0].num_kv_heads} KV heads (kvmath.valid_tp).")


# --- bytes per token -----------------------------------------------------------------------------------

@check
def per_token(*, model: str, figures: dict) -> Check:
    """The document's per-token growing KV (``figures``: format -> [TP1, TP2] bytes, or [TP1]) against
    kvmath (vLLM; q4_0 in llama.cpp, which has no TP). Within 1 % counts as agreeing (the document
    rounds its '~' figures)."""
    ok = n = 0
    ks, ds = [], []
    for fmt, vals in figures.items():
        got = []
        for tp, doc in zip((1, 2), vals):
            v, eng, why = _bpt(model, fmt, tp)
            n += 1
            ok += _close(v, doc)
            got.append(f"{v:,}" if v is not None else _short_refusal(why) or "n/a")
        ks.append(f"{fmt}: {' / '.join(got)}")
        ds.append(f"{fmt}: {' / '.join(f'{int(x):,}' for x in vals)}")
    verdict = _grade(ok, n)
    a = _arch(model)
    full = a.layers_of("full_attention")
    h, d = full[0].num_kv_heads, full[0].head_dim
    ev = (f"{_title(model)} has {len(full)} growing layers with {h} KV heads of width {d}, and vLLM stores K and "
          f"V ({2 * len(full) * h * d:,} elements per token); {ok} of {n} figures agree within 1 %.")
    return Check(verdict, "B/token, TP1 / TP2: " + "; ".join(ks), "; ".join(ds), ev)


@check
def general_formula(*, models: list, formats: list) -> Check:
    """layers x KV heads x head_dim x k_v_tensors x bytes per element, with k_v_tensors = 2, against vLLM."""
    from ...engines.vllm.formats import vllm_format

    ok = n = 0
    parts = []
    for m in models:
        full = _arch(m).layers_of("full_attention")
        for fmt in formats:
            bpe = vllm_format(fmt).k.bits_per_element / 8
            hand = int(len(full) * full[0].num_kv_heads * full[0].head_dim * 2 * bpe)
            v, _, _ = _bpt(m, fmt)
            n += 1
            ok += v == hand
        parts.append(f"{_title(m)} {formats[0]}: {_bpt(m, formats[0])[0]:,} B")
    return Check(_grade(ok, n), "; ".join(parts), "L x h x d x k_v x bpe",
                 f"With k_v_tensors = 2 and the full layers' own heads and width the formula equals vLLM's figure "
                 f"in {ok} of {n} cases (whole-byte formats); the K=V case is a separate claim.")


@check
def kv_tied(*, models: list, doc_k_v: int = 1) -> Check:
    """'K=V tied: k_v_tensors = 1, the KV pool is half of the naive x2 math' (Gemma 4)."""
    parts = []
    for m in models:
        full = _arch(m).layers_of("full_attention")
        tied = int(len(full) * full[0].num_kv_heads * full[0].head_dim * doc_k_v * 2)
        v = _bpt(m, "bf16")[0]
        parts.append(f"{_title(m)}: {v:,} B/token bf16 (K=V-once formula {tied:,})")
    comp = _compare()
    pools = [(i, r) for i, r in comp.items() if r.get("model", "").startswith("gemma-4") and r.get("scope") == "specified"
             and "pool_tokens_error_pct" in r and not r.get("same_boot")]
    errs = [abs(r["pool_tokens_error_pct"]) for _, r in pools]
    ev = ("attention_k_eq_v ties the projection weights; the cached V gets its own norm and no RoPE, so vLLM keeps "
          "K and V: ")
    if errs:
        ev += (f"priced that way, the {len(errs)} Gemma 4 boots with a logged pool are within "
               f"{max(errs):.1f} % of their token counts, where a K-once cache would hold twice as many tokens.")
    else:
        ev += "kvmath's figure counts both."
    return Check("wrong", "; ".join(parts), f"k_v_tensors = {doc_k_v}", ev)


@check
def bpe(*, fmt: str, doc: float, model: str = "qwen3.6-27b") -> Check:
    """Bytes per KV element of a format: vLLM's per-token bytes over its element count (q4_0: llama.cpp's
    block size), at ``model``'s head width."""
    from ...engines.llamacpp.formats import llamacpp_type

    full = _arch(model).layers_of("full_attention")
    elems = len(full) * full[0].num_kv_heads * full[0].head_dim * 2
    if fmt == "q4_0":
        t = llamacpp_type("q4_0")
        got = t.block_bytes / t.block_elems
        where = f"llama.cpp q4_0: {t.block_bytes} B per {t.block_elems} elements (not a vLLM format)"
    else:
        v, _, why = _bpt(model, fmt)
        if v is None:
            return Check("wrong", "refused by vLLM", f"{doc:g} B", why)
        got = v / elems
        where = f"vLLM {fmt} on {_title(model)} (head width {full[0].head_dim}): {v:,} B/token over {elems:,} elements"
    rel = abs(got - doc) / got
    verdict = "holds" if rel <= 0.01 else ("partly" if rel <= 0.03 else "wrong")  # ~ figures: the page's 1 % rule
    return Check(verdict, f"{got:.4g} B", f"{doc:g} B", f"{where}; the document is {100 * (doc - got) / got:+.1f} %.")


@check
def ratio(*, model: str, base: str, fmt: str, tp: int, doc: float) -> Check:
    """A per-token ratio between two models."""
    a, b = _bpt(model, fmt, tp)[0], _bpt(base, fmt, tp)[0]
    r = a / b
    verdict = "holds" if abs(r - doc) <= 0.02 * doc else "wrong"
    return Check(verdict, f"{r:.2f}x", f"{doc:g}x",
                 f"{_title(model)} {a:,} B/token against {_title(base)} {b:,} at {fmt}, TP {tp} (vLLM).")


@check
def growing_at(*, model: str, fmt: str, tp: int, ctx: int, doc_bytes: float, below: bool = False) -> Check:
    """Growing KV per card of one sequence at ``ctx`` tokens (doc_bytes: the document's figure; ``below``:
    the document gives an upper bound)."""
    v = _bpt(model, fmt, tp)[0] * ctx
    if below:
        verdict = "holds" if v < doc_bytes else "wrong"
    else:
        verdict = "holds" if abs(v - doc_bytes) <= 0.03 * v else "wrong"
    return Check(verdict, _gb(v, 3), ("under " if below else "") + _gb(doc_bytes, 3),
                 f"{_bpt(model, fmt, tp)[0]:,} B/token per card x {ctx:,} tokens ({_title(model)}, {fmt}, TP {tp}).")


@check
def sliding(*, model: str, doc_per_bpe: int, fmt: str = "bf16", tp: int = 1) -> Check:
    """The fixed sliding-window term (the document: one window, K only, per layer)."""
    d = _vllm(model, fmt, tp)
    full_d = _vllm(model, fmt, tp, 262144)
    bpe_ = 2 if fmt == "bf16" else 1
    doc = doc_per_bpe * bpe_ // tp
    sl = _arch(model).layers_of("sliding_attention")
    W = sl[0].sliding_window
    ev = (f"vLLM keeps K and V for {len(sl)} layers over W - 1 + max_num_batched_tokens tokens rounded to blocks "
          f"(W = {W}; {full_d.settings.max_num_batched_tokens:,} batched tokens): "
          f"{full_d.sliding_bytes:,} B per sequence at {fmt}, TP {tp}.")
    return Check("wrong", _b(full_d.sliding_bytes), _b(doc), ev)


@check
def sliding_scales(*, model: str, fmt: str = "bf16") -> Check:
    """'Constant: doesn't scale with max_ctx or max_num_seqs' (sliding term)."""
    one = _vllm(model, fmt, 1, 262144, 1).sliding_bytes
    two = _vllm(model, fmt, 1, 262144, 2).sliding_bytes
    short = _vllm(model, fmt, 1, 131072, 1).sliding_bytes
    verdict = "partly" if one == short and two != one else "holds"
    return Check(verdict, f"{one:,} B at 1 sequence, {two:,} B at 2", "constant in max_ctx and max_num_seqs",
                 f"Independent of the context ({short:,} B at 131,072 tokens too), but every sequence keeps its own "
                 f"window, so the term grows with max_num_seqs ({_title(model)}, {fmt}).")


@check
def fixed_term(*, models: list, fmt: str = "bf16") -> Check:
    """Sliding-window and recurrent terms do not grow with the context."""
    parts, ok = [], 0
    for m in models:
        a, b = _vllm(m, fmt, 1, 32768).fixed_bytes, _vllm(m, fmt, 1, 262144).fixed_bytes
        ok += a == b
        parts.append(f"{_title(m)}: {a:,} B at 32,768 and {b:,} B at 262,144 tokens")
    return Check(_grade(ok, len(models)), "; ".join(parts), "context-independent",
                 f"kvmath's vLLM derivation reports the fixed term apart from the growing one; it is the same at "
                 f"both contexts for {ok} of {len(models)} models (it does grow with the number of sequences).")


@check
def growing_vs_total(*, models: list, low: float, high: float) -> Check:
    """Counting all layers instead of the growing ones inflates the KV by total / growing."""
    rs = []
    for m in models:
        a = _arch(m)
        rs.append(a.num_hidden_layers / len(a.layers_of("full_attention")))
    ok = sum(low <= r <= high for r in rs)
    return Check(_grade(ok, len(rs)), ", ".join(f"{r:g}x" for r in rs), f"{low:g}-{high:g}x",
                 "Total layers over growing layers from the configs of " + ", ".join(_title(m) for m in models) + ".")


@check
def head_dim_ratio(*, model: str, doc: float) -> Check:
    a = _arch(model)
    r = a.layers_of("full_attention")[0].head_dim / a.layers_of("sliding_attention")[0].head_dim
    return Check("holds" if r == doc else "wrong", f"{r:g}x", f"{doc:g}x",
                 f"global_head_dim / head_dim in {_title(model)}'s config.")


@check
def kv_heads_total(*, model: str, doc_total: int, doc_layers: int) -> Check:
    """Gemma 4's KV heads summed over its layers."""
    a = _arch(model)
    tot = sum(l.num_kv_heads for l in a.attention_layers())
    ok = tot == doc_total and a.num_hidden_layers == doc_layers
    return Check("holds" if ok else "wrong", f"{tot} heads over {a.num_hidden_layers} layers",
                 f"{doc_total} heads over {doc_layers} layers",
                 f"num_key_value_heads on the {len(a.layers_of('sliding_attention'))} sliding layers and "
                 f"num_global_key_value_heads on the {len(a.layers_of('full_attention'))} full ones; only the full "
                 "layers grow with the context.")


# --- recurrent state -----------------------------------------------------------------------------------

def _vector_state(layer) -> int:
    k, v = layer.num_k_heads * layer.k_head_dim, layer.num_v_heads * layer.v_head_dim
    return (k + v + layer.conv_kernel * (k + v)) * 4


@check
def recurrent_state(*, model: str, doc_bytes: float, seqs: int = 1) -> Check:
    """The document's recurrent state (a vector per head, fp32) against vLLM's and llama.cpp's state."""
    a = _arch(model)
    lin = a.linear_layers()
    vec = len(lin) * _vector_state(lin[0]) * seqs
    d = _vllm(model, "bf16", 1, 4096, seqs)
    ll = _llama(model, 4096, "f16").recurrent_bytes * seqs
    l0 = lin[0]
    arith = "the document's arithmetic is right" if _close(vec, doc_bytes, 0.05) else "the document's own arithmetic gives " + _b(vec)
    return Check("wrong", f"vLLM {d.state_bytes:,} B, llama.cpp {ll:,} B", f"{int(doc_bytes):,} B",
                 f"The state of a Gated DeltaNet layer is a matrix per value head ({l0.num_v_heads} x "
                 f"{l0.k_head_dim} x {l0.v_head_dim}) plus the conv window, not a vector; {arith} for the vector "
                 f"({len(lin)} layers, {seqs} sequence{'s' if seqs > 1 else ''}, TP 1).")


@check
def state_general(*, models: list) -> Check:
    """The general delta_state_bytes formula."""
    parts = []
    for m in models:
        lin = _arch(m).linear_layers()
        parts.append(f"{_title(m)}: formula {len(lin) * _vector_state(lin[0]):,} B, vLLM "
                     f"{_vllm(m, 'bf16').state_bytes_per_seq:,} B per sequence")
    return Check("wrong", "; ".join(parts), "L x (Hk dk + Hv dv + conv (Hk dk + Hv dv)) x 4 B x seqs",
                 "The recurrent state is Hv x dk x dv per layer (vLLM's MambaSpec, llama.cpp's r/s tensors), "
                 "one to two orders of magnitude above the vector sum.")


@check
def state_range(*, models: list, low_bytes: float, high_bytes: float, doc_text: str) -> Check:
    """A stated order of magnitude for the recurrent state per sequence (vLLM, TP 1)."""
    vals = [_vllm(m, "bf16").state_bytes_per_seq for m in models]
    ok = sum(low_bytes <= v <= high_bytes for v in vals)
    return Check(_grade(ok, len(vals)), ", ".join(_mb(v) for v in vals), doc_text,
                 "vLLM's state per sequence at TP 1 for " + ", ".join(_title(m) for m in models) +
                 " (it halves at TP 2).")


@check
def breakdown_example(*, model: str, preset: str, doc_growing_gb: float, doc_recurrent_gb: float) -> Check:
    """The document's example '--kv-breakdown' buckets for a preset, against kvmath at the preset's settings."""
    b = _preset_budget(model, preset)
    target = _bpt(model, b.kv_format, b.tp)[0] * b.max_model_len * b.max_num_seqs
    g_ok = abs(target / GB - doc_growing_gb) <= 0.02 * doc_growing_gb
    s_ok = abs(b.state_bytes / GB - doc_recurrent_gb) <= 0.5 * doc_recurrent_gb
    return Check("holds" if g_ok and s_ok else ("partly" if g_ok or s_ok else "wrong"),
                 f"growing {_gb(target)} ({_gb(b.growing_kv)} with the MTP layer), recurrent "
                 f"{_gb(b.state_bytes, 3)} per card",
                 f"growing {doc_growing_gb:g} GB, recurrent {doc_recurrent_gb:g} GB per card",
                 f"Preset {preset} (TP {b.tp}, {b.kv_format}, {b.max_num_seqs} x {b.max_model_len:,} tokens): the "
                 f"target's growing term {'agrees' if g_ok else 'differs'} (vLLM adds the MTP drafter's attention "
                 f"layer); vLLM's GDN state is {b.state_bytes / MB:,.0f} MB per card, not "
                 f"{doc_recurrent_gb * 1000:g} MB.")


@check
def gdn_h_buffer(*, model: str, tp: int, tokens: int, doc_chunk: int, doc_bytes_per_element: int) -> Check:
    """FLA's chunked-prefill h buffer: the document's chunk_size and element size against vLLM's kernels."""
    from ...engines.vllm.budget import FLA_CHUNK, gdn_scratch_bytes

    a = _arch(model)
    l0 = a.linear_layers()[0]
    hv = l0.num_v_heads // tp
    doc = math.ceil(tokens / doc_chunk) * hv * l0.v_head_dim * l0.k_head_dim * doc_bytes_per_element
    got = gdn_scratch_bytes(a, tp, tokens)
    return Check("wrong", f"chunk {FLA_CHUNK}, bf16: {got / MIB:,.0f} MiB", f"chunk {doc_chunk}, fp{8 * doc_bytes_per_element}: "
                 f"{doc / MIB:,.0f} MiB",
                 f"vLLM's FLA kernel (chunk_delta_h.py) uses chunk_size {FLA_CHUNK} and a bf16 h plus v_new; at "
                 f"{tokens:,} batched tokens, TP {tp}, {_title(model)} needs {got:,} B.")


@check
def ssm_constants(*, model: str, doc_chunk: int, doc_dtype: str) -> Check:
    """'fla default chunk_size=256 and mamba_ssm_dtype=float32 (per config.json)'."""
    from ...engines.vllm.budget import FLA_CHUNK

    dt = _text_config(model).get("mamba_ssm_dtype")
    return Check("partly" if dt == doc_dtype and FLA_CHUNK != doc_chunk else ("holds" if dt == doc_dtype else "wrong"),
                 f"chunk {FLA_CHUNK}; mamba_ssm_dtype {dt}", f"chunk {doc_chunk}; mamba_ssm_dtype {doc_dtype}",
                 "The dtype is in the config; the FLA chunk size vLLM calls is fixed in its kernel, not 256.")


# --- formats and cards --------------------------------------------------------------------------------

@check
def card_format(*, fmt: str, card: str, doc_runs: bool, model: str = "qwen3.6-27b") -> Check:
    """Whether a KV format runs on a card (kvmath's vLLM card check)."""
    try:
        _budget(model=model, card=card, kv_format=fmt, tp=2, max_model_len=32768)
        runs, why = True, f"vLLM accepts {fmt} on {card}"
    except KvMathError as e:
        runs, why = False, str(e).split(";")[0]
    return Check("holds" if runs == doc_runs else "wrong", "runs" if runs else "refused",
                 "runs" if doc_runs else "not supported", why + ".")


@check
def format_refused(*, models: list, fmt: str, runs_on: list) -> Check:
    """A format vLLM runs only for some model families (TurboQuant on Qwen 3.6, not on Gemma 4)."""
    ok, parts = 0, []
    for m in models + runs_on:
        d = _vllm(m, fmt)
        runs = not isinstance(d, str)
        ok += runs == (m in runs_on)
        parts.append(f"{_title(m)}: {'runs' if runs else 'refused'}")
    return Check(_grade(ok, len(models) + len(runs_on)), "; ".join(parts), f"{fmt} only on Qwen 3.6",
                 "vLLM refuses TurboQuant on Gemma 4 at start-up (the sliding and full layers' pages cannot be "
                 "unified); it runs on the Qwen 3.6 hybrids.")


@check
def mem_util_ceiling(*, doc_default: float, vllm_default: float, vllm_default_source: str = "",
                     card: str = "rtx3090") -> Check:
    """'Use mem_util x VRAM as the ceiling; gpu_memory_utilization default 0.92'. ``vllm_default``: vLLM's own
    default (``CacheConfig.gpu_memory_utilization``, vllm/config/cache.py)."""
    default = vllm_default
    c = facts.cards()[card]
    return Check("partly", f"vLLM default {default}; ceiling u x {c['total_gib']} GiB",
                 f"default {doc_default}; ceiling u x {c['nominal_gb']} GB",
                 f"vLLM requests ceil(total x u) of the memory PyTorch reports ({c['total_gib']} GiB on an "
                 f"{card}, not {c['nominal_gb']} GB); {doc_default} is the stack's choice, vLLM's own default is "
                 f"{default}.")


# --- budgets (vLLM) ------------------------------------------------------------------------------------

@check
def pool_formula(*, model: str, preset: str) -> Check:
    """kv_pool = per_token / TP x max_ctx x max_num_seqs, against the pool vLLM allocates."""
    b = _preset_budget(model, preset)
    want = b.max_model_len * b.max_num_seqs
    return Check("partly", f"pool {b.pool_tokens:,} tokens ({_gib(b.pool_bytes)})",
                 f"{want:,} tokens ({_gib(b.demand_bytes)} demand)",
                 f"Preset {preset}: vLLM sizes the pool from the memory left after the profile run "
                 f"({_gib(b.available_kv)}), not from max_ctx x max_num_seqs; the formula is the demand, which "
                 "decides only whether one request fits.")


@check
def budget_composition(*, models: list) -> Check:
    """'peak = weights/TP + KV + activation + overhead + drafter' against measured nvidia-smi peaks."""
    rows = [r for r in _compare().values() if r.get("status") == "priced" and r.get("measured_peak_gib") is not None
            and not r.get("same_boot") and r["model"] in models]
    gaps = []
    for r in rows:
        c = facts.cards()[r["card"]]
        gaps.append(r["measured_peak_gib"] - r["mem_util"] * c["total_gib"])
    med = statistics.median(gaps)
    return Check("partly", f"measured peak - u x card: median {med:+.2f} GiB over {len(gaps)} boots",
                 "peak = sum of the terms",
                 "vLLM fills its pool up to gpu_memory_utilization, so the peak sits near u x card memory "
                 "whatever the terms add up to; the sum decides the available KV memory, not the peak.")


@check
def activation(*, model: str, fmt: str, ctx: int, tp: int, low_gb: float = 0.0, high_gb: float = 0.0,
               mem_util: float = 0.92, card: str = "rtx3090", preset: str | None = None, coef: float | None = None,
               max_num_batched_tokens: int | None = None) -> Check:
    """An activation-peak figure (GB) against kvmath's derived profile-run peak (+ GDN scratch). ``coef``: the
    document's bytes per GDN layer per token, which gives its figure as coef x GDN layers x ctx / TP."""
    from ...engines.vllm.budget import anchor_prediction

    if preset:
        b = _preset_budget(model, preset)
    else:
        b = _budget(model=model, card=card, kv_format=fmt, tp=tp, max_model_len=ctx, mem_util=mem_util,
                    max_num_batched_tokens=max_num_batched_tokens)
    if coef is not None:
        low_gb = high_gb = coef * len(_arch(model).linear_layers()) * ctx / tp / GB
    got = (b.profile_peak + b.gdn_scratch) / GB
    an = anchor_prediction(model, kv_format=b.kv_format, max_ctx=b.max_model_len, max_num_seqs=b.max_num_seqs,
                           tp=b.tp, mem_util=b.mem_util, vram_gb=facts.cards()[b.card]["nominal_gb"])
    inside = low_gb <= got <= high_gb
    doc = f"{low_gb:g}-{high_gb:g} GB" if low_gb != high_gb else f"{low_gb:.2f} GB"
    if coef is not None:
        inside = abs(got - low_gb) <= 0.15 * got
    ev = (f"kvmath derives vLLM's profile run at {b.max_num_batched_tokens:,} batched tokens ({_title(model)}, "
          f"{b.kv_format}, TP {b.tp}, {b.max_model_len:,} tokens); it grows with the batched tokens, not with the context")
    if an:
        ev += f"; the anchor's own code prices {an['activation_gb']:.2f} GB there"
    return Check("holds" if inside else "wrong", f"{got:.2f} GB", doc, ev + ".")


@check
def anchor_overhead(*, model: str, preset: str) -> Check:
    """overhead = 0.5 + 1.0 x mem_util + 0.3 x (TP - 1) GB against kvmath's fitted overhead at a preset."""
    b = _preset_budget(model, preset)
    doc = 0.5 + 1.0 * b.mem_util + 0.3 * (b.tp - 1)
    got = (b.overhead + b.cudagraph) / GB
    return Check("partly" if abs(got - doc) < 0.5 else "wrong", f"{got:.2f} GB", f"{doc:.2f} GB",
                 f"Preset {preset} (u {b.mem_util}, TP {b.tp}): kvmath's CUDA-graph term plus the memory outside "
                 "PyTorch fitted on the measured boots; the anchor's line has no measured basis in mem_util.")


@check
def overhead_arith(*, mem_util: float, tp: int, doc_gb: float) -> Check:
    """The document's own overhead formula evaluated where it quotes a figure."""
    f = 0.5 + 1.0 * mem_util + 0.3 * (tp - 1)
    return Check("holds" if abs(f - doc_gb) < 0.05 else "wrong", f"{f:.2f} GB (its formula)", f"{doc_gb:g} GB",
                 f"0.5 + 1.0 x {mem_util} + 0.3 x ({tp} - 1) = {f:.2f} GB; the budget table quotes {doc_gb:g} GB.")


@check
def budget_table(*, model: str, fmt: str, ctx: int, tp: int, low_gb: float, high_gb: float, mem_util: float = 0.92,
                 card: str = "rtx3090", weights_variant: str = "default", seqs: int = 1,
                 max_num_batched_tokens: int | None = None) -> Check:
    """A document's estimated per-card budget (sum of its terms, GB) against kvmath's non-KV + one request."""
    b = _budget(model=model, card=card, kv_format=fmt, tp=tp, max_model_len=ctx, mem_util=mem_util,
                weights_variant=weights_variant, max_num_seqs=seqs, max_num_batched_tokens=max_num_batched_tokens)
    demand = (b.non_kv + b.kv_per_request) / GB
    inside = low_gb <= demand <= high_gb
    return Check("holds" if inside else "wrong", f"{demand:.1f} GB ({b.outcome})", f"{low_gb:g}-{high_gb:g} GB",
                 f"{_title(model)}, {fmt}, {ctx:,} tokens, TP {tp} on {card} at u {mem_util}: weights "
                 f"{_gb(b.weights, 1)}, non-KV {_gb(b.non_kv, 1)}, one request {_gb(b.kv_per_request, 2)} per card; "
                 f"vLLM {b.outcome}.")


@check
def weights(*, model: str, variants: dict, tp: int = 2) -> Check:
    """Checkpoint sizes (GB) against the anchor's profiles (data/deployments.json, the document's own stack)."""
    dep = facts.deployments()[model]["weights_gb"]
    ok = n = 0
    parts, docs = [], []
    for v, (lo, hi) in variants.items():
        got = dep.get(v)
        docs.append(f"{v} {lo:g}-{hi:g} GB" if lo != hi else f"{v} {lo:g} GB")
        if got is None:
            parts.append(f"{v}: no profile")
            continue
        n += 1
        ok += lo <= got <= hi
        parts.append(f"{v}: {got:g} GB ({got / tp:g} per card at TP {tp})")
    if n == 0:
        return Check("not checkable", "no profile sizes", "; ".join(docs),
                     "kvmath has no checkpoint size for these quantisations.")
    return Check(_grade(ok, n), "; ".join(parts), "; ".join(docs),
                 f"{ok} of {n} sizes match the club-3090 profiles kvmath prices (size_gb); the TP split is the "
                 "document's own arithmetic. A checkpoint's safetensors index gives the exact figure.")


@check
def bf16_size(*, model: str, low_gb: float, high_gb: float, card_gb: float = 24, tp: int = 2) -> Check:
    """An unquantised (BF16) checkpoint size, from the config's tensor shapes at 16 bits per weight
    (``kvmath.engines.llamacpp.weights.estimate_weights``), and whether its share per card fits a card."""
    from ...engines.llamacpp.weights import estimate_weights

    w = estimate_weights(_config(model), bits_per_weight=16)
    tot = w.total + w.output_bytes
    ok = low_gb * GB * 0.95 <= tot <= high_gb * GB * 1.05
    return Check("holds" if ok else "wrong", f"{_gb(tot, 1)} ({_gb(tot / tp, 1)} per card at TP {tp})",
                 f"{low_gb:g}-{high_gb:g} GB" if low_gb != high_gb else f"~{low_gb:g} GB",
                 f"Every weight tensor of {_title(model)}'s config at 2 bytes; its share per card at TP {tp} is "
                 f"{'above' if tot / tp > card_gb * GB else 'below'} a {card_gb:g} GB card, as the document says.")


@check
def drafter(*, model: str, drafter: str, low_gb: float, high_gb: float) -> Check:
    dep = facts.deployments()[model]["drafters"][drafter]
    got = dep["gb"]
    return Check("holds" if low_gb <= got <= high_gb else "wrong", f"{got:g} GB", f"{low_gb:g}-{high_gb:g} GB"
                 if low_gb != high_gb else f"{low_gb:g} GB",
                 f"The club-3090 drafter profile kvmath prices ({dep['note']}).")


@check
def router(*, model: str, doc_bytes: float, doc_total: float | None = None) -> Check:
    """Router weights: hidden_size x num_experts (x 2 B in bf16)."""
    tc = _text_config(model)
    per = tc["hidden_size"] * tc["num_experts"] * 2
    tot = per * tc["num_hidden_layers"]
    ok = _close(per, doc_bytes, 0.1) and (doc_total is None or _close(tot, doc_total, 0.1))
    return Check("holds" if ok else "wrong", f"{per:,} B per router, {tot:,} B in all",
                 _b(doc_bytes) + (f", {_b(doc_total)} in all" if doc_total else ""),
                 f"hidden_size {tc['hidden_size']} x num_experts {tc['num_experts']} x 2 B (bf16), "
                 f"{tc['num_hidden_layers']} layers; these weights are part of the checkpoint, not extra memory.")


@check
def solve_ctx(*, model: str, preset: str, doc_ctx: int, approx: float = 0.25, card: str = "rtx3090",
              at_least: bool = False, below: bool = False) -> Check:
    """The largest max_model_len that boots at a preset's settings (kvmath's vLLM verdict)."""
    from ...engines.vllm.budget import solve_max_model_len

    b = _preset_budget(model, preset, card=card)
    got = solve_max_model_len(b, upper=262144)
    if at_least:
        verdict = "holds" if got >= doc_ctx else "wrong"
    elif below:
        verdict = "holds" if got < doc_ctx else "wrong"
    else:
        verdict = "holds" if abs(got - doc_ctx) <= approx * doc_ctx else "wrong"
    return Check(verdict, f"{got:,} tokens", ("at least " if at_least else "under " if below else "~") + f"{doc_ctx:,}",
                 f"Preset {preset} ({b.kv_format}, TP {b.tp}, {b.max_num_seqs} sequence(s), u {b.mem_util}) on "
                 f"{card}: the largest max_model_len vLLM boots.")


@check
def fits(*, model: str, fmt: str, ctx: int, tp: int, card: str = "rtx3090", doc_fits: bool = True,
         weights_variant: str = "default", mem_util: float = 0.92) -> Check:
    """Whether one request of ``ctx`` tokens boots."""
    b = _budget(model=model, card=card, kv_format=fmt, tp=tp, max_model_len=ctx, mem_util=mem_util,
                weights_variant=weights_variant)
    boots = b.outcome == "boots"
    return Check("holds" if boots == doc_fits else "wrong", f"{b.outcome}, {_gib(b.available_kv)} left for KV",
                 "fits" if doc_fits else "does not fit",
                 f"{_title(model)}, {fmt}, {ctx:,} tokens, TP {tp} on {card} at u {mem_util}: one request needs "
                 f"{_gib(b.kv_per_request)}.")


@check
def backsolve(*, row: str) -> Check:
    """The document's back-solve: per_token = available x 2^30 / (max_ctx x max_num_seqs / TP), on a logged boot."""
    r = next(x for x in _rows() if x.id == row)
    cfg = r.cfg
    solved = r.avail_gib * GIB / (cfg["max_model_len"] * cfg["max_num_seqs"] / cfg["tp"])
    true = _bpt(r.model, cfg["kv_format"], cfg["tp"])[0]
    return Check("wrong", f"{true:,} B/token per card", f"back-solved {solved:,.0f} B/token",
                 f"A boot ({r.source}) logged {r.avail_gib} GiB available at {cfg['max_num_seqs']} x {cfg['max_model_len']:,} "
                 f"tokens, TP {cfg['tp']}: the figure is the memory left for the pool, so the back-solve returns "
                 f"{solved / true:.2f}x the true per-token bytes and would suggest a wrong layer or K=V count.")


@check
def est_len(*, doc: str = "authoritative") -> Check:
    recs = [r for r in _compare().values() if "est_len_error_pct" in r and not r.get("same_boot")]
    close = [r for r in recs if abs(r["est_len_error_pct"]) <= 10]
    refused = [r for r in _compare().values() if r.get("measured_outcome") == "refused" and not r.get("same_boot")
               and r.get("status") == "priced"]
    agree = sum(r["predicted_outcome"] == "refused" for r in refused)
    return Check("holds", f"refusal predicted for {agree} of {len(refused)}; estimate within 10 % for {len(close)} "
                 f"of {len(recs)} logged", doc,
                 f"vLLM's start-up check decides: kvmath predicts {agree} of the {len(refused)} logged refusals, but "
                 f"its estimated length is within 10 % of the printed one for only {len(close)} of {len(recs)}, so the "
                 "log is the figure to trust.")


@check
def boot_log(*, goal_gib: float = 0.5) -> Check:
    from ...engines.vllm import calibration

    s = calibration.summary()["specified"]
    return Check("holds", f"{s['available_within_0_5_gib']} of {s['available_gib']['n']} within {goal_gib} GiB",
                 "boot log authoritative", "The logged figures are the measurement every prediction is checked "
                 "against; kvmath's available KV memory lands within 0.5 GiB of the log on "
                 f"{s['available_within_0_5_gib']} of the {s['available_gib']['n']} specified boots that log it.")


@check
def refusal_rule() -> Check:
    """'If requested exceeds available, vLLM refuses to boot': measured boots whose max_num_seqs x max_ctx demand
    exceeds the available KV."""
    over = [r for r in _compare().values() if r.get("status") == "priced" and not r.get("same_boot")
            and r["measured_outcome"] == "boots" and r["max_num_seqs"] > 1
            and r["needed_gib"] * r["max_num_seqs"] > r["predicted_available_gib"]]
    return Check("partly", f"{len(over)} measured boots ask for more than the pool", "refuses when requested > available",
                 "vLLM refuses only when one max_model_len request does not fit; with several sequences it boots "
                 "and serves fewer at once (maximum concurrency below max_num_seqs).")


@check
def fragmentation(*, doc_pct: float, models: list, contexts: list) -> Check:
    """Block rounding wasted in vLLM's paged cache: the last, partly filled block of each full-attention
    group, for one request of each context, as a share of that request's growing KV."""
    worst, parts = 0.0, []
    for m in models:
        shares = []
        for L in contexts:
            p = _vllm(m, "bf16", 1, L).allocation
            B = next(g.spec.block_size for g in p.groups if g.spec.kind == "full_attention")
            shares.append(100 * (-(-L // B) * B - L) / L)
        worst = max(worst, max(shares))
        parts.append(f"{_title(m)} (blocks of {B}): up to {max(shares):.1f} %")
    return Check("holds" if worst < doc_pct else "partly", "; ".join(parts), f"< {doc_pct:g} %",
                 f"The unused tail of the last block per request at {', '.join(f'{c:,}' for c in contexts)} tokens "
                 "(vLLM, bf16); hybrid models get long blocks, so short requests waste more.")


@check
def perfmamba(*, a_gb: float, b_gb: float, doc_pct: float) -> Check:
    pct = 100 * (a_gb / b_gb - 1)
    return Check("holds" if abs(pct - doc_pct) < 0.1 else "wrong", f"{pct:.1f} %", f"{doc_pct:g} %",
                 f"{a_gb} / {b_gb} - 1; the paper's own measurements are not in this project, only the arithmetic is.")


# --- calibration ---------------------------------------------------------------------------------------

def _anchor_rows(model: str | None = None):
    return [r for r in _rows() if r.anchor is not None and r.anchor[1] and (model is None or r.model == model)]


def _anchor_gap_gb(r) -> float:
    return r.anchor[0] - r.peak_gib * GIB / GB


@check
def calibration_count(*, model: str, doc_ok: int, doc_n: int, band_gb: float = 1.5, vram_gb: float = 24) -> Check:
    """'Calibrated k/n (±1.5 GB band)' against the anchor's calibration rows kvmath keeps (the C rows)."""
    rows = _anchor_rows(model)
    n = len(rows)
    rule = sum(r.anchor[1] in ("PASS", "TIGHT") and r.peak_gib < vram_gb for r in rows)
    band = sum(abs(_anchor_gap_gb(r)) <= band_gb for r in rows)
    comp = _compare()
    ours = sum(abs(comp[r.id].get("peak_error_gib", 99)) * GIB / GB <= band_gb for r in rows)
    agree = sum(bool(comp[r.id].get("outcome_agrees")) for r in rows)
    return Check("wrong" if (n, band) != (doc_n, doc_ok) else "holds",
                 f"{n} rows; {rule} pass its verdict rule, {band} within ±{band_gb:g} GB",
                 f"{doc_ok}/{doc_n} within ±{band_gb:g} GB",
                 f"The anchor's --calibration counts a row right when its verdict is PASS or TIGHT and the measured "
                 f"peak is under its --vram of {vram_gb:g} GB; it never compares gigabytes. kvmath's own peak is within ±{band_gb:g} GB "
                 f"on {ours} of these {n} rows and its start-up outcome agrees on {agree}.")


@check
def calibration_overall(*, doc_ok: int, doc_n: int, parts: list) -> Check:
    rows = _anchor_rows()
    models = sorted({r.model for r in rows})
    return Check("wrong", f"{len(rows)} anchor rows over {len(models)} models", f"{doc_ok}/{doc_n}",
                 f"The per-model counts the document gives add up to {sum(parts)}, not {doc_n}; the anchor's table "
                 f"that kvmath keeps has {len(rows)} rows with a verdict.")


@check
def calibration_pending(*, models: list) -> Check:
    """'Config-verified, calibration pending / not on stack' for the MoE models."""
    parts = []
    total = 0
    for m in models:
        n = sum(1 for r in _rows() if r.model == m and r.outcome and not r.same_boot)
        total += n
        parts.append(f"{_title(m)}: {n} measured boots")
    return Check("wrong" if total else "holds", "; ".join(parts), "not on stack",
                 "The measurements (club-3090 BENCHMARKS.md, its calibration YAMLs) already hold boots of both MoE "
                 "models; kvmath prices them like the others.")


@check
def error_band(*, band_gb: float) -> Check:
    """The ±1.5 GB error band: the anchor's peak against the measured peak on its own calibration rows."""
    from ...engines.vllm.budget import CALIBRATION_ERROR_GIB

    rows = _anchor_rows()
    gaps = [abs(_anchor_gap_gb(r)) for r in rows]
    within = sum(g <= band_gb for g in gaps)
    return Check("wrong", f"anchor {within} of {len(rows)} rows within ±{band_gb:g} GB (worst {max(gaps):.1f} GB)",
                 f"±{band_gb:g} GB", f"On the anchor's own calibration rows its predicted GB lands outside the band on "
                 f"{len(rows) - within}; kvmath's out-of-sample band for available KV is {CALIBRATION_ERROR_GIB} GiB.")


@check
def band_target(*, share: float, band_gb: float) -> Check:
    rows = _anchor_rows()
    within = sum(abs(_anchor_gap_gb(r)) <= band_gb for r in rows)
    comp = _compare()
    ours = sum(abs(comp[r.id].get("peak_error_gib", 99)) * GIB / GB <= band_gb for r in rows)
    got = within / len(rows)
    return Check("holds" if got >= share else "wrong", f"anchor {100 * got:.0f} %, kvmath {100 * ours / len(rows):.0f} %",
                 f"≥ {100 * share:.0f} % within ±{band_gb:g} GB",
                 f"Share of the anchor's {len(rows)} calibration rows whose predicted GB is within ±{band_gb:g} GB of the "
                 "measured peak; the --calibration self-test does not compute it.")


@check
def error_sources(*, parts_gb: list, doc_total_gb: float) -> Check:
    from ...engines.vllm.budget import CALIBRATION_ERROR_GIB

    lin = sum(parts_gb)
    rss = math.sqrt(sum(p * p for p in parts_gb))
    return Check("partly", f"sum {lin:.1f} GB, root-sum-square {rss:.2f} GB; kvmath's band {CALIBRATION_ERROR_GIB} GiB",
                 f"±{doc_total_gb:g} GB", "The listed magnitudes add up to about the band only if every error "
                 "takes its worst sign at once; none of them is measured.")


@check
def single_stream(*, band_gb: float, max_ctx: int) -> Check:
    rows = [r for r in _anchor_rows() if r.cfg.get("max_num_seqs") == 1 and r.cfg.get("max_model_len", 0) <= max_ctx]
    gaps = [abs(_anchor_gap_gb(r)) for r in rows]
    within = sum(g <= band_gb for g in gaps)
    return Check("holds" if within == len(rows) else ("wrong" if within == 0 else "partly"),
                 f"{within} of {len(rows)} within ±{band_gb:g} GB", f"±{band_gb:g} GB",
                 f"The anchor's single-sequence calibration rows up to {max_ctx:,} tokens (predicted GB against the "
                 "measured peak).")


@check
def many_seqs(*, min_seqs: int) -> Check:
    rows = [r for r in _anchor_rows() if r.cfg.get("max_num_seqs", 0) >= min_seqs]
    tight = sum(r.anchor[1] == "TIGHT" for r in rows)
    boots = sum(r.outcome == "boots" for r in rows)
    return Check("holds" if tight else "partly", f"{tight} of {len(rows)} TIGHT; {boots} booted",
                 "TIGHT where measured fits",
                 f"The anchor's calibration rows with max_num_seqs ≥ {min_seqs}; TIGHT is the anchor's word for a "
                 "capped pool, and every one of these booted.")


@check
def capping() -> Check:
    """'Predicted KV pool is min(requested, budget - fixed); TIGHT when capped': the anchor's verdict on the
    measured refusals."""
    from ...engines.vllm.budget import anchor_prediction

    refused = [r for r in _rows() if r.outcome == "refused" and r.cfg and not r.same_boot]
    called = []
    for r in refused:
        c = r.cfg
        a = anchor_prediction(r.model, kv_format=c["kv_format"], max_ctx=c["max_model_len"],
                              max_num_seqs=c.get("max_num_seqs", 1), tp=c.get("tp", 1), mem_util=c["mem_util"],
                              vram_gb=facts.cards()[c["card"]]["nominal_gb"], mtp=bool(c.get("num_speculative_tokens")),
                              drafter_gb=c.get("drafter_gb") or 0.0)
        if a:
            called.append(a["verdict"])
    fit = sum(v in ("PASS", "TIGHT") for v in called)
    return Check("partly", f"{fit} of {len(called)} measured refusals called PASS/TIGHT", "min(requested, available)",
                 "Capping matches vLLM's pool for a boot, but vLLM refuses outright when one max_model_len request "
                 "does not fit, which a capped TIGHT cannot say.")


@check
def leave_model_out(*, doc_min_rows: int) -> Check:
    """'Coefficients need ≥4 calibration rows per model': kvmath's error with every row of the model left out."""
    from ...engines.vllm import calibration

    recs = calibration.leave_one_out_by("model")
    s = calibration.cv_summary(recs)
    return Check("partly", f"median {s['median_abs_gib']:.2f} GiB, worst {s['max_abs_gib']:.2f} GiB with 0 rows of the model",
                 f"≥ {doc_min_rows} rows per model",
                 f"True of a fitted per-model coefficient; kvmath derives the activation and fits two shared terms, "
                 f"and predicts each model's available KV from the other models' boots ({s['within_gib']} of {s['n']} "
                 "within 0.5 GiB).")


