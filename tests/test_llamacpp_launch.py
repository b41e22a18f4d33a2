"""llama.cpp through the engine protocol: a pasted llama-server line, its verdict, the solvers, the guards.

Figures are checked against hand derivations written here from llama.cpp's rules (src/llama-memory-recurrent.cpp,
llama_context::reserve) and against logged lines with their URLs, never against kvmath's own arithmetic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvmath import solve
from kvmath.engines import get_engine
from kvmath.errors import KvMathError
from kvmath.fit import run as fit_run
from kvmath.units import GiB, MiB

E = get_engine("llama.cpp")
QWEN27 = ["-m", "qwen3.6-27b"]


def _verdict(argv, tool="llama-server"):
    """The verdict of a pasted line, the front door's --card / --device-memory applied as kvmath-fit does."""
    from dataclasses import replace

    from kvmath.fit import _take
    from kvmath.units import parse_bytes

    rest, opts = _take(list(argv))
    la = E.launch_for((tool,), rest)
    mem = opts["device_memory"]
    la = replace(la, card=opts["card"], device_bytes=None if mem is None else parse_bytes(mem))
    return E.verdict(la), la


def _term(v, device, name):
    return next(d for d in v.devices if d.name == device).term(name)


# --- --spec-type: llama.cpp's list form, checked against the build's values --------------------------------

def _qwen27_rs_bytes(n_seq: int, snapshots: int) -> int:
    # Qwen 3.6 27B (data/configs/Qwen__Qwen3.6-27B.json): 64 layers, every 4th full attention -> 48 Gated
    # DeltaNet layers; 16 key heads x 128, 48 value heads x 128, conv kernel 4.
    # n_embd_r = (d_conv - 1) * (d_inner + 2 * n_group * d_state) = 3 * (6144 + 2 * 16 * 128) = 30720
    # n_embd_s = d_state * d_inner = 128 * 6144 = 786432; f32 rows, (1 + rs_seq) per sequence
    return 48 * 4 * (30720 + 786432) * n_seq * (1 + snapshots)


def test_spec_type_list_keeps_the_draft_snapshots():
    argv = QWEN27 + ["-c", "24576", "-np", "3", "-ctk", "q8_0", "-ctv", "q8_0", "--spec-type", "ngram-mod,draft-mtp",
                     "--spec-draft-n-max", "4", "--device-memory", "24GiB"]
    v, _ = _verdict(argv)
    assert _term(v, "CUDA0", "rs") == _qwen27_rs_bytes(3, 4)
    assert f"{_qwen27_rs_bytes(3, 4) / MiB:.2f}" == "2244.38"
    # an n-gram type alone keeps no snapshot: 448.88 MiB, as llama.cpp logs for 3 sequences and 0 rs_seq
    # (https://github.com/ggml-org/llama.cpp/pull/23792: "size =  448.88 MiB (     3 cells,  65 layers,  3 seqs
    # 0 rs_seq), R (f32):   16.88 MiB, S (f32):  432.00 MiB")
    v0, _ = _verdict([a if a != "ngram-mod,draft-mtp" else "ngram-mod" for a in argv])
    assert f"{_term(v0, 'CUDA0', 'rs') / MiB:.2f}" == "448.88"


