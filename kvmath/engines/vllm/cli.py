"""``kvmath-fit``: does a model fit a card under vLLM, and what does vLLM do with it?

A pasted ``vllm serve`` line, or the anchor calculator's (club-3090 ``tools/kv-calc.py``) flags, with vLLM's
real verdict:

    kvmath-fit vllm serve Qwen/Qwen3.6-27B --tensor-parallel-size 2 --card h100
    kvmath-fit --model gemma-4-31b --card rtx3090 --tp 2 --kv-format int8_per_token_head --solve-max-ctx
    kvmath-fit --config path/to/config.json --weights-gb 16 --max-ctx 32768 --card rtx4090
    kvmath-fit --model qwen3.6-27b --compose dual
    kvmath-fit --anchor-defaults --model qwen3.6-27b
    kvmath-fit --calibration

One defaults story: what a line leaves out takes vLLM's own defaults for the release (``--kv-cache-dtype auto``,
``gpu_memory_utilization`` 0.92 from 0.20, ``vllm serve``'s ``max_num_seqs`` for the card, the model's maximum
length, the model's HF checkpoint, this machine's GPU or a refusal), whether the model is given as in
``vllm serve MODEL``, by ``--model`` or by ``--config``. The public calculator's defaults (fp8_e5m2, 0.95, one
sequence, 180,000 tokens, rtx3090, its published checkpoint) only when asked for by name: ``--anchor-defaults``,
or one of its ``--compose`` deployments. Each default taken is named in a note.

Exit status: 0 when vLLM boots (``--solve-max-ctx``: when some context boots; ``--calibration``: always),
1 when it refuses to boot or runs out of memory, 2 on bad input (one line on stderr, no traceback), 3 on an
internal error (one line asking for a report; ``--debug`` prints the traceback). See kvmath.clitools.

Fixes against the anchor (each is listed in ``FIXES``): vLLM's verdict (boots / refused / oom)
instead of PASS/TIGHT/FAIL; card memory in GiB as the engine sees it; a solver that returns the
largest context that boots; ``--max-ctx 0`` rejected; ``--drafter-gb 0`` removes a drafter;
``--mtp`` on Gemma adds the assistant drafter; compose presets priced as their compose files set them;
``--json`` always JSON; KV dtypes checked against the card.

Imports only the standard library and kvmath's core (no numpy, pandas or altair).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys

from ...clitools import EXIT_HELP, check_arg_count, drop_private, refuse_repeats, set_aside
from ...errors import KvMathError
from ...validate import MAX_GB, MAX_TOKENS, MAX_TP, one_line

GIB = 2**30
ANCHOR_MODELS = ("gemma-4-26b-a4b", "gemma-4-31b", "qwen3.6-27b", "qwen3.6-35b-a3b")
KV_LAYOUTS = ("auto", "dense_gqa", "hybrid_mamba", "sliding_window", "compressed_sparse")
INDEXER_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp4": 0.5, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0, "int4": 0.5, "int8": 1.0}
KV_ALIASES = {"k8v4": "turboquant_k8v4"}

FIXES = [
    ("verdict", "PASS/TIGHT/FAIL priced demand against mem_util x vram and called boot refusals TIGHT",
     "vLLM's own three cases: boots (pool sized by the memory left), refused (one max_model_len request does "
     "not fit; vLLM's estimated maximum model length is printed), out of memory; the anchor's verdict is kept "
     "in JSON under 'anchor', labelled"),
    ("units", "--vram in GB (24 for a 24 GiB RTX 3090) and 1e9-byte terms compared with GiB logs",
     "card memory as PyTorch reports it in GiB (--card rtx3090 = 23.69 GiB; --vram takes GiB, or '25GB')"),
    ("solver", "--solve-max-ctx returned the model maximum whenever weights fit (TIGHT counted as fit)",
     "largest max_model_len that boots, exact to the token (vLLM's estimate, checked: L boots, L+1 does not); "
     "exit 1 and JSON when nothing boots"),
    ("kv pool", "requested KV capped silently at the room left; concurrency not computed",
     "the pool vLLM allocates (blocks x bytes per block), its token count and maximum concurrency"),
    ("zero values", "--max-ctx 0 / --max-num-seqs 0 meant 'unset'", "rejected with a message (exit 2)"),
    ("drafter", "--drafter-gb 0 could not remove a DFlash drafter; --mtp on Gemma added no drafter",
     "--drafter-gb 0 removes the drafter; --mtp adds the model's MTP drafter (Qwen built-in: 3 speculative "
     "tokens; Gemma: the 0.97 GB assistant, 4 tokens)"),
    ("presets", "compose presets priced with kv-calc overrides (mem 0.95 for dual, seqs 4 for minimal, ...)",
     "priced as the compose file sets them; the differences are printed as notes"),
    ("MoE weights", "Gemma 4 26B-A4B weights never divided by TP; Qwen MoE only from 220f51a3",
     "every checkpoint divided by TP (vLLM shards experts and embeddings)"),
    ("GDN scratch", "chunk 256 / fp32 h buffer (docs), invisible before c145b908",
     "FLA h buffer with chunk 64 in bf16 plus v_new, exact, at min(max_num_batched_tokens, max_model_len)"),
    ("recurrent state", "vector formula (5.5 MB/seq, 27B) added as 'fixed' KV",
     "vLLM's GDN state pages (matrix per value head, fp32 temporal, padded to the attention page) inside the "
     "pool, from kvmath.vllm_alloc"),
    ("defaults", "what the line leaves out took fp8_e5m2, 0.95, one sequence, 180,000 tokens, an RTX 3090 and "
     "club-3090's int4 checkpoint, none of which vllm serve does",
     "vLLM's own for the release (auto, 0.92 from 0.20, the card's max_num_seqs, the model's maximum, the HF "
     "checkpoint, this machine's GPU or a question); the anchor's with --anchor-defaults or --compose, named"),
    ("json", "--solve-max-ctx --json printed plain text when nothing fitted", "always JSON"),
    ("kv formats", "q4_0 accepted as a vLLM format; fp8_e4m3 / nvfp4 not checked against the card",
     "vLLM formats only; a format the card cannot run is refused naming the ones it can"),
    ("pct", "'pct_of_vram' was a percentage of the budget", "fields name their unit and base"),
]


# flags of the other engines' launch lines, named when they turn up on a vllm serve line
_FOREIGN_FLAGS = {
    "llama.cpp": ("-ngl", "--n-gpu-layers", "-c", "--ctx-size", "-np", "--parallel", "-ctk", "-ctv", "--cache-type-k",
                  "--cache-type-v", "-fa", "--flash-attn", "-m", "-ub", "--ubatch-size", "-b", "--batch-size",
                  "--n-cpu-moe", "-ts", "--tensor-split", "-hf"),
    "SGLang": ("--mem-fraction-static", "--tp-size", "--context-length", "--model-path", "--max-running-requests",
               "--chunked-prefill-size", "--page-size", "--dp-size", "--max-total-tokens"),
}


class _Parser(argparse.ArgumentParser):
    def _print_message(self, message, file=None):  # a failed write of --help is an error (clitools)
        from kvmath.clitools import print_message

        print_message(message, file)

    def error(self, message):  # one line, exit 2 (a 5,000-digit value is cut)
        if message.startswith("unrecognized arguments"):
            words = [w.partition("=")[0] for w in message.partition(":")[2].split()]
            for engine, flags in _FOREIGN_FLAGS.items():
                hit = next((w for w in words if w in flags), None)
                if hit:
                    a = "an" if engine == "SGLang" else "a"
                    self.exit(2, f"kvmath-fit: error: {hit} is {a} {engine} flag, not a vllm serve one ({a} {engine} "
                                 f"line starts with its own command: "
                                 + ("llama-server ...)" if engine == "llama.cpp" else
                                    "python -m sglang.launch_server ...)") + "\n")
            message += ("; kvmath-fit takes the vllm serve flags that change memory (--help lists them), ignores "
                        "serving-only ones such as --port, and refuses the ones it does not model")
        self.exit(2, f"kvmath-fit: error: {one_line(message)}\n")


def _cut(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


from ...validate import engine_int  # noqa: E402  (one integer reader, kvmath.validate)


def _int_in(name, minimum: int, maximum: int):
    """An argparse type: a whole number in [minimum, maximum], refused in one line naming the range."""
    def conv(text):
        if len(text.strip()) > 30:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number in [{minimum:,}, {maximum:,}], got "
                                             f"{len(text):,} characters ({_cut(text)})")
        try:
            v = engine_int(text, name, "python")  # vLLM's integer fields: argparse type=int (kvmath.validate)
        except KvMathError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {_cut(text)}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}, got {v}")
        if v > maximum:
            raise argparse.ArgumentTypeError(f"{name} must be <= {maximum:,}, got {v:,}")
        return v
    return conv


def _positive_int(name, maximum: int = MAX_TOKENS):
    return _int_in(name, 1, maximum)


def _nonneg_float(name, maximum: float = float(MAX_GB), *, positive: bool = False):
    """A finite number in [0, maximum] (``positive``: in (0, maximum]) for the flag ``name``."""
    def conv(text):
        try:
            v = float(text) if len(text) <= 40 else float("nan")
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {_cut(text)}") from None
        if not math.isfinite(v) or not 0 <= v <= maximum or (positive and v == 0):
            span = f"(0, {maximum:,.0f}]" if positive else f"[0, {maximum:,.0f}]"
            raise argparse.ArgumentTypeError(f"{name} must be a finite number in {span}, got {_cut(text)}")
        return v
    return conv


def _mem_util(text):
    try:
        v = float(text) if len(text) <= 40 else float("nan")
    except ValueError:
        raise argparse.ArgumentTypeError(f"--mem-util must be a number in (0, 1], got {_cut(text)}") from None
    if not (0 < v <= 1):
        raise argparse.ArgumentTypeError(f"--mem-util must be in (0, 1] (gpu_memory_utilization), got {_cut(text)}")
    return v


VRAM_MAX_GIB = 2**20


def _vram(text):
    """'23.69', '23.69GiB' (GiB) or '25.4GB' (1e9 B) -> GiB."""
    m = re.fullmatch(r"\s*([0-9]{0,12}\.?[0-9]{1,12})\s*(GiB|GB|gib|gb)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"--vram must be a memory size in GiB (e.g. 23.69 or 25.4GB), got "
                                         f"{_cut(text)}")
    v = float(m.group(1))
    if m.group(2) and m.group(2).lower() == "gb":
        v = v * 1e9 / GIB
    if not 0 < v <= VRAM_MAX_GIB:
        raise argparse.ArgumentTypeError(f"--vram must be in (0, {VRAM_MAX_GIB:,}] GiB, got {_cut(text)}")
    return v


def _device_memory(text):
    """--device-memory: a size with its unit (kvmath.units.parse_bytes: '24GiB', '24576MiB', '25.4GB') -> GiB."""
    from ...units import parse_device_memory

    try:
        n = parse_device_memory(text)
    except KvMathError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n > VRAM_MAX_GIB * GIB:
        raise argparse.ArgumentTypeError(f"--device-memory must be at most {VRAM_MAX_GIB:,} GiB, got {_cut(text)}")
    return n / GIB


ANCHOR_MAX_MODEL_LEN = 180000  # the public calculator's default context (--anchor-defaults without --max-ctx)
AUTO_FIT = -1  # vLLM's --max-model-len -1 / auto (human_readable_int_or_auto, vllm/utils/argparse_utils.py 0.27.0)


def _vllm_int(name, maximum: int = MAX_TOKENS):
    """vLLM's integer flag syntax (``8192``, ``8k``, ``16K``; vllm.engine.arg_utils ``human_readable_int``),
    bounded to [1, maximum]."""
    def conv(text):
        try:
            v = engine_int(text, name, "vllm_human")  # kvmath.validate: vLLM's human_readable_int
        except KvMathError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        if v < 1:
            raise argparse.ArgumentTypeError(f"{name} must be >= 1, got {v:,}")
        if v > maximum:
            raise argparse.ArgumentTypeError(f"{name} must be <= {maximum:,}, got {v:,}")
        return v
    return conv


UNMODELLED_CACHE_DTYPES = {
    "fp8_inc": "Intel Gaudi's FP8 through Intel Neural Compressor",
    "fp8_ds_mla": "DeepSeek MLA's packed FP8 layout with its scales",
}
"""vLLM 0.24.0 ``CacheDType`` names (vllm/config/cache.py) kvmath has no byte rule for."""


def _cache_dtype(text):
    """``--kv-cache-dtype`` as ``vllm serve`` parses it: one of ``CacheDType``'s names exactly (vllm/config/cache.py;
    arg_utils gives argparse the Literal's values as ``choices``, which compares case-sensitively), so ``FP8`` or
    kvmath's own aliases (``bf16``, ``tq3``) are refused naming the spelling vLLM takes; kvmath's ``--kv-format``
    takes those. Whether the release knows the name is checked with the release."""
    from .formats import VLLM_FORMATS

    names = {"auto", "fp8"} | {f.flag or f.name for f in VLLM_FORMATS.values()}
    if text in names:
        return text
    if text in UNMODELLED_CACHE_DTYPES:
        raise argparse.ArgumentTypeError(f"{text!r} is a vLLM kv_cache_dtype kvmath does not price "
                                         f"({UNMODELLED_CACHE_DTYPES[text]}); priced: {', '.join(sorted(names))}")
    low = text.lower()
    spelled = low if low in names else next(
        (f.flag or f.name for f in VLLM_FORMATS.values() if low in (f.name, f.flag, *f.aliases)), None)
    hint = f"vllm serve spells it {spelled!r}; " if spelled else ""
    raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a vLLM kv_cache_dtype ({hint}valid: "
                                     f"{', '.join(sorted(names))})")


def _max_model_len(text):
    """``--max-model-len`` as vLLM 0.27 reads it: ``-1`` or ``auto`` (auto-fit, returned as AUTO_FIT), else a
    human-readable integer. The bound past the model's maximum is budget()'s."""
    if text.strip() == "-1" or text.strip().lower() == "auto":
        return AUTO_FIT
    return _vllm_int("--max-ctx", 10**30)(text)


def _json_object(flag: str, example: str, meaning: str):
    """An argparse type for a flag whose value is a JSON object (``example``), checked once the model is known;
    one line naming the flag for anything else."""
    def conv(text):
        from ...validate import parse_json

        try:
            cfg = parse_json(text, flag, 2000, max_depth=4)
        except KvMathError as e:
            if "not valid JSON" in str(e):
                raise argparse.ArgumentTypeError(f"{flag} is not JSON such as '{example}': {_cut(text)}") from None
            raise argparse.ArgumentTypeError(f"{e} ({_cut(text)})") from None
        if not isinstance(cfg, dict):
            raise argparse.ArgumentTypeError(f"{flag} must be a JSON object {meaning}, such as '{example}'")
        return cfg

    return conv


# vLLM's --limit-mm-per-prompt (a modality's value a count or {"count": n, ...}; budget.mm_limits checks it) and
# --mm-processor-kwargs (budget.mm_processor_pixels checks it)
_limit_mm_per_prompt = _json_object("--limit-mm-per-prompt", '{"image": 0, "video": 0}', "of modality -> count")
_mm_processor_kwargs = _json_object("--mm-processor-kwargs", '{"max_pixels": 1003520}', "of processor settings")


SPEC_KEYS_PRICED = ("method", "num_speculative_tokens")
SPEC_KEYS_UNPRICED = (
    "enforce_eager", "attention_backend", "moe_backend", "revision", "code_revision", "disable_padded_drafter_batch",
    "use_local_argmax_reduction", "prompt_lookup_max", "prompt_lookup_min", "suffix_decoding_max_tree_depth",
    "suffix_decoding_max_cached_requests", "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob",
    "rejection_sample_method", "synthetic_acceptance_rates", "synthetic_acceptance_length", "draft_sample_method",
    "disable_eagle_block_drop", "disable_lookahead_block_hashes", "enable_adaptive_verification",
    "fly_entropy_threshold", "fly_entropy_top_k", "fly_window_size", "xpress_topc", "dspark_draft_topk",
    "use_heterogeneous_vocab", "index_share_for_mtp_iteration")
"""``SpeculativeConfig`` fields (vllm/config/speculative.py, 0.24.0 and 0.33.0) that choose how drafts are sampled,
matched or verified, not what is allocated: accepted and left out of the price."""
SPEC_KEYS_REFUSED = {
    "model": "it names a separate draft checkpoint (loaded beside the target, its own weights and KV)",
    "quantization": "it quantises the drafter's weights apart from the target's",
    "draft_lm_head_quantization": "it quantises the drafter's lm_head apart from the target's",
    "kv_cache_dtype": "it gives the drafter's KV cache its own dtype (vLLM 0.33)",
    "tensor_parallel_size": "it shards the drafter apart from the target", "draft_tensor_parallel_size":
        "it shards the drafter apart from the target",
    "max_model_len": "it caps the drafter's context apart from the target's",
    "parallel_drafting": "it drafts every speculative token at once, with more query slots",
    "num_speculative_tokens_per_batch_size": "it changes the speculative token count with the batch size",
    "draft_load_config": "it loads the drafter apart from the target",
}
"""``SpeculativeConfig`` fields that change what a drafter allocates (weights, KV, shards, slots) in ways kvmath
does not model: refused naming the field. vLLM's config classes forbid extra fields (``@config``:
``ConfigDict(extra="forbid")``), so a key in none of the three lists is refused too; the ``*_config`` objects
vLLM fills in itself (target_model_config, draft_model_config, ...) are no JSON keys."""


def _speculative_config(text):
    """vLLM's ``--speculative-config`` JSON: the method and ``num_speculative_tokens``. Only the model's own MTP
    layers are modelled from it; a separate draft model needs its weights (--drafter-gb)."""
    if len(text) > 2000:
        raise argparse.ArgumentTypeError(f"--speculative-config is {len(text):,} characters long (at most 2,000)")
    from ...validate import parse_json

    try:
        cfg = parse_json(text, "--speculative-config", 2000, max_depth=8)
    except KvMathError as e:
        if "not valid JSON" in str(e):
            raise argparse.ArgumentTypeError(f"--speculative-config is not JSON: {_cut(text)}") from None
        raise argparse.ArgumentTypeError(f"{e} ({_cut(text)})") from None
    if not isinstance(cfg, dict):
        raise argparse.ArgumentTypeError("--speculative-config must be a JSON object")
    unknown = sorted(k for k in cfg if k not in (*SPEC_KEYS_PRICED, *SPEC_KEYS_UNPRICED, *SPEC_KEYS_REFUSED))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"--speculative-config key {_cut(unknown[0])} is not a field of vLLM's SpeculativeConfig (it forbids "
            f"extra fields, vllm/config/utils.py); keys: {', '.join(sorted(SPEC_KEYS_PRICED + SPEC_KEYS_UNPRICED))}")
    refused = next((k for k in SPEC_KEYS_REFUSED if k in cfg), None)
    if refused:
        raise argparse.ArgumentTypeError(
            f"--speculative-config {refused}: {SPEC_KEYS_REFUSED[refused]}, which kvmath does not price; drop it, "
            "or price a separate drafter with --drafter-gb and --num-speculative-tokens")
    method = str(cfg.get("method") or "")
    n = cfg.get("num_speculative_tokens")
    if isinstance(n, str) and n.strip().isdigit():  # vLLM's pydantic config takes "3" as 3
        n = int(n)
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1024:
        raise argparse.ArgumentTypeError(f"--speculative-config needs num_speculative_tokens in [1, 1024], got {_cut(str(n))}")
    if method not in ("mtp", "qwen3_next_mtp", "deepseek_mtp", "ernie_mtp", "ngram"):
        raise argparse.ArgumentTypeError(
            f"--speculative-config method {_cut(method)}: kvmath models the model's own MTP layers (method mtp) and "
            "ngram; for a draft model (EAGLE, draft_model) drop --speculative-config and give its weights with "
            "--drafter-gb and --num-speculative-tokens")
    return {"method": method, "num_speculative_tokens": n}


# vllm serve flags that change nothing kvmath prices (networking, naming, parsing, logging): accepted so a
# pasted line works, and listed in a note
IGNORED_VLLM_FLAGS = {
    "--host": 1, "--port": 1, "--served-model-name": "+", "--api-key": 1, "--trust-remote-code": 0,
    "--disable-log-requests": 0, "--disable-log-stats": 0, "--enable-log-requests": 0, "--uvicorn-log-level": 1,
    "--chat-template": 1, "--tool-call-parser": 1, "--enable-auto-tool-choice": 0, "--reasoning-parser": 1,
    "--download-dir": 1, "--tokenizer": 1, "--seed": 1, "--generation-config": 1, "--revision": 1,
    "--disable-uvicorn-access-log": 0, "--tokenizer-mode": 1, "--enable-chunked-prefill": 0,
    "--async-scheduling": 0,
    "--swap-space": 1, "--max-log-len": 1, "--allowed-local-media-path": 1, "--tool-parser-plugin": 1,
    "--chat-template-content-format": 1, "--response-role": 1, "--ssl-keyfile": 1, "--ssl-certfile": 1,
}
# vllm serve flags that change memory in ways kvmath does not model: refused rather than ignored
REFUSED_VLLM_FLAGS = {
    "--cpu-offload-gb": "weight offload to the CPU is not modelled",
    "--compilation-config": "kvmath prices vLLM's default capture sizes; --enforce-eager prices none",
    "--kv-cache-memory-bytes": "use the kvmath command (kvmath --engine vllm --kv-cache-memory-bytes ...) to plan "
                               "a fixed KV size",
    "--num-gpu-blocks-override": "use the kvmath command (kvmath --engine vllm) for a fixed block count",
    "--kv-offloading-size": "KV offloading is not modelled",
}


# vLLM's --dtype choices (vllm/config/model.py ModelDType: auto, half, float16, bfloat16, float, float32) by the
# torch dtype they name ("half" is float16, "float" float32: _STR_DTYPE_TO_TORCH_DTYPE)
_VLLM_DTYPES = {"auto": "auto", "half": "float16", "float16": "float16", "bfloat16": "bfloat16",
                "float": "float32", "float32": "float32"}


def _dtype(text):
    """vLLM's ``--dtype``, as the torch dtype it names (``half`` -> ``float16``, ``float`` -> ``float32``).
    ``auto`` is the checkpoint's; a 16-bit dtype is checked against the checkpoint's in :func:`_dtype_note` (same
    bytes when the checkpoint is 16-bit too); ``float32`` is priced by the budget (``budget._runtime_dtype_rules``:
    4-byte weights, auto KV cache and activations, Triton attention)."""
    key = text  # vLLM's argparse choices (ModelDType, vllm/config/model.py): exact, lower case, no spaces
    if key not in _VLLM_DTYPES:
        raise argparse.ArgumentTypeError(f"--dtype {_cut(text)} is not one vLLM takes; valid: "
                                         f"{', '.join(_VLLM_DTYPES)}")
    return _VLLM_DTYPES[key]


def _dtype_note(dtype, arch) -> str | None:
    """The note for ``--dtype`` ``float16`` / ``bfloat16`` on ``arch``, None for ``auto`` or the checkpoint's
    own dtype. Raises KvMathError when the checkpoint's dtype (``Architecture.dtype``, config ``dtype`` /
    ``torch_dtype``) is not 16-bit: vLLM would then load the weights at another size."""
    if dtype in (None, "auto") or dtype == arch.dtype:
        return None
    if dtype == "float32":
        if arch.dtype not in ("float16", "bfloat16"):
            raise KvMathError(f"--dtype float32 on a {arch.dtype} checkpoint: not modelled (valid here: auto)")
        return (f"--dtype float32: vLLM upcasts the {arch.dtype} checkpoint's unquantised tensors to float32 as it "
                "loads them (model_loader/weight_utils.py default_weight_loader copies into float32 parameters)")
    if arch.dtype not in ("float16", "bfloat16"):
        raise KvMathError(f"--dtype {dtype} on a {arch.dtype} checkpoint changes the weights' size; not modelled "
                          "(valid here: auto)")
    return (f"--dtype {dtype}: vLLM casts the {arch.dtype} checkpoint to {dtype}; both are 2 bytes per element, so "
            "the weights, activations and the auto KV cache take the same memory")


# --quantization names vLLM accepts for a checkpoint quantised with another name's method: on CUDA vLLM runs AWQ /
# GPTQ checkpoints with their Marlin kernels and takes the Marlin names for them (quantization/awq_marlin.py,
# gptq_marlin.py ``override_quantization_method``); the config spells compressed-tensors with a hyphen
_QUANT_ALIASES = {"awq_marlin": "awq", "gptq_marlin": "gptq", "compressed_tensors": "compressed-tensors"}


# the --quantization names of the checkpoints deployments.json prices by variant (vLLM's quantization registry:
# auto_round.py "auto-round", awq.py "awq", gptq.py "gptq", fp8.py "fp8", modelopt.py "modelopt" / "modelopt_fp4")
_VARIANT_METHODS = {"awq": ("awq", "awq_marlin"), "gptq": ("gptq", "gptq_marlin"), "fp8": ("fp8",),
                    "nvfp4": ("modelopt", "modelopt_fp4"), "autoround_int4": ("auto-round",)}


def _quantization_note(name: str, arch, kw: dict) -> str:
    """The note for ``--quantization NAME`` (vLLM's names, case as vLLM spells them) when it names the priced
    checkpoint's own method: the config's ``quantization_config.quant_method`` for the checkpoint's own tensors,
    the variant's method for a published variant (``_VARIANT_METHODS``); with ``--weights-gb`` the given size is
    what vLLM loads. Raises KvMathError otherwise: online quantisation of an unquantised checkpoint changes the
    weights in memory (not modelled), and vLLM refuses a method that is not the checkpoint's (config/model.py
    "Quantization method specified in the model config ... does not match")."""
    from .budget import _own_checkpoint, config_quant_method

    asked = str(name)
    if kw.get("weights_gb_total") is not None:
        return (f"--quantization {asked[:40]}: the weights are the given {kw['weights_gb_total']:g} GB (give the size "
                "vLLM loads after quantising)")
    if not _own_checkpoint(arch, kw.get("weights_variant")):
        from .budget import weights_gb

        variant, _ = weights_gb(arch.name, kw.get("weights_variant") or "default")
        methods = _VARIANT_METHODS.get(variant, ())
        if asked not in methods:
            raise KvMathError(f"--quantization {_cut(asked)} is not the priced {variant} checkpoint's method; valid "
                              f"here: {', '.join(methods) or 'none (leave the flag out)'}")
        return f"--quantization {asked}: the priced {variant} checkpoint's own method"
    own = config_quant_method(arch)
    if not own and asked == "fp8":  # online FP8: weights.online_fp8_checkpoint prices what vLLM holds
        kw["quantization"] = "fp8"
        return (f"--quantization fp8 on {arch.name}'s unquantised checkpoint: vLLM quantises the linear layers to "
                "FP8 (e4m3, one scale per layer) as it loads them")
    if not own:
        raise KvMathError(f"--quantization {_cut(asked)} on {arch.name}'s unquantised checkpoint is online "
                          "quantisation (the weights change in memory), not modelled (fp8 is); give the quantised "
                          "checkpoint (its Hub id or folder) or the size vLLM loads (--weights-gb)")
    if _QUANT_ALIASES.get(asked, asked) != own:
        raise KvMathError(f"--quantization {_cut(asked)} does not match the checkpoint's quant_method {own!r} (vLLM "
                          f"refuses the mismatch at start-up); valid here: {own}")
    return f"--quantization {asked}: the checkpoint's own method ({own}); the weights are its tensors, as without the flag"


def _opt_level(text):
    """vLLM's ``-O`` compilation level: 3 (its V1 default, piecewise CUDA graphs) is what kvmath prices."""
    if text.strip() not in ("3",):
        raise argparse.ArgumentTypeError(f"-O{text[:10]} is not modelled: kvmath prices vLLM's default -O3 "
                                         "(--enforce-eager prices no CUDA graphs)")
    return 3


