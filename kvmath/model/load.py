"""The one entry point from a model as a user names it to an Architecture.

A model is an Architecture (returned as is), a parsed config dict, a ``config.json`` path, a model
folder holding one, a ``.gguf`` file, a known model id / HF repo name (``data/models``), or any other
Hugging Face Hub id ``org/name[@revision]`` (``org/name:QUANT`` for a GGUF repository), read through
``kvmath.hub`` (config.json and safetensors / GGUF headers only, into the HF cache).
"""

from __future__ import annotations

import json
import os
import stat
from functools import lru_cache
from pathlib import Path

from .. import facts
from ..errors import KvMathError
from ..validate import MAX_NAME, check_bool, check_config, check_name, check_regular_file, parse_json, read_bounded
from .checkpoint import check_link
from .hf import architecture_from_config
from .specs import Architecture

MAX_CONFIG_BYTES = 4 * 2**20
"""Largest config.json kvmath reads (published ones are a few KiB)."""


def _parse_json(text, where: str):
    return parse_json(text, where, MAX_CONFIG_BYTES)


def load_architecture(src, *, name: str | None = None, offline: bool | None = None) -> Architecture:
    """Build an Architecture from an Architecture, a config dict, a path (config.json, model folder,
    ``.gguf``), a known model id, or a Hub id: a string of the grammar ``kvmath.hub.HUB_ID`` that is not an
    existing path and not a known model's repository without a revision (that one is read from kvmath's data,
    pinned to the recorded revision). ``offline``: for a Hub id, answer from the HF cache only (None:
    ``HF_HUB_OFFLINE``).

    Every config dict is checked field by field first (:func:`kvmath.validate.check_config`: type, sign,
    range, finiteness of every field a reader uses). A file must be a regular file (a FIFO, a device or
    a folder where a file is due is refused without being opened for reading), at most
    :data:`MAX_CONFIG_BYTES`, JSON nested at most :data:`kvmath.validate.MAX_JSON_DEPTH` levels; a model
    folder's ``config.json`` may be a link only within the folder or into its Hugging Face cache's
    ``blobs`` store (:func:`kvmath.model.checkpoint.check_link`).

    Raises KvMathError for a missing or unreadable file, malformed JSON, an unknown model id (with the
    closest known one), an unknown ``model_type`` (naming the fields that would be needed) and
    impossible values.
    """
    if name is not None:
        check_name(name, "name", maximum=MAX_NAME)
    if offline is not None:
        check_bool(offline, "offline")
    if isinstance(src, Architecture):
        return src
    if isinstance(src, dict):
        cfg = check_config(src)
        arch = architecture_from_config(cfg, name=name or str(cfg.get("model_type") or "config"), source="config dict")
        return _with_config(arch, cfg, None)
    if not isinstance(src, (str, Path)):
        raise KvMathError(f"a model is an id, a path or a config dict, got {type(src).__name__}")
    text = str(src)
    if len(text) > 4096 or "\x00" in text:
        raise KvMathError("model path or id is too long or holds a NUL character")
    path = Path(text)
    folder = None
    try:
        # the text as given, not the Path: pathlib drops a trailing slash, so "config.json/" (a file named as a
        # folder: ENOTDIR for open and stat) would read config.json
        st = os.stat(text) if os.path.lexists(text) else None
    except OSError as e:
        raise KvMathError(f"{text[:200]}: cannot read ({e.strerror})") from None
    if st is None and text.endswith("/") and os.path.lexists(path):
        raise KvMathError(f"{text[:200]}: not a folder (a trailing / names a folder; the file is {path})")
    if st is None and os.path.islink(path):
        raise KvMathError(f"{text[:200]}: a link to nothing (dangling symlink)")
    if st is not None and stat.S_ISDIR(st.st_mode):
        if not os.path.lexists(path / "config.json"):
            raise KvMathError(f"{path}: no config.json in this folder (give a config.json, a model folder holding "
                              "one, or a known model id)")
        name = name or path.resolve().name
        folder = path
        path = path / "config.json"
        check_link(folder, path)
    elif st is not None and path.suffix == ".gguf":
        check_regular_file(path, ".gguf file")
    if path.suffix == ".gguf":
        from .gguf import load_gguf_architecture  # only a GGUF file loads the GGUF reader

        return load_gguf_architecture(path, name=name)
    if st is not None:
        raw = read_bounded(path, MAX_CONFIG_BYTES, "config.json")
        cfg = check_config(_parse_json(raw, str(path)))
        arch = architecture_from_config(cfg, name=name or path.stem, source=str(path))
        return _with_config(arch, cfg, folder)
    if path.suffix == ".json":
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
    cfg = check_config(m.config, f"{m.ref.repo} config.json")  # every field checked, as a local config is
    arch = architecture_from_config(cfg, name=label, source=f"{m.source} config.json{note}")
    arch = _with_config(arch, cfg, None)
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
    return architecture_from_config(check_config(entry["config"]), name=name or entry["id"], source=source)
