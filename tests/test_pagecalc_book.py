"""The calculator in the built book: every model chapter's panel and the paste page, as a reader opens them.

tests/test_pagecalc.py checks the calculator on a minimal site (one panel); this file checks the book itself
(conftest ``book_html``: the session's build, kvmath's wheel beside Pyodide as ``make book`` writes it),
served on 127.0.0.1 and opened in headless Chromium with every request to another host refused.

* ``test_every_model_chapter_has_its_panel``: each model chapter of _toc.yml has one calculator panel, for its
  own model, and ``window.kvmathQuery``; opening it fetches nothing of the calculator.
* ``test_every_chapter_default_answers_natively``: each chapter's panel's command lines as built, for each of
  its three engines, read from the page by the panel's own code (``kvmathCalc.panelJobs``, what its submit
  runs), get an answer from the native command: exit 0 or 1 and a JSON record (vLLM: a verdict, a pool and
  the largest context; llama.cpp: a verdict or the cache; transformers: the cache), never a refusal of the
  panel's own defaults.
* ``test_every_chapter_default_answers_identically_in_the_page``: the same command lines, each chapter's,
  run by ``kvmathQuery`` in a chapter page of the book (Pyodide started once), give exactly the native
  stdout, stderr and exit code.
* ``test_chapter_panel_submits``: one chapter per architecture kind (its cache kinds, a sliding window,
  experts), submitted as built in its own page, at 1280 px (the first also at 390 px), for each engine:
  the answer shown is the native command's, nothing of the calculator fetched before, no sideways scroll.
* ``test_paste_page``: ``vllm serve``, ``llama-server`` and SGLang lines (and refused ones) pasted on the
  book's paste page give the native command's stdout, stderr and exit code; its link to Pyodide's licence
  notice resolves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import toc_docnames
from kvmath import pagecalc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import bench_page  # noqa: E402

TIMEOUT_MS = 600_000  # every chapter's defaults in one Pyodide, on a loaded 2-core machine
ENGINES = ("vllm", "llama.cpp", "transformers")
CHAPTERS = [d.rsplit("/", 1)[1] for d in toc_docnames() if d.startswith("notebooks/generated/")]

# Each panel of a page: its mode, model, and per engine the jobs its submit would run (the form as built).
READ_PANELS = """() => Array.from(document.querySelectorAll('.kvmath-calc')).map((p) => {
  const out = {mode: p.dataset.kvmathCalc, model: p.dataset.model || null, jobs: {}};
  if (out.mode !== 'model') return out;
  const f = p.querySelector('form'), first = f.engine.value;
  for (const e of %s) {
    f.engine.value = e; f.engine.dispatchEvent(new Event('change'));
    out.jobs[e] = window.kvmathCalc.panelJobs(p);
  }
  f.engine.value = first; f.engine.dispatchEvent(new Event('change'));
  return out;
})""" % json.dumps(list(ENGINES))


def _calculator_requests(log):
    return [r for r in log["responses"] if "/_static/pyodide/" in r[0]]


@pytest.fixture(scope="module")
def base(book_html):
    with bench_page.serve(book_html.html) as url:
        yield url


@pytest.fixture
def opened(browser, base):
    contexts = []

    def open_page(path, width=1280):
        context, page, log = bench_page.offline_page(browser, width)
        contexts.append(context)
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{base}/{path}")
        page.wait_for_load_state("load")
        return page, log

    yield open_page
    for c in contexts:
        c.close()


@pytest.fixture(scope="module")
def chapter_panels(browser, base):
    """Per model chapter: the panels of its built page (READ_PANELS, once the panels are wired: the page's
    charts need not have drawn), ``typeof kvmathQuery``, and the calculator files and outside requests the
    page made so far (no question asked; test_chapter_panel_submits checks a fully loaded page too)."""
    found = {}
    for ch in CHAPTERS:
        context, page, log = bench_page.offline_page(browser, 1280)
        try:
            page.goto(f"{base}/notebooks/generated/{ch}.html", wait_until="domcontentloaded")
            page.wait_for_function("() => document.querySelectorAll('.kvmath-calc').length === "
                                   "document.querySelectorAll('.kvmath-calc[data-wired]').length")
            found[ch] = {"panels": page.evaluate(READ_PANELS), "query": page.evaluate("typeof window.kvmathQuery"),
                         "fetched": _calculator_requests(log), "external": list(log["external"])}
        finally:
            context.close()
    return found


def _jobs(chapter_panels):
    """Every chapter's default jobs: [(chapter, engine, argv)]."""
    return [(ch, e, job["argv"]) for ch, got in chapter_panels.items() for e in ENGINES
            for job in got["panels"][0]["jobs"][e]]


