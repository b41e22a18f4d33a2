"""The one entry point from a model as a user names it to an Architecture.

A model is an Architecture (returned as is), a parsed config dict, a ``config.json`` path, a model
folder holding one, a ``.gguf`` file, a known model id / HF repo name (``data/models``), or any other
Hugging Face Hub id ``org/name[@revision]`` (``org/name:QUANT`` for a GGUF repository), read through
``kvmath.hub`` (config.json and safetensors / GGUF headers only, into the HF cache).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from .. import facts
from ..errors import KvMathError
from .gguf import load_gguf_architecture
from .hf import architecture_from_config
from .specs import Architecture

MAX_CONFIG_BYTES = 4 * 2**20
"""Largest config.json kvmath reads (published ones are a few KiB)."""


def _parse_json(text: str, where: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise KvMathError(f"{where}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise KvMathError(f"{where}: JSON nested too deeply") from None
    except ValueError as e:  # e.g. an integer beyond Python's digit limit
        raise KvMathError(f"{where}: unreadable JSON value ({str(e).splitlines()[0][:80]})") from None


def load_architecture(src, *, name: str | None = None, offline: bool | None = None) -> Architecture:
    """Build an Architecture from an Architecture, a config dict, a path (config.json, model folder,
    ``.gguf``), a known model id, or a Hub id: a string of the grammar ``kvmath.hub.HUB_ID`` that is not an
    existing path and not a known model's repository without a revision (that one is read from kvmath's data,
    pinned to the recorded revision). ``offline``: for a Hub id, answer from the HF cache only (None:
    ``HF_HUB_OFFLINE``).

    Raises KvMathError for a missing or unreadable file, malformed JSON, an unknown model id (with the
    closest known one), an unknown ``model_type`` (naming the fields that would be needed) and
    impossible values.
    """
    if isinstance(src, Architecture):
        return src
    if isinstance(src, dict):
        arch = architecture_from_config(src, name=name or str(src.get("model_type") or "config"), source="config dict")
        return _with_config(arch, src, None)
    if not isinstance(src, (str, Path)):
        raise KvMathError(f"a model is an id, a path or a config dict, got {type(src).__name__}")
    text = str(src)
    if len(text) > 4096 or "\x00" in text:
        raise KvMathError("model path or id is too long or holds a NUL character")
    path = Path(text)
    folder = None
    try:
        if path.is_dir() and (path / "config.json").is_file():  # a model folder, as downloaded
            name = name or path.name
            folder = path
            path = path / "config.json"
        if path.suffix == ".gguf":
            return load_gguf_architecture(path, name=name)
        is_file = path.is_file()
    except OSError as e:
        raise KvMathError(f"{text[:200]}: cannot read ({e.strerror})") from None
    if is_file:
        try:
            if path.stat().st_size > MAX_CONFIG_BYTES:
                raise KvMathError(f"{path}: {path.stat().st_size:,} bytes is too large for a config.json "
                                  f"(at most {MAX_CONFIG_BYTES:,})")
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise KvMathError(f"{path}: cannot read ({e})") from None
        cfg = _parse_json(raw, str(path))
        arch = architecture_from_config(cfg, name=name or path.stem, source=str(path))
        return _with_config(arch, cfg, folder)
    if path.suffix == ".json" or path.is_dir():
        raise KvMathError(f"{path}: no such config.json file (give a config.json, a folder holding one, or a known model id)")
    from ..hub import parse_hub_id

    ref = parse_hub_id(text)
    if ref is not None and (ref.revision or ref.quant or facts.find_model(ref.repo) is None):
        from .. import hub

        return _hub(text, name, hub.offline_mode(offline), hub.endpoint(), str(hub.hub_cache_dir()),
                    str(hub.assets_dir()), bool(os.environ.get("HF_TOKEN")))
    return _known(text, name)


@lru_cache(maxsize=64)
def _hub(text: str, name: str | None, offline: bool, *_env) -> Architecture:
    """A Hub id's Architecture (``kvmath.hub.fetch``), once per process and environment (``_env``: endpoint,
    caches, token). From config.json, with the safetensors checkpoint table on ``extras["checkpoint"]``; from
    the GGUF header for a GGUF repository, with its weights on ``extras["gguf_weights"]``."""
    from dataclasses import replace

    from .. import hub

    m = hub.fetch(text, offline=offline)
    label = name or (m.ref.repo + (f"@{m.ref.revision}" if m.ref.revision else ""))
    note = f"; {m.notes[0]}" if m.notes else ""
    if m.gguf is not None:
        from .gguf import read_gguf

        g = read_gguf(m.gguf.path, name=name or str(m.ref), file_size=m.gguf.size)
        source = (f"{m.source} {m.gguf.filename}: {g.architecture.source.split(' (', 1)[-1].rstrip(')')}; header from "
                  f"the first {m.gguf.read:,} of {m.gguf.size:,} bytes{note}")
        return replace(g.architecture, source=source,
                       extras=dict(g.architecture.extras, gguf_weights=g.weights, hub_commit=m.commit))
    arch = architecture_from_config(m.config, name=label, source=f"{m.source} config.json{note}")
    arch = _with_config(arch, m.config, None)
    extras = dict(arch.extras, hub_commit=m.commit)
    if m.checkpoint is not None:
        extras["checkpoint"] = m.checkpoint
    return replace(arch, extras=extras)


def _with_config(arch: Architecture, cfg: dict, folder: Path | None) -> Architecture:
    """Keep the parsed config and the model folder on the Architecture (``extras["hf_config"]``,
    ``extras["folder"]``) for the facts no layer spec carries (the checkpoint's tensors, its
    ``quantization_config``), so no later stage reads the file again. Callers must not modify them."""
    from dataclasses import replace

    extras = dict(arch.extras, hf_config=cfg)
    if folder is not None:
        extras["folder"] = str(folder)
    return replace(arch, extras=extras)


@lru_cache(maxsize=256)
def _known(text: str, name: str | None) -> Architecture:
    """A known model's Architecture, built once per process (the data files do not change while it runs;
    an Architecture is frozen)."""
    entry = facts.resolve_model(text)
    source = f"{entry['hf_repo']}@{(entry.get('revision') or 'unrecorded')[:12]} config.json ({entry['source']})"
    return architecture_from_config(entry["config"], name=name or entry["id"], source=source)
