"""Onboarding: `--add-model` plus one `_toc.yml` line gives a chapter that builds, for every architecture kind.

One synthetic config per kind (a reference config from data/configs, cut to a few layers): GQA, SWA,
iSWA + MoE, GDN (the Qwen 3.5 wrapper, vision tower included), GDN + MoE, Mamba-2, MLA, KDA + MLA. Each is
onboarded with the real command into a user data folder (``KVMATH_USER_DATA_DIR``) read by a copy of the book
(kvmath, data/ without its models, the template, _config.yml and a _toc.yml listing only these chapters), the
chapters are written and executed with `--book`, and the copy is built with `jb build -W -n --keep-going`, as
`make book` builds the real one. The multimodal config's budget must equal pricing the same file by path, and
`--add-model` must work from an installed wheel (test_wheel's build).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BIN, ROOT, book_env
from test_wheel import _installed_env, built  # noqa: F401 - the installed-wheel fixture

CONFIGS = ROOT / "data" / "configs"


def _cut(name: str, **changes) -> dict:
    cfg = json.loads((CONFIGS / name).read_text())
    target = cfg.get("text_config", cfg)
    for k, v in changes.items():
        target[k] = v
    if "layer_types" in target and "num_hidden_layers" in changes:
        target["layer_types"] = target["layer_types"][: changes["num_hidden_layers"]]
    return cfg


SYNTHETIC = {
    "gqa": _cut("meta-llama__Llama-3.1-8B-Instruct.json", num_hidden_layers=4),
    "swa": _cut("mistralai__Mistral-7B-v0.1.json", num_hidden_layers=4),
    "iswa-moe": _cut("openai__gpt-oss-20b.json", num_hidden_layers=4),
    "gdn": _cut("Qwen__Qwen3.5-27B.json", num_hidden_layers=8),
    "gdn-moe": _cut("Qwen__Qwen3.5-35B-A3B.json", num_hidden_layers=8),
    "mamba2": _cut("nvidia__Nemotron-H-56B-Base-8K.json", num_hidden_layers=8, hybrid_override_pattern="M-M*M-M*"),
    "mla": _cut("deepseek-ai__DeepSeek-V3.json", num_hidden_layers=4),
    "kda": _cut("moonshotai__Kimi-Linear-48B-A3B-Instruct.json", num_hidden_layers=4,
                linear_attn_config={**json.loads((CONFIGS / "moonshotai__Kimi-Linear-48B-A3B-Instruct.json")
                                                 .read_text())["linear_attn_config"],
                                    "full_attn_layers": [4], "kda_layers": [1, 2, 3]}),
}


def _book_copy(tmp: Path) -> Path:
    book = tmp / "book"
    shutil.copytree(ROOT / "kvmath", book / "kvmath", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "data", book / "data", ignore=shutil.ignore_patterns("models"))
    (book / "data" / "models").mkdir()
    (book / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "model_chapter.md", book / "notebooks")
    shutil.copy(ROOT / "_config.yml", book)
    (book / "tools").mkdir()
    shutil.copy(ROOT / "tools" / "book_assets.py", book / "tools")  # the book's local Sphinx extension
    (book / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", book / "book")  # the chapters cite it (_config.yml)
    os.symlink(ROOT / "book" / "assets", book / "book" / "assets")  # the vendored JavaScript (make assets)
    # the references page of the real book holds the bibliography the chapters cite into
    (book / "book" / "intro.md").write_text("# Onboarding\n\nA copy of the book with synthetic models only.\n\n"
                                           "```{bibliography}\n```\n")
    return book


@pytest.fixture(scope="module")
def onboarded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("onboarding")
    book = _book_copy(tmp)
    env = book_env()
    env["PYTHONPATH"] = str(book)  # the copy's kvmath (and so its data/), in this process's children and kernels
    env["KVMATH_USER_DATA_DIR"] = str(tmp / "user-data")  # where --add-model writes, read by facts
    probe = subprocess.run([sys.executable, "-c", "import kvmath; print(kvmath.__file__)"], env=env, cwd=book,
                           capture_output=True, text=True)
    assert probe.stdout.strip() == str(book / "kvmath" / "__init__.py"), probe
    lines = []
    for kind, cfg in SYNTHETIC.items():
        path = tmp / f"{kind}.json"
        path.write_text(json.dumps(cfg, indent=1))
        add = subprocess.run([sys.executable, "-m", "kvmath.book.model_chapter", "--add-model", str(path),
                              "--id", f"synthetic-{kind}", "--title", f"Synthetic {kind}", "--revision", "0" * 40],
                             env=env, cwd=book, capture_output=True, text=True)
        assert add.returncode == 0, (kind, add.stderr)
        lines.append(f"      - file: notebooks/generated/synthetic-{kind}\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: Models\n"
                                   "    numbered: true\n    chapters:\n" + "".join(lines))
    chapters = subprocess.run([sys.executable, "-m", "kvmath.book.model_chapter", "--book", "--root", str(book)],
                              env=env, cwd=book, capture_output=True, text=True, timeout=900)
    assert chapters.returncode == 0, chapters.stdout[-3000:] + chapters.stderr[-3000:]
    out = tmp / "out"
    build = subprocess.run([str(BIN / "jb"), "build", str(book), "--all", "-W", "-n", "--keep-going",
                            "--path-output", str(out)], cwd=book, env=env, capture_output=True, text=True,
                           timeout=900)
    return book, out / "_build" / "html", build, tmp


def _user_facts(monkeypatch, folder):
    """This process's kvmath reading ``folder`` as its user data folder."""
    import kvmath

    monkeypatch.setenv("KVMATH_USER_DATA_DIR", str(folder))
    kvmath.facts.forget_models()


