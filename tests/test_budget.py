"""kvmath.engines.vllm.budget: vLLM's budget arithmetic, verdicts, solvers, cards, presets, the anchor's own rule."""

from __future__ import annotations

import math

import pytest

from kvmath.book.frames import chapter_frames
from kvmath.engines.vllm.budget import (
    CALIBRATION_ERROR_GIB, COEFFICIENTS, GIB, anchor_prediction, budget, card, gdn_scratch_bytes, preset, preset_budget,
    presets, rebudget, solve_max_model_len, solve_max_model_len_with_headroom, sweep,
)
from kvmath.model.load import load_architecture
from kvmath.errors import KvMathError


def test_requested_is_ceil_of_total_times_util():
    """vllm/v1/worker/utils.py request_memory: ceil(total * util); available = requested - non_kv."""
    b = budget("qwen3.6-27b", card="rtx3090", mem_util=0.92, tp=2, kv_format="fp8_e5m2", max_model_len=262144)
    total = round(23.69 * GIB)
    assert b.total_bytes == total and b.requested == math.ceil(total * 0.92)
    assert b.available_kv == b.requested - b.non_kv
    assert b.non_kv == (b.weights + b.drafter_weights + b.activation + b.profile_peak + b.cudagraph + b.overhead
                        + b.model_offset + b.draft_kv)
    assert b.weights == round(17.69 * 2**30 / 2)  # vLLM's logged "Checkpoint size: 17.69 GiB" (club-3090 #142)


def test_pool_is_plan_blocks():
    b = budget("qwen3.6-27b", card="rtx3090", mem_util=0.92, tp=2, kv_format="fp8_e5m2", max_model_len=262144,
               max_num_seqs=2, max_num_batched_tokens=8192, num_speculative_tokens=3)
    assert b.outcome == "boots"
    assert b.plan.num_blocks == b.available_kv // b.plan.bytes_per_block
    assert b.pool_bytes == b.plan.num_blocks * b.plan.bytes_per_block <= b.available_kv
    assert b.pool_tokens == b.plan.gpu_kv_cache_tokens and b.max_concurrency == b.plan.max_concurrency


def test_gdn_scratch_exact():
    """chunk_delta_h.py: h (1, ceil(T/64), Hv/TP, K, V) bf16 + v_new (T, Hv/TP, V) bf16.
    27B TP2, 8192 tokens: h = 128 x 24 x 128 x 128 x 2 = 96 MiB (club-3090 #838's 96.00 MiB allocation)."""
    arch = load_architecture("qwen3.6-27b")
    h = 128 * 24 * 128 * 128 * 2
    assert h == 96 * 2**20
    assert gdn_scratch_bytes(arch, 2, 8192) == h + 8192 * 24 * 128 * 2
    assert gdn_scratch_bytes(load_architecture("gemma-4-31b"), 2, 8192) == 0
    # vLLM's profile run does not allocate them at T_b: GDN's _forward_core returns early without attention
    # metadata, and _warmup_prefill_kernels runs the chunked kernels on 64 tokens (qwen_gdn_linear_attn.py)
    b1 = budget("qwen3.6-27b", tp=2, kv_format="fp8_e5m2", max_model_len=1000, max_num_batched_tokens=8192)
    assert b1.gdn_scratch == gdn_scratch_bytes(arch, 2, 64) == 24 * 128 * 128 * 2 + 64 * 24 * 128 * 2


