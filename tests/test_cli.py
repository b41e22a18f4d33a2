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
    assert "llama.cpp ec98e2002" in r.stdout
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
