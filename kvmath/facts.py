"""The only reader of kvmath's data folder: model facts, cards, presets, measurements, fitted constants.

In a checkout the folder is the repository's top-level ``data/``; in an installed wheel or sdist it
ships inside the package as ``kvmath/data`` (``pyproject.toml`` maps one to the other). Every file
says where its facts come from (``data/README.md``). Files are read once and cached; callers get
copies they may change.
"""

from __future__ import annotations

import copy
import csv
import difflib
import json
import re
from functools import lru_cache
from pathlib import Path

from .errors import KvMathError, choices

_HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def data_dir() -> Path:
    """The data folder: ``kvmath/data`` when installed, else the checkout's ``data/``."""
    for candidate in (_HERE / "data", _HERE.parent / "data"):
        if (candidate / "models").is_dir():
            return candidate
    raise KvMathError(f"kvmath's data folder is missing (looked in {_HERE / 'data'} and {_HERE.parent / 'data'}); "
                      "reinstall kvmath")


@lru_cache(maxsize=None)
def _json(relative: str):
    path = data_dir() / relative
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KvMathError(f"kvmath data file {relative} is missing; reinstall kvmath") from None


def read_json(relative: str):
    """A JSON file under the data folder (``"cards.json"``, ``"calibration/vllm_non_kv.json"``), a copy."""
    return copy.deepcopy(_json(relative))


@lru_cache(maxsize=None)
def _csv(relative: str) -> tuple[dict, ...]:
    path = data_dir() / relative
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return tuple(dict(row) for row in csv.DictReader(f))
    except FileNotFoundError:
        raise KvMathError(f"kvmath data file {relative} is missing; reinstall kvmath") from None


def read_csv(relative: str) -> list[dict]:
    """The rows of a CSV file under the data folder, as dicts of strings (a copy)."""
    return [dict(r) for r in _csv(relative)]


def write_json(relative: str, obj) -> Path:
    """Write ``obj`` as a JSON file under the data folder (one space indent, keys in the given order, a
    final newline) and forget the cached copy. For the commands that write data, such as the vLLM fit
    (``python -m kvmath.engines.vllm.calibration --write``); returns the path written."""
    path = data_dir() / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    _json.cache_clear()
    return path


# --- models -------------------------------------------------------------------------------------

USER_DATA_ENV = "KVMATH_USER_DATA_DIR"
"""Environment variable naming the user data folder instead of platformdirs' default."""


def user_data_dir() -> Path:
    """The user's own data folder: models added with ``python -m kvmath.book.model_chapter --add-model``
    (``models/<id>.json`` and the byte-exact config it was made from, ``configs/<id>.json``). It is
    ``$KVMATH_USER_DATA_DIR`` when set, else ``platformdirs.user_data_dir("kvmath")`` (Linux:
    ``$XDG_DATA_HOME/kvmath``, by default ``~/.local/share/kvmath``). It lies outside the package, so an
    installed wheel can be given new models. The folder may not exist."""
    import os

    given = os.environ.get(USER_DATA_ENV)
    if given:
        return Path(given).expanduser()
    try:
        import platformdirs
    except ImportError:  # a declared dependency; without it, its rule for Linux (XDG base directories)
        return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "kvmath"
    return Path(platformdirs.user_data_dir("kvmath", appauthor=False))


@lru_cache(maxsize=1)
def _models() -> dict[str, dict]:
    """Packaged models first (``data/models``), then the user data folder's; a user entry never replaces a
    packaged one (``--add-model`` refuses a packaged id)."""
    out = {}
    for path in sorted((data_dir() / "models").glob("*.json")):
        entry = json.loads(path.read_text(encoding="utf-8"))
        out.setdefault(entry["id"], entry)
    folder = user_data_dir() / "models"
    _BROKEN.clear()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            entry = _user_entry(path)
        except KvMathError as e:  # one bad file must not take every built-in model down with it
            _BROKEN[path.stem.lower()] = str(e)
            continue
        out.setdefault(entry["id"], entry)
    return out


