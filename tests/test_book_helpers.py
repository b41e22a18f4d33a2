"""kvmath.book: the chapter preamble (offline Altair renderer) and glue with raw values."""

from __future__ import annotations

import sys

import nbformat
import pytest

from conftest import ROOT, book_env
from kvmath import book


def test_import_is_light():
    import subprocess

    code = "import sys, kvmath.book; print(sorted(m for m in ('altair','pandas','ipywidgets','myst_nb') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "value, fmt, text",
    [
        (327680, None, "327,680"),
        (1.5, None, "1.50"),
        (2**30 * 3 / 2**30, ",.1f", "3.0"),
        (0.123456, "{:.3f} GiB", "0.123 GiB"),
        (131072, lambda v: f"{v // 1024}K", "128K"),
    ],
)
def test_format_value(value, fmt, text):
    assert book.format_value(value, fmt) == text


def test_glue_rejects_non_numbers_and_raw_suffix():
    with pytest.raises(TypeError):
        book.glue("model_name", "llama")
    with pytest.raises(ValueError):
        book.glue("x__raw", 1)


def test_setup_book_offline_renderer(monkeypatch):
    import altair as alt

    before = alt.renderers.active
    try:
        monkeypatch.setenv(book.BUILD_ENV, "1")
        book.setup_book()
        assert alt.renderers.active == book.RENDERER
        chart = alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q")
        bundle = chart._repr_mimebundle_()
        html = (bundle[0] if isinstance(bundle, tuple) else bundle)["text/html"]
        assert 'vegaEmbed("#kv-vega-' in html and '"actions": false' in html
        assert "cdn.jsdelivr" not in html

        alt.renderers.enable("default")
        monkeypatch.delenv(book.BUILD_ENV)
        book.setup_book()
        # live (JupyterLab): JupyterChart with Vega from vl-convert, no CDN
        assert alt.renderers.active == "jupyter" and alt.renderers.options.get("offline") is True
    finally:
        alt.renderers.enable(before)


def test_glue_raw_values_roundtrip_through_a_kernel(monkeypatch, tmp_path):
    """Executed like a chapter (papermill, python3 kernel); read_glue gives text and numbers."""
    import papermill as pm

    for k, v in book_env().items():
        monkeypatch.setenv(k, v)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("n_layers = 2", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "import numpy as np\n"
            "from kvmath.book import glue, setup_book\n"
            "setup_book()\n"
            "glue('kv_bytes_per_token', n_layers * 163840)\n"
            "glue('kv_cache_gib', np.float64(1.5), fmt='{:.2f}')\n"
        ),
    ]
    out = pm.execute_notebook(
        nb, str(tmp_path / "out.ipynb"), parameters={"n_layers": 80}, kernel_name="python3",
        cwd=str(ROOT), progress_bar=False, execution_timeout=120,
    )
    g = book.read_glue(out)
    assert g["kv_bytes_per_token"] == "13,107,200"
    assert g["kv_bytes_per_token__raw"] == 80 * 163840 and isinstance(g["kv_bytes_per_token__raw"], int)
    assert g["kv_cache_gib"] == "1.50"
    assert g["kv_cache_gib__raw"] == 1.5