@pytest.fixture(scope="module")
def native_defaults(chapter_panels):
    return {json.dumps(argv): pagecalc.run(argv) for _, _, argv in _jobs(chapter_panels)}


def test_every_model_chapter_has_its_panel(chapter_panels):
    assert len(CHAPTERS) >= 20
    wrong = {ch: got for ch, got in chapter_panels.items()
             if [(p["mode"], p["model"]) for p in got["panels"]] != [("model", ch)] or got["query"] != "function"
             or got["fetched"] or got["external"]}
    assert not wrong, json.dumps(wrong, indent=1)[:3000]


def test_every_chapter_default_answers_natively(chapter_panels, native_defaults):
    bad = []
    for ch, engine, argv in _jobs(chapter_panels):
        r = native_defaults[json.dumps(argv)]
        try:
            d = json.loads(r["stdout"])
        except ValueError:
            d = None
        ok = r["exit_code"] in (0, 1) and isinstance(d, dict)
        if ok and argv[0] == "kvmath-fit":  # a verdict, and the pool or the largest context it answers
            ok = d.get("outcome") in ("boots", "oom", "refused") and (
                "largest_max_model_len" in d if "--solve-max-ctx" in argv else
                "pool_tokens" in d or "answers" in d)
        elif ok:  # kvmath: the cache, in bytes
            ok = d.get("totals", {}).get("total_bytes", 0) > 0
        if not ok:
            bad.append(f"{ch} [{engine}] {' '.join(argv)}: exit {r['exit_code']} {r['stderr'].strip()[-200:]}")
    assert not bad, "\n".join(bad)
    # every chapter's vLLM panel asks both questions, and the pasted line is the chapter's own model
    for ch, got in chapter_panels.items():
        vllm = [j["argv"] for j in got["panels"][0]["jobs"]["vllm"]]
        assert len(vllm) == 2 and vllm[0][:3] == ["kvmath-fit", "--model", ch] and "--solve-max-ctx" in vllm[1], vllm


def test_every_chapter_default_answers_identically_in_the_page(opened, chapter_panels, native_defaults):
    argvs = list(native_defaults)
    page, log = opened(f"notebooks/generated/{CHAPTERS[0]}.html")
    got = page.evaluate("""async (argvs) => {
      const out = [];
      for (const a of argvs) out.push(await window.kvmathQuery(JSON.parse(a)));
      return out;
    }""", argvs)
    differ = [(a, g, native_defaults[a]) for a, g in zip(argvs, got) if g != native_defaults[a]]
    assert not differ, "\n\n".join(f"{a}\n page:   {json.dumps(g)[:500]}\n native: {json.dumps(n)[:500]}"
                                   for a, g, n in differ[:4])
    assert log["external"] == [] and log["errors"] == [], (log["external"][:5], log["errors"][:5])


def _kind(model: str) -> tuple[str, ...]:
    """A model's architecture kind for the page checks: its layers' cache kinds, a sliding window, experts."""
    from kvmath.model.load import load_architecture

    a = load_architecture(model)
    kinds = {layer.kind for layer in a.layers} - {"none"}
    if any(getattr(layer, "sliding_window", None) for layer in a.layers):
        kinds.add("sliding")
    if a.is_moe:
        kinds.add("experts")
    return tuple(sorted(kinds))


def _submit(page, panel):
    """Submit ``panel`` (a locator) and wait for its answer; returns the runs it shows
    [(argv, stdout, stderr, exit_code)] and its text."""
    panel.locator("button[type=submit]").click()
    panel.locator(".kvmath-calc-answer[data-state=done], .kvmath-calc-answer[data-state=error]").wait_for()
    answer = panel.locator(".kvmath-calc-answer")
    assert answer.get_attribute("data-state") == "done", answer.inner_text()
    runs = []
    for d in answer.locator("details.kvmath-raw").all():
        err = d.locator("pre.kvmath-stderr")
        runs.append((json.loads(d.get_attribute("data-argv")), d.locator("pre.kvmath-stdout").text_content(),
                     err.text_content() if err.count() else "", int(d.get_attribute("data-exit-code"))))
    return runs, answer.inner_text()


