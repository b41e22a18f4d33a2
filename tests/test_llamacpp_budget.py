"""llama.cpp on a card: weights per device (placement rules), compute buffers, budget, --fit, speed.

Placement is tested on GGUF files written by ``gguf.GGUFWriter`` with real tensor shapes (Qwen3-30B-A3B's
attention and expert matrices, two blocks) whose data region is left sparse, read back by kvmath's header
reader; every expectation is derived by hand from the rules in ``placement.py``'s docstring.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from kvmath import facts
from kvmath.errors import KvMathError
from kvmath.engines.llamacpp import budget as B
from kvmath.engines.llamacpp.compute import GraphShape, compute_buffers
from kvmath.engines.llamacpp.placement import Tensor, cuda_alloc_size, gpu_bytes, place, tensors_from_header
from kvmath.model.gguf import read_header

MiB = 2**20


def _write_gguf(path, tensors, *, tied=False):
    """A GGUF with these (name, numpy shape, ggml type) tensors; data written as zeros of the right size."""
    import gguf

    w = gguf.GGUFWriter(str(path), "qwen3moe")
    w.add_block_count(2)
    for name, shape, qtype in tensors:
        if tied and name == "output.weight":
            continue
        elems, nbytes = gguf.GGML_QUANT_SIZES[qtype]
        if qtype in (gguf.GGMLQuantizationType.F32,):
            w.add_tensor(name, np.zeros(shape, dtype=np.float32))
        else:
            row = shape[-1] // elems * nbytes
            raw = np.zeros((*shape[:-1], row), dtype=np.uint8)
            w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _qwen3moe_tables(tmp_path, tied=False):
    import gguf

    Q4K, Q6K, F32 = gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K, gguf.GGMLQuantizationType.F32
    E, H, KV, D, X, F = 2048, 32, 4, 128, 8, 768   # experts cut to 8 to keep the file small
    t = [("token_embd.weight", (1024, E), Q4K)]
    for i in range(2):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", (E,), F32), (b + "attn_q.weight", (H * D, E), Q4K),
              (b + "attn_k.weight", (KV * D, E), Q4K), (b + "attn_v.weight", (KV * D, E), Q6K),
              (b + "attn_output.weight", (E, H * D), Q4K), (b + "ffn_gate_inp.weight", (X, E), F32),
              (b + "ffn_gate_exps.weight", (X, F, E), Q4K), (b + "ffn_up_exps.weight", (X, F, E), Q4K),
              (b + "ffn_down_exps.weight", (X, E, F), Q6K)]
    t += [("output_norm.weight", (E,), F32), ("output.weight", (1024, E), Q6K)]
    path = tmp_path / ("tied.gguf" if tied else "m.gguf")
    _write_gguf(path, t, tied=tied)
    return tensors_from_header(read_header(path))


def test_all_layers_offloaded_keeps_only_the_input_on_the_host(tmp_path):
    ts = _qwen3moe_tables(tmp_path)
    p = place(ts, n_gpu_layers=99)
    emb = next(t for t in ts if t.name == "token_embd.weight")
    assert p.buffers["CPU_Mapped"] == emb.n_bytes             # rule 3, rule 6 (one tensor: its own span)
    assert p.buffers["CUDA0"] == sum(cuda_alloc_size(t) for t in ts if t.name != "token_embd.weight")
    assert p.offloaded == 3 and p.log_lines()[0] == "load_tensors: offloaded 3/3 layers to GPU"


def test_ngl_counts_the_output_layer_as_the_last(tmp_path):
    ts = _qwen3moe_tables(tmp_path)
    p = place(ts, n_gpu_layers=2)                              # i_gpu_start = 2 + 1 - 2 = 1
    assert p.device_of["blk.0.attn_q.weight"] == "CPU" and p.device_of["blk.1.attn_q.weight"] == "CUDA0"
    assert p.device_of["output.weight"] == "CUDA0"
    p1 = place(ts, n_gpu_layers=1)                             # only the output layer offloaded
    assert p1.device_of["blk.1.attn_q.weight"] == "CPU" and p1.device_of["output.weight"] == "CUDA0"


def test_n_cpu_moe_moves_the_experts_of_the_first_blocks_and_the_map_spans_the_gap(tmp_path):
    ts = _qwen3moe_tables(tmp_path)
    by = {t.name: t for t in ts}
    p = place(ts, n_cpu_moe=1)
    exps0 = [by[f"blk.0.ffn_{k}_exps.weight"] for k in ("gate", "up", "down")]
    assert all(p.device_of[t.name] == "CPU" for t in exps0)
    assert p.device_of["blk.1.ffn_up_exps.weight"] == "CUDA0"
    # rule 6: the mapped span runs from token_embd to the end of blk.0's last expert tensor, blk.0's
    # attention tensors (on the GPU) included
    first = by["token_embd.weight"].offset
    last = max(t.offset + t.n_bytes for t in exps0)
    assert p.buffers["CPU_Mapped"] == last - first
    assert p.buffers["CPU_Mapped"] > by["token_embd.weight"].n_bytes + sum(t.n_bytes for t in exps0)
    # --no-mmap: pinned CUDA_Host buffer holds the sum; the embedding stays in plain CPU memory
    q = place(ts, n_cpu_moe=1, mmap=False)
    assert q.buffers["CUDA_Host"] == sum(t.n_bytes for t in exps0)
    assert q.buffers["CPU"] == by["token_embd.weight"].n_bytes


def test_override_tensor_first_match_wins_and_cpu_moe_is_every_block(tmp_path):
    ts = _qwen3moe_tables(tmp_path)
    p = place(ts, override_tensor=["blk\\.1\\.ffn_down_exps=CPU"])
    assert p.device_of["blk.1.ffn_down_exps.weight"] == "CPU" and p.device_of["blk.1.ffn_up_exps.weight"] == "CUDA0"
    allm = place(ts, cpu_moe=True)
    assert sum(1 for n, d in allm.device_of.items() if "exps" in n and d == "CPU") == 6
    with pytest.raises(KvMathError):
        place(ts, override_tensor=["no-equals-sign"])


def test_tied_output_duplicates_the_embedding_on_the_output_device(tmp_path):
    ts = _qwen3moe_tables(tmp_path, tied=True)
    emb = next(t for t in ts if t.name == "token_embd.weight")
    p = place(ts)
    untied_gpu = sum(cuda_alloc_size(t) for t in ts if t.name != "token_embd.weight")
    assert gpu_bytes(p) == untied_gpu + cuda_alloc_size(emb)   # rule 4


def test_tensor_split_by_layer_and_row():
    ts = [Tensor(f"blk.{i}.attn_q.weight", (4096, 4096), "Q8_0", 4096 * 4096 // 32 * 34, i * 10**8)
          for i in range(4)] + [Tensor("output.weight", (4096, 32000), "Q8_0", 4096 * 32000 // 32 * 34, 10**9)]
    p = place(ts, n_devices=2, tensor_split=[1, 1])           # splits 0.5, 1.0 over act = 5 layers
    assert [p.device_of[f"blk.{i}.attn_q.weight"] for i in range(4)] == ["CUDA0", "CUDA0", "CUDA0", "CUDA1"]
    assert p.device_of["output.weight"] == "CUDA1"
    r = place(ts, n_devices=2, tensor_split=[3, 1], split_mode="row")
    assert r.buffers["CUDA0_Split"] == 4 * cuda_alloc_size(Tensor("x", (4096, 3072), "Q8_0", 3072 * 4352))
    assert r.buffers["CUDA1_Split"] == 4 * cuda_alloc_size(Tensor("x", (4096, 1024), "Q8_0", 1024 * 4352))


def test_cuda_row_padding():
    # a Q4_K matrix 2880 wide (gpt-oss): 2880 % 512 = 320 -> 192 more elements = 192/256 blocks... padded by
    # whole blocks of the missing elements: (512 - 320) // 256 * 144 = 0 bytes; 1000-wide q8_0: 24 elts -> 0
    t = Tensor("w", (3000, 10), "Q8_0", 3000 // 32 * 34 * 10 + 0)
    assert cuda_alloc_size(t) == -(-(t.n_bytes + (512 - 3000 % 512) // 32 * 34) // 128) * 128


# --- compute buffers against public logs -------------------------------------------------------------------

ROWS = [r for r in facts.read_csv("measurements/llamacpp-boots.csv") if r["compute_check"] == "yes"]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_compute_buffer_within_5_percent_of_the_log(row):
    sh = GraphShape(int(row["n_embd"]), int(row["n_vocab"]), int(row["n_head"]),
                    int(row["n_embd"]) // int(row["n_head"]), int(row["n_ff"] or 0))
    c = compute_buffers(sh, n_ubatch=int(row["n_ubatch"]), n_kv=int(row["n_ctx"]), flash_attn=row["flash_attn"] == "on")
    logged = float(row["compute_device_mib"])
    assert abs(c.device / MiB - logged) <= 0.05 * logged
    if row["compute_host_mib"] and row["id"] not in HOST_COMPUTE_MISSES:
        assert abs(c.host / MiB - float(row["compute_host_mib"])) <= 0.05 * float(row["compute_host_mib"])


# P15 (Feb 2024, before n_ubatch): the CUDA0 buffer is within 0.1 %, but that build's CUDA_Host buffer (24.00
# MiB) is not the current graph's split (kvmath: 40.0 MiB); kept visible here rather than dropped.
HOST_COMPUTE_MISSES = {"P15"}


def test_host_compute_misses_stay_misses():
    for r in ROWS:
        if r["id"] in HOST_COMPUTE_MISSES:
            sh = GraphShape(int(r["n_embd"]), int(r["n_vocab"]), int(r["n_head"]), int(r["n_embd"]) // int(r["n_head"]),
                            int(r["n_ff"] or 0))
            c = compute_buffers(sh, n_ubatch=int(r["n_ubatch"]), n_kv=int(r["n_ctx"]), flash_attn=r["flash_attn"] == "on")
            assert abs(c.host / MiB - float(r["compute_host_mib"])) > 0.05 * float(r["compute_host_mib"])


def test_boot_rows_quote_their_lines_and_urls():
    rows = facts.read_csv("measurements/llamacpp-boots.csv")
    assert len(rows) >= 20
    for r in rows:
        assert r["url"].startswith("https://github.com/") and r["quoted_lines"] and r["compute_check"]
        for part in (r["model_buffers_mib"], r["kv_buffers_mib"], r["rs_buffers_mib"]):
            for item in filter(None, part.split(";")):
                device, mib = item.split("=")
                assert device and float(mib) >= 0
                assert mib in r["quoted_lines"] or f"{float(mib):.2f}" in r["quoted_lines"]   # copied, not typed


# KV / RS buffers against the cache model, for the public rows whose shapes are a known model's (stated in the
# row's notes as assumed where the excerpt does not name it). Tolerance: 0.5 MiB (the printed figure is
# rounded to 0.01 MiB; buffer lines add up to 0.13 MiB of alignment padding over the summed size line).
KV_CHECKS = {
    "P01": dict(model="mistral-7b-v0.1", n_ctx=2048, flash_attn="off", kv_mib=256.00),
    "P02": dict(model="mistral-7b-v0.1", n_ctx=32768, flash_attn="off", kv_mib=4096.00),
    "P05": dict(model="qwen3.5-35b-a3b", n_ctx=4096, n_parallel=4, kv_unified=True, kv_mib=80.00, rs_mib=134.00 + 117.25),
    "P13": dict(model="qwen3.6-27b", n_ctx=180224, cache_type_k="turbo3", cache_type_v="turbo2", fork="turboquant",
                n_rs_seq=2, kv_mib=1988.25, rs_mib=448.88),
    "P18": dict(model="qwen2.5-7b", n_ctx=2048, flash_attn="off", kv_mib=112.00),
}


@pytest.mark.parametrize("rid", sorted(KV_CHECKS))
def test_public_kv_and_rs_buffers(rid):
    from kvmath.engines.llamacpp.memory import llamacpp_memory

    kw = dict(KV_CHECKS[rid])
    kv, rs = kw.pop("kv_mib"), kw.pop("rs_mib", None)
    row = next(r for r in facts.read_csv("measurements/llamacpp-boots.csv") if r["id"] == rid)
    assert f"{kv:.2f}" in row["quoted_lines"]
    m = llamacpp_memory(kw.pop("model"), **kw)
    assert abs(m.kv_bytes / MiB - kv) <= 0.5
    if rs is not None:
        assert abs(m.recurrent_bytes / MiB - rs) <= 0.5


def test_every_public_row_is_checked_or_says_why_not():
    # report per row: compute checked (compute_check == yes), KV/RS checked (KV_CHECKS), or the stated reason
    rows = facts.read_csv("measurements/llamacpp-boots.csv")
    checked = {r["id"] for r in ROWS} | set(KV_CHECKS)
    for r in rows:
        assert r["id"] in checked or r["compute_check"].startswith("no: ")
    assert len(checked) >= 7


# --- budget, verdicts, --fit ----------------------------------------------------------------------------------

def test_verdicts():
    fit = B.device_budget(model_bytes=10 * 2**30, kv_bytes=2**30, compute_bytes=500 * MiB, total_mib=16000)
    assert fit.verdict == "fits"
    load = B.device_budget(model_bytes=15 * 2**30, kv_bytes=2**30, compute_bytes=500 * MiB, total_mib=16000)
    assert load.verdict == "oom at load"
    edge = B.device_budget(model_bytes=15000 * MiB, kv_bytes=0, compute_bytes=560 * MiB, total_mib=16000,
                           cuda_context_mib=400, first_batch_mib=64)
    assert edge.load_mib <= edge.free_mib and edge.verdict == "oom at first batch"


def test_cards_have_the_16gb_set():
    for alias in ("4060ti", "4070tisuper", "5060ti", "5070ti", "5080", "3060", "1070"):
        c = B.card(alias)
        assert c["total_gib"] > 7 and c["source"]


def test_fit_reduces_an_unset_context_by_interpolation():
    per_tok = 100_000
    proj = lambda n_ctx, k: 10_000 * MiB + n_ctx * per_tok - k * 500 * MiB
    a = B.fit_like_llamacpp(proj, free_mib=15_000, n_ctx=131072, n_ctx_set_by_user=False, n_blocks=40)
    # target used = 13976 MiB -> n_ctx = 4096 + (131072 - 4096) * (13976 MiB - proj(4096)) / (proj(131072) - proj(4096))
    want = 4096 + int((131072 - 4096) * (13976 * MiB - proj(4096, 0)) / (proj(131072, 0) - proj(4096, 0)))
    assert a.action == "context reduced" and a.n_ctx == want - want % 256
    b = B.fit_like_llamacpp(proj, free_mib=15_000, n_ctx=131072, n_ctx_set_by_user=True, n_blocks=40)
    assert b.action == "experts moved" and proj(131072, b.n_cpu_moe_equivalent) <= 13976 * MiB
    assert proj(131072, b.n_cpu_moe_equivalent - 1) > 13976 * MiB
    c = B.fit_like_llamacpp(proj, free_mib=15_000, n_ctx=131072, n_ctx_set_by_user=True, n_blocks=40,
                            overrides_set_by_user=True)
    assert c.action.startswith("refused")


def test_plan_and_command_line():
    from kvmath.engines.llamacpp.fit import run

    assert run(["-m", "gemma-4-26b-a4b", "-c", "32768", "-ctk", "q8_0", "-ctv", "q8_0", "--card", "5070ti"]) == 0
    assert run(["-m", "gemma-4-26b-a4b", "--card", "nope"]) == 2


def test_speed_model_moves_with_offload():
    s0 = B.speed(dense_gpu_bytes=2 * 2**30, expert_gpu_bytes=16 * 2**30, expert_host_bytes=0, active_fraction=8 / 128,
                 kv_bytes_read=0, gpu_bandwidth_gbs=896, host_bandwidth_gbs=60, active_params=3e9, gpu_tflops=40)
    s1 = B.speed(dense_gpu_bytes=2 * 2**30, expert_gpu_bytes=8 * 2**30, expert_host_bytes=8 * 2**30,
                 active_fraction=8 / 128, kv_bytes_read=0, gpu_bandwidth_gbs=896, host_bandwidth_gbs=60,
                 active_params=3e9, gpu_tflops=40)
    assert s1.tg_tokens_per_s < s0.tg_tokens_per_s and s1.bound == "host RAM"


# --- compute buffers and device totals against real llama.cpp dry runs (tests/fixtures/llamacpp/compute_fixtures.json)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import llamacpp_dryruns as DR  # noqa: E402

DRY = DR.load()
CASES = DR.cases(DRY)


def test_dry_run_fixtures_name_their_build_and_commands():
    assert DRY["llama_cpp"]["commit"].startswith("0c1e570")
    assert len(DRY["models"]) >= 7 and len(CASES) >= 90
    for m in DRY["models"].values():
        assert m["tensors"] and m["gguf_metadata"]["general.architecture"]
        for r in m["runs"]:
            assert r["command"].startswith("llama-fit-params -m ") and r["returncode"] == 0
            assert any("CPU compute buffer size" in l for l in r["lines"])


@pytest.mark.parametrize("case", CASES, ids=[f"{c.model}[{' '.join(c.flags)}]" for c in CASES])
def test_dry_run_model_and_cache_equal_what_llama_cpp_printed(case):
    # the memory breakdown prints integer MiB (truncated): weights from the tensor table and KV + RS from
    # memory.py land within 2 MiB of it (the mapped span's alignment padding included)
    assert 0 <= case.model_kvmath_mib - case.model_logged_mib < 2
    assert 0 <= case.context_kvmath_mib - case.context_logged_mib < 1


# Runs where ggml-alloc's placement leaves a hole kvmath does not model (see compute.py's docstring);
# every other run's compute buffer is within 5 % of what llama.cpp printed.
COMPUTE_OUTLIERS = {
    ("qwen3.6-27b", "-c 262144"), ("qwen3.6-27b", "-c 65536 -ctk q4_0 -ctv q4_0 -ub 1024"),
    ("gemma-4-31b", "-c 4096"), ("gemma-4-31b", "-c 32768 -np 4"), ("gemma-4-31b", "-c 8192 -ngl 0"),
    ("gemma-4-31b", "-c 65536 -ctk q4_0 -ctv q4_0 -ub 1024"), ("gpt-oss-20b", "-c 32768 -np 4"),
    ("gpt-oss-20b", "-c 8192 -ngl 0"),
}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.model}[{' '.join(c.flags)}]" for c in CASES])
def test_dry_run_compute_buffer(case):
    key = (case.model, " ".join(case.flags))
    if key in COMPUTE_OUTLIERS:
        assert abs(case.compute_error_pct) > 5          # the list stays honest: drop a case once it is fixed
        assert case.compute_kvmath_mib < case.compute_logged_mib  # a hole only adds
    else:
        assert abs(case.compute_error_pct) <= 5


def test_dry_run_shares():
    s = DR.summary(CASES)
    assert s["compute_within_5pct"] >= 0.8 * s["runs"]
    assert s["total_within_100mib"] >= 0.8 * s["runs"]
    # FA-off attention and the logits are exact where the graph is simple (Llama, gpt-oss, Gemma 4 31B)
    exact = [c for c in CASES if c.model == "llama-3.1-8b" and "off" in c.flags]
    assert exact and all(abs(c.compute_kvmath_mib - c.compute_logged_mib) < 0.05 for c in exact)


def test_shape_from_gguf_reads_per_layer_arrays():
    from kvmath.engines.llamacpp.compute import shape_from_gguf

    sh = shape_from_gguf(DRY["models"]["gemma-4-31b"]["gguf_metadata"])
    assert (sh.n_embd, sh.n_vocab, sh.n_head, sh.head_dim, sh.n_head_kv) == (5376, 262144, 32, 512, 16)


# --- llama-server's output rows and the --fit projection of a public log ------------------------------------

def test_llama_server_reserves_one_output_row_per_sequence():
    """0c1e570: llama-server sets n_outputs_max = -np x (1 + draft) (tools/server/server-context.cpp
    server_output_limits), so the reserved logits are that many rows; the common tools keep one per token."""
    import kvmath
    from kvmath.engines.llamacpp.weights import weights_from_mix

    cfg = kvmath.resolve_model("gemma-4-26b-a4b")["config"]
    tensors, _ = weights_from_mix(cfg, "Q4_0")
    kw = dict(n_ctx=8192, tensors=tensors, total_mib=24_000)
    srv = B.plan("gemma-4-26b-a4b", cfg, **kw)[2]
    fp = B.plan("gemma-4-26b-a4b", cfg, tool="llama-fit-params", **kw)[2]
    V, E, T = 262144, 2816, 512
    # hand: the logits phase is 4 V n_out + one E x T vector (CUDA counts, compute.LIVE)
    assert srv.phases["output (logits)"] == 4 * V * 1 + 4 * T * E
    assert fp.phases["output (logits)"] == 4 * V * T + 4 * T * E
    four = B.plan("gemma-4-26b-a4b", cfg, n_parallel=4, **kw)[2]
    assert four.phases["output (logits)"] == 4 * V * 4 + 4 * T * E
    with pytest.raises(KvMathError, match="tool must be"):
        B.plan("gemma-4-26b-a4b", cfg, tool="llama-cli", **kw)


def test_fit_projection_against_the_public_log():
    """P07 (HilbertRaum#391): llama-server's --fit projected 14943 MiB for Gemma 4 26B-A4B QAT Q4 at -c 8192
    -ub 2048. kvmath, with its Q4_0 mix standing in for the unpublished QAT table, is within 3 % and takes the
    same decision; counting every token as an output (the common tools' rule) is 11 % off."""
    import kvmath
    from kvmath.engines.llamacpp.weights import weights_from_mix

    row = next(r for r in facts.read_csv("measurements/llamacpp-boots.csv") if r["id"] == "P07")
    cfg = kvmath.resolve_model("gemma-4-26b-a4b")["config"]
    tensors, _ = weights_from_mix(cfg, "Q4_0")
    kw = dict(n_ctx=int(row["n_ctx"]), n_ubatch=int(row["n_ubatch"]), n_batch=int(row["n_batch"]), tensors=tensors,
              total_mib=float(row["fit_free_mib"]), cuda_context_mib=0)
    b = B.plan("gemma-4-26b-a4b", cfg, **kw)[0].budget
    logged = int(row["fit_projected_mib"])
    assert abs(b.load_mib - logged) / logged < 0.03
    fa = B.fit_like_llamacpp(lambda c, k: b.load_mib * 2**20, free_mib=float(row["fit_free_mib"]),
                             n_ctx=int(row["n_ctx"]), n_ctx_set_by_user=True, n_blocks=30)
    assert fa.action == "no changes" and "no changes needed" in row["quoted_lines"]
    fp = B.plan("gemma-4-26b-a4b", cfg, tool="llama-fit-params", **kw)[0].budget
    assert (fp.load_mib - logged) / logged > 0.1


# --- the compute-buffer misses, traced in ggml-alloc -----------------------------------------------------------

TRACES = __import__("json").loads((__import__("pathlib").Path(__file__).parent / "fixtures" / "llamacpp" /
                                   "alloc_traces.json").read_text())["runs"]


@pytest.mark.parametrize("run", TRACES, ids=[f"{r['model']}[{' '.join(r['flags'])}]" for r in TRACES])
def test_traced_misses_are_placement_not_missing_tensors(run):
    """ggml-alloc's own trace (0c1e570, AT_PRINTF on) of each dry run kvmath misses by > 5 %: the buffer is
    the peak tensor's offset plus its size; for the logits runs, kvmath's live set (three E x T vectors, the CPU
    count) is exactly what is alive below the logits, and the gap is the hole under the last residual stream."""
    case = next(c for c in CASES if c.model == run["model"] and list(c.flags) == run["flags"])
    assert abs(run["peak_offset_mib"] + run["peak_tensor_mib"] - case.compute_logged_mib) < 0.01
    assert int(case.compute_logged_mib) == run["printed_compute_mib_int"]  # --fit-print truncates to MiB
    assert run["highest_live_below_end_mib"] == pytest.approx(run["peak_offset_mib"])  # nothing free at the top
    if case.dominant == "output (logits)":
        E = DRY["models"][run["model"]]["gguf_metadata"]
        arch = E["general.architecture"]
        n_embd, T = E[f"{arch}.embedding_length"], int(dict(zip(run["flags"][::2], run["flags"][1::2])).get("-ub", 512))
        assert run["live_below_mib"] == pytest.approx(3 * 4 * n_embd * T / 2**20)
        assert run["peak_tensor_mib"] == pytest.approx(case.compute_kvmath_mib - 3 * 4 * n_embd * T / 2**20)


def test_every_dry_run_lies_in_kvmaths_range():
    assert all(c.compute_in_range for c in CASES)
    assert DR.summary(CASES)["compute_in_range"] == len(CASES)


def test_dense_qwen36_27b_estimate_counts_its_mlp_not_experts():
    # Qwen 3.6 27B is dense (no num_experts): 64 MLPs of 3 x 5,120 x 17,408 weights, no expert tensors for
    # --n-cpu-moe to move (a fresh user's run of the fit command without --quant-mix raised KeyError)
    from kvmath import facts
    from kvmath.engines.llamacpp.weights import estimate_weights

    w = estimate_weights(facts.reference_config("qwen3.6-27b"), bits_per_weight=4.5)
    assert w.experts == 0 and sum(w.experts_per_block) == 0
    assert w.other >= 64 * round(3 * 5120 * 17408 * 4.5 / 8)


# --- held-out public start-up logs (data/measurements/llamacpp-public-boots.csv, checks == "launch") ------------
# Issue 22's done-when: on logs the project had not seen, the device compute buffer within 5 % and the per-device
# total within 100 MiB on at least 80 %, KV and RS exact on all. Each row is priced through the llama.cpp launch
# line (kvmath.engines.llamacpp.launch) at the log's build (--llamacpp-build), its figures compared with the
# lines the row quotes. Weights: the model buffer is the log's (no GGUF is public), so the total tests KV + RS +
# compute + output; a GPU row's cache is placed by the front door with an estimated tensor table (--quant-mix).

PUBLIC = facts.read_csv("measurements/llamacpp-public-boots.csv")
HELD_OUT = [r for r in PUBLIC if r["checks"] == "launch"]
CONFIGS = json.loads((Path(__file__).resolve().parents[1] / "data" / "measurements" /
                      "llamacpp-public-boots-configs.json").read_text())


def _row_build(row) -> str:
    """The --llamacpp-build of a row: the record its notes say it is priced with ("priced with b6057's rules"),
    else its tag, else b9776's rules (a vendored 2026 build that prints n_outputs_max)."""
    named = re.search(r"priced with (?:the )?(b\d+)", row["notes"])
    b = row["build"].split()[0]
    return named.group(1) if named else b if b.startswith("b") and b[1:].isdigit() else "b9776"


def _row_model(row, tmp: Path) -> str:
    if row["model"] in CONFIGS:
        path = tmp / f"{row['model']}.json"
        path.write_text(json.dumps(CONFIGS[row["model"]]["config"]))
        return str(path)
    return row["model"]


def held_out_price(row) -> dict:
    """kvmath's figures (MiB) for one held-out row: the compute buffer of the row's device, every KV cache
    object, the recurrent state, the output buffer and the device total (with the log's model buffer).

    The launch line is read by the front door (parse_launch, at the row's --llamacpp-build); the buffers come from
    the same functions ``verdict.price`` calls (llamacpp_memory, compute_buffers). A row that offloads part of
    the layers is priced through ``verdict.price`` with a Q8_0 tensor table, for the split of its KV cache."""
    import tempfile

    from kvmath.engines.llamacpp import verdict as V
    from kvmath.engines.llamacpp.builds import TABLE
    from kvmath.engines.llamacpp.backends import max_chunk, resolve as resolve_backend
    from kvmath.engines.llamacpp.compute import compute_buffers, shape_from_config
    from kvmath.engines.llamacpp.launch import parse_launch
    from kvmath.engines.llamacpp.memory import llamacpp_memory
    from kvmath.model.load import load_architecture

    partial = "-ngl 15" in row["settings"]
    # the backend as a user gives it: the log's device as llama.cpp's -dev (Vulkan0, ROCm1, MTL0, CUDA0); a CPU
    # build is -dev none (the front door refuses it, so the backend is resolved from it directly)
    dev = None if row["device"] == "CPU" else row["device"]
    with tempfile.TemporaryDirectory() as t:
        ref = _row_model(row, Path(t))
        argv = ["-m", ref] + row["settings"].split() + ["--llamacpp-build", _row_build(row)]
        argv += ["-dev", dev] if dev and row["backend"] != "cpu" else []
        launch = parse_launch(argv + (["--quant-mix", "Q8_0"] if partial else []), tool=row["tool"])
        if row["backend"] == "cpu":
            launch = launch.with_settings(backend=resolve_backend("none", None)[0], backend_note=None)
        else:
            launch = V.with_backend(launch)
        s, build = launch.settings, TABLE.by_name[launch.release]
        arch = load_architecture(ref)
        config = arch.extras.get("hf_config") or facts.resolve_model(ref)["config"]
        kv_dev = None
        if partial:
            priced = V.price(launch, V.read_model(s, ref))
            kv_dev = {"CUDA0": priced.gpus[0].get("kv", 0) / MiB, "CPU": priced.host.get("kv", 0) / MiB}
    mem = llamacpp_memory(arch, n_ctx=s["n_ctx"], n_parallel=s["n_parallel"], cache_type_k=s["cache_type_k"],
                          cache_type_v=s["cache_type_v"], n_batch=s["n_batch"], n_ubatch=s["n_ubatch"],
                          flash_attn=s["flash_attn"], kv_unified=s["kv_unified"], swa_full=s["swa_full"],
                          n_rs_seq=s["n_rs_seq"], build=build.memory)
    shape = shape_from_config(config)
    full = [c.cells for c in mem.kv if c.kind != "SWA"]
    swa = [c.cells for c in mem.kv if c.kind == "SWA"]
    backend = s["backend"]
    cb = compute_buffers(shape, n_ubatch=mem.n_ubatch, n_kv=max(full, default=0), n_kv_swa=max(swa, default=0),
                         flash_attn=mem.flash_attn, n_outputs=V._output_rows(s, build, mem), backend=backend,
                         fa_mask=build.fa_mask, ffn_live=build.ffn_live, max_chunk=max_chunk(backend, build),
                         ffn_vectors=2 + build.embd_select)
    out = {"compute_mib": cb.device / MiB, "backend": backend, "backend_note": s["backend_note"], "kv_mib": [(c.k_bytes + c.v_bytes) / MiB for c in mem.kv],
           "kv_dev_mib": kv_dev, "rs_mib": mem.recurrent_bytes / MiB if mem.recurrent else None,
           "output_mib": 4 * shape.n_vocab * V._output_buffer_rows(s, build) / MiB,
           "flash_attn": mem.flash_attn}
    if row["model_mib"]:
        out["total"] = float(row["model_mib"]) + (mem.kv_bytes + mem.recurrent_bytes + cb.device) / MiB \
            + (out["output_mib"] if row["output_mib"] else 0)
    return out


def _logged_kv(row) -> tuple[list[float | None], dict[str, float]]:
    """A row's kv_mib: 'a;b' = one figure per cache object (non-SWA first), 'DEV=a;DEV=b' = per device;
    '-' stands for a cache object whose line is not in the excerpt (L17: '-;18.00', the SWA line only)."""
    parts = [p for p in row["kv_mib"].split(";") if p]
    if parts and "=" in parts[0]:
        return [], {k: float(v) for k, v in (p.split("=") for p in parts)}
    return [None if p == "-" else float(p) for p in parts], {}


PRICED = {r["id"]: held_out_price(r) for r in HELD_OUT}
# rows whose compute buffer kvmath misses by more than 5 %, with the sizes: the residual is stated, not hidden.
# L18 (Metal, LM Studio's mid-2025 llama.cpp, gpt-oss-120b, -fa off, full-size SWA cache of 4096 cells):
#   819.26 logged, kvmath 550.50 (b6057's rules: the 64-head kq matrix 64 x 4096 x 512 x 4 = 512 MiB and its
#   rest); 268.76 MiB not derived (the runtime's llama.cpp commit is not in the log, and the tree could not be
#   fetched here). L06 (gpt-oss-20b, CUDA, flash attention on) is within 5 %: the miss is with -fa off on Metal.
# L20 (CUDA, b4550, Pythia 2.8B, -ub 512, -fa off): 162.00 logged, kvmath 152.00 (-6.2 %); the 10.00 MiB are
#   2 x n_embd x n_ubatch x 4 bytes (2560 x 512), as if two more residual-stream tensors were live at the peak
#   (a candidate, unverified: gptneox's parallel residual keeping the attention output and the layer input): an
#   observation, not derived from the b4550 graph. L19 (Pythia 1.4B, Metal, same build) is exact. Read since:
#   b4550-era build_gptneox (src/llama.cpp of 794fe23f, llama-cpp-python 0.3.7) copies Q, K and V out of the fused
#   wqkv with ggml_cont and, with use_par_res, emits each layer's feed-forward before its kq chain (the DFS of
#   add(add(ffn, inpL), attn_out)); 0c1e570's CPU build on the Pythia 2.8B shape at L20's flags prints 157.01 MiB
#   with kq-0 at offset 29.01 (its build_qkv has no such copies), so the newer graph does not show the 10 MiB.
# L23 (Vulkan, b9849, Qwen3.5-9B, -np 4 (not unified), -b = -ub = 2048): 392.44 logged, kvmath 424.00 (+8.0 %):
#   kvmath over by 31.56 MiB, measured before any rule was tuned on rows L21-L35 (the held-out harvest of 2026-12-03).
#   kvmath's peak is its feed-forward phase (3 x 4 x 12288 x 2048 + 3 x 4 x 4096 x 2048 + mask = 424.00); the
#   31.56 MiB are one E x T f32 vector (4 x 4096 x 2048 = 32 MiB) to 0.44 MiB, as if two residual-stream vectors
#   were live, not three. L16 and L31 (the same harness and build, Qwen 3.6 27B at -ub 2048, unified cache) are
#   within 1.5 % with three; a candidate is the non-unified reserve (n_seqs = 4 streams), not derived: the b9849
#   graph was not read.
COMPUTE_RESIDUALS = {"L18": (819.26, 550.50), "L20": (162.00, 152.00), "L23": (392.44, 424.00)}
# L16's output buffer: the log's Vulkan_Host 0.95 MiB is one row of 248320 f32 logits; kvmath's b9776 rule
# (n_parallel x (1 + draft tokens) = 3 rows) gives 2.84 MiB: not derived for b9849 (the buffer may be sized at
# one row and grown by output_reserve when a draft batch asks for more).
# L31 likewise (the same harness, -np auto = 4): 3.79 MiB logged = 4 rows (n_parallel), kvmath 12 rows, 11.37 MiB.
OUTPUT_RESIDUALS = {"L16": (0.95, 2.84), "L31": (3.79, 11.37)}
ISSUE_22_SHARE = 0.80


@pytest.mark.parametrize("row", HELD_OUT, ids=[r["id"] for r in HELD_OUT])
def test_held_out_rows_quote_their_figures(row):
    assert row["held_out"] == "yes" and row["quoted_lines"] and row["build"] and row["settings"]
    for col in ("compute_mib", "rs_mib", "output_mib", "model_mib"):
        if col == "model_mib" and row[col]:  # the sum of the device's model buffer lines (CPU + CPU_REPACK)
            lines = re.findall(r"model buffer size = +([0-9.]+) MiB", row["quoted_lines"])
            assert f"{float(row[col]):.2f}" in lines or f"{sum(map(float, lines)):.2f}" == row[col]
        elif row[col]:
            in_bytes = {round(int(n) / MiB, 2) for n in re.findall(r"\b\d{7,}\b", row["quoted_lines"])}
            assert f"{float(row[col]):.2f}" in row["quoted_lines"] or float(row[col]) in in_bytes, col  # L07/L08
    flat, per_dev = _logged_kv(row)
    for v in [x for x in flat if x is not None] + list(per_dev.values()):
        assert f"{v:.2f}" in row["quoted_lines"]
    assert row["compute_check"] == "yes" or row["compute_check"].startswith("no: ")
    assert row["total_check"] == "yes" or row["total_check"].startswith("no: ")


@pytest.mark.parametrize("row", HELD_OUT, ids=[r["id"] for r in HELD_OUT])
def test_held_out_kv_and_rs_are_exact(row):
    # "KV and RS still exact on all": to the log's 0.01 MiB
    p = PRICED[row["id"]]
    flat, per_dev = _logged_kv(row)
    if flat:
        assert len(p["kv_mib"]) == len(flat)
        logged = [(round(x, 2), y) for x, y in zip(p["kv_mib"], flat) if y is not None]
        assert [x for x, _ in logged] == [y for _, y in logged]
    if per_dev:
        assert {k: round(v, 2) for k, v in p["kv_dev_mib"].items()} == per_dev
    if not flat and not per_dev:  # L08: no KV line in the excerpt; its size follows from -c 65536 (no padding)
        assert row["id"] == "L08" and p["kv_mib"] == [6144.0]
    if row["rs_mib"]:
        assert round(p["rs_mib"], 2) == float(row["rs_mib"])
    if row["output_mib"] and row["id"] in OUTPUT_RESIDUALS:
        assert OUTPUT_RESIDUALS[row["id"]] == (float(row["output_mib"]), round(p["output_mib"], 2))
    elif row["output_mib"]:
        assert round(p["output_mib"], 2) == float(row["output_mib"])


COMPUTE_ROWS = [r for r in HELD_OUT if r["compute_check"] == "yes"]
TOTAL_ROWS = [r for r in HELD_OUT if r["total_check"] == "yes"]


@pytest.mark.parametrize("row", COMPUTE_ROWS, ids=[r["id"] for r in COMPUTE_ROWS])
def test_held_out_compute_buffer(row):
    logged, got = float(row["compute_mib"]), PRICED[row["id"]]["compute_mib"]
    if row["id"] in COMPUTE_RESIDUALS:
        assert COMPUTE_RESIDUALS[row["id"]] == (logged, round(got, 2))
        assert abs(got - logged) > 0.05 * logged
    else:
        assert abs(got - logged) <= 0.05 * logged


# L29 / L30 (ollama 0.32.15's runner): the excerpt has no argv, so -b/-ub/-np/-fa are ollama's L09/L10 pattern,
# assumed; their compute is not counted in the share, but the figures their rows state stay checked here.
ASSUMED_ARGV_COMPUTE = {"L29": (264.04, 68.00), "L30": (378.02, 388.00)}


def test_assumed_argv_rows_state_their_priced_compute():
    for rid, (logged, priced) in ASSUMED_ARGV_COMPUTE.items():
        row = next(r for r in HELD_OUT if r["id"] == rid)
        assert row["compute_check"].startswith("no: ") and f"{priced:.2f} MiB against {logged:.2f}" in row["compute_check"]
        assert (float(row["compute_mib"]), round(PRICED[rid]["compute_mib"], 2)) == (logged, priced)


@pytest.mark.parametrize("row", TOTAL_ROWS, ids=[r["id"] for r in TOTAL_ROWS])
def test_held_out_device_total_within_100_mib(row):
    flat, per_dev = _logged_kv(row)
    assert None not in flat  # a total needs every cache object's line
    logged = sum(float(row[c]) for c in ("model_mib", "rs_mib", "compute_mib", "output_mib") if row[c]) + sum(flat)
    assert abs(PRICED[row["id"]]["total"] - logged) <= 100


def _share(rows, ok) -> float:
    return sum(map(ok, rows)) / len(rows)


def test_issue_22_share_of_held_out_rows():
    """Issue 22's done-when: compute within 5 % and the device total within 100 MiB on >= 80 % of held-out
    logs. Measured now: compute 23 of 26 (88 %), totals 15 of 15. L01-L20: 11 of 13 and 6 of 6 (won since 8 of 13:
    L08 by the Vulkan chunk rule, L09 and L16 by the feed-forward count read off 0c1e570's own allocator,
    tests/test_llamacpp_backends.py). L21-L35, harvested on 2026-12-03 and priced before any rule was tuned on
    them (the held-out figure): compute 12 of 13 (92 %, the miss is L23), totals 9 of 9 (worst -37.08 MiB, L34)."""
    compute = _share(COMPUTE_ROWS, lambda r: abs(PRICED[r["id"]]["compute_mib"] - float(r["compute_mib"]))
                     <= 0.05 * float(r["compute_mib"]))
    assert (sum(1 for r in COMPUTE_ROWS if r["id"] not in COMPUTE_RESIDUALS), len(COMPUTE_ROWS)) == (23, 26)
    assert compute == pytest.approx(23 / 26)
    assert len(TOTAL_ROWS) == 15 and _share(TOTAL_ROWS, lambda r: True) == 1.0
    late = [r for r in COMPUTE_ROWS if int(r["id"][1:]) >= 21]  # the 2026-12-03 harvest, priced untuned
    assert (len(late), sum(1 for r in late if r["id"] not in COMPUTE_RESIDUALS)) == (13, 12)
    # the share is held at the measured figure: a change that loses a row fails, one that wins L18 or L20 must
    # raise it here
    assert compute >= ISSUE_22_SHARE


def test_every_held_out_row_is_checked_or_says_why_not():
    for r in HELD_OUT:
        checked = r["compute_check"] == "yes" or r["kv_mib"] or r["rs_mib"]
        assert checked and (r["compute_check"] == "yes" or r["compute_check"].startswith("no: "))
    assert len(HELD_OUT) >= 32
