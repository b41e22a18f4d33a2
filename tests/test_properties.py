"""Property tests (hypothesis) of kvmath.engines.vllm.budget."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from kvmath.engines.vllm.budget import budget, rebudget, solve_max_model_len
from kvmath import derive, vllm_format

MODELS = ["qwen3.6-27b", "qwen3.6-35b-a3b", "gemma-4-31b", "gemma-4-26b-a4b"]
FORMATS = ["bf16", "fp8_e5m2", "int8_per_token_head", "turboquant_3bit_nc"]
common = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(st.sampled_from(MODELS), st.sampled_from(FORMATS), st.sampled_from([1, 2]),
       st.integers(1024, 200000), st.integers(1, 60000), st.integers(1, 16))
def test_demand_grows_with_context_and_sequences(model, fmt, tp, L, dL, S):
    kw = dict(tp=tp, kv_format=fmt, mem_util=0.9, max_num_batched_tokens=8192, card="h100")
    a = budget(model, max_model_len=L, max_num_seqs=S, **kw)
    b = budget(model, max_model_len=L + dL, max_num_seqs=S, **kw)
    c = budget(model, max_model_len=L, max_num_seqs=S + 1, **kw)
    assume(a.plan.groups)  # vLLM refuses some layouts outright (Gemma 4 + TurboQuant pages do not unify)
    assert b.kv_per_request >= a.kv_per_request and b.growing_kv >= a.growing_kv
    assert c.demand_bytes > a.demand_bytes and c.growing_kv > a.growing_kv
    assert b.non_kv >= a.non_kv  # the GDN scratch grows with context up to max_num_batched_tokens


@common
@given(st.sampled_from(MODELS), st.sampled_from([1, 2]), st.integers(1024, 262144))
def test_demand_grows_with_bytes_per_element(model, tp, L):
    # The bytes each token's data takes grow with the format's bytes per element. What vLLM allocates
    # need not: Gemma 4's int8_per_token_head full-attention pages do not divide its sliding pages and
    # are padded up to them (test_gemma4_int8_pth_full_pages_are_padded), so allocation is not compared.
    by = sorted(FORMATS[:3], key=lambda f: vllm_format(f).k.bytes_per_element)  # fp8 < int8 PTH < bf16
    needs = [derive(model, kv_format=f, tp=tp, max_ctx=L, max_num_batched_tokens=8192).bytes_per_token for f in by]
    assert needs == sorted(needs)
    if not model.startswith("gemma"):  # pages unify without padding: the allocation is ordered too
        held = [budget(model, tp=tp, kv_format=f, max_model_len=L, card="h100", max_num_batched_tokens=8192,
                       check_card=False).growing_kv for f in by]
        assert held == sorted(held)


def test_gemma4_int8_pth_full_pages_are_padded():
    # Per token and rank: sliding 16 heads x (256 + 4 B scale) x 2 = 8,320 B, full 4 x (512 + 4) x 2 = 4,128 B.
    # 8320 / 4128 is not whole, so vLLM (0.24+) pads the full layers' page to the sliding one's.
    d = derive("gemma-4-31b", kv_format="int8_per_token_head", max_ctx=1024)
    full = [g for g in d.groups if g.layer_type == "full_attention"][0]
    assert full.bytes_per_token == 4128 and full.n_layers == 10
    assert full.bytes == 10 * 8320 * 1024  # 64 blocks of 16 tokens, each page 16 x 8,320 B


@common
@given(st.sampled_from(MODELS), st.sampled_from(["bf16", "fp8_e5m2"]), st.integers(4096, 262144))
def test_sharded_terms_scale_with_one_over_tp(model, fmt, L):
    b1 = budget(model, tp=1, kv_format=fmt, max_model_len=L, card="b200", max_num_batched_tokens=8192)
    b2 = budget(model, tp=2, kv_format=fmt, max_model_len=L, card="b200", max_num_batched_tokens=8192)
    assert abs(2 * b2.weights - b1.weights) <= 1
    assert abs(2 * b2.activation_fitted - b1.activation_fitted) <= 1
    # KV heads split over TP while TP <= KV heads: growing KV halves exactly
    assert 2 * b2.growing_kv == b1.growing_kv
    assert 2 * b2.gdn_scratch == b1.gdn_scratch


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(["bf16", "fp8_e5m2"]), st.sampled_from([1, 2]),
       st.floats(0.55, 0.97), st.sampled_from(["rtx3090", "rtx4090", "rtx5090"]))
def test_solver_boots_and_next_token_does_not(model, fmt, tp, util, card):
    b = budget(model, tp=tp, kv_format=fmt, mem_util=round(util, 2), card=card, max_model_len=262144,
               max_num_batched_tokens=8192, check_card=False)
    L = solve_max_model_len(b)
    if L == 0:
        assert rebudget(b, max_model_len=1024).outcome != "boots"
        return
    assert rebudget(b, max_model_len=L).outcome == "boots"
    if L < 262144:
        assert rebudget(b, max_model_len=L + 1).outcome != "boots"
