"""The calculator in the page, as a reader uses it: kvmath in headless Chromium through Pyodide, offline.

A minimal site (one page with a model chapter's panel and the paste panel, plus the calculator's assets:
Pyodide from tools/book_assets.py and kvmath's wheel built from this checkout; tools/bench_page.py's
``build_site``) is served on 127.0.0.1 and opened in Debian's Chromium at 1280 and 390 px, with every
request to another host refused and counted.

* ``test_queries``: 37 command lines across both front doors and the three engines, good and bad input
  (unknown model, engine, card, format, flag, a TP the heads cannot take, a missing file, a refused
  vLLM flag, an unknown Hub id, ``--help``, an unknown program, an environment variable), each run by
  ``window.kvmathQuery`` in the page, give exactly the stdout, stderr and exit code of the native
  command, run here in-process by ``kvmath.pagecalc.run`` on the test's own Python.
* ``test_run_is_the_console_script``: ``pagecalc.run`` prints what the installed console script prints
  (the ``kvmath`` / ``kvmath-fit`` wrapper pip writes, run as a subprocess with its output piped).
* ``test_panel_answers`` / ``test_paste_answers``: the forms, submitted, show a progress indicator on
  first use, then the answer of the command they show, which is the native command's output; nothing of
  the calculator is fetched before the first question; no page error; no horizontal scroll at 390 px.
* Every model chapter's panel of the built book, its defaults natively and in the page, and the book's paste
  page: tests/test_pagecalc_book.py.
* ``test_programs_are_the_console_scripts``, ``test_ggml_cache_blocks``: the page's program table is
  pyproject.toml's ``[project.scripts]``; the llama.cpp cache types' block sizes kvmath keeps (so the
  config path needs no gguf) are gguf's ``GGML_QUANT_SIZES``.
* ``test_pyodide_pin_is_one_version_checked_by_its_integrity``, ``test_site_ships_only_the_runtime_and_its_notices``:
  one Pyodide version everywhere, a tarball that does not match its npm integrity refused; the site holds
  the five runtime files, the notice, the licence texts and the wheel, nothing else.
* ``test_derive_stays_the_function_after_its_module_is_imported``: ``kvmath.derive`` is callable after
  ``import kvmath.derive`` (the page runs the command lines in one interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from kvmath import pagecalc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import bench_page  # noqa: E402  (tools/bench_page.py: build_site, serve, offline_page)

WIDTHS = (1280, 390)
ANSWER_TIMEOUT_MS = 180_000  # Pyodide's first boot on a loaded 2-core machine

QUERIES = [
 ["kvmath", "--config", "qwen3.6-27b", "--kv-format", "fp8_e5m2", "--tp", "2", "--max-ctx", "262144", "--max-num-seqs", "2"],
 ["kvmath", "--config", "qwen3.6-27b", "--kv-format", "fp8_e5m2", "--tp", "2", "--max-ctx", "262144", "--json"],
 ["kvmath", "--config", "gemma-4-31b", "--engine", "vllm", "--kv-format", "bf16", "--tp", "2", "--max-ctx", "131072"],
 ["kvmath", "--config", "qwen3.6-27b", "--engine", "transformers", "--max-ctx", "8192"],
 ["kvmath", "--config", "gemma-4-26b-a4b", "--engine", "transformers", "--kv-format", "fp16", "--max-ctx", "32768", "--json"],
 ["kvmath", "--config", "qwen3.6-27b", "--max-model-len", "262144", "--max-num-seqs", "2", "--tensor-parallel-size", "2",
  "--kv-cache-dtype", "int8_per_token_head", "--num-speculative-tokens", "4", "--max-num-batched-tokens", "8192",
  "--kv-cache-memory-bytes", "11.10GiB"],
 ["kvmath", "--config", "llama-3.1-8b", "--max-ctx", "32k"],
 ["kvmath", "--config", "deepseek-v3", "--tp", "8", "--max-ctx", "163840"],
 ["kvmath", "--config", "gemma-4-26b-a4b", "--engine", "llama.cpp", "-c", "262144", "-np", "1", "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on"],
 ["kvmath", "--config", "qwen3.6-27b", "--engine", "llama.cpp", "-c", "8192", "-np", "1", "-ctk", "q8_0", "-ctv", "q8_0", "--card", "rtx3090", "--json"],
 ["kvmath", "--config", "no-such-model"],
 ["kvmath", "--config", "qwen3.6-27b", "--engine", "foo"],
 ["kvmath", "--config", "qwen3.6-27b", "--tp", "3"],
 ["kvmath", "--config", "qwen3.6-27b", "--bogus"],
 ["kvmath", "--config", "qwen3.6-27b", "--max-ctx", "-5"],
 ["kvmath", "--config", "/nonexistent/config.json"],
 ["kvmath", "--help"],
 ["kvmath-fit", "--compose", "long-text"],
 ["kvmath-fit", "--compose", "dual", "--json"],
 ["kvmath-fit", "--model", "gemma-4-31b", "--tp", "2", "--kv-format", "int8_per_token_head", "--solve-max-ctx",
  "--anchor-defaults"],
 ["kvmath-fit", "vllm", "serve", "Qwen/Qwen3.6-27B", "--tensor-parallel-size", "2", "--max-model-len", "auto", "--kv-cache-dtype", "fp8_e5m2",
  "--card", "h100"],
 ["kvmath-fit", "--model", "qwen3.6-27b", "--card", "rtx3090", "--max-ctx", "262144", "--kv-format", "bf16"],
 ["kvmath-fit", "--model", "qwen3.6-27b", "--pipeline-parallel-size", "2", "--card", "rtx3090"],
 ["kvmath-fit", "--model", "llama-3.1-8b", "--card", "h100", "--max-ctx", "131072", "--max-num-seqs", "64", "--json"],
 ["kvmath-fit", "--model", "nope"],
 ["kvmath-fit", "--kv-format", "nope", "--model", "qwen3.6-27b", "--card", "rtx3090"],
 ["kvmath-fit", "--model", "qwen3.6-27b"],
 ["kvmath-fit", "--model"],
 ["kvmath-fit", "--model", "qwen3.6-27b", "--card", "nope"],
 ["kvmath-fit", "vllm", "serve", "Qwen/Qwen3.6-27B", "--quantization", "awq", "--card", "rtx3090"],
 ["kvmath-fit", "vllm", "serve", "someorg/unknown-model-7b", "--tensor-parallel-size", "2"],
 ["kvmath-fit", "--help"],
 ["kvmath-nope", "--help"],
]

# (argv, env): environment variables for one call, as `VAR=1 kvmath-fit ...` in a shell
# through the front door's engine routing (kvmath.fit): llama-server lines, and a line of no engine kvmath has
QUERIES += [
    ["kvmath-fit", "llama-server", "-m", "qwen3.6-27b", "-c", "32768", "-np", "1", "-ctk", "q8_0", "-ctv", "q8_0",
     "--card", "rtx3090", "--json"],
    ["kvmath-fit", "llama-server", "-m", "gemma-4-26b-a4b", "-c", "262144", "--card", "rtx4090"],
    ["kvmath-fit", "llama-server", "-m", "qwen3.6-27b", "-c", "banana"],
    ["kvmath-fit", "python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--card", "h100"],
]
CASES = [(q, None) for q in QUERIES] + [
    (["kvmath-fit", "--model", "qwen3.6-27b", "--max-ctx", "300000", "--card", "h100", "--json"],
     {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}),
]


@pytest.fixture(scope="module")
def native():
    """The native answers: kvmath.pagecalc.run in this process (the test's Python), one per case."""
    return [pagecalc.run(argv, env) for argv, env in CASES]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pagecalc") / "site"
    bench_page.build_site(folder)
    return folder


@pytest.fixture(scope="module")
def base(site):
    with bench_page.serve(site) as url:
        yield url


@pytest.fixture
def offline(browser, base):
    opened = []

    def open_page(width):
        context, page, log = bench_page.offline_page(browser, width)
        page.set_default_timeout(ANSWER_TIMEOUT_MS)
        page.goto(base + "/index.html")
        page.wait_for_load_state("load")
        opened.append(context)
        return page, log

    yield open_page
    for c in opened:
        c.close()


def _calculator_requests(log):
    return [r for r in log["responses"] if "/_static/pyodide/" in r[0]]


def test_programs_are_the_console_scripts():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert pagecalc.PROGRAMS == scripts


def test_ggml_cache_blocks():
    gguf = pytest.importorskip("gguf")
    from kvmath.engines.llamacpp.formats import GGML_CACHE_BLOCKS, LLAMACPP_CACHE_TYPES

    assert set(GGML_CACHE_BLOCKS) == set(LLAMACPP_CACHE_TYPES)
    for name, blocks in GGML_CACHE_BLOCKS.items():
        assert tuple(gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name.upper()]]) == blocks, name


