"""``python -m kvmath.engines.llamacpp.fit``: will this llama.cpp launch fit the card, with llama.cpp's flags.

Prints the per-device budget (model / KV / RS / compute, CUDA context, headroom), the verdict, the smallest
``--n-cpu-moe`` and the largest ``-c`` that fit, what ``--fit`` would do (its projected-memory lines), and a
tokens/s estimate. Weights come from a GGUF's tensor table (``-m file.gguf``), or from the config's tensor
shapes in a named llama-quantize mix (``--quant-mix Q4_K_M``: :mod:`quantmix`, per-tensor types as llama.cpp
chooses them), or at a flat ``--weight-bits``. Exit status 0 fits, 1 does not, 2 bad input, 3 an internal
error (one line asking for a report; ``--debug`` prints the traceback; kvmath.clitools).
"""

from __future__ import annotations

import argparse
import json
import sys

from ...errors import KvMathError

MiB = 2**20


def build_parser() -> argparse.ArgumentParser:
    from ...clitools import EXIT_HELP

    p = argparse.ArgumentParser(prog="python -m kvmath.engines.llamacpp.fit", description=__doc__.splitlines()[0],
                                epilog=EXIT_HELP.replace("boots (or answered)", "fits").replace("does not boot",
                                                                                               "does not fit"))
    p.add_argument("--debug", action="store_true", help="print the traceback of an internal error (exit 3)")
    p.add_argument("--model", "-m", required=True, help="known model id, config.json path, or a .gguf file")
    p.add_argument("-c", "--ctx-size", dest="n_ctx", type=int, default=None, help="context (0/unset = training)")
    p.add_argument("-np", "--parallel", dest="n_parallel", type=int, default=1)
    p.add_argument("-ctk", "--cache-type-k", dest="ctk", default="f16")
    p.add_argument("-ctv", "--cache-type-v", dest="ctv", default=None)
    p.add_argument("-b", "--batch-size", dest="n_batch", type=int, default=2048)
    p.add_argument("-ub", "--ubatch-size", dest="n_ubatch", type=int, default=512)
    p.add_argument("-fa", "--flash-attn", dest="fa", choices=("auto", "on", "off"), default="auto")
    p.add_argument("-ngl", "--n-gpu-layers", dest="ngl", default="all")
    p.add_argument("--n-cpu-moe", "-ncmoe", dest="n_cpu_moe", type=int, default=0)
    p.add_argument("--cpu-moe", "-cmoe", dest="cpu_moe", action="store_true")
    p.add_argument("-ot", "--override-tensor", dest="ot", action="append", default=[])
    p.add_argument("--no-mmap", dest="mmap", action="store_false")
    p.add_argument("--card", default="rtx5070ti", help="card id or alias from data/cards.json")
    p.add_argument("--cuda-context-mib", type=float, default=None)
    p.add_argument("--headroom-mib", type=float, default=0.0)
    p.add_argument("--fit-target", type=int, default=None, help="--fit's free-memory target per device (MiB)")
    p.add_argument("--quant-mix", default=None,
                   help="llama-quantize mix the weights are estimated in when no .gguf is given (Q4_K_M, Q5_K_M, "
                        "Q6_K, Q8_0, IQ4_XS, ...; per-tensor types by llama.cpp's rules); without it --weight-bits")
    p.add_argument("--imatrix", action="store_true", help="the mix was made with an importance matrix")
    p.add_argument("--weight-bits", type=float, default=4.8,
                   help="bits per weight for the config estimate when no --quant-mix is given")
    p.add_argument("--host-bandwidth-gbs", type=float, default=60.0, help="system RAM bandwidth (GB/s)")
    p.add_argument("--json", action="store_true")
    return p


