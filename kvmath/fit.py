"""``kvmath-fit``: the one front door. Will this launch boot, and how much context do I get?

Give it a launch line as you would paste it, the engine's command words first::

    kvmath-fit vllm serve Qwen/Qwen3.6-27B --tensor-parallel-size 2 --card rtx3090
    kvmath-fit llama-server -m model.gguf -c 32768 -ngl 99 --card rtx4090
    kvmath-fit python -m sglang.launch_server --model-path Qwen/Qwen3-8B --card h100

The line goes to the engine whose ``programs`` it starts with (``kvmath.engines.engine_for_launch``); the
engine reads its own flags (``Engine.parse_launch``), prices the launch (``Engine.verdict``) and the solvers of
:mod:`kvmath.solve` answer the largest context and the most sequences. Without command words, the flags are the
public calculator's (``--model``, ``--compose``, ``--kv-format`` ...) and the answer is vLLM's.

The front door's own options, anywhere on the line: ``--card NAME`` (a card of ``kvmath/data/cards.json``),
``--device-memory SIZE`` (the memory of any other device, ``24GiB``), ``--json`` (``Verdict.to_json()`` plus
``answers``; a ``vllm serve`` line answers with vLLM's budget record), ``--no-solve`` (the verdict only), and
``kvmath-fit --json-schema`` (every JSON field, documented: ``verdict``, ``engines``, ``vllm_serve``).

Exit status: 0 boots, 1 does not boot, 2 bad input, 3 an internal error (one line asking for a report;
``--debug`` prints the traceback; kvmath.clitools).
"""

from __future__ import annotations

import json
import os
import sys

from .errors import KvMathError
from .validate import _short

FRONT_DOOR_FLAGS = ("--card", "--device-memory", "--json", "--no-solve")


