"""Cross-references, citations and the index of the book.

Source checks (no build): every ``{cite}`` key is an entry of ``book/references.bib``; the bibliography
parses and its arXiv links match their ids; every chapter listed below numbers something it refers to
(``{eq}`` or ``{numref}``) and cites a source; every ``{eq}`` label is defined once in the sources; every
label of the model template carries the model placeholder, and a written chapter has it replaced by the
model's slug (22 chapters come from one template, and Sphinx labels are global to the book).

Built-book checks (``book_html``: the session's build, or ``KVMATH_PREBUILT_BOOK``): no label is defined
twice anywhere in the book (equation, figure and table anchors read from the HTML), every citation links to
an entry of the bibliography on the References page, and the index page exists, is linked from the
introduction and lists the key terms.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT

BIB = ROOT / "book" / "references.bib"
TEMPLATE = ROOT / "notebooks" / "model_chapter.md"
#: The chapters that must number and cite (the model template stands for its 22 chapters).
CHAPTERS = ["formula", "kv_formats", "engines", "many_gpus", "quick_reference", "calibration",
            "llamacpp_16gb", "model_chapter"]
SOURCES = sorted((ROOT / "notebooks").glob("*.md")) + sorted((ROOT / "book").glob("*.md"))

CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")
EQ_REF = re.compile(r"\{eq\}`([^`]+)`")
NUMREF = re.compile(r"\{numref\}`([^`]+)`")
# $$ ... $$ (label) (dollarmath) and ```{math} :label: label
EQ_LABEL = re.compile(r"^\$\$ \(([^)\s]+)\)\s*$|^:label:\s*(\S+)\s*$", re.MULTILINE)
NAME_OPT = re.compile(r"^:name:\s*\"?([^\"\s]+)\"?\s*$", re.MULTILINE)
FIG_META_NAME = re.compile(r"^\s+figure:\s*\n\s+name:\s*(\S+)\s*$", re.MULTILINE)  # mystnb: figure: name: (cell metadata)
#: Terms the index page must list (the {index} entries of the chapters).
INDEX_TERMS = ["KV cache", "PagedAttention", "block size", "sliding window", "Gated DeltaNet", "Mamba",
               "multi-head latent attention (MLA)", "tensor parallelism", "gpu_memory_utilization",
               "max_model_len", "TurboQuant"]


def _bib_keys() -> list[str]:
    return re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(), re.MULTILINE)


def _cite_keys(text: str) -> list[str]:
    return [k.strip() for m in CITE.finditer(text) for k in m.group(1).split(",")]


def _eq_labels(text: str) -> list[str]:
    return [a or b for a, b in EQ_LABEL.findall(text)]


def test_bibliography_parses_with_unique_keys():
    from pybtex.database import parse_file

    keys = _bib_keys()
    dupes = [k for k, n in Counter(k.lower() for k in keys).items() if n > 1]
    assert not dupes, f"duplicate keys in {BIB.name}: {dupes}"
    data = parse_file(str(BIB), bib_format="bibtex")
    assert sorted(data.entries) == sorted(keys)
    for key, entry in data.entries.items():
        assert entry.fields.get("title"), f"{key}: no title"
        assert "doi" not in {f.lower() for f in entry.fields}, f"{key}: DOIs are left out unless checked"
        # an arXiv id and its link must agree (the link is not a second, possibly different paper)
        if "eprint" in entry.fields:
            assert entry.fields.get("url") == f"https://arxiv.org/abs/{entry.fields['eprint']}", key


def test_every_cited_key_is_in_the_bibliography():
    keys = set(_bib_keys())
    missing = {f"{p.relative_to(ROOT)}: {k}" for p in SOURCES for k in _cite_keys(p.read_text()) if k not in keys}
    assert not missing, "cited but not in book/references.bib:\n" + "\n".join(sorted(missing))


def test_every_bibliography_entry_is_cited_somewhere():
    """The bibliography lists what the book relies on: an entry no chapter cites is dead weight."""
    cited = {k for p in SOURCES for k in _cite_keys(p.read_text())}
    unused = sorted(set(_bib_keys()) - cited)
    assert not unused, f"entries no page cites: {unused}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_numbers_and_cites(chapter):
    text = (ROOT / "notebooks" / f"{chapter}.md").read_text()
    assert EQ_REF.search(text) or NUMREF.search(text), f"{chapter}: no {{eq}} or {{numref}} reference"
    assert _cite_keys(text), f"{chapter}: no {{cite}}"


def test_every_equation_reference_has_one_label():
    defined = Counter(l for p in SOURCES for l in _eq_labels(p.read_text()))
    twice = [l for l, n in defined.items() if n > 1]
    assert not twice, f"equation labels defined twice: {twice}"
    refs = {f"{p.relative_to(ROOT)}: {r}" for p in SOURCES for r in EQ_REF.findall(p.read_text())
            if r not in defined}
    assert not refs, "{eq} references without a label:\n" + "\n".join(sorted(refs))


def test_template_labels_carry_the_model_placeholder():
    from kvmath.book.model_chapter import LABEL_PLACEHOLDER

    text = TEMPLATE.read_text()
    labels = _eq_labels(text) + NAME_OPT.findall(text) + FIG_META_NAME.findall(text)
    assert len(labels) >= 4, labels
    fixed = [l for l in labels if LABEL_PLACEHOLDER not in l]
    assert not fixed, f"template labels without {LABEL_PLACEHOLDER} (duplicated in every model chapter): {fixed}"


def test_written_chapter_has_the_models_labels(tmp_path):
    import nbformat

    from kvmath.book.model_chapter import LABEL_PLACEHOLDER, label_slug, make_chapter

    # hand-written expectations of the slug rule (lower case, anything but a-z 0-9 - becomes -)
    assert label_slug("qwen3.6-27b") == "qwen3-6-27b"
    assert label_slug("Llama-3.1-8B") == "llama-3-1-8b"
    assert label_slug("/models/my_model/config.json") == "my-model"
    out = make_chapter("gemma-4-31b", tmp_path / "g.ipynb")  # written, not executed
    nb = nbformat.read(out, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    meta = [c.metadata.get("mystnb", {}).get("figure", {}).get("name") for c in nb.cells]
    assert LABEL_PLACEHOLDER not in text and LABEL_PLACEHOLDER not in str(meta)
    assert "(eq-gemma-4-31b-bytes-per-token)" in text
    assert "{numref}`fig-gemma-4-31b-memory`" in text
    assert "fig-gemma-4-31b-per-token" in meta


# ------------------------------------------------------------------ the built book

def _pages(html: Path) -> list[Path]:
    return [p for p in sorted(html.rglob("*.html")) if "_static" not in p.parts and p.name != "search.html"]


ANCHOR = re.compile(r'\bid="((?:equation-|fig-|tbl-|l16-)[^"]+)"')


def test_no_label_is_defined_twice_in_the_built_book(book_html):
    """Every equation, figure and table anchor occurs once in the whole book (a duplicate label would
    also be a Sphinx warning, but a page-local id clash would not)."""
    where: dict[str, list[str]] = {}
    for page in _pages(book_html.html):
        for anchor in ANCHOR.findall(page.read_text(encoding="utf-8")):
            where.setdefault(anchor, []).append(str(page.relative_to(book_html.html)))
    twice = {a: p for a, p in where.items() if len(p) > 1}
    assert not twice, f"anchors defined more than once: {twice}"
    eqs = [a for a in where if a.startswith("equation-")]
    model_eqs = [a for a in eqs if a.endswith("-bytes-per-token") and "formula" not in a]
    assert len(model_eqs) >= 22, model_eqs  # one labelled equation per model chapter, each its own


def test_numbered_equations_and_figures_are_numbered(book_html):
    """Each {eq} and {numref} in a page resolves to a number (an unresolved one renders as ??? or as the
    bare label), and the model chapters' figures are numbered."""
    page = (book_html.html / "notebooks" / "generated" / "qwen3.6-27b.html").read_text(encoding="utf-8")
    assert re.search(r'<a class="reference internal" href="#equation-eq-qwen3-6-27b-bytes-per-token">', page)
    assert re.search(r'href="#fig-qwen3-6-27b-memory"><span class="std std-numref">Fig\. [\d.]+', page), \
        "the memory chart's {numref} does not give a figure number"
    assert page.count('class="caption-number"') >= 3
    for p in _pages(book_html.html):
        text = p.read_text(encoding="utf-8")
        assert "???" not in re.sub(r"<script.*?</script>", "", text, flags=re.S), p.name