def test_ggml_type_blocks_are_ggufs():
    gguf = pytest.importorskip("gguf")
    from kvmath.engines.llamacpp.formats import GGML_TYPE_BLOCKS

    theirs = {t.name: tuple(gguf.GGML_QUANT_SIZES[t]) for t in gguf.GGMLQuantizationType if t in gguf.GGML_QUANT_SIZES}
    assert GGML_TYPE_BLOCKS == theirs


def test_native_cases_cover_good_and_bad(native):
    codes = [r["exit_code"] for r in native]
    assert len(CASES) >= 30
    assert codes.count(0) >= 10 and codes.count(2) >= 10 and 1 in codes, codes
    # bad input is one line (the llama-server front door, kvmath.engines.llamacpp.fit, still prints argparse's
    # usage block before its error line: not this page's to fix; the page prints the same)
    one_line = [r["stderr"].count("\n") == 1 for (argv, _), r in zip(CASES, native)
                if r["exit_code"] == 2 and argv[1:2] != ["llama-server"]]
    assert len(one_line) >= 10 and all(one_line), "bad input is one line"
    # the environment variable changes the answer (so the page must pass it through)
    with_env = native[-1]
    without = pagecalc.run(CASES[-1][0])
    assert with_env["stdout"] != without["stdout"] or with_env["exit_code"] != without["exit_code"]


