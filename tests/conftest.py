"""Shared fixtures.

``built_book`` builds the whole book once per test session, the way ``make book`` does
(``jb build . -W -n --keep-going`` with ``KVMATH_BOOK_BUILD=1``, every chapter executed, kvmath's wheel
beside Pyodide for the pages' calculator),
but into a temporary ``--path-output`` so the working tree's ``_build`` is left alone.
Tests that need it get a :class:`BuiltBook` (``.html`` is the HTML directory).
"""

from __future__ import annotations

import dataclasses
import os

# Nothing in the tests reaches the network: a Hub id kvmath does not know is answered from the HF cache
# (tests/test_hub.py serves its own Hub on 127.0.0.1 and unsets this)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the venv's bin/ (make test runs .venv/bin/python)
BUILD_TIMEOUT_S = 1800


@dataclasses.dataclass
class BuiltBook:
    html: Path  # <out>/_build/html
    log: str  # combined stdout+stderr of jb build
    returncode: int
    seconds: float

    @property
    def build_dir(self) -> Path:
        return self.html.parent


def toc_docnames() -> list[str]:
    """Docnames of every page in _toc.yml (root first), e.g. ``"notebooks/_demo"``."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                names.append(e["file"])
            walk(e.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return names


def book_env() -> dict[str, str]:
    """Environment for book builds: venv tools first, the venv's python3 kernelspec."""
    env = dict(os.environ)
    env["KVMATH_BOOK_BUILD"] = "1"
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def _log_tail(log: str, html: Path, lines: int = 80) -> str:
    problems = [l for l in log.splitlines() if "WARNING:" in l or "ERROR" in l or "Error" in l]
    tail = "problems:\n" + "\n".join(problems[:40]) + "\n----- log tail -----\n"
    tail += "\n".join(log.splitlines()[-lines:])
    reports = sorted((html / "reports").rglob("*.err.log")) if (html / "reports").is_dir() else []
    for r in reports:
        tail += f"\n----- {r.relative_to(html)} -----\n" + r.read_text(errors="replace")[-4000:]
    return tail


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> BuiltBook:
    jb = BIN / "jb"
    if not jb.exists():
        pytest.fail(f"{jb} not found: run the tests with the venv's python (make test)")
    env = book_env()
    assets = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "book_assets.py")],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    if assets.returncode != 0:
        pytest.fail(f"tools/book_assets.py failed:\n{assets.stdout}\n{assets.stderr}")

    chapters = subprocess.run(
        [sys.executable, "-m", "kvmath.book.model_chapter", "--book"], cwd=ROOT, env=env, capture_output=True, text=True,
    )
    if chapters.returncode != 0:
        pytest.fail(f"python -m kvmath.book.model_chapter --book failed:\n{chapters.stdout}\n{chapters.stderr}")

    # kvmath's wheel beside Pyodide, as `make book` writes it (the chapters' calculator panels install it in the page)
    sys.path.insert(0, str(ROOT / "tools"))
    import bench_page

    bench_page.build_wheel(ROOT / "book" / "assets" / "pyodide" / "kvmath.whl")

    out = tmp_path_factory.mktemp("book")
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(jb), "build", ".", "-W", "-n", "--keep-going", "--path-output", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
    )
    seconds = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    (out / "build.log").write_text(log)
    html = out / "_build" / "html"
    if proc.returncode != 0:
        pytest.fail(
            f"jb build failed (exit {proc.returncode}, {seconds:.0f} s); log in {out}/build.log, tail:\n"
            + _log_tail(log, html),
            pytrace=False,
        )
    print(f"\n[built_book] {html} in {seconds:.1f} s")
    return BuiltBook(html=html, log=log, returncode=proc.returncode, seconds=seconds)


@pytest.fixture(scope="session")
def book_html(request: pytest.FixtureRequest) -> BuiltBook:
    """The built book for tests that only read or serve the HTML (pages, workflow checks).

    ``KVMATH_PREBUILT_BOOK=<dir>/_build/html`` reuses a build made with the README's command
    (so page checks can be rerun without executing every chapter again); otherwise this is
    :func:`built_book`, the session's own build.
    """
    pre = os.environ.get("KVMATH_PREBUILT_BOOK")
    if pre:
        html = Path(pre).resolve()
        if not (html / "index.html").is_file():
            pytest.fail(f"KVMATH_PREBUILT_BOOK={pre}: no index.html there", pytrace=False)
        return BuiltBook(html=html, log="", returncode=0, seconds=0.0)
    return request.getfixturevalue("built_book")


sys.path.insert(0, str(ROOT / "tools"))
import bench_page  # noqa: E402  (tools/bench_page.py: Chromium's path and the offline flags)

CHROMIUM = os.environ.get("KVMATH_CHROMIUM", bench_page.CHROMIUM)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every page test (tests/test_pages.py, test_pagecalc.py, test_pagecalc_book.py),
    launched with bench_page.CHROMIUM_ARGS: without the background-networking flags Chromium keeps trying
    Google's hosts, which a closed network refuses. ``KVMATH_CHROMIUM`` names another binary."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"{CHROMIUM} not found: apt-get update && apt-get install -y chromium "
                    "(make test and .ci/run do this)", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=bench_page.CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
