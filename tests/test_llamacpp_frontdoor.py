"""llama.cpp front door: defects a fresh user found (gpt-oss weights without a GGUF, the --n-cpu-moe search,
the -c answer above n_ctx_train, per-device KV log lines, unnamed defaults, truncated GGUFs, repeated flags).

Every expected figure comes from outside kvmath's arithmetic: llama.cpp logs of published files, llama.cpp's
source at the build kvmath models, or a hand derivation written out here."""

from __future__ import annotations

from collections import Counter

import pytest

from kvmath.engines import get_engine
from kvmath.fit import run as fit_run
from kvmath.units import GiB, MiB
from test_llamacpp_launch import _term, _verdict  # the front door's --card / --device-memory applied, one copy

E = get_engine("llama.cpp")

# --- 1. gpt-oss without a GGUF: MXFP4 experts, not a Q4_K_M fiction ------------------------------------------

# llama.cpp loader logs of ggml-org's MXFP4 MoE files (general.file_type 38), as users pasted them:
#   gpt-oss-20b:  "type f32: 289 / q8_0: 98 / mxfp4: 72 tensors", "file size = 11.27 GiB (4.63 BPW)"
#   gpt-oss-120b: "type f32: 433 / q8_0: 146 / mxfp4: 108 tensors", "file size = 59.02 GiB (4.34 BPW)",
#                 "CPU_Mapped model buffer size = 586.82 MiB" (token_embd stays on the host with every layer off)
GPT_OSS_LOGS = {"gpt-oss-20b": ({"F32": 289, "Q8_0": 98, "MXFP4": 72}, 11.27),
                "gpt-oss-120b": ({"F32": 433, "Q8_0": 146, "MXFP4": 108}, 59.02)}


@pytest.mark.parametrize("name", sorted(GPT_OSS_LOGS))
def test_gpt_oss_without_gguf_is_priced_as_its_mxfp4_file(name):
    from kvmath.engines.llamacpp.verdict import read_model

    counts, gib = GPT_OSS_LOGS[name]
    m = read_model({"quant_mix": None, "weight_bits": None, "imatrix": False}, name)
    assert dict(Counter(t.ggml_type for t in m.tensors)) == counts
    assert round(sum(t.n_bytes for t in m.tensors) / GiB, 2) == gib
    assert any("MXFP4_MOE" in n for n in m.notes)


def test_gpt_oss_120b_all_layers_on_the_card():
    v, _ = _verdict(["-m", "gpt-oss-120b", "-c", "32768", "-ngl", "99", "--card", "rtx4090"])
    host = _term(v, "Host", "model") / MiB
    dev = _term(v, "CUDA0", "model") / MiB
    assert round(host, 2) == 586.82  # the loader log's CPU_Mapped buffer (token_embd, Q8_0 201088 x 2880)
    assert round((host + dev) * MiB / GiB, 2) == 59.02  # was 83,389 + 380 MiB (81.8 GiB) "as Q4_K_M"