def test_three_outcomes():
    boots = preset_budget("qwen3.6-27b", "dual")
    assert boots.outcome == "boots" and boots.refusal is None and boots.pool_tokens > 0
    refused = preset_budget("qwen3.6-27b", "long-text")  # club-3090 #32 / #35: refused on a clean 3090
    assert refused.outcome == "refused" and "estimated maximum model length" in refused.refusal
    assert 0 < refused.estimated_max_model_len < 180000 and refused.pool_tokens == 0
    # F12's deployment (one 3090 at 0.95 logged "No available memory for the cache blocks") at 0.85: the
    # weights (16.8 GiB) and drafter leave less than the fitted non-KV terms, by more than the error band
    oom = budget("gemma-4-31b", tp=1, mem_util=0.85, kv_format="bf16", max_model_len=8192, max_num_seqs=256,
                 max_num_batched_tokens=4096, num_speculative_tokens=4, drafter_gb=0.97)
    assert oom.outcome == "oom" and oom.available_kv <= 0
    assert oom.margin_bytes < -CALIBRATION_ERROR_GIB * GIB and not oom.marginal
    weights_only = budget("gemma-4-31b", card="rtx3080", weights_variant="bf16")
    assert weights_only.outcome == "oom" and "weights alone" in weights_only.refusal


def test_concurrency_may_be_below_max_num_seqs():
    b = preset_budget("qwen3.6-27b", "dual", max_num_seqs=8)
    assert b.outcome == "boots" and b.max_concurrency < 8 and not b.fits_max_num_seqs
    assert b.max_num_seqs_at_full_context == int(b.max_concurrency)


def test_solver_boots_and_next_token_does_not():
    b = preset_budget("qwen3.6-27b", "long-text")
    L = solve_max_model_len(b)
    assert 0 < L < 180000
    assert rebudget(b, max_model_len=L).outcome == "boots"
    assert rebudget(b, max_model_len=L + 1).outcome != "boots"
    assert L == b.estimated_max_model_len  # vLLM's own estimate is the answer


def test_solver_is_not_the_model_maximum():
    """The anchor's solver returns 262144 for nearly everything; kvmath's does not on a single 3090."""
    b = budget("qwen3.6-27b", card="rtx3090", mem_util=0.95, kv_format="fp8_e5m2", max_model_len=262144,
               max_num_batched_tokens=2048)
    assert solve_max_model_len(b) < 262144
    heavy = budget("gemma-4-31b", card="rtx3090", weights_variant="bf16", tp=2)
    assert solve_max_model_len(heavy) == 0


def test_cards_and_formats():
    assert card("3090")["total_gib"] == 23.69 and card("RTX-4090")["compute_capability"] == 89
    with pytest.raises(KvMathError, match="unknown card"):
        card("voodoo5")
    with pytest.raises(KvMathError, match="fp8_e4m3 cannot run on rtx3090"):
        budget("qwen3.6-27b", card="rtx3090", kv_format="fp8_e4m3")
    with pytest.raises(KvMathError, match="nvfp4 cannot run on rtx5090"):
        budget("qwen3.6-27b", card="rtx5090", kv_format="nvfp4")
    assert budget("qwen3.6-27b", card="b200", kv_format="nvfp4", max_num_batched_tokens=8192).outcome == "boots"
    assert budget("qwen3.6-27b", card="rtx4090", kv_format="fp8_e4m3", max_model_len=8192).outcome == "boots"


def test_presets_data():
    assert len([n for p in presets().values() for n in p]) == 28  # anchor-kv-calc.md 2.6
    p = preset("qwen3.6-27b", "dual")
    assert p["mem_util"] == 0.95 and p["compose"] == {"mem_util": 0.92}
    with pytest.raises(KvMathError, match="not in gemma-4-31b's compose list"):
        preset("gemma-4-31b", "dual")


