"""Models named by their Hugging Face Hub id: ``org/name[@revision]`` (and llama.cpp's ``org/name:QUANT``).

What is read, and how (all through ``huggingface_hub``, imported only when a Hub id is given: the page
calculator runs kvmath in Pyodide without it):

- the repository's file list and commit: ``HfApi.model_info`` (``GET /api/models/{repo}/revision/{rev}``);
- ``config.json`` and ``model.safetensors.index.json``: ``hf_hub_download`` into the HF cache
  (``HF_HOME`` / ``HF_HUB_CACHE``), pinned to the commit the listing named;
- each ``.safetensors`` file's header only: ``get_hf_file_metadata`` (``HEAD``: the file's size from
  ``X-Linked-Size``) and ranged ``GET``s of the 8-byte header length and the header (as
  ``HfApi.parse_safetensors_file_metadata`` does), read as a stream that is closed once the header is in
  hand, so the weights are never transferred even by a server that ignores ``Range``. The header is
  checked by kvmath's own reader (:func:`kvmath.model.checkpoint.parse_safetensors_header`);
- a ``.gguf`` file's header: a ranged read of its first :data:`GGUF_FIRST_READ` bytes, doubled until the
  header parses (kvmath's bounded GGUF reader), at most :data:`GGUF_MAX_READ`.

Headers, the file list and the commit each revision resolved to are kept in the HF assets cache
(``huggingface_hub.cached_assets_path("kvmath", ...)``; ``HF_ASSETS_CACHE``), so that ``HF_HUB_OFFLINE=1`` (or
``offline=True``) answers from the cache, naming what is missing when it cannot. ``HF_TOKEN`` is sent for
gated and private repositories; ``HF_ENDPOINT`` points at another Hub (the tests' server on 127.0.0.1).
Every failure is one :class:`~kvmath.errors.KvMathError` line: unknown repository (404), gated or private
without access (401 / 403), unknown revision, no network, nothing cached offline, a Hub too slow to answer
(each read has a wall-clock bound, :func:`_bounded`: :data:`TIMEOUT_S`, plus the bytes asked for at
:data:`MIN_RATE`), more than :data:`MAX_SHARDS` safetensors files.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .errors import KvMathError

HUB_ID = re.compile(
    r"(?P<repo>[A-Za-z0-9](?:[\w.-]{0,94}[\w])?/[A-Za-z0-9](?:[\w.-]{0,94}[\w])?)"
    r"(?:@(?P<revision>[\w.][\w./-]{0,199})|:(?P<quant>[A-Za-z0-9][\w.-]{0,39}))?")
"""A Hub id: ``org/name`` (huggingface_hub's repo-id characters: letters, digits, ``-``, ``_``, ``.``; at most
96 each), then ``@revision`` (a branch, tag or commit) or llama.cpp's ``:QUANT`` tag (``-hf org/name:Q4_K_M``)."""

GGUF_FIRST_READ = 4 * 2**20
"""Bytes of a .gguf file read first (tokenizer arrays make headers of 2-10 MiB)."""
GGUF_MAX_READ = 128 * 2**20
"""Largest .gguf header read (the first read doubles until the header parses, up to this)."""
SAFETENSORS_FIRST_READ = 100_000
"""First ranged read of a safetensors file (huggingface_hub reads 100 kB: "97% of safetensors files have a
metadata size < 100kb", hf_api.py ``parse_safetensors_file_metadata``)."""
MAX_SHARDS = 1024
"""Most safetensors files read for one repository (each a HEAD and one or two ranged GETs; DeepSeek-V3 holds 163).
A listing of thousands is refused at once rather than read for minutes."""
TIMEOUT_S = 10.0
"""Seconds to wait for the Hub (huggingface_hub's ``HF_HUB_ETAG_TIMEOUT`` default)."""
MIN_RATE = 2**20
"""Bytes per second a ranged read must average past its first :data:`TIMEOUT_S` (1 MiB/s): a slower Hub is
refused (:func:`_bounded`) rather than waited on."""
DEFAULT_QUANT = "Q4_K_M"
"""llama.cpp's ``-hf`` default tag: "quant is optional, case-insensitive, default to Q4_K_M, or falls back to
the first file in the repo if Q4_K_M doesn't exist" (llama.cpp ``common/arg.cpp`` ``-hf`` help)."""


