#!/usr/bin/env python3
"""The calculator in the page: time until it is ready, and the bytes it adds to the site.

Builds a minimal site (one page with a model chapter's panel and the paste panel, plus the assets:
Pyodide from tools/book_assets.py and a kvmath wheel built from the checkout), serves it on
127.0.0.1 and opens it in headless Chromium (/usr/bin/chromium) with every request to another host
refused, in a fresh browser context each run (no cache). Prints, per run: the bytes fetched before the
first question (target: none of the calculator's), the time from the first ``kvmathQuery`` call to
Python + kvmath ready (target: 10 s on a desktop), the first and a second answer; then the bytes the
calculator adds to the site (target: at most 15 MB) and those fetched on first use.

tests/test_pagecalc.py builds its site with :func:`build_site` too. Usage: ``python tools/bench_page.py
[--runs N]``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
MODEL = "qwen3.6-27b"
PAGE = """<!doctype html>
<html lang="en" data-content_root="./"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>kvmath calculator</title>
<style>body {{ font-family: sans-serif; margin: 0 auto; max-width: 60rem; padding: 0 0.75rem; }}</style></head>
<body><main><h1>Calculator</h1>
<section id="model">{panel}</section>
<section id="paste">{paste}</section>
</main></body></html>
"""


def build_wheel(dest: Path) -> Path:
    """kvmath's wheel, built from a copy of the checkout (setuptools writes build/ next to its source)
    by ``pip wheel --no-deps --no-build-isolation``, as ``make book`` builds it. Returns its path."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        src.mkdir()
        for name in ("kvmath", "data"):
            shutil.copytree(ROOT / name, src / name, ignore=skip)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, src / name)
        out = Path(tmp) / "dist"
        r = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "-q", "--no-deps",
                            "--no-build-isolation", "-w", str(out), str(src)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"pip wheel failed:\n{r.stdout}\n{r.stderr}")
        (wheel,) = out.glob("kvmath-*-py3-none-any.whl")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(wheel, dest)
    return dest


def build_site(site: Path, model: str = MODEL) -> Path:
    """Write the minimal site into ``site``: ``index.html`` and ``_static/pyodide/`` (Pyodide's files,
    notice and licences, ``kvmath.whl``). Returns the page's path."""
    import book_assets

    from kvmath.book.calculator import panel, paste_panel

    static = site / "_static" / "pyodide"
    book_assets.write_pyodide(static)
    build_wheel(static / "kvmath.whl")
    page = site / "index.html"
    page.write_text(PAGE.format(panel=panel(model)._repr_html_(), paste=paste_panel()._repr_html_()), encoding="utf-8")
    return page


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_GET(self):
        if self.path == "/favicon.ico":
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()


@contextmanager
def serve(folder: Path):
    """Serve ``folder`` on 127.0.0.1 (a free port); yields the base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def offline_page(browser, width: int = 1280):
    """A page in a fresh context at ``width`` px whose requests to any host but 127.0.0.1 are refused.
    Returns (context, page, log) with log = {"external": [...], "errors": [...], "responses": [(url, bytes)]}."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    log = {"external": [], "errors": [], "responses": []}

    def route(r):
        if urlsplit(r.request.url).hostname == "127.0.0.1":
            r.continue_()
        else:
            log["external"].append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("pageerror", lambda e: log["errors"].append(f"pageerror: {e}"))
    page.on("console", lambda m: log["errors"].append(f"console.error: {m.text}") if m.type == "error" else None)

    def response(resp):
        try:
            n = int(resp.headers.get("content-length", "0"))
        except ValueError:
            n = 0
        log["responses"].append((resp.url, resp.status, n))

    page.on("response", response)
    return context, page, log


def _site_bytes(site: Path) -> dict:
    static = site / "_static" / "pyodide"
    files = {p.name: p.stat().st_size for p in sorted(static.iterdir())}
    page = (site / "index.html").read_text(encoding="utf-8")
    from kvmath.book.calculator import _script

    return {"files": files, "static": sum(files.values()), "per_page_script": len(_script().encode())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        t = time.perf_counter()
        build_site(site)
        print(f"bench_page: minimal site built in {time.perf_counter() - t:.1f} s (Pyodide assets + kvmath wheel)")
        sizes = _site_bytes(site)
        query = ["kvmath-fit", "--model", MODEL, "--card", "rtx3090", "--tp", "2", "--json"]
        with serve(site) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                for i in range(args.runs):
                    context, page, log = offline_page(browser)
                    page.goto(base + "/index.html")
                    page.wait_for_load_state("load")
                    before = [r for r in log["responses"] if "/_static/pyodide/" in r[0]]
                    t0 = time.perf_counter()
                    r = page.evaluate("""async (q) => {
                      const t0 = performance.now(); const a = await window.kvmathQuery(q); const t1 = performance.now();
                      const b = await window.kvmathQuery(q); const t2 = performance.now();
                      return {ready: window.kvmathCalc.readyMs, first: t1 - t0, second: t2 - t1, code: a.exit_code, same: a.stdout === b.stdout};
                    }""", query)
                    wall = time.perf_counter() - t0
                    used = [x for x in log["responses"] if "/_static/pyodide/" in x[0]]
                    print(f"bench_page: run {i}: before first use {len(before)} calculator requests; ready "
                          f"{r['ready'] / 1000:.2f} s (target 10 s); first answer {r['first'] / 1000:.2f} s "
                          f"(wall {wall:.2f} s), second {r['second']:.0f} ms; exit {r['code']}; "
                          f"fetched on first use {sum(x[2] for x in used):,} B in {len(used)} files; "
                          f"outside requests {len(log['external'])}; errors {len(log['errors'])}")
                    context.close()
            finally:
                browser.close()
    print(f"bench_page: bytes added to the site: {sizes['static']:,} B in _static/pyodide/ (target at most "
          f"15,000,000) + {sizes['per_page_script']:,} B of script and style inline in each page with a panel")
    for name, n in sizes["files"].items():
        print(f"bench_page:   {name:24s} {n:>12,} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
