"""A chapter in a live JupyterLab, driven headlessly: ``make lab`` on loopback, Chromium, a widget.

The session (one per module):

1. copies the model-chapter template (``notebooks/model_chapter.md``) into a temporary root with
   the first code cell's ``model`` set to a known model other than the template's default (what a
   reader does to explore another model);
2. starts JupyterLab through ``make lab`` (so the target and its settings are what is tested),
   bound to 127.0.0.1 with a random token, no browser, no news or update checks, and its own
   runtime / workspace / user-settings folders;
3. opens ``/lab/tree/notebooks/model_chapter.md`` in headless Chromium (every request to another
   host is refused and counted), which must open as a notebook (jupytext's "Jupytext Notebook" is
   the default viewer for Markdown), and runs every cell.

The tests then check that the chapter ran without an error output, that its Altair charts
rendered, that moving the live cell's slider recomputes its answer and redraws its figure, and
that the prose shows the numbers (jupyterlab-myst). A check that fails because of the chapter's
content is a strict xfail naming what the chapter needs.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import ROOT, book_env

CHROMIUM = os.environ.get("KVMATH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TEMPLATE = ROOT / "notebooks" / "model_chapter.md"
START_TIMEOUT_S = 120
RUN_TIMEOUT_MS = 300_000


def _default_model(text: str) -> str:
    m = re.search(r'^model\s*=\s*"([^"]+)"', text, re.M)
    assert m, "notebooks/model_chapter.md: no `model = \"...\"` line in its first code cell"
    return m.group(1)


def _other_model(default: str) -> str:
    import kvmath

    known = list(kvmath.known_models())
    for preferred in ("gemma-4-31b", "gemma-4-26b-a4b", "qwen3.6-35b-a3b"):
        if preferred in known and preferred != default:
            return preferred
    return next(m for m in known if m != default)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabSession:
    def __init__(self, page, model: str, default: str, external: list[str], errors: list[str]):
        self.page, self.model, self.default = page, model, default
        self.external, self.errors = external, errors


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"{CHROMIUM} not found: apt-get install -y chromium", pytrace=False)
    if not (Path(sys.executable).parent / "jupyter-lab").exists():
        pytest.fail("jupyter-lab is not in the venv: install requirements-book.lock (make venv)", pytrace=False)

    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    (root / "notebooks").mkdir(parents=True)
    text = TEMPLATE.read_text()
    default = _default_model(text)
    model = _other_model(default)
    text = re.sub(r'^model\s*=\s*"[^"]+"', f'model = "{model}"', text, count=1, flags=re.M)
    (root / "notebooks" / "model_chapter.md").write_text(text)

    port, token = _free_port(), secrets.token_hex(16)
    env = book_env()
    env.pop("KVMATH_BOOK_BUILD", None)  # live: Altair's JupyterLab renderer, not the static one
    for var, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                     ("JUPYTERLAB_SETTINGS_DIR", "user-settings")):
        env[var] = str(base / sub)
    # every cell in the DOM (JupyterLab 4 otherwise renders only the cells near the viewport)
    tracker = base / "user-settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"windowingMode": "none"}')
    lab_args = " ".join([
        "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",  # no PyPI queries from the server
        # no --allow-root here: the lab target adds it as root (test_lab_target_as_root)
    ])
    log = open(base / "lab.log", "w")
    # -o: the venv and the chapters are the test session's own; only the lab target itself runs.
    proc = subprocess.Popen(["make", "-s", "-o", "venv", "lab", f"LAB_ARGS={lab_args}", f"LAB_ROOT={root}",
                             f"VENV={Path(sys.prefix)}"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"JupyterLab did not start (exit {proc.poll()}):\n"
                                + (base / "lab.log").read_text()[-3000:], pytrace=False)
                time.sleep(0.5)

        from playwright.sync_api import sync_playwright

        external: list[str] = []
        errors: list[str] = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 1000})

            def route(r):
                if urlsplit(r.request.url).hostname == "127.0.0.1":
                    r.continue_()
                else:
                    external.append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
            page.goto(f"{url}/lab/tree/notebooks/model_chapter.md?token={token}")
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=60_000)
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                                   "&& window.jupyterapp.shell.currentWidget.sessionContext "
                                   "&& window.jupyterapp.shell.currentWidget.sessionContext.session "
                                   "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
                                   timeout=60_000)
            page.evaluate("""async () => {
                const nb = window.jupyterapp.shell.currentWidget;
                await nb.sessionContext.ready;
                await window.jupyterapp.commands.execute('notebook:run-all-cells');
            }""")
            # every code cell has run: no "[*]" / "[ ]" prompts left and the kernel is idle
            page.wait_for_function("""() => {
                const nb = window.jupyterapp.shell.currentWidget;
                const k = nb.sessionContext.session && nb.sessionContext.session.kernel;
                const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent);
                return k && k.status === 'idle' && prompts.length > 0 && prompts.every(t => /\\[\\d+\\]/.test(t));
            }""", timeout=RUN_TIMEOUT_MS)
            page.wait_for_timeout(1500)  # widgets and charts render after the kernel replies
            yield LabSession(page, model, default, external, errors)
            context.close()
            browser.close()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the make / jupyter-lab group started above
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


_SNAPSHOT = """(cell) => [...cell.querySelectorAll('.jp-OutputArea-output canvas, .jp-OutputArea-output svg, .jp-OutputArea-output img')]
  .filter(e => !e.closest('.widget-slider, .widget-dropdown, .jp-InputArea'))
  .map(e => e.tagName === 'CANVAS' ? e.toDataURL() : (e.tagName === 'IMG' ? e.src : e.outerHTML)).join('|')"""


def _widget_cell(page):
    cell = page.locator(".jp-CodeCell").filter(has=page.locator(".widget-slider")).first
    assert cell.count(), "no code cell with an ipywidgets slider in the chapter"
    return cell


def _drag_slider(page, cell) -> None:
    handle = cell.locator(".widget-slider .noUi-handle, .widget-slider .ui-slider-handle").first
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    assert box, "the slider's handle is not on screen"
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 120, y, steps=8)  # the default is usually the slider's maximum: go left
    page.mouse.up()


@pytest.fixture(scope="module")
def moved(lab):
    """Move the live cell's first slider once; return (before, after) of its answer and figure."""
    page = lab.page
    cell = _widget_cell(page)
    text_before = cell.locator(".jp-Cell-outputArea").first.inner_text()
    fig_before = cell.evaluate(_SNAPSHOT)
    _drag_slider(page, cell)
    text_after, fig_after = text_before, fig_before
    for _ in range(100):
        page.wait_for_timeout(100)
        text_after = cell.locator(".jp-Cell-outputArea").first.inner_text()
        fig_after = cell.evaluate(_SNAPSHOT)
        if text_after != text_before and fig_after != fig_before:
            break
    return {"text": (text_before, text_after), "figure": (fig_before, fig_after)}


