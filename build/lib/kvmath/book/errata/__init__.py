"""Errata: every checkable claim of the two source documents, checked with kvmath when the book is built.

The claims are the records of ``data/errata.json`` (read through ``kvmath.facts.errata``). Each names the
document and section it comes from, what kind of claim it is, the chapter that checks it (a Sphinx
docname) and the label of that chapter's "Checked claims" section, and the name of a check function with its
arguments. The arguments are only the *document's* figures and the deployment it describes (model, format,
context, card); every figure set beside them is computed from kvmath.

The package, by source document: ``base`` (the ``Check`` record, the registry ``CHECKS`` and the shared
helpers), ``club3090`` (club-3090's KV_MATH.md and kv-calc.py), ``ru16gb`` (the 16 GB article), and ``render``
(``chapter_markdown`` for a chapter's section, ``page_markdown`` for the Errata page). A check is registered
with ``@check`` in its document's module; a record names it by function name.
"""

from __future__ import annotations

from . import club3090, ru16gb  # noqa: F401 - register their checks
from .base import CHECKS, KINDS, VERDICTS, Check, label_for, not_checkable
from .render import (chapter_markdown, counts, documents, page_markdown, records, results, results_for_document,
                     run)

__all__ = ["CHECKS", "KINDS", "VERDICTS", "Check", "chapter_markdown", "counts", "documents", "label_for",
           "not_checkable", "page_markdown", "records", "results", "results_for_document", "run"]
