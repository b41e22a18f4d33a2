"""``kvmath``: print the cache derivation of a model for one engine, format and deployment.

    kvmath --config qwen3.6-27b --kv-format fp8_e5m2 --tp 2 --max-ctx 262144 --max-num-seqs 2
    kvmath --config path/to/config.json --engine llama.cpp --kv-format q8_0 --json

Paste your launch flags: each engine's own flag names are accepted, and the output adds the figures
that engine logs at start-up for them:

    kvmath --config qwen3.6-27b --engine vllm --max-model-len 262144 --max-num-seqs 2 \
        --tensor-parallel-size 2 --kv-cache-dtype fp8_e5m2 --kv-cache-memory-bytes 11.10GiB
    kvmath --config gemma-4-26b-a4b --engine llama.cpp -c 262144 -np 1 -ctk q8_0 -ctv q8_0 -fa on

Exit status: 0 on success, 2 on bad input (one line on stderr, no traceback).
Imports only the standard library and kvmath's core (no pandas, no altair).
"""

from __future__ import annotations

import argparse
import json
import sys

from .errors import KvMathError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like every other bad input
        self.exit(2, f"kvmath: error: {message} (see kvmath --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kvmath",
        description="Exact KV-cache and recurrent-state bytes per card, derived from a model's config.json.",
        epilog="Units: B = bytes; MiB/GiB are binary (2^20, 2^30), GB is decimal (1e9). "
               "Figures are per card (tensor-parallel rank).",
    )
    p.add_argument("--config", "--model", dest="config", required=True, metavar="PATH_OR_MODEL_ID",
                   help="a config.json path or a known model id (qwen3.6-27b, qwen3.6-35b-a3b, gemma-4-31b, "
                        "gemma-4-26b-a4b, or their HF repo names)")
    p.add_argument("--engine", default="vllm", help="vllm (default), llama.cpp or transformers")
    p.add_argument("--kv-format", "--kv-cache-dtype", dest="kv_format", default=None,
                   help="cache format: vLLM kv_cache_dtype (default: the model dtype), llama.cpp type for K and V, "
                        "or the transformers dtype")
    p.add_argument("--cache-type-k", "-ctk", default=None, help="llama.cpp K cache type")
    p.add_argument("--cache-type-v", "-ctv", default=None, help="llama.cpp V cache type")
    p.add_argument("--tp", "--tensor-parallel-size", dest="tp", type=int, default=1,
                   help="tensor_parallel_size (vLLM; llama.cpp and transformers: 1)")
    p.add_argument("--max-ctx", "--max-model-len", dest="max_ctx", type=int, default=None,
                   help="tokens per sequence (default: max_position_embeddings)")
    p.add_argument("--max-num-seqs", "--sequences", dest="max_num_seqs", type=int, default=1,
                   help="concurrent sequences (default 1)")
    p.add_argument("--json", action="store_true", help="print the derivation as JSON (all figures in bytes)")

    v = p.add_argument_group("vLLM flags (vllm serve names)")
    v.add_argument("--max-num-batched-tokens", type=int, default=None,
                   help="max_num_batched_tokens (default 2048); sizes the sliding-window term")
    v.add_argument("--block-size", type=int, default=None, help="block size in tokens (default 16)")
    v.add_argument("--kv-cache-memory-bytes", type=_bytes_arg, default=None, metavar="BYTES",
                   help="the memory left for KV per card, as the boot log reports it ('11.10GiB', '8GB' or "
                        "bytes): adds vLLM's block plan and the lines it logs (KV cache size in tokens, "
                        "maximum concurrency, or the refusal with the estimated maximum model length)")
    v.add_argument("--gpu-memory-utilization", type=float, default=None,
                   help="accepted (and checked) so launch flags paste; the per-card budget that uses it is "
                        "the kvmath-fit command's job")
    v.add_argument("--disable-hybrid-kv-cache-manager", action="store_true",
                   help="treat sliding-window layers as full attention (vLLM's switch)")
    v.add_argument("--num-speculative-tokens", type=int, default=None,
                   help="speculative tokens (MTP); adds the drafter's attention layer and conv-state rows")
    v.add_argument("--no-enable-prefix-caching", dest="enable_prefix_caching", action="store_false",
                   default=True, help="prefix caching off (Mamba/GDN states: mamba_cache_mode 'none')")
    v.add_argument("--enable-prefix-caching", dest="enable_prefix_caching", action="store_true")
    v.add_argument("--vllm-version", default=None, help="whose block rules to apply (default: kvmath's)")

    g = p.add_argument_group("llama.cpp flags (llama-server names)")
    g.add_argument("-c", "--ctx-size", dest="ctx_size", type=int, default=None,
                   help="total context over all sequences (-c); per sequence = ctx_size / parallel")
    g.add_argument("-np", "--parallel", dest="parallel", type=int, default=None, help="sequences (slots)")
    g.add_argument("-b", "--batch-size", dest="batch_size", type=int, default=2048)
    g.add_argument("-ub", "--ubatch-size", dest="ubatch_size", type=int, default=512)
    g.add_argument("--swa-full", action="store_true", help="full-size SWA cache")
    g.add_argument("-fa", "--flash-attn", dest="flash_attn", choices=("on", "off", "auto"), default="auto")
    g.add_argument("--kv-unified", action="store_true", help="one cache stream shared by all sequences")
    g.add_argument("-ngl", "--n-gpu-layers", dest="n_gpu_layers", type=int, default=None,
                   help="accepted so launch flags paste; the cache is sized for all layers")
    g.add_argument("--n-cpu-moe", type=int, default=None,
                   help="accepted so launch flags paste; expert weights in RAM do not change the cache")
    return p


