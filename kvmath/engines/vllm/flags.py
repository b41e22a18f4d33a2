"""Every ``vllm serve`` option of the covered releases, classified: modelled (kvmath-fit's parser reads it),
ignored with a note (it cannot change device memory), or refused with the reason (it can, and kvmath does not
model it). A flag of another covered release than the one the line is priced at (``--vllm-version``) is refused
as "not a vLLM X flag", as that release's argparse would refuse it.

The option sets and their arity are ``data/vllm-flags.json``: read from each release's PyPI wheel by
tests/fixtures/vllm/flags.py (make_arg_parser, FrontendArgs, EngineArgs.add_cli_args; checked against the
imported 0.24.0 parser: the same 359 option strings and arities). A release between two read ones takes the
older one's set.
"""

from __future__ import annotations

from functools import lru_cache

from ...errors import KvMathError

ALIASES = {"-asc": "--api-server-count", "-n": "--nnodes", "-r": "--node-rank", "-dcp": "--decode-context-parallel-size",
           "-pcp": "--prefill-context-parallel-size", "-dpn": "--data-parallel-rank", "-dpr": "--data-parallel-start-rank",
           "-dpl": "--data-parallel-size-local", "-dpa": "--data-parallel-address", "-dpp": "--data-parallel-rpc-port",
           "-dpb": "--data-parallel-backend", "-dph": "--data-parallel-hybrid-lb", "-dpe": "--data-parallel-external-lb",
           "-dpm": "--data-parallel-multi-port-external-lb", "-ep": "--enable-expert-parallel",
           "-sc": "--speculative-config", "-dc": "--diffusion-config", "-cc": "--compilation-config",
           "-ac": "--attention-config"}
"""vLLM's short option strings and the long one of the same add_argument call (the imported 0.24.0 parser)."""

