"""Public SGLang start-up logs (data/measurements/sglang-public-boots.csv, each row with its URL and quoted
lines) reproduced by kvmath's SGLang engine.

For every row: given the free memory the log reports before (T) and after (A) the weights, the pool's tokens
are reproduced within what the log's two-decimal GiB figures allow, and at the logged token count the K / V
sizes are reproduced to the log's two decimals (the line word for word). Rows with a known model and card:
from the launch line and the card alone, the pool is within 5 % of the log and the verdict is "boots".
Held-out rows (``held_out`` true) run in their own tests.
"""

from __future__ import annotations

import pytest

from kvmath import facts
from kvmath.engines import get_engine
from kvmath.engines.sglang.pools import Geometry, size_pools
from kvmath.engines.sglang.releases import TABLE
from kvmath.fit import run as fit_run

ROWS = facts.read_csv("measurements/sglang-public-boots.csv")
MAIN = [r for r in ROWS if r["held_out"] != "true"]
HELD = [r for r in ROWS if r["held_out"] == "true"]
# the token figure from the logged memory needs both memory figures; every row's pool line is checked regardless
MAIN_MEM, HELD_MEM = ([r for r in rows if r["total_gib"] and r["avail_gib"]] for rows in (MAIN, HELD))
ENGINE = get_engine("sglang")


def _geometry(r) -> Geometry:
    """The MHA pool of the row's model at its TP, from the row's config figures (the test's own reading)."""
    kvh = max(1, int(r["num_key_value_heads"]) // int(r["tp"]))
    L, d = int(r["num_hidden_layers"]), int(r["head_dim"])
    return Geometry("mha", "bfloat16", 2, tuple(range(L)), kvh, d, d, cell=kvh * d * L * 2 * 2)


def _line(r) -> str:
    return next(x.split("] ", 1)[-1] for x in r["quoted_lines"].split(" | ") if "KV Cache is allocated" in x)


def _check_pool_line(r):
    rel = TABLE.by_name[r["release"]]
    g = _geometry(r)
    n = int(r["tokens"])
    p = size_pools(g, rel, (n + 0.5) * g.cell / 2**30, page_size=1, context_len=4096, max_total_tokens=n)
    assert p.max_total_num_tokens == n
    assert p.log_lines[-1] == _line(r)


def _check_tokens(r):
    rel = TABLE.by_name[r["release"]]
    g = _geometry(r)
    T, A, f = float(r["total_gib"]), float(r["avail_gib"]), float(r["mem_fraction_static"])
    p = size_pools(g, rel, A - T * (1 - f), page_size=1, context_len=4096)
    # each printed figure is within 0.005 GiB of SGLang's own: rest moves by up to 0.005 (1 + (1 - f)) GiB
    slack = 0.005 * (1 + (1 - f)) * 2**30 / g.cell + 1
    assert abs(p.max_total_num_tokens - int(r["tokens"])) <= slack, (p.max_total_num_tokens, r["tokens"], slack)


@pytest.mark.parametrize("r", MAIN, ids=[r["id"] for r in MAIN])
def test_pool_line_word_for_word(r):
    _check_pool_line(r)


@pytest.mark.parametrize("r", MAIN_MEM, ids=[r["id"] for r in MAIN_MEM])
def test_tokens_from_logged_memory(r):
    _check_tokens(r)


@pytest.mark.parametrize("r", HELD, ids=[r["id"] for r in HELD])
def test_held_out_pool_line_word_for_word(r):
    _check_pool_line(r)


@pytest.mark.parametrize("r", HELD_MEM, ids=[r["id"] for r in HELD_MEM])
def test_held_out_tokens_from_logged_memory(r):
    _check_tokens(r)


def test_known_model_rows_use_the_engines_own_geometry():
    """For rows of a kvmath model, the engine's own geometry (read from data/configs) gives the same cell."""
    for r in ROWS:
        if not r["model"]:
            continue
        from kvmath.model.load import load_architecture

        arch = load_architecture(r["model"])
        s = ENGINE.settings(arch, max_ctx=4096, max_num_seqs=1, tp=int(r["tp"]), kv_format=None,
                            sglang_version=r["release"])
        assert ENGINE.geometry(arch, s).cell == _geometry(r).cell


LAUNCH = [r for r in ROWS if r["model"] and r["card"]]


@pytest.mark.parametrize("r", LAUNCH, ids=[r["id"] for r in LAUNCH])
def test_launch_line_and_card_give_the_pool_within_5_percent(r, capsys):
    import json

    argv = ["python", "-m", "sglang.launch_server", "--model-path", r["model"], "--tp", r["tp"],
            "--sglang-version", r["release"], "--card", r["card"], "--json", "--no-solve"]
    if r["mem_fraction_how"].startswith(("logged", "on the launch line")):
        argv += ["--mem-fraction-static", r["mem_fraction_static"]]
    assert fit_run(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "boots"
    assert abs(out["pool_tokens"] - int(r["tokens"])) <= 0.05 * int(r["tokens"])
    assert out["engine_detail"]["mem_fraction_static"] == float(r["mem_fraction_static"])


CARDS = [r for r in ROWS if r["card"] and r["total_gib"]]


@pytest.mark.parametrize("r", CARDS, ids=[r["id"] for r in CARDS])
def test_free_memory_before_the_weights(r):
    """kvmath's T (capacity - CUDA context - NCCL) against the log's "Load weight begin" figure, within 0.3 GiB
    (the CUDA context is an assumption that varies by card and driver)."""
    from kvmath.engines.sglang import budget

    cap = facts.cards()[r["card"]]["total_gib"]
    T = cap - budget.CUDA_CONTEXT_GIB - (budget.NCCL_GIB if int(r["tp"]) > 1 else 0)
    assert abs(T - float(r["total_gib"])) <= 0.3, (T, r["total_gib"])
