"""The errata checks' shared parts: the ``Check`` record, the verdicts and kinds, the registry, and the helpers
every source document's checks use (a model's config, kvmath's derivations and budgets, figure formatting).

Units are named in every figure: bytes (B), GB = 1e9 B, GiB = 2^30 B, MB = 1e6 B, MiB = 2^20 B.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from functools import lru_cache

from ... import facts
from ...errors import KvMathError

GB, GIB, MB, MIB = 10**9, 2**30, 10**6, 2**20  # kvmath.units' GB / GiB; MB / MiB as the documents write them
VERDICTS = ("holds", "partly", "wrong", "not checkable")
KINDS = ("formula", "constant", "byte count", "advice", "calibration claim", "count")


@dataclass(frozen=True)
class Check:
    """One claim checked: ``verdict`` (one of ``VERDICTS``), ``kvmath`` and ``document`` (the two figures, as
    text with units), ``evidence`` (one sentence)."""

    verdict: str
    kvmath: str
    document: str
    evidence: str


# --- helpers -----------------------------------------------------------------------------------------

def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def label_for(docname: str) -> str:
    """The label of a chapter's "Checked claims" section: ``errata-`` + the slug of the docname's last part
    (``notebooks/generated/qwen3.6-27b`` -> ``errata-qwen3-6-27b``); unique per chapter."""
    return "errata-" + _slug(docname.rsplit("/", 1)[-1])


def _title(model: str) -> str:
    from ...facts import model_title as title_of

    return title_of(model)


@lru_cache(maxsize=None)
def _arch(model: str):
    from ...model.load import load_architecture

    return load_architecture(model)


def _config(model: str) -> dict:
    """The config kvmath keeps for a known model (``data/models/<id>.json``; what the chapters load)."""
    return facts.resolve_model(model)["config"]


def _reference(model: str) -> dict:
    """The model's reference config.json, as published (``data/configs/<org>__<name>.json``)."""
    c = facts.reference_config(model)
    if c is None:
        raise KvMathError(f"{model}: no reference config.json under data/configs")
    return c


def _text_config(model: str) -> dict:
    c = _reference(model)
    return c.get("text_config", c)


@lru_cache(maxsize=None)
def _vllm(model: str, kv_format: str, tp: int = 1, max_ctx: int = 4096, max_num_seqs: int = 1):
    """vLLM's derivation, or the refusal message (prefix caching off: bytes per token do not depend on it)."""
    from ...derive import derive

    try:
        return derive(_arch(model), engine="vllm", kv_format=kv_format, tp=tp, max_ctx=max_ctx,
                      max_num_seqs=max_num_seqs, enable_prefix_caching=False)
    except KvMathError as e:
        return str(e)


@lru_cache(maxsize=None)
def _llama(model: str, n_ctx: int, cache_type: str, cache_type_v: str | None = None, **kw):
    from ...engines.llamacpp.memory import llamacpp_memory

    v = cache_type_v or cache_type
    fork = "turboquant" if cache_type.startswith("turbo") or v.startswith("turbo") else None
    return llamacpp_memory(model, n_ctx=n_ctx, cache_type_k=cache_type, cache_type_v=v, fork=fork, **kw)


def _bpt(model: str, fmt: str, tp: int = 1):
    """Growing bytes per token per card: vLLM for its formats, llama.cpp for q4_0 (not a vLLM format).
    Returns (bytes or None, engine, refusal text)."""
    if fmt == "q4_0":
        if tp != 1:
            return None, "llama.cpp", "llama.cpp has no tensor parallelism"
        return _llama(model, 4096, "q4_0").bytes_per_token, "llama.cpp", ""
    d = _vllm(model, fmt, tp)
    if isinstance(d, str):
        return None, "vLLM", d
    return d.bytes_per_token, "vLLM", ""


def _close(a, b, rel: float = 0.01) -> bool:
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b))


def _grade(ok: int, n: int) -> str:
    return "holds" if ok == n else ("wrong" if ok == 0 else "partly")


def _gb(nbytes: float, digits: int = 2) -> str:
    return f"{nbytes / GB:,.{digits}f} GB"


def _gib(nbytes: float, digits: int = 2) -> str:
    return f"{nbytes / GIB:,.{digits}f} GiB"


def _mb(nbytes: float, digits: int = 1) -> str:
    return f"{nbytes / MB:,.{digits}f} MB"


def _b(n) -> str:
    return f"{int(n):,} B"


def _short_refusal(text: str) -> str:
    return "refused by vLLM" if text else ""


def _budget(**kw):
    from ...engines.vllm.budget import budget

    return budget(**kw)


def _preset_budget(model: str, preset: str, **changes):
    from ...engines.vllm.budget import preset_budget

    return preset_budget(model, preset, **changes)


def _rows():
    from ...engines.vllm import calibration

    return calibration.ROWS


@lru_cache(maxsize=1)
def _compare() -> dict:
    from ...engines.vllm import calibration

    return {r["id"]: r for r in calibration.compare()}




CHECKS: dict = {}
"""Every check function by name (a record's ``check``), filled by :func:`check` as the document modules load."""


def check(fn):
    """Register a check function under its name (``data/errata.json`` records name it in ``check``)."""
    if fn.__name__ in CHECKS:
        raise KvMathError(f"errata: two checks named {fn.__name__}")
    CHECKS[fn.__name__] = fn
    return fn


@check
def not_checkable(*, why: str) -> Check:
    """A claim kvmath cannot check: the reason is the evidence."""
    return Check("not checkable", "-", "-", why)
