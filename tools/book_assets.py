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
}

VEGA_BUNDLE = ASSETS / "vega-embed-bundle.js"
REQUIRE_JS = ASSETS / "widgets" / "require.js"
EMBED_AMD = ASSETS / "widgets" / "embed-amd.js"
REQUIRE_CONFIG = ASSETS / "widgets" / "require-config.js"
MATHJAX_DIR = ASSETS / "mathjax"
MATHJAX_ENTRY = MATHJAX_DIR / "es5" / "tex-mml-chtml.js"
OUTPUTS = [VEGA_BUNDLE, REQUIRE_JS, REQUIRE_CONFIG, EMBED_AMD, MATHJAX_ENTRY]

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


def npm_tarball(name: str, version: str) -> Path:
    """Return the cached ``npm pack`` tarball of ``name@version``, fetching it if needed."""
    target = CACHE / _tarball_name(name, version)
    if target.is_file() and target.stat().st_size > 0:
        return target
    npm = shutil.which("npm")
    if npm is None:
        sys.exit(
            "book_assets: `npm` not found on PATH. It is needed once to fetch "
            f"{name}@{version} from the npm registry (Debian: apt-get install -y npm). "
            f"Alternatively put {target.name} (from `npm pack {name}@{version}`) into {CACHE}."
        )
    CACHE.mkdir(parents=True, exist_ok=True)
    print(f"book_assets: npm pack {name}@{version}", flush=True)
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
        os.replace(produced[0], target)
    return target


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
    tmp.write_text("(function(){\n" + js + "\n})();\n", encoding="utf-8")
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
    STAMP.write_text(json.dumps(want, indent=1, sort_keys=True) + "\n")
    for p in OUTPUTS:
        print(f"book_assets: wrote {p.relative_to(ROOT)} ({p.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