_IGNORED_GROUPS = {
    "HTTP frontend or networking": """--host --port --uds --api-key --allow-credentials --allowed-headers --allowed-methods
        --allowed-origins --root-path --middleware --ssl-ca-certs --ssl-cert-reqs --ssl-certfile --ssl-ciphers
        --ssl-keyfile --enable-ssl-refresh --disable-fastapi-docs --enable-offline-docs --h11-max-header-count
        --h11-max-incomplete-event-size --enable-request-id-headers --enable-server-load-tracking
        --disable-uvicorn-access-log --uvicorn-log-level --disable-access-log-for-endpoints
        --enable-tokenizer-info-endpoint --api-server-count --headless --grpc --grpc-port
        --data-parallel-supervisor-port --dp-supervisor-probe-interval-s --dp-supervisor-probe-timeout-s
        --dp-supervisor-probe-failure-threshold --shutdown-timeout --sse-keep-alive-interval
        --disable-frontend-multiprocessing --tool-server --enable-force-include-usage --enable-prompt-tokens-details
        --headless-client-handshake-address --served-model-name --enable-flash-late-interaction""",
    "logging or observability": """--disable-log-stats --enable-log-requests --disable-log-requests --enable-log-outputs
        --enable-log-deltas --log-config-file --log-error-stack --max-log-len --log-level --logging-config
        --aggregate-engine-logging --otlp-traces-endpoint --collect-detailed-traces --show-hidden-metrics-for-version
        --kv-cache-metrics --kv-cache-metrics-sample --cudagraph-metrics --enable-mfu-metrics
        --enable-logging-iteration-details --enable-layerwise-nvtx-tracing --ray-workers-use-nsight
        --custom-histogram-buckets --enable-per-request-metrics --per-request-spec-decode-metrics
        --jit-monitor-verbose --jit-monitor-mode --kv-events-config --fingerprint-mode --fingerprint-value
        --eplb-log-balancedness --watchdog-config --fail-on-environ-validation""",
    "chat template, tool or reasoning parsing": """--chat-template --chat-template-content-format
        --default-chat-template-kwargs --response-role --tool-call-parser --tool-parser-plugin --enable-auto-tool-choice
        --exclude-tools-when-tool-choice-none --reasoning-parser --reasoning-parser-plugin --reasoning-config
        --trust-request-chat-template --return-tokens-as-token-ids --tokens-only --anthropic-disabled-thinking-effort
        --cohere-format --cohere-is-reasoning-model --reasoning-effort-map --tool-strict-level
        --interleave-mm-strings --trust-remote-code""",
    "tokenizer": """--tokenizer --tokenizer-mode --tokenizer-revision --skip-tokenizer-init --renderer-num-workers
        --hf-token""",
    "sampling defaults or output format": """--generation-config --override-generation-config --max-logprobs
        --logprobs-mode --logits-processor-pattern --seed --structured-outputs-config --guided-decoding-backend
        --guided-decoding-disable-additional-properties --guided-decoding-disable-any-whitespace
        --guided-decoding-disable-fallback""",
    "scheduling order or admission (not the batch sizes)": """--scheduling-policy --long-prefill-token-threshold
        --max-num-partial-prefills --max-long-partial-prefills --scheduler-reserve-full-isl --stream-interval
        --async-scheduling --enable-chunked-prefill --prefill-schedule-interval --preemption-mode
        --scheduler-delay-factor --max-num-queued-reqs --max-num-queued-tokens --long-prefill-token-threshold-adaptive
        --cache-aware-admission-threshold --cache-aware-admission-window --disable-async-output-proc
        --dp-sync-interval --prefix-caching-hash-algo --disable-cascade-attn""",
    "checkpoint download or host-side loading": """--download-dir --ignore-patterns --use-tqdm-on-load --pt-load-map-location
        --safetensors-load-strategy --safetensors-prefetch-block-size --safetensors-prefetch-num-threads
        --max-parallel-loading-workers --shuffle-safetensors-files --checkpoint-prepare-on-startup --revision
        --code-revision --allow-deprecated-quantization""",
    "process placement or host networking": """--distributed-executor-backend --master-addr --master-port --nnodes
        --node-rank --data-parallel-address --data-parallel-rpc-port --data-parallel-rank --data-parallel-start-rank
        --data-parallel-backend --data-parallel-external-lb --data-parallel-hybrid-lb
        --data-parallel-multi-port-external-lb --data-parallel-size-local --distributed-timeout-seconds
        --cpu-distributed-timeout-seconds --disable-nccl-for-dp-synchronization --numa-bind --numa-bind-cpus
        --numa-bind-nodes --device-ids""",
    "host memory (CPU swap space, multimodal processor caches, media decoding)": """--swap-space --mm-processor-cache-gb
        --mm-processor-cache-type --mm-shm-cache-max-object-size-mb --media-io-kwargs --disable-mm-preprocessor-cache
        --mm-hasher-algorithm --allowed-local-media-path --allowed-media-domains --trust-request-mm-kwargs""",
}
IGNORED = {f: why for why, text in _IGNORED_GROUPS.items() for f in text.split()}
"""Options that cannot change device memory, by what they do; accepted and named in a note."""

