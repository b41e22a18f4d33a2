"""Packaging: the sdist and the wheel carry data/ as kvmath/data, and the installed commands work.

The checkout is copied to a temporary folder (so nothing is written into it), an sdist is built from the
copy, and the wheel is built from the unpacked sdist (as ``python -m build`` does: a file the sdist
lacks is missing from the wheel too). The wheel is installed with ``pip install --target`` outside the
checkout, and ``kvmath`` and ``kvmath-fit`` run from that folder, with a working directory that is not
the checkout; they must print what the checkout's own code prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# build outputs, caches and the vendored book JavaScript (17 MB, not part of the package)
SKIP = {".venv", ".git", ".cache", "_build", "build", "dist", "__pycache__", ".hypothesis", ".pytest_cache",
        "node_modules"}
FIGURE = re.compile(r"\d[\d,]*\.\d\d (MiB|GiB)")
COMMANDS = [
    ["kvmath", "--config", "qwen3.6-27b", "--max-ctx", "8192"],
    ["kvmath", "--config", "qwen3.6-27b", "--engine", "llama.cpp", "-c", "8192"],
    ["kvmath-fit", "--compose", "dual"],
]
ENTRY = {"kvmath": "kvmath.cli", "kvmath-fit": "kvmath.engines.vllm.cli"}


def _ignore(folder, names):
    return [n for n in names if n in SKIP or n.endswith(".egg-info")
            or (Path(folder) == ROOT / "book" and n == "assets")]


def _run(cmd, cwd, env=None, timeout=600):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd} exited {r.returncode}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
    return r


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src, dist, unpacked = tmp / "src", tmp / "dist", tmp / "unpacked"
    shutil.copytree(ROOT, src, ignore=_ignore)
    dist.mkdir()
    # setuptools' PEP 517 hooks directly (no `build` front end, no build isolation: nothing downloaded)
    r = _run([sys.executable, "-c", "import sys, setuptools.build_meta as b; out = sys.argv[1]; "
              "print(b.build_sdist(out))", str(dist)], cwd=src)
    sdist = dist / r.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as t:
        t.extractall(unpacked, filter="data")
    (sdist_root,) = unpacked.iterdir()
    _run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "-q", "--no-deps",
          "--no-build-isolation", "--no-index", "-w", str(dist), str(sdist_root)], cwd=tmp)
    (wheel,) = dist.glob("kvmath-*.whl")
    site = tmp / "site"
    _run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps", "--no-index",
          "--target", str(site), str(wheel)], cwd=tmp)
    run = tmp / "run"
    run.mkdir()
    return {"src": src, "sdist": sdist, "wheel": wheel, "site": site, "run": run}


def _installed_env(site: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = str(site)
    return env


def test_sdist_carries_the_package_and_data(built):
    with tarfile.open(built["sdist"]) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    src = built["src"]
    want = {f"data/{f}" for f in _files(src / "data")} | {f"kvmath/{f}" for f in _files(src / "kvmath")}
    assert want - names == set()
    for pattern in ("data/models/*.json", "data/configs/*.json", "data/measurements/*.csv"):
        assert any(Path(n).match(pattern) for n in names), pattern
    assert {"data/cards.json", "data/configs/SOURCES.md", "pyproject.toml", "README.md"} <= names


def test_wheel_holds_every_subpackage_and_every_data_file(built):
    names = set(zipfile.ZipFile(built["wheel"]).namelist())
    src = built["src"]
    # every module of every kvmath subpackage (model, engines.*, book, ...): a package left out of
    # pyproject.toml's list would be missing here
    assert {f"kvmath/{f}" for f in _files(src / "kvmath")} - names == set()
    # every file under data/, at kvmath/data/...
    assert {f"kvmath/data/{f}" for f in _files(src / "data")} - names == set()
    for pattern in ("kvmath/data/models/*.json", "kvmath/data/configs/*.json"):
        assert any(Path(n).match(pattern) for n in names), pattern
    assert {"kvmath/data/cards.json", "kvmath/data/configs/SOURCES.md"} <= names
    assert not any(n.startswith(("data/", "tests/", "tools/")) for n in names)


def test_installed_wheel_imports_from_the_target_and_finds_its_data(built):
    site = built["site"]
    modules = sorted(".".join(Path(f).with_suffix("").parts).removesuffix(".__init__")
                     for f in _files(site / "kvmath") if f.endswith(".py"))
    modules = ["kvmath"] + [f"kvmath.{m}" for m in modules if m != "__init__"]
    code = ("import importlib, sys, kvmath, kvmath.facts\n"
            "print(kvmath.__file__); print(kvmath.facts.data_dir())\n"
            "for m in sys.argv[1:]: print(importlib.import_module(m).__file__)\n")
    r = _run([sys.executable, "-c", code, *modules], cwd=built["run"], env=_installed_env(site))
    paths = [Path(p) for p in r.stdout.split()]
    assert paths[0] == site / "kvmath" / "__init__.py"
    assert paths[1] == site / "kvmath" / "data"
    assert (paths[1] / "models").is_dir() and (paths[1] / "configs").is_dir()
    assert len(paths) == 2 + len(modules)
    assert all(p.is_relative_to(site) for p in paths), [p for p in paths if not p.is_relative_to(site)]


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_installed_commands_run_outside_the_checkout(built, cmd):
    site = built["site"]
    script = site / "bin" / cmd[0]
    assert script.is_file(), f"pip did not write the {cmd[0]} entry point"
    got = _run([str(script), *cmd[1:]], cwd=built["run"], env=_installed_env(site)).stdout
    assert FIGURE.search(got), got
    assert "(qwen3_5_text)" in got or "qwen3.6-27b" in got
    # the same command from the checkout's code prints the same thing
    entry = ENTRY[cmd[0]]
    ref = _run([sys.executable, "-c", f"import sys; from {entry} import main; sys.argv[0] = {cmd[0]!r}; "
                "sys.exit(main())", *cmd[1:]], cwd=ROOT, env={**_installed_env(ROOT), "PYTHONPATH": str(ROOT)}).stdout
    assert got == ref
