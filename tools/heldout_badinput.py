"""Held-out bad-input matrix (issue #25's done-when): every command and front door, run as subprocesses.

    python tools/heldout_badinput.py                 # the whole matrix, 2 workers, a table by class and command
    python tools/heldout_badinput.py --jobs 2 --only api,cli-enum --show 5 --json out.json

Written from the issue's classes, not from the suite's cases: hostile files where a file is due (FIFO,
device, folder, dangling / escaping / looping link: config.json, safetensors, GGUF, index json, mmproj,
draft model, --add-model), deep / huge / duplicate-key JSON, non-finite / negative / zero / list / bool /
string values for the numeric config fields the readers use, the same for every numeric flag, huge repeat
counts, flags of another engine, unknown enum values, empty strings, odd unicode and undecodable bytes,
hostile GGUF and safetensors headers, odd shard names, ``> /dev/full``, and the Python API.

Each case runs with a 20 s timeout and a 4 GiB address-space limit (``RLIMIT_AS``). Outcomes:

- ``traceback``: "Traceback" on stderr;  ``exit3``: exit status 3 (internal error);  ``bad-exit``: another
  status outside {0, 1, 2} (a signal included);  ``hang``: over the timeout;  ``memory``: MemoryError or
  killed;  ``multiline``: exit 2 with more than one line on stderr;  ``accepted``: exit 0 / 1 on a bad input;
  ``badfig``: NaN, infinite or negative figure on stdout of an accepted case;  ``control``: a good input that
  did not answer (the harness's own check);  ``ok``: as it should be.

Exit status 1 when any case is not ``ok``.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
TIMEOUT = 20
MEM = 4 * 2**30

BAD, GOOD, EITHER = "bad", "good", "either"


# --- fixtures -------------------------------------------------------------------------------------------

def _cfg(name: str) -> dict:
    return json.loads((ROOT / "data" / "configs" / name).read_text())


DENSE = "Qwen__Qwen3-32B.json"
HYBRID = "Qwen__Qwen3.6-27B.json"
MOE = "Qwen__Qwen3.6-35B-A3B.json"
SWA = "google__gemma-2-9b.json"
MLA = "deepseek-ai__DeepSeek-V3.json"


def _gguf_str(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _gguf_str(key.encode()) + struct.pack("<I", vtype) + payload


def _u32(k, v):
    return _kv(k, 4, struct.pack("<I", v))


def _i32(k, v):
    return _kv(k, 5, struct.pack("<i", v))


def _f32(k, v):
    return _kv(k, 6, struct.pack("<f", v))


def _s(k, v: bytes):
    return _kv(k, 8, _gguf_str(v))


def _llama_kvs(**over) -> list[bytes]:
    base = {"block_count": 2, "context_length": 4096, "embedding_length": 256, "feed_forward_length": 512,
            "attention.head_count": 4, "attention.head_count_kv": 2}
    base.update(over)
    kvs = [_s("general.architecture", b"llama")]
    for k, v in base.items():
        if isinstance(v, float):
            kvs.append(_f32("llama." + k, v))
        elif v < 0:
            kvs.append(_i32("llama." + k, v))
        else:
            kvs.append(_kv("llama." + k, 10, struct.pack("<Q", v)) if v >= 2**32 else _u32("llama." + k, v))
    return kvs


def _tensor_info(name: str, dims: list[int], ggml_type: int, offset: int, n_dims: int | None = None) -> bytes:
    nd = len(dims) if n_dims is None else n_dims
    return (_gguf_str(name.encode()) + struct.pack("<I", nd) + b"".join(struct.pack("<Q", d) for d in dims)
            + struct.pack("<I", ggml_type) + struct.pack("<Q", offset))


def gguf(kvs: list[bytes], tensors: list[bytes] = (), *, magic=b"GGUF", version=3, n_tensors=None, n_kv=None,
         pad: int = 64) -> bytes:
    head = magic + struct.pack("<I", version)
    head += struct.pack("<Q", len(tensors) if n_tensors is None else n_tensors)
    head += struct.pack("<Q", len(kvs) if n_kv is None else n_kv)
    return head + b"".join(kvs) + b"".join(tensors) + b"\0" * pad


def hostile_ggufs() -> dict[str, bytes]:
    t = [_tensor_info("token_embd.weight", [256, 1000], 1, 0)]
    out = {
        "magic-ggml": gguf(_llama_kvs(), t, magic=b"GGML"),
        "version-0": gguf(_llama_kvs(), t, version=0),
        "version-huge": gguf(_llama_kvs(), t, version=0xFFFFFFFF),
        "n_tensors-2^63": gguf(_llama_kvs(), t, n_tensors=2**63),
        "n_kv-2^64-1": gguf(_llama_kvs(), t, n_kv=2**64 - 1),
        "n_kv-too-many": gguf(_llama_kvs(), t, n_kv=1000),
        "key-len-2^62": gguf([struct.pack("<Q", 2**62) + b"abc"], t),
        "value-type-200": gguf([_kv("general.architecture", 200, b"\0" * 16)], t),
        "array-count-2^61": gguf([_s("general.architecture", b"llama"),
                                  _kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2**61))], t),
        "array-of-arrays-deep": gguf([_s("general.architecture", b"llama"),
                                      _kv("x.deep", 9, struct.pack("<IQ", 9, 1) * 3000 + struct.pack("<IQ", 4, 0))], t),
        "arch-not-utf8": gguf([_s("general.architecture", b"\xff\xfe\xfa")] + _llama_kvs()[1:], t),
        "arch-with-nul": gguf([_s("general.architecture", b"llama\0evil")] + _llama_kvs()[1:], t),
        "arch-unknown": gguf([_s("general.architecture", b"zz-not-an-arch")] + _llama_kvs()[1:], t),
        "block_count-negative": gguf(_llama_kvs(block_count=-5), t),
        "block_count-2^40": gguf(_llama_kvs(block_count=2**40), t),
        "block_count-0": gguf(_llama_kvs(block_count=0), t),
        "context_length-0": gguf(_llama_kvs(context_length=0), t),
        "embedding-nan": gguf(_llama_kvs(embedding_length=float("nan")), t),
        "head_count-0": gguf(_llama_kvs(**{"attention.head_count": 0}), t),
        "head_count_kv-negative": gguf(_llama_kvs(**{"attention.head_count_kv": -2}), t),
        "head_count_kv-over-heads": gguf(_llama_kvs(**{"attention.head_count_kv": 7}), t),
        "tensor-ndims-2^31": gguf(_llama_kvs(), [_tensor_info("token_embd.weight", [256], 1, 0, n_dims=2**31)]),
        "tensor-dims-2^62": gguf(_llama_kvs(), [_tensor_info("token_embd.weight", [2**62, 2**62], 1, 0)]),
        "tensor-type-999": gguf(_llama_kvs(), [_tensor_info("token_embd.weight", [256, 1000], 999, 0)]),
        "tensor-offset-beyond": gguf(_llama_kvs(), [_tensor_info("token_embd.weight", [256, 1000], 1, 2**50)]),
        "alignment-0": gguf(_llama_kvs() + [_u32("general.alignment", 0)], t),
        "alignment-3": gguf(_llama_kvs() + [_u32("general.alignment", 3)], t),
        "truncated-12B": gguf(_llama_kvs(), t)[:12],
        "truncated-mid-kv": gguf(_llama_kvs(), t)[:60],
        "empty": b"",
    }
    return out


def safetensors(header, *, length: int | None = None, tail: bytes = b"") -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + tail


def hostile_safetensors() -> dict[str, bytes]:
    good_t = {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}
    return {
        "len-beyond-file": safetensors({"a": good_t}, length=10**6),
        "len-2^63": safetensors({"a": good_t}, length=2**63),
        "len-2^64-1": safetensors({"a": good_t}, length=2**64 - 1),
        "len-0": safetensors(b"", length=0),
        "three-bytes": b"\x01\x02\x03",
        "not-json": safetensors(b"this is not json at all"),
        "not-utf8": safetensors(b'{"a\xff": 1}'),
        "deep-json": safetensors(b"[" * 200000 + b"]" * 200000),
        "header-list": safetensors([1, 2, 3]),
        "dtype-unknown": safetensors({"a": {"dtype": "Q99", "shape": [4, 4], "data_offsets": [0, 32]}}, tail=b"\0" * 32),
        "shape-negative": safetensors({"a": {"dtype": "BF16", "shape": [-4, 4], "data_offsets": [0, 32]}}, tail=b"\0" * 32),
        "shape-string": safetensors({"a": {"dtype": "BF16", "shape": "4x4", "data_offsets": [0, 32]}}, tail=b"\0" * 32),
        "shape-huge": safetensors({"a": {"dtype": "BF16", "shape": [2**40, 2**40], "data_offsets": [0, 32]}},
                                  tail=b"\0" * 32),
        "shape-float": safetensors({"a": {"dtype": "BF16", "shape": [4.5, 4], "data_offsets": [0, 32]}}, tail=b"\0" * 32),
        "offsets-reversed": safetensors({"a": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [32, 0]}}, tail=b"\0" * 32),
        "offsets-beyond": safetensors({"a": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 2**50]}},
                                      tail=b"\0" * 32),
        "offsets-mismatch": safetensors({"a": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 31]}},
                                        tail=b"\0" * 32),
        "dup-keys": safetensors(b'{"a": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}, '
                                b'"a": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}', tail=b"\0" * 64),
        "nan-in-shape": safetensors(b'{"a": {"dtype": "BF16", "shape": [NaN, 4], "data_offsets": [0, 32]}}',
                                    tail=b"\0" * 32),
        "metadata-not-dict": safetensors({"__metadata__": [1, 2], "a": good_t}, tail=b"\0" * 32),
    }


class World:
    """The temp folder of fixtures: model folders, hostile files, a FIFO, links."""

    def __init__(self, base: Path):
        self.base = base
        self.fifo = base / "fifo"
        os.mkfifo(self.fifo)
        self.fifo_gguf = base / "pipe.gguf"
        os.mkfifo(self.fifo_gguf)
        self.fifo_json = base / "pipe.json"
        os.mkfifo(self.fifo_json)
        self.dir_gguf = base / "dir.gguf"
        self.dir_gguf.mkdir()
        self.dir_json = base / "dir.json"
        self.dir_json.mkdir()
        self.empty_dir = base / "emptydir"
        self.empty_dir.mkdir()
        self.outside = base / "outside"
        self.outside.mkdir()
        (self.outside / "config.json").write_text(json.dumps(_cfg(DENSE)))
        (self.outside / "model.safetensors").write_bytes(safetensors({"a": {"dtype": "BF16", "shape": [4, 4],
                                                                            "data_offsets": [0, 32]}}, tail=b"\0" * 32))
        self.n = 0

    def path(self, name: str) -> Path:
        self.n += 1
        p = self.base / f"f{self.n:04d}-{name}"
        return p

    def config_file(self, name: str, content) -> Path:
        p = self.path(name) / "config.json"
        p.parent.mkdir()
        p.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
        return p

    def folder(self, name: str, config=None, files: dict | None = None, links: dict | None = None) -> Path:
        d = self.path(name)
        d.mkdir()
        if config is not None:
            (d / "config.json").write_bytes(config if isinstance(config, bytes) else json.dumps(config).encode())
        for fn, data in (files or {}).items():
            if data == "FIFO":
                os.mkfifo(d / fn)
            elif data == "DIR":
                (d / fn).mkdir()
            else:
                (d / fn).write_bytes(data)
        for fn, target in (links or {}).items():
            os.symlink(target, d / fn)
        return d


# --- the matrix ------------------------------------------------------------------------------------------

KVMATH = ["-m", "kvmath.cli"]
FIT = ["-m", "kvmath.fit"]
LCPP = ["-m", "kvmath.engines.llamacpp.fit"]
CHAPTER = ["-m", "kvmath.book.model_chapter"]
ENGINES = ["vllm", "llama.cpp", "transformers", "sglang"]


def front_doors(model: str) -> dict[str, list[str]]:
    """Every way a model path or id reaches a reader: the command's argv prefix (without python)."""
    return {
        "kvmath/vllm": KVMATH + ["--config", model, "--engine", "vllm"],
        "kvmath/llama.cpp": KVMATH + ["--config", model, "--engine", "llama.cpp"],
        "kvmath/transformers": KVMATH + ["--config", model, "--engine", "transformers"],
        "kvmath/sglang": KVMATH + ["--config", model, "--engine", "sglang"],
        "fit/--config": FIT + ["--config", model, "--card", "h100"],
        "fit/vllm-serve": FIT + ["vllm", "serve", model, "--card", "h100"],
        "fit/sglang": FIT + ["python", "-m", "sglang.launch_server", "--model-path", model, "--card", "h100"],
        "fit/llama-server": FIT + ["llama-server", "-m", model, "--card", "rtx4090"],
        "lcpp-module": LCPP + ["-m", model, "--card", "rtx4090"],
    }