_BROKEN: dict[str, str] = {}
"""User model entries that could not be read, by file stem (``--add-model`` names the file ``<id>.json``): the
message naming the file. Filled by :func:`_models`; a lookup of that id, or of an unknown one, names them."""


def broken_user_models() -> dict[str, str]:
    """The user data folder's unreadable model entries: file stem -> the one-line reason naming the file."""
    _models()
    return dict(_BROKEN)


USER_ENTRY_BYTES = 16 * 2**20
"""Largest user model entry read (``<user data folder>/models/<id>.json``; --add-model writes a few kB)."""


def _user_entry(path: Path) -> dict:
    """One entry of the user data folder, as ``--add-model`` writes it, checked before any reader takes it: a
    regular file of at most :data:`USER_ENTRY_BYTES` (a FIFO there would block every command), JSON
    (:func:`kvmath.validate.parse_json`), an object with string ``id``, ``hf_repo`` and ``source`` and an object
    ``config`` (the keys the readers take with ``[]``).
    Raises KvMathError naming the file (the user's to fix or remove)."""
    from .validate import parse_json, read_bounded

    where = f"user model entry {path}"
    entry = parse_json(read_bounded(path, USER_ENTRY_BYTES, "user model entry"), where, USER_ENTRY_BYTES)
    if not isinstance(entry, dict):
        raise KvMathError(f"{where}: not a JSON object (fix or remove it; --add-model writes one)")
    for key, kind in (("id", str), ("hf_repo", str), ("source", str), ("config", dict)):
        if not isinstance(entry.get(key), kind):
            raise KvMathError(f"{where}: {key!r} must be a{'n object' if kind is dict else ' string'}, got "
                              f"{str(entry.get(key))[:40]!r} (fix or remove it; --add-model writes one)")
    return entry


def packaged_models() -> set[str]:
    """Ids of the models that ship with kvmath (``data/models/*.json``), not the user-added ones."""
    return {json.loads(p.read_text(encoding="utf-8"))["id"] for p in (data_dir() / "models").glob("*.json")}


def forget_models() -> None:
    """Drop the cached model table (after ``--add-model`` wrote a new entry)."""
    _models.cache_clear()
    _entry_by_key.cache_clear()


def known_models() -> dict[str, dict]:
    """The models kvmath knows, by id: those it ships (``data/models/*.json``), then the user's own
    (:func:`user_data_dir` ``/models/*.json``)."""
    return copy.deepcopy(_models())


MAX_NAME = 200
"""Longest model id or path kvmath reads (characters)."""


def model_title(model: str) -> str:
    """A known model's display title (``Qwen 3.6 27B``, its entry's ``title``), else ``model`` itself."""
    entry = known_models().get(model)
    return entry.get("title", model) if entry else model


def resolve_model(name: str) -> dict:
    """The data entry of a known model by kvmath id (``qwen3.6-27b``) or HF repo (``Qwen/Qwen3.6-27B``):
    a copy the caller may change.

    Raises KvMathError naming the closest known id when one is near, else listing them all.
    """
    return copy.deepcopy(model_entry(name))


@lru_cache(maxsize=256)
def _entry_by_key(key: str) -> dict | None:
    for entry in _models().values():
        if key == entry["id"] or key == entry["hf_repo"].lower():
            return entry
    return None


def model_entry(name: str) -> dict:
    """``resolve_model`` without the copy: the shared entry itself, for readers on a hot path (the vLLM
    budget reads the kept config several times per call). Callers must not change it.

    Raises KvMathError as ``resolve_model`` does.
    """
    if not isinstance(name, str):
        raise KvMathError(f"a model is a known id or a config path, got {type(name).__name__}")
    if len(name) > MAX_NAME:
        raise KvMathError(f"model name is {len(name)} characters long; ids and paths are at most {MAX_NAME}")
    if _CONTROL.search(name):
        raise KvMathError(f"model name {name[:80]!r} holds a control character (a newline, tab, NUL or escape); "
                          "give the id or path alone")
    key = name.strip().lower()
    found = _entry_by_key(key)
    if found is not None:
        return found
    models = _models()
    if key in _BROKEN:  # the model asked for is the unreadable user entry itself
        raise KvMathError(_BROKEN[key])
    hint = suggest_model(name)
    if hint:
        raise KvMathError(f"unknown model {name!r}: did you mean {hint}? (or pass the path of a config.json)")
    unread = f"; unreadable user entries: {'; '.join(list(_BROKEN.values())[:2])}" if _BROKEN else ""
    raise KvMathError(
        f"unknown model {name!r}: not a file and not a known model id; known: {choices(models)} "
        f"(or pass the path of a config.json){unread}"
    )


