"""Every chapter runs under papermill, and every number it glues equals kvmath's for its parameters."""

from pathlib import Path

import jupytext
import papermill as pm
import pytest

import kvmath
from kvmath.book import frames as report
from kvmath.book import read_glue

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "notebooks" / "model_chapter.md"
MODELS = ["qwen3.6-27b", "qwen3.6-35b-a3b", "gemma-4-31b", "gemma-4-26b-a4b"]  # the models with presets
# one model per architecture kind the template must handle without presets or checkpoint sizes
OTHER_KINDS = ["nemotron-h-56b", "deepseek-v3", "kimi-linear-48b-a3b", "mistral-7b-v0.1"]


def reference(model, fmt="bf16"):
    """What a chapter quotes: one sequence at the model's maximum length, with the chapter's vLLM flags."""
    arch = kvmath.load_architecture(model)
    ctx, _ = report.chapter_context(arch)
    flags, _ = report.vllm_chapter_flags(arch, fmt, ctx, 2048)
    return ctx, flags, kvmath.derive(arch, kv_format=fmt, max_ctx=ctx, **flags)


def execute(path: Path, **parameters) -> dict:
    # Every cell runs in seconds; a cell that takes TIMEOUT_S is a kernel that lost a message (seen once in a CI
    # run: both sides waiting on ZMQ), so it is run once more instead of holding the suite until CI's limit.
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    from kvmath.book.execute import TIMEOUT_S

    for attempt in (1, 2):
        try:
            nb = pm.execute_notebook(jupytext.read(path), None, parameters=parameters, kernel_name="python3",
                                     cwd=str(path.parent), progress_bar=False, execution_timeout=TIMEOUT_S)
            break
        except (CellTimeoutError, DeadKernelError, TimeoutError):
            if attempt == 2:
                raise
    return {k[: -len("__raw")]: v for k, v in read_glue(nb).items() if k.endswith("__raw")}


_CHAPTERS = {}


def chapter(model, **params):
    key = (model, tuple(sorted(params.items())))
    if key not in _CHAPTERS:
        _CHAPTERS[key] = execute(TEMPLATE, model=model, **params)
    return _CHAPTERS[key]


@pytest.mark.parametrize("model", MODELS + OTHER_KINDS)
def test_model_chapter_glue_equals_kvmath(model):
    g = chapter(model)
    arch = kvmath.load_architecture(model)
    counts = arch.layer_type_counts()
    assert g["n_layers"] == arch.num_hidden_layers
    assert (g["n_full"], g["n_sliding"], g["n_linear"]) == (
        counts.get("full_attention", 0), counts.get("sliding_attention", 0), counts.get("linear_attention", 0))
    ctx, _, ref = reference(model)
    assert g["ctx_tokens"] == ctx <= (arch.derived_max_model_len or ctx)  # never above the model's maximum
    assert g["ref_bytes_per_token"] == ref.bytes_per_token
    assert g["ref_total_gib"] == pytest.approx(ref.total_bytes / kvmath.GiB)
    assert g["fixed_bytes_per_seq"] == ref.fixed_bytes
    assert g["state_bytes_per_seq"] == ref.state_bytes_per_seq
    assert g["sliding_bytes_per_seq"] == ref.sliding_bytes
    for tp in kvmath.valid_tp(arch, "vllm", (1, 2, 4)):
        d = kvmath.derive(model, kv_format="bf16", tp=tp, max_ctx=4096)
        assert g[f"bytes_per_token_bf16_tp{tp}"] == d.bytes_per_token
    if model not in MODELS:  # no checkpoint sizes: vLLM's budget prices the config's tensors; no source document
        from kvmath.engines.vllm.budget import budget as vllm_budget

        b = vllm_budget(model, card="h200", mem_util=0.92, max_num_seqs=1, max_model_len=min(g["ctx_tokens"], 4096))
        assert g["weights_gb"] == pytest.approx(b.weights / 1e9) and b.weights > 0
        assert g["doc_bytes_per_token"] == 0
        return
    facts = report.deployment_facts(model)
    assert g["weights_gb"] == facts["weights_gb"][facts["default_weights"]]
    assert g["doc_bytes_per_token"] == report.source_doc()["per_token_tp1"][model]["bf16"]
    # the budget section: every published figure is the package's
    from kvmath.engines.vllm import budget

    assert g["budget_error_gib"] == budget.CALIBRATION_ERROR_GIB
    if budget.presets().get(model):
        from kvmath.book.frames import chapter_frames

        frames = chapter_frames(model)
        t = frames["table"]
        assert g["budget_largest_ctx"] == frames["refusal_context"]
        assert g["budget_boots"] == int((t["outcome"] == "boots").sum())
        assert g["budget_marginal"] == int(t["marginal"].sum())
        assert g["budget_presets"] == len(t)


