"""One rule set per engine: over a grid of models x each engine's flags, ``derive``'s totals are the
engine's own allocation, byte for byte.

- vLLM: ``derive(..., max_num_seqs=n).total_bytes == n * plan.needed_bytes`` (the start-up check's
  bytes for one request of ``max_model_len``, ``_max_memory_usage_bytes_from_groups``), and the
  per-request blocks the plan counts are the ones derive's groups hold.
- llama.cpp: ``total_bytes`` equals the sum of the size lines' objects (``llama_kv_cache`` and
  ``llama_memory_recurrent``), and the printed MiB figures add up to it.
- transformers: ``total_bytes`` equals the cache tensors' bytes.

The seven disagreements measured on main at 0597a0e (issue "One rule set per engine") are cases here,
each with its figure derived by hand.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys

import pytest

import kvmath
from kvmath.engines.vllm.alloc import plan
from kvmath.facts import reference_config_path

MiB, GiB = 2**20, 2**30

CONFIG = {name: str(reference_config_path(f)) for name, f in {
    "qwen3.5-27b": "Qwen__Qwen3.5-27B.json",
    "deepseek-v3": "deepseek-ai__DeepSeek-V3.json",
    "kimi-linear": "moonshotai__Kimi-Linear-48B-A3B-Instruct.json",
    "nemotron-nano": "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json",
    "mistral-7b": "mistralai__Mistral-7B-v0.1.json",
    "gemma-2-9b": "google__gemma-2-9b.json",
}.items()}
# every layer kind: GDN hybrid, iSWA + MoE, iSWA dense, SWA + sinks, GQA, MLA, MLA + KDA, Mamba-2, unwindowed SWA
MODELS = ["qwen3.6-27b", "qwen3.6-35b-a3b", "gemma-4-26b-a4b", "gemma-4-31b", "gpt-oss-20b", "llama-3.1-8b",
          CONFIG["qwen3.5-27b"], CONFIG["deepseek-v3"], CONFIG["kimi-linear"], CONFIG["nemotron-nano"],
          CONFIG["mistral-7b"], CONFIG["gemma-2-9b"]]


def _mib(line: str, field: str) -> float:
    return float(re.search(rf"{field} = +([0-9.]+) MiB", line).group(1))


# --- llama.cpp --------------------------------------------------------------------------------------

LLAMA_FLAGS = [
    dict(cache_type_k="f16", cache_type_v="f16", flash_attn="auto"),
    dict(cache_type_k="f16", cache_type_v="f16", flash_attn="off"),
    dict(cache_type_k="q8_0", cache_type_v="q8_0", flash_attn="on"),
    dict(cache_type_k="q4_0", cache_type_v="q4_0", flash_attn="on", n_ubatch=128),
    dict(cache_type_k="q8_0", cache_type_v="q4_0", flash_attn="on", swa_full=True),
    dict(cache_type_k="bf16", cache_type_v="bf16", flash_attn="on", kv_unified=True),
    dict(cache_type_k="f16", cache_type_v="f16", n_batch=64),
    dict(cache_type_k="turbo3", cache_type_v="turbo3", flash_attn="on"),
    dict(cache_type_k="f16", cache_type_v="turbo2", flash_attn="on", n_rs_seq=3),
]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("flags", LLAMA_FLAGS, ids=lambda f: "-".join(f"{k}={v}" for k, v in f.items()))
@pytest.mark.parametrize("ctx,seqs", [(4096, 1), (20000, 3)])
def test_llamacpp_totals_are_its_objects(model, flags, ctx, seqs):
    try:
        d = kvmath.derive(model, engine="llama.cpp", max_ctx=ctx, max_num_seqs=seqs, **flags)
    except kvmath.KvMathError as e:  # llama.cpp's own refusals (block size vs head width, MLA K != V)
        assert "\n" not in str(e)
        return
    mem = d.allocation
    assert d.total_bytes == mem.kv_bytes + mem.recurrent_bytes == mem.total_bytes
    assert d.total_bytes == sum(c.bytes for c in mem.kv) + (mem.recurrent.bytes if mem.recurrent else 0)
    lines = [line for line in mem.log_lines() if " size = " in line and " MiB (" in line]
    printed = sum(_mib(line, "size") for line in lines)
    assert abs(printed - d.total_bytes / MiB) <= 0.01 * len(lines)  # each line rounds to 0.01 MiB
    # every layer that llama.cpp gives a cache is in exactly one group
    held = sorted(i for g in d.groups if g.owns_cache for i in g.layers)
    assert held == sorted([t.index for c in mem.kv for t in c.layers] + list(mem.recurrent.layers if mem.recurrent else []))
    assert d.total_bytes == sum(g.bytes for g in d.groups) and d.total_bytes >= 0


def test_llamacpp_turbo3_on_qwen35_27b_promotes_k_in_the_totals_too():
    # Disagreement 1: K turbo3 becomes q8_0 (auto-asymmetric: 24 heads / 4 KV heads = 6). Per cell and
    # full-attention layer: K 4 x 256 q8_0 = 1024 / 32 x 34 = 1,088 B, V turbo3 1024 / 128 x 50 = 400 B.
    d = kvmath.derive(CONFIG["qwen3.5-27b"], engine="llama.cpp", n_ctx=65536, cache_type_k="turbo3",
                      cache_type_v="turbo3", flash_attn="on")
    assert d.growing_bytes == 16 * 65536 * (1088 + 400) == 1488 * MiB
    # recurrent: 48 layers x (r = 3 x (48 x 128 + 2 x 16 x 128) + s = 128 x 48 x 128) f32, one sequence
    assert d.state_bytes == 48 * 4 * (3 * (6144 + 4096) + 128 * 6144)
    assert abs(d.total_bytes / MiB - (1488 + 149.62)) < 0.01


def test_llamacpp_fa_off_pads_v_in_the_totals():
    # Disagreement 2: without flash attention V is stored transposed and every layer's V row is padded
    # to the widest layer (n_embd_v_gqa_max). Gemma 4 26B: sliding V 8 x 256 = 2048, full V 2 x 512 = 1024,
    # so full layers store 2048-wide V rows: 5 full layers x 1024 cells x (1024 + 2048) x 2 B.
    on = kvmath.derive("gemma-4-26b-a4b", engine="llama.cpp", max_ctx=1024, flash_attn="on")
    off = kvmath.derive("gemma-4-26b-a4b", engine="llama.cpp", max_ctx=1024, flash_attn="off")
    full_on = [g for g in on.groups if g.layer_type == "full_attention" and g.owns_cache][0]
    full_off = [g for g in off.groups if g.layer_type == "full_attention" and g.owns_cache][0]
    assert full_on.bytes == full_on.n_layers * 1024 * (1024 + 1024) * 2
    assert full_off.bytes == full_off.n_layers * 1024 * (1024 + 2048) * 2
    assert off.total_bytes == off.allocation.total_bytes > on.total_bytes


def test_llamacpp_small_batch_clamps_ubatch_in_the_totals():
    # Disagreement 3: -b 64 clamps n_ubatch to 64, so SWA cells = PAD(min(n_ctx_seq, 1024 + 64), 256) = 1280
    d = kvmath.derive("gemma-4-26b-a4b", engine="llama.cpp", max_ctx=262144, n_batch=64)
    sliding = [g for g in d.groups if g.layer_type == "sliding_attention" and g.owns_cache]
    assert {g.cells for g in sliding} == {1280} == {d.allocation.cache("SWA").cells}


# --- vLLM ---------------------------------------------------------------------------------------------

VLLM_FLAGS = [
    dict(),
    dict(kv_format="fp8_e5m2", tp=2),
    dict(kv_format="int8_per_token_head", max_num_batched_tokens=8192),
    dict(kv_format="int8_per_token_head", tp=2, num_speculative_tokens=4, max_num_batched_tokens=8192),
    dict(kv_format="turboquant_3bit_nc", max_num_batched_tokens=8192),
    dict(disable_hybrid_kv_cache_manager=True),
    dict(enable_prefix_caching=False, max_num_batched_tokens=4096),
    dict(vllm_version="0.20.0", max_num_batched_tokens=8192),
    dict(vllm_version="0.26.0", block_size=32, max_num_batched_tokens=8192),
]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("flags", VLLM_FLAGS, ids=lambda f: "-".join(f"{k}={v}" for k, v in f.items()) or "defaults")
@pytest.mark.parametrize("ctx,seqs", [(8192, 1), (100000, 4)])
def test_vllm_totals_are_the_plans_requests(model, flags, ctx, seqs):
    flags = dict(flags)
    kv_format, tp = flags.pop("kv_format", None), flags.pop("tp", 1)
    try:
        d = kvmath.derive(model, kv_format=kv_format, tp=tp, max_ctx=ctx, max_num_seqs=seqs, **flags)
    except kvmath.KvMathError as e:  # vLLM's start-up refusals, a TP the heads refuse, MLA formats
        assert "\n" not in str(e)
        return
    one = plan(d.arch, None, d.settings)
    assert d.total_bytes == seqs * one.needed_bytes
    assert d.allocation.needed_bytes == one.needed_bytes
    # the block count one request needs is the same whichever record asks
    assert one.blocks_per_request * one.bytes_per_block >= one.needed_bytes
    # a pool of exactly seqs requests boots and holds them; one byte less than one request is refused
    full = plan(d.arch, one.needed_bytes, d.settings)
    assert full.boots and full.max_concurrency >= 1
    short = plan(d.arch, one.needed_bytes - 1, d.settings)
    assert not short.boots and short.estimated_max_model_len < ctx
    assert d.total_bytes == sum(g.bytes for g in d.groups)
    # the budget's fast split (no group records built) is the groups' split, term by term
    from kvmath.engines.vllm import ENGINE

    groups = ENGINE.layer_groups(d.arch, d.allocation)
    assert ENGINE.kv_split(d.allocation) == (sum(g.bytes for g in groups if g.growing),
                                             sum(g.bytes for g in groups if g.sliding),
                                             sum(g.bytes for g in groups if g.is_state))
    # the layout reused across lengths (computed at length 1, its length then replaced) is the layout
    # computed at this length from scratch
    from kvmath.engines.vllm import alloc

    assert alloc._layout(d.arch, d.settings) == alloc._layout_at.__wrapped__(d.arch, d.settings)


def test_vllm_disable_hybrid_manager_charges_sliding_layers_in_full():
    # Disagreement 4: gpt-oss-20b, bf16, 8192 tokens, 32 sequences: every layer (12 sliding, 12 full)
    # holds 8 KV heads x 64 x (K + V) x 2 B = 2,048 B per token for the whole length
    d = kvmath.derive("gpt-oss-20b", kv_format="bf16", max_ctx=8192, max_num_seqs=32,
                      disable_hybrid_kv_cache_manager=True)
    assert d.sliding_bytes == 0
    assert d.total_bytes == 24 * 2048 * 8192 * 32 == 12 * GiB
    hybrid = kvmath.derive("gpt-oss-20b", kv_format="bf16", max_ctx=8192, max_num_seqs=32)
    assert hybrid.sliding_bytes > 0 and hybrid.total_bytes < d.total_bytes


def test_vllm_speculative_tokens_add_the_drafters_layer_to_the_totals():
    # Disagreement 5: Qwen 3.6 27B's MTP drafter adds one full-attention layer with the target's spec
    base = kvmath.derive("qwen3.6-27b", kv_format="bf16", max_ctx=65536, max_num_batched_tokens=8192)
    spec = kvmath.derive("qwen3.6-27b", kv_format="bf16", max_ctx=65536, max_num_batched_tokens=8192,
                         num_speculative_tokens=3)
    drafter = [g for g in spec.groups if g.description.startswith("MTP drafter")]
    assert len(drafter) == 1 and drafter[0].n_layers == 1
    assert sum(g.n_layers for g in spec.groups if g.growing) == 17
    assert spec.total_bytes == plan(spec.arch, None, spec.settings).needed_bytes > base.total_bytes


def test_vllm_026_sliding_blocks_are_the_plans_and_the_budgets():
    # Disagreement 6: from 0.26 a sliding request may hold W - 1 + 2 x max_num_batched_tokens tokens
    # (async scheduling): ceil((1024 - 1 + 4096) / 16) + 1 = 321 blocks, not 0.25's 193
    from kvmath.engines.vllm.budget import budget

    d = kvmath.derive("gemma-4-31b", kv_format="bf16", max_ctx=262144, vllm_version="0.26.0")
    sliding = [g for g in d.groups if g.layer_type == "sliding_attention"]
    assert {g.cells for g in sliding} == {321 * 16}
    old = kvmath.derive("gemma-4-31b", kv_format="bf16", max_ctx=262144, vllm_version="0.25.0")
    assert {g.cells for g in old.groups if g.layer_type == "sliding_attention"} == {193 * 16}
    b = budget("gemma-4-31b", card="h100", kv_format="bf16", max_model_len=262144, vllm_version="0.26.0",
               max_num_batched_tokens=2048)
    assert b.sliding_kv == d.sliding_bytes and b.kv_per_request == d.total_bytes


@pytest.mark.parametrize("flag", [["--swa-full"], ["-fa", "on"], ["--kv-unified"], ["-ub", "256"], ["-c", "4096"],
                                  ["-ctk", "q8_0"]])
def test_flags_of_another_engine_are_refused(flag):
    # Disagreement 7: llama.cpp flags with --engine vllm (the default) are one line naming llama.cpp
    r = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "gpt-oss-20b", *flag],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "llama.cpp flag" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_vllm_flags_with_llamacpp_are_refused():
    r = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "gpt-oss-20b", "--engine", "llama.cpp",
                        "--max-num-batched-tokens", "4096"], capture_output=True, text=True)
    assert r.returncode == 2 and "vLLM flag" in r.stderr


def test_python_api_names_the_engine_a_setting_belongs_to():
    with pytest.raises(kvmath.KvMathError, match="swa_full is a llama.cpp setting"):
        kvmath.derive("gpt-oss-20b", engine="vllm", swa_full=True)
    with pytest.raises(kvmath.KvMathError, match="max_num_batched_tokens is a vllm setting"):
        kvmath.derive("gpt-oss-20b", engine="llama.cpp", max_num_batched_tokens=4096)


# --- transformers -------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("ctx,seqs", [(1000, 1), (9000, 2)])
def test_transformers_totals_are_its_tensors(model, ctx, seqs):
    d = kvmath.derive(model, engine="transformers", max_ctx=ctx, max_num_seqs=seqs)
    assert d.total_bytes == d.allocation.total_bytes == sum(g.bytes for g in d.groups)


def test_the_three_engines_name_every_layer_once():
    for model, engine in itertools.product(MODELS[:6], ("vllm", "llama.cpp", "transformers")):
        d = kvmath.derive(model, engine=engine, max_ctx=4096, max_num_batched_tokens=8192) \
            if engine == "vllm" else kvmath.derive(model, engine=engine, max_ctx=4096)
        seen = sorted(i for g in d.groups for i in g.layers if i < d.arch.num_hidden_layers)
        assert seen == list(range(d.arch.num_hidden_layers)), (model, engine)


def test_llamacpp_speculative_flags_keep_recurrent_snapshots():
    # need_n_rs_seq(): --spec-draft-n-max snapshots per sequence for a draft-model --spec-type; the
    # recurrent rows become mem_size * (1 + n_rs_seq). Qwen 3.6 27B: 48 GDN layers x (r 3 x 10240 +
    # s 128 x 6144) f32 per row; 1 + 3 rows for draft-mtp, 1 row for draft-simple.
    row = 48 * 4 * (3 * 10240 + 128 * 6144)

    def state(*flags):
        r = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "qwen3.6-27b", "--engine", "llama.cpp",
                            "-c", "8192", "--json", *flags], capture_output=True, text=True, check=True)
        import json
        return json.loads(r.stdout)["totals"]["state_bytes"]

    assert state("--spec-type", "draft-mtp", "--spec-draft-n-max", "3") == 4 * row
    assert state("--spec-type", "draft-simple", "--spec-draft-n-max", "3") == row
    # llm_arch_supports_rs_rollback covers Qwen 3.5 / 3.6 only: other recurrent models keep no snapshots
    nano = kvmath.derive(CONFIG["nemotron-nano"], engine="llama.cpp", max_ctx=4096, n_rs_seq=3)
    assert nano.allocation.recurrent.n_rs_seq == 0
    r = subprocess.run([sys.executable, "-m", "kvmath.cli", "--config", "qwen3.6-27b", "--engine", "llama.cpp",
                        "--spec-draft-n-max", "3"], capture_output=True, text=True)
    assert r.returncode == 2 and "--spec-type" in r.stderr
