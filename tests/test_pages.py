"""Every page of the TOC, opened in headless Debian Chromium at 1280 px and at 390 px, offline.

The built HTML is served on 127.0.0.1 by a threaded ``http.server``; Playwright drives
``/usr/bin/chromium`` (Debian's package: ``apt-get install -y chromium``). Each page is loaded
once per width (:class:`PageReport`, cached for the module) and each check is its own test,
so a page that fails one check still reports the others:

* ``test_console_clean``: no ``pageerror`` and no console error at all;
* ``test_offline``: every request to a host other than 127.0.0.1 is refused (route
  interception) and counted, and the count is 0; no failed or >= 400 local request;
* ``test_no_horizontal_scroll``: ``document.scrollingElement.scrollWidth <= innerWidth + 1``
  (a wide table or equation scrolls inside its own box instead);
* ``test_no_missing_values``: no table cell or glued text reads ``nan`` / ``NaN`` / ``None``
  / ``<NA>`` / ``NaT``;
* ``test_no_error_outputs``: no cell shows a traceback or stderr output;
* ``test_charts_drawn``: every Altair chart drew a Vega view (``canvas`` / ``svg.marks``
  with a nonzero size) that fits its column (no chart scrolls at phone width);
* ``test_controls_redraw``: every input bound to a chart (range, select, radio, checkbox)
  changes the drawn chart when it is changed (for a select or radio group: one of its other
  options does); no kernel involved;
* ``test_widgets_render``: every ipywidget view rendered (``.jupyter-widgets``);
* ``test_math_typeset``: math was typeset by the vendored MathJax (``mjx-container``), and at
  1280 px no display equation is wider than the text column.
* ``test_tables_fit`` (the intro and every model chapter): no table is wider than the text column or scrolls
  inside a box, at 1280 px and at 390 px (the book's tables reflow into labelled lines on a phone), and
  no table has an empty header row;
* ``test_first_screen_answers`` (the intro and every model chapter): the table of verdicts per card starts
  inside the first 900 px of the page, at 1280 and at 390 px;
* ``test_chapters_differ``: two model chapters of different architecture kinds share at most half of
  their prose sentences (digits masked);
* ``test_probe_readouts`` (from the chart specs in the page, no browser): a probe line (a rule
  placed by a slider's parameter) comes with a text mark that reads the values at the probe, and
  it does not start on top of another rule of the same chart (the refusal line).

A check that fails because of a chapter's content (not the site) is listed in ``XFAIL`` with
the page and the reason, as a strict xfail: when the chapter is fixed, the test says so.

A full-page screenshot of each page goes to ``<build>/screenshots/`` and, if the
environment variable ``KVMATH_SCREENSHOTS`` names a folder, there too.
"""

from __future__ import annotations

import dataclasses
import functools
import http.server
import json
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import toc_docnames

RENDER_TIMEOUT_MS = 30_000
LOAD_TIMEOUT_MS = 120_000  # a page's load event on a loaded 2-core machine (a qwen3-32b chapter took over 30 s once)
REDRAW_TIMEOUT_MS = 5_000
WIDTHS = (1280, 390)
DOCS = toc_docnames()

# (check, doc, width or None for both) -> reason. Only content problems belong here; each is a
# strict xfail, so a fixed chapter turns it into a failure that asks for the entry to go.
XFAIL: dict[tuple[str, str, int | None], str] = {}