@pytest.mark.parametrize("argv", [QUERIES[0], QUERIES[9], QUERIES[13], QUERIES[16], QUERIES[20], QUERIES[27]],
                         ids=lambda a: " ".join(a)[:40])
def test_run_is_the_console_script(argv, tmp_path):
    """The wrapper pip writes for [project.scripts] (sys.exit(main())), under the program's name."""
    module, func = pagecalc.PROGRAMS[argv[0]].split(":")
    script = tmp_path / argv[0]
    script.write_text(f"import sys\nfrom {module} import {func}\nsys.exit({func}())\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    r = subprocess.run([sys.executable, str(script), *argv[1:]], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
    mine = pagecalc.run(argv)
    assert (r.stdout, r.stderr, r.returncode) == (mine["stdout"], mine["stderr"], mine["exit_code"])


def test_nothing_loaded_before_first_use(offline):
    page, log = offline(1280)
    page.wait_for_timeout(500)
    assert _calculator_requests(log) == []
    assert page.evaluate("typeof window.kvmathQuery") == "function"
    assert page.evaluate("typeof window.loadPyodide") == "undefined"


@pytest.mark.parametrize("width", WIDTHS)
def test_queries(offline, native, width):
    page, log = offline(width)
    got = page.evaluate("""async (cases) => {
      const out = [];
      for (const [argv, env] of cases) out.push(await window.kvmathQuery(argv, env || undefined));
      return out;
    }""", [[a, e] for a, e in CASES])
    assert len(got) == len(CASES) == len(native)
    bad = [(" ".join(argv), g, n) for (argv, _), g, n in zip(CASES, got, native) if g != n]
    assert not bad, "\n\n".join(f"{a}\n page:   {json.dumps(g)[:600]}\n native: {json.dumps(n)[:600]}" for a, g, n in bad[:4])
    assert log["external"] == [] and log["errors"] == [], (log["external"][:5], log["errors"][:5])
    assert not [r for r in log["responses"] if r[1] >= 400]


def _submit_and_read(page, section):
    panel = page.locator(f"#{section} .kvmath-calc")
    panel.locator("button[type=submit]").click()
    shown = page.evaluate(f"() => !document.querySelector('#{section} .kvmath-calc-progress').hidden || "
                          f"document.querySelector('#{section} .kvmath-calc-answer').dataset.state === 'done'")
    page.wait_for_function(f"() => ['done', 'error'].includes(document.querySelector('#{section} .kvmath-calc-answer').dataset.state)")
    answer = panel.locator(".kvmath-calc-answer")
    assert answer.get_attribute("data-state") == "done", answer.inner_text()
    runs = []
    for d in answer.locator("details.kvmath-raw").all():
        argv = json.loads(d.get_attribute("data-argv"))
        stdout = d.locator("pre.kvmath-stdout").text_content()
        runs.append((argv, stdout))
    verdict = answer.locator(".kvmath-verdict").first
    return shown, runs, verdict.get_attribute("data-outcome"), answer.inner_text()


def _no_sideways_scroll(page):
    sw, w = page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]")
    assert sw <= w + 1, f"page scrolls sideways: {sw} > {w}"


