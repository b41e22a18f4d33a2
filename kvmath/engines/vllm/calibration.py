"""Calibration: kvmath's budget against measured vLLM boots, quantity by quantity, in one unit.

The boots are the rows of ``data/measurements/vllm-boots.csv`` (read through ``kvmath.facts``; the
columns are described in ``data/measurements/README.md``): every row of club-3090's boot facts (ids
F01-F35, plus the boot logs of club-3090 issues #32, #35 and #41 that the F19 row cites) and of the
anchor's calibration table (ids C01-C21), each at the configuration that was actually booted, with the
measured figures, the anchor's own prediction and the source. ``compare()`` prices each row with
``kvmath.engines.vllm.budget.budget`` and sets predicted beside measured:

- outcome (boots / refused / oom), for every row with a memory outcome;
- available KV memory (GiB): logged "Available KV cache memory", or, where only the pool is logged,
  the memory its block count implies (blocks = tokens x blocks per request / max_model_len);
- KV pool tokens ("GPU KV cache size") and maximum concurrency;
- estimated maximum model length on refusals;
- nvidia-smi peak (GiB): measured peak vs requested memory + the fitted post-profile overhead;
- the available KV memory and outcome again with kvmath's own weights (``user_config``: what a user who pastes
  the launch line gets, where the fit's rows use the logged "Model loading took"), side by side in
  ``weights_summary`` / ``weights_text``; rows kvmath cannot price without their weights figure are named.

Units: GiB = 2**30 B everywhere here (vLLM logs GiB; the CSVs' "GB" peaks are GiB-valued); the
anchor's columns are its own 1e9-byte GB.

Each row has a ``scope`` (``SCOPES``): only ``specified`` boots (every input known, every term
modelled) test kvmath and enter the fit; the others are shown with the reason. Rows of the anchor's
table that repeat a boot-facts boot carry ``same_boot`` and are counted once (``summary``).

``fit_coefficients(rows)`` fits the budget's ``COEFFICIENTS`` by least squares on the implied
non-KV memory of the specified boots whose available KV is known (including a size correction for
each checkpoint in ``FITTED_CHECKPOINTS``), and the mean peak overhead.
``leave_one_group_out()`` / ``error_band_gib()`` give the out-of-sample error that becomes
``CALIBRATION_ERROR_GIB``; ``outliers()`` finds boots whose logs disagree with their siblings'.
``write_calibration()`` (``python -m kvmath.engines.vllm.calibration --write``) writes all of it,
with ``coverage()`` and the evidence the budget's notes cite, to ``data/calibration/vllm_non_kv.json``,
which the budget reads; it never imports this module.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

from .budget import (CALIBRATION_ERROR_GIB, COEFFICIENTS, FITTED_CHECKPOINTS, GB, GIB, anchor_prediction, budget,
                     card as get_card, gdn_scratch_bytes)
from .releases import profile_release
from ... import facts
from ...errors import KvMathError

BOOTS_CSV = "measurements/vllm-boots.csv"
"""The measured boots, one row each (``data/measurements/README.md`` describes the columns)."""


@dataclass(frozen=True)
class Row:
    """One measured boot. ``cfg``: kvmath.budget.budget keyword arguments of the booted configuration.
    Measured: ``outcome`` (boots / refused / oom, or None when the row has no memory outcome),
    ``avail_gib`` (logged), ``tokens`` (logged pool; ``approx`` when the source rounds it),
    ``concurrency``, ``est_len`` (logged estimated maximum model length), ``peak_gib`` (nvidia-smi).
    ``fit``: used to fit the empirical coefficients. ``anchor``: the anchor's recorded prediction
    (``pred_5b3793b8`` GB and verdict) from the calibration CSV, when the row is one of its rows.
    ``why``: why a row is excluded or what is assumed. ``scope``: ``specified`` when every input is
    known and every term is modelled, else the reason the row cannot test kvmath (``SCOPES``).
    ``same_boot``: the id of another row recording the same boot (the anchor's calibration table
    repeats boot-facts rows); such a row is shown but not counted twice. ``compose``: the anchor's
    preset name of a calibration-table row (``kvcalc_compose``). ``source_url``, ``quote``: where the
    figures are published and words quoted from there; ``cited_by`` / ``citation``: the key of the
    ``kvmath.engines.vllm.budget`` note that cites this boot (``calibration_notes``), and what it says.
    ``weights_logged``: ``cfg``'s ``weights_gb_total`` is the log's "Model loading took" (public rows).
    ``user_cfg`` / ``user_why``: the configuration a user's launch line gives kvmath, weights priced without the
    log (``user_config``): None with ``user_why`` the reason when kvmath cannot price the checkpoint without the
    row's size; None without a reason means ``cfg`` itself (its weights are already kvmath's own)."""

    id: str
    source: str
    model: str
    cfg: dict
    outcome: str | None
    avail_gib: float | None = None
    tokens: int | None = None
    approx: bool = False
    concurrency: float | None = None
    est_len: int | None = None
    peak_gib: float | None = None
    fit: bool = True
    anchor: tuple | None = None
    why: str = ""
    anchor_inputs: dict = field(default_factory=dict)
    scope: str = "specified"
    same_boot: str | None = None
    compose: str | None = None
    source_url: str = ""
    quote: str = ""
    cited_by: str = ""
    citation: str = ""
    weights_logged: bool = False
    user_cfg: dict | None = None
    user_why: str = ""


SCOPES = {
    "specified": "every input of the boot is known and every memory term is modelled",
    "outlier": "a boot whose log implies non-KV memory >= 1 GiB from the median of the other boots of the "
               "same inputs (outliers()); the cause (card state, software build, an unrecorded flag) is not in "
               "the data",
    "unmodelled": "a term kvmath does not model (a DFlash drafter's own KV layers)",
    "projected": "an input is a projection, not a measurement (checkpoint or card size)",
    "unknown": "the booted settings are not stated",
}

# BOOTS_CSV columns -> how to read them; an empty cell is "not given"
_CFG_COLUMNS = {"card": str, "tp": int, "mem_util": float, "kv_format": str, "max_model_len": int,
                "max_num_seqs": int, "max_num_batched_tokens": int, "num_speculative_tokens": int,
                "weights_variant": str, "drafter_gb": float, "gemma4_pth_page_padding": "bool",
                "enable_prefix_caching": "bool", "weights_gb_total": float}
_ANCHOR_INPUTS = {"kv_format": str, "max_ctx": int, "max_num_seqs": int, "tp": int, "mem_util": float,
                  "mtp": "bool", "drafter_gb": float, "weights_variant": str}


def _cell(text: str, kind, where: str):
    """One CSV cell as ``kind`` (str, int, float or "bool"), None when empty."""
    if text == "":
        return None
    if kind == "bool":
        if text not in ("true", "false"):
            raise KvMathError(f"{where}: expected true or false, got {text!r}")
        return text == "true"
    try:
        return kind(text)
    except ValueError:
        raise KvMathError(f"{where}: expected {kind.__name__}, got {text!r}") from None


def _row(rec: dict) -> Row:
    """A ``Row`` from one line of ``BOOTS_CSV``."""
    i = rec["id"]

    def get(col, kind=str):
        return _cell(rec[col], kind, f"{BOOTS_CSV} {i} {col}")

    cfg = {}
    if rec["card"]:  # a row without a card has no configuration kvmath can price
        cfg = {k: v for k, kind in _CFG_COLUMNS.items() if (v := get(k, kind)) is not None}
        # club-3090's boots ran from May to early June 2026 (its calibration rows' dates, the Gemma 4 ones
        # 2026-05-05 to 2026-06-04): transformers before 5.11.0 (2026-06-10), whose Gemma 4 patch embedder
        # builds the one-hot positions, whatever release's rules price the row
        cfg["gemma4_position_one_hot"] = True
    anchor = None
    if rec["anchor_verdict_head"]:
        anchor = (get("anchor_pred_gb", float), get("anchor_verdict"), get("anchor_pred_head_gb", float),
                  get("anchor_verdict_head"))
    inputs = {k: v for k, kind in _ANCHOR_INPUTS.items() if (v := get(f"anchor_in_{k}", kind)) is not None}
    user_why = ""
    if cfg.get("weights_gb_total"):  # a checkpoint named by its size only (F35: a fine-tune kvmath has no data for)
        user_why = (f"its checkpoint is given by its size only ({cfg['weights_gb_total']:g} GB, weights_gb_total), "
                    f"not one kvmath has a size or config for ({rec['why'] or 'no checkpoint named'})")
    return Row(i, rec["source"], rec["model"], cfg, get("outcome"), avail_gib=get("available_kv_gib", float),
               tokens=get("pool_tokens", int), approx=get("pool_tokens_approx", "bool"),
               concurrency=get("max_concurrency", float), est_len=get("estimated_max_model_len", int),
               peak_gib=get("peak_gib", float), fit=get("fit", "bool"), anchor=anchor, why=rec["why"],
               anchor_inputs=inputs, scope=rec["scope"], same_boot=get("same_boot"), compose=get("compose"),
               source_url=rec["source_url"], quote=rec["quote"], cited_by=rec["cited_by"],
               citation=rec["citation"], user_why=user_why)


def user_config(row: Row) -> tuple[dict | None, str]:
    """(the budget keyword arguments of ``row``'s boot with the weights kvmath prices without the log, ""), or
    (None, why) when it cannot: what a user who pastes the launch line gets. Club-3090's rows are already priced
    with kvmath's own weights (``data/deployments.json``, ``LOGGED_CHECKPOINT_GIB``), so theirs is ``cfg``."""
    if row.user_why:
        return None, row.user_why
    return (row.user_cfg if row.user_cfg is not None else row.cfg), ""


def read_rows() -> list[Row]:
    """Every measured boot of ``data/measurements/vllm-boots.csv``, in the file's order."""
    rows = [_row(rec) for rec in facts.read_csv(BOOTS_CSV)]
    for r in rows:
        if r.scope not in SCOPES:
            raise KvMathError(f"{BOOTS_CSV} {r.id}: unknown scope {r.scope!r}; valid: {', '.join(SCOPES)}")
    return rows


ROWS: list[Row] = read_rows()


def measured_for_preset(model: str, compose: str, card: str | None = None) -> list[Row]:
    """The recorded boots of the anchor's preset ``compose`` for ``model`` (on ``card`` when given). Their
    configuration is the one booted, which may differ from the preset's (see each row's ``cfg``)."""
    return [r for r in ROWS if r.compose == compose and r.model == model and r.outcome
            and (card is None or r.cfg.get("card") == card)]


# ---------------------------------------------------------------------------------------------------


def _implied_available(row: Row, b) -> float | None:
    """Measured available KV memory in bytes: logged, or implied by the logged pool's block count."""
    if row.avail_gib is not None and row.avail_gib < 0:  # a negative log (out of memory): the figure itself
        return row.avail_gib * GIB
    if row.avail_gib is not None:
        from .log import gib_band

        lo, hi = gib_band(row.avail_gib)
        return (lo + hi) / 2
    if row.tokens is not None and b.plan is not None and b.plan.blocks_per_request:
        p = b.plan
        blocks = round(row.tokens * p.blocks_per_request / p.max_model_len)
        return (blocks + 0.5) * p.bytes_per_block
    return None


FIT_TERMS = ("const_gib", "tp_gt1_gib")
"""The fitted non-KV terms (the rest of the profile run is derived, ``kvmath.engines.vllm.activation``): vLLM's
``non_torch_increase`` (vllm/utils/mem_utils.py ``memory_profiling``: memory outside PyTorch's allocator that
appears between the worker's snapshot, taken after NCCL is initialised, and the end of the profile: kernel
modules loaded by the first forward, cuBLAS / cuDNN workspaces) as ``const_gib``, and ``tp_gt1_gib``, what a
tensor-parallel worker adds to it (NCCL connects its channels lazily, on the first all-reduce, which the profile
run makes). Both by least absolute deviations (``_lad``), so a boot with a term kvmath does not derive moves
them by its rank, not its size. vLLM's own figures agree: the llm-d config explorer logs "Non-torch Memory"
0.13-0.14 GiB for single-H100 boots and 0.54 GiB for a TP 2 one
(https://github.com/llm-d/llm-d-benchmark/blob/356b8e03d75b98163f970d2a7aae00292dcc291d/config_explorer/empirical-vllm-memory-results.md).
Tried and left out: ``per_inv_tp_gib`` (kept at 1.95 GiB before the checkpoint sizes were read from vLLM's
logs, ``LOGGED_CHECKPOINT_GIB``: it was mostly their error, divided by TP), ``per_graph_mib`` (now derived,
``activation.CUDAGRAPH_BYTES_PER_LAYER``), the Gemma 4 / MoE offsets and the per-batched-token term."""

_TERM_FEATURES = {
    "const_gib": lambda b, n: 1.0,
    "per_inv_tp_gib": lambda b, n: 1.0 / b.tp,
    "tp_gt1_gib": lambda b, n: float(b.tp > 1),
    "per_8k_batched_tokens_per_tp_gib": lambda b, n: b.max_num_batched_tokens / 8192 / b.tp,
    "per_graph_mib": lambda b, n: n * 2**20 / GIB,
    "gemma4_gib": lambda b, n: float(b.model.startswith("gemma-4")),
    "moe_gib": lambda b, n: float(_is_moe(b.model)),
}


def _is_moe(model: str) -> bool:
    from ...model.load import load_architecture

    return load_architecture(model).is_moe


def _num_graphs(b) -> int:
    from .activation import num_cudagraphs

    return num_cudagraphs(b.max_num_seqs, b.max_num_batched_tokens, b.num_speculative_tokens,
                          bool(b.settings.get("enforce_eager")))


def _features(b, terms=FIT_TERMS) -> list[float]:
    """One row of the design matrix: the non-KV GiB per card beyond the derived terms, as a sum of fitted terms."""
    n = _num_graphs(b)
    row = [_TERM_FEATURES[t](b, n) for t in terms]
    # a checkpoint-size correction: GB total, so GB/GiB / TP GiB per card for each GB
    row += [GB / GIB / b.tp if f"{b.model}/{b.weights_variant}" == k and not b.settings.get("weights_gb_total")
            else 0.0 for k in FITTED_CHECKPOINTS]
    return row


LOGGED_CHECKPOINT_GIB = {
    "qwen3.6-27b/autoround_int4": (17.69, (
        "https://github.com/noonghunna/club-3090/issues/142", "https://github.com/noonghunna/club-3090/issues/158",
        "https://github.com/noonghunna/club-3090/pull/44"),
        "weight_utils.py: 'Checkpoint size: 17.69 GiB' (qwen3.6-27b-autoround-int4, three rigs)"),
    "gemma-4-31b/autoround_int4": (17.87, ("https://github.com/noonghunna/club-3090/issues/274",),
                                   "weight_utils.py: 'Checkpoint size: 17.87 GiB' (served_model_name "
                                   "gemma-4-31b-autoround, Intel/gemma-4-31B-it-int4-AutoRound per club-3090 #89)"),
}
"""Checkpoints whose size vLLM itself logged (GiB = 2^30 B of safetensors files, vllm/model_executor/model_loader/
weight_utils.py "Checkpoint size"), where ``data/deployments.json`` has the anchor's rounded profile figure (GB):
{model/variant: (GiB, source URLs, the line)}. Not fitted: ``write_calibration`` copies them to the calibration
JSON's ``logged_checkpoints``, and the budget prices the checkpoint at the logged size (sharded by TP like the
weights; ``budget.LOGGED_CHECKPOINT_GIB``), also when the model is left out of a fit. The 1/TP term the fit
used to keep (``per_inv_tp_gib``, 1.95 GiB) was mostly this: a checkpoint 1.2-1.5 GB larger than its profile
size, divided by TP."""


FEATURES = FIT_TERMS + tuple(f"weights_extra_gb[{k}]" for k in FITTED_CHECKPOINTS)
_NO_CORRECTION = {f"weights_extra_gb[{k}]": 0.0 for k in FITTED_CHECKPOINTS}
_NO_FIT = dict(_NO_CORRECTION, tp_gt1_gib=0.0, per_graph_mib=0.0, per_8k_batched_tokens_per_tp_gib=0.0, const_gib=0.0,
               per_inv_tp_gib=0.0, gemma4_gib=0.0, moe_gib=0.0)


def _as_coefficients(fit: dict) -> dict:
    """A fit's result as budget coefficients: every term the budget knows, 0 where the fit has none."""
    from .budget import KNOWN_COEFFICIENTS

    out = {k: 0.0 for k in KNOWN_COEFFICIENTS}
    out.update({k: v for k, v in fit.items() if k not in ("n_fit", "n_peak")})
    return out


def _budget(row: Row, coefficients=None):
    return budget(row.model, coefficients=coefficients, check_card=False, **row.cfg)


def _implied_other(row: Row) -> float | None:
    """The non-KV memory (GiB per card) a row's log implies beyond the exact terms: requested - available -
    weights (profile size, no correction) - drafter - the derived profile-run terms (GDN warm-up, torch peak,
    first CUDA graph capture) - reserved draft KV. None without a log."""
    b = _budget(row, _NO_FIT)
    avail = _implied_available(row, b)
    if avail is None:
        return None
    return (b.requested - avail - b.non_kv) / GIB


def _non_kv_key(row: Row) -> tuple:
    """The inputs the non-KV memory depends on (not mem_util, context, sequences or KV format)."""
    c = row.cfg
    return (row.model, c["card"], c["tp"], c["max_num_batched_tokens"], c["weights_variant"], c["drafter_gb"],
            c.get("weights_gb_total"), bool(c["num_speculative_tokens"]))


def outliers(rows=None, threshold_gib: float = 1.0) -> list[dict]:
    """Rows whose implied non-KV memory differs by ``threshold_gib`` or more from the median of the other
    rows with the same non-KV inputs (``_non_kv_key``): the same deployment measured twice with
    gigabytes between the logs. Rows outside ``specified`` / ``outlier`` scope are left out.
    Returns one dict per row that has siblings: id, implied GiB, siblings' median, difference, flagged."""
    rows = [r for r in (rows if rows is not None else ROWS)
            if r.cfg and r.outcome and r.scope in ("specified", "outlier")]
    rows = list({r.id.rstrip("ab"): r for r in rows}.values())  # F11a/F11b are one boot: keep one
    implied = {r.id: _implied_other(r) for r in rows}
    out = []
    for r in rows:
        if implied[r.id] is None:
            continue
        sib = sorted(implied[o.id] for o in rows
                     if o.id != r.id and implied[o.id] is not None and _non_kv_key(o) == _non_kv_key(r))
        if not sib:
            continue
        med = sib[len(sib) // 2] if len(sib) % 2 else (sib[len(sib) // 2 - 1] + sib[len(sib) // 2]) / 2
        d = implied[r.id] - med
        out.append({"id": r.id, "implied_non_kv_gib": implied[r.id], "siblings": len(sib), "siblings_median_gib": med,
                    "difference_gib": d, "flagged": abs(d) >= threshold_gib})
    return out


def fit_coefficients(rows=None, corrections: bool = True, terms=FIT_TERMS) -> dict:
    """Least-absolute-deviations fit (``_lad``) of the empirical non-KV terms (GiB per card, and GB for
    checkpoint corrections) on ``rows`` (default: club-3090's fit rows and the priceable public boots,
    ``_cv_rows``) whose ``fit`` is set, whose scope is ``specified`` and whose available KV memory is known;
    plus the mean peak overhead over the boots with a measured peak (each boot once).
    ``corrections=False`` fits without the checkpoint corrections (they come out 0), to show what
    the other terms do without them. Returns a dict like ``kvmath.budget.COEFFICIENTS`` (plus
    ``n_fit``, ``n_peak``)."""
    peak_rows = rows if rows is not None else [r for r in ROWS if r.model in (
        "qwen3.6-27b", "qwen3.6-35b-a3b", "gemma-4-31b", "gemma-4-26b-a4b")]
    rows = rows if rows is not None else _cv_rows()
    X, y = [], []
    for r in rows:
        if not r.fit or r.scope != "specified":
            continue
        other = _implied_other(r)
        if other is None:
            continue
        X.append(_features(_budget(r, _NO_FIT), terms))
        y.append(other)
    names = tuple(terms) + tuple(f"weights_extra_gb[{k}]" for k in FITTED_CHECKPOINTS)
    n = len(names) - (0 if corrections else len(FITTED_CHECKPOINTS))
    coef = _lad([x[:n] for x in X], y) + [0.0] * (len(names) - n)
    out = dict(zip(names, (round(c, 3) for c in coef)))
    peaks = []
    for r in peak_rows:
        if r.peak_gib is not None and r.outcome == "boots" and r.scope == "specified" and not r.same_boot:
            b = _budget(r)
            peaks.append(r.peak_gib - b.requested / GIB)
    out["peak_over_requested_gib"] = round(sum(peaks) / len(peaks), 2) if peaks else COEFFICIENTS[
        "peak_over_requested_gib"]
    out["n_fit"], out["n_peak"] = len(y), len(peaks)
    return out


def _lad(X, y, iterations: int = 60, floor_gib: float = 0.01):
    """Least absolute deviations (the median's regression) by iteratively reweighted least squares: each
    boot's squared residual weighted by 1 / max(|residual|, ``floor_gib``) (its row scaled by the root). A boot whose non-KV memory has a term kvmath does not
    derive (Gemma 4 31B's +0.9 GiB, a report's misread setting) moves the constants by its rank, not by its
    size, so it cannot drag the rest off as least squares does."""
    coef = _lstsq(X, y)
    for _ in range(iterations):
        r = [t - sum(c * v for c, v in zip(coef, x)) for x, t in zip(X, y)]
        w = [1.0 / max(abs(e), floor_gib) ** 0.5 for e in r]
        coef = _lstsq([[v * wi for v in x] for x, wi in zip(X, w)], [t * wi for t, wi in zip(y, w)])
    return coef


def _lstsq(X, y):
    """Normal equations in pure Python (5 unknowns), with a tiny ridge for rank-deficient subsets."""
    n = len(X[0])
    A = [[sum(x[i] * x[j] for x in X) + (1e-9 if i == j else 0.0) for j in range(n)] for i in range(n)]
    v = [sum(x[i] * t for x, t in zip(X, y)) for i in range(n)]
    for c in range(n):  # Gaussian elimination with partial pivoting
        p = max(range(c, n), key=lambda r: abs(A[r][c]))
        A[c], A[p], v[c], v[p] = A[p], A[c], v[p], v[c]
        for r in range(c + 1, n):
            f = A[r][c] / A[c][c]
            for k in range(c, n):
                A[r][k] -= f * A[c][k]
            v[r] -= f * v[c]
    sol = [0.0] * n
    for c in reversed(range(n)):
        sol[c] = (v[c] - sum(A[c][k] * sol[k] for k in range(c + 1, n))) / A[c][c]
    return sol


def compare(rows=None, coefficients=None) -> list[dict]:
    """One record per row: predicted beside measured, per-row errors (GiB and %), outcome agreement,
    and the anchor's prediction. Rows kvmath cannot price carry ``status`` 'excluded' and ``why``.

    Every priced record also says which weights it is priced with (``weights_gib``, GiB = 2^30 B per card, and
    ``weights_from``: ``logged``, the log's "Model loading took"; ``given``, a size the row states; ``kvmath``,
    kvmath's own estimate) and carries a second prediction with kvmath's own weights, what a user who pastes
    the launch line gets (``user_config``): ``user_weights_gib``, ``user_weights_from`` (the budget's
    ``weights_variant``: a deployments.json key or the checkpoint's own tensors), ``weights_difference_gib``
    (kvmath's minus the row's, per card), ``user_predicted_available_gib``, ``user_available_error_gib``
    (predicted minus measured, GiB), ``user_predicted_outcome``, ``user_outcome_agrees``; or ``user_unpriced``,
    the reason kvmath cannot price the weights without the row's figure. The first prediction (``available_error_gib``)
    is the one the fit is made on."""
    out = []
    for r in rows if rows is not None else ROWS:
        rec = {"id": r.id, "source": r.source, "model": r.model, "used_in_fit": r.fit and r.scope == "specified",
               "why": r.why, "measured_outcome": r.outcome, "scope": r.scope, "same_boot": r.same_boot}
        if not r.cfg or r.outcome is None:
            rec["status"] = "excluded"
            if r.anchor:
                rec.update(anchor_pred_gb=r.anchor[0], anchor_verdict=r.anchor[1], anchor_pred_head_gb=r.anchor[2],
                           anchor_verdict_head=r.anchor[3], measured_peak_gib=r.peak_gib)
            out.append(rec)
            continue
        try:
            b = _budget(r, coefficients)
        except KvMathError as e:
            rec.update(status="excluded", why=f"{r.why}; {e}")
            out.append(rec)
            continue
        rec.update(status="priced", card=b.card, tp=b.tp, mem_util=b.mem_util, kv_format=b.kv_format,
                   max_model_len=b.max_model_len, max_num_seqs=b.max_num_seqs,
                   predicted_outcome=b.outcome, outcome_agrees=b.outcome == r.outcome,
                   boots_agrees=(b.outcome == "boots") == (r.outcome == "boots"),
                   predicted_available_gib=b.available_kv / GIB, predicted_pool_tokens=b.pool_tokens,
                   predicted_concurrency=b.max_concurrency, predicted_est_len=b.estimated_max_model_len,
                   predicted_peak_gib=b.peak_bytes / GIB, requested_gib=b.requested / GIB,
                   non_kv_gib=b.non_kv / GIB, needed_gib=b.kv_per_request / GIB, margin_gib=b.margin_bytes / GIB,
                   predicted_marginal=b.marginal, weights_gib=b.weights / GIB,
                   weights_from="logged" if r.weights_logged else "given" if r.cfg.get("weights_gb_total")
                   else "kvmath")
        avail = _implied_available(r, b)
        rec.update(_user_prediction(r, b, avail, coefficients))
        if avail is not None:
            rec["measured_available_gib"] = avail / GIB
            rec["available_source"] = "logged" if r.avail_gib is not None else "implied by the logged pool"
            rec["available_error_gib"] = (b.available_kv - avail) / GIB
            rec["available_error_pct"] = 100 * (b.available_kv - avail) / avail
        if r.tokens is not None:
            rec["measured_pool_tokens"] = r.tokens
            rec["pool_tokens_approx"] = r.approx
            if b.boots and "profile_release" not in r.cfg:
                # pool tokens are the block rules' (kvmath.engines.vllm.alloc, read for 0.20+); a boot of an
                # older release is scored on its available memory only
                rec["pool_tokens_error_pct"] = 100 * (b.pool_tokens - r.tokens) / r.tokens
        if r.concurrency is not None:
            rec["measured_concurrency"] = r.concurrency
        if r.est_len is not None:
            rec["measured_est_len"] = r.est_len
            if b.outcome == "refused":
                rec["est_len_error_pct"] = 100 * (b.estimated_max_model_len - r.est_len) / r.est_len
        if r.peak_gib is not None:
            rec["measured_peak_gib"] = r.peak_gib
            rec["peak_error_gib"] = b.peak_bytes / GIB - r.peak_gib
            rec["peak_error_pct"] = 100 * (b.peak_bytes / GIB - r.peak_gib) / r.peak_gib
        if r.anchor:
            rec.update(anchor_pred_gb=r.anchor[0], anchor_verdict=r.anchor[1], anchor_pred_head_gb=r.anchor[2],
                       anchor_verdict_head=r.anchor[3])
            if r.anchor[0] is not None and r.peak_gib is not None:
                # the anchor's GB against the measured GiB peak, both in GiB
                rec["anchor_peak_error_gib"] = r.anchor[0] * GB / GIB - r.peak_gib
        if r.anchor_inputs:
            vram = get_card(b.card)["nominal_gb"] if b.card != "custom" else 24
            a = anchor_prediction(r.model, vram_gb=vram, **r.anchor_inputs)
            if a:
                rec["anchor_recomputed_gb"] = a["total_gb"]
                rec["anchor_recomputed_verdict"] = a["verdict"]
        out.append(rec)
    return out


def _user_prediction(r: Row, b, avail: float | None, coefficients) -> dict:
    """The ``user_*`` fields of a ``compare`` record: ``r`` priced with kvmath's own weights (``user_config``)
    beside ``b``, its budget as calibrated; ``avail`` the measured available KV (bytes) or None."""
    cfg, why = user_config(r)
    if cfg is None:
        return {"user_unpriced": why}
    try:
        u = b if cfg == r.cfg else budget(r.model, coefficients=coefficients, check_card=False, **cfg)
    except KvMathError as e:
        return {"user_unpriced": f"kvmath cannot price the weights without the row's figure: {e}"}
    out = {"user_weights_gib": u.weights / GIB, "user_weights_from": u.weights_variant,
           "weights_difference_gib": (u.weights - b.weights) / GIB,
           "user_predicted_available_gib": u.available_kv / GIB, "user_predicted_outcome": u.outcome,
           "user_outcome_agrees": u.outcome == r.outcome}
    if avail is not None:
        out["user_available_error_gib"] = (u.available_kv - avail) / GIB
    return out


def summary(records=None, goal_available_gib: float = 0.5, goal_pool_pct: float = 5.0) -> dict:
    """Counts and error statistics over ``compare()`` records: over every priced boot (rows marked
    ``same_boot`` are not counted twice), and (key ``specified``) over the boots whose scope is
    ``specified``, the ones that can test kvmath (the others are listed per scope in ``scopes``).
    ``anchor_peak_gib`` and ``peak_gib_on_anchor_rows``: the anchor's and kvmath's peak errors on the
    same rows (the anchor's calibration table). The goals (the issue's: available KV within 0.5 GiB,
    pool tokens within 5 %) are parameters; the keys keep their names."""
    recs = records if records is not None else compare()
    priced = [r for r in recs if r.get("status") == "priced"]

    def stats(rows, key):
        vals = [abs(r[key]) for r in rows if key in r]
        if not vals:
            return {"n": 0}
        return {"n": len(vals), "mean_abs": sum(vals) / len(vals), "max_abs": max(vals),
                "rms": math.sqrt(sum(v * v for v in vals) / len(vals))}

    def goals(rows):
        return {
            "priced": len(rows),
            "outcome_agrees": sum(r["outcome_agrees"] for r in rows),
            "boots_agrees": sum(r["boots_agrees"] for r in rows),
            "outcome_misses": sorted(r["id"] for r in rows if not r["outcome_agrees"]),
            "outcome_misses_marginal": sorted(r["id"] for r in rows if not r["outcome_agrees"]
                                              and r["predicted_marginal"]),
            "available_gib": stats(rows, "available_error_gib"),
            "available_within_0_5_gib": sum(abs(r["available_error_gib"]) <= goal_available_gib for r in rows
                                            if "available_error_gib" in r),
            "available_misses": sorted(r["id"] for r in rows
                                       if abs(r.get("available_error_gib", 0)) > goal_available_gib),
            "pool_tokens_pct": stats(rows, "pool_tokens_error_pct"),
            "pool_within_5_pct": sum(abs(r["pool_tokens_error_pct"]) <= goal_pool_pct for r in rows
                                     if "pool_tokens_error_pct" in r),
            "pool_misses": sorted(r["id"] for r in rows if abs(r.get("pool_tokens_error_pct", 0)) > goal_pool_pct),
            "peak_gib": stats(rows, "peak_error_gib"),
            "est_len_pct": stats(rows, "est_len_error_pct"),
        }

    boots = [r for r in priced if not r.get("same_boot")]  # each boot once
    anchor_rows = [r for r in priced if "anchor_peak_error_gib" in r]
    out = {"rows": len(recs), "excluded": len(recs) - len(priced), "duplicates": len(priced) - len(boots),
           **goals(boots), "anchor_peak_gib": stats(anchor_rows, "anchor_peak_error_gib"),
           "peak_gib_on_anchor_rows": stats(anchor_rows, "peak_error_gib")}
    out["specified"] = goals([r for r in boots if r.get("scope") == "specified"])
    out["scopes"] = {k: sorted(r["id"] for r in boots if r.get("scope") == k) for k in SCOPES}
    out["user_weights"] = weights_summary(recs, goal_available_gib)
    return out


def weights_summary(records=None, goal_gib: float = 0.5) -> dict:
    """The two predictions of ``compare()`` records side by side, over every priced boot (rows marked
    ``same_boot`` counted once): ``logged_weights``, priced with the weights the calibration uses (the log's
    "Model loading took" where the boot logged it, else kvmath's own: club-3090's rows have no loading line), and
    ``user_weights``, priced with kvmath's own weights (``user_config``). Each column over the same boots
    (``compared``: both predictions and a measured available KV): ``n``, ``mean_abs`` / ``max_abs`` |error| (GiB
    of available KV per card, 2^30 B), ``max_id``, ``within`` (|error| <= ``goal_gib``), ``misses``; and over the
    boots with both predictions, ``outcome_agrees`` of ``outcome_n``. ``weights_differ``: the boots whose two
    weights differ (by 0.005 GiB or more per card); ``unpriced``: {id: why} of the boots kvmath cannot price
    without the row's weights figure (never dropped silently). Key ``specified``: the same over the boots whose
    scope is ``specified``."""
    recs = records if records is not None else compare()
    boots = [r for r in recs if r.get("status") == "priced" and not r.get("same_boot")]
    out = _weights_columns(boots, goal_gib)
    out["specified"] = _weights_columns([r for r in boots if r.get("scope") == "specified"], goal_gib)
    return out


def _weights_columns(boots: list[dict], goal_gib: float) -> dict:
    """``weights_summary`` over ``boots`` (priced records, each boot once)."""
    paired = [r for r in boots if "user_predicted_outcome" in r]
    both = [r for r in paired if "available_error_gib" in r and "user_available_error_gib" in r]

    def column(err_key, agree_key):
        errs = [(abs(r[err_key]), r["id"]) for r in both]
        top = max(errs) if errs else (0.0, None)
        return {"n": len(errs), "mean_abs": sum(e for e, _ in errs) / len(errs) if errs else 0.0,
                "max_abs": top[0], "max_id": top[1], "within": sum(e <= goal_gib for e, _ in errs),
                "misses": [i for e, i in errs if e > goal_gib],
                "outcome_agrees": sum(bool(r[agree_key]) for r in paired), "outcome_n": len(paired)}

    return {"boots": len(boots), "compared": len(both), "goal_gib": goal_gib,
            "logged_weights": column("available_error_gib", "outcome_agrees"),
            "user_weights": column("user_available_error_gib", "user_outcome_agrees"),
            "weights_differ": [r["id"] for r in paired if abs(r["weights_difference_gib"]) >= 0.005],
            "unpriced": {r["id"]: r["user_unpriced"] for r in boots if "user_unpriced" in r}}


def _fit_rows() -> list[Row]:
    return [r for r in ROWS if r.fit and r.scope == "specified" and (r.avail_gib is not None or r.tokens is not None)]


def held_out(train_ids=None) -> dict:
    """Fit on some rows, report the available-KV error on the others (GiB). Default split: every
    other fit row (in ``ROWS`` order) trains."""
    fit_rows = _fit_rows()
    if train_ids is None:
        train_ids = {r.id for r in fit_rows[::2]}
    train = [r for r in fit_rows if r.id in train_ids]
    test = [r for r in fit_rows if r.id not in train_ids]
    coef = fit_coefficients(train)
    coef = _as_coefficients(coef)
    recs = compare(test, coefficients=coef)
    errs = {r["id"]: r["available_error_gib"] for r in recs if "available_error_gib" in r}
    return {"train": sorted(train_ids), "test": sorted(errs), "coefficients": coef, "errors_gib": errs,
            "mean_abs_gib": sum(abs(e) for e in errs.values()) / max(len(errs), 1)}


@lru_cache(maxsize=None)
def coverage() -> dict:
    """What the fit has seen: ``checkpoints`` {(model, deployments.json weights key)} and ``cards`` of the
    rows it is fitted on. Cheap (no budgets). ``write_calibration`` stores it in the calibration JSON,
    whose copy ``kvmath.engines.vllm.budget.budget`` reads for its notes."""
    from .budget import weights_gb

    rows = _cv_rows()
    return {"checkpoints": {(r.model, weights_gb(r.model, r.cfg["weights_variant"])[0]) for r in rows
                            if not r.cfg.get("weights_gb_total")},
            "cards": {r.cfg["card"] for r in rows}}


def _checkpoint(r: Row) -> tuple:
    return (r.model, r.cfg["weights_variant"], r.cfg.get("weights_gb_total"))


def leave_one_group_out(corrections: bool = True) -> list[dict]:
    """Refit without each *deployment* (the fit rows sharing their non-KV inputs, ``_non_kv_key``)
    and predict its rows: the error to expect on a deployment the fit has not seen. ``covered`` says
    whether the rest of the fit still has a boot of the same checkpoint (model and weights); when it
    has not, the left-out rows were the only carriers of a term (a checkpoint correction, the Gemma
    offset of that checkpoint) and the error is what an uncalibrated checkpoint can be off by.
    Returns one dict per deployment: deployment, ids, errors_gib (available KV), covered."""
    fit_rows = _fit_rows()
    keys = list(dict.fromkeys(_non_kv_key(r) for r in fit_rows))
    out = []
    for k in keys:
        group = [r for r in fit_rows if _non_kv_key(r) == k]
        train = [r for r in fit_rows if _non_kv_key(r) != k]
        coef = _as_coefficients(fit_coefficients(train, corrections))
        errs = {rec["id"]: rec["available_error_gib"] for rec in compare(group, coefficients=coef)
                if "available_error_gib" in rec}
        covered = any(_checkpoint(t) == _checkpoint(group[0]) for t in train)
        weights = k[6] and f"{k[6]} GB" or k[4]
        out.append({"deployment": f"{k[0]} ({weights}) TP={k[2]} batched={k[3]}", "ids": [r.id for r in group],
                    "errors_gib": errs, "covered": covered})
    return out


def error_band_gib(covered: bool = True) -> float:
    """The largest leave-one-deployment-out error of available KV memory (GiB) over deployments whose
    checkpoint the rest of the fit covers (``kvmath.budget.CALIBRATION_ERROR_GIB``), or with
    ``covered=False`` over those it does not (``kvmath.budget.UNCOVERED_ERROR_GIB``)."""
    return max(abs(e) for g in leave_one_group_out() if g["covered"] == covered for e in g["errors_gib"].values())


def leave_one_out() -> dict:
    """Refit without each fit row in turn and predict it: {id: available-KV error in GiB}. The honest
    error of a row kvmath has not seen."""
    fit_rows = _fit_rows()
    out = {}
    for r in fit_rows:
        coef = fit_coefficients([o for o in fit_rows if o.id != r.id])
        coef = _as_coefficients(coef)
        rec = compare([r], coefficients=coef)[0]
        if "available_error_gib" in rec:
            out[r.id] = rec["available_error_gib"]
    return out


CALIBRATION_JSON = "calibration/vllm_non_kv.json"
"""The fitted non-KV constants ``kvmath.engines.vllm.budget`` reads, written by ``write_calibration``."""

_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _count(n: int) -> str:
    return _WORDS[n] if n < len(_WORDS) else str(n)


def calibration_notes(coefficients=None) -> dict:
    """The evidence ``kvmath.engines.vllm.budget``'s notes cite, built from the rows whose ``cited_by``
    names a note: {note key: text}. ``projected_weights`` is computed (the available-KV error of the
    rows cited for it, at ``coefficients``, default the shipped ones); the others join the rows'
    ``citation`` with their ids."""
    by_key: dict[str, list[Row]] = {}
    for r in ROWS:
        if r.cited_by:
            by_key.setdefault(r.cited_by, []).append(r)
    out = {}
    for key, rows in by_key.items():
        if key == "projected_weights":
            errs = [abs(rec["available_error_gib"]) for rec in compare(rows, coefficients=coefficients)
                    if "available_error_gib" in rec]
            if not errs:
                raise KvMathError(f"{BOOTS_CSV}: the rows cited for {key} have no available-KV error to quote")
            lo, hi = f"{min(errs):.1f}", f"{max(errs):.1f}"
            out[key] = (f"the {_count(len(errs))} boots priced on one missed their logged KV memory by "
                        f"{lo if lo == hi else lo + '-' + hi} GiB per card "
                        f"({', '.join(r.id for r in rows)} in the Calibration chapter)")
        else:
            out[key] = "; ".join(f"club-3090 {r.id}: {r.citation}" for r in rows)
    return out


def calibration_record() -> dict:
    """What the fit writes to ``data/calibration/vllm_non_kv.json``: the coefficients
    (``fit_coefficients()``), the error bands (``error_band_gib()``, rounded to 0.01 GiB, and
    ``error_band_gib(covered=False)``, to 0.1 GiB), the checkpoints and cards the fit has boots of
    (``coverage()``), and the evidence the budget's notes cite (``calibration_notes``).
    ``fitted_checkpoints`` is an input of the fit (which checkpoint sizes get a correction), kept as
    the shipped file has it."""
    fit = fit_coefficients()
    coef = {k: v for k, v in fit.items() if k not in ("n_fit", "n_peak")}
    cov = coverage()
    return {
        "source": f"data/{BOOTS_CSV} and data/{PUBLIC_CSV}: least absolute deviations on the boots whose scope is "
                  "'specified' and whose available KV memory is logged or implied by the logged pool (the "
                  "Calibration chapter)",
        "written_by": "python -m kvmath.engines.vllm.calibration --write "
                      "(kvmath.engines.vllm.calibration.write_calibration); tests/test_calibration.py refits "
                      "and compares",
        "units": {"*_gib": "GiB (2^30 B) per card", "weights_extra_gb[...]": "GB (1e9 B) of the whole checkpoint",
                  "calibration_error_gib / uncovered_error_gib": "GiB of available KV memory per card"},
        "coefficients": coef,
        "fitted_checkpoints": list(FITTED_CHECKPOINTS),
        "logged_checkpoints": {k: {"gib": g, "line": line, "sources": list(urls)}
                               for k, (g, urls, line) in LOGGED_CHECKPOINT_GIB.items()},
        "calibration_error_gib": round(error_band_gib(), 2),
        "uncovered_error_gib": round(error_band_gib(covered=False), 1),
        "n_fit": fit["n_fit"], "n_peak": fit["n_peak"],
        "coverage": {"checkpoints": [list(c) for c in sorted(cov["checkpoints"])], "cards": sorted(cov["cards"])},
        "notes": calibration_notes(_as_coefficients(coef)),
    }


def write_calibration() -> str:
    """Refit and write ``data/calibration/vllm_non_kv.json``; returns the path written. Restart Python
    to price with the new constants (``kvmath.engines.vllm.budget`` reads them once, at import)."""
    return str(facts.write_json(CALIBRATION_JSON, calibration_record()))


def frame(records=None):
    """``compare()`` as a pandas DataFrame (pandas imported here)."""
    import pandas as pd

    return pd.DataFrame(records if records is not None else compare())


def _misses(ids) -> str:
    return "(" + " ".join(ids) + ")" if ids else ""


def table_text(records=None) -> str:
    """A plain-text table for ``kvmath-fit --calibration``."""
    recs = records if records is not None else compare()
    head = (f"{'id':<5} {'model':<16} {'measured':<8} {'kvmath':<8} {'availKV meas':>12} {'pred':>6} {'err':>6} "
            f"{'errU':>6} {'pool meas':>10} {'pred':>10} {'err%':>6} {'peak meas':>9} {'pred':>6} {'anchor GB':>9} {'verdict':<7} scope")
    lines = ["Calibration: kvmath vs measured vLLM boots (GiB = 2^30 B per card; anchor GB = 1e9 B; err: predicted "
             "- measured with the weights the fit uses, errU: with kvmath's own weights, what a pasted launch line "
             "gets, '-' where it cannot price them: see the weights table)", head, "-" * len(head)]

    def f(v, fmt):
        """``v`` in ``fmt``, or a right-aligned "-" of the same width; no negative zero."""
        m = re.match(r"[+]?(\d*),?(?:\.(\d+))?", fmt)
        width, prec = int(m.group(1) or 0), m.group(2)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or (isinstance(v, float) and math.isnan(v)):
            return "-".rjust(width)
        if isinstance(v, float) and prec is not None:
            v = round(v, int(prec)) + 0.0  # -0.004 -> 0.0, not "-0.00"
        return format(v, fmt)

    for r in recs:
        if r.get("status") != "priced":
            lines.append(f"{r['id']:<5} {r['model']:<16} excluded: {r.get('why', '')}")
            continue
        if r.get("same_boot"):
            lines.append(f"{r['id']:<5} {r['model']:<16} the boot of {r['same_boot']} (anchor: "
                         f"{f(r.get('anchor_pred_gb'), '.2f')} GB {r.get('anchor_verdict') or '-'}); counted once")
            continue
        lines.append(
            f"{r['id']:<5} {r['model']:<16} {str(r['measured_outcome']):<8} {r['predicted_outcome']:<8} "
            f"{f(r.get('measured_available_gib'), '12.2f')} {f(r.get('predicted_available_gib'), '6.2f')} "
            f"{f(r.get('available_error_gib'), '+6.2f')} {f(r.get('user_available_error_gib'), '+6.2f')} "
            f"{f(r.get('measured_pool_tokens'), '10,d')} "
            f"{f(r.get('predicted_pool_tokens') if 'measured_pool_tokens' in r and r['predicted_outcome'] == 'boots' else None, '10,d')} "
            f"{f(r.get('pool_tokens_error_pct'), '+6.1f')} {f(r.get('measured_peak_gib'), '9.2f')} "
            f"{f(r.get('predicted_peak_gib') if 'measured_peak_gib' in r else None, '6.2f')} "
            f"{f(r.get('anchor_pred_gb'), '9.2f')} {r.get('anchor_verdict') or '-':<7} {r['scope']}")
    s = summary(recs)
    sp = s["specified"]

    def cell(n, d, ids):
        return f"{n}/{d} {_misses(ids)}"

    lines += ["", f"{'goal':<30}{'specified rows':<26}all priced rows",
              f"{'outcome agrees':<30}{cell(sp['outcome_agrees'], sp['priced'], sp['outcome_misses']):<26}"
              f"{cell(s['outcome_agrees'], s['priced'], s['outcome_misses'])}",
              f"{'available KV within 0.5 GiB':<30}"
              f"{cell(sp['available_within_0_5_gib'], sp['available_gib']['n'], sp['available_misses']):<26}"
              f"{cell(s['available_within_0_5_gib'], s['available_gib']['n'], s['available_misses'])}",
              f"{'pool tokens within 5%':<30}"
              f"{cell(sp['pool_within_5_pct'], sp['pool_tokens_pct']['n'], sp['pool_misses']):<26}"
              f"{cell(s['pool_within_5_pct'], s['pool_tokens_pct']['n'], s['pool_misses'])}",
              *_weights_lines(s["user_weights"]),
              f"marginal verdicts (margin inside +/-{CALIBRATION_ERROR_GIB} GiB) among the misses: "
              f"{' '.join(sp['outcome_misses_marginal']) or 'none'}",
              "Rows outside 'specified': " + "; ".join(f"{k} {', '.join(v)}" for k, v in s["scopes"].items()
                                                       if v and k != "specified"),
              f"peak: mean |error| {s['peak_gib'].get('mean_abs', 0):.2f} GiB over {s['peak_gib']['n']} boots; on the "
              f"anchor's {s['anchor_peak_gib']['n']} rows kvmath {s['peak_gib_on_anchor_rows'].get('mean_abs', 0):.2f} GiB, "
              f"the anchor's GB (as GiB) {s['anchor_peak_gib'].get('mean_abs', 0):.2f} GiB",
              "The anchor's verdict column is its own PASS/TIGHT/FAIL (kv-calc 5b3793b8); it never compares GiB."]
    return "\n".join(lines)


def _weights_lines(w: dict) -> list[str]:
    """``weights_summary`` as text lines: one per column, all boots and the ``specified`` ones, then the boots
    kvmath cannot price without the row's weights figure."""
    def col(c, label):
        return (f"{label}: {c['within']}/{c['n']} within {w['goal_gib']:g} GiB, mean |err| {c['mean_abs']:.2f}, "
                f"max |err| {c['max_abs']:.2f} GiB ({c['max_id'] or '-'}); outcome agrees {c['outcome_agrees']}/"
                f"{c['outcome_n']}")

    sp = w["specified"]
    lines = [f"available KV with the fit's weights vs kvmath's own, over the {w['compared']} boots priced both ways "
             f"with a measured figure (weights differ on {len(w['weights_differ'])}: "
             f"{' '.join(w['weights_differ']) or 'none'}):",
             "  " + col(w["logged_weights"], "logged weights") + f"; specified: {sp['logged_weights']['within']}/"
             f"{sp['logged_weights']['n']}, max {sp['logged_weights']['max_abs']:.2f}",
             "  " + col(w["user_weights"], "user weights  ") + f"; specified: {sp['user_weights']['within']}/"
             f"{sp['user_weights']['n']}, max {sp['user_weights']['max_abs']:.2f}"]
    lines += [f"  not priced without the row's weights ({len(w['unpriced'])}): "
              + ("; ".join(f"{i} {why}" for i, why in w["unpriced"].items()) or "none")]
    return lines


def weights_text(records=None) -> str:
    """The weights table of ``kvmath-fit --calibration``: every priced boot (club-3090's ``compare()`` rows and the
    priceable public ones, ``public_rows``; each boot once) with the weights per card it is calibrated with
    (``from``: logged "Model loading took", a given size, or kvmath's), kvmath's own, and the available-KV error
    (predicted - measured, GiB = 2^30 B per card) and outcome with each; then ``weights_summary``."""
    recs = records if records is not None else compare() + compare(public_rows())
    recs = [r for r in recs if r.get("status") == "priced" and not r.get("same_boot")]
    head = (f"{'id':<5} {'model':<16} {'card':<11} {'tp':>2} {'from':<6} {'weights':>7} {'kvmath':>7} {'diff':>6} "
            f"{'availKV meas':>12} {'err':>6} {'errU':>6} {'outcome meas/fit/user':<23} kvmath's weights")
    lines = ["Weights: the fit's (logged where the boot logged 'Model loading took') against kvmath's own, what a "
             "user pasting the launch line gets (GiB = 2^30 B per card; err / errU: predicted - measured)", head,
             "-" * len(head)]

    def g(v, fmt):
        return "-".rjust(int(re.match(r"[+]?(\d+)", fmt).group(1))) if v is None else format(round(v, 2) + 0.0, fmt)

    for r in recs:
        outcome = f"{r['measured_outcome']}/{r['predicted_outcome']}/{r.get('user_predicted_outcome', '-')}"
        lines.append(f"{r['id']:<5} {r['model']:<16} {r['card']:<11} {r['tp']:>2} {r['weights_from']:<6} "
                     f"{g(r['weights_gib'], '7.2f')} {g(r.get('user_weights_gib'), '7.2f')} "
                     f"{g(r.get('weights_difference_gib'), '+6.2f')} {g(r.get('measured_available_gib'), '12.2f')} "
                     f"{g(r.get('available_error_gib'), '+6.2f')} {g(r.get('user_available_error_gib'), '+6.2f')} "
                     f"{outcome:<23} {r.get('user_weights_from') or 'not priced: ' + r.get('user_unpriced', '')}")
    return "\n".join(lines + [""] + _weights_lines(weights_summary(recs)))


__all__ = ["BOOTS_CSV", "CALIBRATION_JSON", "FEATURES", "ROWS", "Row", "SCOPES", "calibration_notes",
           "calibration_record", "read_rows", "write_calibration", "compare", "fit_coefficients", "frame", "held_out",
           "coverage", "error_band_gib", "measured_for_preset", "leave_one_group_out", "leave_one_out", "outliers", "summary", "table_text", "user_config",
           "weights_summary", "weights_text"]


def main(argv=None) -> int:
    """``python -m kvmath.engines.vllm.calibration --write``: refit and write the calibration JSON;
    ``--check``: exit 1 when the shipped JSON differs from what the fit gives."""
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m kvmath.engines.vllm.calibration", description=main.__doc__)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help=f"refit and write data/{CALIBRATION_JSON}")
    g.add_argument("--check", action="store_true", help=f"compare data/{CALIBRATION_JSON} with a refit")
    args = p.parse_args(argv)
    if args.write:
        print(f"wrote {write_calibration()}")
        return 0
    shipped, fresh = facts.read_json(CALIBRATION_JSON), calibration_record()
    if shipped != json.loads(json.dumps(fresh)):
        print(f"data/{CALIBRATION_JSON} differs from the fit; run with --write")
        return 1
    print(f"data/{CALIBRATION_JSON} is what the fit gives")
    return 0



# ---------------------------------------------------------------------------------------------------
# the public corpus and the leave-one-model-out / leave-one-GPU-out errors

PUBLIC_CSV = "measurements/vllm-public-boots.csv"
_GPU_CARDS = {"RTX 3090": "rtx3090", "RTX 4090": "rtx4090", "RTX 5090": "rtx5090", "A100": "a100", "H100": "h100",
              "RTX A6000": "a6000", "B200": "b200", "RTX PRO 6000 Blackwell": "rtx-6000-pro-blackwell",
              "A10": "a10", "A10G": "a10g", "L4": "l4", "L40S": "l40s", "H200": "h200", "H20": "h20",
              "A100 40GB": "a100-40", "RTX A4000": "a4000", "RTX 5080": "rtx5080", "RTX 3090 Ti": "rtx3090ti",
              "T4": "t4", "V100": "v100-32", "A30": "a30"}


def _setting(text: str, kind=int):
    """A public-corpus setting cell: ``N (stated)`` / ``N (logged)`` / ``default(N ...)`` -> N;
    ``default(<words>)`` without a leading number -> "serve-default"; ``unstated`` -> None."""
    t = (text or "").strip()
    if not t or t.startswith("unstated"):
        return None
    m = re.match(r"default\(([^ )=]+)", t)
    if m:
        v = m.group(1)
    else:
        v = t.split(" ")[0]
    if kind is bool:
        return {"true": True, "false": False}.get(v.lower().rstrip(")"), "serve-default")
    if kind is str:
        return v
    try:
        return kind(v)
    except ValueError:
        return "serve-default"


def _release(text: str) -> tuple | None:
    """The (major, minor) of a public row's ``vllm_version`` cell: the first ``0.N`` release it names (stated,
    logged, the era it dates the log to, or the image tag it names: ``v0.11.0``); None when it names none."""
    m = re.search(r"(?<![\d.])v?(0)\.(\d{1,2})(?![\d])", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def public_rows() -> list[Row]:
    """The rows of ``data/measurements/vllm-public-boots.csv`` kvmath can price as an out-of-sample test: a V1
    boot with an "Available KV cache memory" line, a known model and card, every memory setting stated or a
    rule's default, and the weights vLLM logged ("Model loading took", given as the checkpoint size so the
    test is of the non-KV terms). ``scope``: ``specified``, or ``projected`` when the log has no loading line
    and the checkpoint size is the deployments.json projection. Rows vLLM's V0 profiler logged are left out
    (another profile run). Rows marked held out (``facts.is_held_out_boot``) are left out."""
    from ... import facts as _facts

    out = []
    for rec in _facts.public_boots():
        if not rec.get("available_kv_gib") or "V0" in rec.get("vllm_version", "") or _facts.is_held_out_boot(rec):
            continue  # held-out rows (notes "held out: ...") never enter the fit or the cross-validation
        try:
            model = _facts.resolve_model(rec["model"])["id"]
        except Exception:  # noqa: BLE001 - a model kvmath does not know
            continue
        card_id = _GPU_CARDS.get(rec["gpu"])
        if card_id is None:
            continue
        cfg = {"card": card_id}
        for col, key, kind in (("tensor_parallel_size", "tp", int), ("gpu_memory_utilization", "mem_util", float),
                               ("max_model_len", "max_model_len", int), ("max_num_seqs", "max_num_seqs", int),
                               ("max_num_batched_tokens", "max_num_batched_tokens", int),
                               ("enforce_eager", "enforce_eager", bool)):
            v = _setting(rec.get(col, ""), kind)
            if v is None:
                break
            if v != "serve-default":
                cfg[key] = v
            elif key == "mem_util":  # vllm/config/cache.py: the release record's default; no release, no default
                ver = _release(rec.get("vllm_version", ""))
                if ver is None:
                    break
                cfg[key] = profile_release(ver).serve_gpu_memory_utilization
            elif key in ("max_num_seqs", "max_num_batched_tokens"):
                cfg[key] = None  # vllm serve's default for the card (budget: settings.serve_batch_settings)
        else:
            ver = _release(rec.get("vllm_version", ""))
            if ver is not None and not profile_release(ver).estimate_cudagraphs:
                # a release before 0.20 (a profile-only record, or a 0.10-0.19 record read in part): its profile
                # run as that release ran it
                # (activation.release_rules: no CUDA graph estimate, the sort top-k/top-p sampler before 0.16)
                cfg["profile_release"] = f"{ver[0]}.{ver[1]}"
            kv = _setting(rec.get("kv_cache_dtype", ""), str)
            cfg["kv_format"] = "auto" if kv in (None, "auto", "serve-default") else kv
            scope, logged, user_cfg, user_why = "specified", False, None, ""
            other = rec.get("other_settings", "")
            if "enable_prefix_caching=True" in other or "--enable_prefix_caching" in other:
                cfg["enable_prefix_caching"] = True
            if rec.get("model_loading_gib"):
                cfg["weights_gb_total"] = float(rec["model_loading_gib"]) * GIB / GB * cfg.get("tp", 1)
                logged = True
                user_cfg, user_why = _public_user_cfg(rec, cfg)
            elif "nvfp4" in rec.get("checkpoint", "").lower():
                cfg["weights_variant"], scope = "nvfp4", "projected"
            else:
                continue
            out.append(Row(rec["id"], "public", model, cfg, rec["outcome"], avail_gib=float(rec["available_kv_gib"]),
                           tokens=int(rec["pool_tokens"]) if rec.get("pool_tokens") else None,
                           fit=True, scope=scope, source_url=rec.get("source_url", ""),
                           why="public corpus; weights = the logged 'Model loading took'" if scope == "specified"
                           else "public corpus; weights = the projected nvfp4 size (no loading line)",
                           weights_logged=logged, user_cfg=user_cfg, user_why=user_why))
    return out


def _public_user_cfg(rec: dict, cfg: dict) -> tuple[dict | None, str]:
    """A public row's configuration as its launch line gives it to kvmath, without the logged weights: a boot of
    the model's own HF checkpoint (the ``checkpoint`` column names it) is priced from that checkpoint's config
    and quantization_config (``weights_variant`` ``hf``, what ``kvmath-fit`` gives a line naming the repository,
    with the card's kernel rules such as ``weights.mxfp4_backend``); any other checkpoint is (None, why)."""
    if "hf checkpoint" in rec.get("checkpoint", "").lower():
        user = {k: v for k, v in cfg.items() if k != "weights_gb_total"}
        user["weights_variant"] = "hf"
        return user, ""
    return None, (f"the checkpoint ({rec.get('checkpoint', '')[:80]}) is neither the model's own HF checkpoint "
                  "nor a data/deployments.json variant")


def _cv_rows() -> list[Row]:
    """The rows the cross-validation runs on: club-3090's fit rows and the priceable public rows, each boot once."""
    return _fit_rows() + [r for r in public_rows() if r.scope == "specified"]


def _gpu(r: Row) -> str:
    return r.cfg["card"]


def leave_one_out_by(key: str = "model", terms=FIT_TERMS, rows=None) -> list[dict]:
    """Refit without every boot sharing one ``key`` ("model" or "gpu") and predict those boots: the error to
    expect on a model (a card) the fit has never seen. Over club-3090's fit rows and the priceable public
    rows (``public_rows``). Returns one dict per boot: id, model, gpu, held-out group, measured and
    predicted available KV (GiB), error (GiB), outcome measured / predicted, pool tokens error (%)."""
    rows = rows if rows is not None else _cv_rows()
    kf = (lambda r: r.model) if key == "model" else _gpu
    out = []
    for g in dict.fromkeys(kf(r) for r in rows):
        train = [r for r in rows if kf(r) != g]
        test = [r for r in rows if kf(r) == g]
        if not train:
            continue
        coef = _as_coefficients(fit_coefficients(train, terms=terms))
        for rec in compare(test, coefficients=coef):
            if "available_error_gib" not in rec:
                continue
            out.append({"id": rec["id"], "model": rec["model"], "gpu": rec["card"], "held_out": g,
                        "measured_available_gib": rec["measured_available_gib"],
                        "predicted_available_gib": rec["predicted_available_gib"],
                        "error_gib": rec["available_error_gib"], "measured_outcome": rec["measured_outcome"],
                        "predicted_outcome": rec["predicted_outcome"], "outcome_agrees": rec["outcome_agrees"],
                        "pool_tokens_error_pct": rec.get("pool_tokens_error_pct")})
    return out


def cv_summary(records: list[dict], goal_gib: float = 0.5, goal_pct: float = 5.0) -> dict:
    """The issue's targets over held-out records: available KV within ``goal_gib`` on >= 80 %, the outcome
    right on all, pool tokens within ``goal_pct`` wherever the available memory is within ``goal_gib``."""
    n = len(records)
    within = [r for r in records if abs(r["error_gib"]) <= goal_gib]
    pool = [r for r in within if r["pool_tokens_error_pct"] is not None]
    pool_ok = [r for r in pool if abs(r["pool_tokens_error_pct"]) <= goal_pct]
    errs = sorted(abs(r["error_gib"]) for r in records)
    return {"n": n, "within_gib": len(within), "share_within": len(within) / n if n else 0.0,
            "target_share_met": bool(n) and len(within) / n >= 0.8,
            "outcome_agrees": sum(r["outcome_agrees"] for r in records),
            "outcome_target_met": all(r["outcome_agrees"] for r in records),
            "pool_checked": len(pool), "pool_within": len(pool_ok), "pool_target_met": len(pool_ok) == len(pool),
            "mean_abs_gib": sum(errs) / n if n else 0.0, "max_abs_gib": errs[-1] if errs else 0.0,
            "median_abs_gib": errs[n // 2] if errs else 0.0,
            "misses": sorted(r["id"] for r in records if abs(r["error_gib"]) > goal_gib),
            "outcome_misses": sorted(r["id"] for r in records if not r["outcome_agrees"])}


def cv_text() -> str:
    """Leave-one-model-out and leave-one-GPU-out errors as plain text (``kvmath-fit --calibration``)."""
    lines = []
    for key in ("model", "gpu"):
        recs = leave_one_out_by(key)
        s = cv_summary(recs)
        lines.append(f"Leave-one-{key}-out (refit without the {key}, predict its boots; GiB of available KV per card):")
        for r in recs:
            pe = r["pool_tokens_error_pct"]
            lines.append(f"  {r['id']:<5} {r['model']:<16} {r['gpu']:<8} measured {r['measured_available_gib']:7.2f} "
                         f"predicted {r['predicted_available_gib']:7.2f} error {r['error_gib']:+6.2f}  outcome "
                         f"{r['measured_outcome']}/{r['predicted_outcome']}"
                         + (f"  pool {pe:+.1f}%" if pe is not None else ""))
        lines.append(f"  within 0.5 GiB: {s['within_gib']}/{s['n']} ({100 * s['share_within']:.0f} %, target 80 %: "
                     f"{'met' if s['target_share_met'] else 'NOT met'}); outcome right {s['outcome_agrees']}/{s['n']} "
                     f"({'met' if s['outcome_target_met'] else 'NOT met'}); pool within 5 % where available is within "
                     f"0.5 GiB: {s['pool_within']}/{s['pool_checked']} "
                     f"({'met' if s['pool_target_met'] else 'NOT met'}); mean |error| {s['mean_abs_gib']:.2f} GiB, "
                     f"max {s['max_abs_gib']:.2f} GiB")
    return "\n".join(lines)


__all__ += ["FIT_TERMS", "LOGGED_CHECKPOINT_GIB", "PUBLIC_CSV", "cv_summary", "cv_text", "leave_one_out_by",
            "public_rows"]


if __name__ == "__main__":
    raise SystemExit(main())