def test_synthetic_configs_load_as_their_kind():
    import kvmath

    kinds = {k: {type(l).__name__ for l in kvmath.load_architecture(c).layers} for k, c in SYNTHETIC.items()}
    assert kinds["mamba2"] >= {"Mamba2Layer", "AttentionLayer"}
    assert kinds["mla"] == {"MLALayer"} and kinds["kda"] == {"KDALayer", "MLALayer"}
    assert "GatedDeltaNetLayer" in kinds["gdn"] and kvmath.load_architecture(SYNTHETIC["gdn-moe"]).is_moe
    assert kvmath.load_architecture(SYNTHETIC["iswa-moe"]).layer_type_counts() == {
        "sliding_attention": 2, "full_attention": 2}


def test_onboarded_multimodal_budget_equals_pricing_the_file(onboarded, monkeypatch):
    """--add-model keeps what the budget reads beyond the text config: the Qwen 3.5 wrapper's vision tower
    (its profile run), the whole file for the weights estimate. Every term equals the budget of the path."""
    from kvmath.engines.vllm.budget import budget, solve_max_model_len

    *_, tmp = onboarded
    _user_facts(monkeypatch, tmp / "user-data")
    try:
        entry = __import__("kvmath").facts.resolve_model("synthetic-gdn")
        assert entry["revision"] == "0" * 40 and entry["source"].startswith("user/configs/synthetic-gdn.json")
        for card in ("rtx3090", "h100"):
            added = budget("synthetic-gdn", card=card, mem_util=0.9, max_model_len=32768)
            by_path = budget(str(tmp / "gdn.json"), card=card, mem_util=0.9, max_model_len=32768)
            assert added.profile_peak > 1.0 * 2**30  # the vision tower's profile (text only: ~0.2 GiB)
            for f in ("weights", "profile_peak", "cudagraph", "overhead", "non_kv", "available_kv", "pool_tokens"):
                assert getattr(added, f) == getattr(by_path, f), (card, f)
            assert solve_max_model_len(added) == solve_max_model_len(by_path)
    finally:
        monkeypatch.delenv("KVMATH_USER_DATA_DIR")
        __import__("kvmath").facts.forget_models()


def test_add_model_from_an_installed_wheel(built, tmp_path):  # noqa: F811 - the fixture imported above
    """From the wheel (no checkout): --add-model writes to the user data folder, not into site-packages, and
    the installed kvmath then knows the model; a missing --revision is one line, exit 2."""
    site, cfg = built["site"], CONFIGS / "mistralai__Mistral-7B-v0.1.json"
    env = dict(_installed_env(site), KVMATH_USER_DATA_DIR=str(tmp_path / "user"))
    cmd = [sys.executable, "-m", "kvmath.book.model_chapter", "--add-model", str(cfg), "--id", "my-mistral"]
    no_rev = subprocess.run(cmd, cwd=built["run"], env=env, capture_output=True, text=True)
    assert no_rev.returncode == 2 and "--revision" in no_rev.stderr and "Traceback" not in no_rev.stderr
    add = subprocess.run(cmd + ["--revision", "0" * 40], cwd=built["run"], env=env, capture_output=True, text=True)
    assert add.returncode == 0, add.stderr
    assert (tmp_path / "user" / "models" / "my-mistral.json").is_file()
    assert (tmp_path / "user" / "configs" / "my-mistral.json").read_bytes() == cfg.read_bytes()
    assert not list(site.rglob("my-mistral*"))
    code = ("import kvmath, sys; a = kvmath.derive('my-mistral', max_ctx=8192); b = kvmath.derive(sys.argv[1], "
            "max_ctx=8192); print(kvmath.__file__, a.total_bytes, b.total_bytes)")
    r = subprocess.run([sys.executable, "-c", code, str(cfg)], cwd=built["run"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    where, added, by_path = r.stdout.split()
    assert Path(where).is_relative_to(site) and int(added) == int(by_path) > 0


def test_onboarded_book_builds_without_warnings(onboarded):
    _, html, build, _ = onboarded
    log = build.stdout + build.stderr
    assert build.returncode == 0, log[-4000:]
    assert "build succeeded." in log
    assert "WARNING:" not in log, [l for l in log.splitlines() if "WARNING:" in l][:20]
    for kind in SYNTHETIC:
        assert (html / "notebooks" / "generated" / f"synthetic-{kind}.html").is_file(), kind


def test_onboarded_chapters_show_kvmath_numbers(onboarded):
    import kvmath
    from kvmath.book import frames as report

    _, html, _, _ = onboarded
    for kind, cfg in SYNTHETIC.items():
        page = (html / "notebooks" / "generated" / f"synthetic-{kind}.html").read_text()
        arch = kvmath.load_architecture(cfg)
        ctx, _ = report.chapter_context(arch)
        flags, _ = report.vllm_chapter_flags(arch, "bf16", ctx, 2048)
        d = kvmath.derive(arch, kv_format="bf16", max_ctx=ctx, **flags)
        assert f'<span class="pasted-text">{d.bytes_per_token:,}</span>' in page, kind
        assert f'<span class="pasted-text">{d.total_bytes / kvmath.GiB:,.2f}</span>' in page, kind
        assert f"<h1>Synthetic {kind}" in page
        # no empty figure printed as nan / None in a table cell or a glued text
        assert not re.search(r'<td[^>]*>\s*(nan|NaN|None)\s*</td>|pasted-text">(nan|NaN|None)<', page), kind