def _bytes_arg(text: str) -> int:
    """'11.10GiB', '8 GB', '512MiB' or a plain byte count -> bytes (int)."""
    import re

    from .units import UNITS

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMG]i?B|B)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (e.g. 11.10GiB, 8GB, 1073741824)")
    value = float(m.group(1)) * UNITS[m.group(2) or "B"]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"memory size must be positive, got {text!r}")
    return int(value)


def _fmt(n: int) -> str:
    from .units import GB, GiB, MiB

    if n >= GiB:
        return f"{n / GiB:,.2f} GiB ({n / GB:,.2f} GB)"
    if n >= MiB:
        return f"{n / MiB:,.2f} MiB"
    return f"{n:,} B"


def render_text(d) -> str:
    """The derivation as text: one block per layer group, then totals per card."""
    dep = d.deployment
    lines = [
        f"{d.arch.name} ({d.arch.model_type}), {d.arch.num_hidden_layers} layers",
        f"  source:  {d.arch.source}",
        f"  engine:  {d.engine_version}",
        f"  format:  {d.kv_format.name} (K {d.kv_format.k.name}, V {d.kv_format.v.name})"
        + (f"; vLLM flag: --kv-cache-dtype {d.kv_format.flag}" if d.engine == "vllm" else ""),
        f"  deploy:  TP {dep.tp}, max_ctx {dep.max_ctx:,}, max_num_seqs {dep.max_num_seqs}",
        "",
        "Per layer type (per card):",
    ]
    for g in d.groups:
        head = f"  {g.layer_type:<18} x{g.n_layers:<3} {g.description}"
        lines.append(head)
        if getattr(g, "kind", "") == "none":
            lines.append("      no cache (MLP / MoE block)")
            continue
        if not g.owns_cache:
            lines.append("      owns no cache (reads another layer's)")
            continue
        if g.state:
            parts = " + ".join(f"{t.name} {tuple(t.shape)} {t.dtype} = {t.nbytes:,} B" for t in g.state)
            lines.append(f"      state per sequence per layer: {parts}")
            lines.append(f"      {g.n_layers} layers x {g.streams} seq = {_fmt(g.bytes)}")
        else:
            lines.append(
                f"      {g.kv_heads_per_rank} KV heads/card, {g.kv_format}: {g.bytes_per_token:,} B per token per layer; "
                f"{g.cells:,} cells x {g.streams} stream(s)"
            )
            lines.append(f"      {g.n_layers} layers = {_fmt(g.bytes)}")
    totals = [
        ("growing KV per token (each sequence adds this)", f"{d.bytes_per_token:,} B"),
        (f"growing KV at {dep.max_ctx:,} tokens x {dep.max_num_seqs} seq", _fmt(d.growing_bytes)),
        ("sliding-window KV (bounded by the window)", _fmt(d.sliding_bytes)),
        (f"recurrent state ({dep.max_num_seqs} seq)", _fmt(d.state_bytes)),
        ("total cache", _fmt(d.total_bytes)),
    ]
    width = max(len(label) for label, _ in totals)
    lines += ["", "Totals per card:"] + [f"  {label:<{width}}  {value}" for label, value in totals]
    return "\n".join(lines)


