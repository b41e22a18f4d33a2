"""SGLang's launch line (``python -m sglang.launch_server ...`` / ``sglang serve ...``, command words removed)
into a :class:`~kvmath.engines.base.Launch`.

Every flag of srt/server_args.py that can change memory is modelled, refused with the reason, or, when it
cannot change memory, ignored with a note; a flag of another engine is refused naming the engine.
"""

from __future__ import annotations

from ...errors import KvMathError
from ...validate import _short
from ..base import Launch
from .releases import TABLE
from .settings import check_fraction

# flag -> (settings keyword, kind): kind "int", "float", "str", "bool" (a switch), "list_max" (ints, the max)
MODELLED = {
    "--tp-size": ("tp_size", "int"), "--tensor-parallel-size": ("tp_size", "int"),
    "--data-parallel-size": ("dp_size", "int"),
    "--dp-size": ("dp_size", "int"),
    "--enable-dp-attention": ("enable_dp_attention", "bool"),
    "--context-length": ("context_length", "int"),
    "--max-running-requests": ("max_running_requests", "int"),
    "--kv-cache-dtype": ("kv_cache_dtype", "str"),
    "--page-size": ("page_size", "int"),
    "--mem-fraction-static": ("mem_fraction_static", "float"),
    "--max-total-tokens": ("max_total_tokens", "int"),
    "--chunked-prefill-size": ("chunked_prefill_size", "int"),
    "--max-prefill-tokens": ("max_prefill_tokens", "int"),
    "--cuda-graph-max-bs": ("cuda_graph_max_bs", "int"),
    "--cuda-graph-bs": ("cuda_graph_max_bs", "list_max"),
    "--disable-cuda-graph": ("disable_cuda_graph", "bool"),
    "--max-mamba-cache-size": ("max_mamba_cache_size", "int"),
    "--mamba-full-memory-ratio": ("mamba_full_memory_ratio", "float"),
    "--mamba-ssm-dtype": ("mamba_ssm_dtype", "str"),
    "--disable-radix-cache": ("disable_radix_cache", "bool"),
    "--swa-full-tokens-ratio": ("swa_full_tokens_ratio", "float"),
    "--disable-hybrid-swa-memory": ("disable_hybrid_swa_memory", "bool"),
    "--attention-backend": ("attention_backend", "str"),
    "--prefill-attention-backend": ("attention_backend", "str"),
    "--decode-attention-backend": ("attention_backend", "str"),
    "--sglang-version": ("sglang_version", "str"),
}
MODEL_FLAGS = ("--model-path", "--model")
POSITIVE = ("context_length", "max_running_requests", "page_size", "max_total_tokens", "max_prefill_tokens",
            "cuda_graph_max_bs", "max_mamba_cache_size", "dp_size")
"""Settings whose 0 or negative value SGLang cannot run with (kvmath refuses them; ``chunked_prefill_size`` -1 is
SGLang's own 'no chunking' and stays allowed)."""
GONE_0523 = {
    "--cuda-graph-max-bs": "0.5.23's fields are --cuda-graph-max-bs-decode / --cuda-graph-max-bs-prefill "
                           "(arg_groups/fields/exec_.py l.629-634), so its argparse rejects this abbreviation as "
                           "ambiguous; kvmath has not modelled the per-phase flags",
    "--cuda-graph-bs": "0.5.23's fields are --cuda-graph-bs-decode / --cuda-graph-bs-prefill "
                       "(arg_groups/fields/exec_.py l.640-647), so its argparse rejects this abbreviation as "
                       "ambiguous; kvmath has not modelled the per-phase flags",
}
"""0.5.9 flags 0.5.23 no longer has that a 0.5.23 line would still take as an abbreviation, and why it refuses them."""

