"""Issue 21's defects on public vLLM cases, each with its expected figure or text from the public thread or
vLLM's source (no figure here is computed by kvmath's own arithmetic)."""

from __future__ import annotations

import json

import pytest

# vllm-project/vllm config/compilation.py (0.20.0 l.1436-1443, the same text to 0.33.0): the check that only
# CUDA-graph capture needs, skipped under --enforce-eager (the `if not enforce_eager` guard around it)
MAMBA_CHECK = "exceeds available Mamba cache blocks"
QWEN_H100 = ["--model", "qwen3.6-27b", "--card", "h100", "--kv-format", "bf16", "--weights-variant", "fp8",
             "--mem-util", "0.9", "--no-mtp", "--max-ctx", "32768"]


def fit(argv, capsys):
    from kvmath.fit import main

    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors leave through SystemExit, as in the console script
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_enforce_eager_skips_the_decode_block_check(capsys):
    code, out, _ = fit([*QWEN_H100, "--max-num-seqs", "1024"], capsys)
    assert code == 1 and MAMBA_CHECK in out
    code, out, _ = fit([*QWEN_H100, "--max-num-seqs", "1024", "--enforce-eager"], capsys)
    assert code == 0 and "Verdict: BOOTS" in out and MAMBA_CHECK not in out


def test_max_num_seqs_named_as_the_limit(capsys):
    # the case: "the limit is max_num_seqs (794 would boot)", not "the non-KV terms exceed the budget";
    # 795 since vfix5 counts one first CUDA graph capture for FULL + PIECEWISE (vLLM's max over modes), not two
    code, out, _ = fit([*QWEN_H100, "--max-num-seqs", "1024"], capsys)
    line = next(x for x in out.splitlines() if x.startswith("Largest max_model_len"))
    assert "non-KV" not in line and "the limit is max_num_seqs" in line and "at most 795" in line
    code, out, _ = fit([*QWEN_H100, "--max-num-seqs", "795"], capsys)
    assert code == 0 and "Verdict: BOOTS" in out


def test_kvmath_exits_1_on_a_refused_plan(capsys):
    from kvmath.cli import main

    # 100 MiB of KV cannot hold one 262,144-token request of Qwen 3.6 27B: its full attention alone is
    # 16 full layers x 4 KV heads x 256 x K+V x 2 B = 64 KiB per token, 16 GiB at 262,144 tokens
    code = main(["--config", "qwen3.6-27b", "--engine", "vllm", "--kv-cache-memory-bytes", "100MiB",
                 "--max-ctx", "262144"])
    out = capsys.readouterr().out
    assert code == 1 and "refused at start-up" in out


SERVE = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--card", "rtx3090"]


@pytest.mark.parametrize("flag", ["--async-scheduling"])
def test_serving_flags_of_real_lines_are_ignored_with_a_note(flag, capsys):
    code, out, err = fit([*SERVE, flag], capsys)
    assert code == 0 and err == "" and f"ignored (they do not change memory): {flag}" in out


