"""The model chapter's machinery (kvmath.book.chapter, glance, prose), without executing a notebook.

* the memory-against-context chart's stack crosses the card's limit exactly at the solver's largest context,
  for every known model (issue 24: the old chart drew weights + cache only and crossed near 120k tokens on
  Qwen 3.6 27B / RTX 3090 where the budget says 24,304);
* the at-a-glance answers come from the engines' solvers, and an engine is one entry of glance.ENGINES;
* a chapter keeps the template's paragraphs for the layer kinds its model has and drops the others.
"""

from __future__ import annotations

import re

import pytest

import kvmath
from kvmath.book import chapter, charts, frames, glance, prose

CARDS = ("rtx3090", "h100")


@pytest.mark.parametrize("model", list(kvmath.known_models()))
def test_memory_chart_crosses_the_limit_at_the_solvers_largest_context(model):
    from kvmath.engines.vllm.budget import budget, solve_max_model_len

    arch = kvmath.load_architecture(model)
    ctx, _ = frames.chapter_context(arch)
    flags, _ = frames.vllm_chapter_flags(arch, "bf16", ctx, 2048)
    off = {k: v for k, v in flags.items() if k == "enable_prefix_caching"}
    curve = chapter.budget_curve(model, CARDS, max_ctx=ctx, points=6, **off)
    for card in CARDS:
        b = budget(model, card=card, mem_util=0.92, max_num_seqs=1, max_model_len=ctx, **off)
        solved = solve_max_model_len(b)
        assert chapter.crossing(curve, card) == solved, (model, card)
        c = curve[curve["card"] == card]
        assert set(c["term"]) == set(charts.BUDGET_TERMS)
        # every term drawn: the stack at each length is the budget's non-KV + one request's KV
        for L, g in c.groupby("context"):
            bl = budget(model, card=card, mem_util=0.92, max_num_seqs=1, max_model_len=int(L), **off)
            assert int(g["bytes"].sum()) == bl.non_kv + bl.kv_per_request
            assert int(g["limit_bytes"].iloc[0]) == bl.requested
        if 0 < solved < ctx:  # the length one past the answer is drawn, over the limit
            over = c[c["context"] == solved + 1]["bytes"].sum()
            assert over > int(c["limit_bytes"].iloc[0])


def test_qwen36_27b_on_a_3090_answers_24304_tokens_as_the_issue_read_it():
    # issue 24 read 24,304 tokens off the chapter's pasted vLLM error at gpu_memory_utilization 0.9; the glance
    # prices vLLM's own default, 0.92 from 0.20 (vllm/config/cache.py): 0.02 x 23.69 GiB = 0.47 GiB more KV
    from kvmath.engines.vllm.budget import budget, solve_max_model_len

    ctx, _ = frames.chapter_context(kvmath.load_architecture("qwen3.6-27b"))
    assert solve_max_model_len(budget("qwen3.6-27b", card="rtx3090", mem_util=0.9, max_num_seqs=1,
                                      max_model_len=ctx)) == 24304
    a = glance.vllm_answer("qwen3.6-27b", "rtx3090")
    assert a.largest_context > 24304 and a.seqs_at_context == 0


def test_glance_engines_are_a_registry_and_a_table_takes_a_list_of_them():
    assert set(glance.ENGINES) >= {"vLLM", "llama.cpp"}
    f = glance.frame(["gpt-oss-20b"], cards=("rtx3090",), engines=["llama.cpp"])
    assert list(f["engine"]) == ["llama.cpp"] and int(f["largest_context"].iloc[0]) > 0
    with pytest.raises(kvmath.KvMathError, match="unknown engine"):
        glance.answers(["gpt-oss-20b"], engines=["tgi"])
    html = glance.chapter_table(glance.frame(["gpt-oss-20b"], cards=("rtx3090", "h100")))
    assert html.count("<tr>") == 3 and 'data-label="vLLM"' in html  # header + 2 cards
    # llama.cpp where kvmath writes no GGUF table: not applicable, said once with the models
    # (kimi-linear-48b-a3b has none; gemma-2-9b has one since Gemma 2 was tabled: answered, no note for it)
    f = glance.frame(["kimi-linear-48b-a3b", "gemma-2-9b"], cards=glance.GLANCE_CARDS, engines=["llama.cpp"])
    kimi = f["model"] == "kimi-linear-48b-a3b"
    assert f[kimi]["largest_context"].isna().all() and f[~kimi]["largest_context"].notna().all()
    assert len(glance.notes(f)) == 1 and "kimi_linear" not in glance.NO_GGUF_TABLE


def _written(model, tmp_path):
    import nbformat

    from kvmath.book.model_chapter import make_chapter

    out = make_chapter(model, tmp_path / f"{model}.ipynb")
    return "\n".join(c.source for c in nbformat.read(out, 4).cells if c.cell_type == "markdown")


def test_chapters_keep_only_the_paragraphs_of_their_layer_kinds(tmp_path):
    llama = _written("llama-3.1-8b", tmp_path)
    gptoss = _written("gpt-oss-20b", tmp_path)
    qwen = _written("qwen3.6-27b", tmp_path)
    deepseek = _written("deepseek-v3", tmp_path)
    assert "mamba_cache_mode" not in gptoss and "mamba_cache_mode" in qwen  # no recurrent layers, no state text
    assert "Multi-head latent attention" not in llama and "Multi-head latent attention" in deepseek
    assert "sliding-window <sliding window>" in gptoss and "sliding-window <sliding window>" not in qwen
    assert "It has neither" in llama and "It has neither" not in gptoss
    assert "No checkpoint is recorded" in gptoss and "No checkpoint" not in qwen


def test_particular_section_names_what_the_config_has():
    g = prose.particular(chapter.ModelChapter("gpt-oss-20b"))
    assert "alternates its attention" in g and "mixture of experts" in g and "latent" not in g
    d = prose.particular(chapter.ModelChapter("deepseek-v3"))
    assert "caches a latent" in d and "alternates" not in d
    q = prose.particular(chapter.ModelChapter("qwen3.6-27b"))
    assert "vision tower" in q and "Gated DeltaNet" in q
    assert re.search(r"temporal \(48, 128, 128\)", q)  # 48 value heads x 128 x 128 (config: linear_num_value_heads)