@dataclass(frozen=True)
class HubRef:
    """A parsed Hub id: ``repo`` (``org/name``), ``revision`` (None = ``main``), ``quant`` (llama.cpp tag)."""

    repo: str
    revision: str | None = None
    quant: str | None = None

    @property
    def rev(self) -> str:
        return self.revision or "main"

    def __str__(self) -> str:
        return self.repo + (f"@{self.revision}" if self.revision else "") + (f":{self.quant}" if self.quant else "")


@dataclass(frozen=True)
class HubGGUF:
    """A .gguf file's first bytes, kept in the assets cache: ``path`` (holding ``read`` bytes), ``filename`` in
    the repository, ``size`` of the whole file (bytes)."""

    path: str
    filename: str
    size: int
    read: int


@dataclass(frozen=True)
class HubModel:
    """What the Hub gave for one id: ``ref``, the ``commit`` it resolved to, ``files`` (the repository's file
    names), ``config`` (parsed config.json, None for a GGUF-only repository), ``checkpoint`` (a
    :class:`kvmath.model.checkpoint.Checkpoint` from the safetensors headers, None when there are none),
    ``gguf`` (a :class:`HubGGUF`, when a GGUF was asked for or is all there is), ``notes``."""

    ref: HubRef
    commit: str
    files: tuple[str, ...]
    config: dict | None
    checkpoint: object = None
    gguf: HubGGUF | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def source(self) -> str:
        return f"{self.ref.repo}@{self.commit[:12]} (Hugging Face Hub)"


def parse_hub_id(text) -> HubRef | None:
    """``org/name[@revision]`` or ``org/name:QUANT`` -> :class:`HubRef`; None when ``text`` is not of that
    grammar (:data:`HUB_ID`; no ``--`` or ``..``, as huggingface_hub's ``validate_repo_id``). Pure: no import of
    huggingface_hub, no file system access (the caller decides that an existing path is a path)."""
    if not isinstance(text, str) or len(text) > 400:
        return None
    m = HUB_ID.fullmatch(text.strip())
    if not m or "--" in m.group("repo") or ".." in m.group("repo"):
        return None
    rev = m.group("revision")
    if rev is not None and (".." in rev or rev.endswith("/")):
        return None
    return HubRef(m.group("repo"), rev, m.group("quant"))


def is_hub_id(text) -> bool:
    """True when ``text`` has the Hub id grammar and is not an existing path."""
    if parse_hub_id(text) is None:
        return False
    try:
        return not Path(text).exists()
    except OSError:
        return True


# ---------------------------------------------------------------------------------------------------
# environment (read at call time: huggingface_hub reads its constants at import)

