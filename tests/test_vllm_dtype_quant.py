"""``--dtype float32`` and online ``--quantization fp8`` on vLLM, against the public boot logs that ran them
(data/measurements/vllm-public-boots.csv P129 / P130, held out: llm-d-planner's v0.19.0 accuracy sweep, Llama-3.1-8B-
Instruct on an H100) and hand derivations from the model's config.json (32 layers, hidden 4096, 8 KV heads of 128,
intermediate 14336, vocabulary 128,256, untied embeddings)."""

from __future__ import annotations

import json

import pytest

from kvmath import facts
from kvmath.errors import KvMathError
from kvmath.fit import main

GIB = 2**30
ROWS = {r["id"]: r for r in facts.public_boots()}
LINE = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--gpu-memory-utilization",
        "0.95", "--no-enable-prefix-caching", "--vllm-version", "0.19.0", "--json", "--offline"]


def _rec(capsys, *extra, card="h100", codes=(0,)):
    code = main([*LINE, "--card", card, *extra])
    out = capsys.readouterr()
    assert code in codes, out.err
    return json.loads(out.out)


def _logged(rid: str, text: str) -> float:
    line = ROWS[rid]["quoted_lines"]
    return float(line.split(text, 1)[1].split(" GiB", 1)[0])


def test_float32_weights_and_kv_cache_as_logged(capsys):
    """P130 (--dtype float32): "Model loading took 29.98 GiB"; 175,296 tokens in 42.8 GiB = 262,144 B per token =
    32 layers x (K + V) x 8 heads x 128 x 4 B (the auto cache takes the model dtype)."""
    rec = _rec(capsys, "--dtype", "float32")
    assert abs(rec["weights_bytes"] / GIB - _logged("P130", "Model loading took ")) < 0.01
    assert rec["kv_format"] == "fp32" and rec["bytes_per_block"] == 16 * 32 * 2 * 8 * 128 * 4
    assert abs(42.8 * GIB / 175296 - 262144) < 100  # the logged pair
    assert any("TRITON_ATTN" in n for n in rec["notes"]), rec["notes"]


def test_float32_profile_peak_between_bf16_and_the_log(capsys):
    """The activation of the float32 profile run rises with the dtype: P122 (bf16) logged 1.89 GiB of peak
    activation, P130 (float32) 2.21; the derived peaks keep that order and the float32 one is within 0.15 GiB of
    its log."""
    bf16, fp32 = _rec(capsys), _rec(capsys, "--dtype", "float32")
    assert bf16["profile_peak_bytes"] < fp32["profile_peak_bytes"]
    assert abs(fp32["profile_peak_bytes"] / GIB - _logged("P130", "GiB for weight, ")) < 0.15


def test_online_fp8_weights_as_logged_and_as_derived(capsys):
    """P129 (--quantization fp8 of the bf16 checkpoint): "Model loading took 8.49 GiB". Hand derivation: the
    linear weights of 32 layers, 4096 x (4096 + 2 x 1024 + 4096) + 3 x 4096 x 14336 = 218,103,808 per layer, at 1
    byte; the embedding and lm_head 2 x 128,256 x 4096 at 2 bytes; 65 norms of 4096 at 2 bytes; one fp32 scale per
    vLLM layer (qkv_proj, o_proj, gate_up_proj, down_proj: 4 a layer, scaled_fp8_quant(weight, scale=None) on the
    fused weight); the rotary cos/sin cache 131,072 x 128 in bf16 (rope_scaling llama3 keeps the positions)."""
    rec = _rec(capsys, "--quantization", "fp8")
    derived = (32 * 218_103_808 + 2 * 128_256 * 4096 * 2 + 65 * 4096 * 2 + 32 * 4 * 4 + 131_072 * 128 * 2)
    assert rec["weights_bytes"] == derived
    assert abs(rec["weights_bytes"] / GIB - _logged("P129", "Model loading took ")) < 0.01
    assert rec["kv_format"] == "bf16"


def test_online_fp8_marlin_below_sm89_adds_per_channel_scales(capsys):
    """On an A100 (sm_80) vLLM runs FP8 through Marlin (marlin_utils_fp8.py prepare_fp8_layer_for_marlin): the
    per-tensor scale becomes [1, out] in bf16: per layer 2 x (4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096) B
    instead of 4 x 4 B; the weights themselves keep their bytes (gptq_marlin_repack at 8 bits)."""
    native = _rec(capsys, "--quantization", "fp8")
    marlin = _rec(capsys, "--quantization", "fp8", card="a100")
    assert marlin["weights_bytes"] - native["weights_bytes"] == 32 * (2 * 43008 - 4 * 4)


@pytest.mark.parametrize("extra, why", [
    (["--quantization", "awq"], "online quantisation"),
    (["--dtype", "float32", "--attention-backend", "FLASHINFER"], "supported_dtypes are float16 and bfloat16"),
    (["--dtype", "float32", "--weights-gb", "16.06"], "needs the checkpoint's own tensors"),
    (["--dtype", "float32", "--quantization", "fp8"], "float32 output is not modelled"),
])
def test_unmodelled_combinations_refused_in_one_line(capsys, extra, why):
    try:
        code = main([*LINE, "--card", "h100", *extra])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and why in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_float32_below_sm80_stays_float32(capsys):
    """Below sm_80 vLLM's auto dtype falls back from bf16 to fp16, but --dtype float32 runs float32 (platforms/
    cuda.py supported_dtypes: [float16, float32] from sm_60): a T4 prices the same 4-byte KV blocks (and, with
    29.98 GiB of weights on 14.75 GiB, runs out of memory: exit 1)."""
    rec = _rec(capsys, "--dtype", "float", card="t4", codes=(1,))
    assert rec["outcome"] == "oom"
    assert rec["kv_format"] == "fp32" and rec["bytes_per_block"] == 16 * 32 * 2 * 8 * 128 * 4


@pytest.mark.parametrize("q,message", [
    ({"bits": 3, "sym": True}, "Unsupported quantization config: bits=3, sym=True"),
    ({"bits": 2, "sym": True}, "Unsupported quantization config: bits=2, sym=True"),
    ({"bits": 4, "sym": False}, "Unsupported quantization config: bits=4, sym=False"),
    ({"bits": 8, "sym": False}, "Unsupported quantization config: bits=8, sym=False"),
    ({"bits": 4}, r"Cannot find any of \['sym'\]"),
])
def test_gptq_vllm_does_not_load_is_refused_as_vllm_refuses_it(q, message):
    """vLLM 0.24.0 quantization/__init__.py maps "gptq" to auto_gptq.py AutoGPTQConfig: TYPE_MAP = {(4, True):
    uint4b8, (8, True): uint8b128}, any other (bits, sym) raises "Unsupported quantization config: bits=.., sym=..";
    from_config reads bits, group_size, desc_act, sym with get_from_keys ("Cannot find any of [...]"). 0.19.0's
    gptq.py (the plain kernel, weight_bits in [2, 3, 4, 8]) loads them."""
    from kvmath.engines.vllm.weights import check_gptq_loads

    base = {"quant_method": "gptq", "group_size": 128, "desc_act": False}
    with pytest.raises(KvMathError, match=message):
        check_gptq_loads({"quantization_config": dict(base, **q)}, "0.24.0")
    for ok in ({"bits": 4, "sym": True}, {"bits": 8, "sym": True}, {"bits": 4, "sym": 1}):
        check_gptq_loads({"quantization_config": dict(base, **ok)}, "0.24.0")
    if "sym" in q:
        check_gptq_loads({"quantization_config": dict(base, **q)}, "0.19.0")