class _Ignored(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        namespace.ignored_flags = getattr(namespace, "ignored_flags", []) + [option_string]


def _refuse(flag: str, why: str):
    class _Refused(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            parser.error(f"{flag} is not modelled by kvmath-fit: {why}")
    return _Refused


def _dash_option(arg: str) -> str:
    """vLLM accepts ``--max_model_len`` for ``--max-model-len`` (its FlexibleArgumentParser); so does kvmath-fit."""
    if arg.startswith("--") and "_" in arg.split("=", 1)[0]:
        name, eq, value = arg.partition("=")
        return name.replace("_", "-") + eq + value
    return arg


def _strip_serve(argv: list[str]) -> list[str]:
    """A pasted ``vllm serve MODEL ...`` line (also ``python -m vllm.entrypoints.openai.api_server``) without its
    command words."""
    argv = list(argv)
    if argv[:2] == ["vllm", "serve"]:
        return argv[2:]
    if argv[:1] == ["serve"]:
        return argv[1:]
    if argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"] or \
            argv[:3] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]:
        return argv[3:]
    return argv


def _add_multimodal_flags(p) -> None:
    """vLLM's multimodal flags that change memory: ``--limit-mm-per-prompt``, ``--mm-processor-kwargs``,
    ``--language-model-only``."""
    p.add_argument("--limit-mm-per-prompt", type=_limit_mm_per_prompt, default=None,
                   help="vLLM's JSON, e.g. '{\"image\": 0, \"video\": 0}': a tower whose modalities are all 0 is neither "
                        "loaded nor profiled; the profiled modality's limit bounds the encoder's profiling batch")
    p.add_argument("--mm-processor-kwargs", type=_mm_processor_kwargs, default=None,
                   help="vLLM's JSON for the multimodal processor: max_pixels / size.longest_edge set the image the "
                        "Qwen 3.5 / 3.6 vision tower is profiled with; other keys are refused")
    p.add_argument("--language-model-only", action="store_true", default=False,
                   help="vLLM --language-model-only: every modality's limit 0 (no vision tower)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kvmath-fit",
                description="Per-card vLLM memory budget and verdict (boots / refused / out of memory), "
                            "with the anchor calculator's flags.",
                epilog=f"GiB = 2^30 B, GB = 1e9 B; figures are per card. Every --json field: kvmath-fit --json-schema. "
                       f"{EXIT_HELP}")
    p.add_argument("model_tag", nargs="?", default=None, metavar="MODEL",
                   help="as in 'vllm serve MODEL': a known model id or HF repo (as --model), or a config.json / "
                        "model folder (as --config); a pasted 'vllm serve' prefix is dropped")
    from ...facts import cards, known_models
    from .releases import DEFAULT as DEFAULT_VLLM_VERSION, covered

    p.add_argument("--model", help=f"a known model id or its HF repo ({', '.join(sorted(known_models()))}); default: "
                                   "from --compose; --anchor-defaults alone prices qwen3.6-27b")
    p.add_argument("--config", help="any config.json or model folder (path); the weights come from the folder's "
                                    "safetensors headers, or from config.json + quantization_config (the layouts of "
                                    "kvmath.model.checkpoint.ESTIMATED_MODEL_TYPES), unless --weights-gb gives the "
                                    "checkpoint size")
    p.add_argument("--compose", help="an anchor preset (kvmath/data/presets.json): the public calculator's deployment "
                                     "by name, its defaults for what the preset leaves out")
    p.add_argument("--anchor-defaults", action="store_true",
                   help="take the public calculator's (club-3090 kv-calc) defaults for what the line leaves out "
                        "(fp8_e5m2, gpu_memory_utilization 0.95, one sequence, 180,000 tokens, rtx3090, its "
                        "checkpoint) instead of vLLM's")
    p.add_argument("--kv-format", dest="kv_format", type=lambda t: "auto" if t.strip().lower() == "auto" else t,
                   help="vLLM kv_cache_dtype, kvmath's names and aliases too (bf16, tq3; default: auto, as vllm "
                        "serve; --compose the preset's; --anchor-defaults fp8_e5m2)")
    p.add_argument("--kv-cache-dtype", dest="kv_format", type=_cache_dtype,
                   help="vLLM's own flag, spelled as vllm serve takes it (auto, bfloat16, float16, fp8, fp8_e4m3, "
                        "fp8_e5m2, turboquant_*, ...)")
    p.add_argument("--max-ctx", "--max-model-len", dest="max_ctx", type=_max_model_len,
                   help="max_model_len, as vLLM reads it (8192, 32k, 128K; -1 or auto: vLLM's auto-fit, the "
                        "model's maximum reduced to what the KV memory holds); default: the model's derived "
                        "maximum, as vllm serve; --compose the preset's; --anchor-defaults 180000 or the model "
                        "maximum if smaller")
    p.add_argument("--max-num-seqs", type=_positive_int("--max-num-seqs"), help="max_num_seqs (default: vllm serve's for the card and release; --compose the preset's; "
                        "--anchor-defaults 1)")
    p.add_argument("--sequences", type=_positive_int("--sequences"), help="alias of --max-num-seqs")
    p.add_argument("--tp", "--tensor-parallel-size", "-tp", dest="tp", type=_positive_int("--tp", MAX_TP),
                   help="tensor_parallel_size (default: preset, else 1)")
    p.add_argument("--pipeline-parallel-size", "-pp", dest="pp", type=_positive_int("--pipeline-parallel-size", MAX_TP),
                   default=1, help="pipeline stages (vLLM's layer split; each stage's own budget, the pool the "
                                   "minimum over stages)")
    p.add_argument("--data-parallel-size", "-dp", dest="dp", type=_positive_int("--data-parallel-size", MAX_TP),
                   default=1, help="independent engines (one pool each)")
    p.add_argument("--enable-expert-parallel", action="store_true",
                   help="place MoE experts whole over TP x DP ranks instead of slicing them over TP")
    p.add_argument("--layer-partition", default=None, help="VLLM_PP_LAYER_PARTITION: layers per stage, e.g. 21,22,21")
    p.add_argument("--gpus", type=_positive_int("--gpus", MAX_TP),
                   help="GPUs for the engine: without --tp, priced as --tensor-parallel-size N")
    p.add_argument("--mem-util", "--gpu-memory-utilization", dest="mem_util", type=_mem_util,
                   help="gpu_memory_utilization (default: the release's, 0.92 from vLLM 0.20; --compose the "
                        "preset's; --anchor-defaults 0.95)")
    p.add_argument("--enforce-eager", action="store_true", default=False,
                   help="vLLM --enforce-eager: no CUDA graphs (no capture memory, no Mamba decode-block check)")
    p.add_argument("--enable-prefix-caching", dest="enable_prefix_caching", action="store_true", default=None,
                   help="vLLM's default for generative models; sets the Mamba cache mode of hybrid models")
    p.add_argument("--no-enable-prefix-caching", dest="enable_prefix_caching", action="store_false")
    p.add_argument("--speculative-config", type=_speculative_config, default=None,
                   help="vLLM's JSON, e.g. '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}' (MTP only; "
                        "other methods need --drafter-gb)")
    for flag, nargs in IGNORED_VLLM_FLAGS.items():
        p.add_argument(flag, nargs=nargs, action=_Ignored, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for flag, why in REFUSED_VLLM_FLAGS.items():
        p.add_argument(flag, nargs="?", action=_refuse(flag, why), default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    _add_multimodal_flags(p)
    p.add_argument("--quantization", "-q", dest="quantization", default=None,
                   help="vLLM --quantization: the checkpoint's own method, or fp8 of an unquantised checkpoint (online FP8)")
    p.add_argument("--dtype", type=_dtype, default=None, help="vLLM --dtype: auto, half, float16, bfloat16, float or float32")
    p.add_argument("-O", dest="opt_level", type=_opt_level, default=None, help="vLLM -O3 (its default) only")
    p.add_argument("--block-size", type=_vllm_int("--block-size", 1024), default=None,
                   help="vLLM --block-size (KV block in tokens; default 16, or the hybrid alignment)")
    p.add_argument("--vram", type=_vram, help="card memory as PyTorch reports it, GiB ('25.4GB' for 1e9 B)")
    p.add_argument("--device-memory", dest="device_memory", type=_device_memory,
                   help="memory of any other device as its runtime reports it, with its unit ('24GiB', '24576MiB', "
                        "'25.4GB'; kvmath.units.parse_bytes, as the front door's --device-memory)")
    p.add_argument("--card", help="a known card by id or the name nvidia-smi / rocm-smi / PyTorch print (rtx3090, "
                                  "'NVIDIA GeForce RTX 3090', a100, mi300x, m3-max-128gb, ...: kvmath/data/cards.json); "
                                  "default: this machine's GPU (nvidia-smi, rocm-smi), said so, else a refusal; "
                                  "--anchor-defaults / --compose take the anchor's rtx3090 and say so")
    mtp = p.add_mutually_exclusive_group()
    mtp.add_argument("--mtp", dest="mtp", action="store_true", default=None, help="use the model's MTP drafter")
    mtp.add_argument("--no-mtp", dest="mtp", action="store_false", help="no MTP drafter")
    p.add_argument("--drafter-gb", type=_nonneg_float("--drafter-gb"), help="total drafter weights, GB (1e9 B); 0 removes it")
    p.add_argument("--dflash-draft-gb", type=_nonneg_float("--dflash-draft-gb"), help="DFlash drafter weights, GB")
    p.add_argument("--num-speculative-tokens", type=_positive_int("--num-speculative-tokens", 1024),
                   help="speculative tokens (default: the drafter's)")
    p.add_argument("--weights-variant", help="checkpoint: hf (the model's own, the default), or a published one of "
                                             "the model (int4, awq, gptq, fp8, nvfp4, ...; 'default' is the public "
                                             "calculator's)")
    p.add_argument("--weights-gb", type=_nonneg_float("--weights-gb", positive=True), help="total checkpoint GB (1e9 B), for --config")
    p.add_argument("--max-num-batched-tokens", type=_vllm_int("--max-num-batched-tokens"),
                   help="max_num_batched_tokens (default: preset, else vllm serve's default for the card: "
                   "2048 below 70 GiB or on an A100, 8192 from 70 GiB, 16384 from 160 GiB in vLLM 0.28+)")
    p.add_argument("--vllm-version", help=f"whose rules ({covered(short=True)}; default {DEFAULT_VLLM_VERSION})")
    p.add_argument("--attention-backend", help="vLLM attention backend (FLASH_ATTN, FLASHINFER, TRITON_ATTN); "
                   "decides only whether the KV format runs on the card")
    p.add_argument("--calibration", action="store_true",
                   help="predicted vs measured for every measured boot, with the logged weights and with kvmath's own")
    for flag, text in (("--solve-max-ctx", "largest max_model_len that boots"), ("--json", "JSON output"),
                       ("--no-solve", "the verdict only: the largest max_model_len is not searched (front door option)"),
                       ("--offline", "a Hub id is answered from the HF cache only, as with HF_HUB_OFFLINE=1")):
        p.add_argument(flag, action="store_true", help=text)
    p.add_argument("--kv-breakdown", action="store_true", help="cache buckets (demand) and vLLM's pool groups")
    p.add_argument("--kv-layout", choices=KV_LAYOUTS, default="auto", help="label only (auto: from the config)")
    p.add_argument("--include-draft-kv", action="store_true", help="reserve --draft-kv-gb out of the KV memory")
    p.add_argument("--draft-kv-gb", type=_nonneg_float("--draft-kv-gb"), default=0.0,
                   help="drafter KV per card, GB (not divided by TP)")
    p.add_argument("--compressed-layers", type=_int_in("--compressed-layers", -MAX_TOKENS, MAX_TOKENS), default=0)
    p.add_argument("--compression-ratio", type=_int_in("--compression-ratio", -MAX_TOKENS, MAX_TOKENS), default=128)
    p.add_argument("--compressed-head-dim", type=_int_in("--compressed-head-dim", -MAX_TOKENS, MAX_TOKENS))
    p.add_argument("--indexer-ratio-layers", type=_int_in("--indexer-ratio-layers", -MAX_TOKENS, MAX_TOKENS),
                   default=0)
    p.add_argument("--indexer-compress-ratio", type=_int_in("--indexer-compress-ratio", -MAX_TOKENS, MAX_TOKENS),
                   default=4)
    p.add_argument("--indexer-head-dim", type=_int_in("--indexer-head-dim", -MAX_TOKENS, MAX_TOKENS))
    p.add_argument("--indexer-format", choices=tuple(INDEXER_BYTES), default="fp4")
    p.add_argument("--debug", action="store_true", help="print the traceback of an internal error (exit 3)")
    refuse_repeats(p)  # --tp 2 --tp 4: refused, not the last one silently
    return p


def _given_besides(parser, args, allowed: tuple) -> list[str]:
    """The flags of ``args`` set to something else than a bare command line sets them, other than ``allowed``
    (dests), as their option names; the serving-only flags set aside are counted too."""
    base = vars(parser.parse_args([]))
    names = {}
    for action in parser._actions:
        names.setdefault(action.dest, action.option_strings[-1] if action.option_strings else action.dest)
    out = [names.get(k, k) for k, v in vars(args).items()
           if k in base and k not in allowed and k != "_kvmath_seen" and v != base[k]]
    out += list(getattr(args, "ignored_flags", None) or ())
    return list(dict.fromkeys(out))


def _check_flags(args) -> None:
    """The command line's own contradictions and empty values, before anything is read. Raises KvMathError."""
    for flag in ("model", "config", "compose", "card", "kv_format", "weights_variant", "vllm_version",
                 "attention_backend", "layer_partition", "quantization"):
        v = getattr(args, flag, None)
        if v is not None and not str(v).strip():
            raise KvMathError(f"--{flag.replace('_', '-')} is empty; give a value or leave the flag out")
    if args.sequences and args.max_num_seqs and args.sequences != args.max_num_seqs:
        raise KvMathError("--sequences and --max-num-seqs disagree; pass only one value")
    if args.config and args.model:
        raise KvMathError("pass --model or --config, not both")
    if args.config and args.compose:
        raise KvMathError("--compose presets belong to --model ids, not to --config files")
    for name, v in (("--compressed-head-dim", args.compressed_head_dim), ("--indexer-head-dim", args.indexer_head_dim)):
        if v is not None and v <= 0:  # a width, range-checked whether or not a layer count uses it
            raise KvMathError(f"{name} must be > 0 (a head width), got {v}")
    for name, v in (("--compressed-layers", args.compressed_layers), ("--indexer-ratio-layers", args.indexer_ratio_layers)):
        if v < 0:
            raise KvMathError(f"{name} must be >= 0, got {v}")
    if args.compressed_layers and not (args.compressed_head_dim and args.compressed_head_dim > 0):
        raise KvMathError("--compressed-layers requires --compressed-head-dim > 0")
    if args.indexer_ratio_layers and not (args.indexer_head_dim and args.indexer_head_dim > 0):
        raise KvMathError("--indexer-ratio-layers requires --indexer-head-dim > 0")
    if args.layer_partition and (getattr(args, "pp", None) or 1) == 1:
        raise KvMathError("--layer-partition (VLLM_PP_LAYER_PARTITION) splits the layers over pipeline stages: give "
                          "--pipeline-parallel-size too, or leave it out")
    if args.compression_ratio <= 0 or args.indexer_compress_ratio <= 0:
        raise KvMathError("--compression-ratio and --indexer-compress-ratio must be > 0")


def _model_named(args, vllm_mode: bool) -> tuple[str, bool]:
    """(the model: a known id, a config path or Hub id, or a preset's / the anchor's default; whether it was named
    by its HF repository). A Hub id kvmath has no data for becomes ``args.config``. Raises KvMathError."""
    from . import budget as B
    from ...facts import known_models

    as_repo = False
    if args.model and args.model not in known_models():
        from ...facts import find_model
        from ...hub import parse_hub_id

        ref = parse_hub_id(args.model)
        if ref is not None and (ref.revision or ref.quant or find_model(ref.repo) is None):
            # any other Hub id: its own config.json and safetensors headers (kvmath.hub), as --config
            args.config, args.model = args.model, None
            if args.compose:
                raise KvMathError("--compose presets belong to --model ids, not to Hub ids kvmath has no data for")
    if args.model and args.model not in known_models():
        from ...facts import resolve_model

        entry = resolve_model(args.model)  # an HF repo name, or "did you mean ...?" (KvMathError)
        as_repo = args.model.strip().lower() == entry["hf_repo"].lower()
        args.model = entry["id"]
    if vllm_mode and not (args.model or args.config):
        raise KvMathError("which model? give it as in vllm serve MODEL [flags], or with --model / --config (a known "
                          "id, a Hub id such as Qwen/Qwen3.6-27B, or a model folder); --anchor-defaults alone prices "
                          "the public calculator's qwen3.6-27b")
    return args.config or args.model or (B.model_for_preset(args.compose) if args.compose else "qwen3.6-27b"), as_repo


def _tp_of_gpus(args, vals: dict, tp: int, notes: list) -> int:
    """TP after ``--gpus``: the GPUs a user names are the ones the deployment splits over (TP x PP x DP); without
    ``--tensor-parallel-size`` they set it. Raises KvMathError when they are too few."""
    if args.gpus is None:
        return tp
    others = (getattr(args, "pp", None) or 1) * (getattr(args, "dp", None) or 1)
    if not args.tp and not vals.get("tp"):
        if args.gpus < others:
            raise KvMathError(f"--gpus {args.gpus} is fewer than the {others} GPUs of pipeline x data parallel")
        if args.gpus % others:
            raise KvMathError(f"--gpus {args.gpus} is not a multiple of pipeline x data parallel = {others}")
        tp = args.gpus // others
        if tp > 1:
            notes.append(f"--gpus {args.gpus} without --tensor-parallel-size: priced at TP {tp}")
    used = tp * others
    if args.gpus < used:
        raise KvMathError(f"--gpus {args.gpus} is fewer than the {used} GPUs of TP {tp} x PP x DP")
    if args.gpus > used:
        notes.append(f"--gpus {args.gpus}: the deployment uses {used} of them (TP {tp} x PP x DP)")
    return tp


def _refuse_bf16_below_sm80(dtype, card_id) -> None:
    """``--dtype bfloat16`` on an NVIDIA card below sm_80 stops vLLM before it loads anything (platforms/cuda.py
    ``check_if_supports_dtype``: "Bfloat16 is only supported on GPUs with compute capability of at least 8.0 ...
    --dtype=half"); ``auto`` falls back to float16 instead (``budget._card_dtype``). Raises KvMathError."""
    if dtype != "bfloat16" or not card_id:
        return
    from . import budget as B

    entry = B.card(card_id)
    cc = entry.get("compute_capability")
    if entry.get("vendor", "nvidia") == "nvidia" and isinstance(cc, int) and cc < 80:
        raise KvMathError(f"--dtype bfloat16 on {card_id} (sm_{cc}): vLLM refuses it at start-up ('Bfloat16 is only "
                          "supported on GPUs with compute capability of at least 8.0', platforms/cuda.py); use "
                          "--dtype half, or auto (vLLM then runs the checkpoint in float16)")


def _card_chosen(args, kw: dict, vllm_mode: bool, notes: list) -> None:
    """``kw``'s card (or custom memory) from ``--card`` / ``--device-memory`` / ``--vram``, else this machine's GPU
    (the anchor calculator's rtx3090 with ``--anchor-defaults`` / ``--compose``), each said in a note. Raises
    KvMathError."""
    from . import budget as B

    if args.device_memory is not None:
        if args.vram is not None:
            raise KvMathError("pass --device-memory or --vram, not both")
        args.vram = args.device_memory
    if args.vram is not None and args.card:
        raise KvMathError("pass --card or --device-memory / --vram, not both")
    if args.vram is not None:
        kw.update(card=None, total_gib=args.vram)
    elif args.card:
        kw["card"] = B.card(args.card)["id"]
    elif vllm_mode:  # no card named: this machine's GPU, said so, or a refusal (never a silent default)
        from ...cards import detect

        found = detect()
        if found is None:
            raise KvMathError("which card? give --card (e.g. --card rtx3090, --card 'NVIDIA H100 80GB HBM3') or "
                              "--device-memory (e.g. 24GiB, as PyTorch reports the card); no nvidia-smi, rocm-smi or "
                              "system_profiler answered on this machine (--anchor-defaults takes the public "
                              "calculator's rtx3090)")
        kw["card"] = found[0]["id"]
        notes.append(f"card: {found[0]['id']} ({found[0]['name']}, {found[0]['total_gib']} GiB as the runtime reports "
                     f"it), this machine's GPU as {found[1]}; pass --card for another")
    else:
        kw["card"] = "rtx3090"
        notes.append("card: rtx3090 (NVIDIA GeForce RTX 3090, 23.69 GiB), the anchor calculator's card, as no --card "
                     "was given")
    if kw.get("card"):
        c = B.card(kw["card"])
        if c.get("runtime") == "metal":
            raise KvMathError(f"--card {kw['card']}: vLLM does not run on Apple silicon (Metal); price it with the "
                              "llama.cpp engine (kvmath --engine llama.cpp, python -m kvmath.engines.llamacpp.fit)")
        if c.get("runtime") == "rocm":
            notes.append(f"{c['name']}: vLLM on ROCm; the card's memory is HIP's total, but which KV formats and "
                         "attention backends ROCm runs is not checked (compute capability is NVIDIA's)")


def _max_model_len_default(args, vals: dict, arch, kw: dict, vllm_mode: bool) -> None:
    """``kw["max_model_len"]`` when the line leaves it out (vLLM's derived maximum, the anchor's
    180,000 within the model otherwise) or asks vLLM's auto-fit. Raises KvMathError."""
    if not (args.max_ctx or vals.get("max_ctx")) and vllm_mode:
        top = arch.derived_max_model_len or arch.max_position_embeddings
        if not top:
            raise KvMathError(f"{arch.name}'s config states no length vLLM reads (max_position_embeddings, "
                              "model_max_length, ...); give --max-model-len")
        kw["max_model_len"] = top  # vLLM's default: the derived maximum (vllm/config/model.py)
    elif not (args.max_ctx or vals.get("max_ctx")) and arch.max_position_embeddings:
        kw["max_model_len"] = min(ANCHOR_MAX_MODEL_LEN, arch.max_position_embeddings)  # within the model
    if args.max_ctx == AUTO_FIT:
        # vllm/config/model.py _get_and_verify_max_len (0.27.0 l.2336-2339): -1 starts from the derived maximum;
        # the KV planner then lowers it to what the memory holds (kv_cache_utils.py _auto_fit_max_model_len)
        top = arch.derived_max_model_len or arch.max_position_embeddings
        if not top:
            raise KvMathError(f"--max-model-len auto: {arch.name}'s config states no max_position_embeddings to "
                              "start the auto-fit from; give a length")
        kw["max_model_len"] = top


def _anchor_defaults_note(args, vals: dict, model: str, kw: dict) -> str | None:
    """The note naming the public calculator's defaults ``--anchor-defaults`` / ``--compose`` took for what the line
    left out (never a silent default), or None when everything was given."""
    taken = [f"{name} {value}" for name, value, given in (
        ("model", model, args.config or args.model or args.compose),
        ("kv-cache-dtype", kw["kv_format"], args.kv_format or vals.get("kv_format")),
        ("gpu_memory_utilization", kw["mem_util"], args.mem_util or vals.get("mem_util")),
        ("max_num_seqs", kw["max_num_seqs"], args.max_num_seqs or args.sequences or vals.get("max_num_seqs")),
        ("max_model_len", f"{kw['max_model_len']:,}" + (
            f" ({ANCHOR_MAX_MODEL_LEN:,} capped at the model's maximum)" if kw["max_model_len"] != ANCHOR_MAX_MODEL_LEN
            else ""),
         args.max_ctx or vals.get("max_ctx")),
        ("checkpoint", f"{kw['weights_variant']} ({_published_default(model)})",
         args.weights_variant or vals.get("weights") or args.weights_gb is not None or args.config)) if not given]
    return (f"not given, so the public calculator's defaults: {', '.join(taken)} (asked for by "
            f"{'--compose' if args.compose else '--anchor-defaults'}; without it a line takes vLLM's own)"
            ) if taken else None


def _published_default(model: str) -> str:
    """What the anchor's ``default`` checkpoint of ``model`` is, for its note."""
    from . import budget as B

    dep = B.deployments().get(model)
    return f"{dep['default_weights']}, the public calculator's" if dep else "the model's own tensors"


def _vllm_defaults_note(args, vals: dict, arch, kw: dict) -> str | None:
    """The note naming the vLLM defaults a line took for the KV format and the length (the others name their own
    source in their notes: gpu_memory_utilization, max_num_seqs, the checkpoint, the card), or None."""
    taken = []
    if not (args.kv_format or vals.get("kv_format")):
        dtype = getattr(args, "dtype", None)
        dtype = arch.dtype if dtype in (None, "auto") else dtype  # vLLM's auto cache takes the model dtype it runs
        taken.append(f"kv-cache-dtype auto (the model dtype, {dtype})")
    if not (args.max_ctx or vals.get("max_ctx")):
        taken.append(f"max-model-len {kw['max_model_len']:,} (the model's derived maximum, vllm/config/model.py)")
    return f"not given, so vLLM's defaults: {', '.join(taken)}" if taken else None


def _drafter(args, arch, vals: dict, kw: dict, notes: list) -> None:
    """The speculative decoding of the line (``--speculative-config``, ``--mtp``, a preset's drafter, DFlash,
    ``--drafter-gb``) into ``kw``'s ``num_speculative_tokens``, ``drafter_gb`` and ``dflash``. Raises KvMathError."""
    from . import budget as B

    if args.speculative_config:
        n = args.speculative_config["num_speculative_tokens"]
        if args.num_speculative_tokens and args.num_speculative_tokens != n:
            raise KvMathError("--speculative-config and --num-speculative-tokens disagree; pass one")
        if args.speculative_config["method"] == "ngram":
            # n-gram lookup proposes tokens from the prompt: no draft weights, no draft KV layers
            args.num_speculative_tokens, args.mtp = n, False
            kw["drafter_kv_layers"] = 0
        else:
            if args.mtp is False:
                raise KvMathError("--speculative-config asks for MTP and --no-mtp refuses it; pass one")
            if not arch.mtp_num_hidden_layers and not B.deployments().get(arch.name, {}).get("drafters"):
                raise KvMathError(f"--speculative-config method {args.speculative_config['method']}: {arch.name}'s "
                                  "config declares no MTP layers (mtp_num_hidden_layers / num_nextn_predict_layers)")
            args.mtp, args.num_speculative_tokens = True, n
    drafters = B.deployments().get(arch.name, {}).get("drafters", {})
    drafter = vals.get("drafter")
    mtp = args.mtp if args.mtp is not None else vals.get("mtp", False)
    if args.mtp is False and drafter in ("mtp_builtin", "assistant_mtp"):
        drafter = None
    if args.mtp is True and drafter == "dflash":
        notes.append(f"--mtp replaces preset {args.compose}'s DFlash drafter")
        drafter = None
    if mtp and drafter is None:
        drafter = next((d for d in ("mtp_builtin", "assistant_mtp") if d in drafters), None)
        if drafter is None and not arch.mtp_num_hidden_layers:
            raise KvMathError(f"--mtp: no MTP drafter known for {arch.name}; give --drafter-gb and "
                              "--num-speculative-tokens")
    if args.dflash_draft_gb:
        drafter = "dflash"
    dgb = drafters.get(drafter, {}).get("gb", vals.get("drafter_gb") or 0.0) if drafter else 0.0
    if args.dflash_draft_gb:
        dgb = args.dflash_draft_gb
    if args.drafter_gb is not None:
        dgb = args.drafter_gb
        if dgb == 0 and drafter:  # the anchor's "--drafter-gb 0 removes a drafter", done right
            notes.append(f"--drafter-gb 0: no drafter (the {drafter} drafter is removed with its speculative tokens)")
            drafter = None
    n_spec = args.num_speculative_tokens or (drafters.get(drafter, {}).get("num_speculative_tokens", 0) if drafter
                                             else 0)
    if mtp and not n_spec and arch.mtp_num_hidden_layers:
        n_spec = 3
    kw.update(num_speculative_tokens=n_spec, drafter_gb=dgb)
    if drafter == "dflash":
        kw["dflash"] = True


def _available_words(available_kv: int) -> str:
    """The KV memory left, as the single-stage breakdown words it: ``12.34 GiB``, or ``none (X GiB short)`` when the
    rest of the budget already exceeds the requested memory (a negative figure is not a cache size)."""
    if available_kv < 0:
        return f"none ({-available_kv / GIB:.2f} GiB short)"
    return f"{available_kv / GIB:.2f} GiB"


def _resolve(args, env=None) -> tuple[str, dict, list[str]]:
    """(model id or config path, budget keyword arguments, notes); ``env``: the environment the command
    read (``VLLM_ALLOW_LONG_MAX_MODEL_LEN``, ``VLLM_PP_LAYER_PARTITION``, which fills ``--layer-partition``),
    passed in. Raises KvMathError."""
    from . import budget as B

    notes: list[str] = []
    part = (env or {}).get("VLLM_PP_LAYER_PARTITION")
    if part is not None and getattr(args, "layer_partition", None) is None:
        # vllm/distributed/utils.py get_pp_indices reads envs.VLLM_PP_LAYER_PARTITION ("a,b,c", one per stage)
        args.layer_partition = part
        notes.append(f"VLLM_PP_LAYER_PARTITION={part[:60]} read as --layer-partition (vLLM's get_pp_indices reads it)")
    elif part is not None and part != args.layer_partition:
        raise KvMathError(f"VLLM_PP_LAYER_PARTITION={part[:60]!r} and --layer-partition {args.layer_partition[:60]!r} "
                          "disagree; vLLM reads only the environment variable")
    _check_flags(args)
    vllm_mode = getattr(args, "vllm_mode", True)  # vLLM's defaults unless --anchor-defaults / --compose
    model, as_repo = _model_named(args, vllm_mode)
    pr = B.preset(model, args.compose) if args.compose else None
    vals = {}
    if pr:
        vals = dict(pr)
        for k, v in pr.get("compose", {}).items():
            notes.append(f"preset {args.compose}: {k} = {v} as the compose file sets it (the anchor priced {pr[k]})")
            vals[k] = v
    # defaults: vLLM's own (kv_cache_dtype auto, gpu_memory_utilization 0.92 from 0.20,
    # max_num_seqs the card's serve default, the model's derived max_model_len; vllm/engine/arg_utils.py), the
    # anchor calculator's otherwise (fp8_e5m2, 0.95, one sequence, 180,000 tokens)
    kv = args.kv_format or vals.get("kv_format") or ("auto" if vllm_mode else "fp8_e5m2")
    kv = KV_ALIASES.get(kv, kv)
    tp = _tp_of_gpus(args, vals, args.tp or vals.get("tp") or 1, notes)
    seqs = args.max_num_seqs or args.sequences or vals.get("max_num_seqs") or (None if vllm_mode else 1)
    mem = args.mem_util or vals.get("mem_util")
    if not mem and vllm_mode:  # the release's own default (0.92 from 0.20), said so
        from .settings import serve_gpu_memory_utilization

        mem, mem_note = serve_gpu_memory_utilization(args.vllm_version)
        notes.append(mem_note)
    mem = mem or 0.95
    kw = dict(kv_format=kv, tp=tp, max_model_len=args.max_ctx or vals.get("max_ctx") or ANCHOR_MAX_MODEL_LEN,
              max_num_seqs=seqs, mem_util=mem,
              max_num_batched_tokens=args.max_num_batched_tokens or vals.get("max_num_batched_tokens") or None)  # None: vllm serve's default for the card and version (budget() says which in its notes)
    from ...model.load import load_architecture

    arch = load_architecture(model)
    _max_model_len_default(args, vals, arch, kw, vllm_mode)
    if args.enforce_eager:
        kw["enforce_eager"] = True
    if args.language_model_only:  # MultiModalConfig.get_limit_per_prompt: 0 for every modality
        kw["limit_mm_per_prompt"] = {"image": 0, "video": 0, "audio": 0}
    elif args.limit_mm_per_prompt is not None:
        kw["limit_mm_per_prompt"] = args.limit_mm_per_prompt
    if args.mm_processor_kwargs is not None:
        kw["mm_processor_kwargs"] = args.mm_processor_kwargs
    from .settings import long_max_model_len_allowed

    if long_max_model_len_allowed(env):
        kw["allow_long_max_model_len"] = True  # as vllm serve reads the environment (vllm/envs.py)
    if args.block_size is not None:  # checked with the other settings (VllmSettings: vLLM's BlockSize)
        kw["block_size"] = args.block_size
    if args.enable_prefix_caching is not None:
        kw["enable_prefix_caching"] = args.enable_prefix_caching
    ignored = getattr(args, "ignored_flags", [])
    if ignored:
        notes.append(f"ignored (they do not change memory): {', '.join(dict.fromkeys(ignored))}")
    dtype_note = _dtype_note(getattr(args, "dtype", None), arch)
    if dtype_note:
        notes.append(dtype_note)
    if getattr(args, "dtype", None) == "float32":
        kw["dtype"] = "float32"  # the budget prices the float32 run (budget._runtime_dtype_rules)
    _drafter(args, arch, vals, kw, notes)
    if args.weights_gb is not None:
        if args.weights_gb <= 0:
            raise KvMathError("--weights-gb must be positive")
        kw["weights_gb_total"] = args.weights_gb
    elif args.config and arch.name not in B.deployments():
        B.checkpoint_weights_per_rank(arch, 1, vllm_version=args.vllm_version)  # refuses early, naming what is missing
    if args.weights_variant:  # a variant the model has no checkpoint of is the line's fault, not the card's
        B.check_weights_variant(arch, args.weights_variant, sized=args.weights_gb is not None)
    _card_chosen(args, kw, vllm_mode, notes)  # after the model's own faults, which a card would not mend
    _refuse_bf16_below_sm80(getattr(args, "dtype", None), kw.get("card"))
    # vLLM's story: the model is its HF repository's checkpoint, as `vllm serve <repo>` loads it (whether named by
    # the repo or by kvmath's id); the anchor's: its published checkpoint (data/deployments.json default_weights)
    kw["weights_variant"] = args.weights_variant or vals.get("weights") or ("hf" if vllm_mode else "default")
    if vllm_mode and not as_repo and not (args.weights_variant or vals.get("weights") or args.config
                                          or args.weights_gb is not None) and (dep := B.deployments().get(arch.name)):
        from ...facts import find_model

        others = sorted(k for k in dep["weights_gb"] if not (k == "bf16" and B.config_quant_method(arch) is None))
        notes.append(f"checkpoint: {find_model(arch.name)['hf_repo']}'s own, as vllm serve loads it; published "
                     f"others: --weights-variant {', '.join(others)}")
    if not vllm_mode and (note := _anchor_defaults_note(args, vals, model, kw)):
        notes.append(note)
    elif vllm_mode and (note := _vllm_defaults_note(args, vals, arch, kw)):
        notes.append(note)
    if getattr(args, "quantization", None) is not None:
        notes.append(_quantization_note(args.quantization, arch, kw))
    if args.include_draft_kv:
        kw["draft_kv_gb"] = args.draft_kv_gb
        if not args.draft_kv_gb:
            notes.append("--include-draft-kv without --draft-kv-gb: nothing reserved")
    elif args.draft_kv_gb:
        notes.append("--draft-kv-gb is reserved only with --include-draft-kv (as the anchor)")
    if args.vllm_version:
        kw["vllm_version"] = args.vllm_version
    if args.attention_backend:
        kw["attention_backend"] = args.attention_backend.upper()
    if arch.name == "gemma-4-31b" and kv == "int8_per_token_head":
        kw["gemma4_pth_page_padding"] = True
        notes.append("Gemma 4 int8_per_token_head: page padding of vLLM PR #40391 applied (as the club-3090 builds)")
    return model, kw, notes


def _layout_label(arch) -> str:
    if arch.linear_layers() or arch.state_layers():
        return "hybrid_mamba"
    if any(layer.layer_type == "sliding_attention" for layer in arch.attention_layers()):
        return "sliding_window"
    return "dense_gqa"


def _breakdown(args, b, arch) -> dict:
    from .formats import vllm_format

    L, S, tp = b.max_model_len, b.max_num_seqs, b.tp
    bpe = float(vllm_format(b.kv_format).k.bytes_per_element)
    comp = (args.compressed_layers * -(-L // args.compression_ratio) * (args.compressed_head_dim or 0) * bpe * S / tp)
    idx = (args.indexer_ratio_layers * -(-L // args.indexer_compress_ratio) * (args.indexer_head_dim or 0)
           * INDEXER_BYTES[args.indexer_format] * S / tp)
    out = {"layout": args.kv_layout if args.kv_layout != "auto" else _layout_label(arch), "sequences": S,
           "gpus": args.gpus or tp, "tp": tp, "units": "bytes per card",
           "attention_kv_growing_bytes": b.growing_kv, "attention_kv_sliding_bytes": b.sliding_kv,
           "recurrent_state_bytes": b.state_bytes, "compressed_kv_estimate_bytes": round(comp),
           "indexer_cache_estimate_bytes": round(idx), "draft_kv_bytes": b.draft_kv,
           "vllm_pool_groups": [{"kind": g.kind, "layers": len(g.layer_names), "block_size": g.spec.block_size,
                                 "page_bytes": g.spec.page_size_bytes} for g in (b.plan.groups if b.plan else ())]}
    out["total_cache_bytes"] = (b.growing_kv + b.sliding_kv + b.state_bytes + out["compressed_kv_estimate_bytes"]
                                + out["indexer_cache_estimate_bytes"] + b.draft_kv)
    out["notes"] = ["demand for max_num_seqs requests at max_model_len (per-token formula); vLLM's pool is sized "
                    "by memory, not by this", "compressed/indexer buckets are estimates, reporting only"]
    return out


def _anchor(model, b, kw, args):
    from .budget import OWN_CHECKPOINT_VARIANTS, anchor_prediction, card

    if str(kw.get("weights_variant", "")).lower() in OWN_CHECKPOINT_VARIANTS:
        return None  # the anchor has no size for the repository's own checkpoint: its figure would mislead

    vram = card(kw["card"])["nominal_gb"] if kw.get("card") else kw["total_gib"] * GIB / 1e9
    return anchor_prediction(model, kv_format=b.kv_format, max_ctx=b.max_model_len, max_num_seqs=b.max_num_seqs,
                             tp=b.tp, mem_util=b.mem_util, vram_gb=vram, mtp=b.num_speculative_tokens > 0,
                             drafter_gb=kw.get("drafter_gb", 0.0), weights_variant=kw.get("weights_variant", "default"))


def _none_reason(b) -> str:
    if b.refusal_kind == "config":
        return f"vLLM refuses this configuration at any length: {b.refusal.rstrip('.')}"
    if b.refusal_kind == "startup":
        return "gpu_memory_utilization leaves too little of the card outside the budget; lower --mem-util"
    if b.refusal_kind == "mamba_blocks" and b.plan is not None:
        # the block count does not depend on max_model_len (the pool is sized from memory): no length helps
        return (f"the limit is max_num_seqs, not the length: at any max_model_len the pool holds "
                f"{b.plan.num_blocks:,} Mamba cache blocks for max_num_seqs {b.max_num_seqs:,}; lower --max-num-seqs "
                f"to at most {b.plan.num_blocks:,} (vLLM's own advice)")
    if b.refusal_kind == "memory" and b.available_kv > 0 and b.estimated_max_model_len:
        # refused for memory at the asked length, and nothing shorter boots either: vLLM's own estimate says why
        # (a hybrid model's Mamba blocks below max_num_seqs, vLLM's serve default of 256 or 1024 included)
        from .budget import rebudget

        probe = rebudget(b, max_model_len=b.estimated_max_model_len)
        if probe.refusal_kind == "mamba_blocks":
            return _none_reason(probe)
    return NON_KV_REASON


NON_KV_REASON = "the non-KV terms alone exceed the budget"


def _smi(card_name: str) -> str:
    """The tool a user reads the peak with: rocm-smi on an AMD card, nvidia-smi otherwise (an NVIDIA card, or a
    device given only by --device-memory, where vLLM's CUDA build is the one that runs)."""
    from ...cards import card

    try:
        return "rocm-smi" if card(card_name)["vendor"] == "amd" else "nvidia-smi"
    except KvMathError:  # a --device-memory device has no card record
        return "nvidia-smi"


def render_text(b, largest: int | None, anchor, notes, breakdown=None, compose=None, safe: int | None = None,
                model_max: int | None = None) -> str:
    from .budget import CALIBRATION_ERROR_GIB

    g = lambda n: f"{n / GIB:7.2f} GiB"  # noqa: E731
    what = f"{b.model}" + (f" / {compose}" if compose else "")
    head = (f"vLLM budget - {what} on {b.card} ({b.total_bytes / GIB:.2f} GiB as PyTorch sees it), "
            f"kv={b.kv_format}, max_model_len={b.max_model_len:,}, max_num_seqs={b.max_num_seqs}, TP={b.tp}, "
            f"gpu_memory_utilization={b.mem_util}, max_num_batched_tokens={b.max_num_batched_tokens:,}")
    lines = [head, "-" * min(len(head), 100),
             f"  {'requested memory (ceil(total x util))':<48}{g(b.requested)}"]
    for label, v in b.terms():
        if v or label.startswith("weights") or label == "activation peak":
            lines.append(f"  - {label:<46}{g(v)}")
    if b.available_kv >= 0:
        lines.append(f"  {'= available for the KV cache':<48}{g(b.available_kv)}")
    else:  # the terms exceed the requested memory: a shortfall, not a size
        lines.append(f"  {'= available for the KV cache':<48}   none ({-b.available_kv / GIB:.2f} GiB short)")
    lines.append(f"  {'KV one max_model_len request needs':<48}{g(b.kv_per_request)}" if b.refusal_kind != "config"
                 else f"  {'KV one max_model_len request needs':<48}   n/a (refused before memory is sized)")
    lines.append("")
    if b.outcome == "boots":
        lines.append(f"Verdict: BOOTS. KV pool {b.pool_bytes / GIB:.2f} GiB = {b.plan.num_blocks:,} blocks of "
                     f"{b.plan.block_size} tokens; 'GPU KV cache size: {b.pool_tokens:,} tokens'; maximum concurrency "
                     f"at {b.max_model_len:,} tokens: {b.max_concurrency:.2f}x")
        if not b.fits_max_num_seqs:
            lines.append(f"  note: only {b.max_num_seqs_at_full_context} of max_num_seqs={b.max_num_seqs} requests fit "
                         "at full context at once; vLLM still boots and queues the rest")
    elif b.outcome == "refused" and b.refusal_kind == "config":
        lines.append(f"Verdict: REFUSED at start-up by a configuration check (not memory). vLLM: {b.refusal}")
        m = re.search(r"block_size \((\d+)\) must be <= max_num_batched_tokens", b.refusal)
        if m:
            lines.append(f"  hint: --max-num-batched-tokens {m.group(1)} or more (the hybrid block size)")
    elif b.outcome == "refused":
        lines.append(f"Verdict: REFUSED at start-up. vLLM: {b.refusal}")
    else:
        lines.append(f"Verdict: OUT OF MEMORY. {b.refusal}")
    if b.marginal:
        lines.append(f"  marginal: {abs(b.margin_bytes) / GIB:.2f} GiB {'above' if b.margin_bytes >= 0 else 'below'} "
                     f"what one max_model_len request needs, inside kvmath's calibration error of "
                     f"+/-{CALIBRATION_ERROR_GIB} GiB: it may or may not boot")
    if largest is not None:  # None: not searched (--no-solve)
        lines.append(f"Largest max_model_len that boots: {largest:,} tokens"
                     + (" (the model maximum)" if largest and largest == model_max else "") if largest else
                     "Largest max_model_len that boots: none (" + _none_reason(b) + ")")
    if largest and safe is not None and safe != largest:
        lines.append(f"  with {CALIBRATION_ERROR_GIB} GiB of headroom for kvmath's calibration error: "
                     + (f"{safe:,} tokens" if safe else "none"))
    if b.outcome == "boots":
        lines.append(f"Predicted {_smi(b.card)} peak: {b.peak_bytes / GIB:.2f} GiB/card (requested + fitted CUDA-graph "
                     "overhead)")
    if anchor:
        lines.append(f"Anchor (kv-calc 5b3793b8) would say: {anchor['verdict']} at {anchor['total_gb']:.2f} GB "
                     f"of {anchor['budget_gb']:.2f} GB - {anchor['verdict_meaning']}")
    if breakdown:
        lines += ["", "Cache architecture breakdown (demand, per card):",
                  f"  Layout: {breakdown['layout']}   Scope: {breakdown['gpus']} GPU(s), TP={breakdown['tp']}, "
                  f"sequences={breakdown['sequences']}"]
        for key, label in (("attention_kv_growing_bytes", "Attention KV - growing"),
                           ("attention_kv_sliding_bytes", "Attention KV - sliding"),
                           ("recurrent_state_bytes", "Recurrent / GDN state"),
                           ("compressed_kv_estimate_bytes", "Compressed KV estimate"),
                           ("indexer_cache_estimate_bytes", "Indexer cache estimate"),
                           ("draft_kv_bytes", "Draft KV (reserved)"), ("total_cache_bytes", "Cache/state subtotal")):
            if breakdown[key] or key in ("attention_kv_growing_bytes", "total_cache_bytes"):
                lines.append(f"  {label:<30}{g(breakdown[key])}")
        for grp in breakdown["vllm_pool_groups"][:8]:
            lines.append(f"  vLLM group: {grp['kind']} x{grp['layers']} layers, block {grp['block_size']} tokens, "
                         f"page {grp['page_bytes']:,} B")
    for n in list(notes) + [n for n in b.notes if not n.startswith("vLLM: 'Padding")]:
        lines.append(f"Note: {n}")
    lines.append(f"Non-KV terms are fitted to measured boots (kvmath-fit --calibration): +/-{CALIBRATION_ERROR_GIB} GiB "
                 "on a deployment left out of the fit, more for a checkpoint it has not seen; the same deployment "
                 "has logged up to 1.9 GiB apart.")
    return "\n".join(lines)


def run(argv=None) -> int:
    """The command itself; ``main`` runs it guarded against its environment (kvmath.clitools)."""
    raw = list(sys.argv[1:] if argv is None else argv)
    argv = _strip_serve(raw)
    argv = [_dash_option(a) for a in argv]
    try:
        argv, screened = _screen_serve_flags(argv)  # every vllm serve flag of the release: kept, ignored or refused
    except KvMathError as e:
        print(f"kvmath-fit: error: {one_line(e)}", file=sys.stderr)
        return 2
    argv, ignored = set_aside(argv, IGNORED_VLLM_FLAGS)  # serving-only flags: one linear pass, not argparse's
    ignored = screened + ignored
    try:
        check_arg_count("kvmath-fit", argv)
    except KvMathError as e:
        print(f"kvmath-fit: error: {one_line(e)}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    drop_private(args)
    args.ignored_flags = getattr(args, "ignored_flags", []) + ignored
    # one defaults story: vLLM's own for what any line leaves out; the public calculator's only when asked for by
    # name (--anchor-defaults, or one of its --compose deployments)
    args.vllm_mode = not (args.anchor_defaults or args.compose)
    if args.calibration:
        extra = _given_besides(parser, args, ("calibration", "json", "offline"))
        if extra:
            print(f"kvmath-fit: error: --calibration compares every recorded boot and takes no other flag "
                  f"(got {', '.join(extra[:4])}); drop them, or drop --calibration", file=sys.stderr)
            return 2
    if args.offline:  # kvmath.hub reads HF_HUB_OFFLINE at call time
        os.environ["HF_HUB_OFFLINE"] = "1"
    if args.model_tag is not None and _take_model_tag(args):
        return 2
    try:
        if args.calibration:
            return _calibration_report(args.json)
        from .budget import budget, solve_max_model_len, solve_max_model_len_with_headroom
        from ...model.load import load_architecture

        model, kw, notes = _resolve(args, os.environ)
        if args.pp > 1 or args.dp > 1 or args.enable_expert_parallel:
            if args.solve_max_ctx:
                raise KvMathError("--solve-max-ctx is not solved across pipeline / data-parallel / expert-parallel "
                                  "workers; --max-model-len -1 gives vLLM's own auto-fit there (the smallest "
                                  "worker's estimate), or drop the parallel flags")
            return _print_parallel(model, kw, notes, args)
        try:
            b = budget(model, **kw)
        except KvMathError as e:
            if args.compose and not args.kv_format and "cannot run on" in str(e):
                raise KvMathError(f"preset {args.compose} sets {e}; choose one with --kv-format") from None
            if args.anchor_defaults and not args.kv_format and kw.get("kv_format") in str(e):
                raise KvMathError(f"--anchor-defaults takes the public calculator's {kw['kv_format']}: {e}; choose one "
                                  "with --kv-format") from None
            raise
        if args.max_ctx == AUTO_FIT:
            b, note = _auto_fit(model, kw, b)
            notes.append(note)
        arch = load_architecture(model)
        model_max = arch.derived_max_model_len or arch.max_position_embeddings or 0  # vLLM's derived maximum
        top = max(b.max_model_len, model_max)
        if args.no_solve and args.solve_max_ctx:
            raise KvMathError("--no-solve and --solve-max-ctx ask opposite things; give one")
        largest = None if args.no_solve else solve_max_model_len(b, upper=top)
        safe = None if args.no_solve else solve_max_model_len_with_headroom(b, upper=top)
        anchor = _anchor(arch.name, b, kw, args)
        bd = _breakdown(args, b, arch) if args.kv_breakdown else None
        sb = budget(model, **dict(kw, max_model_len=largest)) if args.solve_max_ctx and largest else b
    except KvMathError as e:
        print(f"kvmath-fit: error: {one_line(e)}", file=sys.stderr)
        return 2
    if args.solve_max_ctx:
        return _print_solved(args, b, sb, largest, safe, anchor, notes, model_max)
    if args.json:
        out = b.to_dict()
        out.update(largest_max_model_len=largest, largest_max_model_len_with_headroom=safe, anchor=anchor,
                   notes=notes + out["notes"])
        if bd:
            out["cache_breakdown"] = bd
        print(json.dumps(out, indent=1))
    else:
        print(render_text(b, largest, anchor, notes, bd, args.compose, safe, model_max))
    return 0 if b.outcome == "boots" else 1


def _screen_serve_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without the vllm serve options that cannot change memory, and those options, for the release the
    line is priced at (``--vllm-version``, else the default): kvmath.engines.vllm.flags.screen. A malformed or
    uncovered ``--vllm-version`` is left to the parser's own message. Raises KvMathError (flags.screen)."""
    from . import flags
    from .releases import release

    version = None
    for j, a in enumerate(argv):
        if a == "--vllm-version" and j + 1 < len(argv):
            version = argv[j + 1]
        elif a.startswith("--vllm-version="):
            version = a.partition("=")[2]
    try:
        name = release(version).name
    except KvMathError:
        return argv, []
    modelled = {o for a in build_parser()._actions for o in a.option_strings
                if not isinstance(a, _Ignored) and type(a).__name__ != "_Refused"}
    return flags.screen(argv, name, modelled)


def _take_model_tag(args) -> bool:
    """Place ``vllm serve MODEL``'s positional model as ``args.config`` (a path) or ``args.model`` (an id); True
    after printing the error when it cannot be placed (the caller exits 2)."""
    if args.config and str(args.config).lower().endswith((".yaml", ".yml")):
        # vllm serve's own --config: a YAML file of its flags, which kvmath does not read
        print(f"kvmath-fit: error: --config {_cut(args.config)} is vllm serve's YAML file of flags, which kvmath "
              "does not read; put its flags on the line (kvmath's --config is a model's config.json or folder)",
              file=sys.stderr)
        return True
    if args.model or args.config:
        print("kvmath-fit: error: give the model once: as MODEL, --model or --config", file=sys.stderr)
        return True
    tag = args.model_tag
    if os.path.exists(tag):
        args.config = tag
    elif tag.startswith((".", "/", "~")) or tag.endswith(".json") or tag.count("/") > 1 or "\\" in tag:
        print(f"kvmath-fit: error: {tag[:200]}: no such file or folder (a model is a known id, its HF repo "
              "such as Qwen/Qwen3.6-27B, or a path to a config.json or model folder)", file=sys.stderr)
        return True
    else:
        args.model = tag
    return False


def _calibration_report(as_json: bool) -> int:
    """``--calibration``: every recorded boot against kvmath's figure, as a table or JSON; exit 0."""
    from . import calibration

    rows, public = calibration.compare(), calibration.compare(calibration.public_rows())
    if as_json:  # user_weights: the fit's weights against kvmath's own, over both sets of rows
        print(json.dumps({"rows": rows, "summary": calibration.summary(rows), "public_rows": public,
                          "user_weights": calibration.weights_summary(rows + public)}, indent=1, default=str))
    else:
        print(calibration.table_text(rows))
        print()
        print(calibration.weights_text(rows + public))
        print()
        print(calibration.cv_text())
    return 0


def _print_solved(args, b, sb, largest: int, safe: int, anchor, notes: list, model_max: int) -> int:
    """``--solve-max-ctx``: the largest ``max_model_len`` that boots (``sb`` the budget at it), as text or JSON;
    exit 0 when one boots, else 1."""
    from .budget import CALIBRATION_ERROR_GIB

    if args.json:
        out = sb.to_dict()
        out.update(solved_max_ctx=largest, largest_max_model_len=largest, largest_max_model_len_with_headroom=safe,
                   anchor=anchor, notes=notes + out["notes"])
        print(json.dumps(out, indent=1))
    else:
        print(f"Max-context solver - {b.model} / {b.kv_format}, seqs={b.max_num_seqs}, TP={b.tp}, "
              f"mem_util={b.mem_util}, card {b.card} ({b.total_bytes / GIB:.2f} GiB)")
        if largest:
            print(f"Largest max_model_len that boots: {largest:,} tokens "
                  f"({largest + 1:,} would be refused)" if largest < model_max else
                  f"Largest max_model_len that boots: {largest:,} tokens (the model maximum)")
            fit = sb.max_num_seqs_at_full_context
            print(f"At that length: {sb.available_kv / GIB:.2f} GiB for KV, pool {sb.pool_tokens:,} tokens, "
                  f"max concurrency {sb.max_concurrency:.2f}x: "
                  + (f"all {sb.max_num_seqs} of max_num_seqs fit at full length at once" if fit >= sb.max_num_seqs
                     else f"{fit} of max_num_seqs={sb.max_num_seqs} requests fit at full length at once (the "
                          "length is for one request; vLLM queues the rest)"))
            if sb.marginal:
                print(f"With {CALIBRATION_ERROR_GIB} GiB of headroom for kvmath's calibration error: "
                      + (f"{safe:,} tokens" if safe else "none") + " (the answer above sits on the edge: "
                      f"{sb.margin_bytes / GIB:.2f} GiB of margin)")
        elif (reason := _none_reason(b)) != NON_KV_REASON:
            print(f"No max_model_len boots: {reason}.")
        else:
            print("No max_model_len boots: the non-KV terms alone exceed the budget. Raise --mem-util or TP, use "
                  "a smaller checkpoint, or a bigger card.")
        for n in list(notes) + [n for n in sb.notes if not n.startswith("vLLM: 'Padding")]:
            print(f"Note: {n}")
    return 0 if largest else 1


def _auto_fit(model, kw: dict, b):
    """vLLM's ``--max-model-len -1``: the budget at the derived maximum, lowered to the longest length the KV
    memory holds when that one is refused for memory (kv_cache_utils.py ``_auto_fit_max_model_len``, vLLM
    0.20.0-0.27.0; kv_cache_planning.py in 0.33.0), with vLLM's log line. Returns (budget, note); a budget
    that holds not even one token keeps its refusal, with vLLM's auto-fit error as the reason."""
    from .budget import budget

    top = b.max_model_len
    if b.outcome == "boots":
        return b, f"Auto-fit max_model_len: full model context length {top} fits in available GPU memory"
    if b.outcome != "refused" or b.refusal_kind != "memory":
        return b, "Auto-fit max_model_len: not reached (vLLM stops before the KV cache is planned)"
    est = b.plan.estimated_max_model_len if b.plan else 0
    if not est:
        return b, ("Auto-fit max_model_len fails: vLLM: 'Cannot auto-fit max_model_len: not enough GPU memory "
                   "available to serve even a single token. Try increasing `gpu_memory_utilization`.'")
    fitted = budget(model, **dict(kw, max_model_len=est))
    return fitted, (f"Auto-fit max_model_len: reduced from {top} to {est} to fit in available GPU memory "
                    f"({b.available_kv / GIB:.2f} GiB available for KV cache)")


def _print_parallel(model, kw, notes, args) -> int:
    """``--pipeline-parallel-size`` / ``--data-parallel-size`` / ``--enable-expert-parallel``: every stage's budget
    and the unified pool (``kvmath.engines.vllm.parallel``)."""
    from .parallel import parallel_budget

    kw = dict(kw)
    tp = kw.pop("tp", 1)
    pb = parallel_budget(model, tp=tp, pp=args.pp, dp=args.dp, enable_expert_parallel=args.enable_expert_parallel,
                         layer_partition=args.layer_partition, **kw)
    if args.max_ctx == AUTO_FIT:
        # kv_cache_utils.py _auto_fit_max_model_len: the smallest of every worker's estimate (0.20.0-0.27.0)
        top = kw["max_model_len"]
        ests = [s.plan.estimated_max_model_len for s in pb.stages
                if s.plan is not None and s.outcome == "refused" and s.refusal_kind == "memory"]
        if pb.outcome == "boots":
            notes = list(notes) + [f"Auto-fit max_model_len: full model context length {top} fits in available GPU memory"]
        elif ests and all(ests) and min(ests) > 0:
            est = min(ests)
            pb = parallel_budget(model, tp=tp, pp=args.pp, dp=args.dp,
                                 enable_expert_parallel=args.enable_expert_parallel,
                                 layer_partition=args.layer_partition, **dict(kw, max_model_len=est))
            notes = list(notes) + [f"Auto-fit max_model_len: reduced from {top} to {est} to fit in available GPU "
                                   "memory (the smallest worker's estimate)"]
        else:
            notes = list(notes) + ["Auto-fit max_model_len: not applied (a worker runs out of memory or is refused "
                                   "before the KV cache is planned)"]
    if args.json:
        print(json.dumps({"tp": pb.tp, "pp": pb.pp, "dp": pb.dp, "cards": pb.cards,
                          "enable_expert_parallel": pb.enable_expert_parallel, "layers_per_stage": list(pb.layers),
                          "num_blocks": pb.num_blocks, "pool_tokens": pb.pool_tokens,
                          "total_pool_tokens": pb.total_pool_tokens, "outcome": pb.outcome,
                          "limiting_stage": pb.limiting_stage, "notes": list(notes) + list(pb.notes),
                          "stages": [s.to_dict() for s in pb.stages]}, indent=1))
    else:
        s0 = pb.stages[0]
        print(f"{s0.model} on {pb.cards} x {s0.card}: TP={pb.tp} x PP={pb.pp} x DP={pb.dp}"
              + (" with expert parallelism" if pb.enable_expert_parallel else "") + f": {pb.outcome}")
        print(f"  kv={s0.kv_format}, max_model_len={s0.max_model_len:,}, max_num_seqs={s0.max_num_seqs}, "
              f"gpu_memory_utilization={s0.mem_util}, max_num_batched_tokens={s0.max_num_batched_tokens:,}")
        for i, (n, b) in enumerate(zip(pb.layers, pb.stages)):
            print(f"  stage {i}: {n} layers, weights {b.weights / GIB:.2f} GiB, activation {b.profile_peak / GIB:.2f} GiB,"
                  f" CUDA graphs {b.cudagraph / GIB:.2f} GiB, available KV {_available_words(b.available_kv)}, "
                  f"{b.plan.num_blocks if b.plan else 0:,} blocks, {b.outcome}"
                  + (f" ({b.refusal})" if b.refusal else ""))
        print(f"Pool: {pb.num_blocks:,} blocks on every worker (the smallest stage's), {pb.pool_tokens:,} tokens per "
              f"engine, {pb.total_pool_tokens:,} over {pb.dp} engine(s)")
        # the stages' own notes (weights, kernel, calibration coverage), each once, after the deployment's
        stage_notes = [n for b in pb.stages for n in b.notes]
        for n in dict.fromkeys(list(notes) + list(pb.notes) + stage_notes):
            print(f"Note: {n}")
    return 0 if pb.outcome == "boots" else 1


def main(argv=None) -> int:
    """Entry point: ``run`` with a closed pipe answered quietly and a full disk or a closed stdout in one
    line (kvmath.clitools.guarded, as ``kvmath``); bad input is one line and exit 2."""
    from ...clitools import guarded

    return guarded("kvmath-fit", run, argv)


if __name__ == "__main__":
    sys.exit(main())
