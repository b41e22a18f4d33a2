#!/usr/bin/env python3
"""Write the book's vendored JavaScript into ``book/assets/`` (gitignored).

The published book must render with no internet in the reader's browser, so every
script a page needs is served from the book itself (see shared/book-toolchain.md §3):

* ``vega-embed-bundle.js`` -- Vega, Vega-Lite and vega-embed from the installed
  ``vl-convert-python`` wheel, wrapped in an IIFE so its top-level ``const _`` does
  not collide with Sphinx's ``doctools.js``.  Used by the ``kvmath_offline`` Altair
  renderer (``kvmath/book.py``).
* ``widgets/require.js`` (npm ``requirejs``), ``widgets/require-config.js`` (written
  here) and ``widgets/embed-amd.js`` plus its icon fonts (npm ``@jupyter-widgets/html-manager``, the 1.0.x line that matches
  ipywidgets 8.1) -- the static ipywidgets manager used by myst-nb.
* ``mathjax/es5/...`` (npm ``mathjax`` 3.x) -- so ``$...$`` math renders offline.
* ``widgets/mathjax2-shim.js`` (written here) -- html-manager 1.0.x typesets widget labels
  with the MathJax 2 call ``MathJax.Hub.Queue(...)``; the shim answers it with MathJax 3.
* ``pyodide/`` (npm ``pyodide``, its registry sha512 integrity checked) -- the Python runtime of the
  calculator in the page (``kvmath.book.calculator``): only the five runtime files, a notice naming
  the package, its licence and source, and the licence texts. The page loads them on first use only.
  ``pyodide/kvmath.whl`` beside them is kvmath's own wheel, written by ``make book`` (not here).
* ``kvmath-book.css`` (written here) -- the site-wide layout rules: wide tables and
  equations scroll inside their own box, long inline code wraps, charts and widgets fit
  a 390 px phone column.

The vega bundle also gets a small wrapper around ``vegaEmbed`` that fits every single or
layered chart with a fixed width to its column (``view.width(...)``), again on resize.

This module is also the book's local Sphinx extension (``sphinx.local_extensions`` in
``_config.yml``); :func:`setup` drops the duplicated / unused sphinx-thebe scripts, keeps
the pydata header's second search box out, and takes the repository URL for the launch
buttons from the CI environment when ``_config.yml`` leaves it empty.

npm packages are fetched with ``npm pack`` from the npm registry into a cache dir
(``$KVMATH_ASSET_CACHE``, default ``<repo>/.cache/book-assets``) and unpacked from
there.  The script is idempotent: when ``book/assets/.versions.json`` matches the
wanted versions and every output file exists, it does nothing (well under a second).

Usage: ``python tools/book_assets.py [--force]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "book" / "assets"
CACHE = Path(os.environ.get("KVMATH_ASSET_CACHE", ROOT / ".cache" / "book-assets"))
STAMP = ASSETS / ".versions.json"

# npm packages: name -> version.  html-manager 1.0.x is the line for ipywidgets 8.1
# (ipywidgets/_version.py: __html_manager_version__ = '^1.0.1'); 1.0.15 is verified.
NPM = {
    "requirejs": "2.3.8",
    "@jupyter-widgets/html-manager": "1.0.15",
    "mathjax": "3.2.2",
    # 0.25.1 runs CPython 3.11.3, the project's Python (3.11): argparse's messages and help, which the
    # calculator in the page prints, are those of the native command (later Pyodides are 3.12-3.14).
    "pyodide": "0.25.1",
}

# npm packages checked against the registry's integrity after fetching (npm view <name>@<version>
# dist.integrity): name -> {"version", "integrity"}. A tarball that does not match is refused.
NPM_PINNED = {
    "pyodide": {
        "version": "0.25.1",
        "integrity": "sha512-y0nJ/fLA3bxD2iZRzvVTbP2O+wp4Ewm2wThfV4HF0BytQ6hsoqTJFLNY4usLOcCVBrK8TTWqFqrmsVPzHe4rsw==",
    },
}

VEGA_BUNDLE = ASSETS / "vega-embed-bundle.js"
REQUIRE_JS = ASSETS / "widgets" / "require.js"
EMBED_AMD = ASSETS / "widgets" / "embed-amd.js"
REQUIRE_CONFIG = ASSETS / "widgets" / "require-config.js"
MATHJAX_DIR = ASSETS / "mathjax"
MATHJAX_ENTRY = MATHJAX_DIR / "es5" / "tex-mml-chtml.js"
MATHJAX_SHIM = ASSETS / "widgets" / "mathjax2-shim.js"
SITE_CSS = ASSETS / "kvmath-book.css"
PYODIDE_DIR = ASSETS / "pyodide"
# What loadPyodide() fetches from indexURL (Pyodide 0.25: the classic-script loader, the Emscripten
# module, the wasm, the standard library and the package lock); maps, consoles and typings stay out.
PYODIDE_FILES = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
PYODIDE_NOTICE = "NOTICE.txt"
REPOSITORY_LICENCE = "MPL-2.0"  # github.com/pyodide/pyodide LICENSE
LICENSES = Path(__file__).resolve().parent / "licenses"
OUTPUTS = [VEGA_BUNDLE, REQUIRE_JS, REQUIRE_CONFIG, EMBED_AMD, MATHJAX_ENTRY, MATHJAX_SHIM, SITE_CSS,
           *(PYODIDE_DIR / f for f in PYODIDE_FILES), PYODIDE_DIR / PYODIDE_NOTICE]

# Loaded before embed-amd.js on pages with widgets (nb_ipywidgets_js in _config.yml).
# html-manager 1.0.x (@jupyter-widgets/controls) does
#   if (window.MathJax !== undefined) MathJax.Hub.Queue(["Typeset", MathJax.Hub, el])
# which is the MathJax 2 API; with MathJax 3 on the page it throws "reading 'Queue'".
MATHJAX_SHIM_JS = """\
// Written by tools/book_assets.py: answer html-manager's MathJax 2 call
// MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]) with MathJax 3's typesetPromise.
(function () {
  var pending = [];
  function typeset(el) {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise && mj.typesetPromise) {
      mj.startup.promise.then(function () { return mj.typesetPromise([el]); })
        .catch(function (e) { console.warn("MathJax typeset of a widget label:", e); });
    } else {
      pending.push(el);
    }
  }
  var hub = {
    Queue: function () {
      for (var i = 0; i < arguments.length; i++) {
        var job = arguments[i];
        if (Array.isArray(job) && job[0] === "Typeset" && job[2]) typeset(job[2]);
        else if (typeof job === "function") job();
      }
    }
  };
  var mj = window.MathJax = window.MathJax || {};
  mj.Hub = hub;
  if (mj.version) return;  // MathJax 3 is already loaded
  // Still the configuration object: MathJax 3 replaces window.MathJax when it loads,
  // so hang the shim on the new object in startup.ready.
  mj.startup = mj.startup || {};
  var ready = mj.startup.ready;
  mj.startup.ready = function () {
    if (ready) ready(); else window.MathJax.startup.defaultReady();
    window.MathJax.Hub = hub;
    pending.splice(0).forEach(typeset);
  };
})();
"""

# Appended (inside the IIFE) to the vega bundle: a single or layered Vega-Lite chart with a
# fixed width is narrowed to its column when the column is narrower (phone widths), and
# widened back up to its own width, again on every resize. Other charts (facets, concats)
# are scaled by the CSS below. Every embedded view is listed in window.kvmathVegaViews.
VEGA_FIT_JS = """
// kvmath (tools/book_assets.py): fit fixed-width charts to their column.
(function () {
  var embed = window.vegaEmbed;
  if (typeof embed !== "function") return;
  var charts = [];
  window.kvmathVegaViews = [];
  function drawnWidth(el) {
    var c = el.querySelector("canvas, svg.marks");
    if (!c) return null;
    var w = c.tagName === "CANVAS" ? parseFloat(c.style.width) || c.width : parseFloat(c.getAttribute("width"));
    return isFinite(w) ? w : null;
  }
  function fit(rec) {
    var box = rec.el.parentElement ? rec.el.parentElement.clientWidth : 0;
    var drawn = drawnWidth(rec.el);
    if (!box || drawn == null) return Promise.resolve();
    var cur = rec.view.width();
    var target = Math.max(120, Math.min(rec.width, Math.floor(box - (drawn - cur)) - 2));
    if (Math.abs(target - cur) < 1) return Promise.resolve();
    return rec.view.width(target).runAsync();
  }
  function fixedWidth(spec) {
    return spec && typeof spec.width === "number" &&
      !(spec.facet || spec.hconcat || spec.vconcat || spec.concat || spec.repeat);
  }
  var wrapped = function (el, spec, opts) {
    return embed(el, spec, opts).then(function (res) {
      window.kvmathVegaViews.push(res.view);
      var node = typeof el === "string" ? document.querySelector(el) : el;
      if (node && fixedWidth(res.spec || spec)) {
        var rec = {el: node, view: res.view, width: (res.spec || spec).width};
        charts.push(rec);
        // twice: the axis and legend space depends on the width
        return fit(rec).then(function () { return fit(rec); }).then(function () { return res; });
      }
      return res;
    });
  };
  for (var k in embed) wrapped[k] = embed[k];
  window.vegaEmbed = wrapped;
  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { charts.forEach(function (r) { fit(r).then(function () { return fit(r); }); }); }, 100);
  });
})();
"""

# Site-wide layout (html_css_files in _config.yml). The page itself never scrolls sideways:
# whatever is wider than the text column scrolls inside its own box or shrinks to fit.
SITE_CSS_TEXT = """\
/* Written by tools/book_assets.py (html_css_files in _config.yml). */

