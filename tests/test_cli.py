"""The kvmath command line: text, JSON in bytes, one-line errors with exit status 2."""

import json
import subprocess
import sys

import pytest

import kvmath


def run(*args):
    return subprocess.run([sys.executable, "-m", "kvmath.cli", *args], capture_output=True, text=True)


def test_json_carries_the_same_figures_as_the_api():
    r = run("--config", "qwen3.6-27b", "--kv-format", "fp8_e5m2", "--tp", "2", "--max-ctx", "262144",
            "--max-num-seqs", "2", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    d = kvmath.derive("qwen3.6-27b", kv_format="fp8_e5m2", tp=2, max_ctx=262144, max_num_seqs=2)
    assert out["totals"] == d.to_dict()["totals"]
    assert out["totals"]["bytes_per_token"] == 16 * 2 * 256 * 2  # hand derivation, see test_engines
    assert out["engine_version"].startswith("vLLM")
    assert all(isinstance(v, int) for v in out["totals"].values())


def test_text_names_units_and_engine():
    r = run("--config", "gemma-4-26b-a4b", "--engine", "llama.cpp", "-ctk", "q8_0", "-ctv", "q4_0",
            "--max-ctx", "262144")
    assert r.returncode == 0, r.stderr
    assert "llama.cpp 0c1e570" in r.stdout
    assert "GiB" in r.stdout and "per token" in r.stdout
    assert "sliding_attention" in r.stdout and "full_attention" in r.stdout


@pytest.mark.parametrize("args,match", [
    (["--config", "nope"], "unknown model 'nope'"),
    (["--config", "qwen3.6-35b-a3b", "--tp", "3"], "valid TP"),
    (["--config", "gemma-4-31b", "--kv-format", "q4_0"], "llama.cpp cache type"),
    (["--config", "gemma-4-31b", "--kv-format", "int3"], "valid: bf16"),
    (["--config", "gemma-4-31b", "--max-ctx", "-1"], "positive integer"),
    (["--config", "gemma-4-31b", "--max-num-seqs", "0"], "positive integer"),
    (["--config", "gemma-4-31b", "--tp", "two"], "invalid int value"),
    (["--config", "gemma-4-31b", "--engine", "llama.cpp", "--tp", "2"], "tp must be 1"),
    (["--config", "/nonexistent/config.json"], "no such config.json"),
    ([], "required: --config"),
])
def test_bad_input_is_one_line_and_exit_2(args, match):
    r = run(*args)
    assert r.returncode == 2
    assert match in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_malformed_config_file(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama", "num_hidden_layers": 2')
    r = run("--config", str(p))
    assert r.returncode == 2 and "not valid JSON" in r.stderr


def test_cli_does_not_import_heavy_modules():
    code = ("import sys, kvmath.cli; kvmath.cli.main(['--config', 'gemma-4-31b', '--json']); "
            "heavy = {'pandas', 'altair', 'ipywidgets', 'numpy', 'torch'} & set(sys.modules); "
            "sys.stderr.write(repr(sorted(heavy)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stderr.strip() == "[]"


def test_pasted_vllm_flags_reproduce_a_logged_boot():
    # measurements/club3090-boot-facts.csv row F01 (Qwen 3.6 27B, 2x RTX 3090, vLLM 0.24-era build):
    # logged "Available KV cache memory" 11.10 GiB, "GPU KV cache size: 605495 tokens", concurrency 2.31x
    # at max_model_len 262144, int8_per_token_head, TP 2, MTP drafter (n=4), batched tokens 8192.
    r = run("--config", "qwen3.6-27b", "--engine", "vllm", "--max-model-len", "262144", "--max-num-seqs", "2",
            "--tensor-parallel-size", "2", "--kv-cache-dtype", "int8_per_token_head",
            "--max-num-batched-tokens", "8192", "--num-speculative-tokens", "4",
            "--kv-cache-memory-bytes", "11.10GiB", "--json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)["vllm_plan"]
    assert abs(plan["gpu_kv_cache_tokens"] - 605495) / 605495 < 0.01
    assert round(plan["max_concurrency"], 2) == pytest.approx(2.31, abs=0.01)


def test_pasted_llamacpp_flags_print_its_log_lines():
    r = run("--config", "gemma-4-26b-a4b", "--engine", "llama.cpp", "-c", "262144", "-np", "1",
            "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on")
    assert r.returncode == 0, r.stderr
    # llama-kv-cache-iswa.cpp: SWA cells = GGML_PAD(min(262144, 1024 + 512), 256) = 1536
    assert "creating     SWA KV cache, size = 1536 cells" in r.stdout
    assert "262144 cells,   5 layers" in r.stdout


def test_quantised_v_without_flash_attention_is_refused():
    r = run("--config", "gemma-4-26b-a4b", "--engine", "llama.cpp", "-c", "8192", "-ctv", "q4_0", "-fa", "off")
    assert r.returncode == 2 and "flash_attn" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("value", ["lots", "-3GiB", "0"])
def test_bad_memory_size(value):
    r = run("--config", "qwen3.6-27b", "--kv-cache-memory-bytes", value)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args,match", [
    (["--engine", "vllm", "-c", "8192"], "llama.cpp flag"),
    (["--engine", "llama.cpp", "--max-ctx", "1000", "-c", "8192"], "not both"),
    (["--engine", "llama.cpp", "--kv-cache-memory-bytes", "1GiB"], "vLLM flag"),
    (["--block-size", "7"], "BlockSize"),
    (["--gpu-memory-utilization", "1.5"], "(0, 1]"),
    (["--gpu-memory-utilization", "nan"], "(0, 1]"),
    (["--kv-format", " "], "empty"),
])
def test_contradictory_or_foreign_flags(args, match):
    r = run("--config", "qwen3.6-27b", *args)
    assert r.returncode == 2 and match in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_vllm_integer_flags_take_vllms_suffixes():
    # vllm/engine/arg_utils.py human_readable_int (0.20-0.26): lowercase suffixes are decimal, uppercase
    # binary and integer-only; a log figure with its unit (11.10GiB) is kvmath's own addition
    from kvmath.engines.vllm import _bytes_arg, human_readable_int

    assert human_readable_int("8k") == 8000 and human_readable_int("25.6k") == 25600
    assert human_readable_int("16K") == 16384 and human_readable_int("8192") == 8192
    assert _bytes_arg("12G") == 12 * 2**30 and _bytes_arg("12g") == 12 * 10**9
    assert _bytes_arg("11.10GiB") == int(11.10 * 2**30)
    import argparse
    for bad in ("12.5G", "1e9", "-5", "0"):
        with pytest.raises(argparse.ArgumentTypeError):
            _bytes_arg(bad)


def test_both_commands_agree_on_gemma4_int8_page_padding():
    # kvmath-fit prices Gemma 4 31B int8_per_token_head with vLLM PR #40391's padding (the club-3090 builds);
    # kvmath gives the same need with --gemma4-pth-page-padding, and the released rule without it
    import json
    import subprocess
    import sys

    fit = json.loads(subprocess.run(
        [sys.executable, "-m", "kvmath.engines.vllm.cli", "--model", "gemma-4-31b", "--tp", "2", "--kv-format",
         "int8_per_token_head", "--max-ctx", "262144", "--anchor-defaults", "--json"], capture_output=True, text=True, check=True).stdout)
    base = [sys.executable, "-m", "kvmath.cli", "--config", "gemma-4-31b", "--tp", "2", "--kv-cache-dtype",
            "int8_per_token_head", "--max-model-len", "262144", "--json"]
    padded = json.loads(subprocess.run(base + ["--gemma4-pth-page-padding"], capture_output=True, text=True,
                                       check=True).stdout)
    released = json.loads(subprocess.run(base, capture_output=True, text=True, check=True).stdout)
    assert padded["totals"]["total_bytes"] == fit["kv_per_request_bytes"]
    assert released["totals"]["total_bytes"] > padded["totals"]["total_bytes"]
