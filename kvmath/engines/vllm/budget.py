"""The per-card memory budget of a vLLM deployment, and what vLLM does with it.

vLLM does not size its KV cache from the demand (context x sequences). At start-up it asks for
``requested = ceil(total_memory * gpu_memory_utilization)`` bytes of the card, profiles one dummy
forward pass of ``max_num_batched_tokens`` tokens, and gives the KV cache whatever is left:

    available_kv = requested - non_kv          (vllm/v1/worker/gpu_worker.py determine_available_memory)

where ``non_kv`` is the weights on this card plus the profiled activation peak and the memory
outside PyTorch's allocator. Then the block arithmetic decides (``kvmath.vllm_alloc.plan``):

- ``oom``: ``available_kv <= 0`` ("No available memory for the cache blocks"), or the weights alone
  do not fit the card;
- ``refused``: one request of ``max_model_len`` tokens does not fit ``available_kv``; vLLM prints
  the "estimated maximum model length" and stops;
- ``boots``: the pool is ``available_kv // bytes_per_block`` blocks, whatever ``max_num_seqs`` is;
  its concurrency at full context may be lower than ``max_num_seqs``.

Terms, per card (one tensor-parallel rank), exact integers in bytes:

- weights: checkpoint size (``kvmath/data/deployments.json``, GB = 1e9 B, or the size vLLM logged for it,
  ``LOGGED_CHECKPOINT_GIB``) / TP. Every weight of
  these models is sharded by vLLM's parallel linear layers and ``VocabParallelEmbedding``; what
  does not shard (norms, the small router and gate weights) is below the GB rounding of the
  checkpoint sizes and is not modelled separately. Where the boot logs contradict a profile size
  (``FITTED_CHECKPOINTS``: the Gemma 4 31B AWQ checkpoint), a fitted correction in GB is added.
- drafter weights: the drafter checkpoint / TP (MTP assistant, DFlash); built-in MTP heads are in
  the checkpoint.
- activation peak (``profile_peak``): the torch peak of vLLM's profile run, derived term by term from the
  tensors it allocates (``kvmath.engines.vllm.activation``: the forward of ``max_num_batched_tokens``
  tokens, the sampler on ``max_num_seqs`` rows, the multimodal encoder's budget); the GDN chunk buffers
  only at the 64-token warm-up (the profile run skips the chunked kernels at ``max_num_batched_tokens``).
- CUDA graphs (``cudagraph``): the estimate vLLM subtracts before sizing the KV cache
  (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to 1 in 0.20-0.33): first capture + per graph,
  derived (``activation.cudagraph_estimate_bytes``).
- memory outside PyTorch (``overhead``): the fitted ``const_gib`` (+ ``tp_gt1_gib`` when TP > 1); the fit may
  also keep per-graph, per-batched-token and Gemma 4 / MoE terms (``KNOWN_COEFFICIENTS``; 0 when it does not).
- draft KV override (``draft_kv_bytes``): KV of a drafter with its own cache layers (DFlash),
  reserved out of the pool when given.
- the pool itself (growing full-attention KV, sliding-window blocks, GDN state blocks, MTP drafter
  layers) is ``vllm_alloc.plan``'s business: it is exact.

The empirical coefficients (``COEFFICIENTS``), their error bands and the checkpoints and cards the fit
has boots of are read from ``data/calibration/vllm_non_kv.json`` (through ``kvmath.facts``), which
``kvmath.engines.vllm.calibration`` writes from the measured boots; the calibration chapter shows the
residuals and a held-out test. This module does not import the calibration.

The command line (``kvmath-fit``) imports this module; it needs only the standard library. numpy
is imported inside ``sweep``; the book's pandas tables are in ``kvmath.book.frames``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from ... import facts
from ...errors import KvMathError, choices
from ...model.load import load_architecture
from ...validate import (MAX_GB, MAX_TOKENS, MAX_TP, _short, check_bool, check_count, check_name, check_number,
                         check_positive)
from ...validate import is_finite_number as _finite
from .alloc import plan as vplan
from .formats import VLLM_FORMATS, vllm_format
from .settings import DEFAULT_VLLM_VERSION, in_flight_tokens, serve_batch_settings

GIB = 2**30
GB = 10**9
FLA_CHUNK = 64  # chunk_delta_h.py: chunk_size=64 (the caller never passes another)

# The fitted constants, their error bands and what the fit has seen: data/calibration/vllm_non_kv.json,
# written by the fit (python -m kvmath.engines.vllm.calibration --write) from the measured boots of
# data/measurements/vllm-boots.csv; tests/test_calibration.py refits and compares.
_CALIBRATION = facts.read_json("calibration/vllm_non_kv.json")

COEFFICIENTS: dict = _CALIBRATION["coefficients"]
KNOWN_COEFFICIENTS = ("const_gib", "per_inv_tp_gib", "per_8k_batched_tokens_per_tp_gib", "per_graph_mib", "gemma4_gib",
                      "moe_gib", "peak_over_requested_gib", "tp_gt1_gib")
"""Every fitted term the budget can price; the calibration JSON ships the ones the fit keeps (a missing one is 0)."""
"""GiB per card, except ``weights_extra_gb[model/variant]`` (GB of the whole checkpoint): ``const_gib`` and
``per_inv_tp_gib`` / ``tp_gt1_gib`` (memory outside PyTorch; the last when TP > 1), ``per_8k_batched_tokens_per_tp_gib``
(activation), ``gemma4_gib`` / ``moe_gib`` (model offsets), ``peak_over_requested_gib`` (nvidia-smi peak
minus vLLM's requested memory: CUDA graphs captured after the KV cache is allocated, NCCL and the CUDA
context outside the profile; the mean over the measured peaks)."""

CALIBRATION_ERROR_GIB: float = _CALIBRATION["calibration_error_gib"]
"""The error band of the fitted non-KV terms, GiB per card: the largest error of available KV memory when a
whole deployment is left out of the fit and predicted, over deployments whose checkpoint the rest of the
fit still covers (``kvmath.engines.vllm.calibration.error_band_gib``). A verdict whose margin is inside
the band may go either way."""

UNCOVERED_ERROR_GIB: float = _CALIBRATION["uncovered_error_gib"]
"""... and the largest error on a left-out deployment whose checkpoint had no other boot in the fit."""

FITTED_CHECKPOINTS: tuple = tuple(_CALIBRATION["fitted_checkpoints"])
"""Checkpoints whose size in deployments.json (the anchor's profile figure, GB) the boot logs contradict:
the fit adds a correction in GB (total, sharded by TP like the weights). Key: "model/variant"."""

_COVERAGE = {"checkpoints": {tuple(c) for c in _CALIBRATION["coverage"]["checkpoints"]},
             "cards": set(_CALIBRATION["coverage"]["cards"])}
# the measured boots the notes below cite, in words (written by the fit from the boots' cited_by column)
_CITES = _CALIBRATION["notes"]
# checkpoint sizes vLLM itself logged ("Checkpoint size: X GiB", weight_utils.py), each with its sources: they
# replace deployments.json's profile figure (kvmath.engines.vllm.calibration.LOGGED_CHECKPOINT_GIB)
LOGGED_CHECKPOINT_GIB: dict = {k: v["gib"] for k, v in _CALIBRATION.get("logged_checkpoints", {}).items()}

for _k in FITTED_CHECKPOINTS:  # a contributor adding a checkpoint must also ship its fitted value
    if f"weights_extra_gb[{_k}]" not in COEFFICIENTS:
        raise KvMathError(f"data/calibration/vllm_non_kv.json lists {_k} in fitted_checkpoints but has no "
                          f"coefficient weights_extra_gb[{_k}]: add it as 0.0, then refit with "
                          "python -m kvmath.engines.vllm.calibration --write")

OUTCOMES = ("boots", "refused", "oom")
OUTCOME_TEXT = {
    "boots": "boots",
    "refused": "refused at start-up (one max_model_len request does not fit the KV memory)",
    "refused_config": "refused at start-up by a configuration check, before any memory is sized",
    "oom_startup": "out of memory at start-up: gpu_memory_utilization leaves too little of the card for the CUDA "
                   "context and CUDA graphs",
    "oom": "out of memory (nothing left for the KV cache)",
    "refused_mamba_blocks": "refused at start-up: max_num_seqs exceeds the pool's blocks, and a model with Mamba/GDN "
                            "layers needs one block per decode sequence for its CUDA graphs",
}


# ---------------------------------------------------------------------------------------------------
# data: cards, presets, deployments


def cards() -> dict:
    """Known cards by id: ``total_gib`` as PyTorch reports it, ``nominal_gb``, ``compute_capability``."""
    return facts.cards()


def card(name: str) -> dict:
    """A card by id, alias or the name nvidia-smi / rocm-smi / PyTorch print (``rtx3090``, ``3090``, ``NVIDIA
    GeForce RTX 3090``): ``kvmath.cards.card``. Raises KvMathError naming the candidates or the ids."""
    from ...cards import card as _card

    return _card(name)


def presets() -> dict:
    """The anchor's compose presets, ``{model: {name: {...}}}`` (``data/presets.json``)."""
    return facts.presets()


def preset(model_id: str, name: str) -> dict:
    """One preset. Raises KvMathError naming the model's presets."""
    table = _presets()
    if model_id not in table:
        raise KvMathError(f"model {model_id!r} has no presets; models with presets: {choices(table)}")
    if name not in table[model_id]:
        owners = [m for m, p in table.items() if name in p]
        hint = f" (it is a preset of {choices(owners)})" if owners else ""
        raise KvMathError(
            f"--compose {name} is not in {model_id}'s compose list{hint}; valid: {choices(table[model_id])}")
    return dict(table[model_id][name], name=name, model=model_id)


def model_for_preset(name: str) -> str:
    """The first model (in the anchor's order) owning preset ``name``; raises KvMathError."""
    for m in ("qwen3.6-27b", "qwen3.6-35b-a3b", "gemma-4-31b", "gemma-4-26b-a4b"):
        if name in _presets().get(m, {}):
            return m
    every = sorted({n for p in _presets().values() for n in p})
    raise KvMathError(f"unknown preset {name!r}; valid: {choices(every)}")


# Read once per process for the budget's own lookups (the public functions above and below return copies)
_presets = lru_cache(maxsize=1)(facts.presets)
_deployments = lru_cache(maxsize=1)(facts.deployments)


def deployments() -> dict:
    """Checkpoint sizes and drafters per known model (``data/deployments.json``)."""
    return facts.deployments()


# The anchor's --weights-variant names -> kvmath/data/deployments.json keys.
_VARIANT_ALIASES = {
    "default": None, "int4": ("autoround_int4", "autoround_int4_mixed"), "awq": ("awq",), "bf16": ("bf16",),
    "gptq": ("gptq_int4",), "nvfp4": ("nvfp4",), "int8": ("int8",), "fp8": ("fp8",),
}


def weights_gb(model_id: str, variant: str = "default") -> tuple[str, float]:
    """(deployments key, checkpoint GB) of ``variant`` for a known model. Raises KvMathError."""
    dep = _deployments().get(model_id)
    if dep is None:
        raise KvMathError(f"no checkpoint sizes for {model_id!r}: pass --weights-gb (total GB of the checkpoint)")
    table = dep["weights_gb"]
    v = (variant or "default").lower()
    if v in table:
        return v, table[v]
    keys = (dep["default_weights"],) if v == "default" else _VARIANT_ALIASES.get(v, ())
    for k in keys or ():
        if k in table:
            return k, table[k]
    raise KvMathError(f"--weights-variant {variant} is not known for {model_id}; valid: "
                      f"{choices(['hf', 'default'] + sorted(table))} (hf: the HF repository's own checkpoint)")


OWN_CHECKPOINT_VARIANTS = ("hf",)
"""``--weights-variant hf``: the checkpoint of the model's own HF repository (the reference config's), priced
from its config.json; ``bf16`` means the same for a repository whose config has no quantization_config."""


def _own_checkpoint(arch, weights_variant: str | None) -> bool:
    """True when the weights come from the checkpoint's own tensors rather than deployments.json: a model with
    no published sizes, or ``weights_variant`` ``hf`` (or ``bf16`` of an unquantised repository)."""
    cfg = _checkpoint_config(arch)
    if cfg is None:
        return False
    if arch.name not in _deployments():
        return True
    v = str(weights_variant or "default").lower()
    return v in OWN_CHECKPOINT_VARIANTS or (v == "bf16" and config_quant_method(arch) is None)


def config_quant_method(arch) -> str | None:
    """The checkpoint config's ``quantization_config`` method (``quant_method`` / ``quant_algo``, lowercase;
    ``"unknown"`` when it names none), None for an unquantised or unknown checkpoint config
    (``kvmath.model.checkpoint``'s reading of the same key)."""
    from ...model.checkpoint import _quant_method

    cfg = _checkpoint_config(arch)
    return _quant_method(cfg) if cfg else None


def _check_own_variant(arch, weights_variant: str | None, *, sized: bool = False) -> None:
    """Refuse a ``weights_variant`` a model without published sizes cannot price: its weights are the checkpoint's
    own tensors (``default`` / ``hf``; ``bf16`` when the config has no quantization_config), so another name
    (``awq``, ``fp8``) would silently price the wrong checkpoint. Raises KvMathError naming the valid ones."""
    valid = ["default", *OWN_CHECKPOINT_VARIANTS] + ([] if config_quant_method(arch) else ["bf16"])
    v = str(weights_variant or "default").lower()
    if v not in valid and sized:
        raise KvMathError(f"--weights-variant {_short(weights_variant)} names no known checkpoint of {arch.name}; with "
                          f"--weights-gb the given size is the checkpoint: leave the variant out (valid: {choices(valid)})")
    if v not in valid:
        raise KvMathError(f"--weights-variant {_short(weights_variant)}: kvmath has no published checkpoint sizes for "
                          f"{arch.name}, so it prices the checkpoint's own tensors; valid: {choices(valid)}; for another "
                          "checkpoint give its Hub id or folder, or its size (--weights-gb)")


def _checkpoint_config(arch) -> dict | None:
    """The config the weights are derived from: the parsed config.json kept on the Architecture, else a known
    model's whole reference config (``facts.reference_config``: its published checkpoint, as the model's
    ``hf_repo`` ships it); None when there is neither."""
    cfg = arch.extras.get("hf_config")
    if isinstance(cfg, dict):
        return cfg
    from ... import facts as _facts

    try:
        return _facts.reference_config(arch.name, copy_=False)  # read only
    except KvMathError:
        return None


def checkpoint_weights_per_rank(arch, tp: int, *, enable_expert_parallel: bool = False, card: dict | None = None,
                                vllm_version: str | None = None, dp: int = 1, skip_towers: tuple[str, ...] = (),
                                dtype: str = "auto", online_fp8: str | None = None):
    """Weight bytes on rank 0 for a model kvmath has no published size for: from the safetensors headers
    of its model folder when it was loaded from one, else from its config.json and ``quantization_config``
    (``kvmath.model.checkpoint``, for the layouts of its ``ESTIMATED_MODEL_TYPES``; others are refused naming what is needed),
    sharded as vLLM's layers shard them (``kvmath.engines.vllm.weights``). Returns ``(RankWeights, source)``,
    the source naming where the tensors came from. ``card`` (a ``cards.json`` entry; None for a custom card) and
    ``vllm_version`` pick the MXFP4 MoE kernel whose padding gpt-oss's experts are allocated at
    (``weights.mxfp4_backend``). ``dp``: ``--data-parallel-size``; with ``enable_expert_parallel`` the experts are
    divided over ``tp * dp`` ranks (``weights.weights_per_rank``). ``skip_towers``: the multimodal towers vLLM
    does not build (``weights.VISION_TOWER_MODULES``; :func:`mm_limits`). ``dtype``: vLLM's ``--dtype`` (the
    unquantised tensors' runtime dtype, ``weights._runtime_dtype``); ``online_fp8``: "native" / "marlin" for
    ``--quantization fp8`` of an unquantised checkpoint (``weights.online_fp8_checkpoint``). Raises KvMathError."""
    from .weights import mxfp4_backend

    mxfp4 = card and config_quant_method(arch) == "mxfp4"  # another checkpoint never asks for the MXFP4 kernel
    kernel = dict(mxfp4_backend=mxfp4_backend(card.get("compute_capability"), card.get("vendor")) if mxfp4 else None,
                  vllm_version=vllm_version or DEFAULT_VLLM_VERSION, dp=dp)
    if skip_towers:
        kernel["skip_towers"] = tuple(skip_towers)
    if dtype not in (None, "auto"):
        kernel["dtype"] = dtype
    if online_fp8:
        kernel["online_fp8"] = online_fp8

    cfg = _checkpoint_config(arch)
    if cfg is None:
        raise KvMathError(f"no checkpoint size for {arch.name}: pass weights_gb_total (--weights-gb) or a model folder")
    folder = arch.extras.get("folder")
    # one answer prices the same checkpoint several times (the solvers rebudget): remembered per run by the
    # config's content, the folder, the Hub checkpoint object and the sharding (180,000 estimated tensors of a
    # Qwen3-235B config took 0.45 s a pricing)
    ckpt = arch.extras.get("checkpoint")
    try:  # a folder's files replaced in a long session (JupyterLab, the page) change its modification time
        stamp = os.stat(folder).st_mtime_ns if folder else None
    except OSError:
        stamp = None
    key = (json.dumps(cfg, sort_keys=True, default=str), str(folder), stamp, id(ckpt), tp, enable_expert_parallel,
           tuple(sorted(kernel.items())))
    hit = _WEIGHTS_MEMO.get(key)
    if hit is not None and hit[0] is ckpt:
        return hit[1]
    w, source = _checkpoint_weights(arch, cfg, folder, tp, enable_expert_parallel, kernel)
    if len(_WEIGHTS_MEMO) >= 32:
        _WEIGHTS_MEMO.pop(next(iter(_WEIGHTS_MEMO)))
    _WEIGHTS_MEMO[key] = (ckpt, (w, source))
    return w, source


_WEIGHTS_MEMO: dict = {}


def _checkpoint_weights(arch, cfg: dict, folder, tp: int, enable_expert_parallel: bool, kernel: dict):
    """:func:`checkpoint_weights_per_rank`'s work, not remembered."""
    from ...model.checkpoint import list_folder, read_checkpoint
    from .weights import check_gptq_loads, loaded_bytes_per_rank, weights_from_config

    check_gptq_loads(cfg, kernel.get("vllm_version"))
    if arch.extras.get("checkpoint") is not None:  # a Hub id: the safetensors headers read by kvmath.hub
        w = loaded_bytes_per_rank(arch.extras["checkpoint"], cfg, tp=tp, enable_expert_parallel=enable_expert_parallel,
                                  **kernel)
        source = "safetensors headers"
    elif folder and ((listing := list_folder(folder)).safetensors or listing.has_index):  # listed once, entries checked
        ck = read_checkpoint(folder)
        w = loaded_bytes_per_rank(ck, cfg, tp=tp, enable_expert_parallel=enable_expert_parallel, **kernel)
        source = "config.json estimate" if ck.estimated else "safetensors headers"  # an index without its shards
    else:
        try:
            w = weights_from_config(cfg, tp=tp, enable_expert_parallel=enable_expert_parallel, **kernel)
        except KvMathError as e:
            if "weights-gb" in str(e):
                raise
            raise KvMathError(f"{e}; give the checkpoint size (--weights-gb, weights_gb_total) or the model "
                              "folder with its safetensors files") from None
        source = "config.json estimate"
    return w, source


def _model_flags(arch) -> dict:
    """The model facts the fitted non-KV terms key on (read once by kvmath.model)."""
    return {"gemma4": arch.model_type.startswith("gemma4"), "moe": arch.is_moe,
            "vocab_size": arch.vocab_size or None, "hidden_size": arch.hidden_size or None}


# ---------------------------------------------------------------------------------------------------
# the budget


@dataclass(frozen=True)
class Budget:
    """One deployment's per-card budget and vLLM's verdict. Bytes are integers per card.

    Inputs: ``model``, ``card`` (id or "custom"), ``total_bytes`` (card memory as PyTorch reports it),
    ``mem_util``, ``tp``, ``kv_format``, ``max_model_len``, ``max_num_seqs``,
    ``max_num_batched_tokens``, ``num_speculative_tokens``.

    Terms (bytes per card): ``requested`` = ceil(total * mem_util); ``weights``; ``drafter_weights``;
    ``activation`` (= ``gdn_scratch`` exact + ``activation_fitted``); ``overhead`` (CUDA graphs,
    workspace, non-torch, fitted); ``model_offset`` (Gemma 4 / MoE, fitted); ``draft_kv`` (reserved);
    ``non_kv`` = their sum; ``available_kv`` = requested - non_kv (vLLM's "Available KV cache memory").

    Outcome: ``outcome`` in boots / refused / oom; ``plan`` (``vllm_alloc.VllmPlan`` or None when
    nothing is left); ``pool_bytes`` = num_blocks * bytes_per_block; ``pool_tokens`` (vLLM's
    "GPU KV cache size"); ``max_concurrency`` at ``max_model_len``; ``estimated_max_model_len``
    (vLLM's estimate: on a refusal the figure vLLM prints).

    Demand (what ``max_num_seqs`` requests at full context would hold, for charts and the anchor
    comparison): ``kv_per_request`` (vLLM's needed bytes for one request), ``demand_bytes`` =
    kv_per_request * max_num_seqs; ``growing_kv``, ``sliding_kv``, ``state_bytes`` from
    ``kvmath.derive`` (per-token formula, no block rounding).

    ``peak_bytes``: predicted nvidia-smi peak = requested + fitted post-profile overhead.
    """

    model: str
    card: str
    total_bytes: int
    mem_util: float
    tp: int
    kv_format: str
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    num_speculative_tokens: int
    weights_variant: str
    requested: int
    weights: int
    drafter_weights: int
    gdn_scratch: int
    activation_fitted: int
    profile_peak: int
    cudagraph: int
    overhead: int
    model_offset: int
    draft_kv: int
    non_kv: int
    available_kv: int
    outcome: str
    plan: object = None
    pool_bytes: int = 0
    pool_tokens: int = 0
    max_concurrency: float = 0.0
    estimated_max_model_len: int | None = None
    kv_per_request: int = 0
    growing_kv: int = 0
    sliding_kv: int = 0
    state_bytes: int = 0
    peak_bytes: int = 0
    refusal: str | None = None
    refusal_kind: str | None = None
    notes: tuple[str, ...] = ()
    settings: dict = field(default_factory=dict, compare=False)

    @property
    def activation(self) -> int:
        """The GDN warm-up buffers + the fitted per-batched-token term (0 when the fit keeps none); the
        derived torch peak of the profile run is ``profile_peak``."""
        return self.gdn_scratch + self.activation_fitted

    @property
    def boots(self) -> bool:
        return self.outcome == "boots"

    @property
    def margin_bytes(self) -> int:
        """How far the deployment is from the memory line, bytes per card: available KV - what one
        max_model_len request needs. >= 0 passes vLLM's memory check; < 0 is refused or out of memory.
        0 when vLLM stops before sizing memory (``refusal_kind`` "config" or "startup")."""
        return 0 if self.refusal_kind in ("config", "startup") else self.available_kv - self.kv_per_request

    @property
    def marginal(self) -> bool:
        """True when ``margin_bytes`` is inside the calibration error band (``CALIBRATION_ERROR_GIB``):
        the fitted terms cannot tell whether this deployment boots. Never when vLLM stops before sizing
        memory."""
        return (self.refusal_kind not in ("config", "startup")
                and abs(self.margin_bytes) < CALIBRATION_ERROR_GIB * GIB)

    @property
    def demand_bytes(self) -> int:
        return self.kv_per_request * self.max_num_seqs

    @property
    def fits_max_num_seqs(self) -> bool:
        return self.boots and self.max_concurrency >= self.max_num_seqs

    @property
    def max_num_seqs_at_full_context(self) -> int:
        """Largest max_num_seqs whose requests all fit the pool at max_model_len (0 if it does not boot)."""
        return int(self.max_concurrency) if self.boots else 0

    def terms(self) -> list[tuple[str, int]]:
        """(label, bytes) rows of the non-KV side, then the KV side, as the text output prints them."""
        return [
            (f"weights ({self.weights_variant})", self.weights),
            ("drafter weights", self.drafter_weights),
            ("activation peak (profile run, derived)", self.profile_peak),
            ("GDN warm-up + fitted activation", self.activation),
            ("CUDA graphs (first capture derived + per graph fitted)", self.cudagraph),
            ("non-torch memory (fitted)", self.overhead),
            ("model offset (fitted: Gemma 4 +, MoE -)", self.model_offset),
            ("draft KV (reserved)", self.draft_kv),
        ]

    def to_dict(self) -> dict:
        """JSON form; see ``JSON_FIELDS`` for every field's meaning and unit."""
        p = self.plan
        return {
            "model": self.model, "card": self.card, "units": "bytes per card unless the name says _gib or tokens",
            "total_bytes": self.total_bytes, "total_gib": self.total_bytes / GIB, "mem_util": self.mem_util,
            "tp": self.tp, "kv_format": self.kv_format, "max_model_len": self.max_model_len,
            "max_num_seqs": self.max_num_seqs, "max_num_batched_tokens": self.max_num_batched_tokens,
            "num_speculative_tokens": self.num_speculative_tokens, "weights_variant": self.weights_variant,
            "requested_bytes": self.requested, "weights_bytes": self.weights,
            "drafter_weights_bytes": self.drafter_weights, "gdn_scratch_bytes": self.gdn_scratch,
            "activation_bytes": self.activation, "profile_peak_bytes": self.profile_peak,
            "cudagraph_bytes": self.cudagraph, "overhead_bytes": self.overhead,
            "model_offset_bytes": self.model_offset, "draft_kv_bytes": self.draft_kv,
            "non_kv_bytes": self.non_kv, "available_kv_bytes": self.available_kv,
            "available_kv_gib": self.available_kv / GIB,
            "outcome": self.outcome, "outcome_text": OUTCOME_TEXT[
                {"config": "refused_config", "startup": "oom_startup",
                 "mamba_blocks": "refused_mamba_blocks"}.get(self.refusal_kind, self.outcome)],
            "refusal": self.refusal, "refusal_kind": self.refusal_kind,
            "margin_bytes": self.margin_bytes, "margin_gib": self.margin_bytes / GIB, "marginal": self.marginal,
            "calibration_error_gib": CALIBRATION_ERROR_GIB,
            "pool_bytes": self.pool_bytes, "pool_tokens": self.pool_tokens,
            "max_concurrency": self.max_concurrency, "fits_max_num_seqs": self.fits_max_num_seqs,
            "max_num_seqs_at_full_context": self.max_num_seqs_at_full_context,
            "estimated_max_model_len": self.estimated_max_model_len,
            "kv_per_request_bytes": self.kv_per_request, "demand_bytes": self.demand_bytes,
            "growing_kv_bytes": self.growing_kv, "sliding_kv_bytes": self.sliding_kv,
            "state_bytes": self.state_bytes, "peak_bytes": self.peak_bytes, "peak_gib": self.peak_bytes / GIB,
            "block_size": p.block_size if p else None, "num_blocks": p.num_blocks if p else 0,
            "bytes_per_block": p.bytes_per_block if p else 0, "vllm_version": p.vllm_version if p else None,
            "vllm_log": ([f"ERROR {self.refusal}"] if self.refusal_kind == "startup" else list(p.log_lines) if p
                         else []), "notes": list(self.notes),
        }


JSON_FIELDS = {
    "model": "the model's kvmath id or config name",
    "card": "the card priced (a cards.json id, or 'custom' for --vram / total_gib)",
    "units": "the unit rule of this record: bytes per card unless a name ends in _gib or says tokens",
    "total_bytes": "card memory as PyTorch reports it (torch.cuda.mem_get_info's total), bytes",
    "total_gib": "total_bytes in GiB (2^30)",
    "mem_util": "gpu_memory_utilization applied",
    "tp": "tensor_parallel_size",
    "kv_format": "the KV cache format vLLM allocates (--kv-cache-dtype resolved: auto -> the model dtype)",
    "max_model_len": "max_model_len priced, tokens",
    "max_num_seqs": "max_num_seqs priced (vllm serve's default for the card when the line leaves it out)",
    "max_num_batched_tokens": "max_num_batched_tokens priced, tokens (vllm serve's default when left out)",
    "num_speculative_tokens": "speculative tokens per step (MTP / drafter), 0 without speculative decoding",
    "weights_variant": "the checkpoint priced: hf (the model's own tensors) or a published variant",
    "requested_bytes": "vLLM's requested memory: ceil(total * gpu_memory_utilization) (v1/worker/utils.py)",
    "weights_bytes": "weights on this card as vLLM loads them ('Model loading took'), bytes",
    "drafter_weights_bytes": "drafter checkpoint bytes on this card (/ TP)",
    "gdn_scratch_bytes": "FLA h + v_new buffers of the GDN warm-up on 64 tokens (exact, bf16; the profile run "
                         "skips the chunked kernels at max_num_batched_tokens)",
    "activation_bytes": "gdn_scratch + fitted per-batched-token activation (0 when the fit keeps none)",
    "profile_peak_bytes": "derived torch peak of vLLM's profile run: forward of max_num_batched_tokens, sampler "
                          "on max_num_seqs rows, multimodal encoder (kvmath.engines.vllm.activation)",
    "cudagraph_bytes": "CUDA graph estimate vLLM subtracts: per mode, first capture (forward at the largest capture "
                       "size + one graph) + (graphs - 1) x per-graph memory, derived",
    "overhead_bytes": "fitted memory outside PyTorch (const, + tp_gt1 when TP > 1)",
    "model_offset_bytes": "fitted Gemma 4 / MoE offset",
    "draft_kv_bytes": "--draft-kv-gb reserved out of the KV memory",
    "non_kv_bytes": "sum of the non-KV terms",
    "available_kv_bytes": "vLLM's 'Available KV cache memory' = requested - non_kv, bytes (negative when the "
                          "non-KV terms exceed the request, as vLLM logs it)",
    "available_kv_gib": "available_kv_bytes in GiB, as vLLM's log line prints it",
    "outcome": "boots | refused (start-up check failed) | oom (no memory left for the cache)",
    "outcome_text": "the outcome in words",
    "refusal": "vLLM's own message for a refused or out-of-memory start, or null",
    "refusal_kind": "memory (the KV check), config (a configuration check, before memory), startup "
                    "(gpu_memory_utilization leaves less than the fitted peak overhead outside the budget), "
                    "mamba_blocks (max_num_seqs above the pool's blocks on a Mamba/GDN model), or null",
    "margin_bytes": "available_kv - kv_per_request: >= 0 passes vLLM's memory check, < 0 refused or out of memory; "
                    "0 when a configuration check refused first",
    "margin_gib": "margin_bytes in GiB",
    "marginal": "true when |margin| < calibration_error_gib: it may or may not boot",
    "calibration_error_gib": "the calibration error band (largest error of available KV on a deployment left out "
                             "of the fit), GiB",
    "pool_bytes": "KV pool vLLM allocates: num_blocks * bytes_per_block",
    "pool_tokens": "vLLM's 'GPU KV cache size: N tokens' (its version's formula)",
    "max_concurrency": "vLLM's 'Maximum concurrency for max_model_len tokens per request'",
    "fits_max_num_seqs": "true when max_num_seqs requests of max_model_len tokens fit in the pool at once",
    "max_num_seqs_at_full_context": "largest max_num_seqs whose requests all fit at max_model_len",
    "estimated_max_model_len": "vLLM's binary-search estimate of the longest request that fits, tokens (0 when "
                               "it has none)",
    "kv_per_request_bytes": "vLLM's needed bytes for one max_model_len request (blocks, all groups)",
    "demand_bytes": "kv_per_request * max_num_seqs",
    "growing_kv_bytes": "KV that grows with the context, for max_num_seqs requests (kvmath.derive)",
    "sliding_kv_bytes": "sliding-window KV (bounded by the window), for max_num_seqs requests",
    "state_bytes": "recurrent state (GDN / Mamba / KDA) for max_num_seqs requests",
    "peak_bytes": "predicted nvidia-smi peak: requested + fitted post-profile overhead",
    "peak_gib": "peak_bytes in GiB",
    "block_size": "tokens per KV block (the hybrid alignment included), or null without a plan",
    "num_blocks": "KV blocks in the pool ('num_gpu_blocks'), 0 without a pool",
    "bytes_per_block": "bytes of one block over every layer group",
    "vllm_version": "the vLLM release whose rules priced the plan",
    "vllm_log": "vLLM's start-up lines for this plan, word for word",
    "notes": "every default taken, assumption made and rule applied, in words",
    "anchor": "the anchor calculator's own prediction and PASS/TIGHT/FAIL (kv-calc 5b3793b8 rule), or null",
    "largest_max_model_len": "largest max_model_len that boots (solver), tokens; 0 when none boots",
    "largest_max_model_len_with_headroom": "largest max_model_len that still boots with calibration_error_gib "
                                           "less KV memory, tokens; 0 when none",
    "solved_max_ctx": "--solve-max-ctx: the same as largest_max_model_len (the record is the budget at it)",
    "cache_breakdown": "--kv-breakdown: the cache per term and layer group (layout, sequences, gpus, tp, units, "
                       "*_bytes terms, vllm_pool_groups, total_cache_bytes, notes)",
}
"""Every key of ``kvmath-fit vllm serve ... --json`` (``Budget.to_dict`` plus the command's own), one entry each."""

PARALLEL_JSON_FIELDS = {
    "tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size",
    "cards": "cards in all: tp x pp x dp",
    "enable_expert_parallel": "whether the experts are split over tp x dp ranks",
    "layers_per_stage": "decoder layers on each pipeline stage",
    "num_blocks": "KV blocks on every worker (the smallest stage's: vLLM takes the minimum)",
    "pool_tokens": "tokens one engine's pool holds",
    "total_pool_tokens": "tokens over the dp engines",
    "outcome": "boots | refused | oom, the worst stage's",
    "limiting_stage": "the stage index with the fewest blocks, or the first that does not boot",
    "notes": "the deployment's notes and the stages' own, each once",
    "stages": "one vLLM budget record per stage (the keys of the vllm_serve section)",
}
"""The keys of ``kvmath-fit vllm serve ... -pp N / -dp N / --enable-expert-parallel --json``."""


def gdn_scratch_bytes(arch, tp: int, tokens: int) -> int:
    """FLA ``chunk_gated_delta_rule_fwd_h`` buffers for one prefill chunk of ``tokens`` tokens, one
    GDN layer at a time (they are freed between layers): ``h`` (B, NT, H, K, V) in bf16 with
    NT = ceil(T / 64), plus ``v_new`` like ``u`` (T, H, V) in bf16. H = value heads per rank."""
    gdn = arch.linear_layers()
    if not gdn or tokens <= 0:
        return 0
    g = gdn[0]
    hv = g.num_v_heads // tp
    return -(-tokens // FLA_CHUNK) * hv * g.k_head_dim * g.v_head_dim * 2 + tokens * hv * g.v_head_dim * 2


def _non_kv(arch, flags, tp, batched, max_model_len, coeffs, *, max_num_seqs: int = 1, num_speculative_tokens: int = 0,
            enforce_eager: bool = False, enable_expert_parallel: bool = False, last_stage: bool = True,
            sort_top_k_top_p: bool = False, full_cudagraphs: bool = True, encoder_chunk_budget: int | None = None,
            encoder_frame_loop: bool = False, encoder_one_hot: bool = True, mm_limit: int,
            max_pixels: int | None = None, act_bytes: int = 2):
    """(gdn_scratch, activation_fitted, profile_peak, cudagraph, overhead, model_offset, ProfilePeak) in bytes.

    ``profile_peak`` is the derived torch peak of vLLM's profile run and ``cudagraph`` the derived first
    CUDA graph capture plus the fitted per-graph memory (``kvmath.engines.vllm.activation``); the rest are the
    fitted terms the calibration JSON keeps (a coefficient it does not ship is 0)."""
    from .activation import gdn_warmup_bytes, profile_peak

    c = coeffs
    pk = profile_peak(arch, tp=tp, max_num_batched_tokens=batched, max_num_seqs=max_num_seqs,
                      max_model_len=max_model_len, num_speculative_tokens=num_speculative_tokens,
                      enable_expert_parallel=enable_expert_parallel, enforce_eager=enforce_eager, last_stage=last_stage,
                      sort_top_k_top_p=sort_top_k_top_p, full_cudagraphs=full_cudagraphs,
                      encoder_chunk_budget=encoder_chunk_budget, encoder_frame_loop=encoder_frame_loop,
                      encoder_one_hot=encoder_one_hot, mm_limit=mm_limit, max_pixels=max_pixels, act_bytes=act_bytes)
    scratch = gdn_warmup_bytes(arch, tp)
    act = round(c.get("per_8k_batched_tokens_per_tp_gib", 0.0) * batched / 8192 / tp * GIB)
    graphs = pk.cudagraph + round(c.get("per_graph_mib", 0.0) * pk.num_graphs * 2**20)
    over = round((c.get("const_gib", 0.0) + c.get("per_inv_tp_gib", 0.0) / tp
                  + (c.get("tp_gt1_gib", 0.0) if tp > 1 else 0.0)) * GIB)
    off = round(((c.get("gemma4_gib", 0.0) if flags["gemma4"] else 0) + (c.get("moe_gib", 0.0) if flags["moe"] else 0))
                * GIB)
    return scratch, act, pk.torch_peak, graphs, over, off, pk


# vLLM's FlashInfer all-reduce + RMSNorm fusion (compilation pass ``fuse_allreduce_rms``) on by default: the
# release it turned on and the releases read with the PP == 1 / DP == 1 exclusion (vllm/config/vllm.py
# ``enable_allreduce_rms_fusion``: absent / False at every -O level in 0.12.0, 0.14.0 and 0.16.0; on at -O2 in
# 0.17.0, 0.18.0 and 0.19.0 with ``pipeline_parallel_size == 1`` and ``data_parallel_size == 1``; on in 0.27.1
# without them)
AR_FUSION_FROM = (0, 17)
AR_FUSION_PP_EXCLUDED = ((0, 17), (0, 20))
AR_FUSION_GIB = {2: 1.82, 4: 1.88}
"""GiB per card the fusion adds to vLLM's ``non_torch_increase`` on an sm_90 card (measured, not derived): vLLM
0.19.0's own line "Actual usage is ... X GiB for non-torch memory" at TP 2 minus TP 1 on the same H100 SXM machine
and release (llm-d-planner accuracy sweep, data/measurements/vllm-public-boots.csv P122-P139: TP 1 0.24-0.25, TP 2
2.06-2.07, TP 4 2.13; PP 2 / 4, where the pass is off, 0.07). The workspace is created while the model compiles,
after vLLM's memory snapshot (vllm/compilation/passes/fusion/allreduce_rms_fusion.py ``get_fi_ar_workspace``,
FlashInfer's trtllm IPC workspace, cudaMalloc'd outside PyTorch). Its size is not derived here: the token buffer
the pass sizes (``FI_ALLREDUCE_FUSION_MAX_SIZE_MB`` sm_90: 64 MB at TP 2, 2 MB at TP 4) does not explain ~1.8 GiB at
both sizes, and FlashInfer's allocator was not read. It replaces ``tp_gt1_gib``: the TP 2 - TP 1 difference
already holds what any TP > 1 worker adds. Spread: 1.81-1.89 GiB over 6 boots (3 models). Card class: kvmath's sm_90
cards (h100 = H100 80GB HBM3 SXM, h200, h20) are HGX parts on NVSwitch, where the boots were measured; FlashInfer's
workspace can fail without NVSwitch (flashinfer_all_reduce.py warns so for NVLink-bridge or PCIe boxes, and vLLM then
runs without the fusion), so an H100 PCIe pair, not a kvmath card, would not carry it. Not NCCL NVLS: NCCL sets
NVLS up only for more than 2 GPUs (src/transport/nvls.cc ``ncclNvlsInit``: ``gpuCount <= 2`` returns), yet TP 2 logs
the same ~1.8 GiB as TP 4."""


def _release_tuple(text) -> tuple | None:
    import re

    m = re.match(r"\s*v?(\d+)\.(\d+)", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def allreduce_fusion_bytes(cc: int | None, tp: int, pp: int, release, enforce_eager: bool = False
                           ) -> tuple[int, str | None]:
    """(bytes per card, note) of vLLM's FlashInfer all-reduce fusion workspace (``AR_FUSION_GIB``) for a card of
    compute capability ``cc`` (90 = sm_90), TP ``tp``, PP ``pp`` and vLLM ``release`` ("0.19.0"); (0, None) where
    vLLM leaves the pass off (before 0.17, TP 1, a world size FlashInfer does not take (``flashinfer_max_size``:
    2, 4, 8), PP > 1 in 0.17-0.19, a card below sm_90). sm_100 (Blackwell) turns the pass on too but kvmath has
    no measured figure: (0, note) says it is not priced. TP 8 takes TP 4's figure (not measured; note).
    ``enforce_eager``: no compilation, so no fusion pass (0, None)."""
    r = _release_tuple(release)
    if enforce_eager or cc is None or r is None or r < AR_FUSION_FROM or tp not in (2, 4, 8) or cc < 90:
        return 0, None
    if pp > 1 and AR_FUSION_PP_EXCLUDED[0] <= r < AR_FUSION_PP_EXCLUDED[1]:
        return 0, None
    if cc != 90:
        return 0, (f"vLLM {r[0]}.{r[1]} turns on its FlashInfer all-reduce fusion at TP {tp} on sm_{cc}: its "
                   "workspace (non-torch memory, ~1.8 GiB per card on an H100) is not priced here (no measured boot)")
    gib = AR_FUSION_GIB.get(tp, AR_FUSION_GIB[4])
    return round(gib * GIB), (f"non-torch memory: vLLM {r[0]}.{r[1]}'s FlashInfer all-reduce fusion workspace at TP {tp} "
                              f"on sm_90, {gib:.2f} GiB per card measured from vLLM 0.19.0's H100 logs"
                              + (" (TP 4's figure; TP 8 not measured)" if tp not in AR_FUSION_GIB else "")
                              + "; --enforce-eager (no compilation) leaves it out")



def _with_fusion(over: int, coeffs: dict, cc, tp: int, pp: int, enforce_eager: bool, release) -> tuple[int, str | None]:
    """The non-torch bytes ``over`` with the fusion workspace (:func:`allreduce_fusion_bytes`) in place of the
    fitted ``tp_gt1_gib`` where vLLM turns the pass on, and its note."""
    fusion, note = allreduce_fusion_bytes(cc, tp, pp, release, enforce_eager)
    if fusion:
        over += fusion - round(coeffs.get("tp_gt1_gib", 0.0) * GIB)
    return over, note

ATTENTION_BACKENDS = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN")
# Memory left outside vLLM's budget below which a boot is flagged: between what a measured boot left outside
# and what the same compose ran out of memory with (_CITES["headroom_outside_budget"]).
HEADROOM_OUTSIDE_BUDGET_GIB = 1.0
DFLASH_NOTE = ("DFlash drafter: its own attention layers share the KV pool and are not modelled, so the pool, "
               f"concurrency and largest context are upper bounds ({_CITES['dflash_drafter_kv']}); reserve them "
               "with --include-draft-kv --draft-kv-gb")


def _check_format_card(fmt_name: str, cc: int | None, card_label: str, backend: str | None = None,
                       gemma4: bool = False) -> str | None:
    """Raise KvMathError when vLLM cannot run the KV format on the card; return a note when it runs
    only on one backend. fp8_e4m3 below sm_89: Triton's fp8e4nv type needs sm_89 (vllm issue #26431)
    and FlashAttention has no fp8 KV there; FlashInfer converts in software (vllm PR #24577), but
    vLLM routes Gemma 4 (512-wide heads) to Triton whatever the request."""

    if cc is None:
        return None
    fmt = vllm_format(fmt_name)
    if fmt.compute_capabilities and cc not in fmt.compute_capabilities:
        if fmt.name == "fp8_e4m3" and cc >= 80 and backend == "FLASHINFER" and not gemma4:
            return (f"fp8_e4m3 on sm_{cc} runs only on the FlashInfer backend (software fp8 conversion, vllm PR "
                    "#24577); Triton and FlashAttention refuse it (vllm issue #26431)")
        ok = [n for n, f in VLLM_FORMATS.items() if not f.compute_capabilities or cc in f.compute_capabilities]
        hint = ""
        if fmt.name == "fp8_e4m3" and cc >= 80:
            hint = ("; vLLM runs it here only with --attention-backend FLASHINFER" if not gemma4 else
                    "; Gemma 4 is routed to the Triton backend, which cannot run it")
        raise KvMathError(
            f"--kv-format {fmt.name} cannot run on {card_label} (sm_{cc}): {fmt.note}{hint}; "
            f"formats this card runs: {choices(ok)}")
    return None


def _one_hot_note(arch, mm_limit: int, rules: dict, given: bool | None, version) -> str | None:
    """The note saying how Gemma 4's vision patch embedder was priced, when its tower is profiled. ``given``: budget's
    ``gemma4_position_one_hot``, whether the transformers beside vLLM builds Gemma 4's one-hot patch positions (True
    before transformers 5.11.0); None: as a fresh install on the release's day had it
    (``releases.VllmRelease.gemma4_position_one_hot``). ``version``: the release, or budget's vLLM settings."""
    if isinstance(version, dict):
        version = version.get("vllm_version", DEFAULT_VLLM_VERSION)
    from .activation import _vision_cfg

    v = _vision_cfg(arch)
    if not mm_limit or not isinstance(v, dict) or v.get("model_type") != "gemma4_vision":
        return None
    on = rules["gemma4_position_one_hot"] if given is None else given
    how = ("with transformers' one-hot patch positions (transformers before 5.11.0" if on
           else "with transformers' F.embedding patch positions (transformers 5.11.0 or later")
    why = "as given" if given is not None else f"what a fresh install of vLLM {version} took on its release day"
    return (f"Gemma 4's vision encoder profile priced {how}, {why}); the one-hot adds [frames, patches, 2, "
            "position_embedding_size] x 10 B to the profile peak, so the transformers beside vLLM moves it")


def _check_arguments(a: dict) -> dict:
    """``budget``'s arguments checked before any arithmetic (kvmath.validate: one line naming field, value and
    range), the counts returned normalised. ``a``: the call's arguments by name. Raises KvMathError."""
    a = dict(a)
    a["tp"] = check_positive(a["tp"], "tp", maximum=MAX_TP)
    a["data_parallel_size"] = check_positive(a["data_parallel_size"], "data_parallel_size", maximum=MAX_TP)
    for name in ("max_num_seqs", "max_num_batched_tokens"):  # None: vllm serve's default for the card
        if a[name] is not None:
            a[name] = check_positive(a[name], name, maximum=MAX_TOKENS)
    if a["max_model_len"] is not None:  # bounded by MAX_TOKENS later, after the model's own maximum is named
        a["max_model_len"] = check_positive(a["max_model_len"], "max_model_len", maximum=10**30)
    check_number(a["mem_util"], "mem_util (gpu_memory_utilization)", 0, 1, open_min=True)
    a["num_speculative_tokens"] = check_count(a["num_speculative_tokens"], "num_speculative_tokens", maximum=1024)
    if a["weights_bytes"] is not None:
        a["weights_bytes"] = check_count(a["weights_bytes"], "weights_bytes", maximum=2**60)
    check_name(a["kv_format"], "kv_format", maximum=64)
    check_name(a["weights_variant"], "weights_variant", maximum=64)
    check_name(a["attention_backend"], "attention_backend", maximum=64, optional=True)
    for name in ("check_card", "allow_long_max_model_len", "dflash", "enforce_eager", "enable_expert_parallel",
                 "last_stage", "estimate_cudagraphs"):
        check_bool(a[name], name)
    if a["gemma4_position_one_hot"] is not None:
        check_bool(a["gemma4_position_one_hot"], "gemma4_position_one_hot")
    for name in ("drafter_gb", "draft_kv_gb"):
        check_number(a[name], f"{name} (GB)", 0, MAX_GB)
    if a["weights_gb_total"] is not None:
        check_number(a["weights_gb_total"], "weights_gb_total (GB)", 0, MAX_GB, open_min=True)
    card, coefficients = a["card"], a["coefficients"]
    if card is not None and not isinstance(card, (str, dict)):
        raise KvMathError(f"card must be a card id such as rtx3090 (or None with total_gib), got {_short(card)}")
    if isinstance(card, str):
        check_name(card, "card", maximum=64)
    if coefficients is not None and not isinstance(coefficients, dict):
        raise KvMathError(f"coefficients must be a dict like kvmath.budget.COEFFICIENTS, got {_short(coefficients)}")
    for k, v in (coefficients or {}).items():
        if not isinstance(k, str) or (k not in COEFFICIENTS and k not in KNOWN_COEFFICIENTS):
            raise KvMathError(f"unknown coefficient {_short(k)}; valid: "
                              f"{choices(sorted(set(COEFFICIENTS) | set(KNOWN_COEFFICIENTS)))}")
        check_number(v, f"coefficient {k} (GiB)", -2**20, 2**20)
    if a["attention_backend"] is not None and a["attention_backend"] not in ATTENTION_BACKENDS:
        raise KvMathError(f"unknown attention backend {a['attention_backend']!r}; valid: {choices(ATTENTION_BACKENDS)}")
    return a


def _card_memory(card, total_gib) -> tuple[dict | None, float, str, int | None]:
    """(the card's entry or None, its memory in GiB as PyTorch reports it, its id or "custom", its compute
    capability or None) from a card id or dict, or a custom ``total_gib``. Raises KvMathError."""
    if card is not None and total_gib is None:
        c = globals()["card"](card) if isinstance(card, str) else card
        try:
            total_gib, card_id, cc = c["total_gib"], c["id"], c["compute_capability"]
        except KeyError as e:
            raise KvMathError(f"a card dict needs total_gib, id and compute_capability; it has no {e}") from None
        check_number(total_gib, f"card {_short(card_id)} total_gib", 0, 2**20, open_min=True)
        return c, total_gib, card_id, cc
    if not (_finite(total_gib) and 0 < total_gib <= 2**20):
        raise KvMathError(f"card memory must be a positive number of GiB (at most 2^20), got {_short(total_gib)}")
    return None, total_gib, "custom", None


def _max_model_len(arch, max_model_len: int | None, allow_long: bool) -> int:
    """``max_model_len``, or the model's ``max_position_embeddings`` (else vLLM's derived maximum, from another
    length key such as Kimi Linear's ``model_max_length``), checked against the derived maximum as vLLM checks it
    (refused above it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1). Tokens. Raises KvMathError."""
    L = max_model_len or arch.max_position_embeddings or arch.derived_max_model_len
    if not L:
        raise KvMathError(f"{arch.name}: config has no length vLLM reads (max_position_embeddings, model_max_length, "
                          "...); pass max_model_len")
    if isinstance(L, bool) or not isinstance(L, int) or L < 1:
        raise KvMathError(f"max_model_len must be a positive integer, got {L!r}")
    derived = arch.derived_max_model_len
    if derived and L > derived and not allow_long:
        raise KvMathError(
            f"max_model_len {L:,} is greater than {arch.name}'s derived maximum {derived:,} (max_position_embeddings "
            "or another length key, rope scaling applied); vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
            "(Python: allow_long_max_model_len=True)")
    return check_positive(L, "max_model_len", maximum=MAX_TOKENS)


def _head256_kernel_block(arch, cc: int | None, attention_backend: str | None, vllm_settings: dict) -> None:
    """vLLM 0.12-0.14 (``head256_align_32``): a hybrid with 256-wide attention heads on sm_100 (0.12: exactly
    10.0; 0.14: the 10.x family) with FlashInfer or the default backend is aligned to 32 tokens
    (models/config.py HybridAttentionMambaModelConfig); set ``kernel_block_size`` 32 so the plan takes it."""
    from .releases import release

    if cc is None or vllm_settings.get("kernel_block_size") is not None or not arch.state_layers():
        return
    try:
        mode = release(vllm_settings.get("vllm_version")).head256_align_32
    except KvMathError:
        return
    on = cc == 100 if mode == "exact" else cc // 10 == 10 if mode == "family" else False
    full = [x for x in arch.layers if getattr(x, "kind", None) == "attention"]
    if on and full and full[0].head_dim == 256 and attention_backend in (None, "FLASHINFER"):
        vllm_settings["kernel_block_size"] = 32


def _mla_kernel_block(arch, cc: int | None, card_id: str, vllm_settings: dict) -> str | None:
    """Set ``vllm_settings["kernel_block_size"]`` for an MLA model (the hybrid alignment of Kimi Linear) from the
    MLA backend vLLM picks on the card (``settings.mla_kernel_block_size``) unless given; the note for a hybrid,
    or None."""
    from .settings import mla_kernel_block_size

    mla = next(iter(arch.mla_layers()), None)
    if mla is None or vllm_settings.get("kernel_block_size") is not None or cc is None:
        return None
    kb, backend = mla_kernel_block_size(cc, mla.qk_nope_head_dim)
    vllm_settings["kernel_block_size"] = kb
    if not (arch.linear_layers() or arch.state_layers()):
        return None
    return (f"MLA attention on {card_id} (sm_{cc}): {backend}, vLLM's first choice there, whose smallest kernel "
            f"block ({kb} tokens) aligns the hybrid block size (platforms/cuda.py _get_backend_priorities)")


MM_MODALITIES = ("image", "video", "audio")


_AUDIO_CONFIG_KEY = {"granite_speech": ("encoder_config",), "nemotron_h_omni": ("audio_config", "sound_config")}
"""Wrappers whose audio tower's config is not (only) ``audio_config``: Granite Speech's Conformer encoder is
``encoder_config`` (transformers 5.23 GraniteSpeechConfig; vLLM 0.24 granite_speech.py builds it under
``_mark_tower_model(vllm_config, "audio")``); Nemotron-H Omni's released configs name theirs ``sound_config``
(NemotronHOmniConfig ``_legacy_field_names``)."""


def _audio_key(cfg) -> str:
    """The config key of the audio tower vLLM would build for ``cfg`` (:data:`_AUDIO_CONFIG_KEY`): the first of the
    wrapper's keys the config holds, else ``audio_config``."""
    if not isinstance(cfg, dict):  # an Architecture built without its config (a GGUF, the API): no audio tower read
        return "audio_config"
    mt = cfg.get("model_type")
    keys = _AUDIO_CONFIG_KEY.get(mt, ("audio_config",)) if isinstance(mt, str) else ("audio_config",)
    return next((k for k in keys if isinstance(cfg.get(k), dict)), keys[0])


def _refuse_unmodelled_audio(arch, audio_limit: int) -> None:
    """Refuse an audio tower vLLM would build and profile (its ``audio_config``; Voxtral's Whisper encoder):
    kvmath has no rule for an audio encoder's profile run, and leaving it out would be a silent wrong number.
    ``audio_limit``: the audio modality's ``--limit-mm-per-prompt`` (0: the tower is neither built nor profiled)."""
    cfg = arch.extras.get("hf_config")
    key = _audio_key(cfg)
    if audio_limit and isinstance(cfg, dict) and isinstance(cfg.get(key), dict):
        raise KvMathError(f"{arch.name} has an audio tower ({key}) that vLLM builds and profiles at start-up; "
                          "kvmath does not model an audio encoder's profile: price the text model with "
                          "--limit-mm-per-prompt '{\"audio\": 0}' or --language-model-only")


def mm_limits(arch, limit_mm_per_prompt: dict | None) -> tuple[int, tuple[str, ...], str | None]:
    """What vLLM's ``--limit-mm-per-prompt`` does to memory, read from vLLM 0.20.0, 0.24.0 and 0.33.0 (the same):
    a modality left out has the limit 999 (``MultiModalConfig.get_limit_per_prompt``, vllm/config/multimodal.py);
    a tower whose every modality is at 0 is not built (``_mark_tower_model``, model_executor/models/interfaces.py:
    ``{"image", "video"}`` for the vision tower, ``"audio"``), and a modality at 0 is not profiled
    (``MultiModalBudget``, vllm/multimodal/encoder_budget.py); the profiled modality's limit bounds its items per
    prompt (``_get_max_items``). ``limit_mm_per_prompt``: modality -> an integer >= 0 or ``{"count": n, ...}``
    (vLLM's two forms); None: vLLM's defaults.

    Returns (the profiled modality's limit for ``activation.encoder_terms``, 0 for no encoder profile; the
    towers not built, for ``weights.weights_per_rank``; a note or None). Raises KvMathError for a malformed
    value, an unknown modality, or a limit that makes vLLM profile a modality kvmath does not model."""
    from .activation import MM_LIMIT_UNSET, profiled_modality

    if limit_mm_per_prompt is None:
        _refuse_unmodelled_audio(arch, MM_LIMIT_UNSET)
        return MM_LIMIT_UNSET, (), None
    if not isinstance(limit_mm_per_prompt, dict):
        raise KvMathError(f"limit_mm_per_prompt must be an object of modality -> count, e.g. {{\"image\": 0, "
                          f"\"video\": 0}}, got {_short(limit_mm_per_prompt)}")
    limits = {}
    for m, v in limit_mm_per_prompt.items():
        if m not in MM_MODALITIES:
            raise KvMathError(f"--limit-mm-per-prompt: unknown modality {_short(m)}; valid: {choices(MM_MODALITIES)}")
        if isinstance(v, dict):
            # the dict form's other keys (width / height, num_frames, length) size the dummy item vLLM profiles
            # with (ImageDummyOptions etc., vllm/config/multimodal.py 0.24.0), which kvmath does not model;
            # "count" left out is BaseDummyOptions' default, 999
            other = sorted(str(k) for k in v if k != "count")
            if other:
                raise KvMathError(f"--limit-mm-per-prompt {m}: {_short(other[0])} sets the size of the item vLLM profiles "
                                  "with, which kvmath does not model; give only the count (e.g. {\"image\": 2})")
            n = v.get("count", MM_LIMIT_UNSET)
        else:
            n = v
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_TOKENS:
            raise KvMathError(f"--limit-mm-per-prompt {m}: the count must be a whole number >= 0, got {_short(v)}")
        limits[m] = n
    get = lambda m: limits.get(m, MM_LIMIT_UNSET)  # noqa: E731
    _refuse_unmodelled_audio(arch, get("audio"))
    skip = tuple(t for t, ms in (("vision", ("image", "video")), ("audio", ("audio",))) if all(get(m) == 0 for m in ms))
    shown = ", ".join(f"{m} {n}" for m, n in limits.items())
    profiled = profiled_modality(arch)
    if profiled is None:
        return MM_LIMIT_UNSET, skip, f"--limit-mm-per-prompt {shown}: {arch.name} has no vision tower kvmath prices"
    if "vision" in skip:
        return 0, skip, (f"--limit-mm-per-prompt {shown}: the vision tower is neither built nor profiled (vLLM "
                         "_mark_tower_model, MultiModalBudget)")
    if get(profiled) == 0:
        other = "video" if profiled == "image" else "image"
        raise KvMathError(f"--limit-mm-per-prompt {profiled} 0 with {other} allowed: vLLM then profiles {other} "
                          f"through {arch.name}'s vision tower, which kvmath does not model; set both image and video "
                          f"to 0 (or --language-model-only), or allow {profiled}")
    return get(profiled), skip, (f"--limit-mm-per-prompt {shown}: the encoder profile takes at most {get(profiled)} "
                                 f"{profiled} item(s) per prompt (encoder_budget.py _get_max_items)")


MM_PROCESSOR_KEYS = ("max_pixels", "min_pixels", "size")
"""The ``--mm-processor-kwargs`` keys kvmath models: the three the Qwen VL profile reads (qwen2_vl.py
``get_image_size_with_most_features``, qwen3_vl.py ``_get_vision_info`` / ``get_max_video_tokens``)."""
MM_MAX_PIXELS = 2**31
"""The largest ``max_pixels`` kvmath prices (a 46,341 x 46,341 image); beyond it the answer is refused."""
MM_MIN_PIXELS = 262144
"""The smallest ``max_pixels`` kvmath prices (256 tokens of a 16 x 2 Qwen tower): below the image processor's
own minimum (``shortest_edge``, which kvmath does not hold) vLLM would enlarge the profiling image."""


def mm_processor_pixels(arch, mm_processor_kwargs: dict | None) -> tuple[int | None, str | None]:
    """The pixels of the image vLLM profiles the vision tower with under ``--mm-processor-kwargs`` (None: the image
    processor's own), and a note. Read from vLLM 0.20.0 and 0.24.0 (the same): the profile run encodes the
    modality with the most tokens per item; for the Qwen 3.5 / 3.6 towers (``Qwen3VLProcessingInfo``) the image's
    size is the processor's ``size`` merged with the kwargs' ``size``, then ``max_pixels`` as its
    ``longest_edge`` (``get_image_size_with_most_features``); ``min_pixels`` / ``shortest_edge`` do not change it.
    The video item takes ``size["longest_edge"] / temporal_patch_size`` pixels and is resized under the same
    merged ``longest_edge`` for two frames (``get_max_video_tokens``, ``_get_vision_info``: transformers'
    ``video_processing_qwen3_vl.smart_resize`` keeps ``2 x h x w <= longest_edge``), so with either key given
    it has at most half the image's pixels and the image stays the profiled item, as it is at the defaults
    (16,384 image tokens against 12,288, https://github.com/noonghunna/club-3090/issues/602).

    Raises KvMathError for a model whose tower kvmath does not price this way, a key it does not model, a
    ``size`` without ``longest_edge`` (vLLM's video profile reads it), or pixels outside
    [MM_MIN_PIXELS, MM_MAX_PIXELS] or below ``min_pixels``."""
    from .activation import QWEN_VL_MAX_PIXELS, _vision_cfg, qwen_vl_image_tokens

    if mm_processor_kwargs is None:
        return None, None
    if not isinstance(mm_processor_kwargs, dict):
        raise KvMathError(f"--mm-processor-kwargs must be a JSON object, got {_short(mm_processor_kwargs)}")
    v = _vision_cfg(arch)
    if not v or v.get("model_type") not in QWEN_VL_MAX_PIXELS:
        raise KvMathError(f"--mm-processor-kwargs: kvmath models it for the Qwen 3.5 / 3.6 vision towers only (their "
                          f"profiling image's size); {arch.name} "
                          + ("has no vision tower" if not v else f"has a {v.get('model_type')} tower")
                          + ": drop the flag")
    other = [k for k in mm_processor_kwargs if k not in MM_PROCESSOR_KEYS]
    if other:
        raise KvMathError(f"--mm-processor-kwargs {_short(other[0])} is not modelled; the keys kvmath reads: "
                          f"{choices(MM_PROCESSOR_KEYS)}")

    def pixels(value, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MM_MAX_PIXELS:
            raise KvMathError(f"--mm-processor-kwargs {what} must be a whole number of pixels in 1..{MM_MAX_PIXELS:,}, "
                              f"got {_short(value)}")
        return value

    size = mm_processor_kwargs.get("size")
    if size is not None:
        if not isinstance(size, dict) or "longest_edge" not in size or set(size) - {"longest_edge", "shortest_edge"}:
            raise KvMathError("--mm-processor-kwargs size must be {\"longest_edge\": N} (optionally with "
                              f"\"shortest_edge\"): vLLM's Qwen video profile reads size['longest_edge']; got {_short(size)}")
    low = [pixels(x, k) for k, x in (("min_pixels", mm_processor_kwargs.get("min_pixels")),
                                     ("size.shortest_edge", (size or {}).get("shortest_edge"))) if x is not None]
    if "max_pixels" in mm_processor_kwargs:
        top, how = pixels(mm_processor_kwargs["max_pixels"], "max_pixels"), "max_pixels"
    elif size is not None:
        top, how = pixels(size["longest_edge"], "size.longest_edge"), "size.longest_edge"
    else:
        return None, "--mm-processor-kwargs: min_pixels / shortest_edge do not change the profiled image"
    if top < MM_MIN_PIXELS:
        raise KvMathError(f"--mm-processor-kwargs {how} {top:,}: kvmath prices profiling images of at least "
                          f"{MM_MIN_PIXELS:,} pixels (below, the image processor's own minimum size decides)")
    tok, w, h = qwen_vl_image_tokens(top, int(v["patch_size"]), int(v["spatial_merge_size"]))
    if low and max(low) > w * h:
        raise KvMathError(f"--mm-processor-kwargs min_pixels / shortest_edge {max(low):,} is above the profiling "
                          f"image ({w} x {h} = {w * h:,} pixels): vLLM would enlarge it, which kvmath does not model")
    return top, (f"--mm-processor-kwargs {how} {top:,}: the vision tower is profiled on a {w} x {h} image of {tok:,} "
                 "tokens (qwen2_vl.py get_image_size_with_most_features)")


@dataclass(frozen=True)
class _Weights:
    """Where ``budget``'s weights term comes from: ``derived`` (the checkpoint's own tensors on rank 0, or None
    for a published size), the variant, its size ``wgb`` (GB) and fitted ``extra_gb``, and the notes."""

    derived: object
    variant: str
    wgb: float
    extra_gb: float
    notes: tuple[str, ...]
    kernel_bytes: int = 0  # per rank, on a checkpoint size given or published: the MXFP4 experts' kernel padding
    tower_bytes: int = 0  # per rank, on a published size: the multimodal towers vLLM does not build (subtracted)


def check_weights_variant(arch, weights_variant: str | None, *, sized: bool = False) -> None:
    """Refuse a ``weights_variant`` that names no checkpoint of ``arch`` (one line naming the valid ones), before
    anything is priced: for a model without published sizes, one of its own tensors (:func:`_check_own_variant`);
    for a known one, a published variant (``weights_gb``) unless it is the repository's own (``hf``, or ``bf16`` of
    an unquantised repository). ``sized``: a checkpoint size is given (``--weights-gb``), which replaces the
    variant's. Raises KvMathError."""
    if arch.name not in _deployments():
        if _checkpoint_config(arch) is not None:
            _check_own_variant(arch, weights_variant, sized=sized)
    elif str(weights_variant or "default").lower() != "default" and not (
            _own_checkpoint(arch, weights_variant) or (sized and str(weights_variant).lower() == "bf16")):
        weights_gb(arch.name, weights_variant)


def _weights_source(arch, model, a: dict, coeffs: dict, card_entry: dict | None, vllm_version) -> _Weights:
    """The checkpoint the weights term prices (``budget``'s docstring: ``weights_variant``, ``weights_gb_total``).
    Raises KvMathError."""
    check_weights_variant(arch, a["weights_variant"], sized=a["weights_gb_total"] is not None)
    if a["weights_gb_total"] is None and _own_checkpoint(arch, a["weights_variant"]):
        # no published size, or the HF repository's own checkpoint asked for (--weights-variant hf, or bf16 of
        # an unquantised repository): the checkpoint's own tensors (safetensors headers of a model folder), or
        # the tensors its config.json + quantization_config imply, placed on rank 0 as vLLM shards them
        w, variant = checkpoint_weights_per_rank(arch, a["tp"], enable_expert_parallel=a["enable_expert_parallel"],
                                                 card=card_entry, vllm_version=vllm_version,
                                                 dp=a["data_parallel_size"], skip_towers=a["_skip_towers"],
                                                 dtype=a["dtype"], online_fp8=a["_online_fp8"])
        wgb = w.checkpoint_bytes / GB
        files = f"{wgb:.2f} GB of checkpoint files" if wgb >= 0.01 else f"{w.checkpoint_bytes:,} B of checkpoint files"
        notes = (f"weights: {w.total / GIB:.2f} GiB per card from the checkpoint's {variant} ({files}; per card as "
                 "vLLM loads and shards them)",) + tuple(f"weights: {n}" for n in w.notes)
        return _Weights(w, variant, wgb, 0.0, notes)
    if a["dtype"] == "float32" or a["_online_fp8"]:  # a published size is its 16-bit / quantised files
        raise KvMathError(("--dtype float32" if a["dtype"] == "float32" else "--quantization fp8") + " needs the "
                          "checkpoint's own tensors (the HF repository, --weights-variant hf, or a folder): a "
                          "published or given size is not what vLLM loads then")
    kernel, kernel_notes = _mxfp4_kernel_on_a_size(arch, a, card_entry, vllm_version)
    if a["weights_gb_total"] is None:
        variant, wgb = weights_gb(arch.name if arch.name in _deployments() else str(model), a["weights_variant"])
        extra_gb = coeffs.get(f"weights_extra_gb[{arch.name}/{variant}]", 0.0)
        if f"{arch.name}/{variant}" in LOGGED_CHECKPOINT_GIB:  # vLLM's own log of the checkpoint's size
            wgb = LOGGED_CHECKPOINT_GIB[f"{arch.name}/{variant}"] * GIB / GB
        tower, tower_notes = _towers_of_a_size(arch, a, card_entry, vllm_version)
        return _Weights(None, variant, wgb, extra_gb, kernel_notes + tower_notes, kernel, tower)
    if not _finite(a["weights_gb_total"]) or a["weights_gb_total"] <= 0:
        raise KvMathError(f"weights GB must be a finite positive number, got {a['weights_gb_total']!r}")
    if a["_skip_towers"]:
        kernel_notes += ("weights: the given size is taken as what vLLM loads, without the towers it does not build",)
    return _Weights(None, "custom", a["weights_gb_total"], 0.0, kernel_notes, kernel)


def _towers_of_a_size(arch, a: dict, card_entry: dict | None, vllm_version) -> tuple[int, tuple[str, ...]]:
    """Bytes per rank of the multimodal towers vLLM does not build (``a["_skip_towers"]``) in a checkpoint priced
    by its published size, and the note: the towers' tensors of the model's own checkpoint config, as vLLM shards
    them (a published size is the whole checkpoint; quantised checkpoints keep their towers in the config's
    dtype). (0, ()) when no tower is skipped. Raises KvMathError."""
    if not a["_skip_towers"] or _checkpoint_config(arch) is None:
        return 0, ()
    kw = dict(enable_expert_parallel=a["enable_expert_parallel"], card=card_entry, vllm_version=vllm_version,
              dp=a["data_parallel_size"])
    whole, _ = checkpoint_weights_per_rank(arch, a["tp"], **kw)
    lean, _ = checkpoint_weights_per_rank(arch, a["tp"], skip_towers=a["_skip_towers"], **kw)
    tower = whole.total - lean.total
    if tower <= 0:
        return 0, ()
    return tower, (f"weights: {tower / GIB:.2f} GiB per card of {' and '.join(a['_skip_towers'])} tower tensors "
                   "taken off the published size (vLLM does not build the tower: every modality it serves has a "
                   "--limit-mm-per-prompt of 0; the tower's size from the model's own checkpoint config)",)


def _card_dtype(arch, kv_format: str, cc: int | None, card_id: str) -> tuple[str, str | None]:
    """The model dtype vLLM runs on the card: a bfloat16 checkpoint on an NVIDIA card below sm_80 runs in float16
    (vllm/config/model.py ``_resolve_auto_dtype``: "Falling back to torch.float16 for compatibility";
    platforms/cuda.py ``supported_dtypes``, read at 0.20.0 and 0.24.0), so the ``auto`` KV cache is float16 too: the
    same 2 bytes per element, under their real name; ``--kv-cache-dtype fp8`` is named as the fp8_e4m3 it is.
    Returns (kv_format, note or None)."""
    if kv_format == "fp8":  # vllm/config/cache.py CacheDType: "fp8" is fp8_e4m3 on CUDA and ROCm
        return "fp8_e4m3", "--kv-cache-dtype fp8 is vLLM's fp8_e4m3 (config/cache.py: 'fp8' means e4m3)"
    if cc is None or cc >= 80 or arch.dtype != "bfloat16":
        return kv_format, None
    return ("fp16" if kv_format == "auto" else kv_format), (
        f"{card_id} (sm_{cc}) has no bfloat16: vLLM runs the bfloat16 checkpoint in float16 (config/model.py "
        "_resolve_auto_dtype, 'Falling back to torch.float16'), the same 2 bytes per element")


def _dtype_and_quantization(arch, a: dict, kv_format: str, cc: int | None, card_id: str) -> tuple:
    """(kv_format, attention_backend, activation bytes, card dtype note, float32 note) of ``budget``'s arguments
    ``a`` on the card: :func:`_card_dtype`, :func:`_runtime_dtype_rules` for ``a["dtype"]`` (vLLM's ``--dtype`` as the
    torch dtype: "auto", "float16", "bfloat16", "float32"); sets ``a["_online_fp8"]`` from ``a["quantization"]``
    (``--quantization fp8`` of an unquantised checkpoint: :func:`_online_fp8_mode`). Raises KvMathError."""
    if a["dtype"] == "float32" and a["quantization"]:
        raise KvMathError("--dtype float32 with --quantization fp8: the FP8 kernels' float32 output is not modelled "
                          "(valid here: --dtype auto, float16 or bfloat16)")
    # a float32 run is float32 on every card (platforms/cuda.py supported_dtypes lists it from sm_60 down):
    # the bf16 -> fp16 fallback below sm_80 (_card_dtype) is for the auto dtype
    kv_format, dtype_note = (_card_dtype(arch, kv_format, cc, card_id) if a["dtype"] != "float32" or kv_format == "fp8"
                             else (kv_format, None))
    kv_format, backend, act_bytes, fp32_note = _runtime_dtype_rules(a["dtype"], kv_format, a["attention_backend"], cc,
                                                                    card_id)
    a["_online_fp8"] = _online_fp8_mode(arch, a["quantization"], cc, card_id)
    return kv_format, backend, act_bytes, dtype_note, fp32_note


VLLM_DTYPES = ("auto", "float16", "bfloat16", "float32")
FP32_ATTENTION_BACKEND = "TRITON_ATTN"
FP32_REFUSED_BACKENDS = ("FLASH_ATTN", "FLASHINFER")


def _runtime_dtype_rules(dtype: str, kv_format: str, attention_backend: str | None, cc: int | None,
                         card_id: str) -> tuple[str, str | None, int, str | None]:
    """(kv_format, attention_backend, activation bytes per element, note) for vLLM's ``--dtype``.

    ``float32`` (vLLM 0.19.0 and 0.24.0 read): ``platforms/cuda.py`` ``supported_dtypes`` takes float32 on every
    NVIDIA card; the ``auto`` KV cache is the model dtype (4 bytes: P130 logged 175,296 tokens in 42.8 GiB,
    262,144 B per token = 32 layers x 2 x 8 KV heads x 128 x 4 B); activations are float32 (``act_bytes`` 4,
    ``activation.forward_terms`` / ``sampler_terms``). Attention: ``CudaPlatform.get_valid_backends`` walks
    ``_get_backend_priorities`` (FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION; FLASHINFER first on sm_100)
    and drops a backend whose ``supported_dtypes`` lacks the model dtype: flash_attn.py and flashinfer.py list
    float16 / bfloat16 only, triton_attn.py float16 / bfloat16 / float32, so float32 runs TRITON_ATTN (kernel
    block sizes MultipleOf(16): the default 16-token blocks). A ``--attention-backend`` FLASH_ATTN / FLASHINFER
    with float32 is refused (vLLM: "not valid for this configuration"). A float32 model with
    ``--kv-cache-dtype fp8`` is not modelled. Raises KvMathError."""
    if dtype not in VLLM_DTYPES:
        raise KvMathError(f"dtype {str(dtype)[:40]!r} is not one vLLM takes; valid: {', '.join(VLLM_DTYPES)}")
    if dtype != "float32":
        return kv_format, attention_backend, 2, None
    if attention_backend in FP32_REFUSED_BACKENDS:
        raise KvMathError(f"--attention-backend {attention_backend} with --dtype float32: vLLM refuses it (the "
                          f"backend's supported_dtypes are float16 and bfloat16); valid here: {FP32_ATTENTION_BACKEND}")
    if kv_format not in ("auto", "fp32"):
        raise KvMathError(f"--dtype float32 with --kv-cache-dtype {kv_format}: not modelled (valid here: auto)")
    return "fp32", attention_backend or FP32_ATTENTION_BACKEND, 4, (
        "--dtype float32: weights, the auto KV cache (4 bytes per element) and activations in float32; attention "
        f"{attention_backend or FP32_ATTENTION_BACKEND} (FlashAttention and FlashInfer take float16 / bfloat16 "
        "only: v1/attention/backends/*.py supported_dtypes, platforms/cuda.py backend priorities, vLLM 0.19.0 / "
        "0.24.0)")


def _online_fp8_mode(arch, quantization: str | None, cc: int | None, card_id: str) -> str | None:
    """None, or "native" / "marlin" for ``--quantization fp8`` of an unquantised checkpoint: FP8 tensor cores from
    sm_89, Marlin weight-only below (``weights.ONLINE_FP8_MARLIN_BELOW_SM``). Raises KvMathError for another
    method, a quantised checkpoint, or a card whose compute capability is not known."""
    if quantization is None:
        return None
    if quantization != "fp8":
        raise KvMathError(f"quantization {str(quantization)[:40]!r}: only online fp8 is priced here")
    if config_quant_method(arch):
        raise KvMathError(f"--quantization fp8 on a {config_quant_method(arch)} checkpoint: not online quantisation")
    if arch.is_moe or arch.linear_layers() or arch.state_layers() or _checkpoint_has_towers(arch):
        raise KvMathError(f"--quantization fp8 (online) on {arch.name}: priced for dense attention-only text models; "
                          "its experts / recurrent mixers / vision tower layers under online FP8 are not modelled")
    if cc is None:
        raise KvMathError(f"--quantization fp8 on {card_id}: the kernel (FP8 or Marlin) depends on the compute "
                          "capability; pass --card")
    from .weights import ONLINE_FP8_MARLIN_BELOW_SM

    return "marlin" if cc < ONLINE_FP8_MARLIN_BELOW_SM else "native"


def _checkpoint_has_towers(arch) -> bool:
    """Whether the model's config has a vision / audio tower (``activation._vision_cfg``, or an ``audio_config``)."""
    from .activation import _vision_cfg

    cfg = _checkpoint_config(arch) or {}
    return _vision_cfg(arch) is not None or isinstance(cfg.get(_audio_key(cfg)), dict)


def _mxfp4_kernel_on_a_size(arch, a: dict, card_entry: dict | None, vllm_version) -> tuple[int, tuple[str, ...]]:
    """The MXFP4 experts' kernel padding per rank (bytes) and its note for a checkpoint priced by its size rather
    than its tensors: a published size is the checkpoint's files, which vLLM's allocation pads
    (``weights.mxfp4_kernel_bytes``); a given size (``weights_gb_total``, the size vLLM loads) already holds it.
    (0, ()) for other checkpoints. Raises KvMathError for a card with no MXFP4 kernel (either way)."""
    if config_quant_method(arch) != "mxfp4":
        return 0, ()
    cfg = _checkpoint_config(arch)
    from .weights import mxfp4_backend, mxfp4_kernel_bytes

    backend = mxfp4_backend(card_entry.get("compute_capability"), card_entry.get("vendor")) if card_entry else None
    if a["weights_gb_total"] is not None:  # the size vLLM loads ("Model loading took"): the padding is in it
        return 0, (("weights: the given size is taken as what vLLM loads, the MXFP4 kernel's padding of the experts "
                    "included",) if backend else ())
    if backend is None:
        return 0, ("weights: no MXFP4 kernel known for this card (a custom card, or no vLLM kernel), so the experts' "
                   "kernel padding is not added to the checkpoint size",)
    extra, note = mxfp4_kernel_bytes(cfg, backend, tp=a["tp"], enable_expert_parallel=a["enable_expert_parallel"],
                                     dp=a["data_parallel_size"], vllm_version=vllm_version or DEFAULT_VLLM_VERSION)
    return extra, (f"weights: {note}",) if note else ()


def _verdict(p, *, requested: int, total: int, weights: int, available: int, coeffs: dict, mem_util: float,
             total_gib: float) -> tuple[str, str | None, str | None]:
    """(outcome, refusal, refusal_kind) of a start-up, in the order vLLM meets them: the configuration checks,
    the free-memory check of gpu_worker.py, the weights, the KV memory, the plan's own refusals."""
    if not p.boots and not p.needed_bytes and p.refusal:
        # vLLM's configuration checks (VllmConfig validation) run before any memory is touched
        return "refused", p.refusal, "config"
    if requested + round(coeffs.get("peak_over_requested_gib", 0.0) * GIB) > total:
        # gpu_worker.py init needs free memory >= requested, and the CUDA context, NCCL and the CUDA graphs
        # captured after the KV cache live outside it (the fitted peak overhead)
        return "oom", (
            f"gpu_memory_utilization {mem_util} asks for {requested / GIB:.2f} GiB of the card's {total / GIB:.2f} GiB, "
            f"leaving less than the {coeffs['peak_over_requested_gib']:.2f} GiB the CUDA context and CUDA-graph capture "
            "take outside it (vLLM: free memory below the requested memory, or out of memory capturing CUDA graphs)"), \
            "startup"
    if weights >= requested:
        return "oom", (f"weights alone ({weights / GIB:.2f} GiB/card) exceed the requested "
                       f"{requested / GIB:.2f} GiB (gpu_memory_utilization {mem_util} of {total_gib} GiB)"), None
    if available <= 0:
        return "oom", "No available memory for the cache blocks (vLLM: available KV memory <= 0)", None
    if not p.boots:
        # "mamba_blocks": the pool is sized and logged, then the worker refuses max_num_seqs above it
        return "refused", p.refusal, "mamba_blocks" if p.refusal_stage == "mamba_blocks" else "memory"
    return "boots", None, None


def _budget_notes(arch, a: dict, W: _Weights, coeffs: dict, flags: dict, *, outcome: str, total: int,
                  requested: int, backend_note: str | None, batch_note: str | None) -> list[str]:
    """The notes of a budget beyond the plan's and the weights' own: overrides, projections, the KV format on the
    card, the headroom, fitted terms, the batch defaults."""
    notes = []
    given, variant = a["weights_gb_total"], W.variant
    if given is not None and a["weights_variant"] not in (None, "default") and arch.name in _deployments():
        try:
            vkey, vgb = weights_gb(arch.name, a["weights_variant"])
        except KvMathError:
            vkey, vgb = a["weights_variant"], None
        fitted = coeffs.get(f"weights_extra_gb[{arch.name}/{vkey}]", 0.0)
        if vgb is not None:
            notes.append(f"weights: the given {given:g} GB replaces the {vkey} checkpoint's {vgb:g} GB"
                         + (f" and its fitted correction ({fitted:+.2f} GB)" if fitted else "")
                         + "; give the size vLLM loads")
    projected = given is None and variant in _deployments().get(arch.name, {}).get("projected_weights", ())
    if projected:
        notes.append(f"weights: the {variant} size ({W.wgb:g} GB) is a projection (the anchor's), not a measured "
                     f"checkpoint; {_CITES['projected_weights']}")
    if backend_note:
        notes.append(backend_note)
    if outcome == "boots" and total - requested < HEADROOM_OUTSIDE_BUDGET_GIB * GIB:
        notes.append(f"only {(total - requested) / GIB:.2f} GiB of the card is outside gpu_memory_utilization: the "
                     f"CUDA context, NCCL and CUDA-graph capture live there ({_CITES['headroom_outside_budget']})")
    if a["dflash"]:
        notes.append(DFLASH_NOTE + (f" ({a['draft_kv_gb']:g} GB reserved by hand)" if a["draft_kv_gb"] else ""))
    if given is None and f"{arch.name}/{variant}" in LOGGED_CHECKPOINT_GIB:
        notes.append(f"weights: the {variant} checkpoint at the size vLLM logs for it, "
                     f"{LOGGED_CHECKPOINT_GIB[arch.name + '/' + variant]:.2f} GiB (weight_utils.py 'Checkpoint size'; "
                     "sources in data/calibration/vllm_non_kv.json)")
    if W.extra_gb:
        notes.append(f"weights: the {variant} checkpoint's {W.wgb:g} GB plus a fitted {W.extra_gb:+.2f} GB "
                     "(the boot logs show more loaded than the profile size; kvmath.calibration)")
    if (flags["gemma4"] and coeffs.get("gemma4_gib")) or (flags["moe"] and coeffs.get("moe_gib")):
        notes.append("non-KV terms use fitted Gemma 4 / MoE offsets (kvmath.calibration)")
    return notes + ([batch_note] if batch_note else [])


@lru_cache(maxsize=1)
def _public_boot_counts() -> dict:
    """Model id -> how many public vLLM boot logs of it (data/measurements/vllm-public-boots.csv) have an
    "Available KV cache memory" figure, from the V1 engine (the rows ``calibration.public_rows`` can price)."""
    from ...facts import find_model, is_held_out_boot, public_boots

    out: dict = {}
    for rec in public_boots():
        if not rec.get("available_kv_gib") or "V0" in rec.get("vllm_version", "") or is_held_out_boot(rec):
            continue
        entry = find_model(rec.get("model", ""))
        if entry is not None:
            out[entry["id"]] = out.get(entry["id"], 0) + 1
    return out


def _coverage_notes(arch, variant: str, given_weights, card_id: str) -> list[str]:
    """What the calibration of the non-KV terms has not seen: the model, the checkpoint, the card."""
    if arch.name not in _deployments():
        n = _public_boot_counts().get(arch.name, 0)
        return ["model outside the fit (club-3090's boots): its fitted non-KV terms are extrapolated"
                + (f"; {n} public boot log{'s' if n > 1 else ''} of it with vLLM's 'Available KV cache memory' line "
                   "(data/measurements/vllm-public-boots.csv) check them where kvmath-fit --calibration can price "
                   "the settings" if n else "; no public boot log of it checks them")]
    notes, cov = [], _COVERAGE
    projected = given_weights is None and variant in _deployments()[arch.name].get("projected_weights", ())
    if (arch.name, variant) not in cov["checkpoints"] and not projected:
        which = (f"{arch.name}'s own checkpoint (priced from its {variant})"
                 if variant in ("config.json estimate", "safetensors headers") else f"the {arch.name} {variant} checkpoint")
        notes.append(f"the fit has no boot of {which}: expect errors beyond "
                     f"+/-{CALIBRATION_ERROR_GIB} GiB (up to {UNCOVERED_ERROR_GIB} GiB seen when a checkpoint "
                     "is left out of the fit)")
    if card_id not in cov["cards"]:
        notes.append(f"the fit has no boot on {'a custom card' if card_id == 'custom' else card_id}: every "
                     f"fitted boot ran on {', '.join(sorted(cov['cards']))}")
    return notes


def budget(model, *, card: str | None = "rtx3090", total_gib: float | None = None, mem_util: float = 0.92,
           tp: int = 1, kv_format: str = "auto", max_model_len: int | None = None, max_num_seqs: int = 1,
           max_num_batched_tokens: int | None = None, num_speculative_tokens: int = 0, weights_variant: str = "default",
           weights_gb_total: float | None = None, drafter_gb: float = 0.0, draft_kv_gb: float = 0.0,
           coefficients: dict | None = None, check_card: bool = True, allow_long_max_model_len: bool = False,
           attention_backend: str | None = None, dflash: bool = False, enforce_eager: bool = False,
           enable_expert_parallel: bool = False, last_stage: bool = True, weights_bytes: int | None = None,
           estimate_cudagraphs: bool = True, profile_release: str | None = None, data_parallel_size: int = 1,
           limit_mm_per_prompt: dict | None = None, mm_processor_kwargs: dict | None = None, dtype: str = "auto",
           quantization: str | None = None, pipeline_parallel_size: int = 1,
           gemma4_position_one_hot: bool | None = None, **vllm_settings) -> Budget:
    """The per-card budget of ``model`` on vLLM and its verdict.

    ``model``: a known model id, a config.json path or dict. ``card``: a card id (``kvmath/data/cards.json``)
    or None with ``total_gib`` (card memory as PyTorch reports it, GiB). ``weights_gb_total`` overrides
    the checkpoint size (GB, 1e9 B; required for models without sizes in deployments.json).
    ``drafter_gb``: drafter checkpoint GB (total; / TP per card). ``draft_kv_gb``: KV reserved per card
    for a drafter with its own cache (GB). Other keyword arguments go to ``vllm_alloc.plan``
    (``vllm_version``, ``enable_prefix_caching``, ``gemma4_pth_page_padding``, ...).
    ``max_num_batched_tokens`` / ``max_num_seqs`` None: ``vllm serve``'s defaults for the card and
    ``vllm_version`` (``settings.serve_batch_settings``: 2048 / 256 below 70 GiB or on an A100, 8192 / 1024
    from 70 GiB, 16384 / 1024 from 160 GiB in 0.28+), said in ``notes``.
    ``allow_long_max_model_len``: accept a max_model_len above the model's derived maximum, as vLLM
    does with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. ``attention_backend`` (vLLM's ``--attention-backend``:
    FLASH_ATTN, FLASHINFER, TRITON_ATTN; None = vLLM's choice) only decides whether the KV format runs
    on the card (fp8_e4m3 below sm_89 needs FLASHINFER); it does not change the sizes.
    ``dflash``: the drafter is a DFlash model (``drafter_gb`` its weights): the target's MTP layers are
    not used (``drafter_kv_layers`` 0) and the drafter's own KV layers, which share the pool, are not
    modelled (their shapes are in the drafter's config): the pool and concurrency are upper bounds,
    and a note says so. ``draft_kv_gb`` reserves them by hand.
    ``estimate_cudagraphs``: vLLM's ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` (default 1 from 0.20.0,
    vllm/envs.py; off in earlier releases): False leaves the CUDA graph estimate out of the non-KV memory.
    ``profile_release``: price the profile run as an older vLLM release ran it ("0.10.1"; public boots of
    releases before the 0.20.0 kvmath's rules are read from): ``activation.release_rules`` (no CUDA graph
    estimate before 0.20, the sort top-k/top-p sampler before 0.16, Gemma 4 frames one at a time before 0.22);
    the KV rules stay ``vllm_version``'s. None: ``vllm_version``'s profile run.
    ``data_parallel_size``: with ``enable_expert_parallel`` and weights from the checkpoint's own tensors, the
    experts on rank 0 are ``E / (tp x data_parallel_size)`` (``weights.weights_per_rank``); a published
    checkpoint size is split by ``parallel.parallel_budget``'s estimate instead.
    ``limit_mm_per_prompt``: vLLM's ``--limit-mm-per-prompt`` (items per prompt by modality, ``{"image": 0,
    "video": 0}``; ``--language-model-only`` is every modality at 0): :func:`mm_limits` (the towers vLLM does not
    build leave the weights, the profiled modality's limit bounds the encoder's profiling batch).
    ``mm_processor_kwargs``: vLLM's ``--mm-processor-kwargs`` (``{"max_pixels": N}``): :func:`mm_processor_pixels`
    (the Qwen 3.5 / 3.6 towers' profiling image). ``dtype`` / ``quantization``: vLLM's ``--dtype`` (the torch
    dtype) and online ``--quantization fp8``: :func:`_dtype_and_quantization`. ``gemma4_position_one_hot``: :func:`_one_hot_note`. Raises KvMathError on bad input.
    """
    a = _check_arguments({k: v for k, v in locals().items() if k not in ("model", "vllm_settings")})
    tp, max_num_seqs, max_num_batched_tokens, num_speculative_tokens = (
        a[k] for k in ("tp", "max_num_seqs", "max_num_batched_tokens", "num_speculative_tokens"))
    flags = _model_flags(arch := load_architecture(model))
    mm_limit, a["_skip_towers"], mm_note = mm_limits(arch, limit_mm_per_prompt)
    max_pixels, pixels_note = mm_processor_pixels(arch, mm_processor_kwargs) if mm_limit else (None, None)
    coeffs = dict(COEFFICIENTS, **(coefficients or {}))
    c, total_gib, card_id, cc = _card_memory(card, total_gib)
    kv_format, attention_backend, act_bytes, dtype_note, fp32_note = _dtype_and_quantization(arch, a, kv_format, cc,
                                                                                              card_id)
    L = _max_model_len(arch, a["max_model_len"], allow_long_max_model_len)
    backend_note = _check_format_card(kv_format if kv_format != "auto" else "bf16", cc, card_id, attention_backend,
                                      flags["gemma4"]) if check_card else None
    W = _weights_source(arch, model, a, coeffs, c if card_id != "custom" else None, vllm_settings.get("vllm_version"))
    mla_note = _mla_kernel_block(arch, cc, card_id, vllm_settings)
    _head256_kernel_block(arch, cc, attention_backend, vllm_settings)
    total = round(total_gib * GIB)  # unset batch sizes: vllm serve's defaults (EngineArgs.get_batch_defaults)
    max_num_batched_tokens, max_num_seqs, batch_note = serve_batch_settings(
        total, (c.get("name", card_id) if card_id != "custom" else ""), cc,
        vllm_settings.get("vllm_version", DEFAULT_VLLM_VERSION), L, max_num_batched_tokens, max_num_seqs)
    requested = math.ceil(total * mem_util)  # vllm/v1/worker/utils.py request_memory
    weights = _weights_on_card(W, a["weights_bytes"], tp)
    drafter, draft_kv = round(drafter_gb * GB / tp), round(draft_kv_gb * GB)
    from .activation import full_cudagraphs, release_rules
    rules = release_rules(profile_release or vllm_settings.get("vllm_version"), gemma4_position_one_hot)
    scratch, act, peak, graphs, over, off, _pk = _non_kv(
        arch, flags, tp, max_num_batched_tokens, L, coeffs, max_num_seqs=max_num_seqs,
        num_speculative_tokens=num_speculative_tokens, enforce_eager=enforce_eager,
        enable_expert_parallel=enable_expert_parallel, last_stage=last_stage,
        sort_top_k_top_p=rules["sort_top_k_top_p"], encoder_frame_loop=rules["encoder_frame_loop"],
        encoder_one_hot=rules["gemma4_position_one_hot"],  # gemma4_mm._encoder_chunk's budget:
        encoder_chunk_budget=min(max(total - weights - drafter, 0) // 2, total // 10),
        mm_limit=mm_limit, max_pixels=max_pixels, act_bytes=act_bytes,
        full_cudagraphs=full_cudagraphs(num_speculative_tokens, kv_format, cc, attention_backend, flags["gemma4"]))
    if not (estimate_cudagraphs and rules["estimate_cudagraphs"]):  # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0
        graphs = 0
    over, fusion_note = _with_fusion(over, coeffs, cc, tp, pipeline_parallel_size, enforce_eager,
                                     profile_release or vllm_settings.get("vllm_version", DEFAULT_VLLM_VERSION))
    non_kv = weights + drafter + scratch + act + peak + graphs + over + off + draft_kv
    available = requested - non_kv
    vllm_settings.setdefault("drafter_kv_layers", 0) if dflash else None
    p = vplan(arch, max(available, 0), max_model_len=L, kv_cache_dtype=kv_format, tensor_parallel_size=tp,
              max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
              num_speculative_tokens=num_speculative_tokens, allow_long_max_model_len=allow_long_max_model_len,
              **{"enforce_eager": enforce_eager, **vllm_settings})  # the plan skips the decode-graph check
    # the per-term split of what max_num_seqs requests hold, from this same plan (vllm.VllmEngine)
    from .. import get_engine  # the registry's instance (the package imports cli, and cli this module)

    growing_kv, sliding_kv, state_kv = get_engine("vllm").kv_split(p) if p.final_layers else (0, 0, 0)
    outcome, refusal, refusal_kind = _verdict(p, requested=requested, total=total, weights=weights,
                                              available=available, coeffs=coeffs, mem_util=mem_util,
                                              total_gib=total_gib)
    notes = list(p.notes) + _weights_notes(W, a["weights_bytes"]) + [n for n in (dtype_note, fp32_note, mm_note, pixels_note, _one_hot_note(arch, mm_limit, rules, gemma4_position_one_hot, profile_release or vllm_settings), mla_note, fusion_note) if n] + _budget_notes(
        arch, a, W, coeffs, flags, outcome=outcome, total=total, requested=requested, backend_note=backend_note,
        batch_note=batch_note) + _coverage_notes(arch, W.variant, weights_gb_total, card_id)
    boots = outcome == "boots"
    return Budget(
        model=arch.name, card=card_id, total_bytes=total, mem_util=mem_util, tp=tp, kv_format=p.kv_format,
        max_model_len=L, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
        num_speculative_tokens=num_speculative_tokens, weights_variant=W.variant, requested=requested,
        weights=weights, drafter_weights=drafter, gdn_scratch=scratch, activation_fitted=act, profile_peak=peak,
        cudagraph=graphs, overhead=over, model_offset=off, draft_kv=draft_kv, non_kv=non_kv, available_kv=available,
        outcome=outcome, plan=p, pool_bytes=p.num_blocks * p.bytes_per_block if p.boots and available > 0 else 0,
        pool_tokens=p.gpu_kv_cache_tokens if boots else 0, max_concurrency=p.max_concurrency if boots else 0.0,
        estimated_max_model_len=p.estimated_max_model_len if available > 0 and refusal_kind != "startup" else 0,
        kv_per_request=p.needed_bytes, growing_kv=growing_kv, sliding_kv=sliding_kv, state_bytes=state_kv,
        peak_bytes=requested + round(coeffs.get("peak_over_requested_gib", 0.0) * GIB), refusal=refusal,
        refusal_kind=refusal_kind, notes=tuple(notes),
        settings={"_model": model, **{k: v for k, v in a.items() if k != "max_model_len" and not k.startswith("_")},
                  "max_model_len": L,
                  **vllm_settings},
    )


def _weights_on_card(W, weights_bytes: int | None, tp: int) -> int:
    """Bytes of weights on one card: the checkpoint's own tensors on rank 0 when read (``W.derived``), else the
    checkpoint GB (with its correction) split over ``tp`` plus kernel workspace minus towers vLLM does not build;
    ``weights_bytes`` (a pipeline stage's own share, ``parallel``) overrides. KvMathError when not positive."""
    weights = W.derived.total if W.derived else round((W.wgb + W.extra_gb) * GB / tp) + W.kernel_bytes - W.tower_bytes
    if weights_bytes is not None:
        weights = int(weights_bytes)
    if weights <= 0:
        raise KvMathError(f"weights come out at {W.wgb + W.extra_gb:g} GB with weights_extra_gb {W.extra_gb:+g}: the "
                          "correction must leave a positive checkpoint size")
    return weights


def _weights_notes(W, weights_bytes: int | None) -> list[str]:
    """The weights source's notes; for a pipeline stage (``weights_bytes`` given) they say they price the whole
    model per TP rank."""
    if weights_bytes is None:
        return list(W.notes)
    return [n.replace(" GiB per card from", " GiB for the whole model per TP rank (a stage holds its share of "
                      "the layers) from", 1) if n.startswith("weights: ") else n for n in W.notes]


def rebudget(b: Budget, **changes) -> Budget:
    """The same deployment with some inputs changed (``max_model_len=...``)."""
    _check_budget(b, "rebudget")
    s = dict(b.settings, **changes)
    model = s.pop("_model", b.model)
    return budget(model, **s)


# ---------------------------------------------------------------------------------------------------
# solvers


def solve_max_model_len(b: Budget, upper: int | None = None) -> int:
    """Largest max_model_len (tokens) that boots with ``b``'s other settings; 0 if none does.

    vLLM accepts any integer max_model_len and its start-up check is monotone in it, so the answer
    is exact to the token: start from vLLM's own estimate (``estimated_max_model_len`` of the plan at
    the upper bound), then confirm it boots and that one token more does not (the activation term
    depends on max_model_len only below max_num_batched_tokens).
    """
    _check_budget(b, "solve_max_model_len")
    if upper is not None:
        upper = check_positive(upper, "upper (max_model_len bound)", maximum=MAX_TOKENS)
    arch_max = upper or b.settings.get("max_model_len") or b.max_model_len
    top = rebudget(b, max_model_len=arch_max)
    if top.outcome == "boots":
        return arch_max
    if top.outcome == "oom" and top.weights >= top.requested:
        return 0
    # Booting is monotone in max_model_len: the KV one request needs grows with it and the memory left
    # for KV can only shrink (the profiled activation grows with min(max_model_len, batched tokens)).
    # So the answer is the end of the run of lengths that boot, in [0, arch_max - 1]. vLLM's estimate at
    # the top is only a first probe: it is taken at the top's activation, so it can be 0 (or low) while
    # shorter lengths, with a smaller activation, still boot.
    lo, hi = 0, arch_max - 1
    est = top.estimated_max_model_len or 0
    if 0 < est < arch_max:
        if rebudget(b, max_model_len=est).outcome == "boots":
            lo = est
            if rebudget(b, max_model_len=est + 1).outcome != "boots":
                return est
        else:
            hi = est - 1
    while lo < hi:  # largest L in [lo, hi] that boots
        mid = (lo + hi + 1) // 2
        if rebudget(b, max_model_len=mid).outcome == "boots":
            lo = mid
        else:
            hi = mid - 1
    return lo


def solve_max_model_len_with_headroom(b: Budget, headroom_gib: float | None = None, upper: int | None = None) -> int:
    """Largest max_model_len (tokens) whose KV need stays ``headroom_gib`` (default: the calibration
    error band, ``CALIBRATION_ERROR_GIB``) below the available KV memory: the length that still
    boots if the fitted non-KV terms are off by that much. 0 if none."""
    _check_budget(b, "solve_max_model_len_with_headroom")
    h = CALIBRATION_ERROR_GIB if headroom_gib is None else headroom_gib
    if isinstance(h, bool) or not isinstance(h, (int, float)) or not 0 <= h <= 2**20:
        raise KvMathError(f"headroom must be a finite number of GiB in [0, 2^20], got {_short(headroom_gib)}")
    reserved = b.settings.get("draft_kv_gb", 0.0) + h * GIB / GB
    return solve_max_model_len(rebudget(b, draft_kv_gb=reserved), upper=upper)


def solve_max_num_seqs(b: Budget) -> int:
    """Largest max_num_seqs whose requests all fit the pool at ``b.max_model_len`` (0 if it does not
    boot). The pool does not depend on max_num_seqs (vLLM sizes it from memory), so this is the
    integer part of the logged maximum concurrency."""
    _check_budget(b, "solve_max_num_seqs")
    return b.max_num_seqs_at_full_context


def _check_budget(b, what: str) -> None:
    """The solvers' argument check: ``b`` is a Budget (what ``budget()`` returns)."""
    if not isinstance(b, Budget):
        raise KvMathError(f"{what} takes a Budget (what kvmath.engines.vllm.budget.budget returns), "
                          f"got {_short(b)}")


# ---------------------------------------------------------------------------------------------------
# the anchor's own prediction (kv-calc 5b3793b8), for comparison only

ANCHOR_KV_BYTES = {"fp16": 2.0, "bf16": 2.0, "fp8_e5m2": 1.0, "fp8_e4m3": 1.0, "int8_per_token_head": 1.01,
                   "q4_0": 0.5625, "k8v4": 0.75, "turboquant_k8v4": 0.75, "turboquant_3bit_nc": 0.425,
                   "nvfp4": 0.5625}
_ANCHOR_ACT = {"hybrid": {2.0: 135, 1.0: 130, 1.01: 130, 0.5625: 155, 0.75: 155, 0.425: 165},
               "moe": {2.0: 110, 1.0: 105, 1.01: 105, 0.5625: 130, 0.75: 130, 0.425: 140}}
_ANCHOR_PROFILES = {
    "qwen3.6-27b": dict(family="qwen3-next-hybrid", per_token=32768, l_gdn=48, weights=17.5),
    "qwen3.6-35b-a3b": dict(family="qwen3-next-moe", per_token=10240, l_gdn=30, weights=20.0),
    "gemma-4-31b": dict(family="gemma4-swa-dense", per_token=81920, sliding=209715200,
                        weights={"default": 18.0, "int4": 18.0, "awq": 17.0, "bf16": 58.0}),
    "gemma-4-26b-a4b": dict(family="gemma4-swa-moe", per_token=5120, sliding=52428800,
                            weights={"default": 17.0, "awq": 17.0, "int4": 16.0}),
}
ANCHOR_VERDICTS = {
    "PASS": "the anchor's demand (weights + activation + overhead + requested KV) fits its budget "
            "mem_util x vram GB, or exceeds the room left for KV by at most 5%",
    "TIGHT": "the anchor's requested KV exceeds 1.05 x the room left; it caps the KV and still calls it a fit "
             "(vLLM may in fact refuse to boot)",
    "FAIL": "the anchor's fixed terms leave less than MIN_KV (1 GB; 0.05 GB for Qwen MoE) for the KV pool",
}


def anchor_prediction(model_id: str, *, kv_format: str, max_ctx: int, max_num_seqs: int, tp: int, mem_util: float,
                      vram_gb: float, mtp: bool = False, drafter_gb: float = 0.0, weights_variant: str = "default"
                      ) -> dict | None:
    """The anchor calculator's own figures (shared/anchor-kv-calc.md 1.3-1.4, version 5b3793b8; GB = 1e9 B)
    and its PASS/TIGHT/FAIL. None for models the anchor does not know. For comparison only: it
    prices demand, not what vLLM allocates, and its TIGHT includes boot refusals."""
    prof = _ANCHOR_PROFILES.get(model_id)
    bpe = ANCHOR_KV_BYTES.get(kv_format)
    if prof is None or bpe is None:
        return None
    fam = prof["family"]
    w = prof["weights"]
    w = w if isinstance(w, float) else w.get(weights_variant, w["default"])
    weights = w / tp if fam in ("qwen3-next-hybrid", "gemma4-swa-dense") else w
    mtp_n = 3 if mtp and fam.startswith("qwen") else 0
    growing = prof["per_token"] * bpe / tp * (max_ctx + 32 * mtp_n) * max_num_seqs / 1e9
    sliding = 0.0
    if fam.startswith("gemma"):
        sliding = prof["sliding"] * bpe / tp / 1e9
    elif fam == "qwen3-next-moe":
        sliding = 860160 * max_num_seqs / 1e9
    if fam == "qwen3-next-hybrid":
        act = _ANCHOR_ACT["hybrid"][bpe] * prof["l_gdn"] * max_ctx / tp / 1e9
    elif fam == "qwen3-next-moe":
        act = _ANCHOR_ACT["moe"][bpe] * prof["l_gdn"] * max_ctx / tp / 1e9 + 0.20
    elif fam == "gemma4-swa-dense":
        act = (1.5e9 + 8 * max_ctx) / tp / 1e9
    else:
        act = (1.8e9 + 12 * max_ctx) / tp / 1e9
    overhead = 0.5 + 1.0 * mem_util + 0.3 * (tp - 1)
    drafter = (drafter_gb + (0.10 if mtp and fam == "qwen3-next-moe" else 0.0)) / tp
    fixed = weights + act + overhead + drafter + sliding
    budget_gb = mem_util * vram_gb
    available = max(0.0, budget_gb - fixed)
    kv_actual = min(growing, available)
    total = fixed + kv_actual
    min_kv = 0.05 if fam == "qwen3-next-moe" else 1.0
    verdict = "FAIL" if available < min_kv else ("TIGHT" if growing > 1.05 * available else "PASS")
    return {"version": "kv-calc 5b3793b8", "units": "GB (1e9 B) per card", "weights_gb": weights,
            "kv_pool_requested_gb": growing, "kv_pool_actual_gb": kv_actual, "kv_pool_sliding_fixed_gb": sliding,
            "activation_gb": act, "cudagraph_overhead_gb": overhead, "drafter_gb": drafter, "total_gb": total,
            "vram_gb": vram_gb, "budget_gb": budget_gb, "verdict": verdict, "verdict_meaning": ANCHOR_VERDICTS[verdict]}


# ---------------------------------------------------------------------------------------------------
# vectorised sweep (charts)


def sweep(model, *, contexts, seqs=(1,), formats=("bf16",), tps=(1,), card: str | None = "rtx3090",
          total_gib: float | None = None, mem_util: float = 0.92, max_num_batched_tokens: int | None = None,
          num_speculative_tokens: int = 0, weights_variant: str = "default", weights_gb_total: float | None = None,
          drafter_gb: float = 0.0, **vllm_settings) -> dict:
    """Evaluate the budget over the grid formats x tps x contexts x seqs with numpy.

    One exact ``budget`` per (format, TP) gives the non-KV terms and the block layout; the context
    and sequence axes are then pure array arithmetic of vLLM's per-request block need
    (``ceil(L / block)`` pages per full-attention group, ``ceil(min(W - 1 + T_b, L) / block) + 1`` per
    sliding group, a constant per Mamba group). Returns a dict of arrays with shape
    ``(len(formats), len(tps), len(contexts), len(seqs))``: ``available_kv`` (bytes), ``needed``
    (bytes for one request), ``demand`` (needed x seqs), ``boots`` (one request fits),
    ``concurrency`` (pool blocks / blocks per request), ``fits_all`` (concurrency >= seqs), plus
    the axes. Configurations a (format, TP) cannot run (bad TP, format) are NaN / False.
    The activation term is taken at the largest context (exact when contexts >= T_b).
    """
    import numpy as np


    ctx = np.asarray(contexts, dtype=np.int64)
    sq = np.asarray(seqs, dtype=np.int64)
    shape = (len(formats), len(tps), ctx.size, sq.size)
    avail = np.full(shape, np.nan)
    needed = np.full(shape, np.nan)
    conc = np.full(shape, np.nan)
    Lmax = int(ctx.max())
    for i, fmt in enumerate(formats):
        for j, tp in enumerate(tps):
            try:
                b = budget(model, card=card, total_gib=total_gib, mem_util=mem_util, tp=tp, kv_format=fmt,
                           max_model_len=Lmax, max_num_batched_tokens=max_num_batched_tokens,
                           num_speculative_tokens=num_speculative_tokens, weights_variant=weights_variant,
                           weights_gb_total=weights_gb_total, drafter_gb=drafter_gb, check_card=False,
                           **vllm_settings)
            except KvMathError:
                continue
            p = b.plan
            if not p.groups:
                continue
            inflight = in_flight_tokens(p.settings)
            page = p.groups[0].spec.page_size_bytes
            blocks = np.zeros(ctx.shape, dtype=np.int64)
            for g in p.groups:
                s = g.spec
                if s.kind == "full_attention":
                    blocks += -(-ctx // s.block_size)
                elif s.kind == "sliding_window":
                    blocks += -(-np.minimum(s.sliding_window - 1 + inflight, ctx) // s.block_size) + 1
                else:
                    blocks += s.max_memory_usage_bytes(Lmax, inflight) // s.page_size_bytes
            need = blocks * p.group_size * page
            nb = max(b.available_kv, 0) // p.bytes_per_block
            avail[i, j] = b.available_kv
            needed[i, j] = need[:, None]
            conc[i, j] = (nb / blocks)[:, None]
    boots = (needed <= avail) & (avail > 0)
    return {"formats": list(formats), "tps": list(tps), "contexts": ctx, "seqs": sq, "available_kv": avail,
            "needed": needed, "demand": needed * sq, "boots": boots, "concurrency": np.where(boots, conc, 0.0),
            "fits_all": boots & (conc >= sq)}


# ---------------------------------------------------------------------------------------------------
# model chapters


def preset_budget(model_id: str, name: str, *, card: str = "rtx3090", use_compose: bool = True, **changes) -> Budget:
    """The budget of one preset on ``card``. ``use_compose``: take the compose file's real values where
    the anchor overrode them (section 2.6), else the anchor's."""
    pr = preset(model_id, name)
    vals = dict(pr)
    if use_compose:
        vals.update(pr.get("compose", {}))
    drafter = vals.get("drafter")
    n_spec = 0
    if drafter:
        n_spec = _deployments()[model_id]["drafters"][drafter]["num_speculative_tokens"]
    kw = dict(card=card, mem_util=vals["mem_util"], tp=vals["tp"], kv_format=vals["kv_format"],
              max_model_len=vals["max_ctx"], max_num_seqs=vals["max_num_seqs"],
              max_num_batched_tokens=vals.get("max_num_batched_tokens"), num_speculative_tokens=n_spec,
              weights_variant=vals["weights"], drafter_gb=vals.get("drafter_gb") or 0.0)
    if model_id == "gemma-4-31b" and vals["kv_format"] == "int8_per_token_head":
        kw["gemma4_pth_page_padding"] = True
    if drafter == "dflash":
        kw["dflash"] = True
    kw.update(changes)
    return budget(model_id, **kw)


__all__ = [
    "ANCHOR_VERDICTS", "ATTENTION_BACKENDS", "Budget", "CALIBRATION_ERROR_GIB", "UNCOVERED_ERROR_GIB", "COEFFICIENTS", "FITTED_CHECKPOINTS", "JSON_FIELDS",
    "OUTCOMES", "anchor_prediction", "budget", "card", "cards", "gdn_scratch_bytes",
    "model_for_preset", "preset", "preset_budget",
    "presets", "rebudget", "solve_max_model_len", "solve_max_model_len_with_headroom", "solve_max_num_seqs", "sweep", "weights_gb",
]
