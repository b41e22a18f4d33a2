"""``kvmath``: print the cache derivation of a model for one engine, format and deployment.

    kvmath --config qwen3.6-27b --kv-format fp8_e5m2 --tp 2 --max-ctx 262144 --max-num-seqs 2
    kvmath --config path/to/config.json --engine llama.cpp --kv-format q8_0 --json

Paste your launch flags: each engine's own flag names are accepted, and the output adds the figures
that engine logs at start-up for them:

    kvmath --config qwen3.6-27b --engine vllm --max-model-len 262144 --max-num-seqs 2 \
        --tensor-parallel-size 2 --kv-cache-dtype fp8_e5m2 --kv-cache-memory-bytes 11.10GiB
    kvmath --config gemma-4-26b-a4b --engine llama.cpp -c 262144 -np 1 -ctk q8_0 -ctv q8_0 -fa on

Exit status: 0 on success, 2 on bad input (one line on stderr, no traceback), 3 on an internal error (one
line asking for a report; ``--debug`` prints the traceback); kvmath.clitools has the codes of every command.
Imports only the standard library and kvmath's core (no pandas, no altair).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .clitools import EXIT_HELP, check_arg_count, drop_private, refuse_repeats
from .errors import KvMathError
from .validate import one_line


class _Parser(argparse.ArgumentParser):
    def _print_message(self, message, file=None):  # a failed write of --help is an error (clitools)
        from kvmath.clitools import print_message

        print_message(message, file)

    def error(self, message):  # one line, exit 2, like every other bad input (a 5,000-digit value is cut)
        self.exit(2, f"kvmath: error: {one_line(message)} (see kvmath --help)\n")



def _tokens(text: str) -> int:
    """``--max-ctx`` / ``--max-model-len``: an integer, or vLLM's human-readable form (``human_readable_int``,
    vllm/engine/arg_utils.py: ``32k`` = 32,000, ``32K`` = 32,768)."""
    from .validate import engine_int

    try:  # vLLM's human_readable_int, a plain integer's range checked with the others (kvmath.validate)
        return engine_int(text, "--max-ctx", "vllm_human")
    except KvMathError as e:
        raise argparse.ArgumentTypeError(str(e)) from None

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
        if g.kind == "padding":
            lines.append(f"      {_fmt(g.bytes)} (empty group slots take their page in every block)")
            continue
        if g.kind == "none":
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
    ] + ([("vLLM padding layers", _fmt(d.padding_bytes))] if d.padding_bytes else []) + (
        [(f"cross-attention KV (fixed, {dep.max_num_seqs} seq)", _fmt(d.cross_bytes))] if d.cross_bytes else []) + [
        ("total cache", _fmt(d.total_bytes)),
    ]
    width = max(len(label) for label, _ in totals)
    lines += ["", "Totals per card:"] + [f"  {label:<{width}}  {value}" for label, value in totals]
    lines += [f"  note: {n}" for n in d.notes]
    return "\n".join(lines)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, list[str]]]:
    """The parser, and for each engine the ``dest`` names of its own flags (each engine adds its own)."""
    from .engines import ENGINES

    p = _Parser(
        prog="kvmath",
        description="Exact KV-cache and recurrent-state bytes per card, derived from a model's config.json.",
        epilog="Units: B = bytes; MiB/GiB are binary (2^20, 2^30), GB is decimal (1e9). "
               "Figures are per card (tensor-parallel rank). A flag of another engine than --engine is refused. "
               + EXIT_HELP.replace("0 boots (or answered), 1 does not boot, ", "0 answered, "),
    )
    p.add_argument("--config", "--model", dest="config", required=True, metavar="PATH_OR_MODEL_ID",
                   help="a config.json path, a model folder, a .gguf file or a known model id (qwen3.6-27b, "
                        "gemma-4-31b, ... or their HF repo names)")
    p.add_argument("--engine", default="vllm", help=f"{', '.join(ENGINES)} (default vllm)")
    p.add_argument("--kv-format", "--kv-cache-dtype", dest="kv_format", default=None,
                   help="cache format: vLLM kv_cache_dtype (default: the model dtype), llama.cpp type for K and V, "
                        "or the transformers dtype")
    p.add_argument("--tp", "--tensor-parallel-size", dest="tp", type=int, default=1,
                   help="tensor_parallel_size (vLLM; llama.cpp and transformers: 1)")
    p.add_argument("--max-ctx", "--max-model-len", dest="max_ctx", type=_tokens, default=None,
                   help="tokens per sequence, as vLLM reads it (32768, 32k = 32,000, 32K = 32,768; default: "
                        "max_position_embeddings)")
    p.add_argument("--max-num-seqs", "--sequences", dest="max_num_seqs", type=int, default=1,
                   help="concurrent sequences (default 1)")
    p.add_argument("--json", action="store_true", help="print the derivation as JSON (all figures in bytes)")
    p.add_argument("--debug", action="store_true", help="print the traceback of an internal error (exit 3)")
    p.add_argument("--offline", action="store_true",
                   help="a Hub id is answered from the HF cache only, as with HF_HUB_OFFLINE=1")
    owned = {}
    for eng in ENGINES.values():
        owned[eng.name] = eng.add_cli_flags(p.add_argument_group(eng.cli_title or eng.name))
    refuse_repeats(p)  # --tp 2 --tp 4: refused, not the last one silently
    return p, owned


def _engine_block(d, extra: dict):
    """The engine's own start-up figures, from the same allocation ``d`` sums: (text lines, JSON)."""
    from .engines import get_engine

    report = getattr(get_engine(d.engine), "cache_report", None)  # an engine that writes its own block
    if report is not None:
        return report(d)
    if d.engine == "vllm" and "kv_cache_memory_bytes" in extra:
        from .engines.vllm.alloc import plan as vllm_plan

        plan = vllm_plan(d.arch, extra["kv_cache_memory_bytes"], d.settings)
        blocks = (f"{plan.num_blocks:,} blocks" if plan.boots else
                  f"room for {plan.available_kv_bytes // plan.bytes_per_block:,} blocks" if plan.bytes_per_block
                  else "no blocks")
        head = (f"vLLM {plan.vllm_version} block plan for {plan.available_gib} GiB of KV memory per card: "
                f"{blocks} of {plan.block_size} tokens, {plan.group_size} layers per group, "
                f"page {plan.page_size_bytes:,} B")
        verdict = "boots" if plan.boots else "refused at start-up"
        seqs = d.settings.max_num_seqs
        if plan.boots and not plan.fits_max_num_seqs:
            verdict += (f"; {plan.max_concurrency:.2f} of the {seqs} max_num_seqs requests fit at full length at "
                        "once, the others wait for blocks")
        lines = ["", head, f"  outcome: {verdict}"] + [f"  log: {line}" for line in plan.log_lines]
        lines += [f"  note: {n}" for n in plan.notes]
        return lines, {"vllm_plan": plan.to_dict()}
    from .engines import get_engine

    return get_engine(d.engine).cli_block(d, extra)