IGNORED_VALUE = ("--host", "--port", "--served-model-name", "--tokenizer-path", "--tokenizer-mode", "--log-level",
                 "--log-level-http", "--api-key", "--random-seed", "--chat-template", "--reasoning-parser",
                 "--tool-call-parser", "--schedule-policy", "--stream-interval", "--revision", "--download-dir",
                 "--watchdog-timeout", "--decode-log-interval", "--grammar-backend", "--sampling-backend",
                 "--mm-attention-backend", "--dist-init-addr", "--nnodes", "--node-rank", "--load-format",
                 "--file-storage-path", "--uvicorn-access-log-exclude-prefixes", "--schedule-conservativeness",
                 "--max-queued-requests", "--dist-timeout", "--base-gpu-id", "--gpu-id-step")
IGNORED_SWITCH = ("--trust-remote-code", "--enable-p2p-check", "--enable-metrics", "--skip-server-warmup", "--disable-overlap-schedule",
                  "--enable-mixed-chunk", "--skip-tokenizer-init", "--enable-cache-report", "--log-requests",
                  "--show-time-cost", "--disable-custom-all-reduce", "--enable-torch-compile", "--disable-cuda-graph-padding")
REFUSED = {
    "--cpu-offload-gb": "moves weights to the host (memory kvmath does not model for SGLang)",
    "--enable-hierarchical-cache": "adds a host KV tier and changes the SWA ratio (not modelled)",
    "--quantization": "re-quantizes the weights at load (the checkpoint's own format is what kvmath prices)",
    "--enable-memory-saver": "releases and re-takes memory through torch_memory_saver (not modelled)",
    "--enable-unified-memory": "0.5.23's unified KV pools are not modelled",
    "--speculative-algorithm": "draft models (EAGLE / NextN / MTP) add pools kvmath has not modelled for SGLang",
    "--speculative-draft-model-path": "draft models add pools kvmath has not modelled for SGLang",
    "--speculative-num-steps": "draft models add pools kvmath has not modelled for SGLang",
    "--speculative-eagle-topk": "draft models add pools kvmath has not modelled for SGLang",
    "--speculative-num-draft-tokens": "draft models add pools kvmath has not modelled for SGLang",
    "--pp-size": "pipeline parallelism splits the layers across ranks (not modelled)",
    "--enable-piecewise-cuda-graph": "its capture list changes the default fraction (not modelled)",
    "--enable-double-sparsity": "DoubleSparseTokenToKVPool adds label buffers (not modelled)",
    "--enable-lora": "LoRA adapter memory is not modelled",
    "--lora-paths": "LoRA adapter memory is not modelled",
    "--ep-size": "expert parallelism changes the weights per rank (not modelled)",
    "--moe-a2a-backend": "DeepEP buffers change the reserve (not modelled)",
    "--disaggregation-mode": "prefill / decode disaggregation changes the pools and reserves (not modelled)",
    "--dtype": "a dtype other than the checkpoint's changes the weights and the pool (give the model's own)",
    "--json-model-override-args": "overridden config fields are not read by kvmath",
    "--kv-cache-memory-bytes": "is kvmath's cache-mode flag (kvmath --engine sglang), not an SGLang flag",
}
OTHER_ENGINES = {
    "vLLM": ("--max-model-len", "--gpu-memory-utilization", "--max-num-seqs",
             "--block-size", "--max-num-batched-tokens", "--enforce-eager", "--enable-prefix-caching",
             "--num-speculative-tokens", "--mamba-cache-dtype", "--mamba-ssm-cache-dtype", "--vllm-version",
             "--pipeline-parallel-size", "--swap-space"),
    "llama.cpp": ("-c", "--ctx-size", "-ngl", "--n-gpu-layers", "-np", "--parallel", "-ctk", "-ctv",
                  "--cache-type-k", "--cache-type-v", "-fa", "--flash-attn", "-m", "-ub", "-b", "--n-cpu-moe",
                  "--ubatch-size", "--batch-size", "-ts", "--tensor-split"),
}
_FOREIGN = {flag: eng for eng, flags in OTHER_ENGINES.items() for flag in flags}