@pytest.mark.parametrize("release", ["0.10.1", "0.19.0", "0.27.0"])
def test_enable_reasoning_is_refused_where_vllm_serve_has_no_such_flag(release, capsys):
    """vllm/engine/arg_utils.py 0.9.2 l.627 registers --enable-reasoning "[DEPRECATED]"; 0.10.0's has no such flag,
    nor does any release data/vllm-flags.json reads (0.10.1-0.34.0), so vllm serve's argparse rejects the line:
    one line, exit 2, naming the release and --reasoning-parser."""
    code, out, err = fit([*SERVE, "--vllm-version", release, "--enable-reasoning", "--reasoning-parser",
                          "deepseek_r1"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"--enable-reasoning is not a vLLM {release} flag" in err and "--reasoning-parser" in err


@pytest.mark.parametrize("dtype", ["half", "float16", "bfloat16", "auto"])
def test_dtype_16_bit_on_a_bf16_checkpoint(dtype, capsys):
    # vLLM's ModelDType choices; half = float16 (vllm/config/model.py _STR_DTYPE_TO_TORCH_DTYPE); Llama 3.1 8B's
    # config.json: "torch_dtype": "bfloat16". float16 and bfloat16 are both 2 bytes: the same weights.
    base_code, base, _ = fit([*SERVE, "--json"], capsys)
    code, out, err = fit([*SERVE, "--dtype", dtype, "--json"], capsys)
    assert code == base_code == 0 and err == ""
    a, b = json.loads(base), json.loads(out)
    assert a["weights_bytes"] == b["weights_bytes"] > 0 and a["outcome"] == b["outcome"]
    if dtype in ("half", "float16"):
        assert any("--dtype float16" in n for n in b["notes"]), b["notes"]


@pytest.mark.parametrize("dtype,why", [("float32 --attention-backend FLASH_ATTN", "supported_dtypes are float16 and "
                                                                                 "bfloat16"),
                                       ("float32 --kv-cache-dtype fp8", "not modelled"),
                                       ("int8", "not one vLLM takes")])
def test_dtype_refused_in_one_line(dtype, why, capsys):
    """float32 itself is priced (test_vllm_held_out P130); FlashAttention cannot run it (vLLM 0.19.0
    v1/attention/backends/flash_attn.py supported_dtypes = [float16, bfloat16])."""
    code, out, err = fit([*SERVE, "--dtype", *dtype.split()], capsys)
    assert code == 2 and why in err and err.count("\n") == 1 and "Traceback" not in err


# vllm/config/cache.py at each tag: `gpu_memory_utilization: float = Field(default=0.92, ...)` in 0.20.0-0.33.0
# (0.9 in 0.19.0), `float | None = Field(default=None, ...)` in 0.34.0 (1.0 with the extensible KV cache)
def test_a_pasted_line_takes_the_releases_gpu_memory_utilization(capsys):
    code, out, err = fit([*SERVE, "--json"], capsys)
    assert code == 0, err
    rec = json.loads(out)
    assert rec["mem_util"] == 0.92 and rec["requested_bytes"] == -(-rec["total_bytes"] * 92 // 100)
    code, out, err = fit([*SERVE, "--vllm-version", "0.27.0"], capsys)
    assert "gpu_memory_utilization=0.92" in out and "vLLM's default when the line leaves it out" in out
    code, out, err = fit([*SERVE, "--gpu-memory-utilization", "0.9"], capsys)
    assert "gpu_memory_utilization=0.9," in out and "vLLM's default when the line" not in out
    code, out, err = fit([*SERVE, "--vllm-version", "0.34.0"], capsys)
    assert code == 2 and "--gpu-memory-utilization" in err and len(err.strip().splitlines()) == 1


def test_gpt_oss_120b_on_one_h100_does_not_boot_at_its_defaults(capsys):
    # vllm-project/vllm#23278 (0.10.1, Marlin: "Model loading took 65.9651 GiB", available KV -2.14 GiB) and
    # #33155 (0.14.1, "Using Triton backend", "Model loading took 64.38 GiB", out of memory): the HF checkpoint at
    # vLLM's defaults does not start on one H100. The config's tensors alone are 60.78 GiB: the kernel's layout
    # makes the difference (kvmath.engines.vllm.weights.mxfp4_kernel_bytes)
    code, out, err = fit(["vllm", "serve", "openai/gpt-oss-120b", "--card", "h100"], capsys)
    assert code == 1 and "Verdict: BOOTS" not in out, out
    weights = float(next(x for x in out.splitlines() if "- weights" in x).split()[-2])
    assert weights >= 64.3 and "Triton backend" in out
    # on an A100 (sm_80) the experts are padded for Marlin: hidden 2880 -> 3072, intermediate 2880 -> 2944
    code, out, err = fit(["vllm", "serve", "openai/gpt-oss-120b", "--card", "a100"], capsys)
    assert "Marlin backend: hidden 2880 -> 3072, intermediate per partition 2880 -> 2944" in out


def test_expert_parallel_over_data_parallel_ranks_splits_the_experts():
    # gpt-oss-120b's experts per layer and expert, by hand from its config (hidden 2880, intermediate 2880): MXFP4
    # values and E8M0 scales 3 x 2880 x 2880 x 17 / 32 = 13,219,200 B, bf16 biases 2 x (5760 + 2880) = 17,280 B.
    # With --enable-expert-parallel over TP 1 x DP 2 each rank holds 64 of the 128 (fused_moe/layer.py
    # determine_expert_map), so rank 0 holds 64 x 36 x 13,236,480 B less than with DP 1. A custom card: no kernel
    # padding applies, so the difference is the checkpoint's alone.
    from kvmath.engines.vllm.parallel import parallel_budget

    w = [parallel_budget("gpt-oss-120b", card=None, total_gib=79.11, enable_expert_parallel=True, dp=dp).stages[0].weights
         for dp in (1, 2)]
    assert w[0] - w[1] == 64 * 36 * 13_236_480


def test_quantization_naming_the_checkpoints_own_method(capsys):
    # openai/gpt-oss-120b's config.json: quantization_config.quant_method "mxfp4". vLLM takes the flag when it names
    # that method and refuses another one (config/model.py: "Quantization method specified in the model config
    # ... does not match the quantization method specified in the `quantization` argument")
    base = ["vllm", "serve", "openai/gpt-oss-120b", "--card", "h100", "--max-model-len", "32768", "--json"]
    code, plain, _ = fit(base, capsys)
    code2, same, _ = fit([*base, "--quantization", "mxfp4"], capsys)
    a, b = json.loads(plain), json.loads(same)
    assert code == code2 and a["weights_bytes"] == b["weights_bytes"] and a["available_kv_bytes"] == b["available_kv_bytes"]
    assert any("--quantization mxfp4: the checkpoint's own method" in n for n in b["notes"])
    code, out, err = fit([*base, "-q", "awq"], capsys)
    assert code == 2 and "does not match the checkpoint's quant_method 'mxfp4'" in err and "valid here: mxfp4" in err


@pytest.mark.parametrize("variant", ["bogus", "awq"])
def test_weights_variant_is_checked_for_a_model_without_published_sizes(variant, capsys):
    # the case: Llama 3.1 70B has no published checkpoint sizes, so its weights are the HF checkpoint's
    # own bf16 tensors; 'awq' was priced as those bf16 tensors (131.45 GiB) without a word
    code, out, err = fit(["--model", "llama-3.1-70b", "--weights-variant", variant], capsys)
    assert code == 2 and not out and "valid: default, hf, bf16" in err and len(err.strip().splitlines()) == 1
    code, out, err = fit(["--model", "llama-3.1-70b", "--weights-variant", "bf16", "--tp", "8", "--card", "h100"], capsys)
    assert code in (0, 1) and "- weights" in out


def test_a_model_the_public_corpus_checks_is_not_called_outside_it():
    # the issue: "model outside the calibration set" was printed for models the calibration report prices
    import csv
    from pathlib import Path

    from kvmath.engines.vllm.budget import budget

    with open(Path(__file__).parents[1] / "data" / "measurements" / "vllm-public-boots.csv", newline="") as f:
        n = sum(1 for r in csv.DictReader(f) if r["model"].lower() in ("meta-llama/llama-3.1-8b-instruct",
                                                                        "meta-llama/llama-3.1-8b")
                and r["available_kv_gib"] and "V0" not in r["vllm_version"]
                and not r["notes"].lstrip().lower().startswith("held out"))  # held-out rows count nowhere
    note = next(x for x in budget("llama-3.1-8b", card="h100").notes if "outside the fit" in x)
    assert n > 0 and f"{n} public boot log" in note
    assert any("no public boot log of it" in x for x in budget("mistral-7b-v0.1", card="h100").notes)


def test_gpus_without_tp_is_the_tp_size(capsys):
    # the issue: "--gpus 2 stays at TP 1"
    code, out, err = fit(["--model", "qwen3.6-27b", "--gpus", "2", "--card", "rtx3090", "--json"], capsys)
    rec = json.loads(out)
    assert rec["tp"] == 2 and any("--gpus 2 without --tensor-parallel-size" in n for n in rec["notes"])
    code, out, err = fit(["--model", "qwen3.6-27b", "--gpus", "4", "--tp", "2", "--card", "rtx3090", "--json"], capsys)
    assert json.loads(out)["tp"] == 2


def test_the_public_calculators_defaults_are_named_when_taken(capsys):
    # the "two defaults stories": one now (vLLM's); the public calculator's only with --anchor-defaults, and
    # the answer says which defaults it took (the anchor's: fp8_e5m2, 0.95, one sequence, 180,000 tokens, and its
    # checkpoint; vLLM's: auto and the model's derived maximum, beside the notes of gpu_memory_utilization, ...)
    code, out, err = fit(["--model", "llama-3.1-8b", "--card", "rtx3090", "--anchor-defaults", "--json"], capsys)
    note = next(n for n in json.loads(out)["notes"] if n.startswith("not given"))
    assert "kv-cache-dtype fp8_e5m2" in note and "gpu_memory_utilization 0.95" in note and "max_num_seqs 1" in note
    assert "max_model_len 131,072 (180,000 capped" in note  # Llama 3.1's max_position_embeddings
    code, out, err = fit(["--model", "qwen3.6-27b", "--card", "h100", "--anchor-defaults", "--kv-format", "bf16",
                          "--mem-util", "0.9", "--max-num-seqs", "2", "--max-ctx", "8k", "--json"], capsys)
    note = next(n for n in json.loads(out)["notes"] if n.startswith("not given"))
    assert "checkpoint default (autoround_int4, the public calculator's)" in note
    code, out, err = fit(["--model", "llama-3.1-8b", "--card", "rtx3090", "--json"], capsys)
    note = next(n for n in json.loads(out)["notes"] if n.startswith("not given"))
    assert note.startswith("not given, so vLLM's defaults: kv-cache-dtype auto (the model dtype, bfloat16), max-model-len "
                           "131,072")
    code, out, err = fit([*SERVE, "--json"], capsys)
    assert not any(n.startswith("not given, so the public") for n in json.loads(out)["notes"])


# a fresh user's findings on the changes above (each a command that gave a confident wrong answer or a wrong refusal)
def test_device_memory_needs_its_unit(capsys):
    code, out, err = fit(["vllm", "serve", "openai/gpt-oss-20b", "--device-memory", "24", "--max-model-len", "8192"],
                         capsys)
    assert code == 2 and "needs a unit: 24GiB" in err and not out  # was read as 24 bytes: "0.00 GiB" and OOM
    code, out, err = fit(["vllm", "serve", "openai/gpt-oss-20b", "--device-memory", "24GiB", "--max-model-len",
                          "8192"], capsys)
    assert "(24.00 GiB as PyTorch sees it)" in out


def test_the_mxfp4_kernel_rule_holds_with_a_given_size(capsys):
    # the card's kernel decides whatever gives the size: V100 has none. A given --weights-gb is the size vLLM
    # loads ("Model loading took", what the calibration gives from public logs), so the padding is not added twice
    code, out, err = fit(["--model", "gpt-oss-20b", "--card", "v100", "--weights-gb", "13.76", "--max-ctx", "8192"],
                         capsys)
    assert code == 2 and "sm_70" in err
    code, out, err = fit(["vllm", "serve", "openai/gpt-oss-20b", "--card", "rtx3090", "--max-model-len", "8192",
                          "--weights-gb", "13.76", "--json"], capsys)
    rec = json.loads(out)
    assert rec["weights_bytes"] == round(13.76e9) and any("padding of the experts included" in n for n in rec["notes"])
    code, out, err = fit(["vllm", "serve", "openai/gpt-oss-20b", "--card", "mi300x", "--max-model-len", "8192"], capsys)
    assert "ROCm backend" in out


def test_gpus_counts_pipeline_and_data_parallel_ranks(capsys):
    base = ["vllm", "serve", "openai/gpt-oss-120b", "--card", "rtx3090", "--max-model-len", "8192"]
    code, out, err = fit([*base, "--gpus", "4", "-pp", "2"], capsys)
    assert "on 4 x rtx3090: TP=2 x PP=2" in out
    code, out, err = fit([*base, "--gpus", "2", "--tp", "2", "-pp", "2"], capsys)
    assert code == 2 and "fewer than the 4 GPUs" in err
    code, out, err = fit([*base, "--gpus", "1", "-pp", "8"], capsys)
    assert code == 2 and "fewer than the 8 GPUs" in err


def test_quantization_of_a_published_variant_and_of_a_given_size(capsys):
    code, out, err = fit(["--model", "gemma-4-26b-a4b", "--card", "rtx3090", "--max-ctx", "8192", "-q", "awq",
                          "--weights-variant", "awq"], capsys)
    assert code in (0, 1) and "the priced awq checkpoint's own method" in out
    # without the variant the model is its HF repository's bf16 checkpoint, which vLLM would quantise on load
    code, out, err = fit(["--model", "gemma-4-26b-a4b", "--card", "rtx3090", "--max-ctx", "8192", "-q", "awq"], capsys)
    assert code == 2 and "online quantisation" in err
    code, out, err = fit(["--model", "qwen3.6-27b", "--card", "rtx3090", "--max-ctx", "8192", "-q", "fp8",
                          "--weights-variant", "int4"], capsys)
    assert code == 2 and "valid here: auto-round" in err
    code, out, err = fit(["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--card", "rtx3090", "--max-model-len",
                          "8192", "-q", "fp8", "--weights-gb", "9"], capsys)
    assert code == 0 and "the weights are the given 9 GB" in out
    code, out, err = fit(["vllm", "serve", "openai/gpt-oss-20b", "--card", "rtx3090", "-q", "MXFP4"], capsys)
    assert code == 2  # vLLM's --quantization choices are lowercase


def test_a_repository_id_is_its_checkpoint_in_both_front_doors(capsys):
    code, a, _ = fit(["--model", "Qwen/Qwen3.6-27B", "--card", "rtx3090", "--max-ctx", "8192", "--json"], capsys)
    code, b, _ = fit(["vllm", "serve", "Qwen/Qwen3.6-27B", "--card", "rtx3090", "--max-model-len", "8192", "--json"],
                     capsys)
    assert json.loads(a)["weights_bytes"] == json.loads(b)["weights_bytes"]


def test_a_pipeline_stage_needs_a_layer(capsys):
    code, out, err = fit(["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--card", "a100", "--max-model-len",
                          "8192", "-pp", "2", "--layer-partition", "32,0"], capsys)
    assert code == 2 and "at least one decoder layer" in err


def test_bf16_of_an_unquantised_repository_is_its_own_checkpoint(capsys):
    # a regression caught on reading the change: the early variant check refused --weights-variant bf16 for
    # qwen3.6-27b (no published bf16 size) although its HF checkpoint is bf16, which budget() prices as hf
    _, a, _ = fit(["--model", "qwen3.6-27b", "--weights-variant", "bf16", "--card", "h100", "--json"], capsys)
    _, b, _ = fit(["--model", "qwen3.6-27b", "--weights-variant", "hf", "--card", "h100", "--json"], capsys)
    assert json.loads(a)["weights_bytes"] == json.loads(b)["weights_bytes"]


def test_a_card_without_bfloat16_runs_a_dense_model_in_float16(capsys):
    """A fresh user's finding: every model on a V100 / P100 was refused with gpt-oss's 'no MXFP4 MoE kernel'
    message. vLLM 0.24.0 platforms/cuda.py supported_dtypes: below sm_80 [float16, float32]; config/model.py
    _resolve_auto_dtype falls back to float16 for a bfloat16 checkpoint ('Falling back to ... for compatibility')."""
    code, out, err = fit(["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--card", "v100-32",
                          "--max-model-len", "8192", "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and "MXFP4" not in out + err
    assert d["kv_format"] == "fp16" and any("has no bfloat16" in n for n in d["notes"])
    # 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B: float16's bytes are bfloat16's
    assert d["kv_per_request_bytes"] == 8192 * 32 * 8 * 128 * 2 * 2
    code, _, err = fit(["vllm", "serve", "openai/gpt-oss-20b", "--card", "v100-32"], capsys)
    assert code == 2 and "no MXFP4 MoE kernel for sm_70" in err


def test_kv_cache_dtype_fp8_is_named_as_e4m3(capsys):
    # vllm/config/cache.py CacheDType (0.20.0-0.24.0): "fp8" is the e4m3 format; a fresh user saw it renamed silently
    code, out, _ = fit(["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--card", "h100", "--max-model-len",
                        "8192", "--kv-cache-dtype", "fp8", "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["kv_format"] == "fp8_e4m3" and any("fp8 is vLLM's fp8_e4m3" in n for n in d["notes"])
    # 32 layers x 8 KV heads x 128 x 2 (K, V) x 1 B per token
    assert d["kv_per_request_bytes"] == 8192 * 32 * 8 * 128 * 2


def test_explicit_bfloat16_below_sm80_is_refused_as_vllm_refuses_it(capsys):
    """vllm/platforms/cuda.py ``check_if_supports_dtype`` raises "Bfloat16 is only supported on GPUs with compute
    capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. ... --dtype=half." (quoted in public
    T4 threads); --dtype half and auto run the same line."""
    from kvmath.fit import run

    line = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--card", "t4", "--max-model-len", "4096"]
    assert run([*line, "--dtype", "bfloat16"]) == 2
    err = capsys.readouterr().err
    assert "compute capability of at least 8.0" in err and "--dtype half" in err and err.count("\n") == 1
    for dtype in ("half", "auto"):
        assert run([*line, "--dtype", dtype]) in (0, 1)
        assert "Verdict" in capsys.readouterr().out
    assert run([*line[:4], "a100", *line[5:], "--dtype", "bfloat16"]) == 0