def _take(argv: list[str]) -> tuple[list[str], dict]:
    """Split the front door's own options off a launch line (``--card X`` and ``--card=X`` forms)."""
    rest, opts = [], {"json": False, "solve": True, "card": None, "device_memory": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, value = a.partition("=")
        if name in ("--card", "--device-memory"):
            if not eq:
                if i + 1 >= len(argv):
                    raise KvMathError(f"{name} needs a value")
                value, i = argv[i + 1], i + 1
            key = name[2:].replace("-", "_")
            if opts[key] is not None:
                raise KvMathError(f"{name} given twice")
            opts[key] = value
        elif a == "--json":
            opts["json"] = True
        elif a == "--no-solve":
            opts["solve"] = False
        else:
            rest.append(a)
        i += 1
    return rest, opts


def _as_pasted(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """A pasted line as the shell would run it: its leading ``NAME=value`` words are the command's environment
    (``CUDA_VISIBLE_DEVICES=0,1 vllm serve ...``, ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve ...``) and a program
    given by its path (``./llama-server``, ``/opt/venv/bin/vllm``) is that program. Returns (the line from the
    program's name on, the environment words); the line unchanged when it starts with no engine's program."""
    import re

    from .engines import REGISTRY

    words = {w for _, _, first in REGISTRY.values() for w in first}
    i = 0
    while i < len(argv) - 1 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[i]):
        i += 1
    rest = argv[i:]
    if rest and "/" in rest[0] and rest[0].rsplit("/", 1)[1] in words:
        rest = [rest[0].rsplit("/", 1)[1], *rest[1:]]
    if not rest or rest[0] not in words:
        later = next((j for j, a in enumerate(rest[1:], i + 1) if (a.rsplit("/", 1)[-1]) in words), None)
        if later is not None and not rest[0].startswith("-"):  # a word, not NAME=value, before the program
            raise KvMathError(f"{_short(rest[0], 40)} (before {argv[later]}) is not a NAME=value environment word: "
                              "a pasted line is its environment words, then the program and its flags")
        return argv, {}
    env = dict(a.partition("=")[::2] for a in argv[:i])
    _sort_environment(env, rest[0])
    return rest, env


MODELLED_ENV = ("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_PP_LAYER_PARTITION")
"""Environment words of a pasted line kvmath reads (vllm/envs.py), besides llama.cpp's ``LLAMA_ARG_*``
(kvmath.engines.llamacpp.launch)."""
HARMLESS_ENV = frozenset([
    # where models and caches are read, sign-in, offline switches (huggingface_hub constants.py, transformers)
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_HUB_ENABLE_HF_TRANSFER",
    "HF_XET_HIGH_PERFORMANCE", "HF_ENDPOINT", "TRANSFORMERS_OFFLINE", "TRANSFORMERS_CACHE", "LLAMA_CACHE",
    "VLLM_CACHE_ROOT", "VLLM_CONFIG_ROOT", "MODELSCOPE_CACHE", "VLLM_USE_MODELSCOPE",
    # logs, telemetry, server address and keys
    "VLLM_LOGGING_LEVEL", "VLLM_CONFIGURE_LOGGING", "VLLM_LOG_STATS_INTERVAL", "VLLM_NO_USAGE_STATS",
    "VLLM_DO_NOT_TRACK", "DO_NOT_TRACK", "VLLM_API_KEY", "VLLM_HOST_IP", "VLLM_PORT", "VLLM_RPC_TIMEOUT",
    "VLLM_ENGINE_ITERATION_TIMEOUT_S", "NCCL_DEBUG", "TORCH_CPP_LOG_LEVEL", "PYTHONUNBUFFERED", "PYTHONWARNINGS",
    "TOKENIZERS_PARALLELISM", "OMP_NUM_THREADS", "TZ", "LANG", "LC_ALL", "TERM",
    # which GPUs (by number) a tensor / pipeline parallel vLLM or SGLang run uses: the first tp x pp of them
    # (the cards are the ones --card names); llama.cpp splits over every visible device, see _MEMORY_ENV
    "CUDA_DEVICE_ORDER", "VLLM_WORKER_MULTIPROC_METHOD", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE",
])
_MEMORY_ENV = {
    "PYTORCH_CUDA_ALLOC_CONF": "the PyTorch allocator's settings (expandable_segments, ...) change what a boot "
                               "reserves; kvmath models the default allocator",
    "PYTORCH_ALLOC_CONF": "the PyTorch allocator's settings change what a boot reserves; kvmath models the default",
    "VLLM_ATTENTION_BACKEND": "give the backend as --attention-backend (the flag vLLM 0.24 reads)",
    "VLLM_USE_V1": "vLLM 0.20+ runs the V1 engine only; the V0 engine is not modelled",
    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "it moves the CUDA graph estimate in or out of the KV budget; kvmath "
                                                "models each release's default (--vllm-version)",
    "GGML_CUDA_ENABLE_UNIFIED_MEMORY": "llama.cpp then allocates CUDA unified memory, which spills to host RAM",
}


def _sort_environment(env: dict, program: str) -> None:
    """The environment words of a pasted line, sorted: the ones kvmath reads (:data:`MODELLED_ENV`, ``LLAMA_ARG_*``)
    are read by the engines; :data:`HARMLESS_ENV` (paths, sign-in, logs, ports) change no memory and are ignored with
    a note on stderr; ``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` too for vLLM and SGLang (their ranks use the
    first tp x pp devices), refused for llama.cpp (it splits the model over every visible device); any other word is
    refused naming it: its effect on memory is not modelled (a known one says how, :data:`_MEMORY_ENV`). KvMathError."""
    ignored = []
    for name in env:
        if name in MODELLED_ENV or name.startswith("LLAMA_ARG_"):
            continue
        if name in HARMLESS_ENV or (name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
                                    and not program.startswith("llama")):
            ignored.append(name)
            continue
        if name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
            raise KvMathError(f"{name} before {program}: llama.cpp splits the model over every device it sees; give the "
                              "devices with --device / --tensor-split / --split-mode instead")
        why = _MEMORY_ENV.get(name, "kvmath does not know what it changes, so the answer could be wrong")
        raise KvMathError(f"environment word {name}={_short(env[name], 30)} before {program} is not modelled ({why}); "
                          f"drop it, or ask kvmath without it")
    if ignored:
        print(f"note: {', '.join(ignored)} ignored (no effect on the memory of the run)", file=sys.stderr)


def json_schema() -> dict:
    """Every key the front door's JSON may hold, documented: the common record and each engine's own."""
    from .engines import ENGINES
    from .engines.base import VERDICT_FIELDS
    from .engines.vllm.budget import JSON_FIELDS, PARALLEL_JSON_FIELDS

    return {"verdict": dict(VERDICT_FIELDS),
            "engines": {name: dict(e.json_fields) for name, e in ENGINES.items() if e.json_fields},
            # a vllm serve line answers with vLLM's budget record (kvmath.engines.vllm.budget.Budget), not the verdict
            "vllm_serve": dict(JSON_FIELDS), "vllm_serve_parallel": dict(PARALLEL_JSON_FIELDS),
            "exit_status": {"0": "boots", "1": "does not boot", "2": "bad input",
                            "3": "internal error (please report it; --debug prints the traceback)"}}


def run(argv=None) -> int:
    """The command; ``main`` runs it guarded (kvmath.clitools)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--json-schema"]:
        print(json.dumps(json_schema(), indent=1))
        return 0
    argv, env = _as_pasted(argv)
    if env:  # the line's own environment, for this answer only (the engines read os.environ at call time)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            return _run(argv)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return _run(argv)


def _run(argv: list[str]) -> int:
    from .engines import engine_for_launch

    match = engine_for_launch(argv)
    if match is None:  # the public calculator's flags: vLLM's budget
        from .engines.vllm.cli import run as vllm_run

        return vllm_run(argv)
    engine, n = match
    if any(a in ("-h", "--help") for a in argv[n:]) and engine.launch_flags():  # vLLM's parser has its own
        print(engine.launch_help(argv[:n], FRONT_DOOR_FLAGS))
        return 0
    own = engine.front_door(argv[:n], argv[n:])
    if own is not None:
        return own
    try:
        rest, opts = _take(argv[n:])
        launch = engine.launch_for(argv[:n], rest, env=dict(os.environ))
        if opts["card"] is not None or opts["device_memory"] is not None:
            from dataclasses import replace

            from .units import parse_device_memory

            mem = None if opts["device_memory"] is None else parse_device_memory(opts["device_memory"])
            launch = replace(launch, card=opts["card"], device_bytes=mem)
        verdict = engine.verdict(launch)
        from .solve import answers

        ans = answers(engine, launch) if opts["solve"] else {}
    except KvMathError as e:
        print(f"kvmath-fit: error: {e}", file=sys.stderr)
        return 2
    if opts["json"]:
        print(json.dumps({**verdict.to_json(), "answers": ans}, indent=1))
    else:
        print(engine.render(verdict, ans))
    return 0 if verdict.boots else 1


def main(argv=None) -> int:
    """Entry point (``kvmath-fit``): ``run`` guarded against its environment (kvmath.clitools.guarded)."""
    from .clitools import guarded

    return guarded("kvmath-fit", run, argv)


if __name__ == "__main__":
    sys.exit(main())
