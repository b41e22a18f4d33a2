"""Publishing: the GitHub Actions workflow, the launch buttons, and nothing fetched at page load.

* ``.github/workflows/book.yml`` parses, its build step runs the README's book command (the
  ``make book`` line of "The two commands"), the artifact is the HTML folder that command writes,
  and the deploy job uses ``actions/deploy-pages`` with the permissions Pages needs;
* the book's local extension (``tools/book_assets.py``) takes the repository URL for the launch
  buttons from the CI environment, and leaves the buttons out when there is no URL;
* no built page loads a script, stylesheet, image, frame or font from another host (links
  ``<a href>`` to Binder or GitHub are fine: they are followed only when clicked).
"""

from __future__ import annotations

import html.parser
import re
import sys
import types
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _readme_book_command() -> str:
    """The README's book command: the ``make book`` line of the first ``sh`` block."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README.md has no ```sh block with the two commands"
    for line in block.group(1).splitlines():
        cmd = line.split("#", 1)[0].strip()
        if cmd.startswith("make book"):
            return cmd
    raise AssertionError("README.md's first sh block has no `make book` line")


def _readme_html_dir() -> str:
    m = re.search(r"->\s*(_build/html)/index\.html", (ROOT / "README.md").read_text())
    assert m, "README.md does not say where the book's HTML goes (-> _build/html/index.html)"
    return m.group(1)


@pytest.fixture(scope="module")
def workflow() -> dict:
    assert WORKFLOW.is_file(), f"{WORKFLOW.relative_to(ROOT)} is missing"
    wf = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(wf, dict), "the workflow is not a YAML mapping"
    if True in wf and "on" not in wf:  # YAML 1.1 reads the key `on` as a boolean
        wf["on"] = wf.pop(True)
    return wf


def _steps(wf, job):
    return wf["jobs"][job]["steps"]


def test_workflow_parses_and_triggers(workflow):
    assert workflow.get("name")
    on = workflow["on"]
    assert "push" in on and "pull_request" in on, on
    assert set(workflow["jobs"]) >= {"build", "deploy"}


def test_build_step_runs_the_readme_command(workflow):
    cmd = _readme_book_command()
    runs = [s.get("run", "") for s in _steps(workflow, "build")]
    lines = [l.strip() for r in runs for l in r.splitlines()]
    assert cmd in lines, f"no build step runs the README's command {cmd!r}; run lines: {lines}"
    # Python 3.11 (the Makefile's PYTHON) and npm (the vendored assets) are set up first
    uses = [s.get("uses", "") for s in _steps(workflow, "build")]
    assert any(u.startswith("actions/checkout@") for u in uses)
    py = next(s for s in _steps(workflow, "build") if s.get("uses", "").startswith("actions/setup-python@"))
    assert str(py["with"]["python-version"]) == "3.11"
    assert any(u.startswith("actions/setup-node@") for u in uses)


def test_uploads_the_html_and_deploys_to_pages(workflow):
    build = _steps(workflow, "build")
    upload = [s for s in build if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload, "the build job does not upload a Pages artifact"
    assert upload[0]["with"]["path"].rstrip("/") == _readme_html_dir()
    run_at = next(i for i, s in enumerate(build) if _readme_book_command() in s.get("run", ""))
    assert build.index(upload[0]) > run_at, "the artifact is uploaded before the book is built"

    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] in ("build", ["build"])
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])
    perms = deploy.get("permissions") or workflow.get("permissions") or {}
    assert perms.get("pages") == "write" and perms.get("id-token") == "write", perms
    assert deploy["environment"]["name"] == "github-pages"
    assert "pull_request" in deploy.get("if", ""), "pull requests must not deploy"


def test_launch_buttons_configured():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    lb = cfg["launch_buttons"]
    assert lb.get("binderhub_url", "").startswith("https://"), lb
    assert "jupyterhub_url" in lb
    assert lb.get("notebook_interface") == "jupyterlab"
    assert not lb.get("thebe"), "thebe would load its JavaScript from unpkg.com at run time"
    assert "repository" in cfg and "url" in cfg["repository"]
    assert cfg["sphinx"]["local_extensions"].get("book_assets"), "tools/book_assets.py is not the book's extension"


def test_binder_environment_uses_the_lock():
    """The Binder button's environment (repo2docker reads binder/): the book's lock, Python 3.11 (the
    Makefile's PYTHON), kvmath installed as the Makefile installs it, jupytext as the chapters' viewer
    (the settings `make lab` writes), and the model chapters written so their launch links open."""
    binder = ROOT / "binder"
    req = (binder / "requirements.txt").read_text()
    refs = [l.split(None, 1)[1].strip() for l in req.splitlines() if l.strip().startswith("-r ")]
    assert refs, "binder/requirements.txt includes no requirements file (-r)"
    assert any((binder / r).resolve() == (ROOT / "requirements-book.lock").resolve() for r in refs), refs
    assert not [l for l in req.splitlines() if l.strip() and not l.strip().startswith(("#", "-r "))], (
        "binder/requirements.txt pins packages of its own; the lock is the one list")
    python = re.search(r"^PYTHON \?= python(3\.\d+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert (binder / "runtime.txt").read_text().strip() == f"python-{python}"
    post = binder / "postBuild"
    assert post.stat().st_mode & 0o111, "binder/postBuild is not executable (repo2docker skips it)"
    text = post.read_text()
    assert "pip install --no-deps --no-build-isolation -e ." in text
    makefile = (ROOT / "Makefile").read_text()
    viewers = "viewers = {'markdown': 'Jupytext Notebook', 'myst': 'Jupytext Notebook'}"
    assert viewers in makefile and viewers in text, "postBuild and `make lab` set different default viewers"
    assert "default_setting_overrides.json" in text
    assert "kvmath.book.model_chapter --book" in text
    import subprocess

    subprocess.run(["bash", "-n", str(post)], check=True)


def _book_assets():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import book_assets
    finally:
        sys.path.remove(str(ROOT / "tools"))
    return book_assets


@pytest.mark.parametrize("env,expect", [
    ({"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "someone/kv_math"},
     "https://github.com/someone/kv_math"),
    ({"KVMATH_BOOK_REPOSITORY": "https://gitlab.com/x/y/"}, "https://gitlab.com/x/y"),
    ({}, ""),
])
def test_repository_url_for_launch_buttons(monkeypatch, env, expect):
    ba = _book_assets()
    for var in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "KVMATH_BOOK_REPOSITORY"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    opts = {"launch_buttons": {"binderhub_url": "https://mybinder.org", "jupyterhub_url": "", "thebe": False}}
    ba._site_config(None, types.SimpleNamespace(html_theme_options=opts))
    assert opts["navbar_persistent"] == []  # one search box (the sidebar's)
    assert opts.get("repository_url", "") == expect
    # without a repository URL sphinx-book-theme cannot build the links: they are left out
    assert bool(opts["launch_buttons"]["binderhub_url"]) == bool(expect)


class _Resources(html.parser.HTMLParser):
    """Every URL a page loads by itself (not links the reader clicks)."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "audio", "video", "source", "embed") and a.get("src"):
            self.urls.append(a["src"])
        elif tag == "link" and a.get("href") and not {"canonical", "alternate", "next", "prev", "index",
                                                      "search", "author", "license"} & set(
                (a.get("rel") or "").split()):
            self.urls.append(a["href"])
        elif tag == "object" and a.get("data"):
            self.urls.append(a["data"])


def _external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme in ("http", "https") or url.startswith("//") or parts.netloc)


