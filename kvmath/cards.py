"""The one card lookup: devices by the names people type and the tools print, and the machine's own GPU.

Cards live in ``data/cards.json`` (read through :func:`kvmath.facts.cards`): each with the memory the runtime
sees (PyTorch's CUDA total, HIP's on ROCm, Metal's recommended working set on Apple silicon), its compute
capability or gfx target, bandwidth and the source of each figure.

Names: a card answers to its id (``rtx3090``), its name and the names ``nvidia-smi --query-gpu=name``,
``rocm-smi --showproductname`` and ``torch.cuda.get_device_name()`` print (``NVIDIA GeForce RTX 3090``,
``NVIDIA A100-SXM4-80GB``, ``AMD Instinct MI300X``), its aliases, and any of these with case, spaces, ``-``
and ``_`` ignored and the vendor words (NVIDIA, GeForce, Tesla, AMD, Radeon, Instinct, Apple) dropped
(``RTX 3090``, ``rtx3090``, ``rtx-3090``); a bare model number (``3090``, ``7900xtx``) when one card has it.
A name two cards share (``NVIDIA GeForce RTX 4060 Ti``: 8 GB and 16 GB) is refused naming both, unless a memory
size tells them apart (:func:`detect` passes nvidia-smi's).

:func:`detect` asks the machine (``nvidia-smi``, ``rocm-smi``, ``system_profiler``), each with a timeout; an
absent tool is no answer.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import lru_cache

from . import facts
from .errors import KvMathError, choices

_VENDOR = re.compile(r"\b(nvidia|geforce|tesla|quadro|amd|radeon|instinct|apple)\b")


@lru_cache(maxsize=1)
def _cards() -> dict:
    """data/cards.json's cards, read once (callers get copies of single cards)."""
    return facts.cards()


def _norm(text: str) -> str:
    t = _VENDOR.sub(" ", str(text).lower())
    return re.sub(r"[\s_\-()/]+", "", t)


@lru_cache(maxsize=1)
def _index() -> tuple[dict, dict, dict]:
    """Three tiers of keys -> card ids, looked up in order: ids and aliases (what kvmath names a card), then the
    name and the printed names (``smi_names``: one printed name may cover cards of two sizes), then the bare model
    number (``3090``)."""
    own: dict[str, set] = {}
    printed: dict[str, set] = {}
    short: dict[str, set] = {}
    for cid, c in _cards().items():
        for n in [cid, *c.get("aliases", ())]:
            own.setdefault(_norm(n), set()).add(cid)
        for n in [c["name"], *c.get("smi_names", ())]:
            printed.setdefault(_norm(n), set()).add(cid)
        m = re.fullmatch(r"(?:rtx|gtx|rx|w)(\d{4}[a-z]*)", _norm(c["name"]))
        if m:
            short.setdefault(m.group(1), set()).add(cid)
    return own, printed, short


def _by_memory(ids, memory_gib: float | None) -> list[str]:
    if memory_gib is None or len(ids) < 2:
        return sorted(ids)
    cards = _cards()
    best = min(ids, key=lambda i: abs(cards[i]["nominal_gb"] - memory_gib))
    return [best] if abs(cards[best]["nominal_gb"] - memory_gib) < 2 else sorted(ids)


def card(name, *, memory_gib: float | None = None) -> dict:
    """A card by id, name, alias or printed name (see the module docstring), as a dict with ``id``: ``total_gib``
    (GiB as the runtime reports it), ``nominal_gb``, ``compute_capability`` (sm as an integer, None off NVIDIA),
    ``gfx_arch``, ``bandwidth_gbs``, ``vendor``, ``runtime``, ``source``. ``memory_gib``: the device's memory
    as a tool printed it (nvidia-smi ``memory.total``), to choose between cards of one name that differ in size.

    Raises KvMathError naming the candidates for an ambiguous name, the known ids for an unknown one."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or not name.isprintable():
        raise KvMathError(f"a card is a name or id such as rtx3090 (printable characters), got {str(name)[:40]!r}")
    own, printed, short = _index()
    key = _norm(name)
    ids = (own.get(key) or printed.get(key)
           or short.get(key.removeprefix("rtx").removeprefix("gtx").removeprefix("rx")) or set())
    ids = _by_memory(ids, memory_gib)
    cards = _cards()
    if len(ids) == 1:
        return dict(cards[ids[0]], id=ids[0], aliases=list(cards[ids[0]].get("aliases", ())))
    if ids:
        raise KvMathError(f"card {name!r} names {len(ids)} cards: {choices(ids)}; pass one of them")
    import difflib

    near = sorted({i for k in difflib.get_close_matches(key, list(own), n=3, cutoff=0.75) for i in own[k]})
    hint = f"did you mean {choices(near)}? " if near else ""
    raise KvMathError(f"unknown card {str(name)[:80]!r}; {hint}{len(cards)} cards are known, by id (rtx3090, rtx4090, "
                      "a100, h100, mi300x, rx7900xtx, m3-max-128gb, ...: kvmath/data/cards.json) or by the name "
                      "nvidia-smi prints; or give --device-memory with its unit (24GiB)")


# ---------------------------------------------------------------------------------------------------
# asking the machine

TIMEOUT_S = 5.0


def _run(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _nvidia() -> list[tuple[str, float | None]]:
    out = _run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"])
    gpus = []
    for line in (out or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0]:
            try:
                gpus.append((parts[0], float(parts[1]) / 1024))  # MiB -> GiB
            except ValueError:
                gpus.append((parts[0], None))
    return gpus


def _rocm() -> list[tuple[str, float | None]]:
    out = _run(["rocm-smi", "--showproductname", "--csv"])
    gpus = []
    for line in (out or "").splitlines()[1:]:
        cells = [c.strip() for c in line.split(",")]
        name = next((c for c in cells if re.search(r"(?i)instinct|radeon|mi\d{3}", c)), None)
        if name:
            gpus.append((name, None))
    return gpus


def _apple() -> list[tuple[str, float | None]]:
    out = _run(["system_profiler", "SPHardwareDataType"])
    if not out:
        return []
    chip = re.search(r"Chip:\s*Apple\s+(M\d(?:\s+(?:Pro|Max|Ultra))?)", out)
    mem = re.search(r"Memory:\s*(\d+)\s*GB", out)
    if not chip or not mem:
        return []
    return [(f"{chip.group(1).lower().replace(' ', '-')}-{mem.group(1)}gb", None)]


def detect() -> tuple[dict, str] | None:
    """The machine's first GPU as a known card, and what said so (``"nvidia-smi: NVIDIA GeForce RTX 3090, 24576
    MiB"``), or None when no tool answers. The tools run with a :data:`TIMEOUT_S` timeout; an absent one is no
    answer. Raises KvMathError when a tool names a GPU that is not a known card (naming it and its memory)."""
    for tool, ask in (("nvidia-smi", _nvidia), ("rocm-smi", _rocm), ("system_profiler", _apple)):
        gpus = ask()
        if not gpus:
            continue
        name, gib = gpus[0]
        said = f"{tool}: {name}" + (f", {gib * 1024:.0f} MiB" if gib else "") + (
            f" (GPU 0 of {len(gpus)})" if len(gpus) > 1 else "")
        try:
            return card(name, memory_gib=gib), said
        except KvMathError as e:
            raise KvMathError(f"this machine's GPU ({said}) is not a card kvmath knows ({e}); pass --card or the "
                              "device memory") from None
    return None
