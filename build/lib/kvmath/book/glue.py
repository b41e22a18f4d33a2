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
* ``glue(name, value)`` stores the *formatted text* under ``name`` (what the prose shows) and
  the *raw number* under ``name + "__raw"`` (what tests compare).

Numbers in the prose: ``{eval}`glued.name``` (one convention, book and JupyterLab)
-------------------------------------------------------------------------------------
A chapter's Markdown writes a glued value as ``{eval}`glued.name```:

* **in the built book** the ``eval`` role of this module's Sphinx extension (:func:`setup`, listed
  in ``_config.yml`` ``sphinx.extra_extensions``) pastes the glue key ``name`` from the executed
  notebook, exactly as ``{glue:text}`name``` does (myst-nb 1.4's own ``eval`` role needs a live
  kernel, ``nb_execution_mode: inline``, which the pre-executed model chapters do not have; any
  other ``{eval}`` expression is still handed to it);
* **in JupyterLab** jupyterlab-myst 2.7 evaluates the inline expression ``glued.name`` in the
  kernel when the Markdown cell is run, and shows a ``str`` result without its quotes: ``glued``
  (:data:`glued`) holds the same formatted text for every glued key, written by :func:`glue` and, for
  text glued with ``myst_nb.glue`` directly, by the display hook :func:`setup_book` installs.

``{glue:text}`name``` still builds (its value shows only in the book, not in the Lab); use it only
with a format spec (``{glue:text}`name:.1f```), which the ``glued.name`` form does not take.
"""

from __future__ import annotations

import ast
import json
import numbers
import os
import re
import uuid
from typing import Any, Callable

#: Name of the offline Altair renderer registered by :func:`setup_book`.
RENDERER = "kvmath_offline"

#: Suffix of the glue key that holds the raw (unformatted) number.
RAW_SUFFIX = "__raw"

#: Environment variable set by ``make book`` / the tests for static-HTML builds.
BUILD_ENV = "KVMATH_BOOK_BUILD"

#: Name of the kernel variable the prose's ``{eval}`glued.<key>``` expressions read (module docstring).
GLUED_NAME = "glued"
_EVAL_KEY = re.compile(rf"^\s*{GLUED_NAME}\.([A-Za-z_][A-Za-z0-9_]*)\s*$")


class Glued:
    """The formatted text of every glued key, as attributes: ``glued.n_layers`` -> ``"48"``.

    What jupyterlab-myst shows for ``{eval}`glued.n_layers``` in JupyterLab (a ``str``, so it is
    shown without quotes); the book's build pastes the glue key instead (:func:`setup`). An
    unknown key raises ``AttributeError`` naming it, which jupyterlab-myst shows in place.
    """

    def __getattr__(self, key: str) -> str:
        if key.startswith("__"):
            raise AttributeError(key)
        raise AttributeError(f"nothing glued under {key!r} yet (run the cell that glues it)")

    def __repr__(self) -> str:
        return f"<glued: {len(vars(self))} keys>"


#: The chapter's glued values as text (one per kernel: chapters import it from ``kvmath.book``).
glued = Glued()


def book_build() -> bool:
    """True while ``make book`` / the tests build the static book (``KVMATH_BOOK_BUILD=1``); False in
    JupyterLab, where a chapter's live cell draws its figure (a static page cannot redraw it)."""
    return os.environ.get(BUILD_ENV) == "1"


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
    * Otherwise (JupyterLab, plain papermill runs): Altair's ``"jupyter"`` renderer with
      ``offline=True``: each chart is a ``JupyterChart`` widget (anywidget) whose Vega, Vega-Lite
      and vega-embed come from the installed ``vl-convert-python`` wheel, so JupyterLab 4.6 draws
      it with no CDN request (Altair 6's default renderer emits Vega-Lite v6, which JupyterLab's
      own Vega renderer does not know, and falls back to HTML loading vega@6 from jsdelivr).
    * Always: ``alt.data_transformers.disable_max_rows()`` (charts are built from small
      tables computed by kvmath; the 5000-row guard only gets in the way), and, in a kernel, a
      display hook that copies every value glued with ``myst_nb.glue`` into :data:`glued` as text.

    Returns nothing.
    """
    import altair as alt

    alt.data_transformers.disable_max_rows()
    if os.environ.get(BUILD_ENV) == "1":
        if RENDERER not in alt.renderers.names():
            alt.renderers.register(RENDERER, _offline_renderer)
        alt.renderers.enable(RENDERER)
    else:
        alt.renderers.enable("jupyter", offline=True)
    _install_glue_hook()


def _glued_text(data: dict, prefix: str) -> str | None:
    """The text ``{glue:text}`` pastes for a glued display bundle (a ``str`` literal unquoted)."""
    text = data.get(prefix + "text/plain")
    if text is None:
        return None
    if isinstance(text, list):
        text = "".join(text)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, str) else text


def _glue_hook(msg: dict) -> dict:
    """ipykernel display-publisher hook: record ``myst_nb.glue`` outputs in :data:`glued`."""
    try:
        content = msg.get("content", {})
        meta = (content.get("metadata") or {}).get("scrapbook")
        if meta and "name" in meta:
            text = _glued_text(content.get("data") or {}, meta.get("mime_prefix", ""))
            if text is not None:
                setattr(glued, meta["name"], text)
    except Exception:  # noqa: BLE001 - a display hook must never stop an output
        pass
    return msg


def _install_glue_hook() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    pub = getattr(shell, "display_pub", None)
    if pub is None or not hasattr(pub, "register_hook"):
        return  # not an ipykernel kernel: glue() still fills `glued` itself
    hooks = getattr(pub, "_hooks", [])
    if not any(getattr(h, "__name__", "") == _glue_hook.__name__ for h in hooks):
        pub.register_hook(_glue_hook)


def setup(app: Any) -> dict:
    """Sphinx extension (``_config.yml`` ``sphinx.extra_extensions: [kvmath.book.glue]``): the
    ``eval`` role pastes ``{eval}`glued.<key>``` from the notebook's glue data, as
    ``{glue:text}`<key>``` does; every other ``{eval}`` goes to myst-nb 1.4's own role (which
    evaluates it in a live kernel, ``nb_execution_mode: inline`` only). Registered after myst-nb
    loads, over its ``eval`` role."""
    app.setup_extension("myst_nb")
    from myst_nb.ext.eval import EvalRoleAny
    from myst_nb.ext.glue.roles import PasteTextRole

    paste, evaluate = PasteTextRole(), EvalRoleAny()

    def eval_role(name, rawtext, text, lineno, inliner, options=None, content=()):
        m = _EVAL_KEY.match(text)
        if m:
            return paste("glue:text", rawtext, m.group(1), lineno, inliner, options or {}, content)
        return evaluate(name, rawtext, text, lineno, inliner, options or {}, content)

    app.add_role("eval", eval_role, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


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

    * ``name``: the formatted text (see :func:`format_value`), e.g. ``"327,680"``, also set as
      ``glued.name``. Use it in prose as ``{eval}`glued.name``` (module docstring).
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
    setattr(glued, name, text)
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