def _same_as_native(runs, env=None):
    for argv, stdout, stderr, code in runs:
        n = pagecalc.run(argv, env)
        assert (stdout, stderr, code) == (n["stdout"], n["stderr"], n["exit_code"]), " ".join(argv)


SUBMITTED = [c for c in ("llama-3.1-8b", "qwen3.6-27b", "gemma-4-26b-a4b", "deepseek-v3") if c in CHAPTERS]
"""Chapters whose panel is submitted in the browser: dense attention, Gated DeltaNet hybrid, sliding windows with
experts, MLA (every chapter's commands are compared with the native ones in the page by the test above; these
check the panel's own rendering of the answer, which is the same code on every page)."""


@pytest.mark.parametrize("chapter", SUBMITTED, ids=lambda c: f"{c}:{'+'.join(_kind(c))}")
def test_chapter_panel_submits(opened, chapter):
    widths = (1280, 390) if chapter == SUBMITTED[0] else (1280,)
    for width in widths:
        page, log = opened(f"notebooks/generated/{chapter}.html", width)
        assert _calculator_requests(log) == [], "the calculator was fetched before the first question"
        panel = page.locator(".kvmath-calc[data-kvmath-calc=model]")
        for engine in ENGINES:
            panel.locator("select[name=engine]").select_option(engine)
            runs, text = _submit(page, panel)
            assert runs and runs[0][0][:3] in (["kvmath-fit", "--model", chapter], ["kvmath-fit", "llama-server", "-m"],
                                               ["kvmath", "--config", chapter]), runs[0][0]
            _same_as_native(runs)
            if runs[0][3] in (0, 1) and runs[0][0][0] == "kvmath-fit":  # the verdict shown is the record's
                d = json.loads(runs[0][1])
                shown = panel.locator(".kvmath-verdict").first.get_attribute("data-outcome")
                assert shown == d["outcome"], (engine, shown, d["outcome"])
                for line in d.get("vllm_log") or d.get("log_lines") or []:
                    assert line in text, (engine, line)
        sw, w = page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]")
        assert sw <= w + 1, f"the page scrolls sideways with the answers shown at {width} px: {sw} > {w}"
        assert log["external"] == [] and log["errors"] == [], (log["external"][:5], log["errors"][:5])


PASTED = [
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 --card rtx4090",
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve Qwen/Qwen3.6-27B \\\n  --tensor-parallel-size 2 --max-model-len 300000 --card h100",
    "./llama-server -m gemma-4-26b-a4b -c 65536 -np 1 -fa on --card rtx4090",
    "llama-server -m qwen3.6-27b -c 32768 -ctk q8_0 -ctv q8_0 --card rtx3090",
    "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2 --card rtx4090",
    "python -m sglang.launch_server --model-path Qwen/Qwen3.6-27B --tp 2 --mem-fraction-static 0.85 "
    "--context-length 65536 --card rtx3090",
    # refused: no card (the page cannot ask the machine), a Hub id not packaged, a bad value
    "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct",
    "python -m sglang.launch_server --model-path someorg/unknown-7b --card h100",
    "llama-server -m qwen3.6-27b -c banana --card rtx3090",
]


def test_paste_page(opened):
    page, log = opened("book/paste.html")
    panel = page.locator(".kvmath-calc[data-kvmath-calc=paste]")
    assert panel.count() == 1
    codes = []
    for line in PASTED:
        panel.locator("textarea[name=line]").fill(line)
        (job,) = page.evaluate("() => window.kvmathCalc.panelJobs(document.querySelector('.kvmath-calc[data-kvmath-calc=paste]'))")
        runs, text = _submit(page, panel)
        assert [r[0] for r in runs] == [job["argv"]]
        _same_as_native(runs, job["env"] or None)
        codes.append(runs[0][3])
        if runs[0][3] == 2:  # the refusal's one line is the answer shown
            assert runs[0][2].strip().splitlines()[-1] in text
    # the good lines answer (boots or does not), the last three are refused
    assert all(c in (0, 1) for c in codes[:-3]) and codes[-3:] == [2, 2, 2], codes
    # the page links Pyodide's licence notice, shipped beside its files
    notice = page.evaluate("async () => { const r = await fetch(document.querySelector('a.kvmath-notice').href); "
                           "return [r.status, await r.text()]; }")
    assert notice[0] == 200 and "Pyodide 0.25.1" in notice[1] and "MPL-2.0" in notice[1], notice
    assert log["external"] == [] and log["errors"] == [], (log["external"][:5], log["errors"][:5])
