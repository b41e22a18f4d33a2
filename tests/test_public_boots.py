"""Schema of data/measurements/vllm-public-boots.csv: every row has a source URL, quoted log lines and every
setting (stated, or a default naming where it comes from)."""

from __future__ import annotations

import re

import pytest

from kvmath import facts

ROWS = facts.public_boots()
SETTINGS = ("tensor_parallel_size", "gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens",
            "kv_cache_dtype", "enforce_eager")
OUTCOMES = {"boots", "refused", "oom", "error", ""}
FIGURES = {"model_loading_gib": float, "available_kv_gib": float, "pool_tokens": int, "max_concurrency": float}


def test_has_rows_and_unique_ids():
    assert len(ROWS) >= 20
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"P\d{2,3}", i) for i in ids)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_row_schema(row):
    assert re.match(r"https://\S+$", row["source_url"]), row["source_url"]
    assert row["quoted_lines"].strip(), "no quoted log line"
    assert row["model"].strip() and row["gpu"].strip() and row["vllm_version"].strip()
    assert int(row["gpu_count"]) >= 1
    for s in SETTINGS:
        v = row[s].strip()
        assert v, f"{s} is empty: say 'N (stated)', 'default(...)' or 'unstated'"
    assert row["outcome"] in OUTCOMES
    for col, kind in FIGURES.items():
        if row[col]:
            value = kind(row[col])
            if col != "pool_tokens":  # pool tokens are derived from GPU blocks in V0 rows
                assert row[col] in row["quoted_lines"].replace(",", ""), (col, row[col])
            assert value == value  # not NaN


def test_counts():
    # issue #11's corpus: at least 60 public boots, of at least 15 models, 5 GPU kinds and 4 vLLM versions
    boots = [r for r in ROWS if r["outcome"] == "boots"]
    models = {r["model"] for r in boots}
    gpus = {r["gpu"] for r in boots if not r["gpu"].startswith("unstated")}
    versions = {m.group(0) for r in boots if (m := re.search(r"\b0\.\d+", r["vllm_version"]))}
    assert len(boots) >= 60 and len(models) >= 15 and len(gpus) >= 5 and len(versions) >= 4, (
        len(boots), len(models), len(gpus), sorted(versions))