class Matrix:
    def __init__(self, world: World):
        self.w = world
        self.cases: list[dict] = []

    def add(self, cls: str, door: str, argv: list, expect: str = BAD, *, stdout: str = "pipe", env=None,
            label: str = ""):
        self.cases.append({"cls": cls, "door": door, "argv": [str(a) for a in argv], "expect": expect,
                           "stdout": stdout, "env": env or {}, "label": label})

    def doors(self, cls: str, model, label: str, expect: str = BAD, pick=None, extra=()):
        for door, argv in front_doors(str(model)).items():
            if pick and door not in pick:
                continue
            self.add(cls, door, argv + list(extra), expect, label=label)


def build(world: World, only: set | None) -> list[dict]:
    m = Matrix(world)
    parts = [files_part, config_part, json_part, gguf_part, safetensors_part, shards_part, numeric_flags_part,
             enum_part, cross_engine_part, repeat_part, unicode_part, devfull_part, onboarding_part, api_part,
             controls_part]
    for part in parts:
        name = part.__name__[:-5].replace("_", "-")
        if only and name not in only:
            continue
        part(m, world)
    return m.cases


def controls_part(m: Matrix, w: World):
    for door, argv in front_doors("qwen3-32b").items():
        m.add("control", door, argv, GOOD, label="known id")
    f = w.folder("ctl-dense", _cfg(DENSE))
    for door in ("kvmath/vllm", "fit/--config", "fit/vllm-serve"):
        m.add("control", door, front_doors(str(f))[door], GOOD, label="config folder")
    m.add("control", "fit/calibration", FIT + ["--calibration"], GOOD)
    m.add("control", "fit/json-schema", FIT + ["--json-schema"], GOOD)


def files_part(m: Matrix, w: World):
    """Non-regular files where a file is due, through every front door."""
    cfg = _cfg(DENSE)
    specials = {
        "fifo": w.fifo, "fifo.json": w.fifo_json, "/dev/zero": "/dev/zero", "/dev/urandom": "/dev/urandom",
        "/dev/null": "/dev/null", "/dev/stdin": "/dev/stdin", "dir.json": w.dir_json, "emptydir": w.empty_dir,
        "fifo.gguf": w.fifo_gguf, "dir.gguf": w.dir_gguf, "proc-self-mem": "/proc/self/mem",
    }
    for label, p in specials.items():
        m.doors("file-kind", p, label)
    # inside a model folder
    variants = {
        "config.json FIFO": dict(files={"config.json": "FIFO"}),
        "config.json dir": dict(files={"config.json": "DIR"}),
        "config.json -> /dev/zero": dict(links={"config.json": "/dev/zero"}),
        "config.json dangling": dict(links={"config.json": "nowhere.json"}),
        "config.json escaping": dict(links={"config.json": str(w.outside / "config.json")}),
        "config.json loop": dict(links={"config.json": "loop2.json", "loop2.json": "config.json"}),
        "safetensors FIFO": dict(config=cfg, files={"model-00001-of-00001.safetensors": "FIFO"}),
        "safetensors dir": dict(config=cfg, files={"model-00001-of-00001.safetensors": "DIR"}),
        "safetensors -> /dev/urandom": dict(config=cfg, links={"model.safetensors": "/dev/urandom"}),
        "safetensors dangling": dict(config=cfg, links={"model.safetensors": "gone.safetensors"}),
        "safetensors escaping ..": dict(config=cfg, links={"model.safetensors": "../outside/model.safetensors"}),
        "index.json FIFO": dict(config=cfg, files={"model.safetensors.index.json": "FIFO"}),
        "index.json -> /dev/zero": dict(config=cfg, links={"model.safetensors.index.json": "/dev/zero"}),
    }
    for label, kw in variants.items():
        f = w.folder(label.replace(" ", "_").replace("/", "_").replace(">", ""), kw.get("config"), kw.get("files"),
                     kw.get("links"))
        expect_kv = BAD if label.startswith("config") else EITHER  # the KV readers need only config.json
        for door, argv in front_doors(str(f)).items():
            # llama.cpp prices a folder from its config.json (weights from --quant-mix): no safetensors read
            e = expect_kv if door.startswith(("kvmath/", "fit/llama-server", "lcpp-module")) else BAD
            m.add("file-kind", door, argv, e, label="folder: " + label)
    # other files a flag names
    base = FIT + ["llama-server", "-m", "qwen3-32b", "--card", "rtx4090"]
    for flag in ("--mmproj", "-md", "--model-draft"):
        for label, p in (("fifo", w.fifo_gguf), ("dir", w.dir_gguf), ("/dev/zero", "/dev/zero"),
                         ("missing", w.base / "no-such.gguf")):
            m.add("file-kind", "fit/llama-server", base + [flag, p], label=f"{flag} {label}")
    for label, p in (("fifo", w.fifo), ("/dev/zero", "/dev/zero"), ("dir", w.dir_json)):
        m.add("file-kind", "fit/vllm-serve", FIT + ["vllm", "serve", "qwen3-32b", "--card", "h100",
                                                    "--speculative-config", p], label=f"--speculative-config {label}")
        m.add("file-kind", "fit/llama-server", base + ["-ot", p], label=f"-ot {label}")
        m.add("file-kind", "fit/llama-server", base + ["--imatrix", p], EITHER, label=f"--imatrix {label}")


