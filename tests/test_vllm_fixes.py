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
    # the case: "the limit is max_num_seqs (794 would boot)", not "the non-KV terms exceed the budget"
    code, out, _ = fit([*QWEN_H100, "--max-num-seqs", "1024"], capsys)
    line = next(x for x in out.splitlines() if x.startswith("Largest max_model_len"))
    assert "non-KV" not in line and "the limit is max_num_seqs" in line and "at most 794" in line
    code, out, _ = fit([*QWEN_H100, "--max-num-seqs", "794"], capsys)
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


@pytest.mark.parametrize("flag", ["--async-scheduling", "--enable-reasoning"])
def test_serving_flags_of_real_lines_are_ignored_with_a_note(flag, capsys):
    code, out, err = fit([*SERVE, flag], capsys)
    assert code == 0 and err == "" and f"ignored (they do not change memory): {flag}" in out


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


@pytest.mark.parametrize("dtype,why", [("float32", "not modelled"), ("int8", "not one vLLM takes")])
def test_dtype_refused_in_one_line(dtype, why, capsys):
    code, out, err = fit([*SERVE, "--dtype", dtype], capsys)
    assert code == 2 and why in err and err.count("\n") == 1 and "Traceback" not in err