def _engine_block(args, d):
    """The engine's own start-up figures for the pasted flags: (text lines, JSON dict) or None."""
    if d.engine == "vllm" and args.kv_cache_memory_bytes is not None:
        from . import vllm_alloc

        settings = dict(max_model_len=d.deployment.max_ctx, max_num_seqs=d.deployment.max_num_seqs,
                        tensor_parallel_size=d.deployment.tp, kv_cache_dtype=d.kv_format.name,
                        max_num_batched_tokens=d.deployment.max_num_batched_tokens,
                        block_size=d.deployment.block_size,
                        disable_hybrid_kv_cache_manager=args.disable_hybrid_kv_cache_manager,
                        enable_prefix_caching=args.enable_prefix_caching,
                        num_speculative_tokens=args.num_speculative_tokens or 0)
        if args.vllm_version:
            settings["vllm_version"] = args.vllm_version
        plan = vllm_alloc.plan(d.arch, args.kv_cache_memory_bytes, **settings)
        head = (f"vLLM {plan.vllm_version} block plan for {plan.available_gib} GiB of KV memory per card: "
                f"{plan.num_blocks:,} blocks of {plan.block_size} tokens, {plan.group_size} layers per group, "
                f"page {plan.page_size_bytes:,} B")
        verdict = "boots" if plan.boots else "refused at start-up"
        lines = ["", head, f"  outcome: {verdict}"] + [f"  log: {line}" for line in plan.log_lines]
        lines += [f"  note: {n}" for n in plan.notes]
        return lines, {"vllm_plan": plan.to_dict()}
    if d.engine == "llama.cpp":
        from .llamacpp import llamacpp_memory

        n_parallel = d.deployment.max_num_seqs
        mem = llamacpp_memory(
            d.arch, n_ctx=d.deployment.max_ctx * n_parallel if args.ctx_size is None else args.ctx_size,
            n_parallel=n_parallel, cache_type_k=d.kv_format.k.name, cache_type_v=d.kv_format.v.name,
            n_batch=args.batch_size, n_ubatch=args.ubatch_size, swa_full=args.swa_full,
            flash_attn=args.flash_attn, kv_unified=args.kv_unified,
            fork="turboquant" if d.kv_format.k.name.startswith("turbo") or d.kv_format.v.name.startswith("turbo")
            else None,
        )
        lines = ["", f"llama.cpp ({mem.build}) start-up lines for these flags (n_ctx {mem.n_ctx:,}):"]
        lines += [f"  {line}" for line in mem.log_lines(buffers="CUDA0")]
        lines += [f"  note: {n}" for n in mem.notes]
        return lines, {"llamacpp": {"build": mem.build, "n_ctx": mem.n_ctx, "n_ctx_seq": mem.n_ctx_seq,
                                    "kv_bytes": mem.kv_bytes, "recurrent_bytes": mem.recurrent_bytes,
                                    "total_bytes": mem.total_bytes,
                                    "log_lines": mem.log_lines(buffers="CUDA0")}}
    return None


VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)  # vllm/config/cache.py BlockSize
_LLAMACPP_ONLY = {"ctx_size": "-c/--ctx-size", "parallel": "-np/--parallel", "cache_type_k": "-ctk/--cache-type-k",
                  "cache_type_v": "-ctv/--cache-type-v", "n_gpu_layers": "-ngl", "n_cpu_moe": "--n-cpu-moe"}
