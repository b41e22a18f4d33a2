"""A llama.cpp launch line, as pasted, into a :class:`~kvmath.engines.base.Launch`.

``llama-server`` / ``llama-cli`` / ``llama-fit-params`` flags under their own names (``common/arg.cpp``): every
flag that changes memory is modelled, a serving-only flag is ignored with a note, anything else is refused
naming it. Values are checked here (integers bounded, ``-ot`` patterns compiled under a size bound, each
``--spec-type`` value against the build's list), so the verdict only prices what was read.

Defaults are the tool's (common/common.h, tools/server): ``-c 0`` (the training context), ``-b 2048``,
``-ub 512``, ``-ctk/-ctv f16``, ``-fa auto``, ``-ngl auto`` (every layer), ``--fit on`` with a 1024 MiB target;
llama-server's ``-np`` is ``auto``: 4 slots sharing one unified cache (``--kv-unified`` turned on), the other
tools 1 slot.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from ...errors import KvMathError, choices
from ...validate import INT32_MAX, INT32_MIN, _short, stof_float
from .builds import TABLE

MAX_INT = 1 << 40
TOOLS = ("llama-server", "llama-cli", "llama-fit-params")

# flag -> (settings key, kind); kinds: int, str, on (store true), off (store false), list (appended)
_FLAGS: dict[str, tuple[str, str]] = {}


def _flag(names: str, key: str, kind: str) -> None:
    for n in names.split():
        _FLAGS[n] = (key, kind)


_flag("-m --model", "model", "str")
_flag("-hf -hfr --hf-repo", "hf_repo", "str")
_flag("-c --ctx-size", "n_ctx", "int")
_flag("-np --parallel", "n_parallel", "int")
_flag("-b --batch-size", "n_batch", "int")
_flag("-ub --ubatch-size", "n_ubatch", "int")
_flag("-ctk --cache-type-k", "cache_type_k", "str")
_flag("-ctv --cache-type-v", "cache_type_v", "str")
_flag("-fa --flash-attn", "flash_attn", "str")
_flag("-ngl --gpu-layers --n-gpu-layers", "n_gpu_layers", "str")
_flag("-ncmoe --n-cpu-moe", "n_cpu_moe", "int")
_flag("-cmoe --cpu-moe", "cpu_moe", "on")
_flag("-ot --override-tensor", "override_tensor", "list")
_flag("-ts --tensor-split", "tensor_split", "str")
_flag("-sm --split-mode", "split_mode", "str")
_flag("-mg --main-gpu", "main_gpu", "int")
_flag("-dev --device", "devices", "str")
_flag("-kvu --kv-unified", "kv_unified", "on")
_flag("--no-kv-unified", "kv_unified", "off")
_flag("--swa-full", "swa_full", "on")
_flag("-mm --mmproj", "mmproj", "str")
_flag("--no-mmproj-offload", "mmproj_offload", "off")
_flag("--no-mmproj", "no_mmproj", "on")
_flag("--spec-type", "spec_type", "str")
_flag("--spec-draft-n-max --draft-max --draft-n --draft", "spec_draft_n_max", "int")
_flag("-md --model-draft", "model_draft", "str")
_flag("-fit --fit", "fit", "str")
_flag("-fitt --fit-target", "fit_target", "str")
_flag("-fitc --fit-ctx", "fit_ctx", "int")
_flag("--no-mmap", "mmap", "off")
_flag("--mmap", "mmap", "on")
_flag("--mlock", "mlock", "on")
_flag("--llamacpp-build", "build", "str")
# kvmath's own: how to read weights without a GGUF, and the assumptions of the budget
_flag("--quant-mix", "quant_mix", "str")
_flag("--imatrix", "imatrix", "on")
_flag("--weight-bits", "weight_bits", "float")
_flag("--headroom-mib", "headroom_mib", "float")
_flag("--cuda-context-mib", "cuda_context_mib", "float")
_flag("--host-memory", "host_memory", "str")

IGNORED_VALUE = frozenset(
    "--port --host -t --threads -tb --threads-batch --alias -a --api-key --api-key-file --temp --top-k --top-p "
    "--min-p --repeat-penalty --repeat-last-n --presence-penalty --frequency-penalty --seed -s -n --n-predict "
    "--predict --chat-template --chat-template-file --reasoning-format --reasoning-budget --timeout --threads-http "
    "--log-file --log-verbosity -lv --prio --numa --cache-reuse --ctx-checkpoints --swa-checkpoints --cache-ram "
    "-cram --slot-save-path --keep --system-prompt-file --grammar --grammar-file --json-schema --samplers "
    "--sampling-seq --poll --cpu-mask --cpu-range -C -Cr --media-path --path --api-prefix --webui-config "
    "--spec-draft-n-min --draft-min --spec-draft-p-min --draft-p-min --spec-ngram-mod-n-min "
    "--spec-ngram-mod-n-max --spec-ngram-mod-n-match --spec-ngram-simple-size-n --image-min-tokens "
    "--image-max-tokens --tools --models-dir --models-max --ubatch-delay --reasoning --chat-template-kwargs "
    "--host-bandwidth-gbs".split())
"""Serving-only flags with a value: they change sampling, threads, networking or host caches, not device memory."""
IGNORED_BARE = frozenset(
    "--jinja --no-jinja --metrics --slots --no-slots --props --no-webui --webui -cb --cont-batching "
    "--no-cont-batching -v --verbose --log-disable --log-colors --log-prefix --log-timestamps --special -sp "
    "--context-shift --no-context-shift --no-warmup --warmup --no-perf --perf -kvo --kv-offload --direct-io "
    "--no-direct-io -dio --check-tensors --offline --no-cache-prompt --cache-prompt --no-escape --escape -e "
    "--mtp-greedy --no-models-autoload --enable-reasoning --embd-normalize".split())
REFUSED = {
    "-nkvo": "--no-kv-offload keeps the KV cache in system memory; kvmath prices the cache on the devices",
    "--no-kv-offload": "--no-kv-offload keeps the KV cache in system memory; kvmath prices the cache on the devices",
    "--lora": "LoRA adapters add weights kvmath does not read",
    "--lora-scaled": "LoRA adapters add weights kvmath does not read",
    "--control-vector": "control vectors add tensors kvmath does not read",
    "--rpc": "RPC devices are remote; kvmath has no rule for their buffers",
    "--embedding": "embedding mode changes the outputs and pooling the compute buffer is reserved for",
    "--embeddings": "embedding mode changes the outputs and pooling the compute buffer is reserved for",
    "--reranking": "reranking changes the outputs the compute buffer is reserved for",
    "--rerank": "reranking changes the outputs the compute buffer is reserved for",
    "-ctkd": "the draft model's cache types (-ctkd / -ctvd) are not modelled: the draft cache is priced as -ctk / -ctv",
    "--cache-type-k-draft": "the draft model's cache types are not modelled: the draft cache is priced as -ctk / -ctv",
    "-ctvd": "the draft model's cache types are not modelled: the draft cache is priced as -ctk / -ctv",
    "--cache-type-v-draft": "the draft model's cache types are not modelled: the draft cache is priced as -ctk / -ctv",
    "-ngld": "the draft model's offload (-ngld) is not modelled: the draft model is priced on the main GPU",
    "--n-gpu-layers-draft": "the draft model's offload is not modelled: the draft model is priced on the main GPU",
    "--override-kv": "metadata overrides can change the architecture kvmath read from the file",
    "--pooling": "pooling changes the outputs the compute buffer is reserved for",
}
"""Flags that change memory in a way kvmath does not model, with the reason."""

DEFAULTS = {"n_ctx": 0, "n_batch": 2048, "n_ubatch": 512, "cache_type_k": "f16", "cache_type_v": "f16",
            "flash_attn": "auto", "n_gpu_layers": "auto", "n_cpu_moe": 0, "cpu_moe": False, "override_tensor": (),
            "tensor_split": None, "split_mode": "layer", "main_gpu": 0, "devices": None, "swa_full": False,
            "mmproj": None, "mmproj_offload": True, "no_mmproj": False, "spec_type": None, "spec_draft_n_max": None,
            "model_draft": None, "fit": "on", "fit_target": "1024", "fit_ctx": 4096, "mmap": True, "mlock": False,
            "quant_mix": None, "imatrix": False, "weight_bits": None, "headroom_mib": 0.0, "cuda_context_mib": 400.0,
            "host_memory": None, "hf_repo": None}
_OT_MAX = 2000
_RX_REPEAT = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")


def check_override(spec: str) -> tuple[str, str]:
    """One ``-ot PATTERN=BUFFER`` value, its pattern compiled with a bounded check.

    A pattern longer than 2,000 characters, a repeat count above 1,000 (``a{99999999999}`` makes Python's ``re``
    overflow), or one that is not a regular expression is refused; the buffer must be named. Raises KvMathError."""
    if not isinstance(spec, str) or "=" not in spec:
        raise KvMathError(f"-ot takes PATTERN=BUFFER (e.g. 'exps=CPU'), got {_short(spec)}")
    pat, buft = spec.rsplit("=", 1)
    if not pat or not buft.strip():
        raise KvMathError(f"-ot takes PATTERN=BUFFER with both parts given, got {_short(spec)}")
    if len(pat) > _OT_MAX:
        raise KvMathError(f"-ot pattern is {len(pat):,} characters long; at most {_OT_MAX:,}")
    for m in _RX_REPEAT.finditer(pat):
        if any(g and int(g[:8]) > 1000 for g in m.groups()) or any(g and len(g) > 4 for g in m.groups()):
            raise KvMathError(f"-ot pattern {_short(pat)}: a repeat count above 1,000 is refused (llama.cpp's "
                              "std::regex would exhaust its stack on it)")
    try:
        re.compile(pat)
    except (re.error, OverflowError, RecursionError) as e:
        raise KvMathError(f"-ot pattern {_short(pat)} is not a regular expression: {e}") from None
    if not _BUFT.fullmatch(buft.strip()):
        raise KvMathError(f"-ot buffer {_short(buft.strip())} is not a llama.cpp buffer type (CPU, CUDA0, CUDA_Host, "
                          "ROCm0, Vulkan0, Metal, SYCL0, ...: llama-server --list-devices names them)")
    return pat, buft.strip()


_BUFT = re.compile(r"(?i:cpu(?:_[a-z0-9]{1,16}){0,2}|(?:cuda|rocm|hip|vulkan|sycl|musa|cann|opencl|metal|mtl|blas)"
                   r"[0-9]{0,2}(?:_host|_split)?)|RPC\[[A-Za-z0-9_.:\-]{1,80}\]")
"""An ``-ot`` buffer: a buffer type's name as ``ggml_backend_buft_name`` gives it (common/arg.cpp looks the value
up among every device's buffer types and throws "unknown buffer type" otherwise): the CPU's (``CPU``,
``CPU_REPACK``), a GPU backend's with its index, its ``_Host`` (pinned) or ``_Split`` type, or an RPC server's."""


OT_MAX_PATTERNS = 256
"""Distinct ``-ot`` patterns a line may give. llama.cpp has no limit, but every tensor is matched against each
pattern in turn (common/arg.cpp, llama-model-loader), and the published recipes use a handful; 4,000 patterns
made the verdict (which places the model once per answer it solves for) run for minutes."""


def check_overrides(specs) -> tuple[tuple[str, str], ...]:
    """Every ``-ot`` value of a line (each may join several ``PATTERN=BUFFER`` by commas), checked with
    :func:`check_override`. A pattern given again is dropped: llama.cpp takes the first pattern a tensor matches
    (llama-model-loader.cpp, the loop over ``tensor_buft_overrides``), so a repeat can never decide a tensor.
    More than :data:`OT_MAX_PATTERNS` distinct patterns are refused. Raises KvMathError."""
    out: dict[str, tuple[str, str]] = {}
    for spec in specs or ():
        for part in str(spec).split(","):
            pat, buft = check_override(part)
            out.setdefault(pat, (pat, buft))
            if len(out) > OT_MAX_PATTERNS:
                raise KvMathError(f"-ot gives more than {OT_MAX_PATTERNS} distinct patterns; join them into fewer "
                                  "regular expressions (blk\\.(1|2|3)\\.ffn_.*=CPU)")
    return tuple(out.values())


def _int(value: str, flag: str, lo: int = 0, hi: int = MAX_INT) -> int:
    from ...validate import engine_int

    n = engine_int(str(value), flag, "stoi")  # std::stoi, as common/arg.cpp reads it (kvmath.validate)
    if not lo <= n <= hi:
        raise KvMathError(f"{flag} must be between {lo:,} and {hi:,}, got {n:,}")
    return n


def _float(value: str, flag: str, lo: float = 0.0, hi: float = 1e6) -> float:
    x = stof_float(value, flag)  # std::stof's grammar: "1_0" is not 10
    if not lo <= x <= hi:  # NaN fails both comparisons
        raise KvMathError(f"{flag} must be a finite number between {lo:g} and {hi:g}, got {_short(value)}")
    return x


def _split(argv: Sequence[str]) -> tuple[dict, list[str]]:
    """The flags of the line by settings key, and the notes for ignored flags. Raises KvMathError."""
    given: dict = {}
    notes: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        if not isinstance(a, str):
            raise KvMathError(f"launch-line words must be strings, got {type(a).__name__}")
        name, eq, inline = a.partition("=") if a.startswith("--") else (a, "", "")
        if name in REFUSED:
            raise KvMathError(f"{name}: {REFUSED[name]}")
        if name in IGNORED_BARE:
            notes.append(f"{name} ignored: it does not change memory")
            i += 1
            continue
        if name in IGNORED_VALUE:
            i += 1 if eq else 2
            notes.append(f"{name} ignored: it does not change device memory")
            continue
        if name not in _FLAGS:
            if not a.startswith("-"):
                raise KvMathError(f"unexpected word {_short(a)} on the llama.cpp line (the model is -m PATH)")
            raise KvMathError(f"unknown llama.cpp flag {_short(name, 40)}; flags kvmath reads: "
                              f"{choices(sorted(k for k in _FLAGS if k.startswith('--')))}")
        key, kind = _FLAGS[name]
        if kind in ("on", "off"):
            if key in given and given[key] != (kind == "on"):  # --mmap --no-mmap: llama.cpp keeps the last
                raise KvMathError(f"{name} contradicts an earlier flag on the line (both turn {key} on and off); "
                                  "give one")
            given[key] = kind == "on"
            i += 1
            continue
        if eq:
            value = inline
        elif i + 1 < len(args):
            value, i = args[i + 1], i + 1
        else:
            raise KvMathError(f"{name} needs a value")
        i += 1
        if kind == "list":
            given.setdefault(key, []).append(value)
        elif key in given:
            again = _value(name, kind, value)
            if again != given[key]:  # the same value twice (-c 8192 --ctx-size 8192) is one setting
                raise KvMathError(f"{name} given twice with different values ({_short(str(given[key]))}, "
                                  f"{_short(str(again))})")
        else:
            given[key] = _value(name, kind, value)
    return given, notes


# --- LLAMA_ARG_* environment variables (common/arg.cpp ``.set_env``) ----------------------------------------------

LLAMA_ENV: dict[str, str] = {
    "AGENT": "-ag", "ALIAS": "-a", "API_KEY_FILE": "--api-key-file", "API_PREFIX": "--api-prefix",
    "BACKEND_SAMPLING": "-bs", "BATCH": "-b", "CACHE_IDLE_SLOTS": "--cache-idle-slots",
    "CACHE_PROMPT": "--cache-prompt", "CACHE_RAM": "-cram", "CACHE_REUSE": "--cache-reuse", "CACHE_TYPE_K": "-ctk",
    "CACHE_TYPE_V": "-ctv", "CHAT_TEMPLATE": "--chat-template", "CHAT_TEMPLATE_FILE": "--chat-template-file",
    "CHAT_TEMPLATE_KWARGS": "--chat-template-kwargs", "CHECKPOINT_MIN_SPACING_NT": "-cms",
    "CONTEXT_SHIFT": "--context-shift", "CONT_BATCHING": "-cb", "CORS_CREDENTIALS": "--cors-credentials",
    "CORS_HEADERS": "--cors-headers", "CORS_METHODS": "--cors-methods", "CORS_ORIGINS": "--cors-origins",
    "CPU_MOE": "-cmoe", "CTX_CHECKPOINTS": "--ctx-checkpoints", "CTX_SIZE": "-c", "DEFRAG_THOLD": "-dt",
    "DEVICE": "-dev", "DOCKER_REPO": "-dr", "DRAFT_MAX": "--draft", "DRAFT_MIN": "--draft-min",
    "EMBEDDINGS": "--embedding", "ENDPOINT_METRICS": "--metrics", "ENDPOINT_PROPS": "--props",
    "ENDPOINT_SLOTS": "--slots", "FIT": "-fit", "FIT_CTX": "-fitc", "FIT_ESTIMATE": "-fitp", "FIT_TARGET": "-fitt",
    "FLASH_ATTN": "-fa", "FREQUENCY_PENALTY": "--frequency-penalty", "GRP_ATTN_N": "-gan", "GRP_ATTN_W": "-gaw",
    "HF_FILE": "-hff", "HF_REPO": "-hf", "HOST": "--host", "IMAGE_MAX_TOKENS": "--image-max-tokens",
    "IMAGE_MIN_TOKENS": "--image-min-tokens", "JINJA": "--jinja", "KV_OFFLOAD": "-kvo", "KV_UNIFIED": "-kvu",
    "KV_UNIFIED_PER_SLOT": "--kv-unified-per-slot", "LAZY_MODE": "-lzm", "LOAD_MODE": "-lm",
    "LOG_COLORS": "--log-colors", "LOG_FILE": "--log-file", "LOG_JSONL": "--log-jsonl", "LOG_PREFIX": "--log-prefix",
    "LOG_TIMESTAMPS": "--log-timestamps", "LOG_VERBOSITY": "-lv", "MAIN_GPU": "-mg",
    "MCP_SERVERS_CONFIG": "--mcp-servers-config", "MCP_SERVERS_JSON": "--mcp-servers-json", "MIN_P": "--min-p",
    "MMPROJ": "-mm", "MMPROJ_AUTO": "--mmproj-auto", "MMPROJ_OFFLOAD": "--mmproj-offload", "MMPROJ_URL": "-mmu",
    "MODEL": "-m", "MODELS_AUTOLOAD": "--models-autoload", "MODELS_DIR": "--models-dir", "MODELS_MAX": "--models-max",
    "MODELS_PRESET": "--models-preset", "MODEL_URL": "-mu", "MTMD_BATCH_MAX_TOKENS": "--mtmd-batch-max-tokens",
    "NO_HOST": "--no-host", "NUMA": "--numa", "N_CPU_FFN": "-ncffn", "N_CPU_MOE": "-ncmoe", "N_GPU_LAYERS": "-ngl",
    "N_GPU_LAYERS_DRAFT": "-ngld", "N_PARALLEL": "-np", "N_PREDICT": "-n", "OFFLINE": "--offline",
    "OVERRIDE_TENSOR": "-ot", "PERF": "--perf", "POOLING": "--pooling", "PORT": "--port",
    "PREFILL_ASSISTANT": "--prefill-assistant", "PRESENCE_PENALTY": "--presence-penalty", "REASONING": "--reasoning",
    "REASONING_EFFORT": "--reasoning-effort", "REASONING_PRESERVE": "--reasoning-preserve", "REPACK": "--repack",
    "REPEAT_PENALTY": "--repeat-penalty", "RERANKING": "--rerank", "REUSE_PORT": "--reuse-port",
    "ROPE_FREQ_BASE": "--rope-freq-base", "ROPE_FREQ_SCALE": "--rope-freq-scale", "ROPE_SCALE": "--rope-scale",
    "ROPE_SCALING_TYPE": "--rope-scaling", "RPC": "--rpc", "SHOW_TIMINGS": "--show-timings",
    "SKIP_CHAT_PARSING": "--skip-chat-parsing", "SPEC_DRAFT_BACKEND_SAMPLING": "--spec-draft-backend-sampling",
    "SPEC_DRAFT_CACHE_TYPE_K": "-ctkd", "SPEC_DRAFT_CACHE_TYPE_V": "-ctvd",
    "SPEC_DRAFT_CPU_MOE": "--spec-draft-cpu-moe", "SPEC_DRAFT_HF_REPO": "--spec-draft-hf", "SPEC_DRAFT_MODEL": "-md",
    "SPEC_DRAFT_N_CPU_MOE": "--spec-draft-n-cpu-moe", "SPEC_DRAFT_N_MAX": "--spec-draft-n-max",
    "SPEC_DRAFT_N_MIN": "--spec-draft-n-min", "SPEC_DRAFT_P_MIN": "--spec-draft-p-min",
    "SPEC_DRAFT_P_SPLIT": "--spec-draft-p-split", "SPEC_SYNTH_LEN": "--spec-synth-len",
    "SPEC_SYNTH_RATES": "--spec-synth-rates", "SPEC_TYPE": "--spec-type", "SPLIT_MODE": "-sm",
    "SSE_PING_INTERVAL": "--sse-ping-interval", "SSL_CERT_FILE": "--ssl-cert-file", "SSL_KEY_FILE": "--ssl-key-file",
    "STATIC_PATH": "--path", "SWA_FULL": "--swa-full", "TAGS": "--tags", "TEMPERATURE": "--temp",
    "TENSOR_SPLIT": "-ts", "THINK": "--reasoning-format", "THINK_BUDGET": "--reasoning-budget",
    "THINK_BUDGET_MESSAGE": "--reasoning-budget-message", "THREADS": "-t", "THREADS_HTTP": "--threads-http",
    "TIMEOUT": "--timeout", "TOOLS": "--tools", "TOOLS_RUNTIME": "--tools-runtime", "TOP_K": "--top-k",
    "TOP_P": "--top-p", "UBATCH": "-ub", "UI": "--webui", "UI_CONFIG": "--webui-config",
    "UI_CONFIG_FILE": "--ui-config-file", "UI_MCP_PROXY": "--ui-mcp-proxy", "VIDEO_FFMPEG_DIR": "--video-ffmpeg-dir",
    "VIDEO_FPS": "--video-fps", "VIDEO_TIMESTAMP_INTERVAL": "--video-timestamp-interval",
    "YARN_ATTN_FACTOR": "--yarn-attn-factor", "YARN_BETA_FAST": "--yarn-beta-fast",
    "YARN_BETA_SLOW": "--yarn-beta-slow", "YARN_EXT_FACTOR": "--yarn-ext-factor", "YARN_ORIG_CTX": "--yarn-orig-ctx",
}
"""``LLAMA_ARG_<NAME>`` -> the flag it sets, every ``.set_env("LLAMA_ARG_...")`` of llama.cpp's common/arg.cpp (read
from the copy llama-cpp-python 0.3.36 vendors; the name printed is the alias kvmath's flag tables know). llama.cpp
applies them before the command line (``common_params_parse_ex``: "handle environment variables", then the
arguments, which win), so kvmath reads them as flags the line did not give: a flag kvmath prices is applied, a
serving-only flag ignored with a note, any other refused, as the same flag on the line would be."""

_ENV_BOOL = {"KV_UNIFIED": ("-kvu", "--no-kv-unified"), "KV_OFFLOAD": (None, "--no-kv-offload"),
             "MMPROJ_OFFLOAD": (None, "--no-mmproj-offload"), "MMAP": ("--mmap", "--no-mmap")}
"""Negatable flags (``args_neg``): a truthy value is the flag, a falsey one (or ``LLAMA_ARG_NO_<NAME>`` set,
``common_arg::get_value_from_env``) its negation; None where the value is the default."""
_TRUTHY, _FALSEY = ("on", "enabled", "1", "true"), ("off", "disabled", "0", "false")


def env_words(env: Mapping[str, str] | None) -> tuple[list[str], list[str]]:
    """The ``LLAMA_ARG_*`` variables of ``env`` as launch-line words (in name order) and a note for each. A name
    llama.cpp does not read is noted as ignored; a boolean that is neither truthy nor falsey is refused as
    llama.cpp refuses it ("invalid boolean value"). Raises KvMathError."""
    words: list[str] = []
    notes: list[str] = []
    for name in sorted(k for k in (env or {}) if isinstance(k, str) and k.startswith("LLAMA_ARG_")):
        value, key = str(env[name]), name[len("LLAMA_ARG_"):]
        if key.startswith("NO_") and key[3:] in _ENV_BOOL:
            key, value = key[3:], "0"
        if key not in LLAMA_ENV and key not in _ENV_BOOL:
            notes.append(f"{name} ignored: llama.cpp reads no such variable (common/arg.cpp)")
            continue
        if key in _ENV_BOOL:
            low = value.strip().lower()
            if low not in _TRUTHY + _FALSEY:
                raise KvMathError(f"{name}={_short(value)}: llama.cpp takes a boolean there (1/0, true/false, on/off, "
                                  "enabled/disabled)")
            flag = _ENV_BOOL[key][0 if low in _TRUTHY else 1]
            got = [flag] if flag else []
        else:
            flag = LLAMA_ENV[key]
            kind = _FLAGS.get(flag, ("", "value"))[1]
            if kind in ("on", "off") or flag in IGNORED_BARE:
                got = [flag] if value.strip().lower() in _TRUTHY else []
            else:
                got = [flag, value]
        if got and got[0] not in _FLAGS and got[0] not in IGNORED_VALUE | IGNORED_BARE and got[0] not in REFUSED:
            raise KvMathError(f"{name} sets llama.cpp's {got[0]}, which kvmath does not model (unset it, or price the "
                              "line without it)")
        if got and got[0] in REFUSED:
            raise KvMathError(f"{name} sets {got[0]}: {REFUSED[got[0]]}")
        words += got
        notes.append(f"{name}={_short(value, 40)} read as {' '.join(got) or 'the default'} (llama.cpp reads LLAMA_ARG_* "
                     "before the command line; a flag on the line wins)")
    return words, notes


TS_MAX = 15
"""Most ``-ts`` proportions llama.cpp takes: common/arg.cpp refuses ``split_arg.size() >= llama_max_devices()``
("got %d input configs, but system only has %d devices"), and ``llama_max_devices()`` is 16 (src/llama.cpp)."""


def split_tensor_split(value) -> list[str]:
    """``-ts`` / ``--tensor-split`` split as llama.cpp splits it (common/arg.cpp): on runs of ``,`` and ``/``
    (``std::regex "[,/]+"`` with ``std::sregex_token_iterator``, which drops an empty last piece, so ``3,,1`` and
    ``3/1,`` are two proportions and ``,1`` has an empty first one that std::stof refuses); at most
    :data:`TS_MAX` pieces. Each piece is the caller's to read (:func:`kvmath.validate.stof_float`). Raises
    KvMathError."""
    text = str(value)
    parts = re.split(r"[,/]+", text)
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if len(parts) > TS_MAX:
        raise KvMathError(f"-ts gives {len(parts)} proportions; llama.cpp takes at most {TS_MAX} (\"got {len(parts)} input "
                          "configs, but system only has 16 devices\")")
    return parts


def _value(flag: str, kind: str, value: str):
    if len(str(value)) > 4096:
        raise KvMathError(f"{flag}: a value of {len(str(value)):,} characters is refused")
    if kind == "int":
        return _int(value, flag, lo=-1)
    if kind == "float":
        return _float(value, flag)
    return str(value)


def parse_spec_types(text: str | None, build) -> tuple[str, ...]:
    """``--spec-type`` as llama.cpp reads it: a comma-separated list, each value one of the build's
    ``spec_types``. Raises KvMathError naming the unknown value and the valid ones."""
    if text is None:
        return ()
    vals = tuple(v.strip() for v in str(text).split(","))
    for v in vals:
        if v not in build.spec_types:
            raise KvMathError(f"--spec-type {_short(v, 40)} is not a speculative type of llama.cpp {build.name}; "
                              f"valid: {choices(build.spec_types)} (a list joins them with commas)")
    return vals


def parse_launch(argv: Sequence[str], env: Mapping[str, str] | None = None, *, tool: str = "llama-server"):
    """A llama.cpp launch line (program word removed) as a :class:`~kvmath.engines.base.Launch`.

    ``settings`` holds the flags under the keys of :data:`DEFAULTS` (tool defaults filled in) plus ``tool``,
    ``n_rs_seq`` (rollback snapshots per sequence from ``--spec-type`` / ``--spec-draft-n-max``), ``ctx_given``
    and ``n_ctx_parsed`` / ``n_cpu_moe_parsed`` (what the line said, so ``--fit`` knows what the user set).
    Raises KvMathError for an unknown or refused flag, a bad value, or a missing model."""
    from ..base import Launch

    if tool not in TOOLS:
        raise KvMathError(f"unknown llama.cpp program {_short(tool)}; valid: {choices(TOOLS)}")
    given, notes = _split(argv)
    ewords, enotes = env_words(env)
    if ewords or enotes:
        from_env, ignored = _split(ewords)
        for key, value in from_env.items():
            if key not in given:
                given[key] = value
            elif isinstance(value, list):
                given[key] = value + given[key]
        notes += enotes + [n for n in ignored if n not in notes]
    chosen = TABLE.choose(given.pop("build", None))
    if chosen.note:
        notes.append(chosen.note)
    build = chosen.release
    model = given.pop("model", None)
    hf = given.pop("hf_repo", None)
    if hf is not None:  # llama.cpp's -hf org/name[:QUANT]: the GGUF's header by ranged reads (kvmath.hub)
        from ...hub import parse_hub_id

        if model is not None:
            raise KvMathError("give the model once: -m PATH or -hf org/name[:QUANT]")
        if parse_hub_id(hf) is None or "@" in hf:
            raise KvMathError(f"-hf takes org/name[:QUANT] (llama.cpp's form), got {_short(hf)}")
        model = f"hf://{hf}"
    if model is None:
        raise KvMathError("the llama.cpp line names no model: give -m PATH (a .gguf, a config.json or a known id)")
    s = {**DEFAULTS, **given, "tool": tool, "ctx_given": "n_ctx" in given}
    _default_notes(s, given, notes)
    _check(s, build, notes)
    s["n_ctx_parsed"], s["n_cpu_moe_parsed"] = s["n_ctx"], s["n_cpu_moe"]
    return Launch("llama.cpp", model, s, release=build.name, notes=tuple(notes), argv=tuple(argv))


def _default_notes(s: dict, given: dict, notes: list[str]) -> None:
    """Name the defaults and readings that price the line although it did not say them."""
    if "n_gpu_layers" not in given:
        notes.append("-ngl not given: llama.cpp's auto, priced as every layer on the GPU(s) (--fit on may move "
                     "experts or lower -c: its lines say so)")
    else:
        try:
            n = int(str(s["n_gpu_layers"]))
        except ValueError:
            n = None
        if n is not None and n < 0 and n != -1:
            # common/arg.cpp stores the number as given; llama.h: "a negative value means all layers";
            # llama_model::n_gpu_layers() returns n_layer_all + 1 for it
            notes.append(f"-ngl {n}: a negative layer count means all layers in llama.cpp (llama.h; "
                         "llama_model::n_gpu_layers() = n_layer + 1)")
    if "flash_attn" not in given:
        notes.append("-fa not given: llama.cpp's auto, which sizes the cache as with flash attention on")
    missing = [f for f, k in (("-ctk", "cache_type_k"), ("-ctv", "cache_type_v")) if k not in given]
    if missing:
        notes.append(f"{' / '.join(missing)} not given: llama.cpp's f16 cache")


def _check(s: dict, build, notes: list[str]) -> None:
    """Fill the derived settings and check their ranges (in place)."""
    if s["n_ctx"] < 0:
        raise KvMathError("-c must be >= 0 (0 = the model's training context)")
    for key, flag in (("n_batch", "-b"), ("n_ubatch", "-ub")):
        if not 1 <= s[key] <= 1 << 24:
            raise KvMathError(f"{flag} must be between 1 and 16,777,216, got {s[key]:,}")
    np_ = s.get("n_parallel")
    if np_ is None or np_ == -1:
        if s["tool"] == "llama-server":
            s["n_parallel"] = 4
            if "kv_unified" not in s:
                s["kv_unified"] = True
            notes.append("-np not given: llama-server's auto, 4 slots sharing one unified KV cache (--kv-unified)")
        else:
            s["n_parallel"] = 1
    elif not 1 <= np_ <= 256:
        raise KvMathError(f"-np must be between 1 and 256 (LLAMA_MAX_SEQ), got {np_:,}")
    s.setdefault("kv_unified", False)
    fa = s["flash_attn"].lower()
    if fa not in ("on", "off", "auto", "1", "0", "enabled", "disabled"):
        raise KvMathError(f"-fa takes on, off or auto, got {_short(s['flash_attn'])}")
    s["flash_attn"] = {"1": "on", "0": "off", "enabled": "on", "disabled": "off"}.get(fa, fa)
    if s["split_mode"] not in ("none", "layer", "row"):
        raise KvMathError(f"-sm takes none, layer or row, got {_short(s['split_mode'])}")
    if s["n_cpu_moe"] < 0:
        raise KvMathError("--n-cpu-moe must be >= 0")
    s["override_tensor"] = check_overrides(s["override_tensor"])
    s["n_devices"] = _devices(s)
    if s["n_devices"] > 1:
        how = "-dev" if s["devices"] is not None else ("-ts" if s["tensor_split"] is not None else "-mg")
        s["devices_from"] = how
    if not 0 <= s["main_gpu"] < s["n_devices"]:
        raise KvMathError(f"-mg {s['main_gpu']} is not a device: {s['n_devices']} device(s) on the line")
    s["fit"] = _on_off(s["fit"], "--fit")
    s["fit_target_mib"] = tuple(_int(x, "--fit-target", 0, 1 << 20) for x in str(s["fit_target"]).split(","))
    if s["fit_ctx"] < 1:
        raise KvMathError("--fit-ctx must be >= 1")
    spec = parse_spec_types(s["spec_type"], build)
    n_max = s["spec_draft_n_max"]
    if n_max is not None and not 0 <= n_max <= 1024:
        raise KvMathError(f"--spec-draft-n-max must be between 0 and 1,024, got {n_max:,}")
    draft_types = [t for t in spec if t in build.spec_types_with_rollback]
    if s["model_draft"] is not None and not spec:
        spec = ("draft-simple",)
    s["spec_types"] = spec
    n_draft = (16 if n_max is None else n_max) if spec and spec != ("none",) else 0
    s["n_draft"] = n_draft
    s["n_rs_seq"] = n_draft if draft_types else 0
    if draft_types and n_max is None:
        notes.append(f"--spec-draft-n-max not given: llama.cpp's default of 16 draft tokens ({', '.join(draft_types)})")
    if s["quant_mix"] is not None and s["weight_bits"] is not None:
        raise KvMathError("give --quant-mix or --weight-bits, not both")
    if s["weight_bits"] is not None and not 1.0 <= s["weight_bits"] <= 32.0:
        raise KvMathError(f"--weight-bits must be between 1 and 32, got {s['weight_bits']:g}")
    if not 0 <= s["cuda_context_mib"] <= 65536 or not 0 <= s["headroom_mib"] <= 1 << 20:
        raise KvMathError("--cuda-context-mib must be 0-65,536 and --headroom-mib 0-1,048,576")
    if s["mlock"]:
        notes.append("--mlock pins the host copy of the weights in RAM; device memory is unchanged")
    if s["no_mmproj"]:
        s["mmproj"] = None


def _on_off(value: str, flag: str) -> bool:
    v = str(value).lower()
    if v not in ("on", "off", "1", "0", "true", "false", "auto"):
        raise KvMathError(f"{flag} takes on or off, got {_short(value)}")
    return v in ("on", "1", "true", "auto")


_DEVICE = re.compile(r"(?i:cuda|rocm|hip|vulkan|sycl|musa|cann|opencl|metal|mtl|blas|rpc)[0-9]{0,2}"
                     r"|RPC\[[A-Za-z0-9_.:\-]{1,80}\]")
"""A ``-dev`` entry: a GPU backend's registered name and index, as ``ggml_backend_dev_by_name`` looks them up
(case-insensitive; ggml/src/ggml-backend-reg.cpp), or an RPC server ``RPC[host:port]``."""


def _devices(s: dict) -> int:
    """The GPU count the line implies: ``-dev`` list, ``-ts`` proportions, else 1."""
    n = 1
    if s["devices"] is not None:
        devs = [d for d in str(s["devices"]).split(",") if d.strip()]
        if [d.strip().lower() for d in devs] == ["none"]:
            raise KvMathError("-dev none runs on the CPU backend only; the front door prices GPU devices")
        if not 1 <= len(devs) <= 16:
            raise KvMathError(f"-dev names 1-16 devices, got {len(devs)}")
        bad = next((d for d in devs if not _DEVICE.fullmatch(d.strip())), None)
        if bad is not None:
            raise KvMathError(f"-dev {_short(bad)} is not a device name: llama.cpp's are a backend and its index "
                              "(CUDA0, ROCm1, Vulkan0, SYCL0, MUSA0, CANN0, Metal; llama-server --list-devices)")
        names = [d.strip() for d in devs]
        low = [d.lower() for d in names]  # ggml_backend_dev_by_name compares names case-insensitively
        twice = next((d for i, d in enumerate(names) if low[i] in low[:i]), None)
        if twice is not None:  # one GPU listed twice would be priced as two, each with the card's memory
            raise KvMathError(f"-dev names {twice} twice; list each device once (llama-server --list-devices)")
        far = next((d for d in names if (m := re.search(r"(\d+)$", d)) and int(m.group(1)) >= TS_MAX + 1), None)
        if far is not None:  # ggml's backends number at most GGML_CUDA_MAX_DEVICES / llama_max_devices() = 16
            raise KvMathError(f"-dev {far}: llama.cpp numbers at most 16 devices per backend (0-15; llama_max_devices)")
        n = len(devs)
        from .backends import resolve

        resolve(s["devices"], None)  # one backend per launch (a mixed list is refused here, in one line)
    if s["tensor_split"] is not None:
        # all zero is llama.cpp's default split, by free memory (llama-model.cpp load_tensors: all_zero)
        ts = tuple(_float(x, "-ts", 0.0, 1e6) for x in split_tensor_split(s["tensor_split"]))
        s["tensor_split"] = ts
        n = max(n, len(ts)) if s["devices"] is None else n
    if s["split_mode"] == "none":
        return max(n, s["main_gpu"] + 1)
    return n
