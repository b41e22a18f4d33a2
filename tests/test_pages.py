"""Every page of the TOC, opened in headless Debian Chromium, renders offline and cleanly.

The built HTML is served on 127.0.0.1 by a threaded ``http.server``; Playwright drives
``/usr/bin/chromium`` (Debian's package: ``apt-get install -y chromium``).  For each page:

* no ``pageerror`` and no console error, except the known-harmless ones in ``HARMLESS``;
* no request to any host other than 127.0.0.1 (others are aborted and reported), and no
  failed or >= 400 request to the local server (e.g. a missing vendored font);
* every Altair chart drew a Vega view (``canvas`` / ``svg.marks`` inside ``.vega-embed``),
  every ``alt.binding_range`` parameter has its ``input[type=range]``, and moving it
  redraws the chart;
* every ipywidget view rendered (``.jupyter-widgets``; sliders as ``.widget-slider``);
* math was typeset by the vendored MathJax (``mjx-container``).

A full-page screenshot of each page goes to ``<build>/screenshots/`` and, if the
environment variable ``KVMATH_SCREENSHOTS`` names a folder, there too.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import toc_docnames

CHROMIUM = os.environ.get("KVMATH_CHROMIUM", "/usr/bin/chromium")
# Flags from the machine notes: without the background-networking ones Chromium keeps
# trying Google's hosts, which this machine's closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RENDER_TIMEOUT_MS = 30_000

# Console errors / page errors that are known and harmless, each with the reason.
HARMLESS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"Identifier 'THEBE_JS_URL' has already been declared"),
        "sphinx-thebe (always loaded by JB1) injects its config <script> twice on every "
        "page; thebe itself is off (launch_buttons.thebe: false), so nothing uses it",
    ),
    (
        re.compile(r"Cannot read properties of undefined \(reading 'Queue'\)"),
        "@jupyter-widgets/html-manager calls the MathJax 2 API MathJax.Hub.Queue; the page "
        "has MathJax 3. Only widget labels' math is affected; the widgets render",
    ),
]


def _harmless(text: str, seen: list[str] | None = None) -> bool:
    for pattern, _reason in HARMLESS:
        if pattern.search(text):
            if seen is not None:
                seen.append(text)
            return True
    return False


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature from the base class
        pass

    def do_GET(self):
        if self.path == "/favicon.ico":  # Chromium asks for it; the book has none.
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()


@pytest.fixture(scope="module")
def server(built_book):
    handler = functools.partial(_QuietHandler, directory=str(built_book.html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"{CHROMIUM} not found: apt-get update && apt-get install -y chromium "
            "(make test and .ci/run do this)",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


# JS helpers -----------------------------------------------------------------------------

_VIEW_SNAPSHOT = """(embed) => {
  const el = embed.querySelector('canvas, svg.marks');
  if (!el) return null;
  return el.tagName === 'CANVAS' ? el.toDataURL() : el.outerHTML;
}"""

_MOVE_RANGE = """(input) => {
  const lo = parseFloat(input.min), hi = parseFloat(input.max), v = parseFloat(input.value);
  input.value = String(Math.abs(v - hi) > Math.abs(v - lo) ? hi : lo);
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new Event('change', {bubbles: true}));
  return input.value;
}"""


@pytest.mark.parametrize("doc", toc_docnames())
def test_page_renders_offline(doc, built_book, server, browser):
    html_path = built_book.html / f"{doc}.html"
    source = html_path.read_text(errors="replace")
    n_charts = source.count('class="kv-vega"')
    n_ranges = source.count('"input": "range"')
    n_widgets = source.count('type="application/vnd.jupyter.widget-view+json"')
    has_math = bool(re.search(r'class="math[ "]', source))

    errors: list[str] = []
    external: list[str] = []
    local_failures: list[str] = []
    harmless_seen: list[str] = []

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()

    def route(r):
        host = urlsplit(r.request.url).hostname
        if host == "127.0.0.1":
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on(
        "pageerror",
        lambda exc: None if _harmless(str(exc), harmless_seen) else errors.append(f"pageerror: {exc}"),
    )
    page.on(
        "console",
        lambda m: errors.append(f"console.{m.type}: {m.text} @ {m.location.get('url')}")
        if m.type == "error" and not _harmless(m.text, harmless_seen)
        else None,
    )
    page.on(
        "response",
        lambda resp: local_failures.append(f"{resp.status} {resp.url}")
        if resp.status >= 400 and urlsplit(resp.url).hostname == "127.0.0.1"
        else None,
    )
    page.on(
        "requestfailed",
        lambda req: local_failures.append(f"failed {req.url}: {req.failure}")
        if urlsplit(req.url).hostname == "127.0.0.1"
        else None,
    )

    try:
        page.goto(f"{server}/{doc}.html", wait_until="load")

        if n_charts:
            page.wait_for_function(
                """() => [...document.querySelectorAll('.kv-vega')].every(
                       d => d.querySelector('canvas, svg.marks'))""",
                timeout=RENDER_TIMEOUT_MS,
            )
            assert page.locator(".vega-embed").count() >= n_charts
            ranges = page.locator(".vega-embed .vega-bindings input[type=range]")
            assert ranges.count() >= n_ranges, f"{ranges.count()} sliders for {n_ranges} range bindings"
            # Moving each slider redraws its own chart (no kernel involved).
            for i in range(ranges.count()):
                rng = ranges.nth(i)
                embed = rng.locator("xpath=ancestor::div[contains(@class,'vega-embed')][1]")
                before = embed.evaluate(_VIEW_SNAPSHOT)
                rng.evaluate(_MOVE_RANGE)
                after = before
                for _ in range(50):  # Vega re-renders asynchronously

                    page.wait_for_timeout(100)
                    after = embed.evaluate(_VIEW_SNAPSHOT)
                    if after != before:
                        break
                assert after != before, f"moving slider {i} did not redraw its chart"
        else:
            assert n_ranges == 0

        if n_widgets:
            page.wait_for_selector(".jupyter-widgets", timeout=RENDER_TIMEOUT_MS)
            page.wait_for_function(
                f"() => document.querySelectorAll('.jupyter-widgets').length >= {n_widgets}",
                timeout=RENDER_TIMEOUT_MS,
            )
            if "IntSliderModel" in source or "FloatSliderModel" in source:
                assert page.locator(".widget-slider").count() >= 1

        if has_math:
            page.wait_for_selector("mjx-container", timeout=RENDER_TIMEOUT_MS)

        page.wait_for_timeout(500)  # let late errors and requests arrive
        shots = built_book.build_dir / "screenshots"
        shots.mkdir(exist_ok=True)
        shot = shots / (doc.replace("/", "__") + ".png")
        page.screenshot(path=str(shot), full_page=True)
        if os.environ.get("KVMATH_SCREENSHOTS"):
            dest = Path(os.environ["KVMATH_SCREENSHOTS"])
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, dest / shot.name)
    finally:
        context.close()

    if harmless_seen:
        print(f"[{doc}] known-harmless errors:", *sorted(set(harmless_seen)), sep="\n  ")
    assert not errors, "\n".join(errors)
    assert not external, "requests to other hosts:\n" + "\n".join(sorted(set(external)))
    assert not local_failures, "failed local requests:\n" + "\n".join(local_failures)