@pytest.mark.parametrize("kw,total,verdict", [
    # anchor-kv-calc.md 1.2 reference outputs at 5b3793b8
    (dict(model_id="qwen3.6-27b", kv_format="fp8_e5m2", max_ctx=262144, max_num_seqs=2, tp=2, mem_util=0.95,
          vram_gb=24, mtp=True), 19.9109696, "PASS"),
    (dict(model_id="qwen3.6-27b", kv_format="fp8_e5m2", max_ctx=180000, max_num_seqs=1, tp=1, mem_util=0.95,
          vram_gb=24), 22.80, "TIGHT"),
    (dict(model_id="qwen3.6-27b", kv_format="turboquant_3bit_nc", max_ctx=262144, max_num_seqs=4, tp=2,
          mem_util=0.82, vram_gb=20, mtp=True), 16.40, "TIGHT"),
    (dict(model_id="qwen3.6-27b", kv_format="fp8_e5m2", max_ctx=32768, max_num_seqs=2, tp=2, mem_util=0.95,
          vram_gb=24), 11.68, "PASS"),
])
def test_anchor_reproduced(kw, total, verdict):
    a = anchor_prediction(**kw)
    assert a["total_gb"] == pytest.approx(total, abs=0.006) and a["verdict"] == verdict


def test_anchor_calibration_rows_reproduced():
    """Our re-implementation of the anchor's rule gives the CSV's pred_5b3793b8 for its own inputs."""
    from kvmath.engines.vllm.calibration import compare

    recs = [r for r in compare() if "anchor_recomputed_gb" in r and r.get("anchor_pred_gb") is not None]
    assert len(recs) >= 15
    for r in recs:
        assert r["anchor_recomputed_gb"] == pytest.approx(r["anchor_pred_gb"], abs=0.01), r["id"]
        assert r["anchor_recomputed_verdict"] == r["anchor_verdict"], r["id"]


def test_sweep_matches_scalar_budget():
    s = sweep("qwen3.6-27b", contexts=[4096, 65536, 262144], seqs=[1, 4], formats=["fp8_e5m2", "bf16"], tps=[1, 2],
              mem_util=0.92, max_num_batched_tokens=8192)
    assert s["boots"].shape == (2, 2, 3, 2)
    for i, fmt in enumerate(["fp8_e5m2", "bf16"]):
        for j, tp in enumerate([1, 2]):
            for k, L in enumerate([4096, 65536, 262144]):
                b = budget("qwen3.6-27b", tp=tp, kv_format=fmt, mem_util=0.92, max_model_len=L,
                           max_num_batched_tokens=8192)
                assert s["needed"][i, j, k, 0] == b.kv_per_request
                assert bool(s["boots"][i, j, k, 0]) == (b.outcome == "boots")


def test_chapter_frames():
    f = chapter_frames("qwen3.6-35b-a3b")
    t = f["table"]
    assert list(t["preset"]) == list(presets()["qwen3.6-35b-a3b"])
    assert {"outcome", "available KV GiB", "largest max_model_len", "anchor verdict"} <= set(t.columns)
    assert set(f["curve"]["term"]) >= {"available KV", "KV one request needs"}
    assert f["refusal_context"] >= 0  # 0 when no preset is refused at the derived activation


def test_coefficients_documented():
    from kvmath.engines.vllm.calibration import FIT_TERMS

    assert set(COEFFICIENTS) == set(FIT_TERMS) | {"peak_over_requested_gib", "weights_extra_gb[gemma-4-31b/awq]"}


def test_bad_input():
    for kw in (dict(tp=0), dict(max_num_seqs=0), dict(mem_util=1.5), dict(mem_util=0), dict(tp=3),
               dict(kv_format="q4_0"), dict(weights_variant="gguf9"), dict(drafter_gb=-1)):
        with pytest.raises(KvMathError):
            budget("qwen3.6-27b", **kw)
    with pytest.raises(KvMathError, match="weights-gb"):
        budget({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                "hidden_size": 256, "max_position_embeddings": 4096})


def test_budget_rejects_bad_numbers_and_coefficients():
    q, g = "qwen3.6-27b", "gemma-4-31b"
    bad = [(q, dict(coefficients={"const_gb": 1.0})), (q, dict(coefficients={"const_gib": float("nan")})),
           (q, dict(coefficients={"const_gib": "1"})), (q, dict(coefficients=[1])),
           (q, dict(weights_gb_total=float("inf"))), (q, dict(weights_gb_total=True)), (q, dict(mem_util=True)),
           (q, dict(card=None, total_gib=float("inf"))), (q, dict(drafter_gb=float("inf"))),
           (q, dict(max_model_len=300000)),
           (g, dict(weights_variant="awq", coefficients={"weights_extra_gb[gemma-4-31b/awq]": -100.0}))]
    for model, kw in bad:
        with pytest.raises(KvMathError):
            budget(model, tp=2, **kw)