_LORA = "LoRA adapters' weights and buffers are not modelled"
_KERNEL = "a kernel or backend choice changes workspaces and padding kvmath prices for vLLM's default"
_PARALLEL = "this parallel scheme changes the weights and KV per GPU in ways kvmath does not model"
_GRAPHS = "kvmath prices vLLM's default CUDA graph capture sizes (--enforce-eager prices none)"
_MODEL = "it changes the model vLLM builds from the config kvmath reads"
_CODE = "it loads user code whose allocations kvmath cannot know"
_OFFLOAD = "weight or KV offloading is not modelled"
_UNREAD = "kvmath has not read what this option allocates"
_MM = "it changes the multimodal encoder's weights or profile run, which kvmath prices for vLLM's default"
_REFUSED_GROUPS = {
    _LORA: """--enable-lora --lora-modules --max-loras --max-lora-rank --max-cpu-loras --lora-dtype --lora-target-modules
        --fully-sharded-loras --specialize-active-lora --enable-mixed-moe-lora-format --enable-lora-bias
        --lora-extra-vocab-size --enable-moe-shared-loras --max-lora-cls-labels --enable-prompt-adapter
        --default-mm-loras --enable-tower-connector-lora""",
    _GRAPHS: """--compilation-config --cudagraph-capture-sizes --max-cudagraph-capture-size --cuda-graph-sizes
        --max-seq-len-to-capture --performance-mode""",
    _KERNEL: """--kernel-config --ir-op-priority --moe-backend --linear-backend --attention-config --mamba-backend
        --gdn-prefill-backend --kda-decode-backend --kda-prefill-backend --mm-encoder-attn-backend
        --sparse-indexer-topk-backend --mamba-ssu-algorithm --enable-flashinfer-autotune --all2all-backend
        --dcp-comm-backend --monokernel --enable-bf16x3-router-gemm --use-fp64-gumbel""",
    _PARALLEL: """--decode-context-parallel-size --prefill-context-parallel-size --cp-kv-cache-interleave-size
        --dcp-kv-cache-interleave-size --dcp-q-replicate --enable-dbo --dbo-decode-token-threshold
        --dbo-prefill-token-threshold --ubatch-size --enable-eplb --eplb-config --num-redundant-experts
        --eplb-window-size --eplb-step-interval --expert-placement-strategy --enable-ep-weight-filter
        --enable-elastic-ep --elastic-ep-max-dp-size --enable-hc-sp --enable-scale-out --enable-nccl-comm-suspend
        --enable-batch-sharded-sampling --mm-encoder-tp-mode --enable-multimodal-encoder-data-parallel
        --disable-custom-all-reduce --enable-fault-tolerance --fault-tolerance-config""",
    _OFFLOAD: """--cpu-offload-gb --cpu-offload-params --offload-backend --offload-group-size --offload-num-in-group
        --offload-params --offload-prefetch-step --kv-offloading-size --kv-offloading-backend
        --enable-extensible-kv-cache""",
    _MODEL: """--hf-overrides --override-attention-dtype --rope-scaling --rope-theta --model-impl --disable-sliding-window
        --hf-config-path --config-format --model-class-overrides --override-neuron-config --pooler-config
        --override-pooler-config --task --quantization-config --enable-return-routed-experts
        --kv-cache-dtype-skip-layers --calculate-kv-scales --mamba-cache-dtype --mamba-ssm-cache-dtype
        --mamba-block-size --mamba-cache-mode --enable-mamba-cache-stochastic-rounding --mamba-cache-philox-rounds
        --enable-mamba-shared-prefix-checkpoint --disable-hybrid-kv-cache-manager --kv-sharing-fast-prefill
        --swa-bounded-replay --use-replayssm --replayssm-buffer-len --engram-config --aux-output-config
        --enable-prompt-embeds --mm-encoder-attn-dtype --mm-encoder-fp8-scale-path
        --mm-encoder-fp8-scale-save-margin --mm-encoder-fp8-scale-save-path""",
    _CODE: """--worker-cls --worker-extension-cls --scheduler-cls --logits-processors --io-processor-plugin
        --additional-config""",
    _MM: """--video-pruning-rate --video-pruning-method --skip-mm-profiling --mm-encoder-only --disable-chunked-mm-input
        --mm-processor-device --mm-device-do-normalize --mm-ipc-gpu-memory-gb --mm-tensor-ipc --enable-mm-embeds""",
    "sleep mode releases and re-takes device memory (CuMemAllocator), which is not modelled": """--enable-sleep-mode
        --sleep-mode-backend --sleep-mode-offload-cudagraph --sleep-preserve-parameter-names --enable-cumem-allocator""",
    "KV or encoder-cache transfer between instances adds connector buffers that are not modelled": """--kv-transfer-config
        --ec-transfer-config --ec-manager-config --weight-transfer-config --max-num-inflight-kv-loads""",
    "a separate drafter: give --speculative-config (MTP) or its weights with --drafter-gb": """--spec-method --spec-model
        --spec-tokens --num-lookahead-slots""",
    "use the kvmath command (kvmath --engine vllm --kv-cache-memory-bytes ...) to plan a fixed KV size":
        "--kv-cache-memory-bytes",
    "use the kvmath command (kvmath --engine vllm) for a fixed block count": "--num-gpu-blocks-override",
    _UNREAD: """--diffusion-config --watermark --watermark-config --enable-trace-replay --enable-shm-tensor-arena
        --device-memory-utilization --max-num-active-seqs --max-num-scheduled-tokens --return-sampling-mask
        --prefix-cache-retention-interval --prefix-match-unit --model-loader-extra-config --profiler-config""",
}
REFUSED = {f: why for why, text in _REFUSED_GROUPS.items() for f in text.split()}
"""Options that can change device memory in ways kvmath does not model, with the reason."""