NUMERIC_FIELDS = {
    # field: values that are wrong for it (all through the text_config of the hybrid or the top of dense)
    "num_hidden_layers": "all", "hidden_size": "all", "intermediate_size": "all", "num_attention_heads": "all",
    "num_key_value_heads": "all", "head_dim": "all", "vocab_size": "all", "max_position_embeddings": "nonzero",
    "rope_theta": "unread", "rms_norm_eps": "unread",
}
HYBRID_FIELDS = ["linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                 "linear_conv_kernel_dim", "full_attention_interval", "partial_rotary_factor", "mtp_num_hidden_layers"]
MOE_FIELDS = ["num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size"]
SWA_FIELDS = ["sliding_window", "query_pre_attn_scalar", "final_logit_softcapping"]
MLA_FIELDS = ["kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "n_routed_experts",
              "first_k_dense_replace", "q_lora_rank", "num_nextn_predict_layers"]

VALUES = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity", "1e309": "1e309", "neg": "-3", "zero": "0",
          "list": "[8]", "true": "true", "str": '"8"', "float": "7.5", "2^70": str(2**70)}
"""Raw JSON text of each value (NaN / Infinity are Python's JSON extensions, which json.load reads)."""


def _expect_value(kind: str, vname: str) -> str:
    if kind == "unread":  # no reader of kvmath takes it (grep: rope_theta, rms_norm_eps, softcapping, ...)
        return EITHER
    if kind == "nonfinite":
        return BAD if vname in ("nan", "inf", "-inf", "1e309") else EITHER
    if kind == "nonzero" and vname == "zero":
        return EITHER
    return BAD


def _with_raw(cfg: dict, section: str | None, key: str, raw: str) -> bytes:
    holder = cfg if section is None else cfg[section]
    holder[key] = "@@V@@"
    return json.dumps(cfg).replace('"@@V@@"', raw).encode()


def config_part(m: Matrix, w: World):
    """Every numeric field the readers take, with every wrong kind of value, rotated over the front doors."""
    doors = list(front_doors("x"))
    i = 0
    specs = [(DENSE, None, k, kind) for k, kind in NUMERIC_FIELDS.items()]
    specs += [(HYBRID, "text_config", k, "all") for k in HYBRID_FIELDS]
    specs += [(MOE, "text_config", k, "all" if k != "shared_expert_intermediate_size" else "nonzero")
              for k in MOE_FIELDS]
    specs += [(SWA, None, k, "all" if k == "sliding_window" else "unread") for k in SWA_FIELDS]
    specs += [(MLA, None, k, "all") for k in MLA_FIELDS]
    for name, section, key, kind in specs:
        for vname, raw in VALUES.items():
            if key in ("partial_rotary_factor",) and vname == "float":
                continue  # 7.5 is simply out of (0, 1]: keep it, it is wrong; but 0.5 would be right
            expect = _expect_value(kind, vname)
            if key in ("first_k_dense_replace", "num_nextn_predict_layers", "mtp_num_hidden_layers",
                       "q_lora_rank", "sliding_window") and vname == "zero":
                expect = EITHER
            if key == "partial_rotary_factor" and vname in ("true",):
                expect = BAD
            data = _with_raw(_cfg(name), section, key, raw)
            p = w.config_file(f"{key}-{vname}", data)
            # two front doors per case, rotating, plus the vLLM budget for every non-finite one
            for d in (doors[i % len(doors)],):
                m.add("config-field", d, front_doors(str(p))[d], expect, label=f"{name[:12]} {key}={vname}")
            i += 1


def json_part(m: Matrix, w: World):
    """Deep, huge, duplicate-key and odd JSON where a config is due."""
    cfg = _cfg(DENSE)
    deep = b'{"a": ' + b"[" * 150000 + b"]" * 150000 + b"}"
    cases = {
        "deep 150k lists": deep,
        "deep 3k objects": b'{"x": ' + b'{"y": ' * 3000 + b"1" + b"}" * 3000 + b"}",
        "deep text_config": json.dumps(cfg)[:-1].encode() + b', "text_config": ' + b'{"t": ' * 500 + b"{}" +
                            b"}" * 500 + b"}",
        "huge 90 MB string": json.dumps(cfg)[:-1].encode() + b', "pad": "' + b"x" * (90 * 2**20) + b'"}',
        "huge 40 MB of keys": b"{" + b",".join(b'"k%d": %d' % (i, i) for i in range(2_000_000)) + b', "a": 1}',
        "2M-element list": json.dumps(cfg)[:-1].encode() + b', "layer_types": [' + b'"full_attention",' * 2_000_000 +
                           b'"x"]}',
        "dup num_hidden_layers": json.dumps(cfg)[:-1].encode() + b', "num_hidden_layers": 2}',
        "dup model_type": json.dumps(cfg)[:-1].encode() + b', "model_type": "llama"}',
        "top-level list": b"[1, 2, 3]",
        "top-level string": b'"qwen3"',
        "top-level null": b"null",
        "empty file": b"",
        "BOM + json": b"\xef\xbb\xbf" + json.dumps(cfg).encode(),
        "utf-16": json.dumps(cfg).encode("utf-16"),
        "not utf-8": json.dumps(cfg).encode()[:-1] + b', "n\xff": 1}',
        "trailing garbage": json.dumps(cfg).encode() + b" }}}garbage",
        "NUL in model_type": json.dumps(dict(cfg, model_type="qwen3\u0000x")).encode(),
        "model_type list": json.dumps(dict(cfg, model_type=["qwen3"])).encode(),
        "model_type empty": json.dumps(dict(cfg, model_type="")).encode(),
        "architectures int": json.dumps(dict(cfg, architectures=5)).encode(),
        "text_config list": json.dumps(dict(cfg, text_config=[1])).encode(),
        "rope_scaling list": json.dumps(dict(cfg, rope_scaling=[2.0])).encode(),
        "rope_scaling factor nan": json.dumps(cfg).replace('"rope_scaling": null',
                                                           '"rope_scaling": {"rope_type": "yarn", "factor": NaN, '
                                                           '"original_max_position_embeddings": 32768}').encode(),
        "rope_scaling factor -4": json.dumps(cfg).replace('"rope_scaling": null',
                                                          '"rope_scaling": {"rope_type": "yarn", "factor": -4, '
                                                          '"original_max_position_embeddings": 32768}').encode(),
        "quant bits nan": json.dumps(cfg)[:-1].encode() + b', "quantization_config": {"quant_method": "awq", '
                                                          b'"bits": NaN, "group_size": 128}}',
        "quant group -7": json.dumps(cfg)[:-1].encode() + b', "quantization_config": {"quant_method": "gptq", '
                                                          b'"bits": 4, "group_size": -7}}',
        "quant_method unknown": json.dumps(cfg)[:-1].encode() + b', "quantization_config": {"quant_method": "zz9"}}',
        "torch_dtype float7": json.dumps(dict(cfg, torch_dtype="float7")).encode(),
        "torch_dtype int": json.dumps(dict(cfg, torch_dtype=16)).encode(),
    }
    doors = list(front_doors("x"))
    for i, (label, data) in enumerate(cases.items()):
        p = w.config_file(label.replace(" ", "_"), data)
        expect = BAD
        picks = doors if label.startswith(("deep", "dup")) else doors[::2] if label.startswith(("huge", "2M")) else [doors[i % 9], doors[(i + 3) % 9],
                                                                             doors[(i + 6) % 9]]
        for d in picks:
            e = EITHER if label == "quant_method unknown" and not d.startswith(("fit/--config", "fit/vllm", "fit/sg"))\
                else expect  # the checkpoint's quantisation matters to its weights, not to a KV-only answer
            m.add("json", d, front_doors(str(p))[d], e, label=label)