@pytest.mark.parametrize("value", ["draft-mpt", "ngram-mod,draft-mpt", "", "ngram-mod,,draft-mtp"])
def test_a_spec_type_typo_is_refused(value, capsys):
    assert fit_run(["llama-server"] + QWEN27 + ["--spec-type", value, "--spec-draft-n-max", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "valid: none, draft-simple" in err and "draft-mtp" in err


# --- the build's output rows (builds.py) --------------------------------------------------------------------

def test_output_rows_follow_the_build():
    argv = QWEN27 + ["-c", "131072", "-np", "4", "-ub", "512", "-fa", "on", "--device-memory", "80GiB", "--fit", "off"]
    logits_all = 4 * 248320 * 512           # n_vocab x n_ubatch f32: every token an output (b9272's reserve)
    old, _ = _verdict(argv + ["--llamacpp-build", "b9272"])
    new, _ = _verdict(argv + ["--llamacpp-build", "b9776"])
    tool, _ = _verdict(argv + ["--llamacpp-build", "b9776"], tool="llama-fit-params")
    assert _term(old, "CUDA0", "compute") >= logits_all
    # llama-server of b9776 reserves n_parallel x (1 + draft) = 4 rows: the logits are 4 x 4 x 248320 bytes, so
    # the feed-forward is the peak: gate, up and their ggml_swiglu_split product (3 x 4 x 17408 x 512) above three
    # 5120 x 512 f32 vectors (the two embedding tensors of PR #18550 and block 0's freed norm: 0c1e570's ggml-alloc
    # trace of this model, tests/fixtures/llamacpp/ffn_phase_runs.json, block 0 a linear-attention block, so no
    # query hole) and one stream's f16 mask (-np 4 without --kv-unified: 32768 cells, 2 x 32768 x 512)
    assert _term(new, "CUDA0", "compute") == 3 * 4 * 17408 * 512 + 3 * 4 * 5120 * 512 + 2 * 32768 * 512 \
        == 171_966_464
    assert _term(tool, "CUDA0", "compute") == _term(old, "CUDA0", "compute")  # common tools: n_outputs_max 0
    # the host output buffer: n_seq_max rows before #23861, n_outputs_max rows after
    assert _term(old, "Host", "output") == 4 * 248320 * 4 == _term(new, "Host", "output")
    # a build between two records takes the older one's rules, said in a note
    mid, _ = _verdict(argv + ["--llamacpp-build", "b9500"])
    assert _term(mid, "CUDA0", "compute") == _term(old, "CUDA0", "compute")
    assert any("b9272" in n for n in mid.notes)


def test_a_build_older_than_the_table_is_refused_naming_the_range(capsys):
    assert fit_run(["llama-server"] + QWEN27 + ["--llamacpp-build", "b4000"]) == 2
    err = capsys.readouterr().err
    assert "older than the oldest" in err and "b4406" in err and "b9776" in err


# --- the solvers: the largest -c is the solver's answer ---------------------------------------------------------

def test_largest_context_is_the_boundary():
    _, la = _verdict(QWEN27 + ["-c", "8192", "-np", "1", "--card", "rtx3090"])
    best = solve.largest_context(E, la)
    assert best is not None and best % 256 == 0 and best != 8192
    off = E.for_solving(la)
    assert E.verdict(off.with_settings(n_ctx=best)).boots
    assert not E.verdict(off.with_settings(n_ctx=best + 256)).boots


def test_dense_model_has_no_offload_answer(capsys):
    assert fit_run(["llama-server"] + QWEN27 + ["-c", "8192", "--device-memory", "24GiB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answers"]["smallest_offload"] is None and out["engine_detail"]["moe"] is False


def test_device_memory_reaches_every_gpu(capsys):
    assert fit_run(["llama-server"] + QWEN27 + ["-c", "4096", "-ts", "1,1", "--device-memory", "12GiB",
                                                "--no-solve", "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    gpus = [d for d in out["devices"] if d["name"].startswith("CUDA")]
    assert [d["capacity_bytes"] for d in gpus] == [12 * GiB, 12 * GiB]
    assert all(isinstance(t["bytes"], int) and t["bytes"] >= 0 for d in out["devices"] for t in d["terms"])


def test_a_split_conserves_the_weights():
    one, _ = _verdict(QWEN27 + ["-c", "4096", "--device-memory", "48GiB", "--fit", "off"])
    two, _ = _verdict(QWEN27 + ["-c", "4096", "-ts", "3,1", "--device-memory", "48GiB", "--fit", "off"])
    kv = lambda v: sum(d.term("kv") for d in v.devices)
    assert kv(one) == kv(two) and two.devices[0].term("kv") > two.devices[1].term("kv") > 0
    # the same tensors, split: what moves is only the 128-byte alignment of each tensor on its device
    model = lambda v: sum(d.term("model") for d in v.devices)
    assert model(one) == model(two)


def test_serving_flags_are_ignored_with_a_note_and_unknown_ones_refused():
    la = E.parse_launch(QWEN27 + ["--port", "8080", "-t", "8", "--jinja", "--host=0.0.0.0"])
    assert sum("ignored" in n for n in la.notes) == 4
    with pytest.raises(KvMathError, match="unknown llama.cpp flag '--frobnicate'"):
        E.parse_launch(QWEN27 + ["--frobnicate"])
    with pytest.raises(KvMathError, match="system memory"):
        E.parse_launch(QWEN27 + ["-nkvo"])
    # -hf is read by kvmath.hub (tests/test_hub.py serves it); the model is given once
    assert E.parse_launch(["-hf", "unsloth/Qwen3.6-27B-GGUF:Q4_K_M"]).model == "hf://unsloth/Qwen3.6-27B-GGUF:Q4_K_M"
    with pytest.raises(KvMathError, match="give the model once"):
        E.parse_launch(QWEN27 + ["-hf", "unsloth/Qwen3.6-27B-GGUF"])


def test_llama_server_auto_parallel():
    # "main: setting n_parallel = 4 and kv_unified = true" (llama-server without -np, build 6934:
    # https://github.com/ggml-org/llama.cpp/pull/16962)
    la = E.launch_for(("llama-server",), QWEN27)
    assert la.settings["n_parallel"] == 4 and la.settings["kv_unified"] is True
    assert E.launch_for(("llama-cli",), QWEN27).settings["n_parallel"] == 1


# --- the module command is an alias of kvmath-fit llama-server -----------------------------------------------

def test_module_alias_prints_the_same_json(capsys):
    from kvmath.engines.llamacpp.fit import run

    argv = QWEN27 + ["-c", "16384", "--device-memory", "24GiB", "--json"]
    rc1 = run(argv)
    a = capsys.readouterr().out
    rc2 = fit_run(["llama-server"] + argv)
    b = capsys.readouterr().out
    assert rc1 == rc2 == 0 and a == b and json.loads(a)["units"] == "bytes"


# --- guards: one line, exit 2 -----------------------------------------------------------------------------------

BAD = [
    ["-m", "/dev/zero"], ["-m", "/dev/zero.gguf"], QWEN27 + ["--weight-bits", "-4"],
    QWEN27 + ["--headroom-mib", "nan"], QWEN27 + ["-ot", "a{99999999999}=CPU"], QWEN27 + ["-ot", "(=CPU"],
    QWEN27 + ["-ot", "exps"], QWEN27 + ["-c", "1e309"], QWEN27 + ["--weight-bits", "1e309"], QWEN27 + ["-np", "0"],
    QWEN27 + ["-ub", "-5"], QWEN27 + ["-fa", "maybe"], QWEN27 + ["-ts", "nan,1"], QWEN27 + ["-mg", "3"],
    QWEN27 + ["--device-memory", "-24GiB"], QWEN27 + ["--card", "nope"], QWEN27 + ["-c"], [],
    QWEN27 + ["-c", "9" * 5000], QWEN27 + ["--mmproj", "/dev/zero"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a)[:40] for a in BAD])
def test_bad_input_is_one_line_and_exit_2(argv, capsys):
    assert fit_run(["llama-server"] + argv) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1 and cap.err.startswith("kvmath-fit: error: ")
    assert "Traceback" not in cap.err and len(cap.err) < 2000


def test_a_fifo_does_not_hang(tmp_path, capsys):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    assert fit_run(["llama-server", "-m", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert fit_run(["llama-server"] + QWEN27 + ["--mmproj", str(fifo)]) == 2


def test_deep_json_config(tmp_path, capsys):
    p = tmp_path / "config.json"
    p.write_text("[" * 100000 + "]" * 100000)
    assert fit_run(["llama-server", "-m", str(p)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_dev_full_as_output():
    r = subprocess.run([sys.executable, "-m", "kvmath.engines.llamacpp.fit", "-m", "qwen3.6-27b", "-c", "4096",
                        "--no-solve", "--device-memory", "24GiB"], stdout=open("/dev/full", "w"),
                       stderr=subprocess.PIPE, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot write the output" in r.stderr  # as test_bad_input


# --- a fuzz of the llama.cpp command's argv: nothing but KvMathError -----------------------------------------

FLAGS = ["-c", "-np", "-b", "-ub", "-ctk", "-ctv", "-fa", "-ngl", "--n-cpu-moe", "--cpu-moe", "-ot", "-ts", "-sm",
         "-mg", "--kv-unified", "--swa-full", "--spec-type", "--spec-draft-n-max", "--fit", "--fit-target",
         "--no-mmap", "--mlock", "--llamacpp-build", "--quant-mix", "--weight-bits", "--port", "--bogus", "-dev"]
VALUES = ["0", "1", "-1", "4096", "1e309", "nan", "q8_0", "f16", "turbo3", "on", "auto", "all", "99", "exps=CPU",
          "a{99999999999}=CPU", "3,1", "row", "draft-mtp,ngram-mod", "b9776", "b1", "Q4_K_M", "4.5", "", "x" * 300,
          "CUDA0,CUDA1", "\x00"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(FLAGS), st.sampled_from(VALUES)), max_size=8))
def test_fuzz_raises_only_kvmath_errors(words):
    argv = ["-m", "qwen3.5-35b-a3b", "--device-memory", "24GiB"] + words if "-m" not in words else words
    try:
        la = E.launch_for(("llama-server",), [w for w in argv if w not in ("--device-memory", "24GiB")])
        from dataclasses import replace

        v = E.verdict(replace(la, device_bytes=24 * GiB))
    except KvMathError as e:
        assert str(e) and "\n" not in str(e)
        return
    for d in v.devices:
        for t in d.terms:
            assert isinstance(t.bytes, int) and 0 <= t.bytes < 2**50


def _kvmath(*argv):
    # a subprocess: importing kvmath.cli in the test process would bind the submodule kvmath.derive over the
    # package's lazy derive() for the tests that follow
    return subprocess.run([sys.executable, "-m", "kvmath.cli", *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_kvmath_command_reads_the_spec_type_list():
    argv = ["--config", "qwen3.6-27b", "--engine", "llama.cpp", "-c", "24576", "-np", "3", "-ctk", "q8_0", "-ctv",
            "q8_0", "--spec-type", "ngram-mod,draft-mtp", "--spec-draft-n-max", "4", "--json"]
    r = _kvmath(*argv)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["llamacpp"]["recurrent_bytes"] == _qwen27_rs_bytes(3, 4)
    r = _kvmath(*argv[:-5], "--spec-type", "draft-mpt", "--spec-draft-n-max", "4")
    assert r.returncode == 2 and "valid: none" in r.stderr and r.stderr.count("\n") == 1
    # a build tag picks the memory rules it was read with; the card lookup takes the name as printed
    r = _kvmath(*argv[:-1], "--llamacpp-build", "b9272", "--card", "NVIDIA GeForce RTX 3090")
    assert r.returncode == 0, r.stderr


def test_every_engine_detail_key_is_documented(capsys):
    from kvmath.fit import json_schema

    assert fit_run(["llama-server"] + QWEN27 + ["-c", "4096", "--device-memory", "24GiB", "--no-solve", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["engine_detail"]) == set(json_schema()["engines"]["llama.cpp"])


# --- public start-up logs (data/measurements/llamacpp-public-boots.csv) ------------------------------------------

PUBLIC = [r for r in __import__("kvmath").facts.read_csv("measurements/llamacpp-public-boots.csv")
          if r["checks"] in ("rs", "output")]  # the "launch" rows: tests/test_llamacpp_budget.py, held-out section


@pytest.mark.parametrize("row", PUBLIC, ids=[r["id"] for r in PUBLIC])
def test_public_boot_lines(row):
    from kvmath.engines.llamacpp.builds import TABLE
    from kvmath.engines.llamacpp.memory import llamacpp_memory
    from kvmath.engines.llamacpp.verdict import _output_buffer_rows

    first, *rest = row["logged"].split(";")
    assert first in row["quoted_lines"] and row["url"].startswith("https://github.com/")
    if row["checks"] == "rs":
        m = llamacpp_memory(row["model"], n_ctx=4096, n_parallel=int(row["n_seq"]), n_rs_seq=int(row["n_rs_seq"]))
        line = m.recurrent.log_line()
        assert f"size = {float(first):7.2f} MiB" in line
        for part in rest:
            name, value = part.split("=")
            assert f"{name} (f32): {float(value):7.2f} MiB" in line and value in row["quoted_lines"]
    else:  # the host output buffer: 4 x n_vocab x rows (b9776 llama-server's rows for one slot and no draft)
        s = {"tool": "llama-server", "n_parallel": int(row["n_seq"]), "n_draft": 0}
        rows = _output_buffer_rows(s, TABLE.newest)
        assert f"{4 * int(row['n_vocab']) * rows / MiB:.2f}" == first


# --- a GGUF file: weights per device, the projector and the draft model, against the bytes written ------------

@pytest.fixture
def tiny_gguf(tmp_path):
    """A llama-style GQA model written with gguf's writer (4 layers, 8 heads of 64, 2 KV heads, untied output),
    and the bytes of every tensor as written."""
    import numpy as np
    import gguf

    path = tmp_path / "tiny-llama.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for add, v in ((w.add_block_count, 4), (w.add_context_length, 4096), (w.add_embedding_length, 128),
                   (w.add_feed_forward_length, 96), (w.add_head_count, 8), (w.add_head_count_kv, 2),
                   (w.add_key_length, 64), (w.add_value_length, 64), (w.add_vocab_size, 32)):
        add(v)
    written = {}

    def f16(name, *shape):
        a = np.zeros(shape[::-1], dtype=np.float16)
        w.add_tensor(name, a)
        written[name] = a.nbytes

    f16("token_embd.weight", 128, 32)
    for i in range(4):
        f16(f"blk.{i}.attn_norm.weight", 128)
        for t, shape in (("attn_q", (128, 512)), ("attn_k", (128, 128)), ("attn_v", (128, 128)),
                         ("attn_output", (512, 128)), ("ffn_gate", (128, 96)), ("ffn_up", (128, 96)),
                         ("ffn_down", (96, 128))):
            f16(f"blk.{i}.{t}.weight", *shape)
        f16(f"blk.{i}.ffn_norm.weight", 128)
    f16("output_norm.weight", 128)
    f16("output.weight", 128, 32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, written


def test_gguf_weights_projector_and_draft(tiny_gguf):
    path, written = tiny_gguf
    pad = lambda n: -(-n // 128) * 128  # every CUDA tensor aligned to 128 bytes (f16: no row padding)
    v, _ = _verdict(["-m", str(path), "-c", "1024", "-np", "1", "--device-memory", "8GiB", "--fit", "off"])
    on_gpu = sum(pad(n) for k, n in written.items() if k != "token_embd.weight")
    assert _term(v, "CUDA0", "model") == on_gpu
    assert _term(v, "Host", "model") == written["token_embd.weight"]  # the input layer stays on the CPU
    # K and V: 4 layers x 1024 cells x 2 KV heads x 64 x f16
    assert _term(v, "CUDA0", "kv") == 4 * 1024 * 2 * (2 * 64 * 2)
    import numpy as np
    import gguf

    # a projector GGUF is written with general.architecture "clip" (convert_hf_to_gguf.py MmprojModel)
    proj = path.with_name("mmproj-tiny.gguf")
    pw = gguf.GGUFWriter(str(proj), "clip")
    pw.add_tensor("v.patch_embd.weight", np.zeros((16, 3, 4, 4), dtype=np.float16))  # 16*3*4*4*2 = 1,536 B
    pw.add_tensor("mm.0.weight", np.zeros((128, 16), dtype=np.float16))  # 128*16*2 = 4,096 B
    pw.write_header_to_file(); pw.write_kv_data_to_file(); pw.write_tensors_to_file(); pw.close()
    both, _ = _verdict(["-m", str(path), "-c", "1024", "-np", "1", "--mmproj", str(proj), "-md", str(path),
                        "--device-memory", "8GiB", "--fit", "off"])
    total = sum(written.values())
    assert _term(both, "CUDA0", "mmproj") == 1536 + 4096 and _term(both, "CUDA0", "draft_model") == total
    assert _term(both, "CUDA0", "draft_kv") == _term(both, "CUDA0", "kv")
    host, _ = _verdict(["-m", str(path), "-c", "1024", "--mmproj", str(proj), "--no-mmproj-offload",
                        "--device-memory", "8GiB"])
    assert _term(host, "Host", "mmproj") == 1536 + 4096 and _term(host, "CUDA0", "mmproj") == 0
    # a GGUF that is not a projector (here the language model itself) is refused, as clip.cpp refuses it
    with pytest.raises(KvMathError, match="not a multimodal projector"):
        _verdict(["-m", str(path), "-c", "1024", "--mmproj", str(path), "--device-memory", "8GiB"])
    # -ngl 2: i_gpu_start = n_layer + 1 - ngl = 3 (the output counts as a layer), so block 3 and the output go to
    # the GPU; each block's KV follows its block (blocks 0-2 keep theirs in RAM)
    two, _ = _verdict(["-m", str(path), "-c", "1024", "-np", "1", "-ngl", "2", "--device-memory", "8GiB"])
    assert _term(two, "CUDA0", "kv") == 1024 * 2 * (2 * 64 * 2) and _term(two, "Host", "kv") == 3 * 1024 * 512
    with pytest.raises(KvMathError, match="quant-mix"):
        _verdict(["-m", str(path), "--quant-mix", "Q4_K_M"])


@pytest.mark.parametrize("card, prefix", [("m3-max-64gb", "MTL"), ("rx7900xtx", "ROCm"), ("rtx3090", "CUDA")])
def test_the_backend_names_the_devices(card, prefix):
    from kvmath import facts

    v, _ = _verdict(QWEN27 + ["-c", "4096", "--card", card, "--fit", "off"])
    gpu = v.devices[0]
    assert gpu.name == f"{prefix}0" and gpu.capacity_bytes == round(facts.cards()[card]["total_gib"] * GiB)
    # Metal: no CUDA driver context or ggml_cuda_pool; the budget is the wired limit (recommendedMaxWorkingSetSize)
    assert (gpu.term("cuda_context") == 0) == (prefix == "MTL")
    assert any("wired" in n for n in v.notes) == (prefix == "MTL")
    assert any(f"{prefix}0 KV buffer size" in line for line in v.log_lines)