NO_FORMS_REFUSED = {
    "--no-enable-chunked-prefill": "without chunked prefill vLLM schedules whole prompts (max_num_batched_tokens "
                                   "up to max_model_len), a batch kvmath does not price",
    "--no-async-scheduling": "kvmath's sliding-window rule holds two in-flight batches, as async scheduling does",
    "--no-enable-flash-late-interaction": _UNREAD, "--no-use-tqdm-on-load": None,
}
"""``--no-`` forms that change memory although their positive form does not (None: as the positive form)."""

VALUES = {
    "--load-format": ({"auto", "safetensors", "pt", "npcache", "fastsafetensors", "runai_streamer", "dummy",
                       "sharded_state"}, "this format loads other weights than the checkpoint's tensors "
                                         "(bitsandbytes, gguf, tensorizer, ...), not modelled"),
    "--runner": ({"auto", "generate"}, "a pooling runner builds no KV cache or sampler as kvmath prices them"),
    "--convert": ({"auto", "none"}, "converting the model to a pooling one is not modelled"),
}
"""Options ignored for the values listed (the same tensors, the generative runner) and refused for any other."""

# flags vLLM removed before the first release read (0.10.1): kvmath refuses them, as vllm serve's argparse does
# (--enable-reasoning: vllm/engine/arg_utils.py 0.9.2 l.627 "[DEPRECATED]", absent from 0.10.0's)
REMOVED = {"--enable-reasoning": "vLLM 0.10.0 removed it, deprecated in 0.9.2; use --reasoning-parser NAME, which "
                                 "alone turns reasoning parsing on"}
MODEL_OPTIONS = ("--model", "--config", "--optimization-level", "-O")
"""vLLM options the parser reads under kvmath's own handling (--optimization-level is read as -O)."""


@lru_cache(maxsize=None)
def _table():
    from ... import facts
    from .releases import TABLE

    data = facts.read_json("vllm-flags.json")["releases"]
    names = sorted(data, key=lambda v: TABLE.by_name[v].key if v in TABLE.by_name else (0,))
    return data, names


def release_flags(release: str) -> dict:
    """{option string: arity} of vLLM ``release``'s ``vllm serve`` (``data/vllm-flags.json``; arity 0, 1, "?" or
    "+"); a release between two read ones takes the older one's. KvMathError for a release before the first."""
    from .releases import TABLE

    data, names = _table()
    key = TABLE.by_name[release].key if release in TABLE.by_name else None
    usable = [v for v in names if key is None or TABLE.by_name[v].key <= key]
    if not usable:
        raise KvMathError(f"no vllm serve option list read for vLLM {release}")
    return data[usable[-1] if key is not None else release]


def all_flags() -> set[str]:
    """The option strings of every read release."""
    data, _ = _table()
    return set().union(*map(set, data.values()))


def first_last(flag: str) -> tuple[str, str]:
    """The first and last read release with ``flag``."""
    data, names = _table()
    have = [v for v in names if flag in data[v]]
    return have[0], have[-1]


