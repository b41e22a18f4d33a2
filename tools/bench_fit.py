"""Timings of the deployment-fit path (figures only, no assertions).

    python tools/bench_fit.py

1. one prediction from the command line, cold (a fresh interpreter: ``kvmath-fit --compose dual --json``;
   target <= 0.25 s);
2. the max-context solver on a refused preset;
3. ``kvmath.engines.vllm.budget.sweep`` over >= 10^6 configurations (contexts x sequences x formats x TP; target <= 1 s);
4. the largest config the product accepts: a Qwen3-235B-A22B FP8 config.json (94 layers x 128 experts, 282
   ``modules_to_not_convert`` entries; its weights estimated from config.json), a whole ``kvmath-fit`` answer with
   the solvers, cold (issue 21 target <= 1 s);
5. a 400,000-entry safetensors header: a model folder (config.json + one ``model.safetensors`` of
   400,963 tensor entries, a 55 MB header, its data a sparse file) of a 64-layer, 416-expert W4A16 MoE, a whole
   ``kvmath-fit --config <folder> --card h100 --json`` answer, cold (issue 21 target <= 1 s).
"""

from __future__ import annotations

import subprocess
import sys
import time


def best_of(cmd: list[str], runs: int) -> float:
    """Seconds of the fastest of ``runs`` runs of ``cmd`` in a fresh process."""
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t)
    return best


def cold_cli(runs: int = 5) -> float:
    return best_of([sys.executable, "-m", "kvmath.engines.vllm.cli", "--compose", "dual", "--json"], runs)


