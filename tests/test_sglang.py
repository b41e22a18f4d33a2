"""The SGLang engine's front doors: the cache CLI (``kvmath --engine sglang``), ``kvmath-fit`` on SGLang launch
lines, the release table, and bad input (one line, exit 2). Expected figures are derived by hand in each test
from SGLang's rules as read in the wheels (kvmath/engines/sglang/releases.py cites the lines)."""

from __future__ import annotations

import json

import pytest

import kvmath
from kvmath.cli import run as cache_run
from kvmath.engines import get_engine
from kvmath.engines.sglang.releases import TABLE
from kvmath.fit import run as fit_run

SGL = ["python", "-m", "sglang.launch_server"]


def _fit(capsys, *argv):
    rc = fit_run(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_cache_cli_prints_the_pool_line(capsys):
    # Llama-3.1-8B at 0.5.9: cell = 8 heads x (128 + 128) x 32 layers x 2 B = 131,072 B; 20 GiB -> 163,840 tokens;
    # K = (163,840 + 1 page row) x 8 x 128 x 2 B x 32 layers = 10.0002 GiB -> "10.00 GB"
    rc = cache_run(["--config", "llama-3.1-8b", "--engine", "sglang", "--context-length", "8192",
                    "--kv-cache-memory-bytes", "20GiB", "--sglang-version", "0.5.9", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["sglang_pools"]["log_lines"] == [
        "KV Cache is allocated. #tokens: 163840, K size: 10.00 GB, V size: 10.00 GB"]
    assert out["sglang_pools"]["k_bytes"] == 163841 * 8 * 128 * 2 * 32


def test_cache_cli_state_pool_line(capsys):
    # Qwen3-Next-80B at TP4, 0.5.9, 6 GiB: per request and GDN layer conv (8192 + 2*16*128)/4 x 3 x 2 B = 18,432 B... the
    # figures are checked against SGLang's own code in test_sglang_oracle; here the line's form and order
    rc = cache_run(["--config", "qwen3-next-80b-a3b", "--engine", "sglang", "--tp-size", "4", "--context-length", "8192",
                    "--kv-cache-memory-bytes", "6GiB", "--sglang-version", "0.5.9", "--json"])
    lines = json.loads(capsys.readouterr().out)["sglang_pools"]["log_lines"]
    assert rc == 0
    assert lines[0].startswith("Mamba Cache is allocated. max_mamba_cache_size: ") and lines[0].endswith("GB ")
    assert lines[1].startswith("KV Cache is allocated. #tokens: ")


def test_derive_without_memory_holds_the_requests():
    # 2 requests x 4096 tokens of Llama-3.1-8B: 8192 tokens + 1 padded row, K + V = 8193 x 131,072 B
    d = kvmath.derive("llama-3.1-8b", engine="sglang", max_ctx=4096, max_num_seqs=2, sglang_version="0.5.9")
    assert d.total_bytes == 8193 * 131072


def test_fit_h100_llama70b_tp2(capsys):
    rc, out, _ = _fit(capsys, *SGL, "--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp", "2",
                      "--mem-fraction-static", "0.85", "--context-length", "32768", "--card", "h100",
                      "--sglang-version", "0.5.9", "--json")
    v = json.loads(out)
    assert rc == 0 and v["outcome"] == "boots" and v["engine"] == "sglang"
    assert v["answers"]["largest_context"] == 131072  # the pool does not depend on the context; the model's limit
    f = v["engine_detail"]["smallest_mem_fraction_static"]
    assert 0 < f < 0.85
    # at that fraction the pool gets tokens, 0.001 below it SGLang refuses
    rc2, out2, _ = _fit(capsys, *SGL, "--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp", "2",
                        "--mem-fraction-static", f"{f - 0.001:.3f}", "--context-length", "32768", "--card", "h100",
                        "--sglang-version", "0.5.9", "--json", "--no-solve")
    assert rc2 == 1
    assert json.loads(out2)["message"].startswith("Not enough memory. Please try to increase --mem-fraction-static. "
                                                  "Current value: self.server_args.mem_fraction_static=")


def test_fit_0523_refusal_names_the_minimum(capsys):
    rc, out, _ = _fit(capsys, *SGL, "--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp", "2",
                      "--mem-fraction-static", "0.5", "--card", "h100", "--json", "--no-solve")
    v = json.loads(out)
    assert rc == 1 and v["outcome"] == "refused"
    assert v["message"].startswith("Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5.")


def test_sglang_serve_and_default_fraction_059(capsys):
    # 0.5.9 on an H100 (G = 81,009 MiB as kvmath reads it): chunked 8192, cuda_graph_max_bs 256 (TP1);
    # reserve = 512 + 1.5 x 8192 + 2 x 256 + 1024 / 8 = 13,440 MiB (> 10 GiB); f = round((81009 - 13440) / 81009, 3)
    rc, out, _ = _fit(capsys, "sglang", "serve", "--model-path", "llama-3.1-8b", "--card", "h100",
                      "--sglang-version", "0.5.9", "--json", "--no-solve")
    v = json.loads(out)
    G = 79.11 * 1024
    assert v["engine_detail"]["mem_fraction_static"] == round((G - 13440) / G, 3)


@pytest.mark.parametrize("argv,words", [
    ([*SGL, "--model-path", "llama-3.1-8b", "--max-model-len", "4096", "--card", "h100"], "vLLM flag"),
    ([*SGL, "--model-path", "llama-3.1-8b", "-ngl", "99", "--card", "h100"], "llama.cpp flag"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--sglang-version", "0.3.0", "--card", "h100"], "older than the oldest"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--sglang-version", "latest", "--card", "h100"], "--sglang-version"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--mem-fraction-static", "0", "--card", "h100"], "(0, 1)"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--mem-fraction-static", "1", "--card", "h100"], "(0, 1)"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--mem-fraction-static", "nan", "--card", "h100"], "(0, 1)"),
    ([*SGL, "--model-path", "gemma-4-31b", "--mem-fraction-static", "0.8", "--card", "h100"], "Gemma 4"),
    ([*SGL, "--model-path", "qwen3-32b", "--sglang-version", "0.4.3", "--card", "h100"], "no model class"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--cpu-offload-gb", "4", "--card", "h100"], "--cpu-offload-gb"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--speculative-algorithm", "EAGLE", "--card", "h100"], "draft"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--mem-fraction-static", "0.8"], "name the card"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--mem-fraction-static", "0.8", "--card", "nope"], "unknown card"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--no-such-flag", "--card", "h100"], "not an SGLang"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--kv-cache-dtype", "q8_0", "--mem-fraction-static", "0.8",
      "--card", "h100"], "--kv-cache-dtype"),
    ([*SGL, "--card", "h100"], "needs the model"),
    # a fresh user's findings: argparse would keep the last of a repeated flag silently; 0 tokens of context
    ([*SGL, "--model-path", "llama-3.1-8b", "--mem-fraction-static", "0.85", "--mem-fraction-static", "0.9",
      "--card", "h100"], "given twice with different values"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--model-path", "qwen3-32b", "--card", "h100"], "model is given twice"),
    ([*SGL, "--model-path", "llama-3.1-8b", "--context-length", "0", "--card", "h100"], "must be a positive"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, words):
    rc, out, err = _fit(capsys, *argv)
    assert rc == 2, (out, err)
    assert words in err and err.count("\n") == 1


def test_ignored_flag_is_noted(capsys):
    rc, out, _ = _fit(capsys, *SGL, "--model-path", "llama-3.1-8b", "--host", "0.0.0.0", "--tp", "1",
                      "--mem-fraction-static", "0.8", "--card", "h100", "--json", "--no-solve")
    assert rc == 0 and "--host ignored: it does not change memory" in json.loads(out)["notes"]


def test_abbreviated_flags_resolve_as_argparse_does():
    # --tp abbreviates --tp-size (SGLang's parser has allow_abbrev); --model abbreviates --model-path in 0.4.3
    launch = get_engine("sglang").parse_launch(["--model", "llama-3.1-8b", "--tp", "2", "--sglang-version", "0.4.3"])
    assert launch.model == "llama-3.1-8b" and launch.settings["tp_size"] == 2


def test_release_table():
    assert TABLE.oldest.name == "0.4.3" and TABLE.newest.name == "0.5.23"
    assert TABLE.choose("0.5.7").release.name == "0.5.6"
    assert TABLE.choose("0.4.3.post2").release.name == "0.4.3"
    assert TABLE.choose("0.4.3.post4").release.name == "0.4.3.post4"
    with pytest.raises(kvmath.KvMathError, match="newer than the newest SGLang release read"):  # issue 25: refused
        TABLE.choose("0.6.0")
    # every record cites the wheel it was read from
    assert all(r.source.startswith(f"sglang {r.name} wheel") for r in TABLE.releases)


def test_cache_cli_foreign_flag_and_bad_fraction():
    assert cache_run(["--config", "llama-3.1-8b", "--engine", "sglang", "--block-size", "16"]) == 2
    assert cache_run(["--config", "llama-3.1-8b", "--engine", "sglang", "--mem-fraction-static", "-1"]) == 2
    assert cache_run(["--config", "llama-3.1-8b", "--engine", "sglang", "--sglang-version", "9.9.9x"]) == 2


def test_book_table_same_memory():
    """The book's SGLang table: Llama-3.1-8B (131,072 B per token in every engine at bf16/f16) holds 8 GiB / 128 KiB
    = 65,536 tokens in SGLang's pool, 4,096 vLLM blocks of 16 and 65,536 llama.cpp cells."""
    from kvmath.book.sglang_section import sglang_table

    row = sglang_table("llama-3.1-8b", memories_gib=(8,), sglang_version="0.5.9")[0]
    assert (row["sglang_tokens"], row["vllm_blocks"], row["vllm_block_size"], row["llamacpp_cells"]) == (65536, 4096, 16, 65536)


def test_the_release_note_is_said_once(capsys):
    rc, out, _ = _fit(capsys, *SGL, "--model-path", "llama-3.1-8b", "--mem-fraction-static", "0.8", "--card", "h100",
                      "--json", "--no-solve")
    notes = json.loads(out)["notes"]
    assert rc == 0 and sum("--sglang-version not given" in n for n in notes) == 1


def test_the_full_request_fraction_is_the_boundary_of_the_pool_holding_the_context(capsys):
    """A fresh user's finding: at the smallest fraction that starts, the pool held 130 tokens while the answer said
    'Largest context: 40960'. The second answer is the fraction at which one request of the whole context fits."""
    line = [*SGL, "--model-path", "llama-3.1-8b", "--card", "h100", "--context-length", "40960"]
    rc, out, _ = _fit(capsys, *line, "--mem-fraction-static", "0.8", "--json", "--no-solve")
    f = json.loads(out)["engine_detail"]["smallest_mem_fraction_static_full_request"]
    assert f is not None
    pools = {}
    for x in (f, round(f - 0.001, 3)):
        rc, out, _ = _fit(capsys, *line, "--mem-fraction-static", str(x), "--json", "--no-solve")
        pools[x] = json.loads(out)["pool_tokens"] or 0
    assert pools[f] >= 40960 > pools[round(f - 0.001, 3)]


def test_0523_flag_list_is_the_wheels_parser():
    """data/sglang-flags.json's 0.5.23 list against a scan of the 0.5.23 wheel's own source (its dataclass fields and
    server_args.py's add_argument calls: tests/fixtures/sglang/flags0523.py). It used to be 0.5.9's list."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "sglang"))
    import flags0523
    import loader

    wheel = loader.wheel_path("0.5.23")
    if wheel is None:
        pytest.skip("SGLang 0.5.23's wheel is not downloaded (make sglang-wheels)")
    from kvmath.engines.sglang.launch import release_flags

    assert list(release_flags("0.5.23")) == flags0523.options(wheel)


@pytest.mark.parametrize("flag, v0523, v059", [
    # new in 0.5.23 (arg_groups/fields/memory.py): refused for what it does, not as unknown
    ("--enable-unified-memory", "unified KV pools are not modelled", "is not an SGLang 0.5.9 flag"),
    # gone in 0.5.23: its parser rejects it
    ("--stream-output", "is not an SGLang 0.5.23 flag", "kvmath has not classified"),
    ("--enable-piecewise-cuda-graph", "is not an SGLang 0.5.23 flag", "changes the default fraction"),
    ("--attn-dp-size=2", "kvmath has not classified", "is not an SGLang 0.5.9 flag"),
])
def test_each_release_checks_its_own_flags(capsys, flag, v0523, v059):
    for release, expected in (("0.5.23", v0523), ("0.5.9", v059)):
        code, out, err = _fit(capsys, "python", "-m", "sglang.launch_server", "--model-path", "llama-3.1-8b",
                              "--card", "h100", "--sglang-version", release, flag)
        assert code == 2 and expected in err and err.count("\n") <= 1, (release, err)


@pytest.mark.parametrize("release", ["0.5.9", "0.5.23"])
def test_aiter_is_refused_even_with_an_explicit_fraction(capsys, release):
    """aiter is SGLang's ROCm attention backend; 0.5.23 multiplies even an explicit --mem-fraction-static by 0.85
    with it when context_len > 8192 (arg_groups/attention_hook.py l.244-269). kvmath prices SGLang on CUDA only:
    it used to price the explicit fraction as given."""
    code, out, err = _fit(capsys, "python", "-m", "sglang.launch_server", "--model-path", "llama-3.1-8b", "--card",
                          "h100", "--sglang-version", release, "--attention-backend", "aiter",
                          "--mem-fraction-static", "0.8")
    assert code == 2 and "ROCm" in err and not out