def _params(check: str, widths=WIDTHS):
    out = []
    for doc in DOCS:
        for w in widths:
            reason = XFAIL.get((check, doc, w)) or XFAIL.get((check, doc, None))
            marks = [pytest.mark.xfail(strict=True, reason=f"{doc}: {reason}")] if reason else []
            out.append(pytest.param(doc, w, id=f"{doc}@{w}", marks=marks))
    return out


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
def server(book_html):
    handler = functools.partial(_QuietHandler, directory=str(book_html.html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


# JS helpers -----------------------------------------------------------------------------

_VIEW_SNAPSHOT = """(embed) => {
  const el = embed.querySelector('canvas, svg.marks');
  if (!el) return null;
  return el.tagName === 'CANVAS' ? el.toDataURL() : el.outerHTML;
}"""

_LAYOUT = """() => {
  const W = window.innerWidth;
  const wide = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= W + 1) continue;
    let p = el.parentElement, boxed = false;
    for (; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if ((o === 'auto' || o === 'scroll' || o === 'hidden') && p.getBoundingClientRect().right <= W + 1) { boxed = true; break; }
    }
    if (!boxed) wide.push(`${el.tagName.toLowerCase()}.${String(el.className.baseVal ?? el.className).split(' ')[0]} right=${Math.round(r.right)}`);
  }
  // text wider than its element (a long word or URL) does not show in the element boxes above
  for (const el of document.querySelectorAll('.bd-article p, .bd-article li, .bd-article td, .bd-article dd')) {
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible' && el.getBoundingClientRect().right + el.scrollWidth - el.clientWidth > W + 1)
      wide.push(`text in ${el.tagName.toLowerCase()} "${el.textContent.trim().slice(0, 60)}"`);
  }
  return {scrollWidth: document.scrollingElement.scrollWidth, innerWidth: W, wide: wide.slice(0, 8)};
}"""

_MISSING = """() => {
  const bad = /^\\s*(nan|NaN|None|<NA>|NaT)\\s*$/;
  const out = [];
  for (const el of document.querySelectorAll('.bd-article td, .bd-article th, .bd-article .pasted-text, .bd-article .pasted-inline')) {
    if (bad.test(el.textContent)) {
      const tr = el.closest('tr');
      out.push(`${el.tagName.toLowerCase()} "${el.textContent.trim()}" in row "${tr ? tr.textContent.trim().replace(/\\s+/g, ' ').slice(0, 80) : ''}"`);
    }
  }
  return out;
}"""

_TABLES = """() => {
  const art = document.querySelector('.bd-article');
  const col = art ? art.clientWidth : window.innerWidth;
  return [...document.querySelectorAll('.bd-article table')].map((t, i) => {
    let scrolls = false;
    for (let el = t.parentElement; el && el !== art; el = el.parentElement) {
      const ox = getComputedStyle(el).overflowX;
      if ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth + 1) { scrolls = true; break; }
    }
    const emptyHeader = [...t.querySelectorAll('thead tr')].some(tr => [...tr.cells].every(c => !c.textContent.trim()));
    const head = [...t.querySelectorAll('th')].slice(0, 3).map(c => c.textContent.trim()).join(' | ');
    return {i, width: Math.round(t.getBoundingClientRect().width), col, scrolls, emptyHeader, head};
  });
}"""

# Where the answer to "what fits on my card" first appears: the top (page coordinates, px) of the first table of
# the article that names a 24 GB card, and of the first paragraph that gives a card's verdict in words.
_FIRST_ANSWER = """() => {
  const art = document.querySelector('.bd-article') || document.body;
  const top = el => el ? Math.round(el.getBoundingClientRect().top + window.scrollY) : null;
  const table = [...art.querySelectorAll('table')].find(t => /RTX 3090/.test(t.textContent));
  return {table: top(table), height: window.innerHeight};
}"""

_ERROR_OUTPUTS = """() => [...document.querySelectorAll('.bd-article .output.traceback, .bd-article .output.stderr')]
  .map(e => e.textContent.trim().split('\\n').filter(Boolean).slice(-1)[0] || '').map(t => t.slice(0, 200))"""

_CHARTS = """() => [...document.querySelectorAll('.kv-vega')].map((div, i) => {
  const c = div.querySelector('canvas, svg.marks');
  if (!c) return {i, drawn: false};
  const r = c.getBoundingClientRect();
  const box = div.parentElement ? div.parentElement.clientWidth : window.innerWidth;
  return {i, drawn: r.width > 0 && r.height > 0, width: Math.round(r.width), height: Math.round(r.height),
          box, fits: r.width <= box + 1 && r.right <= window.innerWidth + 1};
})"""

_EQUATIONS = """() => [...document.querySelectorAll('.bd-article mjx-container[display="true"]')]
  .map(m => ({sw: m.scrollWidth, cw: m.clientWidth, tex: (m.closest('div.math') || m).getAttribute('id') || ''}))
  .filter(e => e.sw > e.cw + 1)"""

_MOVE_RANGE = """(input) => {
  const lo = parseFloat(input.min), hi = parseFloat(input.max), v = parseFloat(input.value);
  input.value = String(Math.abs(v - hi) > Math.abs(v - lo) ? hi : lo);
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new Event('change', {bubbles: true}));
  return input.value;
}"""

_SET_VALUE = """(el, v) => {
  el.value = v;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
}"""

_CHECK = """(el) => { el.checked = true; el.dispatchEvent(new Event('change', {bubbles: true})); }"""

_CHANGE_CHECKBOX = """(box) => {
  box.checked = !box.checked;
  box.dispatchEvent(new Event('change', {bubbles: true}));
  return String(box.checked);
}"""


@dataclasses.dataclass
class PageReport:
    doc: str
    width: int
    errors: list[str] = dataclasses.field(default_factory=list)
    external: list[str] = dataclasses.field(default_factory=list)
    local_failures: list[str] = dataclasses.field(default_factory=list)
    layout: dict = dataclasses.field(default_factory=dict)
    missing: list[str] = dataclasses.field(default_factory=list)
    error_outputs: list[str] = dataclasses.field(default_factory=list)
    n_charts: int = 0
    charts: list[dict] = dataclasses.field(default_factory=list)
    n_bound_ranges: int = 0
    controls: list[tuple[str, bool]] = dataclasses.field(default_factory=list)
    n_widgets: int = 0
    widgets_seen: int = 0
    sliders_expected: bool = False
    sliders_seen: int = 0
    has_math: bool = False
    math_typeset: bool = False
    wide_equations: list[dict] = dataclasses.field(default_factory=list)
    tables: list[dict] = dataclasses.field(default_factory=list)
    text: str = ""  # the article's text, for the sentence-overlap check
    first_answer: dict = dataclasses.field(default_factory=dict)  # where the card table starts (_FIRST_ANSWER)
    problems: list[str] = dataclasses.field(default_factory=list)  # timeouts while loading


def _redrew(page, embed, before, timeout_ms: int = REDRAW_TIMEOUT_MS) -> bool:
    for _ in range(timeout_ms // 100):  # Vega re-renders asynchronously
        page.wait_for_timeout(100)
        if embed.evaluate(_VIEW_SNAPSHOT) != before:
            return True
    return False


def _options(bind):
    """The ways to change one bound control: a list of (apply, undo) pairs, one per other state."""
    if bind.locator("input[type=range]").count():
        rng = bind.locator("input[type=range]").first
        old = rng.input_value()
        return [(lambda: rng.evaluate(_MOVE_RANGE), lambda: rng.evaluate(_SET_VALUE, old))]
    if bind.locator("select").count():
        sel = bind.locator("select").first
        old = sel.input_value()
        values = [v for v in sel.evaluate("(s) => [...s.options].map(o => o.value)") if v != old]
        return [((lambda v=v: sel.evaluate(_SET_VALUE, v)), lambda: sel.evaluate(_SET_VALUE, old)) for v in values]
    if bind.locator("input[type=radio]").count():
        radios = bind.locator("input[type=radio]")
        old = bind.locator("input[type=radio]:checked").first
        others = [radios.nth(j) for j in range(radios.count()) if not radios.nth(j).is_checked()]
        return [((lambda r=r: r.evaluate(_CHECK)), lambda: old.evaluate(_CHECK)) for r in others]
    if bind.locator("input[type=checkbox]").count():
        box = bind.locator("input[type=checkbox]").first
        return [(lambda: box.evaluate(_CHANGE_CHECKBOX), lambda: box.evaluate(_CHANGE_CHECKBOX))]
    return []  # a text input or a bare element: nothing to drive generically


def _exercise_controls(page, rep: PageReport) -> None:
    """Change every input bound to a chart, from the page's initial state (each change is put back
    before the next), and record whether its own chart redrew. A select or radio group counts as
    redrawing when one of its other options changes the chart (two options may draw the same)."""
    binds = page.locator(".vega-embed .vega-bindings .vega-bind")
    for i in range(binds.count()):
        bind = binds.nth(i)
        label = bind.locator(".vega-bind-name")
        name = ((label.first.text_content() if label.count() else "") or f"control {i}").strip()
        embed = bind.locator("xpath=ancestor::div[contains(@class,'vega-embed')][1]")
        options = _options(bind)
        if not options:
            continue
        redrew = False
        for k, (apply, undo) in enumerate(options):
            before = embed.evaluate(_VIEW_SNAPSHOT)
            apply()
            redrew = _redrew(page, embed, before, REDRAW_TIMEOUT_MS if k == 0 else 1500)
            undo()
            page.wait_for_timeout(300)  # let the chart settle back
            if redrew:
                break
        rep.controls.append((f"chart control '{name}' (#{i})", redrew))


def _load(browser, server, built_book, doc: str, width: int) -> PageReport:
    from playwright.sync_api import TimeoutError as PWTimeout

    page_file = built_book.html / f"{doc}.html"
    if os.environ.get("KVMATH_PREBUILT_BOOK") and not page_file.is_file():
        pytest.skip(f"{doc} is not in the prebuilt book (KVMATH_PREBUILT_BOOK)")
    source = page_file.read_text(errors="replace")
    rep = PageReport(doc=doc, width=width)
    rep.n_charts = source.count('class="kv-vega"')
    rep.n_bound_ranges = source.count('"input": "range"')
    rep.n_widgets = source.count('type="application/vnd.jupyter.widget-view+json"')
    rep.sliders_expected = "IntSliderModel" in source or "FloatSliderModel" in source
    rep.has_math = bool(re.search(r'class="math[ "]', source))

    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()

    def route(r):
        if urlsplit(r.request.url).hostname == "127.0.0.1":
            r.continue_()
        else:
            rep.external.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("pageerror", lambda exc: rep.errors.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda m: rep.errors.append(f"console.{m.type}: {m.text} @ {m.location.get('url')}")
        if m.type == "error" else None,
    )
    page.on(
        "response",
        lambda resp: rep.local_failures.append(f"{resp.status} {resp.url}")
        if resp.status >= 400 and urlsplit(resp.url).hostname == "127.0.0.1" else None,
    )
    page.on(
        "requestfailed",
        lambda req: rep.local_failures.append(f"failed {req.url}: {req.failure}")
        if urlsplit(req.url).hostname == "127.0.0.1" else None,
    )

    def wait(js: str, what: str) -> bool:
        try:
            page.wait_for_function(js, timeout=RENDER_TIMEOUT_MS)
            return True
        except PWTimeout:
            rep.problems.append(f"timed out waiting for {what}")
            return False

    try:
        page.goto(f"{server}/{doc}.html", wait_until="load", timeout=LOAD_TIMEOUT_MS)
        if rep.n_charts:
            wait("""() => [...document.querySelectorAll('.kv-vega')].every(d => d.querySelector('canvas, svg.marks'))""",
                 "every chart to draw")
        if rep.n_widgets:
            wait(f"() => document.querySelectorAll('.jupyter-widgets').length >= {rep.n_widgets}",
                 f"{rep.n_widgets} widget views")
        if rep.has_math:
            wait("() => document.querySelector('mjx-container') !== null", "MathJax")
        page.wait_for_timeout(500)  # charts fit their column; late errors and requests arrive

        rep.layout = page.evaluate(_LAYOUT)
        rep.missing = page.evaluate(_MISSING)
        rep.error_outputs = page.evaluate(_ERROR_OUTPUTS)
        rep.charts = page.evaluate(_CHARTS)
        rep.widgets_seen = page.locator(".jupyter-widgets").count()
        rep.sliders_seen = page.locator(".widget-slider").count()
        rep.math_typeset = page.locator("mjx-container").count() > 0
        rep.wide_equations = page.evaluate(_EQUATIONS)
        rep.tables = page.evaluate(_TABLES)
        page.evaluate("() => window.scrollTo(0, 0)")
        rep.first_answer = page.evaluate(_FIRST_ANSWER)
        rep.text = page.evaluate("() => (document.querySelector('.bd-article') || document.body).innerText")

        shots = built_book.build_dir / "screenshots"
        shots.mkdir(exist_ok=True)
        shot = shots / f"{doc.replace('/', '__')}@{width}.png"
        page.screenshot(path=str(shot), full_page=True)
        if os.environ.get("KVMATH_SCREENSHOTS"):
            dest = Path(os.environ["KVMATH_SCREENSHOTS"])
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, dest / shot.name)

        _exercise_controls(page, rep)
        page.wait_for_timeout(300)  # errors raised by a redraw
    finally:
        context.close()
    return rep


@pytest.fixture(scope="module")
def report(book_html, server, browser):
    cache: dict[tuple[str, int], PageReport] = {}

    def get(doc: str, width: int) -> PageReport:
        if (doc, width) not in cache:
            cache[(doc, width)] = _load(browser, server, book_html, doc, width)
        return cache[(doc, width)]

    return get


# The checks ------------------------------------------------------------------------------


@pytest.mark.parametrize("doc,width", _params("console"))
def test_console_clean(doc, width, report):
    rep = report(doc, width)
    assert not rep.errors, f"{len(rep.errors)} console errors:\n" + "\n".join(rep.errors)


@pytest.mark.parametrize("doc,width", _params("offline"))
def test_offline(doc, width, report):
    rep = report(doc, width)
    assert len(rep.external) == 0, f"{len(rep.external)} requests to other hosts refused:\n" + "\n".join(
        sorted(set(rep.external)))
    assert not rep.local_failures, "failed local requests:\n" + "\n".join(rep.local_failures)


@pytest.mark.parametrize("doc,width", _params("scroll"))
def test_no_horizontal_scroll(doc, width, report):
    lay = report(doc, width).layout
    assert lay["scrollWidth"] <= lay["innerWidth"] + 1, (
        f"page scrolls sideways: scrollWidth {lay['scrollWidth']} > {lay['innerWidth']}; "
        "wider than the window, outside any scroll box: " + ", ".join(lay["wide"]))


@pytest.mark.parametrize("doc,width", _params("missing"))
def test_no_missing_values(doc, width, report):
    missing = report(doc, width).missing
    assert not missing, f"{len(missing)} cells read as a missing value:\n" + "\n".join(missing[:20])


@pytest.mark.parametrize("doc,width", _params("error_outputs", widths=(1280,)))
def test_no_error_outputs(doc, width, report):
    errs = report(doc, width).error_outputs
    assert not errs, f"{len(errs)} cells show a traceback or stderr:\n" + "\n".join(errs)


@pytest.mark.parametrize("doc,width", _params("charts"))
def test_charts_drawn(doc, width, report):
    rep = report(doc, width)
    assert len(rep.charts) == rep.n_charts, f"{len(rep.charts)} chart containers for {rep.n_charts} charts"
    undrawn = [c for c in rep.charts if not c["drawn"]]
    assert not undrawn, f"charts not drawn: {undrawn}; {rep.problems}"
    unfit = [c for c in rep.charts if not c["fits"]]
    assert not unfit, f"charts wider than their column at {width} px: {unfit}"


@pytest.mark.parametrize("doc,width", _params("controls"))
def test_controls_redraw(doc, width, report):
    rep = report(doc, width)
    ranges = [c for c in rep.controls if True]
    assert len(ranges) >= rep.n_bound_ranges, f"{len(ranges)} controls driven for {rep.n_bound_ranges} range bindings"
    dead = [name for name, ok in rep.controls if not ok]
    assert not dead, "changing these did not redraw their chart: " + ", ".join(dead)


@pytest.mark.parametrize("doc,width", _params("widgets"))
def test_widgets_render(doc, width, report):
    rep = report(doc, width)
    assert rep.widgets_seen >= rep.n_widgets, f"{rep.widgets_seen} widget views for {rep.n_widgets}; {rep.problems}"
    if rep.sliders_expected:
        assert rep.sliders_seen >= 1, "slider models in the page state, but no .widget-slider rendered"


@pytest.mark.parametrize("doc,width", _params("math"))
def test_math_typeset(doc, width, report):
    rep = report(doc, width)
    if rep.has_math:
        assert rep.math_typeset, f"math not typeset by MathJax; {rep.problems}"
    if width >= 1000:
        assert not rep.wide_equations, (
            f"display equations wider than the text column at {width} px (cut off / need a scroll): "
            f"{rep.wide_equations}")


def _chart_specs(source: str) -> list[dict]:
    """The Vega-Lite specs of a built page's charts: the JSON argument of each ``vegaEmbed("#kv-vega-...", ...)``."""
    import json

    dec = json.JSONDecoder()
    specs = []
    for m in re.finditer(r'vegaEmbed\("#kv-vega-[0-9a-f]+", ', source):
        spec, _ = dec.raw_decode(source, m.end())
        specs.append(spec)
    return specs


def _layers(spec: dict):
    yield spec
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for sub in spec.get(key, []):
            yield from _layers(sub)
    if "spec" in spec:
        yield from _layers(spec["spec"])


def _mark(layer: dict) -> str:
    m = layer.get("mark")
    return m.get("type", "") if isinstance(m, dict) else (m or "")


def _probes(spec: dict):
    """(param name, its initial value, probe rule layer) for every vertical rule (x encoded) whose position is
    a range-bound param (a horizontal slider-driven rule, such as a card's memory, is a limit, not a probe)."""
    params = {p["name"]: p for p in spec.get("params", []) if (p.get("bind") or {}).get("input") == "range"}
    for layer in _layers(spec):
        if _mark(layer) != "rule" or "x" not in (layer.get("encoding") or {}):
            continue
        for t in layer.get("transform", []):
            if t.get("calculate") in params:
                yield t["calculate"], params[t["calculate"]].get("value"), layer


def _constant_rules(spec: dict) -> list[float]:
    """Positions of rules drawn from constant inline data (a refusal line, a card's memory)."""
    out = []
    datasets = spec.get("datasets", {})
    for layer in _layers(spec):
        if _mark(layer) != "rule" or layer.get("transform"):
            continue
        data = layer.get("data", {})
        rows = data.get("values") or datasets.get(data.get("name"), [])
        for axis in ("x", "y"):
            field = ((layer.get("encoding") or {}).get(axis) or {}).get("field")
            out += [r[field] for r in rows if isinstance(r, dict) and isinstance(r.get(field), (int, float))]
    return out


@pytest.mark.parametrize("doc,width", _params("probes", widths=(1280,)))
def test_probe_readouts(doc, width, book_html):
    page_file = book_html.html / f"{doc}.html"
    if not page_file.is_file():
        pytest.skip(f"{doc} is not in the built book")
    problems = []
    for i, spec in enumerate(_chart_specs(page_file.read_text(errors="replace"))):
        for name, start, _rule in _probes(spec):
            texts = [l for l in _layers(spec) if _mark(l) == "text" and name in json.dumps(l)]
            if not texts:
                problems.append(f"chart #{i}: the probe line moved by '{name}' has no readout (a text mark using it)")
            if start in _constant_rules(spec):
                problems.append(f"chart #{i}: the probe '{name}' starts at {start}, on top of another rule of the chart")
    assert not problems, "; ".join(problems)


# The intro and the model chapters: their tables are the book's own (kvmath.book.tables), made to fit.
TABLE_PAGES = [d for d in DOCS if d == "book/intro" or d.startswith("notebooks/generated/")]


@pytest.mark.parametrize("doc,width", [p for p in _params("tables") if p.values[0] in TABLE_PAGES])
def test_tables_fit(doc, width, report):
    rep = report(doc, width)
    wide = [t for t in rep.tables if t["scrolls"] or t["width"] > t["col"] + 1]
    assert not wide, f"{doc}@{width}: tables wider than the {rep.tables[0]['col']} px column: {wide[:5]}"
    assert not [t for t in rep.tables if t["emptyHeader"]], f"{doc}: a table with an empty header row"


@pytest.mark.parametrize("doc,width", [p for p in _params("first_screen") if p.values[0] in TABLE_PAGES])
def test_first_screen_answers(doc, width, report):
    """Issue 24: the intro and every model chapter answer "what fits on my card" in their first screen, at 1280 and
    at 390 px (a 900 px tall window): the table of verdicts per card (it names the RTX 3090, the 24 GB class)
    starts inside it."""
    ans = report(doc, width).first_answer
    assert ans.get("table") is not None, f"{doc}: no table naming the RTX 3090"
    assert ans["table"] < ans["height"], f"{doc}: the card table starts at {ans['table']} px, below the first screen"


def _sentences(text: str) -> set[str]:
    """Prose sentences of a page, digits masked (a figure that differs does not make a sentence differ)."""
    out = set()
    for line in text.splitlines():
        for s in re.split(r"(?<=[.!?])\s+", line.strip()):
            s = re.sub(r"\d[\d,.]*", "#", s).strip()
            if len(s.split()) >= 6 and s[-1:] in ".!?:":
                out.add(s)
    return out


def _kind(doc: str) -> frozenset:
    import kvmath
    from kvmath.book.prose import kinds

    return frozenset(kinds(kvmath.load_architecture(doc.rsplit("/", 1)[1])) - {"moe", "vision", "mtp"})


MAX_SHARED = 0.5  # issue 24: two chapters of different architecture kinds share at most half of their sentences
# pairs of chapters of different architecture kinds (two dense chapters share their explanations by design)
CHAPTER_PAIRS = [(a, b) for i, a in enumerate(TABLE_PAGES[1:]) for b in TABLE_PAGES[1:][i + 1:]
                 if _kind(a) != _kind(b)]


@pytest.mark.parametrize("a,b", CHAPTER_PAIRS, ids=[f"{a.rsplit('/', 1)[1]}~{b.rsplit('/', 1)[1]}" for a, b in CHAPTER_PAIRS])
def test_chapters_differ(a, b, report):
    """Issue 24: the chapters were near-copies (96-98 % of sentences shared, digits masked). The explanations every
    chapter repeated are on one page (book/reading_a_chapter.md) that each section links to, and what stays is
    built from the model's config and figures, so two chapters of different kinds share at most MAX_SHARED of the
    shorter page's sentences."""
    sa, sb = _sentences(report(a, 1280).text), _sentences(report(b, 1280).text)
    assert len(sa) >= 10 and len(sb) >= 10, (len(sa), len(sb))  # a page that lost its prose would pass trivially
    shared = len(sa & sb) / max(1, min(len(sa), len(sb)))
    assert shared <= MAX_SHARED, (f"{a} and {b} share {shared:.0%} of their sentences (at most {MAX_SHARED:.0%}): "
                                  + "; ".join(sorted(sa & sb))[:600])