def classify(flag: str, modelled: set[str]) -> tuple[str, str | None]:
    """("modelled" | "ignored" | "refused", note or reason) for a long option string of vLLM (``--no-`` forms
    take their positive form's class unless ``NO_FORMS_REFUSED`` names them; a ``--no-`` form of a refused
    switch is vLLM's default off, ignored)."""
    if flag in modelled or flag in MODEL_OPTIONS:
        return "modelled", None
    if flag in VALUES:
        return "value", None
    if flag in IGNORED:
        return "ignored", IGNORED[flag]
    if flag in REFUSED:
        return "refused", REFUSED[flag]
    if flag.startswith("--no-"):
        if NO_FORMS_REFUSED.get(flag):
            return "refused", NO_FORMS_REFUSED[flag]
        pos = "--" + flag[5:]
        kind, why = classify(pos, modelled)
        if kind == "refused":
            return "ignored", f"the switch off, vLLM's default for {pos}"
        if kind == "modelled":
            return "ignored", f"the switch off, kvmath's default for {pos}"
        return kind, why
    return "unclassified", None


def screen(argv: list[str], release: str, modelled: set[str]) -> tuple[list[str], list[str]]:
    """``argv`` (a vllm serve line, command words removed) without the options that cannot change memory and
    their values, and those options (for the note). Raises KvMathError naming the option for one vLLM ``release``
    does not have ("not a vLLM X flag") or one that can change memory and is not modelled."""
    known = release_flags(release)
    every = all_flags()
    out, ignored = [], []
    i, n = 0, len(argv)
    while i < n:
        a = argv[i]
        if a == "--":
            out.extend(argv[i:])
            break
        if not a.startswith("-") or a in ("-", "-O") or a.startswith("-O"):
            out.append(a)
            i += 1
            continue
        name, eq, value = a.partition("=")
        base = name.split(".", 1)[0] if name.startswith("--") else name  # --compilation-config.mode 3
        long = ALIASES.get(base, base)
        if base in REMOVED and base not in known:
            raise KvMathError(f"{base} is not a vLLM {release} flag: vllm serve rejects the line ({REMOVED[base]})")
        if long not in every and base not in every:
            out.append(a)  # kvmath's own flag, or unknown: argparse answers it
            i += 1
            continue
        if base not in known:
            lo, hi = first_last(base)
            raise KvMathError(f"{base} is not a vLLM {release} flag (vllm serve has it in {lo}"
                              + (f"-{hi}" if hi != lo else "") + " of the releases read; --vllm-version picks the "
                              "release)")
        kind, why = classify(long, modelled)
        if kind == "modelled" and "." not in name:
            if long == "--optimization-level":
                out.extend(["-O", value] if eq else ["-O"])
            else:
                out.append(ALIASES.get(name, name) + eq + value)
            i += 1
            continue
        arity = known[base] if "." not in name else 1
        vals = [value] if eq else []
        j = i + 1
        if not eq and arity == 1 and j < n:
            vals, j = [argv[j]], j + 1
        elif not eq and arity in ("?", "+"):
            while j < n and not argv[j].startswith("-") and (arity == "+" or not vals):
                vals.append(argv[j])
                j += 1
        if kind == "value":
            allowed, reason = VALUES[long]
            if vals and vals[0] not in allowed:
                raise KvMathError(f"{base} {vals[0][:40]!r} is not modelled by kvmath-fit: {reason}; modelled: "
                                  f"{', '.join(sorted(allowed))}")
            kind = "ignored"
        if kind in ("refused", "modelled"):  # modelled flags' dotted JSON keys are not read either
            raise KvMathError(f"{base} is not modelled by kvmath-fit: {why or 'kvmath reads it as a whole value'}")
        if kind != "ignored":
            raise KvMathError(f"{base} is a vLLM {release} flag kvmath-fit has not classified; please report it")
        ignored.append(base)
        i = j
    return out, ignored
