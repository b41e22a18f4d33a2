"""llama.cpp tokens/s under offload: a bandwidth model calibrated on published llama-bench / llama-server runs.

Generation (one token a step) reads, per token, the weights it uses:

- from VRAM: everything that is not an expert or the input embedding (attention, norms, routers, shared
  experts, the output head; a tied embedding is read as the output head), plus the active share of the
  experts left on the card;
- from host RAM: the active share of the experts of the ``--n-cpu-moe`` layers (the CPU runs them).

    t_tg = dense_bytes / (eff_vram x BW) + expert_gpu_bytes / (eff_vram_experts x BW) + host_bytes / (eff_host x RAM BW)

(the active experts on the card are read at their own efficiency: eight small matrices gathered per layer
stream far below the card's bandwidth, which one dense efficiency cannot fit).

Prompt processing of ``P`` tokens in micro-batches of ``n_ubatch``: the card's compute bound
(``2 x active params`` FLOP a token) plus, for CPU-resident experts, one copy of them over PCIe per
micro-batch (llama.cpp moves the expert weights to the GPU for batches of 32 tokens and more):

    t_pp = P x 2 x (dense_active / eff_compute + expert_active / eff_compute_experts) / TFLOPS
           + ceil(P / n_ubatch) x host_expert_bytes / (eff_pcie x PCIe)

(an expert sees about P x top_k / n_experts tokens of a micro-batch, so its matrices run far below peak).
Six constants, each fitted by least squares on the relative error of the time (``fit``), with the
leave-one-out error per run (``leave_one_out``). Bytes per parameter are taken uniform over the file
(``size / params``), an approximation: quantisation mixes put more bits in some tensors. The runs, their
URLs and quoted lines are in ``data/measurements/llamacpp-speed.csv``; the fitted constants in
``data/calibration/llamacpp_speed.json`` (``python -m kvmath.engines.llamacpp.speed --write``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from ... import facts
from ...units import GiB

CALIBRATION = "calibration/llamacpp_speed.json"
MEASUREMENTS = "measurements/llamacpp-speed.csv"


@dataclass(frozen=True)
class Run:
    """One published run, reduced to what the model needs."""

    id: str
    gpu: str
    model: str
    n_cpu_moe: int
    dense_bytes: float        # non-expert bytes read from VRAM per generated token
    expert_gpu_bytes: float   # active expert bytes read from VRAM per generated token
    host_bytes: float         # active expert bytes read from host RAM per generated token
    host_expert_bytes: float  # all expert bytes resident in host RAM (copied per micro-batch in pp)
    dense_params: float       # non-expert parameters a token multiplies (output head included)
    expert_active_params: float
    gpu_bandwidth_gbs: float
    host_bandwidth_gbs: float | None
    gpu_tflops: float | None
    pcie_gbs: float | None
    pp_tokens: int | None
    n_ubatch: int | None
    pp_tps: float | None
    tg_tps: float | None
    fit_tg: bool
    fit_pp: bool


def _f(x):
    return float(x) if x not in ("", None) else None


def split(*, size_bytes: float, params: float, expert_params: float, embd_params: float, tied: bool,
          active_fraction: float, n_moe_layers: int, n_cpu_moe: int) -> dict:
    """Bytes and parameters one token touches, as llama.cpp places them (the experts of the first
    ``n_cpu_moe`` MoE layers in host RAM, the input embedding always on the host)."""
    bpp = size_bytes / params
    cpu_layers = min(max(n_cpu_moe, 0), n_moe_layers) if n_moe_layers else 0
    host_exp = expert_params * (cpu_layers / n_moe_layers if n_moe_layers else 0.0)
    dense = params - expert_params - (0.0 if tied else embd_params)
    return {"dense_bytes": bpp * dense, "expert_gpu_bytes": bpp * active_fraction * (expert_params - host_exp),
            "host_bytes": bpp * active_fraction * host_exp, "host_expert_bytes": bpp * host_exp,
            "dense_params": dense, "expert_active_params": active_fraction * expert_params}


def runs(rows=None) -> list[Run]:
    out = []
    for r in rows if rows is not None else facts.llamacpp_speed_runs():
        sp = split(size_bytes=float(r["size_gib"]) * GiB, params=float(r["params_b"]) * 1e9,
                   expert_params=float(r["expert_params_b"] or 0) * 1e9,
                   embd_params=float(r["embd_params_b"] or 0) * 1e9, tied=r["tied_embd"] == "yes",
                   active_fraction=_f(r["active_expert_fraction"]) or 0.0, n_moe_layers=int(r["n_moe_layers"] or 0),
                   n_cpu_moe=int(r["n_cpu_moe"] or 0))
        use = r["use"]
        fit = use.startswith("fit")
        pp_ok = (fit and "tg only" not in use and r["pp_tokens"] != "" and r["pp_tps"] != ""
                 and r["gpu_tflops"] != "" and (not sp["host_expert_bytes"] or r["pcie_gbs"] != ""))
        out.append(Run(r["id"], r["gpu"], r["model"], int(r["n_cpu_moe"] or 0), sp["dense_bytes"],
                       sp["expert_gpu_bytes"], sp["host_bytes"], sp["host_expert_bytes"], sp["dense_params"],
                       sp["expert_active_params"], float(r["gpu_bandwidth_gbs"]), _f(r["host_bandwidth_gbs"]),
                       _f(r["gpu_tflops"]), _f(r["pcie_gbs"]), int(r["pp_tokens"]) if r["pp_tokens"] else None,
                       int(r["n_ubatch"]) if r["n_ubatch"] else None, _f(r["pp_tps"]), _f(r["tg_tps"]),
                       fit and r["tg_tps"] != "", pp_ok))
    return out


# --- features: time = sum_j x_j / eff_j ---------------------------------------------------------------------

TG_TERMS = ("eff_vram", "eff_vram_experts", "eff_host")
PP_TERMS = ("eff_compute", "eff_compute_experts", "eff_pcie")


def tg_features(r: Run):
    bw = r.gpu_bandwidth_gbs * 1e9
    x_host = r.host_bytes / (r.host_bandwidth_gbs * 1e9) if r.host_bytes else 0.0
    return r.dense_bytes / bw, r.expert_gpu_bytes / bw, x_host


def pp_features(r: Run):
    f = r.gpu_tflops * 1e12
    n_ub = math.ceil(r.pp_tokens / (r.n_ubatch or 512))
    x_pcie = n_ub * r.host_expert_bytes / (r.pcie_gbs * 1e9) if r.host_expert_bytes else 0.0
    return r.pp_tokens * 2 * r.dense_params / f, r.pp_tokens * 2 * r.expert_active_params / f, x_pcie


def _nnls(xs, ts):
    """Non-negative least squares on the relative error of the time, t ~ sum_j c_j x_j, by trying every
    subset of the columns that some run uses (at most three columns). Returns c_j, None where undetermined."""
    import itertools

    import numpy as np

    A = np.array([[x / t for x in row] for row, t in zip(xs, ts)])
    b = np.ones(len(ts))
    used = [j for j in range(A.shape[1]) if np.any(A[:, j] > 0)]
    best = None
    for k in range(len(used), 0, -1):
        for cols in itertools.combinations(used, k):
            c, *_ = np.linalg.lstsq(A[:, cols], b, rcond=None)
            if np.all(c > 0):
                res = float(np.sum((A[:, cols] @ c - b) ** 2))
                if best is None or res < best[0] - 1e-12:
                    best = (res, cols, c)
    out = [None] * A.shape[1]
    if best:
        for j, c in zip(best[1], best[2]):
            out[j] = float(c)
    return out


def fit(rs: list[Run] | None = None) -> dict:
    """The six efficiencies (None where no run determines one)."""
    rs = runs() if rs is None else rs
    tg = [r for r in rs if r.fit_tg]
    pp = [r for r in rs if r.fit_pp]
    inv = lambda x: None if not x else 1.0 / x
    ctg = _nnls([tg_features(r) for r in tg], [1.0 / r.tg_tps for r in tg])
    cpp = _nnls([pp_features(r) for r in pp], [r.pp_tokens / r.pp_tps for r in pp]) if pp else [None] * 3
    out = {name: inv(c) for name, c in zip(TG_TERMS, ctg)} | {name: inv(c) for name, c in zip(PP_TERMS, cpp)}
    return out | {"n_tg": len(tg), "n_pp": len(pp)}


def _predict(x, names, k):
    t = 0.0
    for xj, name in zip(x, names):
        if xj:
            if not k.get(name):
                return None
            t += xj / k[name]
    return t or None


def predict_tg(r: Run, k: dict) -> float | None:
    t = _predict(tg_features(r), TG_TERMS, k)
    return None if t is None else 1.0 / t


def predict_pp(r: Run, k: dict) -> float | None:
    if r.pp_tokens is None or r.gpu_tflops is None or (r.host_expert_bytes and r.pcie_gbs is None):
        return None
    t = _predict(pp_features(r), PP_TERMS, k)
    return None if t is None else r.pp_tokens / t


def leave_one_out(rs: list[Run] | None = None) -> list[dict]:
    """Per run: measured t/s, the fit on every run (in-sample) and the fit without it (out-of-sample), in %.
    A run whose term no other run determines gets no out-of-sample figure (None)."""
    rs = runs() if rs is None else rs
    full = fit(rs)
    out = []
    for r in rs:
        rest = fit([x for x in rs if x.id != r.id])
        row = {"id": r.id, "gpu": r.gpu, "model": r.model, "n_cpu_moe": r.n_cpu_moe, "fit_tg": r.fit_tg,
               "fit_pp": r.fit_pp}
        for kind, meas, pred in (("tg", r.tg_tps, predict_tg), ("pp", r.pp_tps, predict_pp)):
            p_in, p_out = pred(r, full), pred(r, rest)
            row[f"{kind}_measured"] = meas
            row[f"{kind}_fit"] = p_in
            row[f"{kind}_loo"] = p_out
            row[f"{kind}_fit_error_pct"] = (100 * (p_in - meas) / meas) if (meas and p_in) else None
            row[f"{kind}_loo_error_pct"] = (100 * (p_out - meas) / meas) if (meas and p_out) else None
        out.append(row)
    return out


def summary(loo: list[dict]) -> dict:
    out = {}
    for kind in ("tg", "pp"):
        errs = sorted(abs(r[f"{kind}_loo_error_pct"]) for r in loo
                      if r[f"fit_{kind}"] and r[f"{kind}_loo_error_pct"] is not None)
        out[f"{kind}_loo_n"] = len(errs)
        out[f"{kind}_loo_median_abs_pct"] = round(errs[len(errs) // 2], 1) if errs else None
        out[f"{kind}_loo_max_abs_pct"] = round(errs[-1], 1) if errs else None
    return out


def calibration() -> dict:
    """What ``--write`` stores: the constants (rounded to 3 digits), the runs used and the LOO error."""
    rs = runs()
    k = fit(rs)
    loo = leave_one_out(rs)
    r3 = lambda x: None if x is None else round(x, 3)
    return {
        "_about": "Fitted by kvmath.engines.llamacpp.speed.fit from data/measurements/llamacpp-speed.csv; never edit by "
                  "hand (python -m kvmath.engines.llamacpp.speed --write). eff_* are fractions of the card's VRAM "
                  "bandwidth (dense weights; active experts), the host RAM bandwidth, the card's FP16 tensor TFLOPS "
                  "(dense; experts) and the PCIe link. Errors are leave-one-out, in % of the measured tokens/s; null "
                  "where the run is the only one that determines its term.",
        "constants": {key: r3(k[key]) for key in TG_TERMS + PP_TERMS},
        "n_tg": k["n_tg"], "n_pp": k["n_pp"],
        "fitted_tg": [r.id for r in rs if r.fit_tg], "fitted_pp": [r.id for r in rs if r.fit_pp],
        "loo": summary(loo),
        "loo_error_pct": {r["id"]: {"tg": r3(r["tg_loo_error_pct"]) if r["fit_tg"] else None,
                                    "pp": r3(r["pp_loo_error_pct"]) if r["fit_pp"] else None} for r in loo},
    }


def constants() -> dict:
    """The stored constants (``data/calibration/llamacpp_speed.json``)."""
    return facts.llamacpp_speed_calibration()["constants"]


def estimate(*, dense_gpu_bytes: float, expert_gpu_bytes: float, expert_host_bytes: float, active_fraction: float,
             gpu_bandwidth_gbs: float, host_bandwidth_gbs: float, kv_bytes_read: float = 0.0,
             dense_params: float | None = None, expert_active_params: float | None = None,
             gpu_tflops: float | None = None, pcie_gbs: float = 25.0, pp_tokens: int = 512, n_ubatch: int = 512,
             k: dict | None = None) -> dict:
    """Calibrated generation (and, given TFLOPS and parameters, prompt) tokens/s for one launch: bytes as
    placed (dense on the card, the experts split between card and host)."""
    k = constants() if k is None else k
    bw, hb = gpu_bandwidth_gbs * 1e9, host_bandwidth_gbs * 1e9
    t_dense = (dense_gpu_bytes + kv_bytes_read) / (k["eff_vram"] * bw)
    t_exp = active_fraction * expert_gpu_bytes / (k["eff_vram_experts"] * bw)
    t_host = active_fraction * expert_host_bytes / (k["eff_host"] * hb)
    t_tg = t_dense + t_exp + t_host
    out = {"tg_tokens_per_s": 1.0 / t_tg, "host_share_of_time": t_host / t_tg, "pp_tokens_per_s": None}
    if dense_params and gpu_tflops and k.get("eff_compute"):
        f = gpu_tflops * 1e12
        t_pp = pp_tokens * 2 * dense_params / (k["eff_compute"] * f)
        if expert_active_params:
            t_pp += pp_tokens * 2 * expert_active_params / (k["eff_compute_experts"] * f)
        if expert_host_bytes and k.get("eff_pcie"):
            t_pp += math.ceil(pp_tokens / n_ubatch) * expert_host_bytes / (k["eff_pcie"] * pcie_gbs * 1e9)
        out["pp_tokens_per_s"] = pp_tokens / t_pp
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cal = calibration()
    if "--write" in argv:
        print(facts.write_json(CALIBRATION, cal))
        return 0
    if "--check" in argv:
        ok = facts.llamacpp_speed_calibration() == cal
        print("data/calibration/llamacpp_speed.json is " + ("what the fit gives" if ok else "STALE: rerun --write"))
        return 0 if ok else 1
    for r in leave_one_out():
        print(r)
    print(cal["constants"], cal["loo"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