def find_model(name: str) -> dict | None:
    """The shared data entry of a known model by kvmath id or HF repo (case-insensitive), or None. Callers must
    not change it."""
    if not isinstance(name, str) or len(name) > MAX_NAME or _CONTROL.search(name):
        return None
    return _entry_by_key(name.strip().lower())


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""A control character: never part of a model id, a Hub id or a path a user means (``'qwen3-32b\\n'`` was
matched as ``qwen3-32b`` through ``str.strip``)."""


_SIZE = re.compile(r"(?<![a-z0-9])(?:\d+x)?a?\d+(?:\.\d+)?[bm](?![a-z0-9])")
_FAMILY = re.compile(r"[a-z]+(?:[-_]?v?\d+(?:\.\d+)*)?")


def _family_size(name: str) -> tuple[str, frozenset]:
    """(family, sizes) of a model name: the family is the leading word with its version (``qwen3.6``,
    ``mixtral``, ``llama-3.1``, ``gemma-4``), the sizes every parameter count token (``27b``, ``a3b``,
    ``8x7b``); the org of a repo name is dropped."""
    base = name.strip().lower().rsplit("/", 1)[-1]
    base = re.sub(r"^meta-(?=llama)", "", base)
    m = _FAMILY.match(_SIZE.sub(" ", base))
    fam = m.group(0).replace("_", "-") if m else ""
    return fam, frozenset(_SIZE.findall(base))


def suggest_model(name: str) -> str | None:
    """The known model id to suggest for an unknown ``name``: only one of the same family and the same sizes
    (``Qwen/Qwen3.6-27B-FP8`` -> ``qwen3.6-27b``; nothing for ``Mixtral-8x7B`` against ``mistral-7b-v0.1`` or
    ``Qwen2.5-72B`` against ``qwen2.5-7b``), the closest of those by spelling; a name with no whole size (a typo
    such as ``qwen3.6-27``) gets the same family's closest spelling (difflib ratio at least 0.75). None when
    there is none."""
    if not isinstance(name, str) or len(name) > MAX_NAME:
        return None
    fam, sizes = _family_size(name)
    if not fam:
        return None
    models = _models()
    key = name.strip().lower().rsplit("/", 1)[-1]

    def closeness(i):
        repo = models[i]["hf_repo"].lower().rsplit("/", 1)[-1]
        return max(difflib.SequenceMatcher(None, key, n).ratio() for n in (i, repo)), i

    if sizes:
        same = [i for i, e in models.items() if any(_family_size(n) == (fam, sizes) for n in (i, e["hf_repo"]))]
    else:  # no whole size in the name ("qwen3.6-27", a typo): the same family, spelt within 0.75 (difflib)
        same = [i for i, e in models.items() if any(_family_size(n)[0] == fam for n in (i, e["hf_repo"]))
                and closeness(i)[0] >= 0.75]
    return max(same, key=closeness) if same else None


def reference_config_path(filename: str) -> Path:
    """A reference ``config.json`` copied from its public source (``data/configs/<org>__<name>.json``;
    ``data/configs/SOURCES.md`` gives repository, revision and sha256)."""
    for path in (data_dir() / "configs" / filename, user_data_dir() / "configs" / filename):
        if path.is_file() and "/" not in filename and filename not in ("", ".", ".."):
            return path
    raise KvMathError(f"no reference config {filename!r}; known: {choices(reference_configs())}")


def reference_config(model_id: str, *, copy_: bool = True) -> dict | None:
    """The whole reference ``config.json`` of a known model (the file its entry's ``source`` names under
    ``data/configs/``), parsed; None when the entry names no such file. The entry's own ``config`` keeps only
    the keys the Architecture reads; the weights estimate needs the rest (``intermediate_size``,
    ``quantization_config``, ``vision_config``, ...). ``copy_=False``: the shared parsed file, for readers that
    do not change it (the budget's hot path). Raises KvMathError for an unknown model."""
    name = reference_config_name(model_id)
    if not name:
        return None
    return copy.deepcopy(_reference_config(name)) if copy_ else _reference_config(name)


def reference_config_name(model_id: str) -> str | None:
    """The file name under ``data/configs/`` (or the user data folder's ``configs/``) that a known model's
    ``source`` names, or None."""
    import re

    m = re.match(r"(?:data|user)/configs/([^\s;()/]+\.json)", str(model_entry(model_id).get("source", "")))
    return m.group(1) if m else None


@lru_cache(maxsize=64)
def _reference_config(filename: str) -> dict:
    path = reference_config_path(filename)
    if path.parent == data_dir() / "configs":
        return json.loads(path.read_text(encoding="utf-8"))
    from .validate import parse_json, read_bounded  # the user's copy: bounded and checked like any config file

    cfg = parse_json(read_bounded(path, USER_ENTRY_BYTES, "config.json"), str(path), USER_ENTRY_BYTES)
    if not isinstance(cfg, dict):
        raise KvMathError(f"{path}: not a JSON object (a config.json)")
    return cfg


def reference_configs() -> list[str]:
    """File names of the reference configs (``data/configs/*.json``)."""
    folders = (data_dir() / "configs", user_data_dir() / "configs")
    return sorted({p.name for f in folders if f.is_dir() for p in f.glob("*.json")})


# --- cards, presets, deployments -------------------------------------------------------------------

def cards() -> dict:
    """Known cards by id: ``total_gib`` as PyTorch reports it, ``nominal_gb``, ``compute_capability``."""
    return read_json("cards.json")["cards"]


def presets() -> dict:
    """The anchor's compose presets, ``{model: {name: {...}}}`` (``data/presets.json``)."""
    return read_json("presets.json")["presets"]


def deployments() -> dict:
    """Checkpoint sizes (GB = 1e9 B) and drafters per known model (``data/deployments.json``)."""
    return read_json("deployments.json")["models"]


def public_boots() -> list[dict]:
    """Public vLLM boot reports, one row each with its URL and quoted log lines
    (``data/measurements/vllm-public-boots.csv``)."""
    return read_csv("measurements/vllm-public-boots.csv")


def is_held_out_boot(rec: dict) -> bool:
    """True for a public boot row kept out of every fit and coverage count: its ``notes`` begin with
    "held out" (data/measurements/README.md). Such rows are priced only by their own held-out test
    (tests/test_vllm_held_out.py), never by ``calibration.public_rows``."""
    return (rec.get("notes") or "").lstrip().lower().startswith("held out")


def source_doc() -> dict:
    """The source document's stated figures (``data/source_doc.json``)."""
    return read_json("source_doc.json")


def errata() -> dict:
    """The source documents' checkable claims, one record each, with the check that tests it
    (``data/errata.json``; ``kvmath.book.errata`` runs them)."""
    return read_json("errata.json")


# --- llama.cpp speed ----------------------------------------------------------------------------

def llamacpp_speed_runs() -> list[dict]:
    """Published llama-bench / llama-server speed runs, one row each with its URL and quoted table line
    (``data/measurements/llamacpp-speed.csv``)."""
    return read_csv("measurements/llamacpp-speed.csv")


def llamacpp_speed_calibration() -> dict:
    """The fitted constants of the llama.cpp speed model (``data/calibration/llamacpp_speed.json``,
    written by ``python -m kvmath.engines.llamacpp.speed --write``)."""
    return read_json("calibration/llamacpp_speed.json")