def test_chapter_opens_as_notebook_and_runs(lab):
    page = lab.page
    assert page.locator(".jp-NotebookPanel").count() >= 1, "the .md chapter did not open as a notebook"
    errs = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
    texts = [errs.nth(i).inner_text()[-400:] for i in range(errs.count())]
    assert not texts, f"the chapter for {lab.model} raised:\n" + "\n---\n".join(texts)


def test_no_page_errors(lab):
    assert not lab.errors, "page errors in JupyterLab:\n" + "\n".join(lab.errors)


def test_offline(lab):
    assert len(lab.external) == 0, f"{len(lab.external)} requests to other hosts refused:\n" + "\n".join(
        sorted(set(lab.external)))


def test_charts_rendered(lab):
    # a Vega view: JupyterChart (Altair's "jupyter" renderer) or JupyterLab's own Vega renderer
    charts = lab.page.locator(".jp-OutputArea-output .vega-embed")
    assert charts.count() >= 1, "no Altair chart drawn in JupyterLab"
    drawn = lab.page.locator(".jp-OutputArea-output .vega-embed canvas, .jp-OutputArea-output .vega-embed svg.marks")
    assert drawn.count() >= charts.count(), f"{drawn.count()} drawn views for {charts.count()} charts"


def test_slider_recomputes(lab, moved):
    before, after = moved["text"]
    assert after != before, f"moving the slider did not recompute the live cell's answer: {before!r}"


def test_slider_redraws_figure(lab, moved):
    before, after = moved["figure"]
    assert before, "no figure in the live cell's output"
    assert after != before, "moving the slider did not redraw the live cell's figure"


def test_prose_shows_numbers(lab):
    """The prose's ``{eval}`glued.<key>``` expressions (kvmath/book/glue.py) show their values: jupyterlab-myst
    evaluated them in the kernel (``.myst-RenderedExpression`` / an inline span), none is left as code or
    an error, and the Overview gives this model's number of decoder layers."""
    import kvmath

    n_layers = kvmath.load_architecture(lab.model).num_hidden_layers
    overview = lab.page.locator(".jp-MarkdownCell").filter(has_text="decoder layers").first
    assert overview.count(), "no Overview paragraph mentioning the decoder layers"
    text = overview.inner_text()
    assert "glued." not in text, f"an inline expression was not evaluated: {text[:300]!r}"
    assert re.search(rf"\b{n_layers}\b", text), f"{lab.model}'s {n_layers} layers not in: {text[:300]!r}"
    prose = lab.page.locator(".jp-MarkdownCell .jp-RenderedHTMLCommon, .jp-MarkdownCell .myst")
    unevaluated = [t for t in prose.all_inner_texts() if "glued." in t]
    assert not unevaluated, f"{len(unevaluated)} Markdown cells show an unevaluated glued.<key>: {unevaluated[0][:200]!r}"


def test_lab_target_as_root_and_without_executing():
    """``make lab``'s commands (make -n): the chapters are written but not executed (the server starts without
    running every chapter first), and Jupyter gets --allow-root exactly when make runs as root."""
    out = subprocess.run(["make", "-n", "-o", "venv", "lab", f"VENV={Path(sys.prefix)}"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    write = [l for l in out.splitlines() if "kvmath.book.model_chapter" in l]
    assert write and all("--no-execute" in l for l in write), out
    assert "execute_all" not in out and "jb build" not in out
    serve = next(l for l in out.splitlines() if "jupyter lab" in l)
    assert ("--allow-root" in serve) == (os.geteuid() == 0), serve