def gguf_part(m: Matrix, w: World):
    for label, data in hostile_ggufs().items():
        p = w.path(label) .with_suffix(".gguf")
        p.write_bytes(data)
        for door in ("kvmath/llama.cpp", "fit/llama-server", "lcpp-module"):
            m.add("gguf", door, front_doors(str(p))[door], label=label)
        m.add("gguf", "fit/llama-server", FIT + ["llama-server", "-m", "qwen3-32b", "--mmproj", p, "--card",
                                                 "rtx4090"], label="mmproj " + label)


def safetensors_part(m: Matrix, w: World):
    cfg = _cfg(DENSE)
    for label, data in hostile_safetensors().items():
        f = w.folder("st-" + label, cfg, {"model.safetensors": data})
        for door in ("fit/--config", "fit/vllm-serve", "fit/sglang"):
            m.add("safetensors", door, front_doors(str(f))[door], label=label)


def shards_part(m: Matrix, w: World):
    cfg = _cfg(DENSE)
    one = safetensors({"model.norm.weight": {"dtype": "BF16", "shape": [5120], "data_offsets": [0, 10240]}},
                      tail=b"\0" * 10240)
    names = {
        "3-of-2": ["model-00003-of-00002.safetensors"],
        "0-of-1": ["model-00000-of-00001.safetensors"],
        "1-of-2 only": ["model-00001-of-00002.safetensors"],
        "unpadded 1-of-1": ["model-1-of-1.safetensors"],
        "30 digits": ["model-" + "9" * 30 + "-of-" + "9" * 30 + ".safetensors"],
        "two stems": ["model-00001-of-00001.safetensors", "other-00001-of-00002.safetensors"],
        "same index twice": ["model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors.bak",
                             "model-00002-of-00002.safetensors"],
        "single + shard": ["model.safetensors", "model-00001-of-00002.safetensors"],
        "name with newline": ["model\n-00001-of-00001.safetensors"],
        "hidden .safetensors": [".safetensors"],
        "unicode digits": ["model-\u0661\u0662-of-\u0661\u0662.safetensors"],
    }
    for label, files in names.items():
        f = w.folder("sh-" + label.replace(" ", "_"), cfg, {n: one for n in files})
        exp = EITHER if label in ("hidden .safetensors", "unpadded 1-of-1") else BAD
        for door in ("fit/--config", "fit/vllm-serve", "fit/sglang"):
            m.add("shards", door, front_doors(str(f))[door], exp, label=label)
    index_cases = {
        "index -> ../outside": {"metadata": {"total_size": 10}, "weight_map": {"a": "../outside/model.safetensors"}},
        "index abs path": {"metadata": {"total_size": 10}, "weight_map": {"a": "/etc/passwd"}},
        "index missing shard": {"metadata": {"total_size": 10}, "weight_map": {"a": "model-00001-of-00003.safetensors"}},
        "index total_size -1": {"metadata": {"total_size": -1}, "weight_map": {}},
        "index total_size nan": b'{"metadata": {"total_size": NaN}, "weight_map": {}}',
        "index total_size str": {"metadata": {"total_size": "10GB"}, "weight_map": {}},
        "index weight_map list": {"metadata": {"total_size": 10}, "weight_map": [1]},
        "index deep": b'{"metadata": ' + b"[" * 100000 + b"]" * 100000 + b"}",
        "index list": b"[]",
    }
    for label, idx in index_cases.items():
        data = idx if isinstance(idx, bytes) else json.dumps(idx).encode()
        f = w.folder("ix-" + label.replace(" ", "_").replace("/", "_"), cfg, {"model.safetensors.index.json": data})
        # an index without any shard is the config-only estimate (the weight_map is not followed)
        exp = EITHER if label in ("index -> ../outside", "index abs path", "index missing shard") else BAD
        for door in ("fit/--config", "fit/vllm-serve"):
            m.add("shards", door, front_doors(str(f))[door], exp, label=label)


NUM_BAD = ["nan", "inf", "-inf", "1e309", "-1", "", "abc", "1,2", "0x10", "99999999999999999999999999", "1.5e",
           "--", "١٢"]
"""Values wrong for any numeric flag (the Arabic-Indic digits included: no engine's parser takes them as vLLM
reads ints... Python's int() does, so they are kept as 'either')."""


_ROT = 0


def _num_cases(flag_zero_bad: dict, base: list, door: str, m: Matrix, cls="num-flag", floats=False):
    global _ROT
    for flag, zero_bad in flag_zero_bad.items():
        pool = list(NUM_BAD) + (["0"] if zero_bad else []) + ([] if floats else ["2.5"])
        vals = pool[:2] + [pool[2 + (_ROT + k) % (len(pool) - 2)] for k in range(0, 12, 4)]
        _ROT += 1
        for v in dict.fromkeys(vals):
            exp = EITHER if v == "١٢" else BAD
            m.add(cls, door, base + [flag, v], exp, label=f"{flag} {v!r}")


