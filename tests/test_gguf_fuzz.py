"""The GGUF reader under fuzzing: corrupted headers are refused at once, never crash, hang or lie.

Every example starts from a small valid ``.gguf`` written with ``gguf.GGUFWriter`` (llama, gemma2,
gemma4 with per-layer arrays, a qwen35moe hybrid with an MTP block, one written big-endian; each
with a tokenizer vocabulary and a few tensors) and

- (a) deletes, inserts, flips or overwrites random bytes (mostly in the header) or truncates it;
- (b) sets random length / count / type fields of the header (key and string lengths, value and
  item types, array counts, tensor and key counts, tensor dimension counts, dimensions, ggml types,
  data offsets) to huge or random values;
- (c) rewrites the file with the cache-shaping keys (``block_count``, ``attention.head_count``,
  ``full_attention_interval``, per-layer arrays, ...) set to 0, negative, huge, NaN or wrong types.

The property: :func:`kvmath.model.gguf.read_gguf` raises :class:`kvmath.KvMathError` with a one-line
message, or returns a model whose weight bytes and llama.cpp cache figures are finite non-negative
integers. ``KVMATH_FUZZ_EXAMPLES`` (default 200) is the example budget shared by the three fuzz tests;
``tools/fuzz.py`` runs the same cases with 50,000 examples and counts the outcomes.

The cases the issue reported (a 3-byte deletion that hung ``gguf.GGUFReader``, an array length of
10^7, ``head_count`` 0, ``full_attention_interval`` 0, a huge ``block_count``) are run in a
subprocess with a generous timeout and a memory limit, so a hang or a runaway allocation fails the
test instead of stalling the suite.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import timedelta
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gguf
from gguf import GGUFValueType as VT

import kvmath
from kvmath import KvMathError
from kvmath.model.gguf import read_gguf, read_header

EXAMPLES = int(os.environ.get("KVMATH_FUZZ_EXAMPLES", "200"))
CASE_SECONDS = 2.0

# ---------------------------------------------------------------------------------------------------
# base files

U32, I32, F32, U64, BOOL, STR = VT.UINT32, VT.INT32, VT.FLOAT32, VT.UINT64, VT.BOOL, VT.STRING
VOCAB = [f"tok{i}" for i in range(40)]


def _common(arch, n_blocks, ctx=4096, embd=64, heads=4):
    return [
        (f"{arch}.block_count", n_blocks, U32, None),
        (f"{arch}.context_length", ctx, U32, None),
        (f"{arch}.embedding_length", embd, U32, None),
        (f"{arch}.attention.head_count", heads, U32, None),
        (f"{arch}.vocab_size", len(VOCAB), U32, None),
        ("general.name", f"fuzz {arch}", STR, None),
        ("tokenizer.ggml.model", "gpt2", STR, None),
        ("tokenizer.ggml.tokens", VOCAB, VT.ARRAY, STR),
        ("tokenizer.ggml.scores", [0.5] * len(VOCAB), VT.ARRAY, F32),
        ("tokenizer.ggml.token_type", [1] * len(VOCAB), VT.ARRAY, I32),
    ]


def _tensors(n_blocks, embd=64, experts=False, tied=False):
    out = [("token_embd.weight", (len(VOCAB), embd), "f16")]
    for i in range(n_blocks):
        out += [(f"blk.{i}.attn_norm.weight", (embd,), "f32"), (f"blk.{i}.attn_k.weight", (32, embd), "f16")]
        if experts:
            out.append((f"blk.{i}.ffn_up_exps.weight", (2, 16, embd), "q8_0"))
        else:
            out.append((f"blk.{i}.ffn_up.weight", (16, embd), "f16"))
    if not tied:
        out.append(("output.weight", (len(VOCAB), embd), "f16"))
    return out


def base_models() -> list[tuple[str, list, list, bool]]:
    """(arch, key/values, tensors, big_endian) of the valid files the fuzzers start from."""
    llama = _common("llama", 2) + [
        ("llama.attention.head_count_kv", 2, U32, None),
        ("llama.attention.key_length", 16, U32, None),
        ("llama.attention.value_length", 16, U32, None),
    ]
    gemma2 = _common("gemma2", 4) + [
        ("gemma2.attention.head_count_kv", 2, U32, None),
        ("gemma2.attention.key_length", 16, U32, None),
        ("gemma2.attention.value_length", 16, U32, None),
        ("gemma2.attention.sliding_window", 256, U32, None),
        ("general.alignment", 64, U32, None),
    ]
    gemma4 = _common("gemma4", 4, ctx=32768, heads=8) + [
        ("gemma4.attention.head_count_kv", [4, 4, 4, 2], VT.ARRAY, I32),
        ("gemma4.attention.key_length", 64, U32, None),
        ("gemma4.attention.value_length", 64, U32, None),
        ("gemma4.attention.key_length_swa", 32, U32, None),
        ("gemma4.attention.value_length_swa", 32, U32, None),
        ("gemma4.attention.sliding_window", 128, U32, None),
        ("gemma4.attention.sliding_window_pattern", [True, True, True, False], VT.ARRAY, BOOL),
        ("gemma4.attention.shared_kv_layers", 0, U32, None),
        ("gemma4.expert_count", 2, U32, None),
        ("gemma4.expert_used_count", 1, U32, None),
    ]
    qwen = _common("qwen35moe", 5, ctx=65536) + [
        ("qwen35moe.nextn_predict_layers", 1, U32, None),
        ("qwen35moe.attention.head_count_kv", 2, U32, None),
        ("qwen35moe.attention.key_length", 16, U32, None),
        ("qwen35moe.attention.value_length", 16, U32, None),
        ("qwen35moe.full_attention_interval", 2, U32, None),
        ("qwen35moe.ssm.conv_kernel", 4, U32, None),
        ("qwen35moe.ssm.state_size", 16, U32, None),
        ("qwen35moe.ssm.group_count", 2, U32, None),
        ("qwen35moe.ssm.time_step_rank", 4, U32, None),
        ("qwen35moe.ssm.inner_size", 64, U32, None),
        ("qwen35moe.expert_count", 2, U32, None),
        ("qwen35moe.expert_used_count", 1, U32, None),
    ]
    return [
        ("llama", llama, _tensors(2), False),
        ("gemma2", gemma2, _tensors(4, tied=True), False),
        ("gemma4", gemma4, _tensors(4, experts=True, tied=True), False),
        ("qwen35moe", qwen, _tensors(5, experts=True), False),
        ("llama", llama, _tensors(2), True),
    ]


def write_gguf(path, arch, kvs, tensors, big_endian=False) -> Path:
    """Write a .gguf with GGUFWriter: ``kvs`` are (key, value, type, array item type)."""
    endian = gguf.GGUFEndian.BIG if big_endian else gguf.GGUFEndian.LITTLE
    w = gguf.GGUFWriter(str(path), arch, endianess=endian)
    for key, value, vtype, sub in kvs:
        if key == "general.alignment" and vtype == U32 and value and not value & (value - 1):
            w.add_custom_alignment(value)  # the writer pads the data to it
        else:
            w.add_key_value(key, value, vtype, sub)
    for name, shape, kind in tensors:
        if kind == "q8_0":
            raw = np.zeros((*shape[:-1], shape[-1] // 32 * 34), dtype=np.uint8)
            w.add_tensor(name, raw, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, np.zeros(shape, dtype=np.float16 if kind == "f16" else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def gguf_bytes(arch, kvs, tensors, big_endian=False) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        return write_gguf(Path(d) / "m.gguf", arch, kvs, tensors, big_endian).read_bytes()


@lru_cache(maxsize=None)
def bases() -> tuple[tuple[str, bytes, int, tuple], ...]:
    """(arch, file bytes, header length, header fields) of each base model."""
    out = []
    with tempfile.TemporaryDirectory() as d:
        for i, (arch, kvs, tensors, big) in enumerate(base_models()):
            path = write_gguf(Path(d) / f"{i}.gguf", arch, kvs, tensors, big)
            read_gguf(path)  # the base files are valid
            data = path.read_bytes()
            out.append((arch, data, read_header(path).data_offset, tuple(header_fields(data))))
    return tuple(out)


def header_fields(data: bytes) -> list[tuple[int, int, str]]:
    """(offset, width, what) of every length, count and type field of a valid GGUF header."""
    order = ">" if struct.unpack_from("<I", data, 4)[0] & 0xFFFF == 0 else "<"
    fields: list[tuple[int, int, str]] = []
    pos = 8

    def take(width, what):
        nonlocal pos
        fields.append((pos, width, what))
        value = struct.unpack_from(order + ("I" if width == 4 else "Q"), data, pos)[0]
        pos += width
        return value

    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    n_tensors = take(8, "tensor_count")
    n_kv = take(8, "kv_count")
    for _ in range(n_kv):
        n = take(8, "key length")  # (not ``pos += take(...)``: take moves pos itself)
        pos += n
        vtype = take(4, "value type")
        if vtype == 8:
            n = take(8, "string length")
            pos += n
        elif vtype == 9:
            item = take(4, "array item type")
            count = take(8, "array count")
            if item == 8:
                for _ in range(count):
                    n = take(8, "array string length")
                    pos += n
            else:
                pos += count * sizes[item]
        else:
            pos += sizes[vtype]
    for _ in range(n_tensors):
        n = take(8, "tensor name length")
        pos += n
        n_dims = take(4, "tensor n_dims")
        for _ in range(n_dims):
            take(8, "tensor dimension")
        take(4, "tensor ggml type")
        take(8, "tensor offset")
    return fields


# ---------------------------------------------------------------------------------------------------
# one case


def figures(model) -> dict[str, int]:
    """The numbers kvmath reports from a GGUF: weight bytes and the llama.cpp cache at 4096 tokens."""
    w = model.weights
    out = {"input": w.input, "attention": w.attention, "experts": w.experts, "other": w.other, "mtp": w.mtp,
           "output_bytes": w.output_bytes, "total": w.total}
    out.update({f"experts_block_{i}": b for i, b in enumerate(w.experts_per_block)})
    gpu, ram = w.split(1)
    out.update(split_gpu=gpu, split_ram=ram)
    a = model.architecture
    ctx = min(a.max_position_embeddings or 4096, 4096)
    d = kvmath.derive(a, engine="llama.cpp", kv_format="f16", max_ctx=ctx)
    out.update(bytes_per_token=d.bytes_per_token, growing=d.growing_bytes, sliding=d.sliding_bytes,
               state=d.state_bytes)
    return out


def bad_figures(figs: dict) -> list[str]:
    """Figures that are not finite non-negative integers."""
    bad = []
    for k, v in figs.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            bad.append(f"{k}={v!r}")
        elif isinstance(v, float) and not math.isfinite(v):
            bad.append(f"{k}={v!r}")
        elif v < 0:
            bad.append(f"{k}={v!r}")
    return bad


def run_case(data: bytes, path: Path) -> tuple[str, str]:
    """Read ``data`` as a .gguf: ("ok", "") or ("refused", message). Other exceptions propagate."""
    path.write_bytes(data)
    try:
        model = read_gguf(path)
        figs = figures(model)
    except KvMathError as e:
        msg = str(e)
        assert msg.strip() and "\n" not in msg, f"KvMathError message is not one line: {msg!r}"
        return "refused", msg
    bad = bad_figures(figs)
    assert not bad, f"non-finite or negative figures: {bad}"
    return "ok", ""


# ---------------------------------------------------------------------------------------------------
# strategies

HUGE = [0, 1, 2, 3, 7, 255, 2**16, 10**7, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53, 2**63 - 1, 2**63, 2**64 - 1]


@st.composite
def byte_edits(draw) -> bytes:
    """(a) a base file with 1-4 random deletions, insertions, bit flips, overwrites or a truncation."""
    _, data, header_len, _ = draw(st.sampled_from(bases()))
    buf = bytearray(data)
    rnd = draw(st.randoms(use_true_random=False))  # uniform positions (integers() favours small ones)
    for _ in range(draw(st.integers(1, 4))):
        if not buf:
            break
        # mostly inside the header, where a wrong byte changes what the reader does
        end = min(len(buf), header_len + 64) if draw(st.integers(0, 9)) else len(buf)
        pos = rnd.randrange(end)
        op = draw(st.sampled_from(["delete", "delete", "insert", "flip", "set", "truncate"]))
        if op == "delete":
            del buf[pos:pos + draw(st.integers(1, 8))]
        elif op == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "flip":
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            buf[pos] = draw(st.integers(0, 255))
        else:
            del buf[pos:]
    return bytes(buf)


@st.composite
def field_edits(draw) -> bytes:
    """(b) a base file with 1-3 length / count / type fields of its header set to huge or random values."""
    _, data, _, fields = draw(st.sampled_from(bases()))
    order = ">" if struct.unpack_from("<I", data, 4)[0] & 0xFFFF == 0 else "<"
    buf = bytearray(data)
    rnd = draw(st.randoms(use_true_random=False))
    for _ in range(draw(st.integers(1, 3))):
        pos, width, _what = rnd.choice(fields)
        value = draw(st.sampled_from(HUGE) | st.integers(0, 2**64 - 1) | st.integers(0, 64))
        value &= (1 << (8 * width)) - 1
        struct.pack_into(order + ("I" if width == 4 else "Q"), buf, pos, value)
    return bytes(buf)


def _bad_value(draw, n_blocks: int):
    """A replacement (value, type, item type) for a metadata key: 0, negative, huge, NaN, wrong types."""
    kind = draw(st.sampled_from(["u32", "i32", "u64", "i64", "f32", "f64", "bool", "str", "arr_int", "arr_bool",
                                 "arr_str", "arr_float"]))
    ints = st.sampled_from([0, 1, 2, 3, 4, 5, 16, 64, 10**7] + HUGE) | st.integers(0, 2**32 - 1)
    if kind == "u32":
        return draw(ints) & 0xFFFFFFFF, VT.UINT32, None
    if kind == "i32":
        return draw(st.integers(-(2**31), 2**31 - 1) | st.sampled_from([-1, 0, 2**31 - 1, -(2**31)])), VT.INT32, None
    if kind == "u64":
        return draw(ints) & (2**64 - 1), VT.UINT64, None
    if kind == "i64":
        return draw(st.integers(-(2**63), 2**63 - 1) | st.sampled_from([-1, 0, 2**63 - 1])), VT.INT64, None
    if kind in ("f32", "f64"):
        v = draw(st.sampled_from([0.0, -1.0, 0.5, 4.0, 1e30, math.nan, math.inf, -math.inf]) | st.floats(-1e6, 1e6))
        return v, VT.FLOAT32 if kind == "f32" else VT.FLOAT64, None
    if kind == "bool":
        return draw(st.booleans()), VT.BOOL, None
    if kind == "str":
        return draw(st.sampled_from(["", "4", "llama", "x" * 300, "a\nb"]) | st.text(max_size=20)), VT.STRING, None
    length = draw(st.sampled_from([1, n_blocks - 1, n_blocks, n_blocks + 1]) | st.integers(1, 3 * n_blocks)) or 1
    if kind == "arr_int":
        return draw(st.lists(st.sampled_from([0, 1, 2, 4, 2**31 - 1, -1]), min_size=length, max_size=length)), \
            VT.ARRAY, VT.INT32
    if kind == "arr_bool":
        return draw(st.lists(st.booleans(), min_size=length, max_size=length)), VT.ARRAY, VT.BOOL
    if kind == "arr_float":
        return draw(st.lists(st.sampled_from([0.0, 1.0, math.nan]), min_size=length, max_size=length)), \
            VT.ARRAY, VT.FLOAT32
    return draw(st.lists(st.sampled_from(["0", "4", "x"]), min_size=length, max_size=length)), VT.ARRAY, VT.STRING


@st.composite
def key_edits(draw) -> bytes:
    """(c) a base model rewritten with 1-3 of its metadata keys deleted or set to a bad value."""
    arch, kvs, tensors, big = draw(st.sampled_from(base_models()))
    kvs = list(kvs)
    n_blocks = kvs[0][1]
    extra = [f"{arch}.full_attention_interval", f"{arch}.nextn_predict_layers", f"{arch}.attention.recurrent_layers",
             f"{arch}.attention.head_count_kv", "general.alignment", "general.architecture"]
    names = sorted({k for k, *_ in kvs if not k.startswith("tokenizer.ggml.")} | set(extra))
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(names))
        kvs = [kv for kv in kvs if kv[0] != key]
        if draw(st.integers(0, 4)):  # mostly replaced, sometimes deleted
            kvs.append((key, *_bad_value(draw, n_blocks)))
    if any(k == "general.architecture" for k, *_ in kvs):
        # GGUFWriter writes general.architecture itself; a replacement goes under a shifted name
        arch_value = next(v for k, v, *_ in kvs if k == "general.architecture")
        kvs = [kv for kv in kvs if kv[0] != "general.architecture"]
        arch = arch_value if isinstance(arch_value, str) and arch_value else arch
    return gguf_bytes(arch, kvs, tensors, big)


# ---------------------------------------------------------------------------------------------------
# the fuzz tests

def fuzz_settings(n: int) -> settings:
    return settings(max_examples=n, database=None, deadline=timedelta(seconds=CASE_SECONDS),
                    suppress_health_check=list(HealthCheck))


def _share(fraction: float) -> int:
    return max(1, int(EXAMPLES * fraction))


@pytest.fixture(scope="module")
def case_path():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d) / "case.gguf"


@fuzz_settings(_share(0.4))
@given(data=byte_edits())
def test_random_byte_edits_are_refused_or_read(case_path, data):
    run_case(data, case_path)


@fuzz_settings(_share(0.3))
@given(data=field_edits())
def test_huge_lengths_and_counts_are_refused_or_read(case_path, data):
    run_case(data, case_path)


@fuzz_settings(_share(0.3))
@given(data=key_edits())
def test_bad_metadata_values_are_refused_or_read(case_path, data):
    run_case(data, case_path)


def test_base_files_read_and_match_the_writer():
    for arch, data, header_len, fields in bases():
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "m.gguf"
            assert run_case(data, p) == ("ok", "")
            h = read_header(p)
            old = gguf.GGUFReader(str(p))
            assert h.data_offset == old.data_offset == header_len
            assert [(t.name, t.n_bytes, t.data_offset) for t in h.tensors] == \
                [(t.name, int(t.n_bytes), int(t.data_offset)) for t in old.tensors]
            want = {k: f.contents() for k, f in old.fields.items()
                    if not k.startswith("tokenizer.ggml.") or k == "tokenizer.ggml.model"}
            assert h.metadata == want
            assert fields  # the field walker found the header's lengths


# ---------------------------------------------------------------------------------------------------
# the reported cases, in a subprocess with a timeout and a memory limit

_REPORTED = textwrap.dedent(r'''
    import json, struct, sys, tempfile, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import test_gguf_fuzz as F
    from gguf import GGUFValueType as VT
    from kvmath import KvMathError
    from kvmath.model.gguf import read_gguf

    def kv_edit(index, key, value, vtype, sub=None):
        arch, kvs, tensors, big = F.base_models()[index]
        kvs = [kv for kv in kvs if kv[0] != key] + [(key, value, vtype, sub)]
        return F.gguf_bytes(arch, kvs, tensors, big)

    def field_edit(index, what, value, nth=0):
        arch, data, _, fields = F.bases()[index]
        pos, width, _ = [f for f in fields if f[2] == what][nth]
        buf = bytearray(data)
        struct.pack_into("<" + ("I" if width == 4 else "Q"), buf, pos, value)
        return bytes(buf)

    cases = {}
    llama = F.bases()[0][1]
    llama_header = F.bases()[0][2]
    # every 3-byte deletion in the llama header
    cases["delete3"] = [llama[:i] + llama[i + 3:] for i in range(0, llama_header, 1)]
    # array length 10**7: the vocabulary, and a per-layer array
    cases["tokens_1e7"] = [field_edit(0, "array count", 10**7, 0)]
    n_arrays = sum(f[2] == "array count" for f in F.bases()[2][3])  # vocabulary and per-layer arrays
    cases["gemma4_arrays_1e7"] = [field_edit(2, "array count", 10**7, i) for i in range(n_arrays)]
    cases["head_count_0"] = [kv_edit(i, f"{a}.attention.head_count", 0, VT.UINT32)
                             for i, a in enumerate(["llama", "gemma2", "gemma4", "qwen35moe"])]
    cases["full_attention_interval_0"] = [kv_edit(3, "qwen35moe.full_attention_interval", 0, VT.UINT32)]
    cases["block_count_huge"] = [kv_edit(i, f"{a}.block_count", v, t)
                                 for i, a in enumerate(["llama", "gemma2", "gemma4", "qwen35moe"])
                                 for v, t in ((2**32 - 1, VT.UINT32), (2**63, VT.UINT64), (10**9, VT.UINT32))]
    cases["kv_count_huge"] = [field_edit(0, "kv_count", v) for v in (2**64 - 1, 10**7)]
    cases["tensor_count_huge"] = [field_edit(0, "tensor_count", v) for v in (2**64 - 1, 10**7)]
    cases["string_length_huge"] = [field_edit(0, "string length", 2**63)]

    out = {}
    d = tempfile.mkdtemp()
    path = Path(d) / "case.gguf"
    for name, datas in cases.items():
        t0 = time.perf_counter()
        outcomes, messages, slowest = [], [], 0.0
        for data in datas:
            t = time.perf_counter()
            path.write_bytes(data)
            try:
                read_gguf(path)
                outcomes.append("ok")
            except KvMathError as e:
                outcomes.append("refused")
                messages.append(str(e))
            slowest = max(slowest, time.perf_counter() - t)
        out[name] = {"n": len(datas), "outcomes": outcomes, "messages": messages, "slowest": slowest,
                     "seconds": time.perf_counter() - t0}
    print(json.dumps(out))
''')


def _limit_memory():  # pragma: no cover - runs in the child
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    except Exception:
        pass


@pytest.fixture(scope="module")
def reported():
    """Run the reported cases in a child process: a hang or a runaway allocation ends it."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _REPORTED, str(Path(__file__).parent)],
            capture_output=True, text=True, timeout=120,
            preexec_fn=_limit_memory if sys.platform.startswith("linux") else None,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the reported GGUF cases did not finish within 120 s (a hang)")
    assert proc.returncode == 0, f"child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _refused(case, *, pattern=None):
    assert case["outcomes"] and all(o == "refused" for o in case["outcomes"]), case["outcomes"]
    for msg in case["messages"]:
        assert "\n" not in msg
        if pattern:
            assert pattern in msg, msg
    assert case["slowest"] < 30  # generous: each is milliseconds; a bound loop would take minutes


def test_reported_three_byte_deletions_never_hang(reported):
    case = reported["delete3"]
    assert case["n"] > 100 and set(case["outcomes"]) <= {"ok", "refused"}
    assert all("\n" not in m for m in case["messages"]) and case["slowest"] < 30


def test_reported_array_length_10_million(reported):
    _refused(reported["tokens_1e7"], pattern="tokenizer.ggml.tokens")
    _refused(reported["gemma4_arrays_1e7"], pattern="10,000,000")


def test_reported_head_count_0(reported):
    _refused(reported["head_count_0"], pattern="attention.head_count")


def test_reported_full_attention_interval_0(reported):
    _refused(reported["full_attention_interval_0"], pattern="qwen35moe.full_attention_interval")


def test_reported_huge_block_count(reported):
    _refused(reported["block_count_huge"], pattern=".block_count")


def test_huge_key_and_tensor_counts_and_string_lengths(reported):
    _refused(reported["kv_count_huge"], pattern="metadata key count")
    _refused(reported["tensor_count_huge"], pattern="tensor count")
    _refused(reported["string_length_huge"])