def test_long_max_model_len_needs_the_vllm_override():
    """vLLM (config/model.py _get_and_verify_max_len) refuses max_model_len above the derived maximum
    unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; llama 3.1's llama3 rope scaling is already in its 131,072."""
    with pytest.raises(KvMathError, match="131,072"):
        budget("llama-3.1-8b", max_model_len=131073, weights_gb_total=16)
    b = budget("llama-3.1-8b", max_model_len=262144, weights_gb_total=16, allow_long_max_model_len=True)
    assert b.max_model_len == 262144
    assert rebudget(b, max_model_len=200000).max_model_len == 200000  # the override carries over


def test_headroom_solver():
    """The headroom answer boots with at least the band to spare; one token more does not."""
    b = preset_budget("qwen3.6-27b", "long-text")
    safe = solve_max_model_len_with_headroom(b)
    edge = solve_max_model_len(b)
    assert 0 < safe < edge
    band = CALIBRATION_ERROR_GIB * GIB
    assert rebudget(b, max_model_len=safe).margin_bytes >= band
    assert rebudget(b, max_model_len=safe + 1).margin_bytes < band
    assert solve_max_model_len_with_headroom(b, headroom_gib=0) == edge
    with pytest.raises(KvMathError):
        solve_max_model_len_with_headroom(b, headroom_gib=float("nan"))


def test_configuration_refusal_is_not_a_memory_verdict():
    """Qwen 3.6 35B-A3B fp8 on one card: the hybrid alignment sets a 2096-token block, and vLLM's
    VllmConfig.validate_block_size refuses it with max_num_batched_tokens 2048 before sizing memory."""
    b = budget("qwen3.6-35b-a3b", max_model_len=131072, kv_format="fp8_e5m2", mem_util=0.95)
    assert b.outcome == "refused" and b.refusal_kind == "config" and "block_size (2096)" in b.refusal
    assert b.margin_bytes == 0 and not b.marginal and b.to_dict()["outcome_text"].startswith("refused at start-up by a")
    assert solve_max_model_len(b) == 0
    ok = rebudget(b, max_num_batched_tokens=2096)
    assert ok.refusal_kind != "config"


def test_startup_oom_when_utilization_leaves_nothing_for_the_context():
    """The memory outside vLLM's budget (CUDA context, CUDA graphs: the fitted peak overhead) must fit on
    the card. club-3090 C15 booted long-text at 0.985 of a 3090, so 0.985 must still boot there."""
    for util in (1.0, 0.999):
        b = preset_budget("qwen3.6-27b", "dual", mem_util=util)
        assert b.outcome == "oom" and b.refusal_kind == "startup" and not b.marginal
        assert b.to_dict()["vllm_log"] == [f"ERROR {b.refusal}"] and not b.estimated_max_model_len
    assert budget("qwen3.6-27b", tp=1, mem_util=0.985, kv_format="turboquant_3bit_nc", max_model_len=218000,
                  max_num_batched_tokens=4128, num_speculative_tokens=3).refusal_kind != "startup"
    tight = preset_budget("qwen3.6-27b", "dual", mem_util=0.97)
    assert tight.outcome == "boots" and any("outside gpu_memory_utilization" in n for n in tight.notes)