def test_gpt_oss_k_quant_mix_is_refused(capsys):
    assert fit_run(["llama-server", "-m", "gpt-oss-20b", "--quant-mix", "Q4_K_M", "--card", "rtx4090"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MXFP4" in err[0] and ".gguf" in err[0] and "--weight-bits" in err[0]


# --- 2. the smallest --n-cpu-moe that fits on the devices AND the host -----------------------------------------

@pytest.mark.parametrize("host", ["40GiB", "48GiB", "128GiB"])
def test_smallest_n_cpu_moe_is_the_first_value_that_boots_everywhere(host):
    from kvmath import solve

    argv = ["-m", "gpt-oss-120b", "-c", "32768", "-ngl", "99", "--n-cpu-moe", "28", "--card", "rtx4090",
            "--host-memory", host]
    v, la = _verdict(argv)
    la = E.for_solving(la)
    # every value of the range, each its own verdict (no bisection): the values that boot
    boots = [k for k in range(0, 37) if E.verdict(la.with_settings(n_cpu_moe=k)).boots]
    ans = solve.smallest_offload(E, la)
    assert ans == (boots[0] if boots else None)
    assert boots == list(range(boots[0], boots[-1] + 1))  # an interval: the GPU fills below, the host above
    if v.boots:
        assert ans is not None and ans <= 28  # the user's own value boots, so the answer cannot be "none"
    if host == "48GiB":
        assert boots[-1] < 36  # the host refuses all 36 layers' experts: the old search (hi first) said none


# --- 3. the largest -c is memory's limit, past n_ctx_train named ----------------------------------------------

def test_largest_context_is_not_capped_below_a_context_that_boots(capsys):
    import json

    argv = ["-m", "llama-3.1-8b", "-c", "200000", "-ctk", "q4_0", "-ctv", "q4_0", "--card", "rtx4090"]
    assert fit_run(["llama-server", *argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    best = d["answers"]["largest_context"]
    assert d["outcome"] == "boots" and best >= d["context"]  # was 131072 < 200,192 that boots
    # Llama 3.1 8B (data/configs/meta-llama__Llama-3.1-8B-Instruct.json): max_position_embeddings 131072
    assert d["engine_detail"]["n_ctx_train"] == 131072
    assert any("n_ctx_train 131,072" in n and "capping" in n for n in d["notes"])
    v, la = _verdict(argv)
    off = E.for_solving(la)
    at = E.verdict(off.with_settings(n_ctx=best))
    assert at.boots and not E.verdict(off.with_settings(n_ctx=best + 256)).boots
    # q4_0 K and V: 8 KV heads x 128 = 1024 values = 32 blocks x 18 bytes = 576 bytes each, 32 layers
    assert _term(at, "CUDA0", "kv") == best * 32 * 2 * 576
    assert fit_run(["llama-server", *argv]) == 0
    assert "(memory's limit; past n_ctx_train 131,072" in capsys.readouterr().out


# --- 4. one "KV buffer size" line per buffer type -------------------------------------------------------------

# Llama 3.1 8B f16 cache, 8192 cells: K and V are 8 heads x 128 x 8192 x 2 bytes = 16 MiB each, 32 MiB a layer.
# llama-kv-cache.cpp: one ggml context per buffer type in a std::map ordered by strcmp of the buft names,
# each allocated and logged as "%s: %10s KV buffer size = %8.2f MiB" (so CPU before CUDA0 before CUDA1).
@pytest.mark.parametrize("flags, want", [
    # -ngl 10: llama-model.cpp i_gpu_start = n_layer + 1 - ngl = 23, so blocks 23..31 (9) on CUDA0, 23 on the CPU
    (["-ngl", "10"], [("CPU", 23 * 32), ("CUDA0", 9 * 32)]),
    # -ts 3,1: the 33 offloadable layers split at the cumulative fraction 0.75: il / 33 < 0.75 for il <= 24,
    # so blocks 0..24 (25) on CUDA0, 25..31 (7) on CUDA1
    (["-ts", "3,1"], [("CUDA0", 25 * 32), ("CUDA1", 7 * 32)]),
    # -ts 0,0: all zero is llama.cpp's default split by free memory (llama-model.cpp load_tensors all_zero), two
    # equal cards -> split point 0.5: il / 33 < 0.5 for il <= 16, so blocks 0..16 (17) on CUDA0, 17..31 (15) on CUDA1
    (["-ts", "0,0"], [("CUDA0", 17 * 32), ("CUDA1", 15 * 32)]),
])
def test_kv_buffer_lines_one_per_device(flags, want):
    v, _ = _verdict(["-m", "llama-3.1-8b", "-c", "8192", *flags, "--card", "rtx4090"])
    got = [line for line in v.log_lines if "KV buffer size" in line]
    assert got == [f"llama_kv_cache: {d:>10s} KV buffer size = {m:8.2f} MiB" for d, m in want]
    assert any(n.startswith("-ts all zero: llama.cpp's default split") for n in v.notes) == (flags[1] == "0,0")
    for d, m in want:  # the device table says the same
        assert _term(v, "Host" if d == "CPU" else d, "kv") == m * MiB


# --- 5. defaults and readings named ------------------------------------------------------------------------------

def test_unsaid_defaults_are_named():
    v, _ = _verdict(["-m", "llama-3.1-8b", "--card", "rtx4090"])
    notes = "\n".join(v.notes)
    assert "-c not given: n_ctx = the model's training context (n_ctx_train 131,072)" in notes
    assert "-ngl not given" in notes and "-fa not given" in notes and "-ctk / -ctv not given" in notes
    v, _ = _verdict(["-m", "llama-3.1-8b", "-c", "8192", "-ngl", "99", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0",
                     "--card", "rtx4090"])
    assert not any(n.startswith(("-c ", "-ngl", "-fa", "-ctk")) for n in v.notes)


def test_negative_ngl_is_all_layers_and_said():
    # llama.h: "number of layers to store in VRAM, a negative value means all layers";
    # llama_model::n_gpu_layers() = n_layer + 1 for it: 33 for Llama 3.1 8B (32 blocks + the output layer)
    neg, _ = _verdict(["-m", "llama-3.1-8b", "-c", "8192", "-ngl", "-5", "--card", "rtx4090"])
    full, _ = _verdict(["-m", "llama-3.1-8b", "-c", "8192", "-ngl", "33", "--card", "rtx4090"])
    assert _term(neg, "CUDA0", "model") == _term(full, "CUDA0", "model")
    assert any(n.startswith("-ngl -5: a negative layer count means all layers") for n in neg.notes)


@pytest.mark.parametrize("flags, how", [(["-ts", "3,1"], "-ts"), (["-dev", "CUDA0,CUDA1"], "-dev")])
def test_a_second_card_is_named(flags, how):
    v, _ = _verdict(["-m", "llama-3.1-8b", "-c", "8192", *flags, "--card", "rtx4090"])
    assert [d.name for d in v.devices] == ["CUDA0", "CUDA1", "Host"]
    assert any(n.startswith(f"{how} names 2 GPUs: each priced as rtx4090") for n in v.notes)


# --- 6. a GGUF whose blocks are missing is refused as llama.cpp refuses it --------------------------------------

def _header_only_llama(path, blocks_written: int):
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(4)
    w.add_context_length(4096)
    w.add_embedding_length(128)
    w.add_feed_forward_length(96)
    w.add_head_count(8)
    w.add_head_count_kv(2)
    w.add_vocab_size(32)
    w.add_tensor("token_embd.weight", np.zeros((32, 128), dtype=np.float16))
    for i in range(blocks_written):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros(128, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


@pytest.mark.parametrize("written, first_missing", [(0, 0), (2, 2)])
def test_gguf_without_its_blocks_is_refused(tmp_path, capsys, written, first_missing):
    # llama-model.cpp load_tensors asks for blk.0.attn_norm.weight (then the rest of the block) for every
    # declared block and throws "missing tensor '%s'" at the first one the file lacks
    f = _header_only_llama(tmp_path / "trunc.gguf", written)
    assert fit_run(["llama-server", "-m", f, "-c", "4096", "--card", "rtx4090"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "block_count 4" in err[0] and f"missing tensor 'blk.{first_missing}." in err[0]


# --- 7. a flag repeated with its own value; a shortfall below 1 MiB ---------------------------------------------

def test_same_value_twice_is_one_setting_and_different_values_are_refused(capsys):
    base = ["llama-server", "-m", "llama-3.1-8b", "--card", "rtx4090", "--no-solve"]
    assert fit_run(base + ["-c", "8192", "--ctx-size", "8192"]) == 0
    assert "n_ctx 8,192" in capsys.readouterr().out
    assert fit_run(base + ["-c", "8192", "--ctx-size", "4096"]) == 2
    err = capsys.readouterr().err
    assert "--ctx-size given twice with different values" in err and "8192" in err and "4096" in err


def test_a_shortfall_below_one_mib_keeps_two_decimals():
    argv = ["-m", "llama-3.1-8b", "-c", "8192", "-ngl", "99", "--device-memory", "24GiB"]
    v, _ = _verdict(argv)
    used = next(d for d in v.devices if d.name == "CUDA0").used_bytes
    short = 20_972  # 0.02 MiB: 20,972 / 1,048,576 = 0.0200 MiB
    v, _ = _verdict(argv[:-1] + [str(used - short)])
    assert v.outcome == "oom" and "CUDA0 short by 0.02 MiB" in v.message  # was "short by 0 MiB"


@pytest.mark.parametrize("line, priced, ignored", [
    (["llama-server", "--help"], "-ngl", "--port"),
    (["llama-cli", "-h"], "--n-cpu-moe", "--temp"),
    (["python", "-m", "sglang.launch_server", "--help"], "--mem-fraction-static", "--port"),
])
def test_front_door_help_lists_the_flags_read(capsys, line, priced, ignored):
    """``kvmath-fit <program> --help`` answers with the flags kvmath reads, exit 0: llama-server and SGLang both
    have a --help of their own, so the front door must not refuse the flag as unknown."""
    from kvmath.fit import run

    assert run(line) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: kvmath-fit {' '.join(line[:-1])} ")
    head, _, rest = out.partition(" ignored ")
    assert priced in head and ignored in rest.partition(" refused ")[0]
    assert "exit status: 0 boots, 1 does not boot, 2 bad input, 3 internal error" in out
