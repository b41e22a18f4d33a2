"""The Errata: every claim of the two source documents in data/errata.json is checked by a function of
kvmath.book.errata, in the chapter it concerns, and the Errata page links to each.

The pinned verdicts below are derived by hand in the tests, from the reference configs read as plain JSON
and from the anchor's calibration table as copied (data/measurements/club3090-calibration-rows.csv), not
from kvmath's own arithmetic.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from kvmath import facts
from kvmath.book import errata
from tests.conftest import ROOT, toc_docnames

RECORDS = errata.records()
IDS = [r["id"] for r in RECORDS]
GIB, GB = 2**30, 10**9


def _raw_config(name: str) -> dict:
    c = json.loads((ROOT / "data" / "configs" / name).read_text())
    return c.get("text_config", c)


def _record(check: str, **args) -> dict:
    """The one record with this check and these arguments."""
    hits = [r for r in RECORDS if r.get("check") == check and all(r["args"].get(k) == v for k, v in args.items())]
    assert len(hits) >= 1, (check, args)
    return hits[0]


# --- the records ----------------------------------------------------------------------------------

def test_records_are_complete_and_well_formed():
    assert IDS == [f"E{i:02d}" for i in range(1, len(IDS) + 1)]
    docs = errata.documents()
    assert set(docs) == {"club3090", "ru16gb"}
    per_doc = {d: sum(r["document"] == d for r in RECORDS) for d in docs}
    assert per_doc["club3090"] >= 60 and per_doc["ru16gb"] >= 15, per_doc
    toc = set(toc_docnames())
    for r in RECORDS:
        assert r["kind"] in errata.KINDS, r["id"]
        assert r["chapter"] in toc, (r["id"], r["chapter"])
        assert r["label"] == errata.label_for(r["chapter"]), r["id"]
        assert r["claim"] and r["section"], r["id"]
        if r.get("checkable", True):
            assert r["check"] in errata.CHECKS, r["id"]
        else:
            assert r["why"] and "check" not in r, r["id"]
        if "quote" in r:
            assert len(r["quote"].split()) <= 15, r["id"]


def test_labels_are_unique_per_chapter():
    by_label = {}
    for r in RECORDS:
        by_label.setdefault(r["label"], set()).add(r["chapter"])
    assert all(len(v) == 1 for v in by_label.values()), by_label
    # a model chapter's label comes from its id (the template cannot carry one label per model)
    assert errata.label_for("notebooks/generated/qwen3.6-27b") == "errata-qwen3-6-27b"


@pytest.mark.parametrize("rid", IDS)
def test_every_check_runs_and_returns_a_verdict(rid):
    r = next(x for x in RECORDS if x["id"] == rid)
    c = errata.run(r)
    assert c.verdict in errata.VERDICTS
    assert (c.verdict == "not checkable") == (not r.get("checkable", True)) or c.verdict == "not checkable"
    assert c.evidence and c.kvmath and c.document
    for text in (c.kvmath, c.document, c.evidence):
        assert not re.search(r"\b(nan|None|NaN)\b", text), (rid, text)


def test_chapter_sources_call_the_errata():
    """Every chapter with claims has the section: a label before its heading, or (model chapters) the template's
    cell that writes the label from the model id."""
    template = (ROOT / "notebooks" / "model_chapter.md").read_text()
    assert 'errata.chapter_markdown(f"notebooks/generated/{model}", target=True)' in template
    for chapter in {r["chapter"] for r in RECORDS}:
        if chapter.startswith("notebooks/generated/"):
            continue
        src = (ROOT / f"{chapter}.md").read_text()
        assert f"({errata.label_for(chapter)})=" in src, chapter
        assert f'chapter_markdown("{chapter}")' in src, chapter


def test_page_links_every_claim():
    text = errata.page_markdown("club3090") + errata.page_markdown("ru16gb")
    rows = [l for l in text.splitlines() if l.startswith("| ") and "{ref}" in l]
    assert len(rows) == len(RECORDS)
    for r in RECORDS:
        assert f"<{r['label']}>`" in text


# --- verdicts pinned against hand derivations ---------------------------------------------------------

def test_qwen36_27b_bytes_per_token_holds():
    """16 full-attention layers (counted in layer_types) x 4 KV heads x 256 x (K + V) x 2 B (bf16)."""
    cfg = _raw_config("Qwen__Qwen3.6-27B.json")
    full = cfg["layer_types"].count("full_attention")
    assert full == 16
    hand_tp1 = full * cfg["num_key_value_heads"] * cfg["head_dim"] * 2 * 2
    assert hand_tp1 == 65536
    r = _record("per_token", model="qwen3.6-27b", figures={"bf16": [65536, 32768], "fp8_e5m2": [32768, 16384]})
    c = errata.run(r)
    assert c.verdict == "holds"
    assert f"bf16: {hand_tp1:,} / {hand_tp1 // 2:,}" in c.kvmath
    assert f"fp8_e5m2: {hand_tp1 // 2:,} / {hand_tp1 // 4:,}" in c.kvmath


def test_gemma4_31b_bytes_per_token_wrong():
    """The document: 10 x 16 x 512 x 1 x 2 = 163,840 B. The config: num_global_key_value_heads = 4, and the
    cache keeps K and V: 10 x 4 x 512 x 2 x 2 = 81,920 B (bf16, TP 1)."""
    cfg = _raw_config("google__gemma-4-31B-it.json")
    full = cfg["layer_types"].count("full_attention")
    hand = full * cfg["num_global_key_value_heads"] * cfg["global_head_dim"] * 2 * 2
    assert (full, hand) == (10, 81920)
    doc = 10 * 16 * 512 * 1 * 2
    assert doc == 163840 == 2 * hand
    r = _record("per_token", model="gemma-4-31b")
    c = errata.run(r)
    assert c.verdict == "wrong"
    assert f"bf16: {hand:,} / {hand // 2:,}" in c.kvmath


def test_gemma4_kv_heads_total_holds():
    cfg = _raw_config("google__gemma-4-26B-A4B.json")
    lt = cfg["layer_types"]
    hand = lt.count("sliding_attention") * cfg["num_key_value_heads"] + lt.count("full_attention") * cfg[
        "num_global_key_value_heads"]
    assert hand == 25 * 8 + 5 * 2 == 210
    assert errata.run(_record("kv_heads_total", model="gemma-4-26b-a4b")).verdict == "holds"


def test_qwen36_35b_recurrent_state_wrong():
    """The document's vector sum, 30 x (2,048 + 4,096 + 4 x 6,144) x 4 B = 3,686,400 B, against the state
    matrix alone: 30 layers x 32 value heads x 128 x 128 x 4 B (float32) = 62,914,560 B per sequence."""
    cfg = _raw_config("Qwen__Qwen3.6-35B-A3B.json")
    n = cfg["layer_types"].count("linear_attention")
    k = cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"]
    v = cfg["linear_num_value_heads"] * cfg["linear_value_head_dim"]
    vector = n * (k + v + cfg["linear_conv_kernel_dim"] * (k + v)) * 4
    assert vector == 3686400
    matrix = n * cfg["linear_num_value_heads"] * cfg["linear_key_head_dim"] * cfg["linear_value_head_dim"] * 4
    assert matrix == 62914560
    c = errata.run(_record("recurrent_state", model="qwen3.6-35b-a3b", doc_bytes=3686400))
    assert c.verdict == "wrong"
    vllm = int(re.search(r"vLLM ([\d,]+) B", c.kvmath).group(1).replace(",", ""))
    assert vllm >= matrix
    assert "arithmetic is right" in c.evidence


def test_q8_0_is_not_one_byte():
    """ggml-common.h: block_q8_0 = {ggml_half d; int8_t qs[32]}: 34 B per 32 elements; block_q4_0 =
    {ggml_half d; uint8_t qs[16]}: 18 B per 32."""
    c = errata.run(_record("element_sizes"))
    assert c.verdict == "partly"
    assert f"q8_0 {34 / 32:g} B" in c.kvmath and f"q4_0 {18 / 32:g} B" in c.kvmath


def _anchor_table(model: str) -> list[dict]:
    path = ROOT / "data" / "measurements" / "club3090-calibration-rows.csv"
    with path.open(newline="") as f:
        return [r for r in csv.DictReader(f) if r["model"] == model and r["verdict_5b3793b8"]]


@pytest.mark.parametrize("model,doc_n", [("qwen3.6-27b", 11), ("gemma-4-31b", 7)])
def test_calibration_counts_wrong(model, doc_n):
    """The anchor's table as copied: its rows for the model, and how many of its predicted GB land within
    ±1.5 GB of the measured peak (a GiB value, converted to GB)."""
    rows = _anchor_table(model)
    within = sum(abs(float(r["pred_5b3793b8"]) - float(r["measured_peak_gb"]) * GIB / GB) <= 1.5 for r in rows)
    assert len(rows) != doc_n
    c = errata.run(_record("calibration_count", model=model))
    assert c.verdict == "wrong"
    assert c.kvmath.startswith(f"{len(rows)} rows;")
    assert f"{within} within ±1.5 GB" in c.kvmath


def test_overall_count_does_not_add_up():
    c = errata.run(_record("calibration_overall"))
    assert c.verdict == "wrong" and f"add up to {11 + 7}, not 17" in c.evidence


# --- the built book -----------------------------------------------------------------------------------

def test_built_book_has_every_section_and_link(book_html):
    html = book_html.html
    page = (html / "book" / "errata.html").read_text()
    for r in RECORDS:
        chapter = (html / f"{r['chapter']}.html").read_text()
        assert f'id="{r["label"]}"' in chapter, (r["id"], r["chapter"])
        target = Path(r["chapter"]).name + ".html#" + r["label"]
        assert target in page, (r["id"], target)
    assert "Checked claims from the source documents" in (html / "notebooks" / "formula.html").read_text()