ALIASED_DESTS = (("tp", "tp_size"), ("max_ctx", "context_length"),
                 ("max_num_seqs", "max_running_requests"))
"""kvmath's common flags and an engine's own name for the same setting (SGLang ``--tp-size``,
``--context-length``, ``--max-running-requests``): both given with different values are refused
(the engine's one would win silently)."""


def _flag_names(parser) -> dict[str, str]:
    """dest -> the flag spellings shown in errors (``-c/--ctx-size``)."""
    out: dict[str, str] = {}
    for action in parser._actions:
        if action.option_strings:
            out.setdefault(action.dest, "/".join(action.option_strings))
    return out


def foreign_flag(given: dict, owned: dict[str, list[str]], engine: str, names: dict[str, str]) -> str | None:
    """The first given flag that belongs only to another engine, as a one-line error, or None."""
    from .engines import ENGINES

    for other, dests in owned.items():
        if other == engine:
            continue
        for dest in dests:
            if dest in given and dest not in owned.get(engine, ()):
                flag = names.get(dest, "--" + dest.replace("_", "-"))
                return (f"{flag} is a {ENGINES[other].label} flag; add --engine {other} "
                        f"(this run is --engine {engine})")
    return None


def run(argv=None) -> int:
    from .engines import get_engine

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        check_arg_count("kvmath", argv)
    except KvMathError as e:
        print(f"kvmath: error: {one_line(e)}", file=sys.stderr)
        return 2
    parser, owned = build_parser()
    args = parser.parse_args(argv)
    seen = dict(getattr(args, "_kvmath_seen", {}))
    drop_private(args)
    for a, b in ALIASED_DESTS:  # --tp 1 --tp-size 2: two names of one engine setting, given different values
        if a in seen and b in seen and seen[a][1] != seen[b][1]:
            print(f"kvmath: error: {seen[a][0]} and {seen[b][0]} name one setting and are given different values "
                  f"({seen[a][1]} and {seen[b][1]}); give it once", file=sys.stderr)
            return 2
    if args.offline:  # kvmath.hub reads HF_HUB_OFFLINE at call time
        os.environ["HF_HUB_OFFLINE"] = "1"
    given_all = vars(args)
    try:
        eng = get_engine(args.engine)
        problem = foreign_flag(given_all, owned, eng.name, _flag_names(parser))
        if problem:
            raise KvMathError(problem)
        given = {k: v for k, v in given_all.items() if k in owned[eng.name]}
        for name, value in (("kv-format", args.kv_format), ("cache-type-k", given.get("cache_type_k")),
                            ("cache-type-v", given.get("cache_type_v"))):
            if value is not None and not str(value).strip():
                raise KvMathError(f"--{name} is empty; name a cache format")
        extra = {k: given[k] for k in ("kv_cache_memory_bytes",) if k in given}
        settings = eng.settings_from_cli(given)
        settings.update(eng.env_settings(os.environ))  # the command reads the environment, as the engine's launcher
        max_ctx, seqs = args.max_ctx, args.max_num_seqs
        if "n_parallel" in settings:
            if args.max_num_seqs != 1:
                raise KvMathError("give either -np/--parallel or --max-num-seqs, not both")
            seqs = settings.pop("n_parallel")
        cache_k, cache_v = settings.pop("cache_type_k", None), settings.pop("cache_type_v", None)
        from .derive import derive

        if eng.name == "llama.cpp" and str(args.config).endswith(".gguf") and os.path.isfile(args.config):
            # the blocks llama.cpp loads, checked as the front door's verdict checks them (a header with no tensor
            # of a declared block, or none at all, does not load: "missing tensor 'blk.0.*'")
            from .model.gguf import check_blocks, read_gguf, read_header

            check_blocks(read_gguf(args.config), [t.name for t in read_header(args.config).tensors])
        d = derive(args.config, engine=eng, kv_format=args.kv_format, cache_type_k=cache_k, cache_type_v=cache_v,
                   tp=args.tp, max_ctx=max_ctx, max_num_seqs=seqs, **settings)
        block = _engine_block(d, extra)
    except KvMathError as e:
        print(f"kvmath: error: {one_line(e)}", file=sys.stderr)
        return 2
    if args.json:
        out = d.to_dict()
        if block:
            out.update(block[1])
        print(json.dumps(out, indent=1))
    else:
        print(render_text(d) + ("\n" + "\n".join(block[0]) if block else ""))
    # exit 1 when the engine's own plan refuses the start-up (as kvmath-fit does), the answer printed first
    plan = block[1].get("vllm_plan") if block else None
    return 1 if isinstance(plan, dict) and plan.get("boots") is False else 0


def main(argv=None) -> int:
    """Entry point: ``run`` with a closed pipe answered quietly (exit 0) and a full disk or a closed
    stdout in one line (exit 2); bad input is one line and exit 2 (``run``); exit 1 when the engine's plan
    refuses the start-up (``--kv-cache-memory-bytes`` too small for one request)."""
    from .clitools import guarded

    return guarded("kvmath", run, argv)


if __name__ == "__main__":
    sys.exit(main())