/* Wide output tables (pandas, Markdown; in a cell's output or glued into a figure) scroll
   inside their own box. */
.bd-article div.output, .bd-article div.pasted-inline, .bd-article figure {
  max-width: 100%;
  overflow-x: auto;
}
.bd-article div.output table { margin-bottom: 0.5rem; }

/* Display equations wider than the column scroll inside their own box, with a visible bar. */
div.math, mjx-container[display="true"] {
  max-width: 100%;
  overflow-x: auto;
  overflow-y: hidden;
}
mjx-container[display="true"] { padding-bottom: 0.25rem; }

/* Long inline code, URLs and words (an engine's message quoting a URL) wrap instead of widening the page (break-word keeps
   table columns at their natural width; only prose lines break). */
.bd-article, code.literal, code.literal span.pre { overflow-wrap: break-word; }
code.literal span.pre { white-space: normal; }

/* Charts: fixed-width single/layered charts are narrowed by the vegaEmbed wrapper;
   anything else (facets, concatenations) is scaled down to the column. */
.vega-embed { max-width: 100%; }
.vega-embed > canvas, .vega-embed > svg.marks { max-width: 100%; height: auto !important; }
.vega-embed .vega-bindings { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; }
.vega-embed .vega-bind { max-width: 100%; }
.vega-embed .vega-bind select, .vega-embed .vega-bind input[type=range] { max-width: 100%; }