def numeric_flags_part(m: Matrix, w: World):
    kv = KVMATH + ["--config", "qwen3-32b"]
    _num_cases({"--tp": True, "--max-ctx": True, "--max-num-seqs": True, "--max-num-batched-tokens": True,
                "--block-size": True, "--num-speculative-tokens": False}, kv + ["--engine", "vllm"], "kvmath/vllm", m)
    _num_cases({"--gpu-memory-utilization": True}, kv, "kvmath/vllm", m, floats=True)
    _num_cases({"--kv-cache-memory-bytes": False}, kv, "kvmath/vllm", m)
    _num_cases({"-c": False, "-np": True, "-b": True, "-ub": True, "-ngl": False, "--n-cpu-moe": False,
                "--spec-draft-n-max": False}, kv + ["--engine", "llama.cpp"], "kvmath/llama.cpp", m)
    _num_cases({"--fit-target": False}, kv + ["--engine", "llama.cpp"], "kvmath/llama.cpp", m)
    _num_cases({"--context-length": True, "--max-running-requests": True, "--tp-size": True, "--page-size": True,
                "--max-total-tokens": True, "--dp-size": True, "--max-mamba-cache-size": True},
               kv + ["--engine", "sglang"], "kvmath/sglang", m)
    _num_cases({"--mem-fraction-static": True, "--mamba-full-memory-ratio": True, "--swa-full-tokens-ratio": True},
               kv + ["--engine", "sglang"], "kvmath/sglang", m, floats=True)
    _num_cases({"--max-ctx": True, "--max-num-seqs": True}, kv + ["--engine", "transformers"], "kvmath/transformers", m)
    fit = FIT + ["--model", "qwen3-32b", "--card", "h100"]
    _num_cases({"--tp": True, "--pipeline-parallel-size": True, "--data-parallel-size": True, "--gpus": True,
                "--max-ctx": True, "--max-num-seqs": True, "--num-speculative-tokens": False,
                "--max-num-batched-tokens": True, "--block-size": True, "-O": False}, fit, "fit/--model", m)
    _num_cases({"--mem-util": True, "--drafter-gb": False, "--dflash-draft-gb": False, "--weights-gb": True,
                "--draft-kv-gb": False, "--vram": True}, fit, "fit/--model", m, floats=True)
    serve = FIT + ["vllm", "serve", "Qwen/Qwen3-32B", "--card", "h100"]
    _num_cases({"--tensor-parallel-size": True, "--max-model-len": True, "--gpu-memory-utilization": True},
               serve, "fit/vllm-serve", m, floats=True)
    for v in ["nanGiB", "-1GiB", "infGB", "1e309GB", "24", "24 XB", "", "0GiB", "24GiB24", "1e999MiB"]:
        m.add("num-flag", "fit/--model", fit[:-2] + ["--device-memory", v], label=f"--device-memory {v!r}")
    for v in ["nanGiB", "-1", "1e400", "12Q", "", "1.5.5G"]:
        m.add("num-flag", "kvmath/vllm", kv + ["--kv-cache-memory-bytes", v], label=f"--kv-cache-memory-bytes {v!r}")
    for v in ["32kk", "1e9", "-2", "nan", "0x100", "auto2", "k", "32.5k5"]:
        m.add("num-flag", "fit/vllm-serve", serve + ["--max-model-len", v], label=f"--max-model-len {v!r}")
    ls = FIT + ["llama-server", "-m", "qwen3-32b", "--card", "rtx4090"]
    _num_cases({"-c": False, "-np": True, "-b": True, "-ub": True, "-ngl": False, "--n-cpu-moe": False,
                "-mg": False, "--fit-target": False, "--spec-draft-n-max": False}, ls, "fit/llama-server", m)
    for v in ["inf,1", "-1,1", "1,,1", "0,0", "1e309,1", ",", "1;1", "nan", "1," * 5000 + "1"]:
        m.add("num-flag", "fit/llama-server", ls + ["-ts", v], label=f"-ts {v[:20]!r}")
    for v in ["21,22,-1", "nan,64", "", "99999999999999999999,1", "64,0", "a,b", "32,32,0"]:
        m.add("num-flag", "fit/--model", fit + ["--pipeline-parallel-size", "2", "--layer-partition", v],
              label=f"--layer-partition {v!r}")
    sg = FIT + ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-32B", "--card", "h100"]
    _num_cases({"--tp-size": True, "--context-length": True, "--max-running-requests": True,
                "--mem-fraction-static": True, "--chunked-prefill-size": False, "--cuda-graph-max-bs": False},
               sg, "fit/sglang", m, floats=True)
    lm = LCPP + ["-m", "qwen3-32b", "--card", "rtx4090"]
    _num_cases({"-c": False, "-ngl": False}, lm, "lcpp-module", m)
    for v in ["nanGiB", "-4GiB", "", "infGiB"]:
        m.add("num-flag", "lcpp-module", lm[:-2] + ["--device-memory", v], label=f"--device-memory {v!r}")
    # JSON-valued flags
    for v in ['{"method": "mtp", "num_speculative_tokens": NaN}', '{"method": "mtp", "num_speculative_tokens": -2}',
              '{"method": "mtp", "num_speculative_tokens": 1e309}', '{"method": "mtp", "num_speculative_tokens": "3"}',
              '{"method": "mtp", "num_speculative_tokens": true}', '{"method": "zz", "num_speculative_tokens": 2}',
              '[1]', 'null', '{"method": "mtp", "num_speculative_tokens": 2, "num_speculative_tokens": 3}',
              '{"a": ' * 4000 + '1' + '}' * 4000, '{"method": "mtp", "num_speculative_tokens": 2, "x": ' + '[' * 50
              + ']' * 50 + '}', ""]:
        e = EITHER if '"3"' in v else BAD  # vLLM's pydantic SpeculativeConfig takes "3" as 3
        m.add("json-flag", "fit/vllm-serve", FIT + ["vllm", "serve", "Qwen/Qwen3.6-27B", "--card", "h100",
                                                    "--speculative-config", v], e,
              label=f"--speculative-config {v[:60]!r}")
    for v in ['{"image": -1}', '{"image": NaN}', '{"image": 1e309}', '{"bogus": 1}', '{"image": true}',
              '{"image": "2"}', '[]', '{"image": 2, "image": 0}', '{"image": 99999999999999999999}']:
        m.add("json-flag", "fit/vllm-serve", FIT + ["vllm", "serve", "Qwen/Qwen3.6-27B", "--card", "h100",
                                                    "--limit-mm-per-prompt", v], label=f"--limit-mm-per-prompt {v!r}")
    for v in ['{"max_pixels": -5}', '{"max_pixels": NaN}', '{"max_pixels": 0}', '{"max_pixels": "abc"}',
              '{"max_pixels": [1]}', '{"size": {"longest_edge": -1}}', '{"size": 5}', '{"max_pixels": 1e309}']:
        m.add("json-flag", "fit/vllm-serve", FIT + ["vllm", "serve", "Qwen/Qwen3.6-27B", "--card", "h100",
                                                    "--mm-processor-kwargs", v], label=f"--mm-processor-kwargs {v!r}")


def _next():
    global _ROT
    _ROT += 1


def enum_part(m: Matrix, w: World):
    kv = KVMATH + ["--config", "qwen3-32b"]
    fit = FIT + ["--model", "qwen3-32b", "--card", "h100"]
    ls = FIT + ["llama-server", "-m", "qwen3-32b", "--card", "rtx4090"]
    sg = FIT + ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-32B", "--card", "h100"]
    serve = FIT + ["vllm", "serve", "Qwen/Qwen3-32B", "--card", "h100"]
    table = [
        ("kvmath/vllm", kv, ["--engine", "--kv-format", "--mamba-cache-dtype", "--mamba-ssm-cache-dtype",
                             "--vllm-version"]),
        ("kvmath/llama.cpp", kv + ["--engine", "llama.cpp"], ["-ctk", "-ctv", "-fa", "--spec-type",
                                                              "--llamacpp-build", "-sm", "--quant-mix", "--card"]),
        ("kvmath/sglang", kv + ["--engine", "sglang"], ["--mamba-ssm-dtype", "--attention-backend", "--sglang-version",
                                                        "--kv-format"]),
        ("kvmath/transformers", kv + ["--engine", "transformers"], ["--kv-format"]),
        ("fit/--model", fit, ["--kv-format", "--weights-variant", "--vllm-version", "--attention-backend", "--dtype",
                              "--quantization", "--kv-layout", "--indexer-format", "--compose"]),
        ("fit/--model", FIT + ["--model", "qwen3-32b"], ["--card"]),
        ("fit/vllm-serve", serve, ["--kv-cache-dtype", "--dtype", "--quantization", "--vllm-version"]),
        ("fit/llama-server", ls, ["-ctk", "-ctv", "-fa", "-sm", "--spec-type", "--llamacpp-build", "-dev", "--fit",
                                  "--quant-mix"]),
        ("fit/sglang", sg, ["--kv-cache-dtype", "--attention-backend", "--sglang-version", "--mamba-ssm-dtype"]),
    ]
    for door, base, flags in table:
        for flag in flags:
            pool = ["zz-unknown", "", " ", "AUTO " if flag != "--engine" else "VLLM", "fp8;rm -rf", "x" * 5000]
            for v in (pool[0], pool[1 + _ROT % 5], pool[1 + (_ROT + 2) % 5]):
                _next()
                m.add("enum", door, base + [flag, v], label=f"{flag} {v[:12]!r}")
    for v in ["zz", "", "./nope", "org/", "/", "a" * 300, "qwen3-32b@", "Qwen/Qwen3-32B:"]:
        m.add("enum", "kvmath/vllm", KVMATH + ["--config", v, "--offline"], label=f"--config {v[:20]!r}")
        m.add("enum", "fit/--model", FIT + ["--model", v, "--card", "h100", "--offline"], label=f"--model {v[:20]!r}")
    m.add("enum", "fit/positional", FIT + ["", "--card", "h100"], label="empty positional")
    m.add("enum", "fit/vllm-serve", FIT + ["vllm", "serve", "--card", "h100"], label="serve without model")
    m.add("enum", "fit/llama-server", FIT + ["llama-server", "--card", "h100"], label="llama-server without -m")
    m.add("enum", "fit/sglang", FIT + ["python", "-m", "sglang.launch_server", "--card", "h100"],
          label="sglang without --model-path")
    m.add("enum", "fit/calibration", FIT + ["--calibration", "--model", "no-such-model-zz"], label="calib bad model")
    m.add("enum", "fit/calibration", FIT + ["--calibration", "--tp", "-3"], label="calib bad tp")
    m.add("enum", "fit/calibration", FIT + ["--calibration", "--card", "zz"], label="calib bad card")
    m.add("enum", "fit/calibration", FIT + ["--calibration", "--kv-format", "zz"], label="calib bad kv")
    m.add("enum", "fit/json-schema", FIT + ["--json-schema", "--model", "zz"], label="schema + junk")
    m.add("enum", "fit/json-schema", FIT + ["--json-schema", "extra"], label="schema + positional")


