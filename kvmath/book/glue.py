"""Helpers for the book's chapters (the MyST notebooks under ``notebooks/``).

Every chapter starts with a hidden preamble cell::

    ```{code-cell} ipython3
    :tags: [remove-cell]
    from kvmath.book import setup_book, glue
    setup_book()
    ```

Only the standard library is imported at module level, so ``import kvmath`` stays light;
Altair and myst-nb are imported inside the functions that need them.

Units conventions for glued numbers
-----------------------------------
* kvmath computes in exact integer **bytes**; convert only for display (``kvmath.units``).
* A glue name ends with its unit, and the value glued is in that unit:
  ``kv_bytes_per_token`` (int, bytes), ``kv_cache_gib`` (float, GiB = 2**30 bytes, the unit
  vLLM logs), ``kv_cache_mib`` (MiB = 2**20, llama.cpp), ``vram_gb`` (GB = 10**9, decimal,
  as card makers quote), ``tokens`` (int, count). Binary and decimal units are never mixed
  in one name.
* ``glue(name, value)`` stores the *formatted text* under ``name`` (what the prose shows via
  ``{glue:text}`name```) and the *raw number* under ``name + "__raw"`` (what tests compare).
"""

from __future__ import annotations

import json
import numbers
import os
import uuid
from typing import Any, Callable

#: Name of the offline Altair renderer registered by :func:`setup_book`.
RENDERER = "kvmath_offline"

#: Suffix of the glue key that holds the raw (unformatted) number.
RAW_SUFFIX = "__raw"

#: Environment variable set by ``make book`` / the tests for static-HTML builds.
BUILD_ENV = "KVMATH_BOOK_BUILD"


def _offline_renderer(spec: dict, **metadata: Any) -> dict:
    """Altair renderer for the static book: a div plus a ``vegaEmbed(...)`` call.

    ``vegaEmbed`` is a global defined by ``_static/vega-embed-bundle.js`` (written by
    ``tools/book_assets.py`` and listed in ``html_js_files``), so no CDN is needed.
    """
    div = "kv-vega-" + uuid.uuid4().hex
    # "</" inside a <script> would end it early; JSON allows the escaped form.
    spec_json = json.dumps(spec).replace("</", "<\\/")
    opts = json.dumps({"mode": "vega-lite", "actions": False})
    html = (
        f'<div id="{div}" class="kv-vega"></div>\n'
        f'<script type="text/javascript">vegaEmbed("#{div}", {spec_json}, {opts})'
        ".catch(console.error);</script>"
    )
    return {"text/html": html}


def setup_book() -> None:
    """Prepare a chapter's kernel for Altair output; call once in the hidden preamble.

    * With ``KVMATH_BOOK_BUILD=1`` (``make book``, ``make test``): registers and enables
      the offline renderer ``"kvmath_offline"``: each chart becomes
      ``<div>`` + ``vegaEmbed(...)`` with actions off, using the vendored Vega bundle.
    * Otherwise (JupyterLab, plain papermill runs): Altair's default renderer is left
      as it is.
    * Always: ``alt.data_transformers.disable_max_rows()`` (charts are built from small
      tables computed by kvmath; the 5000-row guard only gets in the way).

    Returns nothing.
    """
    import altair as alt

    alt.data_transformers.disable_max_rows()
    if os.environ.get(BUILD_ENV) == "1":
        if RENDERER not in alt.renderers.names():
            alt.renderers.register(RENDERER, _offline_renderer)
        alt.renderers.enable(RENDERER)


def _default_format(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    return f"{float(value):,.2f}"


def format_value(value: Any, fmt: str | Callable[[Any], str] | None = None) -> str:
    """Format ``value`` as :func:`glue` does.

    ``fmt`` may be ``None`` (ints with thousands separators ``131,072``, other numbers
    ``,.2f``), a format spec (``",.1f"``, ``".3e"``), a ``str.format`` template
    containing ``{}`` (``"{:,.2f} GiB"``), or a callable returning a string.
    """
    if fmt is None:
        return _default_format(value)
    if callable(fmt):
        return str(fmt(value))
    if "{" in fmt:
        return fmt.format(value)
    return format(value, fmt)


def _plain_number(value: Any) -> int | float | bool:
    """numpy scalars -> Python numbers (numpy 2 reprs ``np.float64(1.5)``)."""
    if hasattr(value, "item") and not isinstance(value, (int, float)):
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise TypeError(
            f"kvmath.book.glue expects a real number, got {type(value).__name__}; "
            "use myst_nb.glue directly for text, tables and figures"
        )
    if isinstance(value, numbers.Integral):
        return value if isinstance(value, bool) else int(value)
    return float(value)


def glue(name: str, value: Any, fmt: str | Callable[[Any], str] | None = None) -> str:
    """Glue a number for the prose, and its raw value for the tests.

    Two keys are written with ``myst_nb.glue(..., display=False)`` (nothing is shown in
    the cell's output):

    * ``name``: the formatted text (see :func:`format_value`), e.g. ``"327,680"``.
      Use it in prose as ``{glue:text}`name```.
    * ``name + "__raw"``: the number itself (``int`` or ``float``, numpy scalars are
      converted), e.g. ``327680``.  Tests read it back from the executed notebook
      (``read_glue``) and compare numbers, not strings.

    The value must be in the unit that ``name`` ends with (module docstring).
    Returns the formatted text.
    """
    from myst_nb import glue as _glue

    if name.endswith(RAW_SUFFIX):
        raise ValueError(f"glue name {name!r} must not end with {RAW_SUFFIX!r}")
    raw = _plain_number(value)
    text = format_value(raw, fmt)
    _glue(name, text, display=False)
    _glue(name + RAW_SUFFIX, raw, display=False)
    return text


def read_glue(nb: Any) -> dict[str, Any]:
    """Glued values of an executed notebook (``nbformat`` node or its dict form).

    Returns ``{name: value}``: text keys as the glued string, ``__raw`` keys parsed back
    to ``int``/``float``; other glued objects as their ``text/plain`` repr.
    myst-nb's ``glue(display=False)`` writes a ``display_data`` output whose
    ``metadata.scrapbook`` holds ``name`` and ``mime_prefix``.
    """
    import ast

    out: dict[str, Any] = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            text = o["data"].get(meta.get("mime_prefix", "") + "text/plain")
            if text is None:
                continue
            if isinstance(text, list):
                text = "".join(text)
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            out[meta["name"]] = value
    return out
