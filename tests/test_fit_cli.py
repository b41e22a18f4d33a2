"""kvmath-fit: the anchor's flags, vLLM's verdict, exit codes, one-line errors, light imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kvmath.engines.vllm.cli import FIXES, main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_boots_exit_0(capsys):
    code, out, _ = run(capsys, "--model", "qwen3.6-27b", "--compose", "dual")
    assert code == 0 and "Verdict: BOOTS" in out and "GPU KV cache size" in out and "Anchor (kv-calc" in out
    assert "mem_util = 0.92 as the compose file sets it" in out


def test_refused_exit_1_with_estimate(capsys):
    code, out, _ = run(capsys, "--compose", "long-text")
    assert code == 1 and "REFUSED" in out and "estimated maximum model length is" in out


def test_oom_exit_1(capsys):
    code, out, _ = run(capsys, "--model", "gemma-4-31b", "--compose", "gemma-single", "--kv-format", "bf16",
                       "--mem-util", "0.85")
    assert code == 1 and "OUT OF MEMORY" in out


def test_json_fields(capsys):
    code, out, _ = run(capsys, "--compose", "dual", "--json", "--kv-breakdown")
    d = json.loads(out)
    assert code == 0 and d["outcome"] == "boots" and d["anchor"]["verdict"] in ("PASS", "TIGHT", "FAIL")
    for k in ("requested_bytes", "available_kv_bytes", "pool_tokens", "max_concurrency", "largest_max_model_len",
              "estimated_max_model_len", "cache_breakdown", "peak_gib"):
        assert k in d


def test_solver(capsys):
    code, out, _ = run(capsys, "--compose", "long-text", "--solve-max-ctx", "--json")
    d = json.loads(out)
    assert code == 0 and 0 < d["solved_max_ctx"] < 180000 and d["outcome"] == "boots"
    code, out, _ = run(capsys, "--model", "gemma-4-31b", "--weights-variant", "bf16", "--solve-max-ctx", "--json",
                       "--anchor-defaults")
    assert code == 1 and json.loads(out)["solved_max_ctx"] == 0  # JSON even when nothing boots


def test_calibration_mode(capsys):
    code, out, _ = run(capsys, "--calibration")
    assert code == 0 and "F01" in out and "outcome agrees" in out
    # the user-weights column beside the logged-weights one, and the weights table over the public rows
    assert " errU " in out and "\nP06 " in out and "user weights" in out and "logged weights" in out
    assert "not priced without the row's weights (1): F35" in out
    code, out, _ = run(capsys, "--calibration", "--json")
    d = json.loads(out)
    assert code == 0 and d["summary"]["priced"] > 40
    p06 = next(r for r in d["public_rows"] if r["id"] == "P06")
    assert p06["weights_from"] == "logged" and p06["user_available_error_gib"] > p06["available_error_gib"] + 1
    assert d["user_weights"]["user_weights"]["n"] == d["user_weights"]["logged_weights"]["n"] > 30


def test_card_and_vram(capsys):
    code, out, _ = run(capsys, "--compose", "dual", "--card", "rtx4090")
    assert "23.64 GiB" in out
    code, out, _ = run(capsys, "--compose", "dual", "--vram", "25.437GB", "--json")
    assert json.loads(out)["total_gib"] == pytest.approx(23.69, abs=0.01)


def test_mtp_on_gemma_adds_drafter(capsys):
    _, out, _ = run(capsys, "--model", "gemma-4-31b", "--tp", "2", "--kv-format", "bf16", "--max-ctx", "32768",
                    "--mtp", "--json", "--anchor-defaults")
    assert json.loads(out)["drafter_weights_bytes"] == round(0.97e9 / 2)
    _, out, _ = run(capsys, "--model", "gemma-4-31b", "--compose", "gemma-dual-dflash", "--drafter-gb", "0", "--json")
    assert json.loads(out)["drafter_weights_bytes"] == 0


BAD = [
    (["--model", "llama-9"], "unknown model"),
    (["--compose", "nope"], "unknown preset"),
    (["--model", "gemma-4-31b", "--compose", "dual"], "not in gemma-4-31b's compose list"),
    (["--kv-format", "q4_0"], "llama.cpp cache type"),
    (["--kv-format", "fp9"], "unknown vLLM"),
    (["--kv-format", "fp8_e4m3", "--card", "rtx3090"], "cannot run on rtx3090"),
    (["--kv-format", "nvfp4", "--card", "rtx5090"], "cannot run on rtx5090"),
    (["--tp", "3"], "tensor_parallel_size 3"),
    (["--tp", "0"], "--tp must be >= 1"),
    (["--tp", "two"], "--tp must be a whole number"),
    (["--max-ctx", "0"], "--max-ctx must be >= 1"),
    (["--max-ctx", "-5"], "--max-ctx must be >= 1"),
    (["--max-num-seqs", "0"], "--max-num-seqs must be >= 1"),
    (["--sequences", "2", "--max-num-seqs", "3"], "disagree"),
    (["--mem-util", "1.5"], "--mem-util must be in (0, 1]"),
    (["--mem-util", "abc"], "--mem-util must be a number"),
    (["--vram", "-3"], "--vram must be"),
    (["--vram", "lots"], "--vram must be"),
    (["--card", "voodoo5"], "unknown card"),
    (["--card", "rtx3090", "--vram", "20"], "not both"),
    (["--gpus", "1", "--tp", "2"], "--gpus 1 is fewer than the 2 GPUs of TP 2"),
    (["--drafter-gb", "-1"], "--drafter-gb must be"),
    (["--draft-kv-gb", "nan"], "--draft-kv-gb must be"),
    (["--weights-variant", "gguf"], "--weights-variant gguf is not known"),
    (["--max-num-batched-tokens", "0"], "must be >= 1"),
    (["--compressed-layers", "4"], "requires --compressed-head-dim"),
    (["--indexer-ratio-layers", "2"], "requires --indexer-head-dim"),
    (["--compression-ratio", "0", "--compressed-layers", "1", "--compressed-head-dim", "64"], "must be > 0"),
    (["--indexer-format", "fp2"], "invalid choice"),
    (["--kv-layout", "weird"], "invalid choice"),
    (["--config", "/nonexistent/config.json"], "no such config.json"),
    (["--vllm-version", "0.10.0"], "older than the releases"),
    (["--no-such-flag"], "unrecognized arguments"),
    (["--mtp", "--no-mtp"], "not allowed with argument --mtp"),
    (["--model", ""], "--model is empty"),
    (["--compose", " "], "--compose is empty"),
    (["--max-ctx", "99999999999999999999"], "derived maximum 262,144"),
    (["--model", "gemma-4-31b", "--max-ctx", "300000"], "VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
    (["--layer-partition", "10,10"], "give --pipeline-parallel-size too"),  # was ignored without a word
    (["--weights-gb", "0"], "--weights-gb must be a finite number in (0,"),  # was "[0, ..." then "must be positive"
]


@pytest.mark.parametrize("argv,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_one_line_exit_2(capsys, argv, message):
    try:
        code = main(["--anchor-defaults", *argv])  # the anchor's model and card, so that each case changes one thing
    except SystemExit as e:  # argparse errors
        code = e.code
    err = capsys.readouterr().err
    assert code == 2
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_config_needs_weights(tmp_path, capsys):
    cfg = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
           "hidden_size": 512, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    code, _, err = run(capsys, "--config", str(p))
    assert code == 2 and "--weights-gb" in err
    code, out, _ = run(capsys, "--config", str(p), "--weights-gb", "1", "--max-ctx", "8192", "--kv-format", "bf16",
                       "--card", "rtx3090", "--json")
    assert code == 0 and json.loads(out)["outcome"] == "boots"


def test_fixes_listed():
    assert len(FIXES) >= 10 and all(len(f) == 3 for f in FIXES)


def test_cli_imports_no_numpy_pandas():
    code = ("import sys, kvmath.engines.vllm.cli as f; f.main(['--compose','dual','--json']); "
            "bad=[m for m in ('numpy','pandas','altair') if m in sys.modules]; assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_marginal_verdict_and_headroom(capsys):
    """club-3090 F11 booted Gemma 4 31B AWQ at max_model_len 118,304, vLLM's own estimate from the same
    log: a deployment on the edge. kvmath says so instead of giving a confident verdict, and the
    largest context it offers with headroom for its own error is shorter than the edge. F11 ran in May 2026, with a
    transformers before 5.11 (Gemma 4's one-hot patch positions in the encoder profile): priced at vLLM 0.22.0, the
    release of that month (a fresh 0.24.0 install takes transformers 5.11+, whose profile is 0.95 GiB smaller)."""
    argv = ["--model", "gemma-4-31b", "--tp", "2", "--mem-util", "0.85", "--max-ctx", "118304", "--max-num-seqs",
            "1", "--max-num-batched-tokens", "6144", "--weights-variant", "awq", "--drafter-gb", "0.97", "--mtp",
            "--kv-format", "bf16", "--card", "rtx3090", "--vllm-version", "0.22.0"]
    code, out, _ = run(capsys, *argv)
    assert "marginal:" in out and "it may or may not boot" in out
    code, out, _ = run(capsys, *argv, "--json")
    d = json.loads(out)
    assert d["marginal"] and abs(d["margin_gib"]) < d["calibration_error_gib"]
    assert d["margin_bytes"] == d["available_kv_bytes"] - d["kv_per_request_bytes"]
    assert 0 < d["largest_max_model_len_with_headroom"] < d["largest_max_model_len"]


def test_oom_margin_is_to_booting(capsys):
    """Out of memory: the margin is still available KV minus one request's need (far below zero), so
    the verdict is not called marginal just because the available memory is near zero."""
    code, out, _ = run(capsys, "--model", "gemma-4-31b", "--compose", "gemma-single", "--kv-format", "bf16",
                       "--mem-util", "0.9", "--json")
    d = json.loads(out)
    assert code == 1 and d["outcome"] == "oom" and d["available_kv_bytes"] <= 0
    assert d["margin_bytes"] < -d["calibration_error_gib"] * 2**30 and not d["marginal"]


def test_solver_prints_headroom_when_on_the_edge(capsys):
    code, out, _ = run(capsys, "--compose", "long-text", "--solve-max-ctx")
    assert code == 0 and "headroom for kvmath's calibration error" in out


def test_models_without_a_vllm_block_plan_are_a_clear_error(capsys):
    """MLA (DeepSeek-V3), Mamba-2 (Nemotron-H) and KDA (Kimi Linear) layers: one line, exit 2."""
    import os
    from pathlib import Path

    from kvmath.facts import reference_config_path

    for name in ("deepseek-ai__DeepSeek-V3.json", "nvidia__Nemotron-H-56B-Base-8K.json",
                 "moonshotai__Kimi-Linear-48B-A3B-Instruct.json"):
        code, out, err = run(capsys, "--config", str(reference_config_path(name)), "--weights-gb", "40", "--tp", "4",
                             "--card", "h100", "--max-ctx", "4096")
        # a verdict, or one line naming what kvmath cannot plan (MLA formats, Mamba-2 / KDA prefix caching)
        assert (code in (0, 1) and out) or (code == 2 and err.count("\n") == 1), (name, code, err)


def test_drafter_flags(capsys):
    code, out, _ = run(capsys, "--model", "gemma-4-31b", "--compose", "gemma-dual-dflash", "--drafter-gb", "0", "--json")
    d = json.loads(out)
    assert d["num_speculative_tokens"] == 0 and d["drafter_weights_bytes"] == 0
    assert not any("DFlash" in n for n in d["notes"])
    code, out, _ = run(capsys, "--model", "gemma-4-26b-a4b", "--dflash-draft-gb", "2", "--json", "--anchor-defaults")
    assert any(n.startswith("DFlash drafter") for n in json.loads(out)["notes"])
    code, out, _ = run(capsys, "--compose", "dual-dflash", "--mtp", "--json")
    d = json.loads(out)
    assert any("--mtp replaces" in n for n in d["notes"]) and not any(n.startswith("DFlash") for n in d["notes"])
    code, out, _ = run(capsys, "--model", "gemma-4-31b", "--compose", "gemma-dual-dflash", "--solve-max-ctx")
    assert "Note: DFlash drafter" in out


def test_preset_kv_format_the_card_cannot_run_names_the_preset(capsys):
    code = main(["--model", "gemma-4-31b", "--compose", "gemma-single"])
    err = capsys.readouterr().err
    assert code == 2 and "preset gemma-single sets --kv-format fp8_e4m3" in err


def test_pipeline_data_expert_parallel_flags(capsys):
    """--pipeline-parallel-size: every stage's budget, the pool the smallest stage's blocks; --tensor-parallel-size
    is --tp; --data-parallel-size multiplies the pool; --enable-expert-parallel shrinks a MoE model's weights."""
    common = ["--kv-format", "fp8_e5m2", "--max-ctx", "65536", "--max-num-seqs", "2", "--max-num-batched-tokens",
              "4096", "--mem-util", "0.9", "--anchor-defaults"]
    code, out, _ = run(capsys, "--model", "qwen3.6-27b", "--tensor-parallel-size", "1", "--pipeline-parallel-size", "4",
                       *common, "--json")
    d = json.loads(out)
    assert code == 0 and d["layers_per_stage"] == [16, 16, 16, 16] and d["cards"] == 4
    assert d["num_blocks"] == min(s["num_blocks"] for s in d["stages"])
    code, out, _ = run(capsys, "--model", "qwen3.6-27b", "--tp", "1", "-pp", "4", "-dp", "2", *common, "--json")
    d2 = json.loads(out)
    assert d2["total_pool_tokens"] == 2 * d["pool_tokens"] and d2["cards"] == 8
    code, out, _ = run(capsys, "--model", "qwen3.6-35b-a3b", "--tp", "2", "-dp", "2", "--enable-expert-parallel", *common)
    assert code == 0 and "expert parallelism" in out and "stage 0" in out
    code, _, err = run(capsys, "--model", "qwen3.6-27b", "-pp", "4", "--layer-partition", "1,2,3", *common)
    assert code == 2 and "does not match" in err


# --- a pasted `vllm serve` line ------------------------------------------------------------------------

def _json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    return code, (json.loads(out) if out.strip() else None), err


def test_vllm_serve_line_is_the_same_budget_as_kvmath_fit_flags(capsys):
    code1, a, _ = _json(capsys, "vllm", "serve", "Qwen/Qwen3.6-27B", "--tensor-parallel-size", "2", "--card", "rtx3090",
                        "--gpu-memory-utilization", "0.9", "--kv-cache-dtype", "fp8_e5m2", "--max-model-len", "32k",
                        "--max-num-seqs", "4", "--max-num-batched-tokens", "8k", "--port", "8000",
                        "--served-model-name", "q", "qq", "--trust-remote-code")
    # one defaults story: --model with kvmath's id is the same HF repository's checkpoint as the pasted line
    code2, b, _ = _json(capsys, "--model", "qwen3.6-27b", "--tp", "2", "--mem-util", "0.9", "--kv-format", "fp8_e5m2",
                        "--max-ctx", "32000", "--max-num-seqs", "4", "--max-num-batched-tokens", "8000",
                        "--card", "rtx3090")
    assert code1 == code2
    # vLLM's human_readable_int: lowercase k is 10^3 (vllm/engine/arg_utils.py)
    assert a["max_model_len"] == 32000 and a["max_num_batched_tokens"] == 8000
    for key in ("available_kv_gib", "pool_tokens", "outcome", "tp", "kv_format", "mem_util"):
        assert a[key] == b[key], key
    assert any("ignored (they do not change memory): --port, --served-model-name, --trust-remote-code" in n
               for n in a["notes"])


def test_max_model_len_auto_is_vllms_auto_fit(capsys):
    # qwen3.6-27b on one RTX 3090 at fp8_e5m2: the full 262,144 tokens do not fit one request, so vLLM's
    # _auto_fit_max_model_len lowers max_model_len to the longest length the KV memory holds
    code, d, _ = _json(capsys, "vllm", "serve", "qwen3.6-27b", "--max-model-len", "auto",
                       "--kv-cache-dtype", "fp8_e5m2", "--card", "rtx3090", "--gpu-memory-utilization", "0.95",
                       "--max-num-seqs", "1", "--weights-variant", "int4")
    assert code == 0 and d["outcome"] == "boots" and d["max_model_len"] < 262144
    L = d["max_model_len"]
    assert any(n.startswith(f"Auto-fit max_model_len: reduced from 262144 to {L} ") for n in d["notes"])
    # the fitted length boots and one token more is refused at the same settings
    code, nxt, _ = _json(capsys, "--model", "qwen3.6-27b", "--max-ctx", str(L + 1), "--kv-format", "fp8_e5m2",
                         "--mem-util", "0.95", "--anchor-defaults")
    assert code == 1 and nxt["outcome"] == "refused"
    # -1 is the same request
    code, d2, _ = _json(capsys, "--model", "qwen3.6-27b", "--max-model-len", "-1", "--kv-format", "fp8_e5m2",
                        "--anchor-defaults")
    assert d2["max_model_len"] == L


def test_max_model_len_auto_keeps_the_full_length_when_it_fits(capsys):
    code, d, _ = _json(capsys, "--model", "qwen3.6-27b", "--max-model-len", "auto", "--kv-format", "fp8_e5m2",
                       "--tensor-parallel-size", "2", "--anchor-defaults")
    assert code == 0 and d["max_model_len"] == 262144
    assert "Auto-fit max_model_len: full model context length 262144 fits in available GPU memory" in d["notes"]


@pytest.mark.parametrize("argv, message", [
    (["--quantization", "fp8", "--card", "rtx3090"], "--quantization fp8 (online) on qwen3.6-27b: priced for dense"),
    (["--quantization", "awq", "--card", "rtx3090"], "on qwen3.6-27b's unquantised checkpoint is online quantisation"),
    (["--cpu-offload-gb", "4"], "--cpu-offload-gb is not modelled"),
    (["--speculative-config", '{"method": "eagle", "num_speculative_tokens": 3}'], "kvmath models the model's own MTP layers"),
    (["--speculative-config", "{nope"], "--speculative-config is not JSON"),
    (["--max-model-len", "12.5K"], "decimals are not allowed with binary suffixes"),
    (["--max-model-len", "-2"], "--max-ctx must be >= 1, got -2"),
])
def test_vllm_flags_kvmath_does_not_model_are_refused(capsys, argv, message):
    try:
        code = main(["vllm", "serve", "Qwen/Qwen3.6-27B", *argv])
    except SystemExit as e:  # argparse errors
        code = e.code
    out = capsys.readouterr()
    assert code == 2 and message in out.err and out.err.count("\n") == 1 and not out.out, out.err


def test_speculative_config_mtp_is_the_models_mtp(capsys):
    code, a, _ = _json(capsys, "qwen3.6-27b", "--card", "rtx3090", "--speculative-config",
                       '{"method": "mtp", "num_speculative_tokens": 2}', "--max-model-len", "32768",
                       "--kv-cache-dtype", "fp8_e5m2", "--gpu-memory-utilization", "0.95", "--max-num-seqs", "1",
                       "--weights-variant", "int4")
    code2, b, _ = _json(capsys, "--model", "qwen3.6-27b", "--mtp", "--num-speculative-tokens", "2", "--max-ctx", "32768",
                        "--anchor-defaults")
    assert a["num_speculative_tokens"] == b["num_speculative_tokens"] == 2
    assert a["available_kv_gib"] == b["available_kv_gib"] and a["pool_tokens"] == b["pool_tokens"]


def test_enforce_eager_drops_the_cuda_graph_term(capsys):
    _, a, _ = _json(capsys, "--model", "qwen3.6-27b", "--max-ctx", "32768", "--anchor-defaults")
    _, b, _ = _json(capsys, "--model", "qwen3.6-27b", "--max-ctx", "32768", "--enforce-eager", "--anchor-defaults")
    assert b["available_kv_gib"] > a["available_kv_gib"]


def test_a_pasted_line_takes_vllms_defaults_not_the_anchors(capsys):
    # vLLM's defaults: kv_cache_dtype auto, gpu_memory_utilization 0.92 (vllm/config/cache.py, 0.20.0-0.33.0), the
    # card's max_num_seqs, the model's
    # derived max_model_len, and the HF repository's own checkpoint (bf16 Qwen 3.6 27B: 54.7 GB, which does
    # not fit two RTX 3090s). --model with kvmath's id takes the same (one defaults story, issue 21); the public
    # calculator's (its int4 checkpoint, fp8_e5m2, 0.95, 1 sequence) only with --anchor-defaults, each named in a note
    code, d, _ = _json(capsys, "vllm", "serve", "Qwen/Qwen3.6-27B", "--tensor-parallel-size", "2", "--card", "rtx3090")
    assert (d["kv_format"], d["mem_util"], d["max_model_len"], d["max_num_seqs"]) == ("bf16", 0.92, 262144, 256)  # auto = bf16
    assert code == 1 and d["outcome"] == "oom"
    code, m, _ = _json(capsys, "--model", "qwen3.6-27b", "--tp", "2", "--card", "rtx3090")
    keys = ("kv_format", "mem_util", "max_model_len", "max_num_seqs", "weights_bytes", "available_kv_bytes", "outcome")
    assert {k: m[k] for k in keys} == {k: d[k] for k in keys}
    assert any(n.startswith("checkpoint: Qwen/Qwen3.6-27B's own") for n in m["notes"])
    code, e, _ = _json(capsys, "--model", "qwen3.6-27b", "--tp", "2", "--anchor-defaults")
    assert (e["kv_format"], e["mem_util"], e["max_num_seqs"]) == ("fp8_e5m2", 0.95, 1) and e["outcome"] == "boots"
    assert any("public calculator's defaults" in n and "--anchor-defaults" in n for n in e["notes"])


def test_llama_8b_has_one_largest_context_however_it_is_asked(capsys):
    """Issue 21: Llama 3.1 8B on a 3090 answered 37,872 tokens by --model and 117,456 pasted. Asked by kvmath's id,
    by its HF repo and as a pasted line, the answer is now one (vLLM's defaults for all three)."""
    answers = []
    for argv in (["--model", "llama-3.1-8b"], ["--model", "meta-llama/Llama-3.1-8B-Instruct"],
                 ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"], ["llama-3.1-8b"]):
        code, d, err = _json(capsys, *argv, "--card", "rtx3090", "--solve-max-ctx")
        assert d is not None, err
        answers.append((d["solved_max_ctx"], d["mem_util"], d["kv_format"], d["max_num_seqs"]))
    assert len(set(answers)) == 1 and answers[0][1:] == (0.92, "bf16", 256), answers


def test_a_hybrid_refused_at_every_length_by_max_num_seqs_says_so(capsys):
    """A fresh user's finding: Qwen 3.6 27B on one H100 at vllm serve's max_num_seqs 1024 said "the non-KV terms
    alone exceed the budget" with 15.6 GiB free for KV; the limit is the Mamba cache blocks, which do not grow as
    the length shrinks (vLLM's own advice: lower max_num_seqs)."""
    code, out, _ = run(capsys, "--model", "qwen3.6-27b", "--card", "h100", "--solve-max-ctx")
    assert code == 1 and "the limit is max_num_seqs, not the length" in out and "non-KV terms" not in out
    blocks = int(out.split("lower --max-num-seqs to at most ")[1].split()[0].replace(",", ""))
    code, out, _ = run(capsys, "--model", "qwen3.6-27b", "--card", "h100", "--max-num-seqs", str(blocks),
                       "--solve-max-ctx")
    assert code == 0 and "Largest max_model_len that boots" in out


def test_kimi_linear_takes_vllms_length_key():
    """Kimi Linear's config has no max_position_embeddings but "model_max_length": 1048576, a key vLLM derives
    max_model_len from (model_arch_config_convertor.py derive_max_model_len_and_key, 0.24.0)."""
    from kvmath.model.load import load_architecture

    assert load_architecture("kimi-linear-48b-a3b").derived_max_model_len == 1048576
    import json as _json
    from pathlib import Path

    cfg = _json.loads((Path(__file__).parents[1] / "data/configs/moonshotai__Kimi-Linear-48B-A3B-Instruct.json")
                      .read_text())
    assert "max_position_embeddings" not in cfg and cfg["model_max_length"] == 1048576
    assert main(["--model", "kimi-linear-48b-a3b", "--card", "h100", "--tp", "2"]) in (0, 1)


def test_vllm_serves_yaml_config_is_named_not_misread(capsys):
    # vllm serve --config is a YAML file of its flags; kvmath's --config is a model: say so (it said "give the
    # model once")
    code = main(["vllm", "serve", "Qwen/Qwen3.6-27B", "--config", "serve.yaml", "--card", "h100"])
    err = capsys.readouterr().err
    assert code == 2 and "vllm serve's YAML file of flags" in err and err.count("\n") == 1


@pytest.mark.parametrize("program", ["./llama-server", "/usr/local/bin/llama-server"])
def test_a_program_given_by_its_path_is_that_program(capsys, program):
    from kvmath.fit import main as fit

    code = fit([program, "-m", "llama-3.1-8b", "-c", "8192", "-ngl", "99", "--card", "rtx4090", "--no-solve", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["engine"] == "llama.cpp"


def test_a_lines_environment_words_are_its_environment(capsys, monkeypatch):
    """``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve ...`` is how a user lets vLLM take a length above the model's
    (vllm/envs.py); the words set it for that answer only, and a path to the vllm program is the program."""
    from kvmath.fit import main as fit
    import os

    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    line = ["serve", "meta-llama/Llama-3.1-8B-Instruct", "--card", "h100", "--max-model-len", "300000", "--json"]
    assert fit(["vllm", *line]) == 2  # 300,000 > the derived 131,072
    capsys.readouterr()
    assert fit(["CUDA_VISIBLE_DEVICES=0", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "/opt/venv/bin/vllm", *line]) == 0
    assert json.loads(capsys.readouterr().out)["max_model_len"] == 300000
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in os.environ and "CUDA_VISIBLE_DEVICES" not in os.environ


def test_solve_max_ctx_with_pipeline_stages_is_refused_not_ignored(capsys):
    code = main(["vllm", "serve", "Qwen/Qwen3-32B", "--card", "h100", "-pp", "2", "--solve-max-ctx"])
    err = capsys.readouterr().err
    assert code == 2 and "--solve-max-ctx is not solved across pipeline" in err and len(err.splitlines()) == 1


def test_every_vllm_json_key_is_in_the_schema(capsys):
    """kvmath-fit --json-schema documents every key a vllm serve line answers with (a fresh user's finding: the
    schema held only the verdict record, which vLLM lines do not print)."""
    from kvmath.fit import json_schema, main as fit

    schema = json_schema()
    line = ["vllm", "serve", "Qwen/Qwen3-32B", "--card", "h100", "--json"]
    for extra, section in (([], "vllm_serve"), (["--solve-max-ctx"], "vllm_serve"),
                           (["--kv-breakdown"], "vllm_serve"), (["-pp", "2"], "vllm_serve_parallel")):
        fit([*line, *extra])
        out = json.loads(capsys.readouterr().out)
        assert set(out) <= set(schema[section]), (extra, set(out) - set(schema[section]))
        for stage in out.get("stages", []):
            assert set(stage) <= set(schema["vllm_serve"])
    assert all(isinstance(v, str) and v for v in schema["vllm_serve"].values())


@pytest.mark.parametrize("flag, engine", [(["-ngl", "99"], "llama.cpp"), (["--mem-fraction-static", "0.8"], "SGLang")])
def test_another_engines_flag_on_a_vllm_line_is_named(capsys, flag, engine):
    with pytest.raises(SystemExit) as e:
        main(["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", *flag, "--card", "h100"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"{flag[0]} is a" in err and f"{engine} flag" in err and len(err.splitlines()) == 1