@pytest.mark.parametrize("width", WIDTHS)
def test_panel_answers(offline, width):
    page, log = offline(width)
    _no_sideways_scroll(page)
    assert _calculator_requests(log) == []
    form = page.locator("#model form")
    form.locator("select[name=card]").select_option("rtx3090")
    form.locator("input[name=ctx]").fill("65536")
    form.locator("input[name=seqs]").fill("2")
    form.locator("select[name=tp]").select_option("2")
    form.locator("select[name=kv_format]").select_option("fp8_e5m2")
    shown, runs, outcome, text = _submit_and_read(page, "model")
    assert shown, "no progress indicator on first use"
    # the chapter's checkpoint (club-3090's int4, data/deployments.json default_weights) is named on the line:
    # without it kvmath-fit, as vllm serve, would price the HF repository's bf16 checkpoint
    assert [a for a, _ in runs] == [
        ["kvmath-fit", "--model", "qwen3.6-27b", "--card", "rtx3090", "--tp", "2", "--kv-format", "fp8_e5m2",
         "--max-ctx", "65536", "--max-num-seqs", "2", "--weights-variant", "autoround_int4", "--json"],
        ["kvmath-fit", "--model", "qwen3.6-27b", "--card", "rtx3090", "--tp", "2", "--kv-format", "fp8_e5m2",
         "--max-ctx", "65536", "--max-num-seqs", "2", "--weights-variant", "autoround_int4", "--solve-max-ctx",
         "--json"],
    ]
    for argv, stdout in runs:
        assert stdout == pagecalc.run(argv)["stdout"]
    d, solved = (json.loads(pagecalc.run(a)["stdout"]) for a, _ in runs)
    assert outcome == d["outcome"]
    assert f"{d['pool_tokens']:,} tokens" in text
    assert f"{solved['largest_max_model_len']:,} tokens" in text
    for line in d["vllm_log"]:
        assert line in text
    # another engine through the front door: llama-server's verdict and --fit's lines
    form.locator("select[name=engine]").select_option("llama.cpp")
    form.locator("select[name=kv_format]").select_option("q8_0")
    _, runs, outcome, text = _submit_and_read(page, "model")
    (argv, stdout), = runs
    assert argv == ["kvmath-fit", "llama-server", "-m", "qwen3.6-27b", "-c", "65536", "-np", "2", "-ctk", "q8_0",
                    "-ctv", "q8_0", "--card", "rtx3090", "--json"]
    native = json.loads(pagecalc.run(argv)["stdout"])
    # the engine protocol's record (kvmath.engines.base.VERDICT_FIELDS): outcome, answers, log_lines
    assert stdout == pagecalc.run(argv)["stdout"] and outcome == native["outcome"]
    assert f"{native['answers']['largest_context']:,} tokens" in text
    assert native["log_lines"]
    for line in native["log_lines"]:
        assert line in text
    # transformers: the cache only, said so
    form.locator("select[name=engine]").select_option("transformers")
    _, runs, outcome, text = _submit_and_read(page, "model")
    (argv, stdout), = runs
    assert argv[:5] == ["kvmath", "--config", "qwen3.6-27b", "--engine", "transformers"]
    assert stdout == pagecalc.run(argv)["stdout"] and outcome == "cache"
    assert f"{json.loads(stdout)['totals']['total_bytes']:,} B" in text
    _no_sideways_scroll(page)
    assert log["external"] == [] and log["errors"] == [], (log["external"][:5], log["errors"][:5])