/* ipywidgets: never wider than the column. */
.cell_output .jupyter-widgets, .cell_output .widget-box, .cell_output .widget-inline-hbox {
  max-width: 100%;
}
@media (max-width: 600px) {
  .cell_output .widget-inline-hbox { flex-wrap: wrap; }
  .cell_output .widget-inline-hbox .widget-label { width: 100%; text-align: left; }
  .cell_output .widget-slider, .cell_output .widget-dropdown, .cell_output .widget-text { width: 100%; }
}
"""

# Loaded between require.js and embed-amd.js (nb_ipywidgets_js in _config.yml).
# embed-amd.js defines the AMD module "@jupyter-widgets/html-manager/dist/libembed-amd"
# and takes its webpack public path (where its icon fonts are) from that module's URL,
# which require.js would otherwise resolve against the *page's* folder -> 404s.
REQUIRE_CONFIG_JS = """\
// Written by tools/book_assets.py: map the widget manager's AMD ids to this folder,
// so embed-amd.js finds its icon fonts next to it (in _static/widgets/).
(function () {
  var me = document.currentScript;
  if (!me || typeof require === "undefined" || !require.config) return;
  var dir = me.src.replace(/[?#].*$/, "");
  dir = dir.slice(0, dir.lastIndexOf("/"));
  require.config({paths: {"@jupyter-widgets/html-manager/dist": dir}});
})();
"""

# Parts of the mathjax package copied: the combined component the book loads, plus
# everything it may load lazily (TeX extensions via autoload, CHTML fonts, the
# context menu and its accessibility components).
MATHJAX_KEEP = ["tex-mml-chtml.js", "input", "output", "ui", "a11y", "sre", "adaptors"]
FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")


def _vega_versions() -> dict:
    import vl_convert as vlc
    from altair.utils._importers import vl_version_for_vl_convert

    return {"vl-convert-python": vlc.__version__, "vl_version": vl_version_for_vl_convert()}


def wanted_versions() -> dict:
    # The script's own hash too, so editing what it writes invalidates the stamp.
    import hashlib

    me = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return {"npm": dict(NPM), "book_assets.py": me, **_vega_versions()}


def _tarball_name(name: str, version: str) -> str:
    # npm pack names scoped packages "scope-name-version.tgz" without the "@".
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


INTEGRITY_FILE = Path(__file__).resolve().parent / "npm-integrity.json"
"""Each npm tarball's integrity (``NAME@VERSION`` -> ``sha512-<base64>``, the registry's ``dist.integrity``)."""


def expected_integrity(name: str, version: str) -> str:
    """The recorded integrity of ``name@version`` (tools/npm-integrity.json); exits naming the file when the
    package is not recorded there (a new package or version must be recorded before it is fetched)."""
    table = json.loads(INTEGRITY_FILE.read_text(encoding="utf-8"))
    key = f"{name}@{version}"
    if key not in table:
        sys.exit(f"book_assets: {key} has no recorded integrity in {INTEGRITY_FILE.relative_to(ROOT)}; add "
                 f"`npm view {key} dist.integrity` there first")
    return table[key]


def check_integrity(path: Path, integrity: str) -> None:
    """Exit (one line naming the file) unless ``path``'s bytes match ``integrity``, a Subresource Integrity
    string as npm's registry metadata gives it (``sha512-<base64>``; sha384 / sha256 also read). Reusable for
    any fetched file whose digest is recorded."""
    import base64
    import hashlib

    algo, _, want = integrity.partition("-")
    if algo not in ("sha512", "sha384", "sha256") or not want:
        sys.exit(f"book_assets: {integrity[:40]!r} is not an integrity string (sha512-<base64>)")
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    got = base64.b64encode(h.digest()).decode("ascii")
    if got != want:
        sys.exit(f"book_assets: {path.name} does not match its recorded integrity ({algo} {got[:16]}... != "
                 f"{want[:16]}...): refusing it; delete it from {path.parent} to fetch it again")


def npm_tarball(name: str, version: str) -> Path:
    """Return the cached ``npm pack`` tarball of ``name@version``, fetching it if needed; either way checked
    against its recorded integrity (:func:`check_integrity`, tools/npm-integrity.json)."""
    integrity = expected_integrity(name, version)
    target = CACHE / _tarball_name(name, version)
    if target.is_file() and target.stat().st_size > 0:
        check_integrity(target, integrity)
        return target
    npm = shutil.which("npm")
    if npm is None:
        sys.exit(
            "book_assets: `npm` not found on PATH. It is needed once to fetch "
            f"{name}@{version} from the npm registry (Debian: apt-get install -y npm). "
            f"Alternatively put {target.name} (from `npm pack {name}@{version}`) into {CACHE}."
        )
    CACHE.mkdir(parents=True, exist_ok=True)
    print(f"book_assets: fetching {name}@{version} from the npm registry (npm pack; checked against "
          f"{integrity[:19]}...)", flush=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        proc = subprocess.run(
            [npm, "pack", f"{name}@{version}", "--pack-destination", tmp, "--silent"],
            capture_output=True,
            text=True,
        )
        produced = list(Path(tmp).glob("*.tgz"))
        if proc.returncode != 0 or len(produced) != 1:
            sys.exit(
                f"book_assets: `npm pack {name}@{version}` failed (exit {proc.returncode}):\n"
                f"{proc.stdout}\n{proc.stderr}"
            )
        check_integrity(produced[0], integrity)
        os.replace(produced[0], target)
    return target


def check_npm_integrity(tgz: Path, integrity: str) -> None:
    """Exit naming the file when ``tgz`` does not match npm's ``dist.integrity`` (``sha512-<base64>``,
    the Subresource Integrity form the registry publishes)."""
    import base64
    import hashlib

    algo, _, want = integrity.partition("-")
    if algo != "sha512" or not want:
        sys.exit(f"book_assets: integrity {integrity!r} is not sha512-<base64>")
    got = base64.b64encode(hashlib.sha512(tgz.read_bytes()).digest()).decode()
    if got != want:
        sys.exit(f"book_assets: {tgz} does not match the pinned npm integrity (sha512-{got} != {integrity}); "
                 "delete it to fetch it again")


def pinned_tarball(name: str) -> Path:
    """``npm_tarball`` of a package of :data:`NPM_PINNED`, checked against its integrity."""
    pin = NPM_PINNED[name]
    if NPM.get(name, pin["version"]) != pin["version"]:
        sys.exit(f"book_assets: NPM and NPM_PINNED disagree on {name}'s version")
    tgz = npm_tarball(name, pin["version"])
    check_npm_integrity(tgz, pin["integrity"])
    return tgz


def _extract(tgz: Path, members: dict[str, Path]) -> None:
    """Copy exact members ("package/..." paths) of an npm tarball to destinations."""
    with tarfile.open(tgz) as tar:
        for member, dest in members.items():
            f = tar.extractfile(member)
            if f is None:
                sys.exit(f"book_assets: {member} missing from {tgz.name}")
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_suffix(dest.suffix + ".tmp")
            tmp.write_bytes(f.read())
            os.replace(tmp, dest)


def write_vega_bundle() -> None:
    import vl_convert as vlc
    from altair.utils._importers import vl_version_for_vl_convert

    js = vlc.javascript_bundle(vl_version=vl_version_for_vl_convert())
    tmp = VEGA_BUNDLE.with_suffix(".js.tmp")
    # The IIFE keeps the bundle's top-level consts out of the page's global scope;
    # the bundle itself assigns window.vegaEmbed / window.vega / window.vegaLite.
    tmp.write_text("(function(){\n" + js + "\n" + VEGA_FIT_JS + "\n})();\n", encoding="utf-8")
    os.replace(tmp, VEGA_BUNDLE)


def write_widgets() -> None:
    tgz = npm_tarball("requirejs", NPM["requirejs"])
    _extract(tgz, {"package/require.js": REQUIRE_JS})
    tgz = npm_tarball("@jupyter-widgets/html-manager", NPM["@jupyter-widgets/html-manager"])
    with tarfile.open(tgz) as tar:
        # embed-amd.js sets its webpack public path from its own URL, so the icon
        # fonts it references must sit next to it.
        fonts = [
            m.name
            for m in tar.getmembers()
            if m.name.startswith("package/dist/") and m.name.endswith(FONT_SUFFIXES)
        ]
    members = {"package/dist/embed-amd.js": EMBED_AMD}
    members.update({m: EMBED_AMD.parent / Path(m).name for m in fonts})
    _extract(tgz, members)
    REQUIRE_CONFIG.write_text(REQUIRE_CONFIG_JS, encoding="utf-8")
    MATHJAX_SHIM.write_text(MATHJAX_SHIM_JS, encoding="utf-8")


def write_pyodide(dest: Path = PYODIDE_DIR) -> list[Path]:
    """Copy Pyodide's runtime files (:data:`PYODIDE_FILES`) from the checked npm tarball into ``dest``,
    with ``NOTICE.txt`` (package, version, declared licence, source, files and their sha256) and the
    licence texts from ``tools/licenses/``: the package's declared licence and the PSF licence of the
    CPython standard library in ``python_stdlib.zip``. The files are copied unmodified. Returns the
    files written."""
    import hashlib

    tgz = pinned_tarball("pyodide")
    dest.mkdir(parents=True, exist_ok=True)
    _extract(tgz, {f"package/{f}": dest / f for f in PYODIDE_FILES})
    with tarfile.open(tgz) as tar:
        meta = json.load(tar.extractfile("package/package.json"))
    licence = meta.get("license", "")
    # Pyodide's repository is MPL-2.0 (its LICENSE file); 0.25.1's package.json declares Apache-2.0.
    # Both texts ship, and the notice says which is which.
    names = dict.fromkeys([REPOSITORY_LICENCE, licence, "PSF-2.0"])
    texts = {f"{n}.txt": LICENSES / f"{n}.txt" for n in names}
    for name, src in texts.items():
        if not src.is_file():
            sys.exit(f"book_assets: no licence text {src} for Pyodide's declared licence {licence!r}")
        shutil.copyfile(src, dest / f"LICENSE-{name}")
    lines = [
        f"Pyodide {meta['version']} (npm package 'pyodide', {NPM_PINNED['pyodide']['integrity']}),",
        f"unmodified runtime files. Licence: {REPOSITORY_LICENCE}, the LICENSE of Pyodide's repository",
        f"(LICENSE-{REPOSITORY_LICENCE}.txt here); the package's package.json declares {licence}",
        f"(LICENSE-{licence}.txt here). The CPython standard library in python_stdlib.zip: the PSF License",
        "Agreement (LICENSE-PSF-2.0.txt).",
        f"Source: {meta.get('homepage') or 'https://github.com/pyodide/pyodide'} (tag {meta['version']});",
        f"the package: https://registry.npmjs.org/pyodide/-/pyodide-{meta['version']}.tgz",
        "Used by the book's calculator (kvmath.book.calculator), loaded only when a reader asks.",
        "",
        "Files (sha256):",
    ]
    lines += [f"  {hashlib.sha256((dest / f).read_bytes()).hexdigest()}  {f}" for f in PYODIDE_FILES]
    lines += ["", "kvmath.whl (written by make book): kvmath itself, Apache-2.0."]
    (dest / PYODIDE_NOTICE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [dest / f for f in (*PYODIDE_FILES, PYODIDE_NOTICE, *(f"LICENSE-{n}" for n in texts))]


def write_css() -> None:
    SITE_CSS.write_text(SITE_CSS_TEXT, encoding="utf-8")


def write_mathjax() -> None:
    tgz = npm_tarball("mathjax", NPM["mathjax"])
    if MATHJAX_DIR.exists():
        shutil.rmtree(MATHJAX_DIR)
    prefixes = tuple(f"package/es5/{k}" for k in MATHJAX_KEEP)
    with tarfile.open(tgz) as tar:
        members = {
            m.name: MATHJAX_DIR / m.name[len("package/"):]
            for m in tar.getmembers()
            if m.isfile() and m.name.startswith(prefixes)
        }
    _extract(tgz, members)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rewrite every asset")
    args = parser.parse_args(argv)

    ASSETS.mkdir(parents=True, exist_ok=True)
    want = wanted_versions()
    try:
        have = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        have = None
    if not args.force and have == want and all(p.is_file() for p in OUTPUTS):
        print("book_assets: up to date", flush=True)
        return 0

    write_vega_bundle()
    write_widgets()
    write_mathjax()
    write_css()
    write_pyodide()
    STAMP.write_text(json.dumps(want, indent=1, sort_keys=True) + "\n")
    for p in OUTPUTS:
        print(f"book_assets: wrote {p.relative_to(ROOT)} ({p.stat().st_size:,} bytes)")
    return 0


# -- Sphinx extension (``sphinx.local_extensions: {book_assets: tools}`` in _config.yml) --------


def _repository_from_env() -> str:
    """The repository URL from the environment: ``KVMATH_BOOK_REPOSITORY``, else GitHub
    Actions' ``GITHUB_SERVER_URL``/``GITHUB_REPOSITORY`` (set on every workflow run)."""
    explicit = os.environ.get("KVMATH_BOOK_REPOSITORY", "").strip()
    if explicit:
        return explicit.rstrip("/")
    repo = os.environ.get("GITHUB_REPOSITORY", "").strip()
    if repo:
        return os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/") + "/" + repo
    return ""