def test_model_chapter_follows_its_parameters():
    # Same template, other parameters: the other model's numbers and the requested format.
    a = chapter("gemma-4-26b-a4b", reference_format="fp8_e5m2", ctx=32768)
    d = kvmath.derive("gemma-4-26b-a4b", kv_format="fp8_e5m2", max_ctx=32768, max_num_batched_tokens=2048)
    assert a["ref_bytes_per_token"] == d.bytes_per_token == 5 * 2 * 512 * 2  # 5 full layers, 2 heads, K+V, 1 B
    assert a["ctx_tokens"] == 32768
    assert a["ref_total_gib"] == pytest.approx(d.total_bytes / kvmath.GiB)


def test_model_chapter_on_a_config_file_outside_the_book(tmp_path):
    # A config the book has no facts for: the chapter still derives the cache and says so for weights.
    import json

    cfg = dict(kvmath.resolve_model("qwen3.6-35b-a3b")["config"], num_hidden_layers=8,
               layer_types=["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    g = execute(TEMPLATE, model=str(path), title="Tiny hybrid")
    assert (g["n_layers"], g["n_full"], g["n_linear"]) == (8, 2, 6)
    assert g["ref_bytes_per_token"] == 2 * 2 * 256 * 2 * 2  # 2 full layers x 2 heads x 256 x K+V x bf16
    assert g["weights_gb"] > 0  # priced from the config by vLLM's budget (no checkpoint sizes recorded)


def test_engines_chapter_glue_equals_kvmath():
    g = execute(ROOT / "notebooks" / "engines.md", ctx=65536)
    for eng, fmt in {"vllm": "bf16", "llama.cpp": "f16", "transformers": "bf16"}.items():
        key = eng.replace(".", "")
        q = kvmath.derive("qwen3.6-27b", engine=eng, kv_format=fmt, max_ctx=65536)
        s = kvmath.derive("gemma-4-31b", engine=eng, kv_format=fmt, max_ctx=65536)
        assert g[f"q_state_{key}_mib"] == pytest.approx(q.state_bytes / kvmath.MiB)
        assert g[f"g_sliding_{key}_mib"] == pytest.approx(s.sliding_bytes / kvmath.MiB)
    # hand derivations of the window each engine keeps (W = 1024, T_b = 2048, B = 16, n_ubatch = 512):
    assert g["swa_vllm_tokens"] == (-(-(1024 - 1 + 2048) // 16) + 1) * 16
    assert g["swa_llamacpp_tokens"] == -(-(1024 + 512) // 256) * 256
    assert g["swa_transformers_tokens"] == 1024 - 1


def test_chapter_formats_follow_the_engine():
    # MLA takes bf16 / fp16 / fp8_e4m3 only: the chapter keeps those and shows the others as refused
    v = report.format_verdicts(kvmath.load_architecture("deepseek-v3"))
    assert [f for f, why in v.items() if why is None] == ["bf16", "fp16", "fp8_e4m3"]
    assert all(why for f, why in v.items() if f not in ("bf16", "fp16", "fp8_e4m3"))
    # vLLM's defaults where kvmath derives them; prefix caching off, with the reason, where it does not
    for m in ("nemotron-h-56b", "kimi-linear-48b-a3b", "qwen3.6-27b"):
        arch = kvmath.load_architecture(m)
        flags, why = report.vllm_chapter_flags(arch, "bf16", 8192, 2048)
        if "enable_prefix_caching" in flags:
            assert flags["enable_prefix_caching"] is False and why
            with pytest.raises(kvmath.KvMathError):
                kvmath.derive(arch, kv_format="bf16", max_ctx=8192, max_num_batched_tokens=2048)
        else:
            assert why == ""
        kvmath.derive(arch, kv_format="bf16", max_ctx=8192, **flags)


def test_largest_checkpoint_that_boots_is_the_boundary():
    from kvmath.engines.vllm.budget import budget

    frame, _ = report.default_budget_frame("llama-3.1-8b", max_model_len=131072, cards=("rtx5090",), tps=(1,))
    w = float(frame["largest checkpoint that boots (GB)"].iloc[0])
    kw = dict(card="rtx5090", tp=1, kv_format="auto", max_model_len=131072, max_num_seqs=1, mem_util=0.92)
    assert budget("llama-3.1-8b", weights_gb_total=w, **kw).outcome == "boots"
    assert budget("llama-3.1-8b", weights_gb_total=w + 0.01, **kw).outcome != "boots"


def test_formula_chapter_checks_pass_and_match_kvmath():
    g = execute(ROOT / "notebooks" / "formula.md")
    # the chapter's hidden cells assert hand == kvmath; here the glued values are compared to kvmath again
    assert g["full_q_kvmath_bytes_per_token"] == kvmath.derive("qwen3.6-27b", kv_format="fp8_e5m2", tp=2,
                                                             max_ctx=4096).bytes_per_token
    assert g["full_q_hand_bytes_per_token"] == g["full_q_kvmath_bytes_per_token"]
    assert g["gdn_layer_hand_bytes"] == g["gdn_layer_kvmath_bytes"]


def test_quick_reference_headline_numbers():
    g = execute(ROOT / "notebooks" / "quick_reference.md")
    per_token = {}
    for m in kvmath.known_models():  # every model; those vLLM refuses at the chapter's flags are left out
        arch = kvmath.load_architecture(m)
        if g["qr_headline_tp"] not in kvmath.valid_tp(arch, "vllm", (g["qr_headline_tp"],)):
            continue
        try:
            ctx, flags, _ = reference(m)
            d = kvmath.derive(m, kv_format="fp8_e5m2", tp=g["qr_headline_tp"], max_ctx=ctx, **flags)
        except kvmath.KvMathError:
            continue
        if d.bytes_per_token:  # models with no full attention have no growing term to compare
            per_token[m] = d.bytes_per_token
    assert g["qr_lightest_bytes_per_token"] == min(per_token.values())
    assert g["qr_heaviest_bytes_per_token"] == max(per_token.values())


def test_add_model_writes_facts_that_load_the_same(tmp_path):
    from kvmath.book.model_chapter import write_model_facts

    src = ROOT / "data" / "configs" / "mistralai__Mistral-7B-v0.1.json"  # a reference config (data/configs/SOURCES.md)
    with pytest.raises(kvmath.KvMathError, match="--revision"):  # never silently "unrecorded"
        write_model_facts(src, "new-model", out_dir=tmp_path / "models")
    out = write_model_facts(src, "new-model", title="New model", revision="a" * 40, out_dir=tmp_path / "models")
    entry = __import__("json").loads(out.read_text())
    assert entry["title"] == "New model" and "sha256" in entry["source"] and entry["revision"] == "a" * 40
    assert kvmath.load_architecture(entry["config"]).layers == kvmath.load_architecture(src).layers


def test_toc_entry_without_facts_is_a_clear_error(tmp_path):
    from kvmath.book.model_chapter import book_chapters

    toc = tmp_path / "_toc.yml"
    toc.write_text("root: x\nchapters:\n  - file: notebooks/generated/no-such-model\n")
    with pytest.raises(kvmath.KvMathError, match="--add-model"):
        book_chapters(toc)