@pytest.mark.parametrize("width", WIDTHS)
def test_paste_answers(offline, width):
    page, log = offline(width)
    line = ("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve Qwen/Qwen3.6-27B \\\n  --tensor-parallel-size 2 --max-model-len 32k "
            "--card rtx3090")
    page.locator("#paste textarea[name=line]").fill(line)
    shown, runs, outcome, text = _submit_and_read(page, "paste")
    assert shown
    (argv, stdout), = runs
    assert argv == ["kvmath-fit", "vllm", "serve", "Qwen/Qwen3.6-27B", "--tensor-parallel-size", "2",
                    "--max-model-len", "32k", "--card", "rtx3090", "--json"]
    native = pagecalc.run(argv, {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})
    assert stdout == native["stdout"]
    assert outcome == json.loads(native["stdout"])["outcome"]
    # a line kvmath-fit refuses: its one line, shown as the answer
    page.locator("#paste textarea[name=line]").fill("vllm serve Qwen/Qwen3.6-27B --quantization awq")
    _, runs, outcome, text = _submit_and_read(page, "paste")
    refusal = pagecalc.run(runs[0][0])
    assert refusal["exit_code"] == 2 and refusal["stderr"].strip() in text
    # no card: the page cannot ask the machine, so the line is refused naming --card (no silent default card)
    page.locator("#paste textarea[name=line]").fill("vllm serve Qwen/Qwen3.6-27B --tensor-parallel-size 2")
    _, runs, outcome, text = _submit_and_read(page, "paste")
    refusal = pagecalc.run(runs[0][0])
    assert refusal["exit_code"] == 2 and "--card" in refusal["stderr"] and refusal["stderr"].strip() in text
    _no_sideways_scroll(page)
    assert log["external"] == [] and log["errors"] == [], (log["external"][:5], log["errors"][:5])


def test_derive_stays_the_function_after_its_module_is_imported():
    """kvmath.derive (the function) after ``import kvmath.derive`` (the module), as in the page's interpreter
    where the command lines import their modules before anything asks for kvmath.derive."""
    code = ("import kvmath.derive, kvmath; d = kvmath.derive('qwen3.6-27b', engine='vllm', max_ctx=8192); "
            "print(d.bytes_per_token)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    # qwen3.6-27b bf16 at TP 1: 16 full-attention layers x 4 KV heads x 256 x (K + V) x 2 B (config.json)
    assert int(r.stdout) == 16 * 4 * 256 * 2 * 2


def test_pyodide_pin_is_one_version_checked_by_its_integrity(tmp_path):
    import base64
    import hashlib

    import book_assets

    from kvmath.book.calculator import PYODIDE_VERSION

    assert book_assets.NPM["pyodide"] == book_assets.NPM_PINNED["pyodide"]["version"] == PYODIDE_VERSION
    blob = tmp_path / "pkg.tgz"
    blob.write_bytes(b"not the package")
    good = "sha512-" + base64.b64encode(hashlib.sha512(b"not the package").digest()).decode()
    book_assets.check_npm_integrity(blob, good)  # matches: no exit
    with pytest.raises(SystemExit, match="does not match the pinned npm integrity"):
        book_assets.check_npm_integrity(blob, book_assets.NPM_PINNED["pyodide"]["integrity"])
    with pytest.raises(SystemExit, match="not sha512"):
        book_assets.check_npm_integrity(blob, "sha1-abc")


def test_site_ships_only_the_runtime_and_its_notices(site):
    names = sorted(p.name for p in (site / "_static" / "pyodide").iterdir())
    assert names == sorted(["pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                            "pyodide-lock.json", "NOTICE.txt", "LICENSE-MPL-2.0.txt", "LICENSE-Apache-2.0.txt",
                            "LICENSE-PSF-2.0.txt", "kvmath.whl"])
    notice = (site / "_static" / "pyodide" / "NOTICE.txt").read_text()
    assert "Pyodide 0.25.1" in notice and "MPL-2.0" in notice and "github.com/pyodide/pyodide" in notice