def cross_engine_part(m: Matrix, w: World):
    kv = KVMATH + ["--config", "qwen3-32b"]
    table = {
        "vllm": ["-c", "4096", "-ngl", "99", "--context-length", "4096", "--mem-fraction-static", "0.8", "-ctk",
                 "q8_0", "--page-size", "32", "--tp-size", "2"],
        "llama.cpp": ["--max-num-batched-tokens", "4096", "--block-size", "32", "--tp-size", "2",
                      "--num-speculative-tokens", "2", "--max-total-tokens", "9000", "--tp", "2"],
        "transformers": ["-c", "4096", "--block-size", "32", "--page-size", "16", "-np", "4", "--tp", "2"],
        "sglang": ["--block-size", "32", "-ngl", "99", "--max-num-batched-tokens", "1024", "-c", "1024",
                   "--kv-cache-memory-bytes", "8GiB"],  # the last: kvmath's own pool size for SGLang too (either)
    }
    for engine, flags in table.items():
        for i in range(0, len(flags), 2):
            e = EITHER if flags[i] == "--kv-cache-memory-bytes" else BAD
            m.add("cross-engine", f"kvmath/{engine}", kv + ["--engine", engine] + flags[i:i + 2], e,
                  label=f"{engine} {flags[i]}")
    serve = FIT + ["vllm", "serve", "Qwen/Qwen3-32B", "--card", "h100"]
    for f in (["-ngl", "99"], ["--ctx-size", "4096"], ["--mem-fraction-static", "0.8"], ["--context-length", "4"],
              ["-ctk", "q8_0"], ["--n-cpu-moe", "3"], ["--tp-size", "2"], ["--page-size", "32"]):
        m.add("cross-engine", "fit/vllm-serve", serve + f, label=f"serve {f[0]}")
    ls = FIT + ["llama-server", "-m", "qwen3-32b", "--card", "rtx4090"]
    for f in (["--tensor-parallel-size", "2"], ["--max-model-len", "4096"], ["--mem-fraction-static", "0.8"],
              ["--gpu-memory-utilization", "0.9"], ["--kv-cache-dtype", "fp8"], ["--enforce-eager"],
              ["--max-num-seqs", "4"]):
        m.add("cross-engine", "fit/llama-server", ls + f, label=f"llama-server {f[0]}")
        m.add("cross-engine", "lcpp-module", LCPP + ["-m", "qwen3-32b", "--card", "rtx4090"] + f,
              label=f"lcpp {f[0]}")
    sg = FIT + ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-32B", "--card", "h100"]
    for f in (["--max-model-len", "4096"], ["-ngl", "99"], ["--gpu-memory-utilization", "0.9"],
              ["--max-num-seqs", "4"], ["-c", "4096"], ["--block-size", "32"]):
        m.add("cross-engine", "fit/sglang", sg + f, label=f"sglang {f[0]}")
    fit = FIT + ["--model", "qwen3-32b", "--card", "h100"]
    for f in (["-ngl", "99"], ["--context-length", "4096"], ["-ctk", "q8_0"], ["--mem-fraction-static", "0.8"]):
        m.add("cross-engine", "fit/--model", fit + f, label=f"fit {f[0]}")


def repeat_part(m: Matrix, w: World):
    serve = FIT + ["vllm", "serve", "Qwen/Qwen3-32B", "--card", "h100"]
    ls = FIT + ["llama-server", "-m", "qwen3-32b", "--card", "rtx4090"]
    kv = KVMATH + ["--config", "qwen3-32b"]
    sg = FIT + ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-32B", "--card", "h100"]
    m.add("repeat", "fit/vllm-serve", serve + ["--host", "0.0.0.0"] * 30000, EITHER, label="--host x30000")
    m.add("repeat", "fit/vllm-serve", serve + ["--api-key", "k"] * 30000, EITHER, label="--api-key x30000")
    m.add("repeat", "fit/vllm-serve", serve + ["--enforce-eager"] * 60000, EITHER, label="--enforce-eager x60000")
    m.add("repeat", "fit/vllm-serve", serve + ["--tensor-parallel-size", "2"] * 20000, EITHER, label="tp 2 x20000")
    m.add("repeat", "fit/vllm-serve", serve + ["--tensor-parallel-size", "2", "--tensor-parallel-size", "4"] * 10000,
          label="tp 2/4 alternating")
    m.add("repeat", "fit/vllm-serve", serve + ["--max-model-len", "4096", "--max-model-len", "4k"], label="4096 vs 4k")
    m.add("repeat", "fit/llama-server", ls + ["-v"] * 60000, EITHER, label="-v x60000")
    m.add("repeat", "fit/llama-server", ls + ["--port", "8080"] * 25000, EITHER, label="--port x25000")
    m.add("repeat", "fit/llama-server", ls + ["-c", "4096"] * 25000, EITHER, label="-c same x25000")
    m.add("repeat", "fit/llama-server", ls + ["-c", "4096", "-c", "8192"], label="-c 4096 then 8192")
    m.add("repeat", "fit/llama-server", ls + ["-ot", "blk\\.0\\.=CPU"] * 20000, EITHER, label="-ot x20000")
    m.add("repeat", "fit/llama-server", ls + ["-ot", ",".join(f"blk\\.{i}\\.ffn=CPU" for i in range(4000))],
          EITHER, label="-ot 4000 patterns")
    m.add("repeat", "fit/llama-server", ls + ["-ot", "(" * 3000 + "x" + ")" * 3000 + "=CPU"], EITHER,
          label="-ot 3000 groups")
    m.add("repeat", "fit/llama-server", ls + ["-ot", "(a*)*b" * 200 + "=CPU"], EITHER, label="-ot ReDoS")
    m.add("repeat", "fit/llama-server", ls + ["--spec-type", ",".join(["ngram-simple"] * 5000)], EITHER,
          label="--spec-type x5000 list")
    m.add("repeat", "kvmath/vllm", kv + ["--json"] * 60000, EITHER, label="--json x60000")
    m.add("repeat", "kvmath/vllm", kv + ["--tp", "2"] * 25000, EITHER, label="--tp x25000")
    m.add("repeat", "kvmath/vllm", kv + ["--tp", "1", "--tp", "2"], label="--tp 1 then 2")
    m.add("repeat", "kvmath/llama.cpp", kv + ["--engine", "llama.cpp"] + ["-ctk", "q8_0"] * 25000, EITHER,
          label="-ctk x25000")
    m.add("repeat", "kvmath/vllm", kv + ["--engine", "vllm", "--engine", "sglang"], label="--engine twice")
    m.add("repeat", "fit/sglang", sg + ["--port", "1"] * 25000, EITHER, label="sglang --port x25000")
    m.add("repeat", "fit/sglang", sg + ["--tp-size", "1", "--tp-size", "2"], label="sglang tp twice")
    m.add("repeat", "fit/--model", FIT + ["--model", "qwen3-32b", "--card", "h100", "--card", "rtx3090"],
          label="--card twice")
    m.add("repeat", "fit/--model", FIT + ["--model", "qwen3-32b", "--model", "qwen3.6-27b", "--card", "h100"],
          label="--model twice")
    m.add("repeat", "fit/vllm-serve", FIT + ["vllm", "serve", "Qwen/Qwen3-32B", "Qwen/Qwen3.6-27B", "--card", "h100"],
          label="two positionals")
    m.add("repeat", "lcpp-module", LCPP + ["-m", "qwen3-32b", "--card", "rtx4090"] + ["-fa", "on"] * 25000, EITHER,
          label="lcpp -fa x25000")
    m.add("repeat", "fit/--model", FIT + ["--model", "qwen3-32b", "--card", "x" * 120000], label="120k-char card")
    m.add("repeat", "kvmath/vllm", KVMATH + ["--config", "q" * 120000], label="120k-char config")