def test_notes_say_what_the_calibration_has_not_seen():
    b = budget("gemma-4-26b-a4b", tp=2, max_model_len=32768, weights_variant="awq")
    assert any("the fit has no boot of the gemma-4-26b-a4b awq checkpoint" in n for n in b.notes)
    b = budget("qwen3.6-27b", card="rtx4090", max_model_len=32768, max_num_batched_tokens=4128)
    assert any("the fit has no boot on rtx4090" in n for n in b.notes)
    b = budget("qwen3.6-27b", tp=2, max_model_len=32768, max_num_batched_tokens=4128)
    assert not any(n.startswith("the fit has no boot") for n in b.notes)
    b = budget("qwen3.6-35b-a3b", tp=2, card="rtx5090", kv_format="fp8_e4m3", weights_variant="nvfp4",
               max_num_batched_tokens=4192)
    assert any("is a projection" in n for n in b.notes)


def test_fp8_e4m3_on_ampere_needs_flashinfer():
    """vllm issue #26431 (Triton: fp8e4nv needs sm_89) and PR #24577 (FlashInfer converts in software);
    club-3090 F35 booted Qwen 35B-A3B with fp8_e4m3 on 3090s. Gemma 4 is routed to Triton."""
    with pytest.raises(KvMathError, match="FLASHINFER"):
        budget("qwen3.6-35b-a3b", tp=2, kv_format="fp8_e4m3", max_num_batched_tokens=8192)
    b = budget("qwen3.6-35b-a3b", tp=2, kv_format="fp8_e4m3", max_num_batched_tokens=8192,
               attention_backend="FLASHINFER")
    assert any("FlashInfer" in n for n in b.notes)
    with pytest.raises(KvMathError, match="Triton"):
        budget("gemma-4-31b", tp=2, kv_format="fp8_e4m3", attention_backend="FLASHINFER")
    with pytest.raises(KvMathError, match="unknown attention backend"):
        budget("qwen3.6-27b", tp=2, attention_backend="XFORMERS")


def test_solver_searches_below_a_zero_estimate():
    # Issue #11's case: at 262,144 tokens the profiled activation (8,192 batched tokens) leaves less KV
    # memory than one request of even 1 token needs, so vLLM's estimate there is 0, while shorter lengths
    # (smaller activation) boot. The solver must search the whole range, not stop at the estimate.
    from kvmath.engines.vllm.budget import budget, rebudget, solve_max_model_len

    b = budget("qwen3.6-27b", tp=1, kv_format="bf16", mem_util=0.9, max_num_batched_tokens=8192,
               max_model_len=262144)
    # the derived profile-run peak no longer depends on max_model_len (the profile forward is T_b tokens
    # whatever the length), so vLLM's estimate is a real answer here; the solver must still agree with it
    assert b.outcome == "refused"
    L = solve_max_model_len(b)
    assert L > 1000
    assert rebudget(b, max_model_len=L).outcome == "boots"
    assert rebudget(b, max_model_len=L + 1).outcome != "boots"
    assert rebudget(b, max_model_len=2).outcome == "boots"


def test_rebudget_keeps_the_cards_compute_capability():
    # A fresh user's case: with MTP on one RTX 3090 the solver said 64,000 tokens ("64,001 would be refused")
    # while --max-ctx 64001 booted. rebudget re-ran budget() with the card's memory as an explicit total_gib,
    # which dropped the card's sm_86 and with it vLLM's PIECEWISE-only CUDA graphs for FlashInfer + spec decode.
    kw = dict(card="rtx3090", kv_format="fp8_e5m2", max_num_seqs=1, mem_util=0.95, num_speculative_tokens=3)
    b = budget("qwen3.6-27b", max_model_len=180000, **kw)
    L = solve_max_model_len(b)
    for n in (L, L + 1):
        fresh, again = budget("qwen3.6-27b", max_model_len=n, **kw), rebudget(b, max_model_len=n)
        assert (fresh.outcome, fresh.available_kv, fresh.cudagraph) == (again.outcome, again.available_kv,
                                                                        again.cudagraph)
    assert budget("qwen3.6-27b", max_model_len=L, **kw).outcome == "boots"
    assert budget("qwen3.6-27b", max_model_len=L + 1, **kw).outcome == "refused"