def run(argv=None) -> int:
    from ... import load_architecture, resolve_model
    from . import budget as B
    from .placement import tensors_from_header
    from .weights import estimate_weights

    a = build_parser().parse_args(argv)
    try:
        tensors = None
        if str(a.model).endswith(".gguf"):
            if a.quant_mix is not None:
                raise KvMathError("--quant-mix estimates a file from config.json; a .gguf has its own tensor types")
            from ...model.gguf import read_gguf, read_header

            g = read_gguf(a.model)
            arch, cfg = g.architecture, g.config
            tensors = tensors_from_header(read_header(a.model))
            weights = g.weights
        else:
            try:
                cfg = resolve_model(a.model)["config"]
            except KvMathError:
                from ...model.load import MAX_CONFIG_BYTES
                from ...validate import check_config, parse_json, read_bounded

                # a regular file only (a FIFO or device cannot hang the read), bounded, depth-capped, every field checked
                cfg = check_config(parse_json(read_bounded(a.model, MAX_CONFIG_BYTES, "config.json"), a.model))
            arch = load_architecture(cfg if not isinstance(a.model, str) or a.model.endswith(".json") else a.model)
            if a.quant_mix is not None:
                from .quantmix import check_mix
                from .weights import weights_from_mix

                tensors, weights = weights_from_mix(cfg, check_mix(a.quant_mix), imatrix=a.imatrix)
            else:
                weights = estimate_weights(cfg, bits_per_weight=a.weight_bits)
        c = B.card(a.card)
        total = c["total_gib"] * 1024
        ctx0 = a.n_ctx or (cfg.get("text_config", cfg).get("max_position_embeddings") or 4096)
        ctxk = dict(cuda_context_mib=a.cuda_context_mib if a.cuda_context_mib is not None else B.CUDA_CONTEXT_MIB,
                    headroom_mib=a.headroom_mib)
        n_cpu_moe = weights.n_blocks if a.cpu_moe else a.n_cpu_moe

        def setup(n_ctx, ncm):
            return B.plan(arch, cfg, n_ctx=n_ctx, cache_type_k=a.ctk, cache_type_v=a.ctv, n_ubatch=a.n_ubatch,
                          n_batch=a.n_batch, flash_attn=a.fa, n_gpu_layers=a.ngl, n_cpu_moe=ncm,
                          weights=None if tensors is not None else weights, tensors=tensors,
                          override_tensor=a.ot, mmap=a.mmap, total_mib=total, n_parallel=a.n_parallel, **ctxk)

        s, mem, cb = setup(ctx0, n_cpu_moe)
        b = s.budget
        fits = lambda ncm: setup(ctx0, ncm)[0].budget.spare_mib >= 0
        best_moe = B.smallest(fits, 0, weights.n_blocks) if weights.n_blocks else None
        best_ctx = B.largest(lambda n: setup(n, n_cpu_moe)[0].budget.spare_mib >= 0, 256, ctx0)
        proj = lambda n_ctx, k: int(sum(x * MiB for x in (lambda bb: (bb.model_mib, bb.kv_mib, bb.rs_mib,
                                                                     bb.compute_mib))(setup(n_ctx, k + n_cpu_moe)[0].budget)))
        fa = B.fit_like_llamacpp(proj, free_mib=b.free_mib, n_ctx=ctx0, n_ctx_set_by_user=a.n_ctx is not None,
                                 n_blocks=weights.n_blocks, ngl_set_by_user=a.ngl not in ("all", "auto", "-1"),
                                 overrides_set_by_user=bool(a.ot or n_cpu_moe),
                                 is_moe=weights.experts > 0,
                                 target_mib=a.fit_target if a.fit_target is not None else B.FIT_TARGET_MIB)
    except (KvMathError, OSError, ValueError) as e:
        print(f"kvmath-llamacpp-fit: error: {str(e).splitlines()[0][:300]}", file=sys.stderr)
        return 2
    out = {"card": c["id"], "total_mib": round(total, 1), "cuda_context_mib": b.cuda_context_mib,
           "model_mib": round(b.model_mib, 2), "kv_mib": round(b.kv_mib, 2), "rs_mib": round(b.rs_mib, 2),
           "compute_mib": round(b.compute_mib, 2), "compute_dominant": cb.dominant,
           "host_compute_mib": round(s.host_compute_mib, 2), "host_model_mib": round(s.host_model_mib, 2),
           "load_mib": round(b.load_mib, 2), "verdict": b.verdict, "spare_mib": round(b.spare_mib, 2),
           "smallest_n_cpu_moe": best_moe, "largest_ctx": best_ctx, "fit": fa.__dict__ | {"lines": list(fa.lines)},
           "weights": weights.source, "notes": list(s.notes)}
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{c['name']}: {total:,.0f} MiB, CUDA context {b.cuda_context_mib:,.0f} MiB, headroom "
              f"{b.headroom_mib:,.0f} MiB")
        for k in ("model_mib", "kv_mib", "rs_mib", "compute_mib"):
            print(f"  CUDA0 {k[:-4]:8s} {out[k]:10,.2f} MiB")
        print(f"  load total     {b.load_mib:10,.2f} MiB -> {b.verdict} (spare {b.spare_mib:,.0f} MiB)")
        print(f"  smallest --n-cpu-moe that fits: {best_moe}; largest -c that fits: {best_ctx}")
        print("  --fit would say:")
        for line in fa.lines:
            print("    " + line)
    return 0 if b.verdict == "fits" else 1


def main(argv=None) -> int:
    """Entry point: ``run`` under kvmath.clitools.guarded (exit 0 fits, 1 does not, 2 bad input, 3 internal)."""
    from ...clitools import guarded

    return guarded("kvmath-llamacpp-fit", run, argv)


if __name__ == "__main__":
    sys.exit(main())