def _truthy(v: str | None) -> bool:
    return (v or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def offline_mode(offline: bool | None = None) -> bool:
    """``offline`` when given, else ``HF_HUB_OFFLINE`` (``1`` / ``ON`` / ``YES`` / ``TRUE``, as huggingface_hub), and
    always in Pyodide."""
    if offline is not None:
        return bool(offline)
    import sys

    # the page calculator (Pyodide, sys.platform "emscripten") has no route to the Hub: its cache only
    return _truthy(os.environ.get("HF_HUB_OFFLINE")) or sys.platform == "emscripten"


def endpoint() -> str:
    """``HF_ENDPOINT`` or ``https://huggingface.co``."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _hf_home() -> Path:
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(xdg).expanduser() / "huggingface"


def hub_cache_dir() -> Path:
    """``HF_HUB_CACHE``, else ``$HF_HOME/hub`` (huggingface_hub ``constants.py``)."""
    c = os.environ.get("HF_HUB_CACHE")
    return Path(c).expanduser() if c else _hf_home() / "hub"


def assets_dir() -> Path:
    """``HF_ASSETS_CACHE``, else ``$HF_HOME/assets`` (huggingface_hub ``constants.py``)."""
    c = os.environ.get("HF_ASSETS_CACHE")
    return Path(c).expanduser() if c else _hf_home() / "assets"


def _token() -> str | None:
    return os.environ.get("HF_TOKEN") or None


QUIET_CLIENT = False
"""True in a command (kvmath.clitools.guarded sets it): huggingface_hub's own warnings ("Error while downloading
... Trying to resume download...") are not printed, so a failure is the command's one line; the library leaves
huggingface_hub's logging as the caller has it."""


def _hf():
    try:
        import huggingface_hub
        from huggingface_hub import errors  # noqa: F401
    except ImportError:
        raise KvMathError("a Hub id needs the huggingface_hub package (pip install huggingface_hub); or give the "
                          "path of a config.json, a model folder or a .gguf file") from None
    if QUIET_CLIENT:
        try:
            from huggingface_hub.utils import logging as hf_logging
        except ValueError as e:  # huggingface_hub.constants parses HF_ENDPOINT when first imported
            raise KvMathError(f"HF_ENDPOINT {endpoint()[:200]!r} is not a URL ({e})") from None
        hf_logging.set_verbosity_error()
    return huggingface_hub


# ---------------------------------------------------------------------------------------------------
# errors -> one line

def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:160]


_NETWORK_ERRORS = {"ConnectError", "ConnectTimeout", "TimeoutException", "ReadTimeout", "NetworkError",
                   "RemoteProtocolError", "ConnectionError"}


def _network_error(e: BaseException) -> bool:
    """True when ``e`` or an exception it was raised from is a connection failure or a timeout (the HTTP client's
    classes by name: huggingface_hub 2.x ships httpx2, earlier releases httpx; Python's ConnectionError)."""
    seen = 0
    while e is not None and seen < 8:
        if isinstance(e, (ConnectionError, TimeoutError)) or {c.__name__ for c in type(e).__mro__} & _NETWORK_ERRORS:
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


class HubTooSlow(TimeoutError):
    """A Hub read that did not finish within its wall-clock bound (:func:`_bounded`)."""