def _site_config(app, config) -> None:
    from sphinx.util import logging

    log = logging.getLogger("book_assets")
    opts = config.html_theme_options
    # pydata-sphinx-theme 0.17 puts a search field in the header unless navbar_persistent
    # is set; sphinx-book-theme already has one in the sidebar -> two boxes at desktop width.
    opts.setdefault("navbar_persistent", [])
    if not opts.get("repository_url"):
        url = _repository_from_env()
        if url:
            opts["repository_url"] = url
    launch = dict(opts.get("launch_buttons") or {})
    hubs = [k for k in ("binderhub_url", "jupyterhub_url", "colab_url", "deepnote_url") if launch.get(k)]
    if hubs and not opts.get("repository_url"):
        # sphinx-book-theme builds launch links from the repository URL (and fails without one).
        log.info("book_assets: no repository URL (_config.yml repository.url, KVMATH_BOOK_REPOSITORY "
                 "or GITHUB_REPOSITORY): launch buttons left out of this build")
        for k in hubs:
            launch[k] = ""
        opts["launch_buttons"] = launch


def _asset_name(asset) -> str:
    return str(getattr(asset, "filename", asset) or "")


def _page_assets(app, pagename, templatename, context, doctree) -> None:
    """Per page: drop duplicated inline scripts, and sphinx-thebe when thebe is off.

    Sphinx 7.4 registers a body-only script added after the builder started (sphinx-thebe's
    ``const THEBE_JS_URL = ...``, togglebutton's selector) twice -- once as filename None,
    once as "" -- so the page declares the const twice ("already been declared").
    """
    launch = app.config.html_theme_options.get("launch_buttons") or {}
    thebe_on = str(launch.get("thebe", False)).lower() == "true"
    scripts = context.get("script_files")
    if scripts is not None:
        seen, keep = set(), []
        for js in scripts:
            attrs = dict(getattr(js, "attributes", {}) or {})
            key = (_asset_name(js), tuple(sorted(attrs.items())))
            if key in seen:
                continue
            seen.add(key)
            if not thebe_on and ("THEBE_JS_URL" in attrs.get("body", "") or _asset_name(js).endswith("sphinx-thebe.js")):
                continue
            keep.append(js)
        scripts[:] = keep
    css = context.get("css_files")
    if css is not None and not thebe_on:
        css[:] = [c for c in css if not _asset_name(c).endswith("sphinx-thebe.css")]


def setup(app):
    app.connect("config-inited", _site_config, priority=900)
    app.connect("html-page-context", _page_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    sys.exit(main())