def test_citations_link_to_the_bibliography(book_html):
    refs = (book_html.html / "book" / "references.html").read_text(encoding="utf-8")
    entries = re.findall(r'<div class="citation" id="(id\d+)"', refs) or re.findall(r'id="(id\d+)" role="doc-biblioentry"', refs)
    assert len(entries) == len(_bib_keys()), (len(entries), len(_bib_keys()))
    # every chapter page has at least one citation, and each links to an entry on the References page
    linked = 0
    for chapter in ["formula", "kv_formats", "engines", "many_gpus", "quick_reference", "calibration",
                    "llamacpp_16gb", "generated/qwen3.6-27b", "generated/deepseek-v3"]:
        page = (book_html.html / "notebooks" / f"{chapter}.html").read_text(encoding="utf-8")
        targets = re.findall(r'href="(?:\.\./)+book/references\.html#(id\d+)"', page)
        assert targets, f"{chapter}: no citation links to the bibliography"
        assert set(targets) <= set(entries), chapter
        linked += len(targets)
    assert linked >= 30


def test_index_page_lists_the_key_terms(book_html):
    index = book_html.html / "genindex.html"
    assert index.is_file()
    text = re.sub(r"<[^>]+>", "", index.read_text(encoding="utf-8"))
    missing = [t for t in INDEX_TERMS if t not in text]
    assert not missing, f"not in the index: {missing}"
    intro = (book_html.html / "book" / "intro.html").read_text(encoding="utf-8")
    assert 'href="../genindex.html"' in intro