def _bounded(seconds: float, fn, *args, **kw):
    """``fn(*args, **kw)`` within ``seconds`` of wall-clock time, else :class:`HubTooSlow` (a TimeoutError, so
    :func:`_network_error` takes it for an unreachable Hub and the cache is tried). huggingface_hub's and httpx's
    timeouts bound each wait for a byte, not a whole read: a server sending one byte a second, or answering a
    stalled download with "Trying to resume download...", would hold a command as long as it likes. The call runs
    in a daemon thread; past the bound it is abandoned (its socket closes when the process exits). Where threads
    cannot start (Pyodide), ``fn`` runs unbounded."""
    import threading

    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args, **kw)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, name="kvmath-hub-read", daemon=True)
    try:
        t.start()
    except RuntimeError:
        return fn(*args, **kw)
    t.join(seconds)
    if t.is_alive():
        raise HubTooSlow(f"no complete answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _hub_error(e: BaseException, ref: HubRef, what: str) -> KvMathError:
    """One line for a huggingface_hub failure on ``what`` (a file name or "the file list")."""
    from huggingface_hub import errors as E

    ep = endpoint()
    if isinstance(e, E.GatedRepoError):
        if _token():
            return KvMathError(f"{ref.repo} is a gated repository and HF_TOKEN has no access to it (HTTP "
                               f"{_status(e)}): accept its terms on the model's Hub page with that account")
        return KvMathError(f"{ref.repo} is a gated repository (HTTP {_status(e)}): accept its terms on the Hub and set "
                           "HF_TOKEN to a token of that account")
    if isinstance(e, E.RevisionNotFoundError):
        return KvMathError(f"{ref.repo} has no revision {ref.rev!r} on {ep} (a branch, tag or commit of the repository)")
    if isinstance(e, E.RepositoryNotFoundError):
        auth = "" if _token() else " (a private repository needs HF_TOKEN)"
        return KvMathError(f"unknown Hugging Face repository {ref.repo!r} on {ep} (HTTP {_status(e)}){auth}"
                           f"{_suggest(ref)}")
    if isinstance(e, E.LocalEntryNotFoundError) or _network_error(e):
        return KvMathError(f"cannot reach the Hugging Face Hub at {ep} ({_why(_root(e))}) for {ref.repo} {what}, and "
                           f"it is not in the HF cache ({hub_cache_dir()}): check the network or HF_ENDPOINT, or run "
                           "once online")
    if isinstance(e, E.EntryNotFoundError):
        return KvMathError(f"{ref.repo}@{ref.rev} has no {what}")
    if isinstance(e, E.HfHubHTTPError):
        code = _status(e)
        if code == 401:
            return KvMathError(f"{ref.repo}: the Hub refused {what} (HTTP 401): set HF_TOKEN for a private or gated "
                               "repository")
        return KvMathError(f"{ref.repo}: the Hub at {ep} answered HTTP {code} for {what}")
    return KvMathError(f"{ref.repo}: reading {what} from the Hub failed ({type(e).__name__}: {_why(e)})")


def _root(e: BaseException) -> BaseException:
    for _ in range(8):
        if e.__cause__ is None:
            break
        e = e.__cause__
    return e


def _status(e) -> int | None:
    r = getattr(e, "response", None)
    return getattr(r, "status_code", None)


def _suggest(ref: HubRef) -> str:
    from . import facts

    hint = facts.suggest_model(ref.repo)
    return f": did you mean {hint}?" if hint else ""


# ---------------------------------------------------------------------------------------------------
# the assets cache: the file list, the commit each revision resolved to, headers

def _assets(ref: HubRef, sub: str) -> Path:
    return assets_dir() / "kvmath" / ("models--" + ref.repo.replace("/", "--")) / sub


def _write(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as e:
        raise KvMathError(f"cannot write the HF assets cache {path.parent} ({e.strerror})") from None


def _read_json_file(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        raise KvMathError(f"{path}: unreadable kvmath cache file; delete it and run once online") from None


def _offline_missing(ref: HubRef, what: str) -> KvMathError:
    return KvMathError(f"offline (HF_HUB_OFFLINE / --offline, or no network here): {what} of {ref.repo}@{ref.rev} "
                       "is not in the HF cache; run once online to fill it, or give a config.json / .gguf path")


# ---------------------------------------------------------------------------------------------------
# the steps

def _listing(ref: HubRef, offline: bool) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(commit, file names, notes). Online: ``HfApi.model_info`` (no retries: a dead network fails at once and
    the cache answers); offline: the listing kept from the last online read."""
    notes: tuple[str, ...] = ()
    if not offline:
        hf = _hf()
        try:
            info = _bounded(TIMEOUT_S, hf.HfApi(endpoint=endpoint(), token=_token()).model_info, ref.repo,
                            revision=ref.rev, timeout=TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - every huggingface_hub failure becomes one line
            if not _network_error(e):
                raise _hub_error(e, ref, "the file list") from None
            try:
                commit, files, _ = _listing(ref, True)
            except KvMathError:
                raise _hub_error(e, ref, "(its file list)") from None
            return commit, files, (f"the Hub at {endpoint()} could not be reached ({_why(e)}); answered from the HF "
                                   f"cache ({ref.repo}@{commit[:12]})",)
        commit = info.sha
        if not isinstance(commit, str) or not re.fullmatch(r"[0-9a-f]{40}", commit):
            raise KvMathError(f"{ref.repo}: the Hub at {endpoint()} named no commit for revision {ref.rev!r}")
        files = tuple(sorted(s.rfilename for s in (info.siblings or ()) if isinstance(s.rfilename, str)))
        refs = _read_json_file(_assets(ref, "refs.json")) or {}
        refs[ref.rev] = commit
        _write(_assets(ref, "refs.json"), json.dumps(refs, indent=1).encode())
        _write(_assets(ref, commit) / "files.json", json.dumps(files).encode())
        return commit, files, notes
    commit = ref.rev if re.fullmatch(r"[0-9a-f]{40}", ref.rev) else (_read_json_file(_assets(ref, "refs.json")) or {}).get(ref.rev)
    if not isinstance(commit, str) or not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise _offline_missing(ref, "the file list")
    files = _read_json_file(_assets(ref, commit) / "files.json")
    if not isinstance(files, list):
        raise _offline_missing(ref, "the file list")
    return commit, tuple(str(f) for f in files), notes


def _download(ref: HubRef, commit: str, filename: str, offline: bool, limit: int = 4 * 2**20) -> Path:
    """A small file (config.json, the safetensors index) into the HF cache, pinned to ``commit``."""
    hf = _hf()
    try:
        # config.json and the index are small (read at most 4 MiB and 64 MiB): TIMEOUT_S plus that limit at
        # MIN_RATE (14 s for config.json)
        return Path(_bounded(TIMEOUT_S + limit / MIN_RATE, hf.hf_hub_download, ref.repo, filename,
                             revision=commit, cache_dir=str(hub_cache_dir()), endpoint=endpoint(), token=_token(),
                             local_files_only=offline, etag_timeout=TIMEOUT_S))
    except Exception as e:  # noqa: BLE001
        from huggingface_hub import errors as E

        if offline and isinstance(e, (E.LocalEntryNotFoundError, E.OfflineModeIsEnabled)):
            raise _offline_missing(ref, filename) from None
        raise _hub_error(e, ref, filename) from None


def _json_file(ref: HubRef, commit: str, filename: str, offline: bool, limit: int = 64 * 2**20):
    from .validate import parse_json, read_bounded

    path = _download(ref, commit, filename, offline, limit)
    # bounded, regular, depth-capped and duplicate-key-free, as a local file (kvmath.validate)
    return parse_json(read_bounded(path, limit, f"{ref.repo} {filename}"), f"{ref.repo} {filename}", limit)


def _session_headers() -> dict:
    from huggingface_hub.utils import build_hf_headers

    h = build_hf_headers(token=_token(), library_name="kvmath")
    h["Accept-Encoding"] = "identity"
    return h


def _url(ref: HubRef, commit: str, filename: str) -> str:
    from huggingface_hub import hf_hub_url

    return hf_hub_url(ref.repo, filename, revision=commit, endpoint=endpoint())


def _size(ref: HubRef, commit: str, filename: str) -> int:
    """The file's size from a HEAD (``X-Linked-Size`` for LFS files, else ``Content-Length``)."""
    from huggingface_hub import get_hf_file_metadata

    try:
        meta = _bounded(TIMEOUT_S, get_hf_file_metadata, _url(ref, commit, filename), token=_token(), timeout=TIMEOUT_S)
    except Exception as e:  # noqa: BLE001
        raise _hub_error(e, ref, filename) from None
    if not isinstance(meta.size, int) or meta.size < 0:
        raise KvMathError(f"{ref.repo} {filename}: the Hub gave no file size (X-Linked-Size / Content-Length)")
    return meta.size


def _range(ref: HubRef, commit: str, filename: str, start: int, stop: int) -> bytes:
    """Bytes ``[start, stop)`` of a file, by a ranged GET read as a stream and closed at ``stop``: a server that
    ignores ``Range`` (status 200) sends the file from its start, and only the bytes below ``stop`` are taken."""
    if stop <= start:
        return b""
    try:
        return _bounded(TIMEOUT_S + (stop - start) / MIN_RATE, _range_read, ref, commit, filename, start, stop)
    except KvMathError:
        raise
    except Exception as e:  # noqa: BLE001
        raise _hub_error(e, ref, filename) from None


def _range_read(ref: HubRef, commit: str, filename: str, start: int, stop: int) -> bytes:
    """:func:`_range`'s read, unbounded in time (the caller bounds it)."""
    from huggingface_hub import get_session
    from huggingface_hub.utils import hf_raise_for_status

    headers = dict(_session_headers(), Range=f"bytes={start}-{stop - 1}")
    with get_session().stream("GET", _url(ref, commit, filename), headers=headers, timeout=TIMEOUT_S,
                              follow_redirects=True) as r:
        if r.status_code >= 400:
            r.read()
            hf_raise_for_status(r)
        skip = start if r.status_code == 200 else 0  # Range ignored: the body starts at byte 0
        want = stop - start
        buf = bytearray()
        for chunk in r.iter_bytes():
            if skip:
                cut = min(skip, len(chunk))
                chunk, skip = chunk[cut:], skip - cut
            buf += chunk
            if len(buf) >= want:
                break
    return bytes(buf[:want])


def safetensors_header(ref: HubRef, commit: str, filename: str, offline: bool):
    """One safetensors file's tensor table from its header only: ``(tensors, metadata, file size)``. Online: a
    HEAD for the size, then at most two ranged reads (the first :data:`SAFETENSORS_FIRST_READ` bytes, then the
    rest of the header); kept in the assets cache. Raises KvMathError."""
    from .model.checkpoint import MAX_HEADER_BYTES, parse_safetensors_header

    where = f"{ref.repo}@{commit[:12]} {filename}"
    cache = _assets(ref, commit) / "safetensors" / (filename.replace("/", "--") + ".header")
    meta_path = cache.with_name(cache.name + ".json")
    kept = _read_json_file(meta_path)
    if isinstance(kept, dict) and isinstance(kept.get("size"), int) and cache.is_file():
        head, size = cache.read_bytes(), kept["size"]
    elif offline:
        raise _offline_missing(ref, f"the safetensors header of {filename}")
    else:
        size = _size(ref, commit, filename)
        head = _range(ref, commit, filename, 0, min(size, 8 + SAFETENSORS_FIRST_READ))
        if len(head) >= 8:
            (n,) = struct.unpack("<Q", head[:8])
            if n <= MAX_HEADER_BYTES and n <= size - 8 and len(head) < 8 + n:
                head += _range(ref, commit, filename, len(head), 8 + n)
            head = head[:8 + n] if len(head) >= 8 + n else head
        tensors, m = parse_safetensors_header(head, size, where, filename)  # refuse before keeping it
        _write(cache, head)
        _write(meta_path, json.dumps({"size": size}).encode())
        return tensors, m, size
    tensors, m = parse_safetensors_header(head, size, where, filename)
    return tensors, m, size


HEADER_READERS = 8
"""Shards whose headers are read at once (each a HEAD and one or two ranged GETs): a 163-shard DeepSeek-V3 or a
hostile 3,000-file listing takes seconds, not one round trip after another."""


def _headers(ref: HubRef, commit: str, wanted, offline: bool) -> list:
    """:func:`safetensors_header` of each file of ``wanted``, in that order, :data:`HEADER_READERS` at a time
    online (one at a time from the cache, or where threads cannot start). The first failure is raised."""
    if offline or len(wanted) < 2:
        return [safetensors_header(ref, commit, f, offline) for f in wanted]
    from concurrent.futures import ThreadPoolExecutor

    try:
        pool = ThreadPoolExecutor(max_workers=HEADER_READERS, thread_name_prefix="kvmath-hub-headers")
    except RuntimeError:  # pragma: no cover - Pyodide
        return [safetensors_header(ref, commit, f, offline) for f in wanted]
    with pool:
        futures = [pool.submit(safetensors_header, ref, commit, f, offline) for f in wanted]
        try:
            return [fut.result() for fut in futures]
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise


def _checkpoint(ref: HubRef, commit: str, files: tuple[str, ...], config: dict | None, offline: bool):
    """The tensor table of the repository's top-level safetensors files (all shards the index names), or None
    when it holds none. Raises KvMathError for an index naming files the repository does not hold."""
    from .model.checkpoint import Checkpoint, _quant_method, check_tensor_files

    top = [f for f in files if "/" not in f]
    index = None
    if "model.safetensors.index.json" in top:
        index = _json_file(ref, commit, "model.safetensors.index.json", offline)
        if not isinstance(index, dict) or not isinstance(index.get("weight_map"), dict):
            raise KvMathError(f"{ref.repo} model.safetensors.index.json: no weight_map object")
        wanted = sorted({str(v) for v in index["weight_map"].values()})
        missing = [w for w in wanted if w not in files]
        if missing:
            raise KvMathError(f"{ref.repo}@{commit[:12]}: the index names {missing[0]}, which the repository does not "
                              f"hold ({len(missing)} of {len(wanted)} files missing)")
    else:
        wanted = [f for f in top if f.endswith(".safetensors")]
    if not wanted:
        return None
    if len(wanted) > MAX_SHARDS:
        raise KvMathError(f"{ref.repo}: {len(wanted)} safetensors files (at most {MAX_SHARDS})")
    tensors, meta = [], {}
    for t, m, _ in _headers(ref, commit, wanted, offline):
        tensors.extend(t)
        meta.update(m)
    where = f"{ref.repo}@{commit[:12]}"
    check_tensor_files(where, tensors, index["weight_map"] if index is not None else None, config)
    total = (index or {}).get("metadata", {}).get("total_size") if isinstance((index or {}).get("metadata"), dict) else None
    total = total if isinstance(total, int) and not isinstance(total, bool) else None
    quant = _quant_method(config) if isinstance(config, dict) else None
    return Checkpoint(tuple(sorted(tensors, key=lambda t: t.name)),
                      f"{where} safetensors headers ({len(wanted)} file{'s' * (len(wanted) > 1)}, ranged reads from "
                      "the Hugging Face Hub)", False, quant, total, meta)


_TRUNCATED = ("remain", "runs past the end")
"""kvmath.model.gguf's words for a header that runs past the bytes it was given."""

_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$")


def pick_gguf(ref: HubRef, files: tuple[str, ...]) -> str:
    """The .gguf file llama.cpp's ``-hf org/name[:QUANT]`` would take: the tag matched case-insensitively in the
    file names (default :data:`DEFAULT_QUANT`, else the first file without a tag), ``mmproj`` files left out.
    Raises KvMathError naming the tags present when the tag matches none or a split model is chosen."""
    ggufs = [f for f in files if f.lower().endswith(".gguf") and "mmproj" not in f.lower()]
    if not ggufs:
        raise KvMathError(f"{ref.repo}@{ref.rev} holds no config.json and no .gguf file")
    tag = (ref.quant or DEFAULT_QUANT).upper()
    hits = [f for f in ggufs if tag in Path(f).name.upper()]
    if not hits and ref.quant is None:
        hits = ggufs[:1]
    if not hits:
        tags = sorted({m.group(0).upper() for f in ggufs for m in [re.search(r"(?i)(I?Q\d\w*|B?F(?:16|32))", Path(f).stem)] if m})
        raise KvMathError(f"{ref.repo} has no .gguf file for tag {ref.quant!r}; its files carry: "
                          f"{', '.join(tags) or ', '.join(ggufs[:8])}")
    hits.sort(key=lambda f: (len(Path(f).name), f))
    chosen = hits[0]
    m = _SPLIT.search(chosen)
    if m and m.group(2) != "00001":
        raise KvMathError(f"{ref.repo} {chosen}: a split GGUF ({int(m.group(2))} files); kvmath reads one-file GGUFs "
                          "only (download the shards and pass the first with the others beside it is not read either)")
    return chosen


def gguf_head(ref: HubRef, commit: str, filename: str, offline: bool) -> HubGGUF:
    """A .gguf file's header, by ranged reads of its first bytes (:data:`GGUF_FIRST_READ`, doubled until kvmath's
    GGUF reader parses it, at most :data:`GGUF_MAX_READ`), kept in the assets cache. Raises KvMathError."""
    from .model.gguf import read_header

    cache = _assets(ref, commit) / "gguf" / Path(filename).name
    meta_path = cache.with_name(cache.name + ".json")
    kept = _read_json_file(meta_path)
    if isinstance(kept, dict) and isinstance(kept.get("size"), int) and cache.is_file():
        read_header(cache, file_size=kept["size"])
        return HubGGUF(str(cache), filename, kept["size"], cache.stat().st_size)
    if offline:
        raise _offline_missing(ref, f"the GGUF header of {filename}")
    size = _size(ref, commit, filename)
    want = min(size, GGUF_FIRST_READ)
    data = b""
    while True:
        data += _range(ref, commit, filename, len(data), want)
        _write(cache, data)
        try:
            read_header(cache, file_size=size)
            break
        except KvMathError as e:
            # only a header that runs past the bytes at hand grows the read (kvmath.model.gguf's reader says what
            # "remain", or that a string "runs past the end"); a bad magic, version or type is refused at once
            short = any(w in str(e) for w in _TRUNCATED)
            m = re.search(r"needs ([0-9,]+) bytes at offset ([0-9,]+)", str(e))
            if short and m and int(m.group(1).replace(",", "")) + int(m.group(2).replace(",", "")) > GGUF_MAX_READ:
                short = False  # a header that says it runs past GGUF_MAX_READ: no point reading on to the bound
            if want >= size or want >= GGUF_MAX_READ or not short:
                cache.unlink(missing_ok=True)
                more = "" if want >= size or not short else \
                    f" (its header is not within the first {want:,} bytes read)"
                raise KvMathError(f"{ref.repo} {filename}: {str(e).split(': ', 1)[-1]}{more}") from None
            want = min(size, want * 2, GGUF_MAX_READ)
    _write(meta_path, json.dumps({"size": size}).encode())
    return HubGGUF(str(cache), filename, size, len(data))


def fetch(text: str, *, offline: bool | None = None, want_gguf: bool | None = None) -> HubModel:
    """Resolve a Hub id (:func:`parse_hub_id`) to its config.json, safetensors headers and, for a GGUF (a
    ``:QUANT`` tag, ``want_gguf=True``, or a repository with no config.json), one .gguf header. ``offline``:
    None reads ``HF_HUB_OFFLINE``. Raises KvMathError (one line) for a string that is not a Hub id, an unknown
    repository or revision, a gated one without access, no network with nothing cached, nothing cached offline,
    and any malformed file."""
    ref = parse_hub_id(text)
    if ref is None:
        raise KvMathError(f"{str(text)[:200]!r} is not a Hugging Face Hub id (org/name, org/name@revision or "
                          "org/name:QUANT)")
    off = offline_mode(offline)
    commit, files, notes = _listing(ref, off)
    if notes:
        off = True  # the Hub is unreachable: every later read from the cache
    gguf_wanted = want_gguf if want_gguf is not None else (ref.quant is not None or "config.json" not in files)
    config = None
    if "config.json" in files and not gguf_wanted:
        config = _json_file(ref, commit, "config.json", off, 4 * 2**20)
        if not isinstance(config, dict):
            raise KvMathError(f"{ref.repo} config.json is not a JSON object")
    if gguf_wanted:
        g = gguf_head(ref, commit, pick_gguf(ref, files), off)
        return HubModel(ref, commit, files, None, None, g, notes)
    if config is None:
        raise KvMathError(f"{ref.repo}@{ref.rev} holds no config.json")
    return HubModel(ref, commit, files, config, _checkpoint(ref, commit, files, config, off), None, notes)
