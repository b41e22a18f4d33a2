"""The errata's records and their rendering: a chapter's "Checked claims" table, the Errata page's tables."""

from __future__ import annotations

import re

from ... import facts
from ...errors import KvMathError
from .base import CHECKS, VERDICTS, Check, _title, label_for, not_checkable


def documents() -> dict:
    """The two source documents: key -> {title, source}."""
    return facts.errata()["documents"]


def records(chapter: str | None = None) -> list[dict]:
    """The claims of ``data/errata.json`` (those a chapter checks when ``chapter`` is a docname)."""
    recs = facts.errata()["claims"]
    return [r for r in recs if chapter is None or r["chapter"] == chapter]


def run(record: dict) -> Check:
    """Run one record's check. A record with ``checkable: false`` gets ``not checkable`` and its reason."""
    if not record.get("checkable", True):
        return not_checkable(why=record["why"])
    name = record["check"]
    if name not in CHECKS:
        raise KvMathError(f"errata {record['id']}: unknown check {name!r}")
    c = CHECKS[name](**record.get("args", {}))
    if c.verdict not in VERDICTS:
        raise KvMathError(f"errata {record['id']}: check {name} returned verdict {c.verdict!r}")
    return c


def results(chapter: str | None = None) -> list[tuple[dict, Check]]:
    return [(r, run(r)) for r in records(chapter)]


def _cell(text: str) -> str:
    """Text for a Markdown table cell: pipes escaped, flags (``--n-cpu-moe``) as code so that the
    typographer does not turn their dashes into an en dash."""
    text = str(text).replace("|", "\\|").replace("\n", " ")
    text = re.sub(r"(?<![`\w-])(--[a-z][\w-]*)", r"`\1`", text)
    return re.sub(r"\b\w{16,}\b", _breakable, text)


def _breakable(m) -> str:
    """A long identifier (``num_global_key_value_heads``) with line-break opportunities (``<wbr>``) after its
    underscores and between its CamelCase words, so that a narrow table column can wrap it."""
    word = re.sub(r"_(?=\w)", "_<wbr>", m.group(0))
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "<wbr>", word)


def _verdict_text(v: str) -> str:
    return {"holds": "holds", "wrong": "**wrong**", "partly": "partly", "not checkable": "*not checkable*"}[v]


def _figures(c: Check) -> str:
    if c.verdict == "not checkable":
        return "—"
    return f"found: {_cell(c.kvmath)} <br>document: {_cell(c.document)}"


def chapter_markdown(docname: str, target: bool = False) -> str:
    """A chapter's "Checked claims" section body (MyST): one table of its claims: the claim (with its
    document and section), the verdict, and kvmath's figure, the document's and the evidence.
    ``target``: start with the section's label target ``(errata-...)=``, for the model chapters, whose
    shared template cannot carry a label of its own per model (a {ref} to it then needs an explicit title)."""
    res = results(docname)
    lines = [f"({label_for(docname)})=", ""] if target else []
    if not res:
        lines.append("Neither source document makes a claim that this chapter checks.")
        return "\n".join(lines) + "\n"
    docs = documents()
    lines += ["| claim | verdict | figures and evidence |", "|---|---|---|"]
    for r, c in res:
        where = f"{docs[r['document']]['short']}, {r['section']}"
        claim = _cell(r["claim"]) + f" <br>*{_cell(where)}*"
        ev = _cell(c.evidence) if c.verdict == "not checkable" else f"{_figures(c)} <br>{_cell(c.evidence)}"
        lines.append(f"| {claim} | {_verdict_text(c.verdict)} | {ev} |")
    return "\n".join(lines) + "\n"


def counts(res=None) -> dict:
    """Verdict counts per document: {document: {verdict: n}}."""
    res = res if res is not None else results()
    out = {}
    for r, c in res:
        out.setdefault(r["document"], {v: 0 for v in VERDICTS})[c.verdict] += 1
    return out


def _chapter_title(docname: str) -> str:
    parts = docname.rsplit("/", 1)[-1]
    if docname.startswith("notebooks/generated/"):
        return _title(parts)
    return {"formula": "The general formula", "kv_formats": "KV formats", "quick_reference": "Quick reference",
            "calibration": "Calibration", "llamacpp_16gb": "llama.cpp on a 16 GB card", "engines": "Engines"}.get(parts, parts)


def page_markdown(document: str) -> str:
    """One document's part of the Errata page (MyST, no heading): a summary line and a table of every claim
    with its kind, verdict, the two figures and a link to the chapter section that checks it."""
    docs = documents()
    if document not in docs:
        raise KvMathError(f"unknown source document {document!r}; known: {', '.join(docs)}")
    rows = results_for_document(document)
    cv = counts(rows).get(document, {})
    out = [docs[document]["about"], "",
           f"{len(rows)} claims: " + ", ".join(f"{cv.get(v, 0)} {v}" for v in VERDICTS) + ".", "",
           "| claim | verdict | kvmath / document |", "|---|---|---|"]
    for r, c in rows:
        link = f"{{ref}}`{_chapter_title(r['chapter'])} <{r['label']}>`"
        claim = _cell(r["claim"]) + f" <br>*{_cell(r['section'])}; {r['kind']}* <br>checked in {link}"
        out.append(f"| {claim} | {_verdict_text(c.verdict)} | {_figures(c)} |")
    return "\n".join(out) + "\n"


def results_for_document(document: str) -> list[tuple[dict, Check]]:
    return [(r, run(r)) for r in records() if r["document"] == document]