def interpreter_only(runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        best = min(best, time.perf_counter() - t)
    return best


def one_budget(runs: int = 300) -> tuple[float, float]:
    """Microseconds per budget(): a new max_model_len each call (no cached layout), and the same call again."""
    from kvmath.engines.vllm.budget import budget

    kw = dict(tp=2, kv_format="int8_per_token_head", max_num_batched_tokens=8192)
    budget("qwen3.6-27b", max_model_len=262144, **kw)
    t = time.perf_counter()
    for i in range(runs):
        budget("qwen3.6-27b", max_model_len=100000 + i, **kw)
    fresh = (time.perf_counter() - t) / runs * 1e6
    t = time.perf_counter()
    for _ in range(runs):
        budget("qwen3.6-27b", max_model_len=100000, **kw)
    return fresh, (time.perf_counter() - t) / runs * 1e6


def solver() -> tuple[float, int]:
    from kvmath.engines.vllm.budget import preset_budget, solve_max_model_len

    b = preset_budget("qwen3.6-27b", "long-text")
    t = time.perf_counter()
    L = solve_max_model_len(b)
    return time.perf_counter() - t, L


def sweep(runs: int = 3) -> tuple[float, float, int]:
    """(first run's seconds, best of ``runs`` seconds, configurations): the first run also plans each format
    and TP once (kept for the later calls)."""
    import numpy as np

    from kvmath.engines.vllm.budget import sweep as run

    contexts = np.linspace(1024, 262144, 1000).astype(int)
    seqs = np.arange(1, 51)
    formats = ["bf16", "fp8_e5m2", "int8_per_token_head", "turboquant_3bit_nc", "turboquant_k8v4"]
    tps = [1, 2, 4, 8]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = run("qwen3.6-27b", contexts=contexts, seqs=seqs, formats=formats, tps=tps, card="h100",
                  max_num_batched_tokens=8192)
        times.append(time.perf_counter() - t)
    return times[0], min(times), out["boots"].size


def largest_config(runs: int = 3) -> float:
    """Seconds of a cold ``kvmath-fit --config <Qwen3-235B-A22B FP8> --card h100 --tp 8``, best of ``runs``."""
    import json
    import tempfile
    from pathlib import Path

    skip = (["lm_head"] + [f"model.layers.{i}.mlp.gate" for i in range(94)]
            + [f"model.layers.{i}.self_attn.q_norm" for i in range(94)]
            + [f"model.layers.{i}.self_attn.k_norm" for i in range(93)])
    cfg = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 4096,
           "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
           "intermediate_size": 12288, "moe_intermediate_size": 1536, "num_experts": 128, "num_experts_per_tok": 8,
           "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936, "max_position_embeddings": 40960,
           "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
           "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                   "weight_block_size": [128, 128], "modules_to_not_convert": skip}}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "config.json"
        path.write_text(json.dumps(cfg))
        return best_of([sys.executable, "-m", "kvmath.fit", "--config", str(path), "--card", "h100", "--tp", "8"],
                       runs)


def header_folder(folder, layers: int = 64, experts: int = 416) -> int:
    """Write a model folder of a synthetic W4A16 (compressed-tensors, asymmetric, group act-order) Qwen3-MoE into
    ``folder``: config.json and one model.safetensors (8-byte little-endian header length + JSON header; the data a
    sparse file of the size the header's offsets name). 64 layers x 416 experts x 3 projections x 5 tensors: a
    400,000-entry header (a config may state at most 32,768 expert MLPs, kvmath.validate). Returns the number of
    tensor entries (400,963 at the defaults)."""
    import json
    import struct
    from pathlib import Path

    H, I, V, nh, nkv, hd, g = 1024, 256, 32000, 16, 4, 64, 128
    cfg = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": H,
           "num_hidden_layers": layers, "num_attention_heads": nh, "num_key_value_heads": nkv, "head_dim": hd,
           "intermediate_size": 4 * H, "moe_intermediate_size": I, "num_experts": experts, "num_experts_per_tok": 8,
           "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": V, "max_position_embeddings": 32768,
           "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
           "quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
                                   "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                                       "num_bits": 4, "type": "int", "symmetric": False, "strategy": "group",
                                       "group_size": g, "actorder": "group"}}}, "ignore": ["lm_head"]}}
    rows = [("model.embed_tokens.weight", "BF16", [V, H]), ("model.norm.weight", "BF16", [H]),
            ("lm_head.weight", "BF16", [V, H])]

    def packed(prefix, out, inp):
        return [(f"{prefix}.weight_packed", "I32", [out, inp // 8]), (f"{prefix}.weight_scale", "BF16", [out, inp // g]),
                (f"{prefix}.weight_zero_point", "I32", [out // 8, inp // g]), (f"{prefix}.weight_shape", "I64", [2]),
                (f"{prefix}.weight_g_idx", "I32", [inp])]

    for i in range(layers):
        p = f"model.layers.{i}"
        rows += [(f"{p}.input_layernorm.weight", "BF16", [H]), (f"{p}.post_attention_layernorm.weight", "BF16", [H]),
                 (f"{p}.self_attn.q_norm.weight", "BF16", [hd]), (f"{p}.self_attn.k_norm.weight", "BF16", [hd]),
                 (f"{p}.mlp.gate.weight", "BF16", [experts, H])]
        for name, out in (("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
            rows += packed(f"{p}.self_attn.{name}", out, H)
        rows += packed(f"{p}.self_attn.o_proj", H, nh * hd)
        for e in range(experts):
            x = f"{p}.mlp.experts.{e}"
            rows += packed(f"{x}.gate_proj", I, H) + packed(f"{x}.up_proj", I, H) + packed(f"{x}.down_proj", H, I)
    bits = {"BF16": 16, "I32": 32, "I64": 64}
    header, at = {}, 0
    for name, dtype, shape in rows:
        n = bits[dtype] // 8
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + n]}
        at += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    folder = Path(folder)
    (folder / "config.json").write_text(json.dumps(cfg))
    with open(folder / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + at)  # sparse: the data is never read
    return len(rows)


def large_header(runs: int = 3) -> tuple[float, int]:
    """(seconds of a cold ``kvmath-fit --config <folder> --card h100 --json``, best of ``runs``; tensor entries)
    on the folder :func:`header_folder` writes."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        n = header_folder(d)
        return best_of([sys.executable, "-m", "kvmath.fit", "--config", d, "--card", "h100", "--json"], runs), n


def header_readers(runs: int = 3) -> tuple[float, float, int]:
    """(seconds of kvmath's column reader, seconds of its general JSON reader, tensor entries) on the header of
    :func:`header_folder`'s model.safetensors, in this process, best of ``runs`` (the JSON reader is what every
    header went through before the column reader, kvmath.model.table.fast_header)."""
    import tempfile
    from pathlib import Path

    from kvmath.model import checkpoint as C

    with tempfile.TemporaryDirectory() as d:
        n = header_folder(d)
        data = (Path(d) / "model.safetensors").open("rb").read(8)
        k = int.from_bytes(data, "little")
        with (Path(d) / "model.safetensors").open("rb") as f:
            head = f.read(8 + k)
        size = (Path(d) / "model.safetensors").stat().st_size
    times = {}
    real = C.fast_header
    for name, fast in (("columns", real), ("json", lambda *a: None)):
        C.fast_header = fast
        best = float("inf")
        for _ in range(runs):
            t = time.perf_counter()
            with C.gc_paused():
                table, _ = C.parse_safetensors_table(head, size, "bench", "model.safetensors")
            best = min(best, time.perf_counter() - t)
            assert len(table) == n
        times[name] = best
    C.fast_header = real
    return times["columns"], times["json"], n


if __name__ == "__main__":
    base = interpreter_only()
    cli = cold_cli()
    print(f"cold CLI prediction (kvmath-fit --compose dual --json): {cli:.3f} s "
          f"(bare interpreter start {base:.3f} s; target <= 0.25 s)")
    fresh, again = one_budget()
    print(f"one budget(): {fresh:,.0f} us with a new max_model_len, {again:,.0f} us repeated "
          "(issue #11 target <= 100 us)")
    s, L = solver()
    print(f"solver (qwen3.6-27b long-text): {s * 1e3:.2f} ms -> largest max_model_len {L:,} (target <= 2 ms)")
    first, w, n = sweep()
    print(f"vectorised sweep: {n:,} configurations in {w:.3f} s = {n / w:,.0f} per second, best of 3 (the first "
          f"run, planning each format and TP once: {first:.3f} s = {n / first:,.0f} per second; target >= 10^7 / s)")
    big = largest_config()
    print(f"largest config (Qwen3-235B-A22B FP8 config.json, 282 skipped modules, TP 8 on H100, solvers included): "
          f"{big:.2f} s cold (target <= 1 s)")
    hdr, n = large_header()
    print(f"largest safetensors header (a model folder of {n:,} tensor entries, W4A16 MoE, on H100, --json, solvers "
          f"included): {hdr:.2f} s cold (target <= 1 s)")
    cols, js, n = header_readers()
    print(f"  its header alone, in process: {cols:.2f} s read into columns (kvmath.model.table.fast_header), "
          f"{js:.2f} s through json.loads and Tensor rows (the reader every header took before)")