def _value(kind: str, flag: str, text: str):
    try:
        if kind == "int":  # server_args.py type=int: Python's int() (kvmath.validate.engine_int)
            from ...validate import engine_int

            return engine_int(text, flag, "python")
        if kind == "float":
            return check_fraction(text) if flag == "--mem-fraction-static" else float(text)
        if kind == "list_max":
            return max(int(x) for x in text.replace(",", " ").split())
    except KvMathError as e:
        if kind == "int" and "takes an integer" in str(e):
            raise KvMathError(f"{flag} needs an integer, got {text[:40]!r}") from None
        raise
    except (TypeError, ValueError):
        raise KvMathError(f"{flag} needs a{'n integer' if kind != 'float' else ' number'}, got {text[:40]!r}") from None
    return text


def release_flags(release: str) -> tuple[str, ...]:
    """The option strings of SGLang ``release``'s launch_server parser (``data/sglang-flags.json``, read in each
    release's wheel: server_args.py's ``add_argument`` calls, and for 0.5.23 its dataclass fields too, see the
    file's ``source``); a release between two read ones takes the older one's."""
    from ... import facts

    table = facts.read_json("sglang-flags.json")["releases"]
    names = sorted(table, key=lambda v: TABLE.by_name[v].key)
    usable = [v for v in names if TABLE.by_name[v].key <= TABLE.by_name[release].key]
    return tuple(table[usable[-1]])


def canonical(flag: str, known: tuple[str, ...], release: str) -> str:
    """``flag`` as SGLang's argparse resolves it: itself, or the one option it abbreviates (``--tp`` ->
    ``--tp-size``; argparse ``allow_abbrev``). KvMathError for an ambiguous abbreviation."""
    if flag in known or flag in MODELLED or flag in MODEL_FLAGS or flag == "--sglang-version":
        return flag
    hits = [k for k in known if k.startswith(flag)] if flag.startswith("--") and len(flag) > 3 else []
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise KvMathError(f"{flag} is ambiguous for SGLang {release} (could be {', '.join(hits[:6])})")
    return flag


