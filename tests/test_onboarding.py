"""Onboarding: `--add-model` plus one `_toc.yml` line gives a chapter that builds, for every architecture kind.

One synthetic config per kind (a reference config from data/configs, cut to a few layers): GQA, SWA,
iSWA + MoE, GDN, GDN + MoE, Mamba-2, MLA, KDA + MLA. Each is onboarded with the real command into a copy
of the book (kvmath, data/ without its models, the template, _config.yml and a _toc.yml listing only these
chapters), the chapters are written and executed with `--book`, and the copy is built with
`jb build -W -n --keep-going`, as `make book` builds the real one.
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
    probe = subprocess.run([sys.executable, "-c", "import kvmath; print(kvmath.__file__)"], env=env, cwd=book,
                           capture_output=True, text=True)
    assert probe.stdout.strip() == str(book / "kvmath" / "__init__.py"), probe
    lines = []
    for kind, cfg in SYNTHETIC.items():
        path = tmp / f"{kind}.json"
        path.write_text(json.dumps(cfg, indent=1))
        add = subprocess.run([sys.executable, "-m", "kvmath.book.model_chapter", "--add-model", str(path),
                              "--id", f"synthetic-{kind}", "--title", f"Synthetic {kind}"],
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
    return book, out / "_build" / "html", build


def test_synthetic_configs_load_as_their_kind():
    import kvmath

    kinds = {k: {type(l).__name__ for l in kvmath.load_architecture(c).layers} for k, c in SYNTHETIC.items()}
    assert kinds["mamba2"] >= {"Mamba2Layer", "AttentionLayer"}
    assert kinds["mla"] == {"MLALayer"} and kinds["kda"] == {"KDALayer", "MLALayer"}
    assert "GatedDeltaNetLayer" in kinds["gdn"] and kvmath.load_architecture(SYNTHETIC["gdn-moe"]).is_moe
    assert kvmath.load_architecture(SYNTHETIC["iswa-moe"]).layer_type_counts() == {
        "sliding_attention": 2, "full_attention": 2}


def test_onboarded_book_builds_without_warnings(onboarded):
    _, html, build = onboarded
    log = build.stdout + build.stderr
    assert build.returncode == 0, log[-4000:]
    assert "build succeeded." in log
    assert "WARNING:" not in log, [l for l in log.splitlines() if "WARNING:" in l][:20]
    for kind in SYNTHETIC:
        assert (html / "notebooks" / "generated" / f"synthetic-{kind}.html").is_file(), kind


def test_onboarded_chapters_show_kvmath_numbers(onboarded):
    import kvmath
    from kvmath.book import frames as report

    _, html, _ = onboarded
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
