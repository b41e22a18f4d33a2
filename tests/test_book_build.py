"""The book builds with `jb build . -W -n --keep-going` and every chapter executes."""

from __future__ import annotations

import re
import sys

import pytest

from conftest import ROOT, book_env, toc_docnames

# Sphinx warnings look like "path:line: WARNING: ..." or "WARNING: ..." at line start.
# (Kernel stderr such as "[IPKernelApp] WARNING | ..." is not a Sphinx warning.)
SPHINX_WARNING = re.compile(r"(^|: )(WARNING|ERROR|CRITICAL): ", re.MULTILINE)


def test_build_succeeded_without_warnings(built_book):
    assert built_book.returncode == 0
    assert "build succeeded." in built_book.log
    assert "warning" not in built_book.log.split("build succeeded", 1)[1].splitlines()[0]
    warnings = [m.group(0) for m in SPHINX_WARNING.finditer(built_book.log)]
    lines = [l for l in built_book.log.splitlines() if SPHINX_WARNING.search(l)]
    assert not warnings, "Sphinx warnings:\n" + "\n".join(lines)


def test_every_toc_page_built(built_book):
    for doc in toc_docnames():
        assert (built_book.html / f"{doc}.html").is_file(), doc


def test_every_notebook_executed(built_book):
    """Every chapter ran: the MyST chapters in force mode (myst-nb logs one line per executed notebook), the
    model chapters before the build (``model_chapter --book``), every code cell of them with its output."""
    import nbformat

    notebooks = [f"{d}.md" for d in toc_docnames()
                 if (ROOT / f"{d}.md").exists() and (ROOT / f"{d}.md").read_text().startswith("---\njupytext:")]
    assert len(notebooks) >= 6
    for doc in notebooks:
        assert re.search(rf"{re.escape(doc)}: Executed notebook in [\d.]+ seconds", built_book.log), doc
    generated = [ROOT / f"{d}.ipynb" for d in toc_docnames() if d.startswith("notebooks/generated/")]
    assert len(generated) >= 22  # one per reference config (data/configs)
    for path in generated:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code), path
        assert not [o for c in code for o in c.outputs if o.output_type == "error"], path
        assert f"{path}: Excluded from execution" in built_book.log, path  # rendered as executed, not re-run
    assert not (built_book.html / "reports").exists(), "execution reports (tracebacks) were written"


def test_every_reference_config_has_a_chapter():
    import json

    from kvmath.book.model_chapter import book_chapters

    sources = {json.loads(p.read_text())["source"].split(";")[0].split(" (")[0]
               for p in (ROOT / "data" / "models").glob("*.json")}
    configs = {f"data/configs/{p.name}" for p in (ROOT / "data" / "configs").glob("*.json")}
    assert configs <= sources, configs - sources
    assert {ch["model"] for ch in book_chapters()} == {p.stem for p in (ROOT / "data" / "models").glob("*.json")}


def test_published_model_pages_show_kvmath_numbers(built_book):
    """The HTML of each model chapter shows, as glued text, kvmath's figures for that model."""
    import kvmath
    from kvmath.book.model_chapter import book_chapters

    chapters = book_chapters()
    assert {"llama-3.1-8b", "gpt-oss-20b"} <= {ch["model"] for ch in chapters}  # onboarded from configs
    from kvmath.book import frames as report

    for ch in chapters:
        html = (built_book.html / ch["file"]).with_suffix(".html").read_text()
        arch = kvmath.load_architecture(ch["model"])
        ctx, _ = report.chapter_context(arch)  # the model's own maximum length
        flags, _ = report.vllm_chapter_flags(arch, "bf16", ctx, 2048)
        d = kvmath.derive(arch, kv_format="bf16", max_ctx=ctx, **flags)
        assert f'<span class="pasted-text">{ctx:,}</span>' in html, ch["model"]
        assert f'<span class="pasted-text">{d.bytes_per_token:,}</span>' in html, ch["model"]
        assert f'<span class="pasted-text">{d.total_bytes / kvmath.GiB:,.2f}</span>' in html, ch["model"]
        assert f"<h1>{ch['title']}" in html


def test_python3_kernel_is_the_venv(monkeypatch):
    """The `python3` kernel the build and papermill use resolves to this venv's python."""
    from jupyter_client.manager import KernelManager

    for k, v in book_env().items():
        monkeypatch.setenv(k, v)
    cmd = KernelManager(kernel_name="python3").format_kernel_cmd()
    assert cmd[0] == sys.executable, cmd


def test_no_external_urls_in_script_or_link_tags(built_book):
    """No <script src> / <link href> (stylesheets, preloads) point off the book."""
    bad = []
    for page in built_book.html.rglob("*.html"):
        text = page.read_text(errors="replace")
        for m in re.finditer(r'<(script|link)\b[^>]*\b(src|href)="(https?:)?//[^"]+"', text):
            if m.group(1) == "link" and not re.search(r'rel="(stylesheet|preload|modulepreload)"', m.group(0)):
                continue
            bad.append(f"{page.relative_to(built_book.html)}: {m.group(0)}")
    assert not bad, "\n".join(bad)


def test_no_file_name_is_a_web_link(book_html):
    """Issue 24: linkify made web links of file names (``http://BENCHMARKS.md``, ``http://gguf.py``); with
    ``myst_linkify_fuzzy_links: false`` only real URLs are links. No page links to a host that is a file name."""
    bad = re.compile(r'href="https?://[^"/.]+\.(?:md|py|json|txt|yml|yaml|toml|cpp|cu|h|gguf|ipynb|csv)/?"')
    found = {}
    for page in sorted(book_html.html.rglob("*.html")):
        hits = bad.findall(page.read_text(encoding="utf-8", errors="replace"))
        if hits:
            found[str(page.relative_to(book_html.html))] = hits[:3]
    assert not found, found