def parse(argv, env) -> Launch:
    """The launch line as SGLang's ``ServerArgs`` would read it (see the module docstring)."""
    argv = list(argv)
    version = None
    for j, a in enumerate(argv):
        if a.startswith("--sglang-version"):
            version = a.partition("=")[2] or (argv[j + 1] if j + 1 < len(argv) else None)
    chosen0 = TABLE.choose(version)
    rel_name = chosen0.release.name
    known = release_flags(rel_name)
    settings: dict = {}
    given: dict = {}  # settings key -> (flag, value), for a setting given twice (under one name or two)
    notes: list[str] = []
    model = None
    i = 0
    while i < len(argv):
        a = argv[i]
        flag, eq, inline = a.partition("=")
        if not flag.startswith("-"):
            if model is None:
                model = a
                i += 1
                continue
            raise KvMathError(f"unexpected argument {a[:60]!r} on an SGLang launch line (the model goes after "
                              "--model-path)")
        flag_u = canonical(flag.replace("_", "-") if flag.startswith("--") else flag, known, rel_name)

        def take():
            nonlocal i
            if eq:
                return inline
            if i + 1 >= len(argv):
                raise KvMathError(f"{flag} needs a value")
            i += 1
            return argv[i]

        if flag_u in MODEL_FLAGS:
            value = take()
            if model is not None and model != value:
                raise KvMathError(f"the model is given twice ({_short(model)} and {_short(value)}); give it once")
            model = value
        elif flag_u in GONE_0523 and TABLE.by_name[rel_name].key >= TABLE.by_name["0.5.23"].key:
            raise KvMathError(f"{flag_u} is not an SGLang {rel_name} flag: {GONE_0523[flag_u]}")
        elif flag_u in MODELLED:
            key, kind = MODELLED[flag_u]
            value = True if kind == "bool" else _value(kind, flag_u, take())
            prev = given.get(key)  # by setting: --tp-size and --tensor-parallel-size are one dest in argparse
            if prev is not None and prev[1] != value:  # argparse would keep the last one silently
                what = (f"{flag_u} is given twice" if prev[0] == flag_u else f"{prev[0]} and {flag_u} (one setting) "
                        "are given")
                raise KvMathError(f"{what} with different values ({prev[1]} and {value}); give it once")
            if key in POSITIVE and value <= 0:
                raise KvMathError(f"{flag_u} must be a positive integer, got {value}")
            given[key] = (flag_u, value)
            settings[key] = value
            if flag_u == "--disable-cuda-graph":
                notes.append("--disable-cuda-graph: no CUDA graphs are captured (their memory stays free)")
        elif flag_u in IGNORED_VALUE:
            value = take()
            if (flag_u == "--load-format" and value == "expert_pack"
                    and TABLE.by_name[rel_name].key >= TABLE.by_name["0.5.23"].key):
                raise KvMathError("--load-format expert_pack turns the CUDA graphs off and changes the weights "
                                  "(SGLang 0.5.23 arg_groups/expert_pack_hook.py l.32-205), which kvmath has not "
                                  "modelled")
            notes.append(f"{flag_u} ignored: it does not change memory")
        elif flag_u in IGNORED_SWITCH:
            notes.append(f"{flag_u} ignored: it does not change the pools")
        elif flag_u in REFUSED:
            if flag_u not in known and flag_u != "--kv-cache-memory-bytes":
                raise KvMathError(f"{flag_u} is not an SGLang {rel_name} flag (server_args.py); flags kvmath models: "
                                  f"{', '.join(sorted(MODELLED))}")
            raise KvMathError(f"{flag_u} {REFUSED[flag_u]}")
        elif flag_u in _FOREIGN or flag in _FOREIGN:
            eng = _FOREIGN.get(flag_u) or _FOREIGN[flag]
            raise KvMathError(f"{flag} is a {eng} flag, not an SGLang one (SGLang: "
                              + ("--tp-size" if flag_u == "--tensor-parallel-size" else
                                 "--context-length" if flag_u in ("--max-model-len", "-c", "--ctx-size") else
                                 "--mem-fraction-static" if flag_u == "--gpu-memory-utilization" else
                                 "--max-running-requests" if flag_u in ("--max-num-seqs", "-np", "--parallel") else
                                 "python -m sglang.launch_server --help") + ")")
        elif flag_u in known:
            raise KvMathError(f"{flag_u} is an SGLang {rel_name} flag kvmath has not classified (it may change "
                              f"memory), so the launch is not priced; flags it models: {', '.join(sorted(MODELLED))}")
        else:
            raise KvMathError(f"{flag[:60]} is not an SGLang {rel_name} flag (server_args.py); flags kvmath models: "
                              f"{', '.join(sorted(MODELLED))}")
        i += 1
    if model is None:
        raise KvMathError("an SGLang launch line needs the model: --model-path MODEL")
    if settings.get("tp_size", 1) < 1:
        raise KvMathError("--tp-size must be positive")
    TABLE.choose(settings.get("sglang_version"))
    if str(env.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "")).lower() in ("1", "true"):
        settings["allow_longer_context"] = True
    if str(env.get("SGLANG_ENABLE_POST_CAPTURE_KV_SIZING", "")).lower() in ("1", "true"):
        raise KvMathError("SGLANG_ENABLE_POST_CAPTURE_KV_SIZING=1 resizes the KV pool after the CUDA graphs are "
                          "captured (0.5.23), which kvmath has not modelled")
    chosen = TABLE.choose(settings.get("sglang_version"))
    if chosen.note:
        notes.append(chosen.note)
    return Launch("sglang", model, settings, release=chosen.release.name, notes=tuple(notes), argv=tuple(argv))
