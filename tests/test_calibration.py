"""kvmath.calibration: predicted vs measured for every measured row, the fit, and a held-out check."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from kvmath.budget import COEFFICIENTS
from kvmath.calibration import ROWS, compare, fit_coefficients, held_out, summary

SHARED = [Path(os.environ.get("KVMATH_SHARED", "/nonexistent")), Path(__file__).resolve().parents[2] / "shared",
          Path("/work/shared")]


def _csv(name):
    for root in SHARED:
        p = root / "measurements" / name
        if p.is_file():
            return list(csv.DictReader(p.open()))
    pytest.skip(f"{name} not found (set KVMATH_SHARED to the shared/ folder)")


def test_every_boot_fact_row_is_present():
    ids = {r.id.rstrip("ab") for r in ROWS}
    assert {row["id"] for row in _csv("club3090-boot-facts.csv")} <= ids


def test_every_calibration_row_is_present():
    rows = _csv("club3090-calibration-rows.csv")
    cal = [r for r in ROWS if r.id.startswith("C")]
    assert len(cal) == len(rows)
    for ours, theirs in zip(cal, rows):  # same order as the CSV
        assert ours.peak_gib == pytest.approx(float(theirs["measured_peak_gb"]))
        if theirs["pred_5b3793b8"]:
            assert ours.anchor[0] == pytest.approx(float(theirs["pred_5b3793b8"]))
            assert ours.anchor[1] == theirs["verdict_5b3793b8"]


def test_logged_values_match_csv():
    facts = {r["id"]: r for r in _csv("club3090-boot-facts.csv")}
    for r in ROWS:
        f = facts.get(r.id.rstrip("ab"))
        if f and f["avail_kv_gib_per_card"] and r.avail_gib is not None:
            assert r.avail_gib == pytest.approx(float(f["avail_kv_gib_per_card"].split()[0]))


def test_fit_reproduces_shipped_coefficients():
    fit = fit_coefficients()
    for k, v in COEFFICIENTS.items():
        assert fit[k] == pytest.approx(v, abs=0.01), k


def test_goals_and_known_misses():
    """What the calibration achieves (the chapter shows every row). Outcomes: all boot/refuse/OOM
    cases right except the rows of the maintainer's 3090 whose KV memory is 1.9 GiB above three other
    boots of the same compose (I32, C15, C16) and the Gemma 26B single-card row (F32)."""
    recs = compare()
    wrong = sorted(r["id"] for r in recs if r.get("status") == "priced" and not r["outcome_agrees"])
    assert wrong == ["C15", "C16", "F32", "I32"]
    fitted = [r for r in recs if r.get("used_in_fit") and "available_error_gib" in r]
    assert all(abs(r["available_error_gib"]) < 0.6 for r in fitted)
    s = summary(recs)
    assert s["available_within_0_5_gib"] >= 14
    assert s["peak_gib"]["mean_abs"] < s["anchor_peak_gib"]["mean_abs"]  # GiB vs GiB, the anchor never did this


def test_pool_tokens_within_5pct_where_modelled():
    """Pool tokens within 5% on the fitted rows except the two Gemma 31B AWQ rows (F10, F11b), whose
    non-KV memory is ~0.6 GiB above the fit (the 17.0 GB AWQ size is the registry's figure)."""
    recs = [r for r in compare() if "pool_tokens_error_pct" in r and r["used_in_fit"]]
    misses = sorted(r["id"] for r in recs if abs(r["pool_tokens_error_pct"]) > 5)
    assert misses == ["F10", "F11b"] and len(recs) >= 12


def test_held_out_rows():
    """Fit on every other row, report the error on the rows not used (GiB of available KV memory)."""
    h = held_out()
    assert set(h["train"]).isdisjoint(h["test"]) and len(h["test"]) >= 6
    assert h["mean_abs_gib"] < 0.6
    assert all(abs(e) < 1.0 for e in h["errors_gib"].values())


def test_chapter_executes(tmp_path):
    """notebooks/calibration.md runs top to bottom and glues the summary figures."""
    import jupytext
    import nbformat
    import papermill as pm

    from kvmath.book import read_glue

    root = Path(__file__).resolve().parents[1]
    src = tmp_path / "calibration.ipynb"
    nbformat.write(jupytext.read(root / "notebooks" / "calibration.md"), src)
    out = tmp_path / "out.ipynb"
    pm.execute_notebook(str(src), str(out), kernel_name="python3", cwd=str(root / "notebooks"), progress_bar=False)
    g = read_glue(nbformat.read(out, 4))
    s = summary()
    assert g["cal_outcome_agrees_count__raw"] == s["outcome_agrees"]
    assert g["cal_available_ok_count__raw"] == s["available_within_0_5_gib"]