def unicode_part(m: Matrix, w: World):
    fit = FIT + ["--model", "qwen3-32b"]
    for v, exp in (("rtx3090\u200b", BAD), ("ＲＴＸ３０９０", BAD), ("rtx3090\nrtx4090", BAD), ("rtx\udcff3090", BAD),
                   ("rtx3090\x1b[2J", BAD), ("\u202ertx3090", BAD)):
        m.add("unicode", "fit/--model", fit + ["--card", v], exp, label=f"--card {v!r}")
    for v in ("qwen3-32b\u200b", "ｑｗｅｎ3-32b", "qwen3-32b\n", "qwen\udcff", "Qwen/Qwen3-32B\u0301"):
        m.add("unicode", "kvmath/vllm", KVMATH + ["--config", v, "--offline"], label=f"--config {v!r}")
        m.add("unicode", "fit/vllm-serve", FIT + ["vllm", "serve", v, "--card", "h100", "--offline"],
              label=f"serve {v!r}")
        m.add("unicode", "fit/llama-server", FIT + ["llama-server", "-m", v, "--card", "rtx4090"], label=f"-m {v!r}")
    for v in ("fp8\u00a0", "ｆｐ８", "fp8\n", "q8_0\udcff"):
        m.add("unicode", "kvmath/vllm", KVMATH + ["--config", "qwen3-32b", "--kv-format", v], label=f"--kv-format {v!r}")
        m.add("unicode", "kvmath/llama.cpp", KVMATH + ["--config", "qwen3-32b", "--engine", "llama.cpp", "-ctk", v],
              label=f"-ctk {v!r}")
    for v in ("４０９６", "4096\n", "4096\udcff", "\u0664\u0660\u0669\u0666"):
        e = EITHER if v == "4096\n" else BAD  # llama.cpp's std::stoi skips the whitespace; not other digits
        m.add("unicode", "fit/llama-server", FIT + ["llama-server", "-m", "qwen3-32b", "--card", "rtx4090", "-c", v],
              e, label=f"-c {v!r}")
    m.add("unicode", "fit/vllm-serve", FIT + ["vllm", "serve", "Qwen/Qwen3-32B", "--card", "h100", "--pört", "1"],
          label="unknown unicode flag")
    m.add("unicode", "fit/llama-server", FIT + ["llama-server", "-m", "qwen3-32b", "--card", "rtx4090",
                                                "-\udcffx", "1"], label="undecodable flag")
    m.add("unicode", "kvmath/vllm", KVMATH + ["--config", "qwen3-32b", "--\u00e9ngine", "vllm"], label="unicode flag")


def devfull_part(m: Matrix, w: World):
    for door, argv in front_doors("qwen3-32b").items():
        m.add("devfull", door, argv, BAD, stdout="/dev/full", label="> /dev/full")
        m.add("devfull", door, argv + ["--json"], BAD, stdout="/dev/full", label="--json > /dev/full")
    m.add("devfull", "fit/calibration", FIT + ["--calibration"], BAD, stdout="/dev/full", label="> /dev/full")
    m.add("devfull", "fit/json-schema", FIT + ["--json-schema"], BAD, stdout="/dev/full", label="> /dev/full")
    m.add("devfull", "kvmath/help", KVMATH + ["--help"], EITHER, stdout="/dev/full", label="--help > /dev/full")
    m.add("devfull", "fit/help", FIT + ["--help"], EITHER, stdout="/dev/full", label="--help > /dev/full")
    m.add("devfull", "lcpp-module", LCPP + ["--help"], EITHER, stdout="/dev/full", label="--help > /dev/full")
    m.add("devfull", "kvmath/vllm", KVMATH + ["--config", "zz-nope"], BAD, stdout="/dev/full",
          label="bad model > /dev/full")
    m.add("devfull", "kvmath/vllm", KVMATH + ["--config", "qwen3-32b"], BAD, stdout="closed", label="stdout closed")
    m.add("devfull", "fit/--model", FIT + ["--model", "qwen3-32b", "--card", "h100"], BAD, stdout="closed",
          label="stdout closed")


def onboarding_part(m: Matrix, w: World):
    cfg = _cfg(DENSE)
    ud = w.base / "userdata"
    env = {"KVMATH_USER_DATA_DIR": str(ud)}
    good_rev = ["--revision", "unrecorded"]
    for label, p in (("fifo", w.fifo_json), ("dir", w.dir_json), ("/dev/zero", "/dev/zero"),
                     ("missing", w.base / "nope.json")):
        m.add("onboarding", "add-model", CHAPTER + ["--add-model", p, "--id", "zz-a"] + good_rev, env=env,
              label=f"--add-model {label}")
    for key, raw in (("num_hidden_layers", "NaN"), ("hidden_size", "-1"), ("num_key_value_heads", "[8]"),
                     ("head_dim", "true"), ("vocab_size", "1e309")):
        p = w.config_file(f"onb-{key}", _with_raw(dict(cfg), None, key, raw))
        m.add("onboarding", "add-model", CHAPTER + ["--add-model", p, "--id", f"zz-{key[:5]}"] + good_rev, env=env,
              label=f"--add-model {key}={raw}")
    p = w.config_file("onb-deep", b'{"a": ' + b"[" * 100000 + b"]" * 100000 + b"}")
    m.add("onboarding", "add-model", CHAPTER + ["--add-model", p, "--id", "zz-deep"] + good_rev, env=env,
          label="--add-model deep")
    okp = w.config_file("onb-ok", cfg)
    for idv in ("", "../../escape", "a/b", "qwen3-32b", "x" * 500, "zz\nzz", "."):
        m.add("onboarding", "add-model", CHAPTER + ["--add-model", okp, "--id", idv] + good_rev, env=env,
              label=f"--id {idv[:20]!r}")
    for rev in ("", "zz", "x" * 300):
        m.add("onboarding", "add-model", CHAPTER + ["--add-model", okp, "--id", "zz-rev", "--revision", rev], env=env,
              label=f"--revision {rev[:12]!r}")
    m.add("onboarding", "add-model", CHAPTER + ["--add-model", okp, "--id", "zz-hf", "--hf-repo", "no slash"]
          + good_rev, env=env, label="--hf-repo no slash")
    m.add("onboarding", "model-chapter", CHAPTER + ["--model", "zz-nope", "--out", w.base / "o.ipynb"], env=env,
          label="--model unknown")
    m.add("onboarding", "model-chapter", CHAPTER + ["--book", "--jobs", "-2", "--no-execute", "--root", w.empty_dir],
          env=env, label="--jobs -2")


API_DRIVER = r"""
import json, math, sys
import kvmath
from kvmath import KvMathError
from kvmath.engines.vllm.budget import budget
nan, inf = float("nan"), float("inf")
def walk(x, path="", seen=None, depth=0, out=None):
    out = [] if out is None else out
    seen = set() if seen is None else seen
    if depth > 5 or id(x) in seen:
        return out
    if isinstance(x, bool):
        return out
    if isinstance(x, (int, float)):
        if isinstance(x, float) and not math.isfinite(x) or x < 0:
            out.append(f"{path}={x}")
        return out
    if isinstance(x, (str, bytes)) or x is None:
        return out
    seen.add(id(x))
    if isinstance(x, dict):
        for k, v in list(x.items())[:200]:
            walk(v, f"{path}.{k}", seen, depth + 1, out)
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x[:200]):
            walk(v, f"{path}[{i}]", seen, depth + 1, out)
    elif hasattr(x, "__dict__") or hasattr(x, "__dataclass_fields__"):
        d = getattr(x, "__dict__", None) or {f: getattr(x, f) for f in x.__dataclass_fields__}
        walk(d, path, seen, depth + 1, out)
    return out
try:
    r = eval(sys.argv[1])
except KvMathError as e:
    print(str(e), file=sys.stderr)
    sys.exit(2)
bad = walk(r)
print("FIGURES", "ok" if not bad else "BADFIG " + "; ".join(bad[:5]))
"""