def test_built_pages_load_nothing_from_other_hosts(book_html):
    pages = sorted(book_html.html.rglob("*.html"))
    assert pages, f"no HTML under {book_html.html}"
    bad: list[str] = []
    for page in pages:
        text = page.read_text(errors="replace")
        parser = _Resources()
        parser.feed(text)
        bad += [f"{page.relative_to(book_html.html)}: {u}" for u in parser.urls if _external(u)]
        # CSS url(...) and @import inside the page
        bad += [f"{page.relative_to(book_html.html)}: css {m}" for m in
                re.findall(r"(?:url\(|@import\s+)['\"]?((?:https?:)?//[^'\")\s]+)", text)]
    css = sorted((book_html.html / "_static").rglob("*.css"))
    for sheet in css:
        bad += [f"{sheet.relative_to(book_html.html)}: {m}" for m in
                re.findall(r"(?:url\(|@import\s+)['\"]?((?:https?:)?//[^'\")\s]+)", sheet.read_text(errors="replace"))]
    assert not bad, f"{len(bad)} resources from other hosts:\n" + "\n".join(sorted(set(bad))[:40])
    assert not any("THEBE_JS_URL" in p.read_text(errors="replace") for p in pages), \
        "sphinx-thebe's script (thebe from unpkg.com) is still on a page with thebe off"