_VLLM_ONLY = {"kv_cache_memory_bytes": "--kv-cache-memory-bytes", "gpu_memory_utilization": "--gpu-memory-utilization",
              "block_size": "--block-size", "max_num_batched_tokens": "--max-num-batched-tokens",
              "vllm_version": "--vllm-version"}


def _flag_problem(args) -> str | None:
    """Flags that contradict each other or belong to another engine: a one-line reason, or None."""
    engine = args.engine.lower()
    is_llama = engine in ("llama.cpp", "llamacpp", "llama-cpp")
    is_vllm = engine == "vllm"
    if is_vllm or engine in ("transformers", "hf"):
        used = [flag for attr, flag in _LLAMACPP_ONLY.items() if getattr(args, attr) is not None]
        if used:
            what = "is a llama.cpp flag" if len(used) == 1 else "are llama.cpp flags"
            return f"{', '.join(used)} {what}; add --engine llama.cpp"
    if not is_vllm:
        used = [flag for attr, flag in _VLLM_ONLY.items() if getattr(args, attr) is not None]
        if args.disable_hybrid_kv_cache_manager:
            used.append("--disable-hybrid-kv-cache-manager")
        if used:
            what = "is a vLLM flag" if len(used) == 1 else "are vLLM flags"
            return f"{', '.join(used)} {what}, which does not apply to --engine {args.engine}"
    if is_llama and args.ctx_size is not None and args.max_ctx is not None:
        return "give either -c/--ctx-size (llama.cpp: total over all sequences) or --max-ctx (per sequence), not both"
    if is_llama and args.parallel is not None and args.max_num_seqs != 1:
        return "give either -np/--parallel or --max-num-seqs, not both"
    for name in ("kv_format", "cache_type_k", "cache_type_v"):
        value = getattr(args, name)
        if value is not None and not value.strip():
            return f"--{name.replace('_', '-')} is empty; name a cache format"
    if args.block_size is not None and args.block_size not in VLLM_BLOCK_SIZES:
        return f"--block-size must be one of {', '.join(map(str, VLLM_BLOCK_SIZES))} (vLLM's BlockSize), got {args.block_size}"
    u = args.gpu_memory_utilization
    if u is not None and not (0 < u <= 1):
        return f"--gpu-memory-utilization must be in (0, 1], got {u}"
    return None


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from .derive import derive

    extra = {}
    if args.max_num_batched_tokens is not None:
        extra["max_num_batched_tokens"] = args.max_num_batched_tokens
    if args.block_size is not None:
        extra["block_size"] = args.block_size
    if args.num_speculative_tokens:
        extra["num_speculative_tokens"] = args.num_speculative_tokens
    problem = _flag_problem(args)
    if problem:
        print(f"kvmath: error: {problem}", file=sys.stderr)
        return 2
    max_ctx, seqs = args.max_ctx, args.max_num_seqs
    if args.parallel is not None:
        seqs = args.parallel
    if args.ctx_size is not None:
        if args.ctx_size < 1:
            print(f"kvmath: error: --ctx-size must be a positive integer, got {args.ctx_size}", file=sys.stderr)
            return 2
        max_ctx = -(-args.ctx_size // max(1, seqs))
    if args.engine.lower() in ("llama.cpp", "llamacpp", "llama-cpp"):
        extra.update(n_ubatch=args.ubatch_size, swa_full=args.swa_full, kv_unified=args.kv_unified)
    try:
        d = derive(
            args.config, engine=args.engine, kv_format=args.kv_format, cache_type_k=args.cache_type_k,
            cache_type_v=args.cache_type_v, tp=args.tp, max_ctx=max_ctx, max_num_seqs=seqs, **extra,
        )
        block = _engine_block(args, d)
    except KvMathError as e:
        print(f"kvmath: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        out = d.to_dict()
        if block:
            out.update(block[1])
        print(json.dumps(out, indent=1))
    else:
        print(render_text(d) + ("\n" + "\n".join(block[0]) if block else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
