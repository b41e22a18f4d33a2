"""A small Hugging Face Hub-compatible HTTP server for the tests (stdlib ``http.server`` on 127.0.0.1, in a thread).

It answers the endpoints ``huggingface_hub`` 2.4.0 calls for what kvmath reads, with the headers the client
checks (read from ``huggingface_hub/file_download.py`` and ``utils/_http.py``):

- ``GET /api/models/{repo}/revision/{rev}`` (``HfApi.model_info``): ``{"id", "sha", "siblings": [{"rfilename"}]}``;
- ``HEAD`` / ``GET /{repo}/resolve/{rev}/{file}`` (``get_hf_file_metadata``, ``hf_hub_download``, ranged reads):
  ``X-Repo-Commit`` (the commit), ``ETag`` (quoted), ``X-Linked-Size`` / ``X-Linked-Etag`` for the large (LFS)
  files, ``Content-Length``; ``Range: bytes=a-b`` answered ``206`` with ``Content-Range``;
- errors as the Hub sends them: ``X-Error-Code: RepoNotFound`` (404), ``RevisionNotFound`` (404),
  ``EntryNotFound`` (404, with ``X-Repo-Commit``), ``GatedRepo`` (401 without a token, 403 with a wrong one).

Large files are *virtual*: the server holds their header bytes and their full size, answers zeros for at most
``read_ahead`` bytes after the header (:data:`READ_AHEAD` for safetensors; the header's size plus 4 MiB for a GGUF,
which a reader doubling its read until the header parses may overshoot by), and refuses (HTTP 416, logged in ``weight_reads``) any read past that, so a test can assert that the weights were never asked
for. Every request is logged in ``log`` as ``(method, path, range)``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


READ_AHEAD = 100_008
"""Bytes past a virtual file's header the server still answers (with zeros): a client's first ranged read
covers more than the header (huggingface_hub reads the first 100 kB of a safetensors file). Past that, a read
is a read of the weights: refused and logged."""


@dataclass
class Virtual:
    """A large file: ``head`` (its first bytes: the safetensors or GGUF header) and its full ``size``."""

    head: bytes
    size: int
    read_ahead: int = READ_AHEAD


@dataclass
class Repo:
    files: dict  # name -> bytes | Virtual
    commit: str
    gated: bool = False
    revisions: tuple = ("main",)


@dataclass
class HubServer:
    repos: dict = field(default_factory=dict)
    token: str = "hf_kvmath_test_token"
    log: list = field(default_factory=list)
    weight_reads: list = field(default_factory=list)

    def add(self, repo: str, files: dict, *, gated: bool = False, revisions=("main",)) -> str:
        """Serve ``files`` as repository ``repo``; returns its commit (a sha1 of the file names and sizes)."""
        h = hashlib.sha1(repo.encode())
        for name in sorted(files):
            v = files[name]
            h.update(name.encode() + str(v.size if isinstance(v, Virtual) else len(v)).encode())
        self.repos[repo] = Repo(dict(files), h.hexdigest(), gated, tuple(revisions))
        return self.repos[repo].commit

    # --- running ---------------------------------------------------------------------------------
    def start(self) -> str:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_HEAD(self):
                server._answer(self, head=True)

            def do_GET(self):
                server._answer(self, head=False)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- answering -------------------------------------------------------------------------------
    def _send(self, h, status, body=b"", headers=None, head=False):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)) if "Content-Length" not in (headers or {}) else headers["Content-Length"])
        h.end_headers()
        if not head and body:
            h.wfile.write(body)

    def _error(self, h, status, code, head, commit=None, message=None):
        headers = {"X-Error-Code": code, "Content-Type": "application/json"}
        if message:
            headers["X-Error-Message"] = message
        if commit:
            headers["X-Repo-Commit"] = commit
        body = json.dumps({"error": message or code}).encode()
        self._send(h, status, body, headers, head)

    def _repo(self, h, name, rev, head):
        repo = self.repos.get(name)
        if repo is None:
            self._error(h, 404, "RepoNotFound", head, message="Repository not found")
            return None
        if rev not in repo.revisions and rev != repo.commit:
            self._error(h, 404, "RevisionNotFound", head, message=f"Invalid rev id: {rev}")
            return None
        return repo

    def _answer(self, h, head):
        from urllib.parse import unquote, urlsplit

        path = unquote(urlsplit(h.path).path)
        rng = h.headers.get("Range")
        self.log.append((h.command, path, rng))
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/(.+))?", path)
        if m:
            repo = self._repo(h, m.group(1), m.group(2) or "main", head)
            if repo is None:
                return
            body = json.dumps({"id": m.group(1), "modelId": m.group(1), "sha": repo.commit, "private": False,
                               "gated": "auto" if repo.gated else False,
                               "siblings": [{"rfilename": f} for f in sorted(repo.files)]}).encode()
            return self._send(h, 200, body, {"Content-Type": "application/json"}, head)
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if not m:
            return self._error(h, 404, "RepoNotFound", head, message="Repository not found")
        repo = self._repo(h, m.group(1), m.group(2), head)
        if repo is None:
            return
        if repo.gated:
            auth = h.headers.get("Authorization", "")
            if not auth:
                return self._error(h, 401, "GatedRepo", head, message="Access to model is restricted. You must have "
                                   "access to it and be authenticated to access it. Please log in.")
            if auth != f"Bearer {self.token}":
                return self._error(h, 403, "GatedRepo", head, message="Access to model is restricted and you are not "
                                   "in the authorized list.")
        name = m.group(3)
        if name not in repo.files:
            return self._error(h, 404, "EntryNotFound", head, commit=repo.commit, message="Entry not found")
        data = repo.files[name]
        size = data.size if isinstance(data, Virtual) else len(data)
        etag = hashlib.sha256(name.encode() + str(size).encode() + repo.commit.encode()).hexdigest()
        headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
        if isinstance(data, Virtual):
            headers.update({"X-Linked-Size": str(size), "X-Linked-Etag": f'"{etag}"'})
        start, stop = 0, size
        status = 200
        if rng:
            r = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not r:
                return self._send(h, 416, b"", {"Content-Range": f"bytes */{size}"}, head)
            start = int(r.group(1))
            stop = min(size, int(r.group(2)) + 1) if r.group(2) else size
            status = 206
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
        if isinstance(data, Virtual):
            if head:
                headers["Content-Length"] = str(stop - start)
                return self._send(h, status, b"", headers, head=True)
            if stop > len(data.head) + data.read_ahead:
                self.weight_reads.append((path, rng))
                return self._send(h, 416, b"", {"Content-Range": f"bytes */{size}"}, head)
            body = (data.head + bytes(max(0, stop - len(data.head))))[start:stop]
        else:
            body = data[start:stop]
        if head:
            headers["Content-Length"] = str(len(body))
            return self._send(h, status, b"", headers, head=True)
        self._send(h, status, body, headers, head)


# ---------------------------------------------------------------------------------------------------
# real headers

def safetensors_header(tensors: list[tuple[str, str, tuple]], metadata=None) -> Virtual:
    """A safetensors file's header for ``[(name, dtype, shape)]`` (safetensors dtype names such as ``BF16``), laid
    out as the ``safetensors`` crate writes one (``safetensors/src/tensor.rs`` ``prepare``: tensors in the order
    given, ``data_offsets`` contiguous from 0, the JSON padded with spaces to a multiple of 8), and the file's
    full size; the data itself is not held."""
    bits = {"BF16": 16, "F16": 16, "F32": 32, "F8_E4M3": 8, "I32": 32, "U8": 8, "I8": 8, "I64": 64, "F64": 64}
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        nbytes = n * bits[dtype] // 8
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + nbytes]}
        off += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    head = len(raw).to_bytes(8, "little") + raw
    return Virtual(head, len(head) + off)


def gguf_header(arch: str, kv: dict, tensors: list[tuple[str, tuple, object]], path) -> Virtual:
    """A .gguf file's header written by gguf-py's ``GGUFWriter`` (metadata ``kv`` as ``{key: value}`` through
    ``add_key_value`` with its type, tensor infos through ``add_tensor_info`` with their ggml types), and the full
    size: the header padded to the alignment plus each tensor's bytes padded likewise (``write_ti_data_to_file``'s
    offsets). ``tensors``: ``[(name, shape innermost-first as llama.cpp prints it, GGMLQuantizationType)]``."""
    import numpy as np
    import gguf

    w = gguf.GGUFWriter(str(path), arch)
    for key, (value, vtype) in kv.items():
        if vtype == "array":
            w.add_array(key, value)
        else:
            w.add_key_value(key, value, vtype)
    total = 0
    for name, shape, qtype in tensors:
        block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        n = 1
        for d in shape:
            n *= d
        nbytes = n * type_size // block
        # add_tensor_info takes the numpy (outermost-first) shape and, for a quantised type, the byte shape
        np_shape = list(shape[::-1])
        if qtype not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            np_shape[-1] = np_shape[-1] // block * type_size
            dtype = np.uint8
        else:
            dtype = np.float16 if qtype == gguf.GGMLQuantizationType.F16 else np.float32
        w.add_tensor_info(name, np_shape, np.dtype(dtype), nbytes, raw_dtype=qtype)
        total += gguf.GGUFWriter.ggml_pad(nbytes, w.data_alignment)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    head = open(path, "rb").read()
    # a reader that doubles its read until the header parses overshoots by at most the header, plus its first read
    return Virtual(head, gguf.GGUFWriter.ggml_pad(len(head), w.data_alignment) + total, len(head) + 4 * 2**20)