def api_part(m: Matrix, w: World):
    drv = w.base / "api_driver.py"
    drv.write_text(API_DRIVER)
    bad_ints = ["0", "-1", "nan", "inf", "True", "'4'", "2.5", "10**30"]
    for kw in ("tp", "max_ctx", "max_num_seqs"):
        for v in bad_ints:
            if kw == "tp" and v == "True":
                pass
            m.add("api", "api/derive", [drv, f"kvmath.derive('qwen3-32b', {kw}={v})"], label=f"derive {kw}={v}")
    for v in ["''", "'nope'", "5", "'FP8 '"]:
        m.add("api", "api/derive", [drv, f"kvmath.derive('qwen3-32b', kv_format={v})"], label=f"derive kv_format={v}")
        m.add("api", "api/derive", [drv, f"kvmath.derive('qwen3-32b', engine={v})"], label=f"derive engine={v}")
        m.add("api", "api/derive", [drv, f"kvmath.derive('qwen3-32b', engine='llama.cpp', cache_type_k={v})"],
              label=f"derive cache_type_k={v}")
    cfg = _cfg(DENSE)
    for label, expr in {"''": "''", "/dev/zero": "'/dev/zero'", "fifo": repr(str(w.fifo_json)),
                        "dir": repr(str(w.empty_dir)), "{}": "{}", "[]": "[]", "5": "5", "None": "None",
                        "dict nan layers": repr(dict(cfg, num_hidden_layers=float("nan"))).replace("nan", "nan"),
                        "dict -1 heads": repr(dict(cfg, num_attention_heads=-1)),
                        "dict list kv": repr(dict(cfg, num_key_value_heads=[8])),
                        "dict bool head_dim": repr(dict(cfg, head_dim=True)),
                        "dict inf vocab": repr(dict(cfg, vocab_size=float("inf"))).replace("inf", "inf")}.items():
        expr = expr.replace("true", "True").replace("false", "False").replace("null", "None")
        m.add("api", "api/derive", [drv, f"kvmath.derive({expr})"], label=f"derive model={label}")
    for kw, vals in {"block_size": ["0", "-16", "nan", "'16'"], "max_num_batched_tokens": ["0", "-1", "nan"],
                     "no_such_setting": ["1"], "num_speculative_tokens": ["-1", "nan"],
                     "kv_cache_memory_bytes": ["-1", "nan", "inf"]}.items():
        for v in vals:
            m.add("api", "api/derive", [drv, f"kvmath.derive('qwen3-32b', {kw}={v})"], label=f"derive {kw}={v}")
    m.add("api", "api/derive", [drv, "kvmath.derive('qwen3-32b', max_ctx=10**7)"],
          env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}, label="derive long ctx with env")
    for kw, vals in {"mem_util": ["nan", "-1", "0", "1.5", "inf", "'0.9'"], "weights_gb_total": ["nan", "-1", "inf"],
                     "drafter_gb": ["-1", "nan"], "max_model_len": ["-1", "nan", "0", "2.5"],
                     "max_num_seqs": ["0", "-1", "nan"], "tp": ["0", "nan", "-2"],
                     "num_speculative_tokens": ["-1", "nan"], "max_num_batched_tokens": ["0", "-1", "nan"],
                     "draft_kv_gb": ["-1", "nan"], "data_parallel_size": ["0", "-1"], "card": ["''", "'zz'", "5"],
                     "kv_format": ["'zz'", "''"], "weights_variant": ["'zz'"],
                     "limit_mm_per_prompt": ["{'image': -1}", "{'image': nan}", "[1]"],
                     "mm_processor_kwargs": ["{'max_pixels': nan}", "{'max_pixels': -1}"]}.items():
        for v in vals:
            model = "'qwen3.6-27b'" if kw in ("limit_mm_per_prompt", "mm_processor_kwargs") else "'qwen3-32b'"
            card = "" if kw == "card" else "card='h100', "
            m.add("api", "api/budget", [drv, f"budget({model}, {card}{kw}={v})"], label=f"budget {kw}={v}")
    for v in ["nan", "-1", "inf", "0"]:
        m.add("api", "api/budget", [drv, f"budget('qwen3-32b', card=None, total_gib={v})"],
              label=f"budget total_gib={v}")


# --- running and judging ---------------------------------------------------------------------------------

NEG_FIG = re.compile(r"(?<![\w.\-+/])-\d[\d,]*(?:\.\d+)?\s*(?:GiB|MiB|KiB|GB|MB|B\b|tokens|%)")
NONFINITE = re.compile(r"\b(?:nan|inf|infinity)\b", re.I)


_FIXTURE_PATH = re.compile(r"\S*kvmath-heldout-[^\s'\"]*")


def _limits():
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (MEM, MEM))


def _json_bad(text: str) -> list[str]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    out = []

    def walk(x, path):
        if isinstance(x, bool):
            return
        if isinstance(x, float) and not math.isfinite(x):
            out.append(f"{path}={x}")
        elif isinstance(x, (int, float)) and x < 0 and not path.endswith(("delta", "margin", "spare", "short")):
            out.append(f"{path}={x}")
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}")
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
    walk(data, "")
    return out


def run_case(case: dict, env_base: dict) -> dict:
    env = dict(env_base, **case["env"])
    argv = [PY] + [a.encode("utf-8", "surrogateescape") for a in case["argv"]]
    out_target = subprocess.PIPE
    fh = None
    if case["stdout"] == "/dev/full":
        fh = open("/dev/full", "wb")
        out_target = fh
    t0 = time.monotonic()
    status, stdout, stderr = None, b"", b""
    try:
        kw = dict(stdin=subprocess.DEVNULL, stdout=out_target, stderr=subprocess.PIPE, env=env, cwd=env["PROBE_CWD"],
                  preexec_fn=_limits)
        if case["stdout"] == "closed":
            kw["stdout"] = subprocess.DEVNULL
            kw["preexec_fn"] = lambda: (_limits(), os.close(1))
        proc = subprocess.Popen(argv, **kw)
        try:
            stdout, stderr = proc.communicate(timeout=TIMEOUT)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            status = "timeout"
    except OSError as e:
        status, stderr = "harness", str(e).encode()
    finally:
        if fh:
            fh.close()
    dt = time.monotonic() - t0
    err = (stderr or b"").decode("utf-8", "replace")
    out = (stdout or b"").decode("utf-8", "replace")
    return dict(case, status=status, seconds=round(dt, 2), stderr=err[-3000:], stdout_tail=out[-600:],
                verdict=judge(case, status, out, err))


def judge(case: dict, status, out: str, err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if status == "harness":
        return "harness"
    if status == "timeout":
        return "hang"
    if "MemoryError" in err or status in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT):
        return "memory"
    if "Traceback (most recent call last)" in err:
        return "traceback"
    if status == 3:
        return "exit3"
    if status not in (0, 1, 2):
        return "bad-exit"
    if status == 2:
        if case["expect"] == GOOD:
            return "control"
        return "multiline" if len(lines) > 1 else "ok"
    # answered (0) or does not boot (1)
    if case["expect"] == BAD:
        return "accepted"
    figs = _json_bad(out) if out.lstrip().startswith(("{", "[")) else []
    out = _FIXTURE_PATH.sub("<fixture>", out)  # a fixture's own name ("rope_theta-nan") is not a figure
    signed = case["door"] == "fit/calibration"  # its errors (predicted - measured) are signed by design
    if NONFINITE.search(out) or (NEG_FIG.search(out) and not signed) or figs or "BADFIG" in out:
        return "badfig"
    return "ok"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated parts (files,config,json,gguf,...)")
    ap.add_argument("--show", type=int, default=3, help="sample cases shown per finding class")
    ap.add_argument("--json", default="", help="write every case's outcome here")
    ap.add_argument("--keep", action="store_true", help="keep the fixture folder")
    a = ap.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="kvmath-heldout-"))
    world = World(base)
    only = {s.strip() for s in a.only.split(",") if s.strip()} or None
    cases = build(world, only)
    home = base / "home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": str(home),
           "HF_HOME": str(base / "hf"), "HF_HUB_OFFLINE": "1", "PROBE_CWD": str(base), "LANG": "C.UTF-8",
           "KVMATH_USER_DATA_DIR": str(base / "userdata")}
    print(f"{len(cases)} cases, {a.jobs} workers, fixtures in {base}", flush=True)
    t0 = time.monotonic()
    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda c: run_case(c, env), cases))
    wall = time.monotonic() - t0
    report(results, a.show, wall)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=str))
    if not a.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if all(r["verdict"] == "ok" for r in results) else 1


def report(results: list[dict], show: int, wall: float) -> None:
    by = collections.Counter(r["verdict"] for r in results)
    print(f"\n{len(results)} cases in {wall:.0f} s; outcomes: " + ", ".join(f"{k} {v}" for k, v in by.most_common()))
    table = collections.defaultdict(collections.Counter)
    for r in results:
        table[r["door"]][r["verdict"]] += 1
    verdicts = [v for v, _ in by.most_common()]
    print("\n" + "door".ljust(22) + "".join(v[:9].rjust(10) for v in verdicts))
    for door in sorted(table):
        print(door.ljust(22) + "".join(str(table[door][v]).rjust(10) for v in verdicts))
    cls = collections.defaultdict(collections.Counter)
    for r in results:
        cls[r["cls"]][r["verdict"]] += 1
    print("\n" + "class".ljust(22) + "".join(v[:9].rjust(10) for v in verdicts))
    for c in sorted(cls):
        print(c.ljust(22) + "".join(str(cls[c][v]).rjust(10) for v in verdicts))
    slow = sorted(results, key=lambda r: -r["seconds"])[:5]
    print("\nslowest: " + "; ".join(f"{r['door']} {r['label'][:30]} {r['seconds']} s" for r in slow))
    for v in verdicts:
        if v == "ok":
            continue
        print(f"\n== {v} ({by[v]})")
        for r in [r for r in results if r["verdict"] == v][:show]:
            last = (r["stderr"].strip().splitlines() or [""])[-1][:200]
            print(f"  [{r['door']}] {r['cls']}: {r['label'][:70]}  exit={r['status']}  {last}")


if __name__ == "__main__":
    sys.exit(main())
