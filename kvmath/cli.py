"""``kvmath``: print the cache derivation of a model for one engine, format and deployment.

    kvmath --config qwen3.6-27b --kv-format fp8_e5m2 --tp 2 --max-ctx 262144 --max-num-seqs 2
    kvmath --config path/to/config.json --engine llama.cpp --kv-format q8_0 --json

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
    p.add_argument("--tp", "--tensor-parallel-size", dest="tp", type=int, default=1, help="tensor_parallel_size")
    p.add_argument("--max-ctx", "--max-model-len", dest="max_ctx", type=int, default=None,
                   help="tokens per sequence (default: max_position_embeddings)")
    p.add_argument("--max-num-seqs", "--sequences", dest="max_num_seqs", type=int, default=1,
                   help="concurrent sequences (default 1)")
    p.add_argument("--max-num-batched-tokens", type=int, default=None,
                   help="vLLM max_num_batched_tokens (default 2048); sizes the sliding-window term")
    p.add_argument("--block-size", type=int, default=None, help="vLLM block size in tokens (default 16)")
    p.add_argument("--json", action="store_true", help="print the derivation as JSON (all figures in bytes)")
    return p


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
        f"  format:  {d.kv_format.name} (K {d.kv_format.k.name}, V {d.kv_format.v.name})",
        f"  deploy:  TP {dep.tp}, max_ctx {dep.max_ctx:,}, max_num_seqs {dep.max_num_seqs}",
        "",
        "Per layer type (per card):",
    ]
    for g in d.groups:
        head = f"  {g.layer_type:<18} x{g.n_layers:<3} {g.description}"
        lines.append(head)
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


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from .derive import derive

    extra = {}
    if args.max_num_batched_tokens is not None:
        extra["max_num_batched_tokens"] = args.max_num_batched_tokens
    if args.block_size is not None:
        extra["block_size"] = args.block_size
    try:
        d = derive(
            args.config, engine=args.engine, kv_format=args.kv_format, cache_type_k=args.cache_type_k,
            cache_type_v=args.cache_type_v, tp=args.tp, max_ctx=args.max_ctx, max_num_seqs=args.max_num_seqs,
            **extra,
        )
    except KvMathError as e:
        print(f"kvmath: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(d.to_dict(), indent=1))
    else:
        print(render_text(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
